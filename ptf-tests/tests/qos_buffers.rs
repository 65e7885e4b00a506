//! sonic-mgmt's buffer tests (`tests/saitests/py3/sai_qos_tests.py`, procedures as in
//! `../shared/reference/sonic.md` §5.0–5.1): hold the destination's egress (sai_thrift_port_tx_disable; the
//! model leaks nothing out), fill with 64-byte frames, read counters and watermarks, release.
//!
//! Every expected number comes from the profile's tables through [`lossless_ptf::qos`]. Counts use
//! sonic-mgmt's margin of 2 frames around each trigger point (send `trigger − 1 − margin`: nothing; then
//! `1 + 2·margin` more: it happened); inside that window the frames go one at a time, so the report also
//! shows the exact frame that triggered. Drop counters are exact as soon as switchd has counted a burst's
//! frames (admission happens on receipt); PFC frames leave in the model loop's transmit phase, so exact
//! PFC readings use [`settled`], and "no PFC" is an explicit negative wait ([`Ptf::negative_timeout`]).

use lossless_dataplane::wire::EthernetAddress;
use lossless_proto::v1 as pb;
use lossless_ptf::packet::{Udp, pfc_of, simple_udp_packet};
use lossless_ptf::qos::{Params, Qos};
use lossless_ptf::report::Report;
use lossless_ptf::{Ptf, profile};
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

/// sonic-mgmt's margin, in frames (or cells for watermarks, where each test names its own).
const MARGIN: u64 = 2;
/// The test frames' length, as sonic-mgmt's `packet_length` default.
const PKTLEN: usize = 64;

macro_rules! on_profiles {
    ($name:ident => $f:ident($($arg:expr),*)) => {
        mod $name {
            #[test]
            fn th_balanced() {
                super::$f("th_balanced" $(, $arg)*);
            }
            #[test]
            fn sn2700() {
                super::$f("sn2700" $(, $arg)*);
            }
        }
    };
}

// ------------------------------------------------------------------------------------------- helpers

/// One stream of test frames: from a source port, routed to a destination, in one class.
struct Flow {
    src: usize,
    src_name: String,
    dst_name: String,
    tc: u8,
    pg: u8,
    queue: u8,
    frame: Vec<u8>,
    /// The routed copy's length (a tagged destination adds 4 bytes): what the MMU charges on both sides.
    egress_len: usize,
}

impl Flow {
    fn new(ptf: &mut Ptf, src_name: &str, dst_name: &str, dscp: u8) -> Flow {
        let (src, dst) = (ptf.port_index(src_name), ptf.port_index(dst_name));
        let dest = ptf.destination(dst);
        let qos = Qos::new(&ptf.db);
        let tc = qos.dscp_to_tc(src_name, dscp);
        let (pg, queue) = (qos.tc_to_pg(src_name, tc), qos.tc_to_queue(dst_name, tc));
        let frame = simple_udp_packet(&Udp {
            pktlen: PKTLEN,
            eth_dst: ptf.router_mac(),
            eth_src: EthernetAddress([0x02, 0xcc, 0, 0, 0, src as u8]),
            ip_src: Ipv4Addr::new(10, 1, 0, src as u8),
            ip_dst: dest.ip,
            ip_dscp: dscp,
            // ECT(1), as sonic-mgmt sends: the lossless queues' WRED profile marks instead of dropping.
            ip_ecn: 1,
            ..Udp::default()
        });
        let egress_len = frame.len() + if dest.vlan.is_some() { 4 } else { 0 };
        Flow {
            src,
            src_name: src_name.to_owned(),
            dst_name: dst_name.to_owned(),
            tc,
            pg,
            queue,
            frame,
            egress_len,
        }
    }

    /// sonic-mgmt's `qos_params` for this flow. The expectations below count frames and cells alike: a
    /// 64-byte frame is one cell on both profiles (208 and 96 bytes); a profile where it is not fails here
    /// rather than miscounting.
    fn params(&self, qos: &Qos<'_>) -> Params {
        let p = Params::compute(qos, &self.src_name, self.pg, &self.dst_name, self.queue, self.egress_len);
        assert_eq!(p.cell_occupancy, 1, "a {}-byte frame takes {} cells", self.egress_len, p.cell_occupancy);
        p
    }

    /// Frames admitted before the first drop: at the ingress limit for a lossless PG (its queue never
    /// tail-drops), at the lower of the two limits for a lossy class.
    fn admitted(&self, qos: &Qos<'_>, p: &Params) -> u64 {
        if qos.pfc_enabled(&self.src_name).contains(&self.tc) {
            assert!(
                p.pkts_num_trig_egr_drp > p.pkts_num_trig_ingr_drp,
                "the lossless queue's limit binds first"
            );
            p.pkts_num_trig_ingr_drp - 1
        } else {
            p.pkts_num_trig_ingr_drp.min(p.pkts_num_trig_egr_drp) - 1
        }
    }

    /// The PFC priority of a lossless flow: its TC, which must be in the source's `pfc_enable`; the
    /// shipped profiles' PFC priority → PG maps are the identity, so it must also be the flow's PG.
    fn prio(&self, qos: &Qos<'_>) -> u8 {
        assert!(
            qos.pfc_enabled(&self.src_name).contains(&self.tc),
            "TC {} is not lossless on {}",
            self.tc,
            self.src_name
        );
        assert_eq!(self.tc, self.pg, "TC {} maps to PG {} on {}", self.tc, self.pg, self.src_name);
        self.tc
    }

    fn send(&self, ptf: &mut Ptf, n: u64) {
        ptf.send_packets(self.src, &self.frame, usize::try_from(n).expect("a frame count"));
    }
}

fn port<'a>(c: &'a pb::GetCountersResponse, name: &str) -> &'a pb::PortCounters {
    c.ports.iter().find(|p| p.name == name).unwrap_or_else(|| panic!("switchd has no port {name}"))
}

/// The counters a buffer test watches for one flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Obs {
    /// PFC frames the source port sent, per priority.
    pfc_tx: [u64; 8],
    /// Ingress drops on the source port (RX_DRP) and on the flow's PG.
    rx_drp: u64,
    pg_drop: u64,
    /// Egress drops on the destination port (TX_DRP) and on the flow's queue.
    tx_drp: u64,
    queue_drop: u64,
    /// Frames waiting in the flow's queue.
    depth: u64,
}

impl Obs {
    fn of(c: &pb::GetCountersResponse, f: &Flow) -> Obs {
        let (s, d) = (port(c, &f.src_name), port(c, &f.dst_name));
        Obs {
            pfc_tx: std::array::from_fn(|p| s.pfc.get(p).map_or(0, |x| x.tx)),
            rx_drp: s.rx_drp,
            pg_drop: s.pgs[usize::from(f.pg)].dropped_packets,
            tx_drp: d.tx_drp,
            queue_drop: d.queues[usize::from(f.queue)].dropped_packets,
            depth: d.queue_depth.get(usize::from(f.queue)).copied().unwrap_or(0),
        }
    }

    fn pfc(&self, prio: u8) -> u64 {
        self.pfc_tx[usize::from(prio)]
    }

    fn pfc_all(&self) -> u64 {
        self.pfc_tx.iter().sum()
    }
}

/// switchd's counters taken at least two model-loop iterations after this call began. Each GetCounters
/// runs between two iterations and is stamped with its iteration's time; an iteration ends with the
/// transmit phase, where PFC frames leave. Two stamps later than the first reading, every PFC frame due
/// because of frames received before the call has been sent and counted (including one a drain on a
/// later-numbered port made due). A barrier on the model loop, not a timed wait.
fn settled(ptf: &mut Ptf) -> pb::GetCountersResponse {
    let mut stamp = ptf.counters().timestamp_ns;
    let deadline = Instant::now() + ptf.timeout;
    let mut advanced = 0;
    loop {
        let c = ptf.counters();
        if c.timestamp_ns > stamp {
            advanced += 1;
            if advanced == 2 {
                return c;
            }
            stamp = c.timestamp_ns;
        }
        assert!(Instant::now() < deadline, "switchd's counter stamps did not advance");
    }
}

fn observe(ptf: &mut Ptf, f: &Flow) -> Obs {
    Obs::of(&settled(ptf), f)
}

/// Sends `count` frames of `f` one at a time, reading the counters (settled) after each; returns the
/// 1-based index of the first frame after which `happened` held, if any. All `count` frames are sent.
fn step(ptf: &mut Ptf, f: &Flow, count: u64, mut happened: impl FnMut(&Obs) -> bool) -> Option<u64> {
    let mut first = None;
    for k in 1..=count {
        f.send(ptf, 1);
        if first.is_none() && happened(&observe(ptf, f)) {
            first = Some(k);
        }
    }
    first
}

/// PFC frames (class-enable vector, quanta) that arrived on test port `port` during a watch of
/// [`Ptf::negative_timeout`] (and whatever was queued before).
fn watch_pfc(ptf: &mut Ptf, port: usize) -> Vec<(u8, [u16; 8])> {
    let wait = ptf.negative_timeout;
    ptf.receive_all(port, wait, wait).iter().filter_map(|f| pfc_of(f)).collect()
}

/// Waits for a PFC frame on test port `port` for priority `prio`: an XOFF (quanta > 0) or, with `xon`,
/// an XON (quanta 0). Other frames are skipped. Returns it.
fn await_pfc(ptf: &mut Ptf, port: usize, prio: u8, xon: bool) -> (u8, [u16; 8]) {
    let deadline = Instant::now() + ptf.timeout;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(
            !left.is_zero(),
            "no PFC {} for priority {prio} arrived on test port {port}",
            if xon { "XON" } else { "XOFF" }
        );
        for f in ptf.receive_all(port, Duration::from_millis(1), left.min(Duration::from_millis(20))) {
            if let Some((ce, time)) = pfc_of(&f)
                && ce & (1 << prio) != 0
                && (time[usize::from(prio)] == 0) == xon
            {
                return (ce, time);
            }
        }
    }
}

/// How a PFC frame reads in a report: its class-enable vector, XOFF or XON.
fn pfc_kind(class_enable: u8, xoff: bool) -> String {
    format!("class-enable {class_enable:#04x} {}", if xoff { "XOFF" } else { "XON" })
}

/// Releases the held ports and waits until the flows' queues are empty. What arrived on the test ports
/// stays queued (an XON frame among it).
fn release(ptf: &mut Ptf, ports: &[&str], flows: &[&Flow]) {
    for p in ports {
        ptf.hold(p, None, false);
    }
    ptf.wait_until("the held queues to drain", |c| flows.iter().all(|f| Obs::of(c, f).depth == 0));
}

// ------------------------------------------------------------------------------------------- PFCtest

/// PFCtest (xoff limit): from Ethernet0 to a held Ethernet4 in a lossless class. `trig_pfc − 1 − margin`
/// frames send no PFC and drop nothing; `1 + 2·margin` more make the source send PFC (an XOFF frame with
/// the class's bit arrives on the source test port), still without drops; up to `trig_ingr_drp − 1 −
/// margin` nothing drops; `1 + 2·margin` more drop at ingress (RX_DRP and the PG's drop counter), never at
/// egress.
fn pfc_test(name: &str, dscp: u8, label: &str) {
    let mut report = Report::new(&format!("PFCtest[{label}]"), name);
    let mut ptf = Ptf::start(name, profile(name));
    let f = Flow::new(&mut ptf, "Ethernet0", "Ethernet4", dscp);
    let qos = Qos::new(&ptf.db);
    let prio = f.prio(&qos);
    let p = f.params(&qos);
    assert!(
        p.pg_headroom > 2 * MARGIN,
        "{name}: headroom {} cells leaves no room for the margins",
        p.pg_headroom
    );
    ptf.hold(&f.dst_name, None, true);
    let base = observe(&mut ptf, &f);
    let no_drops = |o: &Obs| o.rx_drp == base.rx_drp && o.pg_drop == base.pg_drop && o.tx_drp == base.tx_drp;

    // Short of the XOFF point: no PFC (watched), no drop.
    let mut sent = p.pkts_num_trig_pfc - 1 - MARGIN;
    f.send(&mut ptf, sent);
    let seen = watch_pfc(&mut ptf, f.src);
    let o = observe(&mut ptf, &f);
    assert!(
        seen.is_empty(),
        "{name}: PFC frames {seen:?} arrived after {sent} frames (trigger at {})",
        p.pkts_num_trig_pfc
    );
    assert_eq!(o.pfc(prio), base.pfc(prio), "{name}: PFC TX on priority {prio} after {sent} frames");
    assert!(no_drops(&o), "{name}: drops after {sent} frames: {o:?} (base {base:?})");

    // Through the margin window: PFC.
    let first = step(&mut ptf, &f, 1 + 2 * MARGIN, |o| o.pfc(prio) > base.pfc(prio)).map(|k| sent + k);
    sent += 1 + 2 * MARGIN;
    report.number(
        "frames to trigger PFC",
        p.pkts_num_trig_pfc,
        first.map_or("none".into(), |n| n.to_string()),
    );
    let first = first.unwrap_or_else(|| panic!("{name}: no PFC after {sent} frames"));
    assert!(
        first.abs_diff(p.pkts_num_trig_pfc) <= MARGIN,
        "{name}: PFC at frame {first}, expected {}",
        p.pkts_num_trig_pfc
    );
    let (ce, time) = await_pfc(&mut ptf, f.src, prio, false);
    report.number(
        "PFC frame on the source",
        pfc_kind(1 << prio, true),
        pfc_kind(ce, time[usize::from(prio)] > 0),
    );
    assert_eq!(ce, 1 << prio, "{name}: the XOFF frame's class-enable vector");
    let o = observe(&mut ptf, &f);
    assert!(no_drops(&o), "{name}: drops at the XOFF point: {o:?} (base {base:?})");

    // Into headroom, short of the drop point: no drop.
    let fill = p.pkts_num_trig_ingr_drp - 1 - MARGIN;
    f.send(&mut ptf, fill - sent);
    sent = fill;
    let o = observe(&mut ptf, &f);
    assert!(
        no_drops(&o),
        "{name}: drops after {sent} frames (first drop expected at {}): {o:?}",
        p.pkts_num_trig_ingr_drp
    );
    assert!(o.pfc(prio) > base.pfc(prio));

    // Through the margin window: ingress drops only.
    let first = step(&mut ptf, &f, 1 + 2 * MARGIN, |o| o.rx_drp > base.rx_drp).map(|k| sent + k);
    sent += 1 + 2 * MARGIN;
    let o = observe(&mut ptf, &f);
    let expected_drops = sent - (p.pkts_num_trig_ingr_drp - 1);
    report.number(
        "frames to trigger ingress drop",
        p.pkts_num_trig_ingr_drp,
        first.map_or("none".into(), |n| n.to_string()),
    );
    report.number(
        "ingress drops (RX_DRP, PG), egress drops",
        format!("{expected_drops}, {expected_drops}, 0"),
        format!("{}, {}, {}", o.rx_drp - base.rx_drp, o.pg_drop - base.pg_drop, o.tx_drp - base.tx_drp),
    );
    let first = first.unwrap_or_else(|| panic!("{name}: no ingress drop after {sent} frames"));
    assert!(
        first.abs_diff(p.pkts_num_trig_ingr_drp) <= MARGIN,
        "{name}: first drop at frame {first}, expected {}",
        p.pkts_num_trig_ingr_drp
    );
    assert!(o.pg_drop > base.pg_drop, "{name}: the PG drop counter did not grow");
    assert_eq!((o.tx_drp, o.queue_drop), (base.tx_drp, base.queue_drop), "{name}: egress drops");
    assert_eq!(o.rx_drp - base.rx_drp, expected_drops, "{name}: ingress drops");
    assert_eq!(o.pg_drop - base.pg_drop, expected_drops, "{name}: PG drops");
    release(&mut ptf, &[&f.dst_name], &[&f]);
}
on_profiles!(pfc_xoff_1 => pfc_test(3, "xoff_1"));
on_profiles!(pfc_xoff_2 => pfc_test(4, "xoff_2"));

// ------------------------------------------------------------------------------------ LossyQueueTest

/// LossyQueueTest: DSCP 8 (a lossy class: queue 0, PG 0) from Ethernet0 to a held Ethernet4. The lossy PG
/// has no headroom and sends no PFC; the first drop is where the queue's limit (egress drop) or the PG's
/// limit (ingress drop) binds, whichever comes first. When both limits fall on the same frame the ingress
/// PG refuses it: the MMU admits a frame at ingress before it looks at the egress queue
/// (`dataplane/src/model/mmu.rs`, `Mmu::admit`), as a switch charges the ingress PG on arrival.
fn lossy_queue_test(name: &str) {
    let mut report = Report::new("LossyQueueTest", name);
    let mut ptf = Ptf::start(name, profile(name));
    let f = Flow::new(&mut ptf, "Ethernet0", "Ethernet4", 8);
    let qos = Qos::new(&ptf.db);
    assert!(!qos.pfc_enabled(&f.src_name).contains(&f.tc), "{name}: DSCP 8's TC {} is lossless", f.tc);
    let p = f.params(&qos);
    let (ingr, egr) = (p.pkts_num_trig_ingr_drp, p.pkts_num_trig_egr_drp);
    let trig = ingr.min(egr);
    let why = match ingr.cmp(&egr) {
        std::cmp::Ordering::Less => "the PG's limit binds first",
        std::cmp::Ordering::Equal => "the PG's and the queue's limits tie: the PG refuses first",
        std::cmp::Ordering::Greater => "the queue's limit binds first",
    };
    let egress_side = egr < ingr;
    report.number(
        "drop points: queue (egress) / PG (ingress)",
        format!("{egr} / {ingr}"),
        format!("{egr} / {ingr}"),
    );
    ptf.hold(&f.dst_name, None, true);
    let base = observe(&mut ptf, &f);

    let mut sent = trig - 1 - MARGIN;
    f.send(&mut ptf, sent);
    let seen = watch_pfc(&mut ptf, f.src);
    let o = observe(&mut ptf, &f);
    assert!(seen.is_empty(), "{name}: PFC frames {seen:?} for a lossy class");
    assert_eq!(o.pfc_all(), base.pfc_all(), "{name}: PFC TX for a lossy class");
    assert_eq!(
        (o.rx_drp, o.tx_drp),
        (base.rx_drp, base.tx_drp),
        "{name}: drops after {sent} frames (first drop expected at {trig})"
    );

    let first = step(&mut ptf, &f, 1 + 2 * MARGIN, |o| o.rx_drp > base.rx_drp || o.tx_drp > base.tx_drp)
        .map(|k| sent + k);
    sent += 1 + 2 * MARGIN;
    let o = observe(&mut ptf, &f);
    let seen = watch_pfc(&mut ptf, f.src);
    let drops = sent - (trig - 1);
    let (exp_in, exp_out) = if egress_side { (0, drops) } else { (drops, 0) };
    report.number("frames to the first drop", trig, first.map_or("none".into(), |n| n.to_string()));
    report.number(
        &format!("drop side ({why})"),
        if egress_side { "egress" } else { "ingress" },
        if o.tx_drp > base.tx_drp {
            "egress"
        } else if o.rx_drp > base.rx_drp {
            "ingress"
        } else {
            "none"
        },
    );
    report.number(
        "ingress drops (RX_DRP, PG), egress drops (TX_DRP, queue), PFC",
        format!("{exp_in}, {exp_in}, {exp_out}, {exp_out}, 0"),
        format!(
            "{}, {}, {}, {}, {}",
            o.rx_drp - base.rx_drp,
            o.pg_drop - base.pg_drop,
            o.tx_drp - base.tx_drp,
            o.queue_drop - base.queue_drop,
            o.pfc_all() - base.pfc_all() + seen.len() as u64
        ),
    );
    let first = first.unwrap_or_else(|| panic!("{name}: no drop after {sent} frames"));
    assert!(first.abs_diff(trig) <= MARGIN, "{name}: first drop at frame {first}, expected {trig}");
    assert_eq!((o.rx_drp - base.rx_drp, o.pg_drop - base.pg_drop), (exp_in, exp_in), "{name}: ingress drops");
    assert_eq!(
        (o.tx_drp - base.tx_drp, o.queue_drop - base.queue_drop),
        (exp_out, exp_out),
        "{name}: egress drops"
    );
    assert!(seen.is_empty() && o.pfc_all() == base.pfc_all(), "{name}: PFC for a lossy class");
    release(&mut ptf, &[&f.dst_name], &[&f]);
}
on_profiles!(lossy_queue => lossy_queue_test());

// --------------------------------------------------------------------------------------- PFCXonTest

/// PFCXonTest: one lossless PG of Ethernet0 fills through three held destinations (Ethernet4, Ethernet8,
/// Ethernet12), then they are released one at a time. With `X` the PG's XON point (`Qos::pg_xon_usage`:
/// usage ≤ max(xon, size + limit − xon_offset), no headroom in use) the first destination holds `X −
/// margin` frames, the second `1 + 2·margin` (the PG `margin + 1` above `X`), the third the rest of a fill
/// past the XOFF point. Releasing the third leaves the PG above `X`: XOFF is refreshed (PFC TX keeps
/// growing, no XON). Releasing the second brings it below: an XON frame (quanta 0) arrives on the source
/// and PFC TX stops. Releasing the first drains it all. Nothing drops.
fn pfc_xon_test(name: &str, dscp: u8, label: &str) {
    let mut report = Report::new(&format!("PFCXonTest[{label}]"), name);
    let mut ptf = Ptf::start(name, profile(name));
    let dsts = ["Ethernet4", "Ethernet8", "Ethernet12"];
    let flows: Vec<Flow> = dsts.iter().map(|d| Flow::new(&mut ptf, "Ethernet0", d, dscp)).collect();
    let qos = Qos::new(&ptf.db);
    let prio = flows[0].prio(&qos);
    let p = flows[0].params(&qos);
    let (trig, xon) = (p.pkts_num_trig_pfc, qos.pg_xon_usage(&flows[0].src_name, flows[0].pg));
    let first = xon - MARGIN;
    let second = 1 + 2 * MARGIN;
    let total = (trig + MARGIN).max(first + second + 1 + 2 * MARGIN);
    let third = total - first - second;
    assert!(total + MARGIN < p.pkts_num_trig_ingr_drp, "{name}: the fill {total} would reach the drop point");
    report.number("XOFF / XON points (PG frames)", format!("{trig} / {xon}"), format!("{trig} / {xon}"));
    report.number(
        "frames held on the three destinations",
        format!("{first}, {second}, {third}"),
        format!("{first}, {second}, {third}"),
    );
    for d in dsts {
        ptf.hold(d, None, true);
    }
    let bases: Vec<Obs> = {
        let c = settled(&mut ptf);
        flows.iter().map(|f| Obs::of(&c, f)).collect()
    };
    let base = bases[0];
    let no_drops = |ptf: &mut Ptf| {
        let c = settled(ptf);
        flows.iter().zip(&bases).all(|(f, b)| {
            let o = Obs::of(&c, f);
            (o.rx_drp, o.tx_drp) == (b.rx_drp, b.tx_drp)
        })
    };
    for (f, n) in flows.iter().zip([first, second, third]) {
        f.send(&mut ptf, n);
    }
    await_pfc(&mut ptf, flows[0].src, prio, false);
    let o = observe(&mut ptf, &flows[0]);
    assert!(o.pfc(prio) > base.pfc(prio), "{name}: no PFC after {total} frames (XOFF at {trig})");
    assert!(no_drops(&mut ptf), "{name}: drops after the fill");

    // Release the third: the PG stays above the XON point (or in headroom): XOFF refreshed, no XON.
    release(&mut ptf, &[dsts[2]], &[&flows[2]]);
    let before = observe(&mut ptf, &flows[0]).pfc(prio);
    let seen = watch_pfc(&mut ptf, flows[0].src);
    let after = observe(&mut ptf, &flows[0]).pfc(prio);
    let xons = seen.iter().filter(|(ce, t)| ce & (1 << prio) != 0 && t[usize::from(prio)] == 0).count();
    report.number(
        &format!("after releasing {third}: PFC refreshed, XON frames"),
        "yes, 0",
        format!("{}, {xons}", if after > before { "yes" } else { "no" }),
    );
    assert!(after > before, "{name}: PFC TX stopped at {} frames (XON point {xon})", first + second);
    assert_eq!(xons, 0, "{name}: XON at {} frames (XON point {xon})", first + second);

    // Release the second: below the XON point. The source's receive ring starts empty, so the XON
    // cannot be lost behind a backlog of XOFF refreshes however slow the release is.
    ptf.flush();
    release(&mut ptf, &[dsts[1]], &[&flows[1]]);
    let (ce, _) = await_pfc(&mut ptf, flows[0].src, prio, true);
    let before = observe(&mut ptf, &flows[0]).pfc(prio);
    let seen = watch_pfc(&mut ptf, flows[0].src);
    let after = observe(&mut ptf, &flows[0]).pfc(prio);
    let more = seen.iter().filter(|(ce, _)| ce & (1 << prio) != 0).count();
    report.number(
        &format!("after releasing {second} more: XON frame, PFC frames after it"),
        format!("{}, 0", pfc_kind(1 << prio, false)),
        format!("{}, {}", pfc_kind(ce, false), more as u64 + after - before),
    );
    assert_eq!(ce, 1 << prio, "{name}: the XON frame's class-enable vector");
    assert_eq!((more, after), (0, before), "{name}: PFC after XON at {first} frames");

    release(&mut ptf, &[dsts[0]], &[&flows[0]]);
    let seen = watch_pfc(&mut ptf, flows[0].src);
    assert!(seen.is_empty(), "{name}: PFC frames {seen:?} while draining below XON");
    assert!(no_drops(&mut ptf), "{name}: drops during the test");
}
on_profiles!(pfc_xon_1 => pfc_xon_test(3, "xon_1"));
on_profiles!(pfc_xon_2 => pfc_xon_test(4, "xon_2"));

// --------------------------------------------------------------------------------- HdrmPoolSizeTest

/// One lossless PG of the headroom test and what the profile says it takes.
struct HdrmPg {
    flow: Flow,
    prio: u8,
    /// Frames to its XOFF (reserved + its share of what the PGs before it left in the pool).
    trig: u64,
    /// Headroom cells in use at XOFF (0, or 1 when XOFF comes with the first headroom frame).
    hdrm_at_xoff: u64,
    /// Its headroom cap (the profile's `xoff`).
    cap: u64,
    /// Headroom cells it gets in the headroom phase.
    room: u64,
}

/// HdrmPoolSizeTest: every lossless PG of Ethernet0, Ethernet4, Ethernet8 and Ethernet12 (8 PGs) sends to
/// one held destination (Ethernet16). Each PG in turn fills to its XOFF point (the dynamic limits shrink as
/// the PGs before it take the shared pool: `Qos::pg_shared_limit_after`) and must send PFC; then each fills
/// its headroom: the profile's `xoff` per PG, and with a shared headroom pool (the ingress pool's `xoff`)
/// at most what is left of it. The last PG gets its headroom less the margin without drops, then `1 +
/// 2·margin` more frames drop exactly where the headroom (pool or private) runs out. The PG headroom and
/// headroom-pool watermarks must show the expected cells.
///
/// `scale_pool`: th_balanced's headroom pool (20164 cells) is larger than the sum of the per-PG caps this
/// 5-port topology can use (sonic-mgmt runs this test with enough ports to exhaust it), so the shipped
/// profile shows only the per-PG caps binding; with `scale_pool` the pool's `xoff` is cut to the caps of
/// the first 7 PGs plus half the last's, so the pool is what stops the last PG (sonic-mgmt's
/// `pkts_num_hdrm_partial`).
fn hdrm_pool_size(name: &str, scale_pool: bool) {
    let mut report =
        Report::new(if scale_pool { "HdrmPoolSizeTest[pool scaled]" } else { "HdrmPoolSizeTest" }, name);
    let mut db = profile(name);
    let srcs = ["Ethernet0", "Ethernet4", "Ethernet8", "Ethernet12"];
    let dst = "Ethernet16";
    // The classes, from the profile: each source's lossless priorities and a DSCP for each.
    let classes: Vec<(&str, u8)> = {
        let qos = Qos::new(&db);
        srcs.iter()
            .flat_map(|&s| {
                qos.pfc_enabled(s)
                    .into_iter()
                    .map(move |tc| (s, qos.dscp_for_tc(s, tc).expect("a DSCP for the lossless TC")))
            })
            .collect()
    };
    let pool_name = {
        let qos = Qos::new(&db);
        let pools: Vec<String> = classes
            .iter()
            .map(|&(s, dscp)| {
                qos.pg_profile(s, qos.tc_to_pg(s, qos.dscp_to_tc(s, dscp)))
                    .expect("a lossless BUFFER_PG")
                    .pool
            })
            .collect();
        assert!(
            pools.iter().all(|p| *p == pools[0]),
            "{name}: the lossless PGs use several pools: {pools:?}"
        );
        pools[0].clone()
    };
    let profile_hdrm = Qos::new(&db).pool(&pool_name).headroom;
    if scale_pool {
        let qos = Qos::new(&db);
        assert!(profile_hdrm > 0, "{name}: no shared headroom pool to scale");
        let caps: Vec<u64> = classes
            .iter()
            .map(|&(s, dscp)| qos.pg_profile(s, qos.tc_to_pg(s, qos.dscp_to_tc(s, dscp))).unwrap().xoff)
            .collect();
        let cells = caps[..caps.len() - 1].iter().sum::<u64>() + caps[caps.len() - 1] / 2;
        let bytes = cells * qos.cell_size();
        db.set("BUFFER_POOL", &pool_name, "xoff", bytes.to_string());
        report.number(
            "headroom pool (cells): profile, scaled to",
            format!("{profile_hdrm}, {cells}"),
            format!("{profile_hdrm}, {cells}"),
        );
    }
    let mut ptf = Ptf::start(name, db);
    let flows: Vec<Flow> = classes.iter().map(|&(s, dscp)| Flow::new(&mut ptf, s, dst, dscp)).collect();
    let config = ptf.db.clone();
    let qos = Qos::new(&config);
    let pool = qos.pool(&pool_name);
    // The expectations, PG after PG.
    let mut pgs: Vec<HdrmPg> = Vec::new();
    let mut pool_used = 0u64;
    let mut port_used: std::collections::BTreeMap<String, u64> = Default::default();
    for flow in flows {
        flow.params(&qos);
        let prof = qos.pg_profile(&flow.src_name, flow.pg).unwrap();
        let mine = port_used.entry(flow.src_name.clone()).or_default();
        let shared = qos.pg_shared_limit_after(&flow.src_name, flow.pg, pool_used, *mine);
        // XOFF with the last shared cell when it reaches the PG's own limit, else with the first headroom one.
        let at_limit = shared >= Qos::limit(prof.threshold, pool, pool_used + shared);
        pool_used += shared;
        *mine += shared;
        let prio = flow.prio(&qos);
        pgs.push(HdrmPg {
            flow,
            prio,
            trig: prof.reserved + shared + u64::from(!at_limit),
            hdrm_at_xoff: u64::from(!at_limit),
            cap: prof.xoff,
            room: 0,
        });
    }
    // After the shared phase no PG fits another cell in shared (the procedure relies on it).
    for g in &pgs {
        let prof = qos.pg_profile(&g.flow.src_name, g.flow.pg).unwrap();
        let shared = g.trig - g.hdrm_at_xoff - prof.reserved;
        assert!(
            shared + 1 > Qos::limit(prof.threshold, pool, pool_used) || pool_used >= pool.size,
            "{name}: PG {} of {} would still take shared cells",
            g.flow.pg,
            g.flow.src_name
        );
    }
    let mut pool_left = if pool.headroom > 0 { pool.headroom } else { u64::MAX };
    for g in &mut pgs {
        pool_left -= g.hdrm_at_xoff.min(pool_left);
        g.room = (g.cap - g.hdrm_at_xoff).min(pool_left);
        if pool.headroom > 0 {
            pool_left -= g.room;
        }
    }
    let last = pgs.len() - 1;
    let sum_caps: u64 = pgs.iter().map(|g| g.cap).sum();
    let pool_binds = pool.headroom > 0 && pool.headroom < sum_caps;
    report.number(
        "headroom: pool cells, sum of per-PG caps, binding",
        format!("{}, {sum_caps}, {}", pool.headroom, if pool_binds { "pool" } else { "per-PG xoff" }),
        format!("{}, {sum_caps}, {}", pool.headroom, if pool_binds { "pool" } else { "per-PG xoff" }),
    );
    if pool.headroom == 0 {
        report.number(
            "shared headroom pool",
            "none: private headroom per PG (xoff)",
            "none: private headroom per PG (xoff)",
        );
    }

    ptf.hold(dst, None, true);
    ptf.watermarks(false, true);
    let c = settled(&mut ptf);
    let bases: Vec<Obs> = pgs.iter().map(|g| Obs::of(&c, &g.flow)).collect();
    let drops = |ptf: &mut Ptf| -> Vec<u64> {
        let c = settled(ptf);
        pgs.iter().zip(&bases).map(|(g, b)| Obs::of(&c, &g.flow).pg_drop - b.pg_drop).collect()
    };

    // Shared phase: each PG to its XOFF point: no PFC one frame short of it (settled), PFC with it.
    let mut trig_obs = Vec::new();
    for (g, b) in pgs.iter().zip(&bases) {
        g.flow.send(&mut ptf, g.trig - 1);
        let short = observe(&mut ptf, &g.flow).pfc(g.prio) > b.pfc(g.prio);
        g.flow.send(&mut ptf, 1);
        let at = observe(&mut ptf, &g.flow).pfc(g.prio) > b.pfc(g.prio);
        trig_obs.push(match (short, at) {
            (false, true) => g.trig.to_string(),
            (true, _) => format!("<{}", g.trig),
            (false, false) => format!(">{}", g.trig),
        });
    }
    let trig_exp: Vec<String> = pgs.iter().map(|g| g.trig.to_string()).collect();
    report.number("frames to XOFF (first PFC) per PG", trig_exp.join(", "), trig_obs.join(", "));
    let w = ptf.watermarks(false, false);
    let obs_shared = cells(pool_wm(&w, &pool_name).shared_bytes, &qos);
    report.number(
        &format!("{pool_name} shared watermark after the shared phase (cells)"),
        pool_used,
        obs_shared,
    );
    assert_eq!(trig_obs, trig_exp, "{name}: XOFF points per PG");
    assert_eq!(obs_shared, pool_used, "{name}: the pool's shared watermark");
    let d = drops(&mut ptf);
    assert!(d.iter().all(|&x| x == 0), "{name}: drops in the shared phase: {d:?}");

    // Headroom phase: the full headroom of every PG but the last; the last short by the margin.
    for g in &pgs[..last] {
        g.flow.send(&mut ptf, g.room);
    }
    let g = &pgs[last];
    let short = g.room - MARGIN;
    g.flow.send(&mut ptf, short);
    let d = drops(&mut ptf);
    assert!(d.iter().all(|&x| x == 0), "{name}: drops before the headroom ran out: {d:?}");
    let base_last = bases[last];
    let first = step(&mut ptf, &g.flow, 1 + 2 * MARGIN, |o| o.pg_drop > base_last.pg_drop).map(|k| short + k);
    let d = drops(&mut ptf);
    let expected_drops: Vec<u64> =
        (0..pgs.len()).map(|i| if i == last { short + 1 + 2 * MARGIN - g.room } else { 0 }).collect();
    report.number(
        "headroom frames of the last PG to its first drop",
        g.room + 1,
        first.map_or("none".into(), |n| n.to_string()),
    );
    report.number("PG drops per PG", format!("{expected_drops:?}"), format!("{d:?}"));
    let w = ptf.watermarks(false, false);
    let cell = qos.cell_size();
    let exp_hdrm: Vec<u64> = pgs.iter().map(|g| g.hdrm_at_xoff + g.room).collect();
    let obs_hdrm: Vec<u64> = pgs
        .iter()
        .map(|g| port_wm(&w, &g.flow.src_name).pg_headroom_bytes[usize::from(g.flow.pg)] / cell)
        .collect();
    let exp_pool = if pool.headroom > 0 { exp_hdrm.iter().sum::<u64>() } else { 0 };
    let obs_pool = pool_wm(&w, &pool_name).headroom_bytes / cell;
    report.number("PG headroom watermarks (cells)", format!("{exp_hdrm:?}"), format!("{obs_hdrm:?}"));
    report.number("headroom pool watermark (cells)", exp_pool, obs_pool);
    let first = first.unwrap_or_else(|| panic!("{name}: no drop on the last PG"));
    assert_eq!(first, g.room + 1, "{name}: first drop of the last PG's headroom phase");
    assert_eq!(d, expected_drops, "{name}: PG drops");
    assert_eq!(obs_hdrm, exp_hdrm, "{name}: PG headroom watermarks");
    assert_eq!(obs_pool, exp_pool, "{name}: headroom pool watermark");
    if pool_binds {
        assert_eq!(exp_pool, pool.headroom, "{name}: the pool should be full");
    }
    let flows: Vec<&Flow> = pgs.iter().map(|g| &g.flow).collect();
    release(&mut ptf, &[dst], &flows);
}
on_profiles!(hdrm_pool_size_test => hdrm_pool_size(false));
mod hdrm_pool_size_scaled {
    #[test]
    fn th_balanced() {
        super::hdrm_pool_size("th_balanced", true);
    }
}

fn port_wm<'a>(w: &'a pb::GetWatermarksResponse, name: &str) -> &'a pb::PortWatermarks {
    w.ports.iter().find(|p| p.name == name).unwrap_or_else(|| panic!("no watermarks for {name}"))
}

fn pool_wm<'a>(w: &'a pb::GetWatermarksResponse, name: &str) -> &'a pb::PoolWatermarks {
    w.pools.iter().find(|p| p.name == name).unwrap_or_else(|| panic!("no watermarks for pool {name}"))
}

// ------------------------------------------------------------------------------- watermark tests

/// sonic-mgmt's watermark steps over `total` frames: `first` frames, then `total / 4` (at least 1) at a
/// time, the last step cut to end on `total`. Returns the cumulative counts and the overflow step (one more
/// `total / 4`) that follows them.
fn wm_plan(total: u64, first: u64) -> (Vec<u64>, u64) {
    let inc = (total >> 2).max(1);
    let mut steps = Vec::new();
    let mut n = first.min(total);
    while n < total || steps.is_empty() {
        steps.push(n);
        n = (n + inc).min(total);
        if n == total {
            steps.push(n);
            break;
        }
    }
    steps.dedup();
    (steps, inc)
}

/// What the profile implies a flow's frames occupy after `n` of them (no release), in cells.
struct Fill {
    admitted: u64,
    pg_reserved: u64,
    pg_shared: u64,
    q_reserved: u64,
}

impl Fill {
    fn new(f: &Flow, qos: &Qos<'_>, p: &Params) -> Fill {
        Fill {
            admitted: f.admitted(qos, p),
            pg_reserved: p.pg_reserved,
            pg_shared: p.pg_shared,
            q_reserved: p.q_reserved,
        }
    }

    /// PG shared cells: above the reserved size, up to the shared limit.
    fn pg_shared(&self, n: u64) -> u64 {
        n.min(self.admitted).saturating_sub(self.pg_reserved).min(self.pg_shared)
    }

    /// PG headroom cells: above the shared limit (a lossless PG; a lossy one drops first).
    fn pg_headroom(&self, n: u64) -> u64 {
        n.min(self.admitted).saturating_sub(self.pg_reserved + self.pg_shared)
    }

    /// Queue shared cells: above the queue's reserved size.
    fn q_shared(&self, n: u64) -> u64 {
        n.min(self.admitted).saturating_sub(self.q_reserved)
    }
}

fn cells(bytes: u64, qos: &Qos<'_>) -> u64 {
    assert_eq!(bytes % qos.cell_size(), 0, "a watermark of {bytes} bytes is not whole cells");
    bytes / qos.cell_size()
}

fn class_label(qos: &Qos<'_>, f: &Flow) -> &'static str {
    if qos.pfc_enabled(&f.src_name).contains(&f.tc) { "lossless" } else { "lossy" }
}

/// PGSharedWatermarkTest: the source PG's shared watermark (user copy, cleared first) is 0 once the PG's
/// reserved size is filled, then follows the frames in shared space step by step up to the XOFF point
/// (lossless) or the first drop (lossy): `expected ≤ watermark ≤ expected + margin` cells (margin 2); an
/// overflow step leaves it at the limit (`≤ expected + margin + 1` cell).
fn pg_shared_watermark(name: &str, dscp: u8) {
    let mut ptf = Ptf::start(name, profile(name));
    let f = Flow::new(&mut ptf, "Ethernet0", "Ethernet4", dscp);
    let config = ptf.db.clone();
    let qos = Qos::new(&config);
    let label = class_label(&qos, &f);
    let mut report = Report::new(&format!("PGSharedWatermarkTest[{label}]"), name);
    let p = f.params(&qos);
    let fill = Fill::new(&f, &qos, &p);
    let fill_shared = if label == "lossless" { p.pkts_num_trig_pfc } else { fill.admitted };
    let (steps, overflow) = wm_plan(fill_shared - p.pg_reserved, 1 + MARGIN);
    ptf.hold(&f.dst_name, None, true);
    ptf.watermarks(false, true);
    let read = |ptf: &mut Ptf| {
        cells(port_wm(&ptf.watermarks(false, false), &f.src_name).pg_shared_bytes[usize::from(f.pg)], &qos)
    };
    f.send(&mut ptf, p.pg_reserved);
    let (mut expected, mut observed) = (vec![fill.pg_shared(p.pg_reserved)], vec![read(&mut ptf)]);
    let mut sent = p.pg_reserved;
    for n in steps.iter().map(|s| p.pg_reserved + s).chain([fill_shared + overflow]) {
        f.send(&mut ptf, n - sent);
        sent = n;
        expected.push(fill.pg_shared(n));
        observed.push(read(&mut ptf));
    }
    report.number(
        &format!("PG{} shared watermark per step (cells), margin {MARGIN}", f.pg),
        format!("{expected:?}"),
        format!("{observed:?}"),
    );
    assert_eq!(observed[0], 0, "{name}: PG shared watermark with only the reserved size filled");
    let last = observed.len() - 1;
    for (i, (&e, &o)) in expected.iter().zip(&observed).enumerate() {
        let upper = if i == last { e + MARGIN + 1 } else { e + MARGIN };
        assert!(
            e <= o && o <= upper,
            "{name}: step {i}: PG shared watermark {o} cells, expected {e}..={upper}"
        );
    }
    if label == "lossless" {
        assert_eq!(expected[last], p.pg_shared, "{name}: the fill should reach the PG's shared limit");
    } else if expected[last] < p.pg_shared {
        // The lossy queue's limit binds first (th_balanced): the PG never reaches its own.
        report.number(
            "PG shared cells at the first (egress) drop / PG limit",
            format!("{} / {}", expected[last], p.pg_shared),
            format!("{} / {}", observed[last], p.pg_shared),
        );
    }
    release(&mut ptf, &[&f.dst_name], &[&f]);
}
on_profiles!(pg_shared_wm_lossless => pg_shared_watermark(3));
on_profiles!(pg_shared_wm_lossy => pg_shared_watermark(8));

/// PGHeadroomWatermarkTest: a lossless PG filled to `trig_pfc − margin` has headroom watermark 0; after
/// the XOFF point the headroom watermark follows the frames in headroom step by step, exactly (margin 0),
/// up to the PG's headroom; an overflow step (dropped) leaves it there.
fn pg_headroom_watermark(name: &str) {
    let mut report = Report::new("PGHeadroomWatermarkTest", name);
    let mut ptf = Ptf::start(name, profile(name));
    let f = Flow::new(&mut ptf, "Ethernet0", "Ethernet4", 3);
    let config = ptf.db.clone();
    let qos = Qos::new(&config);
    f.prio(&qos);
    let p = f.params(&qos);
    let fill = Fill::new(&f, &qos, &p);
    let total_hdrm = p.pkts_num_trig_ingr_drp - p.pkts_num_trig_pfc - 1;
    assert_eq!(total_hdrm, p.pg_headroom);
    let (steps, overflow) = wm_plan(total_hdrm, 1 + MARGIN);
    ptf.hold(&f.dst_name, None, true);
    ptf.watermarks(false, true);
    let read = |ptf: &mut Ptf| {
        cells(port_wm(&ptf.watermarks(false, false), &f.src_name).pg_headroom_bytes[usize::from(f.pg)], &qos)
    };
    let mut sent = p.pkts_num_trig_pfc - MARGIN;
    f.send(&mut ptf, sent);
    let (mut expected, mut observed) = (vec![fill.pg_headroom(sent)], vec![read(&mut ptf)]);
    f.send(&mut ptf, MARGIN);
    sent += MARGIN;
    expected.push(fill.pg_headroom(sent));
    observed.push(read(&mut ptf));
    for n in
        steps.iter().map(|s| p.pkts_num_trig_pfc + s).chain([p.pkts_num_trig_pfc + total_hdrm + overflow])
    {
        f.send(&mut ptf, n - sent);
        sent = n;
        expected.push(fill.pg_headroom(n));
        observed.push(read(&mut ptf));
    }
    report.number(
        &format!("PG{} headroom watermark per step (cells), margin 0", f.pg),
        format!("{expected:?}"),
        format!("{observed:?}"),
    );
    assert_eq!(observed, expected, "{name}: PG headroom watermarks");
    assert_eq!(*expected.last().unwrap(), p.pg_headroom);
    release(&mut ptf, &[&f.dst_name], &[&f]);
}
on_profiles!(pg_headroom_wm => pg_headroom_watermark());

/// QSharedWatermarkTest: the destination queue's shared watermark is 0 with only its reserved size
/// filled, then follows the frames above it step by step up to the first drop (the ingress drop for a
/// lossless class, the first drop of either limit for a lossy one): within ± margin 8 cells; an overflow
/// step (dropped) leaves it at the top (`expected ≤ watermark ≤ expected + 8`).
fn q_shared_watermark(name: &str, dscp: u8) {
    const Q_MARGIN: u64 = 8;
    let mut ptf = Ptf::start(name, profile(name));
    let f = Flow::new(&mut ptf, "Ethernet0", "Ethernet4", dscp);
    let config = ptf.db.clone();
    let qos = Qos::new(&config);
    let label = class_label(&qos, &f);
    let mut report = Report::new(&format!("QSharedWatermarkTest[{label}]"), name);
    let p = f.params(&qos);
    let fill = Fill::new(&f, &qos, &p);
    let fill_min = p.q_reserved;
    let total_shared = fill.admitted - fill_min;
    let (steps, overflow) = wm_plan(total_shared, 1 + Q_MARGIN);
    ptf.hold(&f.dst_name, None, true);
    ptf.watermarks(false, true);
    let read = |ptf: &mut Ptf| {
        cells(
            port_wm(&ptf.watermarks(false, false), &f.dst_name).queue_shared_bytes[usize::from(f.queue)],
            &qos,
        )
    };
    f.send(&mut ptf, fill_min);
    let (mut expected, mut observed) = (vec![fill.q_shared(fill_min)], vec![read(&mut ptf)]);
    let mut sent = fill_min;
    for n in steps.iter().map(|s| fill_min + s).chain([fill.admitted + overflow]) {
        f.send(&mut ptf, n - sent);
        sent = n;
        expected.push(fill.q_shared(n));
        observed.push(read(&mut ptf));
    }
    report.number(
        &format!("queue {} shared watermark per step (cells), margin {Q_MARGIN}", f.queue),
        format!("{expected:?}"),
        format!("{observed:?}"),
    );
    assert!(
        if fill_min > 0 { observed[0] == 0 } else { observed[0] <= 1 },
        "{name}: queue watermark {} after the reserved fill",
        observed[0]
    );
    let last = observed.len() - 1;
    for (i, (&e, &o)) in expected.iter().zip(&observed).enumerate() {
        let lower = if i == last { e } else { e.saturating_sub(Q_MARGIN) };
        assert!(
            lower <= o && o <= e + Q_MARGIN,
            "{name}: step {i}: queue shared watermark {o} cells, expected {lower}..={}",
            e + Q_MARGIN
        );
    }
    release(&mut ptf, &[&f.dst_name], &[&f]);
}
on_profiles!(q_shared_wm_lossless => q_shared_watermark(3));
on_profiles!(q_shared_wm_lossy => q_shared_watermark(8));

/// BufferPoolWatermarkTest, as sonic-mgmt runs it: before each reading the destination is held, the
/// cumulative number of frames sent again, and the destination released (the pool drains; its watermark
/// keeps the peak). Both pools of the class are read: the ingress pool of the source PG (its shared cells)
/// and the egress pool of the destination queue (the queue's shared cells). Bounds as sonic-mgmt's:
/// `expected − 1 ≤ watermark ≤ expected + 2` cells, and `+ 8` after the overflow step.
fn buffer_pool_watermark(name: &str, dscp: u8) {
    let mut ptf = Ptf::start(name, profile(name));
    let f = Flow::new(&mut ptf, "Ethernet0", "Ethernet4", dscp);
    let config = ptf.db.clone();
    let qos = Qos::new(&config);
    let label = class_label(&qos, &f);
    let mut report = Report::new(&format!("BufferPoolWatermarkTest[{label}]"), name);
    let p = f.params(&qos);
    let fill = Fill::new(&f, &qos, &p);
    let ingress_pool = qos.pg_profile(&f.src_name, f.pg).unwrap().pool;
    let egress_pool = qos.queue_profile(&f.dst_name, f.queue).unwrap().pool;
    let fill_shared = if label == "lossless" { p.pkts_num_trig_pfc } else { fill.admitted };
    let fill_min = p.pg_reserved;
    let (steps, overflow) = wm_plan(fill_shared - fill_min, 1 + 2);
    ptf.watermarks(false, true);
    let mut rows: Vec<(u64, u64, u64, u64)> = Vec::new();
    let counts: Vec<u64> = std::iter::once(fill_min)
        .chain(steps.iter().map(|s| fill_min + s))
        .chain([fill_shared + overflow])
        .collect();
    for &n in &counts {
        ptf.hold(&f.dst_name, None, true);
        f.send(&mut ptf, n);
        release(&mut ptf, &[&f.dst_name], &[&f]);
        let w = ptf.watermarks(false, false);
        rows.push((
            fill.pg_shared(n),
            cells(pool_wm(&w, &ingress_pool).shared_bytes, &qos),
            fill.q_shared(n),
            cells(pool_wm(&w, &egress_pool).shared_bytes, &qos),
        ));
    }
    report.number(
        &format!("{ingress_pool} watermark per step (cells)"),
        format!("{:?}", rows.iter().map(|r| r.0).collect::<Vec<_>>()),
        format!("{:?}", rows.iter().map(|r| r.1).collect::<Vec<_>>()),
    );
    report.number(
        &format!("{egress_pool} watermark per step (cells)"),
        format!("{:?}", rows.iter().map(|r| r.2).collect::<Vec<_>>()),
        format!("{:?}", rows.iter().map(|r| r.3).collect::<Vec<_>>()),
    );
    let last = rows.len() - 1;
    for (i, &(ei, oi, ee, oe)) in rows.iter().enumerate() {
        let upper = if i == last { 8 } else { 2 };
        for (what, e, o) in [(&ingress_pool, ei, oi), (&egress_pool, ee, oe)] {
            assert!(
                e.saturating_sub(1) <= o && o <= e + upper,
                "{name}: step {i} ({} frames): {what} watermark {o} cells, expected {e} (−1/+{upper})",
                counts[i]
            );
        }
    }
}
on_profiles!(buffer_pool_wm_lossless => buffer_pool_watermark(3));
on_profiles!(buffer_pool_wm_lossy => buffer_pool_watermark(8));

// --------------------------------------------------------------------------------------- PGDropTest

/// PGDropTest: per iteration, hold the destination, fill a lossless PG to its XOFF point (PFC), then send
/// `trig_ingr_drp + margin − trig_pfc` more; the PG drop counter grows by the frames beyond the limit. As
/// sonic-mgmt: the observed trigger `trig_ingr_drp + margin − (drops − 1)` must be within the margin
/// (strictly) — here in every iteration, where sonic-mgmt accepts 75 % of them. Release and drain between
/// iterations.
fn pg_drop_test(name: &str) {
    const ITERATIONS: usize = 3;
    let mut report = Report::new("PGDropTest", name);
    let mut ptf = Ptf::start(name, profile(name));
    let f = Flow::new(&mut ptf, "Ethernet0", "Ethernet4", 3);
    let config = ptf.db.clone();
    let qos = Qos::new(&config);
    let prio = f.prio(&qos);
    let p = f.params(&qos);
    let mut observed = Vec::new();
    for _ in 0..ITERATIONS {
        ptf.hold(&f.dst_name, None, true);
        let base = observe(&mut ptf, &f);
        f.send(&mut ptf, p.pkts_num_trig_pfc);
        let o = observe(&mut ptf, &f);
        assert!(o.pfc(prio) > base.pfc(prio), "{name}: no PFC at the XOFF point");
        f.send(&mut ptf, p.pkts_num_trig_ingr_drp + MARGIN - p.pkts_num_trig_pfc);
        let o = observe(&mut ptf, &f);
        let drops = o.pg_drop - base.pg_drop;
        assert_eq!(o.tx_drp, base.tx_drp, "{name}: egress drops");
        observed.push((p.pkts_num_trig_ingr_drp + MARGIN + 1).saturating_sub(drops));
        release(&mut ptf, &[&f.dst_name], &[&f]);
    }
    report.number(
        "frames to trigger PG drop, per iteration",
        format!("{:?}", vec![p.pkts_num_trig_ingr_drp; ITERATIONS]),
        format!("{observed:?}"),
    );
    for (i, &a) in observed.iter().enumerate() {
        assert!(
            a.abs_diff(p.pkts_num_trig_ingr_drp) < MARGIN,
            "{name}: iteration {i}: PG drop at {a}, expected {}",
            p.pkts_num_trig_ingr_drp
        );
    }
}
on_profiles!(pg_drop => pg_drop_test());
