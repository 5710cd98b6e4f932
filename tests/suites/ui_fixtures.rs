//! The JSON the desktop UI's tests are fed (ui/fixtures/*.json): real studio snapshots of the
//! demo session — as opened, after a played turn, after a reload — and the Cache panel's forecast
//! and the Tests panel's results, so browser tests exercise the UI against what the Rust side
//! produces. Fails when the committed fixtures are stale; run with
//! `UPDATE_UI_FIXTURES=1` to rewrite them.

use covel_js::Limits;
use covel_studio::live::LiveStudio;
use covel_studio::{RuntimeTarget, Workspace};
use covel_tests::copy_dir;
use serde_json::Value;
use std::path::Path;
use std::time::Instant;

fn normalize(value: &mut Value, root: &str) {
    match value {
        Value::Object(map) => {
            for (key, item) in map.iter_mut() {
                // Timings vary from run to run; a fixed non-zero value keeps the fixtures stable
                // and still lets the UI tests see durations rendered.
                if key.ends_with("Ms") && item.is_number() {
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

#[test]
fn ui_fixtures_are_fresh() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let dir = tempfile::tempdir().expect("temp");
    copy_dir(&repo.join("plugins-sample"), dir.path());
    let root = dir
        .path()
        .canonicalize()
        .expect("canonical")
        .display()
        .to_string();
    let workspace = Workspace::open(
        Path::new(&root),
        Some(&Path::new(&root).join("demo.session.yaml")),
        &Limits::default(),
    )
    .expect("opens");
    let mut studio = LiveStudio::new(workspace, RuntimeTarget::Story);
    let mut outputs = Vec::new();
    outputs.push((
        "snapshot.json",
        serde_json::to_value(studio.snapshot()).expect("json"),
    ));
    // The runtime switch: the Prompt panel assembling for story-director's own runtime.
    studio.set_target(RuntimeTarget::Plugin("story-director".into()));
    outputs.push((
        "runtime-plugin-story-director.json",
        serde_json::to_value(studio.snapshot()).expect("json"),
    ));
    studio.set_target(RuntimeTarget::Story);
    studio.play_turn("I swim to the bell tower.");
    outputs.push((
        "after-turn.json",
        serde_json::to_value(studio.snapshot()).expect("json"),
    ));
    // The Playtest turn inspector asks for each played turn's prompt on demand.
    let turn_ids: Vec<String> = studio.turns.iter().map(|t| t.turn_id.clone()).collect();
    let previews: serde_json::Map<String, serde_json::Value> = turn_ids
        .into_iter()
        .map(|id| {
            let preview = studio.turn_preview(&id).expect("a played turn");
            (id, serde_json::to_value(preview).expect("json"))
        })
        .collect();
    outputs.push(("turn-previews.json", serde_json::Value::Object(previews)));
    let forecast = studio
        .forecast(
            Some("claude-sonnet-4-5"),
            &covel_studio::forecast::ForecastOptions::default(),
        )
        .expect("forecast");
    let mut forecast = serde_json::to_value(forecast).expect("json");
    forecast["counting"] = serde_json::json!({"computed": 0, "reused": 0});
    outputs.push(("forecast.json", forecast));
    let tests = covel_studio::testing::run_folder(Path::new(&root), false, &Limits::default())
        .expect("tests");
    outputs.push((
        "tests.json",
        serde_json::json!({"passed": tests.iter().all(|t| t.passed), "sessions": tests}),
    ));
    studio.undo().expect("a turn to undo");
    let module = Path::new(&root).join("story-director/server/lib/text.js");
    let text = std::fs::read_to_string(&module).expect("read");
    std::fs::write(&module, text.replace("grave, unhurried", "grave, patient")).expect("write");
    let changes = studio.classify(&[module]);
    studio.reload(&changes, Instant::now());
    outputs.push((
        "after-reload.json",
        serde_json::to_value(studio.snapshot()).expect("json"),
    ));
    // A session edit from the Session panel: the session excludes soundtrack, which the
    // resolver then rejects with its code.
    studio
        .edit_session(&[covel_studio::document::SessionEdit::SetPluginEnabled {
            plugin: "soundtrack".into(),
            enabled: false,
        }])
        .expect("a valid edit");
    outputs.push((
        "session-excludes-soundtrack.json",
        serde_json::to_value(studio.snapshot()).expect("json"),
    ));

    let update = std::env::var_os("UPDATE_UI_FIXTURES").is_some();
    let mut stale = Vec::new();
    for (name, mut value) in outputs {
        normalize(&mut value, &root);
        let path = repo.join("ui/fixtures").join(name);
        let fresh = serde_json::to_string_pretty(&value).expect("json") + "\n";
        if update {
            std::fs::write(&path, &fresh).expect("write fixture");
        } else if std::fs::read_to_string(&path).ok().as_deref() != Some(fresh.as_str()) {
            stale.push(name);
        }
    }
    assert!(
        stale.is_empty(),
        "stale UI fixtures {stale:?}: run `UPDATE_UI_FIXTURES=1 cargo test -p covel-tests --test ui_fixtures`"
    );
}
