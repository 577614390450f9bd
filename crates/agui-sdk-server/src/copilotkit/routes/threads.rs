//! The thread routes of the runtime (`/threads…`), over the run store's thread index:
//! the threads of the request's owner, their messages, events and state, renaming,
//! archiving, restoring and deleting one, and clearing them. Subscribing is CopilotKit's
//! hosted mode's: it answers `422`, as CopilotKit's own runtime does without it.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;

use agui_sdk_core::semantics::Reducer;
use agui_sdk_core::types::Message;
use agui_sdk_core::Event;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use bytes::Bytes;
use serde_json::{json, Map, Value};

use super::{Failure, Runtime};
use crate::budget::RunPermit;
use crate::runs::{
    owner_scope, Owner, ThreadEntry, ThreadKey, ThreadQuery, ThreadSummary, ThreadUpdate,
};

/// Most threads one page of the list answers (and the page without a `limit`).
pub(super) const MAX_LIST: usize = 1000;

/// The owner a request is made by (`""`: no [`Owner`] was established for it).
pub(super) fn owner_of(owner: &Option<Extension<Owner>>) -> &str {
    owner.as_ref().map_or("", |o| o.0 .0.as_str())
}

/// Milliseconds since the epoch as an ISO 8601 UTC time (`2026-12-02T01:02:03.004Z`).
pub(super) fn iso_time(ms: u64) -> String {
    agui_sdk_core::semantics::interrupts::format_iso8601_millis(
        i64::try_from(ms).unwrap_or(i64::MAX),
    )
}

/// A thread's history applied by the core reducer: its messages and state. A history
/// the reducer refuses in part still shows what it could apply.
fn reduced(history: &[ThreadEntry]) -> Reducer {
    let mut reducer = Reducer::new(Vec::new(), None);
    for line in history.iter().flat_map(ThreadEntry::lines) {
        let applied = Event::from_json_slice(line)
            .map_err(|e| e.to_string())
            .and_then(|e| reducer.apply_owned(e).map_err(|e| e.to_string()));
        if let Err(err) = applied {
            tracing::debug!(error = %err, "a history event does not apply");
        }
    }
    reducer
}

/// Most bytes one chunk of a thread read's answer gathers: an answer is sent chunk by
/// chunk, so that a client that reads slowly (or not at all) holds the server to the
/// chunks in flight, not to a copy of the whole answer. An event or a message longer
/// than this is one chunk of its own.
pub(super) const READ_CHUNK: usize = 64 * 1024;

/// The bytes of `history`'s text.
fn history_bytes(history: &[ThreadEntry]) -> usize {
    history.iter().map(|e| e.events.len()).sum()
}

/// The bytes of `history`'s text that only this read holds (a copy the store made for
/// it), not shared with the store.
pub(super) fn unshared_bytes(history: &[ThreadEntry]) -> usize {
    history
        .iter()
        .filter(|e| e.events.is_unique())
        .map(|e| e.events.len())
        .sum()
}

/// A JSON answer whose body `chunks` yields, one chunk each time the connection takes
/// one (what `chunks` holds of the memory budget is let go with it).
fn json_stream(chunks: impl Iterator<Item = Bytes> + Send + 'static) -> Response {
    let body =
        axum::body::Body::from_stream(futures_util::stream::iter(chunks.map(Ok::<_, Infallible>)));
    (
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        body,
    )
        .into_response()
}

/// The chunks of `{"events":[…]}`: the stored lines as they are, joined by `,`, in
/// chunks of about [`READ_CHUNK`] bytes; a longer event is sent as the store's own
/// bytes, uncopied. Entries are let go as they are passed.
struct EventChunks {
    entries: std::vec::IntoIter<ThreadEntry>,
    /// What is left of the entry being read.
    rest: Bytes,
    /// A long event to send after the chunk before it.
    pending: Option<Bytes>,
    started: bool,
    any: bool,
    done: bool,
    _held: RunPermit,
}

impl EventChunks {
    fn new(history: Vec<ThreadEntry>, held: RunPermit) -> Self {
        EventChunks {
            entries: history.into_iter(),
            rest: Bytes::new(),
            pending: None,
            started: false,
            any: false,
            done: false,
            _held: held,
        }
    }

    /// The next stored event's JSON (a slice of the stored bytes).
    fn next_line(&mut self) -> Option<Bytes> {
        loop {
            if self.rest.is_empty() {
                self.rest = self.entries.next()?.events;
                continue;
            }
            let end = self
                .rest
                .iter()
                .position(|b| *b == b'\n')
                .unwrap_or(self.rest.len());
            let line = self.rest.split_to(end);
            if !self.rest.is_empty() {
                // The `\n` after it.
                let _ = self.rest.split_to(1);
            }
            if !line.is_empty() {
                return Some(line);
            }
        }
    }
}

impl Iterator for EventChunks {
    type Item = Bytes;

    fn next(&mut self) -> Option<Bytes> {
        if let Some(line) = self.pending.take() {
            return Some(line);
        }
        if self.done {
            return None;
        }
        let mut out = Vec::with_capacity(READ_CHUNK.min(16 * 1024));
        if !self.started {
            self.started = true;
            out.extend_from_slice(b"{\"events\":[");
        }
        loop {
            let Some(line) = self.next_line() else {
                out.extend_from_slice(b"]}");
                self.done = true;
                return Some(Bytes::from(out));
            };
            if self.any {
                out.push(b',');
            }
            self.any = true;
            if line.len() >= READ_CHUNK {
                // Sent as it is, after what is gathered (at least its `,` or the head).
                self.pending = Some(line);
                return Some(Bytes::from(out));
            }
            out.extend_from_slice(&line);
            if out.len() >= READ_CHUNK {
                return Some(Bytes::from(out));
            }
        }
    }
}

/// The chunks of `{"messages":[…]}`: each message written as it is reached (and let
/// go), in chunks of about [`READ_CHUNK`] bytes.
struct MessageChunks {
    messages: std::vec::IntoIter<Message>,
    started: bool,
    any: bool,
    done: bool,
    _held: RunPermit,
}

impl Iterator for MessageChunks {
    type Item = Bytes;

    fn next(&mut self) -> Option<Bytes> {
        if self.done {
            return None;
        }
        let mut out = Vec::new();
        if !self.started {
            self.started = true;
            out.extend_from_slice(b"{\"messages\":[");
        }
        for m in self.messages.by_ref() {
            let Some(summary) = serde_json::to_value(m).ok().and_then(message_summary) else {
                continue;
            };
            if self.any {
                out.push(b',');
            }
            self.any = true;
            if let Err(err) = agui_sdk_core::wire::write_canonical_to(&summary, &mut out) {
                // A `Value` writes to a `Vec` without failing; were it to, the answer
                // would not be JSON: end it here.
                tracing::error!(error = %err, "a thread message does not serialize");
                self.done = true;
                return Some(Bytes::from(out));
            }
            if out.len() >= READ_CHUNK {
                return Some(Bytes::from(out));
            }
        }
        out.extend_from_slice(b"]}");
        self.done = true;
        Some(Bytes::from(out))
    }
}

/// One body sent in slices of [`READ_CHUNK`] bytes, holding its part of the memory
/// budget until it is sent or dropped.
struct SliceChunks {
    rest: Bytes,
    _held: RunPermit,
}

impl Iterator for SliceChunks {
    type Item = Bytes;

    fn next(&mut self) -> Option<Bytes> {
        (!self.rest.is_empty()).then(|| {
            let n = self.rest.len().min(READ_CHUNK);
            self.rest.split_to(n)
        })
    }
}

impl Runtime {
    /// The history of the owner's thread `thread_id` (empty for an unknown thread).
    async fn history(&self, owner: &str, thread_id: &str) -> Result<Vec<ThreadEntry>, Failure> {
        let key = ThreadKey::derive(owner, thread_id);
        let thread = self
            .store
            .thread(&key)
            .await
            .map_err(|e| Self::store_failure("Failed to read thread", &e))?;
        Ok(thread.map(|t| t.history).unwrap_or_default())
    }

    /// Takes from the memory budget what a thread read holds while its answer is sent:
    /// the history's bytes the store does not share (a Redis store's copy; the
    /// in-memory store's history is shared, `Bytes` of its own) and `extra`.
    fn hold_read(
        &self,
        history: &[ThreadEntry],
        extra: usize,
        what: &str,
    ) -> Result<RunPermit, Failure> {
        let cost = unshared_bytes(history).saturating_add(extra);
        Ok(self.admission.hold_bytes(cost, what)?)
    }

    /// The agents whose threads a list for `agentId` shows: that one, and for
    /// `default`, the default agent too.
    fn agents_for(&self, asked: &str) -> Vec<String> {
        let mut agents = vec![asked.to_owned()];
        if let Some(d) = self.default_agent.as_deref().filter(|_| asked == "default") {
            agents.push(d.to_owned());
        }
        agents
    }
}

/// A thread as the thread routes show it.
fn thread_json(t: &ThreadSummary, agent: &str) -> Value {
    json!({
        "id": t.thread_id,
        "name": t.name,
        "agentId": agent,
        "organizationId": "",
        "createdById": "",
        "archived": t.archived,
        "createdAt": iso_time(t.created_at_ms),
        "updatedAt": iso_time(t.updated_at_ms),
        "lastRunAt": iso_time(t.last_run_at_ms),
    })
}

/// Where a page of the list ends: the last thread's last run time and key.
fn cursor_of(t: &ThreadSummary) -> String {
    format!("{}.{}", t.last_run_at_ms, t.key)
}

/// `GET /threads?agentId=…&limit=…&cursor=…&includeArchived=true`: the owner's threads
/// with an ended run, the one whose last run ended last first (a rename does not move
/// a thread), archived ones only with `includeArchived=true`; `nextCursor` names the
/// next page. The store answers from its ordered index: a page costs its own size.
pub(super) async fn list(
    State(rt): State<Arc<Runtime>>,
    owner: Option<Extension<Owner>>,
    Query(q): Query<HashMap<String, String>>,
) -> Result<Json<Value>, Failure> {
    let limit = match q.get("limit") {
        None => MAX_LIST,
        Some(l) => l
            .parse::<usize>()
            .ok()
            .filter(|n| *n > 0)
            .ok_or_else(|| {
                Failure::invalid_request(
                    StatusCode::BAD_REQUEST,
                    "limit must be a positive integer",
                )
            })?
            .min(MAX_LIST),
    };
    let agent = q.get("agentId").map(String::as_str);
    let archived_too = q.get("includeArchived").is_some_and(|v| v == "true");
    // The cursor is `{ms}.{key}` (the key holds a `.` of its own).
    let after = match q.get("cursor").filter(|c| !c.is_empty()) {
        None => None,
        Some(c) => Some(
            c.split_once('.')
                .and_then(|(ms, key)| Some((ms.parse::<u64>().ok()?, ThreadKey::from_text(key))))
                .ok_or_else(|| {
                    Failure::invalid_request(StatusCode::BAD_REQUEST, "invalid cursor")
                })?,
        ),
    };
    let scope = owner_scope(owner_of(&owner));
    let query = ThreadQuery {
        after,
        // One more than the page: whether there is a next one.
        limit: limit + 1,
        include_archived: archived_too,
        agents: agent.map(|a| rt.agents_for(a)).unwrap_or_default(),
    };
    let mut page = rt
        .store
        .list_threads(&scope, &query)
        .await
        .map_err(|e| Runtime::store_failure("Failed to list threads", &e))?;
    let more = page.len() > limit;
    page.truncate(limit);
    let next = more.then(|| page.last().map(cursor_of)).flatten();
    let threads: Vec<Value> = page
        .iter()
        .map(|t| thread_json(t, agent.unwrap_or(&t.agent)))
        .collect();
    Ok(Json(json!({ "threads": threads, "nextCursor": next })))
}

/// The body of a thread mutation: `{agentId, name?, archived?}` (only these keys).
fn mutation_body(bytes: &[u8], allow: &[&str]) -> Result<Map<String, Value>, Failure> {
    let bad = |m: String| Failure::invalid_request(StatusCode::BAD_REQUEST, m);
    let value: Value =
        serde_json::from_slice(bytes).map_err(|e| bad(format!("the body is not JSON: {e}")))?;
    let Value::Object(o) = value else {
        return Err(bad("the body must be an object with agentId".into()));
    };
    match o.get("agentId") {
        Some(Value::String(a)) if !a.is_empty() => {}
        _ => return Err(bad("agentId (a non-empty string) is required".into())),
    }
    if let Some(k) = o
        .keys()
        .find(|k| *k != "agentId" && !allow.contains(&k.as_str()))
    {
        return Err(bad(format!("unknown key '{k}'")));
    }
    Ok(o)
}

fn thread_not_found(thread_id: &str) -> Failure {
    Failure::new(
        StatusCode::NOT_FOUND,
        "Thread not found",
        "thread_not_found",
        format!("no thread '{thread_id}'"),
    )
}

/// Renames, archives or restores the owner's thread.
async fn update(
    rt: &Runtime,
    owner: &str,
    thread_id: &str,
    update: ThreadUpdate,
) -> Result<ThreadSummary, Failure> {
    rt.store
        .update_thread(&ThreadKey::derive(owner, thread_id), update)
        .await
        .map_err(|e| Runtime::store_failure("Failed to update thread", &e))?
        .ok_or_else(|| thread_not_found(thread_id))
}

/// `PATCH /threads/{id}` with `{agentId, name?, archived?}`: the thread after the change.
pub(super) async fn patch(
    State(rt): State<Arc<Runtime>>,
    owner: Option<Extension<Owner>>,
    Path(thread_id): Path<String>,
    headers: axum::http::HeaderMap,
    body: axum::body::Body,
) -> Result<Json<Value>, Failure> {
    let bytes = rt.body(&headers, body).await?;
    let o = mutation_body(&bytes, &["name", "archived"])?;
    let bad = |m: &str| Failure::invalid_request(StatusCode::BAD_REQUEST, m);
    let name = match o.get("name") {
        None => None,
        Some(Value::String(n)) if n.len() <= MAX_NAME => Some(n.clone()),
        Some(_) => return Err(bad("name must be a string of at most 256 bytes")),
    };
    let archived = match o.get("archived") {
        None => None,
        Some(Value::Bool(b)) => Some(*b),
        Some(_) => return Err(bad("archived must be true or false")),
    };
    let agent = o.get("agentId").and_then(Value::as_str).unwrap_or_default();
    let t = update(
        &rt,
        owner_of(&owner),
        &thread_id,
        ThreadUpdate { name, archived },
    )
    .await?;
    Ok(Json(thread_json(&t, agent)))
}

/// `POST /threads/{id}/archive` with `{agentId}`.
pub(super) async fn archive(
    State(rt): State<Arc<Runtime>>,
    owner: Option<Extension<Owner>>,
    Path(thread_id): Path<String>,
    headers: axum::http::HeaderMap,
    body: axum::body::Body,
) -> Result<Json<Value>, Failure> {
    let bytes = rt.body(&headers, body).await?;
    mutation_body(&bytes, &[])?;
    let change = ThreadUpdate {
        archived: Some(true),
        ..Default::default()
    };
    update(&rt, owner_of(&owner), &thread_id, change).await?;
    Ok(Json(json!({ "threadId": thread_id, "archived": true })))
}

/// `DELETE /threads/{id}` with `{agentId}`: the thread and its history are forgotten.
pub(super) async fn delete(
    State(rt): State<Arc<Runtime>>,
    owner: Option<Extension<Owner>>,
    Path(thread_id): Path<String>,
    headers: axum::http::HeaderMap,
    body: axum::body::Body,
) -> Result<Json<Value>, Failure> {
    let bytes = rt.body(&headers, body).await?;
    mutation_body(&bytes, &[])?;
    let key = ThreadKey::derive(owner_of(&owner), &thread_id);
    let held = rt
        .store
        .forget_thread(&key)
        .await
        .map_err(|e| Runtime::store_failure("Failed to delete thread", &e))?;
    if !held {
        return Err(thread_not_found(&thread_id));
    }
    Ok(Json(json!({ "threadId": thread_id, "deleted": true })))
}

/// `resource/request` through the single route: `params.path` (runtime-relative,
/// starting with one `/`, under `/threads`) and `params.httpMethod`, with the envelope's
/// `body`, answered as the REST route answers. Other paths are `404`.
pub(super) async fn resource(
    rt: Arc<Runtime>,
    owner: Option<Extension<Owner>>,
    path: &str,
    method: &str,
    body: Option<Vec<u8>>,
) -> Result<Response, Failure> {
    let bad = |m: &str| Failure::invalid_request(StatusCode::BAD_REQUEST, m);
    if !path.starts_with('/') || path.starts_with("//") {
        return Err(bad(
            "params.path must be runtime-relative and start with one '/'",
        ));
    }
    let uri: axum::http::Uri = path.parse().map_err(|_| bad("params.path is not a path"))?;
    let segments: Vec<&str> = uri.path().trim_matches('/').split('/').collect();
    let json_body = || {
        let mut headers = axum::http::HeaderMap::new();
        headers.insert(
            axum::http::header::CONTENT_TYPE,
            axum::http::HeaderValue::from_static("application/json"),
        );
        (
            headers,
            axum::body::Body::from(body.clone().unwrap_or_default()),
        )
    };
    let not_found = || {
        Failure::new(
            StatusCode::NOT_FOUND,
            "Not found",
            "not_found",
            format!("no resource {method} {}", uri.path()),
        )
    };
    let id = || Path(segments.get(1).map(|s| (*s).to_owned()).unwrap_or_default());
    let state = || State(rt.clone());
    Ok(match (method, segments.as_slice()) {
        ("GET", ["threads"]) => {
            let q = Query::<HashMap<String, String>>::try_from_uri(&uri)
                .map_err(|_| bad("params.path has an invalid query"))?;
            list(state(), owner, q).await?.into_response()
        }
        ("POST", ["threads", "clear"]) => clear(state(), owner).await?.into_response(),
        ("POST", ["threads", "subscribe"]) => hosted_only().await.into_response(),
        ("GET", ["threads", _, "messages"]) => messages(state(), owner, id()).await?,
        ("GET", ["threads", _, "events"]) => events(state(), owner, id()).await?,
        ("GET", ["threads", _, "state"]) => self::state(state(), owner, id()).await?,
        ("POST", ["threads", _, "archive"]) => {
            let (h, b) = json_body();
            archive(state(), owner, id(), h, b).await?.into_response()
        }
        ("PATCH", ["threads", _]) => {
            let (h, b) = json_body();
            patch(state(), owner, id(), h, b).await?.into_response()
        }
        ("DELETE", ["threads", _]) => {
            let (h, b) = json_body();
            delete(state(), owner, id(), h, b).await?.into_response()
        }
        _ => return Err(not_found()),
    })
}

/// The longest thread name taken.
pub(super) const MAX_NAME: usize = 256;

/// `GET /threads/{id}/messages`: the thread's messages as its history builds them,
/// each `{id, role, content?}`, an assistant's with `toolCalls: [{id, name, args}]`, a
/// tool message's with `toolCallId`. The whole history is reduced first (a later event
/// may change an earlier message); the messages are then written one by one as the
/// client reads. What the reduced messages hold (counted at 1.5 times the history's
/// text, with the history's bytes the store does not share) is taken from the memory
/// budget until the answer is sent: `503` `memory_budget` when it does not fit.
pub(super) async fn messages(
    State(rt): State<Arc<Runtime>>,
    owner: Option<Extension<Owner>>,
    Path(thread_id): Path<String>,
) -> Result<Response, Failure> {
    let history = rt.history(owner_of(&owner), &thread_id).await?;
    let reduced_cost = history_bytes(&history).saturating_mul(3) / 2;
    let held = rt.hold_read(&history, reduced_cost, "a thread's messages")?;
    let (messages, _) = reduced(&history).into_parts();
    drop(history);
    Ok(json_stream(MessageChunks {
        messages: messages.into_iter(),
        started: false,
        any: false,
        done: false,
        _held: held,
    }))
}

/// A message as the thread routes show it; `None` for an activity message.
fn message_summary(m: Value) -> Option<Value> {
    let Value::Object(m) = m else { return None };
    let role = m.get("role")?.as_str()?.to_owned();
    if role == "activity" {
        return None;
    }
    let mut out = Map::new();
    out.insert("id".into(), m.get("id")?.clone());
    out.insert("role".into(), json!(role));
    if let Some(c) = m.get("content").filter(|c| !c.is_null()) {
        out.insert("content".into(), c.clone());
    }
    if let Some(Value::Array(calls)) = m.get("toolCalls") {
        let calls: Vec<Value> = calls
            .iter()
            .map(|c| {
                json!({
                    "id": c.get("id"),
                    "name": c.pointer("/function/name"),
                    "args": c.pointer("/function/arguments"),
                })
            })
            .collect();
        out.insert("toolCalls".into(), Value::Array(calls));
    }
    if let Some(id) = m.get("toolCallId") {
        out.insert("toolCallId".into(), id.clone());
    }
    Some(Value::Object(out))
}

/// `GET /threads/{id}/events`: the thread's history, compacted, as `connect` replays it:
/// the stored text as it is, in one array, sent in chunks of about [`READ_CHUNK`] bytes
/// as the client reads. The history's bytes the store does not share (a Redis store's
/// copy) are taken from the memory budget until the answer is sent.
pub(super) async fn events(
    State(rt): State<Arc<Runtime>>,
    owner: Option<Extension<Owner>>,
    Path(thread_id): Path<String>,
) -> Result<Response, Failure> {
    let history = rt.history(owner_of(&owner), &thread_id).await?;
    let held = rt.hold_read(&history, 0, "a thread's events")?;
    Ok(json_stream(EventChunks::new(history, held)))
}

/// `GET /threads/{id}/state`: the state the thread's history leaves, or `null`. The
/// reduction is counted in the memory budget as a `messages` read is; the answer, while
/// it is sent, at its length.
pub(super) async fn state(
    State(rt): State<Arc<Runtime>>,
    owner: Option<Extension<Owner>>,
    Path(thread_id): Path<String>,
) -> Result<Response, Failure> {
    let history = rt.history(owner_of(&owner), &thread_id).await?;
    let reduced_cost = history_bytes(&history).saturating_mul(3) / 2;
    let folding = rt.hold_read(&history, reduced_cost, "a thread's state")?;
    let (_, state) = reduced(&history).into_parts();
    drop(history);
    let mut body = Vec::with_capacity(64);
    agui_sdk_core::wire::write_canonical_to(&json!({ "state": state }), &mut body).map_err(
        |e| {
            Failure::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "Failed to read thread",
                "store_error",
                format!("the thread's state does not serialize: {e}"),
            )
        },
    )?;
    drop((state, folding));
    let held = rt.admission.hold_bytes(body.len(), "a thread's state")?;
    Ok(json_stream(SliceChunks {
        rest: Bytes::from(body),
        _held: held,
    }))
}

/// `POST /threads/clear`: forgets the owner's threads (a running run goes on). `204`.
pub(super) async fn clear(
    State(rt): State<Arc<Runtime>>,
    owner: Option<Extension<Owner>>,
) -> Result<StatusCode, Failure> {
    let scope = owner_scope(owner_of(&owner));
    let query = ThreadQuery {
        include_archived: true,
        ..ThreadQuery::first(MAX_LIST)
    };
    loop {
        let threads = rt
            .store
            .list_threads(&scope, &query)
            .await
            .map_err(|e| Runtime::store_failure("Failed to clear threads", &e))?;
        if threads.is_empty() {
            return Ok(StatusCode::NO_CONTENT);
        }
        for t in threads {
            rt.store
                .forget_thread(&t.key)
                .await
                .map_err(|e| Runtime::store_failure("Failed to clear threads", &e))?;
        }
    }
}

/// Subscribing to threads: CopilotKit's hosted mode's.
pub(super) async fn hosted_only() -> Failure {
    Failure::new(
        StatusCode::UNPROCESSABLE_ENTITY,
        "Missing CopilotKitIntelligence configuration. Thread operations require CopilotKit's hosted mode.",
        "threads_unavailable",
        "subscribing to threads needs CopilotKit's hosted (intelligence) mode; this runtime serves SSE mode",
    )
}

#[cfg(test)]
mod tests {
    use super::iso_time;

    #[test]
    fn iso_times() {
        assert_eq!(iso_time(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso_time(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(iso_time(1_796_173_323_004), "2026-12-02T01:02:03.004Z");
    }
}
