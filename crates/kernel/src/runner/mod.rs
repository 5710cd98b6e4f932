//! The runner: calls the providers of one extension point by its mode, in the kernel's order,
//! validating input and every output, stamping provenance, applying `onError`, and leaving a
//! trace entry for every call (the reason a provider was skipped is never only in a log).

mod attribution;
mod batch;
mod checked;
mod order;
mod settled;
mod trace;

pub use batch::{RunRequest, run_all};
pub use checked::CheckedOutputs;
pub(crate) use checked::holds;
pub use order::{SortKey, presort_providers, sort_providers, utf16_cmp};
pub use settled::SettledAnswers;
pub use trace::{CallRecord, Outcome};

use crate::context::ExecutionContext;
use crate::contract::{Mode, OnError, PointId, SchemaError, SlotId};
use crate::manifest::ExtensionDecl;
use crate::prompt::ProvidedSegments;
use serde::Serialize;
use serde_json::Value;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How a provider call failed inside the engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FailureKind {
    /// Over the point's timeout: a CPU loop interrupted, or a promise that did not settle.
    Timeout,
    /// The handler threw or its promise rejected.
    Error,
    /// The handler exhausted the plugin's memory limit.
    OutOfMemory,
    /// The plugin's runtime is gone (unloaded, crashed).
    Unavailable,
    /// The handler returned something that cannot be an output at all (over the conversion
    /// budget, a function, a BigInt): reported like a schema violation.
    InvalidOutput,
}

/// A failed call, as the engine reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProviderFailure {
    pub kind: FailureKind,
    pub message: String,
}

/// What an engine reports for one call.
#[derive(Debug, Clone)]
pub struct CallReport {
    /// Shared: an engine answering from its memo hands out the same value each time, and the
    /// runner recognises a memo answer it already checked by that ([`CheckedOutputs`]).
    pub result: Result<Arc<Value>, ProviderFailure>,
    /// Time spent in the engine for this call.
    pub duration: Duration,
    /// What the handler printed (`console.*`), captured for the trace.
    pub logs: Vec<String>,
    /// What the studio has to say about the call (a log cut short, a timer clamped, a
    /// row-shaped read): its own notes, never mixed with what the handler printed.
    pub notes: Vec<String>,
    /// Answered from the engine's memo: same input, same visible data as an earlier call.
    pub cached: bool,
    /// For a memo answer: how long the first run of the answer it reuses took (its own
    /// `duration` is the lookup's), so that the trace still says what running it costs.
    pub ran: Option<Duration>,
    /// Why identical calls will not be answered from the memo (clock, randomness, changing
    /// answers, failure, memo off), when that is known.
    pub not_cached: Option<String>,
}

/// One provider call request.
#[derive(Debug, Clone)]
pub struct ProviderCall {
    pub point: PointId,
    pub provider_id: String,
    /// Shared: a collect run hands the same input to every provider.
    pub input: Arc<Value>,
    /// Hash of `input`, computed once per run step (engines key their memo on it).
    pub input_key: u64,
    pub context: Arc<ExecutionContext>,
    pub timeout: Duration,
}

/// One call of a plugin's tool or hook handler in the turn loop. Unlike a provider call it is
/// never answered from a memo: tools and hooks act on the turn.
#[derive(Debug, Clone)]
pub struct HandlerCall {
    /// The handler's key in the plugin's runtime: `tool:<name>` or a hook's `hook:<n>`.
    pub key: String,
    pub input: Value,
    pub context: Arc<ExecutionContext>,
    pub timeout: Duration,
    /// The plugin id the handler's `ctx.pluginId` names: the tool's own plugin, or for a hook
    /// the runtime the event is about.
    pub ctx_plugin_id: String,
}

/// Something that can run a plugin's handlers: covel-js's QuickJS runtime, or a Rust closure in
/// tests. A call runs to completion on the caller's thread (the engine enforces the timeout it
/// was given); `collect` calls different plugins' invokers from several threads at once.
pub trait Invoker: Send + Sync {
    fn call(&self, call: &ProviderCall) -> CallReport;

    /// Runs a tool or hook handler (see [`HandlerCall`]); an invoker that has none answers
    /// `Unavailable`.
    fn call_handler(&self, call: &HandlerCall) -> CallReport {
        CallReport {
            result: Err(ProviderFailure {
                kind: FailureKind::Unavailable,
                message: format!("no handler {} here", call.key),
            }),
            duration: Duration::ZERO,
            logs: Vec::new(),
            notes: Vec::new(),
            cached: false,
            ran: None,
            not_cached: None,
        }
    }

    /// A number that moves whenever an answer the invoker's memo holds may go or change (the
    /// memo cleared, an entry evicted or replaced), read without waiting for a call to end;
    /// `None` when it has no memo or cannot answer at all. While it stays, an identical call
    /// gets the same memo answer, which the runner then takes again without asking
    /// ([`SettledAnswers`]).
    fn memo_generation(&self) -> Option<u64> {
        None
    }
}

/// A registered provider: the declaration from PLUGIN.md plus who runs it.
#[derive(Clone)]
pub struct Provider {
    pub plugin_id: String,
    /// Shared with every other copy of this provider (a preview copies the active providers).
    pub decl: Arc<ExtensionDecl>,
    /// Full ids of the plugin's runtimes (for ownership checks of world context and image flow).
    pub runtime_ids: Arc<Vec<String>>,
    pub invoker: Arc<dyn Invoker>,
    /// The memo answers of this provider the runner already checked and attributed.
    pub checked: Arc<CheckedOutputs>,
    /// The memo answers of this provider the runner settled, to take again without asking.
    pub settled: Arc<SettledAnswers>,
}

impl std::fmt::Debug for Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Provider")
            .field("plugin_id", &self.plugin_id)
            .field("decl", &self.decl)
            .finish_non_exhaustive()
    }
}

/// Why a run as a whole failed (as opposed to one provider being skipped).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[serde(tag = "code", rename_all = "kebab-case")]
pub enum RunError {
    /// The caller's input does not match the point's input schema (never subject to onError).
    #[error("invalid input: {detail}")]
    InvalidInput { detail: String },
    /// A `single` point with more than one provider; raised before any provider runs.
    #[error("conflicting providers for single extension point {point}: {}", providers.join(", "))]
    ConflictingProviders {
        point: String,
        providers: Vec<String>,
    },
    /// A provider of a `fail-turn` point failed; the whole turn fails.
    #[error("provider {provider} of {point} failed and the point fails the turn: {message}")]
    FailTurn {
        point: String,
        provider: String,
        message: String,
    },
    /// A pipeline output could not become the next input: the kernel contract itself broke.
    #[error("pipeline contract broken after {provider}: {detail}")]
    PipelineContract { provider: String, detail: String },
}

/// The result of one run.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunResult {
    pub point: PointId,
    pub mode: Mode,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slot: Option<SlotId>,
    /// `collect`: the array of outputs (flattened for prompt segments). `pipeline`: the final
    /// value. `single`: the output, or `null` when no provider answered (the call site decides).
    pub result: Value,
    /// For `single`: which provider answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provided_by: Option<String>,
    pub calls: Vec<CallRecord>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<RunError>,
    /// With [`RunOptions::shared_segments`], a `prompt.segment@1` run's outputs (each
    /// provider's checked segment array, in chain order, with the plugin id its segments are
    /// stamped with when read) instead of `result`, which stays `null`: the assembly reads them
    /// where they are (`Segment::parse_parts`), without a copy of each.
    #[serde(skip)]
    pub parts: Vec<ProvidedSegments>,
}

/// Options of one run.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// For `ui.slot@1`: the slot to project (taken from the input when absent).
    pub slot: Option<SlotId>,
    /// Overrides the point's timeout (tests and simulators only).
    pub timeout: Option<Duration>,
    /// For `prompt.segment@1`: hand the outputs as [`RunResult::parts`], not concatenated.
    pub shared_segments: bool,
}

/// Runs one extension point over the given providers (the active, authorized ones).
pub fn run(
    point_id: PointId,
    input: Value,
    providers: &[Provider],
    ctx: &Arc<ExecutionContext>,
    options: &RunOptions,
) -> RunResult {
    let point = point_id.point();
    let slot = slot_of(&input, options);
    let mut out = RunResult {
        point: point_id,
        mode: point.mode,
        slot,
        result: Value::Null,
        provided_by: None,
        calls: Vec::new(),
        error: None,
        parts: Vec::new(),
    };
    // The input is validated against the point's schema before any provider runs (every
    // output is validated too, in `settle`).
    if let Err(e) = point.input.check(&input) {
        out.error = Some(RunError::InvalidInput {
            detail: e.to_string(),
        });
        return out;
    }
    let chain = sort_providers(providers.iter().filter(|p| in_chain(p, point_id, slot)));
    // A `single` point with several providers fails before any of them runs.
    if point.mode == Mode::Single && chain.len() > 1 {
        out.error = Some(RunError::ConflictingProviders {
            point: point_id.to_string(),
            providers: chain
                .iter()
                .map(|p| format!("{}/{}", p.plugin_id, p.decl.id))
                .collect(),
        });
        return out;
    }
    out.calls.reserve_exact(chain.len());
    let run = Run {
        point_id,
        point,
        slot,
        ctx,
        options,
        timeout: options.timeout.unwrap_or(point.timeout),
    };
    match point.mode {
        Mode::Collect => run.collect(&chain, input, &mut out),
        Mode::Pipeline => run.pipeline(&chain, input, &mut out),
        Mode::Single => run.single(&chain, input, &mut out),
    }
    out
}

/// One run of a point over its sorted chain of providers.
struct Run<'a> {
    point_id: PointId,
    point: &'static crate::contract::ExtensionPoint,
    slot: Option<SlotId>,
    ctx: &'a Arc<ExecutionContext>,
    options: &'a RunOptions,
    timeout: Duration,
}

impl Run<'_> {
    /// Asks one provider with its own input. The input goes to the provider behind an `Arc` and
    /// comes back owned once the call is over, so a value passed along a chain is not
    /// deep-copied; only when the engine kept the call (covel-js keeps a call that ran once, to
    /// run it again while the author is idle) is it copied here.
    fn ask_one(&self, provider: &Provider, input: Value) -> (Settled, Value) {
        let input_key = crate::context::hash_value(&input);
        let identity = settled::CallIdentity::of(
            self.point_id,
            self.slot,
            false,
            input_key,
            self.ctx,
            self.timeout,
        );
        let input = Arc::new(input);
        let settled = ask(provider, identity.as_ref(), self.slot, false, || {
            ProviderCall {
                point: self.point_id,
                provider_id: provider.decl.id.clone(),
                input_key,
                input: Arc::clone(&input),
                context: Arc::clone(self.ctx),
                timeout: self.timeout,
            }
        });
        (settled, Arc::unwrap_or_clone(input))
    }

    /// `collect`: every provider's validated output is gathered, in chain order. Each plugin's
    /// calls run in order on its own engine; different plugins' engines run in parallel across
    /// the cores. Outputs are checked where they ran, then gathered in chain order (the first
    /// failure of a fail-turn point in that order fails the turn).
    fn collect(&self, chain: &[&Provider], input: Value, out: &mut RunResult) {
        let groups = engine_groups(chain);
        let input_key = crate::context::hash_value(&input);
        let shared_input = Arc::new(input);
        let shared = self.options.shared_segments;
        let identity = settled::CallIdentity::of(
            self.point_id,
            self.slot,
            shared,
            input_key,
            self.ctx,
            self.timeout,
        );
        let run_group = |members: &Vec<usize>| -> Vec<(usize, Settled)> {
            members
                .iter()
                .map(|&i| {
                    let provider = chain[i];
                    let settled = ask(provider, identity.as_ref(), self.slot, shared, || {
                        ProviderCall {
                            point: self.point_id,
                            provider_id: provider.decl.id.clone(),
                            input: Arc::clone(&shared_input),
                            input_key,
                            context: Arc::clone(self.ctx),
                            timeout: self.timeout,
                        }
                    });
                    (i, settled)
                })
                .collect()
        };
        let ran: Vec<Vec<(usize, Settled)>> = if groups.len() > 1 {
            use rayon::prelude::*;
            groups.par_iter().map(run_group).collect()
        } else {
            groups.iter().map(run_group).collect()
        };
        let mut settled: Vec<Option<Settled>> = chain.iter().map(|_| None).collect();
        for (i, one) in ran.into_iter().flatten() {
            settled[i] = Some(one);
        }
        // Each successful output with the plugin id of the provider that gave it (its record's,
        // shared), in chain order.
        let mut gathered: Vec<(Arc<str>, Arc<Value>)> = Vec::with_capacity(chain.len());
        for (provider, (record, result)) in chain.iter().zip(settled.into_iter().flatten()) {
            let plugin_id = Arc::clone(&record.plugin_id);
            out.calls.push(record);
            match result {
                Ok(value) => gathered.push((plugin_id, value)),
                // A failed or invalid output fails the whole call at an `onError: fail-turn`
                // point; at a `skip` point it is skipped and the run continues: `collect`
                // gathers every output that passed validation, and only those.
                Err(message) => {
                    if self.point.on_error == OnError::FailTurn {
                        out.error = Some(fail_turn(self.point_id, provider, message));
                        return;
                    }
                }
            }
        }
        // A checked output kept for the memo's next answer is shared: it is copied here, unless
        // the caller takes the segments as they are.
        let outputs = gathered.into_iter();
        out.result = match self.point_id {
            PointId::PromptSegment if shared => {
                out.parts = outputs
                    .map(|(plugin_id, output)| ProvidedSegments { plugin_id, output })
                    .collect();
                Value::Null
            }
            PointId::PromptSegment => Value::Array(
                outputs
                    .flat_map(|(_, v)| match Arc::unwrap_or_clone(v) {
                        Value::Array(items) => items,
                        _ => Vec::new(),
                    })
                    .collect(),
            ),
            _ => Value::Array(outputs.map(|(_, v)| Arc::unwrap_or_clone(v)).collect()),
        };
    }

    /// `pipeline`: each provider gets the previous valid result, in chain order; a provider
    /// that fails or answers an invalid output is skipped (`onError: skip`) and the next one
    /// gets the input it would have got, so a slot keeps its previous valid value. The value
    /// that grows along the chain (a slot's `previous`, the history) moves from step to step:
    /// each step copies only what the provider returned.
    fn pipeline(&self, chain: &[&Provider], input: Value, out: &mut RunResult) {
        let mut current = input;
        let mut last: Option<Value> = None;
        for provider in chain {
            let ((record, result), given) = self.ask_one(provider, current);
            current = given;
            out.calls.push(record);
            match result {
                Ok(value) => {
                    match next_input(self.point_id, current, Arc::unwrap_or_clone(value)) {
                        Ok((next, kept)) => {
                            current = next;
                            last = kept;
                        }
                        Err(detail) => {
                            out.error = Some(RunError::PipelineContract {
                                provider: format!("{}/{}", provider.plugin_id, provider.decl.id),
                                detail,
                            });
                            return;
                        }
                    }
                }
                // At a `skip` point a failed or invalid step is skipped and leaves the next input
                // as it was, so the pipeline answers its last valid output; for `ui.slot@1` this
                // is the seed's "an invalid slot output skips that provider and keeps the
                // previous valid value" (`previous` still holds it).
                Err(message) => {
                    if self.point.on_error == OnError::FailTurn {
                        out.error = Some(fail_turn(self.point_id, provider, message));
                        return;
                    }
                }
            }
        }
        // No output kept: none succeeded, or the next input holds the last one.
        out.result = match last {
            Some(value) => value,
            None => output_held_by(self.point_id, current),
        };
    }

    /// `single`: the one provider answers; with none, the result stays `null` and the call site
    /// decides the default.
    fn single(&self, chain: &[&Provider], input: Value, out: &mut RunResult) {
        let Some(provider) = chain.first() else {
            return;
        };
        let ((record, result), _) = self.ask_one(provider, input);
        out.calls.push(record);
        match result {
            Ok(value) => {
                out.provided_by = Some(provider.plugin_id.clone());
                out.result = Arc::unwrap_or_clone(value);
            }
            Err(message) => {
                if self.point.on_error == OnError::FailTurn {
                    out.error = Some(fail_turn(self.point_id, provider, message));
                }
            }
        }
    }
}

/// The slot a run projects: the option's, else the input's `slot`.
pub(crate) fn slot_of(input: &Value, options: &RunOptions) -> Option<SlotId> {
    options.slot.or_else(|| {
        input
            .get("slot")
            .and_then(Value::as_str)
            .and_then(SlotId::parse)
    })
}

/// Which engine runs a provider: providers of one plugin share their invoker, and calls on one
/// engine never overlap and keep their order.
pub(crate) fn engine_of(provider: &Provider) -> *const () {
    Arc::as_ptr(&provider.invoker) as *const ()
}

/// Whether a provider belongs to the chain of a run of `point` (for a slot, of that slot).
pub(crate) fn in_chain(provider: &Provider, point: PointId, slot: Option<SlotId>) -> bool {
    provider.decl.point == point && (point != PointId::UiSlot || provider.decl.slot == slot)
}

fn fail_turn(point: PointId, provider: &Provider, message: String) -> RunError {
    RunError::FailTurn {
        point: point.to_string(),
        provider: format!("{}/{}", provider.plugin_id, provider.decl.id),
        message,
    }
}

/// A call's trace entry, and its checked output or why it was skipped.
type Settled = (CallRecord, Result<Arc<Value>, String>);

/// One call of `provider`, in any mode: the memo answer it settled for the same call (same
/// `identity`), taken again without asking while its engine's memo generation has not moved
/// ([`SettledAnswers`]); else the engine's answer to `call`, checked, and kept for the next
/// identical call when it came from the memo. The generation is read before the call, so a
/// move during it makes the next identical call ask again.
fn ask(
    provider: &Provider,
    identity: Option<&settled::CallIdentity>,
    slot: Option<SlotId>,
    shared_segments: bool,
    call: impl FnOnce() -> ProviderCall,
) -> Settled {
    let reusable = identity.and_then(|id| Some((id, provider.invoker.memo_generation()?)));
    if let Some((id, generation)) = reusable
        && let Some((record, output)) = provider.settled.get(id, generation)
    {
        return (record, Ok(output));
    }
    let call = call();
    let started = Instant::now();
    let report = provider.invoker.call(&call);
    let settled = settle(call.point, slot, provider, report, started, shared_segments);
    if let (Some((id, generation)), (record, Ok(output))) = (reusable, &settled)
        && record.cached
    {
        provider.settled.keep(id, generation, record, output);
    }
    settled
}

/// Checks one call's report: the output against the point's schema and provenance; the record
/// says how the call ended. A memo answer already checked is not checked again
/// ([`CheckedOutputs`]); one not seen yet is kept once checked.
fn settle(
    point: PointId,
    slot: Option<SlotId>,
    provider: &Provider,
    report: CallReport,
    started: Instant,
    shared_segments: bool,
) -> Settled {
    let duration = if report.duration.is_zero() {
        started.elapsed()
    } else {
        report.duration
    };
    let mut record = CallRecord::new(point, provider, duration);
    record.logs = report.logs;
    record.notes = report.notes;
    record.cached = report.cached;
    record.ran_ms = report.ran.map(|ran| ran.as_secs_f64() * 1000.0);
    record.not_cached = report.not_cached;
    let outcome = match report.result {
        Err(failure) => Err((Outcome::from(failure.kind), failure.message)),
        Ok(raw) => match report
            .cached
            .then(|| provider.checked.get(&raw, (slot, shared_segments)))
            .flatten()
        {
            Some(checked) => Ok(checked),
            None => {
                // Only a memo answer is kept (it will come again); a call that ran is stamped in
                // place when nothing else holds its output.
                let memo_answer = report.cached.then(|| Arc::clone(&raw));
                match check_output(point, slot, &raw)
                    .and_then(|()| attribution::attribute(point, provider, raw, shared_segments))
                {
                    Ok(checked) => {
                        if let Some(raw) = memo_answer {
                            let reading = (slot, shared_segments);
                            provider.checked.keep(&raw, reading, &checked);
                        }
                        Ok(checked)
                    }
                    Err(detail) => Err((Outcome::InvalidOutput, detail)),
                }
            }
        },
    };
    match outcome {
        Ok(value) => {
            record.outcome = Outcome::Success;
            (record, Ok(value))
        }
        Err((outcome, message)) => {
            record.outcome = outcome;
            record.error_code = Some(outcome.error_code().to_string());
            record.message = Some(message.clone());
            (record, Err(message))
        }
    }
}

/// The chain's providers grouped by engine (a plugin's providers share one), in order of first
/// appearance; each group lists chain positions in chain order.
fn engine_groups(chain: &[&Provider]) -> Vec<Vec<usize>> {
    use foldhash::HashMapExt;
    // Each position's group first, then every group allocated at its size: a plugin usually
    // brings more than one provider to a chain, and growing each group as it fills reallocated
    // hundreds of times a preview at 500 plugins.
    let mut group_of: foldhash::HashMap<*const (), usize> =
        foldhash::HashMap::with_capacity(chain.len());
    let mut sizes: Vec<usize> = Vec::new();
    let positions: Vec<usize> = chain
        .iter()
        .map(|provider| {
            let next = group_of.len();
            let group = *group_of.entry(engine_of(provider)).or_insert(next);
            if group == sizes.len() {
                sizes.push(0);
            }
            sizes[group] += 1;
            group
        })
        .collect();
    let mut groups: Vec<Vec<usize>> = sizes.into_iter().map(Vec::with_capacity).collect();
    for (index, group) in positions.into_iter().enumerate() {
        groups[group].push(index);
    }
    groups
}

fn check_output(point: PointId, slot: Option<SlotId>, value: &Value) -> Result<(), String> {
    let result: Result<(), SchemaError> = match (point, slot) {
        (PointId::UiSlot, _) if value.is_null() => Ok(()),
        (PointId::UiSlot, Some(slot)) => slot.value_validator().check(value),
        _ => point.point().output.check(value),
    };
    result.map_err(|e| e.to_string())?;
    if point == PointId::PromptSegment {
        repeated_segment_id(value)?;
    }
    Ok(())
}

/// Segment ids are unique per provider (upstream's segment shape says so; the seed page is
/// silent). A repeat makes the output invalid, like any other broken segment: the provider is
/// skipped and the message says which items collide. Two providers of one plugin may share an
/// id; what compares rows then pairs them by rank (`prompt::row_keys`).
fn repeated_segment_id(segments: &Value) -> Result<(), String> {
    let items = segments.as_array().map(Vec::as_slice).unwrap_or_default();
    let id = |i: usize| items[i].get("id").and_then(Value::as_str);
    // Most providers send one to three segments: comparing them pairwise allocates nothing.
    let repeat = if items.len() <= 16 {
        (1..items.len()).find_map(|index| {
            let this = id(index)?;
            let first = (0..index).find(|&other| id(other) == Some(this))?;
            Some((index, first, this))
        })
    } else {
        let mut first_at = std::collections::HashMap::with_capacity(items.len());
        (0..items.len()).find_map(|index| {
            let this = id(index)?;
            first_at
                .insert(this, index)
                .map(|first| (index, first, this))
        })
    };
    match repeat {
        Some((index, first, id)) => Err(format!(
            "does not match prompt.segment@1 output: at /{index}/id: `{id}` is also the id of /{first}; segment ids are unique per provider (rename one, e.g. `{id}-2`)"
        )),
        None => Ok(()),
    }
}

/// The input of the next pipeline provider, built from this step's input and output, and what
/// the run answers if this output stays the last one (`None` when the next input already holds
/// it: a slot's `previous`).
fn next_input(
    point: PointId,
    current: Value,
    output: Value,
) -> Result<(Value, Option<Value>), String> {
    let (next, last) = match point {
        PointId::UiSlot => {
            let mut next = current;
            if let Some(map) = next.as_object_mut() {
                map.insert("previous".into(), output);
                (next, None)
            } else {
                (next, Some(output))
            }
        }
        _ => match (current, output.as_object()) {
            (Value::Object(mut merged), Some(out)) => {
                merged.extend(out.clone());
                (Value::Object(merged), Some(output))
            }
            _ => (output.clone(), Some(output)),
        },
    };
    point
        .point()
        .input
        .check(&next)
        .map_err(|e| e.to_string())?;
    Ok((next, last))
}

/// What a pipeline returns when no provider's output is kept: the input's value for the point
/// (for a slot, its `previous`, which holds the last output when one succeeded).
fn output_held_by(point: PointId, mut input: Value) -> Value {
    let mut field = |name: &str| input.get_mut(name).map(Value::take);
    match point {
        PointId::UiSlot => field("previous").unwrap_or(Value::Null),
        PointId::PromptHistoryTransform => {
            serde_json::json!({"messages": field("messages").unwrap_or_else(|| Value::Array(vec![]))})
        }
        _ => input,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Never;
    impl Invoker for Never {
        fn call(&self, _: &ProviderCall) -> CallReport {
            unreachable!("never called: only grouped")
        }
    }

    fn provider(engine: &Arc<dyn Invoker>) -> Provider {
        Provider {
            plugin_id: "p".into(),
            decl: Arc::new(ExtensionDecl::new(PointId::PromptSegment, "s", 0)),
            runtime_ids: Arc::new(Vec::new()),
            invoker: Arc::clone(engine),
            checked: Default::default(),
            settled: Default::default(),
        }
    }

    /// An engine whose memo answers every call with its current answer, and whose memo
    /// generation moves when the answer is replaced.
    struct Answering {
        answer: std::sync::Mutex<Value>,
        generation: std::sync::atomic::AtomicU64,
        asked: std::sync::atomic::AtomicUsize,
    }

    impl Answering {
        fn new(answer: Value) -> Arc<Answering> {
            Arc::new(Answering {
                answer: std::sync::Mutex::new(answer),
                generation: Default::default(),
                asked: Default::default(),
            })
        }

        fn replace(&self, answer: Value) {
            *self.answer.lock().expect("not poisoned") = answer;
            self.generation
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }

        fn asked(&self) -> usize {
            self.asked.load(std::sync::atomic::Ordering::Relaxed)
        }
    }

    impl Invoker for Answering {
        fn call(&self, _: &ProviderCall) -> CallReport {
            self.asked
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            CallReport {
                result: Ok(Arc::new(self.answer.lock().expect("not poisoned").clone())),
                duration: Duration::from_micros(1),
                logs: Vec::new(),
                notes: Vec::new(),
                cached: true,
                ran: None,
                not_cached: None,
            }
        }

        fn memo_generation(&self) -> Option<u64> {
            Some(self.generation.load(std::sync::atomic::Ordering::Relaxed))
        }
    }

    fn transform(plugin: &str, engine: &Arc<Answering>) -> Provider {
        Provider {
            plugin_id: plugin.into(),
            decl: Arc::new(ExtensionDecl::new(PointId::PromptHistoryTransform, "t", 0)),
            runtime_ids: Arc::new(Vec::new()),
            invoker: Arc::clone(engine) as Arc<dyn Invoker>,
            checked: Default::default(),
            settled: Default::default(),
        }
    }

    fn history(text: &str) -> Value {
        let messages = crate::session_history::exchange("s", "t0", "hi", text, 0);
        serde_json::json!({ "messages": messages })
    }

    /// A pipeline step takes its settled memo answer again only for the same input: when an
    /// earlier step answers otherwise, the next step's input changed and its engine is asked.
    #[test]
    fn a_pipeline_step_is_taken_again_only_while_its_input_and_generation_stay() {
        let (a, b) = (Answering::new(history("a")), Answering::new(history("b")));
        let providers = [transform("a", &a), transform("b", &b)];
        let ctx = Arc::new(ExecutionContext::new(
            crate::context::SessionView::empty(),
            Some("t1".into()),
        ));
        let pass = || {
            let mut input = history("hi");
            input["turnId"] = "t1".into();
            let out = run(
                PointId::PromptHistoryTransform,
                input,
                &providers,
                &ctx,
                &RunOptions::default(),
            );
            assert_eq!(out.error, None);
            assert!(
                out.calls.iter().all(|c| c.outcome == Outcome::Success),
                "{:?}",
                out.calls
            );
            (out.result, (a.asked(), b.asked()))
        };
        assert_eq!(pass(), (history("b"), (1, 1)));
        // Nothing moved: both answers are taken again, neither engine is asked.
        assert_eq!(pass(), (history("b"), (1, 1)));
        assert_eq!(providers[1].settled.taken(), 1);
        // The first engine's memo moved but answers the same: it is asked, and the second step
        // sees the same input and is not.
        a.replace(history("a"));
        assert_eq!(pass(), (history("b"), (2, 1)));
        // The first engine answers otherwise: the second step's input changed, so it is asked
        // although its own memo did not move.
        a.replace(history("a, edited"));
        assert_eq!(pass(), (history("b"), (3, 2)));
        assert_eq!(providers[1].settled.taken(), 2);
    }

    /// A `single` run takes its provider's settled memo answer again the same way, and asks
    /// once the generation moved.
    #[test]
    fn a_single_run_takes_its_settled_answer_again_until_the_generation_moves() {
        let engine = Answering::new(serde_json::json!({}));
        let providers = [Provider {
            decl: Arc::new(ExtensionDecl::new(PointId::SessionWorldContext, "w", 0)),
            ..transform("a", &engine)
        }];
        let ctx = ExecutionContext::empty();
        let once = || {
            let out = run(
                PointId::SessionWorldContext,
                serde_json::json!({}),
                &providers,
                &ctx,
                &RunOptions::default(),
            );
            assert_eq!(out.provided_by.as_deref(), Some("a"), "{:?}", out.calls);
            engine.asked()
        };
        assert_eq!(once(), 1);
        assert_eq!(once(), 1, "taken again");
        engine.replace(serde_json::json!({}));
        assert_eq!(once(), 2, "the memo moved: asked");
        assert_eq!(once(), 2);
    }

    proptest::proptest! {
        #[test]
        fn engine_groups_list_each_engines_positions_in_order_by_first_appearance(
            owners in proptest::collection::vec(0usize..5, 0..30),
        ) {
            let engines: Vec<Arc<dyn Invoker>> = (0..5).map(|_| Arc::new(Never) as _).collect();
            let providers: Vec<Provider> = owners.iter().map(|&e| provider(&engines[e])).collect();
            let chain: Vec<&Provider> = providers.iter().collect();
            // What grouping means, written the plain way: engines in order of first appearance,
            // each with the chain positions it holds.
            let mut firsts: Vec<usize> = Vec::new();
            for &e in &owners {
                if !firsts.contains(&e) {
                    firsts.push(e);
                }
            }
            let expected: Vec<Vec<usize>> = firsts
                .iter()
                .map(|&e| (0..owners.len()).filter(|&i| owners[i] == e).collect())
                .collect();
            proptest::prop_assert_eq!(engine_groups(&chain), expected);
        }
    }
}
