//! The live studio: a workspace that follows the disk. File changes are debounced (a burst of
//! saves becomes one reload with the final state), classified by plugin folder or session
//! file, reloaded (only what changed), and every reload yields an entry with the diff, the
//! diagnostics and the timings. The CLI's `covel watch` and the desktop app both use it.

use crate::branches::{BranchError, Branches, Parked};
use crate::diff::{PreviewDiff, diff};
use crate::document::SessionEdit;
use crate::forecast;
use crate::playtest::{ForcedCompaction, PlayLine, Playtest, TurnInFlight, TurnRecord, TurnReport};
use crate::preview::{Preview, RuntimeTarget};
use crate::slots::Trigger;
use crate::workspace::{PluginReload, Workspace};
use covel_kernel::diagnostic::Diagnostic;
use notify_debouncer_full::notify::RecursiveMode;
use notify_debouncer_full::{DebounceEventResult, new_debouncer};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

/// What changed on disk, grouped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChangeSet {
    /// Plugin folder names with a changed file.
    pub plugins: Vec<String>,
    pub session: bool,
    /// The changed paths, relative to the plugins folder where possible.
    pub paths: Vec<String>,
}

impl ChangeSet {
    /// Adds another batch's changes.
    pub fn merge(&mut self, other: ChangeSet) {
        self.session |= other.session;
        for name in other.plugins {
            if !self.plugins.contains(&name) {
                self.plugins.push(name);
            }
        }
        self.paths.extend(other.paths);
        self.plugins.sort();
        self.paths.sort();
        self.paths.dedup();
    }
}

/// Timings of one reload, in milliseconds.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReloadTimings {
    /// From the first file event to the new preview (includes the debounce wait).
    pub reload_ms: f64,
    /// The work after the debounce: load + resolve + preview.
    pub after_debounce_ms: f64,
    pub load_ms: f64,
    pub resolve_ms: f64,
    pub preview_ms: f64,
}

/// One reload, for the author.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReloadEntry {
    pub paths: Vec<String>,
    pub plugins: BTreeMap<String, PluginReload>,
    pub session_reloaded: bool,
    pub diff: PreviewDiff,
    pub diagnostics: Vec<Diagnostic>,
    pub timings: ReloadTimings,
}

/// What one step of following a folder gave.
pub struct Followed {
    /// The reload, when the batch changed something the studio runs.
    pub entry: Option<ReloadEntry>,
    /// What happened to the watch itself (the folder deleted, or back).
    pub note: Option<String>,
}

/// A workspace with its current preview, its playtest and its last reload.
pub struct LiveStudio {
    /// The playtest owns the workspace, the slot host and the undo history.
    play: Playtest,
    target: RuntimeTarget,
    preview: Preview,
    last_reload: Option<ReloadEntry>,
    /// Played turns as the UI and saves need them (no previews: see [`LiveStudio::turn_preview`]).
    turns: Vec<TurnRecord>,
    /// The previews of the last few played turns (turn id, preview), oldest first.
    recent: std::collections::VecDeque<(String, Preview)>,
    /// Played turns and session edits, newest last.
    undo: Vec<UndoEntry>,
    /// The last "compact now" run, until a turn is played or it is undone.
    forced_compaction: Option<crate::compaction::CompactionRun>,
    /// Reloads that changed plugins so far (tells a recomputed turn prompt from the one sent).
    plugin_reloads: u64,
    /// The playtest's branches (forks and replays); the active one is `play`, `turns`, `undo`.
    branches: Branches,
}

/// How many played turns keep their whole preview in memory (older ones are recomputed): a
/// preview holds the history three times (prompt messages, both request bodies).
pub const RECENT_PREVIEWS: usize = 1;

/// A played turn's prompt, as the turn inspector shows it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnPrompt {
    pub preview: Preview,
    /// Recomputed with plugins reloaded after the turn: it may differ from what was sent.
    pub with_newer_plugins: bool,
}

/// One step the author can undo.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UndoEntry {
    /// A played turn (memory only).
    Turn,
    /// A saved edit of the session file: undoing writes `before` back if the file still holds
    /// `after`.
    SessionEdit { before: String, after: String },
    /// A forced compaction that changed the session (memory only; the playtest keeps what
    /// undoing it needs).
    Compaction,
}

/// What an undo undid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum UndoKind {
    Turn,
    SessionEdit,
    Compaction,
}

/// Why a session edit, a played-session save or an undo did not happen.
#[derive(Debug, thiserror::Error)]
pub enum SessionSaveError {
    #[error("{0}")]
    Invalid(Diagnostic),
    #[error("{0}")]
    Edit(crate::document::EditError),
    #[error("{0}")]
    Save(crate::save::SaveError),
    #[error("{} is the authored session: played turns go to a new file unless you choose to overwrite it", .0.display())]
    WouldOverwriteAuthored(PathBuf),
    #[error("{} changed on disk since this edit; undoing it would overwrite that change (reopen or edit the file instead)", .0.display())]
    ChangedOnDisk(PathBuf),
    /// Saving would restart the playtest and drop its played turns, and the caller did not say
    /// to (`PlayedTurns::Drop`).
    #[error("saving the session restarts the playtest and drops its {} ({}): save the played session first, or save again choosing to drop them", crate::words::counted(.0.len(), "played turn"), .0.join(", "))]
    WouldDropPlayedTurns(Vec<String>),
}

/// What a session save does with the playtest's played turns: they belong to the version of
/// the session they were played on, so a save restarts the playtest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlayedTurns {
    /// Refuse the save when there are played turns (nothing is lost without asking).
    Keep,
    /// Save and drop them.
    Drop,
}

/// A played turn waiting for the story model, taken out of the studio (see
/// [`LiveStudio::begin_turn`]).
pub struct PendingTurn {
    turn: TurnInFlight,
    /// The plugin reloads seen when the prompt was built: a later reload makes a recomputed
    /// prompt of this turn differ from the one sent.
    plugin_reloads: u64,
}

/// A played turn appended to the session, its compaction still to run (see
/// [`LiveStudio::append_reply`]).
pub struct AppendedStudioTurn {
    turn: crate::playtest::AppendedTurn,
    plugin_reloads: u64,
}

impl AppendedStudioTurn {
    pub fn turn_id(&self) -> &str {
        self.turn.turn_id()
    }

    /// Whether compaction is due after this turn.
    pub fn compaction_due(&self) -> bool {
        self.turn.compaction_due()
    }

    /// Runs the compaction provider when compaction is due; needs no access to the studio.
    pub fn compact(&mut self) {
        self.turn.compact();
    }
}

impl PendingTurn {
    pub fn turn_id(&self) -> &str {
        self.turn.turn_id()
    }

    /// The preview the model is asked with.
    pub fn preview(&self) -> &Preview {
        self.turn.preview()
    }

    /// Asks the story model; needs no access to the studio.
    pub fn ask(&self, cancel: &std::sync::atomic::AtomicBool) -> crate::turn::LoopOutcome {
        self.turn.ask(cancel)
    }

    /// [`PendingTurn::ask`] with a real backend's reply streamed to `on_text`.
    pub fn ask_streaming(
        &self,
        cancel: &std::sync::atomic::AtomicBool,
        on_text: Option<&dyn Fn(&str)>,
    ) -> crate::turn::LoopOutcome {
        self.turn.ask_streaming(cancel, on_text)
    }
}

impl LiveStudio {
    pub fn new(workspace: Workspace, target: RuntimeTarget) -> LiveStudio {
        let preview = workspace.preview(&target);
        LiveStudio {
            play: Playtest::new(workspace),
            target,
            preview,
            last_reload: None,
            turns: Vec::new(),
            recent: Default::default(),
            undo: Vec::new(),
            forced_compaction: None,
            plugin_reloads: 0,
            branches: Branches::default(),
        }
    }

    /// How long the folder stays quiet before the shells confirm the memo
    /// ([`LiveStudio::confirm_memo`]): a save arriving sooner is reloaded first.
    pub const CONFIRM_AFTER: Duration = Duration::from_millis(50);

    /// How long a reload that finds a freshly broken plugin waits for the rest of an editor's
    /// save (a truncated or half-written file) before it reports the error.
    pub const GRACE: Duration = Duration::from_millis(120);

    /// Whether calls of the preview shown ran only once, so the memo could answer them next time
    /// once a second run agrees with the first (the memo's rule, `covel_js::memo`): until then
    /// the next save, session edit or played turn runs them again. The engines say so
    /// ([`Workspace::has_unconfirmed`]), counting the preview's next-turn calls too.
    pub fn needs_confirming(&self) -> bool {
        self.play.workspace.has_unconfirmed()
    }

    /// Runs once more the calls that ran only once ([`Workspace::confirm_memo`]), so that the
    /// memo can answer the next save's unchanged calls; returns how many ran. The shells do it
    /// while the author is idle (`covel watch` and the desktop app, after a short quiet time).
    /// The preview shown stays as it is: this run is the second the memo's rule asks for, not a
    /// new state (a handler that keeps module-level state sees one more call, as it would on any
    /// reload).
    pub fn confirm_memo(&mut self) -> usize {
        self.play.workspace.confirm_memo()
    }

    /// The playtest: the workspace, the slot host and the played session.
    pub fn play(&self) -> &Playtest {
        &self.play
    }

    /// The runtime the preview is assembled for.
    pub fn target(&self) -> &RuntimeTarget {
        &self.target
    }

    /// The preview of the next turn.
    pub fn preview(&self) -> &Preview {
        &self.preview
    }

    /// What the last reload changed.
    pub fn last_reload(&self) -> Option<&ReloadEntry> {
        self.last_reload.as_ref()
    }

    /// The turns played on the active branch, oldest first.
    pub fn turns(&self) -> &[TurnRecord] {
        &self.turns
    }

    /// The last "compact now" run, until a turn is played or it is undone.
    pub fn forced_compaction(&self) -> Option<&crate::compaction::CompactionRun> {
        self.forced_compaction.as_ref()
    }

    /// The playtest's branches (forks and replays).
    pub fn branches(&self) -> &Branches {
        &self.branches
    }

    pub fn workspace(&self) -> &Workspace {
        &self.play.workspace
    }

    /// Switches the previewed runtime.
    pub fn set_target(&mut self, target: RuntimeTarget) {
        self.target = target;
        self.refresh();
    }

    /// Switches the previewed runtime when it can be previewed; otherwise says why (a plugin
    /// that is not active, an ill-formed contract id) and keeps the current one.
    pub fn switch_target(&mut self, target: RuntimeTarget) -> Result<(), String> {
        if let Some(why) = self.play.workspace.runtime_unavailable(&target) {
            return Err(why);
        }
        self.set_target(target);
        Ok(())
    }

    /// Runs compaction now, even under the threshold; an accepted result changes the session and
    /// joins the undo history. The run is the Compaction panel's last run until a turn is played.
    pub fn compact_now(&mut self) -> crate::compaction::CompactionRun {
        let mut forced = self.begin_compact_now();
        forced.compact();
        self.finish_compact_now(forced)
    }

    /// The first step of [`LiveStudio::compact_now`]: the compaction's input. The desktop app
    /// runs its provider ([`ForcedCompaction::compact`]) without the state lock.
    pub fn begin_compact_now(&mut self) -> ForcedCompaction {
        self.play.begin_compact_now()
    }

    /// The last step of [`LiveStudio::compact_now`]: the verdict applied when the session did not
    /// change meanwhile, the run kept for the Compaction panel, the preview refreshed.
    pub fn finish_compact_now(
        &mut self,
        forced: ForcedCompaction,
    ) -> crate::compaction::CompactionRun {
        let (run, changed) = self.play.finish_compact_now(forced);
        if changed {
            self.undo.push(UndoEntry::Compaction);
        }
        self.forced_compaction = Some(run.clone());
        self.refresh();
        run
    }

    /// Recomputes the preview from the current state.
    pub fn refresh(&mut self) {
        self.play.workspace.forget_unconfirmed();
        self.preview = self.play.workspace.preview(&self.target);
    }

    /// Plays a turn and refreshes the preview.
    pub fn play_turn(&mut self, message: &str) -> TurnReport {
        self.play_turn_cancellable(message, &std::sync::atomic::AtomicBool::new(false))
    }

    /// Plays a turn that `cancel` can stop before anything is appended.
    pub fn play_turn_cancellable(
        &mut self,
        message: &str,
        cancel: &std::sync::atomic::AtomicBool,
    ) -> TurnReport {
        match self.begin_turn(message) {
            Ok(turn) => {
                let answer = turn.ask(cancel);
                self.finish_turn(turn, answer, cancel)
            }
            Err(failed) => *failed,
        }
    }

    /// The first step of a played turn (see [`Playtest::prepare_turn`]): the studio needs no
    /// lock while [`PendingTurn::ask`] waits for the model, so reloads go on meanwhile. A turn
    /// whose prompt failed is recorded and answered at once (`Err`).
    pub fn begin_turn(&mut self, message: &str) -> Result<PendingTurn, Box<TurnReport>> {
        match self.play.prepare_turn(message, None) {
            Ok(turn) => Ok(PendingTurn {
                turn,
                plugin_reloads: self.plugin_reloads,
            }),
            Err(failed) => Err(Box::new(self.record_turn(*failed, self.plugin_reloads))),
        }
    }

    /// The last step of a played turn (see [`Playtest::finish_turn`]): appends the reply when
    /// the session is still the one the prompt was built from, compacts when due, records the
    /// turn and refreshes the preview.
    pub fn finish_turn(
        &mut self,
        pending: PendingTurn,
        answer: crate::turn::LoopOutcome,
        cancel: &std::sync::atomic::AtomicBool,
    ) -> TurnReport {
        match self.append_reply(pending, answer, cancel) {
            Ok(mut turn) => {
                turn.compact();
                self.complete_turn(turn)
            }
            Err(failed) => *failed,
        }
    }

    /// The appending part of [`LiveStudio::finish_turn`] (see [`Playtest::append_reply`]): the
    /// turn is recorded and can be undone from here on. Its compaction
    /// ([`AppendedStudioTurn::compact`]) needs no access to the studio, so the desktop app runs
    /// it without the state lock: a compaction provider waiting for the fast model keeps no
    /// reload or command waiting. `Err` is the report of a turn that appended nothing.
    pub fn append_reply(
        &mut self,
        pending: PendingTurn,
        answer: crate::turn::LoopOutcome,
        cancel: &std::sync::atomic::AtomicBool,
    ) -> Result<AppendedStudioTurn, Box<TurnReport>> {
        match self.play.append_reply(pending.turn, answer, cancel) {
            Ok(appended) => {
                self.undo.push(UndoEntry::Turn);
                self.forced_compaction = None;
                let record =
                    TurnRecord::after(appended.report(), pending.plugin_reloads, self.turns.last());
                self.turns.push(record);
                Ok(AppendedStudioTurn {
                    turn: appended,
                    plugin_reloads: pending.plugin_reloads,
                })
            }
            Err(failed) => {
                let report = self.record_turn(*failed, pending.plugin_reloads);
                self.refresh();
                Err(Box::new(report))
            }
        }
    }

    /// The end of a played turn (see [`Playtest::complete_turn`]): the compaction applied when
    /// nothing changed the session meanwhile, the turn's record completed and the preview
    /// refreshed.
    pub fn complete_turn(&mut self, turn: AppendedStudioTurn) -> TurnReport {
        let report = self.play.complete_turn(turn.turn);
        // Undone meanwhile: its record went with it, and nothing is kept of it.
        if let Some(at) = self.turns.iter().position(|t| t.turn_id == report.turn_id) {
            let earlier = at.checked_sub(1).and_then(|i| self.turns.get(i));
            self.turns[at] = TurnRecord::after(&report, turn.plugin_reloads, earlier);
            tracing::info!(turn = %report.turn_id, "turn played");
            self.keep_recent(&report);
        }
        self.refresh();
        report
    }

    /// Keeps what the UI and saves need of a turn (and the prompt of the last few played ones).
    fn record_turn(&mut self, report: TurnReport, plugin_reloads: u64) -> TurnReport {
        match &report.error {
            Some(error) => tracing::warn!(turn = %report.turn_id, %error, "turn failed"),
            None => tracing::info!(turn = %report.turn_id, "turn played"),
        }
        let record = TurnRecord::after(&report, plugin_reloads, self.turns.last());
        self.turns.push(record);
        self.keep_recent(&report);
        report
    }

    /// Keeps a played turn's prompt among the last [`RECENT_PREVIEWS`].
    fn keep_recent(&mut self, report: &TurnReport) {
        if report.error.is_none() {
            if self.recent.len() >= RECENT_PREVIEWS {
                self.recent.pop_front();
            }
            self.recent
                .push_back((report.turn_id.clone(), report.preview.clone()));
        }
    }

    /// The story model's counts of a preview's prompt: the numbers every panel shows (see
    /// [`crate::counts`]). Texts already counted are answered from the studio's counter.
    pub fn prompt_counts(&self, preview: &crate::preview::Preview) -> crate::counts::PromptCounts {
        crate::counts::of_session(self.workspace(), preview, &self.workspace().counter)
    }

    /// The preview a played turn's story model was asked with: kept for the last
    /// [`RECENT_PREVIEWS`] turns, recomputed for older ones from the session as it was before
    /// the turn (with the plugins as they are now). None for a turn that is not played (or
    /// failed, so nothing was appended).
    pub fn turn_preview(&mut self, turn_id: &str) -> Option<Preview> {
        if let Some((_, preview)) = self.recent.iter().find(|(id, _)| id == turn_id) {
            return Some(preview.clone());
        }
        let before = self.play.session_before(turn_id)?;
        let message = self
            .turns
            .iter()
            .find(|t| t.turn_id == turn_id)
            .map(|t| t.player_message.clone())
            .unwrap_or_default();
        Some(self.preview_of(before, message))
    }

    /// The story preview of `session` saying `message` (an older turn's prompt), the session in
    /// use left as it was.
    fn preview_of(
        &mut self,
        mut session: covel_kernel::session::Session,
        message: String,
    ) -> Preview {
        session.next_message = message;
        let workspace = &mut self.play.workspace;
        let current = std::mem::replace(&mut workspace.session, session);
        let preview = workspace.preview(&RuntimeTarget::Story);
        workspace.session = current;
        preview
    }

    /// A played turn's prompt for the turn inspector, and whether it can differ from what was
    /// sent: the plugins were reloaded since the turn and its preview had to be recomputed.
    pub fn turn_prompt(&mut self, turn_id: &str) -> Option<TurnPrompt> {
        let kept = self.recent.iter().any(|(id, _)| id == turn_id);
        let reloaded_since = self
            .turns
            .iter()
            .find(|t| t.turn_id == turn_id)
            .is_some_and(|t| t.plugin_reloads != self.plugin_reloads);
        let preview = self.turn_preview(turn_id)?;
        Some(TurnPrompt {
            preview,
            with_newer_plugins: !kept && reloaded_since,
        })
    }

    /// Saves new text for the authored session file (checked, atomic, the previous text kept as
    /// `.bak`, see [`crate::save`]), adopts it, and restarts the playtest from it. The edit joins
    /// the undo history: undoing it writes the previous text back. Without a session file the
    /// text is adopted in memory only. With played turns and [`PlayedTurns::Keep`] nothing is
    /// saved: the answer names the turns a save would drop.
    pub fn save_session_text(
        &mut self,
        text: &str,
        played: PlayedTurns,
    ) -> Result<(), SessionSaveError> {
        let path = self.play.workspace.session_path.clone();
        let file = path
            .clone()
            .unwrap_or_else(|| PathBuf::from("session.yaml"));
        let session =
            covel_kernel::session::parse_session(text, &file).map_err(SessionSaveError::Invalid)?;
        if played == PlayedTurns::Keep {
            let played = self.played_turns_of_every_branch();
            if !played.is_empty() {
                return Err(SessionSaveError::WouldDropPlayedTurns(played));
            }
        }
        if let Some(path) = &path {
            let before = crate::workspace::read_session_text(path).ok();
            crate::save::write_session_text(path, text).map_err(SessionSaveError::Save)?;
            if let Some(before) = before.filter(|b| b != text) {
                self.undo.push(UndoEntry::SessionEdit {
                    before,
                    after: text.to_string(),
                });
            }
        }
        self.adopt_session(session, text);
        Ok(())
    }

    /// Applies structured edits to the authored session text in place (see [`crate::document`])
    /// and saves it like [`LiveStudio::save_session_text`].
    pub fn edit_session(
        &mut self,
        edits: &[SessionEdit],
        played: PlayedTurns,
    ) -> Result<(), SessionSaveError> {
        let current = self
            .play
            .workspace
            .session_text
            .clone()
            .unwrap_or_else(|| format!("id: {}\n", self.play.workspace.session.id));
        let text = crate::document::apply_edits(&current, edits).map_err(SessionSaveError::Edit)?;
        self.save_session_text(&text, played)
    }

    /// Makes `session` (read from `text`) the authored session and restarts the playtest.
    fn adopt_session(&mut self, session: covel_kernel::session::Session, text: &str) {
        let workspace = &mut self.play.workspace;
        workspace.session = session;
        workspace.session_text = Some(text.to_string());
        workspace.session_error = None;
        workspace.resolve();
        self.restart_playtest();
        self.play
            .workspace
            .apply_slots(&mut self.play.slots, &Trigger::All);
        self.refresh();
    }

    /// Played turns belong to one version of the authored session: when it changes they are
    /// dropped (with their undo entries) and the playtest starts again from the new version.
    fn restart_playtest(&mut self) {
        self.play.restart();
        self.turns.clear();
        self.recent.clear();
        self.undo
            .retain(|u| matches!(u, UndoEntry::SessionEdit { .. }));
        self.branches = Branches::default();
    }

    /// The played turns a restart would drop, in every branch (`turn-2`, or `b2/turn-3` for a
    /// branch other than the one played).
    fn played_turns_of_every_branch(&self) -> Vec<String> {
        let active = self.turns.iter().map(|t| t.turn_id.clone());
        let parked = self.branches.all_parked().flat_map(|(branch, p)| {
            p.turns
                .iter()
                .map(move |t| format!("{branch}/{}", t.turn_id))
        });
        active.chain(parked).collect()
    }

    /// Forks the active branch after its played turn `turn_id`: a new branch starts from the
    /// state right after that turn and becomes the one played (the branch it leaves is kept).
    /// Returns the new branch's id.
    pub fn fork_turn(&mut self, turn_id: &str) -> Result<String, BranchError> {
        let line = self
            .play
            .fork_after(turn_id)
            .ok_or_else(|| BranchError::NotPlayed(turn_id.to_string()))?;
        let upto = self
            .turns
            .iter()
            .rposition(|t| t.turn_id == turn_id)
            .ok_or_else(|| BranchError::NotPlayed(turn_id.to_string()))?;
        let turns = self.turns[..=upto].to_vec();
        let undo = undo_prefix(&self.undo, line.undo_steps());
        let recent = self
            .recent
            .iter()
            .filter(|(id, _)| turns.iter().any(|t| t.turn_id == *id))
            .cloned()
            .collect();
        let id = self.start_branch(line, turns, undo, recent, Some(turn_id.to_string()));
        Ok(id)
    }

    /// Starts a branch from the state before the first played turn of the active branch and
    /// makes it the one played; returns its id and the player messages to play again in it
    /// ("replay with my change": the same messages against the plugins as they are now).
    pub fn begin_replay(&mut self) -> Result<(String, Vec<String>), BranchError> {
        let messages: Vec<String> = self
            .turns
            .iter()
            .filter(|t| t.error.is_none())
            .map(|t| t.player_message.clone())
            .collect();
        if messages.is_empty() {
            return Err(BranchError::NothingToReplay);
        }
        let line = self.play.fork_at_start();
        let undo = undo_prefix(&self.undo, 0);
        let id = self.start_branch(line, Vec::new(), undo, Default::default(), None);
        Ok((id, messages))
    }

    fn start_branch(
        &mut self,
        line: PlayLine,
        turns: Vec<TurnRecord>,
        undo: Vec<UndoEntry>,
        recent: std::collections::VecDeque<(String, Preview)>,
        after_turn: Option<String>,
    ) -> String {
        let leaving = self.take_up(Parked {
            line,
            turns,
            undo,
            recent,
        });
        let id = self.branches.start(after_turn, leaving);
        self.forced_compaction = None;
        self.refresh();
        id
    }

    /// Makes `branch` the state played and returns the state it replaces, parked.
    fn take_up(&mut self, branch: Parked) -> Parked {
        Parked {
            line: self.play.swap_line(branch.line),
            turns: std::mem::replace(&mut self.turns, branch.turns),
            undo: std::mem::replace(&mut self.undo, branch.undo),
            recent: std::mem::replace(&mut self.recent, branch.recent),
        }
    }

    /// Makes the branch `id` the one played; the branch left is kept as it is.
    pub fn switch_branch(&mut self, id: &str) -> Result<(), BranchError> {
        if self.branches.active().id == id {
            return Ok(());
        }
        let parked = self.branches.unpark(id)?;
        let leaving = self.take_up(parked);
        self.branches.switch(id, leaving);
        self.forced_compaction = None;
        self.refresh();
        Ok(())
    }

    /// A played turn's prompt in any branch (the active one when `branch` is None): see
    /// [`LiveStudio::turn_prompt`]. A parked branch's turns are recomputed from its own state.
    pub fn branch_turn_prompt(
        &mut self,
        branch: Option<&str>,
        turn_id: &str,
    ) -> Option<TurnPrompt> {
        let Some(parked) = branch
            .filter(|b| *b != self.branches.active().id)
            .map(|b| self.branches.parked(b))
        else {
            return self.turn_prompt(turn_id);
        };
        let parked = parked?;
        if let Some((_, preview)) = parked.recent.iter().find(|(id, _)| id == turn_id) {
            return Some(TurnPrompt {
                preview: preview.clone(),
                with_newer_plugins: false,
            });
        }
        let record = parked.turns.iter().find(|t| t.turn_id == turn_id)?;
        let before = parked.line.session_before(turn_id)?;
        let message = record.player_message.clone();
        let with_newer_plugins = record.plugin_reloads != self.plugin_reloads;
        Some(TurnPrompt {
            preview: self.preview_of(before, message),
            with_newer_plugins,
        })
    }

    /// Played sessions are new files: saves the played session as YAML to `path`, or to
    /// `<name>.played.session.yaml` beside the authored session. Writing it over the authored
    /// session needs `overwrite_authored` (and keeps the previous text as `.bak`).
    pub fn save_played(
        &self,
        path: Option<&Path>,
        overwrite_authored: bool,
    ) -> Result<PathBuf, SessionSaveError> {
        let target = path
            .map(Path::to_path_buf)
            .unwrap_or_else(|| self.played_default_path());
        let authored = self.play.workspace.session_path.as_deref();
        if authored.is_some_and(|a| a == target || crate::save::same_file(&target, a))
            && !overwrite_authored
        {
            return Err(SessionSaveError::WouldOverwriteAuthored(target));
        }
        self.play.save(&target).map_err(SessionSaveError::Save)
    }

    /// Where a played session goes unless the author says otherwise.
    pub fn played_default_path(&self) -> PathBuf {
        let ws = &self.play.workspace;
        match &ws.session_path {
            Some(authored) => crate::save::played_file_for(authored),
            None => ws.plugins_dir.join("studio.played.session.yaml"),
        }
    }

    /// What [`LiveStudio::undo`] would undo.
    pub fn next_undo(&self) -> Option<&UndoEntry> {
        self.undo.last()
    }

    /// Undoes the last turn or session edit. Undoing a session edit writes the previous text
    /// back to the file, unless the file changed on disk since the edit.
    pub fn undo(&mut self) -> Result<Option<UndoKind>, SessionSaveError> {
        match self.undo.pop() {
            None => Ok(None),
            Some(UndoEntry::Compaction) => {
                self.play.undo();
                self.forced_compaction = None;
                self.refresh();
                Ok(Some(UndoKind::Compaction))
            }
            Some(UndoEntry::Turn) => {
                self.play.undo();
                // The played turn undone, and the failed or cancelled attempts recorded after it
                // (they were tried on the state it left): a failed attempt has no undo step.
                if let Some(played) = self.turns.iter().rposition(|t| t.error.is_none()) {
                    for turn in self.turns.split_off(played) {
                        self.recent.retain(|(id, _)| *id != turn.turn_id);
                    }
                }
                self.refresh();
                Ok(Some(UndoKind::Turn))
            }
            Some(UndoEntry::SessionEdit { before, after }) => {
                let Some(path) = self.play.workspace.session_path.clone() else {
                    return Ok(None);
                };
                let disk = crate::workspace::read_session_text(&path).ok();
                if disk.as_deref() != Some(after.as_str()) {
                    self.undo.push(UndoEntry::SessionEdit { before, after });
                    return Err(SessionSaveError::ChangedOnDisk(path));
                }
                let session = covel_kernel::session::parse_session(&before, &path)
                    .map_err(SessionSaveError::Invalid)?;
                crate::save::write_session_text(&path, &before).map_err(SessionSaveError::Save)?;
                self.adopt_session(session, &before);
                Ok(Some(UndoKind::SessionEdit))
            }
        }
    }

    /// Classifies changed paths.
    /// One step of following a folder: waits for the next batch of changes, reloads what
    /// changed, and answers the reload entry (with what happened to the watch itself).
    ///
    /// Editors save in steps (truncate then write, or write a temporary file then rename): a
    /// reload that finds a freshly broken plugin waits up to `grace` for more events, and when
    /// they come, reloads again and reports only the settled result — no flash of a bogus
    /// syntax error for a half-written file.
    pub fn follow(
        &mut self,
        watcher: &mut FolderWatcher,
        timeout: Duration,
        grace: Duration,
    ) -> Option<Followed> {
        let batch = watcher.next(timeout)?;
        Some(self.follow_batch(batch, watcher, grace))
    }

    /// The reload step of [`LiveStudio::follow`] for a batch already taken from the watcher (the
    /// desktop app waits for the batch without holding its state lock).
    pub fn follow_batch(
        &mut self,
        batch: Batch,
        watcher: &mut FolderWatcher,
        grace: Duration,
    ) -> Followed {
        let note = batch.note.clone();
        let mut changes = if batch.rescan {
            self.classify_all()
        } else {
            self.classify(&batch.paths)
        };
        if changes.plugins.is_empty() && !changes.session {
            return Followed { entry: None, note };
        }
        let loaded = self.load_changes(&changes);
        if !loaded.changed {
            // The same bytes saved again (or the second half of a save seen as two batches):
            // nothing to show, and the last reload's marks stay.
            tracing::debug!(paths = ?changes.paths, "saved unchanged; nothing reloaded");
            return Followed { entry: None, note };
        }
        let (mut entry, before) = self.finish_reload(&changes, loaded, batch.first_event, None);
        let freshly_broken = |entry: &ReloadEntry| {
            entry
                .plugins
                .values()
                .any(|r| matches!(r, PluginReload::KeptLastGood | PluginReload::Failed))
        };
        while freshly_broken(&entry) && !grace.is_zero() {
            let Some(more) = watcher.next(grace) else {
                break;
            };
            let next = if more.rescan {
                self.classify_all()
            } else {
                self.classify(&more.paths)
            };
            if next.plugins.is_empty() && !next.session {
                break;
            }
            changes.merge(next);
            let loaded = self.load_changes(&changes);
            if !loaded.changed {
                continue;
            }
            // One entry for the whole save: what each plugin ended as and the diff against the
            // preview before the first step.
            let (later, _) = self.finish_reload(&changes, loaded, batch.first_event, Some(&before));
            entry = entry.followed_by(later);
            self.last_reload = Some(entry.clone());
        }
        Followed {
            entry: Some(entry),
            note,
        }
    }

    /// Every plugin folder on disk and every loaded plugin, plus the session: for when the
    /// plugins folder itself was replaced and its events cannot be trusted.
    pub fn classify_all(&self) -> ChangeSet {
        let workspace = &self.play.workspace;
        let mut set = ChangeSet {
            session: workspace.session_path.is_some(),
            ..ChangeSet::default()
        };
        let on_disk = covel_kernel::package::discover(&workspace.plugins_dir).unwrap_or_default();
        let names = on_disk
            .iter()
            .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .chain(workspace.plugins.iter().map(|p| p.name.clone()));
        for name in names {
            if !set.plugins.contains(&name) {
                set.paths.push(name.clone());
                set.plugins.push(name);
            }
        }
        set.plugins.sort();
        set.paths.sort();
        set
    }

    pub fn classify(&self, paths: &[PathBuf]) -> ChangeSet {
        let workspace = &self.play.workspace;
        let root = workspace
            .plugins_dir
            .canonicalize()
            .unwrap_or_else(|_| workspace.plugins_dir.clone());
        let session = workspace
            .session_path
            .as_ref()
            .map(|p| p.canonicalize().unwrap_or_else(|_| p.clone()));
        let mut set = ChangeSet::default();
        for path in paths {
            let canonical = canonical_or_parent(path);
            if session.as_ref() == Some(&canonical) {
                set.session = true;
                set.paths.push(
                    path.file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default(),
                );
                continue;
            }
            let Ok(relative) = canonical.strip_prefix(&root) else {
                continue;
            };
            let Some(first) = relative.components().next() else {
                continue;
            };
            let name = first.as_os_str().to_string_lossy().into_owned();
            // Files directly in the plugins folder (the demo session, a README) are not plugins.
            if relative.components().count() == 1
                && !canonical.is_dir()
                && workspace.plugins.iter().all(|p| p.name != name)
            {
                continue;
            }
            if name.starts_with('.') {
                continue;
            }
            set.paths.push(relative.display().to_string());
            if !set.plugins.contains(&name) {
                set.plugins.push(name);
            }
        }
        set.plugins.sort();
        set.paths.sort();
        set.paths.dedup();
        set
    }

    /// "Run everything again": reloads every plugin and the session from disk into fresh
    /// runtimes, whose memos are empty, so every provider runs again (nothing answered from the
    /// memo). Returns the reload entry like any reload.
    pub fn run_everything_again(&mut self) -> ReloadEntry {
        let changes = self.classify_all();
        self.play.workspace.forget_fingerprints();
        self.reload(&changes, Instant::now())
    }

    /// Applies a change set: reloads what changed, re-resolves, recomputes the preview (also when
    /// every folder and the session hold the bytes last loaded; following a folder skips that).
    pub fn reload(&mut self, changes: &ChangeSet, first_event: Instant) -> ReloadEntry {
        let loaded = self.load_changes(changes);
        self.finish_reload(changes, loaded, first_event, None).0
    }

    /// The first step of a reload: loads the changed plugin folders and re-reads the session.
    fn load_changes(&mut self, changes: &ChangeSet) -> LoadedChanges {
        let started = Instant::now();
        let workspace = &mut self.play.workspace;
        let plugins: BTreeMap<String, PluginReload> = changes
            .plugins
            .iter()
            .map(|name| (name.clone(), workspace.reload_plugin(name)))
            .collect();
        let error_before = workspace.session_error.clone();
        let session_reloaded = changes.session && workspace.reload_session();
        let plugins_changed = plugins.values().any(|r| *r != PluginReload::Unchanged);
        if plugins_changed {
            self.plugin_reloads += 1;
        }
        let changed = plugins_changed
            || session_reloaded
            || self.play.workspace.session_error != error_before;
        LoadedChanges {
            plugins,
            session_reloaded,
            changed,
            started,
            load_ms: ms(started),
        }
    }

    /// The rest of a reload: re-resolves, recomputes the preview and diffs it against `before`
    /// (the preview shown, when None). Returns the entry and the preview it replaced.
    fn finish_reload(
        &mut self,
        changes: &ChangeSet,
        loaded: LoadedChanges,
        first_event: Instant,
        before: Option<&Preview>,
    ) -> (ReloadEntry, Preview) {
        let workspace = &mut self.play.workspace;
        let t = Instant::now();
        workspace.resolve();
        let resolve_ms = ms(t);
        let t = Instant::now();
        workspace.forget_unconfirmed();
        let preview = workspace.preview(&self.target);
        let preview_ms = ms(t);
        let replaced = std::mem::replace(&mut self.preview, preview);
        let diff = diff(before.unwrap_or(&replaced), &self.preview);
        // The slot host's committed values follow the reload; what changed for the author is
        // the preview diff's `slots` (computed once, above).
        if loaded.session_reloaded {
            // The authored session changed on disk: the playtest starts again from it.
            self.restart_playtest();
            self.play
                .workspace
                .apply_slots(&mut self.play.slots, &Trigger::All);
        } else {
            // The preview just projected every slot from this same state: the slot host takes
            // those values rather than running each slot provider again.
            self.play.workspace.apply_slots_projected(
                &mut self.play.slots,
                &Trigger::PluginsChanged,
                &self.preview.slots,
            );
        }
        let entry = ReloadEntry {
            paths: changes.paths.clone(),
            plugins: loaded.plugins,
            session_reloaded: loaded.session_reloaded,
            diff,
            diagnostics: self.play.workspace.diagnostics().cloned().collect(),
            timings: ReloadTimings {
                reload_ms: ms(first_event),
                after_debounce_ms: ms(loaded.started),
                load_ms: loaded.load_ms,
                resolve_ms,
                preview_ms,
            },
        };
        tracing::info!(
            plugins = ?entry.plugins,
            session = entry.session_reloaded,
            diagnostics = entry.diagnostics.len(),
            reload_ms = entry.timings.reload_ms,
            "reloaded"
        );
        self.last_reload = Some(entry.clone());
        (entry, replaced)
    }
}

/// What the load step of a reload did.
struct LoadedChanges {
    plugins: BTreeMap<String, PluginReload>,
    session_reloaded: bool,
    /// Whether anything a preview reads changed: a plugin loaded, failed or removed, the session
    /// re-read, or its error appeared, changed or went away.
    changed: bool,
    started: Instant,
    load_ms: f64,
}

impl ReloadEntry {
    /// This entry followed by a later step of the same save (see [`LiveStudio::follow_batch`]):
    /// the later entry, diffed against the state before both, with each plugin as it ended
    /// compared with before the first step.
    fn followed_by(self, later: ReloadEntry) -> ReloadEntry {
        let mut plugins = self.plugins;
        for (name, now) in later.plugins {
            let first = plugins.get(&name).copied();
            let combined = match (first, now) {
                (Some(first), PluginReload::Unchanged) => first,
                (Some(PluginReload::Added), PluginReload::Replaced) => PluginReload::Added,
                (Some(PluginReload::Removed), PluginReload::Added) => PluginReload::Replaced,
                // Added by the first step and gone by the last: as before the save.
                (Some(PluginReload::Added), PluginReload::Removed) => PluginReload::Unchanged,
                (_, now) => now,
            };
            plugins.insert(name, combined);
        }
        ReloadEntry {
            plugins,
            session_reloaded: self.session_reloaded || later.session_reloaded,
            ..later
        }
    }
}

fn ms(start: Instant) -> f64 {
    start.elapsed().as_secs_f64() * 1000.0
}

/// A deleted file cannot be canonicalized; its parent usually can.
fn canonical_or_parent(path: &Path) -> PathBuf {
    if let Ok(c) = path.canonicalize() {
        return c;
    }
    let mut missing = Vec::new();
    let mut current = path.to_path_buf();
    while let Some(parent) = current.parent().map(Path::to_path_buf) {
        if let Some(name) = current.file_name() {
            missing.push(name.to_os_string());
        }
        if let Ok(c) = parent.canonicalize() {
            let mut out = c;
            for part in missing.iter().rev() {
                out.push(part);
            }
            return out;
        }
        current = parent;
    }
    path.to_path_buf()
}

/// Debounced file events of a plugins folder and a session file.
pub struct FolderWatcher {
    debouncer: notify_debouncer_full::Debouncer<
        notify_debouncer_full::notify::RecommendedWatcher,
        notify_debouncer_full::RecommendedCache,
    >,
    events: Receiver<DebounceEventResult>,
    debounce: Duration,
    plugins_dir: PathBuf,
    /// The session file's folder, when it lies outside the plugins folder.
    session_dir: Option<PathBuf>,
    /// Whether the plugins folder existed at the last batch (a deleted folder loses its watch;
    /// the parent's watch sees it come back, and the folder is watched again).
    present: bool,
}

/// A batch of changed paths with the time of its first event.
pub struct Batch {
    pub paths: Vec<PathBuf>,
    pub first_event: Instant,
    /// What happened to the watch itself (the plugins folder deleted, or back and watched again).
    pub note: Option<String>,
    /// The plugins folder came back: reload everything rather than trust the batch's paths.
    pub rescan: bool,
}

impl FolderWatcher {
    /// How long a folder stays quiet before its changes are reloaded: the steps of one editor
    /// save (write-temp-then-rename, truncate-then-write) land within it, and a step that still
    /// comes later is covered by [`LiveStudio::GRACE`]. Every save waits for it. On a loaded
    /// machine 5 ms can split one save into two batches; the second then finds every folder
    /// holding the bytes the first loaded and reloads nothing (see [`crate::fingerprint`]), so
    /// it no longer clears the first reload's change marks (which is why it was 10 ms before).
    pub const SETTLE: Duration = Duration::from_millis(5);

    /// Watches `plugins_dir` recursively (and the session file's folder).
    pub fn new(
        plugins_dir: &Path,
        session: Option<&Path>,
        debounce: Duration,
    ) -> notify_debouncer_full::notify::Result<FolderWatcher> {
        let (tx, events) = mpsc::channel();
        let mut debouncer = new_debouncer(debounce, None, tx)?;
        // Events name paths the way the watch was given: watch canonical paths, compare canonical.
        let plugins_dir = &plugins_dir
            .canonicalize()
            .unwrap_or_else(|_| plugins_dir.to_path_buf());
        debouncer.watch(plugins_dir, RecursiveMode::Recursive)?;
        // The parent sees the plugins folder itself deleted and created again.
        if let Some(parent) = plugins_dir
            .canonicalize()
            .ok()
            .and_then(|p| p.parent().map(Path::to_path_buf))
        {
            let _ = debouncer.watch(&parent, RecursiveMode::NonRecursive);
        }
        let mut session_dir = None;
        if let Some(dir) = session
            .and_then(Path::parent)
            .filter(|d| !d.as_os_str().is_empty())
            && !dir
                .canonicalize()
                .ok()
                .zip(plugins_dir.canonicalize().ok())
                .is_some_and(|(d, p)| d.starts_with(p))
        {
            let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
            debouncer.watch(&dir, RecursiveMode::NonRecursive)?;
            session_dir = Some(dir);
        }
        Ok(FolderWatcher {
            debouncer,
            events,
            debounce,
            plugins_dir: plugins_dir.clone(),
            session_dir,
            present: true,
        })
    }

    /// Notices the plugins folder going away or coming back, re-arming its watch.
    fn check_folder(&mut self) -> Option<String> {
        let exists = self.plugins_dir.is_dir();
        if exists == self.present {
            return None;
        }
        self.present = exists;
        let shown = self.plugins_dir.display();
        if exists {
            match self
                .debouncer
                .watch(&self.plugins_dir, RecursiveMode::Recursive)
            {
                Ok(()) => Some(format!("{shown} is back; watching it again")),
                Err(e) => Some(format!("{shown} is back, but it cannot be watched: {e}")),
            }
        } else {
            Some(format!(
                "{shown} was deleted; waiting for it to be created again"
            ))
        }
    }

    /// Waits for the next batch that changed something (None on timeout or when the watcher
    /// stopped). Opening or reading a file is not a change; closing it after a write is.
    pub fn next(&mut self, timeout: Duration) -> Option<Batch> {
        let deadline = Instant::now() + timeout;
        let mut changes = Vec::new();
        // The parent folder is watched only for the plugins folder itself: its other entries are
        // not the studio's business.
        let relevant = |e: &notify_debouncer_full::DebouncedEvent| {
            is_change(&e.kind)
                && e.event.paths.iter().any(|p| {
                    p.starts_with(&self.plugins_dir)
                        || self
                            .session_dir
                            .as_ref()
                            .is_some_and(|d| p.parent() == Some(d.as_path()))
                })
        };
        while changes.is_empty() {
            let left = deadline.saturating_duration_since(Instant::now());
            let events = self.events.recv_timeout(left).ok()?.unwrap_or_default();
            changes.extend(events.into_iter().filter(relevant));
        }
        // On a busy machine the debouncer can split one burst (its thread saw the queue late);
        // batches that follow within half a debounce window are the same burst.
        while let Ok(more) = self.events.recv_timeout(self.debounce / 2) {
            changes.extend(more.unwrap_or_default().into_iter().filter(relevant));
        }
        let first_event = changes
            .iter()
            .map(|e| e.time)
            .min()
            .unwrap_or_else(Instant::now);
        let mut paths: Vec<PathBuf> = changes.into_iter().flat_map(|e| e.event.paths).collect();
        paths.sort();
        paths.dedup();
        let note = self.check_folder();
        let rescan = note.is_some() && self.present;
        Some(Batch {
            paths,
            first_event,
            note,
            rescan,
        })
    }
}

fn is_change(kind: &notify_debouncer_full::notify::EventKind) -> bool {
    use notify_debouncer_full::notify::EventKind;
    use notify_debouncer_full::notify::event::{AccessKind, AccessMode};
    match kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        EventKind::Access(_) | EventKind::Other => false,
        _ => true,
    }
}

/// The undo entries of a branch that keeps the first `steps` undo steps of the playtest (its
/// played turns and compactions): the session edits before them come along.
fn undo_prefix(undo: &[UndoEntry], steps: usize) -> Vec<UndoEntry> {
    let mut kept = 0;
    undo.iter()
        .take_while(|u| {
            if matches!(u, UndoEntry::SessionEdit { .. }) {
                return true;
            }
            kept += 1;
            kept <= steps
        })
        .cloned()
        .collect()
}

impl LiveStudio {
    /// The Cache panel: the turns played in the studio (with the usage a real backend reported)
    /// and the next turn, forecast for `model` (default: the story model's name, else
    /// [`forecast::DEFAULT_MODEL`]). A model the facts do not know is refused with the known ones, as
    /// `covel forecast` refuses it: never silently priced as another. Token counts are
    /// remembered across calls.
    pub fn forecast(
        &mut self,
        model: Option<&str>,
        options: &forecast::ForecastOptions,
    ) -> Result<forecast::Forecast, String> {
        let facts = crate::facts::ModelFacts::embedded().map_err(|e| e.to_string())?;
        let story = &self.workspace().session.models.story;
        let name = model
            .filter(|m| !m.trim().is_empty())
            .map(str::to_string)
            .or_else(|| story.model.clone())
            .unwrap_or_else(|| forecast::DEFAULT_MODEL.into());
        let profile = facts.profile(&name).map_err(|e| e.to_string())?;
        let succeeded: Vec<_> = self
            .turns
            .iter()
            .filter(|t| t.error.is_none())
            .map(|t| {
                (
                    t.turn_id.clone(),
                    t.player_message.clone(),
                    forecast::usage_of_assembled_request(&t.steps),
                    t.reply.as_ref().map(|r| r.text.clone()),
                )
            })
            .collect();
        let mut played = Vec::with_capacity(succeeded.len() + 1);
        for (turn_id, say, usage, reply) in succeeded {
            if let Some(prompt) = self.turn_prompt(&turn_id) {
                played.push(forecast::PlayedTurn {
                    turn_id,
                    say,
                    preview: prompt.preview,
                    usage,
                    reply,
                    with_newer_plugins: prompt.with_newer_plugins,
                });
            }
        }
        let next = if self.target == crate::RuntimeTarget::Story {
            self.preview.clone()
        } else {
            self.workspace().preview(&crate::RuntimeTarget::Story)
        };
        // The message the preview assembled the next turn for (never empty).
        let say = self.workspace().previewed_player_message();
        played.push(forecast::PlayedTurn {
            turn_id: next.turn_id.clone(),
            say,
            preview: next,
            usage: None,
            reply: None,
            with_newer_plugins: false,
        });
        Ok(forecast::forecast(
            &played,
            &profile,
            options,
            &self.workspace().counter,
        ))
    }
}
