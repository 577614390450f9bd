//! The serializer behind [`write_canonical`](super::write_canonical): serde into a
//! `Vec<u8>`, writing exactly what `serde_json`'s serializer writes with the
//! [`JsFormatter`](super::js_number::JsFormatter) (compact, `null` for non-finite
//! numbers, doubles as ECMAScript spells them, string keys, non-string scalar keys
//! quoted, `serde_json`'s raw values written as they are), but escaping strings with a
//! SIMD kernel: strings are most of what events carry, and the byte-at-a-time escape
//! loop was the largest single cost of writing them.
//!
//! A property test (`tests::writes_what_serde_json_writes`) holds it to serde_json's
//! bytes on random values, and the event tests do on every event type.

use std::fmt::{self, Display};

use serde::ser::{self, Impossible, Serialize};

use super::js_number;

/// Defines a serializer's integer methods: each writes the integer's digits with
/// `$write(out, digits)`.
macro_rules! integers {
    (|$out:ident, $text:ident| $write:expr) => {
        integers!(@each |$out, $text| $write; serialize_i8: i8, serialize_i16: i16,
            serialize_i32: i32, serialize_i64: i64, serialize_i128: i128, serialize_u8: u8,
            serialize_u16: u16, serialize_u32: u32, serialize_u64: u64, serialize_u128: u128);
    };
    (@each |$out:ident, $text:ident| $write:expr; $($method:ident: $ty:ty),*) => {
        $(
            #[inline]
            fn $method(self, v: $ty) -> Result<(), CanonError> {
                let $out = self.out;
                let mut digits = itoa::Buffer::new();
                let $text = digits.format(v).as_bytes();
                $write;
                Ok(())
            }
        )*
    };
}

/// Defines a serializer's methods for a unit variant (written as its name) and a
/// newtype struct (written as what it wraps), as serde_json writes them, keys included.
macro_rules! names_and_newtypes {
    () => {
        fn serialize_unit_variant(
            self,
            _name: &'static str,
            _index: u32,
            variant: &'static str,
        ) -> Result<(), CanonError> {
            self.serialize_str(variant)
        }

        fn serialize_newtype_struct<T: Serialize + ?Sized>(
            self,
            _name: &'static str,
            value: &T,
        ) -> Result<(), CanonError> {
            value.serialize(self)
        }
    };
}

/// Defines the methods of a serializer that refuses every compound value (and an
/// optional or enum-wrapped one) with `$error`.
macro_rules! refuse_compounds {
    ($error:expr) => {
        fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<(), CanonError> {
            Err($error)
        }

        fn serialize_newtype_variant<T: Serialize + ?Sized>(
            self,
            _: &'static str,
            _: u32,
            _: &'static str,
            _: &T,
        ) -> Result<(), CanonError> {
            Err($error)
        }

        fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, CanonError> {
            Err($error)
        }

        fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, CanonError> {
            Err($error)
        }

        fn serialize_tuple_struct(
            self,
            _: &'static str,
            _: usize,
        ) -> Result<Self::SerializeTupleStruct, CanonError> {
            Err($error)
        }

        fn serialize_tuple_variant(
            self,
            _: &'static str,
            _: u32,
            _: &'static str,
            _: usize,
        ) -> Result<Self::SerializeTupleVariant, CanonError> {
            Err($error)
        }

        fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, CanonError> {
            Err($error)
        }

        fn serialize_struct(
            self,
            _: &'static str,
            _: usize,
        ) -> Result<Self::SerializeStruct, CanonError> {
            Err($error)
        }

        fn serialize_struct_variant(
            self,
            _: &'static str,
            _: u32,
            _: &'static str,
            _: usize,
        ) -> Result<Self::SerializeStructVariant, CanonError> {
            Err($error)
        }
    };
}

/// The name serde_json's raw values serialize under: a struct of that name with one
/// field of that name, whose string value is written as it is.
const RAW_VALUE_TOKEN: &str = "$serde_json::private::RawValue";

/// Why a value cannot be written as JSON (a map key that is not a string or a scalar).
#[derive(Debug)]
pub(crate) struct CanonError(String);

impl Display for CanonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CanonError {}

impl ser::Error for CanonError {
    fn custom<T: Display>(msg: T) -> Self {
        CanonError(msg.to_string())
    }
}

fn key_must_be_a_string() -> CanonError {
    CanonError("key must be a string".to_owned())
}

/// Writes `value` into `out` as canonical JSON.
#[inline]
pub(crate) fn write<T: Serialize + ?Sized>(value: &T, out: &mut Vec<u8>) -> Result<(), CanonError> {
    value.serialize(Canon { out })
}

#[inline]
fn write_str(out: &mut Vec<u8>, s: &str) {
    json_escape_simd::escape_into(s, out);
}

fn write_f64(out: &mut Vec<u8>, v: f64) {
    if v.is_finite() {
        js_number::write_finite(out, v);
    } else {
        out.extend_from_slice(b"null");
    }
}

/// The serializer: one value into `out`.
pub(crate) struct Canon<'a> {
    out: &'a mut Vec<u8>,
}

/// A container being written: `close` ends it (`]`, `}`, or `]}` / `}}` for an enum
/// variant's). A raw value is written as the string its one field holds.
pub(crate) enum Compound<'a> {
    Plain {
        out: &'a mut Vec<u8>,
        first: bool,
        close: &'static [u8],
    },
    Raw {
        out: &'a mut Vec<u8>,
    },
}

impl<'a> Compound<'a> {
    fn open(out: &'a mut Vec<u8>, open: &[u8], close: &'static [u8]) -> Compound<'a> {
        out.extend_from_slice(open);
        Compound::Plain {
            out,
            first: true,
            close,
        }
    }

    /// Writes the separator before an element and gives the output.
    fn next(&mut self) -> &mut Vec<u8> {
        match self {
            Compound::Plain { out, first, .. } => {
                if !std::mem::replace(first, false) {
                    out.push(b',');
                }
                out
            }
            Compound::Raw { out } => out,
        }
    }

    fn close(self) {
        match self {
            Compound::Plain { out, close, .. } => out.extend_from_slice(close),
            Compound::Raw { .. } => {}
        }
    }
}

/// Starts `{"variant":` for an enum variant written as an object of one key.
fn open_variant<'a>(out: &'a mut Vec<u8>, variant: &str) -> &'a mut Vec<u8> {
    out.push(b'{');
    write_str(out, variant);
    out.push(b':');
    out
}

impl<'a> ser::Serializer for Canon<'a> {
    type Ok = ();
    type Error = CanonError;
    type SerializeSeq = Compound<'a>;
    type SerializeTuple = Compound<'a>;
    type SerializeTupleStruct = Compound<'a>;
    type SerializeTupleVariant = Compound<'a>;
    type SerializeMap = Compound<'a>;
    type SerializeStruct = Compound<'a>;
    type SerializeStructVariant = Compound<'a>;

    #[inline]
    fn serialize_bool(self, v: bool) -> Result<(), CanonError> {
        self.out
            .extend_from_slice(if v { b"true" } else { b"false" });
        Ok(())
    }

    integers!(|out, text| out.extend_from_slice(text));

    fn serialize_f32(self, v: f32) -> Result<(), CanonError> {
        // serde_json classifies the f32, then widens it for the formatter.
        write_f64(self.out, f64::from(v));
        Ok(())
    }

    fn serialize_f64(self, v: f64) -> Result<(), CanonError> {
        write_f64(self.out, v);
        Ok(())
    }

    fn serialize_char(self, v: char) -> Result<(), CanonError> {
        write_str(self.out, v.encode_utf8(&mut [0; 4]));
        Ok(())
    }

    #[inline]
    fn serialize_str(self, v: &str) -> Result<(), CanonError> {
        write_str(self.out, v);
        Ok(())
    }

    fn serialize_bytes(self, v: &[u8]) -> Result<(), CanonError> {
        let mut seq = Compound::open(self.out, b"[", b"]");
        for b in v {
            let out = seq.next();
            out.extend_from_slice(itoa::Buffer::new().format(*b).as_bytes());
        }
        seq.close();
        Ok(())
    }

    fn serialize_none(self) -> Result<(), CanonError> {
        self.serialize_unit()
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), CanonError> {
        value.serialize(self)
    }

    fn serialize_unit(self) -> Result<(), CanonError> {
        self.out.extend_from_slice(b"null");
        Ok(())
    }

    fn serialize_unit_struct(self, _name: &'static str) -> Result<(), CanonError> {
        self.serialize_unit()
    }

    names_and_newtypes!();

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), CanonError> {
        let out = open_variant(self.out, variant);
        value.serialize(Canon { out: &mut *out })?;
        out.push(b'}');
        Ok(())
    }

    #[inline]
    fn serialize_seq(self, _len: Option<usize>) -> Result<Compound<'a>, CanonError> {
        Ok(Compound::open(self.out, b"[", b"]"))
    }

    fn serialize_tuple(self, len: usize) -> Result<Compound<'a>, CanonError> {
        self.serialize_seq(Some(len))
    }

    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        len: usize,
    ) -> Result<Compound<'a>, CanonError> {
        self.serialize_seq(Some(len))
    }

    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Compound<'a>, CanonError> {
        let out = open_variant(self.out, variant);
        Ok(Compound::open(out, b"[", b"]}"))
    }

    #[inline]
    fn serialize_map(self, _len: Option<usize>) -> Result<Compound<'a>, CanonError> {
        Ok(Compound::open(self.out, b"{", b"}"))
    }

    fn serialize_struct(self, name: &'static str, len: usize) -> Result<Compound<'a>, CanonError> {
        if name == RAW_VALUE_TOKEN {
            return Ok(Compound::Raw { out: self.out });
        }
        self.serialize_map(Some(len))
    }

    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Compound<'a>, CanonError> {
        let out = open_variant(self.out, variant);
        Ok(Compound::open(out, b"{", b"}}"))
    }
}

impl ser::SerializeSeq for Compound<'_> {
    type Ok = ();
    type Error = CanonError;

    #[inline]
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), CanonError> {
        value.serialize(Canon { out: self.next() })
    }

    #[inline]
    fn end(self) -> Result<(), CanonError> {
        self.close();
        Ok(())
    }
}

/// The tuple kinds, written as sequences.
macro_rules! as_seq {
    ($($trait:ident :: $method:ident),*) => {
        $(
            impl ser::$trait for Compound<'_> {
                type Ok = ();
                type Error = CanonError;

                fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), CanonError> {
                    ser::SerializeSeq::serialize_element(self, value)
                }

                fn end(self) -> Result<(), CanonError> {
                    ser::SerializeSeq::end(self)
                }
            }
        )*
    };
}

as_seq!(
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field
);

impl ser::SerializeMap for Compound<'_> {
    type Ok = ();
    type Error = CanonError;

    #[inline]
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), CanonError> {
        key.serialize(KeySer { out: self.next() })
    }

    #[inline]
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), CanonError> {
        let out = match self {
            Compound::Plain { out, .. } | Compound::Raw { out } => out,
        };
        out.push(b':');
        value.serialize(Canon { out })
    }

    #[inline]
    fn end(self) -> Result<(), CanonError> {
        self.close();
        Ok(())
    }
}

impl ser::SerializeStruct for Compound<'_> {
    type Ok = ();
    type Error = CanonError;

    #[inline]
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), CanonError> {
        match self {
            Compound::Plain { .. } => ser::SerializeMap::serialize_entry(self, key, value),
            Compound::Raw { out } => {
                if key == RAW_VALUE_TOKEN {
                    value.serialize(RawStr { out })
                } else {
                    Err(CanonError("invalid raw value".to_owned()))
                }
            }
        }
    }

    fn end(self) -> Result<(), CanonError> {
        ser::SerializeMap::end(self)
    }
}

impl ser::SerializeStructVariant for Compound<'_> {
    type Ok = ();
    type Error = CanonError;

    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), CanonError> {
        ser::SerializeMap::serialize_entry(self, key, value)
    }

    fn end(self) -> Result<(), CanonError> {
        ser::SerializeMap::end(self)
    }
}

/// Defines the methods of a serializer that refuses every kind of value but those it
/// defines itself, with `$error`.
macro_rules! refuse {
    ($error:expr; $($method:ident($($arg:ty),*)),* $(,)?) => {
        $(
            fn $method(self, $(_: $arg),*) -> Result<(), CanonError> {
                Err($error)
            }
        )*
    };
}

/// Writes a map key: a string, or a scalar written as a string (as serde_json does).
struct KeySer<'a> {
    out: &'a mut Vec<u8>,
}

impl KeySer<'_> {
    fn quoted(self, text: &[u8]) -> Result<(), CanonError> {
        self.out.push(b'"');
        self.out.extend_from_slice(text);
        self.out.push(b'"');
        Ok(())
    }
}

impl ser::Serializer for KeySer<'_> {
    type Ok = ();
    type Error = CanonError;
    type SerializeSeq = Impossible<(), CanonError>;
    type SerializeTuple = Impossible<(), CanonError>;
    type SerializeTupleStruct = Impossible<(), CanonError>;
    type SerializeTupleVariant = Impossible<(), CanonError>;
    type SerializeMap = Impossible<(), CanonError>;
    type SerializeStruct = Impossible<(), CanonError>;
    type SerializeStructVariant = Impossible<(), CanonError>;

    #[inline]
    fn serialize_str(self, v: &str) -> Result<(), CanonError> {
        write_str(self.out, v);
        Ok(())
    }

    fn serialize_char(self, v: char) -> Result<(), CanonError> {
        write_str(self.out, v.encode_utf8(&mut [0; 4]));
        Ok(())
    }

    fn serialize_bool(self, v: bool) -> Result<(), CanonError> {
        self.quoted(if v { b"true" } else { b"false" })
    }

    integers!(|out, text| {
        out.push(b'"');
        out.extend_from_slice(text);
        out.push(b'"');
    });

    fn serialize_f32(self, v: f32) -> Result<(), CanonError> {
        self.serialize_f64(f64::from(v))
    }

    fn serialize_f64(self, v: f64) -> Result<(), CanonError> {
        if !v.is_finite() {
            return Err(CanonError(
                "float key must be finite (got NaN or +/-inf)".to_owned(),
            ));
        }
        let mut text = Vec::with_capacity(24);
        js_number::write_finite(&mut text, v);
        self.quoted(&text)
    }

    names_and_newtypes!();

    refuse!(key_must_be_a_string(); serialize_bytes(&[u8]), serialize_unit(), serialize_none(),
        serialize_unit_struct(&'static str));

    refuse_compounds!(key_must_be_a_string());
}

/// Writes the string a raw value holds, as it is.
struct RawStr<'a> {
    out: &'a mut Vec<u8>,
}

fn not_raw() -> CanonError {
    CanonError("expected a raw value's text".to_owned())
}

impl ser::Serializer for RawStr<'_> {
    type Ok = ();
    type Error = CanonError;
    type SerializeSeq = Impossible<(), CanonError>;
    type SerializeTuple = Impossible<(), CanonError>;
    type SerializeTupleStruct = Impossible<(), CanonError>;
    type SerializeTupleVariant = Impossible<(), CanonError>;
    type SerializeMap = Impossible<(), CanonError>;
    type SerializeStruct = Impossible<(), CanonError>;
    type SerializeStructVariant = Impossible<(), CanonError>;

    fn serialize_str(self, v: &str) -> Result<(), CanonError> {
        self.out.extend_from_slice(v.as_bytes());
        Ok(())
    }

    refuse!(not_raw(); serialize_bool(bool), serialize_i8(i8), serialize_i16(i16),
        serialize_i32(i32), serialize_i64(i64), serialize_u8(u8), serialize_u16(u16),
        serialize_u32(u32), serialize_u64(u64), serialize_f32(f32), serialize_f64(f64),
        serialize_char(char), serialize_bytes(&[u8]), serialize_none(), serialize_unit(),
        serialize_unit_struct(&'static str), serialize_unit_variant(&'static str, u32, &'static str));

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: &T,
    ) -> Result<(), CanonError> {
        Err(not_raw())
    }

    refuse_compounds!(not_raw());
}

#[cfg(test)]
mod tests;
