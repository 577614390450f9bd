//! What a run has open: text messages, tool calls, reasoning, steps and subagent
//! invocations started and not yet ended, and tool calls not yet answered.
//!
//! A producer that must end a run early (a stop, a shutdown, a lost agent) uses
//! [`OpenConstructs`] to close what is open, so that the terminal event it adds is one a
//! conforming client accepts (`RUN_FINISHED` requires everything closed).

use crate::event::Event;

/// Tracks the constructs a run has open, event by event. See the [module docs](self).
///
/// ```
/// use agui_sdk_core::semantics::OpenConstructs;
/// use agui_sdk_core::Event;
///
/// let mut open = OpenConstructs::new();
/// open.observe(&Event::text_message_start("m1"));
/// open.observe(&Event::tool_call_start("c1", "search"));
/// let mut out = Vec::new();
/// open.close_all(&mut out);
/// let types: Vec<_> = out.iter().map(|e| e.event_type().as_str()).collect();
/// assert_eq!(types, ["TOOL_CALL_END", "TEXT_MESSAGE_END"]);
/// assert_eq!(open.unanswered_tool_calls().collect::<Vec<_>>(), ["c1"]);
/// ```
#[derive(Debug, Default, Clone)]
pub struct OpenConstructs {
    /// Open constructs, in the order they were opened: what closes them, and the
    /// subagent invocation they belong to.
    open: Vec<(Closer, Option<String>)>,
    /// Tool calls started in this run that no `TOOL_CALL_RESULT` answered yet.
    unanswered: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Closer {
    Text(String),
    Tool(String),
    ReasoningMessage(String),
    Reasoning(String),
    Step(String),
    Subagent(String),
}

impl OpenConstructs {
    /// Nothing open.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether nothing is open.
    pub fn is_empty(&self) -> bool {
        self.open.is_empty()
    }

    /// Takes note of one event of the run (chunk events are not tracked: a client
    /// closes them itself when the run ends).
    pub fn observe(&mut self, event: &Event) {
        let tag = event.subagent_run_id().map(str::to_owned);
        match event {
            Event::TextMessageStart(e) => self.open(Closer::Text(e.message_id.clone()), tag),
            Event::TextMessageEnd(e) => self.close(&Closer::Text(e.message_id.clone())),
            Event::ToolCallStart(e) => {
                self.unanswered.push(e.tool_call_id.clone());
                self.open(Closer::Tool(e.tool_call_id.clone()), tag)
            }
            Event::ToolCallEnd(e) => self.close(&Closer::Tool(e.tool_call_id.clone())),
            Event::ToolCallResult(e) => self.unanswered.retain(|id| *id != e.tool_call_id),
            Event::ReasoningStart(e) => self.open(Closer::Reasoning(e.message_id.clone()), tag),
            Event::ReasoningEnd(e) => self.close(&Closer::Reasoning(e.message_id.clone())),
            Event::ReasoningMessageStart(e) => {
                self.open(Closer::ReasoningMessage(e.message_id.clone()), tag)
            }
            Event::ReasoningMessageEnd(e) => {
                self.close(&Closer::ReasoningMessage(e.message_id.clone()))
            }
            Event::StepStarted(e) => self.open(Closer::Step(e.step_name.clone()), tag),
            Event::StepFinished(e) => self.close(&Closer::Step(e.step_name.clone())),
            Event::SubagentStarted(e) => {
                self.open(Closer::Subagent(e.subagent_run_id.clone()), None)
            }
            Event::SubagentFinished(e) => self.close(&Closer::Subagent(e.subagent_run_id.clone())),
            Event::SubagentError(e) => self.close(&Closer::Subagent(e.subagent_run_id.clone())),
            // A new run starts with nothing open.
            Event::RunStarted(_) => {
                self.open.clear();
                self.unanswered.clear();
            }
            Event::TextMessageContent(_)
            | Event::TextMessageChunk(_)
            | Event::ToolCallArgs(_)
            | Event::ToolCallChunk(_)
            | Event::StateSnapshot(_)
            | Event::StateDelta(_)
            | Event::MessagesSnapshot(_)
            | Event::ActivitySnapshot(_)
            | Event::ActivityDelta(_)
            | Event::Raw(_)
            | Event::Custom(_)
            | Event::RunFinished(_)
            | Event::RunError(_)
            | Event::ReasoningMessageContent(_)
            | Event::ReasoningMessageChunk(_)
            | Event::ReasoningEncryptedValue(_) => {}
        }
    }

    fn open(&mut self, closer: Closer, tag: Option<String>) {
        if !self.open.iter().any(|(c, _)| *c == closer) {
            self.open.push((closer, tag));
        }
    }

    fn close(&mut self, closer: &Closer) {
        if let Some(i) = self.open.iter().rposition(|(c, _)| c == closer) {
            self.open.remove(i);
        }
    }

    /// Tool calls started and not answered by a `TOOL_CALL_RESULT`, oldest first.
    pub fn unanswered_tool_calls(&self) -> impl Iterator<Item = &str> {
        self.unanswered.iter().map(String::as_str)
    }

    /// Appends the events closing everything open, the most recently opened first
    /// (each with the attribution of what it closes), and forgets them.
    pub fn close_all(&mut self, out: &mut Vec<Event>) {
        while let Some((closer, tag)) = self.open.pop() {
            let mut event = match closer {
                Closer::Text(id) => Event::text_message_end(id),
                Closer::Tool(id) => Event::tool_call_end(id),
                Closer::ReasoningMessage(id) => Event::reasoning_message_end(id),
                Closer::Reasoning(id) => Event::reasoning_end(id),
                Closer::Step(name) => Event::step_finished(name),
                Closer::Subagent(id) => Event::subagent_finished(id),
            };
            if let (Some(tag), Some(slot)) = (tag, event.subagent_run_id_mut()) {
                *slot = Some(tag);
            }
            out.push(event);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::semantics::Verifier;

    #[test]
    fn closing_everything_satisfies_the_verifier() {
        let events = vec![
            Event::run_started("t", "r"),
            Event::step_started("plan"),
            Event::subagent_started("s1", "helper"),
            {
                let mut e = Event::text_message_start("m1");
                *e.subagent_run_id_mut().unwrap() = Some("s1".into());
                e
            },
            Event::reasoning_start("r1"),
            Event::reasoning_message_start("r1m"),
            Event::tool_call_start("c1", "search"),
            Event::tool_call_start("c2", "lookup"),
            Event::tool_call_end("c2"),
            Event::tool_call_result("res", "c2", "ok"),
        ];
        let mut v = Verifier::new();
        let mut open = OpenConstructs::new();
        for e in &events {
            v.push(e).unwrap();
            open.observe(e);
        }
        assert_eq!(open.unanswered_tool_calls().collect::<Vec<_>>(), ["c1"]);
        let mut out = Vec::new();
        open.close_all(&mut out);
        out.push(Event::run_finished("t", "r"));
        for e in &out {
            v.push(e).unwrap_or_else(|err| panic!("{err} at {e:?}"));
        }
        assert!(open.is_empty());
        assert_eq!(out[out.len() - 4].subagent_run_id(), Some("s1"));
    }

    #[test]
    fn a_new_run_forgets_the_last() {
        let mut open = OpenConstructs::new();
        open.observe(&Event::text_message_start("m1"));
        open.observe(&Event::run_started("t", "r2"));
        assert!(open.is_empty());
    }
}
