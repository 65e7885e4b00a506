//! swctl: the Lossless operator's CLI, SONiC style.
//!
//! Exit codes: 0 success; 1 the request was understood but the answer is "no" (a configuration refused or
//! invalid, `--check-storm` found a storm); 2 an error at the edge (switch unreachable, file missing,
//! YAML/JSON syntax, bad arguments).
//!
//! Here: the command line ([`Cli`], and the subcommands' arguments in `args.rs`), the commands that work
//! on files (`offline.rs`) and those that talk to a switch over gRPC (`online.rs`); `swctl lab` lives in
//! the library ([`lossless_controlplane::lab`]).

mod args;
mod offline;
mod online;
mod pfcwd;
mod shows;
mod watch;

use args::*;
use clap::{Parser, Subcommand};
use lossless_dataplane::model::config::compile;
use offline::*;
use online::online;
use std::path::PathBuf;
use std::process::ExitCode;

const DEFAULT_SWITCH: &str = "unix:/run/lossless/switch.sock";

#[derive(Parser)]
#[command(name = "swctl", version, about = "Configure and observe Lossless switches, SONiC style")]
struct Cli {
    /// The switch to talk to: unix:PATH or tcp:HOST:PORT (also $LOSSLESS_SWITCH).
    #[arg(long, global = true, env = "LOSSLESS_SWITCH", default_value = DEFAULT_SWITCH)]
    switch: String,
    /// Machine-readable JSON instead of tables (`-j`, as SONiC's show commands spell it, too).
    #[arg(short = 'j', long, global = true)]
    json: bool,
    /// A lab (`swctl lab up`) whose switches --switch may name: `--lab demo --switch sw1` (also $LOSSLESS_LAB).
    #[arg(long, global = true, env = "LOSSLESS_LAB")]
    lab: Option<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Walk through the switch model on the embedded T0 configuration (in-process, virtual time).
    Demo,
    /// Validate a configuration file (SONiC-like YAML or config_db.json): every error as TABLE|key|field.
    Validate {
        file: PathBuf,
        #[command(flatten)]
        headroom: HeadroomArgs,
    },
    /// Compute a lossless PG's headroom (xon, xoff, size): which model and source, then each term.
    Headroom {
        /// Port speed: Mb/s as in PORT|speed (100000), or with a unit (100G, 25G, 400G).
        #[arg(long)]
        speed: String,
        /// Cable length, e.g. 40m.
        #[arg(long, default_value = "5m")]
        cable: String,
        /// Port MTU, bytes.
        #[arg(long, default_value_t = 9100)]
        mtu: u32,
        /// Serdes lanes of the port (PORT|lanes count): 8 doubles the Mellanox xon; 0 when unknown.
        #[arg(long, default_value_t = 0)]
        lanes: u32,
        /// A configuration whose DEVICE_METADATA (hwsku, platform, buffer_model), LOSSLESS_TRAFFIC_PATTERN
        /// and shared headroom pool the calculation follows.
        #[arg(long)]
        config: Option<PathBuf>,
        #[command(flatten)]
        model: HeadroomArgs,
    },
    /// Convert a SONiC config_db.json into Lossless YAML (printed on stdout).
    Import { file: PathBuf },
    /// Measure the numbers sonic-mgmt's QoS tests need for a profile (PFC, ingress and egress drop points,
    /// XON, watermark fill points, cell size) on the switch model with the profile's ASIC personality,
    /// printed in the key layout of sonic-mgmt's `qos_params.<asic>.yaml` (YAML, or JSON with --json).
    #[command(name = "qos-params")]
    QosParams {
        file: PathBuf,
        /// Source port (the first with pfc_enable by default).
        #[arg(long)]
        src: Option<String>,
        /// Destination port (the second with pfc_enable by default).
        #[arg(long)]
        dst: Option<String>,
        /// The topology key to print under.
        #[arg(long, default_value = "topo-any")]
        topology: String,
        #[command(flatten)]
        headroom: HeadroomArgs,
    },
    /// Push a configuration: show what changes, apply it atomically, print the new generation.
    Apply {
        file: PathBuf,
        /// Show the changes and let the switch validate them; change nothing.
        #[arg(long)]
        dry_run: bool,
        /// Allow the push to remove ports, router interfaces, buffer pools and profiles the running
        /// configuration has (the file replaces it whole); without it such a push is refused.
        #[arg(long)]
        replace: bool,
        #[command(flatten)]
        headroom: HeadroomArgs,
    },
    /// Print the running configuration and its generation: YAML with the generation as a comment, or
    /// with --json the tables alone as a config_db.json (the generation on stderr).
    Get,
    /// SONiC-style show commands.
    Show {
        #[command(subcommand)]
        what: Show,
    },
    /// Clear counters (a snapshot the show commands subtract, as sonic-clear does) or watermarks.
    Clear {
        #[command(subcommand)]
        what: Clear,
    },
    /// PFC watchdog: show config/stats, start, stop, poll interval, big red switch.
    Pfcwd {
        #[command(subcommand)]
        cmd: Pfcwd,
    },
    /// Stream switch events (PFC storms, XOFF/XON, configuration) until interrupted: wall-clock time (RFC 3339
    /// UTC), the switch's time (CLOCK_MONOTONIC, s; the clock of rocehost's reports too), kind, port,
    /// message. XOFF/XON floods are folded into one summary line per port, PG and window.
    Watch {
        /// Also print a counters line every this many milliseconds.
        #[arg(long, default_value_t = 0)]
        counters_ms: u32,
        #[command(flatten)]
        filter: WatchArgs,
    },
    /// Network-namespace labs from topology files: up, down, status, validate, and the lossless demo.
    Lab {
        #[command(subcommand)]
        cmd: lossless_controlplane::lab::LabCommand,
    },
    /// Static deadlock check: every cyclic dependency between the lossless buffers of a topology's
    /// switches (routes, ECMP, flooding, PFC maps), as chains of switch:port/priority. Exit status 0 no
    /// cycle, 1 a cycle, 2 unreadable topology.
    DeadlockCheck {
        /// A topology file (configs/topologies/*.yaml).
        topology: PathBuf,
    },
    /// The fabric simulator: a lab's scenario file run on the same models in virtual time, at line rate.
    Sim {
        #[command(subcommand)]
        cmd: lossless_controlplane::sim::SimCommand,
    },
    /// Score buffer/QoS profiles: a fixed traffic suite in the simulator on a fabric built from each, against
    /// UCloud's targets, zero lossless loss and no deadlock cycle; several side by side. Exit status 1
    /// when a target fails.
    Score {
        #[command(flatten)]
        args: lossless_controlplane::score::ScoreArgs,
    },
    /// Generated topologies: `swctl topology clos` (a two-tier Clos from a profile).
    Topology {
        #[command(subcommand)]
        cmd: lossless_controlplane::clos::TopologyCommand,
    },
    /// Hold (or release) egress on a port or one of its queues, like sai_thrift_port_tx_disable.
    Hold {
        port: String,
        queue: Option<u32>,
        /// Release instead of hold.
        #[arg(long)]
        release: bool,
    },
    /// Capture what ports receive and send (PFC frames the switch makes included) as pcapng, or with
    /// --drops the frames the switch drops, each with its reason as a packet comment. `-w -` (the default
    /// when stdout is not a terminal) streams to stdout: `swctl capture Ethernet0 -w - | tshark -r -`.
    Capture {
        /// Ports (SONiC names); none: every port.
        ports: Vec<String>,
        /// Write to this file (`-`: stdout).
        #[arg(short = 'w', long = "write", value_name = "FILE")]
        write: Option<PathBuf>,
        /// Stop after this many frames.
        #[arg(short = 'c', long = "count", value_name = "N")]
        count: Option<u64>,
        /// Only frames the switch drops (ingress at these ports, or refused at their egress queues).
        #[arg(long)]
        drops: bool,
        /// Bytes kept of each frame (0: all).
        #[arg(short = 's', long, default_value_t = 0)]
        snaplen: u32,
    },
    /// `mmuconfig -l`: the buffer pools and profiles of the running configuration.
    Mmuconfig {
        /// List the configuration (the only mmuconfig action swctl has; change buffers with `apply`).
        #[arg(short = 'l', long = "list", required = true)]
        list: bool,
    },
    /// The MAC table: `show mac`, and `sonic-clear fdb all` / per VLAN / per port.
    Fdb {
        #[command(subcommand)]
        cmd: Fdb,
    },
}

#[derive(Subcommand)]
enum Fdb {
    /// `show mac`: every FDB entry (VLAN, MAC, port, static or dynamic).
    Show,
    /// `sonic-clear fdb all`: remove the dynamic entries (of one VLAN and/or port only, if given).
    Flush {
        #[arg(long)]
        vlan: Option<u32>,
        #[arg(long)]
        port: Option<String>,
    },
}
/// SONiC's click options with two-letter short names (`show queue counters -nz`, `show arp -if Vlan1000`),
/// which clap cannot declare, spelled as their long forms.
fn sonic_short_options(args: impl Iterator<Item = std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    args.map(|a| match a.to_str() {
        Some("-nz") => "--nonzero".into(),
        Some("-if") => "--iface".into(),
        _ => a,
    })
    .collect()
}

/// The simulator allocates and frees frame buffers per packet in its hosts and switches (about half a
/// million a virtual millisecond in the 128-host Clos): mimalloc's per-thread free lists serve those
/// with fewer instructions and cache misses than the system allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    restore_sigpipe();
    let cli = Cli::parse_from(sonic_short_options(std::env::args_os()));
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("swctl: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// `swctl show ... | head` must end quietly, like any Unix tool: Rust ignores SIGPIPE and would turn the
/// closed pipe into an error on every print.
#[allow(unsafe_code)]
fn restore_sigpipe() {
    // SAFETY: called first thing in main, before any thread exists; SIG_DFL is a valid disposition.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Demo => {
            print!("{}", lossless_controlplane::demo::run()?);
            Ok(ExitCode::SUCCESS)
        }
        Command::Validate { file, headroom } => validate(&file, &headroom, cli.json),
        Command::Headroom { speed, cable, mtu, lanes, config, model } => {
            headroom_cmd(&speed, &cable, (mtu, lanes), config.as_deref(), &model, cli.json)
        }
        Command::Import { file } => {
            // What import prints must be a config the switch takes: validated as `validate` does (the
            // model's rules only; NULL profiles stay for the switch's headroom calculator to fill).
            let db = read_config(&file)?;
            let mut unresolved = db.clone();
            if let Some(pgs) = unresolved.tables.get_mut("BUFFER_PG") {
                pgs.retain(|_, fields| fields.get("profile").is_none_or(|p| p != "NULL"));
            }
            match compile(&unresolved) {
                Ok(compiled) => {
                    for w in &compiled.warnings {
                        eprintln!("warning: {w}");
                    }
                    print!("{}", serde_yaml::to_string(&db)?);
                    Ok(ExitCode::SUCCESS)
                }
                Err(e) => {
                    eprintln!("{}: {e}", file.display());
                    Ok(ExitCode::FAILURE)
                }
            }
        }
        Command::QosParams { file, src, dst, topology, headroom } => {
            let db = match read_config_with_headroom(&file, &headroom)? {
                Ok(db) => db,
                Err(errors) => {
                    for e in errors {
                        eprintln!("error: {e}");
                    }
                    return Ok(ExitCode::FAILURE);
                }
            };
            let (default_src, default_dst) =
                lossless_controlplane::qos_params::default_ports(&db).map_err(|e| anyhow::anyhow!("{e}"))?;
            let ports = lossless_controlplane::qos_params::Ports {
                src: src.unwrap_or(default_src),
                dst: dst.unwrap_or(default_dst),
                topology,
            };
            let params = lossless_controlplane::qos_params::measure(&db, &ports)
                .map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
            if cli.json {
                println!("{}", serde_json::to_string_pretty(&params)?);
            } else {
                eprintln!(
                    "# measured on the switch model ({} -> {}); sonic-mgmt's layout (tests/qos/files/qos_params.<asic>.yaml)",
                    ports.src, ports.dst
                );
                print!("{}", serde_yaml::to_string(&params)?);
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Lab { cmd } => lossless_controlplane::lab::run(cmd, cli.json),
        Command::Sim { cmd } => lossless_controlplane::sim::run(cmd, cli.json),
        Command::Score { args } => lossless_controlplane::score::run(args, cli.json),
        Command::DeadlockCheck { topology } => Ok(lossless_controlplane::deadlock::run(&topology, cli.json)),
        Command::Topology { cmd } => lossless_controlplane::clos::run(cmd).map(|()| ExitCode::SUCCESS),
        command => {
            let switch =
                lossless_controlplane::lab::resolve_switch(cli.lab.as_deref(), &cli.switch, DEFAULT_SWITCH)?;
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
            runtime.block_on(online(&switch, cli.json, command))
        }
    }
}
