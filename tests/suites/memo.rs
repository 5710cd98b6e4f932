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
        .find(|c| &*c.provider_id == id)
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

/// The runner takes a memo answer it settled again without asking the engine, and only while
/// the engine could give no other answer: for the same call in the same session view, while
/// the engine's memo generation stays (`runner::SettledAnswers`). Calls that are never
/// memoized are never taken again.
#[test]
fn a_settled_memo_answer_is_taken_again_only_while_the_engine_could_give_nothing_else() {
    use covel_kernel::context::{ExecutionContext, SessionView};
    use covel_kernel::runner::{RunOptions, run};
    use std::sync::Arc;
    let plugins = memo_cases(&covel_js::Limits::default());
    let providers = covel_tests::providers(&plugins);
    let pure = providers
        .iter()
        .find(|p| p.decl.id == "pure")
        .expect("pure");
    let in_turn = |view: &Arc<SessionView>, turn: &str| {
        Arc::new(ExecutionContext::new(Arc::clone(view), Some(turn.into())))
    };
    let ask = |ctx: &Arc<ExecutionContext>| {
        let input = json!({"turnId": ctx.turn_id, "playerMessage": ""});
        run(
            PointId::PromptSegment,
            input,
            &providers,
            ctx,
            &RunOptions::default(),
        )
    };
    let view = SessionView::empty();
    let ctx = in_turn(&view, "t");
    // Ran, ran again and agreed, answered from the memo (settled and kept), taken again.
    let runs: Vec<RunResult> = (0..4).map(|_| ask(&ctx)).collect();
    assert!(record(&runs[2], "pure").cached);
    assert_eq!(pure.settled.taken(), 1);
    assert_eq!(record(&runs[3], "pure"), record(&runs[2], "pure"));
    assert_eq!(
        segment_content(&runs[3], "pure"),
        Some("always the same".into())
    );
    for id in ["clock", "date", "random", "uuid", "counter"] {
        assert!(!record(&runs[3], id).cached, "{id} ran");
        let provider = providers
            .iter()
            .find(|p| p.decl.id == id)
            .expect("provider");
        assert_eq!(provider.settled.taken(), 0, "{id} is never taken again");
    }
    // Another session view (the same data): the engine is asked, its memo answers, and that
    // answer is taken again for this view.
    let other_view = SessionView::new((**view).clone());
    let other = in_turn(&other_view, "t");
    assert!(record(&ask(&other), "pure").cached);
    assert_eq!(pure.settled.taken(), 1);
    ask(&other);
    assert_eq!(pure.settled.taken(), 2);
    // Calls for four other turns evict turn `t`'s entries from the engine's memo: the answer is
    // not taken again, and the engine runs the call (it no longer holds an answer).
    for n in 0..covel_js::memo::RECENT_TURNS {
        ask(&in_turn(&other_view, &format!("other {n}")));
    }
    let after = ask(&other);
    assert_eq!(pure.settled.taken(), 2);
    assert!(
        !record(&after, "pure").cached,
        "the engine ran it: {:?}",
        record(&after, "pure")
    );
    assert_eq!(
        segment_content(&after, "pure"),
        segment_content(&runs[3], "pure")
    );
}

/// A preview after nothing changed takes every settled answer again, and gives the prompt,
/// segments, cache report, world context and slots that running every provider gives.
#[test]
fn a_preview_that_takes_settled_answers_again_equals_one_where_everything_runs() {
    use covel_studio::{RuntimeTarget, Workspace};
    let sample = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins-sample");
    let session = sample.join("demo.session.yaml");
    let open = |limits: &covel_js::Limits| {
        Workspace::open(&sample, Some(&session), limits).expect("the sample opens")
    };
    let memo = open(&covel_js::Limits::default());
    let previews: Vec<_> = (0..4)
        .map(|_| memo.preview(&RuntimeTarget::Story))
        .collect();
    let taken = |point: PointId| -> usize {
        memo.active_providers()
            .iter()
            .filter(|p| p.decl.point == point)
            .map(|p| p.settled.taken())
            .sum()
    };
    // Collect runs (segments), pipelines (slots, history transforms) and single runs (world
    // context, image flow) all took settled answers again.
    for point in [
        PointId::PromptSegment,
        PointId::UiSlot,
        PointId::PromptHistoryTransform,
        PointId::SessionWorldContext,
        PointId::MediaImageFlow,
    ] {
        assert!(
            taken(point) > 0,
            "the fourth preview took {point} answers again"
        );
    }
    assert!(
        memo.segment_reads().taken_again() > 0,
        "the later previews took the segments an earlier one read again"
    );
    let without_memo = open(&covel_js::Limits {
        memo: false,
        ..covel_js::Limits::default()
    });
    let every = without_memo.preview(&RuntimeTarget::Story);
    assert_eq!(
        without_memo.segment_reads().held(),
        0,
        "without the memo no output comes back, so no read is kept"
    );
    let parts = |preview: &covel_studio::Preview| {
        let mut value = serde_json::to_value(preview).expect("serializes");
        covel_tests::redact_timings(&mut value);
        let slots: Vec<_> = value["slots"]
            .as_array()
            .expect("slots")
            .iter()
            .map(|s| (s["slot"].clone(), s["key"].clone(), s["value"].clone()))
            .collect();
        json!([
            value["prompt"],
            value["segments"],
            value["cache"],
            value["worldContext"]["snapshot"],
            slots,
            value["errors"]
        ])
    };
    assert_eq!(parts(&previews[3]), parts(&every));
    assert_eq!(parts(&previews[3]), parts(&previews[2]));
}
