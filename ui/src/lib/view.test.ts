import { describe, expect, it } from "vitest";
import { fixture as snapshot } from "../../fixtures/snapshot";
import { fixture as forecast } from "../../fixtures/forecast";
import { fixture as tests } from "../../fixtures/tests";
import { fixture as afterReload } from "../../fixtures/after-reload";
import { fixture as bodies } from "../../fixtures/request-bodies";
import type { CallRecord, Snapshot, SlotId, TurnRecord } from "./wire";
import { activeActor, blockRows, outline, breakpointLabel, cacheReason, sdkCall, chains, providerChains, changedRows, changedSegments, contentBefore, differenceLabel, draftAfterSnapshot, forecastSummary, listView, meter, movingBreakpoint, nextTurnCacheRead, placementLabel, summaryEntries, systemBreakpoint, testCounts, text, usd, where, turnRecordChanges, usageLine, replayCounterpart, highlightParts, draftFor, runtimeTarget, runtimeValue, pointMode, orderDecides } from "./view";

const demo: Snapshot = snapshot;

describe("text", () => {
  it("resolves locale maps with fallbacks", () => {
    expect(text({ en: "Quest", zh: "任务" }, "zh-CN")).toBe("任务");
    expect(text({ fr: "Quête" }, "ja")).toBe("Quête");
    expect(text("plain", "fr")).toBe("plain");
    expect(text(undefined)).toBe("");
  });
});

describe("meters and lists", () => {
  it("clamps a meter and keeps max above min", () => {
    expect(meter({ value: 12, max: 10 })).toEqual({ value: 10, min: 0, max: 10, percent: 100 });
    expect(meter({ value: 5, min: 5, max: 5 }).max).toBe(6);
  });
  it("counts the items a list leaves out", () => {
    expect(listView({ items: ["a", "", "b"], total: 5 }, "en")).toEqual({ items: ["a", "b"], more: 3 });
  });
  it("lets a later summary entry with the same id replace an earlier one", () => {
    const meter = (id: string, value: number) => ({ id, label: id, kind: "meter" as const, value, max: 10 });
    const merged = summaryEntries({ entries: [meter("x", 1), meter("y", 5), meter("x", 2)] });
    expect(merged).toEqual([meter("x", 2), meter("y", 5)]);
  });
});

describe("stage", () => {
  it("highlights the actor flagged active, else the first one not exiting", () => {
    const actor = (characterId: string, flags: { active?: boolean; exiting?: boolean } = {}) => ({ characterId, displayName: characterId.toUpperCase(), ...flags });
    expect(activeActor({ actors: [actor("a", { active: false }), actor("b", { active: true })] })).toBe("b");
    expect(activeActor({ actors: [actor("a", { exiting: true }), actor("b")] })).toBe("b");
  });
});

describe("provider chains", () => {
  const call = (pluginId: string, providerId: string, order: number, slot?: SlotId): CallRecord => ({
    point: "ui.slot@1", pluginId, providerId, order, slot, outcome: "success", durationMs: 0,
  });
  it("groups calls per point and slot and flags ties broken by plugin id", () => {
    const result = chains([call("a", "x", 0, "stage.cast@1"), call("b", "y", 0, "stage.cast@1"), call("c", "z", 5, "stage.cast@1"), call("d", "m", 0, "stage.music@1")], demo.points);
    expect(result.map((c) => c.key)).toEqual(["ui.slot@1 → stage.cast@1", "ui.slot@1 → stage.music@1"]);
    expect([...result[0].ties]).toEqual(["a/x", "b/y"]);
  });
  it("marks no tie where the call order decides nothing (a collect point: segments are sorted by their own keys)", () => {
    const segment = (pluginId: string, providerId: string): CallRecord => ({ point: "prompt.segment@1", pluginId, providerId, order: 0, outcome: "success", durationMs: 0 });
    expect([...chains([segment("a", "x"), segment("b", "y")], demo.points)[0].ties]).toEqual([]);
    const demoTies = chains(demo.preview.calls, demo.points).flatMap((c) => [...c.ties].map((t) => `${c.key}: ${t}`));
    expect(demoTies.every((t) => !t.startsWith("prompt.segment@1"))).toBe(true);
  });
  it("reads each point's combination mode from the kernel's contract on the wire", () => {
    expect(demo.points.map((p) => p.point).sort()).toEqual(["history.compact@2", "media.image-flow@1", "prompt.history-transform@1", "prompt.segment@1", "session.world-context@1", "ui.slot@1"]);
    expect(pointMode(demo.points, "prompt.segment@1")).toBe("collect");
    expect(pointMode(demo.points, "ui.slot@1")).toBe("pipeline");
    expect(pointMode(demo.points, "session.world-context@1")).toBe("single");
    expect(orderDecides(demo.points, "prompt.segment@1")).toBe(false);
  });
  it("covers every point of the demo preview", () => {
    const keys = chains(demo.preview.calls, demo.points).map((c) => c.point);
    expect(new Set(keys)).toEqual(new Set(["session.world-context@1", "prompt.history-transform@1", "prompt.segment@1", "ui.slot@1", "media.image-flow@1"]));
  });
});

describe("the demo snapshot", () => {
  it("has every panel's data", () => {
    expect(demo.plugins.length).toBeGreaterThan(5);
    expect(demo.preview.prompt.system.blocks.some((b) => b.cacheBoundary)).toBe(true);
    expect(placementLabel({ kind: "depth", depth: 2 })).toBe("message at depth 2");
    expect(changedSegments(undefined).size).toBe(0);
  });
});

describe("cache breakpoints", () => {
  const cache = demo.preview.cache;
  it("puts the demo's moving breakpoint on m4 and says what moves", () => {
    const m4 = demo.preview.prompt.messages.find((m) => m.origin.kind === "history" && m.origin.id === "m4")!;
    const moving = movingBreakpoint(cache, m4)!;
    expect(moving.stable).toBe(false);
    expect(breakpointLabel(moving, demo.preview.counts)).toMatch(/changes next turn \(first difference: segment lore-book\/remember; next turn: history message m4\)/);
    expect(cache.historyPrefixStable).toBe(false);
    expect(cache.advice.map((a) => a.code)).toEqual(["depth-segment-moves"]);
  });
  it("finds system breakpoints by block and what the next turn still reads", () => {
    const stable = systemBreakpoint(cache, "stable-segments")!;
    // Counted as every panel counts: the story model's count of the prefix, not estimateTokens.
    const counted = demo.preview.counts.breakpoints[stable.index];
    expect(breakpointLabel(stable, demo.preview.counts)).toBe(`cache breakpoint ${stable.index} · ≈${counted.tokens} tokens · stable next turn`);
    expect(systemBreakpoint(cache, "turn-tail")).toBeUndefined();
    expect(nextTurnCacheRead(cache, demo.preview.counts)).toBe(counted.tokens);
    expect(counted.tokens, "the cache report counts with the same counter").toBe(stable.prefixTokens);
  });
});

describe("the session editor's draft", () => {
  const draft = { text: "id: s\nlocale: fr\n", base: "id: s\nlocale: en\n", path: "/a/s.session.yaml" };
  it("survives a reload that did not change the session file", () => {
    expect(draftAfterSnapshot(draft, draft.base)).toEqual({ draft, conflict: null });
  });
  it("ends when the file holds the draft (it was saved)", () => {
    expect(draftAfterSnapshot(draft, draft.text)).toEqual({ draft: null, conflict: null });
  });
  it("is kept and reported as a conflict when the file changed on disk", () => {
    expect(draftAfterSnapshot(draft, "id: s\nlocale: de\n")).toEqual({ draft, conflict: "id: s\nlocale: de\n" });
  });
  it("places a diagnostic at file, line and column", () => {
    expect(where({ file: "a.yaml", line: 3, column: 7 })).toBe("a.yaml:3:7");
    expect(where({ file: "a.yaml" })).toBe("a.yaml");
  });
});

describe("the cache and tests panels", () => {
  it("prices small amounts with five digits and sums the forecast in one line", () => {
    expect(usd(0.001234)).toBe("$0.00123");
    expect(usd(0.0105)).toBe("$0.0105");
    expect(usd(0.0142)).toBe("$0.0142");
    expect(usd(0.25)).toBe("$0.250");
    expect(usd(12)).toBe("$12.00");
    const line = forecastSummary(forecast);
    expect(line).toMatch(/input tokens: .* uncached, .* written, .* read; .* output · \$/);
  });
  it("names the segment and plugin of a golden difference", () => {
    const label = differenceLabel({ place: "system block stable-segments", from: "segment story-director/tone", plugin: "story-director", change: "changed", diff: "" });
    expect(label).toBe("system block stable-segments · segment story-director/tone (plugin story-director) changed");
  });
  it("counts sessions and checks of a test run", () => {
    const counts = testCounts(tests);
    expect(counts.failed).toBe(0);
    expect(counts.sessions).toBe(5);
    expect(counts.checks).toBeGreaterThan(20);
  });
});

describe("providers not called and cache reasons", () => {
  it("a slot's chain names the providers that serve another slot", () => {
    const list = providerChains(demo);
    const music = list.find((c) => c.key === "ui.slot@1 → stage.music@1");
    const backdrop = music?.otherSlot.find((n) => n.pluginId === "scene-stage" && n.providerId === "backdrop");
    expect(backdrop?.reason).toBe("other slot: it serves stage.backdrop@1");
    expect(music?.notCalled.some((n) => n.pluginId === "soundtrack" && n.providerId === "music")).toBe(false);
    const segments = list.find((c) => c.key === "prompt.segment@1");
    expect(segments?.otherSlot).toEqual([]);
  });
  it("says whether a call was answered from the memo and why not", () => {
    const call = demo.preview.calls[0];
    expect(cacheReason({ ...call, cached: true })).toMatch(/^cached: same input and data.*agreed$/);
    expect(cacheReason({ ...call, cached: true, ranMs: 1.5 })).toMatch(/agreed; its first run took 1\.50 ms$/);
    expect(cacheReason({ ...call, cached: false, notCached: "reads the clock" })).toBe("not cached: reads the clock");
    expect(cacheReason({ ...call, cached: false, notCached: undefined })).toMatch(/^not cached: no confirmed earlier answer/);
  });
});

describe("copy as SDK call", () => {
  it("passes the request body unchanged to the provider's JS SDK", () => {
    const body = bodies.snapshot.anthropic;
    const anthropic = sdkCall("anthropic", body);
    expect(anthropic).toMatch(/^import Anthropic from "@anthropic-ai\/sdk";/);
    expect(JSON.parse(anthropic.slice(anthropic.indexOf("create(") + 7, anthropic.lastIndexOf(");\nconsole.log")))).toEqual(body);
    const openai = sdkCall("openai", bodies.snapshot.openai);
    expect(openai).toMatch(/^import OpenAI from "openai";/);
    expect(openai).toContain("client.chat.completions.create(");
  });
});

describe("segment rows of the system blocks", () => {
  // Ids are unique per provider, so two providers of one plugin may each send `p/x`.
  const base = demo.preview.segments[0];
  const row = (id: string, content: string, included = true) => ({ ...base, plugin: "p", id, content, included });
  const rows = [row("x", "from the first provider"), row("y", "other"), row("x", "excluded one", false), row("x", "from the second provider")];
  const blocks = [{ segments: ["p/x", "p/y"] }, { segments: ["p/x"] }];

  it("gives the n-th mention of a key the n-th included row with it, never the first again", () => {
    const shown = blockRows(blocks, rows).map((b) => b.map((r) => r?.content));
    expect(shown).toEqual([["from the first provider", "other"], ["from the second provider"]]);
  });

  it("marks only the changed one of two rows sharing a key, with that row's own before text", () => {
    const state = (index: number) => ({ index, placement: base.placement, sortKey: { volatility: base.volatility, order: 0, providerPluginId: "p", id: "x" }, included: true });
    // The reload changed the second provider's `p/x` (row 3), not the first's (row 0).
    const before = [row("x", "first, unchanged"), row("y", "other"), row("x", "excluded one", false), row("x", "second, before")];
    const after = [before[0], before[1], before[2], row("x", "second, after")];
    const entry = { ...afterReload.lastReload!, diff: { ...afterReload.lastReload!.diff, segments: [{ kind: "changed" as const, plugin: "p", id: "x", before: state(3), after: state(3) }] } };
    expect([...changedRows(entry, after)]).toEqual([after[3]]);
    expect(changedRows(entry, after).has(after[0])).toBe(false);
    expect(contentBefore(entry, after, before).get(after[3])).toBe("second, before");
    expect(contentBefore(entry, after, before).has(after[0])).toBe(false);
    // Keys still mark what only knows a key (messages), and an index that names another row marks nothing.
    expect([...changedSegments(entry)]).toEqual(["p/x"]);
    expect(changedRows(entry, [after[1], after[0]]).size).toBe(0);
    // The outline marks by row too.
    const entries = outline({ segments: after, counts: demo.preview.counts, prompt: { ...demo.preview.prompt, system: { ...demo.preview.prompt.system, blocks: [{ ...demo.preview.prompt.system.blocks[0], segments: ["p/x", "p/y", "p/x"] }] } } }).filter((e) => e.kind === "segment");
    expect(entries.map((e) => e.row && changedRows(entry, after).has(e.row))).toEqual([false, false, true]);
  });

  it("counts each row's tokens once in the outline", () => {
    const tokens = (content: string) => ({ ...row("x", content), tokens: 0 });
    const count = (tokens: number) => ({ tokens, low: tokens, high: tokens });
    const counts = { ...demo.preview.counts, segments: [count(1), count(3)] };
    const preview = { ...demo.preview, counts, segments: [tokens("a"), tokens("bbb")], prompt: { ...demo.preview.prompt, system: { ...demo.preview.prompt.system, blocks: [{ ...demo.preview.prompt.system.blocks[0], segments: ["p/x", "p/x"] }] } } };
    const entries = outline(preview).filter((e) => e.kind === "segment");
    expect(entries.map((e) => e.tokens)).toEqual([1, 3]);
  });
});

describe("comparing turns of two branches", () => {
  const base: TurnRecord = {
    turnId: "turn-3",
    playerMessage: "I swim.",
    reply: { text: "The tide pulls.", finishReason: "stop", toolCalls: [], usage: { input_tokens: 120, output_tokens: 30 } } as TurnRecord["reply"],
    events: [{ topic: "scene", data: { id: "tower" } }],
    slotChanges: [{ slot: "stage.backdrop@1" as SlotId, value: { name: "The Bell Tower" }, revision: "1" }],
    steps: [],
    forms: [],
    sent: [
      { key: "segment story-director/tone", text: "Keep a wry voice." },
      { key: "player input", text: "I swim." },
    ],
  };
  it("says what the prompt sent, the reply, events, slots and usage changed", () => {
    const other: TurnRecord = structuredClone(base);
    other.sent[0].text = "Keep a grave voice.";
    other.reply = { ...other.reply!, text: "The tide pulls hard.", usage: { input_tokens: 125, output_tokens: 30 } };
    other.slotChanges = [];
    const changes = turnRecordChanges(base, other);
    expect(changes.map((c) => c.key)).toEqual(["segment story-director/tone", "reply", "slot change stage.backdrop@1", "usage (cost)"]);
    expect(changes[0].parts).toContainEqual({ kind: "added", text: "grave " });
    expect(turnRecordChanges(base, structuredClone(base))).toEqual([]);
  });
  it("reads usage in either backend's words", () => {
    expect(usageLine(base)).toBe("input 120 · output 30");
    expect(usageLine({ ...base, reply: { ...base.reply!, usage: { prompt_tokens: 9, completion_tokens: 2 } } })).toBe("input 9 · output 2");
    expect(usageLine({ ...base, reply: undefined })).toBe("no usage reported");
  });
  it("compares a replayed turn with the turn it replays, a fork's with none", () => {
    const replayed = { ...base, turnId: "turn-3" };
    const branches = (forkedFrom: { branch: string; afterTurn?: string }) => [
      { id: "main", label: "main", active: false, turns: [{ ...base, turnId: "turn-3" }, { ...base, turnId: "turn-4", error: "boom" }, { ...base, turnId: "turn-5" }] },
      { id: "b2", label: "x", active: true, turns: [], forkedFrom },
    ];
    const snap = (forkedFrom: { branch: string; afterTurn?: string }) => ({ ...snapshot, turns: [replayed, { ...base, turnId: "turn-4" }], branches: branches(forkedFrom) }) as unknown as Snapshot;
    expect(replayCounterpart(snap({ branch: "main" }), "turn-4")).toEqual({ branch: "main", turnId: "turn-5" });
    expect(replayCounterpart(snap({ branch: "main", afterTurn: "turn-3" }), "turn-4")).toBeUndefined();
  });
});

describe("search in the prompt", () => {
  it("marks every match, whatever its case, and keeps the rest", () => {
    expect(highlightParts("The Bell rings; the bell.", "bell")).toEqual([
      { text: "The ", hit: false },
      { text: "Bell", hit: true },
      { text: " rings; the ", hit: false },
      { text: "bell", hit: true },
      { text: ".", hit: false },
    ]);
    expect(highlightParts("no match", "")).toEqual([{ text: "no match", hit: false }]);
  });
});

describe("a draft belongs to its session file", () => {
  it("is put aside when another file opens, and comes back with its file", () => {
    const aside = new Map();
    const a = { text: "id: a\nlocale: fr\n", base: "id: a\n", path: "/x/a.session.yaml" };
    expect(draftFor("/y/b.session.yaml", a, aside)).toBeNull();
    expect(aside.get("/x/a.session.yaml")).toEqual(a);
    expect(draftFor("/x/a.session.yaml", null, aside)).toEqual(a);
    expect(aside.size).toBe(0);
    expect(draftFor("/x/a.session.yaml", a, aside)).toBe(a);
  });
});

describe("the runtime picker", () => {
  it("names a runtime as a picker value and back", () => {
    for (const target of [{ kind: "story" }, { kind: "plugin", id: "story-director" }, { kind: "contract", id: "narrative-engine@1" }] as const) {
      expect(runtimeTarget(runtimeValue(target))).toEqual(target);
    }
    expect(runtimeTarget("contract:a:b@1")).toEqual({ kind: "contract", id: "a:b@1" });
  });
});
