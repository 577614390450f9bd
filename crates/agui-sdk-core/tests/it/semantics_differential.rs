//! Differential test against the reference client: a seeded generator writes random
//! event sequences (plausible runs, and runs mutated to break rules); the reference
//! `@ag-ui/client` (run by `interop/semantics-oracle.mjs`) computes verdicts, chunk
//! expansions, compactions and applied conversations; ours must agree on every case.
//!
//! Needs `node` and the reference packages: run `scripts/setup-interop.sh` first.
//! Environment: `AGUI_DIFF_CASES` (default 3000), `AGUI_DIFF_SEED` (default fixed).

use crate::common;
use crate::interop_gate;

use std::io::Write;
use std::process::{Command, Stdio};

use agui_sdk_core::semantics::{ChunkExpander, Compactor, Reducer, Verifier};
use agui_sdk_core::{Event, Message};
use serde_json::{json, Value};

/// splitmix64: small, seeded, reproducible.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
    fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len())]
    }
}

const MSG_IDS: &[&str] = &["m1", "m2", "m3", "m4", "t1"];
const CALL_IDS: &[&str] = &["t1", "t2", "t3"];
const TAGS: &[&str] = &["s1", "s2"];
const KEYS: &[&str] = &["a", "b", "c"];

fn tag(r: &mut Rng, v: &mut Value, percent: u64) {
    if r.chance(percent) {
        v["subagentRunId"] = json!(r.pick(TAGS));
    }
}

fn meta(r: &mut Rng, v: &mut Value) {
    if r.chance(15) {
        let k = *r.pick(KEYS);
        v["metadata"] = json!({ k: r.below(5) });
    }
}

fn delta(r: &mut Rng) -> String {
    let words = ["hi", " there", "{\"q\":", "1}", "", "é", "\n"];
    (*r.pick(&words)).to_owned()
}

fn patch_op(r: &mut Rng) -> Value {
    let k = *r.pick(KEYS);
    match r.below(6) {
        0 | 1 => json!({"op": "add", "path": format!("/{k}"), "value": r.below(9)}),
        2 => json!({"op": "replace", "path": format!("/{k}"), "value": [r.below(3)]}),
        3 => json!({"op": "remove", "path": format!("/{k}")}),
        4 => json!({"op": "add", "path": format!("/{k}/-"), "value": "x"}),
        _ => json!({"op": "test", "path": format!("/{k}"), "value": r.below(9)}),
    }
}

fn patch(r: &mut Rng) -> Value {
    Value::Array((0..r.below(3) + 1).map(|_| patch_op(r)).collect())
}

fn message(r: &mut Rng, id: &str) -> Value {
    let mut m = match r.below(6) {
        0 => json!({"id": id, "role": "user", "content": "u"}),
        1 => json!({"id": id, "role": "assistant", "content": "a",
                    "toolCalls": [{"id": r.pick(CALL_IDS), "type": "function",
                                   "function": {"name": "f", "arguments": "{}"}}]}),
        2 => json!({"id": id, "role": "reasoning", "content": "r"}),
        3 => {
            json!({"id": id, "role": "activity", "activityType": r.pick(&["plan", "search"]), "content": {"n": 1}})
        }
        4 => json!({"id": id, "role": "tool", "content": "ok", "toolCallId": r.pick(CALL_IDS)}),
        _ => json!({"id": id, "role": "system", "content": "s"}),
    };
    tag(r, &mut m, 15);
    m
}

/// One logical block of a run: its events in order.
fn block(r: &mut Rng) -> Vec<Value> {
    let mut out = Vec::new();
    match r.below(16) {
        0 | 1 => {
            let id = *r.pick(MSG_IDS);
            let mut start = json!({"type": "TEXT_MESSAGE_START", "messageId": id});
            if r.chance(25) {
                start["role"] = json!(r.pick(&["assistant", "user", "system", "developer"]));
            }
            if r.chance(10) {
                start["name"] = json!("bob");
            }
            tag(r, &mut start, 20);
            meta(r, &mut start);
            let t = start.get("subagentRunId").cloned();
            out.push(start);
            for _ in 0..r.below(4) {
                let mut c =
                    json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": id, "delta": delta(r)});
                if let Some(t) = &t {
                    if r.chance(70) {
                        c["subagentRunId"] = t.clone();
                    }
                }
                meta(r, &mut c);
                out.push(c);
            }
            let mut end = json!({"type": "TEXT_MESSAGE_END", "messageId": id});
            meta(r, &mut end);
            out.push(end);
        }
        2 | 3 => {
            let id = *r.pick(CALL_IDS);
            let mut start = json!({"type": "TOOL_CALL_START", "toolCallId": id,
                                   "toolCallName": r.pick(&["search", "send"])});
            if r.chance(50) {
                start["parentMessageId"] = json!(r.pick(&["m1", "m2", "m3", "", "x9"]));
            }
            tag(r, &mut start, 15);
            meta(r, &mut start);
            out.push(start);
            for _ in 0..r.below(3) {
                let mut a = json!({"type": "TOOL_CALL_ARGS", "toolCallId": id, "delta": delta(r)});
                meta(r, &mut a);
                out.push(a);
            }
            out.push(json!({"type": "TOOL_CALL_END", "toolCallId": id}));
            if r.chance(50) {
                let mut res = json!({"type": "TOOL_CALL_RESULT", "messageId": format!("r{}", r.below(3)),
                                     "toolCallId": id, "content": "done"});
                if r.chance(20) {
                    res["content"] = json!([{"type": "text", "text": "x"}]);
                }
                tag(r, &mut res, 10);
                out.push(res);
            }
        }
        4 => {
            let id = *r.pick(MSG_IDS);
            let mut span = json!({"type": "REASONING_START", "messageId": "rs"});
            tag(r, &mut span, 10);
            out.push(span);
            out.push(
                json!({"type": "REASONING_MESSAGE_START", "messageId": id, "role": "reasoning"}),
            );
            for _ in 0..r.below(3) {
                out.push(json!({"type": "REASONING_MESSAGE_CONTENT", "messageId": id, "delta": delta(r)}));
            }
            out.push(json!({"type": "REASONING_MESSAGE_END", "messageId": id}));
            out.push(json!({"type": "REASONING_END", "messageId": "rs"}));
        }
        5 | 6 => {
            // Chunks.
            let kind = r.below(3);
            for i in 0..r.below(4) + 1 {
                let mut c = match kind {
                    0 => json!({"type": "TEXT_MESSAGE_CHUNK"}),
                    1 => json!({"type": "TOOL_CALL_CHUNK"}),
                    _ => json!({"type": "REASONING_MESSAGE_CHUNK"}),
                };
                if (i == 0 || r.chance(20)) && r.chance(90) {
                    {
                        if kind == 1 {
                            c["toolCallId"] = json!(r.pick(CALL_IDS));
                            if r.chance(90) {
                                c["toolCallName"] = json!("f");
                            }
                            if r.chance(20) {
                                c["parentMessageId"] = json!(r.pick(MSG_IDS));
                            }
                        } else {
                            c["messageId"] = json!(r.pick(MSG_IDS));
                        }
                    }
                }
                if kind == 0 && r.chance(10) {
                    c["role"] = json!(r.pick(&["assistant", "user"]));
                }
                if r.chance(80) {
                    c["delta"] = json!(delta(r));
                }
                if r.chance(5) {
                    c["rawEvent"] = json!({"p": 1});
                }
                if r.chance(5) {
                    c["extraKey"] = json!(1);
                }
                tag(r, &mut c, 20);
                meta(r, &mut c);
                out.push(c);
            }
        }
        7 => {
            let mut s = json!({"type": "STATE_SNAPSHOT", "snapshot": {"a": r.below(3)}});
            meta(r, &mut s);
            out.push(s);
        }
        8 | 9 => {
            let mut d = json!({"type": "STATE_DELTA", "delta": patch(r)});
            meta(r, &mut d);
            out.push(d);
        }
        10 => {
            let id = *r.pick(&["act1", "act2", "m1"]);
            let mut s = json!({"type": "ACTIVITY_SNAPSHOT", "messageId": id,
                               "activityType": r.pick(&["plan", "search"]), "content": {"a": 1}});
            if r.chance(30) {
                s["replace"] = json!(r.chance(50));
            }
            tag(r, &mut s, 15);
            meta(r, &mut s);
            out.push(s);
            if r.chance(60) {
                let mut d = json!({"type": "ACTIVITY_DELTA", "messageId": id, "activityType": "plan",
                                   "patch": patch(r)});
                tag(r, &mut d, 10);
                meta(r, &mut d);
                out.push(d);
            }
        }
        11 => {
            let name = *r.pick(&["plan", "act"]);
            let mut a = json!({"type": "STEP_STARTED", "stepName": name});
            tag(r, &mut a, 20);
            let mut b = json!({"type": "STEP_FINISHED", "stepName": name});
            if let Some(t) = a.get("subagentRunId") {
                b["subagentRunId"] = t.clone();
            }
            out.push(a);
            out.push(b);
        }
        12 => {
            let id = *r.pick(TAGS);
            let mut s = json!({"type": "SUBAGENT_STARTED", "subagentRunId": id, "name": "helper"});
            if r.chance(20) {
                s["parentSubagentRunId"] = json!(r.pick(TAGS));
            }
            out.push(s);
            let mut t = json!({"type": "TEXT_MESSAGE_START", "messageId": format!("{id}-m"), "subagentRunId": id});
            meta(r, &mut t);
            out.push(t);
            out.push(json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": format!("{id}-m"), "delta": "sub"}));
            out.push(json!({"type": "TEXT_MESSAGE_END", "messageId": format!("{id}-m"), "subagentRunId": id}));
            if r.chance(30) {
                out.push(json!({"type": "SUBAGENT_ERROR", "subagentRunId": id, "message": "x"}));
            } else {
                let mut f = json!({"type": "SUBAGENT_FINISHED", "subagentRunId": id});
                if r.chance(30) {
                    f["outcome"] = json!({"type": "suspended", "interruptIds": ["i1"]});
                }
                out.push(f);
            }
        }
        13 => {
            let n = r.below(4);
            // Ids in a snapshot are distinct: with repeated ids the reference's result
            // aliases one message object in several places (see the report).
            let mut ids: Vec<String> = (0..n)
                .map(|_| (*r.pick(&["m1", "m2", "m3", "act1", "x1"])).to_owned())
                .collect();
            ids.sort();
            ids.dedup();
            let msgs: Vec<Value> = ids.iter().map(|id| message(r, id)).collect();
            let mut s = json!({"type": "MESSAGES_SNAPSHOT", "messages": msgs});
            if r.chance(30) {
                s["metadata"] = json!({"@ag-ui/client": {"authoritativeActivityTypes":
                    r.pick(&[json!(null), json!(["plan"]), json!([]), json!(5)]).clone()}});
            }
            out.push(s);
        }
        14 => {
            let mut e = json!({"type": "REASONING_ENCRYPTED_VALUE",
                               "subtype": r.pick(&["tool-call", "message"]),
                               "entityId": r.pick(&["m1", "t1", "t2", "m2"]), "encryptedValue": "enc"});
            tag(r, &mut e, 20);
            out.push(e);
        }
        _ => {
            let mut c = if r.chance(50) {
                json!({"type": "CUSTOM", "name": "n", "value": r.below(3)})
            } else {
                json!({"type": "RAW", "event": {"k": 1}})
            };
            tag(r, &mut c, 10);
            out.push(c);
        }
    }
    out
}

/// Merges blocks, keeping each block's order, interleaving them at random.
fn interleave(r: &mut Rng, mut blocks: Vec<Vec<Value>>) -> Vec<Value> {
    for b in &mut blocks {
        b.reverse();
    }
    let mut out = Vec::new();
    loop {
        blocks.retain(|b| !b.is_empty());
        if blocks.is_empty() {
            return out;
        }
        // Mostly finish the current block; sometimes switch.
        let i = if r.chance(70) {
            0
        } else {
            r.below(blocks.len())
        };
        if let Some(e) = blocks[i].pop() {
            out.push(e);
        }
    }
}

fn run(r: &mut Rng) -> Vec<Value> {
    // A run's RUN_FINISHED carries its RUN_STARTED's ids: the 1.1 rule this verifier
    // enforces and the 1.0 reference does not (docs/compatibility.md).
    let run_id = format!("r{}", r.below(9));
    let mut started = json!({"type": "RUN_STARTED", "threadId": "t", "runId": run_id});
    if r.chance(30) {
        let msgs: Vec<Value> = (0..r.below(3))
            .map(|_| {
                let id = *r.pick(&["m1", "i1", "i2"]);
                message(r, id)
            })
            .collect();
        started["input"] =
            json!({"threadId": "t", "runId": "r", "messages": msgs, "tools": [], "context": []});
    }
    let mut out = vec![started];
    let blocks: Vec<Vec<Value>> = (0..r.below(6) + 1).map(|_| block(r)).collect();
    out.extend(interleave(r, blocks));
    let mut fin = json!({"type": "RUN_FINISHED", "threadId": "t", "runId": run_id});
    match r.below(6) {
        0 => {
            fin["outcome"] = json!({"type": "interrupt", "interrupts": [
            {"id": "i1", "reason": "tool_approval", "toolCallId": "t1"}, {"id": "i2", "reason": "x", "subagentRunId": "s1"}]})
        }
        1 => fin["outcome"] = json!({"type": "cancelled"}),
        2 => fin["outcome"] = json!({"type": "success", "pendingToolCallIds": [r.pick(CALL_IDS)]}),
        3 => fin["result"] = json!({"ok": true}),
        _ => {}
    }
    if r.chance(10) {
        out.push(json!({"type": "RUN_ERROR", "message": "boom"}));
    } else {
        out.push(fin);
    }
    out
}

fn mutate(r: &mut Rng, evs: &mut Vec<Value>) {
    for _ in 0..r.below(3) + 1 {
        if evs.is_empty() {
            return;
        }
        let i = r.below(evs.len());
        match r.below(6) {
            0 => {
                evs.remove(i);
            }
            1 => {
                let e = evs[i].clone();
                evs.insert(r.below(evs.len() + 1), e);
            }
            2 if i + 1 < evs.len() => evs.swap(i, i + 1),
            3 => {
                if evs[i].get("messageId").is_some() {
                    evs[i]["messageId"] = json!(r.pick(MSG_IDS));
                }
            }
            4 => {
                let t = evs[i]["type"].as_str().unwrap_or("").to_owned();
                if !t.starts_with("RUN_") && t != "MESSAGES_SNAPSHOT" {
                    if r.chance(50) {
                        evs[i]["subagentRunId"] = json!(r.pick(TAGS));
                    } else if let Some(o) = evs[i].as_object_mut() {
                        if !t.starts_with("SUBAGENT_") {
                            o.remove("subagentRunId");
                        }
                    }
                }
            }
            _ => {
                let extra = block(r);
                let at = r.below(evs.len() + 1);
                for (k, e) in extra.into_iter().enumerate() {
                    evs.insert(at + k, e);
                }
            }
        }
    }
}

fn generate(seed: u64, n: usize) -> Vec<Value> {
    let mut r = Rng(seed);
    (0..n)
        .map(|id| {
            let mut events = Vec::new();
            for _ in 0..r.below(2) + 1 {
                events.extend(run(&mut r));
            }
            if r.chance(50) {
                mutate(&mut r, &mut events);
            }
            let messages: Vec<Value> = if r.chance(25) {
                vec![message(&mut r, "m1"), message(&mut r, "x1")]
            } else {
                vec![]
            };
            let state = if r.chance(80) {
                json!({"a": 0})
            } else {
                json!({})
            };
            json!({"id": id, "events": events, "messages": messages, "state": state})
        })
        .collect()
}

/// Corrupts an event with material enforcement must remove (or reject).
fn corrupt(r: &mut Rng, ev: &mut Value) {
    let Some(o) = ev.as_object_mut() else { return };
    match r.below(10) {
        0 => {
            o.insert("zz".into(), json!(1));
        }
        1 => {
            o.insert(
                "type".into(),
                json!(r.pick(&["THINKING_START", "", "SOMETHING_NEW"])),
            );
        }
        2 => {
            if let Some(Value::Array(ms)) = o.get_mut("messages") {
                if let Some(Value::Object(m)) = ms.first_mut() {
                    if r.chance(50) {
                        m.insert("role".into(), json!("critic"));
                    } else {
                        m.insert("junk".into(), json!({"x": null}));
                    }
                }
            } else {
                o.insert("toString".into(), json!("x"));
            }
        }
        3 => {
            if o.contains_key("outcome") {
                o.insert(
                    "outcome".into(),
                    json!({"type": r.pick(&["timeout", "success"]), "extra": 1}),
                );
            } else if o.contains_key("content") && o["type"] == "TOOL_CALL_RESULT" {
                o.insert(
                    "content".into(),
                    json!([{"type": "text", "text": "a", "k": 2},
                    {"type": "image", "source": {"type": r.pick(&["s3", "url"]), "value": "v"}},
                    {"type": "hologram"}]),
                );
            } else {
                o.insert("metadata".into(), json!({"deep": {"x": null}}));
            }
        }
        4 => {
            if let Some(Value::Array(ops)) = o.get_mut("delta") {
                ops.push(json!({"op": r.pick(&["merge", "add"]), "path": "/q", "value": 1, "note": "kept"}));
            } else {
                o.insert("rawEvent".into(), json!({"any": [null]}));
            }
        }
        5 => {
            // A null on an optional field: fatal.
            o.insert(
                r.pick(&["timestamp", "metadata", "rawEvent"]).to_string(),
                Value::Null,
            );
        }
        6 => {
            // A malformed known field: fatal.
            o.insert(
                "timestamp".into(),
                json!(r.pick(&[json!(1.5), json!("x")]).clone()),
            );
        }
        7 => {
            if let Some(Value::Object(input)) = o.get_mut("input") {
                input.insert("weird".into(), json!(1));
                input.insert("state".into(), Value::Null);
            } else {
                o.insert("subagentRunId".into(), json!("s9"));
            }
        }
        _ => {}
    }
}

fn generate_enforce(seed: u64, n: usize, first_id: usize) -> Vec<Value> {
    let mut r = Rng(seed ^ 0xE4F0);
    (0..n)
        .map(|k| {
            let mut events = run(&mut r);
            for e in events.iter_mut() {
                if r.chance(40) {
                    corrupt(&mut r, e);
                }
            }
            json!({"id": first_id + k, "enforce": events})
        })
        .collect()
}

fn date_string(r: &mut Rng) -> Value {
    let y = 1990 + r.below(80);
    let mo = 1 + r.below(12);
    let d = 1 + r.below(31);
    let (h, mi, sec, ms) = (r.below(24), r.below(60), r.below(60), r.below(1000));
    match r.below(9) {
        0 => Value::Null,
        1 => json!(format!("{y:04}-{mo:02}-{d:02}")),
        2 => json!(format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{sec:02}Z")),
        3 => json!(format!(
            "{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{sec:02}.{ms:03}Z"
        )),
        4 => json!(format!(
            "{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}+{:02}:30",
            r.below(12)
        )),
        5 => json!(format!("{y:04}-{mo:02}")),
        6 => json!(format!("{y:04}")),
        7 => json!(*r.pick(&[
            "not a date",
            "",
            "2026-09-17T00:00:00Zjunk",
            "2026-09-17T25:00:00Z"
        ])),
        _ => json!(format!(
            "{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{sec:02}.{ms:03}-{:02}:00",
            r.below(12)
        )),
    }
}

fn generate_interrupts(seed: u64, n: usize, first_id: usize) -> Vec<Value> {
    let mut r = Rng(seed ^ 0x1A7E);
    (0..n)
        .map(|k| {
            let expires: Vec<Value> = (0..8).map(|_| date_string(&mut r)).collect();
            let ids: Vec<String> = (0..r.below(4)).map(|i| format!("i{i}")).collect();
            let interrupts: Vec<Value> = ids
                .iter()
                .map(|id| json!({"id": id, "reason": "x"}))
                .collect();
            let mut responses = serde_json::Map::new();
            for id in &ids {
                if r.chance(85) {
                    let mut resp = json!({"status": r.pick(&["resolved", "cancelled"])});
                    if r.chance(50) {
                        resp["payload"] = json!({"ok": true});
                    }
                    if r.chance(30) {
                        resp["metadata"] = json!({"sig": "s"});
                    }
                    responses.insert(id.clone(), resp);
                }
            }
            if r.chance(15) {
                responses.insert("ghost".into(), json!({"status": "cancelled"}));
            }
            json!({"id": first_id + k,
                   "expiry": {"now": "2026-09-17T00:00:00Z", "expiresAt": expires},
                   "resume": {"interrupts": interrupts, "responses": responses}})
        })
        .collect()
}

fn ours_interrupts(case: &Value) -> Value {
    use agui_sdk_core::semantics::interrupts::{is_interrupt_expired_at, parse_iso8601_millis};
    use agui_sdk_core::semantics::{build_resume_array, ResumeResponse};
    let now = parse_iso8601_millis(case["expiry"]["now"].as_str().unwrap()).unwrap();
    let expired: Vec<bool> = case["expiry"]["expiresAt"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let mut i = agui_sdk_core::Interrupt::new("i", "r");
            i.expires_at = e.as_str().map(str::to_owned);
            is_interrupt_expired_at(&i, now)
        })
        .collect();
    let interrupts: Vec<agui_sdk_core::Interrupt> =
        serde_json::from_value(case["resume"]["interrupts"].clone()).unwrap();
    let responses = case["resume"]["responses"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| {
            (
                k.clone(),
                ResumeResponse {
                    status: serde_json::from_value(v["status"].clone()).unwrap(),
                    payload: v.get("payload").cloned(),
                    metadata: v.get("metadata").and_then(|m| m.as_object().cloned()),
                },
            )
        });
    let resume = match build_resume_array(&interrupts, responses) {
        Ok(entries) => json!({"output": entries}),
        Err(e) => json!({"error": e.to_string()}),
    };
    json!({"id": case["id"], "expired": expired, "resume": resume})
}

fn ours_enforce(case: &Value) -> Value {
    let answers: Vec<Value> = case["enforce"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| match agui_sdk_core::semantics::enforce_event(v.clone()) {
            Ok(e) => {
                let warnings: Vec<String> = e
                    .warnings
                    .iter()
                    .map(|w| match w {
                        agui_sdk_core::semantics::EnforceWarning::UnrecognisedEvent { event_type } => {
                            format!("drop:{event_type}")
                        }
                        other => other.path().unwrap_or_default().to_owned(),
                    })
                    .collect();
                json!({"output": e.event.map(|e| serde_json::to_value(e).unwrap()), "warnings": warnings})
            }
            Err(e) => {
                let path: Vec<Value> = e
                    .source
                    .path
                    .split('/')
                    .filter(|s| !s.is_empty())
                    .map(|s| s.parse::<u64>().map(Value::from).unwrap_or_else(|_| json!(s)))
                    .collect();
                json!({"errorPath": path})
            }
        })
        .collect();
    json!({"id": case["id"], "enforce": answers})
}

fn to_values(evs: &[Event]) -> Vec<Value> {
    evs.iter()
        .map(|e| serde_json::to_value(e).unwrap())
        .collect()
}

/// Our answer to a case, in the oracle's shape.
/// Rules of the 1.1 specification this verifier enforces and the 1.0 reference does not.
const STRICTER_THAN_REFERENCE: [&str; 4] = [
    "lifecycle/run-finished-run-id",
    "lifecycle/run-finished-thread-id",
    "lifecycle/one-thread-per-stream",
    "interrupts/distinct-ids",
];

fn ours(case: &Value) -> Value {
    let events: Vec<Event> = case["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            agui_sdk_core::wire::from_json_value::<Event>(v)
                .unwrap_or_else(|e| panic!("generator wrote an undecodable event {v}: {e}"))
        })
        .collect();
    let mut v = Verifier::new();
    let verify = match events.iter().try_for_each(|e| v.push(e)) {
        Ok(()) => json!({"ok": true, "emitted": v.events_seen()}),
        // The 1.1 rules the 1.0 reference does not have (docs/compatibility.md): a
        // mutated stream that breaks one is rejected here and may be accepted there.
        Err(e) if STRICTER_THAN_REFERENCE.contains(&e.rule.id()) => {
            json!({"ok": false, "error": e.rule.to_string(), "stricter": e.rule.id()})
        }
        Err(e) => json!({"ok": false, "error": e.rule.to_string()}),
    };
    let expanded = ChunkExpander::expand_all(events.clone());
    let expand = match &expanded {
        Ok(out) => json!({"ok": true, "output": to_values(out)}),
        Err(e) => json!({"ok": false, "error": e.rule.to_string()}),
    };
    let base = expanded.unwrap_or(events);
    let compact = json!({"output": to_values(&Compactor::compact_all(base.clone()))});
    let messages: Vec<Message> = serde_json::from_value(case["messages"].clone()).unwrap();
    let mut reducer = Reducer::new(messages, Some(case["state"].clone()));
    let apply = match base
        .into_iter()
        .try_for_each(|e| reducer.apply_owned(e).map(|_| ()))
    {
        Ok(()) => {
            let mut o = reducer.to_json();
            o["ok"] = json!(true);
            o["pendingInterrupts"] = serde_json::to_value(reducer.pending_interrupts()).unwrap();
            o
        }
        Err(agui_sdk_core::semantics::ApplyError::UntransformedChunk { event_type, .. }) => {
            json!({"ok": false, "error": format!("{event_type} must be transformed before being applied")})
        }
    };
    json!({"id": case["id"], "verify": verify, "expand": expand, "compact": compact, "apply": apply})
}

fn run_oracle(cases: &[Value]) -> Vec<Value> {
    let dir = common::reference("").join("../../interop");
    let script = dir.join("semantics-oracle.mjs");
    assert!(
        dir.join("node_modules/@ag-ui/client").is_dir(),
        "the reference packages are not installed: run scripts/setup-interop.sh"
    );
    let mut child = Command::new("node")
        .arg(&script)
        .current_dir(&dir)
        .env("TZ", "UTC")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| {
            panic!("cannot run node ({e}): install Node.js and run scripts/setup-interop.sh")
        });
    let mut stdin = child.stdin.take().unwrap();
    let input: String = cases.iter().map(|c| format!("{c}\n")).collect();
    let writer = std::thread::spawn(move || {
        stdin.write_all(input.as_bytes()).unwrap();
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    assert!(out.status.success(), "the oracle failed: {:?}", out.status);
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn agrees_with_reference_client_on_random_streams() {
    if !interop_gate::ready("agrees_with_reference_client_on_random_streams") {
        return;
    }
    let n: usize = std::env::var("AGUI_DIFF_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3000);
    let seed: u64 = std::env::var("AGUI_DIFF_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5EED_A6E1);
    let mut cases = generate(seed, n);
    let enforce_cases = generate_enforce(seed, n / 3, n);
    cases.extend(enforce_cases.iter().cloned());
    let interrupt_cases = generate_interrupts(seed, n / 10, cases.len());
    cases.extend(interrupt_cases.iter().cloned());
    let theirs = run_oracle(&cases);
    assert_eq!(theirs.len(), cases.len(), "oracle answered every case");
    let mut failures: Vec<(usize, &str, Value, Value)> = Vec::new();
    let mut stats = [0usize; 4];
    let mut stricter = 0usize;
    let mut enforce_compared = 0usize;
    let mut enforce_kinds = [0usize; 3];
    let mut enforce_failures: Vec<(usize, Value, Value)> = Vec::new();
    let mut interrupt_failures: Vec<(Value, Value)> = Vec::new();
    for (case, want) in cases.iter().zip(&theirs) {
        if case.get("expiry").is_some() {
            let got = ours_interrupts(case);
            if &got != want {
                interrupt_failures.push((json!({"case": case, "ours": got}), want.clone()));
            }
            continue;
        }
        if case.get("enforce").is_some() {
            let got = ours_enforce(case);
            let mut want = want.clone();
            // Where the reference errors, only the failing field is compared (its
            // warnings for that event are not: they come from the same stripping).
            for (g, w) in got["enforce"]
                .as_array()
                .unwrap()
                .iter()
                .zip(want["enforce"].as_array_mut().unwrap())
            {
                if g.get("errorPath").is_some() {
                    if let Some(o) = w.as_object_mut() {
                        o.remove("warnings");
                    }
                }
            }
            enforce_compared += case["enforce"].as_array().unwrap().len();
            for w in want["enforce"].as_array().unwrap() {
                if w.get("errorPath").is_some() {
                    enforce_kinds[0] += 1;
                } else if w["output"].is_null() {
                    enforce_kinds[1] += 1;
                } else if w["warnings"].as_array().is_some_and(|a| !a.is_empty()) {
                    enforce_kinds[2] += 1;
                }
            }
            if got != want {
                enforce_failures.push((
                    case["enforce"].as_array().unwrap().len(),
                    json!({"case": case, "ours": got}),
                    want,
                ));
            }
            continue;
        }
        let mut got = ours(case);
        let mut skip_verify = false;
        if let Some(v) = got["verify"].as_object_mut() {
            if v.remove("stricter").is_some() {
                // Ours stopped at the rule; the reference went on (to accept the stream,
                // or to reject a later event): nothing to compare.
                stricter += 1;
                skip_verify = true;
            }
        }
        for (k, part) in ["verify", "expand", "compact", "apply"].iter().enumerate() {
            if skip_verify && *part == "verify" {
                continue;
            }
            if got[part] != want[part] {
                failures.push((
                    case["events"].as_array().unwrap().len(),
                    part,
                    got[part].clone(),
                    want[part].clone(),
                ));
                let last = failures.last_mut().unwrap();
                last.2 = json!({"case": case, "ours": got[part]});
            } else if want[part]["ok"] != json!(false) {
                stats[k] += 1;
            }
        }
    }
    let rejected = theirs
        .iter()
        .filter(|t| t["verify"]["ok"] == json!(false))
        .count();
    println!(
        "differential: {} cases x 4 operations compared against the reference client \
         ({rejected} streams rejected by its verifier; accepted/ok results: verify {}, expand {}, compact {}, apply {})",
        n,
        stats[0],
        stats[1],
        stats[2],
        stats[3]
    );
    println!(
        "differential: {stricter} mutated streams rejected by a 1.1 rule the reference lacks (not compared)"
    );
    println!(
        "differential: {} interrupt cases (8 expiry dates and one resume array each; {} mismatching)",
        interrupt_cases.len(),
        interrupt_failures.len()
    );
    if let Some((got, want)) = interrupt_failures.first() {
        panic!(
            "interrupt helper mismatch:\n{}\nreference: {}",
            serde_json::to_string(got).unwrap(),
            serde_json::to_string(want).unwrap()
        );
    }
    println!(
        "differential: {enforce_compared} raw events enforced and compared ({} fatal, {} dropped, {} stripped; {} mismatching cases)",
        enforce_kinds[0],
        enforce_kinds[1],
        enforce_kinds[2],
        enforce_failures.len()
    );
    assert!(
        enforce_kinds.iter().all(|&k| k > 0),
        "enforcement cases exercise every outcome"
    );
    if let Some((_, got, want)) = enforce_failures.iter().min_by_key(|f| f.0) {
        panic!(
            "enforcement mismatch; smallest failing case:\n{}\nreference: {}",
            serde_json::to_string(got).unwrap(),
            serde_json::to_string(want).unwrap()
        );
    }
    for part in ["verify", "expand", "compact", "apply"] {
        let n = failures.iter().filter(|f| f.1 == part).count();
        if n > 0 {
            println!("  {part}: {n} mismatches");
        }
    }
    if let Some((_, part, got, want)) = failures.iter().min_by_key(|f| f.0) {
        panic!(
            "{} mismatches; smallest failing case ({part}):\n{}\nreference: {}",
            failures.len(),
            serde_json::to_string(got).unwrap(),
            serde_json::to_string(want).unwrap()
        );
    }
    // The generator must exercise both verdicts.
    assert!(
        rejected > n / 20 && rejected < n - n / 20,
        "{rejected} of {n} rejected"
    );
}

/// Random streams (valid and mutated) with some events corrupted by material the
/// specification says to strip, drop or reject: unknown properties, event types, patch
/// operations, outcomes, content parts and roles.
fn generate_pipeline(seed: u64, n: usize) -> Vec<Value> {
    let mut r = Rng(seed ^ 0x919E);
    generate(seed ^ 0x919E, n)
        .into_iter()
        .map(|mut case| {
            let mut events = case["events"].as_array().unwrap().clone();
            for e in events.iter_mut() {
                if r.chance(12) {
                    corrupt(&mut r, e);
                }
            }
            case["pipeline"] = Value::Array(events);
            case.as_object_mut().unwrap().remove("events");
            case
        })
        .collect()
}

/// Our inbound pipeline (enforcement, expansion, verification, reduction) in the
/// oracle's shape: what was delivered, the enforcement warnings, and the conversation.
fn ours_pipeline(case: &Value) -> Value {
    use agui_sdk_core::semantics::{EnforceWarning, Inbound, InboundConfig, WarningKind};
    let messages: Vec<Message> = serde_json::from_value(case["messages"].clone()).unwrap();
    let reducer = Reducer::new(messages, Some(case["state"].clone()));
    // The oracle runs the reference's operators without its compatibility boundary.
    let mut p = Inbound::with_reducer(InboundConfig::default().compat(false), reducer);
    let (mut delivered, mut warnings) = (Vec::new(), Vec::new());
    let mut ok = true;
    for v in case["pipeline"].as_array().unwrap() {
        if p.push_value(v.clone(), &mut delivered, &mut warnings)
            .is_err()
        {
            ok = false;
            break;
        }
    }
    let warnings: Vec<String> = warnings
        .iter()
        .filter_map(|w| match &w.kind {
            WarningKind::Enforce(EnforceWarning::UnrecognisedEvent { event_type }) => {
                Some(format!("drop:{event_type}"))
            }
            WarningKind::Enforce(other) => other.path().map(str::to_owned),
            _ => None,
        })
        .collect();
    let mut answer = json!({"ok": ok, "delivered": to_values(&delivered), "warnings": warnings});
    if ok {
        let r = p.into_reducer().unwrap();
        let conv = r.to_json();
        answer["messages"] = conv["messages"].clone();
        answer["state"] = conv.get("state").cloned().unwrap_or(Value::Null);
    }
    json!({"id": case["id"], "pipeline": answer})
}

#[test]
fn inbound_pipeline_agrees_with_reference_client_on_corrupted_streams() {
    if !interop_gate::ready("inbound_pipeline_agrees_with_reference_client_on_corrupted_streams") {
        return;
    }
    let n: usize = std::env::var("AGUI_DIFF_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .map(|n: usize| n / 3)
        .unwrap_or(1000);
    let seed: u64 = std::env::var("AGUI_DIFF_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5EED_A6E1);
    let cases = generate_pipeline(seed, n);
    let theirs = run_oracle(&cases);
    assert_eq!(theirs.len(), cases.len(), "oracle answered every case");
    let mut failures: Vec<(usize, Value, Value)> = Vec::new();
    let (mut accepted, mut stripped) = (0usize, 0usize);
    for (case, want) in cases.iter().zip(&theirs) {
        let got = ours_pipeline(case);
        if want["pipeline"]["ok"] == json!(true) {
            accepted += 1;
        }
        if want["pipeline"]["warnings"]
            .as_array()
            .is_some_and(|w| !w.is_empty())
        {
            stripped += 1;
        }
        if &got != want {
            failures.push((
                case["pipeline"].as_array().unwrap().len(),
                json!({"case": case, "ours": got}),
                want.clone(),
            ));
        }
    }
    println!(
        "differential: {n} corrupted streams through the whole inbound pipeline \
         ({accepted} accepted by the reference, {stripped} with material stripped or dropped; {} mismatching)",
        failures.len()
    );
    assert!(
        accepted > n / 10 && stripped > n / 10,
        "the generator exercises both"
    );
    if let Some((_, got, want)) = failures.iter().min_by_key(|f| f.0) {
        panic!(
            "pipeline mismatch; smallest failing case:\n{}\nreference: {}",
            serde_json::to_string(got).unwrap(),
            serde_json::to_string(want).unwrap()
        );
    }
}
