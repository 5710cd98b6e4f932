//! Prompt segments as the kernel handles them: parsed from `prompt.segment@1` output, filtered
//! by audience for the runtime being assembled, and sorted by volatility, order, provider
//! plugin id and id — with the key that placed each one, and whether only the plugin id broke
//! a tie (renaming the plugin would move it).

use crate::manifest::{NamedPosition, Position};
use crate::runner::utf16_cmp;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::borrow::Cow;
use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::sync::Arc;

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
    pub id: Arc<str>,
    pub content: Arc<str>,
    pub position: Position,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    pub audience: Audience,
    pub volatility: Volatility,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order: Option<i64>,
    #[serde(default = "no_plugin")]
    pub provider_plugin_id: Arc<str>,
}

/// A segment read without a plugin id has an empty one until the kernel stamps it.
fn no_plugin() -> Arc<str> {
    Arc::from("")
}

/// One provider's output in a shared `prompt.segment@1` run: its segment array as checked (not
/// copied from the memo that answered it), and the plugin id the kernel stamps on each segment.
#[derive(Debug, Clone)]
pub struct ProvidedSegments {
    pub plugin_id: Arc<str>,
    pub output: Arc<Value>,
}

impl Segment {
    /// Parses the (already schema-validated) outputs of a `prompt.segment@1` run, each
    /// provider's segment array as the runner hands it ([`crate::runner::RunResult::parts`]):
    /// read where they are, each segment's strings copied once into it (a memo answer's value
    /// stays shared with the memo), and stamped with its provider's plugin id as the runner
    /// stamps a concatenated run's segments (`runner::attribution`), whatever the plugin wrote.
    pub fn parse_parts(parts: &[ProvidedSegments]) -> Vec<Segment> {
        // Sized up front: collecting a flattened iterator grows the vector a dozen times over a
        // thousand segments, copying them each time.
        let mut segments = Vec::with_capacity(parts.iter().map(Segment::count_in).sum());
        for part in parts {
            segments.extend(Segment::read_part(part));
        }
        segments
    }

    /// How many items one provider's output holds (an upper bound on its segments).
    pub(super) fn count_in(part: &ProvidedSegments) -> usize {
        part.output.as_array().map_or(0, Vec::len)
    }

    /// One provider's segments, read as [`Segment::parse_parts`] reads each part.
    pub(super) fn read_part(part: &ProvidedSegments) -> impl Iterator<Item = Segment> + '_ {
        part.output
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
            .iter()
            .filter_map(|item| Segment::read(item, Some(&part.plugin_id)))
    }

    /// One segment. The usual shape (position and audience by name, every other field a plain
    /// string, integer or null) is read without serde's untagged enums, which buffer a copy of
    /// every value to try each variant (a preview parses a thousand segments per turn at 500
    /// plugins); anything else goes through serde. Both give the same segment.
    pub fn parse(value: &Value) -> Option<Segment> {
        Segment::read(value, None)
    }

    /// One segment as [`Segment::parse`] reads it; stamped with `stamp` when given, whatever it
    /// says (the id is shared, not copied into each segment).
    fn read(value: &Value, stamp: Option<&Arc<str>>) -> Option<Segment> {
        let usual = match value {
            Value::Object(map) => UsualSegment::of(map).map(|usual| (usual, map)),
            _ => None,
        };
        match usual {
            Some((usual, map)) => usual.read(map, stamp),
            None => Segment::deserialize(value).ok().map(|segment| match stamp {
                Some(plugin_id) => Segment {
                    provider_plugin_id: Arc::clone(plugin_id),
                    ..segment
                },
                None => segment,
            }),
        }
    }

    pub fn order(&self) -> i64 {
        self.order.unwrap_or(0)
    }

    /// The role a segment's message takes (system when absent).
    pub fn role(&self) -> &str {
        self.role.as_deref().unwrap_or("system")
    }

    /// [`Segment::role`], borrowed from a constant when it is one of the contract's roles.
    pub fn role_name(&self) -> Cow<'static, str> {
        match self.role() {
            "system" => Cow::Borrowed("system"),
            "user" => Cow::Borrowed("user"),
            "assistant" => Cow::Borrowed("assistant"),
            other => Cow::Owned(other.to_string()),
        }
    }

    fn is_system_role(&self) -> bool {
        self.role() == "system"
    }

    /// Where the segment lands, by the seed page's volatility table.
    pub fn placement(&self) -> Placement {
        // `system`: `turn` goes after the history with the system role, `stable`/`session` into
        // the stable part of the system prompt. System-role `pre-history` stays in the system
        // prompt, `turn` after the last cache boundary. Other positions ignore `volatility`.
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

/// What [`Segment::parse`] learned from a segment of the usual shape before copying its strings:
/// the fields that are not strings, each read with its own serde names.
struct UsualSegment {
    position: NamedPosition,
    audience: NamedAudience,
    volatility: Volatility,
    order: Option<i64>,
}

impl UsualSegment {
    /// The fields of a segment of the usual shape, or `None` for any other shape.
    fn of(map: &serde_json::Map<String, Value>) -> Option<UsualSegment> {
        fn name<'a, T: Deserialize<'a>>(value: &'a Value) -> Option<T> {
            value.is_string().then(|| T::deserialize(value).ok())?
        }
        let (mut position, mut audience, mut volatility, mut order) = (None, None, None, None);
        for (key, value) in map {
            let usual = match key.as_str() {
                "id" | "content" | "providerPluginId" => value.is_string(),
                "role" => value.is_string() || value.is_null(),
                "order" => {
                    order = value.as_i64();
                    order.is_some() || value.is_null()
                }
                "position" => {
                    position = name(value);
                    position.is_some()
                }
                "audience" => {
                    audience = name(value);
                    audience.is_some()
                }
                "volatility" => {
                    volatility = name(value);
                    volatility.is_some()
                }
                // Unknown keys are ignored, as serde ignores them.
                _ => true,
            };
            if !usual {
                return None;
            }
        }
        Some(UsualSegment {
            position: position?,
            audience: audience?,
            volatility: volatility?,
            order,
        })
    }

    /// The segment, its strings copied out of the map; its plugin id is `stamp` when given.
    fn read(
        self,
        map: &serde_json::Map<String, Value>,
        stamp: Option<&Arc<str>>,
    ) -> Option<Segment> {
        let (mut id, mut content, mut role, mut provider_plugin_id) = (None, None, None, None);
        for (key, value) in map {
            let Value::String(text) = value else { continue };
            match key.as_str() {
                "id" => id = Some(text),
                "content" => content = Some(text),
                "role" => role = Some(text),
                "providerPluginId" if stamp.is_none() => provider_plugin_id = Some(text),
                _ => {}
            }
        }
        Some(Segment {
            id: Arc::from(id?.as_str()),
            content: Arc::from(content?.as_str()),
            position: Position::Named(self.position),
            role: role.cloned(),
            audience: Audience::Named(self.audience),
            volatility: self.volatility,
            order: self.order,
            provider_plugin_id: match stamp {
                Some(plugin_id) => Arc::clone(plugin_id),
                None => Arc::from(provider_plugin_id.map_or("", String::as_str)),
            },
        })
    }
}

/// Where a segment lands in the assembled request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
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
                if self.plugin_id.as_deref() == Some(&*segment.provider_plugin_id) =>
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
    pub provider_plugin_id: Arc<str>,
    pub id: Arc<str>,
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
        KeyRef::of_key(self).compare(&KeyRef::of_key(other))
    }
}

/// A segment's sort key, borrowed: the one home of the kernel's order, used by sorting without
/// copying ids for every comparison.
struct KeyRef<'a> {
    volatility: Volatility,
    order: i64,
    provider_plugin_id: &'a str,
    id: &'a str,
}

impl<'a> KeyRef<'a> {
    fn of(segment: &'a Segment) -> KeyRef<'a> {
        KeyRef {
            volatility: segment.volatility,
            order: segment.order(),
            provider_plugin_id: &segment.provider_plugin_id,
            id: &segment.id,
        }
    }

    fn of_key(key: &'a SegmentKey) -> KeyRef<'a> {
        KeyRef {
            volatility: key.volatility,
            order: key.order,
            provider_plugin_id: &key.provider_plugin_id,
            id: &key.id,
        }
    }

    fn compare(&self, other: &KeyRef<'_>) -> Ordering {
        self.volatility
            .cmp(&other.volatility)
            .then(self.order.cmp(&other.order))
            .then_with(|| utf16_cmp(self.provider_plugin_id, other.provider_plugin_id))
            .then_with(|| utf16_cmp(self.id, other.id))
    }
}

/// Sorts segments into the kernel's order (stable, session, turn; order; plugin id; id). Equal
/// keys keep their order (the sort is stable).
pub fn sort_segments(segments: &mut Vec<Segment>) {
    // Segments arrive in their providers' call order, plugin ids ascending, but each plugin's
    // segments carry their own volatility and order, so that order is interleaved. Grouped by
    // volatility and order first (keeping their order within a group), they are nearly sorted,
    // and the stable sort then finds runs instead of comparing log2(n) times per segment (a
    // preview sorts a thousand segments per turn at 500 plugins). The sort alone decides the
    // result: grouping only changes how long it takes. Positions are grouped and sorted, not
    // the segments, which then move once, to their place.
    let mut groups: BTreeMap<(Volatility, i64), Vec<usize>> = BTreeMap::new();
    for (at, segment) in segments.iter().enumerate() {
        groups
            .entry((segment.volatility, segment.order()))
            .or_default()
            .push(at);
    }
    let mut order: Vec<usize> = Vec::with_capacity(segments.len());
    for group in groups.into_values() {
        order.extend(group);
    }
    order.sort_by(|&a, &b| KeyRef::of(&segments[a]).compare(&KeyRef::of(&segments[b])));
    let mut unplaced: Vec<Option<Segment>> = segments.drain(..).map(Some).collect();
    // `order` holds each position once, so every segment is taken.
    segments.extend(order.into_iter().filter_map(|at| unplaced[at].take()));
}

/// Which segments share their volatility, order and placement with a segment of another
/// plugin, so only plugin ids decide which comes first. Built in one pass over the segments
/// (asking each segment against all others was quadratic over a large folder).
pub struct TieGroups<'a> {
    /// Per (volatility, order, placement): the first plugin seen, and whether another plugin
    /// shares the group. Ordered: a lookup among the (usually few) groups costs less than
    /// hashing its key, and a preview makes two per segment.
    groups: BTreeMap<(Volatility, i64, Placement), (&'a str, bool)>,
}

impl<'a> TieGroups<'a> {
    pub fn of(all: &'a [Segment]) -> TieGroups<'a> {
        let mut groups: BTreeMap<(Volatility, i64, Placement), (&'a str, bool)> = BTreeMap::new();
        for segment in all {
            let plugin = &*segment.provider_plugin_id;
            groups
                .entry((segment.volatility, segment.order(), segment.placement()))
                .and_modify(|(first, shared)| *shared |= *first != plugin)
                .or_insert((plugin, false));
        }
        TieGroups { groups }
    }

    /// Whether only plugin ids decide where `segment` (one of the segments given) comes.
    pub fn tie_broken_by_plugin_id(&self, segment: &Segment) -> bool {
        self.groups
            .get(&(segment.volatility, segment.order(), segment.placement()))
            .is_some_and(|(_, shared)| *shared)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn positions_and_audiences_read_names_and_objects_and_round_trip() {
        use crate::manifest::{NamedPosition, Position};
        let read = |v: Value| serde_json::from_value::<Position>(v).ok();
        assert_eq!(
            read(json!("pre-history")),
            Some(Position::Named(NamedPosition::PreHistory))
        );
        assert_eq!(
            read(json!({"depth": 3})),
            Some(Position::Depth { depth: 3 })
        );
        assert_eq!(
            read(json!({"depth": 3, "note": "ignored"})),
            Some(Position::Depth { depth: 3 })
        );
        for bad in [
            json!("middle"),
            json!({"depth": -1}),
            json!({}),
            json!(2),
            json!(null),
        ] {
            assert_eq!(read(bad.clone()), None, "{bad}");
        }
        let audience = |v: Value| serde_json::from_value::<Audience>(v).ok();
        assert_eq!(
            audience(json!("self")),
            Some(Audience::Named(NamedAudience::Own))
        );
        assert_eq!(
            audience(json!({"contract": "quest-log"})),
            Some(Audience::Contract {
                contract: "quest-log".into()
            })
        );
        for bad in [
            json!("everyone"),
            json!({"contract": 1}),
            json!([]),
            json!(true),
        ] {
            assert_eq!(audience(bad.clone()), None, "{bad}");
        }
        for position in [
            Position::Named(NamedPosition::System),
            Position::Depth { depth: 0 },
        ] {
            assert_eq!(read(json!(position)), Some(position));
        }
        for who in [
            Audience::Named(NamedAudience::All),
            Audience::Contract {
                contract: "c".into(),
            },
        ] {
            assert_eq!(audience(json!(who)), Some(who));
        }
    }

    fn segment(plugin: &str, id: &str, order: i64, volatility: &str) -> Segment {
        let mut s: Segment = serde_json::from_value(json!({
            "id": id, "content": id, "position": "system", "audience": "all",
            "volatility": volatility, "order": order,
        }))
        .expect("segment");
        s.provider_plugin_id = plugin.into();
        s
    }

    #[test]
    fn a_role_name_is_the_role_and_shares_the_contract_s_three() {
        let with_role = |role: Option<&str>| Segment {
            role: role.map(str::to_string),
            ..segment("a", "x", 0, "stable")
        };
        for (role, shared) in [
            (None, true),
            (Some("system"), true),
            (Some("user"), true),
            (Some("assistant"), true),
            (Some("narrator"), false),
        ] {
            let segment = with_role(role);
            let name = segment.role_name();
            assert_eq!(name, segment.role());
            assert_eq!(matches!(name, Cow::Borrowed(_)), shared, "{role:?}");
        }
    }

    #[test]
    fn only_segments_sharing_volatility_order_and_placement_with_another_plugin_are_tie_broken() {
        let all = [
            segment("a", "tie", 1, "stable"),
            segment("b", "tie", 1, "stable"),
            segment("a", "own-pair-1", 2, "stable"),
            segment("a", "own-pair-2", 2, "stable"),
            segment("c", "other-volatility", 1, "session"),
        ];
        let ties = TieGroups::of(&all);
        let broken: Vec<bool> = all
            .iter()
            .map(|s| ties.tie_broken_by_plugin_id(s))
            .collect();
        assert_eq!(broken, [true, true, false, false, false]);
    }

    proptest::proptest! {
        #[test]
        fn sorting_gives_what_a_stable_sort_of_the_segments_as_given_gives(
            keys in proptest::collection::vec(
                ("[ab]", "[xy]", -1i64..2, proptest::sample::select(vec!["stable", "session", "turn"])),
                0..24,
            ),
        ) {
            // Contents number the segments, so equal keys show whether they kept their order.
            let all: Vec<Segment> = keys
                .iter()
                .enumerate()
                .map(|(n, (plugin, id, order, volatility))| Segment {
                    content: n.to_string().into(),
                    ..segment(plugin, id, *order, volatility)
                })
                .collect();
            let mut expected = all.clone();
            expected.sort_by(|a, b| KeyRef::of(a).compare(&KeyRef::of(b)));
            let mut sorted = all;
            sort_segments(&mut sorted);
            proptest::prop_assert_eq!(sorted, expected);
        }
    }

    #[test]
    fn sorting_orders_by_volatility_then_order_then_plugin_id_then_id() {
        let mut all = vec![
            segment("b", "x", 0, "turn"),
            segment("b", "y", 1, "stable"),
            segment("a", "z", 1, "stable"),
            segment("a", "a", 1, "stable"),
        ];
        sort_segments(&mut all);
        let ids: Vec<(&str, &str)> = all
            .iter()
            .map(|s| (&*s.provider_plugin_id, &*s.id))
            .collect();
        assert_eq!(ids, [("a", "a"), ("a", "z"), ("b", "y"), ("b", "x")]);
    }
}
