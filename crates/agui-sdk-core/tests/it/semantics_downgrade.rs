//! `Downgrade::apply_json` agrees with `Downgrade::apply`: text it passes unchanged is
//! what `apply` gives, text it splices is byte for byte the canonical JSON of what
//! `apply` gives. A writer that trusts it writes exactly what `apply` gives.

use crate::common;

use agui_sdk_core::semantics::{Downgrade, JsonRewrite, Outgoing};
use agui_sdk_core::Event;
use common::arb::event;
use proptest::prelude::*;

fn json(e: &Event) -> Vec<u8> {
    let mut out = Vec::new();
    e.write_json(&mut out);
    out
}

/// The reading of the canonical text agrees with `apply` on `e`.
fn agrees(e: Event) -> Result<(), TestCaseError> {
    let old = Downgrade::for_declared(None);
    let text = json(&e);
    let applied = old.apply(e.clone());
    match old.apply_json(&text) {
        JsonRewrite::Unchanged(t) => {
            prop_assert_eq!(t, &text[..]);
            prop_assert_eq!(
                applied,
                Some(Outgoing::Event(e)),
                "passed as is, but apply changes it: {}",
                String::from_utf8_lossy(&text)
            );
        }
        JsonRewrite::Spliced(v) => match applied {
            Some(Outgoing::Event(a)) => {
                let want = json(&a);
                prop_assert_eq!(
                    String::from_utf8_lossy(&v),
                    String::from_utf8_lossy(&want),
                    "the splice is not what apply gives"
                );
            }
            other => prop_assert!(false, "spliced, but apply gives {:?}", other),
        },
        JsonRewrite::Decode => {}
    }
    Ok(())
}

/// On a large stack (`common::codec::check`): the event strategy nests deeply.
#[test]
fn text_read_without_decoding_is_what_apply_gives() {
    common::codec::check(3000, event, agrees);
}

#[test]
fn the_rewritten_kinds_are_read_as_they_must_be() {
    let old = Downgrade::for_declared(None);
    let mut versioned = Event::run_started("t", "r");
    if let Event::RunStarted(s) = &mut versioned {
        s.protocol_version = Some("1.1".into());
        s.parent_run_id = Some("p".into());
    }
    let mut unversioned = Event::run_started("t", "r");
    if let Event::RunStarted(s) = &mut unversioned {
        s.protocol_version = None;
    }
    let mut cancelled = agui_sdk_core::event::RunFinished::new("t", "r");
    cancelled.outcome = Some(agui_sdk_core::types::RunFinishedOutcome::Cancelled(
        Default::default(),
    ));
    for (e, want) in [
        (Event::text_message_content("m", ""), "decode"),
        (Event::reasoning_message_content("m", ""), "decode"),
        (Event::subagent_started("s", "helper"), "decode"),
        (Event::from(cancelled), "decode"),
        (versioned, "spliced"),
        (unversioned, "unchanged"),
        (Event::run_finished("t", "r"), "unchanged"),
        (Event::text_message_content("m", "x"), "unchanged"),
    ] {
        let got = match old.apply_json(&json(&e)) {
            JsonRewrite::Unchanged(_) => "unchanged",
            JsonRewrite::Spliced(_) => "spliced",
            JsonRewrite::Decode => "decode",
        };
        assert_eq!(got, want, "{e:?}");
        agrees(e).unwrap();
    }
    assert_eq!(
        old.apply_json(b" {\"type\":\"TEXT_MESSAGE_CONTENT\"}"),
        JsonRewrite::Decode,
        "text not in the canonical form is decoded"
    );
    let none = Downgrade::none();
    let text = json(&Event::subagent_started("s", "h"));
    assert_eq!(none.apply_json(&text), JsonRewrite::Unchanged(&text[..]));
}
