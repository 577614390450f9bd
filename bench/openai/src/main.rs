//! What `agui-sdk-model`'s chat-completions adapter adds to what the model costs.
//!
//! One binary, three roles, each its own process:
//!
//! * `openai-bench upstream`: a fake chat-completions endpoint on loopback (raw HTTP/1.1,
//!   chunked, keep-alive), one `data: {chat.completion.chunk}` event per token;
//! * `openai-bench agent --upstream URL`: `agui-sdk-server` with the `OpenAiAgent` over that
//!   endpoint at `/chat`, and at `/alone` an agent emitting the same text events with no
//!   upstream;
//! * `openai-bench drive` (the default): starts both, plays the client (reqwest) and
//!   writes the tables.
//!
//! The prompt (the last user message) says what to answer: `tokens=N rate=R` (R tokens a
//! second, 0 for as fast as possible). Each token's text is `i:t`, `t` the time it was
//! written, in nanoseconds of `CLOCK_MONOTONIC` (one clock for every process of the
//! machine), so the client computes each token's delay from the text it receives.

mod agent;
mod driver;
mod procs;
mod report;
mod upstream;

/// Nanoseconds of `CLOCK_MONOTONIC`: the same clock in every process on the machine.
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// What a prompt asks for.
#[derive(Debug, Clone, Copy)]
pub struct Ask {
    pub tokens: usize,
    /// Tokens a second; 0: as fast as possible.
    pub rate: f64,
    /// Whether the stream ends with `data: [DONE]` (`done=0`: it ends after the finish
    /// reason and the usage, as some servers do).
    pub done: bool,
    /// For the `/alone` agent: the tokens come from another task through a channel of
    /// one slot, one at a time (`handoff=1`), as the HTTP client hands over the body.
    pub handoff: bool,
}

impl Ask {
    pub fn new(tokens: usize, rate: f64) -> Ask {
        Ask {
            tokens,
            rate,
            done: true,
            handoff: false,
        }
    }

    pub fn prompt(&self) -> String {
        let done = if self.done { "" } else { " done=0" };
        let handoff = if self.handoff { " handoff=1" } else { "" };
        format!("tokens={} rate={}{done}{handoff}", self.tokens, self.rate)
    }

    pub fn parse(prompt: &str) -> Option<Ask> {
        let mut ask = Ask::new(0, 0.0);
        for word in prompt.split_whitespace() {
            match word.split_once('=')? {
                ("tokens", v) => ask.tokens = v.parse().ok()?,
                ("rate", v) => ask.rate = v.parse().ok()?,
                ("done", v) => ask.done = v != "0",
                ("handoff", v) => ask.handoff = v == "1",
                _ => {}
            }
        }
        Some(ask)
    }

    /// When token `i` is due, from the start of the answer (`None`: at once).
    pub fn due(&self, i: usize) -> Option<std::time::Duration> {
        (self.rate > 0.0).then(|| std::time::Duration::from_secs_f64(i as f64 / self.rate))
    }
}

/// The text of the last message of a JSON message list (a string, or text parts).
pub fn last_text(messages: &serde_json::Value) -> Option<String> {
    let content = &messages.as_array()?.last()?["content"];
    match content {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Array(parts) => Some(
            parts
                .iter()
                .filter_map(|p| p["text"].as_str())
                .collect::<Vec<_>>()
                .join(""),
        ),
        _ => None,
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
    let (role, rest) = match args.first().map(String::as_str) {
        Some(r @ ("upstream" | "agent" | "drive")) => (r.to_owned(), &args[1..]),
        _ => ("drive".to_owned(), &args[..]),
    };
    match role.as_str() {
        "upstream" => upstream::main(rest),
        "agent" => agent::main(rest),
        _ => driver::main(rest),
    }
}
