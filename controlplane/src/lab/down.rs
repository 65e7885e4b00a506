//! Taking a lab down (`swctl lab down`, and every `up` that fails or is interrupted): whatever the state
//! file records, in whatever shape it is. Teardown is idempotent and never stops at the first failure.

use super::state::{LabState, Phase, Pid, STATE_FILE, lab_dir, namespace_exists, namespace_pids};
use anyhow::bail;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

/// How long SIGTERM gets before SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// What a teardown removed.
#[derive(Debug, Default, Serialize)]
pub struct DownReport {
    pub lab: String,
    /// `kind node (pid N)` of every process stopped; `+KILL` when SIGTERM was not enough.
    pub stopped: Vec<String>,
    pub namespaces_deleted: Vec<String>,
    pub run_dir_removed: Option<PathBuf>,
    pub problems: Vec<String>,
}

impl DownReport {
    pub fn summary(&self) -> String {
        format!(
            "{} process(es) stopped, {} namespace(s) deleted{}{}",
            self.stopped.len(),
            self.namespaces_deleted.len(),
            if self.run_dir_removed.is_some() { ", run directory removed" } else { "" },
            if self.problems.is_empty() {
                String::new()
            } else {
                format!("; problems: {}", self.problems.join("; "))
            }
        )
    }
}

/// Removes everything `state` records, whatever shape it is in. `reap` are child handles of this process
/// (their zombies are collected).
pub fn teardown(state: &mut LabState, dir: &Path, reap: &mut [Child], keep_files: bool) -> DownReport {
    let mut report = DownReport { lab: state.name.clone(), ..DownReport::default() };
    state.phase = Phase::Stopping;
    if dir.join(STATE_FILE).exists() {
        let _ = state.save(dir);
    }

    // Recorded processes (pid and start time must match), then anything else inside the namespaces.
    let mut targets: Vec<(String, Pid)> = Vec::new();
    for p in &state.processes {
        if let Some(pid) = p.pid.filter(Pid::alive) {
            targets.push((format!("{} {} (pid {})", p.kind, p.node, pid.pid), pid));
        }
    }
    for ns in &state.namespaces {
        if namespace_exists(ns) {
            for pid in namespace_pids(ns) {
                if !targets.iter().any(|(_, t)| t.pid == pid.pid) {
                    targets.push((format!("process {} in {ns}", pid.pid), pid));
                }
            }
        }
    }
    let pids: Vec<Pid> = targets.iter().map(|(_, p)| *p).collect();
    let killed = stop_processes(&pids, reap);
    for (label, pid) in &targets {
        if pid.alive() {
            report.problems.push(format!("{label} is still running"));
        } else if killed.contains(pid) {
            report.stopped.push(format!("{label} +KILL"));
        } else {
            report.stopped.push(label.clone());
        }
    }
    for c in reap.iter_mut() {
        if matches!(c.try_wait(), Ok(None)) {
            let _ = c.kill();
        }
        let _ = c.wait();
    }

    for ns in &state.namespaces {
        if !namespace_exists(ns) {
            continue;
        }
        match Command::new("ip").args(["netns", "del", ns]).output() {
            Ok(o) if o.status.success() => report.namespaces_deleted.push(ns.clone()),
            Ok(o) => report
                .problems
                .push(format!("ip netns del {ns}: {}", String::from_utf8_lossy(&o.stderr).trim())),
            Err(e) => report.problems.push(format!("ip netns del {ns}: {e}")),
        }
    }

    // Sockets a killed switchd left behind live in the run directory like everything else.
    for sw in &state.switches {
        if sw.socket.exists() && !sw.socket.starts_with(dir) {
            let _ = std::fs::remove_file(&sw.socket);
        }
    }
    if keep_files {
        for sw in &state.switches {
            let _ = std::fs::remove_file(&sw.socket);
        }
        for h in &state.hosts {
            let _ = std::fs::remove_file(&h.ready_file);
        }
        let _ = std::fs::remove_file(dir.join(STATE_FILE));
    } else if dir.exists() {
        match std::fs::remove_dir_all(dir) {
            Ok(()) => report.run_dir_removed = Some(dir.to_owned()),
            Err(e) => report.problems.push(format!("removing {}: {e}", dir.display())),
        }
    }
    report
}

/// `swctl lab down NAME`: tears down the lab recorded under NAME. A lab whose creator still runs (an `up`
/// in progress, a demo) is refused unless `force`.
pub fn down(name: &str, force: bool) -> anyhow::Result<DownReport> {
    let dir = lab_dir(name);
    if !dir.exists() {
        bail!("no lab {name} ({} does not exist); `swctl lab status` lists the labs", dir.display());
    }
    let mut state = match LabState::load(&dir) {
        Ok(s) => s,
        Err(_) if !dir.join(STATE_FILE).exists() => {
            // A run directory without state (a demo's results, or a crash before the first write).
            LabState { name: name.to_owned(), ..LabState::default() }
        }
        Err(e) => return Err(e),
    };
    if state.owner_alive() && !force {
        let owner = state.owner.map(|o| o.pid).unwrap_or_default();
        bail!(
            "lab {name} is in use by swctl (pid {owner}), which removes it when it ends; --force to remove it now"
        );
    }
    Ok(teardown(&mut state, &dir, &mut [], false))
}

/// Stops processes: SIGTERM, up to [`STOP_GRACE`] to exit, then SIGKILL. Returns those that needed SIGKILL.
fn stop_processes(pids: &[Pid], reap: &mut [Child]) -> Vec<Pid> {
    for p in pids {
        p.signal("TERM");
    }
    let wait_all = |deadline: Instant, reap: &mut [Child]| {
        while Instant::now() < deadline {
            for c in reap.iter_mut() {
                let _ = c.try_wait();
            }
            if pids.iter().all(|p| !p.alive()) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    };
    if wait_all(Instant::now() + STOP_GRACE, reap) {
        return Vec::new();
    }
    let stubborn: Vec<Pid> = pids.iter().copied().filter(Pid::alive).collect();
    for p in &stubborn {
        p.signal("KILL");
    }
    wait_all(Instant::now() + Duration::from_secs(2), reap);
    stubborn
}
