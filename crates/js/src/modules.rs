//! Module resolution and loading for plugin code: relative imports confined to the plugin
//! root, the SDK's bare specifiers, and nothing else (no `node:` built-ins, no packages, no
//! file system or network beyond the plugin's own files).

use rquickjs::loader::{ImportAttributes, Loader, Resolver};
use rquickjs::module::{Declarations, Exports, ModuleDef};
use rquickjs::{Ctx, Error, Function, Module, Result};
use std::cell::RefCell;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};

pub const SDK: &str = "@covel/plugin-handlers-utils";
pub const SDK_DIMENSIONS: &str = "@covel/plugin-handlers-utils/dimensions";
pub const SDK_PROMPTS: &str = "@covel/plugin-handlers-utils/prompts";
const HOST: &str = "covel:host";
/// Tool parameter schemas: upstream plugins import `zod`; the sandbox serves the toolkit's
/// schema builder under that name.
const ZOD: &str = "zod";

fn sdk_source(name: &str) -> Option<&'static str> {
    match name {
        SDK => Some(include_str!("js/sdk/index.js")),
        SDK_DIMENSIONS => Some(include_str!("js/sdk/dimensions.js")),
        SDK_PROMPTS => Some(include_str!("js/sdk/prompts.js")),
        _ => None,
    }
}

thread_local! {
    /// The plugin root of the runtime living on this thread (one plugin per worker thread).
    static PLUGIN_ROOT: RefCell<Option<PathBuf>> = const { RefCell::new(None) };
}

thread_local! {
    /// The last import the resolver refused on this thread: QuickJS cuts long error messages,
    /// so the loader reports the refusal from here, whole.
    static LAST_REFUSAL: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Takes the last refused import's explanation.
pub fn take_refusal() -> Option<String> {
    LAST_REFUSAL.with(|r| r.borrow_mut().take())
}

pub fn set_thread_root(root: &Path) {
    PLUGIN_ROOT.with(|r| *r.borrow_mut() = Some(root.to_path_buf()));
}

/// Files the plugin's module graph loaded (for hot reload: any of them changing reloads it).
pub type LoadedFiles = Arc<Mutex<Vec<PathBuf>>>;

/// Resolves specifiers against the plugin root.
pub struct PluginResolver {
    pub root: PathBuf,
}

fn normalize(path: &Path) -> PathBuf {
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

fn refuse(base: &str, name: &str, why: String) -> Error {
    LAST_REFUSAL.with(|r| *r.borrow_mut() = Some(why.clone()));
    Error::new_resolving_message(base, name, why)
}

impl Resolver for PluginResolver {
    fn resolve<'js>(&mut self, _ctx: &Ctx<'js>, base: &str, name: &str, _attributes: Option<ImportAttributes<'js>>) -> Result<String> {
        if sdk_source(name).is_some() || name == ZOD {
            return Ok(name.to_string());
        }
        if name == HOST {
            return if base.starts_with(SDK) { Ok(name.to_string()) } else { Err(refuse(base, name, "covel:host is internal to the SDK".into())) };
        }
        if !(name.starts_with("./") || name.starts_with("../") || name.starts_with('/')) {
            return Err(refuse(
                base,
                name,
                format!("`{name}` is not available in the plugin sandbox: only relative imports inside the plugin, `{SDK}` (with /dimensions and /prompts) and `zod` can be imported"),
            ));
        }
        let base_dir = if sdk_source(base).is_some() { self.root.clone() } else { Path::new(base).parent().map(Path::to_path_buf).unwrap_or_else(|| self.root.clone()) };
        let joined = normalize(&base_dir.join(name));
        let candidates = [joined.clone(), joined.with_extension("js"), joined.with_extension("mjs"), joined.join("index.js")];
        let found = candidates.iter().find(|p| p.is_file()).ok_or_else(|| refuse(base, name, format!("`{name}` was not found ({})", joined.display())))?;
        let canonical = found.canonicalize().map_err(|e| refuse(base, name, e.to_string()))?;
        let root = self.root.canonicalize().map_err(|e| refuse(base, name, e.to_string()))?;
        if !canonical.starts_with(&root) {
            return Err(refuse(base, name, format!("`{name}` resolves outside the plugin root")));
        }
        Ok(canonical.to_string_lossy().into_owned())
    }
}

/// Loads SDK modules from the binary and plugin modules from disk.
pub struct PluginLoader {
    pub loaded: LoadedFiles,
}

impl Loader for PluginLoader {
    fn load<'js>(&mut self, ctx: &Ctx<'js>, name: &str, _attributes: Option<ImportAttributes<'js>>) -> Result<Module<'js, rquickjs::module::Declared>> {
        if let Some(source) = sdk_source(name) {
            return Module::declare(ctx.clone(), name, source);
        }
        if name == HOST {
            return Module::declare_def::<HostModule, _>(ctx.clone(), name);
        }
        if name == ZOD {
            return Module::declare(ctx.clone(), name, "export const z = globalThis.__covelZod;\nexport default z;\n");
        }
        let path = PathBuf::from(name);
        let source = std::fs::read_to_string(&path).map_err(|e| Error::new_loading_message(name, e.to_string()))?;
        if let Ok(mut loaded) = self.loaded.lock() {
            loaded.push(path.clone());
        }
        if path.extension().is_some_and(|e| e == "json") {
            return Module::declare(ctx.clone(), name, format!("export default {source};"));
        }
        Module::declare(ctx.clone(), name, source)
    }
}

/// `covel:host`: what the SDK needs from the host (reading the plugin's own prompt files).
struct HostModule;

impl ModuleDef for HostModule {
    fn declare<'js>(decl: &Declarations<'js>) -> Result<()> {
        decl.declare("readPluginFile")?;
        Ok(())
    }

    fn evaluate<'js>(ctx: &Ctx<'js>, exports: &Exports<'js>) -> Result<()> {
        let read = Function::new(ctx.clone(), |relative: String| -> Option<String> {
            PLUGIN_ROOT.with(|root| {
                let root = root.borrow().clone()?;
                let path = normalize(&root.join(relative.trim_start_matches("./")));
                let canonical = path.canonicalize().ok()?;
                canonical.starts_with(root.canonicalize().ok()?).then(|| std::fs::read_to_string(canonical).ok())?
            })
        })?;
        exports.export("readPluginFile", read)?;
        Ok(())
    }
}
