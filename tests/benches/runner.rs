//! Runner benchmarks: one `collect` call over the 100 `prompt.segment@1` providers of 50
//! synthetic plugins (engine calls run in parallel across plugin threads), and loading the
//! same folder cold, and how long a CPU loop runs before the 500 ms deadline interrupts it. Run
//! with `cargo bench -p covel-tests`.

use covel_js::{Limits, load_folder};
use covel_kernel::context::ExecutionContext;
use covel_kernel::contract::PointId;
use covel_kernel::runner::{self, RunOptions};
use covel_tests::synthetic;
use serde_json::json;

fn main() {
    divan::main();
}

#[divan::bench(sample_count = 200)]
fn collect_50_plugins(bencher: divan::Bencher) {
    let dir = tempfile::tempdir().expect("temp dir");
    synthetic::write_plugins(dir.path(), 50).expect("generate");
    let plugins = load_folder(dir.path(), &Limits::default()).expect("load");
    let providers: Vec<_> = plugins.iter().flat_map(|p| p.providers()).collect();
    let ctx = ExecutionContext::empty();
    let input = json!({"turnId": "t1", "playerMessage": "Look around."});
    bencher.bench_local(|| {
        let result = runner::run(PointId::PromptSegment, input.clone(), &providers, &ctx, &RunOptions::default());
        assert_eq!(result.calls.len(), 100);
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
    let providers: Vec<_> = plugins.iter().flat_map(|p| p.providers()).filter(|p| p.decl.id == "spin").collect();
    let ctx = ExecutionContext::empty();
    let mut turn = 0;
    bencher.bench_local(|| {
        turn += 1;
        let input = json!({"turnId": format!("t{turn}"), "playerMessage": "Spin."});
        runner::run(PointId::PromptSegment, input, &providers, &ctx, &RunOptions::default())
    });
}
