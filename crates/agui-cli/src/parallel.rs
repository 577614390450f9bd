//! `agui decode --from sse` on several threads: this thread frames the stream (cheap,
//! and in order), workers read batches of events and write their JSON Lines, and a
//! writer puts the batches out in order. The output, the errors and the point where an
//! error stops the output are those of the one-thread path; memory stays bounded (a few
//! batches in flight).

use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex};

use agui_core::encoding::{sse, DecodeError, DecodeErrorKind, Encoding, EventDecoder, RawBody};

use crate::io::{flush, stdout, CliError};

/// Events in one batch, and the data bytes after which a batch is sent anyway.
const BATCH_EVENTS: usize = 1024;
const BATCH_BYTES: usize = 1 << 20;

/// Framed events for a worker: their data, one after another, and where each is.
struct Batch {
    seq: u64,
    data: Vec<u8>,
    /// Each event's data range in `data`, index and byte offset.
    events: Vec<(usize, usize, u64, u64)>,
    /// A framing error met after these events: the stream ends here.
    error: Option<String>,
}

impl Batch {
    fn new(seq: u64) -> Batch {
        Batch {
            seq,
            data: Vec::with_capacity(BATCH_BYTES + 64 * 1024),
            events: Vec::with_capacity(BATCH_EVENTS),
            error: None,
        }
    }
}

/// A batch's JSON Lines, the events it skipped (logged as they are written, so that the
/// log stops where the output stops), and the error that stopped it (or its framing
/// error).
struct Done {
    seq: u64,
    out: Vec<u8>,
    skipped: Vec<DecodeError>,
    error: Option<String>,
}

fn work(batch: Batch) -> Done {
    let mut out = Vec::with_capacity(batch.data.len() + batch.data.len() / 8);
    let mut skipped = Vec::new();
    for &(start, end, index, offset) in &batch.events {
        match sse::decode_data(&batch.data[start..end], index, offset) {
            Ok(ev) => {
                ev.write_json(&mut out);
                out.push(b'\n');
            }
            Err(e) if matches!(e.kind, DecodeErrorKind::UnknownEventType(_)) => skipped.push(e),
            Err(e) => {
                return Done {
                    seq: batch.seq,
                    out,
                    skipped,
                    error: Some(e.to_string()),
                }
            }
        }
    }
    Done {
        seq: batch.seq,
        out,
        skipped,
        error: batch.error,
    }
}

/// Decodes the SSE stream `input` to JSON Lines on standard output with `threads`
/// workers (at least 1).
pub fn decode_sse(input: &mut dyn BufRead, threads: usize) -> Result<(), CliError> {
    let threads = threads.max(1);
    // Batches given out and not yet written: each takes a token, returned once written.
    let in_flight = 2 * threads + 2;
    let (token_tx, token_rx) = sync_channel::<()>(in_flight);
    for _ in 0..in_flight {
        let _ = token_tx.send(());
    }
    let (work_tx, work_rx) = sync_channel::<Batch>(in_flight);
    let work_rx = Arc::new(Mutex::new(work_rx));
    let (done_tx, done_rx) = sync_channel::<Done>(in_flight);
    std::thread::scope(|scope| {
        for _ in 0..threads {
            let (rx, tx) = (Arc::clone(&work_rx), done_tx.clone());
            scope.spawn(move || loop {
                let next = match rx.lock() {
                    Ok(rx) => rx.recv(),
                    Err(_) => return,
                };
                let Ok(batch) = next else { return };
                if tx.send(work(batch)).is_err() {
                    return;
                }
            });
        }
        // Only the workers hold the work queue now: once they stop, sending fails.
        drop(work_rx);
        drop(done_tx);
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
    tokens: &Receiver<()>,
) -> Result<(), CliError> {
    let mut dec = EventDecoder::new(Encoding::Sse);
    let mut seq = 0;
    let mut batch = Batch::new(seq);
    let send = |batch: Batch| -> bool {
        // No token: the writer has stopped (an error was written, or output closed).
        tokens.recv().is_ok() && work.send(batch).is_ok()
    };
    loop {
        let chunk = input.fill_buf().map_err(CliError::io("reading input"))?;
        let eof = chunk.is_empty();
        if eof {
            dec.finish();
        } else {
            dec.push(chunk);
            let n = chunk.len();
            input.consume(n);
        }
        while let Some(raw) = dec.next_raw() {
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
                    send(batch);
                    return Ok(());
                }
            }
            if batch.events.len() >= BATCH_EVENTS || batch.data.len() >= BATCH_BYTES {
                seq += 1;
                if !send(std::mem::replace(&mut batch, Batch::new(seq))) {
                    return Ok(());
                }
            }
        }
        if eof {
            if !batch.events.is_empty() {
                send(batch);
            }
            return Ok(());
        }
    }
}

/// Writes the batches in order; stops at the first error, which it returns.
fn write_in_order(done: Receiver<Done>, tokens: SyncSender<()>) -> Result<(), CliError> {
    let mut out = stdout();
    let mut waiting: BTreeMap<u64, Done> = BTreeMap::new();
    let mut next = 0;
    for d in done {
        waiting.insert(d.seq, d);
        while let Some(d) = waiting.remove(&next) {
            next += 1;
            d.skipped.iter().for_each(sse::warn_skipped);
            if let Err(e) = out.write_all(&d.out) {
                if e.kind() == std::io::ErrorKind::BrokenPipe {
                    return Ok(());
                }
                return Err(CliError::io("writing standard output")(e));
            }
            if let Some(error) = d.error {
                flush(&mut out)?;
                return Err(CliError::Malformed(error));
            }
            let _ = tokens.try_send(());
        }
    }
    flush(&mut out)
}
