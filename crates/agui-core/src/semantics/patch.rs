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

/// Applies `ops` to `doc` atomically, in place: on failure `doc` is unchanged.
pub fn apply_patch(doc: &mut Value, ops: Vec<PatchOperation>) -> Result<(), PatchFailure> {
    let converted = convert(ops)?;
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
