//! Where a session file writes each expectation, so a failed check names its line
//! (`file:line:col`) and the author can jump to it. A second, lenient reading of the file that
//! keeps positions only: the kernel's session types stay plain (no spans in the model), and a
//! file this reading cannot follow just gives no positions.

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_saphyr::Spanned;
use std::path::Path;

#[derive(Deserialize)]
struct Document {
    #[serde(default)]
    test: Option<Test>,
}

#[derive(Deserialize)]
struct Test {
    #[serde(default)]
    turns: Vec<Turn>,
    #[serde(default)]
    expect: Vec<Spanned<IgnoredAny>>,
}

#[derive(Deserialize)]
struct Turn {
    #[serde(default)]
    expect: Vec<Spanned<IgnoredAny>>,
}

/// Per tested turn, the position of each of its expectations as `file:line:col`: the scripted
/// turns' `expect` lists, or the session's own `expect` when it scripts no turns (in the order
/// the run evaluates them). Empty when the file cannot be read this way.
pub fn expectations(text: &str, file: &Path) -> Vec<Vec<String>> {
    let Ok(document) = serde_saphyr::from_str::<Document>(text) else {
        return Vec::new();
    };
    let Some(test) = document.test else {
        return Vec::new();
    };
    let place = |e: &Spanned<IgnoredAny>| {
        format!(
            "{}:{}:{}",
            file.display(),
            e.referenced.line(),
            e.referenced.column()
        )
    };
    if test.turns.is_empty() {
        vec![test.expect.iter().map(place).collect()]
    } else {
        test.turns
            .iter()
            .map(|t| t.expect.iter().map(place).collect())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn each_expectation_is_placed_on_its_line_and_column() {
        let text = "id: s\ntest:\n  turns:\n    - say: hi\n      expect:\n        - system: { contains: a }\n        - world: { pointer: /x }\n    - say: yo\n";
        let places = super::expectations(text, std::path::Path::new("s.session.yaml"));
        assert_eq!(
            places,
            vec![
                vec!["s.session.yaml:6:11", "s.session.yaml:7:11"],
                Vec::<&str>::new()
            ]
        );
    }
}
