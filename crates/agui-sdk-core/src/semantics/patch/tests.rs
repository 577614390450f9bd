use proptest::prelude::*;
use serde_json::Value;

use super::*;

fn op(v: Value) -> PatchOperation {
    serde_json::from_value(v).unwrap()
}

/// The same operations in the `json-patch` crate's types.
fn theirs(ops: &[PatchOperation]) -> Option<Vec<json_patch::PatchOperation>> {
    serde_json::from_value(serde_json::to_value(ops).unwrap()).ok()
}

/// Keys and tokens that exercise escapes, indices and the append token.
const KEYS: &[&str] = &["a", "b", "0", "1", "~", "/", "a/b", "~1", "", "-", "01"];

fn arb_doc() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (0i64..5).prop_map(Value::from),
        "[a-c]{0,3}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 40, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((prop::sample::select(KEYS), inner), 0..4).prop_map(|kv| {
                Value::Object(kv.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
            }),
        ]
    })
}

/// Every pointer into `doc`, the root included.
fn pointers(doc: &Value, here: String, out: &mut Vec<String>) {
    out.push(here.clone());
    match doc {
        Value::Object(o) => {
            for (k, v) in o {
                let token = k.replace('~', "~0").replace('/', "~1");
                pointers(v, format!("{here}/{token}"), out);
            }
        }
        Value::Array(a) => {
            for (i, v) in a.iter().enumerate() {
                pointers(v, format!("{here}/{i}"), out);
            }
        }
        _ => {}
    }
}

/// A pointer: mostly one into the document, or one step past it (a new key, an index
/// past the end, `-`), sometimes one that is not a pointer at all.
fn pick_pointer(existing: &[String], choice: (usize, u8, usize)) -> String {
    let (i, how, k) = choice;
    let base = &existing[i % existing.len()];
    match how % 10 {
        0..=4 => base.clone(),
        5..=7 => format!(
            "{base}/{}",
            KEYS[k % KEYS.len()].replace('~', "~0").replace('/', "~1")
        ),
        8 => format!("{base}/{}", k % 6),
        _ => ["a", "/~2", "/a~"][k % 3].to_owned(),
    }
}

fn arb_case() -> impl Strategy<Value = (Value, Vec<PatchOperation>)> {
    let choice = || (any::<usize>(), any::<u8>(), any::<usize>());
    (
        arb_doc(),
        prop::collection::vec((0u8..6, choice(), choice(), arb_doc()), 0..6),
    )
        .prop_map(|(doc, raw)| {
            let mut existing = Vec::new();
            pointers(&doc, String::new(), &mut existing);
            let ops = raw
                .into_iter()
                .map(|(kind, a, b, value)| {
                    let path = pick_pointer(&existing, a);
                    let from = pick_pointer(&existing, b);
                    match kind {
                        0 => PatchOperation::add(path, value),
                        1 => PatchOperation::remove(path),
                        2 => PatchOperation::replace(path, value),
                        3 => PatchOperation::move_(from, path),
                        4 => PatchOperation::copy(from, path),
                        // A test that passes as often as not.
                        _ => {
                            let found = doc.pointer(&path).cloned();
                            PatchOperation::test(
                                path,
                                if a.1 % 2 == 0 {
                                    found.unwrap_or(value)
                                } else {
                                    value
                                },
                            )
                        }
                    }
                })
                .collect();
            (doc, ops)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    /// A patch has the effect `json-patch` gives it: the same document when it
    /// applies; when it fails, the same failing operation and reason, and the document
    /// exactly as it was (key order included; `json-patch` itself can leave a failed
    /// `move` half done). The size a patcher keeps is the document's own throughout.
    #[test]
    fn a_patch_applies_as_json_patch_applies_it((doc, ops) in arb_case()) {
        let before = serde_json::to_string(&doc).unwrap();
        let mut ours = doc.clone();
        let mut patcher = Patcher::new();
        patcher.size = Some(size_of(&ours));
        let result = patcher.apply(&mut ours, ops.clone());
        prop_assert_eq!(patcher.known_size(), Some(size_of(&ours)), "kept size after {:?}", result);
        match theirs(&ops) {
            None => {
                // An invalid pointer: refused before anything applies.
                let e = result.clone().expect_err("an invalid pointer fails");
                let from = match &ops[e.operation] {
                    PatchOperation::Move(o) => Some(o.from.as_str()),
                    PatchOperation::Copy(o) => Some(o.from.as_str()),
                    _ => None,
                };
                let invalid = |p: &str| Pointer::parse(p).is_err();
                prop_assert!(invalid(&e.path) || from.is_some_and(invalid), "{:?}", e);
                prop_assert_eq!(serde_json::to_string(&ours).unwrap(), before.clone());
            }
            Some(jp) => {
                // json-patch one operation at a time (its own undo of a whole patch can
                // panic: undoing `move /a/b → /a` is a move into itself).
                let mut reference = doc.clone();
                let failed = jp.iter().enumerate().find_map(|(i, op)| {
                    json_patch::patch(&mut reference, std::slice::from_ref(op)).err().map(|e| (i, e))
                });
                match (failed, result.clone()) {
                    (None, Ok(())) => prop_assert_eq!(&ours, &reference),
                    (Some((i, t)), Err(o)) => {
                        prop_assert_eq!(o.operation, i);
                        prop_assert_eq!(o.reason, t.kind.to_string());
                        prop_assert_eq!(serde_json::to_string(&ours).unwrap(), before);
                    }
                    (t, o) => prop_assert!(false, "json-patch: {:?}, ours: {:?}", t, o),
                }
            }
        }
        // Without a kept size (no copy measured yet) the result is the same.
        let mut fresh = doc.clone();
        let again = apply_patch(&mut fresh, ops);
        prop_assert_eq!(serde_json::to_string(&fresh).unwrap(), serde_json::to_string(&ours).unwrap());
        prop_assert_eq!(again, result);
    }
}

#[test]
fn a_self_copying_patch_is_stopped_at_the_bound() {
    let mut doc = serde_json::json!({ "a": "x".repeat(1000) });
    let ops: Vec<PatchOperation> = (0..40)
        .map(|i| op(serde_json::json!({ "op": "copy", "from": "", "path": format!("/c{i}") })))
        .collect();
    let before = doc.clone();
    let err = apply_patch_within(&mut doc, ops, 1 << 20).unwrap_err();
    assert_eq!(err.op, "copy");
    assert!(err.reason.contains("1048576"), "{err}");
    assert!(err.operation < 20, "stopped early: {err}");
    assert_eq!(doc, before, "unchanged");
    // A normal copy passes, and a failing op in a patch with copies restores.
    apply_patch(
        &mut doc,
        vec![op(
            serde_json::json!({ "op": "copy", "from": "/a", "path": "/b" }),
        )],
    )
    .unwrap();
    assert_eq!(doc["b"], doc["a"]);
    let before = doc.clone();
    let err = apply_patch(
        &mut doc,
        vec![
            op(serde_json::json!({ "op": "copy", "from": "/a", "path": "/c" })),
            op(serde_json::json!({ "op": "remove", "path": "/missing" })),
        ],
    )
    .unwrap_err();
    assert_eq!((err.operation, err.op), (1, "remove"));
    assert_eq!(doc, before);
}

#[test]
fn sizes_stop_at_the_budget() {
    let v = serde_json::json!({ "k": ["ab", 1, null, true] });
    assert_eq!(
        json_size_at_most(&v, 1000),
        2 + 1 + 4 + 2 + 4 + 4 + 8 + 4 + 5
    );
    assert!(json_size_at_most(&serde_json::json!(["x".repeat(100), "y".repeat(100)]), 50) > 50);
}

#[test]
fn a_failing_patch_after_a_move_up_is_undone() {
    // json-patch panics undoing this one (the inverse move is a move into itself).
    let mut doc = serde_json::json!({"a": {"b": {"c": 1}}, "z": 0});
    let before = serde_json::to_string(&doc).unwrap();
    let err = apply_patch(
        &mut doc,
        vec![
            PatchOperation::move_("/a/b", "/a"),
            PatchOperation::remove("/missing"),
        ],
    )
    .unwrap_err();
    assert_eq!((err.operation, err.op), (1, "remove"));
    assert_eq!(serde_json::to_string(&doc).unwrap(), before);
}

#[test]
fn a_move_to_a_missing_parent_leaves_the_value_where_it_was() {
    let mut doc = serde_json::json!({"a": 1, "b": 2, "c": 3});
    let before = serde_json::to_string(&doc).unwrap();
    let err = apply_patch(&mut doc, vec![PatchOperation::move_("/a", "/x/y")]).unwrap_err();
    assert_eq!((err.operation, err.reason.as_str()), (0, "path is invalid"));
    assert_eq!(
        serde_json::to_string(&doc).unwrap(),
        before,
        "the value is back in its place"
    );
}

#[test]
fn a_removed_member_leaves_the_others_in_their_order() {
    // As JavaScript's `delete` and Python's `del` leave them.
    let mut doc = serde_json::json!({"a": 1, "b": 2, "c": 3, "d": 4});
    apply_patch(&mut doc, vec![PatchOperation::remove("/b")]).unwrap();
    assert_eq!(
        serde_json::to_string(&doc).unwrap(),
        r#"{"a":1,"c":3,"d":4}"#
    );
    apply_patch(&mut doc, vec![PatchOperation::move_("/a", "/e")]).unwrap();
    assert_eq!(
        serde_json::to_string(&doc).unwrap(),
        r#"{"c":3,"d":4,"e":1}"#
    );
}

#[test]
fn a_patcher_measures_the_document_once_and_keeps_its_size() {
    let mut doc = serde_json::json!({"big": "x".repeat(10_000), "n": [1, 2]});
    let mut p = Patcher::with_limit(22_000);
    assert_eq!(p.known_size(), None, "nothing measured before a copy");
    p.apply(&mut doc, vec![PatchOperation::add("/n/-", 3.into())])
        .unwrap();
    assert_eq!(p.known_size(), None);
    p.apply(&mut doc, vec![PatchOperation::copy("/big", "/big2")])
        .unwrap();
    assert_eq!(p.known_size(), Some(size_of(&doc)));
    for op in [
        PatchOperation::remove("/n/0"),
        PatchOperation::replace("/n", serde_json::json!({"k": null})),
        PatchOperation::move_("/big2", "/moved"),
        PatchOperation::add("", serde_json::json!({"big": "y".repeat(5_000)})),
    ] {
        p.apply(&mut doc, vec![op]).unwrap();
        assert_eq!(p.known_size(), Some(size_of(&doc)));
    }
    // Four copies of 5,000 bytes fit in 22,000; a fifth does not, even after a remove,
    // and the failing patch changes nothing.
    for i in 0..3 {
        p.apply(
            &mut doc,
            vec![PatchOperation::copy("/big", format!("/c{i}"))],
        )
        .unwrap();
    }
    let before = serde_json::to_string(&doc).unwrap();
    let size = p.known_size();
    let err = p
        .apply(
            &mut doc,
            vec![
                PatchOperation::remove("/c0"),
                PatchOperation::copy("/big", "/c3"),
                PatchOperation::copy("/big", "/c4"),
            ],
        )
        .unwrap_err();
    assert_eq!((err.operation, err.op), (2, "copy"), "{err}");
    assert!(err.reason.contains("22000"), "{err}");
    assert_eq!(serde_json::to_string(&doc).unwrap(), before);
    assert_eq!(p.known_size(), size);
}

#[test]
fn an_absent_document_counts_operations_from_the_patch_start() {
    let mut doc = None;
    let err = apply_patch_optional(
        &mut doc,
        vec![
            PatchOperation::add("", serde_json::json!({})),
            PatchOperation::remove("/x"),
        ],
    )
    .unwrap_err();
    assert_eq!(err.operation, 1);
    assert_eq!(doc, None);
}
