//! The AG-UI server: `/chat` is the `OpenAiAgent` over the fake endpoint, `/alone` emits
//! the same text events (`TEXT_MESSAGE_START`, one `TEXT_MESSAGE_CONTENT` per token with
//! the same `i:t` text, `TEXT_MESSAGE_END`, same message id) with no upstream: the
//! server's own cost, without the adapter. With `handoff=1` in the prompt, `/alone` takes
//! its tokens from another task through a channel of one slot, one at a time: the
//! hand-off the HTTP client's body makes per chunk, without HTTP or JSON.

use agui_sdk_core::Event;
use agui_sdk_model::OpenAiAgent;
use agui_sdk_server::{agent_fn, AgentRouter};

use crate::{now_ns, Ask};

pub fn main(args: &[String]) {
    let mut upstream = None;
    let mut verify = false;
    let mut workers: Option<usize> = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--upstream" => upstream = it.next().cloned(),
            "--verify" => verify = true,
            "--workers" => workers = it.next().and_then(|w| w.parse().ok()),
            other => panic!("unknown argument {other}"),
        }
    }
    let upstream = upstream.expect("--upstream URL (what /chat/completions is appended to)");
    // By default the multi-threaded runtime with one worker per core, as a deployment
    // would run it; `--workers 0` is the current-thread runtime.
    let rt = match workers {
        Some(0) => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build(),
        Some(n) => tokio::runtime::Builder::new_multi_thread()
            .worker_threads(n)
            .enable_all()
            .build(),
        None => tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build(),
    }
    .expect("runtime");
    rt.block_on(async move {
        let chat = OpenAiAgent::builder(upstream, "bench-model")
            .build()
            .expect("agent");
        let alone = agent_fn(|input, _ctx, tx| async move {
            let prompt = serde_json::to_value(&input.messages)
                .ok()
                .and_then(|m| crate::last_text(&m))
                .unwrap_or_default();
            let ask = Ask::parse(&prompt).unwrap_or(Ask::new(0, 0.0));
            let id = format!("{}-m0", input.run_id);
            tx.emit(Event::text_message_start(id.clone())).await?;
            if ask.handoff {
                // Produced by another task, handed over one at a time.
                let (send, mut recv) = tokio::sync::mpsc::channel::<String>(1);
                tokio::spawn(async move {
                    let start = tokio::time::Instant::now();
                    for i in 0..ask.tokens {
                        if let Some(due) = ask.due(i) {
                            tokio::time::sleep_until(start + due).await;
                        }
                        if send.send(format!("{i}:{}", now_ns())).await.is_err() {
                            return;
                        }
                    }
                });
                while let Some(text) = recv.recv().await {
                    tx.emit(Event::text_message_content(id.clone(), text))
                        .await?;
                }
            } else {
                let start = tokio::time::Instant::now();
                for i in 0..ask.tokens {
                    if let Some(due) = ask.due(i) {
                        tokio::time::sleep_until(start + due).await;
                    }
                    let text = format!("{i}:{}", now_ns());
                    tx.emit(Event::text_message_content(id.clone(), text))
                        .await?;
                }
            }
            tx.emit(Event::text_message_end(id)).await?;
            Ok(())
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        crate::announce(listener.local_addr().expect("addr").port());
        AgentRouter::new()
            .agent("chat", chat)
            .agent("alone", alone)
            .verify(verify)
            .serve(listener)
            .await
            .expect("serve");
    });
}
