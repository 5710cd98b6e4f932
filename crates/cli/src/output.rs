//! Shared output helpers: JSON printing and diagnostic rendering.

use covel_kernel::Diagnostic;
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
