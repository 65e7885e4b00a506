//! Network-namespace labs: a topology file ([`topology`]) becomes one namespace per node, veth pairs
//! between them, one `switchd` per switch and one `rocehost` per host ([`run`](mod@run)); `swctl lab demo`
//! ([`demo`]) runs the README's main scenario on one, `swctl lab run` ([`scenario`]) a scenario file.
//!
//! ```text
//! swctl lab up configs/topologies/demo.yaml     # namespaces ll-demo-sw1, ll-demo-h1, ...; prints how to reach them
//! swctl --lab demo --switch sw1 show pfc counters
//! swctl lab status                              # labs, nodes, pid alive, gRPC answering
//! swctl lab down demo                           # or the topology file; also after a crash
//! swctl lab demo --seconds 10                   # a 2:1 incast: lossless loses nothing, lossy tail-drops
//! swctl lab run configs/scenarios/pfc-storm.yaml # a timeline of steps and expectations ([`scenario`])
//! ```

pub mod demo;
pub mod run;
pub mod scenario;
pub mod topology;

use anyhow::bail;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use topology::Topology;

/// The embedded demo: the topology and the switch configuration it names.
pub mod embedded {
    pub const DEMO_TOPOLOGY: &str = include_str!("../../../configs/topologies/demo.yaml");
    pub const DEMO_SWITCH: &str = include_str!("../../../configs/topologies/demo-switch.yaml");
    /// Files the embedded topology may name.
    pub const FILES: &[(&str, &str)] = &[("demo-switch.yaml", DEMO_SWITCH)];
}

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Ctrl-C (or SIGTERM) arrived: long operations stop at their next step and clean up.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::Relaxed)
}

pub(crate) fn check_interrupted() -> anyhow::Result<()> {
    if interrupted() {
        bail!("interrupted");
    }
    Ok(())
}

/// `swctl lab ...`
#[derive(clap::Subcommand, Debug)]
pub enum LabCommand {
    /// Build a topology: namespaces `ll-<lab>-<node>`, veth pairs, switchd per switch, rocehost per host,
    /// configurations pushed; prints how to reach each node.
    Up {
        /// Topology file (configs/topologies/*.yaml).
        file: PathBuf,
        /// Lab name (default: the topology's `name`, else its file name).
        #[arg(long)]
        name: Option<String>,
    },
    /// Remove everything a lab created: processes, namespaces, sockets, its run directory. Works after a
    /// crash or a half-finished `up` too.
    Down {
        /// A lab name or its topology file.
        lab: String,
        /// Also when the swctl that created it (a running demo) is still alive.
        #[arg(long)]
        force: bool,
    },
    /// List labs, their nodes and process health (pid alive, gRPC answering, host ready).
    Status {
        /// Only this lab.
        name: Option<String>,
    },
    /// Check a topology file (switch configurations included) without creating anything.
    Validate { file: PathBuf },
    /// Run a scenario (configs/scenarios/*.yaml): a topology, a timeline of steps (traffic, storm,
    /// stop-host, flush-fdb, apply) and expectations; prints a report (--json: as JSON), exit 1 when an
    /// expectation fails; removes the lab.
    Run {
        file: PathBuf,
        /// Only validate the scenario file.
        #[arg(long)]
        check: bool,
    },
    /// A 2:1 incast on lossless priority 3 plus lossy priority 0 traffic into one 1 Gb/s port: lossless
    /// loses nothing while PFC pauses the senders and ECN marks; lossy tail-drops. Prints per-class goodput
    /// and plots the queue depth (SVG), then removes the lab.
    Demo {
        /// A topology with a `traffic` section (default: the embedded configs/topologies/demo.yaml).
        file: Option<PathBuf>,
        /// Seconds of traffic.
        #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=3600))]
        seconds: u32,
        /// Lab name (default: the topology's, with a suffix when that lab exists).
        #[arg(long)]
        name: Option<String>,
    },
}

/// Runs a `swctl lab` command. Ctrl-C and SIGTERM make it clean up and exit.
pub fn run(command: LabCommand, json: bool) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let handle = runtime.handle().clone();
    runtime.block_on(async move {
        let signals = tokio::spawn(watch_signals());
        let result = tokio::task::spawn_blocking(move || dispatch(command, json, &handle)).await;
        signals.abort();
        result.map_err(|e| anyhow::anyhow!("the lab task failed: {e}"))?
    })
}

async fn watch_signals() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (signal(SignalKind::terminate()), signal(SignalKind::interrupt()))
    else {
        return;
    };
    loop {
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
        if INTERRUPTED.swap(true, Ordering::Relaxed) {
            eprintln!("swctl: still cleaning up");
        } else {
            eprintln!("\nswctl: interrupted; cleaning up");
        }
    }
}

fn dispatch(command: LabCommand, json: bool, tokio: &tokio::runtime::Handle) -> anyhow::Result<ExitCode> {
    match command {
        LabCommand::Up { file, name } => {
            let topology = Topology::load(&file)?;
            let options = run::UpOptions { name, ..run::UpOptions::default() };
            let lab = run::up(&topology, &options, tokio)?;
            let state = lab.detach();
            if json {
                println!("{}", serde_json::to_string_pretty(&state)?);
            } else {
                print!("{}", describe_up(&state, &topology));
            }
            Ok(ExitCode::SUCCESS)
        }
        LabCommand::Down { lab, force } => {
            let name = lab_name_of(&lab)?;
            let report = run::down(&name, force)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                for s in &report.stopped {
                    println!("stopped {s}");
                }
                for ns in &report.namespaces_deleted {
                    println!("deleted namespace {ns}");
                }
                if let Some(dir) = &report.run_dir_removed {
                    println!("removed {}", dir.display());
                }
                for p in &report.problems {
                    println!("problem: {p}");
                }
                println!("lab {name} is down");
            }
            Ok(if report.problems.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
        }
        LabCommand::Status { name } => {
            let labs = run::status(name.as_deref(), tokio)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&labs)?);
            } else {
                print!("{}", describe_status(&labs));
            }
            Ok(ExitCode::SUCCESS)
        }
        LabCommand::Validate { file } => {
            let t = Topology::load(&file)?;
            println!(
                "{}: valid: lab {}, {} switch(es), {} host(s), {} link(s), {} flow(s)",
                file.display(),
                t.name,
                t.switches.len(),
                t.hosts.len(),
                t.links.len(),
                t.traffic.len()
            );
            Ok(ExitCode::SUCCESS)
        }
        LabCommand::Run { file, check } => {
            let s = scenario::Scenario::load(&file)?;
            if check {
                println!(
                    "{}: valid: scenario {}, {} flow(s), {} storm(s), {} other step(s), {} expectation(s)",
                    file.display(),
                    s.name,
                    s.topology.traffic.len(),
                    s.storms.len(),
                    s.actions.len(),
                    s.expect.len()
                );
                return Ok(ExitCode::SUCCESS);
            }
            scenario::run(&s, json, tokio)
        }
        LabCommand::Demo { file, seconds, name } => {
            let topology = match &file {
                Some(f) => Topology::load(f)?,
                None => Topology::parse(
                    embedded::DEMO_TOPOLOGY,
                    "demo",
                    "embedded configs/topologies/demo.yaml",
                    &topology::Embedded(embedded::FILES),
                )?,
            };
            let progress = std::io::stderr().is_terminal();
            demo::run(&topology, &demo::DemoOptions { seconds, name, json, live_progress: progress }, tokio)
        }
    }
}

/// `lab down FILE|NAME`: a path to an existing file names the lab of that topology (its `name:`, else the
/// file name), without validating the rest (the file may have changed since `up`).
fn lab_name_of(arg: &str) -> anyhow::Result<String> {
    let path = Path::new(arg);
    if !path.is_file() {
        return Ok(arg.to_owned());
    }
    let text = std::fs::read_to_string(path)?;
    let value: serde_yaml::Value =
        serde_yaml::from_str(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    Ok(match value.get("name").and_then(|n| n.as_str()) {
        Some(name) => name.to_owned(),
        None => path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default(),
    })
}

/// `--lab NAME --switch SW` → SW's endpoint in that lab; without `--lab`, `switch` as given.
pub fn resolve_switch(lab: Option<&str>, switch: &str, default_endpoint: &str) -> anyhow::Result<String> {
    match lab {
        Some(lab) => run::resolve_switch(lab, switch, default_endpoint),
        None => Ok(switch.to_owned()),
    }
}

fn describe_up(state: &run::LabState, topology: &Topology) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let dir = run::lab_dir(&state.name);
    let _ = writeln!(out, "Lab {} is up ({}; run directory {})", state.name, state.topology, dir.display());
    for sw in &state.switches {
        let pid = state.process(&sw.name).and_then(|p| p.pid).map(|p| p.pid).unwrap_or_default();
        let _ = writeln!(
            out,
            "  switch {:<8} namespace {:<20} switchd pid {pid}, gRPC {}",
            sw.name, sw.namespace, sw.endpoint
        );
        for p in &sw.ports {
            let _ = writeln!(out, "           {:<10} on {:<10} -- {}", p.port, p.interface, p.peer);
        }
    }
    for h in &state.hosts {
        let pid = state.process(&h.name).and_then(|p| p.pid).map(|p| p.pid).unwrap_or_default();
        let attached = topology
            .host(&h.name)
            .and_then(|t| t.attached.as_ref())
            .map(|e| format!(" -- {e}"))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "  host   {:<8} namespace {:<20} rocehost pid {pid} (responder), {} {} {}{attached}",
            h.name, h.namespace, h.interface, h.ip, h.mac
        );
    }
    let _ = writeln!(out, "Reach it:");
    if let Some(sw) = state.switches.first() {
        let _ = writeln!(out, "  swctl --switch {} show pfc counters", sw.endpoint);
        let _ = writeln!(out, "  swctl --lab {} --switch {} show queue counters", state.name, sw.name);
    }
    if let [a, b, ..] = state.hosts.as_slice() {
        let ip = b.ip.split('/').next().unwrap_or_default();
        let _ =
            writeln!(out, "  ip netns exec {} ping -c 1 {ip}        # {} -> {}", a.namespace, a.name, b.name);
    }
    let _ = writeln!(out, "  swctl lab status {}", state.name);
    let _ = writeln!(out, "  swctl lab down {}", state.name);
    out
}

fn describe_status(labs: &[run::LabStatus]) -> String {
    use std::fmt::Write as _;
    if labs.is_empty() {
        return format!("no labs (under {})\n", run::base_dir().display());
    }
    let mut out = String::new();
    for lab in labs {
        let phase = match lab.phase {
            run::Phase::Starting => "starting",
            run::Phase::Up => "up",
            run::Phase::Stopping => "stopping",
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
