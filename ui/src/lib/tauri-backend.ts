// The real backend: the generated tauri-specta bindings.
import { commands, events } from "./bindings";
import { open as openDialog } from "@tauri-apps/plugin-dialog";
import type { Backend } from "./backend";
import type { Diagnostic, Forecast, OpenStatus, Snapshot, TestRun, TurnPrompt } from "./types";

type Result<T> = { status: "ok"; data: T } | { status: "error"; error: string };

function unwrap<T>(result: Result<T>): T {
  if (result.status === "error") throw new Error(result.error);
  return result.data;
}

export function tauriBackend(): Backend {
  const snap = async (r: Promise<Result<unknown>>) => unwrap(await r) as Snapshot;
  return {
    open: (plugins, session) => snap(commands.openWorkspace(plugins, session)),
    snapshot: () => snap(commands.snapshot()),
    setRuntime: (target) => snap(commands.setRuntime(target)),
    playTurn: (message) => snap(commands.playTurn(message)),
    compactNow: () => snap(commands.compactNow()),
    runEverythingAgain: () => snap(commands.runEverythingAgain()),
    turnPrompt: async (turnId) => unwrap(await commands.turnPrompt(turnId)) as TurnPrompt,
    cancel: async () => {
      unwrap(await commands.cancelWork());
    },
    undo: () => snap(commands.undo()),
    savePlayedSession: async (path, overwriteAuthored) => unwrap(await commands.savePlayedSession(path, overwriteAuthored)),
    saveSessionText: (text) => snap(commands.saveSessionText(text)),
    applySessionEdits: async (text, edits) => unwrap(await commands.applySessionEdits(text, edits)),
    checkSessionText: async (text) => unwrap(await commands.checkSessionText(text)) as Diagnostic[],
    openStatus: async () => unwrap(await commands.openStatus()) as unknown as OpenStatus,
    recentFolders: async () => unwrap(await commands.recentFolders()),
    logFile: async () => unwrap(await commands.logFile()),
    // The capability grants `dialog:allow-open` only: the dialog returns a path, reads nothing.
    pickPath: async (kind) => {
      const picked = await openDialog(
        kind === "folder"
          ? { directory: true, title: "Open a plugin folder" }
          : { directory: false, title: "Pick a session file", filters: [{ name: "Session", extensions: ["yaml", "yml"] }] },
      );
      return typeof picked === "string" ? picked : null;
    },
    forecast: async (model, pace, ttl) => unwrap(await commands.forecast(model, pace, ttl)) as Forecast,
    runTests: async (update) => unwrap(await commands.runTests(update)) as TestRun,
    onChange: async (listener) =>
      events.studioChanged.listen((e) =>
        listener({
          reason: e.payload.reason,
          snapshot: (e.payload.snapshot ?? null) as Snapshot | null,
          error: (e.payload.error ?? null) as Diagnostic | null,
        }),
      ),
  };
}
