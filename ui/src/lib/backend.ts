// The only module that talks to the desktop shell. Everything else imports `backend` and stays
// plain; browser tests build with `--mode fake` and get the fake, fed by fixtures the Rust
// tests write (ui/fixtures/*.ts, from tests/suites/ui_fixtures.rs).
import type { About, CommandError, Diagnostic, ErrorCode, Forecast, FormAnswer, TurnText, OpenStatus, RecentFolder, RequestBodies, RuntimeTarget, SessionEdit, Snapshot, SnapshotPatch, StudioChanged, TestRun, TurnPrompt } from "./wire";

/** A command that failed: the studio's code (what failed) and the message the author reads. */
export class StudioError extends Error {
  readonly code: ErrorCode;
  constructor(error: CommandError) {
    super(error.message);
    this.name = "StudioError";
    this.code = error.code;
  }
}

/** What the shell sends on its own: opening, opened (the whole snapshot), open-failed, a reload (a patch). */
export type StudioEvent = StudioChanged;

/**
 * The studio's commands. `snapshot` answers the whole snapshot; `open` sends it once, as the
 * `opened` event, and answers its version; the commands that change the studio answer a patch
 * of what changed since the last answer or event (see `patch.ts`).
 */
export interface Backend {
  open(plugins: string, session: string | null): Promise<number>;
  snapshot(): Promise<Snapshot>;
  setRuntime(target: RuntimeTarget): Promise<SnapshotPatch>;
  playTurn(message: string): Promise<SnapshotPatch>;
  /**
   * Answers the form the last played turn asks for, as the player would: what the player says
   * (the form's narrative filled in, to play next), or what is wrong with the values.
   */
  answerForm(values: Record<string, string>): Promise<FormAnswer>;
  /**
   * Opens a file of the folder at a line and column in the author's editor (`COVEL_EDITOR`,
   * `$VISUAL` or `$EDITOR`); answers the command run.
   */
  openInEditor(file: string, line?: number, column?: number): Promise<string>;
  /** Starts a plugin in the open folder (as `covel new`); answers what was written. */
  newPlugin(id: string, points: string[], typescript: boolean): Promise<string>;
  /** Runs compaction now, even under the threshold (undo puts the session back). */
  compactNow(): Promise<SnapshotPatch>;
  /** Reloads every plugin into fresh runtimes: every provider runs again, none from the memo. */
  runEverythingAgain(): Promise<SnapshotPatch>;
  /**
   * The prompt a played turn sent: the last turn's is kept, older ones are recomputed from the
   * session as it was before the turn — `withNewerPlugins` when plugins were reloaded since, so
   * the recomputed prompt may differ from what was sent.
   */
  turnPrompt(turnId: string, branch?: string | null): Promise<TurnPrompt>;
  /** "Play from here": forks the played branch after `turnId`; the new branch is played from then on. */
  forkTurn(turnId: string): Promise<SnapshotPatch>;
  /** Makes another branch of the playtest the one played. */
  switchBranch(branch: string): Promise<SnapshotPatch>;
  /** "Replay with my change": the played branch's player messages again, in a new branch, with the plugins as they are now. */
  replayBranch(): Promise<SnapshotPatch>;
  /**
   * The live prompt's request bodies (they do not cross with the snapshot), with the snapshot
   * version they belong to.
   */
  requestBodies(): Promise<RequestBodies>;
  /** Asks the running work to stop (a turn then appends nothing). */
  cancel(): Promise<void>;
  /** Undoes the last turn or session edit (a session edit's undo writes the file back). */
  undo(): Promise<SnapshotPatch>;
  /** Saves the played session to `path` (default beside the session); returns the file. */
  savePlayedSession(path: string | null, overwriteAuthored: boolean): Promise<string>;
  /**
   * Writes the session file's text (checked first, atomic, `.bak` kept) and restarts the
   * playtest; with played turns it is refused unless `dropPlayed` says to drop them.
   */
  saveSessionText(text: string, dropPlayed: boolean): Promise<SnapshotPatch>;
  /** The models a server says it serves (`GET /models`), for the story model picker. */
  listModels(backend: string, baseUrl: string | null, apiKeyEnv: string | null): Promise<string[]>;
  /** Applies structured edits to session text in place; nothing is saved. */
  applySessionEdits(text: string, edits: SessionEdit[]): Promise<string>;
  /** The loader's diagnostics for session text (empty when valid). */
  checkSessionText(text: string): Promise<Diagnostic[]>;
  openStatus(): Promise<OpenStatus>;
  recentFolders(): Promise<RecentFolder[]>;
  /** Where the desktop app writes its log (null when there is no log file). */
  logFile(): Promise<string | null>;
  /** This build: the studio's version, the SDK it mirrors, the contracts it implements. */
  about(): Promise<About>;
  /** The native open dialog: a plugin folder or a session file; null when the author cancels. */
  pickPath(kind: "folder" | "session"): Promise<string | null>;
  /** The Cache panel: the played turns and the next one, forecast for a model. */
  forecast(model: string | null, paceSeconds: number, ttl: string): Promise<Forecast>;
  /** The Tests panel: every test session of the open folder (`update` rewrites golden snapshots). */
  /**
   * Runs the folder's test sessions; `update` writes pending golden snapshots (`x.golden.new`,
   * reviewed change by change): every session's, or with `only` (a session file) that session's
   * alone; `rerecord` re-records the changed requests of the replay session `only` with the
   * backend its recording was made with; `force` writes the pending snapshots even while the
   * session's expectations fail (`covel test --update --force`).
   */
  runTests(update: boolean, only?: string | null, rerecord?: boolean, force?: boolean): Promise<TestRun>;
  /**
   * Accepts (writes the golden file with that turn's change) or rejects one pending golden
   * change, turn `index` of `session`; answers with the folder's tests run again.
   */
  reviewGoldenChange(session: string, index: number, accept: boolean): Promise<TestRun>;
  onChange(listener: (event: StudioEvent) => void): Promise<() => void>;
  /** The story model's text of the turn being played, piece by piece as a real backend streams it. */
  onTurnText(listener: (event: TurnText) => void): Promise<() => void>;
}

declare const __FAKE_BACKEND__: boolean;

async function load(): Promise<Backend> {
  if (__FAKE_BACKEND__) {
    const { fakeBackend } = await import("./fake-backend");
    return fakeBackend();
  }
  const { tauriBackend } = await import("./tauri-backend");
  return tauriBackend();
}

export const backend: Promise<Backend> = load();
