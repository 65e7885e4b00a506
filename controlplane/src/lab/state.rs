//! A lab's record on disk, `<run dir>/<lab>/state.json`, and the processes it names.
//!
//! The state file is written *before* each resource is created, so whatever happens to `swctl` (an
//! error, a panic, Ctrl-C, `kill -9`), `swctl lab down NAME` ([`super::down`]) finds everything: processes
//! by pid (checked against their start time, so a recycled pid is left alone) and, as a second net, every
//! process still inside one of the lab's namespaces (`ip netns pids`); then the namespaces (their veths go
//! with them) and the run directory with its sockets.

use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Where labs keep their state unless `$LOSSLESS_LAB_DIR` says otherwise.
pub const DEFAULT_BASE_DIR: &str = "/run/lossless/labs";
/// Every namespace of a lab is `ll-<lab>-<node>`.
pub const NAMESPACE_PREFIX: &str = "ll-";
pub(super) const STATE_FILE: &str = "state.json";

/// The directory holding every lab's run directory.
pub fn base_dir() -> PathBuf {
    std::env::var_os("LOSSLESS_LAB_DIR").map(PathBuf::from).unwrap_or_else(|| PathBuf::from(DEFAULT_BASE_DIR))
}

pub fn lab_dir(name: &str) -> PathBuf {
    base_dir().join(name)
}

pub fn namespace_name(lab: &str, node: &str) -> String {
    format!("{NAMESPACE_PREFIX}{lab}-{node}")
}

// ------------------------------------------------------------------------------------------------ state

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// `lab up` (or the demo) is creating resources.
    #[default]
    Starting,
    /// Everything answered and configurations were pushed.
    Up,
    /// Teardown began.
    Stopping,
}

/// What a lab consists of, as recorded on disk.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct LabState {
    pub name: String,
    pub topology: String,
    pub phase: Phase,
    pub created_unix_s: u64,
    /// The swctl process creating the lab (and, for the demo, running it), with its start time: while it
    /// lives, the lab is in use.
    pub owner: Option<Pid>,
    /// Namespaces, recorded before each is created.
    pub namespaces: Vec<String>,
    pub switches: Vec<SwitchState>,
    pub hosts: Vec<HostState>,
    pub processes: Vec<ProcessState>,
}

pub use lossless_dataplane::io::netns::{namespace_exists, namespace_pids};
pub use lossless_dataplane::process::Pid;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SwitchState {
    pub name: String,
    pub namespace: String,
    /// `unix:<run dir>/<switch>.sock`
    pub endpoint: String,
    pub socket: PathBuf,
    /// Port → interface inside the namespace, with the far end of its link.
    pub ports: Vec<PortBinding>,
    /// switchd's Prometheus endpoint inside the namespace (`127.0.0.1:9101`), when `lab up --metrics`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PortBinding {
    pub port: String,
    pub interface: String,
    pub peer: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HostState {
    pub name: String,
    pub namespace: String,
    pub interface: String,
    /// With the prefix length.
    pub ip: String,
    pub mac: String,
    pub ready_file: PathBuf,
    pub report: PathBuf,
    /// Flows this host sends (`--flow` arguments); empty for a responder.
    pub flows: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ProcessState {
    pub node: String,
    /// `switchd` or `rocehost`.
    pub kind: String,
    pub namespace: String,
    /// `None` between recording the intent and the process existing.
    pub pid: Option<Pid>,
    pub command: Vec<String>,
    pub log: PathBuf,
}

impl LabState {
    pub fn load(dir: &Path) -> anyhow::Result<LabState> {
        let path = dir.join(STATE_FILE);
        let text =
            std::fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?;
        serde_json::from_str(&text).with_context(|| format!("{}: not a lab state file", path.display()))
    }

    /// Writes the state atomically (a temporary file renamed over the old one).
    pub fn save(&self, dir: &Path) -> anyhow::Result<()> {
        let tmp = dir.join(format!("{STATE_FILE}.tmp"));
        std::fs::write(&tmp, serde_json::to_vec_pretty(self)?)
            .with_context(|| format!("writing {}", tmp.display()))?;
        std::fs::rename(&tmp, dir.join(STATE_FILE))
            .with_context(|| format!("writing {}", dir.join(STATE_FILE).display()))
    }

    pub fn switch(&self, name: &str) -> Option<&SwitchState> {
        self.switches.iter().find(|s| s.name == name)
    }

    pub fn process(&self, node: &str) -> Option<&ProcessState> {
        self.processes.iter().find(|p| p.node == node)
    }

    /// The lab's creator is still running (an `up` in progress or a demo).
    pub fn owner_alive(&self) -> bool {
        self.owner.is_some_and(|o| o.alive())
    }
}

/// `switchd` or `rocehost`: next to the running swctl, else on PATH.
pub fn find_binary(name: &str) -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe().ok();
    if let Some(dir) = exe.as_deref().and_then(Path::parent) {
        let candidate = dir.join(name);
        if candidate.is_file() {
            return Ok(candidate);
        }
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    if let Some(found) = std::env::split_paths(&path).map(|d| d.join(name)).find(|p| p.is_file()) {
        return Ok(found);
    }
    bail!(
        "{name} not found next to swctl ({}) or on PATH; build it with `cargo build --release -p lossless-dataplane --bin {name}`",
        exe.as_deref().and_then(Path::parent).map(|d| d.display().to_string()).unwrap_or_else(|| "?".into())
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespace_names_carry_lab_and_node() {
        assert_eq!(namespace_name("demo", "h1"), "ll-demo-h1");
    }
}
