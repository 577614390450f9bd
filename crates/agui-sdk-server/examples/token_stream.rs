//! An agent over a stream of tokens it already has (here a channel fed by a task, as
//! a model client would): each token is sent as it arrives.
//!
//! ```text
//! cargo run -p agui-sdk-server --example token_stream
//! agui run http://127.0.0.1:8000/tokens --message hi
//! ```

use std::time::Duration;

use agui_sdk_server::prelude::*;

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let tokens = agent_fn(|_input, _ctx, tx| async move {
        let (send, recv) = tokio::sync::mpsc::channel::<String>(16);
        tokio::spawn(async move {
            for token in ["Streaming", " one", " token", " at", " a", " time."] {
                tokio::time::sleep(Duration::from_millis(50)).await;
                if send.send(token.to_owned()).await.is_err() {
                    break; // the client went away
                }
            }
        });
        tx.text_channel(recv).await?;
        Ok(())
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:8000").await?;
    AgentRouter::new()
        .agent("tokens", tokens)
        .serve(listener)
        .await
}
