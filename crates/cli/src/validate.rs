//! `covel validate DIR...`: static checks plus loading each entry and checking its
//! registrations against the manifest.

use crate::output::{DiagnosticJson, print_json};
use anyhow::bail;
use covel_js::load_plugins;
use covel_kernel::package;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// Plugin folders (each with a PLUGIN.md), or plugins folders holding several.
    #[arg(required = true)]
    dirs: Vec<PathBuf>,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct Report<'a> {
    plugins: Vec<PluginReport<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PluginReport<'a> {
    id: String,
    path: String,
    ok: bool,
    diagnostics: Vec<DiagnosticJson<'a>>,
    /// Hints that do not make the plugin invalid (e.g. `row-shaped-read`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    hints: Vec<DiagnosticJson<'a>>,
    /// What the entry registered that the studio lists but never runs, by kind
    /// (`Registrations::not_run`).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    not_run: BTreeMap<&'static str, &'a [String]>,
}

pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let mut folders = Vec::new();
    for dir in &args.dirs {
        if dir.join("PLUGIN.md").is_file() {
            folders.push(dir.clone());
        } else if dir.is_dir() {
            let found = package::discover(dir)?;
            if found.is_empty() {
                bail!("{} holds no PLUGIN.md and no plugin folders", dir.display());
            }
            folders.extend(found);
        } else {
            bail!("{} is not a folder", dir.display());
        }
    }
    let loaded = load_plugins(&folders, &crate::open::limits());
    let all_ok = loaded.iter().all(|p| p.ok());
    if args.json {
        let plugins = loaded
            .iter()
            .map(|p| PluginReport {
                id: p
                    .package
                    .as_ref()
                    .map(|pkg| pkg.id().to_string())
                    .unwrap_or_else(|| p.name.clone()),
                path: p.folder.display().to_string(),
                ok: p.ok(),
                diagnostics: p.diagnostics.iter().map(DiagnosticJson::from).collect(),
                hints: p.hints.iter().map(DiagnosticJson::from).collect(),
                not_run: p.registrations.not_run().into_iter().collect(),
            })
            .collect();
        print_json(&Report { plugins })?;
    } else {
        for p in &loaded {
            if p.ok() {
                crate::say!(
                    "✓ {} ({}, loaded in {:.1} ms)",
                    p.name,
                    what_runs(p),
                    p.load_time.as_secs_f64() * 1000.0
                );
            } else {
                crate::say!("✗ {}", p.name);
                for d in &p.diagnostics {
                    crate::say!("    {d}");
                }
            }
            for hint in &p.hints {
                crate::say!("    hint: {hint}");
            }
            if let Some(note) = p.registrations.not_run_note() {
                let listed: Vec<String> = p
                    .registrations
                    .not_run()
                    .iter()
                    .map(|(kind, items)| format!("{kind}: {}", items.join(", ")))
                    .collect();
                crate::say!("    note: {note} ({})", listed.join("; "));
            }
        }
        let bad = loaded.iter().filter(|p| !p.ok()).count();
        crate::say!(
            "{}, {} valid, {} invalid",
            covel_studio::words::counted(loaded.len(), "plugin"),
            loaded.len() - bad,
            bad
        );
    }
    Ok(if all_ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// What of a loaded plugin a preview or a played turn runs: "3 providers", "1 provider, 1 tool,
/// 1 hook", "1 hook" (a plugin of hooks only is not "0 providers"), "0 providers" when nothing.
fn what_runs(plugin: &covel_js::LoadedPlugin) -> String {
    use covel_studio::words::counted;
    let providers = plugin
        .package
        .as_ref()
        .map_or(0, |pkg| pkg.manifest.extensions.len());
    let (tools, hooks) = (
        plugin.registrations.tools.len(),
        plugin.registrations.hooks.len(),
    );
    let mut said = Vec::new();
    if providers > 0 || tools + hooks == 0 {
        said.push(counted(providers, "provider"));
    }
    if tools > 0 {
        said.push(counted(tools, "tool"));
    }
    if hooks > 0 {
        said.push(counted(hooks, "hook"));
    }
    said.join(", ")
}
