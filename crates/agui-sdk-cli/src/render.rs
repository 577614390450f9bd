//! Terminal rendering of a run: streamed text as it arrives, tool calls with their
//! arguments, state changes, reasoning dimmed, activity, steps and subagents.
//!
//! Everything the agent sent is written escaped ([`Escaped`], or [`EscapedLines`] for
//! streamed text, whose line breaks are its own): no escape sequence, control character
//! or bidirectional override of the agent's reaches the terminal.

use std::io::Write;

use agui_sdk_client::{Flow, Subscriber};
use agui_sdk_core::event::*;
use agui_sdk_core::{Content, Escaped, EscapedLines, Message};
use serde_json::Value;

/// Renders events for a person.
pub(crate) struct TerminalRenderer {
    out: Box<dyn Write + Send>,
    color: bool,
    /// The agent's name, shown before its messages.
    label: String,
}

impl TerminalRenderer {
    /// Renders into `out`; ANSI colours when `color`.
    pub(crate) fn new(out: Box<dyn Write + Send>, color: bool, label: impl Into<String>) -> Self {
        TerminalRenderer {
            out,
            color,
            label: label.into(),
        }
    }

    /// `text` on one line, escaped, in the colour `code` when colours are on.
    fn style(&self, code: &str, text: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{}\x1b[0m", Escaped(text))
        } else {
            Escaped(text).to_string()
        }
    }

    /// Streamed text, escaped but for its line breaks and tabs.
    fn put_text(&mut self, text: &str) {
        self.put(&EscapedLines(text).to_string());
    }

    fn put(&mut self, s: &str) {
        // A closed terminal is not an error worth failing the run for.
        let _ = self.out.write_all(s.as_bytes());
        let _ = self.out.flush();
    }
}

/// A JSON value on one line, shortened for display.
pub(crate) fn short_json(v: &Value, max: usize) -> String {
    let s = v.to_string();
    if s.chars().count() <= max {
        s
    } else {
        let cut: String = s.chars().take(max).collect();
        format!("{cut}…")
    }
}

fn content_text(c: &Content) -> String {
    match c {
        Content::Text(t) => t.clone(),
        Content::Parts(_) => {
            let t = c.to_text();
            if c.has_media() {
                format!("{t} [+media]")
            } else {
                t
            }
        }
    }
}

impl Subscriber for TerminalRenderer {
    fn on_text_message_start(&mut self, e: &TextMessageStart) -> Flow {
        let who = match e.role_or_default() {
            agui_sdk_core::TextMessageRole::Assistant => self.label.clone(),
            r => agui_sdk_core::Role::from(r).as_str().to_owned(),
        };
        let head = self.style("1;36", &format!("{who}:"));
        self.put(&format!("{head} "));
        Flow::Continue
    }
    fn on_text_message_content(&mut self, e: &TextMessageContent) -> Flow {
        self.put_text(&e.delta);
        Flow::Continue
    }
    fn on_text_message_end(&mut self, _: &TextMessageEnd) -> Flow {
        self.put("\n");
        Flow::Continue
    }
    fn on_reasoning_message_start(&mut self, _: &ReasoningMessageStart) -> Flow {
        let s = self.style("2", "(thinking) ");
        self.put(&s);
        Flow::Continue
    }
    fn on_reasoning_message_content(&mut self, e: &ReasoningMessageContent) -> Flow {
        let text = EscapedLines(&e.delta).to_string();
        let s = if self.color {
            format!("\x1b[2;3m{text}\x1b[0m")
        } else {
            text
        };
        self.put(&s);
        Flow::Continue
    }
    fn on_reasoning_message_end(&mut self, _: &ReasoningMessageEnd) -> Flow {
        self.put("\n");
        Flow::Continue
    }
    fn on_reasoning_encrypted_value(&mut self, e: &ReasoningEncryptedValue) -> Flow {
        let s = self.style(
            "2",
            &format!(
                "(encrypted reasoning for {}, {} bytes)\n",
                e.entity_id,
                e.encrypted_value.len()
            ),
        );
        self.put(&s);
        Flow::Continue
    }
    fn on_tool_call_start(&mut self, e: &ToolCallStart) -> Flow {
        let s = self.style("1;33", &format!("→ {}", e.tool_call_name));
        self.put(&format!("{s}("));
        Flow::Continue
    }
    fn on_tool_call_args(&mut self, e: &ToolCallArgs) -> Flow {
        self.put_text(&e.delta);
        Flow::Continue
    }
    fn on_tool_call_end(&mut self, _: &ToolCallEnd) -> Flow {
        self.put(")\n");
        Flow::Continue
    }
    fn on_tool_call_result(&mut self, e: &ToolCallResult) -> Flow {
        let s = self.style("33", &format!("← {}", content_text(&e.content)));
        self.put(&format!("{s}\n"));
        Flow::Continue
    }
    fn on_state_changed(&mut self, state: &Value) -> Flow {
        let s = self.style("35", &format!("state: {}", short_json(state, 160)));
        self.put(&format!("{s}\n"));
        Flow::Continue
    }
    fn on_activity_snapshot(&mut self, e: &ActivitySnapshot) -> Flow {
        let s = self.style(
            "34",
            &format!(
                "[{}] {}",
                e.activity_type,
                short_json(&Value::Object(e.content.clone()), 160)
            ),
        );
        self.put(&format!("{s}\n"));
        Flow::Continue
    }
    fn on_activity_delta(&mut self, e: &ActivityDelta) -> Flow {
        let s = self.style(
            "34",
            &format!("[{}] {} change(s)", e.activity_type, e.patch.len()),
        );
        self.put(&format!("{s}\n"));
        Flow::Continue
    }
    fn on_step_started(&mut self, e: &StepStarted) -> Flow {
        let s = self.style("2", &format!("[step {}]", e.step_name));
        self.put(&format!("{s}\n"));
        Flow::Continue
    }
    fn on_subagent_started(&mut self, e: &SubagentStarted) -> Flow {
        let s = self.style(
            "32",
            &format!("⤷ subagent {} ({})", e.name, e.subagent_run_id),
        );
        self.put(&format!("{s}\n"));
        Flow::Continue
    }
    fn on_subagent_finished(&mut self, e: &SubagentFinished) -> Flow {
        let s = self.style("32", &format!("⤶ subagent {} finished", e.subagent_run_id));
        self.put(&format!("{s}\n"));
        Flow::Continue
    }
    fn on_subagent_error(&mut self, e: &SubagentError) -> Flow {
        let s = self.style(
            "31",
            &format!("⤶ subagent {} failed: {}", e.subagent_run_id, e.message),
        );
        self.put(&format!("{s}\n"));
        Flow::Continue
    }
    fn on_run_error_event(&mut self, e: &RunError) -> Flow {
        let s = self.style("1;31", &format!("run error: {}", e.message));
        self.put(&format!("{s}\n"));
        Flow::Continue
    }
    fn on_custom(&mut self, e: &Custom) -> Flow {
        let s = self.style(
            "2",
            &format!("custom {}: {}", e.name, short_json(&e.value, 120)),
        );
        self.put(&format!("{s}\n"));
        Flow::Continue
    }
    fn on_messages_snapshot(&mut self, e: &MessagesSnapshot) -> Flow {
        let s = self.style(
            "2",
            &format!("(conversation synchronised: {} messages)", e.messages.len()),
        );
        self.put(&format!("{s}\n"));
        Flow::Continue
    }
}

/// The last message's text, for summaries.
pub(crate) fn message_text(m: &Message) -> String {
    match m {
        Message::User(u) => content_text(&u.content),
        Message::Assistant(a) => a.content.clone().unwrap_or_default(),
        Message::Tool(t) => content_text(&t.content),
        Message::System(s) => s.content.clone(),
        Message::Developer(d) => d.content.clone(),
        Message::Reasoning(r) => r.content.clone(),
        Message::Activity(a) => a.content.as_str().to_owned(),
    }
}
