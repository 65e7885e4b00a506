//! sonic-mgmt's scheduling and WRED/ECN tests (`tests/saitests/py3/sai_qos_tests.py`): WRRtest (DWRR
//! proportions) and its weight change, DscpEcnSend (WRED drops and ECN marks on a held queue). Expected
//! numbers come from the profile's SCHEDULER and WRED_PROFILE tables; how far a lossless class can fill
//! without PFC comes from sonic-mgmt's published trigger point ([`lossless_ptf::published`]).

use lossless_dataplane::model::config::ConfigDb;
use lossless_dataplane::wire::ip::Ecn;
use lossless_ptf::harness::Dest;
use lossless_ptf::on_profiles;
use lossless_ptf::packet::{Udp, ds_field, simple_udp_packet};
use lossless_ptf::published;
use lossless_ptf::qos::Qos;
use lossless_ptf::report::Report;
use lossless_ptf::{Ptf, profile};
use std::net::Ipv4Addr;
use std::time::Duration;

const SRC: &str = "Ethernet0";
const DST: &str = "Ethernet4";

fn routed_frame(ptf: &Ptf, dest: &Dest, dscp: u8, ecn: u8, len: usize, id: u16) -> Vec<u8> {
    simple_udp_packet(&Udp {
        pktlen: len,
        eth_dst: ptf.router_mac(),
        ip_src: Ipv4Addr::new(10, 0, 0, 1),
        ip_dst: dest.ip,
        ip_dscp: dscp,
        ip_ecn: ecn,
        ip_id: id,
        ..Udp::default()
    })
}

// ------------------------------------------------------------------------------------------------ WRR

/// A field of the QUEUE entry covering (port, queue), a reference stripped to the referred key.
fn queue_field(db: &ConfigDb, port: &str, queue: u8, field: &str, table: &str) -> Option<String> {
    let covers = |key: &str| {
        let (ports, range) = key.split_once('|').unwrap_or((key, ""));
        ports.split(',').any(|p| p == port)
            && range.split(',').any(|r| match r.split_once('-') {
                Some((a, b)) => {
                    a.parse::<u8>().is_ok_and(|a| a <= queue) && b.parse::<u8>().is_ok_and(|b| queue <= b)
                }
                None => r.parse::<u8>() == Ok(queue),
            })
    };
    let value = db.tables.get("QUEUE")?.iter().find(|(k, _)| covers(k))?.1.get(field)?;
    let v = value.trim();
    let v = v.strip_prefix('[').and_then(|v| v.strip_suffix(']')).unwrap_or(v);
    Some(v.strip_prefix(table).and_then(|v| v.strip_prefix('|')).unwrap_or(v).to_owned())
}

/// sonic-mgmt's WRRtest `limit` is 80 packets of 1000 (qos_params `wrr`): 8 % of what is sent.
const WRR_LIMIT_PERCENT: usize = 8;
/// Packets per unit of weight (qos_params: 140 and 150 for weights 14 and 15).
const WRR_PACKETS_PER_WEIGHT: usize = 10;

/// One WRR run: the destination held, `counts[q]` 64-byte packets per queue (DSCP of a TC mapped to it),
/// released, every packet captured in arrival order. Returns, per queue, the packets still outstanding when
/// its last packet arrived.
fn wrr_run(ptf: &mut Ptf, dest: &Dest, counts: &[(u8, u8, usize)]) -> (Vec<usize>, Vec<(u8, usize)>) {
    let src = ptf.port_index(SRC);
    let total: usize = counts.iter().map(|c| c.2).sum();
    ptf.hold(DST, None, true);
    let depth_before = ptf.port_counters(DST).queue_depth;
    for &(queue, dscp, n) in counts {
        let frame = routed_frame(ptf, dest, dscp, 0, 64, u16::from(queue));
        ptf.send_packets(src, &frame, n);
    }
    let depth = ptf.port_counters(DST).queue_depth;
    for &(queue, _, n) in counts {
        let held = depth[usize::from(queue)] - depth_before[usize::from(queue)];
        assert_eq!(
            held as usize, n,
            "queue {queue} of {DST} holds every packet sent to it before the release"
        );
    }
    ptf.hold(DST, None, false);
    let frames = ptf.receive_n(dest.port, total, Duration::from_secs(10));
    ptf.verify_no_other_packets();
    let queue_of: std::collections::HashMap<u8, u8> = counts.iter().map(|&(q, d, _)| (d, q)).collect();
    let mut seen = [0usize; 8];
    let mut outstanding = Vec::new();
    for (i, f) in frames.iter().enumerate() {
        let (dscp, _) = ds_field(f).expect("an IPv4 frame");
        let queue = *queue_of.get(&dscp).unwrap_or_else(|| panic!("a frame with DSCP {dscp} arrived"));
        seen[usize::from(queue)] += 1;
        let want = counts.iter().find(|c| c.0 == queue).expect("queue").2;
        if seen[usize::from(queue)] == want {
            outstanding.push((queue, total - (i + 1)));
        }
    }
    outstanding.sort();
    let received = counts.iter().map(|c| seen[usize::from(c.0)]).collect();
    (received, outstanding)
}

/// Queues 0..6 of the destination: (queue, a DSCP that reaches it, packets ∝ its SCHEDULER weight).
fn wrr_counts(db: &ConfigDb) -> Vec<(u8, u8, usize)> {
    let qos = Qos::new(db);
    (0..7u8)
        .map(|q| {
            let tc = (0..8).find(|&tc| qos.tc_to_queue(DST, tc) == q).expect("a TC for the queue");
            let dscp = qos.dscp_for_tc(SRC, tc).expect("a DSCP for the TC");
            let sched = qos.scheduler(DST, q).unwrap_or_else(|| panic!("no SCHEDULER on {DST}|{q}"));
            let weight: usize = sched.get("weight").map_or(1, |w| w.parse().expect("weight"));
            (q, dscp, weight * WRR_PACKETS_PER_WEIGHT)
        })
        .collect()
}

fn wrr_check(
    report: &mut Report,
    label: &str,
    counts: &[(u8, u8, usize)],
    run: &(Vec<usize>, Vec<(u8, usize)>),
) {
    let (received, outstanding) = run;
    let total: usize = counts.iter().map(|c| c.2).sum();
    let limit = total * WRR_LIMIT_PERCENT / 100;
    let sent: Vec<usize> = counts.iter().map(|c| c.2).collect();
    let worst = outstanding.iter().map(|o| o.1).max().unwrap_or(0);
    report.number(&format!("{label}: received q0..q6"), format!("{sent:?}"), format!("{received:?}"));
    report.number(
        &format!("{label}: max outstanding at a queue's last packet"),
        format!("< {limit}"),
        format!("{worst} {:?}", outstanding.iter().map(|o| o.1).collect::<Vec<_>>()),
    );
    assert_eq!(received, &sent, "every packet arrived");
    for &(q, left) in outstanding {
        assert!(
            left < limit,
            "{label}: {left} packets were still outstanding when queue {q} finished (limit {limit})"
        );
    }
}

/// WRRtest and WRRtest with weight change: DWRR serves queues in their weights' ratio, so with counts
/// proportional to the weights all queues finish together. Then the SCHEDULER weights change (lossy 8,
/// lossless 30, as testQosSaiDwrrWeightChange) through `Apply`, and the same holds with the new counts.
fn wrr(name: &str) {
    let mut report = Report::new("WRRtest", name);
    let mut ptf = Ptf::start(name, profile(name));
    let dest = ptf.destination(ptf.port_index(DST));
    let counts = wrr_counts(&ptf.db);
    let run = wrr_run(&mut ptf, &dest, &counts);
    wrr_check(&mut report, "profile weights", &counts, &run);

    // Weight change: every lossy scheduler to 8, every lossless one to 30.
    let mut db = ptf.db.clone();
    let qos = Qos::new(&ptf.db);
    let lossless = qos.pfc_enabled(DST);
    let mut changed = Vec::new();
    for q in 0..7u8 {
        let key = queue_field(&ptf.db, DST, q, "scheduler", "SCHEDULER").expect("QUEUE scheduler");
        let weight = if lossless.contains(&q) { "30" } else { "8" };
        if !changed.contains(&key) {
            db.set("SCHEDULER", &key, "weight", weight);
            changed.push(key);
        }
    }
    let applied = ptf.apply(&db);
    assert!(applied.accepted, "new SCHEDULER weights rejected: {:?}", applied.issues);
    let counts = wrr_counts(&ptf.db);
    let run = wrr_run(&mut ptf, &dest, &counts);
    wrr_check(&mut report, "weights 8/30", &counts, &run);
}
on_profiles!(wrr => wrr());

// ------------------------------------------------------------------------------------------- WRED/ECN

/// One colour of a WRED profile, bytes.
#[derive(Debug, Clone, Copy)]
struct Wred {
    min: u64,
    max: u64,
    percent: u64,
    marks: bool,
    drops: bool,
}

impl Wred {
    fn green(db: &ConfigDb, port: &str, queue: u8) -> Wred {
        let qos = Qos::new(db);
        let f = qos.wred(port, queue).expect("the queue has a WRED profile");
        let num = |k: &str, d: u64| f.get(k).map_or(d, |v| v.parse().expect(k));
        let ecn = f.get("ecn").map_or("ecn_none", String::as_str);
        Wred {
            min: num("green_min_threshold", 0),
            max: num("green_max_threshold", 0),
            percent: num("green_drop_probability", 100),
            marks: matches!(ecn, "ecn_green" | "ecn_green_yellow" | "ecn_green_red" | "ecn_all"),
            drops: f.get("wred_green_enable").is_some_and(|v| v == "true"),
        }
    }

    /// Probability that a packet arriving with `queue_bytes` in front of it is acted on (SAI's WRED: 0
    /// below min, rising linearly to `percent` at max, certain from max on; weight 0 = instantaneous).
    fn p(&self, queue_bytes: u64) -> f64 {
        if self.max == 0 || queue_bytes < self.min {
            0.0
        } else if queue_bytes >= self.max {
            1.0
        } else {
            self.percent as f64 / 100.0 * (queue_bytes - self.min) as f64
                / (self.max - self.min).max(1) as f64
        }
    }
}

/// The exact distribution of the number of packets acted on among `n` arriving at a held queue, each
/// occupying `bytes`: marked packets stay queued (`grows`), dropped ones do not. Returns (mean, lo, hi)
/// with P(count < lo) and P(count > hi) each below `tail`.
fn acted_distribution(w: &Wred, n: usize, bytes: u64, grows: bool, tail: f64) -> (f64, usize, usize) {
    // dist[k] = P(k packets acted on so far), non-zero only on lo..=hi (masses below 1e-30 at the edges
    // are dropped: far beyond the tails asked for).
    let mut dist = vec![0.0f64; n + 1];
    dist[0] = 1.0;
    let (mut lo, mut hi) = (0usize, 0usize);
    for i in 0..n {
        let queued = |k: usize| if grows { i } else { i - k } as u64;
        if w.p(queued(lo) * bytes) == 0.0 && w.p(queued(hi) * bytes) == 0.0 {
            continue;
        }
        for k in (lo..=hi).rev() {
            let mass = dist[k];
            let p = w.p(queued(k) * bytes);
            dist[k] = mass * (1.0 - p);
            dist[k + 1] += mass * p;
        }
        hi += 1;
        while hi > lo && dist[hi] < 1e-30 {
            dist[hi] = 0.0;
            hi -= 1;
        }
        while lo < hi && dist[lo] < 1e-30 {
            dist[lo] = 0.0;
            lo += 1;
        }
    }
    let mean = dist.iter().enumerate().map(|(k, p)| k as f64 * p).sum();
    let mut acc = 0.0;
    let low = dist.iter().position(|p| {
        acc += p;
        acc >= tail
    });
    let mut acc = 0.0;
    let high = dist.iter().rposition(|p| {
        acc += p;
        acc >= tail
    });
    (mean, low.unwrap_or(0), high.unwrap_or(n))
}

/// Tail probability of the acceptance interval on each side.
const ECN_TAIL: f64 = 1e-5;

struct EcnRun {
    /// Arrival order is enqueue order (one FIFO queue): frame i had i frames in front of it when nothing
    /// was dropped. Whether each arrived CE-marked.
    marked: Vec<bool>,
    sent: usize,
    received: usize,
    ce: usize,
    ecn_marked_counter: u64,
    wred_dropped_counter: u64,
}

/// One DscpEcnSend run: the destination held, `n` frames of `len` bytes with `ecn` bits on `queue`,
/// released, every frame captured.
fn ecn_run(ptf: &mut Ptf, dest: &Dest, queue: u8, dscp: u8, ecn: u8, len: usize, n: usize) -> EcnRun {
    let src = ptf.port_index(SRC);
    let before = ptf.port_counters(DST).queues[usize::from(queue)];
    let src_before = ptf.port_counters(SRC);
    ptf.hold(DST, None, true);
    let frame = routed_frame(ptf, dest, dscp, ecn, len, 7);
    ptf.send_packets(src, &frame, n);
    let mid = ptf.port_counters(DST).queues[usize::from(queue)];
    let dropped = mid.wred_dropped_packets - before.wred_dropped_packets;
    let src_mid = ptf.port_counters(SRC);
    let qos = Qos::new(&ptf.db);
    let pg = qos.tc_to_pg(SRC, qos.dscp_to_tc(SRC, dscp));
    assert_eq!(src_mid.rx_drp - src_before.rx_drp, 0, "no ingress drop on {SRC}");
    assert_eq!(
        src_mid.pfc[usize::from(pg)].tx - src_before.pfc[usize::from(pg)].tx,
        0,
        "no PFC from {SRC}: the fill stays below its XOFF point"
    );
    ptf.hold(DST, None, false);
    let expect = n - dropped as usize;
    let frames = ptf.receive_n(dest.port, expect, Duration::from_secs(10));
    ptf.verify_no_other_packets();
    let after = ptf.port_counters(DST).queues[usize::from(queue)];
    let marked: Vec<bool> = frames.iter().map(|f| ds_field(f).is_some_and(|(_, e)| e == Ecn::Ce)).collect();
    let ce = marked.iter().filter(|m| **m).count();
    EcnRun {
        marked,
        sent: n,
        received: frames.len(),
        ce,
        ecn_marked_counter: after.ecn_marked_packets - before.ecn_marked_packets,
        wred_dropped_counter: after.wred_dropped_packets - before.wred_dropped_packets,
    }
}

/// DscpEcnSend: on the destination's WRED/ECN queue, held, N frames are sent ECT (then non-ECT), released
/// and captured. Expected counts follow the WRED profile's green thresholds and probability, applied to
/// the queue's buffer occupancy (cells × cell size) in front of each frame at enqueue
/// (BUFFER_ASIC ecn_mark_point, default enqueue): the exact distribution of the count is computed and
/// the observed count must lie within its 1e-5 tails (the model draws from a generator seeded by
/// BUFFER_ASIC|global|random_seed). ECT: no drop, CE count per the distribution and equal to the queue's
/// ECN-marked counter. Non-ECT: no CE mark, WRED drops per the distribution (queue length grows only by
/// admitted frames), equal to the WRED-drop counter. Then ECN is turned off on the profile (ecn_none):
/// ECT frames get no mark and are dropped like non-ECT ones.
///
/// N: past the max threshold by a tenth of the span when the source PG can hold that much before XOFF;
/// else as many frames as sonic-mgmt's PFCtest sends without expecting PFC, `pkts_num_trig_pfc − 1 −
/// margin` of the class's published xoff figure, and the expectation covers the part of the ramp reached.
/// On both shipped profiles a lone lossless PG sends XOFF before the queue reaches green_max (th_balanced:
/// 6542 cells of 208 B against 2 MB, one XPE's share of the pool; sn2700: 17406 cells of 96 B), so the
/// runs cover the ramp from green_min up to that point. The test keeps the shipped profile, ASIC
/// personality included, rather than a one-buffer switch (`DEVICE_METADATA|localhost|asic: generic`, as
/// the dataplane's own WRED test does to reach green_max): the switch under test is the shipped one, and
/// the ramp is the same WRED profile either way.
fn dscp_ecn_send(name: &str) {
    let mut report = Report::new("DscpEcnSend", name);
    let mut ptf = Ptf::start(name, profile(name));
    let dest = ptf.destination(ptf.port_index(DST));
    let db = ptf.db.clone();
    let qos = Qos::new(&db);
    let queue = (0..8u8).find(|&q| qos.wred(DST, q).is_some()).expect("a queue with a WRED profile");
    let tc = (0..8).find(|&tc| qos.tc_to_queue(DST, tc) == queue).expect("a TC for the queue");
    let dscp = qos.dscp_for_tc(SRC, tc).expect("a DSCP for the TC");
    let pg = qos.tc_to_pg(SRC, tc);
    let w = Wred::green(&db, DST, queue);
    assert!(w.marks && w.drops, "the shipped WRED profile marks and drops green");
    let len = 64usize;
    let bytes = qos.cells(len as u64) * qos.cell_size();
    // The class's published PFC trigger (in 1-cell frames) and the frames PFCtest sends short of it.
    let xoff = published::figures(name)
        .names()
        .filter(|b| b.starts_with("xoff_"))
        .map(|b| published::figures(name).get(b))
        .find(|b| b.u8("pg") == pg)
        .unwrap_or_else(|| panic!("{name}: no published xoff figure for PG {pg}"));
    assert!(len as u64 <= published::figures(name).cell_size, "a {len}-byte frame takes one cell");
    let (trig_pfc, margin) = (xoff.n("pkts_num_trig_pfc"), xoff.margin());
    let below_xoff = (trig_pfc - 1 - margin) as usize;
    let at_max = w.max.div_ceil(bytes) as usize;
    let n = (at_max + ((w.max - w.min) / bytes) as usize / 10).min(below_xoff);
    // Dropping runs stop where an undropped queue would reach max: past it every frame is dropped and the
    // count no longer depends on the ramp.
    let n_drop = at_max.min(below_xoff);
    report.number(
        "setup",
        format!(
            "queue {queue} (DSCP {dscp}), {len} B = {bytes} B of buffer, green min {} max {} {}%, seed {}",
            w.min,
            w.max,
            w.percent,
            db.tables
                .get("BUFFER_ASIC")
                .and_then(|t| t.get("global"))
                .and_then(|g| g.get("random_seed"))
                .map_or("1 (default)", String::as_str)
        ),
        format!("N = {n} ECT, {n_drop} dropping (PFC published at {trig_pfc} ± {margin})"),
    );
    report.published(
        "frames sent with no PFC expected (pkts_num_trig_pfc − 1 − margin); frame reaching green_min / max",
        below_xoff,
        format!(
            "{below_xoff}; {} / {}",
            w.min.div_ceil(bytes),
            if at_max <= below_xoff { at_max.to_string() } else { format!("not reached ({at_max})") }
        ),
        &xoff.cite("pkts_num_trig_pfc"),
    );

    // ECT: marks, no drops. Frames with less than min in front: never marked; max or more: always; the
    // ramp between: the distribution.
    let (mean, lo, hi) = acted_distribution(&w, n, bytes, true, ECN_TAIL);
    let r = ecn_run(&mut ptf, &dest, queue, dscp, 1, len, n);
    assert_eq!(
        (r.received, r.wred_dropped_counter),
        (r.sent, 0),
        "ECT frames are marked, never WRED-dropped"
    );
    let ahead = |i: usize| i as u64 * bytes;
    let count =
        |f: &dyn Fn(u64) -> bool| r.marked.iter().enumerate().filter(|(i, m)| **m && f(ahead(*i))).count();
    let above = (0..n).filter(|&i| ahead(i) >= w.max).count();
    let (below_marks, ramp_marks, above_marks) =
        (count(&|q| q < w.min), count(&|q| (w.min..w.max).contains(&q)), count(&|q| q >= w.max));
    report.number("ECT: received", n, r.received);
    report.number("ECT: CE-marked in all", format!("{mean:.1} [{lo}, {hi}]"), r.ce);
    report.number("ECT: CE-marked below min", 0, below_marks);
    report.number(
        "ECT: CE-marked on the ramp",
        format!("{:.1} [{}, {}]", mean - above as f64, lo - above, hi - above),
        ramp_marks,
    );
    report.number("ECT: CE-marked at/above max", above, above_marks);
    report.number("ECT: ECN-marked counter", r.ce, r.ecn_marked_counter);
    assert_eq!(below_marks, 0, "no mark below green_min_threshold");
    assert_eq!(above_marks, above, "every frame with max or more in front is marked");
    assert!((lo..=hi).contains(&r.ce), "{} CE marks, expected {mean:.1} in [{lo}, {hi}]", r.ce);
    assert_eq!(
        r.ecn_marked_counter, r.ce as u64,
        "the queue's ECN-marked counter counts the CE frames captured"
    );

    // Non-ECT: drops, no marks.
    let (mean, lo, hi) = acted_distribution(&w, n_drop, bytes, false, ECN_TAIL);
    let r = ecn_run(&mut ptf, &dest, queue, dscp, 0, len, n_drop);
    let dropped = r.sent - r.received;
    report.number("non-ECT: CE-marked", 0, r.ce);
    report.number("non-ECT: WRED-dropped", format!("{mean:.1} [{lo}, {hi}]"), dropped);
    assert_eq!(r.ce, 0, "non-ECT frames are never marked");
    assert_eq!(r.wred_dropped_counter, dropped as u64, "the WRED-drop counter counts the missing frames");
    assert!((lo..=hi).contains(&dropped), "{dropped} WRED drops, expected {mean:.1} in [{lo}, {hi}]");

    // ECN off on the queue's WRED profile: ECT frames are dropped like non-ECT ones, never marked.
    let wred_name = queue_field(&db, DST, queue, "wred_profile", "WRED_PROFILE").expect("QUEUE wred_profile");
    let mut off = db.clone();
    off.set("WRED_PROFILE", &wred_name, "ecn", "ecn_none");
    let applied = ptf.apply(&off);
    assert!(applied.accepted, "ecn_none rejected: {:?}", applied.issues);
    let w_off = Wred::green(&ptf.db, DST, queue);
    let (mean, lo, hi) = acted_distribution(&w_off, n_drop, bytes, false, ECN_TAIL);
    let r = ecn_run(&mut ptf, &dest, queue, dscp, 1, len, n_drop);
    let dropped = r.sent - r.received;
    report.number("ECT, ecn_none: CE-marked", 0, r.ce);
    report.number("ECT, ecn_none: WRED-dropped", format!("{mean:.1} [{lo}, {hi}]"), dropped);
    assert_eq!((r.ce, r.ecn_marked_counter), (0, 0), "no marks with ECN off on the queue");
    assert!((lo..=hi).contains(&dropped), "{dropped} WRED drops, expected {mean:.1} in [{lo}, {hi}]");
}
on_profiles!(dscp_ecn_send => dscp_ecn_send());
