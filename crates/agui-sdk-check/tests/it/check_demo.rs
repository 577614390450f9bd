//! The checker against this SDK's own demo agents (plain and resumable routes): every
//! scenario passes or is skipped with its reason, and the scenarios that apply to
//! an agent's capabilities ran.

use std::time::Duration;

use agui_sdk_check::{Checker, Level, Scenario};
use agui_sdk_testkit::server::{spawn, TestServer};

async fn serve(resumable: bool) -> TestServer {
    let mut router = agui_sdk_demo::router(Duration::ZERO);
    if resumable {
        router = router.resumable(agui_sdk_server::runs::Resumable::default());
    }
    spawn(router.into_router()).await
}

#[tokio::test]
async fn every_demo_agent_passes_every_scenario_that_applies() {
    for resumable in [false, true] {
        let server = serve(resumable).await;
        let base = server.base();
        for name in agui_sdk_demo::NAMES {
            let report = Checker::new(format!("{base}/{name}"))
                .timeout(Duration::from_secs(5))
                .run()
                .await
                .unwrap();
            let text = report.to_text(false);
            assert!(report.passed(), "{name} (resumable {resumable}):\n{text}");
            assert_eq!(report.count(Level::Warning), 0, "{name}:\n{text}");
            assert_eq!(report.scenarios.len(), Scenario::ALL.len());
            for s in &report.scenarios {
                if let Some(reason) = &s.skipped {
                    assert!(
                        !reason.is_empty(),
                        "{name}: {} skipped without a reason",
                        s.id
                    );
                } else {
                    assert!(s.requests > 0, "{name}: {} made no request", s.id);
                }
            }
            let ran = |id: &str| report.scenario(id).is_some_and(|s| s.skipped.is_none());
            // What every demo agent offers.
            for id in [
                "chat",
                "invalid-input",
                "content-negotiation",
                "capabilities",
                "hang-up",
            ] {
                assert!(ran(id), "{name}: {id} skipped:\n{text}");
            }
            assert_eq!(ran("resumable"), resumable, "{name}:\n{text}");
            assert_eq!(ran("interrupts"), name == "interrupt", "{name}:\n{text}");
        }
    }
}

#[tokio::test]
async fn the_interrupt_agent_is_resumed_and_the_resumable_run_re_attached() {
    let server = serve(true).await;
    let base = server.base();
    let report = Checker::new(format!("{base}/interrupt"))
        .scenarios([Scenario::Interrupts, Scenario::Resumable])
        .run()
        .await
        .unwrap();
    let text = report.to_text(false);
    assert!(report.passed(), "{text}");
    // The interrupted run and the resumed one; the cut run and its re-attach.
    assert_eq!(report.scenario("interrupts").unwrap().requests, 2, "{text}");
    assert_eq!(report.scenario("resumable").unwrap().requests, 2, "{text}");
}
