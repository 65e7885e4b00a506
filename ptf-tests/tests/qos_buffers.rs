//! sonic-mgmt's buffer threshold tests (`tests/saitests/py3/sai_qos_tests.py` in sonic-net/sonic-mgmt):
//! PFCtest, LossyQueueTest, PFCXonTest, HdrmPoolSizeTest (with the headroom-pool watermark of
//! testQosSaiHeadroomPoolWatermark) and PGDropTest. The watermark tests are in `qos_watermarks.rs`.
//!
//! Every expected number is a sonic-mgmt figure for the profile ([`lossless_ptf::published`]), and each test
//! applies sonic-mgmt's own arithmetic and margin to it: the same packet counts per step and the same
//! pass/fail windows. Frames are 64 bytes, one cell on both shipped profiles, so sonic-mgmt's
//! `cell_occupancy` is 1 (see `published.json` on sn2700's 300-byte packets). Where sonic-mgmt sends a
//! margin window in one burst, these tests send it one frame at a time and report the exact frame the
//! event happened at; pass/fail is still sonic-mgmt's window.

use lossless_ptf::buffer::{
    Flow, Obs, await_pfc, first_frame, is_xon, observe, pfc_kind, pool_wm, port_wm, release, settled, step,
    watch_pfc,
};
use lossless_ptf::on_profiles;
use lossless_ptf::published::{self, window};
use lossless_ptf::qos::Qos;
use lossless_ptf::report::Report;
use lossless_ptf::{Ptf, profile};

// ------------------------------------------------------------------------------------------- PFCtest

/// PFCtest (testQosSaiPfcXoffLimit[xoff_n]): the block's DSCP from the source to the held destination.
/// sonic-mgmt's steps, with T = pkts_num_trig_pfc, D = pkts_num_trig_ingr_drp, m = margin:
/// `T − 1 − m` frames: no PFC, no drop; `1 + 2m` more: PFC (an XOFF frame with the class's bit arrives on
/// the source test port), no drop; `D − T − 1 − 2m` more: no drop; `1 + 2m` more: ingress drops (RX_DRP
/// and the PG's drop counter), never an egress drop. So the first PFC must come at `T ± m` and the first
/// drop at `D ± m`. The drop counters must agree with the first drop observed.
fn pfc_test(name: &str, label: &str) {
    let mut report = Report::new(&format!("PFCtest[{label}]"), name);
    let b = published::figures(name).get(label);
    let (trig, drop, m) = (b.n("pkts_num_trig_pfc"), b.n("pkts_num_trig_ingr_drp"), b.margin());
    let mut ptf = Ptf::start(name, profile(name));
    let f = Flow::of_block(&mut ptf, b);
    let prio = f.prio(&Qos::new(&ptf.db));
    assert!(drop > trig + 2 * m, "{name}: {label}'s drop point {drop} is within the PFC window");
    ptf.hold(&f.dst_name, None, true);
    let base = observe(&mut ptf, &f);
    let no_drops = |o: &Obs| o.rx_drp == base.rx_drp && o.pg_drop == base.pg_drop && o.tx_drp == base.tx_drp;

    // (1) Short of the trigger: no PFC (watched), no drop.
    let mut sent = trig - 1 - m;
    f.send(&mut ptf, sent);
    let seen = watch_pfc(&mut ptf, f.src);
    let o = observe(&mut ptf, &f);
    let early = if seen.is_empty() && o.pfc(prio) == base.pfc(prio) { None } else { Some(sent) };

    // (2) Through the window, a frame at a time: PFC.
    let first_pfc = step(&mut ptf, &f, 1 + 2 * m, |o| o.pfc(prio) > base.pfc(prio)).map(|k| sent + k);
    sent += 1 + 2 * m;
    report.published(
        "frames to trigger PFC",
        window(trig, m),
        early.map_or_else(|| first_frame(first_pfc, sent), |n| format!("PFC within the first {n}")),
        &b.cite("pkts_num_trig_pfc"),
    );
    assert!(
        early.is_none(),
        "{name}: PFC frames {seen:?} after {} frames (trigger {trig} ± {m})",
        trig - 1 - m
    );
    assert!(no_drops(&o), "{name}: drops after {} frames: {o:?} (base {base:?})", trig - 1 - m);
    let first_pfc =
        first_pfc.unwrap_or_else(|| panic!("{name}: no PFC after {sent} frames (trigger {trig} ± {m})"));
    let (ce, time) = await_pfc(&mut ptf, f.src, prio, false);
    report.number(
        "PFC frame on the source",
        pfc_kind(1 << prio, true),
        pfc_kind(ce, time[usize::from(prio)] > 0),
    );
    assert_eq!(ce, 1 << prio, "{name}: the XOFF frame's class-enable vector");
    let o = observe(&mut ptf, &f);
    assert!(no_drops(&o), "{name}: drops by frame {sent} (PFC at {first_pfc}): {o:?} (base {base:?})");

    // (3) Into headroom, short of the drop point: no drop, PFC still on.
    let n3 = drop - trig - 1 - 2 * m;
    f.send(&mut ptf, n3);
    sent += n3;
    let o = observe(&mut ptf, &f);
    let early = if no_drops(&o) { None } else { Some(sent) };

    // (4) Through the window, a frame at a time: ingress drops only.
    let first_drop = step(&mut ptf, &f, 1 + 2 * m, |o| o.rx_drp > base.rx_drp).map(|k| sent + k);
    sent += 1 + 2 * m;
    let o = observe(&mut ptf, &f);
    report.published(
        "frames to trigger ingress drop",
        window(drop, m),
        early.map_or_else(|| first_frame(first_drop, sent), |n| format!("drops within the first {n}")),
        &b.cite("pkts_num_trig_ingr_drp"),
    );
    let dropped = first_drop.map_or(0, |d| sent - (d - 1));
    report.number(
        "ingress drops (RX_DRP, PG), egress drops",
        format!("{dropped}, {dropped}, 0 (frames from the first drop on)"),
        format!("{}, {}, {}", o.rx_drp - base.rx_drp, o.pg_drop - base.pg_drop, o.tx_drp - base.tx_drp),
    );
    assert!(early.is_none(), "{name}: drops after {} frames (first drop {drop} ± {m})", drop - 1 - m);
    assert!(o.pfc(prio) > base.pfc(prio), "{name}: PFC stopped in headroom");
    first_drop
        .unwrap_or_else(|| panic!("{name}: no ingress drop after {sent} frames (drop point {drop} ± {m})"));
    assert_eq!((o.tx_drp, o.queue_drop), (base.tx_drp, base.queue_drop), "{name}: egress drops");
    assert_eq!(o.rx_drp - base.rx_drp, dropped, "{name}: RX_DRP against the first drop");
    assert_eq!(o.pg_drop - base.pg_drop, dropped, "{name}: PG drops against the first drop");
    release(&mut ptf, &[&f.dst_name], &[&f]);
}
on_profiles!(pfc_xoff_1 => pfc_test("xoff_1"));
on_profiles!(pfc_xoff_2 => pfc_test("xoff_2"));

// ------------------------------------------------------------------------------------ LossyQueueTest

/// LossyQueueTest (testQosSaiLossyQueue, lossy_queue_1): the block's lossy DSCP to the held destination.
/// With E = pkts_num_trig_egr_drp: `E − 1 − m` frames drop nothing and send no PFC; `1 + 2m` more drop at
/// egress, still with no PFC and (TH, Mellanox) the ingress drop counter unchanged. So the first drop must
/// be an egress drop at `E ± m`; the drop counters must agree with it.
fn lossy_queue_test(name: &str) {
    let mut report = Report::new("LossyQueueTest", name);
    let b = published::figures(name).get("lossy_queue_1");
    let (trig, m) = (b.n("pkts_num_trig_egr_drp"), b.margin());
    let mut ptf = Ptf::start(name, profile(name));
    let f = Flow::of_block(&mut ptf, b);
    assert!(!f.lossless(&Qos::new(&ptf.db)), "{name}: DSCP {}'s TC {} is lossless", f.dscp, f.tc);
    ptf.hold(&f.dst_name, None, true);
    let base = observe(&mut ptf, &f);
    let any_drop = |o: &Obs| o.rx_drp > base.rx_drp || o.tx_drp > base.tx_drp;

    let mut sent = trig - 1 - m;
    f.send(&mut ptf, sent);
    let seen = watch_pfc(&mut ptf, f.src);
    let o = observe(&mut ptf, &f);
    let early = if any_drop(&o) { Some(sent) } else { None };
    let first = step(&mut ptf, &f, 1 + 2 * m, any_drop).map(|k| sent + k);
    sent += 1 + 2 * m;
    let o = observe(&mut ptf, &f);
    let seen_after = watch_pfc(&mut ptf, f.src);
    let dropped = first.map_or(0, |d| sent - (d - 1));
    report.published(
        "frames to the first egress drop",
        window(trig, m),
        early.map_or_else(|| first_frame(first, sent), |n| format!("drops within the first {n}")),
        &b.cite("pkts_num_trig_egr_drp"),
    );
    report.number(
        "ingress drops (RX_DRP, PG), egress drops (TX_DRP, queue), PFC frames",
        format!("0, 0, {dropped}, {dropped}, 0"),
        format!(
            "{}, {}, {}, {}, {}",
            o.rx_drp - base.rx_drp,
            o.pg_drop - base.pg_drop,
            o.tx_drp - base.tx_drp,
            o.queue_drop - base.queue_drop,
            o.pfc_all() - base.pfc_all() + (seen.len() + seen_after.len()) as u64
        ),
    );
    assert!(early.is_none(), "{name}: drops after {} frames (first egress drop {trig} ± {m})", trig - 1 - m);
    first.unwrap_or_else(|| panic!("{name}: no drop after {sent} frames (first egress drop {trig} ± {m})"));
    assert_eq!((o.rx_drp, o.pg_drop), (base.rx_drp, base.pg_drop), "{name}: ingress drops for a lossy class");
    assert_eq!(
        (o.tx_drp - base.tx_drp, o.queue_drop - base.queue_drop),
        (dropped, dropped),
        "{name}: egress drops against the first drop"
    );
    assert!(
        seen.is_empty() && seen_after.is_empty() && o.pfc_all() == base.pfc_all(),
        "{name}: PFC for a lossy class"
    );
    release(&mut ptf, &[&f.dst_name], &[&f]);
}
on_profiles!(lossy_queue => lossy_queue_test());

/// Trident 3 (configs/profiles/td3.yaml, 32 ports): qos_params.td3.yaml topo-t1-lag's trigger points.
mod td3 {
    #[test]
    fn pfc_xoff_1() {
        super::pfc_test("td3", "xoff_1");
    }
    #[test]
    fn pfc_xoff_2() {
        super::pfc_test("td3", "xoff_2");
    }
    #[test]
    fn lossy_queue() {
        super::lossy_queue_test("td3");
    }
}

// --------------------------------------------------------------------------------------- PFCXonTest

/// PFCXonTest (testQosSaiPfcXonLimit[xon_n]): one lossless PG of the source fills through three held
/// destinations (Ethernet4, Ethernet8, Ethernet12). With T = pkts_num_trig_pfc, X = pkts_num_dismiss_pfc,
/// h = pkts_num_hysteresis, m = margin, sonic-mgmt sends `T − X − h − m` frames to the first, `X + h + 2m −
/// 1` to the second and 1 to the third (`T + m` in all): the source must send PFC, nothing drops. Releasing
/// the second must still grow the source's PFC counter (XOFF refreshed, or the XON frame); once the third is
/// released too, the PG holds `T − X − h − m` frames and its PFC counter must stop. Here the XON frame
/// (quanta 0) must also arrive by then; the report says when it came.
fn pfc_xon_test(name: &str, label: &str) {
    let mut report = Report::new(&format!("PFCXonTest[{label}]"), name);
    let figures = published::figures(name);
    let b = figures.get(label);
    let (trig, dismiss, h, m) =
        (b.n("pkts_num_trig_pfc"), b.n("pkts_num_dismiss_pfc"), b.n("pkts_num_hysteresis"), b.margin());
    let mut ptf = Ptf::start(name, profile(name));
    let dsts = [figures.dst_port.as_str(), "Ethernet8", "Ethernet12"];
    let flows: Vec<Flow> =
        dsts.iter().map(|d| Flow::new(&mut ptf, &figures.src_port, d, b.u8("dscp"))).collect();
    flows[0].check(b);
    let prio = flows[0].prio(&Qos::new(&ptf.db));
    let counts = [trig - dismiss - h - m, dismiss + h + 2 * m - 1, 1];
    report.published(
        "frames held on the three destinations (T − X − h − m, X + h + 2m − 1, 1)",
        format!("{counts:?} from T {trig}, X {dismiss}, h {h}, m {m}"),
        format!("{counts:?}"),
        &b.cite("pkts_num_dismiss_pfc"),
    );
    for d in dsts {
        ptf.hold(d, None, true);
    }
    let bases: Vec<Obs> = {
        let c = settled(&mut ptf);
        flows.iter().map(|f| Obs::of(&c, f)).collect()
    };
    // Ingress drops on the source and egress drops on every destination.
    let drops = |ptf: &mut Ptf| -> u64 {
        let c = settled(ptf);
        let now: Vec<Obs> = flows.iter().map(|f| Obs::of(&c, f)).collect();
        now[0].rx_drp - bases[0].rx_drp
            + now.iter().zip(&bases).map(|(o, b)| o.tx_drp - b.tx_drp).sum::<u64>()
    };
    for (f, &n) in flows.iter().zip(&counts) {
        f.send(&mut ptf, n);
    }
    let src = flows[0].src;
    let pfc = |ptf: &mut Ptf| observe(ptf, &flows[0]).pfc(prio);
    let filled = {
        let o = observe(&mut ptf, &flows[0]);
        o.pfc(prio) > bases[0].pfc(prio)
    };
    let fill_drops = drops(&mut ptf);

    // Release the second destination.
    let before = pfc(&mut ptf);
    release(&mut ptf, &[dsts[1]], &[&flows[1]]);
    let seen2 = watch_pfc(&mut ptf, src);
    let after2 = pfc(&mut ptf);
    // Release the third; what its drain sends goes out before the reading sonic-mgmt compares with.
    release(&mut ptf, &[dsts[2]], &[&flows[2]]);
    let seen3 = watch_pfc(&mut ptf, src);
    let base3 = pfc(&mut ptf);
    let seen_quiet = watch_pfc(&mut ptf, src);
    let quiet = pfc(&mut ptf);
    let xon_at = if seen2.iter().any(|f| is_xon(f, prio)) {
        format!("after releasing the second ({} frames left)", counts[0] + counts[2])
    } else if seen3.iter().any(|f| is_xon(f, prio)) {
        format!("after releasing the third ({} frames left)", counts[0])
    } else {
        "none".into()
    };
    report.number(
        &format!("PFC after the fill of {}", counts.iter().sum::<u64>()),
        "yes",
        if filled { "yes" } else { "no" },
    );
    report.number(
        "PFC counter grows when the second is released",
        "yes",
        if after2 > before { "yes" } else { "no" },
    );
    report.number(
        "PFC frames once both are released (counter, frames seen)",
        "0, 0",
        format!("{}, {}", quiet - base3, seen_quiet.len()),
    );
    report.number("XON frame (quanta 0)", "by the release of the third", xon_at.clone());
    report.number("drops", 0, fill_drops + drops(&mut ptf));
    assert!(filled, "{name}: no PFC after {} frames (trigger {trig})", counts.iter().sum::<u64>());
    assert_eq!(fill_drops, 0, "{name}: drops during the fill");
    assert!(after2 > before, "{name}: the PFC counter stopped before the PG drained below {}", counts[0] + 1);
    assert_eq!((quiet, seen_quiet.len()), (base3, 0), "{name}: PFC with {} frames left in the PG", counts[0]);
    assert_ne!(xon_at, "none", "{name}: no XON frame");

    release(&mut ptf, &[dsts[0]], &[&flows[0]]);
    let seen = watch_pfc(&mut ptf, src);
    assert!(seen.is_empty(), "{name}: PFC frames {seen:?} while draining below XON");
    assert_eq!(drops(&mut ptf), 0, "{name}: drops during the test");
}
on_profiles!(pfc_xon_1 => pfc_xon_test("xon_1"));
on_profiles!(pfc_xon_2 => pfc_xon_test("xon_2"));

// --------------------------------------------------------------------------------- HdrmPoolSizeTest

/// HdrmPoolSizeTest (testQosSaiHeadroomPoolSize, hdrm_pool_size) with the headroom-pool watermark checks
/// of testQosSaiHeadroomPoolWatermark, which runs the same procedure. On th_balanced only: sonic-mgmt has
/// no hdrm_pool_size for sn2700 (no shared headroom pool; see `published.json`).
///
/// The row's PGs (its DSCPs on each of its source ports, the sources given the row's 300 m PG profile) send
/// to one held destination. sonic-mgmt's steps, with m = margin (0): `pkts_num_trig_pfc` frames to each
/// (port, PG) in turn; then to each in turn one frame at a time until it sends PFC, at most 10; then
/// `pkts_num_hdrm_full` to every one but the last and `pkts_num_hdrm_partial` to the last: at most m
/// ingress drops on each source; then `1 + 2m` more on the last: an ingress drop, and no egress drop.
/// Headroom-pool watermark (× `hdrm_pool_wm_multiplier`): at most `(2m + 1)` cells × multiplier before the
/// headroom phase; after each headroom fill between `sent × cell × multiplier` and that plus `(2m + 1)`
/// cells × multiplier, capped at the pool's `xoff`; after 10 more frames still at most the pool's `xoff`.
fn hdrm_pool_size(name: &str) {
    let mut report = Report::new("HdrmPoolSizeTest", name);
    let figures = published::figures(name);
    let b = figures.get("hdrm_pool_size");
    let (trig, full, partial, m) =
        (b.n("pkts_num_trig_pfc"), b.n("pkts_num_hdrm_full"), b.n("pkts_num_hdrm_partial"), b.margin());
    let multiplier = figures.hdrm_pool_wm_multiplier.expect("hdrm_pool_wm_multiplier");
    let cell = figures.cell_size;
    let srcs = b.strs("src_ports");
    let dst = b.str("dst_port");
    let mut db = profile(name);
    let pg_profile = b.fields("src_pg_profile");
    let prof_name = pg_profile["name"].clone();
    for (field, value) in pg_profile.iter().filter(|(k, _)| *k != "name") {
        db.set("BUFFER_PROFILE", &prof_name, field, value.clone());
    }
    for s in &srcs {
        db.set("BUFFER_PG", &format!("{s}|3-4"), "profile", prof_name.clone());
        db.set("CABLE_LENGTH", "AZURE", s, "300m");
    }
    let pool = pg_profile["pool"].clone();
    // sonic-mgmt's max_headroom: the pool's shared headroom size (BUFFER_POOL xoff), in bytes.
    let max_headroom: u64 = db.tables["BUFFER_POOL"][&pool]["xoff"].parse().expect("the pool's xoff");
    let mut ptf = Ptf::start(name, db);
    let (dscps, pgs) = (b.list("dscps"), b.list("pgs"));
    let mut flows = Vec::new();
    for s in &srcs {
        for (&dscp, &pg) in dscps.iter().zip(&pgs) {
            let f = Flow::new(&mut ptf, s, dst, dscp as u8);
            assert_eq!(u64::from(f.pg), pg, "{name}: DSCP {dscp} on {s}");
            flows.push(f);
        }
    }
    assert_eq!(flows.len() as u64, b.n("pgs_num"), "{name}: pgs_num");
    let qos_db = ptf.db.clone();
    let prios: Vec<u8> = flows.iter().map(|f| f.prio(&Qos::new(&qos_db))).collect();
    let last = flows.len() - 1;
    ptf.hold(dst, None, true);
    ptf.watermarks(false, true);
    let c = settled(&mut ptf);
    let bases: Vec<Obs> = flows.iter().map(|f| Obs::of(&c, f)).collect();
    let hdrm_wm = |ptf: &mut Ptf| pool_wm(&ptf.watermarks(false, false), &pool).headroom_bytes;

    // Fill the shared pool.
    for f in &flows {
        f.send(&mut ptf, trig);
    }
    // PFC on every PG, a frame at a time.
    let mut extra = Vec::new();
    for ((f, &prio), base) in flows.iter().zip(&prios).zip(&bases) {
        let mut n = 0;
        while observe(&mut ptf, f).pfc(prio) == base.pfc(prio) && n < 10 {
            f.send(&mut ptf, 1);
            n += 1;
        }
        let on = observe(&mut ptf, f).pfc(prio) > base.pfc(prio);
        extra.push(if on { n.to_string() } else { format!("none after {n}") });
    }
    report.published(
        "frames to fill the shared pool per PG, then to PFC per PG",
        format!("{trig} each, then at most 10 (< 10)"),
        format!("{trig} each, then {extra:?}"),
        &b.cite("pkts_num_trig_pfc"),
    );
    let upper_bound = 2 * m + 1;
    let wm0 = hdrm_wm(&mut ptf);
    report.published(
        "headroom pool watermark before the headroom phase (bytes)",
        format!("≤ {}", upper_bound * cell * multiplier),
        wm0,
        &figures.notes["hdrm_pool_wm_multiplier"],
    );
    assert!(extra.iter().all(|e| e.parse::<u64>().is_ok_and(|n| n < 10)), "{name}: PFC per PG: {extra:?}");
    assert!(
        wm0 <= upper_bound * cell * multiplier,
        "{name}: headroom pool watermark {wm0} before the headroom phase"
    );

    // The headroom phase.
    let mut hdrm_sent = 0;
    let mut wm_rows = Vec::new();
    let mut drop_rows = Vec::new();
    for (i, f) in flows.iter().enumerate() {
        let n = if i == last { partial } else { full };
        f.send(&mut ptf, n);
        hdrm_sent += n;
        let c = settled(&mut ptf);
        let src_drops = Obs::of(&c, f).rx_drp - bases[i].rx_drp;
        let expected = hdrm_sent * cell * multiplier;
        let upper = (expected + upper_bound * cell * multiplier).min(max_headroom);
        wm_rows.push((expected, hdrm_wm(&mut ptf), upper));
        drop_rows.push(src_drops);
    }
    let before_last = observe(&mut ptf, &flows[last]).rx_drp;
    flows[last].send(&mut ptf, 1 + 2 * m);
    let c = settled(&mut ptf);
    let after_last = Obs::of(&c, &flows[last]).rx_drp;
    let pg_drops: Vec<u64> =
        flows.iter().zip(&bases).map(|(f, b)| Obs::of(&c, f).pg_drop - b.pg_drop).collect();
    let (dst_drops, dst_base) = (Obs::of(&c, &flows[0]).tx_drp, bases[0].tx_drp);
    let wm_end = hdrm_wm(&mut ptf);
    flows[last].send(&mut ptf, 10);
    let wm_overflow = hdrm_wm(&mut ptf);
    let w = ptf.watermarks(false, false);
    let pg_hdrm: Vec<u64> =
        flows.iter().map(|f| port_wm(&w, &f.src_name).pg_headroom_bytes[usize::from(f.pg)] / cell).collect();

    report.published(
        "headroom frames per PG (hdrm_full × (pgs_num − 1), hdrm_partial): ingress drops on the source after each",
        format!("{full} × {}, {partial}: ≤ {m} each", last),
        format!("{drop_rows:?}"),
        &b.cite("pkts_num_hdrm_full"),
    );
    report.published(
        &format!("after {} more on the last PG: its port's RX_DRP grows; PG drops per PG", 1 + 2 * m),
        format!("yes; [0, …, 0, {}] (the frames beyond the pool)", 1 + 2 * m),
        format!("{}; {pg_drops:?}", if after_last > before_last { "yes" } else { "no" }),
        &b.cite("pkts_num_hdrm_partial"),
    );
    report.published(
        &format!("headroom pool watermark after each headroom fill (bytes; × {multiplier}): [low, high]"),
        format!("{:?}", wm_rows.iter().map(|r| (r.0, r.2)).collect::<Vec<_>>()),
        format!("{:?}", wm_rows.iter().map(|r| r.1).collect::<Vec<_>>()),
        &b.cite("pkts_num_hdrm_partial"),
    );
    report.number(
        "headroom pool watermark after the drop / after 10 more (bytes)",
        format!("[{}, {}] / ≤ {max_headroom}", wm_rows[last].0, wm_rows[last].2),
        format!("{wm_end} / {wm_overflow}"),
    );
    report.number(
        "PG headroom watermarks (cells), reported only",
        format!("hdrm_full × {last}, hdrm_partial"),
        format!("{pg_hdrm:?}"),
    );
    for (i, &d) in drop_rows.iter().enumerate() {
        assert!(d <= m, "{name}: {d} ingress drops on PG {i}'s source while the headroom pool had room");
    }
    for (i, &(lo, wm, hi)) in wm_rows.iter().enumerate() {
        assert!(
            lo <= wm && wm <= hi,
            "{name}: headroom pool watermark {wm} after PG {i}, expected {lo}..={hi}"
        );
    }
    assert!(after_last > before_last, "{name}: no ingress drop once the headroom pool is full");
    assert_eq!(dst_drops, dst_base, "{name}: egress drops on {dst}");
    let (lo, hi) = (wm_rows[last].0, wm_rows[last].2);
    assert!(lo <= wm_end && wm_end <= hi, "{name}: headroom pool watermark {wm_end} after the drop");
    assert!(wm_overflow <= max_headroom, "{name}: headroom pool watermark {wm_overflow} above the pool");
    let refs: Vec<&Flow> = flows.iter().collect();
    release(&mut ptf, &[dst], &refs);
}
mod hdrm_pool_size_test {
    #[test]
    fn th_balanced() {
        super::hdrm_pool_size("th_balanced");
    }
}

// --------------------------------------------------------------------------------------- PGDropTest

/// PGDropTest (testQosSaiPGDrop, pg_drop; figures derived from xoff_1, see `published.json`): per
/// iteration, hold the destination, send `pkts_num_trig_pfc`, then `pkts_num_trig_ingr_drp + m −
/// pkts_num_trig_pfc` more; the PG drop counter gives the observed trigger `pkts_num_trig_ingr_drp + m −
/// (drops − 1)`, which must be within the margin (strictly) — here in every iteration, where sonic-mgmt
/// accepts 75 % of them. No egress drop. Release and drain between iterations.
fn pg_drop_test(name: &str) {
    let mut report = Report::new("PGDropTest", name);
    let b = published::figures(name).get("pg_drop");
    let (trig, drop, m, iterations) =
        (b.n("pkts_num_trig_pfc"), b.n("pkts_num_trig_ingr_drp"), b.margin(), b.n("iterations"));
    let mut ptf = Ptf::start(name, profile(name));
    let f = Flow::of_block(&mut ptf, b);
    f.prio(&Qos::new(&ptf.db));
    let mut observed = Vec::new();
    let mut egress = 0;
    for _ in 0..iterations {
        ptf.hold(&f.dst_name, None, true);
        let base = observe(&mut ptf, &f);
        f.send(&mut ptf, trig);
        f.send(&mut ptf, drop + m - trig);
        let o = observe(&mut ptf, &f);
        egress += o.tx_drp - base.tx_drp;
        observed.push((drop + m + 1).saturating_sub(o.pg_drop - base.pg_drop));
        release(&mut ptf, &[&f.dst_name], &[&f]);
    }
    report.published(
        "frames to trigger PG drop, per iteration (|observed − figure| < margin)",
        format!("{} ± <{m}", drop),
        format!("{observed:?}"),
        &b.cite("pkts_num_trig_ingr_drp"),
    );
    assert_eq!(egress, 0, "{name}: egress drops on a lossless queue");
    for (i, &a) in observed.iter().enumerate() {
        assert!(
            a.abs_diff(drop) < m,
            "{name}: iteration {i}: PG drop at {a}, expected {drop} (margin {m}, strict)"
        );
    }
}
on_profiles!(pg_drop => pg_drop_test());
