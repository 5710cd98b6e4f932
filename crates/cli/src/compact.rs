//! `covel compact PLUGINS_DIR --session FILE [--output FILE] [--force]`: the compaction input,
//! the provider's output (or a hand-written one), the verdict rule by rule, and the summaries
//! and history after applying it.

use crate::output::print_json;
use anyhow::Context;
use covel_kernel::compaction::FailureCounter;
use covel_studio::RuntimeTarget;
use covel_studio::compaction::CompactionOptions;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// The plugins folder.
    plugins_dir: PathBuf,
    /// The test session (its history, summaries and model windows).
    #[arg(long)]
    session: PathBuf,
    /// Validate this provider output (JSON file) instead of calling the provider.
    #[arg(long)]
    output: Option<PathBuf>,
    /// Run even when the estimate is under the threshold.
    #[arg(long)]
    force: bool,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let mut workspace = crate::open::workspace(&args.plugins_dir, Some(&args.session))?;
    let output = match &args.output {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))?;
            Some(
                serde_json::from_str::<Value>(&text)
                    .with_context(|| format!("{} is not JSON", path.display()))?,
            )
        }
        None => None,
    };
    let preview = workspace.preview(&RuntimeTarget::Story);
    let system = preview.prompt.system_and_turn_context();
    let mut counter = FailureCounter::default();
    let run = workspace.compact(
        &preview.turn_id,
        &system,
        &CompactionOptions {
            force: args.force,
            output,
        },
        &mut counter,
    );
    let rejected = run
        .verdict
        .as_ref()
        .is_some_and(|v| !v.accepted && !v.nothing_to_compact)
        || run
            .events
            .iter()
            .any(|e| e.topic == "context.compaction.failed")
        || run.not_compacted_because.is_some();
    if args.json {
        print_json(&json!({
            "run": run,
            "summariesAfter": workspace.session.history.summaries,
            "historyAfter": workspace.session.history.messages,
            "failureCount": counter.consecutive,
        }))?;
    } else {
        crate::say!(
            "window {} (fast input {}), estimate {} tokens, threshold {:.0}: {}",
            run.windows.context_window,
            run.windows.input_window,
            run.estimated_tokens,
            run.threshold_tokens,
            if run.triggered {
                "compacting"
            } else {
                "under the threshold, nothing to do"
            }
        );
        crate::say!(
            "budget: {} tokens total, {} per segment, {} segments",
            run.budget.max_tokens,
            run.budget.max_segment_tokens,
            run.budget.max_segments
        );
        if let Some(why) = &run.not_compacted_because {
            crate::say!("not compacted: {why}");
        }
        crate::output::print_calls(&run.calls);
        if let Some(verdict) = &run.verdict {
            for rule in &verdict.rules {
                crate::say!(
                    "  {} {} — {}",
                    if rule.ok { "✓" } else { "✗" },
                    rule.rule,
                    rule.detail
                );
            }
            crate::say!(
                "verdict: {}",
                if verdict.nothing_to_compact {
                    "nothing to compact"
                } else if verdict.accepted {
                    "accepted"
                } else {
                    "rejected"
                }
            );
        }
        for event in &run.events {
            crate::say!("event {}: {}", event.topic, event.payload);
        }
        for s in &workspace.session.history.summaries {
            crate::say!(
                "summary {}: {}",
                s["id"].as_str().unwrap_or_default(),
                s["content"].as_str().unwrap_or_default()
            );
        }
    }
    Ok(if rejected {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
