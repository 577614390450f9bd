//! One model turn's chunks as AG-UI events: text, reasoning and tool calls opened,
//! streamed and closed in an order a verifier accepts. No I/O.

use std::collections::BTreeMap;

use agui_sdk_agent::AgentError;
use agui_sdk_core::types::TokenUsage;
use agui_sdk_core::Event;
use serde_json::Value;

use super::wire::{self, Chunk, Item, Usage};
use crate::fail;
use crate::provider::{MadeCall, ProviderTurn};
use crate::sse::Frame;
use crate::turn::TurnWriter;

/// What one model turn produced, once over.
#[derive(Debug, Clone, Default)]
pub(crate) struct TurnResult {
    /// The assistant message's id, when it had text or tool calls.
    pub message_id: Option<String>,
    pub text: String,
    pub calls: Vec<MadeCall>,
    pub refusal: String,
    pub usage: Option<TokenUsage>,
    pub finish_reason: Option<String>,
}

#[derive(Debug, Default)]
struct PendingCall {
    id: Option<String>,
    name: Option<String>,
    /// Arguments received before the call could be started (no id or name yet).
    early_args: String,
    arguments: String,
    started: bool,
    ended: bool,
}

/// Turns the chunks of one model turn into events.
#[derive(Debug)]
pub(crate) struct Turn {
    w: TurnWriter,
    reasoning_id: String,
    call_prefix: String,
    reasoning_open: bool,
    reasoning_used: bool,
    calls: BTreeMap<u32, PendingCall>,
    result: TurnResult,
}

impl Turn {
    fn close_reasoning(&mut self, out: &mut Vec<Event>) {
        if self.reasoning_open {
            self.w.close_reasoning(&self.reasoning_id, out);
            self.reasoning_open = false;
        }
    }

    /// The size of the largest tool call's arguments received so far.
    pub(crate) fn longest_call(&self) -> usize {
        self.calls
            .values()
            .map(|c| c.arguments.len() + c.early_args.len())
            .max()
            .unwrap_or(0)
    }

    /// Whether a chunk gave the turn's finish reason (it is whole even without
    /// `[DONE]`).
    pub(crate) fn has_finish_reason(&self) -> bool {
        self.result.finish_reason.is_some()
    }

    /// Takes one chunk.
    pub(crate) fn push_chunk(&mut self, chunk: Chunk, out: &mut Vec<Event>) {
        if let Some(u) = chunk.usage {
            self.result.usage = Some(usage(&u));
        }
        // Only the first choice is the answer (`n` is never set above 1).
        for choice in chunk.choices.into_iter().filter(|c| c.index == 0) {
            let d = choice.delta;
            let reasoning = d.reasoning_content.or(d.reasoning);
            if let Some(r) = reasoning.filter(|r| !r.is_empty()) {
                if !self.reasoning_open && !self.reasoning_used {
                    self.w.open_reasoning(&self.reasoning_id, out);
                    self.reasoning_open = true;
                    self.reasoning_used = true;
                }
                if self.reasoning_open {
                    self.w.reasoning(&self.reasoning_id, &r, out);
                }
            }
            if let Some(text) = d.content.filter(|t| !t.is_empty()) {
                self.close_reasoning(out);
                self.w.text(&text, out);
                self.result
                    .message_id
                    .get_or_insert_with(|| self.w.message_id().to_owned());
            }
            if let Some(r) = d.refusal {
                self.result.refusal.push_str(&r);
            }
            for tc in d.tool_calls {
                self.close_reasoning(out);
                self.w.call_seen(out);
                self.result
                    .message_id
                    .get_or_insert_with(|| self.w.message_id().to_owned());
                let call = self.calls.entry(tc.index).or_default();
                if let Some(id) = tc.id.filter(|s| !s.is_empty()) {
                    call.id.get_or_insert(id);
                }
                let (name, args) = match tc.function {
                    Some(f) => (f.name, f.arguments),
                    None => (None, None),
                };
                if let Some(n) = name.filter(|s| !s.is_empty()) {
                    // Some servers repeat the name in later deltas; the first counts.
                    call.name.get_or_insert(n);
                }
                let args = args.unwrap_or_default();
                if !call.started {
                    if let (Some(id), Some(name)) = (call.id.clone(), call.name.clone()) {
                        call.started = true;
                        self.w.start_call(&id, &name, out);
                        let early = std::mem::take(&mut call.early_args);
                        call.arguments.push_str(&early);
                        self.w.call_args(&id, &early, out);
                    } else {
                        call.early_args.push_str(&args);
                        continue;
                    }
                }
                call.arguments.push_str(&args);
                if let Some(id) = &call.id {
                    self.w.call_args(id, &args, out);
                }
            }
            if let Some(reason) = choice.finish_reason {
                self.result.finish_reason = Some(reason);
            }
        }
    }

    /// The turn is over (the stream ended, or was cut): closes what is open. Calls
    /// that never got a name are dropped with a warning (they cannot be run).
    pub(crate) fn close(mut self, out: &mut Vec<Event>) -> TurnResult {
        self.close_reasoning(out);
        self.w.close_text(out);
        let prefix = self.call_prefix.clone();
        for (index, mut call) in std::mem::take(&mut self.calls) {
            if !call.started {
                match call.name.clone() {
                    Some(name) => {
                        let id = call
                            .id
                            .clone()
                            .unwrap_or_else(|| format!("{prefix}{index}"));
                        self.w.start_call(&id, &name, out);
                        call.arguments = std::mem::take(&mut call.early_args);
                        self.w.call_args(&id, &call.arguments, out);
                        call.id = Some(id);
                        call.started = true;
                    }
                    None => {
                        tracing::warn!(
                            index,
                            "the model streamed a tool call without a name: dropped"
                        );
                        continue;
                    }
                }
            }
            let id = call.id.clone().unwrap_or_default();
            if !call.ended {
                self.w.end_call(&id, out);
                call.ended = true;
            }
            self.result.calls.push(MadeCall {
                id,
                name: call.name.unwrap_or_default(),
                arguments: call.arguments,
            });
        }
        self.result.text = self.w.take_text();
        self.result
    }
}

impl ProviderTurn for Turn {
    /// A turn whose assistant message is `message_id` (reasoning gets
    /// `{message_id}-reasoning`; calls without an id get `{message_id}-call-{index}`).
    fn new(message_id: String) -> Self {
        Turn {
            reasoning_id: format!("{message_id}-reasoning"),
            call_prefix: format!("{message_id}-call-"),
            w: TurnWriter::new(message_id),
            reasoning_open: false,
            reasoning_used: false,
            calls: BTreeMap::new(),
            result: TurnResult::default(),
        }
    }

    fn push(&mut self, frame: Frame<'_>, out: &mut Vec<Event>) -> Result<bool, AgentError> {
        let item = wire::parse(frame.data).map_err(|e| {
            fail(
                format!("the model's stream is malformed: the model's stream sent data that is not a chunk: {e}"),
                "upstream_error",
            )
        })?;
        let chunk = match item {
            Item::Done => return Ok(true),
            Item::Chunk(c) => c,
        };
        if let Some(err) = &chunk.error {
            tracing::warn!(error = %err, "the model's stream carried an error");
            let kind = err
                .get("type")
                .or_else(|| err.get("code"))
                .and_then(Value::as_str)
                .filter(|k| crate::is_plain_word(k));
            let message = match kind {
                Some(k) => format!("the model endpoint reported an error ({k})"),
                None => "the model endpoint reported an error".to_owned(),
            };
            return Err(fail(message, "upstream_error"));
        }
        self.push_chunk(*chunk, out);
        Ok(false)
    }

    fn longest_arguments(&self) -> usize {
        self.longest_call()
    }

    fn is_whole(&self) -> bool {
        self.has_finish_reason()
    }

    fn finish(self, out: &mut Vec<Event>) -> crate::provider::TurnResult {
        let r = self.close(out);
        let stop = if !r.refusal.is_empty() {
            Some(fail(format!("the model refused: {}", r.refusal), "refusal"))
        } else if r.finish_reason.as_deref() == Some("content_filter") {
            Some(fail(
                "the model's answer was stopped by its content filter",
                "content_filter",
            ))
        } else {
            None
        };
        crate::provider::TurnResult {
            text: r.text,
            calls: r.calls,
            usage: r.usage,
            stop,
            blocks: Vec::new(),
        }
    }
}

fn usage(u: &Usage) -> TokenUsage {
    let detail = |d: &Option<serde_json::Value>, key: &str| {
        d.as_ref().and_then(|d| d.get(key)).and_then(|v| v.as_u64())
    };
    TokenUsage {
        input_tokens: u.prompt_tokens,
        output_tokens: u.completion_tokens,
        total_tokens: u.total_tokens,
        reasoning_tokens: detail(&u.completion_tokens_details, "reasoning_tokens"),
        cached_input_tokens: detail(&u.prompt_tokens_details, "cached_tokens"),
        ..TokenUsage::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agui_sdk_core::semantics::Verifier;

    fn chunk(v: serde_json::Value) -> Chunk {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn reasoning_text_and_parallel_calls_close_in_a_verifiable_order() {
        let mut turn = Turn::new("m1".into());
        let mut out = vec![Event::run_started("t", "r")];
        for c in [
            serde_json::json!({"choices":[{"index":0,"delta":{"role":"assistant","reasoning_content":"think"}}]}),
            serde_json::json!({"choices":[{"index":0,"delta":{"content":"Hi"}}]}),
            serde_json::json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{\"b"}}]}}]}),
            serde_json::json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c0","type":"function","function":{"name":"a","arguments":"{"}}]}}]}),
            serde_json::json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"c1","function":{"name":"b","arguments":"\":1}"}}]}}]}),
            serde_json::json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"}"}}]},"finish_reason":"tool_calls"}]}),
            serde_json::json!({"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}),
        ] {
            turn.push_chunk(chunk(c), &mut out);
        }
        let result = turn.close(&mut out);
        out.push(Event::run_finished("t", "r"));
        let mut v = Verifier::new();
        for e in &out {
            v.push(e).unwrap_or_else(|err| panic!("{err}: {out:?}"));
        }
        assert_eq!(result.text, "Hi");
        assert_eq!(result.calls.len(), 2);
        assert_eq!(result.calls[0].arguments, "{}");
        assert_eq!(result.calls[1].arguments, "{\"b\":1}");
        assert_eq!(result.usage.unwrap().total_tokens, Some(7));
        assert_eq!(result.finish_reason.as_deref(), Some("tool_calls"));
    }
}
