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
    // Most prompt text is ASCII: one unit per byte and no CJK, counted without decoding.
    if text.is_ascii() {
        return (text.len() as u64).div_ceil(4);
    }
    let (mut cjk, mut total) = (0u64, 0u64);
    for c in text.chars() {
        total += c.len_utf16() as u64;
        if u16::try_from(u32::from(c)).is_ok_and(is_cjk_unit) {
            cjk += 1;
        }
    }
    cjk + (total - cjk).div_ceil(4)
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
