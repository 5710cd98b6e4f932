// The fake backend: answers from snapshots the Rust tests produced, for UI tests in a browser.
// It answers only what a fixture covers — a runtime or a session edit without one is an error —
// and records every call in `window.__fakeCalls`, so tests see what the UI asked for.
import initial from "../../fixtures/snapshot.json";
import afterTurn from "../../fixtures/after-turn.json";
import afterReload from "../../fixtures/after-reload.json";
import storyDirectorRuntime from "../../fixtures/runtime-plugin-story-director.json";
import excludesSoundtrack from "../../fixtures/session-excludes-soundtrack.json";
import type { Backend, StudioEvent } from "./backend";
import type { Snapshot } from "./types";

const snapshot = (value: unknown) => value as Snapshot;

/** JSON with object keys sorted, to compare sessions whatever order their keys came in. */
function canonical(value: unknown): string {
  const sort = (v: any): any =>
    Array.isArray(v) ? v.map(sort) : v && typeof v === "object" ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, sort(v[k])])) : v;
  return JSON.stringify(sort(value));
}

export function fakeBackend(): Backend {
  let current = snapshot(initial);
  const listeners: ((e: StudioEvent) => void)[] = [];
  const calls: [string, ...unknown[]][] = [];
  (globalThis as any).__fakeCalls = calls;
  const runtimes: Record<string, Snapshot> = { story: snapshot(initial), "plugin:story-director": snapshot(storyDirectorRuntime) };
  const sessionEdits = [snapshot(excludesSoundtrack)];
  // Tests trigger a reload from the page: `window.__fakeReload()`.
  (globalThis as any).__fakeReload = () => {
    current = snapshot(afterReload);
    for (const l of listeners) l({ reason: "reload", snapshot: current });
  };
  return {
    open: async () => current,
    snapshot: async () => current,
    setRuntime: async (target) => {
      calls.push(["setRuntime", target]);
      const answer = runtimes[target];
      if (!answer) throw new Error(`the fake backend has no fixture for runtime ${target}`);
      return (current = answer);
    },
    playTurn: async (message) => {
      calls.push(["playTurn", message]);
      return (current = snapshot(afterTurn));
    },
    cancel: async () => {
      calls.push(["cancel"]);
    },
    undoTurn: async () => {
      calls.push(["undoTurn"]);
      return (current = snapshot(initial));
    },
    savePlayedSession: async (path) => {
      calls.push(["savePlayedSession", path]);
    },
    updateSession: async (session) => {
      calls.push(["updateSession", session]);
      const answer = sessionEdits.find((s) => canonical(s.session) === canonical(session));
      if (!answer) throw new Error("the fake backend has no fixture for this session edit");
      return (current = answer);
    },
    recentFolders: async () => [{ plugins: current.pluginsDir, session: current.sessionPath ?? null }],
    onChange: async (listener) => {
      listeners.push(listener);
      return () => listeners.splice(listeners.indexOf(listener), 1);
    },
  };
}
