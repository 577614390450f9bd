//! The interrupt ledger's part of the contract: [`check_ledger`].

use std::sync::Arc;
use std::time::Duration;

use agui_sdk_core::{Interrupt, ResumeEntry, RunAgentInput};
use serde_json::json;

use super::ContractSetup;
use crate::interrupts::Effect;
use crate::runs::{
    InterruptKey, InterruptLedger, InterruptPolicy, Interrupts, LedgerEntry, Refusal,
};

fn entry(version: u64, doc: &str) -> LedgerEntry {
    LedgerEntry {
        version,
        doc: doc.to_owned().into(),
    }
}

fn input(run: &str, resume: Option<Vec<ResumeEntry>>) -> RunAgentInput {
    let mut i = RunAgentInput::new("thread", run, Vec::new());
    i.resume = resume;
    i
}

fn approval(id: &str) -> Interrupt {
    Interrupt::new(id, "approval").with_response_schema(json!({
        "type": "object",
        "properties": { "approved": { "type": "boolean" } },
        "required": ["approved"]
    }))
}

fn yes(id: &str) -> ResumeEntry {
    ResumeEntry::resolved(id, json!({"approved": true}))
}

/// Checks the store's [`InterruptLedger`]: compare-and-swap and expiry, then the rules
/// of [`Interrupts`] over it (record, check, claim, consume on success only,
/// concurrent answers, owners, expiry of interrupts and of claims, effects). Panics
/// with what was broken.
pub async fn check_ledger(ledger: Arc<dyn InterruptLedger>, setup: &ContractSetup) {
    let ns = &setup.namespace;
    let ttl = Duration::from_secs(60);

    // Compare-and-swap.
    let key = InterruptKey::derive(ns, "agent", "cas");
    assert_eq!(ledger.load(&key).await.unwrap(), None, "a new key is empty");
    assert!(ledger.swap(&key, None, entry(7, "{}"), ttl).await.unwrap());
    assert!(
        !ledger.swap(&key, None, entry(8, "{}"), ttl).await.unwrap(),
        "creating an entry that exists fails"
    );
    assert!(
        !ledger
            .swap(&key, Some(9), entry(8, "{}"), ttl)
            .await
            .unwrap(),
        "a swap expecting another version fails"
    );
    assert_eq!(ledger.load(&key).await.unwrap(), Some(entry(7, "{}")));
    assert!(ledger
        .swap(&key, Some(7), entry(u64::MAX, "{\"a\":1}"), ttl)
        .await
        .unwrap());
    assert_eq!(
        ledger.load(&key).await.unwrap(),
        Some(entry(u64::MAX, "{\"a\":1}")),
        "every 64-bit version is kept as it is"
    );
    // Expiry: an expired entry reads as none and is created anew.
    let short = InterruptKey::derive(ns, "agent", "short");
    assert!(ledger
        .swap(&short, None, entry(1, "{}"), Duration::from_millis(300))
        .await
        .unwrap());
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(
        ledger.load(&short).await.unwrap(),
        None,
        "an expired entry is gone"
    );
    assert!(ledger
        .swap(&short, None, entry(2, "{}"), ttl)
        .await
        .unwrap());

    let policy = InterruptPolicy::default().claim_ttl(Duration::from_secs(1));
    let ix = Interrupts::new(ledger.clone(), policy);
    let key = InterruptKey::derive(ns, "agent", "thread");

    // A run that answers nothing on a thread with nothing open proceeds; its pause is kept.
    let (s, answers) = ix.begin(key.clone(), &input("r1", None)).await.unwrap();
    assert!(answers.is_empty() && !s.claimed());
    s.settle(Some(vec![approval("a"), approval("b")]))
        .await
        .unwrap();

    // What a resume must answer.
    let refuse = |resume: Option<Vec<ResumeEntry>>| {
        let ix = ix.clone();
        let key = key.clone();
        async move { ix.begin(key, &input("r2", resume)).await.err() }
    };
    assert_eq!(
        refuse(None).await,
        Some(Refusal::ResumeRequired(vec!["a".into(), "b".into()]))
    );
    assert_eq!(
        refuse(Some(vec![yes("a")])).await,
        Some(Refusal::Unanswered(vec!["b".into()]))
    );
    assert_eq!(
        refuse(Some(vec![yes("a"), yes("b"), yes("x")])).await,
        Some(Refusal::Unknown("x".into()))
    );
    assert_eq!(
        refuse(Some(vec![yes("a"), yes("a"), yes("b")])).await,
        Some(Refusal::Duplicate("a".into()))
    );
    match refuse(Some(vec![
        yes("a"),
        ResumeEntry::resolved("b", json!({"approved": "yes"})),
    ]))
    .await
    {
        Some(Refusal::InvalidPayload { id, path, .. }) => {
            assert_eq!((id.as_str(), path.as_str()), ("b", "/approved"))
        }
        other => panic!("a payload against the schema: {other:?}"),
    }
    // Another owner's thread of the same id has nothing open.
    let theirs = InterruptKey::derive(&format!("{ns}-other"), "agent", "thread");
    assert_eq!(
        ix.begin(theirs, &input("r2", Some(vec![yes("a"), yes("b")])))
            .await
            .err(),
        Some(Refusal::Unknown("a".into()))
    );

    // Two runs with the same answer at once: exactly one proceeds.
    let both = Some(vec![yes("a"), ResumeEntry::cancelled("b")]);
    let (r3, r4) = (input("r3", both.clone()), input("r4", both.clone()));
    let (one, two) = tokio::join!(ix.begin(key.clone(), &r3), ix.begin(key.clone(), &r4));
    let (winner, loser) = match (one, two) {
        (Ok(w), Err(l)) | (Err(l), Ok(w)) => (w, l),
        other => panic!("exactly one of two identical resumes proceeds: {other:?}"),
    };
    assert!(
        matches!(loser, Refusal::Answered { ref id, in_progress: true } if id == "a"),
        "{loser:?}"
    );
    let (session, answers) = winner;
    assert_eq!(answers.len(), 2);
    assert!(answers.get("a").unwrap().is_resolved());
    assert!(!answers.get("b").unwrap().is_resolved());
    // Its effect starts, then the run fails: the answers stay open, the effect is kept.
    answers.begin_effect("a").await.unwrap();
    session.release().await;
    let (session, answers) = ix
        .begin(key.clone(), &input("r5", both.clone()))
        .await
        .unwrap();
    assert_eq!(answers.get("a").unwrap().effect(), &Effect::Started);
    answers.record_effect("a", "{\"sent\":true}").await.unwrap();
    session.release().await;
    let (session, answers) = ix
        .begin(key.clone(), &input("r6", both.clone()))
        .await
        .unwrap();
    assert_eq!(
        answers.get("a").unwrap().effect(),
        &Effect::Done("{\"sent\":true}".into())
    );
    // A claim whose run died lapses: after its time another attempt proceeds, and the
    // dead one can no longer settle.
    tokio::time::sleep(Duration::from_millis(1300)).await;
    let (retry, _) = ix
        .begin(key.clone(), &input("r7", both.clone()))
        .await
        .unwrap();
    assert!(matches!(
        session.settle(None).await,
        Err(Refusal::Answered { .. })
    ));
    // The run succeeds: the answers are consumed; a replay is refused.
    retry.settle(None).await.unwrap();
    assert!(matches!(
        refuse(both.clone()).await,
        Some(Refusal::Answered { ref id, in_progress: false }) if id == "a"
    ));
    let (s, answers) = ix.begin(key.clone(), &input("r8", None)).await.unwrap();
    assert!(
        answers.is_empty(),
        "nothing is open after the resume succeeded"
    );
    // A run that pauses again replaces the open set; an expired interrupt cannot be
    // answered and holds nothing up.
    s.settle(Some(vec![
        Interrupt::new("old", "approval").with_expires_at("2001-01-01T00:00:00Z")
    ]))
    .await
    .unwrap();
    assert_eq!(
        refuse(Some(vec![yes("old")])).await,
        Some(Refusal::Expired("old".into()))
    );
    // It can be declined, as a client that answers every pending interrupt does.
    let (s, answers) = ix
        .begin(
            key.clone(),
            &input("r9", Some(vec![ResumeEntry::cancelled("old")])),
        )
        .await
        .unwrap();
    assert!(!answers.get("old").unwrap().is_resolved());
    s.settle(Some(vec![
        Interrupt::new("older", "approval").with_expires_at("2001-01-01T00:00:00Z")
    ]))
    .await
    .unwrap();
    assert!(matches!(
        refuse(Some(vec![ResumeEntry::cancelled("old")])).await,
        Some(Refusal::Answered {
            in_progress: false,
            ..
        })
    ));
    let (s, _) = ix.begin(key.clone(), &input("r10", None)).await.unwrap();
    s.settle(None).await.unwrap();
    assert_eq!(
        refuse(Some(vec![yes("older")])).await,
        Some(Refusal::Unknown("older".into())),
        "a successful run clears the expired interrupts"
    );
}
