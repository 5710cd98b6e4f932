//! The sandbox's `Intl`, backed by ICU4X with its compiled CLDR data: text segmentation
//! (`Intl.Segmenter`, graphemes, words (dictionaries for Chinese and Japanese), sentences),
//! collation (`Intl.Collator`, `String.prototype.localeCompare`), decimal formatting
//! (`Intl.NumberFormat`), plural rules (`Intl.PluralRules`) and date formatting
//! (`Intl.DateTimeFormat`, in UTC).
//!
//! QuickJS has no `Intl`. The JavaScript side (`js/web/intl.js`, served as `covel:intl`) is
//! loaded into a runtime on the plugin's first touch of the global, and only it imports this
//! module's host functions (`covel:intl-host`): a plugin that never uses `Intl` pays nothing.
//! The compiled data lives in the binary; formatters are built on first use and kept per
//! thread (a few per locale and option set, bounded), never per runtime.
//!
//! Every function is bounded by the running call: input sizes are capped and long loops stop
//! at the call's deadline ([`crate::deadline`]) with an error that says so.

use fixed_decimal::{Decimal, FloatPrecision, SignedRoundingMode, UnsignedRoundingMode};
use icu_collator::options::{CaseLevel, CollatorOptions, Strength};
use icu_collator::preferences::CollationNumericOrdering;
use icu_collator::{CollatorBorrowed, CollatorPreferences};
use icu_datetime::fieldsets::enums::{
    CompositeDateTimeFieldSet, DateAndTimeFieldSet, DateFieldSet, TimeFieldSet,
};
use icu_datetime::fieldsets::{T, YMD, YMDE, YMDET, YMDT};
use icu_datetime::input::{Date, DateTime, Time};
use icu_datetime::options::Length;
use icu_datetime::{DateTimeFormatter, DateTimeFormatterPreferences};
use icu_decimal::options::{DecimalFormatterOptions, GroupingStrategy};
use icu_decimal::{DecimalFormatter, DecimalFormatterPreferences};
use icu_locale_core::Locale;
use icu_plurals::{PluralCategory, PluralRuleType, PluralRules, PluralRulesOptions};
use icu_segmenter::options::{SentenceBreakInvariantOptions, WordBreakInvariantOptions};
use icu_segmenter::{GraphemeClusterSegmenter, SentenceSegmenter, WordSegmenter};
use rquickjs::module::{Declarations, Exports, ModuleDef};
use rquickjs::{Ctx, Exception, Function, Result, TypedArray};
use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::Hash;

/// The engine name of the host functions' module.
pub const INTL_HOST: &str = "covel:intl-host";

/// The most UTF-16 code units one segmentation takes (32 Mi: 64 MB of text). A longer text
/// could not be held by a runtime anyway (its memory limit is 64 MB by default).
pub const MAX_SEGMENTED_UNITS: usize = 32 * 1024 * 1024;
/// How many boundaries are found between two looks at the call's deadline.
const DEADLINE_STRIDE: usize = 4096;
/// The most formatters of one kind a thread keeps (a plugin asking for more starts over).
const CACHE_LIMIT: usize = 32;
/// The locale of `Intl` when a plugin names none (what Node answers on an English system).
pub const DEFAULT_LOCALE: &str = "en-US";

/// Why an `Intl` call failed, as the `RangeError` or `TypeError` plugin code sees.
#[derive(Debug, thiserror::Error)]
pub enum IntlError {
    #[error("Incorrect locale information provided: {0:?}")]
    Locale(String),
    #[error(
        "{what}: the text has {units} UTF-16 code units, more than the {MAX_SEGMENTED_UNITS} one call may segment"
    )]
    TooLong { what: &'static str, units: usize },
    #[error("{0}: the call's time limit ran out while it was working")]
    Deadline(&'static str),
    #[error("{what}: no locale data for {locale:?} ({why})")]
    Data {
        what: &'static str,
        locale: String,
        why: String,
    },
    #[error("{0}")]
    Range(String),
}

impl IntlError {
    fn throw(self, ctx: &Ctx<'_>) -> rquickjs::Error {
        match self {
            IntlError::Deadline(_) => Exception::throw_message(ctx, &self.to_string()),
            _ => Exception::throw_range(ctx, &self.to_string()),
        }
    }
}

/// A locale tag parsed as BCP 47 (`""` is the default locale).
pub fn parse_locale(tag: &str) -> std::result::Result<Locale, IntlError> {
    let tag = if tag.is_empty() { DEFAULT_LOCALE } else { tag };
    Locale::try_from_str(tag).map_err(|_| IntlError::Locale(tag.to_string()))
}

/// The canonical form of a locale tag (`zh-hans-cn` → `zh-Hans-CN`).
pub fn canonical_locale(tag: &str) -> std::result::Result<String, IntlError> {
    parse_locale(tag).map(|l| l.to_string())
}

/// What an `Intl.Segmenter` splits text into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Granularity {
    Grapheme,
    Word,
    Sentence,
}

impl Granularity {
    pub fn parse(name: &str) -> Option<Granularity> {
        match name {
            "grapheme" => Some(Granularity::Grapheme),
            "word" => Some(Granularity::Word),
            "sentence" => Some(Granularity::Sentence),
            _ => None,
        }
    }
}

/// The segments of a text: boundaries in UTF-16 code units (from 0 to the text's length) and,
/// for words, whether the segment ending at each boundary after the first is word-like.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Segmentation {
    pub boundaries: Vec<u32>,
    pub word_like: Vec<u8>,
}

/// Segments `text` (UTF-16). `expired` is asked every few thousand boundaries.
pub fn segment(
    granularity: Granularity,
    text: &[u16],
    expired: &dyn Fn() -> bool,
) -> std::result::Result<Segmentation, IntlError> {
    const WHAT: &str = "Intl.Segmenter";
    if text.len() > MAX_SEGMENTED_UNITS {
        return Err(IntlError::TooLong {
            what: WHAT,
            units: text.len(),
        });
    }
    let mut out = Segmentation::default();
    let mut push = |at: usize, word_like: Option<bool>| -> std::result::Result<(), IntlError> {
        if out.boundaries.len() % DEADLINE_STRIDE == DEADLINE_STRIDE - 1 && expired() {
            return Err(IntlError::Deadline(WHAT));
        }
        // `at` is at most MAX_SEGMENTED_UNITS, which fits in u32.
        out.boundaries.push(u32::try_from(at).unwrap_or(u32::MAX));
        if let Some(w) = word_like {
            out.word_like.push(u8::from(w));
        }
        Ok(())
    };
    match granularity {
        Granularity::Grapheme => {
            for at in GraphemeClusterSegmenter::new().segment_utf16(text) {
                push(at, None)?;
            }
        }
        Granularity::Sentence => {
            let segmenter = SentenceSegmenter::new(SentenceBreakInvariantOptions::default());
            for at in segmenter.segment_utf16(text) {
                push(at, None)?;
            }
        }
        Granularity::Word => {
            let segmenter = WordSegmenter::new_auto(WordBreakInvariantOptions::default());
            let mut breaks = segmenter.segment_utf16(text);
            let mut first = true;
            while let Some(at) = breaks.next() {
                // The first boundary (0) ends no segment.
                let word_like = (!first).then(|| breaks.is_word_like());
                first = false;
                push(at, word_like)?;
            }
        }
    }
    // An empty text has the one boundary 0; `segment` answers it, and so no segments.
    if out.boundaries.is_empty() {
        out.boundaries.push(0);
    }
    Ok(out)
}

/// How finely an `Intl.Collator` tells strings apart (ECMA-402's `sensitivity`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Sensitivity {
    Base,
    Accent,
    Case,
    Variant,
}

impl Sensitivity {
    pub fn parse(name: &str) -> Option<Sensitivity> {
        match name {
            "base" => Some(Sensitivity::Base),
            "accent" => Some(Sensitivity::Accent),
            "case" => Some(Sensitivity::Case),
            "variant" => Some(Sensitivity::Variant),
            _ => None,
        }
    }
}

thread_local! {
    static COLLATORS: RefCell<HashMap<(String, Sensitivity, bool), CollatorBorrowed<'static>>> =
        RefCell::new(HashMap::new());
    static DECIMALS: RefCell<HashMap<(String, bool), DecimalFormatter>> = RefCell::new(HashMap::new());
    static PLURALS: RefCell<HashMap<(String, bool), PluralRules>> = RefCell::new(HashMap::new());
    static DATES: RefCell<HashMap<(String, u8, u8), DateTimeFormatter<CompositeDateTimeFieldSet>>> =
        RefCell::new(HashMap::new());
}

/// The thread's formatter for `key`, made by `make` the first time.
fn cached<K: Hash + Eq + Clone, V, R>(
    cache: &'static std::thread::LocalKey<RefCell<HashMap<K, V>>>,
    key: K,
    make: impl FnOnce() -> std::result::Result<V, IntlError>,
    with: impl FnOnce(&V) -> R,
) -> std::result::Result<R, IntlError> {
    cache.with(|cache| {
        let mut cache = cache.borrow_mut();
        if !cache.contains_key(&key) {
            if cache.len() >= CACHE_LIMIT {
                cache.clear();
            }
            cache.insert(key.clone(), make()?);
        }
        Ok(with(&cache[&key]))
    })
}

/// Compares two strings as `new Intl.Collator(locale, {sensitivity, numeric})` does.
pub fn compare(
    locale: &str,
    sensitivity: Sensitivity,
    numeric: bool,
    left: &str,
    right: &str,
) -> std::result::Result<std::cmp::Ordering, IntlError> {
    let key = (locale.to_string(), sensitivity, numeric);
    cached(
        &COLLATORS,
        key,
        || {
            let parsed = parse_locale(locale)?;
            let mut prefs = CollatorPreferences::from(&parsed);
            if numeric {
                prefs.numeric_ordering = Some(CollationNumericOrdering::True);
            }
            let mut options = CollatorOptions::default();
            let (strength, case_level) = match sensitivity {
                Sensitivity::Base => (Strength::Primary, CaseLevel::Off),
                Sensitivity::Accent => (Strength::Secondary, CaseLevel::Off),
                Sensitivity::Case => (Strength::Primary, CaseLevel::On),
                Sensitivity::Variant => (Strength::Tertiary, CaseLevel::Off),
            };
            options.strength = Some(strength);
            options.case_level = Some(case_level);
            icu_collator::Collator::try_new(prefs, options).map_err(|e| IntlError::Data {
                what: "Intl.Collator",
                locale: locale.to_string(),
                why: e.to_string(),
            })
        },
        |collator| collator.compare(left, right),
    )
}

/// A number's plural category (`"one"`, `"few"`, `"other"`, …) for a locale.
pub fn plural_category(
    locale: &str,
    ordinal: bool,
    number: f64,
) -> std::result::Result<&'static str, IntlError> {
    let decimal = finite_decimal(number)?;
    cached(
        &PLURALS,
        (locale.to_string(), ordinal),
        || {
            let parsed = parse_locale(locale)?;
            let mut options = PluralRulesOptions::default();
            options.rule_type = Some(if ordinal {
                PluralRuleType::Ordinal
            } else {
                PluralRuleType::Cardinal
            });
            PluralRules::try_new((&parsed).into(), options).map_err(|e| IntlError::Data {
                what: "Intl.PluralRules",
                locale: locale.to_string(),
                why: e.to_string(),
            })
        },
        |rules| match rules.category_for(&decimal) {
            PluralCategory::Zero => "zero",
            PluralCategory::One => "one",
            PluralCategory::Two => "two",
            PluralCategory::Few => "few",
            PluralCategory::Many => "many",
            _ => "other",
        },
    )
}

fn finite_decimal(number: f64) -> std::result::Result<Decimal, IntlError> {
    Decimal::try_from_f64(number, FloatPrecision::RoundTrip)
        .map_err(|_| IntlError::Range(format!("{number} cannot be formatted as a decimal")))
}

/// How `Intl.NumberFormat` writes a number (the options the sandbox supports).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecimalStyle {
    pub min_fraction: u8,
    pub max_fraction: u8,
    pub grouping: bool,
}

/// A number written with the locale's digits, decimal separator and grouping.
pub fn format_decimal(
    locale: &str,
    number: f64,
    style: DecimalStyle,
) -> std::result::Result<String, IntlError> {
    if number.is_nan() {
        return Ok("NaN".into());
    }
    if number.is_infinite() {
        return Ok(if number > 0.0 { "∞" } else { "-∞" }.into());
    }
    if style.min_fraction > 100
        || style.max_fraction > 100
        || style.min_fraction > style.max_fraction
    {
        return Err(IntlError::Range(format!(
            "Intl.NumberFormat: fraction digits {}..{} are out of range (0 to 100, minimum first)",
            style.min_fraction, style.max_fraction
        )));
    }
    let mut decimal = finite_decimal(number)?;
    decimal.round_with_mode(
        -i16::from(style.max_fraction),
        SignedRoundingMode::Unsigned(UnsignedRoundingMode::HalfExpand),
    );
    decimal.absolute.pad_end(-i16::from(style.min_fraction));
    cached(
        &DECIMALS,
        (locale.to_string(), style.grouping),
        || {
            let parsed = parse_locale(locale)?;
            let mut options = DecimalFormatterOptions::default();
            options.grouping_strategy = Some(if style.grouping {
                GroupingStrategy::Auto
            } else {
                GroupingStrategy::Never
            });
            DecimalFormatter::try_new(DecimalFormatterPreferences::from(&parsed), options).map_err(
                |e| IntlError::Data {
                    what: "Intl.NumberFormat",
                    locale: locale.to_string(),
                    why: e.to_string(),
                },
            )
        },
        |formatter| formatter.format_to_string(&decimal),
    )
}

/// `dateStyle` / `timeStyle` of `Intl.DateTimeFormat`: 0 none, 1 short, 2 medium, 3 long,
/// 4 full.
pub type StyleLevel = u8;

/// The UTC fields of an instant, as `Date.prototype.getUTC…` answer them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UtcFields {
    pub year: i32,
    pub month: u8,
    pub day: u8,
    pub hour: u8,
    pub minute: u8,
    pub second: u8,
}

fn length(level: StyleLevel) -> Length {
    match level {
        1 => Length::Short,
        2 => Length::Medium,
        _ => Length::Long,
    }
}

/// The field set for a pair of styles (none of either is a numeric date, as ECMA-402 defaults).
fn field_set(date: StyleLevel, time: StyleLevel) -> CompositeDateTimeFieldSet {
    let date_set = |level: StyleLevel| match level {
        4 => DateFieldSet::YMDE(YMDE::for_length(Length::Long)),
        level => DateFieldSet::YMD(YMD::for_length(length(level))),
    };
    match (date, time) {
        (0, 0) => CompositeDateTimeFieldSet::Date(DateFieldSet::YMD(YMD::short())),
        (date, 0) => CompositeDateTimeFieldSet::Date(date_set(date)),
        (0, time) => CompositeDateTimeFieldSet::Time(TimeFieldSet::T(T::for_length(length(time)))),
        (4, time) => CompositeDateTimeFieldSet::DateTime(DateAndTimeFieldSet::YMDET(
            YMDET::for_length(length(time.max(3))),
        )),
        (date, _) => CompositeDateTimeFieldSet::DateTime(DateAndTimeFieldSet::YMDT(
            YMDT::for_length(length(date)),
        )),
    }
}

/// An instant written in a locale's calendar and patterns (in UTC).
pub fn format_date(
    locale: &str,
    date_style: StyleLevel,
    time_style: StyleLevel,
    at: UtcFields,
) -> std::result::Result<String, IntlError> {
    let invalid = |_| IntlError::Range("Invalid time value".into());
    let input = DateTime {
        date: Date::try_new_iso(at.year, at.month, at.day).map_err(invalid)?,
        time: Time::try_new(at.hour, at.minute, at.second, 0).map_err(invalid)?,
    };
    cached(
        &DATES,
        (locale.to_string(), date_style, time_style),
        || {
            let parsed = parse_locale(locale)?;
            DateTimeFormatter::try_new(
                DateTimeFormatterPreferences::from(&parsed),
                field_set(date_style, time_style),
            )
            .map_err(|e| IntlError::Data {
                what: "Intl.DateTimeFormat",
                locale: locale.to_string(),
                why: e.to_string(),
            })
        },
        |formatter| formatter.format(&input).to_string(),
    )
}

/// `covel:intl-host`: the functions `covel:intl` calls. Only that module may import it.
pub struct IntlHostModule;

impl ModuleDef for IntlHostModule {
    fn declare<'js>(decl: &Declarations<'js>) -> Result<()> {
        for name in [
            "canonicalLocale",
            "segment",
            "compare",
            "pluralCategory",
            "formatDecimal",
            "formatDate",
        ] {
            decl.declare(name)?;
        }
        Ok(())
    }

    fn evaluate<'js>(ctx: &Ctx<'js>, exports: &Exports<'js>) -> Result<()> {
        exports.export(
            "canonicalLocale",
            Function::new(ctx.clone(), |ctx: Ctx<'js>, tag: String| {
                canonical_locale(&tag).map_err(|e| e.throw(&ctx))
            })?,
        )?;
        exports.export(
            "segment",
            Function::new(
                ctx.clone(),
                |ctx: Ctx<'js>,
                 granularity: String,
                 text: rquickjs::String<'js>|
                 -> Result<rquickjs::Array<'js>> {
                    let granularity = Granularity::parse(&granularity).ok_or_else(|| {
                        Exception::throw_range(
                            &ctx,
                            "granularity must be grapheme, word or sentence",
                        )
                    })?;
                    let units = utf16_of(&ctx, &text)?;
                    let found = segment(granularity, &units, &crate::deadline::current_expired)
                        .map_err(|e| e.throw(&ctx))?;
                    crate::intrinsics::add(&ctx, crate::intrinsics::Deferred::TypedArrays)?;
                    let answer = rquickjs::Array::new(ctx.clone())?;
                    answer.set(0, TypedArray::<u32>::new(ctx.clone(), found.boundaries)?)?;
                    if granularity == Granularity::Word {
                        answer.set(1, TypedArray::<u8>::new(ctx.clone(), found.word_like)?)?;
                    }
                    Ok(answer)
                },
            )?,
        )?;
        exports.export(
            "compare",
            Function::new(
                ctx.clone(),
                |ctx: Ctx<'js>,
                 locale: String,
                 sensitivity: String,
                 numeric: bool,
                 left: String,
                 right: String|
                 -> Result<i32> {
                    let sensitivity = Sensitivity::parse(&sensitivity).ok_or_else(|| {
                        Exception::throw_range(
                            &ctx,
                            "sensitivity must be base, accent, case or variant",
                        )
                    })?;
                    let order = compare(&locale, sensitivity, numeric, &left, &right)
                        .map_err(|e| e.throw(&ctx))?;
                    Ok(order as i32)
                },
            )?,
        )?;
        exports.export(
            "pluralCategory",
            Function::new(
                ctx.clone(),
                |ctx: Ctx<'js>, locale: String, ordinal: bool, number: f64| {
                    plural_category(&locale, ordinal, number).map_err(|e| e.throw(&ctx))
                },
            )?,
        )?;
        exports.export(
            "formatDecimal",
            Function::new(
                ctx.clone(),
                |ctx: Ctx<'js>,
                 locale: String,
                 number: f64,
                 min_fraction: u8,
                 max_fraction: u8,
                 grouping: bool| {
                    let style = DecimalStyle {
                        min_fraction,
                        max_fraction,
                        grouping,
                    };
                    format_decimal(&locale, number, style).map_err(|e| e.throw(&ctx))
                },
            )?,
        )?;
        exports.export(
            "formatDate",
            Function::new(
                ctx.clone(),
                |ctx: Ctx<'js>,
                 locale: String,
                 date_style: u8,
                 time_style: u8,
                 fields: Vec<i32>|
                 -> Result<String> {
                    let field = |i: usize| fields.get(i).copied().unwrap_or(0);
                    let small = |i: usize| u8::try_from(field(i)).unwrap_or(u8::MAX);
                    let at = UtcFields {
                        year: field(0),
                        month: small(1),
                        day: small(2),
                        hour: small(3),
                        minute: small(4),
                        second: small(5),
                    };
                    format_date(&locale, date_style, time_style, at).map_err(|e| e.throw(&ctx))
                },
            )?,
        )?;
        Ok(())
    }
}

/// A JavaScript string's UTF-16 code units, refusing a text over the segmentation limit before
/// copying it.
fn utf16_of(ctx: &Ctx<'_>, text: &rquickjs::String<'_>) -> Result<Vec<u16>> {
    let text = text.to_string()?;
    // A UTF-8 byte is at most one UTF-16 unit: only a text over the limit in bytes needs counting.
    if text.len() > MAX_SEGMENTED_UNITS {
        let units = text.encode_utf16().count();
        if units > MAX_SEGMENTED_UNITS {
            return Err(IntlError::TooLong {
                what: "Intl.Segmenter",
                units,
            }
            .throw(ctx));
        }
    }
    Ok(text.encode_utf16().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<(String, bool)> {
        let units: Vec<u16> = text.encode_utf16().collect();
        let found = segment(Granularity::Word, &units, &|| false).expect("segments");
        found
            .boundaries
            .windows(2)
            .zip(&found.word_like)
            .map(|(w, &like)| {
                (
                    String::from_utf16_lossy(&units[w[0] as usize..w[1] as usize]),
                    like == 1,
                )
            })
            .collect()
    }

    #[test]
    fn words_are_found_in_english_and_in_chinese_with_its_dictionary() {
        let english: Vec<(String, bool)> = words("Hello, world!");
        assert_eq!(
            english,
            [
                ("Hello".into(), true),
                (",".into(), false),
                (" ".into(), false),
                ("world".into(), true),
                ("!".into(), false)
            ]
        );
        let chinese: Vec<String> = words("我喜欢吃苹果").into_iter().map(|(w, _)| w).collect();
        assert_eq!(chinese, ["我", "喜欢", "吃", "苹果"]);
    }

    #[test]
    fn graphemes_keep_emoji_sequences_together() {
        let units: Vec<u16> = "e\u{301}👍🏽".encode_utf16().collect();
        let found = segment(Granularity::Grapheme, &units, &|| false).expect("segments");
        assert_eq!(found.boundaries, [0, 2, 6]);
    }

    #[test]
    fn a_passed_deadline_stops_segmentation_with_an_error() {
        let units: Vec<u16> = "a ".repeat(100_000).encode_utf16().collect();
        let err = segment(Granularity::Word, &units, &|| true).expect_err("stops");
        assert!(err.to_string().contains("time limit"), "{err}");
    }

    #[test]
    fn collation_follows_the_locale_and_the_options() {
        use std::cmp::Ordering::*;
        assert_eq!(
            compare("en", Sensitivity::Variant, false, "a", "B").ok(),
            Some(Less)
        );
        assert_eq!(
            compare("en", Sensitivity::Base, false, "a", "A").ok(),
            Some(Equal)
        );
        assert_eq!(
            compare("en", Sensitivity::Variant, true, "item 2", "item 10").ok(),
            Some(Less)
        );
        assert_eq!(
            compare("en", Sensitivity::Variant, false, "item 2", "item 10").ok(),
            Some(Greater)
        );
        // Pinyin order: 阿 (ā) before 爸 (bà).
        assert_eq!(
            compare("zh-CN", Sensitivity::Variant, false, "阿", "爸").ok(),
            Some(Less)
        );
    }

    #[test]
    fn plurals_numbers_and_dates_follow_the_locale() {
        assert_eq!(plural_category("en-US", false, 1.0).ok(), Some("one"));
        assert_eq!(plural_category("en-US", false, 2.0).ok(), Some("other"));
        assert_eq!(plural_category("en-US", true, 2.0).ok(), Some("two"));
        assert_eq!(plural_category("zh-CN", false, 1.0).ok(), Some("other"));
        let style = DecimalStyle {
            min_fraction: 0,
            max_fraction: 3,
            grouping: true,
        };
        assert_eq!(
            format_decimal("en-US", 1234567.891, style).ok().as_deref(),
            Some("1,234,567.891")
        );
        assert_eq!(
            format_decimal("de", 1234.5, style).ok().as_deref(),
            Some("1.234,5")
        );
        let at = UtcFields {
            year: 2026,
            month: 12,
            day: 7,
            hour: 4,
            minute: 5,
            second: 6,
        };
        assert_eq!(
            format_date("en-US", 3, 0, at).ok().as_deref(),
            Some("December 7, 2026")
        );
        assert_eq!(
            format_date("zh-CN", 3, 0, at).ok().as_deref(),
            Some("2026年12月7日")
        );
        assert!(parse_locale("not a locale!").is_err());
    }
}
