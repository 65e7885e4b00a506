//! Properties of the scheduler under random operations and reconfigurations.

use super::*;

#[derive(Debug, Clone)]
enum Op {
    Enqueue { queue: u8, len: usize },
    Dequeue,
    DequeueWhenReady,
    Block(u8),
    Advance(u64),
    Flush(u8),
    Reconfigure,
}

fn queue_settings() -> BoxedStrategy<QueueSettings> {
    (
        prop_oneof![Just(SchedulerKind::Strict), Just(SchedulerKind::Dwrr), Just(SchedulerKind::Wrr)],
        0u8..=100,
        proptest::option::of(0u8..=9),
        prop_oneof![Just(MeterType::Bytes), Just(MeterType::Packets)],
        proptest::option::of(0u64..200_000_000),
        proptest::option::of(0u64..20_000),
        proptest::option::of(0u64..200_000_000),
        proptest::option::of(0u64..20_000),
        any::<bool>(),
    )
        .prop_map(|(kind, weight, priority, meter_type, cir, cbs, pir, pbs, policer)| {
            // Packet meters get packet-sized numbers.
            let scale = |v: Option<u64>| match meter_type {
                MeterType::Bytes => v,
                MeterType::Packets => v.map(|v| v / 1000),
            };
            QueueSettings {
                kind,
                weight,
                priority,
                meter_type,
                cir: scale(cir),
                cbs: scale(cbs),
                pir: scale(pir),
                pbs: scale(pbs),
                policer,
            }
        })
        .boxed()
}

fn port_settings() -> BoxedStrategy<PortSettings> {
    (
        prop_oneof![Just(1_000u32), Just(10_000), Just(25_000), Just(100_000), Just(7)],
        proptest::array::uniform8(queue_settings()),
        proptest::option::of((1_000_000u64..2_000_000_000, 0u64..30_000)),
    )
        .prop_map(|(speed_mbps, queues, shaper)| PortSettings {
            speed_mbps,
            queues,
            shaper: shaper.map(|(pir, pbs)| (MeterType::Bytes, pir, pbs)),
        })
        .boxed()
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0u8..8, 40usize..9300).prop_map(|(queue, len)| Op::Enqueue { queue, len }),
        3 => Just(Op::Dequeue),
        4 => Just(Op::DequeueWhenReady),
        1 => any::<u8>().prop_map(Op::Block),
        2 => (0u64..200_000).prop_map(Op::Advance),
        1 => (0u8..8).prop_map(Op::Flush),
        1 => Just(Op::Reconfigure),
    ]
}

/// Dequeues at `now` and checks it against `next_ready_at`: Some exactly when ready now (work
/// conservation: None at a free line means every non-blocked non-empty queue is shaper-limited).
fn checked_dequeue(
    s: &mut Scheduler<Pkt>,
    now: Instant,
    blocked: u8,
    last_seq: &mut [Option<u64>; QUEUES],
    out: &mut Vec<u64>,
) -> Result<bool, TestCaseError> {
    let ready = s.next_ready_at(now, blocked);
    let any_waiting = (0..8u8).any(|q| blocked & (1 << q) == 0 && s.len(q) > 0);
    prop_assert_eq!(ready.is_some(), any_waiting);
    prop_assert!(ready.is_none_or(|t| t >= now));
    let line_free = now >= s.line_free_at();
    match s.dequeue(now, blocked) {
        Some((q, p)) => {
            prop_assert_eq!(ready, Some(now));
            prop_assert!(line_free);
            prop_assert_eq!(q, p.queue);
            prop_assert_eq!(blocked & (1 << q), 0);
            prop_assert!(
                last_seq[usize::from(q)].is_none_or(|last| last < p.seq),
                "reordered in queue {}",
                q
            );
            last_seq[usize::from(q)] = Some(p.seq);
            out.push(p.seq);
            Ok(true)
        }
        None => {
            prop_assert!(ready != Some(now), "ready at {} but nothing dequeued", now);
            Ok(false)
        }
    }
}

/// Cases for a property suite whose budget is `n` at the default of 256 cases: `PROPTEST_CASES` (which
/// proptest reads for suites on its default config) scales it by the same factor, so that
/// `PROPTEST_CASES=2560` runs every suite 10x (nightly-style mode). Unset or unparsable: `n`.
pub(super) fn proptest_cases(n: u32) -> u32 {
    match std::env::var("PROPTEST_CASES").ok().and_then(|v| v.trim().parse::<u64>().ok()) {
        Some(cases) => u32::try_from(u64::from(n) * cases / 256).unwrap_or(u32::MAX).max(1),
        None => n,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(proptest_cases(256)))]

    #[test]
    fn order_exactly_once_and_work_conservation(
        settings in port_settings(),
        other in port_settings(),
        ops in proptest::collection::vec(op(), 1..400),
    ) {
        let mut s = Scheduler::new(settings.clone());
        let mut now = Instant::ZERO;
        let mut blocked = 0u8;
        let mut seq = 0u64;
        let mut accepted = Vec::new();
        let mut out = Vec::new();
        let mut last_seq = [None; QUEUES];
        let mut flip = false;
        for op in ops {
            match op {
                Op::Enqueue { queue, len } => {
                    let bytes = s.bytes(queue);
                    match s.enqueue(queue, pkt(queue, seq, len), now) {
                        Ok(()) => {
                            accepted.push(seq);
                            prop_assert_eq!(s.bytes(queue), bytes + len as u64);
                        }
                        Err(p) => {
                            prop_assert_eq!(p.seq, seq);
                            let q = &s.queues[usize::from(queue)].settings;
                            prop_assert!(q.kind == SchedulerKind::Strict && q.policer);
                        }
                    }
                    seq += 1;
                }
                Op::Dequeue => {
                    checked_dequeue(&mut s, now, blocked, &mut last_seq, &mut out)?;
                }
                Op::DequeueWhenReady => {
                    if let Some(t) = s.next_ready_at(now, blocked) {
                        now = t;
                        prop_assert!(checked_dequeue(&mut s, now, blocked, &mut last_seq, &mut out)?);
                    }
                }
                Op::Block(mask) => blocked = mask,
                Op::Advance(dt) => now += Nanos::from_ns(dt),
                Op::Flush(queue) => {
                    let items = s.flush(queue);
                    for p in items {
                        prop_assert_eq!(p.queue, queue);
                        prop_assert!(last_seq[usize::from(queue)].is_none_or(|last| last < p.seq));
                        last_seq[usize::from(queue)] = Some(p.seq);
                        out.push(p.seq);
                    }
                }
                Op::Reconfigure => {
                    flip = !flip;
                    s.reconfigure(if flip { other.clone() } else { settings.clone() }, now);
                }
            }
            let total: usize = (0..8u8).map(|q| s.len(q)).sum();
            prop_assert_eq!(s.total_len(), total);
            for q in 0..8u8 {
                prop_assert_eq!(s.bytes(q), s.iter(q).map(|p| p.len as u64).sum::<u64>());
            }
        }
        // Drain what is left with nothing blocked: every queue empties (shapers only delay).
        while let Some(t) = s.next_ready_at(now, 0) {
            now = t;
            prop_assert!(checked_dequeue(&mut s, now, 0, &mut last_seq, &mut out)?);
        }
        prop_assert!(s.is_empty());
        out.sort_unstable();
        prop_assert_eq!(out, accepted);
    }
}
