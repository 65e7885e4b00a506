//! swctl: the Lossless operator's CLI, SONiC style.
//!
//! Exit codes: 0 success; 1 the request was understood but the answer is "no" (a configuration refused or
//! invalid, `--check-storm` found a storm); 2 an error at the edge (switch unreachable, file missing,
//! YAML/JSON syntax, bad arguments).

use anyhow::{Context, bail};
use clap::{Parser, Subcommand, ValueEnum};
use lossless_controlplane::headroom::{
    self, Asic, FormulaOptions, HeadroomModel, ModelChoice, ModelRequest, PortParams, Selection,
    TrafficPattern,
};
use lossless_controlplane::{diff, show, snapshot};
use lossless_dataplane::model::config::{ConfigDb, compile};
use lossless_dataplane::server::{self, config_db_from_proto, config_db_to_proto};
use lossless_proto::v1::{self as pb, switch_client::SwitchClient};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use tonic::transport::Channel;

const DEFAULT_SWITCH: &str = "unix:/run/lossless/switch.sock";

#[derive(Parser)]
#[command(name = "swctl", version, about = "Configure and observe Lossless switches, SONiC style")]
struct Cli {
    /// The switch to talk to: unix:PATH or tcp:HOST:PORT (also $LOSSLESS_SWITCH).
    #[arg(long, global = true, env = "LOSSLESS_SWITCH", default_value = DEFAULT_SWITCH)]
    switch: String,
    /// Machine-readable JSON instead of tables.
    #[arg(long, global = true)]
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
    /// Stream switch events (PFC storms, XOFF/XON, configuration) until interrupted.
    Watch {
        /// Also print a counters line every this many milliseconds.
        #[arg(long, default_value_t = 0)]
        counters_ms: u32,
    },
    /// Network-namespace labs from topology files: up, down, status, validate, and the lossless demo.
    Lab {
        #[command(subcommand)]
        cmd: lossless_controlplane::lab::LabCommand,
    },
    /// Hold (or release) egress on a port or one of its queues, like sai_thrift_port_tx_disable.
    Hold {
        port: String,
        queue: Option<u32>,
        /// Release instead of hold.
        #[arg(long)]
        release: bool,
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

/// How headroom is computed (`swctl headroom`, and `NULL` BUFFER_PG profiles in validate/apply).
#[derive(clap::Args, Clone)]
struct HeadroomArgs {
    /// auto: the shipped lookup table of the hwsku (DEVICE_METADATA or --hwsku) unless the buffer model is
    /// dynamic, else the dynamic formula with the ASIC of the platform or hwsku, else with sonic-vs's;
    /// lookup (a pg_profile_lookup.ini); dynamic (SONiC's formula); ieee (worst case).
    #[arg(long = "model", value_enum, default_value_t = ModelKind::Auto)]
    model: ModelKind,
    /// The SKU, instead of DEVICE_METADATA|localhost|hwsku (e.g. Force10-S6100, ACS-MSN3800).
    #[arg(long)]
    hwsku: Option<String>,
    /// The platform, instead of DEVICE_METADATA|localhost|platform (e.g. x86_64-mlnx_msn3800-r0).
    #[arg(long)]
    platform: Option<String>,
    /// A lookup table: a shipped one (th, sn2700, th-6100-BALANCED, or a hwsku such as Force10-S6100) or a
    /// pg_profile_lookup.ini file. With --model auto, giving one chooses it.
    #[arg(long)]
    lookup: Option<String>,
    /// The dynamic formula's ASIC_TABLE: vs, spectrum1 … spectrum6 (default: the platform's or hwsku's,
    /// else vs). With --model auto, giving one chooses the formula.
    #[arg(long)]
    asic: Option<String>,
    /// The formula's revision: master (sonic-swss today), swss-3235, swss-1930, swss-1781, mellanox-tables.
    #[arg(long, default_value = "master")]
    formula: String,
    /// Gearbox delay, ns (PERIPHERAL_TABLE gearbox_delay; default: the platform's, 400 on the SN3800).
    #[arg(long)]
    gearbox_delay: Option<u32>,
    /// Largest lossless packet, bytes (LOSSLESS_TRAFFIC_PATTERN mtu; a config's own value wins).
    #[arg(long, default_value_t = 1024)]
    lossless_mtu: u32,
    /// Small-packet percentage (LOSSLESS_TRAFFIC_PATTERN; a config's own value wins); 50 as
    /// buffers_config.j2 writes it.
    #[arg(long, default_value_t = 50)]
    small_packet_percentage: u32,
    /// Shared headroom pool on: size = xon (xoff comes from the pool).
    #[arg(long)]
    shp: bool,
}

#[derive(Clone, Copy, ValueEnum)]
enum ModelKind {
    Auto,
    Lookup,
    Dynamic,
    Ieee,
}

impl HeadroomArgs {
    fn request(&self) -> anyhow::Result<ModelRequest> {
        let asic = match &self.asic {
            None => None,
            Some(name) => Some(Asic::from_name(name).ok_or_else(|| {
                let names: Vec<&str> = Asic::ALL.iter().map(|a| a.cli_name()).collect();
                anyhow::anyhow!("--asic {name}: use one of {}", names.join(", "))
            })?),
        };
        let formula = FormulaOptions::from_name(&self.formula).ok_or_else(|| {
            let names: Vec<&str> = FormulaOptions::NAMED.iter().map(|(n, _)| *n).collect();
            anyhow::anyhow!("--formula {}: use one of {}", self.formula, names.join(", "))
        })?;
        if self.small_packet_percentage > 100 {
            bail!("--small-packet-percentage {}: a percentage is 0..=100", self.small_packet_percentage);
        }
        Ok(ModelRequest {
            choice: match self.model {
                ModelKind::Auto => ModelChoice::Auto,
                ModelKind::Lookup => ModelChoice::Lookup,
                ModelKind::Dynamic => ModelChoice::Dynamic,
                ModelKind::Ieee => ModelChoice::Ieee,
            },
            hwsku: self.hwsku.clone(),
            platform: self.platform.clone(),
            lookup: self.lookup.clone(),
            asic,
            formula,
            gearbox_delay_ns: self.gearbox_delay,
            pattern: TrafficPattern {
                lossless_mtu: self.lossless_mtu,
                small_packet_percentage: self.small_packet_percentage,
            },
            shp: self.shp,
        })
    }

    /// The model and why, for a configuration (or none).
    fn selection(&self, db: Option<&ConfigDb>) -> anyhow::Result<Selection> {
        self.request()?.select(db).map_err(anyhow::Error::msg)
    }

    fn model(&self, db: Option<&ConfigDb>) -> anyhow::Result<HeadroomModel> {
        Ok(self.selection(db)?.model)
    }
}

/// `swctl headroom`: one port's headroom, the model and source it came from, as text or JSON.
fn headroom_cmd(
    speed: &str,
    cable: &str,
    port: (u32, u32),
    config: Option<&Path>,
    args: &HeadroomArgs,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let (mtu, lanes) = port;
    let speed_mbps = headroom::parse_speed_mbps(speed).map_err(anyhow::Error::msg)?;
    let cable_m = headroom::parse_cable_arg(cable).map_err(anyhow::Error::msg)?;
    let db = config.map(read_config).transpose()?;
    let selection = args.selection(db.as_ref())?;
    let port = PortParams::new(speed_mbps, cable_m, mtu).with_lanes(lanes);
    let report = selection.report(&port).map_err(anyhow::Error::msg)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{report}");
    }
    Ok(ExitCode::SUCCESS)
}

/// Reads a configuration and fills `NULL` BUFFER_PG profiles with computed headroom, as SONiC's buffer
/// manager does (`pg_lossless_<speed>_<cable>_profile`).
fn read_config_with_headroom(
    path: &Path,
    headroom: &HeadroomArgs,
) -> anyhow::Result<Result<ConfigDb, Vec<lossless_dataplane::model::config::ConfigIssue>>> {
    let mut db = read_config(path)?;
    let model = headroom.model(Some(&db))?;
    Ok(headroom::generate_lossless_profiles(&mut db, &model).map(|_| db))
}

#[derive(Subcommand)]
enum Show {
    /// `show interfaces counters`
    Interfaces {
        #[command(subcommand)]
        what: InterfacesWhat,
    },
    /// `show queue counters|wredcounters [PORT]`, `show queue watermark unicast`
    Queue {
        #[command(subcommand)]
        what: QueueWhat,
    },
    /// `show pfc counters [--history]`
    Pfc {
        #[command(subcommand)]
        what: PfcWhat,
    },
    /// `show priority-group watermark shared|headroom`, `show priority-group drop counters`
    #[command(name = "priority-group")]
    PriorityGroup {
        #[command(subcommand)]
        what: PgWhat,
    },
    /// `show buffer_pool watermark`
    #[command(name = "buffer_pool")]
    BufferPool {
        #[command(subcommand)]
        what: WatermarkOnly,
    },
    /// `show headroom-pool watermark`
    #[command(name = "headroom-pool")]
    HeadroomPool {
        #[command(subcommand)]
        what: WatermarkOnly,
    },
}

#[derive(Subcommand)]
enum InterfacesWhat {
    /// Port counters with rates over a sampling period (portstat).
    Counters {
        /// Seconds between the two samples the rates come from (portstat -p); 0: one sample, no rates.
        #[arg(short = 'p', long, default_value_t = 1)]
        period: u64,
    },
}

#[derive(Subcommand)]
enum QueueWhat {
    Counters {
        port: Option<String>,
    },
    Wredcounters {
        port: Option<String>,
    },
    Watermark {
        #[command(subcommand)]
        which: QueueWatermark,
    },
}

#[derive(Subcommand)]
enum QueueWatermark {
    Unicast,
}

#[derive(Subcommand)]
enum PfcWhat {
    Counters {
        #[arg(long)]
        history: bool,
    },
}

#[derive(Subcommand)]
enum PgWhat {
    Watermark {
        #[arg(value_enum)]
        kind: PgKind,
    },
    Drop {
        #[command(subcommand)]
        what: DropWhat,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum PgKind {
    Shared,
    Headroom,
}

#[derive(Subcommand)]
enum DropWhat {
    Counters,
}

#[derive(Subcommand)]
enum WatermarkOnly {
    Watermark,
}

#[derive(Subcommand)]
enum Clear {
    /// `sonic-clear counters` (interface counters).
    Counters,
    /// `sonic-clear queuecounters` / `sonic-clear queue wredcounters` / `sonic-clear queue watermark`.
    Queue {
        #[command(subcommand)]
        what: ClearQueue,
    },
    /// `sonic-clear pfccounters`.
    Pfc,
    /// `sonic-clear priority-group drop counters` / `... watermark shared|headroom`.
    #[command(name = "priority-group")]
    PriorityGroup {
        #[command(subcommand)]
        what: ClearPg,
    },
    /// Clear the buffer and headroom pool watermarks.
    #[command(name = "buffer_pool")]
    BufferPool,
    /// Clear the PFC watchdog statistics.
    Pfcwd,
}

#[derive(Subcommand)]
enum ClearQueue {
    Counters,
    Wredcounters,
    Watermark,
}

#[derive(Subcommand)]
enum ClearPg {
    Drop,
    Watermark,
}

#[derive(Subcommand)]
enum Pfcwd {
    /// `pfcwd show config` / `pfcwd show stats [-e] [--check-storm]`
    Show {
        #[command(subcommand)]
        what: PfcwdShow,
    },
    /// `pfcwd start --action drop|forward|alert [--restoration-time MS] PORTS DETECTION_MS`
    Start {
        #[arg(long, default_value = "drop")]
        action: String,
        #[arg(long, short = 'r')]
        restoration_time: Option<u32>,
        /// `all` or a comma-joined list of ports.
        ports: String,
        detection_time: u32,
    },
    /// Stop the watchdog on every port.
    Stop,
    /// Set the poll interval (ms, 100..1000).
    Interval { ms: u32 },
    /// Enable or disable the big red switch.
    #[command(name = "big_red_switch")]
    BigRedSwitch {
        #[arg(value_parser = ["enable", "disable"])]
        state: String,
    },
    /// Force (or stop forcing) the storm condition on a queue: SONiC's `DEBUG_STORM` fake storm.
    #[command(name = "debug_storm")]
    DebugStorm {
        port: String,
        queue: u32,
        #[arg(value_parser = ["enable", "disable"])]
        state: String,
    },
}

#[derive(Subcommand)]
enum PfcwdShow {
    Config,
    Stats {
        /// Show every monitored queue, also those with nothing to report.
        #[arg(short = 'e', long)]
        all: bool,
        /// Exit 1 if any queue is stormed.
        #[arg(long)]
        check_storm: bool,
    },
}

fn main() -> ExitCode {
    restore_sigpipe();
    let cli = Cli::parse();
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
        command => {
            let switch =
                lossless_controlplane::lab::resolve_switch(cli.lab.as_deref(), &cli.switch, DEFAULT_SWITCH)?;
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
            runtime.block_on(online(&switch, cli.json, command))
        }
    }
}

/// Reads a YAML or JSON configuration file, with the file and the parser's line/column in the error.
fn read_config(path: &Path) -> anyhow::Result<ConfigDb> {
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    ConfigDb::from_yaml_str(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}

fn validate(file: &Path, headroom: &HeadroomArgs, json: bool) -> anyhow::Result<ExitCode> {
    let (errors, warnings) = match read_config_with_headroom(file, headroom)? {
        Err(errors) => (errors, Vec::new()),
        Ok(db) => match compile(&db) {
            Ok(c) => {
                let mut warnings = c.warnings;
                warnings.extend(headroom::check_headroom(&db, &headroom.model(Some(&db))?));
                (Vec::new(), warnings)
            }
            Err(e) => (e.errors, e.warnings),
        },
    };
    if json {
        /// One finding of `swctl validate --json`.
        #[derive(serde::Serialize)]
        struct Issue<'a> {
            location: String,
            value: &'a str,
            message: &'a str,
        }
        #[derive(serde::Serialize)]
        struct Report<'a> {
            valid: bool,
            errors: Vec<Issue<'a>>,
            warnings: Vec<Issue<'a>>,
        }
        fn issues(list: &[lossless_dataplane::model::config::ConfigIssue]) -> Vec<Issue<'_>> {
            list.iter()
                .map(|i| Issue { location: i.location(), value: &i.value, message: &i.message })
                .collect()
        }
        let report =
            Report { valid: errors.is_empty(), errors: issues(&errors), warnings: issues(&warnings) };
        println!("{}", serde_json::to_string(&report)?);
    } else {
        for e in &errors {
            println!("error: {e}");
        }
        for w in &warnings {
            println!("warning: {w}");
        }
        if errors.is_empty() {
            println!("{}: valid ({} warning(s))", file.display(), warnings.len());
        } else {
            println!(
                "{}: invalid ({} error(s), {} warning(s))",
                file.display(),
                errors.len(),
                warnings.len()
            );
        }
    }
    Ok(if errors.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

async fn connect(endpoint: &str) -> anyhow::Result<SwitchClient<Channel>> {
    server::connect(endpoint)
        .await
        .map_err(|e| anyhow::anyhow!("cannot reach the switch at {endpoint}: {e:#}"))
}

fn status(e: tonic::Status) -> anyhow::Error {
    anyhow::anyhow!("the switch refused the request: {}", lossless_dataplane::server::describe_status(&e))
}

async fn online(endpoint: &str, json: bool, command: Command) -> anyhow::Result<ExitCode> {
    let mut client = connect(endpoint).await?;
    match command {
        Command::Apply { file, dry_run, replace, headroom } => {
            apply(&mut client, &file, dry_run, replace, &headroom).await
        }
        Command::Get => {
            let r = client.get(pb::GetRequest {}).await.map_err(status)?.into_inner();
            let db = config_db_from_proto(r.config.unwrap_or_default());
            if json {
                eprintln!("generation {}", r.generation);
                println!("{}", serde_json::to_string_pretty(&db)?);
            } else {
                println!("# generation {}", r.generation);
                print!("{}", serde_yaml::to_string(&db)?);
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Show { what } => show_cmd(&mut client, endpoint, json, what).await,
        Command::Clear { what } => clear_cmd(&mut client, endpoint, what).await,
        Command::Pfcwd { cmd } => pfcwd_cmd(&mut client, endpoint, json, cmd).await,
        Command::Watch { counters_ms } => watch(&mut client, json, counters_ms).await,
        Command::Hold { port, queue, release } => {
            client.set_hold(pb::SetHoldRequest { port, queue, hold: !release }).await.map_err(status)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Fdb { cmd } => fdb_cmd(&mut client, json, cmd).await,
        Command::Demo
        | Command::Validate { .. }
        | Command::Import { .. }
        | Command::QosParams { .. }
        | Command::Headroom { .. }
        | Command::Lab { .. } => {
            unreachable!("handled offline")
        }
    }
}

async fn apply(
    client: &mut SwitchClient<Channel>,
    file: &Path,
    dry_run: bool,
    replace: bool,
    headroom: &HeadroomArgs,
) -> anyhow::Result<ExitCode> {
    let new = match read_config_with_headroom(file, headroom)? {
        Ok(db) => db,
        Err(errors) => {
            for err in &errors {
                println!("error: {err}");
            }
            println!(
                "{}: headroom could not be computed ({} error(s)); nothing pushed",
                file.display(),
                errors.len()
            );
            return Ok(ExitCode::FAILURE);
        }
    };
    // Validate locally first: every error at once, without a round trip.
    if let Err(e) = compile(&new) {
        for err in &e.errors {
            println!("error: {err}");
        }
        println!("{}: invalid ({} error(s)); nothing pushed", file.display(), e.errors.len());
        return Ok(ExitCode::FAILURE);
    }
    for w in headroom::check_headroom(&new, &headroom.model(Some(&new))?) {
        println!("warning: {w}");
    }
    let running = client.get(pb::GetRequest {}).await.map_err(status)?.into_inner();
    let old = config_db_from_proto(running.config.unwrap_or_default());
    let changes = diff::diff(&old, &new);
    for c in &changes {
        println!("{c}");
    }
    if changes.is_empty() {
        println!("no changes");
    }
    let reply = client
        .apply(pb::ApplyRequest {
            config: Some(config_db_to_proto(&new)),
            dry_run,
            expected_generation: running.generation,
            replace,
        })
        .await
        .map_err(status)?
        .into_inner();
    for issue in &reply.issues {
        let loc = issue.location.clone().unwrap_or_default();
        let kind =
            if issue.severity == pb::config_issue::Severity::Error as i32 { "error" } else { "warning" };
        let location = if loc.field.is_empty() {
            format!("{}|{}", loc.table, loc.key)
        } else {
            format!("{}|{}|{}", loc.table, loc.key, loc.field)
        };
        println!("{kind}: {location}: {}", issue.message);
    }
    match (reply.accepted, dry_run) {
        (true, true) => {
            println!("dry run: {} change(s) would apply on generation {}", changes.len(), reply.generation);
            Ok(ExitCode::SUCCESS)
        }
        (true, false) => {
            println!("applied: generation {}", reply.generation);
            Ok(ExitCode::SUCCESS)
        }
        (false, _) => {
            println!("refused: the running configuration (generation {}) is unchanged", reply.generation);
            Ok(ExitCode::FAILURE)
        }
    }
}

async fn counters(client: &mut SwitchClient<Channel>) -> anyhow::Result<pb::GetCountersResponse> {
    Ok(client.get_counters(pb::GetCountersRequest {}).await.map_err(status)?.into_inner())
}

/// Counters minus the `clear` snapshot of that kind, if any.
async fn counters_since(
    client: &mut SwitchClient<Channel>,
    endpoint: &str,
    kind: &str,
) -> anyhow::Result<pb::GetCountersResponse> {
    let now = counters(client).await?;
    Ok(match snapshot::load(endpoint, kind) {
        Some(base) => show::subtract_counters(&now, &base),
        None => now,
    })
}

async fn watermarks(
    client: &mut SwitchClient<Channel>,
    persistent: bool,
    clear: bool,
) -> anyhow::Result<pb::GetWatermarksResponse> {
    Ok(client
        .get_watermarks(pb::GetWatermarksRequest { persistent, clear })
        .await
        .map_err(status)?
        .into_inner())
}

/// queuestat's answer to an unknown port.
fn check_port(c: &pb::GetCountersResponse, port: Option<&str>) -> anyhow::Result<()> {
    match port {
        Some(p) if !c.ports.iter().any(|x| x.name == p) => bail!("Port doesn't exist! {p}"),
        _ => Ok(()),
    }
}

fn emit(json: bool, table: String, value: impl FnOnce() -> serde_json::Value) {
    if json {
        println!("{}", serde_json::to_string_pretty(&value()).unwrap_or_default());
    } else {
        print!("{table}");
        if !table.ends_with('\n') {
            println!();
        }
    }
}

async fn show_cmd(
    client: &mut SwitchClient<Channel>,
    endpoint: &str,
    json: bool,
    what: Show,
) -> anyhow::Result<ExitCode> {
    match what {
        Show::Interfaces { what: InterfacesWhat::Counters { period } } => {
            // Rates need two samples: take one, wait the period, take another (as portstat -p does).
            let first = if period > 0 {
                let first = counters_since(client, endpoint, "counters").await?;
                tokio::time::sleep(std::time::Duration::from_secs(period)).await;
                Some(first)
            } else {
                None
            };
            let c = counters_since(client, endpoint, "counters").await?;
            emit(json, show::interfaces_counters(&c, first.as_ref()), || {
                show::interfaces_counters_json(&c, first.as_ref())
            });
        }
        Show::Queue { what: QueueWhat::Counters { port } } => {
            let c = counters_since(client, endpoint, "queue").await?;
            check_port(&c, port.as_deref())?;
            emit(json, show::queue_counters(&c, port.as_deref()), || {
                show::queue_counters_json(&c, port.as_deref())
            });
        }
        Show::Queue { what: QueueWhat::Wredcounters { port } } => {
            let c = counters_since(client, endpoint, "wred").await?;
            check_port(&c, port.as_deref())?;
            emit(json, show::queue_wredcounters(&c, port.as_deref()), || {
                show::queue_wredcounters_json(&c, port.as_deref())
            });
        }
        Show::Queue { what: QueueWhat::Watermark { which: QueueWatermark::Unicast } } => {
            let w = watermarks(client, false, false).await?;
            emit(json, show::queue_watermark_unicast(&w), || show::watermarks_json(&w));
        }
        Show::Pfc { what: PfcWhat::Counters { history } } => {
            let c = counters_since(client, endpoint, "pfc").await?;
            let table = if history { show::pfc_counters_history(&c) } else { show::pfc_counters(&c) };
            emit(json, table, || show::pfc_counters_json(&c));
        }
        Show::PriorityGroup { what: PgWhat::Watermark { kind } } => {
            let w = watermarks(client, false, false).await?;
            let kind = match kind {
                PgKind::Shared => show::PgWatermarkKind::Shared,
                PgKind::Headroom => show::PgWatermarkKind::Headroom,
            };
            emit(json, show::pg_watermark(&w, kind), || show::watermarks_json(&w));
        }
        Show::PriorityGroup { what: PgWhat::Drop { what: DropWhat::Counters } } => {
            let c = counters_since(client, endpoint, "pg-drop").await?;
            emit(json, show::pg_drop_counters(&c), || show::pg_drop_counters_json(&c));
        }
        Show::BufferPool { what: WatermarkOnly::Watermark } => {
            let w = watermarks(client, false, false).await?;
            emit(json, show::buffer_pool_watermark(&w), || show::watermarks_json(&w));
        }
        Show::HeadroomPool { what: WatermarkOnly::Watermark } => {
            let w = watermarks(client, false, false).await?;
            emit(json, show::headroom_pool_watermark(&w), || show::watermarks_json(&w));
        }
    }
    Ok(ExitCode::SUCCESS)
}

async fn clear_cmd(
    client: &mut SwitchClient<Channel>,
    endpoint: &str,
    what: Clear,
) -> anyhow::Result<ExitCode> {
    let kinds: &[&str] = match what {
        Clear::Counters => &["counters"],
        Clear::Queue { what: ClearQueue::Counters } => &["queue"],
        Clear::Queue { what: ClearQueue::Wredcounters } => &["wred"],
        Clear::Pfc => &["pfc"],
        Clear::PriorityGroup { what: ClearPg::Drop } => &["pg-drop"],
        Clear::Pfcwd => &["pfcwd"],
        Clear::Queue { what: ClearQueue::Watermark }
        | Clear::PriorityGroup { what: ClearPg::Watermark }
        | Clear::BufferPool => {
            // Watermarks live in the switch: its user copy is read-and-cleared.
            watermarks(client, false, true).await?;
            println!("Cleared watermarks");
            return Ok(ExitCode::SUCCESS);
        }
    };
    let c = counters(client).await?;
    for kind in kinds {
        snapshot::save(endpoint, kind, &c)?;
    }
    println!("Cleared counters");
    Ok(ExitCode::SUCCESS)
}

/// Reads the running config, lets `edit` change it, and applies it at the same generation.
async fn edit_running(
    client: &mut SwitchClient<Channel>,
    edit: impl FnOnce(&mut ConfigDb) -> anyhow::Result<()>,
) -> anyhow::Result<ExitCode> {
    let running = client.get(pb::GetRequest {}).await.map_err(status)?.into_inner();
    let mut db = config_db_from_proto(running.config.unwrap_or_default());
    edit(&mut db)?;
    let reply = client
        .apply(pb::ApplyRequest {
            config: Some(config_db_to_proto(&db)),
            dry_run: false,
            expected_generation: running.generation,
            replace: false,
        })
        .await
        .map_err(status)?
        .into_inner();
    if reply.accepted {
        Ok(ExitCode::SUCCESS)
    } else {
        for issue in &reply.issues {
            let loc = issue.location.clone().unwrap_or_default();
            println!("error: {}|{}|{}: {}", loc.table, loc.key, loc.field, issue.message);
        }
        Ok(ExitCode::FAILURE)
    }
}

async fn pfcwd_cmd(
    client: &mut SwitchClient<Channel>,
    endpoint: &str,
    json: bool,
    cmd: Pfcwd,
) -> anyhow::Result<ExitCode> {
    match cmd {
        Pfcwd::Show { what: PfcwdShow::Config } => {
            let r = client.get(pb::GetRequest {}).await.map_err(status)?.into_inner();
            let db = config_db_from_proto(r.config.unwrap_or_default());
            emit(json, show::pfcwd_config(&db), || show::pfcwd_config_json(&db));
            Ok(ExitCode::SUCCESS)
        }
        Pfcwd::Show { what: PfcwdShow::Stats { all, check_storm } } => {
            let c = counters_since(client, endpoint, "pfcwd").await?;
            emit(json, show::pfcwd_stats(&c, all), || show::pfcwd_stats_json(&c));
            Ok(if check_storm && show::pfcwd_any_stormed(&c) { ExitCode::FAILURE } else { ExitCode::SUCCESS })
        }
        Pfcwd::Start { action, restoration_time, ports, detection_time } => {
            edit_running(client, |db| {
                let names: Vec<String> = if ports == "all" {
                    db.tables.get("PORT").map(|t| t.keys().cloned().collect()).unwrap_or_default()
                } else {
                    ports.split(',').map(str::to_owned).collect()
                };
                if names.is_empty() {
                    bail!("no ports to start the watchdog on");
                }
                for p in names {
                    db.set("PFC_WD", &p, "action", action.clone());
                    db.set("PFC_WD", &p, "detection_time", detection_time.to_string());
                    if let Some(r) = restoration_time {
                        db.set("PFC_WD", &p, "restoration_time", r.to_string());
                    }
                }
                Ok(())
            })
            .await
        }
        Pfcwd::Stop => {
            edit_running(client, |db| {
                if let Some(t) = db.tables.get_mut("PFC_WD") {
                    t.retain(|k, _| k == "GLOBAL");
                }
                Ok(())
            })
            .await
        }
        Pfcwd::Interval { ms } => {
            edit_running(client, |db| {
                db.set("PFC_WD", "GLOBAL", "POLL_INTERVAL", ms.to_string());
                Ok(())
            })
            .await
        }
        Pfcwd::BigRedSwitch { state } => {
            edit_running(client, |db| {
                db.set("PFC_WD", "GLOBAL", "BIG_RED_SWITCH", state);
                Ok(())
            })
            .await
        }
        Pfcwd::DebugStorm { port, queue, state } => {
            let request = pb::SetDebugStormRequest { port, queue, enabled: state == "enable" };
            client.set_debug_storm(request).await.map_err(status)?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

async fn fdb_cmd(client: &mut SwitchClient<Channel>, json: bool, cmd: Fdb) -> anyhow::Result<ExitCode> {
    match cmd {
        Fdb::Show => {
            let entries = client.dump_fdb(pb::DumpFdbRequest {}).await.map_err(status)?.into_inner().entries;
            if json {
                let rows: Vec<serde_json::Value> = entries
                    .iter()
                    .map(|e| {
                        let kind = if e.is_static { "Static" } else { "Dynamic" };
                        serde_json::json!({"Vlan": e.vlan, "MacAddress": e.mac, "Port": e.port, "Type": kind})
                    })
                    .collect();
                println!("{}", serde_json::to_string_pretty(&rows)?);
            } else {
                println!("{:>5}  {:>6}  {:<17}  {:<12}  Type", "No.", "Vlan", "MacAddress", "Port");
                println!("-----  ------  -----------------  ------------  -------");
                for (i, e) in entries.iter().enumerate() {
                    let kind = if e.is_static { "Static" } else { "Dynamic" };
                    println!("{:>5}  {:>6}  {:<17}  {:<12}  {kind}", i + 1, e.vlan, e.mac, e.port);
                }
                println!("Total number of entries {}", entries.len());
            }
        }
        Fdb::Flush { vlan, port } => {
            let request = pb::FlushFdbRequest { vlan, port };
            let flushed = client.flush_fdb(request).await.map_err(status)?.into_inner().flushed;
            if json {
                println!("{}", serde_json::json!({ "flushed": flushed }));
            } else {
                println!("Flushed {flushed} FDB entries");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

async fn watch(client: &mut SwitchClient<Channel>, json: bool, counters_ms: u32) -> anyhow::Result<ExitCode> {
    let mut stream = client
        .subscribe(pb::SubscribeRequest { counters_interval_ms: counters_ms, events: true })
        .await
        .map_err(status)?
        .into_inner();
    while let Some(item) = stream.message().await.map_err(status)? {
        match item.item {
            Some(pb::subscribe_response::Item::Event(e)) => {
                if json {
                    println!(
                        "{{\"timestamp_ns\":{},\"kind\":{:?},\"message\":{:?},\"port\":{:?},\"index\":{}}}",
                        e.timestamp_ns, e.kind, e.message, e.port, e.index
                    );
                } else {
                    println!("{:>14.6} {:<20} {}", e.timestamp_ns as f64 / 1e9, e.kind, e.message);
                }
            }
            Some(pb::subscribe_response::Item::Counters(c)) => {
                let (rx, tx, drp): (u64, u64, u64) = c
                    .ports
                    .iter()
                    .fold((0, 0, 0), |(a, b, d), p| (a + p.rx_ok, b + p.tx_ok, d + p.rx_drp + p.tx_drp));
                println!(
                    "{:>14.6} counters             rx_ok {rx} tx_ok {tx} drops {drp}",
                    c.timestamp_ns as f64 / 1e9
                );
            }
            None => {}
        }
    }
    Ok(ExitCode::SUCCESS)
}
