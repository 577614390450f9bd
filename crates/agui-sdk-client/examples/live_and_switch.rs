//! Print an agent's reply as it streams, then let another agent continue the same
//! thread (`agui serve` gives both):
//! `cargo run -p agui-sdk-client --example live_and_switch -- http://127.0.0.1:8000`

use std::io::Write;

use agui_sdk_client::prelude::*;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), ClientError> {
    let base = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "http://127.0.0.1:8000".into());
    let mut chat =
        Conversation::builder(HttpAgent::builder(format!("{base}/agentic_chat")).build()?)
            .on_event(|e| {
                if let Event::TextMessageContent(c) = e {
                    print!("{}", c.delta);
                    let _ = std::io::stdout().flush();
                }
            })
            .on_warning(|w| eprintln!("warning: {w}"))
            .build();
    chat.add_user_message("Hello!");
    chat.run_agent(RunParams::new()).await?;
    println!();

    // Same thread, same messages and state, another agent.
    chat.set_agent(HttpAgent::builder(format!("{base}/shared_state")).build()?);
    chat.add_user_message("Now the recipe, please.");
    chat.run_agent(RunParams::new()).await?;
    println!(
        "\n{} messages; state: {}",
        chat.messages().len(),
        chat.state()
    );
    Ok(())
}
