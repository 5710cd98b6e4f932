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

use covel_kernel::runner::CallReport;
use std::collections::HashMap;

/// Entries kept at most per engine.
const CAPACITY: usize = 4096;

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
    entries: HashMap<u64, Entry>,
}

impl Memo {
    pub fn new(enabled: bool) -> Memo {
        Memo { enabled, entries: HashMap::new() }
    }

    pub fn clear(&mut self) {
        self.entries.clear();
    }

    /// The trusted answer for a key, if there is one.
    pub fn answer(&self, key: u64) -> Option<&CallReport> {
        match self.entries.get(&key) {
            Some(Entry::Confirmed(report)) if self.enabled => Some(report),
            _ => None,
        }
    }

    /// Records a call that ran; returns why later identical calls will not be answered from the
    /// memo (or `None` when they may be).
    pub fn record(&mut self, key: u64, report: &CallReport, impure: Option<&str>) -> Option<String> {
        if !self.enabled {
            return Some("the memo is off (--no-memo)".into());
        }
        if self.entries.len() >= CAPACITY {
            self.entries.clear();
        }
        if report.result.is_err() {
            self.entries.remove(&key);
            return Some("failed calls always run again".into());
        }
        if let Some(reason) = impure {
            self.entries.insert(key, Entry::Uncacheable(reason.to_string()));
            return Some(reason.to_string());
        }
        let next = match self.entries.remove(&key) {
            None => Entry::Seen(report.clone()),
            Some(Entry::Seen(previous)) if previous.result == report.result => Entry::Confirmed(report.clone()),
            Some(Entry::Seen(_)) => Entry::Uncacheable("its answer changed between identical calls (module-level state?)".into()),
            Some(Entry::Confirmed(_)) => Entry::Confirmed(report.clone()),
            Some(Entry::Uncacheable(reason)) => Entry::Uncacheable(reason),
        };
        let reason = match &next {
            Entry::Uncacheable(reason) => Some(reason.clone()),
            _ => None,
        };
        self.entries.insert(key, next);
        reason
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use covel_kernel::runner::{FailureKind, ProviderFailure};
    use serde_json::json;
    use std::time::Duration;

    fn report(value: serde_json::Value) -> CallReport {
        CallReport { result: Ok(value), duration: Duration::ZERO, logs: Vec::new(), cached: false, not_cached: None }
    }

    #[test]
    fn an_answer_is_trusted_only_after_a_second_identical_one() {
        let mut memo = Memo::new(true);
        assert_eq!(memo.record(1, &report(json!(1)), None), None);
        assert!(memo.answer(1).is_none(), "one run is not enough");
        memo.record(1, &report(json!(1)), None);
        assert!(memo.answer(1).is_some());
    }

    #[test]
    fn changing_answers_clocks_and_failures_are_never_memoized() {
        let mut memo = Memo::new(true);
        memo.record(1, &report(json!(1)), None);
        let why = memo.record(1, &report(json!(2)), None).expect("a reason");
        assert!(why.contains("changed between identical calls"));
        memo.record(1, &report(json!(2)), None);
        assert!(memo.answer(1).is_none(), "stays uncacheable");
        assert_eq!(memo.record(2, &report(json!(1)), Some("reads the clock")).as_deref(), Some("reads the clock"));
        memo.record(2, &report(json!(1)), None);
        assert!(memo.answer(2).is_none());
        let failed = CallReport { result: Err(ProviderFailure { kind: FailureKind::Timeout, message: "t".into() }), ..report(json!(null)) };
        memo.record(3, &failed, None);
        memo.record(3, &failed, None);
        assert!(memo.answer(3).is_none());
    }
}
