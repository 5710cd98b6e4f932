//! Module resolution and loading for plugin code. What a plugin may import:
//!
//! - its own modules, relative to the importing file and confined to the plugin root
//!   (`.js`, `.mjs`, `.json`, and TypeScript `.ts`/`.mts`, stripped as Node's type stripping
//!   does, see [`crate::typescript`]);
//! - the SDK, `@covel/plugin-handlers-utils` and its sub-entries;
//! - `zod`: the genuine zod 4 package, vendored (`crates/js/vendor/zod`);
//! - the pure Node built-ins real plugins use: `node:crypto`, `node:url`, `node:path`;
//! - upstream's workspace packages its bundled plugins import, `@covel/shared` and
//!   `@covel/tools`, as thin modules re-exporting the SDK names those plugins use (each import
//!   is noted: community plugins import them from the SDK).
//!
//! Everything else is refused with a reason that names the importing file and line: other
//! Node built-ins (file system, processes, sockets, workers), upstream's other host-internal
//! packages (`@covel/runtime`, `@covel/store`, …), npm packages.

use crate::typescript;
use rquickjs::loader::{ImportAttributes, Loader, Resolver};
use rquickjs::module::{Declarations, Exports, ModuleDef};
use rquickjs::{Ctx, Error, Function, Module, Result, TypedArray, Value};
use std::cell::RefCell;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};

pub const SDK: &str = "@covel/plugin-handlers-utils";
const HOST: &str = "covel:host";
/// The SDK's locale rule, a module of its own so the studio's UI imports the same code; only the
/// SDK's entries may import it (plugins get its names from the SDK's root entry).
const SDK_LOCALE: &str = "covel:sdk-locale";
const SDK_LOCALE_SOURCE: &str = include_str!("js/sdk/locale.js");
pub const ZOD: &str = "zod";

/// The SDK's entries, served from the binary.
const SDK_ENTRIES: &[(&str, &str)] = &[
    (SDK, include_str!("js/sdk/index.js")),
    (
        "@covel/plugin-handlers-utils/dimensions",
        include_str!("js/sdk/dimensions.js"),
    ),
    (
        "@covel/plugin-handlers-utils/prompts",
        include_str!("js/sdk/prompts.js"),
    ),
    (
        "@covel/plugin-handlers-utils/image-generation",
        include_str!("js/sdk/image-generation.js"),
    ),
];

/// The Node built-ins a plugin may import, under both spellings Node accepts.
const NODE_BUILTINS: &[(&str, &str)] = &[
    ("node:crypto", include_str!("js/node/crypto.js")),
    ("node:url", include_str!("js/node/url.js")),
    ("node:path", include_str!("js/node/path.js")),
];

/// Upstream's workspace packages bundled plugins import, served as thin re-exports of the SDK
/// (see `js/workspace/`). A name they do not re-export stays an import error.
pub const WORKSPACE_PACKAGES: &[(&str, &str)] = &[
    ("@covel/shared", include_str!("js/workspace/shared.js")),
    ("@covel/tools", include_str!("js/workspace/tools.js")),
];

/// The web platform globals QuickJS lacks (AbortController, AbortSignal, TextEncoder,
/// TextDecoder): the bootstrap loads it on first use of one of them. Importing it gives plugin
/// code nothing the globals do not.
pub const WEB: &str = "covel:web";
const WEB_SOURCE: &str = include_str!("js/web/globals.js");

/// structuredClone (the HTML standard's, for what a plugin can hold): loaded on first use.
pub const CLONE: &str = "covel:clone";
const CLONE_SOURCE: &str = include_str!("js/web/clone.js");

/// The sandbox's `Intl` (and `String.prototype.localeCompare`), over ICU4X: the bootstrap loads it
/// on a plugin's first touch of `Intl`; only it may import `covel:intl-host`.
pub const INTL: &str = "covel:intl";
const INTL_SOURCE: &str = include_str!("js/web/intl.js");

/// The turn loop's wrappers of tools, hooks and form validators (loaded by the bootstrap on a
/// plugin's first registration of one).
pub const TURN: &str = "covel:turn";
const TURN_SOURCE: &str = include_str!("js/turn/handlers.js");

/// The vitest stand-in the SDK test runner serves as `vitest` ([`crate::sdk_tests`]); plugin
/// code can never resolve it.
pub const VITEST: &str = "covel:vitest";
const VITEST_SOURCE: &str = include_str!("js/testing/vitest.js");

/// The vendored zod bundle (see `crates/js/vendor/zod/VERSION.json`).
const ZOD_SOURCE: &str = include_str!("../vendor/zod/zod.mjs");

/// Node built-ins that stay out of the sandbox, with what each would have given.
const REFUSED_BUILTINS: &[(&str, &str)] = &[
    ("fs", "file system access"),
    ("fs/promises", "file system access"),
    ("child_process", "processes"),
    ("cluster", "processes"),
    ("process", "the host process"),
    ("os", "the host machine"),
    ("net", "sockets"),
    ("tls", "sockets"),
    ("dgram", "sockets"),
    ("dns", "name lookups"),
    (
        "http",
        "network access (use covel.http, limited to permissions.http)",
    ),
    (
        "https",
        "network access (use covel.http, limited to permissions.http)",
    ),
    (
        "http2",
        "network access (use covel.http, limited to permissions.http)",
    ),
    ("worker_threads", "threads"),
    ("vm", "new JavaScript contexts"),
    ("module", "the module system"),
    ("v8", "the engine's internals"),
];

fn sdk_source(name: &str) -> Option<&'static str> {
    SDK_ENTRIES
        .iter()
        .chain(WORKSPACE_PACKAGES)
        .find(|(n, _)| *n == name)
        .map(|(_, s)| *s)
}

/// `node:crypto` for `crypto` or `node:crypto`; `node:path` also for `path/posix`.
fn node_builtin(name: &str) -> Option<&'static str> {
    let bare = name.strip_prefix("node:").unwrap_or(name);
    let bare = if bare == "path/posix" { "path" } else { bare };
    NODE_BUILTINS
        .iter()
        .find(|(n, _)| n.strip_prefix("node:") == Some(bare))
        .map(|(n, _)| *n)
}

fn builtin_source(canonical: &str) -> Option<&'static str> {
    NODE_BUILTINS
        .iter()
        .find(|(n, _)| *n == canonical)
        .map(|(_, s)| *s)
}

/// The source of a module the binary serves (SDK entries, built-ins, zod), by engine name.
pub fn embedded_source(name: &str) -> Option<&'static str> {
    sdk_source(name)
        .or_else(|| builtin_source(name))
        .or_else(|| (name == ZOD).then_some(ZOD_SOURCE))
        .or_else(|| (name == SDK_LOCALE).then_some(SDK_LOCALE_SOURCE))
        .or_else(|| (name == WEB).then_some(WEB_SOURCE))
        .or_else(|| (name == INTL).then_some(INTL_SOURCE))
        .or_else(|| (name == CLONE).then_some(CLONE_SOURCE))
        .or_else(|| (name == TURN).then_some(TURN_SOURCE))
        .or_else(|| (name == VITEST).then_some(VITEST_SOURCE))
}

/// The SDK entry that stands for a module of upstream's SDK source folder, as its tests import
/// it (`../src/narrative-review.js`): the sub-entries by name, every other source module through
/// the root entry, which re-exports them all as upstream's `index.ts` does.
fn upstream_source_entry(name: &str) -> Option<&'static str> {
    let file = name.strip_prefix("../src/")?;
    let stem = file
        .strip_suffix(".js")
        .or_else(|| file.strip_suffix(".ts"))
        .unwrap_or(file);
    let sub_entry = format!("{SDK}/{stem}");
    Some(
        SDK_ENTRIES
            .iter()
            .map(|(n, _)| *n)
            .find(|n| *n == sub_entry)
            .unwrap_or(SDK),
    )
}

/// Whether a module may import `covel:host` (the SDK and the built-ins; never plugin code).
fn is_host_side(name: &str) -> bool {
    sdk_source(name).is_some() || builtin_source(name).is_some() || name == WEB
}

/// An import the resolver refused, with the importing file and the import's position there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub message: String,
    pub file: Option<PathBuf>,
    pub position: Option<(u32, u32)>,
}

/// A TypeScript module that type stripping could not run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeScriptFailure {
    pub file: PathBuf,
    pub error: typescript::StripError,
}

thread_local! {
    /// The plugin root of the runtime running on this thread (calls run one at a time).
    static PLUGIN_ROOT: RefCell<Option<PathBuf>> = const { RefCell::new(None) };
    /// The first import the resolver refused during a load: QuickJS cuts long error messages,
    /// so the loader reports the refusal from here, whole.
    static LAST_REFUSAL: RefCell<Option<Refusal>> = const { RefCell::new(None) };
    /// The first module file the loader refused to read during a load (too large, not UTF-8,
    /// unreadable), with the reason, which QuickJS would only pass on as "Error loading module".
    static LAST_FILE_REFUSAL: RefCell<Option<covel_kernel::files::FileRefusal>> = const { RefCell::new(None) };
    /// The first TypeScript module that could not be stripped during a load.
    static LAST_TS_FAILURE: RefCell<Option<TypeScriptFailure>> = const { RefCell::new(None) };
    /// Whether the running call drew random bytes (`node:crypto`, `crypto.randomUUID`).
    static RANDOM_USED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether random bytes were drawn since the last call of this function on this thread.
pub fn take_random_used() -> bool {
    RANDOM_USED.with(|r| r.replace(false))
}

/// Takes the refused import's explanation.
pub fn take_refusal() -> Option<Refusal> {
    LAST_REFUSAL.with(|r| r.borrow_mut().take())
}

/// Takes the module file the loader refused to read.
pub fn take_file_refusal() -> Option<covel_kernel::files::FileRefusal> {
    LAST_FILE_REFUSAL.with(|r| r.borrow_mut().take())
}

/// Takes the TypeScript failure of the last load.
pub fn take_typescript_failure() -> Option<TypeScriptFailure> {
    LAST_TS_FAILURE.with(|r| r.borrow_mut().take())
}

pub fn set_thread_root(root: &Path) {
    PLUGIN_ROOT.with(|r| {
        // Calls of one plugin in a row find the root already set.
        if r.borrow().as_deref() != Some(root) {
            *r.borrow_mut() = Some(root.to_path_buf());
        }
    });
}

/// One module of a plugin as the loader read it: its engine name (the canonical path inside
/// the plugin root) and the text read (before TypeScript stripping, which keeps positions).
#[derive(Debug, Clone)]
pub struct LoadedModule {
    pub path: PathBuf,
    pub source: Arc<str>,
}

/// The loader's own record of the modules a plugin's graph loaded: for hot reload (any of them
/// changing reloads the plugin), and the only source of module text for diagnostics. A path
/// that plugin code can influence (a stack frame, an error message) is looked up here, by exact
/// name, and never opened: a module the loader did not load is no module at all.
#[derive(Debug, Clone, Default)]
pub struct ModuleRecords(Arc<Mutex<Vec<LoadedModule>>>);

impl ModuleRecords {
    fn push(&self, module: LoadedModule) {
        if let Ok(mut modules) = self.0.lock() {
            modules.push(module);
        }
    }

    /// The records so far.
    pub fn snapshot(&self) -> Vec<LoadedModule> {
        self.0.lock().map(|m| m.clone()).unwrap_or_default()
    }

    /// The records so far, leaving none (a load hands its records to its report: the engine
    /// keeps no module text once loaded).
    pub fn take(&self) -> Vec<LoadedModule> {
        self.0
            .lock()
            .map(|mut m| std::mem::take(&mut *m))
            .unwrap_or_default()
    }

    /// The text of the module loaded under exactly this name.
    pub fn source(&self, path: &Path) -> Option<Arc<str>> {
        self.0
            .lock()
            .ok()
            .and_then(|modules| source_among(&modules, path))
    }
}

/// The text of the module loaded under exactly `path` among `modules`.
pub fn source_among(modules: &[LoadedModule], path: &Path) -> Option<Arc<str>> {
    modules
        .iter()
        .find(|m| m.path == path)
        .map(|m| Arc::clone(&m.source))
}

/// Resolves specifiers against the plugin root.
pub struct PluginResolver {
    pub root: PathBuf,
    /// What the loader read so far (the importing module's text, for refusal positions).
    pub loaded: ModuleRecords,
    /// Only for the SDK test runner ([`crate::sdk_tests`]): `vitest` is the stand-in, and
    /// upstream's `../src/*.js` imports are the SDK's entries.
    pub sdk_tests: bool,
}

pub(crate) fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Where `specifier` is written in a module's source (1-based line and column of the quote).
pub fn locate_specifier(source: &str, specifier: &str) -> Option<(u32, u32)> {
    for quote in ['"', '\'', '`'] {
        let needle = format!("{quote}{specifier}{quote}");
        if let Some(offset) = source.find(&needle) {
            let before = &source[..offset];
            let line = before.matches('\n').count() + 1;
            let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
            return Some((u32::try_from(line).ok()?, u32::try_from(column).ok()?));
        }
    }
    None
}

fn refuse(loaded: &ModuleRecords, base: &str, name: &str, why: String) -> Error {
    let file = Path::new(base).is_absolute().then(|| PathBuf::from(base));
    let position = file
        .as_deref()
        .and_then(|f| loaded.source(f))
        .and_then(|source| locate_specifier(&source, name));
    LAST_REFUSAL.with(|r| {
        let mut slot = r.borrow_mut();
        if slot.is_none() {
            *slot = Some(Refusal {
                message: why.clone(),
                file,
                position,
            });
        }
    });
    Error::new_resolving_message(base, name, why)
}

/// Why a bare specifier is not available, in words an author can act on.
fn refusal_reason(name: &str) -> String {
    let bare = name.strip_prefix("node:").unwrap_or(name);
    if let Some((_, what)) = REFUSED_BUILTINS
        .iter()
        .find(|(n, _)| *n == bare || bare.starts_with(&format!("{n}/")))
    {
        return format!(
            "`{name}` ({what}) is not available to plugins: plugin code runs in a sandbox with only `node:crypto`, `node:url` and `node:path` of Node's built-ins. Read your own prompt files with `createPromptLoader` from `{SDK}/prompts`"
        );
    }
    if name.starts_with(SDK) {
        let entries: Vec<&str> = SDK_ENTRIES.iter().map(|(n, _)| *n).collect();
        return format!(
            "`{name}` is not an entry of the SDK; its entries are {}",
            entries.join(", ")
        );
    }
    if name.starts_with("@covel/") {
        return format!(
            "`{name}` is a host-internal package of Covel, outside the plugin contract (the seed page: plugin code depends only on the SDK, `{SDK}`)"
        );
    }
    format!(
        "`{name}` is not available in the plugin sandbox: only the plugin's own modules, `{SDK}` (and its /dimensions and /prompts entries), `zod`, `node:crypto`, `node:url` and `node:path` can be imported"
    )
}

impl Resolver for PluginResolver {
    fn resolve<'js>(
        &mut self,
        _ctx: &Ctx<'js>,
        base: &str,
        name: &str,
        _attributes: Option<ImportAttributes<'js>>,
    ) -> Result<String> {
        if sdk_source(name).is_some() || [ZOD, WEB, TURN, INTL, CLONE].contains(&name) {
            return Ok(name.to_string());
        }
        // A host module internal to part of the sandbox: only that part may import it.
        let internal = |allowed: bool, what: &str| {
            if allowed {
                Ok(name.to_string())
            } else {
                Err(refuse(
                    &self.loaded,
                    base,
                    name,
                    format!("{name} is internal to {what}"),
                ))
            }
        };
        for (host, owner, what) in [
            (crate::whatwg_url::URL_HOST, "node:url", "the sandbox's URL"),
            (crate::intl::INTL_HOST, INTL, "the sandbox's Intl"),
        ] {
            if name == host {
                return internal(base == owner, what);
            }
        }
        if let Some(canonical) = node_builtin(name) {
            return Ok(canonical.to_string());
        }
        if self.sdk_tests {
            if name == "vitest" {
                return Ok(VITEST.to_string());
            }
            if let Some(entry) = upstream_source_entry(name) {
                return Ok(entry.to_string());
            }
        }
        if name == HOST || name == SDK_LOCALE {
            return internal(is_host_side(base), "the SDK");
        }
        if !(name.starts_with("./")
            || name.starts_with("../")
            || name.starts_with('/')
            || name.starts_with("file://"))
        {
            let mut why = refusal_reason(name);
            if name.starts_with("@covel/")
                && !name.starts_with(SDK)
                && let Some(source) = self.loaded.source(Path::new(base))
            {
                why.push_str(&crate::imports::host_internal_advice(
                    Path::new(base),
                    &source,
                    name,
                ));
            }
            return Err(refuse(&self.loaded, base, name, why));
        }
        let relative = name.strip_prefix("file://").unwrap_or(name);
        let base_dir = if is_host_side(base) || base == ZOD {
            self.root.clone()
        } else {
            Path::new(base)
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_else(|| self.root.clone())
        };
        let joined = normalize(&base_dir.join(relative));
        let mut candidates = vec![joined.clone()];
        for ext in ["js", "mjs", "ts", "mts"] {
            candidates.push(PathBuf::from(format!("{}.{ext}", joined.display())));
        }
        // TypeScript sources written for `moduleResolution: nodenext` import `./x.js` for `x.ts`.
        if joined.extension().is_some_and(|e| e == "js" || e == "mjs") {
            candidates.push(joined.with_extension(
                if joined.extension().is_some_and(|e| e == "mjs") {
                    "mts"
                } else {
                    "ts"
                },
            ));
        }
        candidates.extend(["index.js", "index.ts"].map(|i| joined.join(i)));
        let found = candidates.iter().find(|p| p.is_file()).ok_or_else(|| {
            refuse(
                &self.loaded,
                base,
                name,
                format!("`{name}` was not found ({})", joined.display()),
            )
        })?;
        let canonical = found
            .canonicalize()
            .map_err(|e| refuse(&self.loaded, base, name, e.to_string()))?;
        let root = self
            .root
            .canonicalize()
            .map_err(|e| refuse(&self.loaded, base, name, e.to_string()))?;
        if !canonical.starts_with(&root) {
            return Err(refuse(
                &self.loaded,
                base,
                name,
                format!("`{name}` resolves outside the plugin root"),
            ));
        }
        Ok(canonical.to_string_lossy().into_owned())
    }
}

/// Loads the SDK, zod and the built-ins from the binary and plugin modules from disk.
pub struct PluginLoader {
    pub loaded: ModuleRecords,
}

impl Loader for PluginLoader {
    fn load<'js>(
        &mut self,
        ctx: &Ctx<'js>,
        name: &str,
        _attributes: Option<ImportAttributes<'js>>,
    ) -> Result<Module<'js, rquickjs::module::Declared>> {
        if name == HOST {
            return Module::declare_def::<HostModule, _>(ctx.clone(), name);
        }
        if name == crate::intl::INTL_HOST {
            return Module::declare_def::<crate::intl::IntlHostModule, _>(ctx.clone(), name);
        }
        if name == crate::whatwg_url::URL_HOST {
            return Module::declare_def::<crate::whatwg_url::UrlHostModule, _>(ctx.clone(), name);
        }
        if let Some(source) = embedded_source(name) {
            return crate::bytecode::declare_shared(ctx, name, source);
        }
        let path = PathBuf::from(name);
        let root = PLUGIN_ROOT
            .with(|r| r.borrow().clone())
            .unwrap_or_else(|| path.parent().map(Path::to_path_buf).unwrap_or_default());
        let source = covel_kernel::files::read_confined(
            &root,
            &path,
            covel_kernel::files::MAX_PLUGIN_FILE_BYTES,
        )
        .map_err(|refusal| {
            let message = refusal.to_string();
            LAST_FILE_REFUSAL.with(|slot| {
                slot.borrow_mut().get_or_insert(refusal);
            });
            Error::new_loading_message(name, message)
        })?;
        self.loaded.push(LoadedModule {
            path: path.clone(),
            source: Arc::from(source.as_str()),
        });
        if path.extension().is_some_and(|e| e == "json") {
            return Module::declare(ctx.clone(), name, format!("export default {source};"));
        }
        let source = if typescript::is_typescript(&path) {
            typescript::strip(name, &source).map_err(|error| {
                let message = error.message.clone();
                LAST_TS_FAILURE.with(|slot| {
                    let mut slot = slot.borrow_mut();
                    if slot.is_none() {
                        *slot = Some(TypeScriptFailure {
                            file: path.clone(),
                            error,
                        });
                    }
                });
                Error::new_loading_message(name, message)
            })?
        } else {
            source
        };
        let module = Module::declare(ctx.clone(), name, source)?;
        // `import.meta.url` is the module's `file:` URL, inside the plugin root, as in Node.
        module.meta()?.set("url", file_url(&path))?;
        Ok(module)
    }
}

/// A `file:` URL for an absolute path, percent-encoding what a URL path cannot hold.
fn file_url(path: &Path) -> String {
    let mut out = String::from("file://");
    for byte in path.to_string_lossy().bytes() {
        match byte {
            b'A'..=b'Z'
            | b'a'..=b'z'
            | b'0'..=b'9'
            | b'/'
            | b'-'
            | b'_'
            | b'.'
            | b'~'
            | b'!'
            | b'$'
            | b'&'
            | b'\''
            | b'('
            | b')'
            | b'*'
            | b'+'
            | b','
            | b';'
            | b'='
            | b':'
            | b'@' => {
                out.push(char::from(byte));
            }
            other => out.push_str(&format!("%{other:02X}")),
        }
    }
    out
}

/// Reads a file the plugin supplies (its own prompt templates), confined to the plugin root;
/// `None` when it does not exist or lies outside.
fn read_plugin_file(relative: &str) -> Option<String> {
    PLUGIN_ROOT.with(|root| {
        let root = root.borrow().clone()?;
        let relative = relative.strip_prefix("file://").unwrap_or(relative);
        let path = normalize(&root.join(relative.trim_start_matches("./")));
        covel_kernel::files::read_confined(&root, &path, covel_kernel::files::MAX_PLUGIN_FILE_BYTES)
            .ok()
    })
}

/// The most bytes one hash may take from plugin code (chunks together).
const MAX_HASHED_BYTES: usize = 64 * 1024 * 1024;

/// The bytes of a chunk `node:crypto` hashes: a string (UTF-8) or an array of byte values, read
/// with the array reader every host function uses ([`crate::convert::array_items`]).
fn chunk_bytes(value: &Value<'_>, left: usize) -> std::result::Result<Vec<u8>, String> {
    if let Some(text) = value.as_string() {
        let text = text.to_string().map_err(|e| e.to_string())?;
        return if text.len() > left {
            Err(format!("more than {MAX_HASHED_BYTES} bytes to hash"))
        } else {
            Ok(text.into_bytes())
        };
    }
    crate::convert::array_items(value, left)?
        .iter()
        .map(|b| {
            b.as_int()
                .and_then(|b| u8::try_from(b & 0xff).ok())
                .ok_or_else(|| "hash data must be strings or byte arrays".to_string())
        })
        .collect()
}

fn digest(algorithm: &str, chunks: &[Vec<u8>]) -> Option<Vec<u8>> {
    use sha2::Digest;
    fn run<D: sha2::Digest>(chunks: &[Vec<u8>]) -> Vec<u8> {
        let mut hasher = D::new();
        for chunk in chunks {
            hasher.update(chunk);
        }
        hasher.finalize().to_vec()
    }
    Some(match algorithm {
        "sha1" => run::<sha1::Sha1>(chunks),
        "sha256" => run::<sha2::Sha256>(chunks),
        "sha512" => run::<sha2::Sha512>(chunks),
        "md5" => {
            let mut hasher = md5::Md5::new();
            for chunk in chunks {
                hasher.update(chunk);
            }
            hasher.finalize().to_vec()
        }
        _ => return None,
    })
}

/// `covel:host`: what the SDK and the built-ins need from the host.
struct HostModule;

impl ModuleDef for HostModule {
    fn declare<'js>(decl: &Declarations<'js>) -> Result<()> {
        decl.declare("readPluginFile")?;
        decl.declare("digest")?;
        decl.declare("randomBytes")?;
        decl.declare("encodeUtf8")?;
        decl.declare("decodeUtf8")?;
        Ok(())
    }

    fn evaluate<'js>(ctx: &Ctx<'js>, exports: &Exports<'js>) -> Result<()> {
        exports.export(
            "readPluginFile",
            Function::new(ctx.clone(), |relative: String| read_plugin_file(&relative))?,
        )?;
        exports.export(
            "digest",
            Function::new(
                ctx.clone(),
                |ctx: Ctx<'js>,
                 algorithm: String,
                 chunks: Value<'js>|
                 -> Result<TypedArray<'js, u8>> {
                    let hashed = || -> std::result::Result<Vec<Vec<u8>>, String> {
                        let mut left = MAX_HASHED_BYTES;
                        let mut out = Vec::new();
                        for chunk in crate::convert::array_items(&chunks, 1 << 20)? {
                            let bytes = chunk_bytes(&chunk, left)?;
                            left -= bytes.len();
                            out.push(bytes);
                        }
                        Ok(out)
                    };
                    let bytes =
                        hashed().map_err(|why| rquickjs::Exception::throw_type(&ctx, &why))?;
                    crate::intrinsics::add(&ctx, crate::intrinsics::Deferred::TypedArrays)?;
                    let out = digest(&algorithm, &bytes).ok_or_else(|| {
                        rquickjs::Exception::throw_message(
                            &ctx,
                            &format!("Digest method not supported: {algorithm}"),
                        )
                    })?;
                    TypedArray::new(ctx.clone(), out)
                },
            )?,
        )?;
        exports.export(
            "randomBytes",
            Function::new(
                ctx.clone(),
                |ctx: Ctx<'js>, size: usize| -> Result<TypedArray<'js, u8>> {
                    RANDOM_USED.with(|r| r.set(true));
                    crate::intrinsics::add(&ctx, crate::intrinsics::Deferred::TypedArrays)?;
                    let mut bytes = vec![0u8; size.min(65536)];
                    getrandom::fill(&mut bytes).map_err(|e| {
                        rquickjs::Exception::throw_message(&ctx, &format!("no random source: {e}"))
                    })?;
                    TypedArray::new(ctx.clone(), bytes)
                },
            )?,
        )?;
        // TextEncoder and TextDecoder (covel:web): UTF-8 as Rust's standard library reads and
        // writes it, whose replacement of invalid sequences is the WHATWG Encoding standard's.
        exports.export(
            "encodeUtf8",
            Function::new(
                ctx.clone(),
                |ctx: Ctx<'js>, text: rquickjs::String<'js>| -> Result<TypedArray<'js, u8>> {
                    let text = text.to_string().map_err(|_| {
                        rquickjs::Exception::throw_type(&ctx, "the text is not well-formed")
                    })?;
                    crate::intrinsics::add(&ctx, crate::intrinsics::Deferred::TypedArrays)?;
                    TypedArray::new(ctx.clone(), text.into_bytes())
                },
            )?,
        )?;
        exports.export(
            "decodeUtf8",
            Function::new(
                ctx.clone(),
                |ctx: Ctx<'js>,
                 bytes: TypedArray<'js, u8>,
                 fatal: bool,
                 stream: bool,
                 strip_bom: bool|
                 -> Result<rquickjs::Array<'js>> {
                    let bytes = typed_bytes(&bytes).ok_or_else(|| {
                        rquickjs::Exception::throw_type(&ctx, "the bytes' buffer was detached")
                    })?;
                    let (text, waiting) = decode_utf8(&bytes, fatal, stream, strip_bom)
                        .ok_or_else(|| {
                            rquickjs::Exception::throw_type(
                                &ctx,
                                "The encoded data was not valid for encoding utf-8",
                            )
                        })?;
                    let answer = rquickjs::Array::new(ctx.clone())?;
                    answer.set(0, text)?;
                    answer.set(1, waiting)?;
                    Ok(answer)
                },
            )?,
        )?;
        Ok(())
    }
}

/// A copy of a typed array's bytes (`None` when its buffer was detached).
#[allow(unsafe_code)]
fn typed_bytes(array: &TypedArray<'_, u8>) -> Option<Vec<u8>> {
    // SAFETY: the slice aliases the engine's memory only while no JavaScript runs; it is copied
    // here at once, before this host function returns to the engine.
    unsafe { array.as_bytes() }.map(<[u8]>::to_vec)
}

/// UTF-8 bytes as text: without a leading byte-order mark when `strip_bom`; invalid sequences
/// replaced by U+FFFD (`None` when `fatal`); when `stream`, an incomplete sequence at the end is
/// left for the next chunk and its length answered beside the text.
fn decode_utf8(
    bytes: &[u8],
    fatal: bool,
    stream: bool,
    strip_bom: bool,
) -> Option<(String, usize)> {
    let bytes = if strip_bom {
        bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes)
    } else {
        bytes
    };
    // An incomplete sequence at the end (no invalid byte after it) waits when streaming.
    let waiting = match std::str::from_utf8(bytes) {
        Err(e) if stream && e.error_len().is_none() => bytes.len() - e.valid_up_to(),
        _ => 0,
    };
    let complete = &bytes[..bytes.len() - waiting];
    match std::str::from_utf8(complete) {
        Ok(text) => Some((text.to_string(), waiting)),
        Err(_) if fatal => None,
        Err(_) => Some((String::from_utf8_lossy(complete).into_owned(), waiting)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_builtins_are_found_under_both_spellings() {
        assert_eq!(node_builtin("crypto"), Some("node:crypto"));
        assert_eq!(node_builtin("node:url"), Some("node:url"));
        assert_eq!(node_builtin("path/posix"), Some("node:path"));
        assert_eq!(node_builtin("node:fs"), None);
    }

    #[test]
    fn refusals_say_why() {
        assert!(refusal_reason("node:fs").contains("file system access"));
        assert!(refusal_reason("fs/promises").contains("file system access"));
        assert!(refusal_reason("@covel/runtime").contains("host-internal package"));
        assert!(
            refusal_reason("@covel/plugin-handlers-utils/nope").contains("not an entry of the SDK")
        );
        assert!(refusal_reason("lodash").contains("not available in the plugin sandbox"));
    }

    #[test]
    fn file_urls_encode_what_a_path_cannot_hold() {
        assert_eq!(file_url(Path::new("/a b/c#.ts")), "file:///a%20b/c%23.ts");
    }
}
