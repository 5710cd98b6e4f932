//! Who wrote a piece of an assembled request: the framework, the runtime's body, the world lore,
//! a plugin's segment, a history message or summary, the player, or what the request adds around
//! the text (tool definitions, a provider's framing). Golden snapshots diff the pieces, the
//! forecast bills them, and the panels name them; each reads this one type, written as the
//! author reads it (`segment lore-book/remember`, `history m3`, `world lore`).

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

/// Who wrote a piece of prompt text.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Source {
    /// The framework's preamble and the tags it wraps around texts.
    Framework,
    /// The runtime's prompt body (the story prompt, or a plugin's PLUGIN.md body).
    RuntimeBody,
    /// The world lore in the stable block, with its `<world-lore>` tags.
    WorldLore,
    /// A plugin's `prompt.segment@1` segment.
    Segment {
        plugin: String,
        segment: String,
    },
    History {
        id: String,
    },
    Summary {
        id: String,
    },
    PlayerInput,
    /// Tool definitions sent with the request.
    Tools,
    /// What a provider adds around the texts (message markers, the request's own framing).
    Framing,
}

impl Source {
    /// The segment, `plugin/id`, if this piece is one.
    pub fn segment_key(&self) -> Option<String> {
        match self {
            Source::Segment { plugin, segment } => Some(super::segment_key(plugin, segment)),
            _ => None,
        }
    }

    /// Whether this piece is the segment `key` (`plugin/id`), without building the key.
    pub fn is_segment(&self, key: &str) -> bool {
        matches!(self, Source::Segment { plugin, segment } if super::assemble::is_segment_key(key, plugin, segment))
    }

    /// The plugin that wrote it, if a plugin did.
    pub fn plugin(&self) -> Option<&str> {
        match self {
            Source::Segment { plugin, .. } => Some(plugin),
            _ => None,
        }
    }

    /// Who pays for it in a ledger: the plugin, else the kind of text in parentheses.
    pub fn owner(&self) -> String {
        match self {
            Source::Segment { plugin, .. } => plugin.clone(),
            Source::History { .. } | Source::Summary { .. } => "(history)".into(),
            Source::PlayerInput => "(player input)".into(),
            Source::RuntimeBody => "(runtime body)".into(),
            Source::WorldLore => "(world lore)".into(),
            Source::Tools => "(tools)".into(),
            Source::Framework | Source::Framing => "(framework)".into(),
        }
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Framework => f.write_str("framework"),
            Source::RuntimeBody => f.write_str("runtime body"),
            Source::WorldLore => f.write_str("world lore"),
            Source::Segment { plugin, segment } => write!(f, "segment {plugin}/{segment}"),
            Source::History { id } => write!(f, "history {id}"),
            Source::Summary { id } => write!(f, "summary {id}"),
            Source::PlayerInput => f.write_str("player input"),
            Source::Tools => f.write_str("tools"),
            Source::Framing => f.write_str("framing"),
        }
    }
}

/// A name [`Source`]'s `Display` does not write.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{0}` names no source of prompt text (framework, runtime body, world lore, segment PLUGIN/ID, history ID, summary ID, player input, tools, framing)"
)]
pub struct UnknownSource(pub String);

impl FromStr for Source {
    type Err = UnknownSource;

    fn from_str(name: &str) -> Result<Source, UnknownSource> {
        let unknown = || UnknownSource(name.to_string());
        Ok(match name {
            "framework" => Source::Framework,
            "runtime body" => Source::RuntimeBody,
            "world lore" => Source::WorldLore,
            "player input" => Source::PlayerInput,
            "tools" => Source::Tools,
            "framing" => Source::Framing,
            _ => match name.split_once(' ').ok_or_else(unknown)? {
                ("segment", key) => {
                    let (plugin, segment) = key.split_once('/').ok_or_else(unknown)?;
                    Source::Segment {
                        plugin: plugin.into(),
                        segment: segment.into(),
                    }
                }
                ("history", id) => Source::History { id: id.into() },
                ("summary", id) => Source::Summary { id: id.into() },
                _ => return Err(unknown()),
            },
        })
    }
}

impl Serialize for Source {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Source {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Source, D::Error> {
        let name = String::deserialize(deserializer)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_source_reads_back_as_it_is_written() {
        let all = [
            Source::Framework,
            Source::RuntimeBody,
            Source::WorldLore,
            Source::Segment {
                plugin: "lore-book".into(),
                segment: "remember".into(),
            },
            Source::History { id: "m3".into() },
            Source::Summary { id: "s1".into() },
            Source::PlayerInput,
            Source::Tools,
            Source::Framing,
        ];
        for source in all {
            assert_eq!(source.to_string().parse::<Source>(), Ok(source.clone()));
        }
    }

    #[test]
    fn a_segment_is_its_key_and_nothing_else_is() {
        let segment = Source::Segment {
            plugin: "lore-book".into(),
            segment: "remember".into(),
        };
        assert!(segment.is_segment("lore-book/remember"));
        assert_eq!(segment.segment_key().as_deref(), Some("lore-book/remember"));
        for key in [
            "lore-book/remembe",
            "lore-boo/remember",
            "lore-book-remember",
            "",
        ] {
            assert!(!segment.is_segment(key), "{key}");
        }
        assert!(
            !Source::History {
                id: "lore-book/remember".into()
            }
            .is_segment("lore-book/remember")
        );
    }

    #[test]
    fn a_name_that_is_no_source_is_refused_with_the_names_that_are() {
        for name in ["segment lore-book", "message m1", "", "worldlore"] {
            let error = name.parse::<Source>().expect_err(name);
            assert!(error.to_string().contains("segment PLUGIN/ID"), "{error}");
        }
    }
}
