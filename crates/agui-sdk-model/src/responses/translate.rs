//! One Responses stream as AG-UI events: each reasoning item a reasoning message of its
//! own (its id the item's, its summary and reasoning text the content, its encrypted
//! content an encrypted value), output text a text message, `function_call` items tool
//! calls by `call_id`. No I/O.

use std::collections::BTreeMap;

use agui_sdk_agent::AgentError;
use agui_sdk_core::types::TokenUsage;
use agui_sdk_core::Event;
use serde_json::{json, Value};

use super::ENCRYPTED_TYPE;
use crate::fail;
use crate::provider::{MadeCall, ProviderTurn, TurnResult};
use crate::sse::Frame;
use crate::turn::TurnWriter;

/// One output item of the answer, by its `output_index`.
#[derive(Debug)]
enum Item {
    Reasoning {
        /// The reasoning message's id: the item's own.
        id: String,
        /// The summary parts, in the order they came.
        summary: Vec<String>,
        /// The `summary_index` of the last part.
        last_part: Option<usize>,
        /// Whether any text (summary or reasoning text) was streamed.
        streamed: bool,
        encrypted: String,
        open: bool,
    },
    Message {
        text: String,
    },
    Call {
        call_id: String,
        name: String,
        arguments: String,
        open: bool,
    },
    /// An item kind this adapter does not take (built-in tools' calls, …).
    Other,
}

/// Turns the events of one Responses stream into AG-UI events.
#[derive(Debug)]
pub(crate) struct Turn {
    w: TurnWriter,
    items: BTreeMap<u64, Item>,
    refusal: String,
    usage: Option<TokenUsage>,
    /// How the response ended: `completed`, or `incomplete` with its reason.
    end: Option<End>,
}

#[derive(Debug)]
enum End {
    Completed,
    Incomplete(String),
}

fn usage(u: &Value) -> TokenUsage {
    let n = |p: &str| u.pointer(p).and_then(Value::as_u64);
    TokenUsage {
        input_tokens: n("/input_tokens"),
        output_tokens: n("/output_tokens"),
        total_tokens: n("/total_tokens"),
        reasoning_tokens: n("/output_tokens_details/reasoning_tokens"),
        cached_input_tokens: n("/input_tokens_details/cached_tokens"),
        cache_write_input_tokens: n("/input_tokens_details/cache_write_tokens"),
        ..TokenUsage::default()
    }
}

/// The run's failure for a stream's `error` event or a `response.failed`: the error
/// object's kind (`code`, else `type`) when it is a plain word, never its message.
fn reported(what: &str, error: Option<&Value>, whole: &Value) -> AgentError {
    tracing::warn!(error = %whole, "the model's stream reported an error");
    let kind = error
        .and_then(|e| e.get("code").or_else(|| e.get("type")))
        .and_then(Value::as_str)
        .filter(|k| crate::is_plain_word(k) && *k != "error");
    let message = match kind {
        Some(k) => format!("the model endpoint reported {what} ({k})"),
        None => format!("the model endpoint reported {what}"),
    };
    fail(message, "upstream_error")
}

impl Turn {
    /// Opens item `index` from its `output_item.added` (or its `done`, when no `added`
    /// came), once.
    fn start(&mut self, index: u64, item: &Value, out: &mut Vec<Event>) {
        if self.items.contains_key(&index) {
            return;
        }
        let s = |k: &str| item[k].as_str().unwrap_or("").to_owned();
        let it = match item["type"].as_str().unwrap_or("") {
            "reasoning" => {
                self.w.close_text(out);
                let counted = self.w.next_reasoning_id();
                let id = match s("id") {
                    id if !id.is_empty() => id,
                    _ => counted,
                };
                self.w.open_reasoning(&id, out);
                Item::Reasoning {
                    id,
                    summary: Vec::new(),
                    last_part: None,
                    streamed: false,
                    encrypted: String::new(),
                    open: true,
                }
            }
            "message" => Item::Message {
                text: String::new(),
            },
            "function_call" => {
                let call_id = match s("call_id") {
                    id if !id.is_empty() => id,
                    _ => format!("{}-call-{index}", self.w.message_id()),
                };
                let name = s("name");
                self.w.start_call(&call_id, &name, out);
                Item::Call {
                    call_id,
                    name,
                    arguments: String::new(),
                    open: true,
                }
            }
            other => {
                tracing::debug!(
                    kind = %agui_sdk_core::Escaped(other),
                    "an output item this agent does not take: skipped"
                );
                Item::Other
            }
        };
        self.items.insert(index, it);
    }

    /// A piece of reasoning: of summary part `summary` (`None`: reasoning text).
    fn reasoning(&mut self, index: u64, summary: Option<usize>, piece: &str, out: &mut Vec<Event>) {
        let Some(Item::Reasoning {
            id,
            summary: parts,
            last_part,
            streamed,
            open: true,
            ..
        }) = self.items.get_mut(&index)
        else {
            return;
        };
        if piece.is_empty() {
            return;
        }
        if let Some(i) = summary {
            // Summary parts are apart in the message's text by a blank line.
            // Another index than the last starts a new part (one part per index seen,
            // never one per index skipped: memory follows what came).
            if *last_part != Some(i) || parts.is_empty() {
                *last_part = Some(i);
                if *streamed {
                    self.w.reasoning(id, "\n\n", out);
                }
                parts.push(String::new());
            }
            if let Some(last) = parts.last_mut() {
                last.push_str(piece);
            }
        }
        *streamed = true;
        self.w.reasoning(id, piece, out);
    }

    fn arguments(&mut self, index: u64, piece: &str, out: &mut Vec<Event>) {
        if let Some(Item::Call {
            call_id,
            arguments,
            open: true,
            ..
        }) = self.items.get_mut(&index)
        {
            arguments.push_str(piece);
            self.w.call_args(call_id, piece, out);
        }
    }

    /// Closes item `index` with the whole item of its `output_item.done`: what was not
    /// streamed is taken from it.
    fn done(&mut self, index: u64, item: &Value, out: &mut Vec<Event>) {
        self.start(index, item, out);
        let texts = |k: &str| -> Vec<String> {
            item[k]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|p| p["text"].as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default()
        };
        let mut message_text = None;
        let mut close = false;
        match self.items.get_mut(&index) {
            Some(Item::Reasoning {
                id,
                summary,
                streamed,
                encrypted,
                open,
                ..
            }) if *open => {
                if !*streamed {
                    let parts = texts("summary");
                    let mut whole: Vec<String> =
                        parts.iter().filter(|t| !t.is_empty()).cloned().collect();
                    whole.extend(texts("content").into_iter().filter(|t| !t.is_empty()));
                    self.w.reasoning(id, &whole.join("\n\n"), out);
                    *summary = parts;
                }
                if let Some(e) = item["encrypted_content"].as_str() {
                    e.clone_into(encrypted);
                }
                close = true;
            }
            // Nothing streamed: the item's whole content.
            Some(Item::Message { text }) if text.is_empty() => {
                let mut whole = String::new();
                for p in item["content"].as_array().into_iter().flatten() {
                    match p["type"].as_str() {
                        Some("output_text") => {
                            whole.push_str(p["text"].as_str().unwrap_or(""));
                        }
                        Some("refusal") if self.refusal.is_empty() => {
                            self.refusal = p["refusal"].as_str().unwrap_or("").to_owned();
                        }
                        _ => {}
                    }
                }
                message_text = Some(whole);
            }
            Some(Item::Call {
                call_id,
                arguments,
                open,
                ..
            }) if *open => {
                if arguments.is_empty() {
                    let whole = item["arguments"].as_str().unwrap_or("");
                    self.w.call_args(call_id, whole, out);
                    whole.clone_into(arguments);
                }
                close = true;
            }
            _ => {}
        }
        if close {
            Self::close(&self.w, self.items.get_mut(&index), out);
        }
        if let Some(t) = message_text {
            self.w.text(&t, out);
            if let Some(Item::Message { text }) = self.items.get_mut(&index) {
                *text = t;
            }
        }
    }

    /// Closes an open reasoning message or tool call.
    fn close(w: &TurnWriter, item: Option<&mut Item>, out: &mut Vec<Event>) {
        match item {
            Some(Item::Reasoning {
                id,
                encrypted,
                open,
                ..
            }) if *open => {
                if !encrypted.is_empty() {
                    w.encrypted(id, encrypted, ENCRYPTED_TYPE, out);
                }
                w.close_reasoning(id, out);
                *open = false;
            }
            Some(Item::Call { call_id, open, .. }) if *open => {
                w.end_call(call_id, out);
                *open = false;
            }
            _ => {}
        }
    }
}

impl ProviderTurn for Turn {
    fn new(message_id: String) -> Self {
        Turn {
            w: TurnWriter::new(message_id),
            items: BTreeMap::new(),
            refusal: String::new(),
            usage: None,
            end: None,
        }
    }

    fn push(&mut self, frame: Frame<'_>, out: &mut Vec<Event>) -> Result<bool, AgentError> {
        if frame.data.is_empty() {
            return Ok(false);
        }
        if frame.data == b"[DONE]" {
            return Ok(true);
        }
        let v: Value = serde_json::from_slice(frame.data).map_err(|e| {
            fail(
                format!("the model's stream is malformed: an event's data is not JSON: {e}"),
                "upstream_error",
            )
        })?;
        let kind = v
            .get("type")
            .and_then(Value::as_str)
            .or(frame.event)
            .unwrap_or("");
        let index = v.get("output_index").and_then(Value::as_u64).unwrap_or(0);
        let delta = v.get("delta").and_then(Value::as_str).unwrap_or("");
        match kind {
            "response.output_item.added" => self.start(index, &v["item"], out),
            "response.output_item.done" => self.done(index, &v["item"], out),
            "response.output_text.delta" => {
                // A delta before its item was added: its `done` must not repeat it.
                self.items.entry(index).or_insert_with(|| Item::Message {
                    text: String::new(),
                });
                if matches!(self.items.get(&index), Some(Item::Message { .. })) {
                    self.w.text(delta, out);
                    if let Some(Item::Message { text }) = self.items.get_mut(&index) {
                        text.push_str(delta);
                    }
                }
            }
            "response.refusal.delta" => self.refusal.push_str(delta),
            "response.reasoning_summary_text.delta" => {
                let part = v.get("summary_index").and_then(Value::as_u64).unwrap_or(0);
                let part = usize::try_from(part).unwrap_or(usize::MAX);
                self.reasoning(index, Some(part), delta, out);
            }
            "response.reasoning_text.delta" => self.reasoning(index, None, delta, out),
            "response.function_call_arguments.delta" => self.arguments(index, delta, out),
            "response.function_call_arguments.done" => {
                let whole = v.get("arguments").and_then(Value::as_str).unwrap_or("");
                if matches!(self.items.get(&index), Some(Item::Call { arguments, .. }) if arguments.is_empty())
                {
                    self.arguments(index, whole, out);
                }
            }
            "response.completed" => {
                if let Some(u) = v.pointer("/response/usage").filter(|u| u.is_object()) {
                    self.usage = Some(usage(u));
                }
                self.end = Some(End::Completed);
                return Ok(true);
            }
            "response.incomplete" => {
                if let Some(u) = v.pointer("/response/usage").filter(|u| u.is_object()) {
                    self.usage = Some(usage(u));
                }
                let reason = v
                    .pointer("/response/incomplete_details/reason")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned();
                self.end = Some(End::Incomplete(reason));
                return Ok(true);
            }
            "response.failed" => {
                return Err(reported(
                    "a failed response",
                    v.pointer("/response/error"),
                    &v,
                ))
            }
            "error" => {
                // The error's fields at the top level, or under `error`.
                let e = v.get("error").filter(|e| e.is_object()).unwrap_or(&v);
                return Err(reported("an error", Some(e), &v));
            }
            // `response.created`, `response.in_progress`, content parts, `.done`
            // events whose whole is in the item's `done`, and kinds added later.
            _ => {}
        }
        Ok(false)
    }

    fn longest_arguments(&self) -> usize {
        self.items
            .values()
            .map(|i| match i {
                Item::Call { arguments, .. } => arguments.len(),
                _ => 0,
            })
            .max()
            .unwrap_or(0)
    }

    fn is_whole(&self) -> bool {
        self.end.is_some()
    }

    fn finish(mut self, out: &mut Vec<Event>) -> TurnResult {
        self.w.close_text(out);
        let mut result = TurnResult {
            usage: self.usage.take(),
            ..TurnResult::default()
        };
        for (_, mut item) in std::mem::take(&mut self.items) {
            Self::close(&self.w, Some(&mut item), out);
            match item {
                Item::Reasoning {
                    id,
                    summary,
                    encrypted,
                    ..
                } if !encrypted.is_empty() => {
                    let summary: Vec<Value> = summary
                        .into_iter()
                        .filter(|t| !t.is_empty())
                        .map(|t| json!({ "type": "summary_text", "text": t }))
                        .collect();
                    result.blocks.push(json!({
                        "type": "reasoning",
                        "id": id,
                        "summary": summary,
                        "encrypted_content": encrypted,
                    }));
                }
                Item::Message { text } if !text.is_empty() => {
                    result
                        .blocks
                        .push(json!({ "type": "message", "role": "assistant", "content": text }));
                }
                Item::Call {
                    call_id,
                    name,
                    arguments,
                    ..
                } => {
                    result.blocks.push(json!({
                        "type": "function_call",
                        "call_id": call_id,
                        "name": name,
                        "arguments": arguments,
                    }));
                    result.calls.push(MadeCall {
                        id: call_id,
                        name,
                        arguments,
                    });
                }
                _ => {}
            }
        }
        result.text = self.w.take_text();
        result.stop = if !self.refusal.is_empty() {
            Some(fail(
                format!("the model refused: {}", self.refusal),
                "refusal",
            ))
        } else {
            match self.end {
                Some(End::Incomplete(reason)) => Some(match reason.as_str() {
                    "max_output_tokens" => fail(
                        "the model's answer reached its max_output_tokens before it was whole (response incomplete)",
                        "max_tokens",
                    ),
                    "content_filter" => fail(
                        "the model's answer was stopped by its content filter (response incomplete)",
                        "content_filter",
                    ),
                    r if crate::is_plain_word(r) => fail(
                        format!("the model's answer is incomplete ({r})"),
                        "upstream_error",
                    ),
                    _ => fail("the model's answer is incomplete", "upstream_error"),
                }),
                _ => None,
            }
        };
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agui_sdk_core::semantics::Verifier;

    fn push(turn: &mut Turn, v: Value, out: &mut Vec<Event>) -> bool {
        let data = v.to_string();
        turn.push(
            Frame {
                event: None,
                data: data.as_bytes(),
            },
            out,
        )
        .unwrap()
    }

    fn contents(out: &[Event]) -> String {
        out.iter()
            .filter_map(|e| match e {
                Event::ReasoningMessageContent(c) => Some(c.delta.clone()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn summary_parts_are_apart_and_an_index_far_off_is_one_part() {
        let mut turn = Turn::new("m".into());
        let mut out = vec![Event::run_started("t", "r")];
        let d = |i: u64, t: &str| {
            json!({ "type": "response.reasoning_summary_text.delta", "output_index": 0,
                    "item_id": "rs_1", "summary_index": i, "delta": t })
        };
        push(
            &mut turn,
            json!({ "type": "response.output_item.added", "output_index": 0,
                    "item": { "type": "reasoning", "id": "rs_1", "summary": [] } }),
            &mut out,
        );
        push(&mut turn, d(0, "One."), &mut out);
        push(&mut turn, d(u64::MAX, "Two"), &mut out);
        push(&mut turn, d(u64::MAX, "."), &mut out);
        push(
            &mut turn,
            json!({ "type": "response.output_item.done", "output_index": 0,
                    "item": { "type": "reasoning", "id": "rs_1", "encrypted_content": "enc",
                              "summary": [{ "type": "summary_text", "text": "ignored: streamed" }] } }),
            &mut out,
        );
        assert!(push(
            &mut turn,
            json!({ "type": "response.completed", "response": { "usage": null } }),
            &mut out
        ));
        let result = turn.finish(&mut out);
        out.push(Event::run_finished("t", "r"));
        let mut v = Verifier::new();
        for e in &out {
            v.push(e).unwrap_or_else(|err| panic!("{err}: {out:?}"));
        }
        assert_eq!(contents(&out), "One.\n\nTwo.");
        assert_eq!(
            result.blocks,
            [
                json!({ "type": "reasoning", "id": "rs_1", "encrypted_content": "enc",
                     "summary": [{ "type": "summary_text", "text": "One." },
                                 { "type": "summary_text", "text": "Two." }] })
            ]
        );
    }

    /// Text deltas before their item was added are not repeated by its `done`.
    #[test]
    fn text_deltas_without_their_item_added_are_not_repeated() {
        let mut turn = Turn::new("m".into());
        let mut out = Vec::new();
        push(
            &mut turn,
            json!({ "type": "response.output_text.delta", "output_index": 0, "item_id": "msg_1",
                    "content_index": 0, "delta": "Hi." }),
            &mut out,
        );
        push(
            &mut turn,
            json!({ "type": "response.output_item.done", "output_index": 0,
                    "item": { "type": "message", "id": "msg_1", "role": "assistant",
                              "content": [{ "type": "output_text", "text": "Hi.", "annotations": [] }] } }),
            &mut out,
        );
        let result = turn.finish(&mut out);
        assert_eq!(result.text, "Hi.");
        assert_eq!(
            result.blocks,
            [json!({ "type": "message", "role": "assistant", "content": "Hi." })]
        );
    }

    /// Items whose content comes only in their `done` (a server that does not stream
    /// the deltas) are taken whole from it.
    #[test]
    fn items_without_deltas_are_taken_from_their_done() {
        let mut turn = Turn::new("m".into());
        let mut out = vec![Event::run_started("t", "r")];
        for item in [
            json!({ "type": "reasoning", "id": "rs_2", "encrypted_content": "e2",
                    "summary": [{ "type": "summary_text", "text": "Short." }] }),
            json!({ "type": "message", "id": "msg_2", "role": "assistant",
                    "content": [{ "type": "output_text", "text": "Hi.", "annotations": [] }] }),
            json!({ "type": "function_call", "id": "fc_2", "call_id": "call_2",
                    "name": "f", "arguments": "{\"x\":1}" }),
        ]
        .into_iter()
        .enumerate()
        {
            push(
                &mut turn,
                json!({ "type": "response.output_item.done", "output_index": item.0, "item": item.1 }),
                &mut out,
            );
        }
        let result = turn.finish(&mut out);
        out.push(Event::run_finished("t", "r"));
        let mut v = Verifier::new();
        for e in &out {
            v.push(e).unwrap_or_else(|err| panic!("{err}: {out:?}"));
        }
        assert_eq!(contents(&out), "Short.");
        assert_eq!(result.text, "Hi.");
        assert_eq!(
            result.calls,
            [MadeCall {
                id: "call_2".into(),
                name: "f".into(),
                arguments: "{\"x\":1}".into()
            }]
        );
    }
}
