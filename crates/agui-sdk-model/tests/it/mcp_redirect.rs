//! An MCP server over Streamable HTTP whose URL redirects to another origin: the
//! configured headers (here a bearer token) must never reach the foreign host. rmcp's
//! client follows same-origin `307`/`308` only and returns any other redirect as an
//! error; this holds it to that, against real listeners on two loopback addresses.

use std::time::Duration;

use agui_sdk_core::Event;
use agui_sdk_model::{McpServer, ModelAgent};
use agui_sdk_testkit::redirect;

use crate::fake;

const TOKEN: &str = "Bearer sk-mcp-7c1e55";

/// The MCP URL answers `307` to `127.0.0.2`, which would redirect to itself 10 times
/// and then answer. The foreign host gets no request at all, so no header; the MCP URL
/// gets the token (it is the configured origin); the run still answers, without the
/// server's tools.
#[tokio::test]
async fn an_mcp_servers_headers_never_follow_a_redirect_to_another_origin() {
    let (home, foreign) = redirect::cross_origin_chain(10);
    let model = fake::start().await;
    let agent = ModelAgent::chat_completions(model.url(), "text")
        .retries(0, Duration::from_millis(1))
        .mcp_server(McpServer::http(home.url("/mcp")).header("Authorization", TOKEN))
        .build()
        .unwrap();
    let events = crate::common::events_of(agent, &crate::common::go()).await;
    assert!(
        matches!(
            events.last(),
            Some(Event::RunFinished(_) | Event::RunError(_))
        ),
        "the run ends: {events:?}"
    );
    let seen = foreign.seen();
    assert!(seen.is_empty(), "the foreign host got {seen:?}");
    assert_eq!(foreign.carrying("authorization", "sk-mcp-7c1e55"), 0);
    assert!(
        home.carrying("authorization", "sk-mcp-7c1e55") >= 1,
        "the configured MCP URL gets its header: {:?}",
        home.seen()
    );
}
