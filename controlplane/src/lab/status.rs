//! `swctl lab status`: every lab under the run directory, its nodes and their health; and `--lab NAME
//! --switch SW` endpoint resolution.

use super::state::{LabState, Phase, STATE_FILE, base_dir, lab_dir, namespace_exists};
use anyhow::{Context, bail};
use lossless_dataplane::server;
use lossless_proto::v1 as pb;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Duration;

/// One lab as `swctl lab status --json` lists it (the JSON is an array of these).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LabStatus {
    pub name: String,
    pub topology: String,
    pub phase: Phase,
    pub run_dir: PathBuf,
    /// Every recorded process runs and answers.
    pub healthy: bool,
    pub nodes: Vec<NodeStatus>,
}

/// One process of a lab: its namespace, whether it runs and answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeStatus {
    pub node: String,
    pub kind: String,
    pub namespace: String,
    pub namespace_exists: bool,
    pub pid: Option<u32>,
    pub alive: bool,
    /// switchd: gRPC answers; rocehost: its ready file exists.
    pub answering: bool,
    /// switchd: its endpoint; rocehost: address and MAC.
    pub detail: String,
}

/// Every lab under the base directory (or only `only`).
pub fn status(only: Option<&str>, tokio: &tokio::runtime::Handle) -> anyhow::Result<Vec<LabStatus>> {
    let base = base_dir();
    let mut names: Vec<String> = match std::fs::read_dir(&base) {
        Ok(entries) => entries
            .filter_map(Result::ok)
            .filter(|e| e.path().join(STATE_FILE).exists())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect(),
        Err(_) => Vec::new(),
    };
    names.sort();
    if let Some(name) = only {
        if !names.iter().any(|n| n == name) {
            bail!("no lab {name} under {}", base.display());
        }
        names.retain(|n| n == name);
    }
    let mut out = Vec::new();
    for name in names {
        let dir = base.join(&name);
        let Ok(state) = LabState::load(&dir) else { continue };
        let mut nodes = Vec::new();
        for p in &state.processes {
            let alive = p.pid.is_some_and(|pid| pid.alive());
            let (answering, detail) = match p.kind.as_str() {
                "switchd" => {
                    let endpoint = state.switch(&p.node).map(|s| s.endpoint.clone()).unwrap_or_default();
                    let answering = alive && switch_answers(tokio, &endpoint);
                    (answering, endpoint)
                }
                _ => {
                    let host = state.hosts.iter().find(|h| h.name == p.node);
                    let ready = host.is_some_and(|h| h.ready_file.exists());
                    (
                        alive && ready,
                        host.map(|h| format!("{} {} {}", h.interface, h.ip, h.mac)).unwrap_or_default(),
                    )
                }
            };
            nodes.push(NodeStatus {
                node: p.node.clone(),
                kind: p.kind.clone(),
                namespace: p.namespace.clone(),
                namespace_exists: namespace_exists(&p.namespace),
                pid: p.pid.map(|p| p.pid),
                alive,
                answering,
                detail,
            });
        }
        let healthy =
            state.phase == Phase::Up && nodes.iter().all(|n| n.alive && n.answering && n.namespace_exists);
        out.push(LabStatus {
            name: state.name.clone(),
            topology: state.topology.clone(),
            phase: state.phase,
            run_dir: dir,
            healthy,
            nodes,
        });
    }
    Ok(out)
}

fn switch_answers(tokio: &tokio::runtime::Handle, endpoint: &str) -> bool {
    tokio.block_on(async {
        let Ok(Ok(mut c)) = tokio::time::timeout(Duration::from_secs(2), server::connect(endpoint)).await
        else {
            return false;
        };
        matches!(tokio::time::timeout(Duration::from_secs(2), c.get(pb::GetRequest {})).await, Ok(Ok(_)))
    })
}

pub(super) fn describe_status(labs: &[LabStatus]) -> String {
    use std::fmt::Write as _;
    if labs.is_empty() {
        return format!("no labs (under {})\n", base_dir().display());
    }
    let mut out = String::new();
    for lab in labs {
        let phase = match lab.phase {
            Phase::Starting => "starting",
            Phase::Up => "up",
            Phase::Stopping => "stopping",
        };
        let health = if lab.healthy { "healthy" } else { "DEGRADED" };
        let _ = writeln!(
            out,
            "Lab {} ({}): {phase}, {health}; run directory {}",
            lab.name,
            lab.topology,
            lab.run_dir.display()
        );
        let mut rows = vec![
            ["NODE", "KIND", "NAMESPACE", "PID", "PROCESS", "ANSWERING", "DETAIL"].map(String::from).to_vec(),
        ];
        for n in &lab.nodes {
            let process = match (n.pid, n.alive) {
                (None, _) => "not started",
                (Some(_), true) => "alive",
                (Some(_), false) => "dead",
            };
            let answering = match (n.kind.as_str(), n.answering) {
                ("switchd", true) => "gRPC ok",
                ("switchd", false) => "gRPC down",
                (_, true) => "ready",
                (_, false) => "not ready",
            };
            let namespace =
                if n.namespace_exists { n.namespace.clone() } else { format!("{} (missing)", n.namespace) };
            rows.push(vec![
                n.node.clone(),
                n.kind.clone(),
                namespace,
                n.pid.map(|p| p.to_string()).unwrap_or_else(|| "-".into()),
                process.into(),
                answering.into(),
                n.detail.clone(),
            ]);
        }
        out.push_str(&left_aligned(&rows));
    }
    out
}

/// Rows of cells as left-aligned columns, two spaces apart, indented by two.
fn left_aligned(rows: &[Vec<String>]) -> String {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|i| rows.iter().filter_map(|r| r.get(i)).map(|c| c.chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for row in rows {
        let cells: Vec<String> = row.iter().zip(&widths).map(|(c, w)| format!("{c:<w$}")).collect();
        out.push_str("  ");
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

/// `--lab NAME --switch SW`: SW's endpoint in lab NAME. An explicit `unix:`/`tcp:` endpoint is kept, except
/// swctl's default, which becomes the lab's only switch.
pub fn resolve_switch(lab: &str, switch: &str, default_endpoint: &str) -> anyhow::Result<String> {
    let dir = lab_dir(lab);
    let state =
        LabState::load(&dir).with_context(|| format!("no lab {lab} (swctl lab status lists them)"))?;
    if let Some(s) = state.switch(switch) {
        return Ok(s.endpoint.clone());
    }
    let names: Vec<&str> = state.switches.iter().map(|s| s.name.as_str()).collect();
    if switch == default_endpoint {
        return match state.switches.as_slice() {
            [only] => Ok(only.endpoint.clone()),
            _ => {
                bail!("lab {lab} has {} switches ({}): name one with --switch", names.len(), names.join(", "))
            }
        };
    }
    if switch.starts_with("unix:") || switch.starts_with("tcp:") {
        return Ok(switch.to_owned());
    }
    bail!("lab {lab} has no switch {switch} (switches: {})", names.join(", "))
}
