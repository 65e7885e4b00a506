//! sonic-mgmt's watermark tests (`tests/saitests/py3/sai_qos_tests.py` in sonic-net/sonic-mgmt):
//! PGSharedWatermarkTest, PGHeadroomWatermarkTest, QSharedWatermarkTest and BufferPoolWatermarkTest, each
//! with the figures sonic-mgmt publishes for the profile ([`lossless_ptf::published`]) and sonic-mgmt's
//! own step arithmetic and bounds. Frames are 64 bytes, one cell (`cell_occupancy` 1); watermarks are read
//! in bytes and compared in cells of the published `cell_size`, as sonic-mgmt does.
//!
//! sonic-mgmt fills in steps: a first step of `1 + margin` frames, then a quarter of the total at a time,
//! the last step cut to end on the total, then one more quarter (the overflow step). Each reading must lie
//! in the test's window around the frames sent so far (above the test's `fill_min`).

use lossless_ptf::buffer::{Flow, cells, pool_wm, port_wm, release};
use lossless_ptf::on_profiles;
use lossless_ptf::published::{self, Block};
use lossless_ptf::qos::Qos;
use lossless_ptf::report::Report;
use lossless_ptf::{Ptf, profile};

/// sonic-mgmt's fill plan over `total` cells (one cell per frame): the first step sends `first` frames, the
/// next ones `total >> 2`, the last cut to end on `total`. Returns (frames sent in the step, frames in
/// shared after it) per step, and the overflow step's frame count (one more increment).
fn fill_plan(total: u64, first: u64) -> (Vec<(u64, u64)>, u64) {
    let inc = total >> 2;
    assert!(inc > 0 || total <= first, "a plan over {total} cells would not end (sonic-mgmt's loop)");
    let (mut expected, mut n, mut steps) = (0u64, first, Vec::new());
    while expected < total {
        expected += n;
        if expected > total {
            n -= expected - total;
            expected = total;
        }
        steps.push((n, expected));
        n = inc;
    }
    (steps, n)
}

/// sonic-mgmt's fill loop: each step's frames, then a reading expected in `[e − below, e + above]`; then the
/// overflow frames, read against the last step's expected with `over` more allowed above.
struct Window {
    below: u64,
    above: u64,
    over: u64,
}

/// The fill of the usual test: `n` more frames of the flow, then a watermark reading.
fn sending<'a>(f: &'a Flow, read: impl Fn(&mut Ptf) -> u64 + 'a) -> impl FnMut(&mut Ptf, u64) -> u64 + 'a {
    move |ptf, n| {
        f.send(ptf, n);
        read(ptf)
    }
}

fn read_steps(
    ptf: &mut Ptf,
    plan: &(Vec<(u64, u64)>, u64),
    window: Window,
    mut fill: impl FnMut(&mut Ptf, u64) -> u64,
    readings: &mut Vec<Reading>,
) {
    let (steps, overflow) = plan;
    let mut expected = 0;
    for &(n, e) in steps {
        expected = e;
        readings.push(Reading {
            lo: e.saturating_sub(window.below),
            hi: e + window.above,
            got: fill(ptf, n),
        });
    }
    let got = fill(ptf, *overflow);
    readings.push(Reading {
        lo: expected.saturating_sub(window.below),
        hi: expected + window.above + window.over,
        got,
    });
}

/// One watermark reading against its window.
struct Reading {
    lo: u64,
    hi: u64,
    got: u64,
}

impl Reading {
    fn ok(&self) -> bool {
        self.lo <= self.got && self.got <= self.hi
    }
}

/// Reports the readings against their windows and asserts each.
fn check(report: &mut Report, name: &str, what: &str, readings: &[Reading], source: &str) {
    let windows: Vec<String> = readings
        .iter()
        .map(|r| if r.lo == r.hi { r.lo.to_string() } else { format!("{}..={}", r.lo, r.hi) })
        .collect();
    let got: Vec<u64> = readings.iter().map(|r| r.got).collect();
    report.published(what, format!("[{}]", windows.join(", ")), format!("{got:?}"), source);
    for (i, r) in readings.iter().enumerate() {
        assert!(r.ok(), "{name}: {what}: step {i}: {} cells, expected {}", r.got, windows[i]);
    }
}

/// The watermark block of a class (lossless/lossy) and its flow between the published test ports.
fn setup(name: &str, block: &str) -> (Ptf, Flow, &'static Block, u64) {
    let figures = published::figures(name);
    let b = figures.get(block);
    let mut ptf = Ptf::start(name, profile(name));
    let f = Flow::of_block(&mut ptf, b);
    let lossless = f.lossless(&Qos::new(&ptf.db));
    assert_eq!(lossless, block.ends_with("lossless") || block == "wm_pg_headroom", "{name}: {block}'s class");
    (ptf, f, b, figures.cell_size)
}

fn class(block: &str) -> &'static str {
    if block.ends_with("lossless") { "lossless" } else { "lossy" }
}

// ------------------------------------------------------------------------------ PGSharedWatermarkTest

/// PGSharedWatermarkTest (testQosSaiPgSharedWatermark): the source PG's shared watermark. `fill_min`
/// frames first: then 0 (`fill_min` > 0) or at most `margin` cells; then the steps up to `fill_shared` =
/// `pkts_num_trig_pfc` (lossless) or `pkts_num_trig_egr_drp − 1` (lossy): each reading `expected ..=
/// expected + margin` (no lower margin); after the overflow step `expected ..= expected + margin + 1`.
fn pg_shared_watermark(name: &str, block: &str) {
    let mut report = Report::new(&format!("PGSharedWatermarkTest[{}]", class(block)), name);
    let (mut ptf, f, b, cell) = setup(name, block);
    let m = b.margin();
    // sonic-mgmt's `pkts_num_margin_lower_bound` (default 0): cells the watermark may read under the expected.
    let lower = if b.has("pkts_num_margin_lower_bound") { b.n("pkts_num_margin_lower_bound") } else { 0 };
    let fill_min = b.n("pkts_num_fill_min");
    let (fill_shared, key) = if block.ends_with("lossless") {
        (b.n("pkts_num_trig_pfc"), "pkts_num_trig_pfc")
    } else {
        (b.n("pkts_num_trig_egr_drp") - 1, "pkts_num_trig_egr_drp")
    };
    let plan = fill_plan(fill_shared - fill_min, 1 + m);
    ptf.hold(&f.dst_name, None, true);
    ptf.watermarks(false, true);
    let read = |ptf: &mut Ptf| {
        cells(port_wm(&ptf.watermarks(false, false), &f.src_name).pg_shared_bytes[usize::from(f.pg)], cell)
    };
    f.send(&mut ptf, fill_min);
    let mut readings = vec![Reading { lo: 0, hi: if fill_min > 0 { 0 } else { m }, got: read(&mut ptf) }];
    let window = Window { below: lower, above: m, over: 1 };
    read_steps(&mut ptf, &plan, window, sending(&f, read), &mut readings);
    check(
        &mut report,
        name,
        &format!(
            "PG{} shared watermark (cells) after {fill_min}, then steps to {fill_shared}, overflow",
            f.pg
        ),
        &readings,
        &b.cite(key),
    );
    release(&mut ptf, &[&f.dst_name], &[&f]);
}
on_profiles!(pg_shared_wm_lossless => pg_shared_watermark("wm_pg_shared_lossless"));
on_profiles!(pg_shared_wm_lossy => pg_shared_watermark("wm_pg_shared_lossy"));

// ---------------------------------------------------------------------------- PGHeadroomWatermarkTest

/// PGHeadroomWatermarkTest (testQosSaiPgHeadroomWatermark, wm_pg_headroom): `pkts_num_trig_pfc − margin`
/// frames leave the PG's headroom watermark at exactly 0; `margin` more; then steps over `trig_ingr_drp −
/// trig_pfc − 1` headroom cells, each reading `expected ± margin`, and the overflow step the same.
fn pg_headroom_watermark(name: &str) {
    let mut report = Report::new("PGHeadroomWatermarkTest", name);
    let (mut ptf, f, b, cell) = setup(name, "wm_pg_headroom");
    let (trig, drop, m) = (b.n("pkts_num_trig_pfc"), b.n("pkts_num_trig_ingr_drp"), b.margin());
    let total = drop - trig - 1;
    let plan = fill_plan(total, 1 + m);
    ptf.hold(&f.dst_name, None, true);
    ptf.watermarks(false, true);
    let read = |ptf: &mut Ptf| {
        cells(port_wm(&ptf.watermarks(false, false), &f.src_name).pg_headroom_bytes[usize::from(f.pg)], cell)
    };
    f.send(&mut ptf, trig - m);
    let mut readings = vec![Reading { lo: 0, hi: 0, got: read(&mut ptf) }];
    f.send(&mut ptf, m);
    let window = Window { below: m, above: m, over: 0 };
    read_steps(&mut ptf, &plan, window, sending(&f, read), &mut readings);
    check(
        &mut report,
        name,
        &format!(
            "PG{} headroom watermark (cells) after {}, then steps over {total}, overflow",
            f.pg,
            trig - m
        ),
        &readings,
        &b.cite("pkts_num_trig_ingr_drp"),
    );
    release(&mut ptf, &[&f.dst_name], &[&f]);
}
on_profiles!(pg_headroom_wm => pg_headroom_watermark());

// ------------------------------------------------------------------------------- QSharedWatermarkTest

/// QSharedWatermarkTest (testQosSaiQSharedWatermark): the destination queue's shared watermark.
/// `fill_min` frames first: then 0 (`fill_min` > 0) or at most 1 cell; then steps over `trig_drp −
/// fill_min − 1` cells, `trig_drp` being `pkts_num_trig_ingr_drp` (lossless) or `pkts_num_trig_egr_drp`
/// (lossy), each reading `expected ± margin`, and the overflow step the same.
fn q_shared_watermark(name: &str, block: &str) {
    let mut report = Report::new(&format!("QSharedWatermarkTest[{}]", class(block)), name);
    let (mut ptf, f, b, cell) = setup(name, block);
    let m = b.margin();
    let fill_min = b.n("pkts_num_fill_min");
    let key = if block.ends_with("lossless") { "pkts_num_trig_ingr_drp" } else { "pkts_num_trig_egr_drp" };
    let total = b.n(key) - fill_min - 1;
    let plan = fill_plan(total, 1 + m);
    ptf.hold(&f.dst_name, None, true);
    ptf.watermarks(false, true);
    let read = |ptf: &mut Ptf| {
        cells(
            port_wm(&ptf.watermarks(false, false), &f.dst_name).queue_shared_bytes[usize::from(f.queue)],
            cell,
        )
    };
    f.send(&mut ptf, fill_min);
    let mut readings = vec![Reading { lo: 0, hi: if fill_min > 0 { 0 } else { 1 }, got: read(&mut ptf) }];
    let window = Window { below: m, above: m, over: 0 };
    read_steps(&mut ptf, &plan, window, sending(&f, read), &mut readings);
    check(
        &mut report,
        name,
        &format!(
            "queue {} shared watermark (cells) after {fill_min}, then steps over {total}, overflow",
            f.queue
        ),
        &readings,
        &b.cite(key),
    );
    release(&mut ptf, &[&f.dst_name], &[&f]);
}
on_profiles!(q_shared_wm_lossless => q_shared_watermark("wm_q_shared_lossless"));
on_profiles!(q_shared_wm_lossy => q_shared_watermark("wm_q_shared_lossy"));

// ---------------------------------------------------------------------------- BufferPoolWatermarkTest

/// BufferPoolWatermarkTest (testQosSaiBufferPoolWatermark; an experimental test upstream, off unless
/// `--disable_test False` on TH and Mellanox). One pool: the source PG's (lossless: the ingress lossless
/// pool; `fill_min` = `pkts_num_fill_ingr_min`, `fill_shared` = `pkts_num_trig_pfc − 1`) or the
/// destination queue's (lossy: the egress lossy pool; `pkts_num_fill_egr_min`, `pkts_num_trig_egr_drp −
/// 1`). Before each reading the destination is held, the cumulative number of frames sent again, and the
/// destination released (the pool drains; its watermark keeps the peak). After `fill_min`: at most
/// `margin` cells; then the steps over `fill_shared − fill_min` cells, each reading `expected − 1 ..=
/// expected + margin`; after the overflow step `expected − 1 ..= expected + 8`.
fn buffer_pool_watermark(name: &str, block: &str) {
    let mut report = Report::new(&format!("BufferPoolWatermarkTest[{}]", class(block)), name);
    let (mut ptf, f, b, cell) = setup(name, block);
    let m = b.margin();
    let qos_db = ptf.db.clone();
    let qos = Qos::new(&qos_db);
    let (pool, fill_min, fill_shared, key) = if block.ends_with("lossless") {
        let pool = qos.pg_profile(&f.src_name, f.pg).expect("the source PG's profile").pool;
        (pool, b.n("pkts_num_fill_ingr_min"), b.n("pkts_num_trig_pfc") - 1, "pkts_num_trig_pfc")
    } else {
        let pool = qos.queue_profile(&f.dst_name, f.queue).expect("the queue's profile").pool;
        (pool, b.n("pkts_num_fill_egr_min"), b.n("pkts_num_trig_egr_drp") - 1, "pkts_num_trig_egr_drp")
    };
    let plan = fill_plan(fill_shared - fill_min, 1 + m);
    ptf.watermarks(false, true);
    let mut to_send = 0;
    let mut fill = |ptf: &mut Ptf, n: u64| {
        to_send += n;
        ptf.hold(&f.dst_name, None, true);
        f.send(ptf, to_send);
        release(ptf, &[&f.dst_name], &[&f]);
        cells(pool_wm(&ptf.watermarks(false, false), &pool).shared_bytes, cell)
    };
    let mut readings = vec![Reading { lo: 0, hi: m, got: fill(&mut ptf, fill_min) }];
    read_steps(&mut ptf, &plan, Window { below: 1, above: m, over: 8 - m }, fill, &mut readings);
    check(
        &mut report,
        name,
        &format!(
            "{pool} shared watermark (cells) after {fill_min}, then steps over {}, overflow",
            fill_shared - fill_min
        ),
        &readings,
        &b.cite(key),
    );
}
on_profiles!(buffer_pool_wm_lossless => buffer_pool_watermark("wm_buf_pool_lossless"));
on_profiles!(buffer_pool_wm_lossy => buffer_pool_watermark("wm_buf_pool_lossy"));

#[test]
fn fill_plans_follow_sonic_mgmt() {
    // th_balanced wm_pg_shared_lossless: 6542 − 6 = 6536 shared cells, margin 2.
    let (steps, overflow) = fill_plan(6536, 3);
    assert_eq!(steps, vec![(3, 3), (1634, 1637), (1634, 3271), (1634, 4905), (1631, 6536)]);
    assert_eq!(overflow, 1634);
    // A first step that covers everything.
    assert_eq!(fill_plan(2, 3), (vec![(2, 2)], 0));
}
