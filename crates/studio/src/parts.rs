//! Who wrote which text of an assembled prompt: every system block and every message split into
//! parts (the framework preamble, the runtime's body, the world lore, each segment with its
//! plugin, a history message, the player's input). Golden snapshots diff part by part, and the
//! cache forecast attributes tokens and cost to plugins with it.

use covel_kernel::prompt::{Block, BlockKind, Message, Origin, SegmentRow, Source};
use serde::{Deserialize, Serialize};

/// One attributed piece of prompt text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Part {
    /// Who wrote it, as the author reads it: `framework`, `runtime body`, `world lore`,
    /// `segment PLUGIN/ID`, `history ID`, `summary ID`, `player input`.
    pub from: Source,
    pub text: String,
}

impl Part {
    fn new(from: Source, text: impl Into<String>) -> Part {
        Part {
            from,
            text: text.into(),
        }
    }

    /// The segment (`plugin/id`) this part is, if it is one.
    pub fn segment(&self) -> Option<String> {
        self.from.segment_key()
    }

    /// The plugin responsible for this part, if a plugin is.
    pub fn plugin(&self) -> Option<&str> {
        self.from.plugin()
    }

    /// Who pays for it in a ledger: the plugin, else the kind of text (`framework`, `history`…).
    pub fn owner(&self) -> String {
        self.from.owner()
    }
}

/// The segment table's included rows by key (`plugin/id`), looked up for every segment of every
/// block: searching the table for each made attributing a prompt quadratic in the folder's size.
pub struct Rows<'a>(foldhash::HashMap<String, &'a SegmentRow>);

impl<'a> Rows<'a> {
    pub fn of(rows: &'a [SegmentRow]) -> Rows<'a> {
        let mut by_key = foldhash::HashMap::default();
        for row in rows.iter().filter(|r| r.included) {
            // The first included row of a key, as a search in table order finds it.
            by_key.entry(row.key()).or_insert(row);
        }
        Rows(by_key)
    }

    fn get(&self, key: &str) -> Option<&'a SegmentRow> {
        self.0.get(key).copied()
    }
}

/// The parts a block's or the turn context's segments (`plugin/id` keys) are: each segment's
/// text from its row in the segment table.
fn segments(keys: &[String], rows: &Rows<'_>) -> Vec<Part> {
    keys.iter()
        .map(|key| match rows.get(key) {
            Some(row) => Part::new(
                Source::Segment {
                    plugin: row.plugin.to_string(),
                    segment: row.id.to_string(),
                },
                row.content.to_string(),
            ),
            // A key the table does not hold (the kernel never writes one): named, without text.
            None => {
                let (plugin, segment) = key.split_once('/').unwrap_or((key, ""));
                let from = Source::Segment {
                    plugin: plugin.into(),
                    segment: segment.into(),
                };
                Part::new(from, String::new())
            }
        })
        .collect()
}

/// The parts of one system-prompt block.
pub fn block_parts(block: &Block, rows: &Rows<'_>) -> Vec<Part> {
    match block.kind {
        BlockKind::Preamble => vec![Part::new(Source::Framework, block.text.clone())],
        BlockKind::Body => vec![Part::new(Source::RuntimeBody, block.text.clone())],
        BlockKind::StableSegments => {
            let mut parts = Vec::new();
            if let Some(lore) = block.world_lore_end.and_then(|end| block.text.get(..end)) {
                parts.push(Part::new(Source::WorldLore, lore));
            }
            parts.extend(segments(&block.segments, rows));
            parts
        }
        BlockKind::TurnTail => segments(&block.segments, rows),
    }
}

/// The parts of one message.
pub fn message_parts(message: &Message, rows: &Rows<'_>) -> Vec<Part> {
    match (&message.origin, message.origin.source()) {
        (Origin::TurnContext { segments: keys }, _) => segments(keys, rows),
        (_, Some(source)) => vec![Part::new(source, message.content.clone())],
        (_, None) => Vec::new(),
    }
}
