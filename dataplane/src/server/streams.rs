//! `Subscribe` streams, bounded: how many may be open ([`Limits::max_streams`]), how much each may hold
//! for a client that reads slowly ([`Limits::stream_buffer`] messages), and how long a client may stop
//! reading before its stream is ended ([`Limits::stall_timeout`]).
//!
//! A slow reader never costs unbounded memory. Counter snapshots are dropped while its buffer is full
//! (it gets the latest one when it reads again); events wait for room, the switch's event channel skips
//! what the subscriber missed and the stream says so (`events_lost`); a client that reads nothing for
//! `stall_timeout` is ended with RESOURCE_EXHAUSTED. Open streams are listed in a registry ([`Streams`])
//! the tasks share, which the cap reads.

use super::convert;
use crate::io::runtime::{Handle, TimedEvent};
use dashmap::DashMap;
use lossless_proto::v1 as pb;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime};
use tokio::sync::{broadcast, mpsc, oneshot, watch};
use tokio_stream::Stream;
use tonic::Status;

/// Bounds on `Subscribe` streams (switchd: `--grpc-max-streams`, `--grpc-stream-buffer`,
/// `--grpc-stall-timeout-s`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Streams open at once; one more is refused with RESOURCE_EXHAUSTED.
    pub max_streams: usize,
    /// Messages buffered per stream for a client that has not read them yet.
    pub stream_buffer: usize,
    /// A stream whose client has read nothing for this long is ended.
    pub stall_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits { max_streams: 64, stream_buffer: 16, stall_timeout: Duration::from_secs(30) }
    }
}

/// One open stream, as the registry lists it.
#[derive(Debug, Clone)]
pub struct StreamInfo {
    pub peer: String,
    pub opened: SystemTime,
    pub events: bool,
    pub counters_every: Option<Duration>,
    /// Counter snapshots not sent because the client's buffer was full.
    pub skipped_counters: u64,
}

/// The open `Subscribe` streams.
#[derive(Debug)]
pub struct Streams {
    limits: Limits,
    open: DashMap<u64, StreamInfo>,
    /// Streams counted against the cap (reserved before they enter `open`).
    count: AtomicUsize,
    next_id: AtomicU64,
}

impl Streams {
    pub fn new(limits: Limits) -> Streams {
        Streams { limits, open: DashMap::new(), count: AtomicUsize::new(0), next_id: AtomicU64::new(1) }
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// How many streams are open.
    pub fn len(&self) -> usize {
        self.count.load(Ordering::SeqCst)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The open streams, by id.
    pub fn list(&self) -> Vec<(u64, StreamInfo)> {
        let mut all: Vec<_> = self.open.iter().map(|e| (*e.key(), e.value().clone())).collect();
        all.sort_by_key(|(id, _)| *id);
        all
    }

    /// Registers a stream, or refuses it when [`Limits::max_streams`] are open.
    pub(super) fn open(
        self: &Arc<Self>,
        peer: String,
        events: bool,
        counters_every: Option<Duration>,
    ) -> Result<Slot, Status> {
        let max = self.limits.max_streams;
        if self
            .count
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| (n < max).then_some(n + 1))
            .is_err()
        {
            return Err(Status::resource_exhausted(format!(
                "{max} Subscribe streams are open, the most this switch allows (switchd --grpc-max-streams)"
            )));
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let info =
            StreamInfo { peer, opened: SystemTime::now(), events, counters_every, skipped_counters: 0 };
        self.open.insert(id, info);
        Ok(Slot { streams: self.clone(), id })
    }
}

/// A stream's place in the registry; freed when the stream's task ends.
#[derive(Debug)]
pub(super) struct Slot {
    streams: Arc<Streams>,
    id: u64,
}

impl Slot {
    fn skipped_counters(&self) {
        if let Some(mut info) = self.streams.open.get_mut(&self.id) {
            info.skipped_counters += 1;
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.streams.open.remove(&self.id);
        self.streams.count.fetch_sub(1, Ordering::SeqCst);
    }
}

/// What the client reads: the buffered messages, or the status that ended the stream (which comes before
/// anything still buffered: a stream ended for not reading has nothing worth delivering late).
pub struct SubscribeStream {
    rx: mpsc::Receiver<pb::SubscribeResponse>,
    end: Option<oneshot::Receiver<Status>>,
}

impl Stream for SubscribeStream {
    type Item = Result<pb::SubscribeResponse, Status>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if let Some(end) = self.end.as_mut() {
            match Pin::new(end).poll(cx) {
                Poll::Ready(Ok(status)) => {
                    self.end = None;
                    self.rx.close();
                    return Poll::Ready(Some(Err(status)));
                }
                Poll::Ready(Err(_)) => self.end = None,
                Poll::Pending => {}
            }
        }
        self.rx.poll_recv(cx).map(|item| item.map(Ok))
    }
}

/// One `Subscribe` stream: a task that forwards events and counter snapshots until the client goes away,
/// the server shuts down, the runtime stops or the client stops reading.
pub(super) struct Subscription {
    handle: Handle,
    shutdown: watch::Receiver<bool>,
    slot: Slot,
    events: Option<broadcast::Receiver<TimedEvent>>,
    counters: Option<tokio::time::Interval>,
    tx: mpsc::Sender<pb::SubscribeResponse>,
    end: Option<oneshot::Sender<Status>>,
}

enum Next {
    Event(TimedEvent),
    /// The subscriber fell this far behind the switch's event channel; the events were skipped.
    Lagged(u64),
    Counters,
    Done,
}

impl Subscription {
    pub(super) fn new(
        handle: Handle,
        shutdown: watch::Receiver<bool>,
        slot: Slot,
        events: Option<broadcast::Receiver<TimedEvent>>,
        counters_every: Option<Duration>,
    ) -> (Subscription, SubscribeStream) {
        let buffer = slot.streams.limits.stream_buffer.max(1);
        let (tx, rx) = mpsc::channel(buffer);
        let (end_tx, end_rx) = oneshot::channel();
        let counters = counters_every.map(|period| {
            let mut ticker = tokio::time::interval(period);
            ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
            ticker
        });
        let subscription = Subscription { handle, shutdown, slot, events, counters, tx, end: Some(end_tx) };
        (subscription, SubscribeStream { rx, end: Some(end_rx) })
    }

    pub(super) async fn run(mut self) {
        let stall_timeout = self.slot.streams.limits.stall_timeout;
        let mut last_at_ns = 0;
        loop {
            let next = tokio::select! {
                () = self.tx.closed() => Next::Done,
                () = stopped(&mut self.shutdown) => Next::Done,
                next = next_event(&mut self.events) => next,
                () = tick(&mut self.counters) => Next::Counters,
            };
            let item = match next {
                Next::Done => return,
                Next::Event(timed) => {
                    last_at_ns = timed.at_ns;
                    pb::subscribe_response::Item::Event(convert::event_to_proto(&timed))
                }
                Next::Lagged(skipped) => {
                    tracing::debug!(skipped, "a subscriber fell behind; events skipped");
                    pb::subscribe_response::Item::Event(pb::SwitchEvent {
                        timestamp_ns: last_at_ns,
                        kind: "events_lost".into(),
                        message: format!("subscriber fell behind: {skipped} event(s) skipped"),
                        port: String::new(),
                        index: u32::try_from(skipped).unwrap_or(u32::MAX),
                        // Before any event (last_at_ns 0) there is no instant to convert.
                        wall_time_unix_ns: if last_at_ns == 0 {
                            0
                        } else {
                            crate::clock::WallClock::process().unix_ns(last_at_ns)
                        },
                    })
                }
                Next::Counters => {
                    if self.tx.capacity() == 0 {
                        // The client has not read what it has: it gets a newer snapshot when it does.
                        self.slot.skipped_counters();
                        if self.stalled_for(stall_timeout).await {
                            return;
                        }
                        continue;
                    }
                    match self.handle.snapshot().await {
                        Ok(snapshot) => pb::subscribe_response::Item::Counters(snapshot.counters.to_proto()),
                        Err(_) => return self.gone(),
                    }
                }
            };
            let message = pb::SubscribeResponse { item: Some(item) };
            let sent = tokio::select! {
                sent = tokio::time::timeout(stall_timeout, self.tx.send(message)) => sent,
                () = stopped(&mut self.shutdown) => return,
            };
            match sent {
                Ok(Ok(())) => {}
                Ok(Err(_)) => return,
                Err(_) => return self.too_slow(stall_timeout),
            }
        }
    }

    /// Waits (at most `stall_timeout`) for the client to read; true when the stream was ended because it
    /// did not.
    async fn stalled_for(&mut self, stall_timeout: Duration) -> bool {
        let room = tokio::select! {
            room = tokio::time::timeout(stall_timeout, self.tx.reserve()) => room,
            () = stopped(&mut self.shutdown) => return true,
        };
        let room = room.map(|permit| permit.is_ok());
        match room {
            Ok(open) => !open,
            Err(_) => {
                self.too_slow(stall_timeout);
                true
            }
        }
    }

    fn too_slow(&mut self, stall_timeout: Duration) {
        tracing::info!(peer = %self.slot_peer(), "ending a Subscribe stream whose client stopped reading");
        self.finish(Status::resource_exhausted(format!(
            "the client read nothing for {stall_timeout:?} with {} message(s) waiting; stream ended \
             (switchd --grpc-stall-timeout-s)",
            self.tx.max_capacity()
        )));
    }

    fn slot_peer(&self) -> String {
        self.slot.streams.open.get(&self.slot.id).map(|i| i.peer.clone()).unwrap_or_default()
    }

    fn gone(&mut self) {
        self.finish(Status::unavailable("the switch runtime has stopped"));
    }

    /// Ends the stream with `status` (delivered before anything still buffered).
    fn finish(&mut self, status: Status) {
        if let Some(end) = self.end.take() {
            let _ = end.send(status);
        }
    }
}

/// Resolves once the server shuts down (never, for a service without a shutdown signal).
async fn stopped(shutdown: &mut watch::Receiver<bool>) {
    if shutdown.wait_for(|&stop| stop).await.is_err() {
        std::future::pending::<()>().await;
    }
}

async fn next_event(events: &mut Option<broadcast::Receiver<TimedEvent>>) -> Next {
    let Some(rx) = events else { return std::future::pending().await };
    match rx.recv().await {
        Ok(timed) => Next::Event(timed),
        Err(broadcast::error::RecvError::Lagged(skipped)) => Next::Lagged(skipped),
        Err(broadcast::error::RecvError::Closed) => Next::Done,
    }
}

async fn tick(counters: &mut Option<tokio::time::Interval>) {
    match counters {
        Some(ticker) => {
            ticker.tick().await;
        }
        None => std::future::pending().await,
    }
}
