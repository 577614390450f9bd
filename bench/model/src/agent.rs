//! The AG-UI server: the model agent over the fake upstream, once per provider API.

use agui_sdk_model::{Effort, ModelAgent, Thinking};
use agui_sdk_server::AgentRouter;

pub fn main(args: &[String]) {
    let mut upstream = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--upstream" => upstream = it.next().cloned(),
            other => panic!("unknown argument {other}"),
        }
    }
    let url = upstream.expect("--upstream URL (the provider's base, e.g. http://127.0.0.1:P/v1)");
    // The default multi-threaded runtime, one worker per core, as a deployment runs it.
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async move {
        let chat = ModelAgent::chat_completions(url.clone(), "bench-model")
            .api_key("bench")
            .build()
            .expect("chat agent");
        let responses = ModelAgent::responses(url.clone(), "bench-model")
            .api_key("bench")
            .reasoning_effort(Effort::Medium)
            .build()
            .expect("responses agent");
        let anthropic = ModelAgent::anthropic(url, "bench-model")
            .api_key("bench")
            .thinking(Thinking::Budget(1024))
            .build()
            .expect("anthropic agent");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        crate::announce(listener.local_addr().expect("addr").port());
        AgentRouter::new()
            .agent("chat", chat)
            .agent("responses", responses)
            .agent("anthropic", anthropic)
            .verify(false)
            .serve(listener)
            .await
            .expect("serve");
    });
}
