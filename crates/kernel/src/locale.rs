//! Locale fallback: the one rule the kernel and the plugin SDK share. The authority is the SDK's
//! JavaScript module `crates/js/src/js/sdk/locale.js` (upstream Covel's SDK 0.0.50), which the
//! UI imports as it is; this module is a line-by-line port of its locale functions, and
//! `tests/fixtures/sdk/locale-vectors.json` holds the vectors both sides must pass.
//!
//! The rule:
//! - A tag is canonicalized as BCP 47 (`ru_ru` → `ru-RU`, `zh-hans-cn` → `zh-Hans-CN`,
//!   deprecated language and region subtags replaced, `iw` → `he`); blank, path-like or
//!   malformed input has no canonical form.
//! - A locale's *lookup candidates* are its canonical tag, then its bare language when that is
//!   written in the same script (`zh-CN` → `zh-CN`, `zh`; `zh-TW` → `zh-TW` only: Traditional
//!   never falls to Simplified). Scripts come from the tag's own script subtag, else CLDR's
//!   likely script of the language (per region where it differs).
//! - Text in a locale map is found by the exact key, then the lookup candidates, then any key
//!   of the same language and script, then the registry's fallback `en-US` (and so `en`, and
//!   any English key), then the first text. Keys compare without case and with `_` as `-`; an
//!   empty translation counts as missing.
//! - Instructions (prompt bodies and variants) exist in English and Simplified Chinese: a
//!   Simplified-Chinese locale (`zh`, `zh-CN`, `zh-SG`, `zh-Hans-*`) reads the `zh` variant,
//!   every other locale the canonical English.

use serde_json::Value;

/// Longest locale tag accepted.
pub const MAX_LOCALE_CODE_LENGTH: usize = 64;
/// The default application locale.
pub const DEFAULT_LOCALE: &str = "zh-CN";
/// The locale every lookup falls back to.
pub const DEFAULT_FALLBACK_LOCALE: &str = "en-US";
/// Languages framework and plugin prompts are written in.
pub const INSTRUCTION_LOCALES: [&str; 2] = ["en", "zh"];

// Deprecated and overlong language subtags, mapped as CLDR canonicalization maps them.
const LANGUAGE_ALIASES: &[(&str, &str)] = &[
    ("iw", "he"),
    ("in", "id"),
    ("ji", "yi"),
    ("jw", "jv"),
    ("mo", "ro"),
    ("tl", "fil"),
    ("cmn", "zh"),
    ("zho", "zh"),
    ("chi", "zh"),
    ("eng", "en"),
    ("rus", "ru"),
    ("jpn", "ja"),
    ("kor", "ko"),
    ("fra", "fr"),
    ("fre", "fr"),
    ("deu", "de"),
    ("ger", "de"),
    ("spa", "es"),
    ("por", "pt"),
    ("ita", "it"),
    ("ara", "ar"),
    ("hin", "hi"),
    ("vie", "vi"),
    ("tha", "th"),
    ("tur", "tr"),
    ("pol", "pl"),
    ("nld", "nl"),
    ("dut", "nl"),
    ("ukr", "uk"),
    ("heb", "he"),
    ("ind", "id"),
    ("msa", "ms"),
    ("may", "ms"),
    ("fas", "fa"),
    ("per", "fa"),
    ("ell", "el"),
    ("gre", "el"),
    ("swe", "sv"),
    ("nor", "no"),
    ("dan", "da"),
    ("fin", "fi"),
    ("ces", "cs"),
    ("cze", "cs"),
    ("hun", "hu"),
    ("ron", "ro"),
    ("rum", "ro"),
    ("bul", "bg"),
    ("srp", "sr"),
    ("hrv", "hr"),
    ("slk", "sk"),
    ("slo", "sk"),
    ("slv", "sl"),
    ("lit", "lt"),
    ("lav", "lv"),
    ("est", "et"),
    ("cat", "ca"),
    ("eus", "eu"),
    ("baq", "eu"),
    ("glg", "gl"),
    ("ben", "bn"),
    ("tam", "ta"),
    ("tel", "te"),
    ("urd", "ur"),
    ("tgl", "fil"),
];
const REGION_ALIASES: &[(&str, &str)] = &[
    ("UK", "GB"),
    ("BU", "MM"),
    ("DD", "DE"),
    ("FX", "FR"),
    ("TP", "TL"),
    ("YD", "YE"),
    ("ZR", "CD"),
];
// Whole-tag aliases that carry a script.
const TAG_ALIASES: &[(&str, (&str, &str))] = &[("sh", ("sr", "Latn"))];

// The usual script of a language (CLDR likely subtags, reduced to what the SDK needs). The
// first group naming a language wins; names with `_` are notes, not languages.
const SCRIPT_GROUPS: &[(&str, &str)] = &[
    (
        "Cyrl",
        "ru uk be bg mk sr kk ky tg mn ba cv ce os tt av kv sah ab cu",
    ),
    ("Arab", "ar fa ur ps ug ks sd ckb lrc mzn bal"),
    ("Hebr", "he yi"),
    ("Grek", "el"),
    ("Jpan", "ja"),
    ("Kore", "ko"),
    ("Hans", "zh"),
    ("Hant", "yue"),
    ("Thai", "th"),
    ("Deva", "hi mr ne sa mai bho brx kok doi"),
    ("Beng", "bn as mni"),
    ("Armn", "hy"),
    ("Geor", "ka"),
    ("Ethi", "am ti"),
    ("Taml", "ta"),
    ("Telu", "te"),
    ("Knda", "kn"),
    ("Mlym", "ml"),
    ("Gujr", "gu"),
    ("Guru", "pa"),
    ("Orya", "or"),
    ("Sinh", "si"),
    ("Khmr", "km"),
    ("Laoo", "lo"),
    ("Mymr", "my"),
    ("Tibt", "bo dz"),
    ("Thaa", "dv"),
    ("Cher", "chr"),
    ("Olck", "sat"),
    ("Cans", "iu cr"),
    ("Yiii", "ii"),
    ("Vaii", "vai"),
    ("Tfng", "zgh shi"),
    (
        "Latn",
        "aa af ak an ay az bi bm br bs ca ch co cs cy da de ee en eo es et eu ff fi fj fo fr fy ga gd gl gn gv \
         ha ho hr ht hu hz ia id ie ig ik io is it jv kg ki kj kl kr ku kw la lb lg li ln lt lu lv mg mh mi ms \
         mt na nb nd ng nl nn no nr nv ny oc oj om pl pt qu rm rn ro rw sc se sg sk sl sm sn so sq ss st su sv \
         sw tk tn to tr ts tw ty uz ve vi vo wa wo xh yo za zu fil haw ceb gsw ast kab hmn lkt moh sma smj \
         smn sms yue_latn kea lag luo mas mer mfe mgh nds nmg nnh nus nyn rof rwk saq sbp seh ses sn teo tzm \
         vun wae xog yav dje dua dyo ebu ewo fur guz jgo jmc kam kde khq kkj kln ksb ksf ksh lij mua agq asa \
         bas bem bez brx_latn dav frr fo gaa jbo tpi tok",
    ),
];
// Where a region writes a language in another script than its usual one.
const REGION_SCRIPT: &[(&str, &[(&str, &str)])] = &[
    ("zh", &[("TW", "Hant"), ("HK", "Hant"), ("MO", "Hant")]),
    ("yue", &[("CN", "Hans")]),
    ("sr", &[("ME", "Latn"), ("RO", "Latn"), ("TR", "Latn")]),
    ("pa", &[("PK", "Arab")]),
    ("uz", &[("AF", "Arab"), ("CN", "Cyrl")]),
    ("az", &[("IR", "Arab"), ("RU", "Cyrl")]),
    ("mn", &[("CN", "Mong")]),
    ("kk", &[("CN", "Arab"), ("AF", "Arab"), ("IR", "Arab")]),
    ("ky", &[("CN", "Arab")]),
    ("sd", &[("IN", "Deva")]),
    ("ms", &[("CC", "Arab")]),
    ("ha", &[("SD", "Arab"), ("CM", "Arab")]),
    ("ks", &[("IN", "Arab")]),
];

/// A registered application locale: its canonical code, aliases and explicit fallbacks.
struct Definition {
    code: &'static str,
    aliases: &'static [&'static str],
    fallbacks: &'static [&'static str],
}

/// The locales Covel ships (the SDK's `LOCALE_DEFINITIONS`).
const DEFINITIONS: &[Definition] = &[
    Definition {
        code: "zh-CN",
        aliases: &["zh", "zh-Hans"],
        fallbacks: &["en-US"],
    },
    Definition {
        code: "en-US",
        aliases: &["en"],
        fallbacks: &[],
    },
    Definition {
        code: "ru-RU",
        aliases: &["ru"],
        fallbacks: &["en-US"],
    },
];

fn lookup<'a, V: Copy>(table: &'a [(&'a str, V)], key: &str) -> Option<V> {
    table.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
}

/// JavaScript's `String.prototype.trim` (its white space and line terminators, not Rust's).
fn js_trim(s: &str) -> &str {
    let js_space = |c: char| {
        matches!(
            c,
            '\t' | '\n' | '\u{b}' | '\u{c}' | '\r' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'
                ..='\u{200a}'
                    | '\u{2028}'
                    | '\u{2029}'
                    | '\u{202f}'
                    | '\u{205f}'
                    | '\u{3000}'
                    | '\u{feff}'
        )
    };
    s.trim_matches(js_space)
}

fn is_alpha(s: &str) -> bool {
    s.bytes().all(|b| b.is_ascii_alphabetic())
}

fn is_alnum(s: &str) -> bool {
    s.bytes().all(|b| b.is_ascii_alphanumeric())
}

fn is_digits(s: &str) -> bool {
    s.bytes().all(|b| b.is_ascii_digit())
}

fn title_case(s: &str) -> String {
    let mut out = s[..1].to_ascii_uppercase();
    out.push_str(&s[1..].to_ascii_lowercase());
    out
}

/// The canonical BCP 47 form of a tag already known to be `[a-z0-9]{1,8}(-[a-z0-9]{1,8})*`,
/// or `None` (extlang, grandfathered tags, repeated variants or singletons).
fn canonical_tag(candidate: &str) -> Option<String> {
    let parts: Vec<&str> = candidate.split('-').collect();
    let mut i = 0;
    let mut language = parts[i].to_ascii_lowercase();
    i += 1;
    if !(is_alpha(&language) && matches!(language.len(), 2 | 3 | 5..=8)) {
        return None;
    }
    let mut script = None;
    let mut region = None;
    if i < parts.len() && parts[i].len() == 4 && is_alpha(parts[i]) {
        script = Some(title_case(parts[i]));
        i += 1;
    }
    if i < parts.len()
        && ((parts[i].len() == 2 && is_alpha(parts[i]))
            || (parts[i].len() == 3 && is_digits(parts[i])))
    {
        region = Some(parts[i].to_ascii_uppercase());
        i += 1;
    }
    let mut variants: Vec<String> = Vec::new();
    while i < parts.len() && is_variant(parts[i]) {
        let variant = parts[i].to_ascii_lowercase();
        i += 1;
        if variants.contains(&variant) {
            return None;
        }
        variants.push(variant);
    }
    let mut extensions: Vec<(String, Vec<String>)> = Vec::new();
    let mut private_use = None;
    while i < parts.len() {
        let singleton = parts[i].to_ascii_lowercase();
        i += 1;
        if !(singleton.len() == 1 && is_alnum(&singleton)) {
            return None;
        }
        let mut subtags = Vec::new();
        if singleton == "x" {
            while i < parts.len() {
                if !(matches!(parts[i].len(), 1..=8) && is_alnum(parts[i])) {
                    return None;
                }
                subtags.push(parts[i].to_ascii_lowercase());
                i += 1;
            }
            if subtags.is_empty() {
                return None;
            }
            private_use = Some(subtags);
            break;
        }
        while i < parts.len() && matches!(parts[i].len(), 2..=8) && is_alnum(parts[i]) {
            subtags.push(parts[i].to_ascii_lowercase());
            i += 1;
        }
        if subtags.is_empty() || extensions.iter().any(|(s, _)| *s == singleton) {
            return None;
        }
        extensions.push((singleton, subtags));
    }
    if let (Some((lang, alias_script)), None) = (lookup(TAG_ALIASES, &language), &script) {
        language = lang.to_string();
        script = Some(alias_script.to_string());
    } else if let Some(alias) = lookup(LANGUAGE_ALIASES, &language) {
        language = alias.to_string();
    }
    if let Some(alias) = region.as_deref().and_then(|r| lookup(REGION_ALIASES, r)) {
        region = Some(alias.to_string());
    }
    variants.sort();
    extensions.sort_by(|a, b| a.0.cmp(&b.0));
    let mut out = vec![language];
    out.extend(script);
    out.extend(region);
    out.extend(variants);
    for (singleton, subtags) in extensions {
        out.push(singleton);
        out.extend(subtags);
    }
    if let Some(subtags) = private_use {
        out.push("x".into());
        out.extend(subtags);
    }
    Some(out.join("-"))
}

fn is_variant(part: &str) -> bool {
    is_alnum(part)
        && (matches!(part.len(), 5..=8) || (part.len() == 4 && part.as_bytes()[0].is_ascii_digit()))
}

/// The canonical form of a safe BCP 47 locale (`ru_ru` → `ru-RU`, `zh-hans-cn` →
/// `zh-Hans-CN`, `iw` → `he`); `None` for blank, over-long, path-like or invalid input.
pub fn canonicalize_locale(locale: &str) -> Option<String> {
    let trimmed = js_trim(locale);
    if trimmed.is_empty() {
        return None;
    }
    let candidate = trimmed.replace('_', "-");
    let well_formed = candidate
        .split('-')
        .all(|part| matches!(part.len(), 1..=8) && is_alnum(part));
    if candidate.len() > MAX_LOCALE_CODE_LENGTH || !well_formed {
        return None;
    }
    canonical_tag(&candidate)
}

/// A locale for comparison: trimmed, `_` → `-`, lower case. Keys of locale maps and names of
/// locale files compare in this form.
pub fn normalize_locale(locale: &str) -> String {
    js_trim(locale).replace('_', "-").to_lowercase()
}

/// The primary language subtag, normalized (`en_US` → `en`), or `None`.
pub fn locale_language(locale: &str) -> Option<String> {
    let normalized = normalize_locale(locale);
    let language = normalized.split('-').next().unwrap_or_default();
    (!language.is_empty()).then(|| language.to_string())
}

/// The script a locale is written in: its own script subtag, else the usual one.
fn locale_script(locale: &str) -> Option<String> {
    let canonical = canonicalize_locale(locale)?;
    let parts: Vec<&str> = canonical.split('-').collect();
    let language = parts[0];
    let next = parts.get(1).copied().unwrap_or_default();
    let b = next.as_bytes();
    if b.len() == 4 && b[0].is_ascii_uppercase() && b[1..].iter().all(u8::is_ascii_lowercase) {
        return Some(next.to_string());
    }
    let is_region =
        (b.len() == 2 && b.iter().all(u8::is_ascii_uppercase)) || (b.len() == 3 && is_digits(next));
    if is_region
        && let Some(script) =
            lookup(REGION_SCRIPT, language).and_then(|regions| lookup(regions, next))
    {
        return Some(script.to_string());
    }
    SCRIPT_GROUPS
        .iter()
        .find(|(_, languages)| languages.split_whitespace().any(|l| l == language))
        .map(|(script, _)| script.to_string())
}

/// Whether two locales share their primary language and their (usual) script: `en-GB` and
/// `en` do; `zh-Hant`/`zh-TW` and `zh` (Simplified) do not.
pub fn locales_share_language_and_script(first: &str, second: &str) -> bool {
    let Some(a) = locale_language(first) else {
        return false;
    };
    if locale_language(second).as_deref() != Some(a.as_str()) {
        return false;
    }
    locale_script(first).is_some_and(|s| Some(s) == locale_script(second))
}

/// Tags to try for a localized resource: the canonical tag, then its bare language when that
/// is written in the same script (`zh-CN` → `zh-CN`, `zh`; `zh-TW` → `zh-TW`). Empty for
/// invalid input.
pub fn locale_lookup_candidates(locale: &str) -> Vec<String> {
    let Some(canonical) = canonicalize_locale(locale) else {
        return Vec::new();
    };
    match locale_language(&canonical) {
        Some(language)
            if language != normalize_locale(&canonical)
                && locales_share_language_and_script(&canonical, &language) =>
        {
            vec![canonical, language]
        }
        _ => vec![canonical],
    }
}

/// The registered locale code a locale names, by code or alias (`zh_cn`, `zh`, `zh-Hans` →
/// `zh-CN`); `None` when it names none.
pub fn registered_locale(locale: &str) -> Option<&'static str> {
    let key = normalize_locale(&canonicalize_locale(locale)?);
    let same = |tag: &str| canonicalize_locale(tag).is_some_and(|c| normalize_locale(&c) == key);
    DEFINITIONS
        .iter()
        .find(|d| same(d.code))
        .or_else(|| {
            DEFINITIONS
                .iter()
                .find(|d| d.aliases.iter().any(|a| same(a)))
        })
        .map(|d| d.code)
}

/// Whether a locale is the default locale or one of its aliases (`zh`, `zh-Hans`, `zh_cn`).
pub fn is_default_locale(locale: &str) -> bool {
    registered_locale(locale) == Some(DEFAULT_LOCALE)
}

/// The registry's fallbacks for a locale: its definition's own, then `en-US` (none for `en-US`
/// itself and its aliases).
pub fn fallback_locales_for(locale: &str) -> Vec<String> {
    let definition =
        registered_locale(locale).and_then(|code| DEFINITIONS.iter().find(|d| d.code == code));
    let mut list: Vec<String> = definition
        .map(|d| d.fallbacks.iter().map(|f| f.to_string()).collect())
        .unwrap_or_default();
    if definition.map(|d| d.code) != Some(DEFAULT_FALLBACK_LOCALE) {
        list.push(DEFAULT_FALLBACK_LOCALE.to_string());
    }
    let mut seen = Vec::new();
    list.retain(|f| {
        let key = normalize_locale(f);
        let fresh = !seen.contains(&key);
        seen.push(key);
        fresh
    });
    list
}

/// Locale tags of a localized file to try, most specific first, as the SDK's prompt loader
/// tries `<name>.<tag>.md`: the lookup candidates of the canonical locale, then of each
/// fallback (`fr-CA` → `fr-CA`, `fr`, `en-US`, `en`; `zh-TW` → `zh-TW`, `en-US`, `en`). An
/// invalid locale gets only the fallbacks'.
pub fn locale_resource_candidates(locale: &str) -> Vec<String> {
    let canonical = canonicalize_locale(locale);
    let mut out: Vec<String> = Vec::new();
    for tag in canonical
        .iter()
        .cloned()
        .chain(fallback_locales_for(locale))
    {
        for candidate in locale_lookup_candidates(&tag) {
            if !out.contains(&candidate) {
                out.push(candidate);
            }
        }
    }
    out
}

/// The translations a handler in `locale` reads, from a plugin's `locales/<tag>.yaml` files
/// keyed by file name: the first file whose name is one of the locale's resource candidates
/// (see [`locale_resource_candidates`]), names compared as locale keys (`zh_cn.yaml` is
/// `zh-CN`; `zh-TW` never reads `zh`).
pub fn messages_for_locale<'a, M>(
    messages: &'a std::collections::BTreeMap<String, M>,
    locale: &str,
) -> Option<&'a M> {
    locale_resource_candidates(locale).iter().find_map(|tag| {
        let wanted = normalize_locale(tag);
        messages
            .iter()
            .find(|(name, _)| normalize_locale(name) == wanted)
            .map(|(_, m)| m)
    })
}

// ---- instruction language ----------------------------------------------------------------

fn is_simplified_chinese(locale: &str) -> bool {
    canonicalize_locale(locale).is_some_and(|c| locales_share_language_and_script(&c, "zh"))
}

/// The forced instruction language from a `COVEL_INSTRUCTION_LOCALE` value (`en` or `zh`, any
/// case, trimmed), or `None`.
pub fn instruction_locale_override(value: Option<&str>) -> Option<&'static str> {
    match value.map(|v| js_trim(v).to_lowercase()).as_deref() {
        Some("en") => Some("en"),
        Some("zh") => Some("zh"),
        _ => None,
    }
}

/// `zh` for a Simplified-Chinese locale (not `zh-TW`/`zh-Hant`), `en` for every other; an
/// override (see [`instruction_locale_override`]) wins.
pub fn instruction_locale_for(locale: &str, override_locale: Option<&'static str>) -> &'static str {
    override_locale.unwrap_or(if is_simplified_chinese(locale) {
        "zh"
    } else {
        "en"
    })
}

/// Locale tags of the instruction variant files to try before the English file (`zh-CN` →
/// `zh-CN`, `zh`); empty when the locale reads English.
pub fn instruction_variant_candidates(
    locale: &str,
    override_locale: Option<&'static str>,
) -> Vec<String> {
    if instruction_locale_for(locale, override_locale) != "zh" {
        return Vec::new();
    }
    let mut out = if is_simplified_chinese(locale) {
        locale_lookup_candidates(locale)
    } else {
        Vec::new()
    };
    if !out.iter().any(|c| c == "zh") {
        out.push("zh".into());
    }
    out
}

/// Whether a variant file's locale tag is an instruction-language (Simplified Chinese) variant.
pub fn is_instruction_variant_locale(locale: &str) -> bool {
    is_simplified_chinese(locale)
}

/// Whether a session in `locale` reads a plugin's `zh` variant (`PLUGIN.zh.md`): its
/// instruction variant candidates reach the tag `zh`. Upstream:
/// Simplified-Chinese sessions read the variant; every other language reads canonical.
pub fn reads_instruction_variant(locale: &str) -> bool {
    instruction_variant_candidates(locale, None)
        .iter()
        .any(|tag| normalize_locale(tag) == "zh")
}

/// `zh` for the default locale's own spellings (`zh`, `zh-CN`, `zh-Hans`, any case, `_` or
/// `-`), `en` for every other locale (the SDK's `pickLocaleText`).
pub fn pick_locale_text<T>(locale: &str, zh: T, en: T) -> T {
    match normalize_locale(locale).as_str() {
        "zh" | "zh-cn" | "zh-hans" => zh,
        _ => en,
    }
}

// ---- i18n text ---------------------------------------------------------------------------

fn usable(value: &Value) -> Option<&str> {
    value.as_str().filter(|s| !s.is_empty())
}

fn locale_entry<'a>(entries: &[(String, &'a Value)], locale: &str) -> Option<&'a str> {
    let wanted = normalize_locale(locale);
    entries
        .iter()
        .filter(|(key, _)| normalize_locale(key) == wanted)
        .find_map(|(_, v)| usable(v))
}

fn same_script_entry<'a>(entries: &[(String, &'a Value)], locale: &str) -> Option<&'a str> {
    entries
        .iter()
        .find(|(key, v)| usable(v).is_some() && locales_share_language_and_script(locale, key))
        .and_then(|(_, v)| usable(v))
}

fn first_text<'a>(entries: &[(String, &'a Value)]) -> Option<&'a str> {
    entries
        .iter()
        .find_map(|(_, v)| usable(v))
        .or_else(|| entries.iter().find_map(|(_, v)| v.as_str()))
}

/// The text of an I18nText (a string or a locale map) for `locale`: the exact key, then the
/// lookup candidates, then the same language in the same script, then the registry's
/// fallbacks (English), then the first text. A string is returned as it is; `null`, a map
/// without text and any other value give `""`. A blank locale takes the first text.
pub fn resolve_i18n_text(text: &Value, locale: &str) -> String {
    let entries: Vec<(String, &Value)> = match text {
        Value::String(s) => return s.clone(),
        Value::Object(map) => map.iter().map(|(k, v)| (k.clone(), v)).collect(),
        // An array is a JavaScript object keyed by index.
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, v)| (i.to_string(), v))
            .collect(),
        _ => return String::new(),
    };
    resolve_entries(&entries, locale)
        .unwrap_or_default()
        .to_string()
}

fn resolve_entries<'a>(entries: &[(String, &'a Value)], locale: &str) -> Option<&'a str> {
    if js_trim(locale).is_empty() {
        return first_text(entries);
    }
    if let Some(exact) = locale_entry(entries, locale) {
        return Some(exact);
    }
    for candidate in locale_lookup_candidates(locale).iter().skip(1) {
        if let Some(found) = locale_entry(entries, candidate) {
            return Some(found);
        }
    }
    if let Some(sibling) = same_script_entry(entries, locale) {
        return Some(sibling);
    }
    for fallback in fallback_locales_for(locale) {
        for candidate in locale_lookup_candidates(&fallback) {
            if let Some(found) = locale_entry(entries, &candidate) {
                return Some(found);
            }
        }
        if let Some(related) = same_script_entry(entries, &fallback) {
            return Some(related);
        }
    }
    first_text(entries)
}

#[cfg(test)]
mod tests {

    #[test]
    fn messages_follow_the_locale_rule() {
        let messages: std::collections::BTreeMap<String, &str> = ["zh", "fr", "en", "zh_hk"]
            .into_iter()
            .map(|name| (name.to_string(), name))
            .collect();
        let read = |locale: &str| messages_for_locale(&messages, locale).copied();
        assert_eq!(read("zh-CN"), Some("zh"));
        assert_eq!(read("ZH_cn"), Some("zh"));
        assert_eq!(read("fr_CA"), Some("fr"));
        assert_eq!(
            read("zh-HK"),
            Some("zh_hk"),
            "file names compare as locale keys"
        );
        assert_eq!(
            read("zh-TW"),
            Some("en"),
            "Traditional never reads Simplified"
        );
        assert_eq!(read("ja"), Some("en"));
        assert_eq!(read("../zh"), Some("en"));
        let none: std::collections::BTreeMap<String, &str> = std::collections::BTreeMap::new();
        assert_eq!(messages_for_locale(&none, "fr"), None);
    }
    use super::*;
    use serde_json::json;

    #[test]
    fn canonical_tags() {
        assert_eq!(canonicalize_locale("sh").as_deref(), Some("sr-Latn"));
        assert_eq!(
            canonicalize_locale("en-u-ca-gregory-a-bc").as_deref(),
            Some("en-a-bc-u-ca-gregory")
        );
        assert_eq!(
            canonicalize_locale("en-x-Private").as_deref(),
            Some("en-x-private")
        );
        assert_eq!(canonicalize_locale("de-UK").as_deref(), Some("de-GB"));
        assert_eq!(canonicalize_locale("es-419").as_deref(), Some("es-419"));
        assert_eq!(canonicalize_locale("en-x"), None);
        assert_eq!(canonicalize_locale("en-1901-1901"), None);
        assert_eq!(canonicalize_locale("en-u-ca-u-nu"), None);
        assert_eq!(canonicalize_locale("zh-yue-HK"), None, "extlang");
        assert_eq!(canonicalize_locale("en--US"), None);
        assert_eq!(
            canonicalize_locale("\u{feff}en\u{3000}").as_deref(),
            Some("en"),
            "JavaScript's trim"
        );
    }

    #[test]
    fn scripts_decide_shared_lookups() {
        assert_eq!(locale_lookup_candidates("zh-HK"), vec!["zh-HK"]);
        assert_eq!(
            locale_lookup_candidates("zh-Hans-CN"),
            vec!["zh-Hans-CN", "zh"]
        );
        assert_eq!(locale_lookup_candidates("sr-ME"), vec!["sr-ME"]);
        assert_eq!(locale_lookup_candidates("en"), vec!["en"]);
        assert!(locales_share_language_and_script("zh-TW", "zh-Hant"));
        assert!(
            !locales_share_language_and_script("iw", "he"),
            "languages compare as written"
        );
    }

    #[test]
    fn resources_fall_back_to_english() {
        assert_eq!(
            locale_resource_candidates("fr_CA"),
            vec!["fr-CA", "fr", "en-US", "en"]
        );
        assert_eq!(
            locale_resource_candidates("zh-TW"),
            vec!["zh-TW", "en-US", "en"]
        );
        assert_eq!(locale_resource_candidates("en"), vec!["en"]);
        assert_eq!(locale_resource_candidates("../x"), vec!["en-US", "en"]);
    }

    #[test]
    fn english_keys_are_reached_through_fallbacks() {
        assert_eq!(
            resolve_i18n_text(&json!({"fr": "Quête", "en-GB": "Quest"}), "ja"),
            "Quest"
        );
        assert_eq!(resolve_i18n_text(&json!({"a": ""}), "ja"), "");
        assert_eq!(resolve_i18n_text(&json!(3), "ja"), "");
    }

    #[test]
    fn only_simplified_chinese_reads_the_variant() {
        for locale in ["zh", "ZH_cn", "zh-SG", "zh-Hans-HK", "cmn"] {
            assert!(reads_instruction_variant(locale), "{locale}");
        }
        for locale in [
            "zh-TW",
            "zh_tw",
            "zh-HK",
            "zh-Hant",
            "zh-Hant-CN",
            "en",
            "ja",
            "",
            "../zh",
        ] {
            assert!(!reads_instruction_variant(locale), "{locale}");
        }
        assert_eq!(
            instruction_variant_candidates("zh-TW", instruction_locale_override(Some(" ZH "))),
            vec!["zh"]
        );
        assert_eq!(
            instruction_locale_for("zh-CN", instruction_locale_override(Some("en"))),
            "en"
        );
    }
}
