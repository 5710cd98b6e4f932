//! What a reload hands the session resolver and the call order, kept between reloads so that a
//! reload rebuilds only what belongs to the plugins it loaded again. The resolver is a function
//! of its request and the call order a function of the active providers: the usual save
//! changes one plugin's handler code, so both stay what they were, and rebuilding them for
//! every plugin of the folder (at 500 plugins ≈ 2M instructions a save, a tenth of the reload)
//! made a reload's cost grow with the folder. Every plugin is still looked at once per reload,
//! but only to compare its load id.

use covel_js::LoadedPlugin;
use covel_kernel::resolver::{self, Candidate, LoadFailure, Resolution};
use covel_kernel::runner::{self, Provider};
use covel_kernel::session::Session;
use std::sync::Arc;

/// What the session selects, as the resolver reads it.
#[derive(Debug, Clone, PartialEq)]
struct Selection {
    requested: Option<Vec<String>>,
    excluded: Vec<String>,
    unauthorized: Vec<String>,
    required_contracts: Vec<String>,
}

impl Selection {
    fn of(session: &Session) -> Selection {
        Selection {
            requested: session.plugins.requested.clone(),
            excluded: session.plugins.excluded.clone(),
            unauthorized: session.plugins.unauthorized.clone(),
            required_contracts: covel_kernel::world::required_contracts(&session.world),
        }
    }
}

/// The resolver's request as of the last resolve, with the load each candidate was built from.
#[derive(Debug, Default)]
pub(crate) struct ResolveInputs {
    selection: Option<Selection>,
    candidates: Vec<Candidate>,
    /// The load id of the plugin each candidate was built from (a load id is unique in the
    /// process, so an equal one is the same load of the same folder).
    loads: Vec<u64>,
}

impl ResolveInputs {
    /// Brings the request up to date with the plugins (in folder order) and the session, and
    /// answers whether it now asks the resolver anything else. A candidate is a function of its
    /// plugin's load (manifest, first load diagnostic) and the session's authorizations, so a
    /// plugin whose load id is the one its candidate was built from keeps its candidate; a
    /// reloaded plugin whose candidate reads the same changes nothing.
    pub(crate) fn update(&mut self, plugins: &[LoadedPlugin], session: &Session) -> bool {
        let selection = Selection::of(session);
        let same_selection = self.selection.as_ref() == Some(&selection);
        // A folder added or removed shifts the ones after it: they then find another load id at
        // their position and get their own candidate again.
        let mut changed = !(same_selection && self.loads.len() == plugins.len());
        if changed {
            self.candidates = plugins
                .iter()
                .map(|p| candidate(p, &selection.unauthorized))
                .collect();
            self.loads = plugins.iter().map(|p| p.load_id).collect();
        } else {
            for ((at, load), p) in self.loads.iter_mut().enumerate().zip(plugins) {
                if *load == p.load_id {
                    continue;
                }
                *load = p.load_id;
                let fresh = candidate(p, &selection.unauthorized);
                if fresh != self.candidates[at] {
                    self.candidates[at] = fresh;
                    changed = true;
                }
            }
        }
        self.selection = Some(selection);
        changed
    }

    /// Resolves the request (every candidate is requested when the session names none).
    pub(crate) fn resolve(&self) -> Resolution {
        let selection = self.selection.as_ref();
        let all: Vec<String>;
        let requested = match selection.and_then(|s| s.requested.as_ref()) {
            Some(requested) => requested.as_slice(),
            None => {
                all = self.candidates.iter().map(|c| c.id.clone()).collect();
                &all
            }
        };
        resolver::resolve(&resolver::Request {
            requested,
            excluded: selection.map_or(&[], |s| &s.excluded),
            plugins: &self.candidates,
            required_contracts: selection.map_or(&[], |s| &s.required_contracts),
        })
    }
}

/// The resolver's view of one plugin. Plugins that failed to load stay candidates: the resolver
/// reports them with their own load code, and tells a plugin that needs what they provide why it
/// is missing.
fn candidate(p: &LoadedPlugin, unauthorized: &[String]) -> Candidate {
    let failure = p.diagnostics.first().map(|d| LoadFailure {
        code: d.code.as_str().to_string(),
        message: d.message.clone(),
    });
    let manifest = p
        .package
        .as_ref()
        .map(|pkg| &pkg.manifest)
        .or(p.declared.as_ref());
    match (manifest, failure) {
        (Some(manifest), failure) => Candidate {
            load_failure: failure,
            ..Candidate::from_manifest(manifest, !unauthorized.contains(&manifest.id))
        },
        (None, Some(failure)) => Candidate::unloadable(&p.name, failure),
        (None, None) => Candidate::unloadable(
            &p.name,
            LoadFailure {
                code: "internal".into(),
                message: "the plugin did not load".into(),
            },
        ),
    }
}

/// The active providers in the kernel's call order, with the load of each plugin they came from.
pub(crate) struct CallOrder {
    pub(crate) providers: Arc<[Provider]>,
    /// The load id of every active plugin, in folder order.
    loads: Vec<u64>,
    /// Where each active plugin's providers stand in `providers`, by plugin id.
    positions: foldhash::HashMap<String, Vec<usize>>,
}

impl CallOrder {
    /// The active plugins' providers, sorted once by the kernel's call key so that each run's
    /// stable sort finds its chain already in order (`runner::presort_providers`).
    pub(crate) fn build<'a>(active: impl Iterator<Item = &'a LoadedPlugin> + Clone) -> CallOrder {
        let mut providers: Vec<Provider> = active
            .clone()
            .flat_map(LoadedPlugin::providers)
            .cloned()
            .collect();
        runner::presort_providers(&mut providers);
        let mut positions: foldhash::HashMap<String, Vec<usize>> = Default::default();
        for (at, provider) in providers.iter().enumerate() {
            positions
                .entry(provider.plugin_id.clone())
                .or_default()
                .push(at);
        }
        CallOrder {
            providers: providers.into(),
            loads: active.map(|p| p.load_id).collect(),
            positions,
        }
    }

    /// Brings this order up to date, in place and without sorting, after some of the same active
    /// plugins loaded again: when each reloaded plugin declares the same providers (every field
    /// of each declaration equal, so the same call keys), the sort puts its new providers exactly
    /// where its old ones stood, so they replace them. Answers `false`, changing nothing, when
    /// that does not hold (a declaration changed, the active plugins differ) or when a scope of
    /// calls still holds this order: the caller then sorts again.
    pub(crate) fn after_reload<'a>(
        &mut self,
        active: impl Iterator<Item = &'a LoadedPlugin>,
    ) -> bool {
        let mut reloaded = Vec::new();
        let mut count = 0;
        for p in active {
            match self.loads.get(count) {
                Some(&load) if load == p.load_id => {}
                Some(_) => reloaded.push((count, p)),
                None => return false,
            }
            count += 1;
        }
        if count != self.loads.len() {
            return false;
        }
        let Some(providers) = Arc::get_mut(&mut self.providers) else {
            return false;
        };
        // Every reloaded plugin is checked before any provider is replaced.
        let mut replacements = Vec::with_capacity(reloaded.len());
        for (_, p) in &reloaded {
            let Some(package) = &p.package else {
                return false;
            };
            // The new providers in their own call order; the old ones already stand in it.
            let fresh = runner::sort_providers(p.providers().iter());
            let old = self
                .positions
                .get(&package.manifest.id)
                .map_or(&[][..], Vec::as_slice);
            let same = old.len() == fresh.len()
                && old
                    .iter()
                    .zip(&fresh)
                    .all(|(&i, f)| providers[i].decl == f.decl);
            if !same {
                return false;
            }
            replacements.push((old, fresh));
        }
        for (old, fresh) in replacements {
            for (&i, f) in old.iter().zip(fresh) {
                providers[i] = f.clone();
            }
        }
        for (at, p) in reloaded {
            self.loads[at] = p.load_id;
        }
        true
    }
}
