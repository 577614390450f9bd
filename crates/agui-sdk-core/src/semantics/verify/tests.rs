use proptest::prelude::*;

use super::Verifier;
use crate::event::*;

/// One event of a small alphabet: lifecycle, message, reasoning and tool-call
/// starts, contents and ends on a few ids, some with a subagent tag.
fn event() -> impl Strategy<Value = Event> {
    let id = prop::sample::select(vec!["m1", "m2", "t1"]);
    let tag = prop::option::weighted(0.3, prop::sample::select(vec!["s1", "s2"]));
    (0u8..14, id, tag).prop_map(|(kind, id, tag)| {
        let tag = tag.map(str::to_owned);
        match kind {
            0 => RunStarted::new("th", "r").into(),
            1 => RunFinished::new("th", "r").into(),
            2 => RunError::new("boom").into(),
            3 => TextMessageStart {
                subagent_run_id: tag,
                ..TextMessageStart::new(id)
            }
            .into(),
            4 | 5 => TextMessageContent {
                subagent_run_id: tag,
                ..TextMessageContent::new(id, "x")
            }
            .into(),
            6 => TextMessageEnd {
                subagent_run_id: tag,
                ..TextMessageEnd::new(id)
            }
            .into(),
            7 => ToolCallStart {
                subagent_run_id: tag,
                ..ToolCallStart::new(id, "f")
            }
            .into(),
            8 | 9 => ToolCallArgs {
                subagent_run_id: tag,
                ..ToolCallArgs::new(id, "{")
            }
            .into(),
            10 => ToolCallEnd::new(id).into(),
            11 => ReasoningMessageStart::new(id).into(),
            12 => ReasoningMessageContent {
                subagent_run_id: tag,
                ..ReasoningMessageContent::new(id, "r")
            }
            .into(),
            _ => ReasoningMessageEnd::new(id).into(),
        }
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, failure_persistence: None, ..ProptestConfig::default() })]

    /// Accepting a repeated content event without looking it up gives, event by
    /// event, the verdicts of the full checks (valid runs and broken ones alike).
    #[test]
    fn a_repeated_content_event_is_judged_as_the_full_checks_judge_it(
        events in prop::collection::vec(event(), 0..60),
    ) {
        let mut fast = Verifier::new();
        let mut full = Verifier::new();
        full.repeat.off = true;
        for e in &events {
            let a = fast.push(e).map_err(|e| e.to_string());
            let b = full.push(e).map_err(|e| e.to_string());
            prop_assert_eq!(a, b);
            prop_assert_eq!(fast.events_seen(), full.events_seen());
        }
        prop_assert_eq!(fast.finish().map_err(|e| e.to_string()), full.finish().map_err(|e| e.to_string()));
    }
}
