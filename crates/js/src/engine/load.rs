//! Loading a plugin: a new runtime, the host bootstrap, the entry module and its default export
//! within the load limit, and a failure classified with the file and position it blames.

use super::*;

const BOOTSTRAP: &str = include_str!("../js/bootstrap.js");
/// The engine name of the bootstrap module. No plugin can import it: the resolver refuses every
/// bare name it does not serve, and QuickJS resolves a name before it looks for a loaded module.
const BOOTSTRAP_MODULE: &str = "covel:bootstrap";

/// Runs the host bootstrap and answers its handle (the completion value of bootstrap.js). The
/// bootstrap is evaluated as a module whose default export is that value, so that it is compiled
/// once per process and every other runtime loads the shared bytecode instead of parsing it.
pub(super) fn bootstrap<'js>(ctx: &Ctx<'js>) -> rquickjs::Result<Object<'js>> {
    static SOURCE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    // `export default` on the first line keeps every line of bootstrap.js where it is.
    let source = SOURCE.get_or_init(|| format!("export default {BOOTSTRAP}"));
    let declared = crate::bytecode::declare_shared(ctx, BOOTSTRAP_MODULE, source)?;
    let (module, promise) = declared.eval()?;
    // The module has no top-level await: its evaluation settles with the queued jobs.
    while promise.state() == PromiseState::Pending && ctx.execute_pending_job() {}
    if promise.state() != PromiseState::Resolved {
        promise.result::<Value>().transpose()?;
        return Err(rquickjs::Error::Unknown);
    }
    module.get("default")
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
    /// What the loader read of each (the only module text the host reads for diagnostics).
    pub sources: Vec<modules::LoadedModule>,
    pub failure: Option<LoadFailure>,
    pub duration: Duration,
}

impl LoadReport {
    /// A load that failed before the entry could run (no runtime, or a panic of the host's).
    fn internal(message: String, duration: Duration) -> LoadReport {
        LoadReport {
            registrations: Registrations::default(),
            modules: Vec::new(),
            sources: Vec::new(),
            failure: Some(LoadFailure {
                code: Code::Internal,
                message,
                file: None,
                position: None,
            }),
            duration,
        }
    }
}

/// Loads a plugin's entry in a new runtime on the calling thread. The engine is returned only
/// when the load succeeded; either way the report says what happened.
pub fn load(spec: &LoadSpec) -> (Option<Engine>, LoadReport) {
    modules::set_thread_root(&spec.root);
    let started = Instant::now();
    let mut engine = match Engine::new(spec, false) {
        Ok(engine) => engine,
        Err(message) => return (None, LoadReport::internal(message, started.elapsed())),
    };
    let loaded = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| engine.load(spec)));
    let mut report = match loaded {
        Ok(report) => report,
        Err(payload) => {
            let why = engine.set_aside(payload.as_ref());
            let message = format!(
                "Covel Studio failed while loading this plugin ({why}): this is a bug of the studio's; the other plugins carry on"
            );
            return (None, LoadReport::internal(message, started.elapsed()));
        }
    };
    report.duration = started.elapsed();
    if report.failure.is_some() {
        engine.shutdown();
        return (None, report);
    }
    // No collection here: QuickJS frees the load's garbage by reference count and collects its
    // cycles itself once its allocation threshold is crossed. An explicit collection after each
    // load cost ≈ 8% of opening 500 generated plugins and freed nothing there (engine memory
    // 113.6 MB either way); on upstream's 21 plugins it freed 0.4 MB of 31.5.
    (Some(engine), report)
}

impl Engine {
    pub(super) fn load(&mut self, spec: &LoadSpec) -> LoadReport {
        self.arm(spec.limits.load_timeout);
        let outcome = self.context.with(|ctx| self.load_in(&ctx, spec));
        self.disarm();
        let sources = self.loaded_files.take();
        let modules = sources.iter().map(|m| m.path.clone()).collect();
        let (registrations, failure) = match outcome {
            Ok(registrations) => (registrations, None),
            Err(failure) => (Registrations::default(), Some(failure)),
        };
        LoadReport {
            registrations,
            modules,
            sources,
            failure,
            duration: Duration::ZERO,
        }
    }

    pub(super) fn load_in<'js>(
        &self,
        ctx: &Ctx<'js>,
        spec: &LoadSpec,
    ) -> Result<Registrations, LoadFailure> {
        let _ = modules::take_refusal();
        let _ = modules::take_typescript_failure();
        let _ = modules::take_file_refusal();
        let internal = |e: rquickjs::Error| LoadFailure {
            code: Code::Internal,
            message: e.to_string(),
            file: None,
            position: None,
        };
        self.install_host(ctx).map_err(internal)?;
        let covel = bootstrap(ctx).catch(ctx).map_err(|e| LoadFailure {
            code: Code::Internal,
            message: format!("host bootstrap failed: {e}"),
            file: None,
            position: None,
        })?;
        *self.internals.borrow_mut() =
            Some(Internals(rquickjs::Persistent::save(ctx, covel.clone())));
        let make: Function = covel.get("makeFacade").map_err(internal)?;
        let facade: Value = make.call((spec.plugin_id.as_str(),)).map_err(internal)?;

        let entry = spec
            .entry
            .canonicalize()
            .unwrap_or_else(|_| spec.entry.clone());
        let entry_name = entry.to_string_lossy().into_owned();
        let import = Module::import(ctx, entry_name.as_bytes().to_vec());
        let namespace = match import {
            Ok(promise) => self.drive(ctx, &covel, promise.into_value()),
            Err(rquickjs::Error::Exception) => Settled::Threw(thrown(ctx)),
            Err(e) => Settled::Threw(Thrown {
                name: String::new(),
                message: e.to_string(),
                stack: None,
            }),
        };
        let namespace = match namespace {
            Settled::Value(ns) => ns,
            Settled::Timeout(why) => {
                return Err(self.entry_failure(
                    Code::EntryTimeout,
                    format!("importing the entry did not finish: {why}"),
                    None,
                ));
            }
            Settled::Threw(t) => return Err(self.classify_import_error(&t)),
        };
        let default: Option<Function> = namespace
            .as_object()
            .and_then(|ns| ns.get::<_, Option<Function>>("default").ok().flatten());
        // Failures of the default export point at its declaration in the entry module.
        let at_default = || LoadFailure {
            code: Code::Internal,
            message: String::new(),
            file: Some(entry.clone()),
            position: self
                .loaded_files
                .source(&entry)
                .and_then(|source| crate::imports::default_export_position(&entry, &source)),
        };
        let Some(default) = default else {
            let message = "entry must default-export a function (covel) => { ... }".to_string();
            return Err(LoadFailure {
                code: Code::EntryShape,
                message,
                ..at_default()
            });
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
                return Err(LoadFailure {
                    code: Code::EntryTimeout,
                    message,
                    ..at_default()
                });
            }
            Settled::Threw(t) => {
                if self.expired() {
                    // The interrupted frame is not where the loop is; the default export that
                    // ran too long is.
                    let message = format!(
                        "the entry's default export ran past the {} ms load limit",
                        spec.limits.load_timeout.as_millis()
                    );
                    return Err(LoadFailure {
                        code: Code::EntryTimeout,
                        message,
                        ..at_default()
                    });
                }
                return Err(self.entry_failure(
                    Code::EntryThrew,
                    format!("the entry threw: {}", t.text()),
                    t.stack.as_deref(),
                ));
            }
        }
        let close: Function = covel.get("close").map_err(internal)?;
        let staged: Value = close.call(()).map_err(internal)?;
        let expired = || self.expired();
        let staged =
            from_js_within(&staged, ConversionBudget::REGISTRATIONS, &expired).map_err(|e| {
                LoadFailure {
                    code: Code::Internal,
                    message: e.to_string(),
                    file: None,
                    position: None,
                }
            })?;
        Ok(registrations_from(&staged, &self.loaded_files.snapshot()))
    }

    pub(super) fn classify_import_error(&self, t: &Thrown) -> LoadFailure {
        if let Some(failure) = modules::take_typescript_failure() {
            let code = if failure.error.unsupported {
                Code::TypescriptUnsupported
            } else {
                Code::EntrySyntax
            };
            let message = if failure.error.unsupported {
                failure.error.message
            } else {
                format!("syntax error: {}", failure.error.message)
            };
            return LoadFailure {
                code,
                message,
                file: Some(failure.file),
                position: failure.error.position,
            };
        }
        if let Some(refusal) = modules::take_refusal() {
            return LoadFailure {
                code: Code::ImportUnavailable,
                message: format!("import failed: {}", refusal.message),
                file: refusal.file,
                position: refusal.position,
            };
        }
        let text = t.text();
        if self.expired() {
            return self.entry_failure(
                Code::EntryTimeout,
                "the entry module ran past the load limit while being evaluated".into(),
                None,
            );
        }
        if let Some(refusal) = modules::take_file_refusal() {
            return self.unreadable_module(refusal);
        }
        let loaded = self.loaded_files.snapshot();
        // The engine's link error is a SyntaxError; the same words in an error the entry threw
        // itself are only the entry's words.
        let link_error = t.name == "SyntaxError";
        if let Some(missing) = link_error
            .then(|| crate::imports::missing_exports(&text, &loaded))
            .flatten()
        {
            return LoadFailure {
                code: Code::ImportUnavailable,
                message: missing.message,
                file: Some(missing.file),
                position: Some(missing.position),
            };
        }
        let code = if link_error
            && (text.contains("resolving module")
                || text.contains("Could not find export")
                || text.contains("could not find export"))
        {
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
        let mut failure = self.entry_failure(code, message, Some(&position_source));
        // The engine's own words can be an empty token at the end of the file; the module's
        // text parsed again says what and where (an unclosed bracket where it opened).
        if code == Code::EntrySyntax
            && let Some(file) = failure.file.clone()
            && let Some(source) = modules::source_among(&loaded, &file)
            && let Some(found) = crate::syntax::diagnose(&file, &source)
        {
            failure.message = format!("syntax error: {}", found.message);
            failure.position = Some(found.position);
        }
        failure
    }

    /// A module of the entry's graph that the loader refused to read (too large, not UTF-8,
    /// unreadable): its own code and the file, not "missing".
    fn unreadable_module(&self, refusal: covel_kernel::files::FileRefusal) -> LoadFailure {
        use covel_kernel::files::FileRefusal;
        let code = match &refusal {
            FileRefusal::Unreadable(..) => Code::FileUnreadable,
            other => other.code(),
        };
        LoadFailure {
            code,
            message: format!("cannot load a module: {refusal}"),
            file: Some(refusal.path().to_path_buf()),
            position: None,
        }
    }

    pub(super) fn entry_failure(
        &self,
        code: Code,
        message: String,
        stack: Option<&str>,
    ) -> LoadFailure {
        // A frame counts only when it names a module the loader loaded: a stack or message is
        // text the plugin can write (`Error.prepareStackTrace`, a thrown message).
        let loaded = self.loaded_files.snapshot();
        let (file, position) = stack
            .and_then(|text| first_frame_in(text, &loaded))
            .map_or((None, None), |(f, p)| (Some(f), Some(p)));
        LoadFailure {
            code,
            message,
            file,
            position,
        }
    }
}
