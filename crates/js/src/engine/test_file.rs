//! One test file of upstream's SDK tests, run in a plugin runtime for [`crate::sdk_tests`]: the
//! runtime a plugin gets (the bootstrap's globals, the SDK, zod, the memory limit and the
//! deadline), except that `vitest` is the studio's stand-in and upstream's `../src/*.js` imports
//! are the SDK's entries ([`crate::modules::PluginResolver::sdk_tests`]).

use super::*;
use std::path::Path;

/// Evaluates `file` as a module in a new runtime (its tests declare themselves), then runs them
/// through the stand-in's `run()` within `timeout`. Answers what `run()` returned
/// (`[{name, passed, skipped?, error?}]`), or why the file could not be run.
pub fn run_test_file(file: &Path, limits: Limits, timeout: Duration) -> Result<Json, String> {
    let file = file
        .canonicalize()
        .map_err(|e| format!("cannot open {}: {e}", file.display()))?;
    let root = file
        .parent()
        .ok_or_else(|| format!("{} has no folder", file.display()))?
        .to_path_buf();
    let spec = LoadSpec {
        plugin_id: "sdk-tests".into(),
        root: root.clone(),
        entry: file.clone(),
        messages: BTreeMap::new(),
        limits,
    };
    modules::set_thread_root(&root);
    let mut engine = Engine::new(&spec, true)?;
    engine.arm(timeout);
    let outcome = engine.context.with(|ctx| engine.run_tests_in(&ctx, &file));
    engine.disarm();
    engine.shutdown();
    outcome
}

impl Engine {
    fn run_tests_in<'js>(&self, ctx: &Ctx<'js>, file: &Path) -> Result<Json, String> {
        let _ = modules::take_refusal();
        let _ = modules::take_typescript_failure();
        let _ = modules::take_file_refusal();
        self.install_host(ctx).map_err(|e| e.to_string())?;
        let covel = load::bootstrap(ctx)
            .catch(ctx)
            .map_err(|e| format!("host bootstrap failed: {e}"))?;
        *self.internals.borrow_mut() =
            Some(Internals(rquickjs::Persistent::save(ctx, covel.clone())));

        let name = file.to_string_lossy().into_owned();
        match self.import(ctx, &covel, name) {
            Settled::Value(_) => {}
            Settled::Timeout(why) => return Err(format!("loading the file did not finish: {why}")),
            Settled::Threw(t) => {
                let failure = self.classify_import_error(&t);
                let at = match (&failure.file, failure.position) {
                    (Some(f), Some((line, column))) => format!(" ({}:{line}:{column})", short(f)),
                    (Some(f), None) => format!(" ({})", short(f)),
                    _ => String::new(),
                };
                return Err(format!("{}{at}", failure.message));
            }
        }
        // The stand-in the file imported (the same module instance: it holds the declared tests).
        let standin = match self.import(ctx, &covel, "vitest".into()) {
            Settled::Value(namespace) => namespace,
            Settled::Timeout(why) => return Err(format!("the stand-in did not load: {why}")),
            Settled::Threw(t) => return Err(format!("the stand-in did not load: {}", t.text())),
        };
        let run: Function = standin
            .as_object()
            .and_then(|ns| ns.get::<_, Function>("run").ok())
            .ok_or("the vitest stand-in has no run()")?;
        let started: Result<Value, _> = run.call(());
        let settled = match started {
            Ok(value) => self.drive(ctx, &covel, value),
            Err(_) => Settled::Threw(thrown(ctx)),
        };
        let results = match settled {
            Settled::Value(value) => value,
            Settled::Timeout(why) => return Err(format!("the tests did not finish: {why}")),
            Settled::Threw(t) => return Err(format!("the tests stopped: {}", t.text())),
        };
        let expired = || self.expired();
        from_js_within(&results, ConversionBudget::OUTPUT, &expired).map_err(|e| e.to_string())
    }

    /// Imports a module by specifier and drives its evaluation to the end.
    fn import<'js>(&self, ctx: &Ctx<'js>, covel: &Object<'js>, name: String) -> Settled<'js> {
        match Module::import(ctx, name.into_bytes()) {
            Ok(promise) => self.drive(ctx, covel, promise.into_value()),
            Err(rquickjs::Error::Exception) => Settled::Threw(thrown(ctx)),
            Err(e) => Settled::Threw(Thrown {
                name: String::new(),
                message: e.to_string(),
                stack: None,
            }),
        }
    }
}
