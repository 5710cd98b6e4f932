//! The Rust side of the plugin SDK's helpers, for the kernel's own use (token estimates,
//! i18n text, the acting character). The JavaScript SDK (`@covel/plugin-handlers-utils`)
//! implements the same rules; a shared table of vectors keeps the two identical. The locale
//! rule lives in [`crate::locale`]; its functions are re-exported here.

use serde_json::Value;

pub use crate::locale::{
    DEFAULT_FALLBACK_LOCALE, DEFAULT_LOCALE, canonicalize_locale, fallback_locales_for,
    instruction_locale_for, instruction_locale_override, instruction_variant_candidates,
    is_default_locale, is_instruction_variant_locale, locale_lookup_candidates,
    locale_resource_candidates, locales_share_language_and_script, normalize_locale,
    pick_locale_text, reads_instruction_variant, resolve_i18n_text,
};

fn is_cjk_unit(unit: u16) -> bool {
    matches!(unit, 0x2E80..=0x9FFF | 0xAC00..=0xD7AF | 0xF900..=0xFAFF | 0xFF00..=0xFFEF)
}

/// CJK UTF-16 units count one token each; everything else one per four units, rounded up.
/// (Counted per character: a character outside the BMP is two units and never CJK here.)
pub fn estimate_tokens(text: &str) -> u64 {
    TokenTally::of(text).tokens()
}

/// What [`estimate_tokens`] counts in a text, before rounding: its UTF-16 units and how many
/// of them are CJK. Tallies add up, so the estimate of a text put together from pieces is the
/// sum of the pieces' tallies, without building the text (a snapshot estimates the whole system
/// prompt, ≈ 340 KB at 500 plugins, that way).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TokenTally {
    units: u64,
    cjk: u64,
}

impl TokenTally {
    pub fn of(text: &str) -> TokenTally {
        // Most prompt text is ASCII: one unit per byte and no CJK, counted without decoding.
        if text.is_ascii() {
            return TokenTally {
                units: text.len() as u64,
                cjk: 0,
            };
        }
        let mut tally = TokenTally::default();
        for c in text.chars() {
            tally.units += c.len_utf16() as u64;
            if u16::try_from(u32::from(c)).is_ok_and(is_cjk_unit) {
                tally.cjk += 1;
            }
        }
        tally
    }

    /// The estimate: CJK units one token each, the rest one per four, rounded up once.
    pub fn tokens(self) -> u64 {
        self.cjk + (self.units - self.cjk).div_ceil(4)
    }
}

impl std::ops::Add for TokenTally {
    type Output = TokenTally;
    fn add(self, other: TokenTally) -> TokenTally {
        TokenTally {
            units: self.units + other.units,
            cjk: self.cjk + other.cjk,
        }
    }
}

impl std::iter::Sum for TokenTally {
    fn sum<I: Iterator<Item = TokenTally>>(pieces: I) -> TokenTally {
        pieces.fold(TokenTally::default(), std::ops::Add::add)
    }
}

/// The character the player acts as: an action naming a seat or character selects that seat's
/// current character; with no actions, the primary seat's (else the first seat's); with no
/// seats, the only `player` character if there is exactly one, else none. Never "the first
/// player".
pub fn acting_character_of<'a>(
    actions: &[Value],
    characters: &'a [Value],
    seats: &[Value],
) -> Option<&'a Value> {
    let by_id =
        |id: Option<&Value>| id.and_then(|id| characters.iter().find(|c| c.get("id") == Some(id)));
    for action in actions {
        if let Some(seat_id) = action.get("seatId")
            && let Some(seat) = seats.iter().find(|s| s.get("id") == Some(seat_id))
        {
            return by_id(seat.get("characterId"));
        }
        if let Some(character_id) = action.get("characterId")
            && let Some(seat) = seats
                .iter()
                .find(|s| s.get("characterId") == Some(character_id))
        {
            return by_id(seat.get("characterId"));
        }
    }
    if let Some(first) = seats.first() {
        let seat = seats
            .iter()
            .find(|s| s.get("primary") == Some(&Value::Bool(true)))
            .unwrap_or(first);
        return by_id(seat.get("characterId"));
    }
    let mut players = characters
        .iter()
        .filter(|c| c.get("type").and_then(Value::as_str) == Some("player"));
    match (players.next(), players.next()) {
        (Some(only), None) => Some(only),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tokens_count_cjk_one_each_and_the_rest_by_four() {
        assert_eq!(estimate_tokens(""), 0);
        assert_eq!(estimate_tokens("abcd"), 1);
        assert_eq!(estimate_tokens("abcde"), 2);
        assert_eq!(estimate_tokens("你好abc"), 3);
        assert_eq!(
            estimate_tokens("😀"),
            1,
            "two units outside the BMP, not CJK"
        );
    }

    /// Upstream's `estimateTokens` (`@covel/plugin-handlers-utils` 0.0.50,
    /// `token-estimation.ts`) matches CJK code units with a regular expression without the `u`
    /// flag and counts `text.length`: UTF-16 units, so an emoji is its units over four (a
    /// skin-toned thumb is four units, a family joined by ZWJs eight, with the joiners), never
    /// one token each, and CJK punctuation and fullwidth forms are one token each. Ours counts
    /// the same.
    #[test]
    fn emoji_count_by_their_utf16_units_and_cjk_one_each_as_upstream_counts_them() {
        assert_eq!(estimate_tokens("👍🏽"), 1, "4 units");
        assert_eq!(estimate_tokens("👍🏽👨‍👩‍👧"), 3, "4 + 8 units");
        assert_eq!(estimate_tokens("🇯🇵"), 1, "two regional indicators, 4 units");
        assert_eq!(
            estimate_tokens("守门人在钟楼下等你。"),
            10,
            "。 is CJK punctuation"
        );
        assert_eq!(estimate_tokens("Ｍｉｒａ"), 4, "fullwidth forms");
        // Mixed: 说 ： 等 等 ！ are CJK (5); "Mira ", “, ”, the space and 👍🏽 are 12 units (3).
        assert_eq!(estimate_tokens("Mira 说：“等等！” 👍🏽"), 8);
    }

    proptest::proptest! {
        /// The per-character count (and its ASCII shortcut) equals the rule's own definition
        /// over UTF-16 units.
        #[test]
        fn tokens_are_counted_over_utf16_units(text in "\\PC{0,40}|[ -~]{0,40}|[a-z你好😀]{0,20}") {
            let (mut cjk, mut total) = (0u64, 0u64);
            for unit in text.encode_utf16() {
                total += 1;
                cjk += u64::from(is_cjk_unit(unit));
            }
            proptest::prop_assert_eq!(estimate_tokens(&text), cjk + (total - cjk).div_ceil(4));
        }

        /// Tallies add up: the estimate of pieces put together is the estimate of their tallies'
        /// sum (the rounding happens once, on the whole).
        #[test]
        fn the_tally_of_pieces_estimates_the_text_they_make(
            pieces in proptest::collection::vec("\\PC{0,12}|[ -~]{0,12}|[a-z你好😀]{0,6}", 0..6),
        ) {
            let whole: String = pieces.concat();
            let summed: TokenTally = pieces.iter().map(|p| TokenTally::of(p)).sum();
            proptest::prop_assert_eq!(summed, TokenTally::of(&whole));
            proptest::prop_assert_eq!(summed.tokens(), estimate_tokens(&whole));
        }
    }

    #[test]
    fn two_players_with_seats_pick_the_primary_seat() {
        let characters = vec![
            json!({"id": "a", "type": "player"}),
            json!({"id": "b", "type": "player"}),
        ];
        let seats = vec![
            json!({"id": "s1", "characterId": "a"}),
            json!({"id": "s2", "characterId": "b", "primary": true}),
        ];
        assert_eq!(
            acting_character_of(&[], &characters, &seats).and_then(|c| c.get("id")),
            Some(&json!("b"))
        );
        assert_eq!(
            acting_character_of(&[], &characters, &[]),
            None,
            "never the first player"
        );
    }
}
