//! The interrupt ledger: the open interrupts of each thread, kept by the runtime so that
//! the next run's `resume` is checked before the agent sees it and an answer is
//! consumed only by a run that succeeds.
//!
//! * **What is kept.** When a run finishes with an interrupt outcome, its interrupts
//!   become the thread's open set (a run that pauses again replaces it). The thread is
//!   the owner's, the agent's and the client's thread id together ([`InterruptKey`]):
//!   another owner's interrupt is simply unknown.
//! * **The check.** Before the agent starts, the run's `resume` must answer every open
//!   interrupt that has not expired, each once, and nothing else; a `resolved` payload
//!   must match the interrupt's `responseSchema`. Otherwise the run ends with
//!   `RUN_ERROR` and one of the [`codes`](crate::interrupts::codes). A run without
//!   `resume` on a thread with open interrupts fails too.
//! * **The claim.** A valid resume claims the open set for its run, in the same store
//!   operation that checked it: a second run with the same answer (two tabs, a retry)
//!   finds it claimed and ends with `interrupt_answered`. The claim lasts
//!   [`InterruptPolicy::claim_ttl`] and is renewed while the run goes on; when its run
//!   dies with its process the claim lapses and the answer can be sent again.
//! * **Consumed on success only.** When the resumed run ends without error the
//!   answered interrupts close (and the run's own interrupts, if it paused again, open)
//!   in one store operation, before its terminal event is sent. A run that fails, is
//!   stopped, or loses its client releases the claim: the same answer can be sent again.
//! * **Effects at most once.** What an answer allows (running an approved tool) is
//!   recorded with the claim ([`Answers::begin_effect`](crate::Answers::begin_effect)),
//!   so an attempt after a failure sees what the failed one did.
//!
//! A store keeps one small document per thread and replaces it by compare-and-swap
//! ([`InterruptLedger`]: two methods); the rules above are written once, here, over it.
//! [`Interrupts::run`] puts an agent's run behind them; the server does so for every run.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

use super::RunStoreFuture;

mod doc;
mod gate;
mod memory;
mod session;

pub use memory::InMemoryLedger;
pub use session::{Interrupts, Refusal, Session};

/// The name of a thread's entry in the ledger: derived from its owner, agent and thread
/// id, so that the same thread id under another owner or agent is another thread, and a
/// key reveals none of the three.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct InterruptKey(Arc<str>);

impl InterruptKey {
    /// The key of thread `thread_id` of `agent` owned by `owner`: `interrupts.` and the
    /// first 16 bytes of SHA-256 over the three (separated by the byte 0x1f), in hex.
    pub fn derive(owner: &str, agent: &str, thread_id: &str) -> Self {
        use sha2::{Digest, Sha256};
        let mut h = Sha256::new();
        h.update(b"interrupts\x1f");
        h.update(owner.as_bytes());
        h.update([0x1f]);
        h.update(agent.as_bytes());
        h.update([0x1f]);
        h.update(thread_id.as_bytes());
        InterruptKey(super::hex_key("interrupts.", &h.finalize()[..16]))
    }

    /// A key from its text (as a store keeps it).
    pub fn from_text(text: &str) -> Self {
        InterruptKey(text.into())
    }

    /// The key's text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for InterruptKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "InterruptKey({})", self.0)
    }
}

impl fmt::Display for InterruptKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A thread's entry in the ledger: an opaque document and the version that names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LedgerEntry {
    /// The version: random, chosen by the writer, so that a swap expecting it fails
    /// once anyone else has written.
    pub version: u64,
    /// The document (JSON; the store does not read it).
    pub doc: Bytes,
}

/// Where the interrupt ledger is kept: one document per thread, read whole and replaced
/// by compare-and-swap. One of the roles a [`RunStore`](super::RunStore) combines; the
/// contract suite checks it (`contract::check_ledger`).
///
/// The rules (what a resume must answer, claims, consuming on success) are not the
/// store's: [`Interrupts`] applies them over these two methods, the same for every store.
pub trait InterruptLedger: Send + Sync + 'static {
    /// The thread's entry; `None` when there is none (never written, or expired).
    fn load<'a>(&'a self, key: &'a InterruptKey) -> RunStoreFuture<'a, Option<LedgerEntry>>;

    /// Replaces the thread's entry with `new` if its version is still `expected`
    /// (`None`: if there is no entry), atomically; the entry then expires `ttl` after
    /// this write. Whether it was replaced (`false`: someone else wrote first, nothing
    /// changed).
    fn swap<'a>(
        &'a self,
        key: &'a InterruptKey,
        expected: Option<u64>,
        new: LedgerEntry,
        ttl: Duration,
    ) -> RunStoreFuture<'a, bool>;
}

/// How the runtime keeps interrupts. Every field has a documented default.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct InterruptPolicy {
    /// How long a resumed run's claim on its answers lasts without renewal (default 30
    /// s; renewed every third of it while the run goes on). A run whose process died
    /// holds its answers this long; then they can be sent again.
    pub claim_ttl: Duration,
    /// How long a thread's open interrupts (and the ids of those answered) are kept
    /// after the last run that touched them (default 24 hours).
    pub keep_for: Duration,
    /// Most interrupts one run may raise (default 64); more end the run with
    /// `interrupts_invalid`.
    pub max_interrupts: usize,
    /// Most bytes of a thread's entry (its open interrupts, the effects recorded, the
    /// ids answered; default 256 KiB); a run whose interrupts or effects would exceed it
    /// ends with `interrupts_invalid`.
    pub max_entry_bytes: usize,
    /// How many answered interrupt ids a thread remembers (default 256), so that a
    /// replayed answer gets `interrupt_answered`; older ones get `interrupt_unknown`.
    pub max_answered_kept: usize,
}

impl Default for InterruptPolicy {
    fn default() -> Self {
        InterruptPolicy {
            claim_ttl: Duration::from_secs(30),
            keep_for: Duration::from_secs(24 * 3600),
            max_interrupts: 64,
            max_entry_bytes: 256 << 10,
            max_answered_kept: 256,
        }
    }
}

impl InterruptPolicy {
    /// Sets [`claim_ttl`](Self::claim_ttl) (at least 1 s).
    pub fn claim_ttl(mut self, ttl: Duration) -> Self {
        self.claim_ttl = ttl.max(Duration::from_secs(1));
        self
    }

    /// Sets [`keep_for`](Self::keep_for) (at least 1 s).
    pub fn keep_for(mut self, d: Duration) -> Self {
        self.keep_for = d.max(Duration::from_secs(1));
        self
    }

    /// Sets [`max_interrupts`](Self::max_interrupts) (at least 1).
    pub fn max_interrupts(mut self, n: usize) -> Self {
        self.max_interrupts = n.max(1);
        self
    }

    /// Sets [`max_entry_bytes`](Self::max_entry_bytes) (at least 1 KiB).
    pub fn max_entry_bytes(mut self, n: usize) -> Self {
        self.max_entry_bytes = n.max(1024);
        self
    }

    /// Sets [`max_answered_kept`](Self::max_answered_kept).
    pub fn max_answered_kept(mut self, n: usize) -> Self {
        self.max_answered_kept = n;
        self
    }
}
