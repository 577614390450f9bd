//! The chat-completions stream as it arrives: Server-Sent Events whose data is a JSON
//! chunk (or `[DONE]`), read with bounded memory.

use agui_sdk_core::encoding::sse::SseDecoder;
use agui_sdk_core::encoding::{DecodeErrorKind, DecoderLimits};
use serde::Deserialize;
use serde_json::Value;

/// One streamed chunk (`chat.completion.chunk`), with only what the adapter reads.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct Chunk {
    #[serde(default)]
    pub choices: Vec<Choice>,
    #[serde(default)]
    pub usage: Option<Usage>,
    /// An error object sent in place of a chunk.
    #[serde(default)]
    pub error: Option<Value>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct Choice {
    #[serde(default)]
    pub index: u32,
    #[serde(default)]
    pub delta: Delta,
    #[serde(default)]
    pub finish_reason: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct Delta {
    #[serde(default)]
    pub content: Option<String>,
    /// DeepSeek, vLLM, llama.cpp.
    #[serde(default)]
    pub reasoning_content: Option<String>,
    /// OpenRouter, Ollama's compatible endpoint.
    #[serde(default)]
    pub reasoning: Option<String>,
    #[serde(default)]
    pub refusal: Option<String>,
    #[serde(default)]
    pub tool_calls: Vec<ToolCallDelta>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct ToolCallDelta {
    #[serde(default)]
    pub index: u32,
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub function: Option<FunctionDelta>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct FunctionDelta {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub arguments: Option<String>,
}

/// Token counts as the endpoint reports them.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct Usage {
    #[serde(default)]
    pub prompt_tokens: Option<u64>,
    #[serde(default)]
    pub completion_tokens: Option<u64>,
    #[serde(default)]
    pub total_tokens: Option<u64>,
    #[serde(default)]
    pub completion_tokens_details: Option<Value>,
    #[serde(default)]
    pub prompt_tokens_details: Option<Value>,
}

/// What one SSE event of the stream holds.
#[derive(Debug)]
pub(crate) enum Item {
    Chunk(Box<Chunk>),
    Done,
}

/// Why the stream could not be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum WireError {
    #[error("an event of the model's stream exceeds {0} bytes")]
    TooLarge(usize),
    #[error("the model's stream sent data that is not a chunk: {0}")]
    BadChunk(String),
}

/// Splits the bytes of a chat-completions stream into items, with `agui-sdk-core`'s SSE
/// decoder (every line ending, comments and other fields ignored, bounded memory); a
/// `data:` value of `[DONE]` ends the stream.
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

    /// Takes bytes in; appends the complete items to `out`.
    pub(crate) fn push(&mut self, bytes: &[u8], out: &mut Vec<Item>) -> Result<(), WireError> {
        self.decoder.push(bytes);
        self.drain(out)
    }

    /// The end of the bytes: a last event without its blank line is still read (as
    /// model servers are known to end a stream with `data: [DONE]` and nothing after).
    pub(crate) fn finish(&mut self, out: &mut Vec<Item>) -> Result<(), WireError> {
        self.decoder.push(b"\n\n");
        self.decoder.finish();
        self.drain(out)
    }

    fn drain(&mut self, out: &mut Vec<Item>) -> Result<(), WireError> {
        while let Some(frame) = self.decoder.next_frame() {
            let frame = frame.map_err(|e| match e.kind {
                DecodeErrorKind::TooLarge { .. } => WireError::TooLarge(self.max_event),
                _ => WireError::BadChunk(e.to_string()),
            })?;
            out.push(parse(frame.data)?);
        }
        Ok(())
    }
}

fn parse(data: &[u8]) -> Result<Item, WireError> {
    if data == b"[DONE]" {
        return Ok(Item::Done);
    }
    serde_json::from_slice::<Chunk>(data)
        .map(|c| Item::Chunk(Box::new(c)))
        .map_err(|e| WireError::BadChunk(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_anywhere_and_reads_crlf() {
        let stream = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"h\u{e9}\"}}]}\r\n\r\n: comment\n\ndata: [DONE]\n\n";
        let bytes = stream.as_bytes();
        for cut in 0..bytes.len() {
            let mut r = SseReader::new(1 << 20);
            let mut out = Vec::new();
            r.push(&bytes[..cut], &mut out).unwrap();
            r.push(&bytes[cut..], &mut out).unwrap();
            r.finish(&mut out).unwrap();
            assert_eq!(out.len(), 2, "cut at {cut}");
            match &out[0] {
                Item::Chunk(c) => {
                    assert_eq!(c.choices[0].delta.content.as_deref(), Some("h\u{e9}"))
                }
                Item::Done => panic!(),
            }
            assert!(matches!(out[1], Item::Done));
        }
    }

    #[test]
    fn bounded() {
        let mut r = SseReader::new(16);
        let mut out = Vec::new();
        assert!(matches!(
            r.push(&[b'x'; 40], &mut out),
            Err(WireError::TooLarge(16))
        ));
    }
}
