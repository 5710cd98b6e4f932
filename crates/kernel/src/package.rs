//! A plugin folder on disk: its checked root manifest, its runtimes, translations and
//! prompt variants. Loading a package reads files but never runs plugin code.

use crate::diagnostic::{Code, Diagnostic};
use crate::files;
use crate::manifest::{self, Manifest, StaticSegment, frontmatter};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// A statically valid plugin folder.
#[derive(Debug, Clone)]
pub struct Package {
    /// The plugin's folder.
    pub root: PathBuf,
    pub manifest: Manifest,
    /// `locales/<locale>.yaml` → its `messages` map (English text → translation).
    pub messages: BTreeMap<String, Map<String, Value>>,
    /// `PLUGIN.zh.md` contents for static segments, by segment id.
    /// The Simplified-Chinese variant (`PLUGIN.zh.md`), when the plugin ships one.
    pub zh: Option<PromptVariant>,
}

/// A `PLUGIN.zh.md`: only the body and the static segments' `content`. Its structure follows
/// the canonical file (upstream writes no ids there), so segment `i` translates canonical
/// segment `i`; an `id`, where one is written, must agree.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PromptVariant {
    pub body: String,
    /// Translated contents, in canonical order (`None` where the variant has none).
    pub static_prompt: Vec<Option<String>>,
}

/// Whether a session locale reads the Simplified-Chinese variant (`PLUGIN.zh.md`): upstream,
/// Simplified-Chinese sessions read the variant, every other language (`zh-TW`, `zh-Hant`
/// included) the canonical English. The rule is [`crate::locale::reads_instruction_variant`].
pub fn reads_zh_variant(locale: &str) -> bool {
    crate::locale::reads_instruction_variant(locale)
}

impl Package {
    pub fn id(&self) -> &str {
        &self.manifest.id
    }

    /// The static prompt for a locale: the variant's content where the session reads the
    /// variant and it translates that segment, else the canonical segments.
    pub fn static_prompt_for(&self, locale: &str) -> Vec<StaticSegment> {
        let variant = self.zh.as_ref().filter(|_| reads_zh_variant(locale));
        self.manifest
            .static_prompt
            .iter()
            .enumerate()
            .map(|(i, seg)| {
                let mut seg = seg.clone();
                if let Some(Some(content)) = variant.and_then(|v| v.static_prompt.get(i)) {
                    seg.content = content.clone();
                }
                seg
            })
            .collect()
    }

    /// The prompt body (PLUGIN.md below the frontmatter) for a locale.
    pub fn body_for(&self, locale: &str) -> &str {
        match self
            .zh
            .as_ref()
            .filter(|v| reads_zh_variant(locale) && !v.body.trim().is_empty())
        {
            Some(variant) => &variant.body,
            None => &self.manifest.body,
        }
    }

    /// Whether the plugin ships a locale variant (upstream then marks static segments `turn`,
    /// otherwise `session`).
    pub fn has_prompt_variants(&self) -> bool {
        self.zh.is_some()
    }

    /// The entry module's absolute path, when the package has one to run.
    pub fn entry_path(&self) -> Option<PathBuf> {
        self.manifest.entry.as_ref().map(|e| self.root.join(e))
    }
}

/// The outcome of reading one plugin folder: the package when it is statically valid, and
/// every diagnostic found either way.
#[derive(Debug)]
pub struct PackageLoad {
    pub folder: PathBuf,
    /// The folder name, used as the plugin's name when the manifest cannot be read.
    pub name: String,
    pub package: Option<Package>,
    /// The manifest of a package that failed its checks (for the resolver's explanations only:
    /// it never runs).
    pub declared: Option<Manifest>,
    pub diagnostics: Vec<Diagnostic>,
}

/// Lists the plugin folders (sub-folders holding a PLUGIN.md) of a plugins folder, sorted. A
/// PLUGIN.md of any kind counts (a FIFO, a folder, a dangling link): loading it then says what
/// is wrong with it, rather than the plugin vanishing in silence.
pub fn discover(plugins_dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for entry in fs::read_dir(plugins_dir)? {
        let path = entry?.path();
        if path.is_dir() && fs::symlink_metadata(path.join("PLUGIN.md")).is_ok() {
            out.push(path);
        }
    }
    out.sort();
    Ok(out)
}

/// Reads and statically checks one plugin folder.
pub fn load_package(folder: &Path) -> PackageLoad {
    let name = folder
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let shown = |file: &str| PathBuf::from(&name).join(file);
    let mut diagnostics = Vec::new();
    let manifest_path = folder.join("PLUGIN.md");
    let text = match files::read_confined(folder, &manifest_path, files::MAX_PLUGIN_FILE_BYTES) {
        Ok(text) => text,
        Err(refusal) => {
            diagnostics.push(
                Diagnostic::new(
                    refusal.code(),
                    format!(
                        "cannot read PLUGIN.md: {}",
                        shown_refusal(&refusal, folder, &name)
                    ),
                )
                .file(shown("PLUGIN.md")),
            );
            return finish(folder, name, None, diagnostics);
        }
    };
    let (manifest, diags) = manifest::parse_plugin_md(&text, &shown("PLUGIN.md"), &name);
    diagnostics.extend(diags);
    let Some(mut manifest) = manifest else {
        return finish(folder, name, None, diagnostics);
    };

    load_runtimes(folder, &name, &mut manifest, &mut diagnostics);

    let entry_already_refused = diagnostics.iter().any(|d| d.code == Code::PathEscapesRoot);
    if let Some(entry) = manifest.entry.clone().filter(|_| !entry_already_refused) {
        match manifest::resolve_inside(folder, &entry) {
            Ok(_) => {}
            Err(Code::PathEscapesRoot) => diagnostics.push(
                Diagnostic::new(
                    Code::PathEscapesRoot,
                    format!("entry `{entry}` resolves outside the plugin root"),
                )
                .file(shown("PLUGIN.md"))
                .at_opt(manifest.entry_position),
            ),
            Err(_) if manifest.entry_explicit => diagnostics.push(
                Diagnostic::new(Code::MissingFile, format!("entry file not found: {entry}"))
                    .file(shown("PLUGIN.md"))
                    .at_opt(manifest.entry_position),
            ),
            // No explicit entry and no default file: a package without code (static prompt only).
            Err(_) => manifest.entry = None,
        }
    }

    let messages = load_messages(folder, &name, &mut diagnostics);
    let zh = load_prompt_variant(folder, &name, &manifest, &mut diagnostics);
    let package = Package {
        root: folder.to_path_buf(),
        manifest,
        messages,
        zh,
    };
    finish(folder, name, Some(package), diagnostics)
}

fn finish(
    folder: &Path,
    name: String,
    package: Option<Package>,
    mut diagnostics: Vec<Diagnostic>,
) -> PackageLoad {
    for d in &mut diagnostics {
        if d.plugin.is_none() {
            d.plugin = Some(name.clone());
        }
    }
    // A package with errors is not runnable; what its manifest declares stays known, so the
    // resolver can say "X provides it but failed to load".
    let (package, declared) = if diagnostics.is_empty() {
        (package, None)
    } else {
        (None, package.map(|p| p.manifest))
    };
    PackageLoad {
        folder: folder.to_path_buf(),
        name,
        package,
        declared,
        diagnostics,
    }
}

fn load_runtimes(
    folder: &Path,
    name: &str,
    manifest: &mut Manifest,
    diagnostics: &mut Vec<Diagnostic>,
) {
    let runtimes_dir = folder.join("runtimes");
    if !runtimes_dir.is_dir() {
        return;
    }
    if !manifest.runtimes.is_empty() {
        diagnostics.push(
            Diagnostic::new(
                Code::RuntimeLayout,
                "an inline `runtime` and a `runtimes/` folder cannot coexist",
            )
            .file(PathBuf::from(name).join("PLUGIN.md")),
        );
        return;
    }
    let Ok(entries) = fs::read_dir(&runtimes_dir) else {
        return;
    };
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    for dir in dirs {
        let dir_name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let rel = PathBuf::from(name).join("runtimes").join(&dir_name);
        if dir.join("PLUGIN.md").is_file() {
            diagnostics.push(
                Diagnostic::new(Code::RuntimeLayout, "rename child PLUGIN.md to RUNTIME.md")
                    .file(rel.join("PLUGIN.md")),
            );
            continue;
        }
        let file = dir.join("RUNTIME.md");
        let text = match files::read_confined(folder, &file, files::MAX_PLUGIN_FILE_BYTES) {
            Ok(text) => text,
            Err(files::FileRefusal::Unreadable(..)) if fs::symlink_metadata(&file).is_err() => {
                diagnostics.push(
                    Diagnostic::new(Code::MissingFile, "runtime folder without RUNTIME.md")
                        .file(rel.join("RUNTIME.md")),
                );
                continue;
            }
            Err(refusal) => {
                diagnostics.push(
                    Diagnostic::new(refusal.code(), shown_refusal(&refusal, folder, name))
                        .file(rel.join("RUNTIME.md")),
                );
                continue;
            }
        };
        let (info, diags) =
            manifest::parse_runtime_md(&text, &rel.join("RUNTIME.md"), &manifest.id, &dir_name);
        diagnostics.extend(diags);
        if let Some(info) = info {
            manifest.runtimes.push(info);
        }
    }
}

/// A refusal with the plugin folder shown as the plugin's name (never the checkout's path).
fn shown_refusal(refusal: &files::FileRefusal, folder: &Path, name: &str) -> String {
    let mut text = refusal.to_string();
    for root in [folder.canonicalize().ok(), Some(folder.to_path_buf())]
        .into_iter()
        .flatten()
    {
        text = text.replace(&root.to_string_lossy().into_owned(), name);
    }
    text
}

fn load_messages(
    folder: &Path,
    name: &str,
    diagnostics: &mut Vec<Diagnostic>,
) -> BTreeMap<String, Map<String, Value>> {
    let mut out = BTreeMap::new();
    let Ok(entries) = fs::read_dir(folder.join("locales")) else {
        return out;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Some(locale) = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".yaml"))
        else {
            continue;
        };
        let rel = PathBuf::from(name)
            .join("locales")
            .join(format!("{locale}.yaml"));
        let text = match files::read_confined(folder, &path, files::MAX_PLUGIN_FILE_BYTES) {
            Ok(text) => text,
            Err(refusal) => {
                diagnostics.push(
                    Diagnostic::new(refusal.code(), shown_refusal(&refusal, folder, name))
                        .file(rel),
                );
                continue;
            }
        };
        match crate::yaml::from_str::<Value>(&text) {
            Ok(value) => {
                let messages = value
                    .get("messages")
                    .and_then(Value::as_object)
                    .cloned()
                    .unwrap_or_default();
                out.insert(locale.to_string(), messages);
            }
            Err(e) => diagnostics.push(e.diagnostic(Code::ManifestSchema, &rel, 0)),
        }
    }
    out
}

fn load_prompt_variant(
    folder: &Path,
    name: &str,
    manifest: &Manifest,
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<PromptVariant> {
    let path = folder.join("PLUGIN.zh.md");
    fs::symlink_metadata(&path).ok()?;
    let rel = PathBuf::from(name).join("PLUGIN.zh.md");
    let text = match files::read_confined(folder, &path, files::MAX_PLUGIN_FILE_BYTES) {
        Ok(text) => text,
        Err(refusal) => {
            diagnostics.push(
                Diagnostic::new(refusal.code(), shown_refusal(&refusal, folder, name)).file(rel),
            );
            return None;
        }
    };
    let split = frontmatter::split(&text).ok()?;
    let value = match crate::yaml::from_str::<Option<Value>>(split.yaml) {
        Ok(value) => value.unwrap_or(Value::Null),
        Err(e) => {
            diagnostics.push(e.diagnostic(Code::ManifestSchema, &rel, split.yaml_first_line - 1));
            return None;
        }
    };
    let translated: Vec<&Value> = value
        .pointer("/contributes/prompt")
        .and_then(Value::as_array)
        .map(|a| a.iter().collect())
        .unwrap_or_default();
    let static_prompt = manifest
        .static_prompt
        .iter()
        .enumerate()
        .map(|(i, canonical)| {
            // Ids, where the variant writes them, pick the segment; otherwise position does.
            let by_id = translated
                .iter()
                .find(|t| t.get("id").and_then(Value::as_str) == Some(canonical.id.as_str()));
            let by_index = translated.get(i).filter(|t| t.get("id").is_none());
            by_id
                .or(by_index)
                .and_then(|t| t.get("content"))
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .collect();
    Some(PromptVariant {
        body: split.body.to_string(),
        static_prompt,
    })
}
