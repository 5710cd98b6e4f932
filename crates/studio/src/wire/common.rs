//! Wire types shared by every panel: diagnostics, contract ids, provider calls and run errors.

use covel_kernel::contract;
use covel_kernel::diagnostic;
use covel_kernel::runner;
use serde::Serialize;
use specta::Type;

/// Any JSON value. Fields of this type carry `#[specta(type = JsonShape)]`: specta's own
/// export of `serde_json::Value` holds 64-bit integers, which specta-typescript refuses.
pub type JsonValue = serde_json::Value;

/// The TypeScript shape of [`JsonValue`]: a recursive JSON type named `JsonValue`.
pub use shape::JsonValue as JsonShape;

mod shape {
    use serde::Serialize;
    use specta::Type;
    use std::collections::BTreeMap;

    /// Any JSON value (slot values, the world snapshot, request bodies, handler outputs).
    #[derive(Serialize, Type)]
    #[serde(untagged)]
    #[allow(dead_code)] // never built: it only describes `serde_json::Value` to specta
    pub enum JsonValue {
        Null,
        Bool(bool),
        Number(#[specta(type = super::Number)] f64),
        String(String),
        Array(Vec<JsonValue>),
        Object(BTreeMap<String, JsonValue>),
    }
}

/// A count, token number, index or duration: `u64`, `i64`, `usize` or `f64` in Rust, exported
/// as TypeScript's `number` (`#[specta(type = Number)]` on the field). specta refuses 64-bit
/// integers by default (they may exceed 2^53; counts here never do) and exports `f64` as
/// `number | null` (for NaN, which no view produces).
pub struct Number;

impl Type for Number {
    fn definition(types: &mut specta::Types) -> specta::datatype::DataType {
        <i32 as Type>::definition(types)
    }
}

/// A problem with a plugin, the session or a run: a stable code, the message and, where known,
/// the plugin, file, line and column.
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct Diagnostic {
    /// A stable code (ARCHITECTURE.md lists them).
    pub code: String,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plugin: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<u32>,
}

impl From<&diagnostic::Diagnostic> for Diagnostic {
    fn from(d: &diagnostic::Diagnostic) -> Self {
        Diagnostic {
            code: d.code.as_str().to_string(),
            message: d.message.clone(),
            plugin: d.plugin.clone(),
            file: d.file.as_ref().map(|f| f.display().to_string()),
            line: d.line,
            column: d.column,
        }
    }
}

/// Converts every item of a slice.
pub fn all<'a, T: 'a, W: From<&'a T>>(items: &'a [T]) -> Vec<W> {
    items.iter().map(W::from).collect()
}

/// An extension point of the kernel contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Type)]
pub enum PointId {
    #[serde(rename = "prompt.segment@1")]
    PromptSegment,
    #[serde(rename = "prompt.history-transform@1")]
    PromptHistoryTransform,
    #[serde(rename = "ui.slot@1")]
    UiSlot,
    #[serde(rename = "media.image-flow@1")]
    MediaImageFlow,
    #[serde(rename = "session.world-context@1")]
    SessionWorldContext,
    #[serde(rename = "history.compact@2")]
    HistoryCompact,
}

impl From<contract::PointId> for PointId {
    fn from(p: contract::PointId) -> Self {
        use contract::PointId as K;
        match p {
            K::PromptSegment => PointId::PromptSegment,
            K::PromptHistoryTransform => PointId::PromptHistoryTransform,
            K::UiSlot => PointId::UiSlot,
            K::MediaImageFlow => PointId::MediaImageFlow,
            K::SessionWorldContext => PointId::SessionWorldContext,
            K::HistoryCompact => PointId::HistoryCompact,
        }
    }
}

/// A UI slot of the kernel contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Type)]
pub enum SlotId {
    #[serde(rename = "stage.backdrop@1")]
    StageBackdrop,
    #[serde(rename = "stage.cast@1")]
    StageCast,
    #[serde(rename = "stage.choices@1")]
    StageChoices,
    #[serde(rename = "character.visual@1")]
    CharacterVisual,
    #[serde(rename = "session.summary@1")]
    SessionSummary,
    #[serde(rename = "stage.music@1")]
    StageMusic,
}

impl From<contract::SlotId> for SlotId {
    fn from(s: contract::SlotId) -> Self {
        use contract::SlotId as K;
        match s {
            K::StageBackdrop => SlotId::StageBackdrop,
            K::StageCast => SlotId::StageCast,
            K::StageChoices => SlotId::StageChoices,
            K::CharacterVisual => SlotId::CharacterVisual,
            K::SessionSummary => SlotId::SessionSummary,
            K::StageMusic => SlotId::StageMusic,
        }
    }
}

/// How one provider call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Type)]
#[serde(rename_all = "kebab-case")]
pub enum CallOutcome {
    Success,
    Timeout,
    Error,
    InvalidOutput,
    OutOfMemory,
    Unavailable,
}

impl From<runner::Outcome> for CallOutcome {
    fn from(o: runner::Outcome) -> Self {
        use runner::Outcome as K;
        match o {
            K::Success => CallOutcome::Success,
            K::Timeout => CallOutcome::Timeout,
            K::Error => CallOutcome::Error,
            K::InvalidOutput => CallOutcome::InvalidOutput,
            K::OutOfMemory => CallOutcome::OutOfMemory,
            K::Unavailable => CallOutcome::Unavailable,
        }
    }
}

/// One provider call: who ran, in which order, how it ended, what it logged.
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct CallRecord {
    pub point: PointId,
    pub plugin_id: String,
    pub provider_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slot: Option<SlotId>,
    #[specta(type = Number)]
    pub order: i64,
    pub outcome: CallOutcome,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_code: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[specta(type = Number)]
    pub duration_ms: f64,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[specta(optional)]
    pub logs: Vec<String>,
    /// Answered from the engine's memo: nothing the provider can see changed.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    #[specta(optional)]
    pub cached: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_cached: Option<String>,
}

/// A call's duration at the precision the UI shows it (0.01 ms).
pub fn display_ms(ms: f64) -> f64 {
    (ms * 100.0).round() / 100.0
}

/// The duration the window shows for a call: a memo answer ran nothing (the record says
/// `cached`), so it shows 0 instead of its lookup time, which varies by a few microseconds from
/// reload to reload and would resend its record, and every slot view whose chain holds it, each
/// time (the calls and slot views cross by position, `wire::patch::Positions`). The CLI's JSON
/// keeps the lookup time.
fn shown_ms(c: &runner::CallRecord) -> f64 {
    if c.cached {
        0.0
    } else {
        display_ms(c.duration_ms)
    }
}

impl From<&runner::CallRecord> for CallRecord {
    fn from(c: &runner::CallRecord) -> Self {
        CallRecord {
            point: c.point.into(),
            plugin_id: c.plugin_id.clone(),
            provider_id: c.provider_id.clone(),
            slot: c.slot.map(Into::into),
            order: c.order,
            outcome: c.outcome.into(),
            error_code: c.error_code.clone(),
            message: c.message.clone(),
            duration_ms: shown_ms(c),
            logs: c.logs.clone(),
            cached: c.cached,
            not_cached: c.not_cached.clone(),
        }
    }
}

/// A run that failed as a whole.
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
#[serde(tag = "code", rename_all = "kebab-case")]
pub enum RunError {
    InvalidInput {
        detail: String,
    },
    ConflictingProviders {
        point: String,
        providers: Vec<String>,
    },
    FailTurn {
        point: String,
        provider: String,
        message: String,
    },
    PipelineContract {
        provider: String,
        detail: String,
    },
}

impl From<&runner::RunError> for RunError {
    fn from(e: &runner::RunError) -> Self {
        use runner::RunError as K;
        match e.clone() {
            K::InvalidInput { detail } => RunError::InvalidInput { detail },
            K::ConflictingProviders { point, providers } => {
                RunError::ConflictingProviders { point, providers }
            }
            K::FailTurn {
                point,
                provider,
                message,
            } => RunError::FailTurn {
                point,
                provider,
                message,
            },
            K::PipelineContract { provider, detail } => {
                RunError::PipelineContract { provider, detail }
            }
        }
    }
}
