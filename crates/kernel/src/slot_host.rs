//! The slot host (seed page, "Where the other extension points are described": the server
//! handles projection, validation and caching of `ui.slot@1`): keeps the projected value of
//! every kernel UI slot, re-projects only what a change can affect, and tells consumers about a
//! value only when its revision changed.
//!
//! Triggers (kernel notes §2.10): a plugin-data write re-projects the slots whose provider
//! belongs to the writing plugin and lists the namespace in `watch`; an event previewed during
//! a turn re-projects the slots whose provider lists the topic in `preview`, as a preview scoped
//! to that turn (dropped when the turn ends); enabling or disabling a plugin, or changing a
//! character, re-projects every slot.
//!
//! The host takes the active providers (to read their `slot`, `watch` and `preview`) and a
//! projector (what runs `ui.slot@1` for the affected slots, each view labelled with its slot);
//! [`project`] is the projection over the runner, which the studio and the kernel's own tests
//! share.

use crate::context::ExecutionContext;
use crate::contract::{PointId, SlotId};
use crate::runner::{self, CallRecord, Provider, RunError, RunOptions, RunResult};
use serde::Serialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// Most recent preview events kept per turn.
pub const MAX_PREVIEW_EVENTS: usize = 128;

/// One projected slot value.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SlotView {
    pub slot: SlotId,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    pub value: Value,
    /// Hex SHA-256 of the value's JSON: consumers are told of a change only when it changes.
    pub revision: String,
    pub chain: Vec<CallRecord>,
    /// Why the slot's run failed as a whole (its value is then `null`, never a silent one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<RunError>,
}

/// The revision of a slot value.
pub fn revision_of(value: &Value) -> String {
    let text = serde_json::to_string(value).unwrap_or_default();
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The `ui.slot@1` input for one slot.
fn slot_input(slot: SlotId, events: &[Value]) -> Value {
    json!({"slot": slot.as_str(), "previous": null, "events": events})
}

/// The run that projects one slot (a `ui.slot@1` pipeline from no previous value).
pub fn slot_run(slot: SlotId, events: &[Value]) -> runner::RunRequest {
    runner::RunRequest {
        point: PointId::UiSlot,
        input: slot_input(slot, events),
        options: RunOptions {
            slot: Some(slot),
            ..RunOptions::default()
        },
    }
}

/// The views of one slot's run. `character.visual@1` is split into one value per character
/// (a single keyless null when there are none).
pub fn views_of(slot: SlotId, result: RunResult) -> Vec<SlotView> {
    if slot != SlotId::CharacterVisual {
        return vec![SlotView {
            slot,
            key: None,
            revision: revision_of(&result.result),
            value: result.result,
            chain: result.calls,
            error: result.error,
        }];
    }
    let characters = result
        .result
        .get("characters")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if characters.is_empty() {
        return vec![SlotView {
            slot,
            key: None,
            value: Value::Null,
            revision: revision_of(&Value::Null),
            chain: result.calls,
            error: result.error,
        }];
    }
    characters
        .into_iter()
        .map(|character| SlotView {
            slot,
            key: character
                .get("characterId")
                .and_then(Value::as_str)
                .map(str::to_string),
            revision: revision_of(&character),
            value: character,
            chain: result.calls.clone(),
            error: result.error.clone(),
        })
        .collect()
}

/// Projects slots over `providers` in one execution: runs each slot's `ui.slot@1` pipeline
/// (chains that share no engine in parallel, `runner::run_all`) and splits the answers into
/// views, slot by slot in the order given.
pub fn project(
    providers: &[Provider],
    context: &Arc<ExecutionContext>,
    slots: &[SlotId],
    events: &[Value],
) -> Vec<SlotView> {
    let requests = slots.iter().map(|&slot| slot_run(slot, events)).collect();
    slots
        .iter()
        .zip(runner::run_all(requests, providers, context))
        .flat_map(|(&slot, result)| views_of(slot, result))
        .collect()
}

/// What runs `ui.slot@1` for slots: `(slots, events of the turn, turn id)` → their views, slot by
/// slot in the order given. Outside a turn it reads the committed state with no events.
pub trait Projector {
    fn project(&self, slots: &[SlotId], events: &[Value], turn_id: Option<&str>) -> Vec<SlotView>;
}

impl<F: Fn(&[SlotId], &[Value], Option<&str>) -> Vec<SlotView>> Projector for F {
    fn project(&self, slots: &[SlotId], events: &[Value], turn_id: Option<&str>) -> Vec<SlotView> {
        self(slots, events, turn_id)
    }
}

/// Something that may change slot values.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum Trigger {
    /// First projection, or a full refresh.
    All,
    /// A plugin wrote data in these namespaces.
    PluginData {
        plugin_id: String,
        namespaces: Vec<String>,
    },
    /// A domain event was previewed during a turn.
    EventPreviewed {
        turn_id: String,
        topic: String,
        data: Value,
        plugin_id: Option<String>,
    },
    /// A plugin was enabled or disabled, or reloaded.
    PluginsChanged,
    /// A character was added or changed.
    CharacterChanged,
    /// The turn ended: its previews are dropped and every slot is re-projected.
    TurnEnded { turn_id: String },
}

/// A slot value consumers are told about.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SlotChange {
    pub slot: SlotId,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    pub value: Value,
    pub revision: String,
    /// A preview during a turn (never stored as the committed value).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preview_turn: Option<String>,
    /// Why the slot's run failed as a whole (the value is then `null`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<RunError>,
}

/// Committed slot values with the previews of the running turn.
#[derive(Debug, Default)]
pub struct SlotHost {
    committed: BTreeMap<(SlotId, Option<String>), SlotView>,
    events: BTreeMap<String, Vec<Value>>,
    /// Slots projected by the last `apply` (for tests and the studio's activity view).
    pub last_projected: BTreeSet<SlotId>,
}

impl SlotHost {
    /// The committed values, in slot order.
    pub fn values(&self) -> Vec<SlotView> {
        self.committed.values().cloned().collect()
    }

    /// The slots a trigger can affect, given the active providers.
    pub fn affected(&self, providers: &[Provider], trigger: &Trigger) -> BTreeSet<SlotId> {
        let slot_providers = providers.iter().filter(|p| p.decl.point == PointId::UiSlot);
        match trigger {
            Trigger::All
            | Trigger::PluginsChanged
            | Trigger::CharacterChanged
            | Trigger::TurnEnded { .. } => SlotId::ALL.into_iter().collect(),
            Trigger::PluginData {
                plugin_id,
                namespaces,
            } => slot_providers
                .filter(|p| {
                    &p.plugin_id == plugin_id && p.decl.watch.iter().any(|w| namespaces.contains(w))
                })
                .filter_map(|p| p.decl.slot)
                .collect(),
            Trigger::EventPreviewed { topic, .. } => slot_providers
                .filter(|p| p.decl.preview.contains(topic))
                .filter_map(|p| p.decl.slot)
                .collect(),
        }
    }

    /// Applies a trigger and returns the values whose revision changed.
    pub fn apply(
        &mut self,
        providers: &[Provider],
        projector: &impl Projector,
        trigger: &Trigger,
    ) -> Vec<SlotChange> {
        let affected = self.affected(providers, trigger);
        let slots: Vec<SlotId> = affected.iter().copied().collect();
        self.last_projected = affected;
        match trigger {
            Trigger::EventPreviewed {
                turn_id,
                topic,
                data,
                plugin_id,
            } => {
                let buffer = self.events.entry(turn_id.clone()).or_default();
                let mut event = json!({"topic": topic, "data": data, "turnId": turn_id});
                if let (Some(plugin), Some(map)) = (plugin_id, event.as_object_mut()) {
                    map.insert("pluginId".into(), Value::String(plugin.clone()));
                }
                buffer.push(event);
                if buffer.len() > MAX_PREVIEW_EVENTS {
                    let excess = buffer.len() - MAX_PREVIEW_EVENTS;
                    buffer.drain(..excess);
                }
                let events = buffer.clone();
                projector
                    .project(&slots, &events, Some(turn_id))
                    .into_iter()
                    .map(|view| SlotChange {
                        slot: view.slot,
                        key: view.key,
                        value: view.value,
                        revision: view.revision,
                        preview_turn: Some(turn_id.clone()),
                        error: view.error,
                    })
                    .collect()
            }
            _ => {
                if let Trigger::TurnEnded { turn_id } = trigger {
                    self.events.remove(turn_id);
                }
                let mut changes = Vec::new();
                let mut projected = projector.project(&slots, &[], None);
                for slot in slots {
                    let views: Vec<SlotView> =
                        projected.extract_if(.., |v| v.slot == slot).collect();
                    let fresh: BTreeSet<Option<String>> =
                        views.iter().map(|v| v.key.clone()).collect();
                    // Keys of character.visual@1 that disappeared are announced as null.
                    let gone: Vec<(SlotId, Option<String>)> = self
                        .committed
                        .keys()
                        .filter(|(s, k)| *s == slot && !fresh.contains(k))
                        .cloned()
                        .collect();
                    for key in gone {
                        self.committed.remove(&key);
                        changes.push(SlotChange {
                            slot,
                            key: key.1,
                            value: Value::Null,
                            revision: revision_of(&Value::Null),
                            preview_turn: None,
                            error: None,
                        });
                    }
                    for view in views {
                        // Only what the trigger affects was re-projected; of that, only a new
                        // revision (or a changed error) is reported.
                        let id = (view.slot, view.key.clone());
                        let changed = self.committed.get(&id).is_none_or(|old| {
                            old.revision != view.revision || old.error != view.error
                        });
                        if changed {
                            let (key, value, revision, error) = (
                                view.key.clone(),
                                view.value.clone(),
                                view.revision.clone(),
                                view.error.clone(),
                            );
                            changes.push(SlotChange {
                                slot,
                                key,
                                value,
                                revision,
                                preview_turn: None,
                                error,
                            });
                        }
                        self.committed.insert(id, view);
                    }
                }
                changes
            }
        }
    }

    /// Events buffered for a turn.
    pub fn events(&self, turn_id: &str) -> &[Value] {
        self.events
            .get(turn_id)
            .map(Vec::as_slice)
            .unwrap_or_default()
    }
}
