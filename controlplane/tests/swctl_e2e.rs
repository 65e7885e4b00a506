//! swctl against a real switchd in network namespaces: apply with a dry-run diff, a refused configuration
//! that leaves the running generation alone, show commands reading live counters after real traffic, clear,
//! pfcwd, capture (pcapng read back by tshark, drops with their reasons), and the one-sentence error when the
//! switch cannot be reached. Needs root, iproute2 and tshark.

use lossless_dataplane::io::PortBackend;
use lossless_dataplane::wire::EthernetAddress;
use lossless_dataplane::wire::build::Ipv4Flow;
use lossless_dataplane::wire::ip::Ecn;
use lossless_testkit::netns::{Netns, Star, unique_name};
use lossless_testkit::{Switchd, SwitchdCommand, switchd_binary};
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

const CONFIG: &str = include_str!("../../dataplane/tests/configs/switchd_congestion.yaml");

struct Lab {
    // Field order matters for Drop: the process stops before the namespaces go.
    switchd: Switchd,
    star: Star,
    dir: PathBuf,
}

impl Lab {
    fn start() -> Lab {
        let star = Star::new("e", 3).unwrap();
        let dir = std::env::temp_dir().join(unique_name("swctl"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("switch.yaml"), CONFIG).unwrap();
        let mut switchd = SwitchdCommand::new(switchd_binary())
            .netns(&star.switch)
            .config(dir.join("switch.yaml"))
            .port("Ethernet0", "p0")
            .port("Ethernet4", "p1")
            .port("Ethernet8", "p2")
            .grpc(&format!("unix:{}", dir.join("sw.sock").display()))
            .spawn()
            .unwrap();
        let tokio = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        tokio.block_on(switchd.ready()).unwrap();
        Lab { switchd, star, dir }
    }

    fn swctl(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_swctl"))
            .args(["--switch", self.switchd.endpoint()])
            .args(args)
            .output()
            .unwrap()
    }

    fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        let _ = self.switchd.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A port on a host's eth0.
fn host_port(ns: &Netns) -> Box<dyn PortBackend> {
    ns.open_port("eth0").unwrap()
}

/// h1 sends `n` DSCP-3 frames to h3; returns when h3 has them all.
fn traffic(lab: &Lab, n: u16) {
    let mut tx = host_port(&lab.star.hosts[0]);
    let mut rx = host_port(&lab.star.hosts[2]);
    let frames: Vec<Vec<u8>> = (0..n)
        .map(|i| {
            Ipv4Flow {
                src_mac: EthernetAddress([2, 0, 0, 0, 0, 1]),
                dst_mac: EthernetAddress([2, 0, 0, 0, 0, 3]),
                src_ip: Ipv4Addr::new(10, 0, 0, 1),
                dst_ip: Ipv4Addr::new(10, 0, 0, 3),
                src_port: i,
                dscp: 3,
                ecn: Ecn::Ect0,
                ttl: 64,
            }
            .udp(4791, &[0u8; 200])
        })
        .collect();
    let mut sent = 0;
    while sent < frames.len() {
        sent += tx.send_batch(&frames[sent..]).unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut got = 0;
    let mut buf = Vec::new();
    while got < usize::from(n) {
        assert!(Instant::now() < deadline, "h3 got {got} of {n}");
        buf.clear();
        rx.recv_batch(&mut buf, 64).unwrap();
        got += buf.iter().filter(|f| f.len() > 200).count();
    }
}

/// The value in `column` of the row whose first cells are `key` in a SONiC-style table.
fn cell(table: &str, key: &[&str], column: &str) -> String {
    let mut lines = table.lines().filter(|l| !l.trim().is_empty());
    let header: Vec<&str> =
        lines.next().unwrap().split("  ").map(str::trim).filter(|s| !s.is_empty()).collect();
    let idx = header
        .iter()
        .position(|h| *h == column)
        .unwrap_or_else(|| panic!("no column {column} in {header:?}"));
    for line in lines {
        let cells: Vec<&str> = line.split_whitespace().collect();
        if cells.len() == header.len() && cells.starts_with(key) {
            return cells[idx].to_owned();
        }
    }
    panic!("no row {key:?} in\n{table}");
}

#[test]
fn apply_dry_run_refusal_and_live_show_commands() {
    let lab = Lab::start();
    assert!(stdout(&lab.swctl(&["get"])).starts_with("# generation 1"));

    // Dry run: the diff, nothing applied.
    let changed =
        CONFIG.replace("scheduler.1: { type: DWRR, weight: 15 }", "scheduler.1: { type: DWRR, weight: 30 }");
    let changed = lab.write("changed.yaml", &changed);
    let out = lab.swctl(&["apply", changed.to_str().unwrap(), "--dry-run"]);
    assert!(out.status.success(), "{}", stdout(&out));
    assert!(stdout(&out).contains("~ SCHEDULER|scheduler.1|weight: 15 -> 30"), "{}", stdout(&out));
    assert!(stdout(&out).contains("dry run"));
    assert!(stdout(&lab.swctl(&["get"])).starts_with("# generation 1"));

    // A bad configuration: every error named, exit 1, the running generation untouched.
    let bad =
        CONFIG.replace("Ethernet0: { speed: 10000, mtu: 9100 }", "Ethernet0: { speed: fast, mtu: 9100 }");
    let bad = lab.write("bad.yaml", &bad);
    let out = lab.swctl(&["apply", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).contains("PORT|Ethernet0|speed"), "{}", stdout(&out));
    assert!(stdout(&lab.swctl(&["get"])).starts_with("# generation 1"));

    let out = lab.swctl(&["apply", changed.to_str().unwrap()]);
    assert!(stdout(&out).contains("applied: generation 2"), "{}", stdout(&out));

    // Live counters after real traffic.
    traffic(&lab, 100);
    let q = stdout(&lab.swctl(&["show", "queue", "counters", "Ethernet8"]));
    assert_eq!(cell(&q, &["Ethernet8", "UC3"], "Counter/pkts"), "100", "{q}");
    let json: serde_json::Value =
        serde_json::from_slice(&lab.swctl(&["--json", "show", "queue", "counters", "Ethernet8"]).stdout)
            .unwrap();
    assert!(json.to_string().contains("100"), "{json}");
    let ifaces: serde_json::Value =
        serde_json::from_slice(&lab.swctl(&["--json", "show", "interfaces", "counters"]).stdout).unwrap();
    assert_eq!(ifaces["Ethernet0"]["RX_OK"], 100, "{ifaces}");
    assert_eq!(ifaces["Ethernet8"]["TX_OK"], 100, "{ifaces}");
    assert_eq!(ifaces["Ethernet0"]["STATE"], "U", "the link is up: {ifaces}");
    let status: serde_json::Value =
        serde_json::from_slice(&lab.swctl(&["--json", "show", "interfaces", "status"]).stdout).unwrap();
    assert_eq!((&status["Ethernet0"]["Oper"], &status["Ethernet0"]["Admin"]), (&"up".into(), &"up".into()));
    let pg = stdout(&lab.swctl(&["show", "priority-group", "watermark", "shared"]));
    assert!(pg.starts_with("Ingress shared pool occupancy per PG:"), "{pg}");

    // Clear: a snapshot the shows subtract.
    assert!(lab.swctl(&["clear", "queue", "counters"]).status.success());
    let q = stdout(&lab.swctl(&["show", "queue", "counters", "Ethernet8"]));
    assert_eq!(cell(&q, &["Ethernet8", "UC3"], "Counter/pkts"), "0", "{q}");

    // pfcwd start / show config.
    assert!(
        lab.swctl(&["pfcwd", "start", "--action", "forward", "-r", "600", "Ethernet0,Ethernet4", "400"])
            .status
            .success()
    );
    let cfg = stdout(&lab.swctl(&["pfcwd", "show", "config"]));
    assert_eq!(cell(&cfg, &["Ethernet0"], "ACTION"), "forward", "{cfg}");
    assert!(stdout(&lab.swctl(&["get"])).starts_with("# generation 3"));
    assert!(lab.swctl(&["pfcwd", "show", "stats", "--check-storm"]).status.success(), "no storm");
}

#[test]
fn an_unreachable_switch_is_one_clear_sentence_and_exit_2() {
    let out = Command::new(env!("CARGO_BIN_EXE_swctl"))
        .args(["--switch", "unix:/nonexistent/lossless.sock", "show", "pfc", "counters"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("swctl: cannot reach the switch at unix:/nonexistent/lossless.sock"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
}

#[test]
fn file_errors_name_the_file_and_the_yaml_position() {
    let dir = std::env::temp_dir().join(unique_name("swctlf"));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("broken.yaml");
    std::fs::write(&bad, "PORT:\n  Ethernet0: { speed: 100000\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_swctl")).arg("validate").arg(&bad).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("broken.yaml") && err.contains("line"), "{err}");
    let missing =
        Command::new(env!("CARGO_BIN_EXE_swctl")).args(["validate", "/nonexistent.yaml"]).output().unwrap();
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("cannot read /nonexistent.yaml"));
    let _ = std::fs::remove_dir_all(Path::new(&dir));
}

/// `swctl capture` started in the background into `file`; returns once switchd streams to it (the pcapng
/// section header is written as soon as the capture is registered).
fn start_capture(lab: &Lab, args: &[&str], file: &Path) -> std::process::Child {
    let child = Command::new(env!("CARGO_BIN_EXE_swctl"))
        .args(["--switch", lab.switchd.endpoint(), "capture"])
        .args(args)
        .arg("-w")
        .arg(file)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::fs::metadata(file).map_or(0, |m| m.len()) == 0 {
        assert!(Instant::now() < deadline, "swctl capture did not start");
        std::thread::sleep(Duration::from_millis(20)); // polling a file another process writes
    }
    child
}

fn tshark_fields(file: &Path, fields: &[&str]) -> Vec<Vec<String>> {
    let mut cmd = Command::new("tshark");
    cmd.arg("-r").arg(file).args(["-T", "fields", "-E", "separator=|"]);
    for f in fields {
        cmd.args(["-e", f]);
    }
    let out = cmd.output().expect("tshark runs");
    assert!(out.status.success(), "tshark: {}", String::from_utf8_lossy(&out.stderr));
    stdout(&out).lines().map(|l| l.split('|').map(str::to_owned).collect()).collect()
}

#[test]
fn capture_writes_pcapng_that_tshark_reads_with_ports_directions_and_drop_reasons() {
    let lab = Lab::start();
    let file = lab.dir.join("traffic.pcapng");
    let capture = start_capture(&lab, &["Ethernet0", "Ethernet8", "-c", "20"], &file);
    let before = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap();
    traffic(&lab, 10);
    let out = capture.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("20 frame(s) captured"));
    let rows = tshark_fields(
        &file,
        &["frame.interface_name", "frame.packet_flags_direction", "ip.dsfield.dscp", "frame.time_epoch"],
    );
    assert_eq!(rows.len(), 20, "{rows:?}");
    // epb_flags bits 0-1: 1 inbound, 2 outbound.
    let direction = |r: &Vec<String>| u32::from_str_radix(r[1].trim_start_matches("0x"), 16).unwrap() & 3;
    let count = |port: &str, dir: u32| rows.iter().filter(|r| r[0] == port && direction(r) == dir).count();
    // h1's 10 frames in at Ethernet0 and out at Ethernet8, DSCP 3 kept.
    assert_eq!((count("Ethernet0", 1), count("Ethernet8", 2)), (10, 10), "{rows:?}");
    assert!(rows.iter().all(|r| r[2] == "3"), "{rows:?}");
    // Wall-clock nanosecond timestamps, of this run.
    let t: f64 = rows[0][3].parse().unwrap();
    assert!((t - before.as_secs_f64()).abs() < 30.0, "{t} vs {before:?}");

    // Drops: 5 frames with a bad IPv4 header (IHL 4) are dropped, each captured with its reason.
    let drops = lab.dir.join("drops.pcapng");
    let capture = start_capture(&lab, &["Ethernet0", "--drops", "-c", "5"], &drops);
    let mut tx = host_port(&lab.star.hosts[0]);
    let bad: Vec<Vec<u8>> = (0..5u16)
        .map(|i| {
            let mut f = Ipv4Flow {
                src_mac: EthernetAddress([2, 0, 0, 0, 0, 1]),
                dst_mac: EthernetAddress([2, 0, 0, 0, 0, 3]),
                src_ip: Ipv4Addr::new(10, 0, 0, 1),
                dst_ip: Ipv4Addr::new(10, 0, 0, 3),
                src_port: i,
                dscp: 3,
                ecn: Ecn::Ect0,
                ttl: 64,
            }
            .udp(4791, &[0u8; 100]);
            f[14] = 0x44;
            f
        })
        .collect();
    let mut sent = 0;
    while sent < bad.len() {
        sent += tx.send_batch(&bad[sent..]).unwrap();
    }
    let out = capture.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let rows = tshark_fields(&drops, &["frame.interface_name", "frame.comment", "eth.src"]);
    assert_eq!(rows.len(), 5, "{rows:?}");
    for r in &rows {
        assert_eq!(r[0], "Ethernet0");
        assert_eq!(r[1], "dropped: IP_HEADER_ERROR", "{rows:?}");
        assert_eq!(r[2], "02:00:00:00:00:01");
    }
}
