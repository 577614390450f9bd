//! A realistic event stream for the codec benchmarks (`codec.rs`, and `bench/peers`):
//! assistant messages streamed as `TEXT_MESSAGE_CONTENT` deltas of 5 to 40 characters
//! (most of the events), tool calls with argument deltas and results, state deltas and
//! the occasional state snapshot, inside one run. Deterministic: the same events on
//! every run.

#![allow(dead_code)]

use agui_sdk_core::types::PatchOperation;
use agui_sdk_core::Event;
use serde_json::{json, Map, Value};

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len() as u64) as usize]
    }
}

const WORDS: &[&str] = &[
    "the",
    "agent",
    "streams",
    "tokens",
    "to",
    "a",
    "client",
    "and",
    "it",
    "renders",
    "them",
    "as",
    "they",
    "arrive;",
    "weather",
    "in",
    "Berlin",
    "is",
    "mild,",
    "about",
    "18°C",
    "with",
    "light",
    "rain.",
    "Here",
    "is",
    "a",
    "summary:",
    "\"quoted\"",
    "café",
    "naïve",
    "日本語",
    "🙂",
    "results",
    "for",
    "your",
    "query",
    "are",
    "below.",
    "\n\n",
    "- item",
    "**bold**",
    "`code`",
    "https://example.com/docs",
    "résumé",
    "—",
    "and/or",
];

/// A text delta of 5 to 40 characters.
fn delta(rng: &mut Rng) -> String {
    let target = rng.range(5, 40) as usize;
    let mut s = String::new();
    while s.chars().count() < target {
        if !s.is_empty() {
            s.push(' ');
        }
        s.push_str(rng.pick(WORDS));
    }
    s.chars().take(target).collect()
}

fn args_fragments(rng: &mut Rng) -> Vec<String> {
    let city = rng.pick(&["Berlin", "Paris", "Tokyo", "São Paulo", "New York"]);
    let full = format!(
        r#"{{"location":"{city}","units":"metric","days":{},"include":["hourly","alerts"],"query":"{}"}}"#,
        rng.range(1, 14),
        delta(rng)
    );
    let chars: Vec<char> = full.chars().collect();
    let mut out = Vec::new();
    let mut at = 0;
    while at < chars.len() {
        let n = (rng.range(5, 40) as usize).min(chars.len() - at);
        out.push(chars[at..at + n].iter().collect());
        at += n;
    }
    out
}

fn snapshot(rng: &mut Rng, counter: u64) -> Value {
    let mut items = Vec::new();
    for i in 0..rng.range(5, 20) {
        items.push(json!({
            "id": format!("item-{i}"),
            "title": delta(rng),
            "done": rng.below(2) == 0,
            "score": rng.below(1000) as f64 / 10.0,
            "tags": [rng.pick(WORDS), rng.pick(WORDS)],
        }));
    }
    let mut prefs = Map::new();
    for k in ["theme", "language", "units", "timezone"] {
        prefs.insert(k.to_owned(), Value::String(rng.pick(WORDS).to_owned()));
    }
    json!({
        "counter": counter,
        "items": items,
        "preferences": prefs,
        "lastUpdated": 1_789_639_200_000u64 + counter * 1000,
        "cursor": null,
    })
}

/// About `n` events (a little more: the last message or call is completed).
pub(crate) fn realistic(n: usize) -> Vec<Event> {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut events = Vec::with_capacity(n + 64);
    let mut ts = 1_789_639_200_000i64;
    let mut run = agui_sdk_core::event::RunStarted::new("thread-1", "run-1");
    run.timestamp = Some(ts);
    events.push(Event::from(run));
    let (mut msg, mut call, mut counter) = (0u64, 0u64, 0u64);
    while events.len() < n {
        ts += rng.range(50, 2000) as i64;
        match rng.below(20) {
            // Mostly assistant text, streamed.
            0..=13 => {
                msg += 1;
                let id = format!("msg-{msg:06}");
                let mut start = agui_sdk_core::event::TextMessageStart::new(id.clone());
                start.timestamp = Some(ts);
                events.push(start.into());
                for _ in 0..rng.range(20, 120) {
                    events.push(Event::text_message_content(id.clone(), delta(&mut rng)));
                }
                events.push(Event::text_message_end(id));
            }
            // A tool call with streamed arguments and its result.
            14..=16 => {
                call += 1;
                let id = format!("call-{call:06}");
                let name = rng.pick(&["get_weather", "search_docs", "create_ticket"]);
                let mut start = agui_sdk_core::event::ToolCallStart::new(id.clone(), name);
                start.parent_message_id = Some(format!("msg-{msg:06}"));
                start.timestamp = Some(ts);
                events.push(start.into());
                for f in args_fragments(&mut rng) {
                    events.push(Event::tool_call_args(id.clone(), f));
                }
                events.push(Event::tool_call_end(id.clone()));
                let result: String = (0..rng.range(5, 25))
                    .map(|_| rng.pick(WORDS))
                    .collect::<Vec<_>>()
                    .join(" ");
                events.push(Event::tool_call_result(
                    format!("result-{call:06}"),
                    id,
                    result,
                ));
            }
            // State deltas.
            17 | 18 => {
                counter += 1;
                let mut ops = vec![PatchOperation::replace("/counter", json!(counter))];
                if rng.below(2) == 0 {
                    ops.push(PatchOperation::add(
                        "/items/-",
                        json!({"id": format!("item-{counter}"), "title": delta(&mut rng), "done": false}),
                    ));
                }
                if rng.below(3) == 0 {
                    ops.push(PatchOperation::replace("/lastUpdated", json!(ts)));
                }
                events.push(Event::state_delta(ops));
            }
            // The occasional full snapshot.
            _ => events.push(Event::state_snapshot(snapshot(&mut rng, counter))),
        }
    }
    let mut done = agui_sdk_core::event::RunFinished::new("thread-1", "run-1");
    done.timestamp = Some(ts + 10);
    events.push(done.into());
    events
}

/// How many events of each type the stream holds, most frequent first.
pub(crate) fn census(events: &[Event]) -> Vec<(String, usize)> {
    let mut counts = std::collections::BTreeMap::new();
    for e in events {
        *counts
            .entry(e.event_type().as_str().to_owned())
            .or_insert(0) += 1;
    }
    let mut v: Vec<_> = counts.into_iter().collect();
    v.sort_by_key(|b| std::cmp::Reverse(b.1));
    v
}
