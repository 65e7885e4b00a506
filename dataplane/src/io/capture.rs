//! Packet capture on the model thread: what ports receive and send (PFC frames the switch makes included),
//! or the frames the switch drops with the reason (`swctl capture`, the `Capture` RPC).
//!
//! A capture is a [`Sink`] registered in the shared [`Captures`]: a bounded channel and what it wants. The
//! model thread copies a frame only when some sink wants it, and never waits for a reader: a full channel
//! loses the frame and counts it ([`Sink::lost`]). With no capture registered the receive and transmit
//! paths pay one relaxed atomic load per loop. Drops are recorded by the model itself
//! ([`Switch::record_drops`]), switched on only while a drop capture is open.

use crate::model::{DropRecord, PortId, Switch};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;

/// Frames held for a capture's reader before the model thread starts losing them.
pub const CAPTURE_BUFFER: usize = 8192;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Received,
    Sent,
}

/// One captured frame.
#[derive(Debug, Clone)]
pub struct Captured {
    /// The switch's clock.
    pub timestamp_ns: u64,
    pub port: PortId,
    pub direction: Direction,
    /// The frame, cut to the capture's snap length.
    pub frame: Vec<u8>,
    pub original_length: usize,
    /// For a drop capture: why and (for an egress drop) at which queue.
    pub drop: Option<(&'static str, Option<u8>)>,
}

/// What a capture wants and where it goes.
#[derive(Debug, Clone)]
pub struct Sink {
    /// Per port: captured (ports beyond the list: not).
    pub ports: Vec<bool>,
    /// Only dropped frames (else every frame received and sent).
    pub drops: bool,
    /// Bytes kept of each frame (0: all).
    pub snaplen: usize,
    tx: mpsc::Sender<Captured>,
    lost: Arc<AtomicU64>,
}

impl Sink {
    /// A sink and its reader's end.
    pub fn new(ports: Vec<bool>, drops: bool, snaplen: usize) -> (Sink, mpsc::Receiver<Captured>) {
        let (tx, rx) = mpsc::channel(CAPTURE_BUFFER);
        (Sink { ports, drops, snaplen, tx, lost: Arc::default() }, rx)
    }

    /// Frames lost so far because the reader was behind.
    pub fn lost(&self) -> Arc<AtomicU64> {
        self.lost.clone()
    }

    fn wants(&self, port: PortId) -> bool {
        self.ports.get(port.index()).copied().unwrap_or(false)
    }

    /// Offers a frame; false when the reader is gone.
    fn offer(&self, captured: Captured) -> bool {
        match self.tx.try_send(captured) {
            Ok(()) => true,
            Err(mpsc::error::TrySendError::Full(_)) => {
                self.lost.fetch_add(1, Ordering::Relaxed);
                true
            }
            Err(mpsc::error::TrySendError::Closed(_)) => false,
        }
    }

    fn cut(&self, frame: &[u8]) -> Vec<u8> {
        let keep = if self.snaplen == 0 { frame.len() } else { frame.len().min(self.snaplen) };
        frame[..keep].to_vec()
    }
}

/// The registry of open captures, shared by the gRPC side (which adds) and the model thread (which reads a
/// copy whenever it changed, and removes captures whose reader went away).
#[derive(Debug, Clone, Default)]
pub struct Captures {
    sinks: Arc<Mutex<Vec<Sink>>>,
    changed: Arc<AtomicBool>,
}

impl Captures {
    pub fn add(&self, sink: Sink) {
        self.sinks.lock().unwrap_or_else(|e| e.into_inner()).push(sink);
        self.changed.store(true, Ordering::Release);
    }

    /// Tells the model thread to drop captures whose reader went away (it also finds out by itself at the
    /// next frame such a capture wanted).
    pub fn prune(&self) {
        self.changed.store(true, Ordering::Release);
    }

    /// Open captures.
    pub fn len(&self) -> usize {
        self.sinks.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The model thread's side: its copy of the registry.
#[derive(Debug, Default)]
pub(crate) struct Capturing {
    shared: Captures,
    sinks: Vec<Sink>,
    any_frames: bool,
    any_drops: bool,
    drops: Vec<DropRecord>,
}

impl Capturing {
    pub(crate) fn new(shared: Captures) -> Capturing {
        Capturing { shared, ..Capturing::default() }
    }

    /// Takes up a changed registry; switches the model's drop recording on or off to match.
    pub(crate) fn refresh(&mut self, switch: &mut Switch) {
        // A plain load first: the swap (a read-modify-write) only when something changed.
        if !self.shared.changed.load(Ordering::Relaxed) || !self.shared.changed.swap(false, Ordering::Acquire)
        {
            return;
        }
        let mut shared = self.shared.sinks.lock().unwrap_or_else(|e| e.into_inner());
        shared.retain(|s| !s.tx.is_closed());
        self.sinks = shared.clone();
        drop(shared);
        self.any_frames = self.sinks.iter().any(|s| !s.drops);
        let drops = self.sinks.iter().any(|s| s.drops);
        if drops != self.any_drops {
            switch.record_drops(drops);
        }
        self.any_drops = drops;
    }

    /// Whether a received frame must be kept until the model has seen it.
    pub(crate) fn active(&self) -> bool {
        self.any_frames || self.any_drops
    }

    /// A frame `port` received (before the model takes it).
    pub(crate) fn received(&mut self, port: PortId, frame: &[u8], now_ns: u64) {
        if self.any_frames {
            self.offer(|s| !s.drops && s.wants(port), port, Direction::Received, frame, None, now_ns);
        }
    }

    /// After the model handled `frame`: the drops it recorded, each offered to the drop captures of the port
    /// it was counted at.
    pub(crate) fn after_receive(&mut self, switch: &mut Switch, frame: &[u8], now_ns: u64) {
        if !self.any_drops {
            return;
        }
        switch.take_drops(&mut self.drops);
        let drops = std::mem::take(&mut self.drops);
        for d in &drops {
            let drop = Some((d.reason, d.queue));
            self.offer(|s| s.drops && s.wants(d.port), d.port, Direction::Received, frame, drop, now_ns);
        }
        self.drops = drops;
        self.drops.clear();
    }

    /// Drops the model recorded outside a receive (watchdog flushes, stale queues): their frames are gone;
    /// forget them so they are not attributed to the next frame received.
    pub(crate) fn forget_drops(&mut self, switch: &mut Switch) {
        if self.any_drops {
            switch.take_drops(&mut self.drops);
            self.drops.clear();
        }
    }

    /// A frame `port` sent.
    pub(crate) fn sent(&mut self, port: PortId, frame: &[u8], now_ns: u64) {
        if self.any_frames {
            self.offer(|s| !s.drops && s.wants(port), port, Direction::Sent, frame, None, now_ns);
        }
    }

    fn offer(
        &mut self,
        wanted: impl Fn(&Sink) -> bool,
        port: PortId,
        direction: Direction,
        frame: &[u8],
        drop: Option<(&'static str, Option<u8>)>,
        now_ns: u64,
    ) {
        let mut gone = false;
        for sink in self.sinks.iter().filter(|s| wanted(s)) {
            let captured = Captured {
                timestamp_ns: now_ns,
                port,
                direction,
                frame: sink.cut(frame),
                original_length: frame.len(),
                drop,
            };
            gone |= !sink.offer(captured);
        }
        if gone {
            // A reader went away: the registry drops it at the next refresh.
            self.shared.changed.store(true, Ordering::Release);
        }
    }
}
