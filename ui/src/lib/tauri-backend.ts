// The real backend: the generated tauri-specta bindings (typed by the studio's wire).
import { commands, events } from "./bindings";
import { open as openDialog } from "@tauri-apps/plugin-dialog";
import { StudioError, type Backend } from "./backend";
import type { CommandError } from "./wire";

type Result<T> = { status: "ok"; data: T } | { status: "error"; error: CommandError };

async function unwrap<T>(answer: Promise<Result<T>>): Promise<T> {
  const result = await answer;
  if (result.status === "error") throw new StudioError(result.error);
  return result.data;
}

export function tauriBackend(): Backend {
  return {
    open: (plugins, session) => unwrap(commands.openWorkspace(plugins, session)),
    snapshot: () => unwrap(commands.snapshot()),
    setRuntime: (target) => unwrap(commands.setRuntime(target)),
    playTurn: (message) => unwrap(commands.playTurn(message)),
    answerForm: (values) => unwrap(commands.answerForm(values)),
    openInEditor: (file, line, column) => unwrap(commands.openInEditor(file, line ?? null, column ?? null)),
    newPlugin: (id, points, typescript) => unwrap(commands.newPlugin(id, points, typescript)),
    compactNow: () => unwrap(commands.compactNow()),
    runEverythingAgain: () => unwrap(commands.runEverythingAgain()),
    turnPrompt: (turnId, branch) => unwrap(commands.turnPrompt(turnId, branch ?? null)),
    forkTurn: (turnId) => unwrap(commands.forkTurn(turnId)),
    switchBranch: (branch) => unwrap(commands.switchBranch(branch)),
    replayBranch: () => unwrap(commands.replayBranch()),
    listModels: (backend, baseUrl, apiKeyEnv) => unwrap(commands.listModels(backend, baseUrl, apiKeyEnv)),
    requestBodies: () => unwrap(commands.requestBodies()),
    cancel: async () => {
      await unwrap(commands.cancelWork());
    },
    undo: () => unwrap(commands.undo()),
    savePlayedSession: (path, overwriteAuthored) => unwrap(commands.savePlayedSession(path, overwriteAuthored)),
    saveSessionText: (text, dropPlayed) => unwrap(commands.saveSessionText(text, dropPlayed)),
    applySessionEdits: (text, edits) => unwrap(commands.applySessionEdits(text, edits)),
    checkSessionText: (text) => unwrap(commands.checkSessionText(text)),
    openStatus: () => unwrap(commands.openStatus()),
    recentFolders: () => unwrap(commands.recentFolders()),
    logFile: () => unwrap(commands.logFile()),
    about: () => unwrap(commands.about()),
    // The capability grants `dialog:allow-open` only: the dialog returns a path, reads nothing.
    pickPath: async (kind) => {
      const picked = await openDialog(
        kind === "folder"
          ? { directory: true, title: "Open a plugin folder" }
          : { directory: false, title: "Pick a session file", filters: [{ name: "Session", extensions: ["yaml", "yml"] }] },
      );
      return typeof picked === "string" ? picked : null;
    },
    forecast: (model, pace, ttl) => unwrap(commands.forecast(model, pace, ttl)),
    runTests: (update, only, rerecord, force) => unwrap(commands.runTests(update, only ?? null, rerecord ?? false, force ?? false)),
    reviewGoldenChange: (session, index, accept) => unwrap(commands.reviewGoldenChange(session, index, accept)),
    onChange: (listener) => events.studioChanged.listen((e) => listener(e.payload)),
    onTurnText: (listener) => events.turnText.listen((e) => listener(e.payload)),
  };
}
