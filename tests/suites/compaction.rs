//! History compaction (`history.compact@2`, seed page "History compression"): the trigger and
//! budget, every validation rule accepted and rejected, `deferred` at and beyond twice the
//! budget, the failure count, and a played session that compacts several times.

use covel_js::Limits;
use covel_kernel::compaction::{self, Budget, FailureCounter, Windows};
use covel_studio::Workspace;
use covel_studio::compaction::CompactionOptions;
use covel_studio::playtest::Playtest;
use covel_tests::fixture;
use serde_json::{Value, json};

fn msg(id: &str, turn: &str, role: &str, content: &str, tag: Option<&str>) -> Value {
    let mut m = json!({"id": id, "sessionId": "s", "turnId": turn, "sourceType": "x", "role": role, "content": content, "order": 0, "createdAt": "t"});
    if let Some(tag) = tag {
        m["compactedAtTurnId"] = json!(tag);
    }
    m
}

fn summary(id: &str, content: &str) -> Value {
    json!({"id": id, "sessionId": "s", "turnRangeStart": "t0", "turnRangeEnd": "t0", "content": content, "focusSections": [], "createdAt": format!("2026-01-01T00:00:0{}Z", &id[1..])})
}

/// Two summaries, two compacted messages, four uncompacted ones.
fn history() -> (Vec<Value>, Vec<Value>) {
    let messages = vec![
        msg("a", "t1", "user", "old", Some("s1")),
        msg("b", "t1", "assistant", "old", Some("s2")),
        msg("c", "t2", "user", "hello there", None),
        msg("d", "t2", "assistant", "general kenobi", None),
        msg("e", "t3", "user", "again", None),
        msg("f", "t3", "assistant", "and again", None),
    ];
    (
        messages,
        vec![
            summary("s1", "first summary"),
            summary("s2", "second summary"),
        ],
    )
}

fn budget() -> Budget {
    Budget {
        max_tokens: 100,
        max_segment_tokens: 40,
        max_segments: 4,
    }
}

fn segment(messages: &[&str], replaces: &[&str], content: &str) -> Value {
    json!({"messageIds": messages, "replacesSummaryIds": replaces, "content": content, "focusSections": []})
}

fn verdict(output: Value) -> compaction::Verdict {
    let (messages, summaries) = history();
    compaction::validate(&output, "s", &messages, &summaries, budget())
}

fn broken_rules(output: Value) -> Vec<&'static str> {
    verdict(output)
        .rules
        .into_iter()
        .filter(|r| !r.ok)
        .map(|r| r.rule)
        .collect()
}

/// Each rule's line as the verdict says it: `rule: detail`.
fn said(output: Value) -> Vec<String> {
    verdict(output)
        .rules
        .into_iter()
        .map(|r| format!("{}: {}", r.rule, r.detail))
        .collect()
}

#[test]
fn the_verdict_says_a_count_of_one_in_the_singular() {
    // The Compaction panel once read "1 summary segments" and "1 segments after applying".
    let one = said(json!({"summaries": [segment(&["a", "b"], &[], "They met.")]}));
    assert!(
        one.contains(&"non-empty: 1 summary segment".to_string()),
        "{one:?}"
    );
    let single = said(json!({"summaries": [segment(&["a"], &[], "They met.")]}));
    assert!(
        single.contains(&"same-session: segment 0: 1 message belongs to this session".to_string()),
        "{single:?}"
    );
    let merged = said(json!({"summaries": [segment(&[], &["s1", "s2"], "Both.")]}));
    assert!(
        merged.contains(&"segment-count: 1 segment after applying; the limit is 4".to_string()),
        "{merged:?}"
    );
    assert!(
        merged.contains(&"no-duplicates: segment 0: 2 summaries, none repeated".to_string()),
        "{merged:?}"
    );
}

// ---- Trigger, input and budget ----------------------------------------------------------------

#[test]
fn the_window_is_the_smaller_capacity_after_reply_reserves() {
    assert_eq!(
        Windows::new(1000, 200, 10_000, 200),
        Windows {
            context_window: 800,
            input_window: 9800
        }
    );
    assert_eq!(
        Windows::new(10_000, 200, 1000, 200),
        Windows {
            context_window: 800,
            input_window: 800
        }
    );
}

#[test]
fn budgets_follow_the_reference_formulas() {
    let b = |w| {
        let b = Budget::for_window(w);
        (b.max_tokens, b.max_segment_tokens, b.max_segments)
    };
    assert_eq!(b(800), (128, 128, 8));
    assert_eq!(b(32_768), (3932, 1310, 8));
    assert_eq!(b(100_000), (8192, 2048, 8));
    assert_eq!(b(1000), (128, 128, 8));
    assert_eq!(b(100), (100, 100, 8));
}

#[test]
fn compaction_triggers_only_above_sixty_percent_of_the_window() {
    let w = Windows::new(1200, 200, 1400, 200);
    assert!(
        !compaction::over_threshold(600, w),
        "equal does not trigger"
    );
    assert!(compaction::over_threshold(601, w));
    let (messages, summaries) = history();
    let estimate = compaction::estimate("abcd", &messages, &summaries);
    // system 1 + uncompacted (3 + 4 + 2 + 3) + summaries (4 + 4); compacted messages do not count.
    assert_eq!(estimate, 21);
}

// ---- Validation, rule by rule --------------------------------------------------------------------

#[test]
fn a_continuous_prefix_of_uncompacted_messages_is_accepted() {
    let v = verdict(json!({"summaries": [segment(&["c", "d"], &[], "they greeted")]}));
    assert!(v.accepted, "{:?}", v.rules);
}

#[test]
fn the_oldest_run_of_summaries_is_accepted() {
    let v = verdict(
        json!({"summaries": [segment(&[], &["s1", "s2"], "both"), segment(&["c"], &[], "hello")]}),
    );
    assert!(v.accepted, "{:?}", v.rules);
}

#[test]
fn null_means_only_nothing_to_compact() {
    let v = verdict(Value::Null);
    assert!(v.nothing_to_compact && !v.accepted && v.rules.is_empty());
}

#[test]
fn each_broken_rule_is_named() {
    let cases = [
        (json!({"summaries": []}), "non-empty"),
        (
            json!({"summaries": [segment(&["c"], &[], "   ")]}),
            "content-not-blank",
        ),
        (
            json!({"summaries": [segment(&["c"], &["s1"], "both kinds")]}),
            "covers-one-kind",
        ),
        (
            json!({"summaries": [segment(&[], &[], "neither")]}),
            "covers-one-kind",
        ),
        (
            json!({"summaries": [segment(&["c"], &[], &"word ".repeat(60))]}),
            "segment-budget",
        ),
        (
            json!({"summaries": [segment(&["d"], &[], "skips c")]}),
            "message-prefix-in-order",
        ),
        (
            json!({"summaries": [segment(&["d", "c"], &[], "reordered")]}),
            "message-prefix-in-order",
        ),
        (
            json!({"summaries": [segment(&["c"], &[], "x"), segment(&["c"], &[], "y")]}),
            "no-duplicates",
        ),
        (
            json!({"summaries": [segment(&["zz"], &[], "foreign")]}),
            "same-session",
        ),
        (
            json!({"summaries": [segment(&[], &["s2"], "not the oldest")]}),
            "oldest-summaries-in-order",
        ),
        (
            json!({"summaries": [segment(&[], &["s9"], "unknown summary")]}),
            "same-session",
        ),
        (
            json!({"summaries": [segment(&["c"], &[], "a"), segment(&["d"], &[], "b"), segment(&["e"], &[], "c")]}),
            "segment-count",
        ),
        (
            json!({"summaries": [segment(&["c"], &[], &"w ".repeat(76)), segment(&["d"], &[], &"w ".repeat(76)), segment(&["e"], &[], &"w ".repeat(76))]}),
            "total-tokens",
        ),
    ];
    for (output, rule) in cases {
        let broken = broken_rules(output.clone());
        assert!(
            broken.contains(&rule),
            "{rule} should be broken by {output}: {broken:?}"
        );
    }
}

#[test]
fn deferred_is_accepted_up_to_twice_the_budget_and_rejected_beyond() {
    // Two retained summaries plus three new segments: 5 > 4 segments, but within twice the limit.
    let three = |extra: &str| {
        json!({"summaries": [segment(&["c"], &[], "a"), segment(&["d"], &[], "b"), segment(&["e"], &[], extra)],
               "deferred": {"reason": "merging failed"}})
    };
    let v = verdict(three("c"));
    assert!(v.accepted, "{:?}", v.rules);
    assert_eq!(v.deferred.as_deref(), Some("merging failed"));
    assert_eq!(v.total_segments, 5);
    // Tokens: exactly twice the budget is fine, one more is not.
    let (messages, summaries) = history();
    let small = Budget {
        max_tokens: 60,
        max_segment_tokens: 40,
        max_segments: 4,
    };
    let retained: u64 = summaries
        .iter()
        .map(|s| covel_kernel::sdk::estimate_tokens(s["content"].as_str().unwrap_or_default()))
        .sum();
    let fill = |tokens: u64| "abcd".repeat(tokens as usize);
    let with_third = |tokens: u64| {
        json!({"summaries": [segment(&["c"], &[], &fill(40)), segment(&["d"], &[], &fill(40)), segment(&["e"], &[], &fill(tokens))],
               "deferred": {"reason": "r"}})
    };
    let at = compaction::validate(
        &with_third(120 - 80 - retained),
        "s",
        &messages,
        &summaries,
        small,
    );
    assert!(at.accepted, "{:?}", at.rules);
    assert_eq!(at.total_tokens, 120);
    let beyond = compaction::validate(
        &with_third(121 - 80 - retained),
        "s",
        &messages,
        &summaries,
        small,
    );
    assert!(
        beyond
            .rules
            .iter()
            .any(|r| r.rule == "total-tokens" && !r.ok)
    );
    let undeferred = compaction::validate(
        &json!({"summaries": with_third(10)["summaries"]}),
        "s",
        &messages,
        &summaries,
        small,
    );
    assert!(
        undeferred
            .rules
            .iter()
            .any(|r| r.rule == "total-tokens" && !r.ok),
        "without deferred the plain budget applies"
    );
    // Segments beyond twice the limit.
    let many: Vec<Value> = (0..7)
        .map(|i| segment(&[["c", "d", "e", "f"][i.min(3)]], &[], "x"))
        .collect();
    let too_many = verdict(json!({"summaries": many, "deferred": {"reason": "r"}}));
    assert!(
        too_many
            .rules
            .iter()
            .any(|r| r.rule == "segment-count" && !r.ok)
    );
    // A deferred result carries only new summaries.
    assert!(
        broken_rules(
            json!({"summaries": [segment(&[], &["s1"], "m")], "deferred": {"reason": "r"}})
        )
        .contains(&"deferred-only-new")
    );
}

#[test]
fn applying_replaces_only_the_listed_summaries_and_a_merge_keeps_the_oldest_identity() {
    let (messages, summaries) = history();
    let output = json!({"summaries": [segment(&[], &["s1", "s2"], "merged"), segment(&["c", "d"], &[], "fresh")]});
    let mut n = 0;
    let applied = compaction::apply(
        &output,
        "s",
        &messages,
        &summaries,
        || {
            n += 1;
            format!("new{n}")
        },
        "2026-02-01T00:00:00Z",
    );
    let ids: Vec<&str> = applied
        .summaries
        .iter()
        .filter_map(|s| s["id"].as_str())
        .collect();
    assert_eq!(ids, ["s1", "new1"]);
    assert_eq!(
        applied.summaries[0]["createdAt"], summaries[0]["createdAt"],
        "the merge keeps the oldest creation time"
    );
    assert_eq!(applied.summaries[0]["content"], "merged");
    let tags: Vec<Option<&str>> = applied
        .messages
        .iter()
        .map(|m| m["compactedAtTurnId"].as_str())
        .collect();
    assert_eq!(
        tags,
        [
            Some("s1"),
            Some("s1"),
            Some("new1"),
            Some("new1"),
            None,
            None
        ]
    );
}

// ---- Failures ---------------------------------------------------------------------------------

#[test]
fn the_third_failure_notices_the_sixth_again_and_a_success_resets() {
    let mut counter = FailureCounter::default();
    let notices: Vec<bool> = (1..=7)
        .map(|_| {
            counter
                .fail("p", "x", "model down", "t")
                .iter()
                .any(|e| e.topic == "job-status.updated")
        })
        .collect();
    assert_eq!(notices, [false, false, true, false, false, true, false]);
    assert_eq!(counter.consecutive, 7);
    counter.succeed();
    assert_eq!(counter.consecutive, 0);
    assert!(
        !counter
            .fail("p", "x", "again", "t")
            .iter()
            .any(|e| e.topic == "job-status.updated"),
        "counting starts over"
    );
}

#[test]
fn a_throwing_provider_is_skipped_and_recorded_as_compaction_failed_every_turn_over_the_threshold()
{
    let session = fixture("compaction/failing.session.yaml");
    let mut ws = Workspace::open(
        &fixture("compaction/failing"),
        Some(&session),
        &Limits::default(),
    )
    .expect("opens");
    let mut counter = FailureCounter::default();
    let mut notices = 0;
    for turn in 1..=6 {
        let run = ws.compact(
            &format!("t{turn}"),
            "",
            &CompactionOptions {
                force: true,
                output: None,
            },
            &mut counter,
        );
        let failed = run
            .events
            .iter()
            .find(|e| e.topic == "context.compaction.failed")
            .expect("recorded");
        assert_eq!(failed.payload["pluginId"], "always-fails");
        assert!(
            failed.payload["reason"]
                .as_str()
                .is_some_and(|r| r.contains("fast model timed out"))
        );
        assert_eq!(failed.payload["consecutiveFailures"], turn);
        notices += run
            .events
            .iter()
            .filter(|e| e.topic == "job-status.updated")
            .count();
        assert!(
            ws.session.history.summaries.is_empty(),
            "nothing is written"
        );
    }
    assert_eq!(notices, 2);
}

#[test]
fn a_failed_merge_returns_the_fresh_summary_deferred_and_counts_one_failure() {
    let session = fixture("compaction/deferred.session.yaml");
    let mut ws = Workspace::open(
        &fixture("compaction/plugins"),
        Some(&session),
        &Limits::default(),
    )
    .expect("opens");
    let mut counter = FailureCounter::default();
    let run = ws.compact(
        "t7",
        "",
        &CompactionOptions {
            force: true,
            output: None,
        },
        &mut counter,
    );
    let verdict = run.verdict.expect("validated");
    assert!(verdict.accepted, "{:?}", verdict.rules);
    assert!(
        verdict
            .deferred
            .as_deref()
            .is_some_and(|r| r.contains("scripted failure"))
    );
    assert_eq!(
        ws.session.history.summaries.len(),
        9,
        "saved as usual: eight old ones and the fresh one"
    );
    assert_eq!(counter.consecutive, 1, "counted as one failure");
    let failed = run
        .events
        .iter()
        .find(|e| e.topic == "context.compaction.failed")
        .expect("the deferred merge is recorded as context.compaction.failed");
    assert!(
        failed.payload["reason"]
            .as_str()
            .is_some_and(|r| r.contains("scripted failure")),
        "{:?}",
        failed.payload
    );
    assert_eq!(failed.payload["consecutiveFailures"], 1);
}

#[test]
fn a_played_session_compacts_repeatedly_into_valid_stable_summaries() {
    let session = fixture("compaction/long.session.yaml");
    let ws = Workspace::open(
        &fixture("compaction/plugins"),
        Some(&session),
        &Limits::default(),
    )
    .expect("opens");
    let mut play = Playtest::new(ws);
    let mut accepted = 0;
    let mut merges = 0;
    let mut previous: Vec<Value> = Vec::new();
    for turn in 0..14 {
        let report = play.play(&format!(
            "I search the pier for the {turn}th time and call out to Oren."
        ));
        assert!(report.error.is_none(), "{:?}", report.error);
        let run = &report.compaction;
        if run.triggered {
            let verdict = run
                .verdict
                .as_ref()
                .unwrap_or_else(|| panic!("turn {turn}: {:?}", run.events));
            assert!(verdict.accepted, "turn {turn}: {:?}", verdict.rules);
            accepted += 1;
            let now = &play.workspace.session.history.summaries;
            let written: Vec<&str> = run
                .applied
                .as_ref()
                .expect("applied")
                .written
                .iter()
                .map(String::as_str)
                .collect();
            // What this run's output says it replaces (a merge).
            let replaced: Vec<&str> = run.output["summaries"]
                .as_array()
                .into_iter()
                .flatten()
                .flat_map(|s| {
                    s["replacesSummaryIds"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(Value::as_str)
                })
                .collect();
            // Stable: every earlier summary is kept as it was, unless this run's output listed it
            // in `replacesSummaryIds` (then it is gone, or rewritten as the merge's record).
            for old in &previous {
                let id = old["id"].as_str().unwrap_or_default();
                match now.iter().find(|s| s["id"] == old["id"]) {
                    Some(_) if written.contains(&id) => assert!(
                        replaced.contains(&id),
                        "turn {turn}: {id} rewritten but not listed as replaced"
                    ),
                    Some(kept) => {
                        assert_eq!(kept, old, "turn {turn}: {id} changed without a merge")
                    }
                    None => assert!(
                        replaced.contains(&id),
                        "turn {turn}: {id} disappeared although no summary replaced it"
                    ),
                }
            }
            for id in &replaced {
                assert!(
                    previous.iter().any(|s| s["id"] == *id),
                    "turn {turn}: replaced {id} did not exist"
                );
            }
            merges += usize::from(!replaced.is_empty());
        }
        previous = play.workspace.session.history.summaries.clone();
        assert_eq!(play.failures.consecutive, 0);
    }
    assert!(accepted >= 3, "compaction ran {accepted} times");
    assert!(
        merges >= 1,
        "no run merged summaries, so the merge rule was never exercised"
    );
    let summaries = &play.workspace.session.history.summaries;
    let budget = Budget::for_window(play.workspace.windows().context_window);
    assert!(summaries.len() as u32 <= budget.max_segments);
    let total: u64 = summaries
        .iter()
        .map(|s| covel_kernel::sdk::estimate_tokens(s["content"].as_str().unwrap_or_default()))
        .sum();
    assert!(total <= budget.max_tokens);
}

#[test]
fn undoing_played_turns_restores_each_earlier_session_through_compactions() {
    let session = fixture("compaction/long.session.yaml");
    let ws = Workspace::open(
        &fixture("compaction/plugins"),
        Some(&session),
        &Limits::default(),
    )
    .expect("opens");
    let mut play = Playtest::new(ws);
    let mut states = vec![play.workspace.session.clone()];
    let mut compacted = 0;
    for turn in 0..8 {
        let report = play.play(&format!(
            "I search the pier for the {turn}th time and call out to Oren."
        ));
        assert!(report.error.is_none(), "{:?}", report.error);
        compacted += usize::from(report.compaction.applied.is_some());
        states.push(play.workspace.session.clone());
    }
    assert!(
        compacted >= 1,
        "no turn compacted, so undoing a rewritten history was never exercised"
    );
    // Each turn's session as it was before it can be rebuilt without undoing.
    for (index, state) in states.iter().enumerate().take(8) {
        let turn_id = states[index + 1]
            .history
            .messages
            .last()
            .and_then(|m| m["turnId"].as_str())
            .expect("a turn id")
            .to_string();
        assert_eq!(
            play.session_before(&turn_id).as_ref(),
            Some(state),
            "before {turn_id}"
        );
    }
    states.pop();
    while let Some(state) = states.pop() {
        assert!(play.undo());
        assert_eq!(play.workspace.session, state);
    }
    assert!(!play.undo());
}
