//! A part of a simulation: some of its nodes, the links they send on and the wires into them, with their
//! own calendar. A part runs alone up to an instant as long as nothing from another part can reach it by
//! then: frames for other parts leave as [`Crossing`]s, which arrive no sooner than the links' shortest
//! delay between parts (the lookahead), so parts run side by side in windows of that length
//! ([`super::Sim::run_until`], and the threaded runner of `swctl sim run --threads`). With one part, a
//! window is the whole run.

use super::calendar::Calendar;
use super::link::{Fate, LinkState, OnWire, Wire};
use super::pcap::Pcap;
use super::{Delivered, Device, Endpoint, Node, NodeId, Sent, Tap, TieOrder, Wake};
use crate::model::Switch;
use crate::model::{Event, Transmit};
use crate::nic::Nic;
use crate::time::Instant;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// A frame put on the way to a port from outside: (arrival, insertion order, (local node, port), frame).
pub(super) type Injected = Reverse<(Instant, u64, (u32, usize), Vec<u8>)>;

/// A frame on its way to a node of another part: it goes on wire `wire` of part `part`.
pub struct Crossing {
    pub(super) part: u32,
    pub(super) wire: u32,
    pub(super) on: OnWire,
}

impl Crossing {
    /// The part it goes to.
    pub fn part(&self) -> usize {
        self.part as usize
    }
}

/// A capture: frames sent by some ports.
pub(super) struct Capture {
    pub(super) ports: Vec<Endpoint>,
    pub(super) pcap: Pcap,
}

/// What watches the frames of a simulation that runs as one part: a tap, the log, captures.
pub(super) struct Observers<'a> {
    pub(super) tap: Option<&'a mut Tap>,
    pub(super) keep_log: bool,
    pub(super) sent: &'a mut Vec<Sent>,
    pub(super) delivered: &'a mut Vec<Delivered>,
    pub(super) captures: &'a mut [Capture],
}

impl Observers<'_> {
    fn watch_sent(&self) -> bool {
        self.tap.is_some() || self.keep_log
    }
}

/// Runs `$body` with `$n` bound to the device's model as its own type (a switch, a NIC) or as a
/// `dyn Node` (a custom one): the engine's per-visit calls into the two models it knows are direct, and
/// can be inlined, instead of going through a virtual table.
macro_rules! with_node {
    ($device:expr, $n:ident => $body:expr) => {
        match $device {
            Device::Switch($n) => {
                let $n: &mut Switch = $n;
                $body
            }
            Device::Nic($n) => {
                let $n: &mut Nic = $n;
                $body
            }
            Device::Custom($n) => {
                let $n: &mut dyn Node = $n.as_mut();
                $body
            }
        }
    };
}

/// [`with_node`] for reading.
macro_rules! with_node_ref {
    ($device:expr, $n:ident => $body:expr) => {
        match $device {
            Device::Switch($n) => {
                let $n: &Switch = $n;
                $body
            }
            Device::Nic($n) => {
                let $n: &Nic = $n;
                $body
            }
            Device::Custom($n) => {
                let $n: &dyn Node = $n.as_ref();
                $body
            }
        }
    };
}

/// One part of a simulation ([`super::Sim::partition`]).
pub struct Part {
    pub(super) index: u32,
    /// Per local node: its id in the simulation (increasing: local order is the simulation's order).
    pub(super) ids: Vec<NodeId>,
    pub(super) devices: Vec<Device>,
    /// Per local node, per port: the index in `links` of the link it sends on.
    pub(super) port_links: Vec<Vec<Option<u32>>>,
    /// The links this part's nodes send on.
    pub(super) links: Vec<LinkState>,
    /// The wires into this part's nodes, in the order of their links in the simulation (a step's
    /// deliveries at one instant go in that order, whatever part sent them).
    pub(super) wires: Vec<Wire>,
    pub(super) calendar: Calendar,
    /// Per local node: its wake-up in the calendar.
    pub(super) scheduled: Vec<Option<Instant>>,
    /// Nodes no longer driven (a host that stopped): frames to them are lost.
    pub(super) stopped: Vec<bool>,
    dirty: Vec<u32>,
    is_dirty: Vec<bool>,
    pub(super) injected: BinaryHeap<Injected>,
    pub(super) now: Instant,
    /// Steps at `now` before this one: events of a node visited twice at one instant (it asked for the
    /// instant again) sort after every first visit's, as when the parts run as one.
    round: u32,
    stalls: u32,
    /// (time, round, node, event) in the order the visits happened.
    pub(super) events: Vec<(Instant, u32, NodeId, Event)>,
    /// Frames sent to nodes of other parts since the last [`Part::take_crossings`].
    pub(super) outbox: Vec<Crossing>,
    pub(super) wakeups: u64,
    pub(super) ties: TieOrder,
}

impl Part {
    pub(super) fn new(index: u32) -> Part {
        Part {
            index,
            ids: Vec::new(),
            devices: Vec::new(),
            port_links: Vec::new(),
            links: Vec::new(),
            wires: Vec::new(),
            calendar: Calendar::default(),
            scheduled: Vec::new(),
            stopped: Vec::new(),
            dirty: Vec::new(),
            is_dirty: Vec::new(),
            injected: BinaryHeap::new(),
            now: Instant::ZERO,
            round: 0,
            stalls: 0,
            events: Vec::new(),
            outbox: Vec::new(),
            wakeups: 0,
            ties: TieOrder::default(),
        }
    }

    /// Adds a node; returns its local index.
    pub(super) fn add(&mut self, id: NodeId, device: Device, stopped: bool) -> u32 {
        debug_assert!(self.ids.last().is_none_or(|&last| last < id), "nodes are added in id order");
        self.ids.push(id);
        self.devices.push(device);
        self.port_links.push(Vec::new());
        self.scheduled.push(None);
        self.stopped.push(stopped);
        self.is_dirty.push(false);
        (self.ids.len() - 1) as u32
    }

    /// What ranks a wake-up booked at `booked` among those booked at the same instant
    /// ([`super::calendar::tie`]), the same whatever part it is in: a node's id or a wire's link, with the
    /// instant or the number of the wire's first frame ([`TieOrder`]).
    pub(super) fn tie_key(&self, wake: Wake, booked: Instant) -> u64 {
        let (id, seq) = match wake {
            Wake::Node(n) => (2 * self.ids[n as usize].index() as u64, 0),
            Wake::Link(w) => {
                let wire = &self.wires[w as usize];
                (2 * u64::from(wire.link) + 1, wire.frames.front().map_or(0, |f| f.seq))
            }
        };
        match self.ties {
            TieOrder::Instant => id ^ booked.as_ns().wrapping_mul(0xd6e8_feb8_6659_fd93),
            TieOrder::Count => id ^ seq << 32,
        }
    }

    /// The earliest pending instant.
    pub fn next_time(&mut self) -> Option<Instant> {
        let calendar = self.calendar.peek().map(|e| e.0);
        let injected = self.injected.peek().map(|Reverse(e)| e.0);
        calendar.into_iter().chain(injected).min()
    }

    /// Books every node's wake-up at the instant it asks for (nodes may have been changed from outside
    /// since the last run: flows added, storms started).
    pub(super) fn reschedule_all(&mut self) {
        self.stalls = 0;
        for n in 0..self.devices.len() as u32 {
            self.reschedule(n);
        }
    }

    /// Runs every event up to `last` inclusive. Frames for other parts are kept for
    /// [`Part::take_crossings`]: the caller makes sure none of them arrives by `last`.
    pub fn run_window(&mut self, last: Instant) {
        let mut none = Vec::new();
        let (mut sent, mut delivered) = (Vec::new(), Vec::new());
        let mut observers = Observers {
            tap: None,
            keep_log: false,
            sent: &mut sent,
            delivered: &mut delivered,
            captures: &mut none,
        };
        self.run_through(last, &mut observers);
    }

    pub(super) fn run_through(&mut self, last: Instant, observers: &mut Observers) {
        while let Some(t) = self.next_time().filter(|&t| t <= last) {
            if t <= self.now {
                self.stalls += 1;
                assert!(self.stalls < 1000, "a model keeps asking for {t} at {} without progress", self.now);
                self.round += 1;
            } else {
                self.stalls = 0;
                self.round = 0;
                self.now = t;
            }
            self.step(observers);
        }
    }

    /// The frames sent to other parts since the last call.
    pub fn take_crossings(&mut self) -> std::vec::Drain<'_, Crossing> {
        self.outbox.drain(..)
    }

    /// A frame from another part: on its wire, arriving when it said.
    pub fn accept(&mut self, crossing: Crossing) {
        debug_assert_eq!(crossing.part, self.index, "a crossing reaches the part it names");
        debug_assert!(crossing.on.at > self.now, "a crossing arrives after the window it was sent in");
        self.put_on_wire(crossing.wire, crossing.on);
    }

    fn put_on_wire(&mut self, wire: u32, mut on: OnWire) {
        let w = &mut self.wires[wire as usize];
        // Its arrival is booked once the frame ahead of it has arrived (as when the parts run as one).
        on.booked = on.booked.max(w.last_at);
        w.last_at = on.at;
        w.count += 1;
        on.seq = w.count;
        let (at, booked, first) = (on.at, on.booked, w.frames.is_empty());
        w.frames.push_back(on);
        if first {
            let key = self.tie_key(Wake::Link(wire), booked);
            self.calendar.book(Wake::Link(wire), at, booked, key);
        }
    }

    /// Wakes every node that still runs at `end` (pause accounting, statistics), after the last window.
    pub(super) fn finish(&mut self, end: Instant) {
        if end > self.now {
            self.now = end;
            self.round = 0;
        }
        for (device, stopped) in self.devices.iter_mut().zip(&self.stopped) {
            if !stopped {
                with_node!(device, n => Node::handle_timeout(n, end));
            }
        }
    }

    /// Delivers what has arrived by `now` and wakes the nodes due; then each node touched (in id order)
    /// runs its timers and transmits what it can at `now`.
    fn step(&mut self, observers: &mut Observers) {
        let now = self.now;
        while let Some((t, _, wake)) = self.calendar.pop_due(now) {
            self.wakeups += 1;
            match wake {
                Wake::Node(n) => {
                    debug_assert_eq!(self.scheduled[n as usize], Some(t));
                    self.scheduled[n as usize] = None;
                    self.mark(n);
                }
                Wake::Link(w) => {
                    let to = self.wires[w as usize].to;
                    loop {
                        let frames = &mut self.wires[w as usize].frames;
                        if frames.front().is_none_or(|f| f.at > now) {
                            break;
                        }
                        let f = frames.pop_front().expect("peeked");
                        self.deliver(to, f.at, f.frame, f.corrupt, observers);
                    }
                    if let Some(next) = self.wires[w as usize].frames.front() {
                        let (at, booked) = (next.at, next.booked);
                        let key = self.tie_key(Wake::Link(w), booked);
                        self.calendar.book(Wake::Link(w), at, booked, key);
                    }
                }
            }
        }
        while self.injected.peek().is_some_and(|Reverse(e)| e.0 <= now) {
            let Reverse((at, _, to, frame)) = self.injected.pop().expect("peeked");
            self.wakeups += 1;
            self.deliver(to, at, frame, false, observers);
        }
        let mut dirty = std::mem::take(&mut self.dirty);
        dirty.sort_unstable();
        for &n in &dirty {
            self.is_dirty[n as usize] = false;
            if !self.stopped[n as usize] {
                self.visit(n, now, observers);
            }
        }
        dirty.clear();
        self.dirty = dirty;
    }

    fn deliver(
        &mut self,
        (n, port): (u32, usize),
        at: Instant,
        frame: Vec<u8>,
        corrupt: bool,
        observers: &mut Observers,
    ) {
        if self.stopped[n as usize] {
            return;
        }
        if observers.keep_log {
            let to = Endpoint::new(self.ids[n as usize], port);
            observers.delivered.push(Delivered { at, to, frame: frame.clone() });
        }
        with_node!(&mut self.devices[n as usize], node => if corrupt {
            Node::handle_corrupt(node, port, frame, at);
        } else {
            Node::handle_frame(node, port, frame, at);
        });
        self.mark(n);
    }

    pub(super) fn mark(&mut self, n: u32) {
        if !self.is_dirty[n as usize] {
            self.is_dirty[n as usize] = true;
            self.dirty.push(n);
        }
    }

    /// Runs a node's timers, sends what its ports have ready, collects its events, and books its next
    /// wake-up.
    fn visit(&mut self, n: u32, now: Instant, observers: &mut Observers) {
        let i = n as usize;
        with_node!(&mut self.devices[i], node => Node::handle_timeout(node, now));
        let mut from = 0;
        while let Some(port) =
            with_node_ref!(&self.devices[i], node => Node::next_port_to_poll(node, from, now))
        {
            while let Some(tx) =
                with_node!(&mut self.devices[i], node => Node::poll_transmit(node, port, now))
            {
                self.transmit(n, port, now, tx, observers);
            }
            from = port + 1;
        }
        while let Some(event) = with_node!(&mut self.devices[i], node => Node::poll_event(node)) {
            self.events.push((now, self.round, self.ids[i], event));
        }
        self.reschedule(n);
    }

    /// Books the node's wake-up at the time it asks for, if that changed.
    pub(super) fn reschedule(&mut self, n: u32) {
        let i = n as usize;
        if self.stopped[i] {
            return;
        }
        let at = with_node_ref!(&self.devices[i], node => Node::poll_at(node));
        if at != self.scheduled[i] {
            self.scheduled[i] = at;
            match at {
                Some(t) => {
                    self.calendar.book(Wake::Node(n), t, self.now, self.tie_key(Wake::Node(n), self.now))
                }
                None => self.calendar.cancel(Wake::Node(n)),
            }
        }
    }

    fn transmit(&mut self, n: u32, port: usize, at: Instant, tx: Transmit, observers: &mut Observers) {
        let link = self.port_links[n as usize].get(port).copied().flatten();
        let mut out = tx.frame;
        // The frame is copied only for a tap or the log, which see it as it left the port.
        let mut keep = true;
        if observers.watch_sent() || !observers.captures.is_empty() {
            let from = Endpoint::new(self.ids[n as usize], port);
            if observers.watch_sent() {
                let to = link.map(|l| self.links[l as usize].link.to);
                let sent = Sent { at, from, to, queue: tx.queue, frame: out.clone() };
                if let Some(tap) = observers.tap.as_mut() {
                    keep = tap(&sent, &mut out);
                }
                if observers.keep_log {
                    observers.sent.push(sent);
                }
            }
            for c in observers.captures.iter_mut() {
                if c.ports.contains(&from) {
                    c.pcap.record(at, &out);
                }
            }
        }
        if let (Some(l), true) = (link, keep) {
            let state = &mut self.links[l as usize];
            let (part, wire) = state.dest;
            if let Fate::Delivered(on) = state.send(at, out) {
                if part == self.index {
                    self.put_on_wire(wire, on);
                } else {
                    self.outbox.push(Crossing { part, wire, on });
                }
            }
        }
    }
}
