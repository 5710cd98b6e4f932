// The UI's port of the locale rule on the table the kernel and the SDK are checked on
// (tests/fixtures/sdk/locale-vectors.json; crates' test: sessions_and_context.rs).
import { describe, expect, it } from "vitest";
import { canonicalizeLocale, localeLookupCandidates, resolveI18nText } from "./locale";
import { text } from "./view";
import table from "../../../tests/fixtures/sdk/locale-vectors.json";

type Vector<T> = { name?: string; locale: string; text?: Record<string, string>; expected: T };
const vectors = table as unknown as {
  canonical: Vector<string | null>[];
  lookup: Vector<string[]>[];
  i18n: Vector<string>[];
};

describe("locale vectors shared with the kernel and the SDK", () => {
  it.each(vectors.canonical.map((v) => [v.locale, v.expected] as const))("canonical %j → %j", (locale, expected) => {
    expect(canonicalizeLocale(locale) ?? null).toBe(expected);
  });
  it.each(vectors.lookup.map((v) => [v.locale, v.expected] as const))("lookup %j → %j", (locale, expected) => {
    expect(localeLookupCandidates(locale)).toEqual(expected);
  });
  it.each(vectors.i18n.map((v) => [v.name, v] as const))("i18n: %s", (_name, v) => {
    expect(resolveI18nText(v.text, v.locale)).toBe(v.expected);
    expect(text(v.text, v.locale)).toBe(v.expected);
  });
});

describe("text", () => {
  it("gives an empty string where the SDK gives nothing", () => {
    expect(text(undefined)).toBe("");
    expect(text(null)).toBe("");
    expect(text({}, "en")).toBe("");
  });
  it("never shows Simplified text to a Traditional locale while English exists", () => {
    expect(text({ zh: "任务", en: "Quest" }, "zh_TW")).toBe("Quest");
    expect(text({ zh: "任务", en: "Quest" }, "ZH_cn")).toBe("任务");
  });
});
