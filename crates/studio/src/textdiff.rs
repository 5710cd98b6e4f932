//! Readable differences for authors: a word-level diff of two texts (`[-removed-]{+added+}` with
//! a few words of context around each change), and the differing places of two JSON values by
//! JSON pointer (strings compared word by word). Used by golden snapshots and replay misses.

use serde_json::Value;
use similar::{ChangeTag, TextDiff};

/// Words of context kept on each side of a change.
const CONTEXT_TOKENS: usize = 8;

/// A one-line word diff of `old` → `new`; long unchanged runs are shortened to `…`.
pub fn words(old: &str, new: &str) -> String {
    let diff = TextDiff::from_words(old, new);
    let mut groups: Vec<(ChangeTag, String)> = Vec::new();
    for change in diff.iter_all_changes() {
        match groups.last_mut() {
            Some((tag, text)) if *tag == change.tag() => text.push_str(change.value()),
            _ => groups.push((change.tag(), change.value().to_string())),
        }
    }
    let count = groups.len();
    let mut out = String::new();
    for (index, (tag, text)) in groups.iter().enumerate() {
        match tag {
            ChangeTag::Delete => out.push_str(&format!("[-{text}-]")),
            ChangeTag::Insert => out.push_str(&format!("{{+{text}+}}")),
            ChangeTag::Equal => out.push_str(&shorten(text, index > 0, index + 1 < count)),
        }
    }
    out.replace('\n', "⏎")
}

/// Keeps the words of an unchanged run next to the changes around it.
fn shorten(text: &str, after_change: bool, before_change: bool) -> String {
    let tokens: Vec<&str> = split_keep(text);
    let keep_head = if after_change { CONTEXT_TOKENS } else { 0 };
    let keep_tail = if before_change { CONTEXT_TOKENS } else { 0 };
    if tokens.len() <= keep_head + keep_tail + 1 {
        return text.to_string();
    }
    let head: String = tokens[..keep_head].concat();
    let tail: String = tokens[tokens.len() - keep_tail..].concat();
    format!("{head}…{tail}")
}

/// Splits into words and the whitespace between them (each a token).
fn split_keep(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut in_space = None;
    for (i, c) in text.char_indices() {
        let space = c.is_whitespace();
        if in_space.is_some_and(|s| s != space) {
            out.push(&text[start..i]);
            start = i;
        }
        in_space = Some(space);
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}

/// One differing place of two JSON values.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct JsonChange {
    pub pointer: String,
    pub diff: String,
}

/// The places where `new` differs from `old`, at most `limit` of them, in document order.
pub fn json(old: &Value, new: &Value, limit: usize) -> Vec<JsonChange> {
    let mut out = Vec::new();
    walk(old, new, String::new(), &mut out, limit);
    out
}

fn brief(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() > 160 {
        format!("{}…", text.chars().take(160).collect::<String>())
    } else {
        text
    }
}

fn walk(old: &Value, new: &Value, pointer: String, out: &mut Vec<JsonChange>, limit: usize) {
    if out.len() >= limit || old == new {
        return;
    }
    match (old, new) {
        (Value::Object(a), Value::Object(b)) => {
            for (key, value) in a {
                let child = format!("{pointer}/{}", key.replace('~', "~0").replace('/', "~1"));
                match b.get(key) {
                    Some(other) => walk(value, other, child, out, limit),
                    None if out.len() < limit => out.push(JsonChange {
                        pointer: child,
                        diff: format!("removed {}", brief(value)),
                    }),
                    None => {}
                }
            }
            for (key, value) in b.iter().filter(|(k, _)| !a.contains_key(*k)) {
                if out.len() < limit {
                    let child = format!("{pointer}/{}", key.replace('~', "~0").replace('/', "~1"));
                    out.push(JsonChange {
                        pointer: child,
                        diff: format!("added {}", brief(value)),
                    });
                }
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            for (index, (x, y)) in a.iter().zip(b.iter()).enumerate() {
                walk(x, y, format!("{pointer}/{index}"), out, limit);
            }
            for (index, value) in a.iter().enumerate().skip(b.len()) {
                if out.len() < limit {
                    out.push(JsonChange {
                        pointer: format!("{pointer}/{index}"),
                        diff: format!("removed {}", brief(value)),
                    });
                }
            }
            for (index, value) in b.iter().enumerate().skip(a.len()) {
                if out.len() < limit {
                    out.push(JsonChange {
                        pointer: format!("{pointer}/{index}"),
                        diff: format!("added {}", brief(value)),
                    });
                }
            }
        }
        (Value::String(a), Value::String(b)) => out.push(JsonChange {
            pointer,
            diff: words(a, b),
        }),
        _ => out.push(JsonChange {
            pointer,
            diff: format!("{} → {}", brief(old), brief(new)),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn word_diff_marks_only_the_changed_words_with_context() {
        let old = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen grave sixteen";
        let new = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen wry sixteen";
        let diff = words(old, new);
        assert!(diff.contains("[-grave-]{+wry+}"), "{diff}");
        assert!(diff.starts_with('…'), "leading words are shortened: {diff}");
    }

    #[test]
    fn json_diff_names_pointers_and_diffs_strings_by_word() {
        let changes = json(
            &json!({"a": {"b": "cold water"}, "c": [1, 2]}),
            &json!({"a": {"b": "warm water"}, "c": [1], "d": true}),
            10,
        );
        let pointers: Vec<&str> = changes.iter().map(|c| c.pointer.as_str()).collect();
        assert_eq!(pointers, ["/a/b", "/c/1", "/d"]);
        assert!(changes[0].diff.contains("[-cold-]{+warm+}"));
    }
}
