// node:url for plugins: WHATWG-style `URL` and `URLSearchParams` for the special schemes
// plugins use (http, https, file), and `fileURLToPath` / `pathToFileURL`. The same classes are
// the sandbox's global `URL` and `URLSearchParams`, as in Node.

const DEFAULT_PORTS = { "http:": "80", "https:": "443", "ws:": "80", "wss:": "443", "ftp:": "21" };

function encodeQueryPart(text) {
  return encodeURIComponent(text).replace(/%20/g, "+").replace(/[!'()~]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}
function decodeQueryPart(text) {
  try { return decodeURIComponent(text.replace(/\+/g, " ")); } catch { return text; }
}

export class URLSearchParams {
  #pairs = [];
  #onChange = null;
  constructor(init = "") {
    if (typeof init === "string") this.#parse(init);
    else if (init instanceof URLSearchParams) this.#pairs = [...init];
    else if (init && typeof init[Symbol.iterator] === "function") for (const [k, v] of init) this.#pairs.push([String(k), String(v)]);
    else if (init && typeof init === "object") for (const k of Object.keys(init)) this.#pairs.push([k, String(init[k])]);
  }
  #parse(text) {
    this.#pairs = [];
    const q = text.startsWith("?") ? text.slice(1) : text;
    for (const part of q.split("&")) {
      if (part === "") continue;
      const eq = part.indexOf("=");
      this.#pairs.push(eq < 0 ? [decodeQueryPart(part), ""] : [decodeQueryPart(part.slice(0, eq)), decodeQueryPart(part.slice(eq + 1))]);
    }
  }
  static _bind(params, text, onChange) { params.#parse(text); params.#onChange = onChange; return params; }
  #changed() { if (this.#onChange) this.#onChange(this.toString()); }
  get size() { return this.#pairs.length; }
  append(k, v) { this.#pairs.push([String(k), String(v)]); this.#changed(); }
  delete(k) { this.#pairs = this.#pairs.filter(([n]) => n !== String(k)); this.#changed(); }
  get(k) { const hit = this.#pairs.find(([n]) => n === String(k)); return hit ? hit[1] : null; }
  getAll(k) { return this.#pairs.filter(([n]) => n === String(k)).map(([, v]) => v); }
  has(k) { return this.#pairs.some(([n]) => n === String(k)); }
  set(k, v) {
    const key = String(k);
    const i = this.#pairs.findIndex(([n]) => n === key);
    if (i < 0) this.#pairs.push([key, String(v)]);
    else { this.#pairs[i] = [key, String(v)]; this.#pairs = this.#pairs.filter(([n], j) => n !== key || j === i); }
    this.#changed();
  }
  sort() { this.#pairs.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)); this.#changed(); }
  forEach(fn, self) { for (const [k, v] of this.#pairs) fn.call(self, v, k, this); }
  keys() { return this.#pairs.map(([k]) => k)[Symbol.iterator](); }
  values() { return this.#pairs.map(([, v]) => v)[Symbol.iterator](); }
  entries() { return this.#pairs.map((p) => p.slice())[Symbol.iterator](); }
  [Symbol.iterator]() { return this.entries(); }
  toString() { return this.#pairs.map(([k, v]) => `${encodeQueryPart(k)}=${encodeQueryPart(v)}`).join("&"); }
}

function normalizePath(path) {
  const out = [];
  const parts = path.split("/");
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i];
    const last = i === parts.length - 1;
    if (part === "." || part.toLowerCase() === "%2e") { if (last) out.push(""); continue; }
    if (part === ".." || /^(%2e|\.){2}$/i.test(part)) { if (out.length > 1) out.pop(); if (last) out.push(""); continue; }
    out.push(part);
  }
  const joined = out.join("/");
  return joined.startsWith("/") ? joined : `/${joined}`;
}

function encodePath(path) {
  return path.replace(/[^A-Za-z0-9\-._~!$&'()*+,;=:@/%]/g, (c) => encodeURIComponent(c));
}

const PATTERN = /^([a-zA-Z][a-zA-Z0-9+.-]*):(?:\/\/(?:([^@/?#]*)@)?(\[[^\]]*\]|[^:/?#]*)(?::(\d*))?)?([^?#]*)(\?[^#]*)?(#.*)?$/;

export class URL {
  #protocol = ""; #username = ""; #password = ""; #hostname = ""; #port = ""; #pathname = "/"; #search = ""; #hash = "";
  #params = null;
  constructor(input, base) {
    const text = String(input).trim();
    const absolute = /^[a-zA-Z][a-zA-Z0-9+.-]*:/.test(text);
    if (absolute) this.#parseAbsolute(text);
    else {
      if (base === undefined) throw new TypeError(`Invalid URL: ${text}`);
      const b = base instanceof URL ? base : new URL(base);
      this.#protocol = b.protocol; this.#username = b.username; this.#password = b.password;
      this.#hostname = b.hostname; this.#port = b.port;
      let rest = text;
      const hashAt = rest.indexOf("#");
      if (hashAt >= 0) { this.#hash = rest.slice(hashAt) === "#" ? "" : rest.slice(hashAt); rest = rest.slice(0, hashAt); }
      const queryAt = rest.indexOf("?");
      let query = null;
      if (queryAt >= 0) { query = rest.slice(queryAt); rest = rest.slice(0, queryAt); }
      if (rest.startsWith("//")) { this.#parseAbsolute(`${b.protocol}${text}`); return; }
      if (rest === "") {
        this.#pathname = b.pathname;
        this.#search = query !== null ? (query === "?" ? "" : query) : b.search;
      } else {
        const dir = rest.startsWith("/") ? "" : b.pathname.slice(0, b.pathname.lastIndexOf("/") + 1);
        this.#pathname = encodePath(normalizePath(dir + rest));
        this.#search = query === null || query === "?" ? "" : query;
      }
    }
  }
  #parseAbsolute(text) {
    const m = PATTERN.exec(text);
    if (!m) throw new TypeError(`Invalid URL: ${text}`);
    const protocol = `${m[1].toLowerCase()}:`;
    const special = protocol in DEFAULT_PORTS || protocol === "file:";
    if (special && m[3] === undefined) throw new TypeError(`Invalid URL: ${text}`);
    if (special && protocol !== "file:" && !m[3]) throw new TypeError(`Invalid URL: ${text}`);
    this.#protocol = protocol;
    if (m[2] !== undefined) {
      const [user, pass = ""] = m[2].split(":");
      this.#username = user; this.#password = pass;
    }
    this.#hostname = (m[3] || "").toLowerCase();
    this.#port = m[4] && DEFAULT_PORTS[protocol] !== m[4] ? String(Number(m[4])) : "";
    const path = m[5] || "";
    this.#pathname = special ? encodePath(normalizePath(path || "/")) : path;
    this.#search = m[6] && m[6] !== "?" ? m[6] : "";
    this.#hash = m[7] && m[7] !== "#" ? m[7] : "";
  }
  static canParse(input, base) { try { new URL(input, base); return true; } catch { return false; } }
  static parse(input, base) { try { return new URL(input, base); } catch { return null; } }
  get protocol() { return this.#protocol; }
  set protocol(v) { this.#protocol = String(v).replace(/:?$/, ":").toLowerCase(); }
  get username() { return this.#username; }
  set username(v) { this.#username = String(v); }
  get password() { return this.#password; }
  set password(v) { this.#password = String(v); }
  get hostname() { return this.#hostname; }
  set hostname(v) { this.#hostname = String(v).toLowerCase(); }
  get port() { return this.#port; }
  set port(v) { const p = String(v); this.#port = DEFAULT_PORTS[this.#protocol] === p ? "" : p; }
  get host() { return this.#port ? `${this.#hostname}:${this.#port}` : this.#hostname; }
  set host(v) { const [h, p = ""] = String(v).split(":"); this.hostname = h; this.port = p; }
  get origin() { return this.#protocol in DEFAULT_PORTS ? `${this.#protocol}//${this.host}` : "null"; }
  get pathname() { return this.#pathname; }
  set pathname(v) { this.#pathname = encodePath(normalizePath(String(v))); }
  get search() { return this.#search; }
  set search(v) { const s = String(v); this.#search = s === "" || s === "?" ? "" : s.startsWith("?") ? s : `?${s}`; if (this.#params) URLSearchParams._bind(this.#params, this.#search, (q) => { this.#search = q ? `?${q}` : ""; }); }
  get searchParams() {
    if (!this.#params) this.#params = URLSearchParams._bind(new URLSearchParams(), this.#search, (q) => { this.#search = q ? `?${q}` : ""; });
    return this.#params;
  }
  get hash() { return this.#hash; }
  set hash(v) { const s = String(v); this.#hash = s === "" || s === "#" ? "" : s.startsWith("#") ? s : `#${s}`; }
  get href() {
    const auth = this.#username ? `${this.#username}${this.#password ? `:${this.#password}` : ""}@` : "";
    const special = this.#protocol in DEFAULT_PORTS || this.#protocol === "file:";
    const authority = special || this.#hostname ? `//${auth}${this.host}` : "";
    return `${this.#protocol}${authority}${this.#pathname}${this.#search}${this.#hash}`;
  }
  set href(v) { this.#parseAbsolute(String(v)); this.#params = null; }
  toString() { return this.href; }
  toJSON() { return this.href; }
}

/** The absolute path of a `file:` URL. */
export function fileURLToPath(url) {
  const u = typeof url === "string" ? new URL(url) : url;
  if (!(u instanceof URL) || u.protocol !== "file:") throw new TypeError("The URL must be of scheme file");
  if (u.hostname !== "") throw new TypeError(`File URL host must be "localhost" or empty on linux`);
  if (/%2f/i.test(u.pathname)) throw new TypeError("File URL path must not include encoded / characters");
  return decodeURIComponent(u.pathname);
}

/** The `file:` URL of a path (relative paths resolve against "/"). */
export function pathToFileURL(path) {
  let p = String(path);
  if (!p.startsWith("/")) p = `/${p}`;
  const u = new URL("file:///");
  u.pathname = p.replace(/%/g, "%25").replace(/\\/g, "%5C").replace(/\n/g, "%0A").replace(/\r/g, "%0D").replace(/\t/g, "%09").replace(/#/g, "%23").replace(/\?/g, "%3F");
  return u;
}

export default { URL, URLSearchParams, fileURLToPath, pathToFileURL };
