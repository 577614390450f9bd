//! A model behind AG-UI with the tools of an MCP server (here the reference server
//! `@modelcontextprotocol/server-everything`, started over stdio with `npx`):
//! `OPENAI_API_KEY=… cargo run -p agui-sdk-model --features mcp --example mcp_tools`, then
//! POST a run to `http://127.0.0.1:8000/chat` (for instance with
//! `agui run http://127.0.0.1:8000/chat --message "Add 2 and 3 with get-sum"`).
use agui_sdk_model::{McpServer, ModelAgent};
use agui_sdk_server::AgentRouter;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::var("OPENAI_BASE_URL").unwrap_or("https://api.openai.com/v1".into());
    // The server gets only the variables given here: npx needs PATH.
    let everything = McpServer::stdio(
        "npx",
        [
            "-y",
            "@modelcontextprotocol/server-everything@2026.8.31",
            "stdio",
        ],
    )
    .env("PATH", std::env::var("PATH")?)
    .env("HOME", std::env::var("HOME")?);
    let mut agent = ModelAgent::chat_completions(url, "gpt-4o-mini")
        .system_prompt("You are a helpful assistant. Use your tools.")
        .mcp_server(everything);
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
