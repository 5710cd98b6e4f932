//! covel-studio: the authoring workflow shared by the `covel` CLI and the desktop app. It opens
//! a plugin folder with a test session, resolves which plugins the session runs, builds the
//! handler context from the session, and runs extension points for previews.

pub mod about;
pub mod branches;
pub mod checkpoints;
pub mod compaction;
pub mod counts;
pub mod diff;
pub mod document;
pub mod editor;
pub mod facts;
pub mod fingerprint;
pub mod forecast;
pub mod live;
pub mod models;
pub mod parts;
pub mod playtest;
pub mod preview;
pub mod replay;
mod resolve_inputs;
pub mod save;
pub mod scaffold;
pub mod scripts;
pub mod secrets;
pub mod slots;
pub mod streaming;
pub mod testing;
pub mod textdiff;
pub mod tokens;
pub mod ts;
pub mod turn;
pub mod wire;
/// How a count is worded, as the kernel words it.
pub use covel_kernel::words;
pub mod workspace;

pub use preview::{Preview, PreviewTimings, RuntimeTarget};
pub use workspace::{Workspace, WorkspaceError};
