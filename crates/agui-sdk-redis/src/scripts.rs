//! The Lua scripts of [`RedisRunStore`](crate::RedisRunStore)'s run keys: each write
//! is one script, so each operation is atomic (the thread index's reads and writes are
//! in [`index`](crate::index); the scripts that change a thread's place in its owner's
//! lists start with that module's Lua helpers).

/// KEYS meta leases thread_meta thread_hist thread_ids threads; ARGV key run_id thread_id
/// agent body_hash replica lease_ms fence safety_ttl thread_key prefix thread_ttl
/// max_threads. -> the record's fields for an existing run, {'BUSY', live run id},
/// {'FULL', threads held}, or 'NEW'.
pub(crate) const CREATE: &str = concat!(
    index_lua!(),
    r#"
if redis.call('EXISTS', KEYS[1]) == 1 then
  return redis.call('HGETALL', KEYS[1])
end
if ARGV[10] ~= '' then
  local live = redis.call('HGET', KEYS[3], 'live')
  if live and redis.call('HGET', ARGV[11] .. ':{' .. live .. '}:meta', 'status') == 'running' then
    return {'BUSY', redis.call('HGET', KEYS[3], 'live_run')}
  end
  if not live and redis.call('EXISTS', KEYS[3]) == 0 then
    -- A thread of this key whose keys expired may still be in its owner's lists.
    ix_unlist(ARGV[11], ARGV[10])
    -- A new thread: room for it among all threads, the longest idle forgotten first
    -- (those whose keys expired are the oldest; running ones are passed over).
    local max = tonumber(ARGV[13])
    local n = redis.call('ZCARD', KEYS[6])
    if n >= max then
      for _, k in ipairs(redis.call('ZRANGE', KEYS[6], 0, n - max + 31)) do
        if n < max then break end
        local th = ARGV[11] .. ':th:{' .. k .. '}'
        local l = redis.call('HGET', th .. ':meta', 'live')
        if not (l and redis.call('HGET', ARGV[11] .. ':{' .. l .. '}:meta', 'status') == 'running') then
          redis.call('DEL', th .. ':meta', th .. ':hist', th .. ':ids')
          ix_unlist(ARGV[11], k)
          redis.call('ZREM', KEYS[6], k)
          n = n - 1
        end
      end
      if n >= max then return {'FULL', n} end
    end
  end
  -- The previous run is in the history: its log is no longer read.
  local last = redis.call('HGET', KEYS[3], 'last')
  if last and last ~= ARGV[1] then
    local prev = ARGV[11] .. ':{' .. last .. '}'
    if redis.call('HGET', prev .. ':meta', 'status') ~= 'running' then
      redis.call('DEL', prev .. ':meta', prev .. ':log')
    end
  end
  local was = redis.call('HMGET', KEYS[3], 'agent', 'created_at', 'last_run_at', 'archived')
  redis.call('HSET', KEYS[3], 'live', ARGV[1], 'live_run', ARGV[2], 'thread_id', ARGV[3],
    'agent', ARGV[4], 'last', ARGV[1])
  for i = 3, 5 do redis.call('EXPIRE', KEYS[i], ARGV[12]) end
  -- A listed thread is listed under the agent of its latest run, as long as its keys live.
  if was[2] and was[1] ~= ARGV[4] then
    ix_list(ARGV[11], ARGV[10], tonumber(was[3] or was[2]), ARGV[4], was[4] == '1',
      tonumber(ARGV[12]))
  elseif was[2] then
    ix_touch(ARGV[11], ARGV[10], tonumber(ARGV[12]))
  end
  local t0 = redis.call('TIME')
  redis.call('ZADD', KEYS[6], tonumber(t0[1]) * 1000 + math.floor(tonumber(t0[2]) / 1000), ARGV[10])
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lease = tonumber(ARGV[7])
redis.call('HSET', KEYS[1], 'run_id', ARGV[2], 'thread_id', ARGV[3], 'agent', ARGV[4],
  'body_hash', ARGV[5], 'owner_replica', ARGV[6], 'status', 'running', 'head', 0,
  'oldest', 1, 'fence', ARGV[8], 'lease_ms', lease, 'lease_until', now + lease,
  'cancel', 0, 'created_at', now)
if ARGV[10] ~= '' then redis.call('HSET', KEYS[1], 'thread', ARGV[10]) end
redis.call('EXPIRE', KEYS[1], ARGV[9])
redis.call('ZADD', KEYS[2], now + lease, ARGV[1])
return 'NEW'
"#
);

/// KEYS meta log leases; ARGV key fence first max_events terminal retention channel
/// safety_ttl prefix entry entry_count thread_ttl max_history n_ids ids... events...
/// `max_events` and `max_history` are `events:bytes`.
pub(crate) const APPEND: &str = concat!(
    index_lua!(),
    r#"
local m = redis.call('HMGET', KEYS[1], 'fence', 'status', 'head', 'thread', 'bytes')
if not m[1] then return {-1, 0} end
if m[1] ~= ARGV[2] then return {-2, 0} end
if m[2] ~= 'running' then return {-3, 0} end
local head = tonumber(m[3])
if tonumber(ARGV[3]) ~= head + 1 then return {-4, head} end
if ARGV[10] ~= '' and not m[4] then return {-1, 0} end
local n_ids = tonumber(ARGV[14])
local max_ev, max_bytes = string.match(ARGV[4], '^(%d+):(%d+)$')
max_ev, max_bytes = tonumber(max_ev), tonumber(max_bytes)
local bytes = tonumber(m[5] or '0')
for i = 15 + n_ids, #ARGV do
  head = head + 1
  redis.call('XADD', KEYS[2], head .. '-0', 'e', ARGV[i])
  bytes = bytes + #ARGV[i]
end
-- The per-run caps: the oldest events go, by count and by bytes (one always stays).
local len = redis.call('XLEN', KEYS[2])
while len > max_ev or (bytes > max_bytes and len > 1) do
  local first = redis.call('XRANGE', KEYS[2], '-', '+', 'COUNT', 1)[1]
  bytes = bytes - #first[2][2]
  redis.call('XDEL', KEYS[2], first[1])
  len = len - 1
end
redis.call('HSET', KEYS[1], 'head', head, 'oldest', head - len + 1, 'bytes', bytes)
if ARGV[5] ~= '' then
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  redis.call('HSET', KEYS[1], 'status', ARGV[5], 'finished_at', now)
  redis.call('EXPIRE', KEYS[1], ARGV[6])
  redis.call('EXPIRE', KEYS[2], ARGV[6])
  redis.call('ZREM', KEYS[3], ARGV[1])
  if m[4] then
    local th = ARGV[9] .. ':th:{' .. m[4] .. '}'
    if redis.call('HGET', th .. ':meta', 'live') == ARGV[1] then
      redis.call('HDEL', th .. ':meta', 'live', 'live_run')
    end
    if ARGV[10] ~= '' then
      redis.call('RPUSH', th .. ':hist', ARGV[11] .. '\n' .. ARGV[10])
      local hist_ev, hist_bytes = string.match(ARGV[13], '^(%d+):(%d+)$')
      hist_ev, hist_bytes = tonumber(hist_ev), tonumber(hist_bytes)
      local total = redis.call('HINCRBY', th .. ':meta', 'hist_events', tonumber(ARGV[11]))
      local size = redis.call('HINCRBY', th .. ':meta', 'hist_bytes', #ARGV[10])
      while (total > hist_ev or size > hist_bytes) and redis.call('LLEN', th .. ':hist') > 1 do
        local old = redis.call('LPOP', th .. ':hist')
        local count, text = string.match(old, '^(%d+)\n(.*)$')
        total = redis.call('HINCRBY', th .. ':meta', 'hist_events', -tonumber(count))
        size = redis.call('HINCRBY', th .. ':meta', 'hist_bytes', -#text)
      end
      for i = 15, 14 + n_ids do redis.call('SADD', th .. ':ids', ARGV[i]) end
      local tt = redis.call('TIME')
      local now = tonumber(tt[1]) * 1000 + math.floor(tonumber(tt[2]) / 1000)
      redis.call('HSETNX', th .. ':meta', 'created_at', now)
      redis.call('HSET', th .. ':meta', 'updated_at', now, 'last_run_at', now)
      local t = redis.call('HMGET', th .. ':meta', 'agent', 'archived')
      ix_list(ARGV[9], m[4], now, t[1] or '', t[2] == '1', tonumber(ARGV[12]))
      redis.call('ZADD', ARGV[9] .. ':threads', now, m[4])
    end
    for _, k in ipairs({th .. ':meta', th .. ':hist', th .. ':ids'}) do
      redis.call('EXPIRE', k, ARGV[12])
    end
    ix_touch(ARGV[9], m[4], tonumber(ARGV[12]))
  end
else
  redis.call('EXPIRE', KEYS[1], ARGV[8])
  redis.call('EXPIRE', KEYS[2], ARGV[8])
end
redis.call('PUBLISH', ARGV[7], head)
return {1, head}
"#
);

pub(crate) const READ: &str = r#"
local m = redis.call('HMGET', KEYS[1], 'status', 'head', 'oldest')
if not m[1] then return {-1} end
local after = tonumber(ARGV[1])
local head = tonumber(m[2])
local oldest = tonumber(m[3])
if after + 1 < oldest and after < head then return {-5, oldest, head} end
local out = {1, m[1], head, oldest}
if after < head then
  local entries = redis.call('XRANGE', KEYS[2], (after + 1) .. '-0', '+', 'COUNT', ARGV[2])
  for _, e in ipairs(entries) do out[#out + 1] = e[2][2] end
end
return out
"#;

pub(crate) const HEARTBEAT: &str = r#"
local m = redis.call('HMGET', KEYS[1], 'fence', 'status', 'lease_ms', 'cancel')
if not m[1] then return -1 end
if m[1] ~= ARGV[2] then return -2 end
if m[2] == 'running' then
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local lease = tonumber(m[3])
  redis.call('HSET', KEYS[1], 'lease_until', now + lease)
  redis.call('ZADD', KEYS[2], now + lease, ARGV[1])
end
return tonumber(m[4])
"#;

pub(crate) const CANCEL: &str = r#"
local s = redis.call('HGET', KEYS[1], 'status')
if not s then return -1 end
if s ~= 'running' then return 0 end
redis.call('HSET', KEYS[1], 'cancel', 1)
redis.call('PUBLISH', ARGV[1], 'cancel')
return 1
"#;

pub(crate) const EXPIRED: &str = r#"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
return redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, ARGV[1])
"#;

pub(crate) const TAKE_OVER: &str = r#"
local m = redis.call('HMGET', KEYS[1], 'status', 'lease_until', 'head', 'lease_ms')
if (not m[1]) or m[1] ~= 'running' then
  redis.call('ZREM', KEYS[2], ARGV[1])
  return false
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if tonumber(m[2]) >= now then return false end
local lease = tonumber(m[4])
redis.call('HSET', KEYS[1], 'fence', ARGV[3], 'owner_replica', ARGV[2], 'lease_until', now + lease)
redis.call('ZADD', KEYS[2], now + lease, ARGV[1])
return tonumber(m[3])
"#;
