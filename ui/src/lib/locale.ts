// The locale rule the UI applies to plugin texts is the plugin SDK's own module
// (crates/js/src/js/sdk/locale.js), imported as it is: one home for the rule in JavaScript. The
// kernel's Rust side (crates/kernel/src/locale.rs) passes the same vectors
// (tests/fixtures/sdk/locale-vectors.json), checked in locale.test.ts and sessions_and_context.rs.
//
// The rule: the exact key, then the lookup candidates (the canonical tag, then its bare language
// when written in the same script: zh-CN → zh, never zh-TW → zh), then any key of the same
// language and script, then en-US / en / any English key, then the first text.
import * as sdk from "../../../crates/js/src/js/sdk/locale.js";

/** A string, or a map from locale to text (`{ "en": "Quest", "zh-CN": "任务" }`). */
export type I18nText = string | Record<string, string>;

/** The canonical form of a safe BCP 47 locale (`ru_ru` → `ru-RU`); `undefined` if unsafe. */
export const canonicalizeLocale: (locale: string) => string | undefined = sdk.canonicalizeLocale;

/** The keys to try for `locale`, most specific first (`zh-CN` → `zh-CN`, `zh`). */
export const localeLookupCandidates: (locale: string) => string[] = sdk.localeLookupCandidates;

/**
 * The text of an I18nText for `locale`; `undefined` for `undefined` and for a map without text,
 * `""` for `null`, a string as it is.
 */
export const resolveI18nText: (text: I18nText | null | undefined, locale?: string) => string | undefined =
  sdk.resolveI18nText;
