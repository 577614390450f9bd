//! The thread index of [`RedisRunStore`]: the keys of a thread, the read of its
//! record, and the owners' lists. The writes (a thread run joining and leaving its
//! thread) are part of the create and append scripts, so each stays one atomic step.
//!
//! # The owners' lists
//!
//! A list of an owner's threads is ordered by the time each thread's last run ended,
//! then by its key, both descending, and filtered by agent and by the archived flag.
//! Each page must cost what it returns, not the owner's set: paging by offset, or
//! filtering one set of all the owner's threads, walks the whole set when a filter
//! matches little (at 50,000 threads, a list for an agent none ran read all 50,000).
//!
//! So every listed thread is a member of two sorted sets of its owner `S` (in Redis's
//! slot `{S}`), all at score 0, ordered by the member's bytes alone:
//!
//! | set | holds |
//! |---|---|
//! | `P:owner:{S}:open`, `P:owner:{S}:archived` | the listed threads, not archived or archived |
//! | `P:owner:{S}:open:agent:A`, `P:owner:{S}:archived:agent:A` | likewise, those whose latest run ran agent `A` |
//!
//! A member is `<last run, ms, 20 digits>:<thread id>\x1f<agent>`, the thread id being
//! its key's part after the owner's scope: byte order is the list's order read
//! backwards (the time is zero-padded, the ids have one length, and `\x1f` sorts below
//! every byte of an id), and every member is unique, so that threads ending in the same
//! millisecond still have one place each. A cursor `(ms, key)` is the bound
//! `(<ms>:<id>` and a page is one `ZREVRANGEBYLEX set (<bound> - LIMIT 0 <limit>` per
//! set: O(log n + limit), from the first page to the last, ties or not. The filters
//! pick the sets, which never share a member, and the page merges their heads: no
//! agent, the owner's `open` set (and `archived`, archived ones too); agents `[a, b]`,
//! `a`'s and `b`'s `open` sets (and `archived`): at most four for CopilotKit's lists
//! (the agent asked for and the default agent). `P:listed` (a hash, thread key → its
//! member) finds a thread's member when it changes (a new run of another agent, an
//! archive or restore, a run ending), is forgotten or evicted.
//!
//! A thread's keys expire when it is idle; its members stay until a list reads them,
//! finds its record gone and removes them from every set (the agent is in the member).
//! One call of the list script reads at most its limit and [`LIST_SCAN_BUDGET`]
//! entries more, then says where it stopped; the store calls it again from there, so
//! Redis is never held longer than that, and each expired member is read once. The
//! sets' time to live follows their threads' (it only grows), so an owner whose threads
//! all expired leaves nothing behind but `P:listed` fields, which go with the global
//! `P:threads` entries when the thread cap forgets them.

use std::collections::HashSet;

use agui_sdk_agent::runs::{
    LiveRun, RunKey, RunStoreError, ThreadEntry, ThreadKey, ThreadQuery, ThreadRecord,
    ThreadSummary, ThreadUpdate,
};
use bytes::Bytes;
use redis::Value;

use crate::{int, protocol, text, unavailable, RedisRunStore};

/// KEYS thread_meta thread_hist thread_ids; ARGV prefix. -> {0} for no thread, else
/// {1, live key or '', live run id or '', n_hist, hist entries..., ids...}. A live run
/// that is no longer running (its keys expired) does not count.
pub(crate) const THREAD: &str = r#"
if redis.call('EXISTS', KEYS[1]) == 0 then return {0} end
local live = redis.call('HGET', KEYS[1], 'live')
local run = redis.call('HGET', KEYS[1], 'live_run')
if live and redis.call('HGET', ARGV[1] .. ':{' .. live .. '}:meta', 'status') ~= 'running' then
  live = false
end
local hist = redis.call('LRANGE', KEYS[2], 0, -1)
local out = {1, live or '', live and run or '', #hist}
for _, h in ipairs(hist) do out[#out + 1] = h end
for _, id in ipairs(redis.call('SMEMBERS', KEYS[3])) do out[#out + 1] = id end
return out
"#;

/// The Lua helpers of the owners' list indexes, put in front of every script that
/// writes them (see the [module docs](self)).
macro_rules! index_lua {
    () => {
        r#"
local function ix_sets(prefix, key, agent)
  local o = prefix .. ':owner:{' .. string.match(key, '^([^.]*)') .. '}'
  return {o .. ':open', o .. ':archived', o .. ':open:agent:' .. agent,
    o .. ':archived:agent:' .. agent}
end
local function ix_keep(sets, ttl)
  if not ttl or ttl <= 0 then return end
  for _, s in ipairs(sets) do
    if redis.call('TTL', s) < ttl then redis.call('EXPIRE', s, ttl) end
  end
end
local function ix_unlist(prefix, key)
  local m = redis.call('HGET', prefix .. ':listed', key)
  if not m then return end
  for _, s in ipairs(ix_sets(prefix, key, string.match(m, '\031(.*)$'))) do
    redis.call('ZREM', s, m)
  end
  redis.call('HDEL', prefix .. ':listed', key)
end
local function ix_list(prefix, key, ms, agent, archived, ttl)
  ix_unlist(prefix, key)
  local m = string.format('%020d', ms) .. ':' .. string.match(key, '^[^.]*%.?(.*)$') .. '\031' ..
    agent
  local sets = ix_sets(prefix, key, agent)
  local at = archived and 1 or 0
  redis.call('ZADD', sets[1 + at], 0, m)
  redis.call('ZADD', sets[3 + at], 0, m)
  redis.call('HSET', prefix .. ':listed', key, m)
  ix_keep(sets, ttl)
end
local function ix_touch(prefix, key, ttl)
  local m = redis.call('HGET', prefix .. ':listed', key)
  if m then ix_keep(ix_sets(prefix, key, string.match(m, '\031(.*)$')), ttl) end
end
"#
    };
}

/// Most index entries one call of [`LIST_THREADS`] reads beyond its limit (threads
/// filtered out, or found expired and removed) before it stops and says where it
/// stopped; the store then calls it again from there. One call of the script is
/// bounded so, whatever the index holds.
pub(crate) const LIST_SCAN_BUDGET: usize = 512;

/// ARGV prefix scope limit include_archived after budget n_agents agents... -> {reads,
/// more, resume, then {key, thread_id, agent, created_at, updated_at, last_run_at,
/// name, named, archived}...}: the threads after the index member `after` ('' for the
/// start) in the list's order, merged from the sets the filters name. `reads` counts
/// the index entries read, `more` is 1 when the scan budget ran out first, and
/// `resume` is the last member read (where the next call starts). Threads whose keys
/// expired leave every index set.
pub(crate) const LIST_THREADS: &str = concat!(
    index_lua!(),
    r#"
local prefix, limit, all = ARGV[1], tonumber(ARGV[3]), ARGV[4] == '1'
local budget = tonumber(ARGV[6])
local o = prefix .. ':owner:{' .. ARGV[2] .. '}'
local flavours = all and {':open', ':archived'} or {':open'}
local sets, wanted = {}, {}
local n_agents = tonumber(ARGV[7])
for i = 1, n_agents do wanted[ARGV[7 + i]] = true end
for _, f in ipairs(flavours) do
  if n_agents == 0 then
    sets[#sets + 1] = o .. f
  else
    local named = {}
    for i = 1, n_agents do
      local a = ARGV[7 + i]
      if not named[a] then
        named[a] = true
        sets[#sets + 1] = o .. f .. ':agent:' .. a
      end
    end
  end
end
local start = ARGV[5] == '' and '+' or '(' .. ARGV[5]
-- Byte order (Lua's own comparison follows the server's collation).
local function greater(a, b)
  for i = 1, math.min(#a, #b) do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x > y end
  end
  return #a > #b
end
local bufs, pos, last, done = {}, {}, {}, {}
for i = 1, #sets do bufs[i], pos[i], done[i] = {}, 1, false end
local out = {}
local found, scanned, reads, resume, more = 0, 0, 0, '', 0
while found < limit do
  if scanned >= budget then more = 1 break end
  -- The greatest head of the sets, each read from its own place on, a page at a time.
  local best
  for i = 1, #sets do
    if pos[i] > #bufs[i] and not done[i] then
      local need = math.min(limit - found, budget - scanned)
      bufs[i] = redis.call('ZREVRANGEBYLEX', sets[i], last[i] and ('(' .. last[i]) or start, '-',
        'LIMIT', 0, need)
      pos[i] = 1
      reads = reads + #bufs[i]
      if #bufs[i] < need then done[i] = true end
    end
    if pos[i] <= #bufs[i] and (not best or greater(bufs[i][pos[i]], bufs[best][pos[best]])) then
      best = i
    end
  end
  if not best then break end
  local m = bufs[best][pos[best]]
  pos[best] = pos[best] + 1
  last[best] = m
  scanned = scanned + 1
  resume = m
  local id, agent = string.match(m, '^%d+:([^\031]*)\031(.*)$')
  local key = ARGV[2] .. '.' .. id
  local f = redis.call('HMGET', prefix .. ':th:{' .. key .. '}:meta', 'thread_id', 'agent',
    'created_at', 'updated_at', 'last_run_at', 'name', 'archived')
  if not f[3] then
    -- Its keys expired: it leaves every index set.
    for _, s in ipairs(ix_sets(prefix, key, agent)) do redis.call('ZREM', s, m) end
    if redis.call('HGET', prefix .. ':listed', key) == m then
      redis.call('HDEL', prefix .. ':listed', key)
    end
  elseif (all or f[7] ~= '1') and (n_agents == 0 or wanted[f[2] or '']) then
    local named = f[6] and '1' or '0'
    for _, v in ipairs({key, f[1] or '', f[2] or '', f[3], f[4] or f[3], f[5] or f[3],
        f[6] or '', named, f[7] or '0'}) do out[#out + 1] = v end
    found = found + 1
  end
end
local reply = {reads, more, resume}
for _, v in ipairs(out) do reply[#reply + 1] = v end
return reply
"#
);

/// KEYS meta hist ids; ARGV prefix thread_key. -> 1 when the thread was held.
pub(crate) const FORGET_THREAD: &str = concat!(
    index_lua!(),
    r#"
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('DEL', KEYS[2], KEYS[3])
ix_unlist(ARGV[1], ARGV[2])
local live = redis.call('HGET', KEYS[1], 'live')
if live and redis.call('HGET', ARGV[1] .. ':{' .. live .. '}:meta', 'status') == 'running' then
  redis.call('HDEL', KEYS[1], 'created_at', 'updated_at', 'hist_events')
else
  redis.call('DEL', KEYS[1])
  redis.call('ZREM', ARGV[1] .. ':threads', ARGV[2])
end
return 1
"#
);

/// KEYS meta; ARGV thread_key name named archived (''/'0'/'1') prefix. -> the summary's
/// fields (as one of LIST_THREADS'), or {} for a thread not listed. A change of the
/// archived flag moves the thread between the index sets.
pub(crate) const UPDATE_THREAD: &str = concat!(
    index_lua!(),
    r#"
if not redis.call('HGET', KEYS[1], 'created_at') then return {} end
if ARGV[3] == '1' then redis.call('HSET', KEYS[1], 'name', ARGV[2]) end
if ARGV[4] ~= '' then redis.call('HSET', KEYS[1], 'archived', ARGV[4]) end
local t = redis.call('TIME')
redis.call('HSET', KEYS[1], 'updated_at', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
local m = redis.call('HMGET', KEYS[1], 'thread_id', 'agent', 'created_at', 'updated_at',
  'last_run_at', 'name', 'archived')
if ARGV[4] ~= '' then
  ix_list(ARGV[5], ARGV[1], tonumber(m[5] or m[3]), m[2] or '', ARGV[4] == '1',
    redis.call('TTL', KEYS[1]))
end
local named = m[6] and '1' or '0'
return {ARGV[1], m[1] or '', m[2] or '', m[3], m[4] or m[3], m[5] or m[3], m[6] or '', named,
  m[7] or '0'}
"#
);

/// The fields of a thread summary in a script's answer.
const SUMMARY_FIELDS: usize = 9;

/// A thread summary from `SUMMARY_FIELDS` script answers.
fn summary_from(c: &[Value]) -> Option<ThreadSummary> {
    let num = |v: &Value| int(v).unwrap_or(0).max(0) as u64;
    Some(ThreadSummary {
        key: ThreadKey::from_text(&text(c.first()?)?),
        thread_id: text(c.get(1)?)?,
        agent: text(c.get(2)?)?,
        created_at_ms: num(c.get(3)?),
        updated_at_ms: num(c.get(4)?),
        last_run_at_ms: num(c.get(5)?),
        name: (text(c.get(7)?)? == "1").then(|| text(c.get(6)?)).flatten(),
        archived: text(c.get(8)?)? == "1",
    })
}

impl RedisRunStore {
    pub(crate) async fn do_list_threads(
        &self,
        scope: &str,
        query: &ThreadQuery,
    ) -> Result<Vec<ThreadSummary>, RunStoreError> {
        let mut out = Vec::new();
        if query.limit == 0 {
            return Ok(out);
        }
        let mut con = self.con.clone();
        // The cursor as an index member's bound: the members after it are the threads
        // after it in the list's order.
        let mut after = match &query.after {
            Some((ms, key)) => {
                let id = key
                    .as_str()
                    .split_once('.')
                    .map_or(key.as_str(), |(_, id)| id);
                format!("{ms:020}:{id}")
            }
            None => String::new(),
        };
        loop {
            let limit = query.limit - out.len();
            let mut call = self.scripts.list_threads.prepare_invoke();
            call.arg(&self.prefix)
                .arg(scope)
                .arg(limit)
                .arg(if query.include_archived { "1" } else { "0" })
                .arg(&after)
                .arg(limit + LIST_SCAN_BUDGET)
                .arg(query.agents.len());
            for a in &query.agents {
                call.arg(a);
            }
            let v: Vec<Value> = call.invoke_async(&mut con).await.map_err(unavailable)?;
            let (Some(reads), Some(more), Some(resume)) = (
                v.first().and_then(int),
                v.get(1).and_then(int),
                v.get(2).and_then(text),
            ) else {
                return Err(protocol("thread list"));
            };
            self.index_reads
                .fetch_add(reads.max(0) as u64, std::sync::atomic::Ordering::Relaxed);
            out.extend(v[3..].chunks_exact(SUMMARY_FIELDS).filter_map(summary_from));
            if more != 1 || out.len() >= query.limit {
                return Ok(out);
            }
            after = resume;
        }
    }

    pub(crate) async fn do_update_thread(
        &self,
        key: &ThreadKey,
        update: ThreadUpdate,
    ) -> Result<Option<ThreadSummary>, RunStoreError> {
        let (meta, _, _) = self.thread_keys(Some(key));
        let mut con = self.con.clone();
        let v: Vec<Value> = self
            .scripts
            .update_thread
            .key(meta)
            .arg(key.as_str())
            .arg(update.name.as_deref().unwrap_or(""))
            .arg(if update.name.is_some() { "1" } else { "0" })
            .arg(match update.archived {
                None => "",
                Some(true) => "1",
                Some(false) => "0",
            })
            .arg(&self.prefix)
            .invoke_async(&mut con)
            .await
            .map_err(unavailable)?;
        Ok(if v.is_empty() { None } else { summary_from(&v) })
    }

    pub(crate) async fn do_forget_thread(&self, key: &ThreadKey) -> Result<bool, RunStoreError> {
        let (meta, hist, ids) = self.thread_keys(Some(key));
        let mut con = self.con.clone();
        let v: i64 = self
            .scripts
            .forget_thread
            .key(meta)
            .key(hist)
            .key(ids)
            .arg(&self.prefix)
            .arg(key.as_str())
            .invoke_async(&mut con)
            .await
            .map_err(unavailable)?;
        Ok(v == 1)
    }

    /// The keys of a thread: its record, its history, its message ids (for no thread,
    /// names no script reads).
    pub(crate) fn thread_keys(&self, thread: Option<&ThreadKey>) -> (String, String, String) {
        let t = thread.map(|t| t.as_str()).unwrap_or("-");
        let base = format!("{}:th:{{{}}}", self.prefix, t);
        (
            format!("{base}:meta"),
            format!("{base}:hist"),
            format!("{base}:ids"),
        )
    }

    /// How long a thread's keys live while it has a running run (seconds): its idle time
    /// to live past the longest a run's keys may stay unwritten.
    pub(crate) fn thread_ttl_running(&self) -> u64 {
        (self.limits.thread_idle_ttl + self.limits.safety_ttl)
            .as_secs()
            .max(1)
    }

    pub(crate) async fn do_thread(
        &self,
        key: &ThreadKey,
    ) -> Result<Option<ThreadRecord>, RunStoreError> {
        let (meta, hist, ids) = self.thread_keys(Some(key));
        let mut con = self.con.clone();
        let v: Vec<Value> = self
            .scripts
            .thread
            .key(meta)
            .key(hist)
            .key(ids)
            .arg(&self.prefix)
            .invoke_async(&mut con)
            .await
            .map_err(unavailable)?;
        match v.first().and_then(int) {
            Some(0) => return Ok(None),
            Some(1) => {}
            _ => return Err(protocol("thread")),
        }
        let live_key = v.get(1).and_then(text).unwrap_or_default();
        let live_run = v.get(2).and_then(text).unwrap_or_default();
        let n = v.get(3).and_then(int).unwrap_or(0).max(0) as usize;
        let rest = v.get(4..).unwrap_or_default();
        let mut history = Vec::with_capacity(n.min(rest.len()));
        for h in rest.iter().take(n) {
            let Value::BulkString(b) = h else {
                return Err(protocol("a history entry"));
            };
            // `count\n` then the events, one per line.
            let cut = b.iter().position(|c| *c == b'\n').unwrap_or(b.len());
            let events = Bytes::copy_from_slice(b.get(cut + 1..).unwrap_or_default());
            history.push(ThreadEntry::from_parts(events, Vec::new()));
        }
        let known_message_ids: HashSet<String> = rest.iter().skip(n).filter_map(text).collect();
        let live = (!live_key.is_empty()).then(|| LiveRun {
            key: RunKey::from_text(&live_key),
            run_id: live_run,
        });
        Ok(Some(ThreadRecord {
            history,
            live,
            known_message_ids: std::sync::Arc::new(known_message_ids),
        }))
    }
}
