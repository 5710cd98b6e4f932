//! One plugin's QuickJS engine: a runtime and context with its deadline, memory account and
//! shutdown. The runtime is `Send`; its calls run one at a time on the calling thread, and the
//! kernel's runner calls different plugins in parallel. Dropping the engine disposes
//! the plugin and frees the runtime cleanly.
//!
//! - [`load`](mod@load): running the entry module and reading back what it registered
//!   ([`registrations`]: with the plugin's own call sites);
//! - [`call`](mod@call): answering one provider call, with the memo and the handler context
//!   (rebuilt only when what the plugin can see changed);
//! - [`host_functions`]: what the bootstrap may ask of Rust (time, HTTP, the gateway, modules);
//! - [`event_loop`]: driving a promise through jobs and timers until it settles or the deadline
//!   passes (QuickJS cannot interrupt a pending `await`; an interrupt handler stops CPU loops);
//! - [`exceptions`]: what a throw looks like to the host, and where it points.

mod call;
mod event_loop;
mod exceptions;
mod host_functions;
mod load;
mod registrations;
mod test_file;

#[cfg(feature = "fault-injection")]
pub use call::INJECT_PANIC;
pub use load::{LoadFailure, LoadReport, LoadSpec, load};
pub use test_file::run_test_file;

/// Tests: loads `source` as the entry of a plugin in a temporary folder, which the result keeps.
#[cfg(test)]
pub(crate) fn load_entry_for_test(
    plugin_id: &str,
    source: &str,
) -> (tempfile::TempDir, Option<Engine>, LoadReport) {
    let dir = tempfile::tempdir().expect("temp");
    let entry = dir.path().join("index.js");
    std::fs::write(&entry, source).expect("write");
    let spec = LoadSpec {
        plugin_id: plugin_id.into(),
        root: dir.path().to_path_buf(),
        entry,
        messages: Default::default(),
        limits: Limits::default(),
    };
    let (engine, report) = load(&spec);
    (dir, engine, report)
}

use event_loop::Settled;
use exceptions::{Thrown, first_frame, first_frame_in, short, thrown};
use host_functions::GATEWAY;
use registrations::registrations_from;

use crate::convert::{ConversionBudget, FromJsError, from_js_within, to_js};
use crate::modules::{self, ModuleRecords, PluginLoader, PluginResolver};
use covel_kernel::Code;
use covel_kernel::context::ExecutionContext;
use covel_kernel::registration::{HookSpec, ProvidedExtension, Registrations, Site, ToolSpec};
use covel_kernel::runner::{CallReport, FailureKind, HandlerCall, ProviderCall, ProviderFailure};
use rquickjs::promise::PromiseState;
use rquickjs::{CatchResultExt, Context, Ctx, Function, Module, Object, Runtime, Value};
use serde_json::{Map, Value as Json};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
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

/// A handle on the bootstrap's internal object.
struct Internals(rquickjs::Persistent<Object<'static>>);

// SAFETY: the handle belongs to the engine's runtime and is only restored inside that runtime's
// context (`Engine::internals`), and it is dropped before the runtime (`Engine::shutdown`). The
// runtime itself is `Send` (rquickjs `parallel`, access serialized by its lock), and the engine
// moves between threads only as a whole, so the handle never outlives or escapes its runtime.
#[allow(unsafe_code)]
unsafe impl Send for Internals {}

/// The bootstrap functions every call uses, looked up once (not by name on each call).
struct CallFunctions {
    call: rquickjs::Persistent<Function<'static>>,
    finish: rquickjs::Persistent<Function<'static>>,
    set_execution: rquickjs::Persistent<Function<'static>>,
}

// SAFETY: as for `Internals`: restored only inside the engine's own context
// (`Engine::call_functions`) and dropped before the runtime (`Engine::shutdown`).
#[allow(unsafe_code)]
unsafe impl Send for CallFunctions {}

/// [`CallFunctions`] restored in a context.
struct CallFns<'js> {
    call: Function<'js>,
    finish: Function<'js>,
    set_execution: Function<'js>,
}

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
    deadline: crate::deadline::Deadline,
    loaded_files: ModuleRecords,
    plugin_id: String,
    messages: BTreeMap<String, Map<String, Json>>,
    /// The session view whose data the engine's handler context holds (`SessionView::id`; 0 for
    /// none): a call over the same view needs no check of what the plugin sees.
    view_seen: u64,
    /// The last execution a call came from and the hash of its turn id (an execution's turn id
    /// never changes): the memo keys every call on it.
    turn_of_execution: (u64, u64),
    /// Hash of the data the plugin's handlers see (not the turn); the memo is valid for it.
    fingerprint: u64,
    memo: crate::memo::Memo,
    memory_limit: usize,
    memory: Arc<crate::memory::RuntimeMemory>,
    /// The bootstrap's internal functions: held by the host only, never on a global.
    internals: std::cell::RefCell<Option<Internals>>,
    /// The bootstrap's call functions, saved on the first call.
    call_functions: std::cell::RefCell<Option<CallFunctions>>,
    /// What HTTP the running call may do (empty between calls).
    http: crate::http::HttpSlot,
    root: PathBuf,
    disposed: bool,
    shutdown: Arc<ShutdownState>,
    /// Why the engine was set aside: a panic went through it ([`Engine::set_aside`]).
    broken: Option<String>,
}

impl Drop for Engine {
    fn drop(&mut self) {
        if self.broken.is_some() {
            // A runtime a panic went through is never entered again, not even to free it: its
            // lock may be poisoned and its objects' counts left mid-update (freeing it would
            // trip QuickJS's own assertions and abort the process). It is left to the process.
            std::mem::forget(self.context.clone());
            std::mem::forget(self.runtime.clone());
            return;
        }
        self.shutdown();
        if LEAVE_TO_EXIT.load(Ordering::Relaxed) {
            // One more handle on each, never released: the runtime is not freed (no collection
            // walking its whole heap), and the process's exit returns its memory.
            std::mem::forget(self.context.clone());
            std::mem::forget(self.runtime.clone());
        }
    }
}

/// Set by [`leave_runtimes_to_exit`].
static LEAVE_TO_EXIT: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// For a process about to exit (the CLI's one-shot commands, which hold one folder until they
/// end): from now on an engine that drops still disposes its plugin (its `dispose` handlers run
/// as always) but leaves its runtime's memory to the process's exit instead of freeing it, which
/// walks the runtime's whole heap (≈ 0.1 ms a runtime: 64 ms of a 500-plugin cold run). Never
/// for a process that goes on loading plugins (`covel watch`, the app): what it drops would stay.
pub fn leave_runtimes_to_exit() {
    LEAVE_TO_EXIT.store(true, Ordering::Relaxed);
}

impl Engine {
    fn new(spec: &LoadSpec, sdk_tests: bool) -> Result<Engine, String> {
        // The allocator enforces the plugin's limit and the shared budget (QuickJS's own limit
        // stays off, so every refusal is seen and classified).
        let memory = crate::memory::RuntimeMemory::new(
            spec.limits.memory_bytes,
            Arc::clone(&spec.limits.shared_memory),
        );
        let runtime =
            Runtime::new_with_alloc(crate::memory::BudgetAllocator::new(Arc::clone(&memory)))
                .map_err(|e| format!("cannot create a QuickJS runtime: {e}"))?;
        runtime.set_max_stack_size(spec.limits.stack_bytes);
        let deadline = crate::deadline::Deadline::new();
        {
            let deadline = deadline.clone();
            runtime.set_interrupt_handler(Some(Box::new(move || deadline.expired())));
        }
        let loaded_files = ModuleRecords::default();
        runtime.set_loader(
            PluginResolver {
                root: spec.root.clone(),
                loaded: loaded_files.clone(),
                sdk_tests,
            },
            PluginLoader {
                loaded: loaded_files.clone(),
            },
        );
        let context = crate::intrinsics::engine_context(&runtime)
            .map_err(|e| format!("cannot create a QuickJS context: {e}"))?;
        Ok(Engine {
            context,
            runtime,
            deadline,
            loaded_files,
            plugin_id: spec.plugin_id.clone(),
            messages: spec.messages.clone(),
            view_seen: 0,
            turn_of_execution: (0, 0),
            fingerprint: 0,
            memo: crate::memo::Memo::new(spec.limits.memo),
            memory_limit: spec.limits.memory_bytes,
            memory,
            internals: std::cell::RefCell::new(None),
            call_functions: std::cell::RefCell::new(None),
            http: Default::default(),
            root: spec.root.clone(),
            disposed: false,
            shutdown: Arc::default(),
            broken: None,
        })
    }

    fn arm(&self, timeout: Duration) {
        self.deadline.arm(timeout);
    }

    fn disarm(&self) {
        self.deadline.disarm();
    }

    fn expired(&self) -> bool {
        self.deadline.expired()
    }

    fn remaining(&self) -> Duration {
        self.deadline.remaining()
    }

    /// The bootstrap's internal functions in this context.
    fn internals<'js>(&self, ctx: &Ctx<'js>) -> rquickjs::Result<Object<'js>> {
        let saved = self.internals.borrow().as_ref().map(|i| i.0.clone());
        saved.ok_or(rquickjs::Error::Unknown)?.restore(ctx)
    }

    /// The bootstrap's call functions in this context (looked up on the first call only).
    fn call_functions<'js>(&self, ctx: &Ctx<'js>) -> rquickjs::Result<CallFns<'js>> {
        if self.call_functions.borrow().is_none() {
            let covel = self.internals(ctx)?;
            let save = |name: &str| -> rquickjs::Result<_> {
                Ok(rquickjs::Persistent::save(
                    ctx,
                    covel.get::<_, Function>(name)?,
                ))
            };
            let saved = CallFunctions {
                call: save("call")?,
                finish: save("finish")?,
                set_execution: save("setExecution")?,
            };
            *self.call_functions.borrow_mut() = Some(saved);
        }
        let saved = self.call_functions.borrow();
        let saved = saved.as_ref().ok_or(rquickjs::Error::Unknown)?;
        Ok(CallFns {
            call: saved.call.clone().restore(ctx)?,
            finish: saved.finish.clone().restore(ctx)?,
            set_execution: saved.set_execution.clone().restore(ctx)?,
        })
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
            self.call_functions.borrow_mut().take();
            self.internals.borrow_mut().take();
            ran
        });
        // No collection here: freeing the runtime (right after, when the engine drops) collects
        // once more anyway, and a collection now would walk the whole live heap for nothing.
        self.shutdown.disposers.store(ran, Ordering::SeqCst);
        self.shutdown.done.store(true, Ordering::SeqCst);
    }

    /// Sets the engine aside after a panic went through it (a bug of the host's, never the
    /// plugin's to fix): it answers no more calls and its runtime is never entered again.
    fn set_aside(&mut self, payload: &(dyn std::any::Any + Send)) -> String {
        let what = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic".into());
        self.disarm();
        GATEWAY.with(|g| *g.borrow_mut() = None);
        if let Ok(mut slot) = self.http.lock() {
            *slot = None;
        }
        self.broken = Some(what.clone());
        self.memo.clear();
        // Nothing of the runtime runs at shutdown either (no `onDispose`).
        self.disposed = true;
        self.shutdown.done.store(true, Ordering::SeqCst);
        what
    }

    /// The memo's generation ([`crate::memo::Memo::generation`]).
    pub fn memo_generation(&self) -> Arc<AtomicU64> {
        self.memo.generation()
    }

    /// A handle that reports this engine's shutdown after it happened.
    pub fn watch(&self) -> RuntimeWatch {
        RuntimeWatch {
            shutdown: Arc::clone(&self.shutdown),
            memory: Arc::clone(&self.memory),
        }
    }
}
