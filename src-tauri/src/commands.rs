//! Tauri commands and events over the studio's typed wire (`covel_studio::wire`): every
//! argument and result is a wire type, exported to TypeScript by tauri-specta
//! (`ui/src/lib/bindings.ts`, type-checked by the UI's `npm run check`). `snapshot` and
//! `open_workspace` return the whole `Snapshot`; commands that change the studio return a
//! `SnapshotPatch` of the parts that changed since the UI last received them, and the
//! `StudioChanged` event carries the same patch after a reload (`WireState` decides what
//! changed). Studio work runs off the async runtime (`spawn_blocking`), so no runtime worker
//! waits on the state lock.

use crate::error::{CommandError, ErrorCode, OrCode};
use crate::state::{self, AppState};
use covel_studio::live::{LiveStudio, PlayedTurns};
use covel_studio::wire::results::{Forecast, SessionEdit, TestRun};
use covel_studio::wire::turns::TurnPrompt;
use covel_studio::wire::{Diagnostic, RequestBodies, Snapshot, SnapshotPatch};
use serde::{Deserialize, Serialize};
use specta::Type;
use std::sync::Arc;
use tauri::{AppHandle, State};
use tauri_specta::{Builder, Event, collect_commands, collect_events};

/// Sent after the studio changed on its own (a reload) or while it opens a folder.
#[derive(Debug, Clone, Serialize, Type, tauri_specta::Event)]
#[serde(tag = "reason", rename_all = "kebab-case")]
pub enum StudioChanged {
    Opening,
    /// The folder opened: the whole snapshot.
    Opened {
        snapshot: Box<Snapshot>,
    },
    /// Why the folder or session could not be opened (file, line and column).
    OpenFailed {
        error: Diagnostic,
    },
    WatchFailed,
    /// A reload: its entry (`patch.lastReload`) and the parts it changed.
    Reload {
        patch: Box<SnapshotPatch>,
    },
}

/// The story model's text of the turn being played, as it streams from a real backend: each
/// piece in order.
#[derive(Debug, Clone, Serialize, Type, tauri_specta::Event)]
#[serde(rename_all = "camelCase")]
pub struct TurnText {
    pub turn_id: String,
    pub text: String,
}

/// Whether a folder is being opened, and why the last open failed.
#[derive(Debug, Clone, Default, Serialize, Type)]
pub struct OpenStatus {
    pub opening: bool,
    /// The folder being opened or last tried.
    pub plugins: Option<String>,
    pub session: Option<String>,
    /// A diagnostic with file, line and column.
    pub error: Option<Diagnostic>,
}

/// A recently opened folder.
#[derive(Debug, Clone, Serialize, Deserialize, Type)]
pub struct RecentFolder {
    pub plugins: String,
    pub session: Option<String>,
}

/// Runs `f` on the open studio on a blocking thread, never on a runtime worker: a turn may wait
/// on a model for minutes, and the state lock is taken on that thread only, for `f`'s time.
async fn with_studio<T: Send + 'static>(
    state: &State<'_, AppState>,
    f: impl FnOnce(&mut LiveStudio) -> Result<T, CommandError> + Send + 'static,
) -> Result<T, CommandError> {
    let studio = Arc::clone(&state.studio);
    off_runtime(move || {
        let mut guard = studio.lock().map_err(|_| CommandError::poisoned())?;
        let studio = guard
            .as_mut()
            .ok_or_else(|| CommandError::new(ErrorCode::NoFolderOpen, "no folder is open"))?;
        f(studio)
    })
    .await
}

/// Runs `f` on the open studio like [`with_studio`], then answers the parts of the snapshot
/// that changed since the UI last received them.
async fn with_studio_patch(
    state: &State<'_, AppState>,
    f: impl FnOnce(&mut LiveStudio) -> Result<(), CommandError> + Send + 'static,
) -> Result<SnapshotPatch, CommandError> {
    let wire = Arc::clone(&state.wire);
    with_studio(state, move |s| {
        f(s)?;
        let mut wire = wire.lock().map_err(|_| CommandError::poisoned())?;
        Ok(wire.patch_of(s))
    })
    .await
}

/// Runs blocking work (loading a folder, playing a turn) off the async runtime.
async fn off_runtime<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, CommandError> + Send + 'static,
) -> Result<T, CommandError> {
    tauri::async_runtime::spawn_blocking(f).await.map_err(|e| {
        CommandError::new(ErrorCode::Internal, format!("the studio task stopped: {e}"))
    })?
}

#[tauri::command]
#[specta::specta]
async fn open_workspace(
    app: AppHandle,
    plugins: String,
    session: Option<String>,
) -> Result<u32, CommandError> {
    // The snapshot crosses once, as the `opened` event every window listens to (sent before
    // this answer); the answer is its version.
    off_runtime(move || {
        state::open(&app, &plugins, session.as_deref())
            .map(|s| s.version)
            .or_code(ErrorCode::Open)
    })
    .await
}

#[tauri::command]
#[specta::specta]
async fn snapshot(state: State<'_, AppState>) -> Result<Snapshot, CommandError> {
    let wire = Arc::clone(&state.wire);
    with_studio(&state, move |s| {
        let mut wire = wire.lock().map_err(|_| CommandError::poisoned())?;
        Ok(wire.full_of(s))
    })
    .await
}

#[tauri::command]
#[specta::specta]
async fn set_runtime(
    state: State<'_, AppState>,
    target: covel_studio::wire::preview::RuntimeTarget,
) -> Result<SnapshotPatch, CommandError> {
    with_studio_patch(&state, move |s| {
        s.switch_target(target.into()).or_code(ErrorCode::Runtime)
    })
    .await
}

#[tauri::command]
#[specta::specta]
async fn play_turn(
    app: AppHandle,
    state: State<'_, AppState>,
    message: String,
) -> Result<SnapshotPatch, CommandError> {
    state
        .cancel
        .store(false, std::sync::atomic::Ordering::SeqCst);
    play_one_turn(&app, &state, message).await?;
    with_studio_patch(&state, |_| Ok(())).await
}

/// Plays one turn of the active branch; false when it failed or was cancelled (its report is
/// among the turns either way).
async fn play_one_turn(
    app: &AppHandle,
    state: &State<'_, AppState>,
    message: String,
) -> Result<bool, CommandError> {
    let cancel = Arc::clone(&state.cancel);
    // Four steps, the state lock held only for the first, the third and the last: neither a
    // slow story model nor a compaction provider waiting for the fast model keeps reloads (or
    // cancel) waiting. A session changed meanwhile makes the third step refuse the reply and
    // the last one leave the compaction unapplied (see `Playtest::append_reply` and
    // `Playtest::complete_turn`).
    let pending = with_studio(state, move |s| Ok(s.begin_turn(&message))).await?;
    let Ok(pending) = pending else {
        return Ok(false);
    };
    let app = app.clone();
    let (pending, answer) = off_runtime({
        let cancel = Arc::clone(&cancel);
        move || {
            // A real backend's reply reaches the window as it streams.
            let turn_id = pending.turn_id().to_string();
            let on_text = |text: &str| {
                let _ = TurnText {
                    turn_id: turn_id.clone(),
                    text: text.to_string(),
                }
                .emit(&app);
            };
            let answer = pending.ask_streaming(&cancel, Some(&on_text));
            Ok((pending, answer))
        }
    })
    .await?;
    let appended =
        with_studio(state, move |s| Ok(s.append_reply(pending, answer, &cancel))).await?;
    let Ok(mut appended) = appended else {
        return Ok(false);
    };
    let appended = off_runtime(move || {
        appended.compact();
        Ok(appended)
    })
    .await?;
    with_studio(state, move |s| {
        s.complete_turn(appended);
        Ok(true)
    })
    .await
}

/// "Play from here": forks the active branch after its played turn `turn_id`; the new branch
/// is played from then on (the branch it leaves is kept beside it).
#[tauri::command]
#[specta::specta]
async fn fork_turn(
    state: State<'_, AppState>,
    turn_id: String,
) -> Result<SnapshotPatch, CommandError> {
    with_studio_patch(&state, move |s| {
        s.fork_turn(&turn_id).map(|_| ()).or_code(ErrorCode::Branch)
    })
    .await
}

/// Makes another branch of the playtest the one played.
#[tauri::command]
#[specta::specta]
async fn switch_branch(
    state: State<'_, AppState>,
    branch: String,
) -> Result<SnapshotPatch, CommandError> {
    with_studio_patch(&state, move |s| {
        s.switch_branch(&branch).or_code(ErrorCode::Branch)
    })
    .await
}

/// "Replay with my change": plays the active branch's player messages again, in a new branch
/// from the state before its first turn, with the plugins as they are now. Stops at the first
/// turn that fails (or is cancelled).
#[tauri::command]
#[specta::specta]
async fn replay_branch(
    app: AppHandle,
    state: State<'_, AppState>,
) -> Result<SnapshotPatch, CommandError> {
    state
        .cancel
        .store(false, std::sync::atomic::Ordering::SeqCst);
    let (_, messages) =
        with_studio(&state, |s| s.begin_replay().or_code(ErrorCode::Branch)).await?;
    for message in messages {
        if !play_one_turn(&app, &state, message).await? {
            break;
        }
    }
    with_studio_patch(&state, |_| Ok(())).await
}

/// The models a server says it serves, for the Session panel's model picker: the session's
/// story model with the backend, address and key variable the author is editing.
#[tauri::command]
#[specta::specta]
async fn list_models(
    state: State<'_, AppState>,
    backend: String,
    base_url: Option<String>,
    api_key_env: Option<String>,
) -> Result<Vec<String>, CommandError> {
    let mut config = with_studio(&state, |s| {
        Ok(s.play().workspace.session.models.story.clone())
    })
    .await?;
    config.backend = backend;
    config.base_url = base_url.filter(|u| !u.trim().is_empty());
    config.api_key_env = api_key_env.filter(|k| !k.trim().is_empty());
    off_runtime(move || {
        covel_studio::models::Backend::new(&config)
            .list_models()
            .or_code(ErrorCode::Models)
    })
    .await
}

/// Runs compaction now, even under the threshold ("compact now"); undo puts the session back.
#[tauri::command]
#[specta::specta]
async fn compact_now(state: State<'_, AppState>) -> Result<SnapshotPatch, CommandError> {
    // Like a played turn's compaction: the provider (which may wait for the fast model) runs
    // without the state lock, and its result applies only to the session it was asked about.
    let mut forced = with_studio(&state, |s| Ok(s.begin_compact_now())).await?;
    let forced = off_runtime(move || {
        forced.compact();
        Ok(forced)
    })
    .await?;
    with_studio_patch(&state, move |s| {
        s.finish_compact_now(forced);
        Ok(())
    })
    .await
}

/// The prompt a played turn sent, in the branch `branch` (the one played by default): the last
/// turn's is kept; older ones are recomputed from the session as it was before the turn,
/// flagged when plugins were reloaded since.
#[tauri::command]
#[specta::specta]
async fn turn_prompt(
    state: State<'_, AppState>,
    turn_id: String,
    branch: Option<String>,
) -> Result<TurnPrompt, CommandError> {
    with_studio(&state, move |s| {
        s.branch_turn_prompt(branch.as_deref(), &turn_id)
            .map(|p| TurnPrompt::of(&p, s))
            .ok_or_else(|| {
                CommandError::new(
                    ErrorCode::UnknownTurn,
                    format!("`{turn_id}` is not a played turn"),
                )
            })
    })
    .await
}

/// The live preview's request bodies, asked for when the window shows them (they do not
/// cross with the prompt), with the snapshot version they belong to.
#[tauri::command]
#[specta::specta]
async fn request_bodies(state: State<'_, AppState>) -> Result<RequestBodies, CommandError> {
    let wire = Arc::clone(&state.wire);
    // Under the studio's lock, as every patch is made: the version is the one of the last
    // patch made from this preview.
    with_studio(&state, move |s| {
        let version = wire.lock().map_err(|_| CommandError::poisoned())?.version();
        Ok(RequestBodies {
            version,
            requests: (&s.preview().prompt).into(),
        })
    })
    .await
}

/// Reloads every plugin and the session into fresh runtimes: every provider runs again (no
/// answer from the memo).
#[tauri::command]
#[specta::specta]
async fn run_everything_again(state: State<'_, AppState>) -> Result<SnapshotPatch, CommandError> {
    with_studio_patch(&state, |s| {
        s.run_everything_again();
        Ok(())
    })
    .await
}

#[tauri::command]
#[specta::specta]
async fn cancel_work(state: State<'_, AppState>) -> Result<(), CommandError> {
    state
        .cancel
        .store(true, std::sync::atomic::Ordering::SeqCst);
    Ok(())
}

/// Starts a plugin in the open folder (`covel_studio::scaffold`, what `covel new` does); the
/// watcher loads it. Answers what was written.
#[tauri::command]
#[specta::specta]
async fn new_plugin(
    state: State<'_, AppState>,
    id: String,
    points: Vec<String>,
    typescript: bool,
) -> Result<String, CommandError> {
    let dir = with_studio(&state, |s| Ok(s.workspace().plugins_dir.clone())).await?;
    let created = covel_studio::scaffold::create(&dir, &id, &points, typescript)
        .or_code(ErrorCode::NewPlugin)?;
    Ok(format!(
        "Created {} (PLUGIN.md, {}, README.md) and its test session {}",
        created.folder.display(),
        created.entry,
        created.session.display()
    ))
}

/// Opens a file of the open folder at a line and column in the author's editor
/// (`COVEL_EDITOR`, `$VISUAL` or `$EDITOR`; see `covel_studio::editor`); answers the command
/// run. A relative path is the plugins folder's.
#[tauri::command]
#[specta::specta]
async fn open_in_editor(
    state: State<'_, AppState>,
    file: String,
    line: Option<u32>,
    column: Option<u32>,
) -> Result<String, CommandError> {
    let dir = with_studio(&state, |s| Ok(s.workspace().plugins_dir.clone())).await?;
    let path = std::path::Path::new(&file);
    // Registration sites are as the folder was opened (relative to the working directory when
    // it was opened by a relative path); diagnostics' files may be relative to the folder.
    let path = if path.is_absolute() || path.is_file() {
        path.to_path_buf()
    } else {
        dir.join(path)
    };
    if !path.is_file() {
        return Err(CommandError::new(
            ErrorCode::Editor,
            format!("{} is not a file that can be opened", path.display()),
        ));
    }
    covel_studio::editor::open(&path, line.unwrap_or(1), column.unwrap_or(1))
        .or_code(ErrorCode::Editor)
}

/// Answers the form the last played turn asks the player to fill: what the player says (the
/// form's narrative filled in, to play next), or what is wrong with the values.
#[tauri::command]
#[specta::specta]
async fn answer_form(
    state: State<'_, AppState>,
    values: std::collections::BTreeMap<String, String>,
) -> Result<covel_studio::turn::forms::FormAnswer, CommandError> {
    with_studio(&state, move |s| {
        let values = values
            .into_iter()
            .map(|(k, v)| (k, serde_json::Value::String(v)))
            .collect();
        Ok(covel_studio::turn::forms::FormAnswer::from(
            s.play().answer_form(&values),
        ))
    })
    .await
}

#[tauri::command]
#[specta::specta]
async fn undo(state: State<'_, AppState>) -> Result<SnapshotPatch, CommandError> {
    with_studio_patch(&state, move |s| {
        s.undo().or_code(ErrorCode::Undo)?;
        Ok(())
    })
    .await
}

/// Saves the played session; `path` defaults to `<name>.played.session.yaml` beside the
/// authored session. Returns the file written.
#[tauri::command]
#[specta::specta]
async fn save_played_session(
    state: State<'_, AppState>,
    path: Option<String>,
    overwrite_authored: bool,
) -> Result<String, CommandError> {
    with_studio(&state, move |s| {
        let target = path
            .as_deref()
            .filter(|p| !p.trim().is_empty())
            .map(std::path::Path::new);
        s.save_played(target, overwrite_authored)
            .map(|p| p.display().to_string())
            .or_code(ErrorCode::Session)
    })
    .await
}

/// Writes new text for the authored session file (checked first, atomic, `.bak` kept).
/// `drop_played`: the author chose to drop the playtest's played turns (otherwise a save with
/// played turns is refused, naming them).
#[tauri::command]
#[specta::specta]
async fn save_session_text(
    state: State<'_, AppState>,
    text: String,
    drop_played: bool,
) -> Result<SnapshotPatch, CommandError> {
    let played = if drop_played {
        PlayedTurns::Drop
    } else {
        PlayedTurns::Keep
    };
    with_studio_patch(&state, move |s| {
        s.save_session_text(&text, played)
            .or_code(ErrorCode::Session)
    })
    .await
}

/// Applies structured edits (`covel_studio::document::SessionEdit`) to session text and returns
/// the new text; nothing is saved.
#[tauri::command]
#[specta::specta]
async fn apply_session_edits(
    text: String,
    edits: Vec<SessionEdit>,
) -> Result<String, CommandError> {
    covel_studio::document::apply_edits(&text, &edits).or_code(ErrorCode::Session)
}

/// What the loader says about session text: its diagnostics with line and column (empty when
/// the text is a valid session).
#[tauri::command]
#[specta::specta]
async fn check_session_text(
    state: State<'_, AppState>,
    text: String,
) -> Result<Vec<Diagnostic>, CommandError> {
    let studio = Arc::clone(&state.studio);
    off_runtime(move || {
        let file = studio
            .lock()
            .ok()
            .and_then(|g| g.as_ref().and_then(|s| s.workspace().session_path.clone()))
            .unwrap_or_else(|| std::path::PathBuf::from("session.yaml"));
        Ok(covel_kernel::session::parse_session(&text, &file)
            .err()
            .iter()
            .map(Diagnostic::from)
            .collect())
    })
    .await
}

#[tauri::command]
#[specta::specta]
async fn open_status(state: State<'_, AppState>) -> Result<OpenStatus, CommandError> {
    state
        .status
        .lock()
        .map(|s| s.clone())
        .map_err(|_| CommandError::poisoned())
}

/// The Cache panel: the played turns and the next one, forecast for a model.
#[tauri::command]
#[specta::specta]
async fn forecast(
    state: State<'_, AppState>,
    model: Option<String>,
    pace: f64,
    ttl: String,
) -> Result<Forecast, CommandError> {
    let options = covel_studio::forecast::ForecastOptions {
        pace_seconds: pace,
        ttl,
        // The panel prices the played replies (or their reported usage).
        reply_tokens: None,
    };
    with_studio(&state, move |s| {
        s.forecast(model.as_deref(), &options)
            .or_code(ErrorCode::Models)
    })
    .await
}

/// The Tests panel: every test session of the open folder. `update` writes golden snapshots:
/// every session's, or with `only` that session file's alone. `rerecord` re-records the
/// changed requests of the replay session `only` (or of every replay session) with the backend
/// its recording was made with (`covel test --rerecord-changed`). With `force`, `update` writes
/// the pending snapshots even while the session's expectations fail (`--update --force`).
#[tauri::command]
#[specta::specta]
async fn run_tests(
    state: State<'_, AppState>,
    update: bool,
    only: Option<String>,
    rerecord: bool,
    force: bool,
) -> Result<TestRun, CommandError> {
    use covel_studio::testing::Sessions;
    let sessions = |asked: bool| match (asked, &only) {
        (false, _) => Sessions::None,
        (true, None) => Sessions::All,
        (true, Some(session)) => Sessions::Only(session.into()),
    };
    let (update, rerecord) = (sessions(update), sessions(rerecord));
    with_studio(&state, move |s| {
        let dir = s.workspace().plugins_dir.clone();
        covel_studio::testing::run_folder_with(
            &dir,
            &update,
            &rerecord,
            force,
            &s.workspace().limits,
        )
        .map(TestRun::of)
        .or_code(ErrorCode::Tests)
    })
    .await
}

/// Accepts or rejects one pending golden change (turn `index` of `session`'s `x.golden.new`),
/// then runs the folder's tests again so the panel shows what is left. Accepting writes the
/// golden file with that turn's change; the other pending changes are kept as they were.
#[tauri::command]
#[specta::specta]
async fn review_golden_change(
    state: State<'_, AppState>,
    session: String,
    index: u32,
    accept: bool,
) -> Result<TestRun, CommandError> {
    use covel_studio::testing::Sessions;
    with_studio(&state, move |s| {
        covel_studio::testing::review::decide(
            std::path::Path::new(&session),
            index as usize,
            accept,
        )
        .or_code(ErrorCode::Tests)?;
        let dir = s.workspace().plugins_dir.clone();
        covel_studio::testing::run_folder(&dir, &Sessions::None, &s.workspace().limits)
            .map(TestRun::of)
            .or_code(ErrorCode::Tests)
    })
    .await
}

/// This build: the studio's version, the SDK it mirrors and the contracts it implements (what
/// `covel-studio --version` prints).
#[tauri::command]
#[specta::specta]
async fn about() -> Result<covel_studio::about::About, CommandError> {
    Ok(covel_studio::about::about())
}

/// Where this run's log file is (`None` when none could be created), for the UI to show.
#[tauri::command]
#[specta::specta]
async fn log_file() -> Result<Option<String>, CommandError> {
    Ok(crate::logging::log_file().map(|path| path.display().to_string()))
}

/// The recently opened folders that still exist, newest first.
#[tauri::command]
#[specta::specta]
async fn recent_folders(app: AppHandle) -> Result<Vec<RecentFolder>, CommandError> {
    Ok(state::still_there(state::recent(&app))
        .into_iter()
        .map(|(plugins, session)| RecentFolder { plugins, session })
        .collect())
}

/// The commands and events, for the invoke handler and the TypeScript export.
pub fn builder() -> Builder<tauri::Wry> {
    Builder::<tauri::Wry>::new()
        .commands(collect_commands![
            open_workspace,
            snapshot,
            set_runtime,
            play_turn,
            fork_turn,
            switch_branch,
            replay_branch,
            list_models,
            answer_form,
            open_in_editor,
            new_plugin,
            compact_now,
            run_everything_again,
            turn_prompt,
            request_bodies,
            cancel_work,
            undo,
            save_played_session,
            save_session_text,
            apply_session_edits,
            check_session_text,
            open_status,
            recent_folders,
            forecast,
            run_tests,
            review_golden_change,
            log_file,
            about
        ])
        .events(collect_events![StudioChanged, TurnText])
}

/// Writes the TypeScript bindings the UI imports (`ui/src/lib/bindings.ts`): the one place
/// that configures the exporter, for the app's `COVEL_EXPORT_BINDINGS=1` and the freshness test.
pub fn export_bindings(path: &std::path::Path) -> Result<(), String> {
    builder()
        .export(
            specta_typescript::Typescript::default().header(
                "// The studio's wire (covel_studio::wire), generated by tauri-specta from \
                 src-tauri/src/commands.rs.\n",
            ),
            path,
        )
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    #[test]
    fn generated_typescript_bindings_are_fresh() {
        let dir = std::env::temp_dir().join(format!("covel-bindings-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let fresh = dir.join("bindings.ts");
        super::export_bindings(&fresh).expect("export");
        let committed =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../ui/src/lib/bindings.ts");
        let expected = std::fs::read_to_string(&fresh).expect("fresh bindings");
        let actual = std::fs::read_to_string(&committed).unwrap_or_default();
        // On a mismatch the fresh file stays for copying (the message names it); else nothing is left.
        if actual == expected {
            let _ = std::fs::remove_dir_all(&dir);
        }
        assert!(
            actual == expected,
            "ui/src/lib/bindings.ts is stale: run `COVEL_EXPORT_BINDINGS=1 cargo run -p covel-studio-app` (or copy {}) and commit it",
            fresh.display()
        );
    }
}
