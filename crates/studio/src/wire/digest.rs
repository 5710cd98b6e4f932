//! Digests of what crosses the wire, for [`super::WireState`] to tell which parts of a snapshot
//! changed since the UI last received them. A value is fed to XXH3-128 the way serde walks it
//! (a tag per item, each string with its length, each sequence and map closed), never as JSON:
//! a preview at 500 plugins is megabytes of text, and escaping it to JSON to hash it cost more
//! than the hashing. The encoding is prefix-free, so two values whose JSON differs never feed
//! the same bytes; a value may digest differently from one with the same JSON (`Some(x)` and
//! `x`), which only resends a part. The seed is drawn once per process, so what a plugin writes
//! cannot aim at another part's digest.

use serde::Serialize;
use serde::ser;
use xxhash_rust::xxh3::Xxh3;

/// A part's digest.
pub type Digest = u128;

/// The digest of a value as serde serializes it.
pub fn of<T: Serialize + ?Sized>(value: &T) -> Digest {
    static SEED: std::sync::LazyLock<u64> = std::sync::LazyLock::new(|| {
        use std::hash::BuildHasher;
        std::collections::hash_map::RandomState::new().hash_one("covel wire seed")
    });
    let mut feed = Feed {
        hasher: Xxh3::with_seed(*SEED),
        pending: Vec::with_capacity(CHUNK),
    };
    // Feeding a hasher cannot fail; a value serde refuses (none of the wire's types) digests
    // as far as it got.
    let _ = value.serialize(&mut feed);
    feed.flush();
    feed.hasher.digest128()
}

/// Tags, lengths and short strings are gathered into chunks of this size before they reach the
/// hasher, whose every call has a fixed cost.
const CHUNK: usize = 4096;

/// Tags that open or close an item, so that the fed bytes decode back to one call sequence.
mod tag {
    pub const NULL: u8 = 0;
    pub const FALSE: u8 = 1;
    pub const TRUE: u8 = 2;
    pub const INT: u8 = 3;
    pub const UINT: u8 = 4;
    pub const FLOAT: u8 = 5;
    pub const STR: u8 = 6;
    pub const BYTES: u8 = 7;
    pub const SOME: u8 = 8;
    pub const SEQ: u8 = 9;
    pub const MAP: u8 = 10;
    pub const VARIANT: u8 = 11;
    pub const END: u8 = 12;
    /// An `f32`, apart from `f64`: widened to `f64` it would feed the same bytes as a `f64`
    /// whose JSON is written with more digits.
    pub const FLOAT32: u8 = 13;
}

struct Feed {
    hasher: Xxh3,
    pending: Vec<u8>,
}

impl Feed {
    fn bytes(&mut self, bytes: &[u8]) {
        if self.pending.len() + bytes.len() > CHUNK {
            self.flush();
        }
        if bytes.len() >= CHUNK {
            self.hasher.update(bytes);
        } else {
            self.pending.extend_from_slice(bytes);
        }
    }

    fn flush(&mut self) {
        self.hasher.update(&self.pending);
        self.pending.clear();
    }

    fn tag(&mut self, tag: u8) -> &mut Self {
        self.bytes(&[tag]);
        self
    }

    fn str(&mut self, text: &str) {
        self.tag(tag::STR);
        self.bytes(&(text.len() as u64).to_le_bytes());
        self.bytes(text.as_bytes());
    }

    /// Opens an enum variant that holds a value, a sequence or a map: its name comes first.
    fn variant(&mut self, variant: &str) -> &mut Self {
        self.tag(tag::VARIANT);
        self.str(variant);
        self
    }
}

/// Feeding never fails; serde's traits still want an error type.
#[derive(Debug)]
struct Never;

impl std::fmt::Display for Never {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a digest cannot fail")
    }
}

impl std::error::Error for Never {}

impl ser::Error for Never {
    fn custom<T: std::fmt::Display>(_: T) -> Self {
        Never
    }
}

macro_rules! numbers {
    ($($method:ident: $ty:ty => $tag:expr, $wide:ty;)*) => {$(
        fn $method(self, value: $ty) -> Result<(), Never> {
            self.tag($tag);
            self.bytes(&<$wide>::from(value).to_le_bytes());
            Ok(())
        }
    )*};
}

impl<'a> ser::Serializer for &'a mut Feed {
    type Ok = ();
    type Error = Never;
    type SerializeSeq = &'a mut Feed;
    type SerializeTuple = &'a mut Feed;
    type SerializeTupleStruct = &'a mut Feed;
    type SerializeTupleVariant = &'a mut Feed;
    type SerializeMap = &'a mut Feed;
    type SerializeStruct = &'a mut Feed;
    type SerializeStructVariant = &'a mut Feed;

    numbers! {
        serialize_i8: i8 => tag::INT, i128;
        serialize_i16: i16 => tag::INT, i128;
        serialize_i32: i32 => tag::INT, i128;
        serialize_i64: i64 => tag::INT, i128;
        serialize_i128: i128 => tag::INT, i128;
        serialize_u8: u8 => tag::UINT, u128;
        serialize_u16: u16 => tag::UINT, u128;
        serialize_u32: u32 => tag::UINT, u128;
        serialize_u64: u64 => tag::UINT, u128;
        serialize_u128: u128 => tag::UINT, u128;
        serialize_f32: f32 => tag::FLOAT32, f64;
        serialize_f64: f64 => tag::FLOAT, f64;
    }

    fn serialize_bool(self, value: bool) -> Result<(), Never> {
        self.tag(if value { tag::TRUE } else { tag::FALSE });
        Ok(())
    }

    fn serialize_char(self, value: char) -> Result<(), Never> {
        self.str(value.encode_utf8(&mut [0; 4]));
        Ok(())
    }

    fn serialize_str(self, value: &str) -> Result<(), Never> {
        self.str(value);
        Ok(())
    }

    fn serialize_bytes(self, value: &[u8]) -> Result<(), Never> {
        self.tag(tag::BYTES);
        self.bytes(&(value.len() as u64).to_le_bytes());
        self.bytes(value);
        Ok(())
    }

    fn serialize_none(self) -> Result<(), Never> {
        self.tag(tag::NULL);
        Ok(())
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), Never> {
        value.serialize(self.tag(tag::SOME))
    }

    fn serialize_unit(self) -> Result<(), Never> {
        self.tag(tag::NULL);
        Ok(())
    }

    fn serialize_unit_struct(self, _: &'static str) -> Result<(), Never> {
        self.tag(tag::NULL);
        Ok(())
    }

    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
    ) -> Result<(), Never> {
        self.str(variant);
        Ok(())
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<(), Never> {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), Never> {
        value.serialize(self.variant(variant))
    }

    fn serialize_seq(self, _: Option<usize>) -> Result<Self, Never> {
        Ok(self.tag(tag::SEQ))
    }

    fn serialize_tuple(self, _: usize) -> Result<Self, Never> {
        Ok(self.tag(tag::SEQ))
    }

    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Self, Never> {
        Ok(self.tag(tag::SEQ))
    }

    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Self, Never> {
        Ok(self.variant(variant).tag(tag::SEQ))
    }

    fn serialize_map(self, _: Option<usize>) -> Result<Self, Never> {
        Ok(self.tag(tag::MAP))
    }

    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self, Never> {
        Ok(self.tag(tag::MAP))
    }

    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Self, Never> {
        Ok(self.variant(variant).tag(tag::MAP))
    }
}

/// Sequences, tuples and their variants: items in order, then the end tag.
macro_rules! sequence {
    ($($trait:ident :: $method:ident),*) => {$(
        impl ser::$trait for &mut Feed {
            type Ok = ();
            type Error = Never;
            fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Never> {
                value.serialize(&mut **self)
            }
            fn end(self) -> Result<(), Never> {
                self.tag(tag::END);
                Ok(())
            }
        }
    )*};
}
sequence!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field
);

impl ser::SerializeMap for &mut Feed {
    type Ok = ();
    type Error = Never;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Never> {
        key.serialize(&mut **self)
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Never> {
        value.serialize(&mut **self)
    }
    fn end(self) -> Result<(), Never> {
        self.tag(tag::END);
        Ok(())
    }
}

/// Structs and struct variants: each field's name and value, then the end tag (a skipped field
/// feeds nothing, as it writes nothing to JSON).
macro_rules! fields {
    ($($trait:ident),*) => {$(
        impl ser::$trait for &mut Feed {
            type Ok = ();
            type Error = Never;
            fn serialize_field<T: Serialize + ?Sized>(
                &mut self,
                key: &'static str,
                value: &T,
            ) -> Result<(), Never> {
                self.str(key);
                value.serialize(&mut **self)
            }
            fn end(self) -> Result<(), Never> {
                self.tag(tag::END);
                Ok(())
            }
        }
    )*};
}
fields!(SerializeStruct, SerializeStructVariant);

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::{Value, json};

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            (-1e6f64..1e6).prop_map(|n| json!(n)),
            "[ab\"\\\\\u{6}\u{c}]{0,4}".prop_map(Value::String),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::vec(("[ab]{0,2}", inner), 0..4)
                    .prop_map(|entries| Value::Object(entries.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn values_with_different_json_never_share_a_digest(a in json_value(), b in json_value()) {
            let same_json = serde_json::to_string(&a).ok() == serde_json::to_string(&b).ok();
            prop_assert_eq!(of(&a) == of(&b), same_json);
        }
    }

    #[test]
    fn strings_cut_differently_or_nested_differently_digest_apart() {
        assert_ne!(of(&json!(["ab", "c"])), of(&json!(["a", "bc"])));
        assert_ne!(of(&json!([["a"], "b"])), of(&json!([["a", "b"]])));
        assert_ne!(
            of(&json!({"a": "", "b": ""})),
            of(&json!({"a": "b", "": ""}))
        );
        // A string holding a tag's byte cannot pass for two strings: each string has its length.
        assert_ne!(of(&json!(["a\u{6}b"])), of(&json!(["a", "b"])));
        assert_eq!(of(&json!({"k": [1, "x"]})), of(&json!({"k": [1, "x"]})));
    }
}
