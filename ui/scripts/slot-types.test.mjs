// The slot value types are what the kernel's slot schemas give: run `npm run gen:slots` after
// the schemas change (tests/suites/ui_fixtures.rs rewrites slot-schemas.json from the kernel).
import { describe, expect, it } from "vitest";
import { readFile } from "node:fs/promises";
import { schemasPath, slotTypes, typeName, typesPath } from "./slot-types.mjs";

describe("slot value types", () => {
  it("are what the kernel's slot schemas give", async () => {
    const schemas = JSON.parse(await readFile(schemasPath, "utf8"));
    expect(await readFile(typesPath, "utf8")).toBe(await slotTypes(schemas));
  });

  it("cover every kernel slot, each named after its id, with localized texts as the wire's I18n", async () => {
    const schemas = JSON.parse(await readFile(schemasPath, "utf8"));
    const types = await readFile(typesPath, "utf8");
    for (const slot of Object.keys(schemas)) expect(types).toContain(`"${slot}": ${typeName(slot)};`);
    expect(typeName("character.visual@1")).toBe("CharacterVisual");
    expect(types).toMatch(/label: I18n;/);
    expect(types).not.toMatch(/\[k: string\]: string \| undefined/);
  });
});
