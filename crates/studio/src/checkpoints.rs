//! Starting a playtest after an earlier turn of a played session (`covel play --from TURN`):
//! the history is cut after that turn's messages, and the plugin data is put back as it was
//! then from the session's checkpoints (which played saves write, one per played turn). A
//! compaction after the turn rewrote the history it needs: that start is refused, naming the
//! turns that can be started from.

use covel_kernel::session::Session;

/// Why a played session cannot start after a turn.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum StartAfterError {
    #[error("`{turn}` is not a turn of this session's history; the turns it has: {}", list(.known))]
    NoSuchTurn { turn: String, known: Vec<String> },
    #[error("a compaction after {compacted} rewrote the history `{turn}` needs (its messages were summarized); start from {compacted} or a later turn: {}", list(.later))]
    Compacted {
        turn: String,
        compacted: String,
        later: Vec<String>,
    },
}

fn list(turns: &[String]) -> String {
    if turns.is_empty() {
        "none".into()
    } else {
        turns.join(", ")
    }
}

/// How a session was set back to after a turn, for the author.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StartedAfter {
    pub turn_id: String,
    /// History messages kept (of how many).
    pub messages_kept: usize,
    pub messages_before: usize,
    /// The checkpoint the plugin data came from (`before turn-4`), or None when no later turn
    /// changed it (the data is the session's own).
    pub plugin_data_from: Option<String>,
    /// Played turns before it (where a scripted story model continues its script).
    pub turns_before: usize,
}

/// `session` as it was right after its turn `turn_id`.
pub fn start_after(
    session: &Session,
    turn_id: &str,
) -> Result<(Session, StartedAfter), StartAfterError> {
    let messages = &session.history.messages;
    let turn_of =
        |m: &serde_json::Value| m.get("turnId").and_then(|t| t.as_str()).map(str::to_string);
    let mut known: Vec<String> = Vec::new();
    for turn in messages.iter().filter_map(turn_of) {
        if known.last() != Some(&turn) {
            known.push(turn);
        }
    }
    let Some(last) = messages
        .iter()
        .rposition(|m| turn_of(m).as_deref() == Some(turn_id))
    else {
        return Err(StartAfterError::NoSuchTurn {
            turn: turn_id.to_string(),
            known,
        });
    };
    let checkpoints = &session.checkpoints;
    // Checkpoints after the turn (all of them when the turn was authored, not played).
    let position = checkpoints.iter().position(|c| c.turn_id == turn_id);
    let later = &checkpoints[position.map_or(0, |p| p + 1)..];
    if let Some(compacted) = later.iter().find(|c| c.compacted_after) {
        return Err(StartAfterError::Compacted {
            turn: turn_id.to_string(),
            compacted: compacted.turn_id.clone(),
            later: known
                .iter()
                .skip_while(|t| **t != compacted.turn_id)
                .cloned()
                .collect(),
        });
    }
    let mut started = session.clone();
    started.history.messages.truncate(last + 1);
    let restored = later
        .iter()
        .find_map(|c| c.plugin_data_before.as_ref().map(|rows| (c, rows)));
    if let Some((_, rows)) = restored {
        started.plugin_data.clone_from(rows);
    }
    started.checkpoints = checkpoints[..position.map_or(0, |p| p + 1)].to_vec();
    let report = StartedAfter {
        turn_id: turn_id.to_string(),
        messages_kept: last + 1,
        messages_before: messages.len(),
        plugin_data_from: restored.map(|(c, _)| format!("before {}", c.turn_id)),
        turns_before: started.checkpoints.len(),
    };
    Ok((started, report))
}
