//! The token numbers every panel shows, from one counter: the story model's tokenizer (exact for
//! OpenAI encodings, the stated estimate with its range for Claude — see [`crate::tokens`]),
//! applied to the request blocks the forecast prices. So a cache breakpoint has one count in the
//! Prompt panel, the Cache panel and the Playtest panel. The SDK's `estimateTokens` stays beside
//! it where a rule counts with it (segment budgets, the compaction threshold) and is labelled so.

use crate::facts::{ModelFacts, ModelProfile};
use crate::forecast::{self, Counting, DEFAULT_MODEL, Item};
use crate::preview::Preview;
use crate::tokens::TokenCounter;
use covel_kernel::prompt::{CacheWarning, Place};
use serde::Serialize;
use std::sync::OnceLock;

/// A count and its range (`low == high == tokens` when exact).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct Count {
    #[specta(type = crate::ts::Number)]
    pub tokens: u64,
    #[specta(type = crate::ts::Number)]
    pub low: u64,
    #[specta(type = crate::ts::Number)]
    pub high: u64,
}

impl From<crate::tokens::Estimate> for Count {
    fn from(e: crate::tokens::Estimate) -> Self {
        Count {
            tokens: e.tokens,
            low: e.low,
            high: e.high,
        }
    }
}

impl Count {
    /// `231 tokens`, or `≈231 tokens` for an estimate.
    pub fn label(&self) -> String {
        let about = if self.low == self.high { "" } else { "≈" };
        format!("{about}{} tokens", self.tokens)
    }
}

/// Which model the panels count for, and why that one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct Counter {
    /// The model id whose tokenizer counts (`claude-sonnet-4-5`).
    pub model: String,
    /// Why this model: the session's story model, or the default and why not the story model.
    pub chosen: String,
    /// Exact counts (OpenAI encodings) or an estimate with a range (Claude).
    pub exact: bool,
    /// How counts are made, in one line.
    pub method: String,
}

/// Every count of one preview's prompt for one model, aligned with the preview's lists.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct PromptCounts {
    pub counter: Counter,
    /// The whole system prompt.
    pub system: Count,
    /// Per system block, in order.
    pub blocks: Vec<Count>,
    /// Per message of `prompt.messages` (a message the request leaves out counts 0).
    pub messages: Vec<Count>,
    /// Per row of `segments` (rows not included count 0).
    pub segments: Vec<Count>,
    /// Per cache breakpoint of `cache.breakpoints`: the request's tokens up to and including the
    /// block that carries it — the prefix the Cache panel prices.
    pub breakpoints: Vec<Count>,
    /// The smallest prefix the model caches (the session's `minCacheableTokens` when it names
    /// one, else the model facts').
    #[specta(type = crate::ts::Number)]
    pub minimum: u64,
    /// What the request adds around the text of its blocks and messages: Claude's framing (per
    /// request and per further message) and, when tools are offered, their definitions with the
    /// tool-use system prompt. The blocks, the messages and this add up to the request the
    /// Cache panel prices (0 for OpenAI, whose framing is in each message's count).
    pub added: Count,
}

fn sum(counts: &[Count]) -> Count {
    counts.iter().fold(Count::default(), |sum, c| Count {
        tokens: sum.tokens + c.tokens,
        low: sum.low + c.low,
        high: sum.high + c.high,
    })
}

/// The embedded model facts, read once (they are compiled in and never change).
fn facts() -> Option<&'static ModelFacts> {
    static FACTS: OnceLock<Option<ModelFacts>> = OnceLock::new();
    FACTS.get_or_init(|| ModelFacts::embedded().ok()).as_ref()
}

/// The model the panels count for: the story model when the facts know it, else the Cache
/// panel's default, saying why.
pub fn counter_for(story_model: Option<&str>) -> (ModelProfile, String) {
    let facts = facts().expect("the embedded model facts parse (a unit test checks them)");
    if let Some(name) = story_model.filter(|m| !m.trim().is_empty()) {
        match facts.profile(name) {
            Ok(profile) => return (profile, "the session's story model".into()),
            Err(_) => {
                let profile = facts
                    .profile(DEFAULT_MODEL)
                    .expect("the default model is in the facts");
                return (
                    profile,
                    format!(
                        "the story model `{name}` is not in the model facts, so counts use {DEFAULT_MODEL}'s"
                    ),
                );
            }
        }
    }
    let profile = facts
        .profile(DEFAULT_MODEL)
        .expect("the default model is in the facts");
    (profile, "no story model is named: the default".into())
}

/// Counts a preview of `workspace` for its session's story model (see [`counter_for`]).
pub fn of_session(
    workspace: &crate::Workspace,
    preview: &Preview,
    counter: &TokenCounter,
) -> PromptCounts {
    let story = &workspace.session.models.story;
    let (profile, chosen) = counter_for(story.model.as_deref());
    let minimum = story.min_cacheable_tokens.map(u64::from);
    prompt_counts(preview, &profile, chosen, minimum, counter)
}

/// Counts a preview's prompt for `profile` with the counter the forecast uses.
pub fn prompt_counts(
    preview: &Preview,
    profile: &ModelProfile,
    chosen: String,
    minimum: Option<u64>,
    counter: &TokenCounter,
) -> PromptCounts {
    let counting = Counting::new(profile, counter);
    // A run of request blocks, as the forecast totals a prefix: the blocks' counts and ranges
    // summed, with what the request adds around their text (Claude's framing, tool definitions).
    let total = |items: &[Item]| Count {
        tokens: items.iter().map(|i| i.tokens).sum(),
        low: items.iter().map(|i| i.low).sum(),
        high: items.iter().map(|i| i.high).sum(),
    };
    // One block's (or message's) own text, without what the request adds on it.
    let own = |item: &Item| Count {
        tokens: item.tokens - item.added.tokens,
        low: item.low - item.added.low,
        high: item.high - item.added.high,
    };
    let items = forecast::anthropic_items(preview, &counting, forecast::Detail::Counts);
    let blocks_len = preview.prompt.system.blocks.len().min(items.len());
    let blocks: Vec<Count> = items[..blocks_len].iter().map(own).collect();
    // A message the request leaves out (it has no text) counts nothing.
    let mut messages = vec![Count::default(); preview.prompt.messages.len()];
    for item in &items[blocks_len..] {
        if let Some(count) = item.message.and_then(|index| messages.get_mut(index)) {
            *count = own(item);
        }
    }
    let segments = preview
        .segments
        .iter()
        .map(|r| match r.included {
            true => counting.estimate(&r.content).into(),
            false => Count::default(),
        })
        .collect();
    // Where each body message's content blocks start among the request blocks.
    let message_starts: Vec<usize> = preview
        .prompt
        .requests
        .anthropic_request
        .messages
        .iter()
        .scan(blocks_len, |next, m| {
            let start = *next;
            *next += m.content.len();
            Some(start)
        })
        .collect();
    let breakpoints = preview
        .cache
        .breakpoints
        .iter()
        .map(|b| {
            let end = match b.place {
                Place::System { index } => Some(index),
                Place::Message { message, block, .. } => {
                    message_starts.get(message).map(|start| start + block)
                }
            };
            end.map_or_else(Count::default, |end| {
                total(&items[..(end + 1).min(items.len())])
            })
        })
        .collect();
    PromptCounts {
        counter: Counter {
            model: profile.model.id.clone(),
            chosen,
            exact: counting.exact(),
            method: forecast::counts_note(profile),
        },
        system: sum(&blocks),
        added: sum(&items.iter().map(|i| i.added.into()).collect::<Vec<_>>()),
        blocks,
        messages,
        segments,
        breakpoints,
        minimum: minimum.unwrap_or(profile.model.min_cacheable_tokens),
    }
}

/// The note on a prompt whose cache breakpoints are under the model's minimum, counted as every
/// panel counts: `prefix-below-minimum` when even the top of the range is under it,
/// `prefix-near-minimum` when the estimate's range straddles it. One note, on the longest
/// prefix under the minimum: a breakpoint's prefix holds every earlier one, so when it is too
/// short the earlier ones are too (the note names them), and when it is cached they are read
/// as part of it and cost nothing. A short prefix that a later breakpoint's cached prefix covers
/// is not remarked on.
pub fn below_minimum(preview: &Preview, counts: &PromptCounts) -> Vec<CacheWarning> {
    let (model, minimum) = (&counts.counter.model, counts.minimum);
    let cached_up_to = counts.breakpoints.iter().rposition(|c| c.low >= minimum);
    let longest_short = preview
        .cache
        .breakpoints
        .iter()
        .zip(&counts.breakpoints)
        .enumerate()
        .rfind(|(i, (_, c))| c.low < minimum && cached_up_to.is_none_or(|last| *i > last));
    longest_short
        .map(|(i, (b, c))| {
            let what = b.closes.describe();
            let (code, message) = if c.high < minimum {
                // The breakpoints before it in the list, which close shorter prefixes.
                let earlier = counts.breakpoints[..i]
                    .iter()
                    .enumerate()
                    .filter(|(j, _)| cached_up_to.is_none_or(|last| *j > last))
                    .map(|(j, _)| preview.cache.breakpoints[j].index)
                    .collect::<Vec<_>>();
                let nor = match earlier.as_slice() {
                    [] => String::new(),
                    [one] => format!(", nor does breakpoint {one} before it (a shorter prefix)"),
                    [first, last] => format!(
                        ", nor do breakpoints {first} and {last} before it (shorter prefixes)"
                    ),
                    [first, .., last] => {
                        format!(", nor do breakpoints {first}–{last} before it (shorter prefixes)")
                    }
                };
                (
                    "prefix-below-minimum",
                    format!(
                        "the prefix up to breakpoint {} ({what}) is {} for {model}, which caches prefixes of {minimum} tokens or more, so this breakpoint caches nothing{nor}",
                        b.index,
                        c.label()
                    ),
                )
            } else {
                (
                    "prefix-near-minimum",
                    format!(
                        "the prefix up to breakpoint {} ({what}) is {} ({}–{} by the estimate's range) for {model}, around its minimum of {minimum} tokens: it may or may not be cached",
                        b.index,
                        c.label(),
                        c.low,
                        c.high
                    ),
                )
            };
            CacheWarning {
                code,
                breakpoint: b.index,
                prefix_tokens: c.tokens,
                minimum: u32::try_from(minimum).unwrap_or(u32::MAX),
                message,
            }
        })
        .into_iter()
        .collect()
}
