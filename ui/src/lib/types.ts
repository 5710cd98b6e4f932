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
  /** Registered items by kind: names, or for `extensions` each point and id. */
  inventory: Record<string, unknown[]>;
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

/** A played turn's prompt; `withNewerPlugins`: recomputed after a plugin reload, may differ from what was sent. */
export interface TurnPrompt {
  preview: Preview;
  withNewerPlugins: boolean;
}

export interface TurnReport {
  turnId: string;
  playerMessage: string;
  reply?: { text: string; finishReason: string; usage?: unknown };
  error?: string;
  /** The compaction run after the turn. */
  compaction?: { estimatedTokens: number; thresholdTokens: number; triggered: boolean; verdict?: Verdict; notCompactedBecause?: string; events?: unknown[] };
  events?: unknown[];
  slotChanges?: unknown[];
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
  undo?: { kind: "turn" | "session-edit" | "compaction"; label: string };
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

// ---- the Cache panel (covel-studio's `forecast`) ----------------------------------------------

export type CacheOutcome = "hit" | "write" | "miss";

export interface BreakpointForecast {
  index: number;
  at: string;
  prefixTokens: number;
  outcome: CacheOutcome;
  reasonCode: string;
  reason: string;
  segment?: string;
  plugin?: string;
}

export interface Cost {
  input: number;
  cacheWrite: number;
  cacheRead: number;
  total: number;
}

export interface Reported {
  inputTokens: number;
  cacheWriteTokens: number;
  cacheReadTokens: number;
  outputTokens: number;
}

export interface Mismatch {
  field: string;
  predicted: number;
  reported: number;
  segment?: string;
  plugin?: string;
  at: string;
  message: string;
}

export interface TurnForecast {
  turn: number;
  turnId: string;
  say: string;
  atSeconds: number;
  inputTokens: number;
  inputTokensRange?: [number, number];
  breakpoints: BreakpointForecast[];
  uncachedTokens: number;
  cacheWriteTokens: number;
  cacheReadTokens: number;
  cost: Cost;
  costWithoutCache: number;
  reported?: Reported;
  mismatches?: Mismatch[];
}

export interface LedgerRow {
  owner: string;
  isPlugin: boolean;
  cachedPartTokens: number;
  uncachedPartTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  uncachedTokens: number;
  cost: number;
  share: number;
}

export interface Forecast {
  model: {
    id: string;
    provider: string;
    caching: "explicit-breakpoints" | "automatic-prefix";
    minCacheableTokens: number;
    ttlSeconds: number;
    paceSeconds: number;
    prices: { input: number; cacheWrite5m?: number; cacheWrite1h?: number; cacheRead: number; output: number };
    counts: string;
    factsDate: string;
    verified: boolean;
    sources: string[];
  };
  turns: TurnForecast[];
  totals: { inputTokens: number; uncachedTokens: number; cacheWriteTokens: number; cacheReadTokens: number; cost: Cost; costWithoutCache: number; saving: number };
  ledger: LedgerRow[];
  advice: {
    currentLayout?: { breakpoints: string[]; cost: number; saving: number };
    bestLayouts: { breakpoints: string[]; cost: number; saving: number }[];
    volatility: { segment: string; plugin: string; change: string; why: string; costAfter: number; saving: number }[];
    notes: string[];
  };
  segmentTokens: { segment: string; plugin: string; estimateTokens: number; tokens: number; range?: [number, number]; exact: boolean }[];
}

// ---- the Tests panel (covel-studio's `testing`) ------------------------------------------------

export interface CheckResult {
  rule: string;
  description: string;
  passed: boolean;
  detail?: string;
}

export interface GoldenDifference {
  place: string;
  from?: string;
  plugin?: string;
  change: string;
  diff: string;
}

export interface TestTurn {
  turnId: string;
  say: string;
  passed: boolean;
  checks: CheckResult[];
  goldenDifferences: GoldenDifference[];
  error?: string;
}

export interface TestSession {
  session: string;
  pluginsDir: string;
  goldenFile: string;
  golden: "matches" | "differs" | "missing" | "written" | "unchanged" | "skipped";
  passed: boolean;
  turns: TestTurn[];
  error?: string;
}

export interface TestRun {
  passed: boolean;
  sessions: TestSession[];
}
