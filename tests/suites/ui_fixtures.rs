//! The data the desktop UI's tests are fed (ui/fixtures/*.ts): real studio snapshots of the
//! demo session — as opened, after a played turn, after a reload — and the Cache panel's forecast
//! and the Tests panel's results, as the wire sends them (`covel_studio::wire`), so browser tests
//! exercise the UI against what the Rust side produces. Each is a TypeScript module
//! (`export const fixture: Snapshot = {…}`), so `npm run check` checks the Rust-produced data
//! against the Rust-generated types (a JSON import would widen its literals). Fails when the
//! committed fixtures are stale; run with `UPDATE_UI_FIXTURES=1` to rewrite them.
//!
//! Also here: the wire keeps the JSON shape of the studio types it converts, and a patch sends
//! only what changed.

use covel_js::Limits;
use covel_studio::live::LiveStudio;
use covel_studio::wire::MemoAnswer;
use covel_studio::{RuntimeTarget, Workspace};
use covel_tests::copy_dir;
use serde_json::Value;
use std::path::Path;
use std::time::Instant;

fn normalize(value: &mut Value, root: &str) {
    match value {
        Value::Object(map) => {
            // A memo answer shows no duration (exactly 0), and the UI makes it so (`memoAnswer`):
            // it stays. Any other may round to 0 on a fast machine, and is normalized.
            let memo_answer = map.get("cached") == Some(&Value::Bool(true));
            // A tool's proposal is made with a random id (the SDK's `makeProposal`).
            if map.contains_key("source")
                && map.contains_key("payload")
                && let Some(id) = map.get_mut("id")
            {
                *id = Value::from("(a random proposal id)");
            }
            for (key, item) in map.iter_mut() {
                // Timings vary from run to run; a fixed non-zero value keeps the fixtures stable
                // and still lets the UI tests see durations rendered.
                if key.ends_with("Ms") && item.is_number() && !(memo_answer && key == "durationMs")
                {
                    *item = Value::from(1.5);
                } else {
                    normalize(item, root);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|i| normalize(i, root)),
        Value::String(s) if s.contains(root) => *s = s.replace(root, "plugins-sample"),
        _ => {}
    }
}

/// A scratch folder's canonical path, as the studio names what it opened there.
fn canonical(dir: &Path) -> String {
    dir.canonicalize().expect("canonical").display().to_string()
}

#[test]
fn ui_fixtures_are_fresh() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let dir = tempfile::tempdir().expect("temp");
    copy_dir(&repo.join("plugins-sample"), dir.path());
    let root = canonical(dir.path());
    let workspace = Workspace::open(
        Path::new(&root),
        Some(&Path::new(&root).join("demo.session.yaml")),
        &Limits::default(),
    )
    .expect("opens");
    let mut studio = LiveStudio::new(workspace, RuntimeTarget::Story);
    let mut outputs = Vec::new();
    // The request bodies of each snapshot's prompt, which the window asks for apart.
    let mut bodies = serde_json::Map::new();
    let mut requests_of = |name: &str, studio: &LiveStudio| {
        let requests = covel_studio::wire::Requests::from(&studio.preview().prompt);
        bodies.insert(name.into(), serde_json::to_value(requests).expect("json"));
    };
    requests_of("snapshot", &studio);
    outputs.push((
        "snapshot",
        "Snapshot",
        serde_json::to_value(studio.snapshot()).expect("json"),
    ));
    // The runtime switch: the Prompt panel assembling for story-director's own runtime.
    studio.set_target(RuntimeTarget::Plugin("story-director".into()));
    requests_of("runtime-plugin-story-director", &studio);
    outputs.push((
        "runtime-plugin-story-director",
        "Snapshot",
        serde_json::to_value(studio.snapshot()).expect("json"),
    ));
    studio.set_target(RuntimeTarget::Story);
    studio.play_turn("I swim to the bell tower.");
    requests_of("after-turn", &studio);
    outputs.push((
        "after-turn",
        "Snapshot",
        serde_json::to_value(studio.snapshot()).expect("json"),
    ));
    // The Playtest turn inspector asks for each played turn's prompt on demand.
    let turn_ids: Vec<String> = studio.turns().iter().map(|t| t.turn_id.clone()).collect();
    let previews: serde_json::Map<String, serde_json::Value> = turn_ids
        .into_iter()
        .map(|id| {
            let prompt = studio.turn_prompt(&id).expect("a played turn");
            let prompt = covel_studio::wire::turns::TurnPrompt::of(&prompt, &studio);
            (id, serde_json::to_value(prompt).expect("json"))
        })
        .collect();
    outputs.push((
        "turn-previews",
        "Record<string, TurnPrompt>",
        serde_json::Value::Object(previews),
    ));
    // The Cache panel's forecast for Sonnet (the demo is long enough to be cached) and for
    // Haiku 4.5 (minimum 4096: too short), counts of work left out (they vary with the run).
    for (name, model) in [
        ("forecast", "claude-sonnet-4-5"),
        ("forecast-too-short", "claude-haiku-4-5"),
    ] {
        let forecast = studio
            .forecast(
                Some(model),
                &covel_studio::forecast::ForecastOptions::default(),
            )
            .expect("forecast");
        let mut forecast = serde_json::to_value(forecast).expect("json");
        forecast["counting"] = serde_json::json!({"computed": 0, "reused": 0});
        outputs.push((name, "Forecast", forecast));
    }
    let tests = covel_studio::testing::run_folder(
        Path::new(&root),
        &covel_studio::testing::Sessions::None,
        &Limits::default(),
    )
    .expect("tests");
    outputs.push((
        "tests",
        "TestRun",
        serde_json::to_value(covel_studio::wire::results::TestRun::of(tests)).expect("json"),
    ));
    studio.undo().expect("a turn to undo");
    // The window holds the snapshot before the reload, whose prompt is the opened one (the
    // `snapshot` fixture); the reload's patch sends its prompt as a change to it (the UI's
    // tests apply it and compare with `after-reload`).
    let mut wire = covel_studio::wire::WireState::default();
    let held = wire.full(studio.snapshot());
    assert_eq!(
        serde_json::to_value(&held.preview.prompt).expect("json"),
        outputs[0].2["preview"]["prompt"],
        "the prompt after the undo is the opened one"
    );
    let module = Path::new(&root).join("story-director/server/lib/text.js");
    let text = std::fs::read_to_string(&module).expect("read");
    std::fs::write(&module, text.replace("grave, unhurried", "grave, patient")).expect("write");
    let changes = studio.classify(std::slice::from_ref(&module));
    studio.reload(&changes, Instant::now());
    requests_of("after-reload", &studio);
    outputs.push((
        "after-reload",
        "Snapshot",
        serde_json::to_value(studio.snapshot()).expect("json"),
    ));
    let change = wire
        .patch(studio.snapshot())
        .preview
        .and_then(|p| p.prompt)
        .expect("the reload changed the prompt");
    outputs.push((
        "reload-prompt-change",
        "JsonChange",
        serde_json::to_value(change).expect("json"),
    ));
    // A session edit from the Session panel: the session excludes soundtrack, which the
    // resolver then rejects with its code.
    studio
        .edit_session(
            &[covel_studio::document::SessionEdit::SetPluginEnabled {
                plugin: "soundtrack".into(),
                enabled: false,
            }],
            covel_studio::live::PlayedTurns::Keep,
        )
        .expect("a valid edit");
    requests_of("session-excludes-soundtrack", &studio);
    outputs.push((
        "session-excludes-soundtrack",
        "Snapshot",
        serde_json::to_value(studio.snapshot()).expect("json"),
    ));
    outputs.push((
        "request-bodies",
        "Record<string, Requests>",
        serde_json::Value::Object(bodies),
    ));
    outputs.push((
        "about",
        "About",
        serde_json::to_value(covel_studio::about::about()).expect("json"),
    ));

    // The first save after opening applies to the snapshot as opened (the `snapshot` fixture).
    let mut opened = outputs[0].2.clone();
    normalize(&mut opened, &root);
    outputs.push((
        "memoized-reload",
        "{ patch: SnapshotPatch; afterChanges: Partial<Omit<Snapshot, \"preview\">> & { preview?: Partial<Snapshot[\"preview\"]> } }",
        first_save_after_opening(&opened),
    ));

    let update = std::env::var_os("UPDATE_UI_FIXTURES").is_some();
    let mut stale = Vec::new();
    for (name, ty, mut value) in outputs {
        normalize(&mut value, &root);
        let path = repo.join("ui/fixtures").join(format!("{name}.ts"));
        let imported = match ty {
            "Record<string, TurnPrompt>" => "TurnPrompt",
            "Record<string, Requests>" => "Requests",
            "{ patch: SnapshotPatch; afterChanges: Partial<Omit<Snapshot, \"preview\">> & { preview?: Partial<Snapshot[\"preview\"]> } }" => {
                "Snapshot, SnapshotPatch"
            }
            other => other,
        };
        let fresh = format!(
            "// Written by tests/suites/ui_fixtures.rs (`UPDATE_UI_FIXTURES=1 cargo test -p covel-tests --test suites ui_fixtures`); do not edit.\nimport type {{ {imported} }} from \"../src/lib/wire\";\n\nexport const fixture: {ty} = {};\n",
            serde_json::to_string_pretty(&value).expect("json")
        );
        if update {
            std::fs::write(&path, &fresh).expect("write fixture");
        } else if std::fs::read_to_string(&path).ok().as_deref() != Some(fresh.as_str()) {
            stale.push(name);
        }
    }
    assert!(
        stale.is_empty(),
        "stale UI fixtures {stale:?}: run `UPDATE_UI_FIXTURES=1 cargo test -p covel-tests --test suites ui_fixtures`"
    );
}

/// Every session file of the fixture folders with the plugins folder beside it (or one level
/// up for a `sessions/` folder), for the ones that open.
fn fixture_workspaces() -> Vec<(std::path::PathBuf, std::path::PathBuf)> {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut found = vec![(
        repo.join("plugins-sample"),
        repo.join("plugins-sample/demo.session.yaml"),
    )];
    let fixtures = repo.join("tests/fixtures");
    let mut dirs: Vec<_> = std::fs::read_dir(&fixtures)
        .expect("fixtures")
        .flatten()
        .map(|e| e.path())
        .collect();
    dirs.sort();
    for dir in dirs {
        for sessions in [dir.clone(), dir.join("sessions")] {
            let Ok(entries) = std::fs::read_dir(&sessions) else {
                continue;
            };
            let mut files: Vec<_> = entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.to_string_lossy().ends_with(".session.yaml"))
                .collect();
            files.sort();
            let plugins = if sessions == dir {
                dir.clone()
            } else if dir.join("plugins").is_dir() {
                dir.join("plugins")
            } else {
                dir.clone()
            };
            found.extend(files.into_iter().map(|f| (plugins.clone(), f)));
        }
    }
    found
}

/// A studio value as the wire shows it: call durations (and the run a memo answer reuses) at the
/// UI's display precision, and a memo answer's own duration as 0 (it ran nothing).
fn shown(mut value: serde_json::Value) -> serde_json::Value {
    fn walk(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::Object(map) => {
                let cached = map.get("cached") == Some(&serde_json::Value::Bool(true));
                for (key, item) in map.iter_mut() {
                    match item.as_f64() {
                        Some(_) if key == "durationMs" && cached => {
                            *item = serde_json::json!(0.0);
                        }
                        Some(ms) if key == "durationMs" || key == "ranMs" => {
                            *item = serde_json::json!(covel_studio::wire::common::display_ms(ms));
                        }
                        _ => walk(item),
                    }
                }
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(walk),
            _ => {}
        }
    }
    walk(&mut value);
    value
}

/// A studio preview as the wire shows it, and apart from it its prompt's request bodies.
fn without_requests(preview: &covel_studio::Preview) -> (Value, Value) {
    let mut preview = shown(serde_json::to_value(preview).expect("json"));
    let requests = preview["prompt"]
        .as_object_mut()
        .and_then(|prompt| prompt.remove("requests"))
        .expect("the studio's prompt holds its request bodies");
    (preview, requests)
}

#[test]
fn the_wire_keeps_the_json_shape_of_the_studio_types() {
    let mut checked = 0;
    for (plugins, session) in fixture_workspaces() {
        let Ok(workspace) = Workspace::open(&plugins, Some(&session), &Limits::default()) else {
            continue;
        };
        let mut studio = LiveStudio::new(workspace, RuntimeTarget::Story);
        let what = session.display().to_string();
        // The request bodies cross apart from the prompt, with the same shape.
        let (preview, requests) = without_requests(studio.preview());
        // The wire adds the story model's counts, and the notes on prefixes under the model's
        // minimum are made from them (with the estimate's range): the rest keeps its shape.
        let counts = studio.prompt_counts(studio.preview());
        let notes = covel_studio::counts::below_minimum(studio.preview(), &counts);
        let mut wire =
            serde_json::to_value(covel_studio::wire::Preview::of(studio.preview(), counts))
                .expect("json");
        assert!(
            wire.as_object_mut()
                .and_then(|w| w.remove("counts"))
                .is_some()
        );
        assert_eq!(
            wire["cache"]["warnings"],
            serde_json::to_value(&notes).expect("json")
        );
        let mut preview = preview;
        for p in [&mut wire, &mut preview] {
            p["cache"]["warnings"] = serde_json::Value::Null;
        }
        assert_eq!(wire, preview, "the preview of {what}");
        assert_eq!(
            serde_json::to_value(covel_studio::wire::Requests::from(&studio.preview().prompt))
                .expect("json"),
            requests,
            "the request bodies of {what}"
        );
        studio.play_turn("I look around.");
        assert_eq!(
            serde_json::to_value(studio.snapshot().turns).expect("json"),
            shown(serde_json::to_value(studio.turns()).expect("json")),
            "the turns of {what}"
        );
        let turn = studio.turns().first().map(|t| t.turn_id.clone());
        if let Some(prompt) = turn.and_then(|turn| studio.turn_prompt(&turn)) {
            let (preview, requests) = without_requests(&prompt.preview);
            let mut wire =
                serde_json::to_value(covel_studio::wire::turns::TurnPrompt::of(&prompt, &studio))
                    .expect("json");
            assert!(
                wire["preview"]
                    .as_object_mut()
                    .and_then(|w| w.remove("counts"))
                    .is_some()
            );
            let mut preview = preview;
            for p in [&mut wire["preview"], &mut preview] {
                p["cache"]["warnings"] = serde_json::Value::Null;
            }
            assert_eq!(
                wire,
                serde_json::json!({
                    "preview": preview,
                    "withNewerPlugins": prompt.with_newer_plugins,
                    "requests": requests,
                }),
                "the turn prompt of {what}"
            );
        }
        if let Some(entry) = studio.last_reload() {
            assert_eq!(
                serde_json::to_value(covel_studio::wire::reload::ReloadEntry::from(entry))
                    .expect("json"),
                shown(serde_json::to_value(entry).expect("json")),
                "the reload entry of {what}"
            );
        }
        checked += 1;
    }
    assert!(checked >= 10, "only {checked} fixture workspaces opened");
}

/// Saves `module` with `from` replaced by `to` (a change to what a handler logs: no prompt or
/// slot output changes, its plugin runs again, and the call's record changes for certain — its
/// duration alone can round to the same 0.01 ms on a fast machine) and answers the patch.
fn log_save(
    studio: &mut LiveStudio,
    wire: &mut covel_studio::wire::WireState,
    module: &Path,
    from: &str,
    to: &str,
) -> covel_studio::wire::SnapshotPatch {
    let text = std::fs::read_to_string(module).expect("read");
    assert!(text.contains(from), "{} holds {from:?}", module.display());
    std::fs::write(module, text.replacen(from, to, 1)).expect("write");
    let changes = studio.classify(&[module.to_path_buf()]);
    studio.reload(&changes, Instant::now());
    wire.patch(studio.snapshot())
}

/// [`log_save`] of story-director's tone log line in the sample copy at `sample`.
fn log_tone_save(
    studio: &mut LiveStudio,
    wire: &mut covel_studio::wire::WireState,
    sample: &Path,
) -> covel_studio::wire::SnapshotPatch {
    let index = sample.join("story-director/server/index.js");
    log_save(
        studio,
        wire,
        &index,
        "`tone setting: ${tone}`",
        "`tone is: ${tone}`",
    )
}

/// Once the memo is confirmed, a save that makes the slot handler starting with `handler` in
/// `module` log a line: the slot views the window held, the slot patch it sent and the views
/// after it.
fn slot_log_save(
    studio: &mut LiveStudio,
    wire: &mut covel_studio::wire::WireState,
    module: &Path,
    handler: &str,
) -> (
    Vec<covel_studio::wire::preview::SlotView>,
    covel_studio::wire::Positions<covel_studio::wire::SlotViewPatch>,
    Vec<covel_studio::wire::preview::SlotView>,
) {
    studio.confirm_memo();
    let held =
        covel_studio::wire::Preview::of(studio.preview(), studio.prompt_counts(studio.preview()))
            .slots;
    let touched = log_save(
        studio,
        wire,
        module,
        handler,
        &format!("{handler} console.log(\"slot check\");"),
    );
    let slots = touched
        .preview
        .and_then(|p| p.slots)
        .unwrap_or_else(|| panic!("a slot chain of {} ran again", module.display()));
    (
        held,
        slots,
        covel_studio::wire::Preview::of(studio.preview(), studio.prompt_counts(studio.preview()))
            .slots,
    )
}

/// A live studio on a scratch copy of `plugins-sample` with its demo session (the copy lives as
/// long as the directory returned).
fn sample_studio() -> (tempfile::TempDir, LiveStudio) {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let dir = tempfile::tempdir().expect("temp");
    copy_dir(&repo.join("plugins-sample"), dir.path());
    let workspace = Workspace::open(
        dir.path(),
        Some(&dir.path().join("demo.session.yaml")),
        &Limits::default(),
    )
    .expect("opens");
    (dir, LiveStudio::new(workspace, RuntimeTarget::Story))
}

#[test]
fn a_patch_sends_only_what_changed_and_a_played_turn_once() {
    let (dir, mut studio) = sample_studio();
    let mut wire = covel_studio::wire::WireState::default();
    assert_eq!(wire.full(studio.snapshot()).version, 1);
    let nothing = wire.patch(studio.snapshot());
    assert!(nothing.is_empty(), "nothing changed, nothing is sent");
    assert_eq!(
        (nothing.since, nothing.version),
        (1, 2),
        "a patch names the version it applies to"
    );

    // A played turn crosses once: appended to the none the UI has.
    studio.play_turn("I swim to the bell tower.");
    let played = wire.patch(studio.snapshot());
    let turns = played.turns.as_ref().expect("the turns changed");
    assert_eq!((turns.keep, turns.append.len()), (0, 1));
    assert_eq!((played.since, played.version), (2, 3));
    assert!(played.preview.is_some() && played.undo.is_some());
    assert_eq!(played.plugins_dir, None, "the folder is the same");
    studio.play_turn("I ring the bell.");
    let second = wire.patch(studio.snapshot());
    let turns = second.turns.as_ref().expect("the turns changed");
    assert_eq!(
        (turns.keep, turns.append.len()),
        (1, 1),
        "the first turn is not sent again"
    );

    // Undo keeps n - 1 turns and sends none.
    studio.undo().expect("a turn to undo");
    let undone = wire.patch(studio.snapshot());
    let turns = undone.turns.as_ref().expect("the turns changed");
    assert_eq!((turns.keep, turns.append.len()), (1, 0));

    // A reload sends its entry and the parts it changed, not the unchanged ones.
    let held_preview =
        covel_studio::wire::Preview::of(studio.preview(), studio.prompt_counts(studio.preview()));
    let held_segments = held_preview.segments.clone();
    let module = dir.path().join("story-director/server/lib/text.js");
    let text = std::fs::read_to_string(&module).expect("read");
    std::fs::write(&module, text.replace("grave, unhurried", "grave, patient")).expect("write");
    let changes = studio.classify(std::slice::from_ref(&module));
    studio.reload(&changes, Instant::now());
    let reload = wire.patch(studio.snapshot());
    assert!(
        matches!(reload.last_reload, Some(Some(_))),
        "the reload entry"
    );
    assert!(reload.preview.is_some(), "the prompt changed");
    assert_eq!(reload.turns, None, "no turn changed");
    assert_eq!(reload.session, None, "the session did not change");
    assert_eq!(reload.session_text, None);
    assert_eq!(reload.resolution, None, "the same plugins are active");
    // Unchanged parts are not in the JSON at all.
    let json = serde_json::to_value(&reload).expect("json");
    assert!(json.get("session").is_none() && json.get("turns").is_none());
    let preview = reload.preview.as_ref().expect("the preview changed");
    // The prompt crosses as a change to the one held: the splices of its texts, not its text.
    let prompt = preview.prompt.as_ref().expect("the prompt's text changed");
    let held_prompt = serde_json::to_value(&held_preview.prompt).expect("json");
    let now_prompt = serde_json::to_value(
        &covel_studio::wire::Preview::of(studio.preview(), studio.prompt_counts(studio.preview()))
            .prompt,
    )
    .expect("json");
    assert_eq!(
        prompt.apply_to(&held_prompt).map(|p| p.to_string()),
        Some(now_prompt.to_string()),
        "the held prompt and the change give the new prompt"
    );
    let (sent, whole) = (
        serde_json::to_string(prompt).expect("json").len(),
        now_prompt.to_string().len(),
    );
    assert!(
        sent * 4 < whole,
        "the prompt's change ({sent} bytes) is a fraction of the prompt ({whole} bytes)"
    );
    // The segment table crosses by position: the rows whose text changed, not the whole table.
    let segments = preview.segments.as_ref().expect("a segment's text changed");
    let now_segments =
        covel_studio::wire::Preview::of(studio.preview(), studio.prompt_counts(studio.preview()))
            .segments;
    assert!(!segments.changed.is_empty());
    assert!(
        segments
            .changed
            .iter()
            .all(|at| &*at.item.plugin == "story-director"),
        "only story-director's rows are sent: {:?}",
        segments
            .changed
            .iter()
            .map(|at| &at.item.plugin)
            .collect::<Vec<_>>()
    );
    assert!(
        segments.changed.len() < now_segments.len(),
        "the other plugins' rows are not sent"
    );
    assert_eq!(
        segments.apply_to(&held_segments),
        Some(now_segments),
        "the held rows and the patch give the new table"
    );
    // Only the reloaded plugin crosses (its load time changed), at its position in the list.
    let snapshot = studio.snapshot();
    let plugins = reload
        .plugins
        .as_ref()
        .expect("the reloaded plugin changed");
    assert_eq!(plugins.count as usize, snapshot.plugins.len());
    assert!(
        snapshot.plugins.len() > 1,
        "the sample folder has other plugins"
    );
    let sent: Vec<(u32, &str)> = plugins
        .changed
        .iter()
        .map(|p| (p.index, p.item.name.as_str()))
        .collect();
    let at = snapshot
        .plugins
        .iter()
        .position(|p| p.name == "story-director")
        .expect("listed");
    assert_eq!(sent, vec![(at as u32, "story-director")]);

    // A save that changes no output (what a handler logs) re-runs the plugin: its calls' records
    // change, the prompt and the segment table do not, and they are not sent again. Calls cross
    // by position, only those whose record changed: merged into the list the UI held, they give
    // the new list.
    studio.confirm_memo();
    let held =
        covel_studio::wire::Preview::of(studio.preview(), studio.prompt_counts(studio.preview()))
            .calls;
    let touched = log_tone_save(&mut studio, &mut wire, dir.path());
    let preview = touched
        .preview
        .as_ref()
        .expect("the calls' records changed");
    assert!(preview.timings.is_some());
    let calls = preview
        .calls
        .as_ref()
        .expect("the plugin's calls ran again");
    assert!(
        calls.changed.iter().any(|at| at
            .item
            .logs
            .iter()
            .any(|l| l.as_str() == "[log] tone is: grave")),
        "the call whose log changed is sent"
    );
    let now =
        covel_studio::wire::Preview::of(studio.preview(), studio.prompt_counts(studio.preview()))
            .calls;
    for at in &calls.changed {
        assert_ne!(
            held.get(at.index as usize),
            Some(&at.item),
            "an unchanged call is not sent"
        );
    }
    assert_eq!(
        calls.apply_answers_to(&held),
        Some(now),
        "the held calls and the patch give the new list"
    );
    assert_eq!(preview.prompt, None, "the prompt is the same");
    assert_eq!(preview.segments, None, "the segment table is the same");
    assert_eq!(preview.cache, None, "the cache analysis is the same");

    // Slot views cross by position too: re-running a slot provider sends the views whose chain
    // ran it, not every slot of the folder, and each with only the calls of its chain that
    // changed.
    let (held, slots, now) = slot_log_save(
        &mut studio,
        &mut wire,
        &dir.path().join("soundtrack/server/index.js"),
        "handler: async ({ previous, events }, ctx) => {",
    );
    let slots = &slots;
    assert_eq!(slots.count as usize, now.len());
    assert!(!slots.changed.is_empty());
    for at in &slots.changed {
        let chain = &now[at.index as usize].chain;
        assert!(
            chain.iter().any(|c| &*c.plugin_id == "soundtrack"),
            "{:?} is sent though soundtrack is not in its chain",
            at.item.slot
        );
        let sent: Vec<&str> = at
            .item
            .chain
            .changed
            .iter()
            .map(|c| &*c.item.plugin_id)
            .collect();
        assert_eq!(
            sent,
            vec!["soundtrack"],
            "only soundtrack's call of the {:?} chain crosses",
            at.item.slot
        );
        assert_eq!(at.item.chain.count as usize, chain.len());
    }
    assert!(
        slots.changed.len() < now.len(),
        "the slots without soundtrack are not sent"
    );
    assert_eq!(
        slots.apply_to_views(&held),
        Some(now),
        "the held slots and the patch give the new list"
    );

    // A view whose chain holds other plugins' calls crosses with only the call that changed:
    // quest-log follows world-state in the session summary's chain.
    let (held, slots, now) = slot_log_save(
        &mut studio,
        &mut wire,
        &dir.path().join("quest-log/server/index.js"),
        "handler: async ({ previous }, ctx) => {",
    );
    let slots = &slots;
    let summary = slots
        .changed
        .iter()
        .find(|at| at.item.slot == covel_studio::wire::SlotId::SessionSummary)
        .expect("the summary view is sent");
    let chain = &now[summary.index as usize].chain;
    assert!(
        chain.len() > 1 && chain.iter().any(|c| &*c.plugin_id != "quest-log"),
        "the summary's chain holds other plugins' calls: {chain:?}"
    );
    let sent: Vec<&str> = summary
        .item
        .chain
        .changed
        .iter()
        .map(|c| &*c.item.plugin_id)
        .collect();
    assert_eq!(sent, vec!["quest-log"], "only quest-log's call crosses");
    assert_eq!(
        slots.apply_to_views(&held),
        Some(now),
        "the held slots and the patch give the new list"
    );
}

/// The first save after a folder opens, once the memo was confirmed (the shells do it while
/// the author is idle): the sample studio after it, the snapshot the window held before it and
/// the patch it sent.
struct FirstSave {
    dir: tempfile::TempDir,
    studio: LiveStudio,
    before: covel_studio::wire::Snapshot,
    patch: covel_studio::wire::SnapshotPatch,
}

fn first_save() -> FirstSave {
    let (dir, mut studio) = sample_studio();
    studio.confirm_memo();
    let mut wire = covel_studio::wire::WireState::default();
    let before = wire.full(studio.snapshot());
    let patch = log_tone_save(&mut studio, &mut wire, dir.path());
    FirstSave {
        dir,
        studio,
        before,
        patch,
    }
}

/// [`first_save`] as the UI's fixture: the patch and what the snapshot after it changes of the
/// snapshot it applies to, `opened` (the `snapshot` fixture, checked here apart from its
/// version). The UI's tests rebuild the snapshot after from the two and check that `opened`
/// with the patch gives exactly it.
fn first_save_after_opening(opened: &Value) -> Value {
    let FirstSave {
        dir,
        studio,
        before,
        patch,
    } = first_save();
    let after = covel_studio::wire::WireState::default().full(studio.snapshot());
    let mut value = serde_json::json!({ "before": before, "patch": patch, "after": after });
    // The copies live in a temporary folder: name it as the fixtures name the sample.
    normalize(&mut value, &canonical(dir.path()));
    normalize(&mut value, &dir.path().display().to_string());
    let versionless = |snapshot: &Value| {
        let mut snapshot = snapshot.clone();
        snapshot.as_object_mut().map(|s| s.remove("version"));
        snapshot
    };
    let before = value
        .as_object_mut()
        .and_then(|v| v.remove("before"))
        .expect("before");
    assert_eq!(
        versionless(&before),
        versionless(opened),
        "the first save applies to the snapshot as opened"
    );
    let after = value
        .as_object_mut()
        .and_then(|v| v.remove("after"))
        .expect("after");
    value["afterChanges"] = changed_parts(opened, &after);
    value
}

/// The parts of `after` (top-level, and the preview's) that differ from or are missing in
/// `opened`, the version aside: `opened` with these set is `after` exactly (no part of `opened`
/// is gone in `after`).
fn changed_parts(opened: &Value, after: &Value) -> Value {
    let differing = |opened: &Value, after: &Value, skip: &[&str]| {
        let (Some(opened), Some(after)) = (opened.as_object(), after.as_object()) else {
            panic!("two objects");
        };
        assert!(
            opened.keys().all(|key| after.contains_key(key)),
            "no part is gone after"
        );
        after
            .iter()
            .filter(|(key, part)| !skip.contains(&key.as_str()) && opened.get(*key) != Some(*part))
            .map(|(key, part)| (key.clone(), part.clone()))
            .collect::<serde_json::Map<String, Value>>()
    };
    let mut changes = differing(opened, after, &["version", "preview"]);
    let preview = differing(&opened["preview"], &after["preview"], &[]);
    if !preview.is_empty() {
        changes.insert("preview".into(), Value::Object(preview));
    }
    Value::Object(changes)
}

#[test]
fn the_first_save_after_opening_sends_the_memo_answers_as_one_flag() {
    let FirstSave {
        studio,
        before,
        patch,
        ..
    } = first_save();
    let held = before.preview;
    assert!(
        held.calls.iter().all(|c| !c.cached),
        "on opening every call ran"
    );
    let now =
        covel_studio::wire::Preview::of(studio.preview(), studio.prompt_counts(studio.preview()));
    let answered = now.calls.iter().filter(|c| c.cached).count();
    assert!(
        answered * 2 > now.calls.len(),
        "most calls were answered from the memo ({answered} of {})",
        now.calls.len()
    );
    let preview = patch.preview.as_ref().expect("the calls changed");
    let calls = preview.calls.as_ref().expect("the calls changed");
    assert!(calls.memoized, "the answers cross as one flag");
    assert!(
        calls.changed.len() < now.calls.len() - answered + 1,
        "only the calls that ran again are sent: {} of {}",
        calls.changed.len(),
        now.calls.len()
    );
    for at in &calls.changed {
        assert!(
            !at.item.is_memo_answer_to(&held.calls[at.index as usize]),
            "{at:?} is a memo answer and is sent"
        );
    }
    assert_eq!(
        calls.apply_answers_to(&held.calls),
        Some(now.calls),
        "the held calls, answered from the memo, and the patch give the new list"
    );
    let slots = preview
        .slots
        .as_ref()
        .expect("the slot chains were answered");
    assert!(slots.memoized);
    assert_eq!(slots.apply_to_views(&held.slots), Some(now.slots));
    let bytes = serde_json::to_vec(&patch).expect("json").len();
    let whole =
        serde_json::to_vec(&covel_studio::wire::WireState::default().full(studio.snapshot()))
            .expect("json")
            .len();
    assert!(
        bytes * 4 < whole,
        "the patch ({bytes} bytes) is a fraction of the snapshot ({whole} bytes)"
    );
}

#[test]
fn a_patch_resends_a_part_whose_json_text_changed_even_when_serde_calls_it_equal() {
    let (_dir, studio) = sample_studio();
    let mut wire = covel_studio::wire::WireState::default();
    let with_world = |world: Value| {
        let mut snapshot = studio.snapshot();
        snapshot.preview.world_context.snapshot = world.into();
        snapshot
    };
    wire.full(with_world(
        serde_json::json!({"mood": "calm", "place": "tower"}),
    ));
    let same = wire.patch(with_world(
        serde_json::json!({"mood": "calm", "place": "tower"}),
    ));
    assert!(same.is_empty(), "the same world is not sent again");
    // A provider that builds its snapshot in another key order: serde_json's equality ignores
    // the order, the world panel shows it.
    let reordered = wire.patch(with_world(
        serde_json::json!({"place": "tower", "mood": "calm"}),
    ));
    let world = reordered
        .preview
        .as_ref()
        .and_then(|p| p.world_context.as_ref())
        .expect("the reordered world is sent");
    assert_eq!(
        serde_json::to_string(&world.snapshot).expect("json"),
        r#"{"place":"tower","mood":"calm"}"#
    );
    let as_float = wire.patch(with_world(
        serde_json::json!({"place": "tower", "mood": 1.0}),
    ));
    let then_int = wire.patch(with_world(serde_json::json!({"place": "tower", "mood": 1})));
    assert!(
        !as_float.is_empty() && !then_int.is_empty(),
        "1.0 and 1 are different JSON"
    );
}

/// The JSON Schema of each kernel slot's value as the window receives it, written for the UI,
/// whose slot value types are generated from it (`ui/scripts/slot-types.mjs`, checked by
/// `ui/src/lib/slots.test.ts`): a schema the kernel changes changes the UI's types.
#[test]
fn the_slot_schemas_the_ui_types_come_from_are_the_kernels() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let path = repo.join("ui/src/lib/slot-schemas.json");
    let schemas: serde_json::Map<String, Value> = covel_kernel::contract::slot_view_schemas()
        .into_iter()
        .map(|(slot, schema)| (slot.as_str().to_string(), schema.clone()))
        .collect();
    let fresh = serde_json::to_string_pretty(&schemas).expect("json") + "\n";
    covel_tests::assert_generated_file_is_fresh(
        &path,
        &fresh,
        "UPDATE_UI_FIXTURES",
        "run `UPDATE_UI_FIXTURES=1 cargo test -p covel-tests --test suites ui_fixtures`, then `npm run gen:slots` in ui/",
    );
}
