// @covel/plugin-handlers-utils — the plugin SDK as Covel Studio serves it to plugins.
//
// The names, signatures and results follow the upstream SDK (`@covel/plugin-handlers-utils`
// 0.0.50). Everything here runs in the studio's QuickJS sandbox: no Node APIs, no `Intl`, no
// `TextEncoder`, no `crypto` (used when present, never required). Sub-entries
// (`/dimensions`, `/prompts`, `/image-generation`) import what they share from this module.
//
// The kernel's Rust side (`covel_kernel::sdk`) implements estimateTokens, the i18n lookup and
// actingCharacterOf on one shared table of vectors (tests/fixtures/sdk/sdk-vectors).

import { z } from "zod";
import { pickLocaleText, resolveI18nText } from "covel:sdk-locale";

// ============================================================================================
// Small shared helpers (not exported)
// ============================================================================================

const hasOwn = (object, key) => object != null && Object.prototype.hasOwnProperty.call(object, key);
const isPlainObject = (value) => value !== null && typeof value === "object" && !Array.isArray(value);
/**
 * Sets a key that came from data as an own property (see deepCopy for why assigning is wrong
 * for `__proto__`).
 */
const setOwn = (object, key, value) =>
  Object.defineProperty(object, key, { value, writable: true, enumerable: true, configurable: true });
const errorText = (error) => (error instanceof Error ? error.message : String(error));

/** True when the `zod` module is the real zod 4 (the helpers that build schemas need it). */
const ZOD_READY = Boolean(
  z && typeof z.object === "function" && typeof z.lazy === "function" && typeof z.preprocess === "function" &&
    typeof z.custom === "function" && typeof z.toJSONSchema === "function",
);

/**
 * Builds a module-level value that needs zod 4. Without it the value is a stand-in whose
 * every use explains what is missing, so importing the SDK never fails on its own.
 */
function withZod(name, build) {
  if (ZOD_READY) return build();
  const fail = () => {
    throw new Error(`${name} needs the zod 4 package, which this host does not provide`);
  };
  return Object.freeze({ parse: fail, safeParse: fail, execute: fail, _unavailable: name });
}

function randomHex(length) {
  let out = "";
  while (out.length < length) out += Math.floor(Math.random() * 0x100000000).toString(16).padStart(8, "0");
  return out.slice(0, length);
}

/** A v4 UUID from `crypto.randomUUID` when the runtime has it, else from Math.random. */
function randomUuid() {
  const c = globalThis.crypto;
  if (c && typeof c.randomUUID === "function") return c.randomUUID();
  const hex = randomHex(32).split("");
  hex[12] = "4";
  hex[16] = "89ab"[parseInt(hex[16], 16) & 3];
  const h = hex.join("");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

const copyJson = (value) =>
  typeof globalThis.structuredClone === "function" ? globalThis.structuredClone(value) : deepCopy(value);
// Objects built from data keys are built with `Object.fromEntries`, which defines each key as
// an own property, as JSON.parse does: assigning `out[key]` with a key `__proto__` would set the
// copy's prototype instead (the key lost, and an object of the data's choosing inherited).
function deepCopy(value) {
  if (value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) return value.map(deepCopy);
  return Object.fromEntries(Object.keys(value).map((key) => [key, deepCopy(value[key])]));
}

// ============================================================================================
// Tool results
// ============================================================================================

const TOOL_RESULT_KIND = "covel.tool-result";
const isToolResult = (value) => value !== null && typeof value === "object" && value.kind === TOOL_RESULT_KIND;

/** The content of a tool result (or the value itself when it is not a tool result). */
export function getToolContent(value) {
  return isToolResult(value) ? value.content : value;
}

/** The proposals a tool result carries; `[]` for anything else. */
export function getPendingProposals(value) {
  return isToolResult(value) ? value.pendingProposals : [];
}

/** The events a tool result carries, or `undefined`. */
export function getEmittedEvents(value) {
  return isToolResult(value) ? value.emittedEvents : undefined;
}

/**
 * A tool result `{kind: "covel.tool-result", content, pendingProposals, emittedEvents?}` with
 * these proposals; an earlier result's events are kept, its proposals replaced. Nothing is mutated.
 */
export function withPendingProposals(content, pendingProposals) {
  const events = getEmittedEvents(content);
  return {
    kind: TOOL_RESULT_KIND,
    content: getToolContent(content),
    pendingProposals: [...(pendingProposals ?? [])],
    ...(events ? { emittedEvents: [...events] } : {}),
  };
}

/** A tool result with these events; an earlier result's proposals are kept. */
export function withEmittedEvents(content, emittedEvents) {
  return {
    kind: TOOL_RESULT_KIND,
    content: getToolContent(content),
    pendingProposals: [...getPendingProposals(content)],
    emittedEvents: [...(emittedEvents ?? [])],
  };
}

// ============================================================================================
// Input normalization, records, manual entities
// ============================================================================================

/** The trimmed string, or throws `<field> must be a non-empty string`. */
export function normalizeRequiredString(value, field) {
  if (typeof value !== "string" || value.trim().length === 0) throw new Error(`${field} must be a non-empty string`);
  return value.trim();
}

/** The trimmed string, or `undefined` for a blank or non-string value. */
export function optionalString(value) {
  return typeof value === "string" && value.trim().length > 0 ? value.trim() : undefined;
}

/** A finite number from a number or a numeric string, else `undefined`. */
export function optionalNumber(value) {
  if (typeof value === "number" && Number.isFinite(value)) return value;
  if (typeof value !== "string" || value.trim().length === 0) return undefined;
  const n = Number(value);
  return Number.isFinite(n) ? n : undefined;
}

/** An integer from a number or a numeric string, else `undefined`. */
export function optionalInteger(value) {
  if (typeof value === "number" && Number.isInteger(value)) return value;
  if (typeof value !== "string" || value.trim().length === 0) return undefined;
  const n = Number(value);
  return Number.isInteger(n) ? n : undefined;
}

/**
 * A list of at most 32 trimmed, non-blank strings: a string is split on `,`, `，` and line
 * breaks, an array keeps its string items, anything else gives `[]`.
 */
export function splitList(value) {
  let parts = [];
  if (Array.isArray(value)) parts = value.filter((item) => typeof item === "string");
  else if (typeof value === "string") parts = value.split(/[,，\n]/);
  return parts.map((item) => item.trim()).filter(Boolean).slice(0, 32);
}

/** A copy without `undefined` values (and without empty arrays with `dropEmptyArrays`). */
export function compactRecord(value, options = {}) {
  const dropEmpty = options.dropEmptyArrays === true;
  return Object.fromEntries(
    Object.entries(value ?? {}).filter(([, item]) => item !== undefined && !(dropEmpty && Array.isArray(item) && item.length === 0)),
  );
}

/**
 * The entity of a manual RPC payload: `<entity>Json` parsed (throws on bad JSON), else
 * `fromForm(<entity>Form)`, else `<entity>`; `undefined` when the payload is not an object.
 */
export function readManualEntity(payload, entity, fromForm) {
  if (!isPlainObject(payload)) return undefined;
  const json = payload[`${entity}Json`];
  if (typeof json === "string" && json.trim().length > 0) {
    try {
      return JSON.parse(json);
    } catch {
      throw new Error(`manualPayload.${entity}Json must be valid JSON`);
    }
  }
  const form = payload[`${entity}Form`];
  if (form && typeof form === "object") return fromForm(form);
  return payload[entity];
}

/**
 * Checks the envelope every manual entity shares (an object, an id matching `idPattern`,
 * `schemaVersion` absent or 1, at most 64 KB serialized) and returns the normalized object.
 */
export function assertEntityEnvelope(value, options) {
  const { entity, idField = "id", idPattern, idError, build } = options;
  if (!isPlainObject(value)) throw new Error(`manualPayload.${entity} must be an object`);
  const id = normalizeRequiredString(value[idField], `${entity}.${idField}`);
  if (!idPattern.test(id)) throw new Error(idError);
  if ((value.schemaVersion ?? 1) !== 1) throw new Error(`${entity}.schemaVersion must be 1`);
  const base = { ...value, schemaVersion: 1, [idField]: id };
  const built = build ? build(base) : base;
  if (JSON.stringify(built).length > 65536) throw new Error(`${entity} is too large; max serialized size is 64KB`);
  return built;
}

// ============================================================================================
// Cancellation
// ============================================================================================

function timeoutError() {
  const error = new Error("The operation was aborted due to timeout");
  error.name = "TimeoutError";
  return error;
}

/** A minimal AbortSignal for runtimes without one (the studio sandbox). */
function makeSignal() {
  const listeners = [];
  const signal = {
    aborted: false,
    reason: undefined,
    onabort: null,
    addEventListener(type, fn) {
      if (type === "abort" && typeof fn === "function") listeners.push(fn);
    },
    removeEventListener(type, fn) {
      const at = listeners.indexOf(fn);
      if (at >= 0) listeners.splice(at, 1);
    },
    throwIfAborted() {
      if (signal.aborted) throw signal.reason;
    },
  };
  const abort = (reason) => {
    if (signal.aborted) return;
    signal.aborted = true;
    signal.reason = reason;
    const event = { type: "abort", target: signal };
    if (typeof signal.onabort === "function") {
      try { signal.onabort(event); } catch { /* a listener's error is its own */ }
    }
    for (const fn of listeners.slice()) {
      try { fn(event); } catch { /* a listener's error is its own */ }
    }
  };
  return { signal, abort };
}

const nativeSignals = () => typeof globalThis.AbortSignal === "function";

function timeoutSignal(ms) {
  if (nativeSignals() && typeof AbortSignal.timeout === "function") return AbortSignal.timeout(ms);
  const { signal, abort } = makeSignal();
  if (typeof globalThis.setTimeout === "function") globalThis.setTimeout(() => abort(timeoutError()), ms);
  return signal;
}

/**
 * A signal that aborts when `signal` aborts or after `timeoutMs`, whichever comes first; the
 * timeout alone when there is no signal.
 */
export function abortSignalWithTimeout(signal, timeoutMs) {
  const timeout = timeoutSignal(timeoutMs);
  if (!signal) return timeout;
  if (nativeSignals() && typeof AbortSignal.any === "function" && signal instanceof AbortSignal && timeout instanceof AbortSignal) {
    return AbortSignal.any([signal, timeout]);
  }
  const { signal: combined, abort } = makeSignal();
  for (const source of [signal, timeout]) {
    if (source.aborted) {
      abort(source.reason);
      break;
    }
    source.addEventListener?.("abort", () => abort(source.reason));
  }
  return combined;
}

// ============================================================================================
// Proposals
// ============================================================================================

/**
 * A proposal envelope `{id, type, source: {pluginId, runtimeId}, turnId, sessionId, payload,
 * timestamp}` from a handler context; the host validates it before committing.
 * (The studio also accepts the older `makeProposal(type, payload)` form.)
 */
export function makeProposal(ctx, now, type, payload) {
  if (arguments.length === 2 && typeof ctx === "string") return { type: ctx, payload: now };
  return {
    id: randomUuid(),
    type,
    source: { pluginId: ctx.pluginId, runtimeId: ctx.runtimeId ?? ctx.pluginId },
    turnId: ctx.turnId,
    sessionId: ctx.sessionId,
    payload,
    timestamp: now,
  };
}

/** `[namespace, key]` as one map key that no two different pairs share. */
const pluginDataKey = (namespace, key) => JSON.stringify([namespace, key]);

/**
 * The newest buffered plugin-data write of `pluginId` to `(namespace, key)`:
 * `{hit: false}` when no buffered proposal touched it, `{hit: true, value}` after a write,
 * `{hit: true, value: null, deleted: true}` after a delete.
 */
export function overlayPluginDataValue(proposals, pluginId, namespace, key) {
  let result = { hit: false };
  for (const proposal of proposals ?? []) {
    if (proposal?.source?.pluginId !== pluginId) continue;
    const p = proposal.payload ?? {};
    if (proposal.type === "plugin.data") {
      if (p.namespace === namespace && p.key === key) result = { hit: true, value: p.value };
    } else if (proposal.type === "plugin.data.batch") {
      for (const item of p.items ?? []) {
        if (item.namespace === namespace && item.key === key) result = { hit: true, value: item.value };
      }
    } else if (proposal.type === "plugin.data.delete") {
      if (p.namespace === namespace && p.key === key) result = { hit: true, value: null, deleted: true };
    }
  }
  return result;
}

/**
 * Every buffered plugin-data row of `pluginId` (in `namespace`, when given) as a Map keyed by
 * `JSON.stringify([namespace, key])`; the last write wins, deletes are `{value: null, deleted: true}`.
 */
export function overlayPluginDataRows(proposals, pluginId, namespace) {
  const rows = new Map();
  const put = (ns, key, row) => {
    if (namespace !== undefined && ns !== namespace) return;
    rows.set(pluginDataKey(ns, key), row);
  };
  for (const proposal of proposals ?? []) {
    if (proposal?.source?.pluginId !== pluginId) continue;
    const p = proposal.payload ?? {};
    if (proposal.type === "plugin.data") put(p.namespace, p.key, { namespace: p.namespace, key: p.key, value: p.value });
    else if (proposal.type === "plugin.data.batch") {
      for (const item of p.items ?? []) put(item.namespace, item.key, { namespace: item.namespace, key: item.key, value: item.value });
    } else if (proposal.type === "plugin.data.delete") {
      put(p.namespace, p.key, { namespace: p.namespace, key: p.key, value: null, deleted: true });
    }
  }
  return rows;
}

// ============================================================================================
// Ids
// ============================================================================================

const MAX_SLUG = 32;
const randomPart = () => randomHex(8);

/** The ASCII letters and digits of a label, lower-cased and joined by `-` (at most 32 characters). */
export function wordSlug(label) {
  return (String(label ?? "").toLowerCase().match(/[a-z0-9]+/g) ?? []).join("-").slice(0, MAX_SLUG).replace(/-$/, "");
}

/**
 * `<prefix>-<slug>`, then `-2`, `-3`… while `taken` has it; a label without ASCII words gets
 * an 8-hex random part instead of a slug.
 */
export function wordId(prefix, label, taken) {
  const has = (id) => Boolean(taken && taken.has(id));
  const slug = wordSlug(label);
  if (!slug) {
    let id = `${prefix}-${randomPart()}`;
    while (has(id)) id = `${prefix}-${randomPart()}`;
    return id;
  }
  const base = `${prefix}-${slug}`;
  let id = base;
  for (let n = 2; has(id); n++) id = `${base}-${n}`;
  return id;
}

/** A new id `<prefix>-<slug>-<8 hex>` that needs no look at existing ids (`sessionId` is unused). */
export function shortId(prefix, label, _sessionId) {
  return [prefix, wordSlug(label), randomPart()].filter(Boolean).join("-");
}

/** One `shortId` per label. */
export function shortIdBatch(prefix, labels, sessionId) {
  return (labels ?? []).map((label) => shortId(prefix, label, sessionId));
}

// ============================================================================================
// Model-facing JSON
// ============================================================================================

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const INSTANT_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})$/;
const isUuid = (value) => typeof value === "string" && UUID_RE.test(value);

function isBookkeeping(name, value) {
  if (name === "sessionId") return true;
  if (name === "id" || /Ids?$/.test(name)) {
    return Array.isArray(value) ? value.length > 0 && value.every(isUuid) : isUuid(value);
  }
  return (name === "timestamp" || name.endsWith("At")) && typeof value === "string" && INSTANT_RE.test(value);
}

/**
 * A deep copy of a JSON value without bookkeeping: `sessionId`, UUID-valued `id`/`…Id`/`…Ids`
 * and ISO-instant `timestamp`/`…At` properties. Returns the value, not text.
 */
export function modelFacingJson(value) {
  if (Array.isArray(value)) return value.map(modelFacingJson);
  if (value === null || typeof value !== "object") return value;
  // Defined, not assigned: a data key `__proto__` stays an own key (see deepCopy).
  return Object.fromEntries(
    Object.entries(value)
      .filter(([name, item]) => !isBookkeeping(name, item))
      .map(([name, item]) => [name, modelFacingJson(item)]),
  );
}

// ============================================================================================
// Messages (locales/<locale>.yaml)
// ============================================================================================

const PLACEHOLDER_RE = /\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

/**
 * `ctx.messages` as upstream defines it: `{translations, labels}`. The studio host has also
 * passed the session's catalog as one flat `{english: translation}` map; that is read as the
 * translations (its values are strings, so the two shapes cannot be confused).
 */
function messageTables(ctx) {
  const messages = ctx?.messages;
  if (!messages || typeof messages !== "object") return { translations: undefined, labels: undefined, flat: false };
  if (isPlainObject(messages.translations) || isPlainObject(messages.labels)) {
    return { translations: messages.translations, labels: messages.labels, flat: false };
  }
  return { translations: messages, labels: undefined, flat: true };
}

/**
 * The English `text` in the session's content language (from `ctx.messages`), with each
 * `{name}` replaced from `params`; unknown placeholders stay as written.
 */
export function translate(ctx, text, params) {
  const { translations } = messageTables(ctx);
  const template = translations && hasOwn(translations, text) && typeof translations[text] === "string" ? translations[text] : text;
  if (!params) return template;
  return template.replace(PLACEHOLDER_RE, (match, name) => (hasOwn(params, name) ? String(params[name]) : match));
}

/**
 * A label in every language the plugin ships (`{en: text, …}`) for the client to pick from;
 * the English text when no translation exists.
 */
export function labelText(ctx, text) {
  const { labels, translations, flat } = messageTables(ctx);
  if (labels && hasOwn(labels, text)) return { en: text, ...labels[text] };
  // A host that passes only the session's flat catalog: its translation is the one we know.
  if (flat && translations && typeof translations[text] === "string") return translations[text];
  return text;
}

// ============================================================================================
// Token estimate
// ============================================================================================

/** CJK units (2E80–9FFF, AC00–D7AF, F900–FAFF, FF00–FFEF) count one token each. */
function isCjkUnit(code) {
  return (code >= 0x2e80 && code <= 0x9fff) || (code >= 0xac00 && code <= 0xd7af) ||
    (code >= 0xf900 && code <= 0xfaff) || (code >= 0xff00 && code <= 0xffef);
}

/**
 * A token estimate: one per CJK UTF-16 unit, one per four other units (rounded up), as upstream
 * counts `text.length`: an emoji is its UTF-16 units over four (👍🏽 four units, 👨‍👩‍👧 eight),
 * not a token each. Budgets rely on this exact rule; model counts are the forecast's.
 */
export function estimateTokens(text) {
  const s = String(text ?? "");
  let cjk = 0;
  for (let i = 0; i < s.length; i++) if (isCjkUnit(s.charCodeAt(i))) cjk++;
  return cjk + Math.ceil((s.length - cjk) / 4);
}

// ============================================================================================
// Text search (BM25)
// ============================================================================================

const CJK_SCRIPTS = "\\p{Script=Han}\\p{Script=Hiragana}\\p{Script=Katakana}\\p{Script=Hangul}";
const SEARCH_PART_RE = new RegExp(`[${CJK_SCRIPTS}]+|(?:(?![${CJK_SCRIPTS}])[\\p{L}\\p{N}_])+`, "gu");
const CJK_START_RE = new RegExp(`^[${CJK_SCRIPTS}]`, "u");
const BM25_K1 = 1.2;
const BM25_B = 0.75;

/** Folds a simple plural: `lanterns` → `lantern` (not `glass`). */
const stemWord = (word) => (word.length > 3 && word.endsWith("s") && !word.endsWith("ss") ? word.slice(0, -1) : word);
const searchParts = (text) => String(text ?? "").toLowerCase().replace(/['’]s\b/g, "").match(SEARCH_PART_RE) ?? [];

/**
 * The terms a query asks for: words of two or more characters (plural folded) and the
 * overlapping character pairs of CJK runs; a lone CJK character is a term by itself.
 */
export function searchTerms(text) {
  const terms = new Set();
  for (const part of searchParts(text)) {
    if (!CJK_START_RE.test(part)) {
      if (part.length >= 2) terms.add(stemWord(part));
      continue;
    }
    const chars = Array.from(part);
    if (chars.length === 1) terms.add(part);
    for (let i = 1; i < chars.length; i++) terms.add(chars[i - 1] + chars[i]);
  }
  return [...terms];
}

function documentTerms(text) {
  const counts = new Map();
  let length = 0;
  const add = (term) => counts.set(term, (counts.get(term) ?? 0) + 1);
  for (const part of searchParts(text)) {
    if (!CJK_START_RE.test(part)) {
      if (part.length >= 2) {
        add(stemWord(part));
        length++;
      }
      continue;
    }
    const chars = Array.from(part);
    chars.forEach((ch, i) => {
      add(ch);
      if (i > 0) add(chars[i - 1] + ch);
    });
    length += chars.length;
  }
  return { counts, length };
}

/**
 * Ranks `texts` against `query` with Okapi BM25. Returns `{index, score, coverage, matched}`
 * for each text holding a query term, best first (ties keep list order); `options.limit` and
 * `options.minCoverage` trim the list.
 */
export function rankTexts(query, texts, options = {}) {
  const terms = searchTerms(query);
  if (terms.length === 0 || !texts || texts.length === 0) return [];
  const docs = texts.map(documentTerms);
  const avgLength = docs.reduce((sum, d) => sum + d.length, 0) / docs.length || 1;
  const weights = new Map();
  let totalWeight = 0;
  for (const term of terms) {
    const holders = docs.filter((d) => d.counts.has(term)).length;
    const weight = Math.log(1 + (docs.length - holders + 0.5) / (holders + 0.5));
    weights.set(term, weight);
    if (holders > 0) totalWeight += weight;
  }
  const ranked = [];
  docs.forEach((doc, index) => {
    let score = 0;
    let matched = 0;
    let matchedWeight = 0;
    for (const term of terms) {
      const count = doc.counts.get(term);
      if (!count) continue;
      const weight = weights.get(term);
      matched++;
      matchedWeight += weight;
      score += (weight * count * (BM25_K1 + 1)) / (count + BM25_K1 * (1 - BM25_B + (BM25_B * doc.length) / avgLength));
    }
    if (score <= 0) return;
    const coverage = totalWeight > 0 ? matchedWeight / totalWeight : 0;
    if (coverage < (options.minCoverage ?? 0)) return;
    ranked.push({ index, score, coverage, matched });
  });
  ranked.sort((a, b) => b.score - a.score || a.index - b.index);
  return options.limit === undefined ? ranked : ranked.slice(0, options.limit);
}

/** At most `limit` characters of `text` around its first query term, `…` marking cuts. */
export function searchExcerpt(text, query, limit = 500) {
  const s = String(text ?? "");
  if (s.length <= limit) return s;
  const lower = s.toLowerCase();
  const hits = searchTerms(query).map((t) => lower.indexOf(t)).filter((i) => i >= 0);
  const start = Math.max(0, (hits.length ? Math.min(...hits) : 0) - 120);
  const end = Math.min(s.length, start + limit);
  return `${start ? "…" : ""}${s.slice(start, end)}${end < s.length ? "…" : ""}`;
}

/**
 * Orders two strings by Unicode code point (the order of a binary-collated text column), the
 * same on every machine; for `Array.prototype.sort`.
 */
export function compareText(a, b) {
  if (a === b) return 0;
  const shared = Math.min(a.length, b.length);
  for (let i = 0; i < shared; i++) {
    let left = a.charCodeAt(i);
    let right = b.charCodeAt(i);
    if (left === right) continue;
    if (left >= 0xd800 && right >= 0xd800) {
      // Surrogates (astral code points) sort after U+E000..U+FFFF.
      left = left >= 0xe000 ? left - 0x800 : left + 0x2000;
      right = right >= 0xe000 ? right - 0x800 : right + 0x2000;
    }
    return left < right ? -1 : 1;
  }
  return a.length < b.length ? -1 : 1;
}

/** Fills `{{ name }}` / `{{ a.b }}` placeholders from `variables`; unknown paths become empty. */
export function interpolate(template, variables) {
  return String(template).replace(/\{\{\s*([^}]+?)\s*\}\}/g, (_match, path) => {
    let value = variables;
    // Own keys only: `{{ constructor }}` is not Object's source text.
    for (const key of path.trim().split(".")) value = value && typeof value === "object" && hasOwn(value, key) ? value[key] : undefined;
    return value === undefined || value === null ? "" : String(value);
  });
}

// ============================================================================================
// Locales and i18n text: ./locale.js, one module shared with the studio's UI
// ============================================================================================

export {
  MAX_LOCALE_CODE_LENGTH, LOCALE_CODE_RE, canonicalizeLocale, isLocaleCode, normalizeLocale,
  localeLanguage, localesShareLanguageAndScript, localeLookupCandidates, localeDisplayName,
  defineLocaleRegistry, LOCALE_DEFINITIONS, localeRegistry, SUPPORTED_LOCALES, DEFAULT_LOCALE,
  DEFAULT_FALLBACK_LOCALE, isDefaultLocale, INSTRUCTION_LOCALES, instructionLocaleOverride,
  instructionLocaleFor, instructionVariantCandidates, localeTier, isInstructionVariantLocale,
  pickLocaleText, LOCALE_REGISTRY, localeCandidates, resolveI18nText, isKnownLocale, isLocaleMap,
  resolveI18nDeep, WORLD_LOCALIZED_TEXT_KEY, localizedWorldText
} from "covel:sdk-locale";
// ============================================================================================
// Framework tool names
// ============================================================================================

/**
 * Tool names the framework reserves (upstream's list first, then the names the studio host
 * adds), so a plugin can keep its own tools clear of them.
 */
export const FRAMEWORK_TOOL_NAMES = Object.freeze([
  "render-ui", "create-form", "create-choices", "create-notification", "suspend", "runtime-done",
  "search-tools", "plugin-data-set", "plugin-data-set-batch", "plugin-data-get", "plugin-data-list",
  "emit-event", "create-character", "update-character", "sync-characters", "list-characters",
  "get-character", "get-character-schema", "memory-search", "world-dimension-get", "world-dimension-list",
  "dimension-rule-get", "update-dimensions", "set-world-schema", "set-world-dimensions", "initialize-world",
  "delegate",
]);

// ============================================================================================
// Characters
// ============================================================================================

const NAME_DOTS_RE = /[·・‧•∙⋅]/g;
const APOSTROPHES_RE = /[‘’ʼ｀`]/g;
const SURROUNDING_RE = /^[\s"'“”「」『』《》〈〉]+|[\s"'“”「」『』《》〈〉]+$/g;

/**
 * The form every spelling of one name shares: NFKC, lower case, one space, no surrounding
 * quotes, one kind of name dot and apostrophe, no leading English "the". Titles are kept.
 */
export function characterNameKey(text) {
  return String(text ?? "")
    .normalize("NFKC")
    .replace(NAME_DOTS_RE, "·")
    .replace(APOSTROPHES_RE, "'")
    .replace(SURROUNDING_RE, "")
    .replace(/\s+/g, " ")
    .toLowerCase()
    .replace(/^the /, "");
}

const namesOf = (character) => [character.name, ...(character.aliases ?? [])];

function nameBigrams(key) {
  const units = Array.from(key.replace(/ /g, ""));
  if (units.length < 2) return new Set(units);
  return new Set(units.slice(0, -1).map((unit, i) => unit + units[i + 1]));
}

/** 1 when one key contains the other, else the Dice overlap of their character pairs. */
function nameSimilarity(a, b) {
  if (a.includes(b) || b.includes(a)) return 1;
  const left = nameBigrams(a);
  const right = nameBigrams(b);
  let shared = 0;
  for (const pair of left) if (right.has(pair)) shared++;
  return (2 * shared) / (left.size + right.size);
}

const CLOSE_NAME = 0.34;
const MAX_CLOSEST = 5;

/**
 * Who `query` names: `{status: "found", character, matchedBy: "id"|"name"|"alias"|"partial"}`,
 * `{status: "ambiguous", candidates}` when two characters share the name or alias, or
 * `{status: "missing", closest}` with up to five similar characters. `partial` (for reads
 * only) accepts the one character whose name contains the query or is contained in it.
 */
export function resolveCharacter(characters, query, options = {}) {
  const list = characters ?? [];
  const byId = list.find((c) => c.id === query);
  if (byId) return { status: "found", character: byId, matchedBy: "id" };
  const key = characterNameKey(query);
  if (!key) return { status: "missing", closest: [] };
  const named = list.filter((c) => characterNameKey(c.name) === key);
  if (named.length === 1) return { status: "found", character: named[0], matchedBy: "name" };
  if (named.length > 1) return { status: "ambiguous", candidates: named };
  const aliased = list.filter((c) => (c.aliases ?? []).some((alias) => characterNameKey(alias) === key));
  if (aliased.length === 1) return { status: "found", character: aliased[0], matchedBy: "alias" };
  if (aliased.length > 1) return { status: "ambiguous", candidates: aliased };
  const scored = list
    .map((character) => ({
      character,
      score: Math.max(0, ...namesOf(character).map(characterNameKey).filter(Boolean).map((name) => nameSimilarity(name, key))),
    }))
    .filter((entry) => entry.score >= CLOSE_NAME)
    .sort((a, b) => b.score - a.score);
  if (options.partial) {
    const containing = [...new Map(scored.filter((e) => e.score === 1).map((e) => [e.character.id, e.character])).values()];
    if (containing.length === 1) return { status: "found", character: containing[0], matchedBy: "partial" };
    if (containing.length > 1) return { status: "missing", closest: containing };
  }
  return { status: "missing", closest: scored.slice(0, MAX_CLOSEST).map((e) => e.character) };
}

/** A character as a model reads it: `Isolde (aka the keeper, 伊索德)`, or just the name. */
export function characterLabel(character) {
  if (!character) return "";
  return character.aliases?.length ? `${character.name} (aka ${character.aliases.join(", ")})` : character.name;
}

/** `current` plus the names of `added` the character does not have yet (by characterNameKey). */
export function mergeCharacterAliases(name, current, added) {
  const seen = new Set([characterNameKey(name)]);
  const merged = [];
  for (const alias of [...(current ?? []), ...(added ?? [])]) {
    const text = String(alias).trim().replace(/\s+/g, " ");
    const key = characterNameKey(text);
    if (!key || seen.has(key)) continue;
    seen.add(key);
    merged.push(text);
  }
  return merged;
}

/** The first alias of `character` another character already has as name or alias: `{alias, owner}`, else undefined. */
export function findCharacterAliasConflict(characters, character) {
  for (const alias of character?.aliases ?? []) {
    const key = characterNameKey(alias);
    const owner = (characters ?? []).find(
      (other) => other.id !== character.id && namesOf(other).some((name) => characterNameKey(name) === key),
    );
    if (owner) return { alias, owner };
  }
  return undefined;
}

const MAX_KNOWN_NAMES = 30;

/** English tool feedback for an unresolved name: the ambiguous candidates, or the closest / known names. */
export function describeUnresolvedCharacter(query, resolution, characters) {
  if (resolution.status === "ambiguous") {
    const who = resolution.candidates.map((c) => `${characterLabel(c)} [${c.id}]`).join("; ");
    return `"${query}" names ${resolution.candidates.length} characters: ${who}. Pass the id of the one you mean.`;
  }
  if (resolution.closest.length > 0) {
    return `Character "${query}" not found. Closest known names: ${resolution.closest.map(characterLabel).join("; ")}. If it is one of them, use that name.`;
  }
  const known = (characters ?? []).slice(0, MAX_KNOWN_NAMES).map(characterLabel);
  return known.length > 0
    ? `Character "${query}" not found. Characters in session: ${known.join("; ")}.`
    : `Character "${query}" not found. The session has no characters yet.`;
}

// A letter or digit of a script that separates words with spaces (not Han, kana or Hangul).
const SPACED_WORD_CHAR_RE = /^(?![\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}])[\p{L}\p{N}]$/u;
const inSpacedWord = (ch) => ch !== undefined && SPACED_WORD_CHAR_RE.test(ch);

function mentionSpans(text, name) {
  const spans = [];
  const units = Array.from(name);
  for (let start = text.indexOf(name); start !== -1; start = text.indexOf(name, start + 1)) {
    const end = start + name.length;
    const before = Array.from(text.slice(0, start)).pop();
    const after = Array.from(text.slice(end))[0];
    if (inSpacedWord(units[0]) && inSpacedWord(before)) continue;
    if (inSpacedWord(units[units.length - 1]) && inSpacedWord(after)) continue;
    spans.push({ start, end });
  }
  return spans;
}

/**
 * The ids of the characters `text` names by name or alias (any letter case). A name in a
 * spaced script must stand as a word ("Rin" is not in "spring"); a name inside a longer name
 * of someone else does not count unless it also stands alone.
 */
export function mentionedCharacterIds(text, characters) {
  const haystack = String(text ?? "").toLowerCase();
  const spans = [];
  if (haystack.length > 0) {
    for (const character of characters ?? []) {
      if (!character?.name || !character?.id) continue;
      const names = [character.name, ...(Array.isArray(character.aliases) ? character.aliases : [])];
      for (const name of names) {
        if (typeof name !== "string" || name.trim().length === 0) continue;
        for (const span of mentionSpans(haystack, name.trim().toLowerCase())) spans.push({ ...span, id: character.id });
      }
    }
  }
  const ids = new Set();
  for (const span of spans) {
    const covered = spans.some(
      (o) => o.id !== span.id && o.start <= span.start && o.end >= span.end && o.end - o.start > span.end - span.start,
    );
    if (!covered) ids.add(span.id);
  }
  return ids;
}

/**
 * Studio: the character the player acts as. An action naming a seat or a seated character
 * selects that seat's character; with no actions, the primary seat's (else the first seat's);
 * with no seats, the only `player` character if there is exactly one, else null.
 */
export function actingCharacterOf(actions, characters, seats) {
  const chars = Array.isArray(characters) ? characters : [];
  const list = Array.isArray(seats) ? seats : [];
  const byId = (id) => chars.find((c) => c && c.id === id) ?? null;
  for (const action of Array.isArray(actions) ? actions : []) {
    if (!action || typeof action !== "object") continue;
    if (action.seatId) {
      const seat = list.find((s) => s && s.id === action.seatId);
      if (seat) return byId(seat.characterId);
    }
    if (action.characterId) {
      const seat = list.find((s) => s && s.characterId === action.characterId);
      if (seat) return byId(seat.characterId);
    }
  }
  if (list.length > 0) {
    const seat = list.find((s) => s && s.primary === true) ?? list[0];
    return byId(seat.characterId);
  }
  const players = chars.filter((c) => c && c.type === "player");
  return players.length === 1 ? players[0] : null;
}

// ---- session summary ---------------------------------------------------------------------

/** The cap on `session.summary@1` entries across providers. */
export const MAX_SUMMARY_ENTRIES = 16;

/** A `session.summary@1` value: the earlier providers' entries, then these (at most 16 in all). */
export function appendSummaryEntries(previous, entries) {
  const earlier = previous && typeof previous === "object" && Array.isArray(previous.entries) ? previous.entries : [];
  return { entries: [...earlier, ...(entries ?? [])].slice(0, MAX_SUMMARY_ENTRIES) };
}

// ---- character sheets ----------------------------------------------------------------------

const PROFILES_BUDGET = 8000;
const PROFILE_PART_CAP = 400;
const capText = (text) => (text.length > PROFILE_PART_CAP ? `${text.slice(0, PROFILE_PART_CAP)}...` : text);
const escapeXml = (text) => text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
const hasFields = (fields) => fields !== null && typeof fields === "object" && Object.keys(fields).length > 0;

/** Number fields with a declared max shown with their range: `2/5`, or `2 (1–5)` when min is not 0. */
function withRanges(fields, schema) {
  if (!schema || !Array.isArray(schema.attributes)) return fields;
  const ranged = new Map(schema.attributes.filter((a) => a.type === "number" && typeof a.max === "number").map((a) => [a.id, a]));
  if (ranged.size === 0) return fields;
  return Object.fromEntries(
    Object.entries(fields).map(([key, value]) => {
      const def = ranged.get(key);
      if (!def || typeof value !== "number") return [key, value];
      const min = def.min ?? 0;
      return [key, min === 0 ? `${value}/${def.max}` : `${value} (${min}–${def.max})`];
    }),
  );
}

function profileLines(characters, player, locale, schema) {
  const lines = [];
  let unlisted = 0;
  let used = 0;
  for (const character of characters) {
    if (character.type === "player" || character === player) continue;
    const parts = [`- ${characterLabel(character)} [${character.type}]`];
    if (character.description) parts.push(capText(character.description));
    if (hasFields(character.fields)) parts.push(capText(JSON.stringify(withRanges(modelFacingJson(character.fields), schema))));
    const line = parts.join(" | ");
    // Once one profile does not fit, none after it is listed: the block keeps the cast's order.
    if (unlisted > 0 || used + line.length > PROFILES_BUDGET) {
      unlisted++;
      continue;
    }
    lines.push(line);
    used += line.length + 1;
  }
  // A count, not the names: a long cast's names alone could take the budget again.
  if (unlisted > 0) {
    lines.push(pickLocaleText(locale, `- （另有 ${unlisted} 个角色的档案未列出）`, `- (${unlisted} more profiles not shown)`));
  }
  return lines.join("\n");
}

/**
 * The session's characters as one turn-volatile `character-sheets` prompt segment: the
 * player's sheet in `<player-character>` and, with `profiles: true`, one line per other
 * character in `<character-profiles>`. `[]` when there is nothing to show. Options:
 * `profiles`, `locale`, `schema` (number ranges); studio: `seats` picks the player by seat.
 * A character's aliases follow its name (`"aliases"` in the sheet, `Name (aka A, B)` in a
 * profile line); profiles past the budget are counted in one line, in the locale's language.
 */
export function characterSheetSegments(characters, options = {}) {
  const list = Array.isArray(characters) ? characters : [];
  const blocks = [];
  const player = Array.isArray(options.seats)
    ? actingCharacterOf([], list, options.seats)
    : list.find((c) => c && c.type === "player");
  if (player) {
    const { id, name, aliases, type, description, fields } = player;
    // Aliases right after the name, and only when there are some.
    const named = Array.isArray(aliases) && aliases.length > 0 ? { aliases } : {};
    const projected = modelFacingJson({ id, name, ...named, type, description, fields });
    if (hasFields(projected.fields)) projected.fields = withRanges(projected.fields, options.schema);
    blocks.push(`<player-character>\n${escapeXml(JSON.stringify(projected, null, 2))}\n</player-character>`);
  }
  const profiles = options.profiles ? profileLines(list, player, options.locale, options.schema) : "";
  if (profiles) blocks.push(`<character-profiles>\n${escapeXml(profiles)}\n</character-profiles>`);
  if (blocks.length === 0) return [];
  return [{ id: "character-sheets", content: blocks.join("\n"), position: "system", audience: "self", volatility: "turn" }];
}

// ---- studio: character field checks without zod --------------------------------------------

/** Studio: problems of character fields against a character schema, as sentences. */
export function validateCharacterFields(fields, schema) {
  const problems = [];
  const attrs = (schema && schema.attributes) || [];
  for (const [key, value] of Object.entries(fields || {})) {
    const attr = attrs.find((a) => a.id === key);
    if (!attr) {
      problems.push(`unknown field ${key}`);
      continue;
    }
    const t = attr.type;
    const ok = t === "string" ? typeof value === "string"
      : t === "number" ? typeof value === "number" && Number.isFinite(value)
      : t === "boolean" ? typeof value === "boolean"
      : t === "enum" ? (attr.options || []).some((o) => (o && o.value !== undefined ? o.value : o) === value)
      : t === "array" ? Array.isArray(value)
      : t === "object" || t === "map" ? isPlainObject(value)
      : true;
    if (!ok) {
      problems.push(`field ${key} must be ${t}`);
      continue;
    }
    if (t === "number" && attr.min !== undefined && value < attr.min) problems.push(`field ${key} is below ${attr.min}`);
    if (t === "number" && attr.max !== undefined && value > attr.max) problems.push(`field ${key} is above ${attr.max}`);
  }
  return problems;
}

// ============================================================================================
// Narrative review (perspective policy through public hooks)
// ============================================================================================

const QUOTE_PAIRS = { "“": "”", "‘": "’", "「": "」", "『": "』", "«": "»", '"': '"', "'": "'" };
const isLetter = (ch) => ch !== undefined && /\p{L}/u.test(ch);

/**
 * The narration of a text: quoted speech replaced by a space, so pronouns inside quotes are
 * not checked. An apostrophe between letters is not a quote; an unclosed quote leaves the
 * rest of the text in the narration.
 */
export function outsideDialogue(text) {
  const s = String(text ?? "");
  const closers = [];
  let narration = "";
  let openedAt = -1;
  for (let i = 0; i < s.length; i++) {
    const ch = s[i];
    const apostrophe = ch === "'" && isLetter(s[i - 1]) && isLetter(s[i + 1]);
    if (!apostrophe && closers.length && ch === closers[closers.length - 1]) {
      closers.pop();
      narration += " ";
      if (!closers.length) openedAt = -1;
    } else if (!apostrophe && QUOTE_PAIRS[ch] && (ch !== "'" || !isLetter(s[i - 1]))) {
      if (!closers.length) openedAt = i;
      closers.push(QUOTE_PAIRS[ch]);
    } else if (!closers.length) narration += ch;
  }
  return openedAt >= 0 ? narration + s.slice(openedAt) : narration;
}

const PERSPECTIVE_FORBIDDEN = {
  first: /[你妳您]|\b(?:you|your|yours|yourself|yourselves)\b/iu,
  second: /我|\b(?:I|me|my|mine|myself)\b/iu,
  third: /[我你妳您]|\b(?:I|me|my|mine|myself|we|us|our|ours|you|your|yours)\b/iu,
};

const PERSON_NAMES_ZH = { first: "第一人称", second: "第二人称", third: "第三人称" };

/**
 * Why narration (outside quotes) breaks a `first` / `second` / `third` person perspective,
 * with the passage around the first offending pronoun; `undefined` when it does not. The
 * sentence is English, or Chinese with `language` `"zh"`.
 */
export function perspectiveError(text, person, language = "en") {
  const narration = outsideDialogue(text).replace(/自我|忘我|无我|你来我往|尔虞我诈|迷你/g, "");
  const checked = PERSPECTIVE_FORBIDDEN[person] ? person : "second";
  const match = narration.match(PERSPECTIVE_FORBIDDEN[checked]);
  if (!match) return undefined;
  const start = Math.max(0, (match.index ?? 0) - 18);
  const passage = narration.slice(start, start + 65);
  return language === "zh"
    ? `叙述违反了${PERSON_NAMES_ZH[checked]}视角：${passage}\n只改正叙述部分；引号内的对白保留说话人自己的人称。`
    : `Narration violates ${checked}-person perspective near: ${passage}. Correct the narration only; quoted speech keeps its speaker's pronouns.`;
}

const PERSPECTIVE_RULES = {
  first: {
    zh: "以玩家角色的第一人称（我、我的）叙述；这个“我”是玩家角色，不是助手或作者。例如：她看向我，灯光落在她的衣袖上。",
    en: "Narrate in the first person of the player character (I, me, my); that \"I\" is the player character, never the assistant or the author. For example: She looks at me; lamplight falls on her sleeve.",
  },
  second: {
    zh: "以第二人称（你、你的）称呼玩家角色。例如：她看向你，灯光落在她的衣袖上。",
    en: "Address the player character in the second person (you, your). For example: She looks at you; lamplight falls on her sleeve.",
  },
  third: {
    zh: "用玩家角色的名字和第三人称代词叙述，只写该角色能感知的内容；不要用“我”或“你”称呼玩家。",
    en: "Refer to the player character by name and with third-person pronouns, keeping to what that character can perceive; never call the player I or you.",
  },
};

/**
 * Every sentence the review adds, per language. Chinese sentences hold no Latin words except
 * a tool's name in backticks: a model answering a Chinese prompt copies what it is shown.
 */
const REVIEW_TEXT = {
  zh: {
    player: (name) => `玩家角色：${JSON.stringify(name)}。`,
    tail: " 引号内的对白保留说话人自己的人称。不要复述玩家的输入，也不要替玩家增加行动或想法。查资料时只调用工具，不写准备性的说明；拿到结果后直接写场景，不写查证或写作过程。",
    empty: "现在根据查到的内容写出故事正文，不要只以工具调用结束这一轮。写出正文之前不要调用 `runtime-done`。",
    tags: "只输出游戏内的故事正文，不要带内部标签或说明。",
  },
  en: {
    player: (name) => `Player character: ${JSON.stringify(name)}. `,
    tail: " Quoted speech keeps each speaker's own person. Do not repeat the player's input or add actions or thoughts for the player. While looking things up, call the tools without commentary; afterwards write the scene itself, with no notes about lookups or writing.",
    empty: "Write the story now from what the lookups returned; do not end the turn with a tool call alone. Do not call `runtime-done` before the story text is written.",
    tags: "Output only the in-world story, without internal tags or commentary.",
  },
};

const INTERNAL_TAGS_RE = /<\/?(?:system|system_warning|analysis|thinking|runtime-inputs|available-events)\b/i;

const personOf = (ctx) => {
  const value = ctx?.getOwnSettings?.()?.narrativePerson;
  return value === "first" || value === "third" ? value : "second";
};

/**
 * The language of the prompt body the review writes into: the session's content locale
 * (`ctx.locale`; Simplified Chinese reads the Chinese body, every other locale the English
 * one). A host that passes no locale: the Chinese body's headings in the request's system
 * messages, as earlier hosts were read.
 */
function reviewLanguage(ctx, messages) {
  if (typeof ctx?.locale === "string" && ctx.locale.length > 0) return pickLocaleText(ctx.locale, "zh", "en");
  const zh = (messages ?? []).some((m) => m?.role === "system" && typeof m.content === "string" && /输出要求|叙事规则/.test(m.content));
  return zh ? "zh" : "en";
}

/**
 * The plugin whose runtime raised the hook event: `ctx.pluginId`, as the host passes it for
 * every hook; earlier hosts named it only in the payload.
 */
const runtimePluginOf = (ctx, payload) => ctx?.pluginId ?? payload?.pluginId;

/**
 * Hook handlers that keep a plugin's narration in the perspective its `narrativePerson`
 * setting names (`second` by default), for the runtimes of `pluginId` only: `context`
 * remembers the character the player acts as, `prepare` adds the rule to the model request,
 * `review` asks for a correction when a response breaks it or is empty, `cleanup` forgets the
 * turn. Every sentence it adds is in the language of the session's prompt body.
 */
export function createNarrativeReview(pluginId) {
  const players = new Map();
  const keyOf = (ctx) => `${ctx.sessionId}\0${ctx.turnId}\0${ctx.runtimeId}`;
  const ours = (ctx, payload) => runtimePluginOf(ctx, payload) === pluginId;
  return {
    context(ctx, payload) {
      if (ours(ctx, payload)) {
        // The seed page's rule for who the player is: the primary seat's character, else the
        // only player character; never the first of several.
        const player = actingCharacterOf([], payload?.characters, payload?.seats ?? ctx?.world?.seats);
        if (player?.name) players.set(keyOf(ctx), player.name);
      }
      return { action: "continue" };
    },
    cleanup(ctx) {
      const prefix = `${ctx.sessionId}\0${ctx.turnId}\0`;
      for (const key of [...players.keys()]) if (key.startsWith(prefix)) players.delete(key);
      return { action: "continue" };
    },
    prepare(ctx, payload) {
      if (!ours(ctx, payload)) return { action: "continue" };
      const messages = Array.isArray(payload?.messages) ? payload.messages : [];
      const lang = reviewLanguage(ctx, messages);
      const text = REVIEW_TEXT[lang];
      const player = players.get(keyOf(ctx));
      const instruction = (player ? text.player(player) : "") + PERSPECTIVE_RULES[personOf(ctx)][lang] + text.tail;
      // The request keeps streaming: the review reads the finished response either way.
      return { action: "continue", replace: { messages: [...messages, { role: "system", content: instruction }] } };
    },
    review(ctx, payload) {
      if (!ours(ctx, payload)) return { action: "continue" };
      const response = payload.response;
      // Prose written next to a lookup is not the story; it must not seed the final answer.
      if ((response.toolCalls ?? []).some((call) => call.name !== "runtime-done")) {
        return { action: "continue", replace: { response: { ...response, content: null } } };
      }
      const lang = reviewLanguage(ctx, payload.messages);
      const content = response.content ?? "";
      let correction = payload.correction;
      if (!correction) {
        if (!content.trim()) correction = REVIEW_TEXT[lang].empty;
        else {
          correction = [
            INTERNAL_TAGS_RE.test(content) ? REVIEW_TEXT[lang].tags : undefined,
            perspectiveError(content, personOf(ctx), lang),
          ].filter(Boolean).join("\n");
        }
      }
      return correction ? { action: "continue", replace: { correction } } : { action: "continue" };
    },
  };
}

// ============================================================================================
// JSON text a model wrote
// ============================================================================================

const MAX_EXTRA_CLOSERS = 4;
const isSpace = (ch) => ch === " " || ch === "\t" || ch === "\n" || ch === "\r";

/** Rewrites near-JSON into JSON, or returns undefined when a fault is not one of the known slips. */
function repairJsonText(text, complete) {
  let i = 0;
  let out = "";
  const stack = []; // frames: { kind: "obj" | "arr", state }
  let topDone = false;
  let elementRepairs = 0;
  let opens = 0;
  let closes = 0;
  let appendedObjectClosers = 0;

  const skipSpace = () => {
    while (i < text.length && isSpace(text[i])) i++;
  };
  const nextSolid = (from) => {
    let j = from;
    while (j < text.length && isSpace(text[j])) j++;
    return j;
  };
  const top = () => stack[stack.length - 1];
  const valueDone = () => {
    if (stack.length === 0) topDone = true;
    else top().state = "after";
  };
  const readKey = () => {
    // Keys are never rewritten: plain JSON string syntax.
    let j = i + 1;
    while (j < text.length && text[j] !== '"') j += text[j] === "\\" ? 2 : 1;
    if (j >= text.length) return false;
    out += text.slice(i, j + 1);
    i = j + 1;
    return true;
  };
  const readValueString = () => {
    // A quote that is not followed by `,` `}` `]` `:` or the end stands inside the text;
    // such quotes must come in pairs that hug their words ("no", not " no ").
    let j = i + 1;
    let piece = '"';
    let innerOpen = false;
    while (j < text.length) {
      const ch = text[j];
      if (ch === "\\") {
        piece += text.slice(j, j + 2);
        j += 2;
        continue;
      }
      if (ch === '"') {
        const k = nextSolid(j + 1);
        const after = text[k];
        if (k >= text.length || after === "," || after === "}" || after === "]" || after === ":") {
          if (innerOpen) return false;
          out += `${piece}"`;
          i = j + 1;
          return true;
        }
        if (!innerOpen) {
          if (j + 1 >= text.length || isSpace(text[j + 1])) return false;
          innerOpen = true;
        } else {
          if (isSpace(text[j - 1])) return false;
          innerOpen = false;
        }
        piece += '\\"';
        j++;
        continue;
      }
      piece += ch;
      j++;
    }
    return false;
  };
  const startValue = () => {
    const ch = text[i];
    if (ch === "{") {
      opens++;
      out += "{";
      i++;
      stack.push({ kind: "obj", state: "first" });
      return true;
    }
    if (ch === "[") {
      out += "[";
      i++;
      stack.push({ kind: "arr", state: "first" });
      return true;
    }
    if (ch === '"') {
      if (!readValueString()) return false;
      valueDone();
      return true;
    }
    const literal = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null/y;
    literal.lastIndex = i;
    const m = literal.exec(text);
    if (!m) return false;
    out += m[0];
    i += m[0].length;
    valueDone();
    return true;
  };
  const closeFrame = (frame) => {
    out += frame.kind === "obj" ? "}" : "]";
    stack.pop();
    valueDone();
  };
  // A closer of the wrong kind: at the very end it stands for the right one, elsewhere it is dropped.
  const wrongCloser = (frame) => {
    if (text[i] === "}") closes++;
    i++;
    if (nextSolid(i) >= text.length) closeFrame(frame);
  };

  for (;;) {
    skipSpace();
    if (i >= text.length) break;
    const ch = text[i];
    if (topDone) {
      // Closing brackets a model added after a complete value.
      let extra = 0;
      while (i < text.length) {
        if (isSpace(text[i])) i++;
        else if ((text[i] === "}" || text[i] === "]") && extra < MAX_EXTRA_CLOSERS) {
          if (text[i] === "}") closes++;
          extra++;
          i++;
        } else return undefined;
      }
      break;
    }
    const frame = top();
    if (!frame) {
      if (!startValue()) return undefined;
      continue;
    }
    if (frame.kind === "obj") {
      if (frame.state === "first" || frame.state === "key") {
        if (ch === "}" && frame.state === "first") {
          closes++;
          i++;
          closeFrame(frame);
          continue;
        }
        if (ch === '"') {
          // `{"{"id"…`: the opening of the object written twice.
          if (frame.state === "first" && text.startsWith('"{"', i) && text[nextSolid(i + 3)] !== ":") i += 2;
          if (!readKey()) return undefined;
          frame.state = "colon";
          continue;
        }
        if (ch === "{" && frame.state === "key" && stack.length >= 2 && stack[stack.length - 2].kind === "arr") {
          // An array element left open where the next element starts: close it.
          elementRepairs++;
          out = `${out.replace(/,\s*$/, "")}},`;
          stack.pop();
          top().state = "value";
          continue;
        }
        return undefined;
      }
      if (frame.state === "colon") {
        if (ch !== ":") return undefined;
        out += ":";
        i++;
        frame.state = "value";
        continue;
      }
      if (frame.state === "value") {
        if (!startValue()) return undefined;
        continue;
      }
      // after a member
      if (ch === ",") {
        out += ",";
        i++;
        frame.state = "key";
        continue;
      }
      if (ch === "}") {
        closes++;
        i++;
        closeFrame(frame);
        continue;
      }
      if (ch === "]") {
        wrongCloser(frame);
        continue;
      }
      return undefined;
    }
    // array
    if (frame.state === "first" || frame.state === "value") {
      if (ch === "]" && frame.state === "first") {
        i++;
        closeFrame(frame);
        continue;
      }
      if (!startValue()) return undefined;
      continue;
    }
    if (ch === ",") {
      out += ",";
      i++;
      frame.state = "value";
      continue;
    }
    if (ch === "]") {
      i++;
      closeFrame(frame);
      continue;
    }
    if (ch === "}") {
      wrongCloser(frame);
      continue;
    }
    return undefined;
  }
  if (!topDone) {
    // Text the model ended itself may leave brackets open after a finished value.
    if (!complete || stack.length === 0 || top().state !== "after") return undefined;
    while (stack.length) {
      const frame = stack.pop();
      if (frame.kind === "obj") appendedObjectClosers++;
      out += frame.kind === "obj" ? "}" : "]";
    }
  }
  // Closing an open element is right only when exactly that many `}` are missing.
  if (elementRepairs > 0 && elementRepairs !== opens - closes - appendedObjectClosers) return undefined;
  return out;
}

/**
 * Parses JSON a model wrote. Valid JSON is parsed as it is; otherwise a few known slips are
 * settled (closing brackets added after the value, unescaped quote pairs inside a string
 * value, an array element left open, a closing bracket of the wrong kind, an object opening
 * written twice) and, with `complete: true`, brackets left open after a finished value are
 * closed. Any other fault throws the parser's own error for the original text.
 */
export function parseJsonText(text, options = {}) {
  const source = String(text);
  let original;
  try {
    return JSON.parse(source);
  } catch (error) {
    original = error;
  }
  const repaired = repairJsonText(source, options.complete === true);
  if (repaired !== undefined) {
    try {
      return JSON.parse(repaired);
    } catch {
      /* fall through to the original error */
    }
  }
  throw original;
}

// ============================================================================================
// Tools (zod)
// ============================================================================================

/** The error a tool throws when its parameters fail validation: `code`, `details: [{path, message}]`. */
export class ToolValidationError extends Error {
  constructor(zodError, messages) {
    super("Tool parameter validation failed");
    this.name = "ToolValidationError";
    this.code = "VALIDATION_ERROR";
    this.details = (zodError?.issues ?? []).map((issue) => {
      const path = (issue.path ?? []).join(".");
      const better = issue.code === "invalid_type" && messages ? messages.get(path) : undefined;
      return { path: path || "(root)", message: better ?? issue.message };
    });
  }
}

const isStructure = (value, expected) => (expected === "array" ? Array.isArray(value) : isPlainObject(value));

function jsonTextProblem(text, expected, parseError) {
  const what = expected === "array" ? "an array" : "an object";
  const send = `Send ${expected === "array" ? "the array" : "the object"} itself as the value, not a string that contains it.`;
  if (parseError === undefined) return `Expected ${what}, but received text that holds another JSON type. ${send}`;
  const reason = errorText(parseError);
  const position = Number(/position (\d+)/.exec(reason)?.[1]);
  const near = Number.isInteger(position) ? ` near \`${text.slice(Math.max(0, position - 40), position + 20)}\`` : "";
  return `Expected ${what}, but received text that is not valid JSON: ${reason.slice(0, 160)}${near}. ${send}`;
}

/** Parses array/object arguments a model sent as JSON text where the schema wants the structure. */
function parseStructuredText(params, issues) {
  const problems = new Map();
  let repaired;
  for (const issue of issues) {
    if (issue.code !== "invalid_type" || (issue.expected !== "array" && issue.expected !== "object") || !issue.path?.length) continue;
    if (repaired === undefined) repaired = copyJson(params);
    let parent = repaired;
    for (const key of issue.path.slice(0, -1)) parent = parent?.[key];
    if (parent === null || typeof parent !== "object") continue;
    const key = issue.path[issue.path.length - 1];
    const text = parent[key];
    if (typeof text !== "string" || !/^\s*[[{]/.test(text)) continue;
    const path = issue.path.join(".");
    try {
      const parsed = parseJsonText(text, { complete: true });
      if (isStructure(parsed, issue.expected)) Object.defineProperty(parent, key, { value: parsed, writable: true, enumerable: true, configurable: true });
      else problems.set(path, jsonTextProblem(text, issue.expected));
    } catch (error) {
      problems.set(path, jsonTextProblem(text, issue.expected, error));
    }
  }
  return { repaired, problems };
}

const SCHEMA_MAPS = new Set(["properties", "$defs", "definitions"]);
const SCHEMA_LISTS = new Set(["anyOf", "oneOf", "allOf", "prefixItems"]);
const SCHEMA_CHILDREN = new Set(["items", "additionalProperties", "propertyNames", "contains", "not", "if", "then", "else"]);

/** Drops `pattern`s that use Unicode property escapes (providers reject them without the `u` flag). */
function portablePatterns(schema) {
  if (!isPlainObject(schema)) return schema;
  const entries = [];
  for (const [key, value] of Object.entries(schema)) {
    if (key === "pattern" && typeof value === "string" && /\\[pP]\{/.test(value)) continue;
    if (SCHEMA_MAPS.has(key) && value && typeof value === "object") {
      entries.push([key, Object.fromEntries(Object.entries(value).map(([name, child]) => [name, portablePatterns(child)]))]);
    } else if (SCHEMA_LISTS.has(key) && Array.isArray(value)) entries.push([key, value.map(portablePatterns)]);
    else if (SCHEMA_CHILDREN.has(key)) entries.push([key, portablePatterns(value)]);
    else entries.push([key, value]);
  }
  return Object.fromEntries(entries);
}

/**
 * A Covel tool module from `{name, description, parameters: zodSchema, execute}`: its JSON
 * Schema (input side, no `$schema`, portable patterns) and an `execute` that validates the
 * parameters first (parsing array/object arguments sent as JSON text) and throws
 * ToolValidationError when they do not fit.
 */
export function tool(definition) {
  let jsonSchema;
  try {
    const params = definition.parameters;
    const raw = typeof params.toJSONSchema === "function" ? params.toJSONSchema({ io: "input" }) : z.toJSONSchema(params, { io: "input" });
    const { $schema: _unused, ...rest } = raw;
    jsonSchema = portablePatterns(rest);
  } catch (cause) {
    const error = new Error(`Tool "${definition.name}" parameters cannot be represented as JSON Schema: ${errorText(cause)}`);
    error.cause = cause;
    throw error;
  }
  return {
    _type: "covel-tool",
    name: definition.name,
    description: definition.description,
    parametersSchema: definition.parameters,
    jsonSchema,
    async execute(params, context) {
      let result = definition.parameters.safeParse(params);
      let problems;
      if (!result.success) {
        const fixed = parseStructuredText(params, result.error.issues);
        problems = fixed.problems;
        if (fixed.repaired !== undefined) result = definition.parameters.safeParse(fixed.repaired);
      }
      if (!result.success) throw new ToolValidationError(result.error, problems);
      return definition.execute(result.data, context);
    },
  };
}

// ---- built-in UI tools -----------------------------------------------------------------------

function buildUiTools() {
  const partStatus = z.enum(["pending", "streaming", "success", "error", "paused"]);
  const part = z.object({
    id: z.string().min(1).describe("Stable id of the part"),
    type: z.string().min(1).describe("Kind of part: text, image, audio, video, card, …"),
    status: partStatus.default("success").describe("State of this part"),
    content: z.unknown().optional().describe("What the part shows; its shape depends on type"),
    retry: z.object({ count: z.number().int().min(0), lastError: z.string().optional() }).optional(),
  });
  const renderUITool = tool({
    name: "render-ui",
    description: "Show one UI block made of parts, each with its own status; mixes text, images, cards, audio and other media.",
    parameters: z.object({
      parts: z.array(part).min(1).describe("The parts of the block"),
      layout: z.enum(["stream", "split", "overlay"]).optional().describe("How the parts are arranged"),
    }),
    execute: async (params) => ({ rendered: true, ui: [{ parts: params.parts, ...(params.layout ? { layout: params.layout } : {}) }] }),
  });

  const option = z.union([
    z.string(),
    z.object({
      value: z.string().min(1).describe("The submitted value, also the text the narrative template receives"),
      label: z.string().min(1).describe("The longer text the player sees in the list"),
    }),
  ]);
  const optionValues = (field) => (field.options ?? []).map((o) => (typeof o === "string" ? o : o.value));
  const field = z
    .object({
      type: z.enum(["text", "textarea", "select", "checkbox", "number"]),
      name: z.string().min(1),
      label: z.string().min(1),
      placeholder: z.string().optional(),
      options: z
        .array(option)
        .optional()
        .describe("Choices of a select. A string is both shown and submitted; use {value, label} for a short submitted value with a longer label."),
      required: z.boolean().optional(),
      defaultValue: z.union([z.string(), z.number().finite(), z.boolean()]).optional(),
      min: z.number().finite().optional(),
      max: z.number().finite().optional(),
      step: z.number().finite().positive().optional(),
    })
    .superRefine((f, ctx) => {
      if (f.min !== undefined && f.max !== undefined && f.min > f.max) {
        ctx.addIssue({ code: "custom", path: ["max"], message: "max must be at least min" });
      }
      if (f.defaultValue !== undefined) {
        const expected = f.type === "number" ? "number" : f.type === "checkbox" ? "boolean" : "string";
        // Older packages could declare defaults only as strings.
        const legacy =
          typeof f.defaultValue === "string" &&
          ((f.type === "number" && f.defaultValue.trim() !== "" && Number.isFinite(Number(f.defaultValue))) ||
            (f.type === "checkbox" && (f.defaultValue === "true" || f.defaultValue === "false")));
        if (typeof f.defaultValue !== expected && !legacy) {
          ctx.addIssue({ code: "custom", path: ["defaultValue"], message: `defaultValue must be ${expected}` });
        }
      }
      if (f.type !== "select" || f.defaultValue === undefined) return;
      const values = optionValues(f);
      if (!values.includes(String(f.defaultValue))) {
        ctx.addIssue({
          code: "custom",
          path: ["defaultValue"],
          message: `select defaultValue ${JSON.stringify(f.defaultValue)} must match a declared option value exactly. The option values are: ${values.map((v) => JSON.stringify(v)).join(", ")}`,
        });
      }
    });
  const createFormTool = tool({
    name: "create-form",
    description:
      "Ask the player to fill in a form. The client draws it; the submitted values reach the next turn as {{ player.lastFormValues }}, where the plugin that asked reads them and acts (for example by calling create-character). Use it for character creation, confirmations or any structured input.",
    parameters: z.object({
      formId: z.string().min(1).describe("Unique id of the form"),
      title: z.string().min(1).describe("Title of the form"),
      fields: z.array(field).min(1).describe("The fields"),
      submitLabel: z.string().min(1).describe("Text of the submit button"),
      narrativeTemplate: z
        .string()
        .describe("Narrative with {{fieldName}} placeholders, filled with the submitted values. A select supplies its option's value, so give long options a short value and put the explanation in label."),
      validation: z.object({ name: z.string().min(1), data: z.unknown().optional() }).optional(),
      submitBehavior: z
        .object({ echoFilledNarrative: z.boolean().optional(), immediate: z.boolean().optional() })
        .optional()
        .describe("Optional: echo the filled narrative, or submit at once"),
      notice: z
        .string()
        .min(1)
        .optional()
        .describe("Optional note above the fields, in the player's language, e.g. why the form is shown again"),
    }),
    execute: async (params) => {
      for (const f of params.fields) {
        if (f.type !== "select" || f.defaultValue === undefined) continue;
        if (!optionValues(f).includes(String(f.defaultValue))) {
          throw new Error(`select defaultValue must match a declared option value for ${f.name}`);
        }
      }
      return {
        created: true,
        formId: params.formId,
        fieldCount: params.fields.length,
        interaction: {
          type: "form",
          interactionId: params.formId,
          title: params.title,
          fields: params.fields,
          validation: params.validation,
          submitLabel: params.submitLabel,
          narrativeTemplate: params.narrativeTemplate,
          submitBehavior: params.submitBehavior,
          ...(params.notice ? { notice: params.notice } : {}),
        },
      };
    },
  });

  const choice = z.object({
    id: z.string().min(1).describe("Unique id of the choice"),
    label: z.string().min(1).describe("Text of the choice"),
    description: z.string().optional().describe("More about the choice"),
    category: z.string().optional().describe("Kind of choice, e.g. safe, aggressive, creative, wild"),
  });
  const createChoicesTool = tool({
    name: "create-choices",
    description: "Offer the player a list of choices at a decision point; the chosen one reaches the next turn's context.",
    parameters: z.object({
      choiceId: z.string().min(1).describe("Unique id of this set of choices"),
      prompt: z.string().min(1).describe('The question, e.g. "What do you do?"'),
      choices: z.array(choice).min(2).describe("At least two choices"),
    }),
    execute: async (params) => ({
      created: true,
      choiceId: params.choiceId,
      choiceCount: params.choices.length,
      interaction: { type: "choice", interactionId: params.choiceId, prompt: params.prompt, choices: params.choices },
    }),
  });

  const createNotificationTool = tool({
    name: "create-notification",
    description: "Show the player a notification: a change of state, an item gained, an event that fired.",
    parameters: z.object({
      level: z.enum(["info", "success", "warning", "error"]).describe("Level of the notification"),
      title: z.string().min(1).describe("Title"),
      message: z.string().min(1).describe("Body text"),
    }),
    execute: async (params) => ({
      notified: true,
      level: params.level,
      ui: [
        {
          parts: [
            {
              id: "notification-1",
              type: "notification",
              status: "success",
              content: { type: "Alert", props: { level: params.level, title: params.title, message: params.message } },
            },
          ],
        },
      ],
    }),
  });
  return { renderUITool, createFormTool, createChoicesTool, createNotificationTool };
}

const UI_TOOLS = ZOD_READY ? buildUiTools() : {};
/** The `render-ui` tool: one UI block of independently-statused parts. */
export const renderUITool = UI_TOOLS.renderUITool ?? withZod("renderUITool", () => null);
/** The `create-form` tool: a form whose values reach the next turn. */
export const createFormTool = UI_TOOLS.createFormTool ?? withZod("createFormTool", () => null);
/** The `create-choices` tool: a set of choices for a decision point. */
export const createChoicesTool = UI_TOOLS.createChoicesTool ?? withZod("createChoicesTool", () => null);
/** The `create-notification` tool: an alert shown in the client. */
export const createNotificationTool = UI_TOOLS.createNotificationTool ?? withZod("createNotificationTool", () => null);
/** The four built-in UI tools. */
export const builtinUITools = [renderUITool, createFormTool, createChoicesTool, createNotificationTool];

// ---- character attribute schemas -----------------------------------------------------------

function attributeDescription(attr) {
  const parts = [resolveI18nText(attr.name) ?? "", `[${attr.category}]`];
  if (attr.type === "number") {
    const bounds = [];
    if (attr.min !== undefined) bounds.push(`min=${attr.min}`);
    if (attr.max !== undefined) bounds.push(`max=${attr.max}`);
    if (bounds.length) parts.push(`(${bounds.join(", ")})`);
  } else if (attr.type === "enum" && attr.options?.length) parts.push(`∈ [${attr.options.join(" | ")}]`);
  else if (attr.type === "array") parts.push(`(array of ${attr.itemType ?? "string"})`);
  else if (attr.type === "map") parts.push(`(map → ${attr.valueType ?? "string"})`);
  return parts.join(" ");
}

function attributeSchema(attr) {
  switch (attr.type) {
    case "string":
      return z.string();
    case "number": {
      let s = z.number();
      if (typeof attr.min === "number") s = s.min(attr.min);
      if (typeof attr.max === "number") s = s.max(attr.max);
      return s;
    }
    case "boolean":
      return z.boolean();
    case "enum":
      return attr.options?.length ? z.enum(attr.options) : z.string();
    case "array":
      return z.array(attr.itemType === "number" ? z.number() : z.string());
    case "object": {
      if (!attr.subSchema?.length) return z.record(z.string(), z.unknown());
      const shape = {};
      for (const sub of attr.subSchema) setOwn(shape, sub.id, attributeSchema(sub).optional().describe(attributeDescription(sub)));
      return z.object(shape).catchall(z.unknown());
    }
    case "map": {
      const vt = attr.valueType ?? "string";
      return z.record(z.string(), vt === "number" ? z.number() : vt === "boolean" ? z.boolean() : z.string());
    }
    default:
      return z.unknown();
  }
}

/**
 * A permissive zod schema for a character's `fields` from a CharacterAttributeSchema: every
 * attribute typed and optional, unknown keys accepted. `null` for an empty schema.
 */
export function buildFieldsZodFromSchema(schema) {
  if (!schema?.attributes?.length) return null;
  if (!ZOD_READY) throw new Error("buildFieldsZodFromSchema needs the zod 4 package, which this host does not provide");
  const shape = {};
  for (const attr of schema.attributes) setOwn(shape, attr.id, attributeSchema(attr).optional().describe(attributeDescription(attr)));
  return z.object(shape).catchall(z.unknown());
}

/** The error for character fields that do not match the world's attribute schema (`issues: [{path, message}]`). */
export class CharacterFieldValidationError extends Error {
  constructor(issues) {
    super(
      `Character attributes do not match the world schema: ${issues.map((i) => `${i.path}: ${i.message}`).join("; ")}. Correct the submitted fields before continuing.`,
    );
    this.name = "CharacterFieldValidationError";
    this.issues = issues;
  }
}

/** Throws CharacterFieldValidationError when `fields` do not fit the declared attribute types. */
export function assertCharacterFields(fields, schema) {
  const validator = schema ? buildFieldsZodFromSchema(schema) : null;
  if (!validator) return;
  const parsed = validator.safeParse(fields);
  if (!parsed.success) {
    throw new CharacterFieldValidationError(parsed.error.issues.map((issue) => ({ path: issue.path.join("."), message: issue.message })));
  }
}

/**
 * A copy of `fields` with each absent top-level attribute set to its declared `defaultValue`,
 * checked against the schema (throws CharacterFieldValidationError). A null schema changes nothing.
 */
export function mergeSchemaDefaults(fields, schema) {
  const base = isPlainObject(fields) ? { ...fields } : {};
  if (!schema || !Array.isArray(schema.attributes)) return base;
  for (const attr of schema.attributes) {
    // Attribute ids are the world's data: `constructor` is absent unless the fields have it.
    if (attr && attr.defaultValue !== undefined && (!hasOwn(base, attr.id) || base[attr.id] === undefined)) {
      setOwn(base, attr.id, attr.defaultValue);
    }
  }
  assertCharacterFields(base, schema);
  return base;
}
