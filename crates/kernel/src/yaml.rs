//! YAML errors worded for the plugin author: every file the studio parses as YAML (PLUGIN.md
//! and RUNTIME.md front matter, package files, session and settings files) reports its errors
//! through [`message`].
//!
//! serde-saphyr has two wordings: its default one advises the programmer which parser option to
//! set ("duplicate mapping key: entry, set DuplicateKeyPolicy in Options if acceptable"), its
//! user-facing one names parser events and Rust types ("expected mapping start", "invalid u32").
//! [`AuthorWording`] says those in the file's own terms and leaves the rest to the user-facing
//! one.

use crate::diagnostic::{Code, Diagnostic};
use serde::de::DeserializeOwned;
use serde_saphyr::{Error, Location, MessageFormatter, UserMessageFormatter};
use std::borrow::Cow;

/// Why a YAML document is not a `T`: the parser's error, and the path of the field it was
/// reading (`models.story.contextWindow`, `pluginData[2]`), which a type error's line and column
/// alone leave to the reader to work out.
#[derive(Debug)]
pub struct YamlError {
    /// Boxed: serde-saphyr's error is large, and a `Result` carries its `Err` inline.
    pub error: Box<Error>,
    /// `None` at the document's top level.
    pub path: Option<String>,
    /// A quoted value that ran past its line into the error: where it opened, its quote and
    /// where it closed (the parser's position is then far from the mistake).
    pub quote: Option<QuoteRun>,
}

/// A quoted YAML value spanning lines: opened at `opened` with `quote`, closed at `closed`
/// (1-based lines and columns).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuoteRun {
    pub quote: char,
    pub opened: (u32, u32),
    pub closed: Option<(u32, u32)>,
}

impl YamlError {
    /// The message, prefixed by the field's path when there is one, without the position. A
    /// path whose last field the message names already (an unknown field, a missing one) is
    /// given up to its parent.
    pub fn message(&self) -> String {
        let said = message(&self.error);
        let path = self.path.as_deref().map(|path| {
            let parent = path.rfind(['.', '[']).map_or("", |at| &path[..at]);
            let last = path[parent.len()..].trim_start_matches('.');
            if said.contains(&format!("`{last}`")) {
                parent
            } else {
                path
            }
        });
        let said = match path {
            Some(path) if !path.is_empty() => format!("`{path}`: {said}"),
            _ => said,
        };
        match self.quote {
            Some(run) => {
                let (line, column) = run.opened;
                let until = run
                    .closed
                    .map_or("the end of the file".to_string(), |(l, c)| {
                        format!("{l}:{c}")
                    });
                format!(
                    "the {q}…{q} value opened at {line}:{column} runs to {until}: is its closing {q} missing on line {line}? (the parser said: {said})",
                    q = run.quote
                )
            }
            None => said,
        }
    }

    pub fn location(&self) -> Option<Location> {
        self.error.location()
    }

    /// The error as a diagnostic with `code`, in `file` whose YAML starts after `line_offset`
    /// lines (front matter after its `---`).
    pub fn diagnostic(&self, code: Code, file: &std::path::Path, line_offset: u32) -> Diagnostic {
        // A quote that ran on is reported where it opened: that is where the author looks.
        let position = self
            .quote
            .map(|run| run.opened)
            .or_else(|| {
                self.location()
                    .map(|l| (to_u32(l.line()), to_u32(l.column())))
            })
            .map(|(line, column)| (line.saturating_add(line_offset), column));
        Diagnostic::new(code, self.message())
            .file(file)
            .at_opt(position)
    }

    /// `FILE:LINE:COLUMN: message` (without the position when the parser gave none), for files
    /// that report errors as one line of text rather than a diagnostic.
    pub fn in_file(&self, file: &std::path::Path) -> String {
        let at = self
            .location()
            .map(|l| format!(":{}:{}", l.line(), l.column()))
            .unwrap_or_default();
        format!("{}{at}: {}", file.display(), self.message())
    }
}

/// Parses a YAML document as a `T`, recording the path of the field an error was found in.
pub fn from_str<T: DeserializeOwned>(text: &str) -> Result<T, YamlError> {
    let mut path = None;
    let mut options = serde_saphyr::Options::default();
    options.budget = Some(budget_for(text));
    serde_saphyr::with_deserializer_from_str_with_options(text, options, |de| {
        serde_path_to_error::deserialize(de).map_err(|e| {
            // Up to the first segment the wrapper could not name ("?", e.g. the key of a
            // duplicate entry); the top level is ".".
            let at = e.path().to_string();
            let known = at.split(".?").next().unwrap_or_default();
            path = (!known.is_empty() && known != "." && known != "?").then(|| known.to_string());
            e.into_inner()
        })
    })
    .map_err(|error| {
        let at = error
            .location()
            .map(|l| (to_u32(l.line()), to_u32(l.column())));
        YamlError {
            quote: at.and_then(|at| quote_run_before(text, at)),
            error: Box::new(error),
            path,
        }
    })
}

/// The quoted value that spans lines and closed on the line of `at` (or never closed), where
/// the parser reports a quote left open on its line: it runs on to the next quote of its
/// kind, and the damage shows there. A quote opens a value only where a value starts (after `:`, `-`,
/// `[`, `{`, `,` or at the start of a line), so the apostrophe in `Mira's` does not.
pub fn quote_run_before(text: &str, at: (u32, u32)) -> Option<QuoteRun> {
    let mut found = None;
    let mut open: Option<(char, (u32, u32))> = None;
    let mut last_significant = '\n';
    for (index, line) in text.split('\n').enumerate() {
        let line_no = u32::try_from(index + 1).unwrap_or(u32::MAX);
        let mut in_comment = false;
        let chars: Vec<char> = line.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            let position = (line_no, u32::try_from(i + 1).unwrap_or(u32::MAX));
            if position >= at && open.is_none() {
                // Only a run that closed on the error's own line did the damage there.
                return found.filter(|run: &QuoteRun| run.closed.is_some_and(|c| c.0 == at.0));
            }
            match open {
                Some((quote, opened)) => {
                    let escaped = quote == '"' && i > 0 && chars[i - 1] == '\\';
                    let doubled = quote == '\'' && chars.get(i + 1) == Some(&'\'');
                    if c == quote && doubled {
                        i += 1;
                    } else if c == quote && !escaped {
                        open = None;
                        found = (opened.0 != line_no).then_some(QuoteRun {
                            quote,
                            opened,
                            closed: Some(position),
                        });
                        last_significant = c;
                    }
                }
                None if in_comment => {}
                None if c == '#' && (i == 0 || chars[i - 1].is_whitespace()) => in_comment = true,
                None if (c == '\'' || c == '"')
                    && matches!(last_significant, ':' | '-' | '[' | '{' | ',' | '\n' | '?') =>
                {
                    open = Some((c, position));
                }
                None if !c.is_whitespace() => last_significant = c,
                None => {}
            }
            i += 1;
        }
        if open.is_none() {
            last_significant = '\n';
        }
    }
    // Still open at the end of the text.
    open.map(|(quote, opened)| QuoteRun {
        quote,
        opened,
        closed: None,
    })
}

/// The parser's budget for `text`: its defaults (which stop alias and anchor bombs), with the
/// node and event counts scaled to the text's size. A YAML node takes at least a byte of text,
/// so a document never breaches them by its own nodes: the caller's byte limit on the file is
/// the limit (sessions: 32 MiB), and whatever the studio opened, played and saved again opens
/// again (a fixed count of 250 000 nodes refused the saved form of a session the studio had
/// just opened).
fn budget_for(text: &str) -> serde_saphyr::Budget {
    let mut budget = serde_saphyr::Budget::default();
    budget.max_nodes = budget.max_nodes.max(text.len());
    budget.max_events = budget.max_events.max(text.len().saturating_mul(2));
    budget
}

/// One step of a path into a YAML document.
#[derive(Debug, Clone, Copy)]
pub enum Step<'a> {
    Key(&'a str),
    Index(usize),
}

/// The line and column of the value at `path` in a YAML text (1-based), for a check made after
/// the text was read into types, which keep no positions. `None` when the text does not parse
/// or holds no such value.
pub fn position(text: &str, path: &[Step<'_>]) -> Option<(u32, u32)> {
    let root: Node = serde_saphyr::from_str(text).ok()?;
    let mut at = None;
    let mut node = &root;
    for step in path {
        let child = match (node, step) {
            (Node::Map(entries), Step::Key(key)) => {
                entries.iter().find(|(k, _)| k == key).map(|(_, v)| v)
            }
            (Node::Seq(items), Step::Index(i)) => items.get(*i),
            _ => None,
        }?;
        at = Some((
            to_u32(child.referenced.line()),
            to_u32(child.referenced.column()),
        ));
        node = &child.value;
    }
    at.filter(|(line, _)| *line > 0)
}

fn to_u32(n: u64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// A YAML value's shape with the location of every value in it.
enum Node {
    Map(Vec<(String, serde_saphyr::Spanned<Node>)>),
    Seq(Vec<serde_saphyr::Spanned<Node>>),
    Scalar,
}

impl<'de> serde::Deserialize<'de> for Node {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::{MapAccess, SeqAccess, Visitor};
        struct NodeVisitor;
        impl<'de> Visitor<'de> for NodeVisitor {
            type Value = Node;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any YAML value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
                let mut entries = Vec::new();
                while let Some(key) = map.next_key::<serde_json::Value>()? {
                    let key = key.as_str().map_or_else(|| key.to_string(), str::to_string);
                    entries.push((key, map.next_value()?));
                }
                Ok(Node::Map(entries))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                Ok(Node::Seq(items))
            }
            fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<Node, D::Error> {
                <Node as serde::Deserialize>::deserialize(d)
            }
            fn visit_str<E>(self, _: &str) -> Result<Node, E> {
                Ok(Node::Scalar)
            }
            fn visit_bool<E>(self, _: bool) -> Result<Node, E> {
                Ok(Node::Scalar)
            }
            fn visit_i64<E>(self, _: i64) -> Result<Node, E> {
                Ok(Node::Scalar)
            }
            fn visit_u64<E>(self, _: u64) -> Result<Node, E> {
                Ok(Node::Scalar)
            }
            fn visit_i128<E>(self, _: i128) -> Result<Node, E> {
                Ok(Node::Scalar)
            }
            fn visit_u128<E>(self, _: u128) -> Result<Node, E> {
                Ok(Node::Scalar)
            }
            fn visit_f64<E>(self, _: f64) -> Result<Node, E> {
                Ok(Node::Scalar)
            }
            fn visit_unit<E>(self) -> Result<Node, E> {
                Ok(Node::Scalar)
            }
            fn visit_none<E>(self) -> Result<Node, E> {
                Ok(Node::Scalar)
            }
        }
        deserializer.deserialize_any(NodeVisitor)
    }
}

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
    #[serde(deny_unknown_fields)]
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
    fn a_type_error_names_the_path_of_its_field() {
        #[derive(Debug, Deserialize)]
        #[allow(dead_code)]
        struct Outer {
            inner: Vec<Shape>,
        }
        let yaml = format!(
            "inner:\n  - {}",
            VALID
                .replace("count: 1", "count: -3")
                .replace('\n', "\n    ")
        );
        let error = from_str::<Outer>(&yaml).expect_err("invalid");
        assert_eq!(
            error.message(),
            "`inner[0].count`: expected a whole number from 0 to 4294967295 here"
        );
        assert_eq!(error.location().map(|l| l.line()), Some(3));
        assert_eq!(
            error.in_file(std::path::Path::new("a.yaml")),
            "a.yaml:3:12: `inner[0].count`: expected a whole number from 0 to 4294967295 here"
        );
        let unknown = from_str::<Outer>(&format!(
            "inner:\n  - {}",
            VALID.replace('\n', "\n    ") + "colour: red\n"
        ))
        .expect_err("unknown field");
        assert!(
            unknown
                .message()
                .starts_with("`inner[0]`: unknown field `colour`"),
            "the path up to the field the message names: {}",
            unknown.message()
        );
        let top = from_str::<Outer>("[1]").expect_err("not a mapping");
        assert!(top.path.is_none(), "{top:?}");
        assert_eq!(
            top.message(),
            "expected a mapping here (`key: value` lines or `{…}`)"
        );
    }

    #[test]
    fn a_path_is_found_at_its_line_and_column() {
        let text = "id: x\nrows:\n  - a: 1\n    b: ''\n  - {a: 2, b: 3}\n";
        assert_eq!(position(text, &[Step::Key("id")]), Some((1, 5)));
        assert_eq!(
            position(text, &[Step::Key("rows"), Step::Index(0), Step::Key("b")]),
            Some((4, 8))
        );
        assert_eq!(
            position(text, &[Step::Key("rows"), Step::Index(1)]),
            Some((5, 5))
        );
        assert_eq!(position(text, &[Step::Key("rows"), Step::Index(2)]), None);
        assert_eq!(
            position("id: [", &[Step::Key("id")]),
            None,
            "a text that does not parse"
        );
    }

    #[test]
    fn a_duplicate_key_is_named_without_advice_on_parser_options() {
        let message = error_of(&format!("{VALID}name: b\n"));
        assert_eq!(message, "duplicate mapping key `name` is not allowed here");
    }
}

#[cfg(test)]
mod quote_tests {
    use super::*;

    #[test]
    fn an_unclosed_quote_is_reported_where_it_opened() {
        let text = "id: demo\nlocale: 'en\nworld:\n  characters:\n    - { id: tavi, description: Mira's brother. }\n";
        let Err(error) = from_str::<serde_json::Value>(text) else {
            panic!("an error");
        };
        let run = error.quote.expect("the quote that ran on");
        assert_eq!(run.opened, (2, 9));
        assert_eq!(run.quote, '\'');
        assert!(
            error
                .message()
                .starts_with("the '…' value opened at 2:9 runs to 5:"),
            "{}",
            error.message()
        );
        let diagnostic = error.diagnostic(Code::SessionSchema, std::path::Path::new("s.yaml"), 0);
        assert_eq!(diagnostic.line, Some(2));
        assert_eq!(diagnostic.column, Some(9));
    }

    #[test]
    fn apostrophes_inside_plain_values_and_quotes_that_close_open_nothing() {
        let text = "a: Mira's boat\nb: 'it''s fine'\nc: \"say \\\"hi\\\"\"\nd: [1, 2\n";
        let Err(error) = from_str::<serde_json::Value>(text) else {
            panic!("an error");
        };
        assert_eq!(error.quote, None, "{}", error.message());
    }
}
