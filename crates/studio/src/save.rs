//! Writing the author's files without ever losing their work: sessions, played sessions,
//! golden snapshots and recordings all go through [`write_author_file`], which
//! - refuses to write through a symbolic link or over anything but a regular file (a link in a
//!   cloned plugin repository could point at any file of the author's; a FIFO would block);
//! - refuses a read-only file (the author made it so: the message says how to save anyway);
//! - keeps the previous text as `<file>.bak`, itself written atomically;
//! - writes a new temporary file of its own beside the target (a unique name, so saves of the
//!   same file at once never touch each other's), syncs it, gives it the file's permissions and
//!   renames it over the target; the temporary file never outlives a failure, and ones a
//!   killed save left behind are cleaned once they are an hour old.
//!
//! Sessions are also checked with the loader and its limits first ([`write_session_text`]:
//! the studio never writes a session it cannot reopen). Played sessions are new files
//! ([`played_file_for`]); replacing the authored session with played turns is an explicit
//! choice of the caller.

use crate::workspace::MAX_SESSION_BYTES;
use covel_kernel::diagnostic::Diagnostic;
use covel_kernel::session::{self, Session};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Why a file was not written.
#[derive(Debug, thiserror::Error)]
pub enum SaveError {
    #[error("the studio will not write a session it could not open again: {0}")]
    Invalid(Diagnostic),
    #[error("the session would be {0} bytes; session files are at most {MAX_SESSION_BYTES} bytes")]
    TooLarge(usize),
    #[error(
        "{0} is a symbolic link: the studio does not write through links (one in a plugin folder could point at any of your files); save to the file it points to, or to a new file"
    )]
    Symlink(PathBuf),
    #[error("{0} is not a regular file (a folder, a FIFO or a device): nothing was written")]
    NotRegular(PathBuf),
    #[error(
        "{0} is read-only: nothing was written; make it writable (chmod u+w) or save to another file"
    )]
    ReadOnly(PathBuf),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write the session as YAML: {0}")]
    Serialize(String),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> SaveError + '_ {
    move |source| SaveError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// A session as YAML in the documented format (`docs/session-format.md`).
pub fn session_yaml(session: &Session, header: &str) -> Result<String, SaveError> {
    let body = serde_saphyr::to_string(session).map_err(|e| SaveError::Serialize(e.to_string()))?;
    Ok(format!("{header}{body}"))
}

/// The default new file for a played session beside `authored`: `<name>.played.yaml`.
pub fn played_file_for(authored: &Path) -> PathBuf {
    let stem = authored
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "session".into());
    let stem = stem
        .strip_suffix(".yaml")
        .or_else(|| stem.strip_suffix(".yml"))
        .unwrap_or(&stem)
        .to_string();
    let stem = stem.strip_suffix(".session").unwrap_or(&stem).to_string();
    authored.with_file_name(format!("{stem}.played.session.yaml"))
}

/// Whether two paths name the same file (after symlinks), for "is this the authored session?".
pub fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// Writes session text to `path` safely (see the module doc), after checking that the loader
/// opens it. Returns the file written.
pub fn write_session_text(path: &Path, text: &str) -> Result<PathBuf, SaveError> {
    if text.len() as u64 > MAX_SESSION_BYTES {
        return Err(SaveError::TooLarge(text.len()));
    }
    session::parse_session(text, path).map_err(SaveError::Invalid)?;
    write_author_file(path, text.as_bytes())?;
    Ok(path.to_path_buf())
}

/// The largest previous text kept as `.bak` (an author's file larger than this is not one the
/// studio wrote: it is refused rather than read whole).
const MAX_BACKUP_BYTES: u64 = 256 * 1024 * 1024;

/// The one writer of an author's files (see the module doc).
pub fn write_author_file(path: &Path, bytes: &[u8]) -> Result<(), SaveError> {
    let previous = match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => {
            return Err(SaveError::Symlink(path.to_path_buf()));
        }
        Ok(meta) if !meta.is_file() => return Err(SaveError::NotRegular(path.to_path_buf())),
        Ok(meta) if meta.permissions().readonly() => {
            return Err(SaveError::ReadOnly(path.to_path_buf()));
        }
        Ok(meta) => Some(meta),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(io(path)(e)),
    };
    if previous.is_some() {
        let old = covel_kernel::files::read_regular_bytes(path, MAX_BACKUP_BYTES).map_err(|e| {
            SaveError::Io {
                path: path.to_path_buf(),
                source: std::io::Error::other(e.to_string()),
            }
        })?;
        let backup = backup_path(path);
        if std::fs::symlink_metadata(&backup).is_ok_and(|m| !m.is_file()) {
            // Renaming over a link replaces the link, never its target; a folder would fail.
            return Err(SaveError::NotRegular(backup));
        }
        atomic_write(&backup, &old, previous.as_ref())?;
    }
    atomic_write(path, bytes, previous.as_ref())
}

/// `<file>.bak` beside the file.
pub fn backup_path(file: &Path) -> PathBuf {
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    file.with_file_name(format!("{name}.bak"))
}

fn temp_prefix(name: &str) -> String {
    format!(".{name}.")
}

const TEMP_SUFFIX: &str = ".covel-tmp";

/// How old a temporary file must be before a later save takes it for a killed save's: a save
/// takes milliseconds, so one that old is no running save's.
const STALE_TEMP_AGE: Duration = Duration::from_secs(3600);

/// Removes temporary files an earlier, killed save of the same file left behind (only old
/// ones: a save running at the same time keeps its own).
fn clean_stale_temps(dir: &Path, name: &str) {
    let prefix = temp_prefix(name);
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let file = entry.file_name().to_string_lossy().into_owned();
        let stale = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > STALE_TEMP_AGE);
        if file.starts_with(&prefix) && file.ends_with(TEMP_SUFFIX) && stale {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Writes bytes to a new temporary file beside `path`, syncs it, gives it the permissions of
/// `like`, and renames it over `path` (then syncs the folder); the temporary file never
/// outlives a failure. The atomic write under [`write_author_file`], and the app's for its own
/// files (the recent-folders list).
pub fn atomic_write(
    path: &Path,
    bytes: &[u8],
    like: Option<&std::fs::Metadata>,
) -> Result<(), SaveError> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "session".into());
    clean_stale_temps(dir, &name);
    let written = (|| -> std::io::Result<()> {
        let mut temp = tempfile::Builder::new()
            .prefix(&temp_prefix(&name))
            .suffix(TEMP_SUFFIX)
            .tempfile_in(dir)?;
        temp.write_all(bytes)?;
        if let Some(meta) = like {
            temp.as_file().set_permissions(meta.permissions())?;
        }
        temp.as_file().sync_all()?;
        // Dropped on an error above, the temporary file is removed.
        temp.persist(path).map_err(|e| e.error)?;
        // The rename itself is durable once the folder is synced (where a folder can be).
        if let Ok(folder) = std::fs::File::open(dir) {
            let _ = folder.sync_all();
        }
        Ok(())
    })();
    written.map_err(io(path))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    const SESSION: &str = "# my notes\nid: s\nlocale: en\n";

    #[test]
    fn a_save_keeps_mode_and_backs_up_the_previous_text() {
        let dir = tempfile::tempdir().expect("tempdir");
        let real = dir.path().join("real.session.yaml");
        std::fs::write(&real, SESSION).expect("write");
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        let written = write_session_text(&real, "id: s\nlocale: fr\n").expect("saves");
        assert_eq!(written, real);
        assert_eq!(
            std::fs::read_to_string(&real).expect("read"),
            "id: s\nlocale: fr\n"
        );
        assert_eq!(
            std::fs::metadata(&real).expect("meta").permissions().mode() & 0o777,
            0o600
        );
        assert_eq!(
            std::fs::read_to_string(backup_path(&written)).expect("backup"),
            SESSION
        );
        let leftovers: Vec<_> = std::fs::read_dir(dir.path())
            .expect("ls")
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(".covel-tmp"))
            .collect();
        assert!(leftovers.is_empty());
    }

    #[test]
    fn a_symlink_a_fifo_or_a_read_only_file_is_refused_and_left_as_it_was() {
        let dir = tempfile::tempdir().expect("tempdir");
        let target = dir.path().join("elsewhere.txt");
        std::fs::write(&target, "precious").expect("write");
        let link = dir.path().join("link.session.yaml");
        std::os::unix::fs::symlink(&target, &link).expect("symlink");
        assert!(matches!(
            write_session_text(&link, SESSION),
            Err(SaveError::Symlink(_))
        ));
        assert_eq!(std::fs::read_to_string(&target).expect("read"), "precious");
        let fifo = dir.path().join("pipe.golden.yaml");
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .expect("mkfifo");
        assert!(matches!(
            write_author_file(&fifo, b"x"),
            Err(SaveError::NotRegular(_))
        ));
        let locked = dir.path().join("locked.session.yaml");
        std::fs::write(&locked, SESSION).expect("write");
        std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o444)).expect("chmod");
        let refused = write_session_text(&locked, "id: s\nlocale: fr\n");
        assert!(
            matches!(refused, Err(SaveError::ReadOnly(_))),
            "{refused:?}"
        );
        assert_eq!(std::fs::read_to_string(&locked).expect("read"), SESSION);
    }

    #[test]
    fn text_the_loader_would_refuse_is_never_written() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("s.session.yaml");
        std::fs::write(&file, SESSION).expect("write");
        assert!(matches!(
            write_session_text(&file, "id: [unclosed\n"),
            Err(SaveError::Invalid(_))
        ));
        assert_eq!(
            std::fs::read_to_string(&file).expect("read"),
            SESSION,
            "the author's file is untouched"
        );
    }

    #[test]
    fn an_old_temporary_file_left_by_a_killed_save_is_cleaned_a_fresh_one_is_not() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("s.session.yaml");
        let old = dir.path().join(".s.session.yaml.4242.covel-tmp");
        let fresh = dir.path().join(".s.session.yaml.4243.covel-tmp");
        std::fs::write(&old, "partial").expect("write");
        std::fs::write(&fresh, "another save, running").expect("write");
        let long_ago = std::time::SystemTime::now() - 2 * STALE_TEMP_AGE;
        std::fs::File::options()
            .write(true)
            .open(&old)
            .and_then(|f| f.set_modified(long_ago))
            .expect("age");
        write_session_text(&file, SESSION).expect("saves");
        assert!(!old.exists());
        assert!(
            fresh.exists(),
            "a save running at the same time keeps its file"
        );
    }

    #[test]
    fn played_sessions_go_to_a_new_file_beside_the_authored_one() {
        assert_eq!(
            played_file_for(Path::new("/x/demo.session.yaml")),
            PathBuf::from("/x/demo.played.session.yaml")
        );
        assert_eq!(
            played_file_for(Path::new("/x/notes.yaml")),
            PathBuf::from("/x/notes.played.session.yaml")
        );
    }
}
