//! Decoding helpers shared by every protocol object: borrowed keys, `null`-rejecting
//! optionals, range-checked integers, JSON Pointers, and tag dispatch for unions.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;

/// The largest integer JavaScript represents exactly (2^53 − 1); the reference bounds
/// timestamps and token counts by it.
pub(crate) const MAX_SAFE_INTEGER: i64 = 9_007_199_254_740_991;

/// An object key, borrowed from the input when it can be.
#[derive(Debug)]
pub(crate) enum Key<'de> {
    /// Borrowed from the input buffer.
    Borrowed(&'de str),
    /// Copied (the key contained escapes, or the input is not a buffer).
    Owned(String),
}

impl Key<'_> {
    /// The key text.
    pub(crate) fn as_str(&self) -> &str {
        match self {
            Key::Borrowed(s) => s,
            Key::Owned(s) => s,
        }
    }
}

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key::Borrowed(v))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key::Owned(v.to_owned()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Key<'de>, E> {
                Ok(Key::Owned(v))
            }
        }
        d.deserialize_str(V)
    }
}

/// An optional value that is present: `null` is rejected, as the reference rejects
/// `null` as a spelling of "absent".
#[derive(Debug)]
pub(crate) struct NonNull<T>(pub T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for NonNull<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = NonNull<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a value (null is not allowed here: omit the key instead)")
            }
            fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
                Err(E::custom("null is not allowed here: omit the key instead"))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                self.visit_none()
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
                T::deserialize(d).map(NonNull)
            }
        }
        d.deserialize_option(V(PhantomData))
    }
}

fn integral<E: de::Error>(v: f64, min: i64, what: &str) -> Result<i64, E> {
    if v.fract() != 0.0 || !v.is_finite() {
        return Err(E::custom(format_args!(
            "expected an integer {what}, found the number {v}"
        )));
    }
    if v < min as f64 || v > MAX_SAFE_INTEGER as f64 {
        return Err(E::custom(format_args!(
            "{v} is out of range: {what} must be between {min} and {MAX_SAFE_INTEGER}"
        )));
    }
    Ok(v as i64)
}

macro_rules! bounded_int {
    ($(#[$m:meta])* $name:ident, $min:expr, $out:ty, $what:literal) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy)]
        pub struct $name(pub $out);

        impl From<$name> for $out {
            fn from(v: $name) -> $out {
                v.0
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> Visitor<'de> for V {
                    type Value = $name;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        write!(f, "an integer {} between {} and {}", $what, $min, MAX_SAFE_INTEGER)
                    }
                    fn visit_i64<E: de::Error>(self, v: i64) -> Result<$name, E> {
                        if !($min..=MAX_SAFE_INTEGER).contains(&v) {
                            return Err(E::custom(format_args!(
                                "{} is out of range: {} must be between {} and {}",
                                v, $what, $min, MAX_SAFE_INTEGER
                            )));
                        }
                        Ok($name(v as $out))
                    }
                    fn visit_u64<E: de::Error>(self, v: u64) -> Result<$name, E> {
                        if v > MAX_SAFE_INTEGER as u64 {
                            return Err(E::custom(format_args!(
                                "{} is out of range: {} must be between {} and {}",
                                v, $what, $min, MAX_SAFE_INTEGER
                            )));
                        }
                        self.visit_i64(v as i64)
                    }
                    fn visit_f64<E: de::Error>(self, v: f64) -> Result<$name, E> {
                        integral::<E>(v, $min, $what).map(|v| $name(v as $out))
                    }
                }
                d.deserialize_any(V)
            }
        }
    };
}

bounded_int!(
    /// A timestamp: an integer in ±(2^53 − 1). `1.0` is accepted (JSON does not tell it
    /// from `1`); `1.5` and `"1"` are not.
    Timestamp, -MAX_SAFE_INTEGER, i64, "timestamp"
);
bounded_int!(
    /// A non-negative count no larger than 2^53 − 1 (token counts, capability limits).
    Count, 0, u64, "count"
);

/// A JSON Pointer (RFC 6901) checked against the reference grammar
/// `^(/([^/~]|~[01])*)*$`: empty, or slash-prefixed tokens where `~` is followed by
/// `0` or `1`.
#[derive(Debug)]
pub struct Pointer(pub String);

impl From<Pointer> for String {
    fn from(p: Pointer) -> String {
        p.0
    }
}

/// Whether `s` is a JSON Pointer by the reference grammar.
pub(crate) fn is_json_pointer(s: &str) -> bool {
    if s.is_empty() {
        return true;
    }
    if !s.starts_with('/') {
        return false;
    }
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'~' {
            match b.get(i + 1) {
                Some(b'0') | Some(b'1') => i += 2,
                _ => return false,
            }
        } else {
            i += 1;
        }
    }
    true
}

impl<'de> Deserialize<'de> for Pointer {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        if is_json_pointer(&s) {
            Ok(Pointer(s))
        } else {
            Err(de::Error::custom(format_args!(
                "{s:?} is not a JSON Pointer (expected \"\" or \"/\"-prefixed tokens, with `~` only as ~0 or ~1)"
            )))
        }
    }
}

/// A list that must hold at least one element.
#[derive(Debug)]
pub struct AtLeastOne<T>(pub Vec<T>);

impl<T> From<AtLeastOne<T>> for Vec<T> {
    fn from(v: AtLeastOne<T>) -> Vec<T> {
        v.0
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for AtLeastOne<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Vec::<T>::deserialize(d)?;
        if v.is_empty() {
            Err(de::Error::invalid_length(0, &"at least one element"))
        } else {
            Ok(AtLeastOne(v))
        }
    }
}

/// Any JSON value except `null` (the reference refuses `null` for values such as
/// `Tool.parameters` or a part's `metadata` even where any other JSON is allowed).
#[derive(Debug)]
pub struct NotNullValue(pub Value);

impl From<NotNullValue> for Box<Value> {
    fn from(v: NotNullValue) -> Box<Value> {
        Box::new(v.0)
    }
}

impl From<NotNullValue> for Value {
    fn from(v: NotNullValue) -> Value {
        v.0
    }
}

impl<'de> Deserialize<'de> for NotNullValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(NotNullValue(NonNull::<Value>::deserialize(d)?.0))
    }
}

/// A `MapAccess` that first replays entries read while looking for a union's tag, then
/// continues with the underlying map.
#[derive(Debug)]
pub(crate) struct Replay<'de, A> {
    buffered: std::vec::IntoIter<(String, Value)>,
    pending: Option<Value>,
    rest: A,
    _de: PhantomData<&'de ()>,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Replay<'de, A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        if let Some((k, v)) = self.buffered.next() {
            self.pending = Some(v);
            return seed
                .deserialize(de::value::StringDeserializer::<A::Error>::new(k))
                .map(Some);
        }
        self.rest.next_key_seed(seed)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        match self.pending.take() {
            Some(v) => seed.deserialize(v).map_err(de::Error::custom),
            None => self.rest.next_value_seed(seed),
        }
    }
}

/// Finds the tag `tag` in an object and hands the tag value and the remaining entries
/// to `dispatch`. When the tag is the first key (as every reference encoder writes it
/// for events) nothing is buffered; otherwise the entries before it are kept as JSON
/// values and replayed.
pub(crate) fn visit_tagged<'de, A, R>(
    mut map: A,
    tag: &'static str,
    dispatch: impl FnOnce(&str, Replay<'de, A>) -> Result<R, A::Error>,
) -> Result<R, A::Error>
where
    A: MapAccess<'de>,
{
    let mut buffered: Vec<(String, Value)> = Vec::new();
    while let Some(key) = map.next_key::<Key<'de>>()? {
        if key.as_str() == tag {
            let value: Key<'de> = map.next_value()?;
            let replay = Replay {
                buffered: buffered.into_iter(),
                pending: None,
                rest: map,
                _de: PhantomData,
            };
            // The member's decoder checks a repeated tag against this one.
            let outer = CURRENT_TAG.with(|c| c.replace(TagValue::new(value.as_str())));
            let result = dispatch(value.as_str(), replay);
            CURRENT_TAG.with(|c| *c.borrow_mut() = outer);
            return result;
        }
        let v: Value = map.next_value()?;
        buffered.push((key.as_str().to_owned(), v));
    }
    Err(de::Error::missing_field(tag))
}

thread_local! {
    /// The tag value of the union member being decoded (innermost).
    static CURRENT_TAG: std::cell::RefCell<TagValue> = const { std::cell::RefCell::new(TagValue::None) };
}

/// A union tag's value as kept while its member decodes: inline when short (every tag
/// the protocol defines is), so that decoding an event allocates nothing for it.
#[derive(Debug, Clone)]
enum TagValue {
    None,
    Inline {
        len: u8,
        bytes: [u8; TagValue::INLINE],
    },
    Heap(String),
}

impl TagValue {
    const INLINE: usize = 40;

    fn new(value: &str) -> Self {
        if value.len() <= Self::INLINE {
            let mut bytes = [0; Self::INLINE];
            bytes[..value.len()].copy_from_slice(value.as_bytes());
            TagValue::Inline {
                len: value.len() as u8,
                bytes,
            }
        } else {
            TagValue::Heap(value.to_owned())
        }
    }

    fn as_str(&self) -> Option<&str> {
        match self {
            TagValue::None => None,
            // Copied from a `&str` whole, so the bytes are UTF-8.
            TagValue::Inline { len, bytes } => std::str::from_utf8(&bytes[..*len as usize]).ok(),
            TagValue::Heap(s) => Some(s),
        }
    }
}

/// What the error of a repeated union tag with another value starts with; such input
/// is decoded again as a JSON value, where the last occurrence wins (see
/// [`from_json_slice`](crate::wire::from_json_slice)).
pub(crate) const REPEATED_TAG: &str = "repeated tag";

/// A union member's decoder met its tag key again: the same value is harmless; another
/// value is an error (the caller decodes the input again with the last value winning).
pub(crate) fn check_repeated_tag<E: de::Error>(tag: &str, value: &str) -> Result<(), E> {
    CURRENT_TAG.with(|c| match c.borrow().as_str() {
        Some(f) if f != value => Err(E::custom(format!(
            "{REPEATED_TAG} `{tag}`: `{f}` then `{value}`"
        ))),
        _ => Ok(()),
    })
}

/// The error for a union tag whose value names no member: says which key, which value,
/// and lists the allowed values.
pub(crate) fn unknown_tag<E: de::Error>(tag: &str, value: &str, allowed: &[&str]) -> E {
    let list = allowed
        .iter()
        .map(|a| format!("`{a}`"))
        .collect::<Vec<_>>()
        .join(", ");
    E::custom(format_args!(
        "unknown `{tag}` value `{value}`, expected one of {list}"
    ))
}

thread_local! {
    /// Unknown keys met by the decoders on this thread since the last reset.
    static UNKNOWN_KEYS: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// Counts one unknown key (called by every protocol object's decoder).
pub(crate) fn note_unknown_key() {
    UNKNOWN_KEYS.with(|c| c.set(c.get().saturating_add(1)));
}

/// A section of decoding whose unknown keys are counted: whether any protocol object
/// it decoded met a key its declaration does not define (kept in that object's
/// `extra`). Opaque positions (state, metadata, payloads) do not count. This is what
/// lets the inbound pipeline take the typed fast path: an event without unknown
/// material is decoded once, and only one that carries some is decoded again through
/// enforcement.
#[derive(Debug)]
#[must_use = "finish() says whether unknown keys were met"]
pub(crate) struct UnknownKeys {
    before: u32,
}

impl UnknownKeys {
    /// Starts counting.
    #[inline]
    pub(crate) fn start() -> Self {
        UnknownKeys {
            before: UNKNOWN_KEYS.with(|c| c.replace(0)),
        }
    }

    /// Stops counting: whether any unknown key was met since [`start`](Self::start).
    #[inline]
    pub(crate) fn finish(self) -> bool {
        let inner = UNKNOWN_KEYS.with(|c| c.replace(0));
        // An enclosing section still sees what this one met.
        UNKNOWN_KEYS.with(|c| c.set(self.before.saturating_add(inner)));
        inner != 0
    }
}

/// A protocol object decoded from a map whose union tag was already read (implemented
/// by every `wire_struct!`, and by a `Box` of one, for union members stored boxed).
pub(crate) trait WireObject: Sized {
    /// Decodes the object's fields from `map`, skipping the key `skip` (the tag).
    fn visit_map_skipping<'de, A: MapAccess<'de>>(
        map: A,
        skip: &'static str,
    ) -> Result<Self, A::Error>;

    /// The object from members that are all strings, skipping the member `skip` (the
    /// tag): `None` when one is not a field, a field is not read from a string, or a
    /// required field is missing (see `event::plain`).
    fn read_plain(
        members: &[crate::wire::plain::Member<'_>],
        skip: &str,
        blank: &mut impl FnMut(usize) -> String,
    ) -> Option<Self>;

    /// Hands the object's string fields to `keep` (a recycler) and drops the rest.
    fn give_strings(self, keep: &mut impl FnMut(String));
}

impl<T: WireObject> WireObject for Box<T> {
    fn visit_map_skipping<'de, A: MapAccess<'de>>(
        map: A,
        skip: &'static str,
    ) -> Result<Self, A::Error> {
        T::visit_map_skipping(map, skip).map(Box::new)
    }

    #[inline]
    fn read_plain(
        members: &[crate::wire::plain::Member<'_>],
        skip: &str,
        blank: &mut impl FnMut(usize) -> String,
    ) -> Option<Self> {
        T::read_plain(members, skip, blank).map(Box::new)
    }

    #[inline]
    fn give_strings(self, keep: &mut impl FnMut(String)) {
        T::give_strings(*self, keep)
    }
}
