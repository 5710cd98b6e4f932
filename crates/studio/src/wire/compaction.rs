//! Compaction on the wire: the windows and budget, a run with its provider output and verdict,
//! and the Compaction panel.

use super::common::{CallRecord, JsonValue, Number, all};
use crate::compaction as studio;
use covel_kernel::compaction;
use serde::Serialize;
use specta::Type;

/// The model's context and input windows.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct Windows {
    pub context_window: u32,
    pub input_window: u32,
}

impl From<compaction::Windows> for Windows {
    fn from(w: compaction::Windows) -> Self {
        Windows {
            context_window: w.context_window,
            input_window: w.input_window,
        }
    }
}

/// What a compaction answer may hold.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct Budget {
    #[specta(type = Number)]
    pub max_tokens: u64,
    #[specta(type = Number)]
    pub max_segment_tokens: u64,
    pub max_segments: u32,
}

impl From<compaction::Budget> for Budget {
    fn from(b: compaction::Budget) -> Self {
        Budget {
            max_tokens: b.max_tokens,
            max_segment_tokens: b.max_segment_tokens,
            max_segments: b.max_segments,
        }
    }
}

/// One rule the verdict checked.
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
pub struct RuleCheck {
    pub rule: &'static str,
    pub ok: bool,
    pub detail: String,
}

/// Whether a compaction answer was accepted, rule by rule.
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct Verdict {
    pub nothing_to_compact: bool,
    pub accepted: bool,
    pub rules: Vec<RuleCheck>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deferred: Option<String>,
    pub total_segments: u32,
    #[specta(type = Number)]
    pub total_tokens: u64,
}

impl From<&compaction::Verdict> for Verdict {
    fn from(v: &compaction::Verdict) -> Self {
        Verdict {
            nothing_to_compact: v.nothing_to_compact,
            accepted: v.accepted,
            rules: v
                .rules
                .iter()
                .map(|r| RuleCheck {
                    rule: r.rule,
                    ok: r.ok,
                    detail: r.detail.clone(),
                })
                .collect(),
            deferred: v.deferred.clone(),
            total_segments: v.total_segments,
            total_tokens: v.total_tokens,
        }
    }
}

/// What an accepted answer changed.
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct Applied {
    #[specta(type = Vec<crate::wire::common::JsonShape>)]
    pub summaries: Vec<JsonValue>,
    #[specta(type = Vec<crate::wire::common::JsonShape>)]
    pub messages: Vec<JsonValue>,
    pub written: Vec<String>,
}

/// An event the compaction run recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
pub struct TraceEvent {
    pub topic: &'static str,
    #[specta(type = crate::wire::common::JsonShape)]
    pub payload: JsonValue,
}

/// One compaction run.
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct CompactionRun {
    pub windows: Windows,
    pub budget: Budget,
    #[specta(type = Number)]
    pub estimated_tokens: u64,
    #[specta(type = Number)]
    pub threshold_tokens: f64,
    pub triggered: bool,
    #[specta(type = crate::wire::common::JsonShape)]
    pub input: JsonValue,
    #[specta(type = crate::wire::common::JsonShape)]
    pub output: JsonValue,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provided_by: Option<String>,
    pub calls: Vec<CallRecord>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Verdict>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub applied: Option<Applied>,
    pub events: Vec<TraceEvent>,
    pub consecutive_failures: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_compacted_because: Option<String>,
}

impl From<&studio::CompactionRun> for CompactionRun {
    fn from(r: &studio::CompactionRun) -> Self {
        CompactionRun {
            windows: r.windows.into(),
            budget: r.budget.into(),
            estimated_tokens: r.estimated_tokens,
            threshold_tokens: r.threshold_tokens,
            triggered: r.triggered,
            input: (&r.input).into(),
            output: (&r.output).into(),
            provided_by: r.provided_by.clone(),
            calls: all(&r.calls),
            verdict: r.verdict.as_ref().map(Into::into),
            applied: r.applied.as_ref().map(|a| Applied {
                summaries: all(&a.summaries),
                messages: all(&a.messages),
                written: a.written.clone(),
            }),
            events: r
                .events
                .iter()
                .map(|e| TraceEvent {
                    topic: e.topic,
                    payload: (&e.payload).into(),
                })
                .collect(),
            consecutive_failures: r.consecutive_failures,
            not_compacted_because: r.not_compacted_because.clone(),
        }
    }
}

/// The Compaction panel: where the session stands against the threshold.
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct CompactionView {
    pub windows: Windows,
    pub budget: Budget,
    #[specta(type = Number)]
    pub estimated_tokens: u64,
    #[specta(type = Number)]
    pub threshold_tokens: f64,
    #[specta(type = Vec<crate::wire::common::JsonShape>)]
    pub summaries: Vec<JsonValue>,
    pub consecutive_failures: u32,
    /// The last run during a playtest, with its provider output and verdict.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_run: Option<CompactionRun>,
}
