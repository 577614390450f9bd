use std::sync::Arc;

use super::*;
use crate::runs::contract::{check, check_thread_expiry, ContractSetup};
use crate::runs::{owner_scope, Created, NewRun};

#[tokio::test]
async fn the_store_keeps_the_contract_and_forgets_idle_threads_in_its_lists() {
    let setup = ContractSetup {
        namespace: "memory".into(),
        max_events_per_run: 8,
        leases: false,
    };
    let store = InMemoryRunStore::new(RunLimits::default().max_events_per_run(8));
    check(Arc::new(store), setup.clone()).await;
    let ttl = Duration::from_secs(2);
    let store = InMemoryRunStore::new(RunLimits::default().thread_idle_ttl(ttl));
    check_thread_expiry(Arc::new(store), setup, ttl).await;
}

/// A thread of `owner` with one ended run of `agent`.
async fn ended_thread(store: &InMemoryRunStore, owner: &str, name: &str, agent: &str) -> ThreadKey {
    let thread = ThreadKey::derive(owner, name);
    let key = RunKey::derive(owner, agent, name);
    let run = NewRun {
        agent: agent.into(),
        thread: Some(thread.clone()),
        ..new_run(&key, name)
    };
    let Created::New(fence) = store.create(run).await.unwrap() else {
        panic!("a new run")
    };
    let entry = ThreadEntry::from_parts(Bytes::from_static(b"{}\n"), Vec::new());
    store
        .end_thread_run(
            &key,
            fence,
            1,
            vec![Bytes::from_static(b"{}")],
            RunStatus::Finished,
            entry,
        )
        .await
        .unwrap();
    thread
}

#[tokio::test]
async fn a_list_reads_its_page_from_its_index_not_the_owners_threads() {
    let n = 100_000;
    let store = InMemoryRunStore::new(
        RunLimits::default()
            .max_threads(n as u64 + 10)
            .max_total_bytes(u64::MAX),
    );
    let owner = "many";
    let scope = owner_scope(owner);
    // The oldest thread is the only one of its agent and the only one not archived.
    let rare = ended_thread(&store, owner, "t-rare", "rare").await;
    let mut keys = vec![rare.clone()];
    for i in 1..n {
        keys.push(ended_thread(&store, owner, &format!("t{i}"), "common").await);
    }
    for k in &keys[1..] {
        let update = ThreadUpdate {
            archived: Some(true),
            ..Default::default()
        };
        store.update_thread(k, update).await.unwrap().unwrap();
    }
    let cost = |q: ThreadQuery| {
        let store = &store;
        let scope = &scope;
        async move {
            let before = store.touched();
            let page = store.list_threads(scope, &q).await.unwrap();
            (page, store.touched() - before)
        }
    };
    let (page, touched) = cost(ThreadQuery {
        agents: vec!["nope".into()],
        ..ThreadQuery::first(1)
    })
    .await;
    assert!(page.is_empty());
    assert_eq!(touched, 0, "an agent with no thread reads nothing");
    let (page, touched) = cost(ThreadQuery {
        agents: vec!["nope".into(), "rare".into()],
        ..ThreadQuery::first(2)
    })
    .await;
    assert_eq!(page.iter().map(|t| &t.key).collect::<Vec<_>>(), vec![&rare]);
    assert_eq!(touched, 1, "the oldest thread, of its agent's index, alone");
    let (page, touched) = cost(ThreadQuery::first(2)).await;
    assert_eq!(page.iter().map(|t| &t.key).collect::<Vec<_>>(), vec![&rare]);
    assert_eq!(
        touched, 1,
        "the one thread not archived, of its own index, alone"
    );

    // Paging through everything: each thread once, in order; the reads are the page.
    let before = store.touched();
    let mut query = ThreadQuery {
        include_archived: true,
        ..ThreadQuery::first(100)
    };
    let mut seen = Vec::with_capacity(n);
    let mut pages = 0;
    loop {
        let page = store.list_threads(&scope, &query).await.unwrap();
        let Some(last) = page.last() else { break };
        query.after = Some((last.last_run_at_ms, last.key.clone()));
        seen.extend(page.into_iter().map(|t| (t.last_run_at_ms, t.key)));
        pages += 1;
    }
    let touched = store.touched() - before;
    assert_eq!(seen.len(), n, "every thread once");
    assert!(seen.windows(2).all(|w| w[0] > w[1]), "in the list's order");
    assert!(
        seen.windows(2).any(|w| w[0].0 == w[1].0),
        "with threads sharing a millisecond"
    );
    assert!(
        touched <= n + pages,
        "{touched} index entries read for {n} threads in {pages} pages"
    );
}

#[tokio::test]
async fn a_new_thread_at_the_cap_evicts_the_longest_idle_from_the_idle_index() {
    let n = 50_000;
    let store = InMemoryRunStore::new(
        RunLimits::default()
            .max_threads(n as u64)
            .max_total_bytes(u64::MAX),
    );
    let mut keys = Vec::new();
    for i in 0..n {
        keys.push(ended_thread(&store, "cap", &format!("t{i}"), "a").await);
    }
    // The oldest runs again: not idle, not evictable.
    let again = RunKey::derive("cap", "a", "t0-again");
    let run = NewRun {
        thread: Some(keys[0].clone()),
        ..new_run(&again, "t0-again")
    };
    assert!(matches!(store.create(run).await, Ok(Created::New(_))));
    let before = store.touched();
    let newest = ended_thread(&store, "cap", "t-new", "a").await;
    assert_eq!(store.touched() - before, 1, "one eviction, one entry read");
    assert!(
        store.thread(&keys[1]).await.unwrap().is_none(),
        "the longest idle went"
    );
    assert!(
        store.thread(&keys[0]).await.unwrap().is_some(),
        "a running thread stays"
    );
    assert!(store.thread(&newest).await.unwrap().is_some());
    assert!(store.thread(&keys[2]).await.unwrap().is_some());
}

fn new_run(key: &RunKey, id: &str) -> NewRun {
    NewRun {
        key: key.clone(),
        run_id: id.into(),
        thread_id: "t".into(),
        agent: "a".into(),
        body_hash: String::new(),
        replica: "r".into(),
        lease: Duration::from_secs(60),
        thread: None,
    }
}

#[tokio::test]
async fn events_are_counted_at_what_they_cost_kept() {
    // Room for ten 100-byte events counted with their bookkeeping, not for the 15
    // that their JSON alone would let in.
    let per_event = 100 + EVENT_OVERHEAD;
    let store =
        InMemoryRunStore::new(RunLimits::default().max_bytes_per_run(10 * per_event as u64));
    let key = RunKey::derive("o", "a", "r1");
    let Created::New(fence) = store.create(new_run(&key, "r1")).await.unwrap() else {
        panic!("a new run")
    };
    let events: Vec<Bytes> = (0..15).map(|_| Bytes::from(vec![b'x'; 100])).collect();
    store.append(&key, fence, 1, events, None).await.unwrap();
    let record = store.record(&key).await.unwrap().unwrap();
    assert_eq!(store.bytes(), 10 * per_event + run_cost(&record));
    let record = store.record(&key).await.unwrap().unwrap();
    assert_eq!(
        (record.oldest, record.head),
        (6, 15),
        "the five oldest were dropped"
    );
}
