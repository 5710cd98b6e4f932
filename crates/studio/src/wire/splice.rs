//! A JSON value as a change to the value the window holds ([`JsonChange`]): objects with the same
//! keys in the same order change key by key, arrays position by position, and a long text by a
//! [`TextSplice`] that keeps the held text's common start and end. The assembled prompt crosses
//! this way: its system blocks and its two request bodies each hold every segment's text, so a
//! save that changes one segment sent ≈ 630 KB at 500 generated plugins when the prompt crossed
//! whole. `applyJsonChange` in `ui/src/lib/patch.ts` applies it; [`JsonChange::apply_to`] says
//! what it must give, and the tests hold the two to the same rule.

use super::common::{JsonValue, same_json};
use serde::Serialize;
use serde_json::{Map, Value};
use specta::Type;

/// Texts shorter than this cross whole: a splice would not be much smaller.
const SPLICE_FROM_BYTES: usize = 256;

/// A text as a change to the text the window holds: keep `keepStart` UTF-16 code units of its
/// start and `keepEnd` of its end, and put `insert` between them (UTF-16, as JavaScript counts a
/// string's length; the kept ends never split a character).
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct TextSplice {
    pub keep_start: u32,
    pub keep_end: u32,
    pub insert: String,
}

impl TextSplice {
    /// `now` as a splice on `held`.
    pub fn of(held: &str, now: &str) -> TextSplice {
        // The common start, then the common end within what is left of both, by characters.
        let (mut start_bytes, mut start_units) = (0, 0);
        for (a, b) in held.chars().zip(now.chars()) {
            if a != b {
                break;
            }
            start_bytes += a.len_utf8();
            start_units += a.len_utf16();
        }
        let (mut end_bytes, mut end_units) = (0, 0);
        for (a, b) in held[start_bytes..]
            .chars()
            .rev()
            .zip(now[start_bytes..].chars().rev())
        {
            if a != b {
                break;
            }
            end_bytes += a.len_utf8();
            end_units += a.len_utf16();
        }
        TextSplice {
            keep_start: u32::try_from(start_units).unwrap_or(u32::MAX),
            keep_end: u32::try_from(end_units).unwrap_or(u32::MAX),
            insert: now[start_bytes..now.len() - end_bytes].to_string(),
        }
    }

    /// The text after the splice, or `None` when `held` is not a text it was made against.
    pub fn apply_to(&self, held: &str) -> Option<String> {
        let units: Vec<u16> = held.encode_utf16().collect();
        let (start, end) = (self.keep_start as usize, self.keep_end as usize);
        if start.checked_add(end)? > units.len() {
            return None;
        }
        let head = String::from_utf16(&units[..start]).ok()?;
        let tail = String::from_utf16(&units[units.len() - end..]).ok()?;
        Some(head + &self.insert + &tail)
    }
}

/// A JSON value as a change to the one the window holds.
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
#[serde(rename_all = "camelCase")]
pub enum JsonChange {
    /// The value itself (another kind of value, a short text, a number, …).
    Value(#[specta(type = crate::wire::common::JsonShape)] JsonValue),
    /// A long text, as a splice on the text held.
    Text(TextSplice),
    /// An array `count` long whose items at `changed` positions changed; every other position
    /// keeps the item held there.
    Array {
        count: u32,
        changed: Vec<IndexChange>,
    },
    /// An object with the same keys in the same order as the one held, whose values at
    /// `changed` keys changed.
    Object { changed: Vec<KeyChange> },
}

/// The change of an array's item at `index` (an item past the held array's end is a
/// [`JsonChange::Value`]).
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
pub struct IndexChange {
    pub index: u32,
    pub change: JsonChange,
}

/// The change of an object's value at `key`.
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
pub struct KeyChange {
    pub key: String,
    pub change: JsonChange,
}

impl JsonChange {
    /// `now` as a change to `held` (`None` when they are the same JSON text).
    pub fn of(held: &Value, now: &Value) -> Option<JsonChange> {
        if same_json(held, now) {
            return None;
        }
        Some(match (held, now) {
            (Value::String(a), Value::String(b)) if b.len() >= SPLICE_FROM_BYTES => {
                JsonChange::Text(TextSplice::of(a, b))
            }
            (Value::Array(a), Value::Array(b)) => JsonChange::Array {
                count: u32::try_from(b.len()).unwrap_or(u32::MAX),
                changed: b
                    .iter()
                    .enumerate()
                    .filter_map(|(i, item)| {
                        let change = match a.get(i) {
                            Some(held) => JsonChange::of(held, item)?,
                            None => JsonChange::Value(item.into()),
                        };
                        Some(IndexChange {
                            index: u32::try_from(i).unwrap_or(u32::MAX),
                            change,
                        })
                    })
                    .collect(),
            },
            (Value::Object(a), Value::Object(b)) if a.keys().eq(b.keys()) => JsonChange::Object {
                changed: a
                    .values()
                    .zip(b)
                    .filter_map(|(held, (key, item))| {
                        Some(KeyChange {
                            key: key.clone(),
                            change: JsonChange::of(held, item)?,
                        })
                    })
                    .collect(),
            },
            _ => JsonChange::Value(now.into()),
        })
    }

    /// The value after this change, or `None` when `held` is not a value it was made against
    /// (the window then asks for the whole snapshot).
    pub fn apply_to(&self, held: &Value) -> Option<Value> {
        Some(match (self, held) {
            (JsonChange::Value(value), _) => value.0.clone(),
            (JsonChange::Text(splice), Value::String(text)) => {
                Value::String(splice.apply_to(text)?)
            }
            (JsonChange::Array { count, changed }, Value::Array(items)) => {
                let mut next: Vec<Option<Value>> = items
                    .iter()
                    .take(*count as usize)
                    .cloned()
                    .map(Some)
                    .collect();
                next.resize(*count as usize, None);
                for IndexChange { index, change } in changed {
                    let slot = next.get_mut(*index as usize)?;
                    *slot = Some(match items.get(*index as usize) {
                        Some(item) => change.apply_to(item)?,
                        None => change.apply_to(&Value::Null)?,
                    });
                }
                Value::Array(next.into_iter().collect::<Option<Vec<Value>>>()?)
            }
            (JsonChange::Object { changed }, Value::Object(fields)) => {
                let mut next: Map<String, Value> = fields.clone();
                for KeyChange { key, change } in changed {
                    let value = change.apply_to(fields.get(key)?)?;
                    next.insert(key.clone(), value);
                }
                Value::Object(next)
            }
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// `now` as a change to `held`, checked to give `now` back.
    fn change(held: &Value, now: &Value) -> JsonChange {
        let change = JsonChange::of(held, now).expect("they differ");
        let applied = change.apply_to(held).expect("applies");
        assert!(same_json(&applied, now), "{applied} is not {now}");
        change
    }

    #[test]
    fn a_long_text_crosses_as_the_splice_between_its_common_start_and_end() {
        let held = format!("{}middle{}", "a".repeat(300), "z".repeat(300));
        let now = format!("{}center{}", "a".repeat(300), "z".repeat(300));
        let JsonChange::Text(splice) = change(&json!(held), &json!(now)) else {
            panic!("a long text is spliced");
        };
        assert_eq!(splice.insert, "center");
        assert_eq!((splice.keep_start, splice.keep_end), (300, 300));
        // A short text crosses whole.
        assert!(matches!(
            change(&json!("short"), &json!("shorter")),
            JsonChange::Value(_)
        ));
    }

    #[test]
    fn a_splice_counts_utf16_units_and_keeps_whole_characters() {
        // "é" is one UTF-16 unit and two UTF-8 bytes; "🜂" is two units and four bytes.
        let held = format!("é🜂{}🜂x", "b".repeat(300));
        let now = format!("é🜂{}🜃x", "b".repeat(300));
        let splice = TextSplice::of(&held, &now);
        assert_eq!(splice.keep_start, 1 + 2 + 300);
        assert_eq!(splice.keep_end, 1);
        assert_eq!(splice.insert, "🜃");
        assert_eq!(splice.apply_to(&held).as_deref(), Some(now.as_str()));
        // Two characters that share their first UTF-16 unit (both in the same high surrogate
        // range) are kept or replaced whole.
        let splice = TextSplice::of("x🜂", "x🜃");
        assert_eq!(
            (splice.keep_start, splice.keep_end, splice.insert.as_str()),
            (1, 0, "🜃")
        );
        // A repeated character is not counted in both ends.
        let splice = TextSplice::of("aaa", "aaaa");
        assert_eq!(splice.apply_to("aaa").as_deref(), Some("aaaa"));
        assert_eq!(
            TextSplice::of("abc", "").apply_to("abc").as_deref(),
            Some("")
        );
        assert_eq!(
            TextSplice::of("", "abc").apply_to("").as_deref(),
            Some("abc")
        );
        // A text too short for the kept ends is not the one the splice was made against.
        assert_eq!(TextSplice::of(&held, &now).apply_to("é"), None);
    }

    #[test]
    fn objects_change_key_by_key_and_arrays_position_by_position() {
        let long = "x".repeat(400);
        let held = json!({"system": [{"text": long, "cache": true}, {"text": "b"}], "model": "m"});
        let now = json!({"system": [{"text": format!("{long}!"), "cache": true}, {"text": "b"}, {"text": "c"}], "model": "m"});
        let JsonChange::Object { changed } = change(&held, &now) else {
            panic!("the same keys change key by key");
        };
        assert_eq!(changed.len(), 1, "only the changed key: {changed:?}");
        let JsonChange::Array { count, changed } = &changed[0].change else {
            panic!("an array changes by position");
        };
        assert_eq!(*count, 3);
        let sent: Vec<u32> = changed.iter().map(|c| c.index).collect();
        assert_eq!(sent, vec![0, 2], "the unchanged item is not sent");
        assert!(
            matches!(&changed[1].change, JsonChange::Value(_)),
            "a new item is a value"
        );
        // Shorter arrays, other keys, another order of the same keys, another kind of value.
        change(&json!([1, 2, 3]), &json!([1]));
        assert!(matches!(
            change(&json!({"a": 1, "b": 2}), &json!({"b": 2, "a": 1})),
            JsonChange::Value(_)
        ));
        assert!(matches!(
            change(&json!({"a": 1}), &json!({"a": 1, "b": 2})),
            JsonChange::Value(_)
        ));
        change(&json!({"a": [1]}), &json!({"a": "one"}));
        // The JSON text decides what changed: 1 and 1.0 differ.
        change(&json!([1]), &json!([1.0]));
        assert_eq!(JsonChange::of(&held, &held), None);
    }

    #[test]
    fn a_change_applies_only_to_the_value_it_was_made_against() {
        let long = "y".repeat(400);
        let held = json!({"a": [long.clone()]});
        let now = json!({"a": [format!("{long}?")]});
        let change = JsonChange::of(&held, &now).expect("differ");
        assert_eq!(change.apply_to(&json!({"b": [long]})), None, "another key");
        assert_eq!(change.apply_to(&json!({"a": "text"})), None, "another kind");
        assert_eq!(
            change.apply_to(&json!({"a": []})),
            None,
            "a position it does not hold"
        );
    }
}
