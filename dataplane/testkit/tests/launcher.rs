//! The switchd launcher against the real binary: ready when it answers, a start-up failure reported at once
//! with the log, an abort honoured, and nothing left behind after drop. Needs root and iproute2.

use lossless_testkit::netns::{self, Star};
use lossless_testkit::{SwitchdCommand, switchd_binary};
use std::path::Path;
use std::time::{Duration, Instant};

const CONFIG: &str = "PORT:\n  Ethernet0: { speed: 10000, mtu: 9100 }\n";

fn tokio() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

fn alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

#[test]
fn ready_answers_and_drop_stops_reaps_and_cleans_up() {
    let star = Star::new("tk", 1).unwrap();
    let mut switchd = SwitchdCommand::new(switchd_binary())
        .netns(&star.switch)
        .config_text("switch.yaml", CONFIG)
        .port("Ethernet0", "p0")
        .spawn()
        .unwrap();
    let rt = tokio();
    let mut client = rt.block_on(switchd.ready()).unwrap();
    let counters =
        rt.block_on(client.get_counters(lossless_proto::v1::GetCountersRequest {})).unwrap().into_inner();
    assert_eq!(counters.ports.len(), 1);
    let (pid, socket) = (switchd.pid(), switchd.socket().unwrap().to_owned());
    assert!(alive(pid) && socket.exists());
    assert!(switchd.log().contains("switchd ready"), "{}", switchd.log());
    drop(client);
    drop(switchd);
    assert!(!alive(pid), "switchd (pid {pid}) still runs after drop");
    assert!(!socket.exists(), "{} left behind", socket.display());
}

#[test]
fn a_start_up_failure_is_reported_at_once_with_the_log() {
    let sw = netns::unique("tkf").unwrap();
    let mut switchd = SwitchdCommand::new(switchd_binary())
        .netns(&sw)
        .config_text("switch.yaml", CONFIG)
        .port("Ethernet0", "nope0")
        .spawn()
        .unwrap();
    let started = Instant::now();
    let err = tokio().block_on(switchd.ready()).unwrap_err().to_string();
    assert!(err.starts_with("switchd exited during start-up"), "{err}");
    assert!(err.contains("nope0"), "the log tail names the missing interface: {err}");
    assert!(started.elapsed() < Duration::from_secs(5), "took {:?}", started.elapsed());
}

#[test]
fn ready_unless_gives_up_when_told_and_stop_returns_the_status() {
    let star = Star::new("tka", 1).unwrap();
    let mut switchd = SwitchdCommand::new(switchd_binary())
        .netns(&star.switch)
        .config_text("switch.yaml", CONFIG)
        .port("Ethernet0", "p0")
        .spawn()
        .unwrap();
    let rt = tokio();
    let err = rt.block_on(switchd.ready_unless(|| true)).unwrap_err();
    assert!(err.to_string().starts_with("interrupted"), "{err}");
    // Giving up left switchd running: it can still be waited for, then stopped cleanly.
    drop(rt.block_on(switchd.ready()).unwrap());
    let status = switchd.stop().unwrap();
    assert!(status.success(), "switchd exits 0 on SIGTERM: {status}");
}

/// Waits (up to `timeout`) for the process `pid` — not a child of this one — to end, on its pidfd.
fn await_exit(pid: u32, timeout: Duration) -> bool {
    // SAFETY: plain system calls on integers; the descriptor is closed below.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) } as libc::c_int;
    if fd < 0 {
        return !alive(pid);
    }
    let mut poll = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    let ready = unsafe { libc::poll(&mut poll, 1, timeout.as_millis() as libc::c_int) };
    unsafe { libc::close(fd) };
    ready == 1
}

#[test]
fn the_launch_binary_leaves_a_ready_switchd_running_and_prints_its_pid() {
    let star = Star::new("tkl", 1).unwrap();
    let dir = std::env::temp_dir().join(netns::unique_name("tklaunch"));
    std::fs::create_dir_all(&dir).unwrap();
    let (config, log, socket) = (dir.join("switch.yaml"), dir.join("switchd.log"), dir.join("sw.sock"));
    std::fs::write(&config, CONFIG).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_switchd-launch"))
        .args(["--netns", star.switch.name(), "--log"])
        .arg(&log)
        .arg("--grpc")
        .arg(format!("unix:{}", socket.display()))
        .arg(switchd_binary())
        .arg("--config")
        .arg(&config)
        .args(["--port", "Ethernet0=p0"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{}: {stderr}", out.status);
    let pid: u32 = String::from_utf8_lossy(&out.stdout).trim().parse().expect("a pid on stdout");
    // Already answering when the launcher returned, without waiting here.
    let rt = tokio();
    let mut client = rt.block_on(lossless_testkit::connect(&format!("unix:{}", socket.display()))).unwrap();
    let counters =
        rt.block_on(client.get_counters(lossless_proto::v1::GetCountersRequest {})).unwrap().into_inner();
    assert_eq!(counters.ports.len(), 1);
    assert!(std::fs::read_to_string(&log).unwrap().contains("switchd ready"));
    drop(client);
    unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) };
    assert!(await_exit(pid, Duration::from_secs(10)), "switchd (pid {pid}) did not stop on SIGTERM");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_launch_binary_fails_with_the_log_when_switchd_cannot_start() {
    let sw = netns::unique("tklf").unwrap();
    let dir = std::env::temp_dir().join(netns::unique_name("tklaunchf"));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("switch.yaml");
    std::fs::write(&config, CONFIG).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_switchd-launch"))
        .args(["--netns", sw.name(), "--grpc"])
        .arg(format!("unix:{}", dir.join("sw.sock").display()))
        .arg("--log")
        .arg(dir.join("switchd.log"))
        .arg(switchd_binary())
        .arg("--config")
        .arg(&config)
        .args(["--port", "Ethernet0=nope0"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("exited during start-up") && stderr.contains("nope0"), "{stderr}");
    assert!(out.stdout.is_empty());
    std::fs::remove_dir_all(&dir).unwrap();
}
