// Covel Studio host bootstrap: evaluated once per plugin runtime, before the entry module.
// It builds the `covel` facade the entry's default export receives, stages registrations
// until the factory settles, dispatches provider calls, and builds each call's `ctx`.
// Host functions provided by Rust (see engine/host_functions.rs): now, fetch, httpRefusal,
// generateText, requireModule.
(function () {
  "use strict";
  const host = globalThis.__host;
  delete globalThis.__host;

  // ---- the host's own tools, taken before any plugin code runs --------------------------------
  // Plugin code can replace `Array.prototype.push`, `Error`, `String.prototype.slice`, … and the
  // replacement would receive the host's own arrays (the registrations the host reads back, the
  // call's log lines). The host's bookkeeping uses only these originals, so none of its objects
  // is ever handed to plugin code.
  const defineOwn = Reflect.defineProperty;
  const apply = Reflect.apply;
  const HostError = Error;
  const sliceText = String.prototype.slice;
  /** Appends to a host array without `push` (replaceable) or an index setter on the prototype. */
  const append = (list, value) => {
    defineOwn(list, list.length, { value, writable: true, enumerable: true, configurable: true });
  };
  /** At most `max` characters of a string; anything else is no text. */
  const clipped = (text, max) => (typeof text !== "string" ? "" : text.length > max ? apply(sliceText, text, [0, max]) : text);
  // Node's timer range: a delay over 2**31 - 1 ms, under 1 ms or not a number runs after 1 ms.
  const TIMEOUT_MAX = 2147483647;

  const staged = {
    extensions: [], tools: [], actions: [], services: [], forms: [], wires: [], hooks: [], refusedLate: [],
    // What the turn loop needs of tools and hooks: `{name, description, parameters}` (the input's
    // JSON Schema) and `{event, enforce, key, timeoutMs}` (the handler's key).
    toolSpecs: [], hookSpecs: [],
    // Where each registration was made: `{key: "kind:name", stack}` in call order (late ones as
    // `late:kind:name`); the host keeps the first frame inside the plugin's own modules.
    sites: [],
  };
  // The stack is only ever a hint: the host keeps a frame only when it names a module the loader
  // itself loaded, and reads that module's text from the loader's record, never from a path.
  const site = (key) => append(staged.sites, { key, stack: clipped(new HostError().stack, 65536) });
  // Handlers by key, in an object without a prototype: reading, writing and `in` on it run no
  // plugin code (no getter, setter or replaced method is ever on its way), and it needs no `Map`,
  // which a context gets only on first use (crates/js/src/intrinsics.rs). A key that was made
  // an atom when its handler was set is found again without a new one.
  let handlers = { __proto__: null };
  const handlerOf = (key) => handlers[key];
  const hasHandler = (key) => key in handlers;
  const setHandler = (key, handler) => { handlers[key] = handler; };
  const clearHandlers = () => { handlers = { __proto__: null }; };
  const disposers = [];
  let closed = false;
  // Per call: what the handler printed, and what the studio has to say about the call (a log
  // cut short, a timer clamped, a row-shaped read) — kept apart, so neither passes for the other.
  let logs = [];
  let notes = [];
  let logsCut = false;
  const note = (text) => { if (notes.length < 20) append(notes, text); };

  // ---- console: captured per call so the trace shows what a handler printed ----------------
  const stringify = JSON.stringify;
  const show = (v) => {
    if (typeof v === "string") return clipped(v, 4000);
    try { const text = stringify(v); return typeof text === "string" ? clipped(text, 4000) : `${text}`; } catch { return "(a value that cannot be shown)"; }
  };
  const log = (level) => (...args) => {
    // At most 50 lines of at most 2 000 characters per call reach the trace.
    if (logs.length < 50) {
      let line = `[${level}]`;
      for (let i = 0; i < args.length; i++) line = `${line} ${show(args[i])}`;
      append(logs, line.length > 2000 ? `${clipped(line, 2000)}… (${line.length - 2000} more characters)` : line);
    } else if (!logsCut) {
      logsCut = true;
      note("more log lines were dropped (50 per call are kept)");
    }
  };
  globalThis.console = { log: log("log"), info: log("info"), warn: log("warn"), error: log("error"), debug: log("debug") };

  // ---- clock and randomness: a call that reads them is never answered from the memo --------
  let impure = null;
  const noteImpure = (why) => { if (!impure) impure = why; };
  const wrap = (owner, name, why) => {
    const real = owner[name];
    if (typeof real !== "function") return;
    const wrapped = function (...args) { noteImpure(why); return Reflect.apply(real, this, args); };
    try {
      Object.defineProperty(owner, name, { value: wrapped, writable: true, configurable: true });
    } catch {
      /* a non-configurable built-in stays as it is */
    }
  };
  wrap(Math, "random", "uses randomness (Math.random)");
  // `Date` and `performance` are added to the context on first use (below): each is wrapped the
  // moment it is added, before any plugin code can see it. `Proxy` is taken now, before plugin
  // code could replace the global.
  const HostProxy = Proxy;
  const wrapDate = () => {
    const RealDate = globalThis.Date;
    wrap(RealDate, "now", "reads the clock (Date.now)");
    globalThis.Date = new HostProxy(RealDate, {
      construct(target, args, newTarget) {
        if (args.length === 0) noteImpure("reads the clock (new Date())");
        return Reflect.construct(target, args, newTarget);
      },
      apply(target, self, args) { noteImpure("reads the clock (Date())"); return Reflect.apply(target, self, args); },
    });
  };
  const wrapPerformance = () => {
    if (globalThis.performance && typeof globalThis.performance.now === "function") {
      const real = globalThis.performance;
      const now = real.now.bind(real);
      globalThis.performance = Object.freeze({ now() { noteImpure("reads the clock (performance.now)"); return now(); }, timeOrigin: real.timeOrigin });
    }
  };

  // ---- timers: driven by the host's event loop, bounded by the call deadline -----------------
  // Pending timers by id, in an object without a prototype (as the handlers): `for-in` walks its
  // integer keys in ascending order, which is the order they were set in, through no iterator a
  // plugin could replace.
  let timers = { __proto__: null };
  let timerCount = 0;
  const setTimer = (id, timer) => { timers[id] = timer; timerCount += 1; };
  // Only a number can be an id (a Map's key was one): `clearTimeout("1")` clears nothing, and no
  // plugin value is ever turned into a key.
  const deleteTimer = (id) => { if (typeof id === "number" && id in timers) { delete timers[id]; timerCount -= 1; } };
  const clearTimers = () => { timers = { __proto__: null }; timerCount = 0; };
  let nextTimer = 1;
  globalThis.setTimeout = (fn, ms = 0, ...args) => {
    const id = nextTimer++;
    let delay = +ms;
    if (!(delay >= 1 && delay <= TIMEOUT_MAX)) {
      if (delay > TIMEOUT_MAX) note(`setTimeout(…, ${delay}) is over ${TIMEOUT_MAX} ms: it runs after 1 ms, as in Node`);
      delay = 1;
    }
    setTimer(id, { due: host.now() + delay, fn, args });
    return id;
  };
  globalThis.clearTimeout = (id) => { deleteTimer(id); };
  globalThis.setInterval = undefined;
  globalThis.queueMicrotask = (fn) => { Promise.resolve().then(fn); };

  // A key named `__proto__` is defined, as JSON.parse makes it, not assigned (which would set
  // the copy's prototype and drop the key).
  function deepCopy(value) {
    if (value === null || typeof value !== "object") return value;
    if (Array.isArray(value)) return value.map(deepCopy);
    const out = {};
    for (const key of Object.keys(value)) {
      if (key === "__proto__") Object.defineProperty(out, key, { value: deepCopy(value[key]), writable: true, enumerable: true, configurable: true });
      else out[key] = deepCopy(value[key]);
    }
    return out;
  }

  function deepFreeze(value) {
    if (value !== null && typeof value === "object" && !Object.isFrozen(value)) {
      Object.freeze(value);
      for (const key of Object.keys(value)) deepFreeze(value[key]);
    }
    return value;
  }

  // ---- AbortSignal stand-ins ------------------------------------------------------------------
  // The plugin's lifetime signal (`covel.signal`; the plugin's runtime ends with it, so it never
  // aborts): the listener list is made only when one listens.
  class Signal {
    constructor() { this.aborted = false; this.reason = undefined; this._listeners = null; }
    addEventListener(type, fn) { if (type === "abort") append(this._listeners || (this._listeners = []), fn); }
    removeEventListener(type, fn) { if (this._listeners) this._listeners = this._listeners.filter((f) => f !== fn); }
    throwIfAborted() { if (this.aborted) throw this.reason; }
  }

  // The reason of every finished call's signal: one frozen error, not one per call.
  const CALL_COMPLETED = Object.freeze(new Error("Plugin service call completed"));

  // A call's `ctx.signal`: aborted once its call has ended. Like an AbortSignal (whose state sits
  // behind getters) it holds nothing itself: which signal is live and its listeners are kept
  // here, so a call's signal is an empty object (three properties per call cost ~4% of a call).
  let liveSignal = null;
  let liveListeners = null;
  const callSignal = {
    get aborted() { return this !== liveSignal; },
    get reason() { return this !== liveSignal ? CALL_COMPLETED : undefined; },
    addEventListener(type, fn) { if (type === "abort" && this === liveSignal) append(liveListeners || (liveListeners = []), fn); },
    removeEventListener(type, fn) { if (this === liveSignal && liveListeners) liveListeners = liveListeners.filter((f) => f !== fn); },
    throwIfAborted() { if (this !== liveSignal) throw CALL_COMPLETED; },
  };

  // ---- HTTP: plugin code only asks; the host decides (permissions.http, mocks, live) --------
  function makeHttp() {
    function validateBaseUrl(url) {
      const why = host.httpRefusal("GET", String(url));
      if (why) throw new Error(why);
      return String(url);
    }
    async function fetchWithRetry(url, init = {}) {
      const method = String((init && init.method) || "GET").toUpperCase();
      const body = init && init.body !== undefined ? (typeof init.body === "string" ? init.body : JSON.stringify(init.body)) : undefined;
      const answer = host.fetch(method, String(url), body);
      const status = answer.status;
      return {
        ok: status >= 200 && status < 300, status, url: answer.url,
        headers: { get: (name) => answer.headers[String(name).toLowerCase()] ?? null },
        text: async () => answer.body,
        json: async () => JSON.parse(answer.body),
      };
    }
    return Object.freeze({ fetchWithRetry, validateBaseUrl });
  }

  // ---- modules the host serves on demand: zod for the facade, Node's globals ----------------
  // Loaded on first use only, so a plugin that never touches them pays nothing.
  const lazyModule = (name) => {
    let namespace = null;
    return () => namespace || (namespace = host.requireModule(name));
  };
  const zodModule = lazyModule("zod");
  // Intl (ICU4X) on first touch; `localeCompare` is a collator's, as in Node, and loads it on its
  // first call only.
  const intlModule = lazyModule("covel:intl");

  // The web platform's globals QuickJS lacks and Node's (`URL`, `crypto`, …), and the intrinsics
  // a context gets on first use (typed arrays, WeakRef, DOMException with atob and btoa, Date,
  // Map and Set, performance: crates/js/src/intrinsics.rs): each is an accessor on globalThis
  // until first used. The first read imports its module, or adds its group of intrinsics (whose
  // own globals replace the group's accessors), and puts the real value in its place (a data
  // property, enumerable where Node's is); a write before any read puts the written value there.
  // What a plugin that never touches them pays is these accessors only: one closure per global,
  // its getter and its setter at once. (A getter and a setter closure per global, each with a
  // function that found its value, took ≈ 5 KB of a generated plugin's engine memory; a function
  // bound to the name took less by QuickJS's count but, its objects falling into other size
  // classes, opened two more 4 KiB arenas. This takes none.)
  // What the host does to a group of intrinsics the moment the context has it, before plugin code
  // can see it (each once).
  const whenAdded = { __proto__: null, date: wrapDate, performance: wrapPerformance };
  const addIntrinsics = (group) => {
    host.addIntrinsics(group);
    const then = whenAdded[group];
    if (then) {
      whenAdded[group] = null;
      then();
    }
  };
  // Enumerable where Node's is.
  const enumerableGlobal = (name) => name === "structuredClone" || name === "crypto" || name === "performance";
  /** Replaces the accessor of the global `name` by a data property: `written`, or its value. */
  function settle(name, written, reading, intrinsics) {
    let value = written;
    if (intrinsics !== null) {
      addIntrinsics(intrinsics);
      if (reading) return globalThis[name];
    } else if (reading) {
      let module = "covel:web"; // AbortController, AbortSignal, TextEncoder, TextDecoder
      if (name === "URL" || name === "URLSearchParams") module = "node:url";
      else if (name === "crypto") module = "node:crypto";
      else if (name === "structuredClone") module = "covel:clone";
      else if (name === "Intl") module = "covel:intl";
      const namespace = host.requireModule(module);
      value = name === "crypto" ? namespace.webcrypto : namespace[name];
    }
    // No prototype: a plugin's `Object.prototype.get` must not make this a getter. Enumerable
    // where Node's is.
    defineOwn(globalThis, name, { __proto__: null, value, writable: true, configurable: true, enumerable: enumerableGlobal(name) });
    return value;
  }
  const lazyGlobals = [[null, ["URL", "URLSearchParams", "crypto", "AbortController", "AbortSignal", "TextEncoder", "TextDecoder", "structuredClone", "Intl"]]];
  for (const group of host.deferredIntrinsics) append(lazyGlobals, group);
  for (const [intrinsics, names] of lazyGlobals) {
    for (const name of names) {
      // One function is the getter (no argument) and the setter (the written value).
      const access = function (written) { return settle(name, written, arguments.length === 0, intrinsics); };
      defineOwn(globalThis, name, { get: access, set: access, enumerable: enumerableGlobal(name), configurable: true });
    }
  }
  defineOwn(String.prototype, "localeCompare", {
    value: function localeCompare(that, locales, options) { return intlModule().localeCompare(`${this}`, that, locales, options); },
    writable: true, configurable: true, enumerable: false,
  });

  const toolkit = Object.freeze({
    get z() { return zodModule().z; },
    tool: (def) => Object.freeze({
      ...def,
      parameterSchema: def && def.parameters && typeof def.parameters === "object" && "_zod" in def.parameters
        ? zodModule().z.toJSONSchema(def.parameters, { io: "input", unrepresentable: "any" })
        : def && def.parameters,
    }),
    // Upstream's `shortId(prefix, label, sessionId, random?)` and `shortIdBatch(prefix, labels,
    // sessionId, random?)`: the SDK's own.
    get shortId() { return sdkModule().shortId; },
    get shortIdBatch() { return sdkModule().shortIdBatch; },
    get withPendingProposals() { return sdkModule().withPendingProposals; },
  });
  const sdkModule = lazyModule("@covel/plugin-handlers-utils");

  // The wrappers tools, hooks and form validators are called through (covel:turn), made on a
  // plugin's first registration of one.
  const turnModule = lazyModule("covel:turn");
  let turnHandlers = null;
  const turn = () => turnHandlers || (turnHandlers = turnModule().makeTurnHandlers({ zod: zodModule, sdk: sdkModule, deepCopy }));
  const nameOf = (value, fallback) => (value && typeof value === "object" && typeof value.name === "string" ? value.name : fallback);
  let hookCount = 0;

  // ---- the facade ------------------------------------------------------------------------------
  function makeFacade(pluginId) {
    const lifetime = new Signal();
    const guard = (kind, name) => {
      if (closed) {
        append(staged.refusedLate, `${kind}:${name}`);
        site(`late:${kind}:${name}`);
        throw new Error("plugin entry registration is closed");
      }
      site(`${kind}:${name}`);
    };
    const covel = {
      pluginId,
      signal: lifetime,
      toolkit,
      http: makeHttp(),
      provideExtension(point, id, definition) {
        guard("extension", `${point}/${id}`);
        const handler = definition && definition.handler;
        append(staged.extensions, { point: `${point}`, id: `${id}`, handlerIsFunction: typeof handler === "function" });
        const key = `${point}/${id}`;
        if (typeof handler === "function" && !hasHandler(key)) setHandler(key, handler);
      },
      registerTool(tool) {
        const name = nameOf(tool, "<unnamed>");
        guard("tool", name);
        append(staged.tools, name);
        append(staged.toolSpecs, turn().spec(tool, name));
        if (!hasHandler(`tool:${name}`)) setHandler(`tool:${name}`, turn().tool(tool));
      },
      registerService(def) { const c = def && def.contract ? `${def.contract}` : "<no contract>"; guard("service", c); append(staged.services, c); },
      on(event, handler, options) {
        const enforce = `${(options && options.enforce) || "normal"}`;
        guard("hook", `${event}:${enforce}`);
        append(staged.hooks, `${event}:${enforce}`);
        const key = `hook:${++hookCount}`;
        const timeoutMs = options && typeof options.timeoutMs === "number" ? options.timeoutMs : null;
        append(staged.hookSpecs, { event: `${event}`, enforce, key, timeoutMs, handlerIsFunction: typeof handler === "function" });
        if (typeof handler === "function") setHandler(key, turn().hook(handler, options && options.match));
      },
      registerRpc(action) { guard("action", action); append(staged.actions, `${action}`); },
      registerFormValidator(name, validator) {
        guard("form", name);
        append(staged.forms, `${name}`);
        if (typeof validator === "function" && !hasHandler(`form:${name}`)) setHandler(`form:${name}`, turn().formValidator(validator));
      },
      registerWires(groups) {
        for (const list of Object.values(groups || {})) {
          for (const wire of Array.isArray(list) ? list : [list]) {
            const id = wire && wire.id ? `${wire.id}` : "<no id>";
            guard("wire", id);
            append(staged.wires, id);
          }
        }
      },
      onDispose(fn) { if (typeof fn === "function") append(disposers, fn); },
    };
    return Object.freeze(covel);
  }

  // ---- per-execution and per-call contexts ----------------------------------------------------
  // What every call of one execution shares is built (and deep-frozen) once, when the host
  // passes a new execution; a call only adds its own signal, `pluginData` and `turnId`.
  const DEAD_READ = "ctx.pluginData is only readable while the handler runs";
  // The running call's `ctx.pluginData` (null between calls). A reader reads only while it is
  // the live one, so a ctx kept by plugin code reads nothing after its call, not even during a
  // later one. `get` and `list` are made once per execution (a closure per call cost ~7% of a
  // call); called detached (`const { get } = ctx.pluginData`) they read for the running call.
  let liveReader = null;
  const readsNow = (reader) => liveReader !== null && (reader === liveReader || reader === undefined);
  let shared = null;
  function setExecution(data) {
    const settings = deepFreeze(data.settings || {});
    // The kernel grouped the plugin's readable rows by namespace (hidden ones left out), each
    // namespace once; a plugin has few, so a walk finds one (a `Map` would add Map and Set to a
    // context that has not used them yet).
    const groups = data.pluginData || [];
    const rowsOf = (namespace) => {
      for (let i = groups.length - 1; i >= 0; i--) if (groups[i].namespace === namespace) return groups[i].rows;
      return undefined;
    };
    shared = {
      sessionId: data.sessionId,
      locale: data.locale,
      world: deepFreeze(data.world),
      messages: deepFreeze(data.messages || {}),
      getOwnSettings: () => settings,
      get(namespace, key) {
        if (!readsNow(this)) return Promise.reject(new Error(DEAD_READ));
        const rows = rowsOf(String(namespace));
        const wanted = String(key);
        let row = null;
        if (rows) for (let i = 0; i < rows.length; i++) if (rows[i].key === wanted) { row = rows[i]; break; }
        return Promise.resolve(row ? rowShapeHint(deepCopy(row.value), namespace, key) : null);
      },
      list(namespace) {
        if (!readsNow(this)) return Promise.reject(new Error(DEAD_READ));
        const rows = rowsOf(String(namespace)) || [];
        return Promise.resolve(rows.map((r) => ({
          key: r.key, value: deepCopy(r.value), createdAt: r.createdAt ?? null, updatedAt: r.updatedAt ?? null,
        })));
      },
    };
  }

  // Older plugins read `(await ctx.pluginData.get(ns, key))?.value` (the row shape); get()
  // returns the value itself, so that reads undefined. Say so in the trace, once per key.
  function rowShapeHint(value, namespace, key) {
    if (value === null || typeof value !== "object" || Array.isArray(value) || Object.prototype.hasOwnProperty.call(value, "value")) {
      return value;
    }
    let warned = false;
    return new Proxy(value, {
      get(target, prop, receiver) {
        if (prop === "value" && !warned && !(prop in target)) {
          warned = true;
          note(`ctx.pluginData.get("${namespace}", "${key}") returns the stored value itself; reading .value on it gives undefined (the row shape of older Covel versions)`);
        }
        return Reflect.get(target, prop, receiver);
      },
    });
  }

  // One call's `ctx`. What calls share (world, messages, settings, utils, gateway) is frozen;
  // the call's own `ctx` and `pluginData` objects are not: each call gets new ones, so a handler
  // that changes them changes only what it sees itself, and freezing them cost about a tenth
  // of a call.
  function makeContext(signal, turnId, withGateway, owner) {
    liveReader = { get: shared.get, list: shared.list };
    const ctx = {
      callerPluginId: "__kernel",
      sessionId: shared.sessionId,
      locale: shared.locale,
      turnId: turnId ?? undefined,
      messages: shared.messages,
      world: shared.world,
      pluginData: liveReader,
      getOwnSettings: shared.getOwnSettings,
      utils: covelHttpForCalls,
      signal,
    };
    if (withGateway) ctx.gateway = gateway;
    // Tools and hooks know their plugin (proposals name it as their source).
    if (typeof owner === "string") { ctx.pluginId = owner; ctx.runtimeId = owner; }
    return ctx;
  }
  const covelHttpForCalls = makeHttp();
  // ctx.gateway: text generation on the session's models, lent by call sites that allow it.
  const gateway = Object.freeze({
    generateText: async (request) => host.generateText(request ?? {}),
  });

  // The host's handle on this runtime: the completion value of this script, kept by the host
  // and never reachable from plugin code (no global holds it).
  return Object.freeze({
    makeFacade(pluginId) {
      return makeFacade(pluginId);
    },
    close() { closed = true; return staged; },
    setExecution,
    // Starts one handler call and answers what the handler returned (a value or a promise); a
    // synchronous throw is the call's error. `withGateway`: the call site lends `ctx.gateway`.
    call(key, input, turnId, withGateway, owner) {
      if (logs.length) logs = [];
      if (notes.length) notes = [];
      logsCut = false;
      impure = null;
      const handler = handlerOf(key);
      if (!handler) throw new Error(`no handler registered for ${key}`);
      liveSignal = { __proto__: callSignal };
      return handler(input, makeContext(liveSignal, turnId, withGateway, owner));
    },
    // Ends the call (started or not): drops its timers, aborts its signal (its ctx reads nothing
    // from now on), and answers null when the handler printed nothing and stayed pure, else
    // [logs, impure, notes] (what it printed, why it must not be memoized, what the studio has
    // to say about the call), in one crossing.
    finish() {
      if (timerCount) clearTimers();
      const listeners = liveListeners;
      liveSignal = null;
      liveListeners = null;
      liveReader = null;
      if (listeners) {
        for (let i = 0; i < listeners.length; i++) { try { listeners[i]({ type: "abort" }); } catch { /* listener errors are the plugin's */ } }
      }
      if (!logs.length && !notes.length && impure === null) return null;
      const out = [logs, impure, notes];
      logs = [];
      notes = [];
      impure = null;
      return out;
    },
    nextTimerDue() {
      let due = -1;
      for (const id in timers) { const t = timers[id]; if (due < 0 || t.due < due) due = t.due; }
      return due;
    },
    fireDueTimers() {
      const now = host.now();
      // Due timers fire earliest first (ties in the order they were set).
      for (;;) {
        let next = null;
        let t = null;
        for (const id in timers) { const timer = timers[id]; if (timer.due <= now && (t === null || timer.due < t.due)) { t = timer; next = id; } }
        if (t === null) break;
        delete timers[next];
        timerCount -= 1;
        apply(t.fn, undefined, t.args);
      }
    },
    /** Runs the plugin's `onDispose` callbacks (newest first); returns how many ran. */
    dispose() {
      let ran = 0;
      for (let i = disposers.length - 1; i >= 0; i--) { ran += 1; try { apply(disposers[i], undefined, []); } catch { /* disposal errors do not block unloading */ } }
      disposers.length = 0;
      clearHandlers();
      return ran;
    },
  });
})();
