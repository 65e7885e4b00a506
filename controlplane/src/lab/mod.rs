//! Network-namespace labs: a topology file ([`topology`]) becomes one namespace per node, veth pairs
//! between them, one `switchd` per switch and one `rocehost` per host ([`up`](mod@up), [`down`](mod@down),
//! [`status`](mod@status), all recorded in [`state`]); `swctl lab demo`
//! ([`demo`]) runs the README's main scenario on one, `swctl lab run` ([`scenario`]) a scenario file.
//!
//! ```text
//! swctl lab up configs/topologies/demo.yaml     # namespaces ll-demo-sw1, ll-demo-h1, ...; prints how to reach them
//! swctl --lab demo --switch sw1 show pfc counters
//! swctl lab status                              # labs, nodes, pid alive, gRPC answering
//! swctl lab down demo                           # or the topology file; also after a crash
//! swctl lab demo --seconds 10                   # a 2:1 incast: lossless loses nothing, lossy tail-drops
//! swctl lab run configs/scenarios/pfc-storm.yaml # a timeline of steps and expectations ([`scenario`])
//! swctl lab pingmesh demo --interval-ms 1 --duration-s 5 --out /tmp/pm   # latency matrix ([`pingmesh`](mod@pingmesh))
//! ```

pub mod demo;
pub mod down;
pub mod pingmesh;
pub mod scenario;
pub mod state;
pub mod status;
mod switchd;
pub mod topology;
pub mod up;

use anyhow::{Context, bail};
use lossless_dataplane::shutdown::Shutdown;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::OnceLock;
use topology::Topology;

/// The embedded demo: the topology and the switch configuration it names.
pub mod embedded {
    pub const DEMO_TOPOLOGY: &str = include_str!("../../../configs/topologies/demo.yaml");
    pub const DEMO_SWITCH: &str = include_str!("../../../configs/topologies/demo-switch.yaml");
    /// Files the embedded topology may name.
    pub const FILES: &[(&str, &str)] = &[("demo-switch.yaml", DEMO_SWITCH)];
}

/// SIGINT/SIGTERM, caught while a lab command runs.
static SIGNALS: OnceLock<Shutdown> = OnceLock::new();

/// Ctrl-C (or SIGTERM) arrived: long operations stop at their next step and clean up.
pub fn interrupted() -> bool {
    SIGNALS.get().is_some_and(|s| s.received().is_some())
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
        /// Every switchd serves Prometheus metrics at 127.0.0.1:PORT inside its namespace
        /// (`ip netns exec ll-<lab>-<switch> curl -s 127.0.0.1:PORT/metrics`).
        #[arg(long, value_name = "PORT")]
        metrics: Option<u16>,
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
    /// Write a topology (Lossless or containerlab format) in containerlab's format: `DIR/<name>.clab.yml`
    /// and each switch's configuration beside it (its startup-config).
    Export {
        file: PathBuf,
        /// containerlab's format (the only export there is).
        #[arg(long, required = true)]
        containerlab: bool,
        /// Directory to write into (created).
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
    },
    /// Run a scenario (configs/scenarios/*.yaml): a topology, a timeline of steps (traffic, storm,
    /// rx-stuck, stop-host, flush-fdb, apply) and expectations; prints a report (--json: as JSON), exit 1 when an
    /// expectation fails; removes the lab.
    Run {
        file: PathBuf,
        /// Only validate the scenario file.
        #[arg(long)]
        check: bool,
    },
    /// Pingmesh on a running lab: every host probes every other (small RDMA ping/pongs) at
    /// --interval-ms for --duration-s; prints the latency matrix (p50/p99 µs per pair) and writes
    /// pingmesh.json, pingmesh.svg and estats.json to --out. Exit 1 when a pair got no answer.
    Pingmesh {
        /// The lab's name (or its topology file).
        lab: String,
        /// One probe from each host to each other host per interval, ms.
        #[arg(long, default_value_t = 1.0)]
        interval_ms: f64,
        /// How long to probe, seconds.
        #[arg(long, default_value_t = 5.0)]
        duration_s: f64,
        /// DSCP of the probes: the class they measure (3: lossless in SONiC's AZURE maps).
        #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u8).range(0..=63))]
        dscp: u8,
        /// PFC priority of the probes [default: the DSCP's, 3→3, 4→4, else DSCP>>3].
        #[arg(long, value_parser = clap::value_parser!(u8).range(0..=7))]
        priority: Option<u8>,
        /// Output directory [default: pingmesh-LAB].
        #[arg(long)]
        out: Option<PathBuf>,
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
    if SIGNALS.get().is_none() {
        let signals = Shutdown::install_with(|_, n| {
            if n == 1 {
                eprintln!("\nswctl: interrupted; cleaning up");
            } else {
                eprintln!("swctl: still cleaning up");
            }
        })?;
        let _ = SIGNALS.set(signals);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let handle = runtime.handle().clone();
    runtime.block_on(async move {
        let result = tokio::task::spawn_blocking(move || dispatch(command, json, &handle)).await;
        result.map_err(|e| anyhow::anyhow!("the lab task failed: {e}"))?
    })
}

/// Refuses, with the reason, a lab command that needs root when run by another user (network namespaces,
/// veth pairs and netem all need CAP_NET_ADMIN and CAP_SYS_ADMIN; without them `ip netns add` fails with
/// a mount error that says nothing of this).
fn needs_root(what: &str) -> anyhow::Result<()> {
    // The effective UID, the second field of /proc/self/status's `Uid:` line (no unsafe libc call).
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let euid = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|ids| ids.split_whitespace().nth(1))
        .and_then(|id| id.parse::<u32>().ok());
    if euid.is_some_and(|id| id != 0) {
        anyhow::bail!(
            "swctl lab {what} needs root: it creates network namespaces and veth pairs; run it as root (or \
             with sudo)"
        );
    }
    Ok(())
}

fn dispatch(command: LabCommand, json: bool, tokio: &tokio::runtime::Handle) -> anyhow::Result<ExitCode> {
    match &command {
        LabCommand::Up { .. } => needs_root("up")?,
        LabCommand::Down { .. } => needs_root("down")?,
        LabCommand::Run { check: false, .. } => needs_root("run")?,
        LabCommand::Demo { .. } => needs_root("demo")?,
        LabCommand::Pingmesh { .. } => needs_root("pingmesh")?,
        LabCommand::Status { .. }
        | LabCommand::Validate { .. }
        | LabCommand::Export { .. }
        | LabCommand::Run { check: true, .. } => {}
    }
    match command {
        LabCommand::Up { file, name, metrics } => {
            let topology = Topology::load(&file)?;
            if let Some(w) = crate::deadlock::check(&topology).warning() {
                eprintln!("warning: {w}");
            }
            let options = up::UpOptions { name, metrics_port: metrics, ..up::UpOptions::default() };
            let lab = up::up(&topology, &options, tokio)?;
            let state = lab.detach();
            if json {
                println!("{}", serde_json::to_string_pretty(&state)?);
            } else {
                print!("{}", up::describe_up(&state, &topology));
            }
            Ok(ExitCode::SUCCESS)
        }
        LabCommand::Down { lab, force } => {
            let name = lab_name_of(&lab)?;
            let report = down::down(&name, force)?;
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
            let labs = status::status(name.as_deref(), tokio)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&labs)?);
            } else {
                print!("{}", status::describe_status(&labs));
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
        LabCommand::Export { file, containerlab: _, out } => {
            let t = Topology::load(&file)?;
            let (yaml, configs, notes) = topology::containerlab::export(&t)?;
            std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
            let path = out.join(format!("{}.clab.yml", t.name));
            std::fs::write(&path, yaml).with_context(|| format!("writing {}", path.display()))?;
            for (name, text) in &configs {
                std::fs::write(out.join(name), text).with_context(|| format!("writing {name}"))?;
            }
            for n in &notes {
                eprintln!("note: {n}");
            }
            println!("{}: {} switch configuration(s) beside it", path.display(), configs.len());
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
            if let Some(w) = crate::deadlock::check(&s.topology).warning() {
                eprintln!("warning: {w}");
            }
            scenario::run(&s, json, tokio)
        }
        LabCommand::Pingmesh { lab, interval_ms, duration_s, dscp, priority, out } => {
            let name = lab_name_of(&lab)?;
            let options = pingmesh::PingmeshOptions { interval_ms, duration_s, dscp, priority, out };
            pingmesh::run(&name, &options, json)
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
    lossless_dataplane::model::config::check_config_text(&text)
        .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
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
        Some(lab) => status::resolve_switch(lab, switch, default_endpoint),
        None => Ok(switch.to_owned()),
    }
}
