//! `covel watch PLUGINS_DIR [--session FILE]`: follows the folder and prints one entry per
//! reload — what changed, the diff it made, diagnostics and timings — and a line when, while the
//! author is idle, the memo's confirmation ran calls a second time (`memo-confirmed`: how many,
//! how long), since a handler sees those calls too.

use anyhow::Context;
use covel_studio::live::{FolderWatcher, LiveStudio};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(clap::Args)]
pub struct Args {
    /// The plugins folder.
    plugins_dir: PathBuf,
    /// The test session (its file is watched too).
    #[arg(long)]
    session: Option<PathBuf>,
    /// The runtime previews are assembled for: story, plugin:ID or contract:C.
    #[arg(long, default_value = "story")]
    runtime: String,
    /// Settle time in milliseconds: events this close together are one reload.
    #[arg(long, default_value_t = FolderWatcher::SETTLE.as_millis() as u64)]
    debounce_ms: u64,
    /// How long a reload that finds a freshly broken plugin waits for the rest of an editor's
    /// save before reporting it, in milliseconds.
    #[arg(long, default_value_t = LiveStudio::GRACE.as_millis() as u64)]
    grace_ms: u64,
    /// Stop after this many reloads (for scripts and tests).
    #[arg(long)]
    max_reloads: Option<usize>,
    /// One JSON object per line.
    #[arg(long)]
    json: bool,
}

pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let target = crate::open::runtime(&args.runtime)?;
    // The watch starts before the folder is read: a save made while it loads is the first
    // reload, not lost. A folder that cannot be read says so first (the watch of a missing
    // folder fails too, less clearly).
    let watcher = FolderWatcher::new(
        &args.plugins_dir,
        args.session.as_deref(),
        Duration::from_millis(args.debounce_ms),
    );
    let workspace = crate::open::workspace(&args.plugins_dir, args.session.as_deref())?;
    let mut watcher = watcher.context("starting the file watcher")?;
    let mut studio = LiveStudio::new(workspace, target);
    let ready = serde_json::json!({"event": "ready", "plugins": studio.workspace().plugins.len(), "active": studio.workspace().resolution.active});
    if args.json {
        crate::say!("{ready}");
    } else {
        crate::say!(
            "watching {} ({}); save a file to reload",
            args.plugins_dir.display(),
            covel_studio::words::counted(studio.workspace().plugins.len(), "plugin")
        );
    }
    std::io::stdout().flush().ok();
    let mut reloads = 0;
    loop {
        if args.max_reloads.is_some_and(|max| reloads >= max) {
            return Ok(ExitCode::SUCCESS);
        }
        // While the author is idle, the memo is confirmed, so the next save runs only what it
        // changed.
        let quiet = if studio.needs_confirming() {
            LiveStudio::CONFIRM_AFTER
        } else {
            Duration::from_secs(3600)
        };
        let Some(followed) =
            studio.follow(&mut watcher, quiet, Duration::from_millis(args.grace_ms))
        else {
            if studio.needs_confirming() {
                let started = std::time::Instant::now();
                let calls = studio.confirm_memo();
                let ms = started.elapsed().as_secs_f64() * 1000.0;
                if args.json {
                    crate::say!(
                        "{}",
                        serde_json::json!({"event": "memo-confirmed", "calls": calls, "ms": ms})
                    );
                } else if calls > 0 {
                    crate::say!(
                        "idle: ran {} a second time, as the memo asks before it answers them ({ms:.1} ms)",
                        covel_studio::words::counted(calls, "call")
                    );
                }
            }
            continue;
        };
        if let Some(note) = &followed.note {
            if args.json {
                crate::say!("{}", serde_json::json!({"event": "watch", "note": note}));
            } else {
                crate::say!("{note}");
            }
        }
        let Some(entry) = followed.entry else {
            continue;
        };
        reloads += 1;
        if args.json {
            crate::say!("{}", serde_json::to_string(&entry)?);
        } else {
            crate::say!(
                "preview ready {:.1} ms after the first event ({:.1} ms of work): {}",
                entry.timings.reload_ms,
                entry.timings.after_debounce_ms,
                entry.paths.join(", ")
            );
            for (plugin, what) in &entry.plugins {
                crate::say!("  {plugin}: {what:?}");
            }
            for s in &entry.diff.segments {
                crate::say!("  segment {:?}: {}/{}", s.kind, s.plugin, s.id);
            }
            for s in &entry.diff.slots {
                crate::say!(
                    "  slot {}{} changed (by {})",
                    s.slot,
                    s.key.as_ref().map(|k| format!("[{k}]")).unwrap_or_default(),
                    s.plugins.join(", ")
                );
            }
            for b in &entry.diff.boundaries {
                crate::say!(
                    "  cache boundary {} prefix changed{}",
                    b.index,
                    b.plugin
                        .as_ref()
                        .map(|p| format!(" (by {p})"))
                        .unwrap_or_default()
                );
            }
            for d in &entry.diagnostics {
                crate::say!("  ✗ {d}");
            }
        }
        std::io::stdout().flush().ok();
    }
}
