//! `covel resolve PLUGINS_DIR --session FILE`: the session resolver's answer.

use crate::output::print_json;
use serde_json::json;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// The plugins folder.
    plugins_dir: PathBuf,
    /// The test session (without one, every plugin is requested and authorized).
    #[arg(long)]
    session: Option<PathBuf>,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let workspace = crate::open::workspace(&args.plugins_dir, args.session.as_deref())?;
    let r = &workspace.resolution;
    if args.json {
        print_json(&json!({
            "active": r.active,
            "autoAdded": r.auto_added,
            "rejected": r.rejected,
            "unmet": r.unmet,
            "failedToLoad": workspace.plugins.iter().filter(|p| !p.ok()).map(|p| &p.name).collect::<Vec<_>>(),
        }))?;
    } else {
        for id in &r.active {
            let auto = if r.auto_added.contains(id) {
                " (added automatically)"
            } else {
                ""
            };
            crate::say!("✓ {id}{auto}");
        }
        crate::output::print_rejections(r);
    }
    // Exit 1 when the session cannot run as written: a blocking world requirement, or a plugin
    // of the folder that failed to load (README: "1 a plugin … failed").
    let blocking = r.unmet.iter().any(|u| u.blocking);
    let failed = workspace.plugins.iter().any(|p| !p.ok());
    Ok(if blocking || failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
