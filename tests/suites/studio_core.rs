//! The authoring loop: hot reload with diffs (and the last good version kept), playtests with
//! the scripted model and with loopback fakes of OpenAI-compatible and Anthropic servers, undo
//! and atomic saves.

use covel_js::Limits;
use covel_studio::diff::SegmentChangeKind;
use covel_studio::live::{FolderWatcher, LiveStudio};
use covel_studio::playtest::Playtest;
use covel_studio::wire::snapshot::PluginViews;
use covel_studio::workspace::PluginReload;
use covel_studio::{RuntimeTarget, Workspace};
use covel_tests::http_fake::{read_request, write_json};
use covel_tests::{copy_dir, redact_timings};
use serde_json::{Value, json};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn sample_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins-sample")
}

/// A temporary copy of plugins-sample.
/// The sample plugins on their demo session.
fn demo_workspace() -> Workspace {
    let session = sample_dir().join("demo.session.yaml");
    Workspace::open(&sample_dir(), Some(&session), &Limits::default()).expect("opens")
}

fn sample_copy() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    copy_dir(&sample_dir(), dir.path());
    dir
}

fn live(dir: &Path) -> LiveStudio {
    let ws = Workspace::open(
        dir,
        Some(&dir.join("demo.session.yaml")),
        &Limits::default(),
    )
    .expect("opens");
    LiveStudio::new(ws, RuntimeTarget::Story)
}

fn reload(studio: &mut LiveStudio, paths: &[PathBuf]) -> covel_studio::live::ReloadEntry {
    let changes = studio.classify(paths);
    studio.reload(&changes, Instant::now())
}

fn edit(path: &Path, from: &str, to: &str) {
    let text = std::fs::read_to_string(path).expect("read");
    assert!(text.contains(from), "{from} not in {}", path.display());
    std::fs::write(path, text.replace(from, to)).expect("write");
}

// ---- Hot reload -------------------------------------------------------------------------------

#[test]
fn editing_a_relatively_imported_module_reloads_only_its_plugin_and_diffs_the_segment() {
    let dir = sample_copy();
    let mut studio = live(dir.path());
    let module = dir.path().join("story-director/server/lib/text.js");
    edit(&module, "grave, unhurried", "grave, slow");
    let entry = reload(&mut studio, &[module]);
    assert_eq!(entry.plugins.len(), 1);
    assert_eq!(entry.plugins["story-director"], PluginReload::Replaced);
    let change = entry
        .diff
        .segments
        .iter()
        .find(|s| &*s.id == "tone")
        .expect("tone changed");
    assert_eq!(change.kind, SegmentChangeKind::Changed);
    assert_eq!(change.plugin, "story-director");
    let boundary = entry
        .diff
        .boundaries
        .iter()
        .find(|b| b.index == 2)
        .expect("the stable block's boundary moved");
    assert_eq!(boundary.plugin.as_deref(), Some("story-director"));
    assert!(entry.diff.slots.is_empty(), "nothing else changed");
}

/// Two providers of one plugin send `lore` (ids are unique per provider): a reload that changes
/// the second one's text reports that row once, and never the first one.
#[test]
fn a_reload_pairs_rows_sharing_a_segment_id_by_rank() {
    let dir = tempfile::tempdir().expect("temp dir");
    let fixture = covel_tests::fixture("prompt");
    copy_dir(
        &fixture.join("plugins/shared-id"),
        &dir.path().join("shared-id"),
    );
    let ws = Workspace::open(dir.path(), None, &Limits::default()).expect("opens");
    let mut studio = LiveStudio::new(ws, RuntimeTarget::Story);
    let module = dir.path().join("shared-id/server/index.js");
    edit(&module, "The cellar is damp.", "The cellar is flooded.");
    let entry = reload(&mut studio, &[module]);
    let changes: Vec<(SegmentChangeKind, usize)> = entry
        .diff
        .segments
        .iter()
        .map(|s| (s.kind, s.after.as_ref().expect("after").index))
        .collect();
    assert_eq!(
        changes,
        [(SegmentChangeKind::Changed, 1)],
        "{:?}",
        entry.diff.segments
    );
}

#[test]
fn a_syntax_error_keeps_the_last_good_version_until_a_fix_arrives() {
    let dir = sample_copy();
    let mut studio = live(dir.path());
    let entry_file = dir.path().join("story-director/server/index.js");
    edit(
        &entry_file,
        "export default function (covel) {",
        "export default function (covel) {{",
    );
    let broken = reload(&mut studio, std::slice::from_ref(&entry_file));
    assert_eq!(broken.plugins["story-director"], PluginReload::KeptLastGood);
    let diagnostic = broken
        .diagnostics
        .iter()
        .find(|d| d.plugin.as_deref() == Some("story-director"))
        .expect("diagnostic");
    assert_eq!(diagnostic.code.as_str(), "entry-syntax");
    assert!(
        broken.diff.segments.is_empty(),
        "the last good version still provides its segments"
    );
    assert!(
        studio
            .preview()
            .segments
            .iter()
            .any(|s| &*s.plugin == "story-director" && &*s.id == "tone")
    );

    edit(
        &entry_file,
        "export default function (covel) {{",
        "export default function (covel) {",
    );
    let fixed = reload(&mut studio, &[entry_file]);
    assert_eq!(fixed.plugins["story-director"], PluginReload::Replaced);
    assert!(fixed.diagnostics.is_empty(), "{:?}", fixed.diagnostics);
}

/// The names of the plugins whose view a new snapshot (sharing the views `kept` holds) shares
/// with `before`; checks that every view equals the one built afresh, and returns the new
/// snapshot.
fn shared_views(
    studio: &LiveStudio,
    kept: &PluginViews,
    before: &covel_studio::wire::Snapshot,
) -> (Vec<String>, covel_studio::wire::Snapshot) {
    let now = studio.snapshot_sharing(kept);
    let shared = now
        .plugins
        .iter()
        .filter(|view| {
            before
                .plugins
                .iter()
                .any(|old| old.name == view.name && old.same(view))
        })
        .map(|view| view.name.clone())
        .collect();
    let fresh = studio.snapshot();
    assert_eq!(
        fresh.plugins, now.plugins,
        "a shared view is the view built afresh"
    );
    assert!(
        fresh
            .plugins
            .iter()
            .zip(&now.plugins)
            .all(|(a, b)| !a.same(b)),
        "a snapshot that keeps no views builds every one again"
    );
    (shared, now)
}

#[test]
fn a_snapshot_shares_the_views_of_plugins_a_reload_left_as_they_were() {
    let dir = sample_copy();
    let mut studio = live(dir.path());
    let names: Vec<String> = studio
        .snapshot()
        .plugins
        .iter()
        .map(|p| p.name.clone())
        .collect();
    let others =
        |except: &str| -> Vec<String> { names.iter().filter(|n| *n != except).cloned().collect() };
    let kept = PluginViews::default();
    let mut last = studio.snapshot_sharing(&kept);

    // Saves of story-director's entry: a new load, a syntax error (the last good load keeps
    // running, marked with the failure), the fix. Every other view stays shared.
    let entry_file = dir.path().join("story-director/server/index.js");
    let head = "export default function (covel) {";
    use covel_studio::wire::plugins::PluginStatus;
    for (from, to, status) in [
        (
            head,
            "export default function (covel) {\n  // edited",
            PluginStatus::Active,
        ),
        (
            head,
            "export default function (covel) {{",
            PluginStatus::LastGood,
        ),
        (
            "export default function (covel) {{",
            head,
            PluginStatus::Active,
        ),
    ] {
        edit(&entry_file, from, to);
        reload(&mut studio, std::slice::from_ref(&entry_file));
        let (shared, now) = shared_views(&studio, &kept, &last);
        assert_eq!(shared, others("story-director"), "{to}");
        let view = now
            .plugins
            .iter()
            .find(|p| p.name == "story-director")
            .expect("listed");
        assert_eq!(view.status, status, "{to}");
        last = now;
    }

    // Nothing at all: a snapshot with no change shares every view.
    let (shared, now) = shared_views(&studio, &kept, &last);
    assert_eq!(shared, names);

    // A plugin gone: the others' views stay shared.
    std::fs::remove_dir_all(dir.path().join("lore-book")).expect("delete");
    reload(&mut studio, &[dir.path().join("lore-book")]);
    let (shared, _) = shared_views(&studio, &kept, &now);
    assert_eq!(shared, others("lore-book"));
}

#[test]
fn a_deleted_plugin_is_unloaded_and_a_new_one_loaded() {
    let dir = sample_copy();
    let mut studio = live(dir.path());
    std::fs::remove_dir_all(dir.path().join("lore-book")).expect("delete");
    let removed = reload(&mut studio, &[dir.path().join("lore-book/PLUGIN.md")]);
    assert_eq!(removed.plugins["lore-book"], PluginReload::Removed);
    let gone: Vec<&str> = removed
        .diff
        .segments
        .iter()
        .filter(|s| s.kind == SegmentChangeKind::Removed)
        .map(|s| &*s.id)
        .collect();
    assert!(gone.contains(&"glossary"), "{gone:?}");

    copy_dir(
        &sample_dir().join("lore-book"),
        &dir.path().join("lore-book"),
    );
    let added = reload(&mut studio, &[dir.path().join("lore-book/PLUGIN.md")]);
    assert_eq!(added.plugins["lore-book"], PluginReload::Added);
    assert!(
        added
            .diff
            .segments
            .iter()
            .any(|s| s.kind == SegmentChangeKind::Added && &*s.id == "glossary")
    );
}

#[test]
fn a_session_file_change_reloads_the_session() {
    let dir = sample_copy();
    let mut studio = live(dir.path());
    let session = dir.path().join("demo.session.yaml");
    edit(
        &session,
        "story-director: { tone: grave }",
        "story-director: { tone: wry }",
    );
    let entry = reload(&mut studio, &[session]);
    assert!(entry.session_reloaded);
    assert!(entry.plugins.is_empty());
    let tone = entry
        .diff
        .segments
        .iter()
        .find(|s| &*s.id == "tone")
        .expect("tone changed");
    assert_eq!(tone.kind, SegmentChangeKind::Changed);
}

#[test]
fn a_burst_of_one_hundred_writes_is_one_reload_with_the_final_state() {
    let dir = sample_copy();
    let mut studio = live(dir.path());
    let debounce = Duration::from_millis(300);
    // Watches are in place when `new` returns (no sleep before writing).
    let mut watcher = FolderWatcher::new(
        dir.path(),
        Some(&dir.path().join("demo.session.yaml")),
        debounce,
    )
    .expect("watcher");
    let module = dir.path().join("story-director/server/lib/text.js");
    let original = std::fs::read_to_string(&module).expect("read");
    for i in 0..100 {
        std::fs::write(
            &module,
            original.replace("grave, unhurried", &format!("grave ({i})")),
        )
        .expect("write");
    }
    let batch = watcher.next(Duration::from_secs(10)).expect("one batch");
    let entry = studio.reload(&studio.classify(&batch.paths), batch.first_event);
    assert_eq!(entry.plugins.keys().collect::<Vec<_>>(), ["story-director"]);
    let tone = studio
        .preview()
        .segments
        .iter()
        .find(|s| &*s.id == "tone")
        .expect("tone");
    assert!(
        tone.content.contains("grave (99)"),
        "final state: {}",
        tone.content
    );
    // Nothing else may arrive: wait (with a deadline) for a batch that must not come.
    assert!(
        watcher.next(debounce * 3).is_none(),
        "no second reload for the same burst"
    );
}

fn runtime_of(
    studio: &LiveStudio,
    plugin: &str,
) -> (covel_js::RuntimeWatch, std::sync::Weak<covel_js::JsPlugin>) {
    let loaded = studio
        .workspace()
        .plugins
        .iter()
        .find(|p| p.name == plugin)
        .expect("plugin");
    let instance = loaded.instance.as_ref().expect("running");
    (instance.watch().expect("engine"), Arc::downgrade(instance))
}

#[test]
fn replaced_runtimes_are_dropped_on_reload_and_shut_down_cleanly() {
    let dir = sample_copy();
    // The plugin registers a disposer, so its shutdown is visible.
    edit(
        &dir.path().join("story-director/server/index.js"),
        "export default function (covel) {",
        "export default function (covel) {\n  covel.onDispose(() => {});",
    );
    let mut studio = live(dir.path());
    let module = dir.path().join("story-director/server/lib/text.js");
    for i in 0..20 {
        let (watch, instance) = runtime_of(&studio, "story-director");
        assert!(!watch.is_shut_down());
        // Each reload brings new bytes (a save of the same bytes reloads nothing).
        let from = if i == 0 {
            "grave, unhurried".to_string()
        } else {
            format!("grave-loop-{}", i - 1)
        };
        edit(&module, &from, &format!("grave-loop-{i}"));
        let entry = reload(&mut studio, std::slice::from_ref(&module));
        assert_eq!(entry.plugins["story-director"], PluginReload::Replaced);
        assert!(
            instance.upgrade().is_none(),
            "reload {i}: the replaced runtime is still referenced"
        );
        assert!(
            watch.is_shut_down(),
            "reload {i}: the replaced runtime was not shut down"
        );
        assert_eq!(
            watch.disposers_run(),
            1,
            "reload {i}: its onDispose callback ran"
        );
        assert_eq!(
            watch.bytes_held(),
            0,
            "reload {i}: the runtime freed all its memory"
        );
    }
    assert!(
        studio
            .preview()
            .segments
            .iter()
            .any(|s| &*s.id == "tone" && s.content.contains("grave-loop")),
        "the newest runtime answers"
    );
    let (watch, _) = runtime_of(&studio, "story-director");
    assert!(!watch.is_shut_down() && watch.bytes_held() > 0);

    // A deleted plugin's runtime goes the same way.
    let (watch, instance) = runtime_of(&studio, "lore-book");
    std::fs::remove_dir_all(dir.path().join("lore-book")).expect("delete");
    let removed = reload(&mut studio, &[dir.path().join("lore-book/PLUGIN.md")]);
    assert_eq!(removed.plugins["lore-book"], PluginReload::Removed);
    assert!(instance.upgrade().is_none() && watch.is_shut_down() && watch.bytes_held() == 0);
}

#[test]
fn closing_a_folder_shuts_down_every_runtime_and_runs_its_disposers() {
    let dir = sample_copy();
    edit(
        &dir.path().join("story-director/server/index.js"),
        "export default function (covel) {",
        "export default function (covel) {\n  covel.onDispose(() => {});",
    );
    let studio = live(dir.path());
    let watches: Vec<(String, covel_js::RuntimeWatch)> = studio
        .workspace()
        .plugins
        .iter()
        .filter_map(|p| Some((p.name.clone(), p.instance.as_ref()?.watch()?)))
        .collect();
    assert!(watches.len() > 3, "the sample folder runs several plugins");
    // Closing closes the plugins in parallel (covel_js::close_plugins); none may be left running.
    drop(studio);
    for (name, watch) in &watches {
        assert!(watch.is_shut_down(), "{name} was not shut down");
        assert_eq!(watch.bytes_held(), 0, "{name} kept memory");
    }
    let director = &watches
        .iter()
        .find(|(n, _)| n == "story-director")
        .expect("director")
        .1;
    assert_eq!(director.disposers_run(), 1, "its onDispose callback ran");
}

#[test]
fn switching_to_a_runtime_that_cannot_be_previewed_is_refused_and_keeps_the_current_one() {
    let dir = sample_copy();
    let mut studio = live(dir.path());
    studio
        .switch_target(RuntimeTarget::Plugin("story-director".into()))
        .expect("an active plugin's runtime");
    // (A well-formed contract no runtime produces is previewed, with a note: see
    // prompt_assembly::a_contract_no_active_runtime_produces_is_previewed_with_a_note.)
    let error = studio
        .switch_target(RuntimeTarget::Contract("No Such Contract".into()))
        .expect_err("an ill-formed contract id");
    assert!(error.contains("No Such Contract"), "{error}");
    assert_eq!(
        studio.target(),
        &RuntimeTarget::Plugin("story-director".into()),
        "the current runtime stays"
    );
    assert_eq!(
        studio.snapshot().preview.runtime,
        covel_studio::wire::preview::RuntimeTarget::Plugin("story-director".into())
    );
    let error = studio
        .switch_target(RuntimeTarget::Plugin("nobody".into()))
        .expect_err("an unknown plugin");
    assert!(error.contains("no plugin `nobody`"), "{error}");
}

// ---- Playtesting -------------------------------------------------------------------------------

fn demo_play() -> Playtest {
    let ws = demo_workspace();
    Playtest::new(ws)
}

#[test]
fn five_scripted_turns_of_the_demo_session_match_their_snapshots() {
    let mut play = demo_play();
    let messages = [
        "I swim to the tower.",
        "I climb the stairs.",
        "I ring the bell.",
        "I listen.",
        "I swim back.",
    ];
    let mut turns = Vec::new();
    for message in messages {
        let report = play.play(message);
        assert!(report.error.is_none(), "{:?}", report.error);
        let mut value = json!({
            "turnId": report.turn_id,
            "reply": report.reply.as_ref().map(|r| &r.text),
            "messages": report.preview.prompt.messages,
            "cache": report.preview.cache,
            "compactionTriggered": report.compaction.triggered,
            "slotChanges": report.slot_changes,
            "loop": report.steps.iter().map(|s| s.line()).collect::<Vec<_>>(),
        });
        redact_timings(&mut value);
        turns.push(value);
    }
    assert_eq!(play.turns(), 5);
    insta::assert_json_snapshot!("demo_five_turns", turns);
}

#[test]
fn after_a_played_turn_the_preview_assembles_the_next_turn_with_a_player_message() {
    let mut play = demo_play();
    let report = play.play("I swim to the tower.");
    assert!(report.error.is_none(), "{:?}", report.error);
    assert_eq!(
        play.workspace.session.next_message, "",
        "the played message is used up"
    );
    let preview = play.workspace.preview(&RuntimeTarget::Story);
    let input = preview
        .prompt
        .messages
        .iter()
        .find(|m| m.origin == covel_kernel::prompt::Origin::PlayerInput)
        .expect("a player input");
    let following = play
        .workspace
        .session
        .following_message
        .clone()
        .expect("the demo has a following message");
    assert_eq!(
        input.content, following,
        "the session's following message stands in for the next one"
    );
    assert!(input.tokens > 0);
    let messages = preview.prompt.requests.anthropic["messages"]
        .as_array()
        .expect("messages");
    for block in messages
        .iter()
        .flat_map(|m| m["content"].as_array().into_iter().flatten())
    {
        assert!(
            !block["text"].as_str().unwrap_or_default().trim().is_empty(),
            "an empty text block: {block}"
        );
    }
}

#[test]
fn run_everything_again_runs_every_provider_without_the_memo() {
    let dir = sample_copy();
    let mut studio = live(dir.path());
    for _ in 0..3 {
        studio.refresh();
    }
    assert!(
        studio.preview().calls.iter().any(|c| c.cached),
        "repeated previews are answered from the memo"
    );
    let entry = studio.run_everything_again();
    assert!(
        entry.plugins.len() >= studio.workspace().plugins.len(),
        "every plugin reloaded: {:?}",
        entry.plugins
    );
    let cached: Vec<_> = studio
        .preview()
        .calls
        .iter()
        .filter(|c| c.cached)
        .map(|c| format!("{}/{}", c.plugin_id, c.provider_id))
        .collect();
    assert!(cached.is_empty(), "answered from the memo: {cached:?}");
    assert!(!studio.preview().calls.is_empty());
}

#[test]
fn compact_now_runs_under_the_threshold_shows_as_the_last_run_and_can_be_undone() {
    let dir = sample_copy();
    let mut studio = live(dir.path());
    let before = studio.workspace().session.clone();
    let run = studio.compact_now();
    assert!(run.triggered, "forced although under the threshold");
    assert!(
        run.estimated_tokens as f64 <= run.threshold_tokens,
        "the demo is under the threshold"
    );
    let snapshot = studio.snapshot();
    assert!(
        snapshot.compaction.last_run.is_some(),
        "the Compaction panel shows the run"
    );
    if studio.workspace().session != before {
        assert_eq!(
            snapshot.undo.as_ref().map(|u| u.label.as_str()),
            Some("Undo the compaction")
        );
        assert_eq!(
            studio.undo().expect("undo"),
            Some(covel_studio::live::UndoKind::Compaction)
        );
        assert_eq!(
            studio.workspace().session,
            before,
            "undo puts the session back"
        );
        assert!(studio.snapshot().compaction.last_run.is_none());
    } else {
        assert!(
            run.not_compacted_because.is_some() || run.verdict.is_some(),
            "why nothing changed: {run:?}"
        );
    }
}

/// A "compact now" between played turns rewrites the history: an earlier turn's preview is still
/// recomputed as it was asked, and undo steps back through turns and the compaction in order.
#[test]
fn compact_now_between_turns_keeps_earlier_turn_previews_and_undo_order() {
    let dir = sample_copy();
    let mut studio = live(dir.path());
    let first = studio.play_turn("I walk to the pier.");
    let second = studio.play_turn("I ask Oren about the bell.");
    let after_second = studio.workspace().session.clone();
    studio.compact_now();
    assert_ne!(
        studio.workspace().session,
        after_second,
        "the sample's compaction provider rewrites the history"
    );
    let third = studio.play_turn("I swim to the tower.");
    for report in [&first, &second, &third] {
        let preview = studio.turn_preview(&report.turn_id).expect("a played turn");
        assert_eq!(
            preview.prompt.messages, report.preview.prompt.messages,
            "{}",
            report.turn_id
        );
    }
    assert_eq!(
        studio.undo().expect("undo"),
        Some(covel_studio::live::UndoKind::Turn)
    );
    assert_eq!(
        studio.undo().expect("undo"),
        Some(covel_studio::live::UndoKind::Compaction)
    );
    assert_eq!(
        studio.workspace().session,
        after_second,
        "undoing the compaction restores the history it replaced"
    );
    assert_eq!(
        studio.undo().expect("undo"),
        Some(covel_studio::live::UndoKind::Turn)
    );
    assert_eq!(
        studio.workspace().session.history.messages.len() + 2,
        after_second.history.messages.len()
    );
}

/// A turn's prompt recomputed after a plugin reload says so: it may differ from what was sent.
/// The last turn's prompt is kept as sent; a reload that changes no plugin changes nothing.
#[test]
fn a_turn_prompt_recomputed_after_a_plugin_reload_is_marked() {
    let dir = sample_copy();
    let mut studio = live(dir.path());
    let first = studio.play_turn("I walk to the pier.").turn_id;
    let second = studio.play_turn("I ask Oren about the bell.").turn_id;
    let marked =
        |s: &mut LiveStudio, id: &str| s.turn_prompt(id).expect("a played turn").with_newer_plugins;
    assert!(!marked(&mut studio, &first) && !marked(&mut studio, &second));
    let module = dir.path().join("story-director/server/lib/text.js");
    edit(&module, "grave, unhurried", "grave, patient");
    reload(&mut studio, &[module]);
    assert!(
        marked(&mut studio, &first),
        "recomputed with the edited plugin"
    );
    assert!(
        !marked(&mut studio, &second),
        "the last turn's prompt is kept as sent"
    );
    let third = studio.play_turn("I swim to the tower.").turn_id;
    assert!(!marked(&mut studio, &third));
}

#[test]
fn the_snapshots_compaction_estimate_counts_the_system_prompt_and_turn_context_piece_by_piece() {
    let dir = sample_copy();
    let mut studio = live(dir.path());
    studio.play_turn("I walk to the pier.");
    let prompt = &studio.preview().prompt;
    let text = prompt.system_and_turn_context();
    assert!(
        !studio.preview().prompt.turn_context.is_empty(),
        "the sample has a turn context"
    );
    assert_eq!(
        prompt.system_and_turn_context_tally(),
        covel_kernel::sdk::TokenTally::of(&text)
    );
    let history = &studio.workspace().session.history;
    let expected = covel_kernel::compaction::estimate(&text, &history.messages, &history.summaries);
    assert_eq!(studio.snapshot().compaction.estimated_tokens, expected);
}

#[test]
fn a_plugin_reload_while_the_model_answers_runs_and_the_reply_is_appended_to_the_prompt_sent() {
    let dir = sample_copy();
    let mut studio = live(dir.path());
    let cancel = AtomicBool::new(false);
    let authored = studio.workspace().session.history.messages.len();
    let pending = studio.begin_turn("I walk to the pier.").expect("a prompt");
    let turn_id = pending.turn_id().to_string();
    let sent = pending.preview().prompt.system_and_turn_context();
    // The studio is free while the model answers: a reload goes through.
    let module = dir.path().join("story-director/server/lib/text.js");
    edit(&module, "grave, unhurried", "grave, patient");
    let entry = reload(&mut studio, &[module]);
    assert!(
        !entry.diff.segments.is_empty(),
        "the reload changed the prompt"
    );
    let answer = pending.ask(&cancel);
    let report = studio.finish_turn(pending, answer, &cancel);
    assert_eq!(report.error, None);
    assert_eq!(report.turn_id, turn_id);
    assert_eq!(
        report.preview.prompt.system_and_turn_context(),
        sent,
        "the report keeps the prompt that was sent"
    );
    assert!(sent.contains("grave, unhurried"));
    let prompt = studio.turn_prompt(&turn_id).expect("played");
    assert!(
        !prompt.with_newer_plugins,
        "the last turn's prompt is kept as sent"
    );
    assert_eq!(
        studio.workspace().session.history.messages.len(),
        authored + 2
    );
    assert!(
        studio
            .preview()
            .prompt
            .system_and_turn_context()
            .contains("grave, patient"),
        "the next turn uses the reloaded plugin"
    );
}

/// A live studio over the compaction fixture (a copy, so plugins can be added), with its long
/// session whose small windows make compaction due every few turns.
fn compacting_studio() -> (tempfile::TempDir, LiveStudio) {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/compaction");
    let dir = tempfile::tempdir().expect("temp dir");
    copy_dir(&fixtures.join("plugins"), dir.path());
    let session = dir.path().join("long.session.yaml");
    std::fs::copy(fixtures.join("long.session.yaml"), &session).expect("session");
    let ws = Workspace::open(dir.path(), Some(&session), &Limits::default()).expect("opens");
    (dir, LiveStudio::new(ws, RuntimeTarget::Story))
}

/// Plays turns until one appends with compaction due; returns it, still to compact.
fn turn_with_compaction_due(studio: &mut LiveStudio) -> covel_studio::live::AppendedStudioTurn {
    let cancel = AtomicBool::new(false);
    for turn in 0..12 {
        let pending = studio
            .begin_turn(&format!("I search the pier for the {turn}th time."))
            .expect("a prompt");
        let answer = pending.ask(&cancel);
        let appended = studio
            .append_reply(pending, answer, &cancel)
            .expect("appended");
        if appended.compaction_due() {
            return appended;
        }
        studio.complete_turn(appended);
    }
    panic!("compaction never became due");
}

#[test]
fn a_reload_while_compaction_runs_goes_through_and_the_compaction_still_applies() {
    let (dir, mut studio) = compacting_studio();
    let mut appended = turn_with_compaction_due(&mut studio);
    let turns = studio.turns().len();
    assert_eq!(
        studio.turns().last().map(|t| t.turn_id.as_str()),
        Some(appended.turn_id()),
        "the turn is recorded (and undoable) before its compaction runs"
    );
    // The compaction provider runs without the studio: a plugin added meanwhile is reloaded.
    let plugin = dir.path().join("note");
    std::fs::create_dir_all(plugin.join("server")).expect("mkdir");
    std::fs::write(plugin.join("PLUGIN.md"), "---\nid: note\nkind: plugin\ndescription: A note.\ncontributes:\n  extensions:\n    - { point: prompt.segment@1, id: note }\n---\n").expect("manifest");
    std::fs::write(plugin.join("server/index.js"), "export default function (covel) {\n  covel.provideExtension(\"prompt.segment@1\", \"note\", { handler: () => [] });\n}\n").expect("entry");
    let entry = reload(&mut studio, &[plugin.join("PLUGIN.md")]);
    assert_eq!(entry.plugins.get("note"), Some(&PluginReload::Added));
    appended.compact();
    let report = studio.complete_turn(appended);
    let run = &report.compaction;
    assert!(run.triggered);
    assert!(
        run.verdict.as_ref().is_some_and(|v| v.accepted),
        "{:?}",
        run.events
    );
    assert!(run.applied.is_some(), "the compaction applied");
    assert_eq!(
        studio.turns().len(),
        turns,
        "the record is completed, not added"
    );
    assert!(
        studio
            .turns()
            .last()
            .and_then(|t| t.compaction.as_ref())
            .is_some(),
        "the turn's record shows its compaction"
    );
    assert!(
        !studio.workspace().session.history.summaries.is_empty(),
        "the summaries are in the session"
    );
}

#[test]
fn a_compaction_whose_turn_was_undone_meanwhile_is_not_applied_and_says_why() {
    let (_dir, mut studio) = compacting_studio();
    let mut appended = turn_with_compaction_due(&mut studio);
    let turns = studio.turns().len();
    appended.compact();
    studio.undo().expect("undo works meanwhile");
    let before = studio.workspace().session.history.clone();
    assert_eq!(
        studio.turns().len(),
        turns - 1,
        "the undone turn's record is gone"
    );
    let report = studio.complete_turn(appended);
    assert!(report.compaction.applied.is_none());
    assert!(
        report
            .compaction
            .not_compacted_because
            .as_deref()
            .is_some_and(|why| why.contains("the session changed while compaction ran")),
        "{:?}",
        report.compaction.not_compacted_because
    );
    assert_eq!(
        studio.workspace().session.history,
        before,
        "nothing applied"
    );
    assert_eq!(studio.turns().len(), turns - 1, "no record comes back");
}

#[test]
fn a_reply_for_a_session_that_changed_while_the_model_answered_is_not_appended() {
    let dir = sample_copy();
    let mut studio = live(dir.path());
    let cancel = AtomicBool::new(false);
    let messages = |s: &LiveStudio| s.workspace().session.history.messages.len();
    let authored = messages(&studio);
    studio.play_turn("I walk to the pier.");
    // An undo while the model answers: the reply would follow the wrong history.
    let pending = studio
        .begin_turn("I ask Oren about the bell.")
        .expect("a prompt");
    studio.undo().expect("undo");
    let answer = pending.ask(&cancel);
    let report = studio.finish_turn(pending, answer, &cancel);
    let error = report.error.expect("refused");
    assert!(
        error.contains("the session changed while the story model answered"),
        "{error}"
    );
    assert_eq!(messages(&studio), authored);
    // Two turns in flight at once: the first to finish is appended, the second refused.
    let first = studio.begin_turn("I walk to the pier.").expect("a prompt");
    let second = studio.begin_turn("I swim to the tower.").expect("a prompt");
    let (a, b) = (first.ask(&cancel), second.ask(&cancel));
    assert_eq!(studio.finish_turn(first, a, &cancel).error, None);
    assert!(studio.finish_turn(second, b, &cancel).error.is_some());
    assert_eq!(messages(&studio), authored + 2);
    // A turn begun in one studio is never appended by another (a folder opened again).
    let mut other = live(dir.path());
    let foreign = studio.begin_turn("I dive.").expect("a prompt");
    let answer = foreign.ask(&cancel);
    assert!(other.finish_turn(foreign, answer, &cancel).error.is_some());
    assert_eq!(messages(&other), authored);
}

#[test]
fn after_a_session_edit_a_replay_recording_is_still_found_beside_the_session_file() {
    let dir = sample_copy();
    let session = dir.path().join("tests/replayed.session.yaml");
    let ws = Workspace::open(dir.path(), Some(&session), &Limits::default()).expect("opens");
    let mut studio = LiveStudio::new(ws, RuntimeTarget::Story);
    let text = std::fs::read_to_string(&session).expect("read");
    // The edit restarts the playtest with a new story backend.
    studio
        .save_session_text(
            &format!("{text}\n# edited\n"),
            covel_studio::live::PlayedTurns::Keep,
        )
        .expect("saved");
    let report = studio.play_turn("I dive for the bell.");
    assert_eq!(
        report.error, None,
        "the recording is relative to the session file"
    );
}

#[test]
fn the_cache_forecast_marks_played_turns_recomputed_after_a_plugin_reload() {
    let dir = sample_copy();
    let mut studio = live(dir.path());
    studio.play_turn("I walk to the pier.");
    let module = dir.path().join("story-director/server/lib/text.js");
    edit(&module, "grave, unhurried", "grave, patient");
    reload(&mut studio, &[module]);
    studio.play_turn("I ask Oren about the bell.");
    let options = covel_studio::forecast::ForecastOptions::default();
    let forecast = studio.forecast(None, &options).expect("forecast");
    let marked: Vec<bool> = forecast
        .turns
        .iter()
        .map(|t| t.with_newer_plugins)
        .collect();
    // The first turn was played before the reload; the second after it; then the next turn.
    assert_eq!(marked, [true, false, false]);
}

#[test]
fn the_cache_forecast_refuses_a_mistyped_model_with_the_known_ones_never_guessing() {
    let dir = sample_copy();
    let mut studio = live(dir.path());
    let options = covel_studio::forecast::ForecastOptions::default();
    for typed in ["claude-sonet-4-5", "my-model"] {
        let refused = studio
            .forecast(Some(typed), &options)
            .expect_err("an unknown model is refused");
        assert!(
            refused.contains(typed) && refused.contains("claude-sonnet-4-5"),
            "names the model and the known ones: {refused}"
        );
    }
    let known = studio
        .forecast(Some("claude-haiku-4-5"), &options)
        .expect("a known model");
    assert_eq!(known.model.id, "claude-haiku-4-5");
}

#[test]
fn turns_can_be_undone_back_to_the_session_files_state_and_saved_atomically() {
    let mut play = demo_play();
    let original = play.workspace.session.clone();
    play.play("I swim to the tower.");
    play.play("I climb the stairs.");
    assert_eq!(
        play.workspace.session.history.messages.len(),
        original.history.messages.len() + 4
    );
    assert!(play.undo());
    assert!(play.undo());
    assert!(!play.undo(), "nothing left to undo");
    assert_eq!(play.workspace.session, original);

    play.play("I dive.");
    let dir = tempfile::tempdir().expect("temp");
    let path = dir.path().join("played.session.yaml");
    std::fs::write(&path, "old contents").expect("seed");
    play.save(&path).expect("save");
    let saved =
        covel_kernel::session::parse_session(&std::fs::read_to_string(&path).expect("read"), &path)
            .expect("the saved file parses");
    assert_eq!(
        saved.history.messages.len(),
        original.history.messages.len() + 2
    );
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .expect("dir")
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(
        leftovers.is_empty(),
        "the temporary file was renamed into place"
    );
}

#[test]
fn a_failing_world_context_fails_the_turn_and_appends_nothing() {
    let fixtures = covel_tests::fixture("world/plugins");
    let session = covel_tests::fixture("world/sessions/throws.session.yaml");
    let ws = Workspace::open(&fixtures, Some(&session), &Limits::default()).expect("opens");
    let mut play = Playtest::new(ws);
    let before = play.workspace.session.history.messages.len();
    let report = play.play("Hello");
    assert!(
        report
            .error
            .as_deref()
            .is_some_and(|e| e.contains("dimension store unreachable"))
    );
    assert!(report.reply.is_none());
    assert_eq!(play.workspace.session.history.messages.len(), before);
}

/// Requests a fake server received: `(path, JSON body)`.
type Recorded = Arc<Mutex<Vec<(String, Value)>>>;

/// A one-request-at-a-time HTTP server on loopback that records bodies and answers `reply`.
fn fake_server(reply: Value) -> (String, Recorded) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&seen);
    std::thread::spawn(move || {
        for stream in listener.incoming().take(8) {
            let Ok(mut stream) = stream else { continue };
            let (path, body) = read_request(&stream).expect("request");
            record
                .lock()
                .expect("lock")
                .push((path, serde_json::from_slice(&body).unwrap_or(Value::Null)));
            write_json(&mut stream, &reply.to_string()).expect("respond");
        }
    });
    (url, seen)
}

fn play_with(backend: &str, url: &str) -> (Playtest, covel_studio::playtest::TurnReport) {
    let ws = demo_workspace();
    let mut ws = ws;
    ws.session.models.story.backend = backend.into();
    ws.session.models.story.base_url = Some(url.into());
    ws.session.models.story.model = Some("test-model".into());
    let mut play = Playtest::new(ws);
    let report = play.play("I swim to the tower.");
    (play, report)
}

#[test]
fn the_openai_compatible_backend_sends_the_assembled_chat_body() {
    let (url, seen) = fake_server(
        json!({"choices": [{"message": {"role": "assistant", "content": "The water is cold."}, "finish_reason": "stop"}]}),
    );
    let (_, report) = play_with("openai", &url);
    assert_eq!(
        report.reply.as_ref().map(|r| r.text.as_str()),
        Some("The water is cold."),
        "{:?}",
        report.error
    );
    let requests = seen.lock().expect("lock");
    let (path, body) = &requests[0];
    assert_eq!(path, "/chat/completions");
    let mut expected = report.preview.prompt.requests.openai.clone();
    expected["model"] = json!("test-model");
    assert_eq!(body, &expected, "exactly the body the studio shows");
    assert!(!body.to_string().contains("cache_control"));
}

#[test]
fn the_anthropic_backend_sends_cache_control_and_reports_cache_usage() {
    let usage = json!({"input_tokens": 120, "output_tokens": 30, "cache_creation_input_tokens": 900, "cache_read_input_tokens": 0});
    let (url, seen) = fake_server(
        json!({"content": [{"type": "text", "text": "The bell tolls."}], "stop_reason": "end_turn", "usage": usage}),
    );
    let (_, report) = play_with("anthropic", &url);
    let reply = report
        .reply
        .as_ref()
        .unwrap_or_else(|| panic!("{:?}", report.error));
    assert_eq!(reply.text, "The bell tolls.");
    assert_eq!(
        reply.usage.as_ref(),
        Some(&usage),
        "the API's cache usage is shown beside the prediction"
    );
    let requests = seen.lock().expect("lock");
    let (path, body) = &requests[0];
    assert_eq!(path, "/v1/messages");
    let mut expected = report.preview.prompt.requests.anthropic.clone();
    expected["model"] = json!("test-model");
    assert_eq!(body, &expected);
    let system = body["system"].as_array().expect("system blocks");
    let cached: Vec<bool> = system
        .iter()
        .map(|b| b.get("cache_control").is_some())
        .collect();
    assert_eq!(
        cached,
        [true, true, true, false],
        "three system boundaries, the turn tail uncached"
    );
    assert_eq!(body.to_string().matches("cache_control").count(), 4);
}

#[test]
fn events_the_story_emits_preview_their_slots_and_end_with_the_turn() {
    let mut ws = demo_workspace();
    ws.session.models.story.script =
        vec![r#"You swim out. <event topic="scene.set">{"sceneId": "tower", "name": "The Bell Tower"}</event> The bell is close."#.into()];
    let mut play = Playtest::new(ws);
    let report = play.play("I swim to the tower.");
    assert_eq!(
        report.reply.as_ref().map(|r| r.text.as_str()),
        Some("You swim out. The bell is close.")
    );
    assert_eq!(report.events.len(), 1);
    let preview = report
        .slot_changes
        .iter()
        .find(|c| c.preview_turn.is_some())
        .expect("a preview");
    assert_eq!(preview.slot, covel_kernel::contract::SlotId::StageBackdrop);
    assert_eq!(preview.value["name"], "The Bell Tower");
    let committed = play
        .slots
        .values()
        .into_iter()
        .find(|v| v.slot == covel_kernel::contract::SlotId::StageBackdrop)
        .expect("backdrop");
    assert_eq!(
        committed.value["name"], "The Harbour",
        "the preview ended with the turn"
    );
}

#[test]
fn a_session_that_opts_into_live_network_reaches_allowed_origins() {
    let (url, seen) = fake_server(json!({"sky": "stormy"}));
    let dir = tempfile::tempdir().expect("temp");
    let plugin = dir.path().join("live-probe");
    std::fs::create_dir_all(plugin.join("server")).expect("mkdir");
    std::fs::write(
        plugin.join("PLUGIN.md"),
        format!("---\nid: live-probe\nkind: plugin\ndescription: Fetches live.\ncontributes:\n  extensions:\n    - {{ point: prompt.segment@1, id: weather }}\nruntime:\n  type: function\n  permissions:\n    http:\n      - origin: {url}\n---\n"),
    )
    .expect("manifest");
    std::fs::write(
        plugin.join("server/index.js"),
        format!("export default function (covel) {{\n  covel.provideExtension(\"prompt.segment@1\", \"weather\", {{\n    handler: async (_i, ctx) => {{\n      const r = await ctx.utils.fetchWithRetry(\"{url}/weather\");\n      const body = await r.json();\n      return [{{ id: \"weather\", content: body.sky, position: \"system\", audience: \"all\", volatility: \"turn\" }}];\n    }},\n  }});\n}}\n"),
    )
    .expect("entry");
    let session = dir.path().join("live.session.yaml");
    std::fs::write(&session, "id: live\nhttp:\n  live: true\n").expect("session");
    let ws = Workspace::open(dir.path(), Some(&session), &Limits::default()).expect("opens");
    let result = ws.call(
        covel_kernel::contract::PointId::PromptSegment,
        json!({"turnId": "t", "playerMessage": ""}),
        None,
        None,
    );
    assert_eq!(result.result[0]["content"], "stormy", "{:?}", result.calls);
    assert_eq!(seen.lock().expect("lock")[0].0, "/weather");
}

#[test]
fn editing_the_session_saves_it_safely_and_keeps_the_previous_text_as_a_backup() {
    let dir = sample_copy();
    let mut studio = live(dir.path());
    let path = dir.path().join("demo.session.yaml");
    let authored = std::fs::read_to_string(&path).expect("read");
    let tone = covel_studio::document::SessionEdit::SetSetting {
        plugin: "story-director".into(),
        key: "tone".into(),
        value: Some(json!("wry")),
    };
    studio
        .edit_session(&[tone], covel_studio::live::PlayedTurns::Keep)
        .expect("valid edit");
    assert!(
        studio
            .preview()
            .segments
            .iter()
            .any(|s| &*s.id == "tone" && s.content.contains("wry")),
        "the preview re-ran"
    );
    let saved = std::fs::read_to_string(&path).expect("saved");
    assert_eq!(
        saved,
        authored.replace(
            "story-director: { tone: grave }",
            "story-director: { tone: wry }"
        ),
        "only the edited value changed"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("demo.session.yaml.bak")).expect("kept"),
        authored
    );
    assert!(
        studio
            .save_session_text(
                &saved.replace("locale: en", "locale: [en"),
                covel_studio::live::PlayedTurns::Keep
            )
            .is_err(),
        "invalid text is refused"
    );
    assert_eq!(std::fs::read_to_string(&path).expect("saved"), saved);
}

#[test]
fn a_turn_cancelled_before_it_starts_appends_nothing() {
    let mut play = demo_play();
    let before = play.workspace.session.clone();
    let report = play.play_cancellable("I swim.", &std::sync::atomic::AtomicBool::new(true));
    assert!(
        report
            .error
            .as_deref()
            .is_some_and(|e| e.contains("cancelled"))
    );
    assert_eq!(play.workspace.session, before);
    assert_eq!(play.turns(), 0);
}

/// A loopback server for one request that answers only when released (or after 10 s), then
/// stops by itself. Reports on `arrived` when the whole request was read.
struct StallingServer {
    url: String,
    arrived: std::sync::mpsc::Receiver<()>,
    release: std::sync::mpsc::Sender<()>,
    /// Set once the answer was written.
    answered: Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<()>,
}

fn stalling_server(reply: Value) -> StallingServer {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    listener.set_nonblocking(true).expect("nonblocking");
    let (arrived_tx, arrived) = std::sync::mpsc::channel();
    let (release, released) = std::sync::mpsc::channel::<()>();
    let answered = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let answer_written = Arc::clone(&answered);
    let thread = std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut stream = loop {
            match listener.accept() {
                Ok((stream, _)) => break stream,
                Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
                Err(_) => return,
            }
        };
        let _ = stream.set_nonblocking(false);
        let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
        let _ = read_request(&stream);
        let _ = arrived_tx.send(());
        let _ = released.recv_timeout(Duration::from_secs(10));
        let _ = write_json(&mut stream, &reply.to_string());
        answer_written.store(true, std::sync::atomic::Ordering::SeqCst);
    });
    StallingServer {
        url,
        arrived,
        release,
        answered,
        thread,
    }
}

#[test]
fn cancelling_a_turn_while_the_model_call_is_in_flight_returns_at_once_and_appends_nothing() {
    let server = stalling_server(
        json!({"choices": [{"message": {"role": "assistant", "content": "Too late."}, "finish_reason": "stop"}]}),
    );
    let mut ws = demo_workspace();
    ws.session.models.story.backend = "openai".into();
    ws.session.models.story.base_url = Some(server.url.clone());
    let mut play = Playtest::new(ws);
    let before = play.workspace.session.clone();
    let cancel = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let arrived = server.arrived;
    let canceller = {
        let cancel = Arc::clone(&cancel);
        // Cancel only once the server holds the request: the turn is waiting for the model.
        std::thread::spawn(move || {
            let reached = arrived.recv_timeout(Duration::from_secs(30)).is_ok();
            cancel.store(true, std::sync::atomic::Ordering::SeqCst);
            reached
        })
    };
    let report = play.play_cancellable("I swim.", &cancel);
    // The server answers only when released below (or after 10 s): the turn returned because it
    // was cancelled during the call, not because the call ended.
    assert!(
        !server.answered.load(std::sync::atomic::Ordering::SeqCst),
        "the turn waited for the model's answer"
    );
    assert!(
        canceller.join().expect("canceller"),
        "the model request reached the server"
    );
    assert_eq!(
        report.error.as_deref(),
        Some("the turn was cancelled; nothing was appended"),
        "{:?}",
        report.reply
    );
    assert!(report.reply.is_none());
    assert_eq!(play.workspace.session, before);
    assert_eq!(play.turns(), 0);
    let _ = server.release.send(());
    server.thread.join().expect("the fake server stops");
}

// ---- No silent drops: every run that fails as a whole is in the preview ------------------------

#[test]
fn a_history_transform_whose_input_fails_its_schema_is_a_preview_error_and_fails_the_turn() {
    let mut ws = demo_workspace();
    // What the session file can no longer produce (the loader derives or refuses), but an
    // in-memory edit could: a message without the fields the transform's input requires.
    ws.session
        .history
        .messages
        .push(json!({"id": "bare", "role": "user", "content": "Hello"}));
    let preview = ws.preview(&RuntimeTarget::Story);
    let failed: Vec<(&str, &str, String)> = preview
        .errors
        .iter()
        .map(|e| {
            (
                e.point.as_str(),
                e.turn,
                serde_json::to_value(&e.error).expect("json")["code"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            )
        })
        .collect();
    let point = covel_kernel::contract::PointId::PromptHistoryTransform.as_str();
    assert_eq!(
        failed,
        [
            (point, "this-turn", "invalid-input".to_string()),
            (point, "next-turn", "invalid-input".to_string())
        ]
    );
    assert!(
        preview.errors[0].message.contains("sessionId"),
        "{}",
        preview.errors[0].message
    );
    let mut play = Playtest::new(ws);
    let before = play.workspace.session.clone();
    let report = play.play("I swim.");
    assert!(
        report
            .error
            .as_deref()
            .is_some_and(|e| e.contains("prompt.history-transform@1")),
        "{:?}",
        report.error
    );
    assert_eq!(
        play.workspace.session, before,
        "a turn without its history appends nothing"
    );
}

#[test]
fn a_failing_world_context_is_a_preview_error_and_in_the_quick_preview() {
    let fixtures = covel_tests::fixture("world/plugins");
    let session = covel_tests::fixture("world/sessions/throws.session.yaml");
    let ws = Workspace::open(&fixtures, Some(&session), &Limits::default()).expect("opens");
    let preview = ws.preview(&RuntimeTarget::Story);
    assert_eq!(preview.errors.len(), 1, "{:?}", preview.errors);
    assert_eq!(
        preview.errors[0].point,
        covel_kernel::contract::PointId::SessionWorldContext
    );
    assert!(
        preview.errors[0]
            .message
            .contains("dimension store unreachable")
    );
    let quick = ws.quick_preview("Look.");
    assert_eq!(quick.errors.len(), 1, "the bench's preview reports it too");
}

#[test]
fn a_slot_run_that_fails_as_a_whole_is_in_the_slot_change() {
    let mut ws = demo_workspace();
    // An event whose data is not an object fails ui.slot@1's input schema. (The declared
    // schema, which would refuse it first, is widened here to reach the slot.)
    for package in ws.plugins.iter_mut().filter_map(|p| p.package.as_mut()) {
        for event in &mut package.manifest.declared.events {
            event.schema = json!({});
        }
    }
    ws.session.models.story.script =
        vec![r#"You swim. <event topic="scene.set">42</event>"#.into()];
    let mut play = Playtest::new(ws);
    let report = play.play("I swim.");
    let change = report
        .slot_changes
        .iter()
        .find(|c| c.preview_turn.is_some())
        .expect("the previewed slot is reported");
    assert_eq!(change.slot, covel_kernel::contract::SlotId::StageBackdrop);
    let error = serde_json::to_value(change.error.as_ref().expect("with its error")).expect("json");
    assert_eq!(error["code"], "invalid-input");
}

#[test]
fn a_compaction_run_that_fails_as_a_whole_counts_as_a_failure() {
    let mut ws = demo_workspace();
    ws.session
        .history
        .messages
        .push(json!({"id": "bare", "role": "user", "content": "Hello"}));
    let mut counter = covel_kernel::compaction::FailureCounter::default();
    let options = covel_studio::compaction::CompactionOptions {
        force: true,
        output: None,
    };
    let run = ws.compact("t9", "", &options, &mut counter);
    assert!(
        run.events
            .iter()
            .any(|e| e.topic == "context.compaction.failed"),
        "{:?}",
        run.events
    );
    assert_eq!(counter.consecutive, 1);
}

#[test]
fn a_played_turn_keeps_what_the_ui_shows_and_recomputes_its_preview_on_demand() {
    let ws = demo_workspace();
    let mut studio = LiveStudio::new(ws, RuntimeTarget::Story);
    let turns = covel_studio::live::RECENT_PREVIEWS + 3;
    let mut asked = Vec::new();
    for i in 0..turns {
        let report = studio.play_turn(&format!("I swim to the tower ({i})."));
        assert!(report.error.is_none(), "{:?}", report.error);
        asked.push((
            report.turn_id.clone(),
            report.preview.prompt.messages.clone(),
            report.preview.prompt.system.blocks.len(),
        ));
    }
    // Structural: the retained record of a turn holds no preview (nor the whole history a
    // compaction run was given).
    for turn in serde_json::to_value(studio.turns())
        .expect("json")
        .as_array()
        .expect("turns")
    {
        let keys: Vec<&String> = turn.as_object().expect("a turn").keys().collect();
        assert!(
            ["preview", "prompt", "segments", "calls"]
                .iter()
                .all(|k| !keys.iter().any(|key| key == k)),
            "{keys:?}"
        );
        assert!(
            turn.get("compaction").is_none_or(|c| c["input"].is_null()),
            "{turn}"
        );
    }
    assert_eq!(
        serde_json::to_value(studio.snapshot()).expect("json")["turns"],
        serde_json::to_value(studio.turns()).expect("json")
    );
    // Older turns' previews are recomputed from the session as it was, equal to what was asked.
    for (turn_id, messages, blocks) in &asked {
        let preview = studio.turn_preview(turn_id).expect("a played turn");
        assert_eq!(&preview.turn_id, turn_id);
        assert_eq!(&preview.prompt.messages, messages, "{turn_id}");
        assert_eq!(preview.prompt.system.blocks.len(), *blocks);
    }
    assert!(studio.turn_preview("no-such-turn").is_none());
    assert_eq!(
        studio.workspace().session.history.messages.len() % 2,
        0,
        "recomputing left the session as it was"
    );
}

#[test]
fn a_compact_now_whose_session_changed_meanwhile_is_not_applied_and_says_why() {
    let (_dir, mut studio) = compacting_studio();
    let mut forced = studio.begin_compact_now();
    forced.compact();
    // A turn played while the provider ran: its output answers a history that is gone.
    assert_eq!(studio.play_turn("I ring the bell.").error, None);
    let before = studio.workspace().session.history.clone();
    let undoable = studio.next_undo().cloned();
    let run = studio.finish_compact_now(forced);
    assert!(run.applied.is_none());
    assert!(
        run.not_compacted_because
            .as_deref()
            .is_some_and(|why| why.contains("the session changed while compaction ran")),
        "{:?}",
        run.not_compacted_because
    );
    assert_eq!(
        studio.workspace().session.history,
        before,
        "nothing applied"
    );
    assert_eq!(studio.next_undo().cloned(), undoable, "no undo step added");

    // Nothing in between: the same steps apply it.
    let mut forced = studio.begin_compact_now();
    forced.compact();
    let run = studio.finish_compact_now(forced);
    assert!(run.applied.is_some(), "{:?}", run.events);
    assert_eq!(
        studio.next_undo(),
        Some(&covel_studio::live::UndoEntry::Compaction)
    );
}

#[test]
fn a_missing_session_file_is_a_missing_file_not_an_unreadable_manifest() {
    let dir = sample_copy();
    let missing = dir.path().join("no-such.session.yaml");
    let error = match covel_studio::Workspace::open(
        dir.path(),
        Some(&missing),
        &covel_js::Limits::default(),
    ) {
        Ok(_) => panic!("a missing session does not open"),
        Err(e) => e.diagnostic(),
    };
    assert_eq!(error.code.as_str(), "missing-file", "{error}");
    assert_eq!(error.file.as_deref(), Some(missing.as_path()));
}

#[test]
fn a_session_save_never_drops_the_played_turns_without_being_told_to() {
    let dir = sample_copy();
    let mut studio = live(dir.path());
    let path = dir.path().join("demo.session.yaml");
    let authored = std::fs::read_to_string(&path).expect("read");
    studio.play_turn("I swim to the tower.");
    studio.play_turn("I climb the stairs.");
    let edited = authored.replace("tone: grave", "tone: wry");
    let refused = studio.save_session_text(&edited, covel_studio::live::PlayedTurns::Keep);
    let message = refused.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(
        message.contains("drops its 2 played turns (turn-3, turn-4)"),
        "{message}"
    );
    assert_eq!(
        std::fs::read_to_string(&path).expect("read"),
        authored,
        "nothing written"
    );
    assert_eq!(studio.turns().len(), 2, "the playtest is as it was");
    studio
        .save_session_text(&edited, covel_studio::live::PlayedTurns::Drop)
        .expect("saved when told to drop them");
    assert_eq!(std::fs::read_to_string(&path).expect("read"), edited);
    assert!(studio.turns().is_empty());
}

/// The Tests panel's review of one session is refused while its expectations fail, as
/// `covel test --update` refuses; forced (`--force`), it writes that session's pending
/// snapshot alone and leaves the golden file as it was.
#[test]
fn a_forced_review_writes_the_pending_snapshot_of_that_session_alone_while_expectations_fail() {
    use covel_studio::testing::{GoldenStatus, Sessions, run_folder_with};
    let dir = tempfile::tempdir().expect("temp dir");
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins-sample"),
        dir.path(),
    );
    // The tone changes: the session's `contains: "grave, unhurried"` fails and its golden
    // snapshot differs.
    let tone = dir.path().join("story-director/server/lib/text.js");
    let text = std::fs::read_to_string(&tone).expect("plugin");
    assert!(text.contains("grave, unhurried"));
    std::fs::write(&tone, text.replace("grave, unhurried", "grave, patient")).expect("edit");
    let session = dir.path().join("tests/bell-tower.session.yaml");
    let golden = dir.path().join("tests/bell-tower.golden.yaml");
    let before = std::fs::read_to_string(&golden).expect("golden");
    let pending = dir.path().join("tests/bell-tower.golden.new");
    let only = Sessions::Only(session.clone());
    let status = |force: bool| {
        let results = run_folder_with(
            dir.path(),
            &only,
            &Sessions::None,
            force,
            &Limits::default(),
        )
        .expect("runs");
        let of = |name: &str| {
            results
                .iter()
                .find(|r| r.session.ends_with(name))
                .map(|r| r.golden)
                .expect("the session ran")
        };
        (
            of("bell-tower.session.yaml"),
            of("without-lore.session.yaml"),
        )
    };
    assert_eq!(status(false).0, GoldenStatus::Refused);
    assert!(!pending.exists(), "nothing written while expectations fail");
    let (forced, other) = status(true);
    assert_eq!(forced, GoldenStatus::Pending);
    assert_ne!(other, GoldenStatus::Pending, "only the session asked for");
    assert!(pending.exists(), "forced: the pending snapshot is written");
    assert!(!dir.path().join("tests/without-lore.golden.new").exists());
    assert_eq!(std::fs::read_to_string(&golden).expect("golden"), before);
}
