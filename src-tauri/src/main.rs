//! `covel-studio`: the desktop shell. `covel-studio [PLUGINS_DIR] [--session FILE]` opens a
//! plugins folder with a test session (plugins-sample/ and its demo session by default).

#![cfg_attr(
    all(not(debug_assertions), target_os = "windows"),
    windows_subsystem = "windows"
)]

use clap::Parser;

/// Engines allocate with mimalloc (see `covel_js::memory`); so does everything else here.
#[global_allocator]
static ALLOCATOR: covel_js::memory::MiMalloc = covel_js::memory::MiMalloc;

/// Covel Studio: author and playtest Covel plugins.
#[derive(Parser)]
#[command(
    name = "covel-studio",
    version,
    long_version = covel_studio::about::version_text()
)]
struct Args {
    /// The plugins folder to open (plugins-sample/ when there is one and none is given).
    plugins: Option<String>,
    /// The test session to open with it.
    #[arg(long)]
    session: Option<String>,
}

fn main() {
    let args = Args::parse();
    if let Err(error) = covel_studio_app::run(args.plugins, args.session) {
        tracing::error!("{error:#}");
        eprintln!("covel-studio: {error:#}");
        std::process::exit(1);
    }
}
