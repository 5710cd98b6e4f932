//! The app's state: the open studio, its watcher thread, and the recent folders.

use crate::commands::{OpenStatus, StudioChanged};
use covel_js::Limits;
use covel_studio::live::{FolderWatcher, LiveStudio};
use covel_studio::wire::{Diagnostic, Snapshot, WireState};
use covel_studio::{RuntimeTarget, Workspace};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tauri::{AppHandle, Manager};
use tauri_specta::Event;

/// Shared by every command.
#[derive(Default)]
pub struct AppState {
    pub studio: Arc<Mutex<Option<LiveStudio>>>,
    /// Bumped on every open, so the previous folder's watcher thread stops.
    pub generation: Arc<AtomicU64>,
    /// Set by `cancel_work`; a running turn checks it before appending anything.
    pub cancel: Arc<std::sync::atomic::AtomicBool>,
    /// Whether a folder is being opened and why the last open failed (the UI asks at start, so
    /// an open that failed before it listened is never missed).
    pub status: Arc<Mutex<OpenStatus>>,
    /// What the UI last received, so commands and reloads send only what changed. Locked
    /// while the studio lock is held, never the other way round.
    pub wire: Arc<Mutex<WireState>>,
}

/// The folder to open at start: the command line's, else plugins-sample/ with its demo.
pub fn initial_folder(
    plugins: Option<String>,
    session: Option<String>,
) -> Option<(String, Option<String>)> {
    if let Some(plugins) = plugins {
        return Some((plugins, session));
    }
    let sample = ["plugins-sample", "../plugins-sample"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.is_dir())?;
    let demo = sample.join("demo.session.yaml");
    Some((
        sample.display().to_string(),
        demo.is_file().then(|| demo.display().to_string()),
    ))
}

/// Opens a folder, remembers it, starts watching it and tells the UI. A folder or session that
/// cannot be opened is an `open-failed` event with the diagnostic (file, line, column), and the
/// open status keeps it; the previous folder, if any, stays open.
pub fn open(app: &AppHandle, plugins: &str, session: Option<&str>) -> Result<Snapshot, String> {
    let state = app.state::<AppState>();
    set_status(
        &state,
        OpenStatus {
            opening: true,
            plugins: Some(plugins.to_string()),
            session: session.map(str::to_string),
            error: None,
        },
    );
    emit(app, StudioChanged::Opening);
    // The watch starts before the folder is read, so a save made while it loads, or just after
    // the window shows it, is seen. Started after the load, it missed a save made in between,
    // and the window kept the old text until the next save.
    let watcher = FolderWatcher::new(
        Path::new(plugins),
        session.map(Path::new),
        FolderWatcher::SETTLE,
    );
    let workspace = match Workspace::open(
        Path::new(plugins),
        session.map(Path::new),
        &Limits::default(),
    ) {
        Ok(workspace) => workspace,
        Err(e) => {
            // Also on stderr: whoever started the app from a terminal sees why nothing opened.
            eprintln!("covel-studio: could not open {plugins}: {}", e.diagnostic());
            let error = Diagnostic::from(&e.diagnostic());
            set_status(
                &state,
                OpenStatus {
                    opening: false,
                    plugins: Some(plugins.to_string()),
                    session: session.map(str::to_string),
                    error: Some(error.clone()),
                },
            );
            emit(app, StudioChanged::OpenFailed { error });
            return Err(e.diagnostic().to_string());
        }
    };
    let studio = LiveStudio::new(workspace, RuntimeTarget::Story);
    let snapshot = {
        let mut open = state.studio.lock().map_err(|_| "studio state poisoned")?;
        // The UI gets the whole snapshot: what it last received starts again from it.
        let snapshot = state
            .wire
            .lock()
            .map_err(|_| "studio state poisoned")?
            .opened(&studio);
        *open = Some(studio);
        snapshot
    };
    set_status(
        &state,
        OpenStatus {
            opening: false,
            plugins: Some(plugins.to_string()),
            session: session.map(str::to_string),
            error: None,
        },
    );
    remember(app, plugins, session);
    let generation = state.generation.fetch_add(1, Ordering::SeqCst) + 1;
    watch(app.clone(), watcher, generation);
    emit(
        app,
        StudioChanged::Opened {
            snapshot: Box::new(snapshot.clone()),
        },
    );
    Ok(snapshot)
}

fn set_status(state: &AppState, status: OpenStatus) {
    if let Ok(mut current) = state.status.lock() {
        *current = status;
    }
}

fn emit(app: &AppHandle, change: StudioChanged) {
    let _ = change.emit(app);
}

fn watch<E: Send + 'static>(app: AppHandle, watcher: Result<FolderWatcher, E>, generation: u64) {
    std::thread::spawn(move || {
        let Ok(mut watcher) = watcher else {
            emit(&app, StudioChanged::WatchFailed);
            return;
        };
        let state = app.state::<AppState>();
        while state.generation.load(Ordering::SeqCst) == generation {
            // While the author is idle, the memo is confirmed (`LiveStudio::confirm_memo`), so
            // the next save runs only what it changed.
            let confirming = state
                .studio
                .lock()
                .is_ok_and(|s| s.as_ref().is_some_and(LiveStudio::needs_confirming));
            let quiet = if confirming {
                LiveStudio::CONFIRM_AFTER
            } else {
                Duration::from_millis(500)
            };
            // Wait outside the state lock; take it only to reload.
            let Some(batch) = watcher.next(quiet) else {
                if confirming
                    && let Ok(mut guard) = state.studio.lock()
                    && let Some(studio) = guard.as_mut()
                    && studio.needs_confirming()
                {
                    studio.confirm_memo();
                }
                continue;
            };
            let patch = {
                let Ok(mut guard) = state.studio.lock() else {
                    return;
                };
                let Some(studio) = guard.as_mut() else {
                    continue;
                };
                // The CLI's `covel watch` follows a folder the same way (`LiveStudio::follow`).
                if studio
                    .follow_batch(batch, &mut watcher, LiveStudio::GRACE)
                    .entry
                    .is_none()
                {
                    continue;
                }
                let Ok(mut wire) = state.wire.lock() else {
                    return;
                };
                wire.patch_of(studio)
            };
            emit(
                &app,
                StudioChanged::Reload {
                    patch: Box::new(patch),
                },
            );
        }
    });
}

fn recent_file(app: &AppHandle) -> Option<PathBuf> {
    app.path()
        .app_config_dir()
        .ok()
        .map(|d| d.join("recent.json"))
}

/// The recently opened folders, newest first.
pub fn recent(app: &AppHandle) -> Vec<(String, Option<String>)> {
    recent_file(app)
        .and_then(|f| std::fs::read_to_string(f).ok())
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default()
}

/// The recent folders whose folder (and session file) are still there: one that is gone (a
/// test run's scratch folder, a moved project) is not offered again.
pub fn still_there(list: Vec<(String, Option<String>)>) -> Vec<(String, Option<String>)> {
    list.into_iter()
        .filter(|(plugins, session)| {
            std::path::Path::new(plugins).is_dir()
                && session
                    .as_deref()
                    .is_none_or(|s| std::path::Path::new(s).is_file())
        })
        .collect()
}

fn remember(app: &AppHandle, plugins: &str, session: Option<&str>) {
    let Some(file) = recent_file(app) else { return };
    let mut list = recent(app);
    list.retain(|(p, s)| !(p == plugins && s.as_deref() == session));
    list.insert(0, (plugins.to_string(), session.map(str::to_string)));
    list.truncate(10);
    if let Some(dir) = file.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    if let Ok(text) = serde_json::to_string_pretty(&list)
        && let Err(error) = covel_studio::save::atomic_write(&file, text.as_bytes(), None)
    {
        tracing::warn!(%error, "cannot remember the recent folders");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recent_folders_that_are_gone_are_not_offered() {
        let dir = tempfile::tempdir().expect("temp dir");
        let session = dir.path().join("a.session.yaml");
        std::fs::write(&session, "id: a\n").expect("written");
        let here = dir.path().display().to_string();
        let list = vec![
            (here.clone(), Some(session.display().to_string())),
            (here.clone(), None),
            ("/no/such/folder".to_string(), None),
            (
                here.clone(),
                Some(dir.path().join("gone.yaml").display().to_string()),
            ),
        ];
        assert_eq!(
            still_there(list),
            [
                (here.clone(), Some(session.display().to_string())),
                (here, None)
            ]
        );
    }
}
