//! A provider's stream as it arrives: Server-Sent Events read with bounded memory, each
//! handed on as its `event:` name and its data.

use agui_sdk_agent::AgentError;
use agui_sdk_core::encoding::sse::SseDecoder;
use agui_sdk_core::encoding::{DecodeErrorKind, DecoderLimits};

use crate::fail;

/// One event of the stream.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Frame<'a> {
    /// Its `event:` field, when it had one.
    #[cfg_attr(
        not(any(feature = "anthropic", feature = "responses")),
        allow(dead_code)
    )]
    pub event: Option<&'a str>,
    /// Its data lines, joined with `\n`.
    pub data: &'a [u8],
}

/// Why the stream could not be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum WireError {
    #[error("an event of the model's stream exceeds {0} bytes")]
    TooLarge(usize),
    #[error("the model's stream is not an event stream: {0}")]
    BadFrame(String),
}

fn malformed(e: WireError) -> AgentError {
    fail(
        format!("the model's stream is malformed: {e}"),
        "upstream_error",
    )
}

/// Splits the bytes of a stream into events, with `agui-sdk-core`'s SSE decoder
/// (every line ending, comments and other fields ignored, bounded memory).
#[derive(Debug)]
pub(crate) struct SseReader {
    decoder: SseDecoder,
    max_event: usize,
}

impl SseReader {
    pub(crate) fn new(max_event: usize) -> Self {
        let limits = DecoderLimits::default().with_max_event_size(max_event);
        SseReader {
            decoder: SseDecoder::with_limits(limits),
            max_event,
        }
    }

    /// Takes bytes in; hands each complete event to `each`; how many there were.
    pub(crate) fn push(
        &mut self,
        bytes: &[u8],
        each: &mut dyn FnMut(Frame<'_>) -> Result<(), AgentError>,
    ) -> Result<usize, AgentError> {
        self.decoder.push(bytes);
        self.drain(each)
    }

    /// The end of the bytes: a last event without its blank line is still read (as
    /// model servers are known to end a stream with `data: [DONE]` and nothing after).
    pub(crate) fn finish(
        &mut self,
        each: &mut dyn FnMut(Frame<'_>) -> Result<(), AgentError>,
    ) -> Result<usize, AgentError> {
        self.decoder.push(b"\n\n");
        self.decoder.finish();
        self.drain(each)
    }

    fn drain(
        &mut self,
        each: &mut dyn FnMut(Frame<'_>) -> Result<(), AgentError>,
    ) -> Result<usize, AgentError> {
        let mut n = 0;
        while let Some(frame) = self.decoder.next_frame() {
            let frame = frame.map_err(|e| match e.kind {
                DecodeErrorKind::TooLarge { .. } => WireError::TooLarge(self.max_event),
                _ => WireError::BadFrame(e.to_string()),
            });
            let frame = frame.map_err(malformed)?;
            n += 1;
            each(Frame {
                event: frame.event,
                data: frame.data,
            })?;
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(r: &mut SseReader, bytes: &[u8], out: &mut Vec<(Option<String>, String)>) {
        r.push(bytes, &mut |f| {
            out.push((
                f.event.map(str::to_owned),
                String::from_utf8(f.data.to_vec()).unwrap(),
            ));
            Ok(())
        })
        .unwrap();
    }

    #[test]
    fn splits_anywhere_and_reads_crlf_and_event_names() {
        let stream = "event: a\r\ndata: {\"x\":\"h\u{e9}\"}\r\n\r\n: comment\n\ndata: [DONE]\n\n";
        let bytes = stream.as_bytes();
        for cut in 0..bytes.len() {
            let mut r = SseReader::new(1 << 20);
            let mut out = Vec::new();
            read(&mut r, &bytes[..cut], &mut out);
            read(&mut r, &bytes[cut..], &mut out);
            r.finish(&mut |_| Ok(())).unwrap();
            assert_eq!(
                out,
                [
                    (Some("a".to_owned()), "{\"x\":\"h\u{e9}\"}".to_owned()),
                    (None, "[DONE]".to_owned())
                ],
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn bounded() {
        let mut r = SseReader::new(16);
        let e = r.push(&[b'x'; 40], &mut |_| Ok(())).unwrap_err();
        assert!(e.to_string().contains("exceeds 16 bytes"), "{e}");
    }
}
