//! The cache-and-cost forecast (`covel forecast`): a session played for N turns against a named
//! model, and for every turn and cache breakpoint the tokens in the cached prefix, whether the
//! provider will read, write or miss the cache and why, the input, cache-write and cache-read
//! tokens and their cost, the totals against no caching, a per-plugin ledger, and advice on
//! where the (at most four) breakpoints save most and what changing a segment's volatility
//! would save.
//!
//! The forecast compares consecutive assembled requests itself — the Anthropic body with its
//! `cache_control` blocks, or the OpenAI body's messages — block by block, so a change anywhere
//! before a breakpoint (system blocks, depth segments inside the history) is seen where the
//! provider would see it. Anthropic's explicit breakpoints are modelled with the 20-block
//! look-back, the model's minimum cacheable prefix and the TTL at an assumed pace of play;
//! OpenAI's automatic prefix caching with its 1 024-token minimum and 128-token steps. Model
//! facts come from the dated facts file ([`crate::facts`]). A breakpoint that is not read is
//! explained against the prefix the previous turn cached at the same place: the first block
//! that differs before its end — its segment and plugin, and whether it changed, moved or is
//! new — else the look-back, the TTL or a new prefix; and the advice charges every cache write
//! to its cause. When turns carry the usage a real
//! (or replayed) backend reported, it is shown beside the prediction and a mismatch names the
//! first segment the provider's cache did not cover as predicted.

use crate::facts::{Caching, ModelProfile};
use crate::parts::{self, Part};
use crate::playtest::Playtest;
use crate::preview::Preview;
use crate::scripts::Script;
use crate::tokens::{CountStats, Encoding, Estimate, EstimateRule, TokenCounter};
use crate::workspace::Workspace;
use covel_kernel::prompt::{Place, Source};
use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap};

/// How the session is played and priced.
#[derive(Debug, Clone)]
pub struct ForecastOptions {
    /// Seconds between turns (the assumed pace of play, for TTLs).
    pub pace_seconds: f64,
    /// Anthropic cache TTL: `5m` or `1h`.
    pub ttl: String,
    /// The assumed reply length in tokens, for turns whose usage was not reported (`None`: the
    /// played reply's text, counted).
    pub reply_tokens: Option<u64>,
}

impl Default for ForecastOptions {
    fn default() -> Self {
        ForecastOptions {
            pace_seconds: 60.0,
            ttl: "5m".into(),
            reply_tokens: None,
        }
    }
}

/// One played turn as the forecast sees it.
#[derive(Debug, Clone)]
pub struct PlayedTurn {
    pub turn_id: String,
    pub say: String,
    pub preview: Preview,
    /// The usage the backend reported for this request (`usage` of the API answer to the turn's
    /// first call, see [`usage_of_assembled_request`]), if it was a real or replayed backend.
    pub usage: Option<Value>,
    /// The reply's text, when the turn was answered.
    pub reply: Option<String>,
    /// The preview was recomputed with plugins reloaded after the turn was played, so it can
    /// differ from the prompt that was sent (see `LiveStudio::turn_prompt`).
    pub with_newer_plugins: bool,
}

/// The usage reported for the request a turn's forecast predicts: the turn's first model call,
/// when it sent the assembled prompt as it is (nothing added after it, nothing a hook
/// replaced). A tool round or a correction sends more than the prompt, so its usage says
/// nothing about the prediction; a scripted model reports none.
pub fn usage_of_assembled_request(steps: &[crate::turn::record::LoopStep]) -> Option<Value> {
    let first = steps.iter().find_map(|step| match step {
        crate::turn::record::LoopStep::Model(model) => Some(model),
        _ => None,
    })?;
    if !first.added.is_empty() || !first.replaced.is_empty() {
        return None;
    }
    first.reply.as_ref()?.usage.clone()
}

/// Plays `turns` turns of a session: its scripted turns (`test.turns`, with their replies)
/// first, then `nextMessage`, `followingMessage` and a generic continuation, answered by the
/// session's story model (scripted, replay, or a real backend). Stops at a failed turn and
/// returns its error.
pub fn play(workspace: Workspace, turns: Option<usize>) -> (Vec<PlayedTurn>, Option<String>) {
    let scripted = workspace
        .session
        .test
        .as_ref()
        .map(|t| t.turns.clone())
        .unwrap_or_default();
    let count = turns.unwrap_or(if scripted.is_empty() {
        3
    } else {
        scripted.len()
    });
    let mut extra = vec![
        workspace.session.next_message.clone(),
        workspace
            .session
            .following_message
            .clone()
            .unwrap_or_default(),
    ];
    extra.retain(|m| !m.trim().is_empty());
    let mut play = Playtest::new(workspace);
    let mut out = Vec::new();
    for index in 0..count {
        let (say, reply) = match scripted.get(index) {
            Some(turn) => match play.scripted_message(turn) {
                Ok(say) => (say, turn.reply.clone()),
                Err(error) => return (out, Some(format!("turn {}: {error}", index + 1))),
            },
            None => (
                extra
                    .get(index - scripted.len())
                    .cloned()
                    .unwrap_or_else(|| "I continue.".into()),
                None,
            ),
        };
        let report = play.play_scripted(&say, reply.as_ref());
        if let Some(error) = report.error {
            return (out, Some(format!("{}: {error}", report.turn_id)));
        }
        out.push(PlayedTurn {
            turn_id: report.turn_id,
            say,
            reply: report.reply.as_ref().map(|r| r.text.clone()),
            usage: usage_of_assembled_request(&report.steps),
            preview: report.preview,
            with_newer_plugins: false,
        });
    }
    (out, None)
}

// ---- the request as a list of blocks --------------------------------------------------------

/// A piece of a block, with its tokens.
#[derive(Debug, Clone)]
struct ItemPart {
    part: Part,
    tokens: u64,
}

/// Where a block sits, for breakpoint layouts.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Slot {
    System(String),
    HistoryNewest,
    Other,
}

/// One content block of a request (Anthropic) or one message (OpenAI).
#[derive(Debug, Clone)]
pub(crate) struct Item {
    label: String,
    /// Identity: role, message boundary and content, without cache markers.
    key: Vec<u8>,
    /// Content for re-keying in simulations (role and message boundary prefix).
    tag: String,
    pub(crate) tokens: u64,
    /// Claude: the estimate's error bar on `tokens` (OpenAI counts are exact: both `tokens`).
    pub(crate) low: u64,
    pub(crate) high: u64,
    /// What no block's text holds but the request adds on this block (Claude's framing, the
    /// tool definitions): in `tokens`, `low` and `high`, and kept apart so a panel can show a
    /// block's own text.
    pub(crate) added: Estimate,
    breakpoint: bool,
    slot: Slot,
    /// The assembly's message this block sends (none for the system prompt).
    pub(crate) message: Option<usize>,
    parts: Vec<ItemPart>,
    /// Token ids for OpenAI prefix matching within a message (lazily filled).
    content: String,
}

/// The model's counter: exact for OpenAI encodings, Claude's stated estimate over an exact base
/// count. Every token number the studio shows comes from here ([`crate::counts`] for the panels).
pub(crate) struct Counting<'a> {
    counter: &'a TokenCounter,
    encoding: Encoding,
    estimate: Option<EstimateRule>,
}

impl<'a> Counting<'a> {
    pub(crate) fn new(profile: &ModelProfile, counter: &'a TokenCounter) -> Counting<'a> {
        Counting {
            counter,
            encoding: profile.encoding(),
            estimate: profile.estimate(),
        }
    }
}

impl Counting<'_> {
    /// Whether counts are exact (no estimate's range).
    pub(crate) fn exact(&self) -> bool {
        self.estimate.is_none()
    }

    fn base(&self, text: &str) -> u64 {
        self.counter.count(self.encoding, text)
    }

    /// The model's count of a text: exact, or the estimate with its error bar.
    pub(crate) fn estimate(&self, text: &str) -> Estimate {
        match &self.estimate {
            Some(rule) => rule.estimate(self.counter, self.encoding, text),
            None => Estimate::exact(self.base(text)),
        }
    }

    pub(crate) fn tokens(&self, text: &str) -> u64 {
        self.estimate(text).tokens
    }
}

impl Item {
    /// Adds tokens the text of no block accounts for (tool definitions, framing) to this block,
    /// as a part of their own.
    fn add(&mut self, from: Source, text: String, e: Estimate) {
        self.tokens += e.tokens;
        self.low += e.low;
        self.high += e.high;
        self.added = self.added + e;
        self.parts.push(ItemPart {
            part: Part { from, text },
            tokens: e.tokens,
        });
    }
}

/// What Claude's framing and the tool definitions (`tools`, the Anthropic body's list) add on a
/// block of the request at `place`, as [`add_claude_framing`] puts them: the request's framing
/// and the tools on the first block, each further message's markers on its first block (0 for
/// exact counts).
pub(crate) fn claude_added_at(
    counting: &Counting<'_>,
    tools: &Value,
    place: &covel_kernel::prompt::Place,
    first: bool,
) -> u64 {
    let Some(rule) = counting.estimate else {
        return 0;
    };
    let mut added = 0;
    if first {
        added += rule.request.tokens;
        if let Some(list) = tools.as_array().filter(|t| !t.is_empty()) {
            let json = Value::Array(list.clone()).to_string();
            added += rule
                .estimate_as(Script::Code, counting.counter, counting.encoding, &json)
                .tokens
                + rule.tools.tokens;
        }
    }
    if let covel_kernel::prompt::Place::Message { message, block, .. } = place
        && *message > 0
        && *block == 0
    {
        added += rule.message.tokens;
    }
    added
}

/// Claude's framing and tools, which no block's text holds: the request's framing and the tool
/// definitions with the tool-use system prompt on the first block (tools come first in the
/// cached prefix, so a changed tool changes that block's identity), and each further message's
/// turn markers on its first block.
fn add_claude_framing(items: &mut [Item], tools: &Value, counting: &Counting<'_>) {
    let Some(rule) = counting.estimate else {
        return;
    };
    let Some(first) = items.first_mut() else {
        return;
    };
    if let Some(tools) = tools.as_array().filter(|t| !t.is_empty()) {
        let json = Value::Array(tools.clone()).to_string();
        let e = rule.estimate_as(Script::Code, counting.counter, counting.encoding, &json)
            + rule.tools.estimate();
        first.key.extend_from_slice(json.as_bytes());
        first.add(Source::Tools, json, e);
    }
    first.add(Source::Framing, String::new(), rule.request.estimate());
    let mut messages = 0;
    for item in items.iter_mut().filter(|i| i.tag.ends_with("|true")) {
        messages += 1;
        if messages > 1 {
            item.add(Source::Framing, String::new(), rule.message.estimate());
        }
    }
}

fn attributed(parts: Vec<Part>, total: u64, counting: &Counting<'_>) -> Vec<ItemPart> {
    let mut out: Vec<ItemPart> = parts
        .into_iter()
        .map(|p| ItemPart {
            tokens: counting.tokens(&p.text),
            part: p,
        })
        .collect();
    let sum: u64 = out.iter().map(|p| p.tokens).sum();
    if total > sum {
        out.push(ItemPart {
            part: Part {
                from: Source::Framing,
                text: String::new(),
            },
            tokens: total - sum,
        });
    } else if sum > total {
        // Tokens merge across joins: take the excess from the largest part.
        let mut excess = sum - total;
        out.sort_by_key(|p| std::cmp::Reverse(p.tokens));
        for p in out.iter_mut() {
            let cut = excess.min(p.tokens);
            p.tokens -= cut;
            excess -= cut;
        }
    }
    out
}

/// A block's identity for the cache: its role, whether it opens its message, and its text
/// (never its breakpoint mark, which moves without changing what is cached).
fn key_of(role: &str, first: bool, text: &str) -> Vec<u8> {
    let mut key = Vec::with_capacity(role.len() + text.len() + 8);
    key.extend_from_slice(role.as_bytes());
    key.extend_from_slice(if first { b"|first|" } else { b"|" });
    key.extend_from_slice(text.as_bytes());
    key
}

fn block_kind(kind: covel_kernel::prompt::BlockKind) -> String {
    serde_json::to_value(kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

fn message_label(index: usize, message: &covel_kernel::prompt::Message) -> String {
    format!("message {} ({})", index + 1, message.origin.name())
}

/// The Anthropic request as blocks, in the order the provider reads them (each system block,
/// then each content block of each message sent), counted and attributed: read from the typed
/// request the body was serialized from, whose blocks name the message they send.
pub(crate) fn anthropic_items(preview: &Preview, counting: &Counting<'_>) -> Vec<Item> {
    let request = &preview.prompt.requests.anthropic_request;
    let rows = &preview.segments;
    let blocks = &preview.prompt.system.blocks;
    let messages = &preview.prompt.messages;
    let newest = covel_kernel::prompt::history_breakpoint(messages);
    let mut items = Vec::new();
    for (place, part) in request.parts() {
        let (label, role, first, slot, parts) = match place {
            Place::System { index } => {
                let Some(block) = blocks.get(index) else {
                    continue;
                };
                let kind = block_kind(block.kind);
                (
                    format!("system block {kind}"),
                    "system",
                    true,
                    Slot::System(kind),
                    parts::block_parts(block, rows),
                )
            }
            Place::Message { role, block, .. } => {
                let Some((index, message)) = part.message.and_then(|i| Some((i, messages.get(i)?)))
                else {
                    continue;
                };
                let slot = match Some(index) == newest {
                    true => Slot::HistoryNewest,
                    false => Slot::Other,
                };
                (
                    message_label(index, message),
                    role,
                    block == 0,
                    slot,
                    parts::message_parts(message, rows),
                )
            }
        };
        let e = counting.estimate(&part.text);
        items.push(Item {
            label,
            key: key_of(role, first, &part.text),
            tag: match place {
                Place::System { .. } => "system".to_string(),
                Place::Message { .. } => format!("{role}|{first}"),
            },
            tokens: e.tokens,
            low: e.low,
            high: e.high,
            added: Estimate::default(),
            breakpoint: part.cache_control,
            slot,
            message: part.message,
            parts: attributed(parts, e.tokens, counting),
            content: part.text.clone(),
        });
    }
    add_claude_framing(
        &mut items,
        &preview.prompt.requests.anthropic["tools"],
        counting,
    );
    items
}

/// The tokens OpenAI reads from its cache for a request of `total` tokens sharing `common`
/// with an earlier one: nothing under the minimum, else the shared prefix in whole `step`s.
fn openai_cached(total: u64, common: u64, minimum: u64, step: u64) -> u64 {
    if total >= minimum && common >= minimum {
        common / step * step
    } else {
        0
    }
}

/// One OpenAI chat message's tokens as OpenAI's cookbook counts them
/// (`<|im_start|>role<|im_sep|>content<|im_end|>`): the message's framing (`overhead`), the
/// role's own tokens and the content's.
fn openai_message_tokens(counting: &Counting<'_>, role: &str, content: &str, overhead: u64) -> u64 {
    counting.tokens(content) + overhead + counting.base(role)
}

/// A whole OpenAI chat body's input tokens for `profile`, as the forecast counts it: every
/// message, and the reply's priming.
pub fn openai_chat_tokens(
    messages: &[Value],
    profile: &ModelProfile,
    counter: &TokenCounter,
) -> u64 {
    let counting = Counting::new(profile, counter);
    let overhead = profile.provider.message_overhead_tokens.unwrap_or(0);
    let priming = profile.provider.reply_priming_tokens.unwrap_or(0);
    messages
        .iter()
        .map(|m| {
            let text = |field: &str| m[field].as_str().unwrap_or_default().to_string();
            openai_message_tokens(&counting, &text("role"), &text("content"), overhead)
        })
        .sum::<u64>()
        + priming
}

/// The OpenAI request's messages: the system message (every block), then each message.
fn openai_items(
    preview: &Preview,
    counting: &Counting<'_>,
    overhead: u64,
    priming: u64,
) -> Vec<Item> {
    let rows = &preview.segments;
    // The chat body's messages (`prompt::openai_request`): the system prompt, then every
    // message of the assembly, each with its role and text.
    let system = preview.prompt.system.text();
    let messages = std::iter::once(("system", system.as_str())).chain(
        preview
            .prompt
            .messages
            .iter()
            .map(|m| (m.role.as_str(), m.content.as_str())),
    );
    let mut items = Vec::new();
    for (index, (role, text)) in messages.enumerate() {
        let text = text.to_string();
        let tokens = openai_message_tokens(counting, role, &text, overhead);
        let (label, parts) = if index == 0 {
            (
                "system message".to_string(),
                preview
                    .prompt
                    .system
                    .blocks
                    .iter()
                    .flat_map(|b| parts::block_parts(b, rows))
                    .collect(),
            )
        } else {
            match preview.prompt.messages.get(index - 1) {
                Some(m) => (message_label(index - 1, m), parts::message_parts(m, rows)),
                None => (format!("message {index}"), Vec::new()),
            }
        };
        items.push(Item {
            label,
            key: key_of(role, true, &text),
            tag: role.to_string(),
            tokens,
            low: tokens,
            high: tokens,
            added: Estimate::default(),
            breakpoint: false,
            slot: Slot::Other,
            message: index.checked_sub(1),
            parts: attributed(parts, tokens, counting),
            content: text,
        });
    }
    if let Some(last) = items.last_mut() {
        last.tokens += priming;
        last.low += priming;
        last.high += priming;
        last.parts.push(ItemPart {
            part: Part {
                from: Source::Framing,
                text: String::new(),
            },
            tokens: priming,
        });
    }
    items
}

// ---- the simulation -------------------------------------------------------------------------

/// How a breakpoint fares this turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, specta::Type)]
#[serde(rename = "CacheOutcome")]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// Its prefix is read from the cache.
    Hit,
    /// Its prefix is written to the cache (after reading whatever earlier prefix was found).
    Write,
    /// Nothing is cached at it.
    Miss,
}

/// One breakpoint (Anthropic) or the automatic prefix (OpenAI) in one turn.
#[derive(Debug, Clone, PartialEq, Serialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct BreakpointForecast {
    #[specta(type = crate::ts::Number)]
    pub index: usize,
    /// The block it closes (`system block stable-segments`, `message 7 (history m4)`,
    /// `automatic prefix`).
    pub at: String,
    /// Tokens in the prefix up to and including that block.
    #[specta(type = crate::ts::Number)]
    pub prefix_tokens: u64,
    pub outcome: Outcome,
    /// `read`, `cold`, `extends`, `prefix-changed`, `new-prefix`, `below-minimum`,
    /// `beyond-lookback`, `ttl-expired`.
    pub reason_code: &'static str,
    pub reason: String,
    /// The segment whose change broke the prefix, when one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub segment: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plugin: Option<String>,
}

/// Costs in USD.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct Cost {
    #[specta(type = crate::ts::Number)]
    pub input: f64,
    #[specta(type = crate::ts::Number)]
    pub cache_write: f64,
    #[specta(type = crate::ts::Number)]
    pub cache_read: f64,
    /// The reply's output tokens.
    #[specta(type = crate::ts::Number)]
    pub output: f64,
    #[specta(type = crate::ts::Number)]
    pub total: f64,
}

/// What the backend reported for a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct Reported {
    /// Input tokens neither read from nor written to the cache.
    #[specta(type = crate::ts::Number)]
    pub input_tokens: u64,
    #[specta(type = crate::ts::Number)]
    pub cache_write_tokens: u64,
    #[specta(type = crate::ts::Number)]
    pub cache_read_tokens: u64,
    #[specta(type = crate::ts::Number)]
    pub output_tokens: u64,
}

/// A prediction the reported usage contradicts.
#[derive(Debug, Clone, PartialEq, Serialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct Mismatch {
    /// `input` (every input token of the request), `cacheRead` or `cacheWrite`.
    pub field: &'static str,
    #[specta(type = crate::ts::Number)]
    pub predicted: u64,
    #[specta(type = crate::ts::Number)]
    pub reported: u64,
    /// The first segment (or block) the provider's cache did not cover as predicted (none for
    /// `input`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub segment: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plugin: Option<String>,
    pub at: String,
    pub message: String,
}

/// One turn of the forecast.
#[derive(Debug, Clone, PartialEq, Serialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct TurnForecast {
    /// 1-based.
    #[specta(type = crate::ts::Number)]
    pub turn: usize,
    pub turn_id: String,
    pub say: String,
    /// Seconds since the first turn at the assumed pace.
    #[specta(type = crate::ts::Number)]
    pub at_seconds: f64,
    #[specta(type = crate::ts::Number)]
    pub input_tokens: u64,
    /// Claude: the estimate's error bar on `inputTokens`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[specta(type = Option<(crate::ts::Number, crate::ts::Number)>)]
    pub input_tokens_range: Option<(u64, u64)>,
    pub breakpoints: Vec<BreakpointForecast>,
    #[specta(type = crate::ts::Number)]
    pub uncached_tokens: u64,
    #[specta(type = crate::ts::Number)]
    pub cache_write_tokens: u64,
    #[specta(type = crate::ts::Number)]
    pub cache_read_tokens: u64,
    /// Output tokens: reported, else the assumed reply length, else the played reply counted.
    #[specta(type = crate::ts::Number)]
    pub output_tokens: u64,
    /// Where `outputTokens` comes from: `reported`, `assumed` (`--reply-tokens`) or `reply text`.
    pub output_from: &'static str,
    pub cost: Cost,
    /// Claude: `cost.total` over the counts' error bar (input-side costs scaled, output as is).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[specta(type = Option<(crate::ts::Number, crate::ts::Number)>)]
    pub cost_range: Option<(f64, f64)>,
    /// What the same tokens cost without caching (output included).
    #[specta(type = crate::ts::Number)]
    pub cost_without_cache: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reported: Option<Reported>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub mismatches: Vec<Mismatch>,
    /// This played turn's prompt was recomputed with plugins reloaded since it was played: the
    /// forecast may differ from what was sent.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub with_newer_plugins: bool,
}

/// Sums over every turn.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct Totals {
    #[specta(type = crate::ts::Number)]
    pub input_tokens: u64,
    #[specta(type = crate::ts::Number)]
    pub uncached_tokens: u64,
    #[specta(type = crate::ts::Number)]
    pub cache_write_tokens: u64,
    #[specta(type = crate::ts::Number)]
    pub cache_read_tokens: u64,
    #[specta(type = crate::ts::Number)]
    pub output_tokens: u64,
    pub cost: Cost,
    /// Claude: the total cost over the counts' error bar.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[specta(type = Option<(crate::ts::Number, crate::ts::Number)>)]
    pub cost_range: Option<(f64, f64)>,
    #[specta(type = crate::ts::Number)]
    pub cost_without_cache: f64,
    /// `costWithoutCache − cost.total`.
    #[specta(type = crate::ts::Number)]
    pub saving: f64,
}

/// What one plugin (or the framework, history, player input) put in the prompt over the turns.
#[derive(Debug, Clone, PartialEq, Serialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct LedgerRow {
    /// A plugin id, or `(framework)`, `(runtime body)`, `(world lore)`, `(history)`,
    /// `(player input)`.
    pub owner: String,
    pub is_plugin: bool,
    /// Tokens in cacheable positions (before the request's last cache breakpoint; for OpenAI,
    /// the cached prefix).
    #[specta(type = crate::ts::Number)]
    pub cached_part_tokens: u64,
    /// Tokens after it.
    #[specta(type = crate::ts::Number)]
    pub uncached_part_tokens: u64,
    #[specta(type = crate::ts::Number)]
    pub cache_read_tokens: u64,
    #[specta(type = crate::ts::Number)]
    pub cache_write_tokens: u64,
    #[specta(type = crate::ts::Number)]
    pub uncached_tokens: u64,
    #[specta(type = crate::ts::Number)]
    pub cost: f64,
    /// Share of the total cost.
    #[specta(type = crate::ts::Number)]
    pub share: f64,
}

/// A breakpoint layout and what it costs over the session.
#[derive(Debug, Clone, PartialEq, Serialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct Layout {
    /// Where the breakpoints go: system block kinds, `history` (the newest history message).
    pub breakpoints: Vec<String>,
    #[specta(type = crate::ts::Number)]
    pub cost: f64,
    /// Against the current layout (positive: cheaper).
    #[specta(type = crate::ts::Number)]
    pub saving: f64,
}

/// What changing one segment's volatility would save.
#[derive(Debug, Clone, PartialEq, Serialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct VolatilityAdvice {
    pub segment: String,
    pub plugin: String,
    /// What to do (`declare it turn`, `declare it session`…).
    pub change: String,
    pub why: String,
    #[specta(type = crate::ts::Number)]
    pub cost_after: f64,
    #[specta(type = crate::ts::Number)]
    pub saving: f64,
}

/// Advice for this session.
#[derive(Debug, Clone, PartialEq, Serialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct Advice {
    /// Anthropic: the current layout and the best ones (at most the provider's breakpoints).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub current_layout: Option<Layout>,
    pub best_layouts: Vec<Layout>,
    pub volatility: Vec<VolatilityAdvice>,
    pub notes: Vec<String>,
}

/// The model the forecast priced.
#[derive(Debug, Clone, PartialEq, Serialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct ModelSummary {
    pub id: String,
    pub provider: String,
    pub caching: Caching,
    #[specta(type = crate::ts::Number)]
    pub min_cacheable_tokens: u64,
    #[specta(type = crate::ts::Number)]
    pub ttl_seconds: u64,
    #[specta(type = crate::ts::Number)]
    pub pace_seconds: f64,
    pub prices: crate::facts::Prices,
    pub counts: String,
    pub facts_date: String,
    pub verified: bool,
    pub sources: Vec<String>,
}

/// One segment's size: the SDK's `estimateTokens` (what budgets use) beside the model's count.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct SegmentTokens {
    /// `plugin/id`.
    pub segment: String,
    pub plugin: String,
    /// `estimateTokens`, as the contract defines it.
    #[specta(type = crate::ts::Number)]
    pub estimate_tokens: u64,
    /// The model's count: exact for OpenAI encodings, the stated estimate for Claude.
    #[specta(type = crate::ts::Number)]
    pub tokens: u64,
    /// Claude: the estimate's error bar.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[specta(type = Option<(crate::ts::Number, crate::ts::Number)>)]
    pub range: Option<(u64, u64)>,
    pub exact: bool,
}

/// The included segments of a preview with both counts; unchanged segments are not recounted
/// (the counter remembers every text).
pub fn segment_tokens(
    preview: &Preview,
    profile: &ModelProfile,
    counter: &TokenCounter,
) -> Vec<SegmentTokens> {
    let encoding = profile.encoding();
    let estimate = profile.estimate();
    preview
        .segments
        .iter()
        .filter(|r| r.included)
        .map(|r| {
            let (tokens, range) = match &estimate {
                Some(rule) => {
                    let e = rule.estimate(counter, encoding, &r.content);
                    (e.tokens, Some((e.low, e.high)))
                }
                None => (counter.count(encoding, &r.content), None),
            };
            SegmentTokens {
                segment: r.key(),
                plugin: r.plugin.to_string(),
                estimate_tokens: r.tokens,
                tokens,
                range,
                exact: estimate.is_none(),
            }
        })
        .collect()
}

/// The whole forecast.
#[derive(Debug, Clone, PartialEq, Serialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct Forecast {
    pub model: ModelSummary,
    pub turns: Vec<TurnForecast>,
    pub totals: Totals,
    pub ledger: Vec<LedgerRow>,
    pub advice: Advice,
    /// The last turn's segments: `estimateTokens` beside the model's count.
    pub segment_tokens: Vec<SegmentTokens>,
    /// How many token counts were computed and how many reused.
    pub counting: CountStats,
}

struct Entry {
    written_turn: usize,
    last_used: f64,
}

struct Sim<'a> {
    profile: &'a ModelProfile,
    options: &'a ForecastOptions,
    ttl: f64,
    min: u64,
    counter: &'a TokenCounter,
}

/// The outcome of one turn in a simulation (before pricing).
struct TurnSim {
    breakpoints: Vec<BreakpointForecast>,
    read: u64,
    write: u64,
    /// Per item: tokens read, written; and whether it is in a cacheable position.
    per_item: Vec<(u64, u64, bool)>,
    /// What the written tokens were written for (Anthropic).
    causes: Vec<WriteCause>,
}

fn chain(items: &[Item], model: &str) -> Vec<[u8; 32]> {
    let mut hash: [u8; 32] = Sha256::digest(model.as_bytes()).into();
    items
        .iter()
        .map(|item| {
            let mut h = Sha256::new();
            h.update(hash);
            h.update(&item.key);
            hash = h.finalize().into();
            hash
        })
        .collect()
}

fn cumulative(items: &[Item]) -> Vec<u64> {
    let mut sum = 0;
    items
        .iter()
        .map(|i| {
            sum += i.tokens;
            sum
        })
        .collect()
}

/// How the block where two consecutive requests part ways differs from the earlier one.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Change {
    /// The same block (or segment) with other text.
    Changed,
    /// The earlier block now sits further on (`to`, an index of the later request): blocks were
    /// inserted before it, as history grows under a segment at a fixed depth.
    Moved { to: usize, text_changed: bool },
    /// A block or segment the earlier request did not have.
    New,
    /// A block or segment the later request no longer has.
    Removed,
}

/// Where two consecutive requests part ways: the first block that differs, the part named as
/// the cause, and how it differs.
#[derive(Debug, Clone)]
struct Divergence {
    index: usize,
    part: Option<Part>,
    change: Change,
}

/// What a block is, regardless of its position and text: its parts' origins (`segment a/b`,
/// `history m4`), else its label (system blocks are labelled by kind).
fn identity(item: &Item) -> String {
    let froms: Vec<String> = item
        .parts
        .iter()
        .filter(|p| p.part.from != Source::Framing)
        .map(|p| p.part.from.to_string())
        .collect();
    if froms.is_empty() || item.label.starts_with("system") {
        item.label.clone()
    } else {
        froms.join(",")
    }
}

fn main_part(item: &Item) -> Option<Part> {
    item.parts
        .iter()
        .find(|p| p.part.from != Source::Framing)
        .map(|p| p.part.clone())
}

/// Inside one block that kept its identity: the part whose text changed, a new part, or one
/// that is gone.
fn changed_part(a: &Item, b: &Item) -> (Option<Part>, Change) {
    let real = |i: &Item| -> Vec<Part> {
        i.parts
            .iter()
            .filter(|p| p.part.from != Source::Framing)
            .map(|p| p.part.clone())
            .collect()
    };
    let (old, new) = (real(a), real(b));
    if let Some(p) = new.iter().find(|p| !old.contains(p)) {
        let change = if old.iter().any(|q| q.from == p.from) {
            Change::Changed
        } else {
            Change::New
        };
        return (Some(p.clone()), change);
    }
    if let Some(p) = old.iter().find(|p| !new.iter().any(|q| q.from == p.from)) {
        return (Some(p.clone()), Change::Removed);
    }
    (None, Change::Changed)
}

/// The first block that differs between two requests, what it is and how it differs.
fn divergence(before: &[Item], now: &[Item]) -> Option<Divergence> {
    let index = before
        .iter()
        .zip(now.iter())
        .position(|(a, b)| a.key != b.key)
        .or_else(|| (before.len() != now.len()).then(|| before.len().min(now.len())))?;
    let (a, b) = match (before.get(index), now.get(index)) {
        (Some(a), Some(b)) => (a, b),
        (None, b) => {
            let part = b.and_then(main_part);
            return Some(Divergence {
                index,
                part,
                change: Change::New,
            });
        }
        (a, None) => {
            let part = a.and_then(main_part);
            return Some(Divergence {
                index,
                part,
                change: Change::Removed,
            });
        }
    };
    let (old, new) = (identity(a), identity(b));
    if old == new {
        let (part, change) = changed_part(a, b);
        return Some(Divergence {
            index,
            part,
            change,
        });
    }
    if let Some(to) = (index + 1..now.len()).find(|&j| identity(&now[j]) == old) {
        let change = Change::Moved {
            to,
            text_changed: now[to].key != a.key,
        };
        return Some(Divergence {
            index,
            part: main_part(a),
            change,
        });
    }
    if !before.iter().any(|i| identity(i) == new) {
        return Some(Divergence {
            index,
            part: main_part(b),
            change: Change::New,
        });
    }
    Some(Divergence {
        index,
        part: main_part(a),
        change: Change::Removed,
    })
}

impl Divergence {
    /// `segment weather/sky (plugin weather) changed since turn 2`, `… moved from message 9 to
    /// message 11`, `… is new this turn`.
    fn describe(&self, before: &[Item], now: &[Item], previous_turn: usize) -> String {
        let (who, _, _) = who(&self.part);
        match &self.change {
            Change::Changed => format!("{who} changed since turn {previous_turn}"),
            Change::Moved { to, text_changed } => format!(
                "{who} moved from {} at turn {previous_turn} to {}{}",
                before[self.index].label,
                now[*to].label,
                if *text_changed {
                    " and its text changed"
                } else {
                    ""
                }
            ),
            Change::New => format!("{who} is new since turn {previous_turn}"),
            Change::Removed => format!("{who} was removed since turn {previous_turn}"),
        }
    }

    /// `changed`, `moved`, `new`, `removed`.
    fn kind(&self) -> &'static str {
        match self.change {
            Change::Changed => "changed",
            Change::Moved { .. } => "moved",
            Change::New => "new",
            Change::Removed => "removed",
        }
    }
}

fn who(part: &Option<Part>) -> (String, Option<String>, Option<String>) {
    match part {
        Some(p) => {
            let plugin = p.plugin().map(str::to_string);
            let text = match &plugin {
                Some(plugin) => format!("{} (plugin {plugin})", p.from),
                None => p.from.to_string(),
            };
            (text, p.segment(), plugin)
        }
        None => ("the block list".into(), None, None),
    }
}

/// One turn's request as the Anthropic simulation sees it.
struct Request<'a> {
    turn: usize,
    /// Seconds since the first turn.
    now: f64,
    items: &'a [Item],
    previous: Option<&'a [Item]>,
    hashes: &'a [[u8; 32]],
    cum: &'a [u64],
    /// The block up to which the cache is read this turn.
    read_at: Option<usize>,
}

impl Request<'_> {
    /// What a breakpoint that is not read costs: what is read before it and what is written.
    fn written(&self, k: usize) -> String {
        match self.read_at.filter(|&r| r < k) {
            Some(r) => format!(
                "{} tokens are read up to {} and the {} after it are written",
                self.cum[r],
                self.items[r].label,
                self.cum[k] - self.cum[r]
            ),
            None => format!(
                "nothing is read: all {} tokens of the prefix are written",
                self.cum[k]
            ),
        }
    }

    /// The breakpoint of the previous request whose cached prefix this one would extend: the
    /// one in the same place (the same system block, the moving history breakpoint), else the
    /// last one at or before it.
    fn old_end(&self, k: usize) -> Option<usize> {
        let previous = self.previous?;
        let slot = &self.items[k].slot;
        previous
            .iter()
            .rposition(|i| i.breakpoint && *slot != Slot::Other && i.slot == *slot)
            .or_else(|| previous.iter().take(k + 1).rposition(|i| i.breakpoint))
    }
}

/// Why a breakpoint fares as it does, and what its writes are charged to in the advice.
struct Verdict {
    outcome: Outcome,
    code: &'static str,
    reason: String,
    /// The part named as the cause (a changed, moved or new segment).
    part: Option<Part>,
    /// What the writes are charged to: `segment a/b (plugin a)`, `the first request`…
    cause: String,
    /// `changed`, `moved`, `new`, `removed` for a part; else the reason code.
    kind: &'static str,
}

impl Verdict {
    fn of(outcome: Outcome, code: &'static str, reason: String, cause: &str) -> Verdict {
        Verdict {
            outcome,
            code,
            reason,
            part: None,
            cause: cause.into(),
            kind: code,
        }
    }
}

/// Tokens written at one breakpoint of one turn, and what caused them.
#[derive(Debug, Clone)]
struct WriteCause {
    turn: usize,
    name: String,
    segment: Option<String>,
    kind: &'static str,
    tokens: u64,
}

impl Sim<'_> {
    /// Whether a prefix is cached and not expired at `now`.
    fn is_valid(&self, cache: &HashMap<[u8; 32], Entry>, hash: &[u8; 32], now: f64) -> bool {
        cache
            .get(hash)
            .is_some_and(|e| now - e.last_used <= self.ttl)
    }

    /// A breakpoint at or before the read point: read, as its own prefix or inside a longer one.
    fn hit(
        &self,
        r: &Request<'_>,
        k: usize,
        read_at: usize,
        cache: &HashMap<[u8; 32], Entry>,
    ) -> Verdict {
        let reason = match cache
            .get(&r.hashes[k])
            .filter(|_| self.is_valid(cache, &r.hashes[k], r.now))
        {
            Some(e) => format!(
                "the prefix is read from the cache (written at turn {})",
                e.written_turn + 1
            ),
            None => format!(
                "read as part of the longer cached prefix up to {}",
                r.items[read_at].label
            ),
        };
        Verdict::of(Outcome::Hit, "read", reason, "")
    }

    /// Claude counts are estimates: when the prefix's error bar straddles the minimum
    /// cacheable size, the verdict is uncertain and says what either outcome costs.
    fn near_minimum(&self, r: &Request<'_>, k: usize, verdict: Verdict) -> Verdict {
        if self.profile.estimate().is_none() {
            return verdict;
        }
        let band = Estimate {
            tokens: r.cum[k],
            low: r.items[..=k].iter().map(|i| i.low).sum(),
            high: r.items[..=k].iter().map(|i| i.high).sum(),
        };
        if band.low >= self.min || band.high < self.min {
            return verdict;
        }
        let tokens = r.cum[k] - r.read_at.filter(|&x| x < k).map_or(0, |x| r.cum[x]);
        let written = tokens as f64 * self.write_price() / 1e6;
        let paid = tokens as f64 * self.profile.model.prices.input / 1e6;
        Verdict {
            code: "uncertain",
            reason: format!(
                "uncertain: the prefix is {}–{} tokens by the estimate's error bar, around {}'s minimum cacheable {} tokens: if it reaches the minimum, {tokens} tokens are written (${written:.5}) and can be read next turn; if not, they are paid as input (${paid:.5}). Predicted: {}",
                band.low, band.high, self.profile.model.id, self.min, verdict.reason
            ),
            ..verdict
        }
    }

    /// A breakpoint after the read point: why it is not read. A change before the end of the
    /// prefix the previous turn cached is the cause whenever there is one; the look-back, the
    /// TTL or a new prefix are named only when that prefix is intact.
    fn verdict(&self, r: &Request<'_>, k: usize, cache: &HashMap<[u8; 32], Entry>) -> Verdict {
        let (items, t) = (r.items, r.turn);
        let prefix_tokens = r.cum[k];
        if prefix_tokens < self.min {
            return Verdict::of(
                Outcome::Miss,
                "below-minimum",
                format!(
                    "the prefix is {prefix_tokens} tokens, under {}'s minimum cacheable {} tokens: nothing is cached here",
                    self.profile.model.id, self.min
                ),
                "",
            );
        }
        let written = r.written(k);
        if let Some(entry) = cache.get(&r.hashes[k]) {
            return Verdict::of(
                Outcome::Write,
                "ttl-expired",
                format!(
                    "the same prefix was cached at turn {} but expired: {:.0} s since its last use at the assumed pace of {:.0} s per turn, over the {:.0} s TTL; {written}",
                    entry.written_turn + 1,
                    r.now - entry.last_used,
                    self.options.pace_seconds,
                    self.ttl
                ),
                "expiry at the assumed pace",
            );
        }
        let Some(previous) = r.previous else {
            return Verdict::of(
                Outcome::Write,
                "cold",
                format!(
                    "first request: nothing is cached yet, so all {prefix_tokens} tokens of the prefix are written"
                ),
                "the first request",
            );
        };
        let Some(end) = r.old_end(k) else {
            return Verdict::of(
                Outcome::Write,
                "new-prefix",
                format!("turn {t} had no breakpoint at or before this block; {written}"),
                "a breakpoint new this turn",
            );
        };
        let old = &previous[end].label;
        if let Some(dv) = divergence(previous, items).filter(|dv| dv.index <= end) {
            let at = dv.index.min(items.len() - 1);
            let rewritten = r
                .read_at
                .filter(|&x| at > x + 1)
                .map(|x| {
                    format!(
                        " ({} of them unchanged, before the change, but no cached breakpoint closes them)",
                        r.cum[at - 1] - r.cum[x]
                    )
                })
                .unwrap_or_default();
            let (cause, _, _) = who(&dv.part);
            return Verdict {
                outcome: Outcome::Write,
                code: "prefix-changed",
                reason: format!(
                    "the prefix turn {t} cached up to {old} no longer matches at {}: {}; {written}{rewritten}",
                    items[at].label,
                    dv.describe(previous, items, t)
                ),
                kind: dv.kind(),
                part: dv.part,
                cause,
            };
        }
        // Nothing before the old prefix's end changed: it is still the start of this request.
        let lookback = self.profile.provider.lookback_blocks.unwrap_or(20);
        let valid = self.is_valid(cache, &r.hashes[end], r.now);
        if valid && k.saturating_sub(end) > lookback {
            return Verdict::of(
                Outcome::Write,
                "beyond-lookback",
                format!(
                    "nothing before {old} changed, but the prefix cached there ends {} blocks before this breakpoint, beyond the {lookback}-block look-back, so it is not found; {written}",
                    k - end
                ),
                "the look-back window",
            );
        }
        if let Some(entry) = cache.get(&r.hashes[end]).filter(|_| !valid) {
            return Verdict::of(
                Outcome::Write,
                "ttl-expired",
                format!(
                    "nothing before {old} changed, but the prefix cached there at turn {} expired: {:.0} s since its last use at {:.0} s per turn, over the {:.0} s TTL; {written}",
                    entry.written_turn + 1,
                    r.now - entry.last_used,
                    self.options.pace_seconds,
                    self.ttl
                ),
                "expiry at the assumed pace",
            );
        }
        if valid {
            return Verdict::of(
                Outcome::Write,
                "extends",
                format!(
                    "nothing before {old} changed: the cached prefix grows with the blocks new this turn; {written}"
                ),
                "the growing conversation (new blocks each turn)",
            );
        }
        Verdict::of(
            Outcome::Write,
            "new-prefix",
            format!(
                "turn {t} did not cache a prefix ending at {old} (it was under the minimum); {written}"
            ),
            "a prefix not cached before",
        )
    }

    fn anthropic(&self, turns: &[Vec<Item>]) -> Vec<TurnSim> {
        let lookback = self.profile.provider.lookback_blocks.unwrap_or(20);
        let mut cache: HashMap<[u8; 32], Entry> = HashMap::new();
        let mut out = Vec::new();
        for (t, items) in turns.iter().enumerate() {
            let now = t as f64 * self.options.pace_seconds;
            let hashes = chain(items, &self.profile.model.id);
            let cum = cumulative(items);
            let valid = |h: &[u8; 32], cache: &HashMap<[u8; 32], Entry>| {
                cache.get(h).is_some_and(|e| now - e.last_used <= self.ttl)
            };
            let breakpoints: Vec<usize> = items
                .iter()
                .enumerate()
                .filter(|(_, i)| i.breakpoint)
                .map(|(j, _)| j)
                .collect();
            let read_at = breakpoints
                .iter()
                .filter_map(|&k| {
                    (k.saturating_sub(lookback)..=k)
                        .rev()
                        .find(|&j| valid(&hashes[j], &cache))
                })
                .max();
            let read = read_at.map_or(0, |r| cum[r]);
            let last_cacheable = breakpoints
                .iter()
                .copied()
                .filter(|&k| cum[k] >= self.min)
                .max();
            let written_to = last_cacheable.filter(|&k| read_at.is_none_or(|r| k > r));
            let write = written_to.map_or(0, |k| cum[k] - read);
            let request = Request {
                turn: t,
                now,
                items,
                previous: t.checked_sub(1).map(|p| turns[p].as_slice()),
                hashes: &hashes,
                cum: &cum,
                read_at,
            };
            let mut rows = Vec::new();
            let mut causes = Vec::new();
            let mut covered = read;
            for (index, &k) in breakpoints.iter().enumerate() {
                let verdict = match read_at.filter(|&r| k <= r) {
                    Some(r) => self.hit(&request, k, r, &cache),
                    None => self.near_minimum(&request, k, self.verdict(&request, k, &cache)),
                };
                if verdict.outcome == Outcome::Write && cum[k] > covered {
                    causes.push(WriteCause {
                        turn: t,
                        name: verdict.cause.clone(),
                        segment: verdict.part.as_ref().and_then(Part::segment),
                        kind: verdict.kind,
                        tokens: cum[k] - covered,
                    });
                    covered = cum[k];
                }
                let (_, segment, plugin) = who(&verdict.part);
                rows.push(BreakpointForecast {
                    index,
                    at: items[k].label.clone(),
                    prefix_tokens: cum[k],
                    outcome: verdict.outcome,
                    reason_code: verdict.code,
                    reason: verdict.reason,
                    segment,
                    plugin,
                });
            }

            // Update the cache: read entries are refreshed, written ones created.
            if let Some(r) = read_at {
                for &k in breakpoints.iter().filter(|&&k| k <= r) {
                    if let Some(e) = cache.get_mut(&hashes[k]) {
                        e.last_used = now;
                    }
                }
                if let Some(e) = cache.get_mut(&hashes[r]) {
                    e.last_used = now;
                }
            }
            for &k in breakpoints
                .iter()
                .filter(|&&k| read_at.is_none_or(|r| k > r) && cum[k] >= self.min)
            {
                cache.insert(
                    hashes[k],
                    Entry {
                        written_turn: t,
                        last_used: now,
                    },
                );
            }
            let last_breakpoint = breakpoints.last().copied();
            let per_item = items
                .iter()
                .enumerate()
                .map(|(j, item)| {
                    let cacheable = last_breakpoint.is_some_and(|b| j <= b);
                    if read_at.is_some_and(|r| j <= r) {
                        (item.tokens, 0, cacheable)
                    } else if written_to.is_some_and(|w| j <= w) {
                        (0, item.tokens, cacheable)
                    } else {
                        (0, 0, cacheable)
                    }
                })
                .collect();
            out.push(TurnSim {
                breakpoints: rows,
                read,
                write,
                per_item,
                causes,
            });
        }
        out
    }

    /// Tokens two OpenAI requests share at the start.
    fn common_prefix(&self, before: &[Item], now: &[Item]) -> (u64, Option<usize>) {
        let mut tokens = 0;
        for (index, (a, b)) in before.iter().zip(now.iter()).enumerate() {
            if a.key == b.key {
                tokens += a.tokens;
                continue;
            }
            if a.tag == b.tag {
                let encoding = self.profile.encoding();
                let (x, y) = (
                    self.counter.encode(encoding, &a.content),
                    self.counter.encode(encoding, &b.content),
                );
                let same = x.iter().zip(y.iter()).take_while(|(p, q)| p == q).count() as u64;
                tokens += self.profile.provider.message_overhead_tokens.unwrap_or(0) + same;
            }
            return (tokens, Some(index));
        }
        (tokens, None)
    }

    fn openai(&self, turns: &[Vec<Item>]) -> Vec<TurnSim> {
        let step = self.profile.provider.step_tokens.unwrap_or(128).max(1);
        let mut seen: Vec<(usize, f64)> = Vec::new();
        let mut out = Vec::new();
        for (t, items) in turns.iter().enumerate() {
            let now = t as f64 * self.options.pace_seconds;
            let total: u64 = items.iter().map(|i| i.tokens).sum();
            let best = seen
                .iter()
                .filter(|(_, used)| now - used <= self.ttl)
                .map(|(p, _)| (*p, self.common_prefix(&turns[*p], items)))
                .max_by_key(|(_, (tokens, _))| *tokens);
            let expired = seen
                .iter()
                .filter(|(_, used)| now - used > self.ttl)
                .map(|(p, used)| (*p, *used, self.common_prefix(&turns[*p], items).0))
                .max_by_key(|x| x.2);
            let common = best.map_or(0, |(_, (tokens, _))| tokens.min(total));
            let read = openai_cached(total, common, self.min, step);
            let previous = t.checked_sub(1).map(|p| turns[p].as_slice());
            let difference = previous.and_then(|p| divergence(p, items));
            let at = "automatic prefix".to_string();
            let row = |outcome, reason_code, reason: String, part: &Option<Part>| {
                let (_, segment, plugin) = who(part);
                BreakpointForecast {
                    index: 0,
                    at: at.clone(),
                    prefix_tokens: common,
                    outcome,
                    reason_code,
                    reason,
                    segment,
                    plugin,
                }
            };
            let previous_len = previous.map_or(0, <[Item]>::len);
            let changed = |what: &str| match (difference.as_ref(), previous) {
                (Some(dv), _) if dv.index >= previous_len => (
                    None,
                    format!("{what}; this request extends turn {t}'s with new messages"),
                ),
                (Some(dv), Some(previous)) if dv.index < items.len() => (
                    Some(dv.part.clone()),
                    format!(
                        "{what}; the prefix changed at {}: {}",
                        items[dv.index].label,
                        dv.describe(previous, items, t)
                    ),
                ),
                _ => (None, what.to_string()),
            };
            let row = if total < self.min {
                row(
                    Outcome::Miss,
                    "below-minimum",
                    format!(
                        "the prompt is {total} tokens, under the {}-token minimum: nothing is cached",
                        self.min
                    ),
                    &None,
                )
            } else if read > 0 {
                let (part, text) = changed(&format!(
                    "{read} of the {common} tokens shared with an earlier request are read ({step}-token steps)"
                ));
                row(Outcome::Hit, "read", text, &part.flatten())
            } else if t == 0 {
                row(Outcome::Miss, "cold", "first request: nothing is cached yet (the prefix is cached for the next request at no extra cost)".into(), &None)
            } else if let Some((p, used, tokens)) = expired.filter(|e| e.2 >= self.min) {
                let idle = now - used;
                let retained = self.profile.ttl_seconds("upTo") as f64;
                if idle <= retained {
                    // OpenAI clears caches after 5 to 10 idle minutes: between the two, either.
                    let hit = tokens / step * step;
                    let if_hit = self.price(total - hit, 0, hit).total;
                    let if_miss = self.price(total, 0, 0).total;
                    row(
                        Outcome::Miss,
                        "uncertain",
                        format!(
                            "uncertain: turn {} shared {tokens} tokens, last used {idle:.0} s ago at {:.0} s per turn; OpenAI clears a cache after {:.0}–{retained:.0} s idle, so it may still be read ({hit} tokens, ${if_hit:.5} this turn) or not (${if_miss:.5}); priced as a miss",
                            p + 1,
                            self.options.pace_seconds,
                            self.ttl
                        ),
                        &None,
                    )
                } else {
                    row(
                        Outcome::Miss,
                        "ttl-expired",
                        format!(
                            "turn {} shared {tokens} tokens but its cache is cleared: {idle:.0} s since its last use at {:.0} s per turn, over the {:.0}–{retained:.0} s OpenAI keeps an idle cache (at most an hour)",
                            p + 1,
                            self.options.pace_seconds,
                            self.ttl
                        ),
                        &None,
                    )
                }
            } else {
                let (part, text) = changed(&format!(
                    "only {common} tokens are shared with earlier requests, under the {}-token minimum",
                    self.min
                ));
                row(Outcome::Miss, "prefix-changed", text, &part.flatten())
            };
            if let Some((p, _)) = best.filter(|_| read > 0)
                && let Some(entry) = seen.iter_mut().find(|(q, _)| *q == p)
            {
                entry.1 = now;
            }
            seen.push((t, now));
            // Attribute the read tokens to the leading items.
            let mut left = read;
            let per_item = items
                .iter()
                .map(|item| {
                    let r = left.min(item.tokens);
                    left -= r;
                    (r, 0, r > 0)
                })
                .collect();
            out.push(TurnSim {
                breakpoints: vec![row],
                read,
                write: 0,
                per_item,
                causes: Vec::new(),
            });
        }
        out
    }

    fn run(&self, turns: &[Vec<Item>]) -> Vec<TurnSim> {
        match self.profile.provider.caching {
            Caching::ExplicitBreakpoints => self.anthropic(turns),
            Caching::AutomaticPrefix => self.openai(turns),
        }
    }

    fn write_price(&self) -> f64 {
        self.profile.model.prices.cache_write(&self.options.ttl)
    }

    fn price(&self, uncached: u64, write: u64, read: u64) -> Cost {
        let prices = &self.profile.model.prices;
        let (input, cache_write, cache_read) = (
            uncached as f64 * prices.input / 1e6,
            write as f64 * self.write_price() / 1e6,
            read as f64 * prices.cache_read / 1e6,
        );
        Cost {
            input,
            cache_write,
            cache_read,
            output: 0.0,
            total: input + cache_write + cache_read,
        }
    }

    fn total_cost(&self, turns: &[Vec<Item>]) -> f64 {
        self.run(turns)
            .iter()
            .zip(turns)
            .map(|(sim, items)| {
                let total: u64 = items.iter().map(|i| i.tokens).sum();
                self.price(total - sim.read - sim.write, sim.write, sim.read)
                    .total
            })
            .sum()
    }
}

// ---- predicted versus reported ---------------------------------------------------------------

/// Reads the usage an API reported (Anthropic or OpenAI shape).
pub fn reported_usage(usage: &Value) -> Option<Reported> {
    let n = |v: Option<&Value>| v.and_then(Value::as_u64);
    if usage.get("cache_creation_input_tokens").is_some()
        || usage.get("cache_read_input_tokens").is_some()
        || usage.get("input_tokens").is_some()
    {
        return Some(Reported {
            input_tokens: n(usage.get("input_tokens")).unwrap_or(0),
            cache_write_tokens: n(usage.get("cache_creation_input_tokens")).unwrap_or(0),
            cache_read_tokens: n(usage.get("cache_read_input_tokens")).unwrap_or(0),
            output_tokens: n(usage.get("output_tokens")).unwrap_or(0),
        });
    }
    let prompt = n(usage.get("prompt_tokens"))?;
    let cached = n(usage.pointer("/prompt_tokens_details/cached_tokens")).unwrap_or(0);
    Some(Reported {
        input_tokens: prompt.saturating_sub(cached),
        cache_write_tokens: 0,
        cache_read_tokens: cached,
        output_tokens: n(usage.get("completion_tokens")).unwrap_or(0),
    })
}

/// The part at a token offset of a request (the first one the offset does not cover).
fn part_at(items: &[Item], offset: u64) -> (String, Option<Part>) {
    let mut sum = 0;
    for item in items {
        for part in &item.parts {
            sum += part.tokens;
            if sum > offset && part.part.from != Source::Framing {
                return (item.label.clone(), Some(part.part.clone()));
            }
        }
    }
    (
        items.last().map(|i| i.label.clone()).unwrap_or_default(),
        None,
    )
}

/// A turn's prediction, as the reported usage is compared with it.
struct Predicted {
    read: u64,
    write: u64,
    /// Every input token of the request (uncached, written and read); `None` when the forecast
    /// knows it does not count all of them (an OpenAI request offering tools).
    input: Option<u64>,
    /// The error bar as scales of the centre (1, 1 for exact counts).
    bar: (f64, f64),
}

/// The range a reported figure may fall in around a predicted one, and how far outside it a
/// reported figure is (`None` inside).
fn outside(p: u64, r: u64, bar: (f64, f64), slack: f64) -> Option<(u64, u64, String)> {
    let (lowest, highest) = (
        ((p as f64) * bar.0 - slack).max(0.0).floor() as u64,
        ((p as f64) * bar.1 + slack).ceil() as u64,
    );
    if (p == 0) == (r == 0) && r >= lowest && r <= highest {
        return None;
    }
    let by = if r < p {
        format!("{} under", lowest.saturating_sub(r).max(1))
    } else {
        format!("{} over", r.saturating_sub(highest).max(1))
    };
    Some((lowest, highest, by))
}

fn mismatches(
    profile: &ModelProfile,
    items: &[Item],
    predicted: &Predicted,
    reported: &Reported,
) -> Vec<Mismatch> {
    let (read, write) = (predicted.read, predicted.write);
    // Claude counts are estimates: a reported figure inside the error bar agrees.
    let (bar, slack) = match profile.estimate() {
        Some(_) => (predicted.bar, 16.0),
        None => (
            (1.0, 1.0),
            profile.provider.step_tokens.unwrap_or(0) as f64 + 8.0,
        ),
    };
    let mut out = Vec::new();
    // Every input token: whatever the cache did, the request's size is what was counted.
    let total = reported.input_tokens + reported.cache_write_tokens + reported.cache_read_tokens;
    if let Some(p) = predicted.input {
        // Exact OpenAI counts differ from the provider's by a few tokens at most (no cache
        // steps are involved in the total); Claude's rest on the error bar.
        let total_slack = if profile.estimate().is_some() {
            slack
        } else {
            4.0
        };
        if let Some((lowest, highest, by)) = outside(p, total, bar, total_slack) {
            let allowed = if (lowest, highest) == (p, p) {
                String::new()
            } else {
                format!(" ({lowest}–{highest} allowed)")
            };
            out.push(Mismatch {
                field: "input",
                predicted: p,
                reported: total,
                segment: None,
                plugin: None,
                at: "the whole request".into(),
                message: format!(
                    "the provider reported {total} input tokens in all (uncached, cache write and cache read) where {p} were predicted{allowed}, {by} the range: the request it counted is not the one predicted, or the estimate is off for this text"
                ),
            });
        }
    }
    for (field, p, r) in [
        ("cacheRead", read, reported.cache_read_tokens),
        ("cacheWrite", write, reported.cache_write_tokens),
    ] {
        let Some((lowest, highest, by)) = outside(p, r, bar, slack) else {
            continue;
        };
        // Where the provider's cached prefix ended, in our token positions.
        let scale = if p > 0 && r > 0 {
            1.0
        } else {
            profile.estimate().map_or(1.0, |rule| rule.latin.factor)
        };
        let offset = if field == "cacheRead" {
            (r as f64 * scale) as u64
        } else {
            ((reported.cache_read_tokens + r) as f64 * scale) as u64
        };
        let (at, part) = part_at(
            items,
            offset.min(if field == "cacheRead" {
                read
            } else {
                read + write
            }),
        );
        let (text, segment, plugin) = who(&part);
        let predicted = if (lowest, highest) == (p, p) || p == 0 {
            format!("{p} were predicted")
        } else {
            format!("{p} were predicted ({lowest}–{highest} allowed)")
        };
        let message = if r < p {
            format!(
                "the provider reported {r} {field} tokens where {predicted}, {by} the range: its cache stopped before {text} ({at}), the first segment that differed from what it had cached"
            )
        } else {
            format!(
                "the provider reported {r} {field} tokens where {predicted}, {by} the range: it cached beyond the predicted point; check {text} ({at})"
            )
        };
        out.push(Mismatch {
            field,
            predicted: p,
            reported: r,
            segment,
            plugin,
            at,
            message,
        });
    }
    out
}

// ---- advice ---------------------------------------------------------------------------------

fn with_layout(turns: &[Vec<Item>], layout: &[String]) -> Vec<Vec<Item>> {
    turns
        .iter()
        .map(|items| {
            items
                .iter()
                .cloned()
                .map(|mut item| {
                    item.breakpoint = match &item.slot {
                        Slot::System(kind) => layout.contains(kind),
                        Slot::HistoryNewest => layout.iter().any(|l| l == "history"),
                        Slot::Other => false,
                    };
                    item
                })
                .collect()
        })
        .collect()
}

fn rekey(item: &mut Item) {
    let mut key = item.tag.clone().into_bytes();
    for part in &item.parts {
        key.extend_from_slice(part.part.from.to_string().as_bytes());
        key.push(0);
        key.extend_from_slice(part.part.text.as_bytes());
        key.push(0);
    }
    item.key = key;
}

/// Moves a segment's tokens out of the cached prefix (as if it were declared `turn`).
fn without_segment(turns: &[Vec<Item>], segment: &str) -> Vec<Vec<Item>> {
    turns
        .iter()
        .map(|items| {
            let mut items = items.clone();
            let mut moved = 0;
            for item in items.iter_mut() {
                if let Some(at) = item
                    .parts
                    .iter()
                    .position(|p| p.part.segment().as_deref() == Some(segment))
                {
                    let part = item.parts.remove(at);
                    item.tokens = item.tokens.saturating_sub(part.tokens);
                    moved += part.tokens;
                    rekey(item);
                }
            }
            if let Some(last) = items.last_mut() {
                last.tokens += moved;
            }
            items
        })
        .collect()
}

/// Moves a constant segment into the cached system block (as if it were declared `session`).
fn into_stable(turns: &[Vec<Item>], segment: &str) -> Vec<Vec<Item>> {
    turns
        .iter()
        .map(|items| {
            let mut items = items.clone();
            let mut moved: Option<ItemPart> = None;
            for item in items.iter_mut() {
                if let Some(at) = item
                    .parts
                    .iter()
                    .position(|p| p.part.segment().as_deref() == Some(segment))
                {
                    let part = item.parts.remove(at);
                    item.tokens = item.tokens.saturating_sub(part.tokens);
                    rekey(item);
                    moved = Some(part);
                }
            }
            if let Some(part) = moved {
                let target = items
                    .iter()
                    .position(|i| i.slot == Slot::System("stable-segments".into()))
                    .or_else(|| items.iter().position(|i| matches!(i.slot, Slot::System(_))));
                if let Some(target) = target {
                    items[target].tokens += part.tokens;
                    items[target].parts.push(part);
                    rekey(&mut items[target]);
                }
            }
            items
        })
        .collect()
}

/// Every cause of cache writes over the session, the costliest first: the segment (or event)
/// named, the turns, the tokens written, their cost and its share of the total cost, and for a
/// segment what to do about it.
fn write_notes(sim: &Sim<'_>, sims: &[TurnSim], total_cost: f64) -> Vec<String> {
    // One entry per cause (its first write) with every turn it wrote in and the tokens summed.
    let mut by_cause: Vec<(WriteCause, Vec<usize>)> = Vec::new();
    for cause in sims.iter().flat_map(|s| &s.causes) {
        match by_cause
            .iter_mut()
            .find(|(c, _)| c.name == cause.name && c.kind == cause.kind)
        {
            Some((c, turns)) => {
                if !turns.contains(&(cause.turn + 1)) {
                    turns.push(cause.turn + 1);
                }
                c.tokens += cause.tokens;
            }
            None => by_cause.push((cause.clone(), vec![cause.turn + 1])),
        }
    }
    by_cause.sort_by(|(a, _), (b, _)| b.tokens.cmp(&a.tokens).then(a.name.cmp(&b.name)));
    by_cause
        .into_iter()
        .map(|(cause, turns)| {
            let WriteCause {
                name,
                segment,
                kind,
                tokens,
                ..
            } = cause;
            let cost = tokens as f64 * sim.write_price() / 1e6;
            let share = if total_cost > 0.0 { cost / total_cost * 100.0 } else { 0.0 };
            let turns: Vec<String> = turns.iter().map(usize::to_string).collect();
            let what = match (kind, segment.is_some()) {
                ("moved", true) => " — it moves every turn: it sits at a depth inside the cached history, so the history breakpoint is never read past it; put it at depth 0 or 1 (after the moving breakpoint) or pre-history",
                ("changed", true) => " — its text changes inside the cached prefix: declare it `turn` or move it after the last breakpoint",
                ("new", true) | ("removed", true) => " — it comes and goes inside the cached prefix: keep it after the last breakpoint",
                _ => "",
            };
            let verb = match kind {
                "changed" | "moved" | "new" | "removed" => format!("{kind} in turn(s) {}", turns.join(", ")),
                _ => format!("turn(s) {}", turns.join(", ")),
            };
            format!(
                "Cache writes caused by {name} ({verb}): {tokens} tokens written, ${cost:.5}, {share:.1}% of the total cost{what}."
            )
        })
        .collect()
}

fn advice(sim: &Sim<'_>, turns: &[Vec<Item>], sims: &[TurnSim], current_cost: f64) -> Advice {
    let mut notes = Vec::new();
    let (current_layout, best_layouts) = if sim.profile.provider.caching
        == Caching::ExplicitBreakpoints
    {
        let mut candidates: Vec<String> = Vec::new();
        for item in turns.iter().flatten() {
            if let Slot::System(kind) = &item.slot
                && !candidates.contains(kind)
            {
                candidates.push(kind.clone());
            }
        }
        if turns
            .iter()
            .flatten()
            .any(|i| i.slot == Slot::HistoryNewest)
        {
            candidates.push("history".into());
        }
        let mut current: Vec<String> = Vec::new();
        for item in turns.iter().flatten().filter(|i| i.breakpoint) {
            let name = match &item.slot {
                Slot::System(kind) => kind.clone(),
                Slot::HistoryNewest => "history".into(),
                Slot::Other => continue,
            };
            if !current.contains(&name) {
                current.push(name);
            }
        }
        let max = sim.profile.provider.max_breakpoints.unwrap_or(4);
        let mut layouts = Vec::new();
        for mask in 1u32..(1 << candidates.len().min(16)) {
            if mask.count_ones() as usize > max {
                continue;
            }
            let layout: Vec<String> = candidates
                .iter()
                .enumerate()
                .filter(|(i, _)| mask & (1 << i) != 0)
                .map(|(_, c)| c.clone())
                .collect();
            let cost = sim.total_cost(&with_layout(turns, &layout));
            layouts.push(Layout {
                breakpoints: layout,
                cost,
                saving: current_cost - cost,
            });
        }
        layouts.sort_by(|a, b| {
            a.cost
                .total_cmp(&b.cost)
                .then(a.breakpoints.len().cmp(&b.breakpoints.len()))
        });
        // One layout per cost (the one with the fewest breakpoints), and only cheaper ones.
        layouts.dedup_by(|a, b| (a.cost - b.cost).abs() < 1e-12);
        layouts.retain(|l| l.saving > 1e-12);
        layouts.truncate(3);
        if layouts.is_empty() {
            notes.push(
                "No breakpoint layout is cheaper than the current one for this session.".into(),
            );
        }
        (
            Some(Layout {
                breakpoints: current,
                cost: current_cost,
                saving: 0.0,
            }),
            layouts,
        )
    } else {
        notes.push("OpenAI caches the longest common prefix automatically: there are no breakpoints to place; keep what changes at the end.".into());
        (None, Vec::new())
    };

    // Segments whose text changes inside the cached prefix, and constant ones outside it.
    let mut texts: BTreeMap<String, (Vec<Option<String>>, bool, bool)> = BTreeMap::new();
    for (t, items) in turns.iter().enumerate() {
        let last_breakpoint = items.iter().rposition(|i| i.breakpoint);
        for (j, item) in items.iter().enumerate() {
            let cacheable = match sim.profile.provider.caching {
                Caching::ExplicitBreakpoints => last_breakpoint.is_some_and(|b| j <= b),
                Caching::AutomaticPrefix => true,
            };
            for part in &item.parts {
                if let Some(segment) = part.part.segment() {
                    let entry = texts
                        .entry(segment.to_string())
                        .or_insert_with(|| (vec![None; turns.len()], false, false));
                    entry.0[t] = Some(part.part.text.clone());
                    if cacheable {
                        entry.1 = true;
                    } else {
                        entry.2 = true;
                    }
                }
            }
        }
    }
    let mut volatility = Vec::new();
    for (segment, (seen, in_cached, in_uncached)) in &texts {
        let plugin = segment.split('/').next().unwrap_or_default().to_string();
        let present: Vec<&String> = seen.iter().flatten().collect();
        let changes = present.windows(2).filter(|w| w[0] != w[1]).count();
        let moves = sims
            .iter()
            .flat_map(|s| &s.causes)
            .filter(|c| c.kind == "moved" && c.segment.as_deref() == Some(segment.as_str()))
            .count();
        let (change, why, simulated) = if *in_cached && changes == 0 && moves > 0 {
            (
                "put it at depth 0 or 1 (after the moving history breakpoint) or pre-history"
                    .to_string(),
                format!(
                    "it moves with the history inside the cached prefix ({moves} time(s) in {} turns), so the history breakpoint is never read past it",
                    turns.len()
                ),
                without_segment(turns, segment),
            )
        } else if *in_cached && changes > 0 {
            (
                "declare it `turn` (or move it after the last breakpoint)".to_string(),
                format!(
                    "its text changes {changes} time(s) in {} turns inside the cached prefix, rewriting everything after it",
                    turns.len()
                ),
                without_segment(turns, segment),
            )
        } else if *in_uncached
            && !*in_cached
            && changes == 0
            && present.len() == turns.len()
            && turns.len() > 1
        {
            (
                "declare it `session` (it never changed)".to_string(),
                format!(
                    "its text is the same in all {} turns but sits after the last breakpoint, so it is paid at full price every turn",
                    turns.len()
                ),
                into_stable(turns, segment),
            )
        } else {
            continue;
        };
        let cost_after = sim.total_cost(&simulated);
        volatility.push(VolatilityAdvice {
            segment: segment.clone(),
            plugin,
            change,
            why,
            cost_after,
            saving: current_cost - cost_after,
        });
    }
    volatility.retain(|v| v.saving > 1e-12);
    volatility.sort_by(|a, b| b.saving.total_cmp(&a.saving));
    let largest = turns
        .iter()
        .map(|items| items.iter().map(|i| i.tokens).sum::<u64>())
        .max()
        .unwrap_or(0);
    if largest < sim.min {
        notes.push(format!(
            "The prompt never reaches {}'s minimum cacheable {} tokens (largest: {largest}): caching saves nothing for this session until the cacheable prefix grows.",
            sim.profile.model.id, sim.min
        ));
    }
    Advice {
        current_layout,
        best_layouts,
        volatility,
        notes,
    }
}

/// When the Anthropic request's breakpoints carry another TTL than the one priced (the Cache
/// panel's TTL is a what-if; the session's `cacheTtl` decides what is sent), says so.
fn ttl_note(anthropic_body: &Value, priced: &str) -> Option<String> {
    let blocks = anthropic_body["system"]
        .as_array()
        .into_iter()
        .flatten()
        .chain(
            anthropic_body["messages"]
                .as_array()
                .into_iter()
                .flatten()
                .flat_map(|m| m["content"].as_array().into_iter().flatten()),
        );
    let control = blocks.filter_map(|b| b.get("cache_control")).next()?;
    let sent = control["ttl"].as_str().unwrap_or("5m");
    (sent != priced).then(|| {
        format!(
            "The requests carry a {sent} cache TTL but are priced at {priced}: set the session's story `cacheTtl: {priced}` so what is sent matches this forecast."
        )
    })
}

/// What the request's `prompt_cache_key` changes. OpenAI routes a request to a cache machine
/// by a hash of its first ~256 tokens (and the key, when there is one), and spreads a prefix
/// used more than about 15 times a minute over more machines. The forecast's reads assume this
/// session's turns reach the same machine: true of one session, not of many sessions of the
/// same plugins sharing their first tokens — unless each carries its own key.
fn routing_note(openai_body: &Value) -> String {
    match openai_body.get("prompt_cache_key").and_then(Value::as_str) {
        Some(key) => format!(
            "The requests carry prompt_cache_key `{key}`: OpenAI routes them by it together with the first ~256 tokens, so this session's turns reach the same cache even when other sessions share those tokens; the reads above assume so (a key shared by more than about 15 requests a minute spills over to other machines)."
        ),
        None => "The requests carry no prompt_cache_key: OpenAI routes them by their first ~256 tokens only, which every session of these plugins shares; the reads above assume one session. With many players (more than about 15 requests a minute on that prefix), requests spill over to other machines and miss: set `promptCacheKey` in the session's story model to keep each session's turns together.".into(),
    }
}

// ---- the Cache panel ------------------------------------------------------------------------

/// The model a studio forecast prices against when none is named.
pub const DEFAULT_MODEL: &str = "claude-sonnet-4-5";

impl crate::live::LiveStudio {
    /// The Cache panel: the turns played in the studio (with the usage a real backend reported)
    /// and the next turn, forecast for `model` (default: the story model's name, else
    /// [`DEFAULT_MODEL`]). A model the facts do not know is refused with the known ones, as
    /// `covel forecast` refuses it: never silently priced as another. Token counts are
    /// remembered across calls.
    pub fn forecast(
        &mut self,
        model: Option<&str>,
        options: &ForecastOptions,
    ) -> Result<Forecast, String> {
        let facts = crate::facts::ModelFacts::embedded().map_err(|e| e.to_string())?;
        let story = &self.workspace().session.models.story;
        let name = model
            .filter(|m| !m.trim().is_empty())
            .map(str::to_string)
            .or_else(|| story.model.clone())
            .unwrap_or_else(|| DEFAULT_MODEL.into());
        let profile = facts.profile(&name).map_err(|e| e.to_string())?;
        let succeeded: Vec<_> = self
            .turns
            .iter()
            .filter(|t| t.error.is_none())
            .map(|t| {
                (
                    t.turn_id.clone(),
                    t.player_message.clone(),
                    usage_of_assembled_request(&t.steps),
                    t.reply.as_ref().map(|r| r.text.clone()),
                )
            })
            .collect();
        let mut played = Vec::with_capacity(succeeded.len() + 1);
        for (turn_id, say, usage, reply) in succeeded {
            if let Some(prompt) = self.turn_prompt(&turn_id) {
                played.push(PlayedTurn {
                    turn_id,
                    say,
                    preview: prompt.preview,
                    usage,
                    reply,
                    with_newer_plugins: prompt.with_newer_plugins,
                });
            }
        }
        let next = if self.target == crate::RuntimeTarget::Story {
            self.preview.clone()
        } else {
            self.workspace().preview(&crate::RuntimeTarget::Story)
        };
        // The message the preview assembled the next turn for (never empty).
        let say = self.workspace().previewed_player_message();
        played.push(PlayedTurn {
            turn_id: next.turn_id.clone(),
            say,
            preview: next,
            usage: None,
            reply: None,
            with_newer_plugins: false,
        });
        Ok(forecast(
            &played,
            &profile,
            options,
            &self.workspace().counter,
        ))
    }
}

// ---- the forecast ---------------------------------------------------------------------------

/// How a model's tokens are counted, in one line.
pub(crate) fn counts_note(profile: &ModelProfile) -> String {
    let encoding = profile.encoding().name();
    match profile.estimate() {
        Some(rule) => {
            let bands: Vec<String> = Script::ALL
                .iter()
                .map(|&script| {
                    let b = rule.band(script);
                    format!("{} ×{} (×{}–×{})", script.name(), b.factor, b.low, b.high)
                })
                .collect();
            format!(
                "estimated: exact {encoding} counts scaled per kind of text, {}; framing {} tokens a request ({}–{}), {} a further message ({}–{}), {} with tools ({}–{}); {}",
                bands.join(", "),
                rule.request.tokens,
                rule.request.low,
                rule.request.high,
                rule.message.tokens,
                rule.message.low,
                rule.message.high,
                rule.tools.tokens,
                rule.tools.low,
                rule.tools.high,
                profile.provider.tokenizer.note
            )
        }
        None => format!(
            "exact {encoding} counts, plus {} tokens and the role per message and {} for the reply",
            profile.provider.message_overhead_tokens.unwrap_or(0),
            profile.provider.reply_priming_tokens.unwrap_or(0)
        ),
    }
}

/// A turn's output tokens and where they come from: the usage the backend reported, else the
/// assumed reply length, else the played reply's text counted with the model's tokenizer.
fn output_of(
    turn: &PlayedTurn,
    options: &ForecastOptions,
    counting: &Counting<'_>,
) -> (u64, &'static str) {
    if let Some(reported) = turn.usage.as_ref().and_then(reported_usage) {
        return (reported.output_tokens, "reported");
    }
    if let Some(tokens) = options.reply_tokens {
        return (tokens, "assumed");
    }
    match &turn.reply {
        Some(text) => (counting.tokens(text), "reply text"),
        None => (0, "reply text"),
    }
}

/// Forecasts caching and cost for played turns against a model.
pub fn forecast(
    played: &[PlayedTurn],
    profile: &ModelProfile,
    options: &ForecastOptions,
    counter: &TokenCounter,
) -> Forecast {
    let counting = Counting::new(profile, counter);
    let explicit = profile.provider.caching == Caching::ExplicitBreakpoints;
    let overhead = profile.provider.message_overhead_tokens.unwrap_or(0);
    let priming = profile.provider.reply_priming_tokens.unwrap_or(0);
    let turns: Vec<Vec<Item>> = played
        .iter()
        .map(|t| {
            if explicit {
                anthropic_items(&t.preview, &counting)
            } else {
                openai_items(&t.preview, &counting, overhead, priming)
            }
        })
        .collect();
    let ttl_name = if explicit {
        options.ttl.as_str()
    } else {
        "default"
    };
    let sim = Sim {
        profile,
        options,
        ttl: profile.ttl_seconds(ttl_name) as f64,
        min: profile
            .model
            .min_cacheable_tokens
            .max(profile.provider.min_cacheable_tokens.unwrap_or(0)),
        counter,
    };
    let sims = sim.run(&turns);

    let mut rows = Vec::new();
    let mut ledger: BTreeMap<String, LedgerRow> = BTreeMap::new();
    for (index, ((turn, items), result)) in played.iter().zip(&turns).zip(&sims).enumerate() {
        let input_tokens: u64 = items.iter().map(|i| i.tokens).sum();
        let uncached = input_tokens - result.read - result.write;
        let (output_tokens, output_from) = output_of(turn, options, &counting);
        let mut cost = sim.price(uncached, result.write, result.read);
        cost.output = output_tokens as f64 * profile.model.prices.output / 1e6;
        let input_side = cost.total;
        cost.total += cost.output;
        // The input side scales with the count: over its error bar, the cost's range.
        let range = counting.estimate.map(|_| {
            (
                items.iter().map(|i| i.low).sum::<u64>(),
                items.iter().map(|i| i.high).sum::<u64>(),
            )
        });
        let scale = |bound: u64| {
            if input_tokens == 0 {
                1.0
            } else {
                bound as f64 / input_tokens as f64
            }
        };
        let cost_range = range.map(|(low, high)| {
            (
                input_side * scale(low) + cost.output,
                input_side * scale(high) + cost.output,
            )
        });
        let reported = turn.usage.as_ref().and_then(reported_usage);
        let bar = range.map_or((1.0, 1.0), |(low, high)| (scale(low), scale(high)));
        let mismatches = reported
            .map(|r| {
                // OpenAI's tool definitions are rendered in a format it does not publish: the
                // forecast leaves them out, so a request offering tools has no total to check.
                let uncounted_tools = !explicit
                    && turn.preview.prompt.requests.openai["tools"]
                        .as_array()
                        .is_some_and(|t| !t.is_empty());
                let predicted = Predicted {
                    read: result.read,
                    write: result.write,
                    input: (!uncounted_tools).then_some(input_tokens),
                    bar,
                };
                mismatches(profile, items, &predicted, &r)
            })
            .unwrap_or_default();
        for (item, &(read, write, cacheable)) in items.iter().zip(&result.per_item) {
            // Split the item's billing over its parts in order (a prefix is read first).
            let (mut r_left, mut w_left) = (read, write);
            for part in &item.parts {
                let r = r_left.min(part.tokens);
                r_left -= r;
                let w = w_left.min(part.tokens - r);
                w_left -= w;
                let u = part.tokens - r - w;
                let owner = part.part.owner();
                let row = ledger.entry(owner.clone()).or_insert_with(|| LedgerRow {
                    is_plugin: !owner.starts_with('('),
                    owner,
                    cached_part_tokens: 0,
                    uncached_part_tokens: 0,
                    cache_read_tokens: 0,
                    cache_write_tokens: 0,
                    uncached_tokens: 0,
                    cost: 0.0,
                    share: 0.0,
                });
                let cached_part = if explicit {
                    if cacheable { part.tokens } else { 0 }
                } else {
                    r
                };
                row.cached_part_tokens += cached_part;
                row.uncached_part_tokens += part.tokens - cached_part;
                row.cache_read_tokens += r;
                row.cache_write_tokens += w;
                row.uncached_tokens += u;
                row.cost += sim.price(u, w, r).total;
            }
        }
        rows.push(TurnForecast {
            turn: index + 1,
            turn_id: turn.turn_id.clone(),
            say: turn.say.clone(),
            at_seconds: index as f64 * options.pace_seconds,
            input_tokens,
            input_tokens_range: range,
            breakpoints: result.breakpoints.clone(),
            uncached_tokens: uncached,
            cache_write_tokens: result.write,
            cache_read_tokens: result.read,
            output_tokens,
            output_from,
            cost,
            cost_range,
            cost_without_cache: input_tokens as f64 * profile.model.prices.input / 1e6
                + cost.output,
            reported,
            mismatches,
            with_newer_plugins: turn.with_newer_plugins,
        });
    }

    let mut totals = Totals::default();
    for row in &rows {
        totals.input_tokens += row.input_tokens;
        totals.uncached_tokens += row.uncached_tokens;
        totals.cache_write_tokens += row.cache_write_tokens;
        totals.cache_read_tokens += row.cache_read_tokens;
        totals.output_tokens += row.output_tokens;
        totals.cost.output += row.cost.output;
        if let Some((low, high)) = row.cost_range {
            let (l, h) = totals.cost_range.unwrap_or((0.0, 0.0));
            totals.cost_range = Some((l + low, h + high));
        }
        totals.cost.input += row.cost.input;
        totals.cost.cache_write += row.cost.cache_write;
        totals.cost.cache_read += row.cost.cache_read;
        totals.cost.total += row.cost.total;
        totals.cost_without_cache += row.cost_without_cache;
    }
    totals.saving = totals.cost_without_cache - totals.cost.total;
    if totals.output_tokens > 0 {
        ledger.insert(
            "(reply)".into(),
            LedgerRow {
                owner: "(reply)".into(),
                is_plugin: false,
                cached_part_tokens: 0,
                uncached_part_tokens: 0,
                cache_read_tokens: 0,
                cache_write_tokens: 0,
                uncached_tokens: 0,
                cost: totals.cost.output,
                share: 0.0,
            },
        );
    }
    let mut ledger: Vec<LedgerRow> = ledger.into_values().collect();
    for row in &mut ledger {
        row.share = if totals.cost.total > 0.0 {
            row.cost / totals.cost.total
        } else {
            0.0
        };
    }
    ledger.sort_by(|a, b| b.cost.total_cmp(&a.cost).then(a.owner.cmp(&b.owner)));
    // Layouts and volatility change only the input side: compare them without the output.
    let input_cost = totals.cost.total - totals.cost.output;
    let mut advice = advice(&sim, &turns, &sims, input_cost);
    advice
        .notes
        .extend(write_notes(&sim, &sims, totals.cost.total));
    if let Some(last) = played.last() {
        let requests = &last.preview.prompt.requests;
        if explicit {
            advice
                .notes
                .extend(ttl_note(&requests.anthropic, &options.ttl));
        } else {
            advice.notes.push(routing_note(&requests.openai));
        }
    }
    let model = ModelSummary {
        id: profile.model.id.clone(),
        provider: profile.model.provider.clone(),
        caching: profile.provider.caching,
        min_cacheable_tokens: sim.min,
        ttl_seconds: sim.ttl as u64,
        pace_seconds: options.pace_seconds,
        prices: profile.model.prices.clone(),
        counts: counts_note(profile),
        facts_date: profile.facts_date.clone(),
        verified: profile.model.verified && profile.provider.verified,
        sources: profile.sources.values().map(|s| s.url.clone()).collect(),
    };
    let segment_tokens = played
        .last()
        .map(|t| segment_tokens(&t.preview, profile, counter))
        .unwrap_or_default();
    Forecast {
        model,
        turns: rows,
        totals,
        ledger,
        advice,
        segment_tokens,
        counting: counter.stats(),
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn openai_reads_from_1024_shared_tokens_on_in_whole_128_token_steps() {
        // One token under the minimum caches nothing; the minimum itself is read whole.
        assert_eq!(openai_cached(1023, 1023, 1024, 128), 0);
        assert_eq!(openai_cached(1024, 1024, 1024, 128), 1024);
        // A request over the minimum sharing less than it reads nothing.
        assert_eq!(openai_cached(5000, 1023, 1024, 128), 0);
        // Between steps: down to the last whole step; one more token reaches the next.
        assert_eq!(openai_cached(2000, 1151, 1024, 128), 1024);
        assert_eq!(openai_cached(2000, 1152, 1024, 128), 1152);
        assert_eq!(openai_cached(2000, 1279, 1024, 128), 1152);
    }
    use super::*;
    use serde_json::json;

    fn item(n: usize, tokens: u64, breakpoint: bool) -> Item {
        Item {
            label: format!("block {n}"),
            key: format!("block {n}").into_bytes(),
            tag: "user".into(),
            tokens,
            // As a Latin text whose exact count is `tokens` would have it.
            low: (tokens as f64 * 1.05).ceil() as u64,
            high: (tokens as f64 * 1.35).ceil() as u64,
            added: Estimate::default(),
            breakpoint,
            slot: Slot::Other,
            message: Some(n),
            parts: vec![ItemPart {
                part: Part {
                    from: Source::History {
                        id: format!("m{n}"),
                    },
                    text: format!("block {n}"),
                },
                tokens,
            }],
            content: format!("block {n}"),
        }
    }

    fn sim_turns(turns: &[Vec<Item>], pace: f64) -> Vec<TurnSim> {
        let facts = crate::facts::ModelFacts::embedded().expect("facts");
        let profile = facts.profile("claude-sonnet-4-5").expect("model");
        let options = ForecastOptions {
            pace_seconds: pace,
            ttl: "5m".into(),
            reply_tokens: None,
        };
        let counter = TokenCounter::new();
        let sim = Sim {
            profile: &profile,
            options: &options,
            ttl: 300.0,
            min: 1024,
            counter: &counter,
        };
        sim.run(turns)
    }

    #[test]
    fn a_cached_prefix_more_than_20_blocks_before_the_breakpoint_is_not_found() {
        // Turn 1 caches blocks 0..=9; turn 2 adds 25 blocks and breaks only at the last one.
        let first: Vec<Item> = (0..10).map(|n| item(n, 200, n == 9)).collect();
        let second: Vec<Item> = (0..35).map(|n| item(n, 200, n == 34)).collect();
        let sims = sim_turns(&[first.clone(), second], 10.0);
        let row = &sims[1].breakpoints[0];
        assert_eq!(
            (row.outcome, row.reason_code),
            (Outcome::Write, "beyond-lookback"),
            "{}",
            row.reason
        );
        assert_eq!(sims[1].read, 0);
        // Within 20 blocks the earlier prefix is found and only the new blocks are written.
        let near: Vec<Item> = (0..25).map(|n| item(n, 200, n == 24)).collect();
        let sims = sim_turns(&[first, near], 10.0);
        assert_eq!((sims[1].read, sims[1].write), (2000, 3000));
        assert_eq!(sims[1].breakpoints[0].reason_code, "extends");
    }

    #[test]
    fn a_claude_prefix_whose_error_bar_straddles_the_minimum_is_uncertain_with_both_costs() {
        // 880 counted tokens: ×1.05–×1.35 is about 924–1188, around the 1024 minimum.
        let turn: Vec<Item> = (0..4).map(|n| item(n, 220, n == 3)).collect();
        let sims = sim_turns(&[turn], 60.0);
        let row = &sims[0].breakpoints[0];
        assert_eq!((row.outcome, row.reason_code), (Outcome::Miss, "uncertain"));
        let band = crate::tokens::Band {
            factor: 1.2,
            low: 1.05,
            high: 1.35,
        }
        .apply(880);
        assert!(band.low < 1024 && band.high >= 1024, "{band:?}");
        let said = format!("{}–{} tokens", band.low, band.high);
        assert!(row.reason.contains(&said), "{}", row.reason);
        assert!(
            row.reason.contains("880 tokens are written ($0.00330)"),
            "{}",
            row.reason
        );
        assert!(
            row.reason.contains("paid as input ($0.00264)"),
            "{}",
            row.reason
        );
        // Far from the minimum, the verdict is certain.
        let large: Vec<Item> = (0..4).map(|n| item(n, 400, n == 3)).collect();
        assert_eq!(
            sim_turns(&[large], 60.0)[0].breakpoints[0].reason_code,
            "cold"
        );
    }

    /// Only the turn's first call sends the prompt the forecast predicts: its usage is the
    /// one compared; a tool round or a correction after it, or a call a hook rewrote, is not.
    #[test]
    fn only_the_usage_of_the_call_that_sent_the_assembled_prompt_is_compared() {
        use crate::turn::record::{LoopStep, ModelStep};
        let call = |n: u32, added: Vec<Value>, replaced: Vec<String>, input: u64| {
            let mut reply = crate::models::Reply::text("A reply.");
            reply.usage = Some(json!({"input_tokens": input, "output_tokens": 3}));
            LoopStep::Model(ModelStep {
                call: n,
                added,
                tools: Vec::new(),
                replaced,
                reply: Some(reply),
                error: None,
                duration_ms: 0.0,
            })
        };
        let tool_round = vec![json!({"role": "tool", "content": "ok"})];
        let steps = [
            call(1, Vec::new(), Vec::new(), 900),
            call(2, tool_round, Vec::new(), 960),
        ];
        assert_eq!(
            usage_of_assembled_request(&steps),
            Some(json!({"input_tokens": 900, "output_tokens": 3}))
        );
        let rewritten = [call(1, Vec::new(), vec!["messages".into()], 900)];
        assert_eq!(usage_of_assembled_request(&rewritten), None);
        let scripted = [LoopStep::Model(ModelStep {
            call: 1,
            added: Vec::new(),
            tools: Vec::new(),
            replaced: Vec::new(),
            reply: Some(crate::models::Reply::text("A reply.")),
            error: None,
            duration_ms: 0.0,
        })];
        assert_eq!(usage_of_assembled_request(&scripted), None);
    }

    #[test]
    fn a_slow_pace_expires_the_cache_between_turns() {
        let turn: Vec<Item> = (0..8).map(|n| item(n, 200, n == 7)).collect();
        let sims = sim_turns(&[turn.clone(), turn.clone()], 400.0);
        assert_eq!(
            sims[1].breakpoints[0].reason_code, "ttl-expired",
            "{}",
            sims[1].breakpoints[0].reason
        );
        assert_eq!((sims[1].read, sims[1].write), (0, 1600));
        let sims = sim_turns(&[turn.clone(), turn], 60.0);
        assert_eq!((sims[1].read, sims[1].write), (1600, 0));
        assert_eq!(sims[1].breakpoints[0].outcome, Outcome::Hit);
    }
}
