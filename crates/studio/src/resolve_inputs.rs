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
        CallOrder {
            positions: positions_of(&providers),
            providers: providers.into(),
            loads: active.map(|p| p.load_id).collect(),
        }
    }

    /// Brings this order up to date, in place and without sorting, after some of the same active
    /// plugins loaded again: when each reloaded plugin declares the same providers (every field
    /// of each declaration equal, so the same call keys), the sort puts its new providers exactly
    /// where its old ones stood, so they replace them. Answers `false`, changing nothing, when
    /// that does not hold (a declaration changed, two of a plugin's providers tie on the call key
    /// and are registered in another order, the active plugins differ) or when a scope of calls
    /// still holds this order: the caller then sorts again.
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
        let mut fresh = Vec::with_capacity(reloaded.len());
        for (_, p) in &reloaded {
            let Some(package) = &p.package else {
                return false;
            };
            fresh.push((package.manifest.id.as_str(), p.providers()));
        }
        if !replace_in_place(providers, &self.positions, &fresh) {
            return false;
        }
        for (at, p) in reloaded {
            self.loads[at] = p.load_id;
        }
        true
    }
}

/// Where each plugin's providers stand in a list, by plugin id.
fn positions_of(order: &[Provider]) -> foldhash::HashMap<String, Vec<usize>> {
    let mut positions: foldhash::HashMap<String, Vec<usize>> = Default::default();
    for (at, provider) in order.iter().enumerate() {
        positions
            .entry(provider.plugin_id.clone())
            .or_default()
            .push(at);
    }
    positions
}

/// Puts each plugin's new providers where its old ones stand in `order` (a list in the kernel's
/// call order; `positions` says where each plugin's providers stand in it), when that is where
/// sorting the list again would put them: each plugin declares the same providers as before,
/// every field of each declaration equal, so each new provider has an old one's call key.
/// Sorting a plugin's new providers by that key pairs them with the old ones as they stand.
/// Answers `false`, changing nothing, when a plugin's declarations differ.
fn replace_in_place(
    order: &mut [Provider],
    positions: &foldhash::HashMap<String, Vec<usize>>,
    fresh: &[(&str, &[Provider])],
) -> bool {
    let mut replacements = Vec::with_capacity(fresh.len());
    for (plugin_id, providers) in fresh {
        let sorted = runner::sort_providers(providers.iter());
        let old = positions.get(*plugin_id).map_or(&[][..], Vec::as_slice);
        let same = old.len() == sorted.len()
            && old
                .iter()
                .zip(&sorted)
                .all(|(&i, f)| order[i].decl == f.decl);
        if !same {
            return false;
        }
        replacements.push((old, sorted));
    }
    for (old, sorted) in replacements {
        for (&i, f) in old.iter().zip(sorted) {
            order[i] = f.clone();
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use covel_kernel::contract::PointId;
    use covel_kernel::manifest::ExtensionDecl;
    use covel_kernel::runner::{CallReport, Invoker, ProviderCall};
    use proptest::prelude::*;

    struct Never;
    impl Invoker for Never {
        fn call(&self, _: &ProviderCall) -> CallReport {
            unreachable!("only ordered, never called")
        }
    }

    /// A provider of `plugin`; `load` tells one load's providers from another's.
    fn provider(plugin: &str, (point, id, order): (PointId, &str, i64), load: u64) -> Provider {
        Provider {
            plugin_id: plugin.to_string(),
            decl: Arc::new(ExtensionDecl::new(point, id, order)),
            runtime_ids: Arc::new(vec![format!("load-{load}")]),
            invoker: Arc::new(Never),
            checked: Default::default(),
            settled: Default::default(),
        }
    }

    fn sorted(providers: &[Provider]) -> Vec<Provider> {
        let mut all = providers.to_vec();
        runner::presort_providers(&mut all);
        all
    }

    fn shown(order: &[Provider]) -> Vec<(String, String, String, i64, String)> {
        order
            .iter()
            .map(|p| {
                (
                    p.plugin_id.clone(),
                    p.decl.point.as_str().to_string(),
                    p.decl.id.clone(),
                    p.decl.order,
                    p.runtime_ids[0].clone(),
                )
            })
            .collect()
    }

    /// A plugin's declarations: a point, one of a few ids (so that ids and orders tie) and a
    /// small order; a plugin never declares the same point and id twice.
    fn declarations() -> impl Strategy<Value = Vec<(PointId, &'static str, i64)>> {
        let point = prop_oneof![
            Just(PointId::PromptSegment),
            Just(PointId::UiSlot),
            Just(PointId::SessionWorldContext)
        ];
        prop::collection::vec(
            (point, prop::sample::select(vec!["a", "b", "c"]), -2i64..3),
            0..5,
        )
        .prop_map(|mut decls| {
            let mut seen = std::collections::BTreeSet::new();
            decls.retain(|(point, id, _)| seen.insert((*point, *id)));
            decls
        })
    }

    proptest! {
        /// Replacing a reloaded plugin's providers in place gives exactly the order sorting the
        /// whole list again gives, whenever it replaces them; and it replaces them whenever the
        /// plugin declares the same providers in the same order. (Registered in another order,
        /// two of its providers whose call keys tie swap places in a new sort: that is refused,
        /// and the caller sorts again.)
        #[test]
        fn replacing_in_place_is_sorting_again(
            plugins in prop::collection::vec(declarations(), 1..6),
            which in any::<prop::sample::Index>(),
            changed in declarations(),
            keep_declarations in any::<bool>(),
            reverse in any::<bool>(),
        ) {
            let names: Vec<String> = (0..plugins.len()).map(|i| format!("p{i}")).collect();
            let before: Vec<Provider> = names
                .iter()
                .zip(&plugins)
                .flat_map(|(name, decls)| decls.iter().map(move |d| provider(name, *d, 1)))
                .collect();
            let mut order = sorted(&before);
            let positions = positions_of(&order);
            let reloaded = which.index(plugins.len());
            let mut decls = if keep_declarations { plugins[reloaded].clone() } else { changed };
            if reverse {
                decls.reverse();
            }
            let fresh: Vec<Provider> =
                decls.iter().map(|d| provider(&names[reloaded], *d, 2)).collect();
            let after: Vec<Provider> = names
                .iter()
                .enumerate()
                .flat_map(|(i, name)| {
                    if i == reloaded {
                        fresh.clone()
                    } else {
                        plugins[i].iter().map(|d| provider(name, *d, 1)).collect()
                    }
                })
                .collect();
            let untouched = shown(&order);
            let replaced = replace_in_place(&mut order, &positions, &[(&names[reloaded], &fresh)]);
            if replaced {
                prop_assert_eq!(shown(&order), shown(&sorted(&after)));
            } else {
                prop_assert_eq!(shown(&order), untouched, "a refusal changes nothing");
            }
            if keep_declarations && !reverse {
                prop_assert!(replaced, "the same declarations are always replaced in place");
            }
        }
    }
}
