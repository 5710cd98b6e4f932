//! The studio as the desktop UI sees it: one snapshot with every panel's data (plugins with
//! their status and providers, the preview, compaction, playtest turns, the session). Only the
//! studio shapes what the UI receives; the app shell sends it whole on open, and as a
//! [`super::SnapshotPatch`] of its changed parts after that.

use super::common::{Diagnostic, JsonValue, Shared, all};
use super::compaction::{CompactionRun, CompactionView};
use super::plugins::{PluginStatus, PluginView, Resolution};
use super::preview::Preview;
use super::reload::ReloadEntry;
use super::turns::{BranchView, TurnRecord};
use crate::live::{LiveStudio, UndoEntry};
use covel_kernel::compaction::{self, Budget};
use covel_kernel::diagnostic;
use foldhash::HashMapExt;
use serde::Serialize;
use specta::Type;

/// What the next undo step undoes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Type)]
#[serde(rename_all = "kebab-case")]
pub enum UndoKind {
    Turn,
    SessionEdit,
    Compaction,
}

/// The next undo step.
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct UndoView {
    pub kind: UndoKind,
    pub label: String,
}

/// Everything the desktop UI shows.
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct Snapshot {
    /// Which state of the studio this is, as the wire counts them ([`super::WireState`]): a
    /// patch applies to the snapshot whose version is its `since` (0 before it was sent).
    pub version: u32,
    pub plugins_dir: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_path: Option<String>,
    /// The session in use, as the loader read it.
    #[specta(type = crate::wire::common::JsonShape)]
    pub session: JsonValue,
    /// The session file's text as on disk (what the Session panel edits), when there is a file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_text: Option<String>,
    /// Why the session file as on disk cannot be used (the previous good session stays in use).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_error: Option<Diagnostic>,
    /// What Undo would undo, for the button's label.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub undo: Option<UndoView>,
    /// Where "Save played session" writes unless the author picks another file.
    pub played_path: String,
    /// Shared with the snapshot before for every plugin whose view did not change.
    pub plugins: Vec<Shared<PluginView>>,
    pub resolution: Resolution,
    pub preview: Preview,
    /// The kernel's points and how each combines its providers (never changes).
    pub points: Vec<super::common::PointInfo>,
    /// What to know about the runtime the preview is for (a contract no active runtime
    /// produces is previewed all the same).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runtime_note: Option<String>,
    pub compaction: CompactionView,
    pub turns: Vec<TurnRecord>,
    /// The playtest's branches (one, `main`, until the author forks a turn or replays).
    pub branches: Vec<BranchView>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_reload: Option<ReloadEntry>,
    pub diagnostics: Vec<Diagnostic>,
}

impl LiveStudio {
    /// The snapshot of every panel, each plugin's view built afresh.
    pub fn snapshot(&self) -> Snapshot {
        self.snapshot_sharing(&PluginViews::default())
    }

    /// The snapshot of every panel, sharing each plugin view `kept` holds from the snapshot
    /// before where the plugin's view did not change, and keeping the views it builds
    /// ([`super::WireState`] keeps them for the window).
    pub fn snapshot_sharing(&self, kept: &PluginViews) -> Snapshot {
        let ws = self.workspace();
        // Indexed once: looking each plugin up in these lists made a snapshot quadratic in the
        // folder's size.
        let active: foldhash::HashSet<&str> =
            ws.resolution.active.iter().map(String::as_str).collect();
        let rejected: foldhash::HashMap<&str, &_> = ws
            .resolution
            .rejected
            .iter()
            .map(|r| (r.plugin.as_str(), r))
            .collect();
        let mut studio_notes: foldhash::HashMap<&str, Vec<&str>> = foldhash::HashMap::new();
        for call in &self.preview().calls {
            for line in &call.notes {
                studio_notes.entry(&*call.plugin_id).or_default().push(line);
            }
        }
        let mut kept = kept.0.lock().unwrap_or_else(|e| e.into_inner());
        let plugins = ws
            .plugins
            .iter()
            .map(|p| {
                let rejection = rejected.get(p.name.as_str()).copied();
                let failures = ws.reload_failures.get(&p.name);
                let status = if failures.is_some() {
                    PluginStatus::LastGood
                } else if !p.ok() {
                    PluginStatus::Failed
                } else if active.contains(p.name.as_str()) {
                    PluginStatus::Active
                } else if rejection.is_some() {
                    PluginStatus::Rejected
                } else {
                    PluginStatus::Inactive
                };
                let notes = studio_notes
                    .get(p.name.as_str())
                    .map_or(&[][..], Vec::as_slice);
                let key = PluginViewKey {
                    load_id: p.load_id,
                    status,
                    rejection: rejection.cloned(),
                    failures: failures.cloned(),
                    notes: notes.iter().map(|n| n.to_string()).collect(),
                };
                let fresh = || Shared::new(plugin_view(p, status, rejection, failures, notes));
                match kept.get_mut(&p.name) {
                    Some((was, view)) if *was == key => view.clone(),
                    Some(entry) => {
                        *entry = (key, fresh());
                        entry.1.clone()
                    }
                    None => {
                        let view = fresh();
                        kept.insert(p.name.clone(), (key, view.clone()));
                        view
                    }
                }
            })
            .collect();
        // Every plugin listed has its entry now: any more belong to plugins that are gone.
        if kept.len() > ws.plugins.len() {
            let listed: foldhash::HashSet<&str> =
                ws.plugins.iter().map(|p| p.name.as_str()).collect();
            kept.retain(|name, _| listed.contains(name.as_str()));
        }
        drop(kept);
        let windows = ws.windows();
        let estimated = compaction::estimate_with_system(
            self.preview().prompt.system_and_turn_context_tally(),
            &ws.session.history.messages,
            &ws.session.history.summaries,
        );
        Snapshot {
            version: 0,
            plugins_dir: ws.plugins_dir.display().to_string(),
            session_path: ws.session_path.as_ref().map(|p| p.display().to_string()),
            session: serde_json::to_value(&ws.session).unwrap_or_default().into(),
            session_text: ws.session_text.clone(),
            session_error: ws.session_error.as_ref().map(Into::into),
            undo: self.next_undo().map(|u| match u {
                UndoEntry::Turn => UndoView {
                    kind: UndoKind::Turn,
                    label: format!(
                        "Undo {}",
                        self.turns()
                            .last()
                            .map_or("the last turn", |t| t.turn_id.as_str())
                    ),
                },
                UndoEntry::SessionEdit { .. } => UndoView {
                    kind: UndoKind::SessionEdit,
                    label: "Undo the session edit (restores the file)".into(),
                },
                UndoEntry::Compaction => UndoView {
                    kind: UndoKind::Compaction,
                    label: "Undo the compaction".into(),
                },
            }),
            played_path: self.played_default_path().display().to_string(),
            plugins,
            resolution: (&ws.resolution).into(),
            preview: Preview::of(self.preview(), self.prompt_counts(self.preview())),
            points: super::common::PointInfo::all(),
            runtime_note: ws.runtime_note(self.target()),
            compaction: CompactionView {
                windows: windows.into(),
                budget: Budget::for_window(windows.context_window).into(),
                estimated_tokens: estimated,
                threshold_tokens: f64::from(windows.context_window) * compaction::THRESHOLD,
                summaries: all(&ws.session.history.summaries),
                consecutive_failures: self.play().failures.consecutive,
                last_run: self
                    .forced_compaction()
                    .or_else(|| {
                        self.turns()
                            .iter()
                            .rev()
                            .find_map(|t| t.compaction.as_ref())
                    })
                    .map(CompactionRun::from),
            },
            turns: self.turns().iter().map(Into::into).collect(),
            branches: BranchView::all(self.branches()),
            last_reload: self.last_reload().map(Into::into),
            diagnostics: ws.diagnostics().map(Into::into).collect(),
        }
    }
}

/// What a plugin's view is made of besides the loaded plugin itself: the view kept under an
/// equal key is the view [`plugin_view`] would build again.
#[derive(PartialEq)]
struct PluginViewKey {
    /// The load the view shows (`LoadedPlugin::load_id`: a reload is another load).
    load_id: u64,
    status: PluginStatus,
    rejection: Option<covel_kernel::resolver::Rejection>,
    failures: Option<Vec<diagnostic::Diagnostic>>,
    notes: Vec<String>,
}

/// The plugin views of the last snapshot, by folder name, with what each was made of: a save
/// changes one plugin, and the snapshot after it shares every other view with the one before
/// (at 500 plugins, building and comparing every view cost ≈ 2M instructions a save).
#[derive(Default)]
pub struct PluginViews(
    std::sync::Mutex<foldhash::HashMap<String, (PluginViewKey, Shared<PluginView>)>>,
);

impl PluginViews {
    /// Drops the kept views: the next snapshot builds every one again (on open, and for tests
    /// that compare those with the views a snapshot shares).
    pub fn forget(&self) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }
}

/// One plugin as the Plugins panel shows it.
fn plugin_view(
    p: &covel_js::LoadedPlugin,
    status: PluginStatus,
    rejection: Option<&covel_kernel::resolver::Rejection>,
    failures: Option<&Vec<diagnostic::Diagnostic>>,
    notes: &[&str],
) -> PluginView {
    let manifest = p.package.as_ref().map(|pkg| &pkg.manifest);
    let mut diagnostics = p.diagnostics.clone();
    diagnostics.extend(failures.cloned().unwrap_or_default());
    let mut hints = p.hints.clone();
    for line in notes {
        if !hints.iter().any(|h| h.message == *line) {
            hints.push(
                diagnostic::Diagnostic::new(covel_kernel::Code::RowShapedRead, *line)
                    .plugin(&p.name),
            );
        }
    }
    PluginView {
        name: p.name.clone(),
        status,
        display_name: manifest
            .and_then(|m| m.display_name.as_ref())
            .map(Into::into),
        description: manifest.map(|m| (&m.description).into()),
        rejection: rejection.map(Into::into),
        diagnostics: all(&diagnostics),
        hints: all(&hints),
        providers: manifest.map(|m| all(&m.extensions)).unwrap_or_default(),
        has_static_prompt: manifest.is_some_and(|m| !m.static_prompt.is_empty()),
        inventory: (&p.registrations).into(),
        runtimes: manifest.map(|m| m.runtime_ids()).unwrap_or_default(),
        load_ms: p.load_time.as_secs_f64() * 1000.0,
    }
}
