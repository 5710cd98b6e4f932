//! The studio's typed wire to the desktop UI: every value a Tauri command returns or an event
//! carries, as studio-owned types that derive `Serialize` and `specta::Type`, so tauri-specta
//! exports them to TypeScript (`ui/src/lib/bindings.ts`) and the UI's compiler checks what it
//! reads. The kernel's and the studio's own types convert into these with `From`; the JSON shape
//! is the one the UI always read (camelCase, omitted empties, the same tags), which
//! `tests/suites/ui_fixtures.rs` checks against the committed UI fixtures.
//!
//! Arbitrary JSON (slot values, the world snapshot, request bodies, handler outputs) is
//! [`JsonValue`], which specta exports as a recursive JSON type, never `unknown`.

pub mod common;
pub mod compaction;
pub mod patch;
pub mod plugins;
pub mod preview;
pub mod reload;
pub mod results;
pub mod snapshot;
pub mod splice;
pub mod turns;

pub use common::{CallRecord, Diagnostic, JsonValue, PointId, RunError, SlotId};
pub use patch::{
    At, MemoAnswer, Positions, PreviewPatch, SlotViewPatch, SnapshotPatch, Turns, WireState,
};
pub use preview::{Preview, RequestBodies, Requests};
pub use snapshot::Snapshot;
