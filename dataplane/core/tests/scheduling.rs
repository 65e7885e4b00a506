//! sonic-mgmt's WRRtest on the switch, in virtual time, with the TH BALANCED scheduler profiles
//! (`scheduler.0` DWRR 14 for the lossy queues, `scheduler.1` DWRR 15 for the lossless ones), and its
//! weight-change variant applied as a new configuration.

mod common;

use common::*;
use lossless_core::model::Switch;
use lossless_core::model::config::ConfigDb;
use lossless_core::time::Instant;
use std::net::Ipv4Addr;

const TH: &str = include_str!("../../../configs/profiles/th_balanced.yaml");
const HOST2_IP: Ipv4Addr = Ipv4Addr::new(192, 168, 0, 2);
/// DSCPs that reach queues 0..6 with the AZURE maps.
const DSCP_FOR_QUEUE: [u8; 7] = [8, 0, 5, 3, 4, 46, 48];

/// Holds the destination, sends `counts[q]` packets to each queue q, releases, and returns for each queue
/// how many packets (of all queues) were still waiting when its last packet left.
fn wrr_run(db: &ConfigDb, counts: [u16; 7]) -> [usize; 7] {
    let mut sw = Switch::new();
    sw.apply(db, Instant::ZERO).unwrap();
    let (e0, e8) = (port(&sw, "Ethernet0"), port(&sw, "Ethernet8"));
    sw.handle_frame(e8, arp_request(HOST2_MAC, HOST2_IP, Ipv4Addr::new(192, 168, 0, 1)), Instant::from_ns(0));
    drain_all(&mut sw, Instant::ZERO);
    sw.set_port_hold(e8, true);
    let mut now = 1_000_000;
    // Interleave the queues so arrival order favours none.
    for i in 0..*counts.iter().max().unwrap() {
        for (q, &n) in counts.iter().enumerate() {
            if i < n {
                let f = routed_udp(
                    UPLINK0_MAC,
                    Ipv4Addr::new(172, 16, 0, 5),
                    HOST2_IP,
                    i,
                    4791,
                    DSCP_FOR_QUEUE[q],
                );
                sw.handle_frame(e0, f, Instant::from_ns(now));
            }
        }
    }
    let total: usize = counts.iter().map(|&n| usize::from(n)).sum();
    assert_eq!(sw.port_backlog(e8), total, "nothing leaks out while held");
    sw.set_port_hold(e8, false);
    let mut left = counts.map(usize::from);
    let mut remaining = total;
    let mut outstanding_at_last = [0usize; 7];
    while remaining > 0 {
        match sw.poll_transmit(e8, Instant::from_ns(now)) {
            Some(tx) => {
                let q = usize::from(tx.queue.unwrap());
                left[q] -= 1;
                remaining -= 1;
                if left[q] == 0 {
                    outstanding_at_last[q] = remaining;
                }
            }
            None => now = (sw.next_transmit_at(e8).expect("more to send")).as_ns(),
        }
    }
    outstanding_at_last
}

#[test]
fn wrr_test_default_weights() {
    let db = ConfigDb::from_yaml_str(TH).unwrap();
    let out = wrr_run(&db, [140, 140, 140, 150, 150, 140, 140]);
    for (q, n) in out.iter().enumerate() {
        assert!(*n < 80, "queue {q}: {n} packets still waiting when its last packet left ({out:?})");
    }
}

#[test]
fn wrr_test_weight_change() {
    let mut db = ConfigDb::from_yaml_str(TH).unwrap();
    db.set("SCHEDULER", "scheduler.0", "weight", "8");
    db.set("SCHEDULER", "scheduler.1", "weight", "30");
    let out = wrr_run(&db, [80, 80, 80, 300, 300, 80, 80]);
    for (q, n) in out.iter().enumerate() {
        assert!(*n < 80, "queue {q}: {n} packets still waiting when its last packet left ({out:?})");
    }
    // With the old weights the same counts would leave the lossless queues far behind.
    let skewed = wrr_run(&ConfigDb::from_yaml_str(TH).unwrap(), [80, 80, 80, 300, 300, 80, 80]);
    assert!(skewed[0] > 80, "the weights matter: {skewed:?}");
}

#[test]
fn a_strict_queue_drains_first() {
    let mut db = ConfigDb::from_yaml_str(TH).unwrap();
    db.set("SCHEDULER", "strict", "type", "STRICT");
    db.set("QUEUE", "Ethernet8|6", "scheduler", "strict");
    db.tables.get_mut("QUEUE").unwrap().remove("Ethernet0,Ethernet4,Ethernet8,Ethernet12,Ethernet16|5-6");
    db.set("QUEUE", "Ethernet0,Ethernet4,Ethernet8,Ethernet12,Ethernet16|5", "scheduler", "scheduler.0");
    db.set("QUEUE", "Ethernet0,Ethernet4,Ethernet12,Ethernet16|6", "scheduler", "scheduler.0");
    let out = wrr_run(&db, [50, 50, 50, 50, 50, 50, 50]);
    assert_eq!(out[6], 300, "queue 6 finished while all 300 others still waited: {out:?}");
}
