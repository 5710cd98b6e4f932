// The only module that talks to the desktop shell. Everything else imports `backend` and stays
// plain; browser tests build with `--mode fake` and get the fake, fed by fixtures the Rust
// tests write (ui/fixtures/*.json).
import type { Forecast, Snapshot, TestRun } from "./types";

export interface StudioEvent {
  reason: string;
  snapshot: Snapshot | null;
}

export interface RecentFolder {
  plugins: string;
  session: string | null;
}

export interface Backend {
  open(plugins: string, session: string | null): Promise<Snapshot>;
  snapshot(): Promise<Snapshot>;
  setRuntime(target: string): Promise<Snapshot>;
  playTurn(message: string): Promise<Snapshot>;
  /** Asks the running work to stop (a turn then appends nothing). */
  cancel(): Promise<void>;
  undoTurn(): Promise<Snapshot>;
  savePlayedSession(path: string): Promise<void>;
  updateSession(session: unknown): Promise<Snapshot>;
  recentFolders(): Promise<RecentFolder[]>;
  /** The Cache panel: the played turns and the next one, forecast for a model. */
  forecast(model: string | null, paceSeconds: number, ttl: string): Promise<Forecast>;
  /** The Tests panel: every test session of the open folder (`update` rewrites golden snapshots). */
  runTests(update: boolean): Promise<TestRun>;
  onChange(listener: (event: StudioEvent) => void): Promise<() => void>;
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
