//! What a `RunAgentInput` costs in memory once parsed, estimated from its JSON text
//! before it is parsed (a server's memory budget admits a request by it).
//!
//! A request's free-form JSON (`state`, `forwardedProps`, tool parameters, resume
//! payloads, metadata, activity content, unknown keys) is kept as canonical text ([`JsonText`](crate::JsonText)),
//! which costs its length whatever its shape; the estimate counts it as three times its
//! length (the text is written into a growing buffer, then copied once into its shared
//! form).
//!
//! The rest (messages, tools, context: the protocol's own objects) is parsed into
//! structures whose size depends on the JSON's shape, not only its length. It is estimated as if it were parsed into `serde_json::Value`
//! trees (an overestimate for the protocol's objects), where one long string costs about
//! its length while `[0,0,0,…]` costs some 36 times its length (each element is a 72-byte
//! value, and vectors grow by doubling).
//! The estimate counts what the tree will hold (values, containers, object keys and
//! string bytes) with the sizes of this build, then adds half again for the slack of
//! growing vectors and maps, and the body itself (held while it is parsed). Measured
//! against the resident memory of `agui serve` parsing 3.6–3.7 MB bodies, it stays above
//! the real cost (in the server) for every shape tried: one string, `[0,0,…]`, an object of small
//! objects, in `state` or in a message's `metadata`.

impl super::RunAgentInput {
    /// The estimated bytes a request of this JSON text takes while it is parsed and
    /// held (the text itself included): an upper bound for the shapes measured (see
    /// the module docs). Invalid JSON is estimated as far as it goes (the parser
    /// refuses it anyway). It costs one pass over the text and allocates nothing.
    ///
    /// ```
    /// use agui_sdk_core::RunAgentInput;
    /// let zeros = format!(r#"{{"messages":[{}]}}"#, vec!["0"; 1000].join(","));
    /// // Small values cost tens of times their text once parsed.
    /// assert!(RunAgentInput::parsed_cost_estimate(zeros.as_bytes()) > 30 * zeros.len());
    /// ```
    pub fn parsed_cost_estimate(json: &[u8]) -> usize {
        parsed_cost(json)
    }
}

/// A `serde_json::Value` (an enum as large as its largest variant, the ordered map).
const VALUE: usize = std::mem::size_of::<serde_json::Value>();
/// A heap block's bookkeeping, and the smallest allocation.
const ALLOC: usize = 16;
/// An object entry besides its value: the key's `String`, its hash and its index slot.
const ENTRY: usize = std::mem::size_of::<String>() + 2 * std::mem::size_of::<usize>();
/// A container's own allocations (its entries' vector and, for objects, its index).
const CONTAINER: usize = 4 * ALLOC;

/// The estimated bytes a request of this JSON text takes while it is parsed and held:
/// an upper bound for the shapes measured (see the module docs). Invalid JSON is
/// estimated as far as it goes (the parser refuses it anyway).
fn parsed_cost(json: &[u8]) -> usize {
    let mut values = 0usize;
    let mut containers = 0usize;
    let mut keys = 0usize;
    let mut text = 0usize;
    let mut strings = 0usize;
    // Free-form JSON held as text (see the module docs), by its length.
    let mut kept_as_text = 0usize;
    // Nesting depth, and the top-level key whose value is open (for `tools[].parameters`
    // and `resume[].payload`).
    let mut depth = 0usize;
    let mut top_key: &[u8] = b"";
    // The last significant byte outside strings, and a string just closed (its start and
    // length) whose role (key or value) the next significant byte tells.
    let mut prev = b',';
    let mut pending: Option<(usize, usize)> = None;
    let mut i = 0;
    while i < json.len() {
        let b = json[i];
        if b.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if let Some((start, len)) = pending.take() {
            text += len;
            if b == b':' {
                keys += 1;
                let key = &json[start..start + len];
                if depth == 1 {
                    top_key = key;
                }
                let next = json[i + 1..]
                    .iter()
                    .copied()
                    .find(|b| !b.is_ascii_whitespace())
                    .unwrap_or(b' ');
                if is_text_position(depth, top_key, key, next) {
                    // The value is kept as its canonical text: skip it, counting bytes.
                    let from = i + 1;
                    let end = crate::wire::value_end(json, from);
                    kept_as_text += end - from;
                    values += 1;
                    prev = b'"';
                    i = end;
                    continue;
                }
            } else {
                values += 1;
                strings += 1;
            }
        }
        match b {
            b'"' => {
                // To the closing quote, over escapes (on a text that stops inside the
                // string, its last byte: an estimate needs no more).
                let start = i + 1;
                let j = crate::wire::string_end(json, i)
                    .saturating_sub(1)
                    .max(start.min(json.len()));
                pending = Some((start.min(j), j.saturating_sub(start)));
                i = j + 1;
                prev = b'"';
                continue;
            }
            b'{' | b'[' => {
                values += 1;
                containers += 1;
                depth += 1;
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            b'-' | b'0'..=b'9' | b't' | b'f' | b'n' => {
                // A number or literal starts after a separator; its other bytes do not.
                if matches!(prev, b',' | b':' | b'[') {
                    values += 1;
                }
            }
            _ => {}
        }
        prev = b;
        i += 1;
    }
    if let Some((_, len)) = pending {
        values += 1;
        strings += 1;
        text += len;
    }
    let tree = values * VALUE
        + containers * CONTAINER
        + keys * (ENTRY + ALLOC)
        + (keys + strings) * ALLOC
        + text;
    // Text is read into a growing buffer, then copied once into its shared form.
    json.len() + tree + tree / 2 + 3 * kept_as_text
}

/// The keys of `RunAgentInput`.
const INPUT_KEYS: &[&[u8]] = &[
    b"threadId",
    b"runId",
    b"protocolVersion",
    b"parentRunId",
    b"state",
    b"messages",
    b"tools",
    b"context",
    b"forwardedProps",
    b"resume",
];

/// Whether the value of `key`, met at `depth` inside the top-level key `top` and
/// starting with the byte `next`, is one the request keeps as text
/// ([`JsonText`](crate::JsonText)): `state`, `forwardedProps`, a key the input does not define,
/// a tool's `parameters`, a resume entry's `payload`, an activity message's object
/// `content`, and any `metadata` below the top level (messages', tool calls', parts',
/// tools', resume entries'). Unknown keys deeper down are kept as text too, but are not
/// told apart here: they are counted as parsed, which overestimates them.
fn is_text_position(depth: usize, top: &[u8], key: &[u8], next: u8) -> bool {
    match depth {
        1 => key == b"state" || key == b"forwardedProps" || !INPUT_KEYS.contains(&key),
        3 if (top == b"tools" && key == b"parameters")
            || (top == b"resume" && key == b"payload")
            || (top == b"messages" && key == b"content" && next == b'{') =>
        {
            true
        }
        d => d >= 3 && key == b"metadata",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree_of(json: &str) -> usize {
        parsed_cost(json.as_bytes()) - json.len()
    }

    #[test]
    fn counts_values_keys_and_strings() {
        // One value: an empty object.
        assert_eq!(tree_of("{}"), (VALUE + CONTAINER) * 3 / 2);
        // Three numbers in an array: four values, one container.
        assert_eq!(tree_of("[1, -2, 30]"), (4 * VALUE + CONTAINER) * 3 / 2);
        // A key and a string value: the key is not a value.
        let one = tree_of(r#"{"runId":"cde"}"#);
        assert_eq!(
            one,
            (2 * VALUE + CONTAINER + ENTRY + ALLOC + 2 * ALLOC + 8) * 3 / 2
        );
        // Escapes and structural bytes inside strings count as text.
        assert_eq!(tree_of(r#"["a\"b,[{"]"#), tree_of(r#"["abcdefg"]"#));
        // Literals are one value each.
        assert_eq!(
            tree_of("[true,false,null]"),
            (4 * VALUE + CONTAINER) * 3 / 2
        );
    }

    #[test]
    fn fragmented_json_costs_more_than_its_length_and_strings_about_their_length() {
        let zeros = format!("[{}]", vec!["0"; 100_000].join(","));
        assert!(parsed_cost(zeros.as_bytes()) > 30 * zeros.len());
        let string = format!("[\"{}\"]", "x".repeat(200_000));
        assert!(parsed_cost(string.as_bytes()) < 3 * string.len());
    }

    #[test]
    fn free_form_json_kept_as_text_costs_its_length_whatever_its_shape() {
        let zeros = vec!["0"; 100_000].join(",");
        let as_state = format!(r#"{{"threadId":"t","runId":"r","messages":[],"state":[{zeros}]}}"#);
        let cost = parsed_cost(as_state.as_bytes());
        assert!(cost < 5 * as_state.len(), "{cost} for {}", as_state.len());
        for (top, inner) in [("tools", "parameters"), ("resume", "payload")] {
            let body = format!(
                r#"{{"messages":[],"{top}":[{{"name":"x","{inner}":{{"a":[{zeros}]}}}}]}}"#
            );
            let cost = parsed_cost(body.as_bytes());
            assert!(cost < 5 * body.len(), "{top}: {cost} for {}", body.len());
        }
        for body in [
            format!(r#"{{"messages":[{{"id":"u","metadata":{{"a":[{zeros}]}}}}]}}"#),
            format!(r#"{{"messages":[],"x-unknown":[{zeros}]}}"#),
            format!(
                r#"{{"messages":[{{"id":"u","content":[{{"type":"text","text":"x","metadata":[{zeros}]}}]}}]}}"#
            ),
            format!(
                r#"{{"messages":[{{"id":"u","role":"activity","content":{{"a":[{zeros}]}}}}]}}"#
            ),
        ] {
            let cost = parsed_cost(body.as_bytes());
            assert!(cost < 5 * body.len(), "{cost} for {body:.60}");
        }
        // The same JSON where the request parses it costs what its tree costs.
        for body in [
            format!(r#"{{"messages":[{zeros}]}}"#),
            format!(r#"{{"messages":[{{"id":"u","role":"user","content":[{zeros}]}}]}}"#),
            format!(r#"{{"messages":[],"tools":[{{"name":"x","payload":[{zeros}]}}]}}"#),
        ] {
            assert!(parsed_cost(body.as_bytes()) > 30 * body.len(), "{body:.60}");
        }
        // A value with brackets, commas and escaped quotes in its strings is skipped
        // whole: what follows it is counted as it would be after any other value.
        let v = r#"{"a\"}":"]}\\\"","b":[1,"],"]}"#;
        let tricky = format!(r#"{{"state":{v},"messages":[0,0,0]}}"#);
        let plain = r#"{"state":0,"messages":[0,0,0]}"#;
        assert_eq!(
            parsed_cost(tricky.as_bytes()) - tricky.len() - 3 * v.len(),
            parsed_cost(plain.as_bytes()) - plain.len() - 3
        );
    }

    #[test]
    fn broken_json_is_estimated_without_panicking() {
        for text in ["", "\"", "\"\\", "[", "{\"a\":", "\\\\\"", "[1,", "}}}]]]"] {
            let _ = parsed_cost(text.as_bytes());
        }
        // Any bytes, drawn mostly from JSON's own (a fixed generator: repeatable).
        let alphabet = b"{}[]\",:\\ 0-9tfnxe\x00\xff";
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..20_000 {
            let mut bytes = Vec::new();
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            for k in 0..(seed % 40) {
                let pick = (seed >> (k % 48)) as usize;
                bytes.push(alphabet[pick % alphabet.len()]);
            }
            let cost = parsed_cost(&bytes);
            assert!(cost >= bytes.len());
        }
    }
}
