//! The one macro that defines a protocol object: its Rust struct, its exact wire
//! JSON form (keys in the reference's declaration order, optional fields omitted when
//! absent, unknown keys kept in `extra`) and a strict, allocation-light decoder.
//!
//! Field kinds:
//! - `req`: required key; missing is an error, the value is `T`.
//! - `opt`: optional key; absent is `None`, an explicit `null` is an error (the reference
//!   rejects `null` as a spelling of "absent").
//! - `nullable`: optional key where `null` is accepted and read as absent
//!   (only `RunAgentInput.state` in 1.0).
//! - `dflt`: optional key that defaults to `T::default()` when absent and is always
//!   written (the reference's parse fills `tools: []` and `context: []`).
//!
//! An object gets `Default` only when every field may be absent (an empty value of an
//! object with a required field would not be valid): build those with their
//! constructors, and set optional fields with struct update from one.
//!
//! `via W` decodes the value as the newtype `W` (which checks a constraint, such as an
//! integer range or a JSON Pointer grammar) and converts it into `T`.

/// Field type for a field kind.
macro_rules! wire_field_ty {
    (req $ty:ty) => { $ty };
    (opt $ty:ty) => { ::core::option::Option<$ty> };
    (nullable $ty:ty) => { ::core::option::Option<$ty> };
    (dflt $ty:ty) => { $ty };
}

/// `Default` for a protocol object only when every field may be absent: an object with
/// a required field has no valid empty value (build it with its constructor, and set
/// optional fields with struct update from it).
macro_rules! wire_default {
    ($name:ident; $($kind:ident $field:ident),*) => {
        wire_default!(@scan $name; [$($kind)*]);
    };
    (@scan $name:ident; [req $($rest:ident)*]) => {};
    (@scan $name:ident; [$first:ident $($rest:ident)*]) => {
        wire_default!(@scan $name; [$($rest)*]);
    };
    (@scan $name:ident; []) => {
        impl ::core::default::Default for $name {
            fn default() -> Self {
                Self::wire_blank()
            }
        }
    };
}

/// The empty value of a field: absent for optional kinds, the type's blank otherwise.
macro_rules! wire_blank_value {
    (opt $ty:ty) => {
        ::core::option::Option::None
    };
    (nullable $ty:ty) => {
        ::core::option::Option::None
    };
    (req $ty:ty) => {
        <$ty as $crate::wire::shape::Blank>::blank()
    };
    (dflt $ty:ty) => {
        <$ty as $crate::wire::shape::Blank>::blank()
    };
}

/// Whether a field kind may be absent.
macro_rules! wire_optional {
    (req) => {
        false
    };
    (opt) => {
        true
    };
    (nullable) => {
        true
    };
    (dflt) => {
        true
    };
}

/// Whether an object keeps the keys it does not define (`[open]`: JSON Patch operations).
macro_rules! wire_open {
    () => {
        false
    };
    (open) => {
        true
    };
}

/// Reads one field value from a `MapAccess`.
macro_rules! wire_read_value {
    ($map:ident, req, $ty:ty) => {
        $map.next_value::<$ty>()?
    };
    ($map:ident, req, $ty:ty, $via:ty) => {
        <$ty>::from($map.next_value::<$via>()?)
    };
    ($map:ident, dflt, $ty:ty) => {
        $map.next_value::<$ty>()?
    };
    ($map:ident, dflt, $ty:ty, $via:ty) => {
        <$ty>::from($map.next_value::<$via>()?)
    };
    ($map:ident, opt, $ty:ty) => {
        $map.next_value::<$crate::wire::de::NonNull<$ty>>()?.0
    };
    ($map:ident, opt, $ty:ty, $via:ty) => {
        <$ty>::from($map.next_value::<$crate::wire::de::NonNull<$via>>()?.0)
    };
    ($map:ident, nullable, $ty:ty) => {
        match $map.next_value::<::core::option::Option<$ty>>()? {
            Some(v) => v,
            None => continue,
        }
    };
}

/// Turns the collected slot into the struct field.
macro_rules! wire_finish {
    (req, $slot:ident, $key:literal) => {
        match $slot {
            Some(v) => v,
            None => return Err(::serde::de::Error::missing_field($key)),
        }
    };
    (opt, $slot:ident, $key:literal) => {
        $slot
    };
    (nullable, $slot:ident, $key:literal) => {
        $slot
    };
    (dflt, $slot:ident, $key:literal) => {
        $slot.unwrap_or_default()
    };
}

/// Writes one field into a `SerializeMap`.
macro_rules! wire_write {
    ($map:ident, req, $key:literal, $val:expr) => {
        ::serde::ser::SerializeMap::serialize_entry($map, $key, &$val)?;
    };
    ($map:ident, dflt, $key:literal, $val:expr) => {
        ::serde::ser::SerializeMap::serialize_entry($map, $key, &$val)?;
    };
    ($map:ident, opt, $key:literal, $val:expr) => {
        if let Some(v) = &$val {
            ::serde::ser::SerializeMap::serialize_entry($map, $key, v)?;
        }
    };
    ($map:ident, nullable, $key:literal, $val:expr) => {
        if let Some(v) = &$val {
            ::serde::ser::SerializeMap::serialize_entry($map, $key, v)?;
        }
    };
}

/// Writes one field as `,"key":value` straight into `out` (see `wire::direct`).
macro_rules! wire_write_direct {
    ($out:ident, req, $key:literal, $val:expr) => {
        $out.extend_from_slice(concat!(",\"", $key, "\":").as_bytes());
        (&&$crate::wire::direct::Direct(&$val)).write_direct($out);
    };
    ($out:ident, dflt, $key:literal, $val:expr) => {
        wire_write_direct!($out, req, $key, $val);
    };
    ($out:ident, opt, $key:literal, $val:expr) => {
        if let Some(v) = &$val {
            $out.extend_from_slice(concat!(",\"", $key, "\":").as_bytes());
            (&&$crate::wire::direct::Direct(v)).write_direct($out);
        }
    };
    ($out:ident, nullable, $key:literal, $val:expr) => {
        wire_write_direct!($out, opt, $key, $val);
    };
}

/// Sets a field from a string member (see `event::plain`), or returns `None` from the
/// reader when its type is not read so, or it has a `via` (a constraint to check).
macro_rules! wire_plain_set {
    ($out:ident . $field:ident, $m:ident, $blank:ident, $kind:ident, $ty:ty, $via:ty) => {
        return ::core::option::Option::None
    };
    ($out:ident . $field:ident, $m:ident, $blank:ident, req, $ty:ty) => {
        $out.$field = (&&$crate::wire::plain::Plain::<$ty>::NEW).read_plain($m, $blank)?
    };
    ($out:ident . $field:ident, $m:ident, $blank:ident, dflt, $ty:ty) => {
        $out.$field = (&&$crate::wire::plain::Plain::<$ty>::NEW).read_plain($m, $blank)?
    };
    ($out:ident . $field:ident, $m:ident, $blank:ident, $kind:ident, $ty:ty) => {
        $out.$field = Some((&&$crate::wire::plain::Plain::<$ty>::NEW).read_plain($m, $blank)?)
    };
}

/// Hands a field's strings to `keep` (see `event::plain::Plain`).
macro_rules! wire_give {
    ($value:expr, $keep:ident, req, $ty:ty) => {
        (&&$crate::wire::plain::Plain::<$ty>::NEW).give($value, $keep)
    };
    ($value:expr, $keep:ident, dflt, $ty:ty) => {
        (&&$crate::wire::plain::Plain::<$ty>::NEW).give($value, $keep)
    };
    ($value:expr, $keep:ident, $kind:ident, $ty:ty) => {
        if let Some(v) = $value {
            (&&$crate::wire::plain::Plain::<$ty>::NEW).give(v, $keep)
        }
    };
}

/// 1 for a required field kind, 0 for the others.
macro_rules! wire_required {
    (req) => {
        1
    };
    ($kind:ident) => {
        0
    };
}

/// Defines a protocol object. See the module documentation.
macro_rules! wire_struct {
    (
        $(#[$meta:meta])*
        pub struct $name:ident $([$open:ident])? {
            $(
                $(#[$fmeta:meta])*
                $kind:ident $field:ident : $ty:ty = $key:literal $(via $via:ty)?
            ),* $(,)?
        }
    ) => {
        wire_struct! {
            @define
            $(#[$meta])*
            pub struct $name $([$open])? {
                $( $(#[$fmeta])* $kind $field : $ty = $key $(via $via)? ),*
            }
        }
    };
    (
        @define
        $(#[$meta:meta])*
        pub struct $name:ident $([$open:ident])? {
            $(
                $(#[$fmeta:meta])*
                $kind:ident $field:ident : $ty:ty = $key:literal $(via $via:ty)?
            ),* $(,)?
        }
    ) => {
        wire_default!($name; $($kind $field),*);

        impl $crate::wire::de::WireObject for $name {
            fn visit_map_skipping<'de, A: ::serde::de::MapAccess<'de>>(
                map: A,
                skip: &'static str,
            ) -> ::core::result::Result<Self, A::Error> {
                $name::visit_map_skipping(map, skip)
            }

            #[allow(unused_mut, unused_variables, unreachable_code, unused_imports)]
            #[inline]
            fn read_plain(
                members: &[$crate::wire::plain::Member<'_>],
                skip: &str,
                blank: &mut impl FnMut(usize) -> ::std::string::String,
            ) -> ::core::option::Option<Self> {
                use $crate::wire::plain::{NotPlain as _, ReadPlain as _};
                let mut out = Self::wire_blank();
                let mut required = 0usize;
                for m in members {
                    match m.key {
                        $(
                            $key => {
                                wire_plain_set!(out.$field, m, blank, $kind, $ty $(, $via)?);
                                required += wire_required!($kind);
                            }
                        )*
                        k if k == skip => {}
                        _ => return ::core::option::Option::None,
                    }
                }
                (required == 0 $(+ wire_required!($kind))*).then_some(out)
            }

            #[allow(unused_imports, unused_variables)]
            #[inline]
            fn give_strings(self, keep: &mut impl FnMut(::std::string::String)) {
                use $crate::wire::plain::{GiveString as _, NoString as _};
                $( wire_give!(self.$field, keep, $kind, $ty); )*
            }
        }

        impl $crate::wire::shape::Blank for $name {
            fn blank() -> Self {
                Self::wire_blank()
            }
        }

        impl $name {
            /// Every field at its empty value, required ones included: the starting
            /// point of this crate's constructors, which then set the required fields.
            #[allow(dead_code)]
            pub(crate) fn wire_blank() -> Self {
                $name {
                    $( $field: wire_blank_value!($kind $ty), )*
                    extra: ::core::default::Default::default(),
                }
            }
        }

        impl $crate::wire::shape::WireShape for $name {
            const SHAPE: $crate::wire::shape::Shape =
                $crate::wire::shape::Shape::Obj(&$crate::wire::shape::Obj {
                    fields: &[$(
                        $crate::wire::shape::Field {
                            key: $key,
                            shape: <$ty as $crate::wire::shape::WireShape>::SHAPE,
                            optional: wire_optional!($kind),
                        }
                    ),*],
                    spec_open: wire_open!($($open)?),
                });
        }

        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq)]
        pub struct $name {
            $(
                $(#[$fmeta])*
                pub $field: wire_field_ty!($kind $ty),
            )*
            /// Keys this version of the protocol does not define, kept verbatim and in
            /// order, as the reference parser keeps them (`looseObject`).
            pub extra: $crate::Extra,
        }

        impl $name {
            /// The wire keys this object defines, in the reference's order.
            pub const WIRE_KEYS: &'static [&'static str] = &[$($key),*];

            #[allow(unused_mut, unused_variables, clippy::needless_update)]
            pub(crate) fn visit_map_skipping<'de, A: ::serde::de::MapAccess<'de>>(
                mut map: A,
                skip: &'static str,
            ) -> ::core::result::Result<Self, A::Error> {
                $( let mut $field: ::core::option::Option<$ty> = None; )*
                let mut extra = $crate::json_text::ObjectCollector::default();
                while let Some(key) = map.next_key::<$crate::wire::de::Key<'de>>()? {
                    let key = key.as_str();
                    match key {
                        $(
                            $key => {
                                $field = Some(wire_read_value!(map, $kind, $ty $(, $via)?));
                            }
                        )*
                        k if k == skip => {
                            let again: $crate::wire::de::Key<'de> = map.next_value()?;
                            $crate::wire::de::check_repeated_tag::<A::Error>(skip, again.as_str())?;
                        }
                        _ => {
                            $crate::wire::de::note_unknown_key();
                            extra.entry(key, &mut map)?;
                        }
                    }
                }
                Ok($name {
                    $( $field: wire_finish!($kind, $field, $key), )*
                    extra: $crate::Extra::from_text(extra.finish()),
                })
            }

            /// Writes this object's fields (not its union tag) into `map`. When `tag` is
            /// `Some((after, key, value))`, the tag entry is written right after the field
            /// named `after` (messages carry `role` after `id`).
            #[allow(unused_variables)]
            pub(crate) fn write_fields<M: ::serde::ser::SerializeMap>(
                &self,
                map: &mut M,
                tag: ::core::option::Option<(&'static str, &'static str, &'static str)>,
            ) -> ::core::result::Result<(), M::Error> {
                $(
                    wire_write!(map, $kind, $key, self.$field);
                    if let Some((after, k, v)) = tag {
                        if after == stringify!($field) {
                            ::serde::ser::SerializeMap::serialize_entry(map, k, v)?;
                        }
                    }
                )*
                for (k, v) in self.extra.entries() {
                    ::serde::ser::SerializeMap::serialize_entry(map, &*k, v)?;
                }
                Ok(())
            }
        }

        impl $name {
            /// Writes this object's fields and unknown keys, each as `,"key":value`,
            /// straight into `out` (after a union tag: see `wire::direct`).
            #[allow(dead_code, unused_imports)]
            #[inline]
            pub(crate) fn write_fields_direct(&self, out: &mut ::std::vec::Vec<u8>) {
                use $crate::wire::direct::{WriteDirect as _, WriteViaSerde as _};
                $( wire_write_direct!(out, $kind, $key, self.$field); )*
                $crate::wire::direct::write_extra(&self.extra, out);
            }
        }

        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(&self, s: S) -> ::core::result::Result<S::Ok, S::Error> {
                let mut map = s.serialize_map(None)?;
                self.write_fields(&mut map, None)?;
                ::serde::ser::SerializeMap::end(map)
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> ::core::result::Result<Self, D::Error> {
                struct V;
                impl<'de> ::serde::de::Visitor<'de> for V {
                    type Value = $name;
                    fn expecting(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                        f.write_str(concat!("a ", stringify!($name), " object"))
                    }
                    fn visit_map<A: ::serde::de::MapAccess<'de>>(self, map: A) -> ::core::result::Result<$name, A::Error> {
                        $name::visit_map_skipping(map, "")
                    }
                }
                d.deserialize_map(V)
            }
        }
    };
}

/// Defines an enum of protocol objects discriminated by a string tag (`type`, `role`,
/// `op`): serialization writes the tag (first, or after the member's `after` field),
/// deserialization finds the tag wherever it stands without buffering when it comes first.
macro_rules! wire_union {
    (
        $(#[$meta:meta])*
        pub enum $name:ident : tag $tag:literal $(, after $after:literal)? , expecting $exp:literal {
            $(
                $(#[$vmeta:meta])*
                $variant:ident ( $inner:ty ) = $wire:literal
            ),* $(,)?
        }
    ) => {
        impl $crate::wire::shape::WireShape for $name {
            const SHAPE: $crate::wire::shape::Shape =
                $crate::wire::shape::Shape::Union(&$crate::wire::shape::Union {
                    tag: $tag,
                    members: &[$(
                        ($wire, $crate::wire::shape::member_obj(
                            <$inner as $crate::wire::shape::WireShape>::SHAPE,
                        ))
                    ),*],
                });
        }

        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq)]
        #[allow(clippy::large_enum_variant)]
        pub enum $name {
            $(
                $(#[$vmeta])*
                $variant($inner),
            )*
        }

        impl $name {
            /// The tag values this union accepts, in the reference's order.
            pub const TAGS: &'static [&'static str] = &[$($wire),*];

            /// The wire value of this member's tag.
            pub fn tag(&self) -> &'static str {
                match self {
                    $( $name::$variant(_) => $wire, )*
                }
            }

            /// Writes the canonical JSON of this value straight into `out`, as its
            /// `Serialize` writes it: the tag first, then the member's fields (see
            /// `wire::direct`). A union whose tag comes after a field goes through
            /// the serializer.
            #[allow(dead_code)]
            #[inline]
            pub(crate) fn write_json_direct(&self, out: &mut ::std::vec::Vec<u8>) {
                #[allow(unused_mut, unused_assignments)]
                let mut after: Option<&'static str> = None;
                $( after = Some($after); )?
                if after.is_some() {
                    $crate::wire::write_canonical(self, out);
                    return;
                }
                match self {
                    $(
                        $name::$variant(v) => {
                            out.extend_from_slice(concat!("{\"", $tag, "\":\"", $wire, "\"").as_bytes());
                            v.write_fields_direct(out);
                            out.push(b'}');
                        }
                    )*
                }
            }

            /// The member tagged `tag` from members that are all strings (see
            /// `event::plain`); `None` for what the exact decoder must judge.
            #[allow(dead_code)]
            #[inline]
            pub(crate) fn read_plain(
                tag: &str,
                members: &[$crate::wire::plain::Member<'_>],
                blank: &mut impl FnMut(usize) -> ::std::string::String,
            ) -> ::core::option::Option<Self> {
                match tag {
                    $( $wire => <$inner as $crate::wire::de::WireObject>::read_plain(members, $tag, blank).map($name::$variant), )*
                    _ => ::core::option::Option::None,
                }
            }

            /// Hands the value's string fields to `keep` and drops the rest (see
            /// `event::plain::Plain`).
            #[allow(dead_code)]
            #[inline]
            pub(crate) fn give_strings(self, keep: &mut impl FnMut(::std::string::String)) {
                match self {
                    $( $name::$variant(v) => <$inner as $crate::wire::de::WireObject>::give_strings(v, keep), )*
                }
            }

            /// Unknown keys carried by this member.
            pub fn extra(&self) -> &$crate::Extra {
                match self {
                    $( $name::$variant(v) => &v.extra, )*
                }
            }
        }

        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(&self, s: S) -> ::core::result::Result<S::Ok, S::Error> {
                use ::serde::ser::SerializeMap;
                let mut map = s.serialize_map(None)?;
                #[allow(unused_mut, unused_assignments)]
                let mut after: Option<&'static str> = None;
                $( after = Some($after); )?
                match self {
                    $(
                        $name::$variant(v) => {
                            match after {
                                None => {
                                    map.serialize_entry($tag, $wire)?;
                                    v.write_fields(&mut map, None)?;
                                }
                                Some(a) => v.write_fields(&mut map, Some((a, $tag, $wire)))?,
                            }
                        }
                    )*
                }
                map.end()
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> ::core::result::Result<Self, D::Error> {
                struct V;
                impl<'de> ::serde::de::Visitor<'de> for V {
                    type Value = $name;
                    fn expecting(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                        f.write_str($exp)
                    }
                    fn visit_map<A: ::serde::de::MapAccess<'de>>(self, map: A) -> ::core::result::Result<$name, A::Error> {
                        $crate::wire::de::visit_tagged(map, $tag, |tag, rest| match tag {
                            $( $wire => <$inner as $crate::wire::de::WireObject>::visit_map_skipping(rest, $tag).map($name::$variant), )*
                            other => Err($crate::wire::de::unknown_tag::<A::Error>($tag, other, $name::TAGS)),
                        })
                    }
                }
                d.deserialize_map(V)
            }
        }
    };
}
