//! The engine's memo of provider calls: a call whose input and visible data are identical to an
//! earlier one may be answered without running — but only when that cannot change the answer.
//!
//! - A call that read the clock or randomness (`Date.now`, `new Date()`, `Math.random`,
//!   `performance.now`, `crypto` random values) is never answered from the memo.
//! - A failed call (error, timeout, out of memory, invalid output) is never memoized.
//! - An answer is trusted only after a second identical call gave the same answer: a handler
//!   that changes module-level state between calls shows it there, and is not memoized.
//! - `--no-memo` (`Limits::memo = false`) turns the memo off.
//!
//! Each call that is not answered from the memo says why in the trace (`notCached`).
//!
//! Entries belong to a turn: only the last [`RECENT_TURNS`] turns' entries are kept (a played
//! turn's calls are not asked again, so a long playtest must not accumulate them).
//!
//! A call that ran once is kept until it runs a second time ([`Memo::take_unconfirmed`]): the
//! shells confirm the memo while the author is idle by running exactly those calls again, not a
//! whole preview (after a save, only the saved plugin's calls are unconfirmed).
//!
//! The memo's *generation* ([`Memo::generation`]) moves whenever a trusted answer may go or
//! change: the memo cleared, a turn's entries evicted, the memo emptied at capacity, a trusted
//! entry replaced. While it stays, the runner takes the answers it settled again without asking
//! the engine (`covel_kernel::runner::SettledAnswers`).

use covel_kernel::contract::PointId;
use covel_kernel::runner::{CallReport, ProviderCall};
use foldhash::HashMapExt;
use std::hash::BuildHasher;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Entries kept at most per engine.
const CAPACITY: usize = 4096;

/// How many distinct turns (by the calls' turn id) keep their entries.
pub const RECENT_TURNS: usize = 4;

enum Entry {
    /// Ran once with this answer; trusted after one more identical answer.
    Seen(CallReport),
    Confirmed(CallReport),
    /// Never answered from the memo, and why.
    Uncacheable(String),
}

/// One engine's memo.
pub struct Memo {
    enabled: bool,
    /// Entries by call key, with the hash of the turn they belong to.
    entries: foldhash::HashMap<u64, (u64, Entry)>,
    /// The turns whose entries are kept, most recently asked first.
    turns: Vec<u64>,
    /// Calls whose entry is `Seen`, with their key and turn, in the order they ran.
    unconfirmed: Vec<(u64, u64, ProviderCall)>,
    /// Moves whenever a trusted answer may go or change; shared with whoever reads it without
    /// the engine's lock.
    generation: Arc<AtomicU64>,
}

/// The hasher of call keys and turns: fixed, so that a key is the same for every engine and
/// every run; fast, because a save at 500 plugins asks the memo ≈ 2 100 times (with the standard
/// library's SipHash the key alone cost ≈ 700 instructions a call). The key's inputs are already
/// digests (the input's, the turn's) and a provider's names: a 64-bit mix of them is what the
/// memo has always trusted, and a plugin can reach only its own engine's memo.
const KEY_HASHER: foldhash::quality::FixedState = foldhash::quality::FixedState::with_seed(0xC0FE);

/// The memo's key of one call: what it asks (point, provider, input), for which turn, within
/// which deadline.
pub fn call_key(
    point: PointId,
    provider_id: &str,
    turn: u64,
    input_key: u64,
    timeout: Duration,
) -> u64 {
    KEY_HASHER.hash_one((point.as_str(), provider_id, turn, input_key, timeout))
}

/// The key of a turn (by its id; `None` for calls outside any turn).
pub fn turn_key(turn_id: Option<&str>) -> u64 {
    KEY_HASHER.hash_one(turn_id)
}

impl Memo {
    pub fn new(enabled: bool) -> Memo {
        Memo {
            enabled,
            entries: foldhash::HashMap::new(),
            turns: Vec::with_capacity(RECENT_TURNS + 1),
            unconfirmed: Vec::new(),
            generation: Arc::new(AtomicU64::new(0)),
        }
    }

    /// The memo's generation, to read without the engine's lock.
    pub fn generation(&self) -> Arc<AtomicU64> {
        Arc::clone(&self.generation)
    }

    /// A trusted answer may go or change: whoever took answers under the current generation
    /// must ask again.
    fn moved(&self) {
        self.generation.fetch_add(1, Ordering::AcqRel);
    }

    pub fn clear(&mut self) {
        self.moved();
        self.entries.clear();
        self.turns.clear();
        self.unconfirmed.clear();
    }

    /// Says which turn the next calls belong to (a hash of the turn id): entries of turns
    /// older than the last [`RECENT_TURNS`] are dropped.
    pub fn turn(&mut self, turn: u64) {
        if self.turns.first() == Some(&turn) {
            return;
        }
        self.turns.retain(|t| *t != turn);
        self.turns.insert(0, turn);
        if self.turns.len() > RECENT_TURNS {
            self.moved();
            self.turns.truncate(RECENT_TURNS);
            let kept = &self.turns;
            self.entries.retain(|_, (t, _)| kept.contains(t));
            self.unconfirmed.retain(|(_, t, _)| kept.contains(t));
        }
    }

    /// How many calls the memo holds (answers, pending confirmations and refusals).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The trusted answer for a key, if there is one.
    pub fn answer(&self, key: u64) -> Option<&CallReport> {
        match self.entries.get(&key) {
            Some((_, Entry::Confirmed(report))) if self.enabled => Some(report),
            _ => None,
        }
    }

    /// Records a call that ran; returns why later identical calls will not be answered from the
    /// memo (or `None` when they may be).
    pub fn record(
        &mut self,
        key: u64,
        report: &CallReport,
        impure: Option<&str>,
    ) -> Option<String> {
        if !self.enabled {
            return Some("the memo is off (--no-memo)".into());
        }
        if self.entries.len() >= CAPACITY {
            self.moved();
            self.entries.clear();
            self.unconfirmed.clear();
        }
        // The engine answers a trusted entry without running its call, so this is not expected;
        // should such a call run and be recorded anyway, whatever the entry becomes is no longer
        // the answer taken before (the `Confirmed` arm below keeps the same guard for the memo).
        if matches!(self.entries.get(&key), Some((_, Entry::Confirmed(_)))) {
            self.moved();
        }
        if report.result.is_err() {
            self.entries.remove(&key);
            return Some("failed calls always run again".into());
        }
        let turn = self.turns.first().copied().unwrap_or_default();
        if let Some(reason) = impure {
            self.entries
                .insert(key, (turn, Entry::Uncacheable(reason.to_string())));
            return Some(reason.to_string());
        }
        let next = match self.entries.remove(&key).map(|(_, entry)| entry) {
            None => Entry::Seen(report.clone()),
            // The answer keeps the first run's duration: the run the preview that asked first
            // showed, which its memo answers then say they reuse (`CallReport::ran`).
            Some(Entry::Seen(previous)) if previous.result == report.result => {
                Entry::Confirmed(CallReport {
                    duration: previous.duration,
                    ..report.clone()
                })
            }
            Some(Entry::Seen(_)) => Entry::Uncacheable(
                "its answer changed between identical calls (module-level state?)".into(),
            ),
            Some(Entry::Confirmed(kept)) => Entry::Confirmed(CallReport {
                duration: kept.duration,
                ..report.clone()
            }),
            Some(Entry::Uncacheable(reason)) => Entry::Uncacheable(reason),
        };
        let reason = match &next {
            Entry::Uncacheable(reason) => Some(reason.clone()),
            _ => None,
        };
        self.entries.insert(key, (turn, next));
        reason
    }

    /// Keeps `call` to run again when its entry awaits a second identical answer (it ran once);
    /// otherwise does nothing.
    pub fn keep_unconfirmed(&mut self, key: u64, call: &ProviderCall) {
        if let Some((turn, Entry::Seen(_))) = self.entries.get(&key) {
            self.unconfirmed.push((key, *turn, call.clone()));
        }
    }

    /// Whether calls are kept to run again (some may have been confirmed since by an identical
    /// call; [`Memo::take_unconfirmed`] leaves those out).
    pub fn has_unconfirmed(&self) -> bool {
        !self.unconfirmed.is_empty()
    }

    /// Forgets the kept calls (their entries stay): the shells do it when the preview shown is
    /// recomputed, so that the confirmation runs the calls of that preview only, not those of a
    /// turn already played.
    pub fn forget_unconfirmed(&mut self) {
        self.unconfirmed.clear();
    }

    /// The kept calls whose entries still await their second answer, in the order they ran
    /// (each once); the memo forgets them. Running them again confirms or refuses their entries.
    pub fn take_unconfirmed(&mut self) -> Vec<ProviderCall> {
        let mut taken = std::collections::HashSet::new();
        std::mem::take(&mut self.unconfirmed)
            .into_iter()
            .filter(|(key, _, _)| {
                matches!(self.entries.get(key), Some((_, Entry::Seen(_)))) && taken.insert(*key)
            })
            .map(|(_, _, call)| call)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use covel_kernel::runner::{FailureKind, ProviderFailure};
    use serde_json::json;
    use std::time::Duration;

    fn report(value: serde_json::Value) -> CallReport {
        CallReport {
            result: Ok(std::sync::Arc::new(value)),
            duration: Duration::ZERO,
            logs: Vec::new(),
            notes: Vec::new(),
            cached: false,
            ran: None,
            not_cached: None,
        }
    }

    /// The generation moves exactly when a trusted answer may go or change, so an answer taken
    /// under it is the one the memo would give.
    #[test]
    fn the_generation_moves_whenever_a_trusted_answer_may_go_or_change() {
        let mut memo = Memo::new(true);
        let generation = memo.generation();
        let now = || generation.load(Ordering::Acquire);
        memo.turn(1);
        memo.record(1, &report(json!(1)), None);
        memo.record(1, &report(json!(1)), None);
        memo.record(2, &report(json!(2)), None);
        assert!(memo.answer(1).is_some());
        let before = now();
        // Answering, asking for a recent turn and recording other calls change no trusted
        // answer.
        let _ = memo.answer(1);
        memo.turn(2);
        memo.turn(1);
        memo.record(2, &report(json!(2)), None);
        memo.record(3, &report(json!(3)), Some("reads the clock"));
        assert_eq!(now(), before);
        // A trusted entry recorded again (a call the memo did not answer) moves it.
        memo.record(1, &report(json!(9)), None);
        assert_eq!(now(), before + 1);
        // Evicting a turn's entries moves it.
        for turn in 2..=RECENT_TURNS as u64 + 1 {
            memo.turn(turn);
        }
        assert_eq!(now(), before + 2);
        // So does clearing.
        memo.clear();
        assert_eq!(now(), before + 3);
        // And emptying the memo at capacity.
        let mut full = Memo::new(true);
        let generation = full.generation();
        for key in 0..CAPACITY as u64 {
            full.record(key, &report(json!(key)), None);
        }
        let before = generation.load(Ordering::Acquire);
        full.record(u64::MAX, &report(json!(0)), None);
        assert_eq!(generation.load(Ordering::Acquire), before + 1);
    }

    #[test]
    fn an_answer_is_trusted_only_after_a_second_identical_one() {
        let mut memo = Memo::new(true);
        assert_eq!(memo.record(1, &report(json!(1)), None), None);
        assert!(memo.answer(1).is_none(), "one run is not enough");
        memo.record(1, &report(json!(1)), None);
        assert!(memo.answer(1).is_some());
    }

    /// A memo answer says what running it costs: the duration of the answer's first run (the
    /// run the preview that asked first showed), also after the call ran again.
    #[test]
    fn an_answer_keeps_its_first_runs_duration() {
        let mut memo = Memo::new(true);
        let took = |ms: u64| CallReport {
            duration: Duration::from_millis(ms),
            ..report(json!(1))
        };
        memo.record(1, &took(7), None);
        memo.record(1, &took(3), None);
        assert_eq!(
            memo.answer(1).map(|r| r.duration),
            Some(Duration::from_millis(7))
        );
        memo.record(1, &took(5), None);
        assert_eq!(
            memo.answer(1).map(|r| r.duration),
            Some(Duration::from_millis(7))
        );
    }

    #[test]
    fn changing_answers_clocks_and_failures_are_never_memoized() {
        let mut memo = Memo::new(true);
        memo.record(1, &report(json!(1)), None);
        let why = memo.record(1, &report(json!(2)), None).expect("a reason");
        assert!(why.contains("changed between identical calls"));
        memo.record(1, &report(json!(2)), None);
        assert!(memo.answer(1).is_none(), "stays uncacheable");
        assert_eq!(
            memo.record(2, &report(json!(1)), Some("reads the clock"))
                .as_deref(),
            Some("reads the clock")
        );
        memo.record(2, &report(json!(1)), None);
        assert!(memo.answer(2).is_none());
        let failed = CallReport {
            result: Err(ProviderFailure {
                kind: FailureKind::Timeout,
                message: "t".into(),
            }),
            ..report(json!(null))
        };
        memo.record(3, &failed, None);
        memo.record(3, &failed, None);
        assert!(memo.answer(3).is_none());
    }

    fn call(provider: &str) -> ProviderCall {
        ProviderCall {
            point: covel_kernel::contract::PointId::PromptSegment,
            provider_id: provider.into(),
            input: std::sync::Arc::new(json!({})),
            input_key: 0,
            context: covel_kernel::context::ExecutionContext::empty(),
            timeout: Duration::from_secs(1),
        }
    }

    #[test]
    fn a_call_is_kept_for_confirmation_only_while_its_entry_awaits_a_second_answer() {
        let mut memo = Memo::new(true);
        memo.record(1, &report(json!(1)), None);
        memo.keep_unconfirmed(1, &call("a"));
        memo.record(2, &report(json!(2)), Some("reads the clock"));
        memo.keep_unconfirmed(2, &call("clock"));
        memo.record(3, &report(json!(3)), None);
        memo.keep_unconfirmed(3, &call("b"));
        memo.record(3, &report(json!(3)), None);
        memo.keep_unconfirmed(3, &call("b"));
        let kept: Vec<String> = memo
            .take_unconfirmed()
            .into_iter()
            .map(|c| c.provider_id)
            .collect();
        assert_eq!(kept, ["a"], "refused and confirmed entries are not kept");
        assert!(memo.take_unconfirmed().is_empty(), "taken once");
    }

    #[test]
    fn forgetting_the_kept_calls_leaves_their_entries() {
        let mut memo = Memo::new(true);
        memo.record(1, &report(json!(1)), None);
        memo.keep_unconfirmed(1, &call("a"));
        memo.forget_unconfirmed();
        assert!(memo.take_unconfirmed().is_empty());
        memo.record(1, &report(json!(1)), None);
        assert!(
            memo.answer(1).is_some(),
            "a second identical answer still confirms the entry"
        );
    }

    #[test]
    fn only_the_recent_turns_keep_their_entries() {
        let mut memo = Memo::new(true);
        for turn in 0..20u64 {
            memo.turn(turn);
            for call in 0..3 {
                memo.record(turn * 10 + call, &report(json!(call)), None);
                memo.record(turn * 10 + call, &report(json!(call)), None);
            }
            // Asking an older turn again keeps it among the recent ones.
            if turn > 0 {
                memo.turn(turn - 1);
                assert!(memo.answer((turn - 1) * 10).is_some(), "turn {turn}");
                memo.turn(turn);
            }
        }
        assert_eq!(
            memo.len(),
            3 * RECENT_TURNS,
            "bounded by the recent turns, not by the turns played"
        );
        assert!(memo.answer(190).is_some() && memo.answer(0).is_none());
    }
}
