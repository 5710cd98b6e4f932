import { describe, expect, it } from "vitest";
import { fixture as initial } from "../../fixtures/snapshot";
import { fixture as afterTurn } from "../../fixtures/after-turn";
import { fixture as afterReload } from "../../fixtures/after-reload";
import { fixture as memoizedReload } from "../../fixtures/memoized-reload";
import { fixture as promptChange } from "../../fixtures/reload-prompt-change";
import { applyJsonChange, applyPatch, isSnapshot, memoAnswer, mergePositions, patchOf } from "./patch";
import type { JsonValue, Snapshot, SnapshotPatch } from "./wire";

/** Applies a patch that must apply. */
function apply(snapshot: Snapshot, patch: SnapshotPatch): Snapshot {
  const next = applyPatch(snapshot, patch);
  if (!next) throw new Error(`patch on ${patch.since} does not apply to version ${snapshot.version}`);
  return next;
}

describe("merging a snapshot patch", () => {
  it("replaces only the parts a patch holds and leaves the rest as they were", () => {
    const merged = apply(initial, { since: 0, version: 1, preview: patchOf(afterReload, 0).preview, lastReload: afterReload.lastReload });
    expect(merged.version).toBe(1);
    expect(merged.preview).toEqual(afterReload.preview);
    expect(merged.lastReload).toBe(afterReload.lastReload);
    expect(merged.plugins).toBe(initial.plugins);
    expect(merged.turns).toBe(initial.turns);
    expect(merged.sessionText).toBe(initial.sessionText);
    expect(initial.lastReload, "the snapshot given is not changed").toBeUndefined();
  });
  it("replaces only the preview parts a patch holds: the prompt and segments stay the objects held", () => {
    expect(initial.preview.calls.length, "the fixture has calls to patch").toBeGreaterThan(1);
    const rerun = { ...initial.preview.calls[0], durationMs: 12.34 };
    const timings = { ...initial.preview.timings, totalMs: 1 };
    const merged = apply(initial, { since: 0, version: 1, preview: { calls: { count: initial.preview.calls.length, changed: [{ index: 0, item: rerun }] }, timings } });
    expect(merged.preview.calls[0], "a call that ran again replaces the one held").toBe(rerun);
    expect(merged.preview.calls[1], "the other calls stay the objects held").toBe(initial.preview.calls[1]);
    expect(merged.preview.timings).toBe(timings);
    expect(merged.preview.prompt).toBe(initial.preview.prompt);
    expect(merged.preview.segments).toBe(initial.preview.segments);
    expect(initial.preview.timings.totalMs, "the snapshot given is not changed").not.toBe(1);
    const cleared = apply(merged, { since: 1, version: 2, preview: { historyRewrites: [] } });
    expect("historyRewrites" in cleared.preview, "an empty list of rewrites is omitted, as the preview omits it").toBe(false);
  });
  it("rebuilds a reload's prompt from the change the studio sent: its texts' splices, not its text", () => {
    // The studio's own change (reload-prompt-change), made against the prompt the window held:
    // the opened one (the Rust side checks it is `initial`'s).
    const change = promptChange;
    const held = initial.preview.prompt as unknown as JsonValue;
    expect(JSON.stringify(change).length, "the change is a fraction of the prompt").toBeLessThan(JSON.stringify(held).length / 4);
    expect(applyJsonChange(held, change)).toEqual(afterReload.preview.prompt);
    // Through a patch: the prompt changes, what the change does not touch stays the object held.
    const merged = apply(initial, { since: 0, version: 1, preview: { prompt: change } });
    expect(merged.preview.prompt).toEqual(afterReload.preview.prompt);
    expect(merged.preview.prompt.messages, "an unchanged part is the object held").toBe(initial.preview.prompt.messages);
    expect(merged.preview.prompt.system.blocks[0]).toBe(initial.preview.prompt.system.blocks[0]);
    // A change made against another prompt asks for the whole snapshot.
    expect(applyPatch(initial, { since: 0, version: 1, preview: { prompt: { text: { keepStart: 0, keepEnd: 0, insert: "x" } } } })).toBeNull();
  });
  it("splices texts by UTF-16 units and refuses a change made against another value", () => {
    const held: JsonValue = { a: ["é🜂 then text 🜂", 1], b: "kept" };
    expect(applyJsonChange(held, { object: { changed: [{ key: "a", change: { array: { count: 3, changed: [{ index: 0, change: { text: { keepStart: 3, keepEnd: 2, insert: " now text " } } }, { index: 2, change: { value: true } }] } } }] } }))
      .toEqual({ a: ["é🜂 now text 🜂", 1, true], b: "kept" });
    expect(applyJsonChange(held, { object: { changed: [{ key: "c", change: { value: 1 } }] } }), "a key it does not hold").toBeUndefined();
    expect(applyJsonChange(held, { array: { count: 1, changed: [] } }), "another kind").toBeUndefined();
    expect(applyJsonChange("ab", { text: { keepStart: 2, keepEnd: 1, insert: "" } }), "a text too short").toBeUndefined();
    expect(applyJsonChange([1], { array: { count: 2, changed: [] } }), "a position left empty").toBeUndefined();
    expect(applyJsonChange([1, 2], { array: { count: 1, changed: [] } })).toEqual([1]);
  });
  it("replaces only the segment rows a patch sends, at their positions; the others stay the objects held", () => {
    const rows = initial.preview.segments;
    expect(rows.length, "the fixture has segments to patch").toBeGreaterThan(2);
    const edited = { ...rows[1], content: "new text", tokens: 2 };
    const merged = apply(initial, { since: 0, version: 1, preview: { segments: { count: rows.length, changed: [{ index: 1, item: edited }] } } });
    expect(merged.preview.segments[1]).toBe(edited);
    expect(merged.preview.segments[0], "an unchanged row is the object held").toBe(rows[0]);
    expect(merged.preview.segments[2]).toBe(rows[2]);
    expect(merged.preview.prompt, "the parts not sent stay the objects held").toBe(initial.preview.prompt);
    const shorter = apply(initial, { since: 0, version: 1, preview: { segments: { count: 1, changed: [] } } });
    expect(shorter.preview.segments).toEqual([rows[0]]);
    const gap = { since: 0, version: 1, preview: { segments: { count: rows.length + 1, changed: [] } } };
    expect(applyPatch(initial, gap), "a table the UI cannot fill asks for the whole snapshot").toBeNull();
  });
  it("replaces only the slot views a patch sends, at their positions; the others stay the objects held", () => {
    expect(initial.preview.slots.length, "the fixture has slots to patch").toBeGreaterThan(1);
    const held = initial.preview.slots[1];
    const rerun = { ...held, revision: "new", chain: { count: held.chain.length, changed: [] } };
    const merged = apply(initial, { since: 0, version: 1, preview: { slots: { count: initial.preview.slots.length, changed: [{ index: 1, item: rerun }] } } });
    expect(merged.preview.slots[1]).toEqual({ ...held, revision: "new" });
    expect(merged.preview.slots[1].chain, "a chain the patch does not change is the one held").toEqual(held.chain);
    expect(merged.preview.slots[0], "an unchanged slot view is the object held").toBe(initial.preview.slots[0]);
    expect(merged.preview.calls).toBe(initial.preview.calls);
    const gap = { since: 0, version: 1, preview: { slots: { count: initial.preview.slots.length + 1, changed: [] } } };
    expect(applyPatch(initial, gap), "a slot list the UI cannot fill asks for the whole snapshot").toBeNull();
  });
  it("merges a slot view's chain by position: only the calls sent replace those held", () => {
    const at = initial.preview.slots.findIndex((s) => s.chain.length > 0);
    expect(at, "the fixture has a slot with a chain").toBeGreaterThanOrEqual(0);
    const view = initial.preview.slots[at];
    // A long chain, as a slot every plugin of a large folder provides.
    const long = { ...view, chain: Array.from({ length: 40 }, (_, i) => ({ ...view.chain[0], providerId: `p${i}` })) };
    const slots = initial.preview.slots.map((s, i) => (i === at ? long : s));
    const held = { ...initial, preview: { ...initial.preview, slots } };
    const rerun = { ...long.chain[7], durationMs: 9.5 };
    const patch = { count: 40, changed: [{ index: 7, item: rerun }] };
    const merged = apply(held, { since: 0, version: 1, preview: { slots: { count: slots.length, changed: [{ index: at, item: { ...long, chain: patch } }] } } });
    const chain = merged.preview.slots[at].chain;
    expect(chain[7], "the call sent replaces the one held").toBe(rerun);
    expect(chain[6], "the other calls are the objects held").toBe(long.chain[6]);
    expect(chain.length).toBe(40);
    // Answered from the memo but for the call sent: the chain says `memoized`.
    const answered = apply(held, { since: 0, version: 1, preview: { slots: { count: slots.length, changed: [{ index: at, item: { ...long, chain: { ...patch, memoized: true } } }], memoized: true } } });
    expect(answered.preview.slots[at].chain[7]).toBe(rerun);
    expect(answered.preview.slots[at].chain[6]).toEqual(memoAnswer(long.chain[6]));
    expect(answered.preview.slots[at].chain.filter((c) => c.cached).length).toBe(39);
    // A chain the patch was not made against asks for the whole snapshot.
    const gap = { since: 0, version: 1, preview: { slots: { count: slots.length, changed: [{ index: at, item: { ...long, chain: { count: 41, changed: [] } } }] } } };
    expect(applyPatch(held, gap)).toBeNull();
  });
  it("rebuilds the first save after opening, whose calls the memo answered, from a flag and the calls that ran", () => {
    // The first save applies to the snapshot as opened (the Rust side checks it is `initial`);
    // the fixture holds what the snapshot after it changes of that one.
    const { patch, afterChanges } = memoizedReload;
    const after: Snapshot = { ...initial, ...afterChanges, preview: { ...initial.preview, ...afterChanges.preview } };
    const before = { ...initial, version: patch.since };
    const calls = patch.preview?.calls;
    expect(calls?.memoized, "the fixture's calls cross as one flag").toBe(true);
    expect(calls?.changed.length, "only the calls that ran again are sent").toBeLessThan(after.preview.calls.length / 2);
    const merged = apply(before, patch);
    expect({ ...merged, version: 0 }).toEqual({ ...after, version: 0 });
    expect(merged.preview.calls.filter((c) => c.cached).length).toBe(after.preview.calls.filter((c) => c.cached).length);
    // Once answered, a record stays the object held through the next such patch.
    const again = apply(merged, { since: merged.version, version: merged.version + 1, preview: { calls: { count: merged.preview.calls.length, changed: [], memoized: true } } });
    const answered = merged.preview.calls.findIndex((c) => c.cached);
    expect(answered, "the fixture has a memo answer").toBeGreaterThanOrEqual(0);
    expect(again.preview.calls[answered]).toBe(merged.preview.calls[answered]);
    expect(again.preview.calls.every((c) => c.cached && c.durationMs === 0), "and every call is now an answer").toBe(true);
  });
  it("turns a call that ran into the memo answer that reuses it: no duration of its own, the run's as ranMs", () => {
    const ran = { ...initial.preview.calls[0], durationMs: 2.37, cached: false, notCached: "its answer awaits a second identical call" };
    const answer = memoAnswer(ran);
    expect(answer).toMatchObject({ durationMs: 0, cached: true, ranMs: 2.37 });
    expect(answer.notCached).toBeUndefined();
    expect(memoAnswer(answer), "an answer stays the object held").toBe(answer);
    const older = { ...ran, durationMs: 0, cached: true, ranMs: undefined, notCached: undefined };
    expect("ranMs" in memoAnswer({ ...older, durationMs: 0.4 }), "an answer that never said its run does not make one up").toBe(false);
  });
  it("asks for the whole snapshot when a list it cannot answer from the memo says memoized", () => {
    expect(mergePositions(initial.plugins, { count: initial.plugins.length, changed: [], memoized: true })).toBeNull();
  });
  it("appends played turns after the ones kept, and an undo keeps one fewer", () => {
    const turn = afterTurn.turns[0];
    const played = apply(initial, { since: 0, version: 1, turns: { keep: 0, append: [turn] }, undo: afterTurn.undo });
    expect(played.turns).toEqual([turn]);
    expect(played.undo).toEqual(afterTurn.undo);
    const second = { ...turn, turnId: "t2" };
    const twice = apply(played, { since: 1, version: 2, turns: { keep: 1, append: [second] } });
    expect(twice.turns.map((t) => t.turnId)).toEqual([turn.turnId, "t2"]);
    expect(twice.turns[0], "a kept turn is the one the UI had").toBe(turn);
    const undone = apply(twice, { since: 2, version: 3, turns: { keep: 1, append: [] }, undo: null });
    expect(undone.turns).toEqual([turn]);
    expect("undo" in undone, "null removes a part the snapshot may omit").toBe(false);
  });
  it("replaces only the plugins a patch sends, at their positions; the others stay the objects held", () => {
    expect(initial.plugins.length, "the fixture has plugins to patch").toBeGreaterThan(2);
    const reloaded = { ...initial.plugins[1], loadMs: 1234 };
    const merged = apply(initial, { since: 0, version: 1, plugins: { count: initial.plugins.length, changed: [{ index: 1, item: reloaded }] } });
    expect(merged.plugins[1]).toBe(reloaded);
    expect(merged.plugins[0], "an unchanged plugin is the object held").toBe(initial.plugins[0]);
    expect(merged.plugins[2]).toBe(initial.plugins[2]);
    expect(initial.plugins[1].loadMs, "the snapshot given is not changed").not.toBe(1234);
    const removed = apply(merged, { since: 1, version: 2, plugins: { count: 1, changed: [] } });
    expect(removed.plugins).toEqual([initial.plugins[0]]);
    const added = apply(removed, { since: 2, version: 3, plugins: { count: 2, changed: [{ index: 1, item: reloaded }] } });
    expect(added.plugins.map((p) => p.name)).toEqual([initial.plugins[0].name, reloaded.name]);
    expect(
      applyPatch(removed, { since: 2, version: 3, plugins: { count: 3, changed: [{ index: 2, item: reloaded }] } }),
      "a position the patch leaves empty means it was made against another list: ask for the whole snapshot",
    ).toBeNull();
  });
  it("refuses a patch that arrived out of order", () => {
    const played = apply(initial, { since: 0, version: 1, turns: { keep: 0, append: [afterTurn.turns[0]] } });
    expect(applyPatch(played, { since: 0, version: 1, preview: patchOf(afterReload, 0).preview })).toBeNull();
  });
  it("gives the snapshot back from a whole-snapshot patch, and tells snapshots from patches", () => {
    const other: Snapshot = { ...afterTurn, lastReload: afterReload.lastReload };
    expect(apply(initial, patchOf(other, 0))).toEqual({ ...other, version: 1 });
    expect(apply(other, patchOf(initial, 0))).toEqual({ ...initial, version: 1 });
    expect(isSnapshot(initial)).toBe(true);
    expect(isSnapshot(patchOf(initial, 0))).toBe(false);
    expect(isSnapshot({ since: 0, version: 1 })).toBe(false);
  });
});
