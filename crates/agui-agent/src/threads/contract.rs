//! The contract every [`ThreadStore`] keeps, as a check any implementation can run in
//! its tests: [`check`] panics with what was broken.
//!
//! It covers one live run per thread, appends and reads from any index, the end of a
//! run (readable until the next one begins, compacted into the history), the message
//! ids a history records, refusals of the wrong run, the bound on a run's events (a
//! terminal batch always fits), and wake-ups on append and on end.

use std::sync::Arc;
use std::time::Duration;

use agui_core::Event;

use super::{StoreError, ThreadStore};

/// What the store under test is configured to do.
#[derive(Debug, Clone)]
pub struct ContractSetup {
    /// A prefix making this check's thread ids unique (stores may be shared).
    pub namespace: String,
    /// The store keeps at most this many events per run (configure it small, e.g. 8).
    pub max_run_events: usize,
}

fn message(run: &str, text: &str) -> Vec<Event> {
    let m = format!("{run}-m");
    vec![
        Event::text_message_start(m.clone()),
        Event::text_message_content(m.clone(), text),
        Event::text_message_content(m.clone(), "!"),
        Event::text_message_end(m),
    ]
}

/// Runs the whole contract against `store`. Panics with the broken rule.
pub async fn check(store: Arc<dyn ThreadStore>, setup: ContractSetup) {
    let t = format!("{}-thread", setup.namespace);
    let t = t.as_str();
    let s = store.as_ref();

    assert!(
        s.snapshot(t).await.expect("snapshot").is_none(),
        "an unknown thread has no snapshot"
    );
    let begun = s.begin_run(t, "r1").await.expect("begin r1");
    assert!(
        begun.known_message_ids.is_empty(),
        "a new thread knows no messages"
    );
    match s.begin_run(t, "r2").await {
        Err(StoreError::Busy { run_id, .. }) => assert_eq!(run_id, "r1", "Busy names the live run"),
        other => panic!("a second run on a running thread must be Busy, got {other:?}"),
    }
    let snap = s
        .snapshot(t)
        .await
        .expect("snapshot")
        .expect("the thread exists");
    assert_eq!(
        snap.live.as_deref(),
        Some("r1"),
        "the live run is in the snapshot"
    );
    assert!(snap.history.is_empty());

    // Appends, read from any index.
    s.append(t, "r1", vec![Event::run_started(t, "r1")])
        .await
        .expect("append");
    s.append(t, "r1", message("r1", "hello"))
        .await
        .expect("append");
    let page = s.read_run(t, "r1", 0).await.expect("read");
    assert_eq!(
        page.events.len(),
        5,
        "every appended event is read, in order"
    );
    assert!(matches!(page.events[0], Event::RunStarted(_)));
    assert!(!page.ended);
    let page = s.read_run(t, "r1", 3).await.expect("read from 3");
    assert_eq!(page.events.len(), 2, "a read starts at its index");
    assert!(s
        .read_run(t, "r1", 99)
        .await
        .expect("read past the end")
        .events
        .is_empty());
    assert!(
        matches!(
            s.append(t, "other", vec![Event::run_finished(t, "other")])
                .await,
            Err(StoreError::NotLive { .. })
        ),
        "an append to a run that is not live is refused"
    );
    assert!(
        matches!(
            s.read_run(t, "other", 0).await,
            Err(StoreError::NotLive { .. })
        ),
        "a read of a run that is not the thread's is refused"
    );

    // The bound on a run's events; the terminal batch always fits.
    let room = setup.max_run_events - 5;
    let steps: Vec<Event> = (0..=room)
        .map(|i| Event::step_started(format!("s{i}")))
        .collect();
    assert!(
        matches!(
            s.append(t, "r1", steps).await,
            Err(StoreError::RunTooLong { .. })
        ),
        "a batch beyond the run's bound is refused"
    );
    s.append(
        t,
        "r1",
        vec![
            Event::custom("x", serde_json::json!(1)),
            Event::run_finished(t, "r1"),
        ],
    )
    .await
    .expect("the terminal batch always fits");

    // A waiter wakes on the end.
    let waiter = {
        let store = store.clone();
        let t = t.to_owned();
        tokio::spawn(async move {
            let from = store
                .read_run(&t, "r1", 0)
                .await
                .expect("read")
                .events
                .len();
            tokio::time::timeout(Duration::from_secs(5), store.wait(&t, "r1", from))
                .await
                .is_ok()
        })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    s.end_run(t, "r1").await.expect("end r1");
    assert!(waiter.await.unwrap(), "wait resolves when the run ends");
    let page = s
        .read_run(t, "r1", 0)
        .await
        .expect("the ended run is still readable");
    assert!(page.ended);
    assert_eq!(page.events.len(), 7);
    let snap = s.snapshot(t).await.expect("snapshot").expect("thread");
    assert_eq!(snap.live, None, "no live run after the end");
    assert_eq!(snap.history.len(), 1);
    let history = &snap.history[0];
    let contents = history
        .iter()
        .filter(|e| matches!(e, Event::TextMessageContent(_)))
        .count();
    assert_eq!(
        contents, 1,
        "the history is compacted (one content per message)"
    );
    assert!(matches!(history.last(), Some(Event::RunFinished(_))));

    // The next run: knows the history's messages; the old run is gone.
    let begun = s.begin_run(t, "r2").await.expect("begin r2");
    assert!(
        begun.known_message_ids.contains("r1-m"),
        "the history's message ids are known: {:?}",
        begun.known_message_ids
    );
    assert!(matches!(
        s.read_run(t, "r1", 0).await,
        Err(StoreError::NotLive { .. })
    ));
    // A waiter wakes on an append.
    let waiter = {
        let store = store.clone();
        let t = t.to_owned();
        tokio::spawn(async move {
            let t0 = tokio::time::Instant::now();
            store.wait(&t, "r2", 0).await;
            t0.elapsed()
        })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    s.append(t, "r2", vec![Event::run_started(t, "r2")])
        .await
        .expect("append r2");
    let waited = tokio::time::timeout(Duration::from_secs(5), waiter)
        .await
        .expect("wait resolves on an append")
        .unwrap();
    assert!(
        waited < Duration::from_millis(900),
        "woken by the append ({waited:?})"
    );
    s.append(t, "r2", vec![Event::run_finished(t, "r2")])
        .await
        .expect("append r2");
    s.end_run(t, "r2").await.expect("end r2");
    // Ending again is refused or ignored, never recorded twice.
    let _ = s.end_run(t, "r2").await;
    let snap = s.snapshot(t).await.expect("snapshot").expect("thread");
    assert_eq!(snap.history.len(), 2, "runs join the history oldest first");
    assert!(matches!(snap.history[1].first(), Some(Event::RunStarted(r)) if r.run_id == "r2"));
}
