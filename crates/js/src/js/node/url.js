// node:url for plugins: the WHATWG `URL` and `URLSearchParams` (the same classes are the sandbox's
// globals of those names, as in Node), and `fileURLToPath` / `pathToFileURL`. Parsing, resolution
// against a base, the setters and application/x-www-form-urlencoded are the host's (the `url`
// crate, crates/js/src/url.rs, served as covel:url-host); this module keeps each URL's components
// as the host answered them and its search parameters as a list linked to it.
import { parse, set, formParse, formEncode, MAX_URL_UNITS } from "covel:url-host";

// The components the host answers, in its order (url::quirks' getters).
const HREF = 0, ORIGIN = 1, PROTOCOL = 2, USERNAME = 3, PASSWORD = 4, HOST = 5, HOSTNAME = 6, PORT = 7, PATHNAME = 8, SEARCH = 9, HASH = 10;

const toWellFormed = String.prototype.toWellFormed;
const apply = Reflect.apply;
/** WebIDL's USVString: any value as text (a symbol throws a TypeError), lone surrogates as U+FFFD. */
const usv = (value) => apply(toWellFormed, `${value}`, []);
/** A URL's text, refused before the host copies it when it is over the host's limit. */
function urlText(value, what) {
  const text = usv(value);
  if (text.length > MAX_URL_UNITS) {
    throw new TypeError(`Invalid URL: ${what} has ${text.length} UTF-16 code units, more than the ${MAX_URL_UNITS} allowed here`);
  }
  return text;
}
/** Node's error for a URL that does not parse: a TypeError with `code` and `input`. */
function invalid(why, input) {
  const error = new TypeError(why);
  error.code = "ERR_INVALID_URL";
  error.input = input;
  return error;
}
const required = (what, count, given) => {
  if (given < count) throw new TypeError(`${what}: ${count} argument${count > 1 ? "s" : ""} required, but only ${given} present`);
};

// Set in the classes' static blocks: the one way this module reaches the other class's state.
let linkQuery; // (params, url, query): `params` linked to `url`, its list parsed from `query`
let parseQuery; // (params, query): the list again, after the URL's query changed
let setSearch; // (url, query): the URL's query after its `searchParams` changed

/** The list of pairs of form text. */
function pairsOf(text) {
  const flat = formParse(text);
  const list = [];
  for (let i = 0; i < flat.length; i += 2) list[list.length] = [flat[i], flat[i + 1]];
  return list;
}

export class URLSearchParams {
  #list = [];
  /** The URL whose query this is (each change updates it), or null. */
  #url = null;

  constructor(init = "") {
    if ((typeof init === "object" && init !== null) || typeof init === "function") {
      const iterator = init[Symbol.iterator];
      if (iterator !== undefined && iterator !== null) {
        if (typeof iterator !== "function") throw new TypeError("URLSearchParams: the init's Symbol.iterator is not a function");
        for (const pair of init) {
          if ((typeof pair !== "object" || pair === null) && typeof pair !== "function") {
            throw new TypeError("URLSearchParams: each pair of the init must be a sequence of a name and a value");
          }
          const items = [...pair];
          if (items.length !== 2) throw new TypeError(`URLSearchParams: a pair of the init has ${items.length} items instead of 2`);
          this.#list[this.#list.length] = [usv(items[0]), usv(items[1])];
        }
      } else {
        // A record: its own enumerable keys, in order.
        for (const key of Reflect.ownKeys(init)) {
          const found = Reflect.getOwnPropertyDescriptor(init, key);
          if (found !== undefined && found.enumerable) this.#list[this.#list.length] = [usv(key), usv(init[key])];
        }
      }
    } else {
      const text = usv(init);
      this.#list = pairsOf(text.startsWith("?") ? text.slice(1) : text);
    }
  }

  static {
    linkQuery = (params, url, query) => { params.#url = url; params.#list = pairsOf(query); return params; };
    parseQuery = (params, query) => { params.#list = pairsOf(query); };
  }

  /** The URL standard's "update steps": the linked URL's query becomes this list (none when empty). */
  #update() {
    if (this.#url !== null) setSearch(this.#url, this.toString());
  }

  get size() { return this.#list.length; }

  append(name, value) {
    required("URLSearchParams.append", 2, arguments.length);
    this.#list[this.#list.length] = [usv(name), usv(value)];
    this.#update();
  }

  delete(name, value) {
    required("URLSearchParams.delete", 1, arguments.length);
    const key = usv(name);
    const only = value === undefined ? undefined : usv(value);
    this.#list = this.#list.filter(([n, v]) => n !== key || (only !== undefined && v !== only));
    this.#update();
  }

  get(name) {
    required("URLSearchParams.get", 1, arguments.length);
    const key = usv(name);
    const hit = this.#list.find(([n]) => n === key);
    return hit === undefined ? null : hit[1];
  }

  getAll(name) {
    required("URLSearchParams.getAll", 1, arguments.length);
    const key = usv(name);
    return this.#list.filter(([n]) => n === key).map(([, v]) => v);
  }

  has(name, value) {
    required("URLSearchParams.has", 1, arguments.length);
    const key = usv(name);
    const only = value === undefined ? undefined : usv(value);
    return this.#list.some(([n, v]) => n === key && (only === undefined || v === only));
  }

  set(name, value) {
    required("URLSearchParams.set", 2, arguments.length);
    const key = usv(name);
    const text = usv(value);
    const at = this.#list.findIndex(([n]) => n === key);
    if (at < 0) this.#list[this.#list.length] = [key, text];
    else this.#list = this.#list.filter(([n], i) => i === at || n !== key).map((pair, i) => (i === at ? [key, text] : pair));
    this.#update();
  }

  /** Sorts by name in UTF-16 code units, keeping the order of equal names. */
  sort() {
    const keyed = this.#list.map((pair, i) => [pair, i]);
    keyed.sort(([a, i], [b, j]) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : i - j));
    this.#list = keyed.map(([pair]) => pair);
    this.#update();
  }

  forEach(callback, thisArg) {
    if (typeof callback !== "function") throw new TypeError("URLSearchParams.forEach: the callback is not a function");
    // Live, as the standard's iteration: pairs a callback appends are visited too.
    for (let i = 0; i < this.#list.length; i++) apply(callback, thisArg, [this.#list[i][1], this.#list[i][0], this]);
  }

  *entries() { for (let i = 0; i < this.#list.length; i++) yield [this.#list[i][0], this.#list[i][1]]; }
  *keys() { for (let i = 0; i < this.#list.length; i++) yield this.#list[i][0]; }
  *values() { for (let i = 0; i < this.#list.length; i++) yield this.#list[i][1]; }
  [Symbol.iterator]() { return this.entries(); }

  /** The list as application/x-www-form-urlencoded text. */
  toString() {
    let out = "";
    for (let i = 0; i < this.#list.length; i++) {
      const pair = `${formEncode(this.#list[i][0])}=${formEncode(this.#list[i][1])}`;
      out = i === 0 ? pair : `${out}&${pair}`;
    }
    return out;
  }

  get [Symbol.toStringTag]() { return "URLSearchParams"; }
}

export class URL {
  /** The components as the host answered them (see HREF … HASH). */
  #parts;
  /** `searchParams`, made on its first read and linked to this URL from then on. */
  #query = null;

  constructor(url, base) {
    required("URL", 1, arguments.length);
    const input = urlText(url, "the URL");
    const parts = base === undefined ? parse(input) : parse(input, urlText(base, "the base URL"));
    if (typeof parts === "string") throw invalid(parts, input);
    this.#parts = parts;
  }

  static {
    setSearch = (url, query) => { url.#parts = set(url.#parts[HREF], "search", query); };
  }

  /** Whether `new URL(url, base)` would succeed. */
  static canParse(url, base) {
    required("URL.canParse", 1, arguments.length);
    try {
      const input = urlText(url, "the URL");
      return typeof (base === undefined ? parse(input) : parse(input, urlText(base, "the base URL"))) !== "string";
    } catch {
      return false;
    }
  }

  /** `new URL(url, base)`, or null where it would throw. */
  static parse(url, base) {
    required("URL.parse", 1, arguments.length);
    try {
      return new URL(url, base);
    } catch {
      return null;
    }
  }

  #set(component, value) {
    this.#parts = set(this.#parts[HREF], component, urlText(value, "the new value"));
  }

  get href() { return this.#parts[HREF]; }
  set href(value) {
    const input = urlText(value, "the URL");
    const parts = parse(input);
    if (typeof parts === "string") throw invalid(parts, input);
    this.#parts = parts;
    if (this.#query !== null) parseQuery(this.#query, this.#parts[SEARCH].slice(1));
  }
  get origin() { return this.#parts[ORIGIN]; }
  get protocol() { return this.#parts[PROTOCOL]; }
  set protocol(value) { this.#set("protocol", value); }
  get username() { return this.#parts[USERNAME]; }
  set username(value) { this.#set("username", value); }
  get password() { return this.#parts[PASSWORD]; }
  set password(value) { this.#set("password", value); }
  get host() { return this.#parts[HOST]; }
  set host(value) { this.#set("host", value); }
  get hostname() { return this.#parts[HOSTNAME]; }
  set hostname(value) { this.#set("hostname", value); }
  get port() { return this.#parts[PORT]; }
  set port(value) { this.#set("port", value); }
  get pathname() { return this.#parts[PATHNAME]; }
  set pathname(value) { this.#set("pathname", value); }
  get search() { return this.#parts[SEARCH]; }
  set search(value) {
    this.#set("search", value);
    if (this.#query !== null) parseQuery(this.#query, this.#parts[SEARCH].slice(1));
  }
  get searchParams() {
    if (this.#query === null) this.#query = linkQuery(new URLSearchParams(), this, this.#parts[SEARCH].slice(1));
    return this.#query;
  }
  get hash() { return this.#parts[HASH]; }
  set hash(value) { this.#set("hash", value); }

  toString() { return this.#parts[HREF]; }
  toJSON() { return this.#parts[HREF]; }
  get [Symbol.toStringTag]() { return "URL"; }
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
