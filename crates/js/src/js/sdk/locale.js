// The SDK's locale rule (BCP 47 without Intl) and i18n text: one module the SDK re-exports and
// the studio's UI imports as it is (ui/src/lib/locale.ts), so the rule has one home in
// JavaScript; the kernel's Rust side (crates/kernel/src/locale.rs) passes the same vectors
// (tests/fixtures/sdk/locale-vectors.json). Served to the SDK's own modules as
// `covel:sdk-locale`; plugins import these names from the SDK's root entry.

const hasOwn = (object, key) => object != null && Object.prototype.hasOwnProperty.call(object, key);
const isPlainObject = (value) => value !== null && typeof value === "object" && !Array.isArray(value);
// ============================================================================================
// Locales (BCP 47 without Intl)
// ============================================================================================

/** Longest locale tag accepted. */
export const MAX_LOCALE_CODE_LENGTH = 64;
/** The lexical shape of a locale tag (letters and digits in `-` separated subtags). */
export const LOCALE_CODE_RE = /^[a-z0-9]{1,8}(?:-[a-z0-9]{1,8})*$/i;

// Deprecated and overlong language subtags, mapped as CLDR canonicalization maps them.
const LANGUAGE_ALIASES = {
  iw: "he", in: "id", ji: "yi", jw: "jv", mo: "ro", tl: "fil", cmn: "zh", zho: "zh", chi: "zh",
  eng: "en", rus: "ru", jpn: "ja", kor: "ko", fra: "fr", fre: "fr", deu: "de", ger: "de", spa: "es",
  por: "pt", ita: "it", ara: "ar", hin: "hi", vie: "vi", tha: "th", tur: "tr", pol: "pl", nld: "nl",
  dut: "nl", ukr: "uk", heb: "he", ind: "id", msa: "ms", may: "ms", fas: "fa", per: "fa", ell: "el",
  gre: "el", swe: "sv", nor: "no", dan: "da", fin: "fi", ces: "cs", cze: "cs", hun: "hu", ron: "ro",
  rum: "ro", bul: "bg", srp: "sr", hrv: "hr", slk: "sk", slo: "sk", slv: "sl", lit: "lt", lav: "lv",
  est: "et", cat: "ca", eus: "eu", baq: "eu", glg: "gl", ben: "bn", tam: "ta", tel: "te", urd: "ur",
  tgl: "fil",
};
const REGION_ALIASES = { UK: "GB", BU: "MM", DD: "DE", FX: "FR", TP: "TL", YD: "YE", ZR: "CD" };
// Whole-tag aliases that carry a script.
const TAG_ALIASES = { sh: "sr-Latn" };

function titleCase(s) {
  return s.charAt(0).toUpperCase() + s.slice(1).toLowerCase();
}

/** Canonical BCP 47 form of a syntactically valid tag, or undefined (extlang, grandfathered → undefined). */
function canonicalTag(candidate) {
  const parts = candidate.split("-");
  let i = 0;
  let language = parts[i++].toLowerCase();
  if (!/^(?:[a-z]{2,3}|[a-z]{5,8})$/.test(language)) return undefined;
  let script;
  let region;
  if (i < parts.length && /^[a-z]{4}$/i.test(parts[i])) script = titleCase(parts[i++]);
  if (i < parts.length && /^(?:[a-z]{2}|\d{3})$/i.test(parts[i])) region = parts[i++].toUpperCase();
  const variants = [];
  while (i < parts.length && /^(?:[a-z0-9]{5,8}|\d[a-z0-9]{3})$/i.test(parts[i])) {
    const variant = parts[i++].toLowerCase();
    if (variants.includes(variant)) return undefined;
    variants.push(variant);
  }
  const extensions = [];
  let privateUse;
  while (i < parts.length) {
    const singleton = parts[i++].toLowerCase();
    if (!/^[a-z0-9]$/.test(singleton)) return undefined;
    const subtags = [];
    if (singleton === "x") {
      while (i < parts.length) {
        if (!/^[a-z0-9]{1,8}$/i.test(parts[i])) return undefined;
        subtags.push(parts[i++].toLowerCase());
      }
      if (!subtags.length) return undefined;
      privateUse = subtags;
      break;
    }
    while (i < parts.length && /^[a-z0-9]{2,8}$/i.test(parts[i])) subtags.push(parts[i++].toLowerCase());
    if (!subtags.length || extensions.some((e) => e.singleton === singleton)) return undefined;
    extensions.push({ singleton, subtags });
  }
  if (hasOwn(TAG_ALIASES, language) && !script) {
    const [lang, aliasScript] = TAG_ALIASES[language].split("-");
    language = lang;
    script = aliasScript;
  } else if (hasOwn(LANGUAGE_ALIASES, language)) language = LANGUAGE_ALIASES[language];
  if (region && hasOwn(REGION_ALIASES, region)) region = REGION_ALIASES[region];
  variants.sort();
  extensions.sort((a, b) => (a.singleton < b.singleton ? -1 : 1));
  const out = [language];
  if (script) out.push(script);
  if (region) out.push(region);
  out.push(...variants);
  for (const e of extensions) out.push(e.singleton, ...e.subtags);
  if (privateUse) out.push("x", ...privateUse);
  return out.join("-");
}

/**
 * The canonical form of a safe BCP 47 locale (`ru_ru` → `ru-RU`, `zh-hans-cn` → `zh-Hans-CN`);
 * `undefined` for blank, over-long, path-like or invalid input.
 */
export function canonicalizeLocale(locale) {
  if (typeof locale !== "string" || !locale.trim()) return undefined;
  const candidate = locale.trim().replace(/_/g, "-");
  if (candidate.length > MAX_LOCALE_CODE_LENGTH || !LOCALE_CODE_RE.test(candidate)) return undefined;
  return canonicalTag(candidate);
}

/** Whether a value is a string that canonicalizes as a locale. */
export function isLocaleCode(value) {
  return typeof value === "string" && canonicalizeLocale(value) !== undefined;
}

/** A locale for comparison: trimmed, `_` → `-`, lower case. */
export function normalizeLocale(locale) {
  return String(locale ?? "").trim().replace(/_/g, "-").toLowerCase();
}

/** The primary language subtag, normalized (`en_US` → `en`), or undefined. */
export function localeLanguage(locale) {
  const language = locale ? normalizeLocale(locale).split("-")[0] : undefined;
  return language || undefined;
}

// The usual script of a language (CLDR likely subtags, reduced to what the SDK needs).
const SCRIPT_OF = {};
const scriptGroups = {
  Cyrl: "ru uk be bg mk sr kk ky tg mn ba cv ce os tt av kv sah ab cu",
  Arab: "ar fa ur ps ug ks sd ckb lrc mzn bal",
  Hebr: "he yi",
  Grek: "el",
  Jpan: "ja",
  Kore: "ko",
  Hans: "zh",
  Hant: "yue",
  Thai: "th",
  Deva: "hi mr ne sa mai bho brx kok doi",
  Beng: "bn as mni",
  Armn: "hy",
  Geor: "ka",
  Ethi: "am ti",
  Taml: "ta",
  Telu: "te",
  Knda: "kn",
  Mlym: "ml",
  Gujr: "gu",
  Guru: "pa",
  Orya: "or",
  Sinh: "si",
  Khmr: "km",
  Laoo: "lo",
  Mymr: "my",
  Tibt: "bo dz",
  Thaa: "dv",
  Cher: "chr",
  Olck: "sat",
  Cans: "iu cr",
  Yiii: "ii",
  Vaii: "vai",
  Tfng: "zgh shi",
  Latn:
    "aa af ak an ay az bi bm br bs ca ch co cs cy da de ee en eo es et eu ff fi fj fo fr fy ga gd gl gn gv " +
    "ha ho hr ht hu hz ia id ie ig ik io is it jv kg ki kj kl kr ku kw la lb lg li ln lt lu lv mg mh mi ms " +
    "mt na nb nd ng nl nn no nr nv ny oc oj om pl pt qu rm rn ro rw sc se sg sk sl sm sn so sq ss st su sv " +
    "sw tk tn to tr ts tw ty uz ve vi vo wa wo xh yo za zu fil haw ceb gsw ast kab hmn lkt moh sma smj " +
    "smn sms yue_latn kea lag luo mas mer mfe mgh nds nmg nnh nus nyn rof rwk saq sbp seh ses sn teo tzm " +
    "vun wae xog yav dje dua dyo ebu ewo fur guz jgo jmc kam kde khq kkj kln ksb ksf ksh lij mua agq asa " +
    "bas bem bez brx_latn dav frr fo gaa jbo tpi tok",
};
for (const [script, languages] of Object.entries(scriptGroups)) {
  for (const language of languages.split(/\s+/)) if (language && !language.includes("_")) SCRIPT_OF[language] ??= script;
}
const REGION_SCRIPT = {
  zh: { TW: "Hant", HK: "Hant", MO: "Hant" },
  yue: { CN: "Hans" },
  sr: { ME: "Latn", RO: "Latn", TR: "Latn" },
  pa: { PK: "Arab" },
  uz: { AF: "Arab", CN: "Cyrl" },
  az: { IR: "Arab", RU: "Cyrl" },
  mn: { CN: "Mong" },
  kk: { CN: "Arab", AF: "Arab", IR: "Arab" },
  ky: { CN: "Arab" },
  sd: { IN: "Deva" },
  ms: { CC: "Arab" },
  ha: { SD: "Arab", CM: "Arab" },
  ks: { IN: "Arab" },
};

/** The script a locale is written in: its own script subtag, else the usual one. */
function localeScript(locale) {
  const canonical = canonicalizeLocale(locale);
  if (!canonical) return undefined;
  const parts = canonical.split("-");
  const language = parts[0];
  let i = 1;
  if (parts[i] && /^[A-Z][a-z]{3}$/.test(parts[i])) return parts[i];
  const region = parts[i] && /^(?:[A-Z]{2}|\d{3})$/.test(parts[i]) ? parts[i] : undefined;
  if (region && REGION_SCRIPT[language] && REGION_SCRIPT[language][region]) return REGION_SCRIPT[language][region];
  return SCRIPT_OF[language];
}

/**
 * Whether two locales share their primary language and their (usual) script: `en-GB` and `en`
 * do; `zh-Hant`/`zh-TW` and `zh` (Simplified) do not.
 */
export function localesShareLanguageAndScript(first, second) {
  const a = localeLanguage(first);
  if (!a || a !== localeLanguage(second)) return false;
  const sa = localeScript(first);
  return sa !== undefined && sa === localeScript(second);
}

/**
 * Tags to try for a localized resource: the canonical tag, then its bare language when that
 * is written in the same script (`zh-CN` → `zh-CN`, `zh`; `zh-TW` → `zh-TW`). `[]` for invalid input.
 */
export function localeLookupCandidates(locale) {
  const canonical = canonicalizeLocale(locale);
  if (!canonical) return [];
  const language = localeLanguage(canonical);
  if (!language || language === normalizeLocale(canonical) || !localesShareLanguageAndScript(canonical, language)) {
    return [canonical];
  }
  return [canonical, language];
}

// Names of languages in themselves, for runtimes without Intl.DisplayNames.
const AUTONYMS = {
  "zh-CN": "中文（中国）", "zh-TW": "中文（台灣）", "zh-HK": "中文（香港）", "zh-Hans": "简体中文",
  "zh-Hant": "繁體中文", "en-US": "American English", "en-GB": "British English", "ru-RU": "русский (Россия)",
  "pt-BR": "português (Brasil)", "pt-PT": "português europeu", "fr-CA": "français canadien",
  "es-419": "español latinoamericano", "de-AT": "Österreichisches Deutsch",
  zh: "中文", en: "English", ru: "русский", ja: "日本語", ko: "한국어", fr: "français", de: "Deutsch",
  es: "español", pt: "português", it: "italiano", nl: "Nederlands", pl: "polski", uk: "українська",
  tr: "Türkçe", ar: "العربية", he: "עברית", fa: "فارسی", hi: "हिन्दी", bn: "বাংলা", th: "ไทย",
  vi: "Tiếng Việt", id: "Indonesia", ms: "Melayu", sv: "svenska", da: "dansk", no: "norsk",
  nb: "norsk bokmål", fi: "suomi", cs: "čeština", sk: "slovenčina", hu: "magyar", ro: "română",
  bg: "български", el: "Ελληνικά", sr: "српски", hr: "hrvatski", lt: "lietuvių", lv: "latviešu",
  et: "eesti", ca: "català", eu: "euskara", gl: "galego", fil: "Filipino", ta: "தமிழ்", te: "తెలుగు",
  ur: "اردو", yue: "粵語", kk: "қазақ тілі", uz: "o‘zbek", az: "azərbaycan", ka: "ქართული", hy: "հայերեն",
};

/** The name of a locale in its own language (`zh-CN` → `中文（中国）`); the input when invalid. */
export function localeDisplayName(locale) {
  const canonical = canonicalizeLocale(locale);
  if (!canonical) return locale;
  const Intl = globalThis.Intl;
  if (Intl && typeof Intl.DisplayNames === "function") {
    try {
      return new Intl.DisplayNames([canonical], { type: "language" }).of(canonical) ?? canonical;
    } catch {
      return canonical;
    }
  }
  if (hasOwn(AUTONYMS, canonical)) return AUTONYMS[canonical];
  const language = localeLanguage(canonical);
  if (language && hasOwn(AUTONYMS, language)) {
    const rest = canonical.split("-").slice(1).join("-");
    return rest ? `${AUTONYMS[language]} (${rest})` : AUTONYMS[language];
  }
  return canonical;
}

/**
 * An immutable registry of application locales: `{definitions, codes, defaultLocale,
 * fallbackLocale, get, resolve, match, has, canonicalize, fallbackLocalesFor}`. Codes must be
 * canonical and unique; aliases resolve to their definition; fallbacks end with `fallbackLocale`.
 */
export function defineLocaleRegistry(definitions, options) {
  const byCode = new Map();
  const byAlias = new Map();
  const fallbacksOf = new Map();
  for (const definition of definitions) {
    const canonical = canonicalizeLocale(definition.code);
    if (!canonical) throw new Error(`Invalid locale code: ${definition.code}`);
    if (canonical !== definition.code) throw new Error(`Locale code must be canonical: ${definition.code} -> ${canonical}`);
    const key = normalizeLocale(canonical);
    if (byCode.has(key)) throw new Error(`Duplicate locale code: ${definition.code}`);
    byCode.set(key, definition);
    fallbacksOf.set(
      definition,
      (definition.fallbackLocales ?? []).map((fallback) => {
        const c = canonicalizeLocale(fallback);
        if (!c) throw new Error(`Invalid fallback locale for ${definition.code}: ${fallback}`);
        return c;
      }),
    );
  }
  for (const definition of definitions) {
    for (const alias of definition.aliases ?? []) {
      const c = canonicalizeLocale(alias);
      if (!c) throw new Error(`Invalid locale alias: ${alias}`);
      const key = normalizeLocale(c);
      if (byAlias.has(key) || byCode.has(key)) throw new Error(`Duplicate locale alias: ${alias}`);
      byAlias.set(key, definition);
    }
  }
  const codes = definitions.map((d) => d.code);
  const get = (code) => {
    const c = canonicalizeLocale(code);
    return c ? byCode.get(normalizeLocale(c)) : undefined;
  };
  const resolve = (locale) => {
    const c = canonicalizeLocale(locale);
    if (!c) return undefined;
    const key = normalizeLocale(c);
    return byCode.get(key) ?? byAlias.get(key);
  };
  const match = (locale) => {
    const exact = resolve(locale);
    if (exact) return exact;
    const language = localeLanguage(locale);
    if (!language) return undefined;
    return definitions.find((d) => localeLanguage(d.code) === language && localesShareLanguageAndScript(locale, d.code));
  };
  const has = (value) => typeof value === "string" && get(value) !== undefined;
  const canonicalize = (locale) => resolve(locale)?.code;
  const fallbackLocalesFor = (locale) => {
    const definition = resolve(locale);
    const list = [...(definition ? fallbacksOf.get(definition) ?? [] : [])];
    if (definition?.code !== options.fallbackLocale) list.push(options.fallbackLocale);
    const seen = new Set();
    return list.filter((fallback) => {
      const key = normalizeLocale(fallback);
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    });
  };
  if (!get(options.defaultLocale) || !get(options.fallbackLocale)) {
    throw new Error("Locale registry defaults must reference registered codes");
  }
  return Object.freeze({
    definitions,
    codes,
    defaultLocale: options.defaultLocale,
    fallbackLocale: options.fallbackLocale,
    get,
    resolve,
    match,
    has,
    canonicalize,
    fallbackLocalesFor,
  });
}

/** The application locales Covel ships (Simplified Chinese, English, Russian). */
export const LOCALE_DEFINITIONS = Object.freeze([
  {
    code: "zh-CN",
    label: { "zh-CN": "简体中文", "en-US": "Chinese (Simplified)", "ru-RU": "Китайский (упрощённый)" },
    shortLabel: "中",
    aliases: ["zh", "zh-Hans"],
    fallbackLocales: ["en-US"],
  },
  {
    code: "en-US",
    label: { "zh-CN": "英语", "en-US": "English", "ru-RU": "Английский" },
    shortLabel: "EN",
    aliases: ["en"],
  },
  {
    code: "ru-RU",
    label: { "zh-CN": "俄语", "en-US": "Russian", "ru-RU": "Русский" },
    shortLabel: "RU",
    aliases: ["ru"],
    fallbackLocales: ["en-US"],
  },
]);

/** The registry built from LOCALE_DEFINITIONS (default `zh-CN`, fallback `en-US`). */
export const localeRegistry = defineLocaleRegistry(LOCALE_DEFINITIONS, { defaultLocale: "zh-CN", fallbackLocale: "en-US" });
/** Registered locale codes. */
export const SUPPORTED_LOCALES = localeRegistry.codes;
/** The default application locale, `zh-CN`. */
export const DEFAULT_LOCALE = localeRegistry.defaultLocale;
/** The locale every lookup falls back to, `en-US`. */
export const DEFAULT_FALLBACK_LOCALE = localeRegistry.fallbackLocale;

/** Whether a locale is the default locale or one of its aliases (`zh`, `zh-Hans`, `zh_cn`). */
export function isDefaultLocale(locale) {
  return localeRegistry.resolve(locale)?.code === DEFAULT_LOCALE;
}

// ---- instruction language ------------------------------------------------------------------

/** Languages framework and plugin prompts are written in: English, and Simplified Chinese variants. */
export const INSTRUCTION_LOCALES = Object.freeze(["en", "zh"]);

const isSimplifiedChinese = (locale) => localesShareLanguageAndScript(canonicalizeLocale(locale), "zh");

/**
 * The operator's forced instruction language (`COVEL_INSTRUCTION_LOCALE` in `env`), or
 * undefined. The sandbox has no process environment, so the default `env` is empty.
 */
export function instructionLocaleOverride(env = {}) {
  const value = typeof env?.COVEL_INSTRUCTION_LOCALE === "string" ? env.COVEL_INSTRUCTION_LOCALE.trim().toLowerCase() : undefined;
  return value === "en" || value === "zh" ? value : undefined;
}

/** `zh` for a Simplified-Chinese content locale (not `zh-TW`/`zh-Hant`), `en` for every other. */
export function instructionLocaleFor(locale, override = instructionLocaleOverride()) {
  if (override) return override;
  return isSimplifiedChinese(locale) ? "zh" : "en";
}

/** Locale tags of the instruction variant files to try before the English file; `[]` for English. */
export function instructionVariantCandidates(locale, override = instructionLocaleOverride()) {
  if (instructionLocaleFor(locale, override) !== "zh") return [];
  const own = isSimplifiedChinese(locale) ? localeLookupCandidates(locale) : [];
  return [...new Set([...own, "zh"])];
}

/** `native` for English and Simplified Chinese (instructions exist), `extended` for the rest. */
export function localeTier(locale) {
  return localeLanguage(locale) === "en" || isSimplifiedChinese(locale) ? "native" : "extended";
}

/** Whether a variant file's locale tag is an instruction-language (Simplified Chinese) variant. */
export function isInstructionVariantLocale(locale) {
  return isSimplifiedChinese(locale);
}

/**
 * The Chinese text for the default locale and its aliases (`zh`, `zh-CN`, `zh-Hans`, any case,
 * `_` or `-`), the English text for every other locale.
 */
export function pickLocaleText(locale, zh, en) {
  const normalized = typeof locale === "string" ? normalizeLocale(locale) : undefined;
  return normalized === "zh" || normalized === "zh-cn" || normalized === "zh-hans" ? zh : en;
}

// ---- studio extras kept for existing plugins -----------------------------------------------
// localeCandidates is not the lookup rule: the kernel and the UI follow localeLookupCandidates
// and resolveI18nText above (crates/kernel/src/locale.rs, ui/src/lib/locale.ts).

/** Studio: known locales and their fallbacks, most specific first. */
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

/** Studio: the locales to try for `locale`, most specific first, ending with English. */
export function localeCandidates(locale) {
  const l = String(locale || "en");
  if (LOCALE_REGISTRY[l]) return LOCALE_REGISTRY[l].slice();
  const base = l.split(/[-_]/)[0];
  const out = [l];
  if (base !== l) out.push(base);
  for (const c of LOCALE_REGISTRY[base] || []) if (!out.includes(c)) out.push(c);
  if (!out.includes("en")) out.push("en");
  return out;
}

// ============================================================================================
// I18n text
// ============================================================================================

// An empty translation counts as missing (the studio's shared vectors and its Rust side agree).
const usableText = (value) => typeof value === "string" && value !== "";

function localeEntry(text, locale) {
  const wanted = normalizeLocale(locale);
  for (const [key, value] of Object.entries(text)) if (normalizeLocale(key) === wanted && usableText(value)) return value;
  return undefined;
}

function sameScriptEntry(text, locale) {
  for (const [key, value] of Object.entries(text)) if (usableText(value) && localesShareLanguageAndScript(locale, key)) return value;
  return undefined;
}

function firstText(text) {
  const values = Object.values(text);
  return values.find(usableText) ?? values.find((v) => typeof v === "string");
}

/**
 * The text of an I18nText (a string or a locale map) for `locale`: the exact key, then the
 * same language in the same script, then the registry's fallbacks (English), then the first
 * value. `undefined` for `undefined` (so callers can write `?? fallback`); a string as it is.
 */
export function resolveI18nText(text, locale) {
  if (text === undefined) return undefined;
  if (text === null) return "";
  if (typeof text === "string") return text;
  if (typeof text !== "object") return undefined;
  if (typeof locale !== "string" || !locale.trim()) return firstText(text);
  const exact = localeEntry(text, locale);
  if (exact !== undefined) return exact;
  for (const candidate of localeLookupCandidates(locale).slice(1)) {
    const found = localeEntry(text, candidate);
    if (found !== undefined) return found;
  }
  const sibling = sameScriptEntry(text, locale);
  if (sibling !== undefined) return sibling;
  for (const fallback of localeRegistry.fallbackLocalesFor(locale)) {
    for (const candidate of localeLookupCandidates(fallback)) {
      const found = localeEntry(text, candidate);
      if (found !== undefined) return found;
    }
    const related = sameScriptEntry(text, fallback);
    if (related !== undefined) return related;
  }
  return firstText(text);
}

// ISO 639-1 codes plus three-letter codes with a common English name.
const KNOWN_LANGUAGES = new Set(
  ("aa ab ae af ak am an ar as av ay az ba be bg bh bi bm bn bo br bs ca ce ch co cr cs cu cv cy da de dv dz " +
    "ee el en eo es et eu fa ff fi fj fo fr fy ga gd gl gn gu gv ha he hi ho hr ht hu hy hz ia id ie ig ii ik " +
    "io is it iu ja jv ka kg ki kj kk kl km kn ko kr ks ku kv kw ky la lb lg li ln lo lt lu lv mg mh mi mk ml " +
    "mn mr ms mt my na nb nd ne ng nl nn no nr nv ny oc oj om or os pa pi pl ps pt qu rm rn ro ru rw sa sc sd " +
    "se sg si sk sl sm sn so sq sr ss st su sv sw ta te tg th ti tk tl tn to tr ts tt tw ty ug uk ur uz ve vi " +
    "vo wa wo xh yi yo za zh zu fil haw yue ceb gsw ast ckb chr kab kok mai mni sat sah tlh jbo bho brx doi " +
    "hmn lkt moh kea luo mas mfe nds nus sma smj smn sms frr fur gaa lij tpi tok mul zxx zgh shi vai lrc mzn").split(" "),
);

/** Whether a key names a real language (`en`, `zh-CN`, `id`), not a word such as `backup`. */
export function isKnownLocale(key) {
  const canonical = canonicalizeLocale(key);
  return canonical !== undefined && KNOWN_LANGUAGES.has(localeLanguage(canonical) ?? canonical);
}

const REGISTERED_LANGUAGES = new Set(localeRegistry.codes.map((code) => localeLanguage(code) ?? code));

function isUnambiguousLocaleKey(key) {
  const canonical = canonicalizeLocale(key);
  if (!canonical) return false;
  return canonical.includes("-") || REGISTERED_LANGUAGES.has(localeLanguage(canonical) ?? canonical);
}

/**
 * Whether a value is an inline locale map: a non-empty plain object whose keys are all
 * languages and whose values are all strings, with at least one key that can only be a locale
 * (`zh-CN`, or a registered language) — `{id: "torn-letter"}` is not one.
 */
export function isLocaleMap(value) {
  if (!isPlainObject(value)) return false;
  const entries = Object.entries(value);
  return (
    entries.length > 0 &&
    entries.every(([key, item]) => isKnownLocale(key) && typeof item === "string") &&
    entries.some(([key]) => isUnambiguousLocaleKey(key))
  );
}

/**
 * A copy of `value` with every inline locale map resolved to its text for `locale`; other data
 * is unchanged. (Studio: a `{ "x-i18n": text }` wrapper is resolved the same way.)
 */
export function resolveI18nDeep(value, locale) {
  if (Array.isArray(value)) return value.map((item) => resolveI18nDeep(item, locale));
  if (isLocaleMap(value)) return resolveI18nText(value, locale) ?? "";
  if (isPlainObject(value)) {
    const keys = Object.keys(value);
    const wrapped = value["x-i18n"];
    if (keys.length === 1 && keys[0] === "x-i18n" && (typeof wrapped === "string" || isPlainObject(wrapped))) {
      return resolveI18nText(wrapped, locale) ?? "";
    }
    // Own keys, as JSON.parse makes them: a data key `__proto__` stays a key, never the prototype.
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, resolveI18nDeep(item, locale)]));
  }
  return value;
}

/** The key under a world record's `metadata` that holds its translated texts. */
export const WORLD_LOCALIZED_TEXT_KEY = "localizedText";

/**
 * A world's `{name, description, lore?}` for `locale`: the record's own text when its locale
 * matches, else the translation under `metadata.localizedText`, else the record's own text.
 */
export function localizedWorldText(world, locale) {
  const localized = world?.metadata?.[WORLD_LOCALIZED_TEXT_KEY];
  const pick = (key) => {
    if (world?.[key] !== undefined && world.locale && (!locale || localesShareLanguageAndScript(world.locale, locale))) {
      return world[key];
    }
    const text = localized && typeof localized === "object" ? localized[key] : undefined;
    const resolved = typeof text === "string" || isLocaleMap(text) ? resolveI18nText(text, locale) : undefined;
    return resolved && resolved.trim() ? resolved : world?.[key];
  };
  const lore = pick("lore");
  return { name: pick("name"), description: pick("description"), ...(lore !== undefined ? { lore } : {}) };
}
