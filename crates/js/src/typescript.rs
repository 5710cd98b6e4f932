//! TypeScript modules, loaded the way Node's type stripping runs them: strip-only, every type
//! replaced by white space so that lines and columns of the JavaScript QuickJS runs are those of
//! the `.ts` source (diagnostics and stack traces point into the author's file). Syntax that
//! strip-only mode refuses (`enum`, value `namespace`, parameter properties, `import x =`, …)
//! is an error that names the construct and says what to write instead.

use std::path::Path;
use std::sync::{Arc, Mutex};
use swc_common::errors::{DiagnosticBuilder, Emitter, Handler};
use swc_common::sync::Lrc;
use swc_common::{GLOBALS, Globals, SourceMap};
use swc_ts_fast_strip::{ErrorCode, Mode, Options};

/// Whether a module path is TypeScript (`.ts`, `.mts`, `.cts`).
pub fn is_typescript(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e == "ts" || e == "mts" || e == "cts")
}

/// Why a TypeScript module cannot run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StripError {
    /// A syntax error (`false`), or syntax that type stripping refuses by design (`true`).
    pub unsupported: bool,
    pub message: String,
    /// 1-based line and column in the `.ts` source.
    pub position: Option<(u32, u32)>,
}

/// Diagnostics the stripper emitted: message and position.
type Collected = Arc<Mutex<Vec<(String, Option<(u32, u32)>)>>>;

/// Erases the types of a TypeScript module, keeping every position.
pub fn strip(file_name: &str, source: &str) -> Result<String, StripError> {
    let cm: Lrc<SourceMap> = Default::default();
    let collected: Collected = Default::default();
    let emitter = Collect {
        cm: cm.clone(),
        out: Arc::clone(&collected),
    };
    let handler = Handler::with_emitter(false, false, Box::new(emitter));
    let options = Options {
        module: Some(true),
        filename: Some(file_name.to_string()),
        mode: Mode::StripOnly,
        ..Default::default()
    };
    // The parser has debug assertions that malformed input can trip (fuzzing found
    // `enum a {` at the end of a file); a panic must not unwind through the engine's C frames.
    let run = std::panic::AssertUnwindSafe(|| {
        GLOBALS.set(&Globals::new(), || {
            swc_common::errors::HANDLER.set(&handler, || {
                swc_ts_fast_strip::operate(&cm, &handler, source.to_string(), options)
            })
        })
    });
    let Ok(result) = std::panic::catch_unwind(run) else {
        return Err(StripError {
            unsupported: false,
            message: "the TypeScript parser gave up on this file (it is not valid TypeScript)"
                .into(),
            position: None,
        });
    };
    match result {
        Ok(output) => Ok(output.code),
        Err(error) => {
            let unsupported = matches!(error.code, ErrorCode::UnsupportedSyntax);
            let first = collected.lock().ok().and_then(|c| c.first().cloned());
            let (message, position) = match first {
                Some((text, position)) => (explain(&text, unsupported), position),
                None => (error.message, None),
            };
            Err(StripError {
                unsupported,
                message,
                position,
            })
        }
    }
}

/// Adds why strip-only mode refuses a construct, and what to write instead.
fn explain(message: &str, unsupported: bool) -> String {
    if !unsupported {
        return message.to_string();
    }
    let advice = if message.contains("enum") {
        "an enum generates code; use a union of string literals or a frozen object (`const Mood = Object.freeze({ Calm: \"calm\" })`)"
    } else if message.contains("namespace") {
        "a namespace with values generates code; use a module with exports"
    } else if message.contains("parameter property") {
        "a parameter property generates an assignment; declare the field and assign it in the constructor"
    } else if message.contains("import equals") {
        "`import x = require(…)` generates code; use `import x from \"…\"`"
    } else if message.contains("export assignment") {
        "`export = …` generates code; use `export default …`"
    } else if message.contains("type assertions") {
        "write `expr as T` instead of `<T>expr`"
    } else {
        "type stripping only erases types"
    };
    format!("{message} (Covel runs TypeScript the way Node's type stripping does: {advice})")
}

/// Collects the stripper's diagnostics with their positions in the source.
struct Collect {
    cm: Lrc<SourceMap>,
    out: Collected,
}

impl Emitter for Collect {
    fn emit(&mut self, db: &mut DiagnosticBuilder<'_>) {
        let position = db.span.primary_span().map(|span| {
            let loc = self.cm.lookup_char_pos(span.lo);
            (
                u32::try_from(loc.line).unwrap_or(u32::MAX),
                u32::try_from(loc.col.0 + 1).unwrap_or(u32::MAX),
            )
        });
        if let Ok(mut out) = self.out.lock() {
            out.push((db.message(), position));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_are_erased_and_positions_kept() {
        let source = "interface A { x: number }\nexport const f = (a: A): number => a.x as number;\nexport type T = string;\n";
        let out = strip("a.ts", source).expect("strips");
        assert_eq!(out.lines().count(), source.lines().count());
        let line = out.lines().nth(1).expect("line 2");
        assert_eq!(
            line.find("a.x"),
            source.lines().nth(1).and_then(|l| l.find("a.x")),
            "columns are kept"
        );
        assert!(!out.contains("interface") && !out.contains("number"));
    }

    #[test]
    fn an_enum_is_refused_with_its_position_and_advice() {
        let error = strip("e.ts", "const a = 1;\n  enum Mood { Calm }\n").expect_err("enum");
        assert!(error.unsupported);
        assert!(
            error.message.contains("enum") && error.message.contains("union of string literals"),
            "{}",
            error.message
        );
        assert_eq!(error.position, Some((2, 3)));
    }

    #[test]
    fn input_that_trips_the_parsers_assertions_is_an_error_not_a_panic() {
        // Found by the fuzzer (crates/js/tests/fuzz_conversion.rs): an unterminated enum.
        assert!(strip("f.ts", "enum a {").is_err());
    }

    #[test]
    fn a_syntax_error_has_a_position() {
        let error = strip("s.ts", "let x: = 1;\n").expect_err("syntax");
        assert!(!error.unsupported);
        assert_eq!(error.position.map(|p| p.0), Some(1));
    }
}
