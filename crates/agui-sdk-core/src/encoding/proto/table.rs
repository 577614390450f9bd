//! The protobuf codec of every event, generated from the tables in
//! [`for_each_event!`](crate::for_each_event): one `[arm => tag field, …]` table per
//! event message drives both the writer ([`write_event`]) and the reader
//! ([`decode_arm`]), so that an event's mapping is written once.
//!
//! A field's Rust type picks its wire encoding through [`Field`] (a `String` is a proto3
//! `string`, an `Option<String>` an `optional string`, a `Value` a
//! `google.protobuf.Value`, a `JsonPatch` repeated `JsonPatchOperation`s, …). A run of
//! wire fields that together carry one Rust field (an outcome and its payload arrays, a
//! tool result's text or parts) goes to a [`Part`] codec of its own. The reader merges
//! each wire field as prost's generated code does (a later scalar replaces an earlier
//! one, a repeated message field appends, a singular message merges), through prost's
//! own field functions, so that it reads exactly what a prost decoder of the `.proto`
//! reads; nested messages (messages, run input, interrupts, usage, patch operations) are
//! read through the prost structs and rebuilt by `decode`.

use prost::encoding::{
    bool as pb_bool, check_wire_type, decode_key, decode_varint, message, skip_field, string,
    DecodeContext, WireType,
};
use prost::DecodeError;
use serde_json::Value as Json;

use super::decode::{self, R};
use super::generated as pb;
use super::scan;
use super::value::{Struct as PbStruct, Value as PbValue};
use super::write::W;
use crate::event::*;
use crate::types::*;
use crate::JsonObject;

/// The buffer the reader works on.
type Buf<'a, 'b> = &'a mut &'b [u8];

/// How one Rust field type travels as one protobuf field.
pub(super) trait Field: Sized {
    /// What the reader accumulates while the field's occurrences are merged.
    type Slot: Default;
    /// Writes the field (nothing when proto3 would not write it).
    fn write(&self, tag: u32, w: &mut W<'_>);
    /// Merges one occurrence of the field.
    fn merge(
        slot: &mut Self::Slot,
        wire: WireType,
        buf: Buf<'_, '_>,
        ctx: DecodeContext,
    ) -> Result<(), DecodeError>;
    /// The field's value once the message is read; `what` names it in errors
    /// (`"STATE_SNAPSHOT snapshot"`).
    fn finish(slot: Self::Slot, what: &'static str) -> R<Self>;
}

/// A codec for a run of wire fields that carry one Rust field of the event `E` between
/// them (or a field and its neighbours, when their wire fields interleave).
pub(super) trait Part<E> {
    /// What the reader accumulates.
    type Slot: Default;
    /// Writes the run of fields.
    fn write(e: &E, w: &mut W<'_>);
    /// Merges one occurrence of field `tag` of the run.
    fn merge(
        slot: &mut Self::Slot,
        tag: u32,
        wire: WireType,
        buf: Buf<'_, '_>,
        ctx: DecodeContext,
    ) -> Result<(), DecodeError>;
    /// Sets what the run carries on the event.
    fn finish(slot: Self::Slot, e: &mut E) -> R<()>;
}

/// The reader's slot for one plain field, typed by the field (so that the table need not
/// name types).
pub(super) struct Cell<T: Field>(T::Slot);

impl<T: Field> Cell<T> {
    fn merge(&mut self, wire: WireType, buf: Buf<'_, '_>, ctx: DecodeContext) -> DecodeResult {
        T::merge(&mut self.0, wire, buf, ctx)
    }

    fn finish(self, what: &'static str) -> R<T> {
        T::finish(self.0, what)
    }
}

type DecodeResult = Result<(), DecodeError>;

/// A slot for the field `get` reads, its type inferred from the accessor.
fn cell<E, T: Field>(_get: fn(&E) -> &T) -> Cell<T> {
    Cell(T::Slot::default())
}

/// The payload of the length-delimited field at the front of `buf`, without consuming it
/// (`None` when the length is broken; the merge that follows reports it).
fn peek_payload<'b>(buf: &&'b [u8]) -> Option<&'b [u8]> {
    let mut b: &'b [u8] = buf;
    let len = usize::try_from(decode_varint(&mut b).ok()?).ok()?;
    b.get(..len)
}

/// Refuses the message occurrence at the front of `buf` when `check` fails on its
/// payload: a content part naming two kinds, which protobuf alone would read as the last.
fn refuse_two_kinds(buf: &&[u8], check: impl Fn(&[u8]) -> Result<(), ()>) -> DecodeResult {
    match peek_payload(buf) {
        Some(payload) if check(payload).is_err() => {
            Err(DecodeError::new("a content part names two kinds"))
        }
        _ => Ok(()),
    }
}

/// Implements [`Field`] for a type: its slot, how the writer writes it (`|value, tag,
/// writer|`), how one occurrence merges (`|slot, wire, buf, ctx|`) and what the slot
/// becomes (`|slot, what|`). Invoked with braces, so that the layout below is kept.
macro_rules! field {
    ($(#[$doc:meta])* $ty:ty => $slot:ty;
     write |$v:ident, $tag:ident, $w:ident| $write:expr;
     merge |$s:ident, $wire:ident, $buf:ident, $ctx:ident| $merge:expr;
     finish |$f:ident, $what:ident| $finish:expr;) => {
        $(#[$doc])*
        #[allow(unused_variables)]
        impl Field for $ty {
            type Slot = $slot;
            fn write(&self, $tag: u32, $w: &mut W<'_>) {
                let $v = self;
                $write
            }
            fn merge(
                $s: &mut $slot,
                $wire: WireType,
                $buf: Buf<'_, '_>,
                $ctx: DecodeContext,
            ) -> DecodeResult {
                $merge
            }
            fn finish($f: $slot, $what: &'static str) -> R<Self> {
                $finish
            }
        }
    };
}

field! {
    String => String;
    write |v, tag, w| w.str(tag, v);
    merge |s, wire, buf, ctx| string::merge(wire, s, buf, ctx);
    finish |s, what| Ok(s);
}

field! {
    Option<String> => Option<String>;
    write |v, tag, w| w.opt_str(tag, v.as_deref());
    merge |s, wire, buf, ctx| string::merge(wire, s.get_or_insert_with(String::new), buf, ctx);
    finish |s, what| Ok(s);
}

field! {
    Option<TextMessageRole> => Option<String>;
    write |v, tag, w| w.opt_str(tag, v.map(|r| Role::from(r).as_str()));
    merge |s, wire, buf, ctx| <Option<String>>::merge(s, wire, buf, ctx);
    finish |s, what| decode::text_role(s);
}

field! {
    ReasoningRole => String;
    write |v, tag, w| w.str(tag, "reasoning");
    merge |s, wire, buf, ctx| string::merge(wire, s, buf, ctx);
    finish |s, what| match s.as_str() {
        "reasoning" => Ok(ReasoningRole::Reasoning),
        _ => Err(format!("{what} {s:?} is not \"reasoning\"")),
    };
}

field! {
    EncryptedValueSubtype => String;
    write |v, tag, w| w.str(tag, match v {
        EncryptedValueSubtype::ToolCall => "tool-call",
        EncryptedValueSubtype::Message => "message",
    });
    merge |s, wire, buf, ctx| string::merge(wire, s, buf, ctx);
    finish |s, what| match s.as_str() {
        "tool-call" => Ok(EncryptedValueSubtype::ToolCall),
        "message" => Ok(EncryptedValueSubtype::Message),
        other => Err(format!("{what} {other:?} is not valid")),
    };
}

field! {
    /// A required `google.protobuf.Value` (any JSON, `null` included; absent is an error).
    Json => Option<PbValue>;
    write |v, tag, w| w.value(tag, Some(v));
    merge |s, wire, buf, ctx| message::merge(wire, s.get_or_insert_with(PbValue::default), buf, ctx);
    finish |s, what| decode::any(s).ok_or_else(|| format!("{what} is missing"));
}

field! {
    /// An optional `google.protobuf.Value` that may not be `null`.
    Option<Json> => Option<PbValue>;
    write |v, tag, w| w.value(tag, v.as_ref());
    merge |s, wire, buf, ctx| <Json as Field>::merge(s, wire, buf, ctx);
    finish |s, what| decode::not_null(s, what);
}

field! {
    /// A required `google.protobuf.Struct`.
    JsonObject => Option<PbStruct>;
    write |v, tag, w| w.strukt(tag, Some(v));
    merge |s, wire, buf, ctx| message::merge(wire, s.get_or_insert_with(PbStruct::default), buf, ctx);
    finish |s, what| decode::strukt(s).ok_or_else(|| format!("{what} is missing"));
}

field! {
    Option<bool> => Option<bool>;
    write |v, tag, w| w.opt_bool(tag, *v);
    merge |s, wire, buf, ctx| pb_bool::merge(wire, s.get_or_insert(false), buf, ctx);
    finish |s, what| Ok(s);
}

field! {
    JsonPatch => Vec<pb::JsonPatchOperation>;
    write |v, tag, w| w.patch(tag, v);
    merge |s, wire, buf, ctx| message::merge_repeated(wire, s, buf, ctx);
    finish |s, what| decode::patch(s);
}

field! {
    Vec<Message> => Vec<pb::Message>;
    write |v, tag, w| v.iter().for_each(|m| w.message(tag, m));
    merge |s, wire, buf, ctx| {
        refuse_two_kinds(buf, scan::message)?;
        message::merge_repeated(wire, s, buf, ctx)
    };
    finish |s, what| decode::messages(s);
}

field! {
    Option<Box<RunAgentInput>> => Option<pb::RunAgentInput>;
    write |v, tag, w| if let Some(i) = v {
        w.run_agent_input(tag, i);
    };
    merge |s, wire, buf, ctx| {
        refuse_two_kinds(buf, |p| scan::each(p, 5, scan::message))?;
        message::merge(wire, s.get_or_insert_with(Default::default), buf, ctx)
    };
    finish |s, what| Ok(s.map(decode::run_agent_input).transpose()?.map(Box::new));
}

field! {
    Option<Vec<TokenUsage>> => Vec<pb::Usage>;
    write |v, tag, w| w.usage(tag, v.as_ref());
    merge |s, wire, buf, ctx| message::merge_repeated(wire, s, buf, ctx);
    finish |s, what| decode::usage(s);
}

/// `RUN_FINISHED` 5 to 8: the outcome's type, its interrupts, the usage, its pending
/// tool call ids.
pub(super) struct RunFinishedTail;

impl Part<RunFinished> for RunFinishedTail {
    type Slot = (String, Vec<pb::Interrupt>, Vec<pb::Usage>, Vec<String>);
    fn write(e: &RunFinished, w: &mut W<'_>) {
        let (outcome, interrupts, pending): (_, &[Interrupt], &[String]) = match &e.outcome {
            None => ("", &[], &[]),
            Some(RunFinishedOutcome::Success(s)) => (
                "success",
                &[],
                s.pending_tool_call_ids.as_deref().unwrap_or_default(),
            ),
            Some(RunFinishedOutcome::Interrupt(i)) => ("interrupt", i.interrupts.as_slice(), &[]),
            Some(RunFinishedOutcome::Cancelled(_)) => ("cancelled", &[], &[]),
        };
        w.str(5, outcome);
        for i in interrupts {
            w.interrupt(6, i);
        }
        w.usage(7, e.usage.as_ref());
        w.strs(8, pending);
    }
    fn merge(
        s: &mut Self::Slot,
        tag: u32,
        wire: WireType,
        buf: Buf<'_, '_>,
        ctx: DecodeContext,
    ) -> DecodeResult {
        match tag {
            5 => string::merge(wire, &mut s.0, buf, ctx),
            6 => message::merge_repeated(wire, &mut s.1, buf, ctx),
            7 => message::merge_repeated(wire, &mut s.2, buf, ctx),
            _ => string::merge_repeated(wire, &mut s.3, buf, ctx),
        }
    }
    fn finish((outcome, interrupts, usage, pending): Self::Slot, e: &mut RunFinished) -> R<()> {
        let mut extra = JsonObject::new();
        e.outcome = decode::run_finished_outcome(outcome, pending, interrupts, &mut extra)?;
        e.usage = decode::usage(usage)?;
        e.extra = extra.into();
        Ok(())
    }
}

/// `SUBAGENT_FINISHED` 4 and 5: the outcome's type and its interrupt ids.
pub(super) struct SubagentTail;

impl Part<SubagentFinished> for SubagentTail {
    type Slot = (String, Vec<String>);
    fn write(e: &SubagentFinished, w: &mut W<'_>) {
        let (outcome, ids): (_, &[String]) = match &e.outcome {
            None => ("", &[]),
            Some(SubagentFinishedOutcome::Success(_)) => ("success", &[]),
            Some(SubagentFinishedOutcome::Suspended(s)) => {
                ("suspended", s.interrupt_ids.as_deref().unwrap_or_default())
            }
        };
        w.str(4, outcome);
        w.strs(5, ids);
    }
    fn merge(
        s: &mut Self::Slot,
        tag: u32,
        wire: WireType,
        buf: Buf<'_, '_>,
        ctx: DecodeContext,
    ) -> DecodeResult {
        match tag {
            4 => string::merge(wire, &mut s.0, buf, ctx),
            _ => string::merge_repeated(wire, &mut s.1, buf, ctx),
        }
    }
    fn finish((outcome, ids): Self::Slot, e: &mut SubagentFinished) -> R<()> {
        let mut extra = JsonObject::new();
        e.outcome = decode::subagent_outcome(outcome, ids, &mut extra)?;
        e.extra = extra.into();
        Ok(())
    }
}

/// `TOOL_CALL_RESULT` 5 to 7: the content as text, the role, the content as parts.
pub(super) struct ToolResultBody;

impl Part<ToolCallResult> for ToolResultBody {
    type Slot = (Option<String>, Option<String>, Vec<pb::InputContent>);
    fn write(e: &ToolCallResult, w: &mut W<'_>) {
        let (text, parts) = super::write::split(&e.content);
        w.opt_str(5, text);
        w.opt_str(6, e.role.map(|_| "tool"));
        for p in parts {
            w.part(7, p);
        }
    }
    fn merge(
        s: &mut Self::Slot,
        tag: u32,
        wire: WireType,
        buf: Buf<'_, '_>,
        ctx: DecodeContext,
    ) -> DecodeResult {
        match tag {
            5 => <Option<String>>::merge(&mut s.0, wire, buf, ctx),
            6 => <Option<String>>::merge(&mut s.1, wire, buf, ctx),
            _ => {
                refuse_two_kinds(buf, scan::input_content)?;
                message::merge_repeated(wire, &mut s.2, buf, ctx)
            }
        }
    }
    fn finish((text, role, parts): Self::Slot, e: &mut ToolCallResult) -> R<()> {
        if text.is_some() && !parts.is_empty() {
            return Err("TOOL_CALL_RESULT carries both string content and content parts".into());
        }
        e.content = match text {
            Some(s) => Content::Text(s),
            None => Content::Parts(decode::parts(parts)?),
        };
        e.role = decode::tool_role(role)?;
        Ok(())
    }
}

/// Runs `field` on every field of every occurrence of the envelope's arm `arm` (repeated
/// occurrences of one message field merge, as protobuf requires); other envelope fields
/// are skipped.
fn each_field(
    bytes: &[u8],
    arm: u32,
    mut field: impl FnMut(u32, WireType, Buf<'_, '_>, DecodeContext) -> DecodeResult,
) -> DecodeResult {
    let mut buf = bytes;
    let ctx = DecodeContext::default();
    while !buf.is_empty() {
        let (tag, wire) = decode_key(&mut buf)?;
        if tag != arm {
            skip_field(wire, tag, &mut buf, ctx.clone())?;
            continue;
        }
        check_wire_type(WireType::LengthDelimited, wire)?;
        prost::encoding::merge_loop(&mut (), &mut buf, ctx.clone(), |(), buf, ctx| {
            let (tag, wire) = decode_key(buf)?;
            field(tag, wire, buf, ctx)
        })?;
    }
    Ok(())
}

/// Whether a table lists its fields in field-number order (the order the writer writes
/// them, as prost and the reference do).
const fn ascending(tags: &[u32]) -> bool {
    let mut i = 1;
    while i < tags.len() {
        if tags[i] <= tags[i - 1] {
            return false;
        }
        i += 1;
    }
    true
}

/// Writes one table entry.
macro_rules! write_entry {
    ($variant:ident, $e:ident, $w:ident, $tag:literal, $field:ident) => {
        Field::write(&$e.$field, $tag, $w)
    };
    ($variant:ident, $e:ident, $w:ident, $tag:literal, $field:ident, $codec:ident) => {
        <$codec as Part<$variant>>::write($e, $w)
    };
}

/// The reader's slot of one table entry.
macro_rules! slot_entry {
    ($variant:ident, $field:ident) => {
        cell(|e: &$variant| &e.$field)
    };
    ($variant:ident, $field:ident, $codec:ident) => {
        <<$codec as Part<$variant>>::Slot>::default()
    };
}

/// Merges one wire field into its entry's slot.
macro_rules! merge_entry {
    ($variant:ident, $slot:ident, $tag:ident, $wire:ident, $buf:ident, $ctx:ident) => {
        $slot.merge($wire, $buf, $ctx)
    };
    ($variant:ident, $slot:ident, $tag:ident, $wire:ident, $buf:ident, $ctx:ident, $codec:ident) => {
        <$codec as Part<$variant>>::merge(&mut $slot, $tag, $wire, $buf, $ctx)
    };
}

/// Sets an entry's field on the event being built.
macro_rules! finish_entry {
    ($variant:ident, $ev:ident, $wire_name:literal, $field:ident) => {
        $ev.$field = $field.finish(concat!($wire_name, " ", stringify!($field)))?
    };
    ($variant:ident, $ev:ident, $wire_name:literal, $field:ident, $codec:ident) => {
        <$codec as Part<$variant>>::finish($field, &mut $ev)?
    };
}

macro_rules! proto_table {
    ($(
        $variant:ident = $wire:literal, $ctor:ident, $callback:ident, $inner:ty,
        [$arm:literal => $( $lo:literal $(..= $hi:literal)? $field:ident $(as $codec:ident)? ),* $(,)?],
        $sort:tt;
    )*) => {
        $(
            const _: () = assert!(
                ascending(&[$($lo),*]),
                concat!("the protobuf table of ", $wire, " must list its fields in field-number order"),
            );
        )*

        /// Writes `ev` as the body of an `ag_ui.Event`: its oneof arm, `base_event`, then
        /// its fields in field-number order.
        pub(super) fn write_event(ev: &Event, w: &mut W<'_>) {
            match ev {
                $(
                    Event::$variant(e) => w.msg($arm, |w| {
                        w.base(
                            pb::EventType::$variant,
                            e.timestamp,
                            e.raw_event.as_deref(),
                            e.metadata.as_deref(),
                        );
                        $( write_entry!($variant, e, w, $lo, $field $(, $codec)?); )*
                    }),
                )*
            }
        }

        /// Whether `n` is the field number of an event arm of `ag_ui.Event`.
        pub(super) fn is_arm(n: u32) -> bool {
            #[allow(clippy::manual_range_patterns)]
            let known = matches!(n, $($arm)|*);
            known
        }

        /// Reads the event of arm `arm` (known to be the envelope's only event arm) from the
        /// envelope `bytes`.
        pub(super) fn decode_arm(arm: u32, bytes: &[u8]) -> R<Event> {
            match arm {
                $(
                    $arm => {
                        let mut base_slot: Option<pb::BaseEvent> = None;
                        $( let mut $field = slot_entry!($variant, $field $(, $codec)?); )*
                        each_field(bytes, $arm, |tag, wire, buf, ctx| match tag {
                            1 => message::merge(
                                wire,
                                base_slot.get_or_insert_with(Default::default),
                                buf,
                                ctx,
                            )
                            .map_err(|mut e| {
                                e.push(stringify!($variant), "base_event");
                                e
                            }),
                            $(
                                $lo $(..= $hi)? => merge_entry!($variant, $field, tag, wire, buf, ctx $(, $codec)?)
                                    .map_err(|mut e| {
                                        e.push(stringify!($variant), stringify!($field));
                                        e
                                    }),
                            )*
                            _ => skip_field(wire, tag, buf, ctx),
                        })
                        .map_err(|e| e.to_string())?;
                        let b = decode::base(base_slot, pb::EventType::$variant)?;
                        let mut ev = $variant::wire_blank();
                        ev.timestamp = b.timestamp;
                        ev.raw_event = b.raw_event.map(Box::new);
                        ev.metadata = b.metadata.map(Box::new);
                        $( finish_entry!($variant, ev, $wire, $field $(, $codec)?); )*
                        Ok(Event::from(ev))
                    }
                )*
                other => Err(format!("field {other} of ag_ui.Event is not an event")),
            }
        }
    };
}

crate::for_each_event!(proto_table);
