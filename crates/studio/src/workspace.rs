//! A workspace: one plugins folder, its loaded plugins, one test session, and the session's
//! resolution. Everything a preview or a call needs is derived from here.

use crate::fingerprint::{self, Fingerprint};
use crate::resolve_inputs::{CallOrder, ResolveInputs};
use covel_js::{Limits, LoadedPlugin, load_plugins_with};
use covel_kernel::context::{ExecutionContext, SessionView};
use covel_kernel::contract::{PointId, SlotId};
use covel_kernel::diagnostic::Diagnostic;
use covel_kernel::resolver::Resolution;
use covel_kernel::runner::{self, Provider, RunOptions, RunRequest, RunResult};
use covel_kernel::session::{self, Session};
use covel_kernel::slot_host::{self, SlotView};
use serde_json::{Map, Value};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use covel_kernel::world::{DIMENSIONS_CONTRACT, DIMENSIONS_NAMESPACE};

/// Why a workspace could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum WorkspaceError {
    #[error("cannot read plugins folder {path}: {source}")]
    PluginsFolder {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot read the session file: {0}")]
    SessionFile(covel_kernel::files::FileRefusal),
    #[error("invalid session file {0}")]
    Session(Diagnostic),
}

impl WorkspaceError {
    /// The error as a diagnostic with the file and, for a session that does not parse, the line
    /// and column: what the app shows when a folder or session cannot be opened.
    pub fn diagnostic(&self) -> Diagnostic {
        match self {
            WorkspaceError::PluginsFolder { path, .. } => {
                Diagnostic::new(covel_kernel::Code::MissingFile, self.to_string()).file(path)
            }
            WorkspaceError::SessionFile(refusal) => {
                // A session is no manifest: a missing one is a missing file, an unreadable one
                // an unreadable file.
                let code = match refusal {
                    covel_kernel::files::FileRefusal::Unreadable(path, _)
                        if std::fs::symlink_metadata(path).is_err() =>
                    {
                        covel_kernel::Code::MissingFile
                    }
                    covel_kernel::files::FileRefusal::Unreadable(..) => {
                        covel_kernel::Code::FileUnreadable
                    }
                    other => other.code(),
                };
                Diagnostic::new(code, self.to_string()).file(refusal.path())
            }
            WorkspaceError::Session(diagnostic) => diagnostic.clone(),
        }
    }
}

/// A plugins folder with a test session.
pub struct Workspace {
    pub plugins_dir: PathBuf,
    pub session_path: Option<PathBuf>,
    pub session: Session,
    /// The session file's text as the author wrote it (as last read or written by the studio),
    /// also when it does not parse: the Session panel edits this text, never a re-serialization.
    pub session_text: Option<String>,
    pub plugins: Vec<LoadedPlugin>,
    pub resolution: Resolution,
    /// Plugins whose latest reload failed: they keep running their last good version, marked
    /// with the diagnostics of the failed one, until a good version arrives.
    pub reload_failures: BTreeMap<String, Vec<Diagnostic>>,
    /// The last session-file reload error (the previous session stays in use).
    pub session_error: Option<Diagnostic>,
    /// What the session says that the plugins do not declare (unknown plugins and setting keys,
    /// values of the wrong type), found when the session is resolved.
    pub session_problems: Vec<Diagnostic>,
    pub limits: Limits,
    /// Each plugin folder's bytes as its latest load attempt read them (taken just before it),
    /// by folder name: a reload of a folder that still holds the same bytes is skipped.
    fingerprints: BTreeMap<String, Fingerprint>,
    /// The request `resolution` answers. The resolver is a function of its request, so a
    /// reload that changed no manifest, load outcome or session selection (the usual save: a
    /// handler's code) keeps the resolution instead of resolving the folder again.
    resolve_inputs: ResolveInputs,
    /// The active providers in call order as of the last `resolve` (every scope of calls shares
    /// them). After a plugin reloads it is out of date until the next `resolve`, which brings it
    /// up to date from what it was ([`CallOrder::after_reload`]).
    call_order: Option<CallOrder>,
    /// Whether `call_order` is as of the plugins now loaded.
    call_order_current: bool,
    /// The last session view handed out: a new view whose data reads the same is this one again
    /// ([`Workspace::session_view`]).
    last_view: std::sync::Mutex<Option<Arc<SessionView>>>,
    /// The segments the last previews read from provider outputs, taken again for the outputs
    /// the memo hands out again (each preview starts a generation of them).
    segment_reads: covel_kernel::prompt::SegmentReads,
    /// Token counts of every text counted for this folder (previews, panels, forecasts).
    pub counter: crate::tokens::TokenCounter,
}

impl Drop for Workspace {
    /// Closing a folder closes its plugins in parallel (see [`covel_js::close_plugins`]).
    fn drop(&mut self) {
        covel_js::close_plugins(std::mem::take(&mut self.plugins));
    }
}

impl Workspace {
    /// Loads every plugin of the folder and the session (an empty one when none is given).
    pub fn open(
        plugins_dir: &Path,
        session_path: Option<&Path>,
        limits: &Limits,
    ) -> Result<Workspace, WorkspaceError> {
        let (session, session_text) = match session_path {
            Some(path) => {
                let text = read_session_text(path).map_err(WorkspaceError::SessionFile)?;
                (
                    session::parse_session(&text, path).map_err(WorkspaceError::Session)?,
                    Some(text),
                )
            }
            None => (
                Session {
                    id: "studio".into(),
                    locale: "en".into(),
                    ..Session::default()
                },
                None,
            ),
        };
        let folders = covel_kernel::package::discover(plugins_dir).map_err(|source| {
            WorkspaceError::PluginsFolder {
                path: plugins_dir.to_path_buf(),
                source,
            }
        })?;
        // Each folder's digest is taken just before its load reads it: a write in between makes
        // the next event reload (the digest is older than the load), never skip a change.
        let mut fingerprints = BTreeMap::new();
        let plugins = load_plugins_with(&folders, limits, fingerprint::of_folder)
            .into_iter()
            .map(|(plugin, seen)| {
                if let Some(digest) = seen {
                    fingerprints.insert(plugin.name.clone(), digest);
                }
                plugin
            })
            .collect();
        let mut workspace = Workspace {
            plugins_dir: plugins_dir.to_path_buf(),
            session_path: session_path.map(Path::to_path_buf),
            session,
            session_text,
            plugins,
            resolution: Resolution::default(),
            reload_failures: BTreeMap::new(),
            session_error: None,
            session_problems: Vec::new(),
            limits: limits.clone(),
            fingerprints,
            resolve_inputs: ResolveInputs::default(),
            call_order: None,
            call_order_current: false,
            last_view: std::sync::Mutex::new(None),
            segment_reads: Default::default(),
            counter: Default::default(),
        };
        workspace.resolve();
        tracing::info!(
            plugins_dir = %plugins_dir.display(),
            plugins = workspace.plugins.len(),
            active = workspace.active_plugins().count(),
            "workspace opened"
        );
        Ok(workspace)
    }

    /// Reloads one plugin folder (by folder name). A good new version replaces the running one
    /// (whose runtime shuts down); a broken one is recorded and the last good version keeps
    /// running. A folder that is gone is unloaded; a new folder is loaded. A folder whose bytes
    /// are all as its last load attempt read them is left as it is (`Unchanged`: its runtime and
    /// memo stay). Returns what happened to the plugin.
    pub fn reload_plugin(&mut self, name: &str) -> PluginReload {
        self.call_order_current = false;
        let folder = self.plugins_dir.join(name);
        let index = self.plugins.iter().position(|p| p.name == name);
        if !folder.join("PLUGIN.md").is_file() {
            self.fingerprints.remove(name);
            self.reload_failures.remove(name);
            return match index {
                Some(i) => {
                    self.plugins.remove(i);
                    PluginReload::Removed
                }
                None => PluginReload::Unchanged,
            };
        }
        let now = fingerprint::of_folder(&folder);
        if index.is_some() && now.is_some() && self.fingerprints.get(name) == now.as_ref() {
            return PluginReload::Unchanged;
        }
        match now {
            Some(now) => self.fingerprints.insert(name.to_string(), now),
            None => self.fingerprints.remove(name),
        };
        let fresh = covel_js::load_plugin(&folder, &self.limits);
        match index {
            None => {
                let ok = fresh.ok();
                self.plugins.push(fresh);
                self.plugins.sort_by(|a, b| a.name.cmp(&b.name));
                if ok {
                    PluginReload::Added
                } else {
                    PluginReload::Failed
                }
            }
            Some(i) if fresh.ok() || !self.plugins[i].ok() => {
                self.reload_failures.remove(name);
                let ok = fresh.ok();
                self.plugins[i] = fresh;
                if ok {
                    PluginReload::Replaced
                } else {
                    PluginReload::Failed
                }
            }
            Some(_) => {
                self.reload_failures
                    .insert(name.to_string(), fresh.diagnostics.clone());
                PluginReload::KeptLastGood
            }
        }
    }

    /// Forgets what every folder held, so the next reload of each loads it again whatever its
    /// bytes ("run everything again": fresh runtimes with empty memos).
    pub fn forget_fingerprints(&mut self) {
        self.fingerprints.clear();
    }

    /// Re-reads the session file; a broken file keeps the previous session and records why.
    /// Returns whether the session changed (text the studio itself wrote last is no change).
    pub fn reload_session(&mut self) -> bool {
        let Some(path) = self.session_path.clone() else {
            return false;
        };
        let text = match read_session_text(&path) {
            Ok(text) => text,
            Err(e) => {
                self.session_error = Some(
                    Diagnostic::new(e.code(), format!("cannot read the session file: {e}"))
                        .file(&path),
                );
                return false;
            }
        };
        if self.session_text.as_deref() == Some(text.as_str()) && self.session_error.is_none() {
            return false;
        }
        let parsed = session::parse_session(&text, &path);
        self.session_text = Some(text);
        match parsed {
            Ok(session) => {
                self.session = session;
                self.session_error = None;
                true
            }
            Err(d) => {
                self.session_error = Some(d);
                false
            }
        }
    }

    /// The session's settings against the plugins' `contributes.settings` (kernel rule in
    /// `covel_kernel::settings`), with positions from the session file when there is one. Only
    /// the plugins the session gives settings to are looked up (the check reads nothing else),
    /// and a session that gives none is not read again: a reload's check then costs nothing
    /// per plugin of the folder.
    fn check_settings(&self) -> Vec<Diagnostic> {
        if self.session.settings.is_empty() {
            return Vec::new();
        }
        use covel_kernel::settings::Declared;
        let declared: BTreeMap<String, Declared> = self
            .plugins
            .iter()
            .filter(|p| self.session.settings.contains_key(&p.name))
            .map(|p| {
                let known = match &p.package {
                    Some(pkg) => Declared::Settings(pkg.manifest.settings.clone()),
                    // Without its manifest nothing is known of its settings: say why it failed.
                    None => Declared::NotLoaded(p.diagnostics.first().map_or_else(
                        || "its PLUGIN.md could not be read".to_string(),
                        |d| format!("[{}] {}", d.code, d.message),
                    )),
                };
                (p.name.clone(), known)
            })
            .collect();
        let text = self
            .session_path
            .as_deref()
            .and_then(|p| read_session_text(p).ok());
        let file = self
            .session_path
            .clone()
            .unwrap_or_else(|| PathBuf::from("(session)"));
        covel_kernel::settings::check(&self.session.settings, &declared, text.as_deref(), &file)
    }

    /// A plugin's settings for this session (the kernel's rule, `covel_kernel::settings::merged`).
    pub fn plugin_settings(&self, pkg: &covel_kernel::package::Package) -> Map<String, Value> {
        covel_kernel::settings::merged(
            &pkg.manifest.settings,
            self.session.settings.get(&pkg.manifest.id),
        )
    }

    /// Brings the resolution and the call order up to date after plugins or the session
    /// changed. The resolver runs only when what it is asked changed, and the call order is
    /// sorted again only when the active providers' declarations changed (see
    /// [`crate::resolve_inputs`]).
    pub fn resolve(&mut self) {
        self.session_problems = self.check_settings();
        let asks_otherwise = self.resolve_inputs.update(&self.plugins, &self.session);
        if asks_otherwise {
            self.resolution = self.resolve_inputs.resolve();
        }
        let active = active_among(&self.plugins, &self.resolution);
        let kept = !asks_otherwise
            && self
                .call_order
                .as_mut()
                .is_some_and(|order| order.after_reload(active.clone()));
        if !kept {
            self.call_order = Some(CallOrder::build(active));
        }
        self.call_order_current = true;
    }

    /// The loaded plugins that are active in the session, in folder order (one set lookup per
    /// plugin: `Resolution::is_active` scans the active list, which is quadratic over a folder).
    pub fn active_plugins(&self) -> impl Iterator<Item = &LoadedPlugin> + Clone {
        active_among(&self.plugins, &self.resolution)
    }

    /// Runs again, on every loaded plugin's engine (plugins in parallel), the calls that ran
    /// once and await the second answer the memo asks for (`covel_js::memo`); returns how many
    /// ran. Unlike running the preview again, this runs only those calls: after a save, the
    /// saved plugin's.
    pub fn confirm_memo(&self) -> usize {
        use rayon::prelude::*;
        self.plugins
            .par_iter()
            .filter_map(|p| p.instance.as_ref())
            .map(|instance| instance.confirm_memo())
            .sum()
    }

    /// The segments previews read from provider outputs, kept for the next preview.
    pub fn segment_reads(&self) -> &covel_kernel::prompt::SegmentReads {
        &self.segment_reads
    }

    /// Whether an engine keeps calls [`Workspace::confirm_memo`] would run.
    pub fn has_unconfirmed(&self) -> bool {
        self.plugins
            .iter()
            .filter_map(|p| p.instance.as_ref())
            .any(|instance| instance.has_unconfirmed())
    }

    /// Forgets, on every engine, the calls [`Workspace::confirm_memo`] would run: called before
    /// the preview shown is recomputed, so that only its calls are confirmed (a call forgotten
    /// here and asked again simply has its second run then).
    pub fn forget_unconfirmed(&self) {
        for instance in self.plugins.iter().filter_map(|p| p.instance.as_ref()) {
            instance.forget_unconfirmed();
        }
    }

    /// The active plugins as a turn's loop runs them (their tools, hook handlers and declared
    /// events), over an execution of the committed state for `turn_id`.
    pub fn turn_plugins(&self, turn_id: &str) -> crate::turn::TurnPlugins {
        let plugins = self
            .active_plugins()
            .filter_map(|p| {
                let instance = p.instance.as_ref()?;
                let package = p.package.as_ref()?;
                Some(crate::turn::TurnPlugin {
                    id: package.id().to_string(),
                    invoker: Arc::clone(instance) as Arc<dyn covel_kernel::runner::Invoker>,
                    tools: p.registrations.tool_specs.clone(),
                    hooks: p.registrations.hook_specs.clone(),
                    events: package
                        .manifest
                        .declared
                        .events
                        .iter()
                        .map(|e| (e.topic.clone(), event_schema(&p.folder, &e.schema)))
                        .collect(),
                })
            })
            .collect();
        crate::turn::TurnPlugins {
            plugins,
            context: self.execution(Some(turn_id.to_string())),
            session_id: self.session.id.clone(),
        }
    }

    /// Providers of active plugins only: a provider is never called unless its plugin is
    /// active and authorized.
    pub fn active_providers(&self) -> Vec<Provider> {
        self.active_plugins()
            .flat_map(LoadedPlugin::providers)
            .cloned()
            .collect()
    }

    /// The active plugins that provide `world.dimensions@1` (the rule needs exactly one).
    pub fn dimension_providers(&self) -> Vec<String> {
        let active = self.active_plugins().filter_map(|p| p.package.as_ref());
        covel_kernel::world::dimension_providers(active.map(|pkg| &pkg.manifest))
    }

    /// The committed World Model view of the session (the kernel's, `covel_kernel::world`).
    pub fn world_view(&self) -> Value {
        covel_kernel::world::world_view(
            &self.session.world,
            &self.session.plugin_data,
            &self.dimension_providers(),
        )
    }

    /// The dimension rule (`covel_kernel::world::dimension_rule_violation`) for this session.
    pub fn dimension_rule_violation(&self) -> Option<String> {
        covel_kernel::world::dimension_rule_violation(
            &self.session.world,
            &self.dimension_providers(),
        )
    }

    /// A fresh execution over the committed session state, built by the kernel.
    pub fn execution(&self, turn_id: Option<String>) -> Arc<ExecutionContext> {
        Arc::new(ExecutionContext::new(self.session_view(), turn_id))
    }

    /// What handlers see of the committed session state now, built by the kernel
    /// ([`SessionView::from_session`]). When its data reads as the last view's did (the same
    /// JSON text, keys in the same order: [`SessionView::data_key`]; the usual save changes a
    /// handler's code, not the session or a manifest's settings), the last view is handed out
    /// again: an engine that already ran under it then knows, by its id, that its plugin sees
    /// the same data, without hashing its part again (at 500 plugins ≈ 500 digests a save, for
    /// one digest of the whole). A view is frozen, so sharing it cannot change what a call sees.
    pub fn session_view(&self) -> Arc<SessionView> {
        let manifests = self
            .plugins
            .iter()
            .filter_map(|p| p.package.as_ref())
            .map(|pkg| &pkg.manifest);
        let fresh =
            SessionView::from_session(&self.session, manifests, &self.dimension_providers());
        let mut last = self.last_view.lock().unwrap_or_else(|e| e.into_inner());
        match last.as_ref() {
            Some(kept) if kept.data_key() == fresh.data_key() => Arc::clone(kept),
            _ => {
                *last = Some(Arc::clone(&fresh));
                fresh
            }
        }
    }

    /// Providers of every plugin that loaded, ignoring the session's selection (for running a
    /// point over a whole folder, as `covel call` does without a session).
    pub fn all_providers(&self) -> Vec<Provider> {
        self.plugins
            .iter()
            .flat_map(LoadedPlugin::providers)
            .cloned()
            .collect()
    }

    /// Runs one point over the active providers.
    pub fn call(
        &self,
        point: PointId,
        input: Value,
        slot: Option<SlotId>,
        turn_id: Option<String>,
    ) -> RunResult {
        self.calls().run(point, input, slot, turn_id.as_deref())
    }

    /// A scope for several calls over the same state (a preview, a turn): the active providers,
    /// the session view and one execution per turn id over it are built once, not once per call.
    pub fn calls(&self) -> Calls<'_> {
        Calls {
            workspace: self,
            providers: match &self.call_order {
                Some(order) if self.call_order_current => Arc::clone(&order.providers),
                _ => CallOrder::build(self.active_plugins()).providers,
            },
            view: std::cell::OnceCell::new(),
            contexts: RefCell::new(BTreeMap::new()),
        }
    }

    /// Runs one point over the given providers, in this session's context.
    pub fn call_over(
        &self,
        providers: &[Provider],
        point: PointId,
        input: Value,
        slot: Option<SlotId>,
        turn_id: Option<String>,
    ) -> RunResult {
        let ctx = self.execution(turn_id);
        runner::run(
            point,
            input,
            providers,
            &ctx,
            &RunOptions {
                slot,
                ..RunOptions::default()
            },
        )
    }

    /// Diagnostics of every plugin that failed to load, of failed reloads, and of the session.
    pub fn diagnostics(&self) -> impl Iterator<Item = &Diagnostic> {
        self.plugins
            .iter()
            .flat_map(|p| p.diagnostics.iter())
            .chain(self.reload_failures.values().flatten())
            .chain(self.session_error.iter())
            .chain(self.session_problems.iter())
    }
}

/// The plugins the resolution activated, in folder order (see [`Workspace::active_plugins`]).
fn active_among<'a>(
    plugins: &'a [LoadedPlugin],
    resolution: &'a Resolution,
) -> impl Iterator<Item = &'a LoadedPlugin> + Clone {
    let active: foldhash::HashSet<&str> = resolution.active.iter().map(String::as_str).collect();
    plugins
        .iter()
        .filter(move |p| active.contains(p.name.as_str()))
}

/// Calls that share providers and execution contexts (see [`Workspace::calls`]).
pub struct Calls<'a> {
    workspace: &'a Workspace,
    providers: Arc<[Provider]>,
    /// The session view every execution of the scope shares (engines then check what their
    /// plugin sees once per scope, not once per turn id).
    view: std::cell::OnceCell<Arc<SessionView>>,
    contexts: RefCell<BTreeMap<Option<String>, Arc<ExecutionContext>>>,
}

impl Calls<'_> {
    /// Runs one point; calls with the same turn id share one execution.
    pub fn run(
        &self,
        point: PointId,
        input: Value,
        slot: Option<SlotId>,
        turn_id: Option<&str>,
    ) -> RunResult {
        runner::run(
            point,
            input,
            &self.providers,
            &self.execution(turn_id),
            &RunOptions {
                slot,
                ..RunOptions::default()
            },
        )
    }

    /// Runs `prompt.segment@1` for an assembly: the outputs come as [`RunResult::parts`], each
    /// provider's segments where the runner checked them (a memo answer's are not copied).
    pub fn segments(&self, input: Value, turn_id: Option<&str>) -> RunResult {
        runner::run(
            PointId::PromptSegment,
            input,
            &self.providers,
            &self.execution(turn_id),
            &RunOptions {
                shared_segments: true,
                ..RunOptions::default()
            },
        )
    }

    /// Runs a batch in one execution, as [`Calls::run`] each in turn would, with the same
    /// results in order; chains that share no engine run in parallel (`runner::run_all`).
    pub fn run_all(&self, requests: Vec<RunRequest>, turn_id: Option<&str>) -> Vec<RunResult> {
        runner::run_all(requests, &self.providers, &self.execution(turn_id))
    }

    /// The execution for `turn_id`, built on first use over the scope's one session view.
    pub fn execution(&self, turn_id: Option<&str>) -> Arc<ExecutionContext> {
        let key = turn_id.map(str::to_string);
        Arc::clone(
            self.contexts
                .borrow_mut()
                .entry(key.clone())
                .or_insert_with(|| {
                    let view = self.view.get_or_init(|| self.workspace.session_view());
                    Arc::new(ExecutionContext::new(Arc::clone(view), key))
                }),
        )
    }

    /// The active providers of this scope.
    pub fn providers(&self) -> &[Provider] {
        &self.providers
    }

    /// Projects slots (the kernel's projection, `slot_host::project`) in this scope's execution
    /// for `turn_id`: their views, slot by slot in the order given; slots whose chains share no
    /// engine run in parallel.
    pub fn project_slots(
        &self,
        slots: &[SlotId],
        events: &[Value],
        turn_id: Option<&str>,
    ) -> Vec<SlotView> {
        // No slot to run (a reload whose slots the preview projected, an event no slot
        // previews): no execution to build either.
        if slots.is_empty() {
            return Vec::new();
        }
        slot_host::project(&self.providers, &self.execution(turn_id), slots, events)
    }
}

/// What reloading one plugin folder did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PluginReload {
    Added,
    Replaced,
    Removed,
    /// The new version failed; the last good version keeps running.
    KeptLastGood,
    /// It failed and there was no good version to keep.
    Failed,
    /// Nothing to load: the folder holds the bytes its last load attempt read (or neither it nor
    /// a loaded plugin exists).
    Unchanged,
}

/// Session files are at most this large (a played session of thousands of turns fits).
pub const MAX_SESSION_BYTES: u64 = 32 * 1024 * 1024;

/// An event's data schema: inline, or a JSON file of the plugin's named by its path.
fn event_schema(folder: &Path, schema: &Value) -> Result<Value, String> {
    const LIMIT: u64 = 1024 * 1024;
    let Some(path) = schema.as_str() else {
        return Ok(schema.clone());
    };
    let text = covel_kernel::files::read_confined(folder, &folder.join(path), LIMIT)
        .map_err(|e| format!("its schema file {path} cannot be read: {e}"))?;
    serde_json::from_str(&text).map_err(|e| format!("its schema file {path} is not JSON: {e}"))
}

/// Reads a session file: a regular file (never a FIFO that would block) under the size cap.
pub fn read_session_text(path: &Path) -> Result<String, covel_kernel::files::FileRefusal> {
    covel_kernel::files::read_regular(path, MAX_SESSION_BYTES)
}
