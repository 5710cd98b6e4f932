//! A syntax error said where the author can act on it. QuickJS reports an unclosed bracket at
//! the end of the file with an empty token (`index.js:53:1 … unexpected token in expression:
//! ''` for a 52-line file); the module is parsed again with swc for its message and position,
//! and when the error is at the end, the unclosed bracket is found and named where it opened.

use std::path::Path;
use swc_common::Spanned;
use swc_ecma_parser::{Parser, StringInput};

/// A syntax error's message and 1-based position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnosis {
    pub message: String,
    pub position: (u32, u32),
}

/// What is wrong with `source`, when swc finds a syntax error in it.
pub fn diagnose(path: &Path, source: &str) -> Option<Diagnosis> {
    let (cm, fm, syntax) = crate::imports::source_file(path, source);
    // Parser debug assertions can trip on malformed input; that is "no diagnosis".
    // The first error, fatal or recovered from.
    let error = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut parser = Parser::new(syntax, StringInput::from(&*fm), None);
        let fatal = parser.parse_module().err();
        fatal.or_else(|| parser.take_errors().into_iter().next())
    }))
    .ok()
    .flatten()?;
    let offset = (error.span().lo.0 as usize).saturating_sub(fm.start_pos.0 as usize);
    let at_end = source[offset.min(source.len())..].trim().is_empty();
    if at_end && let Some(unclosed) = unclosed_bracket(source) {
        return Some(unclosed);
    }
    let loc = cm.lookup_char_pos(error.span().lo);
    Some(Diagnosis {
        message: error.kind().msg().to_string(),
        position: (
            u32::try_from(loc.line).unwrap_or(u32::MAX),
            u32::try_from(loc.col.0 + 1).unwrap_or(u32::MAX),
        ),
    })
}

/// The innermost bracket still open at the end of `source` (strings, template literals,
/// comments and regular expressions skipped), or one closed by the wrong kind.
fn unclosed_bracket(source: &str) -> Option<Diagnosis> {
    // Open brackets, and `${` of template literals (as '$'), with their positions.
    let mut stack: Vec<(char, (u32, u32))> = Vec::new();
    let chars: Vec<char> = source.chars().collect();
    let (mut line, mut column) = (1u32, 1u32);
    let mut i = 0;
    let mut last = '\n';
    let advance = |c: char, line: &mut u32, column: &mut u32| {
        if c == '\n' {
            *line += 1;
            *column = 1;
        } else {
            *column += 1;
        }
    };
    // Skips a string or template body from `i` (after its opening quote); returns true when a
    // template reached `${` (the caller pushes it).
    while i < chars.len() {
        let c = chars[i];
        let here = (line, column);
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                advance(chars[i], &mut line, &mut column);
                i += 1;
            }
            continue;
        }
        if c == '/' && next == Some('*') {
            while i < chars.len() && !(chars[i] == '*' && chars.get(i + 1) == Some(&'/')) {
                advance(chars[i], &mut line, &mut column);
                i += 1;
            }
            for _ in 0..2 {
                if i < chars.len() {
                    advance(chars[i], &mut line, &mut column);
                    i += 1;
                }
            }
            continue;
        }
        let quote = match c {
            '\'' | '"' | '`' => Some(c),
            // A `/` where a value starts is a regular expression.
            '/' if matches!(
                last,
                '(' | ',' | '=' | ':' | '[' | '!' | '&' | '|' | '?' | '{' | '}' | ';' | '\n'
            ) =>
            {
                Some('/')
            }
            '}' if stack.last().is_some_and(|(open, _)| *open == '$') => {
                // The end of a template's `${…}`: back into the template's text.
                stack.pop();
                Some('`')
            }
            _ => None,
        };
        if let Some(quote) = quote {
            advance(c, &mut line, &mut column);
            i += 1;
            while i < chars.len() && chars[i] != quote {
                if chars[i] == '\\' {
                    advance(chars[i], &mut line, &mut column);
                    i += 1;
                } else if quote == '`' && chars[i] == '$' && chars.get(i + 1) == Some(&'{') {
                    stack.push(('$', (line, column)));
                    break;
                } else if quote != '`' && chars[i] == '\n' {
                    break;
                }
                if i < chars.len() {
                    advance(chars[i], &mut line, &mut column);
                    i += 1;
                }
            }
            if stack
                .last()
                .is_some_and(|(open, at)| *open == '$' && *at == (line, column))
            {
                // Step over `${`.
                for _ in 0..2 {
                    advance(chars[i], &mut line, &mut column);
                    i += 1;
                }
                last = '{';
                continue;
            }
            if i < chars.len() {
                advance(chars[i], &mut line, &mut column);
                i += 1;
            }
            last = 'a';
            continue;
        }
        match c {
            '{' | '(' | '[' => stack.push((c, here)),
            '}' | ')' | ']' => {
                let wanted = match c {
                    '}' => '{',
                    ')' => '(',
                    _ => '[',
                };
                match stack.pop() {
                    Some((open, _)) if open == wanted => {}
                    Some((open, at)) => {
                        return Some(Diagnosis {
                            message: format!(
                                "`{c}` at {}:{} closes the `{open}` opened at {}:{}",
                                here.0, here.1, at.0, at.1
                            ),
                            position: here,
                        });
                    }
                    None => {
                        return Some(Diagnosis {
                            message: format!("`{c}` closes nothing"),
                            position: here,
                        });
                    }
                }
            }
            _ => {}
        }
        if !c.is_whitespace() {
            last = c;
        } else if c == '\n' && !matches!(last, ')' | ']') {
            last = '\n';
        }
        advance(c, &mut line, &mut column);
        i += 1;
    }
    stack.pop().map(|(open, at)| {
        let open = if open == '$' { "${" } else { &open.to_string() };
        Diagnosis {
            message: format!(
                "the `{open}` opened at {}:{} is never closed (the file ends first)",
                at.0, at.1
            ),
            position: at,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn js(source: &str) -> Option<Diagnosis> {
        diagnose(Path::new("index.js"), source)
    }

    #[test]
    fn an_unclosed_brace_is_named_where_it_opened() {
        let source =
            "export default function (covel) {{\n  const a = \"}\"; // }\n  return `${a}`;\n}\n";
        let found = js(source).expect("a syntax error");
        assert_eq!(found.position, (1, 33));
        assert_eq!(
            found.message,
            "the `{` opened at 1:33 is never closed (the file ends first)"
        );
    }

    #[test]
    fn a_closer_of_the_wrong_kind_names_both_brackets() {
        let found = js("f(a, [1, 2);\n").expect("a syntax error");
        assert_eq!(found.position.0, 1, "{found:?}");
        assert!(!found.message.is_empty(), "{found:?}");
        let found = unclosed_bracket("f(a, [1, 2);\n").expect("a mismatch");
        assert_eq!(found.message, "`)` at 1:11 closes the `[` opened at 1:6");
        assert_eq!(found.position, (1, 11));
    }

    #[test]
    fn other_errors_keep_swc_s_message_and_position() {
        let found = js("const = 1;\n").expect("a syntax error");
        assert_eq!(found.position.0, 1);
        assert!(!found.message.is_empty());
        assert_eq!(
            js("const a = /{/; export default a;\n"),
            None,
            "a regex with a brace is fine"
        );
    }
}
