//! Hook dispatch as Covel runs it: every active plugin's handlers for an event, grouped by
//! `enforce` (pre, normal, post) and then in registration order; each gets its own copy of the
//! payload as replaced so far. On an event that can be intercepted (a guard) an abort stops
//! the operation, and so does a handler that fails ("a broken policy must not let the
//! operation through"); on the others a failing handler is skipped and the replacements made
//! before it stay (the seed page's rule). Parallel events (audits) ignore every answer.

use super::TurnPlugins;
use super::record::{FieldChange, HookOutcome, HookStep, LoopStep};
use covel_kernel::runner::HandlerCall;
use serde_json::{Map, Value, json};
use std::time::Duration;

/// Events whose handlers can stop the operation (Covel's guard events).
const GUARDS: [&str; 5] = [
    "TurnStart",
    "PreCompaction",
    "PreRuntime",
    "PreToolUse",
    "PreStateCommit",
];

/// Events whose handlers all run and whose answers are ignored (audits).
const PARALLEL: [&str; 5] = [
    "SessionStart",
    "PostCompaction",
    "PostStateCommit",
    "TurnStop",
    "SessionEnd",
];

/// Events about one runtime (the story runtime in a playtest).
const RUNTIME_EVENTS: [&str; 7] = [
    "PreRuntime",
    "PostContextAssembly",
    "PreLLMCall",
    "PostLLMResponse",
    "PostRuntime",
    "PreToolUse",
    "PostToolUse",
];

/// A hook handler's time unless it asks for another (`timeoutMs`), as in Covel.
pub const DEFAULT_HOOK_TIMEOUT: Duration = Duration::from_millis(5000);

/// Whether `event` can be intercepted.
pub fn is_guard(event: &str) -> bool {
    GUARDS.contains(&event)
}

/// Whether `event` runs its handlers as audits.
pub fn is_parallel(event: &str) -> bool {
    PARALLEL.contains(&event)
}

/// What dispatching an event came to.
#[derive(Debug, Clone)]
pub struct HookRun {
    /// The payload with every replacement merged in.
    pub payload: Value,
    /// Every field replaced, merged (the later handler's value wins).
    pub replaced: Map<String, Value>,
    /// A guard's rejection: its reason.
    pub rejected: Option<String>,
}

impl HookRun {
    /// A replaced field, when a handler replaced it.
    pub fn replaced(&self, field: &str) -> Option<&Value> {
        self.replaced.get(field)
    }
}

/// A hook handler's answer, read.
enum Answer {
    Continue(Option<Map<String, Value>>),
    NotMatched,
    Abort(String),
    Malformed(String),
}

fn read_answer(value: &Value) -> Answer {
    match value {
        Value::Null => Answer::Continue(None),
        Value::Object(o) => match o.get("action").and_then(Value::as_str) {
            Some("continue") if o.get("skipped") == Some(&Value::Bool(true)) => Answer::NotMatched,
            Some("continue") => match o.get("replace") {
                None | Some(Value::Null) => Answer::Continue(None),
                Some(Value::Object(r)) => Answer::Continue(Some(r.clone())),
                Some(other) => Answer::Malformed(format!(
                    "`replace` must be an object, not {}",
                    crate::turn::kind_of(other)
                )),
            },
            Some("abort") => Answer::Abort(
                o.get("reason")
                    .and_then(Value::as_str)
                    .unwrap_or("(no reason given)")
                    .to_string(),
            ),
            _ => Answer::Malformed(
                "a hook answers nothing, {action: \"continue\", replace?} or {action: \"abort\", reason}"
                    .into(),
            ),
        },
        other => Answer::Malformed(format!(
            "a hook answers nothing or an object, not {}",
            crate::turn::kind_of(other)
        )),
    }
}

impl TurnPlugins {
    /// Runs every active handler of `event` with `payload`; `runtime` is the runtime the event
    /// is about (the handlers' `ctx.pluginId`). Each call is recorded in `steps`.
    pub fn dispatch(
        &self,
        event: &str,
        payload: Value,
        runtime: &str,
        steps: &mut Vec<LoopStep>,
    ) -> HookRun {
        let guard = is_guard(event);
        let parallel = is_parallel(event);
        // A runtime's events name the runtime in their payload too, as Covel's earlier payloads
        // did (the SDK's narrative review falls back to `payload.pluginId` without `ctx.pluginId`).
        let mut payload = payload;
        if RUNTIME_EVENTS.contains(&event)
            && let Some(fields) = payload.as_object_mut()
        {
            fields
                .entry("pluginId")
                .or_insert_with(|| Value::from(runtime));
            fields
                .entry("runtimeId")
                .or_insert_with(|| Value::from(runtime));
        }
        let mut run = HookRun {
            payload,
            replaced: Map::new(),
            rejected: None,
        };
        let rank = |enforce: &str| match enforce {
            "pre" => 0,
            "post" => 2,
            _ => 1,
        };
        let mut handlers: Vec<_> = self
            .plugins
            .iter()
            .flat_map(|p| p.hooks.iter().map(move |h| (p, h)))
            .filter(|(_, h)| h.event == event && h.handler_is_function)
            .collect();
        handlers.sort_by_key(|(_, h)| rank(&h.enforce));
        for (plugin, hook) in handlers {
            let call = HandlerCall {
                key: hook.key.clone(),
                input: json!({
                    "event": event,
                    "payload": run.payload,
                    "activePluginIds": self.active_ids(),
                }),
                context: std::sync::Arc::clone(&self.context),
                timeout: hook
                    .timeout_ms
                    .map_or(DEFAULT_HOOK_TIMEOUT, Duration::from_millis),
                ctx_plugin_id: runtime.to_string(),
            };
            let report = plugin.invoker.call_handler(&call);
            let mut step = HookStep {
                event: event.to_string(),
                plugin_id: plugin.id.clone(),
                enforce: hook.enforce.clone(),
                outcome: HookOutcome::Continue,
                detail: None,
                changes: Vec::new(),
                duration_ms: super::record::ms(report.duration),
                logs: report.logs.clone(),
                notes: report.notes.clone(),
            };
            let answer = match &report.result {
                Ok(value) => read_answer(value),
                Err(failure) => Answer::Malformed(failure.message.clone()),
            };
            match answer {
                Answer::NotMatched => step.outcome = HookOutcome::NotMatched,
                Answer::Continue(None) => {}
                Answer::Continue(Some(_)) if parallel => {
                    step.detail =
                        Some(format!("{event} is an audit: its replacements are ignored"));
                }
                Answer::Continue(Some(replace)) => {
                    step.outcome = HookOutcome::Replaced;
                    for (field, after) in replace {
                        let before = run.payload.get(&field).cloned().unwrap_or(Value::Null);
                        if field == "correction" {
                            step.outcome = HookOutcome::Correction;
                            step.detail = after.as_str().map(str::to_string);
                        }
                        if let Some(payload) = run.payload.as_object_mut() {
                            payload.insert(field.clone(), after.clone());
                        }
                        run.replaced.insert(field.clone(), after.clone());
                        step.changes.push(FieldChange {
                            field,
                            before,
                            after,
                        });
                    }
                }
                Answer::Abort(reason) if guard => {
                    step.outcome = HookOutcome::Rejected;
                    step.detail = Some(reason.clone());
                    run.rejected = Some(format!("{} rejected it: {reason}", plugin.id));
                }
                Answer::Abort(reason) => {
                    step.outcome = HookOutcome::AbortIgnored;
                    step.detail = Some(format!(
                        "{reason} (an abort has no effect on {event}, which cannot be intercepted)"
                    ));
                }
                Answer::Malformed(why) if guard => {
                    step.outcome = HookOutcome::Rejected;
                    step.detail = Some(format!(
                        "the handler failed, which rejects on {event}: {why}"
                    ));
                    run.rejected = Some(format!("{}'s handler failed: {why}", plugin.id));
                }
                Answer::Malformed(why) => {
                    step.outcome = HookOutcome::Failed;
                    step.detail = Some(format!("skipped, earlier replacements kept: {why}"));
                }
            }
            steps.push(LoopStep::Hook(step));
            if run.rejected.is_some() {
                break;
            }
        }
        run
    }
}
