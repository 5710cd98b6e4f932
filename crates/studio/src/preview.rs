//! The full preview of a session: world context, history transforms, prompt segments and their
//! assembly for a chosen runtime, the next turn's assembly for cache stability, and every UI
//! slot — each with the provider calls that produced it. This is what the CLI prints and the
//! desktop panels show.

use crate::workspace::{Calls, Workspace};
use covel_kernel::contract::{PointId, SlotId};
use covel_kernel::prompt::template::{self, TemplateScope};
use covel_kernel::prompt::{
    self, AnthropicRequest, Assembly, AssemblyInput, CacheReport, RequestOptions, RuntimeView,
    Segment, SegmentRow,
};
use covel_kernel::runner::{CallRecord, RunError, RunOptions, RunRequest, RunResult};
use serde::Serialize;
use serde_json::{Value, json};
use std::time::Instant;

/// Which runtime the prompt is assembled for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "kind", content = "id")]
pub enum RuntimeTarget {
    /// The session's story runtime (the narrator).
    Story,
    /// The runtime of a plugin.
    Plugin(String),
    /// A runtime with this output contract.
    Contract(String),
}

impl RuntimeTarget {
    /// Parses `story`, `plugin:ID` or `contract:C`.
    pub fn parse(text: &str) -> Option<RuntimeTarget> {
        match text.split_once(':') {
            None if text == "story" => Some(RuntimeTarget::Story),
            Some(("plugin", id)) if !id.is_empty() => Some(RuntimeTarget::Plugin(id.to_string())),
            Some(("contract", c)) if !c.is_empty() => Some(RuntimeTarget::Contract(c.to_string())),
            _ => None,
        }
    }
}

/// The system prompt view.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SystemView {
    pub blocks: Vec<prompt::Block>,
    pub tokens: u64,
}

impl SystemView {
    /// The system prompt as one text (the kernel's rule, `prompt::system_text`).
    pub fn text(&self) -> String {
        prompt::system_text(&self.blocks)
    }
}

/// The assembled prompt with its request bodies.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptView {
    pub system: SystemView,
    pub messages: Vec<prompt::Message>,
    pub turn_context: String,
    pub requests: Requests,
}

impl PromptView {
    /// The system prompt followed by the turn context: the system-role text the compaction
    /// estimate counts for a turn.
    pub fn system_and_turn_context(&self) -> String {
        self.system_and_turn_context_pieces().collect()
    }

    /// The tally of [`PromptView::system_and_turn_context`], read piece by piece (what the
    /// compaction estimate needs, without building the text).
    pub fn system_and_turn_context_tally(&self) -> covel_kernel::sdk::TokenTally {
        self.system_and_turn_context_pieces()
            .map(covel_kernel::sdk::TokenTally::of)
            .sum()
    }

    /// The system prompt's pieces, a blank line, then the turn context.
    fn system_and_turn_context_pieces(&self) -> impl Iterator<Item = &str> {
        prompt::text_pieces(&self.system.blocks).chain(["\n\n", self.turn_context.as_str()])
    }
}

/// The request bodies as sent, and the Anthropic request they were serialized from, block by
/// block with where each came from (what the forecast and the panels' counts read).
#[derive(Debug, Clone, Serialize)]
pub struct Requests {
    pub anthropic: Value,
    pub openai: Value,
    #[serde(skip)]
    pub anthropic_request: prompt::AnthropicRequest,
}

/// The world-context snapshot and who provided it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorldContextView {
    pub snapshot: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provided_by: Option<String>,
    /// Why the turn would fail (a failing provider, or a broken dimension-provider rule).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub calls: Vec<CallRecord>,
}

pub use covel_kernel::slot_host::{SlotView, revision_of};

/// A run of the preview that failed as a whole: an extension point whose input failed its
/// schema, conflicting single providers, a failed `fail-turn` point, a broken pipeline. Every
/// one is shown (JSON, text, the app) and makes `covel preview` exit 1.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PreviewError {
    pub point: PointId,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slot: Option<SlotId>,
    /// `this-turn` (what the prompt shows) or `next-turn` (the assembly for cache stability).
    pub turn: &'static str,
    pub error: RunError,
    /// The error as one sentence.
    pub message: String,
}

impl PreviewError {
    fn of(result: &RunResult, turn: &'static str) -> Option<PreviewError> {
        result.error.as_ref().map(|error| PreviewError {
            point: result.point,
            slot: result.slot,
            turn,
            error: error.clone(),
            message: error.to_string(),
        })
    }
}

/// Where one assembled turn records its calls and failed runs.
struct TurnLog<'a> {
    calls: &'a mut Vec<CallRecord>,
    errors: &'a mut Vec<PreviewError>,
    /// `this-turn` or `next-turn`.
    turn: &'static str,
    /// Where the turn's segment calls' and assembly's times are added.
    timings: &'a mut TurnTimings,
}

/// The parts of assembling turns that [`PreviewTimings`] reports, summed over the turns.
#[derive(Default)]
struct TurnTimings {
    segment_calls_ms: f64,
    assembly_ms: f64,
}

/// What the bench's quick preview computed.
#[derive(Debug, Clone, PartialEq)]
pub struct QuickPreview {
    pub segments: usize,
    /// Non-null slot values.
    pub slots: usize,
    pub world: bool,
    /// Runs that failed as a whole.
    pub errors: Vec<PreviewError>,
}

/// The image flow and who provides it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageFlowView {
    pub flow: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provided_by: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub calls: Vec<CallRecord>,
}

/// Timings of one preview, in milliseconds.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PreviewTimings {
    pub world_context_ms: f64,
    /// This turn: its history transforms, segment calls and assembly.
    pub segments_ms: f64,
    /// The next turn, the same, and the cache analysis between the two.
    pub next_turn_ms: f64,
    pub slots_ms: f64,
    pub total_ms: f64,
    /// Of both turns, waiting on the `prompt.segment@1` calls (memo answers included): what
    /// grows with the number of providers however little changed.
    pub segment_calls_ms: f64,
    /// Of both turns, reading the segments and assembling the prompt: what grows with the
    /// prompt's size.
    pub assembly_ms: f64,
}

/// Everything the providers contribute for one session.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Preview {
    pub session: String,
    pub runtime: RuntimeTarget,
    pub turn_id: String,
    pub prompt: PromptView,
    pub segments: Vec<SegmentRow>,
    pub cache: CacheReport,
    pub world_context: WorldContextView,
    pub slots: Vec<SlotView>,
    /// The session's `media.image-flow@1` provider answer (null when none).
    pub image_flow: ImageFlowView,
    /// History messages that `prompt.history-transform@1` providers rewrote, dropped or added
    /// for this turn, with the providers that ran.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub history_rewrites: Vec<HistoryRewrite>,
    /// Every provider call of the preview, in the order they ran.
    pub calls: Vec<CallRecord>,
    /// Runs that failed as a whole, in the order they ran (empty when every run completed).
    pub errors: Vec<PreviewError>,
    pub timings: PreviewTimings,
}

/// How a history transform changed one message.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HistoryRewrite {
    /// The message id (`null` for a message without one).
    pub id: Value,
    /// `rewritten`, `dropped` or `added`.
    pub change: &'static str,
    /// The transform providers that ran successfully (`plugin/id`), in pipeline order.
    pub providers: Vec<String>,
}

/// Compares the history before and after the transform pipeline, message by message (by id).
fn history_rewrites(
    before: &[Value],
    after: &[Value],
    calls: &[CallRecord],
) -> Vec<HistoryRewrite> {
    let providers: Vec<String> = calls
        .iter()
        .filter(|c| c.outcome == covel_kernel::runner::Outcome::Success)
        .map(|c| format!("{}/{}", c.plugin_id, c.provider_id))
        .collect();
    if providers.is_empty() {
        return Vec::new();
    }
    let id_of = |m: &Value| m.get("id").cloned().unwrap_or(Value::Null);
    let mut out = Vec::new();
    for message in after {
        let change = match before.iter().find(|b| id_of(b) == id_of(message)) {
            Some(original) if original == message => continue,
            Some(_) => "rewritten",
            None => "added",
        };
        out.push(HistoryRewrite {
            id: id_of(message),
            change,
            providers: providers.clone(),
        });
    }
    for message in before
        .iter()
        .filter(|b| !after.iter().any(|a| id_of(a) == id_of(b)))
    {
        out.push(HistoryRewrite {
            id: id_of(message),
            change: "dropped",
            providers: providers.clone(),
        });
    }
    out
}

fn ms(start: Instant) -> f64 {
    start.elapsed().as_secs_f64() * 1000.0
}

const DEFAULT_STORY_PROMPT: &str = "You are the narrator of an interactive story. Describe what the player's character perceives and let the player decide what they do.";
const DEFAULT_FOLLOWING: &str = "I continue.";

impl Workspace {
    /// The player message a preview assembles this turn for: the session's next message, or —
    /// when there is none (a session without `nextMessage`, or right after a played turn) — the
    /// following message, else a generic continuation. Never empty: the Anthropic API refuses an
    /// empty text block, and a prompt showing "player input · 0 tokens" is not the next turn.
    pub fn previewed_player_message(&self) -> String {
        let next = self.session.next_message.trim();
        if !next.is_empty() {
            return self.session.next_message.clone();
        }
        self.session
            .following_message
            .clone()
            .filter(|m| !m.trim().is_empty())
            .unwrap_or_else(|| DEFAULT_FOLLOWING.to_string())
    }

    /// The id of the turn after the session's history.
    pub fn next_turn_id(&self, history: &[Value]) -> String {
        let mut turns: Vec<&str> = history
            .iter()
            .filter_map(|m| m.get("turnId").and_then(Value::as_str))
            .collect();
        turns.dedup();
        format!("turn-{}", turns.len() + 1)
    }

    fn runtime_view(&self, target: &RuntimeTarget) -> (RuntimeView, String) {
        let packages = || self.active_plugins().filter_map(|p| p.package.as_ref());
        // A plugin's body in the session's language, with its template variables filled.
        let body_of = |p: &covel_kernel::package::Package| -> String {
            let settings = self.plugin_settings(p);
            let scope = TemplateScope {
                world: self.session.world.world_record.as_ref(),
                user_settings: Some(&settings),
            };
            template::render(p.body_for(&self.session.locale).trim(), scope)
        };
        match target {
            RuntimeTarget::Story => {
                let scope = TemplateScope {
                    world: self.session.world.world_record.as_ref(),
                    user_settings: None,
                };
                (
                    RuntimeView::story(),
                    template::render(
                        self.session
                            .story_prompt
                            .as_deref()
                            .unwrap_or(DEFAULT_STORY_PROMPT),
                        scope,
                    ),
                )
            }
            RuntimeTarget::Plugin(id) => {
                let package = packages().find(|p| p.id() == id);
                let output_contract = package.and_then(|p| {
                    p.manifest
                        .runtimes
                        .iter()
                        .find_map(|r| r.output_contract.clone())
                });
                let story_output = output_contract.as_deref() == Some("narrative-engine@1");
                let body = package.map(body_of).unwrap_or_default();
                (
                    RuntimeView {
                        plugin_id: Some(id.clone()),
                        story_output,
                        output_contract,
                    },
                    body,
                )
            }
            RuntimeTarget::Contract(contract) => {
                let package = packages().find(|p| {
                    p.manifest
                        .runtimes
                        .iter()
                        .any(|r| r.output_contract.as_deref() == Some(contract.as_str()))
                });
                let view = RuntimeView {
                    plugin_id: package.map(|p| p.id().to_string()),
                    story_output: contract == "narrative-engine@1",
                    output_contract: Some(contract.clone()),
                };
                (view, package.map(body_of).unwrap_or_default())
            }
        }
    }

    /// Why a runtime cannot be previewed (a plugin that is not active, an ill-formed contract
    /// id), or `None` when it can.
    pub fn runtime_unavailable(&self, target: &RuntimeTarget) -> Option<String> {
        match target {
            RuntimeTarget::Story => None,
            RuntimeTarget::Plugin(id) => {
                if self.resolution.is_active(id) {
                    return None;
                }
                if let Some(rejection) = self.resolution.rejected.iter().find(|r| r.plugin == *id) {
                    return Some(format!(
                        "plugin `{id}` is not active in this session: {}",
                        rejection.message
                    ));
                }
                if self.plugins.iter().any(|p| p.name == *id) {
                    return Some(format!(
                        "plugin `{id}` is not active in this session (not requested, and nothing requires it)"
                    ));
                }
                Some(format!("there is no plugin `{id}` in the folder"))
            }
            RuntimeTarget::Contract(contract) => {
                covel_kernel::contract::ContractId::parse(contract)
                    .err()
                    .map(|e| e.to_string())
            }
        }
    }

    /// What an author should know about a runtime that can be previewed: a contract that no
    /// active plugin's runtime produces is assembled all the same (what a `{contract: …}`
    /// audience segment gives a runtime another package provides), and says so.
    pub fn runtime_note(&self, target: &RuntimeTarget) -> Option<String> {
        let RuntimeTarget::Contract(contract) = target else {
            return None;
        };
        let produced = self
            .active_plugins()
            .filter_map(|p| p.package.as_ref())
            .any(|p| {
                p.manifest
                    .runtimes
                    .iter()
                    .any(|r| r.output_contract.as_deref() == Some(contract.as_str()))
            });
        (!produced).then(|| {
            format!(
                "no active plugin has a runtime whose output contract is `{contract}`: this is the prompt such a runtime would get from another package (segments with `audience: {{contract: {contract}}}` included)"
            )
        })
    }

    /// Runs the world context, enforcing the dimension-provider rule.
    pub fn world_context(&self) -> WorldContextView {
        self.world_context_in(&self.calls())
    }

    fn world_context_in(&self, calls: &Calls<'_>) -> WorldContextView {
        self.world_context_run(calls).0
    }

    fn world_context_run(&self, calls: &Calls<'_>) -> (WorldContextView, Option<PreviewError>) {
        let result = calls.run(PointId::SessionWorldContext, json!({}), None, None);
        let failed = PreviewError::of(&result, "this-turn");
        let error = result
            .error
            .as_ref()
            .map(ToString::to_string)
            .or_else(|| self.dimension_rule_violation());
        (
            WorldContextView {
                snapshot: result.result,
                provided_by: result.provided_by,
                error,
                calls: result.calls,
            },
            failed,
        )
    }

    /// Projects every kernel slot from the committed state (no turn).
    pub fn slots(&self) -> Vec<SlotView> {
        self.calls().project_slots(&SlotId::ALL, &[], None)
    }

    fn assemble_turn(
        &self,
        scope: &Calls<'_>,
        target: &RuntimeTarget,
        history: &[Value],
        turn_id: &str,
        player_message: &str,
        log: TurnLog<'_>,
    ) -> (Assembly, Vec<HistoryRewrite>) {
        let TurnLog {
            calls,
            errors,
            turn,
            timings,
        } = log;
        let mut transformed = scope.run(
            PointId::PromptHistoryTransform,
            json!({"messages": history, "turnId": turn_id}),
            None,
            Some(turn_id),
        );
        errors.extend(PreviewError::of(&transformed, turn));
        let messages = match transformed.result.get_mut("messages").map(Value::take) {
            Some(Value::Array(messages)) => messages,
            _ => Vec::new(),
        };
        let rewrites = history_rewrites(history, &messages, &transformed.calls);
        calls.append(&mut transformed.calls);
        let t = Instant::now();
        let mut segments = scope.segments(
            json!({"turnId": turn_id, "playerMessage": player_message}),
            Some(turn_id),
        );
        timings.segment_calls_ms += ms(t);
        errors.extend(PreviewError::of(&segments, turn));
        calls.append(&mut segments.calls);
        let t = Instant::now();
        let (runtime, body) = self.runtime_view(target);
        let lore = self
            .session
            .world
            .world_record
            .as_ref()
            .and_then(|w| w.get("lore"))
            .and_then(Value::as_str);
        // Without the memo every output is a new value, so no read could be taken again.
        let segments = if self.limits.memo {
            self.segment_reads().parse_parts(&segments.parts)
        } else {
            Segment::parse_parts(&segments.parts)
        };
        let assembly = prompt::assemble(AssemblyInput {
            segments,
            runtime: &runtime,
            preamble: prompt::FRAMEWORK_PREAMBLE,
            body: &body,
            lore,
            history: &messages,
            summaries: &self.session.history.summaries,
            player_message,
        });
        timings.assembly_ms += ms(t);
        (assembly, rewrites)
    }

    /// The minimum cacheable prefix of the story model.
    pub fn min_cacheable_tokens(&self) -> u32 {
        let model = &self.session.models.story;
        model.min_cacheable_tokens.unwrap_or_else(|| {
            let name = model.model.as_deref().unwrap_or_default();
            if model.backend == "anthropic" && name.contains("haiku") {
                2048
            } else {
                1024
            }
        })
    }

    /// What an upstream-style host computes for a preview, for like-for-like comparisons with
    /// the Node yardstick: prompt segments, the five stage/status slots, and the world context.
    pub fn quick_preview(&self, player_message: &str) -> QuickPreview {
        let scope = self.calls();
        let turn = Some("t1");
        let mut errors = Vec::new();
        let segments = scope.segments(
            json!({"turnId": "t1", "playerMessage": player_message}),
            turn,
        );
        errors.extend(PreviewError::of(&segments, "this-turn"));
        // The five slots and the world context: chains that share no engine run in parallel.
        let stage = [
            SlotId::StageBackdrop,
            SlotId::StageCast,
            SlotId::StageChoices,
            SlotId::SessionSummary,
            SlotId::StageMusic,
        ];
        let mut requests: Vec<RunRequest> = stage
            .iter()
            .map(|&slot| covel_kernel::slot_host::slot_run(slot, &[]))
            .collect();
        requests.push(RunRequest {
            point: PointId::SessionWorldContext,
            input: json!({}),
            options: RunOptions::default(),
        });
        let results = scope.run_all(requests, turn);
        errors.extend(
            results
                .iter()
                .filter_map(|r| PreviewError::of(r, "this-turn")),
        );
        let (stage_results, world) = results.split_at(stage.len());
        let slots = stage_results.iter().filter(|r| !r.result.is_null()).count();
        QuickPreview {
            segments: segments
                .parts
                .iter()
                .map(|part| part.output.as_array().map_or(0, Vec::len))
                .sum(),
            slots,
            world: world.iter().any(|w| !w.result.is_null()),
            errors,
        }
    }

    /// The full preview for one runtime: this turn assembled (with the world context before
    /// it), the next turn assembled after a scripted exchange (the cache report compares the
    /// two), the slots projected and the image flow run.
    pub fn preview(&self, target: &RuntimeTarget) -> Preview {
        let started = Instant::now();
        self.segment_reads().next_generation();
        let scope = self.calls();
        let mut calls = Vec::new();
        let mut errors = Vec::new();
        let mut turn_timings = TurnTimings::default();

        let t = Instant::now();
        let (world_context, world_error) = self.world_context_run(&scope);
        errors.extend(world_error);
        calls.extend(world_context.calls.iter().cloned());
        let world_context_ms = ms(t);

        let history: &[Value] = &self.session.history.messages;
        let turn_id = self.next_turn_id(history);
        let say = self.previewed_player_message();
        let t = Instant::now();
        let (this, rewrites) = self.assemble_turn(
            &scope,
            target,
            history,
            &turn_id,
            &say,
            TurnLog {
                calls: &mut calls,
                errors: &mut errors,
                turn: "this-turn",
                timings: &mut turn_timings,
            },
        );
        let segments_ms = ms(t);

        let t = Instant::now();
        let (next_history, next_turn, following) = self.after_this_turn(history, &turn_id, &say);
        let mut next_calls = Vec::new();
        let (next, _) = self.assemble_turn(
            &scope,
            target,
            &next_history,
            &next_turn,
            &following,
            TurnLog {
                calls: &mut next_calls,
                errors: &mut errors,
                turn: "next-turn",
                timings: &mut turn_timings,
            },
        );
        let this_request = AnthropicRequest::of(&this);
        let tools = self.offered_tools();
        let cache = self.cache_report(&this, &this_request, &next, &tools);
        let next_turn_ms = ms(t);

        let t = Instant::now();
        let slots = slot_views(&scope, &mut calls, &mut errors);
        let slots_ms = ms(t);
        let image_flow = image_flow_view(&scope, &mut calls, &mut errors);

        // The request bodies read the assembly; then its parts move into the view.
        let options = self.request_options();
        let mut requests = Requests {
            anthropic: this_request.body(&options),
            openai: prompt::openai_request(&this, &options),
            anthropic_request: this_request,
        };
        crate::turn::requests::add_tools(&mut requests.anthropic, &mut requests.openai, &tools);
        let prompt_view = PromptView {
            system: SystemView {
                tokens: this.blocks.iter().map(|b| b.tokens).sum(),
                blocks: this.blocks,
            },
            messages: this.messages,
            turn_context: this.turn_context,
            requests,
        };
        Preview {
            session: self.session.id.clone(),
            runtime: target.clone(),
            turn_id,
            prompt: prompt_view,
            segments: this.segments,
            cache,
            world_context,
            slots,
            image_flow,
            history_rewrites: rewrites,
            calls,
            errors,
            timings: PreviewTimings {
                world_context_ms,
                segments_ms,
                next_turn_ms,
                slots_ms,
                total_ms: ms(started),
                segment_calls_ms: turn_timings.segment_calls_ms,
                assembly_ms: turn_timings.assembly_ms,
            },
        }
    }

    /// The next turn as the cache report sees it: the history with one more exchange (this
    /// turn's player message and the scripted reply), the next turn's id and the following
    /// player message.
    fn after_this_turn(
        &self,
        history: &[serde_json::Value],
        turn_id: &str,
        say: &str,
    ) -> (Vec<serde_json::Value>, String, String) {
        let mut next_history = history.to_vec();
        let reply = crate::models::scripted_calls_numbered(
            &self.session.models.story.script,
            0,
            crate::models::turn_number_of(turn_id).unwrap_or(1),
            say,
        )
        .last()
        .and_then(|c| c.text.clone())
        .unwrap_or_default();
        let order = next_history.len();
        next_history.extend(covel_kernel::session_history::exchange(
            &self.session.id,
            turn_id,
            say,
            &reply,
            order,
        ));
        let next_turn = self.next_turn_id(&next_history);
        let following = self
            .session
            .following_message
            .clone()
            .unwrap_or_else(|| DEFAULT_FOLLOWING.to_string());
        (next_history, next_turn, following)
    }

    /// The tools the story model is offered in every request: the active plugins'.
    fn offered_tools(&self) -> Vec<crate::turn::OfferedTool> {
        let active: Vec<_> = self.active_plugins().collect();
        crate::turn::tools::offered_tools(
            active.iter().flat_map(|p| &p.registrations.tool_specs),
            active
                .iter()
                .filter_map(|p| p.package.as_ref())
                .any(|pkg| !pkg.manifest.declared.events.is_empty()),
        )
    }

    /// The cache report of this turn's request against the next turn's, its prefixes counted
    /// as every panel counts them (see `crate::counts`): each block's text, and what the
    /// request adds around it there (Claude's framing, the tool definitions).
    fn cache_report(
        &self,
        this: &Assembly,
        this_request: &AnthropicRequest,
        next: &Assembly,
        tools: &[crate::turn::OfferedTool],
    ) -> prompt::CacheReport {
        let (profile, _) = crate::counts::counter_for(self.session.models.story.model.as_deref());
        let counting = crate::forecast::Counting::new(&profile, &self.counter);
        let anthropic_tools = {
            let (mut anthropic, mut openai) = (serde_json::json!({}), serde_json::json!({}));
            crate::turn::requests::add_tools(&mut anthropic, &mut openai, tools);
            anthropic["tools"].take()
        };
        let first_block = std::cell::Cell::new(true);
        prompt::analyse(
            this,
            this_request,
            next,
            self.min_cacheable_tokens(),
            &|place, text| {
                let first = first_block.replace(false);
                counting.tokens(text)
                    + crate::forecast::claude_added_at(&counting, &anthropic_tools, place, first)
            },
        )
    }

    /// How the request bodies address the story model.
    fn request_options(&self) -> RequestOptions {
        let story = &self.session.models.story;
        RequestOptions {
            model: story.model.clone().unwrap_or_else(|| "story".into()),
            max_tokens: story.reserved_for_response,
            cache_ttl: story.cache_ttl,
            prompt_cache_key: story.prompt_cache_key.clone(),
        }
    }
}

/// Every slot projected, each slot's chain and error logged once: a keyed slot
/// (`character.visual@1`, split into one view per character) carries its run's chain in each
/// of its views, so it is taken from the slot's first view, keyed or not.
fn slot_views(
    scope: &Calls<'_>,
    calls: &mut Vec<CallRecord>,
    errors: &mut Vec<PreviewError>,
) -> Vec<SlotView> {
    let slots = scope.project_slots(&SlotId::ALL, &[], None);
    let once = slots
        .iter()
        .enumerate()
        .filter(|(i, s)| *i == 0 || slots[i - 1].slot != s.slot)
        .map(|(_, s)| s);
    calls.extend(once.clone().flat_map(|s| s.chain.iter().cloned()));
    errors.extend(once.filter_map(|s| {
        s.error.clone().map(|error| PreviewError {
            point: PointId::UiSlot,
            slot: Some(s.slot),
            turn: "this-turn",
            message: error.to_string(),
            error,
        })
    }));
    slots
}

/// The image flow's run, its calls and error logged.
fn image_flow_view(
    scope: &Calls<'_>,
    calls: &mut Vec<CallRecord>,
    errors: &mut Vec<PreviewError>,
) -> ImageFlowView {
    let flow = scope.run(PointId::MediaImageFlow, json!({}), None, None);
    calls.extend(flow.calls.iter().cloned());
    errors.extend(PreviewError::of(&flow, "this-turn"));
    ImageFlowView {
        flow: flow.result,
        provided_by: flow.provided_by,
        error: flow.error.map(|e| e.to_string()),
        calls: flow.calls,
    }
}
