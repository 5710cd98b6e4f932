//! The memo never changes an answer: identical calls are answered from it only after two runs
//! agreed, never when the handler read the clock or randomness, never after a failure, and
//! not at all with the memo off. Each call that is not cached says why.

use covel_kernel::contract::PointId;
use covel_kernel::runner::RunResult;
use covel_tests::call;
use serde_json::json;

fn run_three_times() -> Vec<RunResult> {
    run_three_times_with(&covel_js::Limits::default())
}

fn run_three_times_with(limits: &covel_js::Limits) -> Vec<RunResult> {
    let plugins = covel_js::load_plugins(&[covel_tests::fixture("memo/memo-cases")], limits);
    (0..3)
        .map(|_| {
            call(
                &plugins,
                PointId::PromptSegment,
                json!({"turnId": "t", "playerMessage": ""}),
            )
        })
        .collect()
}

fn record<'a>(result: &'a RunResult, id: &str) -> &'a covel_kernel::runner::CallRecord {
    result
        .calls
        .iter()
        .find(|c| c.provider_id == id)
        .expect("called")
}

#[test]
fn a_pure_handler_is_answered_from_the_memo_after_two_agreeing_runs() {
    let runs = run_three_times();
    assert!(!record(&runs[0], "pure").cached && !record(&runs[1], "pure").cached);
    assert!(
        record(&runs[2], "pure").cached,
        "the third identical call is answered from the memo"
    );
    let pure = |r: &RunResult| {
        r.result
            .as_array()
            .into_iter()
            .flatten()
            .find(|s| s["id"] == "pure")
            .cloned()
    };
    assert_eq!(
        pure(&runs[0]),
        pure(&runs[2]),
        "the memo answers what running answered"
    );
}

#[test]
fn handlers_that_read_the_clock_or_randomness_always_run_and_say_why() {
    let runs = run_three_times();
    for (id, why) in [
        ("clock", "reads the clock (Date.now)"),
        ("date", "reads the clock (new Date())"),
        ("random", "uses randomness (Math.random)"),
        ("uuid", "uses randomness (crypto)"),
    ] {
        let last = record(&runs[2], id);
        assert!(!last.cached, "{id} is never memoized");
        assert_eq!(last.not_cached.as_deref(), Some(why), "{id}");
    }
}

#[test]
fn a_handler_whose_answer_changes_between_identical_calls_is_never_memoized() {
    let runs = run_three_times();
    let contents: Vec<String> = runs
        .iter()
        .map(|r| {
            r.result
                .as_array()
                .into_iter()
                .flatten()
                .find(|s| s["id"] == "counter")
                .and_then(|s| s["content"].as_str())
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    assert_eq!(contents, ["1", "2", "3"], "every call really ran");
    assert!(
        record(&runs[2], "counter")
            .not_cached
            .as_deref()
            .is_some_and(|w| w.contains("changed between identical calls"))
    );
}

#[test]
fn with_the_memo_off_everything_runs() {
    let runs = run_three_times_with(&covel_js::Limits {
        memo: false,
        ..covel_js::Limits::default()
    });
    assert!(runs.iter().all(|r| r.calls.iter().all(|c| !c.cached)));
}
