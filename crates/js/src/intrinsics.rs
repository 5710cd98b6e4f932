//! The intrinsics of a plugin's context, and those it gets only on first use.
//!
//! An engine's context has what QuickJS's full context has, but the groups plugins rarely touch
//! are added when first used instead of when the context is made: the typed arrays
//! (`ArrayBuffer`, `Uint8Array`, … `DataView`, `Atomics`), `WeakRef` and `FinalizationRegistry`,
//! and `DOMException` with `atob` and `btoa` held ≈ 14 KB of every runtime (a generated plugin's
//! engine: 262.9 KB with them, 248.4 KB without); `Date`, `Map` with `Set`, `WeakMap` and
//! `WeakSet`, and `performance` ≈ 7 KB more (248.3 KB → 241.3; the context alone 151.9 → 146.3;
//! a group saves only what it frees of whole arenas). A plugin that never uses them no
//! longer pays for them. The host's bootstrap uses none of them itself (its handlers and timers
//! are kept in objects without a prototype, not in Maps), and wraps `Date` and `performance` (a
//! call that reads the clock is never memoized) the moment they are added, before plugin code
//! can see them.
//!
//! Until a group is added, the bootstrap keeps an accessor on each of its globals (as for `URL`
//! and the other globals loaded on first use): the first read or write of any of them adds the
//! whole group ([`add`], through the bootstrap's host function), whose own globals then replace
//! the accessors. A host function that makes a typed array adds that group first, so a value the
//! host hands a plugin always has its real prototype.

use rquickjs::context::intrinsic::{Eval, Json, Promise, Proxy, RegExp, RegExpCompiler};
use rquickjs::{Context, Ctx, Error, JsLifetime, Result, Runtime, qjs};
use std::cell::Cell;

/// What every engine's context is made with: QuickJS's full context without the [`Deferred`]
/// groups. `RegExp` stays: a regular expression literal, and `String.prototype.match` or `search`
/// on a string, make a RegExp without reading the global, so no accessor could add it first.
/// `Proxy` stays: the bootstrap wraps `Date` in one and takes it before plugin code runs.
pub type Eager = (Eval, RegExpCompiler, RegExp, Json, Proxy, Promise);

/// The context of a plugin's runtime, before the host bootstrap.
pub fn engine_context(runtime: &Runtime) -> Result<Context> {
    Context::custom::<Eager>(runtime)
}

/// A group of intrinsics added on first use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deferred {
    TypedArrays,
    WeakRefs,
    /// `DOMException`, and `atob` and `btoa`, which throw it.
    Base64,
    Date,
    /// `Map`, `Set`, `WeakMap` and `WeakSet`.
    MapSet,
    /// The `performance` object.
    Performance,
}

impl Deferred {
    pub const ALL: [Deferred; 6] = [
        Deferred::TypedArrays,
        Deferred::WeakRefs,
        Deferred::Base64,
        Deferred::Date,
        Deferred::MapSet,
        Deferred::Performance,
    ];

    /// The group's name as the bootstrap asks for it.
    pub const fn name(self) -> &'static str {
        match self {
            Deferred::TypedArrays => "typed-arrays",
            Deferred::WeakRefs => "weak-refs",
            Deferred::Base64 => "base64",
            Deferred::Date => "date",
            Deferred::MapSet => "map-set",
            Deferred::Performance => "performance",
        }
    }

    pub fn parse(name: &str) -> Option<Deferred> {
        Deferred::ALL.into_iter().find(|group| group.name() == name)
    }

    /// The globals the group defines.
    pub const fn globals(self) -> &'static [&'static str] {
        match self {
            Deferred::TypedArrays => &[
                "ArrayBuffer",
                "SharedArrayBuffer",
                "Uint8ClampedArray",
                "Int8Array",
                "Uint8Array",
                "Int16Array",
                "Uint16Array",
                "Int32Array",
                "Uint32Array",
                "BigInt64Array",
                "BigUint64Array",
                "Float16Array",
                "Float32Array",
                "Float64Array",
                "DataView",
                "Atomics",
            ],
            Deferred::WeakRefs => &["WeakRef", "FinalizationRegistry"],
            Deferred::Base64 => &["DOMException", "atob", "btoa"],
            Deferred::Date => &["Date"],
            Deferred::MapSet => &["Map", "Set", "WeakMap", "WeakSet"],
            Deferred::Performance => &["performance"],
        }
    }

    const fn bit(self) -> u8 {
        match self {
            Deferred::TypedArrays => 1,
            Deferred::WeakRefs => 2,
            Deferred::Base64 => 4,
            Deferred::Date => 8,
            Deferred::MapSet => 16,
            Deferred::Performance => 32,
        }
    }
}

/// The groups a context already has (its userdata).
struct Added(Cell<u8>);

// SAFETY: `Added` holds no JavaScript value, so it outlives any `'js` lifetime.
#[allow(unsafe_code)]
unsafe impl<'js> JsLifetime<'js> for Added {
    type Changed<'to> = Added;
}

/// Adds `group` to the context `ctx` stands for, once: later calls do nothing.
pub fn add(ctx: &Ctx<'_>, group: Deferred) -> Result<()> {
    if ctx.userdata::<Added>().is_none() {
        ctx.store_userdata(Added(Cell::new(0)))
            .map_err(|_| Error::Unknown)?;
    }
    let added = ctx.userdata::<Added>().ok_or(Error::Unknown)?;
    if added.0.get() & group.bit() != 0 {
        return Ok(());
    }
    clear_the_way(ctx, group)?;
    let status = add_to(ctx, group);
    if status < 0 {
        return Err(Error::Exception);
    }
    added.0.set(added.0.get() | group.bit());
    Ok(())
}

/// Deletes the globals `group` is about to define: the bootstrap's accessors, or whatever a
/// plugin defined under those names itself (a plugin's write through an accessor adds the group
/// before it stores the written value, so only a value defined around the accessors is lost).
/// QuickJS defines some of them (`Atomics`, `atob`, `btoa`) as properties initialized on first
/// use, and aborts the process when one already exists; a name a plugin made non-configurable is
/// therefore refused, as an error of the call, and the group is not added.
fn clear_the_way(ctx: &Ctx<'_>, group: Deferred) -> Result<()> {
    let globals = ctx.globals();
    let own: Vec<String> = globals
        .own_keys::<String>(rquickjs::object::Filter::new().string())
        .collect::<Result<_>>()?;
    for name in group.globals() {
        if !own.iter().any(|o| o == name) {
            continue;
        }
        // Deleting never runs plugin code: globalThis is an ordinary object.
        if globals.remove(*name).is_err() {
            return Err(rquickjs::Exception::throw_type(
                ctx,
                &format!(
                    "the engine cannot add `{name}` and its group ({}): plugin code made the global `{name}` non-configurable",
                    group.name()
                ),
            ));
        }
    }
    Ok(())
}

/// QuickJS's own function adding `group` (its status: negative on failure).
#[allow(unsafe_code)]
fn add_to(ctx: &Ctx<'_>, group: Deferred) -> i32 {
    let raw = ctx.as_raw().as_ptr();
    // SAFETY: `raw` is the live context `ctx` stands for, and the caller runs inside it (a host
    // function, or the engine entering its context). Each function is called at most once per
    // context (`add` keeps which groups were added), as QuickJS expects of an intrinsic; each
    // defines its globals as configurable data properties, replacing the bootstrap's accessors.
    unsafe {
        match group {
            Deferred::TypedArrays => qjs::JS_AddIntrinsicTypedArrays(raw),
            Deferred::WeakRefs => qjs::JS_AddIntrinsicWeakRef(raw),
            // Adds DOMException first when the runtime has not registered its class.
            Deferred::Base64 => qjs::JS_AddIntrinsicAToB(raw),
            Deferred::Date => qjs::JS_AddIntrinsicDate(raw),
            Deferred::MapSet => qjs::JS_AddIntrinsicMapSet(raw),
            // Its `timeOrigin` is when it is added: `performance.now()` counts from the first use.
            Deferred::Performance => qjs::JS_AddPerformance(raw),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn globals_of(context: &Context) -> Vec<String> {
        context.with(|ctx| {
            ctx.eval::<String, _>("Object.getOwnPropertyNames(globalThis).join(',')")
                .expect("names")
                .split(',')
                .map(str::to_string)
                .collect()
        })
    }

    #[test]
    fn an_engine_context_with_every_deferred_group_added_has_the_full_contexts_globals() {
        let runtime = Runtime::new().expect("runtime");
        let full = globals_of(&Context::full(&runtime).expect("full"));
        let runtime = Runtime::new().expect("runtime");
        let lean = engine_context(&runtime).expect("engine context");
        let before = globals_of(&lean);
        let deferred: Vec<&str> = Deferred::ALL
            .iter()
            .flat_map(|g| g.globals())
            .copied()
            .collect();
        let missing: Vec<&str> = full
            .iter()
            .map(String::as_str)
            .filter(|name| !before.iter().any(|b| b == name))
            .collect();
        let mut expected = deferred.clone();
        expected.sort_unstable();
        let mut missing_sorted = missing.clone();
        missing_sorted.sort_unstable();
        assert_eq!(
            missing_sorted, expected,
            "only the deferred globals are missing"
        );
        lean.with(|ctx| {
            for group in Deferred::ALL {
                add(&ctx, group).expect("added");
                add(&ctx, group).expect("a second add does nothing");
            }
        });
        let mut after = globals_of(&lean);
        let mut full = full;
        after.sort_unstable();
        full.sort_unstable();
        assert_eq!(after, full);
    }

    #[test]
    fn a_global_of_a_deferred_group_made_non_configurable_is_an_error_not_an_abort() {
        let runtime = Runtime::new().expect("runtime");
        let context = engine_context(&runtime).expect("context");
        context.with(|ctx| {
            ctx.eval::<(), _>(
                "Object.defineProperty(globalThis, 'Atomics', { value: 1 }); globalThis.atob = 'mine';",
            )
            .expect("runs");
            let refused = add(&ctx, Deferred::TypedArrays);
            assert!(refused.is_err(), "refused, and the process is still here");
            let message: String = ctx
                .catch()
                .as_exception()
                .and_then(|e| e.message())
                .unwrap_or_default();
            assert!(message.contains("non-configurable"), "{message}");
            add(&ctx, Deferred::Base64).expect("a configurable plugin value gives way");
            let kind: String = ctx.eval("typeof atob").expect("runs");
            assert_eq!(kind, "function");
        });
    }

    #[test]
    fn a_deferred_group_works_once_added() {
        let runtime = Runtime::new().expect("runtime");
        let context = engine_context(&runtime).expect("context");
        context.with(|ctx| {
            for group in Deferred::ALL {
                add(&ctx, group).expect("added");
            }
            let answer: String = ctx
                .eval(
                    r#"const bytes = new Uint8Array([104, 105]);
                    let thrown = "";
                    try { atob("é"); } catch (e) { thrown = `${e instanceof DOMException} ${e.name}`; }
                    const key = {};
                    const maps = `${new Map([[1, "a"]]).get(1)} ${new Set([1, 1]).size} ${new WeakMap([[key, 2]]).get(key)} ${new WeakSet([key]).has(key)}`;
                    `${bytes.length} ${new DataView(bytes.buffer).getUint8(1)} ${new WeakRef(bytes).deref() === bytes} ${btoa("hi")} ${thrown} ${new Date(0).toISOString()} ${maps} ${typeof performance.now()}`"#,
                )
                .expect("runs");
            assert_eq!(
                answer,
                "2 105 true aGk= true InvalidCharacterError 1970-01-01T00:00:00.000Z a 1 2 true number"
            );
        });
    }

    /// Loads an entry whose default export runs `script` first (a throw fails the load).
    fn load_with(script: &str) {
        let source = format!(
            "export default function (covel) {{ {script}\n covel.provideExtension('prompt.segment@1', 'a', {{ handler: () => [] }}); }}"
        );
        let (_dir, engine, report) = crate::engine::load_entry_for_test("intrinsics", &source);
        assert!(engine.is_some(), "loads: {:?}", report.failure);
    }

    #[test]
    fn every_deferred_group_makes_its_objects_only_once_added() {
        // Counted in QuickJS's objects, not bytes: a small group can fit in free blocks of arenas
        // the context already holds.
        for group in Deferred::ALL {
            let runtime = Runtime::new().expect("runtime");
            let context = engine_context(&runtime).expect("context");
            let before = runtime.memory_usage().obj_count;
            context.with(|ctx| add(&ctx, group).expect("added"));
            let after = runtime.memory_usage().obj_count;
            assert!(
                after > before,
                "{group:?}: {before} objects before, {after} after"
            );
        }
    }

    #[test]
    fn a_plugin_gets_date_maps_and_performance_as_they_were_on_first_use() {
        // Before first use each global is the bootstrap's accessor; the first read gives the real
        // thing, wrapped as it always was (a call that reads the clock is never memoized).
        let uses = r#"
            const shape = (name) => ("get" in Object.getOwnPropertyDescriptor(globalThis, name) ? "accessor" : "data");
            const before = ["Date", "Map", "Set", "WeakMap", "WeakSet", "performance"].map(shape).join(" ");
            if (before !== "accessor accessor accessor accessor accessor accessor") throw new Error(`before: ${before}`);
            const key = {};
            const seen = [
                new Date(0).toISOString(), Date.UTC(1970, 0, 2), typeof Date.now(), new Date(5) instanceof Date,
                Object.prototype.toString.call(new Date(0)),
                new Map([[1, "a"]]).get(1), new Set([1, 1]).size, new WeakMap([[key, 2]]).get(key),
                new WeakSet([key]).has(key), [...new Map([[2, 3]]).entries()].join(),
                typeof performance.now(), Object.isFrozen(performance), Object.keys(globalThis).includes("performance"),
            ].join(" ");
            const want = "1970-01-01T00:00:00.000Z 86400000 number true [object Date] a 1 2 true 2,3 number true true";
            if (seen !== want) throw new Error(`seen: ${seen}`);
            const after = ["Date", "Map", "Set", "WeakMap", "WeakSet", "performance"].map(shape).join(" ");
            if (after !== "data data data data data data") throw new Error(`after: ${after}`);
        "#;
        load_with(uses);
    }
}
