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
