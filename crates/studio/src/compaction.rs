//! Running `history.compact@2` for a session: the trigger and input, the provider call with the
//! fast model lent as `ctx.gateway`, the rule-by-rule verdict, the apply, and the failure count.

use crate::models::{Backend, FastGateway};
use crate::workspace::Workspace;
use covel_kernel::compaction::{
    self, Applied, Budget, FailureCounter, TraceEvent, Verdict, Windows,
};
use covel_kernel::context::{ExecutionContext, Gateway};
use covel_kernel::contract::PointId;
use covel_kernel::runner::{self, CallRecord, Outcome, RunOptions};
use serde::Serialize;
use serde_json::Value;
use std::sync::Arc;

/// One compaction run, for the author to inspect.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CompactionRun {
    pub windows: Windows,
    pub budget: Budget,
    pub estimated_tokens: u64,
    /// Compaction runs when the estimate is above this.
    pub threshold_tokens: f64,
    pub triggered: bool,
    pub input: Value,
    /// What the provider returned (or the hand-written output under test).
    pub output: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provided_by: Option<String>,
    pub calls: Vec<CallRecord>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Verdict>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub applied: Option<Applied>,
    /// `context.compaction.failed`, `job-status.updated` and `context.compacted` events.
    pub events: Vec<TraceEvent>,
    pub consecutive_failures: u32,
    /// Why nothing was validated although compaction was due (no active provider).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_compacted_because: Option<String>,
    /// The history an applied compaction replaced (what undoing the turn restores); the
    /// playtest takes it out, it is never shown.
    #[serde(skip)]
    pub replaced: Option<covel_kernel::session::History>,
}

impl CompactionRun {
    /// A run that never started (the turn failed before compaction could be considered).
    pub fn not_run(windows: Windows) -> CompactionRun {
        CompactionRun {
            windows,
            budget: Budget::for_window(windows.context_window),
            estimated_tokens: 0,
            threshold_tokens: f64::from(windows.context_window) * compaction::THRESHOLD,
            triggered: false,
            input: Value::Null,
            output: Value::Null,
            provided_by: None,
            calls: Vec::new(),
            verdict: None,
            applied: None,
            events: Vec::new(),
            consecutive_failures: 0,
            not_compacted_because: None,
            replaced: None,
        }
    }
}

/// How to run compaction.
#[derive(Debug, Clone, Default)]
pub struct CompactionOptions {
    /// Run even under the threshold.
    pub force: bool,
    /// Validate this output instead of calling the provider.
    pub output: Option<Value>,
}

impl Workspace {
    /// The compaction windows from the session's models.
    pub fn windows(&self) -> Windows {
        let m = &self.session.models;
        Windows::new(
            m.story.context_window,
            m.story.reserved_for_response,
            m.fast.context_window,
            m.fast.reserved_for_response,
        )
    }

    /// A gateway over the session's fast model.
    pub fn fast_gateway(&self) -> Gateway {
        Gateway(Arc::new(FastGateway {
            fast: Backend::for_session(&self.session.models.fast, self.session_path.as_deref()),
        }))
    }

    /// Runs compaction over the session's history; applies an accepted result to the session.
    pub fn compact(
        &mut self,
        turn_id: &str,
        system_prompt: &str,
        options: &CompactionOptions,
        counter: &mut FailureCounter,
    ) -> CompactionRun {
        match self.begin_compaction(turn_id, system_prompt, options, counter) {
            Ok(mut pending) => {
                pending.call();
                self.finish_compaction(pending, counter)
            }
            Err(done) => *done,
        }
    }

    /// The first step of a compaction: the trigger and the input. `Err` when nothing is to run
    /// (under the threshold): the finished run. The provider call of the pending compaction
    /// ([`PendingCompaction::call`]) needs no access to the workspace, so a studio can run it
    /// without its lock while a provider waits for the fast model.
    pub fn begin_compaction(
        &self,
        turn_id: &str,
        system_prompt: &str,
        options: &CompactionOptions,
        counter: &mut FailureCounter,
    ) -> Result<PendingCompaction, Box<CompactionRun>> {
        let windows = self.windows();
        let budget = Budget::for_window(windows.context_window);
        let messages = self.session.history.messages.clone();
        let summaries = self.session.history.summaries.clone();
        let estimated = compaction::estimate(system_prompt, &messages, &summaries);
        let triggered = options.force
            || options.output.is_some()
            || compaction::over_threshold(estimated, windows);
        let input = compaction::input(
            &messages,
            &summaries,
            windows,
            estimated,
            &self.session.locale,
        );
        let mut run = CompactionRun {
            estimated_tokens: estimated,
            triggered,
            input: input.clone(),
            consecutive_failures: counter.consecutive,
            ..CompactionRun::not_run(windows)
        };
        if !triggered {
            counter.succeed();
            run.consecutive_failures = 0;
            return Err(Box::new(run));
        }
        let source = match &options.output {
            Some(output) => Source::HandWritten(output.clone()),
            None => {
                let mut ctx = (*self.execution(Some(turn_id.to_string()))).clone();
                ctx.execution_id = ExecutionContext::next_id();
                ctx.gateway = Some(self.fast_gateway());
                Source::Provider {
                    providers: self.active_providers(),
                    ctx: Arc::new(ctx),
                    input,
                    result: None,
                }
            }
        };
        Ok(PendingCompaction {
            run,
            source,
            turn_id: turn_id.to_string(),
            session_id: self.session.id.clone(),
            messages,
            summaries,
            budget,
        })
    }

    /// The last step of a compaction: the provider's output judged rule by rule against the
    /// history the input was built from, and an accepted result applied to the session. The
    /// caller makes sure the session's history is still that one.
    pub fn finish_compaction(
        &mut self,
        pending: PendingCompaction,
        counter: &mut FailureCounter,
    ) -> CompactionRun {
        let PendingCompaction {
            mut run,
            source,
            turn_id,
            session_id,
            messages,
            summaries,
            budget,
        } = pending;
        let turn_id = turn_id.as_str();
        let (output, provider) = match source {
            Source::HandWritten(output) => (output, ("(hand-written)".to_string(), String::new())),
            Source::Provider {
                providers,
                ctx,
                input,
                result,
            } => {
                let result = result.map_or_else(|| run_provider(input, &providers, &ctx), |r| *r);
                run.calls = result.calls.clone();
                run.provided_by = result.provided_by.clone();
                if result.calls.is_empty() && result.error.is_none() {
                    run.not_compacted_because = Some(format!(
                        "no active plugin of this session provides {}: the history stays as it is (add a provider, or check `covel resolve`)",
                        PointId::HistoryCompact.as_str()
                    ));
                    return run;
                }
                let provider = result
                    .calls
                    .first()
                    .map(|c| (c.plugin_id.to_string(), c.provider_id.to_string()))
                    .unwrap_or_default();
                // A throwing (or invalid) provider is skipped and recorded as a compaction
                // failure; the next turn over the threshold tries again.
                if let Some(failed) = result.calls.iter().find(|c| c.outcome != Outcome::Success) {
                    let reason = failed
                        .message
                        .clone()
                        .unwrap_or_else(|| format!("{:?}", failed.outcome));
                    run.events = counter.fail(&provider.0, &provider.1, &reason, turn_id);
                    run.consecutive_failures = counter.consecutive;
                    return run;
                }
                if let Some(error) = result.error {
                    run.events = counter.fail(
                        PointId::HistoryCompact.as_str(),
                        "",
                        &error.to_string(),
                        turn_id,
                    );
                    run.consecutive_failures = counter.consecutive;
                    return run;
                }
                (result.result, provider)
            }
        };
        run.output = output.clone();
        let verdict = compaction::validate(&output, &session_id, &messages, &summaries, budget);
        if verdict.nothing_to_compact {
            counter.succeed();
        } else if !verdict.accepted {
            let reason = format!(
                "Invalid history compaction result: {}",
                verdict.reason().unwrap_or_default()
            );
            run.events = counter.fail(&provider.0, &provider.1, &reason, turn_id);
        } else {
            let mut next = summaries.len();
            let applied = compaction::apply(
                &output,
                &session_id,
                &messages,
                &summaries,
                || {
                    next += 1;
                    format!("summary-{turn_id}-{next}")
                },
                "2026-01-01T00:00:00Z",
            );
            self.session.history.summaries = applied.summaries.clone();
            self.session.history.messages = applied.messages.clone();
            run.events.push(TraceEvent {
                topic: "context.compacted",
                payload: serde_json::json!({
                    "summaryIds": applied.written,
                    "messagesCompacted": applied.messages.iter().filter(|m| compaction::is_compacted(m)).count()
                        - messages.iter().filter(|m| compaction::is_compacted(m)).count(),
                    "totalSummaryTokens": verdict.total_tokens,
                    "summaryTruncated": output["summaries"].as_array().is_some_and(|s| s.iter().any(|x| x["truncated"] == true)),
                }),
            });
            match &verdict.deferred {
                // Saved as usual, and counted as one failure.
                Some(reason) => {
                    run.events
                        .extend(counter.fail(&provider.0, &provider.1, reason, turn_id))
                }
                None => counter.succeed(),
            }
            run.applied = Some(applied);
            run.replaced = Some(covel_kernel::session::History {
                messages,
                summaries,
            });
        }
        run.verdict = Some(verdict);
        run.consecutive_failures = counter.consecutive;
        run
    }
}

/// A compaction that is due, between its input and its verdict (see
/// [`Workspace::begin_compaction`]).
pub struct PendingCompaction {
    run: CompactionRun,
    source: Source,
    turn_id: String,
    session_id: String,
    /// The history the input was built from, which the verdict judges against.
    messages: Vec<Value>,
    summaries: Vec<Value>,
    budget: Budget,
}

/// Where a pending compaction's output comes from.
enum Source {
    HandWritten(Value),
    Provider {
        providers: Vec<runner::Provider>,
        ctx: Arc<ExecutionContext>,
        input: Value,
        /// The provider's answer, once [`PendingCompaction::call`] ran it.
        result: Option<Box<runner::RunResult>>,
    },
}

impl PendingCompaction {
    /// Runs the compaction provider (it may wait for the fast model through `ctx.gateway`),
    /// without access to the workspace. A second call does nothing.
    pub fn call(&mut self) {
        if let Source::Provider {
            providers,
            ctx,
            input,
            result: result @ None,
        } = &mut self.source
        {
            *result = Some(Box::new(run_provider(input.clone(), providers, ctx)));
        }
    }

    /// The run as it stands, marked as not applied: the session changed while the provider ran
    /// (an undo, a session edit or another turn), so its output answers a history that is gone.
    pub fn abandoned(self) -> CompactionRun {
        let mut run = self.run;
        if let Source::Provider {
            result: Some(result),
            ..
        } = self.source
        {
            run.calls = result.calls;
            run.provided_by = result.provided_by;
        }
        run.not_compacted_because = Some(
            "the session changed while compaction ran (an undo, a session edit or another turn): \
             its output was not applied, and compaction is considered again after the next turn"
                .into(),
        );
        run
    }
}

fn run_provider(
    input: Value,
    providers: &[runner::Provider],
    ctx: &Arc<ExecutionContext>,
) -> runner::RunResult {
    runner::run(
        PointId::HistoryCompact,
        input,
        providers,
        ctx,
        &RunOptions::default(),
    )
}
