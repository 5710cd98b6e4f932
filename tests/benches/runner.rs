//! Runner benchmarks: one `collect` call over the 100 `prompt.segment@1` providers of 50
//! synthetic plugins, with every provider running (`memo = false`, what a played turn or a
//! session edit costs) and answered from the memo (what an unrelated reload costs); one
//! provider call alone, both ways (the per-call cost: context, conversion, job loop); loading
//! the same folder cold; and how long a CPU loop runs before the 500 ms deadline interrupts it.
//! Run with `cargo bench -p covel-tests --bench runner`.

use covel_js::{Limits, load_folder};
use covel_kernel::context::ExecutionContext;
use covel_kernel::contract::PointId;
use covel_kernel::runner::{self, RunOptions};
use covel_tests::synthetic;
use serde_json::json;

fn main() {
    divan::main();
}

/// The 50 synthetic plugins, loaded with the memo on or off.
fn synthetic_folder(memo: bool) -> (tempfile::TempDir, Vec<covel_js::LoadedPlugin>) {
    let dir = tempfile::tempdir().expect("temp dir");
    synthetic::write_plugins(dir.path(), 50).expect("generate");
    let plugins = load_folder(
        dir.path(),
        &Limits {
            memo,
            ..Limits::default()
        },
    )
    .expect("load");
    (dir, plugins)
}

/// `collect` over 100 providers; `memo = false`: every provider runs every time.
#[divan::bench(sample_count = 200, args = [false, true])]
fn collect_50_plugins(bencher: divan::Bencher, memo: bool) {
    let (_dir, plugins) = synthetic_folder(memo);
    bench_segments(
        bencher,
        plugins
            .iter()
            .flat_map(|p| p.providers())
            .cloned()
            .collect(),
        100,
    );
}

/// One provider call through the runner; `memo = false`: the handler runs every time.
#[divan::bench(sample_count = 500, args = [false, true])]
fn one_provider_call(bencher: divan::Bencher, memo: bool) {
    let (_dir, plugins) = synthetic_folder(memo);
    let first = plugins
        .iter()
        .flat_map(|p| p.providers())
        .filter(|p| p.decl.point == PointId::PromptSegment)
        .take(1)
        .cloned()
        .collect();
    bench_segments(bencher, first, 1);
}

/// Runs `prompt.segment@1` over `providers`, the same input every time.
fn bench_segments(bencher: divan::Bencher, providers: Vec<runner::Provider>, calls: usize) {
    let ctx = ExecutionContext::empty();
    let input = json!({"turnId": "t1", "playerMessage": "Look around."});
    bencher.bench_local(|| {
        let result = runner::run(
            PointId::PromptSegment,
            input.clone(),
            &providers,
            &ctx,
            &RunOptions::default(),
        );
        assert_eq!(result.calls.len(), calls);
        result
    });
}

#[divan::bench(sample_count = 20)]
fn load_50_plugins_cold(bencher: divan::Bencher) {
    let dir = tempfile::tempdir().expect("temp dir");
    synthetic::write_plugins(dir.path(), 50).expect("generate");
    bencher.bench_local(|| load_folder(dir.path(), &Limits::default()).expect("load"));
}

/// A `while (true) {}` handler under `prompt.segment@1`'s 500 ms limit: the time from the call
/// to the interrupt (the conformance test checks only that it is interrupted).
#[divan::bench(sample_count = 5)]
fn cpu_loop_interrupted(bencher: divan::Bencher) {
    let plugins = covel_tests::load_some(&["runner/spinner"]);
    let providers: Vec<_> = plugins
        .iter()
        .flat_map(|p| p.providers())
        .filter(|p| p.decl.id == "spin")
        .cloned()
        .collect();
    let ctx = ExecutionContext::empty();
    let mut turn = 0;
    bencher.bench_local(|| {
        turn += 1;
        let input = json!({"turnId": format!("t{turn}"), "playerMessage": "Spin."});
        runner::run(
            PointId::PromptSegment,
            input,
            &providers,
            &ctx,
            &RunOptions::default(),
        )
    });
}
