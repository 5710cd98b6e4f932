// structuredClone as the HTML standard defines it, for what a plugin can hold: primitives, the
// wrappers of primitives, Date, RegExp, ArrayBuffer and its views, Map, Set, Error, arrays and
// plain objects (a class instance becomes a plain object of its own enumerable properties),
// with shared references and cycles kept. A function, a symbol, a WeakMap, a Promise or a
// proxy-less host object is a DataCloneError. The bootstrap defines the global to load this
// module on first use (the SDK's deep copies load it too; nothing else does).

const dataCloneError = (what) => new DOMException(`${what} could not be cloned.`, "DataCloneError");
const ERRORS = { Error, EvalError, RangeError, ReferenceError, SyntaxError, TypeError, URIError };
const TYPED = [Int8Array, Uint8Array, Uint8ClampedArray, Int16Array, Uint16Array, Int32Array, Uint32Array, Float32Array, Float64Array, BigInt64Array, BigUint64Array];
const tag = (value) => Object.prototype.toString.call(value).slice(8, -1);

function clone(value, seen) {
  if (typeof value === "symbol") throw dataCloneError(String(value));
  if (typeof value === "function") throw dataCloneError(`${value.name ? `function ${value.name}` : "A function"}`);
  if (value === null || typeof value !== "object") return value;
  const known = seen.get(value);
  if (known !== undefined) return known;
  const kind = tag(value);
  let out;
  switch (kind) {
    case "Boolean": case "Number": case "String": case "BigInt":
      out = Object(value.valueOf());
      seen.set(value, out);
      return out;
    case "Date":
      out = new Date(value.valueOf());
      seen.set(value, out);
      return out;
    case "RegExp":
      out = new RegExp(value.source, value.flags);
      seen.set(value, out);
      return out;
    case "ArrayBuffer":
      out = value.slice(0);
      seen.set(value, out);
      return out;
    case "DataView": {
      const buffer = clone(value.buffer, seen);
      out = new DataView(buffer, value.byteOffset, value.byteLength);
      seen.set(value, out);
      return out;
    }
    case "Map":
      out = new Map();
      seen.set(value, out);
      for (const [k, v] of value) out.set(clone(k, seen), clone(v, seen));
      return out;
    case "Set":
      out = new Set();
      seen.set(value, out);
      for (const v of value) out.add(clone(v, seen));
      return out;
    case "Error": {
      const name = `${value.name}`;
      const Make = Object.hasOwn(ERRORS, name) ? ERRORS[name] : Error;
      out = new Make(value.message === undefined ? undefined : `${value.message}`);
      seen.set(value, out);
      if (value.stack !== undefined) out.stack = `${value.stack}`;
      if ("cause" in value) out.cause = clone(value.cause, seen);
      return out;
    }
    case "Array":
      out = new Array(value.length);
      break;
    case "Object":
      out = {};
      break;
    default: {
      const View = TYPED.find((T) => value instanceof T);
      if (View) {
        const buffer = clone(value.buffer, seen);
        out = new View(buffer, value.byteOffset, value.length);
        seen.set(value, out);
        return out;
      }
      throw dataCloneError(`#<${kind}>`);
    }
  }
  seen.set(value, out);
  for (const key of Object.keys(value)) {
    // Defined, not assigned: a key named `__proto__` stays a key.
    Object.defineProperty(out, key, { value: clone(value[key], seen), writable: true, enumerable: true, configurable: true });
  }
  return out;
}

export function structuredClone(value, options) {
  if (arguments.length === 0) throw new TypeError("structuredClone: 1 argument required, but only 0 present.");
  if (options !== undefined && options !== null && options.transfer !== undefined && [...options.transfer].length > 0) {
    throw dataCloneError("A transferred ArrayBuffer (transfer is not supported in the Covel sandbox)");
  }
  return clone(value, new Map());
}
