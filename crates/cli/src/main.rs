//! `covel`: every Covel Studio capability without a window, for scripts and CI. Human output by
//! default, `--json` for machines. Exit codes: 0 success, 1 a plugin or call failed, 2 usage.

mod bench;
mod bench_watch;
mod call;
mod compact;
mod forecast;
mod new;
mod open;
mod output;
mod play;
mod preview;
mod resolve;
mod sdk_tests;
mod test;
mod test_report;
mod validate;
mod watch;

use clap::{Parser, Subcommand};

/// Engines allocate with mimalloc (see `covel_js::memory`); so does everything else here.
#[global_allocator]
static ALLOCATOR: covel_js::memory::MiMalloc = covel_js::memory::MiMalloc;

use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "covel",
    version,
    long_version = covel_studio::about::version_text(),
    about = "Covel plugin studio, headless"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Run every provider call, answering none from the engines' memo.
    #[arg(long, global = true)]
    no_memo: bool,
}

#[derive(Subcommand)]
enum Command {
    /// Check plugin folders: manifest, entry load, declared versus registered.
    Validate(validate::Args),
    /// Load a plugins folder and run one extension point.
    Call(call::Args),
    /// Assemble the prompt and project every slot for a session, with cache analysis.
    Preview(preview::Args),
    /// Run history compaction for a session and show the verdict rule by rule.
    Compact(compact::Args),
    /// Play turns of a session with its story model.
    Play(play::Args),
    /// Time how fast a folder previews (load, first and median preview, peak memory).
    Bench(bench::Args),
    /// Follow a plugins folder and print what every change does.
    Watch(watch::Args),
    /// Show which plugins a session runs, which are rejected and why, and what is unmet.
    Resolve(resolve::Args),
    /// Forecast prompt-cache hits, writes and misses and their cost for a session and a model.
    Forecast(forecast::Args),
    /// Run test sessions: expectations per turn and golden snapshots (exit 1 on any failure).
    Test(test::Args),
    /// Start a plugin: PLUGIN.md, an entry with one provider per point, a test session.
    New(new::Args),
    /// Run upstream's SDK test files (a scratch copy) against the studio's SDK.
    #[command(hide = true)]
    SdkTests(sdk_tests::Args),
}

/// Logs go to stderr, filtered by `RUST_LOG` (warnings only when it is unset), so human and
/// `--json` output on stdout never mix with them.
fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(ansi)
        .with_writer(std::io::stderr)
        .try_init();
}

fn main() -> ExitCode {
    let started = std::time::Instant::now();
    let cli = Cli::parse();
    init_logging();
    if cli.no_memo {
        open::disable_memo();
    }
    // Commands that hold one folder until they end leave their runtimes' memory to the exit
    // (their plugins' disposers still run); those that go on loading (watch, test, play, bench
    // until its last step) free each runtime they drop.
    if matches!(
        cli.command,
        Command::Validate(_)
            | Command::Call(_)
            | Command::Resolve(_)
            | Command::Preview(_)
            | Command::Compact(_)
            | Command::Forecast(_)
    ) {
        covel_js::engine::leave_runtimes_to_exit();
    }
    let result = match cli.command {
        Command::Validate(args) => validate::run(&args),
        Command::Call(args) => call::run(&args),
        Command::Resolve(args) => resolve::run(&args),
        Command::Preview(args) => preview::run(&args),
        Command::Compact(args) => compact::run(&args),
        Command::Play(args) => play::run(&args),
        Command::Watch(args) => watch::run(&args),
        Command::Bench(args) => bench::run(&args, started),
        Command::Test(args) => test::run(&args),
        Command::Forecast(args) => forecast::run(&args),
        Command::New(args) => new::run(&args),
        Command::SdkTests(args) => sdk_tests::run(&args),
    };
    match result {
        Ok(code) => code,
        Err(error) => {
            eprintln!(
                "error: {}",
                crate::output::terminal_safe(&format!("{error:#}"))
            );
            ExitCode::from(2)
        }
    }
}
