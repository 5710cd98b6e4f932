//! Template variables in runtime prompt bodies: `{{ world.<field> }}` (the session's world
//! record) and `{{ userSettings.<key> }}` (the plugin's settings for the session). A body is
//! rendered once per assembly, before it is cached, so a changing value breaks the prefix.
//! Static `contributes.prompt` segments are never rendered (upstream inserts them literally).
//!
//! Values render as text: strings as they are, numbers and booleans in their JSON form, a list
//! of plain values joined with ", ", anything else (objects, nested lists) as compact JSON. A
//! missing field renders empty; a placeholder with another root (`{{ player.x }}`) is left as
//! written, since the studio does not know it.

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
    fn unknown_roots_and_unclosed_braces_stay_as_written() {
        let scope = TemplateScope::default();
        assert_eq!(
            render("{{ player.name }} and {{ open", scope),
            "{{ player.name }} and {{ open"
        );
    }
}
