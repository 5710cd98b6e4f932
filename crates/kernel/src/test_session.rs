//! The `test:` section of a session file: scripted turns (what the player says and, optionally,
//! the story's reply) and expectations per turn, checked by `covel test` against the assembled
//! prompt, the slots, the world snapshot, the cache boundaries, token budgets and provider
//! outcomes. The format is documented in `docs/testing.md`; this module only says what a test
//! session may contain (unknown keys are errors with line and column, like the rest of the file).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// What a session file says about testing it.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TestSpec {
    /// The plugins folder, relative to the session file (default: the folder it sits in).
    pub plugins: Option<String>,
    /// Scripted turns, played in order. None: the session is tested on its next turn
    /// (`nextMessage`) without calling a model.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub turns: Vec<ScriptedTurn>,
    /// Expectations for the next turn when there are no scripted turns.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub expect: Vec<Expectation>,
}

/// One scripted turn.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ScriptedTurn {
    /// What the player says.
    #[serde(default)]
    pub say: String,
    /// Instead of `say`: the values that answer the form the turn before asked for; the
    /// form's narrative filled with them is what the player says.
    pub answer: Option<serde_json::Map<String, Value>>,
    /// The story's reply. Absent: the session's story model answers (scripted, or `replay`
    /// from a recording).
    pub reply: Option<crate::session::ScriptedReply>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub expect: Vec<Expectation>,
}

/// One check on a turn. Written as a one-key map: `- system: { contains: … }`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Expectation {
    /// Text present in / absent from the system prompt (all blocks).
    System(TextCheck),
    /// Text present in / absent from the turn-context message.
    TurnContext(TextCheck),
    /// Text present in / absent from a message (any, or the one at `index`; negative counts
    /// from the end).
    Message(MessageCheck),
    /// Where a segment landed.
    Segment(SegmentCheck),
    /// A slot value at a JSON pointer.
    Slot(SlotCheck),
    /// A world-snapshot value at a JSON pointer.
    World(WorldCheck),
    /// Cache boundaries: how many, and whether they stay stable next turn.
    Cache(CacheCheck),
    /// A token budget (the SDK's `estimateTokens`, as budgets count).
    Tokens(TokenCheck),
    /// The whole prompt's tokens (system prompt and messages, counted with the SDK's
    /// `estimateTokens`, as budgets count) are at most this many: `- tokensAtMost: 1200`.
    TokensAtMost(u64),
    /// A provider's outcome in this turn's calls.
    Provider(ProviderCheck),
    /// A tool call of the turn's loop: that it was called (with an input that matches), how
    /// it ended, or that it was not called.
    Tool(ToolCheck),
    /// A hook call of the turn's loop and what it returned.
    Hook(HookCheck),
}

/// A tool call in the turn's loop.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ToolCheck {
    pub name: String,
    /// Values the input must hold, by JSON pointer: `{ /sceneId: tower }`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub input: BTreeMap<String, Value>,
    /// `ok`, `rejected`, `invalid-input`, `failed` or `not-found` (default: any).
    pub outcome: Option<String>,
    /// `false`: the tool must not be called this turn.
    pub called: Option<bool>,
}

/// A hook call in the turn's loop.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct HookCheck {
    pub event: String,
    /// The hook's plugin (default: any).
    pub plugin: Option<String>,
    /// `continue`, `replaced`, `correction`, `rejected`, `failed`, … (default: any call).
    pub outcome: Option<String>,
}

/// Text present or absent.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TextCheck {
    pub contains: Option<String>,
    pub not_contains: Option<String>,
    /// A regular expression (Rust `regex` syntax) the text must match somewhere.
    pub matches: Option<String>,
}

/// Text in a message.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct MessageCheck {
    pub index: Option<i64>,
    /// Only messages with this role (`system`, `user`, `assistant`).
    pub role: Option<String>,
    pub contains: Option<String>,
    pub not_contains: Option<String>,
    /// A regular expression one of the chosen messages must match.
    pub matches: Option<String>,
}

/// A segment's placement.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SegmentCheck {
    /// `plugin/segment`.
    pub id: String,
    /// Where it must land: `stable-segments`, `turn-tail`, `turn-context`, `pre-history`,
    /// `post-history`, `depth` or `excluded`.
    pub block: Option<String>,
    /// Its 0-based position among the segments of that block (or message group).
    pub position: Option<usize>,
    /// Another segment (`plugin/segment`) it must come before, in prompt order.
    pub before: Option<String>,
    /// Another segment it must come after, in prompt order.
    pub after: Option<String>,
    /// The segment must not be in the prompt at all.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub absent: bool,
}

/// A slot value.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SlotCheck {
    /// The slot id, e.g. `stage.backdrop@1`.
    pub slot: String,
    /// The value's key (`character.visual@1` has one value per character id).
    pub key: Option<String>,
    /// JSON pointer into the value ("" is the whole value).
    #[serde(default)]
    pub pointer: String,
    pub equals: Option<Value>,
    /// A JSON Schema the value at the pointer must be valid against.
    pub schema: Option<Value>,
    /// Nothing (or null) at the pointer.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub absent: bool,
}

/// A world-snapshot value.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct WorldCheck {
    #[serde(default)]
    pub pointer: String,
    pub equals: Option<Value>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub absent: bool,
}

/// Cache boundaries.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CacheCheck {
    /// Number of system-prompt cache boundaries.
    pub boundaries: Option<usize>,
    /// Every boundary's prefix is byte-identical next turn (true), or at least one changes
    /// (false).
    pub stable_next_turn: Option<bool>,
    /// These boundaries (0-based) stay stable next turn.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stable: Vec<usize>,
}

/// A token budget, counted with the SDK's `estimateTokens`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TokenCheck {
    /// The tokens of this plugin's included segments.
    pub plugin: Option<String>,
    /// A part of the prompt: `system`, `turn-context`, `messages`, `total`, or a system block
    /// kind (`preamble`, `body`, `stable-segments`, `turn-tail`).
    pub part: Option<String>,
    pub max: Option<u64>,
    pub min: Option<u64>,
}

/// A provider's outcome.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ProviderCheck {
    pub plugin: String,
    /// The provider id (default: any provider of the plugin).
    pub provider: Option<String>,
    /// The point, e.g. `prompt.segment@1` (default: any).
    pub point: Option<String>,
    /// `success`, `timeout`, `error`, `invalid-output`, `out-of-memory`, `unavailable`.
    pub outcome: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expectations_are_one_key_maps_and_unknown_keys_are_errors() {
        let yaml = "turns:\n  - say: Hello\n    reply: Hi.\n    expect:\n      - system: { contains: Vell }\n      - segment: { id: a/b, block: stable-segments, before: c/d }\n      - slot: { slot: stage.backdrop@1, pointer: /name, equals: Harbour }\n      - cache: { boundaries: 3, stableNextTurn: true }\n";
        let spec: TestSpec = serde_saphyr::from_str(yaml).expect("parses");
        assert_eq!(spec.turns[0].expect.len(), 4);
        assert!(
            matches!(&spec.turns[0].expect[1], Expectation::Segment(s) if s.before.as_deref() == Some("c/d"))
        );
        assert!(
            serde_saphyr::from_str::<TestSpec>(
                "turns:\n  - say: x\n    expect:\n      - system: { contain: x }\n"
            )
            .is_err()
        );
        assert!(serde_saphyr::from_str::<TestSpec>("expect:\n  - nonsense: {}\n").is_err());
    }
}
