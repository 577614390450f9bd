//! Seeded event streams, for the benchmarks and tests that need many events of every
//! kind a chat run holds (the core's property tests have their own proptest strategies;
//! see the crate docs).

use agui_sdk_core::Event;
use serde_json::json;

use crate::rng::Rng;

fn ev(v: serde_json::Value) -> Event {
    Event::from_json_str(&v.to_string()).expect("a valid generated event")
}

/// A long chat run, drawn from [`Rng`] with a fixed seed (the same events on every
/// call): `RUN_STARTED`, a state snapshot, 300 assistant messages of
/// `TEXT_MESSAGE_CONTENT` deltas of 5 to 40 characters (100 to 300 per message), a tool
/// call with its result every 10 messages, a `STATE_DELTA` every 25 messages, two
/// `TEXT_MESSAGE_CHUNK` messages and one `TOOL_CALL_CHUNK` call, `RUN_FINISHED`.
pub fn chat_run(thread: &str, run: &str) -> Vec<Event> {
    const WORDS: &str = "the quick brown fox jumps over the lazy dog while an agent streams \
        its answer to the user, token after token, with punctuation, numbers like 42 and \
        3.14, some unicode (caf\u{e9}, na\u{ef}ve, \u{65e5}\u{672c}), and \"quotes\" \
        that need escaping in JSON; ";
    let text: Vec<char> = WORDS.chars().collect();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut pos = 0usize;
    let mut delta = |rng: &mut Rng| {
        let n = rng.range(5, 40);
        let s: String = (0..n).map(|i| text[(pos + i) % text.len()]).collect();
        pos = (pos + n) % text.len();
        s
    };
    let mut out = vec![
        Event::run_started(thread, run),
        ev(
            json!({"type": "STATE_SNAPSHOT", "snapshot": {"progress": 0, "notes": [], "user": {"name": "Ada", "plan": "pro"}}}),
        ),
    ];
    for m in 0..300 {
        let id = format!("msg-{m:04}");
        out.push(Event::text_message_start(&id));
        for _ in 0..rng.range(100, 300) {
            out.push(Event::text_message_content(&id, delta(&mut rng)));
        }
        out.push(Event::text_message_end(&id));
        if m % 10 == 9 {
            let call = format!("call-{m:04}");
            out.push(ev(json!({"type": "TOOL_CALL_START", "toolCallId": call, "toolCallName": "search", "parentMessageId": id})));
            for part in [
                "{\"query\": ",
                "\"weather in ",
                "Paris\", \"limit\": ",
                "5}",
            ] {
                out.push(Event::tool_call_args(&call, part));
            }
            out.push(Event::tool_call_end(&call));
            out.push(Event::tool_call_result(
                format!("tool-{m:04}"),
                &call,
                "{\"results\": [\"sunny, 21 C\"]}",
            ));
        }
        if m % 25 == 24 {
            out.push(ev(json!({"type": "STATE_DELTA", "delta": [
                {"op": "replace", "path": "/progress", "value": m + 1},
                {"op": "add", "path": "/notes/-", "value": format!("finished message {m}")}
            ]})));
        }
        if m == 100 || m == 200 {
            let cid = format!("chunked-{m}");
            out.push(ev(
                json!({"type": "TEXT_MESSAGE_CHUNK", "messageId": cid, "role": "assistant", "delta": "Chunked "}),
            ));
            for _ in 0..20 {
                out.push(ev(
                    json!({"type": "TEXT_MESSAGE_CHUNK", "messageId": cid, "delta": delta(&mut rng)}),
                ));
            }
        }
        if m == 150 {
            out.push(ev(
                json!({"type": "TOOL_CALL_CHUNK", "toolCallId": "call-chunked", "toolCallName": "lookup", "parentMessageId": id, "delta": "{\"id\": "}),
            ));
            out.push(ev(
                json!({"type": "TOOL_CALL_CHUNK", "toolCallId": "call-chunked", "delta": "7}"}),
            ));
        }
    }
    out.push(Event::run_finished(thread, run));
    out
}

#[cfg(test)]
mod tests {
    use super::chat_run;

    #[test]
    fn the_run_is_the_same_on_every_call_and_verifies() {
        let a = chat_run("t", "r");
        assert_eq!(a, chat_run("t", "r"));
        // 300 messages of 100 to 300 deltas each, and their start and end.
        assert!((30_600..=90_600).contains(&a.len()), "{}", a.len());
        assert_eq!(a[0].event_type().as_str(), "RUN_STARTED");
        assert_eq!(a[a.len() - 1].event_type().as_str(), "RUN_FINISHED");
    }
}
