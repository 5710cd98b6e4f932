// The web platform globals modern plugins use and QuickJS does not have: AbortController and
// AbortSignal (with `abort`, `timeout`, `any`, `reason`, abort events) and TextEncoder and
// TextDecoder (UTF-8, as the WHATWG Encoding standard defines them; the bytes are encoded and
// decoded by the host, with Rust's standard UTF-8 routines). The bootstrap defines each global
// to load this module on first use, so a plugin that never touches them pays nothing.
import { encodeUtf8, decodeUtf8 } from "covel:host";

const abortError = () => new DOMException("This operation was aborted", "AbortError");
const timeoutError = () => new DOMException("The operation was aborted due to timeout", "TimeoutError");
// Only the host makes signals (as in browsers and Node: `new AbortSignal()` throws).
const CREATE = Symbol("create");
// The one way to abort a signal from outside its class (set in its static block).
let signalAbort;
// The longest delay the timers keep (Node's range); a longer timeout never fires within a call.
const TIMEOUT_MAX = 2147483647;

export class AbortSignal {
  #aborted = false;
  #reason = undefined;
  #listeners = [];
  onabort = null;

  constructor(key) {
    if (key !== CREATE) throw new TypeError("Illegal constructor");
  }

  get aborted() {
    return this.#aborted;
  }

  get reason() {
    return this.#reason;
  }

  throwIfAborted() {
    if (this.#aborted) throw this.#reason;
  }

  addEventListener(type, listener, options) {
    if (`${type}` !== "abort" || listener === null || listener === undefined) return;
    if (this.#listeners.some((l) => l.listener === listener)) return;
    const once = options !== null && typeof options === "object" && Boolean(options.once);
    this.#listeners.push({ listener, once });
  }

  removeEventListener(type, listener) {
    if (`${type}` === "abort") this.#listeners = this.#listeners.filter((l) => l.listener !== listener);
  }

  #abort(reason) {
    if (this.#aborted) return;
    this.#aborted = true;
    this.#reason = reason === undefined ? abortError() : reason;
    const event = { type: "abort", target: this, currentTarget: this };
    const call = (listener) => {
      try {
        if (typeof listener === "function") listener.call(this, event);
        else if (listener && typeof listener.handleEvent === "function") listener.handleEvent(event);
      } catch (error) {
        // As a browser reports an error thrown by a listener, and goes on with the next one.
        console.error("an abort listener threw:", error instanceof Error ? error.message : error);
      }
    };
    if (this.onabort !== null) call(this.onabort);
    const listeners = this.#listeners;
    this.#listeners = listeners.filter((l) => !l.once);
    for (const { listener } of listeners) call(listener);
  }

  static {
    signalAbort = (signal, reason) => signal.#abort(reason);
  }

  /** A signal that is already aborted, with `reason` (an AbortError by default). */
  static abort(reason) {
    const signal = new AbortSignal(CREATE);
    signalAbort(signal, reason);
    return signal;
  }

  /** A signal that aborts with a TimeoutError after `ms` milliseconds. */
  static timeout(ms) {
    const delay = Number(ms);
    // WebIDL's [EnforceRange] unsigned long long: a finite whole number from 0 up.
    if (!Number.isFinite(delay) || delay < 0 || delay > Number.MAX_SAFE_INTEGER) {
      throw new TypeError(`AbortSignal.timeout: ${String(ms)} is not a number of milliseconds from 0 to ${Number.MAX_SAFE_INTEGER}`);
    }
    const signal = new AbortSignal(CREATE);
    if (delay <= TIMEOUT_MAX) setTimeout(() => signalAbort(signal, timeoutError()), Math.trunc(delay));
    return signal;
  }

  /** A signal that aborts as soon as one of `signals` does, with its reason. */
  static any(signals) {
    const list = [...signals];
    const signal = new AbortSignal(CREATE);
    const already = list.find((s) => s.aborted);
    if (already) {
      signalAbort(signal, already.reason);
      return signal;
    }
    for (const source of list) {
      source.addEventListener("abort", () => signalAbort(signal, source.reason), { once: true });
    }
    return signal;
  }
}

export class AbortController {
  #signal = new AbortSignal(CREATE);

  get signal() {
    return this.#signal;
  }

  abort(reason) {
    signalAbort(this.#signal, reason);
  }
}

const UTF8_LABELS = new Set(["utf-8", "utf8", "unicode-1-1-utf-8", "unicode11utf8", "unicode20utf8", "x-unicode20utf8"]);

/** The bytes of a BufferSource (an ArrayBuffer or a view on one), without copying. */
function bytesOf(input) {
  if (input instanceof ArrayBuffer) return new Uint8Array(input);
  if (ArrayBuffer.isView(input)) return new Uint8Array(input.buffer, input.byteOffset, input.byteLength);
  throw new TypeError("TextDecoder.decode: the input must be an ArrayBuffer or a view on one");
}

const wellFormed = (text) => (typeof text.toWellFormed === "function" ? text.toWellFormed() : text);

export class TextEncoder {
  get encoding() {
    return "utf-8";
  }

  /** The UTF-8 bytes of `input` (a lone surrogate becomes U+FFFD). */
  encode(input = "") {
    return encodeUtf8(wellFormed(`${input}`));
  }

  /** Encodes as much of `source` as fits into `destination`: `{ read, written }`. */
  encodeInto(source, destination) {
    if (!(destination instanceof Uint8Array)) throw new TypeError("TextEncoder.encodeInto: the destination must be a Uint8Array");
    const text = wellFormed(`${source}`);
    let read = 0;
    let written = 0;
    for (const char of text) {
      const bytes = encodeUtf8(char);
      if (written + bytes.length > destination.length) break;
      destination.set(bytes, written);
      written += bytes.length;
      read += char.length;
    }
    return { read, written };
  }
}

export class TextDecoder {
  #fatal;
  #ignoreBOM;
  #pending = new Uint8Array(0);
  #started = false;

  constructor(label = "utf-8", options = {}) {
    const name = `${label}`.trim().toLowerCase();
    if (!UTF8_LABELS.has(name)) throw new RangeError(`TextDecoder: the encoding "${label}" is not supported here (only UTF-8 is)`);
    this.#fatal = Boolean(options?.fatal);
    this.#ignoreBOM = Boolean(options?.ignoreBOM);
  }

  get encoding() {
    return "utf-8";
  }

  get fatal() {
    return this.#fatal;
  }

  get ignoreBOM() {
    return this.#ignoreBOM;
  }

  /** The text of `input`; with `{ stream: true }` an incomplete sequence at its end waits for the next call. */
  decode(input, options = {}) {
    const stream = Boolean(options?.stream);
    let bytes = input === undefined ? new Uint8Array(0) : bytesOf(input);
    if (this.#pending.length) {
      const joined = new Uint8Array(this.#pending.length + bytes.length);
      joined.set(this.#pending);
      joined.set(bytes, this.#pending.length);
      bytes = joined;
    }
    // The host answers the text and how many bytes at the end wait for more (when streaming).
    const [text, waiting] = decodeUtf8(bytes, this.#fatal, stream, !this.#ignoreBOM && !this.#started);
    this.#pending = waiting ? bytes.slice(bytes.length - waiting) : new Uint8Array(0);
    this.#started = stream;
    if (!stream) this.#pending = new Uint8Array(0);
    return text;
  }
}
