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

mod advice;
mod items;
mod reported;
mod sim;
#[cfg(test)]
mod tests;

use crate::facts::{Caching, ModelProfile};
use crate::parts::{self, Part};
use crate::playtest::Playtest;
use crate::preview::Preview;
use crate::scripts::Script;
use crate::tokens::{CountStats, Encoding, Estimate, EstimateRule, TokenCounter};
use crate::workspace::Workspace;
use advice::*;
use covel_kernel::prompt::{Place, Source};
use items::*;
pub(crate) use items::{Detail, anthropic_items, claude_added_at};
pub use items::{openai_chat_tokens, segment_tokens};
pub use reported::reported_usage;
use reported::*;
use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};
use sim::*;
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
    /// What the input costs over the forecast's turns with these breakpoints (the output costs
    /// the same in every layout, so the totals' cost is this and the output's).
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

/// Tokens written at one breakpoint of one turn, and what caused them.
#[derive(Debug, Clone)]
struct WriteCause {
    turn: usize,
    name: String,
    segment: Option<String>,
    kind: &'static str,
    tokens: u64,
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

/// The model a studio forecast prices against when none is named.
pub const DEFAULT_MODEL: &str = "claude-sonnet-4-5";

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

/// A ledger row for `owner`, before anything is billed to it.
fn ledger_row(owner: String) -> LedgerRow {
    LedgerRow {
        is_plugin: !owner.starts_with('('),
        owner,
        cached_part_tokens: 0,
        uncached_part_tokens: 0,
        cache_read_tokens: 0,
        cache_write_tokens: 0,
        uncached_tokens: 0,
        cost: 0.0,
        share: 0.0,
    }
}

/// Bills a turn's blocks to who wrote each part: a block's read and written tokens fall on its
/// parts in order (a prefix is read first), the rest is paid as input.
fn bill(
    ledger: &mut BTreeMap<String, LedgerRow>,
    sim: &Sim<'_>,
    explicit: bool,
    items: &[Item],
    per_item: &[(u64, u64, bool)],
) {
    for (item, &(read, write, cacheable)) in items.iter().zip(per_item) {
        let (mut r_left, mut w_left) = (read, write);
        for part in &item.parts {
            let r = r_left.min(part.tokens);
            r_left -= r;
            let w = w_left.min(part.tokens - r);
            w_left -= w;
            let u = part.tokens - r - w;
            let owner = part.part.owner();
            let row = ledger
                .entry(owner.clone())
                .or_insert_with(|| ledger_row(owner));
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
}

/// The sums over every turn, and what caching saves.
fn totals_of(rows: &[TurnForecast]) -> Totals {
    let mut totals = Totals::default();
    for row in rows {
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
    totals
}

/// The ledger's rows, the replies' output as a row of its own, each with its share of the total,
/// costliest first.
fn ledger_rows(mut ledger: BTreeMap<String, LedgerRow>, totals: &Totals) -> Vec<LedgerRow> {
    if totals.output_tokens > 0 {
        let mut reply = ledger_row("(reply)".into());
        reply.cost = totals.cost.output;
        ledger.insert("(reply)".into(), reply);
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
    ledger
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
                anthropic_items(&t.preview, &counting, Detail::Attributed)
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
        bill(&mut ledger, &sim, explicit, items, &result.per_item);
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

    let totals = totals_of(&rows);
    let ledger = ledger_rows(ledger, &totals);
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
