// The studio's wire types, as the UI imports them: re-exports of the bindings tauri-specta
// generates from Rust (covel_studio::wire, src-tauri/src/commands.rs). Nothing is declared here.
// tauri-specta writes each type's serialized shape as `X_Serialize` (what the shell sends: an
// omitted field is optional, never null) and its deserialized shape as `X_Deserialize` (what a
// command accepts); the UI reads the first and sends the second.
export type {
  Block,
  BlockKind,
  Breakpoint_Serialize as Breakpoint,
  CacheReport_Serialize as CacheReport,
  CallRecord_Serialize as CallRecord,
  Diagnostic_Serialize as Diagnostic,
  Forecast_Serialize as Forecast,
  GoldenDifference_Serialize as GoldenDifference,
  I18n,
  JsonValue,
  Message,
  Origin,
  OpenStatus_Serialize as OpenStatus,
  PartOrigin,
  PluginView_Serialize as PluginView,
  Positions_Serialize as Positions,
  Preview_Serialize as Preview,
  PreviewPatch_Serialize as PreviewPatch,
  RecentFolder_Serialize as RecentFolder,
  ReloadEntry_Serialize as ReloadEntry,
  SegmentChange_Serialize as SegmentChange,
  SegmentRow_Serialize as SegmentRow,
  SessionEdit_Deserialize as SessionEdit,
  SlotId,
  SlotView_Serialize as SlotView,
  SlotViewPatch_Serialize as SlotViewPatch,
  Snapshot_Serialize as Snapshot,
  SnapshotPatch_Serialize as SnapshotPatch,
  StudioChanged_Serialize as StudioChanged,
  TestRun_Serialize as TestRun,
  TurnPrompt_Serialize as TurnPrompt,
  TurnRecord_Serialize as TurnRecord,
} from "./bindings";
