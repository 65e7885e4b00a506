//! Pingmesh in virtual time (`swctl sim run` of configs/scenarios/pingmesh-incast.yaml, the real binary):
//! the full n × (n − 1) latency matrix, a congested path's p99 far above an idle one's, the idle RTT no
//! shorter than the links allow, the heatmap and estats.json written, and all of it byte-identical for a seed.

use lossless_controlplane::pingmesh::PingmeshMatrix;
use lossless_controlplane::pingmesh::estats::Estats;
use std::path::PathBuf;
use std::process::Command;

const SCENARIO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../configs/scenarios/pingmesh-incast.yaml");

/// A fresh output directory, removed when dropped.
struct OutDir(PathBuf);

impl OutDir {
    fn new(name: &str) -> OutDir {
        let dir = std::env::temp_dir().join(format!("lossless-pingmesh-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        OutDir(dir)
    }

    fn read(&self, name: &str) -> Vec<u8> {
        std::fs::read(self.0.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
    }
}

impl Drop for OutDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn run(out: &OutDir) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_swctl"))
        .args(["sim", "run", SCENARIO, "--no-plots", "--out"])
        .arg(&out.0)
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success(), "{text}");
    text
}

#[test]
fn the_matrix_is_full_and_the_congested_path_has_the_higher_p99() {
    let out = OutDir::new("matrix");
    let text = run(&out);
    assert!(text.contains("Pingmesh (simulation, seed 1)") && text.contains("12 pairs"), "{text}");
    let m: PingmeshMatrix = serde_json::from_slice(&out.read("pingmesh.json")).unwrap();
    assert_eq!(m.hosts, ["h1", "h2", "h3", "h4"]);
    assert_eq!(m.pairs.len(), 4 * 3, "n × (n − 1) ordered pairs");
    for p in &m.pairs {
        // 2 ms of probing every 20 µs: 100 pings per pair, every one answered (lossless, nothing dropped).
        assert_eq!((p.sent, p.received, p.lost), (100, 100, 0), "{p:?}");
    }
    // Link physics bound the idle RTT from below: two hops each way, each a 98-byte probe (+24 bytes of
    // FCS, preamble and gap) at 100 Gb/s = 9.76 ns and a 40 m cable = 200 ns; 4 × 209.76 = 839.04 ns.
    let idle = m.pair("h4", "h1").unwrap();
    assert!(idle.rtt.min_ns >= 839 && idle.rtt.p99_ns < 5_000, "{idle:?}");
    // h1 and h2 send a 2:1 incast to h3: probes to h3 wait in its egress queue 3 (hundreds of 4 KB frames,
    // about 0.34 µs each at 100 Gb/s), the idle pair's do not.
    let congested = m.pair("h4", "h3").unwrap();
    assert!(congested.rtt.p99_ns > 20 * idle.rtt.p99_ns, "congested {congested:?} vs idle {idle:?}");
    assert!(congested.rtt.p99_ns > 50_000, "{congested:?}");
    let svg = String::from_utf8(out.read("pingmesh.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("p99 µs") && svg.contains(">\nh4\n<"), "{svg:.300}");

    let e: Estats = serde_json::from_slice(&out.read("estats.json")).unwrap();
    assert_eq!(e.flows.len(), 2);
    for f in &e.flows {
        assert!(f.sender_seen && f.receiver_seen, "{f:?}");
        assert_eq!(f.sent_bytes, f.received_bytes, "nothing lost: {f:?}");
        assert_eq!(f.retransmitted_packets, 0, "{f:?}");
        // The incast's congestion shows in the flow's counters: CE marks, CNPs both ways, PFC pauses.
        assert!(f.ce_packets > 0 && f.cnps_received > 0 && f.cnps_sent > 0 && f.pause_ns > 0, "{f:?}");
        // Completion times queue behind the incast too: far above the idle RTT.
        assert!(
            f.message_completion.count > 0 && f.message_completion.p50_ns > 10 * idle.rtt.p99_ns,
            "{f:?}"
        );
        let rtt = f.rtt.expect("probes ran between the flow's hosts");
        assert_eq!(rtt, m.pair(&f.from, &f.to).unwrap().rtt);
    }
    assert_eq!(e.hosts.len(), 4);
}

#[test]
fn the_matrix_and_estats_are_byte_identical_for_a_seed() {
    let (a, b) = (OutDir::new("det-a"), OutDir::new("det-b"));
    run(&a);
    run(&b);
    for f in ["pingmesh.json", "estats.json", "pingmesh.svg"] {
        assert!(a.read(f) == b.read(f), "{f} differs between two runs of one seed");
    }
}
