//! The studio's side of the slot host: the host itself and its triggers are the kernel's
//! (`covel_kernel::slot_host`); the studio feeds it the workspace's active providers and
//! projects each slot in one call scope over the session's committed state.

pub use covel_kernel::slot_host::{MAX_PREVIEW_EVENTS, SlotChange, SlotHost, Trigger};

use crate::workspace::Workspace;
use covel_kernel::contract::SlotId;
use covel_kernel::slot_host::SlotView;

impl Workspace {
    /// Applies a trigger to `host` with this workspace's active providers; returns the values
    /// whose revision changed.
    pub fn apply_slots(&self, host: &mut SlotHost, trigger: &Trigger) -> Vec<SlotChange> {
        let calls = self.calls();
        let project = |slots: &[SlotId], events: &[serde_json::Value], turn_id: Option<&str>| {
            calls.project_slots(slots, events, turn_id)
        };
        host.apply(calls.providers(), &project, trigger)
    }

    /// [`Workspace::apply_slots`] for a trigger that projects the committed state (no events, no
    /// turn) right after `projected` was computed from the same state (the preview's slots): those
    /// views are used as they are instead of running every slot provider a second time.
    pub fn apply_slots_projected(
        &self,
        host: &mut SlotHost,
        trigger: &Trigger,
        projected: &[SlotView],
    ) -> Vec<SlotChange> {
        let calls = self.calls();
        let project = |slots: &[SlotId], events: &[serde_json::Value], turn_id: Option<&str>| {
            if !events.is_empty() || turn_id.is_some() {
                return calls.project_slots(slots, events, turn_id);
            }
            // The slots the preview projected take its views; the others run, in one batch.
            let missing: Vec<SlotId> = slots
                .iter()
                .copied()
                .filter(|&slot| !projected.iter().any(|v| v.slot == slot))
                .collect();
            let mut ran = calls.project_slots(&missing, events, turn_id);
            slots
                .iter()
                .flat_map(|&slot| -> Vec<SlotView> {
                    if missing.contains(&slot) {
                        ran.extract_if(.., |v| v.slot == slot).collect()
                    } else {
                        projected
                            .iter()
                            .filter(|v| v.slot == slot)
                            .cloned()
                            .collect()
                    }
                })
                .collect()
        };
        host.apply(calls.providers(), &project, trigger)
    }
}
