// The shapes of the studio snapshot the UI reads (the Rust side is covel-studio's `view`).

export type I18n = string | Record<string, string>;
export type Volatility = "stable" | "session" | "turn";

export interface Diagnostic {
  code: string;
  message: string;
  plugin?: string;
  file?: string;
  line?: number;
  column?: number;
}

export interface CallRecord {
  point: string;
  pluginId: string;
  providerId: string;
  slot?: string;
  order: number;
  outcome: string;
  errorCode?: string;
  message?: string;
  durationMs: number;
  logs?: string[];
  /** Answered from the engine's memo: nothing the provider can see changed. */
  cached?: boolean;
  notCached?: string;
}

export interface Block {
  kind: "preamble" | "body" | "stable-segments" | "turn-tail";
  text: string;
  tokens: number;
  cacheBoundary: boolean;
  segments: string[];
}

export interface Message {
  role: string;
  content: string;
  tokens: number;
  origin: { kind: string; id?: string; plugin?: string; segment?: string; segments?: string[] };
}

export interface SortKey {
  volatility: Volatility;
  order: number;
  providerPluginId: string;
  id: string;
}

export interface SegmentRow {
  plugin: string;
  id: string;
  volatility: Volatility;
  order: number;
  position: string | { depth: number };
  role: string;
  audience: unknown;
  placement: { kind: string; depth?: number };
  volatilityApplies: boolean;
  sortKey: SortKey;
  tieBrokenByPluginId: boolean;
  included: boolean;
  excludedBecause?: string;
  tokens: number;
  content: string;
}

/** Where a content block of the Anthropic request came from. */
export interface PartOrigin {
  kind: "system" | "history" | "summary" | "segment" | "turn-context" | "player-input";
  block?: Block["kind"];
  segments?: string[];
  id?: string;
  plugin?: string;
  segment?: string;
}

export type Place = { in: "system"; index: number } | { in: "message"; message: number; role: string; block: number };

export interface Breakpoint {
  index: number;
  place: Place;
  closes: PartOrigin;
  /** The moving breakpoint on the newest history message. */
  moving: boolean;
  prefixTokens: number;
  stable: boolean;
  firstDifference?: { place: Place; thisTurn: PartOrigin; nextTurn?: PartOrigin; segment?: string; plugin?: string };
}

export interface CacheAdvice {
  code: string;
  breakpoints: number[];
  plugin?: string;
  segment?: string;
  lostTokens: number;
  stillCachedTokens: number;
  message: string;
  fix: string;
}

export interface CacheReport {
  breakpoints: Breakpoint[];
  /** null when there is no history to cache. */
  historyPrefixStable: boolean | null;
  advice: CacheAdvice[];
  lint: { code: string; plugin: string; segment: string; volatility: Volatility; breaksBreakpoint?: number; message: string }[];
  warnings: { code: string; breakpoint: number; prefixTokens: number; minimum: number; message: string }[];
}

export interface SlotView {
  slot: string;
  key?: string;
  value: any;
  revision: string;
  chain: CallRecord[];
}

export interface Preview {
  session: string;
  runtime: { kind: string; id?: string };
  turnId: string;
  prompt: {
    system: { blocks: Block[]; tokens: number };
    messages: Message[];
    turnContext: string;
    requests: { anthropic: unknown; openai: unknown };
  };
  segments: SegmentRow[];
  cache: CacheReport;
  worldContext: { snapshot: any; providedBy?: string; error?: string; calls: CallRecord[] };
  slots: SlotView[];
  imageFlow: { flow: any; providedBy?: string; error?: string };
  calls: CallRecord[];
  /** Runs that failed as a whole (never silently dropped). */
  errors?: PreviewError[];
}

export interface PreviewError {
  point: string;
  slot?: string;
  turn: "this-turn" | "next-turn";
  error: { code: string };
  message: string;
}

export interface PluginView {
  name: string;
  status: "active" | "rejected" | "inactive" | "failed" | "last-good";
  displayName?: I18n;
  description?: I18n;
  rejection?: { code: string; message: string; candidates: string[] };
  diagnostics: Diagnostic[];
  hints: Diagnostic[];
  providers: { point: string; id: string; order: number; slot?: string; watch?: string[]; preview?: string[] }[];
  hasStaticPrompt: boolean;
  inventory: { tools: string[]; actions: string[]; services: string[]; hooks: string[]; forms: string[]; wires: string[] };
  runtimes: string[];
}

export interface SegmentChange {
  kind: "added" | "removed" | "moved" | "changed";
  plugin: string;
  id: string;
}

export interface ReloadEntry {
  paths: string[];
  plugins: Record<string, string>;
  sessionReloaded: boolean;
  diff: {
    segments: SegmentChange[];
    slots: { slot: string; key?: string; plugins: string[] }[];
    worldContext?: unknown;
    boundaries: { index: number; plugin?: string; segment?: string }[];
  };
  diagnostics: Diagnostic[];
  timings: Record<string, number>;
}

export interface Verdict {
  nothingToCompact: boolean;
  accepted: boolean;
  rules: { rule: string; ok: boolean; detail: string }[];
  deferred?: string;
}

export interface CompactionView {
  windows: { contextWindow: number; inputWindow: number };
  budget: { maxTokens: number; maxSegmentTokens: number; maxSegments: number };
  estimatedTokens: number;
  thresholdTokens: number;
  summaries: any[];
  consecutiveFailures: number;
  lastRun?: { output: unknown; verdict?: Verdict; events: { topic: string; payload: any }[]; providedBy?: string };
}

export interface TurnReport {
  turnId: string;
  playerMessage: string;
  reply?: { text: string; finishReason: string; usage?: unknown };
  error?: string;
}

export interface Snapshot {
  pluginsDir: string;
  sessionPath?: string;
  session: any;
  plugins: PluginView[];
  resolution: { active: string[]; autoAdded: string[]; rejected: unknown[]; unmet: unknown[] };
  preview: Preview;
  compaction: CompactionView;
  turns: TurnReport[];
  lastReload?: ReloadEntry;
  diagnostics: Diagnostic[];
  /** The session file's text as on disk: what the Session panel edits. */
  sessionText?: string;
  /** Why the session file on disk cannot be used (the previous good session stays in use). */
  sessionError?: Diagnostic;
  /** What Undo would undo. */
  undo?: { kind: "turn" | "session-edit"; label: string };
  /** Where "Save played session" writes by default. */
  playedPath: string;
}

/** A structured edit of the session document (covel_studio::document::SessionEdit). */
export type SessionEdit =
  | { kind: "set-locale"; locale: string }
  | { kind: "set-plugin-enabled"; plugin: string; enabled: boolean }
  | { kind: "set-setting"; plugin: string; key: string; value: unknown }
  | { kind: "set-character"; index: number; character: unknown }
  | { kind: "add-character"; character: unknown }
  | { kind: "remove-character"; index: number };

export interface OpenStatus {
  opening: boolean;
  plugins: string | null;
  session: string | null;
  error: Diagnostic | null;
}
