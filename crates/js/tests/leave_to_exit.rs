//! `leave_runtimes_to_exit` (a process-wide switch, hence a test binary of its own): after it,
//! a plugin that closes still runs its disposers, and its runtime's memory stays for the
//! process's exit instead of being freed; before it, closing frees everything.

use std::path::Path;

fn plugin(root: &Path, id: &str) -> std::path::PathBuf {
    let folder = root.join(id);
    std::fs::create_dir_all(folder.join("server")).expect("folder");
    std::fs::write(
        folder.join("PLUGIN.md"),
        format!(
            "---\nid: {id}\nkind: plugin\nversion: 0.1.0\ndescription: Closes.\nentry: ./server/index.js\ncontributes:\n  extensions:\n    - point: prompt.segment@1\n      id: note\n---\n"
        ),
    )
    .expect("manifest");
    std::fs::write(
        folder.join("server/index.js"),
        "export default function (covel) {\n  covel.onDispose(() => {});\n  covel.provideExtension(\"prompt.segment@1\", \"note\", { handler: () => [] });\n}\n",
    )
    .expect("entry");
    folder
}

fn closed(folder: &Path) -> covel_js::RuntimeWatch {
    let loaded = covel_js::load_plugin(folder, &covel_js::Limits::default());
    assert!(loaded.ok(), "{:?}", loaded.diagnostics);
    let watch = loaded
        .instance
        .as_ref()
        .and_then(|instance| instance.watch())
        .expect("a running plugin");
    assert!(watch.bytes_held() > 0);
    covel_js::close_plugins(vec![loaded]);
    assert!(watch.is_shut_down());
    assert_eq!(watch.disposers_run(), 1, "its disposer ran");
    watch
}

#[test]
fn after_leave_runtimes_to_exit_a_closed_plugin_is_disposed_and_its_memory_left_to_the_exit() {
    let root = tempfile::tempdir().expect("temp");
    let freed = closed(&plugin(root.path(), "freed"));
    assert_eq!(freed.bytes_held(), 0, "closing frees the runtime");

    covel_js::engine::leave_runtimes_to_exit();
    let left = closed(&plugin(root.path(), "left"));
    assert!(
        left.bytes_held() > 0,
        "the runtime was freed although the process is about to exit"
    );
}
