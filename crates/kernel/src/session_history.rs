//! What a test session's history may leave out. Authors write history messages the way they
//! think of them (`{role, content}`, perhaps an `id` or a `turnId`) and summaries with their
//! content and turn range; the studio derives the rest deterministically so the messages meet
//! the `prompt.history-transform@1` input schema and compaction sees them as this session's:
//!
//! - `id`: `m1`, `m2`, … by file position (`s1`, `s2`, … for summaries), skipping ids the file
//!   already uses;
//! - `sessionId`: the session's `id`;
//! - `turnId`: a `user` message starts the next turn (`t1`, `t2`, …, skipping turn ids the file
//!   uses), any other message joins the turn of the message before it;
//! - `sourceType`: from the role (`user` → `player`, `assistant` → `runtime`, `system` →
//!   `system`);
//! - `order`: the position in the file, from 1;
//! - `createdAt`: `2026-01-01T00:00:00Z` plus one second per position;
//! - summaries: `focusSections` defaults to `[]`.
//!
//! What cannot be derived (a message's `role` or `content`, a summary's `content` and turn
//! range, a value of the wrong type) is a `session-schema` diagnostic at the line and column of
//! the message or field.

use crate::contract::{history_message_validator, summary_record_validator};
use crate::diagnostic::{Code, Diagnostic};
use serde_json::{Map, Value};
use std::collections::BTreeSet;
use std::path::Path;

/// Which list of the history an item belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum List {
    Messages,
    Summaries,
}

impl List {
    fn name(self) -> &'static str {
        match self {
            List::Messages => "history.messages",
            List::Summaries => "history.summaries",
        }
    }
}

/// Fills in the derivable fields of every history message and summary, or says at which line
/// and column something that cannot be derived is missing or wrong.
pub(crate) fn derive(
    messages: &mut [Value],
    summaries: &mut [Value],
    session_id: &str,
    text: &str,
    file: &Path,
) -> Result<(), Diagnostic> {
    let fail = |list: List, index: usize, field: Option<&str>, message: String| {
        Diagnostic::new(
            Code::SessionSchema,
            format!(
                "`{}[{index}]`{}: {message}",
                list.name(),
                field.map(|f| format!(".{f}")).unwrap_or_default()
            ),
        )
        .file(file)
        .at_opt(position(text, list, index, field))
    };
    derive_messages(messages, session_id).map_err(|(index, field, message)| {
        fail(List::Messages, index, field.as_deref(), message)
    })?;
    derive_summaries(summaries, session_id).map_err(|(index, field, message)| {
        fail(List::Summaries, index, field.as_deref(), message)
    })?;
    Ok(())
}

type Failure = (usize, Option<String>, String);

/// The deterministic creation time of the history item at `index` (its 0-based position): the
/// one clock of history messages, whether the loader derives it or a played turn appends.
pub fn created_at(index: usize) -> String {
    let seconds = index % 86_400;
    format!(
        "2026-01-01T{:02}:{:02}:{:02}Z",
        seconds / 3600,
        (seconds / 60) % 60,
        seconds % 60
    )
}

/// The two messages one exchange appends to a history of `order` messages: the player's
/// (`{turn_id}-user`) and the runtime's reply (`{turn_id}-assistant`), with every field the
/// loader would derive, on the same clock.
pub fn exchange(
    session_id: &str,
    turn_id: &str,
    player: &str,
    reply: &str,
    order: usize,
) -> [Value; 2] {
    let message = |i: usize, role: &str, source: &str, content: &str| {
        serde_json::json!({
            "id": format!("{turn_id}-{role}"), "sessionId": session_id, "turnId": turn_id, "sourceType": source,
            "role": role, "content": content, "order": order + i + 1, "createdAt": created_at(order + i),
        })
    };
    [
        message(0, "user", "player", player),
        message(1, "assistant", "runtime", reply),
    ]
}

/// A fresh id `{prefix}{n}` not in `taken`, starting at `n`.
fn fresh(prefix: &str, mut n: usize, taken: &BTreeSet<String>) -> String {
    loop {
        let candidate = format!("{prefix}{n}");
        if !taken.contains(&candidate) {
            return candidate;
        }
        n += 1;
    }
}

fn explicit_strings(items: &[Value], key: &str) -> BTreeSet<String> {
    items
        .iter()
        .filter_map(|m| m.get(key).and_then(Value::as_str))
        .map(str::to_string)
        .collect()
}

/// Checks that `key`, when given, is a string; returns it.
fn string_field(
    map: &Map<String, Value>,
    index: usize,
    key: &str,
) -> Result<Option<String>, Failure> {
    match map.get(key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err((
            index,
            Some(key.to_string()),
            format!("must be a string, not {}", kind(other)),
        )),
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

/// The first schema violation as (field, message).
fn violation(error: &crate::contract::SchemaError) -> (Option<String>, String) {
    match error.violations.first() {
        Some((path, message)) => {
            let field = path
                .trim_start_matches('/')
                .split('/')
                .next()
                .filter(|f| !f.is_empty())
                .map(str::to_string);
            (field, message.clone())
        }
        None => (None, error.to_string()),
    }
}

fn derive_messages(messages: &mut [Value], session_id: &str) -> Result<(), Failure> {
    let mut taken = BTreeSet::new();
    for (index, message) in messages.iter().enumerate() {
        if let Some(id) = message.get("id").and_then(Value::as_str)
            && !taken.insert(id.to_string())
        {
            return Err((
                index,
                Some("id".into()),
                format!("`{id}` is the id of an earlier message; ids must be unique"),
            ));
        }
    }
    let explicit_turns = explicit_strings(messages, "turnId");
    let mut turns: Vec<String> = Vec::new();
    let mut current: Option<String> = None;
    for (index, message) in messages.iter_mut().enumerate() {
        let Some(map) = message.as_object_mut() else {
            return Err((
                index,
                None,
                format!(
                    "must be a mapping such as `{{role: user, content: Hello}}`, not {}",
                    kind(message)
                ),
            ));
        };
        let role = string_field(map, index, "role")?.ok_or_else(|| {
            (
                index,
                None,
                "needs `role` (user, assistant or system); the studio cannot derive it".to_string(),
            )
        })?;
        if !map.contains_key("content") {
            return Err((
                index,
                None,
                "needs `content` (the text of the message); the studio cannot derive it".into(),
            ));
        }
        string_field(map, index, "content")?;
        let id = string_field(map, index, "id")?;
        if id.is_none() {
            let id = fresh("m", index + 1, &taken);
            taken.insert(id.clone());
            map.insert("id".into(), Value::String(id));
        }
        if string_field(map, index, "sessionId")?.is_none() {
            map.insert("sessionId".into(), Value::String(session_id.to_string()));
        }
        let turn = match string_field(map, index, "turnId")? {
            Some(turn) => turn,
            None => match (&current, role.as_str()) {
                (Some(turn), r) if r != "user" => turn.clone(),
                _ => {
                    let mut seen: BTreeSet<String> = explicit_turns.clone();
                    seen.extend(turns.iter().cloned());
                    let turn = fresh("t", turns.len() + 1, &seen);
                    map.insert("turnId".into(), Value::String(turn.clone()));
                    turn
                }
            },
        };
        if !map.contains_key("turnId") {
            map.insert("turnId".into(), Value::String(turn.clone()));
        }
        if current.as_ref() != Some(&turn) && !turns.contains(&turn) {
            turns.push(turn.clone());
        }
        current = Some(turn);
        if string_field(map, index, "sourceType")?.is_none() {
            let source = match role.as_str() {
                "user" => "player",
                "assistant" => "runtime",
                "system" => "system",
                other => {
                    return Err((
                        index,
                        Some("role".into()),
                        format!(
                            "`{other}` is not user, assistant or system, so `sourceType` cannot be derived; write it"
                        ),
                    ));
                }
            };
            map.insert("sourceType".into(), Value::String(source.into()));
        }
        if !map.contains_key("order") {
            map.insert("order".into(), Value::from(index + 1));
        }
        if !map.contains_key("createdAt") {
            map.insert("createdAt".into(), Value::String(created_at(index)));
        }
        if let Err(error) = history_message_validator().check(message) {
            let (field, text) = violation(&error);
            return Err((index, field, text));
        }
    }
    Ok(())
}

fn derive_summaries(summaries: &mut [Value], session_id: &str) -> Result<(), Failure> {
    let mut taken = BTreeSet::new();
    for (index, summary) in summaries.iter().enumerate() {
        if let Some(id) = summary.get("id").and_then(Value::as_str)
            && !taken.insert(id.to_string())
        {
            return Err((
                index,
                Some("id".into()),
                format!("`{id}` is the id of an earlier summary; ids must be unique"),
            ));
        }
    }
    for (index, summary) in summaries.iter_mut().enumerate() {
        let Some(map) = summary.as_object_mut() else {
            return Err((
                index,
                None,
                format!(
                    "must be a mapping with `content`, `turnRangeStart` and `turnRangeEnd`, not {}",
                    kind(summary)
                ),
            ));
        };
        for required in ["content", "turnRangeStart", "turnRangeEnd"] {
            if !map.contains_key(required) {
                return Err((
                    index,
                    None,
                    format!("needs `{required}`; the studio cannot derive it"),
                ));
            }
        }
        if string_field(map, index, "id")?.is_none() {
            let id = fresh("s", index + 1, &taken);
            taken.insert(id.clone());
            map.insert("id".into(), Value::String(id));
        }
        if string_field(map, index, "sessionId")?.is_none() {
            map.insert("sessionId".into(), Value::String(session_id.to_string()));
        }
        if !map.contains_key("focusSections") {
            map.insert("focusSections".into(), Value::Array(Vec::new()));
        }
        if !map.contains_key("createdAt") {
            map.insert("createdAt".into(), Value::String(created_at(index)));
        }
        if let Err(error) = summary_record_validator().check(summary) {
            let (field, text) = violation(&error);
            return Err((index, field, text));
        }
    }
    Ok(())
}

// ---- Positions --------------------------------------------------------------------------------

/// The line and column of a history item, or of its field when it has one, found again in the
/// text only when a diagnostic needs it.
fn position(text: &str, list: List, index: usize, field: Option<&str>) -> Option<(u32, u32)> {
    use crate::yaml::{Step, position};
    let name = match list {
        List::Messages => "messages",
        List::Summaries => "summaries",
    };
    let item = [Step::Key("history"), Step::Key(name), Step::Index(index)];
    field
        .and_then(|f| position(text, &[item[0], item[1], item[2], Step::Key(f)]))
        .or_else(|| position(text, &item))
}
