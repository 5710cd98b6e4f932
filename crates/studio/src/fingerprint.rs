//! What a plugin folder holds, as one digest: every entry's relative path and kind, each file's
//! bytes and each link's target. A reload compares the folder's digest with the one taken before
//! its last load and skips a folder whose bytes are all the same (an editor's save that rewrote
//! identical text, a touch, the second half of a save the watcher saw as two batches), so such a
//! save neither replaces a runtime nor produces a reload entry.

use sha2::{Digest, Sha256};
use std::fs;
use std::path::Path;

/// The digest of a plugin folder's entries (see the module's doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fingerprint([u8; 32]);

/// A folder with more entries than this is not fingerprinted: it is reloaded on every event, as
/// before fingerprints (reading it whole on each save would cost more than the reload saves).
pub const MAX_ENTRIES: usize = 4096;

/// A folder holding more bytes than this is not fingerprinted either (see [`MAX_ENTRIES`]).
pub const MAX_BYTES: u64 = 32 * 1024 * 1024;

/// The digest of `folder` as it is on disk now; None when it cannot be read whole or is over the
/// limits, so that the folder is always reloaded. Links are not followed (their target's text is
/// digested), so a folder that links to itself is read once.
pub fn of_folder(folder: &Path) -> Option<Fingerprint> {
    let mut hasher = Sha256::new();
    let mut budget = Budget {
        entries: MAX_ENTRIES,
        bytes: MAX_BYTES,
    };
    feed_folder(folder, "", &mut hasher, &mut budget)?;
    Some(Fingerprint(hasher.finalize().into()))
}

struct Budget {
    entries: usize,
    bytes: u64,
}

fn feed_folder(dir: &Path, prefix: &str, hasher: &mut Sha256, budget: &mut Budget) -> Option<()> {
    let mut entries: Vec<(String, fs::DirEntry)> = fs::read_dir(dir)
        .ok()?
        .map(|e| {
            e.ok()
                .map(|e| (e.file_name().to_string_lossy().into_owned(), e))
        })
        .collect::<Option<_>>()?;
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    for (name, entry) in entries {
        budget.entries = budget.entries.checked_sub(1)?;
        let path = format!("{prefix}{name}");
        let kind = entry.file_type().ok()?;
        // Each record is tagged and length-prefixed, so no two folders feed the same bytes.
        if kind.is_symlink() {
            let target = fs::read_link(entry.path()).ok()?;
            record(hasher, b'l', &path, target.to_string_lossy().as_bytes());
        } else if kind.is_dir() {
            record(hasher, b'd', &path, b"");
            feed_folder(&entry.path(), &format!("{path}/"), hasher, budget)?;
        } else if kind.is_file() {
            let size = entry.metadata().ok()?.len();
            budget.bytes = budget.bytes.checked_sub(size)?;
            // Opened without blocking, and as what it is now (a file swapped for a FIFO since
            // the listing is refused, never waited on).
            let bytes = covel_kernel::files::read_regular_bytes(&entry.path(), size).ok()?;
            record(hasher, b'f', &path, &bytes);
        } else {
            // A socket or a device in a plugin folder: nothing the loader reads, but its name is
            // part of what the folder holds.
            record(hasher, b'o', &path, b"");
        }
    }
    Some(())
}

fn record(hasher: &mut Sha256, tag: u8, path: &str, content: &[u8]) {
    hasher.update([tag]);
    hasher.update((path.len() as u64).to_le_bytes());
    hasher.update(path.as_bytes());
    hasher.update((content.len() as u64).to_le_bytes());
    hasher.update(content);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folder() -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        fs::create_dir_all(dir.path().join("server")).expect("mkdir");
        fs::write(dir.path().join("PLUGIN.md"), "---\nid: a\n---\n").expect("manifest");
        fs::write(dir.path().join("server/index.js"), "export default 1;\n").expect("entry");
        dir
    }

    #[test]
    fn the_same_bytes_give_the_same_fingerprint_and_any_change_another() {
        let dir = folder();
        let first = of_folder(dir.path()).expect("a fingerprint");
        let entry = dir.path().join("server/index.js");
        // Rewritten with the same text (a new inode, a new modification time): the same.
        fs::remove_file(&entry).expect("remove");
        fs::write(&entry, "export default 1;\n").expect("rewrite");
        assert_eq!(of_folder(dir.path()), Some(first));
        fs::write(&entry, "export default 2;\n").expect("edit");
        assert_ne!(of_folder(dir.path()), Some(first), "a changed byte");
        fs::write(&entry, "export default 1;\n").expect("back");
        assert_eq!(of_folder(dir.path()), Some(first), "the same bytes again");
        fs::write(dir.path().join("server/extra.js"), "").expect("new file");
        assert_ne!(of_folder(dir.path()), Some(first), "a new, empty file");
    }

    #[test]
    fn a_moved_file_or_a_renamed_folder_is_a_change() {
        let dir = folder();
        let first = of_folder(dir.path()).expect("a fingerprint");
        fs::rename(dir.path().join("server"), dir.path().join("lib")).expect("rename");
        assert_ne!(of_folder(dir.path()), Some(first));
    }

    #[test]
    fn a_folder_over_the_limits_or_unreadable_has_no_fingerprint() {
        let dir = folder();
        for i in 0..MAX_ENTRIES {
            fs::write(dir.path().join(format!("f{i}")), "").expect("file");
        }
        assert_eq!(of_folder(dir.path()), None, "too many entries");
        assert_eq!(of_folder(&dir.path().join("missing")), None);
    }

    #[cfg(unix)]
    #[test]
    fn a_link_is_digested_by_its_target_and_a_loop_is_read_once() {
        let dir = folder();
        std::os::unix::fs::symlink(dir.path(), dir.path().join("loop")).expect("link");
        let first = of_folder(dir.path()).expect("a fingerprint");
        fs::remove_file(dir.path().join("loop")).expect("unlink");
        std::os::unix::fs::symlink("server", dir.path().join("loop")).expect("relink");
        assert_ne!(of_folder(dir.path()), Some(first), "another target");
    }
}
