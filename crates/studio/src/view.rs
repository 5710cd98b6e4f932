//! The studio as the desktop UI sees it: one serializable snapshot with every panel's data
//! (plugins with their status and providers, the preview, compaction, playtest turns, the
//! session). Only this crate and the app shell shape what the UI receives.

use crate::live::{LiveStudio, ReloadEntry, UndoEntry, UndoKind};
use crate::playtest::TurnRecord;
use crate::preview::Preview;
use covel_kernel::compaction::{self, Budget, Windows};
use covel_kernel::diagnostic::Diagnostic;
use covel_kernel::manifest::ExtensionDecl;
use covel_kernel::registration::Registrations;
use covel_kernel::resolver::{Rejection, Resolution};
use serde::Serialize;
use serde_json::Value;

/// A plugin's state in the session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PluginStatus {
    Active,
    /// Loaded but the resolver did not activate it (see `rejection`).
    Rejected,
    /// Loaded but not requested by the session.
    Inactive,
    /// Failed to load; nothing of it runs.
    Failed,
    /// Its latest reload failed; the last good version keeps running.
    LastGood,
}

/// One plugin for the Plugins panel.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PluginView {
    pub name: String,
    pub status: PluginStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub display_name: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rejection: Option<Rejection>,
    pub diagnostics: Vec<Diagnostic>,
    /// Hints that do not stop the plugin: source checks (row-shaped `pluginData` reads) and
    /// what the studio noticed while its handlers ran.
    pub hints: Vec<Diagnostic>,
    pub providers: Vec<ExtensionDecl>,
    pub has_static_prompt: bool,
    pub inventory: Registrations,
    pub runtimes: Vec<String>,
    pub load_ms: f64,
}

/// The compaction panel: where the session stands against the threshold.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CompactionView {
    pub windows: Windows,
    pub budget: Budget,
    pub estimated_tokens: u64,
    pub threshold_tokens: f64,
    pub summaries: Vec<Value>,
    pub consecutive_failures: u32,
    /// The last run during a playtest, with its provider output and verdict.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_run: Option<crate::compaction::CompactionRun>,
}

/// The next undo step.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UndoView {
    pub kind: UndoKind,
    pub label: String,
}

/// Everything the desktop UI shows.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Snapshot {
    pub plugins_dir: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_path: Option<String>,
    pub session: Value,
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
    pub plugins: Vec<PluginView>,
    pub resolution: Resolution,
    pub preview: Preview,
    pub compaction: CompactionView,
    pub turns: Vec<TurnRecord>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_reload: Option<ReloadEntry>,
    pub diagnostics: Vec<Diagnostic>,
}

impl LiveStudio {
    /// The snapshot of every panel.
    pub fn snapshot(&self) -> Snapshot {
        let ws = self.workspace();
        let plugins = ws
            .plugins
            .iter()
            .map(|p| {
                let manifest = p.package.as_ref().map(|pkg| &pkg.manifest);
                let rejection = ws
                    .resolution
                    .rejected
                    .iter()
                    .find(|r| r.plugin == p.name)
                    .cloned();
                let status = if ws.reload_failures.contains_key(&p.name) {
                    PluginStatus::LastGood
                } else if !p.ok() {
                    PluginStatus::Failed
                } else if ws.resolution.is_active(&p.name) {
                    PluginStatus::Active
                } else if rejection.is_some() {
                    PluginStatus::Rejected
                } else {
                    PluginStatus::Inactive
                };
                let mut diagnostics = p.diagnostics.clone();
                diagnostics.extend(ws.reload_failures.get(&p.name).cloned().unwrap_or_default());
                let mut hints = p.hints.clone();
                for call in self.preview.calls.iter().filter(|c| c.plugin_id == p.name) {
                    for line in call.logs.iter().filter_map(|l| l.strip_prefix("[studio] ")) {
                        if !hints.iter().any(|h| h.message == line) {
                            hints.push(
                                Diagnostic::new(covel_kernel::Code::RowShapedRead, line)
                                    .plugin(&p.name),
                            );
                        }
                    }
                }
                PluginView {
                    name: p.name.clone(),
                    status,
                    display_name: manifest
                        .and_then(|m| m.display_name.as_ref())
                        .and_then(|d| serde_json::to_value(d).ok()),
                    description: manifest.and_then(|m| serde_json::to_value(&m.description).ok()),
                    rejection,
                    diagnostics,
                    hints,
                    providers: manifest.map(|m| m.extensions.clone()).unwrap_or_default(),
                    has_static_prompt: manifest.is_some_and(|m| !m.static_prompt.is_empty()),
                    inventory: p.registrations.clone(),
                    runtimes: manifest
                        .map(|m| m.runtimes.iter().map(|r| r.id.clone()).collect())
                        .unwrap_or_default(),
                    load_ms: p.load_time.as_secs_f64() * 1000.0,
                }
            })
            .collect();
        let windows = ws.windows();
        let estimated = compaction::estimate(
            &self.preview.prompt.system_and_turn_context(),
            &ws.session.history.messages,
            &ws.session.history.summaries,
        );
        Snapshot {
            plugins_dir: ws.plugins_dir.display().to_string(),
            session_path: ws.session_path.as_ref().map(|p| p.display().to_string()),
            session: serde_json::to_value(&ws.session).unwrap_or(Value::Null),
            session_text: ws.session_text.clone(),
            session_error: ws.session_error.clone(),
            undo: self.next_undo().map(|u| match u {
                UndoEntry::Turn => UndoView {
                    kind: UndoKind::Turn,
                    label: format!(
                        "Undo {}",
                        self.turns
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
            resolution: ws.resolution.clone(),
            preview: self.preview.clone(),
            compaction: CompactionView {
                windows,
                budget: Budget::for_window(windows.context_window),
                estimated_tokens: estimated,
                threshold_tokens: f64::from(windows.context_window) * compaction::THRESHOLD,
                summaries: ws.session.history.summaries.clone(),
                consecutive_failures: self.play.failures.consecutive,
                last_run: self
                    .forced_compaction
                    .clone()
                    .or_else(|| self.turns.iter().rev().find_map(|t| t.compaction.clone())),
            },
            turns: self.turns.clone(),
            last_reload: self.last_reload.clone(),
            diagnostics: ws.diagnostics().cloned().collect(),
        }
    }
}
