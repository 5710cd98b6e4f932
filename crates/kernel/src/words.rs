//! How a count is worded for the author: "1 plugin", "2 plugins", never "1 plugin(s)". The
//! kernel's verdicts (compaction), the studio's errors and forecast advice, and the CLI all
//! count through here (the window through `ui/src/lib/words.ts`, which says it alike).

/// `n` and the noun, singular for one: "1 plugin", "2 plugins", "0 plugins". For the nouns the
/// studio counts, whose plurals all add an "s" ("played turn", "anthropic exchange").
pub fn counted(n: usize, noun: &str) -> String {
    counted_as(n, noun, &format!("{noun}s"))
}

/// `n` and the noun, for a noun whose plural is not the noun with an "s": "1 summary",
/// "2 summaries".
pub fn counted_as(n: usize, noun: &str, plural: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {plural}")
    }
}

/// The noun before a list of what it counts: "turn 2", "turns 2, 3".
pub fn listed(noun: &str, items: &[String]) -> String {
    let list = items.join(", ");
    if items.len() == 1 {
        format!("{noun} {list}")
    } else {
        format!("{noun}s {list}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_is_singular_and_every_other_count_plural() {
        assert_eq!(counted(1, "plugin"), "1 plugin");
        assert_eq!(counted(0, "plugin"), "0 plugins");
        assert_eq!(counted(2, "played turn"), "2 played turns");
        assert_eq!(counted_as(1, "summary", "summaries"), "1 summary");
        assert_eq!(counted_as(3, "summary", "summaries"), "3 summaries");
        assert_eq!(listed("turn", &["2".into()]), "turn 2");
        assert_eq!(listed("turn", &["2".into(), "3".into()]), "turns 2, 3");
    }
}
