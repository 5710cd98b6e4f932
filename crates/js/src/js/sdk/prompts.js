// @covel/plugin-handlers-utils/prompts — a plugin's own prompt templates, read from its files.
import { readPluginFile } from "covel:host";
import { canonicalizeLocale, localeLookupCandidates, localeRegistry } from "@covel/plugin-handlers-utils";

/**
 * File names to try for a template, most specific first: `<name>.<locale>.md` for the
 * canonical locale, its same-script language and the registry's fallbacks (`zh-CN` →
 * `name.zh-CN.md`, `name.zh.md`, `name.en-US.md`, `name.en.md`), then `<name>.md`.
 * Without a locale only `<name>.md`. An invalid locale throws.
 */
function promptFileNames(name, locale) {
  if (!locale) return [`${name}.md`];
  const canonical = canonicalizeLocale(locale);
  if (!canonical) throw new Error(`[loadPrompt] Invalid locale: ${JSON.stringify(locale)}`);
  const names = [];
  for (const tag of [canonical, ...localeRegistry.fallbackLocalesFor(canonical)]) {
    for (const candidate of localeLookupCandidates(tag)) names.push(`${name}.${candidate}.md`);
  }
  names.push(`${name}.md`);
  return [...new Set(names)];
}

/** Joins path pieces and resolves `.`/`..` (an absolute root stays absolute; a `file://` prefix is dropped). */
function joinPath(...pieces) {
  const first = String(pieces[0] ?? "").replace(/^file:\/\//, "");
  const absolute = first.startsWith("/");
  const parts = [];
  for (const piece of [first, ...pieces.slice(1).map(String)]) {
    for (const part of piece.split("/")) {
      if (part === "" || part === ".") continue;
      if (part === ".." && parts.length && parts[parts.length - 1] !== "..") parts.pop();
      else if (part === ".." && absolute) continue;
      else parts.push(part);
    }
  }
  const body = parts.join("/");
  return absolute ? `/${body}` : body || ".";
}

function readPrompt(root, dir, name, locale) {
  const tried = [];
  for (const file of promptFileNames(name, locale)) {
    const full = joinPath(root, dir, file);
    tried.push(full);
    const text = readPluginFile(full);
    if (typeof text === "string") return text;
  }
  throw new Error(
    `[loadPrompt] No prompt file found (not found: dir="${dir}" name="${name}" locale="${locale ?? "(none)"}"). Tried:\n  ${tried.join("\n  ")}`,
  );
}

/**
 * A prompt loader for the plugin folder `root` (relative to the plugin root, or an absolute
 * path or `file:` URL inside it): `await loader(dir, name, locale)` reads the best-matching
 * `<root>/<dir>/<name>[.<locale>].md` and rejects when none exists. Reads stay inside the
 * plugin root. (Studio: `loader.load(name, locale)` reads `<root>/<name>…` synchronously.)
 */
export function createPromptLoader(root = ".") {
  const base = String(root);
  const loader = async (dir, name, locale) => readPrompt(base, dir, name, locale);
  loader.load = (name, locale) => readPrompt(base, ".", name, locale);
  return loader;
}
