//! JSON Schemas of every point's input and output and of every kernel slot value, complete to
//! the field and limit (reference notes §1). Compiled once, on first use.
//!
//! "Strict" objects (`additionalProperties: false`) mirror the upstream strict parsers: an
//! unknown key in a provider's output is an invalid output, never silently dropped.

use super::{PointId, SlotId};
use serde_json::{Value, json};
use std::fmt::Write as _;

/// A compiled JSON Schema with a name used in messages.
pub struct Validator {
    name: String,
    schema: Value,
    compiled: jsonschema::Validator,
}

impl std::fmt::Debug for Validator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Validator")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// Why a value does not match a contract schema: every violation, with its JSON pointer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", render(.schema, .violations))]
pub struct SchemaError {
    pub schema: String,
    /// `(instance path, message)` pairs, in the validator's order.
    pub violations: Vec<(String, String)>,
}

/// Violation messages quote the offending value; long values are cut so the reason stays
/// readable in a trace.
fn shorten(message: &str) -> String {
    const LIMIT: usize = 240;
    if message.chars().count() <= LIMIT {
        return message.to_string();
    }
    let head: String = message.chars().take(LIMIT / 2).collect();
    let tail: String = message
        .chars()
        .rev()
        .take(LIMIT / 2)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    format!("{head} … {tail}")
}

fn render(schema: &str, violations: &[(String, String)]) -> String {
    let mut out = format!("does not match {schema}:");
    for (path, message) in violations.iter().take(5) {
        let path = if path.is_empty() { "(root)" } else { path };
        let _ = write!(out, " at {path}: {message};");
    }
    if violations.len() > 5 {
        let _ = write!(out, " … and {} more", violations.len() - 5);
    }
    out.trim_end_matches(';').to_string()
}

impl Validator {
    /// Compiles one of the kernel's own schemas. They are constants of this crate, checked by
    /// the unit tests below, so a failure here is a bug in the kernel, never in a plugin.
    pub(super) fn compile(name: &str, schema: Value) -> Validator {
        let compiled = jsonschema::draft202012::new(&schema)
            .unwrap_or_else(|e| panic!("kernel schema `{name}` does not compile: {e}"));
        Validator {
            name: name.to_string(),
            schema,
            compiled,
        }
    }

    /// Compiles a schema a plugin wrote (an event's data schema): one that does not compile
    /// is the plugin's error, said in the answer.
    pub fn of_plugin(name: &str, schema: &Value) -> Result<Validator, String> {
        let compiled = jsonschema::draft202012::new(schema)
            .map_err(|e| format!("the schema of {name} does not compile: {e}"))?;
        Ok(Validator {
            name: name.to_string(),
            schema: schema.clone(),
            compiled,
        })
    }

    /// Validates a value, returning every violation.
    pub fn check(&self, value: &Value) -> Result<(), SchemaError> {
        if self.compiled.is_valid(value) {
            return Ok(());
        }
        let violations = self
            .compiled
            .iter_errors(value)
            .map(|e| (e.instance_path().to_string(), shorten(&e.to_string())))
            .collect();
        Err(SchemaError {
            schema: self.name.clone(),
            violations,
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The JSON Schema document, for tools that show or export it.
    pub fn schema(&self) -> &Value {
        &self.schema
    }
}

fn i18n() -> Value {
    json!({"anyOf": [{"type": "string"}, {"type": "object", "additionalProperties": {"type": "string"}}]})
}

fn media_ref() -> Value {
    // Loose in the kernel, like upstream: extra keys on a media reference are kept.
    json!({
        "type": "object",
        "required": ["id", "mime", "size"],
        "properties": {"id": {"type": "string"}, "mime": {"type": "string"}, "size": {"type": "number"}}
    })
}

fn string_array() -> Value {
    json!({"type": "array", "items": {"type": "string"}})
}

/// A history message: loose, so unknown keys survive a transform.
pub(crate) fn history_message() -> Value {
    json!({
        "type": "object",
        "required": ["id", "sessionId", "turnId", "sourceType", "role", "content", "order", "createdAt"],
        "properties": {
            "id": {"type": "string"},
            "sessionId": {"type": "string"},
            "turnId": {"type": "string"},
            "sourceType": {"type": "string"},
            "sourcePluginId": {"type": "string"},
            "sourceRuntimeId": {"type": "string"},
            "role": {"type": "string"},
            "content": {"type": "string"},
            "name": {"type": "string"},
            "order": {"type": "number"},
            "createdAt": {"type": "string"},
            "compactedAtTurnId": {"type": "string"}
        }
    })
}

fn prompt_segment() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["id", "content", "position", "audience", "volatility"],
        "properties": {
            "id": {"type": "string", "minLength": 1},
            "content": {"type": "string"},
            "position": {"anyOf": [
                {"enum": ["system", "pre-history", "post-history"]},
                {"type": "object", "additionalProperties": false, "required": ["depth"],
                 "properties": {"depth": {"type": "integer", "minimum": 0}}}
            ]},
            "role": {"enum": ["system", "user", "assistant"]},
            "audience": {"anyOf": [
                {"enum": ["all", "story", "self"]},
                {"type": "object", "additionalProperties": false, "required": ["contract"],
                 "properties": {"contract": {"type": "string", "minLength": 1}}}
            ]},
            "volatility": {"enum": ["stable", "session", "turn"]},
            "order": {"type": "integer"},
            "providerPluginId": {"type": "string"}
        }
    })
}

pub(crate) fn summary_record() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["id", "sessionId", "turnRangeStart", "turnRangeEnd", "content", "focusSections", "createdAt"],
        "properties": {
            "id": {"type": "string"},
            "sessionId": {"type": "string"},
            "turnRangeStart": {"type": "string"},
            "turnRangeEnd": {"type": "string"},
            "content": {"type": "string"},
            "focusSections": string_array(),
            "createdAt": {"type": "string"}
        }
    })
}

fn dimension_snapshot() -> Value {
    json!({
        "type": "object",
        "additionalProperties": {
            "type": "object",
            "additionalProperties": false,
            "required": ["name", "schema", "value", "version"],
            "properties": {
                "name": i18n(),
                "description": i18n(),
                "schema": {},
                "value": {},
                "version": {"type": "number"}
            }
        }
    })
}

fn slot_names() -> Value {
    Value::Array(
        SlotId::ALL
            .iter()
            .map(|s| Value::String(s.as_str().into()))
            .collect(),
    )
}

/// Input and output schemas of a point.
pub(super) fn point_schemas(point: PointId) -> (Value, Value) {
    match point {
        PointId::PromptSegment => (
            json!({
                "type": "object", "additionalProperties": false,
                "required": ["turnId", "playerMessage"],
                "properties": {"turnId": {"type": "string"}, "playerMessage": {"type": "string"}}
            }),
            json!({"type": "array", "items": prompt_segment()}),
        ),
        PointId::PromptHistoryTransform => (
            json!({
                "type": "object",
                "required": ["messages", "turnId"],
                "properties": {"messages": {"type": "array", "items": history_message()}, "turnId": {"type": "string"}}
            }),
            json!({
                "type": "object",
                "required": ["messages"],
                "properties": {"messages": {"type": "array", "items": history_message()}}
            }),
        ),
        PointId::UiSlot => (
            json!({
                "type": "object", "additionalProperties": false,
                "required": ["slot", "previous", "events"],
                "properties": {
                    "slot": {"enum": slot_names()},
                    "key": {"type": "string"},
                    "previous": {},
                    "events": {"type": "array", "items": {
                        "type": "object", "additionalProperties": false,
                        "required": ["topic", "data", "turnId"],
                        "properties": {
                            "topic": {"type": "string"},
                            "data": {"type": "object"},
                            "turnId": {"type": "string"},
                            "pluginId": {"type": "string"}
                        }
                    }}
                }
            }),
            json!({"anyOf": SlotId::ALL.iter().map(|s| slot_schema(*s)).chain([json!({"type": "null"})]).collect::<Vec<_>>()}),
        ),
        PointId::MediaImageFlow => (
            json!({"type": "object", "additionalProperties": false}),
            json!({
                "type": "object", "additionalProperties": false,
                "required": ["entryRuntimeId", "assetRuntimeIds"],
                "properties": {
                    "pluginId": {"type": "string"},
                    "entryRuntimeId": {"type": "string", "minLength": 1},
                    "assetRuntimeIds": {"type": "array", "minItems": 1, "maxItems": 20,
                                        "items": {"type": "string", "minLength": 1}}
                }
            }),
        ),
        PointId::SessionWorldContext => (
            json!({"type": "object", "additionalProperties": false}),
            json!({
                "type": "object", "additionalProperties": false,
                "properties": {
                    "schema": {"type": "object"},
                    "entries": {"type": "object"},
                    "dimensions": dimension_snapshot(),
                    "dimensionRecovery": {
                        "type": "object", "additionalProperties": false,
                        "required": ["editorRuntimeId", "trackerRuntimeId"],
                        "properties": {
                            "editorRuntimeId": {"type": "string", "minLength": 1},
                            "trackerRuntimeId": {"type": "string", "minLength": 1}
                        }
                    },
                    "dimensionProviderPluginId": {"type": "string", "minLength": 1}
                }
            }),
        ),
        PointId::HistoryCompact => (
            json!({
                "type": "object", "additionalProperties": false,
                "required": ["messages", "existingSummaries", "contextWindow", "inputWindow",
                             "summaryBudget", "estimatedTokens", "locale"],
                "properties": {
                    "messages": {"type": "array", "items": history_message()},
                    "existingSummaries": {"type": "array", "items": summary_record()},
                    "contextWindow": {"type": "number", "exclusiveMinimum": 0},
                    "inputWindow": {"type": "number", "exclusiveMinimum": 0},
                    "summaryBudget": {
                        "type": "object", "additionalProperties": false,
                        "required": ["maxTokens", "maxSegmentTokens", "maxSegments"],
                        "properties": {
                            "maxTokens": {"type": "integer", "exclusiveMinimum": 0},
                            "maxSegmentTokens": {"type": "integer", "exclusiveMinimum": 0},
                            "maxSegments": {"type": "integer", "exclusiveMinimum": 0}
                        }
                    },
                    "estimatedTokens": {"type": "number", "minimum": 0},
                    "locale": {"type": "string"}
                }
            }),
            json!({"anyOf": [
                {"type": "null"},
                {
                    "type": "object", "additionalProperties": false,
                    "required": ["summaries"],
                    "properties": {
                        "summaries": {"type": "array", "minItems": 1, "items": {
                            "type": "object", "additionalProperties": false,
                            "required": ["messageIds", "replacesSummaryIds", "content", "focusSections"],
                            "properties": {
                                "messageIds": string_array(),
                                "replacesSummaryIds": string_array(),
                                "content": {"type": "string", "minLength": 1},
                                "focusSections": string_array(),
                                "truncated": {"type": "boolean"}
                            }
                        }},
                        "deferred": {
                            "type": "object", "additionalProperties": false, "required": ["reason"],
                            "properties": {"reason": {"type": "string", "minLength": 1}}
                        }
                    }
                }
            ]}),
        ),
    }
}

/// One `character.visual@1` value (one character).
pub(super) fn character_visual_one() -> Value {
    json!({
        "type": "object", "additionalProperties": false,
        "required": ["characterId"],
        "properties": {
            "characterId": {"type": "string", "minLength": 1},
            "displayName": {"type": "string"},
            "avatar": media_ref(),
            "sprite": media_ref(),
            "visuals": {
                "type": "object", "additionalProperties": false,
                "required": ["variants"],
                "properties": {
                    "defaultVariant": {"type": "string"},
                    "variants": {"type": "array", "maxItems": 64, "items": {
                        "type": "object", "additionalProperties": false,
                        "required": ["id", "sprite"],
                        "properties": {
                            "id": {"type": "string", "minLength": 1},
                            "outfit": {"type": "string"},
                            "expression": {"type": "string"},
                            "pose": {"type": "string"},
                            "sprite": media_ref(),
                            "stage": {
                                "type": "object", "additionalProperties": false,
                                "properties": {
                                    "scale": {"type": "number", "minimum": 0.5, "maximum": 2},
                                    "offsetX": {"type": "number", "minimum": -100, "maximum": 100},
                                    "offsetY": {"type": "number", "minimum": -100, "maximum": 100}
                                }
                            }
                        }
                    }}
                }
            }
        }
    })
}

fn tone() -> Value {
    json!({"enum": ["info", "success", "warning", "danger"]})
}

/// The value schema of a slot, as a provider returns it.
pub(super) fn slot_schema(slot: SlotId) -> Value {
    match slot {
        SlotId::StageBackdrop => json!({
            "type": "object", "additionalProperties": false,
            "properties": {
                "sceneId": {"type": "string"},
                "name": {"type": "string"},
                "ref": media_ref(),
                "variant": {"enum": ["day", "night"]},
                "label": i18n(),
                "preload": {"type": "array", "items": media_ref()}
            }
        }),
        SlotId::StageCast => json!({
            "type": "object", "additionalProperties": false,
            "required": ["actors", "retainWhenEmpty"],
            "properties": {
                "actors": {"type": "array", "maxItems": 64, "items": {
                    "type": "object", "additionalProperties": false,
                    "required": ["characterId", "displayName"],
                    "properties": {
                        "characterId": {"type": "string", "minLength": 1},
                        "displayName": {"type": "string", "minLength": 1},
                        "type": {"type": "string"},
                        "description": {"type": "string"},
                        "active": {"type": "boolean"},
                        "exiting": {"type": "boolean"},
                        "visual": {
                            "type": "object", "additionalProperties": false,
                            "properties": {
                                "variantId": {"type": "string"}, "outfit": {"type": "string"},
                                "expression": {"type": "string"}, "pose": {"type": "string"}
                            }
                        },
                        "position": {"enum": ["left", "center-left", "center", "center-right", "right"]},
                        "transition": {"enum": ["none", "fade", "slide-left", "slide-right", "dissolve"]}
                    }
                }},
                "retainWhenEmpty": {"type": "boolean"}
            }
        }),
        SlotId::StageChoices => json!({
            "type": "object", "additionalProperties": false,
            "required": ["choices"],
            "properties": {
                "turnId": {"type": "string"},
                "scene": i18n(),
                "recap": i18n(),
                "decision": i18n(),
                "choices": {"type": "array", "maxItems": 64, "items": {
                    "type": "object", "additionalProperties": false,
                    "required": ["id", "text"],
                    "properties": {
                        "id": {"type": "string", "minLength": 1},
                        "text": {"type": "string"},
                        "label": i18n()
                    }
                }}
            }
        }),
        SlotId::CharacterVisual => json!({
            "type": "object", "additionalProperties": false,
            "required": ["characters"],
            "properties": {"characters": {"type": "array", "maxItems": 1024, "items": character_visual_one()}}
        }),
        SlotId::SessionSummary => {
            let base = |kind: &str, extra: Value, required: &[&str]| {
                let mut properties = json!({
                    "id": {"type": "string", "minLength": 1, "maxLength": 64},
                    "label": i18n(),
                    "kind": {"const": kind}
                });
                if let (Some(map), Value::Object(extra)) = (properties.as_object_mut(), extra) {
                    map.extend(extra);
                }
                let mut req = vec!["id", "label", "kind"];
                req.extend_from_slice(required);
                json!({"type": "object", "additionalProperties": false, "required": req, "properties": properties})
            };
            json!({
                "type": "object", "additionalProperties": false,
                "required": ["entries"],
                "properties": {"entries": {"type": "array", "maxItems": 16, "items": {"oneOf": [
                    base("text", json!({"value": i18n(), "tone": tone()}), &["value"]),
                    base("meter", json!({"value": {"type": "number"}, "max": {"type": "number"},
                                         "min": {"type": "number"}, "tone": tone()}), &["value", "max"]),
                    base("list", json!({"items": {"type": "array", "maxItems": 24, "items": i18n()},
                                        "total": {"type": "integer", "minimum": 0}}), &["items"])
                ]}}}
            })
        }
        SlotId::StageMusic => json!({
            "type": "object", "additionalProperties": false,
            "properties": {
                "trackId": {"type": "string"},
                "title": i18n(),
                "ref": media_ref(),
                "loop": {"type": "boolean"},
                "volume": {"type": "number", "minimum": 0, "maximum": 1},
                "fadeMs": {"type": "number", "minimum": 0}
            }
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::super::*;
    use serde_json::json;

    #[test]
    fn every_kernel_schema_compiles() {
        for point in PointId::ALL {
            let _ = point.point();
        }
        for slot in SlotId::ALL {
            let _ = slot.value_validator();
        }
        let _ = character_visual_validator();
    }

    #[test]
    fn strict_segment_rejects_unknown_keys() {
        let out = PointId::PromptSegment.point().output.check(&json!([{
            "id": "a", "content": "x", "position": "system", "audience": "all",
            "volatility": "stable", "colour": "red"
        }]));
        assert!(out.is_err());
    }
}
