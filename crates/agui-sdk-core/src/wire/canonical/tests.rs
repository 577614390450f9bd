use super::*;
use proptest::prelude::*;
use serde_json::Value;

fn serde_json_bytes<T: Serialize + ?Sized>(v: &T) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let mut ser = serde_json::Serializer::with_formatter(&mut out, js_number::JsFormatter);
    v.serialize(&mut ser).map_err(|e| e.to_string())?;
    Ok(out)
}

fn ours<T: Serialize + ?Sized>(v: &T) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    write(v, &mut out).map_err(|e| e.to_string())?;
    Ok(out)
}

fn text() -> impl Strategy<Value = String> {
    // Plain text, every control character, quotes, backslashes, DEL, non-ASCII
    // and astral characters, at lengths around the kernel's block sizes.
    prop_oneof![
        "[a-z ]{0,80}",
        "[\\x00-\\x7f]{0,70}",
        "[\"\\\\\\x00-\\x1f\\x7fa-zé€😀]{0,40}",
        any::<String>(),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        prop_oneof![
            Just(1e21),
            Just(-0.0),
            Just(1.5e-7),
            Just(0.1),
            Just(123456.789)
        ]
        .prop_map(Value::from),
        text().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 64, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
            prop::collection::vec((text(), inner), 0..8)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn writes_what_serde_json_writes(v in value()) {
        prop_assert_eq!(ours(&v), serde_json_bytes(&v));
        // The same value held as raw text (a free-form field) writes as itself.
        let raw = serde_json::value::to_raw_value(&v).unwrap();
        prop_assert_eq!(ours(&raw), serde_json_bytes(&raw));
    }

    #[test]
    fn strings_escape_as_serde_json_escapes(s in text()) {
        prop_assert_eq!(ours(&s), serde_json_bytes(&s));
    }
}

#[test]
fn other_shapes_write_as_serde_json_writes() {
    use std::collections::BTreeMap;
    #[derive(serde::Serialize)]
    enum E {
        Unit,
        New(u8),
        Tuple(u8, &'static str),
        Struct { a: f32, b: Option<()> },
    }
    #[derive(serde::Serialize)]
    struct Tuple(i8, char);
    let ints: BTreeMap<i32, bool> = [(-1, true), (2, false)].into();
    let bools: BTreeMap<bool, ()> = [(true, ())].into();
    let floats: BTreeMap<String, f32> = [("x".to_owned(), f32::NAN)].into();
    assert_eq!(ours(&E::Unit), serde_json_bytes(&E::Unit));
    assert_eq!(ours(&E::New(3)), serde_json_bytes(&E::New(3)));
    assert_eq!(
        ours(&E::Tuple(1, "\n")),
        serde_json_bytes(&E::Tuple(1, "\n"))
    );
    let s = E::Struct { a: 0.1, b: None };
    assert_eq!(ours(&s), serde_json_bytes(&s));
    assert_eq!(ours(&Tuple(-3, '"')), serde_json_bytes(&Tuple(-3, '"')));
    assert_eq!(ours(&ints), serde_json_bytes(&ints));
    assert_eq!(ours(&bools), serde_json_bytes(&bools));
    assert_eq!(ours(&floats), serde_json_bytes(&floats));
    assert_eq!(ours(&(1u128 << 100)), serde_json_bytes(&(1u128 << 100)));
    let bytes = serde_bytes_like(&[0, 7, 255]);
    assert_eq!(ours(&bytes), serde_json_bytes(&bytes));
    // A key that cannot be a string is refused, as serde_json refuses it.
    let bad: BTreeMap<Vec<u8>, u8> = [(vec![1], 1)].into();
    assert!(ours(&bad).is_err() && serde_json_bytes(&bad).is_err());
}

/// A byte string, serialized with `serialize_bytes`.
fn serde_bytes_like(b: &'static [u8]) -> impl Serialize {
    struct B(&'static [u8]);
    impl Serialize for B {
        fn serialize<S: ser::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.serialize_bytes(self.0)
        }
    }
    B(b)
}
