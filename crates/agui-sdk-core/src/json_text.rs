//! [`JsonText`]: free-form JSON kept as its canonical text instead of a parsed tree.
//!
//! A request's free-form JSON (`state`, `forwardedProps`, tool parameters, resume
//! payloads) is opaque to the protocol: most agents read a little of it or none. Parsed
//! into `serde_json::Value`, its memory depends on its shape, not its length (`[0,0,…]`
//! costs some 36 times its text). Kept as text it costs its length, whatever the shape,
//! and clones share it.
//!
//! The text is written as it is read, without building the tree: compact, numbers
//! spelled as `JSON.stringify` spells them, and a key repeated in an object keeping its
//! first place with its last value, as `JSON.parse` reads it. So it is exactly what
//! parsing into a `Value` and writing it out canonically gives (a property test holds
//! the two to that, errors included), and the parser's nesting limit applies unchanged.

use std::collections::hash_map::RandomState;
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::hash::BuildHasher;
use std::ops::Range;
use std::sync::Arc;

use serde::de::{self, DeserializeOwned, DeserializeSeed, Deserializer, MapAccess, SeqAccess};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

use crate::wire::JsonError;

/// Any JSON value, held as its canonical text (compact, numbers spelled as
/// `JSON.stringify` spells them, keys in their first order with their last value).
///
/// It costs its text's length whatever the shape, and cloning it shares the text.
/// It writes itself into JSON as the value it holds; read it with
/// [`to_value`](Self::to_value) or [`deserialize`](Self::deserialize), or look at the
/// text with [`as_str`](Self::as_str). Two values are equal when their canonical texts
/// are: the same keys in the same order with the same values.
///
/// ```
/// use agui_sdk_core::JsonText;
/// use serde_json::json;
///
/// let text: JsonText = serde_json::from_str(r#"{ "n": 1.0, "a": [1e21], "n": 2 }"#).unwrap();
/// assert_eq!(text.as_str(), r#"{"n":2,"a":[1e+21]}"#);
/// assert_eq!(text.to_value(), json!({"n": 2, "a": [1e21]}));
/// assert_eq!(JsonText::from(json!({"n": 2, "a": [1e21]})), text);
/// ```
#[derive(Clone)]
pub struct JsonText(Arc<RawValue>);

impl JsonText {
    /// Reads JSON text (any value, whitespace allowed) into its canonical form.
    ///
    /// # Errors
    /// The text is not JSON, or nests deeper than 128 levels; the error says where.
    pub fn parse(text: &str) -> Result<JsonText, JsonError> {
        crate::wire::from_json_str(text)
    }

    /// The canonical text of a value.
    pub fn from_value(value: &Value) -> JsonText {
        let mut out = Vec::with_capacity(64);
        crate::wire::write_canonical(value, &mut out);
        JsonText::from_canonical(out)
    }

    /// The canonical text of anything serializable (a map whose keys are not strings
    /// cannot be JSON, hence the error).
    ///
    /// # Errors
    /// `value` cannot be written as JSON.
    pub fn from_serialize<T: Serialize + ?Sized>(value: &T) -> Result<JsonText, serde_json::Error> {
        let mut out = Vec::with_capacity(64);
        crate::wire::canonical::write(value, &mut out)
            .map_err(<serde_json::Error as serde::ser::Error>::custom)?;
        Ok(JsonText::from_canonical(out))
    }

    /// `null`.
    pub fn null() -> JsonText {
        JsonText::from_canonical(b"null".to_vec())
    }

    /// `{}`.
    pub fn empty_object() -> JsonText {
        JsonText::from_canonical(b"{}".to_vec())
    }

    /// Canonical text written by this module or by the canonical serializer.
    pub(crate) fn from_canonical(out: Vec<u8>) -> JsonText {
        // Both writers write UTF-8 JSON only, so neither check fails; were one to, the
        // value would read as `null` rather than panic.
        let raw = String::from_utf8(out)
            .ok()
            .and_then(|s| RawValue::from_string(s).ok())
            .unwrap_or_else(|| RawValue::NULL.to_owned());
        JsonText(Arc::from(raw))
    }

    /// The canonical text.
    pub fn as_str(&self) -> &str {
        self.0.get()
    }

    /// The text's length in bytes: what the value costs in memory.
    pub fn len(&self) -> usize {
        self.as_str().len()
    }

    /// Always false: JSON text is never empty. (Present for symmetry with `len`.)
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Whether the value is `null`.
    pub fn is_null(&self) -> bool {
        self.as_str() == "null"
    }

    /// Whether the value is an object.
    pub fn is_object(&self) -> bool {
        self.as_str().starts_with('{')
    }

    /// Whether the value is an array.
    pub fn is_array(&self) -> bool {
        self.as_str().starts_with('[')
    }

    /// The value parsed into a tree. Text read from the wire nests at most 128 levels;
    /// text made from a deeper value in code reads back as deep as it was made.
    pub fn to_value(&self) -> Value {
        let mut de = serde_json::Deserializer::from_str(self.as_str());
        de.disable_recursion_limit();
        // Canonical text is valid JSON, so this cannot fail.
        Value::deserialize(&mut de).unwrap_or(Value::Null)
    }

    /// The value read as `T`.
    ///
    /// # Errors
    /// The value does not have `T`'s shape; the error names the field.
    pub fn deserialize<T: DeserializeOwned>(&self) -> Result<T, JsonError> {
        crate::wire::from_json_str(self.as_str())
    }
}

impl Default for JsonText {
    /// `null`.
    fn default() -> Self {
        JsonText::null()
    }
}

impl From<Value> for JsonText {
    fn from(value: Value) -> JsonText {
        JsonText::from_value(&value)
    }
}

impl From<&Value> for JsonText {
    fn from(value: &Value) -> JsonText {
        JsonText::from_value(value)
    }
}

impl From<crate::JsonObject> for JsonText {
    fn from(map: crate::JsonObject) -> JsonText {
        JsonText::from_serialize(&map).unwrap_or_else(|_| JsonText::empty_object())
    }
}

impl From<JsonText> for Value {
    fn from(text: JsonText) -> Value {
        text.to_value()
    }
}

impl From<&JsonText> for Value {
    fn from(text: &JsonText) -> Value {
        text.to_value()
    }
}

impl PartialEq for JsonText {
    fn eq(&self, other: &JsonText) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for JsonText {}

impl PartialEq<Value> for JsonText {
    fn eq(&self, other: &Value) -> bool {
        *self == JsonText::from_value(other)
    }
}

impl PartialEq<JsonText> for Value {
    fn eq(&self, other: &JsonText) -> bool {
        other == self
    }
}

impl fmt::Debug for JsonText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for JsonText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for JsonText {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        (*self.0).serialize(s)
    }
}

impl<'de> Deserialize<'de> for JsonText {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut out = Vec::new();
        Canon { out: &mut out }.deserialize(d)?;
        Ok(JsonText::from_canonical(out))
    }
}

/// Writes the value being read to `out` as canonical text.
struct Canon<'a> {
    out: &'a mut Vec<u8>,
}

impl Canon<'_> {
    fn write<T: Serialize + ?Sized>(self, v: &T) {
        write_to(self.out, v);
    }
}

fn write_to<T: Serialize + ?Sized>(out: &mut Vec<u8>, v: &T) {
    // Writing a scalar into memory cannot fail.
    crate::wire::write_canonical(v, out);
}

impl<'de> DeserializeSeed<'de> for Canon<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> de::Visitor<'de> for Canon<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any valid JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<(), E> {
        self.out
            .extend_from_slice(if v { b"true" } else { b"false" });
        Ok(())
    }

    fn visit_i64<E>(self, v: i64) -> Result<(), E> {
        // As a `Value` keeps it: a number from an `i64`.
        self.write(&serde_json::Number::from(v));
        Ok(())
    }

    fn visit_u64<E>(self, v: u64) -> Result<(), E> {
        self.write(&serde_json::Number::from(v));
        Ok(())
    }

    fn visit_f64<E>(self, v: f64) -> Result<(), E> {
        // As a `Value` keeps it: a finite double, or `null` (which JSON cannot produce).
        match serde_json::Number::from_f64(v) {
            Some(n) => self.write(&n),
            None => self.out.extend_from_slice(b"null"),
        }
        Ok(())
    }

    fn visit_str<E>(self, v: &str) -> Result<(), E> {
        self.write(v);
        Ok(())
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        self.out.extend_from_slice(b"null");
        Ok(())
    }

    fn visit_none<E>(self) -> Result<(), E> {
        self.out.extend_from_slice(b"null");
        Ok(())
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        self.deserialize(d)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let out = self.out;
        out.push(b'[');
        let mut first = true;
        loop {
            if !first {
                out.push(b',');
            }
            if seq.next_element_seed(Canon { out: &mut *out })?.is_none() {
                if !first {
                    out.pop();
                }
                break;
            }
            first = false;
        }
        out.push(b']');
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let out = self.out;
        let mut object = ObjectState::start(out);
        while let Some(key) = map.next_key::<crate::wire::de::Key<'de>>()? {
            object.entry(out, key.as_str(), &mut map)?;
        }
        object.finish(out);
        Ok(())
    }
}

/// An object being written to an output as it is read: `{` is written at the start,
/// each entry as it comes, and `}` at the end. A repeated key keeps its first place and
/// takes its last value, as `JSON.parse` reads it.
pub(crate) struct ObjectState {
    /// Where the entries start in the output (after `{`).
    body: usize,
    /// The keys so far, by a keyed hash: a hit is confirmed against the text written.
    hasher: RandomState,
    seen: HashSet<u64>,
    /// Set once a key repeats.
    rebuild: Option<Rebuild>,
}

impl ObjectState {
    /// Writes `{` and starts an object.
    pub(crate) fn start(out: &mut Vec<u8>) -> ObjectState {
        out.push(b'{');
        ObjectState {
            body: out.len(),
            hasher: RandomState::new(),
            seen: HashSet::new(),
            rebuild: None,
        }
    }

    /// Writes the entry `key` with the value `map` holds next.
    pub(crate) fn entry<'de, A: MapAccess<'de>>(
        &mut self,
        out: &mut Vec<u8>,
        key: &str,
        map: &mut A,
    ) -> Result<(), A::Error> {
        if let Some(r) = self.rebuild.as_mut() {
            return r.entry(out, key, map);
        }
        let hash = self.hasher.hash_one(key);
        if !self.seen.insert(hash) {
            let mut escaped = Vec::with_capacity(key.len() + 2);
            write_to(&mut escaped, key);
            let entries = entries_of(out, self.body);
            if entries.iter().any(|(k, _)| out[k.clone()] == escaped[..]) {
                // A repeated key: from here on, entries are kept by range and the
                // object is written out once it ends.
                let mut r = Rebuild::new(out, entries);
                r.entry(out, key, map)?;
                self.rebuild = Some(r);
                return Ok(());
            }
        }
        if out.len() > self.body {
            out.push(b',');
        }
        write_to(out, key);
        out.push(b':');
        map.next_value_seed(Canon { out: &mut *out })
    }

    /// Writes `}`.
    pub(crate) fn finish(self, out: &mut Vec<u8>) {
        if let Some(r) = self.rebuild {
            r.finish(out, self.body);
        }
        out.push(b'}');
    }
}

/// An object with a repeated key, as it is read: each entry's key and value are ranges
/// of the output; a repeated key's new value is written after the rest and its entry
/// pointed at it (the old value left as garbage until the object ends).
struct Rebuild {
    entries: Vec<(Range<usize>, Range<usize>)>,
    index: HashMap<Vec<u8>, usize>,
}

impl Rebuild {
    fn new(out: &[u8], entries: Vec<(Range<usize>, Range<usize>)>) -> Rebuild {
        let index = entries
            .iter()
            .enumerate()
            .map(|(i, (k, _))| (out[k.clone()].to_vec(), i))
            .collect();
        Rebuild { entries, index }
    }

    fn entry<'de, A: MapAccess<'de>>(
        &mut self,
        out: &mut Vec<u8>,
        key: &str,
        map: &mut A,
    ) -> Result<(), A::Error> {
        let key_start = out.len();
        write_to(out, key);
        let key_range = key_start..out.len();
        let value_start = out.len();
        map.next_value_seed(Canon { out: &mut *out })?;
        let value_range = value_start..out.len();
        let escaped = out[key_range.clone()].to_vec();
        match self.index.get(&escaped) {
            Some(&i) => self.entries[i].1 = value_range,
            None => {
                self.index.insert(escaped, self.entries.len());
                self.entries.push((key_range, value_range));
            }
        }
        Ok(())
    }

    /// Replaces everything after `body` with the entries, in their first order.
    fn finish(self, out: &mut Vec<u8>, body: usize) {
        let mut text = Vec::with_capacity(out.len() - body);
        for (i, (k, v)) in self.entries.iter().enumerate() {
            if i > 0 {
                text.push(b',');
            }
            text.extend_from_slice(&out[k.clone()]);
            text.push(b':');
            text.extend_from_slice(&out[v.clone()]);
        }
        out.truncate(body);
        out.extend_from_slice(&text);
    }
}

/// The entries of the canonical object text written from `body` on (no braces): each
/// key's range (quotes included) and value's range.
fn entries_of(out: &[u8], body: usize) -> Vec<(Range<usize>, Range<usize>)> {
    let mut entries = Vec::new();
    let mut i = body;
    while i < out.len() {
        let key_start = i;
        i = crate::wire::string_end(out, i);
        let key = key_start..i;
        // The colon.
        i += 1;
        let value_start = i;
        i = crate::wire::value_end(out, i);
        entries.push((key, value_start..i));
        // The comma.
        i += 1;
    }
    entries
}

/// Any JSON value but `null`, as [`JsonText`] (the reference refuses `null` for values
/// such as `Tool.parameters` even where any other JSON is allowed).
#[derive(Debug)]
pub struct NotNullText(pub JsonText);

impl From<NotNullText> for JsonText {
    fn from(v: NotNullText) -> JsonText {
        v.0
    }
}

impl<'de> Deserialize<'de> for NotNullText {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(NotNullText(
            crate::wire::de::NonNull::<JsonText>::deserialize(d)?.0,
        ))
    }
}

/// A JSON object, as [`JsonText`] (for positions the reference requires to be an
/// object, such as `metadata`): anything else is refused as a map would refuse it.
#[derive(Debug)]
pub struct ObjectText(pub JsonText);

impl From<ObjectText> for JsonText {
    fn from(v: ObjectText) -> JsonText {
        v.0
    }
}

impl<'de> Deserialize<'de> for ObjectText {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> de::Visitor<'de> for V {
            type Value = JsonText;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<JsonText, A::Error> {
                let mut out = Vec::new();
                let mut object = ObjectState::start(&mut out);
                while let Some(key) = map.next_key::<crate::wire::de::Key<'de>>()? {
                    object.entry(&mut out, key.as_str(), &mut map)?;
                }
                object.finish(&mut out);
                Ok(JsonText::from_canonical(out))
            }
        }
        d.deserialize_map(V).map(ObjectText)
    }
}

/// Collects the unknown keys of an object being decoded into one canonical object text
/// (nothing is allocated until the first one).
#[derive(Default)]
pub(crate) struct ObjectCollector(Option<(Vec<u8>, ObjectState)>);

impl ObjectCollector {
    /// Adds the entry `key` with the value `map` holds next.
    pub(crate) fn entry<'de, A: MapAccess<'de>>(
        &mut self,
        key: &str,
        map: &mut A,
    ) -> Result<(), A::Error> {
        let (out, object) = self.0.get_or_insert_with(|| {
            let mut out = Vec::new();
            let object = ObjectState::start(&mut out);
            (out, object)
        });
        object.entry(out, key, map)
    }

    /// The object, when any entry was added.
    pub(crate) fn finish(self) -> Option<JsonText> {
        self.0.map(|(mut out, object)| {
            object.finish(&mut out);
            JsonText::from_canonical(out)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn via_value(text: &str) -> Result<String, String> {
        serde_json::from_str::<Value>(text)
            .map(|v| crate::wire::to_canonical_string(&v))
            .map_err(|e| e.to_string())
    }

    fn via_text(text: &str) -> Result<String, String> {
        serde_json::from_str::<JsonText>(text)
            .map(|t| t.as_str().to_owned())
            .map_err(|e| e.to_string())
    }

    #[test]
    fn repeated_keys_keep_their_first_place_and_last_value() {
        for text in [
            r#"{"a":1,"b":2,"a":3}"#,
            r#"{"a":{"x":1,"x":[2]},"b":2,"a":{"y":3,"y":4},"c":5,"b":6}"#,
            r#"{"a":1,"a":2,"a":3,"a":{"a":1,"a":2}}"#,
            r#"[{"k\"":1,"k\"":2},{"é":1,"\u00e9":2}]"#,
        ] {
            assert_eq!(via_text(text), via_value(text), "{text}");
        }
    }

    #[test]
    fn numbers_strings_and_nesting_read_as_a_value_reads_them() {
        let deep_ok = format!("{}{}", "[".repeat(127), "]".repeat(127));
        let too_deep = format!("{}{}", "[".repeat(129), "]".repeat(129));
        for text in [
            " [ 1.0 , -0 , 1e21 , 1E-7, 18446744073709551615, -9223372036854775808, 0.1 ] ",
            r#""\ud83d\ude00 \u0000 \n \/ é""#,
            r#""\ud800""#,
            "{\"a\":}",
            "[1,]",
            "",
            "nul",
            "{\"a\":1}x",
            &deep_ok,
            &too_deep,
        ] {
            assert_eq!(via_text(text), via_value(text), "{text}");
        }
    }

    #[test]
    fn it_writes_itself_and_compares_by_text() {
        let t = JsonText::from(json!({"b": [1, {"c": null}], "a": "x"}));
        assert_eq!(
            serde_json::to_string(&json!({"s": t})).unwrap(),
            r#"{"s":{"b":[1,{"c":null}],"a":"x"}}"#
        );
        assert_eq!(
            crate::wire::to_canonical_string(&vec![t.clone()]),
            r#"[{"b":[1,{"c":null}],"a":"x"}]"#
        );
        assert_eq!(t, json!({"b": [1, {"c": null}], "a": "x"}));
        assert_ne!(t, json!({"a": "x", "b": [1, {"c": null}]}));
        assert!(t.is_object() && !t.is_null() && JsonText::null().is_null());
        #[derive(Deserialize, PartialEq, Debug)]
        struct S {
            a: String,
        }
        assert_eq!(t.deserialize::<S>().unwrap(), S { a: "x".into() });
        assert!(t.deserialize::<Vec<u8>>().is_err());
    }

    fn json_text() -> impl Strategy<Value = String> {
        let key = prop::sample::select(vec!["a", "b", "c", "\\u0061", "é", "k\\\"", "1", ""]);
        let leaf = prop_oneof![
            Just("null".to_owned()),
            Just("true".to_owned()),
            Just("false".to_owned()),
            any::<i64>().prop_map(|n| n.to_string()),
            any::<u64>().prop_map(|n| n.to_string()),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(|f| format!("{f:e}")),
            prop::sample::select(vec![
                "1.0",
                "-0",
                "1e21",
                "1E-7",
                "0.1",
                "-0.0",
                "123456789012345678901234"
            ])
            .prop_map(str::to_owned),
            "[a-z\\\\\"é😀 ]{0,6}".prop_map(|s| format!("{:?}", s)),
        ];
        leaf.prop_recursive(5, 48, 6, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6)
                    .prop_map(|v| format!("[ {} ]", v.join(" , "))),
                prop::collection::vec((key.clone(), inner), 0..6).prop_map(|v| {
                    let body: Vec<String> = v
                        .into_iter()
                        .map(|(k, x)| format!("\"{k}\" :{x}"))
                        .collect();
                    format!("{{{}}}", body.join(","))
                }),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 3000, failure_persistence: None, ..ProptestConfig::default() })]

        /// Read as text or through a `Value`, any JSON (repeated keys, every number
        /// spelling, escapes) or any mutation of it gives the same text or the same error.
        #[test]
        fn text_reads_as_a_value_writes(text in json_text(), cut in any::<prop::sample::Index>(), mutate in any::<bool>(), byte in prop::sample::select(b"{}[]\":,\\0123456789.eE+- ".to_vec())) {
            prop_assert_eq!(via_text(&text), via_value(&text), "{}", text);
            if mutate && !text.is_empty() {
                let mut bytes = text.into_bytes();
                let i = cut.index(bytes.len());
                bytes[i] = byte;
                if let Ok(m) = String::from_utf8(bytes) {
                    prop_assert_eq!(via_text(&m), via_value(&m), "{}", m);
                }
            }
        }
    }
}
