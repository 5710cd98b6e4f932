// Svelte drops the white space at the start of a block and of an element, so
// `{n}{#if range} ({range})` showed "2283(1921–2734)" and `ok<span> · cached</span>` showed
// "ok· cached". A space they must start with is written as an expression: `{" "}`.
import { describe, expect, it } from "vitest";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";

const sources = join(import.meta.dirname, "../src");

describe("the components' templates", () => {
  it("start no block with a space, which Svelte would drop", async () => {
    const files = (await readdir(sources, { recursive: true })).filter((f) => f.endsWith(".svelte"));
    expect(files.length).toBeGreaterThan(10);
    const found = [];
    for (const file of files) {
      const lines = (await readFile(join(sources, file), "utf8")).split("\n");
      lines.forEach((line, i) => {
        for (const m of line.matchAll(/\{(?:#if|:else if|:else|#each|#key)\b[^}]*\} +(?=[^\s{])/g)) found.push(`${file}:${i + 1}: ${m[0]}`);
      });
    }
    expect(found).toEqual([]);
  });

  it("start no inline element's text with a space, which Svelte would drop", async () => {
    const files = (await readdir(sources, { recursive: true })).filter((f) => f.endsWith(".svelte"));
    const found = [];
    for (const file of files) {
      const lines = (await readFile(join(sources, file), "utf8")).split("\n");
      lines.forEach((line, i) => {
        for (const m of line.matchAll(/<(?:span|em|strong|b|i|small|code|a|label)(?:\s[^>{]*)?> +(?=[^\s<{])/g)) found.push(`${file}:${i + 1}: ${m[0]}`);
      });
    }
    expect(found).toEqual([]);
  });
});
