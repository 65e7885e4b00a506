//! `X` or `[X, Y, ...]` in a scenario file, read by what the YAML holds.

use serde::Deserialize;

/// `X` or `[X, Y, ...]`.
#[derive(Debug, Clone)]
pub enum OneOrMany<T> {
    One(T),
    Many(Vec<T>),
}

/// By what the YAML holds (a list, or one value), not by trying each in turn as `#[serde(untagged)]`
/// would: an error inside the value then names the field and its line, not just "no variant matched".
impl<'de, T: Deserialize<'de>> Deserialize<'de> for OneOrMany<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
        use serde::de::{Error, IntoDeserializer, MapAccess, SeqAccess};
        struct Visitor<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<T> {
            fn one<E: Error>(d: impl serde::Deserializer<'de, Error = E>) -> Result<OneOrMany<T>, E> {
                T::deserialize(d).map(OneOrMany::One)
            }
        }
        impl<'de, T: Deserialize<'de>> serde::de::Visitor<'de> for Visitor<T> {
            type Value = OneOrMany<T>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("one value or a list of them")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                Vec::deserialize(SeqAccessDeserializer::new(seq)).map(OneOrMany::Many)
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                Self::one(MapAccessDeserializer::new(map))
            }
            fn visit_bool<E: Error>(self, v: bool) -> Result<Self::Value, E> {
                Self::one(v.into_deserializer())
            }
            fn visit_i64<E: Error>(self, v: i64) -> Result<Self::Value, E> {
                Self::one(v.into_deserializer())
            }
            fn visit_u64<E: Error>(self, v: u64) -> Result<Self::Value, E> {
                Self::one(v.into_deserializer())
            }
            fn visit_f64<E: Error>(self, v: f64) -> Result<Self::Value, E> {
                Self::one(v.into_deserializer())
            }
            fn visit_str<E: Error>(self, v: &str) -> Result<Self::Value, E> {
                Self::one(v.into_deserializer())
            }
            fn visit_unit<E: Error>(self) -> Result<Self::Value, E> {
                Self::one(().into_deserializer())
            }
        }
        d.deserialize_any(Visitor(std::marker::PhantomData))
    }
}

impl<T> OneOrMany<T> {
    pub(super) fn into_vec(self) -> Vec<T> {
        match self {
            OneOrMany::One(x) => vec![x],
            OneOrMany::Many(v) => v,
        }
    }
}
