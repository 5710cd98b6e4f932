//! Answering one provider call: the handler context (the kernel's `HandlerContext`, rebuilt
//! only when what the plugin can see changed), the memo, HTTP and the gateway for the call's
//! time, and the result read back within its budget and deadline, classified on failure.

use super::*;

/// With the `fault-injection` feature (tests only), a handler that returns this string makes
/// the host panic while it reads the result, inside the engine's context.
#[cfg(feature = "fault-injection")]
pub const INJECT_PANIC: &str = "covel:inject-panic";

/// How long ending a call may take (its signal's abort listeners run then).
const FINISH_TIMEOUT: Duration = Duration::from_millis(100);

impl Engine {
    /// The hash of the turn `context` belongs to, computed once per execution (every call of a
    /// preview comes from one or two executions).
    fn turn_key(&mut self, context: &covel_kernel::context::ExecutionContext) -> u64 {
        if self.turn_of_execution.0 != context.execution_id {
            self.turn_of_execution = (
                context.execution_id,
                crate::memo::turn_key(context.turn_id.as_deref()),
            );
        }
        self.turn_of_execution.1
    }

    /// Runs one provider call to completion (or its deadline). A panic inside it (a bug of the
    /// host's: a value the engine's bindings did not expect, say) fails this call and sets the
    /// engine aside; the process, the other plugins and the studio's locks carry on.
    pub fn call(&mut self, call: &ProviderCall) -> CallReport {
        self.contained(|engine| engine.call_guarded(call))
    }

    /// Runs a tool or hook handler of the turn loop to completion (or its deadline); never
    /// answered from the memo (a tool or hook acts on the turn). Contained as [`Engine::call`].
    pub fn call_handler(&mut self, call: &HandlerCall) -> CallReport {
        self.contained(|engine| engine.call_handler_guarded(call))
    }

    /// Runs `run` unless the engine was set aside; a panic inside it fails this call and sets
    /// the engine aside.
    fn contained(&mut self, run: impl FnOnce(&mut Engine) -> CallReport) -> CallReport {
        let started = Instant::now();
        let unavailable = |message: String| CallReport {
            result: Err(ProviderFailure {
                kind: FailureKind::Unavailable,
                message,
            }),
            duration: started.elapsed(),
            logs: Vec::new(),
            notes: Vec::new(),
            cached: false,
            ran: None,
            not_cached: Some("the plugin's runtime was set aside".into()),
        };
        if let Some(why) = &self.broken {
            return unavailable(format!(
                "the plugin's runtime was set aside after an internal error ({why}); save the plugin or use \"Run everything again\" to load it afresh"
            ));
        }
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(self))) {
            Ok(report) => report,
            Err(payload) => {
                let why = self.set_aside(payload.as_ref());
                CallReport {
                    result: Err(ProviderFailure {
                        kind: FailureKind::Error,
                        message: format!(
                            "Covel Studio failed while running this call ({why}): this is a bug of the studio's, not of the plugin; its runtime was set aside, and the other plugins carry on"
                        ),
                    }),
                    ..unavailable(String::new())
                }
            }
        }
    }

    fn call_guarded(&mut self, call: &ProviderCall) -> CallReport {
        let started = Instant::now();
        let execution = self.execution_for(&call.context);
        let needs_execution = execution.is_some();
        // A call that can reach the network or a model is never answered from the memo.
        let memoizable = !call.context.view.http.live && call.context.gateway.is_none();
        let memo_key = memoizable.then(|| {
            let turn = self.turn_key(&call.context);
            self.memo.turn(turn);
            crate::memo::call_key(
                call.point,
                &call.provider_id,
                turn,
                call.input_key,
                call.timeout,
            )
        });
        // The answer's value is shared with the memo entry (the runner knows it by that).
        if let Some(report) = memo_key.and_then(|k| self.memo.answer(k)) {
            return CallReport {
                duration: started.elapsed(),
                cached: true,
                ran: Some(report.duration),
                ..report.clone()
            };
        }
        // Only a call that runs needs the module resolver's root (a memo answer runs no code).
        let _ = modules::take_random_used();
        let key = format!("{}/{}", call.point, call.provider_id);
        let invocation = Invocation {
            key: &key,
            input: &call.input,
            turn_id: call.context.turn_id.as_deref(),
            with_gateway: call.context.gateway.is_some(),
            timeout: call.timeout,
            ctx_plugin_id: None,
        };
        let (result, printed) = self.run_invocation(&call.context, &invocation, execution.as_ref());
        let impure = printed.impure.or_else(|| {
            modules::take_random_used().then(|| "uses randomness (crypto)".to_string())
        });
        if needs_execution && result.is_ok() {
            self.view_seen = call.context.view.id();
        }
        if matches!(&result, Err(f) if f.kind == FailureKind::OutOfMemory) {
            self.runtime.run_gc();
        }
        let mut report = CallReport {
            result: result.map(Arc::new),
            duration: started.elapsed(),
            logs: printed.logs,
            notes: printed.notes,
            cached: false,
            ran: None,
            not_cached: None,
        };
        report.not_cached = match memo_key {
            Some(key) => {
                let why = self.memo.record(key, &report, impure.as_deref());
                self.memo.keep_unconfirmed(key, call);
                why
            }
            None => Some("it can reach the network or a model".into()),
        };
        report
    }

    fn call_handler_guarded(&mut self, call: &HandlerCall) -> CallReport {
        let started = Instant::now();
        let execution = self.execution_for(&call.context);
        let invocation = Invocation {
            key: &call.key,
            input: &call.input,
            turn_id: call.context.turn_id.as_deref(),
            with_gateway: call.context.gateway.is_some(),
            timeout: call.timeout,
            ctx_plugin_id: Some(&call.ctx_plugin_id),
        };
        let (result, printed) = self.run_invocation(&call.context, &invocation, execution.as_ref());
        if execution.is_some() && result.is_ok() {
            self.view_seen = call.context.view.id();
        }
        if matches!(&result, Err(f) if f.kind == FailureKind::OutOfMemory) {
            self.runtime.run_gc();
        }
        CallReport {
            result: result.map(Arc::new),
            duration: started.elapsed(),
            logs: printed.logs,
            notes: printed.notes,
            cached: false,
            ran: None,
            not_cached: Some("a tool or hook acts on the turn".into()),
        }
    }

    /// The handler context to pass when what the plugin sees changed since the engine last
    /// built it (`None`: it still holds). A new context clears the memo.
    fn execution_for(&mut self, context: &ExecutionContext) -> Option<Json> {
        let view = &context.view;
        if self.view_seen == view.id() {
            return None;
        }
        let fingerprint = view.visible_key(&self.plugin_id);
        if fingerprint == self.fingerprint {
            // Same visible data in a new view: the engine's context still holds.
            self.view_seen = view.id();
            None
        } else {
            self.memo.clear();
            self.fingerprint = fingerprint;
            Some(self.execution_data(context))
        }
    }

    /// Runs one handler under its deadline with the call's HTTP and gateway lent for its time.
    fn run_invocation(
        &mut self,
        context: &Arc<ExecutionContext>,
        invocation: &Invocation<'_>,
        execution: Option<&Json>,
    ) -> (Result<Json, ProviderFailure>, Printed) {
        modules::set_thread_root(&self.root);
        self.arm(invocation.timeout);
        let _ = self.memory.take_refused();
        if let Ok(mut slot) = self.http.lock() {
            *slot = Some(crate::http::CallHttp {
                plugin: self.plugin_id.clone(),
                context: Arc::clone(context),
                deadline: Instant::now() + invocation.timeout,
            });
        }
        GATEWAY.with(|g| *g.borrow_mut() = context.gateway.clone());
        let answer = self
            .context
            .with(|ctx| self.call_in(&ctx, invocation, execution));
        GATEWAY.with(|g| *g.borrow_mut() = None);
        if let Ok(mut slot) = self.http.lock() {
            *slot = None;
        }
        self.disarm();
        answer
    }

    /// Whether the memo keeps calls [`Engine::confirm_memo`] would run.
    pub fn has_unconfirmed(&self) -> bool {
        self.broken.is_none() && self.memo.has_unconfirmed()
    }

    /// Forgets the calls [`Engine::confirm_memo`] would run ([`crate::memo::Memo::forget_unconfirmed`]).
    pub fn forget_unconfirmed(&mut self) {
        self.memo.forget_unconfirmed();
    }

    /// Runs again every call that ran once and awaits a second identical answer before the memo
    /// trusts it, in the order they first ran; returns how many ran. The shells do it while the
    /// author is idle (`LiveStudio::confirm_memo`).
    pub fn confirm_memo(&mut self) -> usize {
        let calls = self.memo.take_unconfirmed();
        for call in &calls {
            self.call(call);
        }
        calls.len()
    }

    pub(super) fn call_in<'js>(
        &self,
        ctx: &Ctx<'js>,
        call: &Invocation<'_>,
        execution: Option<&Json>,
    ) -> (Result<Json, ProviderFailure>, Printed) {
        let fail = |kind, message: String| Err(ProviderFailure { kind, message });
        let (fns, covel) = match self
            .call_functions(ctx)
            .and_then(|fns| Ok((fns, self.internals(ctx)?)))
        {
            Ok(found) => found,
            Err(e) => {
                return (
                    fail(FailureKind::Unavailable, e.to_string()),
                    Printed::default(),
                );
            }
        };
        if let Some(data) = execution {
            let set = to_js(ctx, data).and_then(|d| fns.set_execution.call::<_, ()>((d,)));
            if set.is_err() {
                let t = thrown(ctx);
                return (
                    fail(
                        FailureKind::Error,
                        format!("cannot build the handler context: {}", t.text()),
                    ),
                    Printed::default(),
                );
            }
        }
        let input = match to_js(ctx, call.input) {
            Ok(v) => v,
            Err(e) => {
                return (
                    fail(
                        self.classify_kind(&e.to_string()),
                        format!("cannot pass the input: {e}"),
                    ),
                    Printed::default(),
                );
            }
        };
        let started: rquickjs::Result<Value> = fns.call.call((
            call.key,
            input,
            call.turn_id,
            call.with_gateway,
            call.ctx_plugin_id,
        ));
        // A value (or an already settled promise) needs no trip through the job loop.
        let settled = match started {
            Ok(result) => self.drive(ctx, &covel, result),
            Err(_) => Settled::Threw(thrown(ctx)),
        };
        let outcome = match settled {
            Settled::Value(value) => match value.type_of() {
                rquickjs::Type::Undefined => fail(
                    FailureKind::Error,
                    "the handler returned undefined (return null for \"nothing\")".into(),
                ),
                _ => {
                    #[cfg(feature = "fault-injection")]
                    if value
                        .as_string()
                        .and_then(|s| s.to_string().ok())
                        .as_deref()
                        == Some(INJECT_PANIC)
                    {
                        panic!("injected panic while reading a result (fault-injection)");
                    }
                    let expired = || self.expired();
                    match from_js_within(&value, ConversionBudget::OUTPUT, &expired) {
                        Ok(json) => Ok(json),
                        Err(FromJsError::Deadline) => fail(
                            FailureKind::Timeout,
                            format!(
                                "the handler's result was still being read at its {} ms limit",
                                call.timeout.as_millis()
                            ),
                        ),
                        // An interrupt inside a getter or proxy trap during the read is the deadline too.
                        Err(FromJsError::Engine(_)) if self.expired() => fail(
                            FailureKind::Timeout,
                            format!(
                                "reading the handler's result ran past its {} ms limit (a getter or proxy kept running)",
                                call.timeout.as_millis()
                            ),
                        ),
                        Err(
                            e @ (FromJsError::OverBudget(_)
                            | FromJsError::Unsupported { .. }
                            | FromJsError::TooDeep(_)),
                        ) => fail(FailureKind::InvalidOutput, e.to_string()),
                        Err(FromJsError::Engine(e)) if self.memory.take_refused() => fail(
                            FailureKind::OutOfMemory,
                            format!(
                                "reading the handler's result exhausted the plugin's memory limit: {e}"
                            ),
                        ),
                        Err(e) => fail(FailureKind::Error, e.to_string()),
                    }
                }
            },
            Settled::Timeout(why) => fail(
                FailureKind::Timeout,
                format!("no result within {} ms: {why}", call.timeout.as_millis()),
            ),
            Settled::Threw(t) => {
                if self.expired() {
                    fail(
                        FailureKind::Timeout,
                        format!(
                            "the handler ran past its {} ms limit and was interrupted",
                            call.timeout.as_millis()
                        ),
                    )
                } else {
                    match self.classify_kind(&t.text()) {
                        FailureKind::OutOfMemory => fail(
                            FailureKind::OutOfMemory,
                            format!(
                                "the handler exhausted the plugin's memory limit ({} MiB)",
                                self.memory_limit / (1024 * 1024)
                            ),
                        ),
                        kind => {
                            let at = t
                                .stack
                                .as_deref()
                                .and_then(first_frame)
                                .map(|(f, (l, c))| format!(" (at {}:{l}:{c})", short(&f)))
                                .unwrap_or_default();
                            fail(kind, format!("{}{at}", t.text()))
                        }
                    }
                }
            }
        };
        // The call ends (its timers dropped, its ctx dead) under a short deadline of its own:
        // abort listeners are plugin code too.
        self.arm(FINISH_TIMEOUT);
        let finished = fns.finish.call::<_, Value>(());
        // Read while the short deadline still holds, within a budget that fits what the
        // bootstrap keeps (51 lines of at most ~2 000 characters).
        let printed = match finished {
            Ok(done) => {
                let expired = || self.expired();
                match from_js_within(&done, ConversionBudget::CALL_LOGS, &expired) {
                    Ok(done) => Printed::of(&done),
                    Err(e) => Printed {
                        notes: vec![format!("the call's log could not be read: {e}")],
                        impure: Some("its log could not be read".to_string()),
                        ..Printed::default()
                    },
                }
            }
            Err(_) => {
                let _ = ctx.catch();
                Printed {
                    impure: Some("its abort listeners ran past their limit".to_string()),
                    ..Printed::default()
                }
            }
        };
        self.disarm();
        (outcome, printed)
    }

    pub(super) fn classify_kind(&self, message: &str) -> FailureKind {
        if self.memory.take_refused() || message.contains("out of memory") {
            FailureKind::OutOfMemory
        } else {
            FailureKind::Error
        }
    }

    /// The kernel's handler context for this plugin, as the value `setExecution` consumes.
    pub(super) fn execution_data(&self, context: &ExecutionContext) -> Json {
        serde_json::to_value(
            context
                .view
                .handler_context(&self.plugin_id, &self.messages),
        )
        .unwrap_or(Json::Null)
    }
}

/// One handler call as the bootstrap starts it: a provider's (`point/id`), a tool's or a hook's.
pub(super) struct Invocation<'a> {
    pub key: &'a str,
    pub input: &'a Json,
    pub turn_id: Option<&'a str>,
    pub with_gateway: bool,
    pub timeout: Duration,
    /// `ctx.pluginId` (tools and hooks only).
    pub ctx_plugin_id: Option<&'a str>,
}

/// What a call left besides its result: what the handler printed, what the studio has to say
/// about the call, and why it must not be memoized.
#[derive(Debug, Default)]
pub(super) struct Printed {
    logs: Vec<String>,
    notes: Vec<String>,
    impure: Option<String>,
}

impl Printed {
    /// The bootstrap's end-of-call answer (`null`, or `[lines, why impure, notes]`).
    fn of(done: &Json) -> Printed {
        let strings = |at: usize| -> Vec<String> {
            done.get(at)
                .and_then(Json::as_array)
                .into_iter()
                .flatten()
                .filter_map(|line| line.as_str().map(str::to_string))
                .collect()
        };
        Printed {
            logs: strings(0),
            notes: strings(2),
            impure: done.get(1).and_then(Json::as_str).map(str::to_string),
        }
    }
}
