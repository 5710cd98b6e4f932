// The studio state, fed by the backend's answers and events, so an edit under hot reload never
// drops the loaded session. The session editor's draft lives here too: it survives hot reloads
// and tab switches, and when the file changes on disk while a draft is open, the author chooses
// which to keep.
import { backend } from "./backend";
import { draftAfterSnapshot, draftFor, type Draft, type Tab } from "./view";
import { tick } from "svelte";
import { applyPatch, isSnapshot } from "./patch";
import { share } from "./share";
import type { Diagnostic, Snapshot, SnapshotPatch } from "./wire";

class Studio {
  // Raw: a snapshot is replaced whole, never mutated, and a deep proxy over 200 plugins made
  // every panel read (thousands of objects) go through proxies (slow panel switches).
  snapshot = $state.raw<Snapshot | undefined>(undefined);
  busy = $state<string | null>(null);
  error = $state<string | null>(null);
  /** Why the folder or session could not be opened (file, line, column). */
  openError = $state<Diagnostic | null>(null);
  lastEvent = $state<string>("");
  /** The story model's text of the turn being played, as it streams (null between turns). */
  streaming = $state<{ turnId: string; text: string } | null>(null);
  /** The session editor's unsaved text and the file text it started from. */
  draft = $state<Draft | null>(null);
  /** Unsaved drafts of the session files opened before, by path. */
  private draftsAside = new Map<string, Draft>();
  /** The file changed on disk while a draft was open: the author picks one. */
  conflict = $state<string | null>(null);
  /** How many reloads arrived since the page started. */
  reloads = $state(0);
  /** How long the window took to apply the last reload (from its event to the next painted frame), reported in the e2e timings. */
  applyMs = $state<number | null>(null);
  /** Of `applyMs`, the script's part: merging the patch into the snapshot held (or fetching the whole snapshot) and updating the page; the rest is layout, paint and the frame. */
  mergeMs = $state<number | null>(null);
  /** Whether the last reload's patch did not fit the snapshot held, so the whole snapshot was fetched instead. */
  fetchedWhole = $state(false);
  /** When the last reload's frame was painted, in epoch milliseconds (comparable with a file's write time). */
  paintedAt = $state<number | null>(null);
  /** The panel on show. */
  tab = $state<Tab>("Prompt");
  /** What the last open from the Open panel opened (shown once, dismissable). */
  opened = $state<string | null>(null);
  /** Bumped by every action the author takes: change marks fade after the next one. */
  actions = $state(0);
  /** The action count when the last reload arrived: its change marks show until the next action. */
  marksAt = $state(0);
  /** The recent reloads, newest first, with the previews before and after each. */
  timeline = $state.raw<ReloadStep[]>([]);
  /** The snapshot the last reload replaced (for before/after text). */
  beforeReload = $state.raw<Snapshot | null>(null);
  private reloadKey = "";
  private ticket = 0;

  /** Whether the last reload's change marks still show (they fade after the next action). */
  get marks(): boolean {
    return this.marksAt === this.actions;
  }

  /** Shows a panel and, when given, the element a problem points at (scrolled to, focused, flashed). */
  async goto(tab: Tab, target?: string) {
    this.tab = tab;
    if (!target) return;
    await tick();
    // Lazy panels (the session editor) render a moment later.
    for (let i = 0; i < 20; i++) {
      const element = document.querySelector<HTMLElement>(target);
      if (element) {
        element.scrollIntoView({ block: "center" });
        if (!element.hasAttribute("tabindex")) element.setAttribute("tabindex", "-1");
        element.focus({ preventScroll: true });
        element.classList.add("flash");
        setTimeout(() => element.classList.remove("flash"), 1600);
        return;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  async start() {
    const b = await backend;
    await b.onTurnText((event) => {
      const text = this.streaming?.turnId === event.turnId ? this.streaming.text : "";
      this.streaming = { turnId: event.turnId, text: text + event.text };
    });
    await b.onChange(async (event) => {
      this.lastEvent = event.reason;
      if (event.reason === "reload") this.reloads++;
      if (event.reason === "opening") {
        this.busy = "Opening the plugin folder…";
        this.openError = null;
      }
      if (event.reason === "open-failed") {
        this.busy = null;
        this.openError = event.error;
      }
      if (event.reason === "opened") {
        this.adopt(event.snapshot);
        this.busy = null;
        // Opened from the Open panel: show what was opened, and say so.
        if (this.tab === "Open") {
          this.opened = `Opened ${event.snapshot.pluginsDir}${event.snapshot.sessionPath ? ` with ${event.snapshot.sessionPath}` : ""}`;
          this.tab = "Prompt";
        }
      }
      if (event.reason === "reload" && this.snapshot) {
        const started = performance.now();
        this.fetchedWhole = !(await this.merge(event.patch));
        this.mergeMs = performance.now() - started;
        this.busy = null;
        requestAnimationFrame(() =>
          setTimeout(() => {
            const now = performance.now();
            this.applyMs = now - started;
            this.paintedAt = performance.timeOrigin + now;
          }, 0),
        );
      }
    });
    try {
      this.adopt(await b.snapshot());
    } catch {
      // No folder open yet: the shell may be opening one (an event follows), or it failed
      // before this page listened: the open status says which, so nothing waits forever.
      const status = await b.openStatus();
      if (status.error) this.openError = status.error;
      else if (status.opening) this.busy = "Opening the plugin folder…";
    }
  }

  /**
   * Takes a new snapshot, keeping the editor's draft (see `draftAfterSnapshot`). Its parts equal
   * to the ones held stay the same objects (see share.ts), so panels skip what did not change.
   */
  adopt(received: Snapshot) {
    const snapshot = this.snapshot ? share(this.snapshot, received) : received;
    // Another session file opened: the draft of the one before waits for it, unsaved and unseen.
    const own = draftFor(snapshot.sessionPath ?? "", this.draft, this.draftsAside);
    if (own !== this.draft) this.conflict = null;
    const next = draftAfterSnapshot(own, snapshot.sessionText ?? null);
    this.draft = next.draft;
    if (next.conflict !== null) this.conflict = next.conflict;
    else if (this.draft === null) this.conflict = null;
    const key = reloadKey(snapshot);
    if (key !== this.reloadKey) {
      this.reloadKey = key;
      this.marksAt = this.actions;
      // What the panels showed before this reload: the before side of its diffs.
      this.beforeReload = key ? (this.snapshot ?? null) : null;
      if (key && this.snapshot && snapshot.lastReload) {
        this.timeline = [{ entry: snapshot.lastReload, before: this.snapshot.preview, after: snapshot.preview, at: clock.format(new Date()) }, ...this.timeline].slice(0, TIMELINE);
      }
    }
    this.snapshot = snapshot;
    this.openError = null;
  }

  /** Applies a patch to the snapshot held. A patch made for another version (it arrived out of order) is replaced by the whole snapshot; then it returns false. */
  async merge(patch: SnapshotPatch): Promise<boolean> {
    const merged = this.snapshot && applyPatch(this.snapshot, patch);
    this.adopt(merged ?? (await (await backend).snapshot()));
    return merged != null;
  }

  /** The editor's text changed. */
  setDraft(text: string) {
    const base = this.draft?.base ?? this.snapshot?.sessionText ?? "";
    this.draft = text === base ? null : { text, base, path: this.snapshot?.sessionPath ?? "" };
  }

  /** Keep the draft: it will replace the file's new text when saved. */
  keepDraft() {
    if (this.draft && this.conflict !== null) this.draft = { ...this.draft, base: this.conflict };
    this.conflict = null;
  }

  /** Drop the draft for the file's text. */
  loadFile() {
    this.draft = null;
    this.conflict = null;
  }

  /**
   * Runs a backend action with progress; `cancel()` stops waiting for it. `shownByEvent`: the
   * backend reports the action's failure as an event of its own (an open: `open-failed`, with the
   * file, line and column), so its rejection is not shown a second time.
   */
  async run(label: string, action: (b: Awaited<typeof backend>) => Promise<Snapshot | SnapshotPatch | void>, shownByEvent = false): Promise<boolean> {
    const ticket = ++this.ticket;
    this.actions++;
    this.busy = label;
    this.error = null;
    try {
      const result = await action(await backend);
      if (ticket !== this.ticket) return false;
      if (result && isSnapshot(result)) this.adopt(result);
      else if (result) await this.merge(result);
      return true;
    } catch (e) {
      if (ticket === this.ticket && !shownByEvent) this.error = e instanceof Error ? e.message : String(e);
      return false;
    } finally {
      if (ticket === this.ticket) this.busy = null;
    }
  }

  async cancel() {
    this.ticket++;
    this.busy = null;
    this.streaming = null;
    await (await backend).cancel();
  }
}

// The time of day a reload arrived, as `toLocaleTimeString()` writes it: one formatter made at
// start-up rather than one per reload (`toLocaleTimeString` makes a new one on every call).
const clock = new Intl.DateTimeFormat(undefined, { hour: "numeric", minute: "numeric", second: "numeric" });

/** How many reloads the timeline keeps. */
export const TIMELINE = 10;

export interface ReloadStep {
  entry: NonNullable<Snapshot["lastReload"]>;
  before: Snapshot["preview"];
  after: Snapshot["preview"];
  at: string;
}

/** What identifies a reload: its paths, plugins and timings (a new reload differs in them). */
export function reloadKey(snapshot: Snapshot): string {
  const r = snapshot.lastReload;
  return r ? JSON.stringify([r.paths, r.plugins, r.timings, r.diff.segments.length]) : "";
}

export const studio = new Studio();
