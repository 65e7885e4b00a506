//! fwd-bench: switchd's forwarding against the kernel's, on veths between network namespaces.
//!
//! ```text
//! h1:eth0 ── m0 [mid] m1 ── h2:eth0        h1 10.1.0.2/24, h2 10.2.0.2/24
//! ```
//!
//! In the middle namespace runs, one after the other, each on a freshly built topology:
//! - `kernel`: Linux IPv4 forwarding (m0 10.1.0.1/24, m1 10.2.0.1/24, `ip_forward=1`, permanent neighbour
//!   entries for h1 and h2, so no ARP runs) — the baseline;
//! - `switchd`: the real switchd binary bound to m0 (Ethernet0, 10.1.0.1/24) and m1 (Ethernet4,
//!   10.2.0.1/24) at 100 Gb/s (pacing is not the bottleneck), static NEIGH entries, and the full QoS pipeline
//!   of `configs/profiles/th_balanced.yaml` (DSCP/TC/PG/queue maps, PFC on 3,4 with the watchdog, the
//!   Tomahawk buffer pools/profiles/PGs/queues, DWRR scheduling, WRED/ECN) remapped to the two ports;
//! - `switchd-poll`: the same with `--busy-poll-us 1000` (polls instead of sleeping while traffic flows);
//! - with `--mode floor` or `--mode all`, also `floor` and `floor-spin`: a minimal forwarder thread of this
//!   process on m0/m1 (AF_PACKET batches, MAC and TTL rewrite, nothing else), sleeping in `poll` or
//!   spinning. It is the floor for any user-space forwarder on this machine: what leaving the kernel costs
//!   by itself (a second thread wake-up per frame), apart from switchd's own work.
//!
//! `--mode both` (the default, and what `bench/forwarding.sh` runs) measures kernel, switchd, switchd-poll.
//!
//! h1 sends IPv4/UDP frames (DSCP 3, ECT(0): the lossless class) to the router's MAC and h2's address. Both
//! modes are measured the same way, by threads that enter h1's and h2's namespaces and use batched AF_PACKET
//! ports (ring receive, `sendmmsg` send, whatever switchd uses):
//! - throughput: h1 sends prebuilt frames as fast as `sendmmsg` takes them for `--seconds` after a warm-up;
//!   h2 counts the frames that arrive, per second, within that window;
//! - latency: h1 sends at `--rate` (10 kpps) frames carrying a sequence number and the send time; h2 takes
//!   receive time − send time. Both times come from one `Instant` epoch of this process: `Instant` is
//!   CLOCK_MONOTONIC, which network namespaces do not change (they are not time namespaces), so the sending
//!   and the receiving thread read the same clock. The receive time is taken when `recvmmsg` returns to the
//!   application, after its wake-up from `poll`: what a real receiver sees.
//!
//! Every run starts with switchd's queues empty (its backlog from the previous run drained). The ledger
//! under each throughput table follows the frames along the path (h1 → m0 → switchd's counters → m1 → h2 →
//! h2's application), and each run reports how much CPU other processes took meanwhile ("others' CPU"):
//! on a small machine a concurrent build skews everything, and the figures of such a run are flagged.
//!
//! Frame sizes are Ethernet frames as handed to AF_PACKET (header to payload; veths carry no FCS); Gb/s
//! counts those bytes. Needs root and iproute2; namespaces and switchd are removed on every exit path
//! (errors, panics, Ctrl-C/SIGTERM). Run through `bench/forwarding.sh`, or:
//!
//! ```text
//! cargo build --release -p lossless-dataplane --bin switchd -p lossless-bench --bin fwd-bench
//! sudo target/release/fwd-bench --mode both --seconds 3 --sizes 64,1500 [--json]
//! ```
//!
//! Modules, in the order of a run: [`lab`] builds the namespaces and starts the forwarder (switchd through
//! `lossless-testkit`, with its configuration from [`config`]); [`mod@measure`] runs the threads (frames from
//! [`frames`], sockets and timing from [`sockets`]), reading [`iproute2`] counters and [`interference`];
//! [`report`] prints the tables, [`summary`] the JSON; [`stop`] handles Ctrl-C.

mod config;
mod frames;
mod interference;
mod iproute2;
mod lab;
mod measure;
mod report;
mod sockets;
mod stop;
mod summary;

use anyhow::ensure;
use clap::{Parser, ValueEnum};
use config::switchd_config;
use frames::{MAX_SIZE, MIN_SIZE};
use interference::{CpuSample, INTERFERENCE_LIMIT};
use lab::Lab;
use lossless_dataplane::wire::EthernetAddress;
use measure::measure;
use report::{Ratios, print_mode, print_ratios};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;
use stop::{check_stop, install_signal_handlers};
use summary::Summary;

#[derive(Parser, Debug)]
#[command(
    name = "fwd-bench",
    about = "switchd forwarding vs kernel IPv4 forwarding between namespaces",
    // bench/forwarding.sh passes `--mode both` first; a later one from the user wins.
    args_override_self = true
)]
pub struct Args {
    /// What forwards in the middle namespace.
    #[arg(long, value_enum, default_value_t = Mode::Both)]
    pub mode: Mode,
    /// Measured seconds of each throughput run (after the warm-up).
    #[arg(long, default_value_t = 3.0)]
    pub seconds: f64,
    /// Warm-up seconds of each throughput run, not counted.
    #[arg(long, default_value_t = 0.5)]
    pub warmup: f64,
    /// Frame sizes in bytes (Ethernet header to payload, no FCS), comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "64,1500")]
    pub sizes: Vec<usize>,
    /// Rate of the latency runs, frames per second.
    #[arg(long, default_value_t = 10_000)]
    pub rate: u32,
    /// Measured seconds of each latency run.
    #[arg(long, default_value_t = 2.0)]
    pub latency_seconds: f64,
    /// The switchd binary (default: next to this binary, i.e. target/release/switchd).
    #[arg(long)]
    pub switchd: Option<PathBuf>,
    /// An extra switchd argument (repeatable), e.g. `--switchd-arg=--busy-poll-us=200`.
    #[arg(long = "switchd-arg", value_name = "ARG", allow_hyphen_values = true)]
    pub switchd_args: Vec<String>,
    /// Print a machine-readable summary (JSON) on stdout instead of the tables.
    #[arg(long)]
    pub json: bool,
    /// Print the generated switchd configuration (with placeholder host MACs) and exit.
    #[arg(long)]
    pub print_config: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Mode {
    Kernel,
    /// switchd, then switchd-poll (no baseline, no ratios).
    Switchd,
    /// kernel, switchd, switchd-poll.
    Both,
    /// kernel, then the floor forwarder (sleeping, then spinning): what any user-space forwarder on these
    /// sockets can reach on this machine.
    Floor,
    /// kernel, floor, floor-spin, switchd, switchd-poll.
    All,
}

/// What forwards in one measured run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Forwarder {
    Kernel,
    /// The least a user-space forwarder does (see [`lab::Floor`]), sleeping in `poll` between frames.
    Floor,
    /// The same, polling its socket without sleeping.
    FloorSpin,
    Switchd,
    /// switchd with `--busy-poll-us` [`BUSY_POLL_US`]: its low-latency mode.
    SwitchdPoll,
}

/// The busy-poll window of the `switchd-poll` runs, µs: longer than the gap between latency frames.
pub const BUSY_POLL_US: u32 = 1000;

impl Forwarder {
    pub fn is_switchd(self) -> bool {
        matches!(self, Forwarder::Switchd | Forwarder::SwitchdPoll)
    }

    pub fn name(self) -> &'static str {
        match self {
            Forwarder::Kernel => "kernel",
            Forwarder::Floor => "floor",
            Forwarder::FloorSpin => "floor-spin",
            Forwarder::Switchd => "switchd",
            Forwarder::SwitchdPoll => "switchd-poll",
        }
    }
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    if let Err(e) = install_signal_handlers() {
        eprintln!("fwd-bench: installing the SIGINT/SIGTERM handlers: {e}");
        return ExitCode::FAILURE;
    }
    match run(Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(_) if stop::signal().is_some() => {
            eprintln!("fwd-bench: interrupted; namespaces and switchd removed");
            ExitCode::from(128 + stop::signal().map_or(0, |s| s.number()).clamp(0, 127) as u8)
        }
        Err(e) => {
            eprintln!("fwd-bench: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: Args) -> anyhow::Result<()> {
    if args.print_config {
        let h1 = EthernetAddress([0x02, 0, 0, 0, 0, 0x01]);
        let h2 = EthernetAddress([0x02, 0, 0, 0, 0, 0x02]);
        print!("{}", switchd_config(h1, h2)?);
        return Ok(());
    }
    // SAFETY: geteuid has no preconditions.
    #[allow(unsafe_code)]
    let euid = unsafe { libc::geteuid() };
    ensure!(euid == 0, "needs root (network namespaces, AF_PACKET sockets)");
    ensure!(args.seconds > 0.0 && args.warmup >= 0.0 && args.latency_seconds > 0.0, "durations must be > 0");
    ensure!(args.rate > 0 && args.rate <= 1_000_000, "--rate: 1..=1000000");
    ensure!(!args.sizes.is_empty(), "--sizes: at least one size");
    for &s in &args.sizes {
        ensure!((MIN_SIZE..=MAX_SIZE).contains(&s), "--sizes {s}: each size must be {MIN_SIZE}..={MAX_SIZE}");
    }
    let before = CpuSample::take(None);
    std::thread::sleep(Duration::from_millis(500));
    let busy = CpuSample::take(None).busy_cores_since(&before);
    if busy > 0.1 {
        eprintln!(
            "fwd-bench: warning: the machine is busy before the start ({busy:.2} cores): figures may be noisy"
        );
    }
    if cfg!(debug_assertions) {
        eprintln!("fwd-bench: warning: a debug build; build with --release for meaningful figures");
    }
    let forwarders = match args.mode {
        Mode::Kernel => vec![Forwarder::Kernel],
        Mode::Switchd => vec![Forwarder::Switchd, Forwarder::SwitchdPoll],
        Mode::Both => vec![Forwarder::Kernel, Forwarder::Switchd, Forwarder::SwitchdPoll],
        Mode::Floor => vec![Forwarder::Kernel, Forwarder::Floor, Forwarder::FloorSpin],
        Mode::All => vec![
            Forwarder::Kernel,
            Forwarder::Floor,
            Forwarder::FloorSpin,
            Forwarder::Switchd,
            Forwarder::SwitchdPoll,
        ],
    };
    let switchd_bin = if forwarders.iter().any(|f| f.is_switchd()) {
        let path = args.switchd.clone().unwrap_or_else(default_switchd);
        ensure!(
            path.is_file(),
            "switchd binary {} not found (build it, or pass --switchd PATH)",
            path.display()
        );
        Some(path.canonicalize()?)
    } else {
        None
    };

    let mut results = Vec::new();
    for fwd in forwarders {
        check_stop()?;
        eprintln!("== {}: building h1 — mid — h2", fwd.name());
        let mut lab = Lab::build(fwd, switchd_bin.as_deref(), &args.switchd_args)?;
        results.push(measure(&mut lab, &args)?);
        lab.check_forwarder_alive()?;
    }
    let ratios = Ratios::all(&results);
    let busiest = results
        .iter()
        .flat_map(|r| r.throughput.iter().map(|t| t.others_cpu).chain(r.latency.iter().map(|l| l.others_cpu)))
        .fold(0.0, f64::max);
    if busiest > INTERFERENCE_LIMIT {
        eprintln!(
            "fwd-bench: warning: other processes took up to {busiest:.2} cores during a run (column \"others' CPU\"): \
             rerun on an idle machine for figures that mean something"
        );
    }
    if args.json {
        println!("{}", Summary::new(&args, &results, &ratios).to_json()?);
    } else {
        for r in &results {
            print_mode(r, &args);
        }
        for r in &ratios {
            print_ratios(r);
        }
    }
    Ok(())
}

fn default_switchd() -> PathBuf {
    // target/release/fwd-bench → target/release/switchd
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join("switchd")))
        .filter(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from("target/release/switchd"))
}
