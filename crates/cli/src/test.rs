//! `covel test [PATH…] [--filter P] [--update [--force]] [--review] [--reporter R]`: runs test
//! sessions (a plugins folder's `*.session.yaml` files, or the session files given) and reports
//! pass/fail per turn and per check, with word-level golden diffs naming the plugin and
//! segment. `--update` writes pending `x.golden.new` snapshots that `--review` accepts or
//! rejects change by change. With `--rerecord-changed`, replay sessions re-record the requests
//! their recordings lack and say what changed in each recording. Exit 0 when everything
//! passed, 1 when a test failed, 2 on a usage or configuration error.

use crate::output::print_json;
use crate::test_report::{self, difference_line};
use anyhow::Context;
use covel_js::Limits;
use covel_studio::testing::review::{self, PendingChange};
use covel_studio::testing::{
    self, GoldenStatus, RerecordStatus, RunOptions, SessionResult, Target,
};
use covel_studio::words::counted;
use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

/// The report `covel test` prints.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Reporter {
    /// Readable text (the default).
    Human,
    /// JUnit XML: one testsuite per session, one testcase per turn and per check.
    Junit,
    /// TAP version 13, with YAML diagnostics for failures.
    Tap,
    /// The results as JSON (what `--json` prints).
    Json,
}

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
    /// Machine-readable output (the same as `--reporter json`).
    #[arg(long, conflicts_with = "reporter")]
    json: bool,
    /// The report to print.
    #[arg(long, value_enum)]
    reporter: Option<Reporter>,
    /// Only the sessions whose file name or session id contains this text.
    #[arg(long, value_name = "PATTERN")]
    filter: Option<String>,
    /// With `--update`: write the pending snapshot even though expectations fail.
    #[arg(long, requires = "update")]
    force: bool,
    /// Review the pending `x.golden.new` snapshots change by change (per turn): accept
    /// (writes the golden) or reject each; on a terminal asks y/n/a/q.
    #[arg(long, conflicts_with_all = ["update", "rerecord_changed"])]
    review: bool,
    /// With `--review`: accept every pending change without asking.
    #[arg(long, requires = "review", conflicts_with = "reject_all")]
    accept_all: bool,
    /// With `--review`: reject every pending change without asking.
    #[arg(long, requires = "review")]
    reject_all: bool,
}

/// The sessions of `paths` that `--filter` keeps, and how many it left out.
fn filtered(paths: &[PathBuf], filter: Option<&str>) -> anyhow::Result<(Vec<Target>, usize)> {
    let targets = testing::discover(paths)?;
    let Some(pattern) = filter else {
        return Ok((targets, 0));
    };
    let total = targets.len();
    let kept: Vec<Target> = targets
        .into_iter()
        .filter(|t| {
            let name = t
                .session
                .file_name()
                .is_some_and(|n| n.to_string_lossy().contains(pattern));
            name || testing::session_id(&t.session).is_some_and(|id| id.contains(pattern))
        })
        .collect();
    if kept.is_empty() {
        anyhow::bail!(
            "no session's file name or id contains {pattern:?} (--filter; {} found)",
            counted(total, "session")
        );
    }
    let left_out = total - kept.len();
    Ok((kept, left_out))
}

pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let paths = if args.paths.is_empty() {
        vec![PathBuf::from(".")]
    } else {
        args.paths.clone()
    };
    let (targets, left_out) = filtered(&paths, args.filter.as_deref())?;
    if args.review {
        return review_changes(args, &targets);
    }
    let limits = Limits::default();
    let ci = args.ci || testing::in_ci();
    let results: Vec<SessionResult> = targets
        .iter()
        .map(|t| {
            let options = RunOptions {
                update: args.update,
                rerecord_changed: args.rerecord_changed,
                force: args.force,
            };
            let mut result = testing::run_session_with(t, &options, &limits);
            if ci && !args.update {
                testing::require_golden(&mut result);
            }
            result
        })
        .collect();
    let failed = results.iter().filter(|r| !r.passed).count();
    let reporter = match (args.json, args.reporter) {
        (true, _) => Reporter::Json,
        (false, reporter) => reporter.unwrap_or(Reporter::Human),
    };
    let filtered_out = || {
        if left_out > 0 {
            eprintln!(
                "{} filtered out by --filter {:?}",
                counted(left_out, "session"),
                args.filter.as_deref().unwrap_or_default()
            );
        }
    };
    if reporter == Reporter::Json {
        print_json(&serde_json::json!({
            "passed": failed == 0,
            "failed": failed,
            "filteredOut": left_out,
            "sessions": results
        }))?;
    } else if reporter == Reporter::Junit {
        filtered_out();
        print!("{}", test_report::junit(&results)?);
    } else if reporter == Reporter::Tap {
        filtered_out();
        print!("{}", test_report::tap(&results)?);
        if left_out > 0 {
            println!("# {} filtered out", counted(left_out, "session"));
        }
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
            "\n{}, {}, {}: {}",
            counted(results.len(), "session"),
            counted(turns, "turn"),
            counted(checks, "check"),
            if failed == 0 {
                "all passed".to_string()
            } else {
                format!("{} failed", counted(failed, "session"))
            }
        );
        if left_out > 0 {
            crate::say!(
                "{} filtered out by --filter {:?}",
                counted(left_out, "session"),
                args.filter.as_deref().unwrap_or_default()
            );
        }
    }
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// A folder as the author would write it: `plugins-sample/tests/..` (a session's `plugins: ..`
/// joined to its folder) as `plugins-sample`, when both name the same folder on disk (a
/// symbolic link on the way keeps the path as it was).
fn tidy(path: &std::path::Path) -> std::path::PathBuf {
    use std::path::Component;
    let mut tidied = std::path::PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir
                if matches!(tidied.components().next_back(), Some(Component::Normal(_))) =>
            {
                tidied.pop();
            }
            other => tidied.push(other),
        }
    }
    if tidied.as_os_str().is_empty() {
        tidied.push(".");
    }
    let same = match (path.canonicalize(), tidied.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    if same { tidied } else { path.to_path_buf() }
}

fn print_human(result: &SessionResult) {
    let mark = if result.passed { "✓" } else { "✗" };
    crate::say!(
        "{mark} {} (plugins: {}) · {} ms",
        result.session.display(),
        tidy(&result.plugins_dir).display(),
        result.duration_ms
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
        for call in &turn.failed_calls {
            crate::say!("    {}", crate::output::failed_call_line(call));
        }
        for check in &turn.checks {
            match &check.detail {
                None => crate::say!("    ✓ [{}] {}", check.rule, check.description),
                Some(detail) => {
                    crate::say!("    ✗ [{}] {} — {detail}", check.rule, check.description);
                    if let Some(location) = &check.location {
                        crate::say!("      at {location}");
                    }
                }
            }
        }
        for d in &turn.golden_differences {
            crate::say!("    ✗ golden: {}", difference_line(d));
        }
    }
    if let Some(rerecord) = &result.rerecord {
        crate::say!("    {}", rerecord_line(rerecord));
    }
    let golden = match result.golden {
        GoldenStatus::Matches => "matches".to_string(),
        GoldenStatus::Differs => {
            "DIFFERS (if intended: `covel test --update`, then `covel test --review`)".to_string()
        }
        GoldenStatus::Missing => {
            "missing (`covel test --update`, then `covel test --review`, writes it)".to_string()
        }
        GoldenStatus::Pending => format!(
            "{} pending in {} (review them: `covel test --review`)",
            counted(result.pending.len(), "change"),
            review::pending_path(&result.golden_file).display()
        ),
        GoldenStatus::Refused => "not updated: expectations fail (see above)".to_string(),
        GoldenStatus::Unchanged => "unchanged".to_string(),
        GoldenStatus::Skipped => "not compared".to_string(),
    };
    crate::say!(
        "    golden snapshot {}: {golden}",
        result.golden_file.display()
    );
    if !result.pending.is_empty() && result.golden != GoldenStatus::Pending {
        crate::say!(
            "    {} pending review in {} (`covel test --review`)",
            counted(result.pending.len(), "change"),
            review::pending_path(&result.golden_file).display()
        );
    }
}

/// How `--review` decides.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Decide {
    AcceptAll,
    RejectAll,
    Ask,
}

/// `covel test --review`: every pending change of the sessions, one at a time.
fn review_changes(args: &Args, targets: &[Target]) -> anyhow::Result<ExitCode> {
    let mut mode = if args.accept_all {
        Decide::AcceptAll
    } else if args.reject_all {
        Decide::RejectAll
    } else if std::io::stdin().is_terminal() {
        Decide::Ask
    } else {
        anyhow::bail!(
            "--review asks about each change on a terminal; stdin is not one: pass --accept-all or --reject-all"
        );
    };
    let (mut accepted, mut rejected, mut left) = (0usize, 0usize, 0usize);
    let mut quit = false;
    for target in targets {
        let session = &target.session;
        loop {
            let changes = review::pending(session)
                .with_context(|| format!("reviewing {}", session.display()))?;
            let Some(change) = changes.first() else {
                break;
            };
            if quit {
                left += changes.len();
                break;
            }
            print_change(session, change, changes.len());
            let accept = match mode {
                Decide::AcceptAll => true,
                Decide::RejectAll => false,
                Decide::Ask => match ask()? {
                    Answer::Yes => true,
                    Answer::No => false,
                    Answer::All => {
                        mode = Decide::AcceptAll;
                        true
                    }
                    Answer::Quit => {
                        quit = true;
                        continue;
                    }
                },
            };
            review::decide(session, change.index as usize, accept)
                .with_context(|| format!("reviewing {}", session.display()))?;
            if accept {
                accepted += 1;
                crate::say!(
                    "  accepted: {} written",
                    testing::golden::path_for(session).display()
                );
            } else {
                rejected += 1;
                crate::say!("  rejected");
            }
        }
    }
    crate::say!(
        "\n{} accepted, {rejected} rejected{}",
        counted(accepted, "change"),
        if left > 0 {
            format!(", {left} left pending")
        } else if accepted + rejected == 0 {
            " (nothing pending: `covel test --update` writes pending snapshots)".to_string()
        } else {
            String::new()
        }
    );
    Ok(ExitCode::SUCCESS)
}

fn print_change(session: &std::path::Path, change: &PendingChange, pending: usize) {
    crate::say!(
        "{} · {} ({}, {pending} pending in this session)",
        session.display(),
        change.turn,
        match change.kind {
            review::ChangeKind::Changed => "changed",
            review::ChangeKind::Added => "added",
            review::ChangeKind::Removed => "removed",
        }
    );
    for d in &change.differences {
        crate::say!("    {}", difference_line(d));
    }
}

enum Answer {
    Yes,
    No,
    All,
    Quit,
}

fn ask() -> anyhow::Result<Answer> {
    loop {
        print!("  accept this change? [y]es, [n]o, [a]ccept all remaining, [q]uit: ");
        std::io::stdout().flush()?;
        let mut line = String::new();
        if std::io::stdin().lock().read_line(&mut line)? == 0 {
            return Ok(Answer::Quit);
        }
        match line.trim() {
            "y" | "Y" | "yes" => return Ok(Answer::Yes),
            "n" | "N" | "no" => return Ok(Answer::No),
            "a" | "A" | "all" => return Ok(Answer::All),
            "q" | "Q" | "quit" => return Ok(Answer::Quit),
            _ => {}
        }
    }
}

/// What `--rerecord-changed` did with a session's recording, in one line.
fn rerecord_line(rerecord: &testing::RerecordSummary) -> String {
    let file = rerecord.recording.display();
    let counts = format!(
        "{} kept, {} re-recorded, {} dropped",
        counted(rerecord.kept as usize, "exchange"),
        rerecord.rerecorded,
        rerecord.dropped
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
