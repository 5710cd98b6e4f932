//! Shared output helpers: JSON printing and diagnostic rendering.

use covel_kernel::Diagnostic;
use covel_kernel::resolver::Resolution;
use covel_kernel::runner::CallRecord;
use serde::Serialize;

/// Prints a value as pretty JSON on stdout.
pub fn print_json<T: Serialize>(value: &T) -> anyhow::Result<()> {
    println!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
}

/// The JSON shape of a diagnostic in CLI output.
#[derive(Serialize)]
pub struct DiagnosticJson<'a> {
    pub code: &'a str,
    pub message: &'a str,
    pub file: Option<String>,
    pub line: Option<u32>,
    pub column: Option<u32>,
}

impl<'a> From<&'a Diagnostic> for DiagnosticJson<'a> {
    fn from(d: &'a Diagnostic) -> Self {
        DiagnosticJson {
            code: d.code.as_str(),
            message: &d.message,
            file: d.file.as_ref().map(|f| f.display().to_string()),
            line: d.line,
            column: d.column,
        }
    }
}

/// Provider calls with their outcome, reason and what each handler logged (including the
/// studio's hints, such as the row-shaped `pluginData` read).
pub fn print_calls(calls: &[CallRecord]) {
    for call in calls {
        let reason = call.message.as_deref().map(|m| format!(": {m}")).unwrap_or_default();
        let cached = if call.cached { " (cached)" } else { "" };
        println!("  {}/{} ({}) order {} → {:?} in {:.2} ms{cached}{reason}", call.plugin_id, call.provider_id, call.point, call.order, call.outcome, call.duration_ms);
        for line in &call.logs {
            println!("      {line}");
        }
    }
}

/// Plugins the session resolver did not activate, and why.
pub fn print_rejections(resolution: &Resolution) {
    for rejection in &resolution.rejected {
        let code = serde_json::to_value(rejection.code).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
        println!("✗ {} [{code}] {}", rejection.plugin, rejection.message);
    }
    for unmet in &resolution.unmet {
        let code = serde_json::to_value(unmet.code).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
        println!("! world requires {} — unmet [{code}]{}", unmet.contract, if unmet.candidates.is_empty() { String::new() } else { format!(" (candidates: {})", unmet.candidates.join(", ")) });
    }
}

/// A plugin's load diagnostic, naming the plugin.
pub fn print_not_loaded(diagnostics: &mut dyn Iterator<Item = &Diagnostic>) {
    for d in diagnostics {
        println!("plugin not loaded: {}: {d}", d.plugin.as_deref().unwrap_or("?"));
    }
}
