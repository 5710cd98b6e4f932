//! Playtesting: a turn takes the player's message, runs world context, history transforms and
//! segments, assembles the prompt, asks the story model, appends the exchange, compacts when
//! over the threshold and re-projects the slots. Turns can be undone back to the session file's
//! state, and the played session saved as a new session file (atomically).

use crate::compaction::{CompactionOptions, CompactionRun};
use crate::models::{Backend, Reply};
use crate::preview::{Preview, RuntimeTarget};
use crate::slots::{SlotChange, SlotHost, Trigger};
use crate::turn::record::LoopStep;
use crate::turn::{LoopInput, LoopOutcome, StoryModel, TurnPlugins};
use crate::workspace::Workspace;
use covel_kernel::compaction::FailureCounter;
use covel_kernel::contract::PointId;
use covel_kernel::session::{History, ScriptedReply, Session};
use serde::Serialize;
use serde_json::json;

use std::path::{Path, PathBuf};
use std::sync::Arc;

/// One played turn.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnReport {
    pub turn_id: String,
    pub player_message: String,
    /// The preview the model was asked with.
    pub preview: Preview,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reply: Option<Reply>,
    /// Why the turn failed (world context, model error); nothing was appended then.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub compaction: CompactionRun,
    /// Domain events the story emitted during the turn (`<event topic="…">{…}</event>` in the
    /// reply), previewed on the slots that list their topic.
    pub events: Vec<serde_json::Value>,
    pub slot_changes: Vec<SlotChange>,
    /// The turn's loop in order: hooks, model calls, tool calls, events and commits.
    pub steps: Vec<LoopStep>,
    /// Forms the turn's tools asked the player to fill.
    pub forms: Vec<serde_json::Value>,
}

/// A played turn whose exchange is appended and whose compaction (when due) is still to run and
/// apply (see [`Playtest::append_reply`]).
pub struct AppendedTurn {
    /// The turn's report, but for its compaction and the slots of its end.
    report: TurnReport,
    /// Begun right after the exchange was appended.
    compaction: BegunCompaction,
    /// The turn's plugins (`PostCompaction` runs when the compaction is concluded).
    plugins: Arc<TurnPlugins>,
}

impl AppendedTurn {
    pub fn turn_id(&self) -> &str {
        &self.report.turn_id
    }

    /// The turn's report as it stands: without its compaction and its end's slot changes.
    pub fn report(&self) -> &TurnReport {
        &self.report
    }

    /// Whether compaction is due after this turn (its provider runs in [`AppendedTurn::compact`]).
    pub fn compaction_due(&self) -> bool {
        self.compaction.pending.is_ok()
    }

    /// Runs the compaction provider when compaction is due; needs no access to the playtest.
    pub fn compact(&mut self) {
        self.compaction.call();
    }
}

/// A "compact now" between its input and its verdict (see [`Playtest::begin_compact_now`]).
pub struct ForcedCompaction {
    compaction: BegunCompaction,
    /// What undoing it needs, but for the history it replaces.
    undo: TurnUndo,
}

impl ForcedCompaction {
    /// Runs the compaction provider; needs no access to the playtest.
    pub fn compact(&mut self) {
        self.compaction.call();
    }
}

/// A compaction begun from the session at one version (see [`Workspace::begin_compaction`]):
/// pending, or already finished when nothing was due. [`Playtest::conclude_compaction`] applies
/// it only to that version.
struct BegunCompaction {
    pending: Result<crate::compaction::PendingCompaction, Box<CompactionRun>>,
    /// The session's version its input was taken from.
    session_version: u64,
}

impl BegunCompaction {
    /// Runs the provider when compaction is due; needs no access to the playtest.
    fn call(&mut self) {
        if let Ok(pending) = &mut self.pending {
            pending.call();
        }
    }
}

/// What the studio keeps of a played turn: what the UI shows and what saves need. A turn's
/// preview holds the whole history (request bodies, the history transforms' trace), so keeping
/// one per turn would make a playtest's memory grow with the square of its turns: it is not
/// kept here (see [`Playtest::session_before`] to recompute it).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnRecord {
    pub turn_id: String,
    pub player_message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reply: Option<Reply>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The compaction run when compaction was due, without its input (the whole history).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compaction: Option<CompactionRun>,
    pub events: Vec<serde_json::Value>,
    pub slot_changes: Vec<SlotChange>,
    pub steps: Vec<LoopStep>,
    pub forms: Vec<serde_json::Value>,
    /// What the turn's prompt said besides the history, as sent (see [`SentPart`]).
    pub sent: Vec<SentPart>,
    /// How many plugin reloads the studio had seen when the turn was played (a recomputed
    /// prompt of this turn uses the plugins as they are now; see `LiveStudio::turn_prompt`).
    #[serde(skip)]
    pub plugin_reloads: u64,
}

impl TurnRecord {
    /// The record of a played turn seen after `plugin_reloads` reloads, sharing with the turn
    /// before it (`earlier`) what its prompt said the same way ([`SentPart::share_with`]).
    pub fn after(
        report: &TurnReport,
        plugin_reloads: u64,
        earlier: Option<&TurnRecord>,
    ) -> TurnRecord {
        let mut record = TurnRecord {
            plugin_reloads,
            ..TurnRecord::from(report)
        };
        if let Some(earlier) = earlier {
            SentPart::share_with(&mut record.sent, &earlier.sent);
        }
        record
    }
}

impl From<&TurnReport> for TurnRecord {
    fn from(turn: &TurnReport) -> TurnRecord {
        let compaction = turn.compaction.triggered.then(|| CompactionRun {
            input: serde_json::Value::Null,
            applied: None,
            ..turn.compaction.clone()
        });
        TurnRecord {
            turn_id: turn.turn_id.clone(),
            player_message: turn.player_message.clone(),
            reply: turn.reply.clone(),
            error: turn.error.clone(),
            compaction,
            events: turn.events.clone(),
            slot_changes: turn.slot_changes.clone(),
            steps: turn.steps.clone(),
            forms: turn.forms.clone(),
            sent: SentPart::of(&turn.preview),
            plugin_reloads: 0,
        }
    }
}

/// One part of what a played turn's prompt said, kept with the turn as it was sent: each
/// included segment's text and every message that is not the history's own (the player's
/// input, summaries). Turns of two branches (a replay after a plugin change) are compared on
/// these, since an older turn's whole prompt is not kept and recomputing it would use the
/// plugins as they are now. Small: it grows with the plugins' output, not with the history.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SentPart {
    /// `segment story-director/tone`, `player input`, `summary s1`.
    pub key: std::sync::Arc<str>,
    pub text: std::sync::Arc<str>,
}

impl SentPart {
    /// The parts of a turn's prompt (a segment that appears twice gets a numbered key).
    pub fn of(preview: &Preview) -> Vec<SentPart> {
        use covel_kernel::prompt::Origin;
        let segments = preview
            .segments
            .iter()
            .filter(|s| s.included)
            .map(|s| (format!("segment {}/{}", s.plugin, s.id), s.content.clone()));
        let messages = preview
            .prompt
            .messages
            .iter()
            .filter(|m| matches!(m.origin, Origin::PlayerInput | Origin::Summary { .. }))
            .map(|m| (m.origin.name(), std::sync::Arc::from(m.content.as_str())));
        let mut seen: std::collections::HashMap<String, usize> = Default::default();
        segments
            .chain(messages)
            .map(|(key, text)| {
                let n = seen.entry(key.clone()).or_default();
                *n += 1;
                let key = if *n == 1 { key } else { format!("{key} ({n})") };
                SentPart {
                    key: key.into(),
                    text,
                }
            })
            .collect()
    }

    /// Keeps once what did not change since `earlier` (the turn before): a part whose key and
    /// text are the same takes `earlier`'s key and text instead of copies of its own. A
    /// playtest's turns keep their parts, and most segments say the same every turn: at 50
    /// plugins each turn kept ≈ 40 KB of copies.
    pub fn share_with(parts: &mut [SentPart], earlier: &[SentPart]) {
        let earlier: std::collections::HashMap<&str, &SentPart> =
            earlier.iter().map(|p| (&*p.key, p)).collect();
        for part in parts {
            if let Some(same) = earlier.get(&*part.key) {
                part.key = std::sync::Arc::clone(&same.key);
                if same.text == part.text {
                    part.text = std::sync::Arc::clone(&same.text);
                }
            }
        }
    }
}

/// What undoing one played turn (or one forced compaction) needs. Not a copy of the session: a
/// turn appends two messages, and only an applied compaction rewrites the history (then the
/// history before it is kept).
#[derive(Debug, Clone)]
struct TurnUndo {
    /// The played turn; None for a "compact now" between turns.
    turn_id: Option<String>,
    next_message: String,
    messages: usize,
    summaries: usize,
    rewritten: Option<History>,
    /// The plugin data before the turn's tools wrote to it.
    plugin_data: Option<Vec<covel_kernel::context::DataRow>>,
}

impl TurnUndo {
    fn apply(&self, session: &mut Session) {
        session.next_message.clone_from(&self.next_message);
        if let Some(rows) = &self.plugin_data {
            session.plugin_data.clone_from(rows);
        }
        // The history a compaction replaced still holds the turn's own two messages.
        if let Some(history) = &self.rewritten {
            session.history.clone_from(history);
        }
        session.history.messages.truncate(self.messages);
        session.history.summaries.truncate(self.summaries);
    }
}

/// Takes `<event topic="t">{json}</event>` tags out of a reply: the narration without them, and
/// the events. (The scripted model and prompt-following real models can emit events this way.)
pub fn extract_events(reply: &str) -> (String, Vec<(String, serde_json::Value)>) {
    let mut text = String::new();
    let mut events = Vec::new();
    let mut rest = reply;
    while let Some(start) = rest.find("<event topic=\"") {
        text.push_str(&rest[..start]);
        let after = &rest[start + 14..];
        let parsed = after.split_once("\">").and_then(|(topic, tail)| {
            tail.split_once("</event>")
                .map(|(body, tail)| (topic, body, tail))
        });
        match parsed {
            Some((topic, body, tail)) => {
                let data = serde_json::from_str(body.trim())
                    .unwrap_or_else(|_| json!({"text": body.trim()}));
                events.push((topic.to_string(), data));
                rest = tail;
            }
            None => {
                text.push_str(&rest[start..]);
                rest = "";
            }
        }
    }
    text.push_str(rest);
    (
        text.split_whitespace().collect::<Vec<_>>().join(" "),
        events,
    )
}

/// A new session version, unique in the process: a turn prepared by one playtest can never be
/// appended by another (a folder opened again while a model answered).
fn next_session_version() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// A turn whose prompt is built and whose story model is still to answer (see
/// [`Playtest::prepare_turn`]). It owns what its loop needs (the active plugins, the model), so
/// no lock is held while the model answers and the plugins' tools and hooks run.
pub struct TurnInFlight {
    turn_id: String,
    message: String,
    /// The preview the model is asked with.
    preview: Preview,
    plugins: Arc<TurnPlugins>,
    model: StoryModel,
    characters: serde_json::Value,
    turn_number: u64,
    session_start: bool,
    session_version: u64,
}

impl TurnInFlight {
    pub fn turn_id(&self) -> &str {
        &self.turn_id
    }

    /// The preview the model is asked with.
    pub fn preview(&self) -> &Preview {
        &self.preview
    }

    /// Runs the turn's loop (hooks, the story model, the tools it calls); returns as soon as
    /// `cancel` is set, also while a model request is in flight.
    pub fn ask(&self, cancel: &std::sync::atomic::AtomicBool) -> LoopOutcome {
        self.ask_streaming(cancel, None)
    }

    /// [`TurnInFlight::ask`] with a real backend's replies streamed to `on_text` as they arrive.
    pub fn ask_streaming(
        &self,
        cancel: &std::sync::atomic::AtomicBool,
        on_text: Option<&dyn Fn(&str)>,
    ) -> LoopOutcome {
        let input = LoopInput {
            player_message: &self.message,
            anthropic: &self.preview.prompt.requests.anthropic,
            openai: &self.preview.prompt.requests.openai,
            characters: self.characters.clone(),
            turn_number: self.turn_number,
            session_start: self.session_start,
            on_text,
        };
        self.plugins.play(&input, &self.model, cancel)
    }

    /// The report of this turn failing: nothing was appended.
    fn failed(self, error: String, steps: Vec<LoopStep>, workspace: &Workspace) -> TurnReport {
        TurnReport {
            turn_id: self.turn_id,
            player_message: self.message,
            compaction: CompactionRun::not_run(workspace.windows()),
            preview: self.preview,
            reply: None,
            error: Some(error),
            events: Vec::new(),
            slot_changes: Vec::new(),
            steps,
            forms: Vec::new(),
        }
    }
}

/// A line of play that is not being played: the state a [`Playtest`] swaps in and out when an
/// author forks a turn or switches between branches (see [`Playtest::swap_line`]).
#[derive(Debug)]
pub struct PlayLine {
    session: Session,
    history: Vec<TurnUndo>,
    /// None until the line is first played (its slots are projected then).
    slots: Option<SlotHost>,
    failures: FailureCounter,
    session_started: bool,
    pending_form: Option<serde_json::Value>,
    /// Where the scripted story model is in its script (the line's played turns).
    scripted_turns: usize,
}

impl PlayLine {
    /// The session as it was before the line's played turn `turn_id` (see
    /// [`Playtest::session_before`]).
    pub fn session_before(&self, turn_id: &str) -> Option<Session> {
        session_before(&self.session, &self.history, turn_id)
    }

    /// The line's session as it stands (after its last turn).
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// How many undo steps (played turns and compactions) the line has.
    pub fn undo_steps(&self) -> usize {
        self.history.len()
    }
}

/// `session` as it was before `turn_id`, undoing the turns from it on.
fn session_before(session: &Session, history: &[TurnUndo], turn_id: &str) -> Option<Session> {
    let index = history
        .iter()
        .rposition(|u| u.turn_id.as_deref() == Some(turn_id))?;
    let mut session = session.clone();
    for undo in history[index..].iter().rev() {
        undo.apply(&mut session);
    }
    Some(session)
}

/// A playtest over a workspace.
pub struct Playtest {
    pub workspace: Workspace,
    story: Arc<Backend>,
    /// Changes with the session's history (turns appended, compactions, undo, restarts): a
    /// reply is appended only to the version its prompt was built from.
    session_version: u64,
    /// How to go back before each played turn (for undo).
    history: Vec<TurnUndo>,
    pub failures: FailureCounter,
    pub slots: SlotHost,
    /// Whether `SessionStart` ran (on the playtest's first turn).
    session_started: bool,
    /// The form the last played turn asks the player to fill.
    pending_form: Option<serde_json::Value>,
}

impl Playtest {
    pub fn new(workspace: Workspace) -> Playtest {
        let story = Backend::for_session(
            &workspace.session.models.story,
            workspace.session_path.as_deref(),
        );
        let mut slots = SlotHost::default();
        workspace.apply_slots(&mut slots, &Trigger::All);
        Playtest {
            workspace,
            story: Arc::new(story),
            session_version: next_session_version(),
            history: Vec::new(),
            failures: FailureCounter::default(),
            slots,
            session_started: false,
            pending_form: None,
        }
    }

    /// What the player says in a test session's scripted turn: its `say`, or the narrative of
    /// the pending form filled with its `answer`; `Err` says why there is nothing to say.
    pub fn scripted_message(
        &self,
        turn: &covel_kernel::test_session::ScriptedTurn,
    ) -> Result<String, String> {
        match &turn.answer {
            Some(values) => self.answer_form(values).map_err(|problems| {
                let why: Vec<String> = problems
                    .iter()
                    .map(|p| match &p.field {
                        Some(field) => format!("{field}: {}", p.message),
                        None => p.message.clone(),
                    })
                    .collect();
                format!("the form's answer was refused: {}", why.join("; "))
            }),
            None if turn.say.trim().is_empty() => {
                Err("the turn says nothing: give it `say` (or `answer` for a form)".into())
            }
            None => Ok(turn.say.clone()),
        }
    }

    /// The form the last played turn asks the player to fill (`{pluginId, interaction}`).
    pub fn pending_form(&self) -> Option<&serde_json::Value> {
        self.pending_form.as_ref()
    }

    /// Answers the pending form as the player would: the values are checked against its fields
    /// and the plugin's form validator; `Ok` is what the player says (the form's narrative
    /// filled in), to play as the next turn.
    pub fn answer_form(
        &self,
        values: &serde_json::Map<String, serde_json::Value>,
    ) -> Result<String, Vec<crate::turn::forms::FormProblem>> {
        let Some(form) = &self.pending_form else {
            return Err(vec![crate::turn::forms::FormProblem {
                field: None,
                message: "no form is waiting for an answer".into(),
            }]);
        };
        let interaction = &form["interaction"];
        let validator = interaction["validation"]["name"].as_str().and_then(|name| {
            let plugin = self
                .workspace
                .active_plugins()
                .find(|p| p.registrations.forms.iter().any(|f| f == name))?;
            let invoker: Arc<dyn covel_kernel::runner::Invoker> =
                Arc::clone(plugin.instance.as_ref()?) as _;
            let call = covel_kernel::runner::HandlerCall {
                key: format!("form:{name}"),
                input: json!({"values": values, "data": interaction["validation"]["data"]}),
                context: self.workspace.execution(None),
                timeout: crate::turn::forms::VALIDATOR_TIMEOUT,
                ctx_plugin_id: plugin.name.clone(),
            };
            Some((invoker, call))
        });
        crate::turn::forms::answer(
            form,
            values,
            validator.as_ref().map(|(i, c)| (i, c.clone())),
        )
    }

    /// Number of turns played (and not undone).
    pub fn turns(&self) -> usize {
        self.history.iter().filter(|u| u.turn_id.is_some()).count()
    }

    /// Plays one turn.
    pub fn play(&mut self, message: &str) -> TurnReport {
        self.play_cancellable(message, &std::sync::atomic::AtomicBool::new(false))
    }

    /// Plays one turn unless `cancel` is set before the reply is appended: a cancelled turn
    /// leaves the session as it was. The flag is watched during the story model's call too, so
    /// cancelling a turn that waits for a slow model returns at once (the abandoned request's
    /// answer is discarded). Compaction after an appended reply is part of the committed turn.
    pub fn play_cancellable(
        &mut self,
        message: &str,
        cancel: &std::sync::atomic::AtomicBool,
    ) -> TurnReport {
        self.play_turn(message, cancel, None)
    }

    /// Plays one turn whose story reply is given (a test session's scripted turn): the story
    /// model is not asked.
    pub fn play_scripted(&mut self, message: &str, reply: Option<&ScriptedReply>) -> TurnReport {
        self.play_turn(message, &std::sync::atomic::AtomicBool::new(false), reply)
    }

    /// The story model's backend (its HTTP exchanges are what `covel play --record` keeps).
    pub fn story_backend(&self) -> &Backend {
        &self.story
    }

    /// The session as it was before the played turn `turn_id` (None when no such turn is in
    /// the undo history): what recomputes an older turn's preview on demand.
    pub fn session_before(&self, turn_id: &str) -> Option<Session> {
        session_before(&self.workspace.session, &self.history, turn_id)
    }

    /// A new line of play that starts from the state right after the played turn `turn_id`:
    /// its history, plugin data and undo history up to that turn (None when no such turn is in
    /// the undo history). Its slots are projected again when it becomes the active line, as
    /// undo does.
    pub fn fork_after(&self, turn_id: &str) -> Option<PlayLine> {
        let index = self
            .history
            .iter()
            .rposition(|u| u.turn_id.as_deref() == Some(turn_id))?;
        let mut session = self.workspace.session.clone();
        for undo in self.history[index + 1..].iter().rev() {
            undo.apply(&mut session);
        }
        let history = self.history[..=index].to_vec();
        Some(PlayLine {
            session,
            scripted_turns: history.iter().filter(|u| u.turn_id.is_some()).count(),
            history,
            slots: None,
            failures: FailureCounter::default(),
            session_started: true,
            pending_form: None,
        })
    }

    /// A new line of play from the state before the first played turn (the session as the
    /// playtest started, with its plugin data), for replaying the player's messages.
    pub fn fork_at_start(&self) -> PlayLine {
        let mut session = self.workspace.session.clone();
        for undo in self.history.iter().rev() {
            undo.apply(&mut session);
        }
        PlayLine {
            session,
            history: Vec::new(),
            slots: None,
            failures: FailureCounter::default(),
            session_started: false,
            pending_form: None,
            scripted_turns: 0,
        }
    }

    /// Makes `line` the line being played and returns the one that was (to switch back to it
    /// later). A turn in flight on the old line appends nothing (the session version changes).
    pub fn swap_line(&mut self, mut line: PlayLine) -> PlayLine {
        std::mem::swap(&mut self.workspace.session, &mut line.session);
        std::mem::swap(&mut self.history, &mut line.history);
        std::mem::swap(&mut self.failures, &mut line.failures);
        std::mem::swap(&mut self.session_started, &mut line.session_started);
        std::mem::swap(&mut self.pending_form, &mut line.pending_form);
        let incoming_slots = line.slots.take();
        let outgoing_slots = match incoming_slots {
            Some(slots) => std::mem::replace(&mut self.slots, slots),
            None => {
                let mut projected = SlotHost::default();
                self.workspace.apply_slots(&mut projected, &Trigger::All);
                std::mem::replace(&mut self.slots, projected)
            }
        };
        line.slots = Some(outgoing_slots);
        line.scripted_turns = self.story.replace_scripted_position(line.scripted_turns);
        self.session_version = next_session_version();
        line
    }

    /// Turn ids of the line being played, oldest first.
    pub fn played_turn_ids(&self) -> impl Iterator<Item = &str> {
        self.history.iter().filter_map(|u| u.turn_id.as_deref())
    }

    fn play_turn(
        &mut self,
        message: &str,
        cancel: &std::sync::atomic::AtomicBool,
        scripted: Option<&ScriptedReply>,
    ) -> TurnReport {
        match self.prepare_turn(message, scripted) {
            Ok(turn) => {
                let answer = turn.ask(cancel);
                self.finish_turn(turn, answer, cancel)
            }
            Err(failed) => *failed,
        }
    }

    /// The first step of a turn: the prompt for `message` (the session is left as it is). A
    /// turn whose prompt failed is answered at once (`Err`, nothing to ask). Asking the model
    /// ([`TurnInFlight::ask`]) needs no access to the playtest, so a studio can release its lock
    /// while a slow model answers and let reloads run meanwhile.
    pub fn prepare_turn(
        &mut self,
        message: &str,
        scripted: Option<&ScriptedReply>,
    ) -> Result<TurnInFlight, Box<TurnReport>> {
        let session = &mut self.workspace.session;
        let before_message = std::mem::replace(&mut session.next_message, message.to_string());
        let preview = self.workspace.preview(&RuntimeTarget::Story);
        self.workspace.session.next_message = before_message;
        // The prompt must be what the providers said: a history transform or segment run that
        // failed as a whole fails the turn (never a prompt silently without its history).
        let prompt_failure = preview
            .errors
            .iter()
            .find(|e| {
                e.turn == "this-turn"
                    && matches!(
                        e.point,
                        PointId::PromptHistoryTransform | PointId::PromptSegment
                    )
            })
            .map(|e| format!("{}: {}", e.point, e.message));
        let turn_number = self.turns() as u64 + 1;
        // A test's scripted reply, else the scripted backend's next turn, else the backend.
        let model = match scripted {
            Some(reply) => StoryModel::Scripted {
                calls: crate::models::scripted_calls_numbered(
                    std::slice::from_ref(reply),
                    0,
                    crate::models::turn_number_of(&preview.turn_id).unwrap_or(1),
                    message,
                ),
                turn: turn_number,
            },
            None => match self.story.scripted_turn(message, &preview.turn_id) {
                Some(calls) => StoryModel::Scripted {
                    calls,
                    turn: turn_number,
                },
                None => StoryModel::Backend(Arc::clone(&self.story)),
            },
        };
        let characters = serde_json::Value::Array(
            self.workspace
                .session
                .world
                .characters
                .iter()
                .map(|c| json!({"id": c["id"], "name": c["name"], "type": c["type"], "description": c["description"]}))
                .collect(),
        );
        let turn = TurnInFlight {
            plugins: Arc::new(self.workspace.turn_plugins(&preview.turn_id)),
            turn_id: preview.turn_id.clone(),
            message: message.to_string(),
            preview,
            model,
            characters,
            turn_number,
            session_start: !self.session_started,
            session_version: self.session_version,
        };
        // `session.world-context@1` failing (it is `fail-turn`) fails the turn: nothing is
        // appended.
        match turn.preview.world_context.error.clone().or(prompt_failure) {
            Some(error) => Err(Box::new(turn.failed(
                format!("the turn failed: {error}"),
                Vec::new(),
                &self.workspace,
            ))),
            None => Ok(turn),
        }
    }

    /// The last step of a turn: appends the exchange when the model answered, the turn was not
    /// cancelled and the session is still the one the prompt was built from (an undo, a session
    /// edit or another turn in between would put the reply after the wrong history: then
    /// nothing is appended and the report says why), then compacts when over the threshold.
    /// Plugin reloads in between do not matter: the reply answers the prompt that was sent,
    /// which the report keeps.
    pub fn finish_turn(
        &mut self,
        turn: TurnInFlight,
        answer: LoopOutcome,
        cancel: &std::sync::atomic::AtomicBool,
    ) -> TurnReport {
        match self.append_reply(turn, answer, cancel) {
            Ok(mut appended) => {
                appended.compact();
                self.complete_turn(appended)
            }
            Err(failed) => *failed,
        }
    }

    /// The appending part of [`Playtest::finish_turn`]: the exchange joins the history (and the
    /// undo history) and the compaction's input is taken. `Err` is the turn's report when nothing
    /// was appended. The compaction provider ([`AppendedTurn::compact`]) needs no access to the
    /// playtest, so a studio can release its lock while it waits for the fast model.
    pub fn append_reply(
        &mut self,
        turn: TurnInFlight,
        answer: LoopOutcome,
        cancel: &std::sync::atomic::AtomicBool,
    ) -> Result<AppendedTurn, Box<TurnReport>> {
        const CANCELLED: &str = "the turn was cancelled; nothing was appended";
        // The playtest's session started with its first turn's loop, whatever became of it.
        self.session_started = true;
        let LoopOutcome {
            reply,
            mut steps,
            mut effects,
            error,
            cancelled,
        } = answer;
        if cancelled || cancel.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(Box::new(turn.failed(
                CANCELLED.into(),
                steps,
                &self.workspace,
            )));
        }
        let mut reply: Reply = match (reply, error) {
            (Some(reply), None) => reply,
            (_, error) => {
                let error = error.unwrap_or_else(|| "the turn ended without a reply".into());
                return Err(Box::new(turn.failed(error, steps, &self.workspace)));
            }
        };
        if turn.session_version != self.session_version {
            let error = "the session changed while the story model answered (an undo, a session \
                         edit or another turn); nothing was appended: play the turn again";
            return Err(Box::new(turn.failed(error.into(), steps, &self.workspace)));
        }
        let TurnInFlight {
            turn_id,
            message,
            preview,
            plugins,
            ..
        } = turn;
        // The story's own `<event>` tags join the events its tools emitted.
        let (narration, tagged) = extract_events(&reply.text);
        reply.text = narration;
        effects
            .events
            .extend(tagged.into_iter().map(|(topic, data)| (topic, data, None)));
        let plugin_data_before = self.workspace.session.plugin_data.clone();
        let committed = crate::turn::commit::commit(
            &mut self.workspace,
            &mut self.slots,
            &plugins,
            &turn_id,
            effects,
            &mut steps,
        );
        self.pending_form = crate::turn::forms::pending(&committed.forms).cloned();
        let session = &mut self.workspace.session;
        let order = session.history.messages.len();
        let undo = TurnUndo {
            turn_id: Some(turn_id.clone()),
            next_message: std::mem::take(&mut session.next_message),
            messages: order,
            summaries: session.history.summaries.len(),
            rewritten: None,
            plugin_data: committed.wrote.then_some(plugin_data_before),
        };
        session
            .history
            .messages
            .extend(covel_kernel::session_history::exchange(
                &session.id,
                &turn_id,
                &message,
                &reply.text,
                order,
            ));
        self.session_version = next_session_version();
        self.history.push(undo);
        // The system prompt plus the turn context is what the compaction estimate counts.
        let system = preview.prompt.system_and_turn_context();
        let pending = self.workspace.begin_compaction(
            &turn_id,
            &system,
            &CompactionOptions::default(),
            &mut self.failures,
        );
        // A due compaction asks `PreCompaction` first; a rejection skips it for this turn.
        let message_count = self.workspace.session.history.messages.len();
        let pending = match pending {
            Ok(due) => {
                let asked = plugins.dispatch(
                    "PreCompaction",
                    json!({"messageCount": message_count}),
                    crate::turn::STORY_RUNTIME,
                    &mut steps,
                );
                match asked.rejected {
                    Some(reason) => {
                        let mut skipped = due.abandoned();
                        skipped.not_compacted_because =
                            Some(format!("a PreCompaction hook rejected it: {reason}"));
                        Err(Box::new(skipped))
                    }
                    None => Ok(due),
                }
            }
            done => done,
        };
        let compaction = BegunCompaction {
            pending,
            session_version: self.session_version,
        };
        Ok(AppendedTurn {
            report: TurnReport {
                turn_id,
                player_message: message,
                preview,
                reply: Some(reply),
                error: None,
                compaction: CompactionRun::not_run(self.workspace.windows()),
                events: committed.events,
                slot_changes: committed.slot_changes,
                steps,
                forms: committed.forms,
            },
            compaction,
            plugins,
        })
    }

    /// The end of a played turn: the compaction's verdict applied when the session is still the
    /// one the turn appended to (otherwise the run says why nothing was applied), then the
    /// slots re-projected for the turn's end.
    pub fn complete_turn(&mut self, appended: AppendedTurn) -> TurnReport {
        let AppendedTurn {
            mut report,
            compaction,
            plugins,
        } = appended;
        let current = compaction.session_version == self.session_version;
        let ran = compaction.pending.is_ok();
        report.compaction = self.conclude_compaction(compaction);
        if ran {
            plugins.dispatch(
                "PostCompaction",
                json!({"compacted": report.compaction.replaced.is_some()}),
                crate::turn::STORY_RUNTIME,
                &mut report.steps,
            );
        }
        if let Some(replaced) = report.compaction.replaced.take() {
            if let Some(undo) = self.history.last_mut() {
                undo.rewritten = Some(replaced);
            }
            self.session_version = next_session_version();
        }
        if current {
            report.slot_changes.extend(self.workspace.apply_slots(
                &mut self.slots,
                &Trigger::TurnEnded {
                    turn_id: report.turn_id.clone(),
                },
            ));
        }
        report
    }

    /// Runs compaction now, even under the threshold (the studio's "compact now"); an accepted
    /// result is applied to the session and joins the undo history (see [`Playtest::undo`]).
    /// Returns the run and whether the session changed.
    pub fn compact_now(&mut self) -> (CompactionRun, bool) {
        let mut forced = self.begin_compact_now();
        forced.compact();
        self.finish_compact_now(forced)
    }

    /// The first step of [`Playtest::compact_now`]: the input from the session as it is. Its
    /// provider call ([`ForcedCompaction::compact`]) needs no access to the playtest.
    pub fn begin_compact_now(&mut self) -> ForcedCompaction {
        let preview = self.workspace.preview(&RuntimeTarget::Story);
        let before = &self.workspace.session;
        // The turn the compaction happens after: the newest in the history.
        let turn_id = before
            .history
            .messages
            .iter()
            .rev()
            .find_map(|m| m.get("turnId").and_then(serde_json::Value::as_str))
            .map_or_else(|| preview.turn_id.clone(), str::to_string);
        let system = preview.prompt.system_and_turn_context();
        let undo = TurnUndo {
            turn_id: None,
            next_message: before.next_message.clone(),
            messages: before.history.messages.len(),
            summaries: before.history.summaries.len(),
            rewritten: None,
            plugin_data: None,
        };
        let compaction = BegunCompaction {
            pending: self.workspace.begin_compaction(
                &turn_id,
                &system,
                &CompactionOptions {
                    force: true,
                    output: None,
                },
                &mut self.failures,
            ),
            session_version: self.session_version,
        };
        ForcedCompaction { compaction, undo }
    }

    /// The last step of [`Playtest::compact_now`]: applies an accepted result when the session
    /// is still the one the input was taken from (otherwise the run says why nothing was
    /// applied). Returns the run and whether the session changed.
    pub fn finish_compact_now(&mut self, forced: ForcedCompaction) -> (CompactionRun, bool) {
        let ForcedCompaction {
            compaction,
            mut undo,
        } = forced;
        let mut run = self.conclude_compaction(compaction);
        undo.rewritten = run.replaced.take();
        let changed = undo.rewritten.is_some();
        if changed {
            self.session_version = next_session_version();
            self.history.push(undo);
            self.workspace.apply_slots(&mut self.slots, &Trigger::All);
        }
        (run, changed)
    }

    /// A begun compaction's run: judged and applied when the session is still the version its
    /// input was taken from; otherwise returned unapplied, saying why (an undo, a session edit or
    /// another turn came in between). An applied run carries the history it replaced.
    fn conclude_compaction(&mut self, begun: BegunCompaction) -> CompactionRun {
        match begun.pending {
            Err(done) => *done,
            Ok(pending) if begun.session_version == self.session_version => self
                .workspace
                .finish_compaction(pending, &mut self.failures),
            Ok(pending) => pending.abandoned(),
        }
    }

    /// Starts the playtest again from the workspace's (new) session: played turns and their undo
    /// history are dropped and the story model is rebuilt from the session's models (the caller
    /// projects the slots again). Called when the authored session changed.
    pub fn restart(&mut self) {
        self.history.clear();
        self.session_started = false;
        self.pending_form = None;
        self.session_version = next_session_version();
        self.failures = FailureCounter::default();
        self.story = Arc::new(Backend::for_session(
            &self.workspace.session.models.story,
            self.workspace.session_path.as_deref(),
        ));
    }

    /// Undoes the last turn; false when back at the session file's state.
    pub fn undo(&mut self) -> bool {
        match self.history.pop() {
            Some(undo) => {
                // The form of the turn before is not kept: undo shows no pending form.
                self.pending_form = None;
                undo.apply(&mut self.workspace.session);
                self.session_version = next_session_version();
                self.workspace.apply_slots(&mut self.slots, &Trigger::All);
                true
            }
            None => false,
        }
    }

    /// Saves the played session as a YAML session file (see [`crate::save`]: checked, atomic,
    /// the previous text kept as `.bak`). Callers choose a new file for played turns.
    pub fn save(&self, path: &Path) -> Result<PathBuf, crate::save::SaveError> {
        let mut session = self.workspace.session.clone();
        self.add_checkpoints(&mut session.checkpoints);
        save_session(&session, path)
    }

    /// Adds the played turns' checkpoints, in order, to those the session file had (see
    /// [`crate::checkpoints`]): what a played save keeps so a later playtest can start after
    /// any of them.
    fn add_checkpoints(&self, checkpoints: &mut Vec<covel_kernel::session::Checkpoint>) {
        for undo in &self.history {
            match &undo.turn_id {
                Some(turn) => checkpoints.push(covel_kernel::session::Checkpoint {
                    turn_id: turn.clone(),
                    plugin_data_before: undo.plugin_data.clone(),
                    compacted_after: undo.rewritten.is_some(),
                }),
                // "Compact now" between turns rewrote the history after the turn before it.
                None if undo.rewritten.is_some() => {
                    if let Some(last) = checkpoints.last_mut() {
                        last.compacted_after = true;
                    }
                }
                None => {}
            }
        }
    }

    /// A playtest whose story model is `story` rather than the one the session's models make
    /// (a re-recording replay backend for `covel test --rerecord-changed`).
    pub fn with_story_backend(workspace: Workspace, story: Backend) -> Playtest {
        Playtest {
            story: Arc::new(story),
            ..Playtest::new(workspace)
        }
    }
}

/// Writes a session as YAML, safely (see [`crate::save`]).
pub fn save_session(session: &Session, path: &Path) -> Result<PathBuf, crate::save::SaveError> {
    let text = crate::save::session_yaml(
        session,
        "# Saved by Covel Studio after a playtest (docs/session-format.md).\n",
    )?;
    crate::save::write_session_text(path, &text)
}
