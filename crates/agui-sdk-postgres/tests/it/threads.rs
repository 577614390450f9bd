//! The whole store contract, the thread index's bounds, its lists' plans, and the
//! reaper of another replica.

use std::sync::Arc;
use std::time::Duration;

use agui_sdk_agent::runs::contract::{check, check_thread_expiry, ContractSetup};
use agui_sdk_agent::runs::{
    owner_scope, reap, Created, Fence, NewRun, RunKey, RunLimits, RunLog, RunStatus, RunStoreError,
    ThreadEntry, ThreadIndex, ThreadKey, ThreadQuery,
};
use agui_sdk_postgres::PostgresRunStore;
use bytes::Bytes;

use crate::{drop_schema, store, url};

fn thread_run(owner: &str, thread: &ThreadKey, name: &str, lease: Duration) -> NewRun {
    NewRun {
        key: RunKey::derive(owner, "agent", name),
        run_id: name.into(),
        thread_id: "thread".into(),
        agent: "agent".into(),
        body_hash: "hash".into(),
        replica: "replica-a".into(),
        lease,
        thread: Some(thread.clone()),
    }
}

fn entry(name: &str, events: usize) -> ThreadEntry {
    let line = format!("{{\"type\":\"STEP_STARTED\",\"stepName\":\"{name}\"}}\n");
    ThreadEntry::from_parts(Bytes::from(line.repeat(events)), vec![format!("m-{name}")])
}

/// Creates and ends run `name` of `thread`; its fence.
async fn ended(s: &PostgresRunStore, owner: &str, thread: &ThreadKey, name: &str) -> Fence {
    let run = thread_run(owner, thread, name, Duration::from_secs(60));
    let key = run.key.clone();
    let Created::New(f) = s.create(run).await.unwrap() else {
        panic!("a new run")
    };
    s.end_thread_run(
        &key,
        f,
        1,
        vec![Bytes::from_static(b"{}")],
        RunStatus::Finished,
        entry(name, 1),
    )
    .await
    .unwrap();
    f
}

#[tokio::test]
async fn the_store_keeps_the_whole_contract() {
    let Some((store, admin, schema)) =
        store("whole_contract", RunLimits::shared().max_events_per_run(8)).await
    else {
        return;
    };
    let setup = ContractSetup {
        namespace: schema.clone(),
        max_events_per_run: 8,
        leases: true,
    };
    check(Arc::new(store), setup).await;
    drop_schema(&admin, &schema).await;
}

#[tokio::test]
async fn idle_threads_are_forgotten_and_left_out_of_every_list() {
    let idle = Duration::from_secs(2);
    let Some((store, admin, schema)) =
        store("thread_expiry", RunLimits::shared().thread_idle_ttl(idle)).await
    else {
        return;
    };
    let setup = ContractSetup {
        namespace: schema.clone(),
        max_events_per_run: 8,
        leases: true,
    };
    check_thread_expiry(Arc::new(store), setup, idle).await;
    drop_schema(&admin, &schema).await;
}

#[tokio::test]
async fn past_the_thread_cap_the_longest_idle_thread_goes_and_running_ones_stay() {
    let Some((s, admin, schema)) = store("thread_cap", RunLimits::shared().max_threads(3)).await
    else {
        return;
    };
    let owner = "cap";
    let t: Vec<ThreadKey> = (0..5)
        .map(|i| ThreadKey::derive(owner, &format!("t{i}")))
        .collect();
    for (i, k) in t.iter().take(3).enumerate() {
        ended(&s, owner, k, &format!("r{i}")).await;
    }
    // A fourth thread: the first, idle the longest, is forgotten.
    ended(&s, owner, &t[3], "r3").await;
    assert!(
        s.thread(&t[0]).await.unwrap().is_none(),
        "the longest idle goes"
    );
    for k in &t[1..4] {
        assert!(s.thread(k).await.unwrap().is_some());
    }
    let listed = s
        .list_threads(&owner_scope(owner), &ThreadQuery::first(10))
        .await
        .unwrap();
    assert_eq!(
        listed.iter().map(|x| &x.key).collect::<Vec<_>>(),
        vec![&t[3], &t[2], &t[1]]
    );
    // Every thread held runs a run: a new thread is refused, and none is forgotten.
    let mut running = Vec::new();
    for (i, k) in t[1..4].iter().enumerate() {
        let run = thread_run(owner, k, &format!("live{i}"), Duration::from_secs(60));
        running.push(run.key.clone());
        assert!(matches!(s.create(run).await.unwrap(), Created::New(_)));
    }
    match s
        .create(thread_run(owner, &t[4], "refused", Duration::from_secs(60)))
        .await
    {
        Err(RunStoreError::Full(why)) => assert!(why.contains("max_threads 3"), "{why}"),
        other => panic!("a fourth thread with three running must be refused: {other:?}"),
    }
    assert!(s.thread(&t[4]).await.unwrap().is_none());
    for k in &t[1..4] {
        assert!(s.thread(k).await.unwrap().unwrap().live.is_some());
    }
    drop_schema(&admin, &schema).await;
}

#[tokio::test]
async fn a_history_keeps_its_bounds_and_always_its_last_run() {
    let Some((s, admin, schema)) = store(
        "history_bounds",
        RunLimits::shared()
            .max_history_events(5)
            .max_history_bytes(1_000),
    )
    .await
    else {
        return;
    };
    let owner = "history";
    let thread = ThreadKey::derive(owner, "t");
    let end = |name: &'static str, events: usize| {
        let s = &s;
        let thread = &thread;
        async move {
            let run = thread_run(owner, thread, name, Duration::from_secs(60));
            let key = run.key.clone();
            let Created::New(f) = s.create(run).await.unwrap() else {
                panic!("a new run")
            };
            s.end_thread_run(
                &key,
                f,
                1,
                vec![Bytes::from_static(b"{}")],
                RunStatus::Finished,
                entry(name, events),
            )
            .await
            .unwrap();
        }
    };
    end("a", 2).await;
    end("b", 2).await;
    let h = s.thread(&thread).await.unwrap().unwrap();
    assert_eq!(
        h.history.iter().map(|e| e.count).collect::<Vec<_>>(),
        [2, 2]
    );
    // Two more events than the bound: the oldest run goes.
    end("c", 3).await;
    let h = s.thread(&thread).await.unwrap().unwrap();
    assert_eq!(
        h.history,
        vec![entry("b", 2), entry("c", 3)]
            .into_iter()
            .map(|e| ThreadEntry {
                message_ids: Vec::new(),
                ..e
            })
            .collect::<Vec<_>>()
    );
    assert!(
        h.known_message_ids.contains("m-a"),
        "the ids the history recorded stay known"
    );
    // A run larger than the bounds alone is kept alone.
    end("d", 40).await;
    let h = s.thread(&thread).await.unwrap().unwrap();
    assert_eq!(h.history.len(), 1);
    assert_eq!(h.history[0].count, 40);
    drop_schema(&admin, &schema).await;
}

#[tokio::test]
async fn another_replicas_reaper_closes_a_dead_replicas_thread_run_as_lost() {
    let Some((a, admin, schema)) = store("reaper", RunLimits::shared()).await else {
        return;
    };
    let b = PostgresRunStore::connect(&url(), &schema, RunLimits::shared())
        .await
        .unwrap();
    let owner = "reaper";
    let thread = ThreadKey::derive(owner, "t");
    let run = thread_run(owner, &thread, "dies", Duration::from_millis(100));
    let key = run.key.clone();
    let Created::New(f) = a.create(run).await.unwrap() else {
        panic!("a new run")
    };
    let started = br#"{"type":"RUN_STARTED","threadId":"thread","runId":"dies"}"#;
    let text = br#"{"type":"TEXT_MESSAGE_START","messageId":"m1","role":"assistant"}"#;
    a.append(
        &key,
        f,
        1,
        vec![Bytes::from_static(started), Bytes::from_static(text)],
        None,
    )
    .await
    .unwrap();
    // Replica a dies: no heartbeat. Replica b's reaper finds and closes its run.
    tokio::time::sleep(Duration::from_millis(300)).await;
    reap(&b, "replica-b").await;
    let r = a.record(&key).await.unwrap().unwrap();
    assert_eq!(
        (r.status, r.owner_replica.as_str()),
        (RunStatus::Lost, "replica-b")
    );
    let log = a.read(&key, 0, 100).await.unwrap();
    let last = std::str::from_utf8(log.events.last().unwrap()).unwrap();
    assert!(
        last.contains("\"RUN_ERROR\"") && last.contains("\"run_lost\""),
        "the log ends with RUN_ERROR run_lost: {last}"
    );
    assert!(
        log.events
            .iter()
            .any(|e| std::str::from_utf8(e).unwrap().contains("TEXT_MESSAGE_END")),
        "what the run left open is closed"
    );
    let t = a.thread(&thread).await.unwrap().unwrap();
    assert!(t.live.is_none(), "the thread is free for its next run");
    assert_eq!(
        t.history.len(),
        1,
        "the lost run joined its thread's history"
    );
    assert!(matches!(
        a.append(&key, f, 4, vec![Bytes::from_static(b"{}")], None)
            .await,
        Err(RunStoreError::Fenced)
    ));
    drop_schema(&admin, &schema).await;
}

#[tokio::test]
async fn a_list_reads_its_indexes_from_its_cursor_not_the_owners_20000_threads() {
    let Some((s, admin, schema)) = store("list_plan", RunLimits::shared()).await else {
        return;
    };
    let owner = "many";
    let scope = owner_scope(owner);
    // 20,000 listed threads of one owner, three agents, one in five archived, and
    // threads of other owners; written directly, as the store would hold them.
    admin
        .batch_execute(&format!(
            "INSERT INTO {schema}.threads (key, owner, thread_id, agent, created_at_ms, \
             updated_at_ms, last_run_at_ms, archived, touched_at_ms) \
             SELECT '{scope}.' || lpad(to_hex(i), 32, '0'), '{scope}', 't' || i, \
             'agent-' || (i % 3), 1000 + i / 7, 1000 + i / 7, 1000 + i / 7, i % 5 = 0, \
             (extract(epoch from now()) * 1000)::bigint \
             FROM generate_series(1, 20000) AS i; \
             INSERT INTO {schema}.threads (key, owner, thread_id, agent, created_at_ms, \
             updated_at_ms, last_run_at_ms, touched_at_ms) \
             SELECT 'other' || (i % 50) || '.' || lpad(to_hex(i), 32, '0'), 'other' || (i % 50), \
             't' || i, 'agent-0', i, i, i, (extract(epoch from now()) * 1000)::bigint \
             FROM generate_series(1, 20000) AS i; \
             ANALYZE {schema}.threads;"
        ))
        .await
        .unwrap();
    let first = s
        .list_threads(&scope, &ThreadQuery::first(20))
        .await
        .unwrap();
    assert_eq!(first.len(), 20);
    assert!(first.iter().all(|t| !t.archived));
    let cursor = first.last().map(|t| (t.last_run_at_ms, t.key.clone()));
    let queries = [
        ThreadQuery::first(20),
        ThreadQuery {
            after: cursor.clone(),
            ..ThreadQuery::first(20)
        },
        ThreadQuery {
            after: cursor.clone(),
            include_archived: true,
            ..ThreadQuery::first(20)
        },
        ThreadQuery {
            after: cursor.clone(),
            agents: vec!["agent-1".into()],
            ..ThreadQuery::first(20)
        },
        ThreadQuery {
            after: cursor,
            include_archived: true,
            agents: vec!["agent-1".into(), "nobody".into()],
            ..ThreadQuery::first(20)
        },
    ];
    for q in &queries {
        let plan = s.explain_list_threads(&scope, q).await.unwrap();
        assert!(
            !plan.contains("Sort  ("),
            "no sort of what the filters match for {q:?}:\n{plan}"
        );
        if q.after.is_some() {
            assert!(
                plan.lines()
                    .filter(|l| l.contains("Index Cond"))
                    .all(|l| l.contains("ROW(last_run_at_ms, key) < ROW(")),
                "each index range starts at the cursor for {q:?}:\n{plan}"
            );
        }
        assert!(
            !plan.contains("Seq Scan"),
            "no scan of the threads table for {q:?}:\n{plan}"
        );
        assert!(
            plan.contains("threads_list"),
            "the list indexes are read for {q:?}:\n{plan}"
        );
        let page = s.list_threads(&scope, q).await.unwrap();
        assert_eq!(page.len(), 20, "a full page for {q:?}");
        assert!(page.iter().all(|t| q.admits(t)));
    }
    drop_schema(&admin, &schema).await;
}
