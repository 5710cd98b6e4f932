//! Shared output helpers: JSON printing and diagnostic rendering.

use covel_kernel::Diagnostic;
use covel_kernel::resolver::Resolution;
use covel_kernel::runner::CallRecord;
use serde::Serialize;

/// Prints a line of human output with [`terminal_safe`] applied: plugin text reaches the
/// terminal as text, never as escape sequences or reordering controls.
#[macro_export]
macro_rules! say {
    () => { println!() };
    ($($arg:tt)*) => { println!("{}", $crate::output::terminal_safe(&format!($($arg)*))) };
}

/// Escapes what a terminal would interpret in text plugins supplied: C0 and C1 control
/// characters other than line feed and tab (ESC sequences can rewrite the screen or the
/// title), DEL, and the Unicode bidirectional overrides and isolates (which reorder what the
/// author reads). Each becomes a visible `\u{…}`.
pub fn terminal_safe(text: &str) -> String {
    let risky = |c: char| {
        (c.is_control() && c != '\n' && c != '\t')
            || matches!(c, '\u{200E}' | '\u{200F}' | '\u{061C}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
    };
    if !text.chars().any(risky) {
        return text.to_string();
    }
    text.chars()
        .map(|c| {
            if risky(c) {
                format!("\\u{{{:x}}}", u32::from(c))
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// Prints a value as pretty JSON on stdout.
pub fn print_json<T: Serialize>(value: &T) -> anyhow::Result<()> {
    println!("{}", serde_json::to_string_pretty(value)?); // JSON escapes control characters itself
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

/// Provider calls with their outcome, reason, what each handler logged and the studio's notes
/// on it (such as the row-shaped `pluginData` read).
pub fn print_calls(calls: &[CallRecord]) {
    for call in calls {
        crate::say!("{}", call_line(call));
        for line in &call.logs {
            crate::say!("      {line}");
        }
        for note in &call.notes {
            crate::say!("      note: {note}");
        }
    }
}

/// The closing word on the provider calls that failed in a run whose point went on without them
/// (collect and the slots leave a failed provider out): one line each, after the result, so a
/// long result does not hide them, and what `--strict` does.
pub fn print_failed_calls(failed: &[covel_studio::testing::FailedCall], strict: bool) {
    if failed.is_empty() {
        return;
    }
    crate::say!();
    for call in failed {
        crate::say!("{}", failed_call_line(call));
    }
    let what = covel_studio::words::counted(failed.len(), "provider call");
    if strict {
        crate::say!("{what} failed: exit 1 (--strict)");
    } else {
        crate::say!("{what} failed and left out; the rest went on (--strict makes this exit 1)");
    }
}

/// A provider call that failed, as `call`, `preview` and `test` say it.
pub fn failed_call_line(call: &covel_studio::testing::FailedCall) -> String {
    format!("⚠ provider failed: {call}")
}

/// One call's line: who, where, in which order, how it ended and in how long; a memo answer
/// says so, with what its first run took (its own time is the lookup's).
fn call_line(call: &CallRecord) -> String {
    let reason = call
        .message
        .as_deref()
        .map(|m| format!(": {m}"))
        .unwrap_or_default();
    let cached = match (call.cached, call.ran_ms) {
        (true, Some(ran)) => format!(" (cached; its first run took {ran:.2} ms)"),
        (true, None) => " (cached)".to_string(),
        (false, _) => String::new(),
    };
    format!(
        "  {}/{} ({}) order {} → {:?} in {:.2} ms{cached}{reason}",
        call.plugin_id, call.provider_id, call.point, call.order, call.outcome, call.duration_ms
    )
}

/// Plugins the session resolver did not activate, and why.
pub fn print_rejections(resolution: &Resolution) {
    for rejection in &resolution.rejected {
        let code = serde_json::to_value(rejection.code)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        crate::say!("✗ {} [{code}] {}", rejection.plugin, rejection.message);
    }
    for unmet in &resolution.unmet {
        let code = serde_json::to_value(unmet.code)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        crate::say!(
            "! world requires {} — unmet [{code}]{}",
            unmet.contract,
            if unmet.candidates.is_empty() {
                String::new()
            } else {
                format!(" (candidates: {})", unmet.candidates.join(", "))
            }
        );
    }
}

/// A plugin's load diagnostic, naming the plugin.
pub fn print_not_loaded(diagnostics: &mut dyn Iterator<Item = &Diagnostic>) {
    for d in diagnostics {
        match d.plugin.as_deref() {
            Some(plugin) => crate::say!("plugin not loaded: {plugin}: {d}"),
            // A problem of the session file (its settings, its schema), not of a plugin.
            None => crate::say!("session problem: {d}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{CallRecord, call_line, terminal_safe};
    use covel_kernel::contract::PointId;
    use covel_kernel::runner::Outcome;

    #[test]
    fn a_memo_answer_says_what_its_first_run_took() {
        let answer = CallRecord {
            point: PointId::PromptSegment,
            plugin_id: "lore".into(),
            provider_id: "glossary".into(),
            slot: None,
            order: 0,
            outcome: Outcome::Success,
            error_code: None,
            message: None,
            duration_ms: 0.004,
            logs: Vec::new(),
            notes: Vec::new(),
            cached: true,
            ran_ms: Some(1.234),
            not_cached: None,
        };
        assert_eq!(
            call_line(&answer),
            "  lore/glossary (prompt.segment@1) order 0 → Success in 0.00 ms (cached; its first run took 1.23 ms)"
        );
        let run = CallRecord {
            cached: false,
            ran_ms: None,
            duration_ms: 1.234,
            ..answer
        };
        assert!(
            call_line(&run).ends_with("in 1.23 ms"),
            "{}",
            call_line(&run)
        );
    }

    #[test]
    fn escape_sequences_and_bidi_overrides_are_shown_not_interpreted() {
        assert_eq!(
            terminal_safe("ok\x1b]0;pwned\x07 \u{202E}txt.exe"),
            "ok\\u{1b}]0;pwned\\u{7} \\u{202e}txt.exe"
        );
        assert_eq!(terminal_safe("line\n\tindented"), "line\n\tindented");
    }
}
