import { describe, expect, it } from "vitest";
import { fixture as snapshot } from "../../fixtures/snapshot";
import { fixture as bodies } from "../../fixtures/request-bodies";
import type { Snapshot } from "./wire";
import { callTarget, fields, failingCalls, inventoryItem, inventoryLines, problemCounts, problems, runtimeValue } from "./view";

const demo = (): Snapshot => structuredClone(snapshot);

describe("the plugins panel's inventory", () => {
  it("names each registered extension by point and id, never [object Object]", () => {
    const lines = inventoryLines(demo().plugins.find((p) => p.name === "quest-log")!.inventory);
    expect(lines).toEqual(["extensions: ui.slot@1 · summary", "tools: quest-update", "hooks: TurnStop:normal"]);
    expect(lines.join("\n")).not.toContain("[object Object]");
    expect(inventoryItem({ point: "prompt.segment@1", id: "x", handlerIsFunction: false })).toBe("prompt.segment@1 · x (handler is not a function)");
    expect(inventoryItem({ other: 1 })).toBe('{"other":1}');
  });
});

describe("the runtime selector", () => {
  it("shows the runtime the backend assembled for", () => {
    expect(runtimeValue({ kind: "story" })).toBe("story");
    expect(runtimeValue({ kind: "plugin", id: "story-director" })).toBe("plugin:story-director");
    expect(runtimeValue({ kind: "contract", id: "narrative-engine@1" })).toBe("contract:narrative-engine@1");
  });
});

describe("problems", () => {
  it("lists the demo's cache advice and notes, and counts only errors and warnings on the tabs", () => {
    const list = problems(demo());
    expect(list.filter((p) => p.severity === "error")).toEqual([]);
    expect(list.map((p) => p.code)).toContain("depth-segment-moves");
    const counts = problemCounts(list);
    expect(counts.Prompt).toBe(list.filter((p) => p.tab === "Prompt" && p.severity !== "info").length);
    expect(counts.Problems).toBe(list.filter((p) => p.severity !== "info").length);
  });

  it("reports a handler that threw at run time against its plugin, with a link to the call", () => {
    const s = demo();
    const call = s.preview.calls.find((c) => c.pluginId === "story-director" && c.providerId === "tone")!;
    Object.assign(call, { outcome: "error", errorCode: "invocation-error", message: "boom" });
    const list = problems(s);
    const p = list.find((p) => p.source === "handler at run time")!;
    expect(p).toMatchObject({ severity: "error", code: "invocation-error", plugin: "story-director", tab: "Providers", target: callTarget(call) });
    expect(p.message).toContain("boom");
    expect(list[0]).toBe(p);
    expect(failingCalls(s, "story-director").map((c) => c.providerId)).toEqual(["tone"]);
    expect(problemCounts(list).Providers).toBe(1);
  });

  it("reports the session file, plugin diagnostics (of a last-good plugin), hints, lints, failed runs and start-up errors", () => {
    const s = demo();
    s.sessionError = { code: "session-schema", message: "unknown field `lokale`", file: "demo.session.yaml", line: 3, column: 1 };
    const plugin = s.plugins.find((p) => p.name === "story-director")!;
    plugin.status = "last-good";
    plugin.diagnostics = [{ code: "entry-syntax", message: "unexpected token", file: "server/index.js", line: 1, column: 36 }];
    plugin.hints = [{ code: "row-shaped-read", message: "reads pluginData rows" }];
    s.preview.cache.lint = [{ code: "volatile-in-stable", plugin: "lore-book", segment: "glossary", volatility: "turn", message: "turn segment ahead of a boundary" }];
    s.preview.errors = [{ point: "prompt.segment@1", turn: "this-turn", error: { code: "fail-turn", point: "prompt.segment@1", provider: "story-director/tone", message: "took too long" }, message: "took too long" }];
    s.diagnostics = [{ ...plugin.diagnostics[0], plugin: "story-director" }];
    const list = problems(s, { code: "manifest-unreadable", message: "no such folder", file: "/nope" });
    expect(list.filter((p) => p.code === "entry-syntax").length).toBe(1);
    const find = (code: string) => list.find((p) => p.code === code)!;
    expect(find("session-schema")).toMatchObject({ tab: "Session", at: "demo.session.yaml:3:1", severity: "error" });
    expect(find("entry-syntax")).toMatchObject({ tab: "Plugins", at: "server/index.js:1:36", target: 'tr[data-plugin="story-director"]' });
    expect(find("entry-syntax").message).toContain("last good version");
    expect(find("row-shaped-read")).toMatchObject({ severity: "warning", source: "lint" });
    expect(find("volatile-in-stable")).toMatchObject({ tab: "Prompt", target: '[data-segment="lore-book/glossary"]' });
    expect(find("fail-turn")).toMatchObject({ severity: "error", tab: "Providers" });
    expect(find("manifest-unreadable")).toMatchObject({ source: "start-up", tab: "Open" });
    const severities = list.map((p) => p.severity);
    expect(severities).toEqual([...severities].sort((a, b) => ["error", "warning", "info"].indexOf(a) - ["error", "warning", "info"].indexOf(b)));
  });
});

import { anyPlace, filtering, nextChange, outline, segmentMatches, tokenBars } from "./view";

describe("navigating a long prompt", () => {
  const s = demo();
  it("filters segments by words, plugin, volatility and position", () => {
    const rows = s.preview.segments;
    const tone = rows.find((r) => r.plugin === "story-director" && r.id === "tone")!;
    expect(segmentMatches(tone, anyPlace)).toBe(true);
    expect(segmentMatches(tone, { ...anyPlace, text: "STORY-DIRECTOR/TO" })).toBe(true);
    expect(segmentMatches(tone, { ...anyPlace, text: tone.content.slice(0, 12).toUpperCase() })).toBe(true);
    expect(segmentMatches(tone, { ...anyPlace, text: "no such words anywhere" })).toBe(false);
    expect(segmentMatches(tone, { ...anyPlace, plugin: "lore-book" })).toBe(false);
    expect(segmentMatches(tone, { ...anyPlace, volatility: tone.volatility })).toBe(true);
    expect(segmentMatches(tone, { ...anyPlace, position: "depth" })).toBe(tone.placement.kind === "depth");
    expect(filtering(anyPlace)).toBe(false);
    expect(filtering({ ...anyPlace, volatility: "turn" })).toBe(true);
  });
  it("sums tokens per plugin and per volatility, largest first", () => {
    const { byPlugin, byVolatility } = tokenBars(s.preview);
    const included = s.preview.segments.filter((r) => r.included);
    // Counted for the story model, as every panel counts (not estimateTokens).
    const counted = s.preview.segments.reduce((n, r, i) => n + (r.included ? s.preview.counts.segments[i].tokens : 0), 0);
    expect(byPlugin.reduce((n, b) => n + b.tokens, 0)).toBe(counted);
    expect(counted).not.toBe(included.reduce((n, r) => n + r.tokens, 0));
    expect(byPlugin[0].percent).toBe(100);
    expect(byPlugin.map((b) => b.tokens)).toEqual([...byPlugin.map((b) => b.tokens)].sort((a, b) => b - a));
    expect(new Set(byVolatility.map((b) => b.name))).toEqual(new Set(included.map((r) => r.volatility)));
  });
  it("outlines blocks, their segments, the boundaries and the messages", () => {
    const o = outline(s.preview);
    expect(o.filter((e) => e.kind === "boundary").map((e) => e.label)).toEqual(s.preview.prompt.system.blocks.filter((b) => b.cacheBoundary).map((_, i) => `cache boundary ${i}`));
    expect(o.filter((e) => e.kind === "segment").map((e) => e.segment)).toEqual(s.preview.prompt.system.blocks.flatMap((b) => b.segments));
    expect(o.filter((e) => e.kind === "message").length).toBe(s.preview.prompt.messages.length);
  });
  it("cycles through the changes", () => {
    expect(nextChange(0, -1)).toBe(-1);
    expect(nextChange(2, -1)).toBe(0);
    expect(nextChange(2, 1)).toBe(0);
  });
});

import { curlCommand, jsonPreview } from "./view";

describe("raw data", () => {
  it("previews a collapsed value in one short line", () => {
    expect(jsonPreview({ a: 1 })).toBe('{"a":1}');
    expect(jsonPreview("x".repeat(100), 10)).toBe('"xxxxxxxx…');
  });
  it("copies a request body as a curl command with the key from the environment and the body verbatim", () => {
    const body = bodies.snapshot.anthropic;
    const command = curlCommand("anthropic", body);
    expect(command.split("\n")[0]).toBe("curl https://api.anthropic.com/v1/messages \\");
    expect(command).toContain('-H "x-api-key: $ANTHROPIC_API_KEY"');
    const json = command.slice(command.indexOf("\n{") + 1, command.lastIndexOf("\nCOVEL_REQUEST"));
    expect(JSON.parse(json)).toEqual(body);
    expect(command).toMatch(/<<'COVEL_REQUEST'\n/);
    const tricky = curlCommand("openai", { text: "a\nCOVEL_REQUEST\nb" });
    expect(tricky).toContain("Authorization: Bearer $OPENAI_API_KEY");
    expect(tricky).toMatch(/<<'COVEL_REQUEST'\n/);
    expect(JSON.parse(tricky.slice(tricky.indexOf("\n{") + 1, tricky.lastIndexOf("\nCOVEL_REQUEST")))).toEqual({ text: "a\nCOVEL_REQUEST\nb" });
  });
});
const s0 = demo;

import { providerChains } from "./view";

describe("the providers panel's chains", () => {
  it("has character.visual@1 once per character and lists the registered providers the preview did not call, with why", () => {
    const s = demo();
    const list = providerChains(s);
    const keys = list.map((c) => c.key);
    for (const slot of s.preview.slots.filter((x) => x.key)) expect(keys).toContain(`ui.slot@1 → ${slot.slot}[${slot.key}]`);
    const compact = list.find((c) => c.point === "history.compact@2")!;
    expect(compact.notCalled).toEqual([{ pluginId: "history-compaction", providerId: "segmented-summary", order: expect.any(Number), reason: "this preview does not run this point" }]);
    const soundtrack = s.plugins.find((p) => p.name === "soundtrack")!;
    soundtrack.status = "rejected";
    soundtrack.rejection = { plugin: "soundtrack", code: "excluded", message: "excluded by the session", candidates: [] };
    s.preview.calls = s.preview.calls.filter((c) => c.pluginId !== "soundtrack");
    s.preview.slots = s.preview.slots.map((x) => ({ ...x, chain: x.chain.filter((c) => c.pluginId !== "soundtrack") }));
    const segments = providerChains(s).find((c) => c.key === "prompt.segment@1")!;
    expect(segments.notCalled).toContainEqual({ pluginId: "soundtrack", providerId: "music-moods", order: expect.any(Number), reason: "plugin not active: rejected (excluded)" });
  });
});

import { boundaryBanner, wordDiff } from "./view";
import { fixture as afterReload } from "../../fixtures/after-reload";

describe("diffs of the last reload", () => {
  it("diffs words, keeping what stayed", () => {
    expect(wordDiff("grave, unhurried and calm", "grave, patient and calm")).toEqual([
      { kind: "same", text: "grave, " },
      { kind: "removed", text: "unhurried " },
      { kind: "added", text: "patient " },
      { kind: "same", text: "and calm" },
    ]);
    expect(wordDiff("", "new")).toEqual([{ kind: "added", text: "new" }]);
    expect(wordDiff("a b", "a b")).toEqual([{ kind: "same", text: "a b" }]);
  });
  it("names the boundary an edit moved and the segment responsible", () => {
    const entry = afterReload.lastReload!;
    const lines = boundaryBanner(entry);
    expect(lines.length).toBe(entry.diff.boundaries.length);
    expect(lines[0]).toContain(`cache boundary ${entry.diff.boundaries[0].index} by segment ${entry.diff.boundaries[0].segment}`);
    expect(boundaryBanner(undefined)).toEqual([]);
  });
});

import { fixture as afterTurn } from "../../fixtures/after-turn";
import { fixture as turnPreviews } from "../../fixtures/turn-previews";
import { loopStepLine, turnSummary } from "./view";

describe("the turn inspector", () => {
  it("sums up a played turn from its record and the prompt it sent", () => {
    const turn = afterTurn.turns[0];
    expect("preview" in turn, "a played turn keeps no preview").toBe(false);
    const sent = turnPreviews[turn.turnId].preview;
    const p = sent.prompt;
    // Counted for the story model (an estimate for the demo's default Claude model).
    // The whole request: the system prompt, the messages and what the request adds around them
    // (Claude's framing, the tool definitions).
    const tokens = `≈${sent.counts.system.tokens + sent.counts.messages.reduce((n: number, m: any) => n + m.tokens, 0) + sent.counts.added.tokens}`;
    const words = turn.reply!.text.split(/\s+/).filter(Boolean).length;
    const rest = `${words}-word reply · 1 tool call · ${turn.events.length} events · ${turn.slotChanges.length} slot changes · compaction ${turn.compaction?.triggered ? "ran" : "not due"}`;
    expect(turnSummary(turn, sent)).toBe(`${tokens} tokens sent over ${p.system.blocks.filter((b: any) => b.cacheBoundary).length} cache boundaries · ${rest}`);
    expect(turnSummary(turn), "before the prompt is loaded").toBe(rest);
    expect(turnSummary({ turnId: "t", playerMessage: "x", error: "boom", events: [], slotChanges: [], steps: [], forms: [], sent: [] })).toBe("no reply · 0 events · 0 slot changes · no compaction run");
    // One of each is said in the singular (the real window once read "1 slot changes").
    const one = { ...turn, events: [{ topic: "bell-rung" } as any], slotChanges: turn.slotChanges.slice(0, 1), compaction: undefined };
    expect(turnSummary(one)).toBe(`${words}-word reply · 1 tool call · 1 event · 1 slot change · compaction not due`);
  });

  it("reads each step of the turn's loop in the author's words", () => {
    const steps = afterTurn.turns[0].steps;
    const lines = steps.map(loopStepLine);
    const tool = steps.findIndex((s) => s.kind === "tool");
    expect(tool, "the demo's first turn calls a tool").toBeGreaterThan(-1);
    expect(lines[tool].head).toBe("Tool set-scene (scene-stage) · ok · 1 proposal");
    expect(lines[tool].tone).toBe("ok");
    expect(lines[tool].detail).toBe("The scene is now The Bell Tower.");
    const commit = lines[steps.findIndex((s) => s.kind === "commit")];
    expect(commit.head).toBe("Commit plugin.data.batch of scene-stage stage/current, active-cast/current, direction/current · committed → moved stage.backdrop@1, stage.cast@1");
    expect(lines[0].head).toBe("Model call 1 → calls set-scene");
    expect(loopStepLine({ kind: "hook", event: "PreToolUse", pluginId: "dice", enforce: "normal", outcome: "rejected", detail: "wrong outcome", changes: [], durationMs: 1, logs: [] })).toEqual({ head: "PreToolUse hook · dice · rejected", tone: "error", detail: "wrong outcome" });
  });
});

import { segmentChanges } from "./view";

describe("diffs between turns", () => {
  it("lists the segments whose text changed, with word diffs", () => {
    const before = demo().preview;
    const after = structuredClone(before);
    const tone = after.segments.find((s) => s.id === "tone")!;
    tone.content = tone.content.replace("unhurried", "patient");
    const changes = segmentChanges(before, after);
    expect(changes.map((c) => c.key)).toEqual(["story-director/tone"]);
    expect(changes[0].parts.filter((p) => p.kind !== "same").map((p) => p.text.trim())).toEqual(["unhurried", "patient"]);
    expect(segmentChanges(undefined, after)).toEqual([]);
  });

  it("pairs rows sharing a key by rank, so a change to the first of two is seen", () => {
    // Two providers of one plugin may send the same id: `p/x` twice.
    const before = structuredClone(demo().preview);
    const base = before.segments[0];
    before.segments = [{ ...base, plugin: "p", id: "x", content: "first one" }, { ...base, plugin: "p", id: "x", content: "second one" }];
    const after = structuredClone(before);
    after.segments[0].content = "first two";
    const changes = segmentChanges(before, after);
    expect(changes.map((c) => c.key)).toEqual(["p/x"]);
    expect(changes[0].parts.filter((p) => p.kind !== "same").map((p) => p.text.trim())).toEqual(["one", "two"]);
  });
});

import { promptWarnings } from "./view";

describe("the prompt panel's warnings", () => {
  it("says which plugin runs its last good version and which segment provider failed", () => {
    const s = demo();
    expect(promptWarnings(s)).toEqual([]);
    const plugin = s.plugins.find((p) => p.name === "story-director")!;
    plugin.status = "last-good";
    plugin.diagnostics = [{ code: "entry-syntax", message: "unexpected token", file: "story-director/server/index.js", line: 53, column: 1 }];
    const call = s.preview.calls.find((c) => c.pluginId === "lore-book" && c.point === "prompt.segment@1")!;
    Object.assign(call, { outcome: "error", errorCode: "invocation-error", message: "boom" });
    const warnings = promptWarnings(s);
    expect(warnings.map((w) => [w.kind, w.plugin])).toEqual([["last-good", "story-director"], ["missing-segment", "lore-book"]]);
    expect(warnings[0].text).toContain("[entry-syntax] story-director/server/index.js:53:1");
    expect(warnings[1].text).toContain("boom");
  });
});

import { previewChanges } from "./view";

describe("changes between two previews", () => {
  it("covers segments, messages and slot values", () => {
    const before = demo().preview;
    const after = structuredClone(before);
    after.segments.find((s) => s.id === "tone")!.content = "Keep a grave, patient narrative voice.";
    after.prompt.messages.find((m) => m.origin.kind === "player-input")!.content = "I climb.";
    const backdrop = after.slots.find((s) => s.slot === "stage.backdrop@1")!;
    backdrop.value = { ...fields(backdrop.value), variant: "day" };
    const keys = previewChanges(before, after).map((c) => c.key);
    expect(keys).toEqual(["segment story-director/tone", "message player-input", "slot stage.backdrop@1"]);
    const slot = previewChanges(before, after).at(-1)!;
    expect(slot.parts.filter((p) => p.kind !== "same").map((p) => p.text.trim())).toEqual(['"night"', '"day"']);
  });
});
