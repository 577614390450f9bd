//! Property tests: any sequence of events survives encode → split at random points →
//! decode, in both encodings. SSE gives back the same events, numbers as JavaScript
//! reads them (the encoder writes numbers as `JSON.stringify` does, so `3.0` comes back
//! as `3`), also with CRLF or CR line endings and keep-alive comments between events;
//! protobuf gives exactly the event with what protobuf cannot carry removed, as the
//! reference's mapping removes it.

use crate::common;

use agui_sdk_core::encoding::{proto, sse, Encoding, EventDecoder};
use agui_sdk_core::types::*;
use agui_sdk_core::Event;
use common::arb::event;
use common::codec::{check, decode_split, js_view, renumber};
use proptest::collection::vec;
use proptest::prelude::*;
use serde_json::Value;

/// Line endings an SSE producer may use.
#[derive(Debug, Clone, Copy)]
enum Eol {
    Lf,
    CrLf,
    Cr,
}

fn reframe(sse_bytes: &[u8], eol: Eol, comment_every: usize) -> Vec<u8> {
    let eol: &[u8] = match eol {
        Eol::Lf => b"\n",
        Eol::CrLf => b"\r\n",
        Eol::Cr => b"\r",
    };
    let mut out = Vec::with_capacity(sse_bytes.len() * 2);
    let mut blank = 0;
    for &b in sse_bytes {
        if b == b'\n' {
            out.extend_from_slice(eol);
            blank += 1;
            // After each frame's closing blank line, sometimes a keep-alive frame.
            if blank % 2 == 0 && comment_every > 0 && (blank / 2) % comment_every == 0 {
                out.extend_from_slice(b": keep-alive");
                out.extend_from_slice(eol);
                out.extend_from_slice(eol);
            }
        } else {
            out.push(b);
        }
    }
    out
}

// ---- what protobuf carries ------------------------------------------------------------

fn clear_parts(c: &mut Content) {
    if let Content::Parts(parts) = c {
        for p in parts {
            match p {
                ContentPart::Text(t) => t.extra.clear(),
                ContentPart::Image(m)
                | ContentPart::Audio(m)
                | ContentPart::Video(m)
                | ContentPart::Document(m) => {
                    m.extra.clear();
                    match &mut m.source {
                        PartSource::Data(s) => s.extra.clear(),
                        PartSource::Url(s) => s.extra.clear(),
                        PartSource::File(s) => s.extra.clear(),
                    }
                }
            }
        }
    }
}

fn strip_message(m: &mut Message) {
    match m {
        Message::Developer(m) => m.extra.clear(),
        Message::System(m) => m.extra.clear(),
        Message::Assistant(m) => {
            m.extra.clear();
            if let Some(calls) = &mut m.tool_calls {
                for c in calls.iter_mut() {
                    c.extra.clear();
                    c.function.extra.clear();
                }
            }
            if m.tool_calls.as_ref().is_some_and(Vec::is_empty) {
                m.tool_calls = None;
            }
        }
        Message::User(m) => {
            m.extra.clear();
            clear_parts(&mut m.content);
        }
        Message::Tool(m) => {
            m.extra.clear();
            clear_parts(&mut m.content);
        }
        Message::Activity(m) => m.extra.clear(),
        Message::Reasoning(m) => m.extra.clear(),
    }
}

fn strip_usage(u: &mut Option<Vec<TokenUsage>>) {
    if let Some(list) = u {
        list.iter_mut().for_each(|u| u.extra.clear());
    }
    if u.as_ref().is_some_and(Vec::is_empty) {
        *u = None;
    }
}

fn strip_patch(p: &mut JsonPatch) {
    for op in p {
        match op {
            PatchOperation::Add(o) => o.extra.clear(),
            PatchOperation::Remove(o) => o.extra.clear(),
            PatchOperation::Replace(o) => o.extra.clear(),
            PatchOperation::Move(o) => o.extra.clear(),
            PatchOperation::Copy(o) => o.extra.clear(),
            PatchOperation::Test(o) => o.extra.clear(),
        }
    }
}

/// The event protobuf delivers for `ev`: no unknown keys, numbers through doubles,
/// `RUN_STARTED.input.resume` always present, empty optional arrays absent.
fn through_protobuf(ev: &Event) -> Event {
    let mut ev = ev.clone();
    ev.extra_mut().clear();
    match &mut ev {
        Event::RunStarted(e) => {
            if let Some(i) = e.input.as_deref_mut() {
                i.extra.clear();
                i.messages.iter_mut().for_each(strip_message);
                i.tools.iter_mut().for_each(|t| t.extra.clear());
                i.context.iter_mut().for_each(|c| c.extra.clear());
                let resume = i.resume.get_or_insert_with(Vec::new);
                resume.iter_mut().for_each(|r| r.extra.clear());
            }
        }
        Event::RunFinished(e) => {
            match &mut e.outcome {
                Some(RunFinishedOutcome::Success(s)) => {
                    s.extra.clear();
                    if s.pending_tool_call_ids.as_ref().is_some_and(Vec::is_empty) {
                        s.pending_tool_call_ids = None;
                    }
                }
                Some(RunFinishedOutcome::Interrupt(i)) => {
                    i.extra.clear();
                    i.interrupts.iter_mut().for_each(|i| i.extra.clear());
                }
                Some(RunFinishedOutcome::Cancelled(c)) => c.extra.clear(),
                None => {}
            }
            strip_usage(&mut e.usage);
        }
        Event::RunError(e) => strip_usage(&mut e.usage),
        Event::SubagentFinished(e) => match &mut e.outcome {
            Some(SubagentFinishedOutcome::Success(s)) => s.extra.clear(),
            Some(SubagentFinishedOutcome::Suspended(s)) => {
                s.extra.clear();
                if s.interrupt_ids.as_ref().is_some_and(Vec::is_empty) {
                    s.interrupt_ids = None;
                }
            }
            None => {}
        },
        Event::ToolCallResult(e) => clear_parts(&mut e.content),
        Event::MessagesSnapshot(e) => e.messages.iter_mut().for_each(strip_message),
        Event::StateDelta(e) => strip_patch(&mut e.delta),
        Event::ActivityDelta(e) => strip_patch(&mut e.patch),
        _ => {}
    }
    let mut json: Value = serde_json::from_str(&ev.to_json_string()).unwrap();
    renumber(&mut json);
    agui_sdk_core::wire::from_json_value(&json).unwrap()
}

fn sizes() -> impl Strategy<Value = Vec<usize>> {
    vec(prop_oneof![1usize..4, 1usize..64, 1usize..2048], 1..8)
}

#[test]
fn sse_survives_any_split() {
    check(
        256,
        || (vec(event(), 0..8), sizes()),
        |(events, sizes)| {
            let mut bytes = Vec::new();
            for ev in &events {
                sse::encode_event(ev, &mut bytes);
            }
            let back = decode_split(Encoding::Sse, &bytes, &sizes)
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(back.len(), events.len());
            for (b, e) in back.iter().zip(&events) {
                prop_assert_eq!(js_view(b), js_view(e));
            }
            // Once numbers are JavaScript's, the trip is exact.
            let mut again = Vec::new();
            for ev in &back {
                sse::encode_event(ev, &mut again);
            }
            prop_assert_eq!(&again, &bytes);
            prop_assert_eq!(decode_split(Encoding::Sse, &again, &sizes).unwrap(), back);
            Ok(())
        },
    );
}

#[test]
fn sse_survives_any_line_ending_and_keep_alives() {
    check(
        256,
        || {
            (
                vec(event(), 1..6),
                prop_oneof![Just(Eol::Lf), Just(Eol::CrLf), Just(Eol::Cr)],
                0usize..3,
                sizes(),
            )
        },
        |(events, eol, comment_every, sizes)| {
            let mut bytes = b"\xEF\xBB\xBF".to_vec();
            for ev in &events {
                sse::encode_event(ev, &mut bytes);
            }
            let bytes = reframe(&bytes, eol, comment_every);
            let back = decode_split(Encoding::Sse, &bytes, &sizes)
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            let back: Vec<Value> = back.iter().map(js_view).collect();
            let want: Vec<Value> = events.iter().map(js_view).collect();
            prop_assert_eq!(back, want);
            Ok(())
        },
    );
}

#[test]
fn protobuf_survives_any_split() {
    check(
        256,
        || (vec(event(), 0..8), sizes()),
        |(events, sizes)| {
            let mut bytes = Vec::new();
            for ev in &events {
                proto::encode_event(ev, &mut bytes);
            }
            let back = decode_split(Encoding::Proto, &bytes, &sizes)
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            let want: Vec<Event> = events.iter().map(through_protobuf).collect();
            prop_assert_eq!(&back, &want);
            // From then on the trip is idempotent (the first one may turn -0.0 into 0).
            let mut again = Vec::new();
            for ev in &back {
                proto::encode_event(ev, &mut again);
            }
            let back2 = decode_split(Encoding::Proto, &again, &sizes)
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(&back2, &back);
            let mut again2 = Vec::new();
            for ev in &back2 {
                proto::encode_event(ev, &mut again2);
            }
            prop_assert_eq!(again2, again);
            Ok(())
        },
    );
}

#[test]
fn truncated_streams_fail_at_the_cut() {
    check(
        256,
        || (vec(event(), 1..5), any::<prop::sample::Index>()),
        |(events, cut)| {
            for encoding in [Encoding::Sse, Encoding::Proto] {
                let mut bytes = Vec::new();
                let mut ends = Vec::new();
                for ev in &events {
                    match encoding {
                        Encoding::Sse => sse::encode_event(ev, &mut bytes),
                        Encoding::Proto => proto::encode_event(ev, &mut bytes),
                    }
                    ends.push(bytes.len());
                }
                let at = cut.index(bytes.len());
                let whole = ends.iter().filter(|e| **e <= at).count();
                let mut dec = EventDecoder::new(encoding);
                dec.push(&bytes[..at]);
                dec.finish();
                let mut got = 0;
                let mut err = None;
                while let Some(r) = dec.next() {
                    match r {
                        Ok(_) => got += 1,
                        Err(e) => err = Some(e),
                    }
                }
                prop_assert_eq!(got, whole);
                if ends.contains(&at) || at == 0 {
                    prop_assert!(err.is_none(), "{:?}", err);
                } else {
                    // A cut inside a frame is reported at that frame.
                    let err = err.expect("a cut frame is reported");
                    prop_assert!(err.is_fatal());
                    prop_assert_eq!(err.index, whole as u64);
                    let start = if whole == 0 { 0 } else { ends[whole - 1] };
                    prop_assert_eq!(err.offset, start as u64);
                }
            }
            Ok(())
        },
    );
}

/// The JSON writer that writes events straight from their fields gives the canonical
/// serializer's bytes for every event: as generated, with unknown keys added, and with
/// strings that need escaping in a field, an unknown key and free-form metadata.
#[test]
fn json_direct_writer_matches_the_serializer() {
    check(
        1024,
        || (event(), 0usize..3, "[\"\\\\\\x00-\\x1f\\x7fa-zé😀]{0,40}"),
        |(mut ev, extra, text)| {
            if extra > 0 {
                ev.extra_mut()
                    .insert(text.clone(), Value::String(text.clone()));
            }
            if extra > 1 {
                ev.extra_mut()
                    .insert("n", serde_json::json!([1.5, -0.0, 1e21, null]));
                let meta = ev.metadata_mut();
                meta.get_or_insert_with(Default::default)
                    .insert(text.clone(), Value::from(text.clone()));
            }
            let mut direct = Vec::new();
            ev.write_json(&mut direct);
            let mut serde = Vec::new();
            agui_sdk_core::wire::write_canonical(&ev, &mut serde);
            prop_assert_eq!(
                String::from_utf8_lossy(&direct),
                String::from_utf8_lossy(&serde),
                "{:?}",
                ev
            );
            Ok(())
        },
    );
}
