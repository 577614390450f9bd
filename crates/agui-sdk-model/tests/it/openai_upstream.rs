//! What the model agent does with an endpoint that misbehaves on purpose: a redirect to
//! another host (the key must never follow), an error answer whose body trickles a byte
//! at a time, and a stream of keep-alive comments with no content. Each against a real
//! listener on loopback, the run served by `agui-sdk-server` and read by the client.

use crate::common::run_error;
use crate::fake;

use std::time::{Duration, Instant};

use agui_sdk_core::Event;
use agui_sdk_model::OpenAiAgent;
use agui_sdk_testkit::redirect;

const KEY: &str = "sk-test-7f3a9c";

/// Serves `agent`, runs one turn, returns its events.
async fn events_of(agent: agui_sdk_server::FnAgent) -> Vec<Event> {
    crate::common::events_of(agent, &crate::common::go()).await
}

/// The endpoint answers `307` to a foreign host (`127.0.0.2`), which would answer `307`
/// to itself 10 times (the chain on which reqwest's default policy sends the key again
/// from the second hop on). No redirect is followed: the foreign host gets no request
/// at all, the endpoint exactly one (a redirect is not retried), and the run ends with
/// `RUN_ERROR` naming the URL called and where it pointed.
#[tokio::test]
async fn a_redirect_is_not_followed_and_the_key_stays_home() {
    let (home, foreign) = redirect::cross_origin_chain(10);
    let agent = OpenAiAgent::builder(home.url("/v1"), "m")
        .api_key(KEY)
        .retries(3, Duration::from_millis(1))
        .build()
        .unwrap();
    let events = events_of(agent).await;
    let (message, code) = run_error(&events);
    assert_eq!(code, "upstream_error");
    assert!(
        message.contains(&format!(
            "{} redirected (HTTP 307) to {}",
            home.url("/v1/chat/completions"),
            foreign.url("/hop/0")
        )),
        "{message}"
    );
    assert!(!message.contains(KEY), "{message}");
    let seen = foreign.seen();
    assert_eq!(seen.len(), 0, "the foreign host got {seen:?}");
    assert_eq!(foreign.carrying("authorization", KEY), 0);
    assert_eq!(home.seen().len(), 1, "one request, not retried");
    assert_eq!(
        home.carrying("authorization", KEY),
        1,
        "the configured endpoint gets the key"
    );
}

/// A `500` whose body drips a byte every 100 ms, forever: each attempt gives the body
/// up at the error-body deadline, so two attempts end the run in about twice it, not
/// at the read timeout (10 s here) or the answer's deadline.
#[tokio::test]
async fn an_error_body_that_trickles_is_given_up_at_its_deadline() {
    let fake = fake::start().await;
    let bound = Duration::from_millis(300);
    let agent = OpenAiAgent::builder(fake.url(), "drip-500")
        .retries(1, Duration::from_millis(1))
        .read_timeout(Duration::from_secs(10))
        .error_body_timeout(bound)
        .build()
        .unwrap();
    let started = Instant::now();
    let events = events_of(agent).await;
    let elapsed = started.elapsed();
    let (message, code) = run_error(&events);
    assert_eq!(code, "upstream_error");
    assert!(message.contains("answered 500"), "{message}");
    assert_eq!(fake.requests_for("drip-500").len(), 2, "one retry");
    assert!(
        elapsed >= bound * 2,
        "each attempt read its body for its deadline: {elapsed:?}"
    );
    assert!(
        elapsed < bound * 2 + Duration::from_millis(1500),
        "two attempts of {bound:?} each took {elapsed:?}"
    );
}

/// A stream of only `: keep-alive` comments, one every 50 ms: comments are no content,
/// so the run ends with `upstream_timeout` at the read timeout (300 ms), not at the
/// answer's deadline (5 s here).
#[tokio::test]
async fn keep_alive_comments_do_not_hold_a_run_open() {
    let fake = fake::start().await;
    let bound = Duration::from_millis(300);
    let agent = OpenAiAgent::builder(fake.url(), "comments")
        .read_timeout(bound)
        .answer_deadline(Duration::from_secs(5))
        .build()
        .unwrap();
    let started = Instant::now();
    let events = events_of(agent).await;
    let elapsed = started.elapsed();
    let (message, code) = run_error(&events);
    assert_eq!(code, "upstream_timeout");
    assert!(message.contains("sent nothing for 300 ms"), "{message}");
    assert!(elapsed >= bound, "{elapsed:?}");
    assert!(
        elapsed < bound + Duration::from_millis(1500),
        "the read timeout is {bound:?}; the run took {elapsed:?}"
    );
}
