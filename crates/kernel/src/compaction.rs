//! The history-compaction host (`history.compact@2`): when to compact, the provider's input and
//! budget, rule-by-rule validation of what it returns, the one-transaction apply, and the
//! consecutive-failure count that decides when the author (player) is told.

use crate::sdk::{TokenTally, estimate_tokens};
use serde::Serialize;
use serde_json::{Value, json};
use std::collections::BTreeSet;

/// Compaction runs when the estimate exceeds this share of the effective window.
pub const THRESHOLD: f64 = 0.6;
/// A notice every this many consecutive failures.
pub const NOTICE_EVERY: u32 = 3;
/// Maximum number of summary segments.
pub const MAX_SEGMENTS: u32 = 8;

/// The windows compaction works with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Windows {
    /// The smaller of the story and fast capacities after each one's reply reserve.
    pub context_window: u32,
    /// The fast model's own input capacity.
    pub input_window: u32,
}

impl Windows {
    pub fn new(
        story_window: u32,
        story_reserve: u32,
        fast_window: u32,
        fast_reserve: u32,
    ) -> Windows {
        let input_window = fast_window.saturating_sub(fast_reserve).max(1);
        let story = story_window.saturating_sub(story_reserve).max(1);
        Windows {
            context_window: input_window.min(story),
            input_window,
        }
    }
}

/// `{maxTokens, maxSegmentTokens, maxSegments}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Budget {
    pub max_tokens: u64,
    pub max_segment_tokens: u64,
    pub max_segments: u32,
}

impl Budget {
    /// Total 12 % of the window (floor 128, cap 8192, never above the window); per segment 4 %
    /// (floor 128, cap 2048, never above the total); eight segments.
    pub fn for_window(window: u32) -> Budget {
        let w = u64::from(window);
        let max_tokens = (w * 12 / 100).clamp(128, 8192).min(w).max(1);
        let max_segment_tokens = (w * 4 / 100).clamp(128, 2048).min(max_tokens);
        Budget {
            max_tokens,
            max_segment_tokens,
            max_segments: MAX_SEGMENTS,
        }
    }
}

/// The estimate that decides whether to compact: the system prompt, the uncompacted messages
/// and the existing summaries.
pub fn estimate(system_prompt: &str, messages: &[Value], summaries: &[Value]) -> u64 {
    estimate_with_system(TokenTally::of(system_prompt), messages, summaries)
}

/// [`estimate`] with the system prompt given as its tally (see [`TokenTally`]).
pub fn estimate_with_system(system: TokenTally, messages: &[Value], summaries: &[Value]) -> u64 {
    let text =
        |v: &Value| estimate_tokens(v.get("content").and_then(Value::as_str).unwrap_or_default());
    system.tokens()
        + messages
            .iter()
            .filter(|m| !is_compacted(m))
            .map(text)
            .sum::<u64>()
        + summaries.iter().map(text).sum::<u64>()
}

/// Whether a message was already replaced by a summary.
pub fn is_compacted(message: &Value) -> bool {
    message
        .get("compactedAtTurnId")
        .and_then(Value::as_str)
        .is_some_and(|t| !t.is_empty())
}

/// Whether an estimate is over the threshold (equal does not trigger).
pub fn over_threshold(estimated: u64, windows: Windows) -> bool {
    estimated as f64 > f64::from(windows.context_window) * THRESHOLD
}

/// The provider's input.
pub fn input(
    messages: &[Value],
    summaries: &[Value],
    windows: Windows,
    estimated: u64,
    locale: &str,
) -> Value {
    let budget = Budget::for_window(windows.context_window);
    json!({
        "messages": messages,
        "existingSummaries": summaries,
        "contextWindow": windows.context_window,
        "inputWindow": windows.input_window,
        "summaryBudget": budget,
        "estimatedTokens": estimated,
        "locale": locale,
    })
}

/// One rule of the validation, checked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RuleCheck {
    pub rule: &'static str,
    pub ok: bool,
    pub detail: String,
}

/// The verdict on a provider's output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Verdict {
    /// `null`: nothing to compact; nothing is written and nothing failed.
    pub nothing_to_compact: bool,
    pub accepted: bool,
    pub rules: Vec<RuleCheck>,
    /// The `deferred.reason`, when the provider postponed a merge.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deferred: Option<String>,
    /// Totals after applying: segments and tokens.
    pub total_segments: u32,
    pub total_tokens: u64,
}

impl Verdict {
    /// The first broken rule, as the failure reason.
    pub fn reason(&self) -> Option<String> {
        self.rules
            .iter()
            .find(|r| !r.ok)
            .map(|r| format!("{}: {}", r.rule, r.detail))
    }
}

fn strings(value: &Value, field: &str) -> Vec<String> {
    value
        .get(field)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect()
}

fn id_of(value: &Value) -> &str {
    value.get("id").and_then(Value::as_str).unwrap_or_default()
}

/// Validates a provider's output against the session's history before anything is written.
pub fn validate(
    output: &Value,
    session_id: &str,
    messages: &[Value],
    summaries: &[Value],
    budget: Budget,
) -> Verdict {
    let mut rules = Rules::default();
    // `null` means only "nothing to compact": nothing is written, and it is no failure.
    if output.is_null() {
        return Verdict {
            nothing_to_compact: true,
            accepted: false,
            rules: rules.0,
            deferred: None,
            total_segments: summaries.len() as u32,
            total_tokens: 0,
        };
    }
    let segments = output
        .get("summaries")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let deferred = output
        .pointer("/deferred/reason")
        .and_then(Value::as_str)
        .map(str::to_string);
    rules.check(
        "non-empty",
        !segments.is_empty(),
        crate::words::counted(segments.len(), "summary segment"),
    );
    let mut refs = References {
        session_id,
        messages,
        summaries,
        untagged: messages.iter().filter(|m| !is_compacted(m)).collect(),
        ..References::default()
    };
    let mut new_tokens = 0u64;
    // A segment covers a continuous prefix of the uncompacted messages, or replaces the oldest
    // continuous run of summaries: each id must be the next one at its cursor (`References`).
    for (index, segment) in segments.iter().enumerate() {
        new_tokens += check_segment(&mut rules, index, segment, budget, deferred.is_some());
        refs.check_segment(&mut rules, index, segment);
    }
    let retained: Vec<&Value> = summaries
        .iter()
        .filter(|s| !refs.replaced.contains(id_of(s)))
        .collect();
    let retained_tokens: u64 = retained
        .iter()
        .map(|s| estimate_tokens(s.get("content").and_then(Value::as_str).unwrap_or_default()))
        .sum();
    let total_segments = (retained.len() + segments.len()) as u32;
    let total_tokens = retained_tokens + new_tokens;
    // A deferred merge may leave up to twice the budget for a while; past that it is rejected.
    let factor = if deferred.is_some() { 2 } else { 1 };
    rules.check(
        "segment-count",
        total_segments <= budget.max_segments * factor,
        format!(
            "{} after applying; the limit is {}",
            crate::words::counted(total_segments as usize, "segment"),
            budget.max_segments * factor
        ),
    );
    rules.check(
        "total-tokens",
        total_tokens <= budget.max_tokens * u64::from(factor),
        format!(
            "about {total_tokens} summary tokens after applying; the limit is {}",
            budget.max_tokens * u64::from(factor)
        ),
    );
    let accepted = rules.0.iter().all(|r| r.ok);
    Verdict {
        nothing_to_compact: false,
        accepted,
        rules: rules.0,
        deferred,
        total_segments,
        total_tokens,
    }
}

/// The rule checks of one validation, in the order they were made.
#[derive(Default)]
struct Rules(Vec<RuleCheck>);

impl Rules {
    fn check(&mut self, rule: &'static str, ok: bool, detail: String) {
        self.0.push(RuleCheck { rule, ok, detail });
    }
}

/// The rules of one segment on its own: text, what it covers, its size, and what a deferred
/// result may carry. Answers its tokens.
fn check_segment(
    rules: &mut Rules,
    index: usize,
    segment: &Value,
    budget: Budget,
    deferred: bool,
) -> u64 {
    let content = segment
        .get("content")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let covers_messages = !strings(segment, "messageIds").is_empty();
    let covers_summaries = !strings(segment, "replacesSummaryIds").is_empty();
    let tokens = estimate_tokens(content);
    rules.check(
        "content-not-blank",
        !content.trim().is_empty(),
        format!(
            "segment {index} has {}",
            crate::words::counted(content.trim().len(), "character")
        ),
    );
    let one_kind = covers_messages != covers_summaries;
    rules.check(
        "covers-one-kind",
        one_kind,
        match (one_kind, covers_summaries) {
            (true, false) => format!("segment {index} covers new messages"),
            (true, true) => format!("segment {index} covers old summaries"),
            (false, _) => format!(
                "segment {index} must cover either new messages or old summaries, not both or neither"
            ),
        },
    );
    rules.check(
        "segment-budget",
        tokens <= budget.max_segment_tokens,
        format!(
            "segment {index} is about {tokens} tokens; the limit is {}",
            budget.max_segment_tokens
        ),
    );
    if deferred {
        rules.check(
            "deferred-only-new",
            !covers_summaries,
            format!("segment {index}: a deferred result may carry only new summaries"),
        );
    }
    tokens
}

/// How far the segments checked so far have covered the history: each segment must go on
/// where the one before stopped (a continuous prefix of the uncompacted messages, or the
/// oldest run of summaries), with references of this session, each once.
#[derive(Default)]
struct References<'a> {
    session_id: &'a str,
    messages: &'a [Value],
    summaries: &'a [Value],
    /// The messages not yet compacted, oldest first.
    untagged: Vec<&'a Value>,
    next_message: usize,
    next_summary: usize,
    seen_messages: BTreeSet<String>,
    seen_summaries: BTreeSet<String>,
    /// The summaries the segments replace.
    replaced: BTreeSet<String>,
}

/// The first reference of a segment that breaks each reference rule (one verdict per rule and
/// segment).
#[derive(Default)]
struct Breaks {
    foreign: Option<String>,
    duplicate: Option<String>,
    out_of_order: Option<String>,
}

impl References<'_> {
    fn check_segment(&mut self, rules: &mut Rules, index: usize, segment: &Value) {
        let message_ids = strings(segment, "messageIds");
        let replaces = strings(segment, "replacesSummaryIds");
        let mut breaks = Breaks::default();
        for id in &replaces {
            self.summary(id, &mut breaks);
        }
        for id in &message_ids {
            self.message(id, &mut breaks);
        }
        let (count, covered) = if replaces.is_empty() {
            let n = message_ids.len();
            (n, crate::words::counted(n, "message"))
        } else {
            let n = replaces.len();
            (n, crate::words::counted_as(n, "summary", "summaries"))
        };
        rules.check(
            "same-session",
            breaks.foreign.is_none(),
            format!(
                "segment {index}: {}",
                breaks.foreign.unwrap_or_else(|| if count == 1 {
                    format!("{covered} belongs to this session")
                } else {
                    format!("all {covered} belong to this session")
                })
            ),
        );
        rules.check(
            "no-duplicates",
            breaks.duplicate.is_none(),
            format!(
                "segment {index}: {}",
                breaks
                    .duplicate
                    .unwrap_or_else(|| format!("{covered}, none repeated"))
            ),
        );
        let (order_rule, in_order) = if replaces.is_empty() {
            (
                "message-prefix-in-order",
                "a continuous prefix of the uncompacted messages",
            )
        } else {
            (
                "oldest-summaries-in-order",
                "the oldest continuous run of summaries",
            )
        };
        rules.check(
            order_rule,
            breaks.out_of_order.is_none(),
            format!(
                "segment {index}: {}",
                breaks
                    .out_of_order
                    .unwrap_or_else(|| format!("{covered}, {in_order}"))
            ),
        );
    }

    /// A summary the segment replaces: of this session, once, and the oldest remaining.
    fn summary(&mut self, id: &str, breaks: &mut Breaks) {
        let expected = self.summaries.get(self.next_summary).map(id_of);
        let owned = self
            .summaries
            .iter()
            .find(|s| id_of(s) == id)
            .is_some_and(|s| s.get("sessionId").and_then(Value::as_str) == Some(self.session_id));
        if !owned && breaks.foreign.is_none() {
            breaks.foreign = Some(format!(
                "summary `{id}` is not an existing summary of this session"
            ));
        }
        if !self.seen_summaries.insert(id.to_string()) && breaks.duplicate.is_none() {
            breaks.duplicate = Some(format!("summary `{id}` is replaced twice"));
        }
        if expected != Some(id) && breaks.out_of_order.is_none() {
            breaks.out_of_order = Some(format!(
                "replaces `{id}`, but the oldest remaining summary is `{}`",
                expected.unwrap_or("(none)")
            ));
        }
        self.next_summary += 1;
        self.replaced.insert(id.to_string());
    }

    /// A message the segment covers: of this session, once, and the next uncompacted one.
    fn message(&mut self, id: &str, breaks: &mut Breaks) {
        let expected = self.untagged.get(self.next_message).map(|m| id_of(m));
        let owned = self
            .messages
            .iter()
            .find(|m| id_of(m) == id)
            .is_some_and(|m| m.get("sessionId").and_then(Value::as_str) == Some(self.session_id));
        if !owned && breaks.foreign.is_none() {
            breaks.foreign = Some(format!("message `{id}` is not a message of this session"));
        }
        if !self.seen_messages.insert(id.to_string()) && breaks.duplicate.is_none() {
            breaks.duplicate = Some(format!("message `{id}` is covered twice"));
        }
        if expected != Some(id) && breaks.out_of_order.is_none() {
            breaks.out_of_order = Some(format!(
                "covers `{id}`, but the next uncompacted message is `{}`",
                expected.unwrap_or("(none)")
            ));
        }
        self.next_message += 1;
    }
}

/// The history after applying an accepted output, in one step.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Applied {
    pub summaries: Vec<Value>,
    pub messages: Vec<Value>,
    /// Ids of the records written.
    pub written: Vec<String>,
}

/// Applies an accepted output: replaces only the listed summaries (a merge keeps the oldest
/// replaced summary's id, start and creation time) and marks the covered messages.
/// `new_id` makes ids for fresh records; `now` is the creation time of fresh records.
pub fn apply(
    output: &Value,
    session_id: &str,
    messages: &[Value],
    summaries: &[Value],
    mut new_id: impl FnMut() -> String,
    now: &str,
) -> Applied {
    let mut summaries_out: Vec<Value> = summaries.to_vec();
    let mut messages_out: Vec<Value> = messages.to_vec();
    let mut written = Vec::new();
    let latest = summaries
        .iter()
        .filter_map(|s| s.get("createdAt").and_then(Value::as_str))
        .max()
        .unwrap_or(now)
        .to_string();
    let mut fresh_index = 0;
    for segment in output
        .get("summaries")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let replaces = strings(segment, "replacesSummaryIds");
        let message_ids = strings(segment, "messageIds");
        let focus = segment
            .get("focusSections")
            .cloned()
            .unwrap_or_else(|| json!([]));
        let content = segment.get("content").cloned().unwrap_or_else(|| json!(""));
        if let Some(first) = replaces.first() {
            let old: Vec<Value> = summaries_out
                .iter()
                .filter(|s| replaces.iter().any(|r| r == id_of(s)))
                .cloned()
                .collect();
            let start = old
                .first()
                .and_then(|s| s.get("turnRangeStart"))
                .cloned()
                .unwrap_or(Value::Null);
            let end = old
                .last()
                .and_then(|s| s.get("turnRangeEnd"))
                .cloned()
                .unwrap_or(Value::Null);
            let created = old
                .first()
                .and_then(|s| s.get("createdAt"))
                .cloned()
                .unwrap_or(Value::Null);
            let record = json!({"id": first, "sessionId": session_id, "turnRangeStart": start, "turnRangeEnd": end,
                                "content": content, "focusSections": focus, "createdAt": created});
            // Messages of the merged summaries now belong to the merged record.
            for m in messages_out.iter_mut() {
                if let Some(tag) = m.get("compactedAtTurnId").and_then(Value::as_str)
                    && replaces.iter().any(|r| r == tag)
                {
                    m["compactedAtTurnId"] = json!(first);
                }
            }
            let position = summaries_out
                .iter()
                .position(|s| id_of(s) == first)
                .unwrap_or(0);
            summaries_out.retain(|s| !replaces.iter().any(|r| r == id_of(s)));
            summaries_out.insert(position.min(summaries_out.len()), record);
            written.push(first.clone());
        } else {
            let id = new_id();
            let covered: Vec<&Value> = message_ids
                .iter()
                .filter_map(|id| messages.iter().find(|m| id_of(m) == id))
                .collect();
            let turn = |m: Option<&&Value>| {
                m.and_then(|m| m.get("turnId"))
                    .cloned()
                    .unwrap_or(Value::Null)
            };
            fresh_index += 1;
            let created = format!("{latest}+{fresh_index}");
            let record = json!({"id": id, "sessionId": session_id, "turnRangeStart": turn(covered.first()), "turnRangeEnd": turn(covered.last()),
                                "content": content, "focusSections": focus, "createdAt": created});
            for m in messages_out.iter_mut() {
                if message_ids.iter().any(|mid| mid == id_of(m)) {
                    m["compactedAtTurnId"] = json!(id);
                }
            }
            summaries_out.push(record);
            written.push(id);
        }
    }
    Applied {
        summaries: summaries_out,
        messages: messages_out,
        written,
    }
}

/// A trace event of the compaction host.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TraceEvent {
    pub topic: &'static str,
    pub payload: Value,
}

/// Consecutive compaction failures of one session, kept in memory only.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FailureCounter {
    pub consecutive: u32,
}

impl FailureCounter {
    /// Records a failure; returns the events to emit (the failure, and every third time the
    /// failed-task notice).
    pub fn fail(
        &mut self,
        plugin_id: &str,
        extension_id: &str,
        reason: &str,
        turn_id: &str,
    ) -> Vec<TraceEvent> {
        self.consecutive += 1;
        let mut events = vec![TraceEvent {
            topic: "context.compaction.failed",
            payload: json!({"pluginId": plugin_id, "extensionId": extension_id, "reason": reason, "consecutiveFailures": self.consecutive}),
        }];
        if self.consecutive.is_multiple_of(NOTICE_EVERY) {
            events.push(TraceEvent {
                topic: "job-status.updated",
                payload: json!({
                    "jobId": format!("history-compaction:{turn_id}"),
                    "runtimeId": if extension_id.is_empty() { plugin_id.to_string() } else { format!("{plugin_id}/{extension_id}") },
                    "state": "failed",
                    "message": format!(
                        "The story memory has not been compressed for {} turns, so the prompt keeps growing. Check the fast model, or disable the compaction plugin for this session.",
                        self.consecutive
                    ),
                }),
            });
        }
        events
    }

    /// A run without a failure (success, or nothing to do) resets the count.
    pub fn succeed(&mut self) {
        self.consecutive = 0;
    }
}
