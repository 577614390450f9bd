//! An approval's effect across replicas: two `agui serve --store redis://…` processes
//! share one Redis, where the runtime keeps the threads' interrupts. The `interrupt`
//! demo pauses on replica A; the approval resumes it on A, which records the email as
//! being sent; A is killed with SIGKILL mid-run; the same answer sent to replica B is
//! refused while A's claim lives (`interrupt_answered`), then proceeds once it lapses
//! (`--interrupt-claim-ttl 2s`) and does not send the email again.
//!
//! Uses the Redis at `AGUI_TEST_REDIS_URL` (default `redis://127.0.0.1:6379`). Without
//! one the tests print `skipped …`, except under `AGUI_REQUIRE_REDIS=1` (set by
//! `scripts/test-all.sh`), where that is a failure. `agui serve` keeps its keys under
//! the prefix `agui`: each test's threads have ids of their own.

use crate::common;

use std::time::{Duration, Instant};

use common::{spawn_serve, Served};

use agui_sdk_testkit::redis as redis_gate;
use futures_util::StreamExt;
use serde_json::{json, Value};

fn replica(store: &str, id: &str) -> Served {
    spawn_serve(
        &[],
        &[
            "--delay-ms",
            "300",
            "--store",
            store,
            "--replica-id",
            id,
            "--lease-ms",
            "1000",
            "--interrupt-claim-ttl",
            "2s",
        ],
        &[],
    )
}

/// The events of a plain run's response, as they come.
struct Events {
    body: futures_util::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    buf: Vec<u8>,
}

impl Events {
    async fn next(&mut self) -> Option<Value> {
        loop {
            if let Some(pos) = self.buf.windows(2).position(|w| w == b"\n\n") {
                let block = String::from_utf8(self.buf[..pos].to_vec()).unwrap();
                self.buf.drain(..pos + 2);
                let data = block.lines().find_map(|l| l.strip_prefix("data: "));
                if let Some(d) = data {
                    return Some(serde_json::from_str(d).unwrap());
                }
                continue;
            }
            match tokio::time::timeout(Duration::from_secs(20), self.body.next())
                .await
                .expect("bytes in time")
            {
                Some(Ok(b)) => self.buf.extend_from_slice(&b),
                _ => return None,
            }
        }
    }

    async fn rest(&mut self) -> Vec<Value> {
        let mut out = Vec::new();
        while let Some(e) = self.next().await {
            out.push(e);
        }
        out
    }
}

fn unique(tag: &str) -> String {
    let n = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{tag}-{}-{n:x}", std::process::id())
}

/// Starts a run of the `interrupt` demo on `thread` at `base` (`resume`: its answers).
async fn run(base: &str, thread: &str, resume: Option<Value>) -> Events {
    let mut body = json!({ "threadId": thread, "runId": unique("run"), "messages": [] });
    if let Some(r) = resume {
        body["resume"] = r;
    }
    let res = reqwest::Client::new()
        .post(format!("{base}/interrupt"))
        .header("Accept", "text/event-stream")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    Events {
        body: res.bytes_stream().boxed(),
        buf: Vec::new(),
    }
}

/// The text of the messages among `events`.
fn text(events: &[Value]) -> String {
    events
        .iter()
        .filter(|e| e["type"] == "TEXT_MESSAGE_CONTENT")
        .filter_map(|e| e["delta"].as_str())
        .collect()
}

/// Pauses a new thread on replica `base`: the thread and the approval's interrupt id.
async fn pause(base: &str, tag: &str) -> (String, String) {
    let thread = unique(tag);
    let events = run(base, &thread, None).await.rest().await;
    let last = events.last().expect("events");
    assert_eq!(last["type"], "RUN_FINISHED", "{last}");
    assert_eq!(last["outcome"]["type"], "interrupt", "{last}");
    let id = last["outcome"]["interrupts"][0]["id"]
        .as_str()
        .expect("an interrupt id")
        .to_owned();
    (thread, id)
}

fn approval(id: &str) -> Value {
    json!([{ "interruptId": id, "status": "resolved", "payload": { "approved": true } }])
}

/// Resumes `thread` on `a`, reads until `kill_at` says so, then kills `a` (SIGKILL):
/// what `a` sent before it died.
async fn resume_and_kill(
    a: &mut Served,
    thread: &str,
    id: &str,
    kill_at: impl Fn(&Value) -> bool,
) -> Vec<Value> {
    let mut on_a = run(&a.base, thread, Some(approval(id))).await;
    let mut seen = Vec::new();
    loop {
        let e = on_a.next().await.expect("A goes on until it is killed");
        assert_ne!(
            e["type"], "RUN_FINISHED",
            "A finished before the kill: {seen:?}"
        );
        assert_ne!(e["type"], "RUN_ERROR", "{e}");
        let stop = kill_at(&e);
        seen.push(e);
        if stop {
            break;
        }
    }
    a.child.kill().unwrap(); // SIGKILL
    a.child.wait().unwrap();
    seen
}

/// Sends the answer to `b` until a run proceeds (A's claim lapsed): every refusal
/// before it must be `interrupt_answered` in progress. The events of the run that
/// proceeded, and how many were refused.
async fn answer_until_it_proceeds(b: &str, thread: &str, id: &str) -> (Vec<Value>, usize) {
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut refused = 0;
    loop {
        let events = run(b, thread, Some(approval(id))).await.rest().await;
        let last = events.last().expect("events").clone();
        if last["type"] != "RUN_ERROR" {
            return (events, refused);
        }
        assert_eq!(last["code"], "interrupt_answered", "{last}");
        let message = last["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("being answered by another run"),
            "{message}"
        );
        refused += 1;
        assert!(
            Instant::now() < deadline,
            "the claim of the killed replica never lapsed"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_email_is_not_sent_twice_when_its_replica_dies_after_sending() {
    let Some(url) = redis_gate::url("an_approved_email_is_not_sent_twice_when_its_replica_dies")
    else {
        return;
    };
    let mut a = replica(&url, "A");
    let b = replica(&url, "B");
    let (thread, id) = pause(&a.base, "sent").await;

    // Killed once the email is recorded sent: the reply after "Sending the email…" has
    // begun (it is written only after the effect is recorded).
    let seen = resume_and_kill(&mut a, &thread, &id, |e| {
        e["type"] == "TEXT_MESSAGE_START"
            && e["messageId"]
                .as_str()
                .is_some_and(|m| m.ends_with("-done"))
    })
    .await;
    assert!(text(&seen).contains("Sending the email"), "{seen:?}");

    let (events, refused) = answer_until_it_proceeds(&b.base, &thread, &id).await;
    assert!(
        refused >= 1,
        "the answer sent at once, while A's claim lives, is refused"
    );
    let last = events.last().unwrap();
    assert_eq!(last["type"], "RUN_FINISHED", "{last}");
    let said = text(&events);
    assert!(said.contains("already sent"), "{said}");
    assert!(
        !said.contains("Sending"),
        "B does not send it again: {said}"
    );

    // The answer is consumed: sent again, it is refused as answered.
    let events = run(&b.base, &thread, Some(approval(&id)))
        .await
        .rest()
        .await;
    let last = events.last().unwrap();
    assert_eq!(last["code"], "interrupt_answered", "{last}");
    assert!(
        last["message"]
            .as_str()
            .is_some_and(|m| m.contains("already answered")),
        "{last}"
    );
    drop(b);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_email_is_not_sent_again_when_its_replica_dies_while_sending() {
    let Some(url) = redis_gate::url("an_approved_email_is_not_sent_again_when_its_replica_dies")
    else {
        return;
    };
    let mut a = replica(&url, "A");
    let b = replica(&url, "B");
    let (thread, id) = pause(&a.base, "sending").await;

    // Killed while sending: "Sending the email…" has arrived, and the agent waits its
    // delay (300 ms) before it records the email sent.
    let seen = resume_and_kill(&mut a, &thread, &id, |e| {
        e["type"] == "TEXT_MESSAGE_CONTENT"
            && e["delta"]
                .as_str()
                .is_some_and(|d| d.contains("Sending the email"))
    })
    .await;
    assert!(!text(&seen).contains("Approved"), "{seen:?}");

    let (events, refused) = answer_until_it_proceeds(&b.base, &thread, &id).await;
    assert!(refused >= 1, "refused while A's claim lives");
    let last = events.last().unwrap();
    assert_eq!(last["type"], "RUN_FINISHED", "{last}");
    let said = text(&events);
    assert!(
        said.contains("was sending the email when it stopped") && said.contains("not sent again"),
        "{said}"
    );
    assert!(!said.contains("Sending"), "B does not send it: {said}");
    drop(b);
}
