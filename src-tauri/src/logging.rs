//! The app's log: `tracing` events filtered by `RUST_LOG` (`info` when unset), written to stderr
//! and to a file the author can find from the UI (the `log_file` command): under the
//! platform's state directory (`$XDG_STATE_HOME`, `~/.local/state` on Linux) or, where there is
//! none, its local data directory, as `covel-studio/covel-studio.log`.

use std::path::PathBuf;
use std::sync::OnceLock;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer, fmt};

static LOG_FILE: OnceLock<PathBuf> = OnceLock::new();

/// Where the log file goes on this machine.
fn log_path() -> Option<PathBuf> {
    let base = dirs::state_dir().or_else(dirs::data_local_dir)?;
    Some(base.join("covel-studio").join("covel-studio.log"))
}

/// Starts logging. The file is truncated at each start (one run's log); when it cannot be
/// created, logging goes to stderr only and [`log_file`] says so.
pub fn init() {
    let filter = || EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let file = log_path().and_then(|path| {
        std::fs::create_dir_all(path.parent()?).ok()?;
        let file = std::fs::File::create(&path).ok()?;
        let _ = LOG_FILE.set(path);
        Some(file)
    });
    // Colours only for a terminal: test runners and redirected stderr get plain text.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let stderr = fmt::layer()
        .with_ansi(ansi)
        .with_writer(std::io::stderr)
        .with_filter(filter());
    let to_file = file.map(|file| {
        fmt::layer()
            .with_ansi(false)
            .with_writer(std::sync::Mutex::new(file))
            .with_filter(filter())
    });
    let _ = tracing_subscriber::registry()
        .with(stderr)
        .with(to_file)
        .try_init();
    match LOG_FILE.get() {
        Some(path) => tracing::info!(log = %path.display(), "covel-studio started"),
        None => tracing::warn!(
            "covel-studio started without a log file (no state or data directory is writable)"
        ),
    }
}

/// The log file of this run, if there is one.
pub fn log_file() -> Option<&'static PathBuf> {
    LOG_FILE.get()
}
