//! The PLUGIN.md and RUNTIME.md frontmatter exactly as written: the first of the two parsing
//! steps. Every struct is strict (`deny_unknown_fields`), so a misspelt key is an error with
//! its line and column instead of a silently ignored setting. Fields that the studio does not
//! interpret (runtime schedules, data authoring hints…) are kept as JSON values.

use serde::Deserialize;
use serde_json::Value;
use serde_saphyr::Spanned;
use std::collections::BTreeMap;

/// Text in one language, or a locale → text map.
#[derive(Debug, Clone, Deserialize, serde::Serialize, PartialEq)]
#[serde(untagged)]
pub enum I18nText {
    Text(String),
    Map(BTreeMap<String, String>),
}

#[derive(Debug, Clone, Copy, Deserialize, serde::Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum PluginKind {
    Core,
    Plugin,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawManifest {
    pub id: Spanned<String>,
    pub kind: PluginKind,
    pub version: Option<String>,
    pub covel: Option<String>,
    pub display_name: Option<I18nText>,
    pub description: I18nText,
    #[serde(default)]
    pub tags: Vec<Spanned<String>>,
    pub author: Option<Author>,
    pub license: Option<String>,
    pub homepage: Option<String>,
    #[serde(default)]
    pub provides: Vec<ProvidesEntry>,
    #[serde(default)]
    pub requires: Vec<Spanned<String>>,
    #[serde(default)]
    pub optional: Vec<Spanned<String>>,
    #[serde(default)]
    pub conflicts: Vec<Spanned<String>>,
    #[serde(default)]
    pub contracts: BTreeMap<String, ContractDecl>,
    pub entry: Option<Spanned<String>>,
    pub contributes: Option<Contributes>,
    pub runtime: Option<RawRuntime>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Author {
    pub name: String,
    pub url: Option<String>,
    pub about: Option<String>,
    #[serde(default)]
    pub links: Vec<AuthorLink>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuthorLink {
    pub label: String,
    pub url: String,
}

/// `provides` entry: a contract id, or `{contract, default}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum ProvidesEntry {
    Contract(String),
    Detailed {
        contract: String,
        #[serde(default)]
        default: bool,
    },
}

impl ProvidesEntry {
    pub fn contract(&self) -> &str {
        match self {
            ProvidesEntry::Contract(c) => c,
            ProvidesEntry::Detailed { contract, .. } => contract,
        }
    }

    pub fn is_default(&self) -> bool {
        matches!(self, ProvidesEntry::Detailed { default: true, .. })
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContractDecl {
    pub schema: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Contributes {
    #[serde(default)]
    pub tools: Vec<Spanned<String>>,
    #[serde(default)]
    pub actions: Vec<Spanned<String>>,
    #[serde(default)]
    pub commands: Vec<CommandDecl>,
    #[serde(default)]
    pub services: Vec<Spanned<String>>,
    #[serde(default)]
    pub extensions: Vec<Spanned<RawExtension>>,
    #[serde(default)]
    pub hooks: Vec<Spanned<HookDecl>>,
    #[serde(default)]
    pub wires: Vec<Spanned<String>>,
    #[serde(default)]
    pub forms: Vec<Spanned<String>>,
    #[serde(default)]
    pub events: Vec<EventDecl>,
    #[serde(default)]
    pub settings: Vec<SettingDecl>,
    #[serde(default)]
    pub data: BTreeMap<String, DataDecl>,
    pub ui: Option<UiDecl>,
    #[serde(default)]
    pub world_projections: BTreeMap<String, Value>,
    #[serde(default)]
    pub prompt: Vec<RawStaticSegment>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandDecl {
    pub name: String,
    #[serde(default)]
    pub aliases: Vec<String>,
    pub description: I18nText,
    #[serde(default)]
    pub arguments: Vec<Value>,
    pub action: Spanned<String>,
    #[serde(default)]
    pub context: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawExtension {
    pub point: Spanned<String>,
    pub id: Spanned<String>,
    pub order: Option<Spanned<f64>>,
    pub slot: Option<Spanned<String>>,
    #[serde(default)]
    pub watch: Vec<String>,
    #[serde(default)]
    pub preview: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookDecl {
    pub event: String,
    pub enforce: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventDecl {
    pub topic: String,
    pub schema: Value,
    pub description: Option<I18nText>,
    pub advertise: Option<bool>,
}

#[derive(Debug, Clone, Deserialize, serde::Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SettingDecl {
    pub key: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub default: Option<Value>,
    pub label: I18nText,
    pub description: Option<I18nText>,
    pub min: Option<f64>,
    pub max: Option<f64>,
    pub step: Option<f64>,
    #[serde(default)]
    pub options: Vec<Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DataDecl {
    pub schema: String,
    pub description: Option<I18nText>,
    pub version: u32,
    #[serde(default)]
    pub accepts: Vec<String>,
    pub authoring: Option<Value>,
    pub search: Option<Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UiDecl {
    #[serde(default)]
    pub right: Vec<String>,
    #[serde(default)]
    pub message: Vec<String>,
    #[serde(default)]
    pub left: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawStaticSegment {
    pub id: String,
    pub content: String,
    pub position: Value,
    pub role: Option<String>,
}

/// An inline `runtime:` block or a `runtimes/<id>/RUNTIME.md` frontmatter.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawRuntime {
    #[serde(rename = "type")]
    pub kind: String,
    pub description: Option<I18nText>,
    pub display_name: Option<I18nText>,
    pub schedule: Option<Value>,
    pub io: Option<Value>,
    pub agent: Option<Value>,
    pub function: Option<Value>,
    pub guard: Option<Value>,
    pub effects: Option<Value>,
    pub permissions: Option<Permissions>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Permissions {
    #[serde(default)]
    pub http: Vec<HttpPermission>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpPermission {
    pub origin: String,
    #[serde(default)]
    pub methods: Vec<String>,
}
