//! End-to-end tests of the real `covel` binary: exit codes, human and JSON output.

use covel_tests::{copy_dir, files_under};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs `covel` with `args` from the repository root, outside CI mode whatever the test
/// runner's environment (`covel test` reads `CI`).
fn covel(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_covel"))
        .args(args)
        .env_remove("CI")
        .current_dir(repo())
        .output()
        .expect("covel runs")
}

/// Asserts the exit code, showing what the command wrote to stderr when it differs.
fn assert_exit(output: &Output, code: i32) {
    assert_eq!(
        output.status.code(),
        Some(code),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

fn json_of(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}",
            String::from_utf8_lossy(&output.stdout)
        )
    })
}

fn sample_plugins() -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(repo().join("plugins-sample"))
        .expect("plugins-sample exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("PLUGIN.md").is_file())
        .map(|p| {
            p.strip_prefix(repo())
                .expect("inside repo")
                .display()
                .to_string()
        })
        .collect();
    out.sort();
    out
}

#[test]
fn validate_accepts_every_sample_plugin() {
    let plugins = sample_plugins();
    let mut args = vec!["validate"];
    args.extend(plugins.iter().map(String::as_str));
    let out = covel(&args);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    // A plugin of hooks only is said as such, not as "0 providers".
    assert!(
        text.lines()
            .any(|l| l.starts_with("✓ narration-review (1 hook, loaded in ")),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("✓ quest-log (1 provider, 1 tool, 1 hook, loaded in ")),
        "{text}"
    );
}

#[test]
fn validate_rejects_each_broken_fixture_with_exit_1_and_json_diagnostics() {
    let broken = repo().join("tests/fixtures/broken");
    for entry in std::fs::read_dir(&broken).expect("fixtures") {
        let dir = entry.expect("entry").path();
        let out = covel(&["validate", "--json", dir.to_str().expect("utf-8 path")]);
        assert_eq!(out.status.code(), Some(1), "{}", dir.display());
        let report = json_of(&out);
        let plugin = &report["plugins"][0];
        assert_eq!(plugin["ok"], false);
        let diagnostic = &plugin["diagnostics"][0];
        for field in ["code", "message", "file"] {
            assert!(
                diagnostic[field].as_str().is_some_and(|s| !s.is_empty()),
                "{}: {field} missing in {diagnostic}",
                dir.display()
            );
        }
        // `null` is not a position: every broken fixture's problem has a known line and column.
        for field in ["line", "column"] {
            assert!(
                diagnostic[field].as_u64().is_some_and(|n| n > 0),
                "{}: {field} is not a position in {diagnostic}",
                dir.display()
            );
        }
        let expected = std::fs::read_to_string(dir.join("expected-code")).expect("expected-code");
        assert_eq!(diagnostic["code"], expected.trim());
    }
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(covel(&["validate"]).status.code(), Some(2));
    assert_eq!(
        covel(&["call", "plugins-sample", "history.compact@1"])
            .status
            .code(),
        Some(2)
    );
    assert_eq!(
        covel(&["validate", "no/such/folder"]).status.code(),
        Some(2)
    );
}

#[test]
fn call_prints_point_mode_result_and_trace() {
    let out = covel(&[
        "call",
        "plugins-sample",
        "prompt.segment@1",
        "--input",
        r#"{"turnId":"t1","playerMessage":"Hello"}"#,
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let report = json_of(&out);
    assert_eq!(report["point"], "prompt.segment@1");
    assert_eq!(report["mode"], "collect");
    assert!(report["result"].as_array().is_some_and(|a| !a.is_empty()));
    let call = &report["calls"][0];
    for field in [
        "point",
        "pluginId",
        "providerId",
        "order",
        "outcome",
        "durationMs",
    ] {
        assert!(call.get(field).is_some(), "{field} missing in {call}");
    }
    assert!(report["error"].is_null());
}

#[test]
fn call_selects_a_slot_and_fails_with_exit_1_when_the_run_fails() {
    let out = covel(&[
        "call",
        "plugins-sample",
        "ui.slot@1",
        "--slot",
        "stage.cast@1",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(json_of(&out)["calls"].as_array().map(Vec::len), Some(2));

    let out = covel(&[
        "call",
        "tests/fixtures/runner-single",
        "session.world-context@1",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(json_of(&out)["error"]["code"], "conflicting-providers");
}

#[test]
fn call_without_the_input_a_point_needs_says_how_to_pass_it_and_shows_no_result() {
    let out = covel(&["call", "plugins-sample", "prompt.segment@1"]);
    assert_exit(&out, 1);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("error: invalid input: does not match prompt.segment@1 input"),
        "{text}"
    );
    assert!(
        text.contains("hint: without --input the input is {}; pass it as JSON"),
        "{text}"
    );
    assert!(
        !text.lines().any(|l| l == "null"),
        "a failed run shows no result: {text}"
    );
    // With an input given, a wrong one gets no hint about --input.
    let out = covel(&[
        "call",
        "plugins-sample",
        "prompt.segment@1",
        "--input",
        "{\"turnId\": 1}",
    ]);
    assert_exit(&out, 1);
    assert!(!String::from_utf8_lossy(&out.stdout).contains("hint: without --input"));
}

#[test]
fn call_and_preview_name_a_failed_provider_after_the_result_and_exit_1_for_it_with_strict() {
    // Collect leaves a provider that throws out and goes on: the run succeeds, so without
    // --strict the exit is 0, and the failure is said again after the (long) result.
    let dir = sample_copy();
    edit(
        &dir.path().join("story-director/server/index.js"),
        "const { tone } = ctx.getOwnSettings();",
        "throw new Error(\"tone broke\");",
    );
    let folder = dir.path().to_str().expect("utf-8");
    let input = r#"{"turnId":"t1","playerMessage":"hi"}"#;
    let why =
        "⚠ provider failed: story-director/tone on prompt.segment@1 → error: Error: tone broke";

    let out = covel(&["call", folder, "prompt.segment@1", "--input", input]);
    assert_exit(&out, 0);
    let text = String::from_utf8_lossy(&out.stdout);
    let last = text.lines().rev().take(2).collect::<Vec<_>>();
    assert!(last[1].starts_with(why), "{text}");
    assert_eq!(
        last[0],
        "1 provider call failed and left out; the rest went on (--strict makes this exit 1)"
    );
    let out = covel(&[
        "call",
        folder,
        "prompt.segment@1",
        "--input",
        input,
        "--strict",
    ]);
    assert_exit(&out, 1);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("1 provider call failed: exit 1 (--strict)")
    );
    let json = json_of(&covel(&[
        "call",
        folder,
        "prompt.segment@1",
        "--input",
        input,
        "--json",
    ]));
    assert_eq!(json["failedCalls"][0]["providerId"], "tone");
    assert_eq!(json["failedCalls"][0]["outcome"], "error");
    assert!(json["result"].as_array().is_some_and(|r| !r.is_empty()));

    // The preview says it the same way, and --strict fails it too.
    let session = dir.path().join("demo.session.yaml");
    let session = session.to_str().expect("utf-8");
    let out = covel(&["preview", folder, "--session", session]);
    assert_exit(&out, 0);
    assert!(String::from_utf8_lossy(&out.stdout).contains(why));
    assert_exit(
        &covel(&["preview", folder, "--session", session, "--strict"]),
        1,
    );
    let json = json_of(&covel(&["preview", folder, "--session", session, "--json"]));
    assert_eq!(json["failedCalls"][0]["pluginId"], "story-director");

    // The sample as it is fails nothing, with --strict as without.
    let out = covel(&[
        "call",
        "plugins-sample",
        "prompt.segment@1",
        "--input",
        input,
        "--strict",
    ]);
    assert_exit(&out, 0);
    assert!(!String::from_utf8_lossy(&out.stdout).contains("provider failed"));
}

#[test]
fn call_reads_its_input_from_a_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("input.json");
    std::fs::write(&file, r#"{"turnId":"t1","playerMessage":"From a file"}"#).expect("write");
    let arg = format!("@{}", file.display());
    let out = covel(&[
        "call",
        "plugins-sample",
        "prompt.segment@1",
        "--input",
        &arg,
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("From a file"));
}

#[test]
fn resolve_prints_active_rejected_and_unmet() {
    let out = covel(&[
        "resolve",
        "tests/fixtures/resolver/plugins",
        "--session",
        "tests/fixtures/resolver/sessions/ambiguous-provider.session.yaml",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let report = json_of(&out);
    assert_eq!(report["rejected"][0]["code"], "ambiguous-provider");
    assert_eq!(
        report["rejected"][0]["candidates"],
        serde_json::json!(["lore-one", "lore-two"])
    );
    assert!(report["active"].is_array() && report["unmet"].is_array());

    let out = covel(&[
        "resolve",
        "tests/fixtures/resolver/plugins",
        "--session",
        "tests/fixtures/resolver/sessions/world-dimensions-excluded.session.yaml",
        "--json",
    ]);
    assert_eq!(json_of(&out)["unmet"][0]["contract"], "world.dimensions@1");
}

#[test]
fn call_runs_with_the_sessions_context() {
    let out = covel(&[
        "call",
        "plugins-sample",
        "session.world-context@1",
        "--session",
        "plugins-sample/demo.session.yaml",
        "--json",
    ]);
    assert_exit(&out, 0);
    let report = json_of(&out);
    assert_eq!(report["result"]["dimensions"]["trust"]["value"], 4);
    assert_eq!(report["result"]["entries"]["era"], "after the flood");
    assert_eq!(report["result"]["dimensionProviderPluginId"], "world-state");
}

#[test]
fn an_invalid_session_file_is_a_usage_error_with_its_position() {
    let out = covel(&[
        "resolve",
        "plugins-sample",
        "--session",
        "tests/fixtures/sessions-invalid/unknown-key.session.yaml",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("unknown-key.session.yaml:5:"), "{err}");
}

fn redact(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, item) in map.iter_mut() {
                if key == "timings" || key.ends_with("Ms") {
                    *item = Value::String("[ms]".into());
                } else {
                    redact(item);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(redact),
        _ => {}
    }
}

#[test]
fn preview_of_the_demo_session_matches_its_snapshot() {
    let out = covel(&[
        "preview",
        "plugins-sample",
        "--session",
        "plugins-sample/demo.session.yaml",
        "--json",
    ]);
    assert_exit(&out, 0);
    let mut report = json_of(&out);
    for field in [
        "prompt",
        "segments",
        "cache",
        "calls",
        "worldContext",
        "slots",
    ] {
        assert!(report.get(field).is_some(), "{field} missing");
    }
    assert!(
        report["prompt"]["system"]["blocks"][0]
            .get("cacheBoundary")
            .is_some()
    );
    redact(&mut report);
    insta::assert_json_snapshot!("demo_preview", report);
}

#[test]
fn preview_prints_the_prompt_with_boundaries_then_the_segment_table() {
    let out = covel(&[
        "preview",
        "plugins-sample",
        "--session",
        "plugins-sample/demo.session.yaml",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    let boundary = text.find("cache boundary 0").expect("boundaries are drawn");
    let table = text.find("Segments (sorted").expect("segment table");
    assert!(boundary < table);
    assert!(
        text.contains("moving cache breakpoint 3 · CHANGES next turn"),
        "the history breakpoint is drawn under m4"
    );
    assert!(
        text.contains(
            "first difference: segment lore-book/remember; next turn: history message m4"
        ),
        "{text}"
    );
    assert!(
        text.contains("fix: Keep it behind the moving breakpoint"),
        "the verdict comes with what to change"
    );
    assert_eq!(
        covel(&["preview", "plugins-sample", "--runtime", "nonsense"])
            .status
            .code(),
        Some(2)
    );
    let own = covel(&[
        "preview",
        "plugins-sample",
        "--runtime",
        "plugin:story-director",
        "--json",
    ]);
    let report = json_of(&own);
    let rules = report["segments"]
        .as_array()
        .expect("segments")
        .iter()
        .find(|s| s["id"] == "reply-rules")
        .expect("static segment");
    assert_eq!(
        rules["included"], true,
        "a plugin's own runtime sees its self segments"
    );
}

/// A child process killed when the test ends, however it ends.
struct Reaped(std::process::Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The child's stdout lines, read on a thread, so a test waits for each with a deadline.
fn lines_of(child: &mut std::process::Child) -> std::sync::mpsc::Receiver<String> {
    use std::io::BufRead;
    let stdout = child.stdout.take().expect("piped stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

fn next_json(lines: &std::sync::mpsc::Receiver<String>, what: &str) -> Value {
    let line = lines
        .recv_timeout(std::time::Duration::from_secs(30))
        .unwrap_or_else(|e| panic!("no {what} line within 30 s: {e}"));
    serde_json::from_str(&line).unwrap_or_else(|e| panic!("{what} line is not JSON ({e}): {line}"))
}

/// `covel watch DIR --session DIR/demo.session.yaml --json --max-reloads 1`, and its lines.
fn watch_one_reload(dir: &Path) -> (Reaped, std::sync::mpsc::Receiver<String>) {
    let mut child = Reaped(
        Command::new(env!("CARGO_BIN_EXE_covel"))
            .args([
                "watch",
                dir.to_str().expect("utf-8"),
                "--session",
                dir.join("demo.session.yaml").to_str().expect("utf-8"),
                "--json",
                "--max-reloads",
                "1",
            ])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("covel watch starts"),
    );
    let lines = lines_of(&mut child.0);
    (child, lines)
}

#[test]
fn watch_sees_a_save_made_while_the_folder_is_still_loading() {
    let temp = tempfile::tempdir().expect("tempdir");
    let dir = temp.path().join("plugins");
    copy_dir(&repo().join("plugins-sample"), &dir);
    // Three plugins whose entries never finish hold the load for about 4 s (each stopped at
    // the 2 s load limit, two at a time). They load last (plugins load in name order), so the
    // story director has been read before the save.
    for name in ["zz-loop-a", "zz-loop-b", "zz-loop-c"] {
        let root = dir.join(name);
        std::fs::create_dir_all(root.join("server")).expect("mkdir");
        std::fs::write(
            root.join("PLUGIN.md"),
            format!("---\nid: {name}\nkind: plugin\ndescription: Loops.\nentry: ./server/index.js\n---\n"),
        )
        .expect("manifest");
        std::fs::write(
            root.join("server/index.js"),
            "for (;;) {}\nexport default function () {}\n",
        )
        .expect("entry");
    }
    // Held to the end: dropping it stops the process.
    let (_child, lines) = watch_one_reload(&dir);
    // The author saves while the folder loads, before `ready`.
    std::thread::sleep(std::time::Duration::from_millis(1500));
    assert!(
        lines.try_recv().is_err(),
        "the folder should still be loading"
    );
    let module = dir.join("story-director/server/lib/text.js");
    let text = std::fs::read_to_string(&module).expect("read");
    std::fs::write(&module, text.replace("grave, unhurried", "grave, patient")).expect("write");
    assert_eq!(next_json(&lines, "ready")["event"], "ready");
    // The save is a reload (an idle memo confirmation may come first).
    let reload = loop {
        let line = next_json(&lines, "reload");
        if line["event"] != "memo-confirmed" {
            break line;
        }
    };
    assert_eq!(reload["plugins"]["story-director"], "replaced", "{reload}");
}

#[test]
fn watch_prints_one_json_entry_per_reload_with_diff_and_timings() {
    let temp = tempfile::tempdir().expect("tempdir");
    let dir = temp.path().join("plugins");
    copy_dir(&repo().join("plugins-sample"), &dir);
    let (mut child, lines) = watch_one_reload(&dir);
    let ready = next_json(&lines, "ready");
    assert_eq!(ready["event"], "ready");
    // Idle after opening: the calls that ran once run a second time (the memo's rule), and the
    // line says how many.
    let confirmed = next_json(&lines, "memo-confirmed");
    assert_eq!(confirmed["event"], "memo-confirmed");
    assert!(
        confirmed["calls"].as_u64().is_some_and(|n| n > 0),
        "{confirmed}"
    );
    assert!(confirmed["ms"].is_number());
    let module = dir.join("story-director/server/lib/text.js");
    let text = std::fs::read_to_string(&module).expect("read");
    std::fs::write(&module, text.replace("grave, unhurried", "grave, patient")).expect("write");
    let entry = next_json(&lines, "reload");
    assert_eq!(entry["plugins"]["story-director"], "replaced");
    assert_eq!(entry["diff"]["segments"][0]["id"], "tone");
    for field in [
        "reloadMs",
        "afterDebounceMs",
        "loadMs",
        "resolveMs",
        "previewMs",
    ] {
        assert!(entry["timings"][field].is_number(), "{field}");
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.0.try_wait().expect("wait") {
            break status;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "covel watch did not exit after --max-reloads 1"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert!(status.success());
}

#[test]
fn play_runs_scripted_turns_and_saves_the_session() {
    let temp = tempfile::tempdir().expect("tempdir");
    let dir = temp.path();
    let saved = dir.join("played.session.yaml");
    let out = covel(&[
        "play",
        "plugins-sample",
        "--session",
        "plugins-sample/demo.session.yaml",
        "--say",
        "I swim.",
        "--say",
        "I climb.",
        "--save",
        saved.to_str().expect("utf-8"),
        "--json",
    ]);
    assert_exit(&out, 0);
    let report = json_of(&out);
    assert_eq!(report["turns"].as_array().map(Vec::len), Some(2));
    assert!(
        report["turns"][0]["reply"]["text"]
            .as_str()
            .is_some_and(|t| t.contains("Scripted narrator"))
    );
    let reopened = covel(&[
        "resolve",
        "plugins-sample",
        "--session",
        saved.to_str().expect("utf-8"),
    ]);
    assert_eq!(
        reopened.status.code(),
        Some(0),
        "the saved session opens again"
    );
}

#[test]
fn play_never_writes_played_turns_into_the_authored_session_unasked() {
    let dir = tempfile::tempdir().expect("tempdir");
    let authored = dir.path().join("mine.session.yaml");
    let text = "# my comments\nid: mine\nlocale: en\n";
    std::fs::write(&authored, text).expect("write");
    let path = authored.to_str().expect("utf-8");
    let refused = covel(&[
        "play",
        "plugins-sample",
        "--session",
        path,
        "--say",
        "I swim.",
        "--save",
        path,
    ]);
    assert_eq!(refused.status.code(), Some(2), "refused as a usage error");
    assert!(String::from_utf8_lossy(&refused.stderr).contains("is the authored session"));
    assert_eq!(
        std::fs::read_to_string(&authored).expect("read"),
        text,
        "the author's file is untouched"
    );
    let default_save = covel(&[
        "play",
        "plugins-sample",
        "--session",
        path,
        "--say",
        "I swim.",
        "--save",
    ]);
    assert_exit(&default_save, 0);
    assert!(
        dir.path().join("mine.played.session.yaml").is_file(),
        "a new file beside the session"
    );
    let overwritten = covel(&[
        "play",
        "plugins-sample",
        "--session",
        path,
        "--say",
        "I swim.",
        "--save",
        path,
        "--overwrite",
    ]);
    assert_eq!(overwritten.status.code(), Some(0));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("mine.session.yaml.bak")).expect("backup"),
        text,
        "the authored text is kept as .bak"
    );
}

#[test]
fn compact_validates_a_hand_written_output_rule_by_rule() {
    let temp = tempfile::tempdir().expect("tempdir");
    let dir = temp.path();
    let bad = dir.join("bad.json");
    std::fs::write(&bad, r#"{"summaries":[{"messageIds":["m2u"],"replacesSummaryIds":[],"content":"skips the first","focusSections":[]}]}"#).expect("write");
    let out = covel(&[
        "compact",
        "tests/fixtures/compaction/plugins",
        "--session",
        "tests/fixtures/compaction/long.session.yaml",
        "--output",
        bad.to_str().expect("utf-8"),
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let report = json_of(&out);
    let broken: Vec<&str> = report["run"]["verdict"]["rules"]
        .as_array()
        .expect("rules")
        .iter()
        .filter(|r| r["ok"] == false)
        .filter_map(|r| r["rule"].as_str())
        .collect();
    assert_eq!(broken, ["message-prefix-in-order"]);
    assert_eq!(report["failureCount"], 1);
    assert!(report["run"]["input"]["summaryBudget"]["maxTokens"].is_number());
}

#[test]
fn compact_force_runs_under_the_threshold_and_applies_the_summary() {
    let args = [
        "compact",
        "tests/fixtures/compaction/plugins",
        "--session",
        "tests/fixtures/compaction/long.session.yaml",
        "--json",
    ];
    let plain = covel(&args);
    assert_eq!(plain.status.code(), Some(0));
    let report = json_of(&plain);
    assert_eq!(
        report["run"]["triggered"], false,
        "the session is under the threshold"
    );
    assert!(report["run"]["estimatedTokens"].as_f64() < report["run"]["thresholdTokens"].as_f64());
    assert_eq!(report["summariesAfter"], serde_json::json!([]));

    let mut forced_args = args.to_vec();
    forced_args.push("--force");
    let forced = covel(&forced_args);
    assert_exit(&forced, 0);
    let report = json_of(&forced);
    assert_eq!(report["run"]["triggered"], true);
    assert_eq!(report["run"]["verdict"]["accepted"], true);
    let summaries = report["summariesAfter"].as_array().expect("summaries");
    assert_eq!(summaries.len(), 1);
    let tagged = report["historyAfter"]
        .as_array()
        .expect("history")
        .iter()
        .filter(|m| m["compactedAtTurnId"] == summaries[0]["id"])
        .count();
    assert!(
        tagged > 0,
        "the covered messages are marked with the new summary"
    );
}

#[test]
fn play_exits_1_when_a_turn_fails_and_plays_no_further() {
    let out = covel(&[
        "play",
        "tests/fixtures/world/plugins",
        "--session",
        "tests/fixtures/world/sessions/throws.session.yaml",
        "--say",
        "Hello.",
        "--say",
        "Hello again.",
        "--json",
    ]);
    assert_exit(&out, 1);
    let report = json_of(&out);
    let turns = report["turns"].as_array().expect("turns");
    assert_eq!(
        turns.len(),
        1,
        "the second message is not played after a failed turn"
    );
    assert!(
        turns[0]["error"]
            .as_str()
            .is_some_and(|e| e.contains("dimension store unreachable")),
        "{}",
        turns[0]["error"]
    );
    assert!(turns[0].get("reply").is_none());
}

#[test]
fn preview_assembles_for_the_runtime_of_an_output_contract() {
    let out = covel(&[
        "preview",
        "tests/fixtures/prompt/plugins",
        "--session",
        "tests/fixtures/prompt/session.yaml",
        "--runtime",
        "contract:other@1",
        "--json",
    ]);
    assert_exit(&out, 0);
    let report = json_of(&out);
    assert_eq!(
        report["runtime"],
        serde_json::json!({"kind": "contract", "id": "other@1"})
    );
    let included: Vec<&str> = report["segments"]
        .as_array()
        .expect("segments")
        .iter()
        .filter(|s| s["plugin"] == "audience" && s["included"] == true)
        .filter_map(|s| s["id"].as_str())
        .collect();
    assert_eq!(
        included,
        ["for-all", "for-other", "for-self", "static-rule"],
        "{{contract: other@1}} and the producing plugin's self segments"
    );
    assert_eq!(
        report["prompt"]["system"]["blocks"][1]["text"],
        "You are the audience plugin's own runtime.",
        "the body of the runtime that has the contract"
    );

    let nobody = covel(&[
        "preview",
        "tests/fixtures/prompt/plugins",
        "--session",
        "tests/fixtures/prompt/session.yaml",
        "--runtime",
        "contract:nobody@1",
    ]);
    // A contract no active plugin's runtime produces is previewed all the same, with a note:
    // what such a runtime from another package would get.
    assert_exit(&nobody, 0);
    let text = String::from_utf8_lossy(&nobody.stdout);
    assert!(
        text.starts_with("note: no active plugin has a runtime whose output contract is `nobody@1`: this is the prompt such a runtime would get"),
        "{text}"
    );
    assert!(text.contains("System prompt"), "{text}");
    let ill_formed = covel(&[
        "preview",
        "tests/fixtures/prompt/plugins",
        "--session",
        "tests/fixtures/prompt/session.yaml",
        "--runtime",
        "contract:Nobody",
    ]);
    assert_exit(&ill_formed, 2);
    assert!(
        String::from_utf8_lossy(&ill_formed.stderr)
            .contains("`Nobody` is not a versioned contract id (expected `name@N`"),
        "{}",
        String::from_utf8_lossy(&ill_formed.stderr)
    );
}

#[test]
fn preview_shows_minimal_history_messages_in_order_with_derived_fields() {
    let out = covel(&[
        "preview",
        "plugins-sample",
        "--session",
        "tests/fixtures/sessions/minimal-history.session.yaml",
        "--json",
    ]);
    assert_exit(&out, 0);
    let report = json_of(&out);
    let history: Vec<(String, String)> = report["prompt"]["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| m["origin"]["kind"] == "history")
        .map(|m| {
            (
                m["origin"]["id"].as_str().unwrap_or_default().to_string(),
                m["role"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    let expected = [
        ("m1", "user"),
        ("m2", "assistant"),
        ("ask", "user"),
        ("m4", "assistant"),
    ];
    assert_eq!(
        history,
        expected.map(|(i, r)| (i.to_string(), r.to_string()))
    );
    assert_eq!(
        report["turnId"], "turn-3",
        "two derived turns precede the previewed one"
    );
    let text = covel(&[
        "preview",
        "plugins-sample",
        "--session",
        "tests/fixtures/sessions/minimal-history.session.yaml",
    ]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("(history m1, ") && text.find("(history m1, ") < text.find("(history m4, "),
        "{text}"
    );
}

#[test]
fn a_history_message_without_content_is_a_session_schema_error_with_line_and_column() {
    let out = covel(&[
        "preview",
        "plugins-sample",
        "--session",
        "tests/fixtures/sessions-invalid/history-without-content.session.yaml",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("history-without-content.session.yaml:5:7: [session-schema]"),
        "{err}"
    );
}

#[test]
fn compaction_of_a_minimal_history_accepts_a_valid_prefix() {
    let dir = tempfile::tempdir().expect("tempdir");
    let output = dir.path().join("prefix.json");
    std::fs::write(&output, r#"{"summaries":[{"messageIds":["m1","m2"],"replacesSummaryIds":[],"content":"Mira reached the harbour; the tide was out.","focusSections":[]}]}"#).expect("write");
    let out = covel(&[
        "compact",
        "plugins-sample",
        "--session",
        "tests/fixtures/sessions/minimal-history.session.yaml",
        "--output",
        output.to_str().expect("utf-8"),
        "--json",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let report = json_of(&out);
    assert_eq!(
        report["run"]["verdict"]["accepted"], true,
        "{}",
        report["run"]["verdict"]
    );
    let compacted: Vec<&str> = report["historyAfter"]
        .as_array()
        .expect("history")
        .iter()
        .filter(|m| m.get("compactedAtTurnId").is_some())
        .filter_map(|m| m["id"].as_str())
        .collect();
    assert_eq!(compacted, ["m1", "m2"]);
}

#[test]
fn a_run_that_fails_as_a_whole_is_in_the_preview_json_and_text_and_exits_1() {
    let args = [
        "preview",
        "tests/fixtures/world/plugins",
        "--session",
        "tests/fixtures/world/sessions/throws.session.yaml",
    ];
    let out = covel(&[&args[..], &["--json"]].concat());
    assert_eq!(out.status.code(), Some(1));
    let report = json_of(&out);
    assert_eq!(report["errors"][0]["point"], "session.world-context@1");
    assert_eq!(report["errors"][0]["error"]["code"], "fail-turn");
    let out = covel(&args);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("Runs that failed"), "{text}");
    assert!(
        text.contains("✗ session.world-context@1 (this-turn): provider"),
        "{text}"
    );
}

// ---- covel test ------------------------------------------------------------------------------

/// A temporary copy of plugins-sample (removed on drop).
fn sample_copy() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    copy_dir(&repo().join("plugins-sample"), dir.path());
    dir
}

fn edit(path: &Path, from: &str, to: &str) {
    let text = std::fs::read_to_string(path).expect("read");
    assert!(text.contains(from), "{from} not in {}", path.display());
    std::fs::write(path, text.replace(from, to)).expect("write");
}

#[test]
fn test_finds_and_passes_the_sample_test_sessions() {
    let out = covel(&["test", "plugins-sample", "--json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let report = json_of(&out);
    let sessions = report["sessions"].as_array().expect("sessions");
    let names: Vec<String> = sessions
        .iter()
        .filter_map(|s| s["session"].as_str())
        .map(|s| s.rsplit('/').next().unwrap_or_default().to_string())
        .collect();
    assert_eq!(
        names,
        [
            "demo.session.yaml",
            "bell-tower.session.yaml",
            "replayed.session.yaml",
            "scene-tools.session.yaml",
            "without-lore.session.yaml"
        ]
    );
    assert!(
        sessions.iter().all(|s| s["golden"] == "matches"),
        "{sessions:?}"
    );
    let checks: usize = sessions
        .iter()
        .flat_map(|s| s["turns"].as_array().into_iter().flatten())
        .map(|t| t["checks"].as_array().map_or(0, Vec::len))
        .sum();
    assert!(
        checks >= 20,
        "the sample sessions check placements, slots, world, cache, tokens and providers"
    );
    // A session's `plugins: ..` is said as the folder it names, not as `tests/..`.
    let text = covel(&["test", "plugins-sample"]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains(
            "✓ plugins-sample/tests/bell-tower.session.yaml (plugins: plugins-sample) · "
        ),
        "{text}"
    );
}

#[test]
fn test_names_the_file_line_column_and_field_where_a_golden_snapshot_breaks() {
    let dir = sample_copy();
    let golden = dir.path().join("demo.golden.yaml");
    let text = std::fs::read_to_string(&golden).expect("read");
    // An editor's slip: the turns list written as a plain value.
    let broken = text.replacen("turns:\n", "turns: none\n", 1);
    assert_ne!(broken, text, "the golden snapshot lists its turns");
    std::fs::write(&golden, broken).expect("write");
    let demo = dir.path().join("demo.session.yaml");
    let out = covel(&["test", demo.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .find(|l| l.contains("cannot read the golden snapshot"))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(
        line.contains("demo.golden.yaml:")
            && line.contains("`turns`: expected a list here")
            && !line.contains("<input>"),
        "{line}"
    );
}

#[test]
fn test_fails_on_a_changed_segment_with_a_word_diff_naming_the_plugin_and_update_makes_it_pass() {
    let dir = sample_copy();
    edit(
        &dir.path().join("story-director/server/lib/text.js"),
        "grave, unhurried",
        "grave, patient",
    );
    let demo = dir.path().join("demo.session.yaml");
    let out = covel(&["test", demo.to_str().expect("utf-8"), "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let report = json_of(&out);
    let session = &report["sessions"][0];
    assert_eq!(session["golden"], "differs");
    let difference = &session["turns"][0]["goldenDifferences"][0];
    assert_eq!(difference["place"], "system block stable-segments");
    assert_eq!(difference["from"], "segment story-director/tone");
    assert_eq!(difference["plugin"], "story-director");
    assert_eq!(
        difference["diff"],
        "Keep a grave, [-unhurried-]{+patient+} narrative voice."
    );

    let human = covel(&["test", demo.to_str().expect("utf-8")]);
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(text.contains("segment story-director/tone (plugin story-director) changed: Keep a grave, [-unhurried-]{+patient+}"), "{text}");

    let update = covel(&["test", demo.to_str().expect("utf-8"), "--update", "--json"]);
    assert_eq!(update.status.code(), Some(0));
    assert_eq!(json_of(&update)["sessions"][0]["golden"], "pending");
    let review = covel(&[
        "test",
        demo.to_str().expect("utf-8"),
        "--review",
        "--accept-all",
    ]);
    assert_exit(&review, 0);
    let again = covel(&["test", demo.to_str().expect("utf-8"), "--json"]);
    assert_eq!(
        again.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&again.stdout)
    );
    assert_eq!(json_of(&again)["sessions"][0]["golden"], "matches");
}

#[test]
fn test_reports_each_failed_expectation_with_its_rule_and_what_was_found() {
    let dir = sample_copy();
    let session = dir.path().join("tests/bell-tower.session.yaml");
    edit(
        &session,
        "block: turn-tail, position: 0",
        "block: stable-segments, position: 0",
    );
    edit(
        &session,
        "pointer: /dimensions/trust/value, equals: 4",
        "pointer: /dimensions/trust/value, equals: 5",
    );
    edit(
        &session,
        "{ plugin: story-director, max: 120 }",
        "{ plugin: story-director, max: 5 }",
    );
    let out = covel(&["test", session.to_str().expect("utf-8"), "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let report = json_of(&out);
    let failed: Vec<(String, String)> = report["sessions"][0]["turns"][0]["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .filter(|c| c["passed"] == false)
        .map(|c| {
            (
                c["rule"].as_str().unwrap_or_default().to_string(),
                c["detail"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    assert_eq!(failed.len(), 3, "{failed:?}");
    assert_eq!(
        failed[0],
        (
            "segment-placement".to_string(),
            "it is in turn-tail".to_string()
        )
    );
    assert_eq!(
        failed[1],
        ("world-value".to_string(), "found 4".to_string())
    );
    assert_eq!(failed[2].0, "token-budget");
    assert!(failed[2].1.ends_with("tokens (estimateTokens)"));
}

#[test]
fn test_fails_loudly_on_a_replay_miss_with_the_nearest_recorded_request() {
    let dir = sample_copy();
    let session = dir.path().join("tests/replayed.session.yaml");
    edit(
        &session,
        "- say: I dive for the bell.",
        "- say: I dive for the bronze bell.",
    );
    let out = covel(&["test", session.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("replay miss: none of the 3 recorded anthropic requests equals this request; nearest is exchange #1"), "{text}");
    assert!(text.contains("I dive for the {+bronze +}bell."), "{text}");
}

/// A recording whose usage contradicts the prompt it answered (#51): 21 input tokens reported
/// for a request the forecast puts at about a thousand fails the session, naming the turn, the
/// predicted range and by how much, in every reporter. Turns answered by scripted replies or the
/// scripted model report no usage and have nothing to check.
#[test]
fn test_fails_a_replay_whose_reported_usage_is_outside_the_predicted_range() {
    let dir = sample_copy();
    edit(
        &dir.path().join("tests/replayed.recording.json"),
        "\"input_tokens\": 1032",
        "\"input_tokens\": 21",
    );
    let session = "tests/replayed.session.yaml";
    let out = covel_in(dir.path(), &["test", session]);
    assert_exit(&out, 1);
    let text = String::from_utf8_lossy(&out.stdout);
    let said = "✗ [reported-usage] turn-1's reported input tokens (21) are in the range predicted for claude-sonnet-4-5 (1032, 834–1321 by the estimate's error bar) — the provider reported 21 input tokens in all (uncached, cache write and cache read) where 1032 were predicted (818–1337 allowed), 797 under the range";
    assert!(text.contains(said), "{text}");
    assert!(
        text.contains("✓ [reported-usage] turn-2's reported input tokens (1067)"),
        "the other turn agrees: {text}"
    );

    let json = json_of(&covel_in(dir.path(), &["test", session, "--json"]));
    let check = |turn: usize| {
        json["sessions"][0]["turns"][turn]["checks"]
            .as_array()
            .and_then(|c| c.iter().find(|c| c["rule"] == "reported-usage"))
            .cloned()
            .expect("a usage check")
    };
    assert_eq!(check(0)["passed"], false);
    assert!(
        check(0)["detail"]
            .as_str()
            .is_some_and(|d| d.contains("797 under the range")),
        "{}",
        check(0)
    );
    assert_eq!(check(1)["passed"], true);

    let junit = covel_in(dir.path(), &["test", session, "--reporter", "junit"]);
    assert_exit(&junit, 1);
    let junit = String::from_utf8_lossy(&junit.stdout);
    assert!(
        junit.contains("<failure") && junit.contains("797 under the range"),
        "{junit}"
    );
    let tap = covel_in(dir.path(), &["test", session, "--reporter", "tap"]);
    assert_exit(&tap, 1);
    let tap = String::from_utf8_lossy(&tap.stdout);
    assert!(
        tap.contains("not ok") && tap.contains("797 under the range"),
        "{tap}"
    );

    let scripted = json_of(&covel_in(
        dir.path(),
        &["test", "tests/scene-tools.session.yaml", "--json"],
    ));
    let rules: Vec<&Value> = scripted["sessions"][0]["turns"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|t| t["checks"].as_array().into_iter().flatten())
        .map(|c| &c["rule"])
        .collect();
    assert!(!rules.is_empty() && !rules.iter().any(|r| *r == "reported-usage"));
}

#[test]
fn test_refuses_live_backends() {
    let dir = sample_copy();
    let session = dir.path().join("tests/replayed.session.yaml");
    edit(
        &session,
        "backend: replay, recording: replayed.recording.json",
        "backend: anthropic, baseUrl: \"http://127.0.0.1:9\"",
    );
    let out = covel(&["test", session.to_str().expect("utf-8"), "--json"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        json_of(&out)["sessions"][0]["error"]
            .as_str()
            .is_some_and(|e| e.contains("tests never call live models"))
    );
}

/// A loopback Anthropic fake: answers `replies.len()` requests in order, then stops by itself
/// (a request after that is refused); joined, it gives the request bodies it received.
fn anthropic_fake(replies: Vec<&'static str>) -> (String, std::thread::JoinHandle<Vec<Value>>) {
    use covel_tests::http_fake::{accept_within, read_request, write_json};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let handle = std::thread::spawn(move || {
        let mut received = Vec::new();
        for reply in replies {
            let Some(mut stream) = accept_within(&listener, std::time::Duration::from_secs(30))
            else {
                return received;
            };
            let (_, body) = read_request(&stream).expect("request");
            received.push(serde_json::from_slice(&body).expect("a JSON request"));
            // No input figures: the fake cannot know what Claude would count, and a made-up one
            // would (rightly) fail `covel test`'s check of reported usage against the forecast.
            let answer = serde_json::json!({"content": [{"type": "text", "text": reply}], "stop_reason": "end_turn",
                "usage": {"output_tokens": 9}}).to_string();
            write_json(&mut stream, &answer).expect("respond");
        }
        received
    });
    (url, handle)
}

#[test]
fn play_records_a_real_backend_and_the_replay_backend_answers_from_the_recording() {
    let dir = sample_copy();
    let session = dir.path().join("tests/replayed.session.yaml");
    let recording = dir.path().join("tests/replayed.recording.json");
    std::fs::remove_file(&recording).expect("start without the shipped recording");
    let (url, fake) = anthropic_fake(vec!["Cold water.", "Wet stairs."]);
    edit(
        &session,
        "backend: replay, recording: replayed.recording.json",
        &format!("backend: anthropic, baseUrl: \"{url}\""),
    );
    let out = covel(&[
        "play",
        dir.path().to_str().expect("utf-8"),
        "--session",
        session.to_str().expect("utf-8"),
        "--say",
        "I dive for the bell.",
        "--say",
        "I surface by the stairs.",
        "--record",
        recording.to_str().expect("utf-8"),
    ]);
    assert_exit(&out, 0);
    fake.join().expect("the fake stops by itself");
    let recorded: Value =
        serde_json::from_str(&std::fs::read_to_string(&recording).expect("recorded"))
            .expect("json");
    assert_eq!(recorded["format"], "covel-recording@1");
    assert_eq!(recorded["exchanges"].as_array().map(Vec::len), Some(2));
    assert!(
        recorded["exchanges"][0]["request"]["system"][0]
            .get("cache_control")
            .is_some(),
        "the request exactly as sent"
    );
    assert_eq!(
        recorded["exchanges"][1]["response"]["content"][0]["text"],
        "Wet stairs."
    );

    edit(
        &session,
        &format!("backend: anthropic, baseUrl: \"{url}\""),
        "backend: replay, recording: replayed.recording.json",
    );
    edit(
        &session,
        "contains: bell tower's shadow",
        "contains: Cold water.",
    );
    let out = covel(&[
        "test",
        session.to_str().expect("utf-8"),
        "--update",
        "--json",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let turns = &json_of(&out)["sessions"][0]["turns"];
    assert_eq!(turns.as_array().map(Vec::len), Some(2));
}

/// Copies the sample with a plugin change that alters what turn 2 of the replayed session sends
/// (its focus line names "the sunken stairs"), turn 1's requests staying as recorded; the
/// replayed session's model names `base_url`.
fn sample_with_changed_turn_two(base_url: &str) -> tempfile::TempDir {
    let dir = sample_copy();
    edit(
        &dir.path().join("story-director/server/index.js"),
        "const message = input.playerMessage.trim();",
        "const message = input.playerMessage.trim().replace(\"stairs\", \"sunken stairs\");",
    );
    edit(
        &dir.path().join("tests/replayed.session.yaml"),
        "recording: replayed.recording.json,",
        &format!("recording: replayed.recording.json, baseUrl: \"{base_url}\","),
    );
    dir
}

/// A loopback URL where nothing listens (connections are refused).
fn closed_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    format!("http://{}", listener.local_addr().expect("addr"))
}

/// Runs `covel` as [`covel`] does, with environment variables set and removed.
fn covel_env(args: &[&str], set: &[(&str, &str)], remove: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_covel"));
    command.args(args).env_remove("CI").current_dir(repo());
    for (name, value) in set {
        command.env(name, value);
    }
    for name in remove {
        command.env_remove(name);
    }
    command.output().expect("covel runs")
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("read")).expect("json")
}

#[test]
fn rerecord_changed_rerecords_only_the_changed_turn_against_the_recorded_backend_and_keeps_the_rest()
 {
    let (url, fake) = anthropic_fake(vec![
        "The bell tower's shadow lies across the sunken stairs.",
    ]);
    let dir = sample_with_changed_turn_two(&url);
    let session = dir.path().join("tests/replayed.session.yaml");
    let recording = dir.path().join("tests/replayed.recording.json");
    let before = read_json(&recording);
    // The key goes where the user's settings trust it (here: the fake), and never into the
    // recording.
    let settings = dir.path().join("trusted-keys.yaml");
    std::fs::write(
        &settings,
        format!("trustedKeys:\n  - {{ env: COVEL_TEST_KEY, origin: \"{url}\" }}\n"),
    )
    .expect("settings");
    edit(
        &session,
        &format!("baseUrl: \"{url}\","),
        &format!("baseUrl: \"{url}\", apiKeyEnv: COVEL_TEST_KEY,"),
    );

    // The golden snapshot is written from the new answers too (--update).
    let out = covel_env(
        &[
            "test",
            session.to_str().expect("utf-8"),
            "--rerecord-changed",
            "--update",
            "--json",
        ],
        &[
            ("COVEL_TEST_KEY", "sk-covel-test-secret"),
            ("COVEL_STUDIO_CONFIG", settings.to_str().expect("utf-8")),
        ],
        &[],
    );
    let report = json_of(&out);
    assert_exit(&out, 0);
    let received = fake.join().expect("the fake stops by itself");
    assert_eq!(
        received.len(),
        1,
        "only turn 2's request reached the backend"
    );
    let result = &report["sessions"][0];
    assert_eq!(result["passed"], true, "{report}");
    assert_eq!(result["golden"], "pending");
    let rerecord = &result["rerecord"];
    assert_eq!(rerecord["status"], "rewritten", "{report}");
    assert_eq!(rerecord["turns"], serde_json::json!(["turn-2"]));
    assert_eq!(
        [
            &rerecord["kept"],
            &rerecord["rerecorded"],
            &rerecord["dropped"]
        ],
        [2, 1, 1]
    );

    let after = read_json(&recording);
    let exchanges = after["exchanges"].as_array().expect("exchanges");
    assert_eq!(exchanges.len(), 3, "the stale turn 2 exchange is dropped");
    for turn_one in 0..2 {
        assert_eq!(
            serde_json::to_string(&exchanges[turn_one]).expect("json"),
            serde_json::to_string(&before["exchanges"][turn_one]).expect("json"),
            "turn 1's exchange #{turn_one} is kept as it was"
        );
    }
    assert_eq!(exchanges[2]["request"], received[0], "the request as sent");
    assert!(
        exchanges[2]["request"]
            .to_string()
            .contains("I surface by the sunken stairs."),
        "{}",
        exchanges[2]["request"]
    );
    assert_eq!(
        exchanges[2]["response"]["content"][0]["text"],
        "The bell tower's shadow lies across the sunken stairs."
    );
    assert!(
        !std::fs::read_to_string(&recording)
            .expect("read")
            .contains("sk-covel-test-secret"),
        "no key is recorded"
    );
}

#[test]
fn rerecord_changed_a_second_time_has_nothing_to_rerecord_and_does_not_rewrite_the_recording() {
    let (url, fake) = anthropic_fake(vec![
        "The bell tower's shadow lies across the sunken stairs.",
    ]);
    let dir = sample_with_changed_turn_two(&url);
    let session = dir.path().join("tests/replayed.session.yaml");
    let recording = dir.path().join("tests/replayed.recording.json");
    let out = covel(&[
        "test",
        session.to_str().expect("utf-8"),
        "--rerecord-changed",
        "--update",
    ]);
    assert_exit(&out, 0);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(
            "replayed.recording.json: re-recorded turn-2 (2 exchanges kept, 1 re-recorded, 1 dropped); rewritten"
        ),
        "{text}"
    );
    let review = covel(&[
        "test",
        session.to_str().expect("utf-8"),
        "--review",
        "--accept-all",
    ]);
    assert_exit(&review, 0);
    fake.join().expect("the fake stops by itself");
    let bytes = std::fs::read(&recording).expect("read");
    let modified = std::fs::metadata(&recording)
        .and_then(|m| m.modified())
        .expect("mtime");

    // The fake is gone: a request that reached for it would fail the run.
    let out = covel(&[
        "test",
        session.to_str().expect("utf-8"),
        "--rerecord-changed",
    ]);
    assert_exit(&out, 0);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("replayed.recording.json: unchanged, nothing to re-record (3 exchanges kept, 0 re-recorded, 0 dropped)"),
        "{text}"
    );
    let out = covel(&[
        "test",
        session.to_str().expect("utf-8"),
        "--rerecord-changed",
        "--json",
    ]);
    assert_exit(&out, 0);
    let rerecord = &json_of(&out)["sessions"][0]["rerecord"];
    assert_eq!(rerecord["status"], "unchanged");
    assert_eq!(rerecord["turns"], serde_json::json!([]));
    assert_eq!(std::fs::read(&recording).expect("read"), bytes);
    assert_eq!(
        std::fs::metadata(&recording)
            .and_then(|m| m.modified())
            .expect("mtime"),
        modified,
        "the file is not written"
    );
}

#[test]
fn rerecord_changed_leaves_the_recording_untouched_and_fails_with_the_message_when_the_live_call_fails()
 {
    let url = closed_url();
    let dir = sample_with_changed_turn_two(&url);
    let session = dir.path().join("tests/replayed.session.yaml");
    let recording = dir.path().join("tests/replayed.recording.json");
    let bytes = std::fs::read(&recording).expect("read");
    let out = covel(&[
        "test",
        session.to_str().expect("utf-8"),
        "--rerecord-changed",
        "--json",
    ]);
    assert_exit(&out, 1);
    let report = json_of(&out);
    let result = &report["sessions"][0];
    assert!(
        result["turns"][1]["error"]
            .as_str()
            .is_some_and(|e| e.contains("anthropic request failed") && e.contains("refused")),
        "{report}"
    );
    assert_eq!(result["rerecord"]["status"], "untouched");
    assert_eq!(std::fs::read(&recording).expect("read"), bytes);

    // No key: the official endpoint, and the variable holding its key unset.
    edit(
        &session,
        &format!("baseUrl: \"{url}\","),
        "apiKeyEnv: ANTHROPIC_API_KEY,",
    );
    let no_settings = dir.path().join("no-trusted-keys.yaml");
    let out = covel_env(
        &[
            "test",
            session.to_str().expect("utf-8"),
            "--rerecord-changed",
        ],
        &[("COVEL_STUDIO_CONFIG", no_settings.to_str().expect("utf-8"))],
        &["ANTHROPIC_API_KEY"],
    );
    assert_exit(&out, 1);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("environment variable ANTHROPIC_API_KEY with the API key is not set"),
        "{text}"
    );
    assert!(text.contains("left untouched (the run failed)"), "{text}");
    assert_eq!(std::fs::read(&recording).expect("read"), bytes);
    assert!(
        !dir.path()
            .join("tests/replayed.recording.json.bak")
            .exists(),
        "never written"
    );
}

#[test]
fn without_rerecord_changed_a_changed_request_still_fails_with_the_diff_and_reaches_no_server() {
    let (url, fake) = anthropic_fake(Vec::new());
    let dir = sample_with_changed_turn_two(&url);
    let session = dir.path().join("tests/replayed.session.yaml");
    let recording = dir.path().join("tests/replayed.recording.json");
    let bytes = std::fs::read(&recording).expect("read");
    let out = covel(&["test", session.to_str().expect("utf-8")]);
    assert_exit(&out, 1);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("replay miss: none of the 3 recorded anthropic requests equals this request; nearest is exchange #3"), "{text}");
    assert!(
        text.contains("I surface by the {+sunken +}stairs."),
        "{text}"
    );
    assert!(text.contains("covel test --rerecord-changed"), "{text}");
    assert!(!text.contains("recording "), "no re-record line: {text}");
    assert_eq!(std::fs::read(&recording).expect("read"), bytes);
    assert!(fake.join().expect("fake").is_empty());
}

// ---- covel forecast ----------------------------------------------------------------------------

#[test]
fn forecast_predicts_per_turn_and_per_breakpoint_and_names_the_segment_that_breaks_the_cache() {
    let out = covel(&[
        "forecast",
        "tests/fixtures/forecast/plugins",
        "--session",
        "tests/fixtures/forecast/storm.session.yaml",
        "--json",
    ]);
    assert_exit(&out, 0);
    let report = json_of(&out);
    assert_eq!(
        report["model"]["id"], "claude-sonnet-4-5",
        "the session's story model by default"
    );
    let storm = report["turns"][2]["breakpoints"]
        .as_array()
        .expect("breakpoints")
        .iter()
        .find(|b| b["at"] == "system block stable-segments")
        .cloned()
        .expect("stable");
    assert_eq!(storm["outcome"], "write");
    assert_eq!(storm["segment"], "weather/sky");
    for field in ["totals", "ledger", "advice", "segmentTokens"] {
        assert!(report.get(field).is_some(), "{field}");
    }

    let human = covel(&[
        "forecast",
        "tests/fixtures/forecast/plugins",
        "--session",
        "tests/fixtures/forecast/storm.session.yaml",
        "--model",
        "gpt-4o",
        "--turns",
        "2",
    ]);
    assert_eq!(human.status.code(), Some(0));
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(
        text.contains("Forecast for gpt-4o (openai, automatic prefix caching)"),
        "{text}"
    );
    assert!(
        text.contains("turn 2 ·") && !text.contains("turn 3 ·"),
        "--turns 2 plays two turns"
    );
    assert!(text.contains("Ledger") && text.contains("codex"));

    let unknown = covel(&[
        "forecast",
        "tests/fixtures/forecast/plugins",
        "--session",
        "tests/fixtures/forecast/storm.session.yaml",
        "--model",
        "nonsense",
    ]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("no model named `nonsense`"));
}

#[test]
fn forecast_advice_prices_a_breakpoint_layout_by_its_input_which_with_the_output_is_the_total() {
    // "breakpoints now → $0.01204" beside "cost $0.01430" once left the author to guess: a
    // layout's cost is what the input costs (the output costs the same in every layout).
    let out = forecast(&["--json"]);
    assert_exit(&out, 0);
    let report = json_of(&out);
    let current = report["advice"]["currentLayout"]["cost"]
        .as_f64()
        .expect("current layout");
    let cost = &report["totals"]["cost"];
    let (total, output) = (
        cost["total"].as_f64().expect("total"),
        cost["output"].as_f64().expect("output"),
    );
    assert!(output > 0.0, "the storm session's replies cost something");
    assert!(
        (current + output - total).abs() < 1e-9,
        "{current} + {output} != {total}"
    );
    let text = forecast(&[]);
    let text = String::from_utf8_lossy(&text.stdout);
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("breakpoints now:"))
        .expect("the current layout");
    assert!(line.ends_with(" of input"), "{line}");
}

fn forecast(extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "forecast",
        "tests/fixtures/forecast/plugins",
        "--session",
        "tests/fixtures/forecast/storm.session.yaml",
    ];
    args.extend_from_slice(extra);
    covel(&args)
}

#[test]
fn forecast_price_prices_a_model_the_facts_do_not_list_with_its_caching_kind_and_minimum() {
    let out = forecast(&[
        "--model",
        "house-model",
        "--price",
        "2/10/2.5/0.2",
        "--caching",
        "anthropic",
        "--min-cacheable",
        "2048",
        "--json",
    ]);
    assert_exit(&out, 0);
    let report = json_of(&out);
    let model = &report["model"];
    assert_eq!(model["id"], "house-model");
    assert_eq!(model["caching"], "explicit-breakpoints");
    assert_eq!(model["minCacheableTokens"], 2048);
    assert_eq!(
        model["verified"], false,
        "the author's prices are not verified facts"
    );
    assert_eq!(
        (
            model["prices"]["input"].as_f64(),
            model["prices"]["cacheWrite5m"].as_f64()
        ),
        (Some(2.0), Some(2.5))
    );
    let first = &report["turns"][0];
    let expected = first["cacheWriteTokens"].as_f64().expect("writes") * 2.5 / 1e6;
    assert!((first["cost"]["cacheWrite"].as_f64().expect("cost") - expected).abs() < 1e-12);

    let openai = forecast(&[
        "--model",
        "house-gpt",
        "--price",
        "1/4/0/0.1",
        "--caching",
        "openai",
        "--json",
    ]);
    assert_exit(&openai, 0);
    assert_eq!(
        json_of(&openai)["model"]["minCacheableTokens"],
        1024,
        "OpenAI's minimum by default"
    );

    let no_minimum = forecast(&[
        "--model",
        "house-model",
        "--price",
        "2/10/2.5/0.2",
        "--caching",
        "anthropic",
    ]);
    assert_eq!(no_minimum.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&no_minimum.stderr).contains("needs --min-cacheable N"));
    let malformed = forecast(&["--model", "m", "--price", "2/10", "--caching", "openai"]);
    assert_eq!(malformed.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&malformed.stderr).contains("IN/OUT/WRITE/READ"));
    let without_caching = forecast(&["--model", "m", "--price", "2/10/2.5/0.2"]);
    assert_eq!(
        without_caching.status.code(),
        Some(2),
        "--price needs --caching"
    );
}

#[test]
fn forecast_reply_tokens_prices_an_assumed_reply_length_and_costs_are_a_range_for_claude() {
    let json = json_of(&forecast(&[
        "--reply-tokens",
        "500",
        "--turns",
        "1",
        "--json",
    ]));
    let turn = &json["turns"][0];
    assert_eq!(
        (turn["outputTokens"].as_u64(), turn["outputFrom"].as_str()),
        (Some(500), Some("assumed"))
    );
    let output = turn["cost"]["output"].as_f64().expect("output cost");
    assert!(
        (output - 500.0 * 15.0 / 1e6).abs() < 1e-12,
        "claude-sonnet-4-5 output at $15/MTok"
    );
    let total = turn["cost"]["total"].as_f64().expect("total");
    let (low, high) = (
        turn["costRange"][0].as_f64().expect("low"),
        turn["costRange"][1].as_f64().expect("high"),
    );
    assert!(low < total && total < high, "{low} < {total} < {high}");
    let played = json_of(&forecast(&["--turns", "1", "--json"]));
    assert_eq!(
        played["turns"][0]["outputFrom"], "reply text",
        "the scripted reply, counted"
    );
    assert!(played["turns"][0]["outputTokens"].as_u64().expect("tokens") > 0);
}

#[test]
fn forecast_ttl_1h_prices_the_one_hour_write_and_the_requests_carry_it() {
    let out = forecast(&["--ttl", "1h", "--turns", "1"]);
    assert_exit(&out, 0);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("cache write 6 (1h)"),
        "the 1-hour write price of claude-sonnet-4-5: {text}"
    );
    assert!(text.contains("TTL 3600 s"), "{text}");
    let json = json_of(&forecast(&["--ttl", "1h", "--turns", "1", "--json"]));
    let turn = &json["turns"][0];
    let expected = turn["cacheWriteTokens"].as_f64().expect("writes") * 6.0 / 1e6;
    assert!((turn["cost"]["cacheWrite"].as_f64().expect("cost") - expected).abs() < 1e-12);
}

#[test]
fn play_record_needs_a_real_backend() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("r.json");
    let out = covel(&[
        "play",
        "plugins-sample",
        "--session",
        "plugins-sample/demo.session.yaml",
        "--say",
        "Hi.",
        "--record",
        file.to_str().expect("utf-8"),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("story model is `scripted`"));
    assert!(!file.exists());
}

#[test]
fn bench_watched_edits_can_change_a_segments_text_and_refuse_a_text_no_module_holds() {
    let temp = tempfile::tempdir().expect("tempdir");
    let dir = temp.path().join("plugins");
    copy_dir(&repo().join("plugins-sample"), &dir);
    let bench = |text: &str| {
        covel(&[
            "bench",
            dir.to_str().expect("utf-8"),
            "--iterations",
            "1",
            "--full-previews",
            "0",
            "--watch-edits",
            "2",
            "--watch-replace",
            text,
            "--json",
        ])
    };
    // story-director's default tone, in a module its entry imports (not the first plugin's).
    let out = bench("wry, lightly ironic");
    assert_exit(&out, 0);
    let watch = &json_of(&out)["watch"];
    assert_eq!(watch["plugin"], "story-director", "{watch}");
    assert!(
        watch["file"]
            .as_str()
            .is_some_and(|f| f.ends_with("story-director/server/lib/text.js")),
        "{watch}"
    );
    assert_eq!(watch["edit"]["replace"], "wry, lightly ironic");
    assert_eq!(watch["missed"], 0, "{watch}");
    assert_eq!(
        watch["patchesWithPrompt"], 2,
        "each edit changed the prompt: {watch}"
    );
    assert_eq!(
        files_under(&dir),
        files_under(&repo().join("plugins-sample")),
        "the bench put the file it edited back as it was"
    );

    let out = bench("a text no module holds");
    assert_ne!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("no module of a loaded plugin holds the text \"a text no module holds\""),
        "{stderr}"
    );
}

#[test]
fn bench_times_previews_and_watched_edits_spaced_as_asked_and_puts_the_edited_file_back() {
    let temp = tempfile::tempdir().expect("tempdir");
    let dir = temp.path().join("plugins");
    copy_dir(&repo().join("plugins-sample"), &dir);
    let out = covel(&[
        "bench",
        dir.to_str().expect("utf-8"),
        "--iterations",
        "3",
        "--full-previews",
        "1",
        "--watch-edits",
        "2",
        "--watch-pause",
        "80",
        "--json",
    ]);
    assert_exit(&out, 0);
    let report = json_of(&out);
    assert!(report["providers"].as_u64().is_some_and(|n| n > 0));
    assert!(
        report["medianPreviewMs"]
            .as_f64()
            .is_some_and(|ms| ms > 0.0)
    );
    let watch = &report["watch"];
    assert_eq!(watch["edits"], 2);
    assert_eq!(
        watch["missed"], 0,
        "each edit was seen and reloaded: {watch}"
    );
    assert_eq!(watch["pauseMs"], 80.0);
    assert_eq!(watch["edit"], "comment");
    assert_eq!(watch["patchesWithPrompt"], 0, "a comment changes no prompt");
    for distribution in ["writtenToReadyMs", "workMs", "previewMs", "patchBytes"] {
        assert_eq!(watch[distribution]["samples"], 2, "{distribution}: {watch}");
    }
    // The window's first snapshot holds every part; a touched reload's patch only what changed.
    let snapshot_bytes = watch["snapshotBytes"].as_f64().unwrap_or_default();
    assert!(
        snapshot_bytes > watch["patchBytes"]["max"].as_f64().unwrap_or(f64::MAX),
        "{watch}"
    );
    // The preview's parts: each reload's, and together no more than the preview.
    let parts = &watch["previewParts"];
    let median = |d: &serde_json::Value| d["median"].as_f64().unwrap_or(f64::NAN);
    let mut sum = 0.0;
    for part in [
        "segmentCallsMs",
        "assemblyMs",
        "worldContextMs",
        "slotsMs",
        "restMs",
    ] {
        assert_eq!(parts[part]["samples"], 2, "{part}: {parts}");
        assert!(median(&parts[part]) >= 0.0, "{part}: {parts}");
        sum += median(&parts[part]);
    }
    assert!(
        median(&parts["segmentCallsMs"]) > 0.0 && median(&parts["assemblyMs"]) > 0.0,
        "{parts}"
    );
    assert!(
        sum <= 2.0 * median(&watch["previewMs"]) + 0.5,
        "{parts} against {watch}"
    );
    assert!(
        watch["writtenToReadyMs"]["median"]
            .as_f64()
            .is_some_and(|ms| ms > 0.0)
    );
    assert_eq!(
        files_under(&dir),
        files_under(&repo().join("plugins-sample")),
        "the bench put the file it edited back as it was"
    );
}

#[test]
fn validate_says_what_a_plugin_registered_that_the_studio_never_runs() {
    let out = covel(&["validate", "tests/fixtures/upstream-shaped"]);
    assert_exit(&out, 0);
    let text = String::from_utf8_lossy(&out.stdout);
    // What playtests run is counted on the plugin's line: its tools and hooks too.
    assert!(
        text.lines().any(|l| l.starts_with("✓ quest-tracker (")
            && l.contains(" tool")
            && l.contains(" hook")),
        "{text}"
    );
    let note = text
        .lines()
        .find(|l| l.trim_start().starts_with("note: registered only"))
        .unwrap_or_else(|| panic!("a note for quest-tracker's actions and services: {text}"));
    assert!(note.contains("actions: reset-quests"), "{note}");
    assert!(note.contains("services: quests.query@1"), "{note}");
    // Tools and hooks run in played turns: the note never names them.
    assert!(!note.contains("quest-update"), "{note}");
    assert!(!note.contains("TurnStart"), "{note}");

    let out = covel(&["validate", "tests/fixtures/upstream-shaped", "--json"]);
    let report = json_of(&out);
    let quest = report["plugins"]
        .as_array()
        .and_then(|ps| ps.iter().find(|p| p["id"] == "quest-tracker"))
        .expect("quest-tracker");
    assert!(quest["notRun"].get("hooks").is_none(), "{quest}");
    assert!(quest["notRun"].get("tools").is_none(), "{quest}");
    assert_eq!(
        quest["notRun"]["services"],
        serde_json::json!(["quests.query@1"])
    );
    let static_only = report["plugins"]
        .as_array()
        .and_then(|ps| ps.iter().find(|p| p["id"] == "static-only"))
        .expect("static-only");
    assert!(
        static_only.get("notRun").is_none(),
        "nothing to say: {static_only}"
    );
}

#[test]
fn version_names_the_studio_the_sdk_it_mirrors_and_every_contract() {
    let output = covel(&["--version"]);
    assert_exit(&output, 0);
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        text.starts_with(&format!("covel {}\n", env!("CARGO_PKG_VERSION"))),
        "{text}"
    );
    // The SDK version the studio mirrors is the one its export inventory was taken from.
    let inventory: Value = serde_json::from_str(
        &std::fs::read_to_string(repo().join("tests/fixtures/sdk/upstream-exports.json"))
            .expect("inventory"),
    )
    .expect("json");
    let sdk = inventory["version"].as_str().expect("a version");
    assert_eq!(covel_studio::about::SDK_VERSION, sdk);
    assert!(text.contains(&format!("mirrored: {sdk}")), "{text}");
    for point in covel_kernel::contract::PointId::ALL {
        assert!(text.contains(point.as_str()), "{point:?}: {text}");
    }
    for slot in covel_kernel::contract::SlotId::ALL {
        assert!(text.contains(slot.as_str()), "{slot:?}: {text}");
    }
}

#[test]
fn help_lists_every_command() {
    let output = covel(&["--help"]);
    assert_exit(&output, 0);
    let text = String::from_utf8_lossy(&output.stdout);
    for command in [
        "validate", "call", "preview", "compact", "play", "bench", "watch", "resolve", "forecast",
        "test",
    ] {
        assert!(
            text.lines()
                .any(|l| l.trim_start().starts_with(&format!("{command} "))),
            "{command}: {text}"
        );
    }
}

#[test]
fn test_in_ci_fails_on_a_missing_golden_snapshot_that_passes_locally() {
    let dir = sample_copy();
    std::fs::remove_file(dir.path().join("tests/bell-tower.golden.yaml")).expect("rm");
    let session = dir.path().join("tests/bell-tower.session.yaml");
    let session = session.to_str().expect("utf-8");
    let local = covel(&["test", session, "--json"]);
    assert_eq!(
        local.status.code(),
        Some(0),
        "the expectations pass locally"
    );
    assert_eq!(json_of(&local)["sessions"][0]["golden"], "missing");
    let run = |args: &[&str], ci: Option<&str>| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_covel"));
        command.args(args).env_remove("CI");
        if let Some(value) = ci {
            command.env("CI", value);
        }
        command.output().expect("covel runs")
    };
    for (args, ci) in [
        (&["test", session, "--ci", "--json"][..], None),
        (&["test", session, "--json"][..], Some("true")),
    ] {
        let out = run(args, ci);
        assert_eq!(out.status.code(), Some(1), "{args:?} CI={ci:?}");
        let error = json_of(&out)["sessions"][0]["error"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert!(
            error.contains("in CI (--ci, or CI=true) a missing golden snapshot fails"),
            "{error}"
        );
    }
    assert_eq!(
        run(&["test", session], Some("false")).status.code(),
        Some(0)
    );
}

#[test]
fn new_starts_a_plugin_that_validates_and_whose_test_session_passes_and_never_writes_over_a_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let plugins = dir.path().to_str().expect("utf-8");
    let out = covel(&[
        "new",
        "weather-report",
        "--dir",
        plugins,
        "--point",
        "prompt.segment@1",
        "--point",
        "ui.slot@1:stage.backdrop@1",
        "--point",
        "ui.slot@1:stage.choices@1",
    ]);
    assert_exit(&out, 0);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("created"), "{text}");
    assert!(dir.path().join("weather-report/PLUGIN.md").is_file());
    assert!(dir.path().join("weather-report/server/index.js").is_file());
    assert!(
        dir.path()
            .join("tests/weather-report.session.yaml")
            .is_file()
    );
    let out = covel(&["new", "tide-table", "--ts", "--dir", plugins]);
    assert_exit(&out, 0);
    assert!(dir.path().join("tide-table/server/index.ts").is_file());
    let out = covel(&["validate", plugins]);
    assert_exit(&out, 0);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("2 plugins, 2 valid"), "{text}");
    let out = covel(&["test", plugins]);
    assert_exit(&out, 0);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("2 sessions, 2 turns, 4 checks: all passed"),
        "{text}"
    );
    // An existing plugin is never written over, and a bad id or point says what is wrong.
    let manifest =
        std::fs::read_to_string(dir.path().join("weather-report/PLUGIN.md")).expect("read");
    let out = covel(&["new", "weather-report", "--dir", plugins]);
    assert_exit(&out, 2);
    assert!(String::from_utf8_lossy(&out.stderr).contains("already exists"));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("weather-report/PLUGIN.md")).expect("read"),
        manifest
    );
    let out = covel(&["new", "Weather", "--dir", plugins]);
    assert_exit(&out, 2);
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not a plugin id"));
    let out = covel(&[
        "new",
        "cast",
        "--point",
        "ui.slot@1:stage.cast@1",
        "--dir",
        plugins,
    ]);
    assert_exit(&out, 2);
    assert!(String::from_utf8_lossy(&out.stderr).contains("starts ui.slot@1 providers for"));
    assert!(!dir.path().join("cast").exists(), "nothing was written");
}

#[test]
fn play_prints_a_streamed_reply_as_it_comes_and_ctrl_c_cancels_the_turn_without_a_save() {
    use covel_tests::http_fake::{accept_within, read_request};
    use std::io::{Read, Write};
    let dir = sample_copy();
    let session = dir.path().join("tests/replayed.session.yaml");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    // One text piece, then silence: the turn waits until Ctrl+C.
    std::thread::spawn(move || {
        if let Some(mut stream) = accept_within(&listener, std::time::Duration::from_secs(30)) {
            let _ = read_request(&stream);
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\nevent: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":\"The water is\"}}}}\n\n"
            );
            let _ = stream.flush();
            std::thread::sleep(std::time::Duration::from_secs(20));
        }
    });
    edit(
        &session,
        "backend: replay, recording: replayed.recording.json",
        &format!("backend: anthropic, baseUrl: \"{url}\""),
    );
    let saved = dir.path().join("played.session.yaml");
    let mut child = Command::new(env!("CARGO_BIN_EXE_covel"))
        .args([
            "play",
            dir.path().to_str().expect("utf-8"),
            "--session",
            session.to_str().expect("utf-8"),
            "--say",
            "I dive.",
            "--save",
            saved.to_str().expect("utf-8"),
        ])
        .env_remove("CI")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("covel runs");
    let mut stdout = child.stdout.take().expect("stdout");
    // The streamed text is printed before the turn ends.
    let mut seen = Vec::new();
    let mut buffer = [0u8; 256];
    let started = std::time::Instant::now();
    while !String::from_utf8_lossy(&seen).contains("The water is") {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(20),
            "{}",
            String::from_utf8_lossy(&seen)
        );
        let n = stdout.read(&mut buffer).expect("read");
        seen.extend_from_slice(&buffer[..n]);
    }
    let interrupted = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(interrupted.success());
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).expect("read");
    let status = child.wait().expect("exits");
    assert_eq!(status.code(), Some(1), "{rest}");
    assert!(
        rest.contains("the turn was cancelled; nothing was appended"),
        "{rest}"
    );
    assert!(rest.contains("not saved to"), "{rest}");
    assert!(!saved.exists(), "no file is written for a cancelled turn");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(15),
        "cancelled at once"
    );
}

/// Plays the demo's three scripted turns (turn-3 moves the stage to the bell tower, turn-4
/// offers choices, turn-5 moves it back to the harbour) and saves the played session.
fn played_demo(dir: &Path) -> PathBuf {
    let saved = dir.join("played.session.yaml");
    let out = covel(&[
        "play",
        "plugins-sample",
        "--session",
        "plugins-sample/demo.session.yaml",
        "--say",
        "I swim.",
        "--say",
        "I climb.",
        "--say",
        "I go back.",
        "--save",
        saved.to_str().expect("utf-8"),
    ]);
    assert_exit(&out, 0);
    saved
}

/// `covel play --from TURN` on a played session, saying one line.
fn play_from(saved: &Path, turn: &str) -> Output {
    covel(&[
        "play",
        "plugins-sample",
        "--session",
        saved.to_str().expect("utf-8"),
        "--from",
        turn,
        "--say",
        "Hello.",
    ])
}

#[test]
fn play_from_starts_right_after_an_earlier_turn_of_a_played_session() {
    let temp = tempfile::tempdir().expect("tempdir");
    let saved = played_demo(temp.path());
    let out = covel(&[
        "play",
        "plugins-sample",
        "--session",
        saved.to_str().expect("utf-8"),
        "--from",
        "turn-4",
        "--say",
        "I wait on the stairs.",
        "--json",
    ]);
    assert_exit(&out, 0);
    let report = json_of(&out);
    let turn = &report["turns"][0];
    assert_eq!(turn["turnId"], "turn-5", "the branch's next turn");
    let said: Vec<&str> = turn["preview"]["prompt"]["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert!(said.contains(&"I climb."), "turn-4 is in the history");
    assert!(
        !said.contains(&"I go back."),
        "turn-5 of the saved play is not"
    );
    // The stage as right after turn-4: turn-5's move back to the harbour is undone.
    let backdrop = turn["preview"]["slots"]
        .as_array()
        .expect("slots")
        .iter()
        .find(|s| s["slot"] == "stage.backdrop@1")
        .expect("the backdrop slot");
    assert_eq!(backdrop["value"]["name"], "The Bell Tower");
    assert_eq!(report["startedAfter"]["pluginDataFrom"], "before turn-5");
    assert_eq!(report["startedAfter"]["messagesKept"], 8);
    // The scripted narrator goes on with its third entry, as the saved play did at turn-5
    // (and its `{turn}` names turn-5).
    assert!(
        turn["reply"]["text"]
            .as_str()
            .is_some_and(|t| t.contains("turn 5") && t.contains("Dawn comes")),
        "{}",
        turn["reply"]["text"]
    );
}

#[test]
fn play_from_a_turn_the_session_does_not_have_names_those_it_has() {
    let temp = tempfile::tempdir().expect("tempdir");
    let saved = played_demo(temp.path());
    let out = play_from(&saved, "turn-9");
    assert_exit(&out, 2);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("`turn-9` is not a turn of this session's history; the turns it has: t1, t2, turn-3, turn-4, turn-5"),
        "{stderr}"
    );
}

#[test]
fn play_from_refuses_a_turn_whose_history_a_later_compaction_rewrote() {
    let temp = tempfile::tempdir().expect("tempdir");
    let saved = played_demo(temp.path());
    let text = std::fs::read_to_string(&saved).expect("saved");
    assert!(
        text.contains("- turnId: turn-4\n"),
        "a checkpoint per played turn"
    );
    std::fs::write(
        &saved,
        text.replace(
            "- turnId: turn-4\n",
            "- turnId: turn-4\n  compactedAfter: true\n",
        ),
    )
    .expect("write");
    let out = play_from(&saved, "turn-3");
    assert_exit(&out, 2);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("a compaction after turn-4 rewrote the history `turn-3` needs")
            && stderr.contains("turn-4, turn-5"),
        "{stderr}"
    );
}

#[test]
fn sdk_tests_prints_a_row_per_file_and_each_failing_test_and_exits_1_on_a_failure() {
    let output = covel(&["sdk-tests", "tests/fixtures/sdk-runner/tests"]);
    assert_exit(&output, 1);
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        text.contains("| broken.test.js | 0 | 0 | did not run |"),
        "{text}"
    );
    assert!(text.contains("| sample.test.ts | 5 | 2 | 8 |"), "{text}");
    assert!(text.contains("5 of 8 pass."), "{text}");
    assert!(
        text.contains("  ✗ outer > fails on a value\n    expected 2 to be 3\n"),
        "{text}"
    );
    let json = json_of(&covel(&[
        "sdk-tests",
        "tests/fixtures/sdk-runner/tests",
        "--json",
    ]));
    assert_eq!(json[1]["file"], "sample.test.ts");
    assert_eq!(json[1]["failed"], 2);
    // Our own SDK test files all pass.
    assert_exit(&covel(&["sdk-tests", "tests/fixtures/sdk-tests"]), 0);
}

/// A folder with `calm` (a plugin that loads) and `broken` (whose PLUGIN.md does not), and a
/// session that gives `broken` a setting.
fn folder_with_a_broken_plugin(dir: &Path) -> PathBuf {
    let calm = dir.join("plugins/calm");
    std::fs::create_dir_all(calm.join("server")).expect("mkdir");
    std::fs::write(
        calm.join("PLUGIN.md"),
        "---\nid: calm\nkind: plugin\ndescription: Loads.\ncontributes:\n  extensions:\n    - point: prompt.segment@1\n      id: calm\n---\n",
    )
    .expect("write");
    std::fs::write(
        calm.join("server/index.js"),
        "export default function (covel) {\n  covel.provideExtension(\"prompt.segment@1\", \"calm\", { handler: () => [{ id: \"calm\", content: \"Calm.\", position: \"system\", audience: \"story\", volatility: \"stable\" }] });\n}\n",
    )
    .expect("write");
    let broken = dir.join("plugins/broken");
    std::fs::create_dir_all(&broken).expect("mkdir");
    std::fs::write(
        broken.join("PLUGIN.md"),
        "---\nid: broken\nkind: plugin\ndescription: Does not load.\ncontributez: {}\n---\n",
    )
    .expect("write");
    let session = dir.join("t.session.yaml");
    std::fs::write(
        &session,
        "id: t\nlocale: en\nsettings:\n  broken: { tone: grave }\nmodels:\n  story: { backend: scripted, model: claude-sonnet-4-5, contextWindow: 32768, reservedForResponse: 4000 }\n",
    )
    .expect("write");
    session
}

/// `covel play` and `covel forecast` list the plugins that failed to load, as `covel preview`
/// does, and a setting for such a plugin names it and why it failed (not "its settings: none").
#[test]
fn play_and_forecast_list_the_plugins_that_failed_to_load() {
    let temp = tempfile::tempdir().expect("tempdir");
    let session = folder_with_a_broken_plugin(temp.path());
    let plugins = temp.path().join("plugins");
    let (plugins, session) = (
        plugins.to_str().expect("utf-8"),
        session.to_str().expect("utf-8"),
    );
    for args in [
        vec!["play", plugins, "--session", session, "--say", "Hello."],
        vec!["forecast", plugins, "--session", session, "--turns", "1"],
    ] {
        let out = covel(&args);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("plugin not loaded: broken: "),
            "{}: {text}\n{}",
            args[0],
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            text.contains("the plugin `broken` failed to load ([manifest-schema]")
                && !text.contains("its settings: none"),
            "{}: {text}",
            args[0]
        );
    }
}

/// Runs `covel` with `args` (absolute paths) outside CI mode, in the given folder.
fn covel_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_covel"))
        .args(args)
        .env_remove("CI")
        .current_dir(dir)
        .output()
        .expect("covel runs")
}

/// A copy of the sample where the story director's tone reads "grave, patient": every turn's
/// system prompt changes the same way, and bell-tower's `contains: "grave, unhurried"` fails.
fn sample_with_changed_tone() -> tempfile::TempDir {
    let dir = sample_copy();
    edit(
        &dir.path().join("story-director/server/lib/text.js"),
        "grave, unhurried",
        "grave, patient",
    );
    dir
}

#[test]
fn test_names_the_provider_calls_that_failed_in_a_turn_in_text_json_and_the_ci_reports() {
    // The tone provider's output breaks its contract: its segment is missing from every turn,
    // and bell-tower's `contains: "grave, unhurried"` fails without saying why by itself.
    let dir = sample_copy();
    edit(
        &dir.path().join("story-director/server/index.js"),
        "order: 10,",
        "order: \"first\",",
    );
    let session = dir.path().join("tests/bell-tower.session.yaml");
    let session = session.to_str().expect("utf-8");
    let why = r#"story-director/tone on prompt.segment@1 → invalid-output: does not match prompt.segment@1 output: at /0/order: "first" is not of type "integer""#;

    let text = covel(&["test", session]);
    assert_exit(&text, 1);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains(&format!("⚠ provider failed: {why}")),
        "{text}"
    );

    let json = covel(&["test", session, "--json"]);
    let report = json_of(&json);
    let turn = &report["sessions"][0]["turns"][0];
    assert_eq!(
        turn["failedCalls"],
        serde_json::json!([{
            "pluginId": "story-director",
            "providerId": "tone",
            "point": "prompt.segment@1",
            "outcome": "invalid-output",
            "message": "does not match prompt.segment@1 output: at /0/order: \"first\" is not of type \"integer\""
        }])
    );

    // In a CI report, each failure of the turn carries what failed in it.
    let tap = covel(&["test", session, "--reporter", "tap"]);
    let tap = String::from_utf8_lossy(&tap.stdout);
    let first = turn["turnId"].as_str().expect("turn id");
    assert!(
        tap.contains(&format!("provider calls that failed in {first}")),
        "{tap}"
    );
    let junit = covel(&["test", session, "--reporter", "junit"]);
    let junit = String::from_utf8_lossy(&junit.stdout);
    assert!(
        junit.contains(&format!(
            "provider calls that failed in {first}:\n- story-director/tone on prompt.segment@1 → invalid-output"
        )),
        "{junit}"
    );

    // A failed slot provider is named once, though its call is in the slot's chain as well.
    edit(
        &dir.path().join("scene-stage/server/index.js"),
        "handler: async ({ events }, ctx) => {",
        "handler: async ({ events }, ctx) => { throw new Error(\"no backdrop\");",
    );
    let json = json_of(&covel(&["test", session, "--json"]));
    let slot_failures: Vec<&Value> = json["sessions"][0]["turns"][0]["failedCalls"]
        .as_array()
        .expect("failed calls")
        .iter()
        .filter(|c| c["slot"] == "stage.backdrop@1")
        .collect();
    assert_eq!(slot_failures.len(), 1, "{slot_failures:?}");
    assert_eq!(slot_failures[0]["outcome"], "error");

    // The sample's own runs have none: a turn whose providers all succeeded says nothing.
    let clean = json_of(&covel(&["test", "plugins-sample", "--json"]));
    let listed: Vec<&Value> = clean["sessions"]
        .as_array()
        .expect("sessions")
        .iter()
        .flat_map(|s| s["turns"].as_array().expect("turns"))
        .filter(|t| t.get("failedCalls").is_some())
        .collect();
    assert!(listed.is_empty(), "{listed:?}");
}

#[test]
fn test_filter_keeps_sessions_whose_file_name_or_id_contains_it_and_says_how_many_were_left_out() {
    let out = covel(&["test", "plugins-sample", "--filter", "bell", "--json"]);
    assert_exit(&out, 0);
    let report = json_of(&out);
    assert_eq!(report["sessions"].as_array().map(Vec::len), Some(1));
    assert_eq!(report["filteredOut"], 4);
    let human = covel(&["test", "plugins-sample", "--filter", "demo"]);
    assert_exit(&human, 0);
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(
        text.contains("4 sessions filtered out by --filter \"demo\""),
        "{text}"
    );
    let none = covel(&["test", "plugins-sample", "--filter", "no-such-session"]);
    assert_exit(&none, 2);
    assert!(
        String::from_utf8_lossy(&none.stderr).contains("no session's file name or id contains")
    );
}

#[test]
fn test_filter_matches_the_session_id_when_the_file_name_does_not() {
    let dir = sample_copy();
    std::fs::rename(
        dir.path().join("tests/bell-tower.session.yaml"),
        dir.path().join("tests/tower.session.yaml"),
    )
    .expect("rename");
    std::fs::remove_file(dir.path().join("tests/bell-tower.golden.yaml")).expect("rm");
    let out = covel_in(
        dir.path(),
        &["test", ".", "--filter", "bell-tower", "--json"],
    );
    let report = json_of(&out);
    let names: Vec<&str> = report["sessions"]
        .as_array()
        .expect("sessions")
        .iter()
        .filter_map(|s| s["session"].as_str())
        .collect();
    assert_eq!(names.len(), 1, "{names:?}");
    assert!(names[0].ends_with("tower.session.yaml"), "{names:?}");
}

#[test]
fn test_json_reporter_is_what_json_prints_and_carries_durations() {
    let a = json_of(&covel(&[
        "test",
        "plugins-sample/demo.session.yaml",
        "--json",
    ]));
    let b = json_of(&covel(&[
        "test",
        "plugins-sample/demo.session.yaml",
        "--reporter",
        "json",
    ]));
    for report in [&a, &b] {
        let session = &report["sessions"][0];
        assert!(session["durationMs"].is_u64(), "{session}");
        assert!(session["turns"][0]["durationMs"].is_u64(), "{session}");
    }
    assert_eq!(a["passed"], b["passed"]);
    let both = covel(&["test", "plugins-sample", "--json", "--reporter", "tap"]);
    assert_exit(&both, 2);
}

#[test]
fn test_junit_reporter_writes_a_testsuite_per_session_and_failures_with_the_diff() {
    let dir = sample_with_changed_tone();
    let out = covel_in(dir.path(), &["test", ".", "--reporter", "junit"]);
    assert_exit(&out, 1);
    let xml = String::from_utf8_lossy(&out.stdout);
    assert!(
        xml.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>"),
        "{xml}"
    );
    assert_eq!(xml.matches("<testsuite ").count(), 5, "{xml}");
    assert!(xml.contains("<testsuites name=\"covel test\""), "{xml}");
    // A turn's testcase fails with the golden diff; a check's with what was found.
    assert!(
        xml.contains("<failure message=\"the golden snapshot differs"),
        "{xml}"
    );
    assert!(
        xml.contains("Keep a grave, [-unhurried-]{+patient+} narrative voice."),
        "{xml}"
    );
    assert!(
        xml.contains("[system-text] system prompt contains &quot;grave, unhurried&quot;"),
        "attribute text is escaped: {xml}"
    );
    assert!(
        xml.contains("bell-tower.session.yaml:"),
        "names the line: {xml}"
    );
    assert!(
        xml.lines()
            .filter(|l| l.contains("<testcase "))
            .all(|l| l.contains(" time=\"")),
        "every testcase has a time"
    );
}

#[test]
fn test_tap_reporter_is_version_13_with_yaml_diagnostics_for_failures() {
    let dir = sample_with_changed_tone();
    let out = covel_in(
        dir.path(),
        &["test", "tests/bell-tower.session.yaml", "--reporter", "tap"],
    );
    assert_exit(&out, 1);
    let tap = String::from_utf8_lossy(&out.stdout);
    let mut lines = tap.lines();
    assert_eq!(lines.next(), Some("TAP version 13"));
    let plan = lines.next().expect("a plan");
    let count: usize = plan.strip_prefix("1..").expect("1..N").parse().expect("N");
    let points = tap
        .lines()
        .filter(|l| l.starts_with("ok ") || l.starts_with("not ok "))
        .count();
    assert_eq!(points, count, "{tap}");
    let failing = tap.find("not ok ").map(|at| &tap[at..]).expect("a failure");
    let block: Vec<&str> = failing
        .lines()
        .skip(1)
        .take_while(|l| *l != "  ...")
        .collect();
    assert_eq!(block.first(), Some(&"  ---"), "{tap}");
    let yaml: String = block[1..]
        .iter()
        .map(|l| format!("{}\n", &l[2..]))
        .collect();
    let diagnostics: serde_json::Value =
        serde_json::to_value(serde_saphyr_yaml(&yaml)).expect("json");
    assert_eq!(diagnostics["severity"], "fail", "{yaml}");
    assert!(diagnostics["message"].is_string(), "{yaml}");
    assert!(diagnostics["durationMs"].is_u64(), "{yaml}");
}

/// A YAML text as JSON (the test's own reading of a TAP diagnostics block).
fn serde_saphyr_yaml(text: &str) -> serde_json::Value {
    covel_kernel::yaml::from_str(text).unwrap_or_else(|e| panic!("not YAML: {e:?}\n{text}"))
}

#[test]
fn test_update_writes_a_pending_golden_new_beside_the_golden_and_leaves_the_golden_as_it_was() {
    let dir = sample_with_changed_tone();
    let demo = dir.path().join("demo.session.yaml");
    let golden = dir.path().join("demo.golden.yaml");
    let before = std::fs::read_to_string(&golden).expect("read");
    let out = covel(&["test", demo.to_str().expect("utf-8"), "--update"]);
    assert_exit(&out, 0);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("1 change pending in"), "{text}");
    assert_eq!(std::fs::read_to_string(&golden).expect("read"), before);
    let pending = dir.path().join("demo.golden.new");
    assert!(
        std::fs::read_to_string(&pending)
            .expect("the pending snapshot")
            .contains("grave, patient")
    );
    // A `.golden.new` is never taken for a session.
    let run = covel(&["test", dir.path().to_str().expect("utf-8"), "--json"]);
    assert_eq!(json_of(&run)["sessions"].as_array().map(Vec::len), Some(5));
    let report = json_of(&covel(&["test", demo.to_str().expect("utf-8"), "--json"]));
    assert_eq!(
        report["sessions"][0]["pending"][0]["turn"],
        report["sessions"][0]["turns"][0]["turnId"]
    );
}

#[test]
fn test_update_refuses_while_expectations_fail_naming_them_unless_forced() {
    let dir = sample_with_changed_tone();
    let session = dir.path().join("tests/bell-tower.session.yaml");
    let pending = dir.path().join("tests/bell-tower.golden.new");
    let out = covel(&["test", session.to_str().expect("utf-8"), "--update"]);
    assert_exit(&out, 1);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("expectations fail:"), "{text}");
    assert!(
        text.contains("[system-text] system prompt contains \"grave, unhurried\" (")
            && text.contains("bell-tower.session.yaml:"),
        "names the failing expectation and its line: {text}"
    );
    assert!(text.contains("pass --force"), "{text}");
    assert!(!pending.exists());
    let forced = covel(&[
        "test",
        session.to_str().expect("utf-8"),
        "--update",
        "--force",
        "--json",
    ]);
    assert_exit(&forced, 1);
    assert_eq!(json_of(&forced)["sessions"][0]["golden"], "pending");
    assert!(pending.exists());
}

#[test]
fn test_review_without_a_terminal_asks_for_accept_all_or_reject_all() {
    let dir = sample_with_changed_tone();
    let demo = dir.path().join("demo.session.yaml");
    assert_exit(
        &covel(&["test", demo.to_str().expect("utf-8"), "--update"]),
        0,
    );
    let out = covel(&["test", demo.to_str().expect("utf-8"), "--review"]);
    assert_exit(&out, 2);
    assert!(String::from_utf8_lossy(&out.stderr).contains("--accept-all or --reject-all"));
    let reject = covel(&[
        "test",
        demo.to_str().expect("utf-8"),
        "--review",
        "--reject-all",
    ]);
    assert_exit(&reject, 0);
    let text = String::from_utf8_lossy(&reject.stdout);
    assert!(text.contains("0 changes accepted, 1 rejected"), "{text}");
    assert!(
        text.contains("[-unhurried-]{+patient+}"),
        "shows the diff: {text}"
    );
    assert!(
        !dir.path().join("demo.golden.new").exists(),
        "a decided .new is deleted"
    );
    let golden = std::fs::read_to_string(dir.path().join("demo.golden.yaml")).expect("read");
    assert!(
        golden.contains("grave, unhurried"),
        "rejected: the golden is as it was"
    );
}

#[test]
fn test_review_on_a_terminal_accepts_one_change_of_two_and_keeps_the_other_as_it_was() {
    let dir = sample_with_changed_tone();
    let session = dir.path().join("tests/bell-tower.session.yaml");
    let golden_file = dir.path().join("tests/bell-tower.golden.yaml");
    let session = session.to_str().expect("utf-8");
    assert_exit(&covel(&["test", session, "--update", "--force"]), 1);
    // On a terminal (`script`), the answers are y (the first turn) then n (the second).
    let text = review_on_a_terminal(session, b"y\nn\n");
    assert!(text.contains("1 change accepted, 1 rejected"), "{text}");
    assert!(
        text.contains("changed (also in turn-"),
        "the first change names the turns that share its diff: {text}"
    );
    let golden: serde_json::Value =
        serde_saphyr_yaml(&std::fs::read_to_string(&golden_file).expect("read"));
    let system = |turn: usize| golden["turns"][turn]["system"].to_string();
    assert!(
        system(0).contains("grave, patient"),
        "turn 1's change accepted"
    );
    assert!(
        system(1).contains("grave, unhurried"),
        "turn 2 kept as it was"
    );
    assert!(!dir.path().join("tests/bell-tower.golden.new").exists());
}

#[test]
fn test_a_difference_shared_by_several_turns_is_reported_once_naming_the_turns() {
    let dir = sample_with_changed_tone();
    let session = dir.path().join("tests/bell-tower.session.yaml");
    let out = covel(&["test", session.to_str().expect("utf-8"), "--json"]);
    let report = json_of(&out);
    let turns = report["sessions"][0]["turns"].as_array().expect("turns");
    let first = turns[0]["goldenDifferences"]
        .as_array()
        .expect("differences")
        .iter()
        .find(|d| d["from"] == "segment story-director/tone")
        .expect("the tone difference");
    assert_eq!(first["alsoIn"], serde_json::json!([turns[1]["turnId"]]));
    let repeat = turns[1]["goldenDifferences"]
        .as_array()
        .expect("differences")
        .iter()
        .find(|d| d["from"] == "segment story-director/tone")
        .expect("turn 2 still fails on it");
    assert_eq!(repeat["sameAs"], turns[0]["turnId"]);
    let human = covel(&["test", session.to_str().expect("utf-8")]);
    let text = String::from_utf8_lossy(&human.stdout);
    assert_eq!(
        text.matches("[-unhurried-]{+patient+}").count(),
        1,
        "one diff per change: {text}"
    );
}

#[test]
fn test_a_failed_contains_shows_the_closest_text_and_every_failed_expectation_names_its_line() {
    let dir = sample_copy();
    let session = dir.path().join("tests/bell-tower.session.yaml");
    edit(
        &session,
        "contains: \"grave, unhurried\"",
        "contains: \"grave, patient\"",
    );
    let out = covel(&["test", session.to_str().expect("utf-8"), "--json"]);
    assert_exit(&out, 1);
    let report = json_of(&out);
    let check = report["sessions"][0]["turns"][0]["checks"][0].clone();
    let detail = check["detail"].as_str().unwrap_or_default();
    assert!(detail.contains("closest: \"…"), "{detail}");
    assert!(detail.contains("grave, unhurried"), "{detail}");
    let text = std::fs::read_to_string(&session).expect("read");
    let line = text
        .lines()
        .position(|l| l.contains("grave, patient"))
        .expect("the line")
        + 1;
    let location = check["location"].as_str().unwrap_or_default();
    assert!(
        location.ends_with(&format!("bell-tower.session.yaml:{line}:11")),
        "{location}"
    );
}

#[test]
fn test_matches_slot_schema_and_tokens_at_most_expectations_pass_and_fail() {
    let dir = sample_copy();
    let session = dir.path().join("tests/bell-tower.session.yaml");
    edit(
        &session,
        "        - system: { notContains: \"swim to the bell tower\" }\n",
        "        - system: { notContains: \"swim to the bell tower\" }\n        - system: { matches: \"grave, (unhurried|patient)\" }\n        - message: { role: user, matches: \"^I wait\" }\n        - slot: { slot: stage.backdrop@1, schema: { type: object, required: [name] } }\n        - slot: { slot: stage.backdrop@1, pointer: /name, schema: { type: string }, equals: The Harbour }\n        - tokensAtMost: 100000\n        - system: { matches: \"grave, (solemn|patient)\" }\n        - slot: { slot: stage.backdrop@1, pointer: /name, schema: { type: integer } }\n        - tokensAtMost: 3\n",
    );
    let out = covel(&["test", session.to_str().expect("utf-8"), "--json"]);
    assert_exit(&out, 1);
    let checks = json_of(&out)["sessions"][0]["turns"][0]["checks"].clone();
    let results: Vec<(bool, String)> = checks.as_array().expect("checks")[2..10]
        .iter()
        .map(|c| {
            (
                c["passed"] == true,
                c["detail"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    assert_eq!(
        results.iter().map(|r| r.0).collect::<Vec<_>>(),
        [true, true, true, true, true, false, false, false],
        "{checks}"
    );
    assert!(
        results[5].1.contains("matches /grave, (solemn|patient)/"),
        "{:?}",
        results[5]
    );
    assert!(results[6].1.contains("integer"), "{:?}", results[6]);
    assert!(
        results[7].1.contains("estimateTokens, as budgets count"),
        "{:?}",
        results[7]
    );
}

#[test]
fn test_exit_codes_are_0_passed_1_a_test_failed_2_usage_or_configuration_error() {
    assert_exit(&covel(&["test", "plugins-sample"]), 0);
    let dir = sample_with_changed_tone();
    assert_exit(&covel_in(dir.path(), &["test", "."]), 1);
    assert_exit(&covel(&["test", "no/such/folder"]), 2);
    assert_exit(&covel(&["test", "plugins-sample", "--reporter", "xml"]), 2);
    assert_exit(&covel(&["test", "plugins-sample", "--force"]), 2);
}

/// Runs `covel test SESSION --review` on a terminal (`script`), answering `answers`.
fn review_on_a_terminal(session: &str, answers: &[u8]) -> String {
    use std::io::Write;
    let command = format!("{} test {session} --review", env!("CARGO_BIN_EXE_covel"));
    let mut child = Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .env_remove("CI")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("script runs");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(answers)
        .expect("answers");
    let out = child.wait_with_output().expect("script ends");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn test_review_q_leaves_the_rest_pending_and_a_accepts_every_remaining_change() {
    let dir = sample_with_changed_tone();
    let session = dir.path().join("tests/bell-tower.session.yaml");
    let session = session.to_str().expect("utf-8");
    let pending = dir.path().join("tests/bell-tower.golden.new");
    assert_exit(&covel(&["test", session, "--update", "--force"]), 1);
    let text = review_on_a_terminal(session, b"q\n");
    assert!(
        text.contains("0 changes accepted, 0 rejected, 2 left pending"),
        "{text}"
    );
    assert!(pending.exists(), "quitting keeps the pending snapshot");
    let text = review_on_a_terminal(session, b"a\n");
    assert!(text.contains("2 changes accepted, 0 rejected"), "{text}");
    assert!(!pending.exists());
    let golden =
        std::fs::read_to_string(dir.path().join("tests/bell-tower.golden.yaml")).expect("read");
    assert!(!golden.contains("grave, unhurried") && golden.contains("grave, patient"));
}
