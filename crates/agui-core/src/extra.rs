//! [`Extra`]: the keys a protocol object does not define.

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::OnceLock;

use crate::JsonObject;

/// The keys a protocol object does not define, kept verbatim and in order, as the
/// reference parser keeps them (`looseObject`). It reads and writes as a
/// [`JsonObject`] (it dereferences to one); when empty, as it nearly always is, it costs
/// one pointer and no allocation, so that every object (every event, message, part)
/// stays small.
///
/// ```
/// use agui_core::Extra;
/// let mut extra = Extra::default();
/// assert!(extra.is_empty());
/// extra.insert("x-trace".into(), "abc".into());
/// assert_eq!(extra["x-trace"], "abc");
/// ```
#[derive(Clone, Default)]
pub struct Extra(Option<Box<JsonObject>>);

fn empty() -> &'static JsonObject {
    static EMPTY: OnceLock<JsonObject> = OnceLock::new();
    EMPTY.get_or_init(JsonObject::new)
}

impl Extra {
    /// The keys as an owned object.
    pub fn into_map(self) -> JsonObject {
        self.0.map(|b| *b).unwrap_or_default()
    }
}

impl Deref for Extra {
    type Target = JsonObject;

    fn deref(&self) -> &JsonObject {
        match self.0.as_deref() {
            Some(map) => map,
            None => empty(),
        }
    }
}

impl DerefMut for Extra {
    fn deref_mut(&mut self) -> &mut JsonObject {
        self.0.get_or_insert_with(Default::default)
    }
}

impl From<JsonObject> for Extra {
    fn from(map: JsonObject) -> Extra {
        Extra((!map.is_empty()).then(|| Box::new(map)))
    }
}

impl From<Extra> for JsonObject {
    fn from(extra: Extra) -> JsonObject {
        extra.into_map()
    }
}

impl PartialEq for Extra {
    fn eq(&self, other: &Extra) -> bool {
        **self == **other
    }
}

impl PartialEq<JsonObject> for Extra {
    fn eq(&self, other: &JsonObject) -> bool {
        **self == *other
    }
}

impl fmt::Debug for Extra {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<'a> IntoIterator for &'a Extra {
    type Item = (&'a String, &'a serde_json::Value);
    type IntoIter = serde_json::map::Iter<'a>;

    fn into_iter(self) -> Self::IntoIter {
        (**self).iter()
    }
}

impl serde::Serialize for Extra {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        (**self).serialize(s)
    }
}

impl<'de> serde::Deserialize<'de> for Extra {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        JsonObject::deserialize(d).map(Extra::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_and_absent_are_equal_and_cost_a_pointer() {
        let mut touched = Extra::default();
        let _ = touched.get_mut("x");
        assert_eq!(touched, Extra::default());
        assert_eq!(std::mem::size_of::<Extra>(), std::mem::size_of::<usize>());
        let full = Extra::from(JsonObject::from_iter([("k".to_owned(), 1.into())]));
        assert_ne!(full, Extra::default());
        assert_eq!(full.clone().into_map()["k"], 1);
    }
}
