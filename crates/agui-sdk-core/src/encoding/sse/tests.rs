use super::*;

fn frames(input: &[&[u8]]) -> Vec<(Option<String>, String, String)> {
    let mut dec = SseDecoder::new();
    let mut out = Vec::new();
    for chunk in input {
        dec.push(chunk);
        while let Some(f) = dec.next_frame() {
            let f = f.unwrap();
            out.push((
                f.event.map(str::to_owned),
                f.data_str().into_owned(),
                f.last_event_id.to_owned(),
            ));
        }
    }
    dec.finish();
    assert!(dec.next_frame().is_none());
    out
}

#[test]
fn whatwg_examples() {
    // From the spec: three lines of data, a comment, an id that persists.
    let got = frames(&[b": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\ndata:  third event\n\n"]);
    assert_eq!(
        got,
        vec![
            (None, "first event".into(), "1".into()),
            (None, "second event".into(), "".into()),
            (None, " third event".into(), "".into()),
        ]
    );
    let got = frames(&[b"data\n\ndata\ndata\n\n"]);
    assert_eq!(got.len(), 2);
    assert_eq!(got[0].1, "");
    assert_eq!(got[1].1, "\n");
}

#[test]
fn line_endings_and_bom() {
    let got = frames(&[
        b"\xEF\xBB",
        b"\xBFevent: x\rdata: a\r",
        b"\ndata: b\r\n\r",
        b"\n",
    ]);
    assert_eq!(got, vec![(Some("x".into()), "a\nb".into(), "".into())]);
}

#[test]
fn frames_without_data_are_not_events() {
    assert!(frames(&[b"event: ping\nid: 3\n\n: comment\n\n"]).is_empty());
}

#[test]
fn retry_and_id_rules() {
    let mut dec = SseDecoder::new();
    dec.push(b"retry: 1500\nretry: 12x\nid: a\0b\nid: ok\n\n");
    assert!(dec.next_frame().is_none());
    assert_eq!(dec.retry(), Some(1500));
    assert_eq!(dec.last_event_id(), "ok");
}

#[test]
fn truncated_event_is_reported() {
    let mut dec = SseDecoder::new();
    dec.push(b"data: {\"type\":\"RUN_ERROR\",\"message\":\"x\"}\n");
    assert!(dec.next().is_none());
    dec.finish();
    let err = dec.next().unwrap().unwrap_err();
    assert!(matches!(err.kind, DecodeErrorKind::Truncated { .. }));
    assert!(dec.next().is_none());
}

#[test]
fn oversized_line_fails_without_buffering_it() {
    let mut dec = SseDecoder::with_limits(DecoderLimits::default().with_max_event_size(64));
    dec.push(b"data: ");
    dec.push(&[b'x'; 100]);
    let err = dec.next().unwrap().unwrap_err();
    assert_eq!(err.kind, DecodeErrorKind::TooLarge { limit: 64 });
    assert!(err.is_fatal());
    assert!(dec.next().is_none());
}

#[test]
fn oversized_multi_line_data_fails() {
    let mut dec = SseDecoder::with_limits(DecoderLimits::default().with_max_event_size(64));
    for _ in 0..10 {
        dec.push(b"data: 0123456789\n");
    }
    let err = dec.next().unwrap().unwrap_err();
    assert_eq!(err.kind, DecodeErrorKind::TooLarge { limit: 64 });
}

#[test]
fn unknown_types_are_skipped_or_reported() {
    let input = b"data: {\"type\":\"THINKING_START\"}\n\ndata: {\"type\":\"RUN_ERROR\",\"message\":\"m\"}\n\n";
    let mut dec = SseDecoder::new();
    dec.push(input);
    assert!(matches!(dec.next(), Some(Ok(Event::RunError(_)))));
    assert_eq!(dec.skipped(), 1);
    let mut dec = SseDecoder::new().skip_unknown_events(false);
    dec.push(input);
    let err = dec.next().unwrap().unwrap_err();
    assert_eq!(
        err.kind,
        DecodeErrorKind::UnknownEventType(Some("THINKING_START".into()))
    );
    assert_eq!((err.index, err.offset), (0, 0));
    assert!(matches!(dec.next(), Some(Ok(Event::RunError(_)))));
}

#[test]
fn invalid_utf8_is_replaced() {
    let mut dec = SseDecoder::new();
    dec.push(b"data: {\"type\":\"RUN_ERROR\",\"message\":\"a\xFFb\"}\n\n");
    match dec.next() {
        Some(Ok(Event::RunError(e))) => assert_eq!(e.message, "a\u{FFFD}b"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn comments_encode_as_ignored_frames() {
    let mut out = Vec::new();
    encode_comment("keep-alive\nsecond", &mut out);
    assert_eq!(out, b": keep-alive\n: second\n\n");
    assert!(frames(&[&out]).is_empty());
}

/// Every dispatched event's (index, offset, data), or the error that ends the
/// stream, read by one decoder.
type Read = Vec<Result<(u64, u64, Vec<u8>), (u64, u64, String)>>;

fn read_whole(stream: &[u8], limits: DecoderLimits) -> Read {
    let mut dec = SseDecoder::with_limits(limits);
    dec.push(stream);
    dec.finish();
    let mut got = Vec::new();
    read_into(&mut dec, 0, &mut got);
    got
}

/// Appends what `dec` gives to `got`, indexes counted from `base`.
fn read_into(dec: &mut SseDecoder, base: u64, got: &mut Read) {
    while let Some(r) = dec.next_frame() {
        got.push(match r {
            Ok(e) => Ok((base + e.index, e.offset, e.data.to_vec())),
            Err(e) => Err((base + e.index, e.offset, e.kind.to_string())),
        });
    }
}

/// The same, cut as a parallel reader cuts it: windows of the given sizes, each cut
/// at its last boundary (or not at all, then grown), every piece read by a decoder
/// restarted at its offset (`restart_at` and `push`, or `restart_with`), indexes added
/// up.
fn read_in_pieces(stream: &[u8], windows: &[usize], limits: DecoderLimits) -> Read {
    let mut dec = SseDecoder::with_limits(limits);
    let (mut start, mut base, mut got) = (0usize, 0u64, Vec::new());
    let mut pieces = 0usize;
    let mut w = windows.iter().cycle();
    while start < stream.len() {
        let mut end = start;
        let cut = loop {
            end = (end + w.next().copied().unwrap_or(1)).min(stream.len());
            if end == stream.len() {
                break end;
            }
            if let Some(c) = last_boundary(&stream[start..end]) {
                break start + c;
            }
        };
        // Every other piece handed over rather than copied in.
        if pieces.is_multiple_of(2) {
            dec.restart_at(start as u64);
            dec.push(&stream[start..cut]);
        } else {
            let mut piece = stream[start..cut].to_vec();
            dec.restart_with(start as u64, &mut piece);
        }
        pieces += 1;
        dec.finish();
        read_into(&mut dec, base, &mut got);
        if matches!(got.last(), Some(Err(_))) {
            break;
        }
        base += dec.events_seen();
        start = cut;
    }
    got
}

/// The default limits, or (`small`) an event size limit that streams of a few frames
/// reach.
fn limits(small: bool) -> DecoderLimits {
    if small {
        DecoderLimits {
            max_event_size: 24,
            ..DecoderLimits::default()
        }
    } else {
        DecoderLimits::default()
    }
}

fn sse_piece() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
    use proptest::prelude::*;
    prop_oneof![
        Just(b"data: {\"type\":\"RUN_STARTED\"}".to_vec()),
        Just(b"data:x".to_vec()),
        Just(b"data".to_vec()),
        Just(b": comment".to_vec()),
        Just(b"event: custom".to_vec()),
        Just(b"id: 7".to_vec()),
        Just(b"retry: 10".to_vec()),
        Just(b"\xEF\xBB\xBF".to_vec()),
        Just(b"\n".to_vec()),
        Just(b"\n".to_vec()),
        Just(b"\r\n".to_vec()),
        Just(b"\r".to_vec()),
        prop::collection::vec(any::<u8>(), 0..6),
    ]
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(3000))]

    /// A stream cut at `last_boundary` and read piece by piece with `restart_at`
    /// gives exactly what one decoder gives: the same events, offsets, indexes, and
    /// the same error at the same place (over line endings of every kind, byte
    /// order marks, comments, fields, garbage, and events over the size limit).
    #[test]
    fn pieces_cut_at_boundaries_read_as_the_whole(
        parts in proptest::collection::vec(sse_piece(), 0..60),
        windows in proptest::collection::vec(1usize..40, 1..6),
        small in proptest::bool::ANY,
    ) {
        let stream = parts.concat();
        let limits = limits(small);
        proptest::prop_assert_eq!(
            read_in_pieces(&stream, &windows, limits),
            read_whole(&stream, limits)
        );
    }
}

/// Everything a decoder gives for `stream` pushed in chunks of the given sizes, read
/// after every push: each frame's index, offset, `event` name, data and last event id,
/// or the error.
fn read_chunked(
    stream: &[u8],
    windows: &[usize],
    limits: DecoderLimits,
    long_way: bool,
) -> Vec<String> {
    let mut dec = SseDecoder::with_limits(limits);
    dec.long_way = long_way;
    let mut got = Vec::new();
    let mut read = |dec: &mut SseDecoder| {
        while let Some(r) = dec.next_frame() {
            got.push(match r {
                Ok(f) => format!(
                    "{} {} {:?} {:?} {:?}",
                    f.index, f.offset, f.event, f.data, f.last_event_id
                ),
                Err(e) => format!("error {} {} {}", e.index, e.offset, e.kind),
            });
        }
    };
    let mut at = 0;
    for w in windows.iter().cycle() {
        if at >= stream.len() {
            break;
        }
        let end = (at + w).min(stream.len());
        dec.push(&stream[at..end]);
        read(&mut dec);
        at = end;
    }
    dec.finish();
    read(&mut dec);
    got
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(3000))]

    /// The fast path for `data: <line>\n\n` frames gives what the line-by-line reading
    /// gives, on any stream pushed in any chunks: the same frames, offsets, indexes,
    /// event names, ids, and the same error at the same place.
    #[test]
    fn the_common_frame_reads_as_the_long_way(
        parts in proptest::collection::vec(
            proptest::prop_oneof![
                3 => proptest::strategy::Just(b"data: {\"type\":\"RUN_STARTED\"}\n\n".to_vec()),
                1 => proptest::strategy::Just(b"data: x\n\r\n".to_vec()),
                1 => proptest::strategy::Just(b"data: x\ndata: y\n\n".to_vec()),
                1 => proptest::strategy::Just(b"data: ".to_vec()),
                4 => sse_piece(),
            ],
            0..40,
        ),
        windows in proptest::collection::vec(1usize..60, 1..6),
        small in proptest::bool::ANY,
    ) {
        let stream = parts.concat();
        let limits = limits(small);
        proptest::prop_assert_eq!(
            read_chunked(&stream, &windows, limits, false),
            read_chunked(&stream, &windows, limits, true)
        );
    }
}

#[test]
fn boundaries_are_after_blank_lines_ending_in_a_line_feed() {
    assert_eq!(last_boundary(b"data: x\n\ndata: y\n"), Some(9));
    assert_eq!(last_boundary(b"data: x\r\n\r\ndata"), Some(11));
    assert_eq!(last_boundary(b"data: x\r\n"), None);
    assert_eq!(last_boundary(b"data: x\r\r\n"), Some(10));
    assert_eq!(last_boundary(b"\n"), Some(1));
    assert_eq!(last_boundary(b"\r\n"), Some(2));
    assert_eq!(last_boundary(b"x\r"), None);
}

#[test]
fn the_frame_writer_is_read_back_by_the_decoder() {
    let mut out = Vec::new();
    encode_retry(2500, &mut out);
    encode_id(format_args!("run-1:{}", 1), &mut out);
    encode_event(&Event::text_message_start("m"), &mut out);
    out.extend_from_slice(KEEP_ALIVE);
    encode_comment("cursor_expired", &mut out);
    encode_id("bad\nid\r\0x", &mut out);
    let end = Event::text_message_end("m").to_json_string();
    encode_data(end.as_bytes(), &mut out);
    // Line breaks in data that is not JSON cannot split the frame.
    encode_data(b"{\"type\":\"RUN_ERROR\",\n\"message\":\"m\"}", &mut out);

    let mut dec = SseDecoder::new();
    dec.push(&out);
    dec.finish();
    let first = dec.next_frame().unwrap().unwrap();
    assert_eq!(first.last_event_id, "run-1:1");
    assert_eq!(
        first.data_str(),
        Event::text_message_start("m").to_json_string()
    );
    assert_eq!(dec.retry(), Some(2500));
    let second = dec.next_frame().unwrap().unwrap();
    assert_eq!(second.last_event_id, "badidx");
    assert_eq!(second.data_str(), end);
    let third = dec.next().unwrap().unwrap();
    assert_eq!(
        third.to_json_string(),
        r#"{"type":"RUN_ERROR","message":"m"}"#
    );
    assert!(dec.next().is_none());
}
