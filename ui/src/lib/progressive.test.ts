import { describe, expect, it } from "vitest";
import { ALL_AT_ONCE, FIRST_ROWS, firstLimit, nextLimit, ROWS_PER_TASK } from "./progressive.svelte";

describe("progressive rendering of long tables", () => {
  it("renders a short table whole and a long one from its first rows", () => {
    expect(firstLimit(12)).toBe(12);
    expect(firstLimit(ALL_AT_ONCE)).toBe(ALL_AT_ONCE);
    expect(firstLimit(200)).toBe(FIRST_ROWS);
  });
  it("grows one chunk per task and stops at the total", () => {
    expect(nextLimit(FIRST_ROWS, 200)).toBe(FIRST_ROWS + ROWS_PER_TASK);
    expect(nextLimit(190, 200)).toBe(200);
    expect(nextLimit(200, 200)).toBe(200);
  });
  it("reaches 200 rows in a handful of tasks", () => {
    let shown = FIRST_ROWS;
    let tasks = 0;
    while (shown < 200) {
      shown = nextLimit(shown, 200);
      tasks++;
    }
    expect(tasks).toBe(Math.ceil((200 - FIRST_ROWS) / ROWS_PER_TASK));
  });
});
