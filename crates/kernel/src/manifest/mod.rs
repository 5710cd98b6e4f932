//! PLUGIN.md and RUNTIME.md: parsing (strict YAML frontmatter, [`raw`]) and checking into the
//! resolved [`Manifest`] the kernel runs. Checking never stops at the first problem: it
//! collects every diagnostic it can, each with the file and the line and column of the value.

pub mod frontmatter;
pub mod raw;

use crate::contract::{self, ContractId, KernelLookupError, PointId, SlotId};
use crate::diagnostic::{Code, Diagnostic};
pub use raw::{I18nText, PluginKind, SettingDecl};
use raw::{RawManifest, RawRuntime};
use serde::Serialize;
use serde_saphyr::{Location, Spanned};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The id every plugin's `contributes.prompt` is registered under; plugins may not use it.
pub const STATIC_PROMPT_ID: &str = "static-prompt";

/// The entry module when `entry` is absent (seed page).
pub const DEFAULT_ENTRY: &str = "server/index.js";

/// One `contributes.extensions[]` item, checked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExtensionDecl {
    pub point: PointId,
    pub id: String,
    /// Declared order; 0 when absent.
    pub order: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slot: Option<SlotId>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub watch: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub preview: Vec<String>,
    /// Where its `contributes.extensions` item starts in PLUGIN.md (line, column), for
    /// diagnostics.
    #[serde(skip)]
    pub position: Option<(u32, u32)>,
}

impl ExtensionDecl {
    /// A declaration of a provider no manifest item declares (the kernel's own static-prompt
    /// provider, providers built in tests): no slot, watch or preview list, no position.
    pub fn new(point: PointId, id: impl Into<String>, order: i64) -> ExtensionDecl {
        ExtensionDecl {
            point,
            id: id.into(),
            order,
            slot: None,
            watch: Vec::new(),
            preview: Vec::new(),
            position: None,
        }
    }

    /// `point/id`, the key registrations are matched by.
    pub fn key(&self) -> String {
        format!("{}/{}", self.point, self.id)
    }
}

/// Where a prompt segment goes (shared by static and provided segments).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(untagged)]
pub enum Position {
    Named(NamedPosition),
    Depth { depth: u32 },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NamedPosition {
    System,
    PreHistory,
    PostHistory,
}

/// One `contributes.prompt[]` item, checked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StaticSegment {
    pub id: String,
    pub content: String,
    pub position: Position,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
}

/// A `provides` entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Provided {
    pub contract: String,
    pub default: bool,
}

/// A runtime of the package (inline or `runtimes/<id>/RUNTIME.md`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeInfo {
    /// Full id: `<pluginId>` for an inline runtime, `<pluginId>/<dir>` for a child one.
    pub id: String,
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_contract: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub http: Vec<crate::http::HttpGrant>,
}

/// What the manifest declares besides extensions, checked against what the entry registers.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct DeclaredInventory {
    pub tools: Vec<String>,
    pub actions: Vec<String>,
    pub services: Vec<String>,
    pub forms: Vec<String>,
    pub wires: Vec<String>,
    /// `event:enforce` pairs (enforce defaults to `normal`).
    pub hooks: Vec<String>,
    /// The event topics the package declares (`contributes.events`), with their data schemas:
    /// what the turn loop's `emit-event` accepts.
    pub events: Vec<DeclaredEvent>,
    /// Where each declaration's item starts in PLUGIN.md, by `kind:name` (tool, action, service,
    /// form, wire, hook), for diagnostics.
    #[serde(skip)]
    pub positions: BTreeMap<String, (u32, u32)>,
}

/// One `contributes.events` entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DeclaredEvent {
    pub topic: String,
    pub schema: serde_json::Value,
}

/// A checked root manifest.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    pub id: String,
    pub kind: PluginKind,
    pub version: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub display_name: Option<I18nText>,
    pub description: I18nText,
    pub provides: Vec<Provided>,
    pub requires: Vec<String>,
    pub optional: Vec<String>,
    pub conflicts: Vec<String>,
    /// Entry module relative to the plugin root, when there is one to run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entry: Option<String>,
    /// Whether `entry` was written in the manifest (a missing explicit entry is an error, a
    /// missing default one is not).
    #[serde(skip)]
    pub entry_explicit: bool,
    /// Where an explicit `entry:` value is written in PLUGIN.md, for diagnostics.
    #[serde(skip)]
    pub entry_position: Option<(u32, u32)>,
    pub extensions: Vec<ExtensionDecl>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub static_prompt: Vec<StaticSegment>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub settings: Vec<SettingDecl>,
    pub declared: DeclaredInventory,
    pub runtimes: Vec<RuntimeInfo>,
    /// The package's Markdown body (the inline runtime's prompt, or documentation).
    #[serde(skip)]
    pub body: String,
    /// The PLUGIN.md line the body starts on (for diagnostics inside it).
    #[serde(skip)]
    pub body_first_line: u32,
}

impl Manifest {
    /// The full ids of the package's runtimes (what a provider's ownership checks compare).
    pub fn runtime_ids(&self) -> Vec<String> {
        self.runtimes.iter().map(|r| r.id.clone()).collect()
    }

    /// Every origin the package may reach, with its methods (`permissions.http` of all its
    /// runtimes).
    pub fn http_grants(&self) -> Vec<crate::http::HttpGrant> {
        let mut grants: Vec<crate::http::HttpGrant> =
            self.runtimes.iter().flat_map(|r| r.http.clone()).collect();
        grants.sort_by(|a, b| a.origin.cmp(&b.origin));
        grants.dedup();
        grants
    }
}

/// Parses and checks a root PLUGIN.md. `file` is the path shown in diagnostics and `folder_name`
/// the plugin's directory name (the id must equal it).
pub fn parse_plugin_md(
    text: &str,
    file: &Path,
    folder_name: &str,
) -> (Option<Manifest>, Vec<Diagnostic>) {
    let mut diags = Vec::new();
    let split = match frontmatter::split(text) {
        Ok(split) => split,
        Err(e) => {
            diags.push(
                Diagnostic::new(Code::ManifestFrontmatter, e.to_string())
                    .file(file)
                    .at(1, 1),
            );
            return (None, diags);
        }
    };
    let offset = split.yaml_first_line - 1;
    if let Some(flat) = flat_manifest(split.yaml, file, offset) {
        diags.push(flat);
        return (None, diags);
    }
    let raw: RawManifest = match crate::yaml::from_str(split.yaml) {
        Ok(raw) => raw,
        Err(e) => {
            diags.push(e.diagnostic(Code::ManifestSchema, file, offset));
            return (None, diags);
        }
    };
    let mut checker = Checker {
        file,
        offset,
        yaml: split.yaml,
        diags,
    };
    let mut manifest = checker.check(raw, split.body, folder_name);
    manifest.body_first_line = split.body_first_line;
    let diags = checker.diags;
    (Some(manifest), diags)
}

/// Top-level keys of the flat manifest format Covel read before 0.0.42, with where each moved.
const FLAT_FIELDS: &[(&str, &str)] = &[
    ("name", "`id` (equal to the folder name) and `displayName`"),
    ("pluginType", "`kind`"),
    ("outputKind", "the runtime's `io.output.contract`"),
    (
        "capabilities",
        "`contributes.tools` / `contributes.extensions`",
    ),
    (
        "runtimeType",
        "the `runtime:` block (`type: function | agent`)",
    ),
    ("userSettings", "`contributes.settings`"),
    ("dataSchemas", "`contributes.data`"),
];

/// Recognises a pre-0.0.42 flat manifest as a whole, so the author gets the migration in one
/// message rather than one unknown field at a time.
fn flat_manifest(yaml: &str, file: &Path, offset: u32) -> Option<Diagnostic> {
    let top_level_key = |line: &str| -> Option<String> {
        let key = line.split(':').next()?;
        (!line.starts_with([' ', '\t', '#', '-']) && line.contains(':') && !key.is_empty())
            .then(|| key.trim().to_string())
    };
    let keys: Vec<(usize, String)> = yaml
        .lines()
        .enumerate()
        .filter_map(|(i, l)| top_level_key(l).map(|k| (i, k)))
        .collect();
    let flat: Vec<&(usize, String)> = keys
        .iter()
        .filter(|(_, k)| FLAT_FIELDS.iter().any(|(f, _)| f == k))
        .collect();
    // `name` alone is a plausible typo; the format is recognised from two flat fields on.
    if flat.len() < 2 || keys.iter().any(|(_, k)| k == "contributes") {
        return None;
    }
    let moves: Vec<String> = flat
        .iter()
        .filter_map(|(_, k)| {
            FLAT_FIELDS
                .iter()
                .find(|(f, _)| f == k)
                .map(|(f, to)| format!("`{f}` → {to}"))
        })
        .collect();
    let first_line = flat.first().map_or(0, |(i, _)| *i);
    Some(
        Diagnostic::new(
            Code::ManifestSchema,
            format!(
                "this is a flat manifest of Covel before 0.0.42, which current Covel does not read. Migrate it to the package format: {}; a runtime prompt becomes the PLUGIN.md body (one runtime) or runtimes/<id>/RUNTIME.md (several), and a child runtimes/<id>/PLUGIN.md becomes RUNTIME.md",
                moves.join("; ")
            ),
        )
        .file(file)
        .at(u32::try_from(first_line + 1).unwrap_or(u32::MAX).saturating_add(offset), 1),
    )
}

/// Parses and checks a `runtimes/<dir>/RUNTIME.md`.
pub fn parse_runtime_md(
    text: &str,
    file: &Path,
    plugin_id: &str,
    dir: &str,
) -> (Option<RuntimeInfo>, Vec<Diagnostic>) {
    let mut diags = Vec::new();
    if !is_runtime_dir_name(dir) {
        diags.push(
            Diagnostic::new(
                Code::InvalidField,
                format!("runtime folder `{dir}` must match ^[a-z][a-z0-9-]*$"),
            )
            .file(file),
        );
    }
    let split = match frontmatter::split(text) {
        Ok(split) => split,
        Err(e) => {
            diags.push(
                Diagnostic::new(Code::ManifestFrontmatter, e.to_string())
                    .file(file)
                    .at(1, 1),
            );
            return (None, diags);
        }
    };
    match crate::yaml::from_str::<RawRuntime>(split.yaml) {
        Ok(raw) => (
            Some(runtime_info(format!("{plugin_id}/{dir}"), &raw)),
            diags,
        ),
        Err(e) => {
            diags.push(e.diagnostic(Code::ManifestSchema, file, split.yaml_first_line - 1));
            (None, diags)
        }
    }
}

fn runtime_info(id: String, raw: &RawRuntime) -> RuntimeInfo {
    let output_contract = raw
        .io
        .as_ref()
        .and_then(|io| io.pointer("/output/contract"))
        .and_then(|c| c.as_str())
        .map(str::to_string);
    let http = raw
        .permissions
        .as_ref()
        .map(|p| {
            p.http
                .iter()
                .map(|h| crate::http::HttpGrant {
                    origin: h.origin.clone(),
                    methods: h.methods.clone(),
                })
                .collect()
        })
        .unwrap_or_default();
    RuntimeInfo {
        id,
        kind: raw.kind.clone(),
        output_contract,
        http,
    }
}

fn to_u32(n: u64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

fn is_plugin_id(id: &str) -> bool {
    let mut chars = id.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

fn is_runtime_dir_name(name: &str) -> bool {
    is_plugin_id(name)
}

/// `^[a-zA-Z0-9][\w.-]*$`: extension, service and tool ids.
pub fn is_declaration_id(id: &str) -> bool {
    let mut chars = id.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '-')
}

struct Checker<'a> {
    file: &'a Path,
    offset: u32,
    /// The frontmatter text the locations point into.
    yaml: &'a str,
    diags: Vec<Diagnostic>,
}

impl Checker<'_> {
    fn at(&self, location: &Location) -> Option<(u32, u32)> {
        (location.line() > 0).then(|| {
            (
                to_u32(location.line()) + self.offset,
                to_u32(location.column()),
            )
        })
    }

    /// Where a sequence item starts: its `-` indicator when only blanks separate it from the
    /// item's first value (the value's own position otherwise, e.g. in a flow sequence).
    fn item_at(&self, location: &Location) -> Option<(u32, u32)> {
        let (line, column) = (location.line(), location.column());
        if line == 0 {
            return None;
        }
        let lines: Vec<&str> = self.yaml.lines().collect();
        let (mut l, mut c) = (line as usize - 1, column as usize - 1);
        loop {
            let chars: Vec<char> = lines
                .get(l)
                .map(|t| t.chars().collect())
                .unwrap_or_default();
            let before = &chars[..c.min(chars.len())];
            match before.iter().rposition(|ch| !ch.is_whitespace()) {
                Some(i) if before[i] == '-' => {
                    return Some((to_u32(l as u64 + 1) + self.offset, to_u32(i as u64 + 1)));
                }
                Some(_) => return self.at(location),
                None if l == 0 => return self.at(location),
                None => {
                    l -= 1;
                    c = usize::MAX;
                }
            }
        }
    }

    fn push<T>(&mut self, code: Code, message: String, spanned: &Spanned<T>) {
        let position = self.at(&spanned.referenced);
        self.diags.push(
            Diagnostic::new(code, message)
                .file(self.file)
                .at_opt(position),
        );
    }

    fn push_plain(&mut self, code: Code, message: String) {
        self.diags
            .push(Diagnostic::new(code, message).file(self.file));
    }

    fn check_contract_list(&mut self, field: &str, items: &[Spanned<String>]) -> Vec<String> {
        let mut out = Vec::new();
        for (index, item) in items.iter().enumerate() {
            match ContractId::parse(&item.value) {
                Err(e) => self.push(Code::InvalidField, format!("{field}[{index}]: {e}"), item),
                Ok(_) => {
                    if let Some(problem) = retired_kernel_reference(&item.value) {
                        self.push(
                            Code::RetiredContract,
                            format!("{field}[{index}]: {problem}"),
                            item,
                        );
                    }
                }
            }
            out.push(item.value.clone());
        }
        out
    }

    fn check(&mut self, raw: RawManifest, body: &str, folder_name: &str) -> Manifest {
        let id = raw.id.value.clone();
        if !is_plugin_id(&id) {
            self.push(
                Code::InvalidField,
                format!("id `{id}` must match ^[a-z][a-z0-9-]*$"),
                &raw.id,
            );
        } else if id != folder_name {
            self.push(
                Code::IdMismatch,
                format!(
                    "id `{id}` must match plugin directory `{folder_name}` (rename one of them)"
                ),
                &raw.id,
            );
        }
        for tag in &raw.tags {
            if tag.value.starts_with("role:") {
                self.push(
                    Code::RoleTag,
                    format!(
                        "tag `{}`: role tags are replaced by contracts (use `provides`)",
                        tag.value
                    ),
                    tag,
                );
            }
        }
        let mut provides = Vec::new();
        for entry in &raw.provides {
            let contract = entry.contract().to_string();
            if let Err(e) = ContractId::parse(&contract) {
                self.push_plain(Code::InvalidField, format!("provides: {e}"));
            }
            provides.push(Provided {
                contract,
                default: entry.is_default(),
            });
        }
        let requires = self.check_contract_list("requires", &raw.requires);
        let optional = self.check_contract_list("optional", &raw.optional);
        let mut conflicts = Vec::new();
        for (index, item) in raw.conflicts.iter().enumerate() {
            if contract::is_kernel_contract_name(&item.value) {
                self.push(
                    Code::InvalidConflict,
                    format!(
                        "conflicts[{index}]: `conflicts` cannot target kernel extension contract `{}`; the point's mode controls how providers combine",
                        item.value
                    ),
                    item,
                );
            } else if let Err(e) = ContractId::parse(&item.value) {
                self.push(Code::InvalidField, format!("conflicts[{index}]: {e}"), item);
            }
            conflicts.push(item.value.clone());
        }

        let (entry, entry_explicit) = match &raw.entry {
            Some(entry) => {
                self.check_entry_path(entry);
                (Some(entry.value.trim_start_matches("./").to_string()), true)
            }
            None => (Some(DEFAULT_ENTRY.to_string()), false),
        };

        let contributes = raw.contributes.unwrap_or_default();
        let extensions = self.check_extensions(&contributes.extensions);
        let static_prompt = self.check_static_prompt(&contributes.prompt);
        for command in &contributes.commands {
            if !contributes
                .actions
                .iter()
                .any(|a| a.value == command.action.value)
            {
                self.push(
                    Code::InvalidField,
                    format!(
                        "command `{}` uses action `{}`, which contributes.actions does not declare",
                        command.name, command.action.value
                    ),
                    &command.action,
                );
            }
        }
        let mut positions = BTreeMap::new();
        let mut names = |kind: &str, items: &[Spanned<String>]| -> Vec<String> {
            for item in items {
                if let Some(at) = self.item_at(&item.referenced) {
                    positions
                        .entry(format!("{kind}:{}", item.value))
                        .or_insert(at);
                }
            }
            items.iter().map(|i| i.value.clone()).collect()
        };
        let (tools, actions, services, forms, wires) = (
            names("tool", &contributes.tools),
            names("action", &contributes.actions),
            names("service", &contributes.services),
            names("form", &contributes.forms),
            names("wire", &contributes.wires),
        );
        let mut hooks = Vec::new();
        for hook in &contributes.hooks {
            let key = format!(
                "{}:{}",
                hook.value.event,
                hook.value.enforce.as_deref().unwrap_or("normal")
            );
            if let Some(at) = self.item_at(&hook.referenced) {
                positions.entry(format!("hook:{key}")).or_insert(at);
            }
            hooks.push(key);
        }
        let declared = DeclaredInventory {
            tools,
            actions,
            services,
            forms,
            wires,
            hooks,
            events: contributes
                .events
                .iter()
                .map(|e| DeclaredEvent {
                    topic: e.topic.clone(),
                    schema: e.schema.clone(),
                })
                .collect(),
            positions,
        };
        let runtimes = raw
            .runtime
            .as_ref()
            .map(|r| vec![runtime_info(id.clone(), r)])
            .unwrap_or_default();

        Manifest {
            id,
            kind: raw.kind,
            version: raw.version.unwrap_or_else(|| "0.0.0".to_string()),
            display_name: raw.display_name,
            description: raw.description,
            provides,
            requires,
            optional,
            conflicts,
            entry,
            entry_explicit,
            entry_position: raw.entry.as_ref().and_then(|e| self.at(&e.referenced)),
            extensions,
            static_prompt,
            settings: contributes.settings,
            declared,
            runtimes,
            body: body.to_string(),
            body_first_line: 1,
        }
    }

    fn check_entry_path(&mut self, entry: &Spanned<String>) {
        let path = entry.value.as_str();
        if path.starts_with('/') || path.split(['/', '\\']).any(|part| part == "..") {
            self.push(
                Code::PathEscapesRoot,
                format!("entry `{path}` must be a plugin-relative path without `..`"),
                entry,
            );
        } else if ![".js", ".mjs", ".cjs", ".ts", ".mts"]
            .iter()
            .any(|ext| path.ends_with(ext))
        {
            self.push(
                Code::InvalidField,
                format!("entry `{path}` must be a .js, .mjs, .cjs, .ts or .mts module"),
                entry,
            );
        }
    }

    fn check_extensions(&mut self, raw: &[Spanned<raw::RawExtension>]) -> Vec<ExtensionDecl> {
        let mut out: Vec<ExtensionDecl> = Vec::new();
        for (index, item) in raw.iter().enumerate() {
            let ext = &item.value;
            let where_ = format!("contributes.extensions[{index}]");
            if let Err(e) = ContractId::parse(&ext.point.value) {
                self.push(
                    Code::InvalidField,
                    format!("{where_}.point: {e}"),
                    &ext.point,
                );
                continue;
            }
            let point = match contract::lookup_point(&ext.point.value) {
                Ok(point) => point,
                Err(e) => {
                    let code = match e {
                        KernelLookupError::Unknown { .. } => Code::UnknownContract,
                        _ => Code::RetiredContract,
                    };
                    self.push(code, format!("{where_}.point: {e}"), &ext.point);
                    continue;
                }
            };
            if !is_declaration_id(&ext.id.value) {
                self.push(
                    Code::InvalidField,
                    format!(
                        "{where_}.id `{}` must match ^[a-zA-Z0-9][\\w.-]*$",
                        ext.id.value
                    ),
                    &ext.id,
                );
                continue;
            }
            if point == PointId::PromptSegment && ext.id.value == STATIC_PROMPT_ID {
                self.push(
                    Code::ReservedExtensionId,
                    format!("{where_}.id: `{STATIC_PROMPT_ID}` is reserved for contributes.prompt"),
                    &ext.id,
                );
                continue;
            }
            let slot = match (&ext.slot, point) {
                (Some(slot), PointId::UiSlot) => match contract::lookup_slot(&slot.value) {
                    Ok(slot) => Some(slot),
                    Err(e) => {
                        let (code, advice) = match e {
                            KernelLookupError::Unknown { .. } => {
                                (Code::UnknownContract, String::new())
                            }
                            // No successor: the provider goes away entirely, on both sides, or
                            // the loader then reports the remaining call as undeclared.
                            KernelLookupError::Removed { .. } => (
                                Code::RetiredContract,
                                format!(
                                    ". Remove this declaration and the entry's `covel.provideExtension(\"ui.slot@1\", \"{}\", …)` call together",
                                    ext.id.value
                                ),
                            ),
                            KernelLookupError::Retired { .. } => {
                                (Code::RetiredContract, String::new())
                            }
                        };
                        self.push(code, format!("{where_}.slot: {e}{advice}"), slot);
                        continue;
                    }
                },
                (None, PointId::UiSlot) => {
                    self.push(
                        Code::InvalidField,
                        format!("{where_}: a ui.slot@1 provider must declare the `slot` it fills"),
                        &ext.id,
                    );
                    continue;
                }
                (Some(slot), _) => {
                    self.push(
                        Code::InvalidField,
                        format!("{where_}.slot: only ui.slot@1 providers declare a slot"),
                        slot,
                    );
                    continue;
                }
                (None, _) => None,
            };
            let order = match &ext.order {
                None => 0,
                Some(order) if order.value.fract() == 0.0 && order.value.abs() < 9.0e15 => {
                    order.value as i64
                }
                Some(order) => {
                    self.push(
                        Code::InvalidField,
                        format!("{where_}.order must be an integer (got {})", order.value),
                        order,
                    );
                    continue;
                }
            };
            let decl = ExtensionDecl {
                point,
                id: ext.id.value.clone(),
                order,
                slot,
                watch: ext.watch.clone(),
                preview: ext.preview.clone(),
                position: self.item_at(&item.referenced),
            };
            if out.iter().any(|d| d.point == decl.point && d.id == decl.id) {
                self.push(
                    Code::DuplicateExtension,
                    format!("{where_}: `{}` is declared twice", decl.key()),
                    &ext.id,
                );
                continue;
            }
            out.push(decl);
        }
        out
    }

    fn check_static_prompt(&mut self, raw: &[raw::RawStaticSegment]) -> Vec<StaticSegment> {
        let mut out = Vec::new();
        for (index, seg) in raw.iter().enumerate() {
            let position: Result<Position, _> = serde_json::from_value(seg.position.clone());
            let Ok(position) = position else {
                self.push_plain(
                    Code::InvalidField,
                    format!("contributes.prompt[{index}].position must be system, pre-history, post-history or {{depth: n}}"),
                );
                continue;
            };
            if let Some(role) = &seg.role
                && !["system", "user", "assistant"].contains(&role.as_str())
            {
                self.push_plain(Code::InvalidField, format!("contributes.prompt[{index}].role `{role}` must be system, user or assistant"));
                continue;
            }
            if seg.id.is_empty() {
                self.push_plain(
                    Code::InvalidField,
                    format!("contributes.prompt[{index}].id must not be empty"),
                );
                continue;
            }
            out.push(StaticSegment {
                id: seg.id.clone(),
                content: seg.content.clone(),
                position,
                role: seg.role.clone(),
            });
        }
        out
    }
}

/// A reference to a kernel contract under a version that is not current.
fn retired_kernel_reference(id: &str) -> Option<String> {
    if contract::kernel_contract(id).is_some() || !contract::is_kernel_contract_name(id) {
        return None;
    }
    let point = contract::lookup_point(id).err();
    let slot = contract::lookup_slot(id).err();
    match (point, slot) {
        (Some(e @ KernelLookupError::Retired { .. }), _)
        | (_, Some(e @ KernelLookupError::Retired { .. })) => Some(e.to_string()),
        (_, Some(e @ KernelLookupError::Removed { .. })) => Some(e.to_string()),
        _ => None,
    }
}

/// Resolves a plugin-relative path, refusing anything that leaves the root (after symlinks).
pub fn resolve_inside(root: &Path, relative: &str) -> Result<PathBuf, Code> {
    let joined = root.join(relative.trim_start_matches("./"));
    let canonical_root = root.canonicalize().map_err(|_| Code::MissingFile)?;
    let canonical = joined.canonicalize().map_err(|_| Code::MissingFile)?;
    if canonical.starts_with(&canonical_root) {
        Ok(canonical)
    } else {
        Err(Code::PathEscapesRoot)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type ItemAt = Option<(u32, u32)>;

    fn declared_at(yaml_body: &str) -> (Vec<ItemAt>, BTreeMap<String, (u32, u32)>) {
        let text = format!(
            "---\nid: probe\nkind: plugin\ndescription: Positions.\ncontributes:\n{yaml_body}---\n"
        );
        let (manifest, diags) = parse_plugin_md(&text, Path::new("probe/PLUGIN.md"), "probe");
        assert!(diags.is_empty(), "{diags:?}");
        let manifest = manifest.expect("parses");
        (
            manifest.extensions.iter().map(|e| e.position).collect(),
            manifest.declared.positions,
        )
    }

    #[test]
    fn declarations_point_at_the_start_of_their_sequence_item() {
        // PLUGIN.md lines: 1 `---`, 2-4 id/kind/description, 5 `contributes:`, items from 6.
        let (extensions, _) = declared_at(
            "  extensions:\n    - point: prompt.segment@1\n      id: a\n    - { point: prompt.segment@1, id: b }\n    -\n      id: c\n      point: prompt.segment@1\n",
        );
        assert_eq!(
            extensions,
            [Some((7, 5)), Some((9, 5)), Some((10, 5))],
            "the `-` of each item, also when it stands alone"
        );
        let (_, positions) = declared_at(
            "  tools:\n    - roll\n  hooks:\n    - event: TurnStart\n  actions: [reset, undo]\n",
        );
        assert_eq!(positions["tool:roll"], (7, 5));
        assert_eq!(positions["hook:TurnStart:normal"], (9, 5));
        assert_eq!(
            positions["action:undo"],
            (10, 20),
            "a flow sequence item starts at its value"
        );
    }
}
