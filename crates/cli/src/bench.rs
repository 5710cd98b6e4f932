//! `covel bench PLUGINS_DIR [--iterations N] [--json]`: how fast this folder previews, measured
//! the way the Node yardstick in shared/bench measures itself (load, first and median preview of
//! segments + five slots + world context, peak memory), plus the studio's full preview.

use crate::output::print_json;
use covel_studio::RuntimeTarget;
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
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples.get(samples.len() / 2).copied().unwrap_or_default()
}

/// Peak resident memory of this process in MiB (Linux `VmHWM`).
fn peak_rss_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

pub fn run(args: &Args, process_start: Instant) -> anyhow::Result<ExitCode> {
    let workspace = crate::open::workspace(&args.plugins_dir, None)?;
    let load_ms = process_start.elapsed().as_secs_f64() * 1000.0;
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
    let full: Vec<f64> = (0..args.iterations.clamp(1, 50))
        .map(|_| {
            let t = Instant::now();
            workspace.preview(&RuntimeTarget::Story);
            t.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    let providers: usize = workspace.plugins.iter().map(|p| p.providers().len()).sum();
    let report = json!({
        "plugins": workspace.plugins.iter().filter(|p| p.ok()).count(),
        "providers": providers,
        "diagnostics": workspace.diagnostics().count(),
        "loadMs": load_ms,
        "firstPreviewMs": first_ms,
        "medianPreviewMs": median(warm),
        "medianFullPreviewMs": median(full),
        "iterations": args.iterations,
        "preview": {"segments": segments, "slots": slots, "world": world, "errors": quick.errors},
        "rssMB": peak_rss_mb(),
    });
    if args.json {
        print_json(&report)?;
    } else {
        crate::say!("{report:#}");
    }
    // Figures of a preview whose runs failed are not figures of that preview.
    Ok(if quick.errors.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
