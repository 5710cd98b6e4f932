// node:crypto for plugins: hashing (sha1, sha256, sha512, md5) and random values — the pure
// parts real plugins use for ids and content fingerprints. Keys, ciphers and signatures stay
// out. The host computes digests and draws random bytes from the operating system.
import { digest as hostDigest, randomBytes as hostRandomBytes } from "covel:host";

const ALGORITHMS = new Set(["sha1", "sha256", "sha512", "md5"]);

/** Bytes that print themselves as Node's Buffer does (`toString("hex" | "base64" | …)`). */
class Bytes extends Uint8Array {
  toString(encoding = "utf8") { return encode(this, encoding); }
  toJSON() { return { type: "Buffer", data: Array.from(this) }; }
}

const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
function encode(bytes, encoding) {
  switch (String(encoding).toLowerCase()) {
    case "hex": return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
    case "base64":
    case "base64url": {
      let out = "";
      for (let i = 0; i < bytes.length; i += 3) {
        const n = (bytes[i] << 16) | ((bytes[i + 1] ?? 0) << 8) | (bytes[i + 2] ?? 0);
        out += B64[(n >> 18) & 63] + B64[(n >> 12) & 63];
        out += i + 1 < bytes.length ? B64[(n >> 6) & 63] : "=";
        out += i + 2 < bytes.length ? B64[n & 63] : "=";
      }
      return encoding === "base64url" ? out.replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "") : out;
    }
    case "latin1":
    case "binary": return String.fromCharCode(...bytes);
    case "utf8":
    case "utf-8": return decodeURIComponent(Array.from(bytes, (b) => `%${b.toString(16).padStart(2, "0")}`).join(""));
    default: throw new TypeError(`Unknown encoding: ${encoding}`);
  }
}

function toChunk(data, encoding) {
  if (typeof data === "string") {
    if (encoding === "hex") return data.match(/../g)?.map((h) => parseInt(h, 16)) ?? [];
    return data;
  }
  if (ArrayBuffer.isView(data)) return Array.from(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
  if (data instanceof ArrayBuffer) return Array.from(new Uint8Array(data));
  throw new TypeError('The "data" argument must be of type string or an instance of Buffer, TypedArray, or DataView');
}

class Hash {
  #algorithm; #chunks = []; #done = false;
  constructor(algorithm) { this.#algorithm = algorithm; }
  update(data, encoding) {
    if (this.#done) throw new Error("Digest already called");
    this.#chunks.push(toChunk(data, encoding));
    return this;
  }
  digest(encoding) {
    if (this.#done) throw new Error("Digest already called");
    this.#done = true;
    const bytes = Bytes.from(hostDigest(this.#algorithm, this.#chunks));
    return encoding === undefined ? bytes : encode(bytes, encoding);
  }
  copy() { const h = new Hash(this.#algorithm); for (const c of this.#chunks) h.update(c); return h; }
}

export function createHash(algorithm) {
  const name = String(algorithm).toLowerCase().replace(/^sha-/, "sha");
  if (!ALGORITHMS.has(name)) throw new Error(`Digest method not supported: ${algorithm} (the plugin sandbox offers sha1, sha256, sha512 and md5)`);
  return new Hash(name);
}

export function getHashes() { return [...ALGORITHMS]; }

/** One-shot hash, as Node 21's `crypto.hash(algorithm, data, outputEncoding = "hex")`. */
export function hash(algorithm, data, outputEncoding = "hex") {
  return createHash(algorithm).update(data).digest(outputEncoding);
}

export function randomBytes(size, callback) {
  const n = Number(size);
  if (!Number.isInteger(n) || n < 0 || n > 65536) throw new RangeError(`The "size" argument is out of range: ${size}`);
  const bytes = Bytes.from(hostRandomBytes(n));
  if (typeof callback === "function") { queueMicrotask(() => callback(null, bytes)); return undefined; }
  return bytes;
}

export function getRandomValues(array) {
  if (!ArrayBuffer.isView(array) || array instanceof Float32Array || array instanceof Float64Array) {
    throw new TypeError("The data argument must be an integer-type TypedArray");
  }
  if (array.byteLength > 65536) throw new RangeError("The ArrayBufferView's byte length exceeds 65536");
  new Uint8Array(array.buffer, array.byteOffset, array.byteLength).set(hostRandomBytes(array.byteLength));
  return array;
}

export function randomUUID() {
  const b = hostRandomBytes(16);
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = encode(b, "hex");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** A uniform integer in [min, max) (`randomInt(max)` means [0, max)). */
export function randomInt(min, max, callback) {
  if (max === undefined || typeof max === "function") { callback = max; max = min; min = 0; }
  if (!Number.isSafeInteger(min) || !Number.isSafeInteger(max) || max <= min) {
    throw new RangeError(`The value of "max" is out of range. It must be greater than the value of "min" (${min}). Received ${max}`);
  }
  const range = max - min;
  const limit = Math.floor(2 ** 48 / range) * range;
  let value;
  do {
    const b = hostRandomBytes(6);
    value = b.reduce((acc, byte) => acc * 256 + byte, 0);
  } while (value >= limit);
  const result = min + (value % range);
  if (typeof callback === "function") { queueMicrotask(() => callback(null, result)); return undefined; }
  return result;
}

export const webcrypto = Object.freeze({ getRandomValues, randomUUID });

export default { createHash, getHashes, hash, randomBytes, getRandomValues, randomUUID, randomInt, webcrypto };
