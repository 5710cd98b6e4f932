import { describe, expect, it } from "vitest";
import { fixture as initial } from "../../fixtures/snapshot";
import { fixture as afterTurn } from "../../fixtures/after-turn";
import { fixture as afterReload } from "../../fixtures/after-reload";
import { applyPatch, isSnapshot, patchOf } from "./patch";
import type { Snapshot } from "./wire";

describe("merging a snapshot patch", () => {
  it("replaces only the parts a patch holds and leaves the rest as they were", () => {
    const merged = applyPatch(initial, { preview: afterReload.preview, lastReload: afterReload.lastReload });
    expect(merged.preview).toBe(afterReload.preview);
    expect(merged.lastReload).toBe(afterReload.lastReload);
    expect(merged.plugins).toBe(initial.plugins);
    expect(merged.turns).toBe(initial.turns);
    expect(merged.sessionText).toBe(initial.sessionText);
    expect(initial.lastReload, "the snapshot given is not changed").toBeUndefined();
  });
  it("appends played turns after the ones kept, and an undo keeps one fewer", () => {
    const turn = afterTurn.turns[0];
    const played = applyPatch(initial, { turns: { keep: 0, append: [turn] }, undo: afterTurn.undo });
    expect(played.turns).toEqual([turn]);
    expect(played.undo).toEqual(afterTurn.undo);
    const second = { ...turn, turnId: "t2" };
    const twice = applyPatch(played, { turns: { keep: 1, append: [second] } });
    expect(twice.turns.map((t) => t.turnId)).toEqual([turn.turnId, "t2"]);
    expect(twice.turns[0], "a kept turn is the one the UI had").toBe(turn);
    const undone = applyPatch(twice, { turns: { keep: 1, append: [] }, undo: null });
    expect(undone.turns).toEqual([turn]);
    expect("undo" in undone, "null removes a part the snapshot may omit").toBe(false);
  });
  it("gives the snapshot back from a whole-snapshot patch, and tells snapshots from patches", () => {
    const other: Snapshot = { ...afterTurn, lastReload: afterReload.lastReload };
    expect(applyPatch(initial, patchOf(other))).toEqual(other);
    expect(applyPatch(other, patchOf(initial))).toEqual(initial);
    expect(isSnapshot(initial)).toBe(true);
    expect(isSnapshot(patchOf(initial))).toBe(false);
    expect(isSnapshot({})).toBe(false);
  });
});
