//! Property tests of the buffer model over random sequences of arrivals, transmissions, holds and
//! configuration changes (TH BALANCED numbers):
//! - no PG exceeds its headroom cap, no shared headroom pool its size;
//! - a lossless PG never drops while its headroom (private, or the pool's) has room;
//! - every copy is accounted for: `copies + originated == sent + queued + copies_dropped + flushed`;
//! - after a full drain every cell is back: PGs, queues and pools hold zero.

mod common;

use common::*;
use lossless_core::model::config::ConfigDb;
use lossless_core::model::{PortId, Switch};
use lossless_core::sim::{Device, Sim};
use lossless_core::time::Instant;
use proptest::prelude::*;
use std::net::Ipv4Addr;

const TH: &str = include_str!("../../../configs/profiles/th_balanced.yaml");
const HOST2_IP: Ipv4Addr = Ipv4Addr::new(192, 168, 0, 2);

#[derive(Debug, Clone)]
enum Op {
    /// `n` packets of this DSCP from this source port (0: Ethernet0, 1: Ethernet4).
    Send {
        src: usize,
        dscp: u8,
        n: u16,
        len: u16,
    },
    Hold(bool),
    QueueHold(u8, bool),
    /// Let this many nanoseconds of line time pass, transmitting what is due.
    Advance(u64),
    /// Re-apply the profile with another alpha for the lossless PGs (queued frames stay).
    Alpha(i8),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0usize..2, prop::sample::select(vec![3u8, 4, 8, 0, 46]), 1u16..3000, prop::sample::select(vec![60u16, 300, 1500]))
            .prop_map(|(src, dscp, n, len)| Op::Send { src, dscp, n, len }),
        1 => any::<bool>().prop_map(Op::Hold),
        1 => (0u8..8, any::<bool>()).prop_map(|(q, h)| Op::QueueHold(q, h)),
        3 => (1u64..2_000_000).prop_map(Op::Advance),
        1 => (-2i8..3).prop_map(Op::Alpha),
    ]
}

fn db_with_alpha(alpha: i8) -> ConfigDb {
    let mut db = ConfigDb::from_yaml_str(TH).unwrap();
    for p in ["pg_lossless_100000_40m_profile", "pg_lossless_25000_40m_profile"] {
        db.set("BUFFER_PROFILE", p, "dynamic_th", alpha.to_string());
    }
    // A small shared headroom pool, so that it runs out within a test case.
    db.set("BUFFER_POOL", "ingress_lossless_pool", "xoff", (208 * 2000).to_string());
    db
}

fn frame(dscp: u8, len: u16, i: u16) -> Vec<u8> {
    let flow = lossless_core::wire::build::Ipv4Flow {
        src_mac: UPLINK0_MAC,
        dst_mac: ROUTER_MAC,
        src_ip: Ipv4Addr::new(172, 16, 0, 5),
        dst_ip: HOST2_IP,
        src_port: i,
        dscp,
        ecn: lossless_core::wire::ip::Ecn::Ect0,
        ttl: 64,
    };
    flow.udp(4791, &vec![0u8; usize::from(len) - 42])
}

/// Runs the switch on the virtual-time driver up to `to`; returns the data frames (served from a queue)
/// sent meanwhile.
fn advance(sim: &mut Sim, now: &mut u64, to: u64) -> u64 {
    sim.run_until(Instant::from_ns(to));
    *now = (*now).max(to);
    let sent = sim.sent.iter().filter(|s| s.queue.is_some()).count() as u64;
    sim.sent.clear();
    sent
}

proptest! {
    #![proptest_config(ProptestConfig { cases: proptest_cases(48), ..ProptestConfig::default() })]

    #[test]
    fn buffer_accounting_holds_and_returns_to_zero(ops in prop::collection::vec(op(), 1..40)) {
        let mut sw = Switch::new();
        sw.apply(&db_with_alpha(0), Instant::ZERO).unwrap();
        let (e0, e4, e8) = (port(&sw, "Ethernet0"), port(&sw, "Ethernet4"), port(&sw, "Ethernet8"));
        sw.handle_frame(e8, arp_request(HOST2_MAC, HOST2_IP, Ipv4Addr::new(192, 168, 0, 1)), Instant::from_ns(0));
        let mut sim = Sim::new();
        let sw = sim.add(Device::Switch(Box::new(sw)));
        sim.keep_log = true;
        let mut now = 0u64;
        let mut sent = advance(&mut sim, &mut now, 1000);
        let cell = 208u64;
        // Tomahawk splits the shared headroom pool over its XPEs; the profile's ports have no lanes, so all
        // are in pipe 0 and every frame in the same XPE.
        let shp_cells = 2000u64 / sim.switch(sw).config().asic.personality.partitions() as u64;
        let xoff_cells = |src: usize| if src == 0 || src == 1 { 177_632u64.div_ceil(cell) } else { 53_248u64.div_ceil(cell) };
        for op in ops {
            match op {
                Op::Send { src, dscp, n, len } => {
                    let port = [e0, e4][src];
                    for i in 0..n {
                        let pg = if dscp == 3 || dscp == 4 { dscp } else { 0 };
                        let before = sim.switch(sw).mmu().pg_occupancy(port, pg);
                        let shp_before = sim.switch(sw).mmu().pool_cells("ingress_lossless_pool").unwrap().1;
                        let drops_before = sim.switch(sw).port_counters(port).unwrap().pgs[usize::from(pg)].dropped_packets;
                        sim.switch(sw).handle_frame(port, frame(dscp, len, i), Instant::from_ns(now));
                        let drops = sim.switch(sw).port_counters(port).unwrap().pgs[usize::from(pg)].dropped_packets;
                        if pg != 0 && drops > drops_before {
                            let need = u64::from(len).div_ceil(cell);
                            let headroom_cells = before.headroom_bytes / cell;
                            prop_assert!(
                                headroom_cells + need > xoff_cells(src) || shp_before + need > shp_cells,
                                "lossless PG {pg} dropped with headroom {headroom_cells}/{} and pool {shp_before}/{shp_cells}",
                                xoff_cells(src)
                            );
                        }
                        let occ = sim.switch(sw).mmu().pg_occupancy(port, pg);
                        prop_assert!(occ.headroom_bytes / cell <= xoff_cells(src));
                    }
                }
                Op::Hold(h) => sim.switch(sw).set_port_hold(e8, h),
                Op::QueueHold(q, h) => sim.switch(sw).set_queue_hold(e8, q, h),
                Op::Advance(ns) => {
                    let to = now + ns;
                    sent += advance(&mut sim, &mut now, to);
                }
                Op::Alpha(a) => {
                    sim.switch(sw).apply(&db_with_alpha(a), Instant::from_ns(now)).unwrap();
                }
            }
            let (_, shp_used) = sim.switch(sw).mmu().pool_cells("ingress_lossless_pool").unwrap();
            prop_assert!(shp_used <= shp_cells);
            let l = sim.switch(sw).ledger();
            let queued: u64 = PortId::all(sim.switch(sw).port_count()).map(|p| sim.switch(sw).port_backlog(p) as u64).sum();
            prop_assert_eq!(l.copies + l.originated, sent + queued + l.copies_dropped + l.flushed);
        }
        // Release everything and drain: every cell comes back.
        sim.switch(sw).set_port_hold(e8, false);
        for q in 0..8 {
            sim.switch(sw).set_queue_hold(e8, q, false);
        }
        let to = now + 10_000_000_000;
        sent += advance(&mut sim, &mut now, to);
        let queued: usize = PortId::all(sim.switch(sw).port_count()).map(|p| sim.switch(sw).port_backlog(p)).sum();
        prop_assert_eq!(queued, 0);
        prop_assert_eq!(sim.switch(sw).mmu().total_cells(), 0);
        let l = sim.switch(sw).ledger();
        prop_assert_eq!(l.copies + l.originated, sent + l.copies_dropped + l.flushed);
        for p in PortId::all(sim.switch(sw).port_count()) {
            prop_assert_eq!(sim.switch(sw).mmu().xoff_pgs(p), 0, "no PG left in XOFF");
        }
    }
}
