//! The body of a 2xx response being decoded: bytes in, through the decoder and the
//! intake, events out; a resumable run re-attaches here when its connection drops.

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use agui_sdk_core::encoding::{DecoderLimits, EventDecoder, RawBody};
use agui_sdk_core::semantics::{InboundWarning, Intake};
use agui_sdk_core::{Event, EventType};
use bytes::Bytes;
use futures_core::Stream;
use futures_util::stream::BoxStream;
use futures_util::StreamExt;

use super::resume::{Reattached, Resumer, Retry};
use super::WarningSink;
use crate::error::ClientError;

/// The body of a 2xx response being decoded.
pub(super) struct BodyStream {
    body: BoxStream<'static, Result<Bytes, ClientError>>,
    decoder: EventDecoder,
    /// The first half of the inbound pipeline.
    intake: Intake,
    /// Events the intake produced and not yet yielded.
    ready: VecDeque<Event>,
    scratch: Vec<Event>,
    new_warnings: Vec<InboundWarning>,
    warnings: WarningSink,
    pending_error: Option<ClientError>,
    idle_timeout: Option<Duration>,
    /// The decoder limits (a re-attached body gets a fresh decoder).
    pub(super) limits: DecoderLimits,
    /// The idle timer, armed while waiting for bytes.
    idle: Option<Pin<Box<tokio::time::Sleep>>>,
    span: tracing::Span,
    events: u64,
    terminal: bool,
    finished: bool,
    done: bool,
    /// Set when the run is resumable.
    pub(super) resume: Option<Box<Resumer>>,
    /// The most bytes the run's bodies may bring in all (`None`: no limit).
    pub(super) max_run_bytes: Option<u64>,
    /// The bytes received so far, over every body of the run (re-attaches included).
    received: u64,
}

impl BodyStream {
    pub(super) fn instrument_stream(
        mut self,
        span: tracing::Span,
    ) -> BoxStream<'static, Result<Event, ClientError>> {
        self.span = span;
        self.boxed()
    }

    /// Counts a delivered event and tracks whether the run is over.
    fn deliver(&mut self, event: Event) -> Result<Event, ClientError> {
        self.events += 1;
        let ty = event.event_type();
        if ty.is_terminal() {
            self.terminal = true;
        } else if ty == EventType::RunStarted {
            self.terminal = false;
        }
        Ok(event)
    }

    /// The next item that the bytes already received give, without I/O; `None` when
    /// more bytes are needed (or the body has ended and everything was delivered).
    fn next_buffered(&mut self) -> Option<Result<Event, ClientError>> {
        loop {
            if let Some(event) = self.ready.pop_front() {
                return Some(self.deliver(event));
            }
            if let Some(e) = self.pending_error.take() {
                self.done = true;
                return Some(Err(e));
            }
            let raw = match self.decoder.next_raw()? {
                Ok(raw) => raw,
                Err(e) => {
                    self.done = true;
                    return Some(Err(e.into()));
                }
            };
            let offset = raw.offset;
            if let Some(r) = self.resume.as_deref_mut() {
                // The frame's sequence number: the SSE id, or the protobuf frame count.
                let seq = if raw.last_event_id.is_empty() {
                    r.body_first_seq.saturating_add(r.body_frames)
                } else {
                    match raw.last_event_id.rsplit_once(':') {
                        Some((run, seq)) if run == r.run_id => match seq.parse::<u64>() {
                            Ok(n) => n,
                            Err(_) => r.last_seq.saturating_add(1),
                        },
                        _ => r.last_seq.saturating_add(1),
                    }
                };
                r.body_frames += 1;
                if seq <= r.last_seq {
                    // Already delivered before the connection dropped.
                    continue;
                }
                // A hostile sequence number cannot overflow: the next one is checked, not added.
                if r.last_seq.checked_add(1) != Some(seq) {
                    self.done = true;
                    return Some(Err(ClientError::Resume {
                        after_seq: r.last_seq,
                        status: None,
                        code: Some("gap".into()),
                        reason: format!("the stream skipped from seq {} to {seq}", r.last_seq),
                    }));
                }
                r.last_seq = seq;
                r.attempts = 0;
            }
            let taken = match raw.body {
                RawBody::Json(data) => {
                    self.intake
                        .push_json(data, &mut self.scratch, &mut self.new_warnings)
                }
                RawBody::Event(event) => {
                    self.intake
                        .push_event(event, &mut self.scratch, &mut self.new_warnings)
                }
            };
            if !self.new_warnings.is_empty() {
                self.warnings.append(&mut self.new_warnings);
            }
            if let Err(source) = taken {
                // Delivered after what the frame produced before the failure.
                self.pending_error = Some(ClientError::Inbound {
                    byte_offset: Some(offset),
                    source,
                });
            }
            // The common case, one frame one event, skips the queue.
            if self.scratch.len() == 1 && self.pending_error.is_none() {
                if let Some(event) = self.scratch.pop() {
                    return Some(self.deliver(event));
                }
            }
            self.ready.extend(self.scratch.drain(..));
        }
    }
}

impl Stream for BodyStream {
    type Item = Result<Event, ClientError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        let span = this.span.clone();
        let _entered = span.enter();
        loop {
            if this.done {
                return Poll::Ready(None);
            }
            if let Some(item) = this.next_buffered() {
                // The idle limit counts from the last event: a server sending only
                // comments is as stalled as a silent one.
                this.idle = None;
                return Poll::Ready(Some(item));
            }
            // A re-attach in flight.
            if let Some(r) = this.resume.as_deref_mut() {
                if let Some(fut) = r.pending.as_mut() {
                    match fut.as_mut().poll(cx) {
                        Poll::Pending => return Poll::Pending,
                        Poll::Ready(result) => {
                            r.pending = None;
                            match result {
                                Ok(Reattached::Body(body, encoding, first)) => {
                                    r.body_first_seq = first;
                                    r.body_frames = 0;
                                    this.body = body;
                                    this.decoder = EventDecoder::with_limits(encoding, this.limits);
                                    this.idle = None;
                                    continue;
                                }
                                Ok(Reattached::Finished) => {
                                    this.finished = true;
                                    continue;
                                }
                                Err(Retry::Again(after, reason)) => {
                                    if let Err(e) = r.start(reason, after) {
                                        this.done = true;
                                        return Poll::Ready(Some(Err(e)));
                                    }
                                    continue;
                                }
                                Err(Retry::Never(e)) => {
                                    this.done = true;
                                    return Poll::Ready(Some(Err(e)));
                                }
                            }
                        }
                    }
                }
            }
            if this.finished {
                this.done = true;
                if !this.terminal {
                    return Poll::Ready(Some(Err(ClientError::Truncated {
                        events: this.events,
                    })));
                }
                return Poll::Ready(None);
            }
            match this.body.poll_next_unpin(cx) {
                Poll::Ready(Some(Ok(bytes))) => {
                    this.received = this.received.saturating_add(bytes.len() as u64);
                    if let Some(max) = this.max_run_bytes.filter(|&m| this.received > m) {
                        this.done = true;
                        return Poll::Ready(Some(Err(ClientError::LimitExceeded {
                            limit: "max_run_bytes",
                            max,
                            event_index: this.events,
                            what: format!("the run's stream ({} bytes received)", this.received),
                        })));
                    }
                    this.decoder.push(&bytes);
                }
                Poll::Ready(Some(Err(e))) => {
                    if let Some(r) = this.resume.as_deref_mut().filter(|_| !this.terminal) {
                        // A partial frame is dropped with the connection; the re-attach
                        // sends it again.
                        if let Err(e) = r.start(format!("the connection failed: {e}"), None) {
                            this.done = true;
                            return Poll::Ready(Some(Err(e)));
                        }
                        continue;
                    }
                    this.done = true;
                    return Poll::Ready(Some(Err(e)));
                }
                Poll::Ready(None) => {
                    if let Some(r) = this.resume.as_deref_mut().filter(|_| !this.terminal) {
                        if let Err(e) = r.start("the stream ended before the run did".into(), None)
                        {
                            this.done = true;
                            return Poll::Ready(Some(Err(e)));
                        }
                        continue;
                    }
                    // The end of the body: let the decoder report a truncated frame or
                    // release a last event, then end.
                    this.finished = true;
                    this.decoder.finish();
                }
                Poll::Pending => {
                    if let Some(t) = this.idle_timeout {
                        let sleep = this
                            .idle
                            .get_or_insert_with(|| Box::pin(tokio::time::sleep(t)));
                        if std::future::Future::poll(sleep.as_mut(), cx).is_ready() {
                            this.idle = None;
                            if let Some(r) = this.resume.as_deref_mut().filter(|_| !this.terminal) {
                                if let Err(e) = r.start(format!("no bytes for {t:?}"), None) {
                                    this.done = true;
                                    return Poll::Ready(Some(Err(e)));
                                }
                                continue;
                            }
                            this.done = true;
                            return Poll::Ready(Some(Err(ClientError::Timeout {
                                after: t,
                                waiting_for: "the next event",
                            })));
                        }
                    }
                    return Poll::Pending;
                }
            }
        }
    }
}

impl BodyStream {
    pub(super) fn new(
        body: BoxStream<'static, Result<Bytes, ClientError>>,
        decoder: EventDecoder,
        intake: Intake,
        warnings: WarningSink,
        idle_timeout: Option<Duration>,
    ) -> Self {
        let decoder_limits = DecoderLimits::default();
        BodyStream {
            body,
            limits: decoder_limits,
            decoder,
            intake,
            ready: VecDeque::new(),
            scratch: Vec::new(),
            new_warnings: Vec::new(),
            warnings,
            pending_error: None,
            idle_timeout,
            idle: None,
            span: tracing::Span::none(),
            events: 0,
            terminal: false,
            finished: false,
            done: false,
            resume: None,
            max_run_bytes: Some(super::DEFAULT_MAX_RUN_BYTES),
            received: 0,
        }
    }
}
