//! Trace entries: one per provider call, with the outcome and the reason, so an author sees
//! why a provider was skipped without reading any log.

use super::{FailureKind, Provider};
use crate::contract::{PointId, SlotId};
use serde::Serialize;
use std::sync::Arc;
use std::time::Duration;

/// How a provider call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    Success,
    Timeout,
    Error,
    InvalidOutput,
    OutOfMemory,
    Unavailable,
}

impl Outcome {
    /// The stable error code recorded for a failed call.
    pub fn error_code(self) -> &'static str {
        match self {
            Outcome::Success => "",
            Outcome::Timeout => "timeout",
            Outcome::Error => "invocation-error",
            Outcome::InvalidOutput => "output-validation",
            Outcome::OutOfMemory => "out-of-memory",
            Outcome::Unavailable => "unavailable",
        }
    }
}

impl From<FailureKind> for Outcome {
    fn from(kind: FailureKind) -> Outcome {
        match kind {
            FailureKind::Timeout => Outcome::Timeout,
            FailureKind::Error => Outcome::Error,
            FailureKind::OutOfMemory => Outcome::OutOfMemory,
            FailureKind::Unavailable => Outcome::Unavailable,
            FailureKind::InvalidOutput => Outcome::InvalidOutput,
        }
    }
}

/// One provider call.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CallRecord {
    pub point: PointId,
    /// Shared: a record is copied into every preview that holds the call (a memo answer taken
    /// again, a run's calls gathered into the preview's list, the wire's record).
    pub plugin_id: Arc<str>,
    pub provider_id: Arc<str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slot: Option<SlotId>,
    pub order: i64,
    pub outcome: Outcome,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_code: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    pub duration_ms: f64,
    /// What the handler printed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub logs: Vec<String>,
    /// What the studio has to say about the call (not the handler's output).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Reused from an identical earlier call (nothing it can see changed).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub cached: bool,
    /// For a call answered from the memo: how long the first run of the answer took (its own
    /// `duration_ms` is the memo lookup's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ran_ms: Option<f64>,
    /// Why identical calls are not answered from the memo.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_cached: Option<String>,
}

impl CallRecord {
    pub(super) fn new(point: PointId, provider: &Provider, duration: Duration) -> CallRecord {
        CallRecord {
            point,
            plugin_id: Arc::from(provider.plugin_id.as_str()),
            provider_id: Arc::from(provider.decl.id.as_str()),
            slot: provider.decl.slot,
            order: provider.decl.order,
            outcome: Outcome::Success,
            error_code: None,
            message: None,
            duration_ms: duration.as_secs_f64() * 1000.0,
            logs: Vec::new(),
            notes: Vec::new(),
            cached: false,
            ran_ms: None,
            not_cached: None,
        }
    }
}
