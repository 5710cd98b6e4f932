//! How the studio words a count for the author: "1 plugin", "2 plugins", never "1 plugin(s)".
//! The CLI, the errors and the forecast's advice all count through here.

/// `n` and the noun, singular for one: "1 plugin", "2 plugins", "0 plugins". For the nouns the
/// studio counts, whose plurals all add an "s" ("played turn", "anthropic exchange").
pub fn counted(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
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
        assert_eq!(listed("turn", &["2".into()]), "turn 2");
        assert_eq!(listed("turn", &["2".into(), "3".into()]), "turns 2, 3");
    }
}
