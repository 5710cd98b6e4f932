//! Sessions are the author's documents. The studio never re-serializes a session file: every
//! edit it makes (the Session panel's locale, plugin toggles, world characters, settings) is
//! applied to the author's YAML text in place, through a lossless syntax tree (`yaml-edit`), so
//! comments, key order, quoting and the layout of everything untouched stay byte for byte and
//! only the edited values change.
//!
//! Each edit is checked after it is applied: the new text, read as data, must equal the old
//! text's data with exactly that edit made. An edit the YAML editor could not make faithfully
//! is refused whole ([`EditError::Unfaithful`]); the text is never half edited.
//!
//! Plugin toggles keep `plugins.requested` as the author wrote it: with no `requested` list
//! (every plugin of the folder), turning a plugin off adds it to `excluded` and turning it on
//! takes it out again, so plugins added to the folder later are still enabled.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::str::FromStr;
use yaml_edit::{AsYaml, Document, Mapping, Sequence, YamlFile, YamlNode};

/// One step of a path into the session document: a mapping key or a list index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(untagged)]
pub enum PathSegment {
    #[specta(type = crate::ts::Number)]
    Index(usize),
    Key(String),
}

impl PathSegment {
    fn key(key: &str) -> PathSegment {
        PathSegment::Key(key.to_string())
    }
}

fn render_path(path: &[PathSegment]) -> String {
    let mut out = String::new();
    for segment in path {
        match segment {
            PathSegment::Key(k) if out.is_empty() => out.push_str(k),
            PathSegment::Key(k) => {
                out.push('.');
                out.push_str(k);
            }
            PathSegment::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    out
}

/// An edit the studio makes to a session document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, specta::Type)]
#[serde(
    tag = "kind",
    rename_all = "kebab-case",
    rename_all_fields = "camelCase"
)]
pub enum SessionEdit {
    /// `locale: …`.
    SetLocale { locale: String },
    /// Turns a plugin on or off, keeping `plugins.requested` as written (see the module doc).
    SetPluginEnabled { plugin: String, enabled: bool },
    /// `settings.<plugin>.<key>`; `null` or absent removes the override.
    SetSetting {
        plugin: String,
        key: String,
        #[serde(default)]
        #[specta(type = Option<crate::ts::JsonShape>)]
        value: Option<Value>,
    },
    /// Replaces `world.characters[index]`.
    SetCharacter {
        #[specta(type = crate::ts::Number)]
        index: usize,
        #[specta(type = crate::ts::JsonShape)]
        character: Value,
    },
    /// Appends to `world.characters`.
    AddCharacter {
        #[specta(type = crate::ts::JsonShape)]
        character: Value,
    },
    /// Removes `world.characters[index]`.
    RemoveCharacter {
        #[specta(type = crate::ts::Number)]
        index: usize,
    },
    /// Sets any value (creating the mappings on the way).
    Set {
        path: Vec<PathSegment>,
        #[specta(type = crate::ts::JsonShape)]
        value: Value,
    },
    /// Removes a mapping key or a list item.
    Remove { path: Vec<PathSegment> },
}

/// Why an edit was not applied.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EditError {
    #[error("line {line}, column {column}: {message} (fix the YAML first; nothing was edited)")]
    Syntax {
        message: String,
        line: u32,
        column: u32,
    },
    #[error("the session file's top level is not a mapping")]
    NotAMapping,
    #[error("`{path}`: {reason}")]
    Path { path: String, reason: String },
    #[error(
        "the YAML editor could not change `{path}` without changing something else; nothing was edited"
    )]
    Unfaithful { path: String },
}

/// Applies edits to session text, in order; returns the new text. Either every edit applies
/// or none does.
pub fn apply_edits(text: &str, edits: &[SessionEdit]) -> Result<String, EditError> {
    let mut current = text.to_string();
    for edit in edits {
        current = apply_edit(&current, edit)?;
    }
    Ok(current)
}

/// The text as data (what the loader will see), or where the YAML breaks.
fn data_of(text: &str) -> Result<Value, EditError> {
    serde_saphyr::from_str::<Value>(text).map_err(|e| {
        let (line, column) = e
            .location()
            .map(|l| (to_u32(l.line()), to_u32(l.column())))
            .unwrap_or((0, 0));
        let message = covel_kernel::yaml::message(&e);
        EditError::Syntax {
            message,
            line,
            column,
        }
    })
}

fn to_u32(n: u64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// The primitive operations edits become.
enum Op {
    Set(Vec<PathSegment>, Value),
    Remove(Vec<PathSegment>),
}

fn key_path(keys: &[&str]) -> Vec<PathSegment> {
    keys.iter().map(|k| PathSegment::key(k)).collect()
}

fn strings(value: Option<&Value>) -> Option<Vec<String>> {
    value.and_then(Value::as_array).map(|items| {
        items
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect()
    })
}

fn ops_for(edit: &SessionEdit, data: &Value) -> Vec<Op> {
    match edit {
        SessionEdit::SetLocale { locale } => vec![Op::Set(
            key_path(&["locale"]),
            Value::String(locale.clone()),
        )],
        SessionEdit::SetPluginEnabled { plugin, enabled } => {
            let plugins = data.get("plugins");
            let requested = strings(plugins.and_then(|p| p.get("requested")));
            let excluded = strings(plugins.and_then(|p| p.get("excluded"))).unwrap_or_default();
            let list =
                |items: Vec<String>| Value::Array(items.into_iter().map(Value::String).collect());
            let mut ops = Vec::new();
            if *enabled {
                if excluded.contains(plugin) {
                    let rest: Vec<String> =
                        excluded.iter().filter(|p| *p != plugin).cloned().collect();
                    let only_excluded = plugins
                        .and_then(Value::as_object)
                        .is_some_and(|p| p.len() == 1);
                    ops.push(match (rest.is_empty(), only_excluded) {
                        // Back to what the author wrote before the studio added `plugins:`.
                        (true, true) => Op::Remove(key_path(&["plugins"])),
                        (true, false) => Op::Remove(key_path(&["plugins", "excluded"])),
                        (false, _) => Op::Set(key_path(&["plugins", "excluded"]), list(rest)),
                    });
                }
                if let Some(requested) = requested.filter(|r| !r.contains(plugin)) {
                    let mut next = requested;
                    next.push(plugin.clone());
                    ops.push(Op::Set(key_path(&["plugins", "requested"]), list(next)));
                }
            } else {
                match requested {
                    Some(requested) if requested.contains(plugin) => {
                        let next = requested.into_iter().filter(|p| p != plugin).collect();
                        ops.push(Op::Set(key_path(&["plugins", "requested"]), list(next)));
                    }
                    _ if !excluded.contains(plugin) => {
                        let mut next = excluded;
                        next.push(plugin.clone());
                        ops.push(Op::Set(key_path(&["plugins", "excluded"]), list(next)));
                    }
                    _ => {}
                }
            }
            ops
        }
        SessionEdit::SetSetting { plugin, key, value } => {
            let path = vec![
                PathSegment::key("settings"),
                PathSegment::key(plugin),
                PathSegment::key(key),
            ];
            match value {
                Some(value) if !value.is_null() => vec![Op::Set(path, value.clone())],
                _ => vec![Op::Remove(path)],
            }
        }
        SessionEdit::SetCharacter { index, character } => {
            vec![Op::Set(
                vec![
                    PathSegment::key("world"),
                    PathSegment::key("characters"),
                    PathSegment::Index(*index),
                ],
                character.clone(),
            )]
        }
        SessionEdit::AddCharacter { character } => {
            let len = data
                .get("world")
                .and_then(|w| w.get("characters"))
                .and_then(Value::as_array)
                .map_or(0, Vec::len);
            vec![Op::Set(
                vec![
                    PathSegment::key("world"),
                    PathSegment::key("characters"),
                    PathSegment::Index(len),
                ],
                character.clone(),
            )]
        }
        SessionEdit::RemoveCharacter { index } => {
            vec![Op::Remove(vec![
                PathSegment::key("world"),
                PathSegment::key("characters"),
                PathSegment::Index(*index),
            ])]
        }
        SessionEdit::Set { path, value } => vec![Op::Set(path.clone(), value.clone())],
        SessionEdit::Remove { path } => vec![Op::Remove(path.clone())],
    }
}

fn apply_edit(text: &str, edit: &SessionEdit) -> Result<String, EditError> {
    let data = data_of(text)?;
    let mut current = text.to_string();
    let mut expected = data.clone();
    for op in ops_for(edit, &data) {
        let path = match &op {
            Op::Set(path, _) | Op::Remove(path) => path.clone(),
        };
        let Some((last, parents)) = path.split_last() else {
            return Err(EditError::Path {
                path: String::new(),
                reason: "an empty path names the whole document".into(),
            });
        };
        let rendered = render_path(&path);
        let file = parse_file(&current)?;
        let document = file.documents().next().ok_or(EditError::NotAMapping)?;
        let root = document.as_mapping().ok_or(EditError::NotAMapping)?;
        match &op {
            Op::Set(_, value) => {
                set_value(&mut expected, &path, value.clone()).map_err(|reason| {
                    EditError::Path {
                        path: rendered.clone(),
                        reason,
                    }
                })?;
                set_in(Container::Mapping(root), parents, last, value, &[]).map_err(|reason| {
                    EditError::Path {
                        path: rendered.clone(),
                        reason,
                    }
                })?;
            }
            Op::Remove(_) => {
                if !remove_value(&mut expected, &path) {
                    continue;
                }
                remove_in(Container::Mapping(root), parents, last).map_err(|reason| {
                    EditError::Path {
                        path: rendered.clone(),
                        reason,
                    }
                })?;
            }
        }
        let next = file.to_string();
        if data_of(&next).ok().as_ref() != Some(&expected) {
            return Err(EditError::Unfaithful { path: rendered });
        }
        current = next;
    }
    Ok(current)
}

fn parse_file(text: &str) -> Result<YamlFile, EditError> {
    let parsed = YamlFile::parse(text);
    if let Some(error) = parsed.positioned_errors().first() {
        let offset = usize::try_from(error.range.start)
            .unwrap_or(0)
            .min(text.len());
        let before = &text[..offset];
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        return Err(EditError::Syntax {
            message: error.message.clone(),
            line: to_u32(line as u64),
            column: to_u32(column as u64),
        });
    }
    Ok(parsed.tree())
}

// ---- The expected data --------------------------------------------------------------------------

fn set_value(target: &mut Value, path: &[PathSegment], value: Value) -> Result<(), String> {
    let Some((first, rest)) = path.split_first() else {
        *target = value;
        return Ok(());
    };
    if target.is_null() {
        *target = match first {
            PathSegment::Key(_) => Value::Object(Map::new()),
            PathSegment::Index(_) => Value::Array(Vec::new()),
        };
    }
    match (first, target) {
        (PathSegment::Key(k), Value::Object(map)) => {
            set_value(map.entry(k.clone()).or_insert(Value::Null), rest, value)
        }
        (PathSegment::Index(i), Value::Array(items)) if *i < items.len() => {
            set_value(&mut items[*i], rest, value)
        }
        (PathSegment::Index(i), Value::Array(items)) if *i == items.len() => {
            items.push(Value::Null);
            set_value(&mut items[*i], rest, value)
        }
        (PathSegment::Index(i), Value::Array(items)) => Err(format!(
            "index {i} is past the end of a list of {}",
            items.len()
        )),
        (PathSegment::Key(k), _) => Err(format!("`{k}` is inside something that is not a mapping")),
        (PathSegment::Index(i), _) => Err(format!("[{i}] is inside something that is not a list")),
    }
}

/// Removes the value at `path`; false when there was none.
fn remove_value(target: &mut Value, path: &[PathSegment]) -> bool {
    let Some((last, parents)) = path.split_last() else {
        return false;
    };
    let mut current = target;
    for segment in parents {
        let next = match (segment, current) {
            (PathSegment::Key(k), Value::Object(map)) => map.get_mut(k),
            (PathSegment::Index(i), Value::Array(items)) => items.get_mut(*i),
            _ => None,
        };
        match next {
            Some(next) => current = next,
            None => return false,
        }
    }
    match (last, current) {
        (PathSegment::Key(k), Value::Object(map)) => map.shift_remove(k).is_some(),
        (PathSegment::Index(i), Value::Array(items)) if *i < items.len() => {
            items.remove(*i);
            true
        }
        _ => false,
    }
}

// ---- The document -------------------------------------------------------------------------------

enum Container {
    Mapping(Mapping),
    Sequence(Sequence),
}

/// The documented order of keys, so a key the studio adds lands where the format lists it.
fn field_order(parents: &[PathSegment]) -> &'static [&'static str] {
    match parents {
        [] => &[
            "id",
            "locale",
            "plugins",
            "settings",
            "world",
            "pluginData",
            "history",
            "models",
            "http",
            "storyPrompt",
            "nextMessage",
            "followingMessage",
        ],
        [PathSegment::Key(k)] if k == "plugins" => &["requested", "excluded", "unauthorized"],
        [PathSegment::Key(k)] if k == "world" => &[
            "worldRecord",
            "characterSchema",
            "characters",
            "seats",
            "dimensions",
        ],
        [PathSegment::Key(k)] if k == "history" => &["messages", "summaries"],
        _ => &[],
    }
}

fn set_in(
    container: Container,
    parents: &[PathSegment],
    last: &PathSegment,
    value: &Value,
    walked: &[PathSegment],
) -> Result<(), String> {
    if let Some((next, rest)) = parents.split_first() {
        let child = match (&container, next) {
            (Container::Mapping(m), PathSegment::Key(k)) => m.get(k.as_str()),
            (Container::Sequence(s), PathSegment::Index(i)) => s.get(*i),
            (Container::Mapping(_), PathSegment::Index(i)) => {
                return Err(format!("[{i}] is inside a mapping, not a list"));
            }
            (Container::Sequence(_), PathSegment::Key(k)) => {
                return Err(format!("`{k}` is inside a list, not a mapping"));
            }
        };
        let mut walked_here = walked.to_vec();
        walked_here.push(next.clone());
        match child {
            Some(YamlNode::Mapping(m)) => {
                return set_in(Container::Mapping(m), rest, last, value, &walked_here);
            }
            Some(YamlNode::Sequence(s)) => {
                return set_in(Container::Sequence(s), rest, last, value, &walked_here);
            }
            Some(YamlNode::Scalar(s)) if !s.is_null() => {
                return Err(format!(
                    "`{}` holds a value, not a mapping or list",
                    render_path(&walked_here)
                ));
            }
            Some(YamlNode::Alias(_) | YamlNode::TaggedNode(_)) => {
                return Err(format!(
                    "`{}` is an alias or tagged node; edit it by hand",
                    render_path(&walked_here)
                ));
            }
            // Missing (or null): the rest of the path becomes a new value here.
            _ => {
                let mut nested = Value::Null;
                let mut remaining = rest.to_vec();
                remaining.push(last.clone());
                set_value(&mut nested, &remaining, value.clone())?;
                return put(&container, next, &nested, walked, true);
            }
        }
    }
    put(&container, last, value, walked, false)
}

/// Puts `value` at `segment` of `container`, in the style of what it replaces or of its
/// neighbours. Mappings the edit had to create (`plugins:` for `plugins.excluded`) are block
/// mappings in a block parent, like the keys around them.
fn put(
    container: &Container,
    segment: &PathSegment,
    value: &Value,
    walked: &[PathSegment],
    created: bool,
) -> Result<(), String> {
    match (container, segment) {
        (Container::Mapping(m), PathSegment::Key(k)) => {
            let existing = m.get(k.as_str());
            let quote = quote_of(existing.as_ref());
            let created_block = created && value.is_object() && !m.is_flow_style();
            let flow = m.is_flow_style()
                || (!created_block && prefer_flow(value, existing.as_ref(), None));
            with_node(value, flow, quote, |node| {
                if existing.is_some() {
                    m.set(k.as_str(), node);
                } else {
                    m.set_with_field_order(k.as_str(), node, field_order(walked).iter().copied());
                }
            })
        }
        (Container::Sequence(s), PathSegment::Index(i)) => {
            let existing = s.get(*i);
            let quote = quote_of(existing.as_ref());
            let neighbour = s.first();
            let flow =
                s.is_flow_style() || prefer_flow(value, existing.as_ref(), neighbour.as_ref());
            match existing {
                Some(_) => with_node(value, flow, quote, |node| {
                    s.set(*i, node);
                }),
                None if *i == s.len() => with_node(value, flow, None, |node| s.push(node)),
                None => Err(format!(
                    "index {i} is past the end of a list of {}",
                    s.len()
                )),
            }
        }
        (Container::Mapping(_), PathSegment::Index(i)) => {
            Err(format!("[{i}] is inside a mapping, not a list"))
        }
        (Container::Sequence(_), PathSegment::Key(k)) => {
            Err(format!("`{k}` is inside a list, not a mapping"))
        }
    }
}

fn remove_in(
    container: Container,
    parents: &[PathSegment],
    last: &PathSegment,
) -> Result<(), String> {
    if let Some((next, rest)) = parents.split_first() {
        let child = match (&container, next) {
            (Container::Mapping(m), PathSegment::Key(k)) => m.get(k.as_str()),
            (Container::Sequence(s), PathSegment::Index(i)) => s.get(*i),
            _ => None,
        };
        return match child {
            Some(YamlNode::Mapping(m)) => remove_in(Container::Mapping(m), rest, last),
            Some(YamlNode::Sequence(s)) => remove_in(Container::Sequence(s), rest, last),
            _ => Ok(()),
        };
    }
    match (&container, last) {
        (Container::Mapping(m), PathSegment::Key(k)) => {
            m.remove(k.as_str());
        }
        (Container::Sequence(s), PathSegment::Index(i)) => {
            s.remove(*i);
        }
        _ => {}
    }
    Ok(())
}

/// Flow (`{ a: 1 }`, `[a, b]`) or block style for a new value: the style of the value it
/// replaces, else of its neighbour, else flow when it fits on a line.
fn prefer_flow(value: &Value, existing: Option<&YamlNode>, neighbour: Option<&YamlNode>) -> bool {
    let is_collection = |n: &YamlNode| matches!(n, YamlNode::Mapping(_) | YamlNode::Sequence(_));
    let flow_of = |n: &YamlNode| match n {
        YamlNode::Mapping(m) => m.is_flow_style(),
        YamlNode::Sequence(s) => s.is_flow_style(),
        _ => true,
    };
    match (
        existing.filter(|n| is_collection(n)),
        neighbour.filter(|n| is_collection(n)),
    ) {
        (Some(n), _) | (None, Some(n)) => flow_of(n),
        (None, None) => flow(value).chars().count() <= 72,
    }
}

/// The quote a replaced string scalar was written with, so the new string keeps it.
fn quote_of(existing: Option<&YamlNode>) -> Option<char> {
    match existing {
        Some(YamlNode::Scalar(s)) if s.is_quoted() => s.value().chars().next(),
        _ => None,
    }
}

/// Builds the YAML node for `value` (a string in the `quote` it replaces) and hands it to `put`.
fn with_node(
    value: &Value,
    flow_style: bool,
    quote: Option<char>,
    put: impl FnOnce(&dyn AsYaml),
) -> Result<(), String> {
    let text = match value {
        Value::String(s) if quote == Some('\'') && !s.contains('\n') => {
            format!("'{}'", s.replace('\'', "''"))
        }
        Value::String(s) if quote == Some('"') => {
            serde_json::to_string(s).unwrap_or_else(|_| scalar(s))
        }
        Value::Object(map) if !map.is_empty() && !flow_style => block(value, 0),
        Value::Array(items) if !items.is_empty() && !flow_style => block(value, 0),
        _ => flow(value),
    };
    let snippet =
        Document::from_str(&text).map_err(|e| format!("cannot write the value as YAML: {e}"))?;
    if let Some(m) = snippet.as_mapping() {
        put(&m);
    } else if let Some(s) = snippet.as_sequence() {
        put(&s);
    } else if let Some(s) = snippet.as_scalar() {
        put(&s);
    } else {
        return Err("cannot write the value as YAML".into());
    }
    Ok(())
}

// ---- Writing values -----------------------------------------------------------------------------

/// A string as a YAML scalar: plain when that reads back as the same string, else JSON-quoted
/// (JSON strings are YAML double-quoted scalars).
fn scalar(text: &str) -> String {
    let plain = text.chars().next().is_some_and(char::is_alphanumeric)
        && !text.ends_with(' ')
        && text
            .chars()
            .all(|c| c.is_alphanumeric() || " _-./()'!?".contains(c))
        && serde_saphyr::from_str::<Value>(text)
            .ok()
            .as_ref()
            .and_then(Value::as_str)
            == Some(text);
    if plain {
        text.to_string()
    } else {
        serde_json::to_string(text).unwrap_or_else(|_| "\"\"".into())
    }
}

/// A value in flow style, on one line: `{ id: mira, name: Mira }`, `[a, b]`.
pub fn flow(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => scalar(s),
        Value::Array(items) if items.is_empty() => "[]".into(),
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(flow).collect::<Vec<_>>().join(", ")
        ),
        Value::Object(map) if map.is_empty() => "{}".into(),
        Value::Object(map) => format!(
            "{{ {} }}",
            map.iter()
                .map(|(k, v)| format!("{}: {}", scalar(k), flow(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// Whether a nested value stays on its key's line.
fn inline(value: &Value) -> bool {
    match value {
        Value::Object(m) if !m.is_empty() => flow(value).chars().count() <= 60,
        Value::Array(a) if !a.is_empty() => flow(value).chars().count() <= 60,
        _ => true,
    }
}

/// A mapping or list in block style at `indent`, nested values inline when short.
fn block(value: &Value, indent: usize) -> String {
    let pad = " ".repeat(indent);
    let mut out = String::new();
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                if inline(v) {
                    out.push_str(&format!("{pad}{}: {}\n", scalar(k), flow(v)));
                } else {
                    out.push_str(&format!("{pad}{}:\n{}", scalar(k), block(v, indent + 2)));
                }
            }
        }
        Value::Array(items) => {
            for v in items {
                if inline(v) {
                    out.push_str(&format!("{pad}- {}\n", flow(v)));
                } else {
                    let inner = block(v, indent + 2);
                    out.push_str(&format!(
                        "{pad}- {}",
                        &inner[(indent + 2).min(inner.len())..]
                    ));
                }
            }
        }
        other => out.push_str(&format!("{pad}{}\n", flow(other))),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const SESSION: &str =
        "# notes\nid: s   # the id\nlocale: en\nworld:\n  characters:\n    - { id: a, name: A }\n";

    #[test]
    fn an_edit_changes_only_the_edited_value() {
        let out = apply_edits(
            SESSION,
            &[SessionEdit::SetLocale {
                locale: "fr".into(),
            }],
        )
        .expect("applies");
        assert_eq!(out, SESSION.replace("locale: en", "locale: fr"));
    }

    #[test]
    fn strings_that_would_read_back_as_something_else_are_quoted() {
        for text in [
            "true",
            "1.5",
            "a: b",
            "",
            " lead",
            "null",
            "x #y",
            "multi\nline",
            "[x]",
            "@at",
        ] {
            let out = apply_edits(
                SESSION,
                &[SessionEdit::SetLocale {
                    locale: text.into(),
                }],
            )
            .expect(text);
            let data: Value = serde_saphyr::from_str(&out).expect("parses");
            assert_eq!(data["locale"], json!(text), "{out}");
        }
        assert_eq!(scalar("Mira's younger brother."), "Mira's younger brother.");
    }

    #[test]
    fn new_keys_land_in_the_documented_order_and_nested_mappings_are_created() {
        let out = apply_edits(
            SESSION,
            &[SessionEdit::SetPluginEnabled {
                plugin: "b".into(),
                enabled: false,
            }],
        )
        .expect("applies");
        assert_eq!(
            out,
            "# notes\nid: s   # the id\nlocale: en\nplugins:\n  excluded: [b]\nworld:\n  characters:\n    - { id: a, name: A }\n"
        );
        let back = apply_edits(
            &out,
            &[SessionEdit::SetPluginEnabled {
                plugin: "b".into(),
                enabled: true,
            }],
        )
        .expect("applies");
        assert_eq!(back, SESSION, "the `plugins:` the toggle added goes again");
    }

    #[test]
    fn characters_follow_the_style_of_their_neighbours() {
        let out = apply_edits(
            SESSION,
            &[SessionEdit::AddCharacter {
                character: json!({"id": "b", "name": "B", "type": "npc"}),
            }],
        )
        .expect("applies");
        assert!(
            out.ends_with("    - { id: a, name: A }\n    - { id: b, name: B, type: npc }\n"),
            "{out}"
        );
        let out = apply_edits(&out, &[SessionEdit::RemoveCharacter { index: 0 }]).expect("applies");
        assert!(
            out.ends_with("  characters:\n    - { id: b, name: B, type: npc }\n"),
            "{out}"
        );
    }

    #[test]
    fn a_syntax_error_is_reported_with_its_position_and_nothing_is_edited() {
        let error = apply_edits(
            "id: [x\n",
            &[SessionEdit::SetLocale {
                locale: "fr".into(),
            }],
        )
        .expect_err("broken");
        assert!(matches!(error, EditError::Syntax { .. }), "{error:?}");
    }

    #[test]
    fn block_values_are_written_in_block_style() {
        let big = json!({"id": "vell", "name": "Vell", "description": "A harbour city built on a drowned one, and a long description too."});
        let out = apply_edits(
            "id: s\n",
            &[SessionEdit::Set {
                path: vec![PathSegment::key("world"), PathSegment::key("worldRecord")],
                value: big.clone(),
            }],
        )
        .expect("applies");
        let data: Value = serde_saphyr::from_str(&out).expect("parses");
        assert_eq!(data["world"]["worldRecord"], big);
        assert!(out.contains("\n    name: Vell\n"), "{out}");
    }
}
