//! JSON Patch application for the reducer and compaction: atomic (a failing patch
//! leaves the document as it was) and in place (no copy of the document per patch).

use serde_json::Value;

use crate::types::PatchOperation;

/// Why a JSON Patch did not apply.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("operation {operation} ({op}) failed at '{path}': {reason}")]
pub struct PatchFailure {
    /// Index of the failing operation in the patch.
    pub operation: usize,
    /// Its `op`.
    pub op: &'static str,
    /// Its `path`.
    pub path: String,
    /// What went wrong.
    pub reason: String,
}

fn pointer(
    op_index: usize,
    op: &'static str,
    s: String,
) -> Result<json_patch::jsonptr::PointerBuf, PatchFailure> {
    json_patch::jsonptr::PointerBuf::try_from(s.clone()).map_err(|e| PatchFailure {
        operation: op_index,
        op,
        path: s,
        reason: e.to_string(),
    })
}

/// Converts our operations (owned) into the `json-patch` crate's, moving values.
fn convert(ops: Vec<PatchOperation>) -> Result<Vec<json_patch::PatchOperation>, PatchFailure> {
    use json_patch as jp;
    let mut out = Vec::with_capacity(ops.len());
    for (i, op) in ops.into_iter().enumerate() {
        let tag = op.tag();
        out.push(match op {
            PatchOperation::Add(o) => jp::PatchOperation::Add(jp::AddOperation {
                path: pointer(i, tag, o.path)?,
                value: o.value,
            }),
            PatchOperation::Remove(o) => jp::PatchOperation::Remove(jp::RemoveOperation {
                path: pointer(i, tag, o.path)?,
            }),
            PatchOperation::Replace(o) => jp::PatchOperation::Replace(jp::ReplaceOperation {
                path: pointer(i, tag, o.path)?,
                value: o.value,
            }),
            PatchOperation::Move(o) => jp::PatchOperation::Move(jp::MoveOperation {
                from: pointer(i, tag, o.from)?,
                path: pointer(i, tag, o.path)?,
            }),
            PatchOperation::Copy(o) => jp::PatchOperation::Copy(jp::CopyOperation {
                from: pointer(i, tag, o.from)?,
                path: pointer(i, tag, o.path)?,
            }),
            PatchOperation::Test(o) => jp::PatchOperation::Test(jp::TestOperation {
                path: pointer(i, tag, o.path)?,
                value: o.value,
            }),
        });
    }
    Ok(out)
}

/// The most a patched document may grow to, in bytes of its JSON, by default (64 MiB).
/// Only `copy` can make a document grow beyond the size of the patch that carries it
/// (a small patch copying a document into itself repeatedly doubles it each time), so
/// it is what the bound checks.
pub const MAX_PATCHED_DOCUMENT_BYTES: usize = 64 << 20;

/// The size of `v`'s JSON text, approximately (numbers count 8 bytes, escapes are not
/// counted), walking at most until it passes `budget`: the result is then `> budget`.
pub fn json_size_at_most(v: &Value, budget: usize) -> usize {
    fn walk(v: &Value, total: &mut usize, budget: usize) {
        if *total > budget {
            return;
        }
        match v {
            Value::Null => *total += 4,
            Value::Bool(_) => *total += 5,
            Value::Number(_) => *total += 8,
            Value::String(s) => *total += s.len() + 2,
            Value::Array(a) => {
                *total += 2 + a.len();
                for x in a {
                    walk(x, total, budget);
                    if *total > budget {
                        return;
                    }
                }
            }
            Value::Object(o) => {
                *total += 2 + o.len();
                for (k, x) in o {
                    *total += k.len() + 3;
                    walk(x, total, budget);
                    if *total > budget {
                        return;
                    }
                }
            }
        }
    }
    let mut total = 0;
    walk(v, &mut total, budget);
    total
}

/// Applies `ops` to `doc` atomically, in place: on failure `doc` is unchanged. A patch
/// whose `copy` operations would make the document larger than
/// [`MAX_PATCHED_DOCUMENT_BYTES`] fails (see [`apply_patch_within`]).
pub fn apply_patch(doc: &mut Value, ops: Vec<PatchOperation>) -> Result<(), PatchFailure> {
    apply_patch_within(doc, ops, MAX_PATCHED_DOCUMENT_BYTES)
}

/// [`apply_patch`] with the document bounded to `max_bytes` of JSON after each `copy`.
pub fn apply_patch_within(
    doc: &mut Value,
    ops: Vec<PatchOperation>,
    max_bytes: usize,
) -> Result<(), PatchFailure> {
    let has_copy = ops.iter().any(|o| matches!(o, PatchOperation::Copy(_)));
    let converted = convert(ops)?;
    if has_copy {
        // Op by op, so that each copy is measured where it lands; the original is kept
        // to restore the document when one fails.
        let original = doc.clone();
        let mut size = json_size_at_most(doc, max_bytes);
        for (i, op) in converted.iter().enumerate() {
            if let Err(e) = json_patch::patch(doc, std::slice::from_ref(op)) {
                *doc = original;
                return Err(PatchFailure {
                    operation: i,
                    op: op_name(op),
                    path: op.path().to_string(),
                    reason: e.kind.to_string(),
                });
            }
            if let json_patch::PatchOperation::Copy(c) = op {
                let added = c
                    .path
                    .resolve(doc)
                    .map(|v| json_size_at_most(v, max_bytes))
                    .unwrap_or(0);
                size = size.saturating_add(added);
                if size > max_bytes {
                    *doc = original;
                    return Err(PatchFailure {
                        operation: i,
                        op: "copy",
                        path: c.path.to_string(),
                        reason: format!("the document would grow past {max_bytes} bytes of JSON"),
                    });
                }
            }
        }
        return Ok(());
    }
    json_patch::patch(doc, &converted).map_err(|e| {
        let (op, path) = converted
            .get(e.operation)
            .map(|o| (op_name(o), o.path().to_string()))
            .unwrap_or(("?", String::new()));
        PatchFailure {
            operation: e.operation,
            op,
            path,
            reason: e.kind.to_string(),
        }
    })
}

fn op_name(op: &json_patch::PatchOperation) -> &'static str {
    match op {
        json_patch::PatchOperation::Add(_) => "add",
        json_patch::PatchOperation::Remove(_) => "remove",
        json_patch::PatchOperation::Replace(_) => "replace",
        json_patch::PatchOperation::Move(_) => "move",
        json_patch::PatchOperation::Copy(_) => "copy",
        json_patch::PatchOperation::Test(_) => "test",
    }
}

/// Applies `ops` to a document that may be absent (`None`, the reference's
/// `undefined` state): while it is absent only whole-document `add`/`replace` can
/// apply; anything else fails and leaves the document absent.
pub fn apply_patch_optional(
    doc: &mut Option<Value>,
    ops: Vec<PatchOperation>,
) -> Result<(), PatchFailure> {
    if let Some(d) = doc {
        return apply_patch(d, ops);
    }
    let mut ops = ops.into_iter().enumerate();
    let mut value = loop {
        let Some((i, op)) = ops.next() else {
            return Ok(());
        };
        let fail = |reason: &str, op: &PatchOperation| PatchFailure {
            operation: i,
            op: op.tag(),
            path: op.path().to_owned(),
            reason: reason.to_owned(),
        };
        if !op.path().is_empty() {
            return Err(fail("the document is undefined", &op));
        }
        match op {
            PatchOperation::Add(o) => break o.value,
            PatchOperation::Replace(o) => break o.value,
            PatchOperation::Remove(_) => continue,
            other => return Err(fail("the document is undefined", &other)),
        }
    };
    let rest: Vec<PatchOperation> = ops.map(|(_, o)| o).collect();
    apply_patch(&mut value, rest)?;
    *doc = Some(value);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(v: serde_json::Value) -> PatchOperation {
        serde_json::from_value(v).unwrap()
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
}
