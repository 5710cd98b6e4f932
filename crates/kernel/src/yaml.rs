//! YAML errors worded for the plugin author: every file the studio parses as YAML (PLUGIN.md
//! and RUNTIME.md front matter, package files, session and settings files) reports its errors
//! through [`message`].
//!
//! serde-saphyr has two wordings: its default one advises the programmer which parser option to
//! set ("duplicate mapping key: entry, set DuplicateKeyPolicy in Options if acceptable"), its
//! user-facing one names parser events and Rust types ("expected mapping start", "invalid u32").
//! [`AuthorWording`] says those in the file's own terms and leaves the rest to the user-facing
//! one.

use serde_saphyr::{Error, MessageFormatter, UserMessageFormatter};
use std::borrow::Cow;

/// The error's message, without its position (callers report line and column apart).
pub fn message(error: &Error) -> String {
    let rendered = error.render_with_formatter(&AuthorWording);
    let first = rendered.lines().next().unwrap_or(&rendered);
    let first = first.strip_prefix("error: ").unwrap_or(first);
    // The renderer prefixes "line L column C: ".
    match first.split_once(": ") {
        Some((prefix, rest)) if prefix.starts_with("line ") => rest.to_string(),
        _ => first.to_string(),
    }
}

/// serde-saphyr's user-facing wording, with what it says in parser and Rust terms said in the
/// file's.
pub struct AuthorWording;

impl MessageFormatter for AuthorWording {
    fn format_message<'a>(&self, err: &'a Error) -> Cow<'a, str> {
        let said = match err {
            Error::Unexpected { expected, .. } => match *expected {
                "mapping start" => Some("expected a mapping here (`key: value` lines or `{…}`)"),
                "empty mapping start" => Some("expected an empty mapping `{}` here"),
                "sequence start" => Some("expected a list here (`- item` lines or `[…]`)"),
                "string scalar" => Some("expected a text here, not a list or a mapping"),
                _ => None,
            },
            Error::InvalidScalar { ty, .. } => scalar(ty),
            _ => None,
        };
        said.map_or_else(|| UserMessageFormatter.format_message(err), Cow::Borrowed)
    }
}

/// What a value of the Rust type `ty` is, in a file's terms.
fn scalar(ty: &str) -> Option<&'static str> {
    Some(match ty {
        "u8" => "expected a whole number from 0 to 255 here",
        "u16" => "expected a whole number from 0 to 65535 here",
        "u32" => "expected a whole number from 0 to 4294967295 here",
        "u64" | "u128" | "usize" => "expected a whole number of 0 or more here",
        "i8" | "i16" | "i32" | "i64" | "i128" | "isize" => "expected a whole number here",
        "floating point" | "f32" | "f64" => "expected a number here",
        "boolean" | "bool" => "expected true or false here",
        "char" => "expected a single character here",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Shape {
        name: String,
        count: u32,
        tags: Vec<String>,
        nested: std::collections::BTreeMap<String, String>,
        on: bool,
        ratio: f64,
    }

    fn error_of(yaml: &str) -> String {
        message(&serde_saphyr::from_str::<Shape>(yaml).expect_err("invalid"))
    }

    const VALID: &str = "name: a\ncount: 1\ntags: [x]\nnested: {k: v}\non: true\nratio: 0.5\n";

    #[test]
    fn errors_name_what_the_file_must_hold_not_parser_events_or_rust_types() {
        serde_saphyr::from_str::<Shape>(VALID).expect("the base is valid");
        let cases = [
            (
                "count: 1",
                "count: -3",
                "expected a whole number from 0 to 4294967295 here",
            ),
            ("on: true", "on: maybe", "expected true or false here"),
            ("ratio: 0.5", "ratio: half", "expected a number here"),
            (
                "tags: [x]",
                "tags: x",
                "expected a list here (`- item` lines or `[…]`)",
            ),
            (
                "nested: {k: v}",
                "nested: [v]",
                "expected a mapping here (`key: value` lines or `{…}`)",
            ),
            (
                "name: a",
                "name: [a]",
                "expected a text here, not a list or a mapping",
            ),
        ];
        for (from, to, expected) in cases {
            assert_eq!(error_of(&VALID.replace(from, to)), expected, "{to}");
        }
    }

    #[test]
    fn a_duplicate_key_is_named_without_advice_on_parser_options() {
        let message = error_of(&format!("{VALID}name: b\n"));
        assert_eq!(message, "duplicate mapping key `name` is not allowed here");
    }
}
