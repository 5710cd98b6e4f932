//! A workspace: one plugins folder, its loaded plugins, one test session, and the session's
//! resolution. Everything a preview or a call needs is derived from here.

use covel_js::{Limits, LoadedPlugin, load_folder};
use covel_kernel::context::{DataRow, ExecutionContext, PluginScope};
use covel_kernel::contract::{PointId, SlotId};
use covel_kernel::diagnostic::Diagnostic;
use covel_kernel::resolver::{self, Candidate, Resolution};
use covel_kernel::runner::{self, Provider, RunOptions, RunResult};
use covel_kernel::session::{self, Session};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The contract a world with dimensions requires.
pub const DIMENSIONS_CONTRACT: &str = "world.dimensions@1";
/// The namespace holding a dimension provider's records.
pub const DIMENSIONS_NAMESPACE: &str = "_dimensions";

/// Why a workspace could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum WorkspaceError {
    #[error("cannot read plugins folder {path}: {source}")]
    PluginsFolder { path: PathBuf, source: std::io::Error },
    #[error("cannot read session file {path}: {source}")]
    SessionFile { path: PathBuf, source: std::io::Error },
    #[error("invalid session file {0}")]
    Session(Diagnostic),
}

/// A plugins folder with a test session.
pub struct Workspace {
    pub plugins_dir: PathBuf,
    pub session_path: Option<PathBuf>,
    pub session: Session,
    pub plugins: Vec<LoadedPlugin>,
    pub resolution: Resolution,
}

impl Workspace {
    /// Loads every plugin of the folder and the session (an empty one when none is given).
    pub fn open(plugins_dir: &Path, session_path: Option<&Path>, limits: &Limits) -> Result<Workspace, WorkspaceError> {
        let session = match session_path {
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|source| WorkspaceError::SessionFile { path: path.to_path_buf(), source })?;
                session::parse_session(&text, path).map_err(WorkspaceError::Session)?
            }
            None => Session { id: "studio".into(), locale: "en".into(), ..Session::default() },
        };
        let plugins =
            load_folder(plugins_dir, limits).map_err(|source| WorkspaceError::PluginsFolder { path: plugins_dir.to_path_buf(), source })?;
        let mut workspace = Workspace {
            plugins_dir: plugins_dir.to_path_buf(),
            session_path: session_path.map(Path::to_path_buf),
            session,
            plugins,
            resolution: Resolution::default(),
        };
        workspace.resolve();
        Ok(workspace)
    }

    /// Re-runs the session resolver (after plugins or the session changed).
    pub fn resolve(&mut self) {
        let candidates: Vec<Candidate> = self
            .plugins
            .iter()
            .filter(|p| p.ok())
            .filter_map(|p| p.package.as_ref())
            .map(|pkg| Candidate::from_manifest(&pkg.manifest, !self.session.plugins.unauthorized.contains(&pkg.manifest.id)))
            .collect();
        let requested: Vec<String> =
            self.session.plugins.requested.clone().unwrap_or_else(|| candidates.iter().map(|c| c.id.clone()).collect());
        let required: Vec<String> =
            if self.session.world.dimensions.is_empty() { Vec::new() } else { vec![DIMENSIONS_CONTRACT.to_string()] };
        self.resolution = resolver::resolve(&resolver::Request {
            requested: &requested,
            excluded: &self.session.plugins.excluded,
            plugins: &candidates,
            required_contracts: &required,
        });
    }

    /// Providers of active plugins only: a provider is never called unless its plugin is
    /// active and authorized.
    pub fn active_providers(&self) -> Vec<Provider> {
        self.plugins
            .iter()
            .filter(|p| self.resolution.is_active(&p.name))
            .flat_map(LoadedPlugin::providers)
            .collect()
    }

    /// The active plugin that provides `world.dimensions@1`, if exactly one does.
    pub fn dimension_providers(&self) -> Vec<String> {
        self.plugins
            .iter()
            .filter(|p| self.resolution.is_active(&p.name))
            .filter_map(|p| p.package.as_ref())
            .filter(|pkg| pkg.manifest.provides.iter().any(|pr| pr.contract == DIMENSIONS_CONTRACT))
            .map(|pkg| pkg.manifest.id.clone())
            .collect()
    }

    /// The committed World Model view of the session.
    pub fn world_view(&self) -> Value {
        let world = &self.session.world;
        let providers = self.dimension_providers();
        let (dimensions, provider) = match providers.as_slice() {
            [one] => (self.dimension_snapshot(one), Some(one.clone())),
            _ => (Map::new(), None),
        };
        let mut view = json!({
            "worldRecord": world.world_record,
            "characterSchema": world.character_schema,
            "characters": world.characters,
            "dimensions": dimensions,
            "seats": world.seats,
        });
        if let (Some(provider), Some(map)) = (provider, view.as_object_mut()) {
            map.insert("dimensionProviderPluginId".into(), Value::String(provider));
        }
        view
    }

    /// The public snapshot built from a provider's `_dimensions` records.
    fn dimension_snapshot(&self, provider: &str) -> Map<String, Value> {
        let mut out = Map::new();
        for row in self.session.plugin_data.iter().filter(|r| r.plugin_id == provider && r.namespace == DIMENSIONS_NAMESPACE) {
            let definition = row.value.get("definition");
            let mut entry = json!({
                "name": definition.and_then(|d| d.get("name")).cloned().unwrap_or(Value::Null),
                "schema": definition.and_then(|d| d.get("schema")).cloned().unwrap_or_else(|| json!({})),
                "value": row.value.get("value").cloned().unwrap_or(Value::Null),
                "version": row.value.get("version").cloned().unwrap_or(json!(1)),
            });
            if let (Some(description), Some(map)) = (definition.and_then(|d| d.get("description")), entry.as_object_mut()) {
                map.insert("description".into(), description.clone());
            }
            out.insert(row.key.clone(), entry);
        }
        out
    }

    /// A fresh execution over the committed session state.
    pub fn execution(&self, turn_id: Option<String>) -> Arc<ExecutionContext> {
        let mut plugin_data: BTreeMap<String, Vec<DataRow>> = BTreeMap::new();
        for row in &self.session.plugin_data {
            plugin_data.entry(row.plugin_id.clone()).or_default().push(row.clone());
        }
        // `list()` answers in creation order; the sort is stable, so file order breaks ties.
        for rows in plugin_data.values_mut() {
            rows.sort_by(|a, b| a.created_at.cmp(&b.created_at));
        }
        let plugins = self
            .plugins
            .iter()
            .filter_map(|p| p.package.as_ref())
            .map(|pkg| {
                let mut settings = Map::new();
                for decl in &pkg.manifest.settings {
                    if let Some(default) = &decl.default {
                        settings.insert(decl.key.clone(), default.clone());
                    }
                }
                if let Some(overrides) = self.session.settings.get(&pkg.manifest.id) {
                    settings.extend(overrides.clone());
                }
                (pkg.manifest.id.clone(), PluginScope { settings, http_origins: pkg.manifest.http_origins() })
            })
            .collect();
        Arc::new(ExecutionContext {
            execution_id: ExecutionContext::next_id(),
            session_id: self.session.id.clone(),
            locale: self.session.locale.clone(),
            turn_id,
            world: self.world_view(),
            plugin_data,
            plugins,
            http: self.session.http.clone(),
            gateway: None,
        })
    }

    /// Providers of every plugin that loaded, ignoring the session's selection (for running a
    /// point over a whole folder, as `covel call` does without a session).
    pub fn all_providers(&self) -> Vec<Provider> {
        self.plugins.iter().flat_map(LoadedPlugin::providers).collect()
    }

    /// Runs one point over the active providers.
    pub fn call(&self, point: PointId, input: Value, slot: Option<SlotId>, turn_id: Option<String>) -> RunResult {
        self.call_over(&self.active_providers(), point, input, slot, turn_id)
    }

    /// Runs one point over the given providers, in this session's context.
    pub fn call_over(&self, providers: &[Provider], point: PointId, input: Value, slot: Option<SlotId>, turn_id: Option<String>) -> RunResult {
        let ctx = self.execution(turn_id);
        runner::run(point, input, providers, &ctx, &RunOptions { slot, timeout: None })
    }

    /// Diagnostics of every plugin that failed to load.
    pub fn diagnostics(&self) -> impl Iterator<Item = &Diagnostic> {
        self.plugins.iter().flat_map(|p| p.diagnostics.iter())
    }
}
