use super::*;
use crate::headroom::LookupTable;
use report::CaseReport;
use targets::Verdict;

const TH_BALANCED: &str = include_str!("../../../configs/profiles/th_balanced.yaml");

/// A directory of this test's own, removed when dropped (also when the test fails).
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("lossless-score-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn args(profiles: Vec<PathBuf>) -> ScoreArgs {
    ScoreArgs {
        profiles,
        topology: None,
        quick: true,
        cases: Vec::new(),
        targets: Vec::new(),
        jobs: None,
        seed: 1,
        out: None,
    }
}

fn check<'a>(c: &'a CaseReport, target: &str) -> &'a targets::Check {
    c.checks
        .iter()
        .find(|k| k.target == target)
        .unwrap_or_else(|| panic!("{}: no {target} check", c.case.name))
}

/// The quick suite on th_balanced as shipped and on a copy whose 100G lossless headroom is 20 cells (4160
/// bytes, less than one 4 KiB frame) where SONiC's lookup table for Tomahawk
/// (device/common/profiles/th/gen/BALANCED/pg_profile_lookup.ini) gives 177,632 bytes for 100G over the
/// profile's 40 m cables: after XOFF the peer's frames in flight cannot fit, so the starved PG drops.
#[test]
fn a_profile_with_headroom_too_small_for_its_cable_loses_lossless_packets_and_gets_the_calculators_value() {
    let dir = TempDir::new("headroom");
    let good = dir.0.join("th_balanced.yaml");
    std::fs::write(&good, TH_BALANCED).unwrap();
    let bad = dir.0.join("th_short_headroom.yaml");
    let mut db = ConfigDb::from_yaml_str(TH_BALANCED).unwrap();
    db.set("BUFFER_PROFILE", "pg_lossless_100000_40m_profile", "xoff", "4160");
    std::fs::write(&bad, serde_yaml::to_string(&db).unwrap()).unwrap();
    let mut a = args(vec![good, bad]);
    a.out = Some(dir.0.join("out"));
    let (mut report, measured) = score(&a).unwrap();
    html::write(&mut report, &measured, &dir.0.join("out")).unwrap();

    // Structure: the suite's version, both profiles, the quick cases in order, every target checked.
    assert_eq!(report.suite_version, suite::SUITE_VERSION);
    let names: Vec<String> = suite::cases(true).into_iter().map(|c| c.name).collect();
    assert_eq!(report.profiles.len(), 2);
    for p in &report.profiles {
        assert_eq!(p.cases.iter().map(|c| c.case.name.clone()).collect::<Vec<_>>(), names);
        assert_eq!(p.deadlock.verdict, Verdict::Pass, "a two-tier Clos routed up-down has no cycle");
        for c in &p.cases {
            for t in targets::TARGET_NAMES {
                check(c, t);
            }
            assert!(c.virtual_ms > 0.0 && c.events > 0, "{}", c.case.name);
            // Steady-state figures over the window after the quick suite's 0.5 ms warm-up, the PFC rate in
            // buckets of at most 1 ms covering it.
            assert_eq!(c.window_ms, (0.5, c.case.traffic_ms as f64), "{}", c.case.name);
            let pfc = &c.metrics.pfc;
            let window_us = (c.window_ms.1 - c.window_ms.0) * 1e3;
            assert!(pfc.bucket_us <= 1000.0 && pfc.buckets == (window_us / pfc.bucket_us).ceil() as usize);
            assert!(!c.plots.is_empty(), "{}: no plot", c.case.name);
        }
    }
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.0.join("out/report.json")).unwrap()).unwrap();
    assert_eq!(json["profiles"][1]["cases"][0]["name"], "incast-4");
    let html = std::fs::read_to_string(dir.0.join("out/report.html")).unwrap();
    assert!(html.contains("<svg") && html.contains("side by side"), "the page inlines its plots");

    let (shipped, short) = (&report.profiles[0], &report.profiles[1]);
    let incast = |p: &ProfileReport| p.cases.iter().find(|c| c.case.name == "incast-4").unwrap().clone();
    // The shipped profile keeps the incast lossless and its bottleneck port busy. Not at line rate: in the
    // quick case's window (0.5-1 ms) the senders are in DCQCN's first cuts (α starts at 1, so each early
    // CNP halves a rate, and NVIDIA's 2 MB byte counter recovers slowly); a 4:1 incast without DCQCN fills
    // the port to 100 %. Steady state is the default suite's business (10 ms warm-up).
    let good_incast = incast(shipped);
    assert_eq!(good_incast.metrics.drops.lossless, 0);
    assert_eq!(check(&good_incast, "lossless_drops").verdict, Verdict::Pass);
    let thr = good_incast.metrics.throughput.as_ref().unwrap().min_percent;
    assert!((50.0..=100.5).contains(&thr), "bottleneck at {thr} % of line rate");
    assert!(!shipped.suggestions.iter().any(|s| s.rule == "headroom"), "{:?}", shipped.suggestions);
    // The short headroom drops lossless packets, fails zero loss, and the suggestion gives the calculator's
    // value for the fabric's 100G ports on 40 m cables.
    let bad_incast = incast(short);
    assert!(bad_incast.metrics.drops.lossless > 0);
    assert_eq!(check(&bad_incast, "lossless_drops").verdict, Verdict::Fail);
    assert!(!short.pass && !report.pass);
    let expected = LookupTable::th_balanced().lookup(100_000, 40).unwrap().xoff;
    assert_eq!(expected, 177_632);
    let s = short.suggestions.iter().find(|s| s.rule == "headroom").expect("a headroom suggestion");
    assert_eq!(s.field, "BUFFER_PROFILE|pg_lossless_100000_40m_profile|xoff");
    assert_eq!((s.current.as_str(), s.suggested.as_str()), ("4160", "177632"));
    // Headroom filled to within one frame where it dropped (the 4200-byte MTU's frames did not fit in what
    // was left); the shipped profile used a fraction of its own.
    let b = &bad_incast.metrics.buffer;
    assert!(b.headroom_bytes == 4160 && b.headroom_bytes - b.headroom_peak_bytes < 4200 + 42, "{b:?}");
    assert!(good_incast.metrics.buffer.headroom_peak_percent < 50.0, "{:?}", good_incast.metrics.buffer);
    // Side by side: the drops row differs in verdict.
    let table = report.side_by_side();
    assert!(
        table
            .lines()
            .any(|l| l.trim_start().starts_with('!') && l.contains("incast-4") && l.contains("LL drops")),
        "{table}"
    );
}

#[test]
fn bad_arguments_are_refused_by_what_was_written() {
    let dir = TempDir::new("args");
    let good = dir.0.join("p.yaml");
    std::fs::write(&good, TH_BALANCED).unwrap();
    let mut a = args(vec![good.clone()]);
    a.cases = vec!["no-such-case".into()];
    let e = score(&a).err().unwrap().to_string();
    assert!(e.contains("--case no-such-case") && e.contains("incast-4"), "{e}");
    let mut a = args(vec![good]);
    a.targets = vec!["latency=5".into()];
    let e = score(&a).err().unwrap().to_string();
    assert!(e.contains("unknown target \"latency\""), "{e}");
    let e = score(&args(vec![dir.0.join("missing.yaml")])).err().unwrap().to_string();
    assert!(e.contains("missing.yaml"), "{e}");
}

/// The default suite's plans: a 10 ms warm-up before a steady-state window to the traffic's end (the storm:
/// the whole run), every NIC on NVIDIA's notification point (as configs/scenarios/dcqcn-100g-ucloud.yaml),
/// the latency target on the lossless flows. Planning only: nothing is simulated.
#[test]
fn the_default_suite_measures_its_steady_state_on_nvidia_notification_points() {
    let dir = TempDir::new("plans");
    let path = dir.0.join("th_balanced.yaml");
    std::fs::write(&path, TH_BALANCED).unwrap();
    let (topology, _) = fabric(&path, None, false).unwrap();
    let base = Base::new(topology).unwrap();
    for case in suite::cases(false) {
        let plan = suite::plan(&base, &case).unwrap();
        let traffic_ns = plan.case.traffic_ms * 1_000_000;
        if matches!(case.kind, suite::Kind::PfcStorm) {
            assert_eq!(plan.window_ns, (0, traffic_ns));
        } else {
            assert_eq!(plan.window_ns, (suite::WARM_UP_MS * 1_000_000, traffic_ns), "{}", case.name);
            assert!(traffic_ns - plan.window_ns.0 >= 5_000_000, "{}: a window of 5 ms at least", case.name);
        }
        for h in &plan.scenario.topology.hosts {
            let np: Vec<(&str, &str)> =
                h.dcqcn_params.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            assert_eq!(np, suite::NVIDIA_NP, "{}: {}", case.name, h.name);
        }
        let lossless = &plan.scenario.topology.traffic;
        assert!(plan.latency_flows.iter().all(|&i| lossless[i].priority == base.lossless.priority));
    }
}
