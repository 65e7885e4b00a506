//! sonic-mgmt's PFC watchdog tests (`tests/pfcwd` in sonic-net/sonic-mgmt) against
//! switchd's watchdog (`dataplane/core/src/model/watchdog.rs`): the actions drop / forward / alert with exact
//! counter deltas (test_pfcwd_function), two ports stormed one after the other (test_pfcwd_multi_port), a
//! storm on an empty queue (test_pfcwd_no_traffic), detection and restoration timing
//! (test_pfcwd_timer_accuracy) and configuration errors (test_pfc_config).
//!
//! Storms are either real, PFC XOFF frames (65535 quanta) sent from the PTF port on a thread as
//! `pfc_gen.py` sends them from the fanout ([`Ptf::pfc_storm`]), or the fake storm (`DEBUG_STORM`,
//! [`Ptf::debug_storm`]). A real storm must keep the queue paused without a gap for the whole detection
//! time: a thread (and switchd) on a shared two-core machine stalls for several milliseconds now and then,
//! longer than the 1.34 ms one XOFF lasts at 25 Gb/s (gaps of 30 ms and more were seen with other
//! switchd instances busy on the machine), and a lapse lets the queue drain (no storm). So the stormed
//! ports of the real-storm tests run at 100 Mb/s, where one XOFF lasts 335 ms, re-sent every 10 ms:
//! [`slow_storm_ports`]; the reports say so.
//!
//! Timers come from the profile's PFC_WD table (both shipped profiles: detection 400 ms, restoration
//! 400 ms, POLL_INTERVAL 100 ms on every port; a profile without one gets those values).

use lossless_dataplane::model::config::ConfigDb;
use lossless_proto::v1 as pb;
use lossless_ptf::harness::{Dest, Events};
use lossless_ptf::on_profiles;
use lossless_ptf::packet::{Udp, mac, simple_pfc_packet, simple_udp_packet};
use lossless_ptf::qos::Qos;
use lossless_ptf::report::Report;
use lossless_ptf::{Ptf, profile};
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

/// Where traffic toward the stormed ports comes from (a routed uplink).
const SRC: &str = "Ethernet0";
/// The port stormed by the fake storm in the action tests (routed, 100G).
const STORMED: &str = "Ethernet4";
/// The host traffic from the stormed port goes to.
const PEER: &str = "Ethernet8";
/// Real storms: two 25G VLAN ports.
const STORM_A: &str = "Ethernet8";
const STORM_B: &str = "Ethernet12";
/// Packets per direction, as pfc_wd.PfcWdTest.
const N: u64 = 100;

// ------------------------------------------------------------------------------------------ profile

/// The profile, with PFC_WD entries (detection 400 ms, restoration 400 ms, poll 100 ms, drop, as the
/// shipped profiles) added where it has none.
fn with_pfcwd(mut db: ConfigDb) -> ConfigDb {
    let ports: Vec<String> = db.tables["PORT"].keys().cloned().collect();
    let has = |db: &ConfigDb, k: &str| db.tables.get("PFC_WD").is_some_and(|t| t.contains_key(k));
    if !has(&db, "GLOBAL") {
        db.set("PFC_WD", "GLOBAL", "POLL_INTERVAL", "100");
    }
    for p in ports {
        if !has(&db, &p) {
            db.set("PFC_WD", &p, "action", "drop");
            db.set("PFC_WD", &p, "detection_time", "400");
            db.set("PFC_WD", &p, "restoration_time", "400");
        }
    }
    db
}

/// The profile with the real-storm ports at 100 Mb/s (see the module documentation). Only line pacing and
/// pause length change: buffer profiles are bound explicitly (BUFFER_PG), the watchdog has no speed input.
fn slow_storm_ports(mut db: ConfigDb) -> ConfigDb {
    for p in [STORM_A, STORM_B] {
        db.set("PORT", p, "speed", "100");
    }
    db
}

/// The watchdog timers of a port, from the profile.
#[derive(Debug, Clone, Copy)]
struct Timers {
    detection: Duration,
    restoration: Duration,
    poll: Duration,
}

impl Timers {
    fn of(db: &ConfigDb, port: &str) -> Timers {
        let wd = &db.tables["PFC_WD"];
        let ms = |v: Option<&String>, d: u64| Duration::from_millis(v.map_or(d, |v| v.parse().expect("ms")));
        Timers {
            detection: ms(wd[port].get("detection_time"), 0),
            restoration: ms(wd[port].get("restoration_time"), 0),
            poll: ms(wd.get("GLOBAL").and_then(|g| g.get("POLL_INTERVAL")), 100),
        }
    }

    /// How long to wait for a detection that must come: the detection window plus generous slack for a
    /// loaded machine (the wait ends when the event arrives; timing is PfcWdTimerAccuracy's business).
    fn detect_wait(&self) -> Duration {
        self.detection + 2 * self.poll + Duration::from_secs(3)
    }

    fn restore_wait(&self) -> Duration {
        self.restoration + 2 * self.poll + Duration::from_secs(3)
    }
}

/// The covering PORT_QOS_MAP entry's field.
fn port_qos_field<'a>(db: &'a ConfigDb, port: &str, field: &str) -> Option<&'a String> {
    let t = db.tables.get("PORT_QOS_MAP")?;
    t.iter()
        .find(|(k, _)| k.split(',').any(|p| p.trim() == port))
        .or_else(|| t.get_key_value("global"))?
        .1
        .get(field)
}

/// Priorities the watchdog watches on `port` (pfcwd_sw_enable), with the queue each maps to
/// (pfc_to_queue_map, identity when absent).
fn watched(db: &ConfigDb, port: &str) -> Vec<(u8, u8)> {
    let list = port_qos_field(db, port, "pfcwd_sw_enable").map_or("", String::as_str);
    let map = port_qos_field(db, port, "pfc_to_queue_map").map(|m| {
        let m = m.trim().trim_start_matches("[MAP_PFC_PRIORITY_TO_QUEUE|").trim_end_matches(']');
        &db.tables["MAP_PFC_PRIORITY_TO_QUEUE"][m]
    });
    list.split(',')
        .filter_map(|p| p.trim().parse::<u8>().ok())
        .map(|p| (p, map.and_then(|m| m.get(&p.to_string())).map_or(p, |q| q.parse().expect("queue"))))
        .collect()
}

/// A DSCP whose packets, entering `src`, use queue `queue` of `dst`.
fn dscp_for_queue(db: &ConfigDb, src: &str, dst: &str, queue: u8) -> u8 {
    let qos = Qos::new(db);
    (0..64).find(|&d| qos.tc_to_queue(dst, qos.dscp_to_tc(src, d)) == queue).expect("a DSCP for the queue")
}

fn global_flag(db: &ConfigDb, field: &str) -> bool {
    db.tables
        .get("PFC_WD")
        .and_then(|t| t.get("GLOBAL"))
        .and_then(|g| g.get(field))
        .is_some_and(|v| v == "true")
}

// ------------------------------------------------------------------------------------------ helpers

fn routed(ptf: &Ptf, dest: &Dest, dscp: u8, id: u16) -> Vec<u8> {
    simple_udp_packet(&Udp {
        pktlen: 100,
        eth_dst: ptf.router_mac(),
        ip_src: Ipv4Addr::new(10, 0, 0, 1),
        ip_dst: dest.ip,
        ip_dscp: dscp,
        ip_id: id,
        ..Udp::default()
    })
}

/// Sends `n` copies of `frame` from test port `port` and waits until that port's switch counters saw them
/// (the ledger wait of `send_packets` is not enough while a storm's frames also arrive).
fn send_counted(ptf: &mut Ptf, port: usize, frame: &[u8], n: u64) {
    let name = ptf.port_name(port).to_owned();
    let before = ptf.port_counters(&name).rx_ok;
    ptf.send_packets(port, frame, n as usize);
    ptf.wait_until(&format!("{name} to count {n} frame(s) in"), |c| {
        c.ports.iter().any(|p| p.name == name && p.rx_ok >= before + n)
    });
}

fn wd(ptf: &mut Ptf, port: &str, queue: u8) -> pb::PfcWdCounters {
    ptf.port_counters(port).pfc_wd[usize::from(queue)].clone()
}

/// Waits until the watchdog counters of (port, queue) satisfy `ok` (they are refreshed at each poll).
fn wait_wd(
    ptf: &mut Ptf,
    port: &str,
    queue: u8,
    what: &str,
    ok: impl Fn(&pb::PfcWdCounters) -> bool,
) -> pb::PfcWdCounters {
    let c =
        ptf.wait_until(what, |c| c.ports.iter().any(|p| p.name == port && ok(&p.pfc_wd[usize::from(queue)])));
    c.ports.into_iter().find(|p| p.name == port).expect("port").pfc_wd[usize::from(queue)].clone()
}

fn storm_event(
    events: &Events,
    kind: &str,
    port: &str,
    queue: u8,
    wait: Duration,
) -> Option<pb::SwitchEvent> {
    events.wait_for(wait, |e| e.kind == kind && e.port == port && e.index == u32::from(queue))
}

fn detected(events: &Events, port: &str, queue: u8, wait: Duration) -> pb::SwitchEvent {
    storm_event(events, "pfc_storm_detected", port, queue, wait)
        .unwrap_or_else(|| panic!("no storm detected on {port} queue {queue} within {wait:?}"))
}

fn restored(events: &Events, port: &str, queue: u8, wait: Duration) -> pb::SwitchEvent {
    storm_event(events, "pfc_storm_restored", port, queue, wait)
        .unwrap_or_else(|| panic!("no storm restored on {port} queue {queue} within {wait:?}"))
}

/// An XOFF frame for `priority` from a peer, and how often to send it on `port` so the pause never lapses:
/// every 10 ms, or a quarter of the pause 65535 quanta last at the port's speed when that is shorter.
fn storm_frame(db: &ConfigDb, port: &str, priority: u8) -> (Vec<u8>, Duration) {
    let speed_mbps: u64 = db.tables["PORT"][port]["speed"].parse().expect("speed");
    let pause_ns = 65535 * 512 * 1000 / speed_mbps;
    assert!(pause_ns >= 1_000_000, "{port}: a {pause_ns} ns pause is too short to keep up from a thread");
    let interval = Duration::from_nanos(pause_ns / 4).min(Duration::from_millis(10));
    (simple_pfc_packet(mac("02:dd:00:00:00:01"), 1 << priority, 0xffff), interval)
}

/// Waits until `port` has counted `n` more PFC frames for `priority` than `before`: the storm is on.
fn wait_pfc_rx(ptf: &mut Ptf, port: &str, priority: u8, before: u64, n: u64) {
    ptf.wait_until(&format!("{port} to receive PFC for priority {priority}"), |c| {
        c.ports.iter().any(|p| p.name == port && p.pfc[usize::from(priority)].rx >= before + n)
    });
}

// --------------------------------------------------------------------------------------- actions

/// PfcWdActions[action] (test_pfcwd_function::test_pfcwd_actions): a fake storm on a lossless queue of
/// STORMED, configured with `action`. Detected (the event names the action); then N packets toward the
/// stormed queue, N from the stormed port with the same priority, N on the other lossless queue and N on
/// a lossy queue toward STORMED; the storm stops and is restored; traffic to the queue flows again.
/// Expected, as SONiC's watchdog acts: drop — the N toward the queue are dropped (TX_DROPPED +N, _LAST N, nothing
/// arrives); the N from the stormed port are forwarded (RX +N, _LAST N: the zero-buffer handler) unless
/// PFC_WD|GLOBAL drop_ingress (the ACL handler: RX_DROPPED). forward and alert — all arrive (TX +N,
/// _LAST N). The other queues are unaffected and never stormed.
fn pfcwd_actions(name: &str, action: &str) {
    let mut report = Report::new(&format!("PfcWdActions[{action}]"), name);
    let mut db = with_pfcwd(profile(name));
    db.set("PFC_WD", STORMED, "action", action);
    let mut ptf = Ptf::start(name, db);
    let db = ptf.db.clone();
    let timers = Timers::of(&db, STORMED);
    let watched = watched(&db, STORMED);
    let [(_, queue), (_, other), ..] = watched[..] else {
        panic!("{STORMED} watches fewer than two priorities")
    };
    let (src, stormed, peer) = (ptf.port_index(SRC), ptf.port_index(STORMED), ptf.port_index(PEER));
    let to_stormed = ptf.destination(stormed);
    let to_peer = ptf.destination(peer);
    let dscp = dscp_for_queue(&db, SRC, STORMED, queue);
    let dscp_other = dscp_for_queue(&db, SRC, STORMED, other);
    let lossy_queue = (0..8).find(|q| !watched.iter().any(|w| w.1 == *q)).expect("a lossy queue");
    let dscp_lossy = dscp_for_queue(&db, SRC, STORMED, lossy_queue);
    let dscp_in = dscp_for_queue(&db, STORMED, PEER, queue);
    let qos = Qos::new(&db);
    assert_eq!(
        qos.tc_to_pg(STORMED, qos.dscp_to_tc(STORMED, dscp_in)),
        queue,
        "ingress PG = the queue's index"
    );
    let drop_ingress = global_flag(&db, "drop_ingress");

    let events = ptf.subscribe_events();
    let base = wd(&mut ptf, STORMED, queue);
    ptf.debug_storm(STORMED, queue, true);
    let event = detected(&events, STORMED, queue, timers.detect_wait());
    let said = event.message.rsplit(", ").next().unwrap_or_default();
    report.number("storm detected", format!("action {action}"), said);
    assert!(event.message.ends_with(&format!("action {action}")), "{}", event.message);
    let start = wait_wd(&mut ptf, STORMED, queue, "the queue to be stormed", |w| w.status == "stormed");
    assert_eq!(start.deadlock_detected, base.deadlock_detected + 1);

    // Toward the stormed queue.
    let frame = routed(&ptf, &to_stormed, dscp, 1);
    let want = ptf.expected_routed(&frame, &to_stormed);
    send_counted(&mut ptf, src, &frame, N);
    let arrived = if action == "drop" {
        wait_wd(&mut ptf, STORMED, queue, "TX_DROPPED to count the packets", |w| {
            w.tx_dropped_packets >= start.tx_dropped_packets + N
        });
        ptf.verify_no_other_packets();
        0
    } else {
        wait_wd(&mut ptf, STORMED, queue, "TX to count the packets", |w| {
            w.tx_packets >= start.tx_packets + N
        });
        ptf.count_matched_packets(&want, stormed, N as usize, ptf.timeout) as u64
    };
    report.number(
        &format!("egress to queue {queue}: arrived"),
        if action == "drop" { 0 } else { N },
        arrived,
    );

    // From the stormed port, same priority.
    let frame_in = routed(&ptf, &to_peer, dscp_in, 2);
    let want_in = ptf.expected_routed(&frame_in, &to_peer);
    send_counted(&mut ptf, stormed, &frame_in, N);
    let ingress_dropped = action == "drop" && drop_ingress;
    let arrived_in = if ingress_dropped {
        wait_wd(&mut ptf, STORMED, queue, "RX_DROPPED to count the packets", |w| {
            w.rx_dropped_packets >= start.rx_dropped_packets + N
        });
        ptf.verify_no_other_packets();
        0
    } else {
        wait_wd(&mut ptf, STORMED, queue, "RX to count the packets", |w| {
            w.rx_packets >= start.rx_packets + N
        });
        ptf.count_matched_packets(&want_in, peer, N as usize, ptf.timeout) as u64
    };
    report.number(
        &format!("ingress from the stormed port (PG {queue}): arrived"),
        if ingress_dropped { 0 } else { N },
        arrived_in,
    );

    // The other lossless queue and a lossy one are not affected.
    let other_base = wd(&mut ptf, STORMED, other);
    for (q, d) in [(other, dscp_other), (lossy_queue, dscp_lossy)] {
        let f = routed(&ptf, &to_stormed, d, 3);
        let w = ptf.expected_routed(&f, &to_stormed);
        send_counted(&mut ptf, src, &f, N);
        let got = ptf.count_matched_packets(&w, stormed, N as usize, ptf.timeout) as u64;
        report.number(&format!("egress to queue {q}: arrived"), N, got);
        assert_eq!(got, N, "traffic on queue {q} of {STORMED} while queue {queue} is stormed");
    }
    ptf.verify_no_other_packets();

    // Exact counters of the storm.
    let now = wd(&mut ptf, STORMED, queue);
    let (tx_ok, tx_drop) = if action == "drop" { (0, N) } else { (N, 0) };
    let (rx_ok, rx_drop) = if ingress_dropped { (0, N) } else { (N, 0) };
    let observed = [
        now.tx_packets - start.tx_packets,
        now.tx_dropped_packets - start.tx_dropped_packets,
        now.rx_packets - start.rx_packets,
        now.rx_dropped_packets - start.rx_dropped_packets,
        now.tx_packets_last,
        now.tx_dropped_packets_last,
        now.rx_packets_last,
        now.rx_dropped_packets_last,
    ];
    let expected = [tx_ok, tx_drop, rx_ok, rx_drop, tx_ok, tx_drop, rx_ok, rx_drop];
    report.number(
        "TX ok/drop, RX ok/drop deltas; same _LAST",
        format!("{expected:?}"),
        format!("{observed:?}"),
    );
    assert_eq!(
        observed, expected,
        "PFC_WD counters of {STORMED}:{queue}: TX, TX_DROPPED, RX, RX_DROPPED deltas, then _LAST"
    );
    let o = wd(&mut ptf, STORMED, other);
    report.number(
        &format!("queue {other} status, storms"),
        "operational, 0",
        format!("{}, {}", o.status, o.deadlock_detected - other_base.deadlock_detected),
    );
    assert_eq!((o.status.as_str(), o.deadlock_detected), ("operational", other_base.deadlock_detected));

    // Storm over: restored, and the queue carries traffic again.
    ptf.debug_storm(STORMED, queue, false);
    restored(&events, STORMED, queue, timers.restore_wait());
    let end = wait_wd(&mut ptf, STORMED, queue, "the queue to be operational", |w| w.status == "operational");
    report.number(
        "detected/restored deltas",
        "1/1",
        format!(
            "{}/{}",
            end.deadlock_detected - base.deadlock_detected,
            end.deadlock_restored - base.deadlock_restored
        ),
    );
    assert_eq!(
        (end.deadlock_detected - base.deadlock_detected, end.deadlock_restored - base.deadlock_restored),
        (1, 1)
    );
    let frame = routed(&ptf, &to_stormed, dscp, 4);
    let want = ptf.expected_routed(&frame, &to_stormed);
    send_counted(&mut ptf, src, &frame, 10);
    let got = ptf.count_matched_packets(&want, stormed, 10, ptf.timeout);
    report.number(&format!("after restore, egress to queue {queue}: arrived"), 10, got);
    assert_eq!(got, 10, "traffic to the restored queue");
    ptf.verify_no_other_packets();
}
on_profiles!(actions_drop => pfcwd_actions("drop"));
on_profiles!(actions_forward => pfcwd_actions("forward"));
on_profiles!(actions_alert => pfcwd_actions("alert"));

// ------------------------------------------------------------------------------------- real storms

/// A port stormed for real: its host, the watched (priority, queue), a DSCP toward that queue.
struct Target {
    name: &'static str,
    port: usize,
    dest: Dest,
    priority: u8,
    queue: u8,
    dscp: u8,
}

impl Target {
    fn new(ptf: &mut Ptf, name: &'static str, which: usize) -> Target {
        let db = ptf.db.clone();
        let (priority, queue) = watched(&db, name)[which];
        let port = ptf.port_index(name);
        let dest = ptf.destination(port);
        Target { name, port, dest, priority, queue, dscp: dscp_for_queue(&db, SRC, name, queue) }
    }

    /// Starts a storm on it and waits until the switch counts its frames.
    fn storm(&self, ptf: &mut Ptf) -> lossless_ptf::harness::PfcStorm {
        let (frame, interval) = storm_frame(&ptf.db, self.name, self.priority);
        let before = ptf.port_counters(self.name).pfc[usize::from(self.priority)].rx;
        let storm = ptf.pfc_storm(self.port, frame, interval);
        wait_pfc_rx(ptf, self.name, self.priority, before, 2);
        storm
    }

    /// Sends `n` packets toward its watched queue.
    fn send(&self, ptf: &mut Ptf, n: u64, id: u16) -> Vec<u8> {
        let frame = routed(ptf, &self.dest, self.dscp, id);
        send_counted(ptf, ptf.port_index(SRC), &frame, n);
        frame
    }

    /// Queues `n` packets behind the pause: they stay (the condition of the vs detection rule).
    fn queue_behind_pause(&self, ptf: &mut Ptf, n: u64) {
        let before = ptf.port_counters(self.name).queue_depth[usize::from(self.queue)];
        self.send(ptf, n, 10);
        let depth = ptf.port_counters(self.name).queue_depth[usize::from(self.queue)];
        assert_eq!(
            depth,
            before + n,
            "{} queue {} holds the packets behind the pause",
            self.name,
            self.queue
        );
    }
}

/// PfcWdMultiPort (test_pfcwd_multi_port): real storms on two ports, on different lossless queues, one after
/// the other and overlapping. Each is detected with K packets stuck behind its pause (flushed by the drop
/// action: TX_DROPPED_LAST K); while both are stormed K more to each are dropped (_LAST 2K); the first storm
/// stops and its queue is restored and forwards again while the second still drops (_LAST 3K); then the
/// second is restored too.
fn pfcwd_multi_port(name: &str) {
    const K: u64 = 10;
    let mut report = Report::new("PfcWdMultiPort", name);
    let mut ptf = Ptf::start(name, slow_storm_ports(with_pfcwd(profile(name))));
    report.number("config", "profile, storm ports at 100 Mb/s", "applied at start");
    let a = Target::new(&mut ptf, STORM_A, 0);
    let b = Target::new(&mut ptf, STORM_B, 1);
    let (ta, tb) = (Timers::of(&ptf.db, a.name), Timers::of(&ptf.db, b.name));
    for t in [&a, &b] {
        let action = ptf.db.tables["PFC_WD"][t.name].get("action").map_or("drop", String::as_str).to_owned();
        assert_eq!(action, "drop", "{}: the procedure expects the drop action", t.name);
    }
    let events = ptf.subscribe_events();

    let storm_a = a.storm(&mut ptf);
    a.queue_behind_pause(&mut ptf, K);
    detected(&events, a.name, a.queue, ta.detect_wait());
    let storm_b = b.storm(&mut ptf);
    b.queue_behind_pause(&mut ptf, K);
    detected(&events, b.name, b.queue, tb.detect_wait());
    for t in [&a, &b] {
        let w = wait_wd(&mut ptf, t.name, t.queue, "the queued packets to be flushed", |w| {
            w.tx_dropped_packets_last >= K
        });
        report.number(
            &format!("{}:{} detected, TX_DROPPED_LAST", t.name, t.queue),
            format!("stormed, {K}"),
            format!("{}, {}", w.status, w.tx_dropped_packets_last),
        );
        assert_eq!((w.status.as_str(), w.deadlock_detected, w.tx_dropped_packets_last), ("stormed", 1, K));
    }

    // Both stormed: both drop.
    for t in [&a, &b] {
        t.send(&mut ptf, K, 11);
        wait_wd(&mut ptf, t.name, t.queue, "the drops to be counted", |w| w.tx_dropped_packets_last >= 2 * K);
    }
    ptf.verify_no_other_packets();

    // The first storm ends: restored, forwards again; the second still drops.
    storm_a.stop();
    restored(&events, a.name, a.queue, ta.restore_wait());
    let frame = a.send(&mut ptf, K, 12);
    let want = ptf.expected_routed(&frame, &a.dest);
    let got = ptf.count_matched_packets(&want, a.port, K as usize, ptf.timeout) as u64;
    b.send(&mut ptf, K, 13);
    let wb =
        wait_wd(&mut ptf, b.name, b.queue, "the drops to be counted", |w| w.tx_dropped_packets_last >= 3 * K);
    ptf.verify_no_other_packets();
    report.number(&format!("{} restored, forwards", a.name), K, got);
    report.number(
        &format!("{} still stormed, TX_DROPPED_LAST", b.name),
        format!("stormed, {}", 3 * K),
        format!("{}, {}", wb.status, wb.tx_dropped_packets_last),
    );
    assert_eq!(got, K, "{} forwards after its restoration", a.name);
    assert_eq!(
        (wb.status.as_str(), wb.tx_dropped_packets_last),
        ("stormed", 3 * K),
        "{} is still stormed",
        b.name
    );
    let wa = wd(&mut ptf, a.name, a.queue);
    assert_eq!(
        (wa.status.as_str(), wa.deadlock_restored, wa.tx_dropped_packets_last),
        ("operational", 1, 2 * K)
    );

    storm_b.stop();
    restored(&events, b.name, b.queue, tb.restore_wait());
    let frame = b.send(&mut ptf, K, 14);
    let want = ptf.expected_routed(&frame, &b.dest);
    let got = ptf.count_matched_packets(&want, b.port, K as usize, ptf.timeout) as u64;
    report.number(&format!("{} restored, forwards", b.name), K, got);
    assert_eq!(got, K, "{} forwards after its restoration", b.name);
    ptf.verify_no_other_packets();
}
on_profiles!(multi_port => pfcwd_multi_port());

/// PfcWdNoTraffic (test_pfcwd_no_traffic): a real storm on a lossless queue that holds nothing. The
/// watchdog's rule (`vs`, the default: the queue holds packets, sent none since the last poll, and was
/// paused; `PFC_WD|GLOBAL detection_rule`) must not fire: no detection over twice the detection window
/// while the pause is verifiably in force. Control: K packets queued behind the same storm are detected.
fn pfcwd_no_traffic(name: &str) {
    let mut report = Report::new("PfcWdNoTraffic", name);
    let mut ptf = Ptf::start(name, slow_storm_ports(with_pfcwd(profile(name))));
    report.number("config", "profile, storm ports at 100 Mb/s", "applied at start");
    let rule = ptf.db.tables["PFC_WD"]
        .get("GLOBAL")
        .and_then(|g| g.get("detection_rule"))
        .map_or("vs", String::as_str)
        .to_owned();
    assert_eq!(rule, "vs", "the no-traffic expectation is the vs rule's");
    let a = Target::new(&mut ptf, STORM_A, 0);
    let timers = Timers::of(&ptf.db, a.name);
    let events = ptf.subscribe_events();
    let before = ptf.port_counters(a.name).pfc[usize::from(a.priority)];
    let storm = a.storm(&mut ptf);
    let quiet = 2 * (timers.detection + timers.poll);
    let early = storm_event(&events, "pfc_storm_detected", a.name, a.queue, quiet);
    let after = ptf.port_counters(a.name).pfc[usize::from(a.priority)];
    let w = wd(&mut ptf, a.name, a.queue);
    let paused_ms = (after.rx_pause_us - before.rx_pause_us) / 1000;
    report.number(
        &format!("detections over {quiet:?} of storm, empty queue"),
        0,
        u64::from(early.is_some()) + w.deadlock_detected,
    );
    report.number(
        "pause in force (ms paused, PFC frames received)",
        format!(">= {}", quiet.as_millis() * 9 / 10),
        format!("{paused_ms}, {}", after.rx - before.rx),
    );
    assert!(early.is_none() && w.deadlock_detected == 0, "a storm on an empty queue was detected: {early:?}");
    assert!(
        u128::from(paused_ms) >= quiet.as_millis() * 9 / 10,
        "the queue was paused only {paused_ms} ms of {quiet:?}"
    );

    // Control: the same storm with packets stuck behind it.
    let t0 = ptf.counters().timestamp_ns;
    a.queue_behind_pause(&mut ptf, 5);
    let e = detected(&events, a.name, a.queue, timers.detect_wait());
    let ms = e.timestamp_ns.saturating_sub(t0) / 1_000_000;
    report.number(
        "with 5 packets queued: detected (switch clock)",
        "yes (timing: PfcWdTimerAccuracy)",
        format!("yes, {ms} ms later"),
    );
    storm.stop();
    restored(&events, a.name, a.queue, timers.restore_wait());
}
on_profiles!(no_traffic => pfcwd_no_traffic());

/// Reads (switch timestamp, PFC frames received for the priority) until `done` says stop.
fn pfc_rx_reads(
    ptf: &mut Ptf,
    port: &str,
    priority: u8,
    reads: &mut Vec<(u64, u64)>,
    mut done: impl FnMut(&[(u64, u64)]) -> bool,
) {
    let deadline = Instant::now() + ptf.timeout;
    loop {
        let c = ptf.counters();
        let rx = c.ports.iter().find(|p| p.name == port).expect("port").pfc[usize::from(priority)].rx;
        reads.push((c.timestamp_ns, rx));
        if done(reads) {
            return;
        }
        assert!(Instant::now() < deadline, "PFC counters of {port} did not settle");
    }
}

/// A latency measured on the switch's clock: between `lo` and `hi` ns (the bracket is the resolution).
#[derive(Debug, Clone, Copy)]
struct Span {
    lo: u64,
    hi: u64,
}

impl Span {
    fn mid_ms(&self) -> f64 {
        (self.lo + self.hi) as f64 / 2e6
    }
    fn res_ms(&self) -> f64 {
        (self.hi - self.lo) as f64 / 1e6
    }
    /// Whether some latency in the bracket lies in (from, to].
    fn meets(&self, from: Duration, to: Duration) -> bool {
        self.hi > from.as_nanos() as u64 && self.lo <= to.as_nanos() as u64
    }
}

const TIMER_ITERATIONS: usize = 5;

/// PfcWdTimerAccuracy (test_pfcwd_timer_accuracy): TIMER_ITERATIONS real storms on one queue. Detection
/// latency = the storm-detected event's timestamp − when the storm began (the first packet queued behind
/// the pause: the vs rule's condition starts holding then); restoration latency = the restored event −
/// the storm's last XOFF frame. Both on the switch's clock (events and counter reads carry its
/// timestamps), each known within a bracket: the counter reads around the step (the resolution, reported).
/// sonic-mgmt accepts detection in (detection_time, detection_time + poll) and restoration in
/// (restoration_time, restoration_time + poll) for its median sample (index 9 of 20); here the median's
/// bracket must meet those windows. Every sample's must meet them widened by one more poll: a poll runs
/// when switchd's thread wakes after it is due and is stamped then, tens of milliseconds late now and then
/// on a busy shared machine (seen: 529 ms once in ten samples); a systematic error of a poll still fails
/// the median check.
fn pfcwd_timer_accuracy(name: &str) {
    let mut report = Report::new("PfcWdTimerAccuracy", name);
    let mut ptf = Ptf::start(name, slow_storm_ports(with_pfcwd(profile(name))));
    report.number("config", "profile, storm ports at 100 Mb/s", "applied at start");
    let a = Target::new(&mut ptf, STORM_A, 0);
    let t = Timers::of(&ptf.db, a.name);
    // The watchdog's first poll only takes a baseline (it compares each poll with the previous one): a
    // storm begun before it would be seen a poll late. Start after it, on the switch's clock.
    let settled = 2 * t.poll.as_nanos() as u64;
    ptf.wait_until("the watchdog's first poll", |c| c.timestamp_ns > settled);
    let events = ptf.subscribe_events();
    let (mut detect, mut restore) = (Vec::new(), Vec::new());
    for i in 0..TIMER_ITERATIONS {
        let storm = a.storm(&mut ptf);
        let t0 = ptf.counters().timestamp_ns;
        a.queue_behind_pause(&mut ptf, 5);
        let t1 = ptf.counters().timestamp_ns;
        let td = detected(&events, a.name, a.queue, t.detect_wait()).timestamp_ns;
        detect.push(Span { lo: td - t1, hi: td - t0 });

        // Stop right after a frame was seen to arrive (the thread then sleeps its interval and sees the
        // flag), at a different phase of the poll cycle each iteration: i/TIMER_ITERATIONS of a poll after
        // the detecting poll.
        let phase = td + (t.poll.as_nanos() as u64) * i as u64 / TIMER_ITERATIONS as u64;
        let mut reads = Vec::new();
        pfc_rx_reads(&mut ptf, a.name, a.priority, &mut reads, |r| {
            r.len() > 1 && r[r.len() - 1].0 >= phase && r[r.len() - 1].1 != r[r.len() - 2].1
        });
        storm.stop();
        let mut settled = 0;
        pfc_rx_reads(&mut ptf, a.name, a.priority, &mut reads, |r| {
            // Settled: unchanged over reads spanning more than one storm interval.
            let last = r[r.len() - 1];
            settled = r.iter().rev().take_while(|x| x.1 == last.1).count();
            let first_same = r[r.len() - settled];
            last.0 - first_same.0 > 30_000_000
        });
        let final_rx = reads[reads.len() - 1].1;
        let first_final = reads.iter().position(|r| r.1 == final_rx).expect("final");
        let (lo_ts, hi_ts) = (reads[first_final - 1].0, reads[first_final].0);
        let tr = restored(&events, a.name, a.queue, t.restore_wait()).timestamp_ns;
        restore.push(Span { lo: tr - hi_ts, hi: tr - lo_ts });
    }
    let summary = |v: &[Span]| {
        let mids: Vec<String> = v.iter().map(|s| format!("{:.0}", s.mid_ms())).collect();
        let res = v.iter().map(Span::res_ms).fold(0.0, f64::max);
        format!("{} ms (±{:.1} ms)", mids.join("/"), res / 2.0)
    };
    let sorted = |v: &[Span]| {
        let mut v = v.to_vec();
        v.sort_by(|a, b| a.mid_ms().total_cmp(&b.mid_ms()));
        v
    };
    let (ds, rs) = (sorted(&detect), sorted(&restore));
    let window =
        |from: Duration, poll: Duration| format!("({}, {}] ms", from.as_millis(), (from + poll).as_millis());
    report.number("detection latencies", window(t.detection, t.poll), summary(&detect));
    report.number("restoration latencies", window(t.restoration, t.poll), summary(&restore));
    let median = TIMER_ITERATIONS / 2;
    assert!(
        ds[median].meets(t.detection, t.detection + t.poll),
        "median detection {:?} outside {}",
        ds[median],
        window(t.detection, t.poll)
    );
    assert!(
        rs[median].meets(t.restoration, t.restoration + t.poll),
        "median restoration {:?} outside {}",
        rs[median],
        window(t.restoration, t.poll)
    );
    for s in &detect {
        assert!(
            s.meets(t.detection, t.detection + 2 * t.poll),
            "detection {s:?} outside the window + one poll"
        );
    }
    for s in &restore {
        assert!(
            s.meets(t.restoration, t.restoration + 2 * t.poll),
            "restoration {s:?} outside the window + one poll"
        );
    }
}
on_profiles!(timer_accuracy => pfcwd_timer_accuracy());

/// PfcWdConfig (test_pfc_config.py): invalid PFC_WD values are rejected by `Apply` with an error naming
/// `PFC_WD|<port>|<field>` and pfcwdorch's wording, and the running configuration stays (same generation,
/// same CONFIG_DB); the valid `forward` action is accepted, and a storm then is handled with it.
fn pfcwd_config(name: &str) {
    let mut report = Report::new("PfcWdConfig", name);
    let mut ptf = Ptf::start(name, with_pfcwd(profile(name)));
    let running = ptf.db.clone();
    let get = |ptf: &mut Ptf| ptf.call(|mut c| async move { c.get(pb::GetRequest {}).await });
    let before = get(&mut ptf);
    let cases: [(&str, &str, &str); 7] = [
        ("action", "invalid", "Invalid PFC Watchdog action"),
        ("detection_time", "400a", ""),
        ("detection_time", "40", ""),
        ("detection_time", "4000000", ""),
        ("restoration_time", "500c", ""),
        ("restoration_time", "50", ""),
        ("restoration_time", "50000000", ""),
    ];
    let mut rejected = 0;
    for (field, value, wording) in cases {
        let mut db = running.clone();
        db.set("PFC_WD", STORMED, field, value);
        let answer = ptf.apply(&db);
        let named = answer.issues.iter().find(|i| {
            i.severity == pb::config_issue::Severity::Error as i32
                && i.location
                    .as_ref()
                    .is_some_and(|l| l.table == "PFC_WD" && l.key == STORMED && l.field == field)
        });
        assert!(!answer.accepted, "PFC_WD|{STORMED}|{field} = {value:?} was accepted");
        let named = named.unwrap_or_else(|| {
            panic!("no error naming PFC_WD|{STORMED}|{field} for {value:?}: {:?}", answer.issues)
        });
        assert!(named.message.contains(wording), "{:?} lacks {wording:?}", named.message);
        let after = get(&mut ptf);
        assert_eq!(after.generation, before.generation, "a rejected configuration changed the generation");
        assert_eq!(after.config, before.config, "a rejected configuration changed the running one");
        rejected += 1;
        if field == "action" || value == "400a" {
            report.number(&format!("{field} {value:?}"), "rejected", format!("rejected: {}", named.message));
        }
    }
    report.number("invalid values rejected, running config kept", cases.len(), rejected);

    // A valid change is taken, and used.
    let mut db = running.clone();
    db.set("PFC_WD", STORMED, "action", "forward");
    let answer = ptf.apply(&db);
    assert!(answer.accepted, "action forward rejected: {:?}", answer.issues);
    let after = get(&mut ptf);
    let queue = watched(&ptf.db, STORMED)[0].1;
    let timers = Timers::of(&ptf.db, STORMED);
    let events = ptf.subscribe_events();
    ptf.debug_storm(STORMED, queue, true);
    let e = detected(&events, STORMED, queue, timers.detect_wait());
    ptf.debug_storm(STORMED, queue, false);
    let said = e.message.rsplit(", ").next().unwrap_or_default().to_owned();
    report.number(
        "action forward: generation, storm handled with",
        format!("{}, action forward", before.generation + 1),
        format!("{}, {said}", after.generation),
    );
    assert_eq!(after.generation, before.generation + 1);
    assert_eq!(said, "action forward");
    restored(&events, STORMED, queue, timers.restore_wait());
}
on_profiles!(config_validation => pfcwd_config());
