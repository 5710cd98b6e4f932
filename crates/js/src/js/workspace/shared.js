// `@covel/shared` as upstream's bundled plugins import it (world-time, world-init): a thin
// module re-exporting the i18n names upstream's package shares with the SDK. The loader notes
// every import of it (`workspace-package-import`): a community plugin imports these names from
// `@covel/plugin-handlers-utils`. A name not listed here (`DIMENSION_KEYS`, …) is an import
// error naming the module and the name.
export { resolveI18nText, resolveI18nDeep, isLocaleMap } from "@covel/plugin-handlers-utils";
