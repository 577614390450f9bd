//! Redirects and credentials: the client follows redirects within its URL's origin
//! only, with its headers; a redirect to another origin is an error before anything is
//! sent there. Against listeners on loopback that record every request's headers, one
//! on `127.0.0.2` standing in for a foreign host.
//!
//! What this guards against, in `reqwest` 0.12.28's default policy: on each hop
//! `tower-http`'s `FollowRedirect` rebuilds the request from the first request's headers
//! (`follow_redirect/mod.rs`, `*req.headers_mut() = this.headers.clone()`), and
//! `reqwest` removes `Authorization` only when the hop's host differs from the previous
//! hop's (`redirect.rs`, `remove_sensitive_headers` comparing with `previous.last()`).
//! So a chain `home → foreign → foreign …` drops the token on the first foreign request
//! and sends it again on every later one; headers of one's own are never removed.

use agui_sdk_client::endpoint::{self, CrossOriginRedirect};
use agui_sdk_client::{ClientError, HttpAgent};
use agui_sdk_core::{Event, RunAgentInput};
use agui_sdk_testkit::redirect::{self, Listener, Reply};
use futures_util::StreamExt;

const TOKEN: &str = "tok-5d1e";
const KEY: &str = "key-88a0";

fn agent(url: String) -> agui_sdk_client::HttpAgentBuilder {
    HttpAgent::builder(url)
        .bearer_token(TOKEN)
        .header("X-Api-Key", KEY)
}

async fn run(agent: HttpAgent) -> (Vec<Event>, Option<ClientError>) {
    let input = RunAgentInput::new("t", "r", vec![]);
    let mut events = Vec::new();
    let mut stream = agent.run(&input);
    while let Some(item) = stream.next().await {
        match item {
            Ok(e) => events.push(e),
            Err(e) => return (events, Some(e)),
        }
    }
    (events, None)
}

/// How many of `l`'s requests carried the token, and the key.
fn credentials(l: &Listener) -> (usize, usize) {
    (
        l.carrying("authorization", TOKEN),
        l.carrying("x-api-key", KEY),
    )
}

/// The agent's URL answers `307` to a foreign host, which answers `307` to itself 10
/// times: the foreign host gets no request at all, and the error names both origins.
#[tokio::test]
async fn a_cross_origin_chain_is_not_followed() {
    let (home, foreign) = redirect::cross_origin_chain(10);
    let (events, err) = run(agent(home.url("/agent")).build().unwrap()).await;
    assert!(events.is_empty());
    let err = err.expect("the run fails");
    let text = err.to_string();
    match &err {
        ClientError::CrossOriginRedirect(CrossOriginRedirect {
            origin,
            from,
            to,
            status,
            followed,
        }) => {
            assert_eq!(origin, &format!("http://{}", home.addr));
            assert_eq!(from, &home.url("/agent"));
            assert_eq!(to, &foreign.url("/hop/0"));
            assert_eq!(*status, Some(307));
            assert!(!followed);
        }
        other => panic!("expected CrossOriginRedirect, got {other:?}"),
    }
    assert!(
        text.contains(&home.url("/agent")) && text.contains(&foreign.url("/hop/0")),
        "{text}"
    );
    assert!(!text.contains(TOKEN) && !text.contains(KEY), "{text}");
    assert_eq!(foreign.seen().len(), 0, "{:?}", foreign.seen());
    assert_eq!(credentials(&foreign), (0, 0));
    assert_eq!(credentials(&home), (1, 1), "the agent's URL got them once");
}

/// Redirects within the origin are followed with the method, the body and every
/// header; a later hop to another port of the same host is another origin and is not.
#[tokio::test]
async fn same_origin_redirects_keep_their_headers_and_another_port_is_foreign() {
    let home = Listener::start("127.0.0.1", |n, seen| match n {
        0 => Reply::temporary("/agent/1"),
        1 => Reply::Redirect {
            status: 308,
            location: "/agent/2".into(),
        },
        _ => Reply::run(seen),
    });
    let (events, err) = run(agent(home.url("/agent")).build().unwrap()).await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(events.len(), 5, "the whole run");
    let seen = home.seen();
    assert_eq!(
        seen.iter().map(|s| s.path.as_str()).collect::<Vec<_>>(),
        ["/agent", "/agent/1", "/agent/2"]
    );
    assert!(seen
        .iter()
        .all(|s| s.method == "POST" && !s.body.is_empty()));
    assert_eq!(credentials(&home), (3, 3), "every hop carried them");

    // Another port of 127.0.0.1, after one hop within the origin.
    let other = Listener::start("127.0.0.1", |_, seen| Reply::run(seen));
    let there = other.url("/elsewhere");
    let home = Listener::start("127.0.0.1", move |n, _| match n {
        0 => Reply::temporary("/agent/1"),
        _ => Reply::temporary(there.clone()),
    });
    let (_, err) = run(agent(home.url("/agent")).build().unwrap()).await;
    match err {
        Some(ClientError::CrossOriginRedirect(r)) => {
            assert_eq!(r.from, home.url("/agent/1"));
            assert_eq!(r.to, other.url("/elsewhere"));
        }
        other => panic!("expected CrossOriginRedirect, got {other:?}"),
    }
    assert_eq!(other.seen().len(), 0);
    assert_eq!(credentials(&home), (2, 2));
}

/// The number of redirects is bounded (`max_redirects`); zero follows none, and the
/// `3xx` answer is the run's error.
#[tokio::test]
async fn redirects_are_bounded() {
    let home = Listener::start("127.0.0.1", |n, _| Reply::temporary(format!("/r/{n}")));
    let (_, err) = run(agent(home.url("/agent")).max_redirects(3).build().unwrap()).await;
    let text = err.expect("the run fails").to_string();
    assert!(text.contains("more than 3 redirects"), "{text}");
    assert_eq!(home.seen().len(), 4, "the request and 3 redirects");

    let home = Listener::start("127.0.0.1", |_, _| Reply::temporary("/again"));
    let (_, err) = run(agent(home.url("/agent")).max_redirects(0).build().unwrap()).await;
    assert_eq!(err.and_then(|e| e.status()), Some(307));
    assert_eq!(home.seen().len(), 1);
}

/// A client given to the builder keeps its own redirect policy; with the policy this
/// crate offers, the foreign host gets nothing; with `reqwest`'s default the run's
/// response from another origin is still refused (the credentials may have gone).
#[tokio::test]
async fn a_given_client_is_guarded_by_its_policy_and_checked_after() {
    let (home, foreign) = redirect::cross_origin_chain(3);
    let client = reqwest::Client::builder()
        .redirect(endpoint::same_origin_redirects(endpoint::MAX_REDIRECTS))
        .build()
        .unwrap();
    let (_, err) = run(agent(home.url("/agent")).client(client).build().unwrap()).await;
    assert!(
        matches!(err, Some(ClientError::CrossOriginRedirect(_))),
        "{err:?}"
    );
    assert_eq!(foreign.seen().len(), 0);

    let (home, foreign) = redirect::cross_origin_chain(3);
    let client = reqwest::Client::new();
    let (events, err) = run(agent(home.url("/agent")).client(client).build().unwrap()).await;
    assert!(events.is_empty());
    match err {
        Some(ClientError::CrossOriginRedirect(r)) => {
            assert!(r.followed);
            assert!(r.to.starts_with(&foreign.url("/hop/")), "{}", r.to);
        }
        other => panic!("expected CrossOriginRedirect, got {other:?}"),
    }
    assert!(
        !foreign.seen().is_empty(),
        "reqwest's default policy followed"
    );
}
