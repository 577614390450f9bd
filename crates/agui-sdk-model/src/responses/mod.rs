//! OpenAI Responses (`POST {base}/responses`, streaming, stateless): the adapter. The
//! run's input becomes the request's `input` items (each reasoning item replayed with
//! its id, summary and encrypted content before the calls it preceded), the stream
//! becomes events (each reasoning item a reasoning message of its own, whose id is the
//! item's and whose encrypted value is its `encrypted_content`).

mod request;
mod translate;

use agui_sdk_core::RunAgentInput;
use serde_json::{json, Value};

use crate::provider::{MadeCall, Provider, RequestParts, TurnResult};
// The conversation in the Responses API's form: the parts of the top-level
// `instructions`, then the `input` items.
use crate::request::History;
use crate::Effort;

/// The type of a reasoning item's encrypted content.
pub(crate) const ENCRYPTED_TYPE: &str = "openai.encrypted_content";

/// The Responses API, with its agent's reasoning effort.
#[derive(Debug, Clone)]
pub(crate) struct Responses {
    pub effort: Option<Effort>,
}

impl Provider for Responses {
    type History = History;
    type Turn = translate::Turn;

    fn url(&self, base_url: &str) -> String {
        format!("{base_url}/responses")
    }

    fn history(&self, input: &RunAgentInput, parts: &RequestParts<'_>) -> History {
        request::history(input, parts)
    }

    fn body(&self, input: &RunAgentInput, history: &History, parts: &RequestParts<'_>) -> Value {
        request::body(input, history, parts, self.effort)
    }

    fn record_turn(&self, history: &mut History, result: &TurnResult) {
        history.items.extend(result.blocks.iter().cloned());
    }

    fn record_output(&self, history: &mut History, call: &MadeCall, output: Value) {
        history.items.push(json!({
            "type": "function_call_output",
            "call_id": call.id,
            "output": output,
        }));
    }

    /// A function_call_output's output may be a list of input_text and input_image.
    #[cfg(feature = "mcp")]
    fn result_part(&self) -> Option<fn(crate::mcp::ModelPart) -> Value> {
        Some(|p| match p {
            crate::mcp::ModelPart::Text(t) => json!({ "type": "input_text", "text": t }),
            crate::mcp::ModelPart::Image { mime, data } => json!({
                "type": "input_image",
                "image_url": format!("data:{mime};base64,{data}"),
            }),
        })
    }

    fn refresh_state(&self, history: &mut History, state: &Value) {
        history.system.refresh_state(state);
    }

    fn vendor(&self) -> Option<&'static str> {
        Some("openai")
    }
}

#[cfg(all(test, feature = "mcp"))]
mod tests {
    use super::*;
    use agui_sdk_core::types::{Content, ContentPart};

    #[test]
    fn an_mcp_image_result_is_an_input_image_of_the_output() {
        let image: ContentPart = serde_json::from_value(json!({
            "type": "image", "source": { "type": "data", "value": "aGk=", "mimeType": "image/png" },
        }))
        .unwrap();
        let content = Content::Parts(vec![ContentPart::text("a picture"), image]);
        let call = MadeCall {
            id: "call_1".into(),
            name: "pic".into(),
            arguments: "{}".into(),
        };
        let mut history = History::default();
        Responses { effort: None }.record_parts(&mut history, &call, "unused", &content);
        assert_eq!(
            history.items,
            [
                json!({ "type": "function_call_output", "call_id": "call_1", "output": [
                    { "type": "input_text", "text": "a picture" },
                    { "type": "input_image", "image_url": "data:image/png;base64,aGk=" },
                ]})
            ]
        );
        // A text result stays a string.
        let mut history = History::default();
        Responses { effort: None }.record_parts(
            &mut history,
            &call,
            "plain",
            &Content::Text("plain".into()),
        );
        assert_eq!(history.items[0]["output"], "plain");
    }
}
