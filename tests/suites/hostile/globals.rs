//! The hostile corpus for the sandbox's globals (issue #49): each case feeds a global more than
//! a call may spend, and must end within the call's limits (its deadline, its runtime's memory)
//! with an error that says what happened — no hang, no panic — while a neighbour keeps working.

use super::call_of;
use covel_js::Limits;
use covel_kernel::contract::PointId;
use covel_kernel::runner::{Outcome, RunResult};
use covel_studio::Workspace;
use serde_json::json;
use std::path::Path;
use std::time::{Duration, Instant};

/// A folder with `calm` and one plugin per `(id, handler)`, each providing the segment `id`.
fn folder_with(plugins: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut all = vec![(
        "calm",
        "() => [{ id: \"calm\", content: \"The neighbour still works.\", position: \"system\", audience: \"story\", volatility: \"stable\" }]",
    )];
    all.extend_from_slice(plugins);
    for (id, handler) in all {
        super::segment_plugin(
            dir.path(),
            id,
            &format!(
                "export default function (covel) {{\n  covel.provideExtension(\"prompt.segment@1\", \"{id}\", {{ handler: {handler} }});\n}}\n"
            ),
        );
    }
    std::fs::write(dir.path().join("t.session.yaml"), "id: t\nlocale: en\n").expect("session");
    dir
}

fn run(dir: &Path, timeout: Duration) -> RunResult {
    let ws =
        Workspace::open(dir, Some(&dir.join("t.session.yaml")), &Limits::default()).expect("opens");
    covel_kernel::runner::run(
        PointId::PromptSegment,
        json!({"turnId": "t", "playerMessage": ""}),
        &ws.active_providers(),
        &ws.execution(Some("t".into())),
        &covel_kernel::runner::RunOptions {
            timeout: Some(timeout),
            ..Default::default()
        },
    )
}

fn neighbour_works(result: &RunResult) {
    assert_eq!(
        covel_tests::segment_content(result, "calm").as_deref(),
        Some("The neighbour still works."),
        "{:?}",
        result.calls
    );
}

/// Runs the folder's providers and checks the run ended within `bound` (the call's own deadline
/// is `timeout`): a hostile handler may fail, never hang.
fn run_within(dir: &Path, timeout: Duration, bound: Duration) -> RunResult {
    let started = Instant::now();
    let result = run(dir, timeout);
    assert!(started.elapsed() < bound, "{:?}", started.elapsed());
    result
}

/// A handler that tries `attempt` and answers `accepted`, or what the error it threw says
/// (`said`, an expression of `e`).
fn refused(id: &str, attempt: &str, said: &str) -> String {
    format!(
        "() => {{ try {{ {attempt}; return {}; }} catch (e) {{ return {}; }} }}",
        answer(id, "\"accepted\""),
        answer(id, said)
    )
}

/// What a segment handler answers: `content` in the segment shape.
fn answer(id: &str, content: &str) -> String {
    format!(
        "[{{ id: \"{id}\", content: String({content}), position: \"system\", audience: \"story\", volatility: \"stable\" }}]"
    )
}

#[test]
fn a_text_decoder_fed_more_than_the_runtime_may_hold_is_a_memory_error() {
    let handler = format!(
        "() => {{ const bytes = new Uint8Array(200 * 1024 * 1024); return {}; }}",
        answer("huge-decode", "new TextDecoder().decode(bytes).length")
    );
    let dir = folder_with(&[("huge-decode", &handler)]);
    let result = run(dir.path(), Duration::from_secs(5));
    let call = call_of(&result, "huge-decode");
    assert_ne!(call.outcome, Outcome::Success, "{call:?}");
    assert!(
        call.message
            .as_deref()
            .is_some_and(|m| m.to_lowercase().contains("memory")),
        "says it is memory: {call:?}"
    );
    neighbour_works(&result);
}

#[test]
fn abort_signal_timeouts_beyond_the_call_end_at_its_deadline_or_are_refused() {
    let forever = format!(
        "async () => {{ const s = AbortSignal.timeout(1e9); await new Promise((r) => s.addEventListener(\"abort\", r)); return {}; }}",
        answer("long-timeout", "\"woke\"")
    );
    let infinite = refused(
        "infinite-timeout",
        "AbortSignal.timeout(Infinity)",
        "`${e.name}: ${e.message}`",
    );
    let dir = folder_with(&[("long-timeout", &forever), ("infinite-timeout", &infinite)]);
    let result = run_within(
        dir.path(),
        Duration::from_millis(500),
        Duration::from_secs(10),
    );
    assert_eq!(call_of(&result, "long-timeout").outcome, Outcome::Timeout);
    let refused = covel_tests::segment_content(&result, "infinite-timeout").unwrap_or_default();
    assert!(
        refused.starts_with(
            "TypeError: AbortSignal.timeout: Infinity is not a number of milliseconds"
        ),
        "{refused}"
    );
    neighbour_works(&result);
}

#[test]
fn a_segmenter_on_ten_megabytes_of_text_stays_within_the_call_limits() {
    // Ten megabytes of English words: segmented within the deadline, or stopped at it with an
    // error that says so; never a hang.
    let handler = format!(
        "() => {{ const text = \"word \".repeat(2 * 1024 * 1024); let words = 0; for (const s of new Intl.Segmenter(\"en\", {{ granularity: \"word\" }}).segment(text)) if (s.isWordLike) words++; return {}; }}",
        answer("ten-megabytes", "words")
    );
    let dir = folder_with(&[("ten-megabytes", &handler)]);
    let result = run_within(dir.path(), Duration::from_secs(2), Duration::from_secs(20));
    let call = call_of(&result, "ten-megabytes");
    match call.outcome {
        Outcome::Success => assert_eq!(
            covel_tests::segment_content(&result, "ten-megabytes").as_deref(),
            Some("2097152")
        ),
        Outcome::Timeout => {}
        _ => assert!(
            call.message
                .as_deref()
                .is_some_and(|m| m.contains("time limit") || m.to_lowercase().contains("memory")),
            "a clear error: {call:?}"
        ),
    }
    neighbour_works(&result);
}

#[test]
fn a_url_longer_than_chromiums_limit_is_an_invalid_url_type_error_at_once() {
    let handler = format!(
        "() => {{ const long = \"http://h.test/\" + \"a\".repeat(8 * 1024 * 1024); try {{ new URL(long); return {}; }} catch (e) {{ return {}; }} }}",
        answer("long-url", "\"accepted\""),
        answer("long-url", "`${e.name} ${URL.canParse(long)} ${e.message}`")
    );
    let dir = folder_with(&[("long-url", &handler)]);
    let result = run_within(dir.path(), Duration::from_secs(5), Duration::from_secs(20));
    let said = covel_tests::segment_content(&result, "long-url").unwrap_or_default();
    assert!(
        said.starts_with("TypeError false Invalid URL: the URL has 8388622 UTF-16 code units, more than the 2097152 allowed here"),
        "{said}"
    );
    neighbour_works(&result);
}

#[test]
fn a_url_its_setters_keep_growing_stops_at_the_limit_with_a_type_error() {
    let handler = format!(
        "() => {{ const u = new URL(\"http://h.test/a\"); try {{ for (;;) u.pathname = u.pathname + u.pathname; }} catch (e) {{ return {}; }} }}",
        answer(
            "growing-url",
            "`${e.name} ${u.pathname.length < 2 * 1024 * 1024} ${e.message}`"
        )
    );
    let dir = folder_with(&[("growing-url", &handler)]);
    let result = run(dir.path(), Duration::from_secs(5));
    let said = covel_tests::segment_content(&result, "growing-url").unwrap_or_default();
    assert!(said.starts_with("TypeError true Invalid URL: "), "{said}");
    assert!(
        said.contains("more than the 2097152 allowed here"),
        "{said}"
    );
    neighbour_works(&result);
}

#[test]
fn url_search_params_over_huge_form_text_stay_within_the_call_limits() {
    // 8 Mi units of pairs: parsed within the runtime's memory and the deadline, or stopped by
    // them with an error that says so; 16 Mi units: refused at once by the form text limit.
    let big = format!(
        "() => {{ const p = new URLSearchParams(\"a=1&\".repeat(2 * 1024 * 1024)); return {}; }}",
        answer("big-form", "p.size")
    );
    let over = refused(
        "over-form",
        "new URLSearchParams(\"a=1&\".repeat(4 * 1024 * 1024))",
        "`${e.name}: ${e.message}`",
    );
    let dir = folder_with(&[("big-form", &big), ("over-form", &over)]);
    let result = run_within(dir.path(), Duration::from_secs(2), Duration::from_secs(20));
    let call = call_of(&result, "big-form");
    match call.outcome {
        Outcome::Success => assert_eq!(
            covel_tests::segment_content(&result, "big-form").as_deref(),
            Some("2097152")
        ),
        Outcome::Timeout => {}
        _ => assert!(
            call.message
                .as_deref()
                .is_some_and(|m| m.contains("time limit") || m.to_lowercase().contains("memory")),
            "a clear error: {call:?}"
        ),
    }
    assert_eq!(
        covel_tests::segment_content(&result, "over-form").as_deref(),
        Some(
            "TypeError: URLSearchParams: the form text has 16777216 UTF-16 code units, more than the 8388608 allowed here"
        )
    );
    neighbour_works(&result);
}

#[test]
fn a_plugin_that_pins_a_typed_array_global_gets_an_error_not_a_crashed_studio() {
    // `Atomics` is added with the typed arrays on first use; QuickJS would abort the process if
    // it found one already there that it could not replace.
    let handler = format!(
        "() => {{ Object.defineProperty(globalThis, \"Atomics\", {{ value: 1, configurable: false }}); try {{ return {}; }} catch (e) {{ return {}; }} }}",
        answer("pinned", "new Uint8Array(2).length"),
        answer("pinned", "`${e.name}: ${e.message}`")
    );
    let encoder = format!(
        "() => {{ Object.defineProperty(globalThis, \"Atomics\", {{ value: 1, configurable: false }}); try {{ return {}; }} catch (e) {{ return {}; }} }}",
        answer("pinned-encoder", "new TextEncoder().encode(\"hi\").length"),
        answer("pinned-encoder", "`${e.name}: ${e.message}`")
    );
    let dir = folder_with(&[("pinned", &handler), ("pinned-encoder", &encoder)]);
    let result = run(dir.path(), Duration::from_secs(5));
    for id in ["pinned", "pinned-encoder"] {
        let said = covel_tests::segment_content(&result, id).unwrap_or_default();
        assert!(
            said.starts_with(
                "TypeError: the engine cannot add `Atomics` and its group (typed-arrays)"
            ),
            "{id}: {said}"
        );
    }
    neighbour_works(&result);
}
