//! What a played turn's loop did, in order: each hook call, model call, tool call, commit and
//! event. `covel play --json`, `covel test` expectations and the turn inspector read it.

use crate::models::Reply;
use serde::Serialize;
use serde_json::Value;

/// A duration in milliseconds at the precision the studio shows (0.01 ms).
pub fn ms(elapsed: std::time::Duration) -> f64 {
    (elapsed.as_secs_f64() * 100_000.0).round() / 100.0
}

/// One step of a turn's loop.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum LoopStep {
    Hook(HookStep),
    Model(ModelStep),
    Tool(ToolStep),
    Commit(CommitStep),
    Event(EventStep),
}

/// What a hook handler's answer did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum HookOutcome {
    /// Nothing returned, or `{action: "continue"}` without a replacement.
    Continue,
    /// Its `match` said no: the handler did not run.
    NotMatched,
    /// `{action: "continue", replace}`: the fields in `changes` were replaced.
    Replaced,
    /// `PostLLMResponse`'s `replace.correction`: the draft is rejected and the model asked again.
    Correction,
    /// `{action: "abort", reason}` on an event that can be intercepted (or a failed handler
    /// there): the operation does not happen.
    Rejected,
    /// `{action: "abort"}` on an event that cannot be intercepted: no effect.
    AbortIgnored,
    /// The handler threw, timed out or answered something that is not a hook result: skipped,
    /// earlier replacements kept.
    Failed,
}

/// One field a hook replaced, before and after.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FieldChange {
    pub field: String,
    pub before: Value,
    pub after: Value,
}

/// One hook handler's call.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HookStep {
    pub event: String,
    pub plugin_id: String,
    /// `pre`, `normal` or `post`.
    pub enforce: String,
    pub outcome: HookOutcome,
    /// The reason of a rejection, the correction asked for, or why the handler failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    pub changes: Vec<FieldChange>,
    pub duration_ms: f64,
    pub logs: Vec<String>,
    /// The studio's notes on the call (not the handler's output).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// One call of the story model.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelStep {
    /// 1 for the turn's first call.
    pub call: u32,
    /// The messages sent after the assembled prompt (the turn's tool rounds and corrections so
    /// far); the assembled prompt itself is the turn's prompt.
    pub added: Vec<Value>,
    /// The tools offered, by name.
    pub tools: Vec<String>,
    /// The request fields hooks replaced for this call (`systemPrompt`, `messages`, `model`,
    /// `tools`): then the request was rendered from the replaced messages.
    pub replaced: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reply: Option<Reply>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub duration_ms: f64,
}

/// How a tool call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ToolOutcome {
    Ok,
    /// A `PreToolUse` hook rejected it: it did not run.
    Rejected,
    /// Its input does not match the tool's schema: it did not run.
    InvalidInput,
    /// The tool threw or timed out.
    Failed,
    /// No active plugin registers a tool of that name.
    NotFound,
}

/// One tool call.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolStep {
    pub call_id: String,
    pub name: String,
    /// The tool's plugin; absent for a built-in tool (`emit-event`) or an unknown one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plugin_id: Option<String>,
    pub input: Value,
    pub outcome: ToolOutcome,
    /// What the model reads back.
    pub result: String,
    /// The proposals the tool made (committed at the end of the turn).
    pub proposals: Vec<Value>,
    /// The events the tool emitted.
    pub events: Vec<Value>,
    pub duration_ms: f64,
    pub logs: Vec<String>,
    /// The studio's notes on the call (not the handler's output).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// One proposal committed (or refused) at the end of the turn.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CommitStep {
    /// The plugin whose tool made it.
    pub plugin_id: String,
    #[serde(rename = "type")]
    pub proposal_type: String,
    pub committed: bool,
    /// Why it was refused or not applied.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// What it wrote: `namespace/key` per row.
    pub writes: Vec<String>,
    /// The slots its writes moved.
    pub slots: Vec<String>,
}

/// One event of the turn and the slots it moved.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EventStep {
    pub topic: String,
    pub data: Value,
    /// Who emitted it: a tool's plugin, or absent for the story's own `<event>` tags.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plugin_id: Option<String>,
    pub accepted: bool,
    /// Why it was refused (an undeclared topic, data its schema refuses).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    pub slots: Vec<String>,
}

impl LoopStep {
    /// One line that says what the step did, in the author's terms (CLI output, test reports).
    pub fn line(&self) -> String {
        let detail =
            |d: &Option<String>| d.as_deref().map(|d| format!(": {d}")).unwrap_or_default();
        match self {
            LoopStep::Hook(h) => {
                let fields: Vec<&str> = h.changes.iter().map(|c| c.field.as_str()).collect();
                let what = match h.outcome {
                    HookOutcome::Replaced => format!("replaced {}", fields.join(", ")),
                    HookOutcome::Correction => "asked for a correction".into(),
                    HookOutcome::Rejected => "rejected".into(),
                    HookOutcome::AbortIgnored => "aborted (no effect here)".into(),
                    HookOutcome::Failed => "failed".into(),
                    HookOutcome::NotMatched => "not matched".into(),
                    HookOutcome::Continue => "continue".into(),
                };
                let shown = match h.outcome {
                    HookOutcome::Replaced | HookOutcome::Continue | HookOutcome::NotMatched => {
                        String::new()
                    }
                    _ => detail(&h.detail),
                };
                format!("hook {} · {} · {what}{shown}", h.event, h.plugin_id)
            }
            LoopStep::Model(m) => match (&m.reply, &m.error) {
                (_, Some(error)) => format!("model call {} failed: {error}", m.call),
                (Some(reply), None) if !reply.tool_calls.is_empty() => {
                    let names: Vec<&str> =
                        reply.tool_calls.iter().map(|c| c.name.as_str()).collect();
                    format!("model call {} → calls {}", m.call, names.join(", "))
                }
                (Some(reply), None) => format!(
                    "model call {} → {} of narration",
                    m.call,
                    crate::words::counted(reply.text.chars().count(), "character")
                ),
                (None, None) => format!("model call {}", m.call),
            },
            LoopStep::Tool(t) => {
                let owner = t
                    .plugin_id
                    .as_deref()
                    .map(|p| format!(" ({p})"))
                    .unwrap_or_default();
                let outcome = match t.outcome {
                    ToolOutcome::Ok => "ok".to_string(),
                    other => serde_json::to_value(other)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_string))
                        .unwrap_or_default(),
                };
                let mut line = format!(
                    "tool {}{owner} {} · {outcome} → {}",
                    t.name,
                    t.input,
                    clip(&t.result, 160)
                );
                if !t.proposals.is_empty() {
                    line.push_str(&format!(
                        " · {}",
                        crate::words::counted(t.proposals.len(), "proposal")
                    ));
                }
                line
            }
            LoopStep::Commit(c) => {
                let verb = if c.committed { "committed" } else { "refused" };
                let writes = if c.writes.is_empty() {
                    String::new()
                } else {
                    format!(" {}", c.writes.join(", "))
                };
                let slots = if c.slots.is_empty() {
                    String::new()
                } else {
                    format!(" → moved {}", c.slots.join(", "))
                };
                format!(
                    "commit {} of {}{writes} · {verb}{}{slots}",
                    c.proposal_type,
                    c.plugin_id,
                    detail(&c.detail)
                )
            }
            LoopStep::Event(e) => {
                let by = e
                    .plugin_id
                    .as_deref()
                    .map(|p| format!(" from {p}"))
                    .unwrap_or_default();
                if e.accepted {
                    let slots = if e.slots.is_empty() {
                        " (no slot previews it)".to_string()
                    } else {
                        format!(" → moved {}", e.slots.join(", "))
                    };
                    format!("event {}{by}{slots}", e.topic)
                } else {
                    format!("event {}{by} refused{}", e.topic, detail(&e.detail))
                }
            }
        }
    }
}

/// At most `max` characters of `text`, with an ellipsis when cut.
fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_string()
    } else {
        format!("{}…", text.chars().take(max).collect::<String>())
    }
}
