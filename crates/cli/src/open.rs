//! Opening a plugins folder with a session, and reading `--runtime`, the same way for every
//! command.

use anyhow::{Context, bail};
use covel_js::Limits;
use covel_studio::{RuntimeTarget, Workspace};
use std::path::Path;

static NO_MEMO: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// `--no-memo`: every provider call runs, none is answered from an engine's memo.
pub fn disable_memo() {
    NO_MEMO.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// The engine limits every command uses.
pub fn limits() -> Limits {
    Limits {
        memo: !NO_MEMO.load(std::sync::atomic::Ordering::Relaxed),
        ..Limits::default()
    }
}

/// Opens a plugins folder with an optional test session.
pub fn workspace(plugins_dir: &Path, session: Option<&Path>) -> anyhow::Result<Workspace> {
    Workspace::open(plugins_dir, session, &limits())
        .with_context(|| format!("opening {}", plugins_dir.display()))
}

/// Parses `story`, `plugin:ID` or `contract:C`.
pub fn runtime(text: &str) -> anyhow::Result<RuntimeTarget> {
    match RuntimeTarget::parse(text) {
        Some(target) => Ok(target),
        None => bail!("--runtime must be story, plugin:ID or contract:C (got `{text}`)"),
    }
}
