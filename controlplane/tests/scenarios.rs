//! The shipped scenarios (`configs/scenarios/*.yaml`) end to end: `swctl lab run FILE --json` brings up real
//! namespaces, switchd and rocehost processes, runs the timeline and checks the expectations; these tests
//! assert the report. Needs root and iproute2 (as CI has).
//!
//! - every scenario file validates (`--check`);
//! - pfc-storm: the watchdog detects the storm within detection_time + 2 polls (+ slack, see the file) and
//!   the innocent flow keeps its goodput;
//! - arp-mac-missing: with drop-not-flood, packets to the dead server are dropped at the ToR
//!   (FDB_MISS_LOSSLESS) and no copy reaches the other ports of the VLAN;
//! - arp-mac-missing-flood: the same with flooding (pushed by an `apply` step): copies on the other ports
//!   and PFC pauses reaching a sender that never talked to the dead server;
//! - incast-dcqcn: both incasts lossless, CNPs in both, only the DCQCN senders cut their rate, and with
//!   DCQCN time-scaled to the lab's rate (rocehost --dcqcn-time-scale) they are paused far less, send
//!   fewer PFC frames, hold a shorter queue and end near their fair share;
//! - an `apply` the switch refuses fails the scenario with the switch's error and leaves nothing behind.
//!
//! Each test uses its own run directory (`LOSSLESS_LAB_DIR`); whatever a failed test leaves is removed
//! with `swctl lab down --force`. The scenario runs take a file lock, so that at most one of them loads
//! the machine at a time (a 2-core CI runner also runs other tests).

use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

const SCENARIOS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../configs/scenarios");

#[test]
fn scenario_files_validate() {
    let names = ["pfc-storm.yaml", "arp-mac-missing.yaml", "arp-mac-missing-flood.yaml", "incast-dcqcn.yaml"];
    for name in names {
        let out = Command::new(env!("CARGO_BIN_EXE_swctl"))
            .args(["lab", "run", "--check", &format!("{SCENARIOS}/{name}")])
            .output()
            .unwrap();
        assert!(out.status.success(), "{name}: {}", text(&out));
        assert!(String::from_utf8_lossy(&out.stdout).contains("valid"), "{name}: {}", text(&out));
    }
}

mod common;

use common::{namespaces_of, text};

/// A test's own run directory, held with the scenario lock; dropping it removes whatever a failed run left.
struct Env {
    // Field order: the labs go before the lock is released.
    dir: common::Env,
    /// Held while the scenario runs.
    _lock: std::fs::File,
}

impl Env {
    fn new() -> Env {
        let lock = std::fs::File::create(std::env::temp_dir().join("lossless-scenario-tests.lock")).unwrap();
        // Released when the file closes (also when the test process dies).
        let locked = unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&lock), libc::LOCK_EX) };
        assert_eq!(locked, 0, "flock: {}", std::io::Error::last_os_error());
        Env { dir: common::Env::new("scntest"), _lock: lock }
    }

    fn swctl(&self, args: &[&str]) -> Output {
        self.dir.swctl(args)
    }

    /// `swctl lab run FILE --json`: the report, after checking that the lab is gone.
    fn run(&self, file: &Path) -> (Output, Value) {
        let out = self.swctl(&["lab", "run", file.to_str().unwrap(), "--json"]);
        let report: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{}: no JSON report ({e}): {}", file.display(), text(&out)));
        let lab = report["lab"].as_str().unwrap();
        assert_eq!(namespaces_of(lab), Vec::<String>::new(), "namespaces of {lab} left");
        assert!(!self.dir.base.join(lab).join("state.json").exists(), "the state of {lab} is left");
        (out, report)
    }
}

/// Every expectation of the report holds, else the report in the message.
fn assert_all_hold(out: &Output, report: &Value) {
    let failed: Vec<&Value> =
        report["expectations"].as_array().unwrap().iter().filter(|e| e["holds"] != true).collect();
    assert!(failed.is_empty(), "failed: {failed:#?}\nreport: {report:#}\n{}", text(out));
    assert_eq!(report["ok"], true);
    assert!(out.status.success(), "{}", text(out));
}

fn counter(report: &Value, switch: &str, kind: &str, key: &str) -> u64 {
    report["switches"][switch][kind][key].as_u64().unwrap_or(0)
}

fn flow(report: &Value, index: usize, key: &str) -> f64 {
    report["flows"][index][key].as_f64().unwrap_or_else(|| panic!("flow {index} {key}: {report:#}"))
}

#[test]
fn pfc_storm_is_contained_by_the_watchdog() {
    let env = Env::new();
    let (out, report) = env.run(&Path::new(SCENARIOS).join("pfc-storm.yaml"));
    assert_all_hold(&out, &report);
    let events = report["events"].as_array().unwrap();
    assert!(
        events
            .iter()
            .any(|e| e["kind"] == "pfc_storm_detected" && e["port"] == "Ethernet4" && e["queue"] == 3),
        "{report:#}"
    );
    assert!(report["storms"][0]["first_seen_switch_ns"].as_u64().is_some(), "{report:#}");
}

#[test]
fn arp_present_mac_missing_with_drop_not_flood_drops_at_the_tor() {
    let env = Env::new();
    let (out, report) = env.run(&Path::new(SCENARIOS).join("arp-mac-missing.yaml"));
    assert_all_hold(&out, &report);
    let actions: Vec<(&str, &str)> = report["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (a["action"].as_str().unwrap(), a["result"].as_str().unwrap()))
        .collect();
    assert_eq!(
        actions,
        [("stop-host h3", "rocehost stopped"), ("flush-fdb t0 Ethernet4", "1 entry flushed")],
        "{report:#}"
    );
    assert!(counter(&report, "t0", "drop_reasons", "FDB_MISS_LOSSLESS") > 0, "{report:#}");
    // No lossless copy anywhere else in the VLAN: h4's port carried nothing on queue 3.
    assert!(report["switches"]["t0"]["queue_depth_frames"].get("Ethernet8|3").is_none(), "{report:#}");
}

#[test]
fn arp_present_mac_missing_with_flooding_spreads_pauses() {
    let env = Env::new();
    let (out, report) = env.run(&Path::new(SCENARIOS).join("arp-mac-missing-flood.yaml"));
    assert_all_hold(&out, &report);
    let apply = &report["actions"][0];
    assert_eq!(apply["action"], "apply an inline config to t0 (merge)", "{report:#}");
    assert!(apply["result"].as_str().unwrap().starts_with("generation "), "{report:#}");
    assert_eq!(counter(&report, "t0", "drop_reasons", "FDB_MISS_LOSSLESS"), 0, "{report:#}");
    // The pauses reach h2, whose flow to h5 never went near h3 or h4.
    assert!(counter(&report, "t1", "pfc_tx", "Ethernet4|3") > 0, "{report:#}");
    assert!(flow(&report, 1, "pause_ms") > 0.0, "{report:#}");
}

#[test]
fn incast_with_and_without_dcqcn() {
    let env = Env::new();
    let file = Path::new(SCENARIOS).join("incast-dcqcn.yaml");
    let (out, report) = env.run(&file);
    assert_all_hold(&out, &report);
    for i in 0..4 {
        assert!(flow(&report, i, "goodput_mbps") > 0.0, "flow {i}: {report:#}");
        assert!(flow(&report, i, "cnps_received") > 0.0, "flow {i}: {report:#}");
    }
    assert!(report["flows"][0]["dcqcn_rate_mbps"].is_null(), "{report:#}");
    // The expectations of the file, restated so that loosening the file does not go unnoticed: with DCQCN
    // the senders are paused at most 0.4× as long, the switch sends at most half the PFC frames, the
    // bottleneck queue is at most 0.7× as deep, and the DCQCN rates end between 10 and 150 Mb/s (line 200).
    let pause = |a: usize, b: usize| flow(&report, a, "pause_ms") + flow(&report, b, "pause_ms");
    assert!(pause(0, 1) > 1_500.0 && pause(2, 3) <= 0.4 * pause(0, 1), "pause time: {report:#}");
    let pfc = |a: &str, b: &str| counter(&report, "sw1", "pfc_tx", a) + counter(&report, "sw1", "pfc_tx", b);
    let (pfc_off, pfc_on) = (pfc("Ethernet0|3", "Ethernet4|3"), pfc("Ethernet12|3", "Ethernet16|3"));
    assert!(pfc_off >= 500 && pfc_on * 2 <= pfc_off, "PFC frames {pfc_on} vs {pfc_off}: {report:#}");
    let depth = |port: &str| report["switches"]["sw1"]["queue_depth_frames"][port]["mean"].as_f64();
    let (depth_off, depth_on) = (depth("Ethernet8|3").unwrap_or(0.0), depth("Ethernet20|3").unwrap_or(0.0));
    assert!(depth_off > 0.0 && depth_on <= 0.7 * depth_off, "queue depth: {report:#}");
    for i in [2, 3] {
        let rate = flow(&report, i, "dcqcn_rate_mbps");
        assert!((10.0..=150.0).contains(&rate), "flow {i} ends at {rate} Mb/s: {report:#}");
    }
    // The hosts' DCQCN options reached their rocehost (its start-up line, in the log the run leaves).
    let lab = report["lab"].as_str().unwrap();
    for h in ["h3", "h4", "h5", "h6"] {
        let log =
            std::fs::read_to_string(env.dir.base.join(lab).join(format!("{h}.log"))).unwrap_or_default();
        assert!(log.contains("dcqcn_time_scale=500 cnp_interval_ns=0"), "{h}.log: {log}");
    }
}

#[test]
fn an_apply_the_switch_refuses_fails_the_scenario() {
    let env = Env::new();
    let file = env.dir.tmp.join("refused.yaml");
    std::fs::write(
        &file,
        r#"
name: refused
duration-ms: 300
topology:
  switches:
    sw1:
      config:
        PORT: { Ethernet0: { speed: 1000, mtu: 9100 } }
        VLAN: { Vlan10: { vlanid: 10 } }
        VLAN_MEMBER: { "Vlan10|Ethernet0": { tagging_mode: untagged } }
  hosts:
    h1: { ip: 10.9.0.1/24, attach: "sw1:Ethernet0" }
steps:
  - { at: 100, apply: { switch: sw1, config: { PORT: { Ethernet0: { speed: fast } } } } }
"#,
    )
    .unwrap();
    let out = env.swctl(&["lab", "run", file.to_str().unwrap(), "--json"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{}", text(&out));
    assert!(
        stderr
            .contains("steps[0] (at 100 ms): apply to sw1 (an inline config): configuration refused: PORT|Ethernet0|speed"),
        "{}",
        text(&out)
    );
    // The lab (refused-<swctl's pid>) is gone: namespaces ll-refused-*, its run directory.
    assert_eq!(namespaces_of("refused"), Vec::<String>::new());
    let dirs: Vec<_> = std::fs::read_dir(&env.dir.base).map(|d| d.flatten().collect()).unwrap_or_default();
    assert!(dirs.is_empty(), "left in {}: {dirs:?}", env.dir.base.display());
}
