//! Evaluating a test session's expectations on one captured turn. Each check reports the rule it
//! applies, a description an author recognises, and on failure what was found instead.

use super::TurnCapture;
use crate::turn::record::LoopStep;
use covel_kernel::prompt::{Origin, Placement, SegmentRow, segment_key};
use covel_kernel::sdk::estimate_tokens;
use covel_kernel::test_session::{
    CacheCheck, Expectation, MessageCheck, ProviderCheck, SegmentCheck, SlotCheck, TextCheck,
    TokenCheck,
};
use serde::Serialize;
use serde_json::Value;

/// The result of one expectation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct CheckResult {
    /// The rule: `system-text`, `turn-context-text`, `message-text`, `segment-placement`,
    /// `slot-value`, `world-value`, `cache-boundaries`, `token-budget`, `provider-outcome`.
    pub rule: &'static str,
    pub description: String,
    pub passed: bool,
    /// What was found instead, on failure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// Where the expectation is written: `file:line:col`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
}

fn result(rule: &'static str, description: String, failure: Option<String>) -> CheckResult {
    CheckResult {
        rule,
        description,
        passed: failure.is_none(),
        detail: failure,
        location: None,
    }
}

/// Why `needle` is not in `text`, with the text around its closest match, so a one-word edit
/// shows without opening the prompt.
fn not_found(needle: &str, what: &str, text: &str) -> String {
    let mut said = format!(
        "{needle:?} is not in the {what} ({} characters)",
        text.chars().count()
    );
    if let Some(near) = closest::snippet(text, needle) {
        said.push_str(&format!("; closest: {near:?}"));
    }
    said
}

/// Whether `pattern` matches `text`; `Err` says why the pattern is not a regular expression.
fn regex_matches(pattern: &str, text: &str) -> Result<bool, String> {
    regex::Regex::new(pattern)
        .map(|re| re.is_match(text))
        .map_err(|e| format!("`matches` is not a regular expression: {e}"))
}

fn text_check(rule: &'static str, what: &str, text: &str, check: &TextCheck) -> CheckResult {
    let mut parts = Vec::new();
    let mut failure = None;
    if let Some(needle) = &check.contains {
        parts.push(format!("{what} contains {needle:?}"));
        if !text.contains(needle.as_str()) {
            failure = Some(not_found(needle, what, text));
        }
    }
    if let Some(pattern) = &check.matches {
        parts.push(format!("{what} matches /{pattern}/"));
        match regex_matches(pattern, text) {
            Ok(true) => {}
            Ok(false) if failure.is_none() => {
                failure = Some(format!("nothing in the {what} matches /{pattern}/"));
            }
            Ok(false) => {}
            Err(why) => failure = Some(why),
        }
    }
    if let Some(needle) = &check.not_contains {
        parts.push(format!("{what} does not contain {needle:?}"));
        if failure.is_none() && text.contains(needle.as_str()) {
            failure = Some(format!("{needle:?} is in the {what}"));
        }
    }
    if parts.is_empty() {
        return result(
            rule,
            format!("{what}: nothing to check"),
            Some("give `contains`, `notContains` or `matches`".into()),
        );
    }
    result(rule, parts.join(", "), failure)
}

fn block_name(placement: Placement) -> &'static str {
    match placement {
        Placement::SystemStable => "stable-segments",
        Placement::SystemTurnTail => "turn-tail",
        Placement::TurnContext => "turn-context",
        Placement::PreHistoryMessage => "pre-history",
        Placement::PostHistoryMessage => "post-history",
        Placement::Depth(_) => "depth",
    }
}

/// Segment keys in the order they appear in the request: system blocks, then messages.
fn prompt_order(capture: &TurnCapture) -> Vec<String> {
    let prompt = &capture.preview.prompt;
    let mut keys: Vec<String> = prompt
        .system
        .blocks
        .iter()
        .flat_map(|b| b.segments.iter().cloned())
        .collect();
    for message in &prompt.messages {
        match &message.origin {
            Origin::Segment { plugin, segment } => keys.push(segment_key(plugin, segment)),
            Origin::TurnContext { segments } => keys.extend(segments.iter().cloned()),
            _ => {}
        }
    }
    keys
}

fn pointer_value<'a>(value: &'a Value, pointer: &str) -> Option<&'a Value> {
    value.pointer(pointer).filter(|v| !v.is_null())
}

fn value_check(
    rule: &'static str,
    what: String,
    found: Option<&Value>,
    equals: Option<&Value>,
    absent: bool,
) -> CheckResult {
    if absent {
        let failure = found.map(|v| format!("found {v}"));
        return result(rule, format!("{what} is absent"), failure);
    }
    match (equals, found) {
        (Some(expected), Some(v)) if v == expected => {
            result(rule, format!("{what} = {expected}"), None)
        }
        (Some(expected), Some(v)) => result(
            rule,
            format!("{what} = {expected}"),
            Some(format!("found {v}")),
        ),
        (Some(expected), None) => result(
            rule,
            format!("{what} = {expected}"),
            Some("nothing there".into()),
        ),
        (None, found) => result(
            rule,
            format!("{what} exists"),
            found.is_none().then(|| "nothing there".into()),
        ),
    }
}

/// Evaluates one expectation.
pub fn evaluate(expectation: &Expectation, capture: &TurnCapture) -> CheckResult {
    let preview = &capture.preview;
    let prompt = &preview.prompt;
    match expectation {
        Expectation::System(check) => {
            let text = prompt.system.text();
            text_check("system-text", "system prompt", &text, check)
        }
        Expectation::TurnContext(check) => text_check(
            "turn-context-text",
            "turn context",
            &prompt.turn_context,
            check,
        ),
        Expectation::Message(check) => message_check(check, capture),
        Expectation::Segment(check) => segment_check(check, capture),
        Expectation::Slot(check) => slot_check(check, capture),
        Expectation::World(check) => {
            let found = pointer_value(&capture.world, &check.pointer);
            value_check(
                "world-value",
                format!("world{}", check.pointer),
                found,
                check.equals.as_ref(),
                check.absent,
            )
        }
        Expectation::Cache(check) => cache_check(check, capture),
        Expectation::Tokens(check) => tokens_check(check, capture),
        Expectation::TokensAtMost(max) => {
            let tokens =
                prompt.system.tokens + prompt.messages.iter().map(|m| m.tokens).sum::<u64>();
            result(
                "token-budget",
                format!("prompt tokens ≤ {max}"),
                (tokens > *max).then(|| {
                    format!(
                        "{tokens} tokens (system prompt {}, messages {}; estimateTokens, as budgets count)",
                        prompt.system.tokens,
                        tokens - prompt.system.tokens
                    )
                }),
            )
        }
        Expectation::Provider(check) => provider_check(check, capture),
        Expectation::Tool(check) => tool_check(check, &capture.steps),
        Expectation::Hook(check) => hook_check(check, &capture.steps),
    }
}

/// Text in a message (any, or the one at `index`, of a role): any chosen message may contain
/// the text, none the forbidden text.
fn message_check(check: &MessageCheck, capture: &TurnCapture) -> CheckResult {
    let preview = &capture.preview;
    let prompt = &preview.prompt;
    let messages: Vec<&covel_kernel::prompt::Message> = prompt
        .messages
        .iter()
        .filter(|m| check.role.as_deref().is_none_or(|r| r == m.role))
        .collect();
    let chosen: Vec<&covel_kernel::prompt::Message> = match check.index {
        None => messages.clone(),
        Some(i) => {
            let len = messages.len() as i64;
            let at = if i < 0 { len + i } else { i };
            messages
                .get(usize::try_from(at).unwrap_or(usize::MAX))
                .copied()
                .into_iter()
                .collect()
        }
    };
    let which = match (check.index, &check.role) {
        (Some(i), Some(r)) => format!("{r} message {i}"),
        (Some(i), None) => format!("message {i}"),
        (None, Some(r)) => format!("any {r} message"),
        (None, None) => "any message".into(),
    };
    if chosen.is_empty() {
        return result(
            "message-text",
            which.clone(),
            Some(format!(
                "there is no {which} ({} messages)",
                prompt.messages.len()
            )),
        );
    }
    let text_check = TextCheck {
        contains: check.contains.clone(),
        not_contains: check.not_contains.clone(),
        matches: check.matches.clone(),
    };
    // Any chosen message may contain the text; none may contain the forbidden text.
    let contains_ok = check
        .contains
        .as_ref()
        .is_none_or(|n| chosen.iter().any(|m| m.content.contains(n.as_str())));
    let excludes_ok = check
        .not_contains
        .as_ref()
        .is_none_or(|n| !chosen.iter().any(|m| m.content.contains(n.as_str())));
    let matches_ok = check.matches.as_ref().is_none_or(|p| {
        chosen
            .iter()
            .any(|m| regex_matches(p, &m.content).unwrap_or(false))
    });
    let joined = chosen
        .iter()
        .map(|m| m.content.as_str())
        .collect::<Vec<_>>()
        .join("\n");
    let mut r = self::text_check("message-text", &which, &joined, &text_check);
    r.passed = contains_ok
        && excludes_ok
        && matches_ok
        && (check.contains.is_some() || check.not_contains.is_some() || check.matches.is_some());
    if r.passed {
        r.detail = None;
    }
    r
}

/// Where a segment landed: its block, its position in it, before or after others, or absent.
fn segment_check(check: &SegmentCheck, capture: &TurnCapture) -> CheckResult {
    let preview = &capture.preview;
    let row = preview.segments.iter().find(|r| r.has_key(&check.id));
    let included = row.filter(|r| r.included);
    if check.absent {
        return result(
            "segment-placement",
            format!("segment {} is absent", check.id),
            included.map(|r| format!("it is in {}", block_name(r.placement))),
        );
    }
    let mut description = vec![format!("segment {}", check.id)];
    let mut failure: Option<String> = None;
    let mut fail = |f: String| {
        if failure.is_none() {
            failure = Some(f);
        }
    };
    if let Some(block) = &check.block {
        description.push(format!("in {block}"));
        match (row, block.as_str()) {
            (None, _) => fail("no provider returned it".into()),
            (Some(r), "excluded") if r.included => {
                fail(format!("it is included, in {}", block_name(r.placement)))
            }
            (Some(_), "excluded") => {}
            (Some(r), _) if !r.included => fail(format!(
                "it is excluded: {}",
                r.excluded_because.clone().unwrap_or_default()
            )),
            (Some(r), expected) if block_name(r.placement) != expected => {
                fail(format!("it is in {}", block_name(r.placement)))
            }
            _ => {}
        }
    } else if included.is_none() {
        fail(row.map_or_else(
            || "no provider returned it".into(),
            |r| {
                format!(
                    "it is excluded: {}",
                    r.excluded_because.clone().unwrap_or_default()
                )
            },
        ));
    }
    if let (Some(position), Some(r)) = (check.position, included) {
        description.push(format!("at position {position}"));
        let group: Vec<String> = preview
            .segments
            .iter()
            .filter(|o| o.included && block_name(o.placement) == block_name(r.placement))
            .map(SegmentRow::key)
            .collect();
        let at = group.iter().position(|k| *k == check.id);
        if at != Some(position) {
            fail(format!(
                "it is at position {} of {} ({})",
                at.map_or("?".into(), |a| a.to_string()),
                block_name(r.placement),
                group.join(", ")
            ));
        }
    }
    let order = prompt_order(capture);
    let index_of = |key: &str| order.iter().position(|k| k == key);
    for (other, before) in check
        .before
        .iter()
        .map(|o| (o, true))
        .chain(check.after.iter().map(|o| (o, false)))
    {
        description.push(format!(
            "{} {other}",
            if before { "before" } else { "after" }
        ));
        match (index_of(&check.id), index_of(other)) {
            (Some(a), Some(b)) if (a < b) == before => {}
            (Some(_), Some(_)) => fail(format!(
                "it comes {} {other} (prompt order: {})",
                if before { "after" } else { "before" },
                order.join(", ")
            )),
            (_, None) => fail(format!("{other} is not in the prompt")),
            (None, _) => fail(format!("{} is not in the prompt", check.id)),
        }
    }
    result("segment-placement", description.join(" "), failure)
}

/// A slot value (at a JSON pointer): equal to a value, absent, or matching a schema.
fn slot_check(check: &SlotCheck, capture: &TurnCapture) -> CheckResult {
    let slot = capture
        .slots
        .iter()
        .find(|s| s.slot.as_str() == check.slot && (check.key.is_none() || s.key == check.key));
    let what = format!(
        "slot {}{}{}",
        check.slot,
        check
            .key
            .as_ref()
            .map(|k| format!("[{k}]"))
            .unwrap_or_default(),
        check.pointer
    );
    let found = slot.and_then(|s| pointer_value(&s.value, &check.pointer));
    match &check.schema {
        Some(schema) if !check.absent => schema_check(what, found, schema, &check.equals),
        _ => value_check(
            "slot-value",
            what,
            found,
            check.equals.as_ref(),
            check.absent,
        ),
    }
}

/// The system prompt's cache boundaries: how many, and which stay stable next turn.
fn cache_check(check: &CacheCheck, capture: &TurnCapture) -> CheckResult {
    let preview = &capture.preview;
    // The system prompt's boundaries (the moving history breakpoint is not one of them).
    let boundaries: Vec<&covel_kernel::prompt::Breakpoint> = preview
        .cache
        .breakpoints
        .iter()
        .filter(|b| !b.moving)
        .collect();
    let mut description = Vec::new();
    let mut failure = None;
    if let Some(count) = check.boundaries {
        description.push(format!("{count} cache boundaries"));
        if boundaries.len() != count {
            failure = Some(format!("{} boundaries", boundaries.len()));
        }
    }
    let changed: Vec<String> = boundaries
        .iter()
        .filter(|b| !b.stable)
        .map(|b| {
            let culprit = b
                .first_difference
                .as_ref()
                .map(|d| format!(" (first change: {})", d.this_turn.describe()))
                .unwrap_or_default();
            format!("boundary {}{culprit}", b.index)
        })
        .collect();
    if let Some(stable) = check.stable_next_turn {
        description.push(if stable {
            "stable next turn".into()
        } else {
            "changes next turn".to_string()
        });
        if failure.is_none() && stable != changed.is_empty() {
            failure = Some(if stable {
                format!("{} changes next turn", changed.join(", "))
            } else {
                "every boundary stays stable".into()
            });
        }
    }
    for index in &check.stable {
        description.push(format!("boundary {index} stable"));
        let stable = boundaries
            .iter()
            .find(|b| b.index == *index)
            .map(|b| b.stable);
        if failure.is_none() && stable != Some(true) {
            failure = Some(match stable {
                None => format!("there is no boundary {index}"),
                _ => {
                    changed
                        .iter()
                        .find(|c| c.starts_with(&format!("boundary {index}")))
                        .cloned()
                        .unwrap_or_default()
                        + " changes next turn"
                }
            });
        }
    }
    result("cache-boundaries", description.join(", "), failure)
}

/// A token budget of a plugin's segments or a part of the prompt (`estimateTokens`, as budgets
/// count).
fn tokens_check(check: &TokenCheck, capture: &TurnCapture) -> CheckResult {
    let preview = &capture.preview;
    let prompt = &preview.prompt;
    let (what, tokens) = match (&check.plugin, check.part.as_deref()) {
        (Some(plugin), _) => (
            format!("tokens of {plugin}'s segments"),
            Some(
                preview
                    .segments
                    .iter()
                    .filter(|r| r.included && *r.plugin == **plugin)
                    .map(|r| r.tokens)
                    .sum::<u64>(),
            ),
        ),
        (None, Some("system")) => ("system prompt tokens".into(), Some(prompt.system.tokens)),
        (None, Some("turn-context")) => (
            "turn context tokens".into(),
            Some(estimate_tokens(&prompt.turn_context)),
        ),
        (None, Some("messages")) => (
            "message tokens".into(),
            Some(prompt.messages.iter().map(|m| m.tokens).sum()),
        ),
        (None, Some("total")) => (
            "total tokens".into(),
            Some(prompt.system.tokens + prompt.messages.iter().map(|m| m.tokens).sum::<u64>()),
        ),
        (None, Some(block)) => (
            format!("{block} block tokens"),
            prompt
                .system
                .blocks
                .iter()
                .find(|b| b.kind.name() == block)
                .map(|b| b.tokens),
        ),
        (None, None) => ("tokens".into(), None),
    };
    let Some(tokens) = tokens else {
        return result("token-budget", what, Some("name a `plugin` or a `part` (system, turn-context, messages, total, or a block kind present in the prompt)".into()));
    };
    let mut description = what.clone();
    let mut failure = None;
    if let Some(max) = check.max {
        description.push_str(&format!(" ≤ {max}"));
        if tokens > max {
            failure = Some(format!("{tokens} tokens (estimateTokens)"));
        }
    }
    if let Some(min) = check.min {
        description.push_str(&format!(" ≥ {min}"));
        if failure.is_none() && tokens < min {
            failure = Some(format!("{tokens} tokens (estimateTokens)"));
        }
    }
    result("token-budget", description, failure)
}

/// A provider's outcome this turn.
fn provider_check(check: &ProviderCheck, capture: &TurnCapture) -> CheckResult {
    let preview = &capture.preview;
    let calls: Vec<&covel_kernel::runner::CallRecord> = preview
        .calls
        .iter()
        .filter(|c| *c.plugin_id == *check.plugin)
        .filter(|c| {
            check
                .provider
                .as_deref()
                .is_none_or(|p| p == &*c.provider_id)
        })
        .filter(|c| check.point.as_deref().is_none_or(|p| p == c.point.as_str()))
        .collect();
    let who = format!(
        "{}{}{}",
        check.plugin,
        check
            .provider
            .as_ref()
            .map(|p| format!("/{p}"))
            .unwrap_or_default(),
        check
            .point
            .as_ref()
            .map(|p| format!(" on {p}"))
            .unwrap_or_default()
    );
    let description = format!("provider {who} → {}", check.outcome);
    let outcome = |c: &covel_kernel::runner::CallRecord| {
        serde_json::to_value(c.outcome)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default()
    };
    let failure = if calls.is_empty() {
        Some("it was not called this turn".to_string())
    } else {
        calls.iter().find(|c| outcome(c) != check.outcome).map(|c| {
            format!(
                "{}/{} on {} → {}{}",
                c.plugin_id,
                c.provider_id,
                c.point.as_str(),
                outcome(c),
                c.message
                    .as_ref()
                    .map(|m| format!(": {m}"))
                    .unwrap_or_default()
            )
        })
    };
    result("provider-outcome", description, failure)
}

/// A slot value checked against a JSON Schema (and `equals`, when both are given).
fn schema_check(
    what: String,
    found: Option<&Value>,
    schema: &Value,
    equals: &Option<Value>,
) -> CheckResult {
    let description = format!("{what} matches its schema");
    let Some(value) = found else {
        return result("slot-value", description, Some("nothing there".into()));
    };
    let validator = match jsonschema::validator_for(schema) {
        Ok(v) => v,
        Err(e) => {
            return result(
                "slot-value",
                description,
                Some(format!("`schema` is not a valid JSON Schema: {e}")),
            );
        }
    };
    let errors: Vec<String> = validator
        .iter_errors(value)
        .map(|e| {
            let at = e.instance_path().to_string();
            if at.is_empty() {
                e.to_string()
            } else {
                format!("at {at}: {e}")
            }
        })
        .collect();
    if !errors.is_empty() {
        return result("slot-value", description, Some(errors.join("; ")));
    }
    match equals {
        Some(expected) if value != expected => result(
            "slot-value",
            format!("{description} and = {expected}"),
            Some(format!("found {value}")),
        ),
        _ => result("slot-value", description, None),
    }
}

/// Finding where a missing text was probably meant to be.
mod closest {
    /// The longest run of `needle`'s characters found in `text` (dynamic programming over
    /// the needle, whose length is capped: a check's text is a phrase), and the text around
    /// it, with `…` where it is cut. `None` when not even two characters match.
    pub fn snippet(text: &str, needle: &str) -> Option<String> {
        const AROUND: usize = 30;
        let hay: Vec<char> = text.chars().collect();
        let pin: Vec<char> = needle.chars().take(200).collect();
        let mut row = vec![0usize; pin.len() + 1];
        let (mut best, mut end) = (0usize, 0usize);
        for (i, h) in hay.iter().enumerate() {
            // Right to left, so `row[j - 1]` is still the previous character's run.
            for j in (1..=pin.len()).rev() {
                row[j] = if pin[j - 1] == *h { row[j - 1] + 1 } else { 0 };
                if row[j] > best {
                    (best, end) = (row[j], i + 1);
                }
            }
        }
        if best < 2 {
            return None;
        }
        let start = (end - best).saturating_sub(AROUND);
        let stop = (end + AROUND).min(hay.len());
        let cut = |yes: bool| if yes { "…" } else { "" };
        Some(format!(
            "{}{}{}",
            cut(start > 0),
            hay[start..stop]
                .iter()
                .collect::<String>()
                .replace('\n', "⏎"),
            cut(stop < hay.len())
        ))
    }

    #[cfg(test)]
    mod tests {
        #[test]
        fn the_snippet_surrounds_the_longest_common_run() {
            let text = "Intro text. Keep a grave, unhurried narrative voice. Outro.";
            assert_eq!(
                super::snippet(text, "grave, patient").as_deref(),
                Some("Intro text. Keep a grave, unhurried narrative voice. Out…")
            );
            assert_eq!(super::snippet("abc", "xyz"), None);
        }
    }
}

/// A kebab-case outcome's name.
pub(crate) fn outcome_name<T: serde::Serialize>(outcome: &T) -> String {
    serde_json::to_value(outcome)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

fn tool_check(check: &covel_kernel::test_session::ToolCheck, steps: &[LoopStep]) -> CheckResult {
    let calls: Vec<&crate::turn::record::ToolStep> = steps
        .iter()
        .filter_map(|s| match s {
            LoopStep::Tool(t) if t.name == check.name => Some(t),
            _ => None,
        })
        .collect();
    if check.called == Some(false) {
        let failure = calls
            .first()
            .map(|t| format!("it was called with {}", t.input));
        return result(
            "tool-call",
            format!("tool {} is not called", check.name),
            failure,
        );
    }
    let mut description = format!("tool {} is called", check.name);
    for (pointer, value) in &check.input {
        description.push_str(&format!(", {pointer} = {value}"));
    }
    if let Some(outcome) = &check.outcome {
        description.push_str(&format!(" → {outcome}"));
    }
    let matches = |t: &&crate::turn::record::ToolStep| {
        check
            .input
            .iter()
            .all(|(p, v)| t.input.pointer(p) == Some(v))
            && check
                .outcome
                .as_deref()
                .is_none_or(|o| o == outcome_name(&t.outcome))
    };
    let failure = if calls.is_empty() {
        Some("it was not called this turn".to_string())
    } else if !calls.iter().any(matches) {
        Some(
            calls
                .iter()
                .map(|t| format!("called with {} → {}", t.input, outcome_name(&t.outcome)))
                .collect::<Vec<_>>()
                .join("; "),
        )
    } else {
        None
    };
    result("tool-call", description, failure)
}

fn hook_check(check: &covel_kernel::test_session::HookCheck, steps: &[LoopStep]) -> CheckResult {
    let calls: Vec<&crate::turn::record::HookStep> = steps
        .iter()
        .filter_map(|s| match s {
            LoopStep::Hook(h)
                if h.event == check.event
                    && check.plugin.as_deref().is_none_or(|p| p == h.plugin_id) =>
            {
                Some(h)
            }
            _ => None,
        })
        .collect();
    let who = check
        .plugin
        .as_ref()
        .map(|p| format!(" of {p}"))
        .unwrap_or_default();
    let description = match &check.outcome {
        Some(outcome) => format!("{} hook{who} → {outcome}", check.event),
        None => format!("{} hook{who} runs", check.event),
    };
    let failure = if calls.is_empty() {
        Some("no such hook ran this turn".to_string())
    } else if let Some(outcome) = &check.outcome {
        (!calls.iter().any(|h| &outcome_name(&h.outcome) == outcome)).then(|| {
            calls
                .iter()
                .map(|h| {
                    format!(
                        "{} → {}{}",
                        h.plugin_id,
                        outcome_name(&h.outcome),
                        h.detail
                            .as_ref()
                            .map(|d| format!(": {d}"))
                            .unwrap_or_default()
                    )
                })
                .collect::<Vec<_>>()
                .join("; ")
        })
    } else {
        None
    };
    result("hook-call", description, failure)
}
