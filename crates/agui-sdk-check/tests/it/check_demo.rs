//! The checker against this SDK's own demo agents (plain and resumable routes): no
//! scenario fails; each passes, or is skipped or not exercised with its reason; the
//! scenarios that apply to an agent's capabilities ran, and the interrupt agent passes
//! all four interrupt scenarios.

use std::time::Duration;

use agui_sdk_check::{Checker, Level, Scenario, Status};
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
            // The demo agents that call a tool whatever the request offers, and that
            // their capabilities do not list as their own: one warning each, however
            // many scenarios it touched.
            let unoffered = match name {
                "human_in_the_loop" => Some("generate_task_steps"),
                "tool_based_generative_ui" => Some("generate_haiku"),
                "predictive_state_updates" => Some("write_document"),
                "subagents" => Some("research"),
                _ => None,
            };
            let warnings: Vec<_> = report
                .scenarios
                .iter()
                .flat_map(|s| &s.findings)
                .filter(|f| f.level == Level::Warning)
                .collect();
            match unoffered {
                Some(tool) => {
                    assert_eq!(warnings.len(), 1, "{name}:\n{text}");
                    assert_eq!(warnings[0].rule, "tools/offered", "{name}:\n{text}");
                    assert!(
                        warnings[0].message.contains(&format!("tool '{tool}'")),
                        "{name}:\n{text}"
                    );
                }
                None => assert!(warnings.is_empty(), "{name}:\n{text}"),
            }
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
            for id in [
                "interrupts",
                "interrupts-unknown",
                "interrupts-replay",
                "interrupts-no-resume",
            ] {
                assert_eq!(ran(id), name == "interrupt", "{name}: {id}:\n{text}");
            }
            // A scenario that ran either reached what it tests, or says why not.
            for s in &report.scenarios {
                if s.status() == Status::NotExercised {
                    assert!(
                        s.not_exercised.as_deref().is_some_and(|r| !r.is_empty()),
                        "{name}: {}",
                        s.id
                    );
                }
            }
            if name == "interrupt" {
                for id in [
                    "interrupts",
                    "interrupts-unknown",
                    "interrupts-replay",
                    "interrupts-no-resume",
                ] {
                    let s = report.scenario(id).unwrap();
                    assert_eq!(s.status(), Status::Passed, "{id}:\n{text}");
                }
            }
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
    for id in ["interrupts", "resumable"] {
        let s = report.scenario(id).unwrap();
        assert_eq!(s.status(), Status::Passed, "{id}:\n{text}");
    }
    // The interrupted run and the resumed one; the cut run and its re-attach.
    assert_eq!(report.scenario("interrupts").unwrap().requests, 2, "{text}");
    assert_eq!(report.scenario("resumable").unwrap().requests, 2, "{text}");
}
