//! `covel sdk-tests DIR` (hidden; `scripts/upstream-sdk-tests` runs it): upstream's SDK test
//! files from a scratch folder, each in a plugin runtime against the studio's SDK
//! ([`covel_js::sdk_tests`]), as one table row per file and the failing tests under it.

use crate::output::print_json;
use covel_js::sdk_tests::{FileReport, run_dir};
use serde_json::json;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// The folder of test files (`*.test.ts`, `*.test.js`).
    dir: PathBuf,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let reports = run_dir(&args.dir)
        .map_err(|e| anyhow::anyhow!("cannot read the folder {}: {e}", args.dir.display()))?;
    if reports.is_empty() {
        anyhow::bail!(
            "{} holds no *.test.ts or *.test.js file",
            args.dir.display()
        );
    }
    if args.json {
        print_json(&reports.iter().map(report_json).collect::<Vec<_>>())?;
    } else {
        print!("{}", crate::output::terminal_safe(&table(&reports)));
    }
    let clean = reports
        .iter()
        .all(|r| r.failure.is_none() && r.failed() == 0);
    Ok(if clean {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn report_json(r: &FileReport) -> serde_json::Value {
    json!({
        "file": r.file,
        "passed": r.passed(),
        "failed": r.failed(),
        "total": r.total(),
        "failure": r.failure,
        "tests": r.tests.iter().map(|t| json!({
            "name": t.name, "passed": t.passed, "skipped": t.skipped, "error": t.error,
        })).collect::<Vec<_>>(),
    })
}

/// A Markdown table (file, passed, failed, total), the sum, then each failing test with the
/// first line of its error.
pub fn table(reports: &[FileReport]) -> String {
    let mut out = String::from("| file | passed | failed | total |\n|---|---|---|---|\n");
    for r in reports {
        let total = if r.failure.is_some() {
            "did not run".to_string()
        } else {
            r.total().to_string()
        };
        out.push_str(&format!(
            "| {} | {} | {} | {total} |\n",
            r.file,
            r.passed(),
            r.failed()
        ));
    }
    let passed: usize = reports.iter().map(FileReport::passed).sum();
    let total: usize = reports.iter().map(FileReport::total).sum();
    out.push_str(&format!("\n{passed} of {total} pass.\n"));
    for r in reports {
        if let Some(why) = &r.failure {
            out.push_str(&format!("\n{}: did not run: {why}\n", r.file));
            continue;
        }
        let failing: Vec<_> = r.tests.iter().filter(|t| !t.passed).collect();
        if failing.is_empty() {
            continue;
        }
        out.push_str(&format!("\n{}:\n", r.file));
        for t in failing {
            out.push_str(&format!(
                "  ✗ {}\n    {}\n",
                t.name,
                t.error.as_deref().unwrap_or("")
            ));
        }
    }
    out
}
