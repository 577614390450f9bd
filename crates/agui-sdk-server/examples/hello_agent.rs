//! The smallest useful server: one agent that streams a greeting.
//!
//! ```text
//! cargo run -p agui-sdk-server --example hello_agent
//! curl -N -X POST http://127.0.0.1:8000/hello -H 'content-type: application/json' \
//!   -H 'accept: text/event-stream' \
//!   -d '{"threadId":"t1","runId":"r1","messages":[{"id":"u1","role":"user","content":"Ada"}]}'
//! ```

use std::time::Duration;

use agui_sdk_server::agui_sdk_core::Message;
use agui_sdk_server::{agent_fn, AgentRouter};

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let hello = agent_fn(|input, _ctx, tx| async move {
        let name = match input.messages.last() {
            Some(Message::User(u)) => u.content.to_text(),
            _ => "world".to_owned(),
        };
        let id = format!("{}-greeting", input.run_id);
        tx.text_message(
            &id,
            ["Hello, ", name.as_str(), "!"],
            Duration::from_millis(100),
        )
        .await?;
        Ok(())
    });

    let listener = tokio::net::TcpListener::bind("127.0.0.1:8000").await?;
    println!("POST http://127.0.0.1:8000/hello");
    // Serves until SIGINT/SIGTERM, then lets in-flight runs finish.
    AgentRouter::new()
        .agent("hello", hello)
        .serve(listener)
        .await
}
