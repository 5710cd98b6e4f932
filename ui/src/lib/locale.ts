// Locale fallback: the one rule the kernel (crates/kernel/src/locale.rs), the plugin SDK
// (crates/js/src/js/sdk/index.js, the authority, upstream Covel's SDK 0.0.50) and the UI share,
// checked on tests/fixtures/sdk/locale-vectors.json. This is a port of the SDK functions the UI
// needs: canonicalizeLocale, localeLookupCandidates, localesShareLanguageAndScript and
// resolveI18nText with the registry's fallbacks (every locale but English falls back to en-US).
//
// The rule: the exact key, then the lookup candidates (the canonical tag, then its bare language
// when written in the same script: zh-CN → zh, never zh-TW → zh), then any key of the same
// language and script, then en-US / en / any English key, then the first text. Keys compare
// without case and with `_` as `-`; an empty translation counts as missing.

/** Longest locale tag accepted. */
export const MAX_LOCALE_CODE_LENGTH = 64;
/** The default application locale. */
export const DEFAULT_LOCALE = "zh-CN";
/** The locale every lookup falls back to. */
export const DEFAULT_FALLBACK_LOCALE = "en-US";

const LOCALE_CODE_RE = /^[a-z0-9]{1,8}(?:-[a-z0-9]{1,8})*$/i;

// Deprecated and overlong language subtags, mapped as CLDR canonicalization maps them.
const LANGUAGE_ALIASES: Record<string, string> = {
  iw: "he", in: "id", ji: "yi", jw: "jv", mo: "ro", tl: "fil", cmn: "zh", zho: "zh", chi: "zh",
  eng: "en", rus: "ru", jpn: "ja", kor: "ko", fra: "fr", fre: "fr", deu: "de", ger: "de", spa: "es",
  por: "pt", ita: "it", ara: "ar", hin: "hi", vie: "vi", tha: "th", tur: "tr", pol: "pl", nld: "nl",
  dut: "nl", ukr: "uk", heb: "he", ind: "id", msa: "ms", may: "ms", fas: "fa", per: "fa", ell: "el",
  gre: "el", swe: "sv", nor: "no", dan: "da", fin: "fi", ces: "cs", cze: "cs", hun: "hu", ron: "ro",
  rum: "ro", bul: "bg", srp: "sr", hrv: "hr", slk: "sk", slo: "sk", slv: "sl", lit: "lt", lav: "lv",
  est: "et", cat: "ca", eus: "eu", baq: "eu", glg: "gl", ben: "bn", tam: "ta", tel: "te", urd: "ur",
  tgl: "fil",
};
const REGION_ALIASES: Record<string, string> = { UK: "GB", BU: "MM", DD: "DE", FX: "FR", TP: "TL", YD: "YE", ZR: "CD" };
// Whole-tag aliases that carry a script.
const TAG_ALIASES: Record<string, string> = { sh: "sr-Latn" };

const hasOwn = (object: object, key: string) => Object.prototype.hasOwnProperty.call(object, key);

// The usual script of a language (CLDR likely subtags, reduced to what the SDK needs); the first
// group naming a language wins, names with `_` are notes.
const SCRIPT_GROUPS: [string, string][] = [
  ["Cyrl", "ru uk be bg mk sr kk ky tg mn ba cv ce os tt av kv sah ab cu"],
  ["Arab", "ar fa ur ps ug ks sd ckb lrc mzn bal"],
  ["Hebr", "he yi"],
  ["Grek", "el"],
  ["Jpan", "ja"],
  ["Kore", "ko"],
  ["Hans", "zh"],
  ["Hant", "yue"],
  ["Thai", "th"],
  ["Deva", "hi mr ne sa mai bho brx kok doi"],
  ["Beng", "bn as mni"],
  ["Armn", "hy"],
  ["Geor", "ka"],
  ["Ethi", "am ti"],
  ["Taml", "ta"],
  ["Telu", "te"],
  ["Knda", "kn"],
  ["Mlym", "ml"],
  ["Gujr", "gu"],
  ["Guru", "pa"],
  ["Orya", "or"],
  ["Sinh", "si"],
  ["Khmr", "km"],
  ["Laoo", "lo"],
  ["Mymr", "my"],
  ["Tibt", "bo dz"],
  ["Thaa", "dv"],
  ["Cher", "chr"],
  ["Olck", "sat"],
  ["Cans", "iu cr"],
  ["Yiii", "ii"],
  ["Vaii", "vai"],
  ["Tfng", "zgh shi"],
  [
    "Latn",
    "aa af ak an ay az bi bm br bs ca ch co cs cy da de ee en eo es et eu ff fi fj fo fr fy ga gd gl gn gv " +
      "ha ho hr ht hu hz ia id ie ig ik io is it jv kg ki kj kl kr ku kw la lb lg li ln lt lu lv mg mh mi ms " +
      "mt na nb nd ng nl nn no nr nv ny oc oj om pl pt qu rm rn ro rw sc se sg sk sl sm sn so sq ss st su sv " +
      "sw tk tn to tr ts tw ty uz ve vi vo wa wo xh yo za zu fil haw ceb gsw ast kab hmn lkt moh sma smj " +
      "smn sms yue_latn kea lag luo mas mer mfe mgh nds nmg nnh nus nyn rof rwk saq sbp seh ses sn teo tzm " +
      "vun wae xog yav dje dua dyo ebu ewo fur guz jgo jmc kam kde khq kkj kln ksb ksf ksh lij mua agq asa " +
      "bas bem bez brx_latn dav frr fo gaa jbo tpi tok",
  ],
];
const SCRIPT_OF = new Map<string, string>();
for (const [script, languages] of SCRIPT_GROUPS) {
  for (const language of languages.split(/\s+/)) {
    if (language && !language.includes("_") && !SCRIPT_OF.has(language)) SCRIPT_OF.set(language, script);
  }
}
const REGION_SCRIPT: Record<string, Record<string, string>> = {
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

// The registered locales (the SDK's LOCALE_DEFINITIONS): code, aliases, own fallbacks.
const DEFINITIONS = [
  { code: "zh-CN", aliases: ["zh", "zh-Hans"], fallbackLocales: ["en-US"] },
  { code: "en-US", aliases: ["en"], fallbackLocales: [] as string[] },
  { code: "ru-RU", aliases: ["ru"], fallbackLocales: ["en-US"] },
];

function titleCase(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1).toLowerCase();
}

/** Canonical BCP 47 form of a syntactically valid tag, or undefined (extlang, grandfathered → undefined). */
function canonicalTag(candidate: string): string | undefined {
  const parts = candidate.split("-");
  let i = 0;
  let language = parts[i++].toLowerCase();
  if (!/^(?:[a-z]{2,3}|[a-z]{5,8})$/.test(language)) return undefined;
  let script: string | undefined;
  let region: string | undefined;
  if (i < parts.length && /^[a-z]{4}$/i.test(parts[i])) script = titleCase(parts[i++]);
  if (i < parts.length && /^(?:[a-z]{2}|\d{3})$/i.test(parts[i])) region = parts[i++].toUpperCase();
  const variants: string[] = [];
  while (i < parts.length && /^(?:[a-z0-9]{5,8}|\d[a-z0-9]{3})$/i.test(parts[i])) {
    const variant = parts[i++].toLowerCase();
    if (variants.includes(variant)) return undefined;
    variants.push(variant);
  }
  const extensions: { singleton: string; subtags: string[] }[] = [];
  let privateUse: string[] | undefined;
  while (i < parts.length) {
    const singleton = parts[i++].toLowerCase();
    if (!/^[a-z0-9]$/.test(singleton)) return undefined;
    const subtags: string[] = [];
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
export function canonicalizeLocale(locale: unknown): string | undefined {
  if (typeof locale !== "string" || !locale.trim()) return undefined;
  const candidate = locale.trim().replace(/_/g, "-");
  if (candidate.length > MAX_LOCALE_CODE_LENGTH || !LOCALE_CODE_RE.test(candidate)) return undefined;
  return canonicalTag(candidate);
}

/** A locale for comparison: trimmed, `_` → `-`, lower case. */
export function normalizeLocale(locale: unknown): string {
  return String(locale ?? "").trim().replace(/_/g, "-").toLowerCase();
}

/** The primary language subtag, normalized (`en_US` → `en`), or undefined. */
export function localeLanguage(locale: string | undefined): string | undefined {
  const language = locale ? normalizeLocale(locale).split("-")[0] : undefined;
  return language || undefined;
}

/** The script a locale is written in: its own script subtag, else the usual one. */
function localeScript(locale: string | undefined): string | undefined {
  const canonical = canonicalizeLocale(locale);
  if (!canonical) return undefined;
  const parts = canonical.split("-");
  const language = parts[0];
  if (parts[1] && /^[A-Z][a-z]{3}$/.test(parts[1])) return parts[1];
  const region = parts[1] && /^(?:[A-Z]{2}|\d{3})$/.test(parts[1]) ? parts[1] : undefined;
  if (region && hasOwn(REGION_SCRIPT, language) && hasOwn(REGION_SCRIPT[language], region)) return REGION_SCRIPT[language][region];
  return SCRIPT_OF.get(language);
}

/**
 * Whether two locales share their primary language and their (usual) script: `en-GB` and `en`
 * do; `zh-Hant`/`zh-TW` and `zh` (Simplified) do not.
 */
export function localesShareLanguageAndScript(first: string | undefined, second: string | undefined): boolean {
  const a = localeLanguage(first);
  if (!a || a !== localeLanguage(second)) return false;
  const sa = localeScript(first);
  return sa !== undefined && sa === localeScript(second);
}

/**
 * Tags to try for a localized resource: the canonical tag, then its bare language when that is
 * written in the same script (`zh-CN` → `zh-CN`, `zh`; `zh-TW` → `zh-TW`). `[]` for invalid input.
 */
export function localeLookupCandidates(locale: unknown): string[] {
  const canonical = canonicalizeLocale(locale);
  if (!canonical) return [];
  const language = localeLanguage(canonical);
  if (!language || language === normalizeLocale(canonical) || !localesShareLanguageAndScript(canonical, language)) {
    return [canonical];
  }
  return [canonical, language];
}

/** The registry's fallbacks for a locale: its definition's own, then en-US (none for English). */
export function fallbackLocalesFor(locale: string): string[] {
  const key = normalizeLocale(canonicalizeLocale(locale) ?? "");
  const same = (tag: string) => key !== "" && normalizeLocale(canonicalizeLocale(tag)) === key;
  const definition = DEFINITIONS.find((d) => same(d.code)) ?? DEFINITIONS.find((d) => d.aliases.some(same));
  const list = [...(definition?.fallbackLocales ?? [])];
  if (definition?.code !== DEFAULT_FALLBACK_LOCALE) list.push(DEFAULT_FALLBACK_LOCALE);
  const seen = new Set<string>();
  return list.filter((fallback) => {
    const k = normalizeLocale(fallback);
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}

/** A string or a locale map (`{ "en": "Quest", "zh-CN": "任务" }`). */
export type I18nText = string | Record<string, unknown>;

// An empty translation counts as missing.
const usableText = (value: unknown): value is string => typeof value === "string" && value !== "";

function localeEntry(text: Record<string, unknown>, locale: string): string | undefined {
  const wanted = normalizeLocale(locale);
  for (const [key, value] of Object.entries(text)) if (normalizeLocale(key) === wanted && usableText(value)) return value;
  return undefined;
}

function sameScriptEntry(text: Record<string, unknown>, locale: string): string | undefined {
  for (const [key, value] of Object.entries(text)) if (usableText(value) && localesShareLanguageAndScript(locale, key)) return value;
  return undefined;
}

function firstText(text: Record<string, unknown>): string | undefined {
  const values = Object.values(text);
  return values.find(usableText) ?? values.find((v): v is string => typeof v === "string");
}

/**
 * The text of an I18nText for `locale`: the exact key, then the lookup candidates, then the same
 * language in the same script, then the registry's fallbacks (English), then the first text.
 * `undefined` for `undefined` and for a map without text; `""` for `null`; a string as it is.
 */
export function resolveI18nText(text: I18nText | null | undefined, locale?: string): string | undefined {
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
  for (const fallback of fallbackLocalesFor(locale)) {
    for (const candidate of localeLookupCandidates(fallback)) {
      const found = localeEntry(text, candidate);
      if (found !== undefined) return found;
    }
    const related = sameScriptEntry(text, fallback);
    if (related !== undefined) return related;
  }
  return firstText(text);
}
