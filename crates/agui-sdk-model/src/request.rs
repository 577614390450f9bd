//! What every adapter's request is built from, the same for every provider: the
//! system texts a conversation starts with, the text of a tool's result, the tools
//! the model is offered, the parameters a run forwards and the tool it names. Each
//! adapter only puts them in its API's shape. No I/O.

use agui_sdk_core::types::{ContentPart, MediaPart, PartSource, ToolMessage};
use agui_sdk_core::RunAgentInput;
use serde_json::{json, Map, Value};

use crate::provider::{RequestParts, ToolSpec};

/// The start of the system text that shows the model the state.
pub(crate) const STATE_PREFIX: &str = "The shared application state (JSON):";

/// The system text that shows the model `state`.
pub(crate) fn state_text(state: &impl std::fmt::Display) -> String {
    format!("{STATE_PREFIX}\n{state}")
}

/// A conversation as the Messages and Responses APIs take it: the top-level system
/// texts, then the items (messages, or input items).
#[derive(Debug, Clone, Default)]
#[cfg_attr(
    not(any(feature = "anthropic", feature = "responses")),
    allow(dead_code)
)]
pub(crate) struct History {
    pub system: SystemTexts,
    pub items: Vec<Value>,
}

#[cfg_attr(
    not(any(feature = "anthropic", feature = "responses")),
    allow(dead_code)
)]
impl History {
    /// The system texts before the run's messages (see [`SystemTexts::new`]), no items.
    pub(crate) fn new(input: &RunAgentInput, parts: &RequestParts<'_>) -> Self {
        History {
            system: SystemTexts::new(input, parts),
            items: Vec::new(),
        }
    }
}

/// The system texts of a conversation, and which of them shows the state.
#[derive(Debug, Clone, Default)]
pub(crate) struct SystemTexts {
    pub texts: Vec<String>,
    state_at: Option<usize>,
}

impl SystemTexts {
    /// The texts before the run's messages: the system prompt, the run's context and
    /// the state (when it is exposed), in that order.
    pub(crate) fn new(input: &RunAgentInput, parts: &RequestParts<'_>) -> Self {
        let (texts, state_at) = system_texts(input, parts);
        SystemTexts { texts, state_at }
    }

    /// Shows the model the state as it is now (when it is shown).
    #[cfg_attr(
        not(any(feature = "anthropic", feature = "responses")),
        allow(dead_code)
    )]
    pub(crate) fn refresh_state(&mut self, state: &Value) {
        if let Some(i) = self.state_at {
            self.texts[i] = state_text(state);
        }
    }

    /// All the texts as one, apart by blank lines (`None` when there are none).
    #[cfg_attr(
        not(any(feature = "anthropic", feature = "responses")),
        allow(dead_code)
    )]
    pub(crate) fn joined(&self) -> Option<String> {
        (!self.texts.is_empty()).then(|| self.texts.join("\n\n"))
    }
}

fn system_texts(input: &RunAgentInput, parts: &RequestParts<'_>) -> (Vec<String>, Option<usize>) {
    let mut texts = Vec::new();
    if let Some(p) = parts.system_prompt {
        texts.push(p.to_owned());
    }
    if !input.context.is_empty() {
        let mut text = String::from("Context from the application:");
        for c in &input.context {
            text.push_str(&format!("\n- {}: {}", c.description, c.value));
        }
        texts.push(text);
    }
    let mut state_at = None;
    if let Some(state) = input
        .state
        .as_ref()
        .filter(|s| parts.expose_state && !s.is_null())
    {
        state_at = Some(texts.len());
        texts.push(state_text(state));
    }
    (texts, state_at)
}

/// A tool message as the text the model gets: its content, and the error the tool
/// reported on a line of its own.
pub(crate) fn tool_result_text(t: &ToolMessage) -> String {
    let text = t.content.to_text();
    match &t.error {
        Some(e) if text.is_empty() => format!("error: {e}"),
        Some(e) => format!("{text}\nerror: {e}"),
        None => text,
    }
}

/// Every tool the model is offered: the server's, then the run's (a run's tool
/// without parameters takes an empty object).
fn offered_tools<'a>(
    input: &'a RunAgentInput,
    parts: &'a RequestParts<'_>,
) -> impl Iterator<Item = ToolSpec> + 'a {
    let client = input.tools.iter().map(|t| ToolSpec {
        name: t.name.clone(),
        description: t.description.clone(),
        parameters: t.parameters.as_ref().map_or_else(
            || json!({ "type": "object", "properties": {} }),
            |p| p.to_value(),
        ),
    });
    parts.server_tools.iter().cloned().chain(client)
}

/// The run's `forwardedProps`, as JSON.
fn forwarded_props(input: &RunAgentInput) -> Option<Value> {
    input.forwarded_props.as_ref().map(|p| p.to_value())
}

/// The forwardable parameters `props` sets, in the order they are configured.
fn forwarded<'a>(
    props: Option<&'a Value>,
    forwardable: &'a [String],
) -> impl Iterator<Item = (&'a String, &'a Value)> + 'a {
    let props = props.and_then(Value::as_object);
    forwardable
        .iter()
        .filter_map(move |name| props.and_then(|p| p.get(name)).map(|v| (name, v)))
}

/// The tool a client names in `forwardedProps.toolChoice`, in the chat-completions
/// shape (CopilotKit's suggestion runs do).
fn named_tool(props: Option<&Value>) -> Option<&str> {
    props
        .and_then(|p| p.get("toolChoice"))
        .filter(|c| c.get("type").and_then(Value::as_str) == Some("function"))
        .and_then(|c| c.pointer("/function/name"))
        .and_then(Value::as_str)
}

/// A user's content part: its kind (`image`, `audio`, `video`, `document`) and
/// media, or (`Err`) the text of a text part.
pub(crate) fn media(p: &ContentPart) -> Result<(&'static str, &MediaPart), &str> {
    match p {
        ContentPart::Text(t) => Err(&t.text),
        ContentPart::Image(m) => Ok(("image", m)),
        ContentPart::Audio(m) => Ok(("audio", m)),
        ContentPart::Video(m) => Ok(("video", m)),
        ContentPart::Document(m) => Ok(("document", m)),
    }
}

/// The text a `kind` part from `source` that `api` cannot take is sent as, so that
/// nothing is dropped silently; logged as a warning.
pub(crate) fn unsupported_part(kind: &str, source: &PartSource, api: &str) -> String {
    let what = match source {
        PartSource::Url(u) => format!("at {}", u.value),
        PartSource::Data(d) => format!("of type {}", d.mime_type),
        PartSource::File(f) => format!("file {}", f.value),
    };
    tracing::warn!(
        kind,
        "a content part the {api} cannot take is sent as a note"
    );
    format!("[{kind} attachment {what} not supported by this model endpoint]")
}

/// What every body ends with, in this order: the fixed model parameters, the ones
/// the run forwards (each put in by `put`), the tool the run names when it is one of
/// those offered (put in by `choose`), and the offered tools in the API's shape
/// (`tool`).
pub(crate) fn finish_body(
    o: &mut Map<String, Value>,
    input: &RunAgentInput,
    parts: &RequestParts<'_>,
    put: impl Fn(&mut Map<String, Value>, &str, &Value),
    tool: impl Fn(ToolSpec) -> Value,
    choose: impl FnOnce(&mut Map<String, Value>, &str),
) {
    for (k, v) in parts.params {
        put(o, k, v);
    }
    let props = forwarded_props(input);
    for (name, v) in forwarded(props.as_ref(), parts.forwardable) {
        put(o, name, v);
    }
    let specs: Vec<ToolSpec> = offered_tools(input, parts).collect();
    if let Some(name) = named_tool(props.as_ref()) {
        if specs.iter().any(|t| t.name == name) {
            choose(o, name);
        }
    }
    if !specs.is_empty() {
        o.insert(
            "tools".into(),
            Value::Array(specs.into_iter().map(tool).collect()),
        );
    }
}

/// Puts a parameter in the body under its own name.
#[cfg_attr(not(any(feature = "chat", feature = "anthropic")), allow(dead_code))]
pub(crate) fn put_as_is(o: &mut Map<String, Value>, name: &str, value: &Value) {
    o.insert(name.to_owned(), value.clone());
}
