//! Enforcement: what the reference client does to incoming events before verifying
//! them, and to its outgoing input before sending it. It works on raw JSON, before
//! typed decoding, because it must see what the typed decoder rejects:
//!
//! - an event whose `type` is not one of the 31 is dropped, with a warning;
//! - keys an object does not define are removed (except inside JSON Patch operations,
//!   which RFC 6902 keeps open, and inside opaque positions such as state or metadata);
//! - a union member with an unknown tag (content part `type`, source `type`, message
//!   `role`, patch `op`, outcome `type`) is removed: from an array as an element, from
//!   an optional key as the key, and from a required key by removing its container;
//! - then the result is decoded strictly (a malformed known field is an error).
//!
//! Every removal is returned as an [`EnforceWarning`] and logged through `tracing`.

mod schema;

use serde_json::Value;

use crate::event::Event;
use crate::types::RunAgentInput;
use crate::wire::JsonError;
use crate::JsonObject;

use schema::{Obj, Shape};

/// Something enforcement removed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EnforceWarning {
    /// An event of a type the protocol does not describe was dropped.
    #[error("dropped unrecognised event '{event_type}': the protocol does not describe it")]
    UnrecognisedEvent {
        /// Its `type` (rendered as text; `undefined` when absent).
        event_type: String,
    },
    /// Material the schema does not describe was removed from an event.
    #[error("removed unrecognised material at '{path}' on {event_type}")]
    Removed {
        /// The event's type.
        event_type: String,
        /// JSON-Pointer-like path of what was removed (`/messages/1/extra`).
        path: String,
    },
    /// Material the schema does not describe was removed from the outgoing input.
    #[error("removed unrecognised material at '{path}' from the outgoing input")]
    RemovedFromInput {
        /// JSON-Pointer-like path of what was removed.
        path: String,
    },
}

impl EnforceWarning {
    /// The removed path, if the warning is about removed material.
    pub fn path(&self) -> Option<&str> {
        match self {
            EnforceWarning::UnrecognisedEvent { .. } => None,
            EnforceWarning::Removed { path, .. } | EnforceWarning::RemovedFromInput { path } => {
                Some(path)
            }
        }
    }
}

/// A value that does not validate once stripped (fatal in the reference).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{event_type}: {source}")]
pub struct EnforceError {
    /// The event's type (`RunAgentInput` for the outgoing input).
    pub event_type: String,
    /// The validation failure, with the field path.
    #[source]
    pub source: JsonError,
}

/// The result of enforcing one incoming event.
#[derive(Debug, Clone, PartialEq)]
pub struct Enforced {
    /// The validated event, or `None` when it was dropped.
    pub event: Option<Event>,
    /// What was removed.
    pub warnings: Vec<EnforceWarning>,
}

/// Marks a value whose union tag matched no member.
struct Unrecognisable;

fn strip(
    value: Value,
    shape: Shape,
    path: &mut String,
    removed: &mut Vec<String>,
) -> Result<Value, Unrecognisable> {
    match shape {
        Shape::Any => Ok(value),
        Shape::Obj(o) => strip_obj(value, o, None, path, removed),
        Shape::Arr(el) => match value {
            Value::Array(items) => {
                let mut out = Vec::with_capacity(items.len());
                for (i, item) in items.into_iter().enumerate() {
                    let len = path.len();
                    path.push('/');
                    path.push_str(&i.to_string());
                    let mark = removed.len();
                    match strip(item, *el, path, removed) {
                        Ok(v) => out.push(v),
                        Err(Unrecognisable) => {
                            removed.truncate(mark);
                            removed.push(path.clone());
                        }
                    }
                    path.truncate(len);
                }
                Ok(Value::Array(out))
            }
            other => Ok(other),
        },
        Shape::Union(u) => match &value {
            Value::Object(m) => {
                let member = m
                    .get(u.tag)
                    .and_then(Value::as_str)
                    .and_then(|t| u.member(t));
                match member {
                    Some(o) => strip_obj(value, o, Some(u.tag), path, removed),
                    None => Err(Unrecognisable),
                }
            }
            _ => Ok(value),
        },
        Shape::TextOr(el) => match value {
            Value::Array(_) => strip(value, Shape::Arr(el), path, removed),
            other => Ok(other),
        },
    }
}

/// Strips an object against its shape; `tag` is the union tag key it was selected by
/// (kept as it is: the member's declaration does not list it).
fn strip_obj(
    value: Value,
    o: &'static Obj,
    tag: Option<&'static str>,
    path: &mut String,
    removed: &mut Vec<String>,
) -> Result<Value, Unrecognisable> {
    let Value::Object(map) = value else {
        return Ok(value);
    };
    let mut out = JsonObject::new();
    for (key, v) in map {
        let len = path.len();
        path.push('/');
        path.push_str(&key);
        match o.field(&key) {
            None if o.spec_open || tag == Some(key.as_str()) => {
                out.insert(key, v);
            }
            None => removed.push(path.clone()),
            Some(f) => {
                let mark = removed.len();
                match strip(v, f.shape, path, removed) {
                    Ok(v) => {
                        out.insert(key, v);
                    }
                    Err(Unrecognisable) => {
                        removed.truncate(mark);
                        if f.optional {
                            removed.push(path.clone());
                        } else {
                            path.truncate(len);
                            return Err(Unrecognisable);
                        }
                    }
                }
            }
        }
        path.truncate(len);
    }
    Ok(Value::Object(out))
}

/// Enforces one incoming event given as JSON: drops it when its type is unknown,
/// strips unknown material, then decodes it strictly.
pub fn enforce_event(value: Value) -> Result<Enforced, EnforceError> {
    let mut warnings = Vec::new();
    let event = enforce_event_into(value, &mut warnings)?;
    Ok(Enforced { event, warnings })
}

/// As [`enforce_event`], appending what was removed to `warnings` whether or not the
/// stripped event then validates (the reference reports the stripping before it
/// rejects).
pub fn enforce_event_into(
    value: Value,
    warnings: &mut Vec<EnforceWarning>,
) -> Result<Option<Event>, EnforceError> {
    let ty = match value.get("type") {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => "undefined".to_owned(),
    };
    let Some(schema) = schema::event_schema(&ty) else {
        log_warn!(event_type = %ty, "dropping unrecognised event");
        warnings.push(EnforceWarning::UnrecognisedEvent { event_type: ty });
        return Ok(None);
    };
    let mut removed = Vec::new();
    let stripped = strip_obj(
        value,
        schema,
        Some(schema::EVENT_TAG),
        &mut String::new(),
        &mut removed,
    )
    .unwrap_or(Value::Null);
    warnings.extend(removed.into_iter().map(|path| {
        log_warn!(event_type = %ty, %path, "removed unrecognised material");
        EnforceWarning::Removed {
            event_type: ty.clone(),
            path,
        }
    }));
    crate::wire::from_json_value::<Event>(&stripped)
        .map(Some)
        .map_err(|source| EnforceError {
            event_type: ty,
            source,
        })
}

/// Which root [`omit_optional_nulls`] reads a value as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NullsRoot {
    /// An event (its `type` selects the schema; unknown types are left alone).
    Event,
    /// A `RunAgentInput`.
    RunAgentInput,
}

/// Removes keys that the schema declares optional and that hold `null`, walking only
/// described positions: required keys, unknown keys and nulls inside opaque JSON are
/// left alone.
pub fn omit_optional_nulls(value: &mut Value, root: NullsRoot) {
    match root {
        NullsRoot::RunAgentInput => omit_obj(value, schema::RUN_AGENT_INPUT),
        NullsRoot::Event => {
            if let Some(o) = value
                .get("type")
                .and_then(Value::as_str)
                .and_then(schema::event_schema)
            {
                omit_obj(value, o);
            }
        }
    }
}

fn omit(value: &mut Value, shape: Shape) {
    match shape {
        Shape::Any => {}
        Shape::Obj(o) => omit_obj(value, o),
        Shape::Arr(el) | Shape::TextOr(el) => {
            if let Value::Array(items) = value {
                for i in items {
                    omit(i, *el);
                }
            }
        }
        Shape::Union(u) => {
            let member = value
                .get(u.tag)
                .and_then(Value::as_str)
                .and_then(|t| u.member(t));
            if let Some(o) = member {
                omit_obj(value, o);
            }
        }
    }
}

fn omit_obj(value: &mut Value, o: &'static Obj) {
    let Value::Object(map) = value else { return };
    map.retain(|k, v| !(v.is_null() && o.field(k).is_some_and(|f| f.optional)));
    for (k, v) in map.iter_mut() {
        if let Some(f) = o.field(k) {
            omit(v, f.shape);
        }
    }
}

/// What the reference client does to its input right before sending it: optional
/// nulls omitted, unknown material stripped (reported), then strict validation
/// (`tools`/`context` default to `[]`). Top-level messages lose a `null`
/// `subagentRunId` (already covered by the null omission).
pub fn enforce_outgoing_input(
    mut value: Value,
) -> Result<(RunAgentInput, Vec<EnforceWarning>), EnforceError> {
    omit_optional_nulls(&mut value, NullsRoot::RunAgentInput);
    let mut removed = Vec::new();
    let stripped = strip_obj(
        value,
        schema::RUN_AGENT_INPUT,
        None,
        &mut String::new(),
        &mut removed,
    )
    .unwrap_or(Value::Null);
    let warnings = removed
        .into_iter()
        .map(|path| {
            log_warn!(%path, "removed unrecognised material from the outgoing input");
            EnforceWarning::RemovedFromInput { path }
        })
        .collect();
    let input = crate::wire::from_json_value::<RunAgentInput>(&stripped).map_err(|source| {
        EnforceError {
            event_type: "RunAgentInput".to_owned(),
            source,
        }
    })?;
    Ok((input, warnings))
}
