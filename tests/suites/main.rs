//! The cross-crate conformance suites, as one test binary. Each module is a suite: its file says
//! which part of the seed page or the studio it checks; fixtures live in `tests/fixtures` and
//! snapshots in `suites/snapshots` (named `suites__<suite>__<test>`).

mod branches;
mod compaction;
mod ecosystem;
mod forecast;
mod hostile;
mod kernel_rules;
mod memo;
mod model_streams;
mod prompt_assembly;
mod reload;
mod sdk_behaviour;
mod session_documents;
mod sessions_and_context;
mod studio_core;
mod tidy;
mod turn_loop;
mod ui_fixtures;
mod world_and_slots;
