//! Wire types shared by every panel: diagnostics, contract ids, provider calls and run errors.

use covel_kernel::contract;
use covel_kernel::diagnostic;
use covel_kernel::runner;
use serde::Serialize;
use specta::Type;
use std::sync::Arc;

/// Any JSON value. Fields of this type carry `#[specta(type = JsonShape)]`: specta's own
/// export of `serde_json::Value` holds 64-bit integers, which specta-typescript refuses.
///
/// Two values are equal only when their JSON text is: objects compare key by key *in order*
/// (`serde_json`'s own equality ignores the order of an object's keys, which the window shows)
/// and a number's kind counts (`1` is not `1.0`, `-0.0` is not `0.0`). [`super::WireState`]
/// sends a part again exactly when it is not equal to what the window holds.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(transparent)]
pub struct JsonValue(pub serde_json::Value);

impl PartialEq for JsonValue {
    fn eq(&self, other: &JsonValue) -> bool {
        same_json(&self.0, &other.0)
    }
}

impl PartialEq<serde_json::Value> for JsonValue {
    fn eq(&self, other: &serde_json::Value) -> bool {
        same_json(&self.0, other)
    }
}

impl std::ops::Deref for JsonValue {
    type Target = serde_json::Value;
    fn deref(&self) -> &serde_json::Value {
        &self.0
    }
}

impl From<serde_json::Value> for JsonValue {
    fn from(value: serde_json::Value) -> JsonValue {
        JsonValue(value)
    }
}

impl From<&serde_json::Value> for JsonValue {
    fn from(value: &serde_json::Value) -> JsonValue {
        JsonValue(value.clone())
    }
}

/// A part that snapshots share: a snapshot that keeps a part unchanged holds the same
/// allocation as the one before, so building it costs a reference count, and comparing it with
/// the part the window last received (`WireState`) is a pointer check. Two separate
/// allocations still compare by value, so sharing decides only how fast an answer comes. On the
/// wire it is the part itself.
#[derive(Debug, Type)]
#[specta(transparent)]
pub struct Shared<T>(pub std::sync::Arc<T>);

impl<T> Shared<T> {
    pub fn new(part: T) -> Shared<T> {
        Shared(std::sync::Arc::new(part))
    }

    /// Whether both hold the same allocation.
    pub fn same(&self, other: &Shared<T>) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0)
    }
}

impl<T> Clone for Shared<T> {
    fn clone(&self) -> Self {
        Shared(std::sync::Arc::clone(&self.0))
    }
}

impl<T> std::ops::Deref for Shared<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: PartialEq> PartialEq for Shared<T> {
    fn eq(&self, other: &Shared<T>) -> bool {
        self.same(other) || *self.0 == *other.0
    }
}

impl<T: Serialize> Serialize for Shared<T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

/// Whether two values serialize to the same JSON text (see [`JsonValue`]).
pub(crate) fn same_json(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    use serde_json::Value;
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len()
                && a.iter()
                    .zip(b)
                    .all(|((ka, va), (kb, vb))| ka == kb && same_json(va, vb))
        }
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(a, b)| same_json(a, b))
        }
        (Value::Number(a), Value::Number(b)) => match (a.as_f64(), b.as_f64()) {
            // Same kind (integer or float) and, for floats, the same bits: -0.0 is not 0.0.
            _ if a.is_f64() != b.is_f64() => false,
            (Some(x), Some(y)) if a.is_f64() => x.to_bits() == y.to_bits(),
            _ => a == b,
        },
        _ => a == b,
    }
}

pub use crate::ts::{JsonShape, Number};

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

/// How several providers of a point combine (seed page, "Combination modes").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Type)]
#[serde(rename_all = "lowercase")]
pub enum PointMode {
    /// One valid provider answers.
    Single,
    /// Every provider's output is gathered (and sorted by its own keys: call order decides
    /// nothing).
    Collect,
    /// Each provider gets the previous result, in declared order.
    Pipeline,
}

/// A kernel point and how its providers combine: the window reads the kernel's contract rather
/// than keeping its own copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Type)]
pub struct PointInfo {
    pub point: PointId,
    pub mode: PointMode,
}

impl PointInfo {
    /// Every point of the kernel contract.
    pub fn all() -> Vec<PointInfo> {
        contract::PointId::ALL
            .into_iter()
            .map(|id| PointInfo {
                point: id.into(),
                mode: match id.point().mode {
                    contract::Mode::Single => PointMode::Single,
                    contract::Mode::Collect => PointMode::Collect,
                    contract::Mode::Pipeline => PointMode::Pipeline,
                },
            })
            .collect()
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
    pub plugin_id: Arc<str>,
    pub provider_id: Arc<str>,
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
    /// What the studio has to say about the call (a log cut short, a timer clamped, a
    /// row-shaped read): its own notes, never what the handler printed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[specta(optional)]
    pub notes: Vec<String>,
    /// Answered from the engine's memo: nothing the provider can see changed.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    #[specta(optional)]
    pub cached: bool,
    /// For a memo answer: how long the first run of the answer it reuses took, at the precision
    /// shown (its own duration shows 0: see [`shown_ms`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[specta(type = Option<Number>, optional)]
    pub ran_ms: Option<f64>,
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
            notes: c.notes.clone(),
            cached: c.cached,
            ran_ms: c.ran_ms.map(display_ms),
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

#[cfg(test)]
mod tests {
    use super::JsonValue;
    use proptest::prelude::*;
    use serde_json::{Value, json};

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            (-3i64..3).prop_map(|n| json!(n)),
            prop_oneof![Just(0.0f64), Just(-0.0), Just(1.0), Just(-2.5)].prop_map(|n| json!(n)),
            "[ab]{0,2}".prop_map(Value::String),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::vec(("[abc]", inner), 0..4)
                    .prop_map(|entries| Value::Object(entries.into_iter().collect())),
            ]
        })
    }

    /// A value like `value` the way a provider's next answer may differ: its objects' keys in
    /// reverse order, its integers written as floats, its zeros negated.
    fn variant(value: &Value, how: u8) -> Value {
        match value {
            Value::Object(map) if how == 0 => Value::Object(
                map.iter()
                    .rev()
                    .map(|(k, v)| (k.clone(), variant(v, how)))
                    .collect(),
            ),
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| (k.clone(), variant(v, how)))
                    .collect(),
            ),
            Value::Array(items) => Value::Array(items.iter().map(|v| variant(v, how)).collect()),
            Value::Number(n) if how == 1 && n.is_i64() => json!(n.as_f64()),
            Value::Number(n) if how == 2 && n.as_f64() == Some(0.0) => {
                json!(-n.as_f64().unwrap_or_default())
            }
            other => other.clone(),
        }
    }

    proptest! {
        #[test]
        fn json_values_are_equal_exactly_when_their_json_text_is(
            a in json_value(),
            other in json_value(),
            how in 0u8..4,
        ) {
            let b = if how == 3 { other } else { variant(&a, how) };
            let same_text = serde_json::to_string(&a).ok() == serde_json::to_string(&b).ok();
            prop_assert_eq!(JsonValue(a) == JsonValue(b), same_text);
        }
    }

    #[test]
    fn an_object_with_its_keys_reordered_is_not_equal() {
        let a = JsonValue(json!({"mood": "calm", "place": "tower"}));
        let b = JsonValue(json!({"place": "tower", "mood": "calm"}));
        assert_eq!(*a, *b, "serde_json's own equality ignores key order");
        assert_ne!(a, b, "the window shows the keys in order");
        assert_ne!(JsonValue(json!(1)), JsonValue(json!(1.0)));
        assert_ne!(JsonValue(json!(0.0)), JsonValue(json!(-0.0)));
        assert_eq!(JsonValue(json!({"k": [1, "x"]})), json!({"k": [1, "x"]}));
    }
}
