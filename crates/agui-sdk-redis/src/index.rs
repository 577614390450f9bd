//! The thread index of [`RedisRunStore`]: the keys of a thread and the read of its
//! record. The writes (a thread run joining and leaving its thread) are part of the
//! create and append scripts, so each stays one atomic step.

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

/// KEYS owner; ARGV prefix limit include_archived after_ms after_key n_agents agents...
/// -> {key, thread_id, agent, created_at, updated_at, last_run_at, name, named,
/// archived}..., in the list's order (the owner's set by score, then member, both
/// descending), from after the cursor (`after_ms` '' for none); threads whose keys
/// expired leave the set.
pub(crate) const LIST_THREADS: &str = r#"
local out = {}
local found = 0
local limit = tonumber(ARGV[2])
local all = ARGV[3] == '1'
local max, after_ms, after_key = '+inf', nil, ARGV[5]
if ARGV[4] ~= '' then
  after_ms = tonumber(ARGV[4])
  max = ARGV[4]
end
local agents, any_agent = {}, tonumber(ARGV[6]) == 0
for i = 1, tonumber(ARGV[6]) do agents[ARGV[6 + i]] = true end
-- Read the set in pages from the cursor on: a list costs what it returns and what it
-- filters out or finds expired on the way, not the owner's whole set.
local offset = 0
local size = math.max(limit, 16)
while found < limit do
  local page = redis.call('ZREVRANGEBYSCORE', KEYS[1], max, '-inf', 'WITHSCORES', 'LIMIT',
    offset, size)
  if #page == 0 then break end
  local gone = 0
  for i = 1, #page, 2 do
    local k, score = page[i], tonumber(page[i + 1])
    -- Keys of one owner differ only in their hex part: byte order and collation agree.
    if not (after_ms and score == after_ms and k >= after_key) then
      local m = redis.call('HMGET', ARGV[1] .. ':th:{' .. k .. '}:meta', 'thread_id', 'agent',
        'created_at', 'updated_at', 'last_run_at', 'name', 'archived')
      if not m[3] then
        -- Its keys expired: it leaves the set (the next page starts that much earlier).
        redis.call('ZREM', KEYS[1], k)
        gone = gone + 1
      elseif (all or m[7] ~= '1') and (any_agent or agents[m[2] or '']) then
        local named = m[6] and '1' or '0'
        for _, v in ipairs({k, m[1] or '', m[2] or '', m[3], m[4] or m[3], m[5] or m[3],
            m[6] or '', named, m[7] or '0'}) do out[#out + 1] = v end
        found = found + 1
        if found == limit then break end
      end
    end
  end
  offset = offset + #page / 2 - gone
end
return out
"#;

/// KEYS meta hist ids owner; ARGV prefix thread_key. -> 1 when the thread was held.
pub(crate) const FORGET_THREAD: &str = r#"
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('DEL', KEYS[2], KEYS[3])
redis.call('ZREM', KEYS[4], ARGV[2])
local live = redis.call('HGET', KEYS[1], 'live')
if live and redis.call('HGET', ARGV[1] .. ':{' .. live .. '}:meta', 'status') == 'running' then
  redis.call('HDEL', KEYS[1], 'created_at', 'updated_at', 'hist_events')
else
  redis.call('DEL', KEYS[1])
  redis.call('ZREM', ARGV[1] .. ':threads', ARGV[2])
end
return 1
"#;

/// KEYS meta owner; ARGV thread_key name named archived (''/'0'/'1'). -> the summary's
/// fields (as one of LIST_THREADS'), or {} for a thread not listed.
pub(crate) const UPDATE_THREAD: &str = r#"
if not redis.call('HGET', KEYS[1], 'created_at') then return {} end
if ARGV[3] == '1' then redis.call('HSET', KEYS[1], 'name', ARGV[2]) end
if ARGV[4] ~= '' then redis.call('HSET', KEYS[1], 'archived', ARGV[4]) end
local t = redis.call('TIME')
redis.call('HSET', KEYS[1], 'updated_at', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
local m = redis.call('HMGET', KEYS[1], 'thread_id', 'agent', 'created_at', 'updated_at',
  'last_run_at', 'name', 'archived')
local named = m[6] and '1' or '0'
return {ARGV[1], m[1] or '', m[2] or '', m[3], m[4] or m[3], m[5] or m[3], m[6] or '', named,
  m[7] or '0'}
"#;

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
    /// The key of the sorted set of an owner's threads.
    fn owner_key(&self, scope: &str) -> String {
        format!("{}:owner:{{{}}}", self.prefix, scope)
    }

    pub(crate) async fn do_list_threads(
        &self,
        scope: &str,
        query: &ThreadQuery,
    ) -> Result<Vec<ThreadSummary>, RunStoreError> {
        if query.limit == 0 {
            return Ok(Vec::new());
        }
        let mut con = self.con.clone();
        let mut call = self.scripts.list_threads.key(self.owner_key(scope));
        call.arg(&self.prefix)
            .arg(query.limit)
            .arg(if query.include_archived { "1" } else { "0" });
        match &query.after {
            Some((ms, key)) => call.arg(ms).arg(key.as_str()),
            None => call.arg("").arg(""),
        };
        call.arg(query.agents.len());
        for a in &query.agents {
            call.arg(a);
        }
        let v: Vec<Value> = call.invoke_async(&mut con).await.map_err(unavailable)?;
        Ok(v.chunks_exact(SUMMARY_FIELDS)
            .filter_map(summary_from)
            .collect())
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
            .key(self.owner_key(key.scope()))
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
