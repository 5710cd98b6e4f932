//! Golden session tests (`covel test`): every session file is a test. Its scripted turns
//! (`test.turns`) are played — with the reply they give, or the session's offline model
//! (scripted, or `replay` from a recording) — and without scripted turns the session is tested
//! on its next turn (`nextMessage`) without calling a model. Each turn is checked against its
//! expectations and against the golden snapshot next to the session (`x.golden.yaml`);
//! `--update` writes this run's snapshot as a pending `x.golden.new`, reviewed change by change
//! ([`review`]). Live model backends are refused: tests never reach the network, except
//! when asked to re-record (`covel test --rerecord-changed`, [`RunOptions::rerecord_changed`]):
//! a replay session's requests that its recording lacks then go to the backend the recording
//! was made with, and the recording is rewritten from what the run used.

pub mod checks;
pub mod golden;
pub mod locate;
pub mod review;
pub mod usage;

use crate::models::Backend;
use crate::playtest::Playtest;
use crate::preview::{Preview, RuntimeTarget, SlotView};
use crate::workspace::Workspace;
use checks::CheckResult;
use covel_js::Limits;
use covel_kernel::session::{self, Session};
use covel_kernel::test_session::Expectation;
use golden::{Difference, Golden};
use serde::Serialize;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Milliseconds, as reports carry them (a run longer than 49 days saturates).
fn millis(elapsed: Duration) -> u32 {
    u32::try_from(elapsed.as_millis()).unwrap_or(u32::MAX)
}

/// Why tests could not start.
#[derive(Debug, thiserror::Error)]
pub enum TestError {
    #[error("{0}: no such file or folder")]
    Missing(PathBuf),
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{0} holds no test sessions (*.session.yaml)")]
    NoSessions(PathBuf),
}

/// One session to test and the plugins folder it runs against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub session: PathBuf,
    /// The folder the session was found in, when it was found by searching a plugins folder.
    pub found_in: Option<PathBuf>,
}

/// What one turn captured: the preview the model was asked with, the slots after the turn,
/// the world snapshot.
#[derive(Debug, Clone)]
pub struct TurnCapture {
    pub turn_id: String,
    pub say: String,
    pub preview: Preview,
    pub slots: Vec<SlotView>,
    pub world: Value,
    /// The turn's loop (hooks, model calls, tools, events, commits).
    pub steps: Vec<crate::turn::record::LoopStep>,
    /// How long playing (or previewing) the turn took.
    pub duration_ms: u32,
    /// The usage a real (or replayed) backend reported for the turn's prompt as assembled
    /// (see [`crate::forecast::usage_of_assembled_request`]); none from scripted models.
    pub usage: Option<Value>,
}

/// The result of one turn.
#[derive(Debug, Clone, Serialize, specta::Type)]
#[serde(rename = "TestTurn")]
#[serde(rename_all = "camelCase")]
pub struct TurnResult {
    pub turn_id: String,
    pub say: String,
    pub passed: bool,
    pub checks: Vec<CheckResult>,
    /// Differences from the golden snapshot (empty when it matches, or when there is none).
    pub golden_differences: Vec<Difference>,
    /// Why the turn failed to run (a failing world context, a replay miss…).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// How long playing the turn took (its checks and comparison not included).
    pub duration_ms: u32,
    /// The turn's provider calls that did not succeed, in call order. They do not fail the turn
    /// by themselves (a `provider` check may expect one), but they explain what a check or the
    /// golden snapshot misses: a segment or slot value whose provider failed is not there.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[specta(optional)]
    pub failed_calls: Vec<FailedCall>,
}

/// A provider call of a tested turn that did not succeed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, specta::Type)]
#[serde(rename = "TestFailedCall")]
#[serde(rename_all = "camelCase")]
pub struct FailedCall {
    pub plugin_id: String,
    pub provider_id: String,
    /// The extension point (`prompt.segment@1`, …).
    pub point: String,
    /// The slot, for a `ui.slot@1` call.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slot: Option<String>,
    /// How the call ended, as a `provider` check names it (`error`, `invalid-output`,
    /// `timeout`, `out-of-memory`, `unavailable`).
    pub outcome: String,
    /// Why, in the kernel's words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// `my-plugin/guidance on prompt.segment@1 → invalid-output: at /0/order: …`, as the CLI and
/// the CI reports say it.
impl std::fmt::Display for FailedCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let on = self.slot.as_deref().unwrap_or(&self.point);
        write!(
            f,
            "{}/{} on {on} → {}",
            self.plugin_id, self.provider_id, self.outcome
        )?;
        match &self.message {
            Some(message) => write!(f, ": {message}"),
            None => Ok(()),
        }
    }
}

impl FailedCall {
    /// The calls among `calls` that did not succeed, in their order.
    pub fn among(calls: &[covel_kernel::runner::CallRecord]) -> Vec<FailedCall> {
        calls
            .iter()
            .filter(|c| c.outcome != covel_kernel::runner::Outcome::Success)
            .map(|c| FailedCall {
                plugin_id: c.plugin_id.to_string(),
                provider_id: c.provider_id.to_string(),
                point: c.point.as_str().to_string(),
                slot: c.slot.map(|s| s.as_str().to_string()),
                outcome: checks::outcome_name(&c.outcome),
                message: c.message.clone(),
            })
            .collect()
    }
}

/// What happened with the golden snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, specta::Type)]
#[serde(rename_all = "kebab-case")]
pub enum GoldenStatus {
    Matches,
    Differs,
    /// There is no golden file (a failure when the session has no expectations either).
    Missing,
    /// `--update` wrote this run's snapshot beside it as `x.golden.new`, pending review
    /// (`covel test --review`).
    Pending,
    /// `--update` wrote nothing: expectations fail (`--force` writes the `.new` anyway).
    Refused,
    /// `--update` found nothing to change.
    Unchanged,
    /// Not compared: the run failed before every turn was captured.
    Skipped,
}

/// The result of one test session.
#[derive(Debug, Clone, Serialize, specta::Type)]
#[serde(rename = "TestSession")]
#[serde(rename_all = "camelCase")]
pub struct SessionResult {
    pub session: PathBuf,
    pub plugins_dir: PathBuf,
    pub golden_file: PathBuf,
    pub golden: GoldenStatus,
    pub passed: bool,
    pub turns: Vec<TurnResult>,
    /// Why the session could not be tested at all (unreadable, invalid, a live backend…).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What re-recording did with the session's recording (replay sessions run with
    /// [`RunOptions::rerecord_changed`] only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rerecord: Option<RerecordSummary>,
    /// The changes `x.golden.new` holds, turn by turn, waiting for review (empty without one).
    pub pending: Vec<review::PendingChange>,
    /// How long the whole session took.
    pub duration_ms: u32,
}

/// How a session is tested.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunOptions {
    /// Write the golden snapshot from this run (`covel test --update`).
    pub update: bool,
    /// In a replay session, send the requests its recording lacks to the backend it was made
    /// with, use the answers, and rewrite the recording (`covel test --rerecord-changed`).
    pub rerecord_changed: bool,
    /// With `update`: write the pending snapshot even though expectations fail.
    pub force: bool,
}

/// What re-recording did with a replay session's recording.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, specta::Type)]
#[serde(rename = "TestRerecord")]
#[serde(rename_all = "camelCase")]
pub struct RerecordSummary {
    pub recording: PathBuf,
    pub status: RerecordStatus,
    /// The turns whose story requests the recording lacked (answered afresh).
    pub turns: Vec<String>,
    /// Recorded exchanges used again.
    pub kept: u32,
    /// Exchanges answered afresh.
    pub rerecorded: u32,
    /// Recorded exchanges no request used any more.
    pub dropped: u32,
}

/// What happened with the recording file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, specta::Type)]
#[serde(rename = "TestRerecordStatus")]
#[serde(rename_all = "kebab-case")]
pub enum RerecordStatus {
    /// Written from this run.
    Rewritten,
    /// The run used exactly the recorded exchanges, in their order: not written.
    Unchanged,
    /// The run failed before every turn was played: the file was left as it was (and nothing
    /// counts as kept, re-recorded or dropped).
    Untouched,
}

/// In CI (`covel test --ci`, or `CI` set as CI services set it), a session without its golden
/// snapshot fails: a forgotten snapshot must not pass unnoticed because the session also has
/// expectations. Locally the run says it is missing and passes on the expectations.
pub fn require_golden(result: &mut SessionResult) {
    if result.golden == GoldenStatus::Missing {
        result.passed = false;
        result.error.get_or_insert(format!(
            "no golden snapshot ({}): in CI (--ci, or CI=true) a missing golden snapshot fails; run `covel test --update`, accept it with `covel test --review` and commit it",
            result.golden_file.display()
        ));
    }
}

/// A session file's id, when it can be read (for `covel test --filter`).
pub fn session_id(path: &Path) -> Option<String> {
    let text = crate::workspace::read_session_text(path).ok()?;
    session::parse_session(&text, path).ok().map(|s| s.id)
}

/// Whether the environment says this is a CI run: `CI` set to anything but empty, `0` or
/// `false` (GitHub Actions, GitLab CI and most services set `CI=true`).
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !matches!(v.trim(), "" | "0" | "false"))
}

/// Finds the sessions to test: files as given; in folders, every `*.session.yaml` in the folder
/// and in its subfolders that are not plugins (two levels), except played sessions
/// (`*.played.session.yaml`).
pub fn discover(paths: &[PathBuf]) -> Result<Vec<Target>, TestError> {
    let mut out = Vec::new();
    for path in paths {
        if path.is_file() {
            out.push(Target {
                session: path.clone(),
                found_in: None,
            });
        } else if path.is_dir() {
            let mut found = Vec::new();
            collect(path, 0, &mut found)?;
            if found.is_empty() {
                return Err(TestError::NoSessions(path.clone()));
            }
            found.sort();
            out.extend(found.into_iter().map(|session| Target {
                session,
                found_in: Some(path.clone()),
            }));
        } else {
            return Err(TestError::Missing(path.clone()));
        }
    }
    Ok(out)
}

fn collect(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) -> Result<(), TestError> {
    let entries = std::fs::read_dir(dir).map_err(|source| TestError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    for entry in entries {
        let path = entry
            .map_err(|source| TestError::Io {
                path: dir.to_path_buf(),
                source,
            })?
            .path();
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if path.is_file()
            && name.ends_with(".session.yaml")
            && !name.ends_with(".played.session.yaml")
        {
            out.push(path);
        } else if path.is_dir()
            && depth < 2
            && !name.starts_with('.')
            && name != "node_modules"
            && !path.join("PLUGIN.md").is_file()
        {
            collect(&path, depth + 1, out)?;
        }
    }
    Ok(())
}

/// The plugins folder of a session: the one it names (`test.plugins`, relative to the file),
/// else the folder it was found in, else the folder it sits in.
pub fn plugins_dir_of(target: &Target, session: Option<&Session>) -> PathBuf {
    let parent = target
        .session
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    match session
        .and_then(|s| s.test.as_ref())
        .and_then(|t| t.plugins.as_deref())
    {
        Some(named) => parent.join(named),
        None => target.found_in.clone().unwrap_or(parent),
    }
}

fn failed_session(target: &Target, plugins_dir: PathBuf, error: String) -> SessionResult {
    SessionResult {
        golden_file: golden::path_for(&target.session),
        session: target.session.clone(),
        plugins_dir,
        golden: GoldenStatus::Skipped,
        passed: false,
        turns: Vec::new(),
        error: Some(error),
        rerecord: None,
        pending: Vec::new(),
        duration_ms: 0,
    }
}

/// Plays (or previews) a session's turns and captures each one. Stops at the first turn that
/// fails to run; returns the captures so far and that turn's error.
pub fn capture_turns(workspace: Workspace) -> (Vec<TurnCapture>, Option<(String, String, String)>) {
    let captured = capture(workspace, false);
    (captured.captures, captured.failure)
}

/// What playing a session's turns gave.
struct Captured {
    captures: Vec<TurnCapture>,
    /// The turn that failed to run: its id, what the player said, why.
    failure: Option<(String, String, String)>,
    /// The turns whose story requests were answered afresh (when re-recording).
    rerecorded_turns: Vec<String>,
    /// The playtest that played them (none when the session's next turn was only previewed).
    play: Option<Playtest>,
}

/// [`capture_turns`], the story model re-recording when `rerecord` is set (a replay session).
fn capture(workspace: Workspace, rerecord: bool) -> Captured {
    let turns = workspace
        .session
        .test
        .as_ref()
        .map(|t| t.turns.clone())
        .unwrap_or_default();
    if turns.is_empty() {
        let started = Instant::now();
        let preview = workspace.preview(&RuntimeTarget::Story);
        let say = workspace.session.next_message.clone();
        if let Some(error) = &preview.world_context.error {
            return Captured {
                captures: Vec::new(),
                failure: Some((
                    preview.turn_id.clone(),
                    say,
                    format!("the turn would fail: {error}"),
                )),
                rerecorded_turns: Vec::new(),
                play: None,
            };
        }
        let capture = TurnCapture {
            turn_id: preview.turn_id.clone(),
            say,
            slots: preview.slots.clone(),
            world: preview.world_context.snapshot.clone(),
            preview,
            steps: Vec::new(),
            duration_ms: millis(started.elapsed()),
            usage: None,
        };
        return Captured {
            captures: vec![capture],
            failure: None,
            rerecorded_turns: Vec::new(),
            play: None,
        };
    }
    let mut play = if rerecord {
        let story = Backend::rerecording(
            &workspace.session.models.story,
            workspace.session_path.as_deref(),
        );
        Playtest::with_story_backend(workspace, story)
    } else {
        Playtest::new(workspace)
    };
    let mut captured = Captured {
        captures: Vec::new(),
        failure: None,
        rerecorded_turns: Vec::new(),
        play: None,
    };
    for turn in &turns {
        // A turn may answer the form the turn before asked for: its filled narrative is said.
        let say = match play.scripted_message(turn) {
            Ok(say) => say,
            Err(error) => {
                let turn_id = format!("turn {}", captured.captures.len() + 1);
                captured.failure = Some((turn_id, turn.say.clone(), error));
                break;
            }
        };
        let started = Instant::now();
        let fresh_before = play.story_backend().rerecorded_count();
        let report = play.play_scripted(&say, turn.reply.as_ref());
        if let Some(error) = report.error {
            captured.failure = Some((report.turn_id, say, error));
            break;
        }
        if play.story_backend().rerecorded_count() > fresh_before {
            captured.rerecorded_turns.push(report.turn_id.clone());
        }
        let world = report.preview.world_context.snapshot.clone();
        captured.captures.push(TurnCapture {
            turn_id: report.turn_id,
            say,
            preview: report.preview,
            slots: play.slots.values(),
            world,
            usage: crate::forecast::usage_of_assembled_request(&report.steps),
            steps: report.steps,
            duration_ms: millis(started.elapsed()),
        });
    }
    captured.play = Some(play);
    captured
}

/// Settles a re-recording run's recording: rewritten (atomically, the old text kept as `.bak`)
/// when the run played every turn and used other exchanges than it holds; left as it was when
/// nothing changed or a turn failed. `Ok(None)` when the story model did not re-record.
fn settle_recording(captured: &Captured) -> Result<Option<RerecordSummary>, String> {
    let Some(story) = captured.play.as_ref().map(Playtest::story_backend) else {
        return Ok(None);
    };
    let Some(rerecorded) = story.rerecorded() else {
        return Ok(None);
    };
    // A failed turn already says why (a live call's error, a missing recording…).
    let Ok(recording) = story.recording_path() else {
        return Ok(None);
    };
    if captured.failure.is_some() {
        return Ok(Some(RerecordSummary {
            recording,
            status: RerecordStatus::Untouched,
            turns: Vec::new(),
            kept: 0,
            rerecorded: 0,
            dropped: 0,
        }));
    }
    let rerecorded = rerecorded.map_err(|e| e.to_string())?;
    let status = if rerecorded.changed {
        rerecorded
            .recording
            .save(&recording)
            .map_err(|e| e.to_string())?;
        RerecordStatus::Rewritten
    } else {
        RerecordStatus::Unchanged
    };
    let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
    Ok(Some(RerecordSummary {
        recording,
        status,
        turns: captured.rerecorded_turns.clone(),
        kept: count(rerecorded.kept),
        rerecorded: count(rerecorded.rerecorded),
        dropped: count(rerecorded.dropped),
    }))
}

/// Why a session's model would reach the network in a test, if it would.
fn live_backend(session: &Session) -> Option<String> {
    let turns = session
        .test
        .as_ref()
        .map(|t| t.turns.as_slice())
        .unwrap_or_default();
    let story = &session.models.story;
    let needs_model = turns.iter().any(|t| t.reply.is_none());
    (needs_model && matches!(story.backend.as_str(), "openai" | "anthropic")).then(|| {
        format!(
            "the story model is the live `{}` backend and a scripted turn has no `reply`: tests never call live models. Record the turns with `covel play --record FILE` and use `backend: replay` with `recording: FILE`, or give every turn a reply",
            story.backend
        )
    })
}

/// Tests one session, writing its golden snapshot when `update` is set.
pub fn run_session(target: &Target, update: bool, limits: &Limits) -> SessionResult {
    let options = RunOptions {
        update,
        ..RunOptions::default()
    };
    run_session_with(target, &options, limits)
}

/// Tests one session as `options` say: with `rerecord_changed`, a replay session's recording is
/// brought up to date first (see [`RunOptions`]) and its checks and golden snapshot see the new
/// answers; [`SessionResult::rerecord`] says what changed.
pub fn run_session_with(target: &Target, options: &RunOptions, limits: &Limits) -> SessionResult {
    let started = Instant::now();
    let mut result = run_untimed(target, options, limits);
    result.duration_ms = millis(started.elapsed());
    result
}

fn run_untimed(target: &Target, options: &RunOptions, limits: &Limits) -> SessionResult {
    let opened = match open(target, limits) {
        Ok(opened) => opened,
        Err(failed) => return *failed,
    };
    let Opened {
        text,
        parsed,
        plugins_dir,
        workspace,
    } = opened;
    let broken: Vec<String> = workspace
        .diagnostics()
        .map(|d| format!("{}: {d}", d.plugin.as_deref().unwrap_or("session")))
        .collect();
    let spec = parsed.test.clone().unwrap_or_default();
    let expectations: Vec<Vec<Expectation>> = if spec.turns.is_empty() {
        vec![spec.expect.clone()]
    } else {
        spec.turns.iter().map(|t| t.expect.clone()).collect()
    };
    let has_expectations = expectations.iter().any(|e| !e.is_empty());
    let session_id = workspace.session.id.clone();
    let rerecord = options.rerecord_changed && parsed.models.story.backend == "replay";
    let capture_started = Instant::now();
    let captured = capture(workspace, rerecord);
    let capture_ms = millis(capture_started.elapsed());
    let settled = settle_recording(&captured);
    let Captured {
        captures, failure, ..
    } = captured;

    let mut turns = checked_turns(target, &text, &parsed, &captures, &expectations);
    if let Some((turn_id, say, error)) = &failure {
        let played: u32 = captures.iter().map(|c| c.duration_ms).sum();
        turns.push(TurnResult {
            turn_id: turn_id.clone(),
            say: say.clone(),
            passed: false,
            checks: Vec::new(),
            golden_differences: Vec::new(),
            error: Some(error.clone()),
            duration_ms: capture_ms.saturating_sub(played),
            failed_calls: Vec::new(),
        });
    }

    let golden_file = golden::path_for(&target.session);
    let current = Golden {
        format: golden::FORMAT.into(),
        session: session_id,
        turns: captures.iter().map(golden::turn_of).collect(),
    };
    let mut error = (!broken.is_empty()).then(|| {
        format!(
            "plugins or the session have problems: {}",
            broken.join("; ")
        )
    });
    let rerecord = settled.unwrap_or_else(|e| {
        error.get_or_insert(format!("cannot re-record: {e}"));
        None
    });
    let status = if failure.is_some() {
        GoldenStatus::Skipped
    } else if options.update {
        match write_pending(target, &golden_file, &current, &turns, options.force) {
            Ok(status) => status,
            Err((status, why)) => {
                error.get_or_insert(why);
                status
            }
        }
    } else if !golden_file.exists() {
        GoldenStatus::Missing
    } else {
        let (status, why) = compare_with_golden(&golden_file, &current, &captures, &mut turns);
        if let Some(why) = why {
            error.get_or_insert(why);
        }
        status
    };
    if status == GoldenStatus::Missing && !has_expectations {
        error.get_or_insert(format!(
            "no golden snapshot ({}) and no expectations: run `covel test --update`, then `covel test --review`, to write one",
            golden_file.display()
        ));
    }
    let pending = review::pending(&target.session).unwrap_or_else(|e| {
        error.get_or_insert(format!("cannot review the pending snapshot: {e}"));
        Vec::new()
    });
    let passed =
        error.is_none() && turns.iter().all(|t| t.passed) && status != GoldenStatus::Differs;
    SessionResult {
        session: target.session.clone(),
        plugins_dir,
        golden_file,
        golden: status,
        passed,
        turns,
        error,
        rerecord,
        pending,
        duration_ms: 0,
    }
}

/// A session file read, parsed and opened on its plugin folder.
struct Opened {
    text: String,
    parsed: Session,
    plugins_dir: PathBuf,
    workspace: Workspace,
}

/// Reads, parses and opens the session, or says why it cannot be tested (a live model is
/// refused: a test must not spend money or depend on the network).
fn open(target: &Target, limits: &Limits) -> Result<Opened, Box<SessionResult>> {
    let failed = |plugins_dir, why| Box::new(failed_session(target, plugins_dir, why));
    let text = crate::workspace::read_session_text(&target.session).map_err(|e| {
        failed(
            plugins_dir_of(target, None),
            format!("cannot read the session: {e}"),
        )
    })?;
    let parsed = session::parse_session(&text, &target.session).map_err(|d| {
        failed(
            plugins_dir_of(target, None),
            format!("invalid session file {d}"),
        )
    })?;
    let plugins_dir = plugins_dir_of(target, Some(&parsed));
    if let Some(why) = live_backend(&parsed) {
        return Err(failed(plugins_dir, why));
    }
    match Workspace::open(&plugins_dir, Some(&target.session), limits) {
        Ok(workspace) => Ok(Opened {
            text,
            parsed,
            plugins_dir,
            workspace,
        }),
        Err(e) => Err(failed(plugins_dir, e.to_string())),
    }
}

/// Each played turn with its expectations checked, each check placed at the line that wrote it;
/// the usage a recording reports is checked against the prediction, as an expectation is.
fn checked_turns(
    target: &Target,
    text: &str,
    parsed: &Session,
    captures: &[TurnCapture],
    expectations: &[Vec<Expectation>],
) -> Vec<TurnResult> {
    let places = locate::expectations(text, &target.session);
    let usage = usage::checks(parsed, captures);
    captures
        .iter()
        .zip(expectations)
        .enumerate()
        .map(|(index, (capture, expect))| {
            let checks: Vec<CheckResult> = expect
                .iter()
                .enumerate()
                .map(|(at, e)| {
                    let mut check = checks::evaluate(e, capture);
                    check.location = places.get(index).and_then(|p| p.get(at)).cloned();
                    check
                })
                .chain(usage.get(index).cloned().flatten())
                .collect();
            TurnResult {
                turn_id: capture.turn_id.clone(),
                say: capture.say.clone(),
                passed: checks.iter().all(|c| c.passed),
                checks,
                golden_differences: Vec::new(),
                error: None,
                duration_ms: capture.duration_ms,
                // The preview's `calls` holds every call of the turn (segments, slots, world
                // context, image flow), each once.
                failed_calls: FailedCall::among(&capture.preview.calls),
            }
        })
        .collect()
}

/// Compares this run with the golden snapshot on disk: each turn gets its differences (a turn
/// that differs fails), and a snapshot that cannot be read or has another number of turns is
/// said as the session's error.
fn compare_with_golden(
    golden_file: &Path,
    current: &Golden,
    captures: &[TurnCapture],
    turns: &mut [TurnResult],
) -> (GoldenStatus, Option<String>) {
    let old = match golden::load(golden_file) {
        Ok(old) => old,
        Err(e) => {
            return (
                GoldenStatus::Differs,
                Some(format!(
                    "cannot read the golden snapshot {e} (run `covel test --update`, then `covel test --review`)"
                )),
            );
        }
    };
    let mut differs = old.turns.len() != current.turns.len();
    for (index, turn) in turns.iter_mut().enumerate() {
        let (Some(old_turn), Some(new_turn), Some(capture)) = (
            old.turns.get(index),
            current.turns.get(index),
            captures.get(index),
        ) else {
            continue;
        };
        let providers = |slot: &str| providers_of(capture, slot);
        turn.golden_differences = golden::compare(old_turn, new_turn, &providers);
        if !turn.golden_differences.is_empty() {
            turn.passed = false;
            differs = true;
        }
    }
    let mut reported: Vec<(String, &mut Vec<Difference>)> = turns
        .iter_mut()
        .map(|t| (t.turn_id.clone(), &mut t.golden_differences))
        .collect();
    golden::dedupe(&mut reported);
    let why = (old.turns.len() != current.turns.len()).then(|| {
        format!(
            "the golden snapshot has {} turns, this run {} (run `covel test --update`, then `covel test --review`)",
            old.turns.len(),
            current.turns.len()
        )
    });
    let status = if differs {
        GoldenStatus::Differs
    } else {
        GoldenStatus::Matches
    };
    (status, why)
}

/// `--update`: writes this run's snapshot as the pending `x.golden.new` (the golden itself is
/// only written by review), unless it matches the golden already (a stale `.new` is then
/// removed) or expectations fail and `force` is not set: a snapshot of a run that breaks its
/// own expectations is rarely the one to keep.
fn write_pending(
    target: &Target,
    golden_file: &Path,
    current: &Golden,
    turns: &[TurnResult],
    force: bool,
) -> Result<GoldenStatus, (GoldenStatus, String)> {
    let new_file = review::pending_path(golden_file);
    let failing: Vec<String> = turns
        .iter()
        .flat_map(|t| {
            t.checks.iter().filter(|c| !c.passed).map(move |c| {
                let at = c
                    .location
                    .as_ref()
                    .map(|l| format!(" ({l})"))
                    .unwrap_or_default();
                format!("{} [{}] {}{at}", t.turn_id, c.rule, c.description)
            })
        })
        .collect();
    if !failing.is_empty() && !force {
        return Err((
            GoldenStatus::Refused,
            format!(
                "not writing {}: expectations fail: {}. Fix them, or pass --force to write it anyway",
                new_file.display(),
                failing.join("; ")
            ),
        ));
    }
    if golden::load(golden_file).is_ok_and(|g| g == *current) {
        if new_file.exists() {
            std::fs::remove_file(&new_file).map_err(|e| {
                let why = format!("cannot remove the stale {}: {e}", new_file.display());
                (GoldenStatus::Unchanged, why)
            })?;
        }
        return Ok(GoldenStatus::Unchanged);
    }
    golden::render(current, &target.session)
        .and_then(|text| {
            crate::save::write_author_file(&new_file, text.as_bytes()).map_err(|e| e.to_string())
        })
        .map(|()| GoldenStatus::Pending)
        .map_err(|e| {
            let why = format!("cannot write {}: {e}", new_file.display());
            (GoldenStatus::Skipped, why)
        })
}

/// The plugins whose providers produced a slot's value (or the world snapshot, for `world`).
fn providers_of(capture: &TurnCapture, slot: &str) -> Option<String> {
    if slot == "world" {
        return capture.preview.world_context.provided_by.clone();
    }
    let mut plugins: Vec<String> = capture
        .slots
        .iter()
        .filter(|s| s.slot.as_str() == slot)
        .flat_map(|s| s.chain.iter())
        .filter(|c| c.outcome == covel_kernel::runner::Outcome::Success)
        .map(|c| c.plugin_id.to_string())
        .collect();
    plugins.dedup();
    (!plugins.is_empty()).then(|| plugins.join(", "))
}

/// Which sessions of a folder a run does something more for: write their golden snapshots
/// (`covel test --update`), or re-record their changed requests (`--rerecord-changed`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sessions {
    /// None: every session is only run and compared.
    None,
    /// Every session.
    All,
    /// Only this session file.
    Only(PathBuf),
}

impl Sessions {
    /// Whether `session` is one of them.
    fn include(&self, session: &Path) -> bool {
        match self {
            Sessions::None => false,
            Sessions::All => true,
            Sessions::Only(only) => only == session || crate::save::same_file(only, session),
        }
    }
}

/// Runs every test session of a plugins folder (the Tests panel), writing the golden
/// snapshots of the sessions `update` names.
pub fn run_folder(
    plugins_dir: &Path,
    update: &Sessions,
    limits: &Limits,
) -> Result<Vec<SessionResult>, TestError> {
    run_folder_with(plugins_dir, update, &Sessions::None, false, limits)
}

/// [`run_folder`], re-recording the changed requests of the replay sessions `rerecord` names
/// (see [`RunOptions::rerecord_changed`]); with `force`, the sessions `update` names get their
/// pending snapshot even while their expectations fail (`covel test --update --force`).
pub fn run_folder_with(
    plugins_dir: &Path,
    update: &Sessions,
    rerecord: &Sessions,
    force: bool,
    limits: &Limits,
) -> Result<Vec<SessionResult>, TestError> {
    Ok(discover(&[plugins_dir.to_path_buf()])?
        .iter()
        .map(|t| {
            let options = RunOptions {
                update: update.include(&t.session),
                rerecord_changed: rerecord.include(&t.session),
                force,
            };
            run_session_with(t, &options, limits)
        })
        .collect())
}
