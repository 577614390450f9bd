//! Redirects and the checker's credentials: against listeners on loopback that record
//! every request's headers, one on `127.0.0.2` standing in for a foreign host. A
//! redirect to another origin is an error finding naming both, never followed; one
//! within the origin is followed with the headers.

use std::time::Duration;

use agui_sdk_check::{Checker, Level, Scenario};
use agui_sdk_testkit::redirect::{self, Listener, Reply};

const TOKEN: &str = "tok-0c2b";
const KEY: &str = "key-e41f";

fn checker(url: String) -> Checker {
    Checker::new(url)
        .bearer(TOKEN)
        .header("X-Api-Key", KEY)
        .timeout(Duration::from_secs(5))
}

/// Every request (the `GET` of discovery, each scenario's `POST`s) is answered `307`
/// to a foreign host that would redirect to itself 10 times: each is an error finding
/// `transport/redirect` naming both origins, and the foreign host gets nothing.
#[tokio::test]
async fn a_cross_origin_redirect_is_a_finding_and_not_followed() {
    let (home, foreign) = redirect::cross_origin_chain(10);
    let report = checker(home.url("/agent")).run().await.expect("a report");
    assert!(!report.passed());
    let redirects: Vec<_> = report
        .scenarios
        .iter()
        .flat_map(|s| &s.findings)
        .filter(|f| f.rule == "transport/redirect")
        .collect();
    assert!(!redirects.is_empty(), "{}", report.to_text(false));
    for f in &redirects {
        assert_eq!(f.level, Level::Error);
        assert!(
            f.message.contains(&home.url("/agent"))
                && f.message.contains(&foreign.url("/hop/0"))
                && f.message.contains("not followed"),
            "{}",
            f.message
        );
        assert!(!f.message.contains(TOKEN), "{}", f.message);
    }
    let chat = report.scenario("chat").expect("the chat scenario");
    assert_eq!(
        chat.findings.iter().map(|f| f.rule).collect::<Vec<_>>(),
        ["transport/redirect"],
        "{}",
        report.to_text(false)
    );
    let capabilities = report.scenario("capabilities").unwrap();
    assert!(
        capabilities
            .findings
            .iter()
            .any(|f| f.rule == "transport/redirect" && f.message.starts_with("GET ")),
        "{}",
        report.to_text(false)
    );
    let home_seen = home.seen();
    assert!(home_seen.len() > 1, "the checker went on");
    assert_eq!(foreign.seen().len(), 0, "{:?}", foreign.seen());
    assert_eq!(foreign.carrying("authorization", TOKEN), 0);
    assert_eq!(foreign.carrying("x-api-key", KEY), 0);
}

/// A redirect within the origin is followed, with the checker's headers: the chat
/// scenario passes through it.
#[tokio::test]
async fn a_same_origin_redirect_is_followed_with_the_headers() {
    let home = Listener::start("127.0.0.1", |_, seen| {
        if seen.path == "/agent" {
            Reply::temporary("/real")
        } else {
            Reply::run(seen)
        }
    });
    let report = checker(home.url("/agent"))
        .scenarios([Scenario::Chat])
        .run()
        .await
        .expect("a report");
    assert!(report.passed(), "{}", report.to_text(false));
    let seen = home.seen();
    assert!(seen.iter().any(|s| s.path == "/real" && s.method == "POST"));
    assert_eq!(
        home.carrying("authorization", TOKEN),
        seen.len(),
        "every request carried the token"
    );
    assert_eq!(home.carrying("x-api-key", KEY), seen.len());
}
