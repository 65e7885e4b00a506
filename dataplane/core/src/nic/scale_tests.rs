//! DCQCN's time scale in a closed loop, in virtual time: a 2:1 incast of two NICs at line rate R into a
//! port of rate R that marks CE above a fixed backlog (step marking, no PFC: the queue is unbounded); the
//! receiver's ACKs and CNPs go straight back. NVIDIA's defaults: the reaction point of
//! [`DcqcnParams::default`], the notification point with `min_time_between_cnps` = 0 (a CNP for every CE
//! packet; `docs/nic.md`, "Notification point"), 4 KB MTU as in the labs.
//!
//! The incast at 25 Gb/s, and at 200 Mb/s (R/125) with `time_scale` 125 and the link delay and the NIC's
//! other timers × 125, are one system with time stretched 125×: the same CNPs at 125× the instants and
//! the same rates ÷ 125 until rounding (event times are whole nanoseconds, which at 25 Gb/s is a
//! perturbation) makes two packets swap places at the port, and from then on the same statistics. At
//! 200 Mb/s without the time scale DCQCN reacts far too slowly: it ends near the fair share too, but over
//! a standing queue of megabytes, where a lossless switch would pause the senders all the time.
//!
//! (A 100 Gb/s reference is less suited to this test: with these parameters its incast has two regimes, a
//! steady one and one where α decays to nothing between bursts of cuts, and a nanosecond of delay decides
//! which it falls into.)

use super::*;
use crate::wire::Ipv4Packet;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// IP MTU of the lab hosts: 4096 ⇒ 4052-byte payloads, 4110-byte frames, 4134 bytes of line time.
const MTU: u32 = 4096;
/// Step marking: a data packet arriving to this backlog or more is marked CE.
const MARK_BYTES: u64 = 20_000;
const SENDERS: usize = 2;
const RX: usize = 2;
/// Destination index of the switch port on the wire.
const PORT: usize = 3;

fn mac(i: usize) -> EthernetAddress {
    EthernetAddress([0x02, 0, 0, 0, 0, 0x10 + i as u8])
}

fn ip(i: usize) -> Ipv4Addr {
    Ipv4Addr::new(10, 0, 0, 10 + i as u8)
}

/// One run: line rate, DCQCN time scale, and N, the factor the rest of the system's times are stretched
/// by (link delay, retransmission and NAK timers, run length, sampling).
#[derive(Debug, Clone, Copy)]
struct Setup {
    line_rate_mbps: u32,
    time_scale: u32,
    stretch: u64,
}

const DELAY_NS: u64 = 1_000;
const END_NS: u64 = 20_000_000;
const SAMPLE_NS: u64 = 100_000;

/// What a run saw, sampled every `SAMPLE_NS × stretch`.
#[derive(Debug)]
struct Trace {
    /// Each sender's paced rate (b/s).
    rates: Vec<[u64; SENDERS]>,
    /// The port's backlog (bytes).
    queue: Vec<u64>,
    decreases: [u64; SENDERS],
    marked: u64,
    /// Bytes each flow had acknowledged at the end.
    acked: [u64; SENDERS],
}

/// A frame on a link: (arrival, tie-break, destination: a NIC or [`PORT`], frame).
type InFlight = (u64, u64, usize, Vec<u8>);

struct Incast {
    nics: Vec<Nic>,
    setup: Setup,
    delay_ns: u64,
    now: u64,
    order: u64,
    wire: BinaryHeap<Reverse<InFlight>>,
    /// Frames in the port: when each finishes leaving (ps) and its line bytes.
    queue: std::collections::VecDeque<(u128, u64)>,
    queue_bytes: u64,
    port_free_ps: u128,
    marked: u64,
    /// Every CNP a sender received: (time, sender, its DCQCN rate right after).
    cnps: Vec<(u64, usize, u64)>,
}

impl Incast {
    fn new(setup: Setup) -> Incast {
        let n = setup.stretch;
        let nics = (0..=RX)
            .map(|i| {
                let cfg = NicConfig {
                    mac: mac(i),
                    ip: ip(i),
                    line_rate_mbps: setup.line_rate_mbps,
                    mtu: MTU,
                    dcqcn: DcqcnParams { time_scale: setup.time_scale, ..DcqcnParams::default() },
                    np: NpParams { cnp_interval_ns: 0, ..NpParams::default() },
                    rto_ns: NicConfig::default().rto_ns * n,
                    nak_interval_ns: NicConfig::default().nak_interval_ns * n,
                    ..NicConfig::default()
                };
                Nic::new(cfg).unwrap()
            })
            .collect();
        let mut incast = Incast {
            nics,
            setup,
            delay_ns: DELAY_NS * n,
            now: 0,
            order: 0,
            wire: BinaryHeap::new(),
            queue: Default::default(),
            queue_bytes: 0,
            port_free_ps: 0,
            marked: 0,
            cnps: Vec::new(),
        };
        for s in 0..SENDERS {
            let flow = FlowConfig {
                id: 1,
                dst_ip: ip(RX),
                dst_mac: mac(RX),
                dst_qp: 0x11 + s as u32,
                src_port: 49152 + s as u16,
                ..FlowConfig::default()
            };
            incast.nics[s].add_flow(flow).unwrap();
        }
        incast
    }

    fn line_ps(&self, frame_len: usize) -> u128 {
        let bits = (frame_len as u128 + u128::from(WIRE_OVERHEAD_BYTES)) * 8;
        bits * 1_000_000 / u128::from(self.setup.line_rate_mbps)
    }

    fn send(&mut self, to: usize, at: u64, frame: Vec<u8>) {
        self.order += 1;
        self.wire.push(Reverse((at, self.order, to, frame)));
    }

    /// Forgets the frames that have left the port by `now_ns`.
    fn drain_port(&mut self, now_ns: u64) {
        while self.queue.front().is_some_and(|&(end, _)| end <= u128::from(now_ns) * 1000) {
            let (_, bytes) = self.queue.pop_front().unwrap();
            self.queue_bytes -= bytes;
        }
    }

    /// A data frame reached the port at `at`: mark, queue, and schedule its arrival at the receiver.
    fn enqueue(&mut self, at: u64, mut frame: Vec<u8>) {
        self.drain_port(at);
        if self.queue_bytes >= MARK_BYTES {
            assert!(Ipv4Packet::new_checked(&mut frame[14..]).unwrap().set_ecn_ce());
            self.marked += 1;
        }
        let start = self.port_free_ps.max(u128::from(at) * 1000);
        self.port_free_ps = start + self.line_ps(frame.len());
        let bytes = frame.len() as u64 + WIRE_OVERHEAD_BYTES;
        self.queue.push_back((self.port_free_ps, bytes));
        self.queue_bytes += bytes;
        let arrival = self.port_free_ps.div_ceil(1000) as u64 + self.delay_ns;
        self.send(RX, arrival, frame);
    }

    fn run_until(&mut self, end: u64) {
        loop {
            let next =
                self.nics.iter().filter_map(Nic::poll_at).chain(self.wire.peek().map(|Reverse(e)| e.0)).min();
            let Some(t) = next.filter(|&t| t <= end) else { break };
            let t = t.max(self.now);
            self.now = t;
            while self.wire.peek().is_some_and(|Reverse(e)| e.0 <= t) {
                let Reverse((at, _, to, frame)) = self.wire.pop().unwrap();
                if to == PORT {
                    self.enqueue(at, frame);
                } else {
                    self.nics[to].handle_frame(&frame, at);
                    let bth_opcode = 14 + 20 + 8;
                    if to < SENDERS && frame.get(bth_opcode) == Some(&u8::from(Opcode::Cnp)) {
                        self.cnps.push((at, to, self.nics[to].flow_dcqcn(1).unwrap().rate_bps()));
                    }
                }
            }
            for i in 0..=RX {
                self.nics[i].handle_timeout(t);
                while let Some(frame) = self.nics[i].poll_transmit(t) {
                    let done = t + self.line_ps(frame.len()).div_ceil(1000) as u64;
                    if i == RX {
                        // ACKs and CNPs: back to the sender the frame is addressed to, across the switch.
                        let to = (0..SENDERS).find(|&s| frame[..6] == mac(s).0).expect("to a sender");
                        self.send(to, done + 2 * self.delay_ns, frame);
                    } else {
                        self.send(PORT, done + self.delay_ns, frame);
                    }
                }
            }
        }
        self.now = self.now.max(end);
        for nic in &mut self.nics {
            nic.handle_timeout(self.now);
        }
    }

    fn run(setup: Setup) -> Trace {
        let mut incast = Incast::new(setup);
        let n = setup.stretch;
        let mut trace = Trace {
            rates: Vec::new(),
            queue: Vec::new(),
            decreases: [0; SENDERS],
            marked: 0,
            acked: [0; SENDERS],
        };
        for k in 1..=END_NS / SAMPLE_NS {
            let t = k * SAMPLE_NS * n;
            incast.run_until(t);
            incast.drain_port(t);
            trace.queue.push(incast.queue_bytes);
            trace.rates.push(std::array::from_fn(|s| incast.nics[s].flow_dcqcn(1).unwrap().rate_bps()));
        }
        for s in 0..SENDERS {
            trace.decreases[s] = incast.nics[s].flow_dcqcn(1).unwrap().decreases();
            trace.acked[s] = incast.nics[s].flow_stats(1).unwrap().acked_bytes;
        }
        trace.marked = incast.marked;
        trace
    }
}

fn mean(v: impl Iterator<Item = f64>) -> f64 {
    let (sum, count) = v.fold((0.0, 0usize), |(s, c), x| (s + x, c + 1));
    sum / count.max(1) as f64
}

const FAST: Setup = Setup { line_rate_mbps: 25_000, time_scale: 1, stretch: 1 };
const N: u64 = 125;
const SLOW: Setup = Setup { line_rate_mbps: 200, time_scale: N as u32, stretch: N };
const FAST_LINE: u64 = 25_000_000_000;

#[test]
fn a_time_scaled_incast_follows_the_fast_one_until_rounding_parts_them() {
    let (mut fast, mut slow) = (Incast::new(FAST), Incast::new(SLOW));
    let mut rates = Vec::new();
    for k in 1..=20 {
        let t = k * 100_000;
        fast.run_until(t);
        slow.run_until(t * N);
        fast.drain_port(t);
        slow.drain_port(t * N);
        // The port's backlog within one packet.
        assert!(fast.queue_bytes.abs_diff(slow.queue_bytes) <= 4_110, "at {t} ns");
        for s in 0..SENDERS {
            let (f, r) = (fast.nics[s].flow_dcqcn(1).unwrap(), slow.nics[s].flow_dcqcn(1).unwrap());
            // Rates within 10^-6 of the line rate, the same decisions.
            assert!((r.rate_bps() * N).abs_diff(f.rate_bps()) <= FAST_LINE / 1_000_000, "at {t} ns");
            assert_eq!((r.decreases(), r.increases()), (f.decreases(), f.increases()), "at {t} ns");
            rates.push(f.rate_bps());
        }
    }
    assert_eq!(slow.cnps.len(), fast.cnps.len());
    assert!(fast.cnps.len() > 30, "{} CNPs", fast.cnps.len());
    for (i, (f, s)) in fast.cnps.iter().zip(&slow.cnps).enumerate() {
        assert_eq!(s.1, f.1, "CNP {i}: same sender");
        // Within 40 ns of 25 Gb/s time (a few nanoseconds of rounding per hop).
        assert!((f.0 * N).abs_diff(s.0) <= 40 * N, "CNP {i}: at {} vs {} × {N}", s.0, f.0);
    }
    // What the window holds: the incast's first cuts, from the line rate to a fraction of the fair share
    // (α starts at 1), and the recovery.
    assert!(rates.iter().any(|&r| r < FAST_LINE / 20), "{rates:?}");
    assert!(rates[rates.len() - 2..].iter().all(|&r| r > FAST_LINE / 10), "{rates:?}");
}

#[test]
fn a_time_scaled_incast_has_the_fast_ones_statistics_and_the_unscaled_one_a_standing_queue() {
    let fast = Incast::run(FAST);
    let slow = Incast::run(SLOW);
    let unscaled = Incast::run(Setup { time_scale: 1, ..SLOW });
    struct Summary {
        /// Mean paced rate of a flow over the second half, as a fraction of the line rate.
        rate: f64,
        /// Mean and largest backlog over the second half.
        queue: f64,
        queue_max: u64,
        decreases: u64,
        /// Acknowledged bytes over the run, as a fraction of the port's capacity.
        utilisation: f64,
    }
    let summary = |t: &Trace, setup: Setup| {
        let half = t.rates.len() / 2;
        let line = f64::from(setup.line_rate_mbps) * 1e6;
        let seconds = (END_NS * setup.stretch) as f64 / 1e9;
        Summary {
            rate: mean(t.rates[half..].iter().flatten().map(|&r| r as f64 / line)),
            queue: mean(t.queue[half..].iter().map(|&q| q as f64)),
            queue_max: t.queue[half..].iter().copied().max().unwrap_or(0),
            decreases: t.decreases.iter().sum(),
            utilisation: t.acked.iter().sum::<u64>() as f64 * 8.0 / (line * seconds),
        }
    };
    let (f, s, u) = (summary(&fast, FAST), summary(&slow, SLOW), summary(&unscaled, SLOW));
    let close = |a: f64, b: f64, tolerance: f64| (a - b).abs() <= tolerance * a.max(b);
    let text = |x: &Summary| {
        format!(
            "rate {:.3}, queue {:.0} B (max {}), {} decreases, utilisation {:.3}",
            x.rate, x.queue, x.queue_max, x.decreases, x.utilisation
        )
    };
    let all = format!("25 G: {}\n200 M × {N}: {}\n200 M unscaled: {}", text(&f), text(&s), text(&u));
    // The same system: the same statistics, within what the chaotic detail leaves.
    assert!(close(f.rate, s.rate, 0.15), "{all}");
    assert!(close(f.queue, s.queue, 0.25), "{all}");
    assert!(close(f.decreases as f64, s.decreases as f64, 0.15), "{all}");
    assert!(close(f.utilisation, s.utilisation, 0.05), "{all}");
    // DCQCN holds the queue near the marking threshold.
    for x in [&f, &s] {
        assert!(x.queue < 3.0 * MARK_BYTES as f64 && x.queue_max < 10 * MARK_BYTES, "{all}");
        assert!(x.decreases > 1_000, "{all}");
    }
    // Unscaled: the same flows at 200 Mb/s react two orders of magnitude too slowly.
    assert!(u.queue > 20.0 * s.queue && u.queue_max > 10 * s.queue_max, "{all}");
}
