//! The slot host: keeps the projected value of every kernel UI slot, re-projects only what a
//! change can affect, and tells consumers about a value only when its revision changed.
//!
//! Triggers (kernel notes §2.10): a plugin-data write re-projects the slots whose provider
//! belongs to the writing plugin and lists the namespace in `watch`; an event previewed during
//! a turn re-projects the slots whose provider lists the topic in `preview`, as a preview scoped
//! to that turn (dropped when the turn ends); enabling or disabling a plugin, or changing a
//! character, re-projects every slot.

use crate::preview::{SlotView, revision_of};
use crate::workspace::Workspace;
use covel_kernel::contract::{PointId, SlotId};
use serde::Serialize;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};

/// Most recent preview events kept per turn.
pub const MAX_PREVIEW_EVENTS: usize = 128;

/// Something that may change slot values.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum Trigger {
    /// First projection, or a full refresh.
    All,
    /// A plugin wrote data in these namespaces.
    PluginData { plugin_id: String, namespaces: Vec<String> },
    /// A domain event was previewed during a turn.
    EventPreviewed { turn_id: String, topic: String, data: Value, plugin_id: Option<String> },
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
    pub error: Option<covel_kernel::runner::RunError>,
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
    pub fn affected(&self, workspace: &Workspace, trigger: &Trigger) -> BTreeSet<SlotId> {
        let providers = workspace.active_providers();
        let slot_providers = providers.iter().filter(|p| p.decl.point == PointId::UiSlot);
        match trigger {
            Trigger::All | Trigger::PluginsChanged | Trigger::CharacterChanged | Trigger::TurnEnded { .. } => SlotId::ALL.into_iter().collect(),
            Trigger::PluginData { plugin_id, namespaces } => slot_providers
                .filter(|p| &p.plugin_id == plugin_id && p.decl.watch.iter().any(|w| namespaces.contains(w)))
                .filter_map(|p| p.decl.slot)
                .collect(),
            Trigger::EventPreviewed { topic, .. } => {
                slot_providers.filter(|p| p.decl.preview.contains(topic)).filter_map(|p| p.decl.slot).collect()
            }
        }
    }

    /// Applies a trigger and returns the values whose revision changed.
    pub fn apply(&mut self, workspace: &Workspace, trigger: &Trigger) -> Vec<SlotChange> {
        let slots = self.affected(workspace, trigger);
        self.last_projected = slots.clone();
        match trigger {
            Trigger::EventPreviewed { turn_id, topic, data, plugin_id } => {
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
                slots
                    .into_iter()
                    .flat_map(|slot| workspace.project_slot(slot, &events, Some(turn_id.clone())))
                    .map(|view| SlotChange { slot: view.slot, key: view.key, value: view.value, revision: view.revision, preview_turn: Some(turn_id.clone()), error: view.error })
                    .collect()
            }
            _ => {
                if let Trigger::TurnEnded { turn_id } = trigger {
                    self.events.remove(turn_id);
                }
                let mut changes = Vec::new();
                for slot in slots {
                    let views = workspace.project_slot(slot, &[], None);
                    let fresh: BTreeSet<Option<String>> = views.iter().map(|v| v.key.clone()).collect();
                    // Keys of character.visual@1 that disappeared are announced as null.
                    let gone: Vec<(SlotId, Option<String>)> =
                        self.committed.keys().filter(|(s, k)| *s == slot && !fresh.contains(k)).cloned().collect();
                    for key in gone {
                        self.committed.remove(&key);
                        changes.push(SlotChange { slot, key: key.1, value: Value::Null, revision: revision_of(&Value::Null), preview_turn: None, error: None });
                    }
                    for view in views {
                        let id = (view.slot, view.key.clone());
                        let changed = self.committed.get(&id).is_none_or(|old| old.revision != view.revision || old.error != view.error);
                        if changed {
                            let (key, value, revision, error) = (view.key.clone(), view.value.clone(), view.revision.clone(), view.error.clone());
                            changes.push(SlotChange { slot, key, value, revision, preview_turn: None, error });
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
        self.events.get(turn_id).map(Vec::as_slice).unwrap_or_default()
    }
}
