//! CPU per streamed token, with reasoning, of `agui-sdk-model`'s three provider adapters
//! (chat completions, OpenAI Responses, Anthropic Messages) behind `agui-sdk-server`, and
//! of CopilotKit's Node runtime (`node/server.mjs`), against one fake upstream; and the
//! memory each server holds per open model run.
//!
//! One binary, three roles, each its own process:
//!
//! * `model-bench upstream`: the fake provider on loopback (raw HTTP/1.1, chunked, one
//!   write per SSE event), speaking the wire of the path it is asked on:
//!   `…/chat/completions`, `…/responses` or `…/messages`;
//! * `model-bench agent --upstream URL`: `agui-sdk-server`'s `AgentRouter` with the model
//!   agent over that URL at `/chat`, `/responses` and `/anthropic`;
//! * `model-bench` (the driver): starts them (and the Node server when given), plays
//!   the AG-UI client, measures and writes the tables.
//!
//! The run's user message says what to answer: `benchask reasoning=R tokens=T rate=X`
//! (R reasoning deltas, then T text deltas, X deltas a second, 0 for as fast as it can).

mod agent;
mod driver;
mod upstream;

/// What a prompt asks for.
#[derive(Debug, Clone, Copy)]
pub struct Ask {
    pub reasoning: usize,
    pub tokens: usize,
    pub rate: f64,
    /// Readable words instead of numbered tokens (`words=1`), for a guide's example.
    pub words: bool,
    /// The turn ends with a call of the tool `show_card` (`tool=1`; Responses and
    /// Anthropic), until the request carries its result, then answers text only.
    pub tool: bool,
    /// A `redacted_thinking` block comes first (`redacted=1`; Anthropic).
    pub redacted: bool,
}

impl Ask {
    pub fn prompt(&self) -> String {
        let mut p = format!(
            "benchask reasoning={} tokens={} rate={}",
            self.reasoning, self.tokens, self.rate
        );
        for (on, word) in [
            (self.words, " words=1"),
            (self.tool, " tool=1"),
            (self.redacted, " redacted=1"),
        ] {
            if on {
                p.push_str(word);
            }
        }
        p
    }

    /// Finds the ask in a request body (the prompt is in it verbatim, whatever the API).
    pub fn find(body: &[u8]) -> Option<Ask> {
        let at = memchr::memmem::find(body, b"benchask ")?;
        let rest = &body[at + 9..];
        let end = rest
            .iter()
            .position(|&b| b == b'"' || b == b'\\')
            .unwrap_or(rest.len());
        let text = std::str::from_utf8(&rest[..end]).ok()?;
        let mut ask = Ask {
            reasoning: 0,
            tokens: 0,
            rate: 0.0,
            words: false,
            tool: false,
            redacted: false,
        };
        for w in text.split_whitespace() {
            match w.split_once('=')? {
                ("reasoning", v) => ask.reasoning = v.parse().ok()?,
                ("tokens", v) => ask.tokens = v.parse().ok()?,
                ("rate", v) => ask.rate = v.parse().ok()?,
                ("words", v) => ask.words = v == "1",
                ("tool", v) => ask.tool = v == "1",
                ("redacted", v) => ask.redacted = v == "1",
                _ => {}
            }
        }
        Some(ask)
    }

    /// When delta `i` (reasoning and text counted together) is due.
    pub fn due(&self, i: usize) -> Option<std::time::Duration> {
        (self.rate > 0.0).then(|| std::time::Duration::from_secs_f64(i as f64 / self.rate))
    }
}

/// Prints `listening PORT` (what the driver waits for).
pub fn announce(port: u16) {
    use std::io::Write;
    let mut out = std::io::stdout();
    let _ = writeln!(out, "listening {port}");
    let _ = out.flush();
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("upstream") => upstream::main(),
        Some("agent") => agent::main(&args[1..]),
        _ => driver::main(&args),
    }
}
