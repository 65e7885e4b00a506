//! `swctl lab pingmesh` end to end: real namespaces, veths, switchd and rocehost processes (needs root and
//! iproute2, as the other lab tests). A running lab of four hosts on one switch: every host probes every
//! other, the matrix is full (n × (n − 1) pairs, every pair answered), its values are plausible for veths
//! and no shorter than the links allow, the heatmap and estats.json are written, the lab's own hosts keep
//! running, and `lab down` leaves nothing. A scenario with `pingmesh:` run by `swctl lab run` leaves the
//! matrix and estats.json in its run directory.

mod common;

use common::{Env, namespaces_of, text};
use lossless_controlplane::lab::status::LabStatus;
use lossless_controlplane::pingmesh::PingmeshMatrix;
use lossless_controlplane::pingmesh::estats::Estats;
use std::sync::atomic::{AtomicU32, Ordering};

const FOUR_HOSTS: &str = r#"
switches:
  sw1:
    config:
      DEVICE_METADATA: { localhost: { mac: "02:4c:53:00:00:01" } }
      PORT:
        Ethernet0: { speed: 1000, mtu: 9100 }
        Ethernet4: { speed: 1000, mtu: 9100 }
        Ethernet8: { speed: 1000, mtu: 9100 }
        Ethernet12: { speed: 1000, mtu: 9100 }
      VLAN: { Vlan10: { vlanid: 10 } }
      VLAN_MEMBER:
        Vlan10|Ethernet0: { tagging_mode: untagged }
        Vlan10|Ethernet4: { tagging_mode: untagged }
        Vlan10|Ethernet8: { tagging_mode: untagged }
        Vlan10|Ethernet12: { tagging_mode: untagged }
hosts:
  h1: { ip: 10.9.7.1/24, attach: "sw1:Ethernet0", pfc: [3] }
  h2: { ip: 10.9.7.2/24, attach: "sw1:Ethernet4", pfc: [3] }
  h3: { ip: 10.9.7.3/24, attach: "sw1:Ethernet8", pfc: [3] }
  h4: { ip: 10.9.7.4/24, attach: "sw1:Ethernet12", pfc: [3] }
"#;

/// A lab name unique to this test process and call.
fn lab_name(tag: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    format!("p{tag}{:x}x{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed))
}

#[test]
fn four_hosts_of_a_running_lab_give_the_full_matrix_and_the_heatmap() {
    let env = Env::new("pingmesh");
    let topology = env.tmp.join("four.yaml");
    std::fs::write(&topology, FOUR_HOSTS).unwrap();
    let lab = lab_name("m");
    let up = env.swctl(&["lab", "up", topology.to_str().unwrap(), "--name", &lab]);
    assert!(up.status.success(), "lab up: {}", text(&up));
    let out_dir = env.tmp.join("out");
    let out = env.swctl(&[
        "lab",
        "pingmesh",
        &lab,
        "--interval-ms",
        "5",
        "--duration-s",
        "1.5",
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "lab pingmesh: {}", text(&out));
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(printed.contains(&format!("Pingmesh (lab {lab})")) && printed.contains("12 pairs"), "{printed}");

    let m: PingmeshMatrix =
        serde_json::from_slice(&std::fs::read(out_dir.join("pingmesh.json")).unwrap()).unwrap();
    assert_eq!(m.hosts, ["h1", "h2", "h3", "h4"]);
    assert_eq!(m.pairs.len(), 4 * 3, "n × (n − 1) ordered pairs");
    for p in &m.pairs {
        // 1.5 s every 5 ms, the last 100 ms left for answers: about 280 pings per pair.
        assert!(p.sent >= 200 && p.sent <= 300, "{p:?}");
        assert!(p.received >= p.sent * 9 / 10, "a lossless lab answers nearly every ping: {p:?}");
        // Physics bound it from below: the ping and the pong each cross a 1 Gb/s port that switchd paces,
        // 98 bytes + 24 of FCS, preamble and gap = 976 ns each.
        assert!(p.rtt.min_ns >= 2 * 976, "{p:?}");
        // Veths, switchd and two rocehosts on one machine (a debug build, other tests running): well
        // under 20 ms at the median.
        assert!(p.rtt.p50_ns < 20_000_000 && p.rtt.p50_ns <= p.rtt.p99_ns, "{p:?}");
        assert!(p.responder_hold.max_ns <= p.rtt.max_ns, "the turnaround is part of the RTT: {p:?}");
    }
    let svg = std::fs::read_to_string(out_dir.join("pingmesh.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("p50 µs") && svg.contains("p99 µs"), "{svg:.300}");
    let e: Estats = serde_json::from_slice(&std::fs::read(out_dir.join("estats.json")).unwrap()).unwrap();
    assert_eq!(e.hosts.len(), 4);
    for h in &e.hosts {
        let sent: u64 = m.pairs.iter().filter(|p| p.from == h.name).map(|p| p.sent).sum();
        assert_eq!(h.tx_probe_frames, sent, "{h:?}");
    }

    // The lab's own hosts answered the pings and still run; down removes the probers' namespaces too.
    let status = env.swctl(&["lab", "status", &lab, "--json"]);
    assert!(status.status.success(), "{}", text(&status));
    let s: Vec<LabStatus> = serde_json::from_slice(&status.stdout).expect("lab status JSON");
    let hosts_alive = s[0].nodes.iter().filter(|n| n.kind == "rocehost" && n.alive).count();
    assert!(s[0].healthy && hosts_alive == 4, "{s:#?}");
    let down = env.swctl(&["lab", "down", &lab]);
    assert!(down.status.success(), "{}", text(&down));
    assert!(namespaces_of(&lab).is_empty());
}

#[test]
fn a_lab_that_is_not_running_is_named() {
    let env = Env::new("pingmesh-none");
    let out = env.swctl(&["lab", "pingmesh", "nosuchlab", "--duration-s", "1"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("lab nosuchlab is not running"), "{}", text(&out));
    let bad = env.swctl(&["lab", "pingmesh", "nosuchlab", "--interval-ms", "0"]);
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--interval-ms 0"), "{}", text(&bad));
}

/// A scenario with `pingmesh:` and one flow, run in a lab (`swctl lab run`): the run directory gets the
/// matrix and estats.json, whose flow statistics match what the sender and receiver did.
#[test]
fn a_lab_run_writes_the_matrix_and_estats_into_its_run_directory() {
    let env = Env::new("pingmesh-run");
    std::fs::write(env.tmp.join("four.yaml"), FOUR_HOSTS).unwrap();
    let scenario = env.tmp.join("pm.yaml");
    std::fs::write(
        &scenario,
        format!(
            "name: {}\nduration-ms: 1000\ntopology: four.yaml\npingmesh: {{ interval-us: 5000 }}\nsteps:\n  - {{ at: 0, traffic: {{ from: h1, to: h3, priority: 3, dscp: 3, rate-mbps: 100 }} }}\nexpect:\n  - psn_gaps: {{ flow: 0, max: 0 }}\n",
            lab_name("r")
        ),
    )
    .unwrap();
    let out = env.swctl(&["lab", "run", scenario.to_str().unwrap(), "--json"]);
    assert!(out.status.success(), "lab run: {}", text(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let run_dir = std::path::PathBuf::from(report["run_dir"].as_str().unwrap());
    let m: PingmeshMatrix =
        serde_json::from_slice(&std::fs::read(run_dir.join("pingmesh.json")).unwrap()).unwrap();
    assert_eq!(m.pairs.len(), 12);
    // Hosts start and stop one after another, so a few pings find no one; most are answered.
    assert!(m.pairs.iter().all(|p| p.received > 0 && p.rtt.min_ns >= 2 * 976), "{m:?}");
    assert!(std::fs::metadata(run_dir.join("pingmesh.svg")).unwrap().len() > 0);
    let e: Estats = serde_json::from_slice(&std::fs::read(run_dir.join("estats.json")).unwrap()).unwrap();
    assert_eq!(e.flows.len(), 1);
    let f = &e.flows[0];
    assert!(f.sender_seen && f.receiver_seen, "{f:?}");
    assert_eq!((f.from.as_str(), f.to.as_str()), ("h1", "h3"));
    // 100 Mb/s for about a second on an uncongested 1 Gb/s port: nothing lost in the network (a loaded
    // machine may still time out and resend, which the counters must then show on both sides).
    assert!(f.sent_bytes > 8_000_000 && f.sent_bytes < 16_000_000, "{f:?}");
    assert_eq!(f.psn_gaps, 0, "{f:?}");
    assert!(f.acked_bytes <= f.received_bytes && f.received_bytes <= f.sent_bytes, "{f:?}");
    assert!(f.sent_bytes - f.retransmitted_bytes >= f.received_bytes, "{f:?}");
    assert_eq!(f.retransmitted_packets > 0, f.timeouts + f.naks_received > 0, "{f:?}");
    assert!(f.message_completion.count > 0 && f.packet_latency.count > 0, "{f:?}");
    assert_eq!(f.rtt, Some(m.pair("h1", "h3").unwrap().rtt));
}
