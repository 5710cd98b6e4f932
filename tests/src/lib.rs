//! Helpers shared by the conformance suites: where fixtures live, loading a fixture folder,
//! running a point over it, and turning results into stable snapshot values. These helpers are
//! the only code that touches the crates' APIs, so a refactor changes them, not every test.

pub mod http_fake;
pub mod synthetic;

use covel_js::{Limits, LoadedPlugin, load_folder, load_plugins};
use covel_kernel::context::ExecutionContext;
use covel_kernel::contract::PointId;
use covel_kernel::runner::{
    self, CallReport, Invoker, Provider, ProviderCall, RunOptions, RunResult,
};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// `tests/fixtures/<name>`.
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(name)
}

/// Loads every plugin of a fixture plugins folder.
pub fn load(name: &str) -> Vec<LoadedPlugin> {
    load_folder(&fixture(name), &Limits::default()).expect("fixture folder exists")
}

/// Loads specific plugin folders (`"folder/plugin"` paths under fixtures).
pub fn load_some(paths: &[&str]) -> Vec<LoadedPlugin> {
    let folders: Vec<PathBuf> = paths.iter().map(|p| fixture(p)).collect();
    load_plugins(&folders, &Limits::default())
}

/// The providers of every cleanly loaded plugin.
pub fn providers(plugins: &[LoadedPlugin]) -> Vec<Provider> {
    plugins
        .iter()
        .flat_map(LoadedPlugin::providers)
        .cloned()
        .collect()
}

/// Runs a point over loaded plugins with an empty session context.
pub fn call(plugins: &[LoadedPlugin], point: PointId, input: Value) -> RunResult {
    runner::run(
        point,
        input,
        &providers(plugins),
        &ExecutionContext::empty(),
        &RunOptions::default(),
    )
}

/// The content of the prompt segment `id` a `prompt.segment@1` run answered.
pub fn segment_content(result: &RunResult, id: &str) -> Option<String> {
    result
        .result
        .as_array()
        .into_iter()
        .flatten()
        .find(|s| s["id"] == id)
        .and_then(|s| s["content"].as_str())
        .map(str::to_string)
}

/// A run as a snapshot value, with timings redacted.
pub fn snapshot_of(result: &RunResult) -> Value {
    let mut value = serde_json::to_value(result).expect("run results serialize");
    if let Some(calls) = value.get_mut("calls").and_then(Value::as_array_mut) {
        for call in calls {
            if let Some(map) = call.as_object_mut() {
                map.insert("durationMs".into(), json!("[ms]"));
            }
        }
    }
    value
}

/// Diagnostics of loaded plugins as a snapshot value: `{plugin: [{code, message, file, line, column}]}`.
pub fn diagnostics_of(plugins: &[LoadedPlugin]) -> Value {
    let mut out = serde_json::Map::new();
    for p in plugins {
        let diags = p
            .diagnostics
            .iter()
            .map(|d| {
                json!({
                    "code": d.code.as_str(),
                    "message": d.message,
                    "file": d.file.as_ref().map(|f| f.display().to_string()),
                    "line": d.line,
                    "column": d.column,
                })
            })
            .collect();
        out.insert(p.name.clone(), Value::Array(diags));
    }
    Value::Object(out)
}

/// A provider written in Rust, for kernel-level rules that need no JavaScript.
pub struct FnInvoker<F>(pub F);

impl<F> Invoker for FnInvoker<F>
where
    F: Fn(&ProviderCall) -> Result<Value, String> + Send + Sync,
{
    fn call(&self, call: &ProviderCall) -> CallReport {
        let result = (self.0)(call).map_err(|message| covel_kernel::runner::ProviderFailure {
            kind: covel_kernel::runner::FailureKind::Error,
            message,
        });
        CallReport {
            result: result.map(Arc::new),
            duration: Duration::from_micros(1),
            logs: Vec::new(),
            notes: Vec::new(),
            cached: false,
            ran: None,
            not_cached: None,
        }
    }
}

/// Builds a Rust provider for a point.
pub fn rust_provider(
    plugin_id: &str,
    point: PointId,
    id: &str,
    order: i64,
    handler: impl Fn(&ProviderCall) -> Result<Value, String> + Send + Sync + 'static,
) -> Provider {
    Provider {
        plugin_id: plugin_id.to_string(),
        decl: Arc::new(covel_kernel::manifest::ExtensionDecl::new(point, id, order)),
        runtime_ids: Arc::new(Vec::new()),
        invoker: Arc::new(FnInvoker(handler)),
        checked: Default::default(),
        settled: Default::default(),
    }
}

/// Replaces every duration in a preview (or any value) with a placeholder, for snapshots.
pub fn redact_timings(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, item) in map.iter_mut() {
                if key == "durationMs" || key == "timings" || key.ends_with("Ms") {
                    *item = json!("[ms]");
                } else {
                    redact_timings(item);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(redact_timings),
        _ => {}
    }
}

/// Copies a folder recursively (tests edit copies of plugin folders, never the originals).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create the target folder");
    for entry in std::fs::read_dir(from)
        .expect("read the source folder")
        .flatten()
    {
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy a file");
        }
    }
}

/// Every file under a folder with its bytes, by path relative to it (to check that a command
/// left a folder as it found it).
pub fn files_under(dir: &Path) -> std::collections::BTreeMap<PathBuf, Vec<u8>> {
    fn walk(root: &Path, at: &Path, out: &mut std::collections::BTreeMap<PathBuf, Vec<u8>>) {
        for entry in std::fs::read_dir(at).expect("read a folder").flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let bytes = std::fs::read(&path).expect("read a file");
                let relative = path.strip_prefix(root).expect("under the folder");
                out.insert(relative.to_path_buf(), bytes);
            }
        }
    }
    let mut out = std::collections::BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// A playtest of the turn-loop fixtures (`fixtures/turn-loop`) over a session `NAME.session.yaml`
/// written in `dir`: the guard plugin in `mode`, the stage at the harbour, two history
/// messages, and `models` (YAML, may be empty) appended.
pub fn turn_loop_playtest(
    dir: &Path,
    name: &str,
    mode: &str,
    models: &str,
) -> covel_studio::playtest::Playtest {
    let session = dir.join(format!("{name}.session.yaml"));
    let text = format!(
        "id: {name}\nsettings:\n  guard: {{ mode: {mode} }}\npluginData:\n  - {{ pluginId: stage, namespace: stage, key: current, value: {{ sceneId: harbour, name: The Harbour }} }}\nhistory:\n  messages:\n    - {{ role: user, content: I arrive. }}\n    - {{ role: assistant, content: The harbour is quiet. }}\n{models}"
    );
    std::fs::write(&session, text).expect("session written");
    let ws = covel_studio::workspace::Workspace::open(
        &fixture("turn-loop"),
        Some(&session),
        &Limits::default(),
    )
    .expect("the fixture session opens");
    assert!(
        ws.plugins.iter().all(|p| p.diagnostics.is_empty()),
        "fixtures load cleanly"
    );
    covel_studio::playtest::Playtest::new(ws)
}

/// A file generated from the code and committed (a schema, the UI's types) says what the code
/// generates now: with the environment variable `update` set it is written, else a stale one
/// fails with `how_to_update`.
pub fn assert_generated_file_is_fresh(path: &Path, fresh: &str, update: &str, how_to_update: &str) {
    if std::env::var_os(update).is_some() {
        std::fs::write(path, fresh)
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
    }
    assert_eq!(
        std::fs::read_to_string(path).unwrap_or_default(),
        fresh,
        "{} is stale: {how_to_update}",
        path.display()
    );
}
