//! The one reader for files a plugin supplies (PLUGIN.md and its variants, RUNTIME.md,
//! `locales/`, prompt templates, modules) and for session files: the path must stay inside its
//! root after following symlinks, only regular files are read (a FIFO or a device would block
//! or never end), and sizes are capped, so no file can hang the studio or reach outside.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The largest file a plugin may supply (modules included).
pub const MAX_PLUGIN_FILE_BYTES: u64 = 8 * 1024 * 1024;

/// Why a file was not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FileRefusal {
    #[error("{0} does not exist or cannot be read: {1}")]
    Unreadable(PathBuf, String),
    #[error("{0} resolves outside the plugin root")]
    OutsideRoot(PathBuf),
    #[error("{0} is not a regular file (a FIFO, a device or a folder is never read)")]
    NotRegular(PathBuf),
    #[error("{0} is larger than {1} bytes")]
    TooLarge(PathBuf, u64),
    #[error("{0} is not UTF-8 text (byte {1} starts an invalid sequence)")]
    NotUtf8(PathBuf, usize),
}

impl FileRefusal {
    /// The stable diagnostic code of the refusal.
    pub fn code(&self) -> crate::diagnostic::Code {
        use crate::diagnostic::Code;
        match self {
            FileRefusal::Unreadable(..) => Code::ManifestUnreadable,
            FileRefusal::OutsideRoot(_) => Code::PathEscapesRoot,
            FileRefusal::NotRegular(_) => Code::NotRegularFile,
            FileRefusal::TooLarge(..) => Code::FileTooLarge,
            FileRefusal::NotUtf8(..) => Code::NotUtf8,
        }
    }

    /// The file refused.
    pub fn path(&self) -> &Path {
        match self {
            FileRefusal::Unreadable(p, _)
            | FileRefusal::OutsideRoot(p)
            | FileRefusal::NotRegular(p)
            | FileRefusal::TooLarge(p, _)
            | FileRefusal::NotUtf8(p, _) => p,
        }
    }

    /// The same refusal, naming `path` (the path as the caller knows it, not the canonical one).
    fn naming(self, path: &Path) -> FileRefusal {
        let path = path.to_path_buf();
        match self {
            FileRefusal::Unreadable(_, why) => FileRefusal::Unreadable(path, why),
            FileRefusal::OutsideRoot(_) => FileRefusal::OutsideRoot(path),
            FileRefusal::NotRegular(_) => FileRefusal::NotRegular(path),
            FileRefusal::TooLarge(_, n) => FileRefusal::TooLarge(path, n),
            FileRefusal::NotUtf8(_, at) => FileRefusal::NotUtf8(path, at),
        }
    }
}

/// Reads `path` as text if it lies inside `root` (after symlinks), is a regular file and is at
/// most `limit` bytes.
pub fn read_confined(root: &Path, path: &Path, limit: u64) -> Result<String, FileRefusal> {
    let canonical = confined(root, path)?;
    // The canonical path has no link left in it: one that appears now is not followed.
    read_file(&canonical, limit, false).map_err(|refusal| refusal.naming(path))
}

/// [`read_confined`] for bytes that need not be text (a folder's fingerprint).
pub fn read_confined_bytes(root: &Path, path: &Path, limit: u64) -> Result<Vec<u8>, FileRefusal> {
    let canonical = confined(root, path)?;
    read_bytes(&canonical, limit, false).map_err(|refusal| refusal.naming(path))
}

/// `path` after symlinks, if that is inside `root` (after symlinks).
fn confined(root: &Path, path: &Path) -> Result<PathBuf, FileRefusal> {
    let canonical = path
        .canonicalize()
        .map_err(|e| FileRefusal::Unreadable(path.to_path_buf(), e.to_string()))?;
    let canonical_root = root
        .canonicalize()
        .map_err(|e| FileRefusal::Unreadable(root.to_path_buf(), e.to_string()))?;
    if !canonical.starts_with(&canonical_root) {
        return Err(FileRefusal::OutsideRoot(path.to_path_buf()));
    }
    Ok(canonical)
}

/// Reads a regular file of at most `limit` bytes (no root: a session file the user chose).
pub fn read_regular(path: &Path, limit: u64) -> Result<String, FileRefusal> {
    read_file(path, limit, true)
}

/// [`read_regular`] for bytes that need not be text.
pub fn read_regular_bytes(path: &Path, limit: u64) -> Result<Vec<u8>, FileRefusal> {
    read_bytes(path, limit, true)
}

fn read_file(path: &Path, limit: u64, follow: bool) -> Result<String, FileRefusal> {
    let bytes = read_bytes(path, limit, follow)?;
    String::from_utf8(bytes)
        .map_err(|e| FileRefusal::NotUtf8(path.to_path_buf(), e.utf8_error().valid_up_to()))
}

/// Opens without blocking (a FIFO that appeared since the caller looked would otherwise wait
/// for a writer forever), then asks the open file, not the path, what it is: a file swapped
/// between a check and the open is still seen as what it is.
fn read_bytes(path: &Path, limit: u64, follow: bool) -> Result<Vec<u8>, FileRefusal> {
    let unreadable = |e: std::io::Error| FileRefusal::Unreadable(path.to_path_buf(), e.to_string());
    let file = open_for_reading(path, follow).map_err(|e| {
        // A link where none may be, or something that cannot be opened as a file at all (a
        // socket): say what it is rather than only that the open failed.
        let special = fs::symlink_metadata(path).is_ok_and(|m| !m.is_file());
        if e.raw_os_error() == Some(ELOOP) || special {
            FileRefusal::NotRegular(path.to_path_buf())
        } else {
            unreadable(e)
        }
    })?;
    let metadata = file.metadata().map_err(unreadable)?;
    if !metadata.is_file() {
        return Err(FileRefusal::NotRegular(path.to_path_buf()));
    }
    if metadata.len() > limit {
        return Err(FileRefusal::TooLarge(path.to_path_buf(), limit));
    }
    // The size can change between the check and the read: never read past the limit.
    let mut bytes = Vec::new();
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(unreadable)?;
    if bytes.len() as u64 > limit {
        return Err(FileRefusal::TooLarge(path.to_path_buf(), limit));
    }
    Ok(bytes)
}

#[cfg(unix)]
const ELOOP: i32 = libc::ELOOP;
#[cfg(not(unix))]
const ELOOP: i32 = -1;

#[cfg(unix)]
fn open_for_reading(path: &Path, follow: bool) -> std::io::Result<fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let flags = libc::O_NONBLOCK | if follow { 0 } else { libc::O_NOFOLLOW };
    fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags)
        .open(path)
}

#[cfg(not(unix))]
fn open_for_reading(path: &Path, _follow: bool) -> std::io::Result<fs::File> {
    fs::File::open(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symlinks_out_of_the_root_fifos_and_large_files_are_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("plugin");
        fs::create_dir_all(&root).expect("mkdir");
        fs::write(dir.path().join("secret.txt"), "secret").expect("write");
        std::os::unix::fs::symlink(dir.path().join("secret.txt"), root.join("link.md"))
            .expect("symlink");
        assert!(matches!(
            read_confined(&root, &root.join("link.md"), 100),
            Err(FileRefusal::OutsideRoot(_))
        ));
        fs::write(root.join("big.md"), "x".repeat(200)).expect("write");
        assert!(matches!(
            read_confined(&root, &root.join("big.md"), 100),
            Err(FileRefusal::TooLarge(..))
        ));
        assert!(matches!(
            read_confined(&root, &root, 100),
            Err(FileRefusal::NotRegular(_))
        ));
        std::process::Command::new("mkfifo")
            .arg(root.join("pipe.md"))
            .status()
            .expect("mkfifo");
        assert!(matches!(
            read_confined(&root, &root.join("pipe.md"), 100),
            Err(FileRefusal::NotRegular(_))
        ));
        fs::write(root.join("latin1.md"), b"caf\xe9").expect("write");
        assert_eq!(
            read_confined(&root, &root.join("latin1.md"), 100),
            Err(FileRefusal::NotUtf8(root.join("latin1.md"), 3))
        );
        fs::write(root.join("ok.md"), "fine").expect("write");
        assert_eq!(
            read_confined(&root, &root.join("ok.md"), 100).as_deref(),
            Ok("fine")
        );
    }
}
