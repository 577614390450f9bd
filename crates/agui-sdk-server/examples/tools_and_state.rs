//! Two agents on one server: one runs a backend tool and reports its result, the
//! other keeps a counter in the shared state.
//!
//! ```text
//! cargo run -p agui-sdk-server --example tools_and_state
//! agui run http://127.0.0.1:8000/weather --message "Paris?"
//! agui run http://127.0.0.1:8000/counter --state '{"count": 41}'
//! ```
//!
//! In a crate of your own this needs, besides `agui-sdk-server` and `tokio`,
//! `tracing-subscriber = "0.3"`.

use agui_sdk_server::prelude::*;

#[tokio::main]
async fn main() -> std::io::Result<()> {
    tracing_subscriber::fmt::init(); // agent errors are logged here

    let weather = agent_fn(|input, _ctx, tx| async move {
        let city = input.last_user_text().unwrap_or_else(|| "Paris".into());
        let call = tx
            .call_tool("get_weather", &json!({ "city": city }))
            .await?;
        tx.tool_result(
            &call,
            &json!({ "city": city, "sky": "clear", "celsius": 21 }),
        )
        .await?;
        tx.text(format!("It is 21 °C and clear in {city}.")).await?;
        Ok(())
    });

    let counter = agent_fn(|input, _ctx, tx| async move {
        let mut state = StateTracker::from_input(&input);
        let next = state.state()["count"].as_i64().unwrap_or(0) + 1;
        tx.update_state(&mut state, |s| s["count"] = json!(next))
            .await?;
        tx.text(format!("The count is {next}.")).await?;
        Ok(())
    });

    let listener = tokio::net::TcpListener::bind("127.0.0.1:8000").await?;
    println!("POST http://127.0.0.1:8000/weather and /counter");
    AgentRouter::new()
        .agent("weather", weather)
        .agent("counter", counter)
        .serve(listener)
        .await
}
