//! `google.protobuf.Value` and `Struct` (with `ListValue` inside), read and written straight from and
//! into `serde_json` values, so that free-form JSON (state, metadata, `rawEvent`, tool
//! parameters) crosses the protobuf boundary without an intermediate tree and keeps the
//! order of object keys.
//!
//! Wire rules, matching what `@ag-ui/proto` (ts-proto) writes and reads:
//! - every JSON number is a `double` (`number_value`); on the way back an integral
//!   double within ±(2^63) is restored as a JSON integer, so `{"count":1}` comes back as
//!   `1`, not `1.0` (the reference, in JavaScript, cannot tell them apart either);
//!   NaN and infinities, which JSON cannot hold, come back as `null`;
//! - `null` is `null_value` (`08 00`), booleans and strings are written even when `false`
//!   or empty (the `kind` oneof always marks its member as present);
//! - object entries are written in the object's order, an entry's key field is omitted
//!   when the key is empty (proto3 implicit presence), exactly as ts-proto writes them;
//! - a `Value` with no `kind` set is "no value": a `Struct` entry holding one is skipped
//!   (ts-proto drops it), a `ListValue` element holding one reads as `null` (JavaScript
//!   writes `undefined` array elements as `null`), and a singular field holding one is
//!   absent;
//! - a later `kind` replaces an earlier one; two `struct_value`s (or `list_value`s) in one
//!   `Value` merge, as protobuf merges repeated occurrences of a message field.
//!
//! Nesting is limited to [`MAX_DEPTH`] levels of objects and arrays, so hostile input
//! cannot exhaust the stack, and so that any decoded event, whose own structure adds a
//! few levels, still fits serde_json's parse limit of 128 when written as SSE.

use bytes::{Buf, BufMut};
use prost::encoding::{
    check_wire_type, decode_key, decode_varint, encode_key, encode_varint, encoded_len_varint,
    skip_field, DecodeContext, WireType,
};
use prost::DecodeError;
use serde_json::{Map, Number, Value as Json};

/// The deepest nesting of objects and arrays a decoded free-form JSON value may have.
pub(crate) const MAX_DEPTH: u32 = 128;

/// `google.protobuf.Value`: a JSON value, or nothing when no `kind` is set.
#[derive(Clone, PartialEq, Default, Debug)]
pub(crate) struct Value(pub Option<Json>);

/// `google.protobuf.Struct`: a JSON object.
#[derive(Clone, PartialEq, Default, Debug)]
pub(crate) struct Struct(pub Map<String, Json>);

impl Value {
    /// A present value (for the test oracle).
    #[cfg(test)]
    pub(crate) fn of(v: Json) -> Value {
        Value(Some(v))
    }
}

// ---------------------------------------------------------------------------------------
// Encoding

const NULL_VALUE: u32 = 1;
const NUMBER_VALUE: u32 = 2;
const STRING_VALUE: u32 = 3;
const BOOL_VALUE: u32 = 4;
const STRUCT_VALUE: u32 = 5;
const LIST_VALUE: u32 = 6;

/// Length of a `Value` message body holding `v`.
fn value_body_len(v: &Json) -> usize {
    match v {
        Json::Null | Json::Bool(_) => 2,
        Json::Number(_) => 9,
        Json::String(s) => 1 + encoded_len_varint(s.len() as u64) + s.len(),
        Json::Array(a) => {
            let l = list_body_len(a);
            1 + encoded_len_varint(l as u64) + l
        }
        Json::Object(o) => {
            let l = struct_body_len(o);
            1 + encoded_len_varint(l as u64) + l
        }
    }
}

fn list_body_len(a: &[Json]) -> usize {
    a.iter()
        .map(|v| {
            let l = value_body_len(v);
            1 + encoded_len_varint(l as u64) + l
        })
        .sum()
}

fn entry_body_len(k: &str, v: &Json) -> usize {
    let key = if k.is_empty() {
        0
    } else {
        1 + encoded_len_varint(k.len() as u64) + k.len()
    };
    let vl = value_body_len(v);
    key + 1 + encoded_len_varint(vl as u64) + vl
}

fn struct_body_len(o: &Map<String, Json>) -> usize {
    o.iter()
        .map(|(k, v)| {
            let l = entry_body_len(k, v);
            1 + encoded_len_varint(l as u64) + l
        })
        .sum()
}

pub(super) fn encode_value_body(v: &Json, buf: &mut impl BufMut) {
    match v {
        Json::Null => {
            encode_key(NULL_VALUE, WireType::Varint, buf);
            buf.put_u8(0);
        }
        Json::Bool(b) => {
            encode_key(BOOL_VALUE, WireType::Varint, buf);
            buf.put_u8(u8::from(*b));
        }
        Json::Number(n) => {
            encode_key(NUMBER_VALUE, WireType::SixtyFourBit, buf);
            buf.put_f64_le(number_to_f64(n));
        }
        Json::String(s) => {
            encode_key(STRING_VALUE, WireType::LengthDelimited, buf);
            encode_varint(s.len() as u64, buf);
            buf.put_slice(s.as_bytes());
        }
        Json::Array(a) => {
            encode_key(LIST_VALUE, WireType::LengthDelimited, buf);
            encode_varint(list_body_len(a) as u64, buf);
            encode_list_body(a, buf);
        }
        Json::Object(o) => {
            encode_key(STRUCT_VALUE, WireType::LengthDelimited, buf);
            encode_varint(struct_body_len(o) as u64, buf);
            encode_struct_body(o, buf);
        }
    }
}

fn encode_list_body(a: &[Json], buf: &mut impl BufMut) {
    for v in a {
        encode_key(1, WireType::LengthDelimited, buf);
        encode_varint(value_body_len(v) as u64, buf);
        encode_value_body(v, buf);
    }
}

pub(super) fn encode_struct_body(o: &Map<String, Json>, buf: &mut impl BufMut) {
    for (k, v) in o {
        encode_key(1, WireType::LengthDelimited, buf);
        encode_varint(entry_body_len(k, v) as u64, buf);
        if !k.is_empty() {
            encode_key(1, WireType::LengthDelimited, buf);
            encode_varint(k.len() as u64, buf);
            buf.put_slice(k.as_bytes());
        }
        encode_key(2, WireType::LengthDelimited, buf);
        encode_varint(value_body_len(v) as u64, buf);
        encode_value_body(v, buf);
    }
}

/// A JSON number as the double protobuf carries (integers beyond 2^53 lose precision,
/// as they do in JavaScript).
fn number_to_f64(n: &Number) -> f64 {
    if let Some(i) = n.as_i64() {
        i as f64
    } else if let Some(u) = n.as_u64() {
        u as f64
    } else {
        n.as_f64().unwrap_or(0.0)
    }
}

/// The JSON number for a double read from the wire: integral values within the range
/// of `i64`/`u64` become integers, non-finite values (which JSON cannot hold) `null`.
pub(crate) fn f64_to_json(f: f64) -> Json {
    if f.is_finite() && f.fract() == 0.0 {
        // 2^63 and 2^64: the first doubles outside the two integer ranges.
        if (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&f) {
            return Json::Number(Number::from(f as i64));
        }
        if (0.0..18_446_744_073_709_551_616.0).contains(&f) {
            return Json::Number(Number::from(f as u64));
        }
    }
    Number::from_f64(f).map_or(Json::Null, Json::Number)
}

// ---------------------------------------------------------------------------------------
// Decoding

fn too_deep() -> DecodeError {
    DecodeError::new("JSON value nested too deeply")
}

/// Reads a length prefix and runs `field` for every field of the delimited message.
fn delimited<B: Buf>(
    buf: &mut B,
    mut field: impl FnMut(&mut B, u32, WireType) -> Result<(), DecodeError>,
) -> Result<(), DecodeError> {
    let len = decode_varint(buf)?;
    let remaining = buf.remaining();
    if len > remaining as u64 {
        return Err(DecodeError::new("buffer underflow"));
    }
    let limit = remaining - len as usize;
    while buf.remaining() > limit {
        let (tag, wire_type) = decode_key(buf)?;
        field(buf, tag, wire_type)?;
    }
    if buf.remaining() != limit {
        return Err(DecodeError::new("delimited length exceeded"));
    }
    Ok(())
}

fn read_string<B: Buf>(buf: &mut B) -> Result<String, DecodeError> {
    let mut s = String::new();
    prost::encoding::string::merge(
        WireType::LengthDelimited,
        &mut s,
        buf,
        DecodeContext::default(),
    )?;
    Ok(s)
}

/// Merges one field of a `Value` into `slot`.
fn merge_value_field<B: Buf>(
    slot: &mut Option<Json>,
    tag: u32,
    wire_type: WireType,
    buf: &mut B,
    depth: u32,
) -> Result<(), DecodeError> {
    match tag {
        NULL_VALUE => {
            check_wire_type(WireType::Varint, wire_type)?;
            decode_varint(buf)?;
            *slot = Some(Json::Null);
        }
        NUMBER_VALUE => {
            check_wire_type(WireType::SixtyFourBit, wire_type)?;
            if buf.remaining() < 8 {
                return Err(DecodeError::new("buffer underflow"));
            }
            *slot = Some(f64_to_json(buf.get_f64_le()));
        }
        STRING_VALUE => {
            check_wire_type(WireType::LengthDelimited, wire_type)?;
            *slot = Some(Json::String(read_string(buf)?));
        }
        BOOL_VALUE => {
            check_wire_type(WireType::Varint, wire_type)?;
            *slot = Some(Json::Bool(decode_varint(buf)? != 0));
        }
        STRUCT_VALUE => {
            check_wire_type(WireType::LengthDelimited, wire_type)?;
            if depth >= MAX_DEPTH {
                return Err(too_deep());
            }
            if !matches!(slot, Some(Json::Object(_))) {
                *slot = Some(Json::Object(Map::new()));
            }
            if let Some(Json::Object(map)) = slot {
                merge_struct(map, buf, depth + 1)?;
            }
        }
        LIST_VALUE => {
            check_wire_type(WireType::LengthDelimited, wire_type)?;
            if depth >= MAX_DEPTH {
                return Err(too_deep());
            }
            if !matches!(slot, Some(Json::Array(_))) {
                *slot = Some(Json::Array(Vec::new()));
            }
            if let Some(Json::Array(list)) = slot {
                merge_list(list, buf, depth + 1)?;
            }
        }
        _ => skip_field(wire_type, tag, buf, DecodeContext::default())?,
    }
    Ok(())
}

/// Reads a delimited `Value` message.
fn read_value<B: Buf>(buf: &mut B, depth: u32) -> Result<Option<Json>, DecodeError> {
    let mut slot = None;
    delimited(buf, |buf, tag, wt| {
        merge_value_field(&mut slot, tag, wt, buf, depth)
    })?;
    Ok(slot)
}

/// Merges the entries of a delimited `Struct` message into `map` (a repeated key
/// replaces the earlier value in place).
fn merge_struct<B: Buf>(
    map: &mut Map<String, Json>,
    buf: &mut B,
    depth: u32,
) -> Result<(), DecodeError> {
    delimited(buf, |buf, tag, wt| {
        if tag != 1 {
            return skip_field(wt, tag, buf, DecodeContext::default());
        }
        check_wire_type(WireType::LengthDelimited, wt)?;
        let mut key = String::new();
        let mut value: Option<Json> = None;
        delimited(buf, |buf, tag, wt| match tag {
            1 => {
                check_wire_type(WireType::LengthDelimited, wt)?;
                key = read_string(buf)?;
                Ok(())
            }
            2 => {
                check_wire_type(WireType::LengthDelimited, wt)?;
                // A repeated value field merges, as for any message field.
                delimited(buf, |buf, tag, wt| {
                    merge_value_field(&mut value, tag, wt, buf, depth)
                })
            }
            _ => skip_field(wt, tag, buf, DecodeContext::default()),
        })?;
        if let Some(v) = value {
            map.insert(key, v);
        }
        Ok(())
    })
}

fn merge_list<B: Buf>(list: &mut Vec<Json>, buf: &mut B, depth: u32) -> Result<(), DecodeError> {
    delimited(buf, |buf, tag, wt| {
        if tag != 1 {
            return skip_field(wt, tag, buf, DecodeContext::default());
        }
        check_wire_type(WireType::LengthDelimited, wt)?;
        list.push(read_value(buf, depth)?.unwrap_or(Json::Null));
        Ok(())
    })
}

// ---------------------------------------------------------------------------------------
// prost::Message implementations

impl prost::Message for Value {
    fn encode_raw(&self, buf: &mut impl BufMut) {
        if let Some(v) = &self.0 {
            encode_value_body(v, buf);
        }
    }

    fn merge_field(
        &mut self,
        tag: u32,
        wire_type: WireType,
        buf: &mut impl Buf,
        _ctx: DecodeContext,
    ) -> Result<(), DecodeError> {
        merge_value_field(&mut self.0, tag, wire_type, buf, 0)
    }

    fn encoded_len(&self) -> usize {
        self.0.as_ref().map_or(0, value_body_len)
    }

    fn clear(&mut self) {
        self.0 = None;
    }
}

impl prost::Message for Struct {
    fn encode_raw(&self, buf: &mut impl BufMut) {
        encode_struct_body(&self.0, buf);
    }

    fn merge_field(
        &mut self,
        tag: u32,
        wire_type: WireType,
        buf: &mut impl Buf,
        _ctx: DecodeContext,
    ) -> Result<(), DecodeError> {
        if tag != 1 {
            return skip_field(wire_type, tag, buf, DecodeContext::default());
        }
        check_wire_type(WireType::LengthDelimited, wire_type)?;
        // Re-frame the single entry as a one-entry Struct body: `merge_struct` reads a
        // length prefix followed by entries, so read the entry in place instead.
        let mut key = String::new();
        let mut value: Option<Json> = None;
        delimited(buf, |buf, tag, wt| match tag {
            1 => {
                check_wire_type(WireType::LengthDelimited, wt)?;
                key = read_string(buf)?;
                Ok(())
            }
            2 => {
                check_wire_type(WireType::LengthDelimited, wt)?;
                delimited(buf, |buf, tag, wt| {
                    merge_value_field(&mut value, tag, wt, buf, 1)
                })
            }
            _ => skip_field(wt, tag, buf, DecodeContext::default()),
        })?;
        if let Some(v) = value {
            self.0.insert(key, v);
        }
        Ok(())
    }

    fn encoded_len(&self) -> usize {
        struct_body_len(&self.0)
    }

    fn clear(&mut self) {
        self.0.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message as _;
    use serde_json::json;

    fn round_trip(v: Json) -> Json {
        let bytes = Value::of(v).encode_to_vec();
        Value::decode(bytes.as_slice()).unwrap().0.unwrap()
    }

    #[test]
    fn integers_come_back_as_integers() {
        assert_eq!(
            round_trip(json!({"count": 1})).to_string(),
            r#"{"count":1}"#
        );
        assert_eq!(round_trip(json!(-3e-7)).to_string(), "-3e-7");
        assert_eq!(round_trip(json!(2.5)).to_string(), "2.5");
        assert_eq!(round_trip(json!(-0.0)).to_string(), "0");
        assert_eq!(round_trip(json!(1789639200000u64)), json!(1789639200000u64));
    }

    #[test]
    fn keys_keep_their_order_and_empty_keys_survive() {
        let v = json!({"b": 1, "a": [true, null, "x", ""], "": {"z": {}}});
        assert_eq!(round_trip(v.clone()).to_string(), v.to_string());
    }

    #[test]
    fn null_is_null_value() {
        assert_eq!(Value::of(Json::Null).encode_to_vec(), vec![0x08, 0x00]);
        assert_eq!(Value::default().encode_to_vec(), Vec::<u8>::new());
    }

    #[test]
    fn nesting_is_bounded() {
        let mut v = json!(1);
        for _ in 0..(MAX_DEPTH + 5) {
            v = json!([v]);
        }
        let bytes = Value::of(v).encode_to_vec();
        assert!(Value::decode(bytes.as_slice()).is_err());
    }

    #[test]
    fn unset_list_elements_read_as_null() {
        // ListValue { values: [Value {}] } inside a Value.
        let bytes = [0x32, 0x02, 0x0a, 0x00];
        assert_eq!(Value::decode(&bytes[..]).unwrap().0, Some(json!([null])));
    }

    #[test]
    fn non_finite_numbers_read_as_null() {
        let mut bytes = vec![0x11];
        bytes.extend_from_slice(&f64::NAN.to_le_bytes());
        assert_eq!(Value::decode(bytes.as_slice()).unwrap().0, Some(Json::Null));
    }
}
