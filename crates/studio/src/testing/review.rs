//! Pending golden changes and their review. `covel test --update` does not overwrite a golden
//! snapshot: it writes this run's snapshot beside it as `x.golden.new`, and each turn whose
//! snapshot differs is one pending change (the unit the Tests panel shows, a turn's
//! `goldenDifferences`). Reviewing decides one change at a time, with no state but the two
//! files: accepting copies that turn from the `.new` into the golden, rejecting copies the
//! golden's turn back into the `.new`; either way the change is gone from the comparison, and
//! when none is left the `.new` is deleted. So accepting one change of two writes a golden with
//! that change applied and the other kept as it was.

use super::golden::{self, Difference, Golden, GoldenTurn};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// Why a review step could not be done.
#[derive(Debug, thiserror::Error)]
pub enum ReviewError {
    #[error("cannot read {0}")]
    Golden(String),
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: crate::save::SaveError,
    },
    #[error("cannot remove {path}: {source}")]
    Remove {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A golden or pending file the studio would write is a link or not a regular file: the
    /// review stops before reading it (what it points to is not the author's snapshot).
    #[error("{0}")]
    Unsafe(crate::save::SaveError),
    #[error("{0}")]
    Render(String),
    #[error("{session}: no pending change at turn {index} (run `covel test --update` first)")]
    NoChange { session: PathBuf, index: usize },
}

/// What a pending change does to its turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, specta::Type)]
#[serde(rename = "GoldenChangeKind")]
#[serde(rename_all = "kebab-case")]
pub enum ChangeKind {
    /// The turn is in both and differs.
    Changed,
    /// The run has a turn the golden lacks (every turn of a new golden).
    Added,
    /// The golden has a turn the run no longer plays.
    Removed,
}

/// One pending change: one turn's snapshot in the golden and in `x.golden.new`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, specta::Type)]
#[serde(rename = "GoldenChange")]
#[serde(rename_all = "camelCase")]
pub struct PendingChange {
    /// The turn's 0-based index (what [`decide`] takes).
    pub index: u32,
    pub turn: String,
    pub kind: ChangeKind,
    pub differences: Vec<Difference>,
}

/// The pending file of a golden: `x.golden.yaml` → `x.golden.new` (not a `*.session.yaml`, so
/// discovery never takes it for a session).
pub fn pending_path(golden_file: &Path) -> PathBuf {
    let name = golden_file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = name.strip_suffix(".yaml").unwrap_or(&name);
    golden_file.with_file_name(format!("{stem}.new"))
}

/// The golden of `session` (empty when there is none yet) and its pending snapshot, if any.
fn load_pair(session: &Path) -> Result<Option<(Golden, Golden)>, ReviewError> {
    let golden_file = golden::path_for(session);
    let new_file = pending_path(&golden_file);
    for file in [&golden_file, &new_file] {
        refuse_unsafe(file)?;
    }
    if !new_file.exists() {
        return Ok(None);
    }
    let new = golden::load(&new_file).map_err(ReviewError::Golden)?;
    let old = if golden_file.exists() {
        golden::load(&golden_file).map_err(ReviewError::Golden)?
    } else {
        Golden {
            format: golden::FORMAT.into(),
            session: new.session.clone(),
            turns: Vec::new(),
        }
    };
    Ok(Some((old, new)))
}

/// Refuses a file that is a symbolic link (even a dangling one) or exists but is not a
/// regular file: a review writes these files, and never through a link or into a FIFO.
fn refuse_unsafe(file: &Path) -> Result<(), ReviewError> {
    match std::fs::symlink_metadata(file) {
        Ok(meta) if meta.file_type().is_symlink() => Err(ReviewError::Unsafe(
            crate::save::SaveError::Symlink(file.to_path_buf()),
        )),
        Ok(meta) if !meta.is_file() => Err(ReviewError::Unsafe(
            crate::save::SaveError::NotRegular(file.to_path_buf()),
        )),
        _ => Ok(()),
    }
}

fn summary(turn: &GoldenTurn, change: &'static str) -> Difference {
    Difference {
        place: "turn".into(),
        from: None,
        plugin: None,
        change,
        diff: format!("{} · player: {}", turn.turn, turn.say),
        also_in: Vec::new(),
        same_as: None,
    }
}

/// The changes between a golden and a pending snapshot, turn by turn.
pub fn changes_between(old: &Golden, new: &Golden) -> Vec<PendingChange> {
    let count = old.turns.len().max(new.turns.len());
    let no_providers = |_: &str| None;
    let mut changes: Vec<PendingChange> = (0..count)
        .filter_map(|index| {
            let (kind, turn, differences) = match (old.turns.get(index), new.turns.get(index)) {
                (Some(a), Some(b)) => {
                    let differences = golden::compare(a, b, &no_providers);
                    if differences.is_empty() {
                        return None;
                    }
                    (ChangeKind::Changed, b, differences)
                }
                (None, Some(b)) => (ChangeKind::Added, b, vec![summary(b, "added")]),
                (Some(a), None) => (ChangeKind::Removed, a, vec![summary(a, "removed")]),
                (None, None) => return None,
            };
            Some(PendingChange {
                index: u32::try_from(index).unwrap_or(u32::MAX),
                turn: turn.turn.clone(),
                kind,
                differences,
            })
        })
        .collect();
    let mut shown: Vec<(String, &mut Vec<Difference>)> = changes
        .iter_mut()
        .map(|c| (c.turn.clone(), &mut c.differences))
        .collect();
    golden::dedupe(&mut shown);
    changes
}

/// The pending changes of a session (none when it has no `x.golden.new`).
pub fn pending(session: &Path) -> Result<Vec<PendingChange>, ReviewError> {
    Ok(load_pair(session)?
        .map(|(old, new)| changes_between(&old, &new))
        .unwrap_or_default())
}

/// What deciding one change did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decided {
    /// The golden file was written (the change was accepted).
    pub golden_written: bool,
    /// Changes still pending; at 0 the `.new` file was deleted.
    pub remaining: usize,
}

fn write(golden: &Golden, path: &Path, session: &Path) -> Result<(), ReviewError> {
    let text = golden::render(golden, session).map_err(ReviewError::Render)?;
    crate::save::write_author_file(path, text.as_bytes()).map_err(|source| ReviewError::Write {
        path: path.to_path_buf(),
        source,
    })
}

/// Accepts or rejects the pending change of turn `index` of `session`.
pub fn decide(session: &Path, index: usize, accept: bool) -> Result<Decided, ReviewError> {
    let no_change = || ReviewError::NoChange {
        session: session.to_path_buf(),
        index,
    };
    let (mut old, mut new) = load_pair(session)?.ok_or_else(no_change)?;
    let golden_file = golden::path_for(session);
    let new_file = pending_path(&golden_file);
    if !changes_between(&old, &new)
        .iter()
        .any(|c| c.index as usize == index)
    {
        return Err(no_change());
    }
    // The side that gives way takes the other's turn (or loses its own).
    let (from, to) = if accept {
        (&new, &mut old)
    } else {
        (&old, &mut new)
    };
    match from.turns.get(index).cloned() {
        Some(turn) if index < to.turns.len() => to.turns[index] = turn,
        Some(turn) => to.turns.push(turn),
        None => {
            to.turns.remove(index);
        }
    }
    if accept {
        write(&old, &golden_file, session)?;
    }
    let remaining = changes_between(&old, &new).len();
    if remaining == 0 {
        std::fs::remove_file(&new_file).map_err(|source| ReviewError::Remove {
            path: new_file.clone(),
            source,
        })?;
    } else if !accept {
        write(&new, &new_file, session)?;
    }
    Ok(Decided {
        golden_written: accept,
        remaining,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn turn(id: &str, world: serde_json::Value) -> GoldenTurn {
        GoldenTurn {
            turn: id.into(),
            say: "hello".into(),
            system: Vec::new(),
            messages: Vec::new(),
            slots: Vec::new(),
            world,
        }
    }

    fn golden(turns: Vec<GoldenTurn>) -> Golden {
        Golden {
            format: golden::FORMAT.into(),
            session: "s".into(),
            turns,
        }
    }

    /// A session whose golden has two turns and whose pending snapshot changes both.
    fn two_changes() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().expect("temp dir");
        let session = dir.path().join("s.session.yaml");
        let old = golden(vec![
            turn("t1", json!({"a": 1})),
            turn("t2", json!({"b": 1})),
        ]);
        let new = golden(vec![
            turn("t1", json!({"a": 2})),
            turn("t2", json!({"b": 2})),
        ]);
        let golden_file = golden::path_for(&session);
        write(&old, &golden_file, &session).expect("golden");
        write(&new, &pending_path(&golden_file), &session).expect("pending");
        (dir, session)
    }

    #[test]
    fn accepting_one_change_of_two_writes_that_turn_and_keeps_the_other_pending() {
        let (_dir, session) = two_changes();
        assert_eq!(pending(&session).expect("pending").len(), 2);
        let decided = decide(&session, 0, true).expect("accept");
        assert_eq!(decided.remaining, 1);
        let written = golden::load(&golden::path_for(&session)).expect("golden");
        assert_eq!(written.turns[0].world, json!({"a": 2}), "accepted");
        assert_eq!(written.turns[1].world, json!({"b": 1}), "kept as it was");
        let left = pending(&session).expect("pending");
        assert_eq!((left.len(), left[0].index), (1, 1));
        let decided = decide(&session, 1, false).expect("reject");
        assert_eq!(decided.remaining, 0);
        assert!(!pending_path(&golden::path_for(&session)).exists());
        let written = golden::load(&golden::path_for(&session)).expect("golden");
        assert_eq!(written.turns[1].world, json!({"b": 1}), "rejected");
    }

    #[test]
    fn a_new_golden_is_one_added_change_per_turn_and_deciding_a_turn_twice_is_an_error() {
        let dir = tempfile::tempdir().expect("temp dir");
        let session = dir.path().join("s.session.yaml");
        let new = golden(vec![turn("t1", json!(1)), turn("t2", json!(2))]);
        write(&new, &pending_path(&golden::path_for(&session)), &session).expect("pending");
        let changes = pending(&session).expect("pending");
        assert!(changes.iter().all(|c| c.kind == ChangeKind::Added));
        decide(&session, 0, true).expect("accept");
        assert!(matches!(
            decide(&session, 0, true),
            Err(ReviewError::NoChange { index: 0, .. })
        ));
        decide(&session, 1, true).expect("accept");
        assert_eq!(
            golden::load(&golden::path_for(&session)).expect("golden"),
            new
        );
    }
}
