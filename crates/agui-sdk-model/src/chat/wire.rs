//! The chat-completions stream's events: each one's data is a JSON chunk (or `[DONE]`).

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

/// One event's data: a chunk, or `[DONE]`.
pub(crate) fn parse(data: &[u8]) -> Result<Item, String> {
    if data == b"[DONE]" {
        return Ok(Item::Done);
    }
    serde_json::from_slice::<Chunk>(data)
        .map(|c| Item::Chunk(Box::new(c)))
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_chunk_and_done() {
        let data = "{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"h\u{e9}\"}}]}";
        match parse(data.as_bytes()).unwrap() {
            Item::Chunk(c) => assert_eq!(c.choices[0].delta.content.as_deref(), Some("h\u{e9}")),
            Item::Done => panic!(),
        }
        assert!(matches!(parse(b"[DONE]"), Ok(Item::Done)));
        assert!(parse(b"{\"choices\":1}").is_err());
    }
}
