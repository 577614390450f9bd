//! The hot paths the gates measure, each as a workload: set up for a context (the size
//! of what the path already holds: events decoded, messages, bytes of state, runs
//! served) and a number of operations, then run those operations.
//!
//! Inputs are built in `setup`, so that `run` does only the path's own work.

use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use agui_sdk_client::{Conversation, EventStream, RunParams, Transport};
use agui_sdk_core::encoding::{DecoderLimits, Encoding, EventDecoder, EventEncoder};
use agui_sdk_core::semantics::{Inbound, InboundConfig, Reducer};
use agui_sdk_core::types::{AssistantMessage, Message};
use agui_sdk_core::{Event, JsonObject, PatchOperation, RunAgentInput};
use agui_sdk_server::{Agent, AgentError, AgentRouter, AgentStream, RunContext};
use axum::body::Body;
use axum::http::Request;
use futures_util::StreamExt;
use serde_json::Value;
use tower::ServiceExt;

/// A path set up for its operations.
pub(crate) trait Workload {
    /// Runs the operations it was set up for.
    fn run(&mut self);
}

/// One gated path.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Gate {
    /// Its name, as the budgets file spells it.
    pub name: &'static str,
    /// What one operation is.
    pub op: &'static str,
    /// What the context counts.
    pub context_unit: &'static str,
    /// The contexts it is measured at, small then large: the cost per operation must
    /// not grow from one to the other.
    pub contexts: [usize; 2],
    /// Operations per measurement (the difference between this many and twice as many
    /// gives the cost of one).
    pub ops: usize,
    /// Builds the workload for a context and a number of operations.
    pub setup: fn(context: usize, ops: usize) -> Box<dyn Workload>,
}

/// Every gate, in the order they run.
pub(crate) const GATES: &[Gate] = &[
    Gate {
        name: "sse-decode",
        op: "one event's SSE frame pushed and decoded",
        context_unit: "events decoded before",
        contexts: [1_000, 20_000],
        ops: 2_000,
        setup: |c, n| Box::new(Decode::new(Encoding::Sse, c, n)),
    },
    Gate {
        name: "proto-encode",
        op: "one event encoded as length-prefixed protobuf",
        context_unit: "events encoded before",
        contexts: [1_000, 20_000],
        ops: 2_000,
        setup: |c, n| Box::new(Encode::new(Encoding::Proto, c, n)),
    },
    Gate {
        name: "proto-decode",
        op: "one event's protobuf frame pushed and decoded",
        context_unit: "events decoded before",
        contexts: [1_000, 20_000],
        ops: 2_000,
        setup: |c, n| Box::new(Decode::new(Encoding::Proto, c, n)),
    },
    Gate {
        name: "inbound",
        op: "one TEXT_MESSAGE_CONTENT frame through the inbound pipeline (enforcement, expansion, verification, reducer)",
        context_unit: "finished messages in the conversation",
        contexts: [100, 5_000],
        ops: 2_000,
        setup: |c, n| Box::new(InboundText::new(c, n)),
    },
    Gate {
        name: "reducer-text",
        op: "one TEXT_MESSAGE_CONTENT applied",
        context_unit: "messages in the conversation",
        contexts: [100, 10_000],
        ops: 2_000,
        setup: |c, n| Box::new(ReducerText::new(c, n)),
    },
    Gate {
        name: "reducer-metadata",
        op: "one TEXT_MESSAGE_CONTENT carrying metadata merged into the message's",
        context_unit: "messages in the conversation",
        contexts: [100, 10_000],
        ops: 2_000,
        setup: |c, n| Box::new(ReducerText::with_metadata(c, n)),
    },
    Gate {
        name: "reducer-patch",
        op: "one STATE_DELTA (copy, replace, add, remove) applied",
        context_unit: "bytes of state",
        contexts: [100_000, 1_000_000],
        ops: 200,
        setup: |c, n| Box::new(ReducerPatch::new(c, n)),
    },
    Gate {
        name: "server-run",
        op: "one short agentic_chat run served in process (request to last byte)",
        context_unit: "runs served before",
        contexts: [10, 200],
        ops: 20,
        setup: |c, n| Box::new(ServerRun::new(c, n)),
    },
    Gate {
        name: "server-event",
        op: "one more streamed TEXT_MESSAGE_CONTENT in a run served in process",
        context_unit: "events streamed before in the run",
        contexts: [100, 5_000],
        ops: 1_000,
        setup: |c, n| Box::new(ServerEvents::new(c, n)),
    },
    Gate {
        name: "client-event",
        op: "one more TEXT_MESSAGE_CONTENT in a run taken in by the client's Conversation",
        context_unit: "events before in the run",
        contexts: [100, 5_000],
        ops: 1_000,
        setup: |c, n| Box::new(ClientEvents::new(c, n)),
    },
];

/// The gate named `name`.
pub(crate) fn gate(name: &str) -> Option<&'static Gate> {
    GATES.iter().find(|g| g.name == name)
}

const TEXT: &str = "the quick brown fox jumps over the lazy dog, caf\u{e9} \"quoted\" 42 ";

/// A delta of 5 to 40 bytes, different for each `i`.
fn delta(i: usize) -> String {
    let n = 5 + (i * 7919) % 36;
    let start = (i * 31) % (TEXT.len() - 41);
    let mut s: String = TEXT.chars().skip(start).take(n).collect();
    s.push_str(&(i % 1000).to_string());
    s
}

/// The `i`-th event of a stream of the shape a model's run has: mostly text deltas,
/// with tool-call arguments, reasoning and the odd state patch.
fn stream_event(i: usize) -> Event {
    match i % 8 {
        0..=4 => Event::text_message_content("msg-1", delta(i)),
        5 => Event::tool_call_args("call-1", delta(i)),
        6 => Event::from(agui_sdk_core::event::ReasoningMessageContent::new(
            "r-1",
            delta(i),
        )),
        _ => Event::state_delta(vec![PatchOperation::replace(
            "/progress",
            Value::from(i as u64),
        )]),
    }
}

/// Decoding: frames pushed one at a time, each event taken as soon as it is complete.
struct Decode {
    decoder: EventDecoder,
    frames: Vec<Vec<u8>>,
}

impl Decode {
    fn new(encoding: Encoding, context: usize, ops: usize) -> Decode {
        let encoder = EventEncoder::new(encoding);
        let mut decoder = EventDecoder::new(encoding);
        for i in 0..context {
            decoder.push(&encoder.encode_to_vec(&stream_event(i)));
            decoder.next().expect("an event").expect("it decodes");
        }
        let frames = (context..context + ops)
            .map(|i| encoder.encode_to_vec(&stream_event(i)))
            .collect();
        Decode { decoder, frames }
    }
}

impl Workload for Decode {
    fn run(&mut self) {
        for f in &self.frames {
            self.decoder.push(f);
            let e = self.decoder.next().expect("an event").expect("it decodes");
            black_box(e);
        }
    }
}

/// Encoding: each event into a reused buffer.
struct Encode {
    encoder: EventEncoder,
    events: Vec<Event>,
    out: Vec<u8>,
}

impl Encode {
    fn new(encoding: Encoding, context: usize, ops: usize) -> Encode {
        let encoder = EventEncoder::new(encoding);
        let mut out = Vec::new();
        for i in 0..context {
            out.clear();
            encoder.encode(&stream_event(i), &mut out);
        }
        Encode {
            encoder,
            events: (context..context + ops).map(stream_event).collect(),
            out,
        }
    }
}

impl Workload for Encode {
    fn run(&mut self) {
        for e in &self.events {
            self.out.clear();
            self.encoder.encode(e, &mut self.out);
            black_box(&self.out);
        }
    }
}

/// The inbound pipeline with a reducer, on a conversation of finished messages, taking
/// deltas for one open message.
struct InboundText {
    inbound: Inbound,
    frames: Vec<Vec<u8>>,
    out: Vec<Event>,
}

impl InboundText {
    fn new(context: usize, ops: usize) -> InboundText {
        let reducer = Reducer::new(Vec::new(), None);
        let mut inbound = Inbound::with_reducer(InboundConfig::default(), reducer);
        let (mut out, mut warnings) = (Vec::new(), Vec::new());
        let mut push = |inbound: &mut Inbound, e: Event| {
            inbound
                .push_json(e.to_json_string().as_bytes(), &mut out, &mut warnings)
                .expect("taken in");
            out.clear();
        };
        push(&mut inbound, Event::run_started("thread", "run"));
        for m in 0..context {
            let id = format!("msg-{m:06}");
            push(&mut inbound, Event::text_message_start(&id));
            push(&mut inbound, Event::text_message_content(&id, delta(m)));
            push(&mut inbound, Event::text_message_end(&id));
        }
        push(&mut inbound, Event::text_message_start("live"));
        assert!(warnings.is_empty(), "{warnings:?}");
        let frames = (0..ops)
            .map(|i| {
                Event::text_message_content("live", delta(i))
                    .to_json_string()
                    .into_bytes()
            })
            .collect();
        InboundText {
            inbound,
            frames,
            out: Vec::new(),
        }
    }
}

impl Workload for InboundText {
    fn run(&mut self) {
        let mut warnings = Vec::new();
        for f in &self.frames {
            self.inbound
                .push_json(f, &mut self.out, &mut warnings)
                .expect("taken in");
            self.out.clear();
        }
        assert!(warnings.is_empty(), "{warnings:?}");
    }
}

/// The reducer alone: text deltas to a message in the middle of the conversation.
struct ReducerText {
    reducer: Reducer,
    events: Vec<Event>,
}

impl ReducerText {
    fn new(context: usize, ops: usize) -> ReducerText {
        let messages = (0..context)
            .map(|m| Message::Assistant(AssistantMessage::new(format!("msg-{m:06}"), delta(m))))
            .collect();
        let target = format!("msg-{:06}", context / 2);
        ReducerText {
            reducer: Reducer::new(messages, None),
            events: (0..ops)
                .map(|i| Event::text_message_content(&target, delta(i)))
                .collect(),
        }
    }
}

impl ReducerText {
    /// As [`ReducerText::new`], each delta carrying metadata (two keys, one new value)
    /// for a message that keeps a few keys of its own.
    fn with_metadata(context: usize, ops: usize) -> ReducerText {
        let mut w = ReducerText::new(context, ops);
        let kept: JsonObject = serde_json::from_str(
            r#"{"model":"gpt-test","provider":"local","tags":["a","b"],"step":0}"#,
        )
        .expect("metadata");
        let target = format!("msg-{:06}", context / 2);
        w.reducer
            .apply_owned(Event::from(agui_sdk_core::event::TextMessageContent {
                metadata: Some(Box::new(kept)),
                ..agui_sdk_core::event::TextMessageContent::new(&target, "")
            }))
            .expect("applies");
        for (i, e) in w.events.iter_mut().enumerate() {
            if let Event::TextMessageContent(c) = e {
                let mut m = JsonObject::new();
                m.insert("step".into(), Value::from(i as u64));
                m.insert("model".into(), Value::from("gpt-test"));
                c.metadata = Some(Box::new(m));
            }
        }
        w
    }
}

impl Workload for ReducerText {
    fn run(&mut self) {
        for e in self.events.drain(..) {
            let applied = self.reducer.apply_owned(e).expect("applies");
            black_box(applied);
        }
    }
}

/// The reducer alone: state patches on a large state, each with a `copy`.
struct ReducerPatch {
    reducer: Reducer,
    events: Vec<Event>,
}

impl ReducerPatch {
    fn new(context: usize, ops: usize) -> ReducerPatch {
        // About 112 bytes of JSON a key.
        let keys = (context / 112).max(1);
        let mut state = JsonObject::new();
        for k in 0..keys {
            state.insert(format!("key{k:06}"), Value::String(format!("{k:0100}")));
        }
        state.insert("list".into(), Value::Array(Vec::new()));
        let mut reducer = Reducer::new(Vec::new(), None);
        reducer
            .apply_owned(Event::state_snapshot(Value::Object(state)))
            .expect("applies");
        let events = (0..ops)
            .map(|i| {
                let a = (i * 7919) % keys;
                let b = (i * 104_729) % keys;
                Event::state_delta(vec![
                    PatchOperation::copy(format!("/key{a:06}"), "/copied"),
                    PatchOperation::replace(
                        format!("/key{b:06}"),
                        Value::String(format!("{i:0100}")),
                    ),
                    PatchOperation::add("/list/-", Value::from(i as u64)),
                    PatchOperation::remove("/list/0"),
                ])
            })
            .collect();
        ReducerPatch { reducer, events }
    }
}

impl Workload for ReducerPatch {
    fn run(&mut self) {
        for e in self.events.drain(..) {
            let applied = self.reducer.apply_owned(e).expect("applies");
            assert!(applied.warning.is_none(), "{:?}", applied.warning);
            black_box(applied);
        }
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
}

/// One request through the router, its body read to the end; gives the body's length.
async fn serve_one(app: &axum::Router, path: &str, run: usize) -> usize {
    let body = format!(
        r#"{{"threadId":"t","runId":"r{run}","messages":[{{"id":"u","role":"user","content":"hi"}}]}}"#
    );
    let req = Request::post(path)
        .header("content-type", "application/json")
        .header("accept", "text/event-stream")
        .body(Body::from(body))
        .expect("a request");
    let res = app.clone().oneshot(req).await.expect("a response");
    assert!(res.status().is_success(), "{}", res.status());
    let bytes = axum::body::to_bytes(res.into_body(), usize::MAX)
        .await
        .expect("the body");
    bytes.len()
}

/// Short runs of the `agentic_chat` demo agent, one request each.
struct ServerRun {
    rt: tokio::runtime::Runtime,
    app: axum::Router,
    served: usize,
    ops: usize,
}

impl ServerRun {
    fn new(context: usize, ops: usize) -> ServerRun {
        let rt = runtime();
        let app = agui_sdk_demo::router(Duration::ZERO).into_router();
        for run in 0..context {
            rt.block_on(serve_one(&app, "/agentic_chat", run));
        }
        ServerRun {
            rt,
            app,
            served: context,
            ops,
        }
    }
}

impl Workload for ServerRun {
    fn run(&mut self) {
        for _ in 0..self.ops {
            let n = self
                .rt
                .block_on(serve_one(&self.app, "/agentic_chat", self.served));
            assert!(n > 100, "a reply");
            self.served += 1;
        }
    }
}

/// An agent streaming a set number of text deltas.
struct Deltas(Arc<AtomicUsize>);

impl Agent for Deltas {
    fn run(&self, input: RunAgentInput, _ctx: RunContext) -> AgentStream {
        let n = self.0.load(Ordering::Relaxed);
        let id = format!("{}-m", input.run_id);
        let head =
            futures_util::stream::iter([Ok::<_, AgentError>(Event::text_message_start(&id))]);
        let id2 = id.clone();
        let body = futures_util::stream::iter(0..n)
            .map(move |i| Ok(Event::text_message_content(&id2, delta(i))));
        let tail = futures_util::stream::iter([Ok(Event::text_message_end(&id))]);
        head.chain(body).chain(tail).boxed()
    }
}

/// One run served in process whose agent streams context + ops deltas.
struct ServerEvents {
    rt: tokio::runtime::Runtime,
    app: axum::Router,
}

impl ServerEvents {
    fn new(context: usize, ops: usize) -> ServerEvents {
        let count = Arc::new(AtomicUsize::new(context + ops));
        let app = AgentRouter::new()
            .agent("deltas", Deltas(count))
            .into_router();
        ServerEvents { rt: runtime(), app }
    }
}

impl Workload for ServerEvents {
    fn run(&mut self) {
        let n = self.rt.block_on(serve_one(&self.app, "/deltas", 0));
        black_box(n);
    }
}

/// A transport answering with recorded SSE bytes, in 64 KiB chunks as an HTTP body
/// arrives.
#[derive(Debug)]
struct Recorded(Arc<Vec<u8>>);

impl Transport for Recorded {
    fn run(&self, _input: &RunAgentInput, inbound: &InboundConfig) -> EventStream {
        const CHUNK: usize = 64 * 1024;
        let bytes = self.0.clone();
        let chunks = (0..bytes.len().div_ceil(CHUNK)).map(move |i| {
            let end = ((i + 1) * CHUNK).min(bytes.len());
            Ok::<_, agui_sdk_client::ClientError>(bytes::Bytes::copy_from_slice(
                &bytes[i * CHUNK..end],
            ))
        });
        EventStream::from_body(
            futures_util::stream::iter(chunks),
            Encoding::Sse,
            DecoderLimits::default(),
            inbound.clone(),
        )
    }
}

/// One run taken in by a `Conversation` (decode, inbound pipeline, reducer, its own
/// bookkeeping) from context + ops deltas.
struct ClientEvents {
    rt: tokio::runtime::Runtime,
    conversation: Conversation,
}

impl ClientEvents {
    fn new(context: usize, ops: usize) -> ClientEvents {
        let encoder = EventEncoder::new(Encoding::Sse);
        let mut sse = Vec::new();
        let mut push = |e: Event| encoder.encode(&e, &mut sse);
        push(Event::run_started("thread", "run"));
        push(Event::text_message_start("m"));
        for i in 0..context + ops {
            push(Event::text_message_content("m", delta(i)));
        }
        push(Event::text_message_end("m"));
        push(Event::run_finished("thread", "run"));
        let conversation = Conversation::builder_with_transport(Arc::new(Recorded(Arc::new(sse))))
            .thread_id("thread")
            .build();
        ClientEvents {
            rt: runtime(),
            conversation,
        }
    }
}

impl Workload for ClientEvents {
    fn run(&mut self) {
        let r = self
            .rt
            .block_on(self.conversation.run_agent(RunParams::new().run_id("run")))
            .expect("the run succeeds");
        black_box(r);
    }
}
