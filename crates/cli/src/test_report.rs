//! `covel test --reporter junit|tap`: the results as the reports CI services read. Both are
//! built from one flat list of cases — per session, one for the session itself (it could not
//! run, or a CI rule failed it), one per turn (it failed to play, or its golden snapshot
//! differs) and one per check — so the two formats say the same things.

use crate::output::terminal_safe;
use covel_studio::testing::golden::Difference;
use covel_studio::testing::{SessionResult, TurnResult};
use quick_xml::Writer;
use quick_xml::events::{BytesDecl, BytesText, Event};
use serde::Serialize;

/// One reported test case (named within its session: JUnit puts the session in `classname`,
/// TAP before the name).
struct Case {
    name: String,
    duration_ms: u32,
    /// On failure: a one-line message and the detail (diffs, what was found, where).
    failure: Option<(String, String)>,
}

/// The cases of one session (a JUnit testsuite).
struct Suite {
    name: String,
    duration_ms: u32,
    cases: Vec<Case>,
}

/// A difference in one line; a repeat names the turn that shows its diff.
pub fn difference_line(d: &Difference) -> String {
    let who = match (&d.from, &d.plugin) {
        (Some(from), Some(plugin)) => format!(" · {from} (plugin {plugin})"),
        (Some(from), None) => format!(" · {from}"),
        (None, Some(plugin)) => format!(" (plugin {plugin})"),
        (None, None) => String::new(),
    };
    match &d.same_as {
        Some(first) => format!("{}{who} {}: same as {first}", d.place, d.change),
        None if d.also_in.is_empty() => format!("{}{who} {}: {}", d.place, d.change, d.diff),
        None => format!(
            "{}{who} {} (also in {}): {}",
            d.place,
            d.change,
            d.also_in.join(", "),
            d.diff
        ),
    }
}

fn turn_case(turn: &TurnResult) -> Case {
    let failure = if let Some(error) = &turn.error {
        Some((
            error.lines().next().unwrap_or_default().to_string(),
            error.clone(),
        ))
    } else if !turn.golden_differences.is_empty() {
        let lines: Vec<String> = turn
            .golden_differences
            .iter()
            .map(difference_line)
            .collect();
        Some((
            format!(
                "the golden snapshot differs ({})",
                covel_studio::words::counted(lines.len(), "difference")
            ),
            lines.join("\n"),
        ))
    } else {
        None
    };
    Case {
        name: format!("{} · player: {}", turn.turn_id, turn.say),
        duration_ms: turn.duration_ms,
        failure,
    }
}

fn suites(results: &[SessionResult]) -> Vec<Suite> {
    results
        .iter()
        .map(|result| {
            let session = result.session.display().to_string();
            let mut cases = vec![Case {
                name: "session".into(),
                duration_ms: 0,
                failure: result
                    .error
                    .as_ref()
                    .map(|e| (e.lines().next().unwrap_or_default().to_string(), e.clone())),
            }];
            for turn in &result.turns {
                let first = cases.len();
                cases.push(turn_case(turn));
                for check in &turn.checks {
                    let failure = check.detail.as_ref().map(|detail| {
                        let at = check
                            .location
                            .as_ref()
                            .map(|l| format!("{l}: "))
                            .unwrap_or_default();
                        (
                            detail.clone(),
                            format!("{at}expected {} — {detail}", check.description),
                        )
                    });
                    cases.push(Case {
                        name: format!("{} › [{}] {}", turn.turn_id, check.rule, check.description),
                        duration_ms: 0,
                        failure,
                    });
                }
                // What failed in the turn explains its failures: a provider that failed left
                // its segment or slot value out.
                if !turn.failed_calls.is_empty() {
                    let calls: Vec<String> =
                        turn.failed_calls.iter().map(|c| format!("- {c}")).collect();
                    let context = format!(
                        "\n\nprovider calls that failed in {}:\n{}",
                        turn.turn_id,
                        calls.join("\n")
                    );
                    for case in &mut cases[first..] {
                        if let Some((_, detail)) = &mut case.failure {
                            detail.push_str(&context);
                        }
                    }
                }
            }
            Suite {
                name: session,
                duration_ms: result.duration_ms,
                cases,
            }
        })
        .collect()
}

fn seconds(ms: u32) -> String {
    format!("{:.3}", f64::from(ms) / 1000.0)
}

/// JUnit XML: one `testsuite` per session, one `testcase` per turn and per check, a `failure`
/// with the message and the diff or detail. Text is escaped by quick-xml; control characters
/// (not allowed in XML, even escaped) are written as `\u{…}` first.
pub fn junit(results: &[SessionResult]) -> anyhow::Result<String> {
    let suites = suites(results);
    let count = |pick: fn(&Case) -> bool| {
        suites
            .iter()
            .flat_map(|s| &s.cases)
            .filter(|c| pick(c))
            .count()
    };
    let total = count(|_| true).to_string();
    let failures = count(|c| c.failure.is_some()).to_string();
    let time: u32 = suites.iter().map(|s| s.duration_ms).sum();
    let mut writer = Writer::new_with_indent(Vec::new(), b' ', 2);
    writer.write_event(Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), None)))?;
    writer
        .create_element("testsuites")
        .with_attributes([
            ("name", "covel test"),
            ("tests", total.as_str()),
            ("failures", failures.as_str()),
            ("time", seconds(time).as_str()),
        ])
        .write_inner_content(|w| {
            for suite in &suites {
                let tests = suite.cases.len().to_string();
                let failed = suite.cases.iter().filter(|c| c.failure.is_some()).count();
                w.create_element("testsuite")
                    .with_attributes([
                        ("name", terminal_safe(&suite.name).as_str()),
                        ("tests", tests.as_str()),
                        ("failures", failed.to_string().as_str()),
                        ("errors", "0"),
                        ("time", seconds(suite.duration_ms).as_str()),
                    ])
                    .write_inner_content(|w| {
                        for case in &suite.cases {
                            let element = w.create_element("testcase").with_attributes([
                                ("classname", terminal_safe(&suite.name).as_str()),
                                ("name", terminal_safe(&case.name).as_str()),
                                ("time", seconds(case.duration_ms).as_str()),
                            ]);
                            match &case.failure {
                                None => {
                                    element.write_empty()?;
                                }
                                Some((message, detail)) => {
                                    element.write_inner_content(|w| {
                                        w.create_element("failure")
                                            .with_attribute((
                                                "message",
                                                terminal_safe(message).as_str(),
                                            ))
                                            .write_text_content(BytesText::new(&terminal_safe(
                                                detail,
                                            )))?;
                                        Ok(())
                                    })?;
                                }
                            }
                        }
                        Ok(())
                    })?;
            }
            Ok(())
        })?;
    Ok(String::from_utf8(writer.into_inner())? + "\n")
}

/// A TAP diagnostics block's fields.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Diagnostics<'a> {
    message: &'a str,
    severity: &'static str,
    detail: &'a str,
    duration_ms: u32,
}

/// TAP version 13: one test point per turn and per check (and one per session), each failure
/// followed by a YAML diagnostics block (written by serde-saphyr, indented two spaces).
pub fn tap(results: &[SessionResult]) -> anyhow::Result<String> {
    let cases: Vec<(String, Case)> = suites(results)
        .into_iter()
        .flat_map(|s| {
            let suite = s.name;
            s.cases.into_iter().map(move |c| (suite.clone(), c))
        })
        .collect();
    let mut out = format!("TAP version 13\n1..{}\n", cases.len());
    for (i, (suite, case)) in cases.iter().enumerate() {
        let name = terminal_safe(&format!("{suite} › {}", case.name)).replace('#', "\\#");
        match &case.failure {
            None => out.push_str(&format!("ok {} - {name}\n", i + 1)),
            Some((message, detail)) => {
                out.push_str(&format!("not ok {} - {name}\n  ---\n", i + 1));
                let yaml = serde_saphyr::to_string(&Diagnostics {
                    message: &terminal_safe(message),
                    severity: "fail",
                    detail: &terminal_safe(detail),
                    duration_ms: case.duration_ms,
                })?;
                for line in yaml.lines() {
                    out.push_str(&format!("  {line}\n"));
                }
                out.push_str("  ...\n");
            }
        }
    }
    Ok(out)
}
