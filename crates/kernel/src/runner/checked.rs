//! Outputs of one provider the runner already checked and attributed, recognised by identity.
//! An engine answering from its memo hands out the same shared value for every identical call,
//! and the check's verdict and the stamped provenance depend only on the point, the slot, the
//! provider and the value: so a memo answer the runner has seen is not checked, stamped and
//! copied again (at 500 plugins a save answers ≈ 2 200 calls from the memo). An entry holds its
//! memo answer weakly: the answer's contents go when the memo drops it (and the entry with them),
//! while its allocation stays reserved, so no other value can take its address and a matching
//! pointer is the same answer.

use crate::contract::SlotId;
use serde_json::Value;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, Weak};

/// Whether `held` (a weak reference kept with something made of a value) is `value` itself. The
/// weak reference keeps the value's allocation reserved, so its address cannot be another
/// value's, and a weakly held value cannot change in place (`Arc::get_mut` refuses,
/// `Arc::make_mut` moves it): the same address is the same, unchanged value.
pub(crate) fn holds(held: &Weak<Value>, value: &Arc<Value>) -> bool {
    std::ptr::eq(held.as_ptr(), Arc::as_ptr(value))
}

/// How many checked outputs a provider keeps at most: a preview asks each provider for two
/// turns (a slot provider for its slot), and what the memo answers repeats from preview to
/// preview.
const KEPT: usize = 8;

/// One provider's checked outputs (shared by every copy of the provider; a reload makes new
/// providers and so starts empty).
#[derive(Debug, Default)]
pub struct CheckedOutputs {
    entries: Mutex<VecDeque<Checked>>,
}

/// How an answer was read: for one slot, and with its segments stamped or left for the reader
/// to stamp (`RunOptions::shared_segments`).
pub(super) type Reading = (Option<SlotId>, bool);

#[derive(Debug)]
struct Checked {
    raw: Weak<Value>,
    reading: Reading,
    /// What the runner made of it, when the stamps changed it (else the answer itself).
    stamped: Option<Arc<Value>>,
}

impl CheckedOutputs {
    /// What the runner made of `raw` read this way before, if it kept it.
    pub(super) fn get(&self, raw: &Arc<Value>, reading: Reading) -> Option<Arc<Value>> {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries
            .iter()
            .find(|e| holds(&e.raw, raw) && e.reading == reading)
            .map(|e| Arc::clone(e.stamped.as_ref().unwrap_or(raw)))
    }

    /// Keeps what the runner made of `raw` read this way: `checked` itself when stamping copied
    /// it, nothing more when it is `raw`. Entries whose answer the memo dropped go first; then
    /// the oldest, when it is full.
    pub(super) fn keep(&self, raw: &Arc<Value>, reading: Reading, checked: &Arc<Value>) {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries.retain(|e| e.raw.strong_count() > 0);
        if entries.len() >= KEPT {
            entries.pop_front();
        }
        entries.push_back(Checked {
            raw: Arc::downgrade(raw),
            reading,
            stamped: (!Arc::ptr_eq(raw, checked)).then(|| Arc::clone(checked)),
        });
    }

    /// How many outputs are kept (for tests).
    pub fn len(&self) -> usize {
        self.entries.lock().map(|e| e.len()).unwrap_or_default()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_entry_is_found_by_the_same_answer_read_the_same_way_only() {
        let kept = CheckedOutputs::default();
        let raw = Arc::new(json!({"a": 1}));
        let stamped = Arc::new(json!({"a": 1, "pluginId": "p"}));
        kept.keep(&raw, (None, false), &stamped);
        kept.keep(&raw, (None, true), &raw);
        let hit = kept.get(&raw, (None, false)).expect("kept");
        assert!(Arc::ptr_eq(&hit, &stamped));
        let as_is = kept.get(&raw, (None, true)).expect("kept");
        assert!(
            Arc::ptr_eq(&as_is, &raw),
            "an unchanged answer is handed back itself"
        );
        assert_eq!(kept.get(&raw, (Some(SlotId::StageCast), false)), None);
        let equal = Arc::new(json!({"a": 1}));
        assert_eq!(
            kept.get(&equal, (None, false)),
            None,
            "an equal value is not the same answer"
        );
    }

    #[test]
    fn an_answer_the_memo_dropped_leaves_and_at_most_kept_entries_stay() {
        let kept = CheckedOutputs::default();
        let dropped = Arc::new(json!("old"));
        kept.keep(&dropped, (None, false), &dropped);
        drop(dropped);
        let live: Vec<Arc<Value>> = (0..KEPT + 3).map(|i| Arc::new(json!(i))).collect();
        kept.keep(&live[0], (None, false), &live[0]);
        assert_eq!(kept.len(), 1, "the dropped answer's entry went");
        for answer in &live[1..] {
            kept.keep(answer, (None, false), answer);
        }
        assert_eq!(kept.len(), KEPT);
        assert_eq!(kept.get(&live[0], (None, false)), None, "the oldest went");
        let newest = live.last().expect("answers");
        assert!(kept.get(newest, (None, false)).is_some());
    }
}
