// @covel/plugin-handlers-utils/prompts — the plugin's own prompt templates.
import { readPluginFile } from "covel:host";

/** Loads `<name>.md` (English) and `<name>.zh.md` (Simplified Chinese) under `root`. */
export function createPromptLoader(root = ".") {
  const dir = String(root).replace(/\/+$/, "");
  return {
    load(name, locale = "en") {
      const chinese = /^zh(\b|[-_])/i.test(String(locale));
      const tried = [];
      for (const file of chinese ? [`${dir}/${name}.zh.md`, `${dir}/${name}.md`] : [`${dir}/${name}.md`]) {
        tried.push(file);
        const text = readPluginFile(file);
        if (text != null) return text;
      }
      throw new Error(`prompt template not found; tried ${tried.join(", ")}`);
    },
  };
}
