//! `swctl lab` end to end: real namespaces, veths, switchd and rocehost processes. Needs root and iproute2
//! (as CI has). Every test uses its own run directory (`LOSSLESS_LAB_DIR`) and lab names unique to the
//! test process, so tests run in parallel with each other and with real labs.
//!
//! - up then down leaves nothing: no namespace with the lab's prefix, no process, no socket, no run dir;
//!   the commands `up` suggests run as printed;
//! - a containerlab topology (labelled `linux` nodes, a startup-config) comes up as a lab;
//! - a lab whose switchd was killed shows as dead in `lab status` and `lab down` still removes everything,
//!   as it does for a hand-made half-finished state and for an `up` interrupted by Ctrl-C;
//! - topology errors name what is wrong and create nothing;
//! - `lab demo --json` backs its claims: zero lossless loss, PFC sent on both ingress ports, lossy drops;
//! - two labs of one topology coexist;
//! - the lab of a test process killed outright is taken down by the next test process.

use lossless_controlplane::lab::demo::summary::DemoSummary;
use lossless_controlplane::lab::state::Phase;
use lossless_controlplane::lab::status::LabStatus;
use lossless_dataplane::io::netns::exec_in;
use serde_json::Value;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// A topology small enough for every test: one switch with two ports, two hosts (one by `attach`).
const SMALL: &str = r#"
switches:
  sw1:
    config:
      DEVICE_METADATA: { localhost: { mac: "02:4c:53:00:00:01" } }
      PORT: { Ethernet0: { speed: 1000, mtu: 9100 }, Ethernet4: { speed: 1000, mtu: 9100 } }
      VLAN: { Vlan10: { vlanid: 10 } }
      VLAN_MEMBER:
        Vlan10|Ethernet0: { tagging_mode: untagged }
        Vlan10|Ethernet4: { tagging_mode: untagged }
hosts:
  h1: { ip: 10.9.0.1/24, attach: "sw1:Ethernet0" }
  h2: { ip: 10.9.0.2/24, pfc: [3] }
links:
  - sw1:Ethernet4 -- h2:eth0
"#;

mod common;

use common::{Env, namespaces_of, text};

impl Env {
    /// A lab name unique to this test process and call.
    fn name(&self, tag: &str) -> String {
        static N: AtomicU32 = AtomicU32::new(0);
        format!("t{tag}{:x}x{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed))
    }

    fn write(&self, file: &str, text: &str) -> PathBuf {
        let path = self.tmp.join(file);
        std::fs::write(&path, text).unwrap();
        path
    }

    fn run_dir(&self, lab: &str) -> PathBuf {
        self.base.join(lab)
    }

    fn state(&self, lab: &str) -> Value {
        serde_json::from_str(&std::fs::read_to_string(self.run_dir(lab).join("state.json")).unwrap()).unwrap()
    }

    fn status(&self, lab: &str) -> LabStatus {
        let out = self.swctl(&["lab", "status", lab, "--json"]);
        assert!(out.status.success(), "{}", text(&out));
        let mut labs: Vec<LabStatus> = serde_json::from_slice(&out.stdout).expect("lab status JSON");
        assert_eq!(labs.len(), 1, "lab status {lab} lists one lab: {labs:#?}");
        labs.remove(0)
    }
}

/// (pid, start time) of every process the state records.
fn recorded_processes(state: &Value) -> Vec<(u32, u64)> {
    state["processes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| Some((p["pid"]["pid"].as_u64()? as u32, p["pid"]["start_time"].as_u64()?)))
        .collect()
}

/// The process runs (not exited, not a zombie, pid not reused).
fn alive(pid: u32, start_time: u64) -> bool {
    lossless_dataplane::process::Pid { pid, start_time }.alive()
}

/// Nothing of the lab is left: namespaces, processes, sockets, run directory.
fn assert_gone(env: &Env, lab: &str, state: &Value) {
    assert_eq!(namespaces_of(lab), Vec::<String>::new(), "namespaces of {lab} left");
    for (pid, start) in recorded_processes(state) {
        assert!(!alive(pid, start), "process {pid} of {lab} still runs");
    }
    for sw in state["switches"].as_array().unwrap() {
        let socket = sw["socket"].as_str().unwrap();
        assert!(!Path::new(socket).exists(), "{socket} left");
    }
    assert!(!env.run_dir(lab).exists(), "{} left", env.run_dir(lab).display());
}

fn up(env: &Env, topology: &Path, lab: &str) -> Output {
    let out = env.swctl(&["lab", "up", topology.to_str().unwrap(), "--name", lab]);
    assert!(out.status.success(), "lab up {lab}: {}", text(&out));
    out
}

#[test]
fn up_then_down_leaves_nothing() {
    let env = Env::new("labtest");
    let topology = env.write("small.yaml", SMALL);
    let lab = env.name("u");
    let out = env.swctl(&["lab", "up", topology.to_str().unwrap(), "--name", &lab, "--metrics", "9101"]);
    assert!(out.status.success(), "lab up {lab}: {}", text(&out));
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(printed.contains(&format!("swctl --lab {lab} --switch sw1")), "{printed}");
    assert!(printed.contains(&format!("unix:{}/sw1.sock", env.run_dir(&lab).display())), "{printed}");
    // What `lab up` suggests works as printed: swctl by the path it was run by (a cargo build leaves it
    // off PATH), the switch's metrics from its namespace (`--metrics`; curl), ping from a host's namespace
    // (iputils-ping; scripts/setup.sh installs both).
    let swctl = env!("CARGO_BIN_EXE_swctl");
    let suggested: Vec<&str> = printed
        .lines()
        .skip_while(|l| *l != "Reach it:")
        .skip(1)
        .map(|l| l.split('#').next().unwrap().trim())
        .filter(|l| !l.contains(" lab status ") && !l.contains(" lab down "))
        .collect();
    assert_eq!(suggested.len(), 4, "{printed}");
    for line in suggested {
        let words: Vec<&str> = line.split_whitespace().collect();
        assert!(words[0] == swctl || words[0] == "ip", "{line}");
        let out =
            Command::new(words[0]).args(&words[1..]).env("LOSSLESS_LAB_DIR", &env.base).output().unwrap();
        assert!(out.status.success(), "{line}: {}", text(&out));
        if line.contains("/metrics") {
            let body = String::from_utf8_lossy(&out.stdout);
            assert!(body.contains("lossless_port_rx_packets_total{port=\"Ethernet4\"}"), "{line}: {body}");
        }
    }

    let state = env.state(&lab);
    assert_eq!(state["phase"], "up");
    let mut names = namespaces_of(&lab);
    names.sort();
    assert_eq!(names, [format!("ll-{lab}-h1"), format!("ll-{lab}-h2"), format!("ll-{lab}-sw1")]);
    let status = env.status(&lab);
    assert!(status.healthy, "{status:#?}");
    assert_eq!(status.nodes.len(), 3);

    // The host side: addresses and MACs on the veths, the switch side bound to its ports.
    let addr = Command::new("ip")
        .args(["-n", &format!("ll-{lab}-h2"), "-o", "addr", "show", "dev", "eth0"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&addr.stdout).contains("10.9.0.2/24"));
    let link = Command::new("ip")
        .args(["-n", &format!("ll-{lab}-sw1"), "-o", "link", "show", "dev", "Ethernet0"])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&link.stdout).contains("mtu 9100"),
        "{}",
        String::from_utf8_lossy(&link.stdout)
    );

    // The configuration was pushed, and --lab/--switch NAME reach the switch.
    let get = env.swctl(&["--lab", &lab, "--switch", "sw1", "get"]);
    assert!(
        get.status.success() && String::from_utf8_lossy(&get.stdout).contains("Vlan10"),
        "{}",
        text(&get)
    );
    let pfc = env.swctl(&["--lab", &lab, "show", "pfc", "counters"]);
    assert!(
        pfc.status.success() && String::from_utf8_lossy(&pfc.stdout).contains("Ethernet4"),
        "{}",
        text(&pfc)
    );
    let wrong = env.swctl(&["--lab", &lab, "--switch", "leaf9", "get"]);
    assert!(
        String::from_utf8_lossy(&wrong.stderr)
            .contains(&format!("lab {lab} has no switch leaf9 (switches: sw1)"))
    );

    // Up again under the same name is refused, naming the way out.
    let again = env.swctl(&["lab", "up", topology.to_str().unwrap(), "--name", &lab]);
    assert!(!again.status.success());
    assert!(
        String::from_utf8_lossy(&again.stderr).contains(&format!("swctl lab down {lab}")),
        "{}",
        text(&again)
    );

    let down = env.swctl(&["lab", "down", &lab]);
    assert!(down.status.success(), "{}", text(&down));
    let said = String::from_utf8_lossy(&down.stdout);
    assert!(
        said.contains("stopped switchd sw1") && said.contains(&format!("deleted namespace ll-{lab}-h1")),
        "{said}"
    );
    assert_gone(&env, &lab, &state);
    assert!(String::from_utf8_lossy(&env.swctl(&["lab", "status"]).stdout).contains("no labs"));
}

#[test]
fn a_killed_switchd_shows_in_status_and_down_still_cleans_up() {
    let env = Env::new("labtest");
    let lab = env.name("k");
    let topology = env.write("small.yaml", &format!("name: {lab}\n{SMALL}"));
    let out = env.swctl(&["lab", "up", topology.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    let state = env.state(&lab);
    let switchd = state["processes"].as_array().unwrap().iter().find(|p| p["kind"] == "switchd").unwrap();
    let pid = switchd["pid"]["pid"].as_u64().unwrap().to_string();
    assert!(Command::new("kill").args(["-KILL", &pid]).status().unwrap().success());
    let deadline = Instant::now() + Duration::from_secs(5);
    while alive(pid.parse().unwrap(), switchd["pid"]["start_time"].as_u64().unwrap()) {
        assert!(Instant::now() < deadline, "switchd survived SIGKILL");
        std::thread::sleep(Duration::from_millis(10));
    }

    let status = env.status(&lab);
    assert!(!status.healthy);
    let sw = status.nodes.iter().find(|n| n.node == "sw1").unwrap();
    assert_eq!((sw.alive, sw.answering), (false, false), "{sw:#?}");
    let table = String::from_utf8_lossy(&env.swctl(&["lab", "status"]).stdout).into_owned();
    let row = table.lines().find(|l| l.trim_start().starts_with("sw1")).unwrap_or_default();
    assert!(table.contains("DEGRADED") && row.contains("dead") && row.contains("gRPC down"), "{table}");
    let h1 = table.lines().find(|l| l.trim_start().starts_with("h1")).unwrap_or_default();
    assert!(h1.contains("alive") && h1.contains("ready"), "{table}");

    // SIGKILL left the socket behind; down by the topology file removes it with everything else.
    assert!(Path::new(state["switches"][0]["socket"].as_str().unwrap()).exists());
    let down = env.swctl(&["lab", "down", topology.to_str().unwrap()]);
    assert!(down.status.success(), "{}", text(&down));
    assert_gone(&env, &lab, &state);
}

#[test]
fn down_cleans_a_half_finished_state() {
    // What a crash between recording and finishing leaves: a namespace recorded and created, another
    // recorded but never created, a process recorded with its pid, one without (caught inside its
    // namespace), and an owner that is gone.
    let env = Env::new("labtest");
    let lab = env.name("h");
    let dir = env.run_dir(&lab);
    std::fs::create_dir_all(&dir).unwrap();
    let ns = format!("ll-{lab}-sw1");
    assert!(Command::new("ip").args(["netns", "add", &ns]).status().unwrap().success());
    let spawn_sleep = || {
        exec_in(&ns, "sleep")
            .arg("600")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap()
    };
    let mut recorded = spawn_sleep();
    let mut unrecorded = spawn_sleep();
    let stat = |pid: u32| -> u64 {
        let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        s[s.rfind(')').unwrap() + 1..].split_whitespace().nth(19).unwrap().parse().unwrap()
    };
    let (pid, start) = (recorded.id(), stat(recorded.id()));
    std::fs::write(dir.join("sw1.sock"), b"").unwrap();
    let state = serde_json::json!({
        "name": lab, "topology": "test", "phase": "starting", "created_unix_s": 0,
        "owner": { "pid": u32::MAX - 1, "start_time": 1 },
        "namespaces": [ns, format!("ll-{lab}-h1")],
        "switches": [{ "name": "sw1", "namespace": ns, "endpoint": format!("unix:{}/sw1.sock", dir.display()),
                       "socket": dir.join("sw1.sock"), "ports": [] }],
        "hosts": [],
        "processes": [
            { "node": "sw1", "kind": "switchd", "namespace": ns, "pid": { "pid": pid, "start_time": start },
              "command": ["sleep", "600"], "log": dir.join("sw1.log") },
            { "node": "h1", "kind": "rocehost", "namespace": format!("ll-{lab}-h1"), "pid": null,
              "command": [], "log": dir.join("h1.log") }
        ]
    });
    std::fs::write(dir.join("state.json"), serde_json::to_vec(&state).unwrap()).unwrap();

    let status = env.status(&lab);
    assert_eq!((status.phase, status.healthy), (Phase::Starting, false));
    let down = env.swctl(&["lab", "down", &lab]);
    assert!(down.status.success(), "{}", text(&down));
    let said = String::from_utf8_lossy(&down.stdout);
    assert!(said.contains(&format!("stopped switchd sw1 (pid {pid})")), "{said}");
    assert!(said.contains(&format!("process {} in {ns}", unrecorded.id())), "{said}");
    let _ = (recorded.wait(), unrecorded.wait());
    assert_gone(&env, &lab, &state);
}

#[test]
fn an_interrupted_up_removes_what_it_created() {
    let env = Env::new("labtest");
    let topology = env.write("small.yaml", SMALL);
    let lab = env.name("i");
    let child = env
        .command(&["lab", "up", topology.to_str().unwrap(), "--name", &lab])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Ctrl-C once the first namespace is recorded.
    let state_file = env.run_dir(&lab).join("state.json");
    let deadline = Instant::now() + Duration::from_secs(20);
    let state = loop {
        if let Ok(text) = std::fs::read_to_string(&state_file)
            && let Ok(v) = serde_json::from_str::<Value>(&text)
            && !v["namespaces"].as_array().unwrap().is_empty()
        {
            break v;
        }
        assert!(Instant::now() < deadline, "lab up recorded no namespace");
        std::thread::sleep(Duration::from_millis(1));
    };
    assert!(Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap().success());
    let out = child.wait_with_output().unwrap();
    if out.status.success() {
        // Up finished before the signal landed: nothing to check but that down works.
        eprintln!("lab up completed before SIGINT; checking down instead");
        let final_state = env.state(&lab);
        assert!(env.swctl(&["lab", "down", &lab]).status.success());
        assert_gone(&env, &lab, &final_state);
        return;
    }
    assert!(String::from_utf8_lossy(&out.stderr).contains("interrupted"), "{}", text(&out));
    let mut state = state;
    state["switches"] = Value::Array(Vec::new());
    assert_gone(&env, &lab, &state);
}

#[test]
fn topology_errors_are_named_and_create_nothing() {
    let env = Env::new("labtest");
    let lab = env.name("v");
    let switch =
        "switches: { sw1: { config: { PORT: { Ethernet0: { speed: 1000 }, Ethernet4: { speed: 1000 } } } } }";
    let cases = [
        (
            format!(
                "name: {lab}\n{switch}\nhosts: {{ h1: {{ ip: 10.0.0.1/24 }} }}\nlinks: [ 'sw1:Ethernet0 -- h1:eth0', 'sw1:Ethernet4 -- h9:eth0' ]"
            ),
            "links[1] (sw1:Ethernet4 -- h9:eth0): unknown node h9 (switches: sw1; hosts: h1)",
        ),
        (
            format!(
                "name: {lab}\n{switch}\nhosts: {{ h1: {{ ip: 10.0.0.1/24 }}, h2: {{ ip: 10.0.0.2/24 }} }}\nlinks: [ 'sw1:Ethernet0 -- h1:eth0', 'sw1:Ethernet0 -- h2:eth0' ]"
            ),
            "links[1] (sw1:Ethernet0 -- h2:eth0): sw1:Ethernet0 is used twice (also by links[0]",
        ),
        (
            format!(
                "name: {lab}\n{switch}\nhosts: {{ h1: {{ ip: 10.0.0.1/24, attach: 'sw1:Ethernet0' }}, h2: {{ ip: 10.0.0.1/24, attach: 'sw1:Ethernet4' }} }}"
            ),
            "hosts.h2.ip: 10.0.0.1 is also h1's address",
        ),
        (
            format!(
                "name: {lab}\n{switch}\nhosts: {{ h1: {{ ip: 10.0.0.1/24, attach: 'sw1:Ethernet12' }} }}"
            ),
            "sw1:Ethernet12: the configuration of sw1 (switches.sw1.config (inline)) has no port Ethernet12 (PORT: Ethernet0, Ethernet4)",
        ),
    ];
    for (i, (topology, expected)) in cases.iter().enumerate() {
        let file = env.write(&format!("bad{i}.yaml"), topology);
        for command in ["validate", "up"] {
            let out = env.swctl(&["lab", command, file.to_str().unwrap()]);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{}", text(&out));
            assert!(
                stderr.contains("invalid topology") && stderr.contains(expected),
                "case {i}, {command}: {stderr}"
            );
        }
    }
    assert!(namespaces_of(&lab).is_empty());
    assert!(!env.run_dir(&lab).exists());
}

#[test]
fn a_user_without_root_is_told_so_and_nothing_is_created() {
    let env = Env::new("labtest");
    let lab = env.name("u");
    let file = env.write("small.yaml", &format!("name: {lab}\n{SMALL}"));
    // `nobody` must reach the binary and the topology: the checkout may sit under a directory only root
    // enters (mktemp -d), so a copy of swctl goes beside the topology in the test's own directory.
    let swctl = env.tmp.join("swctl");
    std::fs::copy(env!("CARGO_BIN_EXE_swctl"), &swctl).unwrap();
    for path in [&env.tmp, &file, &swctl] {
        let _ = Command::new("chmod").arg("a+rx").arg(path).status();
    }
    for command in ["up", "down"] {
        let target = if command == "up" { file.to_str().unwrap() } else { lab.as_str() };
        let out = Command::new(&swctl)
            .args(["lab", command, target])
            .env("LOSSLESS_LAB_DIR", &env.base)
            .env_remove("LOSSLESS_LAB")
            .uid(65534)
            .gid(65534)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
        assert!(stderr.contains(&format!("swctl lab {command} needs root")), "{stderr}");
    }
    assert!(namespaces_of(&lab).is_empty());
    assert!(!env.run_dir(&lab).exists());
}

#[test]
fn two_labs_of_one_topology_coexist() {
    let env = Env::new("labtest");
    let topology = env.write("small.yaml", SMALL);
    let (a, b) = (env.name("a"), env.name("b"));
    up(&env, &topology, &a);
    up(&env, &topology, &b);
    let (state_a, state_b) = (env.state(&a), env.state(&b));
    assert_ne!(state_a["switches"][0]["endpoint"], state_b["switches"][0]["endpoint"]);
    for lab in [&a, &b] {
        assert!(env.status(lab).healthy);
        assert_eq!(namespaces_of(lab).len(), 3);
        assert!(env.swctl(&["--lab", lab, "--switch", "sw1", "get"]).status.success());
    }
    let listed = String::from_utf8_lossy(&env.swctl(&["lab", "status"]).stdout).into_owned();
    assert!(listed.contains(&format!("Lab {a} ")) && listed.contains(&format!("Lab {b} ")), "{listed}");

    assert!(env.swctl(&["lab", "down", &a]).status.success());
    assert_gone(&env, &a, &state_a);
    assert!(env.status(&b).healthy, "taking a down left b alone");
    assert!(env.swctl(&["lab", "down", &b]).status.success());
    assert_gone(&env, &b, &state_b);
}

#[test]
fn demo_json_backs_its_claims() {
    let env = Env::new("labtest");
    let lab = env.name("d");
    let out = env.swctl(&["lab", "demo", "--seconds", "4", "--json", "--name", &lab]);
    let summary: DemoSummary =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out)));
    let (ll, lossy) = (&summary.lossless, &summary.lossy);
    assert!(ll.received_packets > 0, "{summary:#?}");
    assert_eq!(
        (ll.psn_gaps, ll.out_of_order, ll.switch_drops),
        (0, 0, 0),
        "lossless traffic lost nothing: {summary:#?}"
    );
    for port in ["Ethernet0", "Ethernet4"] {
        assert!(ll.pfc_tx.get(port).is_some_and(|&n| n > 0), "PFC sent on {port}: {summary:#?}");
    }
    assert!(ll.ecn_marked > 0, "ECN marks on the lossless queue: {summary:#?}");
    assert!(lossy.egress_drops > 0, "lossy tail drops: {summary:#?}");
    // Lossy goodput may collapse (go-back-N after tail drops): only the lossless class must get through.
    assert!(ll.goodput_mbps > 0.0, "{summary:#?}");
    assert!(summary.queue_depth.samples > 10, "{summary:#?}");
    assert!(summary.ok, "{summary:#?}");
    assert!(out.status.success(), "{}", text(&out));

    // The plot and the summary stay in the run directory; the lab itself is gone.
    let svg = std::fs::read_to_string(summary.svg.as_ref().unwrap()).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("queue 3 (lossless)") && svg.contains("polyline"));
    assert!(env.run_dir(&lab).join("summary.json").exists());
    assert!(!env.run_dir(&lab).join("state.json").exists());
    assert!(namespaces_of(&lab).is_empty());
    assert!(String::from_utf8_lossy(&env.swctl(&["lab", "status"]).stdout).contains("no labs"));
}

#[test]
fn shipped_topologies_validate() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../configs/topologies");
    for file in ["demo.yaml", "two-switch.yaml"] {
        let out = Command::new(env!("CARGO_BIN_EXE_swctl"))
            .args(["lab", "validate", &format!("{root}/{file}")])
            .output()
            .unwrap();
        assert!(
            out.status.success() && String::from_utf8_lossy(&out.stdout).contains(": valid: lab"),
            "{file}: {}",
            text(&out)
        );
    }
    // The demo's switch validates as a switch configuration too, with no warning.
    let out = Command::new(env!("CARGO_BIN_EXE_swctl"))
        .args(["validate", &format!("{root}/demo-switch.yaml")])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("valid (0 warning(s))"), "{}", text(&out));
}

/// SMALL as containerlab writes it: the switch's CONFIG_DB as its startup-config, the hosts as labelled
/// `linux` nodes, containerlab-only settings (image, mgmt, exec) beside them.
const SMALL_CLAB: &str = r#"
name: small
mgmt: { network: lossless-mgmt }
topology:
  nodes:
    sw1: { kind: linux, image: lossless:latest, startup-config: sw1.yaml, labels: { lossless.role: switch } }
    h1: { kind: linux, image: lossless:latest, labels: { lossless.role: host, lossless.ip: 10.9.0.1/24 } }
    h2:
      kind: linux
      image: lossless:latest
      exec: [ "true" ]
      labels: { lossless.role: host, lossless.ip: 10.9.0.2/24, lossless.pfc: "3" }
  links:
    - endpoints: ["sw1:Ethernet0", "h1:eth0"]
    - endpoints: ["sw1:Ethernet4", "h2:eth0"]
"#;

const SMALL_SWITCH: &str = r#"
DEVICE_METADATA: { localhost: { mac: "02:4c:53:00:00:01" } }
PORT: { Ethernet0: { speed: 1000, mtu: 9100 }, Ethernet4: { speed: 1000, mtu: 9100 } }
VLAN: { Vlan10: { vlanid: 10 } }
VLAN_MEMBER:
  Vlan10|Ethernet0: { tagging_mode: untagged }
  Vlan10|Ethernet4: { tagging_mode: untagged }
"#;

#[test]
fn a_containerlab_topology_comes_up_as_a_lab() {
    let env = Env::new("labtest");
    env.write("sw1.yaml", SMALL_SWITCH);
    let topology = env.write("small.clab.yml", SMALL_CLAB);
    let lab = env.name("c");
    up(&env, &topology, &lab);
    let state = env.state(&lab);
    let status = env.status(&lab);
    assert!(status.healthy, "{status:#?}");
    let mut names = namespaces_of(&lab);
    names.sort();
    assert_eq!(names, [format!("ll-{lab}-h1"), format!("ll-{lab}-h2"), format!("ll-{lab}-sw1")]);
    // The startup-config is what the switch runs; the hosts answer across it.
    let get = env.swctl(&["--lab", &lab, "--switch", "sw1", "get"]);
    assert!(String::from_utf8_lossy(&get.stdout).contains("Vlan10"), "{}", text(&get));
    let ping =
        exec_in(&format!("ll-{lab}-h1"), "ping").args(["-c", "1", "-W", "5", "10.9.0.2"]).output().unwrap();
    assert!(ping.status.success(), "{}", text(&ping));
    let down = env.swctl(&["lab", "down", &lab]);
    assert!(down.status.success(), "{}", text(&down));
    assert_gone(&env, &lab, &state);
}

/// Tells [`stale_lab_child`] what to do: `hold` (a lab up, then wait until stdin closes) or `env` (make an
/// Env, which first sweeps, and exit).
const CHILD_MODE: &str = "LOSSLESS_LAB_SWEEP_CHILD";

#[test]
#[ignore = "a helper that the sweep test runs in a child process"]
fn stale_lab_child() {
    use std::io::Read as _;
    let Ok(mode) = std::env::var(CHILD_MODE) else { return };
    let env = Env::new("labsweep");
    if mode == "env" {
        return;
    }
    let topology = env.write("small.yaml", SMALL);
    let lab = env.name("s");
    up(&env, &topology, &lab);
    println!("HOLDING {} {lab}", env.tmp.display());
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
}

fn lab_sweep_child(mode: &str) -> Command {
    lossless_testkit::child::rerun_test("stale_lab_child", CHILD_MODE, mode)
}

/// A test process killed outright (nextest's timeout sends SIGKILL) never drops its Env: its lab stays up.
/// The next test process that makes an Env takes it down and removes the scratch directory.
#[test]
fn a_killed_tests_lab_is_taken_down_by_the_next_test() {
    use std::io::BufRead as _;
    let mut child = lab_sweep_child("hold").stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let line = lossless_testkit::child::after_marker(&mut stdout, "HOLDING ")
        .expect("the helper brought its lab up (run as root)");
    let (tmp, lab) = line.split_once(' ').unwrap();
    let tmp = PathBuf::from(tmp);
    let state: Value = serde_json::from_str(
        &std::fs::read_to_string(tmp.join("labs").join(lab).join("state.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(namespaces_of(lab).len(), 3, "the helper's lab is up");
    child.kill().unwrap();
    child.wait().unwrap();

    let out = lab_sweep_child("env").output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(namespaces_of(lab), Vec::<String>::new(), "namespaces of the killed test's lab left");
    for (pid, start) in recorded_processes(&state) {
        assert!(!alive(pid, start), "process {pid} of the killed test's lab still runs");
    }
    assert!(!tmp.exists(), "{} left", tmp.display());
}
