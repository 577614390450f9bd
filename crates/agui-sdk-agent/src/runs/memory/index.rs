//! The store's ordered thread indexes: each owner's lists (whole, by agent, without the
//! archived threads) and the idle threads by last use, with the page read from them.

use std::collections::{BTreeSet, HashMap};
use std::time::Instant;

use super::{Inner, Thread};
use crate::runs::{ThreadKey, ThreadQuery, ThreadSummary};

/// A thread's place in its owner's list, read backwards: `(last_run_ms, key)`.
pub(super) type Place = (u64, ThreadKey);

/// Threads in the list's order read backwards: all of them, and those not archived.
#[derive(Debug, Default)]
pub(super) struct Sets {
    all: BTreeSet<Place>,
    open: BTreeSet<Place>,
}

impl Sets {
    fn is_empty(&self) -> bool {
        self.all.is_empty()
    }

    fn remove(&mut self, place: &Place) {
        self.all.remove(place);
        self.open.remove(place);
    }

    fn insert(&mut self, place: Place, archived: bool) {
        if !archived {
            self.open.insert(place.clone());
        }
        self.all.insert(place);
    }

    fn of(&self, include_archived: bool) -> &BTreeSet<Place> {
        if include_archived {
            &self.all
        } else {
            &self.open
        }
    }
}

/// One owner's listed threads: all of them, and those of each agent (the agent of
/// their latest run), each split by the archived flag, so that every filter of a
/// [`ThreadQuery`] reads an index of its own.
#[derive(Debug, Default)]
pub(super) struct OwnerIndex {
    owner: Sets,
    agents: HashMap<String, Sets>,
}

/// The owners' thread lists, by scope: see [`Inner::lists`].
pub(super) type Lists = HashMap<String, OwnerIndex>;

/// The threads with no running run, by the time they were last used: the first is the
/// one idle the longest.
pub(super) type Idle = BTreeSet<(Instant, ThreadKey)>;

/// Takes a thread out of its owner's lists, if it is listed. Before any change of what
/// places it there: its last run's time, agent, archived flag, or first ended run.
pub(super) fn unlist(lists: &mut Lists, key: &ThreadKey, t: &Thread) {
    if t.created_ms.is_none() {
        return;
    }
    let Some(ix) = lists.get_mut(key.scope()) else {
        return;
    };
    let place = (t.last_run_ms, key.clone());
    ix.owner.remove(&place);
    if let Some(sets) = ix.agents.get_mut(&t.agent) {
        sets.remove(&place);
        if sets.is_empty() {
            ix.agents.remove(&t.agent);
        }
    }
    if ix.owner.is_empty() {
        lists.remove(key.scope());
    }
}

/// Puts a thread in its owner's lists at its last run's time (once a run of it ended).
pub(super) fn list(lists: &mut Lists, key: &ThreadKey, t: &Thread) {
    if t.created_ms.is_none() {
        return;
    }
    let place = (t.last_run_ms, key.clone());
    let ix = match lists.get_mut(key.scope()) {
        Some(ix) => ix,
        None => lists.entry(key.scope().to_owned()).or_default(),
    };
    ix.owner.insert(place.clone(), t.archived);
    match ix.agents.get_mut(&t.agent) {
        Some(sets) => sets.insert(place, t.archived),
        None => ix
            .agents
            .entry(t.agent.clone())
            .or_default()
            .insert(place, t.archived),
    }
}

/// Takes a thread out of the idle index. Before any change of its last use or live run.
pub(super) fn unidle(idle: &mut Idle, key: &ThreadKey, t: &Thread) {
    if t.idle() {
        idle.remove(&(t.used, key.clone()));
    }
}

/// Puts a thread in the idle index when no run of it is running.
pub(super) fn enidle(idle: &mut Idle, key: &ThreadKey, t: &Thread) {
    if t.idle() {
        idle.insert((t.used, key.clone()));
    }
}

/// A listed thread's summary; `None` before its first run ended.
pub(super) fn summary(key: &ThreadKey, t: &Thread) -> Option<ThreadSummary> {
    Some(ThreadSummary {
        key: key.clone(),
        thread_id: t.thread_id.clone(),
        agent: t.agent.clone(),
        created_at_ms: t.created_ms?,
        updated_at_ms: t.updated_ms,
        last_run_at_ms: t.last_run_ms,
        name: t.name.clone(),
        archived: t.archived,
    })
}

/// A page of `scope`'s list: the heads of the indexes `query`'s filters name, merged
/// from its cursor on (a thread is in one agent's index only), summaries built for the
/// page alone; and how many index entries were read.
pub(super) fn page(inner: &Inner, scope: &str, query: &ThreadQuery) -> (Vec<ThreadSummary>, usize) {
    let mut out = Vec::new();
    let Some(ix) = inner.lists.get(scope) else {
        return (out, 0);
    };
    let mut sets = Vec::new();
    if query.agents.is_empty() {
        sets.push(ix.owner.of(query.include_archived));
    } else {
        for (i, a) in query.agents.iter().enumerate() {
            if query.agents[..i].contains(a) {
                continue;
            }
            if let Some(s) = ix.agents.get(a) {
                sets.push(s.of(query.include_archived));
            }
        }
    }
    // Each set in its order is the list read backwards: the newest last.
    let mut iters: Vec<Box<dyn Iterator<Item = &Place>>> = sets
        .into_iter()
        .map(|s| -> Box<dyn Iterator<Item = &Place>> {
            match &query.after {
                Some((ms, key)) => Box::new(s.range(..(*ms, key.clone())).rev()),
                None => Box::new(s.iter().rev()),
            }
        })
        .collect();
    let mut heads: Vec<Option<&Place>> = iters.iter_mut().map(|it| it.next()).collect();
    let mut touched = heads.iter().flatten().count();
    while out.len() < query.limit {
        let Some(best) = (0..heads.len())
            .filter(|i| heads[*i].is_some())
            .max_by_key(|i| heads[*i])
        else {
            break;
        };
        let Some((_, key)) = heads[best] else { break };
        heads[best] = iters[best].next();
        touched += usize::from(heads[best].is_some());
        let Some(t) = inner.threads.get(key) else {
            continue;
        };
        let admitted = (query.include_archived || !t.archived)
            && (query.agents.is_empty() || query.agents.contains(&t.agent));
        if let Some(s) = admitted.then(|| summary(key, t)).flatten() {
            out.push(s);
        }
    }
    (out, touched)
}
