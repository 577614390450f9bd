//! Reading SSE streams on several threads. A reader reads the stream in pieces of about
//! 1 MiB, each cut just after its last blank line ([`sse::last_boundary`]), which is all
//! it looks at; workers frame and read the pieces' events (a decoder restarted at each
//! piece's offset reads it exactly as one decoder reads the whole stream); the results
//! are put back in order, where the event indexes are added up.
//! - `agui decode`: the calling thread reads; the workers also write the events' JSON
//!   Lines, and a writer thread puts them out in order.
//! - `agui verify` and `agui apply`: a thread of its own reads; the workers read each
//!   event ahead as a typed event, and the calling thread feeds them in order to the
//!   inbound pipeline.
//!
//! A stream with no blank line for longer than an event may be (one that is about to
//! fail, or that carries no events) is framed by the reader from there on, as the
//! one-thread path frames it, in batches of framed events.
//!
//! The output, the errors and the point where an error stops the output are those of
//! the one-thread path; memory stays bounded (a few pieces in flight). Buffers go round:
//! a piece goes back to the reader as the token that lets it read one more, and the
//! events a worker read go back to it to be freed, so that no thread frees what another
//! allocated (which costs glibc's allocator more than the allocation itself).

use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::sync::mpsc::{channel, sync_channel, Receiver, Sender, SyncSender};
use std::sync::{Arc, Mutex};

use agui_sdk_core::encoding::sse::{self, SseDecoder};
use agui_sdk_core::encoding::{DecodeError, DecodeErrorKind, DecoderLimits, RawBody};
use agui_sdk_core::event::Recycler;
use agui_sdk_core::Event;

use crate::cmd::codec::RawInput;
use crate::io::{flush, stdout, CliError};

/// The bytes a piece is read up to (then cut at its last boundary).
const PIECE_BYTES: usize = 1 << 17;
/// Framed batches (the fallback): events in one batch, and the data bytes after which
/// a batch is sent anyway.
const BATCH_EVENTS: usize = 1024;
const BATCH_BYTES: usize = 1 << 20;
/// Read this far past a piece's start with no boundary, the stream is framed by the
/// reader from there on: no event can be that long.
const FRAME_AFTER: usize = DecoderLimits::DEFAULT_MAX_EVENT_SIZE + 2 * PIECE_BYTES;

/// Work for a worker: a piece of the stream, or (the fallback) events framed already.
struct Batch {
    seq: u64,
    /// Whether `buf` holds framed events (`events`) instead of a piece of the stream.
    framed: bool,
    /// A piece: the stream's bytes `buf[..len]` from byte `offset` on, cut at a
    /// boundary or at the end of the input. Framed: the events' data, one after another.
    /// Past `len`, `buf` holds whatever it held (it is read into, never read).
    buf: Vec<u8>,
    len: usize,
    offset: u64,
    /// Framed: each event's data range in `buf`, its index (counted from the batch's
    /// first event) and byte offset.
    events: Vec<(usize, usize, u64, u64)>,
    /// Framed: the framing error met after these events (index counted as above).
    error: Option<DecodeError>,
    /// `agui decode`: the batch's JSON Lines, written by a worker.
    out: Vec<u8>,
}

impl Batch {
    /// An empty batch, its buffers allocated when first filled.
    fn empty() -> Batch {
        Batch {
            seq: 0,
            framed: false,
            buf: Vec::new(),
            len: 0,
            offset: 0,
            events: Vec::new(),
            error: None,
            out: Vec::new(),
        }
    }

    /// Empties the batch for the work after `seq`, keeping its buffers.
    fn reuse(&mut self, seq: u64) {
        self.seq = seq;
        self.framed = false;
        self.len = 0;
        self.offset = 0;
        self.events.clear();
        self.error = None;
        self.out.clear();
    }

    /// Calls `f` with each event of the batch, in order: its index (counted from the
    /// batch's first event), byte offset and data; `f` returns `false` to stop. Gives
    /// the number of events the batch holds (skipped ones included) and the framing
    /// error that ends it.
    fn each_event(
        &mut self,
        dec: &mut SseDecoder,
        mut f: impl FnMut(u64, u64, &[u8]) -> bool,
    ) -> (u64, Option<DecodeError>) {
        if self.framed {
            for &(start, end, index, offset) in &self.events {
                if !f(index, offset, &self.buf[start..end]) {
                    break;
                }
            }
            return (self.events.len() as u64, self.error.take());
        }
        dec.restart_at(self.offset);
        dec.push(&self.buf[..self.len]);
        dec.finish();
        while let Some(frame) = dec.next_frame() {
            match frame {
                Ok(frame) => {
                    if !f(frame.index, frame.offset, frame.data) {
                        break;
                    }
                }
                Err(e) => return (dec.events_seen(), Some(e)),
            }
        }
        (dec.events_seen(), None)
    }
}

/// `in_flight` empty batches on a channel of that bound: the tokens the reader takes.
fn tokens(in_flight: usize) -> (SyncSender<Batch>, Receiver<Batch>) {
    let (tx, rx) = sync_channel::<Batch>(in_flight);
    for _ in 0..in_flight {
        let _ = tx.send(Batch::empty());
    }
    (tx, rx)
}

/// Reads the stream into pieces cut at boundaries, in order (or, past a stretch with
/// no boundary, into framed batches).
struct Reader {
    seq: u64,
    /// The stream offset of the next piece.
    offset: u64,
    /// Bytes read past the last cut: the start of the next piece.
    carry: Vec<u8>,
    /// The input has ended.
    eof: bool,
    /// The last batch has been given.
    done: bool,
    /// The fallback: framing here, from the point where it started.
    framer: Option<Framer>,
}

impl Reader {
    fn new() -> Reader {
        Reader {
            seq: 0,
            offset: 0,
            carry: Vec::new(),
            eof: false,
            done: false,
            framer: None,
        }
    }

    /// The next piece (or framed batch), read into `batch`'s buffers; `None` once the
    /// stream has ended.
    fn next(
        &mut self,
        input: &mut dyn BufRead,
        mut batch: Batch,
    ) -> Result<Option<Batch>, CliError> {
        if self.done {
            return Ok(None);
        }
        batch.reuse(self.seq);
        if let Some(framer) = &mut self.framer {
            let next = framer.next_batch(input, batch)?;
            self.done = next.is_none();
            self.seq += 1;
            return Ok(next);
        }
        batch.offset = self.offset;
        let mut want = PIECE_BYTES.max(self.carry.len() + PIECE_BYTES / 4);
        if batch.buf.len() < want {
            batch.buf.resize(want, 0);
        }
        batch.buf[..self.carry.len()].copy_from_slice(&self.carry);
        batch.len = self.carry.len();
        self.carry.clear();
        // `buf[..searched]` holds no boundary (but where it ends).
        let mut searched = 0usize;
        loop {
            while batch.len < want && !self.eof {
                match input.read(&mut batch.buf[batch.len..want]) {
                    Ok(0) => self.eof = true,
                    Ok(n) => batch.len += n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(CliError::io("reading input")(e)),
                }
            }
            if self.eof {
                // The rest of the stream is the last piece.
                self.done = true;
                self.seq += 1;
                return Ok((batch.len > 0).then_some(batch));
            }
            // Only what was read since: with the two bytes before it, which tell
            // whether a line feed there ends an empty line (the positions before them
            // were looked at with all they needed).
            let from = searched.saturating_sub(2);
            let cut = sse::last_boundary(&batch.buf[from..batch.len])
                .filter(|&c| from == 0 || c > 2)
                .map(|c| from + c);
            searched = batch.len;
            if let Some(cut) = cut {
                self.carry.extend_from_slice(&batch.buf[cut..batch.len]);
                batch.len = cut;
                self.offset += cut as u64;
                self.seq += 1;
                return Ok(Some(batch));
            }
            if batch.len >= FRAME_AFTER {
                // No event can be that long: frame from here on, as one decoder would.
                let mut framer = Framer::starting_at(self.offset);
                framer.dec.push(&batch.buf[..batch.len]);
                self.framer = Some(framer);
                return self.next(input, batch);
            }
            want += PIECE_BYTES;
            if batch.buf.len() < want {
                batch.buf.resize(want, 0);
            }
        }
    }
}

/// Frames an SSE stream into batches of framed events, in order: the fallback for a
/// stream the reader cannot cut.
struct Framer {
    dec: SseDecoder,
    /// The input has ended.
    finished: bool,
    /// The last batch has been given.
    done: bool,
}

impl Framer {
    /// A framer for the stream from byte `offset` on (a boundary, or the start).
    fn starting_at(offset: u64) -> Framer {
        let mut dec = SseDecoder::new();
        dec.restart_at(offset);
        Framer {
            dec,
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
        batch.framed = true;
        batch.len = 0;
        batch.buf.clear();
        let first = self.dec.events_seen();
        loop {
            while let Some(frame) = self.dec.next_frame() {
                match frame {
                    Ok(frame) => {
                        let start = batch.buf.len();
                        batch.buf.extend_from_slice(frame.data);
                        let end = batch.buf.len();
                        batch
                            .events
                            .push((start, end, frame.index - first, frame.offset));
                    }
                    Err(mut e) => {
                        e.index -= first;
                        batch.error = Some(e);
                        self.done = true;
                        return Ok(Some(batch));
                    }
                }
                if batch.events.len() >= BATCH_EVENTS || batch.buf.len() >= BATCH_BYTES {
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

/// What a worker gets back once its batch has been taken in: buffers it filled, to be
/// emptied (their contents freed on the thread that allocated them) and filled again.
type Returns<T> = Vec<Sender<T>>;

/// Starts `threads` workers applying `f` to each batch sent on the returned sender, and
/// sending what it gives on the returned receiver. `f` is given the worker's number, its
/// decoder, and its pool of what came back on its own channel (the third returned
/// value). They end once either side is closed.
fn spawn_workers<'scope, R: Send + 'scope, T: Send + 'scope>(
    scope: &'scope std::thread::Scope<'scope, '_>,
    threads: usize,
    in_flight: usize,
    f: fn(usize, Batch, &mut SseDecoder, &mut Vec<T>) -> R,
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
            let (mut dec, mut pool) = (SseDecoder::new(), Vec::new());
            loop {
                let next = match rx.lock() {
                    Ok(rx) => rx.recv(),
                    Err(_) => return,
                };
                let Ok(batch) = next else { return };
                pool.extend(back_rx.try_iter());
                if tx.send(f(worker, batch, &mut dec, &mut pool)).is_err() {
                    return;
                }
            }
        });
    }
    (work_tx, done_rx, returns)
}

/// A batch with its JSON Lines written (in `batch.out`), how many events it held, the
/// events it skipped (logged as they are written, so that the log stops where the
/// output stops), and the error that stopped it. Indexes count from the batch's first
/// event.
struct Done {
    batch: Batch,
    events: u64,
    skipped: Vec<DecodeError>,
    error: Option<DecodeError>,
}

fn work(_worker: usize, mut batch: Batch, dec: &mut SseDecoder, _: &mut Vec<()>) -> Done {
    let mut out = std::mem::take(&mut batch.out);
    out.reserve(batch.len + batch.len / 8);
    let (mut skipped, mut error) = (Vec::new(), None);
    let (events, framing) = batch.each_event(dec, |index, offset, data| {
        match sse::decode_data(data, index, offset) {
            Ok(ev) => {
                ev.write_json(&mut out);
                out.push(b'\n');
                true
            }
            Err(e) if matches!(e.kind, DecodeErrorKind::UnknownEventType(_)) => {
                skipped.push(e);
                true
            }
            Err(e) => {
                error = Some(e);
                false
            }
        }
    });
    batch.out = out;
    Done {
        batch,
        events,
        skipped,
        error: error.or(framing),
    }
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
        let mut reader = Reader::new();
        let read = (|| {
            // No token: the writer has stopped (an error was written, or output closed).
            while let Ok(batch) = token_rx.recv() {
                let Some(batch) = reader.next(input, batch)? else {
                    break;
                };
                if work_tx.send(batch).is_err() {
                    break;
                }
            }
            Ok(())
        })();
        drop(work_tx);
        let written = writer
            .join()
            .unwrap_or_else(|_| Err(CliError::Malformed("a decoding thread failed".to_owned())));
        // An error in the output comes first: it is where the stream stopped.
        written.and(read)
    })
}

/// Writes the batches in order; stops at the first error, which it returns.
fn write_in_order(done: Receiver<Done>, tokens: SyncSender<Batch>) -> Result<(), CliError> {
    let mut out = stdout();
    let mut waiting: BTreeMap<u64, Done> = BTreeMap::new();
    let (mut next, mut base) = (0, 0);
    for d in done {
        waiting.insert(d.batch.seq, d);
        while let Some(d) = waiting.remove(&next) {
            next += 1;
            for mut e in d.skipped {
                e.index += base;
                tracing::warn!(
                    event_index = e.index,
                    byte_offset = e.offset,
                    "skipped an SSE event of a type protocol 1.0 does not define: {e}"
                );
            }
            if let Err(e) = out.write_all(&d.batch.out) {
                if e.kind() == std::io::ErrorKind::BrokenPipe {
                    return Ok(());
                }
                return Err(CliError::io("writing standard output")(e));
            }
            if let Some(mut error) = d.error {
                error.index += base;
                flush(&mut out)?;
                return Err(CliError::Malformed(error.to_string()));
            }
            base += d.events;
            let _ = tokens.try_send(d.batch);
        }
    }
    flush(&mut out)
}

/// A batch a worker read ahead: for each event, its offset and the typed event when it
/// read as one with no key the protocol does not define (what the inbound pipeline's
/// fast path reads, and all it would do with the text), or its JSON text to leave to
/// the pipeline; how many events it held, and the framing error that ends it.
struct ReadAhead {
    batch: Batch,
    spent: Spent,
    /// The worker that read them, which takes them back to free them.
    worker: usize,
    events: u64,
    error: Option<DecodeError>,
}

/// An event read ahead: typed, or its JSON text's range in [`Spent::texts`].
enum Slot {
    Typed(Event),
    Text(usize, usize),
}

/// A worker's buffers for one batch: `read` filled by the worker and emptied by the
/// pipeline, `dead` filled by the pipeline with the events it is done with and emptied
/// by the worker that read them, into `recycler`, whose strings the next events it
/// reads reuse (or freed there).
#[derive(Default)]
struct Spent {
    read: Vec<(u64, Slot)>,
    texts: Vec<u8>,
    dead: Vec<Event>,
    recycler: Recycler,
}

fn read_ahead(
    worker: usize,
    mut batch: Batch,
    dec: &mut SseDecoder,
    pool: &mut Vec<Spent>,
) -> ReadAhead {
    let mut spent = pool.pop().unwrap_or_default();
    spent.texts.clear();
    let Spent {
        read,
        texts,
        dead,
        recycler,
    } = &mut spent;
    for event in dead.drain(..) {
        recycler.recycle(event);
    }
    let (events, error) = batch.each_event(dec, |_, offset, data| {
        let slot = match recycler.decode_known(data) {
            Some(event) => Slot::Typed(event),
            None => {
                let start = texts.len();
                texts.extend_from_slice(data);
                Slot::Text(start, texts.len())
            }
        };
        read.push((offset, slot));
        true
    });
    ReadAhead {
        batch,
        spent,
        worker,
        events,
        error,
    }
}

/// [`read_raw`](crate::cmd::codec::read_raw) for an SSE stream, read on a thread of its
/// own, with `threads` workers framing and reading the events ahead: `sink` gets every
/// event in order, as an already typed event where a worker could read it so, as its
/// JSON text otherwise. The inbound pipeline does with a typed event exactly what it
/// does with text that reads as one, so the result is the same; framing errors end the
/// stream where they are, as there.
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
        let (work_tx, done_rx, returns) = spawn_workers(scope, threads, in_flight, read_ahead);
        // Batches given out and not yet taken in: each takes a token, returned after.
        let (token_tx, token_rx) = tokens(in_flight);
        // Reading on its own thread: this one runs the pipeline only.
        let reader = scope.spawn(move || -> Result<u64, CliError> {
            let mut reader = Reader::new();
            let mut sent = 0;
            while let Ok(batch) = token_rx.recv() {
                let Some(batch) = reader.next(input, batch)? else {
                    break;
                };
                if work_tx.send(batch).is_err() {
                    break;
                }
                sent += 1;
            }
            Ok(sent)
        });
        let (mut next, mut base) = (0u64, 0u64);
        let mut waiting: BTreeMap<u64, ReadAhead> = BTreeMap::new();
        // Ends once the reader has ended and the workers have given all they read.
        for read in done_rx.iter() {
            waiting.insert(read.batch.seq, read);
            while let Some(read) = waiting.remove(&next) {
                next += 1;
                let ReadAhead {
                    batch,
                    mut spent,
                    worker,
                    events,
                    error,
                } = read;
                let Spent {
                    read, texts, dead, ..
                } = &mut spent;
                for (offset, slot) in read.drain(..) {
                    let body = match slot {
                        Slot::Typed(event) => RawBody::Event(event),
                        Slot::Text(start, end) => RawBody::Json(&texts[start..end]),
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
                // A worker that has ended has nothing left to free: dropped here then.
                let _ = returns[worker].send(spent);
                if let Some(mut error) = error {
                    error.index += base;
                    return Err(CliError::Malformed(error.to_string()));
                }
                base += events;
                let _ = token_tx.try_send(batch);
            }
        }
        let failed = || CliError::Malformed("a decoding thread failed".to_owned());
        let sent = reader.join().map_err(|_| failed())??;
        if next == sent {
            Ok(())
        } else {
            Err(failed())
        }
    })
}
