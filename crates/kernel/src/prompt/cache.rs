//! Cache stability between two consecutive turns, decided on what the provider receives: this
//! turn's Anthropic request and the next turn's, compared content block by content block up to
//! each breakpoint — the system boundaries and the moving breakpoint on the newest history
//! message alike. A breakpoint is stable when the next request starts with exactly the blocks
//! up to it (the seed page: message positions are decided by "the cache_control layout of the
//! message history as a whole"). The report names the first block that differs and where it
//! came from, explains what an author can change, lints segments declared `stable` or `session`
//! whose content changed, and warns about prefixes shorter than the model caches.

use super::assemble::{Assembly, BlockKind, Origin, row_keys, segment_key};
use super::requests::{AnthropicRequest, Place, RequestPart, history_breakpoint};
use super::segment::{Placement, Volatility};
use serde::Serialize;

/// The first content block that differs between this turn's request and the next turn's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Difference {
    /// Where it sits in this turn's request.
    pub place: Place,
    /// What this turn's request has there.
    pub this_turn: Origin,
    /// What the next turn's request has there (none: the next request ends before it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_turn: Option<Origin>,
    /// The segment that made the difference, as `plugin/id`, when a segment did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub segment: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plugin: Option<String>,
    /// The difference in the author's words.
    pub said: String,
}

/// The difference in the author's words: `first difference: segment a/b; next turn: history
/// message m4` (what `covel preview` prints and the Prompt panel shows).
fn said(this_turn: &Origin, next_turn: Option<&Origin>) -> String {
    let instead = next_turn.map_or("the request ends".to_string(), Origin::describe);
    format!(
        "first difference: {}; next turn: {instead}",
        this_turn.describe()
    )
}

/// One cache breakpoint (`cache_control` block) of this turn's request across two turns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Breakpoint {
    /// 0-based, in request order (system breakpoints first).
    pub index: usize,
    /// The block that carries `cache_control`.
    pub place: Place,
    /// What that block is.
    pub closes: Origin,
    /// The moving breakpoint on the newest history message (the others close system blocks).
    pub moving: bool,
    /// Estimated tokens of the request up to and including the block.
    pub prefix_tokens: u64,
    /// Whether the next turn's request starts with exactly these blocks, so it reads this cache.
    pub stable: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_difference: Option<Difference>,
}

/// A segment declared stable or session whose content changed between turns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LintFinding {
    pub code: &'static str,
    pub plugin: String,
    pub segment: String,
    pub volatility: Volatility,
    /// The first breakpoint whose prefix it breaks, when it is sent ahead of one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub breaks_breakpoint: Option<usize>,
    pub message: String,
}

/// A cached prefix shorter than the model caches.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CacheWarning {
    pub code: &'static str,
    pub breakpoint: usize,
    pub prefix_tokens: u64,
    pub minimum: u32,
    pub message: String,
}

/// Why the next turn reads less from the cache than this turn writes, and what to change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CacheAdvice {
    /// `depth-segment-moves`, `turn-tail-changes`, `pre-history-message-changes`,
    /// `stable-block-changes`, `history-message-changes`, `summary-changes` or `prefix-changes`.
    pub code: &'static str,
    /// The breakpoints whose prefix changes.
    pub breakpoints: Vec<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plugin: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub segment: Option<String>,
    /// Tokens cached at the last breakpoint of this turn that the next turn cannot read.
    pub lost_tokens: u64,
    /// Tokens the next turn still reads from the cache (the last stable breakpoint's prefix).
    pub still_cached_tokens: u64,
    /// The finding in one sentence, in the author's words (what happens and what it costs).
    pub headline: String,
    /// What moves or changes, and what it costs.
    pub message: String,
    /// What keeps the prefix stable.
    pub fix: String,
}

/// The cache report of one preview.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CacheReport {
    /// Every breakpoint of this turn's Anthropic request, in request order.
    pub breakpoints: Vec<Breakpoint>,
    /// Whether the next turn reads the prefix cached at this turn's moving history breakpoint
    /// (`null` when there is no history to cache).
    pub history_prefix_stable: Option<bool>,
    /// One explanation when a breakpoint's prefix changes.
    pub advice: Vec<CacheAdvice>,
    pub lint: Vec<LintFinding>,
    pub warnings: Vec<CacheWarning>,
}

impl CacheReport {
    /// The moving history breakpoint, the one that closes the newest history message sent.
    pub fn moving(&self) -> Option<&Breakpoint> {
        self.breakpoints.iter().find(|b| b.moving)
    }
}

/// Two blocks are the same prefix material when they sit at the same place with the same text
/// (`cache_control` marks are not part of the prefix).
fn same(a: &(Place, &RequestPart), b: &(Place, &RequestPart)) -> bool {
    a.0 == b.0 && a.1.text == b.1.text
}

/// Compares this turn's assembly with the next turn's. `this_request` is this turn's Anthropic
/// request (`AnthropicRequest::of(this)`), which the caller builds anyway for its body. `count`
/// counts a block's tokens, given where it is: the host's counter for its model (the kernel knows
/// no tokenizer; [`crate::sdk::estimate_tokens`] when the host has none), which may add what the
/// request puts around the block's text there (a model's framing of the request or a message).
pub fn analyse(
    this: &Assembly,
    this_request: &AnthropicRequest,
    next: &Assembly,
    min_cacheable_tokens: u32,
    count: &dyn Fn(&Place, &str) -> u64,
) -> CacheReport {
    let next_request = AnthropicRequest::of(next);
    let parts = this_request.parts();
    let next_parts = next_request.parts();
    // The first block where the two requests part ways (if within this request).
    let split = parts
        .iter()
        .zip(next_parts.iter())
        .position(|(a, b)| !same(a, b))
        .or_else(|| (next_parts.len() < parts.len()).then_some(next_parts.len()));
    let difference = split.map(|at| difference_at(this, next, &parts, &next_parts, at));

    let mut breakpoints = Vec::new();
    let mut warnings = Vec::new();
    let mut tokens = 0;
    for (position, (place, part)) in parts.iter().enumerate() {
        tokens += count(place, &part.text);
        if !part.cache_control {
            continue;
        }
        let index = breakpoints.len();
        let stable = split.is_none_or(|at| at > position);
        if tokens < u64::from(min_cacheable_tokens) {
            warnings.push(CacheWarning {
                code: "prefix-below-minimum",
                breakpoint: index,
                prefix_tokens: tokens,
                minimum: min_cacheable_tokens,
                message: format!(
                    "the prefix up to breakpoint {index} ({}) is about {tokens} tokens; the model caches prefixes of {min_cacheable_tokens} tokens or more, so this breakpoint caches nothing",
                    part.origin.describe()
                ),
            });
        }
        breakpoints.push(Breakpoint {
            index,
            place: *place,
            closes: part.origin.clone(),
            moving: matches!(place, Place::Message { .. }),
            prefix_tokens: tokens,
            stable,
            first_difference: if stable { None } else { difference.clone() },
        });
    }
    let history_prefix_stable = breakpoints.iter().find(|b| b.moving).map(|b| b.stable);
    let advice = difference
        .iter()
        .filter_map(|d| advise(this, &breakpoints, d))
        .collect();
    let lint = lint(this, next, &parts, &breakpoints);
    CacheReport {
        breakpoints,
        history_prefix_stable,
        advice,
        lint,
        warnings,
    }
}

fn segment_of(origin: &Origin) -> Option<String> {
    match origin {
        Origin::Segment { plugin, segment } => Some(segment_key(plugin, segment)),
        _ => None,
    }
}

/// The first segment inside a system block or turn context whose content or presence differs.
fn first_changed_segment(
    this: &Assembly,
    next: &Assembly,
    mine: &[String],
    theirs: &[String],
) -> Option<String> {
    fn content<'a>(asm: &'a Assembly, key: &str) -> Option<&'a str> {
        asm.segments
            .iter()
            .find(|s| s.has_key(key))
            .map(|s| &*s.content)
    }
    mine.iter()
        .enumerate()
        .find(|(i, key)| theirs.get(*i) != Some(*key) || content(this, key) != content(next, key))
        .map(|(_, key)| key.clone())
        .or_else(|| theirs.get(mine.len()).cloned())
}

fn difference_at(
    this: &Assembly,
    next: &Assembly,
    parts: &[(Place, &RequestPart)],
    next_parts: &[(Place, &RequestPart)],
    at: usize,
) -> Difference {
    let (place, part) = &parts[at];
    let theirs = next_parts.get(at).map(|(_, p)| p.origin.clone());
    let segment = match (&part.origin, &theirs) {
        (
            Origin::System { segments, .. },
            Some(Origin::System {
                segments: other, ..
            }),
        )
        | (Origin::TurnContext { segments }, Some(Origin::TurnContext { segments: other })) => {
            first_changed_segment(this, next, segments, other)
        }
        (Origin::System { segments, .. } | Origin::TurnContext { segments }, _) => {
            segments.first().cloned()
        }
        (mine, other) => segment_of(mine).or_else(|| other.as_ref().and_then(segment_of)),
    };
    let plugin = segment
        .as_ref()
        .and_then(|s| s.split('/').next())
        .map(str::to_string);
    Difference {
        place: *place,
        said: said(&part.origin, theirs.as_ref()),
        this_turn: part.origin.clone(),
        next_turn: theirs,
        segment,
        plugin,
    }
}

/// Base messages (history, summaries, the player's input) after the message the moving
/// breakpoint closes ([`history_breakpoint`]: the newest one sent, so a newest history message
/// without text counts as after it): a depth up to this count lands behind the breakpoint.
fn messages_after_newest_history(this: &Assembly) -> usize {
    history_breakpoint(&this.messages).map_or(0, |n| {
        this.messages[n + 1..]
            .iter()
            .filter(|m| {
                matches!(
                    m.origin,
                    Origin::History { .. } | Origin::Summary { .. } | Origin::PlayerInput
                )
            })
            .count()
    })
}

fn advise(this: &Assembly, breakpoints: &[Breakpoint], d: &Difference) -> Option<CacheAdvice> {
    let broken: Vec<&Breakpoint> = breakpoints.iter().filter(|b| !b.stable).collect();
    let last = broken.last()?;
    let still_cached_tokens = breakpoints
        .iter()
        .filter(|b| b.stable)
        .map(|b| b.prefix_tokens)
        .max()
        .unwrap_or(0);
    let lost_tokens = last.prefix_tokens.saturating_sub(still_cached_tokens);
    let indexes: Vec<usize> = broken.iter().map(|b| b.index).collect();
    let which = match indexes.as_slice() {
        [one] => format!("breakpoint {one} ({})", last.closes.describe()),
        many => format!(
            "breakpoints {} (the last on {})",
            many.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", "),
            last.closes.describe()
        ),
    };
    let cost = format!(
        "the {} tokens cached up to {which} are never read again: the next turn reads {still_cached_tokens} tokens from the cache, {lost_tokens} fewer",
        last.prefix_tokens
    );
    let there_next = d
        .next_turn
        .as_ref()
        .map_or("the request ends there".to_string(), |o| {
            format!("{} is there instead", o.describe())
        });
    let row = d
        .segment
        .as_ref()
        .and_then(|key| this.segments.iter().find(|s| s.has_key(key)));
    let (code, message, fix) = match (&d.this_turn, row) {
        (Origin::Segment { .. }, Some(row)) if matches!(row.placement, Placement::Depth(_)) => {
            let Placement::Depth(depth) = row.placement else { return None };
            let behind = messages_after_newest_history(this);
            let neighbours = neighbours_of(this, &row.plugin, &row.id);
            (
                "depth-segment-moves",
                format!(
                    "`{}/{}` is a {}-role segment at {{depth: {depth}}}: it is inserted {depth} messages back from the newest{neighbours}, ahead of the moving breakpoint. Next turn the history grows and the segment moves with it, so the request differs at it ({there_next}); {cost}.",
                    row.plugin, row.id, row.role
                ),
                format!(
                    "Keep it behind the moving breakpoint: a depth of at most {behind} (it then follows the newest history message), or `post-history`; an instruction that does not depend on the turn can be a `pre-history` segment with the system role (it stays in the cached system prompt). Its volatility does not help here: volatility orders system-prompt segments, not segments placed in the history."
                ),
            )
        }
        (Origin::Segment { .. }, Some(row)) => (
            "pre-history-message-changes",
            format!("`{}/{}` ({:?}) is sent differently next turn ({there_next}); {cost}.", row.plugin, row.id, row.placement),
            "Keep the content of segments sent ahead of the history identical from turn to turn; text that changes every turn belongs in the turn context (`position: system`, volatility `turn`) or after the history (`post-history`).".to_string(),
        ),
        (Origin::System { block: BlockKind::TurnTail, .. }, _) => (
            "turn-tail-changes",
            format!(
                "{} changes in the system prompt's turn tail, after the last system breakpoint but ahead of the whole history; {cost}.",
                d.segment.as_ref().map_or("a segment".to_string(), |s| format!("`{s}`"))
            ),
            "A `pre-history` system-role `turn` segment still precedes the history. Use `position: system` with volatility `turn`: it goes into the turn context after the history, which keeps the system prompt unchanged every turn.".to_string(),
        ),
        (Origin::System { .. }, _) => (
            "stable-block-changes",
            format!(
                "{} changes inside a cached system block; {cost}.",
                d.segment.as_ref().map_or("the block's text".to_string(), |s| format!("`{s}`"))
            ),
            "Declare a segment whose content changes every turn `turn` (it then leaves the cached blocks), or keep its content constant.".to_string(),
        ),
        (Origin::History { id }, _) => (
            "history-message-changes",
            format!("history message `{id}` is sent differently next turn ({there_next}); {cost}."),
            "A `prompt.history-transform@1` provider must give the same message the same text every turn; a segment that moves into the history (see `segment`) must stay behind the moving breakpoint.".to_string(),
        ),
        (Origin::Summary { id }, _) => (
            "summary-changes",
            format!("summary `{id}` is sent differently next turn ({there_next}); {cost}."),
            "Expected on a turn that compacts the history; otherwise summaries must stay as stored.".to_string(),
        ),
        (origin, _) => (
            "prefix-changes",
            format!("{} is sent differently next turn ({there_next}); {cost}.", origin.describe()),
            "Keep everything ahead of the moving breakpoint identical from turn to turn.".to_string(),
        ),
    };
    let what = match (&d.this_turn, &d.segment) {
        (Origin::History { id }, _) => format!("History message `{id}`"),
        (Origin::Summary { id }, _) => format!("Summary `{id}`"),
        (_, Some(segment)) => format!("`{segment}`"),
        (origin, None) => {
            let mut said = origin.describe();
            if let Some(first) = said.get_mut(0..1) {
                first.make_ascii_uppercase();
            }
            said
        }
    };
    let how = match code {
        "depth-segment-moves" => "moves with the history every turn",
        "turn-tail-changes" | "stable-block-changes" => {
            "changes every turn inside the cached system prompt"
        }
        "summary-changes" => "is sent differently next turn",
        _ => "is sent differently next turn, ahead of the moving breakpoint",
    };
    let headline = format!(
        "{what} {how}: the next turn cannot read {lost_tokens} of the tokens cached this turn (it pays to write them again)."
    );
    Some(CacheAdvice {
        code,
        headline,
        breakpoints: indexes,
        plugin: d.plugin.clone(),
        segment: d.segment.clone(),
        lost_tokens,
        still_cached_tokens,
        message,
        fix,
    })
}

/// ", between `m3` and `m4`" for a message placed among history messages.
fn neighbours_of(this: &Assembly, plugin: &str, id: &str) -> String {
    let Some(at) = this.messages.iter().position(|m| matches!(&m.origin, Origin::Segment { plugin: p, segment: s } if p == plugin && s == id)) else {
        return String::new();
    };
    let name = |m: Option<&super::assemble::Message>| match m.map(|m| &m.origin) {
        Some(Origin::History { id }) | Some(Origin::Summary { id }) => Some(format!("`{id}`")),
        Some(Origin::PlayerInput) => Some("the player's input".to_string()),
        _ => None,
    };
    match (
        name(at.checked_sub(1).and_then(|i| this.messages.get(i))),
        name(this.messages.get(at + 1)),
    ) {
        (Some(before), Some(after)) => format!(", between {before} and {after}"),
        (None, Some(after)) => format!(", before {after}"),
        (Some(before), None) => format!(", after {before}"),
        (None, None) => String::new(),
    }
}

fn lint(
    this: &Assembly,
    next: &Assembly,
    parts: &[(Place, &RequestPart)],
    breakpoints: &[Breakpoint],
) -> Vec<LintFinding> {
    let mut out = Vec::new();
    let breakpoint_positions: Vec<usize> = parts
        .iter()
        .enumerate()
        .filter(|(_, (_, p))| p.cache_control)
        .map(|(i, _)| i)
        .collect();
    // A row is compared with the same row of the next turn (see `RowKey`).
    let next_rows: foldhash::HashMap<_, _> = row_keys(&next.segments)
        .into_iter()
        .zip(&next.segments)
        .collect();
    for (key, row) in row_keys(&this.segments).into_iter().zip(&this.segments) {
        if row.volatility == Volatility::Turn {
            continue;
        }
        let Some(other) = next_rows.get(&key) else {
            continue;
        };
        if other.content == row.content {
            continue;
        }
        let key = row.key();
        let sent_at = parts.iter().position(|(_, p)| match &p.origin {
            Origin::System { segments, .. } | Origin::TurnContext { segments } => {
                segments.contains(&key)
            }
            origin => segment_of(origin).as_deref() == Some(key.as_str()),
        });
        let breaks_breakpoint = sent_at
            .and_then(|at| breakpoint_positions.iter().position(|b| *b >= at))
            .filter(|i| *i < breakpoints.len());
        let volatility = match row.volatility {
            Volatility::Stable => "stable",
            _ => "session",
        };
        let consequence = match (breaks_breakpoint, row.volatility_applies) {
            _ if !row.included => {
                "this runtime does not receive it, but the declaration is still wrong".to_string()
            }
            (Some(i), true) => format!(
                "it sits before cache breakpoint {i}, so every turn rewrites the cached prefix"
            ),
            (Some(i), false) => format!(
                "its position ignores volatility, and it sits before cache breakpoint {i}, so every turn rewrites the cached prefix"
            ),
            (None, _) => "it sits after every cache breakpoint, but the declaration is still wrong"
                .to_string(),
        };
        out.push(LintFinding {
            code: "volatility-lint",
            plugin: row.plugin.to_string(),
            segment: row.id.to_string(),
            volatility: row.volatility,
            breaks_breakpoint,
            message: format!("segment `{key}` is declared `{volatility}` but its content changed between two turns; {consequence}. Declare it `turn` or keep it constant."),
        });
    }
    out
}
