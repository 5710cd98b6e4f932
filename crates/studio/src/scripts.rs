//! What kind of text a prompt is made of, for the Claude estimate: Claude's tokenizer is not
//! public, and its counts drift from the exact `cl100k_base` count by different amounts for
//! Latin prose, CJK, emoji and code (the measured bands are facts, in the model-facts file).
//! A text is cut into runs of one kind, each run counted and scaled by its own band.
//!
//! The classes are deliberately coarse, so a reader can predict them: **CJK** is Han, kana,
//! Hangul, CJK punctuation and fullwidth forms; **emoji** is pictographs with their modifiers,
//! joiners and flags; **code** is a fenced block (```` ``` ````) or a line dense in code
//! punctuation; everything else is **Latin** (Latin, Cyrillic, Greek, digits and punctuation
//! alike, for which no separate measurements exist).

use serde::Serialize;

/// One kind of text, each with its own estimate band.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Script {
    Latin,
    Cjk,
    Emoji,
    Code,
}

impl Script {
    pub const ALL: [Script; 4] = [Script::Latin, Script::Cjk, Script::Emoji, Script::Code];

    pub fn name(self) -> &'static str {
        match self {
            Script::Latin => "latin",
            Script::Cjk => "cjk",
            Script::Emoji => "emoji",
            Script::Code => "code",
        }
    }
}

fn is_cjk(c: char) -> bool {
    matches!(u32::from(c),
        0x1100..=0x11FF        // Hangul Jamo
        | 0x2E80..=0x2FDF      // CJK radicals
        | 0x3000..=0x303F      // CJK symbols and punctuation
        | 0x3040..=0x30FF      // Hiragana, Katakana
        | 0x3100..=0x31FF      // Bopomofo, Hangul compatibility Jamo, Katakana extensions
        | 0x3400..=0x4DBF      // CJK extension A
        | 0x4E00..=0x9FFF      // CJK unified ideographs
        | 0xAC00..=0xD7AF      // Hangul syllables
        | 0xF900..=0xFAFF      // CJK compatibility ideographs
        | 0xFF00..=0xFFEF      // halfwidth and fullwidth forms
        | 0x20000..=0x3FFFF) // CJK extensions B and later
}

/// A pictograph that starts or continues an emoji.
fn is_emoji(c: char) -> bool {
    matches!(u32::from(c),
        0x1F000..=0x1FAFF      // pictographs, emoticons, transport, flags' letters, skin tones
        | 0x2600..=0x27BF      // miscellaneous symbols, dingbats
        | 0x2B00..=0x2BFF      // arrows and stars (⭐, ⬛)
        | 0x231A..=0x231B | 0x23E9..=0x23FA)
}

/// What holds an emoji together: the zero-width joiner, variation selectors, the keycap and
/// tag characters. They belong to the emoji before them.
fn is_emoji_glue(c: char) -> bool {
    matches!(
        u32::from(c),
        0x200D | 0xFE0E | 0xFE0F | 0x20E3 | 0xE0020..=0xE007F
    )
}

/// Characters that make a line look like code (JSON, markup, programs), weighted: braces,
/// brackets, operators count fully; quotes, colons and parentheses, common in prose too, half.
fn code_weight(c: char) -> f64 {
    match c {
        '{' | '}' | '[' | ']' | '<' | '>' | ';' | '=' | '|' | '\\' | '&' | '*' | '_' | '#'
        | '$' | '%' | '@' | '^' | '~' | '`' => 1.0,
        '"' | ':' | '(' | ')' | '/' => 0.5,
        _ => 0.0,
    }
}

/// A line dense in code punctuation (at least 12% of its non-blank characters, weighted; at
/// least six of them): `{"type": "object"}`, `fn main() { … }`, `<div class="x">` — not prose
/// with a quotation or a parenthesis.
fn looks_like_code(line: &str) -> bool {
    let mut count = 0usize;
    let mut weight = 0.0;
    for c in line.chars().filter(|c| !c.is_whitespace()) {
        count += 1;
        weight += code_weight(c);
    }
    count >= 6 && weight / count as f64 >= 0.12
}

/// The text cut into runs of one kind, in order; the runs put together are the text. A text of
/// one kind is one run (the common case, counted as it is).
pub fn runs(text: &str) -> Vec<(Script, &str)> {
    // Spans as byte ranges, a piece joining the span before it when it is of the same kind.
    let mut spans: Vec<(Script, usize, usize)> = Vec::new();
    let mut push = |script: Script, start: usize, end: usize| match spans.last_mut() {
        Some(last) if last.0 == script && last.2 == start => last.2 = end,
        _ => spans.push((script, start, end)),
    };
    let mut fenced = false;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let fence = line.trim_start().starts_with("```");
        if fenced || fence || looks_like_code(line) {
            push(Script::Code, offset, offset + line.len());
        } else {
            let mut previous = Script::Latin;
            for (at, c) in line.char_indices() {
                let script = if is_cjk(c) {
                    Script::Cjk
                } else if is_emoji(c) || (is_emoji_glue(c) && previous == Script::Emoji) {
                    Script::Emoji
                } else {
                    Script::Latin
                };
                previous = script;
                push(script, offset + at, offset + at + c.len_utf8());
            }
        }
        if fence {
            fenced = !fenced;
        }
        offset += line.len();
    }
    spans
        .into_iter()
        .map(|(script, start, end)| (script, &text[start..end]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<(Script, &str)> {
        runs(text)
    }

    #[test]
    fn prose_is_one_latin_run() {
        assert_eq!(
            kinds("Keep a grave (unhurried) voice. \"I wait,\" she said."),
            [(
                Script::Latin,
                "Keep a grave (unhurried) voice. \"I wait,\" she said."
            )]
        );
    }

    #[test]
    fn cjk_and_emoji_are_cut_out_of_the_prose_around_them() {
        assert_eq!(
            kinds("Mira 说：你好 👍🏽 then 👨‍👩‍👧."),
            [
                (Script::Latin, "Mira "),
                (Script::Cjk, "说：你好"),
                (Script::Latin, " "),
                (Script::Emoji, "👍🏽"),
                (Script::Latin, " then "),
                (Script::Emoji, "👨‍👩‍👧"),
                (Script::Latin, "."),
            ]
        );
    }

    #[test]
    fn fenced_blocks_and_dense_lines_are_code() {
        let text =
            "Call it so:\n```js\nconst a = 1;\nreturn a\n```\nthen {\"type\": \"object\"}\nDone.";
        assert_eq!(
            kinds(text),
            [
                (Script::Latin, "Call it so:\n"),
                (
                    Script::Code,
                    "```js\nconst a = 1;\nreturn a\n```\nthen {\"type\": \"object\"}\n"
                ),
                (Script::Latin, "Done."),
            ]
        );
    }

    #[test]
    fn the_runs_put_together_are_the_text() {
        for text in ["", "a", "你", "👍🏽x\n```\n好\n", "{\"a\": [1, 2]}\nb 😀 c"] {
            let joined: String = runs(text).iter().map(|(_, s)| *s).collect();
            assert_eq!(joined, text);
        }
    }
}
