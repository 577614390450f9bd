//! An MCP tool result as AG-UI content and as what the model reads.

use agui_sdk_core::types::{Content, ContentPart};
use agui_sdk_core::Escaped;
use serde_json::{json, Value};

use super::Outcome;

/// A part of a tool result as a provider API takes it.
#[derive(Debug, PartialEq)]
pub(crate) enum ModelPart {
    Text(String),
    /// Inline base64 data.
    Image {
        mime: String,
        data: String,
    },
}

/// The parts of a result with media for an API whose tool results carry images: text,
/// images, and a note for any other medium. `None` for a text result.
pub(crate) fn model_parts(content: &Content) -> Option<Vec<ModelPart>> {
    let Content::Parts(parts) = content else {
        return None;
    };
    Some(
        parts
            .iter()
            .map(|p| {
                let v = serde_json::to_value(p).unwrap_or(Value::Null);
                match (v["type"].as_str(), v["source"]["type"].as_str()) {
                    (Some("text"), _) => ModelPart::Text(v["text"].as_str().unwrap_or("").to_owned()),
                    (Some("image"), Some("data")) => ModelPart::Image {
                        mime: v["source"]["mimeType"].as_str().unwrap_or("").to_owned(),
                        data: v["source"]["value"].as_str().unwrap_or("").to_owned(),
                    },
                    (kind, _) => ModelPart::Text(format!(
                        "[the tool returned {} content, shown to the user; it cannot be passed to the model]",
                        kind.unwrap_or("other")
                    )),
                }
            })
            .collect(),
    )
}

/// At most 300 characters of an error's text.
pub(super) fn short(s: &str) -> String {
    match s.char_indices().nth(300) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_owned(),
    }
}

pub(super) fn error_outcome(message: String) -> Outcome {
    let text = format!("error: {message}");
    Outcome {
        content: Content::Text(text.clone()),
        for_model: text,
    }
}

/// A `CallToolResult`'s JSON as what the client sees and what the model reads.
pub(super) fn convert(result: &Value, max_bytes: usize, server: &str) -> Outcome {
    let empty = Vec::new();
    let blocks = result["content"].as_array().unwrap_or(&empty);
    let is_error = result["isError"].as_bool().unwrap_or(false);
    let mut size = 0usize;
    for b in blocks {
        for k in ["text", "data"] {
            size += b[k].as_str().map_or(0, str::len);
        }
        size += b["resource"]["text"].as_str().map_or(0, str::len);
        size += b["resource"]["blob"].as_str().map_or(0, str::len);
    }
    if blocks.is_empty() {
        if let Some(s) = result.get("structuredContent") {
            size += s.to_string().len();
        }
    }
    if size > max_bytes {
        tracing::warn!(server = %Escaped(server), bytes = size, limit = max_bytes, "an MCP result is over the limit");
        return error_outcome(format!(
            "the MCP server {server} answered {size} bytes, over the limit of {max_bytes} bytes"
        ));
    }
    let mut parts: Vec<ContentPart> = Vec::new();
    let mut model: Vec<String> = Vec::new();
    let mut media = false;
    let note = |parts: &mut Vec<ContentPart>, model: &mut Vec<String>, t: String| {
        parts.push(ContentPart::text(t.clone()));
        model.push(t);
    };
    for b in blocks {
        let kind = b["type"].as_str().unwrap_or("");
        match kind {
            "text" => {
                let t = b["text"].as_str().unwrap_or("").to_owned();
                note(&mut parts, &mut model, t);
            }
            "image" | "audio" => {
                let mime = b["mimeType"].as_str().unwrap_or("application/octet-stream");
                let data = b["data"].as_str().unwrap_or("");
                let part: Option<ContentPart> = serde_json::from_value(json!({
                    "type": kind,
                    "source": { "type": "data", "value": data, "mimeType": mime },
                }))
                .ok();
                match part {
                    Some(p) => {
                        media = true;
                        parts.push(p);
                        model.push(format!(
                            "[the tool returned an {kind} ({mime}, {} bytes of base64), shown to the user; it cannot be passed to the model here]",
                                                        data.len()
                        ));
                    }
                    None => note(
                        &mut parts,
                        &mut model,
                        format!("[the tool returned {kind} content that cannot be shown]"),
                    ),
                }
            }
            "resource" => {
                let r = &b["resource"];
                let uri = r["uri"].as_str().unwrap_or("");
                if let Some(t) = r["text"].as_str() {
                    note(&mut parts, &mut model, t.to_owned());
                } else {
                    let mime = r["mimeType"].as_str().unwrap_or("application/octet-stream");
                    note(
                        &mut parts,
                        &mut model,
                        format!(
                            "[the tool returned the resource {uri} ({mime}, {} bytes of base64), which is not shown]",
                            r["blob"].as_str().map_or(0, str::len)
                        ),
                    );
                }
            }
            "resource_link" => {
                let uri = b["uri"].as_str().unwrap_or("");
                let name = b["name"].as_str().unwrap_or("");
                note(
                    &mut parts,
                    &mut model,
                    format!("[a link to the resource {name} at {uri}]"),
                );
            }
            other => note(
                &mut parts,
                &mut model,
                format!(
                    "[the tool returned a content part of type {:?}, which AG-UI cannot carry]",
                    short(other)
                ),
            ),
        }
    }
    if blocks.is_empty() {
        if let Some(s) = result.get("structuredContent") {
            note(&mut parts, &mut model, s.to_string());
        }
    }
    let mut for_model = model.join("\n");
    let mut content = if media {
        Content::Parts(parts)
    } else {
        Content::Text(for_model.clone())
    };
    if is_error {
        for_model = format!("error: {for_model}");
        content = match content {
            Content::Text(t) => Content::Text(format!("error: {t}")),
            Content::Parts(mut p) => {
                p.insert(0, ContentPart::text("error:"));
                Content::Parts(p)
            }
        };
    }
    Outcome { content, for_model }
}
