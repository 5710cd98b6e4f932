//! Branches of a playtest: "what if the player had said something else at turn 3?" A fork
//! starts a new line of play from the state right after a played turn (history, plugin data,
//! undo history; the slots projected again as undo does); a replay starts one from the state
//! before the first turn, to play the same player messages against the plugins as they are now.
//! One line is played at a time; the others are parked with what the Playtest panel and the
//! turn inspector need of them (their turn records and what recomputes their prompts).

use crate::live::UndoEntry;
use crate::playtest::{PlayLine, TurnRecord};
use crate::preview::Preview;
use std::collections::VecDeque;

/// The branch a playtest starts with.
pub const MAIN: &str = "main";

/// Where a branch started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForkPoint {
    /// The branch it was forked from.
    pub branch: String,
    /// The turn it continues after; None for a replay (it starts before the first turn).
    pub after_turn: Option<String>,
}

/// A branch's name and origin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BranchMeta {
    pub id: String,
    /// What the author reads: `main`, `from turn-2 of main`, `replay of main`.
    pub label: String,
    pub forked_from: Option<ForkPoint>,
}

/// What a branch that is not being played keeps.
#[derive(Debug)]
pub struct Parked {
    pub line: PlayLine,
    pub turns: Vec<TurnRecord>,
    pub undo: Vec<UndoEntry>,
    pub recent: VecDeque<(String, Preview)>,
}

/// The branches of a playtest: their names in creation order, which one is played, and the
/// parked state of the others.
#[derive(Debug)]
pub struct Branches {
    list: Vec<BranchMeta>,
    active: usize,
    parked: Vec<(String, Parked)>,
    /// Numbers the next branch (`b2`, `b3`, …), never reused while the playtest lasts.
    next: u32,
}

impl Default for Branches {
    fn default() -> Self {
        Branches {
            list: vec![BranchMeta {
                id: MAIN.into(),
                label: MAIN.into(),
                forked_from: None,
            }],
            active: 0,
            parked: Vec::new(),
            next: 2,
        }
    }
}

/// Why a branch operation was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum BranchError {
    #[error(
        "`{0}` is not a played turn of this branch (a failed turn appended nothing to start from)"
    )]
    NotPlayed(String),
    #[error("there is no branch `{0}`")]
    NoSuchBranch(String),
    #[error("wait for the turn being played to end before switching branches")]
    Busy,
    #[error("this branch has no played turn to replay")]
    NothingToReplay,
}

impl Branches {
    /// Every branch, in creation order.
    pub fn list(&self) -> &[BranchMeta] {
        &self.list
    }

    /// The branch being played.
    pub fn active(&self) -> &BranchMeta {
        &self.list[self.active]
    }

    /// A parked branch's state (None for the active branch or an unknown id).
    pub fn parked(&self, id: &str) -> Option<&Parked> {
        self.parked.iter().find(|(b, _)| b == id).map(|(_, p)| p)
    }

    /// Every parked branch's state.
    pub fn all_parked(&self) -> impl Iterator<Item = (&str, &Parked)> {
        self.parked.iter().map(|(id, p)| (id.as_str(), p))
    }

    /// Registers a new branch forked from the active one and makes it active; `parked` is the
    /// state of the branch it leaves. Returns the new branch's id.
    pub fn start(&mut self, after_turn: Option<String>, parked: Parked) -> String {
        let from = self.active().id.clone();
        let id = format!("b{}", self.next);
        self.next += 1;
        let label = match &after_turn {
            Some(turn) => format!("from {turn} of {from}"),
            None => format!("replay of {from}"),
        };
        self.parked.push((from.clone(), parked));
        self.list.push(BranchMeta {
            id: id.clone(),
            label,
            forked_from: Some(ForkPoint {
                branch: from,
                after_turn,
            }),
        });
        self.active = self.list.len() - 1;
        id
    }

    /// Takes the parked state of `id` out, to play it.
    pub fn unpark(&mut self, id: &str) -> Result<Parked, BranchError> {
        let index = self
            .parked
            .iter()
            .position(|(b, _)| b == id)
            .ok_or_else(|| BranchError::NoSuchBranch(id.to_string()))?;
        Ok(self.parked.remove(index).1)
    }

    /// Parks the active branch's state and makes `id` (just unparked) the active one.
    pub fn switch(&mut self, id: &str, leaving: Parked) {
        let from = self.active().id.clone();
        self.parked.push((from, leaving));
        if let Some(index) = self.list.iter().position(|b| b.id == id) {
            self.active = index;
        }
    }
}
