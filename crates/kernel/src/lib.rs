//! covel-kernel: the Covel plugin contract, without any JavaScript engine, file watching or UI.
//!
//! - [`contract`]: the six extension points and the kernel UI slots, with their schemas.
//! - [`manifest`] and [`package`]: PLUGIN.md / RUNTIME.md parsing and static checks.
//! - [`registration`]: declared versus registered, both directions.
//! - [`runner`]: calling providers by mode, order, timeout and `onError`, with a trace.
//! - [`context`]: the data behind a handler's `ctx`, built once from a session.
//! - [`slot_host`]: kernel UI slot values, their triggers and revisions.
//! - [`world`]: the World Model view, the dimension snapshot and the dimension-provider rule.
//! - [`diagnostic`]: how problems are reported, with stable codes.
//! - [`locale`]: the locale fallback rule shared with the SDK and the UI.
//! - [`test_session`]: the `test:` section of a session file (scripted turns, expectations).

pub mod compaction;
pub mod context;
pub mod contract;
pub mod diagnostic;
pub mod files;
pub mod http;
pub mod locale;
pub mod manifest;
pub mod package;
pub mod prompt;
pub mod registration;
pub mod resolver;
pub mod runner;
pub mod sdk;
pub mod session;
pub mod session_history;
pub mod settings;
pub mod slot_host;
pub mod static_prompt;
pub mod test_session;
pub mod words;
pub mod world;
pub mod yaml;

pub use diagnostic::{Code, Diagnostic};
