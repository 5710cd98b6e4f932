//! The SDK's behaviour rule by rule, as our own vitest-style test files
//! (`fixtures/sdk-tests/*.test.js`) run in a plugin runtime by `covel_js::sdk_tests`: the same
//! runner that measures upstream's SDK tests against ours (`scripts/upstream-sdk-tests`), whose
//! own behaviour is checked here on a small file with known outcomes (`fixtures/sdk-runner`).

use covel_js::sdk_tests::{FileReport, TestResult, run_dir, run_file};
use covel_tests::fixture;

/// Runs one of our SDK test files and fails with every failing test and its error.
fn check(file: &str) -> FileReport {
    let report = run_file(&fixture("sdk-tests").join(file));
    assert_eq!(report.failure, None, "{file} runs");
    let failing: Vec<String> = report
        .tests
        .iter()
        .filter(|t| !t.passed)
        .map(|t| format!("{}: {}", t.name, t.error.as_deref().unwrap_or("")))
        .collect();
    assert!(failing.is_empty(), "{file}:\n{}", failing.join("\n"));
    assert!(report.total() > 0, "{file} declares tests");
    report
}

#[test]
fn image_generation_skips_without_an_image_model_and_answers_a_handler_result() {
    let report = check("image-generation.test.js");
    assert_eq!(report.passed(), 6);
}

#[test]
fn narrative_review_acts_for_its_own_runtimes_in_the_sessions_language_and_keeps_streaming() {
    let report = check("narrative-review.test.js");
    assert_eq!(report.passed(), 9);
}

#[test]
fn character_sheets_write_aliases_after_the_name_and_count_the_profiles_past_the_budget() {
    let report = check("character-sheets.test.js");
    assert_eq!(report.passed(), 4);
}

#[test]
fn hostile_proto_and_constructor_keys_stay_own_keys_and_are_never_read_as_inherited() {
    let report = check("own-keys.test.js");
    assert_eq!(report.passed(), 7);
}

fn outcome(report: &FileReport, name: &str) -> TestResult {
    report
        .tests
        .iter()
        .find(|t| t.name == name)
        .cloned()
        .unwrap_or_else(|| panic!("no test {name:?} in {:?}", report.tests))
}

#[test]
fn the_runner_runs_a_typescript_test_file_with_upstreams_imports_and_reports_each_test() {
    let report = run_file(&fixture("sdk-runner/tests/sample.test.ts"));
    assert_eq!(report.failure, None);
    let names: Vec<&str> = report.tests.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "outer > passes",
            "outer > fails on a value",
            "outer > inner > doubles 1 to 2",
            "outer > inner > doubles 2 to 4",
            "outer > inner > awaits",
            "throws its own error",
            "ran beforeEach before every test",
            "skipped",
        ],
        "describe paths, it.each titles, declaration order"
    );
    assert_eq!(
        (report.passed(), report.failed(), report.total()),
        (5, 2, 8)
    );
    assert_eq!(
        outcome(&report, "outer > fails on a value")
            .error
            .as_deref(),
        Some("expected 2 to be 3")
    );
    assert_eq!(
        outcome(&report, "throws its own error").error.as_deref(),
        Some("TypeError: not a lantern"),
        "the first line of the error"
    );
    assert!(outcome(&report, "skipped").skipped);
}

#[test]
fn a_test_file_that_cannot_load_is_reported_with_the_missing_name_and_runs_nothing() {
    let reports = run_dir(&fixture("sdk-runner/tests")).expect("folder");
    let files: Vec<&str> = reports.iter().map(|r| r.file.as_str()).collect();
    assert_eq!(files, ["broken.test.js", "sample.test.ts"], "by name");
    let broken = &reports[0];
    assert_eq!(broken.total(), 0);
    let why = broken.failure.as_deref().expect("a failure");
    assert!(why.contains("noSuchHelper"), "{why}");
}
