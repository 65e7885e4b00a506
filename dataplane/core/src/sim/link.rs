//! One direction of a link: its line (rate, propagation delay), what it does to frames (loss, corruption)
//! and the frames on it.
//!
//! **Timing.** A frame occupies the line for its bits (frame + [`WIRE_OVERHEAD_BYTES`]: FCS, preamble,
//! inter-frame gap) at the line rate, tracked in picoseconds plus an exact remainder, so back-to-back
//! frames never drift: at 400 Gb/s a 64-byte frame takes 1.68 ns, and a thousand of them take exactly
//! 1680 ns, not 2000. The last bit reaches the far end `delay` later; the frame is delivered at that
//! instant rounded up to the nanosecond (the models' clock), an error below 1 ns that never accumulates.
//! A frame that a model releases at the nanosecond its line frees up (the model rounds up too) is taken as
//! back to back with the previous one.

use crate::model::scheduler::WIRE_OVERHEAD_BYTES;
use crate::time::{Instant, Nanos};
use std::collections::VecDeque;

/// A node of a simulation: its position in the order nodes were added ([`super::Sim::add`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeId(usize);

impl NodeId {
    pub const fn new(index: usize) -> NodeId {
        NodeId(index)
    }

    /// The node's position (an index into per-node tables).
    pub const fn index(self) -> usize {
        self.0
    }

    /// This node's port `port`.
    pub const fn port(self, port: usize) -> Endpoint {
        Endpoint::new(self, port)
    }
}

impl std::fmt::Display for NodeId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// A port of a node. The port is the index a [`super::Node`] is handed (a switch's front-panel port
/// index, 0 for a NIC's only port).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Endpoint {
    pub node: NodeId,
    pub port: usize,
}

impl Endpoint {
    pub const fn new(node: NodeId, port: usize) -> Endpoint {
        Endpoint { node, port }
    }
}

const PS_PER_NS: u128 = 1000;

/// Which frames an [`Impairment`] counts and hits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Frames {
    /// Every frame.
    #[default]
    All,
    /// RoCEv2 data packets only (UDP 4791, not an ACK, NAK or CNP): what a test of retransmission wants to
    /// lose, leaving ACKs, PFC and ARP alone.
    Data,
}

/// What happens to some frames on a link: a deterministic pattern, or seeded chance.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Impairment {
    /// The `n`th, `2n`th, ... frame of the kind (`n` ≥ 1).
    Every { n: u64, frames: Frames },
    /// Each frame of the kind with this probability (0..=1), drawn from the simulation's seed.
    Random { probability: f64, frames: Frames },
}

impl Impairment {
    fn frames(&self) -> Frames {
        match self {
            Impairment::Every { frames, .. } | Impairment::Random { frames, .. } => *frames,
        }
    }
}

/// One direction of a link, as configured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Link {
    pub to: Endpoint,
    /// The sender's line rate.
    pub rate_mbps: u32,
    /// Propagation delay.
    pub delay: Nanos,
    /// Frames that vanish on the way (nobody counts them).
    pub loss: Option<Impairment>,
    /// Frames that arrive with a bad FCS: the receiving port counts and drops them.
    pub corrupt: Option<Impairment>,
}

impl Link {
    pub fn new(to: Endpoint, rate_mbps: u32, delay: Nanos) -> Link {
        Link { to, rate_mbps, delay, loss: None, corrupt: None }
    }
}

/// What a link direction carried.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct LinkStats {
    pub frames: u64,
    pub bytes: u64,
    pub lost: u64,
    pub corrupted: u64,
}

/// A frame on the wire: when its last bit arrives, whether its FCS is bad, the frame.
pub struct OnWire {
    pub(super) at: Instant,
    /// When its arrival is booked in the receiver's calendar: when it was sent, or when the frame ahead of
    /// it on the wire arrived if that was later (ties between arrivals go first to the earlier booked).
    pub(super) booked: Instant,
    /// Its number on its wire (1, 2, ...), given when it is put on it.
    pub(super) seq: u64,
    pub(super) corrupt: bool,
    pub(super) frame: Vec<u8>,
}

/// Where a frame went.
pub(super) enum Fate {
    /// On its way: the receiving part puts it on the wire into the destination.
    Delivered(OnWire),
    Lost,
}

/// A link direction with its state.
#[derive(Clone)]
pub(super) struct LinkState {
    pub(super) link: Link,
    /// The line is busy until `free_ps + remainder / rate_mbps` ps.
    free_ps: u128,
    remainder: u128,
    /// Picoseconds per byte when the rate divides 8 × 10^6 (every usual speed: 320 at 25G), else 0: a
    /// frame's time is then a multiplication, without a division, and leaves the remainder as it was.
    ps_per_byte: u64,
    rng: u64,
    seen_all: u64,
    seen_data: u64,
    pub(super) stats: LinkStats,
    /// The link is down ([`super::Sim::set_link_up`]): whatever is put on it is lost.
    pub(super) down: bool,
    /// It loses or corrupts frames (set when it is made, as its impairments are).
    impaired: bool,
    /// Where its frames go: the part of the receiving node and the wire there ([`Wire`]).
    pub(super) dest: (u32, u32),
}

/// The receiving end of a link: the frames on their way to `to`, in arrival order. It belongs to the part
/// of the receiving node, the link's sending state ([`LinkState`]) to the sender's, so that a part can
/// run alone for as long as no frame from another part can reach it.
pub(super) struct Wire {
    /// (the receiving node's index in its part, port).
    pub(super) to: (u32, usize),
    /// Its link's index in the simulation (in the order links were added).
    pub(super) link: u32,
    pub(super) frames: VecDeque<OnWire>,
    /// The arrival of the last frame put on it.
    pub(super) last_at: Instant,
    /// Frames put on it.
    pub(super) count: u64,
}

impl Wire {
    pub(super) fn new(to: (u32, usize), link: u32) -> Wire {
        Wire { to, link, frames: VecDeque::new(), last_at: Instant::ZERO, count: 0 }
    }
}

impl LinkState {
    pub(super) fn new(link: Link, seed: u64, dest: (u32, u32)) -> LinkState {
        let rate = u64::from(link.rate_mbps.max(1));
        let ps_per_byte = if 8_000_000 % rate == 0 { 8_000_000 / rate } else { 0 };
        LinkState {
            link,
            free_ps: 0,
            remainder: 0,
            ps_per_byte,
            rng: seed,
            seen_all: 0,
            seen_data: 0,
            stats: LinkStats::default(),
            down: false,
            impaired: link.loss.is_some() || link.corrupt.is_some(),
            dest,
        }
    }

    fn free_at(&self) -> Instant {
        crate::ps::to_instant_ceil(self.free_ps + u128::from(self.remainder > 0))
    }

    /// Puts a frame released at `now` on the line; its fate after loss and corruption.
    #[inline]
    pub(super) fn send(&mut self, now: Instant, frame: Vec<u8>) -> Fate {
        #[cfg(debug_assertions)]
        let before = self.clone();
        if let Some(at) = self.send_plain(now, frame.len()) {
            #[cfg(debug_assertions)]
            {
                let mut full = before;
                let Fate::Delivered(on) = full.send_full(now, vec![0; frame.len()]) else {
                    panic!("a plain link delivers")
                };
                assert_eq!((on.at, full.free_ps, full.stats), (at, self.free_ps, self.stats), "plain send");
            }
            return Fate::Delivered(OnWire { at, booked: now, seq: 0, corrupt: false, frame });
        }
        self.send_full(now, frame)
    }

    /// The arrival of a frame of `len` bytes put at `now` on a link that is up, unimpaired, at a rate that
    /// divides 8 × 10^6 Mb/s (so its remainder is always 0) and early enough in the run that its
    /// picoseconds fit in 64 bits, as [`LinkState::send_full`] computes it: `None` when one of those does
    /// not hold. This is the link of nearly every frame of a simulation, without the 128-bit arithmetic.
    #[inline]
    fn send_plain(&mut self, now: Instant, len: usize) -> Option<Instant> {
        const FITS: u64 = 1 << 62;
        let plain = self.ps_per_byte != 0 && !self.impaired && !self.down;
        let free_ps =
            u64::try_from(self.free_ps).ok().filter(|&f| plain && f < FITS && now.as_ns() < FITS / 1000)?;
        debug_assert_eq!(self.remainder, 0, "a rate dividing 8 × 10^6 leaves no remainder");
        // Busy until the nanosecond `free_ps` falls in: a frame released then goes back to back.
        let start_ps = if now.as_ns() > free_ps.div_ceil(1000) { now.as_ns() * 1000 } else { free_ps };
        let bytes = len as u64 + WIRE_OVERHEAD_BYTES;
        let end_ps = start_ps + bytes * self.ps_per_byte;
        let arrival_ns = (end_ps + self.link.delay.as_ns() * 1000).div_ceil(1000);
        if end_ps >= FITS || arrival_ns >= FITS / 1000 {
            return None;
        }
        self.free_ps = u128::from(end_ps);
        self.stats.frames += 1;
        self.stats.bytes += len as u64;
        self.seen_all += 1;
        Some(Instant::from_ns(arrival_ns))
    }

    /// [`LinkState::send`] for any link.
    fn send_full(&mut self, now: Instant, frame: Vec<u8>) -> Fate {
        if self.down {
            self.stats.frames += 1;
            self.stats.bytes += frame.len() as u64;
            self.stats.lost += 1;
            return Fate::Lost;
        }
        let rate = u64::from(self.link.rate_mbps.max(1));
        if now > self.free_at() {
            self.free_ps = crate::ps::of_instant(now);
            self.remainder = 0;
        }
        // bits × 10^6 / Mb/s = ps.
        let bytes = frame.len() as u64 + WIRE_OVERHEAD_BYTES;
        let full = || {
            let scaled = u128::from(bytes) * 8 * 1_000_000 + self.remainder;
            let (whole, remainder) = crate::ps::div_rem(scaled, rate);
            (whole, u128::from(remainder))
        };
        // (bytes × 8 × 10^6 + r) / rate with rate dividing 8 × 10^6 and r < rate: bytes × ps per byte,
        // remainder r.
        let (whole, remainder) = match self.ps_per_byte {
            0 => full(),
            ps_per_byte => {
                let quick = (u128::from(bytes * ps_per_byte), self.remainder);
                debug_assert_eq!(quick, full());
                quick
            }
        };
        self.free_ps += whole;
        self.remainder = remainder;
        self.stats.frames += 1;
        self.stats.bytes += frame.len() as u64;
        // Only an impairment counts data packets apart (and a link's impairments are set when it is made).
        let data = self.impaired && is_roce_data(&frame);
        self.seen_all += 1;
        self.seen_data += u64::from(data);
        if let Some(loss) = self.link.loss
            && self.hits(&loss, data)
        {
            self.stats.lost += 1;
            return Fate::Lost;
        }
        let corrupt = self.link.corrupt.is_some_and(|c| self.hits(&c, data));
        self.stats.corrupted += u64::from(corrupt);
        let arrival_ps =
            self.free_ps + u128::from(self.remainder > 0) + u128::from(self.link.delay.as_ns()) * PS_PER_NS;
        let at = crate::ps::to_instant_ceil(arrival_ps);
        Fate::Delivered(OnWire { at, booked: now, seq: 0, corrupt, frame })
    }

    fn hits(&mut self, what: &Impairment, data: bool) -> bool {
        let counted = match what.frames() {
            Frames::All => self.seen_all,
            Frames::Data if data => self.seen_data,
            Frames::Data => return false,
        };
        match *what {
            Impairment::Every { n, .. } => n > 0 && counted % n == 0,
            Impairment::Random { probability, .. } => {
                // 53 random bits → [0, 1).
                let x = (splitmix64(&mut self.rng) >> 11) as f64 / (1u64 << 53) as f64;
                x < probability
            }
        }
    }
}

/// splitmix64: a small, well-mixed generator whose sequence is the same on every machine.
pub fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A RoCEv2 data packet: IPv4 (untagged or one VLAN tag), UDP to 4791, a BTH opcode other than
/// Acknowledge (0x11) and CNP (0x81).
pub fn is_roce_data(frame: &[u8]) -> bool {
    let mut at = 12;
    if frame.get(at..at + 2) == Some(&[0x81, 0x00]) {
        at += 4;
    }
    if frame.get(at..at + 2) != Some(&[0x08, 0x00]) {
        return false;
    }
    let ip = at + 2;
    let Some(&vihl) = frame.get(ip) else { return false };
    let ihl = usize::from(vihl & 0x0f) * 4;
    if vihl >> 4 != 4 || ihl < 20 || frame.get(ip + 9) != Some(&17) {
        return false;
    }
    let udp = ip + ihl;
    let port = frame.get(udp + 2..udp + 4).map(|p| u16::from_be_bytes([p[0], p[1]]));
    if port != Some(crate::wire::udp::ROCEV2_PORT) {
        return false;
    }
    frame.get(udp + 8).is_some_and(|&opcode| opcode != 0x11 && opcode != 0x81)
}
