//! Plugins and the resolution on the wire: each plugin's status, diagnostics, declared
//! providers and registered inventory, and which plugins the session runs.

use super::common::{Diagnostic, Number, PointId, SlotId, all};
use covel_kernel::manifest;
use covel_kernel::registration;
use covel_kernel::resolver;
use serde::Serialize;
use specta::Type;
use std::collections::BTreeMap;

/// Text in one language, or by locale.
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
#[serde(untagged)]
pub enum I18n {
    Text(String),
    Map(BTreeMap<String, String>),
}

impl From<&manifest::I18nText> for I18n {
    fn from(t: &manifest::I18nText) -> Self {
        match t {
            manifest::I18nText::Text(s) => I18n::Text(s.clone()),
            manifest::I18nText::Map(m) => I18n::Map(m.clone()),
        }
    }
}

/// A plugin's state in the session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Type)]
#[serde(rename_all = "kebab-case")]
pub enum PluginStatus {
    Active,
    Rejected,
    Inactive,
    Failed,
    LastGood,
}

/// Why the resolver did not activate a plugin (or could not satisfy a contract).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Type)]
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
    LoadFailed,
}

impl From<resolver::RejectionCode> for RejectionCode {
    fn from(c: resolver::RejectionCode) -> Self {
        use resolver::RejectionCode as K;
        match c {
            K::InvalidConflict => RejectionCode::InvalidConflict,
            K::UnknownPlugin => RejectionCode::UnknownPlugin,
            K::ApprovalRequired => RejectionCode::ApprovalRequired,
            K::Excluded => RejectionCode::Excluded,
            K::MissingProvider => RejectionCode::MissingProvider,
            K::AmbiguousProvider => RejectionCode::AmbiguousProvider,
            K::Conflict => RejectionCode::Conflict,
            K::SingleProviderConflict => RejectionCode::SingleProviderConflict,
            K::DefaultReplaced => RejectionCode::DefaultReplaced,
            K::LoadFailed => RejectionCode::LoadFailed,
        }
    }
}

/// A plugin the session will not run, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct Rejection {
    pub plugin: String,
    pub code: RejectionCode,
    pub message: String,
    pub candidates: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contract: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load_code: Option<String>,
}

impl From<&resolver::Rejection> for Rejection {
    fn from(r: &resolver::Rejection) -> Self {
        Rejection {
            plugin: r.plugin.clone(),
            code: r.code.into(),
            message: r.message.clone(),
            candidates: r.candidates.clone(),
            contract: r.contract.clone(),
            load_code: r.load_code.clone(),
        }
    }
}

/// A world-required contract nothing active provides.
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct Unmet {
    pub contract: String,
    pub code: RejectionCode,
    pub candidates: Vec<String>,
    pub blocking: bool,
}

/// The resolver's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct Resolution {
    pub active: Vec<String>,
    pub auto_added: Vec<String>,
    pub rejected: Vec<Rejection>,
    pub unmet: Vec<Unmet>,
}

impl From<&resolver::Resolution> for Resolution {
    fn from(r: &resolver::Resolution) -> Self {
        Resolution {
            active: r.active.clone(),
            auto_added: r.auto_added.clone(),
            rejected: all(&r.rejected),
            unmet: r
                .unmet
                .iter()
                .map(|u| Unmet {
                    contract: u.contract.clone(),
                    code: u.code.into(),
                    candidates: u.candidates.clone(),
                    blocking: u.blocking,
                })
                .collect(),
        }
    }
}

/// A provider declared in PLUGIN.md.
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct ExtensionDecl {
    pub point: PointId,
    pub id: String,
    #[specta(type = Number)]
    pub order: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slot: Option<SlotId>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[specta(optional)]
    pub watch: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[specta(optional)]
    pub preview: Vec<String>,
}

impl From<&manifest::ExtensionDecl> for ExtensionDecl {
    fn from(e: &manifest::ExtensionDecl) -> Self {
        ExtensionDecl {
            point: e.point.into(),
            id: e.id.clone(),
            order: e.order,
            slot: e.slot.map(Into::into),
            watch: e.watch.clone(),
            preview: e.preview.clone(),
        }
    }
}

/// Where the plugin's code made a registration call: what "open in editor" opens.
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct SourceSite {
    pub file: String,
    pub line: u32,
    pub column: u32,
}

impl From<&registration::Site> for SourceSite {
    fn from(site: &registration::Site) -> Self {
        SourceSite {
            file: site.file.display().to_string(),
            line: site.line,
            column: site.column,
        }
    }
}

/// A registered extension.
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct ProvidedExtension {
    pub point: String,
    pub id: String,
    pub handler_is_function: bool,
    /// Its `provideExtension` call, when the engine could tell.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub site: Option<SourceSite>,
}

/// A registration call other than an extension's (`tool:set-scene`, `hook:PostLLMResponse:normal`)
/// and where it was made.
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct RegistrationSite {
    pub key: String,
    pub site: SourceSite,
}

/// What a plugin's entry registered, by kind.
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct Registrations {
    pub extensions: Vec<ProvidedExtension>,
    pub tools: Vec<String>,
    pub actions: Vec<String>,
    pub services: Vec<String>,
    pub forms: Vec<String>,
    pub wires: Vec<String>,
    pub hooks: Vec<String>,
    pub refused_late: Vec<String>,
    /// Where the tools, hooks, … were registered, in call order.
    pub sites: Vec<RegistrationSite>,
    /// That the studio lists but never runs the tools, hooks, … above, when there are any
    /// (`registration::Registrations::not_run_note`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_run_note: Option<String>,
}

impl From<&registration::Registrations> for Registrations {
    fn from(r: &registration::Registrations) -> Self {
        Registrations {
            extensions: r
                .extensions
                .iter()
                .map(|e| ProvidedExtension {
                    point: e.point.clone(),
                    id: e.id.clone(),
                    handler_is_function: e.handler_is_function,
                    site: e.site.as_ref().map(Into::into),
                })
                .collect(),
            tools: r.tools.clone(),
            actions: r.actions.clone(),
            services: r.services.clone(),
            forms: r.forms.clone(),
            wires: r.wires.clone(),
            hooks: r.hooks.clone(),
            refused_late: r.refused_late.clone(),
            sites: r
                .sites
                .iter()
                .map(|(key, site)| RegistrationSite {
                    key: key.clone(),
                    site: site.into(),
                })
                .collect(),
            not_run_note: r.not_run_note(),
        }
    }
}

/// One plugin for the Plugins panel.
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct PluginView {
    pub name: String,
    pub status: PluginStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub display_name: Option<I18n>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<I18n>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rejection: Option<Rejection>,
    pub diagnostics: Vec<Diagnostic>,
    /// Hints that do not stop the plugin.
    pub hints: Vec<Diagnostic>,
    pub providers: Vec<ExtensionDecl>,
    pub has_static_prompt: bool,
    pub inventory: Registrations,
    pub runtimes: Vec<String>,
    #[specta(type = Number)]
    pub load_ms: f64,
}
