//! OpenAI Chat Completions (`POST {base}/chat/completions`, streaming), and every
//! server speaking it: the adapter.

mod request;
mod translate;
mod wire;

use agui_sdk_core::RunAgentInput;
use serde_json::{json, Value};

use crate::provider::{MadeCall, Provider, RequestParts, TurnResult};

/// The chat-completions API.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Chat;

impl Provider for Chat {
    type History = Vec<Value>;
    type Turn = translate::Turn;

    fn url(&self, base_url: &str) -> String {
        format!("{base_url}/chat/completions")
    }

    fn history(&self, input: &RunAgentInput, parts: &RequestParts<'_>) -> Vec<Value> {
        request::messages(input, parts)
    }

    fn body(&self, input: &RunAgentInput, history: &Vec<Value>, parts: &RequestParts<'_>) -> Value {
        request::body(input, history, parts)
    }

    fn record_turn(&self, history: &mut Vec<Value>, result: &TurnResult) {
        let calls: Vec<Value> = result
            .calls
            .iter()
            .map(|c| json!({ "id": c.id, "type": "function", "function": { "name": c.name, "arguments": c.arguments } }))
            .collect();
        history.push(json!({
            "role": "assistant",
            "content": if result.text.is_empty() { Value::Null } else { json!(result.text) },
            "tool_calls": calls,
        }));
    }

    fn record_output(&self, history: &mut Vec<Value>, call: &MadeCall, output: Value) {
        history.push(json!({ "role": "tool", "tool_call_id": call.id, "content": output }));
    }

    fn refresh_state(&self, history: &mut Vec<Value>, state: &Value) {
        let text = crate::request::state_text(state);
        for m in history.iter_mut() {
            let is_state = m.get("role").and_then(Value::as_str) == Some("system")
                && m.get("content")
                    .and_then(Value::as_str)
                    .is_some_and(|c| c.starts_with(crate::request::STATE_PREFIX));
            if is_state {
                m["content"] = json!(text);
                return;
            }
        }
    }
}
