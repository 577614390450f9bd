//! The owners' thread lists against a real Redis, at scale: a list costs its page (the
//! index entries it reads, as the store counts them), not the owner's threads, and
//! pages through 50,000 threads read each once, in order; a list past many expired
//! threads removes them in bounded steps.

use crate::common;

use std::time::{Duration, Instant};

use agui_sdk_agent::runs::{
    owner_scope, Created, NewRun, RunKey, RunLog, RunStatus, ThreadEntry, ThreadIndex, ThreadKey,
    ThreadQuery, ThreadUpdate,
};
use agui_sdk_redis::{RedisRunStore, RunLimits};
use bytes::Bytes;
use futures_util::StreamExt;

/// Threads `names` of `owner`, each with one ended run of `agent`, 64 at a time.
async fn ended_threads(
    s: &RedisRunStore,
    owner: &str,
    names: impl Iterator<Item = String>,
    agent: &str,
) -> Vec<ThreadKey> {
    futures_util::stream::iter(names)
        .map(|name| async move {
            let thread = ThreadKey::derive(owner, &name);
            let key = RunKey::derive(owner, agent, &name);
            let run = NewRun {
                key: key.clone(),
                run_id: name.clone(),
                thread_id: name,
                agent: agent.into(),
                body_hash: String::new(),
                replica: "here".into(),
                lease: Duration::from_secs(60),
                thread: Some(thread.clone()),
            };
            let Ok(Created::New(fence)) = s.create(run).await else {
                panic!("a new run")
            };
            let ev = Bytes::from_static(
                b"{\"type\":\"RUN_FINISHED\",\"threadId\":\"t\",\"runId\":\"r\"}\n",
            );
            let entry = ThreadEntry::from_parts(ev.clone(), Vec::new());
            s.end_thread_run(&key, fence, 1, vec![ev], RunStatus::Finished, entry)
                .await
                .expect("end a run");
            thread
        })
        .buffered(64)
        .collect()
        .await
}

/// Deletes every key under `prefix`.
async fn delete_prefix(prefix: &str) {
    let client = redis::Client::open(common::url()).unwrap();
    let mut con = client.get_multiplexed_async_connection().await.unwrap();
    let mut cursor: u64 = 0;
    loop {
        let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(format!("{prefix}:*"))
            .arg("COUNT")
            .arg(1000)
            .query_async(&mut con)
            .await
            .unwrap();
        if !keys.is_empty() {
            let _: () = redis::cmd("UNLINK")
                .arg(&keys)
                .query_async(&mut con)
                .await
                .unwrap();
        }
        if next == 0 {
            break;
        }
        cursor = next;
    }
}

#[tokio::test]
async fn a_list_reads_its_page_from_its_index_not_the_owners_threads() {
    let prefix = common::prefix();
    let n = 50_000;
    let limits = RunLimits::shared().max_threads(n as u64 + 10);
    let Some(s) = common::connect("lists_at_scale", &prefix, limits).await else {
        return;
    };
    let owner = "many";
    let scope = owner_scope(owner);
    // The oldest thread is the only one of its agent and the only one not archived.
    let t0 = Instant::now();
    let rare = ended_threads(&s, owner, std::iter::once("t-rare".to_owned()), "rare").await;
    let common_ = ended_threads(&s, owner, (1..n).map(|i| format!("t{i}")), "common").await;
    futures_util::stream::iter(&common_)
        .map(|k| {
            let s = &s;
            async move {
                let update = ThreadUpdate {
                    archived: Some(true),
                    ..Default::default()
                };
                s.update_thread(k, update).await.unwrap().unwrap();
            }
        })
        .buffer_unordered(64)
        .collect::<Vec<()>>()
        .await;
    println!("{n} threads written in {:.1?}", t0.elapsed());

    let cost = |q: ThreadQuery| {
        let (s, scope) = (&s, &scope);
        async move {
            let before = s.thread_index_reads();
            let t = Instant::now();
            let page = s.list_threads(scope, &q).await.unwrap();
            (page, s.thread_index_reads() - before, t.elapsed())
        }
    };
    let (page, reads, took) = cost(ThreadQuery {
        agents: vec!["nope".into()],
        ..ThreadQuery::first(2)
    })
    .await;
    println!("{n} threads: a list for an agent none ran took {took:.2?}");
    assert!(page.is_empty());
    assert_eq!(reads, 0, "an agent with no thread reads nothing");
    let (page, reads, _) = cost(ThreadQuery {
        agents: vec!["nope".into(), "rare".into()],
        ..ThreadQuery::first(2)
    })
    .await;
    assert_eq!(
        page.iter().map(|t| &t.key).collect::<Vec<_>>(),
        vec![&rare[0]]
    );
    assert_eq!(reads, 1, "the oldest thread, of its agent's index, alone");
    let (page, reads, _) = cost(ThreadQuery::first(2)).await;
    assert_eq!(
        page.iter().map(|t| &t.key).collect::<Vec<_>>(),
        vec![&rare[0]]
    );
    assert_eq!(
        reads, 1,
        "the one thread not archived, of its own index, alone"
    );
    let (page, reads, _) = cost(ThreadQuery {
        agents: vec!["common".into(), "nope".into()],
        include_archived: true,
        ..ThreadQuery::first(1)
    })
    .await;
    assert_eq!(page.len(), 1);
    assert_eq!(reads, 1, "a page of one reads one");
    let (page, reads, _) = cost(ThreadQuery {
        agents: vec!["common".into(), "rare".into()],
        include_archived: true,
        ..ThreadQuery::first(10)
    })
    .await;
    assert_eq!(page.len(), 10);
    assert!(
        reads <= 4 * 10,
        "the heads of four sets at most, a page each: {reads}"
    );

    // Paging through everything: each thread once, in order; the reads are the pages.
    let before = s.thread_index_reads();
    let mut query = ThreadQuery {
        include_archived: true,
        ..ThreadQuery::first(100)
    };
    let mut seen = Vec::with_capacity(n);
    let mut pages = 0;
    loop {
        let page = s.list_threads(&scope, &query).await.unwrap();
        let Some(last) = page.last() else { break };
        query.after = Some((last.last_run_at_ms, last.key.clone()));
        seen.extend(page.into_iter().map(|t| (t.last_run_at_ms, t.key)));
        pages += 1;
    }
    let reads = s.thread_index_reads() - before;
    assert_eq!(seen.len(), n, "every thread once");
    assert!(seen.windows(2).all(|w| w[0] > w[1]), "in the list's order");
    assert!(
        seen.windows(2).any(|w| w[0].0 == w[1].0),
        "with threads sharing a millisecond"
    );
    assert_eq!(pages, n / 100);
    // The archived threads' set, a page at a time, and the head of the other (its one
    // thread, the last of the list) at each page.
    assert!(
        reads <= (n + pages) as u64,
        "{reads} index entries read for {n} threads in {pages} pages"
    );
    delete_prefix(&prefix).await;
}

#[tokio::test]
async fn a_list_past_many_expired_threads_removes_them_in_bounded_steps() {
    let prefix = common::prefix();
    let limits = RunLimits::shared().thread_idle_ttl(Duration::from_secs(2));
    let Some(s) = common::connect("lists_past_expired_threads", &prefix, limits).await else {
        return;
    };
    let owner = "expiring";
    // More expired threads than one call of the list script reads (its limit and 512).
    let n = 1_200;
    ended_threads(&s, owner, (0..n).map(|i| format!("t{i}")), "a").await;
    let scope = owner_scope(owner);
    let query = ThreadQuery {
        agents: vec!["a".into()],
        ..ThreadQuery::first(10)
    };
    assert_eq!(s.list_threads(&scope, &query).await.unwrap().len(), 10);
    // A second later, one more: it outlives the others by that second.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let fresh = ended_threads(&s, owner, std::iter::once("fresh".to_owned()), "a").await;
    tokio::time::sleep(Duration::from_millis(1_300)).await;
    let before = s.thread_index_reads();
    let listed = s.list_threads(&scope, &query).await.unwrap();
    assert_eq!(
        listed.iter().map(|t| &t.key).collect::<Vec<_>>(),
        vec![&fresh[0]],
        "only the thread whose keys live"
    );
    assert_eq!(
        s.thread_index_reads() - before,
        n as u64 + 1,
        "each expired thread is read once"
    );
    let client = redis::Client::open(common::url()).unwrap();
    let mut con = client.get_multiplexed_async_connection().await.unwrap();
    for (set, want) in [
        ("open", 1),
        ("open:agent:a", 1),
        ("archived", 0),
        ("archived:agent:a", 0),
    ] {
        let len: u64 = redis::cmd("ZCARD")
            .arg(format!("{prefix}:owner:{{{scope}}}:{set}"))
            .query_async(&mut con)
            .await
            .unwrap();
        assert_eq!(len, want, "the expired threads left the set {set}");
    }
    let listed: u64 = redis::cmd("HLEN")
        .arg(format!("{prefix}:listed"))
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!(listed, 1, "and the listed threads' hash");
    let before = s.thread_index_reads();
    assert_eq!(s.list_threads(&scope, &query).await.unwrap().len(), 1);
    assert_eq!(s.thread_index_reads() - before, 1, "they are read no more");
    delete_prefix(&prefix).await;
}
