//! Reloads on the wire: what a reload did to each plugin, what changed in the preview
//! (segments, slots, world context, cache boundaries), its diagnostics and timings.

use super::common::{Diagnostic, JsonValue, Number, all};
use super::preview::{Placement, SortKey};
use crate::{diff, live, workspace};
use serde::Serialize;
use specta::Type;
use std::collections::BTreeMap;

/// What reloading one plugin folder did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Type)]
#[serde(rename_all = "kebab-case")]
pub enum PluginReload {
    Added,
    Replaced,
    Removed,
    KeptLastGood,
    Failed,
    Unchanged,
}

impl From<workspace::PluginReload> for PluginReload {
    fn from(r: workspace::PluginReload) -> Self {
        use workspace::PluginReload as K;
        match r {
            K::Added => PluginReload::Added,
            K::Replaced => PluginReload::Replaced,
            K::Removed => PluginReload::Removed,
            K::KeptLastGood => PluginReload::KeptLastGood,
            K::Failed => PluginReload::Failed,
            K::Unchanged => PluginReload::Unchanged,
        }
    }
}

/// How a segment changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Type)]
#[serde(rename_all = "kebab-case")]
pub enum SegmentChangeKind {
    Added,
    Removed,
    Moved,
    Changed,
}

/// Where a segment was, before or after.
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct SegmentState {
    #[specta(type = Number)]
    pub index: usize,
    pub placement: Placement,
    pub sort_key: SortKey,
    pub included: bool,
}

impl From<&diff::SegmentState> for SegmentState {
    fn from(s: &diff::SegmentState) -> Self {
        SegmentState {
            index: s.index,
            placement: s.placement.into(),
            sort_key: (&s.sort_key).into(),
            included: s.included,
        }
    }
}

/// A segment that changed.
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
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

impl From<&diff::SegmentChange> for SegmentChange {
    fn from(c: &diff::SegmentChange) -> Self {
        SegmentChange {
            kind: match c.kind {
                diff::SegmentChangeKind::Added => SegmentChangeKind::Added,
                diff::SegmentChangeKind::Removed => SegmentChangeKind::Removed,
                diff::SegmentChangeKind::Moved => SegmentChangeKind::Moved,
                diff::SegmentChangeKind::Changed => SegmentChangeKind::Changed,
            },
            plugin: c.plugin.clone(),
            id: c.id.clone(),
            before: c.before.as_ref().map(Into::into),
            after: c.after.as_ref().map(Into::into),
        }
    }
}

/// A slot value that changed.
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct SlotDiff {
    pub slot: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    #[specta(type = crate::wire::common::JsonShape)]
    pub before: JsonValue,
    #[specta(type = crate::wire::common::JsonShape)]
    pub after: JsonValue,
    pub plugins: Vec<String>,
}

/// A cache boundary that moved.
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct BoundaryDiff {
    #[specta(type = Number)]
    pub index: usize,
    #[specta(type = Number)]
    pub before_tokens: u64,
    #[specta(type = Number)]
    pub after_tokens: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plugin: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub segment: Option<String>,
}

/// The world context before and after.
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct WorldDiff {
    #[specta(type = crate::wire::common::JsonShape)]
    pub before: JsonValue,
    #[specta(type = crate::wire::common::JsonShape)]
    pub after: JsonValue,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plugin: Option<String>,
}

/// What a reload changed in the preview.
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct PreviewDiff {
    pub segments: Vec<SegmentChange>,
    pub slots: Vec<SlotDiff>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub world_context: Option<WorldDiff>,
    pub boundaries: Vec<BoundaryDiff>,
}

impl From<&diff::PreviewDiff> for PreviewDiff {
    fn from(d: &diff::PreviewDiff) -> Self {
        PreviewDiff {
            segments: all(&d.segments),
            slots: d
                .slots
                .iter()
                .map(|s| SlotDiff {
                    slot: s.slot.clone(),
                    key: s.key.clone(),
                    before: (&s.before).into(),
                    after: (&s.after).into(),
                    plugins: s.plugins.clone(),
                })
                .collect(),
            world_context: d.world_context.as_ref().map(|w| WorldDiff {
                before: (&w.before).into(),
                after: (&w.after).into(),
                plugin: w.plugin.clone(),
            }),
            boundaries: d
                .boundaries
                .iter()
                .map(|b| BoundaryDiff {
                    index: b.index,
                    before_tokens: b.before_tokens,
                    after_tokens: b.after_tokens,
                    plugin: b.plugin.clone(),
                    segment: b.segment.clone(),
                })
                .collect(),
        }
    }
}

/// How long a reload took, in milliseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct ReloadTimings {
    #[specta(type = Number)]
    pub reload_ms: f64,
    #[specta(type = Number)]
    pub after_debounce_ms: f64,
    #[specta(type = Number)]
    pub load_ms: f64,
    #[specta(type = Number)]
    pub resolve_ms: f64,
    #[specta(type = Number)]
    pub preview_ms: f64,
}

/// One reload: the paths that changed, what happened to each plugin, what changed.
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct ReloadEntry {
    pub paths: Vec<String>,
    pub plugins: BTreeMap<String, PluginReload>,
    pub session_reloaded: bool,
    pub diff: PreviewDiff,
    pub diagnostics: Vec<Diagnostic>,
    pub timings: ReloadTimings,
}

impl From<&live::ReloadEntry> for ReloadEntry {
    fn from(e: &live::ReloadEntry) -> Self {
        ReloadEntry {
            paths: e.paths.clone(),
            plugins: e
                .plugins
                .iter()
                .map(|(k, v)| (k.clone(), (*v).into()))
                .collect(),
            session_reloaded: e.session_reloaded,
            diff: (&e.diff).into(),
            diagnostics: all(&e.diagnostics),
            timings: ReloadTimings {
                reload_ms: e.timings.reload_ms,
                after_debounce_ms: e.timings.after_debounce_ms,
                load_ms: e.timings.load_ms,
                resolve_ms: e.timings.resolve_ms,
                preview_ms: e.timings.preview_ms,
            },
        }
    }
}
