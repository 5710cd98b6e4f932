//! Reloading at the speed of the save: an editor's save in steps (a truncated or half-written
//! file, then the whole file) gives one reload without a bogus syntax error; a file that stays
//! broken is reported once the grace period passes, and the last good version keeps running.

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
    let watcher = FolderWatcher::new(dir, None, Duration::from_millis(10)).expect("watcher");
    (LiveStudio::new(ws, RuntimeTarget::Story), watcher)
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
    let followed = studio
        .follow(
            &mut watcher,
            Duration::from_secs(10),
            Duration::from_millis(400),
        )
        .expect("a batch");
    writer.join().expect("writer");
    let entry = followed.entry.expect("a reload");
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
    assert!(studio.preview.segments.iter().any(|s| s.content == "two"));
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
        studio.preview.segments.iter().any(|s| s.content == "one"),
        "the last good version runs"
    );
}
