//! Reading a value that is either a name or a small object (a segment's `position`: a name or
//! `{depth}`; its `audience`: a name or `{contract}`), told apart by the value's own shape.
//!
//! serde's untagged enums copy the value first to try each variant in turn; every segment of
//! every preview is read through these, so they read the shape once instead.

use serde::Deserialize;
use serde::de::{self, IntoDeserializer, MapAccess, Visitor};
use std::fmt;
use std::marker::PhantomData;

/// Reads a name as `N` (then `named`) or an object as `O` (then `object`); anything else is an
/// error saying `expecting`.
pub(crate) fn name_or_object<'de, D, N, O, T>(
    deserializer: D,
    expecting: &'static str,
    named: fn(N) -> T,
    object: fn(O) -> T,
) -> Result<T, D::Error>
where
    D: de::Deserializer<'de>,
    N: Deserialize<'de>,
    O: Deserialize<'de>,
{
    struct Shape<N, O, T> {
        expecting: &'static str,
        named: fn(N) -> T,
        object: fn(O) -> T,
        read: PhantomData<(N, O)>,
    }
    impl<'de, N: Deserialize<'de>, O: Deserialize<'de>, T> Visitor<'de> for Shape<N, O, T> {
        type Value = T;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str(self.expecting)
        }
        fn visit_str<E: de::Error>(self, name: &str) -> Result<T, E> {
            N::deserialize(name.into_deserializer()).map(self.named)
        }
        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
            O::deserialize(de::value::MapAccessDeserializer::new(map)).map(self.object)
        }
    }
    deserializer.deserialize_any(Shape {
        expecting,
        named,
        object,
        read: PhantomData,
    })
}
