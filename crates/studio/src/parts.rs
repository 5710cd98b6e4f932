//! Who wrote which text of an assembled prompt: every system block and every message split into
//! parts (the framework preamble, the runtime's body, the world lore, each segment with its
//! plugin, a history message, the player's input). Golden snapshots diff part by part, and the
//! cache forecast attributes tokens and cost to plugins with it.

use covel_kernel::prompt::{Block, BlockKind, Message, Origin, SegmentRow};
use serde::{Deserialize, Serialize};

/// One attributed piece of prompt text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Part {
    /// What wrote it: `framework`, `runtime body`, `world lore`, `segment PLUGIN/ID`,
    /// `history ID`, `summary ID`, `player input`.
    pub from: String,
    pub text: String,
}

impl Part {
    fn new(from: impl Into<String>, text: impl Into<String>) -> Part {
        Part {
            from: from.into(),
            text: text.into(),
        }
    }

    /// The segment (`plugin/id`) this part is, if it is one.
    pub fn segment(&self) -> Option<&str> {
        self.from.strip_prefix("segment ")
    }

    /// The plugin responsible for this part, if a plugin is.
    pub fn plugin(&self) -> Option<&str> {
        self.segment().and_then(|s| s.split('/').next())
    }

    /// Who pays for it in a ledger: the plugin, else the kind of text (`framework`, `history`…).
    pub fn owner(&self) -> String {
        match self.plugin() {
            Some(plugin) => plugin.to_string(),
            None => {
                let kind = self.from.split(' ').next().unwrap_or_default();
                match kind {
                    "history" | "summary" => "(history)".into(),
                    "player" => "(player input)".into(),
                    "runtime" => "(runtime body)".into(),
                    "world" => "(world lore)".into(),
                    "tools" => "(tools)".into(),
                    _ => "(framework)".into(),
                }
            }
        }
    }
}

fn segment_text(rows: &[SegmentRow], key: &str) -> String {
    rows.iter()
        .find(|r| r.included && r.has_key(key))
        .map(|r| r.content.to_string())
        .unwrap_or_default()
}

fn segments(keys: &[String], rows: &[SegmentRow]) -> Vec<Part> {
    keys.iter()
        .map(|key| Part::new(format!("segment {key}"), segment_text(rows, key)))
        .collect()
}

/// The parts of one system-prompt block.
pub fn block_parts(block: &Block, rows: &[SegmentRow]) -> Vec<Part> {
    match block.kind {
        BlockKind::Preamble => vec![Part::new("framework", block.text.clone())],
        BlockKind::Body => vec![Part::new("runtime body", block.text.clone())],
        BlockKind::StableSegments => {
            let mut parts = Vec::new();
            if block.text.starts_with("<world-lore>")
                && let Some(end) = block.text.find("</world-lore>")
            {
                parts.push(Part::new(
                    "world lore",
                    &block.text[..end + "</world-lore>".len()],
                ));
            }
            parts.extend(segments(&block.segments, rows));
            parts
        }
        BlockKind::TurnTail => segments(&block.segments, rows),
    }
}

/// The parts of one message.
pub fn message_parts(message: &Message, rows: &[SegmentRow]) -> Vec<Part> {
    match &message.origin {
        Origin::History { id } => vec![Part::new(format!("history {id}"), message.content.clone())],
        Origin::Summary { id } => vec![Part::new(format!("summary {id}"), message.content.clone())],
        Origin::Segment { plugin, segment } => vec![Part::new(
            format!("segment {plugin}/{segment}"),
            message.content.clone(),
        )],
        Origin::TurnContext { segments: keys } => segments(keys, rows),
        Origin::PlayerInput => vec![Part::new("player input", message.content.clone())],
    }
}
