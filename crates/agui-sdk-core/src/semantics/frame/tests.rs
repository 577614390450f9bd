use super::*;

fn json(e: &Event) -> Vec<u8> {
    let mut out = Vec::new();
    e.write_json(&mut out);
    out
}

fn content(delta: &str) -> Event {
    Event::text_message_content("m", delta)
}

#[test]
fn sse_measures_the_data_and_proto_the_whole_frame() {
    let e = content("hello");
    let data = json(&e).len();
    let sse = FrameWriter::new(Encoding::Sse, Downgrade::none());
    // At the limit: written, whatever the framing and the id add.
    let mut out = b"before".to_vec();
    let w = sse.with_max_event_size(data);
    assert_eq!(
        w.write_event(e.clone(), Some(format_args!("r:1")), &mut out),
        Ok(Written::Frame)
    );
    assert_eq!(
        out.len(),
        "before".len() + "id: r:1\n".len() + data + SSE_FRAMING
    );
    // One byte over: refused, and nothing of it (nor of its id) is left.
    let w = sse.with_max_event_size(data - 1);
    let mut out = b"before".to_vec();
    let err = w
        .write_event(e.clone(), Some(format_args!("r:1")), &mut out)
        .unwrap_err();
    assert_eq!(
        err,
        FrameError::TooLarge {
            event_type: EventType::TextMessageContent,
            size: data,
            limit: data - 1
        }
    );
    assert_eq!(out, b"before");
    // The same rule for the stored text.
    assert_eq!(
        w.write_stored(&json(&e), Some(format_args!("r:1")), &mut out),
        Err(err)
    );
    assert_eq!(out, b"before");

    #[cfg(feature = "proto")]
    {
        let mut frame = Vec::new();
        crate::encoding::proto::encode_event(&e, &mut frame);
        let proto = FrameWriter::new(Encoding::Proto, Downgrade::none());
        let mut out = Vec::new();
        let w = proto.with_max_event_size(frame.len());
        assert_eq!(w.write_event(e.clone(), None, &mut out), Ok(Written::Frame));
        assert_eq!(out, frame, "the id is SSE's only");
        let w = proto.with_max_event_size(frame.len() - 1);
        let mut out = Vec::new();
        assert!(matches!(
            w.write_stored(&json(&e), None, &mut out),
            Err(FrameError::TooLarge { size, .. }) if size == frame.len()
        ));
        assert!(out.is_empty());
    }
}

#[test]
fn the_default_limit_is_the_decoders() {
    let w = FrameWriter::new(Encoding::Sse, Downgrade::none());
    assert_eq!(w.max_event_size(), DecoderLimits::DEFAULT_MAX_EVENT_SIZE);
    let big = content(&"x".repeat(DecoderLimits::DEFAULT_MAX_EVENT_SIZE));
    let mut out = Vec::new();
    assert!(matches!(
        w.write_event(big, None, &mut out),
        Err(FrameError::TooLarge {
            event_type: EventType::TextMessageContent,
            ..
        })
    ));
    assert!(out.is_empty());
}

#[test]
fn a_dropped_event_writes_nothing_not_even_its_id() {
    let old = FrameWriter::new(Encoding::Sse, Downgrade::for_declared(None));
    let mut out = Vec::new();
    assert_eq!(
        old.write_event(content(""), Some(format_args!("r:3")), &mut out),
        Ok(Written::Dropped)
    );
    assert_eq!(
        old.write_stored(&json(&content("")), Some(format_args!("r:3")), &mut out),
        Ok(Written::Dropped)
    );
    assert!(out.is_empty());
    // The current version takes it as it is.
    let new = FrameWriter::new(Encoding::Sse, Downgrade::none());
    assert_eq!(
        new.write_stored(&json(&content("")), None, &mut out),
        Ok(Written::Frame)
    );
    assert_eq!(
        out,
        b"data: {\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"m\",\"delta\":\"\"}\n\n"
    );
}

/// A snapshot with a media part, which a pre-1.0 consumer gets as JSON only.
fn media_snapshot() -> Event {
    use crate::types::{Content, ContentPart, Message, UserMessage};
    let part: ContentPart = serde_json::from_value(serde_json::json!({
        "type": "image",
        "source": {"type": "url", "value": "https://e/x.png", "mimeType": "image/png"}
    }))
    .unwrap();
    let user = Message::User(UserMessage::new("u1", Content::Parts(vec![part])));
    Event::messages_snapshot(vec![user])
}

#[cfg(feature = "proto")]
#[test]
fn a_rewrite_into_json_has_no_protobuf_frame() {
    let old = FrameWriter::new(Encoding::Proto, Downgrade::for_declared(None));
    let e = media_snapshot();
    let mut out = Vec::new();
    assert_eq!(
        old.write_event(e.clone(), None, &mut out),
        Ok(Written::Dropped)
    );
    assert_eq!(
        old.write_stored(&json(&e), None, &mut out),
        Ok(Written::Dropped)
    );
    assert!(out.is_empty());
    // On SSE it is the rewritten JSON.
    let sse = FrameWriter::new(Encoding::Sse, Downgrade::for_declared(None));
    assert_eq!(sse.write_event(e, None, &mut out), Ok(Written::Frame));
    let text = String::from_utf8_lossy(&out);
    assert!(
        text.starts_with("data: {") && text.contains("\"binary\""),
        "{text}"
    );
}

#[test]
fn a_stored_text_that_is_no_event_is_said_so() {
    let w = FrameWriter::new(Encoding::Sse, Downgrade::for_declared(None));
    let mut out = Vec::new();
    assert!(matches!(
        w.write_stored(b"{\"type\":\"SUBAGENT_STARTED\",", None, &mut out),
        Err(FrameError::Undecodable(_))
    ));
    assert!(out.is_empty());
    // With nothing to rewrite, SSE frames the stored text without reading it.
    let plain = FrameWriter::new(Encoding::Sse, Downgrade::none());
    assert_eq!(
        plain.write_stored(b"{\"type\":\"X\"}", None, &mut out),
        Ok(Written::Frame)
    );
    assert_eq!(out, b"data: {\"type\":\"X\"}\n\n");
}
