//! One Messages stream as AG-UI events: text blocks a text message, each thinking block
//! a reasoning message of its own (its signature an encrypted value), a redacted block
//! a reasoning message with no text whose encrypted value is its data, `tool_use`
//! blocks tool calls. No I/O.

use std::collections::BTreeMap;

use agui_sdk_agent::AgentError;
use agui_sdk_core::types::TokenUsage;
use agui_sdk_core::Event;
use serde_json::{json, Value};

use super::{REDACTED_TYPE, SIGNATURE_TYPE};
use crate::fail;
use crate::provider::{MadeCall, ProviderTurn, TurnResult};
use crate::sse::Frame;
use crate::turn::TurnWriter;

/// One content block of the answer, by its `index`.
#[derive(Debug)]
enum Block {
    Text(String),
    Thinking {
        id: String,
        text: String,
        signature: String,
        open: bool,
    },
    Redacted(String),
    ToolUse {
        id: String,
        name: String,
        arguments: String,
        /// The `input` the block started with (empty when it streams).
        input: Value,
        open: bool,
    },
    /// A block kind this adapter does not take (server tools' blocks).
    Other,
}

/// Token counts as the stream reports them (`message_start`, then cumulative in
/// `message_delta`).
#[derive(Debug, Default)]
struct Counts {
    input: Option<u64>,
    output: Option<u64>,
    cache_read: Option<u64>,
    cache_creation: Option<u64>,
    thinking: Option<u64>,
    seen: bool,
}

impl Counts {
    fn take(&mut self, u: &Value) {
        let n = |k: &str| u.get(k).and_then(Value::as_u64);
        self.seen = true;
        self.input = n("input_tokens").or(self.input);
        self.output = n("output_tokens").or(self.output);
        self.cache_read = n("cache_read_input_tokens").or(self.cache_read);
        self.cache_creation = n("cache_creation_input_tokens").or(self.cache_creation);
        self.thinking = u
            .pointer("/output_tokens_details/thinking_tokens")
            .and_then(Value::as_u64)
            .or(self.thinking);
    }

    fn usage(&self) -> Option<TokenUsage> {
        if !self.seen {
            return None;
        }
        // `TokenUsage::input_tokens` is the whole prompt: the API counts the uncached
        // part, the part read from the cache and the part written to it apart.
        let input = match (self.input, self.cache_read, self.cache_creation) {
            (None, None, None) => None,
            (a, b, c) => Some(a.unwrap_or(0) + b.unwrap_or(0) + c.unwrap_or(0)),
        };
        let total = match (input, self.output) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
        };
        Some(TokenUsage {
            input_tokens: input,
            output_tokens: self.output,
            total_tokens: total,
            reasoning_tokens: self.thinking,
            cached_input_tokens: self.cache_read,
            cache_write_input_tokens: self.cache_creation,
            ..TokenUsage::default()
        })
    }
}

/// Turns the events of one Messages stream into AG-UI events.
#[derive(Debug)]
pub(crate) struct Turn {
    w: TurnWriter,
    blocks: BTreeMap<u64, Block>,
    counts: Counts,
    stop_reason: Option<String>,
}

impl Turn {
    fn start(&mut self, index: u64, block: &Value, out: &mut Vec<Event>) {
        let kind = block["type"].as_str().unwrap_or("");
        let s = |k: &str| block[k].as_str().unwrap_or("").to_owned();
        let b = match kind {
            "text" => {
                let text = s("text");
                self.w.text(&text, out);
                Block::Text(text)
            }
            "thinking" => {
                self.w.close_text(out);
                let id = self.w.next_reasoning_id();
                self.w.open_reasoning(&id, out);
                let text = s("thinking");
                self.w.reasoning(&id, &text, out);
                Block::Thinking {
                    id,
                    text,
                    signature: s("signature"),
                    open: true,
                }
            }
            "redacted_thinking" => {
                self.w.close_text(out);
                let id = self.w.next_reasoning_id();
                let data = s("data");
                self.w.open_reasoning(&id, out);
                self.w.encrypted(&id, &data, REDACTED_TYPE, out);
                self.w.close_reasoning(&id, out);
                Block::Redacted(data)
            }
            "tool_use" => {
                let (id, name) = (s("id"), s("name"));
                self.w.start_call(&id, &name, out);
                Block::ToolUse {
                    id,
                    name,
                    arguments: String::new(),
                    input: block.get("input").cloned().unwrap_or(Value::Null),
                    open: true,
                }
            }
            other => {
                tracing::debug!(
                    kind = %agui_sdk_core::Escaped(other),
                    "a content block this agent does not take: skipped"
                );
                Block::Other
            }
        };
        self.blocks.insert(index, b);
    }

    fn delta(&mut self, index: u64, delta: &Value, out: &mut Vec<Event>) {
        let s = |k: &str| delta[k].as_str().unwrap_or("");
        let kind = delta["type"].as_str().unwrap_or("");
        if kind == "text_delta" {
            if matches!(self.blocks.get(&index), Some(Block::Text(_))) {
                let piece = s("text").to_owned();
                self.w.text(&piece, out);
                if let Some(Block::Text(t)) = self.blocks.get_mut(&index) {
                    t.push_str(&piece);
                }
            }
            return;
        }
        match (kind, self.blocks.get_mut(&index)) {
            ("thinking_delta", Some(Block::Thinking { id, text, open, .. })) if *open => {
                let piece = s("thinking");
                text.push_str(piece);
                self.w.reasoning(id, piece, out);
            }
            ("signature_delta", Some(Block::Thinking { signature, .. })) => {
                signature.push_str(s("signature"));
            }
            (
                "input_json_delta",
                Some(Block::ToolUse {
                    id,
                    arguments,
                    open,
                    ..
                }),
            ) if *open => {
                let piece = s("partial_json");
                arguments.push_str(piece);
                self.w.call_args(id, piece, out);
            }
            _ => {}
        }
    }

    /// Closes block `index` (at its `content_block_stop`, or when the stream ends).
    fn stop(w: &TurnWriter, block: &mut Block, out: &mut Vec<Event>) {
        match block {
            Block::Thinking {
                id,
                signature,
                open,
                ..
            } if *open => {
                // A thinking block whose text is omitted is still signed: its signature
                // is kept the same way.
                if !signature.is_empty() {
                    w.encrypted(id, signature, SIGNATURE_TYPE, out);
                }
                w.close_reasoning(id, out);
                *open = false;
            }
            Block::ToolUse {
                id,
                arguments,
                input,
                open,
                ..
            } if *open => {
                // Arguments come as `input_json_delta`s; a block that started with its
                // whole input and streamed none keeps that input.
                if arguments.is_empty() {
                    let whole = match input {
                        Value::Object(o) if !o.is_empty() => input.to_string(),
                        _ => "{}".to_owned(),
                    };
                    w.call_args(id, &whole, out);
                    *arguments = whole;
                }
                w.end_call(id, out);
                *open = false;
            }
            _ => {}
        }
    }
}

/// The run's failure for a stream's `error` event.
fn stream_error(v: &Value) -> AgentError {
    tracing::warn!(error = %v, "the model's stream carried an error");
    let kind = v
        .pointer("/error/type")
        .and_then(Value::as_str)
        .filter(|k| crate::is_plain_word(k));
    let message = match kind {
        Some(k) => format!("the model endpoint reported an error ({k})"),
        None => "the model endpoint reported an error".to_owned(),
    };
    fail(message, "upstream_error")
}

impl ProviderTurn for Turn {
    fn new(message_id: String) -> Self {
        Turn {
            w: TurnWriter::new(message_id),
            blocks: BTreeMap::new(),
            counts: Counts::default(),
            stop_reason: None,
        }
    }

    fn push(&mut self, frame: Frame<'_>, out: &mut Vec<Event>) -> Result<bool, AgentError> {
        if frame.data.is_empty() {
            return Ok(false);
        }
        let v: Value = serde_json::from_slice(frame.data).map_err(|e| {
            fail(
                format!("the model's stream is malformed: an event's data is not JSON: {e}"),
                "upstream_error",
            )
        })?;
        let kind = frame
            .event
            .or_else(|| v.get("type").and_then(Value::as_str))
            .unwrap_or("");
        let index = v.get("index").and_then(Value::as_u64).unwrap_or(0);
        match kind {
            "message_start" => {
                if let Some(u) = v.pointer("/message/usage") {
                    self.counts.take(u);
                }
            }
            "content_block_start" => self.start(index, &v["content_block"], out),
            "content_block_delta" => self.delta(index, &v["delta"], out),
            "content_block_stop" => {
                if let Some(b) = self.blocks.get_mut(&index) {
                    Self::stop(&self.w, b, out);
                }
            }
            "message_delta" => {
                if let Some(r) = v.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.stop_reason = Some(r.to_owned());
                }
                if let Some(u) = v.get("usage") {
                    self.counts.take(u);
                }
            }
            "message_stop" => return Ok(true),
            "error" => return Err(stream_error(&v)),
            // `ping`, and event kinds added later.
            _ => {}
        }
        Ok(false)
    }

    fn longest_arguments(&self) -> usize {
        self.blocks
            .values()
            .map(|b| match b {
                Block::ToolUse { arguments, .. } => arguments.len(),
                _ => 0,
            })
            .max()
            .unwrap_or(0)
    }

    fn is_whole(&self) -> bool {
        self.stop_reason.is_some()
    }

    fn finish(mut self, out: &mut Vec<Event>) -> TurnResult {
        self.w.close_text(out);
        let mut result = TurnResult {
            usage: self.counts.usage(),
            ..TurnResult::default()
        };
        for (_, mut b) in std::mem::take(&mut self.blocks) {
            Self::stop(&self.w, &mut b, out);
            match b {
                Block::Text(t) if !t.is_empty() => {
                    result.blocks.push(json!({ "type": "text", "text": t }));
                }
                Block::Thinking {
                    text, signature, ..
                } if !signature.is_empty() => {
                    result.blocks.push(
                        json!({ "type": "thinking", "thinking": text, "signature": signature }),
                    );
                }
                Block::Redacted(data) => {
                    result
                        .blocks
                        .push(json!({ "type": "redacted_thinking", "data": data }));
                }
                Block::ToolUse {
                    id,
                    name,
                    arguments,
                    ..
                } => {
                    let input = match serde_json::from_str::<Value>(&arguments) {
                        Ok(v @ Value::Object(_)) => v,
                        _ => json!({}),
                    };
                    result.blocks.push(
                        json!({ "type": "tool_use", "id": id, "name": name, "input": input }),
                    );
                    result.calls.push(MadeCall {
                        id,
                        name,
                        arguments,
                    });
                }
                _ => {}
            }
        }
        result.text = self.w.take_text();
        result.stop = match self.stop_reason.as_deref() {
            Some("refusal") => Some(fail(
                "the model refused to answer (stop reason `refusal`)",
                "refusal",
            )),
            Some("max_tokens") => Some(fail(
                "the model's answer reached its max_tokens before it was whole",
                "max_tokens",
            )),
            Some("model_context_window_exceeded") => Some(fail(
                "the model's answer reached the end of its context window before it was whole",
                "context_window_exceeded",
            )),
            _ => None,
        };
        result
    }
}
