//! The host functions the bootstrap receives as `__host` (and hides from plugin code): the
//! clock, plugin HTTP decided on the host's side, the model gateway a call site may lend, and
//! the modules the facade imports on first use.

use super::*;

thread_local! {
    /// The gateway of the call running on this thread (calls run one at a time).
    pub(super) static GATEWAY: std::cell::RefCell<Option<covel_kernel::context::Gateway>> = const { std::cell::RefCell::new(None) };
}

impl Engine {
    pub(super) fn install_host<'js>(&self, ctx: &Ctx<'js>) -> rquickjs::Result<()> {
        let host = Object::new(ctx.clone())?;
        let clock = self.deadline.clone();
        host.set("now", Function::new(ctx.clone(), move || clock.millis())?)?;
        // Plugin HTTP: the host decides for the running call (crate::http); plugin code only asks.
        let slot = Arc::clone(&self.http);
        host.set(
            "fetch",
            Function::new(
                ctx.clone(),
                move |ctx: Ctx<'js>,
                      method: String,
                      url: String,
                      body: Option<String>|
                      -> rquickjs::Result<Value<'js>> {
                    match crate::http::fetch(&slot, &method, &url, body.as_deref()) {
                        Ok(answer) => to_js(&ctx, &answer),
                        Err(message) => Err(rquickjs::Exception::throw_message(&ctx, &message)),
                    }
                },
            )?,
        )?;
        let slot = Arc::clone(&self.http);
        host.set(
            "httpRefusal",
            Function::new(ctx.clone(), move |method: String, url: String| {
                crate::http::refusal(&slot, &method, &url)
            })?,
        )?;
        host.set(
            "generateText",
            Function::new(
                ctx.clone(),
                |ctx: Ctx<'js>, request: Value<'js>| -> rquickjs::Result<Value<'js>> {
                    let request = from_js_within(
                        &request,
                        ConversionBudget::OUTPUT,
                        &crate::deadline::current_expired,
                    )
                    .map_err(|e| {
                        rquickjs::Error::new_from_js_message("value", "request", e.to_string())
                    })?;
                    let gateway = GATEWAY.with(|g| g.borrow().clone());
                    let Some(gateway) = gateway else {
                        return Err(rquickjs::Exception::throw_message(
                            &ctx,
                            "no model gateway is available to this call",
                        ));
                    };
                    // The request may take what is left of the call's deadline, no more.
                    let within = crate::deadline::current()
                        .map(|d| d.remaining())
                        .unwrap_or(Duration::ZERO);
                    if within.is_zero() {
                        return Err(rquickjs::Exception::throw_message(
                            &ctx,
                            "the call's deadline passed before the model request could start",
                        ));
                    }
                    match gateway.0.generate(&request, within) {
                        Ok(answer) => to_js(&ctx, &answer),
                        Err(message) => Err(rquickjs::Exception::throw_message(&ctx, &message)),
                    }
                },
            )?,
        )?;
        // The facade's `z` and Node's globals (`URL`, `crypto`) import their module on first
        // use: the module is linked and evaluated here, synchronously (none of them awaits at
        // the top level), and shared with any static import of the same name.
        host.set(
            "requireModule",
            Function::new(
                ctx.clone(),
                |ctx: Ctx<'js>, name: String| -> rquickjs::Result<Object<'js>> {
                    if !matches!(
                        name.as_str(),
                        modules::ZOD
                            | modules::WEB
                            | modules::INTL
                            | modules::CLONE
                            | modules::TURN
                            | modules::SDK
                            | "node:url"
                            | "node:crypto"
                    ) {
                        return Err(rquickjs::Exception::throw_type(
                            &ctx,
                            "not a module the host serves",
                        ));
                    }
                    let promise = Module::import(&ctx, name.as_bytes().to_vec())?;
                    while promise.state() == PromiseState::Pending && ctx.execute_pending_job() {}
                    match promise.state() {
                        PromiseState::Resolved => promise.result::<Object>().unwrap_or_else(|| {
                            Err(rquickjs::Exception::throw_message(
                                &ctx,
                                "module did not evaluate",
                            ))
                        }),
                        _ => Err(rquickjs::Exception::throw_message(
                            &ctx,
                            &format!("`{name}` could not be loaded"),
                        )),
                    }
                },
            )?,
        )?;
        // The intrinsics added on first use (crate::intrinsics): the bootstrap's accessors on
        // their globals ask for their group.
        host.set(
            "addIntrinsics",
            Function::new(
                ctx.clone(),
                |ctx: Ctx<'js>, group: String| -> rquickjs::Result<()> {
                    let group = crate::intrinsics::Deferred::parse(&group).ok_or_else(|| {
                        rquickjs::Exception::throw_type(&ctx, "not an intrinsic group")
                    })?;
                    crate::intrinsics::add(&ctx, group)
                },
            )?,
        )?;
        // Which globals each of those groups defines: `[[group, [name, …]], …]`.
        let groups = rquickjs::Array::new(ctx.clone())?;
        for (i, group) in crate::intrinsics::Deferred::ALL.iter().enumerate() {
            let names = rquickjs::Array::new(ctx.clone())?;
            for (j, name) in group.globals().iter().enumerate() {
                names.set(j, *name)?;
            }
            let pair = rquickjs::Array::new(ctx.clone())?;
            pair.set(0, group.name())?;
            pair.set(1, names)?;
            groups.set(i, pair)?;
        }
        host.set("deferredIntrinsics", groups)?;
        ctx.globals().set("__host", host)?;
        Ok(())
    }
}
