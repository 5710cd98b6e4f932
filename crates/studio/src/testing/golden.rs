//! Golden snapshots: per turn, the assembled prompt (system blocks with their cache boundaries,
//! messages with the moving breakpoint, each split into attributed parts), the slot values and
//! the world snapshot, written as readable YAML next to the session (by reviewing the pending
//! snapshot `covel test --update` writes, see [`super::review`]). A later run is compared part by
//! part; every difference names the plugin and segment that wrote the text, with a word-level
//! diff, and a difference several turns share is reported once ([`dedupe`]).

use super::TurnCapture;
use crate::parts::{self, Part};
use crate::textdiff;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The format tag of a golden file.
pub const FORMAT: &str = "covel-golden@1";

/// A golden file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Golden {
    pub format: String,
    pub session: String,
    pub turns: Vec<GoldenTurn>,
}

/// One turn of a golden file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct GoldenTurn {
    pub turn: String,
    pub say: String,
    pub system: Vec<GoldenBlock>,
    pub messages: Vec<GoldenMessage>,
    pub slots: Vec<GoldenSlot>,
    pub world: Value,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct GoldenBlock {
    pub block: String,
    pub cache_boundary: bool,
    pub parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct GoldenMessage {
    pub role: String,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cache_breakpoint: bool,
    pub parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct GoldenSlot {
    pub slot: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    pub value: Value,
}

/// One difference from the golden snapshot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, specta::Type)]
#[serde(rename = "GoldenDifference")]
#[serde(rename_all = "camelCase")]
pub struct Difference {
    /// Where: `system block stable-segments`, `message 5 (user)`, `slot stage.cast@1`, `world`…
    pub place: String,
    /// What wrote the text (`segment story-director/tone`, `history m2`…), when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// The plugin responsible, when a plugin is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plugin: Option<String>,
    /// `changed`, `added` or `removed`.
    pub change: &'static str,
    pub diff: String,
    /// The later turns where the very same difference shows (it is reported here once).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub also_in: Vec<String>,
    /// The earlier turn that reports this same difference, with its diff.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub same_as: Option<String>,
}

impl Difference {
    /// What makes two differences the same one: a changed segment shows the same way in every
    /// turn whose prompt carries it.
    fn identity(&self) -> (&str, Option<&str>, &str, &str) {
        (&self.place, self.from.as_deref(), self.change, &self.diff)
    }
}

/// Marks the differences that repeat an earlier turn's: the first names the later turns
/// (`also_in`), each repeat names the first (`same_as`), so a report shows one diff per change.
/// Every turn keeps its differences: a turn still fails on a change it shares.
pub fn dedupe(turns: &mut [(String, &mut Vec<Difference>)]) {
    for i in 0..turns.len() {
        let (earlier, later) = turns.split_at_mut(i + 1);
        let (turn_id, first) = &mut earlier[i];
        for difference in first.iter_mut().filter(|d| d.same_as.is_none()) {
            let mut also_in = Vec::new();
            for (later_id, others) in later.iter_mut() {
                for other in others
                    .iter_mut()
                    .filter(|o| o.same_as.is_none() && o.identity() == difference.identity())
                {
                    other.same_as = Some(turn_id.clone());
                    if !also_in.contains(later_id) {
                        also_in.push(later_id.clone());
                    }
                }
            }
            difference.also_in.extend(also_in);
        }
    }
}

/// The golden file of a session: `x.session.yaml` → `x.golden.yaml` beside it.
pub fn path_for(session: &Path) -> PathBuf {
    let name = session
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "session".into());
    let stem = name
        .strip_suffix(".yaml")
        .or_else(|| name.strip_suffix(".yml"))
        .unwrap_or(&name);
    let stem = stem.strip_suffix(".session").unwrap_or(stem);
    session.with_file_name(format!("{stem}.golden.yaml"))
}

/// The golden turn of a captured turn.
pub fn turn_of(capture: &TurnCapture) -> GoldenTurn {
    let preview = &capture.preview;
    let rows = &parts::Rows::of(&preview.segments);
    let system = preview
        .prompt
        .system
        .blocks
        .iter()
        .map(|b| GoldenBlock {
            block: b.kind.name().to_string(),
            cache_boundary: b.cache_boundary,
            parts: parts::block_parts(b, rows),
        })
        .collect();
    let breakpoint = covel_kernel::prompt::history_breakpoint(&preview.prompt.messages);
    let messages = preview
        .prompt
        .messages
        .iter()
        .enumerate()
        .map(|(i, m)| GoldenMessage {
            role: m.role.clone(),
            cache_breakpoint: Some(i) == breakpoint,
            parts: parts::message_parts(m, rows),
        })
        .collect();
    let slots = capture
        .slots
        .iter()
        .map(|s| GoldenSlot {
            slot: s.slot.as_str().to_string(),
            key: s.key.clone(),
            value: s.value.clone(),
        })
        .collect();
    GoldenTurn {
        turn: capture.turn_id.clone(),
        say: capture.say.clone(),
        system,
        messages,
        slots,
        world: capture.world.clone(),
    }
}

/// Reads a golden file; an error names the file (and the line and column where it breaks).
pub fn load(path: &Path) -> Result<Golden, String> {
    let text = crate::workspace::read_session_text(path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let golden: Golden = covel_kernel::yaml::from_str(&text).map_err(|e| e.in_file(path))?;
    if golden.format != FORMAT {
        return Err(format!(
            "{}: format is `{}`, not {FORMAT}",
            path.display(),
            golden.format
        ));
    }
    Ok(golden)
}

/// The golden file's text.
pub fn render(golden: &Golden, session: &Path) -> Result<String, String> {
    let name = session
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let body = serde_saphyr::to_string(golden).map_err(|e| e.to_string())?;
    Ok(format!(
        "# Golden snapshot of {name}, written by `covel test --update` (docs/testing.md): per turn, the\n# assembled prompt, the slot values and the world snapshot. Review changes like code.\n{body}"
    ))
}

fn short(text: &str) -> String {
    let flat = text.replace('\n', "⏎");
    if flat.chars().count() > 200 {
        format!("{}…", flat.chars().take(200).collect::<String>())
    } else {
        flat
    }
}

/// Compares two part lists (aligned by what wrote them) and records the differences.
fn diff_parts(place: &str, old: &[Part], new: &[Part], out: &mut Vec<Difference>) {
    let keys = |parts: &[Part]| parts.iter().map(|p| p.from.clone()).collect::<Vec<_>>();
    let (old_keys, new_keys) = (keys(old), keys(new));
    for op in similar::capture_diff_slices(similar::Algorithm::Myers, &old_keys, &new_keys) {
        let (tag, old_range, new_range) = op.as_tag_tuple();
        let record = |part: &Part, change: &'static str, diff: String| Difference {
            place: place.to_string(),
            from: Some(part.from.to_string()),
            plugin: part.plugin().map(str::to_string),
            change,
            diff,
            also_in: Vec::new(),
            same_as: None,
        };
        match tag {
            similar::DiffTag::Equal => {
                for (a, b) in old[old_range].iter().zip(&new[new_range]) {
                    if a.text != b.text {
                        out.push(record(b, "changed", textdiff::words(&a.text, &b.text)));
                    }
                }
            }
            similar::DiffTag::Delete => out.extend(
                old[old_range]
                    .iter()
                    .map(|p| record(p, "removed", short(&p.text))),
            ),
            similar::DiffTag::Insert => out.extend(
                new[new_range]
                    .iter()
                    .map(|p| record(p, "added", short(&p.text))),
            ),
            similar::DiffTag::Replace => {
                out.extend(
                    old[old_range]
                        .iter()
                        .map(|p| record(p, "removed", short(&p.text))),
                );
                out.extend(
                    new[new_range]
                        .iter()
                        .map(|p| record(p, "added", short(&p.text))),
                );
            }
        }
    }
}

/// Everything that differs between a golden turn and this run's turn. `providers` names, for a
/// slot id or `world`, the plugins whose providers produced the current value.
pub fn compare(
    old: &GoldenTurn,
    new: &GoldenTurn,
    providers: &dyn Fn(&str) -> Option<String>,
) -> Vec<Difference> {
    let mut out = Vec::new();
    if old.say != new.say {
        out.push(plain(
            "player message".into(),
            "changed",
            textdiff::words(&old.say, &new.say),
        ));
    }
    compare_system(old, new, &mut out);
    compare_messages(old, new, &mut out);
    compare_slots(old, new, providers, &mut out);
    for change in textdiff::json(&old.world, &new.world, 8) {
        out.push(Difference {
            plugin: providers("world"),
            ..plain(format!("world{}", change.pointer), "changed", change.diff)
        });
    }
    out
}

/// A difference no plugin is named for.
fn plain(place: String, change: &'static str, diff: String) -> Difference {
    Difference {
        place,
        from: None,
        plugin: None,
        change,
        diff,
        also_in: Vec::new(),
        same_as: None,
    }
}

/// System blocks, aligned by kind.
fn compare_system(old: &GoldenTurn, new: &GoldenTurn, out: &mut Vec<Difference>) {
    for block in &old.system {
        let place = format!("system block {}", block.block);
        match new.system.iter().find(|b| b.block == block.block) {
            None => out.push(plain(
                place,
                "removed",
                short(
                    &block
                        .parts
                        .iter()
                        .map(|p| p.text.as_str())
                        .collect::<Vec<_>>()
                        .join(" "),
                ),
            )),
            Some(now) => {
                if now.cache_boundary != block.cache_boundary {
                    let diff = format!(
                        "cache boundary {}",
                        if now.cache_boundary {
                            "added"
                        } else {
                            "removed"
                        }
                    );
                    out.push(plain(place.clone(), "changed", diff));
                }
                diff_parts(&place, &block.parts, &now.parts, out);
            }
        }
    }
    for block in new
        .system
        .iter()
        .filter(|b| !old.system.iter().any(|o| o.block == b.block))
    {
        diff_parts(
            &format!("system block {}", block.block),
            &[],
            &block.parts,
            out,
        );
    }
}

/// Messages, aligned by what wrote them.
fn compare_messages(old: &GoldenTurn, new: &GoldenTurn, out: &mut Vec<Difference>) {
    let key = |m: &GoldenMessage| {
        format!(
            "{}|{}",
            m.role,
            m.parts
                .iter()
                .map(|p| p.from.to_string())
                .collect::<Vec<_>>()
                .join(",")
        )
    };
    let (old_keys, new_keys): (Vec<String>, Vec<String>) = (
        old.messages.iter().map(key).collect(),
        new.messages.iter().map(key).collect(),
    );
    for op in similar::capture_diff_slices(similar::Algorithm::Myers, &old_keys, &new_keys) {
        let (tag, old_range, new_range) = op.as_tag_tuple();
        let place = |i: usize, m: &GoldenMessage| format!("message {} ({})", i + 1, m.role);
        match tag {
            similar::DiffTag::Equal | similar::DiffTag::Replace => {
                let pairs = old_range.clone().zip(new_range.clone());
                for (i, j) in pairs.clone() {
                    let (a, b) = (&old.messages[i], &new.messages[j]);
                    if a.cache_breakpoint != b.cache_breakpoint {
                        let diff = format!(
                            "cache breakpoint {}",
                            if b.cache_breakpoint {
                                "moved here"
                            } else {
                                "moved away"
                            }
                        );
                        out.push(plain(place(j, b), "changed", diff));
                    }
                    diff_parts(&place(j, b), &a.parts, &b.parts, out);
                }
                let paired = pairs.count();
                for i in old_range.skip(paired) {
                    diff_parts(
                        &place(i, &old.messages[i]),
                        &old.messages[i].parts,
                        &[],
                        out,
                    );
                }
                for j in new_range.skip(paired) {
                    diff_parts(
                        &place(j, &new.messages[j]),
                        &[],
                        &new.messages[j].parts,
                        out,
                    );
                }
            }
            similar::DiffTag::Delete => {
                for i in old_range {
                    diff_parts(
                        &place(i, &old.messages[i]),
                        &old.messages[i].parts,
                        &[],
                        out,
                    );
                }
            }
            similar::DiffTag::Insert => {
                for j in new_range {
                    diff_parts(
                        &place(j, &new.messages[j]),
                        &[],
                        &new.messages[j].parts,
                        out,
                    );
                }
            }
        }
    }
}

/// Slots, by slot (and key) and JSON pointer.
fn compare_slots(
    old: &GoldenTurn,
    new: &GoldenTurn,
    providers: &dyn Fn(&str) -> Option<String>,
    out: &mut Vec<Difference>,
) {
    let slot_key = |s: &GoldenSlot| {
        format!(
            "{}{}",
            s.slot,
            s.key.as_ref().map(|k| format!("[{k}]")).unwrap_or_default()
        )
    };
    for slot in &old.slots {
        let now = new.slots.iter().find(|s| slot_key(s) == slot_key(slot));
        let value = now.map_or(Value::Null, |s| s.value.clone());
        for change in textdiff::json(&slot.value, &value, 6) {
            out.push(Difference {
                plugin: providers(&slot.slot),
                ..plain(
                    format!("slot {}{}", slot_key(slot), change.pointer),
                    "changed",
                    change.diff,
                )
            });
        }
    }
    for slot in new
        .slots
        .iter()
        .filter(|s| !old.slots.iter().any(|o| slot_key(o) == slot_key(s)))
    {
        out.push(Difference {
            plugin: providers(&slot.slot),
            ..plain(
                format!("slot {}", slot_key(slot)),
                "added",
                short(&slot.value.to_string()),
            )
        });
    }
}
