//! Test sessions: the YAML file an author controls to say what session their providers run in
//! (locale, which plugins are on, settings, the world, plugin data, history, models, recorded
//! HTTP answers and the next player message). Documented with a commented example in
//! `docs/session-format.md`; `plugins-sample/demo.session.yaml` is the demo.

use crate::context::{DataRow, HttpPolicy};
use crate::diagnostic::{Code, Diagnostic};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::Path;

/// A parsed test session.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Session {
    pub id: String,
    #[serde(default = "default_locale")]
    pub locale: String,
    #[serde(default)]
    pub plugins: PluginSelection,
    /// Per-plugin settings, overriding each plugin's declared defaults.
    #[serde(default)]
    pub settings: BTreeMap<String, Map<String, Value>>,
    #[serde(default)]
    pub world: World,
    #[serde(default)]
    pub plugin_data: Vec<DataRow>,
    #[serde(default)]
    pub history: History,
    #[serde(default)]
    pub models: Models,
    #[serde(default)]
    pub http: HttpPolicy,
    /// The story runtime's prompt body used when previewing "as the story runtime".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub story_prompt: Option<String>,
    /// The next player message (what a preview assembles for).
    #[serde(default)]
    pub next_message: String,
    /// The player message of the turn after (for cache-stability checks); defaults to a
    /// generic continuation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub following_message: Option<String>,
    /// Scripted turns and expectations for `covel test` (`docs/testing.md`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        description = "Scripted turns and expectations for `covel test` (docs/testing.md)."
    )]
    pub test: Option<crate::test_session::TestSpec>,
    /// Written by played saves (`covel play --save`, "Save played session"), one per played
    /// turn in order: what `covel play --from TURN` needs to start after an earlier turn that
    /// the history alone does not say.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checkpoints: Vec<Checkpoint>,
}

/// What a played save keeps of one played turn (see [`Session::checkpoints`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Checkpoint {
    pub turn_id: String,
    /// The plugin data before the turn, when the turn's tools changed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plugin_data_before: Option<Vec<DataRow>>,
    /// A compaction after the turn rewrote the history: no earlier turn can be started from.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub compacted_after: bool,
}

fn default_locale() -> String {
    "en".into()
}

/// Which plugins the session runs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PluginSelection {
    /// Requested plugins; absent means every plugin of the folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested: Option<Vec<String>>,
    #[serde(default)]
    pub excluded: Vec<String>,
    /// Plugins treated as community code the player has not approved. The author's own
    /// folder is authorized by default.
    #[serde(default)]
    pub unauthorized: Vec<String>,
}

/// The World Model the session starts from.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct World {
    #[serde(default)]
    pub world_record: Option<Value>,
    #[serde(default)]
    pub character_schema: Option<Value>,
    #[serde(default)]
    pub characters: Vec<Value>,
    #[serde(default)]
    pub seats: Vec<Value>,
    /// Author dimension declarations `{id: {name, description?, schema, initialValue, updateRule?}}`.
    #[serde(default)]
    pub dimensions: Map<String, Value>,
}

/// History messages and existing summaries, oldest first. Fields the studio can derive may be
/// left out (see `docs/session-format.md`); [`parse_session`] fills them in.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct History {
    #[serde(default)]
    #[schemars(schema_with = "message_list_schema")]
    pub messages: Vec<Value>,
    #[serde(default)]
    #[schemars(schema_with = "summary_list_schema")]
    pub summaries: Vec<Value>,
}

/// History messages as authors may write them: `role` and `content`, the rest derived.
fn message_list_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "array",
        "description": "prompt.history-transform@1 input, oldest first. id, sessionId, turnId, sourceType, order and createdAt are derived when left out (docs/session-format.md).",
        "items": {
            "type": "object",
            "required": ["role", "content"],
            "properties": {
                "id": {"type": "string", "description": "Default: m1, m2, … by position."},
                "sessionId": {"type": "string", "description": "Default: the session's id."},
                "turnId": {"type": "string", "description": "Default: a user message starts the next turn (t1, t2, …); others join the turn before."},
                "sourceType": {"type": "string", "description": "Default: from role (user → player, assistant → runtime, system → system)."},
                "sourcePluginId": {"type": "string"},
                "sourceRuntimeId": {"type": "string"},
                "role": {"type": "string", "enum": ["user", "assistant", "system"]},
                "content": {"type": "string"},
                "name": {"type": "string"},
                "order": {"type": "number", "description": "Default: the position in the file, from 1."},
                "createdAt": {"type": "string", "description": "Default: 2026-01-01T00:00:00Z plus one second per position."},
                "compactedAtTurnId": {"type": "string"}
            }
        }
    })
}

/// Existing history.compact@2 summaries: content and turn range, the rest derived.
fn summary_list_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "array",
        "description": "Existing history.compact@2 summaries; id, sessionId, focusSections and createdAt are derived when left out.",
        "items": {
            "type": "object",
            "additionalProperties": false,
            "required": ["content", "turnRangeStart", "turnRangeEnd"],
            "properties": {
                "id": {"type": "string", "description": "Default: s1, s2, … by position."},
                "sessionId": {"type": "string", "description": "Default: the session's id."},
                "turnRangeStart": {"type": "string"},
                "turnRangeEnd": {"type": "string"},
                "content": {"type": "string"},
                "focusSections": {"type": "array", "items": {"type": "string"}, "description": "Default: []."},
                "createdAt": {"type": "string"}
            }
        }
    })
}

/// The session format as a JSON Schema (draft-07, what editors' YAML language servers read),
/// generated from these types: `docs/session.schema.json`.
pub fn json_schema() -> Value {
    let generator = schemars::generate::SchemaSettings::draft07().into_generator();
    let mut schema =
        serde_json::to_value(generator.into_root_schema_for::<Session>()).unwrap_or(Value::Null);
    if let Some(map) = schema.as_object_mut() {
        map.insert(
            "title".into(),
            Value::String("Covel Studio test session".into()),
        );
        map.insert(
            "description".into(),
            Value::String(
                "A test session for Covel plugin authors (docs/session-format.md).".into(),
            ),
        );
    }
    schema
}

/// What a scripted story model answers in one turn: the narration, or the model's calls.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum ScriptedReply {
    /// The narration (it may emit events as `<event topic="…">{…}</event>` tags).
    Text(String),
    /// A turn in which the model calls tools.
    Calls(ScriptedCalls),
}

/// A scripted turn with tool calls: `tools` (one round) then `reply`; or `calls`, every model
/// call of the turn in order (past the end, the last one is answered again).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScriptedCalls {
    /// The tools the model calls first, all in one round.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ScriptedToolCall>,
    /// The narration after the tools' results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply: Option<String>,
    /// Instead of `tools` and `reply`: each model call of the turn, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calls: Vec<ScriptedCall>,
}

/// One scripted model call: its text, its tool calls, or both.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScriptedCall {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ScriptedToolCall>,
}

/// A tool call the scripted model makes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScriptedToolCall {
    /// The tool's name, as its plugin registered it (or `emit-event`).
    pub name: String,
    /// The tool's input (default: `{}`).
    #[serde(default = "empty_input")]
    pub input: Value,
}

fn empty_input() -> Value {
    Value::Object(Map::new())
}

impl ScriptedReply {
    /// The model's calls in the turn, in order.
    pub fn calls(&self) -> Vec<ScriptedCall> {
        match self {
            ScriptedReply::Text(text) => vec![ScriptedCall {
                text: Some(text.clone()),
                tools: Vec::new(),
            }],
            ScriptedReply::Calls(c) if !c.calls.is_empty() => c.calls.clone(),
            ScriptedReply::Calls(c) => {
                let reply = ScriptedCall {
                    text: c.reply.clone(),
                    tools: Vec::new(),
                };
                if c.tools.is_empty() {
                    vec![reply]
                } else {
                    let round = ScriptedCall {
                        text: None,
                        tools: c.tools.clone(),
                    };
                    vec![round, reply]
                }
            }
        }
    }

    /// The turn's narration: the text of its last call.
    pub fn narration(&self) -> String {
        self.calls()
            .last()
            .and_then(|c| c.text.clone())
            .unwrap_or_default()
    }
}

impl From<&str> for ScriptedReply {
    fn from(text: &str) -> Self {
        ScriptedReply::Text(text.to_string())
    }
}

/// The story and fast models.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Models {
    #[serde(default = "Model::story_default")]
    pub story: Model,
    #[serde(default = "Model::fast_default")]
    pub fast: Model,
}

impl Default for Models {
    fn default() -> Self {
        Models {
            story: Model::story_default(),
            fast: Model::fast_default(),
        }
    }
}

/// How long Anthropic keeps a cache entry after its last use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub enum CacheTtl {
    #[serde(rename = "5m")]
    FiveMinutes,
    #[serde(rename = "1h")]
    OneHour,
}

impl CacheTtl {
    /// `5m` or `1h`, as the API and the model facts name it.
    pub fn name(self) -> &'static str {
        match self {
            CacheTtl::FiveMinutes => "5m",
            CacheTtl::OneHour => "1h",
        }
    }
}

/// One model slot: its window and how the studio reaches it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Model {
    /// `scripted` (embedded, deterministic, default), `openai` (OpenAI-compatible), `anthropic`,
    /// or `replay` (answers from `recording`).
    #[serde(default = "Model::scripted")]
    pub backend: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// Environment variable holding the API key (keys never live in the session file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    pub context_window: u32,
    #[serde(default = "Model::default_reserve")]
    pub reserved_for_response: u32,
    /// Minimum cacheable prefix in tokens for this model (prompt-cache lint).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_cacheable_tokens: Option<u32>,
    /// Anthropic: the TTL of the request's `cache_control` breakpoints, `5m` (the provider's
    /// default, sent without a `ttl`) or `1h` (sent as `"ttl": "1h"`, written at the 1-hour
    /// price).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_ttl: Option<CacheTtl>,
    /// OpenAI: the `prompt_cache_key` every request carries, so requests sharing a prefix are
    /// routed to the same cache (without it, routing goes by the prompt's first tokens only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_cache_key: Option<String>,
    /// Replies of the scripted backend, one per turn, used in turn order (cycled): a text, or
    /// the tools the model calls and its reply (docs/session-format.md).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub script: Vec<ScriptedReply>,
    /// Fault injection for the scripted backend: a gateway request whose prompt contains one of
    /// these texts fails, to see how providers handle a failing model.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scripted_failures: Vec<String>,
    /// The recording the `replay` backend answers from (`covel play --record`), relative to
    /// the session file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recording: Option<String>,
}

impl Model {
    fn scripted() -> String {
        "scripted".into()
    }

    fn default_reserve() -> u32 {
        4000
    }

    fn story_default() -> Model {
        Model {
            backend: Self::scripted(),
            model: None,
            base_url: None,
            api_key_env: None,
            context_window: 32_768,
            reserved_for_response: 4000,
            min_cacheable_tokens: None,
            cache_ttl: None,
            prompt_cache_key: None,
            script: Vec::new(),
            scripted_failures: Vec::new(),
            recording: None,
        }
    }

    fn fast_default() -> Model {
        Model {
            context_window: 16_384,
            reserved_for_response: 2000,
            ..Self::story_default()
        }
    }
}

/// Parses a session file; every error carries the file, line and column.
pub fn parse_session(text: &str, file: &Path) -> Result<Session, Diagnostic> {
    let mut session: Session =
        crate::yaml::from_str(text).map_err(|e| e.diagnostic(Code::SessionSchema, file, 0))?;
    use crate::yaml::{Step, position};
    if session.id.trim().is_empty() {
        return Err(
            Diagnostic::new(Code::SessionSchema, "`id` must not be empty")
                .file(file)
                .at_opt(position(text, &[Step::Key("id")])),
        );
    }
    for (index, row) in session.plugin_data.iter().enumerate() {
        let empty = [("pluginId", &row.plugin_id), ("namespace", &row.namespace)]
            .into_iter()
            .find(|(_, value)| value.is_empty());
        if let Some((field, _)) = empty {
            let row_at = [Step::Key("pluginData"), Step::Index(index)];
            let at = position(text, &[row_at[0], row_at[1], Step::Key(field)])
                .or_else(|| position(text, &row_at));
            return Err(Diagnostic::new(
                Code::SessionSchema,
                format!("`pluginData[{index}]`.{field}: must not be empty"),
            )
            .file(file)
            .at_opt(at));
        }
    }
    let id = session.id.clone();
    crate::session_history::derive(
        &mut session.history.messages,
        &mut session.history.summaries,
        &id,
        text,
        file,
    )?;
    // Rows keep their file order as creation order; missing timestamps are filled in that
    // order so `list()` and `createdAt` agree.
    for (index, row) in session.plugin_data.iter_mut().enumerate() {
        if row.created_at.is_none() {
            row.created_at = Some(format!(
                "2026-01-01T00:00:{:02}.{:03}Z",
                (index / 1000) % 60,
                index % 1000
            ));
        }
        if row.updated_at.is_none() {
            row.updated_at = row.created_at.clone();
        }
    }
    Ok(session)
}
