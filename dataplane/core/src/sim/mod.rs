//! Virtual time: one discrete-event driver for the sans-I/O switch and NIC models, joined by links. The
//! same models the real-time daemons run are woken here at exactly the instants they ask for
//! ([`Node::poll_at`]), so a run is deterministic and as fast as the machine allows: the fabric simulator
//! (`swctl sim run`, `docs/simulator.md`) and the model and NIC tests run on it.
//!
//! - A [`Node`] is a switch, a NIC, or a model of a test's own ([`Device::Custom`]): frames in
//!   ([`Node::handle_frame`]), frames out when its line is free ([`Node::poll_transmit`]: the models pace
//!   their own ports at line rate), timers, and a new configuration ([`Node::apply`]).
//! - A link joins two ports ([`link`]): a frame leaves at the sender's rate, timed in picoseconds so that
//!   serialisation at 400G is not rounded, and arrives its propagation delay later. A link may lose or
//!   corrupt frames, in a fixed pattern or by seeded chance. A port without a link sends into the void.
//! - A tap sees every frame sent, and may rewrite it or drop it before it reaches the link; captures
//!   ([`Sim::capture`]) record what ports send as pcap. With [`Sim::keep_log`] every sent and delivered frame
//!   is recorded; the nodes' events always are ([`Sim::events`]).
//! - The scheduler is a calendar of wake-ups: a node is visited when a frame reaches it or when the time it
//!   asked for comes, never otherwise. Ties are broken by insertion order and nodes at one instant are
//!   visited in id order: the same inputs (and seed) give the same run, on every machine.

mod calendar;
pub mod link;
pub mod pcap;

use crate::model::config::ConfigDb;
use crate::model::{DropReason, Event, PortId, Switch, Transmit};
use crate::nic::Nic;
use crate::time::{Instant, Nanos};
pub use link::{Endpoint, Frames, Impairment, Link, LinkStats, NodeId};
use link::{Fate, LinkState};
use pcap::Pcap;
use std::any::Any;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// What the driver needs of a model.
pub trait Node: Any {
    fn port_count(&self) -> usize;
    /// A frame arrived on `port` at `now`.
    fn handle_frame(&mut self, port: usize, frame: Vec<u8>, now: Instant);
    /// A frame arrived on `port` at `now` with a bad FCS (corrupted on the link): a real port counts it
    /// as a receive error and drops it. Default: dropped, uncounted.
    fn handle_corrupt(&mut self, _port: usize, _frame: Vec<u8>, _now: Instant) {}
    /// The next frame `port` sends at `now`, if its line is free and something is due (with the egress
    /// queue it left from; `None` for a frame the port made itself, such as PFC, or a NIC's).
    fn poll_transmit(&mut self, port: usize, now: Instant) -> Option<Transmit>;
    /// The first port from `from` on that may have a frame to send at `now`: ports passed over would
    /// answer [`Node::poll_transmit`] with `None` and change nothing. Default: `from` itself.
    fn next_port_to_poll(&self, from: usize, _now: Instant) -> Option<usize> {
        (from < self.port_count()).then_some(from)
    }
    /// The next instant the node needs to be woken.
    fn poll_at(&self) -> Option<Instant>;
    /// Runs whatever is due at `now`.
    fn handle_timeout(&mut self, now: Instant);
    /// Something that happened inside the node, for an observer (a switch's storms, XOFF/XON, ...).
    fn poll_event(&mut self) -> Option<Event> {
        None
    }
    /// Takes a new configuration (CONFIG_DB tables) at `now`, whole or not at all.
    fn apply(&mut self, _config: &ConfigDb, _now: Instant) -> Result<(), String> {
        Err("this node takes no configuration".into())
    }
}

impl Node for Switch {
    fn port_count(&self) -> usize {
        Switch::port_count(self)
    }

    fn handle_frame(&mut self, port: usize, frame: Vec<u8>, now: Instant) {
        Switch::handle_frame(self, PortId::new(port), frame, now);
    }

    fn handle_corrupt(&mut self, port: usize, _frame: Vec<u8>, now: Instant) {
        self.handle_timeout(now);
        self.count_rx_lost(PortId::new(port), DropReason::FcsError, 1);
    }

    fn poll_transmit(&mut self, port: usize, now: Instant) -> Option<Transmit> {
        Switch::poll_transmit(self, PortId::new(port), now)
    }

    fn next_port_to_poll(&self, from: usize, now: Instant) -> Option<usize> {
        Switch::next_port_to_poll(self, from, now).map(PortId::index)
    }

    fn poll_at(&self) -> Option<Instant> {
        Switch::poll_at(self)
    }

    fn handle_timeout(&mut self, now: Instant) {
        Switch::handle_timeout(self, now);
    }

    fn poll_event(&mut self) -> Option<Event> {
        Switch::poll_event(self)
    }

    fn apply(&mut self, config: &ConfigDb, now: Instant) -> Result<(), String> {
        Switch::apply(self, config, now).map(drop).map_err(|e| e.to_string())
    }
}

/// A NIC has one port, 0.
impl Node for Nic {
    fn port_count(&self) -> usize {
        1
    }

    fn handle_frame(&mut self, _port: usize, frame: Vec<u8>, now: Instant) {
        Nic::handle_frame(self, &frame, now);
        // Built by a NIC of this crate (every frame reaching a NIC here is, through its switches): zeros
        // past its headers, which the NIC then need not read again. A custom node that sends a NIC frames
        // of its own must pad them with zeros as well (debug builds check).
        self.recycle_zero_padded(frame);
    }

    fn poll_transmit(&mut self, _port: usize, now: Instant) -> Option<Transmit> {
        Nic::poll_transmit(self, now).map(|frame| Transmit { frame, queue: None })
    }

    fn poll_at(&self) -> Option<Instant> {
        Nic::poll_at(self)
    }

    fn handle_timeout(&mut self, now: Instant) {
        Nic::handle_timeout(self, now);
    }
}

/// The models a simulation holds.
pub enum Device {
    Switch(Box<Switch>),
    Nic(Box<Nic>),
    /// Any other model (a test's idealised port, ...); reached again with [`Sim::custom`].
    Custom(Box<dyn Node>),
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

impl Device {
    fn node_mut(&mut self) -> &mut dyn Node {
        match self {
            Device::Switch(s) => s.as_mut(),
            Device::Nic(n) => n.as_mut(),
            Device::Custom(c) => c.as_mut(),
        }
    }
}

/// A frame as it left a port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sent {
    pub at: Instant,
    pub from: Endpoint,
    /// Where the link takes it (`None`: the port has no link).
    pub to: Option<Endpoint>,
    /// The egress queue it left from (`None`: made by the port itself, or a NIC's).
    pub queue: Option<u8>,
    pub frame: Vec<u8>,
}

/// A frame as it reached a port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivered {
    pub at: Instant,
    pub to: Endpoint,
    pub frame: Vec<u8>,
}

/// Decides a sent frame's fate before it reaches the link: `false` loses it; it may be rewritten.
pub type Tap = Box<dyn FnMut(&Sent, &mut Vec<u8>) -> bool>;

/// What wakes up at an instant: a node (at the time it asked for), or a link (its first frame arrives).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Wake {
    Node(NodeId),
    Link(usize),
}

/// [`Sim::run_until`] this or later runs until nothing is left to do, with no final wake-up.
pub const UNBOUNDED: Instant = Instant::from_ns(u64::MAX / 2);

/// A frame put on the way to a port from outside: (arrival, insertion order, destination, frame).
type Injected = Reverse<(Instant, u64, Endpoint, Vec<u8>)>;

/// A capture: frames sent by some ports.
struct Capture {
    ports: Vec<Endpoint>,
    pcap: Pcap,
}

/// The discrete-event driver.
pub struct Sim {
    devices: Vec<Device>,
    /// Per node, per port: its link's index in `links`.
    port_links: Vec<Vec<Option<usize>>>,
    links: Vec<LinkState>,
    calendar: calendar::Calendar,
    /// Per node: its wake-up in the calendar.
    scheduled: Vec<Option<Instant>>,
    injected: BinaryHeap<Injected>,
    /// Nodes no longer driven (a host that stopped): frames to them are lost.
    stopped: Vec<bool>,
    dirty: Vec<NodeId>,
    is_dirty: Vec<bool>,
    order: u64,
    now: Instant,
    seed: u64,
    tap: Option<Tap>,
    captures: Vec<Capture>,
    /// Wake-ups and arrivals handled (the simulator's events).
    pub wakeups: u64,
    /// Record every frame sent and delivered in [`Sim::sent`] and [`Sim::delivered`].
    pub keep_log: bool,
    pub sent: Vec<Sent>,
    pub delivered: Vec<Delivered>,
    /// (time, node, event), always recorded; take them as they come ([`std::mem::take`]) on long runs.
    pub events: Vec<(Instant, NodeId, Event)>,
}

impl Default for Sim {
    fn default() -> Self {
        Sim::new()
    }
}

impl Sim {
    pub fn new() -> Sim {
        Sim::with_seed(0)
    }

    /// A simulation whose random link impairments draw from `seed`.
    pub fn with_seed(seed: u64) -> Sim {
        Sim {
            devices: Vec::new(),
            port_links: Vec::new(),
            links: Vec::new(),
            calendar: calendar::Calendar::default(),
            scheduled: Vec::new(),
            injected: BinaryHeap::new(),
            stopped: Vec::new(),
            dirty: Vec::new(),
            is_dirty: Vec::new(),
            order: 0,
            now: Instant::ZERO,
            seed,
            tap: None,
            captures: Vec::new(),
            wakeups: 0,
            keep_log: false,
            sent: Vec::new(),
            delivered: Vec::new(),
            events: Vec::new(),
        }
    }

    /// Adds a node; its id is its position.
    pub fn add(&mut self, device: Device) -> NodeId {
        let id = NodeId::new(self.devices.len());
        self.devices.push(device);
        self.port_links.push(Vec::new());
        self.scheduled.push(None);
        self.stopped.push(false);
        self.is_dirty.push(false);
        id
    }

    pub fn node_count(&self) -> usize {
        self.devices.len()
    }

    /// Joins two ports with a full-duplex link; each direction serialises at its sender's rate.
    pub fn connect(&mut self, a: Endpoint, a_rate_mbps: u32, b: Endpoint, b_rate_mbps: u32, delay: Nanos) {
        self.add_link(a, Link::new(b, a_rate_mbps, delay));
        self.add_link(b, Link::new(a, b_rate_mbps, delay));
    }

    /// One direction of a link, from `from` (replacing any it had).
    pub fn add_link(&mut self, from: Endpoint, link: Link) {
        // Each direction draws its own random sequence, from the seed and its place in the topology.
        let (node, port) = (from.node.index(), from.port);
        let mut mix = self.seed ^ ((node as u64) << 32 | port as u64).wrapping_mul(0x2545_f491_4f6c_dd1d);
        let seed = link::splitmix64(&mut mix);
        let ports = &mut self.port_links[node];
        if ports.len() <= port {
            ports.resize(port + 1, None);
        }
        match ports[port] {
            Some(i) => self.links[i] = LinkState::new(link, seed),
            None => {
                ports[port] = Some(self.links.len());
                self.links.push(LinkState::new(link, seed));
            }
        }
    }

    /// The link leaving `from`, if any.
    pub fn link(&self, from: Endpoint) -> Option<&Link> {
        self.link_index(from).map(|i| &self.links[i].link)
    }

    /// What the link leaving `from` carried, lost and corrupted.
    pub fn link_stats(&self, from: Endpoint) -> Option<LinkStats> {
        self.link_index(from).map(|i| self.links[i].stats)
    }

    /// Takes the link at `from` down (both directions) or brings it back up, now: while it is down every
    /// frame put on it is lost (counted in [`LinkStats::lost`]), and so are the frames on the wire when it
    /// goes down; a switch at either end sees its port go oper down or up ([`Switch::set_port_oper`]: it
    /// drops what is queued to the port and stops routing over it). A NIC end is not told (a host whose
    /// only link fails has nothing to fail over to). Returns false if `from` has no link.
    pub fn set_link_up(&mut self, from: Endpoint, up: bool) -> bool {
        let Some(a) = self.link_index(from) else { return false };
        let to = self.links[a].link.to;
        let now = self.now;
        for l in [Some(a), self.link_index(to)].into_iter().flatten() {
            let state = &mut self.links[l];
            state.down = !up;
            if !up {
                state.stats.lost += state.wire.len() as u64;
                state.wire.clear();
            }
        }
        for Endpoint { node, port } in [from, to] {
            if let Device::Switch(s) = &mut self.devices[node.index()] {
                s.set_port_oper(PortId::new(port), up, now);
                self.mark(node);
                self.reschedule(node);
            }
        }
        true
    }

    /// Whether the link at `from` is up (false when it has none).
    pub fn link_is_up(&self, from: Endpoint) -> bool {
        self.link_index(from).is_some_and(|l| !self.links[l].down)
    }

    fn link_index(&self, from: Endpoint) -> Option<usize> {
        self.port_links.get(from.node.index())?.get(from.port).copied().flatten()
    }

    pub fn set_tap(&mut self, tap: Tap) {
        self.tap = Some(tap);
    }

    /// Records, from now on, every frame these ports send (timestamped when it leaves, ns since the start
    /// of the simulation); returns the capture's id for [`Sim::capture_bytes`].
    pub fn capture(&mut self, ports: Vec<Endpoint>) -> usize {
        self.captures.push(Capture { ports, pcap: Pcap::new() });
        self.captures.len() - 1
    }

    /// The capture as a pcap file, and how many frames it holds.
    pub fn capture_bytes(&self, id: usize) -> (&[u8], u64) {
        let pcap = &self.captures[id].pcap;
        (pcap.bytes(), pcap.frames())
    }

    pub fn now(&self) -> Instant {
        self.now
    }

    pub fn switch(&mut self, id: NodeId) -> &mut Switch {
        match &mut self.devices[id.index()] {
            Device::Switch(s) => s,
            _ => panic!("node {id} is not a switch"),
        }
    }

    pub fn nic(&mut self, id: NodeId) -> &mut Nic {
        match &mut self.devices[id.index()] {
            Device::Nic(n) => n,
            _ => panic!("node {id} is not a NIC"),
        }
    }

    /// A node, to read.
    pub fn device(&self, id: NodeId) -> &Device {
        &self.devices[id.index()]
    }

    /// A [`Device::Custom`] node as the type it was added as.
    pub fn custom<T: Node>(&mut self, id: NodeId) -> &mut T {
        match &mut self.devices[id.index()] {
            Device::Custom(c) => {
                let any: &mut dyn Any = c.as_mut();
                any.downcast_mut()
                    .unwrap_or_else(|| panic!("node {id} is not a {}", std::any::type_name::<T>()))
            }
            _ => panic!("node {id} is not a custom node"),
        }
    }

    /// Gives a node a new configuration now ([`Node::apply`]).
    pub fn apply(&mut self, id: NodeId, config: &ConfigDb) -> Result<(), String> {
        let now = self.now;
        let result = self.devices[id.index()].node_mut().apply(config, now);
        self.reschedule(id);
        result
    }

    /// Stops driving a node from now on (a host whose process ended): it sends nothing more, and frames
    /// that reach it are lost. Its state stays readable.
    pub fn stop(&mut self, id: NodeId) {
        self.stopped[id.index()] = true;
        self.scheduled[id.index()] = None;
        self.calendar.cancel(Wake::Node(id));
    }

    pub fn is_stopped(&self, id: NodeId) -> bool {
        self.stopped[id.index()]
    }

    /// Puts a frame on the way to a port, arriving at `at` (a host outside the simulation, a test).
    pub fn inject(&mut self, to: Endpoint, at: Instant, frame: Vec<u8>) {
        self.order += 1;
        self.injected.push(Reverse((at, self.order, to, frame)));
    }

    /// Runs every event up to `end` inclusive, then wakes every node at `end` (pause accounting,
    /// statistics), unless `end` is unbounded (from [`UNBOUNDED`] on: until nothing is left to do).
    pub fn run_until(&mut self, end: Instant) {
        let unbounded = end >= UNBOUNDED;
        // Nodes may have been changed from outside since the last run (flows added, storms started).
        for id in 0..self.devices.len() {
            self.reschedule(NodeId::new(id));
        }
        let mut stalls = 0u32;
        while let Some(t) = self.next_time().filter(|&t| t <= end) {
            if t <= self.now {
                stalls += 1;
                assert!(stalls < 1000, "a model keeps asking for {t} at {} without progress", self.now);
            } else {
                stalls = 0;
            }
            self.now = self.now.max(t);
            self.step();
        }
        if !unbounded {
            self.now = self.now.max(end);
            for (device, stopped) in self.devices.iter_mut().zip(&self.stopped) {
                if !stopped {
                    device.node_mut().handle_timeout(self.now);
                }
            }
        }
    }

    /// The earliest pending instant.
    fn next_time(&mut self) -> Option<Instant> {
        let calendar = self.calendar.peek().map(|e| e.0);
        let injected = self.injected.peek().map(|Reverse(e)| e.0);
        calendar.into_iter().chain(injected).min()
    }

    /// Delivers what has arrived by `now` and wakes the nodes due; then each node touched (in id order)
    /// runs its timers and transmits what it can at `now`.
    fn step(&mut self) {
        let now = self.now;
        while let Some((t, _, wake)) = self.calendar.pop_due(now) {
            self.wakeups += 1;
            match wake {
                Wake::Node(id) => {
                    debug_assert_eq!(self.scheduled[id.index()], Some(t));
                    self.scheduled[id.index()] = None;
                    self.mark(id);
                }
                Wake::Link(l) => {
                    while self.links[l].wire.front().is_some_and(|f| f.at <= now) {
                        let f = self.links[l].wire.pop_front().expect("peeked");
                        let to = self.links[l].link.to;
                        self.deliver(to, f.at, f.frame, f.corrupt);
                    }
                    if let Some(next) = self.links[l].wire.front().map(|f| f.at) {
                        self.push(next, Wake::Link(l));
                    }
                }
            }
        }
        while self.injected.peek().is_some_and(|Reverse(e)| e.0 <= now) {
            let Reverse((at, _, to, frame)) = self.injected.pop().expect("peeked");
            self.wakeups += 1;
            self.deliver(to, at, frame, false);
        }
        let mut dirty = std::mem::take(&mut self.dirty);
        dirty.sort_unstable();
        for &id in &dirty {
            self.is_dirty[id.index()] = false;
            if !self.stopped[id.index()] {
                self.visit(id, now);
            }
        }
        dirty.clear();
        self.dirty = dirty;
    }

    fn deliver(&mut self, to: Endpoint, at: Instant, frame: Vec<u8>, corrupt: bool) {
        if self.stopped[to.node.index()] {
            return;
        }
        if self.keep_log {
            self.delivered.push(Delivered { at, to, frame: frame.clone() });
        }
        with_node!(&mut self.devices[to.node.index()], node => if corrupt {
            Node::handle_corrupt(node, to.port, frame, at);
        } else {
            Node::handle_frame(node, to.port, frame, at);
        });
        self.mark(to.node);
    }

    fn mark(&mut self, id: NodeId) {
        if !self.is_dirty[id.index()] {
            self.is_dirty[id.index()] = true;
            self.dirty.push(id);
        }
    }

    /// Runs a node's timers, sends what its ports have ready, collects its events, and books its next
    /// wake-up.
    fn visit(&mut self, id: NodeId, now: Instant) {
        with_node!(&mut self.devices[id.index()], n => Node::handle_timeout(n, now));
        let mut from = 0;
        while let Some(port) =
            with_node_ref!(&self.devices[id.index()], n => Node::next_port_to_poll(n, from, now))
        {
            while let Some(tx) =
                with_node!(&mut self.devices[id.index()], n => Node::poll_transmit(n, port, now))
            {
                self.transmit(id.port(port), now, tx);
            }
            from = port + 1;
        }
        while let Some(event) = with_node!(&mut self.devices[id.index()], n => Node::poll_event(n)) {
            self.events.push((now, id, event));
        }
        self.reschedule(id);
    }

    /// Books the node's wake-up at the time it asks for, if that changed.
    fn reschedule(&mut self, id: NodeId) {
        if self.stopped[id.index()] {
            return;
        }
        let at = with_node_ref!(&self.devices[id.index()], n => Node::poll_at(n));
        if at != self.scheduled[id.index()] {
            self.scheduled[id.index()] = at;
            match at {
                Some(t) => self.push(t, Wake::Node(id)),
                None => self.calendar.cancel(Wake::Node(id)),
            }
        }
    }

    /// Books a wake-up (replacing the one pending for the same node or link).
    fn push(&mut self, at: Instant, wake: Wake) {
        self.order += 1;
        self.calendar.book(wake, at, self.order);
    }

    fn transmit(&mut self, from: Endpoint, at: Instant, tx: Transmit) {
        let link = self.link_index(from);
        let mut out = tx.frame;
        // The frame is copied only for a tap or the log, which see it as it left the port.
        let mut keep = true;
        if self.tap.is_some() || self.keep_log {
            let to = link.map(|l| self.links[l].link.to);
            let sent = Sent { at, from, to, queue: tx.queue, frame: out.clone() };
            if let Some(tap) = self.tap.as_mut() {
                keep = tap(&sent, &mut out);
            }
            if self.keep_log {
                self.sent.push(sent);
            }
        }
        for c in &mut self.captures {
            if c.ports.contains(&from) {
                c.pcap.record(at, &out);
            }
        }
        if let (Some(l), true) = (link, keep) {
            let was_idle = self.links[l].wire.is_empty();
            if let Fate::Delivered { at: arrival } = self.links[l].send(at, out)
                && was_idle
            {
                self.push(arrival, Wake::Link(l));
            }
        }
    }
}

#[cfg(test)]
mod tests;
