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
//!   asked for comes, never otherwise. Frames arriving at one instant are delivered in the order their links
//!   were added and nodes at one instant are visited in id order: the same inputs (and seed) give the same
//!   run, on every machine.
//! - A simulation may be split into parts ([`Sim::partition`], [`Part`]) that run side by side in windows
//!   as long as the shortest link delay between them: the same run, whether the parts run one after another
//!   ([`Sim::run_until`]) or on threads (the caller's: this crate has none; [`Sim::begin_run`]).

mod calendar;
pub mod link;
mod part;
pub mod pcap;

use crate::model::config::ConfigDb;
use crate::model::{DropReason, Event, PortId, Switch, Transmit};
use crate::nic::Nic;
use crate::time::{Instant, Nanos};
pub use link::{Endpoint, Frames, Impairment, Link, LinkStats, NodeId};
use link::{LinkState, Wire};
use part::{Capture, Observers};
pub use part::{Crossing, Part};
use pcap::Pcap;
use std::any::Any;
use std::cmp::Reverse;

/// What the driver needs of a model. A node is `Send`: the parts of a simulation may run on threads.
pub trait Node: Any + Send {
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
/// A simulation with a tap runs as one part.
pub type Tap = Box<dyn FnMut(&Sent, &mut Vec<u8>) -> bool>;

/// What wakes up at an instant, within a part: a node (at the time it asked for), or a wire (its first frame
/// arrives). Indices are the part's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Wake {
    Node(u32),
    Link(u32),
}

/// How frames arriving at one instant and booked at one instant are ordered: by a hash of their link
/// and of what this says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TieOrder {
    /// The booking instant (the default): a different order at every instant.
    #[default]
    Instant,
    /// The frame's number on its link: the same order when every time of a run is scaled by N (a
    /// time-scaled lab against its full-speed model, `nic::scale_tests`).
    Count,
}

/// [`Sim::run_until`] this or later runs until nothing is left to do, with no final wake-up.
pub const UNBOUNDED: Instant = Instant::from_ns(u64::MAX / 2);

/// The last instant of a window that starts at `t`: nothing sent in it reaches another part by then.
pub fn window_last(t: Instant, lookahead_ns: u64, end: Instant) -> Instant {
    Instant::from_ns(t.as_ns().saturating_add(lookahead_ns.max(1) - 1)).min(end)
}

/// The discrete-event driver.
pub struct Sim {
    parts: Vec<Part>,
    /// Per node: (part, index in the part).
    place: Vec<(u32, u32)>,
    /// Per link in the order added: (the sender's part, index in its `links`).
    link_place: Vec<(u32, u32)>,
    /// The shortest delay of a link between two parts, in ns (`u64::MAX` with one part).
    lookahead_ns: u64,
    order: u64,
    now: Instant,
    seed: u64,
    tap: Option<Tap>,
    captures: Vec<Capture>,
    ties: TieOrder,
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
            parts: vec![Part::new(0)],
            place: Vec::new(),
            link_place: Vec::new(),
            lookahead_ns: u64::MAX,
            order: 0,
            now: Instant::ZERO,
            seed,
            tap: None,
            captures: Vec::new(),
            ties: TieOrder::default(),
            wakeups: 0,
            keep_log: false,
            sent: Vec::new(),
            delivered: Vec::new(),
            events: Vec::new(),
        }
    }

    /// Adds a node; its id is its position. It goes to the last part.
    pub fn add(&mut self, device: Device) -> NodeId {
        let id = NodeId::new(self.place.len());
        let p = self.parts.len() - 1;
        let local = self.parts[p].add(id, device, false);
        self.place.push((p as u32, local));
        id
    }

    pub fn node_count(&self) -> usize {
        self.place.len()
    }

    /// How ties are ordered from now on ([`TieOrder`]).
    pub fn set_tie_order(&mut self, ties: TieOrder) {
        self.ties = ties;
        for p in &mut self.parts {
            p.ties = ties;
        }
    }

    /// How many parts the simulation runs as ([`Sim::partition`]).
    pub fn part_count(&self) -> usize {
        self.parts.len()
    }

    /// Joins two ports with a full-duplex link; each direction serialises at its sender's rate.
    pub fn connect(&mut self, a: Endpoint, a_rate_mbps: u32, b: Endpoint, b_rate_mbps: u32, delay: Nanos) {
        self.add_link(a, Link::new(b, a_rate_mbps, delay));
        self.add_link(b, Link::new(a, b_rate_mbps, delay));
    }

    /// One direction of a link, from `from` (replacing any it had: frames on the old one still arrive).
    pub fn add_link(&mut self, from: Endpoint, link: Link) {
        // Each direction draws its own random sequence, from the seed and its place in the topology.
        let (node, port) = (from.node.index(), from.port);
        let mut mix = self.seed ^ ((node as u64) << 32 | port as u64).wrapping_mul(0x2545_f491_4f6c_dd1d);
        let seed = link::splitmix64(&mut mix);
        let (tp, tl) = self.place[node];
        let (rp, rl) = self.place[link.to.node.index()];
        let replaced = self.parts[tp as usize].port_links[tl as usize].get(port).copied().flatten();
        let old_dest = replaced.map(|l| self.parts[tp as usize].links[l as usize].dest);
        let to = (rl, link.to.port);
        let global = match replaced {
            Some(l) => self.link_place.iter().position(|&x| x == (tp, l)).expect("a placed link") as u32,
            None => self.link_place.len() as u32,
        };
        let dest = match old_dest {
            // A link replaced within a part keeps its wire; what was on the old link is lost with it.
            Some((p, w)) if p == rp => {
                let rx = &mut self.parts[rp as usize];
                rx.wires[w as usize] = Wire::new(to, global);
                rx.calendar.cancel(Wake::Link(w));
                (rp, w)
            }
            _ => {
                if let Some((p, w)) = old_dest {
                    let old = &mut self.parts[p as usize];
                    old.wires[w as usize].frames.clear();
                    old.calendar.cancel(Wake::Link(w));
                }
                let rx = &mut self.parts[rp as usize];
                rx.wires.push(Wire::new(to, global));
                (rp, (rx.wires.len() - 1) as u32)
            }
        };
        if rp != tp {
            self.lookahead_ns = self.lookahead_ns.min(link.delay.as_ns());
        }
        let tx = &mut self.parts[tp as usize];
        let ports = &mut tx.port_links[tl as usize];
        if ports.len() <= port {
            ports.resize(port + 1, None);
        }
        match ports[port] {
            Some(i) => tx.links[i as usize] = LinkState::new(link, seed, dest),
            None => {
                ports[port] = Some(tx.links.len() as u32);
                tx.links.push(LinkState::new(link, seed, dest));
                self.link_place.push((tp, (tx.links.len() - 1) as u32));
            }
        }
    }

    /// The link leaving `from`: its part and index there.
    fn link_at(&self, from: Endpoint) -> Option<(usize, usize)> {
        let &(p, n) = self.place.get(from.node.index())?;
        let l = self.parts[p as usize].port_links[n as usize].get(from.port).copied().flatten()?;
        Some((p as usize, l as usize))
    }

    /// The link leaving `from`, if any.
    pub fn link(&self, from: Endpoint) -> Option<&Link> {
        self.link_at(from).map(|(p, l)| &self.parts[p].links[l].link)
    }

    /// What the link leaving `from` carried, lost and corrupted.
    pub fn link_stats(&self, from: Endpoint) -> Option<LinkStats> {
        self.link_at(from).map(|(p, l)| self.parts[p].links[l].stats)
    }

    /// Takes the link at `from` down (both directions) or brings it back up, now: while it is down every
    /// frame put on it is lost (counted in [`LinkStats::lost`]), and so are the frames on the wire when it
    /// goes down; a switch at either end sees its port go oper down or up ([`Switch::set_port_oper`]: it
    /// drops what is queued to the port and stops routing over it). A NIC end is not told (a host whose
    /// only link fails has nothing to fail over to). Returns false if `from` has no link.
    pub fn set_link_up(&mut self, from: Endpoint, up: bool) -> bool {
        let Some((p, l)) = self.link_at(from) else { return false };
        let to = self.parts[p].links[l].link.to;
        let now = self.now;
        for (p, l) in [Some((p, l)), self.link_at(to)].into_iter().flatten() {
            let state = &mut self.parts[p].links[l];
            state.down = !up;
            let (rp, w) = state.dest;
            if !up {
                let frames = &mut self.parts[rp as usize].wires[w as usize].frames;
                let lost = frames.len() as u64;
                frames.clear();
                self.parts[rp as usize].calendar.cancel(Wake::Link(w));
                self.parts[p].links[l].stats.lost += lost;
            }
        }
        for Endpoint { node, port } in [from, to] {
            let (p, n) = self.place[node.index()];
            let part = &mut self.parts[p as usize];
            if let Device::Switch(s) = &mut part.devices[n as usize] {
                s.set_port_oper(PortId::new(port), up, now);
                part.mark(n);
                part.reschedule(n);
            }
        }
        true
    }

    /// Whether the link at `from` is up (false when it has none).
    pub fn link_is_up(&self, from: Endpoint) -> bool {
        self.link_at(from).is_some_and(|(p, l)| !self.parts[p].links[l].down)
    }

    /// Sets the tap. A simulation with a tap, a capture or the log runs as one part.
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

    fn device_mut(&mut self, id: NodeId) -> &mut Device {
        let (p, n) = self.place[id.index()];
        &mut self.parts[p as usize].devices[n as usize]
    }

    pub fn switch(&mut self, id: NodeId) -> &mut Switch {
        match self.device_mut(id) {
            Device::Switch(s) => s,
            _ => panic!("node {id} is not a switch"),
        }
    }

    pub fn nic(&mut self, id: NodeId) -> &mut Nic {
        match self.device_mut(id) {
            Device::Nic(n) => n,
            _ => panic!("node {id} is not a NIC"),
        }
    }

    /// A node, to read.
    pub fn device(&self, id: NodeId) -> &Device {
        let (p, n) = self.place[id.index()];
        &self.parts[p as usize].devices[n as usize]
    }

    /// A [`Device::Custom`] node as the type it was added as.
    pub fn custom<T: Node>(&mut self, id: NodeId) -> &mut T {
        match self.device_mut(id) {
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
        let result = self.device_mut(id).node_mut().apply(config, now);
        let (p, n) = self.place[id.index()];
        self.parts[p as usize].reschedule(n);
        result
    }

    /// Stops driving a node from now on (a host whose process ended): it sends nothing more, and frames
    /// that reach it are lost. Its state stays readable.
    pub fn stop(&mut self, id: NodeId) {
        let (p, n) = self.place[id.index()];
        let part = &mut self.parts[p as usize];
        part.stopped[n as usize] = true;
        part.scheduled[n as usize] = None;
        part.calendar.cancel(Wake::Node(n));
    }

    pub fn is_stopped(&self, id: NodeId) -> bool {
        let (p, n) = self.place[id.index()];
        self.parts[p as usize].stopped[n as usize]
    }

    /// Puts a frame on the way to a port, arriving at `at` (a host outside the simulation, a test).
    pub fn inject(&mut self, to: Endpoint, at: Instant, frame: Vec<u8>) {
        self.order += 1;
        let (p, n) = self.place[to.node.index()];
        self.parts[p as usize].injected.push(Reverse((at, self.order, (n, to.port), frame)));
    }

    /// Whether something watches every frame (a tap, captures, the log): such a simulation runs as one part.
    fn observed(&self) -> bool {
        self.tap.is_some() || self.keep_log || !self.captures.is_empty()
    }

    /// Runs every event up to `end` inclusive, then wakes every node at `end` (pause accounting,
    /// statistics), unless `end` is unbounded (from [`UNBOUNDED`] on: until nothing is left to do). The
    /// parts run one after another, window by window.
    pub fn run_until(&mut self, end: Instant) {
        if self.parts.len() == 1 {
            self.parts[0].reschedule_all();
            let mut observers = Observers {
                tap: self.tap.as_mut(),
                keep_log: self.keep_log,
                sent: &mut self.sent,
                delivered: &mut self.delivered,
                captures: &mut self.captures,
            };
            self.parts[0].run_through(end, &mut observers);
        } else {
            let (parts, lookahead_ns) = self.begin_run();
            while let Some(t) = parts.iter_mut().filter_map(Part::next_time).min().filter(|&t| t <= end) {
                let last = window_last(t, lookahead_ns, end);
                for p in parts.iter_mut() {
                    p.run_window(last);
                }
                for i in 0..parts.len() {
                    let crossings: Vec<Crossing> = parts[i].take_crossings().collect();
                    for c in crossings {
                        let to = c.part();
                        parts[to].accept(c);
                    }
                }
            }
        }
        self.end_run(end);
    }

    /// For a caller that runs the parts itself (on threads): books every node's wake-up and returns the
    /// parts and the lookahead in ns. Then, window by window until the earliest [`Part::next_time`] of
    /// all is past `end`: each part runs [`Part::run_window`] to [`window_last`] of that instant, then
    /// every part's [`Part::take_crossings`] go to the parts they name ([`Part::accept`]); finally
    /// [`Sim::end_run`]. The result is the same as [`Sim::run_until`]'s whatever order the parts run in.
    ///
    /// # Panics
    /// If a tap, capture or the log is set on a simulation of more than one part.
    pub fn begin_run(&mut self) -> (&mut [Part], u64) {
        assert!(
            self.parts.len() == 1 || !self.observed(),
            "a simulation with a tap, a capture or the log runs as one part"
        );
        for p in &mut self.parts {
            p.reschedule_all();
        }
        (&mut self.parts, self.lookahead_ns)
    }

    /// Ends a run to `end` ([`Sim::begin_run`]): the final wake-up of every node at `end` (unless
    /// unbounded), then the parts' events and counts gathered in the simulation's order.
    pub fn end_run(&mut self, end: Instant) {
        let unbounded = end >= UNBOUNDED;
        for p in &mut self.parts {
            if !unbounded {
                p.finish(end);
            }
            self.wakeups += std::mem::take(&mut p.wakeups);
            self.now = self.now.max(p.now);
        }
        if self.parts.len() == 1 {
            self.events.extend(self.parts[0].events.drain(..).map(|(t, _, id, e)| (t, id, e)));
        } else {
            // Each part's events are in (time, round, node) order: merged, not sorted (one pass).
            let mut lists: Vec<_> = self.parts.iter_mut().map(|p| p.events.drain(..).peekable()).collect();
            loop {
                let next = (lists.iter_mut().enumerate())
                    .filter_map(|(i, l)| l.peek().map(|&(t, round, id, _)| ((t, round, id), i)))
                    .min();
                let Some((_, i)) = next else { break };
                let (t, _, id, e) = lists[i].next().expect("peeked");
                self.events.push((t, id, e));
            }
        }
    }

    /// Splits the simulation into `parts` parts (1: one part) that run side by side. A host (a node with
    /// one linked port) stays with the node it is linked to, and so do nodes joined by a link shorter than
    /// `min_lookahead`; the groups go, in node order, to parts of about equal weight (linked ports).
    /// Returns the lookahead (the shortest delay between two parts; `None` with one part). May be called
    /// between runs: every pending frame and wake-up moves with its node.
    ///
    /// # Panics
    /// If a tap, capture or the log is set and `parts` > 1.
    pub fn partition(&mut self, parts: usize, min_lookahead: Nanos) -> Option<Nanos> {
        let assignment = self.plan_parts(parts.max(1), min_lookahead);
        self.assign_parts(&assignment);
        (self.parts.len() > 1).then(|| Nanos::from_ns(self.lookahead_ns))
    }

    /// Which part each node goes to ([`Sim::partition`]).
    fn plan_parts(&self, parts: usize, min_lookahead: Nanos) -> Vec<u32> {
        let n = self.place.len();
        // Groups: union-find over hosts' links and short links.
        let mut group: Vec<usize> = (0..n).collect();
        fn root(group: &mut [usize], mut i: usize) -> usize {
            while group[i] != i {
                group[i] = group[group[i]];
                i = group[i];
            }
            i
        }
        let mut weight = vec![0u64; n];
        let mut edges = Vec::new();
        for (id, &(p, local)) in self.place.iter().enumerate() {
            let part = &self.parts[p as usize];
            let linked: Vec<&LinkState> =
                part.port_links[local as usize].iter().flatten().map(|&l| &part.links[l as usize]).collect();
            weight[id] = linked.len().max(1) as u64;
            for l in &linked {
                let to = l.link.to.node.index();
                if linked.len() == 1 || l.link.delay < min_lookahead {
                    edges.push((id, to));
                }
            }
        }
        for (a, b) in edges {
            let (ra, rb) = (root(&mut group, a), root(&mut group, b));
            if ra != rb {
                group[ra.max(rb)] = ra.min(rb);
            }
        }
        let mut group_weight = vec![0u64; n];
        for (id, w) in weight.iter().enumerate() {
            let r = root(&mut group, id);
            group_weight[r] += w;
        }
        let total: u64 = group_weight.iter().sum();
        // Groups by their first node, cut into `parts` runs of about total / parts each.
        let mut part_of_group = vec![0u32; n];
        let (mut part, mut filled) = (0u64, 0u64);
        for r in 0..n {
            if root(&mut group, r) != r {
                continue;
            }
            let w = group_weight[r];
            // Next part once this one holds its share (a group goes where its middle falls).
            while part + 1 < parts as u64 && (filled + w / 2) * parts as u64 >= total * (part + 1) {
                part += 1;
            }
            part_of_group[r] = part as u32;
            filled += w;
        }
        let mut assignment: Vec<u32> = (0..n).map(|id| part_of_group[root(&mut group, id)]).collect();
        // Parts left empty (fewer groups than parts) are dropped.
        let mut used: Vec<u32> = assignment.clone();
        used.sort_unstable();
        used.dedup();
        for p in &mut assignment {
            *p = used.binary_search(p).expect("a used part") as u32;
        }
        assignment
    }

    /// Moves every node, with its links, wires, wake-ups and pending frames, to the part `assignment`
    /// names (part indices from 0, every one used or not).
    fn assign_parts(&mut self, assignment: &[u32]) {
        let count = assignment.iter().max().map_or(1, |&m| m as usize + 1);
        assert!(
            count == 1 || !self.observed(),
            "a simulation with a tap, a capture or the log runs as one part"
        );
        // Take everything apart, in the simulation's order.
        let old = std::mem::take(&mut self.parts);
        let mut devices: Vec<Option<(Device, bool)>> = (0..self.place.len()).map(|_| None).collect();
        let mut links: Vec<Option<(Endpoint, LinkState)>> =
            (0..self.link_place.len()).map(|_| None).collect();
        let mut injected = Vec::new();
        let mut wires: Vec<Vec<Option<Wire>>> = Vec::new();
        let mut events = Vec::new();
        let mut link_index: Vec<Vec<usize>> = Vec::new(); // per old part, per local link: global index
        for (p, _) in old.iter().enumerate() {
            link_index.push(vec![0; old[p].links.len()]);
        }
        for (g, &(p, l)) in self.link_place.iter().enumerate() {
            link_index[p as usize][l as usize] = g;
        }
        let mut wire_owner: Vec<(u32, u32)> = Vec::new(); // per global link: its old (rx part, wire)
        for mut part in old {
            let p = part.index as usize;
            let states: Vec<LinkState> = std::mem::take(&mut part.links);
            for (l, state) in states.into_iter().enumerate() {
                let g = link_index[p][l];
                let from = self.link_from(&part, l as u32);
                if wire_owner.len() <= g {
                    wire_owner.resize(g + 1, (0, 0));
                }
                wire_owner[g] = state.dest;
                links[g] = Some((from, state));
            }
            wires.push(std::mem::take(&mut part.wires).into_iter().map(Some).collect());
            for (i, (device, stopped)) in part.devices.drain(..).zip(part.stopped.drain(..)).enumerate() {
                devices[part.ids[i].index()] = Some((device, stopped));
            }
            for std::cmp::Reverse((at, order, (n, port), frame)) in part.injected.drain() {
                injected.push((at, order, Endpoint::new(part.ids[n as usize], port), frame));
            }
            events.append(&mut part.events);
            self.now = self.now.max(part.now);
        }
        debug_assert!(events.is_empty(), "parts are reassigned between runs");
        // Put it back together.
        self.parts = (0..count as u32).map(Part::new).collect();
        for p in &mut self.parts {
            p.ties = self.ties;
        }
        for (id, slot) in devices.into_iter().enumerate() {
            let (device, stopped) = slot.expect("every node is in a part");
            let p = assignment[id];
            let local = self.parts[p as usize].add(NodeId::new(id), device, stopped);
            self.place[id] = (p, local);
        }
        for part in &mut self.parts {
            part.now = self.now;
        }
        self.lookahead_ns = u64::MAX;
        for (g, slot) in links.into_iter().enumerate() {
            let (from, mut state) = slot.expect("every link is in a part");
            let (old_rp, old_w) = wire_owner[g];
            let wire = wires[old_rp as usize][old_w as usize].take().expect("one wire per link");
            let to = state.link.to;
            let (tp, tl) = self.place[from.node.index()];
            let (rp, rl) = self.place[to.node.index()];
            if rp != tp {
                self.lookahead_ns = self.lookahead_ns.min(state.link.delay.as_ns());
            }
            let rx = &mut self.parts[rp as usize];
            rx.wires.push(Wire {
                frames: wire.frames,
                last_at: wire.last_at,
                ..Wire::new((rl, to.port), g as u32)
            });
            let w = (rx.wires.len() - 1) as u32;
            if let Some(first) = rx.wires[w as usize].frames.front() {
                let (at, booked) = (first.at, first.booked);
                rx.calendar.book(Wake::Link(w), at, booked, 2 * g as u64 + 1);
            }
            state.dest = (rp, w);
            let tx = &mut self.parts[tp as usize];
            let ports = &mut tx.port_links[tl as usize];
            if ports.len() <= from.port {
                ports.resize(from.port + 1, None);
            }
            ports[from.port] = Some(tx.links.len() as u32);
            tx.links.push(state);
            self.link_place[g] = (tp, (tx.links.len() - 1) as u32);
        }
        for (at, order, to, frame) in injected {
            let (p, n) = self.place[to.node.index()];
            self.parts[p as usize].injected.push(Reverse((at, order, (n, to.port), frame)));
        }
    }

    /// The endpoint a part's link `l` leaves from.
    fn link_from(&self, part: &Part, l: u32) -> Endpoint {
        for (local, ports) in part.port_links.iter().enumerate() {
            if let Some(port) = ports.iter().position(|&x| x == Some(l)) {
                return Endpoint::new(part.ids[local], port);
            }
        }
        unreachable!("every link leaves a port")
    }
}

#[cfg(test)]
mod tests;
