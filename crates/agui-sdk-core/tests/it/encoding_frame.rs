//! A stored run written through `FrameWriter` is byte for byte the same run written
//! live, in every encoding, for a current consumer and for an older one (the rewrite
//! the CopilotKit routes apply for a pre-1.0 client).

use crate::common;

use agui_sdk_core::encoding::Encoding;
use agui_sdk_core::semantics::Downgrade;
use agui_sdk_core::semantics::{FrameWriter, Written};
use agui_sdk_core::Event;
use common::arb::event;
use proptest::prelude::*;

fn writers() -> Vec<FrameWriter> {
    let mut encodings = vec![Encoding::Sse];
    encodings.push(Encoding::Proto);
    let downgrades = [
        Downgrade::none(),
        Downgrade::for_declared(None),
        Downgrade::for_declared(Some("0.0.59")),
    ];
    encodings
        .into_iter()
        .flat_map(|e| downgrades.map(|d| FrameWriter::new(e, d)))
        .collect()
}

fn json(e: &Event) -> Vec<u8> {
    let mut out = Vec::new();
    e.write_json(&mut out);
    out
}

/// Writes `events` live and stored with `w`, each with the id `run:{seq}`.
fn both(w: &FrameWriter, events: &[Event]) -> (Vec<u8>, Vec<u8>, usize) {
    let (mut live, mut stored, mut frames) = (Vec::new(), Vec::new(), 0);
    for (seq, e) in events.iter().enumerate() {
        let a = w
            .write_event(e.clone(), Some(format_args!("run:{seq}")), &mut live)
            .expect("live");
        let b = w
            .write_stored(&json(e), Some(format_args!("run:{seq}")), &mut stored)
            .expect("stored");
        assert_eq!(a, b, "{e:?}");
        frames += usize::from(a == Written::Frame);
    }
    (live, stored, frames)
}

fn same(e: Event) -> Result<(), TestCaseError> {
    // The event as its canonical JSON reads back: the one difference a run log makes
    // is JSON's own (`-0.0` is written `0`, as `JSON.stringify` writes it), which
    // protobuf would otherwise carry from the live event.
    let e = Event::from_json_slice(&json(&e)).expect("canonical JSON reads back");
    for w in writers() {
        let (live, stored, _) = both(&w, std::slice::from_ref(&e));
        prop_assert_eq!(
            String::from_utf8_lossy(&live),
            String::from_utf8_lossy(&stored),
            "{:?} {:?}",
            w.encoding(),
            w.downgrade()
        );
    }
    Ok(())
}

/// On a large stack (`common::codec::check`): the event strategy nests deeply.
#[test]
fn a_stored_event_is_written_as_the_live_one_in_every_encoding_and_downgrade() {
    common::codec::check(2000, event, same);
}

/// A snapshot with a media part, which a pre-1.0 consumer gets as JSON only.
fn media_snapshot() -> Event {
    use agui_sdk_core::types::{Content, ContentPart, Message, UserMessage};
    let part: ContentPart = serde_json::from_value(serde_json::json!({
        "type": "image",
        "source": {"type": "url", "value": "https://e/x.png", "mimeType": "image/png"}
    }))
    .unwrap();
    let user = Message::User(UserMessage::new("u1", Content::Parts(vec![part])));
    Event::messages_snapshot(vec![user])
}

/// A run with every kind the downgrade rewrites (a version spliced out, content parts,
/// a sub-agent, media parts, an empty delta dropped, a cancelled outcome), written whole.
#[test]
fn a_stored_run_is_written_as_the_live_run() {
    let mut started = Event::run_started("t", "r");
    if let Event::RunStarted(s) = &mut started {
        s.protocol_version = Some("1.1".into());
    }
    let mut cancelled = Event::run_finished("t", "r");
    if let Event::RunFinished(f) = &mut cancelled {
        f.outcome = Some(agui_sdk_core::types::RunFinishedOutcome::Cancelled(
            Default::default(),
        ));
    }
    let run = vec![
        started,
        Event::text_message_start("m"),
        Event::text_message_content("m", "hi"),
        Event::text_message_content("m", ""),
        Event::text_message_end("m"),
        Event::subagent_started("s", "h"),
        media_snapshot(),
        Event::state_snapshot(serde_json::json!({"a": [1, 2.5, "x"], "b": null})),
        cancelled,
    ];
    for w in writers() {
        let (live, stored, frames) = both(&w, &run);
        assert_eq!(live, stored, "{:?} {:?}", w.encoding(), w.downgrade());
        // Every event of the run was written, less what the older consumer cannot take.
        let expected = match (w.downgrade().is_active(), w.encoding()) {
            (false, _) => run.len(),
            // The empty delta is dropped.
            (true, Encoding::Sse) => run.len() - 1,
            // And the media snapshot's JSON-only rewrite has no protobuf frame.
            (true, Encoding::Proto) => run.len() - 2,
        };
        assert_eq!(frames, expected, "{:?} {:?}", w.encoding(), w.downgrade());
    }
}
