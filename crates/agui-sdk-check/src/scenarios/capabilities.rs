//! The `capabilities` scenario: what `GET URL` answered before the scenarios ran.

use agui_sdk_core::AgentCapabilities;

use crate::exchange::Ctx;
use crate::report::Level;
use crate::Discovery;

/// The keys of the capabilities object the protocol describes.
const KNOWN: [&str; 11] = [
    "identity",
    "transport",
    "tools",
    "output",
    "state",
    "multiAgent",
    "reasoning",
    "multimodal",
    "execution",
    "humanInTheLoop",
    "custom",
];

/// Reads a capabilities object: the typed value and the top-level keys the protocol
/// does not describe; an error names the field that is wrong.
pub(crate) fn parse(body: &str) -> Result<(AgentCapabilities, Vec<String>), String> {
    let value: serde_json::Value =
        serde_json::from_str(body).map_err(|e| format!("not JSON: {e}"))?;
    let Some(object) = value.as_object() else {
        return Err("not a JSON object".to_owned());
    };
    let unknown = object
        .keys()
        .filter(|k| !KNOWN.contains(&k.as_str()))
        .cloned()
        .collect();
    let caps = agui_sdk_core::wire::from_json_value::<AgentCapabilities>(&value)
        .map_err(|e| e.to_string())?;
    Ok((caps, unknown))
}

/// `capabilities`.
pub(super) fn check(cx: &mut Ctx<'_>, discovery: &Discovery) -> Option<String> {
    if let Some(redirect) = &discovery.redirect {
        cx.requests = 1;
        cx.find("transport/redirect", Level::Error, None, redirect.clone());
        return None;
    }
    let Some((status, content_type, body)) = &discovery.answer else {
        return Some("the server was not asked".to_owned());
    };
    if !(200..300).contains(status) || !content_type.contains("json") {
        return Some(format!(
            "the server does not offer capabilities discovery (GET answered HTTP {status}{})",
            if content_type.is_empty() {
                String::new()
            } else {
                format!(", {content_type}")
            }
        ));
    }
    cx.requests = 1;
    match parse(body) {
        Err(e) => cx.find(
            "capabilities/valid-object",
            Level::Error,
            None,
            format!("GET answered JSON that is not a capabilities object: {e}"),
        ),
        Ok((_, unknown)) => {
            for k in unknown {
                cx.find(
                    "capabilities/unknown-field",
                    Level::Warning,
                    None,
                    format!(
                        "the capabilities object has a field the protocol does not describe: '{k}'"
                    ),
                );
            }
        }
    }
    None
}
