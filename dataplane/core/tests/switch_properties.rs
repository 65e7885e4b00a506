//! Property tests of the switch core over random sequences of frames, timeouts and configuration changes:
//! - every frame handed in is, exactly once, forwarded, trapped or dropped with a reason, and every egress
//!   copy leaves exactly once;
//! - counters never go backwards;
//! - every port asserts exactly the PFC priorities of its lossless PGs in XOFF;
//! - an invalid configuration never changes the running generation or configuration.

mod common;

use common::*;
use lossless_core::model::{CountersDump, PortId, Switch};
use lossless_core::time::Instant;
use lossless_core::wire::build::Dot1q;
use proptest::prelude::*;
use std::net::Ipv4Addr;

/// The frames a random run is made of: realistic ones from the T0 topology, mutated ones and noise.
fn frame_strategy() -> impl Strategy<Value = (usize, Vec<u8>)> {
    let macs =
        prop::sample::select(vec![UPLINK0_MAC, UPLINK1_MAC, HOST2_MAC, HOST3_MAC, HOST4_MAC, ROUTER_MAC]);
    let ips = prop::sample::select(vec![
        Ipv4Addr::new(192, 168, 0, 2),
        Ipv4Addr::new(192, 168, 0, 3),
        Ipv4Addr::new(192, 168, 0, 1),
        Ipv4Addr::new(10, 0, 0, 1),
        Ipv4Addr::new(10, 0, 0, 0),
        Ipv4Addr::new(172, 16, 3, 4),
        Ipv4Addr::new(8, 8, 8, 8),
    ]);
    let valid = prop_oneof![
        (macs.clone(), ips.clone(), ips.clone(), any::<u16>(), 0u8..64)
            .prop_map(|(m, s, d, p, dscp)| routed_udp(m, s, d, p, 4791, dscp)),
        (macs.clone(), ips.clone(), ips.clone()).prop_map(|(m, s, t)| arp_request(m, s, t)),
        (
            macs.clone(),
            macs.clone(),
            prop::option::of((0u8..8, prop::sample::select(vec![1000u16, 2000, 0])))
        )
            .prop_map(|(s, d, tag)| l2_frame(
                s,
                d,
                tag.map(|(pcp, vid)| Dot1q { pcp, dei: false, vid })
            )),
    ];
    let mutated = (valid.clone(), any::<prop::sample::Index>(), any::<u8>()).prop_map(|(mut f, i, b)| {
        let at = i.index(f.len());
        f[at] ^= b | 1;
        f
    });
    let noise = prop::collection::vec(any::<u8>(), 0..80);
    (0usize..5, prop_oneof![4 => valid, 2 => mutated, 1 => noise])
}

#[derive(Debug, Clone)]
enum Op {
    Frame(usize, Vec<u8>),
    /// Advance time by this many seconds and run timeouts.
    Advance(u64),
    Drain,
    ApplyValid,
    ApplyInvalid,
}

fn op_strategy() -> impl Strategy<Value = Op> {
    prop_oneof![
        20 => frame_strategy().prop_map(|(p, f)| Op::Frame(p, f)),
        2 => (1u64..400).prop_map(Op::Advance),
        4 => Just(Op::Drain),
        1 => Just(Op::ApplyValid),
        1 => Just(Op::ApplyInvalid),
    ]
}

fn assert_monotonic(before: &CountersDump, after: &CountersDump) {
    let (b, a) = (&before.ledger, &after.ledger);
    assert!(a.received >= b.received && a.forwarded >= b.forwarded && a.copies >= b.copies);
    assert!(a.trapped >= b.trapped && a.dropped >= b.dropped);
    for (name, old) in &before.ports {
        let new = &after.ports[name];
        let pairs = [
            (old.rx_ok, new.rx_ok),
            (old.rx_bytes, new.rx_bytes),
            (old.rx_err, new.rx_err),
            (old.rx_drp, new.rx_drp),
            (old.tx_ok, new.tx_ok),
            (old.tx_bytes, new.tx_bytes),
            (old.trapped, new.trapped),
        ];
        assert!(pairs.iter().all(|(o, n)| n >= o), "{name} went backwards");
        for q in 0..8 {
            assert!(
                new.queues[q].packets >= old.queues[q].packets && new.queues[q].bytes >= old.queues[q].bytes
            );
            assert!(new.pgs[q].packets >= old.pgs[q].packets);
        }
        for (reason, n) in &old.drop_reasons {
            assert!(new.drop_reasons[reason] >= *n);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: proptest_cases(128), ..ProptestConfig::default() })]

    #[test]
    fn every_frame_is_accounted_once_and_counters_never_go_backwards(ops in prop::collection::vec(op_strategy(), 1..200)) {
        let mut sw = t0_switch();
        let mut now = 0u64;
        let mut transmitted = 0u64;
        let mut before = sw.counters();
        for op in ops {
            match op {
                Op::Frame(p, f) => sw.handle_frame(PortId::new(p), f, Instant::from_ns(now)),
                Op::Advance(s) => {
                    now += s * 1_000_000_000;
                    sw.handle_timeout(Instant::from_ns(now));
                }
                Op::Drain => transmitted += drain_all(&mut sw, Instant::from_ns(now)).len() as u64,
                Op::ApplyValid => {
                    let g = sw.generation();
                    prop_assert_eq!(sw.apply(&t0_db(), Instant::from_ns(now)).unwrap().generation, g + 1);
                }
                Op::ApplyInvalid => {
                    let g = sw.generation();
                    let config = sw.config().clone();
                    let mut bad = t0_db();
                    bad.set("PORT_QOS_MAP", "Ethernet0", "pfc_enable", "3,9");
                    prop_assert!(sw.apply(&bad, Instant::from_ns(now)).is_err());
                    prop_assert_eq!(sw.generation(), g);
                    prop_assert_eq!(sw.config(), &config);
                }
            }
            let l = sw.ledger();
            prop_assert_eq!(l.received, l.forwarded + l.trapped + l.dropped);
            prop_assert_eq!(sw.pfc_out_of_step(), None);
            let after = sw.counters();
            assert_monotonic(&before, &after);
            before = after;
        }
        transmitted += drain_all(&mut sw, Instant::from_ns(now)).len() as u64;
        // Every egress copy the pipeline produced, and every frame the switch originated, left exactly once.
        let l = sw.ledger();
        let tx: u64 = sw.counters().ports.values().map(|c| c.tx_ok).sum();
        prop_assert_eq!(tx, transmitted);
        prop_assert_eq!(transmitted, l.copies + l.originated);
        prop_assert!(l.copies >= l.forwarded);
        let rx: u64 = sw.counters().ports.values().map(|c| c.rx_ok + c.rx_err + c.rx_mac_control).sum();
        prop_assert_eq!(rx, l.received);
    }
}

#[test]
fn switch_without_config_ignores_frames() {
    let mut sw = Switch::new();
    sw.handle_frame(PortId::new(0), vec![0; 64], Instant::from_ns(0));
    assert_eq!(sw.ledger().received, 0);
    assert_eq!(sw.poll_transmit(PortId::new(0), Instant::from_ns(0)), None);
}
