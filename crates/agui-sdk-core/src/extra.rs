//! [`Extra`]: the keys a protocol object does not define.

use std::borrow::Cow;
use std::fmt;

use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::Value;

use crate::{JsonObject, JsonText};

/// The keys a protocol object does not define, kept verbatim and in order, as the
/// reference parser keeps them (`looseObject`), and written back out after the object's
/// own keys.
///
/// They are held as one canonical JSON object text ([`JsonText`]), so unknown keys cost
/// their length whatever their shape; when there are none, as nearly always, it costs
/// one pointer and no allocation, so that every object (every event, message, part)
/// stays small. Read them with [`get`](Self::get), [`entries`](Self::entries) or
/// [`to_map`](Self::to_map); change them with [`insert`](Self::insert),
/// [`remove`](Self::remove) or [`extend`](Self::extend) (each rewrites the text: these
/// are for the rare object that carries such keys).
///
/// ```
/// use agui_sdk_core::Extra;
/// let mut extra = Extra::default();
/// assert!(extra.is_empty());
/// extra.insert("x-trace", serde_json::json!("abc"));
/// assert_eq!(extra.get("x-trace"), Some(serde_json::json!("abc")));
/// assert_eq!(extra.as_text().unwrap().as_str(), r#"{"x-trace":"abc"}"#);
/// ```
#[derive(Clone, Default)]
pub struct Extra(Option<Box<JsonText>>);

impl Extra {
    /// The keys as canonical object text; `None` when there are none.
    pub fn as_text(&self) -> Option<&JsonText> {
        self.0.as_deref()
    }

    /// Whether there are no keys.
    pub fn is_empty(&self) -> bool {
        self.0.is_none()
    }

    /// How many keys there are.
    pub fn len(&self) -> usize {
        self.entries().len()
    }

    /// The keys and their values, in order (borrowed from the text).
    pub fn entries(&self) -> Vec<(Cow<'_, str>, &RawValue)> {
        let Some(text) = self.0.as_deref() else {
            return Vec::new();
        };
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Vec<(Cow<'de, str>, &'de RawValue)>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut entries = Vec::new();
                while let Some(key) = map.next_key::<crate::wire::de::Key<'de>>()? {
                    let key = match key {
                        crate::wire::de::Key::Borrowed(k) => Cow::Borrowed(k),
                        crate::wire::de::Key::Owned(k) => Cow::Owned(k),
                    };
                    entries.push((key, map.next_value::<&'de RawValue>()?));
                }
                Ok(entries)
            }
        }
        let mut de = serde_json::Deserializer::from_str(text.as_str());
        de.disable_recursion_limit();
        // The text is a canonical object, so this cannot fail.
        de.deserialize_map(V).unwrap_or_default()
    }

    /// The value of `key`, parsed.
    pub fn get(&self, key: &str) -> Option<Value> {
        self.entries()
            .into_iter()
            .find(|(k, _)| k == key)
            .and_then(|(_, v)| serde_json::from_str(v.get()).ok())
    }

    /// Whether `key` is present.
    pub fn contains_key(&self, key: &str) -> bool {
        self.entries().iter().any(|(k, _)| k == key)
    }

    /// The keys as a parsed object.
    pub fn to_map(&self) -> JsonObject {
        match self.0.as_deref().map(JsonText::to_value) {
            Some(Value::Object(map)) => map,
            _ => JsonObject::new(),
        }
    }

    /// The keys as an owned parsed object.
    pub fn into_map(self) -> JsonObject {
        self.to_map()
    }

    /// Sets `key` (in its place when present, else last); returns the value it replaced.
    pub fn insert(&mut self, key: impl Into<String>, value: impl Into<JsonText>) -> Option<Value> {
        let mut map = self.to_map();
        let old = map.insert(key.into(), value.into().to_value());
        *self = Extra::from(map);
        old
    }

    /// Removes `key`, keeping the others in order; returns its value.
    pub fn remove(&mut self, key: &str) -> Option<Value> {
        if !self.contains_key(key) {
            return None;
        }
        let mut map = self.to_map();
        let old = map.shift_remove(key);
        *self = Extra::from(map);
        old
    }

    /// Removes every key.
    pub fn clear(&mut self) {
        self.0 = None;
    }

    /// Adds `other`'s keys (its values win).
    pub fn extend(&mut self, other: Extra) {
        if other.is_empty() {
            return;
        }
        if self.is_empty() {
            *self = other;
            return;
        }
        let mut map = self.to_map();
        map.extend(other.to_map());
        *self = Extra::from(map);
    }

    /// Keys collected as a canonical object text (`None`: there were none).
    pub(crate) fn from_text(text: Option<JsonText>) -> Extra {
        Extra(text.filter(|t| t.as_str() != "{}").map(Box::new))
    }
}

impl From<JsonObject> for Extra {
    fn from(map: JsonObject) -> Extra {
        if map.is_empty() {
            return Extra::default();
        }
        Extra::from_text(Some(JsonText::from(map)))
    }
}

impl From<Extra> for JsonObject {
    fn from(extra: Extra) -> JsonObject {
        extra.into_map()
    }
}

impl PartialEq for Extra {
    fn eq(&self, other: &Extra) -> bool {
        self.0 == other.0
    }
}

impl PartialEq<JsonObject> for Extra {
    fn eq(&self, other: &JsonObject) -> bool {
        self.to_map() == *other
    }
}

impl fmt::Debug for Extra {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.as_deref() {
            Some(text) => f.write_str(text.as_str()),
            None => f.write_str("{}"),
        }
    }
}

impl serde::Serialize for Extra {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0.as_deref() {
            Some(text) => text.serialize(s),
            None => JsonObject::new().serialize(s),
        }
    }
}

impl<'de> serde::Deserialize<'de> for Extra {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        crate::ObjectText::deserialize(d).map(|o| Extra::from_text(Some(o.0)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn empty_and_absent_are_equal_and_cost_a_pointer() {
        let mut touched = Extra::default();
        assert_eq!(touched.remove("x"), None);
        touched.extend(Extra::default());
        assert_eq!(touched, Extra::default());
        assert_eq!(std::mem::size_of::<Extra>(), std::mem::size_of::<usize>());
        let full = Extra::from(JsonObject::from_iter([("k".to_owned(), 1.into())]));
        assert_ne!(full, Extra::default());
        assert_eq!(full.clone().into_map()["k"], 1);
        let mut gone = full.clone();
        assert_eq!(gone.remove("k"), Some(json!(1)));
        assert_eq!(gone, Extra::default());
    }

    #[test]
    fn edits_keep_the_order_and_the_canonical_text() {
        let mut e: Extra = serde_json::from_str(r#"{"b":1.0,"a":[1e21],"b":2}"#).unwrap();
        assert_eq!(e.as_text().unwrap().as_str(), r#"{"b":2,"a":[1e+21]}"#);
        assert_eq!(e.len(), 2);
        assert_eq!(e.get("a"), Some(json!([1e21])));
        assert_eq!(e.insert("b", json!("x")), Some(json!(2)));
        e.extend(Extra::from(JsonObject::from_iter([(
            "c".to_owned(),
            json!(null),
        )])));
        let keys: Vec<String> = e
            .entries()
            .into_iter()
            .map(|(k, _)| k.into_owned())
            .collect();
        assert_eq!(keys, ["b", "a", "c"]);
        assert_eq!(
            serde_json::to_string(&e).unwrap(),
            r#"{"b":"x","a":[1e+21],"c":null}"#
        );
        assert_eq!(e.remove("a"), Some(json!([1e21])));
        assert_eq!(format!("{e:?}"), r#"{"b":"x","c":null}"#);
    }
}
