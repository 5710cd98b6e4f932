//! A played turn's loop, as Covel's turn runner runs a story runtime: `SessionStart` (a
//! playtest's first turn), `TurnStart`, `PreRuntime`, the assembled prompt through
//! `PostContextAssembly`, then model calls (`PreLLMCall` → the story model →
//! `PostLLMResponse`, which may ask for a correction) and the tools each reply calls
//! ([`tools`]), until the model answers with narration; then `PostRuntime` and `TurnStop`.
//! Everything is bounded: model calls, corrections, tools per reply and each handler's time.
//!
//! The loop needs no access to the playtest: it runs over a snapshot of the active plugins
//! ([`TurnPlugins`]), so a studio can release its lock while the model answers. Its effects
//! (proposals, events) are committed by the playtest when the turn is appended
//! ([`crate::playtest`]); a failed or cancelled turn commits nothing.

pub mod commit;
pub mod forms;
pub mod hooks;
pub mod record;
pub mod requests;
pub mod tools;

use crate::models::{Backend, ModelError, Reply, ToolCall};
use covel_kernel::context::ExecutionContext;
use covel_kernel::registration::{HookSpec, ToolSpec};
use covel_kernel::runner::Invoker;
use covel_kernel::session::ScriptedCall;
use record::{LoopStep, ModelStep};
use requests::Conversation;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;
use tools::ToolState;

/// At most this many story model calls in one turn (Covel's default `maxSteps`).
pub const MAX_MODEL_CALLS: u32 = 10;
/// At most this many `PostLLMResponse` corrections in one turn; one more fails the turn.
pub const MAX_CORRECTIONS: u32 = 2;
/// At most this many tool calls in one reply; the rest are answered with an error.
pub const MAX_TOOLS_PER_REPLY: usize = 16;
/// The longest a turn's loop may take, model calls included (Covel's narrator allows its runtime
/// 240 s).
pub const TURN_TIME: std::time::Duration = std::time::Duration::from_secs(240);
/// The story runtime a played turn runs: Covel's narrator (what hooks see as `ctx.pluginId`).
pub const STORY_RUNTIME: &str = "narrator";

/// What a correction adds before the model is asked again (Covel's wording).
const CORRECTION_PREFIX: &str = "The draft was not accepted. Correct it and resend the complete response — the rejected draft will not be executed or committed. Do not describe the correction process.";

/// A tool as the model is offered it.
#[derive(Debug, Clone, PartialEq)]
pub struct OfferedTool {
    pub name: String,
    pub description: String,
    pub parameters: Value,
}

/// One active plugin as the loop runs it.
pub struct TurnPlugin {
    pub id: String,
    pub invoker: Arc<dyn Invoker>,
    pub tools: Vec<ToolSpec>,
    pub hooks: Vec<HookSpec>,
    /// The event topics the plugin declares, with their data schemas (a schema file already
    /// read, or why it could not be).
    pub events: Vec<(String, Result<Value, String>)>,
}

/// The active plugins of a turn, in the session's order, and the execution their handlers run
/// in (the committed session state before the turn).
pub struct TurnPlugins {
    pub plugins: Vec<TurnPlugin>,
    pub context: Arc<ExecutionContext>,
    pub session_id: String,
}

impl TurnPlugins {
    fn active_ids(&self) -> Vec<&str> {
        self.plugins.iter().map(|p| p.id.as_str()).collect()
    }

    /// Whether any active plugin registers a tool or a hook handler.
    pub fn has_tools_or_hooks(&self) -> bool {
        self.plugins
            .iter()
            .any(|p| !p.tools.is_empty() || !p.hooks.is_empty())
    }

    /// Checks an event against the topics the active plugins declare and their data schemas.
    pub fn check_event(&self, topic: &str, data: &Value) -> Result<(), String> {
        let Some((plugin, schema)) = self.plugins.iter().find_map(|p| {
            p.events
                .iter()
                .find(|(declared, _)| declared == topic)
                .map(|(_, schema)| (p, schema))
        }) else {
            return Err(format!(
                "no active plugin declares the event \"{topic}\" (contributes.events)"
            ));
        };
        let name = format!("{}'s event \"{topic}\"", plugin.id);
        let schema = schema.as_ref().map_err(|why| format!("{name}: {why}"))?;
        covel_kernel::contract::Validator::of_plugin(&name, schema)
            .and_then(|v| v.check(data).map_err(|e| e.to_string()))
    }
}

/// The story model of a turn: a scripted turn's calls, or a backend.
pub enum StoryModel {
    /// The calls of a scripted turn, answered in order; past the end the last is answered again.
    Scripted {
        calls: Vec<ScriptedCall>,
        turn: u64,
    },
    Backend(Arc<Backend>),
}

/// What the loop starts from.
pub struct LoopInput<'a> {
    pub player_message: &'a str,
    /// The assembled request bodies.
    pub anthropic: &'a Value,
    pub openai: &'a Value,
    /// The session's characters (`{id, name, type, description}`), for `PostContextAssembly`.
    pub characters: Value,
    /// The turn's number in the session (1-based).
    pub turn_number: u64,
    /// The playtest's first turn: `SessionStart` runs first.
    pub session_start: bool,
    /// Receives the story model's text as it streams (a real backend's; a `PreLLMCall` hook
    /// may turn streaming off with `replace.stream: false`).
    pub on_text: Option<&'a dyn Fn(&str)>,
}

/// What a turn's loop came to.
pub struct LoopOutcome {
    /// The final reply (its text is the narration); None when the turn failed.
    pub reply: Option<Reply>,
    pub steps: Vec<LoopStep>,
    /// The proposals and events the tools made, to commit with the turn.
    pub effects: ToolState,
    pub error: Option<String>,
    pub cancelled: bool,
}

impl LoopOutcome {
    fn cancelled(steps: Vec<LoopStep>, effects: ToolState) -> LoopOutcome {
        LoopOutcome {
            cancelled: true,
            ..LoopOutcome::failed(
                steps,
                effects,
                "the turn was cancelled; nothing was appended".into(),
            )
        }
    }

    fn failed(steps: Vec<LoopStep>, effects: ToolState, error: String) -> LoopOutcome {
        LoopOutcome {
            reply: None,
            steps,
            effects,
            error: Some(error),
            cancelled: false,
        }
    }
}

/// A value's JSON kind, for messages.
pub fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

impl TurnPlugins {
    /// Plays the story runtime's part of a turn (see the module's documentation).
    pub fn play(
        &self,
        input: &LoopInput<'_>,
        model: &StoryModel,
        cancel: &AtomicBool,
    ) -> LoopOutcome {
        let mut turn = Turn {
            plugins: self,
            input,
            cancel,
            started: Instant::now(),
            steps: Vec::new(),
            effects: ToolState {
                turn_number: input.turn_number,
                ..ToolState::default()
            },
        };
        let played = turn.open().and_then(|()| {
            let mut conversation = turn.assembled_conversation();
            turn.narrate(model, &mut conversation)
        });
        match played {
            Ok(reply) => {
                let reply = turn.close(reply);
                LoopOutcome {
                    reply: Some(reply),
                    steps: turn.steps,
                    effects: turn.effects,
                    error: None,
                    cancelled: false,
                }
            }
            Err(Ended::Failed(why)) => LoopOutcome::failed(turn.steps, turn.effects, why),
            Err(Ended::Cancelled) => LoopOutcome::cancelled(turn.steps, turn.effects),
        }
    }
}

/// Why a turn ended before its narration.
enum Ended {
    Failed(String),
    Cancelled,
}

/// What one model call came to.
enum Called {
    /// The narration (the reply's tool calls, if any, ended the turn).
    Narration(Reply),
    /// Ask the model again (a correction, or the results of its tool calls).
    Again,
}

/// One turn being played: the steps it recorded and the effects its tools made so far.
struct Turn<'t, 'i> {
    plugins: &'t TurnPlugins,
    input: &'t LoopInput<'i>,
    cancel: &'t AtomicBool,
    started: Instant,
    steps: Vec<LoopStep>,
    effects: ToolState,
}

impl Turn<'_, '_> {
    /// Runs a hook event for the story runtime, recording its calls.
    fn dispatch(&mut self, event: &str, payload: Value) -> hooks::HookRun {
        self.plugins
            .dispatch(event, payload, STORY_RUNTIME, &mut self.steps)
    }

    /// `SessionStart` (a playtest's first turn), `TurnStart` and `PreRuntime`; either of the
    /// last two may reject the turn.
    fn open(&mut self) -> Result<(), Ended> {
        let input = self.input;
        if input.session_start {
            let world_id = self.plugins.context.view.world["worldRecord"]["id"].clone();
            self.plugins.dispatch(
                "SessionStart",
                json!({"sessionId": self.plugins.session_id, "worldId": world_id}),
                "",
                &mut self.steps,
            );
        }
        let start = self.dispatch(
            "TurnStart",
            json!({"playerMessage": input.player_message, "activeRuntimes": [STORY_RUNTIME]}),
        );
        if let Some(reason) = start.rejected {
            return Err(Ended::Failed(format!("TurnStart: {reason}")));
        }
        let pre = self.dispatch(
            "PreRuntime",
            json!({"manifest": {"name": STORY_RUNTIME, "stage": "narrative"}, "input": {"playerMessage": input.player_message}}),
        );
        match pre.rejected {
            Some(reason) => Err(Ended::Failed(format!(
                "PreRuntime: {reason}; the story runtime was skipped"
            ))),
            None => Ok(()),
        }
    }

    /// The assembled request as the model's conversation, after `PostContextAssembly` (which
    /// may replace the system prompt and the messages).
    fn assembled_conversation(&mut self) -> Conversation {
        let mut conversation = Conversation::new(self.input.anthropic, self.input.openai);
        let assembled = self.dispatch(
            "PostContextAssembly",
            json!({"systemPrompt": conversation.system, "messages": conversation.messages, "characters": self.input.characters}),
        );
        if let Some(Value::String(system)) = assembled.replaced("systemPrompt") {
            conversation.system.clone_from(system);
            conversation.rewritten = true;
        }
        if let Some(Value::Array(messages)) = assembled.replaced("messages") {
            conversation.messages.clone_from(messages);
            conversation.assembled = messages.len();
            conversation.rewritten = true;
        }
        conversation
    }

    /// Model calls until the model narrates, within the turn's bounds (calls, corrections, time).
    fn narrate(
        &mut self,
        model: &StoryModel,
        conversation: &mut Conversation,
    ) -> Result<Reply, Ended> {
        let offered = self.plugins.offered_tools();
        let mut corrections = 0;
        for call in 1..=MAX_MODEL_CALLS {
            match self.call_model(model, conversation, &offered, call, &mut corrections)? {
                Called::Narration(reply) => return Ok(reply),
                Called::Again => {}
            }
        }
        Err(Ended::Failed(format!(
            "the story model was still calling tools after {MAX_MODEL_CALLS} model calls (the turn's bound); nothing was appended"
        )))
    }

    /// One model call: `PreLLMCall` (which may replace this call's messages, model and tools),
    /// the model, `PostLLMResponse` (which may rewrite the reply or ask for a correction), then
    /// the tools the reply calls.
    fn call_model(
        &mut self,
        model: &StoryModel,
        conversation: &mut Conversation,
        offered: &[OfferedTool],
        call: u32,
        corrections: &mut u32,
    ) -> Result<Called, Ended> {
        let left = TURN_TIME.saturating_sub(self.started.elapsed());
        if left.is_zero() {
            return Err(Ended::Failed(format!(
                "the turn ran past its {} s (the turn's bound); nothing was appended",
                TURN_TIME.as_secs()
            )));
        }
        if self.cancel.load(Ordering::SeqCst) {
            return Err(Ended::Cancelled);
        }
        let request = self.dispatch(
            "PreLLMCall",
            json!({
                "messages": conversation.messages,
                "model": Value::Null,
                "tools": offered.iter().map(|t| json!({"name": t.name, "description": t.description, "parameters": t.parameters})).collect::<Vec<_>>(),
                "stream": self.input.on_text.is_some() && matches!(model, StoryModel::Backend(_)),
            }),
        );
        let sent: Vec<Value> = match request.replaced("messages") {
            Some(Value::Array(messages)) => messages.clone(),
            _ => conversation.messages.clone(),
        };
        // A hook may narrow the tools offered to this call (by name).
        let narrowed: Option<Vec<OfferedTool>> = match request.replaced("tools") {
            Some(Value::Array(list)) => Some(
                list.iter()
                    .filter_map(|t| {
                        let name = t["name"].as_str()?;
                        offered.iter().find(|o| o.name == name).cloned()
                    })
                    .collect(),
            ),
            _ => None,
        };
        let tools = narrowed.as_deref().unwrap_or(offered);
        let model_name = request.replaced("model").and_then(Value::as_str);
        let asked = Instant::now();
        let answer = match model {
            StoryModel::Scripted { calls, turn } => Ok(scripted_answer(calls, *turn, call)),
            StoryModel::Backend(backend) => {
                let (anthropic, openai) =
                    conversation.bodies(&sent, narrowed.as_deref(), model_name);
                // Streamed unless a hook said `stream: false` (Covel's narrative review does).
                let streamed = request.payload["stream"] == true;
                match self.input.on_text.filter(|_| streamed) {
                    Some(on_text) => {
                        backend.complete_streaming(&anthropic, &openai, self.cancel, left, on_text)
                    }
                    None => backend.complete_within(&anthropic, &openai, self.cancel, left),
                }
            }
        };
        let added = sent
            .get(conversation.assembled.min(sent.len())..)
            .unwrap_or_default()
            .to_vec();
        let mut step = ModelStep {
            call,
            added,
            tools: tools.iter().map(|t| t.name.clone()).collect(),
            replaced: request
                .replaced
                .keys()
                .filter(|k| *k != "stream")
                .cloned()
                .collect(),
            reply: None,
            error: None,
            duration_ms: record::ms(asked.elapsed()),
        };
        let reply = match answer {
            Ok(reply) => reply,
            Err(ModelError::Cancelled) => {
                step.error = Some(ModelError::Cancelled.to_string());
                self.steps.push(LoopStep::Model(step));
                return Err(Ended::Cancelled);
            }
            Err(e) => {
                step.error = Some(e.to_string());
                self.steps.push(LoopStep::Model(step));
                return Err(Ended::Failed(format!("the story model failed: {e}")));
            }
        };
        step.reply = Some(reply.clone());
        self.steps.push(LoopStep::Model(step));
        // `PostLLMResponse` may rewrite the response or reject it with a correction.
        let review = self.dispatch(
            "PostLLMResponse",
            json!({"response": response_json(&reply), "messages": sent}),
        );
        let mut reply = match review.replaced("response") {
            Some(rewritten) => rewritten_reply(&reply, rewritten),
            None => reply,
        };
        if let Some(correction) = review
            .replaced("correction")
            .and_then(Value::as_str)
            .filter(|c| !c.trim().is_empty())
        {
            *corrections += 1;
            if *corrections > MAX_CORRECTIONS {
                return Err(Ended::Failed(format!(
                    "Response validation failed after {MAX_CORRECTIONS} corrections: {correction}"
                )));
            }
            if !reply.text.is_empty() {
                conversation
                    .messages
                    .push(json!({"role": "assistant", "content": reply.text}));
            }
            conversation.messages.push(
                json!({"role": "system", "content": format!("{CORRECTION_PREFIX}\n{correction}")}),
            );
            return Ok(Called::Again);
        }
        if reply.tool_calls.is_empty() {
            return Ok(Called::Narration(reply));
        }
        if self.run_tools(&reply, conversation) {
            reply.tool_calls.clear();
            return Ok(Called::Narration(reply));
        }
        Ok(Called::Again)
    }

    /// Runs the tools a reply calls (at most [`MAX_TOOLS_PER_REPLY`]) and adds the call and its
    /// results to the conversation; whether a tool ended the turn.
    fn run_tools(&mut self, reply: &Reply, conversation: &mut Conversation) -> bool {
        conversation.messages.push(json!({
            "role": "assistant",
            "content": reply.text,
            "toolCalls": reply.tool_calls.iter().map(|c| json!({"id": c.id, "name": c.name, "arguments": c.input.to_string()})).collect::<Vec<_>>(),
        }));
        let mut stop = false;
        for (index, tool_call) in reply.tool_calls.iter().enumerate() {
            let result = if index >= MAX_TOOLS_PER_REPLY {
                json!({"success": false, "error": format!("at most {MAX_TOOLS_PER_REPLY} tool calls are run per reply"), "code": "DENIED"}).to_string()
            } else {
                let end = self.plugins.run_tool(
                    tool_call,
                    STORY_RUNTIME,
                    &mut self.effects,
                    &mut self.steps,
                );
                stop |= end.terminate || end.done;
                end.result
            };
            conversation
                .messages
                .push(json!({"role": "tool", "toolCallId": tool_call.id, "content": result}));
            if stop {
                break;
            }
        }
        stop
    }

    /// `PostRuntime` (which may rewrite the narration) and `TurnStop`.
    fn close(&mut self, mut reply: Reply) -> Reply {
        let runtime = STORY_RUNTIME;
        let proposals: Vec<&Value> = self.effects.proposals.iter().map(|(_, p)| p).collect();
        let payload = json!({"result": {"pluginId": runtime, "runtimeId": runtime, "status": "success", "output": {"text": reply.text}, "proposals": proposals}});
        let post = self.dispatch("PostRuntime", payload);
        if let Some(text) = post
            .replaced("result")
            .and_then(|r| r.pointer("/output/text"))
            .and_then(Value::as_str)
        {
            reply.text = text.to_string();
        }
        self.dispatch(
            "TurnStop",
            json!({
                "runtimeResults": [{"pluginId": runtime, "runtimeId": runtime, "status": "success", "output": {"text": reply.text}}],
                "durationMs": self.started.elapsed().as_millis() as u64,
            }),
        );
        reply
    }
}

/// The scripted model's answer to the turn's `call`-th model call (1-based).
fn scripted_answer(calls: &[ScriptedCall], turn: u64, call: u32) -> Reply {
    let index = (call as usize - 1).min(calls.len().saturating_sub(1));
    let scripted = calls.get(index).cloned().unwrap_or_default();
    let tool_calls: Vec<ToolCall> = scripted
        .tools
        .iter()
        .enumerate()
        .map(|(i, t)| ToolCall {
            id: format!("call-t{turn}-{call}-{}", i + 1),
            name: t.name.clone(),
            input: t.input.clone(),
        })
        .collect();
    Reply {
        finish_reason: if tool_calls.is_empty() {
            "stop"
        } else {
            "tool_use"
        }
        .into(),
        text: scripted.text.unwrap_or_default(),
        usage: None,
        tool_calls,
        streamed: None,
    }
}

/// A reply as hooks see it: `{content, toolCalls, finishReason}`.
fn response_json(reply: &Reply) -> Value {
    json!({
        "content": reply.text,
        "toolCalls": reply.tool_calls.iter().map(|c| json!({"id": c.id, "name": c.name, "arguments": c.input.to_string()})).collect::<Vec<_>>(),
        "finishReason": reply.finish_reason,
    })
}

/// A reply with a hook's `replace.response` applied (`content`: null or text; `toolCalls`).
fn rewritten_reply(reply: &Reply, rewritten: &Value) -> Reply {
    let mut out = reply.clone();
    if let Some(content) = rewritten.get("content") {
        out.text = content.as_str().unwrap_or_default().to_string();
    }
    if let Some(calls) = rewritten.get("toolCalls").and_then(Value::as_array) {
        out.tool_calls = calls
            .iter()
            .map(|c| ToolCall {
                id: c["id"].as_str().unwrap_or_default().to_string(),
                name: c["name"].as_str().unwrap_or_default().to_string(),
                input: match &c["arguments"] {
                    Value::String(text) => {
                        serde_json::from_str(text).unwrap_or(Value::String(text.clone()))
                    }
                    other => other.clone(),
                },
            })
            .collect();
    }
    out
}
