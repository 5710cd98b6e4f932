//! One engine's deadline: set while plugin code may run (a load, a call, the end of a call),
//! read by the engine's interrupt handler (which stops CPU loops), by the event loop (which
//! stops waiting), by every read of a value out of the engine ([`crate::convert`]) and by the
//! host functions plugin code calls (a gateway request waits no longer than the call may).
//!
//! Engines run their calls on the calling thread, one at a time, so the deadline of the code
//! running on a thread is also kept in a thread-local ([`current`]) for host functions, which
//! are plain functions the engine calls back.

use std::cell::RefCell;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A deadline shared by an engine and its interrupt handler: nanoseconds since `epoch`, 0 for
/// none.
#[derive(Debug, Clone)]
pub struct Deadline {
    at: Arc<AtomicU64>,
    epoch: Instant,
}

thread_local! {
    static CURRENT: RefCell<Option<Deadline>> = const { RefCell::new(None) };
}

impl Default for Deadline {
    fn default() -> Self {
        Deadline::new()
    }
}

impl Deadline {
    pub fn new() -> Deadline {
        Deadline {
            at: Arc::new(AtomicU64::new(0)),
            epoch: Instant::now(),
        }
    }

    /// Plugin code may run for `timeout` from now; until [`Deadline::disarm`], host functions
    /// called on this thread see this deadline.
    pub fn arm(&self, timeout: Duration) {
        let at = self
            .now()
            .saturating_add(u64::try_from(timeout.as_nanos()).unwrap_or(u64::MAX))
            .max(1);
        self.at.store(at, Ordering::Relaxed);
        CURRENT.with(|c| *c.borrow_mut() = Some(self.clone()));
    }

    pub fn disarm(&self) {
        self.at.store(0, Ordering::Relaxed);
        CURRENT.with(|c| *c.borrow_mut() = None);
    }

    /// Whether the deadline is set and passed.
    pub fn expired(&self) -> bool {
        let limit = self.at.load(Ordering::Relaxed);
        limit != 0 && self.now() > limit
    }

    /// What is left until the deadline (zero when none is set).
    pub fn remaining(&self) -> Duration {
        let limit = self.at.load(Ordering::Relaxed);
        Duration::from_nanos(limit.saturating_sub(self.now()))
    }

    /// Milliseconds since the engine started: the clock of its timers (`host.now()`).
    pub fn millis(&self) -> f64 {
        self.epoch.elapsed().as_secs_f64() * 1000.0
    }

    fn now(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }
}

/// The deadline of the plugin code running on this thread, if any.
pub fn current() -> Option<Deadline> {
    CURRENT.with(|c| c.borrow().clone())
}

/// Whether the plugin code running on this thread is past its deadline.
pub fn current_expired() -> bool {
    CURRENT.with(|c| c.borrow().as_ref().is_some_and(Deadline::expired))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_armed_deadline_is_seen_by_this_thread_until_disarmed() {
        let deadline = Deadline::new();
        assert!(current().is_none());
        deadline.arm(Duration::ZERO);
        std::thread::sleep(Duration::from_millis(2));
        assert!(deadline.expired() && current_expired());
        deadline.arm(Duration::from_secs(60));
        assert!(!current_expired());
        assert!(current().is_some_and(|d| d.remaining() > Duration::from_secs(59)));
        deadline.disarm();
        assert!(current().is_none() && !deadline.expired());
        assert_eq!(deadline.remaining(), Duration::ZERO);
    }
}
