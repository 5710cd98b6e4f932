// `vitest` as the SDK test runner serves it (crates/js/src/sdk_tests.rs): a small stand-in of
// the test API upstream's SDK tests use, so those files run unchanged inside a plugin runtime
// against the studio's SDK. It is not vitest: tests run one after another in the order they were
// declared, there are no snapshots, fake timers or module mocks, and a failure's message is the
// first thing that differed, in a line.
//
// The test file registers its tests while it is evaluated (`describe` runs its body at once);
// the runner then calls `run()`, which answers `[{name, passed, error?}]`.

const root = { name: "", children: [], beforeEach: [], afterEach: [], beforeAll: [], afterAll: [] };
let current = root;
/** Per test, as vitest's default. */
const TEST_TIMEOUT_MS = 5000;

// ============================================================================================
// Declaring tests
// ============================================================================================

/** `%s`, `%d`, `%i`, `%f`, `%j`, `%o`, `%O`, `%#` and `%%` in an `.each` title, as vitest fills them. */
function formatTitle(title, args, index) {
  let next = 0;
  return String(title).replace(/%[sdifjoO#%]/g, (token) => {
    if (token === "%%") return "%";
    if (token === "%#") return String(index);
    if (next >= args.length) return token;
    const value = args[next++];
    if (token === "%d" || token === "%i") return String(token === "%i" ? Math.trunc(Number(value)) : Number(value));
    if (token === "%f") return String(Number(value));
    if (token === "%s") return typeof value === "string" ? value : show(value);
    return show(value);
  });
}

function addTest(name, fn, options = {}) {
  current.children.push({ kind: "test", name: String(name), fn, skip: options.skip === true, timeout: options.timeout });
}

function declareEach(add) {
  return (table) => (title, fn, timeout) => {
    table.forEach((row, index) => {
      const args = Array.isArray(row) ? row : [row];
      add(formatTitle(title, args, index), () => fn(...args), timeout);
    });
  };
}

function makeIt() {
  const it = (name, fn, timeout) => addTest(name, fn, { timeout: typeof timeout === "number" ? timeout : timeout?.timeout });
  it.skip = (name, fn) => addTest(name, fn, { skip: true });
  it.todo = (name) => addTest(name, undefined, { skip: true });
  // `only` narrows nothing here: every declared test runs, which can only show more.
  it.only = it;
  it.each = declareEach(it);
  it.skipIf = (condition) => (condition ? it.skip : it);
  it.runIf = (condition) => (condition ? it : it.skip);
  return it;
}

export const it = makeIt();
export const test = it;

export function describe(name, body) {
  const group = { name: String(name), children: [], beforeEach: [], afterEach: [], beforeAll: [], afterAll: [], kind: "group" };
  current.children.push(group);
  const outer = current;
  current = group;
  try {
    body();
  } finally {
    current = outer;
  }
}
describe.each = declareEach(describe);
describe.skip = () => {};
describe.only = describe;

export const beforeEach = (fn) => current.beforeEach.push(fn);
export const afterEach = (fn) => current.afterEach.push(fn);
export const beforeAll = (fn) => current.beforeAll.push(fn);
export const afterAll = (fn) => current.afterAll.push(fn);

// ============================================================================================
// Showing values in failure messages
// ============================================================================================

const MAX_SHOWN = 160;

function show(value) {
  let text;
  try {
    text = showInner(value, new Set(), 0);
  } catch {
    text = Object.prototype.toString.call(value);
  }
  return text.length > MAX_SHOWN ? `${text.slice(0, MAX_SHOWN)}…` : text;
}

function showInner(value, seen, depth) {
  if (typeof value === "string") return JSON.stringify(value);
  if (typeof value === "bigint") return `${value}n`;
  if (typeof value === "function") return value._isMockFunction ? "[mock function]" : `[Function ${value.name || "anonymous"}]`;
  if (typeof value === "symbol") return value.toString();
  if (value === null || typeof value !== "object") return String(value);
  if (isAsymmetric(value)) return value.toString();
  if (value instanceof Error) return `${value.name}(${JSON.stringify(value.message)})`;
  if (value instanceof RegExp) return String(value);
  if (seen.has(value)) return "[Circular]";
  if (depth > 4) return Array.isArray(value) ? "[…]" : "{…}";
  seen.add(value);
  let text;
  if (Array.isArray(value)) text = `[${value.map((item) => showInner(item, seen, depth + 1)).join(", ")}]`;
  else if (value instanceof Map) text = `Map {${[...value].map(([k, v]) => `${showInner(k, seen, depth + 1)} => ${showInner(v, seen, depth + 1)}`).join(", ")}}`;
  else if (value instanceof Set) text = `Set {${[...value].map((v) => showInner(v, seen, depth + 1)).join(", ")}}`;
  else text = `{${Object.keys(value).map((k) => `${JSON.stringify(k)}: ${showInner(value[k], seen, depth + 1)}`).join(", ")}}`;
  seen.delete(value);
  return text;
}

// ============================================================================================
// Equality (toEqual, toStrictEqual) and partial matching (toMatchObject)
// ============================================================================================

const ASYMMETRIC = Symbol("covel.vitest.asymmetric");
const isAsymmetric = (value) => value !== null && typeof value === "object" && value[ASYMMETRIC] === true;

function asymmetric(description, match) {
  return { [ASYMMETRIC]: true, asymmetricMatch: match, toString: () => description };
}

const tagOf = (value) => Object.prototype.toString.call(value);
const ownKeys = (value) => [
  ...Object.keys(value),
  ...Object.getOwnPropertySymbols(value).filter((s) => Object.prototype.propertyIsEnumerable.call(value, s)),
];

/**
 * Deep equality as vitest's toEqual has it: undefined properties count as absent; with
 * `strict` (toStrictEqual) they do not, and prototypes must agree. Asymmetric matchers on
 * the expected side decide for themselves.
 */
function equals(actual, expected, strict = false, seen = []) {
  if (isAsymmetric(expected)) return expected.asymmetricMatch(actual);
  if (isAsymmetric(actual)) return actual.asymmetricMatch(expected);
  if (Object.is(actual, expected)) return true;
  if (typeof actual !== "object" || typeof expected !== "object" || actual === null || expected === null) return false;
  if (tagOf(actual) !== tagOf(expected)) return false;
  if (strict && Object.getPrototypeOf(actual) !== Object.getPrototypeOf(expected)) return false;
  if (actual instanceof Date) return Object.is(actual.getTime(), expected.getTime());
  if (actual instanceof RegExp) return actual.source === expected.source && actual.flags === expected.flags;
  if (actual instanceof Error && (actual.name !== expected.name || actual.message !== expected.message)) return false;
  for (const [a, b] of seen) if (a === actual) return b === expected;
  const pairs = [...seen, [actual, expected]];
  if (actual instanceof Map) {
    if (actual.size !== expected.size) return false;
    for (const [key, value] of actual) if (!expected.has(key) || !equals(value, expected.get(key), strict, pairs)) return false;
    return true;
  }
  if (actual instanceof Set) {
    if (actual.size !== expected.size) return false;
    for (const value of actual) if (![...expected].some((other) => equals(value, other, strict, pairs))) return false;
    return true;
  }
  if (Array.isArray(actual)) {
    if (actual.length !== expected.length) return false;
    for (let i = 0; i < actual.length; i++) {
      if (strict && (i in actual) !== (i in expected)) return false;
      if (!equals(actual[i], expected[i], strict, pairs)) return false;
    }
  }
  const keep = (object) => ownKeys(object).filter((key) => strict || object[key] !== undefined);
  const left = keep(actual).filter((key) => !Array.isArray(actual) || !/^\d+$/.test(String(key)));
  const right = keep(expected).filter((key) => !Array.isArray(expected) || !/^\d+$/.test(String(key)));
  if (left.length !== right.length) return false;
  for (const key of right) {
    if (!Object.prototype.hasOwnProperty.call(actual, key) && expected[key] !== undefined) return false;
    if (!equals(actual[key], expected[key], strict, pairs)) return false;
  }
  return true;
}

/** Whether `actual` has every property of `expected`, recursively (arrays element by element). */
function matchesObject(actual, expected) {
  if (isAsymmetric(expected)) return expected.asymmetricMatch(actual);
  if (expected === null || typeof expected !== "object") return equals(actual, expected);
  if (actual === null || typeof actual !== "object") return false;
  if (Array.isArray(expected)) {
    return Array.isArray(actual) && actual.length === expected.length && expected.every((item, i) => matchesObject(actual[i], item));
  }
  if (expected instanceof Date || expected instanceof RegExp || expected instanceof Map || expected instanceof Set) {
    return equals(actual, expected);
  }
  return ownKeys(expected).every((key) => key in Object(actual) && matchesObject(actual[key], expected[key]));
}

// ============================================================================================
// expect
// ============================================================================================

class AssertionError extends Error {
  constructor(message) {
    super(message);
    this.name = "AssertionError";
  }
}

function errorMatches(error, expected) {
  if (expected === undefined) return true;
  const message = error instanceof Error ? error.message : String(error);
  if (typeof expected === "string") return message.includes(expected);
  if (expected instanceof RegExp) return expected.test(message);
  if (typeof expected === "function") return error instanceof expected;
  if (expected instanceof Error) return message === expected.message;
  if (isAsymmetric(expected)) return expected.asymmetricMatch(error);
  return matchesObject(error, expected);
}

function propertyAt(object, path) {
  const parts = Array.isArray(path) ? path : String(path).split(".");
  let value = object;
  for (const part of parts) {
    if (value === null || value === undefined || !(part in Object(value))) return { found: false };
    value = value[part];
  }
  return { found: true, value };
}

function mockOf(value, matcher) {
  if (typeof value !== "function" || !value._isMockFunction) {
    throw new AssertionError(`${matcher} needs a vi.fn() mock, got ${show(value)}`);
  }
  return value.mock;
}

const callsText = (calls) => (calls.length === 0 ? "no calls" : calls.map((args) => show(args)).join(", "));

/** Each matcher answers `[pass, what it expected, in a phrase]`; `not` flips `pass`. */
const MATCHERS = {
  toBe: (a, e) => [Object.is(a, e), `to be ${show(e)}`],
  toEqual: (a, e) => [equals(a, e), `to equal ${show(e)}`],
  toStrictEqual: (a, e) => [equals(a, e, true), `to strictly equal ${show(e)}`],
  toMatchObject: (a, e) => [matchesObject(a, e), `to match object ${show(e)}`],
  toBeUndefined: (a) => [a === undefined, "to be undefined"],
  toBeDefined: (a) => [a !== undefined, "to be defined"],
  toBeNull: (a) => [a === null, "to be null"],
  toBeNaN: (a) => [Number.isNaN(a), "to be NaN"],
  toBeTruthy: (a) => [Boolean(a), "to be truthy"],
  toBeFalsy: (a) => [!a, "to be falsy"],
  toBeTypeOf: (a, type) => [typeof a === type, `to be of type ${type}`],
  toBeInstanceOf: (a, type) => [typeof type === "function" && a instanceof type, `to be an instance of ${type?.name ?? show(type)}`],
  toBeGreaterThan: (a, n) => [a > n, `to be greater than ${show(n)}`],
  toBeGreaterThanOrEqual: (a, n) => [a >= n, `to be greater than or equal to ${show(n)}`],
  toBeLessThan: (a, n) => [a < n, `to be less than ${show(n)}`],
  toBeLessThanOrEqual: (a, n) => [a <= n, `to be less than or equal to ${show(n)}`],
  toBeCloseTo: (a, n, digits = 2) => [Math.abs(a - n) < 10 ** -digits / 2, `to be close to ${show(n)}`],
  toContain: (a, item) => [
    typeof a === "string" ? a.includes(String(item)) : a != null && typeof a[Symbol.iterator] === "function" && [...a].includes(item),
    `to contain ${show(item)}`,
  ],
  toContainEqual: (a, item) => [a != null && [...a].some((x) => equals(x, item)), `to contain an item equal to ${show(item)}`],
  toHaveLength: (a, n) => [a != null && a.length === n, `to have length ${n} (it has ${a?.length})`],
  toMatch: (a, pattern) => [
    typeof a === "string" && (typeof pattern === "string" ? a.includes(pattern) : pattern.test(a)),
    `to match ${String(pattern)}`,
  ],
  toHaveProperty: (a, path, ...value) => {
    const found = propertyAt(a, path);
    const pass = found.found && (value.length === 0 || equals(found.value, value[0]));
    return [pass, `to have property ${show(path)}${value.length ? ` equal to ${show(value[0])}` : ""}`];
  },
  toThrow: (a, expected) => {
    if (typeof a !== "function") throw new AssertionError(`toThrow needs a function, got ${show(a)}`);
    try {
      a();
    } catch (error) {
      return [errorMatches(error, expected), `to throw ${expected === undefined ? "" : show(expected)} (it threw ${show(error)})`];
    }
    return [false, `to throw${expected === undefined ? "" : ` ${show(expected)}`} (it did not throw)`];
  },
  toHaveBeenCalled: (a) => [mockOf(a, "toHaveBeenCalled").calls.length > 0, "to have been called"],
  toHaveBeenCalledOnce: (a) => [mockOf(a, "toHaveBeenCalledOnce").calls.length === 1, "to have been called once"],
  toHaveBeenCalledTimes: (a, n) => {
    const calls = mockOf(a, "toHaveBeenCalledTimes").calls.length;
    return [calls === n, `to have been called ${n} times (it was called ${calls} times)`];
  },
  toHaveBeenCalledWith: (a, ...args) => {
    const { calls } = mockOf(a, "toHaveBeenCalledWith");
    return [calls.some((call) => equals(call, args)), `to have been called with ${show(args)} (calls: ${callsText(calls)})`];
  },
  toHaveBeenNthCalledWith: (a, n, ...args) => {
    const { calls } = mockOf(a, "toHaveBeenNthCalledWith");
    return [n >= 1 && n <= calls.length && equals(calls[n - 1], args), `call ${n} to have been with ${show(args)} (calls: ${callsText(calls)})`];
  },
  toHaveBeenLastCalledWith: (a, ...args) => {
    const { calls } = mockOf(a, "toHaveBeenLastCalledWith");
    return [calls.length > 0 && equals(calls[calls.length - 1], args), `the last call to have been with ${show(args)} (calls: ${callsText(calls)})`];
  },
  toHaveReturned: (a) => [mockOf(a, "toHaveReturned").results.some((r) => r.type === "return"), "to have returned"],
};
MATCHERS.toThrowError = MATCHERS.toThrow;
MATCHERS.toBeCalled = MATCHERS.toHaveBeenCalled;
MATCHERS.toBeCalledTimes = MATCHERS.toHaveBeenCalledTimes;
MATCHERS.toBeCalledWith = MATCHERS.toHaveBeenCalledWith;

function assertion(actual, message, negated, settle) {
  const out = {};
  for (const [name, matcher] of Object.entries(MATCHERS)) {
    out[name] = (...args) =>
      settle(actual, (value) => {
        const [pass, phrase] = matcher(value, ...args);
        if (pass === negated) {
          const what = `expected ${show(value)} ${negated ? "not " : ""}${phrase}`;
          throw new AssertionError(message ? `${message}: ${what}` : what);
        }
      });
  }
  return out;
}

const now = (actual, check) => check(actual);

export function expect(actual, message) {
  const chain = assertion(actual, message, false, now);
  chain.not = assertion(actual, message, true, now);
  // `.resolves` / `.rejects`: the matcher runs on what the promise settled with.
  const settled = (wantRejected) => (value, check) =>
    Promise.resolve(value).then(
      (result) => {
        if (wantRejected) throw new AssertionError(`expected the promise to reject, it resolved with ${show(result)}`);
        return check(result);
      },
      (error) => {
        if (!wantRejected) throw new AssertionError(`expected the promise to resolve, it rejected with ${show(error)}`);
        return check(error);
      },
    );
  chain.resolves = assertion(actual, message, false, settled(false));
  chain.resolves.not = assertion(actual, message, true, settled(false));
  chain.rejects = assertion(actual, message, false, settled(true));
  chain.rejects.not = assertion(actual, message, true, settled(true));
  return chain;
}

expect.objectContaining = (expected) =>
  asymmetric(`ObjectContaining ${show(expected)}`, (actual) => matchesObject(actual, expected));
expect.arrayContaining = (expected) =>
  asymmetric(`ArrayContaining ${show(expected)}`, (actual) => Array.isArray(actual) && expected.every((e) => actual.some((a) => equals(a, e))));
expect.stringContaining = (expected) =>
  asymmetric(`StringContaining ${show(expected)}`, (actual) => typeof actual === "string" && actual.includes(expected));
expect.stringMatching = (pattern) =>
  asymmetric(`StringMatching ${String(pattern)}`, (actual) => typeof actual === "string" && new RegExp(pattern).test(actual));
expect.anything = () => asymmetric("Anything", (actual) => actual !== null && actual !== undefined);
expect.any = (type) =>
  asymmetric(`Any<${type?.name ?? "?"}>`, (actual) => {
    if (type === String) return typeof actual === "string" || actual instanceof String;
    if (type === Number) return typeof actual === "number" || actual instanceof Number;
    if (type === Boolean) return typeof actual === "boolean" || actual instanceof Boolean;
    if (type === Function) return typeof actual === "function";
    if (type === Object) return actual !== null && typeof actual === "object";
    return actual instanceof type;
  });

// ============================================================================================
// vi
// ============================================================================================

function fn(implementation) {
  let fallback = implementation;
  const once = [];
  const mock = { calls: [], results: [], instances: [], lastCall: undefined };
  const spy = function (...args) {
    mock.calls.push(args);
    mock.lastCall = args;
    mock.instances.push(this);
    const run = once.length > 0 ? once.shift() : fallback;
    try {
      const value = run ? run.apply(this, args) : undefined;
      mock.results.push({ type: "return", value });
      return value;
    } catch (error) {
      mock.results.push({ type: "throw", value: error });
      throw error;
    }
  };
  spy._isMockFunction = true;
  spy.mock = mock;
  spy.getMockImplementation = () => fallback;
  spy.mockImplementation = (f) => ((fallback = f), spy);
  spy.mockImplementationOnce = (f) => (once.push(f), spy);
  spy.mockReturnValue = (value) => spy.mockImplementation(() => value);
  spy.mockReturnValueOnce = (value) => spy.mockImplementationOnce(() => value);
  spy.mockResolvedValue = (value) => spy.mockImplementation(() => Promise.resolve(value));
  spy.mockResolvedValueOnce = (value) => spy.mockImplementationOnce(() => Promise.resolve(value));
  spy.mockRejectedValue = (error) => spy.mockImplementation(() => Promise.reject(error));
  spy.mockRejectedValueOnce = (error) => spy.mockImplementationOnce(() => Promise.reject(error));
  spy.mockClear = () => {
    mock.calls.length = 0;
    mock.results.length = 0;
    mock.instances.length = 0;
    mock.lastCall = undefined;
    return spy;
  };
  spy.mockReset = () => {
    spy.mockClear();
    once.length = 0;
    fallback = undefined;
    return spy;
  };
  return spy;
}

function unsupported(name) {
  return () => {
    throw new Error(`vi.${name} is not part of the studio's vitest stand-in`);
  };
}

export const vi = {
  fn,
  isMockFunction: (value) => typeof value === "function" && value._isMockFunction === true,
  spyOn(object, method) {
    const original = object[method];
    const spy = fn(function (...args) {
      return original.apply(this, args);
    });
    spy.mockRestore = () => {
      object[method] = original;
    };
    object[method] = spy;
    return spy;
  },
  // Real timers are the only timers here, so going back to them changes nothing.
  useRealTimers: () => vi,
  useFakeTimers: unsupported("useFakeTimers"),
  advanceTimersByTime: unsupported("advanceTimersByTime"),
  mock: unsupported("mock"),
};

// ============================================================================================
// Running
// ============================================================================================

const firstLine = (error) => {
  const text = error instanceof Error ? `${error.name === "AssertionError" ? "" : `${error.name}: `}${error.message}` : `thrown: ${show(error)}`;
  return text.split("\n")[0];
};

function withTimeout(promise, ms) {
  let timer;
  const limit = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the test did not finish within ${ms} ms`)), ms);
  });
  return Promise.race([promise, limit]).finally(() => clearTimeout(timer));
}

async function runHooks(hooks) {
  for (const hook of hooks) await hook();
}

async function runGroup(group, path, befores, afters, results) {
  try {
    await runHooks(group.beforeAll);
  } catch (error) {
    results.push({ name: [...path, "(beforeAll)"].join(" > "), passed: false, error: firstLine(error) });
    return;
  }
  const allBefores = [...befores, ...group.beforeEach];
  const allAfters = [...group.afterEach, ...afters];
  for (const child of group.children) {
    const name = [...path, child.name].filter(Boolean);
    if (child.kind === "group") {
      await runGroup(child, name, allBefores, allAfters, results);
      continue;
    }
    if (child.skip || typeof child.fn !== "function") {
      results.push({ name: name.join(" > "), passed: true, skipped: true });
      continue;
    }
    let error;
    try {
      await runHooks(allBefores);
      await withTimeout(Promise.resolve().then(() => child.fn()), child.timeout ?? TEST_TIMEOUT_MS);
    } catch (thrown) {
      error = thrown;
    }
    try {
      await runHooks(allAfters);
    } catch (thrown) {
      error ??= thrown;
    }
    results.push(error === undefined ? { name: name.join(" > "), passed: true } : { name: name.join(" > "), passed: false, error: firstLine(error) });
  }
  try {
    await runHooks(group.afterAll);
  } catch (error) {
    results.push({ name: [...path, "(afterAll)"].join(" > "), passed: false, error: firstLine(error) });
  }
}

/** Runs every declared test once, in declaration order. */
export async function run() {
  const results = [];
  await runGroup(root, [], [], [], results);
  return results;
}
