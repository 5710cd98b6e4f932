//! The live studio: a workspace that follows the disk. File changes are debounced (a burst of
//! saves becomes one reload with the final state), classified by plugin folder or session
//! file, reloaded (only what changed), and every reload yields an entry with the diff, the
//! diagnostics and the timings. The CLI's `covel watch` and the desktop app both use it.

use crate::diff::{PreviewDiff, diff};
use crate::preview::{Preview, RuntimeTarget};
use crate::slots::{SlotChange, SlotHost, Trigger};
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

/// A workspace with its current preview.
pub struct LiveStudio {
    pub workspace: Workspace,
    pub target: RuntimeTarget,
    pub preview: Preview,
    pub slots: SlotHost,
}

impl LiveStudio {
    pub fn new(workspace: Workspace, target: RuntimeTarget) -> LiveStudio {
        let preview = workspace.preview(&target);
        let mut slots = SlotHost::default();
        slots.apply(&workspace, &Trigger::All);
        LiveStudio { workspace, target, preview, slots }
    }

    /// Classifies changed paths.
    pub fn classify(&self, paths: &[PathBuf]) -> ChangeSet {
        let root = self.workspace.plugins_dir.canonicalize().unwrap_or_else(|_| self.workspace.plugins_dir.clone());
        let session = self.workspace.session_path.as_ref().map(|p| p.canonicalize().unwrap_or_else(|_| p.clone()));
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
            if relative.components().count() == 1 && !canonical.is_dir() && self.workspace.plugins.iter().all(|p| p.name != name) {
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
        for name in &changes.plugins {
            plugins.insert(name.clone(), self.workspace.reload_plugin(name));
        }
        let session_reloaded = changes.session && self.workspace.reload_session();
        let load_ms = ms(started);
        let t = Instant::now();
        self.workspace.resolve();
        let resolve_ms = ms(t);
        let t = Instant::now();
        let preview = self.workspace.preview(&self.target);
        let preview_ms = ms(t);
        let diff = diff(&self.preview, &preview);
        self.preview = preview;
        let trigger = if session_reloaded { Trigger::All } else { Trigger::PluginsChanged };
        let slot_changes = self.slots.apply(&self.workspace, &trigger);
        ReloadEntry {
            paths: changes.paths.clone(),
            plugins,
            session_reloaded,
            diff,
            slot_changes,
            diagnostics: self.workspace.diagnostics().cloned().collect(),
            timings: ReloadTimings {
                reload_ms: ms(first_event),
                after_debounce_ms: ms(started),
                load_ms,
                resolve_ms,
                preview_ms,
            },
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
    _debouncer: notify_debouncer_full::Debouncer<notify_debouncer_full::notify::RecommendedWatcher, notify_debouncer_full::RecommendedCache>,
    events: Receiver<DebounceEventResult>,
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
        Ok(FolderWatcher { _debouncer: debouncer, events })
    }

    /// Waits for the next batch that changed something (None on timeout or when the watcher
    /// stopped). Opening or reading a file is not a change; closing it after a write is.
    pub fn next(&self, timeout: Duration) -> Option<Batch> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let events = self.events.recv_timeout(left).ok()?.unwrap_or_default();
            let changes: Vec<_> = events.into_iter().filter(|e| is_change(&e.kind)).collect();
            if changes.is_empty() {
                continue;
            }
            let first_event = changes.iter().map(|e| e.time).min().unwrap_or_else(Instant::now);
            let mut paths: Vec<PathBuf> = changes.into_iter().flat_map(|e| e.event.paths).collect();
            paths.sort();
            paths.dedup();
            return Some(Batch { paths, first_event });
        }
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
