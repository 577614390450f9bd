//! The JSON shape of every protocol object, derived from its declaration: which keys
//! each object defines (and whether they are optional), which positions are opaque
//! JSON, which arrays hold what, and which positions are unions discriminated by a tag.
//!
//! `wire_struct!` and `wire_union!` implement [`WireShape`] for what they declare, so
//! enforcement and optional-null omission read the same declarations as the typed
//! decoder and cannot drift from them.

/// The shape of a JSON position.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Shape {
    /// Opaque or scalar: passed whole (state, metadata, payloads, strings, numbers,
    /// closed string sets).
    Any,
    /// An object with known keys.
    Obj(&'static Obj),
    /// An array of elements of one shape.
    Arr(&'static Shape),
    /// A union of objects discriminated by a tag key.
    Union(&'static Union),
    /// A string or an array of elements of one shape (message content).
    TextOr(&'static Shape),
}

/// One key of an object.
#[derive(Debug)]
pub(crate) struct Field {
    pub key: &'static str,
    pub shape: Shape,
    pub optional: bool,
}

/// An object shape.
#[derive(Debug)]
pub(crate) struct Obj {
    pub fields: &'static [Field],
    /// Keys it does not define are kept (JSON Patch operations, RFC 6902 §4).
    pub spec_open: bool,
}

impl Obj {
    pub(crate) fn field(&self, key: &str) -> Option<&'static Field> {
        self.fields.iter().find(|f| f.key == key)
    }
}

/// A discriminated union. A member's object does not list the tag key.
#[derive(Debug)]
pub(crate) struct Union {
    pub tag: &'static str,
    pub members: &'static [(&'static str, &'static Obj)],
}

impl Union {
    pub(crate) fn member(&self, tag: &str) -> Option<&'static Obj> {
        self.members
            .iter()
            .find(|(t, _)| *t == tag)
            .map(|(_, o)| *o)
    }
}

/// A type with a JSON shape.
pub(crate) trait WireShape {
    /// Its shape.
    const SHAPE: Shape;
}

/// The object of a union member (a compile-time error if a member is not an object).
pub(crate) const fn member_obj(shape: Shape) -> &'static Obj {
    match shape {
        Shape::Obj(o) => o,
        _ => panic!("a union member must be an object"),
    }
}

impl<T: WireShape> WireShape for Vec<T> {
    const SHAPE: Shape = Shape::Arr(&T::SHAPE);
}

impl<T: WireShape> WireShape for Box<T> {
    const SHAPE: Shape = T::SHAPE;
}

/// An empty value of a type, valid or not: what a constructor starts from before it
/// sets the required fields (crate-private; the public `Default` exists only where the
/// empty value is a valid one).
pub(crate) trait Blank {
    /// The empty value.
    fn blank() -> Self;
}

/// Leaf types: opaque to enforcement (`Shape::Any`), blank as their `Default`. A type
/// used as a field of a protocol object is listed once, here or beside its definition
/// (or is a protocol object).
macro_rules! leaves {
    ($($t:ty),* $(,)?) => {
        $(
            impl $crate::wire::shape::WireShape for $t {
                const SHAPE: $crate::wire::shape::Shape = $crate::wire::shape::Shape::Any;
            }
            impl $crate::wire::shape::Blank for $t {
                fn blank() -> Self {
                    <$t as Default>::default()
                }
            }
        )*
    };
}

leaves!(
    String,
    bool,
    i64,
    u64,
    serde_json::Value,
    crate::JsonText,
    crate::JsonObject,
);
pub(crate) use leaves;

impl<T> Blank for Vec<T> {
    fn blank() -> Self {
        Vec::new()
    }
}

impl<T: Blank> Blank for Box<T> {
    fn blank() -> Self {
        Box::new(T::blank())
    }
}
