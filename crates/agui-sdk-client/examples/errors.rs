//! What can go wrong in a run, and how to tell the cases apart:
//! `cargo run -p agui-sdk-client --example errors -- URL`

use agui_sdk_client::prelude::*;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let url = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "http://127.0.0.1:8000/agentic_chat".into());
    let http = match HttpAgent::builder(url).build() {
        Ok(h) => h,
        Err(e) => return eprintln!("bad configuration: {e}"),
    };
    let mut chat = Conversation::new(http);
    chat.add_user_message("Hello!");
    match chat.run_agent(RunParams::new()).await {
        Ok(r) => println!("done: {} new messages", r.new_message_ids.len()),
        Err(e) if e.is_connect() => eprintln!("the agent is not reachable: {e}"),
        Err(e) if e.is_timeout() => eprintln!("the agent is too slow: {e}"),
        Err(e) if e.status().is_some() => eprintln!(
            "the agent refused the run (HTTP {:?}, code {:?}): {e}",
            e.status(),
            e.server_error_code()
        ),
        Err(ClientError::RunFailed { message, code }) => {
            eprintln!("the run failed: {message} (code {code:?})")
        }
        Err(ClientError::Inbound { source, .. }) => {
            eprintln!("the agent broke the protocol: {source}")
        }
        Err(e) => eprintln!("{e}"),
    }
}
