//! `agui serve` takes a request's owner from its `Authorization` header: two bearer
//! tokens see disjoint CopilotKit thread lists, a request without the header is the
//! anonymous owner's, and another token cannot read, connect to or stop a thread.

use crate::common;

use common::spawn_serve;
use serde_json::{json, Value};

fn input(thread: &str, run: &str) -> Value {
    json!({
        "threadId": thread, "runId": run, "state": {}, "tools": [], "context": [],
        "forwardedProps": {},
        "messages": [{"id": format!("{run}-u"), "role": "user", "content": "hello"}],
    })
}

/// A CopilotKit run on `thread`, as the bearer of `token` (none: anonymous), read to its
/// end.
async fn run_on(base: &str, token: Option<&str>, thread: &str, run: &str) {
    let mut req = reqwest::Client::new()
        .post(format!("{base}/copilotkit/agent/agentic_chat/run"))
        .json(&input(thread, run));
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let text = req.send().await.unwrap().text().await.unwrap();
    assert!(text.contains("RUN_FINISHED"), "{text}");
}

async fn threads(base: &str, token: Option<&str>) -> Vec<String> {
    let mut req =
        reqwest::Client::new().get(format!("{base}/copilotkit/threads?agentId=agentic_chat"));
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let list: Value = req.send().await.unwrap().json().await.unwrap();
    list["threads"]
        .as_array()
        .expect("a thread list")
        .iter()
        .map(|t| t["id"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn two_bearer_tokens_see_disjoint_threads() {
    let served = spawn_serve(&[], &["--delay-ms", "0"], &[]);
    let base = served.base.clone();
    run_on(&base, Some("token-of-ann"), "ann-thread", "r1").await;
    run_on(&base, Some("token-of-bob"), "bob-thread", "r2").await;
    run_on(&base, Some("token-of-bob"), "shared-id", "r3").await;

    assert_eq!(threads(&base, Some("token-of-ann")).await, ["ann-thread"]);
    let mut bob = threads(&base, Some("token-of-bob")).await;
    bob.sort();
    assert_eq!(bob, ["bob-thread", "shared-id"]);
    assert!(
        threads(&base, None).await.is_empty(),
        "the anonymous owner has none"
    );

    // Ann reads Bob's thread id as a thread that does not exist.
    let messages: Value = reqwest::Client::new()
        .get(format!("{base}/copilotkit/threads/bob-thread/messages"))
        .bearer_auth("token-of-ann")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(messages["messages"], json!([]));
    let replay = reqwest::Client::new()
        .post(format!("{base}/copilotkit/agent/agentic_chat/connect"))
        .bearer_auth("token-of-ann")
        .json(&input("bob-thread", "c1"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        !replay.contains("data:"),
        "ann's connect replays nothing: {replay}"
    );
    // The token is never logged in clear.
    let log = served.log.lock().unwrap().clone();
    assert!(!log.contains("token-of-ann") && !log.contains("token-of-bob"));
}

/// `--max-threads`: a new thread beyond it forgets the one idle the longest.
#[tokio::test]
async fn max_threads_bounds_the_threads_kept() {
    let served = spawn_serve(&[], &["--delay-ms", "0", "--max-threads", "2"], &[]);
    let base = served.base.clone();
    for (thread, run) in [("first", "r1"), ("second", "r2"), ("third", "r3")] {
        run_on(&base, None, thread, run).await;
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    assert_eq!(
        threads(&base, None).await,
        ["third", "second"],
        "the first thread, idle the longest, was forgotten"
    );
}
