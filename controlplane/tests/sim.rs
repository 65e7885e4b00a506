//! `swctl sim run` end to end (the real binary): every shipped scenario holds its expectations in virtual
//! time; a run is byte-identical for a seed (report, series, capture) and another seed changes it; the
//! capture decodes in tshark with nanosecond timestamps, PFC quanta, BTH PSNs and ECN; Ctrl-C ends a run
//! with a partial report; a long run on a terminal shows a progress bar, and a piped one shows none.

mod common;

use common::text;
use lossless_controlplane::lab::scenario::report::ScenarioReport;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const SCENARIOS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../configs/scenarios");

/// `swctl sim run` with `args`.
fn swctl_sim(args: &[&str]) -> Output {
    common::swctl(&[&["sim", "run"], args].concat())
}

/// A fresh output directory, removed when dropped.
struct OutDir(PathBuf);

impl OutDir {
    fn new(name: &str) -> OutDir {
        let dir = std::env::temp_dir().join(format!("lossless-sim-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        OutDir(dir)
    }

    fn path(&self) -> &str {
        self.0.to_str().unwrap()
    }

    fn read(&self, name: &str) -> Vec<u8> {
        std::fs::read(self.0.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
    }

    /// `scenario.json`, read as the type swctl wrote it from.
    fn report(&self) -> ScenarioReport {
        serde_json::from_slice(&self.read("scenario.json")).unwrap_or_else(|e| panic!("scenario.json: {e}"))
    }
}

impl Drop for OutDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn every_shipped_scenario_holds_in_virtual_time() {
    let mut names: Vec<String> = std::fs::read_dir(SCENARIOS)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        // `*-switch.yaml` are the switch configurations the scenarios name; incast-100g-lossy.yaml is the
        // benchmark's workload (15 M events: bench/sim.sh), too long for a debug build, and so are the 10 s
        // NIC storms (`nic_storms_spread_or_are_contained_in_the_first_520_ms` below) and the 50 ms DCQCN
        // incasts (`dcqcn_at_100g_holds_the_incast_without_pfc_from_10_ms_with_ucloud_ecn` and
        // `dcqcn_16_to_1_at_100g_is_held_by_pfc_at_the_fair_share_for_its_first_15_ms` below).
        .filter(|n| {
            n.ends_with(".yaml")
                && !n.ends_with("-switch.yaml")
                && n != "incast-100g-lossy.yaml"
                && !n.starts_with("nic-storm")
                && !n.starts_with("dcqcn-100g")
        })
        .collect();
    names.sort();
    assert!(names.len() >= 5, "{names:?}");
    for name in names {
        let out = OutDir::new(&name);
        let file = format!("{SCENARIOS}/{name}");
        let run = swctl_sim(&[&file, "--out", out.path(), "--resolution-us", "10000", "--no-plots"]);
        assert!(run.status.success(), "{name}: {}", text(&run));
        let stdout = String::from_utf8_lossy(&run.stdout);
        assert!(stdout.contains("all expectations hold"), "{name}: {stdout}");
        // stderr is a pipe: no progress bar, not even for the runs that take seconds of wall time (longer
        // than the bar waits before it appears: incast-1g.yaml in a debug build).
        assert!(!run.stderr.iter().any(|&b| b == 0x1b || b == b'\r'), "{name}: {}", text(&run));
        let report = out.report();
        assert!(report.ok, "{name}");
        assert!(report.virtual_time, "{name}");
    }
}

/// The DCQCN incasts (`dcqcn-100g*.yaml`, 50 ms) for their first 15 ms: ECN before PFC with both ECN
/// settings, and PFC gone from 10 ms on with UCloud's marking (a sender paused at most 1 % of 10-15 ms)
/// where SONiC's leaves it working. The expectations checked are the scenarios' own, those the first
/// 15 ms decide; the rest need the whole run (`swctl sim run` on the file: seconds in a release build).
#[test]
fn dcqcn_at_100g_holds_the_incast_without_pfc_from_10_ms_with_ucloud_ecn() {
    for name in ["dcqcn-100g-ucloud.yaml", "dcqcn-100g.yaml"] {
        let out = OutDir::new(name);
        let file = format!("{SCENARIOS}/{name}");
        let run = swctl_sim(&[
            &file,
            "--out",
            out.path(),
            "--until-ms",
            "15",
            "--resolution-us",
            "1000",
            "--no-plots",
        ]);
        // Ended before the scenario's end: a partial report, exit 1.
        assert_eq!(run.status.code(), Some(1), "{name}: {}", text(&run));
        let outcomes = out.report().expectations;
        // PFC frames: at most 40,000 with UCloud's ECN (all of them in the start-up), at least 20,000 with
        // SONiC's; both totals are reached by 15 ms.
        let decided_by_15_ms = ["PSN gaps", "marks CE before", "of 10-15 ms", "PFC frames sent on"];
        for what in decided_by_15_ms {
            let found: Vec<_> = outcomes.iter().filter(|o| o.expectation.contains(what)).collect();
            assert_eq!(found.len(), 1, "{name}: {what}: {outcomes:#?}");
            assert!(found[0].holds, "{name}: {:#?}", found[0]);
        }
        let paused = outcomes.iter().find(|o| o.expectation.contains("of 10-15 ms")).unwrap();
        let evidence = &paused.evidence;
        if name.contains("ucloud") {
            assert_eq!(evidence.matches(" 0.00 %").count(), 8, "{evidence}");
        } else {
            assert!(
                evidence.matches(" 0.00 %").count() < 8,
                "SONiC's thresholds leave PFC working: {evidence}"
            );
        }
    }
}

/// The 16:1 DCQCN incast (`dcqcn-100g-16to1-ucloud.yaml`, 50 ms) for its first 15 ms: ECN marks before the
/// first XOFF, yet with 16 senders PFC still holds the incast at 10-15 ms, and while it does every sender
/// gets the fair share, the port's payload rate over 16 (100,000 Mb/s x 65,536 / 66,930 / 16 = 6,120 Mb/s),
/// within 3 %. The expectations checked are the scenario's own, those the first 15 ms decide; the DCQCN
/// rates that drift apart behind PFC show only when it lets go (42 ms: the whole run, `swctl sim run`).
#[test]
fn dcqcn_16_to_1_at_100g_is_held_by_pfc_at_the_fair_share_for_its_first_15_ms() {
    let name = "dcqcn-100g-16to1-ucloud.yaml";
    let out = OutDir::new(name);
    let file = format!("{SCENARIOS}/{name}");
    let run =
        swctl_sim(&[&file, "--out", out.path(), "--until-ms", "15", "--resolution-us", "1000", "--no-plots"]);
    assert_eq!(run.status.code(), Some(1), "a partial report: {}", text(&run));
    let outcomes = out.report().expectations;
    // "PFC frames sent on" is two expectations: at least 70,000 by 15 ms, at most 300,000 in all.
    for (what, count) in [
        ("PSN gaps", 1),
        ("marks CE before", 1),
        ("send rate 10-15 ms within 3 % of 6120", 1),
        ("PFC frames sent on", 2),
        ("sender paused (ms)", 1),
    ] {
        let found: Vec<_> = outcomes.iter().filter(|o| o.expectation.contains(what)).collect();
        assert_eq!(found.len(), count, "{what}: {outcomes:#?}");
        for o in found {
            assert!(o.holds, "{o:#?}");
        }
    }
}

/// The 100G incast for half a millisecond, capturing a sender's link and the receiver's.
fn incast(out: &OutDir, seed: &str) -> Output {
    let file = format!("{SCENARIOS}/incast-100g.yaml");
    swctl_sim(&[
        &file,
        "--out",
        out.path(),
        "--seed",
        seed,
        "--until-ms",
        "0.5",
        "--resolution-us",
        "5",
        "--pcap",
        "sw1:Ethernet0",
        "--pcap",
        "h33:eth0",
    ])
}

#[test]
fn a_run_is_byte_identical_for_its_seed_and_another_seed_changes_it() {
    let files = ["scenario.json", "series.csv", "series.json", "sw1-Ethernet0.pcap", "h33-eth0.pcap"];
    let out = OutDir::new("determinism");
    let first = incast(&out, "7");
    // A partial run (--until-ms before the scenario's end) says so with exit 1, and still reports.
    assert_eq!(first.status.code(), Some(1), "{}", text(&first));
    let one: Vec<Vec<u8>> = files.iter().map(|f| out.read(f)).collect();
    let again = incast(&out, "7");
    assert_eq!(again.status.code(), Some(1), "{}", text(&again));
    for (name, bytes) in files.iter().zip(&one) {
        assert!(out.read(name) == *bytes, "{name} differs between two runs with seed 7");
    }
    assert!(String::from_utf8_lossy(&one[0]).contains("\"partial\": true"));
    assert!(one[2].len() > 1000 && one[3].len() > 10_000, "series and capture are not empty");
    incast(&out, "8");
    // Another seed draws other QPNs and PSNs: the capture changes.
    assert!(out.read("sw1-Ethernet0.pcap") != one[3]);
}

fn tshark(path: &Path, fields: &[&str]) -> Vec<Vec<String>> {
    let mut cmd = Command::new("tshark");
    cmd.args(["-n", "-r"]).arg(path).args(["-T", "fields", "-E", "separator=/t", "-E", "occurrence=f"]);
    for f in fields {
        cmd.args(["-e", f]);
    }
    let out = cmd.output().expect("tshark must be installed (apt-get install tshark); see README");
    assert!(out.status.success(), "tshark: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| l.split('\t').map(str::to_owned).collect())
        .collect()
}

#[test]
fn the_capture_decodes_in_tshark_with_nanosecond_times_pfc_quanta_psns_and_ecn() {
    let out = OutDir::new("tshark");
    let run = incast(&out, "1");
    assert!(run.status.code() == Some(1), "{}", text(&run));
    let fields = ["frame.time_epoch", "macc.cbfc.pause_time.c3", "infiniband.bth.psn", "ip.dsfield.ecn"];
    let sender = tshark(&out.0.join("sw1-Ethernet0.pcap"), &fields);
    let receiver = tshark(&out.0.join("h33-eth0.pcap"), &fields);
    assert!(sender.len() > 50 && receiver.len() > 50, "{} / {} frames", sender.len(), receiver.len());
    let field = |rows: &[Vec<String>], i: usize| -> Vec<String> {
        rows.iter().filter_map(|r| r.get(i).filter(|v| !v.is_empty()).cloned()).collect()
    };
    // Times to the nanosecond, not rounded to µs, and never going back.
    let times: Vec<f64> = field(&sender, 0).iter().map(|t| t.parse().unwrap()).collect();
    assert!(times.windows(2).all(|w| w[1] >= w[0]));
    assert!(
        field(&sender, 0)
            .iter()
            .any(|t| t.split('.').nth(1).is_some_and(|ns| ns.len() == 9 && !ns.ends_with("000")))
    );
    // The switch paused h1 with full quanta (XOFF) and released it (XON, 0).
    let quanta = field(&sender, 1);
    assert!(quanta.iter().any(|q| q == "65535") && quanta.iter().any(|q| q == "0"), "{quanta:?}");
    // Consecutive PSNs from h1, and CE marks on what reached h33.
    let psns: Vec<u32> = field(&sender, 2).iter().map(|p| p.parse().unwrap()).collect();
    assert!(psns.len() > 10 && psns.windows(2).any(|w| w[1] == (w[0] + 1) & 0xff_ffff), "{psns:?}");
    assert!(field(&receiver, 3).iter().any(|e| e == "3"), "no CE mark reached h33");
}

#[test]
fn ctrl_c_ends_a_run_with_a_partial_report() {
    let out = OutDir::new("interrupt");
    // The lossy 100G incast takes minutes in a debug build: interrupted long before its end.
    let file = format!("{SCENARIOS}/incast-100g-lossy.yaml");
    let mut child = Command::new(env!("CARGO_BIN_EXE_swctl"))
        .args(["sim", "run", &file, "--out", out.path(), "--no-plots", "--resolution-us", "1000"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // swctl creates the output directory once its signal handlers are in place.
    let deadline = Instant::now() + Duration::from_secs(60);
    while !out.0.exists() {
        assert!(Instant::now() < deadline, "swctl did not start");
        assert!(child.try_wait().unwrap().is_none(), "swctl exited early");
        std::thread::yield_now();
    }
    let interrupted = unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    assert_eq!(interrupted, 0);
    let done = child.wait_with_output().unwrap();
    assert_eq!(done.status.code(), Some(1), "{}", text(&done));
    let report = out.report();
    assert!(report.partial, "{report:#?}");
    assert!(String::from_utf8_lossy(&done.stdout).contains("PARTIAL"), "{}", text(&done));
}

#[test]
fn a_long_run_on_a_terminal_shows_a_progress_bar_and_ctrl_c_still_reports() {
    let out = OutDir::new("bar");
    // Minutes in a debug build, seconds in a release one: past the second after which the bar appears.
    let file = format!("{SCENARIOS}/incast-100g-lossy.yaml");
    let command = format!(
        "exec {} sim run {file} --out {} --no-plots --resolution-us 1000",
        env!("CARGO_BIN_EXE_swctl"),
        out.path()
    );
    // script(1) (util-linux) runs swctl on a pseudo-terminal: its stdout and stderr are that terminal, and
    // a 0x03 written to script's stdin is typed on it: Ctrl-C, SIGINT from the terminal's line discipline.
    // `exec`: script runs the command with $SHELL -c, or /bin/sh when SHELL is unset (as under CI); dash
    // does not exec a lone command, stays in the terminal's foreground group and dies of the SIGINT (130).
    // TERM names the terminal's kind: unset or `dumb` (a CI runner's environment) and indicatif draws
    // nothing, rightly; the pseudo-terminal script opens understands what an xterm does.
    let mut child = Command::new("script")
        .args(["-qfec", &command, "/dev/null"])
        .env("TERM", "xterm")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("script (util-linux) runs the pseudo-terminal");
    let mut terminal = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n @ 1..) = terminal.read(&mut buf) {
            if tx.send(buf[..n].to_vec()).is_err() {
                break;
            }
        }
    });
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(120);
    while !String::from_utf8_lossy(&seen).contains(" ms virtual, ") {
        match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(bytes) => seen.extend(bytes),
            Err(_) => panic!("no progress bar within 120 s: {}", String::from_utf8_lossy(&seen)),
        }
    }
    child.stdin.as_mut().unwrap().write_all(b"\x03").unwrap();
    // Until swctl exits and script closes the terminal (the reader's end of the channel then hangs up).
    while let Ok(bytes) = rx.recv_timeout(Duration::from_secs(60)) {
        seen.extend(bytes);
    }
    let status = child.wait().unwrap();
    let seen = String::from_utf8_lossy(&seen);
    assert_eq!(status.code(), Some(1), "{seen}");
    // The bar: virtual time done of the run's, wall time, and their ratio; then the partial report.
    let bar = seen.find(" ms virtual, ").unwrap();
    assert!(seen[bar..].contains("× real time"), "{seen}");
    let report = seen.find("PARTIAL: the run was cut short").unwrap_or_else(|| panic!("no report: {seen}"));
    assert!(bar < report, "{seen}");
    assert!(out.report().partial);
}

/// The expectations of a partial run's report: (text, holds, the first number of the evidence).
fn expectations(report: &ScenarioReport) -> Vec<(String, bool, f64)> {
    let number = |e: &str| {
        let end = e.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(e.len());
        e[..end].parse().unwrap_or(f64::NAN)
    };
    report.expectations.iter().map(|e| (e.expectation.clone(), e.holds, number(&e.evidence))).collect()
}

/// The three NIC pause-frame storms (`docs/scenarios-nic.md`) run 10 s of virtual time, too long for a debug
/// build; their first 300 ms (520 ms with the switch watchdog, which declares the storm at 500 ms) already
/// decide what they show. a1's receive pipeline stops at 100 ms.
/// Without a watchdog every hop from the ToR to the innocent sender b2 is paused from then on; with the
/// NIC's watchdog (100 ms) every pause ends 100 ms after the stall; with the switch's (200 ms, poll 100 ms)
/// the watchdog declares the storm and the pauses upstream end within 400 ms. Only the expectations on
/// what a flow delivers over the whole 10 s are left out.
#[test]
fn nic_storms_spread_or_are_contained_in_the_first_520_ms() {
    for (name, until_ms) in
        [("nic-storm", "300"), ("nic-storm-nic-wd", "300"), ("nic-storm-switch-wd", "520")]
    {
        let out = OutDir::new(name);
        let file = format!("{SCENARIOS}/{name}.yaml");
        let run = swctl_sim(&[
            &file,
            "--out",
            out.path(),
            "--until-ms",
            until_ms,
            "--resolution-us",
            "10000",
            "--no-plots",
        ]);
        assert_eq!(run.status.code(), Some(1), "{name}: a partial run: {}", text(&run));
        let report = out.report();
        assert!(report.partial, "{name}");
        let all = expectations(&report);
        assert!(all.len() >= 6, "{name}: {all:?}");
        for (what, holds, value) in all {
            if what.contains("delivered over the scenario") {
                continue;
            }
            if name == "nic-storm" && what.contains("paused") && !what.starts_with("t1b") {
                // Paused from the first XOFF (about 1 ms after the stall at 100 ms, a hop 0.84 ms after
                // the one before) to the end of the run, at 300 ms.
                assert!((190.0..=200.0).contains(&value), "{name}: {what}: {value}");
            } else {
                assert!(holds, "{name}: {what}: {value}");
            }
        }
    }
}

/// What `swctl --json headroom` prints, the part compared here.
#[derive(serde::Deserialize, Debug, PartialEq)]
struct Headroom {
    xon: u64,
    xoff: u64,
    size: u64,
}

fn calculator(cable: &str) -> Headroom {
    let out = Command::new(env!("CARGO_BIN_EXE_swctl"))
        .args(["--json", "headroom", "--speed", "100G", "--cable", cable])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The lossless profile of a scenario's switch after loading (NULL profiles computed) and its cable lengths.
fn lossless_profile(name: &str) -> (Headroom, Vec<String>) {
    let s = lossless_controlplane::lab::scenario::Scenario::load(Path::new(&format!("{SCENARIOS}/{name}")))
        .unwrap_or_else(|e| panic!("{name}: {e:#}"));
    let db = &s.topology.switches[0].config;
    let (pg_key, pg) = db.tables["BUFFER_PG"].iter().find(|(k, _)| k.ends_with("|3-4")).unwrap();
    let profile_name = pg["profile"].trim_start_matches("[BUFFER_PROFILE|").trim_end_matches(']');
    let p = &db.tables["BUFFER_PROFILE"][profile_name];
    let field = |f: &str| p[f].parse::<u64>().unwrap_or_else(|e| panic!("{name}: {pg_key} {f}: {e}"));
    let cables = db.tables["CABLE_LENGTH"]["AZURE"].values().cloned().collect();
    (Headroom { xon: field("xon"), xoff: field("xoff"), size: field("size") }, cables)
}

/// The two headroom scenarios differ only in the cable the lossless profile was computed for: the real 300 m
/// (a NULL profile, computed when the scenario loads) and 5 m (written in the file, which must be what the
/// calculator gives). Both run on 300 m cables; every_shipped_scenario_holds_in_virtual_time runs them.
#[test]
fn the_headroom_scenarios_carry_the_calculators_profiles_for_their_stated_cables() {
    let (real, real_cables) = lossless_profile("incast-headroom-300m.yaml");
    let (short, short_cables) = lossless_profile("incast-headroom-short.yaml");
    assert_eq!(real, calculator("300m"));
    assert_eq!(short, calculator("5m"));
    assert!(short.xoff < real.xoff, "{short:?} {real:?}");
    for cables in [real_cables, short_cables] {
        assert_eq!(cables.len(), 33);
        assert!(cables.iter().all(|c| c == "300m"), "{cables:?}");
    }
}

/// `swctl sim run FILE --until-ms MS --threads N` into `out`; the outputs a run writes, read back.
fn run_on_threads(out: &OutDir, file: &str, ms: &str, threads: &str) -> (Vec<Vec<u8>>, String) {
    let run = swctl_sim(&[
        file,
        "--out",
        out.path(),
        "--until-ms",
        ms,
        "--resolution-us",
        "20",
        "--threads",
        threads,
    ]);
    assert!(run.status.code().is_some_and(|c| c <= 1), "{}", text(&run));
    let files = ["scenario.json", "series.csv", "series.json", "estats.json"];
    (files.iter().map(|f| out.read(f)).collect(), text(&run))
}

#[test]
fn a_run_on_threads_is_byte_identical_to_one_on_one_thread() {
    // A generated Clos (40 m cables: 200 ns windows) under its shuffle, PFC and ECMP across the parts;
    // and two shipped scenarios whose steps act across them (apply, stop-host, flush-fdb; a NIC's PFC
    // storm spreading through a Clos of 5 m cables, 25 ns windows).
    let out = OutDir::new("threads");
    let clos = out.0.with_extension("clos");
    let generated = common::swctl(&[
        "topology",
        "clos",
        "--leaves",
        "4",
        "--hosts-per-leaf",
        "2",
        "--spines",
        "2",
        "--speed",
        "25000",
        "--profile",
        concat!(env!("CARGO_MANIFEST_DIR"), "/../configs/profiles/th_balanced.yaml"),
        "--out",
        clos.to_str().unwrap(),
        "--shuffle-ms",
        "1",
    ]);
    assert!(generated.status.success(), "{}", text(&generated));
    let shuffle = clos.join("clos-shuffle.yaml");
    for (file, ms) in [
        (shuffle.to_str().unwrap().to_string(), "1.2"),
        (format!("{SCENARIOS}/flood-deadlock.yaml"), "3"),
        (format!("{SCENARIOS}/nic-storm.yaml"), "2"),
    ] {
        let (one, said) = run_on_threads(&out, &file, ms, "1");
        assert!(said.contains(", 1 thread\n"), "{said}");
        let (three, said) = run_on_threads(&out, &file, ms, "3");
        assert!(said.contains(", 3 threads\n"), "{file} runs as three parts: {said}");
        for (i, name) in ["scenario.json", "series.csv", "series.json", "estats.json"].iter().enumerate() {
            assert!(one[i] == three[i], "{file}: {name} differs between 1 and 3 threads");
        }
        assert!(one[1].len() > 1000, "{file}: the series is not empty");
    }
    let _ = std::fs::remove_dir_all(&clos);
}
