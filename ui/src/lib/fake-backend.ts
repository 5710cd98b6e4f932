// The fake backend: answers from snapshots the Rust tests produced, for UI tests in a browser.
import initial from "../../fixtures/snapshot.json";
import afterTurn from "../../fixtures/after-turn.json";
import afterReload from "../../fixtures/after-reload.json";
import forecast from "../../fixtures/forecast.json";
import tests from "../../fixtures/tests.json";
import type { Backend, StudioEvent } from "./backend";
import type { Forecast, Snapshot, TestRun } from "./types";

export function fakeBackend(): Backend {
  let current = initial as unknown as Snapshot;
  const listeners: ((e: StudioEvent) => void)[] = [];
  // Tests trigger a reload from the page: `window.__fakeReload()`.
  (globalThis as any).__fakeReload = () => {
    current = afterReload as unknown as Snapshot;
    for (const l of listeners) l({ reason: "reload", snapshot: current });
  };
  return {
    open: async () => current,
    snapshot: async () => current,
    setRuntime: async () => current,
    playTurn: async () => (current = afterTurn as unknown as Snapshot),
    cancel: async () => {},
    undoTurn: async () => (current = initial as unknown as Snapshot),
    savePlayedSession: async () => {},
    updateSession: async (session) => (current = { ...current, session }),
    recentFolders: async () => [{ plugins: current.pluginsDir, session: current.sessionPath ?? null }],
    forecast: async () => forecast as unknown as Forecast,
    runTests: async () => tests as unknown as TestRun,
    onChange: async (listener) => {
      listeners.push(listener);
      return () => listeners.splice(listeners.indexOf(listener), 1);
    },
  };
}
