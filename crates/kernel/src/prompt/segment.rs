//! Prompt segments as the kernel handles them: parsed from `prompt.segment@1` output, filtered
//! by audience for the runtime being assembled, and sorted by volatility, order, provider
//! plugin id and id — with the key that placed each one, and whether only the plugin id broke
//! a tie (renaming the plugin would move it).

use crate::manifest::{NamedPosition, Position};
use crate::runner::utf16_cmp;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::cmp::Ordering;

/// How often a segment's content changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Volatility {
    Stable,
    Session,
    Turn,
}

/// Who a segment is for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Audience {
    Named(NamedAudience),
    Contract { contract: String },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NamedAudience {
    All,
    Story,
    #[serde(rename = "self")]
    Own,
}

/// One validated segment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Segment {
    pub id: String,
    pub content: String,
    pub position: Position,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    pub audience: Audience,
    pub volatility: Volatility,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order: Option<i64>,
    #[serde(default)]
    pub provider_plugin_id: String,
}

impl Segment {
    /// Parses the (already schema-validated) output of a `prompt.segment@1` run.
    pub fn parse_all(value: &Value) -> Vec<Segment> {
        value
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| serde_json::from_value(v.clone()).ok())
            .collect()
    }

    pub fn order(&self) -> i64 {
        self.order.unwrap_or(0)
    }

    /// The role a segment's message takes (system when absent).
    pub fn role(&self) -> &str {
        self.role.as_deref().unwrap_or("system")
    }

    fn is_system_role(&self) -> bool {
        self.role() == "system"
    }

    /// Where the segment lands, by the seed page's volatility table.
    pub fn placement(&self) -> Placement {
        match (&self.position, self.volatility) {
            (Position::Named(NamedPosition::System), Volatility::Turn) => Placement::TurnContext,
            (Position::Named(NamedPosition::System), _) => Placement::SystemStable,
            (Position::Named(NamedPosition::PreHistory), Volatility::Turn)
                if self.is_system_role() =>
            {
                Placement::SystemTurnTail
            }
            (Position::Named(NamedPosition::PreHistory), _) if self.is_system_role() => {
                Placement::SystemStable
            }
            (Position::Named(NamedPosition::PreHistory), _) => Placement::PreHistoryMessage,
            (Position::Named(NamedPosition::PostHistory), _) => Placement::PostHistoryMessage,
            (Position::Depth { depth }, _) => Placement::Depth(*depth),
        }
    }
}

/// Where a segment lands in the assembled request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "kind", content = "depth")]
pub enum Placement {
    /// System prompt, cacheable part (system + stable/session; system-role pre-history).
    SystemStable,
    /// End of the system prompt, after the last cache boundary (system-role pre-history, turn).
    SystemTurnTail,
    /// The per-turn system message after the history (system + turn).
    TurnContext,
    /// Its own message before the history (non-system pre-history).
    PreHistoryMessage,
    /// Its own message after everything (post-history).
    PostHistoryMessage,
    /// Its own message `n` conversation messages back from the newest.
    Depth(u32),
}

impl Placement {
    /// Volatility only decides placement for system and system-role pre-history segments.
    pub fn volatility_applies(self) -> bool {
        matches!(
            self,
            Placement::SystemStable | Placement::SystemTurnTail | Placement::TurnContext
        )
    }
}

/// The runtime a prompt is assembled for (decides the audience filter).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeView {
    /// The runtime's plugin, for `self` segments (none for the session's story runtime).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plugin_id: Option<String>,
    /// Whether the runtime writes the story (for `story` segments).
    pub story_output: bool,
    /// The runtime's output contract, for `{contract}` segments.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_contract: Option<String>,
}

impl RuntimeView {
    /// The session's story runtime (the narrator).
    pub fn story() -> RuntimeView {
        RuntimeView {
            plugin_id: None,
            story_output: true,
            output_contract: Some("narrative-engine@1".into()),
        }
    }

    /// Whether a segment is for this runtime; `Err` explains why not.
    pub fn admits(&self, segment: &Segment) -> Result<(), String> {
        match &segment.audience {
            Audience::Named(NamedAudience::All) => Ok(()),
            Audience::Named(NamedAudience::Story) if self.story_output => Ok(()),
            Audience::Named(NamedAudience::Story) => {
                Err("audience `story`: this runtime does not write the story".into())
            }
            Audience::Named(NamedAudience::Own)
                if self.plugin_id.as_deref() == Some(segment.provider_plugin_id.as_str()) =>
            {
                Ok(())
            }
            Audience::Named(NamedAudience::Own) => Err(format!(
                "audience `self`: only {}'s own runtimes see it",
                segment.provider_plugin_id
            )),
            Audience::Contract { contract }
                if self.output_contract.as_deref() == Some(contract.as_str()) =>
            {
                Ok(())
            }
            Audience::Contract { contract } => Err(format!(
                "audience `{{contract: {contract}}}`: this runtime's output contract differs"
            )),
        }
    }
}

/// The sort key that placed a segment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SegmentKey {
    pub volatility: Volatility,
    pub order: i64,
    pub provider_plugin_id: String,
    pub id: String,
}

impl SegmentKey {
    pub fn of(segment: &Segment) -> SegmentKey {
        SegmentKey {
            volatility: segment.volatility,
            order: segment.order(),
            provider_plugin_id: segment.provider_plugin_id.clone(),
            id: segment.id.clone(),
        }
    }

    pub fn compare(&self, other: &SegmentKey) -> Ordering {
        self.volatility
            .cmp(&other.volatility)
            .then(self.order.cmp(&other.order))
            .then_with(|| utf16_cmp(&self.provider_plugin_id, &other.provider_plugin_id))
            .then_with(|| utf16_cmp(&self.id, &other.id))
    }
}

/// Sorts segments into the kernel's order (stable, session, turn; order; plugin id; id).
pub fn sort_segments(segments: &mut [Segment]) {
    segments.sort_by(|a, b| SegmentKey::of(a).compare(&SegmentKey::of(b)));
}

/// Whether a segment shares its volatility and order with a segment of another plugin, so only
/// plugin ids decide which comes first.
pub fn tie_broken_by_plugin_id(segment: &Segment, all: &[Segment]) -> bool {
    all.iter().any(|other| {
        other.provider_plugin_id != segment.provider_plugin_id
            && other.volatility == segment.volatility
            && other.order() == segment.order()
            && other.placement() == segment.placement()
    })
}
