//! Reading SSE streams on several threads, with the core's unstable pieces for it
//! ([`parallel`], cargo feature `unstable-parallel`). The stream is read in pieces of
//! about 128 KiB, each cut just after its last blank line ([`last_boundary`]), which is
//! all the reading looks at; workers frame and read the pieces' events (a decoder
//! restarted at each piece's offset reads it exactly as one decoder reads the whole
//! stream); the results are taken in the stream's order, where the event indexes are
//! added up.
//! - `agui decode`: the calling thread reads; the workers also write the events' JSON
//!   Lines, and a writer thread puts them out in order.
//! - `agui verify` and `agui apply`: each worker (the calling thread is one) reads the
//!   next piece in turn, reads its events ahead as typed events, then, when the pieces
//!   before it have been taken in, feeds them to the inbound pipeline itself and frees
//!   them. No event crosses threads: handing each one to a pipeline thread, and back
//!   to be freed, cost more CPU than decoding it (a fifth more in all, on two cores).
//!
//! A stream with no blank line for longer than an event may be (one that is about to
//! fail, or that carries no events) is framed by the reader from there on, as the
//! one-thread path frames it, in batches of framed events.
//!
//! The output, the errors and the point where an error stops the output are those of
//! the one-thread path; memory stays bounded (a few pieces in flight, or one piece per
//! worker), and no thread frees what another allocated (which costs glibc's allocator
//! more than the allocation itself).

use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Condvar, Mutex};

use agui_sdk_core::encoding::sse::parallel::{self, decode_data, last_boundary, Recycler};
use agui_sdk_core::encoding::sse::SseDecoder;
use agui_sdk_core::encoding::{DecodeError, DecodeErrorKind, DecoderLimits, RawBody};
use agui_sdk_core::Event;

use crate::io::{flush, stdout, CliError, RawInput};

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
        // The decoder takes the piece's buffer, and the batch the decoder's.
        self.buf.truncate(self.len);
        parallel::restart_with(dec, self.offset, &mut self.buf);
        self.len = 0;
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
            let cut = last_boundary(&batch.buf[from..batch.len])
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
                batch.buf.truncate(batch.len);
                self.framer = Some(Framer::starting_with(self.offset, &mut batch.buf));
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
    /// A framer for the stream from byte `offset` on (a boundary, or the start), whose
    /// first bytes are `read` (taken; `read` gets an empty buffer).
    fn starting_with(offset: u64, read: &mut Vec<u8>) -> Framer {
        let mut dec = SseDecoder::new();
        parallel::restart_with(&mut dec, offset, read);
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

/// Starts `threads` workers writing the JSON Lines of each batch sent on the returned
/// sender (`work`), and sending what they give on the returned receiver. They end once
/// either side is closed.
fn spawn_writers<'scope>(
    scope: &'scope std::thread::Scope<'scope, '_>,
    threads: usize,
    in_flight: usize,
) -> (SyncSender<Batch>, Receiver<Done>) {
    let (work_tx, work_rx) = sync_channel::<Batch>(in_flight);
    let (done_tx, done_rx) = sync_channel::<Done>(in_flight);
    let work_rx = Arc::new(Mutex::new(work_rx));
    for _ in 0..threads {
        let (rx, tx) = (Arc::clone(&work_rx), done_tx.clone());
        scope.spawn(move || {
            let mut dec = SseDecoder::new();
            loop {
                let next = match rx.lock() {
                    Ok(rx) => rx.recv(),
                    Err(_) => return,
                };
                let Ok(batch) = next else { return };
                if tx.send(work(batch, &mut dec)).is_err() {
                    return;
                }
            }
        });
    }
    (work_tx, done_rx)
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

fn work(mut batch: Batch, dec: &mut SseDecoder) -> Done {
    let mut out = std::mem::take(&mut batch.out);
    out.reserve(batch.len + batch.len / 8);
    let (mut skipped, mut error) = (Vec::new(), None);
    let (events, framing) = batch.each_event(dec, |index, offset, data| {
        match decode_data(data, index, offset) {
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
        let (work_tx, done_rx) = spawn_writers(scope, threads, in_flight);
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
                    "skipped an SSE event of a type protocol 1.1 does not define: {e}"
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

/// An event read ahead: typed, or its JSON text's range in [`Spent::texts`].
enum Slot {
    Typed(Event),
    Text(usize, usize),
}

/// A worker's buffers for one batch, kept from batch to batch: the events it read
/// ahead, the texts of those it left to the pipeline, the events the pipeline is done
/// with, and the recycler whose strings the next events it reads reuse.
#[derive(Default)]
struct Spent {
    read: Vec<(u64, Slot)>,
    texts: Vec<u8>,
    dead: Vec<Event>,
    recycler: Recycler,
}

impl Spent {
    /// Reads the events of `batch` ahead: each as a typed event when it reads as one
    /// with no key the protocol does not define (what the inbound pipeline's fast path
    /// reads, and all it would do with the text), as its JSON text otherwise. Gives how
    /// many events the batch held and the framing error that ends it.
    fn read_ahead(
        &mut self,
        batch: &mut Batch,
        dec: &mut SseDecoder,
    ) -> (u64, Option<DecodeError>) {
        let Spent {
            read,
            texts,
            recycler,
            ..
        } = self;
        texts.clear();
        batch.each_event(dec, |_, offset, data| {
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
        })
    }

    /// Gives the events read ahead to `sink`, in order; stops at its first error.
    fn feed<S: Sink>(&mut self, sink: &mut S) -> Result<(), CliError> {
        let Spent {
            read, texts, dead, ..
        } = self;
        // After an error, the rest are dropped with the drain, on the thread that read
        // them.
        for (offset, slot) in read.drain(..) {
            let body = match slot {
                Slot::Typed(event) => RawBody::Event(event),
                Slot::Text(start, end) => RawBody::Json(&texts[start..end]),
            };
            let raw = RawInput {
                line: None,
                offset,
                body,
            };
            sink(raw, dead)?;
        }
        Ok(())
    }

    /// Takes back the events the pipeline is done with (their strings kept for reuse).
    fn recycle(&mut self) {
        for event in self.dead.drain(..) {
            self.recycler.recycle(event);
        }
    }
}

/// What [`read_sse`] gives each event to.
trait Sink: FnMut(RawInput<'_>, &mut Vec<Event>) -> Result<(), CliError> + Send {}
impl<S: FnMut(RawInput<'_>, &mut Vec<Event>) -> Result<(), CliError> + Send> Sink for S {}

/// The pipeline's side of [`read_sse`], taken by one worker at a time, in the batches'
/// order.
struct Turns<S> {
    /// The batch whose events go next.
    next: u64,
    /// The index of the next batch's first event.
    base: u64,
    /// What stopped the pipeline (an error, or a worker that failed): the workers
    /// leave once it is set.
    error: Option<CliError>,
    sink: S,
}

/// Stops the turns when a worker leaves by unwinding, so that no other worker waits
/// for a turn that will not come.
struct StopOnUnwind<'a, S>(&'a (Mutex<Turns<S>>, Condvar));

impl<S> Drop for StopOnUnwind<'_, S> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let (turns, turned) = self.0;
            if let Ok(mut t) = turns.lock() {
                t.error.get_or_insert_with(failed_thread);
            }
            turned.notify_all();
        }
    }
}

/// The reading side of [`read_sse`], taken by one worker at a time.
struct Source<'a> {
    reader: Reader,
    input: &'a mut (dyn BufRead + Send),
    /// Batches given out.
    sent: u64,
    /// The reading error that ended the stream.
    error: Option<CliError>,
}

/// One worker of [`read_sse`]: reads the next piece of the stream, reads its events
/// ahead, then, in its turn, gives them to the sink. A batch is read, decoded, taken in
/// and freed on one thread: handing each event to another thread to be taken in (and
/// back to be freed) cost more than decoding it.
fn take_in_turn<S: Sink>(source: &Mutex<Source<'_>>, turns: &(Mutex<Turns<S>>, Condvar)) {
    let _guard = StopOnUnwind(turns);
    let (lock, turned) = turns;
    let (mut dec, mut spent, mut batch) = (SseDecoder::new(), Spent::default(), Batch::empty());
    loop {
        batch = {
            let Ok(mut src) = source.lock() else { return };
            if src.error.is_some() {
                return;
            }
            let Source { reader, input, .. } = &mut *src;
            match reader.next(&mut **input, batch) {
                Ok(Some(next)) => {
                    src.sent += 1;
                    next
                }
                Ok(None) => return,
                Err(e) => {
                    src.error = Some(e);
                    return;
                }
            }
        };
        let (events, framing) = spent.read_ahead(&mut batch, &mut dec);
        let Ok(mut t) = lock.lock() else { return };
        while t.error.is_none() && t.next != batch.seq {
            t = match turned.wait(t) {
                Ok(t) => t,
                Err(_) => return,
            };
        }
        if t.error.is_some() {
            return;
        }
        let fed = spent.feed(&mut t.sink);
        let error = match (fed, framing) {
            (Err(e), _) => Some(e),
            (Ok(()), Some(mut e)) => {
                e.index += t.base;
                Some(CliError::Malformed(e.to_string()))
            }
            (Ok(()), None) => None,
        };
        let stop = error.is_some();
        if stop {
            t.error = error;
        } else {
            t.base += events;
            t.next += 1;
        }
        drop(t);
        turned.notify_all();
        spent.recycle();
        if stop {
            return;
        }
    }
}

/// `read_raw` (the `codec` command module's) for an SSE stream, on `threads` workers
/// that each read a piece of the stream in turn, frame and read its events ahead, and
/// give them to `sink` in the stream's order: as an already typed event where a worker
/// could read it so, as its JSON text otherwise. The inbound pipeline does with a typed
/// event exactly what it does with text that reads as one, so the result is the same;
/// framing errors end the stream where they are, as there.
///
/// The workers take turns at `sink`: each gives it the events of the piece it read,
/// then reads the next piece while another worker has its turn. `sink` may leave the
/// events it is done with in the vector it is given: they are freed (their strings
/// reused) by the worker that read them. Memory: one piece and its events per worker.
pub fn read_sse(
    input: &mut (dyn BufRead + Send),
    threads: usize,
    sink: impl FnMut(RawInput<'_>, &mut Vec<Event>) -> Result<(), CliError> + Send,
) -> Result<(), CliError> {
    let threads = threads.max(1);
    let turns = (
        Mutex::new(Turns {
            next: 0,
            base: 0,
            error: None,
            sink,
        }),
        Condvar::new(),
    );
    let source = Mutex::new(Source {
        reader: Reader::new(),
        input,
        sent: 0,
        error: None,
    });
    let failed = std::thread::scope(|scope| {
        let workers: Vec<_> = (1..threads)
            .map(|_| scope.spawn(|| take_in_turn(&source, &turns)))
            .collect();
        // This thread is a worker too.
        let here = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            take_in_turn(&source, &turns)
        }))
        .is_err();
        workers
            .into_iter()
            .fold(here, |failed, w| w.join().is_err() || failed)
    });
    let turns = turns.0.into_inner().map_err(|_| failed_thread())?;
    let source = source.into_inner().map_err(|_| failed_thread())?;
    // An error in the pipeline comes first: it is where the stream stopped.
    if let Some(e) = turns.error {
        return Err(e);
    }
    if failed {
        return Err(failed_thread());
    }
    if let Some(e) = source.error {
        return Err(e);
    }
    if turns.next == source.sent {
        Ok(())
    } else {
        Err(failed_thread())
    }
}

fn failed_thread() -> CliError {
    CliError::Malformed("a decoding thread failed".to_owned())
}
