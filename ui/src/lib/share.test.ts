import { describe, expect, it } from "vitest";
import { fixture as initial } from "../../fixtures/snapshot";
import { fixture as afterReload } from "../../fixtures/after-reload";
import { share } from "./share";

describe("structural sharing between snapshots", () => {
  it("gives back the previous object when the new one is deep-equal", () => {
    const copy = structuredClone(initial.preview);
    expect(share(initial.preview, copy)).toBe(initial.preview);
  });

  it("keeps the unchanged segments and messages as the previous objects and takes the changed ones", () => {
    const next = structuredClone(initial.preview);
    next.segments[1].content += " changed";
    const shared = share(initial.preview, next);
    expect(shared).not.toBe(initial.preview);
    expect(shared).toEqual(next);
    expect(shared.segments).not.toBe(initial.preview.segments);
    expect(shared.segments[0]).toBe(initial.preview.segments[0]);
    expect(shared.segments[1]).not.toBe(initial.preview.segments[1]);
    expect(shared.segments[1].content).toBe(next.segments[1].content);
    expect(shared.segments.slice(2).every((s, i) => s === initial.preview.segments[i + 2])).toBe(true);
    expect(shared.prompt).toBe(initial.preview.prompt);
  });

  it("matches the items after an insertion or a removal from the end", () => {
    const a = { id: "a" };
    const b = { id: "b" };
    const c = { id: "c" };
    const inserted = share([a, b, c], [{ id: "a" }, { id: "new" }, { id: "b" }, { id: "c" }]);
    expect(inserted[0]).toBe(a);
    expect(inserted[1]).toEqual({ id: "new" });
    expect(inserted[2]).toBe(b);
    expect(inserted[3]).toBe(c);
    const removed = share([a, b, c], [{ id: "a" }, { id: "c" }]);
    expect(removed).toEqual([{ id: "a" }, { id: "c" }]);
    expect(removed[0]).toBe(a);
    expect(removed[1]).toBe(c);
  });

  it("tells a key added, removed or set to another type apart from an equal object", () => {
    const prev = { a: 1, b: [1, 2], c: { d: "x" } };
    expect(share(prev, { a: 1, b: [1, 2], c: { d: "x" } })).toBe(prev);
    expect(share(prev, { a: 1, b: [1, 2] })).toEqual({ a: 1, b: [1, 2] });
    expect(share(prev, { a: 1, b: [1, 2], c: { d: "x" }, e: null })).toEqual({ ...prev, e: null });
    expect(share(prev, { a: 1, b: { 0: 1, 1: 2 }, c: { d: "x" } })).toEqual({ a: 1, b: { 0: 1, 1: 2 }, c: { d: "x" } });
    expect(share(prev, { a: "1", b: [1, 2], c: null })).toEqual({ a: "1", b: [1, 2], c: null });
    const partly = share(prev, { a: 2, b: [1, 2], c: { d: "x" } });
    expect(partly.b).toBe(prev.b);
    expect(partly.c).toBe(prev.c);
  });

  it("takes a Set or a Map from the new value: their entries are not compared", () => {
    const set = new Set(["a"]);
    const next = { s: new Set(["b"]) };
    expect(share({ s: set }, next).s).toBe(next.s);
  });

  it("leaves both arguments as they were", () => {
    const before = structuredClone(initial);
    const next = structuredClone(afterReload);
    const nextCopy = structuredClone(next);
    const shared = share(initial, next);
    expect(initial).toEqual(before);
    expect(next).toEqual(nextCopy);
    expect(shared).toEqual(nextCopy);
  });
});
