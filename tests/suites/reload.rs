//! Reloading at the speed of the save: an editor's save in steps (a truncated or half-written
//! file, then the whole file; or a temporary file renamed over the entry) shows no bogus error;
//! a file that stays broken is reported once the grace period passes, and the last good version
//! keeps running. A save of the same bytes reloads nothing (the runtime, its memo and the last
//! reload's marks stay); "run everything again" still reloads every plugin.

use covel_js::Limits;
use covel_studio::live::{FolderWatcher, LiveStudio};
use covel_studio::workspace::PluginReload;
use covel_studio::{RuntimeTarget, Workspace};
use std::path::Path;
use std::time::Duration;

const GOOD: &str = "export default function (covel) {\n  covel.provideExtension(\"prompt.segment@1\", \"note\", { handler: () => [{ id: \"note\", content: \"VERSION\", position: \"system\", audience: \"story\", volatility: \"stable\" }] });\n}\n";

fn folder(dir: &Path) {
    let plugin = dir.join("note");
    std::fs::create_dir_all(plugin.join("server")).expect("mkdir");
    std::fs::write(plugin.join("PLUGIN.md"), "---\nid: note\nkind: plugin\ndescription: A note.\ncontributes:\n  extensions:\n    - { point: prompt.segment@1, id: note }\n---\n").expect("manifest");
    std::fs::write(
        plugin.join("server/index.js"),
        GOOD.replace("VERSION", "one"),
    )
    .expect("entry");
}

fn studio(dir: &Path) -> (LiveStudio, FolderWatcher) {
    let ws = Workspace::open(dir, None, &Limits::default()).expect("opens");
    let watcher = FolderWatcher::new(dir, None, FolderWatcher::SETTLE).expect("watcher");
    (LiveStudio::new(ws, RuntimeTarget::Story), watcher)
}

/// Follows the folder while `writer` saves in steps: the one reload entry the save gives (with a
/// grace period long enough for every step).
fn one_reload(
    studio: &mut LiveStudio,
    watcher: &mut FolderWatcher,
    writer: std::thread::JoinHandle<()>,
) -> covel_studio::live::ReloadEntry {
    let followed = studio
        .follow(watcher, Duration::from_secs(10), Duration::from_millis(400))
        .expect("a batch");
    writer.join().expect("writer");
    followed.entry.expect("a reload")
}

#[test]
fn a_save_in_steps_gives_one_reload_without_a_bogus_syntax_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    folder(dir.path());
    let (mut studio, mut watcher) = studio(dir.path());
    let entry_file = dir.path().join("note/server/index.js");
    let writer = std::thread::spawn(move || {
        let full = GOOD.replace("VERSION", "two");
        std::fs::write(&entry_file, &full[..full.len() / 2]).expect("half");
        std::thread::sleep(Duration::from_millis(40));
        std::fs::write(&entry_file, &full).expect("whole");
    });
    let entry = one_reload(&mut studio, &mut watcher, writer);
    assert_eq!(
        entry.plugins.get("note"),
        Some(&PluginReload::Replaced),
        "{:?}",
        entry.plugins
    );
    assert!(
        entry.diagnostics.is_empty(),
        "no bogus syntax error: {:?}",
        entry.diagnostics
    );
    assert!(
        studio
            .preview()
            .segments
            .iter()
            .any(|s| &*s.content == "two")
    );
}

/// Follows reloads until the preview shows `content` (or ten seconds pass); returns every entry.
fn reloads_until(
    studio: &mut LiveStudio,
    watcher: &mut FolderWatcher,
    content: &str,
) -> Vec<covel_studio::live::ReloadEntry> {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let mut entries = Vec::new();
    while !studio
        .preview()
        .segments
        .iter()
        .any(|s| &*s.content == content)
    {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        assert!(!left.is_zero(), "no reload showed {content:?}: {entries:?}");
        if let Some(entry) = studio
            .follow(watcher, left, LiveStudio::GRACE)
            .and_then(|f| f.entry)
        {
            entries.push(entry);
        }
    }
    entries
}

#[test]
fn an_atomic_save_by_rename_never_shows_an_error_and_ends_on_the_new_text() {
    // Write-temp-then-rename (JetBrains, vim's `backupcopy=no`, many tools): the entry is always
    // whole, so no reload may report anything, however the events split into batches.
    let dir = tempfile::tempdir().expect("tempdir");
    folder(dir.path());
    let (mut studio, mut watcher) = studio(dir.path());
    let server = dir.path().join("note/server");
    let temp = server.join("index.js___jb_tmp___");
    std::fs::write(&temp, GOOD.replace("VERSION", "two")).expect("temp");
    std::fs::rename(&temp, server.join("index.js")).expect("rename");
    let entries = reloads_until(&mut studio, &mut watcher, "two");
    assert!(
        entries.iter().all(|e| e.diagnostics.is_empty()),
        "no reload reported a problem: {entries:?}"
    );
    assert_eq!(
        entries.last().and_then(|e| e.plugins.get("note")),
        Some(&PluginReload::Replaced)
    );
}

#[test]
fn a_truncate_then_write_save_shows_no_error_for_the_empty_moment() {
    // Truncate-then-write, the two steps apart by more than the settle time: the empty entry
    // (no default export) is held by the grace period until the text arrives.
    let dir = tempfile::tempdir().expect("tempdir");
    folder(dir.path());
    let (mut studio, mut watcher) = studio(dir.path());
    let entry_file = dir.path().join("note/server/index.js");
    let writer = std::thread::spawn(move || {
        std::fs::write(&entry_file, "").expect("truncate");
        std::thread::sleep(FolderWatcher::SETTLE * 6);
        std::fs::write(&entry_file, GOOD.replace("VERSION", "two")).expect("whole");
    });
    let entries = reloads_until(&mut studio, &mut watcher, "two");
    writer.join().expect("writer");
    assert!(
        entries.iter().all(|e| e.diagnostics.is_empty()),
        "no reload reported the empty moment: {entries:?}"
    );
}

#[test]
fn a_file_that_stays_broken_is_reported_and_the_last_good_version_keeps_running() {
    let dir = tempfile::tempdir().expect("tempdir");
    folder(dir.path());
    let (mut studio, mut watcher) = studio(dir.path());
    std::fs::write(
        dir.path().join("note/server/index.js"),
        "export default function (covel) {",
    )
    .expect("broken");
    let followed = studio
        .follow(
            &mut watcher,
            Duration::from_secs(10),
            Duration::from_millis(100),
        )
        .expect("a batch");
    let entry = followed.entry.expect("a reload");
    assert_eq!(entry.plugins.get("note"), Some(&PluginReload::KeptLastGood));
    assert!(
        entry
            .diagnostics
            .iter()
            .any(|d| d.code.as_str() == "entry-syntax")
    );
    assert!(
        studio
            .preview()
            .segments
            .iter()
            .any(|s| &*s.content == "one"),
        "the last good version runs"
    );
}

/// Writes a plugin with one pure segment provider (its id is the plugin's name).
fn pure_plugin(dir: &Path, name: &str, content: &str) {
    let plugin = dir.join(name);
    std::fs::create_dir_all(plugin.join("server")).expect("mkdir");
    std::fs::write(plugin.join("PLUGIN.md"), format!("---\nid: {name}\nkind: plugin\ndescription: A pure provider.\ncontributes:\n  extensions:\n    - {{ point: prompt.segment@1, id: {name} }}\n---\n")).expect("manifest");
    std::fs::write(
        plugin.join("server/index.js"),
        GOOD.replace("\"note\"", &format!("\"{name}\""))
            .replace("VERSION", content),
    )
    .expect("entry");
}

/// What the first save after opening costs: the other plugins' calls, answered from the memo or
/// run again (with the preview's segments, to check the memo did not change them).
fn first_save(confirm: bool) -> (Vec<(String, bool)>, Vec<String>) {
    let dir = tempfile::tempdir().expect("tempdir");
    pure_plugin(dir.path(), "edited", "one");
    pure_plugin(dir.path(), "other", "steady");
    let (mut studio, _watcher) = studio(dir.path());
    assert!(
        studio.needs_confirming(),
        "a fresh preview ran every call once"
    );
    if confirm {
        studio.confirm_memo();
        assert!(!studio.needs_confirming(), "confirmed once is enough");
    }
    pure_plugin(dir.path(), "edited", "two");
    let changes = studio.classify(&[dir.path().join("edited/server/index.js")]);
    studio.reload(&changes, std::time::Instant::now());
    assert!(
        studio.needs_confirming(),
        "the reloaded plugin's new engine ran its calls once"
    );
    let calls = studio
        .preview()
        .calls
        .iter()
        .filter(|c| c.point == covel_kernel::contract::PointId::PromptSegment)
        .map(|c| (c.plugin_id.to_string(), c.cached))
        .collect();
    let contents = studio
        .preview()
        .segments
        .iter()
        .map(|s| s.content.to_string())
        .collect();
    (calls, contents)
}

#[test]
fn once_the_memo_is_confirmed_while_idle_the_first_save_runs_only_the_edited_plugin() {
    let (confirmed, contents) = first_save(true);
    assert_eq!(
        confirmed,
        vec![("edited".to_string(), false), ("other".to_string(), true)],
        "the unchanged plugin is answered from the memo"
    );
    let (unconfirmed, same) = first_save(false);
    assert_eq!(
        unconfirmed,
        vec![("edited".to_string(), false), ("other".to_string(), false)],
        "without the idle run, the first save runs every provider again"
    );
    assert_eq!(contents, same, "the memo changes no answer");
    assert!(contents.contains(&"two".to_string()), "{contents:?}");
}

/// The running engine of a plugin, to tell a kept runtime from a new one.
fn engine_of(studio: &LiveStudio, name: &str) -> std::sync::Arc<covel_js::host::JsPlugin> {
    let plugin = studio.workspace().plugins.iter().find(|p| p.name == name);
    plugin
        .and_then(|p| p.instance.clone())
        .expect("a running plugin")
}

/// Follows the folder for a while after saves of the same bytes: the watcher sees them, and not
/// one gives a reload entry.
fn assert_nothing_reloads(studio: &mut LiveStudio, watcher: &mut FolderWatcher) {
    let deadline = std::time::Instant::now() + Duration::from_millis(1500);
    let mut batches = 0;
    while let Some(followed) = studio.follow(
        watcher,
        deadline.saturating_duration_since(std::time::Instant::now()),
        LiveStudio::GRACE,
    ) {
        batches += 1;
        assert!(
            followed.entry.is_none(),
            "the same bytes reload nothing: {:?}",
            followed.entry
        );
    }
    assert!(batches > 0, "the watcher saw the saves");
}

#[test]
fn a_save_of_the_same_bytes_reloads_nothing_and_keeps_the_runtime_and_the_last_reload() {
    let dir = tempfile::tempdir().expect("tempdir");
    folder(dir.path());
    let (mut studio, mut watcher) = studio(dir.path());
    let entry_file = dir.path().join("note/server/index.js");
    // Right after opening: the bytes the open loaded.
    std::fs::write(&entry_file, GOOD.replace("VERSION", "one")).expect("same bytes");
    assert_nothing_reloads(&mut studio, &mut watcher);
    assert!(studio.last_reload().is_none());

    std::fs::write(&entry_file, GOOD.replace("VERSION", "two")).expect("edit");
    let entries = reloads_until(&mut studio, &mut watcher, "two");
    let changed = entries.last().cloned().expect("a reload");
    assert!(
        !changed.diff.segments.is_empty(),
        "the edit changed a segment"
    );
    let engine = engine_of(&studio, "note");
    // The same text again, as a save in place and as a save by rename (a new file).
    std::fs::write(&entry_file, GOOD.replace("VERSION", "two")).expect("same bytes");
    let temp = dir.path().join("note/server/index.js.tmp");
    std::fs::write(&temp, GOOD.replace("VERSION", "two")).expect("temp");
    std::fs::rename(&temp, &entry_file).expect("rename");
    assert_nothing_reloads(&mut studio, &mut watcher);
    assert!(
        std::sync::Arc::ptr_eq(&engine, &engine_of(&studio, "note")),
        "the runtime (and its memo and module state) stays"
    );
    let last = studio.last_reload().expect("the last reload");
    assert_eq!(
        last.diff.segments, changed.diff.segments,
        "the last reload's changes are still the ones shown"
    );
    assert!(
        studio
            .preview()
            .segments
            .iter()
            .any(|s| &*s.content == "two")
    );

    // "Run everything again" reloads it all the same: a fresh runtime.
    let again = studio.run_everything_again();
    assert_eq!(again.plugins.get("note"), Some(&PluginReload::Replaced));
    assert!(!std::sync::Arc::ptr_eq(
        &engine,
        &engine_of(&studio, "note")
    ));
}

#[test]
fn a_session_file_saved_with_the_same_text_reloads_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    folder(dir.path());
    let session = dir.path().join("test.session.yaml");
    let text = "id: s\nlocale: en\n";
    std::fs::write(&session, text).expect("session");
    let ws = Workspace::open(dir.path(), Some(&session), &Limits::default()).expect("opens");
    let mut watcher =
        FolderWatcher::new(dir.path(), Some(&session), FolderWatcher::SETTLE).expect("watcher");
    let mut studio = LiveStudio::new(ws, RuntimeTarget::Story);
    std::fs::write(&session, text).expect("same text");
    let followed = studio
        .follow(&mut watcher, Duration::from_secs(10), LiveStudio::GRACE)
        .expect("a batch");
    assert!(followed.entry.is_none(), "{:?}", followed.entry);
    std::fs::write(&session, text.replace("id: s", "id: t")).expect("edit");
    let entry = studio
        .follow(&mut watcher, Duration::from_secs(10), LiveStudio::GRACE)
        .and_then(|f| f.entry)
        .expect("a reload");
    assert!(entry.session_reloaded);
}

#[test]
fn a_save_in_steps_across_two_plugins_ends_in_one_entry_against_the_state_before_it() {
    // Step one: `note` gets new text and `other` a half-written entry, as one batch; the grace
    // period waits, and step two completes `other`. The entry names both as replaced and diffs
    // both against the preview before the save, although `note` was loaded in the first step.
    // The first batch is handed over directly (the watcher starts after its writes), so how a
    // loaded machine splits the writes into batches cannot change what is tested.
    let dir = tempfile::tempdir().expect("tempdir");
    folder(dir.path());
    pure_plugin(dir.path(), "other", "steady");
    let ws = Workspace::open(dir.path(), None, &Limits::default()).expect("opens");
    let mut studio = LiveStudio::new(ws, RuntimeTarget::Story);
    let note = dir.path().join("note/server/index.js");
    let other = dir.path().join("other/server/index.js");
    std::fs::write(&note, GOOD.replace("VERSION", "two")).expect("note");
    let full = GOOD
        .replace("\"note\"", "\"other\"")
        .replace("VERSION", "moved");
    std::fs::write(&other, &full[..full.len() / 2]).expect("half");
    let mut watcher = FolderWatcher::new(dir.path(), None, FolderWatcher::SETTLE).expect("watcher");
    let first = covel_studio::live::Batch {
        paths: vec![note, other.clone()],
        first_event: std::time::Instant::now(),
        note: None,
        rescan: false,
    };
    let writer = std::thread::spawn(move || {
        // Well after the first step's reload, well within the grace period.
        std::thread::sleep(Duration::from_millis(300));
        std::fs::write(&other, &full).expect("whole");
    });
    let entry = studio
        .follow_batch(first, &mut watcher, Duration::from_secs(5))
        .entry
        .expect("a reload");
    writer.join().expect("writer");
    assert!(entry.diagnostics.is_empty(), "{:?}", entry.diagnostics);
    assert_eq!(entry.plugins.get("note"), Some(&PluginReload::Replaced));
    assert_eq!(entry.plugins.get("other"), Some(&PluginReload::Replaced));
    let changed: Vec<&str> = entry
        .diff
        .segments
        .iter()
        .map(|c| c.plugin.as_str())
        .collect();
    assert!(
        changed.contains(&"note") && changed.contains(&"other"),
        "both plugins' segments changed: {:?}",
        entry.diff.segments
    );
    assert_eq!(
        studio.last_reload().map(|e| e.plugins.clone()),
        Some(entry.plugins.clone())
    );
}

/// The workspace keeps its resolution when a reload changed nothing the resolver reads; each
/// thing it does read still resolves again.
#[test]
fn a_reload_resolves_again_exactly_when_a_manifest_or_load_outcome_changed() {
    let dir = tempfile::tempdir().expect("tempdir");
    pure_plugin(dir.path(), "alpha", "a");
    pure_plugin(dir.path(), "beta", "b");
    let mut ws = Workspace::open(dir.path(), None, &Limits::default()).expect("opens");
    let both = ws.resolution.clone();
    assert!(
        both.is_active("alpha") && both.is_active("beta"),
        "{both:?}"
    );
    let reload = |ws: &mut Workspace, edit: &dyn Fn(&Path)| {
        edit(&dir.path().join("beta"));
        ws.reload_plugin("beta");
        ws.resolve();
        ws.resolution.clone()
    };
    let manifest = |extra: &'static str| {
        move |beta: &Path| {
            let text = format!(
                "---\nid: beta\nkind: plugin\ndescription: A pure provider.\n{extra}contributes:\n  extensions:\n    - {{ point: prompt.segment@1, id: beta }}\n---\n"
            );
            std::fs::write(beta.join("PLUGIN.md"), text).expect("manifest");
        }
    };
    // A manifest that needs what nobody provides: beta is rejected.
    let needs = reload(&mut ws, &manifest("requires:\n  - nobody.provides@1\n"));
    assert!(
        !needs.is_active("beta") && needs.is_active("alpha"),
        "{needs:?}"
    );
    // Only the handler's code changed: the same resolution.
    let code = |beta: &Path| {
        std::fs::write(
            beta.join("server/index.js"),
            GOOD.replace("\"note\"", "\"beta\"")
                .replace("VERSION", "b2"),
        )
        .expect("entry")
    };
    assert_eq!(reload(&mut ws, &code), needs);
    // The requirement is gone: beta is active again.
    assert_eq!(reload(&mut ws, &manifest("")), both);
    // A load that fails makes it inactive; the fix activates it again.
    let broken = reload(&mut ws, &|beta: &Path| {
        std::fs::write(
            beta.join("server/index.js"),
            "export default function (covel) {",
        )
        .expect("entry")
    });
    assert!(
        broken.is_active("beta"),
        "a failed reload keeps the last good version: {broken:?}"
    );
    ws.session.plugins.excluded = vec!["beta".into()];
    ws.resolve();
    assert!(!ws.resolution.is_active("beta"), "{:?}", ws.resolution);
    ws.session.plugins.excluded.clear();
    ws.resolve();
    assert_eq!(ws.resolution, both);
}

#[test]
fn after_a_played_turn_the_confirmation_runs_the_new_previews_calls_not_the_turns() {
    let dir = tempfile::tempdir().expect("tempdir");
    pure_plugin(dir.path(), "one", "steady");
    pure_plugin(dir.path(), "two", "steady");
    let (mut studio, _watcher) = studio(dir.path());
    assert_eq!(
        studio.confirm_memo(),
        4,
        "the preview at opening ran each provider once for this turn and once for the next"
    );
    assert!(!studio.needs_confirming());
    studio.play_turn("I swim.");
    // The new preview's turn was the old one's next turn: answered from the memo. Its own next
    // turn is new, so those calls ran once, and they are what is confirmed; the played turn's
    // calls (its player message) also ran once but are never asked again, so they are not.
    assert!(
        studio.preview().calls.iter().all(|c| c.cached),
        "the turn shown was confirmed as the next turn"
    );
    assert!(studio.needs_confirming(), "the next turn's calls ran once");
    assert_eq!(studio.confirm_memo(), 2);
    assert!(!studio.needs_confirming());
}

/// Writes a plugin whose segment providers have the given ids and orders (each says `text`).
fn ordered_plugin(dir: &Path, name: &str, providers: &[(&str, i64)], text: &str) {
    let plugin = dir.join(name);
    std::fs::create_dir_all(plugin.join("server")).expect("mkdir");
    let decls: String = providers
        .iter()
        .map(|(id, order)| {
            format!("    - {{ point: prompt.segment@1, id: {id}, order: {order} }}\n")
        })
        .collect();
    std::fs::write(
        plugin.join("PLUGIN.md"),
        format!("---\nid: {name}\nkind: plugin\ndescription: Ordered providers.\ncontributes:\n  extensions:\n{decls}---\n"),
    )
    .expect("manifest");
    let calls: String = providers
        .iter()
        .map(|(id, order)| {
            format!("  covel.provideExtension(\"prompt.segment@1\", \"{id}\", {{ order: {order}, handler: () => [{{ id: \"{id}\", content: \"{text}\", position: \"system\", audience: \"story\", volatility: \"stable\" }}] }});\n")
        })
        .collect();
    std::fs::write(
        plugin.join("server/index.js"),
        format!("export default function (covel) {{\n{calls}}}\n"),
    )
    .expect("entry");
}

/// The call order a scope of calls uses, as `plugin/provider`.
fn call_order(ws: &Workspace) -> Vec<String> {
    ws.calls()
        .providers()
        .iter()
        .map(|p| format!("{}/{}", p.plugin_id, p.decl.id))
        .collect()
}

/// The call order sorting the active providers again gives.
fn sorted_again(ws: &Workspace) -> Vec<String> {
    let mut providers = ws.active_providers();
    covel_kernel::runner::presort_providers(&mut providers);
    providers
        .iter()
        .map(|p| format!("{}/{}", p.plugin_id, p.decl.id))
        .collect()
}

/// A reload keeps the call order it had and puts the reloaded plugin's new providers where its
/// old ones stood (without sorting the folder again) only while that is exactly the order a new
/// sort gives: a changed declaration sorts again.
#[test]
fn after_a_reload_the_call_order_is_the_one_sorting_again_gives_and_calls_the_new_code() {
    let dir = tempfile::tempdir().expect("tempdir");
    ordered_plugin(dir.path(), "alpha", &[("a-late", 9), ("a-early", -3)], "a");
    ordered_plugin(
        dir.path(),
        "beta",
        &[("b-mid", 0), ("b-first", -5), ("b-last", 20)],
        "one",
    );
    ordered_plugin(dir.path(), "gamma", &[("g", 0)], "g");
    let mut ws = Workspace::open(dir.path(), None, &Limits::default()).expect("opens");
    let opened = call_order(&ws);
    assert_eq!(
        opened,
        [
            "beta/b-first",
            "alpha/a-early",
            "beta/b-mid",
            "gamma/g",
            "alpha/a-late",
            "beta/b-last"
        ],
        "order, then plugin id, then provider id"
    );
    let contents = |ws: &Workspace| -> Vec<String> {
        let run = ws.calls().segments(
            serde_json::json!({"turnId": "t1", "playerMessage": "hi"}),
            None,
        );
        run.parts
            .iter()
            .filter(|part| &*part.plugin_id == "beta")
            .flat_map(|part| part.output.as_array().cloned().unwrap_or_default())
            .map(|segment| segment["content"].as_str().unwrap_or_default().to_string())
            .collect()
    };
    assert_eq!(contents(&ws), ["one", "one", "one"]);

    // Only the handler's code changed: the same order, now calling the new code.
    ordered_plugin(
        dir.path(),
        "beta",
        &[("b-mid", 0), ("b-first", -5), ("b-last", 20)],
        "two",
    );
    assert_eq!(ws.reload_plugin("beta"), PluginReload::Replaced);
    ws.resolve();
    assert_eq!(call_order(&ws), opened);
    assert_eq!(call_order(&ws), sorted_again(&ws));
    assert_eq!(
        contents(&ws),
        ["two", "two", "two"],
        "the new providers run"
    );

    // A declaration's order changed: sorted again.
    ordered_plugin(
        dir.path(),
        "beta",
        &[("b-mid", 0), ("b-first", 50), ("b-last", 20)],
        "three",
    );
    ws.reload_plugin("beta");
    ws.resolve();
    assert_eq!(
        call_order(&ws),
        [
            "alpha/a-early",
            "beta/b-mid",
            "gamma/g",
            "alpha/a-late",
            "beta/b-last",
            "beta/b-first"
        ]
    );
    assert_eq!(call_order(&ws), sorted_again(&ws));

    // A provider more, and one fewer in another reload: sorted again each time.
    ordered_plugin(
        dir.path(),
        "beta",
        &[("b-mid", 0), ("b-first", 50), ("b-last", 20), ("b-new", 1)],
        "four",
    );
    ws.reload_plugin("beta");
    ws.resolve();
    assert_eq!(call_order(&ws), sorted_again(&ws));
    assert!(call_order(&ws).contains(&"beta/b-new".to_string()));
    ordered_plugin(dir.path(), "beta", &[("b-new", 1)], "five");
    ws.reload_plugin("beta");
    ws.resolve();
    assert_eq!(call_order(&ws), sorted_again(&ws));
    assert_eq!(contents(&ws), ["five"]);

    // Between a reload and the next resolve, calls never reach the replaced runtime.
    ordered_plugin(dir.path(), "beta", &[("b-new", 1)], "six");
    ws.reload_plugin("beta");
    assert_eq!(contents(&ws), ["six"]);
}
