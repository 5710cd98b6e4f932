//! `covel bench PLUGINS_DIR [--iterations N] [--turns N] [--watch-edits N] [--json]`: how fast
//! this folder previews, measured the way the Node yardstick in shared/bench measures itself
//! (load, first and median preview of segments + five slots + world context, peak memory), plus
//! the studio's full preview; `--turns` the memory a played turn retains, `--watch-edits` the
//! file written → preview ready distribution. `covel bench --no-memo` runs every provider call.

use crate::output::print_json;
use covel_studio::RuntimeTarget;
use covel_studio::live::LiveStudio;
use serde_json::json;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

#[derive(clap::Args)]
pub struct Args {
    /// The plugins folder.
    plugins_dir: PathBuf,
    /// Warm previews to time.
    #[arg(long, default_value_t = 200)]
    iterations: usize,
    /// Full previews (cache analysis, slots, world, compaction) to time after the warm ones
    /// [default: the iterations, at most 50]. `0` leaves them out: a cold run then does what the
    /// Node yardstick does (open, first preview, warm previews).
    #[arg(long)]
    full_previews: Option<usize>,
    /// Also play this many turns (offline scripted model) the way the desktop app keeps them,
    /// and report the memory each played turn retains.
    #[arg(long, default_value_t = 0)]
    turns: usize,
    /// Also edit one plugin's entry this many times with the folder watched, and report the
    /// distribution of file written → preview ready.
    #[arg(long, default_value_t = 0)]
    watch_edits: usize,
    /// With `--watch-edits`: how long the folder stays quiet before each edit, in milliseconds
    /// (the memo is confirmed at the start of it, as the shells do). Spaced like an author's
    /// saves (seconds), an edit finds the caches as other work left them.
    #[arg(long, default_value_t = 30)]
    watch_pause: u64,
    /// With `--watch-edits`: instead of appending a comment (a save that changes no output),
    /// each edit puts its number after TEXT in the first plugin module that holds it, as a save
    /// that changes what the plugin contributes does (put TEXT inside a segment's text).
    #[arg(long, value_name = "TEXT", requires = "watch_edits")]
    watch_replace: Option<String>,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples.get(samples.len() / 2).copied().unwrap_or_default()
}

/// A memory figure of this process in KiB from /proc/self/status (`VmHWM` is the peak,
/// `VmRSS` the current resident size).
fn status_kb(field: &str) -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| {
        l.strip_prefix(field)
            .is_some_and(|rest| rest.starts_with(':'))
    })?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Peak resident memory of this process in MiB (Linux `VmHWM`).
fn peak_rss_mb() -> Option<f64> {
    status_kb("VmHWM").map(|kb| kb / 1024.0)
}

/// What every plugin runtime holds now, in MiB (the engines' own allocations, as counted
/// against the process-wide budget).
fn engine_mb() -> f64 {
    covel_js::memory::process_budget().used() as f64 / (1024.0 * 1024.0)
}

/// What a plugin's runtime holds before its code runs (`covel_js::memory::engine_floor`), in KiB:
/// the floor under `engineKBPerPlugin` while each plugin has a runtime of its own.
fn engine_floor_kb() -> serde_json::Value {
    match covel_js::memory::engine_floor() {
        Ok(floor) => json!({
            "runtime": floor.runtime as f64 / 1024.0,
            "baseContext": floor.base_context as f64 / 1024.0,
            "fullContext": floor.full_context as f64 / 1024.0,
        }),
        Err(e) => json!({ "error": e.to_string() }),
    }
}

/// Plays `turns` turns in a [`LiveStudio`] (what the desktop app keeps) and measures the resident
/// memory they retain. The first turns warm the engines up and are not counted.
fn played_turns(workspace: covel_studio::Workspace, turns: usize) -> serde_json::Value {
    const WARM_UP: usize = 5;
    let mut studio = LiveStudio::new(workspace, RuntimeTarget::Story);
    let mut times = Vec::with_capacity(turns);
    let mut failed = 0;
    let mut play = |studio: &mut LiveStudio, i: usize| {
        let t = Instant::now();
        let report = studio.play_turn(&format!("I look around ({i})."));
        failed += usize::from(report.error.is_some());
        t.elapsed().as_secs_f64() * 1000.0
    };
    for i in 0..WARM_UP {
        play(&mut studio, i);
    }
    let before = status_kb("VmRSS");
    for i in 0..turns {
        times.push(play(&mut studio, WARM_UP + i));
    }
    let after = status_kb("VmRSS");
    let bytes_per_turn = before
        .zip(after)
        .map(|(b, a)| ((a - b) * 1024.0 / turns.max(1) as f64).max(0.0));
    json!({
        "played": turns,
        "warmUpTurns": WARM_UP,
        "failed": failed,
        "medianTurnMs": median(times),
        "rssBeforeMB": before.map(|kb| kb / 1024.0),
        "rssAfterMB": after.map(|kb| kb / 1024.0),
        "bytesPerTurn": bytes_per_turn,
        "historyMessages": studio.workspace().session.history.messages.len(),
    })
}

pub fn run(args: &Args, process_start: Instant) -> anyhow::Result<ExitCode> {
    let workspace = crate::open::workspace(&args.plugins_dir, None)?;
    let load_ms = process_start.elapsed().as_secs_f64() * 1000.0;
    let rss_after_load = status_kb("VmRSS").map(|kb| kb / 1024.0);
    let engines_after_load = engine_mb();
    let t = Instant::now();
    let quick = workspace.quick_preview("Look around.");
    let (segments, slots, world) = (quick.segments, quick.slots, quick.world);
    let first_ms = t.elapsed().as_secs_f64() * 1000.0;
    let warm: Vec<f64> = (0..args.iterations)
        .map(|_| {
            let t = Instant::now();
            workspace.quick_preview("Look around.");
            t.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    let full_previews = args.full_previews.unwrap_or(args.iterations.clamp(1, 50));
    let full: Vec<f64> = (0..full_previews)
        .map(|_| {
            let t = Instant::now();
            workspace.preview(&RuntimeTarget::Story);
            t.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    let providers: usize = workspace.plugins.iter().map(|p| p.providers().len()).sum();
    let mut report = json!({
        "plugins": workspace.plugins.iter().filter(|p| p.ok()).count(),
        "providers": providers,
        "diagnostics": workspace.diagnostics().count(),
        "loadMs": load_ms,
        "firstPreviewMs": first_ms,
        "medianPreviewMs": median(warm),
        "medianFullPreviewMs": (!full.is_empty()).then(|| median(full)),
        "iterations": args.iterations,
        "memo": crate::open::limits().memo,
        "preview": {"segments": segments, "slots": slots, "world": world, "errors": quick.errors},
        "rssMB": peak_rss_mb(),
        "rssAfterLoadMB": rss_after_load,
        "rssAfterPreviewsMB": status_kb("VmRSS").map(|kb| kb / 1024.0),
        "engineMBAfterLoad": engines_after_load,
        "engineMB": engine_mb(),
        "engineKBPerPlugin": engines_after_load * 1024.0 / workspace.plugins.len().max(1) as f64,
        "engineFloorKB": engine_floor_kb(),
    });
    if args.watch_edits > 0 {
        let workspace = crate::open::workspace(&args.plugins_dir, None)?;
        report["watch"] = crate::bench_watch::run(
            &args.plugins_dir,
            workspace,
            args.watch_edits,
            std::time::Duration::from_millis(args.watch_pause),
            match &args.watch_replace {
                Some(text) => crate::bench_watch::Edit::Replace(text),
                None => crate::bench_watch::Edit::Comment,
            },
        )?;
    }
    if args.turns > 0 {
        report["turns"] = played_turns(workspace, args.turns);
        report["rssAfterTurnsMB"] = json!(peak_rss_mb());
    } else {
        // Closing the folder before the exit, as the one-shot commands do: every plugin
        // disposed, its runtime's memory left to the exit (`leave_runtimes_to_exit`).
        let t = Instant::now();
        covel_js::engine::leave_runtimes_to_exit();
        drop(workspace);
        report["closeMs"] = json!(t.elapsed().as_secs_f64() * 1000.0);
    }
    if args.json {
        print_json(&report)?;
    } else {
        crate::say!("{report:#}");
    }
    // Figures of a preview whose runs failed are not figures of that preview.
    Ok(if quick.errors.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
