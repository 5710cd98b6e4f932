//! What crosses the wire after the first snapshot: a [`SnapshotPatch`] holding only the parts
//! that differ from what the UI last received, and the played turns as `{ keep, append }` so a
//! turn crosses once (undo sends `keep = n - 1`). [`WireState`] remembers what was sent (a hash
//! of each part and of each turn) and is the one place that decides what changed.

use super::common::{Diagnostic, JsonValue};
use super::compaction::CompactionView;
use super::plugins::{PluginView, Resolution};
use super::preview::Preview;
use super::reload::ReloadEntry;
use super::snapshot::{Snapshot, UndoView};
use super::turns::TurnRecord;
use serde::Serialize;
use specta::Type;
use std::collections::hash_map::DefaultHasher;
use std::hash::Hasher;

/// The played turns: keep the first `keep` the UI has, then append these.
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
pub struct Turns {
    pub keep: u32,
    pub append: Vec<TurnRecord>,
}

/// The parts of a [`Snapshot`] that changed since the UI last received one. A part is absent
/// when unchanged; a part the snapshot may omit (`sessionPath`, `undo`, …) is `null` when it
/// is gone.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct SnapshotPatch {
    /// The version of the snapshot this patch applies to; a UI holding another version (a
    /// patch arrived out of order) asks for the whole snapshot instead.
    pub since: u32,
    /// The version of the snapshot after it.
    pub version: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plugins_dir: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_path: Option<Option<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[specta(type = Option<crate::wire::common::JsonShape>)]
    pub session: Option<JsonValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_text: Option<Option<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_error: Option<Option<Diagnostic>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub undo: Option<Option<UndoView>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub played_path: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plugins: Option<Vec<PluginView>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolution: Option<Resolution>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preview: Option<Preview>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compaction: Option<CompactionView>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turns: Option<Turns>,
    /// The reload that caused this patch (or `null` once there is none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_reload: Option<Option<ReloadEntry>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diagnostics: Option<Vec<Diagnostic>>,
}

impl SnapshotPatch {
    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        *self
            == SnapshotPatch {
                since: self.since,
                version: self.version,
                ..SnapshotPatch::default()
            }
    }
}

/// The hash of a part's JSON, fed to the hasher as it is written: a snapshot is hashed after
/// every command and reload, and a copy of the preview's text each time would be thrown away.
fn hash_of<T: Serialize>(value: &T) -> u64 {
    struct Feed(DefaultHasher);
    impl std::io::Write for Feed {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.write(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut feed = Feed(DefaultHasher::new());
    // Serializing these view types cannot fail (string keys, no custom serializers).
    let _ = serde_json::to_writer(&mut feed, value);
    feed.0.finish()
}

/// The hashes of what the UI last received, part by part.
#[derive(Debug, Clone, Default, PartialEq)]
struct Sent {
    parts: [u64; 13],
    turns: Vec<u64>,
}

impl Sent {
    fn of(s: &Snapshot) -> Sent {
        Sent {
            parts: [
                hash_of(&s.plugins_dir),
                hash_of(&s.session_path),
                hash_of(&s.session),
                hash_of(&s.session_text),
                hash_of(&s.session_error),
                hash_of(&s.undo),
                hash_of(&s.played_path),
                hash_of(&s.plugins),
                hash_of(&s.resolution),
                hash_of(&s.preview),
                hash_of(&s.compaction),
                hash_of(&s.last_reload),
                hash_of(&s.diagnostics),
            ],
            turns: s.turns.iter().map(hash_of).collect(),
        }
    }
}

/// What the UI last received (`None` before the first snapshot) and its version, counted up by
/// every snapshot and patch sent.
#[derive(Debug, Clone, Default)]
pub struct WireState {
    sent: Option<Sent>,
    version: u32,
}

impl WireState {
    /// The whole snapshot (on open, or when the UI asks for it), remembered as sent.
    pub fn full(&mut self, mut snapshot: Snapshot) -> Snapshot {
        self.version = self.version.wrapping_add(1);
        snapshot.version = self.version;
        self.sent = Some(Sent::of(&snapshot));
        snapshot
    }

    /// Only the parts of `snapshot` that differ from what was sent, remembered as sent. Before
    /// any snapshot was sent, every part.
    pub fn patch(&mut self, snapshot: Snapshot) -> SnapshotPatch {
        let since = self.version;
        self.version = self.version.wrapping_add(1);
        let now = Sent::of(&snapshot);
        let before = self.sent.replace(now.clone());
        let changed = |i: usize| before.as_ref().is_none_or(|b| b.parts[i] != now.parts[i]);
        let kept = before.as_ref().map_or(0, |b| {
            b.turns
                .iter()
                .zip(&now.turns)
                .take_while(|(a, b)| a == b)
                .count()
        });
        let turns_changed = before.as_ref().is_none_or(|b| b.turns != now.turns);
        let Snapshot {
            version: _,
            plugins_dir,
            session_path,
            session,
            session_text,
            session_error,
            undo,
            played_path,
            plugins,
            resolution,
            preview,
            compaction,
            turns,
            last_reload,
            diagnostics,
        } = snapshot;
        SnapshotPatch {
            since,
            version: self.version,
            plugins_dir: changed(0).then_some(plugins_dir),
            session_path: changed(1).then_some(session_path),
            session: changed(2).then_some(session),
            session_text: changed(3).then_some(session_text),
            session_error: changed(4).then_some(session_error),
            undo: changed(5).then_some(undo),
            played_path: changed(6).then_some(played_path),
            plugins: changed(7).then_some(plugins),
            resolution: changed(8).then_some(resolution),
            preview: changed(9).then_some(preview),
            compaction: changed(10).then_some(compaction),
            turns: turns_changed.then(|| Turns {
                keep: u32::try_from(kept).unwrap_or(u32::MAX),
                append: turns.into_iter().skip(kept).collect(),
            }),
            last_reload: changed(11).then_some(last_reload),
            diagnostics: changed(12).then_some(diagnostics),
        }
    }
}
