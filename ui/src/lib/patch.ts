// Merging what the shell sends after the first snapshot: a `SnapshotPatch` holds only the parts
// that changed since the UI last received them (covel_studio::wire::patch); a part the snapshot
// may omit is `null` when it is gone; the played turns come as `{ keep, append }`, so a turn
// crosses once and an undo keeps one fewer; the plugins and the preview's slot views and calls
// come by position (`Positions`: a reload sends the plugin it changed, the slots whose chain ran
// it and the calls that ran again, not the folder's lists; when most calls were answered from
// the memo, as on the first reload after a folder opens, it says `memoized` instead of sending
// them; a slot view sent brings only the calls of its chain that changed, by position in the
// chain held: `SlotViewPatch`), and so do the segment table's rows (a save that changes one
// segment's text sends its row); the prompt comes as a change to the one held (`JsonChange`:
// key by key, position by position, a long text as the splice between its common start and
// end), since its system blocks and request bodies hold every segment's text; the preview
// comes in parts too (`PreviewPatch`: a reload that changed only call
// durations sends those calls and the timings, not the prompt). A patch names the snapshot
// version it applies to (`since`): one that arrives out of order does not apply, and the store
// asks for the whole snapshot instead.
import type { CallRecord, JsonChange, JsonValue, Positions, Preview, PreviewPatch, SlotView, SlotViewPatch, Snapshot, SnapshotPatch } from "./wire";

/**
 * A call record as a memo answer shows it: `cached`, no duration, no reason it would not be
 * cached, and how long the run it reuses took (the duration the record of that run showed)
 * (covel_studio::wire::patch::MemoAnswer, which sends `memoized` only where this is exactly the
 * new record).
 */
export function memoAnswer(call: CallRecord): CallRecord {
  // A record that already is one stays the same object, so the window redraws nothing for it.
  if (call.cached && call.durationMs === 0 && call.notCached == null) return call;
  const { notCached: _, ranMs: __, ...kept } = call;
  const ranMs = call.cached ? call.ranMs : call.durationMs;
  return ranMs == null ? { ...kept, durationMs: 0, cached: true } : { ...kept, durationMs: 0, cached: true, ranMs };
}

/** A slot view whose chain was answered from the memo (the same object when it already was). */
export function memoSlotAnswer(slot: SlotView): SlotView {
  const chain = slot.chain.map(memoAnswer);
  return chain.every((call, i) => call === slot.chain[i]) ? slot : { ...slot, chain };
}

/** Whether an answer is a whole snapshot (its turns are a list) rather than a patch. */
export function isSnapshot(answer: Snapshot | SnapshotPatch): answer is Snapshot {
  return Array.isArray(answer.turns);
}

/** The snapshot after a patch (null when the patch applies to another version); the snapshot given is not changed. */
export function applyPatch(snapshot: Snapshot, patch: SnapshotPatch): Snapshot | null {
  if (patch.since !== snapshot.version) return null;
  const next: Snapshot = { ...snapshot, version: patch.version };
  if (patch.pluginsDir !== undefined) next.pluginsDir = patch.pluginsDir;
  if (patch.sessionPath !== undefined) next.sessionPath = patch.sessionPath ?? undefined;
  if (patch.session !== undefined) next.session = patch.session;
  if (patch.sessionText !== undefined) next.sessionText = patch.sessionText ?? undefined;
  if (patch.sessionError !== undefined) next.sessionError = patch.sessionError ?? undefined;
  if (patch.undo !== undefined) next.undo = patch.undo ?? undefined;
  if (patch.playedPath !== undefined) next.playedPath = patch.playedPath;
  if (patch.plugins !== undefined) {
    const plugins = mergePositions(snapshot.plugins, patch.plugins);
    if (plugins === null) return null;
    next.plugins = plugins;
  }
  if (patch.resolution !== undefined) next.resolution = patch.resolution;
  if (patch.preview !== undefined) {
    const preview = mergePreview(snapshot.preview, patch.preview);
    if (preview === null) return null;
    next.preview = preview;
  }
  if (patch.runtimeNote !== undefined) next.runtimeNote = patch.runtimeNote ?? undefined;
  if (patch.compaction !== undefined) next.compaction = patch.compaction;
  if (patch.turns !== undefined) next.turns = [...snapshot.turns.slice(0, patch.turns.keep), ...patch.turns.append];
  if (patch.branches !== undefined) next.branches = patch.branches;
  if (patch.lastReload !== undefined) next.lastReload = patch.lastReload ?? undefined;
  if (patch.diagnostics !== undefined) next.diagnostics = patch.diagnostics;
  for (const key of ["sessionPath", "sessionText", "sessionError", "undo", "lastReload", "runtimeNote"] as const) {
    if (next[key] === undefined) delete next[key];
  }
  return next;
}

/**
 * A list after a `Positions` patch: `count` long, the items it sends at their positions, every
 * other position the same object as before (with `memoized`, that object as `memoized` makes
 * it). Null when a position would be left empty (the patch was not made against this list) or
 * the patch says `memoized` for a list that has no such change, so the store asks for the whole
 * snapshot.
 */
export function mergePositions<T>(items: T[], patch: Positions<T>, memoized?: (item: T) => T): T[] | null {
  if (patch.memoized && memoized === undefined) return null;
  const held = items.slice(0, patch.count);
  const next: (T | undefined)[] = patch.memoized && memoized ? held.map(memoized) : held;
  next.length = patch.count;
  for (const { index, item } of patch.changed) {
    if (index >= patch.count) return null;
    next[index] = item;
  }
  for (let i = 0; i < next.length; i++) if (next[i] === undefined) return null;
  return next as T[];
}

/**
 * A JSON value after a change (covel_studio::wire::splice::JsonChange, whose `apply_to` is the
 * same rule): what the change does not touch stays the object held. Undefined when the change
 * was not made against this value (another kind, a missing key or position, a text too short
 * for its kept ends), so the store asks for the whole snapshot.
 */
export function applyJsonChange(held: JsonValue, change: JsonChange): JsonValue | undefined {
  if (change.value !== undefined) return change.value;
  if (change.text !== undefined) {
    const { keepStart, keepEnd, insert } = change.text;
    if (typeof held !== "string" || keepStart + keepEnd > held.length) return undefined;
    return held.slice(0, keepStart) + insert + held.slice(held.length - keepEnd);
  }
  if (change.array !== undefined) {
    if (!Array.isArray(held)) return undefined;
    const next: (JsonValue | undefined)[] = held.slice(0, change.array.count);
    next.length = change.array.count;
    for (const { index, change: item } of change.array.changed) {
      if (index >= change.array.count) return undefined;
      const merged = applyJsonChange(index < held.length ? held[index] : null, item);
      if (merged === undefined) return undefined;
      next[index] = merged;
    }
    for (let i = 0; i < next.length; i++) if (next[i] === undefined) return undefined;
    return next as JsonValue[];
  }
  if (change.object !== undefined) {
    if (held === null || typeof held !== "object" || Array.isArray(held)) return undefined;
    const next: { [key: string]: JsonValue } = { ...held };
    for (const { key, change: item } of change.object.changed) {
      if (!Object.hasOwn(held, key)) return undefined;
      const merged = applyJsonChange(held[key], item);
      if (merged === undefined) return undefined;
      next[key] = merged;
    }
    return next;
  }
  return undefined;
}

/** The preview after a preview patch: the parts it sends replace those held (the segment rows, slots and calls by position, the prompt as a change), the rest stay the same objects; null when a part it sends as a change does not fit the one held. */
export function mergePreview(preview: Preview, patch: PreviewPatch): Preview | null {
  const { slots, calls, segments, prompt, counts, ...parts } = patch;
  const next: Preview = { ...preview };
  for (const [key, value] of Object.entries(parts) as [keyof Preview, unknown][]) {
    if (value !== undefined) (next as Record<keyof Preview, unknown>)[key] = value;
  }
  if (prompt !== undefined) {
    const merged = applyJsonChange(preview.prompt as unknown as JsonValue, prompt);
    if (merged === undefined) return null;
    next.prompt = merged as unknown as Preview["prompt"];
  }
  if (counts !== undefined) {
    const merged = applyJsonChange(preview.counts as unknown as JsonValue, counts);
    if (merged === undefined) return null;
    next.counts = merged as unknown as Preview["counts"];
  }
  if (segments !== undefined) {
    const merged = mergePositions(preview.segments, segments);
    if (merged === null) return null;
    next.segments = merged;
  }
  if (slots !== undefined) {
    const merged = mergeSlots(preview.slots, slots);
    if (merged === null) return null;
    next.slots = merged;
  }
  if (calls !== undefined) {
    const merged = mergePositions(preview.calls, calls, memoAnswer);
    if (merged === null) return null;
    next.calls = merged;
  }
  // The preview omits an empty list of history rewrites; the patch sends `[]` when they are gone.
  if (next.historyRewrites?.length === 0) delete next.historyRewrites;
  return next;
}

/**
 * The slot views after a slot patch: as `mergePositions` merges them, each view sent taking its
 * chain from the chain of the view held at its position (before any memo answer) with the
 * chain's own patch. Null when a list does not fit the one held.
 */
export function mergeSlots(held: SlotView[], patch: Positions<SlotViewPatch>): SlotView[] | null {
  const changed: { index: number; item: SlotView }[] = [];
  for (const { index, item } of patch.changed) {
    const chain = mergePositions(held[index]?.chain ?? [], item.chain, memoAnswer);
    if (chain === null) return null;
    changed.push({ index, item: { ...item, chain } });
  }
  return mergePositions(held, { ...patch, changed }, memoSlotAnswer);
}

/** A slot view as a patch on no view: every call of its chain. */
function wholeSlot(view: SlotView): SlotViewPatch {
  return { ...view, chain: allPositions(view.chain) };
}

/** Every item of a list, as a `Positions` patch. */
function allPositions<T>(items: T[]): Positions<T> {
  return { count: items.length, changed: items.map((item, index) => ({ index, item })) };
}

/** A whole snapshot as a patch on version `since`: every part, every turn appended (what the fake backend answers). */
export function patchOf(snapshot: Snapshot, since: number): SnapshotPatch {
  return {
    ...snapshot,
    since,
    version: since + 1,
    sessionPath: snapshot.sessionPath ?? null,
    sessionText: snapshot.sessionText ?? null,
    sessionError: snapshot.sessionError ?? null,
    undo: snapshot.undo ?? null,
    lastReload: snapshot.lastReload ?? null,
    runtimeNote: snapshot.runtimeNote ?? null,
    plugins: allPositions(snapshot.plugins),
    turns: { keep: 0, append: snapshot.turns },
    preview: { ...snapshot.preview, prompt: { value: snapshot.preview.prompt as unknown as JsonValue }, counts: { value: snapshot.preview.counts as unknown as JsonValue }, segments: allPositions(snapshot.preview.segments), slots: { count: snapshot.preview.slots.length, changed: snapshot.preview.slots.map((view, index) => ({ index, item: wholeSlot(view) })) }, calls: allPositions(snapshot.preview.calls), historyRewrites: snapshot.preview.historyRewrites ?? [] },
  };
}
