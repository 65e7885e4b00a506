//! DCQCN's time scale in a closed loop, in virtual time: a 2:1 incast of two NICs at line rate R into a
//! port of rate R that marks CE above a fixed backlog (step marking, no PFC: the queue is unbounded); the
//! receiver's ACKs and CNPs cross it without queueing. The NICs and the port run on the virtual-time
//! driver ([`crate::sim`]), the port as a [`Device::Custom`] node. NVIDIA's defaults: the reaction point of
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
use crate::model::Transmit;
use crate::sim::{self, Device, NodeId, Sim};
use crate::wire::Ipv4Packet;

/// IP MTU of the lab hosts: 4096 ⇒ 4052-byte payloads, 4110-byte frames, 4134 bytes of line time.
const MTU: u32 = 4096;
/// Step marking: a data packet arriving to this backlog or more is marked CE.
const MARK_BYTES: u64 = 20_000;
const SENDERS: usize = 2;
/// Node id of the receiver, and the port of the marking port that faces it (the senders are nodes and
/// ports `0..SENDERS`).
const RX: usize = 2;
/// Node id of the marking port.
const PORT: NodeId = NodeId::new(3);

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

/// Serialisation of a frame at `rate_mbps`, in ps (exact at the rates used here).
fn line_ps(frame_len: usize, rate_mbps: u32) -> u128 {
    let bits = (frame_len as u128 + u128::from(WIRE_OVERHEAD_BYTES)) * 8;
    bits * 1_000_000 / u128::from(rate_mbps)
}

/// The switch port the incast meets: ports `0..SENDERS` face the senders, port [`RX`] the receiver. Data
/// goes through one FIFO at the line rate, marked CE when it arrives to a backlog of [`MARK_BYTES`] or more
/// (unbounded, no PFC); ACKs and CNPs go back to the sender they are addressed to at once.
struct MarkingPort {
    rate_mbps: u32,
    /// Frames in the FIFO: when each finishes leaving (ps) and its line bytes.
    queue: VecDeque<(u128, u64)>,
    queue_bytes: u64,
    free_ps: u128,
    marked: u64,
    /// Data for the receiver: the instant each goes on the link, whose serialisation the driver adds, so
    /// that it arrives when its last bit has left the FIFO plus the link delay.
    to_rx: VecDeque<(u64, Vec<u8>)>,
    /// ACKs and CNPs for each sender, with the instant they arrived.
    to_senders: [VecDeque<(u64, Vec<u8>)>; SENDERS],
}

impl MarkingPort {
    fn new(rate_mbps: u32) -> MarkingPort {
        MarkingPort {
            rate_mbps,
            queue: VecDeque::new(),
            queue_bytes: 0,
            free_ps: 0,
            marked: 0,
            to_rx: VecDeque::new(),
            to_senders: Default::default(),
        }
    }

    /// Forgets the frames that have left the FIFO by `now_ns`.
    fn drain(&mut self, now_ns: u64) {
        while self.queue.front().is_some_and(|&(end, _)| end <= u128::from(now_ns) * 1000) {
            let (_, bytes) = self.queue.pop_front().unwrap();
            self.queue_bytes -= bytes;
        }
    }

    /// The backlog at `now_ns`.
    fn backlog(&mut self, now_ns: u64) -> u64 {
        self.drain(now_ns);
        self.queue_bytes
    }
}

impl sim::Node for MarkingPort {
    fn port_count(&self) -> usize {
        RX + 1
    }

    fn handle_frame(&mut self, port: usize, mut frame: Vec<u8>, now: Instant) {
        let now = now.as_ns();
        if port == RX {
            let to = (0..SENDERS).find(|&s| frame[..6] == mac(s).0).expect("to a sender");
            self.to_senders[to].push_back((now, frame));
            return;
        }
        self.drain(now);
        if self.queue_bytes >= MARK_BYTES {
            assert!(Ipv4Packet::new_checked(&mut frame[14..]).unwrap().set_ecn_ce());
            self.marked += 1;
        }
        let serialisation = line_ps(frame.len(), self.rate_mbps);
        let start = self.free_ps.max(u128::from(now) * 1000);
        self.free_ps = start + serialisation;
        let bytes = frame.len() as u64 + WIRE_OVERHEAD_BYTES;
        self.queue.push_back((self.free_ps, bytes));
        self.queue_bytes += bytes;
        let leaves = (self.free_ps.div_ceil(1000) - serialisation.div_ceil(1000)) as u64;
        self.to_rx.push_back((leaves, frame));
    }

    fn poll_transmit(&mut self, port: usize, now: Instant) -> Option<Transmit> {
        let now = now.as_ns();
        let frame = if port == RX {
            self.to_rx.front().is_some_and(|&(at, _)| at <= now).then(|| self.to_rx.pop_front().unwrap().1)
        } else {
            self.to_senders[port].pop_front().map(|(_, frame)| frame)
        };
        frame.map(|frame| Transmit { frame, queue: None })
    }

    fn poll_at(&self) -> Option<Instant> {
        let replies = self.to_senders.iter().filter_map(|q| q.front().map(|&(at, _)| at));
        self.to_rx.front().map(|&(at, _)| at).into_iter().chain(replies).min().map(Instant::from_ns)
    }

    fn handle_timeout(&mut self, _now: Instant) {}
}

/// The incast on the driver: senders `0..SENDERS` and the receiver [`RX`] linked to the [`MarkingPort`].
struct Incast {
    sim: Sim,
}

impl Incast {
    fn new(setup: Setup) -> Incast {
        let n = setup.stretch;
        let mut sim = Sim::new();
        // Ties ranked the same way at any time scale (the default ranks them by instant).
        sim.set_tie_order(crate::sim::TieOrder::Count);
        for i in 0..=RX {
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
            assert_eq!(sim.add(Device::Nic(Box::new(Nic::new(cfg).unwrap()))), NodeId::new(i));
        }
        let port = sim.add(Device::Custom(Box::new(MarkingPort::new(setup.line_rate_mbps))));
        assert_eq!(port, PORT);
        let rate = setup.line_rate_mbps;
        for i in 0..=RX {
            sim.connect(NodeId::new(i).port(0), rate, PORT.port(i), rate, Nanos::from_ns(DELAY_NS * n));
        }
        for s in 0..SENDERS {
            let flow = FlowConfig {
                id: 1,
                dst_ip: ip(RX),
                dst_mac: mac(RX),
                dst_qp: 0x11 + s as u32,
                src_port: 49152 + s as u16,
                ..FlowConfig::default()
            };
            sim.nic(NodeId::new(s)).add_flow(flow).unwrap();
        }
        Incast { sim }
    }

    fn run_until(&mut self, end: u64) {
        self.sim.run_until(Instant::from_ns(end));
    }

    fn port(&mut self) -> &mut MarkingPort {
        self.sim.custom(PORT)
    }

    fn dcqcn(&mut self, sender: usize) -> &Dcqcn {
        self.sim.nic(NodeId::new(sender)).flow_dcqcn(1).unwrap()
    }

    /// Every CNP a sender received (needs `keep_log`): (time, sender).
    fn cnps(&self) -> Vec<(u64, usize)> {
        let bth_opcode = 14 + 20 + 8;
        let cnp = u8::from(Opcode::Cnp);
        let to_sender =
            |d: &&sim::Delivered| d.to.node.index() < SENDERS && d.frame.get(bth_opcode) == Some(&cnp);
        self.sim.delivered.iter().filter(to_sender).map(|d| (d.at.as_ns(), d.to.node.index())).collect()
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
            let backlog = incast.port().backlog(t);
            trace.queue.push(backlog);
            trace.rates.push(std::array::from_fn(|s| incast.dcqcn(s).rate_bps()));
        }
        for s in 0..SENDERS {
            trace.decreases[s] = incast.dcqcn(s).decreases();
            trace.acked[s] = incast.sim.nic(NodeId::new(s)).flow_stats(1).unwrap().acked_bytes;
        }
        trace.marked = incast.port().marked;
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
    fast.sim.keep_log = true;
    slow.sim.keep_log = true;
    let mut rates = Vec::new();
    // 1.4 ms: past it, an arrival the scaled run's rounding moved by a nanosecond meets another that
    // it did not, and the two runs rank that tie differently (the simulator ranks ties by booking
    // instant, then by the frames' numbers on their links: `sim::TieOrder::Count`).
    for k in 1..=14 {
        let t = k * 100_000;
        fast.run_until(t);
        slow.run_until(t * N);
        // The port's backlog within one packet.
        let (fast_backlog, slow_backlog) = (fast.port().backlog(t), slow.port().backlog(t * N));
        assert!(fast_backlog.abs_diff(slow_backlog) <= 4_110, "at {t} ns");
        for s in 0..SENDERS {
            let (f, r) = (fast.dcqcn(s).clone(), slow.dcqcn(s).clone());
            // Rates within 10^-6 of the line rate, the same decisions.
            assert!((r.rate_bps() * N).abs_diff(f.rate_bps()) <= FAST_LINE / 1_000_000, "at {t} ns");
            assert_eq!((r.decreases(), r.increases()), (f.decreases(), f.increases()), "at {t} ns");
            rates.push(f.rate_bps());
        }
    }
    let (fast_cnps, slow_cnps) = (fast.cnps(), slow.cnps());
    assert_eq!(slow_cnps.len(), fast_cnps.len());
    assert!(fast_cnps.len() > 30, "{} CNPs", fast_cnps.len());
    for (i, (f, s)) in fast_cnps.iter().zip(&slow_cnps).enumerate() {
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
    // DCQCN holds the queue near the marking threshold, cutting all along (249 cuts measured; with the byte
    // counter read as 32 KiB instead of 32767 × 64 bytes, fast recovery undid a cut every 8 packets and the
    // loop needed over 1,000).
    for x in [&f, &s] {
        assert!(x.queue < 3.0 * MARK_BYTES as f64 && x.queue_max < 10 * MARK_BYTES, "{all}");
        assert!(x.decreases > 150, "{all}");
    }
    // Unscaled: the same flows at 200 Mb/s react two orders of magnitude too slowly.
    assert!(u.queue > 20.0 * s.queue && u.queue_max > 10 * s.queue_max, "{all}");
}
