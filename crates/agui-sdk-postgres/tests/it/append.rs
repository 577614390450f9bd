//! The one-statement append against a model of the per-run caps (the statements it
//! replaced, one after the other), and each check that refuses an append leaving the
//! run as it was.

use agui_sdk_agent::runs::{Created, Fence, RunKey, RunLimits, RunLog, RunStatus, RunStoreError};
use bytes::Bytes;

use crate::{drop_schema, store};

/// The kept events as the append kept them before it was one statement: the batch
/// added, then the oldest dropped past the count cap, then past the byte cap (the
/// last event always kept).
#[derive(Debug, Default)]
struct Model {
    kept: Vec<(u64, Bytes)>,
    head: u64,
    oldest: u64,
    bytes: u64,
}

impl Model {
    fn append(&mut self, batch: &[Bytes], max_events: u64, max_bytes: u64) {
        for e in batch {
            self.head += 1;
            self.bytes += e.len() as u64;
            self.kept.push((self.head, e.clone()));
        }
        if self.head - self.oldest + 1 > max_events {
            self.oldest = self.head - max_events + 1;
            self.drop_before();
        }
        if self.bytes > max_bytes && self.head > self.oldest {
            let excess = self.bytes - max_bytes;
            let mut upto = 0;
            let cut = self
                .kept
                .iter()
                .find(|(_, e)| {
                    upto += e.len() as u64;
                    upto >= excess
                })
                .map_or(self.head, |(s, _)| *s);
            self.oldest = (cut + 1).min(self.head);
            self.drop_before();
        }
    }

    fn drop_before(&mut self) {
        let oldest = self.oldest;
        let dropped: u64 = self
            .kept
            .iter()
            .filter(|(s, _)| *s < oldest)
            .map(|(_, e)| e.len() as u64)
            .sum();
        self.bytes -= dropped;
        self.kept.retain(|(s, _)| *s >= oldest);
    }
}

#[tokio::test]
async fn an_append_keeps_what_the_caps_kept_one_statement_after_the_other() {
    let (max_events, max_bytes) = (7, 150);
    let limits = RunLimits::shared()
        .max_events_per_run(max_events)
        .max_bytes_per_run(max_bytes);
    let Some((store, admin, schema)) = store("append_model", limits).await else {
        return;
    };
    let key = RunKey::derive("owner", "agent", "model");
    let Created::New(fence) = store.create(crate::new_run("model", None)).await.unwrap() else {
        panic!("a new run")
    };
    let mut model = Model {
        oldest: 1,
        ..Model::default()
    };
    // A fixed pseudo-random walk: batches of 0 to 9 events of 1 to 80 bytes, some
    // larger than the byte cap.
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = |n: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    };
    for round in 0..120 {
        let size = next(10) as usize;
        let batch: Vec<Bytes> = (0..size)
            .map(|i| {
                let len = if next(20) == 0 { 200 } else { 1 + next(80) } as usize;
                Bytes::from(vec![b'a' + ((round + i) % 26) as u8; len])
            })
            .collect();
        store
            .append(&key, fence, model.head + 1, batch.clone(), None)
            .await
            .unwrap_or_else(|e| panic!("round {round}: {e}"));
        model.append(&batch, max_events, max_bytes);
        let r = store.record(&key).await.unwrap().unwrap();
        assert_eq!(
            (r.head, r.oldest),
            (model.head, model.oldest),
            "round {round}"
        );
        let read = store
            .read(&key, model.oldest - 1, 100)
            .await
            .unwrap_or_else(|e| panic!("round {round}: {e}"));
        let kept: Vec<Bytes> = model.kept.iter().map(|(_, e)| e.clone()).collect();
        assert_eq!(read.events, kept, "round {round}");
        let row = admin
            .query_one(
                &format!(
                    "SELECT r.bytes, (SELECT coalesce(sum(octet_length(event)), 0)::bigint \
                     FROM {schema}.events e WHERE e.key = r.key) FROM {schema}.runs r \
                     WHERE r.key = $1"
                ),
                &[&key.as_str()],
            )
            .await
            .unwrap();
        let (bytes, stored): (i64, i64) = (row.get(0), row.get(1));
        assert_eq!(
            (bytes as u64, stored as u64),
            (model.bytes, model.bytes),
            "round {round}"
        );
    }
    drop_schema(&admin, &schema).await;
}

#[tokio::test]
async fn an_append_refused_leaves_its_run_as_it_was() {
    let Some((store, admin, schema)) = store("append_refused", RunLimits::shared()).await else {
        return;
    };
    let key = RunKey::derive("owner", "agent", "refused");
    let Created::New(fence) = store.create(crate::new_run("refused", None)).await.unwrap() else {
        panic!("a new run")
    };
    let e = |s: &str| Bytes::from(format!("{{\"type\":\"{s}\"}}"));
    store
        .append(&key, fence, 1, vec![e("A")], None)
        .await
        .unwrap();
    let unchanged = |what: &'static str| {
        let (store, key) = (&store, &key);
        async move {
            let r = store.record(key).await.unwrap().unwrap();
            assert_eq!((r.head, r.status), (1, RunStatus::Running), "{what}");
            let b = store.read(key, 0, 10).await.unwrap();
            assert_eq!(b.events, vec![e("A")], "{what}");
        }
    };
    let other = Fence(fence.0 ^ 1);
    assert!(matches!(
        store.append(&key, other, 2, vec![e("B")], None).await,
        Err(RunStoreError::Fenced)
    ));
    unchanged("fenced").await;
    for first in [1, 3] {
        assert!(matches!(
            store.append(&key, fence, first, vec![e("B")], None).await,
            Err(RunStoreError::Conflict { head: 1 })
        ));
    }
    unchanged("conflict").await;
    let missing = RunKey::derive("owner", "agent", "missing");
    assert!(matches!(
        store.append(&missing, fence, 1, vec![e("B")], None).await,
        Err(RunStoreError::NotFound)
    ));
    // A fence checked first: a stale producer of an ended run is fenced, not told ended.
    store
        .append(&key, fence, 2, vec![e("END")], Some(RunStatus::Finished))
        .await
        .unwrap();
    assert!(matches!(
        store.append(&key, other, 3, vec![e("B")], None).await,
        Err(RunStoreError::Fenced)
    ));
    assert!(matches!(
        store.append(&key, fence, 3, vec![e("B")], None).await,
        Err(RunStoreError::Ended)
    ));
    let r = store.record(&key).await.unwrap().unwrap();
    assert_eq!((r.head, r.status), (2, RunStatus::Finished));
    assert!(r.finished_at_ms.is_some());
    drop_schema(&admin, &schema).await;
}
