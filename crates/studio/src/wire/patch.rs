//! What crosses the wire after the first snapshot: a [`SnapshotPatch`] holding only the parts
//! that differ from what the UI last received, and the played turns as `{ keep, append }` so a
//! turn crosses once (undo sends `keep = n - 1`). [`WireState`] holds the snapshot the UI last
//! received and is the one place that decides what changed: a part is sent again exactly when
//! it is not equal to the one held (`JsonValue` is equal only to the same JSON text, its keys in
//! the same order; a duration or threshold compares by value, where `-0` equals `0`, and none is
//! negative). Comparing is cheaper than digesting the new snapshot: equal strings are compared
//! as bytes, and a changed item is found at its first differing field.

use super::common::CallRecord;
use super::common::{Diagnostic, JsonValue};
use super::compaction::CompactionView;
use super::plugins::{PluginView, Resolution};
use super::preview::{
    CacheReport, HistoryRewrite, ImageFlowView, Preview, PreviewError, PreviewTimings, PromptView,
    RuntimeTarget, SegmentRow, SlotView, WorldContextView,
};
use super::reload::ReloadEntry;
use super::snapshot::{Snapshot, UndoView};
use super::turns::TurnRecord;
use serde::Serialize;
use specta::Type;

/// The played turns: keep the first `keep` the UI has, then append these.
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
pub struct Turns {
    pub keep: u32,
    pub append: Vec<TurnRecord>,
}

/// A list's items that changed, by position: the list is now `count` long, and every position
/// not in `changed` keeps the item the UI holds there. The plugins cross this way (a reload
/// sends the plugin it changed, not the folder's list), and so do the preview's calls (a reload
/// sends the calls that ran again, not every call of the folder) and its slot views (a reload
/// sends the slots whose chain ran the changed plugin: each view carries its chain's calls).
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
pub struct Positions<T> {
    pub count: u32,
    pub changed: Vec<At<T>>,
}

/// One item of [`Positions`] and its position in the list.
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
pub struct At<T> {
    pub index: u32,
    pub item: T,
}

impl<T: PartialEq + Clone> Positions<T> {
    /// The items of `now` not equal to the one held at their position (every item without
    /// `before`); `None` when the list is the same.
    fn of(before: Option<&[T]>, now: &[T]) -> Option<Positions<T>> {
        let changed: Vec<At<T>> = now
            .iter()
            .enumerate()
            .filter(|(i, item)| before.and_then(|b| b.get(*i)) != Some(*item))
            .map(|(i, item)| At {
                index: u32::try_from(i).unwrap_or(u32::MAX),
                item: item.clone(),
            })
            .collect();
        if changed.is_empty() && before.is_some_and(|b| b.len() == now.len()) {
            return None;
        }
        let count = u32::try_from(now.len()).unwrap_or(u32::MAX);
        Some(Positions { count, changed })
    }
}

/// `now` when it is not equal to what was sent (`before`, `None` before anything was sent).
fn part<T: PartialEq + Clone>(before: Option<&T>, now: &T) -> Option<T> {
    (before != Some(now)).then(|| now.clone())
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
    pub plugins: Option<Positions<PluginView>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolution: Option<Resolution>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preview: Option<PreviewPatch>,
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

/// The parts of the [`Preview`] that changed, each absent when unchanged: a reload that changed
/// only call durations sends the calls and timings, not the prompt and segment table again.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct PreviewPatch {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runtime: Option<RuntimeTarget>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt: Option<PromptView>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub segments: Option<Vec<SegmentRow>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache: Option<CacheReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub world_context: Option<WorldContextView>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slots: Option<Positions<SlotView>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image_flow: Option<ImageFlowView>,
    /// `[]` when the rewrites are gone (the preview itself omits an empty list).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub history_rewrites: Option<Vec<HistoryRewrite>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub calls: Option<Positions<CallRecord>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub errors: Option<Vec<PreviewError>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timings: Option<PreviewTimings>,
}

impl PreviewPatch {
    /// The parts of `now` not equal to those of `before` (every part without `before`); `None`
    /// when nothing changed.
    fn of(before: Option<&Preview>, now: &Preview) -> Option<PreviewPatch> {
        let patch = PreviewPatch {
            session: part(before.map(|b| &b.session), &now.session),
            runtime: part(before.map(|b| &b.runtime), &now.runtime),
            turn_id: part(before.map(|b| &b.turn_id), &now.turn_id),
            prompt: part(before.map(|b| &b.prompt), &now.prompt),
            segments: part(before.map(|b| &b.segments), &now.segments),
            cache: part(before.map(|b| &b.cache), &now.cache),
            world_context: part(before.map(|b| &b.world_context), &now.world_context),
            slots: Positions::of(before.map(|b| &b.slots[..]), &now.slots),
            image_flow: part(before.map(|b| &b.image_flow), &now.image_flow),
            history_rewrites: part(before.map(|b| &b.history_rewrites), &now.history_rewrites),
            calls: Positions::of(before.map(|b| &b.calls[..]), &now.calls),
            errors: part(before.map(|b| &b.errors), &now.errors),
            timings: part(before.map(|b| &b.timings), &now.timings),
        };
        (patch != PreviewPatch::default()).then_some(patch)
    }
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

/// The snapshot the UI last received (`None` before the first) and its version, counted up by
/// every snapshot and patch sent.
#[derive(Debug, Clone, Default)]
pub struct WireState {
    sent: Option<Snapshot>,
    version: u32,
}

impl WireState {
    /// The whole snapshot (on open, or when the UI asks for it), remembered as sent.
    pub fn full(&mut self, mut snapshot: Snapshot) -> Snapshot {
        self.version = self.version.wrapping_add(1);
        snapshot.version = self.version;
        self.sent = Some(snapshot.clone());
        snapshot
    }

    /// Only the parts of `snapshot` that differ from what was sent, remembered as sent. Before
    /// any snapshot was sent, every part.
    pub fn patch(&mut self, mut snapshot: Snapshot) -> SnapshotPatch {
        let since = self.version;
        self.version = self.version.wrapping_add(1);
        snapshot.version = self.version;
        let before = self.sent.as_ref();
        let now = &snapshot;
        let kept = before.map_or(0, |b| {
            b.turns
                .iter()
                .zip(&now.turns)
                .take_while(|(a, b)| a == b)
                .count()
        });
        // The turns kept are the common prefix; they changed unless it is both whole lists.
        let turns_changed = before.is_none_or(|b| kept != b.turns.len() || kept != now.turns.len());
        let patch = SnapshotPatch {
            since,
            version: self.version,
            plugins_dir: part(before.map(|b| &b.plugins_dir), &now.plugins_dir),
            session_path: part(before.map(|b| &b.session_path), &now.session_path),
            session: part(before.map(|b| &b.session), &now.session),
            session_text: part(before.map(|b| &b.session_text), &now.session_text),
            session_error: part(before.map(|b| &b.session_error), &now.session_error),
            undo: part(before.map(|b| &b.undo), &now.undo),
            played_path: part(before.map(|b| &b.played_path), &now.played_path),
            plugins: Positions::of(before.map(|b| &b.plugins[..]), &now.plugins),
            resolution: part(before.map(|b| &b.resolution), &now.resolution),
            preview: PreviewPatch::of(before.map(|b| &b.preview), &now.preview),
            compaction: part(before.map(|b| &b.compaction), &now.compaction),
            turns: turns_changed.then(|| Turns {
                keep: u32::try_from(kept).unwrap_or(u32::MAX),
                append: now.turns[kept..].to_vec(),
            }),
            last_reload: part(before.map(|b| &b.last_reload), &now.last_reload),
            diagnostics: part(before.map(|b| &b.diagnostics), &now.diagnostics),
        };
        self.sent = Some(snapshot);
        patch
    }
}
