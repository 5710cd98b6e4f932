//! One plugin's QuickJS runtime: loading its entry module, and answering provider calls one at a
//! time on whichever thread asks (the runtime is `Send`; the runner runs different plugins on
//! different threads). Dropping the engine disposes the plugin and frees the runtime cleanly.
//!
//! Time limits: an interrupt handler stops CPU loops at the deadline, and the event loop below
//! stops waiting for a promise at the deadline (QuickJS cannot interrupt a pending `await`).
//!
//! Cost follows change: the handler context is rebuilt in the engine only when the session data
//! a plugin can see changed, and identical calls may be answered from the engine's memo
//! ([`crate::memo`]: never when that could change the answer).

use crate::convert::{ConversionBudget, FromJsError, from_js, from_js_within, to_js};
use crate::modules::{self, LoadedFiles, PluginLoader, PluginResolver};
use covel_kernel::Code;
use covel_kernel::context::ExecutionContext;
use covel_kernel::registration::{ProvidedExtension, Registrations, Site};
use covel_kernel::runner::{CallReport, FailureKind, ProviderCall, ProviderFailure};
use rquickjs::promise::PromiseState;
use rquickjs::{CatchResultExt, Context, Ctx, Function, Module, Object, Runtime, Value};
use serde_json::{Map, Value as Json, json};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

const BOOTSTRAP: &str = include_str!("js/bootstrap.js");

thread_local! {
    /// The gateway of the call running on this worker thread (calls run one at a time).
    static GATEWAY: std::cell::RefCell<Option<covel_kernel::context::Gateway>> = const { std::cell::RefCell::new(None) };
}

/// Resource limits of one plugin runtime.
#[derive(Debug, Clone)]
pub struct Limits {
    pub memory_bytes: usize,
    pub stack_bytes: usize,
    /// How long the entry module (and its default export) may take to settle.
    pub load_timeout: Duration,
    /// The budget all plugin runtimes share (the process-wide one by default).
    pub shared_memory: Arc<crate::memory::SharedBudget>,
    /// Whether identical calls may be answered from the engine's memo (`--no-memo` turns it off).
    pub memo: bool,
    /// How long loading a whole folder may take: plugins that start loading after it ran out
    /// get a short limit, so twenty looping entries cannot keep the studio waiting.
    pub folder_load_budget: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            memory_bytes: 64 * 1024 * 1024,
            stack_bytes: 1024 * 1024,
            load_timeout: Duration::from_secs(2),
            shared_memory: crate::memory::process_budget(),
            folder_load_budget: Duration::from_secs(6),
            memo: true,
        }
    }
}

/// What the worker needs to load a plugin.
#[derive(Debug, Clone)]
pub struct LoadSpec {
    pub plugin_id: String,
    pub root: PathBuf,
    pub entry: PathBuf,
    /// Translations by locale (`locales/<locale>.yaml` messages).
    pub messages: BTreeMap<String, Map<String, Json>>,
    pub limits: Limits,
}

/// Why an entry failed to load.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadFailure {
    pub code: Code,
    pub message: String,
    /// The file and position the engine blamed, when it named one.
    pub file: Option<PathBuf>,
    pub position: Option<(u32, u32)>,
}

/// The outcome of running an entry.
#[derive(Debug, Clone)]
pub struct LoadReport {
    pub registrations: Registrations,
    /// Every plugin file the module graph read.
    pub modules: Vec<PathBuf>,
    pub failure: Option<LoadFailure>,
    pub duration: Duration,
}

/// Loads a plugin's entry in a new runtime on the calling thread. The engine is returned only
/// when the load succeeded; either way the report says what happened.
pub fn load(spec: &LoadSpec) -> (Option<Engine>, LoadReport) {
    modules::set_thread_root(&spec.root);
    let started = Instant::now();
    let mut engine = match Engine::new(spec) {
        Ok(engine) => engine,
        Err(message) => {
            let report = LoadReport {
                registrations: Registrations::default(),
                modules: Vec::new(),
                failure: Some(LoadFailure { code: Code::Internal, message, file: None, position: None }),
                duration: started.elapsed(),
            };
            return (None, report);
        }
    };
    let mut report = engine.load(spec);
    report.duration = started.elapsed();
    if report.failure.is_some() {
        engine.shutdown();
        return (None, report);
    }
    (Some(engine), report)
}

/// A handle on the bootstrap's internal object.
struct Internals(rquickjs::Persistent<Object<'static>>);

// SAFETY: the handle belongs to the engine's runtime and is only restored inside that runtime's
// context (`Engine::internals`), and it is dropped before the runtime (`Engine::shutdown`). The
// runtime itself is `Send` (rquickjs `parallel`, access serialized by its lock), and the engine
// moves between threads only as a whole, so the handle never outlives or escapes its runtime.
#[allow(unsafe_code)]
unsafe impl Send for Internals {}

/// What happened to a plugin runtime when it was shut down, observable after the engine is
/// gone (the studio drops a plugin's runtime when a reload replaces or removes it).
#[derive(Debug, Clone)]
pub struct RuntimeWatch {
    shutdown: Arc<ShutdownState>,
    memory: Arc<crate::memory::RuntimeMemory>,
}

#[derive(Debug, Default)]
struct ShutdownState {
    done: std::sync::atomic::AtomicBool,
    disposers: std::sync::atomic::AtomicUsize,
}

impl RuntimeWatch {
    /// Whether the engine was shut down (its plugin disposed, its runtime dropped).
    pub fn is_shut_down(&self) -> bool {
        self.shutdown.done.load(Ordering::SeqCst)
    }

    /// How many `covel.onDispose` callbacks the shutdown ran.
    pub fn disposers_run(&self) -> usize {
        self.shutdown.disposers.load(Ordering::SeqCst)
    }

    /// Bytes the runtime still holds: 0 once it was freed without leaks.
    pub fn bytes_held(&self) -> usize {
        self.memory.used()
    }
}

/// The runtime and context of one plugin, with its deadline. Calls run on the caller's thread
/// (the runtime is `Send`), one at a time; dropping the engine disposes the plugin and frees the
/// runtime.
pub struct Engine {
    // Field order matters: the context must drop before the runtime.
    context: Context,
    runtime: Runtime,
    deadline: Arc<AtomicU64>,
    epoch: Instant,
    loaded_files: LoadedFiles,
    plugin_id: String,
    messages: BTreeMap<String, Map<String, Json>>,
    execution_seen: u64,
    /// Hash of the data the plugin's handlers see (not the turn); the memo is valid for it.
    fingerprint: u64,
    memo: crate::memo::Memo,
    memory_limit: usize,
    memory: Arc<crate::memory::RuntimeMemory>,
    /// The bootstrap's internal functions: held by the host only, never on a global.
    internals: std::cell::RefCell<Option<Internals>>,
    /// What HTTP the running call may do (empty between calls).
    http: crate::http::HttpSlot,
    root: PathBuf,
    disposed: bool,
    shutdown: Arc<ShutdownState>,
}

impl Drop for Engine {
    fn drop(&mut self) {
        self.shutdown();
    }
}

enum Settled<'js> {
    Value(Value<'js>),
    Threw(Thrown),
    Timeout(String),
}

struct Thrown {
    name: String,
    message: String,
    stack: Option<String>,
}

impl Thrown {
    fn text(&self) -> String {
        if self.name.is_empty() { self.message.clone() } else { format!("{}: {}", self.name, self.message) }
    }
}

impl Engine {
    fn new(spec: &LoadSpec) -> Result<Engine, String> {
        // The allocator enforces the plugin's limit and the shared budget (QuickJS's own limit
        // stays off, so every refusal is seen and classified).
        let memory = crate::memory::RuntimeMemory::new(spec.limits.memory_bytes, Arc::clone(&spec.limits.shared_memory));
        let runtime = Runtime::new_with_alloc(crate::memory::BudgetAllocator::new(Arc::clone(&memory)))
            .map_err(|e| format!("cannot create a QuickJS runtime: {e}"))?;
        runtime.set_max_stack_size(spec.limits.stack_bytes);
        let deadline = Arc::new(AtomicU64::new(0));
        let epoch = Instant::now();
        {
            let deadline = Arc::clone(&deadline);
            runtime.set_interrupt_handler(Some(Box::new(move || {
                let limit = deadline.load(Ordering::Relaxed);
                limit != 0 && nanos_since(epoch) > limit
            })));
        }
        let loaded_files: LoadedFiles = Default::default();
        runtime.set_loader(PluginResolver { root: spec.root.clone() }, PluginLoader { loaded: loaded_files.clone() });
        let context = Context::full(&runtime).map_err(|e| format!("cannot create a QuickJS context: {e}"))?;
        Ok(Engine {
            context,
            runtime,
            deadline,
            epoch,
            loaded_files,
            plugin_id: spec.plugin_id.clone(),
            messages: spec.messages.clone(),
            execution_seen: 0,
            fingerprint: 0,
            memo: crate::memo::Memo::new(spec.limits.memo),
            memory_limit: spec.limits.memory_bytes,
            memory,
            internals: std::cell::RefCell::new(None),
            http: Default::default(),
            root: spec.root.clone(),
            disposed: false,
            shutdown: Arc::default(),
        })
    }

    fn arm(&self, timeout: Duration) {
        let at = nanos_since(self.epoch).saturating_add(u64::try_from(timeout.as_nanos()).unwrap_or(u64::MAX)).max(1);
        self.deadline.store(at, Ordering::Relaxed);
    }

    fn disarm(&self) {
        self.deadline.store(0, Ordering::Relaxed);
    }

    fn expired(&self) -> bool {
        let limit = self.deadline.load(Ordering::Relaxed);
        limit != 0 && nanos_since(self.epoch) > limit
    }

    fn remaining(&self) -> Duration {
        let limit = self.deadline.load(Ordering::Relaxed);
        Duration::from_nanos(limit.saturating_sub(nanos_since(self.epoch)))
    }

    fn load(&mut self, spec: &LoadSpec) -> LoadReport {
        self.arm(spec.limits.load_timeout);
        let outcome = self.context.with(|ctx| self.load_in(&ctx, spec));
        self.disarm();
        let modules = self.loaded_files.lock().map(|f| f.clone()).unwrap_or_default();
        match outcome {
            Ok(registrations) => LoadReport { registrations, modules, failure: None, duration: Duration::ZERO },
            Err(failure) => LoadReport { registrations: Registrations::default(), modules, failure: Some(failure), duration: Duration::ZERO },
        }
    }

    fn load_in<'js>(&self, ctx: &Ctx<'js>, spec: &LoadSpec) -> Result<Registrations, LoadFailure> {
        let _ = modules::take_refusal();
        let _ = modules::take_typescript_failure();
        let internal = |e: rquickjs::Error| LoadFailure { code: Code::Internal, message: e.to_string(), file: None, position: None };
        self.install_host(ctx).map_err(internal)?;
        let covel: Object = ctx.eval::<Object, _>(BOOTSTRAP).catch(ctx).map_err(|e| LoadFailure {
            code: Code::Internal,
            message: format!("host bootstrap failed: {e}"),
            file: None,
            position: None,
        })?;
        *self.internals.borrow_mut() = Some(Internals(rquickjs::Persistent::save(ctx, covel.clone())));
        let make: Function = covel.get("makeFacade").map_err(internal)?;
        let facade: Value = make.call((spec.plugin_id.as_str(),)).map_err(internal)?;

        let entry = spec.entry.canonicalize().unwrap_or_else(|_| spec.entry.clone());
        let entry_name = entry.to_string_lossy().into_owned();
        let import = Module::import(ctx, entry_name.as_bytes().to_vec());
        let namespace = match import {
            Ok(promise) => self.drive(ctx, &covel, promise.into_value()),
            Err(rquickjs::Error::Exception) => Settled::Threw(thrown(ctx)),
            Err(e) => Settled::Threw(Thrown { name: String::new(), message: e.to_string(), stack: None }),
        };
        let namespace = match namespace {
            Settled::Value(ns) => ns,
            Settled::Timeout(why) => return Err(self.entry_failure(Code::EntryTimeout, format!("importing the entry did not finish: {why}"), None)),
            Settled::Threw(t) => return Err(self.classify_import_error(&t)),
        };
        let default: Option<Function> = namespace.as_object().and_then(|ns| ns.get::<_, Option<Function>>("default").ok().flatten());
        // Failures of the default export point at its declaration in the entry module.
        let at_default = || LoadFailure {
            code: Code::Internal,
            message: String::new(),
            file: Some(entry.clone()),
            position: crate::imports::default_export_position(&entry),
        };
        let Some(default) = default else {
            let message = "entry must default-export a function (covel) => { ... }".to_string();
            return Err(LoadFailure { code: Code::EntryShape, message, ..at_default() });
        };
        let result: Result<Value, _> = default.call((facade,));
        let settled = match result {
            Ok(value) => self.drive(ctx, &covel, value),
            Err(_) => Settled::Threw(thrown(ctx)),
        };
        match settled {
            Settled::Value(_) => {}
            Settled::Timeout(why) => {
                let message = format!("the entry's default export did not settle: {why}");
                return Err(LoadFailure { code: Code::EntryTimeout, message, ..at_default() });
            }
            Settled::Threw(t) => {
                if self.expired() {
                    // The interrupted frame is not where the loop is; the default export that
                    // ran too long is.
                    let message = format!("the entry's default export ran past the {} ms load limit", spec.limits.load_timeout.as_millis());
                    return Err(LoadFailure { code: Code::EntryTimeout, message, ..at_default() });
                }
                return Err(self.entry_failure(Code::EntryThrew, format!("the entry threw: {}", t.text()), t.stack.as_deref()));
            }
        }
        let close: Function = covel.get("close").map_err(internal)?;
        let staged: Value = close.call(()).map_err(internal)?;
        let staged = from_js(&staged).map_err(|e| LoadFailure { code: Code::Internal, message: e.to_string(), file: None, position: None })?;
        Ok(registrations_from(&staged, &self.root))
    }

    fn classify_import_error(&self, t: &Thrown) -> LoadFailure {
        if let Some(failure) = modules::take_typescript_failure() {
            let code = if failure.error.unsupported { Code::TypescriptUnsupported } else { Code::EntrySyntax };
            let message = if failure.error.unsupported { failure.error.message } else { format!("syntax error: {}", failure.error.message) };
            return LoadFailure { code, message, file: Some(failure.file), position: failure.error.position };
        }
        if let Some(refusal) = modules::take_refusal() {
            return LoadFailure { code: Code::ImportUnavailable, message: format!("import failed: {}", refusal.message), file: refusal.file, position: refusal.position };
        }
        let text = t.text();
        if self.expired() {
            return self.entry_failure(Code::EntryTimeout, "the entry module ran past the load limit while being evaluated".into(), None);
        }
        let loaded = self.loaded_files.lock().map(|f| f.clone()).unwrap_or_default();
        if let Some(missing) = crate::imports::missing_exports(&text, &loaded) {
            return LoadFailure { code: Code::ImportUnavailable, message: missing.message, file: Some(missing.file), position: Some(missing.position) };
        }
        let code = if text.contains("resolving module") || text.contains("Could not find export") || text.contains("could not find export") {
            Code::ImportUnavailable
        } else if t.name == "SyntaxError" {
            Code::EntrySyntax
        } else if text.contains("Error loading module") {
            Code::MissingFile
        } else {
            Code::EntryThrew
        };
        let message = match code {
            Code::ImportUnavailable => format!("import failed: {text}"),
            Code::EntrySyntax => format!("syntax error: {}", t.message),
            _ => format!("the entry threw while loading: {text}"),
        };
        // QuickJS reports a syntax error's position in the message ("… at file:L:C") or stack.
        let position_source = format!("{}\n{}", t.message, t.stack.clone().unwrap_or_default());
        self.entry_failure(code, message, Some(&position_source))
    }

    /// The bootstrap's internal functions in this context.
    fn internals<'js>(&self, ctx: &Ctx<'js>) -> rquickjs::Result<Object<'js>> {
        let saved = self.internals.borrow().as_ref().map(|i| i.0.clone());
        saved.ok_or(rquickjs::Error::Unknown)?.restore(ctx)
    }

    fn entry_failure(&self, code: Code, message: String, stack: Option<&str>) -> LoadFailure {
        let (file, position) = stack.and_then(first_frame).map_or((None, None), |(f, p)| (Some(f), Some(p)));
        LoadFailure { code, message, file, position }
    }

    fn install_host<'js>(&self, ctx: &Ctx<'js>) -> rquickjs::Result<()> {
        let host = Object::new(ctx.clone())?;
        let epoch = self.epoch;
        host.set("now", Function::new(ctx.clone(), move || epoch.elapsed().as_secs_f64() * 1000.0)?)?;
        // Plugin HTTP: the host decides for the running call (crate::http); plugin code only asks.
        let slot = Arc::clone(&self.http);
        host.set(
            "fetch",
            Function::new(ctx.clone(), move |ctx: Ctx<'js>, method: String, url: String, body: Option<String>| -> rquickjs::Result<Value<'js>> {
                match crate::http::fetch(&slot, &method, &url, body.as_deref()) {
                    Ok(answer) => to_js(&ctx, &answer),
                    Err(message) => Err(rquickjs::Exception::throw_message(&ctx, &message)),
                }
            })?,
        )?;
        let slot = Arc::clone(&self.http);
        host.set("httpRefusal", Function::new(ctx.clone(), move |method: String, url: String| crate::http::refusal(&slot, &method, &url))?)?;
        host.set(
            "hasGateway",
            Function::new(ctx.clone(), || GATEWAY.with(|g| g.borrow().is_some()))?,
        )?;
        host.set(
            "generateText",
            Function::new(ctx.clone(), |ctx: Ctx<'js>, request: Value<'js>| -> rquickjs::Result<Value<'js>> {
                let request = from_js(&request).map_err(|e| rquickjs::Error::new_from_js_message("value", "request", e.to_string()))?;
                let gateway = GATEWAY.with(|g| g.borrow().clone());
                let Some(gateway) = gateway else {
                    return Err(rquickjs::Exception::throw_message(&ctx, "no model gateway is available to this call"));
                };
                match gateway.0.generate(&request) {
                    Ok(answer) => to_js(&ctx, &answer),
                    Err(message) => Err(rquickjs::Exception::throw_message(&ctx, &message)),
                }
            })?,
        )?;
        // The facade's `z` and Node's globals (`URL`, `crypto`) import their module on first
        // use: the module is linked and evaluated here, synchronously (none of them awaits at
        // the top level), and shared with any static import of the same name.
        host.set(
            "requireModule",
            Function::new(ctx.clone(), |ctx: Ctx<'js>, name: String| -> rquickjs::Result<Object<'js>> {
                if !matches!(name.as_str(), modules::ZOD | "node:url" | "node:crypto") {
                    return Err(rquickjs::Exception::throw_type(&ctx, "not a module the host serves"));
                }
                let promise = Module::import(&ctx, name.as_bytes().to_vec())?;
                while promise.state() == PromiseState::Pending && ctx.execute_pending_job() {}
                match promise.state() {
                    PromiseState::Resolved => promise.result::<Object>().unwrap_or_else(|| Err(rquickjs::Exception::throw_message(&ctx, "module did not evaluate"))),
                    _ => Err(rquickjs::Exception::throw_message(&ctx, &format!("`{name}` could not be loaded"))),
                }
            })?,
        )?;
        ctx.globals().set("__host", host)?;
        Ok(())
    }

    /// Runs a value to completion: a promise is driven through the job queue and the timers
    /// until it settles or the deadline passes.
    fn drive<'js>(&self, ctx: &Ctx<'js>, covel: &Object<'js>, value: Value<'js>) -> Settled<'js> {
        let Some(promise) = value.as_promise().cloned() else {
            return Settled::Value(value);
        };
        loop {
            match promise.state() {
                PromiseState::Resolved => {
                    return match promise.result::<Value>() {
                        Some(Ok(v)) => Settled::Value(v),
                        _ => Settled::Threw(thrown(ctx)),
                    };
                }
                PromiseState::Rejected => {
                    let _ = promise.result::<Value>();
                    return Settled::Threw(thrown(ctx));
                }
                PromiseState::Pending => {}
            }
            if self.expired() {
                return Settled::Timeout("the deadline passed while the promise was pending".into());
            }
            if ctx.execute_pending_job() {
                continue;
            }
            let due: f64 = covel.get::<_, Function>("nextTimerDue").and_then(|f| f.call(())).unwrap_or(-1.0);
            if due < 0.0 {
                return Settled::Timeout("the promise can never settle: no job or timer is pending".into());
            }
            let now_ms = self.epoch.elapsed().as_secs_f64() * 1000.0;
            let wait = Duration::from_secs_f64(((due - now_ms).max(0.0)) / 1000.0);
            if wait >= self.remaining() {
                std::thread::sleep(self.remaining());
                return Settled::Timeout("the deadline passed while waiting for a timer".into());
            }
            std::thread::sleep(wait);
            if let Ok(fire) = covel.get::<_, Function>("fireDueTimers")
                && fire.call::<_, ()>(()).is_err()
            {
                // A throwing timer callback is an uncaught error inside the handler's work; the
                // exception is cleared so the promise can still settle or time out.
                let _ = ctx.catch();
            }
        }
    }

    /// Runs one provider call to completion (or its deadline).
    pub fn call(&mut self, call: &ProviderCall) -> CallReport {
        let started = Instant::now();
        modules::set_thread_root(&self.root);
        let mut execution = None;
        if self.execution_seen != call.context.execution_id {
            let fingerprint = call.context.visible_key(&self.plugin_id);
            if fingerprint == self.fingerprint {
                // Same visible data under a new execution: the engine's context still holds.
                self.execution_seen = call.context.execution_id;
            } else {
                self.memo.clear();
                self.fingerprint = fingerprint;
                execution = Some(self.execution_data(&call.context));
            }
        }
        let needs_execution = execution.is_some();
        // A call that can reach the network or a model is never answered from the memo.
        let memoizable = !call.context.http.live && call.context.gateway.is_none();
        let memo_key = memoizable.then(|| {
            use std::hash::{Hash, Hasher};
            let mut hasher = std::collections::hash_map::DefaultHasher::new();
            (call.point.as_str(), &call.provider_id, &call.context.turn_id, call.input_key, call.timeout).hash(&mut hasher);
            hasher.finish()
        });
        if memo_key.is_some() {
            use std::hash::{Hash, Hasher};
            let mut hasher = std::collections::hash_map::DefaultHasher::new();
            call.context.turn_id.hash(&mut hasher);
            self.memo.turn(hasher.finish());
        }
        if let Some(report) = memo_key.and_then(|k| self.memo.answer(k)) {
            return CallReport { duration: started.elapsed(), cached: true, ..report.clone() };
        }
        let _ = modules::take_random_used();
        self.arm(call.timeout);
        let _ = self.memory.take_refused();
        if let Ok(mut slot) = self.http.lock() {
            *slot = Some(crate::http::CallHttp {
                plugin: self.plugin_id.clone(),
                grants: call.context.plugins.get(&self.plugin_id).map(|s| s.http.clone()).unwrap_or_default(),
                policy: call.context.http.clone(),
                deadline: Instant::now() + call.timeout,
            });
        }
        GATEWAY.with(|g| *g.borrow_mut() = call.context.gateway.clone());
        let (result, logs, impure) = self.context.with(|ctx| self.call_in(&ctx, call, execution.as_ref()));
        let impure = impure.or_else(|| modules::take_random_used().then(|| "uses randomness (crypto)".to_string()));
        GATEWAY.with(|g| *g.borrow_mut() = None);
        if let Ok(mut slot) = self.http.lock() {
            *slot = None;
        }
        self.disarm();
        if needs_execution && result.is_ok() {
            self.execution_seen = call.context.execution_id;
        }
        if matches!(&result, Err(f) if f.kind == FailureKind::OutOfMemory) {
            self.runtime.run_gc();
        }
        let mut report = CallReport { result, duration: started.elapsed(), logs, cached: false, not_cached: None };
        report.not_cached = match memo_key {
            Some(key) => self.memo.record(key, &report, impure.as_deref()),
            None => Some("it can reach the network or a model".into()),
        };
        report
    }

    fn call_in<'js>(&self, ctx: &Ctx<'js>, call: &ProviderCall, execution: Option<&Json>) -> (Result<Json, ProviderFailure>, Vec<String>, Option<String>) {
        let fail = |kind, message: String| Err(ProviderFailure { kind, message });
        let covel: Object = match self.internals(ctx) {
            Ok(c) => c,
            Err(e) => return (fail(FailureKind::Unavailable, e.to_string()), Vec::new(), None),
        };
        if let Some(data) = execution {
            let set = covel.get::<_, Function>("setExecution").and_then(|f| to_js(ctx, data).and_then(|d| f.call::<_, ()>((d,))));
            if set.is_err() {
                let t = thrown(ctx);
                return (fail(FailureKind::Error, format!("cannot build the handler context: {}", t.text())), Vec::new(), None);
            }
        }
        let input = match to_js(ctx, &call.input) {
            Ok(v) => v,
            Err(e) => return (fail(self.classify_kind(&e.to_string()), format!("cannot pass the input: {e}")), Vec::new(), None),
        };
        let key = format!("{}/{}", call.point, call.provider_id);
        let started: Result<Object, _> =
            covel.get::<_, Function>("call").and_then(|f| f.call((key.as_str(), input, call.context.turn_id.as_deref())));
        let (settled, signal) = match started {
            Ok(started) => {
                let signal: Option<Value> = started.get("signal").ok();
                let result: Value = started.get("result").unwrap_or_else(|_| Value::new_undefined(ctx.clone()));
                (self.drive(ctx, &covel, result), signal)
            }
            Err(_) => (Settled::Threw(thrown(ctx)), None),
        };
        let outcome = match settled {
            Settled::Value(value) => match value.type_of() {
                rquickjs::Type::Undefined => fail(FailureKind::Error, "the handler returned undefined (return null for \"nothing\")".into()),
                _ => {
                    let expired = || self.expired();
                    match from_js_within(&value, ConversionBudget::OUTPUT, &expired) {
                        Ok(json) => Ok(json),
                        Err(FromJsError::Deadline) => fail(FailureKind::Timeout, format!("the handler's result was still being read at its {} ms limit", call.timeout.as_millis())),
                        // An interrupt inside a getter or proxy trap during the read is the deadline too.
                        Err(FromJsError::Engine(_)) if self.expired() => {
                            fail(FailureKind::Timeout, format!("reading the handler's result ran past its {} ms limit (a getter or proxy kept running)", call.timeout.as_millis()))
                        }
                        Err(e @ (FromJsError::OverBudget(_) | FromJsError::Unsupported { .. } | FromJsError::TooDeep(_))) => {
                            fail(FailureKind::InvalidOutput, e.to_string())
                        }
                        Err(FromJsError::Engine(e)) if self.memory.take_refused() => fail(FailureKind::OutOfMemory, format!("reading the handler's result exhausted the plugin's memory limit: {e}")),
                        Err(e) => fail(FailureKind::Error, e.to_string()),
                    }
                }
            },
            Settled::Timeout(why) => fail(FailureKind::Timeout, format!("no result within {} ms: {why}", call.timeout.as_millis())),
            Settled::Threw(t) => {
                if self.expired() {
                    fail(FailureKind::Timeout, format!("the handler ran past its {} ms limit and was interrupted", call.timeout.as_millis()))
                } else {
                    match self.classify_kind(&t.text()) {
                        FailureKind::OutOfMemory => fail(
                            FailureKind::OutOfMemory,
                            format!("the handler exhausted the plugin's memory limit ({} MiB)", self.memory_limit / (1024 * 1024)),
                        ),
                        kind => {
                            let at = t.stack.as_deref().and_then(first_frame).map(|(f, (l, c))| format!(" (at {}:{l}:{c})", short(&f))).unwrap_or_default();
                            fail(kind, format!("{}{at}", t.text()))
                        }
                    }
                }
            }
        };
        self.disarm();
        let (logs, impure) = match (covel.get::<_, Function>("finish"), signal) {
            (Ok(finish), Some(signal)) => match finish.call::<_, rquickjs::Array>((signal,)) {
                Ok(done) => (done.get::<Vec<String>>(0).unwrap_or_default(), done.get::<Option<String>>(1).ok().flatten()),
                Err(_) => (Vec::new(), None),
            },
            _ => {
                // The call never started (no signal): its timers and notes still go.
                let _ = covel.get::<_, Function>("clearTimers").and_then(|f| f.call::<_, ()>(()));
                let impure = covel.get::<_, Function>("takeImpure").and_then(|f| f.call::<_, Option<String>>(())).ok().flatten();
                (Vec::new(), impure)
            }
        };
        (outcome, logs, impure)
    }

    fn classify_kind(&self, message: &str) -> FailureKind {
        if self.memory.take_refused() || message.contains("out of memory") { FailureKind::OutOfMemory } else { FailureKind::Error }
    }

    fn execution_data(&self, context: &ExecutionContext) -> Json {
        let scope = context.plugins.get(&self.plugin_id);
        let rows: Vec<Json> = context
            .plugin_data
            .get(&self.plugin_id)
            .into_iter()
            .flatten()
            .filter(|row| !row.namespace.starts_with(covel_kernel::context::HIDDEN_NAMESPACE_PREFIX))
            .map(|row| json!({"namespace": row.namespace, "key": row.key, "value": row.value, "createdAt": row.created_at, "updatedAt": row.updated_at}))
            .collect();
        json!({
            "sessionId": context.session_id,
            "locale": context.locale,
            "world": context.world,
            "settings": scope.map(|s| Json::Object(s.settings.clone())).unwrap_or_else(|| json!({})),
            "messages": self.messages_for(&context.locale),
            "rows": rows,
        })
    }

    fn messages_for(&self, locale: &str) -> Json {
        messages_for_locale(&self.messages, locale).map(|m| Json::Object(m.clone())).unwrap_or_else(|| json!({}))
    }

    fn shutdown(&mut self) {
        if self.disposed {
            return;
        }
        self.disposed = true;
        self.disarm();
        let ran = self.context.with(|ctx| {
            let mut ran = 0;
            if let Ok(covel) = self.internals(&ctx)
                && let Ok(dispose) = covel.get::<_, Function>("dispose")
            {
                self.arm(Duration::from_millis(200));
                ran = dispose.call::<_, usize>(()).unwrap_or(0);
                self.disarm();
            }
            // Persistent handles must go before the runtime does.
            self.internals.borrow_mut().take();
            ran
        });
        self.runtime.run_gc();
        self.shutdown.disposers.store(ran, Ordering::SeqCst);
        self.shutdown.done.store(true, Ordering::SeqCst);
    }

    /// A handle that reports this engine's shutdown after it happened.
    pub fn watch(&self) -> RuntimeWatch {
        RuntimeWatch { shutdown: Arc::clone(&self.shutdown), memory: Arc::clone(&self.memory) }
    }
}

/// The `messages` of the `locales/<tag>.yaml` a handler in `locale` reads: the first file
/// whose name is one of the locale's lookup candidates, then of its fallbacks (`fr-CA` →
/// `fr-CA`, `fr`, `en-US`, `en`; `zh-TW` never reads `zh`), names compared as locale keys
/// (`zh_cn.yaml` is `zh-CN`). The rule is `covel_kernel::locale`'s.
fn messages_for_locale<'a>(messages: &'a BTreeMap<String, Map<String, Json>>, locale: &str) -> Option<&'a Map<String, Json>> {
    use covel_kernel::locale::{locale_resource_candidates, normalize_locale};
    locale_resource_candidates(locale).iter().find_map(|tag| {
        let wanted = normalize_locale(tag);
        messages.iter().find(|(name, _)| normalize_locale(name) == wanted).map(|(_, m)| m)
    })
}

fn nanos_since(epoch: Instant) -> u64 {
    u64::try_from(epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// Takes the pending exception off the context.
fn thrown(ctx: &Ctx<'_>) -> Thrown {
    let value = ctx.catch();
    if let Some(exception) = value.as_exception() {
        let name = exception.get::<_, Option<String>>("name").ok().flatten().unwrap_or_default();
        return Thrown { name, message: exception.message().unwrap_or_default(), stack: exception.stack() };
    }
    let message = if let Some(s) = value.as_string() {
        s.to_string().unwrap_or_default()
    } else {
        from_js(&value).map(|v| v.to_string()).unwrap_or_else(|_| "a non-error value was thrown".into())
    };
    Thrown { name: String::new(), message: format!("threw {message}"), stack: None }
}

/// The first `path:line:col` in a stack or message, for diagnostics.
fn first_frame(stack: &str) -> Option<(PathBuf, (u32, u32))> {
    for token in stack.split(|c: char| c.is_whitespace() || c == '(' || c == ')') {
        let mut parts = token.rsplitn(3, ':');
        let (Some(col), Some(line), Some(file)) = (parts.next(), parts.next(), parts.next()) else { continue };
        let (Ok(line), Ok(col)) = (line.parse::<u32>(), col.trim_end_matches([',', '.']).parse::<u32>()) else { continue };
        if file.starts_with('/') || file.contains(".js") || file.contains(".mjs") {
            return Some((PathBuf::from(file), (line, col)));
        }
    }
    None
}

fn short(path: &std::path::Path) -> String {
    path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

/// The facade's registration methods.
const REGISTRATION_METHODS: &[&str] =
    &["provideExtension", "registerTool", "registerService", "on", "registerRpc", "registerFormValidator", "registerWires"];

/// The first frame of a stack that is inside the plugin's own modules: where the plugin made
/// the call (the facade's own frames come first). The engine's column is where it last
/// recorded a position, often inside an argument; the call on that line is found in the source
/// (the last registration call starting at or before that column).
fn plugin_frame(stack: &str, root: &std::path::Path, calls: &mut BTreeMap<PathBuf, Vec<(u32, u32)>>) -> Option<Site> {
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let (file, (line, column)) = stack.lines().find_map(|line| first_frame(line).filter(|(file, _)| file.starts_with(&root)))?;
    let known = calls.entry(file.clone()).or_insert_with(|| crate::imports::method_calls(&file, REGISTRATION_METHODS));
    let on_line: Vec<u32> = known.iter().filter(|(l, _)| *l == line).map(|(_, c)| *c).collect();
    let column = on_line.iter().copied().filter(|c| *c <= column).max().or_else(|| on_line.first().copied()).unwrap_or(column);
    Some(Site { file, line, column })
}

fn registrations_from(staged: &Json, root: &std::path::Path) -> Registrations {
    let strings = |field: &str| -> Vec<String> {
        staged.get(field).and_then(Json::as_array).into_iter().flatten().filter_map(|v| v.as_str().map(str::to_string)).collect()
    };
    let mut calls = BTreeMap::new();
    let sites: Vec<(String, Site)> = staged
        .get("sites")
        .and_then(Json::as_array)
        .into_iter()
        .flatten()
        .filter_map(|s| {
            let key = s.get("key").and_then(Json::as_str)?;
            let site = plugin_frame(s.get("stack").and_then(Json::as_str).unwrap_or_default(), root, &mut calls)?;
            Some((key.to_string(), site))
        })
        .collect();
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let extensions = staged
        .get("extensions")
        .and_then(Json::as_array)
        .into_iter()
        .flatten()
        .map(|e| {
            let point = e.get("point").and_then(Json::as_str).unwrap_or_default().to_string();
            let id = e.get("id").and_then(Json::as_str).unwrap_or_default().to_string();
            let key = format!("extension:{point}/{id}");
            let nth = seen.entry(key.clone()).or_default();
            let site = sites.iter().filter(|(k, _)| *k == key).nth(*nth).map(|(_, s)| s.clone());
            *nth += 1;
            ProvidedExtension { point, id, handler_is_function: e.get("handlerIsFunction").and_then(Json::as_bool).unwrap_or(false), site }
        })
        .collect();
    Registrations {
        extensions,
        tools: strings("tools"),
        actions: strings("actions"),
        services: strings("services"),
        forms: strings("forms"),
        wires: strings("wires"),
        hooks: strings("hooks"),
        refused_late: strings("refusedLate"),
        sites,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_follow_the_locale_rule() {
        let file = |name: &str| {
            let mut m = Map::new();
            m.insert("Quest".into(), Json::from(name));
            (name.to_string(), m)
        };
        let messages: BTreeMap<_, _> = ["zh", "fr", "en", "zh_hk"].into_iter().map(file).collect();
        let read = |locale: &str| messages_for_locale(&messages, locale).and_then(|m| m["Quest"].as_str());
        assert_eq!(read("zh-CN"), Some("zh"));
        assert_eq!(read("ZH_cn"), Some("zh"));
        assert_eq!(read("fr_CA"), Some("fr"));
        assert_eq!(read("zh-HK"), Some("zh_hk"), "file names compare as locale keys");
        assert_eq!(read("zh-TW"), Some("en"), "Traditional never reads Simplified");
        assert_eq!(read("ja"), Some("en"));
        assert_eq!(read("../zh"), Some("en"));
        let none: BTreeMap<String, Map<String, Json>> = BTreeMap::new();
        assert_eq!(messages_for_locale(&none, "fr"), None);
    }
}
