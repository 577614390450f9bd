//! JSON Patch (RFC 6902) operations as carried by `STATE_DELTA.delta` and
//! `ACTIVITY_DELTA.patch`. Members an operation does not define are kept (RFC 6902 §4).

use serde_json::Value;

use crate::wire::de::Pointer;

wire_struct! {
    /// `add`: insert `value` at `path`.
    pub struct AddOperation [open] {
        /// Target (JSON Pointer).
        req path: String = "path" via Pointer,
        /// Value to insert (`null` allowed).
        req value: Value = "value",
    }
}

wire_struct! {
    /// `remove`: remove the value at `path`.
    pub struct RemoveOperation [open] {
        /// Target (JSON Pointer).
        req path: String = "path" via Pointer,
    }
}

wire_struct! {
    /// `replace`: replace the value at `path`.
    pub struct ReplaceOperation [open] {
        /// Target (JSON Pointer).
        req path: String = "path" via Pointer,
        /// New value (`null` allowed).
        req value: Value = "value",
    }
}

wire_struct! {
    /// `move`: move the value at `from` to `path`.
    pub struct MoveOperation [open] {
        /// Source (JSON Pointer).
        req from: String = "from" via Pointer,
        /// Target (JSON Pointer).
        req path: String = "path" via Pointer,
    }
}

wire_struct! {
    /// `copy`: copy the value at `from` to `path`.
    pub struct CopyOperation [open] {
        /// Source (JSON Pointer).
        req from: String = "from" via Pointer,
        /// Target (JSON Pointer).
        req path: String = "path" via Pointer,
    }
}

wire_struct! {
    /// `test`: the value at `path` must equal `value`.
    pub struct TestOperation [open] {
        /// Target (JSON Pointer).
        req path: String = "path" via Pointer,
        /// Expected value (`null` allowed).
        req value: Value = "value",
    }
}

wire_union! {
    /// One JSON Patch operation, discriminated by `op`.
    pub enum PatchOperation : tag "op", expecting "a JSON Patch operation with an `op` of add, remove, replace, move, copy or test" {
        /// `add`.
        Add(AddOperation) = "add",
        /// `remove`.
        Remove(RemoveOperation) = "remove",
        /// `replace`.
        Replace(ReplaceOperation) = "replace",
        /// `move`.
        Move(MoveOperation) = "move",
        /// `copy`.
        Copy(CopyOperation) = "copy",
        /// `test`.
        Test(TestOperation) = "test",
    }
}

/// A JSON Patch document: operations applied in order.
pub type JsonPatch = Vec<PatchOperation>;

impl PatchOperation {
    /// `add` operation.
    pub fn add(path: impl Into<String>, value: Value) -> Self {
        PatchOperation::Add(AddOperation {
            path: path.into(),
            value,
            ..AddOperation::wire_blank()
        })
    }
    /// `remove` operation.
    pub fn remove(path: impl Into<String>) -> Self {
        PatchOperation::Remove(RemoveOperation {
            path: path.into(),
            ..RemoveOperation::wire_blank()
        })
    }
    /// `replace` operation.
    pub fn replace(path: impl Into<String>, value: Value) -> Self {
        PatchOperation::Replace(ReplaceOperation {
            path: path.into(),
            value,
            ..ReplaceOperation::wire_blank()
        })
    }
    /// `move` operation.
    pub fn move_(from: impl Into<String>, path: impl Into<String>) -> Self {
        PatchOperation::Move(MoveOperation {
            from: from.into(),
            path: path.into(),
            ..MoveOperation::wire_blank()
        })
    }
    /// `copy` operation.
    pub fn copy(from: impl Into<String>, path: impl Into<String>) -> Self {
        PatchOperation::Copy(CopyOperation {
            from: from.into(),
            path: path.into(),
            ..CopyOperation::wire_blank()
        })
    }
    /// `test` operation.
    pub fn test(path: impl Into<String>, value: Value) -> Self {
        PatchOperation::Test(TestOperation {
            path: path.into(),
            value,
            ..TestOperation::wire_blank()
        })
    }

    /// The target path.
    pub fn path(&self) -> &str {
        match self {
            PatchOperation::Add(o) => &o.path,
            PatchOperation::Remove(o) => &o.path,
            PatchOperation::Replace(o) => &o.path,
            PatchOperation::Move(o) => &o.path,
            PatchOperation::Copy(o) => &o.path,
            PatchOperation::Test(o) => &o.path,
        }
    }
}
