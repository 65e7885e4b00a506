//! Scheduler tests: service order, shapers, policer, line pacing; properties in [`properties`].

use super::*;
use crate::time::Nanos;
use proptest::prelude::*;

/// The instant `ns` nanoseconds after the origin.
fn at(ns: u64) -> Instant {
    Instant::from_ns(ns)
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Pkt {
    queue: u8,
    seq: u64,
    len: usize,
}

impl Queued for Pkt {
    fn wire_len(&self) -> usize {
        self.len
    }
}

fn pkt(queue: u8, seq: u64, len: usize) -> Pkt {
    Pkt { queue, seq, len }
}

fn weighted(kind: SchedulerKind, weight: u8) -> QueueSettings {
    QueueSettings { kind, weight, ..QueueSettings::default() }
}

fn dwrr(weight: u8) -> QueueSettings {
    weighted(SchedulerKind::Dwrr, weight)
}

fn strict(priority: Option<u8>) -> QueueSettings {
    QueueSettings { kind: SchedulerKind::Strict, priority, ..QueueSettings::default() }
}

/// Line rate in bytes/s of frame bytes when frames of `len` go back to back.
fn frame_bytes_per_s(speed_mbps: u64, len: u64) -> u64 {
    speed_mbps * 1_000_000 / 8 * len / (len + WIRE_OVERHEAD_BYTES)
}

/// Dequeues everything (nothing blocked), each frame as soon as the scheduler allows.
fn drain(s: &mut Scheduler<Pkt>, mut now: Instant) -> Vec<(Instant, Pkt)> {
    let mut out = Vec::new();
    while let Some(t) = s.next_ready_at(now, 0) {
        now = t;
        let (q, p) = s.dequeue(now, 0).expect("ready means dequeue succeeds");
        assert_eq!(q, p.queue);
        out.push((now, p));
    }
    out
}

/// sonic-mgmt's WRRtest check: for each queue, the packets (of all queues) still outstanding when its last
/// packet arrives. Returns them per queue.
fn wrr_outstanding(order: &[u8], counts: &[(u8, u64)]) -> Vec<(u8, u64)> {
    let total: u64 = counts.iter().map(|&(_, n)| n).sum();
    let mut seen = [0u64; QUEUES];
    let mut diffs = Vec::new();
    for (i, &q) in order.iter().enumerate() {
        seen[usize::from(q)] += 1;
        let expected = counts.iter().find(|&&(cq, _)| cq == q).map(|&(_, n)| n).unwrap();
        if seen[usize::from(q)] == expected {
            diffs.push((q, total - (i as u64 + 1)));
        }
    }
    diffs
}

fn wrr_test(weights: [u8; 7], counts: [u64; 7]) -> u64 {
    let mut settings = PortSettings::unshaped(40_000);
    for (queue, weight) in settings.queues.iter_mut().zip(weights) {
        *queue = dwrr(weight);
    }
    let mut s = Scheduler::new(settings);
    // Egress held: everything is queued before the first dequeue, one burst per queue in queue order.
    let mut seq = 0;
    for (q, &n) in counts.iter().enumerate() {
        for _ in 0..n {
            s.enqueue(q as u8, pkt(q as u8, seq, 64), at(0)).unwrap();
            seq += 1;
        }
    }
    let order: Vec<u8> = drain(&mut s, at(0)).into_iter().map(|(_, p)| p.queue).collect();
    assert_eq!(order.len() as u64, counts.iter().sum::<u64>(), "all packets received");
    let table: Vec<(u8, u64)> = counts.iter().enumerate().map(|(q, &n)| (q as u8, n)).collect();
    let diffs = wrr_outstanding(&order, &table);
    assert_eq!(diffs.len(), 7);
    let worst = diffs.iter().map(|&(_, d)| d).max().unwrap();
    for (q, diff) in diffs {
        assert!(diff < 80, "queue {q}: {diff} packets outstanding when its last left (limit 80)");
    }
    worst
}

#[test]
fn wrrtest_default_weights() {
    let worst = wrr_test([14, 14, 14, 15, 15, 14, 14], [140, 140, 140, 150, 150, 140, 140]);
    // Within one DWRR round (100 weight units × 16 bytes = 25 frames of 64 bytes) of each other.
    assert!(worst < 25, "worst {worst}");
}

#[test]
fn wrrtest_weight_change() {
    let worst = wrr_test([8, 8, 8, 30, 30, 8, 8], [80, 80, 80, 300, 300, 80, 80]);
    // Within one DWRR round (100 weight units × 16 bytes = 25 frames of 64 bytes) of each other.
    assert!(worst < 25, "worst {worst}");
}

#[test]
fn wrr_counts_packets_per_round() {
    let mut settings = PortSettings::unshaped(10_000);
    settings.queues[0] = weighted(SchedulerKind::Wrr, 3);
    settings.queues[1] = weighted(SchedulerKind::Wrr, 1);
    settings.queues[2..].fill(strict(None));
    let mut s = Scheduler::new(settings);
    for i in 0..8 {
        // Sizes must not matter for WRR.
        s.enqueue(0, pkt(0, i, 64), at(0)).unwrap();
        s.enqueue(1, pkt(1, i, 9000), at(0)).unwrap();
    }
    let order: Vec<u8> = drain(&mut s, at(0)).into_iter().take(8).map(|(_, p)| p.queue).collect();
    assert_eq!(order, [0, 0, 0, 1, 0, 0, 0, 1]);
}

#[test]
fn mixed_dwrr_and_wrr_share_one_byte_round() {
    let mut settings = PortSettings::unshaped(10_000);
    settings.queues[0] = weighted(SchedulerKind::Wrr, 1);
    settings.queues[1] = dwrr(1);
    let mut s = Scheduler::new(settings);
    for i in 0..100 {
        s.enqueue(0, pkt(0, i, 1000), at(0)).unwrap();
        s.enqueue(1, pkt(1, i, 100), at(0)).unwrap();
    }
    let out = drain(&mut s, at(0));
    // Equal weights in one byte round: about equal bytes while both are backlogged.
    let first_half: Vec<&Pkt> = out.iter().map(|(_, p)| p).take_while(|p| p.seq < 99).collect();
    let bytes = |q| first_half.iter().filter(|p| p.queue == q).map(|p| p.len as i64).sum::<i64>();
    assert!((bytes(0) - bytes(1)).abs() <= 1000 + 16, "{} vs {}", bytes(0), bytes(1));
}

#[test]
fn strict_drains_first_in_priority_order() {
    let mut settings = PortSettings::unshaped(25_000);
    for q in 0..5 {
        settings.queues[q] = dwrr(14);
    }
    settings.queues[5] = strict(Some(5));
    settings.queues[6] = strict(Some(5));
    settings.queues[7] = strict(None);
    let mut s = Scheduler::new(settings);
    let mut seq = 0;
    for q in 0..8u8 {
        for _ in 0..10 {
            s.enqueue(q, pkt(q, seq, 100), at(0)).unwrap();
            seq += 1;
        }
    }
    let order: Vec<u8> = drain(&mut s, at(0)).into_iter().map(|(_, p)| p.queue).collect();
    // Equal priority: higher index first; no priority ranks below every explicit one.
    assert!(order[..10].iter().all(|&q| q == 6));
    assert!(order[10..20].iter().all(|&q| q == 5));
    assert!(order[20..30].iter().all(|&q| q == 7));
    assert!(order[30..].iter().all(|&q| q < 5));
    // Without priorities, queue 7 is highest.
    let mut settings = PortSettings::unshaped(25_000);
    settings.queues[6] = strict(None);
    settings.queues[7] = strict(None);
    let mut s = Scheduler::new(settings);
    s.enqueue(0, pkt(0, 0, 100), at(0)).unwrap();
    s.enqueue(6, pkt(6, 1, 100), at(0)).unwrap();
    s.enqueue(7, pkt(7, 2, 100), at(0)).unwrap();
    let order: Vec<u8> = drain(&mut s, at(0)).into_iter().map(|(_, p)| p.queue).collect();
    assert_eq!(order, [7, 6, 0]);
}

/// Traffic offered to one queue in [`simulate`].
#[derive(Clone, Copy)]
enum Load {
    /// Always has frames waiting.
    Backlogged { queue: u8, len: usize },
    /// One frame every `interval`.
    Periodic { queue: u8, len: usize, interval: Nanos },
}

#[derive(Debug, Default)]
struct Sent {
    bytes: [u64; QUEUES],
    packets: [u64; QUEUES],
    line_bits: u64,
    refused: [u64; QUEUES],
}

/// Queues in `mask` are paused for the first `paused` of every `period` (periods start at the origin).
#[derive(Clone, Copy)]
struct Pause {
    mask: u8,
    period: Nanos,
    paused: Nanos,
}

impl Pause {
    const NONE: Pause = Pause { mask: 0, period: Nanos::MAX, paused: Nanos::ZERO };

    /// How far into its period `now` is.
    fn phase(&self, now: Instant) -> Nanos {
        Nanos::from_ns(now.as_ns() % self.period.as_ns())
    }

    fn blocked(&self, now: Instant) -> u8 {
        if self.phase(now) < self.paused { self.mask } else { 0 }
    }

    fn next_change(&self, now: Instant) -> Instant {
        let phase = self.phase(now);
        let period_start = now - phase;
        if phase < self.paused { period_start + self.paused } else { period_start + self.period }
    }
}

/// Runs a port in virtual time from `from` until `until` with `pause` as the PFC/hold mask; counts what
/// started transmission before `until`.
fn simulate(s: &mut Scheduler<Pkt>, loads: &[Load], from: Instant, until: Instant, pause: Pause) -> Sent {
    let mut sent = Sent::default();
    let mut next_arrival: Vec<Instant> = loads
        .iter()
        .map(|load| if matches!(load, Load::Periodic { .. }) { from } else { Instant::MAX })
        .collect();
    let mut seq = 0;
    let mut now = from;
    loop {
        for (i, load) in loads.iter().enumerate() {
            match *load {
                Load::Backlogged { queue, len } => {
                    while s.len(queue) < 4 {
                        s.enqueue(queue, pkt(queue, seq, len), now).unwrap();
                        seq += 1;
                    }
                }
                Load::Periodic { queue, len, interval } => {
                    while next_arrival[i] <= now {
                        if s.enqueue(queue, pkt(queue, seq, len), now).is_err() {
                            sent.refused[usize::from(queue)] += 1;
                        }
                        seq += 1;
                        next_arrival[i] += interval;
                    }
                }
            }
        }
        if now >= until {
            return sent;
        }
        let mask = pause.blocked(now);
        if let Some((q, p)) = s.dequeue(now, mask) {
            assert_eq!(mask & (1 << q), 0, "dequeued a blocked queue");
            sent.bytes[usize::from(q)] += p.len as u64;
            sent.packets[usize::from(q)] += 1;
            sent.line_bits += (p.len as u64 + WIRE_OVERHEAD_BYTES) * 8;
            continue;
        }
        let wake = [s.next_ready_at(now, mask), Some(until)]
            .into_iter()
            .flatten()
            .chain(next_arrival.iter().copied())
            .chain([pause.next_change(now)])
            .min()
            .unwrap();
        assert!(wake > now, "no progress at {now}");
        now = wake;
    }
}

#[test]
fn ucloud_strict_cnp_queue_policed_and_weighted_share() {
    // 25G port; queue 6 (CNP) STRICT policed at 10% of the line; RoCE queue 3 and business queue 1 DWRR 60/40.
    let line_bytes_per_s = 25_000_000_000 / 8;
    let pir = line_bytes_per_s / 10;
    let mut settings = PortSettings::unshaped(25_000);
    settings.queues[6] = QueueSettings { pir: Some(pir), policer: true, ..strict(None) };
    settings.queues[3] = dwrr(60);
    settings.queues[1] = dwrr(40);
    let mut s = Scheduler::new(settings);
    let until_ns = 10_000_000;
    let loads = [
        // A misbehaving server offers ~40% of the line on the strict queue.
        Load::Periodic { queue: 6, len: 1000, interval: Nanos::from_ns(800) },
        Load::Backlogged { queue: 3, len: 1000 },
        Load::Backlogged { queue: 1, len: 1000 },
    ];
    let sent = simulate(&mut s, &loads, at(0), at(until_ns), Pause::NONE);
    let rate = |q: usize| sent.bytes[q] * 1_000_000_000 / until_ns;
    // The strict queue gets its policed rate and no more (+ one default burst).
    let strict_limit = pir + DEFAULT_BURST_BYTES * 1_000_000_000 / until_ns;
    assert!(rate(6) <= strict_limit, "strict {} > {strict_limit}", rate(6));
    assert!(rate(6) * 100 >= pir * 99, "strict {} < pir {pir}", rate(6));
    assert!(sent.refused[6] > 0);
    // The rest is split 60/40.
    let (r3, r1) = (rate(3) as f64, rate(1) as f64);
    assert!((r3 / r1 - 1.5).abs() < 0.02, "queue 3 {r3} vs queue 1 {r1}");
    // Work conservation: the line was full.
    let line_bits: u64 = 25_000_000_000 / 1000 * until_ns / 1_000_000;
    assert!(line_bits.abs_diff(sent.line_bits) <= 1024 * 8, "{} of {line_bits}", sent.line_bits);
}

#[test]
fn strict_queue_without_policer_waits_for_its_shaper() {
    let pir = 50_000_000;
    let mut settings = PortSettings::unshaped(25_000);
    settings.queues[7] = QueueSettings { pir: Some(pir), ..strict(None) };
    let mut s = Scheduler::new(settings);
    for i in 0..100 {
        s.enqueue(7, pkt(7, i, 1000), at(0)).unwrap();
    }
    let out = drain(&mut s, at(0));
    assert_eq!(out.len(), 100);
    // The first ~9 frames ride the default burst, then one frame every 1000 / pir s = 20 µs.
    let last_ns = out.last().unwrap().0.as_ns();
    let expected_ns = (100 * 1000 - DEFAULT_BURST_BYTES) * 1_000_000_000 / pir;
    assert!(last_ns.abs_diff(expected_ns) <= 20_000, "{last_ns} vs {expected_ns}");
}

fn shaped_rate(meter_type: MeterType, pir: u64, len: usize, until_ns: u64) -> (u64, Sent) {
    let mut settings = PortSettings::unshaped(10_000);
    settings.queues[2] = QueueSettings { meter_type, pir: Some(pir), ..dwrr(50) };
    settings.queues[0] = dwrr(1);
    let mut s = Scheduler::new(settings);
    let loads = [Load::Backlogged { queue: 2, len }, Load::Backlogged { queue: 0, len: 300 }];
    let sent = simulate(&mut s, &loads, at(0), at(until_ns), Pause::NONE);
    let measured = match meter_type {
        MeterType::Bytes => sent.bytes[2],
        MeterType::Packets => sent.packets[2],
    } * 1_000_000_000
        / until_ns;
    (measured, sent)
}

#[test]
fn shaper_rate_bytes_within_one_percent() {
    let pir = 100_000_000; // 800 Mb/s on a 10G port
    let (measured, sent) = shaped_rate(MeterType::Bytes, pir, 1000, 100_000_000);
    assert!(measured.abs_diff(pir) * 100 <= pir, "{measured} vs {pir}");
    // The unshaped low-weight queue takes the rest of the line.
    let line_bits: u64 = 10_000_000_000 / 10;
    assert!(line_bits.abs_diff(sent.line_bits) <= 1024 * 8, "{} of {line_bits}", sent.line_bits);
}

#[test]
fn shaper_rate_packets_within_one_percent() {
    let pir = 100_000; // pps
    let (measured, _) = shaped_rate(MeterType::Packets, pir, 1500, 100_000_000);
    assert!(measured.abs_diff(pir) * 100 <= pir, "{measured} vs {pir}");
}

#[test]
fn shaper_with_burst_below_one_frame_keeps_its_rate() {
    let pir = 10_000_000;
    let mut settings = PortSettings::unshaped(10_000);
    settings.queues[0] = QueueSettings { pir: Some(pir), pbs: Some(100), ..dwrr(1) };
    let mut s = Scheduler::new(settings);
    let sent =
        simulate(&mut s, &[Load::Backlogged { queue: 0, len: 1000 }], at(0), at(100_000_000), Pause::NONE);
    let measured = sent.bytes[0] * 10;
    assert!(measured.abs_diff(pir) * 100 <= pir, "{measured} vs {pir}");
}

#[test]
fn port_shaper_limits_the_whole_port() {
    let pir = 200_000_000;
    let mut settings = PortSettings::unshaped(10_000);
    settings.shaper = Some((MeterType::Bytes, pir, 10_000));
    let mut s = Scheduler::new(settings);
    let loads = [Load::Backlogged { queue: 0, len: 500 }, Load::Backlogged { queue: 4, len: 1500 }];
    let sent = simulate(&mut s, &loads, at(0), at(100_000_000), Pause::NONE);
    let measured = (sent.bytes[0] + sent.bytes[4]) * 10;
    assert!(measured.abs_diff(pir) * 100 <= pir, "{measured} vs {pir}");
    assert!(sent.bytes[0].abs_diff(sent.bytes[4]) <= 1500 + 16, "{:?}", sent.bytes);
}

#[test]
fn line_25g_sends_exactly_25e9_bits_per_second() {
    let mut s = Scheduler::new(PortSettings::unshaped(25_000));
    let mut now = Instant::ZERO;
    let mut frames = 0u64;
    s.enqueue(0, pkt(0, 0, 1000), at(0)).unwrap();
    while now < at(1_000_000_000) {
        s.dequeue(now, 0).expect("line free and a frame queued");
        frames += 1;
        s.enqueue(0, pkt(0, frames, 1000), now).unwrap();
        now = s.next_ready_at(now, 0).unwrap();
    }
    // 1024 wire bytes = 8192 bits = 327.68 ns each: no rounding accumulates.
    assert_eq!(s.line_end_ps(), u128::from(frames) * 327_680);
    let bits = frames * 8192;
    assert!(bits >= 25_000_000_000 && bits - 25_000_000_000 < 8192, "{bits} bits started within 1 s");
    // Frames that completed within the second.
    let completed = (frames - 1) * 8192;
    assert!(25_000_000_000 - completed < 8192, "{completed}");
}

#[test]
fn line_time_carries_sub_picosecond_remainders() {
    // 7 Mb/s: one 64-byte frame is 704 bits = 100_571_428.57 ps.
    let mut s = Scheduler::new(PortSettings::unshaped(7));
    for i in 0..7 {
        s.enqueue(0, pkt(0, i, 64), at(0)).unwrap();
    }
    let out = drain(&mut s, at(0));
    assert_eq!(out.len(), 7);
    assert_eq!(s.line_end_ps(), 7 * 704 * 1_000_000 / 7);
    assert_eq!(s.line_remainder, 0);
    assert_eq!(s.line_free_at(), at(704_000));
}

#[test]
fn occupy_line_delays_the_next_frame() {
    let mut s = Scheduler::new(PortSettings::unshaped(10_000));
    s.enqueue(0, pkt(0, 0, 1000), at(0)).unwrap();
    // A 64-byte PFC frame (wire_len 60) at t=100 on an idle line: 84 bytes = 67.2 ns.
    s.occupy_line(at(100), 60);
    assert_eq!(s.line_free_at(), at(168));
    assert!(s.dequeue(at(167), 0).is_none());
    assert_eq!(s.next_ready_at(at(0), 0), Some(at(168)));
    // A second control frame queues behind the first.
    s.occupy_line(at(150), 60);
    assert_eq!(s.line_end_ps(), 100_000 + 2 * 67_200);
    assert!(s.dequeue(at(235), 0).is_some());
}

#[test]
fn blocked_queue_is_skipped_and_regains_its_share() {
    let mut settings = PortSettings::unshaped(10_000);
    settings.queues[0] = dwrr(1);
    settings.queues[1] = dwrr(1);
    let mut s = Scheduler::new(settings);
    let loads = [Load::Backlogged { queue: 0, len: 1500 }, Load::Backlogged { queue: 1, len: 1500 }];
    // Queue 1 paused for the first millisecond: queue 0 has the whole line.
    let paused = Pause { mask: 2, period: Nanos::MAX, paused: Nanos::MAX };
    let sent = simulate(&mut s, &loads, at(0), at(1_000_000), paused);
    assert_eq!(sent.packets[1], 0);
    assert!(sent.packets[0] >= 10_000_000_000 / 1000 / (1524 * 8), "{:?}", sent.packets);
    // Then both run for a millisecond: half each, from the first round on.
    let sent = simulate(&mut s, &loads, at(1_000_000), at(2_000_000), Pause::NONE);
    assert!(sent.packets[1] >= 400, "{:?}", sent.packets);
    assert!(sent.packets[0].abs_diff(sent.packets[1]) <= 1, "{:?}", sent.packets);
}

#[test]
fn paused_queue_keeps_its_deficit_and_place() {
    // Jumbo frames on a weight-1 queue need hundreds of visits of deficit: intermittent PFC pauses must
    // not reset what it has accumulated, or it would starve against small frames.
    let mut settings = PortSettings::unshaped(100_000);
    settings.queues[0] = dwrr(1);
    settings.queues[1] = dwrr(1);
    let mut s = Scheduler::new(settings);
    let loads = [Load::Backlogged { queue: 0, len: 9000 }, Load::Backlogged { queue: 1, len: 64 }];
    // Queue 0 paused 5 µs of every 20 µs.
    let pause = Pause { mask: 1, period: Nanos::from_us(20), paused: Nanos::from_us(5) };
    let sent = simulate(&mut s, &loads, at(0), at(10_000_000), pause);
    let share = sent.bytes[0] as f64 / (sent.bytes[0] + sent.bytes[1]) as f64;
    // Paused 25% of the time, half the line otherwise (byte fairness): ~3/8 of the bytes.
    assert!((share - 0.375).abs() < 0.03, "jumbo queue share {share}, {:?}", sent.bytes);
    // And the deficit survives a pause: a queue skipped mid-turn keeps what it had.
    let mut s = Scheduler::new(PortSettings::unshaped(10_000));
    for i in 0..4 {
        s.enqueue(0, pkt(0, i, 100), at(0)).unwrap();
        s.enqueue(1, pkt(1, i, 100), at(0)).unwrap();
    }
    let (q, _) = s.dequeue(at(0), 0).unwrap();
    assert_eq!(q, 0);
    let deficit = s.queues[0].deficit;
    assert!(deficit > 0);
    let t = s.next_ready_at(at(0), 1).unwrap();
    assert_eq!(s.dequeue(t, 1).unwrap().0, 1);
    assert_eq!(s.queues[0].deficit, deficit);
}

#[test]
fn cir_is_honoured_for_a_low_weight_queue() {
    let speed = 10_000;
    let line = frame_bytes_per_s(speed, 1000);
    let cir = line / 5;
    let mut settings = PortSettings::unshaped(speed as u32);
    settings.queues[0] = QueueSettings { cir: Some(cir), ..dwrr(1) };
    settings.queues[5] = dwrr(100);
    let mut s = Scheduler::new(settings);
    let loads = [Load::Backlogged { queue: 0, len: 1000 }, Load::Backlogged { queue: 5, len: 1000 }];
    let until_ns = 100_000_000;
    let sent = simulate(&mut s, &loads, at(0), at(until_ns), Pause::NONE);
    let rate = sent.bytes[0] * 1_000_000_000 / until_ns;
    // The meter counts all the queue's output: it gets max(cir, weighted share) = cir.
    assert!(rate * 100 >= cir * 99 && rate * 100 <= cir * 102, "{rate} vs cir {cir}");
    // Without cir it would get 1/101 of the line.
    let mut s = Scheduler::new(PortSettings { queues: [dwrr(1); QUEUES], ..PortSettings::unshaped(10_000) });
    s.reconfigure(
        PortSettings {
            queues: std::array::from_fn(|q| if q == 5 { dwrr(100) } else { dwrr(1) }),
            ..PortSettings::unshaped(10_000)
        },
        at(0),
    );
    let sent = simulate(&mut s, &loads, at(0), at(until_ns), Pause::NONE);
    assert!(sent.bytes[0] * 1_000_000_000 / until_ns < line / 90);
}

#[test]
fn policer_refuses_at_enqueue() {
    let mut settings = PortSettings::unshaped(10_000);
    settings.queues[6] = QueueSettings {
        meter_type: MeterType::Packets,
        pir: Some(1000),
        pbs: Some(3),
        policer: true,
        ..strict(None)
    };
    let mut s = Scheduler::new(settings);
    for i in 0..3 {
        assert!(s.enqueue(6, pkt(6, i, 100), at(0)).is_ok());
    }
    assert_eq!(s.enqueue(6, pkt(6, 3, 100), at(0)), Err(pkt(6, 3, 100)));
    // One packet's worth of tokens after 1 ms.
    assert!(s.enqueue(6, pkt(6, 4, 100), at(999_999)).is_err());
    assert!(s.enqueue(6, pkt(6, 5, 100), at(1_000_000)).is_ok());
    assert_eq!(s.len(6), 4);
    // Queued frames are not held back by the policer.
    assert_eq!(drain(&mut s, at(1_000_000)).len(), 4);
}

#[test]
fn reconfigure_keeps_items_and_flush_empties() {
    let mut s = Scheduler::new(PortSettings::unshaped(10_000));
    for i in 0..10 {
        s.enqueue(3, pkt(3, i, 200), at(0)).unwrap();
        s.enqueue(4, pkt(4, i, 300), at(0)).unwrap();
    }
    s.dequeue(at(0), 0).unwrap();
    let mut settings = PortSettings::unshaped(25_000);
    settings.queues[4] = strict(None);
    s.reconfigure(settings, at(10));
    assert_eq!(s.total_len(), 19);
    // Equal weights and an empty deficit: the 200-byte head of queue 3 needs fewer visits than 300 bytes.
    assert_eq!((s.bytes(3), s.bytes(4)), (9 * 200, 10 * 300));
    let t = s.next_ready_at(at(10), 0).unwrap();
    assert_eq!(s.dequeue(t, 0).unwrap().0, 4, "queue 4 is strict now");
    let flushed = s.flush(3);
    assert_eq!(
        flushed.iter().map(|p| p.seq).collect::<Vec<_>>(),
        (10 - flushed.len() as u64..10).collect::<Vec<_>>()
    );
    assert_eq!((s.len(3), s.bytes(3)), (0, 0));
    assert_eq!(s.iter(4).count(), s.len(4));
    assert_eq!(s.total_len(), s.len(4));
    s.flush(4);
    assert!(s.is_empty());
    assert_eq!(s.next_ready_at(at(0), 0), None);
}

mod properties;
mod reference;
