//! Reload diffs: what a change did to the preview, for the author — segments added, removed,
//! moved (with the sort key that moved them) or changed; slot values; the world context; cache
//! boundaries whose prefix changed. Each change names the plugin that caused it.

use crate::preview::Preview;
use covel_kernel::prompt::{Placement, RowKey as Key, SegmentKey, SegmentRow, row_keys};
use foldhash::{HashMap, HashMapExt};
use serde::Serialize;
use serde_json::Value;

/// How a segment changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SegmentChangeKind {
    Added,
    Removed,
    Moved,
    Changed,
}

/// One segment change.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SegmentChange {
    pub kind: SegmentChangeKind,
    pub plugin: String,
    pub id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub before: Option<SegmentState>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after: Option<SegmentState>,
}

/// Where a segment was.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SegmentState {
    pub index: usize,
    pub placement: Placement,
    pub sort_key: SegmentKey,
    pub included: bool,
}

/// A slot value that changed.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SlotDiff {
    pub slot: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    pub before: Value,
    pub after: Value,
    /// Plugins whose providers built the value.
    pub plugins: Vec<String>,
}

/// A cache boundary whose prefix changed.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BoundaryDiff {
    pub index: usize,
    pub before_tokens: u64,
    pub after_tokens: u64,
    /// The plugin of the first segment that differs, when a segment did it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plugin: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub segment: Option<String>,
}

/// The world context before and after.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorldDiff {
    pub before: Value,
    pub after: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plugin: Option<String>,
}

/// Everything a reload changed.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PreviewDiff {
    pub segments: Vec<SegmentChange>,
    pub slots: Vec<SlotDiff>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub world_context: Option<WorldDiff>,
    pub boundaries: Vec<BoundaryDiff>,
}

impl PreviewDiff {
    pub fn is_empty(&self) -> bool {
        self.segments.is_empty()
            && self.slots.is_empty()
            && self.world_context.is_none()
            && self.boundaries.is_empty()
    }

    /// Plugins named by any change.
    pub fn plugins(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .segments
            .iter()
            .map(|s| s.plugin.clone())
            .chain(self.slots.iter().flat_map(|s| s.plugins.clone()))
            .chain(self.world_context.iter().filter_map(|w| w.plugin.clone()))
            .chain(self.boundaries.iter().filter_map(|b| b.plugin.clone()))
            .collect();
        out.sort();
        out.dedup();
        out
    }
}

/// Compares two previews.
pub fn diff(before: &Preview, after: &Preview) -> PreviewDiff {
    let segments = segment_changes(before, after);

    let mut slots = Vec::new();
    for view in &after.slots {
        let old = before
            .slots
            .iter()
            .find(|o| o.slot == view.slot && o.key == view.key);
        if old.map(|o| &o.revision) != Some(&view.revision) {
            let mut plugins: Vec<String> =
                view.chain.iter().map(|c| c.plugin_id.to_string()).collect();
            plugins.dedup();
            slots.push(SlotDiff {
                slot: view.slot.as_str().to_string(),
                key: view.key.clone(),
                before: old.map(|o| o.value.clone()).unwrap_or(Value::Null),
                after: view.value.clone(),
                plugins,
            });
        }
    }

    let world_context =
        (before.world_context.snapshot != after.world_context.snapshot).then(|| WorldDiff {
            before: before.world_context.snapshot.clone(),
            after: after.world_context.snapshot.clone(),
            plugin: after
                .world_context
                .provided_by
                .clone()
                .or(before.world_context.provided_by.clone()),
        });

    let mut boundaries = Vec::new();
    fn blocks(p: &Preview) -> &[covel_kernel::prompt::Block] {
        &p.prompt.system.blocks
    }
    let prefix = |p: &Preview, n: usize| covel_kernel::prompt::prefix_before_boundary(blocks(p), n);
    let tokens = |text: &Option<String>| {
        text.as_deref()
            .map(covel_kernel::sdk::estimate_tokens)
            .unwrap_or(0)
    };
    let count = covel_kernel::prompt::boundary_count(&before.prompt.system.blocks).max(
        covel_kernel::prompt::boundary_count(&after.prompt.system.blocks),
    );
    for index in 0..count {
        if !covel_kernel::prompt::same_prefix_before_boundary(blocks(before), blocks(after), index)
        {
            let (b, a) = (prefix(before, index), prefix(after, index));
            let culprit = segments.iter().find(|s| {
                let key = covel_kernel::prompt::segment_key(&s.plugin, &s.id);
                before
                    .prompt
                    .system
                    .blocks
                    .iter()
                    .chain(after.prompt.system.blocks.iter())
                    .any(|blk| blk.segments.contains(&key))
            });
            boundaries.push(BoundaryDiff {
                index,
                before_tokens: tokens(&b),
                after_tokens: tokens(&a),
                plugin: culprit.map(|c| c.plugin.clone()),
                segment: culprit.map(|c| covel_kernel::prompt::segment_key(&c.plugin, &c.id)),
            });
        }
    }
    PreviewDiff {
        segments,
        slots,
        world_context,
        boundaries,
    }
}

/// The segment changes from `before` to `after`: in one pass when the rows stayed in place
/// ([`in_place_changes`], what a save usually does), else by indexing every row's key.
fn segment_changes(before: &Preview, after: &Preview) -> Vec<SegmentChange> {
    in_place_changes(before, after).unwrap_or_else(|| indexed_changes(before, after))
}

/// Where a row was or is, as a change reports it.
fn state((index, s): (usize, &SegmentRow)) -> SegmentState {
    SegmentState {
        index,
        placement: s.placement,
        sort_key: s.sort_key.clone(),
        included: s.included,
    }
}

/// The changes when both previews hold the same rows in the same places (row by row the same
/// plugin, id, placement, sort key and inclusion; only contents may differ): nothing was
/// added, removed or moved, so a changed content is the only change. That is exactly what
/// [`indexed_changes`] finds for such previews (a test compares them), without building a key
/// index of 1 000 rows per save. `None` when the rows differ otherwise.
fn in_place_changes(before: &Preview, after: &Preview) -> Option<Vec<SegmentChange>> {
    let in_place = |(b, a): (&SegmentRow, &SegmentRow)| {
        b.plugin == a.plugin
            && b.id == a.id
            && b.placement == a.placement
            && b.sort_key == a.sort_key
            && b.included == a.included
    };
    let rows = || before.segments.iter().zip(&after.segments);
    if before.segments.len() != after.segments.len() || !rows().all(in_place) {
        return None;
    }
    Some(
        rows()
            .enumerate()
            .filter(|(_, (b, a))| b.content != a.content)
            .map(|(index, (b, a))| SegmentChange {
                kind: SegmentChangeKind::Changed,
                plugin: a.plugin.to_string(),
                id: a.id.to_string(),
                before: Some(state((index, b))),
                after: Some(state((index, a))),
            })
            .collect(),
    )
}

/// The changes of any two previews, each row found by its key: added, removed, moved (its
/// placement, sort key or inclusion changed, or the rows ahead of it in its placement) or
/// changed.
fn indexed_changes(before: &Preview, after: &Preview) -> Vec<SegmentChange> {
    // Indexed once, so a reload's diff costs the same per segment at 1 000 segments as at 10.
    let (keys_before, keys_after) = (row_keys(&before.segments), row_keys(&after.segments));
    let (index_before, index_after) = (index_of(&keys_before), index_of(&keys_after));
    let order = RelativeOrder::new(
        (before, &keys_before, &index_before),
        (after, &keys_after, &index_after),
    );
    // Rows are compared in place; a state is copied out only for a change that is reported.
    fn row<'p>(
        p: &'p Preview,
        index: &HashMap<Key<'_>, usize>,
        key: Key<'_>,
    ) -> Option<(usize, &'p SegmentRow)> {
        index.get(&key).map(|&i| (i, &p.segments[i]))
    }
    let mut segments = Vec::new();
    for (seg, &key) in after.segments.iter().zip(&keys_after) {
        let now = row(after, &index_after, key);
        let was = row(before, &index_before, key);
        let kind = match (was, now) {
            (None, _) => Some(SegmentChangeKind::Added),
            (Some((_, b)), Some((_, a))) => {
                let moved = b.placement != a.placement
                    || b.sort_key != a.sort_key
                    || b.included != a.included
                    || order.changed(key);
                if b.content != a.content {
                    Some(SegmentChangeKind::Changed)
                } else if moved {
                    Some(SegmentChangeKind::Moved)
                } else {
                    None
                }
            }
            (Some(_), None) => None,
        };
        if let Some(kind) = kind {
            segments.push(SegmentChange {
                kind,
                plugin: seg.plugin.to_string(),
                id: seg.id.to_string(),
                before: was.map(state),
                after: now.map(state),
            });
        }
    }
    for (seg, &key) in before.segments.iter().zip(&keys_before) {
        if !index_after.contains_key(&key) {
            segments.push(SegmentChange {
                kind: SegmentChangeKind::Removed,
                plugin: seg.plugin.to_string(),
                id: seg.id.to_string(),
                before: row(before, &index_before, key).map(state),
                after: None,
            });
        }
    }
    segments
}

/// Where each row's key is, in a preview.
fn index_of<'p>(keys: &[Key<'p>]) -> HashMap<Key<'p>, usize> {
    keys.iter().enumerate().map(|(i, k)| (*k, i)).collect()
}

/// Whether the included segments present in both previews that come before a segment in its
/// placement are the same before and after (a segment "moved" when they are not).
struct RelativeOrder<'a> {
    before: &'a Preview,
    after: &'a Preview,
    index_before: &'a HashMap<Key<'a>, usize>,
    index_after: &'a HashMap<Key<'a>, usize>,
    /// Per placement: the included segments present in both previews, in order.
    lanes_before: Vec<(Placement, Vec<Key<'a>>)>,
    lanes_after: Vec<(Placement, Vec<Key<'a>>)>,
    /// Per lane: each segment's first place in it (so a segment's lane prefix is found at once).
    places_before: Vec<HashMap<Key<'a>, usize>>,
    places_after: Vec<HashMap<Key<'a>, usize>>,
    /// Per placement: how many leading segments its lanes before and after have in common.
    common: Vec<(Placement, usize)>,
}

/// One preview given to [`RelativeOrder::new`]: the preview, its rows' keys, where each key is.
type Side<'a> = (&'a Preview, &'a [Key<'a>], &'a HashMap<Key<'a>, usize>);

/// A segment's prefix in its placement's lane: the lane and the prefix's length.
type Prefix = Option<(usize, usize)>;

impl<'a> RelativeOrder<'a> {
    /// Each side: the preview, its rows' keys and where each key is.
    fn new(
        (before, keys_before, index_before): Side<'a>,
        (after, keys_after, index_after): Side<'a>,
    ) -> Self {
        let lanes = |p: &'a Preview, keys: &[Key<'a>]| {
            let mut lanes: Vec<(Placement, Vec<Key<'a>>)> = Vec::new();
            for (s, &key) in p.segments.iter().zip(keys).filter(|(s, _)| s.included) {
                if !(index_before.contains_key(&key) && index_after.contains_key(&key)) {
                    continue;
                }
                match lanes
                    .iter_mut()
                    .find(|(placement, _)| *placement == s.placement)
                {
                    Some((_, lane)) => lane.push(key),
                    None => lanes.push((s.placement, vec![key])),
                }
            }
            lanes
        };
        let lanes_before = lanes(before, keys_before);
        let lanes_after = lanes(after, keys_after);
        let places = |lanes: &[(Placement, Vec<Key<'a>>)]| {
            lanes
                .iter()
                .map(|(_, lane)| {
                    let mut first = HashMap::with_capacity(lane.len());
                    for (i, key) in lane.iter().enumerate() {
                        first.entry(*key).or_insert(i);
                    }
                    first
                })
                .collect::<Vec<_>>()
        };
        let common = lanes_before
            .iter()
            .filter_map(|(placement, lane)| {
                let (_, other) = lanes_after.iter().find(|(p, _)| p == placement)?;
                let same = lane.iter().zip(other).take_while(|(a, b)| a == b).count();
                Some((*placement, same))
            })
            .collect();
        RelativeOrder {
            before,
            after,
            index_before,
            index_after,
            places_before: places(&lanes_before),
            places_after: places(&lanes_after),
            lanes_before,
            lanes_after,
            common,
        }
    }

    /// Where [`RelativeOrder::ahead`] ends, without walking the lane: `None` for no prefix.
    fn prefix(
        preview: &Preview,
        index: &HashMap<Key<'_>, usize>,
        lanes: &[(Placement, Vec<Key<'a>>)],
        places: &[HashMap<Key<'a>, usize>],
        key: Key<'_>,
    ) -> Prefix {
        let &i = index.get(&key)?;
        let placement = preview.segments[i].placement;
        let lane = lanes.iter().position(|(p, _)| *p == placement)?;
        let end = places[lane]
            .get(&key)
            .copied()
            .unwrap_or(lanes[lane].1.len());
        Some((lane, end))
    }

    /// The segments ahead of a key in its placement's lane: up to its first place in
    /// the lane, or the whole lane when it is not in it (not included).
    fn ahead<'l>(
        preview: &Preview,
        index: &HashMap<Key<'_>, usize>,
        lanes: &'l [(Placement, Vec<Key<'a>>)],
        key: Key<'_>,
    ) -> &'l [Key<'a>] {
        let Some(&i) = index.get(&key) else {
            return &[];
        };
        let placement = preview.segments[i].placement;
        let Some((_, lane)) = lanes.iter().find(|(p, _)| *p == placement) else {
            return &[];
        };
        let end = lane.iter().position(|k| *k == key).unwrap_or(lane.len());
        &lane[..end]
    }

    /// Whether the segments ahead of a key in its lane differ before and after. Two
    /// prefixes of the same placement's lanes are equal when they have the same length within
    /// the lanes' common start; anything else is compared segment by segment.
    fn changed(&self, key: Key<'_>) -> bool {
        let before = Self::prefix(
            self.before,
            self.index_before,
            &self.lanes_before,
            &self.places_before,
            key,
        );
        let after = Self::prefix(
            self.after,
            self.index_after,
            &self.lanes_after,
            &self.places_after,
            key,
        );
        match (before, after) {
            (None | Some((_, 0)), None | Some((_, 0))) => false,
            (None, Some(_)) | (Some(_), None) => true,
            (Some((lb, eb)), Some((la, ea))) => {
                let placement = self.lanes_before[lb].0;
                if placement == self.lanes_after[la].0 {
                    let common = self
                        .common
                        .iter()
                        .find(|(p, _)| *p == placement)
                        .map_or(0, |(_, n)| *n);
                    !(eb == ea && eb <= common)
                } else {
                    Self::ahead(self.before, self.index_before, &self.lanes_before, key)
                        != Self::ahead(self.after, self.index_after, &self.lanes_after, key)
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{RuntimeTarget, Workspace};
    use covel_kernel::prompt::Placement;
    use std::path::Path;

    fn sample_preview() -> Preview {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../plugins-sample");
        let ws = Workspace::open(
            &root,
            Some(&root.join("demo.session.yaml")),
            &covel_js::Limits::default(),
        )
        .expect("the sample folder opens");
        ws.preview(&RuntimeTarget::Story)
    }

    /// Every way a save can change the rows, each diffed both ways: the one-pass path answers
    /// only when rows stayed in place, and then exactly as the indexed path does.
    #[test]
    fn rows_that_stayed_in_place_are_diffed_in_one_pass_with_the_indexed_diffs_answer() {
        let before = sample_preview();
        assert!(
            before.segments.len() >= 4,
            "the sample has segments to vary"
        );
        let other = |p: Placement| {
            if p == Placement::SystemStable {
                Placement::TurnContext
            } else {
                Placement::SystemStable
            }
        };
        type Edit = fn(&mut Vec<SegmentRow>, &dyn Fn(Placement) -> Placement);
        let variants: Vec<(&str, bool, Edit)> = vec![
            ("nothing", true, |_, _| {}),
            ("one content", true, |rows, _| {
                rows[1].content = format!("{} edited", rows[1].content).into()
            }),
            ("two contents", true, |rows, _| {
                rows[0].content = "".into();
                rows[3].content = "new".into();
            }),
            ("a placement", false, |rows, other| {
                rows[2].placement = other(rows[2].placement)
            }),
            ("an inclusion", false, |rows, _| {
                rows[1].included = !rows[1].included
            }),
            ("a sort key", false, |rows, _| {
                rows[0].sort_key = rows[3].sort_key.clone()
            }),
            ("two rows swapped", false, |rows, _| rows.swap(0, 2)),
            ("a row removed", false, |rows, _| {
                rows.remove(1);
            }),
            ("a row added", false, |rows, _| {
                let mut extra = rows[0].clone();
                extra.id = "extra".into();
                rows.push(extra);
            }),
            ("a row renamed", false, |rows, _| {
                rows[2].id = format!("{}-renamed", rows[2].id).into()
            }),
        ];
        for (what, in_place, edit) in variants {
            let mut after = before.clone();
            edit(&mut after.segments, &other);
            assert_eq!(
                in_place_changes(&before, &after).is_some(),
                in_place,
                "{what}: which path answers"
            );
            for (b, a) in [(&before, &after), (&after, &before)] {
                assert_eq!(
                    segment_changes(b, a),
                    indexed_changes(b, a),
                    "{what}: the same changes either way"
                );
            }
            if what == "one content" {
                let changes = segment_changes(&before, &after);
                assert_eq!(changes.len(), 1);
                assert_eq!(changes[0].kind, SegmentChangeKind::Changed);
                assert_eq!(*changes[0].id, *before.segments[1].id);
            }
        }
    }
}
