//! `covel test [PATH…] [--update] [--rerecord-changed] [--json]`: runs test sessions (a plugins
//! folder's `*.session.yaml` files, or the session files given) and reports pass/fail per turn
//! and per check, with word-level golden diffs naming the plugin and segment. With
//! `--rerecord-changed`, replay sessions re-record the requests their recordings lack and say
//! what changed in each recording. Exit 1 on any failure.

use crate::output::print_json;
use covel_js::Limits;
use covel_studio::testing::{self, GoldenStatus, RerecordStatus, RunOptions, SessionResult};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// Plugins folders (their test sessions are found) or session files (default: `.`).
    paths: Vec<PathBuf>,
    /// Write each session's golden snapshot (`x.golden.yaml`) from this run.
    #[arg(long)]
    update: bool,
    /// In sessions whose story model is `backend: replay`, send each request the recording
    /// lacks to the backend the recording was made with (the session model's `model`, `baseUrl`
    /// and `apiKeyEnv`), use its answer, and rewrite the recording with the exchanges this run
    /// used (unused ones are dropped). Reaches the network. With `--update`, the golden
    /// snapshots are written from the new answers.
    #[arg(long)]
    rerecord_changed: bool,
    /// Fail a session whose golden snapshot is missing (also when `CI` is set, as CI services
    /// set it).
    #[arg(long)]
    ci: bool,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let paths = if args.paths.is_empty() {
        vec![PathBuf::from(".")]
    } else {
        args.paths.clone()
    };
    let targets = testing::discover(&paths)?;
    let limits = Limits::default();
    let ci = args.ci || testing::in_ci();
    let results: Vec<SessionResult> = targets
        .iter()
        .map(|t| {
            let options = RunOptions {
                update: args.update,
                rerecord_changed: args.rerecord_changed,
            };
            let mut result = testing::run_session_with(t, &options, &limits);
            if ci && !args.update {
                testing::require_golden(&mut result);
            }
            result
        })
        .collect();
    let failed = results.iter().filter(|r| !r.passed).count();
    if args.json {
        print_json(
            &serde_json::json!({"passed": failed == 0, "failed": failed, "sessions": results}),
        )?;
    } else {
        for result in &results {
            print_human(result);
        }
        let turns: usize = results.iter().map(|r| r.turns.len()).sum();
        let checks: usize = results
            .iter()
            .flat_map(|r| &r.turns)
            .map(|t| t.checks.len())
            .sum();
        crate::say!(
            "\n{} sessions, {turns} turns, {checks} checks: {}",
            results.len(),
            if failed == 0 {
                "all passed".to_string()
            } else {
                format!("{failed} session(s) failed")
            }
        );
    }
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn print_human(result: &SessionResult) {
    let mark = if result.passed { "✓" } else { "✗" };
    crate::say!(
        "{mark} {} (plugins: {})",
        result.session.display(),
        result.plugins_dir.display()
    );
    if let Some(error) = &result.error {
        crate::say!("    ✗ {error}");
    }
    for turn in &result.turns {
        crate::say!(
            "  {} {} · player: {}",
            if turn.passed { "✓" } else { "✗" },
            turn.turn_id,
            turn.say
        );
        if let Some(error) = &turn.error {
            for (i, line) in error.lines().enumerate() {
                crate::say!("    {}{line}", if i == 0 { "✗ " } else { "  " });
            }
        }
        for check in &turn.checks {
            match &check.detail {
                None => crate::say!("    ✓ [{}] {}", check.rule, check.description),
                Some(detail) => {
                    crate::say!("    ✗ [{}] {} — {detail}", check.rule, check.description)
                }
            }
        }
        for d in &turn.golden_differences {
            let who = match (&d.from, &d.plugin) {
                (Some(from), Some(plugin)) => format!(" · {from} (plugin {plugin})"),
                (Some(from), None) => format!(" · {from}"),
                (None, Some(plugin)) => format!(" (plugin {plugin})"),
                (None, None) => String::new(),
            };
            crate::say!("    ✗ golden: {}{who} {}: {}", d.place, d.change, d.diff);
        }
    }
    if let Some(rerecord) = &result.rerecord {
        crate::say!("    {}", rerecord_line(rerecord));
    }
    let golden = match result.golden {
        GoldenStatus::Matches => "matches".to_string(),
        GoldenStatus::Differs => "DIFFERS (review, then `covel test --update`)".to_string(),
        GoldenStatus::Missing => "missing (`covel test --update` writes it)".to_string(),
        GoldenStatus::Written => "written".to_string(),
        GoldenStatus::Unchanged => "unchanged".to_string(),
        GoldenStatus::Skipped => "not compared".to_string(),
    };
    crate::say!(
        "    golden snapshot {}: {golden}",
        result.golden_file.display()
    );
}

/// What `--rerecord-changed` did with a session's recording, in one line.
fn rerecord_line(rerecord: &testing::RerecordSummary) -> String {
    let file = rerecord.recording.display();
    let counts = format!(
        "{} exchange(s) kept, {} re-recorded, {} dropped",
        rerecord.kept, rerecord.rerecorded, rerecord.dropped
    );
    match rerecord.status {
        RerecordStatus::Rewritten if rerecord.turns.is_empty() => {
            format!("recording {file}: rewritten ({counts})")
        }
        RerecordStatus::Rewritten => format!(
            "recording {file}: re-recorded {} ({counts}); rewritten",
            rerecord.turns.join(", ")
        ),
        RerecordStatus::Unchanged => {
            format!("recording {file}: unchanged, nothing to re-record ({counts})")
        }
        RerecordStatus::Untouched => {
            format!("recording {file}: left untouched (the run failed)")
        }
    }
}
