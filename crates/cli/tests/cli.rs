//! End-to-end tests of the real `covel` binary: exit codes, human and JSON output.

use covel_tests::copy_dir;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn covel(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_covel")).args(args).current_dir(repo()).output().expect("covel runs")
}

fn json_of(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&output.stdout)))
}

fn sample_plugins() -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(repo().join("plugins-sample"))
        .expect("plugins-sample exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("PLUGIN.md").is_file())
        .map(|p| p.strip_prefix(repo()).expect("inside repo").display().to_string())
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
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
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
        for field in ["code", "message", "file", "line", "column"] {
            assert!(diagnostic.get(field).is_some(), "{field} missing in {diagnostic}");
        }
        let expected = std::fs::read_to_string(dir.join("expected-code")).expect("expected-code");
        assert_eq!(diagnostic["code"], expected.trim());
    }
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(covel(&["validate"]).status.code(), Some(2));
    assert_eq!(covel(&["call", "plugins-sample", "history.compact@1"]).status.code(), Some(2));
    assert_eq!(covel(&["validate", "no/such/folder"]).status.code(), Some(2));
}

#[test]
fn call_prints_point_mode_result_and_trace() {
    let out = covel(&["call", "plugins-sample", "prompt.segment@1", "--input", r#"{"turnId":"t1","playerMessage":"Hello"}"#, "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let report = json_of(&out);
    assert_eq!(report["point"], "prompt.segment@1");
    assert_eq!(report["mode"], "collect");
    assert!(report["result"].as_array().is_some_and(|a| !a.is_empty()));
    let call = &report["calls"][0];
    for field in ["point", "pluginId", "providerId", "order", "outcome", "durationMs"] {
        assert!(call.get(field).is_some(), "{field} missing in {call}");
    }
    assert!(report["error"].is_null());
}

#[test]
fn call_selects_a_slot_and_fails_with_exit_1_when_the_run_fails() {
    let out = covel(&["call", "plugins-sample", "ui.slot@1", "--slot", "stage.cast@1", "--json"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(json_of(&out)["calls"].as_array().map(Vec::len), Some(2));

    let out = covel(&["call", "tests/fixtures/runner-single", "session.world-context@1", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(json_of(&out)["error"]["code"], "conflicting-providers");
}

#[test]
fn call_reads_its_input_from_a_file() {
    let dir = std::env::temp_dir().join(format!("covel-cli-input-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("input.json");
    std::fs::write(&file, r#"{"turnId":"t1","playerMessage":"From a file"}"#).expect("write");
    let arg = format!("@{}", file.display());
    let out = covel(&["call", "plugins-sample", "prompt.segment@1", "--input", &arg, "--json"]);
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
    assert_eq!(report["rejected"][0]["candidates"], serde_json::json!(["lore-one", "lore-two"]));
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
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let report = json_of(&out);
    assert_eq!(report["result"]["dimensions"]["trust"]["value"], 4);
    assert_eq!(report["result"]["entries"]["era"], "after the flood");
    assert_eq!(report["result"]["dimensionProviderPluginId"], "world-state");
}

#[test]
fn an_invalid_session_file_is_a_usage_error_with_its_position() {
    let out = covel(&["resolve", "plugins-sample", "--session", "tests/fixtures/sessions-invalid/unknown-key.session.yaml"]);
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
    let out = covel(&["preview", "plugins-sample", "--session", "plugins-sample/demo.session.yaml", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let mut report = json_of(&out);
    for field in ["prompt", "segments", "cache", "calls", "worldContext", "slots"] {
        assert!(report.get(field).is_some(), "{field} missing");
    }
    assert!(report["prompt"]["system"]["blocks"][0].get("cacheBoundary").is_some());
    redact(&mut report);
    insta::assert_json_snapshot!("demo_preview", report);
}

#[test]
fn preview_prints_the_prompt_with_boundaries_then_the_segment_table() {
    let out = covel(&["preview", "plugins-sample", "--session", "plugins-sample/demo.session.yaml"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    let boundary = text.find("cache boundary 0").expect("boundaries are drawn");
    let table = text.find("Segments (sorted").expect("segment table");
    assert!(boundary < table);
    assert_eq!(covel(&["preview", "plugins-sample", "--runtime", "nonsense"]).status.code(), Some(2));
    let own = covel(&["preview", "plugins-sample", "--runtime", "plugin:story-director", "--json"]);
    let report = json_of(&own);
    let rules = report["segments"].as_array().expect("segments").iter().find(|s| s["id"] == "reply-rules").expect("static segment");
    assert_eq!(rules["included"], true, "a plugin's own runtime sees its self segments");
}


#[test]
fn watch_prints_one_json_entry_per_reload_with_diff_and_timings() {
    use std::io::BufRead;
    let dir = std::env::temp_dir().join(format!("covel-watch-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    copy_dir(&repo().join("plugins-sample"), &dir);
    let mut child = Command::new(env!("CARGO_BIN_EXE_covel"))
        .args(["watch", dir.to_str().expect("utf-8"), "--session", dir.join("demo.session.yaml").to_str().expect("utf-8"), "--json", "--max-reloads", "1"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("covel watch starts");
    let mut lines = std::io::BufReader::new(child.stdout.take().expect("stdout")).lines();
    let ready: Value = serde_json::from_str(&lines.next().expect("ready line").expect("line")).expect("json");
    assert_eq!(ready["event"], "ready");
    let module = dir.join("story-director/server/lib/text.js");
    let text = std::fs::read_to_string(&module).expect("read");
    std::fs::write(&module, text.replace("grave, unhurried", "grave, patient")).expect("write");
    let entry: Value = serde_json::from_str(&lines.next().expect("reload line").expect("line")).expect("json");
    assert_eq!(entry["plugins"]["story-director"], "replaced");
    assert_eq!(entry["diff"]["segments"][0]["id"], "tone");
    for field in ["reloadMs", "afterDebounceMs", "loadMs", "resolveMs", "previewMs"] {
        assert!(entry["timings"][field].is_number(), "{field}");
    }
    assert!(child.wait().expect("exits").success());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn play_runs_scripted_turns_and_saves_the_session() {
    let dir = std::env::temp_dir().join(format!("covel-play-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let saved = dir.join("played.session.yaml");
    let out = covel(&[
        "play", "plugins-sample", "--session", "plugins-sample/demo.session.yaml",
        "--say", "I swim.", "--say", "I climb.", "--save", saved.to_str().expect("utf-8"), "--json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let report = json_of(&out);
    assert_eq!(report["turns"].as_array().map(Vec::len), Some(2));
    assert!(report["turns"][0]["reply"]["text"].as_str().is_some_and(|t| t.contains("Scripted narrator")));
    let reopened = covel(&["resolve", "plugins-sample", "--session", saved.to_str().expect("utf-8")]);
    assert_eq!(reopened.status.code(), Some(0), "the saved session opens again");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn compact_validates_a_hand_written_output_rule_by_rule() {
    let dir = std::env::temp_dir().join(format!("covel-compact-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let bad = dir.join("bad.json");
    std::fs::write(&bad, r#"{"summaries":[{"messageIds":["m2u"],"replacesSummaryIds":[],"content":"skips the first","focusSections":[]}]}"#).expect("write");
    let out = covel(&[
        "compact", "tests/fixtures/compaction/plugins", "--session", "tests/fixtures/compaction/long.session.yaml",
        "--output", bad.to_str().expect("utf-8"), "--json",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let report = json_of(&out);
    let broken: Vec<&str> = report["run"]["verdict"]["rules"].as_array().expect("rules").iter().filter(|r| r["ok"] == false).filter_map(|r| r["rule"].as_str()).collect();
    assert_eq!(broken, ["message-prefix-in-order"]);
    assert_eq!(report["failureCount"], 1);
    assert!(report["run"]["input"]["summaryBudget"]["maxTokens"].is_number());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn preview_shows_minimal_history_messages_in_order_with_derived_fields() {
    let out = covel(&["preview", "plugins-sample", "--session", "tests/fixtures/sessions/minimal-history.session.yaml", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let report = json_of(&out);
    let history: Vec<(String, String)> = report["prompt"]["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| m["origin"]["kind"] == "history")
        .map(|m| (m["origin"]["id"].as_str().unwrap_or_default().to_string(), m["role"].as_str().unwrap_or_default().to_string()))
        .collect();
    let expected = [("m1", "user"), ("m2", "assistant"), ("ask", "user"), ("m4", "assistant")];
    assert_eq!(history, expected.map(|(i, r)| (i.to_string(), r.to_string())));
    assert_eq!(report["turnId"], "turn-3", "two derived turns precede the previewed one");
    let text = covel(&["preview", "plugins-sample", "--session", "tests/fixtures/sessions/minimal-history.session.yaml"]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("(history m1, ") && text.find("(history m1, ") < text.find("(history m4, "), "{text}");
}

#[test]
fn a_history_message_without_content_is_a_session_schema_error_with_line_and_column() {
    let out = covel(&["preview", "plugins-sample", "--session", "tests/fixtures/sessions-invalid/history-without-content.session.yaml"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("history-without-content.session.yaml:5:7: [session-schema]"), "{err}");
}

#[test]
fn compaction_of_a_minimal_history_accepts_a_valid_prefix() {
    let dir = tempfile::tempdir().expect("tempdir");
    let output = dir.path().join("prefix.json");
    std::fs::write(&output, r#"{"summaries":[{"messageIds":["m1","m2"],"replacesSummaryIds":[],"content":"Mira reached the harbour; the tide was out.","focusSections":[]}]}"#).expect("write");
    let out = covel(&[
        "compact", "plugins-sample", "--session", "tests/fixtures/sessions/minimal-history.session.yaml",
        "--output", output.to_str().expect("utf-8"), "--json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    let report = json_of(&out);
    assert_eq!(report["run"]["verdict"]["accepted"], true, "{}", report["run"]["verdict"]);
    let compacted: Vec<&str> =
        report["historyAfter"].as_array().expect("history").iter().filter(|m| m.get("compactedAtTurnId").is_some()).filter_map(|m| m["id"].as_str()).collect();
    assert_eq!(compacted, ["m1", "m2"]);
}

#[test]
fn a_run_that_fails_as_a_whole_is_in_the_preview_json_and_text_and_exits_1() {
    let args = ["preview", "tests/fixtures/world/plugins", "--session", "tests/fixtures/world/sessions/throws.session.yaml"];
    let out = covel(&[&args[..], &["--json"]].concat());
    assert_eq!(out.status.code(), Some(1));
    let report = json_of(&out);
    assert_eq!(report["errors"][0]["point"], "session.world-context@1");
    assert_eq!(report["errors"][0]["error"]["code"], "fail-turn");
    let out = covel(&args);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("Runs that failed"), "{text}");
    assert!(text.contains("✗ session.world-context@1 (this-turn): provider"), "{text}");
}
