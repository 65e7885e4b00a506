//! Virtual time: one discrete-event driver for the sans-I/O switch and NIC models, joined by links. The
//! same models the real-time daemons run are woken here at exactly the instants they ask for
//! ([`Node::poll_at`]), so a run is deterministic and as fast as the machine allows. It is the seed of the
//! fabric simulator (`docs/ARCHITECTURE.md`); today the model and NIC tests drive their scenarios with it.
//!
//! - A [`Node`] is a switch, a NIC, or a model of a test's own ([`Device::Custom`]): frames in
//!   ([`Node::handle_frame`]), frames out when its line is free ([`Node::poll_transmit`]: the models pace
//!   their own ports at line rate), and timers.
//! - A link joins two ports. A frame sent at `t` arrives at `t + serialisation + delay`, the serialisation
//!   being its bits on the wire (frame + [`WIRE_OVERHEAD_BYTES`]) at the sender's rate. A port without a link
//!   sends into the void.
//! - A tap sees every frame sent, and may rewrite it or drop it before it reaches the link (loss,
//!   corruption, captures). With [`Sim::keep_log`] every sent and delivered frame is recorded.
//! - Ties are broken by insertion order: the same inputs give the same run, every time.

use crate::model::scheduler::WIRE_OVERHEAD_BYTES;
use crate::model::{Event, PortId, Switch, Transmit};
use crate::nic::Nic;
use std::any::Any;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

/// What the driver needs of a model.
pub trait Node: Any {
    fn port_count(&self) -> usize;
    /// A frame arrived on `port` at `now`.
    fn handle_frame(&mut self, port: usize, frame: Vec<u8>, now: u64);
    /// The next frame `port` sends at `now`, if its line is free and something is due (with the egress
    /// queue it left from; `None` for a frame the port made itself, such as PFC, or a NIC's).
    fn poll_transmit(&mut self, port: usize, now: u64) -> Option<Transmit>;
    /// The next instant the node needs to be woken.
    fn poll_at(&self) -> Option<u64>;
    /// Runs whatever is due at `now`.
    fn handle_timeout(&mut self, now: u64);
    /// Something that happened inside the node, for an observer (a switch's storms, XOFF/XON, ...).
    fn poll_event(&mut self) -> Option<Event> {
        None
    }
}

impl Node for Switch {
    fn port_count(&self) -> usize {
        Switch::port_count(self)
    }

    fn handle_frame(&mut self, port: usize, frame: Vec<u8>, now: u64) {
        Switch::handle_frame(self, PortId::new(port), frame, now);
    }

    fn poll_transmit(&mut self, port: usize, now: u64) -> Option<Transmit> {
        Switch::poll_transmit(self, PortId::new(port), now)
    }

    fn poll_at(&self) -> Option<u64> {
        Switch::poll_at(self)
    }

    fn handle_timeout(&mut self, now: u64) {
        Switch::handle_timeout(self, now);
    }

    fn poll_event(&mut self) -> Option<Event> {
        Switch::poll_event(self)
    }
}

/// A NIC has one port, 0.
impl Node for Nic {
    fn port_count(&self) -> usize {
        1
    }

    fn handle_frame(&mut self, _port: usize, frame: Vec<u8>, now: u64) {
        Nic::handle_frame(self, &frame, now);
    }

    fn poll_transmit(&mut self, _port: usize, now: u64) -> Option<Transmit> {
        Nic::poll_transmit(self, now).map(|frame| Transmit { frame, queue: None })
    }

    fn poll_at(&self) -> Option<u64> {
        Nic::poll_at(self)
    }

    fn handle_timeout(&mut self, now: u64) {
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

impl Device {
    fn node(&self) -> &dyn Node {
        match self {
            Device::Switch(s) => s.as_ref(),
            Device::Nic(n) => n.as_ref(),
            Device::Custom(c) => c.as_ref(),
        }
    }

    fn node_mut(&mut self) -> &mut dyn Node {
        match self {
            Device::Switch(s) => s.as_mut(),
            Device::Nic(n) => n.as_mut(),
            Device::Custom(c) => c.as_mut(),
        }
    }
}

/// A port of a node: (node id, port).
pub type Endpoint = (usize, usize);

/// One direction of a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Link {
    pub to: Endpoint,
    /// The sender's line rate.
    pub rate_mbps: u32,
    /// Propagation delay.
    pub delay_ns: u64,
}

/// A frame as it left a port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sent {
    pub at: u64,
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
    pub at: u64,
    pub to: Endpoint,
    pub frame: Vec<u8>,
}

/// Decides a sent frame's fate before it reaches the link: `false` loses it; it may be rewritten.
pub type Tap = Box<dyn FnMut(&Sent, &mut Vec<u8>) -> bool>;

/// A frame in flight: (arrival, insertion order, destination, frame), earliest first.
type InFlight = Reverse<(u64, u64, Endpoint, Vec<u8>)>;

/// The discrete-event driver.
pub struct Sim {
    devices: Vec<Device>,
    links: BTreeMap<Endpoint, Link>,
    in_flight: BinaryHeap<InFlight>,
    order: u64,
    now: u64,
    tap: Option<Tap>,
    /// Record every frame sent and delivered, and every event, in [`Sim::sent`], [`Sim::delivered`] and
    /// [`Sim::events`].
    pub keep_log: bool,
    pub sent: Vec<Sent>,
    pub delivered: Vec<Delivered>,
    /// (time, node, event).
    pub events: Vec<(u64, usize, Event)>,
}

impl Default for Sim {
    fn default() -> Self {
        Sim::new()
    }
}

impl Sim {
    pub fn new() -> Sim {
        Sim {
            devices: Vec::new(),
            links: BTreeMap::new(),
            in_flight: BinaryHeap::new(),
            order: 0,
            now: 0,
            tap: None,
            keep_log: false,
            sent: Vec::new(),
            delivered: Vec::new(),
            events: Vec::new(),
        }
    }

    /// Adds a node; its id is its position.
    pub fn add(&mut self, device: Device) -> usize {
        self.devices.push(device);
        self.devices.len() - 1
    }

    /// Joins two ports with a full-duplex link; each direction serialises at its sender's rate.
    pub fn connect(&mut self, a: Endpoint, a_rate_mbps: u32, b: Endpoint, b_rate_mbps: u32, delay_ns: u64) {
        self.links.insert(a, Link { to: b, rate_mbps: a_rate_mbps, delay_ns });
        self.links.insert(b, Link { to: a, rate_mbps: b_rate_mbps, delay_ns });
    }

    pub fn set_tap(&mut self, tap: Tap) {
        self.tap = Some(tap);
    }

    pub fn now(&self) -> u64 {
        self.now
    }

    pub fn switch(&mut self, id: usize) -> &mut Switch {
        match &mut self.devices[id] {
            Device::Switch(s) => s,
            _ => panic!("node {id} is not a switch"),
        }
    }

    pub fn nic(&mut self, id: usize) -> &mut Nic {
        match &mut self.devices[id] {
            Device::Nic(n) => n,
            _ => panic!("node {id} is not a NIC"),
        }
    }

    /// A [`Device::Custom`] node as the type it was added as.
    pub fn custom<T: Node>(&mut self, id: usize) -> &mut T {
        match &mut self.devices[id] {
            Device::Custom(c) => {
                let any: &mut dyn Any = c.as_mut();
                any.downcast_mut()
                    .unwrap_or_else(|| panic!("node {id} is not a {}", std::any::type_name::<T>()))
            }
            _ => panic!("node {id} is not a custom node"),
        }
    }

    /// Puts a frame on the way to a port, arriving at `at` (a host outside the simulation, a test).
    pub fn inject(&mut self, to: Endpoint, at: u64, frame: Vec<u8>) {
        self.order += 1;
        self.in_flight.push(Reverse((at, self.order, to, frame)));
    }

    /// Runs every event up to `end` inclusive, then wakes every node at `end` (pause accounting,
    /// statistics), unless `end` is unbounded (from `u64::MAX / 2` on: until nothing is left to do).
    pub fn run_until(&mut self, end: u64) {
        let mut stalls = 0u32;
        loop {
            let nodes = self.devices.iter().filter_map(|d| d.node().poll_at());
            let next = nodes.chain(self.in_flight.peek().map(|Reverse(e)| e.0)).min();
            let Some(t) = next.filter(|&t| t <= end) else { break };
            if t <= self.now {
                stalls += 1;
                assert!(stalls < 1000, "a model keeps asking for {t} at {} without progress", self.now);
            } else {
                stalls = 0;
            }
            self.now = self.now.max(t);
            self.step();
        }
        if end < u64::MAX / 2 {
            self.now = self.now.max(end);
            for device in &mut self.devices {
                device.node_mut().handle_timeout(self.now);
            }
        }
    }

    /// Delivers what has arrived by `now`, then runs every node's timers and transmissions at `now`.
    fn step(&mut self) {
        let now = self.now;
        while self.in_flight.peek().is_some_and(|Reverse(e)| e.0 <= now) {
            let Reverse((at, _, to, frame)) = self.in_flight.pop().expect("peeked");
            if self.keep_log {
                self.delivered.push(Delivered { at, to, frame: frame.clone() });
            }
            self.devices[to.0].node_mut().handle_frame(to.1, frame, at);
        }
        for id in 0..self.devices.len() {
            let node = self.devices[id].node_mut();
            node.handle_timeout(now);
            for port in 0..node.port_count() {
                while let Some(tx) = self.devices[id].node_mut().poll_transmit(port, now) {
                    self.transmit((id, port), now, tx);
                }
            }
            while let Some(event) = self.devices[id].node_mut().poll_event() {
                if self.keep_log {
                    self.events.push((now, id, event));
                }
            }
        }
    }

    fn transmit(&mut self, from: Endpoint, at: u64, tx: Transmit) {
        let link = self.links.get(&from).copied();
        let mut out = tx.frame;
        // The frame is copied only for a tap or the log, which see it as it left the port.
        let mut keep = true;
        if self.tap.is_some() || self.keep_log {
            let sent = Sent { at, from, to: link.map(|l| l.to), queue: tx.queue, frame: out.clone() };
            if let Some(tap) = self.tap.as_mut() {
                keep = tap(&sent, &mut out);
            }
            if self.keep_log {
                self.sent.push(sent);
            }
        }
        if let (Some(link), true) = (link, keep) {
            let bits = (out.len() as u64 + WIRE_OVERHEAD_BYTES) * 8;
            let serialisation = (bits * 1000).div_ceil(u64::from(link.rate_mbps.max(1)));
            self.inject(link.to, at + serialisation + link.delay_ns, out);
        }
    }
}

#[cfg(test)]
mod tests;
