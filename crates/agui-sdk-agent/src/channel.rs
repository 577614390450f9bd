//! The bounded queue between an [`agent_fn`](crate::agent_fn) agent's emitter and the
//! stream the runtime polls.
//!
//! The receiving side polls the agent's future itself, so the queue is nearly always
//! taken by one side at a time: a mutex over a `VecDeque` of events costs two
//! uncontended atomic operations per event, where a general channel boxed each event
//! (to keep its preallocated slots small) and took a semaphore permit for it. Here an
//! event is moved in and out in place. A burst reserves at once what the burst before
//! it used (a fresh run's first one, a few slots); the slots are given back once the
//! stream waits with nothing queued, so an idle open stream holds none.

use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};

use agui_sdk_core::Event;

/// What a queue's first burst reserves: a paced stream's first event, or the start of
/// a burst that then grows. Reserving the whole bound for it would leave a freed block
/// of that size behind every open stream (`bench/load/stream_memory.sh`: 0.7 KiB more
/// resident memory per stream).
const FIRST_BURST: usize = 4;

/// The queue, shared by every sender and the one receiver.
#[derive(Debug)]
pub(crate) struct Queue {
    inner: Mutex<Inner>,
}

#[derive(Debug)]
struct Inner {
    events: VecDeque<Event>,
    bound: usize,
    /// The most events queued at once since the queue last emptied, and in the burst
    /// before: a new burst reserves that much at once (a fresh run's first burst,
    /// [`FIRST_BURST`]), rather than growing through every size.
    burst: usize,
    last_burst: usize,
    senders: usize,
    receiver: bool,
    /// The receiver, waiting for an event or for the last sender to go.
    rx_waker: Option<Waker>,
    /// Senders waiting for room (each at most once, compared with `will_wake`).
    tx_wakers: Vec<Waker>,
}

impl Inner {
    /// After an event is taken: when the queue was full, the senders waiting for room
    /// (to be woken once the lock is let go), which try once more.
    fn room_again(&mut self) -> Vec<Waker> {
        if self.events.len() + 1 == self.bound {
            std::mem::take(&mut self.tx_wakers)
        } else {
            Vec::new()
        }
    }
}

/// Why an event was not queued: the receiver is gone (the run ended or its client
/// went away); the event is dropped.
#[derive(Debug)]
pub(crate) struct Closed;

impl Queue {
    /// A queue of at most `bound` events (at least one), with one sender counted.
    pub(crate) fn new(bound: usize) -> Queue {
        Queue {
            inner: Mutex::new(Inner {
                events: VecDeque::new(),
                bound: bound.max(1),
                burst: 0,
                last_burst: bound.clamp(1, FIRST_BURST),
                senders: 1,
                receiver: true,
                rx_waker: None,
                tx_wakers: Vec::new(),
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // Nothing here panics while the lock is held; a poisoned lock still holds a
        // consistent queue.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// One more sender (an emitter was cloned).
    pub(crate) fn add_sender(&self) {
        self.lock().senders += 1;
    }

    /// One sender fewer; the last one's going ends the stream once it is drained.
    pub(crate) fn drop_sender(&self) {
        let waker = {
            let mut q = self.lock();
            q.senders -= 1;
            if q.senders == 0 {
                q.rx_waker.take()
            } else {
                None
            }
        };
        if let Some(w) = waker {
            w.wake();
        }
    }

    /// Queues `event` if there is room: `Ready(Ok)`; `Pending` (the sender is woken
    /// when there is room) with the event left in `slot`; `Ready(Err)` when the
    /// receiver is gone.
    pub(crate) fn poll_send(
        &self,
        cx: &mut Context<'_>,
        slot: &mut Option<Event>,
    ) -> Poll<Result<(), Closed>> {
        let Some(event) = slot.take() else {
            return Poll::Ready(Ok(()));
        };
        let waker = {
            let mut q = self.lock();
            if !q.receiver {
                return Poll::Ready(Err(Closed));
            }
            if q.events.len() >= q.bound {
                if !q.tx_wakers.iter().any(|w| w.will_wake(cx.waker())) {
                    q.tx_wakers.push(cx.waker().clone());
                }
                *slot = Some(event);
                return Poll::Pending;
            }
            if q.events.capacity() == 0 {
                let room = q.last_burst;
                q.events.reserve_exact(room);
            } else if q.events.len() == q.events.capacity() {
                // A burst larger than the last: room for the whole bound at once, rather
                // than doubling through every size on the way (each a copy of the
                // events queued).
                let room = q.bound - q.events.len();
                q.events.reserve_exact(room);
            }
            q.events.push_back(event);
            q.burst = q.burst.max(q.events.len());
            q.rx_waker.take()
        };
        if let Some(w) = waker {
            w.wake();
        }
        Poll::Ready(Ok(()))
    }

    /// The next event if one is queued, without waiting: the receiver is being polled
    /// and will wait through [`poll_recv`](Self::poll_recv) before it returns, so the
    /// waker it left last time is dropped (a sender it polls itself then wakes nobody).
    pub(crate) fn take(&self) -> Option<Event> {
        let (event, wakers) = {
            let mut q = self.lock();
            q.rx_waker = None;
            let event = q.events.pop_front()?;
            (event, q.room_again())
        };
        for w in wakers {
            w.wake();
        }
        Some(event)
    }

    /// The next event: `Ready(Some)`; `Ready(None)` once every sender is gone and the
    /// queue is empty; `Pending` otherwise (the receiver is woken by the next event or
    /// by the last sender's going).
    pub(crate) fn poll_recv(&self, cx: &mut Context<'_>) -> Poll<Option<Event>> {
        let (event, wakers) = {
            let mut q = self.lock();
            match q.events.pop_front() {
                Some(event) => (event, q.room_again()),
                None if q.senders == 0 => return Poll::Ready(None),
                None => {
                    // Waiting, perhaps for long: keep no slots.
                    if q.events.capacity() > 0 {
                        q.events = VecDeque::new();
                        q.last_burst = std::mem::take(&mut q.burst).max(1);
                    }
                    match &q.rx_waker {
                        Some(w) if w.will_wake(cx.waker()) => {}
                        _ => q.rx_waker = Some(cx.waker().clone()),
                    }
                    return Poll::Pending;
                }
            }
        };
        for w in wakers {
            w.wake();
        }
        Poll::Ready(Some(event))
    }

    /// The receiver is gone: what is queued is dropped and waiting senders are woken
    /// (to find the queue closed).
    pub(crate) fn close(&self) {
        let (events, wakers) = {
            let mut q = self.lock();
            q.receiver = false;
            q.rx_waker = None;
            (
                std::mem::take(&mut q.events),
                std::mem::take(&mut q.tx_wakers),
            )
        };
        drop(events);
        for w in wakers {
            w.wake();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::task::noop_waker_ref;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn cx() -> Context<'static> {
        Context::from_waker(noop_waker_ref())
    }

    /// A waker that counts how often it is woken.
    fn counting_waker() -> (std::sync::Arc<Count>, Waker) {
        let count = std::sync::Arc::new(Count(AtomicUsize::new(0)));
        (count.clone(), Waker::from(count))
    }

    struct Count(AtomicUsize);

    impl Count {
        fn get(&self) -> usize {
            self.0.load(Ordering::SeqCst)
        }
    }

    impl std::task::Wake for Count {
        fn wake(self: std::sync::Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn ev(i: usize) -> Event {
        Event::text_message_content("m", format!("d{i}"))
    }

    fn delta(e: &Event) -> String {
        match e {
            Event::TextMessageContent(c) => c.delta.clone(),
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn bounded_in_order_and_ends_with_the_last_sender() {
        let q = Queue::new(2);
        let mut cx = cx();
        for i in 0..2 {
            let mut slot = Some(ev(i));
            assert!(matches!(
                q.poll_send(&mut cx, &mut slot),
                Poll::Ready(Ok(()))
            ));
        }
        let mut slot = Some(ev(2));
        assert!(q.poll_send(&mut cx, &mut slot).is_pending());
        assert!(slot.is_some(), "a refused event stays with its sender");
        let Poll::Ready(Some(first)) = q.poll_recv(&mut cx) else {
            panic!("an event was queued")
        };
        assert_eq!(delta(&first), "d0");
        assert!(matches!(
            q.poll_send(&mut cx, &mut slot),
            Poll::Ready(Ok(()))
        ));
        q.add_sender();
        q.drop_sender();
        let got: Vec<String> = std::iter::from_fn(|| match q.poll_recv(&mut cx) {
            Poll::Ready(Some(e)) => Some(delta(&e)),
            _ => None,
        })
        .collect();
        assert_eq!(got, ["d1", "d2"]);
        assert!(q.poll_recv(&mut cx).is_pending(), "a sender is left");
        q.drop_sender();
        assert!(matches!(q.poll_recv(&mut cx), Poll::Ready(None)));
    }

    #[test]
    fn a_waiting_queue_keeps_no_slots_and_a_closed_one_refuses() {
        let q = Queue::new(16);
        let mut cx = cx();
        let mut slot = Some(ev(0));
        assert!(q.poll_send(&mut cx, &mut slot).is_ready());
        assert!(q.lock().events.capacity() >= FIRST_BURST);
        assert!(q.poll_recv(&mut cx).is_ready());
        assert!(q.poll_recv(&mut cx).is_pending());
        assert_eq!(q.lock().events.capacity(), 0);
        // The next burst reserves what the last one used.
        let mut slot = Some(ev(1));
        assert!(q.poll_send(&mut cx, &mut slot).is_ready());
        assert!(q.lock().events.capacity() < FIRST_BURST);
        q.close();
        let mut slot = Some(ev(2));
        assert!(matches!(
            q.poll_send(&mut cx, &mut slot),
            Poll::Ready(Err(Closed))
        ));
    }

    #[test]
    fn a_burst_past_the_first_reservation_grows_once_to_the_bound() {
        let q = Queue::new(16);
        let mut cx = cx();
        for i in 0..FIRST_BURST {
            let mut slot = Some(ev(i));
            assert!(q.poll_send(&mut cx, &mut slot).is_ready());
        }
        let first = q.lock().events.capacity();
        assert!((FIRST_BURST..16).contains(&first), "{first}");
        let mut slot = Some(ev(FIRST_BURST));
        assert!(q.poll_send(&mut cx, &mut slot).is_ready());
        assert!(q.lock().events.capacity() >= 16);
        // Up to the bound with no other growth, and in order.
        for i in FIRST_BURST + 1..16 {
            let mut slot = Some(ev(i));
            assert!(q.poll_send(&mut cx, &mut slot).is_ready());
        }
        let mut slot = Some(ev(16));
        assert!(q.poll_send(&mut cx, &mut slot).is_pending());
        let got: Vec<String> = std::iter::from_fn(|| q.take().map(|e| delta(&e))).collect();
        let want: Vec<String> = (0..16).map(|i| format!("d{i}")).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn a_sender_waiting_for_room_is_woken_once_there_is_room() {
        let (count, waker) = counting_waker();
        let mut tx_cx = Context::from_waker(&waker);
        let q = Queue::new(1);
        let mut slot = Some(ev(0));
        assert!(q.poll_send(&mut tx_cx, &mut slot).is_ready());
        let mut slot = Some(ev(1));
        assert!(q.poll_send(&mut tx_cx, &mut slot).is_pending());
        assert!(q.poll_send(&mut tx_cx, &mut slot).is_pending());
        assert_eq!(q.lock().tx_wakers.len(), 1, "one waker per waiting sender");
        assert_eq!(count.get(), 0);
        assert!(q.take().is_some());
        assert_eq!(count.get(), 1);
    }

    #[test]
    fn taking_drops_the_receivers_last_waker() {
        let (count, waker) = counting_waker();
        let q = Queue::new(4);
        assert!(q.poll_recv(&mut Context::from_waker(&waker)).is_pending());
        assert!(q.take().is_none());
        let mut slot = Some(ev(0));
        assert!(q.poll_send(&mut cx(), &mut slot).is_ready());
        assert_eq!(count.get(), 0, "the receiver was being polled");
        assert!(q.poll_recv(&mut Context::from_waker(&waker)).is_ready());
        assert!(q.poll_recv(&mut Context::from_waker(&waker)).is_pending());
        let mut slot = Some(ev(1));
        assert!(q.poll_send(&mut cx(), &mut slot).is_ready());
        assert_eq!(count.get(), 1, "a waiting receiver is woken");
    }
}
