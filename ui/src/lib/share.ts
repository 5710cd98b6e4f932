// Structural sharing between snapshots. A reload resends whole parts (the preview is one part),
// parsed into new objects even where nothing changed; Svelte compares by identity, so every
// derived value and every `{#each}` row reading them would run again. `share` puts back the
// objects the UI already holds wherever the new value is deep-equal to the old one at the same
// place: a reload that changes one segment hands the panels the same objects for all the others,
// and they skip them. Snapshots are never mutated, so sharing their objects is safe.

type Json = unknown;

/**
 * `next` with every subtree that is deep-equal to the one at the same place in `prev` replaced by
 * `prev`'s object (`prev` itself when all of it is equal). Array items are matched by position
 * from the start and, when the length changed (an item added or removed), from the end as well.
 * Only plain objects and arrays are shared (anything else is taken from `next`). Neither argument
 * is changed.
 */
export function share<T>(prev: Json, next: T): T {
  if (prev === next || typeof prev !== "object" || typeof next !== "object" || prev === null || next === null) return next;
  if (Array.isArray(next)) return Array.isArray(prev) ? (shareArray(prev, next) as T) : next;
  if (Array.isArray(prev) || !plain(prev) || !plain(next)) return next;
  return shareObject(prev as Record<string, Json>, next as Record<string, Json>) as T;
}

/** Only JSON's objects are compared: a Set, a Map or a Date has no enumerable keys to tell two apart. */
function plain(value: object): boolean {
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

function shareArray(prev: Json[], next: Json[]): Json[] {
  const out = new Array<Json>(next.length);
  const common = Math.min(prev.length, next.length);
  let equal = prev.length === next.length;
  let head = 0;
  for (; head < common; head++) {
    out[head] = share(prev[head], next[head]);
    if (out[head] !== prev[head]) equal = false;
  }
  if (prev.length !== next.length) {
    // An insertion or removal shifts the items after it: match those from the end instead,
    // as far as they stay equal.
    for (let p = prev.length - 1, n = next.length - 1; p >= 0 && n >= 0; p--, n--) {
      const shared = share(prev[p], next[n]);
      if (shared !== prev[p]) break;
      out[n] = shared;
    }
    for (let i = common; i < next.length; i++) if (!(i in out)) out[i] = next[i];
  }
  return equal ? prev : out;
}

function shareObject(prev: Record<string, Json>, next: Record<string, Json>): Record<string, Json> {
  const out: Record<string, Json> = {};
  let equal = true;
  let count = 0;
  for (const key in next) {
    count++;
    const value = key in prev ? share(prev[key], next[key]) : next[key];
    if (value !== prev[key] || !(key in prev)) equal = false;
    out[key] = value;
  }
  if (equal && count !== Object.keys(prev).length) equal = false;
  return equal ? prev : out;
}

/**
 * A computation whose result keeps the objects of its previous result wherever equal (for
 * `$derived.by`): a list rebuilt on every reload comes back as the same array when nothing in
 * it changed, so nothing reading it runs again.
 */
export function sharing<T>(compute: () => T): () => T {
  let last: unknown;
  return () => (last = share(last, compute())) as T;
}

/** Like `sharing`, for a computed Set: the previous Set when the new one has the same members. */
export function sameSet<T>(compute: () => Set<T>): () => Set<T> {
  let last: Set<T> | undefined;
  return () => {
    const next = compute();
    if (last && last.size === next.size && [...next].every((item) => last!.has(item))) return last;
    return (last = next);
  };
}
