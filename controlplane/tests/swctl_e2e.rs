//! swctl against a real switchd in network namespaces: apply with a dry-run diff, a refused configuration
//! that leaves the running generation alone, show commands reading live counters after real traffic, clear,
//! pfcwd, capture (pcapng read back by tshark, drops with their reasons), and the one-sentence error when the
//! switch cannot be reached. Needs root, iproute2 and tshark.

use lossless_controlplane::watch::{CountersLine, WatchLine};
use lossless_dataplane::io::PortBackend;
use lossless_testkit::frames::{send_all, star_roce};
use lossless_testkit::netns::{Netns, Star, unique_name};
use lossless_testkit::{Switchd, SwitchdCommand, switchd_binary};
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
    send_all(tx.as_mut(), &star_roce(1, 3, 3, n, 200));
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
    let mut bad = star_roce(1, 3, 3, 5, 100);
    for f in &mut bad {
        f[14] = 0x44;
    }
    send_all(host_port(&lab.star.hosts[0]).as_mut(), &bad);
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

#[test]
fn capture_includes_the_pfc_frames_the_switch_sends() {
    let lab = Lab::start();
    // Ethernet8 held: h1's lossless frames pile up in PG 3 of Ethernet0 past its XOFF point (110 cells of
    // 256 bytes; 300 frames of 1 KB are ~1200 cells, all within the 4000 cells of headroom), and the switch
    // pauses h1 on priority 3 and refreshes the pause while the hold lasts.
    assert!(lab.swctl(&["hold", "Ethernet8"]).status.success());
    let file = lab.dir.join("pfc.pcapng");
    let capture = start_capture(&lab, &["Ethernet0", "-c", "320"], &file);
    send_all(host_port(&lab.star.hosts[0]).as_mut(), &star_roce(1, 3, 3, 300, 1000));
    let out = capture.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let rows = tshark_fields(
        &file,
        &[
            "frame.interface_name",
            "frame.packet_flags_direction",
            "macc.opcode",
            "macc.cbfc.enbv",
            "macc.cbfc.pause_time.c3",
        ],
    );
    let direction = |r: &Vec<String>| u32::from_str_radix(r[1].trim_start_matches("0x"), 16).unwrap() & 3;
    let pauses: Vec<&Vec<String>> =
        rows.iter().filter(|r| r[0] == "Ethernet0" && direction(r) == 2 && r[2] == "0x0101").collect();
    assert!(!pauses.is_empty(), "no PFC frame sent at Ethernet0 among {} captured: {rows:?}", rows.len());
    // Wireshark's reading of the frames the switch made: priority 3 only, and XOFF (a pause time on it).
    assert!(pauses.iter().all(|p| p[3] == "0x0008"), "{pauses:?}");
    assert!(pauses.iter().any(|p| p[4].parse::<u32>().unwrap() > 0), "{pauses:?}");
    assert!(lab.swctl(&["hold", "Ethernet8", "--release"]).status.success());
}

/// h1 sends `n` DSCP-3 (lossless) frames to a MAC nobody has: in the VLAN they are dropped, not flooded.
fn lossless_to_unknown_mac(lab: &Lab, n: u16) {
    let mut tx = host_port(&lab.star.hosts[0]);
    send_all(tx.as_mut(), &star_roce(1, 0x99, 3, n, 200));
}

fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", stdout(o)))
}

#[test]
fn sonic_command_forms_against_a_live_switch() {
    let lab = Lab::start();

    // show dropcounters counts: the reason a lossless frame to an unknown MAC was dropped has a column.
    lossless_to_unknown_mac(&lab, 5);
    let deadline = Instant::now() + Duration::from_secs(10);
    let reason = loop {
        let drops = json(&lab.swctl(&["--json", "show", "dropcounters", "counts"]));
        let found = drops["Ethernet0"]
            .as_object()
            .unwrap()
            .iter()
            .find(|(k, v)| {
                !["STATE", "RX_ERR", "RX_DROPS", "TX_ERR", "TX_DROPS"].contains(&k.as_str()) && **v == 5
            })
            .map(|(k, _)| k.clone());
        if let Some(reason) = found {
            break reason;
        }
        assert!(Instant::now() < deadline, "no drop reason counted 5 on Ethernet0: {drops}");
    };
    let table = stdout(&lab.swctl(&["show", "dropcounters", "counts"]));
    assert_eq!(cell(&table, &["Ethernet0"], &reason), "5", "{table}");
    assert!(lab.swctl(&["clear", "dropcounters"]).status.success());
    let drops = json(&lab.swctl(&["--json", "show", "dropcounters", "counts"]));
    assert_eq!(drops["Ethernet0"][&reason], 0, "cleared: {drops}");

    // The port views of portstat.
    let errors = stdout(&lab.swctl(&["show", "interfaces", "counters", "errors"]));
    assert_eq!(cell(&errors, &["Ethernet0"], "STATE"), "U", "{errors}");
    let rates = json(&lab.swctl(&["--json", "show", "interfaces", "counters", "rates", "-p", "0"]));
    assert_eq!(rates["Ethernet0"]["RX_OK"], 5, "{rates}");
    let detailed = stdout(&lab.swctl(&["show", "interfaces", "counters", "detailed", "Ethernet0"]));
    assert!(detailed.contains("Total Packets Received Without Errors.......... 5\n"), "{detailed}");
    let unknown = lab.swctl(&["show", "interfaces", "counters", "detailed", "Ethernet99"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("Interface Ethernet99 doesn't exist"));
    // swctl's own form still works.
    assert!(lab.swctl(&["show", "interfaces", "counters", "-p", "0"]).status.success());
    let one = json(&lab.swctl(&["--json", "show", "interfaces", "counters", "-p", "0", "-i", "Ethernet4"]));
    assert_eq!(one.as_object().unwrap().keys().collect::<Vec<_>>(), ["Ethernet4"], "{one}");

    // intfutil status, all ports or those named; SONiC's `-j` as well as `--json`.
    let status = stdout(&lab.swctl(&["show", "interfaces", "status"]));
    assert_eq!(cell(&status, &["Ethernet8"], "Speed"), "1G", "{status}");
    assert_eq!(cell(&status, &["Ethernet8"], "Vlan"), "trunk", "a VLAN member, as intfutil says: {status}");
    assert_eq!(cell(&status, &["Ethernet8"], "Oper"), "up", "{status}");
    let two = json(&lab.swctl(&["show", "interfaces", "status", "Ethernet0-4", "-j"]));
    assert_eq!(two.as_object().unwrap().keys().collect::<Vec<_>>(), ["Ethernet0", "Ethernet4"], "{two}");
    let unknown = lab.swctl(&["show", "interfaces", "status", "Ethernet99"]);
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("Invalid interface name Ethernet99"));

    // The forwarding tables.
    let mac = stdout(&lab.swctl(&["show", "mac"]));
    assert!(mac.contains("Total number of entries 3\n"), "{mac}");
    assert_eq!(cell(&mac, &["1", "1000"], "Type"), "Static", "{mac}");
    assert_eq!(stdout(&lab.swctl(&["fdb", "show"])), mac, "both names, one table");
    let one = stdout(&lab.swctl(&["show", "mac", "-p", "Ethernet8", "-c"]));
    assert_eq!(one, "Total number of entries 1\n");
    let bad = lab.swctl(&["show", "mac", "-a", "02:00:00"]);
    assert!(String::from_utf8_lossy(&bad.stderr).contains("Invalid mac address 02:00:00"));
    let vlan = stdout(&lab.swctl(&["show", "vlan", "brief"]));
    assert!(vlan.contains("|      1000 |") && vlan.contains("| Ethernet0 "), "{vlan}");
    assert!(stdout(&lab.swctl(&["show", "arp"])).ends_with("Total number of entries 0 \n"));
    let ndp = stdout(&lab.swctl(&["show", "ndp", "-if", "Vlan1000"]));
    assert!(ndp.starts_with("Address    MacAddress    Iface    Vlan    Status"), "{ndp}");
    let routes = stdout(&lab.swctl(&["show", "ip", "route"]));
    assert!(routes.starts_with("Codes: K - kernel route"), "{routes}");
    let running = json(&lab.swctl(&["show", "runningconfiguration", "all"]));
    assert_eq!(running["VLAN"]["Vlan1000"]["vlanid"], "1000");
    let port = json(&lab.swctl(&["show", "runningconfiguration", "ports", "Ethernet8"]));
    assert_eq!(port, serde_json::json!({"mtu": "9100", "speed": "1000"}));

    // Watermarks: the persistent copy, one table per command in JSON, typed clears.
    let persistent = stdout(&lab.swctl(&["show", "queue", "persistent-watermark", "unicast"]));
    assert!(persistent.starts_with("Egress shared pool occupancy per unicast queue:"), "{persistent}");
    assert!(json(&lab.swctl(&["--json", "show", "priority-group", "watermark", "shared"])).is_array());
    assert!(json(&lab.swctl(&["--json", "show", "buffer_pool", "persistent-watermark"])).is_array());
    let all = stdout(&lab.swctl(&["show", "queue", "watermark", "all"]));
    assert!(all.starts_with("Egress shared pool occupancy per all queues:") && all.contains("ALL7"), "{all}");
    let multicast = lab.swctl(&["show", "queue", "persistent-watermark", "multicast"]);
    assert!(multicast.status.success() && stdout(&multicast).contains("multicast queues are not configured"));
    let rows = json(&lab.swctl(&["show", "queue", "watermark", "unicast", "-j"]));
    assert_eq!(rows[0]["Port"], "Ethernet0", "{rows}");

    // mmuconfig's tables under its three names, and pfc/main.py's asymmetric view.
    let mmu = stdout(&lab.swctl(&["mmuconfig", "-l"]));
    assert!(mmu.contains("Pool: ingress_lossless_pool") && mmu.contains("Profile: pg_lossless"), "{mmu}");
    assert_eq!(stdout(&lab.swctl(&["show", "buffer", "configuration"])), mmu);
    assert_eq!(stdout(&lab.swctl(&["show", "mmu"])), mmu);
    let asym = stdout(&lab.swctl(&["show", "pfc", "asymmetric", "Ethernet0"]));
    assert_eq!(cell(&asym, &["Ethernet0"], "Asymmetric"), "N/A", "no PORT|pfc_asym: {asym}");
    for clear in [
        &["clear", "queue", "watermark", "unicast"][..],
        &["clear", "priority-group", "watermark", "shared"],
        &["clear", "priority-group", "persistent-watermark", "headroom"],
        &["clear", "buffer_pool", "watermark"],
        &["clear", "queuecounters"],
        &["clear", "pfccounters"],
    ] {
        let out = lab.swctl(clear);
        assert!(out.status.success(), "{clear:?}: {}", String::from_utf8_lossy(&out.stderr));
    }

    // PFC: the configured priorities, the history JSON (not the plain counters).
    let prio = stdout(&lab.swctl(&["show", "pfc", "priority"]));
    assert_eq!(cell(&prio, &["Ethernet0"], "Lossless priorities"), "3,4", "{prio}");
    let history = json(&lab.swctl(&["--json", "show", "pfc", "counters", "--history"]));
    assert!(history["Ethernet0"]["PFC3"].get("RX Pause Transitions").is_some(), "{history}");

    // pfcwd in SONiC's argument forms: ports as separate words, the restoration time defaulting to twice
    // the detection time, stop on some ports, pfc_stat_history per port.
    // swctl watch, filtered to configuration events, in JSON: its first line is the apply of the pfcwd
    // start below (or of a later command, if the subscription was not open yet), dated in RFC 3339.
    let mut watch = Command::new(env!("CARGO_BIN_EXE_swctl"))
        .args(["--switch", lab.switchd.endpoint(), "--json", "watch", "--kind", "config_applied"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let (line_tx, line_rx) = std::sync::mpsc::channel();
    let watch_out = watch.stdout.take().unwrap();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(watch_out).lines().map_while(Result::ok) {
            if line_tx.send(line).is_err() {
                break;
            }
        }
    });
    let out = lab.swctl(&["pfcwd", "start", "-a", "drop", "Ethernet0", "Ethernet4", "400"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout(&out).contains("default to 2 times detection time: 800 ms"), "{}", stdout(&out));
    let cfg = stdout(&lab.swctl(&["pfcwd", "show", "config"]));
    assert_eq!(cell(&cfg, &["Ethernet0"], "DETECTION TIME"), "400", "{cfg}");
    assert_eq!(cell(&cfg, &["Ethernet0"], "RESTORATION TIME"), "800", "{cfg}");
    assert!(lab.swctl(&["pfcwd", "stop", "Ethernet4"]).status.success());
    let cfg = stdout(&lab.swctl(&["pfcwd", "show", "config"]));
    assert!(cfg.contains("Ethernet0") && !cfg.contains("Ethernet4"), "{cfg}");
    let stats = json(&lab.swctl(&["--json", "pfcwd", "show", "stats", "Ethernet0:3"]));
    let queues: Vec<&str> = stats.as_array().unwrap().iter().map(|r| r["QUEUE"].as_str().unwrap()).collect();
    assert_eq!(queues, ["Ethernet0:3"], "the queue asked for, monitored since the start above");
    assert!(lab.swctl(&["pfcwd", "pfc_stat_history", "enable", "Ethernet0"]).status.success());
    let running = json(&lab.swctl(&["show", "runningconfiguration", "all"]));
    assert_eq!(running["PFC_WD"]["Ethernet0"]["pfc_stat_history"], "enable", "{}", running["PFC_WD"]);
    let out = lab.swctl(&["pfcwd", "counter_poll", "enable"]);
    assert!(out.status.success(), "{}{}", stdout(&out), String::from_utf8_lossy(&out.stderr));
    let event = line_rx.recv_timeout(Duration::from_secs(10)).expect("a config_applied event");
    let _ = watch.kill();
    let _ = watch.wait();
    let event: WatchLine = serde_json::from_str(&event).unwrap_or_else(|e| panic!("{e}: {event}"));
    assert_eq!(event.kind, "config_applied", "{event:?}");
    let wall = event.wall_time.as_deref().expect("switchd sends its wall-clock time");
    assert!(wall.len() == 27 && wall.ends_with('Z') && wall.as_bytes()[10] == b'T', "RFC 3339 UTC: {wall}");
    let start_default = lab.swctl(&["pfcwd", "start_default"]);
    assert!(start_default.status.success(), "{}", String::from_utf8_lossy(&start_default.stderr));
    assert!(
        String::from_utf8_lossy(&start_default.stderr).contains("default_pfcwd_status is not enable"),
        "SONiC does nothing without DEVICE_METADATA default_pfcwd_status; swctl says so"
    );
    let bad = lab.swctl(&["pfcwd", "start", "Ethernet0", "50"]);
    assert_eq!(bad.status.code(), Some(2), "a detection time below 100 ms is refused");
    let unknown = lab.swctl(&["pfcwd", "stop", "Ethernet99"]);
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("Ethernet99"), "the bad port is named");

    // swctl watch: a port the switch lacks is refused by name; the counters lines are dated too.
    let bad = lab.swctl(&["watch", "--port", "Ethernet99"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--port Ethernet99: the switch has no such port"));
    let mut watch = Command::new(env!("CARGO_BIN_EXE_swctl"))
        .args([
            "--switch",
            lab.switchd.endpoint(),
            "-j",
            "watch",
            "--counters-ms",
            "100",
            "--port",
            "Ethernet0",
        ])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(watch.stdout.take().unwrap()), &mut first)
        .unwrap();
    let _ = watch.kill();
    let _ = watch.wait();
    let line: CountersLine = serde_json::from_str(&first).unwrap_or_else(|e| panic!("{e}: {first}"));
    assert_eq!(line.kind, CountersLine::KIND, "{line:?}");
    let wall = line.wall_time.as_str();
    assert!(wall.len() == 27 && wall.ends_with('Z') && wall.as_bytes()[10] == b'T', "RFC 3339 UTC: {wall}");

    // queuestat -nz (SONiC's two-letter short option): after h1's 10 frames to h3 (DSCP 3), Ethernet8's
    // queue 3 is listed with them, and no queue whose counters are all zero (Ethernet0 sent nothing).
    assert!(lab.swctl(&["clear", "queuecounters"]).status.success());
    traffic(&lab, 10);
    let nonzero = json(&lab.swctl(&["-j", "show", "queue", "counters", "-nz"]));
    assert_eq!(nonzero["Ethernet8"]["UC3"]["totalpacket"], 10, "{nonzero}");
    assert!(nonzero.get("Ethernet0").is_none(), "{nonzero}");
    let table = stdout(&lab.swctl(&["show", "queue", "counters", "Ethernet8", "-nz"]));
    assert_eq!(cell(&table, &["Ethernet8", "UC3"], "Counter/pkts"), "10", "{table}");
}
