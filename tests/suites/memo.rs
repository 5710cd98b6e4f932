//! The memo never changes an answer: identical calls are answered from it only after two runs
//! agreed, never when the handler read the clock or randomness, never after a failure, and
//! not at all with the memo off. Each call that is not cached says why.

use covel_kernel::contract::PointId;
use covel_kernel::runner::RunResult;
use covel_tests::{call, segment_content};
use serde_json::json;

fn run_three_times() -> Vec<RunResult> {
    run_three_times_with(&covel_js::Limits::default())
}

/// The fixture's plugin, loaded with `limits`.
fn memo_cases(limits: &covel_js::Limits) -> Vec<covel_js::LoadedPlugin> {
    covel_js::load_plugins(&[covel_tests::fixture("memo/memo-cases")], limits)
}

fn run_three_times_with(limits: &covel_js::Limits) -> Vec<RunResult> {
    let plugins = memo_cases(limits);
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
    // The answer says what running it costs: its first run's duration (the lookup's is its own).
    assert_eq!(
        record(&runs[0], "pure").ran_ms,
        None,
        "a run reuses nothing"
    );
    assert_eq!(
        record(&runs[2], "pure").ran_ms,
        Some(record(&runs[0], "pure").duration_ms)
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
        .map(|r| segment_content(r, "counter").unwrap_or_default())
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

/// What `LiveStudio::confirm_memo` asks of each engine while the author is idle.
fn confirm(plugins: &[covel_js::LoadedPlugin]) -> usize {
    plugins
        .iter()
        .filter_map(|p| p.instance.as_ref())
        .map(|instance| instance.confirm_memo())
        .sum()
}

#[test]
fn confirming_runs_again_exactly_the_calls_that_ran_once_and_the_memo_then_answers_them() {
    let plugins = memo_cases(&covel_js::Limits::default());
    let input = || json!({"turnId": "t", "playerMessage": ""});
    call(&plugins, PointId::PromptSegment, input());
    assert_eq!(
        confirm(&plugins),
        2,
        "pure and counter ran once; the clock and randomness readers are never memoized"
    );
    assert_eq!(confirm(&plugins), 0, "each call is confirmed once");
    let after = call(&plugins, PointId::PromptSegment, input());
    assert!(
        record(&after, "pure").cached,
        "confirmed: answered from the memo"
    );
    let counter = record(&after, "counter");
    assert!(!counter.cached);
    assert!(
        counter
            .not_cached
            .as_deref()
            .is_some_and(|w| w.contains("changed between identical calls")),
        "the confirming run saw the module-level state change"
    );
    assert_eq!(
        segment_content(&after, "counter").as_deref(),
        Some("3"),
        "the confirming run really ran the handler (its second call)"
    );
}

#[test]
fn with_the_memo_off_confirming_runs_nothing() {
    let plugins = memo_cases(&covel_js::Limits {
        memo: false,
        ..covel_js::Limits::default()
    });
    call(
        &plugins,
        PointId::PromptSegment,
        json!({"turnId": "t", "playerMessage": ""}),
    );
    assert_eq!(confirm(&plugins), 0);
}

#[test]
fn a_call_whose_visible_data_changed_since_is_not_run_again() {
    let plugins = memo_cases(&covel_js::Limits::default());
    let input = json!({"turnId": "t", "playerMessage": ""});
    call(&plugins, PointId::PromptSegment, input.clone());
    // The locale is part of what every handler sees: the engine's memo starts over under it.
    let french = std::sync::Arc::new(covel_kernel::context::ExecutionContext::new(
        covel_kernel::context::SessionView::new(covel_kernel::context::SessionData {
            locale: "fr".into(),
            ..(**covel_kernel::context::SessionView::empty()).clone()
        }),
        None,
    ));
    covel_kernel::runner::run(
        PointId::PromptSegment,
        input,
        &covel_tests::providers(&plugins),
        &french,
        &covel_kernel::runner::RunOptions::default(),
    );
    assert_eq!(
        confirm(&plugins),
        2,
        "only the calls under the data the handlers see now run again"
    );
}
