//! Session settings against what plugins declare: `settings.<plugin>.<key>` in a test session
//! must name a plugin of the folder and a key of its `contributes.settings`, with a value of
//! the declared type (`text`/`textarea`/`slot` strings, `number`/`slider` numbers, `integer`
//! integers, `toggle` booleans, `select` one of the options). Each mismatch is a
//! `session-schema` diagnostic at the key's line and column in the session file.

use crate::diagnostic::{Code, Diagnostic};
use crate::manifest::raw::SettingDecl;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::Path;

/// A plugin's settings in a session: the declared defaults of `contributes.settings`,
/// overridden by the session's `settings.<plugin>` (what `ctx.getOwnSettings()` returns and
/// what a prompt template's `userSettings` reads).
pub fn merged(
    declared: &[SettingDecl],
    overrides: Option<&Map<String, Value>>,
) -> Map<String, Value> {
    let mut settings = Map::new();
    for decl in declared {
        if let Some(default) = &decl.default {
            settings.insert(decl.key.clone(), default.clone());
        }
    }
    if let Some(overrides) = overrides {
        settings.extend(overrides.clone());
    }
    settings
}

/// Why one value does not fit its declaration, or `None`.
fn mismatch(decl: &SettingDecl, value: &Value) -> Option<String> {
    let ok = match decl.kind.as_str() {
        "text" | "textarea" | "slot" => value.is_string(),
        "number" | "slider" => value.is_number(),
        "integer" => value.as_i64().is_some() || value.as_u64().is_some(),
        "toggle" => value.is_boolean(),
        "select" => decl
            .options
            .iter()
            .any(|o| o.get("value").unwrap_or(o) == value),
        _ => true,
    };
    if !ok {
        let expected = if decl.kind == "select" {
            let values: Vec<String> = decl
                .options
                .iter()
                .map(|o| o.get("value").unwrap_or(o).to_string())
                .collect();
            format!("one of {}", values.join(", "))
        } else {
            format!("a {} value", decl.kind)
        };
        return Some(format!("expects {expected}, not {value}"));
    }
    let number = value.as_f64()?;
    if let Some(min) = decl.min.filter(|m| number < *m) {
        return Some(format!("is below its minimum {min}"));
    }
    if let Some(max) = decl.max.filter(|m| number > *m) {
        return Some(format!("is above its maximum {max}"));
    }
    None
}

/// The column where `key:` starts on a line at or after `from`: as a block key at the start of
/// the line, or as a flow key after `{` or `,`.
fn key_column(line: &str, key: &str, from: usize) -> Option<usize> {
    let trimmed = line.trim_start();
    let indent = line.len() - trimmed.len();
    if from <= indent
        && (trimmed.starts_with(&format!("{key}:")) || trimmed.starts_with(&format!("\"{key}\":")))
    {
        return Some(indent);
    }
    let rest = line.get(from..)?;
    ["{ ", "{", ", ", ","].iter().find_map(|sep| {
        rest.find(&format!("{sep}{key}:"))
            .map(|at| from + at + sep.len())
    })
}

/// Where a key path (`settings` → plugin → key) is written in the session text (1-based line
/// and column), block or flow style.
pub fn locate(text: &str, path: &[&str]) -> Option<(u32, u32)> {
    let mut depth = 0;
    let mut min_indent = 0;
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        if trimmed.is_empty() || trimmed.starts_with('#') || (depth > 0 && indent < min_indent) {
            continue;
        }
        let mut from = 0;
        while let Some(column) = key_column(line, path.get(depth)?, from) {
            if depth + 1 == path.len() {
                return Some((u32::try_from(i + 1).ok()?, u32::try_from(column + 1).ok()?));
            }
            depth += 1;
            min_indent = indent + 1;
            from = column + 1;
        }
    }
    None
}

/// What the settings check knows of one plugin the session gives settings to.
#[derive(Debug, Clone, PartialEq)]
pub enum Declared {
    /// Its `contributes.settings`.
    Settings(Vec<SettingDecl>),
    /// Its PLUGIN.md did not load, so what it declares is unknown: why, in words.
    NotLoaded(String),
}

/// Checks a session's settings against the plugins' declarations.
pub fn check(
    settings: &BTreeMap<String, Map<String, Value>>,
    declared: &BTreeMap<String, Declared>,
    text: Option<&str>,
    file: &Path,
) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let at = |path: &[&str]| text.and_then(|t| locate(t, path));
    for (plugin, values) in settings {
        if let Some(Declared::NotLoaded(why)) = declared.get(plugin) {
            out.push(
                Diagnostic::new(
                    Code::SessionSchema,
                    format!(
                        "settings.{plugin}: the plugin `{plugin}` failed to load ({why}), so its settings cannot be checked"
                    ),
                )
                .file(file)
                .at_opt(at(&["settings", plugin])),
            );
            continue;
        }
        let Some(Declared::Settings(decls)) = declared.get(plugin) else {
            out.push(
                Diagnostic::new(
                    Code::SessionSchema,
                    format!("settings.{plugin}: there is no plugin `{plugin}` in the folder"),
                )
                .file(file)
                .at_opt(at(&["settings", plugin])),
            );
            continue;
        };
        for (key, value) in values {
            let position = at(&["settings", plugin, key]);
            match decls.iter().find(|d| d.key == *key) {
                None => {
                    let known: Vec<&str> = decls.iter().map(|d| d.key.as_str()).collect();
                    let message = format!(
                        "settings.{plugin}.{key}: `{plugin}` declares no setting `{key}` (its settings: {})",
                        if known.is_empty() {
                            "none".to_string()
                        } else {
                            known.join(", ")
                        }
                    );
                    out.push(
                        Diagnostic::new(Code::SessionSchema, message)
                            .file(file)
                            .at_opt(position),
                    );
                }
                Some(decl) => {
                    if let Some(why) = mismatch(decl, value) {
                        out.push(
                            Diagnostic::new(
                                Code::SessionSchema,
                                format!("settings.{plugin}.{key} {why}"),
                            )
                            .file(file)
                            .at_opt(position),
                        );
                    }
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_located_in_block_and_flow_style() {
        let text = "id: s\nsettings:\n  story:\n    tone: grave\n  other: { mood: calm }\n";
        assert_eq!(locate(text, &["settings", "story", "tone"]), Some((4, 5)));
        assert_eq!(locate(text, &["settings", "other", "mood"]), Some((5, 12)));
    }

    #[test]
    fn a_setting_for_a_plugin_that_failed_to_load_names_the_plugin_and_why() {
        let text = "id: s\nsettings:\n  broken:\n    tone: grave\n";
        let mut values = Map::new();
        values.insert("tone".into(), Value::from("grave"));
        let settings = BTreeMap::from([("broken".to_string(), values)]);
        let declared = BTreeMap::from([(
            "broken".to_string(),
            Declared::NotLoaded("[manifest-schema] unknown field `contributez`".into()),
        )]);
        let found = check(
            &settings,
            &declared,
            Some(text),
            Path::new("s.session.yaml"),
        );
        assert_eq!(found.len(), 1);
        assert_eq!(
            found[0].message,
            "settings.broken: the plugin `broken` failed to load ([manifest-schema] unknown field `contributez`), so its settings cannot be checked"
        );
        assert_eq!(found[0].line, Some(3));
    }
}
