//! Declared versus registered: the loader's two-way check between what PLUGIN.md declares and
//! what the entry module registers when it runs. Any mismatch fails that plugin's load.

use crate::contract::{self, KernelLookupError};
use crate::diagnostic::{Code, Diagnostic};
use crate::manifest::{self, Manifest, STATIC_PROMPT_ID};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

/// Where the entry made a registration call: a module of the plugin and the call's position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Site {
    pub file: PathBuf,
    pub line: u32,
    pub column: u32,
}

/// One `covel.provideExtension(point, id, {handler})` call as the entry made it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProvidedExtension {
    pub point: String,
    pub id: String,
    pub handler_is_function: bool,
    /// Where the call was made, when the engine could tell.
    #[serde(skip)]
    pub site: Option<Site>,
}

/// A registered tool as the model is offered it: `covel.registerTool({name, description,
/// parameters})`, with `parameters` as JSON Schema (from the tool's zod schema).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub parameters: serde_json::Value,
}

/// A registered hook handler: `covel.on(event, handler, {enforce, timeoutMs})`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HookSpec {
    pub event: String,
    /// `pre`, `normal` (the default) or `post`: the group the handler runs in.
    pub enforce: String,
    /// The handler's key in the plugin's runtime.
    pub key: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    pub handler_is_function: bool,
}

/// Everything an entry registered, in call order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Registrations {
    pub extensions: Vec<ProvidedExtension>,
    pub tools: Vec<String>,
    pub actions: Vec<String>,
    pub services: Vec<String>,
    pub forms: Vec<String>,
    pub wires: Vec<String>,
    /// `event:enforce` pairs.
    pub hooks: Vec<String>,
    /// The tools with what the model is offered, in registration order.
    pub tool_specs: Vec<ToolSpec>,
    /// The hook handlers, in registration order.
    pub hook_specs: Vec<HookSpec>,
    /// Registrations attempted after the factory settled (refused), as `kind:name`.
    pub refused_late: Vec<String>,
    /// Where each non-extension registration was made, in call order: `kind:name` (late ones
    /// `late:kind:name`) and the call site.
    #[serde(skip)]
    pub sites: Vec<(String, Site)>,
}

impl Registrations {
    /// What the entry registered that the studio lists but never calls, by kind, in call order:
    /// actions, services, forms and wires answer a player's command, a service request or a
    /// media request, which a playtest does not make (tools and hooks run in played turns).
    /// Kinds with nothing registered are left out.
    pub fn not_run(&self) -> Vec<(&'static str, &[String])> {
        [
            ("actions", &self.actions),
            ("services", &self.services),
            ("forms", &self.forms),
            ("wires", &self.wires),
        ]
        .into_iter()
        .filter(|(_, items)| !items.is_empty())
        .map(|(kind, items)| (kind, items.as_slice()))
        .collect()
    }

    /// The sentence that tells an author so, naming the kinds registered ([`Self::not_run`]),
    /// or `None` when the entry registered none of them.
    pub fn not_run_note(&self) -> Option<String> {
        let kinds: Vec<&str> = self.not_run().into_iter().map(|(kind, _)| kind).collect();
        let named = match kinds.as_slice() {
            [] => return None,
            [one] => one.to_string(),
            [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
        };
        Some(format!(
            "registered only: the studio lists these {named} but never runs them (a player's command, a service request or a media request runs them in Covel); tools and hooks run in played turns"
        ))
    }

    /// The site of the `nth` (0-based) registration with this `kind:name` key.
    pub fn site_of(&self, key: &str, nth: usize) -> Option<&Site> {
        self.sites
            .iter()
            .filter(|(k, _)| k == key)
            .nth(nth)
            .map(|(_, site)| site)
    }
}

/// Where a registration diagnostic points: the declaration in PLUGIN.md, or the entry's call.
enum At<'a> {
    /// A position in PLUGIN.md (the declared item's start), when known.
    Manifest(Option<(u32, u32)>),
    /// The registration call in a module of the plugin, when known (else PLUGIN.md).
    Call(Option<&'a Site>),
}

/// Checks registrations against the manifest; returns one diagnostic per mismatch. A problem
/// with something declared points at the declaration's item in PLUGIN.md; a problem with a
/// registration call points at the call.
pub fn check(
    manifest: &Manifest,
    registered: &Registrations,
    file: &std::path::Path,
) -> Vec<Diagnostic> {
    let mut found = Findings {
        pid: &manifest.id,
        file,
        diags: Vec::new(),
    };
    check_extensions(manifest, registered, &mut found);
    check_named(manifest, registered, &mut found);
    check_late(registered, &mut found);
    found.diags
}

/// The diagnostics of one plugin's check, each placed where the author fixes it.
struct Findings<'a> {
    pid: &'a str,
    /// The plugin's PLUGIN.md.
    file: &'a std::path::Path,
    diags: Vec<Diagnostic>,
}

impl Findings<'_> {
    fn push(&mut self, code: Code, message: String, at: At<'_>) {
        let d = Diagnostic::new(code, message).plugin(self.pid);
        let d = match at {
            At::Manifest(position) => d.file(self.file).at_opt(position),
            At::Call(Some(site)) => d.file(&site.file).at(site.line, site.column),
            At::Call(None) => d.file(self.file),
        };
        self.diags.push(d);
    }
}

/// Extensions: every `provideExtension` call names a known point, a usable id and a handler,
/// once, and is declared; every declared extension is provided.
fn check_extensions(manifest: &Manifest, registered: &Registrations, found: &mut Findings<'_>) {
    // Every key the entry tried to provide, valid or not: a bad provide is reported once, not
    // again as a missing implementation.
    let attempted: BTreeSet<String> = registered
        .extensions
        .iter()
        .map(|e| format!("{}/{}", e.point, e.id))
        .collect();
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for ext in &registered.extensions {
        check_provided(manifest, ext, &mut seen, found);
    }
    // Declared but not registered fails the load, pointing at the declaration.
    for decl in &manifest.extensions {
        if !attempted.contains(&decl.key()) {
            found.push(
                Code::MissingExtension,
                format!(
                    "Missing extension implementation: {}/{} (the entry never called covel.provideExtension for it)",
                    found.pid,
                    decl.key()
                ),
                At::Manifest(decl.position),
            );
        }
    }
}

/// One `provideExtension` call; `seen` counts the calls per key so far.
fn check_provided(
    manifest: &Manifest,
    ext: &ProvidedExtension,
    seen: &mut BTreeMap<String, usize>,
    found: &mut Findings<'_>,
) {
    let pid = found.pid;
    let key = format!("{}/{}", ext.point, ext.id);
    let call = At::Call(ext.site.as_ref());
    let point = match contract::lookup_point(&ext.point) {
        Ok(point) => point,
        Err(e) => {
            let code = match e {
                KernelLookupError::Retired { .. } => Code::RetiredContract,
                _ => Code::InvalidExtension,
            };
            found.push(
                code,
                format!("Invalid extension implementation: {pid}/{key}: {e}"),
                call,
            );
            return;
        }
    };
    if point == contract::PointId::PromptSegment && ext.id == STATIC_PROMPT_ID {
        found.push(
            Code::ReservedExtensionId,
            format!("{pid}/{key}: `{STATIC_PROMPT_ID}` is reserved for contributes.prompt"),
            call,
        );
        return;
    }
    if !manifest::is_declaration_id(&ext.id) {
        found.push(
            Code::InvalidExtension,
            format!("Invalid extension implementation: {pid}/{key}: bad id"),
            call,
        );
        return;
    }
    if !ext.handler_is_function {
        found.push(
            Code::InvalidExtension,
            format!(
                "Invalid extension implementation: {pid}/{key}: extension requires a handler function"
            ),
            call,
        );
        return;
    }
    let count = seen.entry(key.clone()).or_default();
    *count += 1;
    if *count == 2 {
        found.push(
            Code::DuplicateExtension,
            format!(
                "Duplicate extension: {pid}/{key} (covel.provideExtension is called twice for it)"
            ),
            call,
        );
        return;
    }
    // Registered but not declared fails the load (a diagnostic here: the loader then keeps no
    // instance of the plugin).
    let declared = manifest
        .extensions
        .iter()
        .any(|d| d.point == point && d.id == ext.id);
    if !declared {
        // A provider of the removed `stage.dialogue@1` has nothing to declare: after its
        // declaration is removed, the call must go too (never "add it back").
        let advice = if point == contract::PointId::UiSlot && ext.id.contains("dialogue") {
            format!(
                "; if it filled the removed `stage.dialogue@1` slot, remove this `covel.provideExtension(\"ui.slot@1\", \"{}\", …)` call as well: speaker name tags come from story segments",
                ext.id
            )
        } else {
            String::new()
        };
        found.push(
            Code::UndeclaredExtension,
            format!(
                "Undeclared extension: {pid}/{key} (add {} to contributes.extensions){advice}",
                declaration_snippet(point, &ext.id)
            ),
            call,
        );
    }
}

/// Tools, actions, services, forms, wires and hooks: each registered as often as it is
/// declared (a hook pair may have several handlers), and each declared one registered.
fn check_named(manifest: &Manifest, registered: &Registrations, found: &mut Findings<'_>) {
    let kinds: [(&str, &Vec<String>, &Vec<String>); 6] = [
        ("tool", &manifest.declared.tools, &registered.tools),
        ("action", &manifest.declared.actions, &registered.actions),
        ("service", &manifest.declared.services, &registered.services),
        ("form", &manifest.declared.forms, &registered.forms),
        ("wire", &manifest.declared.wires, &registered.wires),
        ("hook", &manifest.declared.hooks, &registered.hooks),
    ];
    for (kind, declared, done) in kinds {
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for name in done {
            *counts.entry(name.as_str()).or_default() += 1;
        }
        for (name, count) in &counts {
            let allowed = declared.iter().filter(|d| d.as_str() == *name).count();
            // Several handlers for one declared hook pair are allowed.
            let too_many = if kind == "hook" {
                allowed == 0
            } else {
                *count > allowed
            };
            if too_many {
                // The first call beyond what is declared (the only one for an undeclared name).
                let site = registered.site_of(
                    &format!("{kind}:{name}"),
                    if kind == "hook" { 0 } else { allowed },
                );
                found.push(
                    Code::UndeclaredRegistration,
                    undeclared_registration(kind, name, *count, allowed),
                    At::Call(site),
                );
            }
        }
        for name in declared {
            if !counts.contains_key(name.as_str()) {
                let position = manifest
                    .declared
                    .positions
                    .get(&format!("{kind}:{name}"))
                    .copied();
                found.push(
                    Code::MissingRegistration,
                    format!("Missing registration: {kind}:{name}"),
                    At::Manifest(position),
                );
            }
        }
    }
}

/// Registrations made after the entry settled are refused; each refused call is reported.
fn check_late(registered: &Registrations, found: &mut Findings<'_>) {
    let mut late_seen: BTreeMap<&str, usize> = BTreeMap::new();
    for late in &registered.refused_late {
        let nth = late_seen.entry(late.as_str()).or_default();
        let site = registered.site_of(&format!("late:{late}"), *nth);
        *nth += 1;
        found.push(
            Code::RegistrationClosed,
            format!(
                "plugin entry registration is closed: {late} was registered after the entry settled"
            ),
            At::Call(site),
        );
    }
}

/// What an author reads for a registration PLUGIN.md does not cover: the call that made it and
/// the exact item to add under `contributes` (the same field the loader reads), or, when the
/// name is declared and only registered too often, that the extra call must go. "Undeclared or
/// duplicate" alone left the author to guess which of the two, and where the declaration goes.
fn undeclared_registration(kind: &str, name: &str, count: usize, allowed: usize) -> String {
    let (call, field) = match kind {
        "tool" => ("covel.registerTool", "tools"),
        "action" => ("covel.registerRpc", "actions"),
        "service" => ("covel.registerService", "services"),
        "form" => ("covel.registerFormValidator", "forms"),
        "wire" => ("covel.registerWires", "wires"),
        _ => ("covel.on", "hooks"),
    };
    if allowed > 0 {
        return format!(
            "Duplicate registration: {kind} `{name}` is registered {count} times ({call}) but declared {allowed} time{}: register it once per declaration",
            if allowed == 1 { "" } else { "s" }
        );
    }
    // A hook is registered as `event:enforce`; its declaration is an `{event, enforce}` item.
    let item = match (kind, name.split_once(':')) {
        ("hook", Some((event, enforce))) => format!("{{event: {event}, enforce: {enforce}}}"),
        _ => name.to_string(),
    };
    format!(
        "Undeclared registration: {kind} `{name}` ({call}) is not declared in PLUGIN.md (add {item} to contributes.{field}, or remove the call)"
    )
}

/// The `contributes.extensions` entry that declares a provided extension. A `ui.slot@1` provider
/// also declares the slot it fills (without `slot:` the declaration is refused in turn): the
/// slot whose name holds the id (`cast` → `stage.cast@1`), else a placeholder listing them.
fn declaration_snippet(point: contract::PointId, id: &str) -> String {
    if point != contract::PointId::UiSlot {
        return format!("{{point: {}, id: {id}}}", point.as_str());
    }
    let named = contract::SlotId::ALL.into_iter().find(|slot| {
        slot.as_str()
            .split(['.', '@'])
            .any(|part| part.eq_ignore_ascii_case(id))
    });
    match named {
        Some(slot) => format!("{{point: ui.slot@1, id: {id}, slot: {}}}", slot.as_str()),
        None => {
            let slots: Vec<&str> = contract::SlotId::ALL.iter().map(|s| s.as_str()).collect();
            format!(
                "{{point: ui.slot@1, id: {id}, slot: <the slot it fills: {}>}}",
                slots.join(", ")
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn registered(actions: &[&str], tools: &[&str], hooks: &[&str]) -> Registrations {
        let owned = |items: &[&str]| items.iter().map(|t| t.to_string()).collect();
        Registrations {
            actions: owned(actions),
            tools: owned(tools),
            hooks: owned(hooks),
            ..Registrations::default()
        }
    }

    #[test]
    fn the_not_run_note_names_each_kind_the_studio_never_runs_and_never_tools_or_hooks() {
        assert_eq!(registered(&[], &[], &[]).not_run_note(), None);
        // Tools and hooks run in played turns: no note for them.
        let played = registered(&[], &["scene"], &["PostContextAssembly:normal"]);
        assert!(played.not_run().is_empty());
        assert_eq!(played.not_run_note(), None);
        let actions = registered(&["roll"], &["scene"], &["TurnStart:normal"]);
        assert_eq!(actions.not_run(), [("actions", &["roll".to_string()][..])]);
        assert!(
            actions.not_run_note().is_some_and(
                |n| n.starts_with("registered only: the studio lists these actions but")
            )
        );
    }
}
