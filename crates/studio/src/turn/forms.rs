//! Forms a turn's tools ask the player to fill: a tool's `interaction` result (what the SDK's
//! `createFormTool` returns) or an `interaction.request` proposal. The studio shows the last
//! turn's form; the author answers it as the player would: each value is checked against its
//! field (required, number range, select options), then against the plugin's form validator
//! (`covel.registerFormValidator`), and the form's `narrativeTemplate` filled with the values
//! is what the player says next.

use covel_kernel::runner::{HandlerCall, Invoker};
use serde::Serialize;
use serde_json::{Map, Value, json};
use std::sync::Arc;
use std::time::Duration;

/// How long a form validator may run.
pub const VALIDATOR_TIMEOUT: Duration = Duration::from_secs(2);

/// Why an answer was refused: a field's (or the form's, `field` absent) message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, specta::Type)]
pub struct FormProblem {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    pub message: String,
}

/// An answer to a form: what the player says, or the problems with the values.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, specta::Type)]
pub struct FormAnswer {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub said: Option<String>,
    pub problems: Vec<FormProblem>,
}

impl From<Result<String, Vec<FormProblem>>> for FormAnswer {
    fn from(answer: Result<String, Vec<FormProblem>>) -> Self {
        match answer {
            Ok(said) => FormAnswer {
                said: Some(said),
                problems: Vec::new(),
            },
            Err(problems) => FormAnswer {
                said: None,
                problems,
            },
        }
    }
}

/// The form a turn's `forms` ask the player to fill, if any (the last one of type `form`).
pub fn pending(forms: &[Value]) -> Option<&Value> {
    forms
        .iter()
        .rev()
        .find(|f| f["interaction"]["type"] == "form")
}

/// A form as a form record: `{pluginId, interaction}` from a tool's `interaction` result or an
/// `interaction.request` payload (`{interactionId, type, title, data, narrativeTemplate}`).
pub fn record(plugin_id: &str, interaction: &Value) -> Value {
    let mut shown = interaction.clone();
    // A request's fields sit in its `data`; a tool's interaction carries them itself.
    if let (Some(fields), Some(data)) = (shown.as_object_mut(), interaction["data"].as_object()) {
        for (key, value) in data {
            fields.entry(key.clone()).or_insert_with(|| value.clone());
        }
    }
    json!({"pluginId": plugin_id, "interaction": shown})
}

/// Checks `values` against the form's fields and fills its narrative template: what the player
/// says. `validator` runs the plugin's form validator when the form names one.
pub fn answer(
    form: &Value,
    values: &Map<String, Value>,
    validator: Option<(&Arc<dyn Invoker>, HandlerCall)>,
) -> Result<String, Vec<FormProblem>> {
    let interaction = &form["interaction"];
    let mut problems = Vec::new();
    for field in interaction["fields"].as_array().into_iter().flatten() {
        let name = field["name"].as_str().unwrap_or_default();
        let problem = |message: String| FormProblem {
            field: Some(name.to_string()),
            message,
        };
        let value = values.get(name);
        let empty = match value {
            None | Some(Value::Null) => true,
            Some(Value::String(s)) => s.trim().is_empty(),
            _ => false,
        };
        if empty {
            if field["required"] == true {
                problems.push(problem("required".into()));
            }
            continue;
        }
        let value = value.unwrap_or(&Value::Null);
        match field["type"].as_str().unwrap_or("text") {
            "number" => match value
                .as_f64()
                .or_else(|| value.as_str().and_then(|s| s.trim().parse().ok()))
            {
                None => problems.push(problem("a number".into())),
                Some(n) => {
                    if field["min"].as_f64().is_some_and(|min| n < min) {
                        problems.push(problem(format!("at least {}", field["min"])));
                    }
                    if field["max"].as_f64().is_some_and(|max| n > max) {
                        problems.push(problem(format!("at most {}", field["max"])));
                    }
                }
            },
            "select" => {
                let options: Vec<String> = field["options"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|o| match o {
                        Value::String(s) => s.clone(),
                        other => other["value"].as_str().unwrap_or_default().to_string(),
                    })
                    .collect();
                if !options.iter().any(|o| Some(o.as_str()) == value.as_str()) {
                    problems.push(problem(format!("one of {}", options.join(", "))));
                }
            }
            _ => {}
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    if let Some((invoker, call)) = validator {
        let report = invoker.call_handler(&call);
        let verdict = match report.result {
            Ok(verdict) => verdict.as_ref().clone(),
            Err(failure) => json!(format!("the form's validator failed: {}", failure.message)),
        };
        let refused = validator_problems(&verdict);
        if !refused.is_empty() {
            return Err(refused);
        }
    }
    Ok(fill(
        interaction["narrativeTemplate"]
            .as_str()
            .unwrap_or_default(),
        values,
    ))
}

/// A validator's verdict as problems: nothing, a message, `{field?, message}` or a list of them.
fn validator_problems(verdict: &Value) -> Vec<FormProblem> {
    match verdict {
        Value::Null => Vec::new(),
        Value::String(message) => vec![FormProblem {
            field: None,
            message: message.clone(),
        }],
        Value::Array(items) => items.iter().flat_map(validator_problems).collect(),
        Value::Object(o) => vec![FormProblem {
            field: o.get("field").and_then(Value::as_str).map(str::to_string),
            message: o
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("refused by the form's validator")
                .to_string(),
        }],
        other => vec![FormProblem {
            field: None,
            message: format!("the form's validator answered {other}"),
        }],
    }
}

/// The template with each `{{name}}` replaced by its value (text as it is, anything else as
/// JSON); placeholders without a value are left empty.
fn fill(template: &str, values: &Map<String, Value>) -> String {
    let mut out = String::new();
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        let Some(end) = rest[start..].find("}}") else {
            break;
        };
        out.push_str(&rest[..start]);
        let name = rest[start + 2..start + end].trim();
        match values.get(name) {
            Some(Value::String(text)) => out.push_str(text),
            Some(Value::Null) | None => {}
            Some(other) => out.push_str(&other.to_string()),
        }
        rest = &rest[start + end + 2..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form() -> Value {
        record(
            "char",
            &json!({"type": "form", "interactionId": "who", "title": "Who are you?", "narrativeTemplate": "I am {{name}}, a {{role}} of {{age}} years.",
            "fields": [
                {"type": "text", "name": "name", "label": "Name", "required": true},
                {"type": "select", "name": "role", "label": "Role", "options": ["diver", {"value": "keeper", "label": "Lighthouse keeper"}]},
                {"type": "number", "name": "age", "label": "Age", "min": 12, "max": 90},
            ]}),
        )
    }

    fn values(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn an_answer_fills_the_narrative_template() {
        let said = answer(
            &form(),
            &values(json!({"name": "Mira", "role": "keeper", "age": 19})),
            None,
        );
        assert_eq!(said.as_deref(), Ok("I am Mira, a keeper of 19 years."));
    }

    #[test]
    fn each_field_is_checked_and_every_problem_named() {
        let refused = answer(
            &form(),
            &values(json!({"name": " ", "role": "pirate", "age": "7"})),
            None,
        );
        let fields: Vec<(Option<String>, String)> = refused
            .err()
            .unwrap_or_default()
            .into_iter()
            .map(|p| (p.field, p.message))
            .collect();
        assert_eq!(
            fields,
            [
                (Some("name".into()), "required".into()),
                (Some("role".into()), "one of diver, keeper".into()),
                (Some("age".into()), "at least 12".into()),
            ]
        );
    }

    #[test]
    fn a_request_s_fields_in_its_data_are_the_form_s() {
        let request = record(
            "p",
            &json!({"type": "form", "interactionId": "x", "data": {"fields": [{"type": "text", "name": "a", "required": true}]}, "narrativeTemplate": "{{a}}"}),
        );
        assert_eq!(request["interaction"]["fields"][0]["name"], "a");
        assert!(pending(&[request]).is_some());
        assert_eq!(
            validator_problems(&json!([{"field": "a", "message": "no"}, "bad"])).len(),
            2
        );
    }
}
