// View logic: pure functions over the snapshot, unit-tested with Vitest. Components stay thin.
import { resolveI18nText } from "./locale";
import { counted } from "./words";
import type { Breakpoint, CacheReport, CallRecord, Count, PointInfo, PromptCounts, RuntimeTarget, Forecast, GoldenDifference, I18n, JsonValue, Message, Origin, PluginView, ReloadEntry, SegmentChange, SegmentRow, Snapshot, TestRun, TurnRecord, SourceSite } from "./wire";
import type { SlotName, SlotValues } from "./slots";

// ---- reading JSON values (the session, the world snapshot, summaries) ----------------------------

/** A JSON value's fields when it is an object (an empty object otherwise). */
export function fields(value: JsonValue | undefined): { [key: string]: JsonValue } {
  return value !== null && typeof value === "object" && !Array.isArray(value) ? value : {};
}

/** A JSON value's items when it is an array (none otherwise). */
export function items(value: JsonValue | undefined): JsonValue[] {
  return Array.isArray(value) ? value : [];
}

/** A JSON value as text: a string as it is, anything else as JSON (nothing for null or absent). */
export function plain(value: JsonValue | undefined): string {
  return value === undefined || value === null ? "" : typeof value === "string" ? value : JSON.stringify(value);
}

/** A JSON value as locale text (a string or a locale → text map). */
export function i18n(value: JsonValue | undefined): I18n | undefined {
  if (typeof value === "string") return value;
  const map = Object.entries(fields(value)).filter((e): e is [string, string] => typeof e[1] === "string");
  return map.length ? Object.fromEntries(map) : undefined;
}

/** The segments a message or request block came from (`plugin/segment` keys). */
export function originSegments(o: Origin): string[] {
  return o.kind === "segment" ? [`${o.plugin}/${o.segment}`] : o.kind === "turn-context" || o.kind === "system" ? o.segments : [];
}

/** What names a message's origin after its kind: ` plugin/segment`, ` id`, or nothing. */
export function originName(o: Origin): string {
  return o.kind === "segment" ? ` ${o.plugin}/${o.segment}` : o.kind === "history" || o.kind === "summary" ? ` ${o.id}` : "";
}

/** The history or summary id a message or request block came from. */
export function originId(o: Origin): string | undefined {
  return o.kind === "history" || o.kind === "summary" ? o.id : undefined;
}

/** The session's locale (`en` when it names none). */
export function sessionLocale(snapshot: Snapshot): string {
  const locale = fields(snapshot.session).locale;
  return typeof locale === "string" ? locale : "en";
}

/** The session's history messages, as the Playtest and Stage panels show them. */
export function historyMessages(snapshot: Snapshot): { role: string; content: string; compacted: boolean }[] {
  return items(fields(fields(snapshot.session).history).messages).map((m) => {
    const f = fields(m);
    return { role: plain(f.role), content: plain(f.content), compacted: Boolean(f.compactedAtTurnId) };
  });
}

/**
 * Text for a locale from a string or a locale map, by the locale rule the kernel and the SDK
 * share (./locale.ts: exact key, same language and script, English, first text).
 */
export function text(value: I18n | undefined | null, locale = "en"): string {
  return resolveI18nText(value, locale) ?? "";
}

/** CSS class for a volatility level. */
export function volatilityClass(v: string): string {
  return v === "stable" ? "vol-stable" : v === "session" ? "vol-session" : "vol-turn";
}

/** Human label of a placement. */
export function placementLabel(p: { kind: string; depth?: number }): string {
  switch (p.kind) {
    case "system-stable":
      return "system prompt (cached)";
    case "system-turn-tail":
      return "system prompt tail (after the last boundary)";
    case "turn-context":
      return "turn context (after history)";
    case "pre-history-message":
      return "message before history";
    case "post-history-message":
      return "message after everything";
    case "depth":
      return `message at depth ${p.depth}`;
    default:
      return p.kind;
  }
}

/** The sort key as the author reads it. */
export function sortKeyLabel(s: SegmentRow): string {
  return `${s.sortKey.volatility} · order ${s.sortKey.order} · ${s.sortKey.providerPluginId} · ${s.sortKey.id}`;
}

export interface Chain {
  key: string;
  point: string;
  slot?: string;
  calls: CallRecord[];
  /** Providers whose place only their plugin id decided (same order as a neighbour's). */
  ties: Set<string>;
}

/** How a point combines its providers, as the kernel's contract says (the snapshot's `points`). */
export function pointMode(points: PointInfo[], point: string): PointInfo["mode"] | undefined {
  return points.find((p) => p.point === point)?.mode;
}

/** Whether the order of a point's providers decides its result (pipeline and single points). */
export function orderDecides(points: PointInfo[], point: string): boolean {
  return pointMode(points, point) !== "collect";
}

/** Groups a preview's calls into provider chains per point (and slot), in call order. */
export function chains(calls: CallRecord[], points: PointInfo[]): Chain[] {
  const byKey = new Map<string, Chain>();
  for (const call of calls) {
    const key = call.slot ? `${call.point} → ${call.slot}` : call.point;
    let chain = byKey.get(key);
    if (!chain) {
      chain = { key, point: call.point, slot: call.slot, calls: [], ties: new Set() };
      byKey.set(key, chain);
    }
    if (!chain.calls.some((c) => c.pluginId === call.pluginId && c.providerId === call.providerId)) chain.calls.push(call);
  }
  for (const chain of byKey.values()) {
    // In a collect point every answer is kept and sorted by its own key (segments): the call
    // order decides nothing, so a tie there is no tie worth a mark.
    if (!orderDecides(points, chain.point)) continue;
    for (const a of chain.calls) {
      if (chain.calls.some((b) => b !== a && b.order === a.order && b.pluginId !== a.pluginId)) {
        chain.ties.add(`${a.pluginId}/${a.providerId}`);
      }
    }
  }
  return [...byKey.values()];
}

/** A segment's key, `plugin/id`, as the kernel names segments in blocks and origins. */
export function segmentKey(s: { plugin: string; id: string }): string {
  return `${s.plugin}/${s.id}`;
}

/** Segment keys (`plugin/id`) a reload touched, for marks that only know a key (messages). */
export function changedSegments(entry: ReloadEntry | undefined): Set<string> {
  return new Set((entry?.diff.segments ?? []).map(segmentKey));
}

/** The row a change names in a preview's rows by its index, if that row is the change's segment. */
function rowAt(rows: SegmentRow[] | undefined, change: SegmentChange, side: "before" | "after"): SegmentRow | undefined {
  const state = change[side];
  const row = state ? rows?.[state.index] : undefined;
  return row && row.plugin === change.plugin && row.id === change.id ? row : undefined;
}

/**
 * The rows of the new preview a reload added, moved or changed. The reload diff names each row
 * by its index, so of two rows sharing a key (two providers of one plugin may share an id) only
 * the one that changed is marked.
 */
export function changedRows(entry: ReloadEntry | undefined, segments: SegmentRow[]): Set<SegmentRow> {
  const rows = new Set<SegmentRow>();
  for (const change of entry?.diff.segments ?? []) {
    const row = rowAt(segments, change, "after");
    if (row) rows.add(row);
  }
  return rows;
}

/** Each changed row's content before the reload (the same row, not the first one with its key). */
export function contentBefore(entry: ReloadEntry | undefined, segments: SegmentRow[], before: SegmentRow[] | undefined): Map<SegmentRow, string> {
  const contents = new Map<SegmentRow, string>();
  for (const change of entry?.diff.segments ?? []) {
    const now = rowAt(segments, change, "after");
    const was = rowAt(before, change, "before");
    if (now && was) contents.set(now, was.content);
  }
  return contents;
}

/** Slot keys a reload touched. */
export function changedSlots(entry: ReloadEntry | undefined): Set<string> {
  return new Set((entry?.diff.slots ?? []).map((s) => (s.key ? `${s.slot}[${s.key}]` : s.slot)));
}

export interface MeterView {
  value: number;
  min: number;
  max: number;
  percent: number;
}

/** A status-bar meter: min defaults to 0, max is at least min + 1, value clamped. */
export function meter(entry: { value: number; min?: number; max: number }): MeterView {
  const min = entry.min ?? 0;
  const max = Math.max(entry.max, min + 1);
  const value = Math.min(Math.max(entry.value, min), max);
  return { value, min, max, percent: Math.round(((value - min) / (max - min)) * 100) };
}

/** A status-bar list: the items shown and how many more there are. */
export function listView(entry: { items: I18n[]; total?: number }, locale: string): { items: string[]; more: number } {
  const items = entry.items.map((i) => text(i, locale)).filter((i) => i.trim() !== "");
  const total = entry.total ?? items.length;
  return { items, more: Math.max(0, total - items.length) };
}

/** A `session.summary@1` entry. */
export type SummaryEntry = SlotValues["session.summary@1"]["entries"][number];

/** Summary entries merged by id: a later entry with the same id replaces an earlier one. */
export function summaryEntries(value: SlotValues["session.summary@1"] | null | undefined): SummaryEntry[] {
  const out: SummaryEntry[] = [];
  for (const entry of value?.entries ?? []) {
    const at = out.findIndex((e) => e.id === entry.id);
    if (at >= 0) out[at] = entry;
    else out.push(entry);
  }
  return out;
}

/** The highlighted actor: each actor's own flag if any sets it, else the first not exiting. */
export function activeActor(cast: Pick<SlotValues["stage.cast@1"], "actors"> | null | undefined): string | undefined {
  const actors = cast?.actors ?? [];
  if (actors.some((a) => typeof a.active === "boolean")) return actors.find((a) => a.active)?.characterId;
  return actors.find((a) => !a.exiting)?.characterId;
}

/**
 * The slot value of a preview, by slot id (and key), typed by the kernel's schema of the slot: a
 * value the window receives has passed it (an invalid output keeps the previous value).
 */
export function slotValue<S extends SlotName>(snapshot: Snapshot | undefined, slot: S, key?: string): SlotValues[S] | null {
  const value = snapshot?.preview.slots.find((s) => s.slot === slot && (key === undefined || s.key === key))?.value;
  return (value ?? null) as SlotValues[S] | null;
}

/** A short description of a call's outcome. */
export function outcomeLabel(call: CallRecord): string {
  return call.outcome === "success" ? "ok" : `${call.outcome}${call.errorCode ? ` (${call.errorCode})` : ""}`;
}

/** Whether a call that ran was answered from the memo, and why (not). */
export function cacheReason(call: CallRecord): string {
  if (call.cached) {
    const ran = call.ranMs == null ? "" : `; its first run took ${call.ranMs.toFixed(2)} ms`;
    return `cached: same input and data as before, and two earlier runs agreed${ran}`;
  }
  if (call.notCached) return `not cached: ${call.notCached}`;
  return "not cached: no confirmed earlier answer for this input and data (an answer is reused once two identical runs agree)";
}

// ---- token counts ----------------------------------------------------------------------------
// Every number of tokens a panel shows comes from the studio's one counter (the story model's
// tokenizer: exact for OpenAI encodings, an estimate with a range for Claude), sent as
// `preview.counts`. The SDK's estimateTokens appears only where a rule counts with it (budgets,
// the compaction threshold), and says so.

/** A count as shown: `231 tokens` when exact, `≈231 tokens` for an estimate. */
export function countLabel(c: Count | undefined): string {
  if (!c) return "? tokens";
  return c.low === c.high ? `${c.tokens} tokens` : `≈${c.tokens} tokens`;
}

/** What the counts are, in one line: the model and whether they are exact. */
export function counterLine(counts: PromptCounts): string {
  const c = counts.counter;
  return c.exact ? `counted for ${c.model}, exact` : `counted for ${c.model}, estimated (system prompt ${counts.system.low}–${counts.system.high})`;
}

/** Each segment row's count (rows not included count 0). */
export function segmentCounts(preview: Pick<Snapshot["preview"], "segments" | "counts">): Map<SegmentRow, Count> {
  return new Map(preview.segments.map((row, i) => [row, preview.counts.segments[i] ?? { tokens: 0, low: 0, high: 0 }]));
}

/**
 * The tokens a whole prompt sends: its system prompt, every message, and what the request adds
 * around them (Claude's framing, the tool definitions).
 */
export function promptTokens(counts: PromptCounts): number {
  return counts.system.tokens + counts.messages.reduce((n, m) => n + m.tokens, 0) + counts.added.tokens;
}

/** A breakpoint's verdict as one line, with its prefix counted as every panel counts it. */
export function breakpointLabel(b: Breakpoint, counts: PromptCounts): string {
  const head = `${b.moving ? "moving cache breakpoint" : "cache breakpoint"} ${b.index} · ${countLabel(counts.breakpoints[b.index])} · `;
  if (b.stable) return `${head}stable next turn`;
  const d = b.firstDifference;
  return `${head}changes next turn${d ? ` (${d.said})` : ""}`;
}

/** The system breakpoint that closes a block kind. */
export function systemBreakpoint(cache: CacheReport, kind: string): Breakpoint | undefined {
  return cache.breakpoints.find((b) => !b.moving && b.closes.kind === "system" && b.closes.block === kind);
}

/** The moving breakpoint on a message, if it sits there. */
export function movingBreakpoint(cache: CacheReport, m: Message): Breakpoint | undefined {
  return cache.breakpoints.find((b) => b.moving && b.closes.kind === m.origin.kind && originId(b.closes) === originId(m.origin));
}

/** Tokens the next turn reads from the cache (the longest stable breakpoint's prefix). */
export function nextTurnCacheRead(cache: CacheReport, counts: PromptCounts): number {
  return Math.max(0, ...cache.breakpoints.filter((b) => b.stable).map((b) => counts.breakpoints[b.index]?.tokens ?? 0));
}

/** The session editor's unsaved text and the file text it started from. */
export interface Draft {
  text: string;
  base: string;
  /** The session file it edits ("" without one): a draft never follows the author to another file. */
  path: string;
}

/**
 * The draft to edit when the open session is `path`: the current one when it is that file's;
 * otherwise the current one is put aside with the other files' drafts (opening its file again
 * brings it back) and that file's own, if one was put aside, is taken out.
 */
export function draftFor(path: string, current: Draft | null, aside: Map<string, Draft>): Draft | null {
  if (current?.path === path) return current;
  if (current) aside.set(current.path, current);
  const own = aside.get(path) ?? null;
  aside.delete(path);
  return own;
}

/**
 * What becomes of the editor's draft when a new snapshot arrives with the session file's text:
 * a draft is never dropped by a reload; it ends when the file holds exactly its text (it was
 * saved); when the file changed on disk under it, the new file text is returned as a conflict
 * for the author to decide.
 */
export function draftAfterSnapshot(draft: Draft | null, fileText: string | null): { draft: Draft | null; conflict: string | null } {
  if (draft === null || fileText === null) return { draft, conflict: null };
  if (fileText === draft.text) return { draft: null, conflict: null };
  if (fileText === draft.base) return { draft, conflict: null };
  return { draft, conflict: fileText };
}

/** A diagnostic's file, line and column, when it names a file. */
export function placeOf(d: { file?: string; line?: number; column?: number }): Problem["source_at"] {
  return d.file ? { file: d.file, line: d.line, column: d.column } : undefined;
}

/** `file:line:column` of a diagnostic, as far as it is known. */
export function where(d: { file?: string; line?: number; column?: number }): string {
  return [d.file, d.line, d.line !== undefined ? d.column : undefined].filter((p) => p !== undefined && p !== null).join(":");
}

/** US dollars with enough digits for a turn's cost. */
export function usd(value: number): string {
  // Under a dollar, three significant digits: two costs of a few cents stay apart ($0.0105
  // against $0.0142, not $0.01 against $0.01).
  const digits = value !== 0 && Math.abs(value) < 1 ? 2 - Math.floor(Math.log10(Math.abs(value))) : 2;
  return `$${value.toFixed(Math.min(digits, 8))}`;
}

/** The forecast's totals as one line, with the saving against no caching in percent. */
export function forecastSummary(f: Forecast): string {
  const t = f.totals;
  const percent = t.costWithoutCache > 0 ? Math.round((t.saving / t.costWithoutCache) * 100) : 0;
  const range = t.costRange ? ` (${usd(t.costRange[0])}–${usd(t.costRange[1])})` : "";
  return `${t.inputTokens} input tokens: ${t.uncachedTokens} uncached, ${t.cacheWriteTokens} written, ${t.cacheReadTokens} read; ${t.outputTokens} output · ${usd(t.cost.total)}${range} against ${usd(t.costWithoutCache)} without caching (saves ${percent}%)`;
}

/** Counts of a test run: sessions, failed sessions, checks and failed checks. */
export function testCounts(run: TestRun): { sessions: number; failed: number; checks: number; failedChecks: number } {
  const turns = run.sessions.flatMap((s) => s.turns);
  const checks = turns.flatMap((t) => t.checks);
  return { sessions: run.sessions.length, failed: run.sessions.filter((s) => !s.passed).length, checks: checks.length, failedChecks: checks.filter((c) => !c.passed).length };
}

/** A golden difference as the author reads it: where, who wrote it, what happened. */
export function differenceLabel(d: GoldenDifference): string {
  return `${d.place}${d.from ? ` · ${d.from}` : ""}${d.plugin ? ` (plugin ${d.plugin})` : ""} ${d.change}`;
}

/** One registered item of a plugin's inventory as text: a name, or an extension's point and id. */
export function inventoryItem(item: unknown): string {
  if (typeof item === "string") return item;
  if (item && typeof item === "object") {
    const o = item as Record<string, unknown>;
    if (typeof o.point === "string" && typeof o.id === "string") {
      return `${o.point} · ${o.id}${o.handlerIsFunction === false ? " (handler is not a function)" : ""}`;
    }
    if (typeof o.id === "string") return o.id;
    if (typeof o.name === "string") return o.name;
  }
  return JSON.stringify(item);
}

/** A plugin's registered inventory as `kind: item, item` lines, empty kinds left out. */
export function inventoryLines(inventory: Record<string, unknown> | null | undefined): string[] {
  return Object.entries(inventory ?? {})
    // Registration sites are where the items are, not items (they link from the items' rows).
    .filter(([kind, items]) => kind !== "sites" && Array.isArray(items) && items.length > 0)
    .map(([kind, items]) => `${kind}: ${(items as unknown[]).map(inventoryItem).join(", ")}`);
}

/** The runtime selector's value for the runtime the backend assembled for. */
export function runtimeValue(runtime: { kind: string; id?: string } | undefined): string {
  if (!runtime || runtime.kind === "story") return "story";
  return `${runtime.kind}:${runtime.id ?? ""}`;
}

/** The runtime a value of the runtime picker names (`story`, `plugin:ID`, `contract:C`): the inverse of `runtimeValue`. */
export function runtimeTarget(value: string): RuntimeTarget {
  const at = value.indexOf(":");
  const [kind, id] = at < 0 ? [value, ""] : [value.slice(0, at), value.slice(at + 1)];
  if (kind === "plugin") return { kind: "plugin", id };
  if (kind === "contract") return { kind: "contract", id };
  return { kind: "story" };
}

// ---- the Problems panel --------------------------------------------------------------------------

export const TABS = ["Problems", "Prompt", "Cache", "Plugins", "Providers", "Stage", "World", "Compaction", "Playtest", "Tests", "Session", "Open"] as const;
export type Tab = (typeof TABS)[number];

export interface Problem {
  severity: "error" | "warning" | "info";
  /** What reported it: plugin load, session file, run time, lint, cache… */
  source: string;
  code: string;
  message: string;
  plugin?: string;
  /** `file:line:column`, as far as it is known. */
  at?: string;
  /** The file, line and column, for opening it in the author's editor. */
  source_at?: { file: string; line?: number; column?: number };
  /** Where it lives in the studio: the panel and the element (a CSS selector) to show. */
  tab: Tab;
  target?: string;
}

const attr = (value: string) => value.replace(/["\\]/g, "\\$&");

/** The selector of a provider call's row in the Providers panel. */
export function callTarget(call: { point: string; slot?: string; pluginId: string; providerId: string }): string {
  return `[data-call="${attr(`${call.slot ?? call.point}|${call.pluginId}/${call.providerId}`)}"]`;
}

/**
 * Every problem the snapshot knows of, errors first: plugin diagnostics (also of plugins running
 * their last good version), the session file, start-up, resolver rejections, runs that failed,
 * handlers that failed at run time (their plugin stays active but gave nothing), providers
 * skipped, lints (row-shaped `pluginData` reads, volatility), cache advice, failed turns.
 */
export function problems(snapshot: Snapshot | undefined, openError?: { code: string; message: string; file?: string; line?: number; column?: number } | null): Problem[] {
  const out: Problem[] = [];
  const seen = new Set<string>();
  const add = (p: Problem) => {
    const key = `${p.severity}|${p.code}|${p.plugin ?? ""}|${p.at ?? ""}|${p.message}`;
    if (seen.has(key)) return;
    seen.add(key);
    out.push(p);
  };
  if (openError) add({ severity: "error", source: "start-up", code: openError.code, message: openError.message, at: where(openError) || undefined, source_at: placeOf(openError), tab: "Open" });
  if (!snapshot) return out;
  if (snapshot.sessionError) {
    const e = snapshot.sessionError;
    add({ severity: "error", source: "session file", code: e.code, message: `${e.message} (the last good session keeps running)`, at: where(e) || undefined, source_at: placeOf(e), tab: "Session", target: '[data-testid="session-editor"]' });
  }
  // A plugin's diagnostics are listed with it; the folder's list repeats them.
  const raw = (d: { code: string; message: string; file?: string; line?: number; column?: number }, plugin?: string) => `${d.code}|${plugin ?? ""}|${where(d)}|${d.message}`;
  const ofPlugins = new Set(snapshot.plugins.flatMap((p) => p.diagnostics.map((d) => raw(d, p.name))));
  for (const d of snapshot.diagnostics ?? []) {
    if (ofPlugins.has(raw(d, d.plugin))) continue;
    add({ severity: "error", source: "folder", code: d.code, message: d.message, plugin: d.plugin, at: where(d) || undefined, source_at: placeOf(d), tab: d.plugin ? "Plugins" : "Open", target: d.plugin ? `tr[data-plugin="${attr(d.plugin)}"]` : undefined });
  }
  for (const p of snapshot.plugins) {
    const target = `tr[data-plugin="${attr(p.name)}"]`;
    for (const d of p.diagnostics) {
      const lastGood = p.status === "last-good" ? " — the plugin runs its last good version" : "";
      add({ severity: "error", source: "plugin", code: d.code, message: d.message + lastGood, plugin: p.name, at: where(d) || undefined, source_at: placeOf(d), tab: "Plugins", target });
    }
    for (const h of p.hints) add({ severity: "warning", source: "lint", code: h.code, message: h.message, plugin: p.name, at: where(h) || undefined, source_at: placeOf(h), tab: "Plugins", target });
    if (p.rejection) add({ severity: "warning", source: "resolver", code: p.rejection.code, message: p.rejection.message, plugin: p.name, tab: "Plugins", target });
  }
  for (const u of snapshot.resolution?.unmet ?? []) {
    add({ severity: "error", source: "resolver", code: "unmet", message: typeof u === "string" ? u : JSON.stringify(u), tab: "Plugins" });
  }
  const preview = snapshot.preview;
  for (const e of preview.errors ?? []) {
    add({ severity: "error", source: "run", code: e.error.code, message: `${e.point}${e.slot ? ` ${e.slot}` : ""} (${e.turn}) failed as a whole: ${e.message}`, tab: "Providers", target: `[data-chain="${attr(e.slot ? `${e.point} → ${e.slot}` : e.point)}"]` });
  }
  const calls = [...preview.calls, ...preview.slots.flatMap((s) => s.chain), ...(preview.worldContext.calls ?? [])];
  for (const c of calls) {
    if (c.outcome === "success") continue;
    const skipped = c.outcome === "unavailable";
    add({
      severity: skipped ? "warning" : "error",
      source: skipped ? "skipped provider" : "handler at run time",
      code: c.errorCode ?? c.outcome,
      message: `${c.pluginId}/${c.providerId} on ${c.slot ?? c.point}: ${c.outcome}${c.message ? ` — ${c.message}` : ""}${skipped ? "" : " (its plugin is active but gave nothing)"}`,
      plugin: c.pluginId,
      tab: "Providers",
      target: callTarget(c),
    });
  }
  if (preview.worldContext.error) add({ severity: "error", source: "world context", code: "world-context", message: preview.worldContext.error, tab: "World" });
  if (preview.imageFlow.error) add({ severity: "error", source: "image flow", code: "image-flow", message: preview.imageFlow.error, tab: "Stage" });
  for (const l of preview.cache.lint) {
    add({ severity: "warning", source: "volatility lint", code: l.code, message: l.message, plugin: l.plugin, tab: "Prompt", target: `[data-segment="${attr(l.segment.includes("/") ? l.segment : `${l.plugin}/${l.segment}`)}"]` });
  }
  for (const a of preview.cache.advice) {
    add({ severity: "warning", source: "cache", code: a.code, message: `${a.headline} Fix: ${a.fix.split(/(?<=\.)\s/)[0]}`, plugin: a.plugin, tab: "Prompt", target: a.segment ? `[data-segment="${attr(a.segment.includes("/") || !a.plugin ? a.segment : `${a.plugin}/${a.segment}`)}"]` : '[data-testid="cache-advice"]' });
  }
  for (const w of preview.cache.warnings) add({ severity: "info", source: "cache", code: w.code, message: w.message, tab: "Prompt", target: '[data-testid="cache-boundary"]' });
  for (const t of snapshot.turns) if (t.error) add({ severity: "error", source: "turn", code: "turn-failed", message: `${t.turnId}: ${t.error}`, tab: "Playtest" });
  const verdict = snapshot.compaction.lastRun?.verdict;
  if (verdict && !verdict.nothingToCompact && !verdict.accepted) {
    for (const r of verdict.rules.filter((r) => !r.ok)) add({ severity: "warning", source: "compaction", code: r.rule, message: r.detail, tab: "Compaction" });
  }
  const rank = { error: 0, warning: 1, info: 2 };
  return out.sort((a, b) => rank[a.severity] - rank[b.severity]);
}

/** Errors and warnings per panel (infos are listed, not counted), and in all for Problems. */
export function problemCounts(list: Problem[]): Partial<Record<Tab, number>> {
  const counts: Partial<Record<Tab, number>> = {};
  for (const p of list) {
    if (p.severity === "info") continue;
    counts[p.tab] = (counts[p.tab] ?? 0) + 1;
    counts.Problems = (counts.Problems ?? 0) + 1;
  }
  return counts;
}

/** Calls of a plugin's handlers that failed in this preview (a plugin that throws is not fine). */
export function failingCalls(snapshot: Snapshot, plugin: string): CallRecord[] {
  const calls = [...snapshot.preview.calls, ...snapshot.preview.slots.flatMap((s) => s.chain)];
  const out: CallRecord[] = [];
  for (const c of calls) {
    if (c.pluginId !== plugin || c.outcome === "success") continue;
    if (!out.some((o) => o.point === c.point && o.slot === c.slot && o.providerId === c.providerId)) out.push(c);
  }
  return out;
}

// ---- navigating long prompts ---------------------------------------------------------------------

export interface SegmentQuery {
  /** Words to find in the segment's key or text (case-insensitive). */
  text: string;
  plugin: string;
  volatility: string;
  /** A placement kind (`system-stable`, `depth`…) or "" for any. */
  position: string;
}

export const anyPlace: SegmentQuery = { text: "", plugin: "", volatility: "", position: "" };

/** Whether a segment row passes the search and the filters. */
export function segmentMatches(s: SegmentRow, q: SegmentQuery): boolean {
  if (q.plugin && s.plugin !== q.plugin) return false;
  if (q.volatility && s.volatility !== q.volatility) return false;
  if (q.position && s.placement.kind !== q.position) return false;
  const needle = q.text.trim().toLowerCase();
  if (!needle) return true;
  return segmentKey(s).toLowerCase().includes(needle) || s.content.toLowerCase().includes(needle);
}

/** Whether any filter is set. */
export function filtering(q: SegmentQuery): boolean {
  return !!(q.text.trim() || q.plugin || q.volatility || q.position);
}

export interface TokenBar {
  name: string;
  tokens: number;
  /** Share of the largest bar, 0–100. */
  percent: number;
}

function bars(totals: Map<string, number>): TokenBar[] {
  const max = Math.max(1, ...totals.values());
  return [...totals.entries()].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).map(([name, tokens]) => ({ name, tokens, percent: Math.round((tokens / max) * 100) }));
}

/** Tokens of the included segments per plugin and per volatility, largest first. */
export function tokenBars(preview: Pick<Snapshot["preview"], "segments" | "counts">): { byPlugin: TokenBar[]; byVolatility: TokenBar[] } {
  const plugin = new Map<string, number>();
  const volatility = new Map<string, number>();
  const counts = segmentCounts(preview);
  for (const s of preview.segments.filter((s) => s.included)) {
    const tokens = counts.get(s)?.tokens ?? 0;
    plugin.set(s.plugin, (plugin.get(s.plugin) ?? 0) + tokens);
    volatility.set(s.volatility, (volatility.get(s.volatility) ?? 0) + tokens);
  }
  return { byPlugin: bars(plugin), byVolatility: bars(volatility) };
}

export interface OutlineEntry {
  kind: "block" | "segment" | "boundary" | "message";
  label: string;
  tokens?: number;
  /** The selector of the element it jumps to. */
  target: string;
  /** A segment key (`plugin/id`), for filters and change marks. */
  segment?: string;
  /** The segment row a system-block entry shows (a key can name several rows). */
  row?: SegmentRow;
  depth: number;
}

/** The rows of each segment key (`plugin/id`), in row order: two providers of one plugin may share an id. */
export function rowsByKey(segments: SegmentRow[]): Map<string, SegmentRow[]> {
  const rows = new Map<string, SegmentRow[]>();
  for (const s of segments) {
    const key = segmentKey(s);
    const same = rows.get(key);
    if (same) same.push(s);
    else rows.set(key, [s]);
  }
  return rows;
}

/**
 * The segment row behind each key of each system block. A key can name several rows (see
 * `rowsByKey`); the kernel lists a block's keys in the order of the included rows, so the n-th
 * mention of a key is the n-th included row with it (never the first row again).
 */
export function blockRows(blocks: { segments: string[] }[], segments: SegmentRow[]): (SegmentRow | undefined)[][] {
  const rows = rowsByKey(segments.filter((s) => s.included));
  const taken = new Map<string, number>();
  return blocks.map((b) =>
    b.segments.map((key) => {
      const n = taken.get(key) ?? 0;
      taken.set(key, n + 1);
      return rows.get(key)?.[n];
    }),
  );
}

/** The prompt's outline: system blocks with their segments and cache boundaries, then messages. */
export function outline(preview: Pick<Snapshot["preview"], "segments" | "prompt" | "counts">): OutlineEntry[] {
  const out: OutlineEntry[] = [];
  let boundary = 0;
  const rows = blockRows(preview.prompt.system.blocks, preview.segments);
  const counts = segmentCounts(preview);
  preview.prompt.system.blocks.forEach((b, i) => {
    out.push({ kind: "block", label: b.kind, tokens: preview.counts.blocks[i]?.tokens, target: `[data-block-index="${i}"]`, depth: 0 });
    for (const [j, key] of b.segments.entries()) {
      const row = rows[i][j];
      out.push({ kind: "segment", label: key, tokens: row && counts.get(row)?.tokens, target: `[data-testid="system-prompt"] [data-segment="${attr(key)}"]`, segment: key, row, depth: 1 });
    }
    if (b.cacheBoundary) out.push({ kind: "boundary", label: `cache boundary ${boundary}`, target: `[data-boundary="${boundary++}"]`, depth: 0 });
  });
  preview.prompt.messages.forEach((m, i) => {
    const segment = m.origin.kind === "segment" ? `${m.origin.plugin}/${m.origin.segment}` : undefined;
    const label = `${m.role} · ${segment ?? originId(m.origin) ?? m.origin.kind}`;
    out.push({ kind: "message", label, tokens: preview.counts.messages[i]?.tokens, target: `[data-message-index="${i}"]`, segment, depth: 0 });
  });
  return out;
}

/** The next changed element to jump to after `current` (wrapping), or -1 when nothing changed. */
export function nextChange(count: number, current: number): number {
  if (count <= 0) return -1;
  return current + 1 >= count ? 0 : current + 1;
}

// ---- raw data ------------------------------------------------------------------------------------

/** A one-line preview of a collapsed JSON value, at most `max` characters. */
export function jsonPreview(value: unknown, max = 60): string {
  const text = JSON.stringify(value) ?? "undefined";
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** A heredoc delimiter that no line of `text` equals. */
function delimiter(text: string): string {
  const lines = new Set(text.split("\n"));
  let name = "COVEL_REQUEST";
  for (let i = 1; lines.has(name); i++) name = `COVEL_REQUEST_${i}`;
  return name;
}

/**
 * A shell command that sends a request body to the provider's official endpoint, the key read
 * from the environment (never written into the command); the body goes through a quoted heredoc,
 * so nothing in it is expanded by the shell.
 */
export function curlCommand(provider: "anthropic" | "openai", body: unknown): string {
  const json = JSON.stringify(body, null, 2);
  const end = delimiter(json);
  const head =
    provider === "anthropic"
      ? ["curl https://api.anthropic.com/v1/messages", '-H "x-api-key: $ANTHROPIC_API_KEY"', '-H "anthropic-version: 2023-06-01"']
      : ["curl https://api.openai.com/v1/chat/completions", '-H "Authorization: Bearer $OPENAI_API_KEY"'];
  return [...head, '-H "content-type: application/json"', `--data-binary @- <<'${end}'`].join(" \\\n  ") + `\n${json}\n${end}\n`;
}

/**
 * The request body as a call through the provider's JS SDK (`@anthropic-ai/sdk`, `openai`),
 * the key read from the environment as the SDK does by default.
 */
export function sdkCall(provider: "anthropic" | "openai", body: unknown): string {
  const json = JSON.stringify(body, null, 2).replace(/\n/g, "\n  ");
  return provider === "anthropic"
    ? `import Anthropic from "@anthropic-ai/sdk";\n\nconst client = new Anthropic(); // reads ANTHROPIC_API_KEY\nconst message = await client.messages.create(${json});\nconsole.log(message.content);\n`
    : `import OpenAI from "openai";\n\nconst client = new OpenAI(); // reads OPENAI_API_KEY\nconst completion = await client.chat.completions.create(${json});\nconsole.log(completion.choices[0].message);\n`;
}

// ---- the Providers panel -------------------------------------------------------------------------

export interface NotCalled {
  pluginId: string;
  providerId: string;
  order: number;
  reason: string;
}

export interface ProviderChain extends Chain {
  /** Registered providers of this point (and slot) that this preview did not call, and why. */
  notCalled: NotCalled[];
  /** Providers of the same point that serve another slot (a slot's chain only), in one row. */
  otherSlot: NotCalled[];
}

/**
 * Every chain of the preview — `character.visual@1` once per character — with the registered
 * providers that were not called and why: their plugin is not active (rejected with its code,
 * failed to load, not requested), or the chain did not reach them; points with providers that
 * the preview never runs (compaction) are listed too.
 */
export function providerChains(snapshot: Snapshot): ProviderChain[] {
  const preview = snapshot.preview;
  const keyed = preview.slots.filter((s) => s.key !== undefined && s.key !== null);
  const base = chains([...preview.calls, ...preview.worldContext.calls.filter((c) => !preview.calls.includes(c))], snapshot.points);
  const out: ProviderChain[] = base.map((c) => ({ ...c, notCalled: [], otherSlot: [] }));
  // A keyed slot (character.visual@1 per character) has a chain per key: they take the place of
  // the slot's calls in call order, one after the other.
  const placed = new Map<string, number>();
  for (const slot of keyed) {
    const [chain] = chains(slot.chain, snapshot.points);
    const key = `ui.slot@1 → ${slot.slot}[${slot.key}]`;
    const entry: ProviderChain = { ...(chain ?? { point: "ui.slot@1", calls: [], ties: new Set<string>() }), key, slot: slot.slot, notCalled: [], otherSlot: [] };
    const after = placed.get(slot.slot);
    const existing = out.findIndex((c) => c.key === `ui.slot@1 → ${slot.slot}`);
    if (after !== undefined) {
      out.splice(after + 1, 0, entry);
      placed.set(slot.slot, after + 1);
    } else if (existing >= 0 && out[existing].calls.every((c) => slot.chain.some((s) => s.pluginId === c.pluginId && s.providerId === c.providerId))) {
      out.splice(existing, 1, entry);
      placed.set(slot.slot, existing);
    } else {
      out.push(entry);
      placed.set(slot.slot, out.length - 1);
    }
  }
  const registered = snapshot.plugins.flatMap((p) => p.providers.map((r) => ({ plugin: p, ...r })));
  const why = (p: PluginView): string | null => {
    if (p.status === "rejected") return `plugin not active: rejected (${p.rejection?.code ?? "resolver"})`;
    if (p.status === "failed") return "plugin not active: it failed to load";
    if (p.status === "inactive") return "plugin not active in this session";
    return null;
  };
  for (const r of registered) {
    const matching = out.filter((c) => c.point === r.point && (r.slot === undefined || c.slot === r.slot));
    if (matching.length === 0) {
      const key = r.slot ? `${r.point} → ${r.slot}` : r.point;
      let chain = out.find((c) => c.key === key);
      if (!chain) {
        chain = { key, point: r.point, slot: r.slot, calls: [], ties: new Set(), notCalled: [], otherSlot: [] };
        out.push(chain);
      }
      chain.notCalled.push({ pluginId: r.plugin.name, providerId: r.id, order: r.order, reason: why(r.plugin) ?? "this preview does not run this point" });
      continue;
    }
    for (const chain of matching) {
      if (chain.calls.some((c) => c.pluginId === r.plugin.name && c.providerId === r.id)) continue;
      chain.notCalled.push({ pluginId: r.plugin.name, providerId: r.id, order: r.order, reason: why(r.plugin) ?? (pointMode(snapshot.points, r.point) === "single" ? "another provider answered this single point" : "not called: the chain stopped before it") });
    }
  }
  // A slot's chain also names the providers of the same point that serve another slot, so an
  // author looking for theirs sees where it went (e.g. a slot name with the wrong version).
  for (const chain of out) {
    if (!chain.slot) continue;
    const listed = new Set([...chain.calls.map((c) => `${c.pluginId}/${c.providerId}`), ...chain.notCalled.map((n) => `${n.pluginId}/${n.providerId}`)]);
    for (const r of registered) {
      if (r.point !== chain.point || r.slot === undefined || r.slot === chain.slot || listed.has(`${r.plugin.name}/${r.id}`)) continue;
      chain.otherSlot.push({ pluginId: r.plugin.name, providerId: r.id, order: r.order, reason: `other slot: it serves ${r.slot}` });
    }
  }
  return out;
}

// ---- diffs ---------------------------------------------------------------------------------------

export interface DiffPart {
  kind: "same" | "added" | "removed";
  text: string;
}

/**
 * A word-level diff (words and the spaces after them are the units), by longest common
 * subsequence; texts beyond `limit` units each fall back to one removed and one added part.
 */
export function wordDiff(before: string, after: string, limit = 4000): DiffPart[] {
  const split = (t: string) => t.match(/\S+\s*|\s+/g) ?? [];
  const a = split(before);
  const b = split(after);
  if (a.length > limit || b.length > limit) return [{ kind: "removed", text: before }, { kind: "added", text: after }].filter((p) => p.text) as DiffPart[];
  const n = a.length;
  const m = b.length;
  const lcs: Uint32Array[] = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) for (let j = m - 1; j >= 0; j--) lcs[i][j] = a[i] === b[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
  const out: DiffPart[] = [];
  const push = (kind: DiffPart["kind"], text: string) => {
    const last = out[out.length - 1];
    if (last?.kind === kind) last.text += text;
    else out.push({ kind, text });
  };
  let i = 0;
  let j = 0;
  while (i < n && j < m) {
    if (a[i] === b[j]) {
      push("same", a[i]);
      i++;
      j++;
    } else if (lcs[i + 1][j] >= lcs[i][j + 1]) push("removed", a[i++]);
    else push("added", b[j++]);
  }
  while (i < n) push("removed", a[i++]);
  while (j < m) push("added", b[j++]);
  return out;
}

/**
 * What differs between two played turns (of one branch or of two): the prompt as each sent it
 * (its segments, the player's input and summaries; kept with the turn, so a turn played before
 * a plugin change keeps what it sent), the reply's words, the events emitted, the slot values
 * the turns left, and the usage (cost) the backend reported.
 */
export function turnRecordChanges(before: TurnRecord, after: TurnRecord): { key: string; parts: DiffPart[] }[] {
  const out: { key: string; parts: DiffPart[] }[] = [];
  const compare = (key: string, a: string, b: string) => {
    if (a !== b) out.push({ key, parts: wordDiff(a, b) });
  };
  // The prompt as each turn sent it (segments, the player's input, summaries; not the history).
  const sent = (t: TurnRecord) => new Map((t.sent ?? []).map((p) => [p.key, p.text]));
  const [x, y] = [sent(before), sent(after)];
  for (const key of [...new Set([...x.keys(), ...y.keys()])]) compare(key, x.get(key) ?? "", y.get(key) ?? "");
  compare("reply", before.reply?.text ?? before.error ?? "", after.reply?.text ?? after.error ?? "");
  compare("events", (before.events ?? []).map((e) => JSON.stringify(e)).join("\n"), (after.events ?? []).map((e) => JSON.stringify(e)).join("\n"));
  const slots = (t: TurnRecord) => new Map((t.slotChanges ?? []).map((c) => [c.key ? `${c.slot}[${c.key}]` : c.slot, JSON.stringify(c.value)]));
  const [a, b] = [slots(before), slots(after)];
  for (const slot of [...new Set([...a.keys(), ...b.keys()])]) compare(`slot change ${slot}`, a.get(slot) ?? "(unchanged)", b.get(slot) ?? "(unchanged)");
  compare("usage (cost)", usageLine(before), usageLine(after));
  return out;
}

/** A reply's reported usage in one line (tokens in, cached, out), or why there is none. */
export function usageLine(turn: TurnRecord): string {
  const u = turn.reply?.usage as Record<string, unknown> | undefined;
  if (!u || typeof u !== "object") return "no usage reported";
  const n = (...keys: string[]) => keys.map((k) => u[k]).find((v) => typeof v === "number") as number | undefined;
  const parts = [
    ["input", n("input_tokens", "prompt_tokens")],
    ["cache write", n("cache_creation_input_tokens")],
    ["cache read", n("cache_read_input_tokens")],
    ["output", n("output_tokens", "completion_tokens")],
  ].filter(([, v]) => v !== undefined);
  return parts.length ? parts.map(([k, v]) => `${k} ${v}`).join(" · ") : JSON.stringify(u);
}

/**
 * The turn of another branch a played turn is compared with by default: in a replay, the turn
 * at the same position of the branch it replays; otherwise none (the turn before is used).
 */
export function replayCounterpart(snapshot: Snapshot, turnId: string): { branch: string; turnId: string } | undefined {
  const branches = snapshot.branches ?? [];
  const active = branches.find((b) => b.active);
  const from = active?.forkedFrom;
  if (!from || from.afterTurn) return undefined;
  const source = branches.find((b) => b.id === from.branch);
  const index = snapshot.turns.findIndex((t) => t.turnId === turnId);
  const other = source?.turns.filter((t) => !t.error)[index];
  return other ? { branch: from.branch, turnId: other.turnId } : undefined;
}

/** One line per cache boundary the last reload moved or broke, naming the segment responsible. */
export function boundaryBanner(entry: ReloadEntry | undefined): string[] {
  return (entry?.diff.boundaries ?? []).map((b: any) => {
    const tokens = typeof b.beforeTokens === "number" && typeof b.afterTokens === "number" ? ` (prefix ${b.beforeTokens} → ${b.afterTokens} tokens)` : "";
    const who = b.segment ? ` by segment ${b.segment}${b.plugin ? ` of plugin ${b.plugin}` : ""}` : b.plugin ? ` by plugin ${b.plugin}` : "";
    return `The last reload changed the prefix of cache boundary ${b.index}${who}${tokens}: the cached prefix up to it is written again on the next request.`;
  });
}

/**
 * A played turn in one line: tokens sent and cache boundaries (once its prompt is loaded), reply
 * length, events, slots, compaction. A played turn records a compaction run only when one was
 * due; a failed turn ran none.
 */
export function turnSummary(turn: import("./wire").TurnRecord, sent?: Snapshot["preview"]): string {
  const p = sent?.prompt;
  const prompt = p && sent ? `${sent.counts.counter.exact ? "" : "≈"}${promptTokens(sent.counts)} tokens sent over ${counted(p.system.blocks.filter((b) => b.cacheBoundary).length, "cache boundary", "cache boundaries")} · ` : "";
  const reply = turn.reply ? `${turn.reply.text.split(/\s+/).filter(Boolean).length}-word reply` : "no reply";
  const compaction = turn.compaction?.triggered ? "compaction ran" : turn.error ? "no compaction run" : "compaction not due";
  const steps = turn.steps ?? [];
  const tools = steps.filter((s) => s.kind === "tool").length;
  const hooks = steps.filter((s) => s.kind === "hook" && s.outcome !== "continue" && s.outcome !== "not-matched").length;
  const loop = `${tools ? `${counted(tools, "tool call")} · ` : ""}${hooks ? `${counted(hooks, "hook")} acted · ` : ""}`;
  return `${prompt}${reply} · ${loop}${counted(turn.events?.length ?? 0, "event")} · ${counted(turn.slotChanges?.length ?? 0, "slot change")} · ${compaction}`;
}

/**
 * The segments whose text differs between two previews (added, removed or changed), with word
 * diffs. Rows sharing a key are paired by rank (the n-th with the n-th, see `rowsByKey`).
 */
export function segmentChanges(before: Snapshot["preview"] | undefined, after: Snapshot["preview"]): { key: string; parts: DiffPart[] }[] {
  if (!before) return [];
  const rows = (p: Snapshot["preview"]) => rowsByKey(p.segments.filter((s) => s.included));
  const a = rows(before);
  const b = rows(after);
  const keys = [...new Set([...a.keys(), ...b.keys()])];
  return keys.flatMap((key) => {
    const was = a.get(key) ?? [];
    const now = b.get(key) ?? [];
    return Array.from({ length: Math.max(was.length, now.length) }, (_, n) => [was[n]?.content, now[n]?.content] as const)
      .filter(([x, y]) => x !== y)
      .map(([x, y]) => ({ key, parts: wordDiff(x ?? "", y ?? "") }));
  });
}

/**
 * What the Prompt panel must say above the prompt: plugins running their last good version (the
 * prompt shows their old text) and segment providers that failed (their segment is missing).
 */
export function promptWarnings(snapshot: Snapshot): { kind: "last-good" | "missing-segment"; plugin: string; text: string; target: string }[] {
  const out: { kind: "last-good" | "missing-segment"; plugin: string; text: string; target: string }[] = [];
  for (const p of snapshot.plugins.filter((p) => p.status === "last-good")) {
    const d = p.diagnostics[0];
    out.push({ kind: "last-good", plugin: p.name, text: `${p.name} runs its last good version: its newest files do not load${d ? ` ([${d.code}] ${where(d) || d.message})` : ""}; the prompt below shows the old version's text.`, target: `tr[data-plugin="${attr(p.name)}"]` });
  }
  const failed = snapshot.preview.calls.filter((c) => c.point === "prompt.segment@1" && c.outcome !== "success");
  for (const c of failed) {
    if (out.some((o) => o.kind === "missing-segment" && o.text.startsWith(`${c.pluginId}/${c.providerId} `))) continue;
    out.push({ kind: "missing-segment", plugin: c.pluginId, text: `${c.pluginId}/${c.providerId} failed (${c.errorCode ?? c.outcome}${c.message ? `: ${c.message}` : ""}): whatever it would have added is missing from the prompt below.`, target: callTarget(c) });
  }
  return out;
}

/**
 * Everything whose text differs between two previews — segments (`segment plugin/id`),
 * messages (`message <origin>`) and slot values (`slot id[key]`, as indented JSON) — with word
 * diffs, in that order.
 */
export function previewChanges(before: Snapshot["preview"] | undefined, after: Snapshot["preview"]): { key: string; parts: DiffPart[] }[] {
  if (!before) return [];
  const compare = (label: string, a: Map<string, string>, b: Map<string, string>) =>
    [...new Set([...a.keys(), ...b.keys()])].filter((k) => a.get(k) !== b.get(k)).map((k) => ({ key: `${label} ${k}`, parts: wordDiff(a.get(k) ?? "", b.get(k) ?? "") }));
  const messages = (p: Snapshot["preview"]) => {
    const out = new Map<string, string>();
    for (const m of p.prompt.messages) {
      const o = m.origin;
      const id = originId(o);
      const name = o.kind === "segment" ? `${o.plugin}/${o.segment}` : id ? `${o.kind} ${id}` : o.kind;
      out.set(out.has(name) ? `${name} (${out.size})` : name, m.content);
    }
    return out;
  };
  const slots = (p: Snapshot["preview"]) => new Map(p.slots.map((s) => [s.key ? `${s.slot}[${s.key}]` : s.slot, JSON.stringify(s.value, null, 1)]));
  return [
    ...segmentChanges(before, after).map((c) => ({ ...c, key: `segment ${c.key}` })),
    ...compare("message", messages(before), messages(after)),
    ...compare("slot", slots(before), slots(after)),
  ];
}

/** How a turn-loop step reads in the turn inspector: a headline, its tone, and what changed. */
export type LoopLine = { head: string; tone: "" | "ok" | "warning" | "error"; detail?: string };

/**
 * One step of a played turn's loop (a hook call, a model call, a tool call, an event or a
 * commit) in the author's words.
 */
export function loopStepLine(step: import("./wire").LoopStep): LoopLine {
  switch (step.kind) {
    case "hook": {
      const fields = step.changes.map((c) => c.field).join(", ");
      const said: Record<string, [string, LoopLine["tone"]]> = {
        continue: ["continue", ""],
        "not-matched": ["its match said no", ""],
        replaced: [`replaced ${fields}`, "ok"],
        correction: ["asked for a correction", "warning"],
        rejected: ["rejected", "error"],
        "abort-ignored": ["aborted (no effect on this event)", "warning"],
        failed: ["failed (skipped)", "error"],
      };
      const [what, tone] = said[step.outcome] ?? [step.outcome, ""];
      return { head: `${step.event} hook · ${step.pluginId} · ${what}`, tone, detail: step.detail };
    }
    case "model": {
      const calls = step.reply?.toolCalls?.map((c) => c.name) ?? [];
      const what = step.error ? `failed: ${step.error}` : calls.length ? `calls ${calls.join(", ")}` : `answers ${counted(step.reply?.text.split(/\s+/).filter(Boolean).length ?? 0, "word")}`;
      const sent = step.added.length ? ` (${counted(step.added.length, "message")} after the prompt)` : "";
      const replaced = step.replaced.length ? ` · hooks replaced ${step.replaced.join(", ")}` : "";
      const said = step.reply?.text ? `“${step.reply.text}”` : undefined;
      return { head: `Model call ${step.call}${sent} → ${what}${replaced}`, tone: step.error ? "error" : "", detail: said };
    }
    case "tool": {
      const tone: LoopLine["tone"] = step.outcome === "ok" ? "ok" : step.outcome === "rejected" ? "warning" : "error";
      const owner = step.pluginId ? ` (${step.pluginId})` : "";
      const proposals = step.proposals.length ? ` · ${counted(step.proposals.length, "proposal")}` : "";
      return { head: `Tool ${step.name}${owner} · ${step.outcome}${proposals}`, tone, detail: step.result };
    }
    case "event": {
      const by = step.pluginId ? ` from ${step.pluginId}` : " from the story";
      if (!step.accepted) return { head: `Event ${step.topic}${by} · refused`, tone: "error", detail: step.detail };
      return { head: `Event ${step.topic}${by} → ${step.slots.length ? `moved ${step.slots.join(", ")}` : "no slot previews it"}`, tone: "ok" };
    }
    case "commit": {
      const writes = step.writes.length ? ` ${step.writes.join(", ")}` : "";
      const moved = step.slots.length ? ` → moved ${step.slots.join(", ")}` : "";
      return { head: `Commit ${step.type} of ${step.pluginId}${writes} · ${step.committed ? "committed" : "refused"}${moved}`, tone: step.committed ? "ok" : "error", detail: step.detail };
    }
  }
}

/** Where a provider's `provideExtension` call is in its plugin's code (undefined when unknown). */
export function providerSite(snapshot: Snapshot, pluginId: string, point: string, providerId: string): SourceSite | undefined {
  const plugin = snapshot.plugins.find((p) => p.name === pluginId);
  return plugin?.inventory.extensions.find((e) => e.point === point && e.id === providerId)?.site ?? undefined;
}

/**
 * Where a tool or hook was registered: `tool:NAME`, or a hook's event (`hook:EVENT:` and its
 * enforce group, the first registration of that event by the plugin).
 */
export function registrationSite(snapshot: Snapshot, pluginId: string | null | undefined, key: string): SourceSite | undefined {
  const plugin = snapshot.plugins.find((p) => p.name === pluginId);
  return plugin?.inventory.sites.find((s) => s.key === key || (key.endsWith(":") && s.key.startsWith(key)))?.site;
}

/** A site as an author reads it: the last two parts of its path, line and column. */
export function siteLabel(site: SourceSite): string {
  return `${site.file.split(/[\\/]/).slice(-2).join("/")}:${site.line}:${site.column}`;
}

/** A text cut where it matches `find` (case-insensitive), for marking the matches. */
export function highlightParts(text: string, find: string): { text: string; hit: boolean }[] {
  const needle = find.trim().toLowerCase();
  if (!needle) return [{ text, hit: false }];
  const lower = text.toLowerCase();
  const out: { text: string; hit: boolean }[] = [];
  let at = 0;
  for (let i = lower.indexOf(needle); i >= 0; i = lower.indexOf(needle, i + needle.length)) {
    if (i > at) out.push({ text: text.slice(at, i), hit: false });
    out.push({ text: text.slice(i, i + needle.length), hit: true });
    at = i + needle.length;
  }
  if (at < text.length) out.push({ text: text.slice(at), hit: false });
  return out;
}
