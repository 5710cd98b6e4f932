//! Played turns on the wire: what the Playtest panel lists (a `TurnRecord` per turn) and the
//! prompt a turn sent (`TurnPrompt`, asked for on demand).

use super::common::{JsonValue, RunError, SlotId, all};
use super::compaction::CompactionRun;
use super::preview::{Preview, Requests};
use crate::turn::record;
use crate::{live, models, playtest};
use covel_kernel::slot_host;
use serde::Serialize;
use specta::Type;

/// A tool call in a model's reply.
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    #[specta(type = crate::wire::common::JsonShape)]
    pub input: JsonValue,
}

/// The model's reply.
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct Reply {
    pub text: String,
    pub finish_reason: String,
    /// The usage the backend reported, as it sent it.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[specta(type = Option<crate::wire::common::JsonShape>)]
    pub usage: Option<JsonValue>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
}

impl From<&models::Reply> for Reply {
    fn from(r: &models::Reply) -> Self {
        Reply {
            text: r.text.clone(),
            finish_reason: r.finish_reason.clone(),
            usage: r.usage.as_ref().map(JsonValue::from),
            tool_calls: r
                .tool_calls
                .iter()
                .map(|c| ToolCall {
                    id: c.id.clone(),
                    name: c.name.clone(),
                    input: (&c.input).into(),
                })
                .collect(),
        }
    }
}

/// One step of a turn's loop (see `turn::record`).
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum LoopStep {
    Hook(HookStep),
    Model(ModelStep),
    Tool(ToolStep),
    Commit(CommitStep),
    Event(EventStep),
}

/// One hook handler's call.
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct HookStep {
    pub event: String,
    pub plugin_id: String,
    pub enforce: String,
    /// continue, not-matched, replaced, correction, rejected, abort-ignored or failed.
    pub outcome: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    pub changes: Vec<FieldChange>,
    pub duration_ms: f64,
    pub logs: Vec<String>,
    /// The studio's notes on the call (not the handler's output).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[specta(optional)]
    pub notes: Vec<String>,
}

/// A field a hook replaced.
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
pub struct FieldChange {
    pub field: String,
    #[specta(type = crate::wire::common::JsonShape)]
    pub before: JsonValue,
    #[specta(type = crate::wire::common::JsonShape)]
    pub after: JsonValue,
}

/// One story model call.
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct ModelStep {
    pub call: u32,
    #[specta(type = Vec<crate::wire::common::JsonShape>)]
    pub added: Vec<JsonValue>,
    pub tools: Vec<String>,
    pub replaced: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reply: Option<Reply>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub duration_ms: f64,
}

/// One tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct ToolStep {
    pub call_id: String,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plugin_id: Option<String>,
    #[specta(type = crate::wire::common::JsonShape)]
    pub input: JsonValue,
    /// ok, rejected, invalid-input, failed or not-found.
    pub outcome: String,
    pub result: String,
    #[specta(type = Vec<crate::wire::common::JsonShape>)]
    pub proposals: Vec<JsonValue>,
    #[specta(type = Vec<crate::wire::common::JsonShape>)]
    pub events: Vec<JsonValue>,
    pub duration_ms: f64,
    pub logs: Vec<String>,
    /// The studio's notes on the call (not the handler's output).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[specta(optional)]
    pub notes: Vec<String>,
}

/// One proposal committed or refused.
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct CommitStep {
    pub plugin_id: String,
    #[serde(rename = "type")]
    pub proposal_type: String,
    pub committed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    pub writes: Vec<String>,
    pub slots: Vec<String>,
}

/// One event and the slots it moved.
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct EventStep {
    pub topic: String,
    #[specta(type = crate::wire::common::JsonShape)]
    pub data: JsonValue,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plugin_id: Option<String>,
    pub accepted: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    pub slots: Vec<String>,
}

/// A kebab-case enum's serialized name.
fn kebab<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

impl From<&record::LoopStep> for LoopStep {
    fn from(step: &record::LoopStep) -> Self {
        match step {
            record::LoopStep::Hook(h) => LoopStep::Hook(HookStep {
                event: h.event.clone(),
                plugin_id: h.plugin_id.clone(),
                enforce: h.enforce.clone(),
                outcome: kebab(&h.outcome),
                detail: h.detail.clone(),
                changes: h
                    .changes
                    .iter()
                    .map(|c| FieldChange {
                        field: c.field.clone(),
                        before: (&c.before).into(),
                        after: (&c.after).into(),
                    })
                    .collect(),
                duration_ms: h.duration_ms,
                logs: h.logs.clone(),
                notes: h.notes.clone(),
            }),
            record::LoopStep::Model(m) => LoopStep::Model(ModelStep {
                call: m.call,
                added: all(&m.added),
                tools: m.tools.clone(),
                replaced: m.replaced.clone(),
                reply: m.reply.as_ref().map(Into::into),
                error: m.error.clone(),
                duration_ms: m.duration_ms,
            }),
            record::LoopStep::Tool(t) => LoopStep::Tool(ToolStep {
                call_id: t.call_id.clone(),
                name: t.name.clone(),
                plugin_id: t.plugin_id.clone(),
                input: (&t.input).into(),
                outcome: kebab(&t.outcome),
                result: t.result.clone(),
                proposals: all(&t.proposals),
                events: all(&t.events),
                duration_ms: t.duration_ms,
                logs: t.logs.clone(),
                notes: t.notes.clone(),
            }),
            record::LoopStep::Commit(c) => LoopStep::Commit(CommitStep {
                plugin_id: c.plugin_id.clone(),
                proposal_type: c.proposal_type.clone(),
                committed: c.committed,
                detail: c.detail.clone(),
                writes: c.writes.clone(),
                slots: c.slots.clone(),
            }),
            record::LoopStep::Event(e) => LoopStep::Event(EventStep {
                topic: e.topic.clone(),
                data: (&e.data).into(),
                plugin_id: e.plugin_id.clone(),
                accepted: e.accepted,
                detail: e.detail.clone(),
                slots: e.slots.clone(),
            }),
        }
    }
}

/// A slot value that changed during a turn.
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct SlotChange {
    pub slot: SlotId,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    #[specta(type = crate::wire::common::JsonShape)]
    pub value: JsonValue,
    pub revision: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preview_turn: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<RunError>,
}

impl From<&slot_host::SlotChange> for SlotChange {
    fn from(c: &slot_host::SlotChange) -> Self {
        SlotChange {
            slot: c.slot.into(),
            key: c.key.clone(),
            value: (&c.value).into(),
            revision: c.revision.clone(),
            preview_turn: c.preview_turn.clone(),
            error: c.error.as_ref().map(Into::into),
        }
    }
}

/// One played turn, as the Playtest panel lists it (its prompt is asked for separately).
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct TurnRecord {
    pub turn_id: String,
    pub player_message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reply: Option<Reply>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The compaction run after the turn.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compaction: Option<CompactionRun>,
    #[specta(type = Vec<crate::wire::common::JsonShape>)]
    pub events: Vec<JsonValue>,
    pub slot_changes: Vec<SlotChange>,
    /// The turn's loop: hooks, model calls, tool calls, events and commits, in order.
    pub steps: Vec<LoopStep>,
    /// Forms the turn's tools asked the player to fill.
    #[specta(type = Vec<crate::wire::common::JsonShape>)]
    pub forms: Vec<JsonValue>,
    /// What the prompt said besides the history, as sent: what turns of two branches are
    /// compared on.
    pub sent: Vec<SentPart>,
}

/// One part of a played turn's prompt as sent (a segment's text, the player's input, a
/// summary).
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct SentPart {
    pub key: String,
    pub text: String,
}

impl From<&playtest::TurnRecord> for TurnRecord {
    fn from(t: &playtest::TurnRecord) -> Self {
        TurnRecord {
            turn_id: t.turn_id.clone(),
            player_message: t.player_message.clone(),
            reply: t.reply.as_ref().map(Into::into),
            error: t.error.clone(),
            compaction: t.compaction.as_ref().map(Into::into),
            events: all(&t.events),
            slot_changes: t.slot_changes.iter().map(Into::into).collect(),
            steps: t.steps.iter().map(Into::into).collect(),
            forms: all(&t.forms),
            sent: t
                .sent
                .iter()
                .map(|p| SentPart {
                    key: p.key.to_string(),
                    text: p.text.to_string(),
                })
                .collect(),
        }
    }
}

/// Where a branch of the playtest started.
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct ForkPoint {
    pub branch: String,
    /// The turn it continues after; absent for a replay (it starts before the first turn).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after_turn: Option<String>,
}

/// One branch of the playtest, as the Playtest panel lists them side by side.
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct BranchView {
    pub id: String,
    /// `main`, `from turn-2 of main`, `replay of main`.
    pub label: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<ForkPoint>,
    /// Whether it is the branch played (its turns are the snapshot's `turns`).
    pub active: bool,
    /// A parked branch's turns (empty for the active branch: they are the snapshot's `turns`).
    pub turns: Vec<TurnRecord>,
}

impl BranchView {
    /// The studio's branches, in creation order.
    pub fn all(branches: &crate::branches::Branches) -> Vec<BranchView> {
        let active = &branches.active().id;
        branches
            .list()
            .iter()
            .map(|b| BranchView {
                id: b.id.clone(),
                label: b.label.clone(),
                forked_from: b.forked_from.as_ref().map(|f| ForkPoint {
                    branch: f.branch.clone(),
                    after_turn: f.after_turn.clone(),
                }),
                active: &b.id == active,
                turns: branches
                    .parked(&b.id)
                    .map(|p| p.turns.iter().map(Into::into).collect())
                    .unwrap_or_default(),
            })
            .collect()
    }
}

/// A played turn's prompt; `withNewerPlugins`: recomputed after a plugin reload, it may differ
/// from what was sent.
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct TurnPrompt {
    pub preview: Preview,
    pub with_newer_plugins: bool,
    /// The request bodies the turn sent (or, recomputed, would send).
    pub requests: Requests,
}

impl TurnPrompt {
    /// A played turn's prompt with the counts the studio's counter gives it.
    pub fn of(p: &live::TurnPrompt, studio: &live::LiveStudio) -> Self {
        TurnPrompt {
            preview: super::preview::Preview::of(&p.preview, studio.prompt_counts(&p.preview)),
            with_newer_plugins: p.with_newer_plugins,
            requests: (&p.preview.prompt).into(),
        }
    }
}
