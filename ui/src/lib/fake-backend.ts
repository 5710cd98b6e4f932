// The fake backend: answers from snapshots the Rust tests produced, for UI tests in a browser.
// It answers only what a fixture covers — a runtime without one is an error — and records every
// call in `window.__fakeCalls`, so tests see what the UI asked for. Session text edits use the
// `yaml` package's document model (comments kept), standing in for the Rust side's lossless
// editor; `?open-failed` in the page's URL starts as if the session could not be opened.
import { fixture as initial } from "../../fixtures/snapshot";
import { fixture as afterTurn } from "../../fixtures/after-turn";
import { fixture as turnPreviews } from "../../fixtures/turn-previews";
import { fixture as afterReload } from "../../fixtures/after-reload";
import { fixture as sonnet } from "../../fixtures/forecast";
import { fixture as tooShort } from "../../fixtures/forecast-too-short";
import { fixture as tests } from "../../fixtures/tests";
import { fixture as storyDirectorRuntime } from "../../fixtures/runtime-plugin-story-director";
import { fixture as excludesSoundtrack } from "../../fixtures/session-excludes-soundtrack";
import { fixture as bodies } from "../../fixtures/request-bodies";
import { fixture as about } from "../../fixtures/about";
import { parseDocument } from "yaml";
import { StudioError, type Backend, type StudioEvent } from "./backend";
import { patchOf } from "./patch";
import { runtimeValue } from "./view";
import type { Diagnostic, OpenStatus, Preview, Requests, SessionEdit, Snapshot, SnapshotPatch, TurnPrompt, TurnText } from "./wire";

/** A played turn's prompt as a test may give it: without request bodies, or a bare preview. */
type GivenPrompt = Preview | TurnPrompt | Omit<TurnPrompt, "requests">;

function check(text: string): Diagnostic[] {
  const doc = parseDocument(text, { prettyErrors: true });
  const error = doc.errors[0];
  if (error) {
    const at = error.linePos?.[0];
    return [{ code: "session-schema", message: error.message.split("\n")[0], line: at?.line, column: at?.col }];
  }
  const data = doc.toJS();
  if (!data || typeof data !== "object" || !data.id) return [{ code: "session-schema", message: "missing field `id`", line: 1, column: 1 }];
  return [];
}

function edit(text: string, edits: SessionEdit[]): string {
  const doc = parseDocument(text);
  for (const e of edits) {
    if (e.kind === "set-locale") doc.setIn(["locale"], e.locale);
    else if (e.kind === "set-plugin-enabled") {
      const excluded: string[] = (doc.getIn(["plugins", "excluded"]) as any)?.toJSON?.() ?? [];
      const next = e.enabled ? excluded.filter((p) => p !== e.plugin) : [...excluded, e.plugin];
      doc.setIn(["plugins", "excluded"], doc.createNode(next, { flow: true }));
    } else if (e.kind === "set-setting") doc.setIn(["settings", e.plugin, e.key], e.value);
    else if (e.kind === "set-character") doc.setIn(["world", "characters", e.index], doc.createNode(e.character, { flow: true }));
    else if (e.kind === "add-character") doc.addIn(["world", "characters"], doc.createNode(e.character, { flow: true }));
    else if (e.kind === "remove-character") doc.deleteIn(["world", "characters", e.index]);
    else if (e.kind === "set") doc.setIn(e.path, e.value);
    else if (e.kind === "remove") doc.deleteIn(e.path);
  }
  return doc.toString();
}

export function fakeBackend(): Backend {
  let current: Snapshot = initial;
  const failed = typeof location !== "undefined" && location.search.includes("open-failed");
  const listeners: ((e: StudioEvent) => void)[] = [];
  const textListeners: ((e: TurnText) => void)[] = [];
  const calls: [string, ...unknown[]][] = [];
  (globalThis as any).__fakeCalls = calls;
  const runtimes: Record<string, [Snapshot, Requests]> = {
    story: [initial, bodies.snapshot],
    "plugin:story-director": [storyDirectorRuntime, bodies["runtime-plugin-story-director"]],
  };
  // The request bodies of the current snapshot's prompt (a snapshot a test built keeps the
  // bodies of the one before).
  let requests: Requests = bodies.snapshot;
  // Moves to the next snapshot, answered as a patch of every part (the real shell sends only
  // what changed) on the version the UI holds.
  const advance = (next: Snapshot, nextRequests: Requests = requests): SnapshotPatch => {
    const patch = patchOf(next, current.version);
    current = { ...next, version: patch.version };
    requests = nextRequests;
    return patch;
  };
  const reload = (next: Snapshot, nextRequests?: Requests) => {
    const patch = advance(next, nextRequests);
    for (const l of listeners) l({ reason: "reload", patch });
  };
  // Tests trigger a reload from the page: `window.__fakeReload()`, and a change of the session
  // file on disk: `window.__fakeSessionChanged(text)`, and any snapshot: `window.__fakeSnapshot(s)`.
  (globalThis as any).__fakeReload = () => {
    reload({ ...afterReload, sessionText: current.sessionText }, bodies["after-reload"]);
  };
  (globalThis as any).__fakeSessionChanged = (text: string) => {
    reload({ ...current, sessionText: text });
  };
  (globalThis as any).__fakeSaved = () => current.sessionText;
  // Played turns' prompts: the fixture's, plus any a test adds with its snapshot.
  const previews: Record<string, GivenPrompt> = { ...turnPreviews };
  // A snapshot a test built (e.g. a fixture with a failing call), arriving as after a reload,
  // with the prompts of any played turns it made up.
  (globalThis as any).__fakeSnapshot = (next: Snapshot, turnPrompts: Record<string, GivenPrompt> = {}) => {
    Object.assign(previews, turnPrompts);
    reload({ ...next, sessionText: current.sessionText });
  };
  return {
    open: async (plugins, session) => {
      calls.push(["open", plugins, session]);
      // A folder named `missing…` fails to open as the shell does: an `open-failed` event with
      // the diagnostic, and the command's rejection.
      if (plugins.includes("missing")) {
        const error = { code: "missing-file", message: `the plugins folder ${plugins} does not exist`, file: plugins };
        for (const l of listeners) l({ reason: "open-failed", error });
        throw new StudioError({ code: "open", message: `${plugins}: [missing-file] the plugins folder does not exist` });
      }
      // As the shell: the opened snapshot arrives as the `opened` event; the answer is its version.
      for (const l of listeners) l({ reason: "opened", snapshot: current });
      return current.version;
    },
    snapshot: async () => {
      if (failed) throw new StudioError({ code: "no-folder-open", message: "no folder is open" });
      return current;
    },
    setRuntime: async (target) => {
      calls.push(["setRuntime", target]);
      const answer = runtimes[runtimeValue(target)];
      if (!answer) throw new StudioError({ code: "runtime", message: `the fake backend has no fixture for runtime ${runtimeValue(target)}` });
      return advance({ ...answer[0], sessionText: current.sessionText }, answer[1]);
    },
    // A test may make the played turn ask for a form (`window.__fakeForm`, a form record) and
    // say what answering it gives (`window.__fakeFormAnswer`, a FormAnswer).
    playTurn: async (message) => {
      calls.push(["playTurn", message]);
      // A test may have the reply stream first (`window.__fakeStream`, its pieces), one piece
      // every 300 ms, as a real backend's would; while `window.__fakeStreamHold` is true the
      // last piece waits (a test sees the reply half-way on a machine of any speed).
      const pieces: string[] = (globalThis as any).__fakeStream ?? [];
      (globalThis as any).__fakeStream = undefined;
      for (const [i, text] of pieces.entries()) {
        while (i === pieces.length - 1 && (globalThis as any).__fakeStreamHold) await new Promise((r) => setTimeout(r, 20));
        for (const l of textListeners) l({ turnId: "turn-3", text });
        await new Promise((r) => setTimeout(r, 300));
      }
      const form = (globalThis as any).__fakeForm;
      const turns = form ? afterTurn.turns.map((t, i, all) => (i === all.length - 1 ? { ...t, forms: [form] } : t)) : afterTurn.turns;
      (globalThis as any).__fakeForm = undefined;
      return advance({ ...afterTurn, turns, sessionText: current.sessionText }, bodies["after-turn"]);
    },
    newPlugin: async (id, points, typescript) => {
      calls.push(["newPlugin", id, points, typescript]);
      if (!/^[a-z][a-z0-9-]*$/.test(id)) throw new Error(`\`${id}\` is not a plugin id`);
      return `Created plugins-sample/${id} (PLUGIN.md, server/index.${typescript ? "ts" : "js"}, README.md) and its test session plugins-sample/tests/${id}.session.yaml`;
    },
    openInEditor: async (file, line, column) => {
      calls.push(["openInEditor", file, line ?? null, column ?? null]);
      return `code --goto ${file}:${line ?? 1}:${column ?? 1}`;
    },
    answerForm: async (values) => {
      calls.push(["answerForm", values]);
      return (globalThis as any).__fakeFormAnswer ?? { problems: [{ message: "no form is waiting for an answer" }] };
    },
    cancel: async () => {
      calls.push(["cancel"]);
    },
    // Branches as the studio keeps them: forking parks the played turns under their branch and
    // plays on from the chosen turn; switching swaps them back.
    forkTurn: async (turnId) => {
      calls.push(["forkTurn", turnId]);
      const upto = current.turns.findIndex((t) => t.turnId === turnId && !t.error);
      if (upto < 0) throw new StudioError({ code: "branch", message: `\`${turnId}\` is not a played turn of this branch` });
      const from = current.branches.find((b) => b.active)?.id ?? "main";
      const id = `b${current.branches.length + 1}`;
      const branches = [
        ...current.branches.map((b) => (b.active ? { ...b, active: false, turns: current.turns } : b)),
        { id, label: `from ${turnId} of ${from}`, forkedFrom: { branch: from, afterTurn: turnId }, active: true, turns: [] },
      ];
      return advance({ ...current, turns: current.turns.slice(0, upto + 1), branches });
    },
    switchBranch: async (branch) => {
      calls.push(["switchBranch", branch]);
      const target = current.branches.find((b) => b.id === branch);
      if (!target) throw new StudioError({ code: "branch", message: `there is no branch \`${branch}\`` });
      if (target.active) return advance(current);
      const branches = current.branches.map((b) => (b.active ? { ...b, active: false, turns: current.turns } : b.id === branch ? { ...b, active: true, turns: [] } : b));
      return advance({ ...current, turns: target.turns, branches });
    },
    replayBranch: async () => {
      calls.push(["replayBranch"]);
      const from = current.branches.find((b) => b.active)?.id ?? "main";
      const id = `b${current.branches.length + 1}`;
      const branches = [
        ...current.branches.map((b) => (b.active ? { ...b, active: false, turns: current.turns } : b)),
        { id, label: `replay of ${from}`, forkedFrom: { branch: from }, active: true, turns: [] },
      ];
      return advance({ ...current, turns: current.turns.filter((t) => !t.error), branches });
    },
    // A test may say what the server lists (`window.__fakeModels`) or that it refuses (a string).
    listModels: async (backend, baseUrl, apiKeyEnv) => {
      calls.push(["listModels", backend, baseUrl, apiKeyEnv]);
      const given = (globalThis as any).__fakeModels ?? ["llama3.1:8b", "qwen2.5:7b"];
      if (typeof given === "string") throw new StudioError({ code: "models", message: given });
      return given;
    },
    turnPrompt: async (turnId, branch) => {
      calls.push(["turnPrompt", turnId, branch ?? null]);
      const found = previews[turnId];
      if (!found) throw new StudioError({ code: "unknown-turn", message: `\`${turnId}\` is not a played turn` });
      // A test may give `{ preview, withNewerPlugins }`; a bare preview was sent as it is. Either
      // comes with the opened prompt's request bodies.
      const prompt = "withNewerPlugins" in found ? found : { preview: found, withNewerPlugins: false };
      return { requests: bodies.snapshot, ...prompt };
    },
    requestBodies: async () => {
      calls.push(["requestBodies"]);
      return { version: current.version, requests };
    },
    runEverythingAgain: async () => {
      calls.push(["runEverythingAgain"]);
      return advance(current);
    },
    compactNow: async () => {
      calls.push(["compactNow"]);
      return advance(current);
    },
    undo: async () => {
      calls.push(["undo"]);
      return advance({ ...initial, sessionText: current.sessionText }, bodies.snapshot);
    },
    savePlayedSession: async (path) => {
      calls.push(["savePlayedSession", path]);
      return path ?? current.playedPath;
    },
    saveSessionText: async (text, dropPlayed) => {
      calls.push(["saveSessionText", text, dropPlayed]);
      const problems = check(text);
      if (problems.length) throw new StudioError({ code: "session", message: problems[0].message });
      // As the studio: a save with played turns is refused unless they are to be dropped.
      if (current.turns.length && !dropPlayed) throw new Error(`saving the session restarts the playtest and drops its ${current.turns.length} played turn(s)`);
      // The one session edit a fixture covers: soundtrack excluded, which the resolver rejects.
      const excluded: unknown = (parseDocument(text).toJS() as any)?.plugins?.excluded;
      const excludes = Array.isArray(excluded) && excluded.includes("soundtrack");
      const base = excludes ? excludesSoundtrack : current;
      return advance({ ...base, turns: [], sessionText: text, undo: { kind: "session-edit", label: "Undo the session edit (restores the file)" } }, excludes ? bodies["session-excludes-soundtrack"] : requests);
    },
    applySessionEdits: async (text, edits) => {
      calls.push(["applySessionEdits", edits]);
      return edit(text, edits);
    },
    checkSessionText: async (text) => check(text),
    openStatus: async (): Promise<OpenStatus> =>
      failed
        ? {
            opening: false,
            plugins: "/work/plugins",
            session: "/work/plugins/broken.session.yaml",
            error: { code: "session-schema", message: "unknown field `lokale`", file: "/work/plugins/broken.session.yaml", line: 3, column: 1 },
          }
        : { opening: false, plugins: current.pluginsDir, session: current.sessionPath ?? null, error: null },
    recentFolders: async () => [{ plugins: current.pluginsDir, session: current.sessionPath ?? null }],
    logFile: async () => null,
    about: async () => about,
    // The fake picker: answers what a test set in `window.__fakePick` ({ folder, session }),
    // null (cancelled) otherwise.
    pickPath: async (kind) => {
      calls.push(["pickPath", kind]);
      return (globalThis as any).__fakePick?.[kind] ?? null;
    },
    // A test may mark played turns as recomputed with newer plugins (`window.__fakeRecomputed`,
    // a list of turn ids).
    // The demo's forecast for Claude Sonnet (the default), or for Haiku 4.5, whose minimum
    // cacheable prefix the demo does not reach.
    forecast: async (model) => {
      const recomputed: string[] = (globalThis as any).__fakeRecomputed ?? [];
      const forecast = model?.trim() === "claude-haiku-4-5" ? tooShort : sonnet;
      return { ...forecast, turns: forecast.turns.map((t) => ({ ...t, withNewerPlugins: recomputed.includes(t.turnId) || undefined })) };
    },
    // A test may give the run's answer (`window.__fakeTests`, a TestRun), a re-recording run's
    // (`window.__fakeRerecordTests`) and a forced update's (`window.__fakeForceTests`).
    runTests: async (update, only, rerecord, force) => {
      calls.push(["runTests", update, only ?? null, ...(rerecord ? [true] : []), ...(force ? ["force"] : [])]);
      if (rerecord && (globalThis as any).__fakeRerecordTests) return (globalThis as any).__fakeRerecordTests;
      if (force && (globalThis as any).__fakeForceTests) return (globalThis as any).__fakeForceTests;
      return (globalThis as any).__fakeTests ?? tests;
    },
    reviewGoldenChange: async (session, index, accept) => {
      calls.push(["reviewGoldenChange", session, index, accept]);
      // Tests set the run each decision answers with, in order.
      const next = (globalThis as any).__fakeReviewTests?.shift();
      return next ?? (globalThis as any).__fakeTests ?? tests;
    },
    onChange: async (listener) => {
      listeners.push(listener);
      return () => listeners.splice(listeners.indexOf(listener), 1);
    },
    onTurnText: async (listener) => {
      textListeners.push(listener);
      return () => textListeners.splice(textListeners.indexOf(listener), 1);
    },
  };
}
