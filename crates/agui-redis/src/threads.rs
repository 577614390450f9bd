//! [`RedisThreadStore`]: the CopilotKit runtime's threads in Redis.

use std::collections::HashSet;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use agui_agent::runs::RunStoreError;
use agui_agent::threads::{
    recorded_message_ids, RunBegun, RunPage, StoreError, StoreFuture, ThreadSnapshot, ThreadStore,
};
use agui_core::semantics::Compactor;
use agui_core::Event;
use redis::aio::ConnectionManager;
use redis::{Script, Value};
use sha2::{Digest, Sha256};

use crate::wake::Wakeups;
use crate::{int, open, text};

/// Bounds of a [`RedisThreadStore`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct RedisThreadLimits {
    /// A thread nobody runs or reads expires after this (default 1 hour).
    pub idle_ttl: Duration,
    /// Compacted events kept in a thread's history (default 10,000; the oldest runs
    /// are forgotten first, the last one always kept).
    pub max_history_events: usize,
    /// Events of one run (default 100,000; a terminal batch always fits).
    pub max_run_events: usize,
    /// How long a run outlives its process's last keep-alive (default 10 s).
    pub lease: Duration,
}

impl Default for RedisThreadLimits {
    fn default() -> Self {
        RedisThreadLimits {
            idle_ttl: Duration::from_secs(3600),
            max_history_events: 10_000,
            max_run_events: 100_000,
            lease: Duration::from_secs(10),
        }
    }
}

impl RedisThreadLimits {
    /// Sets [`Self::max_run_events`].
    pub fn max_run_events(mut self, n: usize) -> Self {
        self.max_run_events = n;
        self
    }

    /// Sets [`Self::max_history_events`].
    pub fn max_history_events(mut self, n: usize) -> Self {
        self.max_history_events = n;
        self
    }

    /// Sets [`Self::lease`].
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = lease;
        self
    }

    /// Sets [`Self::idle_ttl`].
    pub fn idle_ttl(mut self, ttl: Duration) -> Self {
        self.idle_ttl = ttl;
        self
    }
}

/// Redis's clock, in milliseconds (Lua prelude).
const NOW: &str = r#"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function touch(ttl)
  for i = 1, 4 do redis.call('PEXPIRE', KEYS[i], ttl) end
end
"#;

/// KEYS meta run hist ids; ARGV run_id lease_ms ttl_ms thread_id.
/// -> {1, ids...} | {-1, live} (busy) | {-2, live} (live run's lease expired)
const BEGIN: &str = r#"
local live = redis.call('HGET', KEYS[1], 'live')
if live and redis.call('HGET', KEYS[1], 'ended') == '0' then
  if tonumber(redis.call('HGET', KEYS[1], 'lease') or '0') > now then return {-1, live} end
  return {-2, live}
end
redis.call('DEL', KEYS[2])
redis.call('HSET', KEYS[1], 'thread', ARGV[4], 'live', ARGV[1], 'ended', '0',
  'lease', now + tonumber(ARGV[2]), 'stop', '0')
touch(ARGV[3])
local out = redis.call('SMEMBERS', KEYS[4])
table.insert(out, 1, 1)
return out
"#;

/// KEYS meta run hist ids; ARGV run_id terminal max lease_ms ttl_ms channel events...
/// -> 1 | -1 (not live) | -2 (too long)
const APPEND: &str = r#"
if redis.call('HGET', KEYS[1], 'live') ~= ARGV[1] or redis.call('HGET', KEYS[1], 'ended') ~= '0' then
  return -1
end
local n = #ARGV - 6
if ARGV[2] == '0' and redis.call('LLEN', KEYS[2]) + n > tonumber(ARGV[3]) then return -2 end
local i = 7
while i <= #ARGV do
  local j = math.min(i + 999, #ARGV)
  redis.call('RPUSH', KEYS[2], unpack(ARGV, i, j))
  i = j + 1
end
redis.call('HSET', KEYS[1], 'lease', now + tonumber(ARGV[4]))
touch(ARGV[5])
redis.call('PUBLISH', ARGV[6], 'a')
return 1
"#;

/// KEYS meta run hist ids; ARGV run_id ttl_ms channel max_hist n closing_events(n)...
/// count compacted ids... (n > 0: the run is lost, its closing events appended first)
/// -> 1 (ended) | 2 (ended, history trimmed: recompute ids) | 0 (already ended, or
/// lost but the lease is live) | -1 (not the live run)
const END: &str = r#"
if redis.call('HGET', KEYS[1], 'live') ~= ARGV[1] then return -1 end
if redis.call('HGET', KEYS[1], 'ended') ~= '0' then return 0 end
local n = tonumber(ARGV[5])
if n > 0 then
  if tonumber(redis.call('HGET', KEYS[1], 'lease') or '0') > now then return 0 end
  redis.call('RPUSH', KEYS[2], unpack(ARGV, 6, 5 + n))
end
local c = 6 + n
redis.call('HSET', KEYS[1], 'ended', '1', 'stop', '0')
redis.call('RPUSH', KEYS[3], ARGV[c] .. '\n' .. ARGV[c + 1])
local total = redis.call('HINCRBY', KEYS[1], 'hist', tonumber(ARGV[c]))
local forgot = false
while total > tonumber(ARGV[4]) and redis.call('LLEN', KEYS[3]) > 1 do
  local old = redis.call('LPOP', KEYS[3])
  total = redis.call('HINCRBY', KEYS[1], 'hist', -tonumber(string.match(old, '^(%d+)\n')))
  forgot = true
end
if not forgot then
  for i = c + 2, #ARGV do redis.call('SADD', KEYS[4], ARGV[i]) end
end
touch(ARGV[2])
redis.call('PUBLISH', ARGV[3], 'e')
if forgot then return 2 end
return 1
"#;

/// KEYS meta run hist ids; ARGV ids... -> 1
const SET_IDS: &str = r#"
redis.call('DEL', KEYS[4])
for i = 1, #ARGV do redis.call('SADD', KEYS[4], ARGV[i]) end
return 1
"#;

/// KEYS meta run hist ids; ARGV run_id from.
/// -> {live or '', ended, expired(0/1), events...}
const READ: &str = r#"
local live = redis.call('HGET', KEYS[1], 'live') or ''
local ended = redis.call('HGET', KEYS[1], 'ended') or '1'
local expired = 0
if ended == '0' and tonumber(redis.call('HGET', KEYS[1], 'lease') or '0') <= now then expired = 1 end
local out = {live, ended, expired}
if live == ARGV[1] then
  for _, e in ipairs(redis.call('LRANGE', KEYS[2], tonumber(ARGV[2]), -1)) do table.insert(out, e) end
end
return out
"#;

/// KEYS meta run hist ids. -> {exists, live or '', ended, expired, hist entries...}
const SNAPSHOT: &str = r#"
if redis.call('EXISTS', KEYS[1]) == 0 then return {0} end
local live = redis.call('HGET', KEYS[1], 'live') or ''
local ended = redis.call('HGET', KEYS[1], 'ended') or '1'
local expired = 0
if ended == '0' and tonumber(redis.call('HGET', KEYS[1], 'lease') or '0') <= now then expired = 1 end
local out = {1, live, ended, expired}
for _, h in ipairs(redis.call('LRANGE', KEYS[3], 0, -1)) do table.insert(out, h) end
return out
"#;

/// KEYS meta run hist ids; ARGV run_id lease_ms ttl_ms. -> stop flag (0/1) | -1 (not live)
const KEEP_ALIVE: &str = r#"
if redis.call('HGET', KEYS[1], 'live') ~= ARGV[1] or redis.call('HGET', KEYS[1], 'ended') ~= '0' then
  return -1
end
redis.call('HSET', KEYS[1], 'lease', now + tonumber(ARGV[2]))
touch(ARGV[3])
return tonumber(redis.call('HGET', KEYS[1], 'stop') or '0')
"#;

/// KEYS meta run hist ids. -> the live run's id, or false
const STOP: &str = r#"
local live = redis.call('HGET', KEYS[1], 'live')
if not live or redis.call('HGET', KEYS[1], 'ended') ~= '0' then return false end
redis.call('HSET', KEYS[1], 'stop', '1')
return live
"#;

struct Scripts {
    begin: Script,
    append: Script,
    end: Script,
    set_ids: Script,
    read: Script,
    snapshot: Script,
    keep_alive: Script,
    stop: Script,
}

fn script(body: &str) -> Script {
    Script::new(&format!("{NOW}{body}"))
}

/// The keys of one thread.
struct Keys {
    meta: String,
    run: String,
    hist: String,
    ids: String,
    wake: String,
}

/// CopilotKit runtime threads in Redis, shared by every replica, so a thread's history
/// survives the process that ran it, a client can connect to a run through any replica,
/// and a stop reaches the replica running it.
///
/// For a thread `T` under the prefix `P`, with `H` the first 16 bytes of SHA-256(`T`)
/// in hex (so no thread id can reach another's keys):
///
/// | key | type | holds |
/// |---|---|---|
/// | `P:t:{H}:meta` | hash | thread id, live run, whether it ended, its lease (ms, Redis's clock), stop request, history size |
/// | `P:t:{H}:run` | list | the live (or last) run's events, as JSON |
/// | `P:t:{H}:hist` | list | each finished run compacted: `count\n[events as JSON]`, oldest first |
/// | `P:t:{H}:ids` | set | the ids of the messages the history records |
/// | `P:t:{H}:wake` | pub/sub channel | a wake-up after each append and end |
///
/// Every write is one Lua script. The process running a run renews its lease each
/// second ([`ThreadStore::keep_alive`]); when it dies, the next reader of the thread
/// (a `connect`, a new run, any replica) finds the lease expired and ends the run as
/// lost: what it left open is closed, then a `RUN_ERROR` with code `run_lost`, and it
/// joins the history. Idle threads expire after [`RedisThreadLimits::idle_ttl`].
pub struct RedisThreadStore {
    con: ConnectionManager,
    prefix: String,
    limits: RedisThreadLimits,
    scripts: Scripts,
    wakeups: Wakeups,
}

impl std::fmt::Debug for RedisThreadStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisThreadStore")
            .field("prefix", &self.prefix)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

fn backend(e: impl std::error::Error + Send + Sync + 'static) -> StoreError {
    StoreError::Backend(Box::new(e))
}

fn reply(what: &str) -> StoreError {
    StoreError::Backend(format!("unexpected reply from Redis: {what}").into())
}

fn from_run_store(e: RunStoreError) -> StoreError {
    StoreError::Backend(Box::new(e))
}

fn not_live(thread_id: &str, run_id: &str) -> StoreError {
    StoreError::NotLive {
        thread_id: thread_id.to_owned(),
        run_id: run_id.to_owned(),
    }
}

fn ms(d: Duration) -> u64 {
    d.as_millis().max(1) as u64
}

fn decode_event(bytes: &[u8]) -> Result<Event, StoreError> {
    Event::from_json_slice(bytes).map_err(|e| reply(&format!("a stored event: {e}")))
}

fn bulk(v: &Value) -> Option<&[u8]> {
    match v {
        Value::BulkString(b) => Some(b),
        _ => None,
    }
}

/// One history entry, `count\n[events]`.
fn decode_history(entry: &[u8]) -> Result<Arc<[Event]>, StoreError> {
    let json = entry
        .iter()
        .position(|&b| b == b'\n')
        .map(|i| &entry[i + 1..])
        .ok_or_else(|| reply("a history entry"))?;
    let values: Vec<Box<serde_json::value::RawValue>> =
        serde_json::from_slice(json).map_err(|e| reply(&format!("a history entry: {e}")))?;
    values
        .iter()
        .map(|v| decode_event(v.get().as_bytes()))
        .collect::<Result<Vec<_>, _>>()
        .map(Into::into)
}

fn encode_event(e: &Event) -> Vec<u8> {
    serde_json::to_vec(e).unwrap_or_default()
}

impl RedisThreadStore {
    /// Connects to the Redis at `url`; every key starts with `prefix`.
    pub async fn connect(
        url: &str,
        prefix: &str,
        limits: RedisThreadLimits,
    ) -> Result<Self, StoreError> {
        let (client, con) = open(url).await.map_err(from_run_store)?;
        Ok(RedisThreadStore {
            con,
            prefix: prefix.to_owned(),
            limits,
            scripts: Scripts {
                begin: script(BEGIN),
                append: script(APPEND),
                end: script(END),
                set_ids: script(SET_IDS),
                read: script(READ),
                snapshot: script(SNAPSHOT),
                keep_alive: script(KEEP_ALIVE),
                stop: script(STOP),
            },
            wakeups: Wakeups::start(client),
        })
    }

    /// The limits in force.
    pub fn limits(&self) -> &RedisThreadLimits {
        &self.limits
    }

    fn keys(&self, thread_id: &str) -> Keys {
        let digest = Sha256::digest(thread_id.as_bytes());
        let h: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
        let base = format!("{}:t:{{{h}}}", self.prefix);
        Keys {
            meta: format!("{base}:meta"),
            run: format!("{base}:run"),
            hist: format!("{base}:hist"),
            ids: format!("{base}:ids"),
            wake: format!("{base}:wake"),
        }
    }

    fn invocation<'s>(&self, script: &'s Script, k: &Keys) -> redis::ScriptInvocation<'s> {
        let mut inv = script.prepare_invoke();
        inv.key(&k.meta).key(&k.run).key(&k.hist).key(&k.ids);
        inv
    }

    async fn do_begin(&self, thread_id: &str, run_id: &str) -> Result<RunBegun, StoreError> {
        let k = self.keys(thread_id);
        // Twice at most: a lost live run is ended first.
        for _ in 0..2 {
            let mut con = self.con.clone();
            let v: Vec<Value> = self
                .invocation(&self.scripts.begin, &k)
                .arg(run_id)
                .arg(ms(self.limits.lease))
                .arg(ms(self.limits.idle_ttl))
                .arg(thread_id)
                .invoke_async(&mut con)
                .await
                .map_err(backend)?;
            match v.first().and_then(int) {
                Some(1) => {
                    return Ok(RunBegun {
                        known_message_ids: v[1..].iter().filter_map(text).collect(),
                    })
                }
                Some(-1) => {
                    return Err(StoreError::Busy {
                        thread_id: thread_id.to_owned(),
                        run_id: v.get(1).and_then(text).unwrap_or_default(),
                    })
                }
                Some(-2) => {
                    let live = v.get(1).and_then(text).unwrap_or_default();
                    self.reap(thread_id, &k, &live).await?;
                }
                _ => return Err(reply("begin")),
            }
        }
        Err(StoreError::Busy {
            thread_id: thread_id.to_owned(),
            run_id: run_id.to_owned(),
        })
    }

    async fn do_append(
        &self,
        thread_id: &str,
        run_id: &str,
        events: Vec<Event>,
    ) -> Result<(), StoreError> {
        if events.is_empty() {
            return Ok(());
        }
        let terminal = matches!(
            events.last(),
            Some(Event::RunFinished(_) | Event::RunError(_))
        );
        let k = self.keys(thread_id);
        let mut inv = self.invocation(&self.scripts.append, &k);
        inv.arg(run_id)
            .arg(if terminal { "1" } else { "0" })
            .arg(self.limits.max_run_events)
            .arg(ms(self.limits.lease))
            .arg(ms(self.limits.idle_ttl))
            .arg(&k.wake);
        for e in &events {
            inv.arg(encode_event(e));
        }
        let mut con = self.con.clone();
        let r: i64 = inv.invoke_async(&mut con).await.map_err(backend)?;
        match r {
            1 => Ok(()),
            -1 => Err(not_live(thread_id, run_id)),
            -2 => Err(StoreError::RunTooLong {
                thread_id: thread_id.to_owned(),
                run_id: run_id.to_owned(),
                limit: self.limits.max_run_events,
            }),
            _ => Err(reply("append")),
        }
    }

    /// The run's events, all of them.
    async fn run_events(&self, k: &Keys) -> Result<Vec<Event>, StoreError> {
        let mut con = self.con.clone();
        let raw: Vec<Vec<u8>> = redis::cmd("LRANGE")
            .arg(&k.run)
            .arg(0)
            .arg(-1)
            .query_async(&mut con)
            .await
            .map_err(backend)?;
        raw.iter().map(|b| decode_event(b)).collect()
    }

    /// Ends the live run: compacted into the history. With `lost`, only when its lease
    /// has expired, and after a `RUN_ERROR` saying so.
    async fn finish(
        &self,
        thread_id: &str,
        run_id: &str,
        k: &Keys,
        lost: Option<Event>,
    ) -> Result<i64, StoreError> {
        let mut events = self.run_events(k).await?;
        let mut closing = Vec::new();
        if let Some(e) = &lost {
            // What the dead process left open is closed first, as its own guard would
            // have done, so that the log stays a valid stream.
            let mut open = agui_core::semantics::OpenConstructs::new();
            for ev in &events {
                open.observe(ev);
            }
            open.close_all(&mut closing);
            closing.push(e.clone());
            events.extend(closing.iter().cloned());
        }
        let compacted = Compactor::compact_all(events);
        let mut ids = HashSet::new();
        recorded_message_ids(&compacted, &mut ids);
        let json = serde_json::to_vec(&compacted).map_err(backend)?;
        let mut inv = self.invocation(&self.scripts.end, k);
        inv.arg(run_id)
            .arg(ms(self.limits.idle_ttl))
            .arg(&k.wake)
            .arg(self.limits.max_history_events)
            .arg(closing.len());
        for e in &closing {
            inv.arg(encode_event(e));
        }
        inv.arg(compacted.len()).arg(json);
        for id in &ids {
            inv.arg(id);
        }
        let mut con = self.con.clone();
        let r: i64 = inv.invoke_async(&mut con).await.map_err(backend)?;
        if r == 2 {
            self.recompute_ids(k).await?;
        }
        if r == -1 {
            return Err(not_live(thread_id, run_id));
        }
        Ok(r)
    }

    /// After the history was trimmed: the ids of the messages it still records.
    async fn recompute_ids(&self, k: &Keys) -> Result<(), StoreError> {
        let mut con = self.con.clone();
        let entries: Vec<Vec<u8>> = redis::cmd("LRANGE")
            .arg(&k.hist)
            .arg(0)
            .arg(-1)
            .query_async(&mut con)
            .await
            .map_err(backend)?;
        let mut ids = HashSet::new();
        for entry in &entries {
            recorded_message_ids(&decode_history(entry)?, &mut ids);
        }
        let mut inv = self.invocation(&self.scripts.set_ids, k);
        for id in &ids {
            inv.arg(id);
        }
        let _: i64 = inv.invoke_async(&mut con).await.map_err(backend)?;
        Ok(())
    }

    /// Ends a run whose process stopped renewing its lease.
    async fn reap(&self, thread_id: &str, k: &Keys, run_id: &str) -> Result<(), StoreError> {
        let mut error =
            agui_core::event::RunError::new("the server running this run stopped before it ended");
        error.code = Some("run_lost".into());
        let error = Event::from(error);
        let r = self.finish(thread_id, run_id, k, Some(error)).await;
        if let Ok(1 | 2) = r {
            tracing::warn!(%thread_id, %run_id, "thread store: a run whose server stopped was ended as lost");
        }
        r.map(|_| ())
    }

    async fn do_read(
        &self,
        thread_id: &str,
        run_id: &str,
        from: usize,
    ) -> Result<RunPage, StoreError> {
        let k = self.keys(thread_id);
        for _ in 0..2 {
            let mut con = self.con.clone();
            let v: Vec<Value> = self
                .invocation(&self.scripts.read, &k)
                .arg(run_id)
                .arg(from)
                .invoke_async(&mut con)
                .await
                .map_err(backend)?;
            let live = v.first().and_then(text).unwrap_or_default();
            if live != run_id {
                return Err(not_live(thread_id, run_id));
            }
            let ended = v.get(1).and_then(text).as_deref() == Some("1");
            let expired = v.get(2).and_then(int) == Some(1);
            if expired {
                self.reap(thread_id, &k, run_id).await?;
                continue;
            }
            let events = v[3.min(v.len())..]
                .iter()
                .map(|e| {
                    bulk(e)
                        .ok_or_else(|| reply("an event"))
                        .and_then(decode_event)
                })
                .collect::<Result<Vec<_>, _>>()?;
            return Ok(RunPage { events, ended });
        }
        Err(reply("read after ending a lost run"))
    }

    async fn do_snapshot(&self, thread_id: &str) -> Result<Option<ThreadSnapshot>, StoreError> {
        let k = self.keys(thread_id);
        for _ in 0..2 {
            let mut con = self.con.clone();
            let v: Vec<Value> = self
                .invocation(&self.scripts.snapshot, &k)
                .invoke_async(&mut con)
                .await
                .map_err(backend)?;
            if v.first().and_then(int) != Some(1) {
                return Ok(None);
            }
            let live = v.get(1).and_then(text).unwrap_or_default();
            let ended = v.get(2).and_then(text).as_deref() != Some("0");
            if v.get(3).and_then(int) == Some(1) {
                self.reap(thread_id, &k, &live).await?;
                continue;
            }
            let history = v[4.min(v.len())..]
                .iter()
                .map(|h| {
                    bulk(h)
                        .ok_or_else(|| reply("a history entry"))
                        .and_then(decode_history)
                })
                .collect::<Result<Vec<_>, _>>()?;
            return Ok(Some(ThreadSnapshot {
                history,
                live: (!ended && !live.is_empty()).then_some(live),
            }));
        }
        Err(reply("snapshot after ending a lost run"))
    }
}

impl ThreadStore for RedisThreadStore {
    fn begin_run<'a>(&'a self, thread_id: &'a str, run_id: &'a str) -> StoreFuture<'a, RunBegun> {
        Box::pin(self.do_begin(thread_id, run_id))
    }

    fn append<'a>(
        &'a self,
        thread_id: &'a str,
        run_id: &'a str,
        events: Vec<Event>,
    ) -> StoreFuture<'a, ()> {
        Box::pin(self.do_append(thread_id, run_id, events))
    }

    fn end_run<'a>(&'a self, thread_id: &'a str, run_id: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let k = self.keys(thread_id);
            self.finish(thread_id, run_id, &k, None).await.map(|_| ())
        })
    }

    fn snapshot<'a>(&'a self, thread_id: &'a str) -> StoreFuture<'a, Option<ThreadSnapshot>> {
        Box::pin(self.do_snapshot(thread_id))
    }

    fn read_run<'a>(
        &'a self,
        thread_id: &'a str,
        run_id: &'a str,
        from: usize,
    ) -> StoreFuture<'a, RunPage> {
        Box::pin(self.do_read(thread_id, run_id, from))
    }

    fn wait<'a>(
        &'a self,
        thread_id: &'a str,
        run_id: &'a str,
        from: usize,
    ) -> Pin<Box<dyn std::future::Future<Output = ()> + Send + 'a>> {
        Box::pin(async move {
            let channel = self.keys(thread_id).wake;
            let ready = async {
                match self.do_read(thread_id, run_id, from).await {
                    Ok(page) => page.ended || !page.events.is_empty(),
                    Err(_) => true,
                }
            };
            // Polls each second as well: pub/sub may lose a message, and a run whose
            // server died is found (and ended) by a read.
            self.wakeups
                .wait(&channel, Duration::from_secs(1), ready)
                .await;
        })
    }

    fn keep_alive<'a>(&'a self, thread_id: &'a str, run_id: &'a str) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let k = self.keys(thread_id);
            let mut con = self.con.clone();
            let r: i64 = self
                .invocation(&self.scripts.keep_alive, &k)
                .arg(run_id)
                .arg(ms(self.limits.lease))
                .arg(ms(self.limits.idle_ttl))
                .invoke_async(&mut con)
                .await
                .map_err(backend)?;
            // -1: the run is no longer this process's (ended as lost elsewhere): stop.
            Ok(r != 0)
        })
    }

    fn request_stop<'a>(&'a self, thread_id: &'a str) -> StoreFuture<'a, Option<String>> {
        Box::pin(async move {
            let k = self.keys(thread_id);
            let mut con = self.con.clone();
            let v: Value = self
                .invocation(&self.scripts.stop, &k)
                .invoke_async(&mut con)
                .await
                .map_err(backend)?;
            Ok(text(&v))
        })
    }
}
