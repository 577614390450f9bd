//! Values as JavaScript sees them. Shared by the core's tests and the fuzz targets
//! (`fuzz/fuzz_targets/common.rs` includes this file), so both compare alike.

use agui_sdk_core::Event;
use serde_json::{Number, Value};

/// Numbers as a double brings them back (protobuf's `number_value`, or any JavaScript
/// reader): integral values as integers, the rest as floats.
pub(crate) fn renumber(v: &mut Value) {
    match v {
        Value::Number(n) => {
            let f = n.as_f64().unwrap();
            let (two_63, two_64) = (2f64.powi(63), 2f64.powi(64));
            *v = if f.fract() == 0.0 && (-two_63..two_63).contains(&f) {
                Value::Number(Number::from(f as i64))
            } else if f.fract() == 0.0 && (0.0..two_64).contains(&f) {
                Value::Number(Number::from(f as u64))
            } else {
                Number::from_f64(f).map_or(Value::Null, Value::Number)
            };
        }
        Value::Array(a) => a.iter_mut().for_each(renumber),
        Value::Object(o) => o.values_mut().for_each(renumber),
        _ => {}
    }
}

/// An event as JavaScript sees it: its JSON, numbers as doubles (key order is not
/// compared: JSON objects are unordered, and JavaScript moves integer-like keys first).
pub(crate) fn js_view(ev: &Event) -> Value {
    let mut v: Value = serde_json::from_str(&ev.to_json_string()).unwrap();
    renumber(&mut v);
    v
}
