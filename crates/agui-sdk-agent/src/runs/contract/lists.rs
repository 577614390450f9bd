//! The owners' thread lists' part of the contract: their order, pages through every
//! filter, cursors at threads forgotten since, and lists leaving out the threads a store
//! forgot for idleness.

use std::sync::Arc;
use std::time::Duration;

use super::{entry, ev, everything, thread_run, ContractSetup};
use crate::runs::{
    owner_scope, Created, RunKey, RunStatus, RunStore, ThreadKey, ThreadQuery, ThreadSummary,
    ThreadUpdate,
};

/// An owner's list in pages: the order (last run, then key, both descending), the
/// cursor, and the archived and agent filters.
pub(super) async fn check_thread_lists(s: &dyn RunStore, setup: &ContractSetup) {
    let owner = format!("{}-lists", setup.namespace);
    let scope = owner_scope(&owner);
    let long = Duration::from_secs(60);
    let mut keys = Vec::new();
    for i in 0..7 {
        let thread = ThreadKey::derive(&owner, &format!("list-{i}"));
        let mut run = thread_run(setup, &thread, &format!("list-run-{i}"), long);
        run.key = RunKey::derive(&owner, "agent", &format!("list-run-{i}"));
        if i == 3 {
            run.agent = "other-agent".into();
        }
        let key = run.key.clone();
        let Created::New(f) = s.create(run).await.expect("create a list run") else {
            panic!("a new run")
        };
        let name = format!("list-run-{i}");
        s.end_thread_run(&key, f, 1, vec![ev(1)], RunStatus::Finished, entry(&name))
            .await
            .expect("end a list run");
        keys.push(thread);
    }
    let archived = keys[5].clone();
    s.update_thread(
        &archived,
        ThreadUpdate {
            archived: Some(true),
            ..Default::default()
        },
    )
    .await
    .unwrap()
    .expect("archive a listed thread");

    let all = s.list_threads(&scope, &everything(100)).await.unwrap();
    assert_eq!(all.len(), 7, "every thread of the owner, archived too");
    let place = |t: &ThreadSummary| (t.last_run_at_ms, t.key.clone());
    assert!(
        all.windows(2).all(|w| place(&w[0]) > place(&w[1])),
        "ordered by last run, then key, both descending: {:?}",
        all.iter().map(place).collect::<Vec<_>>()
    );
    let mut paged: Vec<ThreadSummary> = Vec::new();
    let mut query = ThreadQuery {
        limit: 2,
        ..everything(2)
    };
    for _ in 0..10 {
        let page = s.list_threads(&scope, &query).await.unwrap();
        assert!(page.len() <= 2, "a page holds at most its limit");
        let Some(last) = page.last() else { break };
        query.after = Some(place(last));
        paged.extend(page);
    }
    assert_eq!(paged, all, "the pages, one after the other, are the list");
    let unarchived = s
        .list_threads(&scope, &ThreadQuery::first(100))
        .await
        .unwrap();
    assert_eq!(unarchived.len(), 6);
    assert!(
        unarchived.iter().all(|t| t.key != archived),
        "an archived thread is left out unless asked for"
    );
    let other = s
        .list_threads(
            &scope,
            &ThreadQuery {
                agents: vec!["other-agent".into(), "nobody".into()],
                ..ThreadQuery::first(100)
            },
        )
        .await
        .unwrap();
    assert_eq!(
        other.iter().map(|t| t.key.clone()).collect::<Vec<_>>(),
        vec![keys[3].clone()],
        "only the threads whose last run ran one of the agents"
    );
    let after_all = ThreadQuery {
        after: all.last().map(place),
        ..everything(100)
    };
    assert!(
        s.list_threads(&scope, &after_all).await.unwrap().is_empty(),
        "nothing after the last thread"
    );
    for k in &keys {
        s.forget_thread(k).await.unwrap();
    }
    assert!(s
        .list_threads(&scope, &everything(100))
        .await
        .unwrap()
        .is_empty());
}

/// Creates thread `name` of `owner` with one ended run of `agent`.
async fn listed_thread(
    s: &dyn RunStore,
    setup: &ContractSetup,
    owner: &str,
    name: &str,
    agent: &str,
) -> ThreadKey {
    let thread = ThreadKey::derive(owner, name);
    let run_name = format!("{name}-run-{agent}");
    let mut run = thread_run(setup, &thread, &run_name, Duration::from_secs(60));
    run.key = RunKey::derive(owner, agent, &run_name);
    run.agent = agent.into();
    let key = run.key.clone();
    let Created::New(f) = s.create(run).await.expect("create a list run") else {
        panic!("a new run")
    };
    s.end_thread_run(
        &key,
        f,
        1,
        vec![ev(1)],
        RunStatus::Finished,
        entry(&run_name),
    )
    .await
    .expect("end a list run");
    thread
}

/// Every page of `query` (at `limit` a page), one after the other.
async fn all_pages(
    s: &dyn RunStore,
    scope: &str,
    query: &ThreadQuery,
    limit: usize,
) -> Vec<ThreadSummary> {
    let mut query = ThreadQuery {
        limit,
        ..query.clone()
    };
    let mut out: Vec<ThreadSummary> = Vec::new();
    loop {
        let page = s.list_threads(scope, &query).await.unwrap();
        assert!(page.len() <= limit, "a page holds at most its limit");
        let Some(last) = page.last() else { break };
        query.after = Some((last.last_run_at_ms, last.key.clone()));
        out.extend(page);
        assert!(out.len() <= 10_000, "the pages end");
    }
    out
}

/// Many threads of one owner, several ending in the same millisecond: pages through
/// every filter (one agent, two, none; archived or not) are the filtered list; a
/// cursor at a thread forgotten meanwhile; a new run of another agent moves a thread.
pub(super) async fn check_thread_list_filters(s: &dyn RunStore, setup: &ContractSetup) {
    let owner = format!("{}-filters", setup.namespace);
    let scope = owner_scope(&owner);
    let agents = ["agent-a", "agent-b", "agent-c"];
    let mut keys = Vec::new();
    let place = |t: &ThreadSummary| (t.last_run_at_ms, t.key.clone());
    // Threads ended together until some share their last run's millisecond.
    let mut all = Vec::new();
    for round in 0..10 {
        let batch = (0..40).map(|i| {
            let n = round * 40 + i;
            let name = format!("filter-{n}");
            let agent = agents[n % 3];
            let owner = owner.as_str();
            async move { listed_thread(s, setup, owner, &name, agent).await }
        });
        keys.extend(futures_util::future::join_all(batch).await);
        all = s.list_threads(&scope, &everything(10_000)).await.unwrap();
        if all
            .windows(2)
            .any(|w| w[0].last_run_at_ms == w[1].last_run_at_ms)
        {
            break;
        }
    }
    assert_eq!(all.len(), keys.len(), "every thread is listed");
    assert!(
        all.windows(2)
            .any(|w| w[0].last_run_at_ms == w[1].last_run_at_ms),
        "threads ending together share a millisecond"
    );
    assert!(
        all.windows(2).all(|w| place(&w[0]) > place(&w[1])),
        "ordered by last run, then key, both descending"
    );
    for k in keys.iter().step_by(5) {
        s.update_thread(
            k,
            ThreadUpdate {
                archived: Some(true),
                ..Default::default()
            },
        )
        .await
        .unwrap()
        .expect("archive a listed thread");
    }
    let all = s.list_threads(&scope, &everything(10_000)).await.unwrap();
    let filters: [&[&str]; 5] = [
        &[],
        &["agent-a"],
        &["agent-b", "agent-c"],
        &["agent-c", "agent-c", "nobody"],
        &["nobody"],
    ];
    for wanted in filters {
        for include_archived in [false, true] {
            let query = ThreadQuery {
                include_archived,
                agents: wanted.iter().map(|a| a.to_string()).collect(),
                ..ThreadQuery::first(10_000)
            };
            let expected: Vec<ThreadSummary> =
                all.iter().filter(|t| query.admits(t)).cloned().collect();
            for limit in [1, 7, 10_000] {
                assert_eq!(
                    all_pages(s, &scope, &query, limit).await,
                    expected,
                    "pages of {limit} for agents {wanted:?}, archived too: {include_archived}"
                );
            }
        }
    }
    // A cursor at a thread forgotten since: the next page starts after its place.
    let first = s.list_threads(&scope, &everything(5)).await.unwrap();
    let cursor = place(first.last().unwrap());
    assert!(s.forget_thread(&first[4].key).await.unwrap());
    let next = s
        .list_threads(
            &scope,
            &ThreadQuery {
                after: Some(cursor),
                ..everything(5)
            },
        )
        .await
        .unwrap();
    assert_eq!(
        next,
        all[5..10].to_vec(),
        "the page after a forgotten thread's place"
    );
    // A new run of another agent: the thread is listed under that agent.
    let moved = all[0].key.clone();
    let run_name = "filter-moved-run";
    let mut run = thread_run(setup, &moved, run_name, Duration::from_secs(60));
    run.key = RunKey::derive(&owner, "agent-d", run_name);
    run.agent = "agent-d".into();
    let key = run.key.clone();
    let Created::New(f) = s.create(run).await.unwrap() else {
        panic!("a new run")
    };
    let of = |agent: &str| ThreadQuery {
        agents: vec![agent.into()],
        ..everything(10_000)
    };
    let d = s.list_threads(&scope, &of("agent-d")).await.unwrap();
    assert_eq!(
        d.iter().map(|t| &t.key).collect::<Vec<_>>(),
        vec![&moved],
        "listed under its running run's agent"
    );
    assert!(s
        .list_threads(&scope, &of(&all[0].agent))
        .await
        .unwrap()
        .iter()
        .all(|t| t.key != moved));
    s.end_thread_run(
        &key,
        f,
        1,
        vec![ev(1)],
        RunStatus::Finished,
        entry(run_name),
    )
    .await
    .unwrap();
    let d = s.list_threads(&scope, &of("agent-d")).await.unwrap();
    assert_eq!(d.len(), 1);
    assert!(d[0].last_run_at_ms >= all[0].last_run_at_ms);
    let first = s.list_threads(&scope, &everything(1)).await.unwrap();
    assert_eq!(first[0].key, moved, "its run ended last: it is first");
    for k in &keys {
        s.forget_thread(k).await.unwrap();
    }
    for q in [everything(10), of("agent-a"), of("agent-d")] {
        assert!(
            s.list_threads(&scope, &q).await.unwrap().is_empty(),
            "forgotten threads leave every list"
        );
    }
}

/// For a store that forgets a thread idle for `idle_ttl` (configure it short, 2
/// seconds): a list leaves out the threads it forgot, whatever the filter, and pages
/// past them. Takes about `idle_ttl` and a quarter.
pub async fn check_thread_expiry(
    store: Arc<dyn RunStore>,
    setup: ContractSetup,
    idle_ttl: Duration,
) {
    let s = store.as_ref();
    let owner = format!("{}-expiry", setup.namespace);
    let scope = owner_scope(&owner);
    let mut old = Vec::new();
    for i in 0..6 {
        let agent = if i % 2 == 0 { "agent-a" } else { "agent-b" };
        old.push(listed_thread(s, &setup, &owner, &format!("old-{i}"), agent).await);
    }
    tokio::time::sleep(idle_ttl * 5 / 8).await;
    let young = listed_thread(s, &setup, &owner, "young", "agent-a").await;
    assert_eq!(
        s.list_threads(&scope, &everything(100))
            .await
            .unwrap()
            .len(),
        7
    );
    tokio::time::sleep(idle_ttl * 5 / 8).await;
    for query in [
        everything(100),
        ThreadQuery::first(100),
        ThreadQuery {
            agents: vec!["agent-a".into(), "agent-b".into()],
            ..everything(100)
        },
        ThreadQuery {
            agents: vec!["agent-b".into()],
            ..everything(100)
        },
    ] {
        let listed = all_pages(s, &scope, &query, 1).await;
        let want: Vec<&ThreadKey> = if query.agents == ["agent-b"] {
            Vec::new()
        } else {
            vec![&young]
        };
        assert_eq!(
            listed.iter().map(|t| &t.key).collect::<Vec<_>>(),
            want,
            "only the thread not idle past its time is listed ({query:?})"
        );
    }
    for k in &old {
        assert!(
            s.thread(k).await.unwrap().is_none(),
            "an idle thread is forgotten"
        );
    }
    s.forget_thread(&young).await.unwrap();
}
