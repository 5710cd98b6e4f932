//! The other commands' results on the wire: the Cache panel's forecast and the Tests panel's
//! runs (studio-owned types deriving `specta::Type` where they are defined, re-exported here),
//! and the session edits the Session panel sends.

use crate::testing;
use serde::Serialize;
use specta::Type;

pub use crate::document::{PathSegment, SessionEdit};
pub use crate::forecast::Forecast;
pub use crate::testing::{SessionResult as TestSession, TurnResult as TestTurn};

/// The Tests panel: every test session of the open folder.
#[derive(Debug, Clone, Serialize, Type)]
pub struct TestRun {
    pub passed: bool,
    pub sessions: Vec<TestSession>,
}

impl TestRun {
    /// The results of a folder's test sessions.
    pub fn of(sessions: Vec<testing::SessionResult>) -> TestRun {
        TestRun {
            passed: sessions.iter().all(|s| s.passed),
            sessions,
        }
    }
}
