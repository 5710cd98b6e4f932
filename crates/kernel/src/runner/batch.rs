//! Batches of runs: several points (a preview's slots and world context) run as [`super::run`]
//! would run them one after another, with the same results, but the runs whose chains share no
//! engine run in parallel. An engine's state can depend on the order of its calls, so each
//! engine still sees its calls in request order.

use super::{Provider, RunOptions, RunResult, engine_of, in_chain, run, slot_of};
use crate::context::ExecutionContext;
use crate::contract::PointId;
use serde_json::Value;
use std::sync::Arc;

/// One run of a [`run_all`] batch.
#[derive(Debug, Clone)]
pub struct RunRequest {
    pub point: PointId,
    pub input: Value,
    pub options: RunOptions,
}

/// Runs a batch as [`run`] runs each request in turn, with the same results in request order,
/// but runs whose chains share no engine in parallel (the five stage slots of a preview, say).
/// Each engine sees its calls in the order the requests give them, as one by one: requests
/// whose chains share an engine, directly or through others, run one after the other.
pub fn run_all(
    requests: Vec<RunRequest>,
    providers: &[Provider],
    ctx: &Arc<ExecutionContext>,
) -> Vec<RunResult> {
    let run_one = |request: RunRequest| {
        run(
            request.point,
            request.input,
            providers,
            ctx,
            &request.options,
        )
    };
    let groups = sharing_engines(&requests, providers);
    if groups.len() <= 1 {
        return requests.into_iter().map(run_one).collect();
    }
    let mut requests: Vec<Option<RunRequest>> = requests.into_iter().map(Some).collect();
    let batches: Vec<Vec<(usize, RunRequest)>> = groups
        .iter()
        .map(|group| {
            group
                .iter()
                .filter_map(|&i| requests[i].take().map(|request| (i, request)))
                .collect()
        })
        .collect();
    use rayon::prelude::*;
    let ran: Vec<Vec<(usize, RunResult)>> = batches
        .into_par_iter()
        .map(|batch| {
            batch
                .into_iter()
                .map(|(i, request)| (i, run_one(request)))
                .collect()
        })
        .collect();
    let mut results: Vec<Option<RunResult>> = (0..requests.len()).map(|_| None).collect();
    for (i, result) in ran.into_iter().flatten() {
        results[i] = Some(result);
    }
    results.into_iter().flatten().collect()
}

/// The requests grouped so that no two groups share an engine, each group in request order.
fn sharing_engines(requests: &[RunRequest], providers: &[Provider]) -> Vec<Vec<usize>> {
    // Union-find over request positions: a request joins every earlier one that used an engine
    // it uses.
    let mut parent: Vec<usize> = (0..requests.len()).collect();
    fn root(parent: &mut [usize], mut i: usize) -> usize {
        while parent[i] != i {
            parent[i] = parent[parent[i]];
            i = parent[i];
        }
        i
    }
    let mut user_of: std::collections::HashMap<*const (), usize> = Default::default();
    for (index, request) in requests.iter().enumerate() {
        let slot = slot_of(&request.input, &request.options);
        for provider in providers
            .iter()
            .filter(|p| in_chain(p, request.point, slot))
        {
            let other = *user_of.entry(engine_of(provider)).or_insert(index);
            let (a, b) = (root(&mut parent, index), root(&mut parent, other));
            parent[a.max(b)] = a.min(b);
        }
    }
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut group_of_root = std::collections::HashMap::new();
    for index in 0..requests.len() {
        let at = *group_of_root
            .entry(root(&mut parent, index))
            .or_insert_with(|| {
                groups.push(Vec::new());
                groups.len() - 1
            });
        groups[at].push(index);
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::SlotId;
    use crate::manifest::ExtensionDecl;
    use crate::runner::{CallReport, Invoker, ProviderCall};
    use proptest::prelude::*;
    use std::sync::Mutex;
    use std::time::Duration;

    /// An engine that logs the calls it receives, in the order it receives them.
    #[derive(Default)]
    struct LoggingEngine(Mutex<Vec<String>>);

    impl Invoker for LoggingEngine {
        fn call(&self, call: &ProviderCall) -> CallReport {
            let mut log = self.0.lock().unwrap_or_else(|e| e.into_inner());
            log.push(format!("{}:{}", call.input["slot"], call.provider_id));
            CallReport {
                result: Ok(Arc::new(serde_json::json!({"seen": log.len()}))),
                duration: Duration::ZERO,
                logs: Vec::new(),
                notes: Vec::new(),
                cached: false,
                ran: None,
                not_cached: None,
            }
        }
    }

    const SLOTS: [SlotId; 4] = [
        SlotId::StageBackdrop,
        SlotId::StageCast,
        SlotId::StageMusic,
        SlotId::SessionSummary,
    ];

    /// Providers `(engine, slot)` over fresh engines.
    fn providers(
        specs: &[(usize, usize)],
        engines: usize,
    ) -> (Vec<Provider>, Vec<Arc<LoggingEngine>>) {
        let engines: Vec<Arc<LoggingEngine>> = (0..engines).map(|_| Arc::default()).collect();
        let providers = specs
            .iter()
            .enumerate()
            .map(|(i, &(engine, slot))| Provider {
                plugin_id: format!("p{engine}"),
                decl: Arc::new(ExtensionDecl {
                    slot: Some(SLOTS[slot]),
                    ..ExtensionDecl::new(PointId::UiSlot, format!("v{i}"), 0)
                }),
                runtime_ids: Arc::new(Vec::new()),
                invoker: Arc::clone(&engines[engine]) as Arc<dyn Invoker>,
                checked: Default::default(),
                settled: Default::default(),
            })
            .collect();
        (providers, engines)
    }

    fn request(slot: usize) -> RunRequest {
        let slot = SLOTS[slot];
        RunRequest {
            point: PointId::UiSlot,
            input: serde_json::json!({"slot": slot.as_str(), "previous": null, "events": []}),
            options: RunOptions {
                slot: Some(slot),
                ..RunOptions::default()
            },
        }
    }

    proptest! {
        /// Whatever the providers and the batch, `run_all` answers what one run after another
        /// answers, and every engine receives the same calls in the same order.
        #[test]
        fn a_batch_answers_and_calls_each_engine_as_one_run_after_another(
            specs in prop::collection::vec((0usize..4, 0usize..4), 0..10),
            slots in prop::collection::vec(0usize..4, 0..8),
        ) {
            let ctx = ExecutionContext::empty();
            let (batch_providers, batch_engines) = providers(&specs, 4);
            let batched = run_all(slots.iter().map(|&s| request(s)).collect(), &batch_providers, &ctx);
            let (one_providers, one_engines) = providers(&specs, 4);
            let one_by_one: Vec<RunResult> = slots
                .iter()
                .map(|&s| {
                    let r = request(s);
                    run(r.point, r.input, &one_providers, &ctx, &r.options)
                })
                .collect();
            let answers = |results: &[RunResult]| -> Vec<(Value, Vec<String>)> {
                results
                    .iter()
                    .map(|r| (r.result.clone(), r.calls.iter().map(|c| c.provider_id.to_string()).collect()))
                    .collect()
            };
            prop_assert_eq!(answers(&batched), answers(&one_by_one));
            for (batch, one) in batch_engines.iter().zip(&one_engines) {
                let log = |engine: &LoggingEngine| engine.0.lock().map(|l| l.clone()).unwrap_or_default();
                prop_assert_eq!(log(batch), log(one));
            }
        }
    }
}
