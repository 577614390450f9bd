//! Merging an event's `metadata` into the metadata a message or tool call keeps as
//! canonical JSON text, without parsing that text into a tree.

use serde_json::Value;

use crate::wire::{string_end, value_end, write_canonical};
use crate::{JsonObject, JsonText};

/// Merges an event's metadata into a message's or a tool call's (the event's keys win,
/// in place; new keys follow in the event's order). Returns whether there was metadata
/// to merge.
///
/// The kept text is spliced: its members are copied as text, and only the event's own
/// values are written, so an event costs a copy of the kept text plus its own
/// metadata, never a parse of what is kept.
pub(super) fn merge_metadata(target: &mut Option<JsonText>, incoming: Option<JsonObject>) -> bool {
    let Some(incoming) = incoming else {
        return false;
    };
    let merged = match target.as_ref().filter(|t| t.is_object()) {
        Some(kept) => merge_text(kept.as_str().as_bytes(), &incoming),
        None => JsonText::from(Value::Object(incoming)),
    };
    *target = Some(merged);
    true
}

/// `kept` (a canonical JSON object) with `incoming`'s members written over it: what
/// parsing `kept`, inserting each incoming member and writing the result gives.
fn merge_text(kept: &[u8], incoming: &JsonObject) -> JsonText {
    // The incoming keys as canonical JSON strings, one after another in `keys`:
    // canonical text spells a key one way, so equal keys have equal texts.
    // Each member: its key's span in `keys`, its value, and whether `kept` had it.
    let mut keys = Vec::with_capacity(incoming.len() * 16);
    let mut members: Vec<(std::ops::Range<usize>, &Value, bool)> = incoming
        .iter()
        .map(|(k, v)| {
            let start = keys.len();
            write_canonical(k.as_str(), &mut keys);
            (start..keys.len(), v, false)
        })
        .collect();

    // Many incoming keys are looked up by hash, a few by a scan.
    let index: Option<std::collections::HashMap<&[u8], usize>> = (members.len() > 16).then(|| {
        members
            .iter()
            .enumerate()
            .map(|(n, (span, _, _))| (&keys[span.clone()], n))
            .collect()
    });
    let mut out = Vec::with_capacity(kept.len() + 64 * incoming.len());
    out.push(b'{');
    let mut first = true;
    let mut i = 1; // past `{`
    while i < kept.len() && kept[i] == b'"' {
        let key_end = string_end(kept, i);
        let value_start = key_end + 1; // past `:`
        let end = value_end(kept, value_start);
        if !first {
            out.push(b',');
        }
        first = false;
        let key = &kept[i..key_end];
        let found = match &index {
            Some(index) => index.get(key).copied(),
            None => members
                .iter()
                .position(|(span, _, _)| &keys[span.clone()] == key),
        };
        match found.map(|n| &mut members[n]) {
            Some((_, value, used)) => {
                out.extend_from_slice(&kept[i..value_start]);
                write_canonical(*value, &mut out);
                *used = true;
            }
            None => out.extend_from_slice(&kept[i..end]),
        }
        // Past the `,` or the closing `}`.
        i = end + 1;
    }
    for (span, value, used) in members {
        if used {
            continue;
        }
        if !first {
            out.push(b',');
        }
        first = false;
        out.extend_from_slice(&keys[span]);
        out.push(b':');
        write_canonical(value, &mut out);
    }
    out.push(b'}');
    JsonText::from_canonical(out)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// What the merge did before: parse, insert, write.
    fn by_parsing(target: &Option<JsonText>, incoming: JsonObject) -> JsonText {
        match target.as_ref().map(JsonText::to_value) {
            Some(Value::Object(mut t)) => {
                for (k, v) in incoming {
                    t.insert(k, v);
                }
                JsonText::from(Value::Object(t))
            }
            _ => JsonText::from(Value::Object(incoming)),
        }
    }

    fn arb_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(Value::from),
            "[a-c\"\\\\é😀\u{1}/]{0,4}".prop_map(Value::String),
        ];
        leaf.prop_recursive(3, 16, 3, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
                prop::collection::vec(("[ab\"é]{0,2}", inner), 0..3)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    fn arb_object() -> impl Strategy<Value = JsonObject> {
        prop::collection::vec(("[abc\"\\\\é\u{2}/]{0,3}", arb_value()), 0..24)
            .prop_map(|kv| kv.into_iter().collect())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// The spliced text is exactly what parsing, inserting and writing gives.
        #[test]
        fn a_merge_is_what_parsing_gives(
            kept in prop::option::of(prop_oneof![
                arb_object().prop_map(Value::Object),
                arb_value(),
            ]),
            incoming in arb_object(),
        ) {
            let target = kept.map(JsonText::from);
            let want = by_parsing(&target, incoming.clone());
            let mut got = target.clone();
            prop_assert!(merge_metadata(&mut got, Some(incoming)));
            prop_assert_eq!(got.as_ref().map(JsonText::as_str), Some(want.as_str()));
        }
    }

    #[test]
    fn no_incoming_metadata_changes_nothing() {
        let mut kept = Some(JsonText::parse(r#"{"a":1}"#).unwrap());
        assert!(!merge_metadata(&mut kept, None));
        assert_eq!(kept.unwrap().as_str(), r#"{"a":1}"#);
    }

    #[test]
    fn incoming_keys_win_in_place_and_new_ones_follow() {
        let mut kept = Some(JsonText::parse(r#"{"a":1,"b":{"x":[1,2]},"c":"s"}"#).unwrap());
        let incoming: JsonObject = serde_json::from_str(r#"{"d":true,"b":null,"a\"q":2}"#).unwrap();
        merge_metadata(&mut kept, Some(incoming));
        assert_eq!(
            kept.unwrap().as_str(),
            r#"{"a":1,"b":null,"c":"s","d":true,"a\"q":2}"#
        );
    }
}
