//! Played turns on the wire: what the Playtest panel lists (a `TurnRecord` per turn) and the
//! prompt a turn sent (`TurnPrompt`, asked for on demand).

use super::common::{JsonValue, RunError, SlotId, all};
use super::compaction::CompactionRun;
use super::preview::{Preview, Requests};
use crate::{live, models, playtest};
use covel_kernel::slot_host;
use serde::Serialize;
use specta::Type;

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
}

impl From<&models::Reply> for Reply {
    fn from(r: &models::Reply) -> Self {
        Reply {
            text: r.text.clone(),
            finish_reason: r.finish_reason.clone(),
            usage: r.usage.as_ref().map(JsonValue::from),
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
        }
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

impl From<&live::TurnPrompt> for TurnPrompt {
    fn from(p: &live::TurnPrompt) -> Self {
        TurnPrompt {
            preview: (&p.preview).into(),
            with_newer_plugins: p.with_newer_plugins,
            requests: (&p.preview.prompt).into(),
        }
    }
}
