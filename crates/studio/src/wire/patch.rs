//! What crosses the wire after the first snapshot: a [`SnapshotPatch`] holding only the parts
//! that differ from what the UI last received, and the played turns as `{ keep, append }` so a
//! turn crosses once (undo sends `keep = n - 1`). [`WireState`] remembers what was sent (a digest
//! of each part and of each turn) and is the one place that decides what changed.

use super::common::CallRecord;
use super::common::{Diagnostic, JsonValue};
use super::compaction::CompactionView;
use super::digest::{self, Digest};
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

impl<T> Positions<T> {
    /// The items whose digest differs from the one sent at their position (every item without
    /// `before`); `None` when the list is the same.
    fn of(items: Vec<T>, before: Option<&[Digest]>, now: &[Digest]) -> Option<Positions<T>> {
        if before == Some(now) {
            return None;
        }
        let count = u32::try_from(items.len()).unwrap_or(u32::MAX);
        let changed = items
            .into_iter()
            .zip(now)
            .enumerate()
            .filter(|(i, (_, digest))| before.and_then(|b| b.get(*i)) != Some(*digest))
            .map(|(i, (item, _))| At {
                index: u32::try_from(i).unwrap_or(u32::MAX),
                item,
            })
            .collect();
        Some(Positions { count, changed })
    }
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

/// How many parts a preview is sent in (the fields of [`PreviewPatch`]).
const PREVIEW_PARTS: usize = 13;

/// What was sent of a preview: a digest per part, in [`PreviewPatch`]'s field order, and one per
/// slot view and per call (those cross by position).
#[derive(Debug, Clone, Default, PartialEq)]
struct PreviewSent {
    parts: [Digest; PREVIEW_PARTS],
    slots: Vec<Digest>,
    calls: Vec<Digest>,
}

fn preview_digests(p: &Preview) -> PreviewSent {
    let slots: Vec<Digest> = p.slots.iter().map(digest::of).collect();
    let calls: Vec<Digest> = p.calls.iter().map(digest::of).collect();
    PreviewSent {
        parts: [
            digest::of(&p.session),
            digest::of(&p.runtime),
            digest::of(&p.turn_id),
            digest::of(&p.prompt),
            digest::of(&p.segments),
            digest::of(&p.cache),
            digest::of(&p.world_context),
            digest::of(&slots),
            digest::of(&p.image_flow),
            digest::of(&p.history_rewrites),
            digest::of(&calls),
            digest::of(&p.errors),
            digest::of(&p.timings),
        ],
        slots,
        calls,
    }
}

impl PreviewPatch {
    /// The parts of `preview` whose digest differs from `before` (every part without `before`);
    /// `None` when nothing changed.
    fn of(
        preview: Preview,
        before: Option<&PreviewSent>,
        now: &PreviewSent,
    ) -> Option<PreviewPatch> {
        let changed = |i: usize| before.is_none_or(|b| b.parts[i] != now.parts[i]);
        if !(0..PREVIEW_PARTS).any(changed) {
            return None;
        }
        let Preview {
            session,
            runtime,
            turn_id,
            prompt,
            segments,
            cache,
            world_context,
            slots,
            image_flow,
            history_rewrites,
            calls,
            errors,
            timings,
        } = preview;
        Some(PreviewPatch {
            session: changed(0).then_some(session),
            runtime: changed(1).then_some(runtime),
            turn_id: changed(2).then_some(turn_id),
            prompt: changed(3).then_some(prompt),
            segments: changed(4).then_some(segments),
            cache: changed(5).then_some(cache),
            world_context: changed(6).then_some(world_context),
            slots: Positions::of(slots, before.map(|b| &b.slots[..]), &now.slots),
            image_flow: changed(8).then_some(image_flow),
            history_rewrites: changed(9).then_some(history_rewrites),
            calls: Positions::of(calls, before.map(|b| &b.calls[..]), &now.calls),
            errors: changed(11).then_some(errors),
            timings: changed(12).then_some(timings),
        })
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

/// The digests of what the UI last received ([`digest::of`]), part by part.
#[derive(Debug, Clone, Default, PartialEq)]
struct Sent {
    /// Every part but the plugins and the preview, in [`SnapshotPatch`]'s field order.
    parts: [Digest; 11],
    plugins: Vec<Digest>,
    preview: PreviewSent,
    turns: Vec<Digest>,
}

impl Sent {
    fn of(s: &Snapshot) -> Sent {
        Sent {
            parts: [
                digest::of(&s.plugins_dir),
                digest::of(&s.session_path),
                digest::of(&s.session),
                digest::of(&s.session_text),
                digest::of(&s.session_error),
                digest::of(&s.undo),
                digest::of(&s.played_path),
                digest::of(&s.resolution),
                digest::of(&s.compaction),
                digest::of(&s.last_reload),
                digest::of(&s.diagnostics),
            ],
            plugins: s.plugins.iter().map(digest::of).collect(),
            preview: preview_digests(&s.preview),
            turns: s.turns.iter().map(digest::of).collect(),
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
            plugins: Positions::of(
                plugins,
                before.as_ref().map(|b| &b.plugins[..]),
                &now.plugins,
            ),
            resolution: changed(7).then_some(resolution),
            preview: PreviewPatch::of(preview, before.as_ref().map(|b| &b.preview), &now.preview),
            compaction: changed(8).then_some(compaction),
            turns: turns_changed.then(|| Turns {
                keep: u32::try_from(kept).unwrap_or(u32::MAX),
                append: turns.into_iter().skip(kept).collect(),
            }),
            last_reload: changed(9).then_some(last_reload),
            diagnostics: changed(10).then_some(diagnostics),
        }
    }
}
