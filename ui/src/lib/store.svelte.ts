// The studio state, fed by the backend's answers and events, so an edit under hot reload never
// drops the loaded session.
import { backend } from "./backend";
import type { Snapshot } from "./types";

class Studio {
  snapshot = $state<Snapshot | undefined>(undefined);
  busy = $state<string | null>(null);
  error = $state<string | null>(null);
  lastEvent = $state<string>("");
  private ticket = 0;

  async start() {
    const b = await backend;
    await b.onChange((event) => {
      this.lastEvent = event.reason;
      if (event.reason === "opening") this.busy = "Opening the plugin folder…";
      if (event.snapshot) {
        this.snapshot = event.snapshot;
        this.busy = null;
      }
    });
    try {
      this.snapshot = await b.snapshot();
    } catch {
      // No folder open yet: the shell opens one at start and sends it as an event.
    }
  }

  /** Runs a backend action with progress; `cancel()` stops waiting for it. */
  async run(label: string, action: (b: Awaited<typeof backend>) => Promise<Snapshot | void>) {
    const ticket = ++this.ticket;
    this.busy = label;
    this.error = null;
    try {
      const result = await action(await backend);
      if (ticket !== this.ticket) return;
      if (result) this.snapshot = result;
    } catch (e) {
      if (ticket === this.ticket) this.error = e instanceof Error ? e.message : String(e);
    } finally {
      if (ticket === this.ticket) this.busy = null;
    }
  }

  async cancel() {
    this.ticket++;
    this.busy = null;
    await (await backend).cancel();
  }
}

export const studio = new Studio();
