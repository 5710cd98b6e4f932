//! Tool calls in a turn's loop: `PreToolUse` (may reject or rewrite the call), the tool's
//! handler in its plugin's sandbox (its zod schema checks the input first), `PostToolUse` (may
//! replace what the model reads, or end the loop), and the result the model reads back, with
//! Covel's error codes. The built-in `emit-event` emits a declared event; `runtime-done` ends
//! the loop.

use super::record::{LoopStep, ToolOutcome, ToolStep};
use super::{OfferedTool, TurnPlugins, kind_of};
use crate::models::ToolCall;
use covel_kernel::registration::ToolSpec;
use covel_kernel::runner::HandlerCall;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// How long one tool call may run.
pub const TOOL_TIMEOUT: Duration = Duration::from_secs(10);

/// The built-in tools the story model is offered besides the plugins'.
pub const EMIT_EVENT: &str = "emit-event";
pub const RUNTIME_DONE: &str = "runtime-done";

/// What the loop keeps between tool calls of one turn.
#[derive(Debug, Default)]
pub struct ToolState {
    /// Every proposal made so far, with the plugin whose tool made it.
    pub proposals: Vec<(String, Value)>,
    /// Every event emitted so far: topic, data, emitter (None for the story's `emit-event`).
    pub events: Vec<(String, Value, Option<String>)>,
    /// The turn's number in the session (1-based).
    pub turn_number: u64,
    /// Forms the tools asked the player to fill (see [`super::forms`]).
    pub forms: Vec<Value>,
}

/// How a tool call ended for the loop.
pub struct ToolEnd {
    /// The tool result message's text.
    pub result: String,
    /// A `PostToolUse` hook asked to end the loop.
    pub terminate: bool,
    /// The model called `runtime-done`.
    pub done: bool,
}

impl TurnPlugins {
    /// The tools offered to the story model (see [`offered_tools`]).
    pub fn offered_tools(&self) -> Vec<OfferedTool> {
        offered_tools(
            self.plugins.iter().flat_map(|p| &p.tools),
            self.plugins.iter().any(|p| !p.events.is_empty()),
        )
    }

    /// Runs one tool call of the model's, hooks included; records it in `steps`.
    pub fn run_tool(
        &self,
        call: &ToolCall,
        runtime: &str,
        state: &mut ToolState,
        steps: &mut Vec<LoopStep>,
    ) -> ToolEnd {
        let started = Instant::now();
        let tool_call =
            json!({"id": call.id, "name": call.name, "arguments": call.input.to_string()});
        let pre = self.dispatch("PreToolUse", json!({"toolCall": tool_call}), runtime, steps);
        let mut step = ToolStep {
            call_id: call.id.clone(),
            name: call.name.clone(),
            plugin_id: None,
            input: call.input.clone(),
            outcome: ToolOutcome::Ok,
            result: String::new(),
            proposals: Vec::new(),
            events: Vec::new(),
            duration_ms: 0.0,
            logs: Vec::new(),
            notes: Vec::new(),
        };
        if let Some(reason) = pre.rejected {
            step.outcome = ToolOutcome::Rejected;
            step.result =
                json!({"error": format!("pre-tool-use hook aborted: {reason}")}).to_string();
            step.duration_ms = ms(started);
            let result = step.result.clone();
            steps.push(LoopStep::Tool(step));
            return ToolEnd {
                result,
                terminate: false,
                done: false,
            };
        }
        // A `PreToolUse` hook may rewrite the call's name and arguments (its id stays).
        let (name, input) = match pre.replaced("toolCall") {
            Some(rewritten) => (
                rewritten["name"].as_str().unwrap_or(&call.name).to_string(),
                match &rewritten["arguments"] {
                    Value::String(text) => {
                        serde_json::from_str(text).unwrap_or(Value::String(text.clone()))
                    }
                    Value::Null => call.input.clone(),
                    other => other.clone(),
                },
            ),
            None => (call.name.clone(), call.input.clone()),
        };
        step.name.clone_from(&name);
        step.input = input.clone();
        let mut done = false;
        let (success, content) = match name.as_str() {
            EMIT_EVENT => {
                let (ok, text) = self.emit_event(&input, state, &mut step);
                (ok, json!({"_text": text}))
            }
            RUNTIME_DONE => {
                done = true;
                (true, json!({"_text": "the turn is complete"}))
            }
            _ => self.run_plugin_tool(&name, &input, state, &mut step),
        };
        step.result = model_text(success, &content);
        step.duration_ms = ms(started);
        // The call is recorded before `PostToolUse` runs; a replaced result is written into it.
        let recorded = steps.len();
        steps.push(LoopStep::Tool(step.clone()));
        // `PostToolUse` may replace what the model reads, or end the loop after this result.
        let post = self.dispatch(
            "PostToolUse",
            json!({"toolCall": {"id": call.id, "name": name, "arguments": input.to_string()}, "result": {"success": success, "result": step.result, "content": content}}),
            runtime,
            steps,
        );
        if let Some(replaced) = post.replaced("result") {
            step.result = match replaced {
                Value::String(text) => text.clone(),
                Value::Object(o) if o.get("result").is_some_and(Value::is_string) => {
                    o["result"].as_str().unwrap_or_default().to_string()
                }
                other => other.to_string(),
            };
        }
        let terminate = post.replaced("terminate") == Some(&Value::Bool(true));
        let result = step.result.clone();
        if let Some(LoopStep::Tool(kept)) = steps.get_mut(recorded) {
            kept.result.clone_from(&result);
        }
        ToolEnd {
            result,
            terminate,
            done,
        }
    }

    /// Runs a plugin's tool: `(success, content)`.
    fn run_plugin_tool(
        &self,
        name: &str,
        input: &Value,
        state: &mut ToolState,
        step: &mut ToolStep,
    ) -> (bool, Value) {
        let Some(plugin) = self
            .plugins
            .iter()
            .find(|p| p.tools.iter().any(|t| t.name == name))
        else {
            step.outcome = ToolOutcome::NotFound;
            return (
                false,
                error(
                    "NOT_FOUND",
                    &format!("Tool \"{name}\" is not available (no active plugin registers it)"),
                ),
            );
        };
        step.plugin_id = Some(plugin.id.clone());
        let own: Vec<&Value> = state
            .proposals
            .iter()
            .filter(|(owner, _)| *owner == plugin.id)
            .map(|(_, p)| p)
            .collect();
        let report = plugin.invoker.call_handler(&HandlerCall {
            key: format!("tool:{name}"),
            input: json!({
                "params": input,
                "pendingProposals": own,
                "emittedEventTopics": state.events.iter().map(|(t, _, _)| t).collect::<Vec<_>>(),
                "turnNumber": state.turn_number,
            }),
            context: std::sync::Arc::clone(&self.context),
            timeout: TOOL_TIMEOUT,
            ctx_plugin_id: plugin.id.clone(),
        });
        step.logs = report.logs;
        step.notes = report.notes;
        let value = match report.result {
            Ok(value) => value,
            Err(failure) => {
                step.outcome = ToolOutcome::Failed;
                return (
                    false,
                    error(
                        "EXECUTION_ERROR",
                        &format!(
                            "Tool \"{name}\" failed during execution: {}",
                            failure.message
                        ),
                    ),
                );
            }
        };
        if value["kind"] == "covel.invalid-tool-input" {
            step.outcome = ToolOutcome::InvalidInput;
            let details: Vec<String> = value["issues"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|i| {
                    let path: Vec<&str> = i["path"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(Value::as_str)
                        .collect();
                    format!(
                        "{}: {}",
                        path.join("."),
                        i["message"].as_str().unwrap_or_default()
                    )
                })
                .collect();
            let mut answer = error(
                "VALIDATION_ERROR",
                &format!(
                    "Invalid parameters for tool \"{name}\": {}. Fix the highlighted fields and retry.",
                    details.join("; ")
                ),
            );
            answer["details"] = json!(details);
            return (false, answer);
        }
        let (content, proposals, events) = if value["kind"] == "covel.tool-result" {
            (
                value.get("content").cloned().unwrap_or(Value::Null),
                value["pendingProposals"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default(),
                value["emittedEvents"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default(),
            )
        } else {
            (value.as_ref().clone(), Vec::new(), Vec::new())
        };
        // A presentable result (the SDK's form tool) asks the player to fill a form.
        if content["interaction"]["type"].is_string() {
            state
                .forms
                .push(super::forms::record(&plugin.id, &content["interaction"]));
        }
        for proposal in proposals {
            step.proposals.push(proposal.clone());
            state.proposals.push((plugin.id.clone(), proposal));
        }
        for event in events {
            step.events.push(event.clone());
            let topic = event["topic"].as_str().unwrap_or_default().to_string();
            state.events.push((
                topic,
                event.get("data").cloned().unwrap_or(Value::Null),
                Some(plugin.id.clone()),
            ));
        }
        (true, content)
    }

    /// The built-in `emit-event {topic, data}`: the topic must be one an active plugin
    /// declares, and its data must match the declared schema; a topic already emitted this
    /// turn is skipped. `(success, text)`.
    fn emit_event(
        &self,
        input: &Value,
        state: &mut ToolState,
        step: &mut ToolStep,
    ) -> (bool, String) {
        let Some(topic) = input["topic"].as_str() else {
            step.outcome = ToolOutcome::InvalidInput;
            return (
                false,
                format!(
                    "emit-event needs a `topic` string, not {}",
                    kind_of(&input["topic"])
                ),
            );
        };
        let data = input.get("data").cloned().unwrap_or(Value::Null);
        if let Err(why) = self.check_event(topic, &data) {
            step.outcome = ToolOutcome::InvalidInput;
            return (false, why);
        }
        if state.events.iter().any(|(t, _, _)| t == topic) {
            return (
                true,
                format!("event \"{topic}\" already emitted this turn — skipped"),
            );
        }
        step.events.push(json!({"topic": topic, "data": data}));
        state.events.push((topic.to_string(), data, None));
        (true, format!("event \"{topic}\" emitted"))
    }
}

/// The tools offered to the story model: every active plugin's (the first of a name), then
/// the built-in `emit-event` when an active plugin declares events. (`runtime-done` is run when
/// called, but not offered: a story turn ends with its narration.)
pub fn offered_tools<'a>(
    specs: impl Iterator<Item = &'a ToolSpec>,
    events_declared: bool,
) -> Vec<OfferedTool> {
    let mut tools: Vec<OfferedTool> = Vec::new();
    for spec in specs {
        if !tools.iter().any(|t| t.name == spec.name) {
            tools.push(OfferedTool {
                name: spec.name.clone(),
                description: spec.description.clone(),
                parameters: if spec.parameters.is_object() {
                    spec.parameters.clone()
                } else {
                    json!({"type": "object"})
                },
            });
        }
    }
    if events_declared {
        tools.push(OfferedTool {
            name: EMIT_EVENT.into(),
            description: "Emit a story event one of the active plugins declares.".into(),
            parameters: json!({"type": "object", "properties": {"topic": {"type": "string"}, "data": {"type": "object"}}, "required": ["topic", "data"]}),
        });
    }
    tools
}

/// A tool error as the model reads it.
fn error(code: &str, message: &str) -> Value {
    json!({"success": false, "error": message, "code": code})
}

/// What the model reads of a result: an error as JSON, `content._text` when it is text (the
/// text-first convention), anything else as JSON.
fn model_text(success: bool, content: &Value) -> String {
    match content.get("_text").and_then(Value::as_str) {
        Some(text) if success || content.get("code").is_none() => text.to_string(),
        _ => match content {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        },
    }
}

fn ms(started: Instant) -> f64 {
    super::record::ms(started.elapsed())
}
