//! The session resolver: which plugins a session runs (seed page, "Depending on an extension
//! point"). `requires` may name extension points and UI slots, meaning "an active plugin
//! implements it"; a kernel contract written only in `provides` satisfies nothing; `conflicts`
//! cannot name kernel contracts; unauthorized or excluded providers are never auto-added; a
//! second provider of a `single` point is rejected. Every rejection carries a stable code and
//! the candidates involved.

use crate::contract::{self, Mode, PointId};
use crate::manifest::{Manifest, PluginKind};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet, HashSet};

/// What the resolver needs to know of a plugin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub id: String,
    pub kind: PluginKind,
    pub authorized: bool,
    /// Non-kernel `provides` entries: `(contract, default)`.
    pub provides: Vec<(String, bool)>,
    pub requires: Vec<String>,
    pub optional: Vec<String>,
    pub conflicts: Vec<String>,
    /// Points it implements, plus the slots of its `ui.slot@1` providers (and
    /// `prompt.segment@1` for a non-empty `contributes.prompt`).
    pub implements: BTreeSet<String>,
    /// Single-mode points it implements.
    pub single_points: BTreeSet<PointId>,
    /// Why the plugin failed to load (`[code] message`), when it did: it is never activated,
    /// and a plugin that needs what it provides is told so.
    pub load_failure: Option<LoadFailure>,
}

/// A plugin's first load diagnostic, as the resolver reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadFailure {
    /// The diagnostic code (`entry-syntax`, `invalid-conflict`, …).
    pub code: String,
    pub message: String,
}

impl Candidate {
    /// The resolver's view of a checked manifest.
    pub fn from_manifest(manifest: &Manifest, authorized: bool) -> Candidate {
        let mut implements = BTreeSet::new();
        let mut single_points = BTreeSet::new();
        // `requires` may name points or slots: a plugin implements the point of each of its
        // providers and, for `ui.slot@1`, the provider's slot.
        for ext in &manifest.extensions {
            implements.insert(ext.point.as_str().to_string());
            if let Some(slot) = ext.slot {
                implements.insert(slot.as_str().to_string());
            }
            if ext.point.point().mode == Mode::Single {
                single_points.insert(ext.point);
            }
        }
        if !manifest.static_prompt.is_empty() {
            implements.insert(PointId::PromptSegment.as_str().to_string());
        }
        Candidate {
            id: manifest.id.clone(),
            kind: manifest.kind,
            authorized,
            // A kernel contract written only in `provides` satisfies nothing.
            provides: manifest
                .provides
                .iter()
                .filter(|p| contract::kernel_contract(&p.contract).is_none())
                .map(|p| (p.contract.clone(), p.default))
                .collect(),
            requires: manifest.requires.clone(),
            optional: manifest.optional.clone(),
            conflicts: manifest.conflicts.clone(),
            implements,
            single_points,
            load_failure: None,
        }
    }

    /// A plugin whose manifest could not even be read: known by its folder name only.
    pub fn unloadable(id: &str, failure: LoadFailure) -> Candidate {
        Candidate {
            id: id.to_string(),
            kind: PluginKind::Plugin,
            authorized: true,
            provides: Vec::new(),
            requires: Vec::new(),
            optional: Vec::new(),
            conflicts: Vec::new(),
            implements: BTreeSet::new(),
            single_points: BTreeSet::new(),
            load_failure: Some(failure),
        }
    }

    fn contracts(&self) -> impl Iterator<Item = &str> {
        self.provides
            .iter()
            .map(|(c, _)| c.as_str())
            .chain(self.implements.iter().map(String::as_str))
    }

    fn provides_contract(&self, contract: &str) -> bool {
        self.contracts().any(|c| c == contract)
    }

    fn is_default_for(&self, contract: &str) -> bool {
        self.provides.iter().any(|(c, d)| c == contract && *d)
            && !self.implements.contains(contract)
    }
}

/// Stable rejection codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RejectionCode {
    InvalidConflict,
    UnknownPlugin,
    ApprovalRequired,
    Excluded,
    MissingProvider,
    AmbiguousProvider,
    Conflict,
    SingleProviderConflict,
    DefaultReplaced,
    /// The plugin failed to load; `loadCode` names its diagnostic.
    LoadFailed,
}

/// A plugin the session will not run, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Rejection {
    pub plugin: String,
    pub code: RejectionCode,
    pub message: String,
    /// The plugins involved: possible providers, or the plugin it conflicts with.
    pub candidates: Vec<String>,
    /// The contract concerned, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contract: Option<String>,
    /// For `load-failed`: the code of the plugin's load diagnostic.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load_code: Option<String>,
}

/// A world-required contract nothing active provides.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Unmet {
    pub contract: String,
    pub code: RejectionCode,
    pub candidates: Vec<String>,
    /// `missing-provider` and `ambiguous-provider` block the session.
    pub blocking: bool,
}

/// The resolver's answer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Resolution {
    /// Active plugins, in activation order.
    pub active: Vec<String>,
    /// Active plugins that were added automatically (core, dependencies, world requirements).
    pub auto_added: Vec<String>,
    pub rejected: Vec<Rejection>,
    pub unmet: Vec<Unmet>,
}

impl Resolution {
    pub fn is_active(&self, plugin: &str) -> bool {
        self.active.iter().any(|p| p == plugin)
    }
}

/// What to resolve.
#[derive(Debug, Clone, Default)]
pub struct Request<'a> {
    pub requested: &'a [String],
    pub excluded: &'a [String],
    pub plugins: &'a [Candidate],
    /// Contracts the world requires (e.g. `world.dimensions@1` when it declares dimensions).
    pub required_contracts: &'a [String],
}

enum Choice {
    Pick(String),
    None {
        code: RejectionCode,
        candidates: Vec<String>,
    },
}

struct State<'a> {
    request: &'a Request<'a>,
    by_id: BTreeMap<&'a str, &'a Candidate>,
    /// The request's lists as sets: a folder of hundreds of plugins asks them once per plugin.
    requested: HashSet<&'a str>,
    excluded: HashSet<&'a str>,
    active: Vec<String>,
    /// The ids of `active` and `rejected`, kept beside them for the same reason.
    active_ids: HashSet<String>,
    rejected_ids: HashSet<String>,
    auto: BTreeSet<String>,
    rejected: Vec<Rejection>,
}

impl<'a> State<'a> {
    fn is_rejected(&self, id: &str) -> bool {
        self.rejected_ids.contains(id)
    }

    fn reject(
        &mut self,
        plugin: &str,
        code: RejectionCode,
        message: String,
        candidates: Vec<String>,
        contract: Option<String>,
    ) {
        if self.is_rejected(plugin) {
            return;
        }
        self.active.retain(|p| p != plugin);
        self.active_ids.remove(plugin);
        self.rejected_ids.insert(plugin.to_string());
        self.rejected.push(Rejection {
            plugin: plugin.to_string(),
            code,
            message,
            candidates,
            contract,
            load_code: None,
        });
    }

    fn add(&mut self, id: &str, auto: bool) {
        if self.active_ids.contains(id) || self.is_rejected(id) {
            return;
        }
        let Some(candidate) = self.by_id.get(id).copied() else {
            self.reject(
                id,
                RejectionCode::UnknownPlugin,
                format!("no plugin `{id}` in the folder"),
                Vec::new(),
                None,
            );
            return;
        };
        if self.excluded.contains(id) {
            self.reject(
                id,
                RejectionCode::Excluded,
                format!("`{id}` is excluded by the session"),
                Vec::new(),
                None,
            );
            return;
        }
        if !candidate.authorized {
            self.reject(
                id,
                RejectionCode::ApprovalRequired,
                format!("`{id}` is community code the session has not approved"),
                Vec::new(),
                None,
            );
            return;
        }
        // `conflicts` cannot name a kernel point or slot: `invalid-conflict`, here as in the
        // manifest check, for a resolver called directly too.
        if let Some(bad) = candidate
            .conflicts
            .iter()
            .find(|c| contract::is_kernel_contract_name(c))
        {
            self.reject(
                id,
                RejectionCode::InvalidConflict,
                format!("`conflicts` cannot target kernel extension contract `{bad}`; the point's mode controls composition"),
                Vec::new(),
                Some(bad.clone()),
            );
            return;
        }
        if let Some(failure) = &candidate.load_failure {
            let message = format!(
                "`{id}` failed to load ([{}] {})",
                failure.code, failure.message
            );
            // The seed: a `conflicts` entry naming a kernel contract is `invalid-conflict` for
            // author validation and the resolver alike.
            let code = if failure.code == "invalid-conflict" {
                RejectionCode::InvalidConflict
            } else {
                RejectionCode::LoadFailed
            };
            self.reject(id, code, message, Vec::new(), None);
            if let Some(last) = self.rejected.last_mut() {
                last.load_code = Some(failure.code.clone());
            }
            return;
        }
        self.active.push(id.to_string());
        self.active_ids.insert(id.to_string());
        if auto {
            self.auto.insert(id.to_string());
        }
    }

    fn provided(&self, contract: &str) -> bool {
        self.active
            .iter()
            .filter_map(|id| self.by_id.get(id.as_str()))
            .any(|c| c.provides_contract(contract))
    }

    fn choose(&self, contract: &str) -> Choice {
        let providers: Vec<&Candidate> = self
            .request
            .plugins
            .iter()
            .filter(|c| c.provides_contract(contract))
            .collect();
        // A provider is added automatically only when it is enabled in the session (not
        // excluded) and authorized; `add` refuses the others when they are requested.
        let eligible: Vec<&&Candidate> = providers
            .iter()
            .filter(|c| {
                c.authorized
                    && c.load_failure.is_none()
                    && !self.excluded.contains(c.id.as_str())
                    && !self.is_rejected(&c.id)
            })
            .collect();
        let non_default: Vec<&&&Candidate> = eligible
            .iter()
            .filter(|c| !c.is_default_for(contract))
            .collect();
        if non_default.len() == 1 {
            return Choice::Pick(non_default[0].id.clone());
        }
        let defaults: Vec<&&&Candidate> = eligible
            .iter()
            .filter(|c| c.is_default_for(contract))
            .collect();
        if non_default.is_empty() && defaults.len() == 1 {
            return Choice::Pick(defaults[0].id.clone());
        }
        if !eligible.is_empty() {
            return Choice::None {
                code: RejectionCode::AmbiguousProvider,
                candidates: eligible.iter().map(|c| c.id.clone()).collect(),
            };
        }
        let (code, candidates) = self.unavailable(contract);
        Choice::None { code, candidates }
    }

    /// Why no provider of `contract` can be used, with the providers concerned — the one rule
    /// for a requirement (step 3), a requirement lost later (step 7) and a world requirement
    /// (step 9): providers awaiting approval → `approval-required`; every provider excluded
    /// by the session → `excluded`; otherwise `missing-provider` (none, failed to load, or
    /// rejected for another reason).
    fn unavailable(&self, contract: &str) -> (RejectionCode, Vec<String>) {
        let providers: Vec<&Candidate> = self
            .request
            .plugins
            .iter()
            .filter(|c| c.provides_contract(contract))
            .collect();
        let unauthorized: Vec<String> = providers
            .iter()
            .filter(|c| !c.authorized)
            .map(|c| c.id.clone())
            .collect();
        if !unauthorized.is_empty() {
            return (RejectionCode::ApprovalRequired, unauthorized);
        }
        let ids: Vec<String> = providers.iter().map(|c| c.id.clone()).collect();
        if !ids.is_empty() && ids.iter().all(|id| self.excluded.contains(id.as_str())) {
            return (RejectionCode::Excluded, ids);
        }
        (RejectionCode::MissingProvider, ids)
    }
}

impl State<'_> {
    /// What a candidate requires (nothing for an id the request does not hold).
    fn requires_of(&self, id: &str) -> Vec<String> {
        self.by_id
            .get(id)
            .map(|c| c.requires.clone())
            .unwrap_or_default()
    }

    /// Steps 1–2: the requested plugins, then the core plugins, then a provider of each world
    /// requirement not yet provided.
    fn seed(&mut self) {
        for id in self.request.requested {
            self.add(id, false);
        }
        for c in self
            .request
            .plugins
            .iter()
            .filter(|c| c.kind == PluginKind::Core)
        {
            if !self.requested.contains(c.id.as_str()) {
                self.add(&c.id, true);
            }
        }
        for contract in self.request.required_contracts {
            if !self.provided(contract)
                && let Choice::Pick(id) = self.choose(contract)
            {
                self.add(&id, true);
            }
        }
    }

    /// Steps 3–4: the dependency closure over the growing active set; a plugin whose requirement
    /// no provider can meet is rejected.
    fn close_dependencies(&mut self) {
        let mut index = 0;
        while index < self.active.len() {
            let id = self.active[index].clone();
            let requires = self.requires_of(&id);
            for contract in requires {
                if self.provided(&contract) {
                    continue;
                }
                match self.choose(&contract) {
                    Choice::Pick(provider) => self.add(&provider, true),
                    Choice::None { code, candidates } => {
                        let message = format!(
                            "requires `{contract}`, and {}",
                            explain(code, &candidates, &self.by_id, &contract)
                        );
                        self.reject(&id, code, message, candidates, Some(contract.clone()));
                        break;
                    }
                }
            }
            if self.active.get(index) == Some(&id) {
                index += 1;
            }
        }
    }

    /// Step 5: a default provider steps aside when another active plugin provides the contract.
    fn defaults_step_aside(&mut self) {
        for id in self.active.clone() {
            let Some(candidate) = self.by_id.get(id.as_str()).copied() else {
                continue;
            };
            for (contract, default) in &candidate.provides {
                if !default {
                    continue;
                }
                let replacement: Vec<String> = self
                    .active
                    .iter()
                    .filter(|other| **other != id)
                    .filter_map(|other| self.by_id.get(other.as_str()))
                    .filter(|other| {
                        other.provides_contract(contract) && !other.is_default_for(contract)
                    })
                    .map(|other| other.id.clone())
                    .collect();
                if !replacement.is_empty() {
                    let message = format!(
                        "default provider of `{contract}` replaced by {}",
                        replacement.join(", ")
                    );
                    self.reject(
                        &id,
                        RejectionCode::DefaultReplaced,
                        message,
                        replacement,
                        Some(contract.clone()),
                    );
                    break;
                }
            }
        }
    }

    /// Step 6: conflicts and single-mode points, requested plugins first (the first accepted
    /// keeps its place).
    fn settle_conflicts(&mut self) {
        let mut ordered: Vec<String> = self
            .active
            .iter()
            .filter(|id| self.requested.contains(id.as_str()))
            .cloned()
            .collect();
        ordered.extend(
            self.active
                .iter()
                .filter(|id| !self.requested.contains(id.as_str()))
                .cloned(),
        );
        let mut accepted: Vec<&Candidate> = Vec::new();
        // Most plugins declare no conflicts and no single-mode point: they need no pairwise check.
        let mut accepted_conflicts = false;
        for id in ordered {
            let Some(candidate) = self.by_id.get(id.as_str()).copied() else {
                continue;
            };
            let clash = (accepted_conflicts || !candidate.conflicts.is_empty())
                .then(|| {
                    accepted.iter().find(|other| {
                        candidate
                            .conflicts
                            .iter()
                            .any(|c| other.provides_contract(c))
                            || other
                                .conflicts
                                .iter()
                                .any(|c| candidate.provides_contract(c))
                    })
                })
                .flatten();
            if let Some(other) = clash {
                let other_id = other.id.clone();
                self.reject(
                    &id,
                    RejectionCode::Conflict,
                    format!("Conflicts with {other_id}"),
                    vec![other_id],
                    None,
                );
                continue;
            }
            let single = (!candidate.single_points.is_empty())
                .then(|| {
                    accepted.iter().find_map(|other| {
                        candidate
                            .single_points
                            .intersection(&other.single_points)
                            .next()
                            .map(|p| (other.id.clone(), *p))
                    })
                })
                .flatten();
            if let Some((other_id, point)) = single {
                self.reject(
                    &id,
                    RejectionCode::SingleProviderConflict,
                    format!("{point} is a single-mode point and {other_id} already provides it"),
                    vec![other_id],
                    Some(point.as_str().to_string()),
                );
                continue;
            }
            accepted_conflicts |= !candidate.conflicts.is_empty();
            accepted.push(candidate);
        }
    }

    /// Step 7: until nothing changes, drop the plugins whose requirements are no longer provided.
    fn drop_unprovided(&mut self) {
        loop {
            let mut changed = false;
            for id in self.active.clone() {
                let requires = self.requires_of(&id);
                if let Some(contract) = requires.iter().find(|c| !self.provided(c)) {
                    let (code, providers) = self.unavailable(contract);
                    let message = format!(
                        "requires `{contract}`, and {}",
                        explain(code, &providers, &self.by_id, contract)
                    );
                    self.reject(&id, code, message, providers, Some(contract.clone()));
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
    }

    /// Step 8: keep only the plugins reachable from the requested, core or world-required
    /// providers.
    fn keep_reachable(&mut self) {
        let mut roots: Vec<String> = self
            .active
            .iter()
            .filter(|id| {
                self.requested.contains(id.as_str())
                    || self
                        .by_id
                        .get(id.as_str())
                        .is_some_and(|c| c.kind == PluginKind::Core)
                    || self.request.required_contracts.iter().any(|rc| {
                        self.by_id
                            .get(id.as_str())
                            .is_some_and(|c| c.provides_contract(rc))
                    })
            })
            .cloned()
            .collect();
        let mut reachable: BTreeSet<String> = roots.iter().cloned().collect();
        while let Some(id) = roots.pop() {
            let requires = self.requires_of(&id);
            for contract in requires {
                for other in &self.active {
                    if !reachable.contains(other)
                        && self
                            .by_id
                            .get(other.as_str())
                            .is_some_and(|c| c.provides_contract(&contract))
                    {
                        reachable.insert(other.clone());
                        roots.push(other.clone());
                    }
                }
            }
        }
        self.active.retain(|id| reachable.contains(id));
        self.active_ids.retain(|id| reachable.contains(id));
    }

    /// Step 9: the world requirements still unprovided.
    fn unmet(&self) -> Vec<Unmet> {
        self.request
            .required_contracts
            .iter()
            .filter(|c| !self.provided(c))
            .map(|c| {
                let (code, candidates) = match self.choose(c) {
                    Choice::None { code, candidates } => (code, candidates),
                    // A provider could be chosen but is not active (dropped as unreachable).
                    Choice::Pick(id) => (RejectionCode::MissingProvider, vec![id]),
                };
                let blocking = matches!(
                    code,
                    RejectionCode::MissingProvider | RejectionCode::AmbiguousProvider
                );
                Unmet {
                    contract: c.clone(),
                    code,
                    candidates,
                    blocking,
                }
            })
            .collect()
    }
}

/// Resolves which plugins a session runs.
pub fn resolve(request: &Request<'_>) -> Resolution {
    let mut s = State {
        request,
        by_id: request.plugins.iter().map(|c| (c.id.as_str(), c)).collect(),
        requested: request.requested.iter().map(String::as_str).collect(),
        excluded: request.excluded.iter().map(String::as_str).collect(),
        active: Vec::new(),
        active_ids: HashSet::new(),
        rejected_ids: HashSet::new(),
        auto: BTreeSet::new(),
        rejected: Vec::new(),
    };

    // The resolution's steps, in order (each method says what its step decides).
    s.seed();
    s.close_dependencies();
    s.defaults_step_aside();
    s.settle_conflicts();
    s.drop_unprovided();
    s.keep_reachable();
    let unmet = s.unmet();

    let auto_added = s
        .active
        .iter()
        .filter(|id| s.auto.contains(*id))
        .cloned()
        .collect();
    Resolution {
        active: s.active,
        auto_added,
        rejected: s.rejected,
        unmet,
    }
}

fn explain(
    code: RejectionCode,
    candidates: &[String],
    by_id: &BTreeMap<&str, &Candidate>,
    contract: &str,
) -> String {
    let failed: Vec<String> = candidates
        .iter()
        .filter_map(|id| by_id.get(id.as_str()))
        .filter_map(|c| {
            c.load_failure.as_ref().map(|f| {
                format!(
                    "`{}` provides `{contract}` but failed to load ([{}] {})",
                    c.id, f.code, f.message
                )
            })
        })
        .collect();
    if code == RejectionCode::MissingProvider && !failed.is_empty() {
        return failed.join("; ");
    }
    match code {
        RejectionCode::AmbiguousProvider => format!(
            "several plugins could provide it ({}); request one",
            candidates.join(", ")
        ),
        RejectionCode::ApprovalRequired if !candidates.is_empty() => {
            format!(
                "its providers ({}) are not approved for this session",
                candidates.join(", ")
            )
        }
        RejectionCode::Excluded => format!(
            "the session excludes its providers ({}) in `plugins.excluded`",
            candidates.join(", ")
        ),
        _ if candidates.is_empty() => "no plugin in the folder provides it".to_string(),
        _ => format!(
            "its providers ({}) are not available",
            candidates.join(", ")
        ),
    }
}
