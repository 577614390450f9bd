//! Reading SSE streams on several threads: one thread frames the stream (cheap, and in
//! order) into batches, and workers read the batches' events.
//! - `agui decode`: the calling thread frames; the workers also write the events' JSON
//!   Lines, and a writer thread puts the batches out in order.
//! - `agui verify` and `agui apply`: a thread of its own frames; the workers read each
//!   event ahead as a typed event, and the calling thread feeds them in order to the
//!   inbound pipeline.
//!
//! The output, the errors and the point where an error stops the output are those of
//! the one-thread path; memory stays bounded (a few batches in flight).

use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::sync::mpsc::{channel, sync_channel, Receiver, Sender, SyncSender};
use std::sync::{Arc, Mutex};

use agui_core::encoding::{sse, DecodeError, DecodeErrorKind, Encoding, EventDecoder, RawBody};
use agui_core::wire::de::UnknownKeys;
use agui_core::Event;

use crate::cmd::codec::RawInput;
use crate::io::{flush, stdout, CliError};

/// Events in one batch, and the data bytes after which a batch is sent anyway.
const BATCH_EVENTS: usize = 1024;
const BATCH_BYTES: usize = 1 << 20;

/// Framed events for a worker: their data, one after another, and where each is. A
/// batch's buffers go round: once its events are out, it goes back to the framer as the
/// token that lets it frame one more, so that no thread frees what another allocated
/// (which costs glibc's allocator more than the allocation itself).
struct Batch {
    seq: u64,
    data: Vec<u8>,
    /// Each event's data range in `data`, index and byte offset.
    events: Vec<(usize, usize, u64, u64)>,
    /// A framing error met after these events: the stream ends here.
    error: Option<String>,
    /// `agui decode`: the batch's JSON Lines, written by a worker.
    out: Vec<u8>,
}

impl Batch {
    /// An empty batch, its buffers allocated when first filled.
    fn empty() -> Batch {
        Batch {
            seq: 0,
            data: Vec::new(),
            events: Vec::new(),
            error: None,
            out: Vec::new(),
        }
    }

    /// Empties the batch for the events after `seq`, keeping its buffers.
    fn reuse(&mut self, seq: u64) {
        self.seq = seq;
        self.data.clear();
        self.data.reserve(BATCH_BYTES + 64 * 1024);
        self.events.clear();
        self.events.reserve(BATCH_EVENTS);
        self.error = None;
        self.out.clear();
    }
}

/// `in_flight` empty batches on a channel of that bound: the tokens the framer takes.
fn tokens(in_flight: usize) -> (SyncSender<Batch>, Receiver<Batch>) {
    let (tx, rx) = sync_channel::<Batch>(in_flight);
    for _ in 0..in_flight {
        let _ = tx.send(Batch::empty());
    }
    (tx, rx)
}

/// A batch with its JSON Lines written (in `batch.out`), the events it skipped (logged
/// as they are written, so that the log stops where the output stops), and the error
/// that stopped it (or its framing error).
struct Done {
    batch: Batch,
    skipped: Vec<DecodeError>,
    error: Option<String>,
}

fn work(_worker: usize, mut batch: Batch, _: &mut Vec<()>) -> Done {
    let mut out = std::mem::take(&mut batch.out);
    out.reserve(batch.data.len() + batch.data.len() / 8);
    let mut skipped = Vec::new();
    let mut error = None;
    for &(start, end, index, offset) in &batch.events {
        match sse::decode_data(&batch.data[start..end], index, offset) {
            Ok(ev) => {
                ev.write_json(&mut out);
                out.push(b'\n');
            }
            Err(e) if matches!(e.kind, DecodeErrorKind::UnknownEventType(_)) => skipped.push(e),
            Err(e) => {
                error = Some(e.to_string());
                break;
            }
        }
    }
    batch.out = out;
    let error = error.or_else(|| batch.error.take());
    Done {
        batch,
        skipped,
        error,
    }
}

/// What a worker gets back once its batch has been taken in: buffers it filled, to be
/// emptied (their contents freed on the thread that allocated them) and filled again.
type Returns<T> = Vec<Sender<T>>;

/// Starts `threads` workers applying `f` to each batch sent on the returned sender, and
/// sending what it gives on the returned receiver. `f` is given the worker's number and
/// its pool of what came back on its own channel (the third returned value). They end
/// once either side is closed.
fn spawn_workers<'scope, R: Send + 'scope, T: Send + 'scope>(
    scope: &'scope std::thread::Scope<'scope, '_>,
    threads: usize,
    in_flight: usize,
    f: fn(usize, Batch, &mut Vec<T>) -> R,
) -> (SyncSender<Batch>, Receiver<R>, Returns<T>) {
    let (work_tx, work_rx) = sync_channel::<Batch>(in_flight);
    let (done_tx, done_rx) = sync_channel::<R>(in_flight);
    let work_rx = Arc::new(Mutex::new(work_rx));
    let mut returns = Vec::with_capacity(threads);
    for worker in 0..threads {
        let (rx, tx) = (Arc::clone(&work_rx), done_tx.clone());
        let (back_tx, back_rx) = channel::<T>();
        returns.push(back_tx);
        scope.spawn(move || {
            let mut pool = Vec::new();
            loop {
                let next = match rx.lock() {
                    Ok(rx) => rx.recv(),
                    Err(_) => return,
                };
                let Ok(batch) = next else { return };
                pool.extend(back_rx.try_iter());
                if tx.send(f(worker, batch, &mut pool)).is_err() {
                    return;
                }
            }
        });
    }
    (work_tx, done_rx, returns)
}

/// Decodes the SSE stream `input` to JSON Lines on standard output with `threads`
/// workers (at least 1).
pub fn decode_sse(input: &mut dyn BufRead, threads: usize) -> Result<(), CliError> {
    let threads = threads.max(1);
    // Batches given out and not yet written: each takes a token, returned once written.
    let in_flight = 2 * threads + 2;
    let (token_tx, token_rx) = tokens(in_flight);
    std::thread::scope(|scope| {
        let (work_tx, done_rx, _) = spawn_workers::<_, ()>(scope, threads, in_flight, work);
        let writer = scope.spawn(move || write_in_order(done_rx, token_tx));
        let framed = frame(input, &work_tx, &token_rx);
        drop(work_tx);
        let written = writer
            .join()
            .unwrap_or_else(|_| Err(CliError::Malformed("a decoding thread failed".to_owned())));
        // An error in the output comes first: it is where the stream stopped.
        written.and(framed)
    })
}

/// Frames `input`, sending batches in order; stops early when the writer has stopped.
fn frame(
    input: &mut dyn BufRead,
    work: &SyncSender<Batch>,
    tokens: &Receiver<Batch>,
) -> Result<(), CliError> {
    let mut framer = Framer::new();
    // No token: the writer has stopped (an error was written, or output closed).
    while let Ok(batch) = tokens.recv() {
        let Some(batch) = framer.next_batch(input, batch)? else {
            break;
        };
        if work.send(batch).is_err() {
            break;
        }
    }
    Ok(())
}

/// Cuts an SSE stream into batches of framed events, in order.
struct Framer {
    dec: EventDecoder,
    seq: u64,
    /// The input has ended.
    finished: bool,
    /// The last batch has been given.
    done: bool,
}

impl Framer {
    fn new() -> Framer {
        Framer {
            dec: EventDecoder::new(Encoding::Sse),
            seq: 0,
            finished: false,
            done: false,
        }
    }

    /// The next batch, framed into `batch`'s buffers: full, or the last one (which may
    /// carry the framing error that ends the stream); `None` once the stream has ended.
    fn next_batch(
        &mut self,
        input: &mut dyn BufRead,
        mut batch: Batch,
    ) -> Result<Option<Batch>, CliError> {
        if self.done {
            return Ok(None);
        }
        batch.reuse(self.seq);
        self.seq += 1;
        loop {
            while let Some(raw) = self.dec.next_raw() {
                match raw {
                    Ok(raw) => {
                        if let RawBody::Json(data) = raw.body {
                            let start = batch.data.len();
                            batch.data.extend_from_slice(data);
                            batch
                                .events
                                .push((start, batch.data.len(), raw.index, raw.offset));
                        }
                    }
                    Err(e) => {
                        batch.error = Some(e.to_string());
                        self.done = true;
                        return Ok(Some(batch));
                    }
                }
                if batch.events.len() >= BATCH_EVENTS || batch.data.len() >= BATCH_BYTES {
                    return Ok(Some(batch));
                }
            }
            if self.finished {
                // The input has ended and the decoder has given all it had.
                self.done = true;
                return Ok((!batch.events.is_empty()).then_some(batch));
            }
            let chunk = input.fill_buf().map_err(CliError::io("reading input"))?;
            if chunk.is_empty() {
                self.dec.finish();
                self.finished = true;
                continue;
            }
            self.dec.push(chunk);
            let n = chunk.len();
            input.consume(n);
        }
    }
}

/// Writes the batches in order; stops at the first error, which it returns.
fn write_in_order(done: Receiver<Done>, tokens: SyncSender<Batch>) -> Result<(), CliError> {
    let mut out = stdout();
    let mut waiting: BTreeMap<u64, Done> = BTreeMap::new();
    let mut next = 0;
    for d in done {
        waiting.insert(d.batch.seq, d);
        while let Some(d) = waiting.remove(&next) {
            next += 1;
            d.skipped.iter().for_each(sse::warn_skipped);
            if let Err(e) = out.write_all(&d.batch.out) {
                if e.kind() == std::io::ErrorKind::BrokenPipe {
                    return Ok(());
                }
                return Err(CliError::io("writing standard output")(e));
            }
            if let Some(error) = d.error {
                flush(&mut out)?;
                return Err(CliError::Malformed(error));
            }
            let _ = tokens.try_send(d.batch);
        }
    }
    flush(&mut out)
}

/// A batch a worker read ahead: for each event, the typed event when it read as one
/// with no key the protocol does not define (what the inbound pipeline's fast path
/// reads, and all it would do with the text), or `None` to leave the text to the
/// pipeline.
struct ReadAhead {
    batch: Batch,
    events: Spent,
    /// The worker that read them, which takes them back to free them.
    worker: usize,
}

/// A worker's buffers for one batch: `typed` filled by the worker and emptied by the
/// pipeline, `dead` filled by the pipeline with the events it is done with and emptied
/// (freed) by the worker that read them.
#[derive(Default)]
struct Spent {
    typed: Vec<Option<Event>>,
    dead: Vec<Event>,
}

fn read_ahead(worker: usize, batch: Batch, pool: &mut Vec<Spent>) -> ReadAhead {
    let mut events = pool.pop().unwrap_or_default();
    events.dead.clear();
    events
        .typed
        .extend(batch.events.iter().map(|&(start, end, _, _)| {
            let mark = UnknownKeys::start();
            let decoded = Event::from_json_slice(&batch.data[start..end]);
            let unknown = mark.finish();
            match decoded {
                Ok(event) if !unknown => Some(event),
                _ => None,
            }
        }));
    ReadAhead {
        batch,
        events,
        worker,
    }
}

/// [`read_raw`](crate::cmd::codec::read_raw) for an SSE stream, framed on a thread of
/// its own, with `threads` workers reading the events ahead: `sink` gets every event in
/// order, as an already typed event where a worker could read it so, as its JSON text
/// otherwise. The inbound pipeline does with a typed event exactly what it does with
/// text that reads as one, so the result is the same; framing errors end the stream
/// where they are, as there.
///
/// `sink` may leave the events it is done with in the vector it is given: they go back
/// to the worker that read them, to be freed there.
pub fn read_sse(
    input: &mut (dyn BufRead + Send),
    threads: usize,
    mut sink: impl FnMut(RawInput<'_>, &mut Vec<Event>) -> Result<(), CliError>,
) -> Result<(), CliError> {
    let threads = threads.max(1);
    let in_flight = 2 * threads + 2;
    std::thread::scope(|scope| {
        // Owned here, so that leaving early (an error) closes them and the other
        // threads end.
        let (work_tx, done_rx, spent) = spawn_workers(scope, threads, in_flight, read_ahead);
        // Batches given out and not yet taken in: each takes a token, returned after.
        let (token_tx, token_rx) = tokens(in_flight);
        // Framing on its own thread: this one runs the pipeline only.
        let framer = scope.spawn(move || -> Result<u64, CliError> {
            let mut framer = Framer::new();
            let mut sent = 0;
            while let Ok(batch) = token_rx.recv() {
                let Some(batch) = framer.next_batch(input, batch)? else {
                    break;
                };
                if work_tx.send(batch).is_err() {
                    break;
                }
                sent += 1;
            }
            Ok(sent)
        });
        let mut next = 0u64;
        let mut waiting: BTreeMap<u64, ReadAhead> = BTreeMap::new();
        // Ends once the framer has ended and the workers have given all they read.
        for read in done_rx.iter() {
            waiting.insert(read.batch.seq, read);
            while let Some(read) = waiting.remove(&next) {
                next += 1;
                let ReadAhead {
                    mut batch,
                    mut events,
                    worker,
                } = read;
                let Spent { typed, dead } = &mut events;
                for (event, &(start, end, _, offset)) in typed.drain(..).zip(&batch.events) {
                    let body = match event {
                        Some(event) => RawBody::Event(event),
                        None => RawBody::Json(&batch.data[start..end]),
                    };
                    sink(
                        RawInput {
                            line: None,
                            offset,
                            body,
                        },
                        dead,
                    )?;
                }
                // A worker that has ended has nothing left to free: drop them here then.
                let _ = spent[worker].send(events);
                if let Some(error) = batch.error.take() {
                    return Err(CliError::Malformed(error));
                }
                let _ = token_tx.try_send(batch);
            }
        }
        let failed = || CliError::Malformed("a decoding thread failed".to_owned());
        let sent = framer.join().map_err(|_| failed())??;
        if next == sent {
            Ok(())
        } else {
            Err(failed())
        }
    })
}
