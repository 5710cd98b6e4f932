// @covel/plugin-handlers-utils — the public plugin SDK, as the studio provides it.
// The kernel's Rust side implements the same rules (covel_js::sdk tests check both against
// one table of vectors), so a value computed here matches what the studio computes.

/** CJK ranges counted one token per UTF-16 unit. */
function isCjkUnit(code) {
  return (code >= 0x2e80 && code <= 0x9fff) || (code >= 0xac00 && code <= 0xd7af) ||
    (code >= 0xf900 && code <= 0xfaff) || (code >= 0xff00 && code <= 0xffef);
}

/** CJK units count one each; everything else one token per four UTF-16 units, rounded up. */
export function estimateTokens(text) {
  const s = String(text ?? "");
  let cjk = 0;
  for (let i = 0; i < s.length; i++) if (isCjkUnit(s.charCodeAt(i))) cjk++;
  return cjk + Math.ceil((s.length - cjk) / 4);
}

export const FRAMEWORK_TOOL_NAMES = Object.freeze([
  "runtime-done", "emit-event", "list-characters", "get-character", "memory-search",
  "world-dimension-get", "world-dimension-list", "dimension-rule-get", "update-dimensions",
  "set-world-schema", "set-world-dimensions", "initialize-world", "delegate",
]);

/** Known locales and their fallbacks, most specific first. */
export const LOCALE_REGISTRY = Object.freeze({
  en: ["en"],
  zh: ["zh", "zh-CN", "en"],
  "zh-CN": ["zh-CN", "zh", "en"],
  "zh-TW": ["zh-TW", "zh", "en"],
  ja: ["ja", "en"],
  ko: ["ko", "en"],
  ru: ["ru", "en"],
  fr: ["fr", "en"],
  de: ["de", "en"],
  es: ["es", "en"],
});
export const DEFAULT_LOCALE = "en";

/** The locales to try for `locale`, most specific first, ending with English. */
export function localeCandidates(locale) {
  const l = String(locale || DEFAULT_LOCALE);
  if (LOCALE_REGISTRY[l]) return LOCALE_REGISTRY[l].slice();
  const base = l.split(/[-_]/)[0];
  const out = [l];
  if (base !== l) out.push(base);
  for (const c of LOCALE_REGISTRY[base] || []) if (!out.includes(c)) out.push(c);
  if (!out.includes("en")) out.push("en");
  return out;
}

/** Text for a locale from a string or a locale map; falls back, then to the first entry. */
export function resolveI18nText(text, locale) {
  if (text === null || text === undefined) return "";
  if (typeof text === "string") return text;
  if (typeof text !== "object") return String(text);
  for (const c of localeCandidates(locale)) {
    if (typeof text[c] === "string" && text[c] !== "") return text[c];
  }
  const first = Object.values(text).find((v) => typeof v === "string" && v !== "");
  return first ?? "";
}

/** Resolves every `{ "x-i18n": … }` node and every i18n map found under the listed keys. */
export function resolveI18nDeep(value, locale) {
  if (Array.isArray(value)) return value.map((v) => resolveI18nDeep(v, locale));
  if (value && typeof value === "object") {
    if (Object.prototype.hasOwnProperty.call(value, "x-i18n") && Object.keys(value).length === 1) {
      return resolveI18nText(value["x-i18n"], locale);
    }
    const out = {};
    for (const [k, v] of Object.entries(value)) out[k] = resolveI18nDeep(v, locale);
    return out;
  }
  return value;
}

/**
 * The character the player acts as. An action naming a seat or a character selects that
 * seat's current character; with no actions, the primary seat's (or else the first seat's);
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

export const MAX_SUMMARY_ENTRIES = 16;

/** Appends entries to a `session.summary@1` value, keeping at most 16. */
export function appendSummaryEntries(previous, entries) {
  const before = previous && Array.isArray(previous.entries) ? previous.entries : [];
  return { entries: [...before, ...(entries || [])].slice(0, MAX_SUMMARY_ENTRIES) };
}

/** The provider's translation of an English UI string (`locales/<locale>.yaml` messages). */
export function translate(ctx, text, vars) {
  const messages = (ctx && ctx.messages) || {};
  let out = typeof messages[text] === "string" ? messages[text] : String(text);
  for (const [k, v] of Object.entries(vars || {})) out = out.split(`{${k}}`).join(String(v));
  return out;
}

/** Like translate, for labels. */
export function labelText(ctx, text) {
  return translate(ctx, text);
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}/;
function stripBookkeeping(value) {
  if (Array.isArray(value)) return value.map(stripBookkeeping);
  if (!value || typeof value !== "object") return value;
  const out = {};
  for (const [k, v] of Object.entries(value)) {
    if (k === "sessionId") continue;
    if ((k === "id" || /Ids?$/.test(k)) && (typeof v === "string" ? UUID.test(v) : Array.isArray(v) && v.every((x) => typeof x === "string" && UUID.test(x)))) continue;
    if ((k === "timestamp" || /At$/.test(k)) && typeof v === "string" && ISO.test(v)) continue;
    out[k] = stripBookkeeping(v);
  }
  return out;
}

/** JSON for a model: bookkeeping ids, timestamps and sessionId removed. */
export function modelFacingJson(value, space) {
  return JSON.stringify(stripBookkeeping(value), null, space);
}

/** Checks character fields against a character schema; returns a list of problems. */
export function validateCharacterFields(fields, schema) {
  const problems = [];
  const attrs = (schema && schema.attributes) || [];
  for (const [key, value] of Object.entries(fields || {})) {
    const attr = attrs.find((a) => a.id === key);
    if (!attr) { problems.push(`unknown field ${key}`); continue; }
    const t = attr.type;
    const ok = t === "string" ? typeof value === "string"
      : t === "number" ? typeof value === "number" && Number.isFinite(value)
      : t === "boolean" ? typeof value === "boolean"
      : t === "enum" ? (attr.options || []).some((o) => (o && o.value !== undefined ? o.value : o) === value)
      : t === "array" ? Array.isArray(value)
      : t === "object" || t === "map" ? value !== null && typeof value === "object" && !Array.isArray(value)
      : true;
    if (!ok) { problems.push(`field ${key} must be ${t}`); continue; }
    if (t === "number" && attr.min !== undefined && value < attr.min) problems.push(`field ${key} is below ${attr.min}`);
    if (t === "number" && attr.max !== undefined && value > attr.max) problems.push(`field ${key} is above ${attr.max}`);
  }
  return problems;
}

function cut(text, max) {
  const s = String(text ?? "");
  return s.length > max ? s.slice(0, max) + "..." : s;
}

/** The `character-sheets` segment: the player's sheet and one line per other character. */
export function characterSheetSegments(characters, options = {}) {
  const chars = Array.isArray(characters) ? characters : [];
  const player = actingCharacterOf([], chars, options.seats);
  const parts = [];
  if (player) {
    const { id, name, aliases, type, description, fields } = player;
    parts.push(`<player-character>\n${modelFacingJson({ id, name, aliases, type, description, fields })}\n</player-character>`);
  }
  if (options.profiles !== false) {
    const lines = [];
    let total = 0;
    for (const c of chars) {
      if (c === player) continue;
      const line = total < 8000
        ? `- ${c.name}${c.aliases && c.aliases.length ? ` (aka ${c.aliases.join(", ")})` : ""} [${c.type}] | ${cut(c.description, 400)} | ${cut(JSON.stringify(c.fields || {}), 400)}`
        : `- ${c.name}`;
      total += line.length;
      lines.push(line);
    }
    if (lines.length) parts.push(`<character-profiles>\n${lines.join("\n")}\n</character-profiles>`);
  }
  if (!parts.length) return [];
  return [{ id: "character-sheets", content: parts.join("\n\n"), position: "system", audience: "self", volatility: "turn" }];
}

/** The instruction language for a locale: Simplified-Chinese sessions read `zh`, all others `en`. */
export function instructionLocaleFor(locale) {
  return /^zh(\b|[-_]|$)/i.test(String(locale ?? "")) ? "zh" : "en";
}

/** Picks the Chinese or the English text for a locale. */
export function pickLocaleText(locale, zh, en) {
  return instructionLocaleFor(locale) === "zh" ? zh : en;
}

let shortIdCounter = 0;
/** A short id, unique within the runtime. */
export function shortId(prefix = "id") {
  shortIdCounter += 1;
  return `${prefix}${shortIdCounter.toString(36)}`;
}

/** `n` short ids. */
export function shortIdBatch(n, prefix = "id") {
  return Array.from({ length: n }, () => shortId(prefix));
}

/** A proposal for the runtime's transaction: `makeProposal(type, payload)` or, as runtime
 * helpers call it, `makeProposal(ctx, createdAt, type, payload)`. */
export function makeProposal(...args) {
  if (args.length >= 4) {
    const [ctx, createdAt, type, payload] = args;
    return { type, payload, createdAt, ...(ctx && ctx.runtimeId ? { runtimeId: ctx.runtimeId } : {}) };
  }
  const [type, payload] = args;
  return { type, payload };
}

/** Ids of the characters a text mentions by name or alias, as whole words (not inside words). */
export function mentionedCharacterIds(text, characters) {
  const haystack = ` ${String(text ?? "").toLowerCase().replace(/\s+/g, " ")} `;
  const found = new Set();
  for (const c of characters ?? []) {
    for (const name of [c?.name, ...(c?.aliases ?? [])]) {
      const needle = String(name ?? "").trim().toLowerCase().replace(/\s+/g, " ");
      if (!needle) continue;
      let at = haystack.indexOf(needle);
      while (at >= 0) {
        const before = haystack[at - 1];
        const after = haystack[at + needle.length];
        if (!/[\p{L}\p{N}_]/u.test(before) && !/[\p{L}\p{N}_]/u.test(after ?? " ")) {
          found.add(c.id);
          break;
        }
        at = haystack.indexOf(needle, at + 1);
      }
    }
  }
  return found;
}

const PENDING = "__pendingProposals";

/** Attaches proposals to a tool result; they commit with the execution. */
export function withPendingProposals(result, proposals = []) {
  const base = result && typeof result === "object" ? result : { _text: String(result ?? "") };
  return { ...base, [PENDING]: [...(base[PENDING] ?? []), ...proposals] };
}

/** The proposals attached to a tool result. */
export function getPendingProposals(result) {
  return (result && result[PENDING]) || [];
}

/** The model-facing text of a tool result. */
export function getToolContent(result) {
  if (result == null) return "";
  if (typeof result === "string") return result;
  if (typeof result._text === "string") return result._text;
  return modelFacingJson(result);
}

/** A character's display label: its name, with its type for non-player characters. */
export function characterLabel(character) {
  if (!character) return "";
  return character.type && character.type !== "player" ? `${character.name} (${character.type})` : String(character.name ?? "");
}

/** The key character names are compared by: case-folded, inner spaces collapsed. */
export function characterNameKey(name) {
  return String(name ?? "").normalize("NFKC").trim().replace(/\s+/g, " ").toLowerCase();
}

/** Another character already using one of these names or aliases, if any. */
export function findCharacterAliasConflict(characters, candidate) {
  const wanted = new Set([candidate?.name, ...(candidate?.aliases ?? [])].filter(Boolean).map(characterNameKey));
  for (const other of characters ?? []) {
    if (!other || other.id === candidate?.id) continue;
    for (const name of [other.name, ...(other.aliases ?? [])]) {
      if (name && wanted.has(characterNameKey(name))) return { characterId: other.id, name };
    }
  }
  return null;
}
