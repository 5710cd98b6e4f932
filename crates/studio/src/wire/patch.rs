//! What crosses the wire after the first snapshot: a [`SnapshotPatch`] holding only the parts
//! that differ from what the UI last received, and the played turns as `{ keep, append }` so a
//! turn crosses once (undo sends `keep = n - 1`). [`WireState`] holds the snapshot the UI last
//! received and is the one place that decides what changed: a part is sent again exactly when
//! it is not equal to the one held (`JsonValue` is equal only to the same JSON text, its keys in
//! the same order; a duration or threshold compares by value, where `-0` equals `0`, and none is
//! negative). Comparing is cheaper than digesting the new snapshot: equal strings are compared
//! as bytes, and a changed item is found at its first differing field.

use super::common::CallRecord;
use super::common::{Diagnostic, JsonValue, RunError, Shared, SlotId};
use super::compaction::CompactionView;
use super::plugins::{PluginView, Resolution};
use super::preview::{
    CacheReport, HistoryRewrite, ImageFlowView, Preview, PreviewError, PreviewTimings,
    RuntimeTarget, SegmentRow, SlotView, WorldContextView,
};
use super::reload::ReloadEntry;
use super::snapshot::{Snapshot, UndoView};
use super::splice::JsonChange;
use super::turns::{BranchView, TurnRecord};
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
/// sends the calls that ran again, not every call of the folder), its slot views (a reload
/// sends the slots whose chain ran the changed plugin, each with only the calls of its chain
/// that changed: [`SlotViewPatch`]) and its segment table (a save that changes one segment's
/// text sends that row, not the folder's rows: ≈ 560 KB at 500 generated plugins).
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
pub struct Positions<T> {
    pub count: u32,
    pub changed: Vec<At<T>>,
    /// Every position not in `changed` holds the UI's item there *answered from the memo*
    /// ([`MemoAnswer`]) rather than the item itself. The first reload after a folder opens
    /// answers nearly every call from the memo: this flag says so instead of sending every call
    /// and slot view again (at 500 plugins, ≈ 190 KB the window parsed and applied in 69 ms).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    #[specta(optional)]
    pub memoized: bool,
}

/// An item that being answered from the engine's memo changes in one known way: a call record
/// is then `cached`, shows no duration and no reason it would not be cached, and says how long
/// the run it reuses took (the duration the record of that run showed: the memo keeps an
/// answer's first run's duration, `CallReport::ran`); a slot view's chain is then every call
/// answered so. The UI applies the same change (`memoAnswer` in
/// `ui/src/lib/patch.ts`); [`Positions::of_memoizing`] uses the flag only where this check says
/// the result is exactly the new item, so a patch still rebuilds the snapshot exactly.
pub trait MemoAnswer: Sized {
    /// This item as a memo answer shows it.
    fn memo_answer(&self) -> Self;
    /// Whether `self` is `before.memo_answer()` (compared field by field, nothing copied).
    fn is_memo_answer_to(&self, before: &Self) -> bool;
}

impl MemoAnswer for CallRecord {
    fn memo_answer(&self) -> Self {
        CallRecord {
            duration_ms: 0.0,
            cached: true,
            ran_ms: if self.cached {
                self.ran_ms
            } else {
                Some(self.duration_ms)
            },
            not_cached: None,
            ..self.clone()
        }
    }

    fn is_memo_answer_to(&self, before: &Self) -> bool {
        let CallRecord {
            point,
            plugin_id,
            provider_id,
            slot,
            order,
            outcome,
            error_code,
            message,
            duration_ms,
            logs,
            notes,
            cached,
            ran_ms,
            not_cached,
        } = self;
        let ran_before = if before.cached {
            before.ran_ms
        } else {
            Some(before.duration_ms)
        };
        *cached
            && *duration_ms == 0.0
            && *ran_ms == ran_before
            && not_cached.is_none()
            && *point == before.point
            && *plugin_id == before.plugin_id
            && *provider_id == before.provider_id
            && *slot == before.slot
            && *order == before.order
            && *outcome == before.outcome
            && *error_code == before.error_code
            && *message == before.message
            && *logs == before.logs
            && *notes == before.notes
    }
}

impl MemoAnswer for SlotView {
    fn memo_answer(&self) -> Self {
        SlotView {
            chain: self.chain.iter().map(MemoAnswer::memo_answer).collect(),
            ..self.clone()
        }
    }

    fn is_memo_answer_to(&self, before: &Self) -> bool {
        let SlotView {
            slot,
            key,
            value,
            revision,
            chain,
            error,
        } = self;
        *slot == before.slot
            && *key == before.key
            && *value == before.value
            && *revision == before.revision
            && *error == before.error
            && chain.len() == before.chain.len()
            && chain
                .iter()
                .zip(&before.chain)
                .all(|(now, before)| now.is_memo_answer_to(before))
    }
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
        let changed = changed_positions(before, now);
        Positions::sending(before, now, changed, false, |i| now[i].clone())
    }
}

impl<T> Positions<T> {
    /// The positions `changed` of `now` as a patch on `before`, each sent as `item` makes it
    /// (`None` when it changes nothing: no item sent, the same length, and no memo answers).
    fn sending<S>(
        before: Option<&[S]>,
        now: &[S],
        changed: Vec<usize>,
        memoized: bool,
        item: impl Fn(usize) -> T,
    ) -> Option<Positions<T>> {
        if !memoized && changed.is_empty() && before.is_some_and(|b| b.len() == now.len()) {
            return None;
        }
        let changed = changed
            .into_iter()
            .map(|i| At {
                index: u32::try_from(i).unwrap_or(u32::MAX),
                item: item(i),
            })
            .collect();
        let count = u32::try_from(now.len()).unwrap_or(u32::MAX);
        Some(Positions {
            count,
            changed,
            memoized,
        })
    }

    /// A list of `count` items, every one the item held at its position.
    fn unchanged(count: usize) -> Positions<T> {
        Positions {
            count: u32::try_from(count).unwrap_or(u32::MAX),
            changed: Vec::new(),
            memoized: false,
        }
    }
}

impl<S> Positions<S> {
    /// The list after this patch on `held`, as the window merges it (`mergePositions` in
    /// `ui/src/lib/patch.ts`): `count` long, every position the patch does not send keeping the
    /// item held there (as `memo_answer` makes it when the patch says `memoized`), each item
    /// sent made by `item` from it and the item held at its position. `None` when the patch was
    /// not made against `held`: a position left empty, or `memoized` with no `memo_answer`.
    fn merge_into<T: Clone>(
        &self,
        held: &[T],
        memo_answer: Option<fn(&T) -> T>,
        item: impl Fn(&S, Option<&T>) -> Option<T>,
    ) -> Option<Vec<T>> {
        let answer = match (self.memoized, memo_answer) {
            (true, None) => return None,
            (true, answer) => answer,
            (false, _) => None,
        };
        let count = self.count as usize;
        let mut list: Vec<Option<T>> = held
            .iter()
            .take(count)
            .map(|kept| Some(answer.map_or_else(|| kept.clone(), |answer| answer(kept))))
            .collect();
        list.resize_with(count, || None);
        for at in &self.changed {
            let slot = list.get_mut(at.index as usize)?;
            *slot = Some(item(&at.item, held.get(at.index as usize))?);
        }
        list.into_iter().collect()
    }
}

impl<T: Clone> Positions<T> {
    /// The list after this patch on `held` ([`Positions::merge_into`]), for a list none of
    /// whose items is ever a memo answer (the plugins, the segment rows).
    pub fn apply_to(&self, held: &[T]) -> Option<Vec<T>> {
        self.merge_into(held, None, |item, _| Some(item.clone()))
    }
}

impl<T: Clone + MemoAnswer> Positions<T> {
    /// The list after this patch on `held` ([`Positions::merge_into`]), for a list whose items
    /// may be memo answers (the calls: `mergePositions` with `memoAnswer`).
    pub fn apply_answers_to(&self, held: &[T]) -> Option<Vec<T>> {
        self.merge_into(held, Some(T::memo_answer), |item, _| Some(item.clone()))
    }
}

impl Positions<SlotViewPatch> {
    /// The slot views after this patch on `held`, as `mergeSlots` makes them: each view sent
    /// takes its chain from the chain of the view held at its position with the chain's patch.
    pub fn apply_to_views(&self, held: &[SlotView]) -> Option<Vec<SlotView>> {
        self.merge_into(held, Some(SlotView::memo_answer), |sent, held_view| {
            Some(SlotView {
                slot: sent.slot,
                key: sent.key.clone(),
                value: sent.value.clone(),
                revision: sent.revision.clone(),
                chain: sent
                    .chain
                    .apply_answers_to(held_view.map_or(&[][..], |v| &v.chain[..]))?,
                error: sent.error.clone(),
            })
        })
    }
}

/// The positions of `now` whose item is not equal to the one `before` holds there.
fn changed_positions<T: PartialEq>(before: Option<&[T]>, now: &[T]) -> Vec<usize> {
    (0..now.len())
        .filter(|&i| before.and_then(|b| b.get(i)) != Some(&now[i]))
        .collect()
}

/// The positions of `now` to send and whether to send them with the [`Positions::memoized`]
/// flag: with it when that sends fewer items, and then the items sent are those that are not
/// the held item answered from the memo.
fn memoizing_positions<T: PartialEq + MemoAnswer>(
    before: Option<&[T]>,
    now: &[T],
) -> (Vec<usize>, bool) {
    let changed = changed_positions(before, now);
    if let Some(before) = before.filter(|_| !changed.is_empty()) {
        let not_memo_answers: Vec<usize> = (0..now.len())
            .filter(|&i| !before.get(i).is_some_and(|b| now[i].is_memo_answer_to(b)))
            .collect();
        if not_memo_answers.len() < changed.len() {
            return (not_memo_answers, true);
        }
    }
    (changed, false)
}

impl<T: PartialEq + Clone + MemoAnswer> Positions<T> {
    /// As [`Positions::of`], with the [`Positions::memoized`] flag when it sends fewer items
    /// ([`memoizing_positions`]). The positions are chosen first; only the items sent are copied.
    fn of_memoizing(before: Option<&[T]>, now: &[T]) -> Option<Positions<T>> {
        let (changed, memoized) = memoizing_positions(before, now);
        Positions::sending(before, now, changed, memoized, |i| now[i].clone())
    }
}

/// A slot view as a patch sends it: the view's fields, and its chain as a patch on the chain of
/// the view the window holds at the same position (every call of it when the window holds no
/// view there). A slot's chain holds every provider of the slot, so a view sent with its whole
/// chain made a save's patch grow with the folder (≈ 7 KB for the one call that ran again in a
/// 40-provider chain at 1 000 generated plugins).
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct SlotViewPatch {
    pub slot: SlotId,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    #[specta(type = crate::wire::common::JsonShape)]
    pub value: JsonValue,
    pub revision: String,
    pub chain: Positions<CallRecord>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<RunError>,
}

impl SlotViewPatch {
    /// `now` as a patch on `held`, the view the window holds at its position.
    fn of(held: Option<&SlotView>, now: &SlotView) -> SlotViewPatch {
        let SlotView {
            slot,
            key,
            value,
            revision,
            chain,
            error,
        } = now;
        SlotViewPatch {
            slot: *slot,
            key: key.clone(),
            value: value.clone(),
            revision: revision.clone(),
            chain: Positions::of_memoizing(held.map(|h| &h.chain[..]), chain)
                .unwrap_or_else(|| Positions::unchanged(chain.len())),
            error: error.clone(),
        }
    }

    /// The slot views of `now` that changed, as [`Positions::of_memoizing`] chooses them, each
    /// with only the calls of its chain that changed.
    fn positions(before: Option<&[SlotView]>, now: &[SlotView]) -> Option<Positions<Self>> {
        let (changed, memoized) = memoizing_positions(before, now);
        Positions::sending(before, now, changed, memoized, |i| {
            SlotViewPatch::of(before.and_then(|b| b.get(i)), &now[i])
        })
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
    pub plugins: Option<Positions<Shared<PluginView>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolution: Option<Resolution>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preview: Option<PreviewPatch>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runtime_note: Option<Option<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compaction: Option<CompactionView>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turns: Option<Turns>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branches: Option<Vec<BranchView>>,
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
    /// The prompt as a change to the one held ([`JsonChange`]): its system blocks and request
    /// bodies hold every segment's text, so a save that changes one segment sends the splice.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt: Option<JsonChange>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub segments: Option<Positions<SegmentRow>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache: Option<CacheReport>,
    /// The counts as a change to the ones held: a segment's new text changes a few of them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub counts: Option<JsonChange>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub world_context: Option<WorldContextView>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slots: Option<Positions<SlotViewPatch>>,
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

/// `now` as a change to the part the window holds (the whole part without one), `None` when it
/// is the same.
fn json_change<T: Serialize + PartialEq>(before: Option<&T>, now: &T) -> Option<JsonChange> {
    if before == Some(now) {
        return None;
    }
    // Cannot fail: the wire's types serialize to JSON objects with string keys only.
    let json = |part: &T| serde_json::to_value(part).unwrap_or_default();
    match before {
        Some(held) => JsonChange::of(&json(held), &json(now)),
        None => Some(JsonChange::Value(json(now).into())),
    }
}

impl PreviewPatch {
    /// The parts of `now` not equal to those of `before` (every part without `before`); `None`
    /// when nothing changed.
    fn of(before: Option<&Preview>, now: &Preview) -> Option<PreviewPatch> {
        let patch = PreviewPatch {
            session: part(before.map(|b| &b.session), &now.session),
            runtime: part(before.map(|b| &b.runtime), &now.runtime),
            turn_id: part(before.map(|b| &b.turn_id), &now.turn_id),
            prompt: json_change(before.map(|b| &b.prompt), &now.prompt),
            segments: Positions::of(before.map(|b| &b.segments[..]), &now.segments),
            cache: part(before.map(|b| &b.cache), &now.cache),
            counts: json_change(before.map(|b| &b.counts), &now.counts),
            world_context: part(before.map(|b| &b.world_context), &now.world_context),
            slots: SlotViewPatch::positions(before.map(|b| &b.slots[..]), &now.slots),
            image_flow: part(before.map(|b| &b.image_flow), &now.image_flow),
            history_rewrites: part(before.map(|b| &b.history_rewrites), &now.history_rewrites),
            calls: Positions::of_memoizing(before.map(|b| &b.calls[..]), &now.calls),
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
/// every snapshot and patch sent, and the plugin views the next snapshot shares where they did
/// not change.
#[derive(Default)]
pub struct WireState {
    sent: Option<Snapshot>,
    version: u32,
    views: super::snapshot::PluginViews,
}

impl WireState {
    /// The whole snapshot of a studio just opened: no view of the folder before is kept.
    pub fn opened(&mut self, studio: &crate::live::LiveStudio) -> Snapshot {
        self.views.forget();
        self.full_of(studio)
    }

    /// The whole snapshot of `studio` (see [`WireState::full`]), sharing the views kept.
    pub fn full_of(&mut self, studio: &crate::live::LiveStudio) -> Snapshot {
        let snapshot = studio.snapshot_sharing(&self.views);
        self.full(snapshot)
    }

    /// What changed in `studio` since the last snapshot or patch (see [`WireState::patch`]).
    pub fn patch_of(&mut self, studio: &crate::live::LiveStudio) -> SnapshotPatch {
        let snapshot = studio.snapshot_sharing(&self.views);
        self.patch(snapshot)
    }

    /// The whole snapshot (on open, or when the UI asks for it), remembered as sent.
    pub fn full(&mut self, mut snapshot: Snapshot) -> Snapshot {
        self.version = self.version.wrapping_add(1);
        snapshot.version = self.version;
        self.sent = Some(snapshot.clone());
        snapshot
    }

    /// The version of the last snapshot or patch made (0 before any).
    pub fn version(&self) -> u32 {
        self.version
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
            runtime_note: part(before.map(|b| &b.runtime_note), &now.runtime_note),
            compaction: part(before.map(|b| &b.compaction), &now.compaction),
            turns: turns_changed.then(|| Turns {
                keep: u32::try_from(kept).unwrap_or(u32::MAX),
                append: now.turns[kept..].to_vec(),
            }),
            branches: part(before.map(|b| &b.branches), &now.branches),
            last_reload: part(before.map(|b| &b.last_reload), &now.last_reload),
            diagnostics: part(before.map(|b| &b.diagnostics), &now.diagnostics),
        };
        self.sent = Some(snapshot);
        patch
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::common::{CallOutcome, PointId, SlotId};

    fn ran(provider: &str, duration_ms: f64) -> CallRecord {
        CallRecord {
            point: PointId::UiSlot,
            plugin_id: "stage".into(),
            provider_id: provider.into(),
            slot: Some(SlotId::StageCast),
            order: 3,
            outcome: CallOutcome::Success,
            error_code: None,
            message: None,
            duration_ms,
            logs: vec!["[log] cast".into()],
            notes: Vec::new(),
            cached: false,
            ran_ms: None,
            not_cached: Some("its answer awaits a second identical call".into()),
        }
    }

    fn view(chain: Vec<CallRecord>) -> SlotView {
        SlotView {
            slot: SlotId::StageCast,
            key: None,
            value: serde_json::json!({"cast": []}).into(),
            revision: "r1".into(),
            chain,
            error: None,
        }
    }

    #[test]
    fn a_memo_answer_is_recognised_field_by_field_exactly_as_memo_answer_makes_it() {
        let before = ran("cast", 1.25);
        let answer = before.memo_answer();
        assert!(answer.cached && answer.duration_ms == 0.0 && answer.not_cached.is_none());
        assert_eq!(
            answer.ran_ms,
            Some(1.25),
            "the run it reuses, as that record showed it"
        );
        assert!(answer.is_memo_answer_to(&before));
        assert!(
            answer.is_memo_answer_to(&answer),
            "an answer stays an answer"
        );
        assert!(
            !before.is_memo_answer_to(&before),
            "a call that ran is no answer"
        );
        let changes: [fn(&mut CallRecord); 8] = [
            |c| c.ran_ms = Some(1.5),
            |c| c.ran_ms = None,
            |c| c.logs.push("[log] more".into()),
            |c| c.order = 4,
            |c| c.provider_id = "other".into(),
            |c| c.outcome = CallOutcome::Error,
            |c| c.duration_ms = 0.5,
            |c| c.not_cached = Some("reads the clock".into()),
        ];
        for change in changes {
            let mut other = answer.clone();
            change(&mut other);
            assert!(!other.is_memo_answer_to(&before), "{other:?}");
        }
        let slot = view(vec![ran("cast", 1.0), ran("extras", 2.0)]);
        assert!(slot.memo_answer().is_memo_answer_to(&slot));
        let mut half = slot.clone();
        half.chain[0] = half.chain[0].memo_answer();
        assert!(!half.is_memo_answer_to(&slot), "one call of its chain ran");
        let mut revised = slot.memo_answer();
        revised.revision = "r2".into();
        assert!(!revised.is_memo_answer_to(&slot));
    }

    #[test]
    fn positions_say_memoized_only_when_it_sends_fewer_items_and_the_list_rebuilds_exactly() {
        let held: Vec<CallRecord> = (0..6).map(|i| ran(&format!("p{i}"), 1.0)).collect();
        // The first reload after opening: one call ran again, the others were answered.
        let mut now: Vec<CallRecord> = held.iter().map(MemoAnswer::memo_answer).collect();
        now[2] = ran("p2", 2.0);
        let patch = Positions::of_memoizing(Some(&held), &now).expect("changed");
        assert!(patch.memoized);
        let sent: Vec<u32> = patch.changed.iter().map(|at| at.index).collect();
        assert_eq!(sent, vec![2], "only the call that ran is sent");
        let mut rebuilt: Vec<CallRecord> = held.iter().map(MemoAnswer::memo_answer).collect();
        for at in &patch.changed {
            rebuilt[at.index as usize] = at.item.clone();
        }
        assert_eq!(rebuilt, now);
        // The next reload: the answers are held already, so the plain form is as small.
        let mut later = now.clone();
        later[2] = ran("p2", 3.0);
        let patch = Positions::of_memoizing(Some(&now), &later).expect("changed");
        assert!(!patch.memoized, "the plain form sends no more");
        assert_eq!(patch.changed.len(), 1);
        // Every call answered from the memo, none ran: the flag alone.
        let answered: Vec<CallRecord> = held.iter().map(MemoAnswer::memo_answer).collect();
        let patch = Positions::of_memoizing(Some(&held), &answered).expect("changed");
        assert!(patch.memoized && patch.changed.is_empty(), "{patch:?}");
        // Nothing changed: nothing is sent.
        assert_eq!(Positions::of_memoizing(Some(&now), &now), None);
        // A longer list: the new positions are always sent.
        let mut grown = now.iter().map(MemoAnswer::memo_answer).collect::<Vec<_>>();
        grown.push(ran("p6", 1.0));
        let patch = Positions::of_memoizing(Some(&held), &grown).expect("changed");
        assert!(patch.memoized);
        assert_eq!(patch.count, 7);
        assert!(patch.changed.iter().any(|at| at.index == 6));
    }

    #[test]
    fn a_slot_view_crosses_with_only_the_calls_of_its_chain_that_changed() {
        // A slot every plugin of a large folder provides, and one with a single provider.
        let long: Vec<CallRecord> = (0..40).map(|i| ran(&format!("p{i}"), 1.0)).collect();
        let held = vec![view(long), view(vec![ran("solo", 1.0)])];

        // One call of the long chain ran again: that call crosses, not the other 39.
        let mut now = held.clone();
        now[0].chain[7] = ran("p7", 2.0);
        let patch = SlotViewPatch::positions(Some(&held), &now).expect("changed");
        assert_eq!((patch.count, patch.memoized), (2, false));
        assert_eq!(patch.changed.len(), 1, "the other view is not sent");
        let sent = &patch.changed[0];
        assert_eq!(sent.index, 0);
        assert_eq!(sent.item.chain.count, 40);
        let calls: Vec<u32> = sent.item.chain.changed.iter().map(|at| at.index).collect();
        assert_eq!(calls, vec![7], "only the call that changed crosses");
        assert_eq!(patch.apply_to_views(&held), Some(now.clone()));

        // The view's own fields changed, its chain did not: the view crosses with no call.
        let mut revised = held.clone();
        revised[1].revision = "r2".into();
        let patch = SlotViewPatch::positions(Some(&held), &revised).expect("changed");
        assert_eq!(patch.changed.len(), 1);
        assert_eq!(patch.changed[0].item.chain, Positions::unchanged(1));
        assert_eq!(patch.apply_to_views(&held), Some(revised));

        // The first reload after opening: every chain answered from the memo but one call. The
        // list says `memoized`, and so does the chain of the view sent, with that one call.
        let mut answered: Vec<SlotView> = held.iter().map(MemoAnswer::memo_answer).collect();
        answered[0].chain[3] = ran("p3", 5.0);
        let patch = SlotViewPatch::positions(Some(&held), &answered).expect("changed");
        assert!(patch.memoized);
        assert_eq!(patch.changed.len(), 1);
        let chain = &patch.changed[0].item.chain;
        assert!(chain.memoized);
        assert_eq!(chain.changed.len(), 1);
        assert_eq!(chain.changed[0].index, 3);
        assert_eq!(patch.apply_to_views(&held), Some(answered));

        // A view the window does not hold crosses with its whole chain; so does every view of a
        // first patch.
        let mut grown = held.clone();
        grown.push(view(vec![ran("new", 1.0), ran("newer", 1.0)]));
        let patch = SlotViewPatch::positions(Some(&held), &grown).expect("grown");
        assert_eq!(patch.changed.len(), 1);
        assert_eq!(patch.changed[0].item.chain.changed.len(), 2);
        assert_eq!(patch.apply_to_views(&held), Some(grown));
        let patch = SlotViewPatch::positions(None, &now).expect("every view");
        assert_eq!(patch.changed[0].item.chain.changed.len(), 40);
        assert_eq!(patch.apply_to_views(&[]), Some(now));

        // Nothing changed: nothing is sent.
        assert_eq!(SlotViewPatch::positions(Some(&held), &held), None);
    }
}
