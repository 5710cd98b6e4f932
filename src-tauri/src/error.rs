//! What a command answers when it fails: a stable code the window can act on, and the message
//! the author reads. Every command's error is one of these (`ui/src/lib/tauri-backend.ts`
//! throws it as a `StudioError` with its code).

use serde::Serialize;
use specta::Type;
use std::fmt::Display;

/// Why a command failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Type)]
#[serde(rename_all = "kebab-case")]
pub enum ErrorCode {
    /// The command needs an open folder and none is open.
    NoFolderOpen,
    /// The folder or session could not be opened (the `open-failed` event has the diagnostic).
    Open,
    /// A fork, a branch switch or a replay was refused.
    Branch,
    /// The runtime asked for cannot be previewed (no active runtime produces its contract).
    Runtime,
    /// There is nothing to undo, or the undo could not be applied.
    Undo,
    /// A session edit or save was refused or could not be written.
    Session,
    /// No played turn has that id.
    UnknownTurn,
    /// The local model server could not be asked for its models, or a model is not known.
    Models,
    /// The author's editor could not be started.
    Editor,
    /// `covel new` refused the plugin id or could not write the files.
    NewPlugin,
    /// The folder's test sessions could not be run, or a golden change not reviewed.
    Tests,
    /// The studio's state was lost to an earlier failure (a poisoned lock, a stopped task).
    Internal,
}

/// A failed command: its code and what the author reads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Type)]
pub struct CommandError {
    pub code: ErrorCode,
    pub message: String,
}

impl CommandError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> CommandError {
        CommandError {
            code,
            message: message.into(),
        }
    }

    /// The studio's state lock was poisoned by a panic elsewhere.
    pub fn poisoned() -> CommandError {
        CommandError::new(ErrorCode::Internal, "studio state poisoned")
    }
}

impl Display for CommandError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// Gives an error its code.
pub trait OrCode<T> {
    fn or_code(self, code: ErrorCode) -> Result<T, CommandError>;
}

impl<T, E: Display> OrCode<T> for Result<T, E> {
    fn or_code(self, code: ErrorCode) -> Result<T, CommandError> {
        self.map_err(|e| CommandError::new(code, e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_error_crosses_as_its_code_and_message() {
        let error = Err::<(), _>("no such branch `b2`").or_code(ErrorCode::Branch);
        assert_eq!(
            serde_json::to_value(error.expect_err("an error")).expect("json"),
            serde_json::json!({"code": "branch", "message": "no such branch `b2`"})
        );
    }
}
