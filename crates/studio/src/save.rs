//! Writing session files without ever losing the author's work. Every write:
//! - checks the text with the same loader and limits that will read it back (the studio never
//!   writes a session it cannot reopen);
//! - writes through a symlink to its target, keeps the file's permissions, and replaces it
//!   atomically (temporary file in the same folder, synced, renamed);
//! - keeps the previous text as `<file>.bak` when it replaces an existing file, itself written
//!   atomically;
//! - removes its temporary file on every error path, and temporary files a killed earlier save
//!   left behind.
//!
//! Played sessions are new files ([`played_file_for`]); replacing the authored session with
//! played turns is an explicit choice of the caller.

use crate::workspace::MAX_SESSION_BYTES;
use covel_kernel::diagnostic::Diagnostic;
use covel_kernel::session::{self, Session};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Why a session was not written.
#[derive(Debug, thiserror::Error)]
pub enum SaveError {
    #[error("the studio will not write a session it could not open again: {0}")]
    Invalid(Diagnostic),
    #[error("the session would be {0} bytes; session files are at most {MAX_SESSION_BYTES} bytes")]
    TooLarge(usize),
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

/// Writes session text to `path` safely (see the module doc). Returns the file written (the
/// symlink's target when `path` is a symlink).
pub fn write_session_text(path: &Path, text: &str) -> Result<PathBuf, SaveError> {
    if text.len() as u64 > MAX_SESSION_BYTES {
        return Err(SaveError::TooLarge(text.len()));
    }
    session::parse_session(text, path).map_err(SaveError::Invalid)?;
    let target = match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => {
            std::fs::canonicalize(path).map_err(io(path))?
        }
        _ => path.to_path_buf(),
    };
    let previous = std::fs::metadata(&target)
        .ok()
        .filter(std::fs::Metadata::is_file);
    if previous.is_some() {
        let old = std::fs::read(&target).map_err(io(&target))?;
        atomic_write(&backup_path(&target), &old, previous.as_ref())?;
    }
    atomic_write(&target, text.as_bytes(), previous.as_ref())?;
    Ok(target)
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

/// Removes temporary files an earlier, killed save of the same file left behind.
fn clean_stale_temps(dir: &Path, name: &str) {
    let prefix = temp_prefix(name);
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let file = entry.file_name().to_string_lossy().into_owned();
        if file.starts_with(&prefix) && file.ends_with(".covel-tmp") {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Writes bytes to a temporary file beside `path`, syncs it, gives it the permissions of
/// `like`, and renames it over `path`; the temporary file never outlives a failure. The one
/// atomic write of the studio and the app (sessions, the recent-folders list).
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
    let temp = dir.join(format!(
        "{}{}.covel-tmp",
        temp_prefix(&name),
        std::process::id()
    ));
    let written = (|| -> std::io::Result<()> {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)?;
        file.write_all(bytes)?;
        if let Some(meta) = like {
            file.set_permissions(meta.permissions())?;
        }
        file.sync_all()?;
        std::fs::rename(&temp, path)
    })();
    if let Err(source) = written {
        let _ = std::fs::remove_file(&temp);
        return Err(SaveError::Io {
            path: path.to_path_buf(),
            source,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    const SESSION: &str = "# my notes\nid: s\nlocale: en\n";

    #[test]
    fn a_save_keeps_mode_writes_through_symlinks_and_backs_up_the_previous_text() {
        let dir = tempfile::tempdir().expect("tempdir");
        let real = dir.path().join("real.session.yaml");
        std::fs::write(&real, SESSION).expect("write");
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        let link = dir.path().join("link.session.yaml");
        std::os::unix::fs::symlink(&real, &link).expect("symlink");
        let written = write_session_text(&link, "id: s\nlocale: fr\n").expect("saves");
        assert_eq!(written, real.canonicalize().expect("canonical"));
        assert!(
            std::fs::symlink_metadata(&link)
                .expect("meta")
                .file_type()
                .is_symlink(),
            "the symlink stays a symlink"
        );
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
    fn a_temporary_file_left_by_a_killed_save_is_cleaned() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("s.session.yaml");
        std::fs::write(dir.path().join(".s.session.yaml.4242.covel-tmp"), "partial")
            .expect("write");
        write_session_text(&file, SESSION).expect("saves");
        assert!(!dir.path().join(".s.session.yaml.4242.covel-tmp").exists());
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
