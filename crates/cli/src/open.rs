//! Opening a plugins folder with a session, and reading `--runtime`, the same way for every
//! command.

use anyhow::{Context, bail};
use covel_js::Limits;
use covel_studio::{RuntimeTarget, Workspace};
use std::path::Path;

/// Opens a plugins folder with an optional test session.
pub fn workspace(plugins_dir: &Path, session: Option<&Path>) -> anyhow::Result<Workspace> {
    Workspace::open(plugins_dir, session, &Limits::default()).with_context(|| format!("opening {}", plugins_dir.display()))
}

/// Parses `story`, `plugin:ID` or `contract:C`.
pub fn runtime(text: &str) -> anyhow::Result<RuntimeTarget> {
    match RuntimeTarget::parse(text) {
        Some(target) => Ok(target),
        None => bail!("--runtime must be story, plugin:ID or contract:C (got `{text}`)"),
    }
}
