//! `covel call PLUGINS_DIR POINT --input JSON|@FILE [--slot NAME]`: load every plugin of a
//! folder and run one extension point, printing the result and the provider-call trace.

use crate::output::{DiagnosticJson, print_json};
use anyhow::{Context, anyhow, bail};
use covel_kernel::contract;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// The plugins folder.
    plugins_dir: PathBuf,
    /// The extension point, e.g. prompt.segment@1.
    point: String,
    /// The input as JSON, or @FILE to read it from a file.
    #[arg(long)]
    input: Option<String>,
    /// For ui.slot@1: the slot to project (sets `slot` in the input when missing).
    #[arg(long)]
    slot: Option<String>,
    /// The test session whose context the providers run in (plugins, settings, world, data).
    #[arg(long)]
    session: Option<PathBuf>,
    /// The turn id handlers see as `ctx.turnId` (calls outside a turn have none).
    #[arg(long)]
    turn: Option<String>,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
    /// Exit 1 when any provider call failed, also where the point went on without it.
    #[arg(long)]
    strict: bool,
}

pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let point = contract::lookup_point(&args.point).map_err(|e| anyhow!("{e}"))?;
    let slot = match &args.slot {
        Some(name) => Some(contract::lookup_slot(name).map_err(|e| anyhow!("{e}"))?),
        None => None,
    };
    let mut input = read_input(args.input.as_deref())?;
    if let (Some(slot), Some(map)) = (slot, input.as_object_mut()) {
        map.entry("slot")
            .or_insert_with(|| Value::String(slot.as_str().into()));
        map.entry("previous").or_insert(Value::Null);
        map.entry("events").or_insert_with(|| json!([]));
    }
    let workspace = crate::open::workspace(&args.plugins_dir, args.session.as_deref())?;
    // Without a session every plugin of the folder runs; with one, only the active ones.
    let providers = if args.session.is_some() {
        workspace.active_providers()
    } else {
        workspace.all_providers()
    };
    let result = workspace.call_over(&providers, point, input, slot, args.turn.clone());
    // The same rule as `preview`: a world that declares dimensions needs exactly one provider.
    let rule_error = (point == covel_kernel::contract::PointId::SessionWorldContext)
        .then(|| workspace.dimension_rule_violation())
        .flatten();
    let failed_calls = covel_studio::testing::FailedCall::among(&result.calls);
    let failed =
        result.error.is_some() || rule_error.is_some() || (args.strict && !failed_calls.is_empty());
    let diagnostics: Vec<DiagnosticJson> =
        workspace.diagnostics().map(DiagnosticJson::from).collect();
    if args.json {
        print_json(&json!({
            "point": result.point,
            "mode": result.mode,
            "result": result.result,
            "providedBy": result.provided_by,
            "calls": result.calls,
            "failedCalls": failed_calls,
            "error": result
                .error
                .as_ref()
                .map(|e| json!({"code": serde_json::to_value(e).ok().and_then(|v| v.get("code").cloned()), "message": e.to_string()}))
                .or_else(|| rule_error.as_ref().map(|m| json!({"code": "dimension-provider", "message": m}))),
            "diagnostics": diagnostics,
        }))?;
    } else {
        crate::say!("{} ({:?})", result.point, result.mode);
        crate::output::print_calls(&result.calls);
        // A run that failed as a whole has no result to show (its `null` is no answer).
        if result.error.is_none() {
            crate::say!("{}", serde_json::to_string_pretty(&result.result)?);
        }
        if let Some(error) = &result.error {
            crate::say!("error: {error}");
            if args.input.is_none()
                && matches!(error, covel_kernel::runner::RunError::InvalidInput { .. })
            {
                crate::say!(
                    "hint: without --input the input is {{}}; pass it as JSON (--input '{{…}}') or from a file (--input @input.json)"
                );
            }
        }
        if let Some(error) = &rule_error {
            crate::say!("error: {error}");
        }
        crate::output::print_failed_calls(&failed_calls, args.strict);
        crate::output::print_not_loaded(&mut workspace.diagnostics());
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn read_input(input: Option<&str>) -> anyhow::Result<Value> {
    let text = match input {
        None => return Ok(json!({})),
        Some(path) if path.starts_with('@') => std::fs::read_to_string(&path[1..])
            .with_context(|| format!("reading input file {}", &path[1..]))?,
        Some(text) => text.to_string(),
    };
    match serde_json::from_str(&text) {
        Ok(value) => Ok(value),
        Err(e) => bail!("--input is not valid JSON: {e}"),
    }
}
