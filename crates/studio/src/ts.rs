//! How Rust values the window receives are described to TypeScript, where specta's own export
//! does not fit: numbers (64-bit integers as `number`) and any JSON value. The domain's types
//! that cross to the window name these on their fields; the wire uses them too, and neither
//! imports the other for them.

use specta::Type;

/// The TypeScript shape of any JSON value (`crate::wire::common::JsonValue`, a `serde_json::Value`
/// field): a recursive JSON type named `JsonValue`.
pub use shape::JsonValue as JsonShape;

mod shape {
    use serde::Serialize;
    use specta::Type;
    use std::collections::BTreeMap;

    /// Any JSON value (slot values, the world snapshot, request bodies, handler outputs).
    #[derive(Serialize, Type)]
    #[serde(untagged)]
    #[allow(dead_code)] // never built: it only describes `serde_json::Value` to specta
    pub enum JsonValue {
        Null,
        Bool(bool),
        Number(#[specta(type = super::Number)] f64),
        String(String),
        Array(Vec<JsonValue>),
        Object(BTreeMap<String, JsonValue>),
    }
}

/// A count, token number, index or duration: `u64`, `i64`, `usize` or `f64` in Rust, exported
/// as TypeScript's `number` (`#[specta(type = Number)]` on the field). specta refuses 64-bit
/// integers by default (they may exceed 2^53; counts here never do) and exports `f64` as
/// `number | null` (for NaN, which no view produces).
pub struct Number;

impl Type for Number {
    fn definition(types: &mut specta::Types) -> specta::datatype::DataType {
        <i32 as Type>::definition(types)
    }
}
