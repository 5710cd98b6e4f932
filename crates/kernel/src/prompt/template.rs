//! Template variables in runtime prompt bodies: `{{ world.<field> }}` (the session's world
//! record) and `{{ userSettings.<key> }}` (the plugin's settings for the session). A body is
//! rendered once per assembly, before it is cached, so a changing value breaks the prefix.
//! Static `contributes.prompt` segments are never rendered (upstream inserts them literally).
//!
//! Values render as text: strings as they are, numbers and booleans in their JSON form, a list
//! of plain values joined with ", ", anything else (objects, nested lists) as compact JSON. A
//! missing field renders empty; a placeholder with another root (`{{ player.x }}`) is left as
//! written, since the studio does not know it, and [`unknown_roots`] finds each one for a lint.

use serde_json::Value;

/// The values a body may name.
#[derive(Debug, Clone, Copy, Default)]
pub struct TemplateScope<'a> {
    /// The world record (`name`, `description`, `tags`, …).
    pub world: Option<&'a Value>,
    /// The plugin's settings (declared defaults overridden by the session).
    pub user_settings: Option<&'a serde_json::Map<String, Value>>,
}

/// Renders one value as prompt text.
pub fn render_value(value: &Value) -> String {
    match value {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Array(items) if items.iter().all(|v| !v.is_object() && !v.is_array()) => items
            .iter()
            .map(render_value)
            .collect::<Vec<_>>()
            .join(", "),
        other => other.to_string(),
    }
}

/// Fills the placeholders of `body`.
pub fn render(body: &str, scope: TemplateScope<'_>) -> String {
    let mut out = String::with_capacity(body.len());
    let mut rest = body;
    while let Some(start) = rest.find("{{") {
        let Some(len) = rest[start..].find("}}") else {
            break;
        };
        let inner = rest[start + 2..start + len].trim();
        out.push_str(&rest[..start]);
        match lookup(inner, scope) {
            Some(text) => out.push_str(&text),
            None => out.push_str(&rest[start..start + len + 2]),
        }
        rest = &rest[start + len + 2..];
    }
    out.push_str(rest);
    out
}

/// The roots a placeholder may name.
pub const KNOWN_ROOTS: [&str; 2] = ["world", "userSettings"];

/// A placeholder whose root the studio does not fill (it stays in the prompt as written).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownRoot {
    /// 1-based line and column within the body.
    pub line: u32,
    pub column: u32,
    /// The placeholder as written, braces included.
    pub placeholder: String,
    pub root: String,
}

/// Every placeholder of `body` whose root is not a known one, in order.
pub fn unknown_roots(body: &str) -> Vec<UnknownRoot> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(start) = body[from..].find("{{").map(|i| from + i) {
        let Some(len) = body[start..].find("}}") else {
            break;
        };
        let placeholder = &body[start..start + len + 2];
        let inner = placeholder[2..placeholder.len() - 2].trim();
        let root = inner.split('.').next().unwrap_or_default();
        if !KNOWN_ROOTS.contains(&root) {
            let before = &body[..start];
            let line = before.matches('\n').count() + 1;
            let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
            out.push(UnknownRoot {
                line: u32::try_from(line).unwrap_or(u32::MAX),
                column: u32::try_from(column).unwrap_or(u32::MAX),
                placeholder: placeholder.to_string(),
                root: root.to_string(),
            });
        }
        from = start + len + 2;
    }
    out
}

fn lookup(path: &str, scope: TemplateScope<'_>) -> Option<String> {
    let mut parts = path.split('.');
    let root: Option<Value> = match parts.next()? {
        "world" => Some(scope.world.cloned().unwrap_or(Value::Null)),
        "userSettings" => Some(
            scope
                .user_settings
                .map(|m| Value::Object(m.clone()))
                .unwrap_or(Value::Null),
        ),
        _ => None,
    };
    let mut value = root?;
    for key in parts {
        value = value.get(key).cloned().unwrap_or(Value::Null);
    }
    Some(render_value(&value))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn world_fields_and_user_settings_are_filled() {
        let world = json!({"name": "Ashfall", "tags": ["grim", "sea"], "meta": {"era": 3}});
        let settings = json!({"narrativePerson": "second"});
        let scope = TemplateScope {
            world: Some(&world),
            user_settings: settings.as_object(),
        };
        let body = "{{ world.name }} · {{world.tags}} · {{ world.meta }} · {{ userSettings.narrativePerson }} · {{ userSettings.none }}|";
        assert_eq!(
            render(body, scope),
            "Ashfall · grim, sea · {\"era\":3} · second · |"
        );
    }

    #[test]
    fn every_placeholder_with_an_unknown_root_is_found_with_its_position() {
        let body = "Hello {{ world.name }}.\nYou are {{ player.character }}; allies: {{characters.npcs}}\n{{ userSettings.tone }} {{ unclosed";
        let found: Vec<(u32, u32, &str)> = unknown_roots(body)
            .iter()
            .map(|u| {
                (
                    u.line,
                    u.column,
                    if u.root == "player" {
                        "player"
                    } else {
                        "characters"
                    },
                )
            })
            .collect();
        assert_eq!(found, [(2, 9, "player"), (2, 41, "characters")]);
        assert_eq!(unknown_roots(body)[1].placeholder, "{{characters.npcs}}");
    }

    #[test]
    fn unknown_roots_and_unclosed_braces_stay_as_written() {
        let scope = TemplateScope::default();
        assert_eq!(
            render("{{ player.name }} and {{ open", scope),
            "{{ player.name }} and {{ open"
        );
    }
}
