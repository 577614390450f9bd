//! The protobuf writer: the field writers the event tables (`table.rs`) call, and the
//! nested messages (messages, content parts, tool calls, the run input, interrupts,
//! usage, patch operations), written from our own types with no copy of any string or
//! value, in the same mapping as the reference encoder (`@ag-ui/proto` `encode`).
//!
//! Field order and presence follow the prost structs in `generated.rs` field by field
//! (a proto3 `string` or enum is skipped when empty or zero, an `optional` one written
//! when set, a repeated one element by element). A nested message is written in place
//! after a one-byte length slot, which is widened (the body moved right) only when the
//! body turns out to be 128 bytes or longer; so one pass writes every event, and the
//! bytes are exactly prost's. A differential test holds the writer to prost's bytes on
//! generated events of every type (the test-only oracle `encode.rs`).

use prost::encoding::{encode_key, encode_varint, encoded_len_varint, WireType};
use serde_json::Value as Json;

use super::generated::{EventType as T, JsonPatchOperationType as Op};
use super::value::{encode_struct_body, encode_value_body};
use crate::event::*;
use crate::types::*;
use crate::JsonObject;

/// Appends a field key: one byte for the field numbers below 16 (every field here but
/// the oneof arms past 15), else prost's varint.
#[inline(always)]
fn key(tag: u32, wire: WireType, buf: &mut Vec<u8>) {
    if tag < 16 {
        buf.push(((tag << 3) | wire as u32) as u8);
    } else {
        encode_key(tag, wire, buf);
    }
}

/// Appends a varint: one byte below 128 (most lengths), else prost's varint.
#[inline(always)]
fn varint(v: u64, buf: &mut Vec<u8>) {
    if v < 0x80 {
        buf.push(v as u8);
    } else {
        encode_varint(v, buf);
    }
}

/// Appends the body of an `ag_ui.Event` message (the oneof arm) for `ev` to `buf`.
pub(super) fn event(ev: &Event, buf: &mut Vec<u8>) {
    super::table::write_event(ev, &mut W(buf));
}

/// A patch operation as the wire carries it: `(op, path, from, value)`.
pub(super) fn patch_parts(o: &PatchOperation) -> (Op, &String, Option<&String>, Option<&Json>) {
    match o {
        PatchOperation::Add(o) => (Op::Add, &o.path, None, Some(&o.value)),
        PatchOperation::Remove(o) => (Op::Remove, &o.path, None, None),
        PatchOperation::Replace(o) => (Op::Replace, &o.path, None, Some(&o.value)),
        PatchOperation::Move(o) => (Op::Move, &o.path, Some(&o.from), None),
        PatchOperation::Copy(o) => (Op::Copy, &o.path, Some(&o.from), None),
        PatchOperation::Test(o) => (Op::Test, &o.path, None, Some(&o.value)),
    }
}

/// A message's content as the wire carries it: `(content, content_parts)`.
pub(super) fn split(c: &Content) -> (Option<&str>, &[ContentPart]) {
    match c {
        Content::Text(s) => (Some(s.as_str()), &[]),
        Content::Parts(p) => (None, p.as_slice()),
    }
}

/// A protobuf writer over the output buffer.
pub(super) struct W<'a>(pub(super) &'a mut Vec<u8>);

impl W<'_> {
    /// A proto3 `string` (implicit presence): nothing when empty.
    pub(super) fn str(&mut self, tag: u32, s: &str) {
        if !s.is_empty() {
            self.opt_str(tag, Some(s));
        }
    }

    /// An `optional string`: written when set, even empty.
    pub(super) fn opt_str(&mut self, tag: u32, s: Option<&str>) {
        if let Some(s) = s {
            key(tag, WireType::LengthDelimited, self.0);
            varint(s.len() as u64, self.0);
            self.0.extend_from_slice(s.as_bytes());
        }
    }

    /// A `repeated string`: every element, empty ones included.
    pub(super) fn strs<'s>(&mut self, tag: u32, items: impl IntoIterator<Item = &'s String>) {
        for s in items {
            self.opt_str(tag, Some(s));
        }
    }

    /// A proto3 enum: nothing when zero.
    pub(super) fn enumeration(&mut self, tag: u32, v: i32) {
        if v != 0 {
            key(tag, WireType::Varint, self.0);
            varint(v as i64 as u64, self.0);
        }
    }

    /// An `optional int64`.
    pub(super) fn opt_i64(&mut self, tag: u32, v: Option<i64>) {
        if let Some(v) = v {
            key(tag, WireType::Varint, self.0);
            encode_varint(v as u64, self.0);
        }
    }

    /// An `optional bool`.
    pub(super) fn opt_bool(&mut self, tag: u32, v: Option<bool>) {
        if let Some(v) = v {
            key(tag, WireType::Varint, self.0);
            self.0.push(u8::from(v));
        }
    }

    /// A message field: its key, its length, then what `body` writes.
    pub(super) fn msg(&mut self, tag: u32, body: impl FnOnce(&mut Self)) {
        key(tag, WireType::LengthDelimited, self.0);
        let slot = self.0.len();
        self.0.push(0);
        body(self);
        let len = self.0.len() - slot - 1;
        let width = encoded_len_varint(len as u64);
        if width == 1 {
            self.0[slot] = len as u8;
        } else {
            // Widen the slot: move the body right by the extra bytes, then write the
            // length's varint where the slot was.
            self.0.resize(self.0.len() + width - 1, 0);
            self.0.copy_within(slot + 1..slot + 1 + len, slot + width);
            let mut prefix = [0u8; 10];
            let mut p = &mut prefix[..];
            encode_varint(len as u64, &mut p);
            self.0[slot..slot + width].copy_from_slice(&prefix[..width]);
        }
    }

    /// A `google.protobuf.Value` field, when there is a value.
    pub(super) fn value(&mut self, tag: u32, v: Option<&Json>) {
        if let Some(v) = v {
            self.msg(tag, |w| encode_value_body(v, w.0));
        }
    }

    /// A `google.protobuf.Value` field from JSON text, when there is one.
    pub(super) fn text(&mut self, tag: u32, v: Option<&crate::JsonText>) {
        if let Some(v) = v {
            let v = v.to_value();
            self.msg(tag, |w| encode_value_body(&v, w.0));
        }
    }

    /// A `google.protobuf.Value` field holding an object, when there is one.
    pub(super) fn object_value(&mut self, tag: u32, o: Option<&JsonObject>) {
        if let Some(o) = o {
            // A Value whose kind is `struct_value` (field 5).
            self.msg(tag, |w| w.msg(5, |w| encode_struct_body(o, w.0)));
        }
    }

    /// A `google.protobuf.Struct` field, when there is an object.
    pub(super) fn text_strukt(&mut self, tag: u32, o: Option<&crate::JsonText>) {
        if let Some(Json::Object(o)) = o.map(crate::JsonText::to_value) {
            self.msg(tag, |w| encode_struct_body(&o, w.0));
        }
    }

    /// A `google.protobuf.Struct` field, when there is one.
    pub(super) fn strukt(&mut self, tag: u32, o: Option<&JsonObject>) {
        if let Some(o) = o {
            self.msg(tag, |w| encode_struct_body(o, w.0));
        }
    }

    /// `base_event` (field 1 of every arm), always written.
    pub(super) fn base(
        &mut self,
        ty: T,
        timestamp: Option<i64>,
        raw: Option<&Json>,
        meta: Option<&JsonObject>,
    ) {
        self.msg(1, |w| {
            w.enumeration(1, ty as i32);
            w.opt_i64(2, timestamp);
            w.value(3, raw);
            w.strukt(4, meta);
        });
    }

    pub(super) fn usage(&mut self, tag: u32, usage: Option<&Vec<TokenUsage>>) {
        for u in usage.into_iter().flatten() {
            self.msg(tag, |w| {
                w.opt_str(1, u.provider.as_deref());
                w.opt_str(2, u.model.as_deref());
                w.opt_i64(3, u.input_tokens.map(|n| n as i64));
                w.opt_i64(4, u.output_tokens.map(|n| n as i64));
                w.opt_i64(5, u.total_tokens.map(|n| n as i64));
                w.opt_i64(6, u.reasoning_tokens.map(|n| n as i64));
                w.opt_i64(7, u.cached_input_tokens.map(|n| n as i64));
                w.opt_i64(8, u.cache_write_input_tokens.map(|n| n as i64));
            });
        }
    }

    pub(super) fn interrupt(&mut self, tag: u32, i: &Interrupt) {
        self.msg(tag, |w| {
            w.str(1, &i.id);
            w.str(2, &i.reason);
            w.opt_str(3, i.message.as_deref());
            w.opt_str(4, i.tool_call_id.as_deref());
            w.object_value(5, i.response_schema.as_ref());
            w.opt_str(6, i.expires_at.as_deref());
            w.object_value(7, i.metadata.as_ref());
            w.opt_str(8, i.subagent_run_id.as_deref());
        });
    }

    pub(super) fn patch(&mut self, tag: u32, ops: &JsonPatch) {
        for o in ops.iter() {
            let (op, path, from, v) = patch_parts(o);
            self.msg(tag, |w| {
                w.enumeration(1, op as i32);
                w.str(2, path);
                w.opt_str(3, from.map(String::as_str));
                w.value(4, v);
            });
        }
    }

    pub(super) fn source(&mut self, tag: u32, s: &PartSource) {
        self.msg(tag, |w| match s {
            PartSource::Data(d) => w.msg(1, |w| {
                w.str(1, &d.value);
                w.str(2, &d.mime_type);
            }),
            PartSource::Url(u) => w.msg(2, |w| {
                w.str(1, &u.value);
                w.opt_str(2, u.mime_type.as_deref());
            }),
            PartSource::File(f) => w.msg(3, |w| {
                w.str(1, &f.value);
                w.opt_str(2, f.provider.as_deref());
                w.opt_str(3, f.mime_type.as_deref());
            }),
        });
    }

    pub(super) fn part(&mut self, tag: u32, p: &ContentPart) {
        let media = |w: &mut Self, arm: u32, m: &MediaPart| {
            w.msg(arm, |w| {
                w.source(1, &m.source);
                w.text(2, m.metadata.as_ref());
                w.opt_str(3, m.id.as_deref());
            });
        };
        self.msg(tag, |w| match p {
            ContentPart::Text(t) => w.msg(1, |w| {
                w.str(1, &t.text);
                w.opt_str(2, t.id.as_deref());
                w.text(3, t.metadata.as_ref());
            }),
            ContentPart::Image(m) => media(w, 2, m),
            ContentPart::Audio(m) => media(w, 3, m),
            ContentPart::Video(m) => media(w, 4, m),
            ContentPart::Document(m) => media(w, 5, m),
        });
    }

    pub(super) fn tool_call(&mut self, tag: u32, t: &ToolCall) {
        self.msg(tag, |w| {
            w.str(1, &t.id);
            w.str(2, "function");
            w.msg(3, |w| {
                w.str(1, &t.function.name);
                w.str(2, &t.function.arguments);
            });
            w.text_strukt(4, t.metadata.as_ref());
            w.opt_str(5, t.encrypted_value.as_deref());
            w.opt_str(6, t.encrypted_value_type.as_deref());
        });
    }

    /// The one merged wire `Message`, fields in their declared order.
    pub(super) fn message(&mut self, tag: u32, m: &Message) {
        // (content, name, tool calls, tool_call_id, error, parts, encrypted value and
        // type, activity type and content) by role; the rest is common.
        let mut content: Option<&str> = None;
        let mut parts: &[ContentPart] = &[];
        let mut name: Option<&str> = None;
        let mut tool_calls: &[ToolCall] = &[];
        let mut tool_call_id: Option<&str> = None;
        let mut error: Option<&str> = None;
        let mut encrypted: (Option<&str>, Option<&str>) = (None, None);
        let mut activity: Option<(&str, &crate::JsonText)> = None;
        match m {
            Message::Developer(d) => {
                content = Some(&d.content);
                name = d.name.as_deref();
                encrypted = (
                    d.encrypted_value.as_deref(),
                    d.encrypted_value_type.as_deref(),
                );
            }
            Message::System(d) => {
                content = Some(&d.content);
                name = d.name.as_deref();
                encrypted = (
                    d.encrypted_value.as_deref(),
                    d.encrypted_value_type.as_deref(),
                );
            }
            Message::Assistant(a) => {
                content = a.content.as_deref();
                name = a.name.as_deref();
                encrypted = (
                    a.encrypted_value.as_deref(),
                    a.encrypted_value_type.as_deref(),
                );
                tool_calls = a.tool_calls.as_deref().unwrap_or_default();
            }
            Message::User(u) => {
                (content, parts) = split(&u.content);
                name = u.name.as_deref();
                encrypted = (
                    u.encrypted_value.as_deref(),
                    u.encrypted_value_type.as_deref(),
                );
            }
            Message::Tool(t) => {
                (content, parts) = split(&t.content);
                tool_call_id = Some(&t.tool_call_id);
                error = t.error.as_deref();
                encrypted = (
                    t.encrypted_value.as_deref(),
                    t.encrypted_value_type.as_deref(),
                );
            }
            Message::Activity(a) => activity = Some((&a.activity_type, &a.content)),
            Message::Reasoning(r) => {
                content = Some(&r.content);
                encrypted = (
                    r.encrypted_value.as_deref(),
                    r.encrypted_value_type.as_deref(),
                );
            }
        }
        self.msg(tag, |w| {
            w.str(1, m.id());
            w.str(2, m.role().as_str());
            w.opt_str(3, content);
            w.opt_str(4, name);
            for t in tool_calls {
                w.tool_call(5, t);
            }
            w.opt_str(6, tool_call_id);
            w.opt_str(7, error);
            for p in parts {
                w.part(8, p);
            }
            w.text_strukt(9, m.metadata());
            w.opt_str(10, m.subagent_run_id());
            w.opt_str(11, encrypted.0);
            w.opt_str(12, activity.map(|a| a.0));
            w.text_strukt(13, activity.map(|a| a.1));
            w.opt_str(14, encrypted.1);
        });
    }

    pub(super) fn run_agent_input(&mut self, tag: u32, i: &RunAgentInput) {
        self.msg(tag, |w| {
            w.str(1, &i.thread_id);
            w.str(2, &i.run_id);
            w.opt_str(3, i.parent_run_id.as_deref());
            w.text(4, i.state.as_ref());
            for m in &i.messages {
                w.message(5, m);
            }
            for t in &i.tools {
                w.msg(6, |w| {
                    w.str(1, &t.name);
                    w.str(2, &t.description);
                    w.text(3, t.parameters.as_ref());
                    w.text_strukt(4, t.metadata.as_ref());
                });
            }
            for c in &i.context {
                w.msg(7, |w| {
                    w.str(1, &c.description);
                    w.str(2, &c.value);
                });
            }
            w.text(8, i.forwarded_props.as_ref());
            for r in i.resume.iter().flatten() {
                w.msg(9, |w| {
                    w.str(1, &r.interrupt_id);
                    w.str(
                        2,
                        match r.status {
                            ResumeStatus::Resolved => "resolved",
                            ResumeStatus::Cancelled => "cancelled",
                        },
                    );
                    w.text(3, r.payload.as_ref());
                    w.text_strukt(4, r.metadata.as_ref());
                });
            }
            w.opt_str(10, i.protocol_version.as_deref());
        });
    }
}
