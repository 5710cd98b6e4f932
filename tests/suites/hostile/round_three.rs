//! The hostile corpus, round three (issue #45): each case once crashed, hung or read what it
//! should not, and is reproduced here against a neighbour plugin that must keep working. The
//! cases that need the `covel` binary (keys across redirects, the trust file's path, saves)
//! are in `crates/cli/tests/hostile.rs`.

use super::{call_of, segment_plugin};
use covel_js::Limits;
use covel_kernel::contract::PointId;
use covel_kernel::runner::{Outcome, RunResult};
use covel_studio::Workspace;
use serde_json::json;
use std::path::Path;
use std::time::{Duration, Instant};

/// A segment provider answering `content` in the sample's shape.
fn segment(id: &str, content: &str) -> String {
    format!(
        "[{{ id: \"{id}\", content: {content}, position: \"system\", audience: \"story\", volatility: \"stable\" }}]"
    )
}

/// A folder with `calm` (a neighbour whose segment must survive) and the hostile plugins.
fn folder_with(plugins: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    segment_plugin(
        dir.path(),
        "calm",
        &format!(
            "export default function (covel) {{\n  covel.provideExtension(\"prompt.segment@1\", \"calm\", {{ handler: () => {} }});\n}}\n",
            segment("calm", "\"The neighbour still works.\"")
        ),
    );
    for (id, entry) in plugins {
        segment_plugin(dir.path(), id, entry);
    }
    dir
}

/// An entry that provides the segment `id` with `handler` (a JS function expression).
fn entry(id: &str, handler: &str) -> String {
    format!(
        "export default function (covel) {{\n  covel.provideExtension(\"prompt.segment@1\", \"{id}\", {{ handler: {handler} }});\n}}\n"
    )
}

/// Opens the folder and runs `prompt.segment@1` over it with a short point timeout.
fn segments(dir: &Path, timeout: Duration) -> (Workspace, RunResult) {
    std::fs::write(dir.join("t.session.yaml"), "id: t\nlocale: en\n").expect("session");
    let ws =
        Workspace::open(dir, Some(&dir.join("t.session.yaml")), &Limits::default()).expect("opens");
    let result = covel_kernel::runner::run(
        PointId::PromptSegment,
        json!({"turnId": "t", "playerMessage": ""}),
        &ws.active_providers(),
        &ws.execution(Some("t".into())),
        &covel_kernel::runner::RunOptions {
            timeout: Some(timeout),
            ..Default::default()
        },
    );
    (ws, result)
}

fn neighbour_works(result: &RunResult) {
    assert_eq!(
        covel_tests::segment_content(result, "calm").as_deref(),
        Some("The neighbour still works."),
        "{:?}",
        result.calls
    );
}

/// Runs `f` on its own thread and fails (rather than hang the suite) when it takes longer than
/// `limit`: a case that once hung forever must now end, and this says so when it does not.
fn within<T: Send + 'static>(limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(limit)
        .unwrap_or_else(|_| panic!("still running after {limit:?}: it hangs"))
}

fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo runs");
    assert!(status.success());
}

#[test]
fn row_1_an_array_whose_length_is_two_to_the_31_is_refused_and_nothing_dies() {
    let dir = folder_with(&[
        (
            "huge-length",
            &entry(
                "huge-length",
                "() => { const a = []; a.length = 2 ** 31; return a; }",
            ),
        ),
        (
            "max-length",
            &entry(
                "max-length",
                "() => { const a = [1]; a.length = 2 ** 32 - 1; return a; }",
            ),
        ),
        // Overriding `push` at load once reached the host's staging and log arrays.
        (
            "push-override",
            "const realPush = Array.prototype.push;\nArray.prototype.push = function (...xs) { try { this.length = 2 ** 31; } catch {} return realPush.apply(this, xs); };\nexport default function (covel) {\n  covel.provideExtension(\"prompt.segment@1\", \"push-override\", { handler: () => { console.log(\"still here\"); return [{ id: \"push-override\", content: \"registered and logged\", position: \"system\", audience: \"story\", volatility: \"stable\" }]; } });\n}\n",
        ),
    ]);
    let (_ws, result) = segments(dir.path(), Duration::from_secs(2));
    for plugin in ["huge-length", "max-length"] {
        let call = call_of(&result, plugin);
        assert_eq!(call.outcome, Outcome::InvalidOutput, "{plugin}: {call:?}");
        assert!(
            call.message
                .as_deref()
                .is_some_and(|m| m.contains("more than 100000 values")),
            "{call:?}"
        );
    }
    let call = call_of(&result, "push-override");
    assert_eq!(call.outcome, Outcome::Success, "{call:?}");
    assert_eq!(call.logs, ["[log] still here"]);
    neighbour_works(&result);
}

#[test]
fn row_2_a_timer_delay_the_clock_cannot_hold_runs_after_one_ms_as_in_node() {
    let dir = folder_with(&[(
        "forever-timer",
        &entry(
            "forever-timer",
            &format!(
                "async () => {{ await new Promise((r) => setTimeout(r, Infinity)); await new Promise((r) => setTimeout(r, 1e300)); await new Promise((r) => setTimeout(r, NaN)); return {}; }}",
                segment("forever-timer", "\"woke up\"")
            ),
        ),
    )]);
    let (_ws, result) = within(Duration::from_secs(30), move || {
        let out = segments(dir.path(), Duration::from_secs(2));
        drop(dir);
        out
    });
    let call = call_of(&result, "forever-timer");
    assert_eq!(call.outcome, Outcome::Success, "{call:?}");
    // The studio's own note, apart from what the handler printed.
    assert!(
        call.notes
            .iter()
            .any(|l| l.contains("is over 2147483647 ms: it runs after 1 ms, as in Node")),
        "{:?}",
        call.notes
    );
    neighbour_works(&result);
}

#[test]
fn row_3_a_registration_stack_naming_files_outside_the_loaded_modules_is_never_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().canonicalize().expect("canonical");
    segment_plugin(&root, "liar", "");
    let plugin = root.join("liar");
    mkfifo(&plugin.join("server/pipe.js"));
    std::fs::write(
        plugin.join("server/index.js"),
        format!(
            "Error.prepareStackTrace = () => \"Error\\n    at f ({p}/../../../../../../dev/zero:1:1)\\n    at g ({p}/server/pipe.js:1:1)\";\n{}",
            entry("liar", &format!("() => {}", segment("liar", "\"ok\""))),
            p = plugin.display()
        ),
    )
    .expect("entry");
    let loaded = within(Duration::from_secs(20), move || {
        covel_js::load_plugin(&plugin, &Limits::default())
    });
    assert!(loaded.ok(), "{:?}", loaded.diagnostics);
    let site = &loaded.registrations.extensions[0].site;
    assert!(
        site.is_none(),
        "no site is taken from a lying stack: {site:?}"
    );
}

#[test]
fn row_4_a_missing_export_message_the_entry_throws_names_no_file_to_read() {
    for named in ["/dev/zero", "PLUGIN/server/pipe.js"] {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().canonicalize().expect("canonical");
        segment_plugin(&root, "thrower", "");
        let plugin = root.join("thrower");
        mkfifo(&plugin.join("server/pipe.js"));
        let named = named.replace("PLUGIN", &plugin.display().to_string());
        std::fs::write(
            plugin.join("server/index.js"),
            format!("throw new Error(\"Could not find export 'x' in module '{named}'\");\n"),
        )
        .expect("entry");
        let loaded = within(Duration::from_secs(20), move || {
            covel_js::load_plugin(&plugin, &Limits::default())
        });
        let codes: Vec<&str> = loaded.diagnostics.iter().map(|d| d.code.as_str()).collect();
        assert_eq!(codes, ["entry-threw"], "{:?}", loaded.diagnostics);
        let file = loaded.diagnostics[0].file.as_deref().expect("a file");
        assert_eq!(file, Path::new("thrower/server/index.js"));
    }
}

#[test]
fn row_5_the_host_log_array_never_reaches_plugin_code_through_push() {
    let dir = folder_with(&[(
        "log-thief",
        "let stolen = null;\nconst realPush = Array.prototype.push;\nArray.prototype.push = function (...xs) { if (typeof xs[0] === \"string\" && xs[0].startsWith(\"[log]\")) stolen = this; return realPush.apply(this, xs); };\nexport default function (covel) {\n  covel.provideExtension(\"prompt.segment@1\", \"log-thief\", { handler: () => {\n    console.log(\"bait\");\n    if (stolen) { const big = \"x\".repeat(1 << 20); for (let i = 0; i < 100000; i++) stolen.push(big); Object.defineProperty(stolen, 0, { get() { for (;;) {} } }); }\n    return [{ id: \"log-thief\", content: stolen ? \"stole the log\" : \"found nothing\", position: \"system\", audience: \"story\", volatility: \"stable\" }];\n  } });\n}\n",
    )]);
    let (_ws, result) = within(Duration::from_secs(30), move || {
        let out = segments(dir.path(), Duration::from_secs(2));
        drop(dir);
        out
    });
    let call = call_of(&result, "log-thief");
    assert_eq!(call.outcome, Outcome::Success, "{call:?}");
    assert_eq!(
        covel_tests::segment_content(&result, "log-thief").as_deref(),
        Some("found nothing")
    );
    assert_eq!(call.logs, ["[log] bait"]);
    neighbour_works(&result);
}

#[test]
fn row_6_an_array_of_fifty_million_holes_is_refused_at_once() {
    let dir = folder_with(&[
        (
            "holes",
            &entry("holes", "() => { const a = []; a.length = 5e7; return a; }"),
        ),
        (
            "undefineds",
            &entry(
                "undefineds",
                "() => { const a = new Array(200000).fill(undefined); return a; }",
            ),
        ),
    ]);
    let started = Instant::now();
    let (_ws, result) = segments(dir.path(), Duration::from_millis(500));
    for plugin in ["holes", "undefineds"] {
        let call = call_of(&result, plugin);
        assert_eq!(call.outcome, Outcome::InvalidOutput, "{plugin}: {call:?}");
    }
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "refused without walking the holes: {:?}",
        started.elapsed()
    );
    neighbour_works(&result);
}

#[test]
fn row_7_a_gateway_request_to_a_silent_model_server_ends_at_the_call_deadline() {
    // A model server that accepts and never answers (it stops by itself after 20 s).
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        listener.set_nonblocking(true).expect("nonblocking");
        let until = Instant::now() + Duration::from_secs(20);
        while Instant::now() < until {
            if let Ok((stream, _)) = listener.accept() {
                held.push(stream);
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    });
    let dir = folder_with(&[(
        "asks-model",
        &entry(
            "asks-model",
            &format!(
                "async (_i, ctx) => {{ let text; try {{ text = (await ctx.gateway.generateText({{ prompt: \"hi\" }})).text; }} catch (e) {{ text = `failed: ${{e.message}}`; }} return {}; }}",
                segment("asks-model", "text")
            ),
        ),
    )]);
    std::fs::write(dir.path().join("t.session.yaml"), "id: t\nlocale: en\n").expect("session");
    let ws = Workspace::open(
        dir.path(),
        Some(&dir.path().join("t.session.yaml")),
        &Limits::default(),
    )
    .expect("opens");
    let mut fast = covel_kernel::session::Models::default().fast;
    fast.backend = "openai".into();
    fast.base_url = Some(format!("http://127.0.0.1:{port}/v1"));
    let mut ctx = (*ws.execution(Some("t".into()))).clone();
    ctx.gateway = Some(covel_kernel::context::Gateway(std::sync::Arc::new(
        covel_studio::models::FastGateway {
            fast: covel_studio::models::Backend::new(&fast),
        },
    )));
    let started = Instant::now();
    let result = covel_kernel::runner::run(
        PointId::PromptSegment,
        json!({"turnId": "t", "playerMessage": ""}),
        &ws.active_providers(),
        &std::sync::Arc::new(ctx),
        &covel_kernel::runner::RunOptions {
            timeout: Some(Duration::from_millis(800)),
            ..Default::default()
        },
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the call's deadline, not the backend's 120 s: {:?}",
        started.elapsed()
    );
    let call = call_of(&result, "asks-model");
    let answered = covel_tests::segment_content(&result, "asks-model").unwrap_or_default();
    assert!(
        call.outcome == Outcome::Timeout || answered.starts_with("failed: "),
        "{call:?} {answered}"
    );
    neighbour_works(&result);
}

#[test]
fn row_8_accepting_a_golden_never_writes_through_a_link_or_into_a_fifo() {
    let (_dir, root) = super::sample_copy();
    let tests = root.join("tests");
    let outside = root.join("..").join("precious.txt");
    std::fs::write(&outside, "not a golden file").expect("write");
    let golden = tests.join("bell-tower.golden.yaml");
    std::fs::remove_file(&golden).expect("rm");
    std::os::unix::fs::symlink(&outside, &golden).expect("symlink");
    let session = tests.join("bell-tower.session.yaml");
    let targets = covel_studio::testing::discover(std::slice::from_ref(&session)).expect("found");
    let result = covel_studio::testing::run_session(&targets[0], true, &Limits::default());
    let error = result.error.unwrap_or_default();
    assert!(error.contains("symbolic link"), "{error}");
    // Accepting the pending change (the review) refuses too, and writes nothing.
    let accepted = covel_studio::testing::review::decide(&session, 0, true);
    assert!(
        accepted
            .as_ref()
            .is_err_and(|e| e.to_string().contains("symbolic link")),
        "{accepted:?}"
    );
    assert_eq!(
        std::fs::read_to_string(&outside).expect("read"),
        "not a golden file"
    );
    assert!(
        std::fs::symlink_metadata(&golden)
            .expect("meta")
            .file_type()
            .is_symlink()
    );

    std::fs::remove_file(&golden).expect("rm");
    mkfifo(&golden);
    let target = targets[0].clone();
    let result = within(Duration::from_secs(60), move || {
        covel_studio::testing::run_session(&target, true, &Limits::default())
    });
    assert!(
        result
            .error
            .as_deref()
            .is_some_and(|e| e.contains("not a regular file")),
        "{:?}",
        result.error
    );
}

#[test]
fn row_14_a_plugin_md_that_is_not_a_readable_file_is_a_diagnostic_not_a_vanished_plugin() {
    let dir = tempfile::tempdir().expect("tempdir");
    let make = |name: &str| {
        let folder = dir.path().join(name);
        std::fs::create_dir_all(&folder).expect("mkdir");
        folder.join("PLUGIN.md")
    };
    mkfifo(&make("fifo"));
    let _socket = std::os::unix::net::UnixListener::bind(make("socket")).expect("socket");
    std::fs::create_dir_all(make("folder")).expect("mkdir");
    std::os::unix::fs::symlink("nowhere.md", make("dangling")).expect("symlink");
    let root = dir.path().to_path_buf();
    let loaded = within(Duration::from_secs(20), move || {
        covel_js::load_folder(&root, &Limits::default()).expect("lists")
    });
    let mut seen: Vec<(String, String, String)> = loaded
        .iter()
        .map(|p| {
            let d = p.diagnostics.first().expect("a diagnostic");
            (
                p.name.clone(),
                d.code.as_str().to_string(),
                d.file
                    .as_ref()
                    .map(|f| f.display().to_string())
                    .unwrap_or_default(),
            )
        })
        .collect();
    seen.sort();
    let expected = [
        ("dangling", "manifest-unreadable"),
        ("fifo", "not-regular-file"),
        ("folder", "not-regular-file"),
        ("socket", "not-regular-file"),
    ];
    assert_eq!(seen.len(), expected.len(), "{seen:?}");
    for ((name, code, file), (want_name, want_code)) in seen.iter().zip(expected) {
        assert_eq!((name.as_str(), code.as_str()), (want_name, want_code));
        assert_eq!(file, &format!("{want_name}/PLUGIN.md"));
    }
}

#[test]
fn row_15_an_entry_too_large_not_utf8_or_unreadable_says_what_it_is() {
    let case = |bytes: &[u8], unreadable: bool| -> Option<(String, String)> {
        let dir = tempfile::tempdir().expect("tempdir");
        segment_plugin(dir.path(), "entry", "");
        let index = dir.path().join("entry/server/index.js");
        std::fs::write(&index, bytes).expect("entry");
        if unreadable {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&index, std::fs::Permissions::from_mode(0o000))
                .expect("chmod");
            if std::fs::read(&index).is_ok() {
                // Running as root: nothing is unreadable here.
                return None;
            }
        }
        let loaded = covel_js::load_plugin(&dir.path().join("entry"), &Limits::default());
        let d = loaded.diagnostics.first().expect("a diagnostic");
        Some((
            d.code.as_str().to_string(),
            d.file
                .as_ref()
                .map(|f| f.display().to_string())
                .unwrap_or_default(),
        ))
    };
    let large = format!("// {}\nexport default () => {{}};\n", "x".repeat(9 << 20));
    let file = "entry/server/index.js".to_string();
    assert_eq!(
        case(large.as_bytes(), false),
        Some(("file-too-large".into(), file.clone()))
    );
    assert_eq!(
        case(b"export default () => {}; // caf\xe9\n", false),
        Some(("not-utf8".into(), file.clone()))
    );
    if let Some(seen) = case(b"export default () => {};\n", true) {
        assert_eq!(seen, ("file-unreadable".into(), file));
    }
}

#[test]
fn a_panic_inside_an_engine_fails_that_call_and_the_studio_carries_on() {
    let dir = folder_with(&[(
        "panics",
        &entry(
            "panics",
            &format!("() => \"{}\"", covel_js::engine::INJECT_PANIC),
        ),
    )]);
    let (ws, result) = segments(dir.path(), Duration::from_secs(2));
    let call = call_of(&result, "panics");
    assert_eq!(call.outcome, Outcome::Error, "{call:?}");
    assert!(
        call.message
            .as_deref()
            .is_some_and(|m| m.contains("bug of the studio's") && m.contains("injected panic")),
        "{call:?}"
    );
    neighbour_works(&result);
    // The engine was set aside: its plugin answers no more, every other plugin does, and
    // dropping it (a reload, the end of the process) never enters its runtime again.
    let again = covel_kernel::runner::run(
        PointId::PromptSegment,
        json!({"turnId": "t2", "playerMessage": ""}),
        &ws.active_providers(),
        &ws.execution(Some("t2".into())),
        &covel_kernel::runner::RunOptions::default(),
    );
    let call = call_of(&again, "panics");
    assert_eq!(call.outcome, Outcome::Unavailable, "{call:?}");
    neighbour_works(&again);
    drop(ws);
    let (_ws, fresh) = segments(dir.path(), Duration::from_secs(2));
    neighbour_works(&fresh);
}
