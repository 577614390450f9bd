//! JSON Patch (RFC 6902) application for the reducer, compaction and agents: atomic (a
//! failing patch leaves the document exactly as it was, key order included), in place,
//! and in time and memory proportional to what the patch touches, never to the
//! document.
//!
//! Each operation records how to undo itself as it applies (the values it removed or
//! replaced, moved, not copied); a failing operation replays that log backwards. The
//! `copy` bound ([`MAX_PATCHED_DOCUMENT_BYTES`]) is checked against the document's size,
//! which a [`Patcher`] measures once, at the first `copy` it sees, and then keeps up to
//! date from the sizes of the values each operation adds and removes.
//!
//! Pointers resolve as the `json-patch` crate resolves them (a property test holds the
//! two to the same results). Two things differ, both towards the reference clients: a
//! removed object member leaves the other members in their order (as JavaScript's
//! `delete` and Python's `del` do; `json-patch` moves the last member into its place),
//! and a `move` whose target does not resolve puts the value back where it was
//! (`json-patch` leaves it removed).

use std::borrow::Cow;

use json_patch::jsonptr::{Pointer, Token};
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

/// The most a patched document may grow to, in bytes of its JSON, by default (64 MiB).
/// Only `copy` can make a document grow beyond the size of the patch that carries it
/// (a small patch copying a document into itself repeatedly doubles it each time), so
/// it is what the bound checks.
pub const MAX_PATCHED_DOCUMENT_BYTES: usize = 64 << 20;

/// The size of `v`'s JSON text, approximately (numbers count 8 bytes, escapes are not
/// counted), walking at most until it passes `budget`: the result is then `> budget`.
///
/// An object member counts its key's length plus 4 (quotes, colon, comma) and an array
/// element 1 (its comma), so that a document's size changes by exactly the size of a
/// member or element added or removed.
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

fn size_of(v: &Value) -> usize {
    json_size_at_most(v, usize::MAX)
}

/// Applies JSON Patches to one document, patch after patch, keeping what it needs to
/// bound `copy` without measuring the document again for each patch.
///
/// Use one `Patcher` per document for as long as patches keep coming to it, and call
/// [`reset`](Self::reset) whenever the document is replaced or changed other than
/// through this patcher (a snapshot): the size it keeps is then measured again, once,
/// at the next `copy`.
///
/// ```
/// use agui_sdk_core::semantics::patch::Patcher;
/// use agui_sdk_core::PatchOperation;
/// use serde_json::json;
///
/// let mut doc = json!({"a": [1, 2]});
/// let mut patcher = Patcher::new();
/// patcher.apply(&mut doc, vec![PatchOperation::copy("/a", "/b")]).unwrap();
/// assert_eq!(doc, json!({"a": [1, 2], "b": [1, 2]}));
///
/// // A failing operation leaves the document as it was.
/// let err = patcher
///     .apply(&mut doc, vec![PatchOperation::remove("/a"), PatchOperation::remove("/x")])
///     .unwrap_err();
/// assert_eq!((err.operation, err.op), (1, "remove"));
/// assert_eq!(doc, json!({"a": [1, 2], "b": [1, 2]}));
/// ```
#[derive(Debug, Clone)]
pub struct Patcher {
    max_bytes: usize,
    /// The document's size as [`json_size_at_most`] counts it, once measured.
    size: Option<usize>,
}

impl Default for Patcher {
    fn default() -> Self {
        Patcher::new()
    }
}

impl Patcher {
    /// A patcher bounding documents to [`MAX_PATCHED_DOCUMENT_BYTES`].
    pub fn new() -> Self {
        Patcher::with_limit(MAX_PATCHED_DOCUMENT_BYTES)
    }

    /// A patcher bounding documents to `max_bytes` of JSON after each `copy`.
    pub fn with_limit(max_bytes: usize) -> Self {
        Patcher {
            max_bytes,
            size: None,
        }
    }

    /// Forgets the document's size: call it when the document was replaced or changed
    /// other than through [`apply`](Self::apply).
    pub fn reset(&mut self) {
        self.size = None;
    }

    /// The document's size in bytes of JSON (as [`json_size_at_most`] counts it), when
    /// this patcher has measured it (at the first `copy` since it was made or reset).
    pub fn known_size(&self) -> Option<usize> {
        self.size
    }

    /// Applies `ops` to `doc` atomically, in place: on failure `doc` is unchanged. A
    /// `copy` that would make the document larger than the limit fails.
    ///
    /// # Errors
    /// The first operation that does not apply: an invalid pointer (before any
    /// operation applies), a path or `from` that does not resolve, a failed `test`, a
    /// `move` into its own child, or a `copy` past the limit.
    pub fn apply(&mut self, doc: &mut Value, ops: Vec<PatchOperation>) -> Result<(), PatchFailure> {
        for (i, op) in ops.iter().enumerate() {
            if let PatchOperation::Move(o) = op {
                check_pointer(i, "move", &o.from)?;
            } else if let PatchOperation::Copy(o) = op {
                check_pointer(i, "copy", &o.from)?;
            }
            check_pointer(i, op.tag(), op.path())?;
        }
        let size_before = self.size;
        let mut undo = Vec::new();
        for (i, op) in ops.into_iter().enumerate() {
            if let Err((kind, op)) = self.apply_one(doc, op, &mut undo) {
                for u in undo.into_iter().rev() {
                    u.revert(doc);
                }
                self.size = size_before;
                return Err(PatchFailure {
                    operation: i,
                    op: op.tag(),
                    path: match op {
                        PatchOperation::Add(o) => o.path,
                        PatchOperation::Remove(o) => o.path,
                        PatchOperation::Replace(o) => o.path,
                        PatchOperation::Move(o) => o.path,
                        PatchOperation::Copy(o) => o.path,
                        PatchOperation::Test(o) => o.path,
                    },
                    reason: kind.message(self.max_bytes),
                });
            }
        }
        Ok(())
    }

    /// [`apply`](Self::apply) to a document that may be absent (`None`, the reference's
    /// `undefined` state): while it is absent only whole-document `add`/`replace` can
    /// apply (a whole-document `remove` is skipped); anything else fails and leaves the
    /// document absent.
    ///
    /// # Errors
    /// As [`apply`](Self::apply), and any other operation on an absent document.
    pub fn apply_optional(
        &mut self,
        doc: &mut Option<Value>,
        ops: Vec<PatchOperation>,
    ) -> Result<(), PatchFailure> {
        if let Some(d) = doc {
            return self.apply(d, ops);
        }
        let mut ops = ops.into_iter().enumerate();
        let (first, mut value) = loop {
            let Some((i, op)) = ops.next() else {
                return Ok(());
            };
            let fail = |op: &PatchOperation| PatchFailure {
                operation: i,
                op: op.tag(),
                path: op.path().to_owned(),
                reason: "the document is undefined".to_owned(),
            };
            if !op.path().is_empty() {
                return Err(fail(&op));
            }
            match op {
                PatchOperation::Add(o) => break (i + 1, o.value),
                PatchOperation::Replace(o) => break (i + 1, o.value),
                PatchOperation::Remove(_) => continue,
                other => return Err(fail(&other)),
            }
        };
        self.reset();
        let rest: Vec<PatchOperation> = ops.map(|(_, o)| o).collect();
        if let Err(mut e) = self.apply(&mut value, rest) {
            self.reset();
            e.operation += first;
            return Err(e);
        }
        *doc = Some(value);
        Ok(())
    }

    /// Applies one operation and pushes its undo step; on failure the operation has
    /// changed nothing, and is given back for the error.
    fn apply_one(
        &mut self,
        doc: &mut Value,
        op: PatchOperation,
        undo: &mut Vec<Undo>,
    ) -> Result<(), (Kind, PatchOperation)> {
        let tracked = self.size.is_some();
        match op {
            PatchOperation::Add(mut o) => {
                let added = if tracked { size_of(&o.value) } else { 0 };
                match put(doc, &o.path, o.value) {
                    Ok(done) => {
                        self.after_put(added, &done, doc);
                        undo.push(Undo::Put {
                            path: o.path,
                            put: done,
                        });
                        Ok(())
                    }
                    Err((kind, value)) => {
                        o.value = value;
                        Err((kind, PatchOperation::Add(o)))
                    }
                }
            }
            PatchOperation::Remove(o) => match take(doc, &o.path) {
                Ok(taken) => {
                    if let Some(size) = &mut self.size {
                        *size = size.saturating_sub(taken.slot + size_of(&taken.value));
                    }
                    undo.push(Undo::Reinsert {
                        path: o.path,
                        at: taken.at,
                        value: taken.value,
                    });
                    Ok(())
                }
                Err(kind) => Err((kind, PatchOperation::Remove(o))),
            },
            PatchOperation::Replace(o) => {
                let Some(target) = doc.pointer_mut(&o.path) else {
                    return Err((Kind::InvalidPointer, PatchOperation::Replace(o)));
                };
                if let Some(size) = &mut self.size {
                    *size = size.saturating_sub(size_of(target)) + size_of(&o.value);
                }
                let prev = std::mem::replace(target, o.value);
                undo.push(Undo::Restore {
                    path: o.path,
                    value: prev,
                });
                Ok(())
            }
            PatchOperation::Move(o) => {
                let (Ok(to), Ok(from)) = (Pointer::parse(&o.path), Pointer::parse(&o.from)) else {
                    return Err((Kind::InvalidPointer, PatchOperation::Move(o)));
                };
                if to.starts_with(from) && to.len() != from.len() {
                    return Err((Kind::MoveIntoItself, PatchOperation::Move(o)));
                }
                let taken = match take(doc, &o.from) {
                    Ok(taken) => taken,
                    Err(_) => return Err((Kind::InvalidFrom, PatchOperation::Move(o))),
                };
                match put(doc, &o.path, taken.value) {
                    Ok(done) => {
                        if let Some(size) = &mut self.size {
                            // The value stays as it is: only the slots it left and
                            // entered change the size.
                            *size = size.saturating_sub(taken.slot);
                        }
                        self.after_put(0, &done, doc);
                        undo.push(Undo::Move {
                            from: o.from,
                            at: taken.at,
                            path: o.path,
                            put: done,
                        });
                        Ok(())
                    }
                    Err((kind, value)) => {
                        reinsert(doc, &o.from, taken.at, value);
                        Err((kind, PatchOperation::Move(o)))
                    }
                }
            }
            PatchOperation::Copy(o) => {
                let size = *self.size.get_or_insert_with(|| size_of(doc));
                let Some(source) = doc.pointer(&o.from) else {
                    return Err((Kind::InvalidFrom, PatchOperation::Copy(o)));
                };
                // Measured before it is copied, and no further than the room left: a
                // copy past the bound costs no more than the room.
                let room = self.max_bytes.saturating_sub(size);
                let added = json_size_at_most(source, room);
                if added > room {
                    return Err((Kind::TooLarge, PatchOperation::Copy(o)));
                }
                let value = source.clone();
                match put(doc, &o.path, value) {
                    Ok(done) => {
                        self.after_put(added, &done, doc);
                        if self.size.is_some_and(|s| s > self.max_bytes) {
                            // Past the bound by the target's own key: undone.
                            undo_put(doc, &o.path, done);
                            self.size = Some(size);
                            return Err((Kind::TooLarge, PatchOperation::Copy(o)));
                        }
                        undo.push(Undo::Put {
                            path: o.path,
                            put: done,
                        });
                        Ok(())
                    }
                    Err((kind, _)) => Err((kind, PatchOperation::Copy(o))),
                }
            }
            PatchOperation::Test(o) => match doc.pointer(&o.path) {
                None => Err((Kind::InvalidPointer, PatchOperation::Test(o))),
                Some(v) if *v != o.value => Err((Kind::TestFailed, PatchOperation::Test(o))),
                Some(_) => Ok(()),
            },
        }
    }

    /// Updates the kept size after a put of a value of size `added` (`doc` is the
    /// document after it, measured again only when the put replaced the whole of it).
    fn after_put(&mut self, added: usize, done: &Put, doc: &Value) {
        let Some(size) = &mut self.size else {
            return;
        };
        match done {
            Put::Root(_) => *size = size_of(doc),
            Put::Inserted { slot, .. } => *size += slot + added,
            Put::Replaced(prev) => *size = size.saturating_sub(size_of(prev)) + added,
        }
    }
}

/// Applies `ops` to `doc` atomically, in place: on failure `doc` is unchanged. A patch
/// whose `copy` operations would make the document larger than
/// [`MAX_PATCHED_DOCUMENT_BYTES`] fails.
///
/// This is for one patch on its own: a patch with a `copy` measures the whole document
/// first. To apply patch after patch to one document, keep a [`Patcher`].
///
/// # Errors
/// See [`Patcher::apply`].
pub fn apply_patch(doc: &mut Value, ops: Vec<PatchOperation>) -> Result<(), PatchFailure> {
    Patcher::new().apply(doc, ops)
}

/// [`apply_patch`] with the document bounded to `max_bytes` of JSON after each `copy`.
///
/// # Errors
/// See [`Patcher::apply`].
pub fn apply_patch_within(
    doc: &mut Value,
    ops: Vec<PatchOperation>,
    max_bytes: usize,
) -> Result<(), PatchFailure> {
    Patcher::with_limit(max_bytes).apply(doc, ops)
}

/// Applies `ops` to a document that may be absent: see [`Patcher::apply_optional`].
///
/// # Errors
/// See [`Patcher::apply_optional`].
pub fn apply_patch_optional(
    doc: &mut Option<Value>,
    ops: Vec<PatchOperation>,
) -> Result<(), PatchFailure> {
    Patcher::new().apply_optional(doc, ops)
}

/// Why one operation failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    TestFailed,
    InvalidFrom,
    InvalidPointer,
    MoveIntoItself,
    TooLarge,
}

impl Kind {
    /// The reason, worded as the `json-patch` crate words its own.
    fn message(self, max_bytes: usize) -> String {
        match self {
            Kind::TestFailed => "value did not match".into(),
            Kind::InvalidFrom => "\"from\" path is invalid".into(),
            Kind::InvalidPointer => "path is invalid".into(),
            Kind::MoveIntoItself => "cannot move the value inside itself".into(),
            Kind::TooLarge => format!("the document would grow past {max_bytes} bytes of JSON"),
        }
    }
}

fn check_pointer(operation: usize, op: &'static str, s: &str) -> Result<(), PatchFailure> {
    Pointer::parse(s).map(|_| ()).map_err(|e| PatchFailure {
        operation,
        op,
        path: s.to_owned(),
        reason: e.to_string(),
    })
}

/// The parent pointer and last token of a valid, non-empty pointer.
fn split(path: &str) -> Option<(&str, Token<'_>)> {
    let (parent, last) = Pointer::parse(path).ok()?.split_back()?;
    Some((parent.as_str(), last))
}

/// What a slot costs beside its value: a member's key, quotes, colon and comma, or an
/// element's comma (as [`json_size_at_most`] counts them).
fn member_slot(key: &str) -> usize {
    key.len() + 4
}
const ELEMENT_SLOT: usize = 1;

/// What a put did.
#[derive(Debug)]
enum Put {
    /// The whole document was replaced; this was it.
    Root(Value),
    /// A new member, or an element at `index`, went in, in a slot costing `slot`.
    Inserted { index: Option<usize>, slot: usize },
    /// An object member was replaced in place; this was its value.
    Replaced(Value),
}

/// `add`'s placement: the whole document for the empty path, an object member (new, or
/// replaced in place), or an array element inserted at an index up to the length (`-`:
/// the end). On failure the value is given back.
fn put(doc: &mut Value, path: &str, value: Value) -> Result<Put, (Kind, Value)> {
    if path.is_empty() {
        return Ok(Put::Root(std::mem::replace(doc, value)));
    }
    let Some((parent, last)) = split(path) else {
        return Err((Kind::InvalidPointer, value));
    };
    match doc.pointer_mut(parent) {
        Some(Value::Object(o)) => {
            let key = last.decoded();
            // A member that is there is replaced in place, with no copy of its key.
            if let Some(there) = o.get_mut(key.as_ref()) {
                return Ok(Put::Replaced(std::mem::replace(there, value)));
            }
            let slot = member_slot(&key);
            o.insert(key.into_owned(), value);
            Ok(Put::Inserted { index: None, slot })
        }
        Some(Value::Array(a)) => {
            match last
                .to_index()
                .ok()
                .and_then(|i| i.for_len_incl(a.len()).ok())
            {
                Some(i) => {
                    a.insert(i, value);
                    Ok(Put::Inserted {
                        index: Some(i),
                        slot: ELEMENT_SLOT,
                    })
                }
                None => Err((Kind::InvalidPointer, value)),
            }
        }
        _ => Err((Kind::InvalidPointer, value)),
    }
}

/// Undoes a [`put`] at `path`, giving back the value it had put there.
fn undo_put(doc: &mut Value, path: &str, done: Put) -> Option<Value> {
    match done {
        Put::Root(prev) => Some(std::mem::replace(doc, prev)),
        Put::Inserted { index, .. } => {
            let (parent, last) = split(path)?;
            match doc.pointer_mut(parent)? {
                Value::Object(o) => o.shift_remove(last.decoded().as_ref()),
                Value::Array(a) => index.filter(|i| *i < a.len()).map(|i| a.remove(i)),
                _ => None,
            }
        }
        Put::Replaced(prev) => doc.pointer_mut(path).map(|t| std::mem::replace(t, prev)),
    }
}

/// What [`take`] took: the value, its position among its parent's members or elements,
/// and what its slot cost.
struct Taken {
    value: Value,
    at: usize,
    slot: usize,
}

/// `remove`'s target: an object member (the others keep their order) or an array
/// element at an index below the length.
fn take(doc: &mut Value, path: &str) -> Result<Taken, Kind> {
    let (parent, last) = split(path).ok_or(Kind::InvalidPointer)?;
    match doc.pointer_mut(parent) {
        Some(Value::Object(o)) => {
            let key = last.decoded();
            let at = o
                .keys()
                .position(|k| *k == *key)
                .ok_or(Kind::InvalidPointer)?;
            let value = o.shift_remove(key.as_ref()).ok_or(Kind::InvalidPointer)?;
            Ok(Taken {
                value,
                at,
                slot: member_slot(&key),
            })
        }
        Some(Value::Array(a)) => {
            let at = last
                .to_index()
                .ok()
                .and_then(|i| i.for_len(a.len()).ok())
                .ok_or(Kind::InvalidPointer)?;
            Ok(Taken {
                value: a.remove(at),
                at,
                slot: ELEMENT_SLOT,
            })
        }
        _ => Err(Kind::InvalidPointer),
    }
}

/// Puts back what [`take`] took from `path`, at its position `at`.
fn reinsert(doc: &mut Value, path: &str, at: usize, value: Value) {
    let Some((parent, last)) = split(path) else {
        return;
    };
    match doc.pointer_mut(parent) {
        Some(Value::Object(o)) => {
            let key: Cow<'_, str> = last.decoded();
            o.shift_insert(at.min(o.len()), key.into_owned(), value);
        }
        Some(Value::Array(a)) => a.insert(at.min(a.len()), value),
        _ => {}
    }
}

/// How to undo one applied operation.
#[derive(Debug)]
enum Undo {
    /// An `add` or `copy`: undo its put.
    Put { path: String, put: Put },
    /// A `remove`: put the value back at its position.
    Reinsert {
        path: String,
        at: usize,
        value: Value,
    },
    /// A `replace`: put the value back in place.
    Restore { path: String, value: Value },
    /// A `move`: undo its put, and put what it gives back where it came from.
    Move {
        from: String,
        at: usize,
        path: String,
        put: Put,
    },
}

impl Undo {
    /// Undoes the step; the steps after it have been undone already, so each path
    /// resolves as it did when the step applied.
    fn revert(self, doc: &mut Value) {
        match self {
            Undo::Put { path, put } => {
                undo_put(doc, &path, put);
            }
            Undo::Reinsert { path, at, value } => reinsert(doc, &path, at, value),
            Undo::Restore { path, value } => {
                if let Some(t) = doc.pointer_mut(&path) {
                    *t = value;
                }
            }
            Undo::Move {
                from,
                at,
                path,
                put,
            } => {
                if let Some(v) = undo_put(doc, &path, put) {
                    reinsert(doc, &from, at, v);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
