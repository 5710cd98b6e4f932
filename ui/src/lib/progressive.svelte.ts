// Progressive rendering for long tables (200 plugins are 200 heavy rows): a panel shows its
// first rows in the frame that follows the click, then the rest in chunks, one per frame after
// it is painted, so switching panels never waits for rows below the fold. Rows already shown stay shown across
// reloads (they update in place); only a freshly mounted panel starts from the first chunk.
import { untrack } from "svelte";

/** A table this short renders whole at once. */
export const ALL_AT_ONCE = 100;
/** Rows shown in the first frame of a longer table, and added per later frame. */
export const FIRST_ROWS = 20;
export const ROWS_PER_TASK = 40;

/** How many rows a freshly mounted panel shows in its first frame. */
export function firstLimit(total: number, first = FIRST_ROWS): number {
  return total <= ALL_AT_ONCE ? total : first;
}

/** How many rows to show after one more task, given how many are shown of how many. */
export function nextLimit(shown: number, total: number, step = ROWS_PER_TASK): number {
  return Math.min(total, shown + step);
}

/** A row limit that grows to `total()` one chunk per painted frame while the component lives. */
export function progressive(total: () => number, first = FIRST_ROWS, step = ROWS_PER_TASK) {
  let shown = $state(firstLimit(untrack(total), first));
  $effect(() => {
    const all = total();
    if (shown >= all) return;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const frame = requestAnimationFrame(() => (timer = setTimeout(() => (shown = nextLimit(shown, all, step)), 0)));
    return () => {
      cancelAnimationFrame(frame);
      clearTimeout(timer);
    };
  });
  return {
    get limit() {
      return shown;
    },
  };
}
