//! Loading plugin folders into running plugins: static checks (covel-kernel), the entry in its
//! own QuickJS runtime, then the declared-versus-registered check. One bad plugin never stops
//! the others, and every plugin's load runs in parallel with the rest.

use crate::engine::{self, Engine, Limits, LoadReport, LoadSpec};
use covel_kernel::diagnostic::{Code, Diagnostic};
use covel_kernel::package::{self, Package};
use covel_kernel::registration::{self, Registrations};
use covel_kernel::runner::{Invoker, Provider, ProviderCall};
use covel_kernel::static_prompt::StaticPrompt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A plugin whose entry runs in its own QuickJS runtime. Its calls run one at a time on the
/// caller's thread; the runner calls different plugins from several threads at once (collect
/// mode), so different plugins answer in parallel.
pub struct JsPlugin {
    engine: Arc<Mutex<Engine>>,
    /// The engine's memo generation, read without its lock ([`Invoker::memo_generation`]).
    memo_generation: Arc<std::sync::atomic::AtomicU64>,
}

/// What a call of a runtime that failed earlier (its lock poisoned) answers.
fn shut_down() -> covel_kernel::runner::CallReport {
    covel_kernel::runner::CallReport {
        result: Err(covel_kernel::runner::ProviderFailure {
            kind: covel_kernel::runner::FailureKind::Unavailable,
            message: "the plugin's runtime failed earlier and was shut down".into(),
        }),
        duration: Duration::ZERO,
        logs: Vec::new(),
        notes: Vec::new(),
        cached: false,
        ran: None,
        not_cached: None,
    }
}

impl Invoker for JsPlugin {
    fn call(&self, call: &ProviderCall) -> covel_kernel::runner::CallReport {
        match self.engine.lock() {
            Ok(mut engine) => engine.call(call),
            Err(_) => shut_down(),
        }
    }

    fn call_handler(
        &self,
        call: &covel_kernel::runner::HandlerCall,
    ) -> covel_kernel::runner::CallReport {
        match self.engine.lock() {
            Ok(mut engine) => engine.call_handler(call),
            Err(_) => shut_down(),
        }
    }

    /// A runtime that failed (its lock poisoned) answers nothing from its memo any more.
    fn memo_generation(&self) -> Option<u64> {
        (!self.engine.is_poisoned()).then(|| {
            self.memo_generation
                .load(std::sync::atomic::Ordering::Acquire)
        })
    }
}

impl JsPlugin {
    /// A handle on this plugin's runtime that reports its shutdown once it is dropped.
    pub fn watch(&self) -> Option<crate::engine::RuntimeWatch> {
        self.engine.lock().ok().map(|engine| engine.watch())
    }

    /// Whether the engine keeps calls [`JsPlugin::confirm_memo`] would run. An engine busy with a
    /// call says no rather than wait for it (the shells ask again on their next quiet moment).
    pub fn has_unconfirmed(&self) -> bool {
        self.engine
            .try_lock()
            .is_ok_and(|engine| engine.has_unconfirmed())
    }

    /// Forgets the calls [`JsPlugin::confirm_memo`] would run.
    pub fn forget_unconfirmed(&self) {
        if let Ok(mut engine) = self.engine.lock() {
            engine.forget_unconfirmed();
        }
    }

    /// Runs again the calls that await their second answer ([`crate::engine::Engine::confirm_memo`]);
    /// returns how many ran.
    pub fn confirm_memo(&self) -> usize {
        self.engine
            .lock()
            .map_or(0, |mut engine| engine.confirm_memo())
    }
}

/// One plugin folder after loading.
pub struct LoadedPlugin {
    /// The folder name (the plugin id when the manifest is valid).
    pub name: String,
    pub folder: PathBuf,
    /// The statically valid package, even when the entry failed.
    pub package: Option<Package>,
    /// What a statically invalid manifest declares (never run; for the resolver's messages).
    pub declared: Option<covel_kernel::manifest::Manifest>,
    /// The running plugin, when everything succeeded.
    pub instance: Option<Arc<JsPlugin>>,
    pub registrations: Registrations,
    /// Files of the entry's module graph.
    pub modules: Vec<PathBuf>,
    pub diagnostics: Vec<Diagnostic>,
    /// Hints that do not stop the plugin (e.g. row-shaped `pluginData` reads), with positions.
    pub hints: Vec<Diagnostic>,
    pub load_time: Duration,
    /// Which load this is: unique in the process, so a reload (even of the same bytes) has
    /// another. What is derived from a loaded plugin can be kept under it.
    pub load_id: u64,
    /// Built once from the above (empty unless the plugin loaded cleanly).
    providers: Vec<Provider>,
}

static NEXT_LOAD: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

impl LoadedPlugin {
    /// Whether the plugin loaded cleanly and its providers can run.
    pub fn ok(&self) -> bool {
        self.diagnostics.is_empty() && self.package.is_some()
    }

    /// The plugin's providers (declared extensions and the static prompt), when it loaded.
    pub fn providers(&self) -> &[Provider] {
        &self.providers
    }
}

/// The providers of a loaded plugin, built once: previews copy them, which is a few reference
/// counts per provider.
fn providers_of(package: Option<&Package>, instance: Option<&Arc<JsPlugin>>) -> Vec<Provider> {
    let Some(package) = package else {
        return Vec::new();
    };
    let runtime_ids = Arc::new(package.manifest.runtime_ids());
    let mut out: Vec<Provider> = match instance {
        Some(instance) => package
            .manifest
            .extensions
            .iter()
            .map(|decl| Provider {
                plugin_id: package.id().to_string(),
                decl: Arc::new(decl.clone()),
                runtime_ids: Arc::clone(&runtime_ids),
                invoker: Arc::clone(instance) as Arc<dyn Invoker>,
                checked: Default::default(),
                settled: Default::default(),
            })
            .collect(),
        None => Vec::new(),
    };
    out.extend(StaticPrompt::provider(package));
    out
}

/// Loads every plugin folder of a plugins folder.
pub fn load_folder(plugins_dir: &Path, limits: &Limits) -> std::io::Result<Vec<LoadedPlugin>> {
    let folders = package::discover(plugins_dir)?;
    Ok(load_plugins(&folders, limits))
}

/// Loads the given plugin folders, in parallel across the machine's cores.
pub fn load_plugins(folders: &[PathBuf], limits: &Limits) -> Vec<LoadedPlugin> {
    load_plugins_with(folders, limits, |_| ())
        .into_iter()
        .map(|(plugin, ())| plugin)
        .collect()
}

/// Loads the given plugin folders like [`load_plugins`], running `before` on each folder in the
/// worker that loads it, just before its load (the studio digests each folder's bytes there,
/// so the digest is never newer than what the load read).
pub fn load_plugins_with<T: Send>(
    folders: &[PathBuf],
    limits: &Limits,
    before: impl Fn(&Path) -> T + Sync,
) -> Vec<(LoadedPlugin, T)> {
    let started = Instant::now();
    // Past the folder's budget, each remaining entry gets only a short load limit.
    let limits_now = || {
        let left = limits.folder_load_budget.saturating_sub(started.elapsed());
        Limits {
            load_timeout: limits
                .load_timeout
                .min(left.max(Duration::from_millis(150))),
            ..limits.clone()
        }
    };
    let workers = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .min(folders.len())
        .max(1);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let slots: Vec<Mutex<Option<(LoadedPlugin, T)>>> =
        folders.iter().map(|_| Mutex::new(None)).collect();
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(folder) = folders.get(i) else { break };
                    let seen = before(folder);
                    let loaded = load_plugin(folder, &limits_now());
                    if let Ok(mut slot) = slots[i].lock() {
                        *slot = Some((loaded, seen));
                    }
                }
            });
        }
    });
    slots
        .into_iter()
        .filter_map(|slot| slot.into_inner().ok().flatten())
        .collect()
}

/// Closes plugins — each disposed and its runtime freed — across the machine's cores. Closing
/// is a runtime's whole heap walked and returned (about 0.1 ms each), so a 500-plugin folder
/// closed one runtime after another took 60 ms. A plugin whose runtime is still shared (a call
/// in flight holds it) closes when that last holder lets go.
pub fn close_plugins(plugins: Vec<LoadedPlugin>) {
    use rayon::prelude::*;
    plugins.into_par_iter().for_each(drop);
}

/// Loads one plugin folder.
pub fn load_plugin(folder: &Path, limits: &Limits) -> LoadedPlugin {
    let begun = Instant::now();
    let load = package::load_package(folder);
    let ran = load.package.as_ref().and_then(|package| {
        let entry = package.entry_path()?;
        Some(engine::load(&LoadSpec {
            plugin_id: package.id().to_string(),
            root: package.root.clone(),
            entry,
            messages: package.messages.clone(),
            limits: limits.clone(),
        }))
    });
    finish(begun, load, ran)
}

fn finish(
    begun: Instant,
    load: package::PackageLoad,
    ran: Option<(Option<Engine>, LoadReport)>,
) -> LoadedPlugin {
    let mut diagnostics = load.diagnostics;
    let mut registrations = Registrations::default();
    let mut modules = Vec::new();
    let mut sources = Vec::new();
    let mut instance = None;
    if let Some(package) = &load.package {
        let manifest_file = PathBuf::from(&load.name).join("PLUGIN.md");
        let engine = match ran {
            Some((engine, report)) => {
                modules = report.modules;
                sources = report.sources;
                registrations = report.registrations;
                if let Some(failure) = report.failure {
                    let file = failure
                        .file
                        .as_deref()
                        .and_then(|f| shown_path(&load.folder, &load.name, f))
                        .or_else(|| {
                            package
                                .manifest
                                .entry
                                .as_ref()
                                .map(|e| PathBuf::from(&load.name).join(e))
                        })
                        .unwrap_or_else(|| manifest_file.clone());
                    diagnostics.push(
                        Diagnostic::new(failure.code, failure.message)
                            .plugin(&load.name)
                            .file(file)
                            .at_opt(failure.position),
                    );
                }
                engine
            }
            None => None,
        };
        if diagnostics.is_empty() {
            diagnostics.extend(registration::check(
                &package.manifest,
                &registrations,
                &manifest_file,
            ));
        }
        if diagnostics.is_empty() {
            instance = engine.map(|engine| {
                Arc::new(JsPlugin {
                    memo_generation: engine.memo_generation(),
                    engine: Arc::new(Mutex::new(engine)),
                })
            });
        }
    }
    let roots: Vec<String> = [load.folder.canonicalize().ok(), Some(load.folder.clone())]
        .into_iter()
        .flatten()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    for d in &mut diagnostics {
        if d.plugin.is_none() {
            d.plugin = Some(load.name.clone());
        }
        // Registration call sites name modules by absolute path, like engine messages.
        if let Some(shown) = d
            .file
            .as_deref()
            .filter(|f| f.is_absolute())
            .and_then(|f| shown_path(&load.folder, &load.name, f))
        {
            d.file = Some(shown);
        }
        // Engine messages name modules by absolute path; authors read them relative to the
        // plugins folder, and snapshots must not depend on where the checkout lives.
        for root in &roots {
            d.message = d.message.replace(root.as_str(), &load.name);
        }
    }
    if diagnostics.iter().any(|d| d.code == Code::Internal) {
        instance = None;
    }
    let mut hints = source_hints(&load.folder, &load.name, &sources);
    if let Some(package) = &load.package {
        hints.extend(template_hints(&load.name, &package.manifest));
    }
    let providers = if diagnostics.is_empty() {
        providers_of(load.package.as_ref(), instance.as_ref())
    } else {
        Vec::new()
    };
    LoadedPlugin {
        name: load.name,
        folder: load.folder,
        package: load.package,
        declared: load.declared,
        instance,
        registrations,
        modules,
        diagnostics,
        hints,
        load_time: begun.elapsed(),
        load_id: NEXT_LOAD.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        providers,
    }
}

/// Hints from reading the plugin's loaded modules as the loader read them (row-shaped
/// `pluginData` reads, imports of upstream's workspace packages).
fn source_hints(
    folder: &Path,
    name: &str,
    sources: &[crate::modules::LoadedModule],
) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for crate::modules::LoadedModule {
        path: module,
        source,
    } in sources
    {
        let file = || shown_path(folder, name, module).unwrap_or_else(|| module.clone());
        for read in crate::lint::row_shaped_reads(module, source) {
            out.push(
                Diagnostic::new(Code::RowShapedRead, read.message)
                    .plugin(name)
                    .file(file())
                    .at(read.line, read.column),
            );
        }
        for import in crate::lint::workspace_package_imports(module, source) {
            out.push(
                Diagnostic::new(Code::WorkspacePackageImport, import.message)
                    .plugin(name)
                    .file(file())
                    .at(import.line, import.column),
            );
        }
    }
    out
}

/// Placeholders of the PLUGIN.md body with a root the studio does not fill (they reach the
/// prompt as written), each at its line in PLUGIN.md.
fn template_hints(name: &str, manifest: &covel_kernel::manifest::Manifest) -> Vec<Diagnostic> {
    use covel_kernel::prompt::template;
    template::unknown_roots(&manifest.body)
        .into_iter()
        .map(|unknown| {
            Diagnostic::new(
                Code::UnknownTemplateRoot,
                format!(
                    "`{}` names `{}`, which the studio does not fill (only {}): it reaches the prompt as written",
                    unknown.placeholder,
                    unknown.root,
                    template::KNOWN_ROOTS.map(|r| format!("`{r}.…`")).join(" and ")
                ),
            )
            .plugin(name)
            .file(PathBuf::from(name).join("PLUGIN.md"))
            .at(
                manifest.body_first_line.saturating_add(unknown.line - 1),
                unknown.column,
            )
        })
        .collect()
}

/// Shows an engine-reported file relative to the plugins folder (`<plugin>/<path>`).
fn shown_path(folder: &Path, name: &str, file: &Path) -> Option<PathBuf> {
    let root = folder.canonicalize().ok()?;
    let relative = file.strip_prefix(&root).ok()?;
    Some(PathBuf::from(name).join(relative))
}
