//! Driving a value to completion: a promise runs through the job queue and the bootstrap's
//! timers until it settles or the engine's deadline passes.

use super::*;

pub(super) enum Settled<'js> {
    Value(Value<'js>),
    Threw(Thrown),
    Timeout(String),
}

impl Engine {
    /// Runs a value to completion: a promise is driven through the job queue and the timers
    /// until it settles or the deadline passes.
    pub(super) fn drive<'js>(
        &self,
        ctx: &Ctx<'js>,
        covel: &Object<'js>,
        value: Value<'js>,
    ) -> Settled<'js> {
        let Some(promise) = value.as_promise().cloned() else {
            return Settled::Value(value);
        };
        loop {
            match promise.state() {
                PromiseState::Resolved => {
                    return match promise.result::<Value>() {
                        Some(Ok(v)) => Settled::Value(v),
                        _ => Settled::Threw(thrown(ctx)),
                    };
                }
                PromiseState::Rejected => {
                    let _ = promise.result::<Value>();
                    return Settled::Threw(thrown(ctx));
                }
                PromiseState::Pending => {}
            }
            if self.expired() {
                return Settled::Timeout(
                    "the deadline passed while the promise was pending".into(),
                );
            }
            if ctx.execute_pending_job() {
                continue;
            }
            let due: f64 = covel
                .get::<_, Function>("nextTimerDue")
                .and_then(|f| f.call(()))
                .unwrap_or(-1.0);
            if due < 0.0 {
                return Settled::Timeout(
                    "the promise can never settle: no job or timer is pending".into(),
                );
            }
            // `due` is plugin-influenced (a timer's delay): a wait the clock cannot represent
            // (infinite, or past ~5e11 years) is a wait past every deadline.
            let wait =
                Duration::try_from_secs_f64((due - self.deadline.millis()).max(0.0) / 1000.0)
                    .unwrap_or(Duration::MAX);
            if wait >= self.remaining() {
                std::thread::sleep(self.remaining());
                return Settled::Timeout("the deadline passed while waiting for a timer".into());
            }
            std::thread::sleep(wait);
            if let Ok(fire) = covel.get::<_, Function>("fireDueTimers")
                && fire.call::<_, ()>(()).is_err()
            {
                // A throwing timer callback is an uncaught error inside the handler's work; the
                // exception is cleared so the promise can still settle or time out.
                let _ = ctx.catch();
            }
        }
    }
}
