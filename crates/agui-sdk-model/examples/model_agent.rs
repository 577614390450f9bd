//! A model behind AG-UI with one server-side tool:
//! `OPENAI_API_KEY=… cargo run -p agui-sdk-model --example model_agent`, then POST a run to
//! `http://127.0.0.1:8000/chat` (for instance with `agui run http://127.0.0.1:8000/chat --message "…"`).
use agui_sdk_model::{OpenAiAgent, ToolContext, ToolResult};
use agui_sdk_server::AgentRouter;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Add {
    /// The first number.
    a: f64,
    /// The second number.
    b: f64,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::var("OPENAI_BASE_URL").unwrap_or("https://api.openai.com/v1".into());
    let mut agent = OpenAiAgent::builder(url, "gpt-4o-mini")
        .system_prompt("You are a helpful assistant. Use the add tool for sums.")
        .tool(
            "add",
            "Adds two numbers.",
            |x: Add, _: ToolContext| async move { Ok(ToolResult::text((x.a + x.b).to_string())) },
        );
    if let Ok(key) = std::env::var("OPENAI_API_KEY") {
        agent = agent.api_key(key);
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:8000").await?;
    AgentRouter::new()
        .agent("chat", agent.build()?)
        .serve(listener)
        .await?;
    Ok(())
}
