//! The flooding deadlock end to end (the real binary): `swctl deadlock-check` on the paper's topology
//! (exit 0 with drop-not-flood, 1 with flooding, 2 for a file it cannot read), and `swctl sim run` of
//! configs/scenarios/flood-deadlock.yaml, whose time series must show a deadlock and not a slow drain:
//! the four egress queues of the cycle hold the same frames, paused, from before the trigger stops to
//! the end of the run; and a throughput window the run does not reach fails instead of reading zero.

mod common;

use common::{swctl, text};
use lossless_controlplane::deadlock::Analysis;
use lossless_controlplane::deadlock::graph::Via;
use std::path::PathBuf;

const CONFIGS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../configs");

/// A fresh directory, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("lossless-deadlock-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    fn file(&self, name: &str) -> String {
        self.0.join(name).to_str().unwrap().to_owned()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The paper's topology with both ToRs flooding lossless packets whose MAC is missing.
fn flooding_topology(dir: &TempDir) -> String {
    let text = std::fs::read_to_string(format!("{CONFIGS}/topologies/flood-deadlock.yaml")).unwrap();
    let text = text
        .replace(
            "      SWITCH: { switch: { ecmp_hash_seed: 1 } }",
            "      SWITCH: { switch: { ecmp_hash_seed: 1, lossless_fdb_miss_action: flood } }",
        )
        .replace(
            "      DEVICE_METADATA: { localhost: { mac: \"02:4c:53:00:00:0a\", hostname: t0a } }",
            "      SWITCH: { switch: { lossless_fdb_miss_action: flood } }\n      DEVICE_METADATA: { localhost: { mac: \"02:4c:53:00:00:0a\", hostname: t0a } }",
        );
    assert_eq!(text.matches("lossless_fdb_miss_action: flood").count(), 2, "the topology's text changed");
    let file = dir.file("flooding.yaml");
    std::fs::write(&file, text).unwrap();
    file
}

#[test]
fn deadlock_check_exit_status_says_cycle_or_not_or_bad_input() {
    let dir = TempDir::new("check");
    let drop = swctl(&["deadlock-check", &format!("{CONFIGS}/topologies/flood-deadlock.yaml")]);
    assert_eq!(drop.status.code(), Some(0), "{}", text(&drop));
    assert!(text(&drop).contains("0 cycle(s)"), "{}", text(&drop));

    let flood = swctl(&["deadlock-check", &flooding_topology(&dir)]);
    assert_eq!(flood.status.code(), Some(1), "{}", text(&flood));
    let out = text(&flood);
    assert!(
        out.contains(
            "t0a:Ethernet0/p3 -> t1b:Ethernet0/p3 -> t0b:Ethernet4/p3 -> t1a:Ethernet4/p3 -> t0a:Ethernet0/p3"
        ),
        "{out}"
    );
    assert!(out.contains("t0b:Ethernet4/p3 -> t1a:Ethernet4/p3: flooded"), "{out}");

    let json = swctl(&["--json", "deadlock-check", &flooding_topology(&dir)]);
    assert_eq!(json.status.code(), Some(1));
    let report: Analysis = serde_json::from_slice(&json.stdout).expect("a deadlock report in JSON");
    assert!(report.cycles.len() >= 4, "{}", report.describe());
    assert_eq!(report.cycles[0].hops[0].via, Via::Flooded);

    let missing = swctl(&["deadlock-check", &dir.file("missing.yaml")]);
    assert_eq!(missing.status.code(), Some(2), "{}", text(&missing));
    assert!(text(&missing).contains("missing.yaml"), "{}", text(&missing));
    let bad = dir.file("bad.yaml");
    std::fs::write(&bad, "switches: { sw1: { config: { PORT: { Ethernet0: { speed: fast } } } } }\n")
        .unwrap();
    let bad = swctl(&["deadlock-check", &bad]);
    assert_eq!(bad.status.code(), Some(2), "{}", text(&bad));
    assert!(text(&bad).contains("PORT|Ethernet0|speed"), "{}", text(&bad));
}

/// `(time µs, value)` points of one series of a run's series.csv.
fn series(csv: &str, name: &str, node: &str, port: &str, index: &str) -> Vec<(f64, f64)> {
    csv.lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f[1] == name && f[2] == node && f[3] == port && f[4] == index)
                .then(|| (f[0].parse().unwrap(), f[5].parse().unwrap()))
        })
        .collect()
}

#[test]
fn the_flooding_deadlock_holds_frames_that_can_never_drain() {
    let dir = TempDir::new("sim");
    let file = format!("{CONFIGS}/scenarios/flood-deadlock.yaml");
    let run = swctl(&["sim", "run", &file, "--out", &dir.file("out"), "--no-plots"]);
    assert!(run.status.success(), "{}", text(&run));
    // The static check warns as soon as the apply steps have turned flooding on.
    assert!(String::from_utf8_lossy(&run.stderr).contains("cyclic buffer dependenc"), "{}", text(&run));
    let csv = std::fs::read_to_string(dir.file("out/series.csv")).unwrap();
    // The trigger's senders stop at 5 ms; the run ends at 110 ms. The egress queues of the cycle (each
    // ToR's uplink to the leaf its flooded copies climb to, each leaf's port down to the other ToR):
    // paused by the peer and holding frames from before 5 ms to the end, and holding the same number of
    // frames over the last 100 ms — nothing leaves, nothing arrives.
    for (node, port) in
        [("t0a", "Ethernet4"), ("t1b", "Ethernet4"), ("t0b", "Ethernet0"), ("t1a", "Ethernet0")]
    {
        let paused = series(&csv, "pfc_paused", node, port, "3");
        let since = paused.iter().rposition(|&(_, v)| v == 0.0).map_or(0.0, |i| paused[i + 1].0);
        assert!(since < 5000.0, "{node} {port} paused only from {since} µs: {paused:?}");
        assert_eq!(paused.last().map(|p| p.1), Some(1.0), "{node} {port}");
        let frames = series(&csv, "queue_frames", node, port, "3");
        let after: Vec<f64> = frames.iter().filter(|(t, _)| *t >= 10_000.0).map(|p| p.1).collect();
        assert!(!after.is_empty() && after[0] > 0.0, "{node} {port}: {frames:?}");
        assert!(after.iter().all(|&v| v == after[0]), "{node} {port} drained or filled: {frames:?}");
    }
    // The innocent senders are paused to the end as well.
    for host in ["s3", "s6"] {
        let paused = series(&csv, "pfc_paused", host, "eth", "3");
        assert_eq!(paused.last().map(|p| p.1), Some(1.0), "{host}: {paused:?}");
    }
}

#[test]
fn a_throughput_window_the_run_does_not_reach_fails_rather_than_reads_zero() {
    // Cut at 4 ms, the 6–10 ms window of "throughput ≤ 0" is never measured: it must not pass vacuously.
    let dir = TempDir::new("cut");
    let file = format!("{CONFIGS}/scenarios/flood-deadlock.yaml");
    let run = swctl(&["sim", "run", &file, "--out", &dir.file("out"), "--no-plots", "--until-ms", "4"]);
    assert_eq!(run.status.code(), Some(1), "{}", text(&run));
    let out = text(&run);
    assert!(
        out.contains(
            "[FAIL] flow 2+3 acknowledged throughput (Mb/s) from 6 to 10 ms ≤ 0: the run ended before 10 ms"
        ),
        "{out}"
    );
    assert!(out.contains("[PASS] flow 2+3 acknowledged throughput (Mb/s) from 0 to 1 ms ≥ 19000"), "{out}");
}
