//! PFC honouring and the PFC watchdog in virtual time: sonic-mgmt's pfcwd procedures (sonic-net/sonic-mgmt:
//! `tests/pfcwd/`; `docs/pfc-watchdog.md`)
//! against the Broadcom TH BALANCED profile (PFC_WD on every port: detection 400 ms, restoration 400 ms,
//! poll 100 ms).

mod common;

use common::*;
use lossless_core::model::config::ConfigDb;
use lossless_core::model::{DropReason, PortId, Switch};
use lossless_core::sim::{Device, NodeId, Sim};
use lossless_core::time::Instant;
use lossless_core::wire::{MacControlRepr, PfcRepr, mac_control};
use std::net::Ipv4Addr;

const TH: &str = include_str!("../../../configs/profiles/th_balanced.yaml");
const MS: u64 = 1_000_000;
const HOST2_IP: Ipv4Addr = Ipv4Addr::new(192, 168, 0, 2);

/// A switch driven in virtual time by the driver of the model and NIC tests (`lossless_core::sim`): every
/// timeout runs and everything due is transmitted; frames and events are logged.
struct Lab {
    sim: Sim,
    /// The switch.
    node: NodeId,
    now: u64,
    src: PortId,
    dst: PortId,
}

impl Lab {
    fn new(edit: impl FnOnce(&mut ConfigDb)) -> Lab {
        let mut db = ConfigDb::from_yaml_str(TH).unwrap();
        edit(&mut db);
        let mut sw = Switch::new();
        sw.apply(&db, Instant::ZERO).unwrap_or_else(|e| panic!("{e}"));
        let (src, dst) = (port(&sw, "Ethernet0"), port(&sw, "Ethernet8"));
        sw.handle_frame(
            dst,
            arp_request(HOST2_MAC, HOST2_IP, Ipv4Addr::new(192, 168, 0, 1)),
            Instant::from_ns(0),
        );
        let mut sim = Sim::new();
        let node = sim.add(Device::Switch(Box::new(sw)));
        sim.keep_log = true;
        let mut lab = Lab { sim, node, now: 0, src, dst };
        lab.advance(MS);
        lab
    }

    fn sw(&mut self) -> &mut Switch {
        self.sim.switch(self.node)
    }

    /// Runs the switch up to `to`.
    fn advance(&mut self, to: u64) {
        self.sim.run_until(Instant::from_ns(to));
        self.now = self.now.max(to);
    }

    /// A peer on `port` sends a PFC frame for priority 3.
    fn pfc_from_peer(&mut self, port: PortId, quanta: u16) {
        let mut frame = vec![0u8; mac_control::FRAME_LEN];
        MacControlRepr::Pfc(PfcRepr { class_enable: 1 << 3, time: [0, 0, 0, quanta, 0, 0, 0, 0] })
            .emit_frame(HOST2_MAC, &mut frame);
        let now = self.now;
        self.sw().handle_frame(port, frame, Instant::from_ns(now));
    }

    fn send(&mut self, dscp: u8, n: u16) {
        for i in 0..n {
            let f = routed_udp(UPLINK0_MAC, Ipv4Addr::new(172, 16, 0, 5), HOST2_IP, i, 4791, dscp);
            let (src, now) = (self.src, self.now);
            self.sw().handle_frame(src, f, Instant::from_ns(now));
        }
    }

    /// A storm: XOFF (0xFFFF quanta) for priority 3 from the peer on `dst` every millisecond until `to`.
    fn storm_until(&mut self, to: u64) {
        while self.now < to {
            self.pfc_from_peer(self.dst, 0xffff);
            let next = self.now + MS;
            self.advance(next.min(to));
        }
    }

    fn data_sent(&self, port: PortId, queue: u8) -> usize {
        self.sim.sent.iter().filter(|s| s.from.port == port.index() && s.queue == Some(queue)).count()
    }

    fn event_time(&self, text: &str) -> Option<u64> {
        self.sim.events.iter().find(|(_, _, e)| e.to_string().contains(text)).map(|(t, _, _)| t.as_ns())
    }

    fn wd(&mut self, queue: u8) -> lossless_core::model::watchdog::PfcWdCounters {
        let dst = self.dst;
        self.sw().port_counters(dst).unwrap().pfc_wd[usize::from(queue)]
    }
}

#[test]
fn received_pfc_pauses_the_mapped_queue_for_its_quanta() {
    let mut lab = Lab::new(|_| {});
    let dst = lab.dst;
    let t0 = 10 * MS;
    lab.advance(t0);
    // 1000 quanta at 25G = 1000 × 512 bits / 25 Gb/s = 20,480 ns.
    lab.pfc_from_peer(dst, 1000);
    lab.send(3, 5);
    lab.send(8, 5); // DSCP 8 -> TC 0 -> queue 0
    lab.advance(t0 + 20_479);
    assert_eq!(lab.data_sent(dst, 3), 0, "queue 3 paused");
    assert_eq!(lab.data_sent(dst, 0), 5, "queue 0 runs");
    lab.advance(t0 + 20_480 + 10_000);
    assert_eq!(lab.data_sent(dst, 3), 5, "resumed when the quanta ran out");
    let first =
        lab.sim.sent.iter().find(|s| s.from.port == dst.index() && s.queue == Some(3)).unwrap().at.as_ns();
    assert_eq!(first, t0 + 20_480);

    // XON resumes at once; a priority outside pfc_enable is counted, not honoured.
    let t1 = 20 * MS;
    lab.advance(t1);
    lab.pfc_from_peer(dst, 0xffff);
    lab.send(3, 1);
    lab.advance(t1 + 1000);
    assert_eq!(lab.data_sent(dst, 3), 5);
    lab.pfc_from_peer(dst, 0);
    lab.advance(t1 + 2000);
    assert_eq!(lab.data_sent(dst, 3), 6);
    let c = lab.sw().port_counters(dst).unwrap();
    assert_eq!((c.pfc[3].rx, c.pfc[3].rx_xon, c.pfc[3].rx_pause_transitions), (3, 1, 2));
    assert_eq!(c.pfc[3].rx_pause_ns, 20_480 + 1000, "pause time accumulates per priority");
}

/// Storm detection timing, the drop action with exact counter deltas, and restoration.
#[test]
fn storm_detected_dropped_and_restored() {
    let mut lab = Lab::new(|_| {});
    let storm_start = 1000 * MS + MS / 2;
    lab.advance(storm_start);
    lab.pfc_from_peer(lab.dst, 0xffff);
    lab.send(3, 10);
    lab.storm_until(storm_start + 600 * MS);
    let detected =
        lab.event_time("PFC Watchdog detected PFC storm on port Ethernet8, queue index 3").expect("detected");
    let latency = detected - storm_start;
    assert!(latency > 400 * MS && latency <= 500 * MS, "detected {} ms after the storm began", latency / MS);
    assert_eq!(lab.data_sent(lab.dst, 3), 0);
    let wd = lab.wd(3);
    assert_eq!((wd.deadlock_detected, wd.tx_dropped_packets), (1, 10), "the queued packets were flushed");

    // While stormed, 100 packets to the queue are dropped and counted, 100 → 100.
    lab.send(3, 100);
    lab.storm_until(lab.now + 200 * MS);
    let wd2 = lab.wd(3);
    assert_eq!(wd2.tx_dropped_packets - wd.tx_dropped_packets, 100);
    assert_eq!(wd2.tx_dropped_packets_last, 110);
    let dst = lab.dst;
    assert_eq!(lab.sw().port_counters(dst).unwrap().queues[3].dropped_packets, 110);
    // Lossless traffic in the other direction still arrives: rx counters count PG 3 packets of Ethernet8.
    let dst = lab.dst;
    assert!(lab.sw().pfc_state(dst).unwrap().1 & (1 << 3) == 0, "priority 3 no longer honoured");

    // The storm stops: restored after restoration_time (400 ms) with no XOFF, within one more poll
    // (sonic-mgmt test_pfcwd_timer_accuracy: restore_time < real < restore_time + poll).
    let stop = lab.now;
    lab.advance(stop + 700 * MS);
    let restored =
        lab.event_time("PFC Watchdog storm restored on port Ethernet8, queue index 3").expect("restored");
    let quiet = restored - (stop - MS);
    assert!(quiet > 400 * MS && quiet <= 500 * MS, "restored {} ms after the last XOFF", quiet / MS);
    assert_eq!(lab.wd(3).deadlock_restored, 1);
    lab.send(3, 7);
    lab.advance(lab.now + MS);
    assert_eq!(lab.data_sent(lab.dst, 3), 7, "traffic flows again");
}

/// With `drop_ingress`, lossless traffic of the stormed priority that arrives on the stormed port is
/// dropped at its ingress (`PFC_WATCHDOG`, counted on the PG) from the detection on, although the
/// routed fast path forwarded the same flow before the storm: the watchdog's changes invalidate its
/// entries (`switch/nexthop.rs`, the stamp), so the fast path never forwards what the full way drops.
#[test]
fn drop_ingress_drops_a_flow_the_fast_path_forwarded_before_the_storm() {
    let mut lab = Lab::new(|db| {
        db.set("PFC_WD", "GLOBAL", "drop_ingress", "true");
    });
    let dst = lab.dst;
    // The host behind Ethernet8 sends routed RoCE packets (DSCP 3: TC 3, PG 3) that come back to it.
    let from_host = |lab: &mut Lab, n: u16| {
        for i in 0..n {
            let f = routed_udp(HOST2_MAC, Ipv4Addr::new(192, 168, 0, 9), HOST2_IP, i, 4791, 3);
            let now = lab.now;
            lab.sw().handle_frame(dst, f, Instant::from_ns(now));
        }
    };
    let ingress_drops = |lab: &mut Lab| {
        let c = lab.sw().port_counters(dst).unwrap();
        (c.drop_reasons.get(&DropReason::PfcWatchdog).copied().unwrap_or(0), c.pgs[3].dropped_packets)
    };
    lab.advance(100 * MS);
    from_host(&mut lab, 5);
    lab.advance(lab.now + MS);
    assert_eq!(lab.data_sent(dst, 3), 5, "forwarded before the storm");
    assert_eq!(ingress_drops(&mut lab), (0, 0));

    lab.pfc_from_peer(dst, 0xffff);
    lab.send(3, 10);
    lab.storm_until(lab.now + 600 * MS);
    assert!(lab.event_time("detected PFC storm on port Ethernet8, queue index 3").is_some());
    from_host(&mut lab, 5);
    assert_eq!(ingress_drops(&mut lab), (5, 5), "dropped at the stormed port's ingress");
}

#[test]
fn no_detection_without_traffic() {
    let mut lab = Lab::new(|_| {});
    lab.advance(100 * MS);
    lab.storm_until(1500 * MS);
    assert!(lab.event_time("detected").is_none());
    assert_eq!(lab.wd(3).deadlock_detected, 0);
}

#[test]
fn forward_action_ignores_pfc() {
    let mut lab = Lab::new(|db| {
        db.set("PFC_WD", "Ethernet8", "action", "forward");
    });
    lab.advance(100 * MS);
    lab.pfc_from_peer(lab.dst, 0xffff);
    lab.send(3, 10);
    lab.storm_until(700 * MS);
    assert!(lab.event_time("detected PFC storm on port Ethernet8, queue index 3").is_some());
    assert_eq!(lab.data_sent(lab.dst, 3), 10, "the queue drains ignoring PFC");
    let before = lab.wd(3).tx_packets;
    lab.send(3, 100);
    lab.storm_until(lab.now + 200 * MS);
    assert_eq!(lab.wd(3).tx_packets - before, 100);
    assert_eq!(lab.wd(3).tx_dropped_packets, 0);
}

#[test]
fn alert_action_only_records() {
    let mut lab = Lab::new(|db| {
        db.set("PFC_WD", "Ethernet8", "action", "alert");
    });
    lab.advance(100 * MS);
    lab.pfc_from_peer(lab.dst, 0xffff);
    lab.send(3, 10);
    lab.storm_until(700 * MS);
    assert!(lab.event_time("detected PFC storm on port Ethernet8, queue index 3").is_some());
    assert_eq!(lab.data_sent(lab.dst, 3), 0, "still paused: alert changes nothing");
    // The storm ends: the queue drains and the alert clears at the next poll where the condition fails.
    let stop = lab.now;
    lab.advance(stop + 300 * MS);
    assert_eq!(lab.data_sent(lab.dst, 3), 10);
    let restored = lab.event_time("storm restored on port Ethernet8, queue index 3").expect("restored");
    assert!(restored - stop <= 200 * MS);
}

#[test]
fn an_xon_storm_does_not_keep_the_queue_stormed() {
    let mut lab = Lab::new(|_| {});
    lab.advance(100 * MS);
    lab.pfc_from_peer(lab.dst, 0xffff);
    lab.send(3, 10);
    lab.storm_until(700 * MS);
    assert!(lab.event_time("detected").is_some());
    // The peer now floods XON frames: restoration proceeds anyway.
    let stop = lab.now;
    while lab.now < stop + 700 * MS {
        lab.pfc_from_peer(lab.dst, 0);
        let next = lab.now + MS;
        lab.advance(next);
    }
    assert!(lab.event_time("restored").is_some(), "XON frames do not reset the restoration countdown");
}

#[test]
fn big_red_switch_drops_every_monitored_queue_at_once() {
    let mut lab = Lab::new(|_| {});
    lab.send(3, 5);
    let dst = lab.dst;
    lab.sw().set_port_hold(dst, true);
    lab.send(4, 5);
    let mut db = ConfigDb::from_yaml_str(TH).unwrap();
    db.set("PFC_WD", "GLOBAL", "BIG_RED_SWITCH", "enable");
    let now = lab.now;
    lab.sw().apply(&db, Instant::from_ns(now)).unwrap();
    let dst = lab.dst;
    lab.sw().set_port_hold(dst, false);
    lab.advance(lab.now + MS);
    assert_eq!(lab.data_sent(lab.dst, 4), 0, "queue 4 flushed");
    lab.send(4, 3);
    lab.advance(lab.now + MS);
    assert_eq!(lab.data_sent(lab.dst, 4), 0);
    lab.send(8, 3);
    lab.advance(lab.now + MS);
    assert_eq!(lab.data_sent(lab.dst, 0), 3, "lossy queues are not monitored");
    // Disabling it restores every queue.
    db.set("PFC_WD", "GLOBAL", "BIG_RED_SWITCH", "disable");
    let now = lab.now;
    lab.sw().apply(&db, Instant::from_ns(now)).unwrap();
    lab.send(4, 3);
    lab.advance(lab.now + MS);
    assert_eq!(lab.data_sent(lab.dst, 4), 3);
}

#[test]
fn broadcom_rule_detects_a_storm_of_xoff_frames() {
    let mut lab = Lab::new(|db| {
        db.set("PFC_WD", "GLOBAL", "detection_rule", "broadcom");
    });
    lab.advance(100 * MS);
    lab.storm_until(800 * MS);
    // The Broadcom rule does not look at the queue: an empty queue under a storm is detected too.
    assert!(lab.event_time("detected PFC storm on port Ethernet8, queue index 3").is_some());
}

#[test]
fn debug_storm_forces_detection() {
    let mut lab = Lab::new(|_| {});
    lab.advance(100 * MS);
    let dst = lab.dst;
    lab.sw().set_debug_storm(dst, 4, true);
    lab.advance(700 * MS);
    assert!(lab.event_time("detected PFC storm on port Ethernet8, queue index 4").is_some());
    let dst = lab.dst;
    lab.sw().set_debug_storm(dst, 4, false);
    lab.advance(1300 * MS);
    assert!(lab.event_time("restored on port Ethernet8, queue index 4").is_some());
}

#[test]
fn drop_action_with_drop_ingress_also_drops_the_priority_arriving_on_the_stormed_port() {
    let mut lab = Lab::new(|db| {
        db.set("PFC_WD", "GLOBAL", "drop_ingress", "true");
    });
    lab.advance(100 * MS);
    lab.pfc_from_peer(lab.dst, 0xffff);
    lab.send(3, 10);
    lab.storm_until(700 * MS);
    assert!(lab.event_time("detected PFC storm on port Ethernet8, queue index 3").is_some());
    // Host 2 (behind the stormed port) sends 50 lossless packets to the uplink: all dropped at ingress.
    let (uplink, now) = (lab.src, lab.now);
    lab.sw().handle_frame(
        uplink,
        arp_request(UPLINK0_MAC, Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 0)),
        Instant::from_ns(now),
    );
    let before = lab.wd(3);
    for i in 0..50 {
        let f = routed_udp(HOST2_MAC, HOST2_IP, Ipv4Addr::new(172, 16, 0, 9), i, 4791, 3);
        let (dst, now) = (lab.dst, lab.now);
        lab.sw().handle_frame(dst, f, Instant::from_ns(now));
    }
    lab.storm_until(lab.now + 200 * MS);
    let after = lab.wd(3);
    assert_eq!(after.rx_dropped_packets - before.rx_dropped_packets, 50);
    assert_eq!(lab.data_sent(uplink, 3), 0);
}
