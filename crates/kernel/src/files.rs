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
        }
    }
}

/// Reads `path` as text if it lies inside `root` (after symlinks), is a regular file and is at
/// most `limit` bytes.
pub fn read_confined(root: &Path, path: &Path, limit: u64) -> Result<String, FileRefusal> {
    let unreadable = |e: std::io::Error| FileRefusal::Unreadable(path.to_path_buf(), e.to_string());
    let canonical = path.canonicalize().map_err(unreadable)?;
    let canonical_root = root
        .canonicalize()
        .map_err(|e| FileRefusal::Unreadable(root.to_path_buf(), e.to_string()))?;
    if !canonical.starts_with(&canonical_root) {
        return Err(FileRefusal::OutsideRoot(path.to_path_buf()));
    }
    read_regular(&canonical, limit).map_err(|refusal| match refusal {
        FileRefusal::NotRegular(_) => FileRefusal::NotRegular(path.to_path_buf()),
        FileRefusal::TooLarge(_, n) => FileRefusal::TooLarge(path.to_path_buf(), n),
        other => other,
    })
}

/// Reads a regular file of at most `limit` bytes (no root: a session file the user chose).
pub fn read_regular(path: &Path, limit: u64) -> Result<String, FileRefusal> {
    let unreadable = |e: std::io::Error| FileRefusal::Unreadable(path.to_path_buf(), e.to_string());
    let metadata = fs::metadata(path).map_err(unreadable)?;
    if !metadata.is_file() {
        return Err(FileRefusal::NotRegular(path.to_path_buf()));
    }
    if metadata.len() > limit {
        return Err(FileRefusal::TooLarge(path.to_path_buf(), limit));
    }
    // The size can change between the check and the read: never read past the limit.
    let mut text = String::new();
    fs::File::open(path)
        .map_err(unreadable)?
        .take(limit + 1)
        .read_to_string(&mut text)
        .map_err(unreadable)?;
    if text.len() as u64 > limit {
        return Err(FileRefusal::TooLarge(path.to_path_buf(), limit));
    }
    Ok(text)
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
        fs::write(root.join("ok.md"), "fine").expect("write");
        assert_eq!(
            read_confined(&root, &root.join("ok.md"), 100).as_deref(),
            Ok("fine")
        );
    }
}
