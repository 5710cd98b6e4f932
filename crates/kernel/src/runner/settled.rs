//! Memo answers the runner settled, taken again without asking their engine while the engine
//! could only give the same answer.
//!
//! A save at 500 plugins asks a thousand unchanged providers per turn again, and each answers
//! from its engine's memo: the lock, the memo's lookup and the settling of its record cost
//! about 40% of the preview's segment calls (`docs/performance-history.md`). An engine says
//! when its memo could answer otherwise by its *memo generation* ([`super::Invoker`]): a number
//! that moves whenever an answer it holds may go or change (the memo cleared, an entry evicted
//! or replaced). A settled answer is kept with the generation read before the call that gave
//! it, and is taken again only for the same call (point, slot, reading, input, turn, session
//! view, timeout) while the generation has not moved, so it is what asking would give. Only
//! successful memo answers are kept: a call that ran, failed or is never memoized is asked
//! again every time. The record taken again keeps the duration of the lookup that gave it.

use super::CallRecord;
use crate::context::ExecutionContext;
use crate::contract::{PointId, SlotId};
use serde_json::Value;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How many settled answers a provider keeps at most: a preview asks each provider for two
/// turns (a slot provider for its slot).
const KEPT: usize = 8;

/// What identifies a call for its settled answer: everything the runner hands the engine, the
/// provider aside (each provider keeps its own answers). The same for every provider of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct CallIdentity {
    pub point: PointId,
    pub slot: Option<SlotId>,
    /// Whether the segments were left for the reader to stamp (`RunOptions::shared_segments`).
    pub shared_segments: bool,
    pub input_key: u64,
    pub turn_id: Option<String>,
    /// The session view's id: an engine drops its memo when what its plugin sees changed, and
    /// it notices only when asked, so an answer is taken again only for the view that gave it.
    pub view: u64,
    pub timeout: Duration,
}

impl CallIdentity {
    /// The identity of a run's calls, or `None` when no call of the context may be answered
    /// from a memo (a live HTTP grant or a model gateway: the engine runs every such call).
    pub fn of(
        point: PointId,
        slot: Option<SlotId>,
        shared_segments: bool,
        input_key: u64,
        ctx: &ExecutionContext,
        timeout: Duration,
    ) -> Option<CallIdentity> {
        (!ctx.view.http.live && ctx.gateway.is_none()).then(|| CallIdentity {
            point,
            slot,
            shared_segments,
            input_key,
            turn_id: ctx.turn_id.clone(),
            view: ctx.view.id(),
            timeout,
        })
    }
}

/// One provider's settled memo answers (shared by every copy of the provider; a reload makes
/// new providers and so starts empty).
#[derive(Debug, Default)]
pub struct SettledAnswers {
    entries: Mutex<VecDeque<Settled>>,
    /// How many answers were taken again (for tests).
    taken: std::sync::atomic::AtomicUsize,
}

#[derive(Debug)]
struct Settled {
    call: CallIdentity,
    generation: u64,
    record: CallRecord,
    output: Arc<Value>,
}

impl SettledAnswers {
    /// The answer settled for `call` while the engine's memo generation was `generation`.
    pub(super) fn get(
        &self,
        call: &CallIdentity,
        generation: u64,
    ) -> Option<(CallRecord, Arc<Value>)> {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let found = entries
            .iter()
            .find(|e| e.generation == generation && e.call == *call)
            .map(|e| (e.record.clone(), Arc::clone(&e.output)));
        if found.is_some() {
            self.taken
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        found
    }

    /// Keeps a memo answer settled for `call`, given when the generation was `generation`
    /// (read before the call). An answer for the same call kept under another generation goes.
    pub(super) fn keep(
        &self,
        call: &CallIdentity,
        generation: u64,
        record: &CallRecord,
        output: &Arc<Value>,
    ) {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries.retain(|e| e.call != *call);
        if entries.len() >= KEPT {
            entries.pop_front();
        }
        entries.push_back(Settled {
            call: call.clone(),
            generation,
            record: record.clone(),
            output: Arc::clone(output),
        });
    }

    /// How many answers were taken again without asking the engine (for tests).
    pub fn taken(&self) -> usize {
        self.taken.load(std::sync::atomic::Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::Outcome;
    use serde_json::json;

    fn identity(turn: &str) -> CallIdentity {
        CallIdentity {
            point: PointId::PromptSegment,
            slot: None,
            shared_segments: true,
            input_key: 7,
            turn_id: Some(turn.into()),
            view: 1,
            timeout: Duration::from_millis(500),
        }
    }

    fn record() -> CallRecord {
        CallRecord {
            point: PointId::PromptSegment,
            plugin_id: "p".into(),
            provider_id: "a".into(),
            slot: None,
            order: 0,
            outcome: Outcome::Success,
            error_code: None,
            message: None,
            duration_ms: 0.01,
            logs: Vec::new(),
            notes: Vec::new(),
            cached: true,
            ran_ms: Some(1.5),
            not_cached: None,
        }
    }

    #[test]
    fn an_answer_is_taken_again_only_for_the_same_call_and_generation() {
        let answers = SettledAnswers::default();
        let output = Arc::new(json!([]));
        answers.keep(&identity("t1"), 3, &record(), &output);
        let (again, value) = answers.get(&identity("t1"), 3).expect("kept");
        assert_eq!(again, record());
        assert!(Arc::ptr_eq(&value, &output));
        assert!(answers.get(&identity("t1"), 4).is_none(), "the memo moved");
        assert!(answers.get(&identity("t2"), 3).is_none(), "another turn");
        let other_view = CallIdentity {
            view: 2,
            ..identity("t1")
        };
        assert!(
            answers.get(&other_view, 3).is_none(),
            "another session view"
        );
        assert_eq!(answers.taken(), 1);
    }

    #[test]
    fn a_newer_answer_replaces_the_older_and_the_oldest_goes_when_full() {
        let answers = SettledAnswers::default();
        let output = Arc::new(json!([]));
        answers.keep(&identity("t1"), 3, &record(), &output);
        answers.keep(&identity("t1"), 4, &record(), &output);
        assert!(answers.get(&identity("t1"), 3).is_none());
        assert!(answers.get(&identity("t1"), 4).is_some());
        for n in 0..KEPT {
            answers.keep(&identity(&format!("other {n}")), 4, &record(), &output);
        }
        assert!(answers.get(&identity("t1"), 4).is_none(), "the oldest went");
        assert!(answers.get(&identity("other 1"), 4).is_some());
    }
}
