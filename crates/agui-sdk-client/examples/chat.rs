//! Talk to an AG-UI agent: `cargo run -p agui-sdk-client --example chat -- URL "your message"`
//! (for instance against `agui serve`: `http://127.0.0.1:8000/agentic_chat`).

use agui_sdk_client::agui_sdk_core::semantics::RunOutcome;
use agui_sdk_client::agui_sdk_core::Message;
use agui_sdk_client::{serde_json, Conversation, HttpAgent, RunParams};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let url = args
        .next()
        .unwrap_or_else(|| "http://127.0.0.1:8000/agentic_chat".into());
    let text = args.next().unwrap_or_else(|| "Hello!".into());

    let http = HttpAgent::builder(url).build()?;
    let mut chat = Conversation::new(http);
    chat.add_message(Message::user("u1", text.as_str()));
    let result = chat.run_agent(RunParams::new()).await?;
    for m in chat.new_messages(&result) {
        println!("{}", serde_json::to_string(m)?);
    }
    if let RunOutcome::Interrupt { interrupts } = &result.outcome {
        println!("the agent is waiting for: {interrupts:?}");
    }
    Ok(())
}
