//! The live studio: a workspace that follows the disk. File changes are debounced (a burst of
//! saves becomes one reload with the final state), classified by plugin folder or session
//! file, reloaded (only what changed), and every reload yields an entry with the diff, the
//! diagnostics and the timings. The CLI's `covel watch` and the desktop app both use it.

use crate::diff::{PreviewDiff, diff};
use crate::playtest::{Playtest, TurnReport};
use crate::preview::{Preview, RuntimeTarget};
use crate::slots::{SlotChange, Trigger};
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
    pub slot_changes: Vec<SlotChange>,
    pub diagnostics: Vec<Diagnostic>,
    pub timings: ReloadTimings,
}

/// A workspace with its current preview, its playtest and its last reload.
pub struct LiveStudio {
    /// The playtest owns the workspace, the slot host and the undo history.
    pub play: Playtest,
    pub target: RuntimeTarget,
    pub preview: Preview,
    pub last_reload: Option<ReloadEntry>,
    pub turns: Vec<TurnReport>,
    /// Exact token counts remembered across refreshes (the Cache panel recounts only changes).
    pub counter: crate::tokens::TokenCounter,
}

impl LiveStudio {
    pub fn new(workspace: Workspace, target: RuntimeTarget) -> LiveStudio {
        let preview = workspace.preview(&target);
        LiveStudio { play: Playtest::new(workspace), target, preview, last_reload: None, turns: Vec::new(), counter: Default::default() }
    }

    pub fn workspace(&self) -> &Workspace {
        &self.play.workspace
    }

    /// Switches the previewed runtime.
    pub fn set_target(&mut self, target: RuntimeTarget) {
        self.target = target;
        self.refresh();
    }

    /// Recomputes the preview from the current state.
    pub fn refresh(&mut self) {
        self.preview = self.play.workspace.preview(&self.target);
    }

    /// Plays a turn and refreshes the preview.
    pub fn play_turn(&mut self, message: &str) -> TurnReport {
        self.play_turn_cancellable(message, &std::sync::atomic::AtomicBool::new(false))
    }

    /// Plays a turn that `cancel` can stop before anything is appended.
    pub fn play_turn_cancellable(&mut self, message: &str, cancel: &std::sync::atomic::AtomicBool) -> TurnReport {
        let report = self.play.play_cancellable(message, cancel);
        self.turns.push(report.clone());
        self.refresh();
        report
    }

    /// Replaces the session with an edited one (validated like a session file), saves it
    /// atomically to the session file when there is one, and re-runs the preview.
    pub fn update_session(&mut self, edited: serde_json::Value) -> Result<(), Diagnostic> {
        let session: covel_kernel::session::Session = serde_json::from_value(edited).map_err(|e| {
            Diagnostic::new(covel_kernel::Code::SessionSchema, format!("the edited session is not valid: {e}"))
        })?;
        if let Some(path) = self.play.workspace.session_path.clone() {
            // Written safely (crate::save): checked, atomic, the previous text kept as `.bak`.
            crate::playtest::save_session(&session, &path)
                .map_err(|e| Diagnostic::new(covel_kernel::Code::SessionSchema, format!("cannot save the session: {e}")).file(&path))?;
        }
        self.play.workspace.session = session;
        self.play.workspace.resolve();
        self.play.slots.apply(&self.play.workspace, &Trigger::All);
        self.refresh();
        Ok(())
    }

    /// Undoes the last turn.
    pub fn undo(&mut self) -> bool {
        let undone = self.play.undo();
        if undone {
            self.turns.pop();
            self.refresh();
        }
        undone
    }

    /// Classifies changed paths.
    pub fn classify(&self, paths: &[PathBuf]) -> ChangeSet {
        let workspace = &self.play.workspace;
        let root = workspace.plugins_dir.canonicalize().unwrap_or_else(|_| workspace.plugins_dir.clone());
        let session = workspace.session_path.as_ref().map(|p| p.canonicalize().unwrap_or_else(|_| p.clone()));
        let mut set = ChangeSet::default();
        for path in paths {
            let canonical = canonical_or_parent(path);
            if session.as_ref() == Some(&canonical) {
                set.session = true;
                set.paths.push(path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default());
                continue;
            }
            let Ok(relative) = canonical.strip_prefix(&root) else { continue };
            let Some(first) = relative.components().next() else { continue };
            let name = first.as_os_str().to_string_lossy().into_owned();
            // Files directly in the plugins folder (the demo session, a README) are not plugins.
            if relative.components().count() == 1 && !canonical.is_dir() && workspace.plugins.iter().all(|p| p.name != name) {
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

    /// Applies a change set: reloads what changed, re-resolves, recomputes the preview.
    pub fn reload(&mut self, changes: &ChangeSet, first_event: Instant) -> ReloadEntry {
        let started = Instant::now();
        let mut plugins = BTreeMap::new();
        let workspace = &mut self.play.workspace;
        for name in &changes.plugins {
            plugins.insert(name.clone(), workspace.reload_plugin(name));
        }
        let session_reloaded = changes.session && workspace.reload_session();
        let load_ms = ms(started);
        let t = Instant::now();
        workspace.resolve();
        let resolve_ms = ms(t);
        let t = Instant::now();
        let preview = workspace.preview(&self.target);
        let preview_ms = ms(t);
        let diff = diff(&self.preview, &preview);
        self.preview = preview;
        let trigger = if session_reloaded { Trigger::All } else { Trigger::PluginsChanged };
        let slot_changes = self.play.slots.apply(&self.play.workspace, &trigger);
        let entry = ReloadEntry {
            paths: changes.paths.clone(),
            plugins,
            session_reloaded,
            diff,
            slot_changes,
            diagnostics: self.play.workspace.diagnostics().cloned().collect(),
            timings: ReloadTimings {
                reload_ms: ms(first_event),
                after_debounce_ms: ms(started),
                load_ms,
                resolve_ms,
                preview_ms,
            },
        };
        self.last_reload = Some(entry.clone());
        entry
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
    _debouncer: notify_debouncer_full::Debouncer<notify_debouncer_full::notify::RecommendedWatcher, notify_debouncer_full::RecommendedCache>,
    events: Receiver<DebounceEventResult>,
    debounce: Duration,
}

/// A batch of changed paths with the time of its first event.
pub struct Batch {
    pub paths: Vec<PathBuf>,
    pub first_event: Instant,
}

impl FolderWatcher {
    /// Watches `plugins_dir` recursively (and the session file's folder).
    pub fn new(plugins_dir: &Path, session: Option<&Path>, debounce: Duration) -> notify_debouncer_full::notify::Result<FolderWatcher> {
        let (tx, events) = mpsc::channel();
        let mut debouncer = new_debouncer(debounce, None, tx)?;
        debouncer.watch(plugins_dir, RecursiveMode::Recursive)?;
        if let Some(dir) = session.and_then(Path::parent).filter(|d| !d.as_os_str().is_empty())
            && !dir.canonicalize().ok().zip(plugins_dir.canonicalize().ok()).is_some_and(|(d, p)| d.starts_with(p))
        {
            debouncer.watch(dir, RecursiveMode::NonRecursive)?;
        }
        Ok(FolderWatcher { _debouncer: debouncer, events, debounce })
    }

    /// Waits for the next batch that changed something (None on timeout or when the watcher
    /// stopped). Opening or reading a file is not a change; closing it after a write is.
    pub fn next(&self, timeout: Duration) -> Option<Batch> {
        let deadline = Instant::now() + timeout;
        let mut changes = Vec::new();
        while changes.is_empty() {
            let left = deadline.saturating_duration_since(Instant::now());
            let events = self.events.recv_timeout(left).ok()?.unwrap_or_default();
            changes.extend(events.into_iter().filter(|e| is_change(&e.kind)));
        }
        // On a busy machine the debouncer can split one burst (its thread saw the queue late);
        // batches that follow within half a debounce window are the same burst.
        while let Ok(more) = self.events.recv_timeout(self.debounce / 2) {
            changes.extend(more.unwrap_or_default().into_iter().filter(|e| is_change(&e.kind)));
        }
        let first_event = changes.iter().map(|e| e.time).min().unwrap_or_else(Instant::now);
        let mut paths: Vec<PathBuf> = changes.into_iter().flat_map(|e| e.event.paths).collect();
        paths.sort();
        paths.dedup();
        Some(Batch { paths, first_event })
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
