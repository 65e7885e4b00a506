//! sonic-mgmt's buffer procedures (`tests/saitests/py3/sai_qos_tests.py`) reproduced on the model in
//! virtual time, with margin 0: egress held on the destination, fill, read counters, release.
//!
//! Every expected number is computed here from the profile's bytes (cells, alpha, xoff, xon_offset) with
//! the closed forms of SAI's dynamic threshold, never read back from the model.

mod common;

use common::*;
use lossless_core::model::config::ConfigDb;
use lossless_core::model::mmu::{WatermarkKind, WatermarkTables};
use lossless_core::model::{Event, PortId, Switch};
use lossless_core::time::Instant;
use lossless_core::wire::{self, L3, MacControlRepr};
use std::net::Ipv4Addr;

const TH: &str = include_str!("../../../configs/profiles/th_balanced.yaml");
const HOST2_IP: Ipv4Addr = Ipv4Addr::new(192, 168, 0, 2);

/// The switch under test with one profile applied, host 2 (Ethernet8) known.
struct Rig {
    sw: Switch,
    db: ConfigDb,
    now: u64,
    src: PortId,
    dst: PortId,
}

impl Rig {
    fn new(yaml: &str) -> Rig {
        let db = ConfigDb::from_yaml_str(yaml).unwrap();
        Rig::with_db(db)
    }

    fn with_db(db: ConfigDb) -> Rig {
        let mut sw = Switch::new();
        let applied = sw.apply(&db, Instant::ZERO).unwrap_or_else(|e| panic!("{e}"));
        assert!(applied.generation == 1);
        let (src, dst) = (port(&sw, "Ethernet0"), port(&sw, "Ethernet8"));
        sw.handle_frame(
            dst,
            arp_request(HOST2_MAC, HOST2_IP, Ipv4Addr::new(192, 168, 0, 1)),
            Instant::from_ns(0),
        );
        drain_all(&mut sw, Instant::ZERO);
        Rig { sw, db, now: 1_000, src, dst }
    }

    fn cell(&self) -> u64 {
        u64::from(self.sw.config().asic.cell_bytes)
    }

    /// `n` routed 64-byte packets of this DSCP from `src` to host 2.
    fn send(&mut self, src: PortId, dscp: u8, n: u64) {
        for i in 0..n {
            let f = routed_udp(
                UPLINK0_MAC,
                Ipv4Addr::new(172, 16, 0, 5),
                HOST2_IP,
                (i % 60000) as u16,
                4791,
                dscp,
            );
            assert_eq!(f.len(), 60);
            self.sw.handle_frame(src, f, Instant::from_ns(self.now));
        }
    }

    /// PFC frames the port has sent since the last call, as (class-enable vector, quanta).
    fn pfc_sent(&mut self, port: PortId) -> Vec<(u8, [u16; 8])> {
        let mut out = Vec::new();
        loop {
            let tx = match self.sw.poll_transmit(port, Instant::from_ns(self.now)) {
                Some(tx) => tx,
                // Frames due back to back wait for the line (a 64-byte frame is a few ns); a refresh, due
                // after half a pause time, is not "since the last call".
                None => match self.sw.next_transmit_at(port) {
                    Some(t) if t.as_ns() > self.now && t.as_ns() - self.now < 10_000 => {
                        self.now = t.as_ns();
                        continue;
                    }
                    _ => break,
                },
            };
            assert!(tx.queue.is_none(), "only PFC leaves {port} in these tests");
            let Ok(L3::MacControl(MacControlRepr::Pfc(p))) = wire::decode(&tx.frame).map(|d| d.l3) else {
                panic!("not a PFC frame")
            };
            out.push((p.class_enable, p.time));
        }
        out
    }

    fn pg_drops(&self, port: PortId, pg: usize) -> u64 {
        self.sw.port_counters(port).unwrap().pgs[pg].dropped_packets
    }

    fn egress_drops(&self, port: PortId) -> u64 {
        self.sw.port_counters(port).unwrap().tx_drp
    }

    fn profile(&self, name: &str) -> Cells {
        let p = &self.db.tables["BUFFER_PROFILE"][name];
        let pool_name = p["pool"].trim_start_matches("[BUFFER_POOL|").trim_end_matches(']');
        let pool = &self.db.tables["BUFFER_POOL"][pool_name];
        let cell = self.cell();
        let cells = |field: &str, t: &std::collections::BTreeMap<String, String>| {
            t.get(field).map_or(0, |v| v.parse::<u64>().unwrap().div_ceil(cell))
        };
        // A partitioned buffer (Tomahawk's XPEs) gives each partition an even share of every pool, rounded
        // up to a cell; the profiles' ports have no lanes, so they are all in pipe 0 and one partition.
        let partitions = self.sw.config().asic.personality.partitions() as u64;
        let share = |field: &str, t: &std::collections::BTreeMap<String, String>| {
            t.get(field).map_or(0, |v| v.parse::<u64>().unwrap().div_ceil(cell * partitions))
        };
        Cells {
            reserved: cells("size", p),
            alpha_exp: p.get("dynamic_th").map(|v| v.parse().unwrap()),
            static_th: cells("static_th", p),
            xoff: cells("xoff", p),
            xon: cells("xon", p),
            xon_offset: cells("xon_offset", p),
            pool: share("size", pool),
            pool_xoff: share("xoff", pool),
        }
    }
}

/// A profile in cells, read from the configuration's bytes.
#[derive(Debug, Clone, Copy)]
struct Cells {
    reserved: u64,
    alpha_exp: Option<i8>,
    static_th: u64,
    xoff: u64,
    xon: u64,
    xon_offset: u64,
    pool: u64,
    pool_xoff: u64,
}

impl Cells {
    /// Shared cells one PG (alone in its pool) can hold before XOFF: with alpha = 2^n the limit is
    /// alpha × (pool − used), so it settles at the first s with s >= alpha (S − s): ceil(alpha S / (1 + alpha)).
    fn shared_to_xoff(&self) -> u64 {
        match self.alpha_exp {
            Some(n) if n >= 0 => {
                let a = 1u64 << n;
                (a * self.pool).div_ceil(1 + a)
            }
            Some(n) => {
                // alpha = 1/2^-n: s >= (S − s) >> k  (floor), smallest such s.
                let k = u32::from(n.unsigned_abs());
                (0..=self.pool).find(|&s| s >= (self.pool - s) >> k).unwrap()
            }
            None => self.static_th,
        }
    }

    /// The most shared cells a lossy consumer alone in its pool can be admitted (each cell admitted while
    /// s + 1 <= alpha (S − s)).
    fn max_shared(&self) -> u64 {
        match self.alpha_exp {
            Some(n) if n >= 0 => {
                let a = 1u64 << n;
                (a * self.pool - 1) / (1 + a) + 1
            }
            Some(_) => self.shared_to_xoff(),
            None => self.static_th,
        }
    }
}

fn pfc_xoff_limit(yaml: &str, pg_profile: &str, dscp: u8) {
    let mut rig = Rig::new(yaml);
    let (src, dst) = (rig.src, rig.dst);
    let p = rig.profile(pg_profile);
    let pg = usize::from(dscp);
    let trig_pfc = p.reserved + p.shared_to_xoff();
    let trig_ingr_drp = trig_pfc + p.xoff.min(if p.pool_xoff > 0 { p.pool_xoff } else { u64::MAX }) + 1;
    rig.sw.set_port_hold(dst, true);

    // (1) One packet short of the XOFF point: no PFC, no drops.
    rig.send(src, dscp, trig_pfc - 1);
    assert!(rig.pfc_sent(src).is_empty(), "no PFC before {trig_pfc} packets");
    assert_eq!((rig.pg_drops(src, pg), rig.egress_drops(dst)), (0, 0));
    // (2) The next packet crosses it: XOFF for priority `pg` with 0xFFFF quanta.
    rig.send(src, dscp, 1);
    let frames = rig.pfc_sent(src);
    assert_eq!(frames.len(), 1);
    assert_eq!(frames[0].0, 1 << pg);
    assert_eq!(frames[0].1[pg], 0xffff);
    let pfc_tx = rig.sw.port_counters(src).unwrap().pfc[pg].tx;
    assert_eq!(pfc_tx, 1);
    // (3) Headroom absorbs up to one short of the drop point.
    rig.send(src, dscp, trig_ingr_drp - trig_pfc - 1);
    assert_eq!(rig.pg_drops(src, pg), 0, "no drop while headroom lasts");
    let occ = rig.sw.mmu().pg_occupancy(src, pg as u8);
    assert_eq!(occ.headroom_bytes, (trig_ingr_drp - trig_pfc - 1) * rig.cell());
    assert!(occ.xoff);
    // (4) One more is an ingress drop, counted on the PG and in RX_DRP; nothing dropped at egress.
    rig.send(src, dscp, 1);
    let c = rig.sw.port_counters(src).unwrap();
    assert_eq!(c.pgs[pg].dropped_packets, 1);
    assert_eq!(c.rx_drp, 1);
    assert_eq!(rig.egress_drops(dst), 0);
    assert_eq!(rig.sw.queue_depth(dst, pg as u8) as u64, trig_ingr_drp - 1, "zero leak-out while held");

    // PFCXonTest: release the destination; XON leaves exactly when the PG drains to
    // max(xon, size + limit − xon_offset) with no headroom in use. Headroom drains first.
    let shared = p.shared_to_xoff();
    let xon_shared = (0..=shared)
        .rev()
        .find(|&s| {
            let limit = match p.alpha_exp {
                Some(n) if n >= 0 => (p.pool - s) << n,
                Some(n) => (p.pool - s) >> n.unsigned_abs(),
                None => p.static_th,
            };
            p.reserved + s <= p.xon.max((p.reserved + limit).saturating_sub(p.xon_offset))
        })
        .unwrap();
    let dequeues_to_xon = (trig_ingr_drp - 1 - trig_pfc) + (shared - xon_shared);
    rig.sw.set_port_hold(dst, false);
    let mut sent = 0u64;
    let mut xon_at = None;
    while sent < trig_ingr_drp - 1 {
        let Some(tx) = rig.sw.poll_transmit(dst, Instant::from_ns(rig.now)) else {
            rig.now = (rig.sw.next_transmit_at(dst).expect("more to send")).as_ns();
            continue;
        };
        assert_eq!(tx.queue, Some(pg as u8));
        sent += 1;
        // Ethernet0 carries only PFC; take what is due now (its line is idle).
        for (enable, time) in rig.pfc_sent(src) {
            if enable & (1 << pg) != 0 && time[pg] == 0 {
                assert!(xon_at.is_none(), "one XON");
                xon_at = Some(sent);
            }
        }
    }
    assert_eq!(xon_at, Some(dequeues_to_xon), "XON after exactly {dequeues_to_xon} dequeues");
    assert_eq!(rig.sw.mmu().total_cells(), 0, "everything released after the drain");
}

#[test]
fn pfc_xoff_limit_and_xon_th_balanced_pg3() {
    pfc_xoff_limit(TH, "pg_lossless_100000_40m_profile", 3);
}

#[test]
fn pfc_xoff_limit_and_xon_th_balanced_pg4() {
    pfc_xoff_limit(TH, "pg_lossless_100000_40m_profile", 4);
}

// Spectrum (sn2700) lays a lossless PG out differently (shared space first, then size − xoff, then
// xoff less an overhead): its trigger points are checked against NVIDIA's generator in
// sonic_mgmt_figures.rs rather than against these closed forms.

#[test]
fn xoff_is_refreshed_at_half_the_pause_time() {
    let mut rig = Rig::new(TH);
    let (src, dst) = (rig.src, rig.dst);
    let p = rig.profile("pg_lossless_100000_40m_profile");
    rig.sw.set_port_hold(dst, true);
    rig.send(src, 3, p.reserved + p.shared_to_xoff());
    assert_eq!(rig.pfc_sent(src).len(), 1);
    let t0 = rig.now;
    // 65535 quanta at 100G = 335,539.2 ns -> 335,540 ns; refresh at 50 % = 167,770 ns.
    let refresh = wire::mac_control::quanta_to_ns(0xffff, 100_000) / 2;
    assert_eq!(rig.sw.next_transmit_at(src), Some(Instant::from_ns(t0 + refresh)));
    assert!(
        rig.sw.poll_transmit(src, Instant::from_ns(t0 + refresh - 1)).is_none(),
        "not a nanosecond early"
    );
    rig.now = t0 + refresh;
    let f = rig.pfc_sent(src);
    assert_eq!(f.len(), 1);
    assert_eq!((f[0].0, f[0].1[3]), (1 << 3, 0xffff));
}

#[test]
fn lossy_queue_tail_drop_point_th_balanced() {
    let mut rig = Rig::new(TH);
    let (src, dst) = (rig.src, rig.dst);
    let q = rig.profile("egress_lossy_profile");
    let pg0 = rig.profile("ingress_lossy_profile");
    let trig_egr_drp = q.reserved + q.max_shared() + 1;
    assert!(pg0.reserved + pg0.max_shared() > trig_egr_drp, "the egress queue is the tighter limit here");
    rig.sw.set_port_hold(dst, true);
    rig.send(src, 8, trig_egr_drp - 1);
    assert_eq!(rig.egress_drops(dst), 0);
    assert!(rig.pfc_sent(src).is_empty(), "lossy traffic never triggers PFC");
    rig.send(src, 8, 1);
    let c = rig.sw.port_counters(dst).unwrap();
    assert_eq!((c.tx_drp, c.queues[0].dropped_packets), (1, 1));
    assert_eq!(rig.sw.port_counters(src).unwrap().rx_drp, 0, "no ingress drop");
}

/// HdrmPoolSizeTest: several source PGs in XOFF share the pool's headroom (SHP); drops start exactly when
/// the shared headroom pool is full, before any PG reaches its private cap.
#[test]
fn headroom_pool_size() {
    let mut db = ConfigDb::from_yaml_str(TH).unwrap();
    // A headroom pool of 2.5 × the 100G PG's xoff, so that three 100G PGs exhaust it.
    let cell = 208u64;
    let xoff_cells = 177_632u64.div_ceil(cell);
    let shp_cells = xoff_cells * 5 / 2;
    // Tomahawk: the pool is split over 4 XPEs, the profile's ports all in one.
    db.set("BUFFER_POOL", "ingress_lossless_pool", "xoff", (4 * shp_cells * cell).to_string());
    let mut rig = Rig::with_db(db);
    let dst = rig.dst;
    let (e0, e4) = (port(&rig.sw, "Ethernet0"), port(&rig.sw, "Ethernet4"));
    let p = rig.profile("pg_lossless_100000_40m_profile");
    assert_eq!(p.pool_xoff, shp_cells);
    rig.sw.set_port_hold(dst, true);

    // Predict per step with the dynamic threshold shared by the PGs, in XOFF order: the next PG fills
    // shared until s >= (S − used − s) for alpha 1, i.e. s = ceil((S − used) / 2).
    let mut used = 0u64;
    let sources = [(e0, 3u8), (e0, 4), (e4, 3)];
    for &(src, dscp) in &sources {
        let s = (p.pool - used).div_ceil(2);
        used += s;
        rig.send(src, dscp, p.reserved + s);
        let pfc = rig.pfc_sent(src);
        assert!(
            pfc.iter().any(|(e, t)| e & (1 << dscp) != 0 && t[usize::from(dscp)] == 0xffff),
            "PG {dscp} of {src} in XOFF"
        );
    }
    // Headroom: the first two PGs take their full private cap, the third only what is left of the pool.
    rig.send(sources[0].0, sources[0].1, p.xoff);
    rig.send(sources[1].0, sources[1].1, p.xoff);
    let left = shp_cells - 2 * p.xoff;
    rig.send(sources[2].0, sources[2].1, left);
    let drops: u64 = [e0, e4].iter().map(|&s| rig.sw.port_counters(s).unwrap().rx_drp).sum();
    assert_eq!(drops, 0, "no drop until the headroom pool is full");
    assert_eq!(rig.sw.mmu().pool_cells("ingress_lossless_pool").unwrap().1, shp_cells);
    rig.send(sources[2].0, sources[2].1, 1);
    assert_eq!(rig.pg_drops(e4, 3), 1, "the pool is full: the next headroom packet drops");
    let wm = rig.sw.watermarks(WatermarkKind::User);
    // Tomahawk reports the headroom pool's watermark as the fullest XPE × 4 (sonic-mgmt's
    // qos_params.th.yaml hdrm_pool_wm_multiplier: 4).
    assert_eq!(wm.pools["ingress_lossless_pool"].headroom_bytes, 4 * shp_cells * cell);
}

/// PGSharedWatermarkTest / PGHeadroomWatermarkTest / QSharedWatermarkTest / BufferPoolWatermarkTest:
/// watermarks equal the expected cells × cell size, read/clear semantics included.
#[test]
fn watermarks_track_shared_and_headroom_cells() {
    let mut rig = Rig::new(TH);
    let (src, dst) = (rig.src, rig.dst);
    let p = rig.profile("pg_lossless_100000_40m_profile");
    let q = rig.profile("egress_lossless_profile");
    let cell = rig.cell();
    rig.sw.set_port_hold(dst, true);
    rig.send(src, 3, p.reserved);
    let wm = rig.sw.watermarks(WatermarkKind::User);
    assert_eq!(wm.ports["Ethernet0"].pg_shared_bytes[3], 0, "reserved cells are not shared");
    for batch in [1u64, 10, 100, 1000] {
        rig.send(src, 3, batch);
    }
    let shared_cells = 1 + 10 + 100 + 1000;
    let wm = rig.sw.watermarks(WatermarkKind::User);
    assert_eq!(wm.ports["Ethernet0"].pg_shared_bytes[3], shared_cells * cell);
    assert_eq!(wm.ports["Ethernet0"].pg_headroom_bytes[3], 0);
    let total = p.reserved + shared_cells;
    assert_eq!(wm.ports["Ethernet8"].queue_shared_bytes[3], total.saturating_sub(q.reserved) * cell);
    assert_eq!(wm.pools["ingress_lossless_pool"].shared_bytes, shared_cells * cell);
    assert_eq!(wm.pools["egress_lossless_pool"].shared_bytes, total.saturating_sub(q.reserved) * cell);

    // Into headroom: fill to XOFF, then 7 more.
    rig.send(src, 3, p.shared_to_xoff() - shared_cells + 7);
    let wm = rig.sw.watermarks(WatermarkKind::User);
    assert_eq!(wm.ports["Ethernet0"].pg_headroom_bytes[3], 7 * cell);
    assert_eq!(wm.ports["Ethernet0"].pg_shared_bytes[3], p.shared_to_xoff() * cell);

    // Drain; the user watermark stays until cleared, then restarts from the (empty) occupancy. The
    // persistent one is unaffected by the user clear.
    rig.sw.set_port_hold(dst, false);
    drain(&mut rig.sw, dst, Instant::from_ns(rig.now));
    assert_eq!(rig.sw.watermarks(WatermarkKind::User).ports["Ethernet0"].pg_headroom_bytes[3], 7 * cell);
    // `sonic-clear queue watermark unicast` clears the queue marks only: the PG and pool marks stay.
    let queue_only = WatermarkTables { queue_shared: true, ..WatermarkTables::NONE };
    rig.sw.clear_watermark_tables(WatermarkKind::User, queue_only);
    let user = rig.sw.watermarks(WatermarkKind::User);
    assert_eq!(user.ports["Ethernet8"].queue_shared_bytes[3], 0);
    assert_eq!(user.ports["Ethernet0"].pg_headroom_bytes[3], 7 * cell);
    assert_eq!(user.pools["ingress_lossless_pool"].shared_bytes, p.shared_to_xoff() * cell);
    rig.sw.clear_watermarks(WatermarkKind::User);
    let user = rig.sw.watermarks(WatermarkKind::User);
    assert_eq!(
        (user.ports["Ethernet0"].pg_shared_bytes[3], user.ports["Ethernet0"].pg_headroom_bytes[3]),
        (0, 0)
    );
    assert_eq!(
        rig.sw.watermarks(WatermarkKind::Persistent).ports["Ethernet0"].pg_headroom_bytes[3],
        7 * cell
    );
}

/// DscpEcnSend: with the destination held, 20,000 ECT packets of 1,024 bytes fill queue 3 past the
/// AZURE_LOSSLESS green thresholds (min 250,000, max 2,097,152 bytes, 5 %); the fraction of CE marks must lie
/// within 5 standard deviations of the WRED curve's expectation, and nothing is dropped (ECT is marked).
#[test]
fn dscp_ecn_marking_follows_the_wred_curve() {
    // One buffer: on a Tomahawk one ingress PG's quarter of the pool drops before queue 3 reaches max.
    let mut db = ConfigDb::from_yaml_str(TH).unwrap();
    db.set("DEVICE_METADATA", "localhost", "asic", "generic");
    let mut rig = Rig::with_db(db);
    let (src, dst) = (rig.src, rig.dst);
    let cell = rig.cell();
    // Thresholds from the profile, in bytes.
    let w = &rig.db.tables["WRED_PROFILE"]["AZURE_LOSSLESS"];
    let (min, max, pct): (u64, u64, u64) = (
        w["green_min_threshold"].parse().unwrap(),
        w["green_max_threshold"].parse().unwrap(),
        w["green_drop_probability"].parse().unwrap(),
    );
    // Large routed frames so the queue reaches max before the lossless PG's XOFF/headroom limits drop.
    let frame = |i: u16| {
        let flow = lossless_core::wire::build::Ipv4Flow {
            src_mac: UPLINK0_MAC,
            dst_mac: ROUTER_MAC,
            src_ip: Ipv4Addr::new(172, 16, 0, 5),
            dst_ip: HOST2_IP,
            src_port: i,
            dscp: 3,
            ecn: lossless_core::wire::ip::Ecn::Ect0,
            ttl: 64,
        };
        flow.udp(4791, &[0u8; 1024 - 42])
    };
    let len = frame(0).len() as u64;
    let cells_per = len.div_ceil(cell);
    rig.sw.set_port_hold(dst, true);
    let n = 2_500u64;
    let mut expected = 0f64;
    let mut variance = 0f64;
    for i in 0..n {
        // Occupancy ahead of this packet, in bytes of cells.
        let q = i * cells_per * cell;
        let pr = if q < min {
            0.0
        } else if q >= max {
            1.0
        } else {
            pct as f64 / 100.0 * (q - min) as f64 / (max - min) as f64
        };
        expected += pr;
        variance += pr * (1.0 - pr);
        rig.sw.handle_frame(src, frame(i as u16), Instant::from_ns(rig.now));
    }
    let c = rig.sw.port_counters(dst).unwrap();
    let marked = c.queues[3].ecn_marked_packets as f64;
    assert!(
        (marked - expected).abs() <= 5.0 * variance.sqrt() + 1.0,
        "marked {marked}, expected {expected:.1} ± {:.1}",
        variance.sqrt()
    );
    assert_eq!(c.queues[3].wred_dropped_packets, 0, "ECT packets are marked, not dropped");
    // When ECN began is one event per queue (its first mark), not one per mark.
    let dst_name = rig.sw.config().ports[dst.index()].name.clone();
    let onsets: Vec<Event> = std::iter::from_fn(|| rig.sw.poll_event())
        .filter(|e| matches!(e, Event::EcnFirstMark { .. }))
        .collect();
    assert!(marked > 1.0, "several marks, one onset");
    assert_eq!(onsets, [Event::EcnFirstMark { port: dst_name, queue: 3 }]);
    rig.sw.set_port_hold(dst, false);
    let out = drain(&mut rig.sw, dst, Instant::from_ns(rig.now));
    let ce = out
        .iter()
        .filter(|t| matches!(wire::decode(&t.frame).unwrap().l3, L3::Ipv4 { header, .. } if header.ecn == lossless_core::wire::ip::Ecn::Ce))
        .count() as f64;
    assert_eq!(ce, marked, "every counted mark is a CE on the wire (checksums valid: decode verifies them)");
    assert_eq!(out.len() as u64, n);
}

/// SAI's `QUEUE_STAT_CURR_OCCUPANCY_BYTES` and `INGRESS_PRIORITY_GROUP_STAT_CURR_OCCUPANCY_BYTES` as the model
/// reads them (the gRPC API copies these; dataplane/src/server/convert.rs tests the copy): a held queue and
/// the PG that fed it hold one cell per 60-byte frame (th_balanced's cell is larger than a frame), reserved,
/// shared and headroom alike; both are back to 0 after the release.
#[test]
fn occupancy_bytes_of_a_held_queue_and_its_pg() {
    let mut rig = Rig::new(TH);
    let (src, dst) = (rig.src, rig.dst);
    let p = rig.profile("pg_lossless_100000_40m_profile");
    let cell = rig.cell();
    assert!(cell >= 60);
    rig.sw.set_port_hold(dst, true);
    // Past XOFF into headroom: reserved, the whole shared allowance, 5 more.
    let n = p.reserved + p.shared_to_xoff() + 5;
    rig.send(src, 3, n);
    let occupancy = |sw: &Switch| {
        let queues: Vec<u64> = (0..8).map(|q| sw.queue_occupancy_bytes(dst, q)).collect();
        let pgs: Vec<u64> = (0..8)
            .map(|g| {
                let o = sw.mmu().pg_occupancy(src, g);
                o.reserved_bytes + o.shared_bytes + o.headroom_bytes
            })
            .collect();
        (queues, pgs)
    };
    let (queues, pgs) = occupancy(&rig.sw);
    assert_eq!(queues, [0, 0, 0, n * cell, 0, 0, 0, 0]);
    assert_eq!(pgs, [0, 0, 0, n * cell, 0, 0, 0, 0]);
    rig.sw.set_port_hold(dst, false);
    drain(&mut rig.sw, dst, Instant::from_ns(rig.now));
    assert_eq!(occupancy(&rig.sw), (vec![0; 8], vec![0; 8]));
}

/// TH with a static XOFF point of 20 cells on the 100G lossless PGs: a PG goes in and out of XOFF with a
/// handful of frames.
fn small_pg_rig() -> Rig {
    let mut db = ConfigDb::from_yaml_str(TH).unwrap();
    let profile =
        db.tables.get_mut("BUFFER_PROFILE").unwrap().get_mut("pg_lossless_100000_40m_profile").unwrap();
    profile.remove("dynamic_th");
    profile.insert("static_th".into(), (20 * 208).to_string());
    Rig::with_db(db)
}

/// An XOFF of 65535 quanta for these priorities, as (class-enable vector, quanta).
fn xoff(priorities: u8) -> (u8, [u16; 8]) {
    (priorities, std::array::from_fn(|p| if priorities & (1 << p) != 0 { 0xffff } else { 0 }))
}

/// The 30-minute soak's lossless drops (`docs/pfc.md`, "Generating frames"): PG 3 holds XOFF while PG 4
/// of the same port goes in and out of XOFF faster than the refresh interval. Every PFC frame restarts the
/// port's refresh timer, so each must refresh priority 3 too: the peer's pause on 3 (65535 quanta at the
/// port's speed) may never run out.
#[test]
fn a_toggling_pg_does_not_starve_the_refresh_of_another() {
    let mut rig = small_pg_rig();
    let (src, dst) = (rig.src, rig.dst);
    let p = rig.profile("pg_lossless_100000_40m_profile");
    let to_xoff = p.reserved + p.shared_to_xoff();
    rig.sw.set_queue_hold(dst, 3, true);
    rig.send(src, 3, to_xoff);
    assert_eq!(rig.pfc_sent(src), vec![xoff(1 << 3)]);
    let pause = wire::mac_control::quanta_to_ns(0xffff, rig.sw.config().ports[src.index()].speed_mbps);
    let toggle_every = pause / 2 * 3 / 10;
    let (mut last_xoff3, mut toggle_at, mut toggles) = (rig.now, rig.now, 0);
    let end = rig.now + 20 * pause;
    while rig.now < end {
        assert!(
            rig.now < last_xoff3 + pause,
            "priority 3's pause ran out at {} ns (last XOFF at {last_xoff3} ns) while PG 3 is in XOFF",
            rig.now
        );
        if rig.now >= toggle_at {
            if rig.sw.mmu().xoff_pgs(src) & (1 << 4) == 0 {
                rig.send(src, 4, to_xoff);
            } else {
                // Queue 4 of the destination runs (3 is held): PG 4 drains to XON.
                loop {
                    match rig.sw.poll_transmit(dst, Instant::from_ns(rig.now)) {
                        Some(tx) => assert_eq!(tx.queue, Some(4)),
                        None => match rig.sw.next_transmit_at(dst) {
                            Some(t) if t.as_ns() > rig.now && t.as_ns() - rig.now < 10_000 => {
                                rig.now = t.as_ns()
                            }
                            _ => break,
                        },
                    }
                }
                assert_eq!(rig.sw.mmu().xoff_pgs(src), 1 << 3, "PG 4 back at XON, PG 3 still in XOFF");
            }
            toggles += 1;
            toggle_at = rig.now + toggle_every;
        }
        for (enable, time) in rig.pfc_sent(src) {
            if enable & (1 << 3) != 0 && time[3] == 0xffff {
                last_xoff3 = rig.now;
            }
        }
        assert_eq!(rig.sw.pfc_out_of_step(), None);
        let next = rig.sw.next_transmit_at(src).map_or(u64::MAX, Instant::as_ns);
        rig.now = next.min(toggle_at).max(rig.now + 1);
    }
    assert!(toggles > 60, "PG 4 toggled {toggles} times");
    assert_eq!(rig.pg_drops(src, 3) + rig.pg_drops(src, 4), 0);
}

/// A PG still in XOFF when its link comes back pauses the peer again (the link's loss forgot the pause on
/// both sides), else its next frames would go to headroom without an XOFF until it overflowed.
#[test]
fn a_pg_in_xoff_pauses_its_peer_again_when_the_link_comes_back() {
    let mut rig = small_pg_rig();
    let (src, dst) = (rig.src, rig.dst);
    let p = rig.profile("pg_lossless_100000_40m_profile");
    rig.sw.set_port_hold(dst, true);
    rig.send(src, 3, p.reserved + p.shared_to_xoff());
    assert_eq!(rig.pfc_sent(src), vec![xoff(1 << 3)]);
    rig.sw.set_port_oper(src, false, Instant::from_ns(rig.now));
    assert_eq!(rig.sw.mmu().xoff_pgs(src), 1 << 3, "its frames wait on another port");
    rig.now += 1_000;
    rig.sw.set_port_oper(src, true, Instant::from_ns(rig.now));
    assert_eq!(rig.pfc_sent(src), vec![xoff(1 << 3)]);
    assert_eq!(rig.sw.pfc_out_of_step(), None);
}

/// WRED drops the very copy whose admission put its PG in XOFF: the PG stays in XOFF (it is still above
/// its XON point) and the XOFF must have gone out, since no later frame asserts it again.
#[test]
fn the_xoff_of_a_copy_wred_drops_still_goes_out() {
    let mut db = ConfigDb::from_yaml_str(TH).unwrap();
    let p = {
        let rig = small_pg_rig();
        rig.profile("pg_lossless_100000_40m_profile")
    };
    let to_xoff = p.reserved + p.shared_to_xoff();
    let profile =
        db.tables.get_mut("BUFFER_PROFILE").unwrap().get_mut("pg_lossless_100000_40m_profile").unwrap();
    profile.remove("dynamic_th");
    profile.insert("static_th".into(), (20 * 208).to_string());
    // Drop (no marking) once the queue ahead holds the frames before the XOFF one (one 208-byte cell each).
    let wred = db.tables.get_mut("WRED_PROFILE").unwrap().get_mut("AZURE_LOSSLESS").unwrap();
    wred.insert("ecn".into(), "ecn_none".into());
    let at = ((to_xoff - 1) * 208).to_string();
    wred.insert("green_min_threshold".into(), at.clone());
    wred.insert("green_max_threshold".into(), at);
    let mut rig = Rig::with_db(db);
    let (src, dst) = (rig.src, rig.dst);
    rig.sw.set_port_hold(dst, true);
    rig.send(src, 3, to_xoff);
    assert_eq!(rig.sw.port_counters(dst).unwrap().queues[3].wred_dropped_packets, 1);
    assert_eq!(rig.sw.mmu().xoff_pgs(src), 1 << 3, "above its XON point after the drop");
    assert_eq!(rig.pfc_sent(src), vec![xoff(1 << 3)]);
    assert_eq!(rig.sw.pfc_out_of_step(), None);
}
