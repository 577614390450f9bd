//! [`InMemoryLedger`]: the interrupt ledger in this process's memory.

use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::{InterruptKey, InterruptLedger, LedgerEntry};
use crate::runs::RunStoreFuture;

/// The interrupt ledger in this process's memory (the
/// [`InMemoryRunStore`](crate::runs::InMemoryRunStore)'s, and the server's when it has
/// no store): bounded in entries and bytes. At a bound, expired entries go first, then
/// those that would expire soonest (a resume answering one of them then gets
/// `interrupt_unknown`).
#[derive(Debug)]
pub struct InMemoryLedger {
    inner: Mutex<Inner>,
    max_entries: usize,
    max_bytes: usize,
}

#[derive(Debug, Default)]
struct Inner {
    entries: HashMap<InterruptKey, Slot>,
    /// Every entry by expiry, soonest first.
    by_expiry: BTreeSet<(Instant, InterruptKey)>,
    bytes: usize,
}

#[derive(Debug)]
struct Slot {
    entry: LedgerEntry,
    expires: Instant,
}

/// What an entry is counted at besides its document: its key, slot and index entry.
const ENTRY_OVERHEAD: usize = 160;

impl Default for InMemoryLedger {
    /// At most 100,000 entries and 64 MiB.
    fn default() -> Self {
        InMemoryLedger::new(100_000, 64 << 20)
    }
}

impl InMemoryLedger {
    /// A ledger of at most `max_entries` entries and `max_bytes` bytes (documents and
    /// bookkeeping).
    pub fn new(max_entries: usize, max_bytes: usize) -> Self {
        InMemoryLedger {
            inner: Mutex::new(Inner::default()),
            max_entries: max_entries.max(1),
            max_bytes,
        }
    }

    /// How many entries it holds (expired ones not yet swept included).
    pub fn len(&self) -> usize {
        self.lock().entries.len()
    }

    /// Whether it holds no entry.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Inner {
    fn remove(&mut self, key: &InterruptKey) -> Option<Slot> {
        let slot = self.entries.remove(key)?;
        self.by_expiry.remove(&(slot.expires, key.clone()));
        self.bytes -= slot.entry.doc.len() + key.as_str().len() + ENTRY_OVERHEAD;
        Some(slot)
    }

    /// Drops expired entries, then the soonest to expire while `full` says so.
    fn make_room(&mut self, now: Instant, full: impl Fn(&Inner) -> bool) {
        while let Some((at, key)) = self.by_expiry.first().cloned() {
            if at > now && !full(self) {
                break;
            }
            self.remove(&key);
        }
    }
}

impl InterruptLedger for InMemoryLedger {
    fn load<'a>(&'a self, key: &'a InterruptKey) -> RunStoreFuture<'a, Option<LedgerEntry>> {
        let now = Instant::now();
        let mut inner = self.lock();
        let found = match inner.entries.get(key) {
            Some(slot) if slot.expires > now => Some(slot.entry.clone()),
            Some(_) => {
                inner.remove(key);
                None
            }
            None => None,
        };
        Box::pin(std::future::ready(Ok(found)))
    }

    fn swap<'a>(
        &'a self,
        key: &'a InterruptKey,
        expected: Option<u64>,
        new: LedgerEntry,
        ttl: Duration,
    ) -> RunStoreFuture<'a, bool> {
        let now = Instant::now();
        let mut inner = self.lock();
        let current = inner
            .entries
            .get(key)
            .filter(|s| s.expires > now)
            .map(|s| s.entry.version);
        if current != expected {
            return Box::pin(std::future::ready(Ok(false)));
        }
        inner.remove(key);
        let cost = new.doc.len() + key.as_str().len() + ENTRY_OVERHEAD;
        let (max_entries, max_bytes) = (self.max_entries, self.max_bytes);
        inner.make_room(now, |i| {
            i.entries.len() >= max_entries || i.bytes + cost > max_bytes
        });
        let expires = now + ttl;
        inner.bytes += cost;
        inner.by_expiry.insert((expires, key.clone()));
        inner.entries.insert(
            key.clone(),
            Slot {
                entry: new,
                expires,
            },
        );
        Box::pin(std::future::ready(Ok(true)))
    }
}
