//! rocehost: a RoCEv2 host NIC on a real Linux interface, for netns labs.
//!
//! ```text
//! rocehost --interface eth0 --ip 10.0.0.1 --pfc-enable 3,4 \
//!          --flow dst=10.0.0.2,dst-mac=02:00:00:00:00:02,message=65536,messages=50 --json
//! rocehost --interface eth0 --ip 10.0.0.2 --ready-file /run/h2.ready --report /run/h2.json   # receive only
//! rocehost --interface eth0 --ip 10.0.0.3 --storm 3@100 --duration 1                      # PFC storm
//! rocehost --interface eth0 --ip 10.0.0.1 --pingmesh-peer 10.0.0.2@02:00:00:00:00:02 \
//!          --pingmesh-interval-us 1000 --duration 5                                       # Pingmesh
//! ```
//!
//! Every rocehost answers Pingmesh pings (`lossless_core::nic::probe`, docs/pingmesh.md); with
//! `--pingmesh-peer` it also pings those peers every `--pingmesh-interval-us` at `--pingmesh-dscp` and
//! reports each peer's RTT percentiles (the report's `probes`). `--probe-only` makes it a pure prober that
//! takes only PFC frames and pongs from the wire, so it can run beside the host's own rocehost on one
//! interface (`swctl lab pingmesh`).
//!
//! The NIC is the sans-I/O [`Nic`] model; rocehost drives it in real time on one thread, as switchd's
//! runtime drives the switch: receive a batch → `handle_frame` each frame → `handle_timeout` when due →
//! `poll_transmit` until nothing may go (the NIC paces its line at `--line-rate-mbps`; a late wake-up
//! catches up at most `CATCH_UP_NS`) → `sendmmsg` (what the kernel does not take waits for POLLOUT) →
//! `ppoll` until the descriptor is ready or the NIC's next deadline, with nanosecond precision.
//!
//! NIC time is `CLOCK_MONOTONIC` in nanoseconds, which every process of the machine shares: the one-way
//! latency a receiving rocehost computes from the sender's timestamps is meaningful between two rocehosts
//! of one machine, and the times in the report (`now_ns`, `first_send_ns`, ...) are on that clock, which is
//! also the clock of switchd's events and counters (see [`crate::clock`]). The report's `start` gives the
//! run's start on both that clock and the wall clock.
//!
//! Frames go to each flow's `dst-mac` (default `--gateway-mac`); ACK/NAKs and CNPs go back to the MAC the
//! data came from (the first-hop router in a routed lab). The host answers ARP for `--ip`; do not give the
//! interface that address in the kernel too (the kernel would answer RoCE with ICMP port unreachable).
//!
//! DCQCN runs NVIDIA's defaults, which are tuned for 25–100 Gb/s. On a slower lab link, `--dcqcn-time-scale
//! N` runs them N times slower (periods × N, rates ÷ N, bytes unchanged: the NIC at R/N then behaves as the
//! one at R, N times slower; see [`crate::nic::dcqcn`]), and `--dcqcn-param NAME=VALUE` sets any
//! reaction-point or notification-point parameter by its name.
//!
//! Every run is a new queue pair per flow, as with a real NIC: the flow's QPN and initial PSN are drawn at
//! random at start-up (`qp_seed`), so a receiver that served an earlier run from the same `--ip` keeps
//! the two apart (it keys its QPs by source IP, DestQP and the requester's QPN, and closes QPs idle for
//! 10 s; see `lossless_core::nic`).
//!
//! It stops after `--duration`, or else once every flow finished plus `DRAIN_NS` (for ACKs still in
//! flight), or else on SIGTERM/SIGINT; then it writes the report (`--report`, `--json` or a table on
//! stdout) and exits 0. Errors exit 2.
//!
//! The `rocehost` binary is [`main`]. Here: the command line (`args`), the real-time loop (`host`), the
//! files it writes for other processes ([`report`]: the report and the ready file, the one definition of
//! their format, which the labs read too) and the human-readable output (`text`).

mod args;
mod host;
pub mod report;
mod text;

use crate::clock::WallClock;
use crate::io::runtime::monotonic_ns;
use crate::io::{self, PortSpec};
use crate::nic::{Nic, NicConfig, ProbeConfig, Retransmit};
use crate::shutdown::Shutdown;
use crate::time::Instant;
use anyhow::{Context, bail};
use args::{
    Args, FlowSpec, RetransmitArg, apply_dcqcn_options, apply_rx_options, resolve_flows, resolve_probe_peers,
};
use clap::Parser as _;
use host::{Host, LoopOptions, Stop, StormWindow, StuckWindow, Window};
use report::{Ready, Report, RunStart, write_atomically};
use std::io::Write as _;
use std::process::ExitCode;
use text::{Meta, human_report};

/// How far behind the clock the line may have fallen and still catch up in a burst (as switchd's runtime).
pub(crate) const CATCH_UP_NS: u64 = 200_000;
/// Frames per receive call, and receive calls per loop iteration at most.
pub(crate) const RX_BATCH: usize = 64;
pub(crate) const RX_ROUNDS: usize = 8;
/// Frames the kernel did not take yet; beyond this the NIC's line counts as blocked (nothing is polled).
pub(crate) const BACKLOG_MAX: usize = 1024;
/// The longest sleep, so stop conditions are seen even when nothing happens.
pub(crate) const MAX_WAIT_NS: u64 = 100_000_000;
/// After every flow finished: time left for ACKs in flight and the peer's last frames.
pub(crate) const DRAIN_NS: u64 = 500_000_000;
/// When the NIC says it is due but can do nothing (it should not happen): the shortest sleep instead of
/// spinning.
pub(crate) const STALL_WAIT_NS: u64 = 50_000;
pub(crate) const PROGRESS_NS: u64 = 1_000_000_000;
const DEFAULT_STORM_INTERVAL_US: f64 = 100.0;
/// Probing stops this long (at most a quarter of `--duration`) before the end, for the last answers.
const PROBE_DRAIN_NS: u64 = 100_000_000;
/// UDP source port of the first flow; the next flows count up (ECMP entropy).
pub(crate) const FIRST_SRC_PORT: u16 = 49152;

/// The `rocehost` binary: parses the command line, runs, exits 0 (2 on an error).
pub fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    match run(Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rocehost: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// The seed of this run's QPNs and initial PSNs: 8 bytes of `/dev/urandom`, or, should that fail, the
/// process id, the wall clock and `now` (monotonic ns) mixed — either way another value for every run.
fn qp_seed(now: u64) -> u64 {
    use std::io::Read as _;
    let mut bytes = [0u8; 8];
    if std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut bytes)).is_ok() {
        return u64::from_ne_bytes(bytes);
    }
    let wall = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    (u64::from(std::process::id()) << 40) ^ (wall as u64) ^ now.rotate_left(17)
}

fn run(args: Args) -> anyhow::Result<()> {
    let specs = args
        .flows
        .iter()
        .map(|s| FlowSpec::parse(s).with_context(|| format!("--flow {s}")))
        .collect::<anyhow::Result<Vec<_>>>()?;
    // A stale ready file from an earlier run must not announce this one.
    if let Some(path) = &args.ready_file {
        match std::fs::remove_file(path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e).with_context(|| format!("removing the old {}", path.display())),
        }
    }
    // Handlers first: a SIGTERM once the ready file exists must find them installed.
    let signals = Shutdown::install().context("installing the SIGTERM/SIGINT handlers")?;

    let spec = PortSpec::parse(&args.interface).map_err(anyhow::Error::msg).context("--interface")?;
    let port = io::open(&spec)?;
    let interface = spec.interface().to_owned();
    let mac = match args.mac {
        Some(mac) => mac,
        None => io::interface_mac(&interface)?,
    };
    let if_mtu = io::interface_mtu(&interface)?;
    if args.mtu as usize > if_mtu {
        bail!(
            "--mtu {} is above the MTU {if_mtu} of {interface}: raise it (ip link set {interface} mtu {}) or lower --mtu",
            args.mtu,
            args.mtu
        );
    }
    let cfg = NicConfig {
        mac,
        ip: args.ip,
        line_rate_mbps: args.line_rate_mbps,
        mtu: args.mtu,
        pfc_enable: args.pfc_enable.unwrap_or(0),
        gateway_mac: None,
        retransmit: match args.retransmit {
            RetransmitArg::Gbn => Retransmit::GoBackN,
            RetransmitArg::Gb0 => Retransmit::GoBack0,
        },
        dscp_to_priority: args.dscp_to_priority.0.clone(),
        ..NicConfig::default()
    };
    let mut cfg = NicConfig { rto_ns: args.rto_us.unwrap_or(cfg.rto_ns), ..cfg };
    apply_dcqcn_options(&mut cfg, args.dcqcn_time_scale, &args.dcqcn_params).map_err(anyhow::Error::msg)?;
    apply_rx_options(&mut cfg, &args.rx_params).map_err(anyhow::Error::msg)?;
    let mut nic = Nic::new(cfg.clone())?;
    let epoch = monotonic_ns();
    let start = RunStart::at(epoch, &WallClock::process());
    let flows = resolve_flows(&specs, &cfg, args.gateway_mac, !args.no_dcqcn, epoch, qp_seed(epoch))
        .map_err(anyhow::Error::msg)?;
    for (flow, text) in flows.into_iter().zip(&args.flows) {
        nic.add_flow(flow).with_context(|| format!("--flow {text}"))?;
    }
    let peers = resolve_probe_peers(&args.pingmesh_peers, args.gateway_mac).map_err(anyhow::Error::msg)?;
    if !peers.is_empty() {
        let interval_ns = ((args.pingmesh_interval_us * 1e3).round() as u64).max(1);
        // The last pings leave early enough for their answers to arrive before --duration ends.
        let until_ns = args.duration.map(|d| epoch + d - (d / 4).min(PROBE_DRAIN_NS));
        nic.set_probes(ProbeConfig {
            interval_ns,
            dscp: args.pingmesh_dscp,
            priority: args.pingmesh_priority.unwrap_or(cfg.priority_of_dscp(args.pingmesh_dscp)),
            start_ns: epoch,
            until_ns,
            peers,
            ..ProbeConfig::default()
        })
        .context("--pingmesh-peer")?;
    }
    nic.handle_timeout(Instant::from_ns(epoch));
    let storm = args.storm.map(|storm| StormWindow {
        storm,
        window: Window::new(epoch + args.storm_from.unwrap_or(0), args.storm_until.map(|d| epoch + d)),
    });
    if args.rx_stuck_from.is_some() && !cfg.rx_pipeline.enabled() {
        anyhow::bail!("--rx-stuck-from: the NIC has no receive buffer (--rx-param buffer_bytes=...)");
    }
    let rx_stuck = args
        .rx_stuck_from
        .map(|from| StuckWindow(Window::new(epoch + from, args.rx_stuck_until.map(|d| epoch + d))));
    tracing::info!(
        interface = %interface, %mac, ip = %args.ip, line_rate_mbps = args.line_rate_mbps,
        flows = args.flows.len(), dcqcn_time_scale = cfg.dcqcn.time_scale,
        cnp_interval_ns = cfg.cnp_interval().as_ns(), "rocehost running"
    );

    let options = LoopOptions {
        end_ns: args.duration.map(|d| epoch + d),
        stop_when_finished: args.duration.is_none()
            && !args.flows.is_empty()
            && args.pingmesh_peers.is_empty(),
        progress: args.progress,
        ready: args
            .ready_file
            .as_ref()
            .map(|path| (path.clone(), Ready::new(&interface, mac, args.ip).to_line())),
    };
    let mut host = Host {
        nic,
        port,
        backlog: Vec::new(),
        rx: Vec::with_capacity(RX_BATCH),
        tx_errors: 0,
        storm,
        rx_stuck,
        probe_only: args.probe_only,
    };
    let stop = host.run(&options, &signals, epoch);
    let end = monotonic_ns();
    // The report is as of the exit (pauses in progress, rates of unfinished flows), not the last wake-up.
    host.nic.handle_timeout(Instant::from_ns(end));
    let report = Report { start: Some(start), ..Report::from(host.nic.report()) };
    let json = serde_json::to_string_pretty(&report)?;
    if let Some(path) = &args.report {
        write_atomically(path, json.as_bytes()).with_context(|| format!("writing {}", path.display()))?;
    }
    let mut out = std::io::stdout().lock();
    let printed = if args.json {
        writeln!(out, "{json}")
    } else {
        let meta = Meta { interface: &interface, mac, ip: args.ip, start, end, stop: &stop };
        write!(out, "{}", human_report(&report, &host.nic, &meta))
    };
    // A closed stdout (the reader went away) is not worth exit 2 once the report file is written.
    if let Err(e) = printed.and_then(|()| out.flush()) {
        tracing::warn!("stdout: {e}");
    }
    tracing::info!("stopped: {stop}");
    match stop {
        Stop::Failed(e) => Err(e),
        _ => Ok(()),
    }
}
