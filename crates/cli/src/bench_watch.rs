//! `covel bench --watch-edits N`: edits one plugin's entry N times with the folder watched the
//! way `covel watch` watches it, and reports the distribution of file written → new preview
//! ready (the author's wait on a save), with the part of it that is work after the settle time
//! and that work's parts (load, resolve, preview, and the preview's own parts: the segment calls
//! of its two turns, their assembly, the world context, the slots, the rest), and the size of
//! the patch the desktop app would send its window for each reload (`WireState::patch_of`). Between edits the memo is
//! confirmed, as the shells do while the author is idle (`LiveStudio::confirm_memo`), and the
//! folder stays quiet for the pause given (`--watch-pause`). An edit appends a comment (a save
//! that changes no output), or with `--watch-replace TEXT` puts its number after TEXT in the
//! first module that holds it (a save that changes what the plugin contributes, such as a
//! segment's text: the patch then carries the text's change).

use anyhow::Context;
use covel_studio::RuntimeTarget;
use covel_studio::Workspace;
use covel_studio::live::{FolderWatcher, LiveStudio};
use covel_studio::wire::WireState;
use serde_json::json;
use std::path::Path;
use std::time::{Duration, Instant};

/// Median, 90th percentile and maximum of samples (milliseconds, or bytes for patch sizes).
pub fn distribution(mut samples: Vec<f64>) -> serde_json::Value {
    samples.sort_by(f64::total_cmp);
    let at = |q: f64| {
        samples
            .get(((samples.len() as f64 - 1.0) * q).round() as usize)
            .copied()
    };
    json!({"samples": samples.len(), "median": at(0.5), "p90": at(0.9), "max": samples.last()})
}

/// How long the previous reload's stray events get to drain before an edit.
const DRAIN: Duration = Duration::from_millis(30);

/// How each edit changes the file it edits.
#[derive(Debug, Clone, Copy)]
pub enum Edit<'a> {
    /// Appends a comment to the first loaded plugin's entry: no output changes.
    Comment,
    /// Puts the edit's number after this text, in the first module of a loaded plugin that
    /// holds it.
    Replace(&'a str),
}

/// The plugin and the module file an edit changes, with the file's text.
fn edited_file(
    workspace: &Workspace,
    edit: Edit<'_>,
) -> anyhow::Result<(String, std::path::PathBuf, String)> {
    let read = |file: &Path| {
        std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))
    };
    let loaded: Vec<_> = workspace.plugins.iter().filter(|p| p.ok()).collect();
    let Some(first) = loaded.first() else {
        anyhow::bail!("no plugin of the folder loaded, so there is nothing to edit");
    };
    let wanted = match edit {
        Edit::Comment => {
            let file = first
                .modules
                .first()
                .with_context(|| format!("the plugin {} has no module file", first.name))?;
            return Ok((first.name.clone(), file.clone(), read(file)?));
        }
        Edit::Replace(wanted) => wanted,
    };
    for plugin in &loaded {
        for file in &plugin.modules {
            let text = read(file)?;
            if text.contains(wanted) {
                return Ok((plugin.name.clone(), file.clone(), text));
            }
        }
    }
    anyhow::bail!("no module of a loaded plugin holds the text {wanted:?} (--watch-replace)")
}

/// Edits a plugin `edits` times as `edit` says, each after `pause` of quiet (at least
/// [`DRAIN`]), and measures each reload.
pub fn run(
    plugins_dir: &Path,
    workspace: Workspace,
    edits: usize,
    pause: Duration,
    edit: Edit<'_>,
) -> anyhow::Result<serde_json::Value> {
    let (name, file, original) = edited_file(&workspace, edit)?;
    let mut watcher = FolderWatcher::new(plugins_dir, None, FolderWatcher::SETTLE)
        .context("starting the file watcher")?;
    let mut studio = LiveStudio::new(workspace, RuntimeTarget::Story);
    let (mut written_to_ready, mut work, mut missed) = (Vec::new(), Vec::new(), 0);
    // The work's parts: the plugin's reload, resolving the session, the new preview.
    let (mut load, mut resolve, mut preview) = (Vec::new(), Vec::new(), Vec::new());
    let mut preview_parts = PreviewParts::default();
    // What the window already holds, as the app tracks it: each reload then crosses as a patch.
    let mut wire = WireState::default();
    // What the window receives on open: the whole snapshot.
    let snapshot_bytes = serde_json::to_vec(&wire.opened(&studio))?.len();
    let mut patch_bytes = Vec::new();
    // What making the patch takes after the preview is ready (a snapshot of the studio compared
    // part by part with what the window holds, then serialized), as the app does per reload.
    let mut patch_ms = Vec::new();
    // How many of the patches carried a change of the prompt (a text edit's do; a comment's not).
    let mut prompt_patches = 0;
    let outcome = (|| -> anyhow::Result<()> {
        for i in 0..edits {
            // Let the previous reload's stray events drain, as between an author's saves; then,
            // as `covel watch` and the app do while the author is idle, confirm the memo.
            std::thread::sleep(DRAIN);
            let quiet = Instant::now();
            if studio.needs_confirming() {
                studio.confirm_memo();
            }
            // The rest of the pause: an author's next save comes seconds later.
            std::thread::sleep(pause.saturating_sub(DRAIN).saturating_sub(quiet.elapsed()));
            let written = Instant::now();
            let edited = match edit {
                Edit::Comment => format!("{original}\n// covel bench edit {i}\n"),
                Edit::Replace(text) => original.replacen(text, &format!("{text} {i}"), 1),
            };
            std::fs::write(&file, edited).with_context(|| format!("writing {}", file.display()))?;
            let deadline = written + Duration::from_secs(5);
            loop {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    missed += 1;
                    break;
                }
                let Some(followed) = studio.follow(&mut watcher, left, LiveStudio::GRACE) else {
                    continue;
                };
                if let Some(entry) = followed.entry.filter(|e| e.plugins.contains_key(&name)) {
                    written_to_ready.push(written.elapsed().as_secs_f64() * 1000.0);
                    work.push(entry.timings.after_debounce_ms);
                    load.push(entry.timings.load_ms);
                    resolve.push(entry.timings.resolve_ms);
                    preview.push(entry.timings.preview_ms);
                    preview_parts.add(&studio.preview().timings);
                    let making = Instant::now();
                    let patch = wire.patch_of(&studio);
                    let bytes = serde_json::to_vec(&patch)?;
                    patch_ms.push(making.elapsed().as_secs_f64() * 1000.0);
                    patch_bytes.push(bytes.len() as f64);
                    if patch.preview.is_some_and(|p| p.prompt.is_some()) {
                        prompt_patches += 1;
                    }
                    break;
                }
            }
        }
        Ok(())
    })();
    std::fs::write(&file, &original).with_context(|| format!("restoring {}", file.display()))?;
    outcome?;
    Ok(json!({
        "plugin": name,
        "file": file.display().to_string(),
        "edit": match edit {
            Edit::Comment => json!("comment"),
            Edit::Replace(text) => json!({ "replace": text }),
        },
        "edits": edits,
        "missed": missed,
        "debounceMs": FolderWatcher::SETTLE.as_secs_f64() * 1000.0,
        "pauseMs": pause.max(DRAIN).as_secs_f64() * 1000.0,
        "writtenToReadyMs": distribution(written_to_ready),
        "workMs": distribution(work),
        "loadMs": distribution(load),
        "resolveMs": distribution(resolve),
        "previewMs": distribution(preview),
        "previewParts": preview_parts.report(),
        "snapshotBytes": snapshot_bytes,
        "patchBytes": distribution(patch_bytes),
        "patchMs": distribution(patch_ms),
        "patchesWithPrompt": prompt_patches,
    }))
}

/// The preview's parts, per reload: what asking the providers costs against what the prompt's
/// size costs (a reload's preview asks every provider again, answered from the memo).
#[derive(Default)]
struct PreviewParts {
    segment_calls: Vec<f64>,
    assembly: Vec<f64>,
    world_context: Vec<f64>,
    slots: Vec<f64>,
    /// History transforms, the cache analysis, the image flow and the request bodies.
    rest: Vec<f64>,
}

impl PreviewParts {
    fn add(&mut self, t: &covel_studio::PreviewTimings) {
        self.segment_calls.push(t.segment_calls_ms);
        self.assembly.push(t.assembly_ms);
        self.world_context.push(t.world_context_ms);
        self.slots.push(t.slots_ms);
        let parts = t.segment_calls_ms + t.assembly_ms + t.world_context_ms + t.slots_ms;
        self.rest.push((t.total_ms - parts).max(0.0));
    }

    fn report(self) -> serde_json::Value {
        json!({
            "segmentCallsMs": distribution(self.segment_calls),
            "assemblyMs": distribution(self.assembly),
            "worldContextMs": distribution(self.world_context),
            "slotsMs": distribution(self.slots),
            "restMs": distribution(self.rest),
        })
    }
}
