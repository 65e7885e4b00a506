//! rocehost: a RoCEv2 host NIC on a real Linux interface, for netns labs.
//!
//! ```text
//! rocehost --interface eth0 --ip 10.0.0.1 --pfc-enable 3,4 \
//!          --flow dst=10.0.0.2,dst-mac=02:00:00:00:00:02,message=65536,messages=50 --json
//! rocehost --interface eth0 --ip 10.0.0.2 --ready-file /run/h2.ready --report /run/h2.json   # receive only
//! rocehost --interface eth0 --ip 10.0.0.3 --storm 3@100 --duration 1                      # PFC storm
//! ```
//!
//! The NIC is the sans-I/O [`Nic`] model; this binary drives it in real time on one thread, as switchd's
//! runtime drives the switch: receive a batch → `handle_frame` each frame → `handle_timeout` when due →
//! `poll_transmit` until nothing may go (the NIC paces its line at `--line-rate-mbps`; a late wake-up
//! catches up at most [`CATCH_UP_NS`]) → `sendmmsg` (what the kernel does not take waits for POLLOUT) →
//! `ppoll` until the descriptor is ready or the NIC's next deadline, with nanosecond precision.
//!
//! NIC time is `CLOCK_MONOTONIC` in nanoseconds, which every process of the machine shares: the one-way
//! latency a receiving rocehost computes from the sender's timestamps is meaningful between two rocehosts
//! of one machine, and the times in the report (`now_ns`, `first_send_ns`, ...) are on that clock.
//!
//! Frames go to each flow's `dst-mac` (default `--gateway-mac`); ACK/NAKs and CNPs go back to the MAC the
//! data came from (the first-hop router in a routed lab). The host answers ARP for `--ip`; do not give the
//! interface that address in the kernel too (the kernel would answer RoCE with ICMP port unreachable).
//!
//! DCQCN runs NVIDIA's defaults, which are tuned for 25–100 Gb/s. On a slower lab link, `--dcqcn-time-scale
//! N` runs them N times slower (periods × N, rates ÷ N, bytes unchanged: the NIC at R/N then behaves as the
//! one at R, N times slower; see `lossless_dataplane::nic::dcqcn`), and `--dcqcn-param NAME=VALUE` sets any
//! reaction-point or notification-point parameter by its name.
//!
//! It stops after `--duration`, or else once every flow finished plus [`DRAIN_NS`] (for ACKs still in
//! flight), or else on SIGTERM/SIGINT; then it writes the report (`--report`, `--json` or a table on
//! stdout) and exits 0. Errors exit 2.

use anyhow::{Context, bail};
use clap::{Parser, ValueEnum};
use lossless_dataplane::io::runtime::{libc_pollfd, monotonic_ns, poll_fds};
use lossless_dataplane::io::{self, PortBackend, PortSpec};
use lossless_dataplane::nic::dcqcn::MAX_TIME_SCALE;
use lossless_dataplane::nic::{
    DcqcnParams, FIRST_AUTO_QP, FlowConfig, Nic, NicConfig, NicReport, NpParams, Retransmit,
};
use lossless_dataplane::wire::EthernetAddress;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::io::Write as _;
use std::net::Ipv4Addr;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

/// How far behind the clock the line may have fallen and still catch up in a burst (as switchd's runtime).
const CATCH_UP_NS: u64 = 200_000;
/// Frames per receive call, and receive calls per loop iteration at most.
const RX_BATCH: usize = 64;
const RX_ROUNDS: usize = 8;
/// Frames the kernel did not take yet; beyond this the NIC's line counts as blocked (nothing is polled).
const BACKLOG_MAX: usize = 1024;
/// The longest sleep, so stop conditions are seen even when nothing happens.
const MAX_WAIT_NS: u64 = 100_000_000;
/// After every flow finished: time left for ACKs in flight and the peer's last frames.
const DRAIN_NS: u64 = 500_000_000;
/// When the NIC says it is due but can do nothing (it should not happen): the shortest sleep instead of
/// spinning.
const STALL_WAIT_NS: u64 = 50_000;
const PROGRESS_NS: u64 = 1_000_000_000;
const DEFAULT_STORM_INTERVAL_US: f64 = 100.0;
/// UDP source port of the first flow; the next flows count up (ECMP entropy).
const FIRST_SRC_PORT: u16 = 49152;

const FLOW_HELP: &str = "\
FLOW SPEC (--flow, repeatable): comma-separated KEY=VALUE
  dst=IP          destination host (required)
  dst-mac=MAC     next-hop MAC of the data (default: --gateway-mac)
  dscp=N          DSCP of the data, 0..63 (default 3)
  priority=N      PFC priority, 0..7 (default: the DSCP's, see --dscp-to-priority)
  rate=MBPS       rate cap (default: none; DCQCN and the line rate still apply)
  message=BYTES   message size (default 65536)
  messages=N      number of messages (default: unbounded)
  dcqcn=on|off    react to CNPs (default on; off with --no-dcqcn)
  src-port=N      UDP source port (default 49152 + flow index)
  qp=N            QP number of both ends (default: 0x100 + flow index, skipping given ones)
  start-ms=N      start this long after start-up (default 0)";

/// FLOW SPEC and DCQCN PARAMETERS (names and defaults from the NIC model, so they cannot drift).
fn after_help() -> String {
    let list = |value: serde_json::Value| -> String {
        let serde_json::Value::Object(map) = value else { return String::new() };
        map.iter().map(|(k, v)| format!("  {k}={v}\n")).collect()
    };
    format!(
        "{FLOW_HELP}\n\nDCQCN PARAMETERS (--dcqcn-param NAME=VALUE, repeatable; the unit is in the name)\n\
         Reaction point (the flows of this host with dcqcn=on), NVIDIA's defaults:\n{}\
         Notification point (CNPs this host sends as a receiver; the interval is the DCQCN paper's 50 µs,\n\
         NVIDIA's min_time_between_cnps is 0 on recent firmware):\n{}\
         time_scale is what --dcqcn-time-scale sets; it also multiplies cnp_interval_ns.",
        list(serde_json::to_value(DcqcnParams::default()).unwrap_or_default()),
        list(serde_json::to_value(NpParams::default()).unwrap_or_default()),
    )
}

#[derive(Parser, Debug)]
#[command(
    name = "rocehost",
    version,
    about = "A RoCEv2 host NIC (PFC, DCQCN, go-back-N/0) on a real interface, for netns labs",
    after_help = after_help()
)]
struct Args {
    /// The interface: IFNAME (batched AF_PACKET), pnet:IFNAME or tap:IFNAME, as for switchd.
    #[arg(long, value_name = "IF")]
    interface: String,
    /// This host's IPv4 address.
    #[arg(long, value_name = "A.B.C.D")]
    ip: Ipv4Addr,
    /// This host's MAC address [default: the interface's].
    #[arg(long, value_name = "MAC")]
    mac: Option<EthernetAddress>,
    /// Default next-hop MAC of flows (the first-hop router).
    #[arg(long, value_name = "MAC")]
    gateway_mac: Option<EthernetAddress>,
    /// Line rate the NIC paces its transmissions at, Mb/s.
    #[arg(long, value_name = "N", default_value_t = 1000)]
    line_rate_mbps: u32,
    /// Priorities whose received PFC frames are honoured, e.g. 3,4 [default: none (802.3x PAUSE only)].
    #[arg(long, value_name = "PRIORITIES", value_parser = parse_priority_mask)]
    pfc_enable: Option<u8>,
    /// IP MTU of data packets (128..=9216; at most the interface's MTU).
    #[arg(long, value_name = "N", default_value_t = 1500)]
    mtu: u32,
    /// Loss recovery: go-back-N or go-back-0.
    #[arg(long, value_enum, default_value_t = RetransmitArg::Gbn)]
    retransmit: RetransmitArg,
    /// Retransmission timeout in µs: no ACK progress for this long rewinds to the first unacknowledged
    /// packet [default: the NIC's, 4194.304 µs = IBA local ACK timeout exponent 10].
    #[arg(long, value_name = "US", value_parser = parse_rto)]
    rto_us: Option<u64>,
    /// Flows do not react to CNPs unless their spec says dcqcn=on (the receiver still sends CNPs).
    #[arg(long)]
    no_dcqcn: bool,
    /// Run DCQCN N times slower, for a line N times slower than the one its parameters are tuned for:
    /// every period × N (α update, decrease monitor period, rate-increase timer, and the CNP interval
    /// of this host as a receiver), every rate step ÷ N (additive and hyper increase, minimum rate), byte
    /// counter unchanged. 500 makes NVIDIA's defaults (tuned for 100 Gb/s) do at 200 Mb/s what they do
    /// at 100 Gb/s, 500 times slower; at 1 they hardly react to congestion at lab rates.
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_TIME_SCALE)))]
    dcqcn_time_scale: u32,
    /// Set a DCQCN parameter by name, e.g. cnp_interval_ns=0 or rpg_time_reset_ns=55000 (repeatable;
    /// names and defaults under DCQCN PARAMETERS below).
    #[arg(long = "dcqcn-param", value_name = "NAME=VALUE")]
    dcqcn_params: Vec<String>,
    /// DSCP → PFC priority of data (flows without priority=) and of the ACK/NAKs answering it; DSCPs not
    /// listed use DSCP >> 3. The default is the lossless classes of SONiC's AZURE DSCP_TO_TC_MAP; "none"
    /// leaves only DSCP >> 3.
    #[arg(long, value_name = "DSCP=PRIO,...", default_value = "3=3,4=4", value_parser = parse_dscp_map)]
    dscp_to_priority: DscpMap,
    /// A flow to send (see FLOW SPEC below); repeatable.
    #[arg(long = "flow", value_name = "SPEC")]
    flows: Vec<String>,
    /// Stop after this many seconds [default: when every flow finished (+0.5 s), or on a signal].
    #[arg(long, value_name = "SECS", value_parser = parse_duration)]
    duration: Option<u64>,
    /// Keep sending PFC XOFF (quanta 0xFFFF) for these priorities every INTERVAL_US (default 100).
    #[arg(long, value_name = "PRIORITIES[@INTERVAL_US]", value_parser = parse_storm)]
    storm: Option<Storm>,
    /// Start the --storm this many seconds after start-up (a NIC that breaks later) [default: at once].
    #[arg(long, value_name = "SECS", value_parser = parse_duration, requires = "storm")]
    storm_from: Option<u64>,
    /// Stop the --storm this many seconds after start-up [default: never].
    #[arg(long, value_name = "SECS", value_parser = parse_duration, requires = "storm")]
    storm_until: Option<u64>,
    /// Write the JSON report here at exit.
    #[arg(long, value_name = "FILE")]
    report: Option<PathBuf>,
    /// Print the JSON report on stdout at exit (else a table).
    #[arg(long)]
    json: bool,
    /// Create this file (JSON: pid, interface, mac, ip) once the interface is open and the loop runs.
    #[arg(long, value_name = "FILE")]
    ready_file: Option<PathBuf>,
    /// A one-line status on stderr every second.
    #[arg(long)]
    progress: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum RetransmitArg {
    /// Go-back-N: resume from the first missing packet.
    Gbn,
    /// Go-back-0: restart the message.
    Gb0,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct DscpMap(BTreeMap<u8, u8>);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Storm {
    priorities: u8,
    interval_ns: u64,
}

fn main() -> ExitCode {
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
    let signals = Signals::install().context("installing the SIGTERM/SIGINT handlers")?;

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
    let mut nic = Nic::new(cfg.clone())?;
    let epoch = monotonic_ns();
    let flows =
        resolve_flows(&specs, &cfg, args.gateway_mac, !args.no_dcqcn, epoch).map_err(anyhow::Error::msg)?;
    for (flow, text) in flows.into_iter().zip(&args.flows) {
        nic.add_flow(flow).with_context(|| format!("--flow {text}"))?;
    }
    nic.handle_timeout(epoch);
    let storm = args.storm.map(|storm| StormWindow {
        storm,
        from_ns: epoch + args.storm_from.unwrap_or(0),
        until_ns: args.storm_until.map(|d| epoch + d),
        on: false,
    });
    tracing::info!(
        interface = %interface, %mac, ip = %args.ip, line_rate_mbps = args.line_rate_mbps,
        flows = args.flows.len(), dcqcn_time_scale = cfg.dcqcn.time_scale,
        cnp_interval_ns = cfg.cnp_interval_ns(), "rocehost running"
    );

    let options = LoopOptions {
        end_ns: args.duration.map(|d| epoch + d),
        stop_when_finished: args.duration.is_none() && !args.flows.is_empty(),
        progress: args.progress,
        ready: args.ready_file.as_ref().map(|path| (path.clone(), ready_content(&interface, mac, args.ip))),
    };
    let mut host =
        Host { nic, port, backlog: Vec::new(), rx: Vec::with_capacity(RX_BATCH), tx_errors: 0, storm };
    let stop = host.run(&options, &signals, epoch);
    let end = monotonic_ns();
    // The report is as of the exit (pauses in progress, rates of unfinished flows), not the last wake-up.
    host.nic.handle_timeout(end);
    let report = host.nic.report();
    let json = serde_json::to_string_pretty(&report)?;
    if let Some(path) = &args.report {
        write_atomically(path, json.as_bytes()).with_context(|| format!("writing {}", path.display()))?;
    }
    let mut out = std::io::stdout().lock();
    let printed = if args.json {
        writeln!(out, "{json}")
    } else {
        let meta = Meta { interface: &interface, mac, ip: args.ip, epoch, end, stop: &stop };
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

// ------------------------------------------------------------------------------------------- the loop

/// Why the loop ended.
#[derive(Debug)]
enum Stop {
    Signal(&'static str),
    Duration,
    FlowsFinished,
    Failed(anyhow::Error),
}

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Stop::Signal(name) => write!(f, "{name}"),
            Stop::Duration => write!(f, "--duration elapsed"),
            Stop::FlowsFinished => write!(f, "every flow finished"),
            Stop::Failed(e) => write!(f, "error: {e:#}"),
        }
    }
}

struct LoopOptions {
    end_ns: Option<u64>,
    stop_when_finished: bool,
    progress: bool,
    /// The ready file and what to write into it.
    ready: Option<(PathBuf, String)>,
}

struct Host {
    nic: Nic,
    port: Box<dyn PortBackend>,
    /// Frames the kernel did not take yet, oldest first.
    backlog: Vec<Vec<u8>>,
    rx: Vec<Vec<u8>>,
    tx_errors: u64,
    storm: Option<StormWindow>,
}

/// `--storm` between `--storm-from` and `--storm-until`.
struct StormWindow {
    storm: Storm,
    from_ns: u64,
    until_ns: Option<u64>,
    on: bool,
}

impl StormWindow {
    /// Turns the storm on or off as `now` enters or leaves the window; the next time that changes.
    fn update(&mut self, nic: &mut Nic, now: u64) -> Option<u64> {
        let want = now >= self.from_ns && self.until_ns.is_none_or(|u| now < u);
        if want != self.on {
            self.on = want;
            if want {
                tracing::info!("storm starts");
                nic.set_storm(self.storm.priorities, self.storm.interval_ns);
            } else {
                tracing::info!("storm stops");
                nic.set_storm(0, 0);
            }
        }
        if now < self.from_ns { Some(self.from_ns) } else { self.until_ns.filter(|&u| now < u) }
    }
}

impl Host {
    fn run(&mut self, options: &LoopOptions, signals: &Signals, epoch: u64) -> Stop {
        let mut finished_since: Option<u64> = None;
        let mut ready = options.ready.as_ref();
        let mut progress = Progress::new(epoch);
        // Start-up since `epoch` is no lateness to catch up on.
        self.nic.handle_timeout(monotonic_ns());
        loop {
            if let Some(name) = signals.received() {
                return Stop::Signal(name);
            }
            let now = monotonic_ns();
            let storm_at = self.storm.as_mut().and_then(|w| w.update(&mut self.nic, now));
            let mut stalled = self.drive(now);
            let now = match self.receive(now) {
                Ok(now) => now,
                Err(e) => return Stop::Failed(e),
            };
            stalled |= self.drive(now);
            if let Err(e) = self.flush() {
                return Stop::Failed(e);
            }
            if let Some((path, content)) = ready.take()
                && let Err(e) = write_atomically(path, content.as_bytes())
            {
                return Stop::Failed(anyhow::Error::new(e).context(format!("writing {}", path.display())));
            }
            if options.end_ns.is_some_and(|end| now >= end) {
                return Stop::Duration;
            }
            if options.stop_when_finished && self.nic.all_flows_finished() {
                let since = *finished_since.get_or_insert(now);
                if now >= since + DRAIN_NS {
                    return Stop::FlowsFinished;
                }
            }
            if options.progress && now >= progress.next_ns {
                eprintln!("{}", progress.line(&self.nic, now));
            }
            let mut due = self.nic.poll_at();
            if stalled || self.backlog.len() >= BACKLOG_MAX {
                due = due.map(|t| t.max(now + STALL_WAIT_NS));
            }
            let wake_at = [
                due,
                options.end_ns,
                finished_since.map(|t| t + DRAIN_NS),
                options.progress.then_some(progress.next_ns),
                storm_at,
            ]
            .into_iter()
            .flatten()
            .min();
            if let Err(e) = self.wait(wake_at, signals) {
                return Stop::Failed(anyhow::Error::new(e).context("ppoll"));
            }
        }
    }

    /// Runs the NIC up to `now`: timers, and every frame whose line slot has come, letting a late wake-up
    /// catch up by at most [`CATCH_UP_NS`]. Time passed to the NIC never goes backwards. True when the NIC
    /// said it was due but had nothing to do (the caller then sleeps a little rather than spin).
    fn drive(&mut self, now: u64) -> bool {
        let mut floor = now.saturating_sub(CATCH_UP_NS).max(self.nic.now_ns());
        while let Some(at) = self.nic.poll_at().filter(|&t| t <= now) {
            if self.backlog.len() >= BACKLOG_MAX {
                // The kernel takes nothing: the line is blocked, but timers still run.
                self.nic.handle_timeout(now);
                return false;
            }
            let t = at.max(floor);
            self.nic.handle_timeout(t);
            match self.nic.poll_transmit(t) {
                Some(frame) => self.backlog.push(frame),
                None if self.nic.poll_at().is_some_and(|a| a <= t) => {
                    tracing::debug!(t, "the NIC is due but has nothing to do");
                    return true;
                }
                None => {}
            }
            floor = t;
        }
        false
    }

    /// Receives what the kernel holds (up to [`RX_ROUNDS`] batches) and hands it to the NIC, stamped with
    /// the time the batch was read (never before its sender's timestamp); returns the latest time used.
    fn receive(&mut self, mut now: u64) -> anyhow::Result<u64> {
        for _ in 0..RX_ROUNDS {
            self.rx.clear();
            let n = match self.port.recv_batch(&mut self.rx, RX_BATCH) {
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => 0,
                Err(e) if is_gone(&e) => {
                    return Err(anyhow::Error::new(e).context(format!("receiving on {}", self.port.name())));
                }
                Err(e) => {
                    tracing::warn!(interface = self.port.name(), "receive failed: {e}");
                    0
                }
            };
            if n > 0 {
                now = monotonic_ns().max(now);
            }
            for frame in &self.rx {
                self.nic.handle_frame(frame, now);
            }
            if n < RX_BATCH {
                break;
            }
        }
        Ok(now)
    }

    /// Hands the backlog to the kernel; what it does not take stays for the next POLLOUT.
    fn flush(&mut self) -> anyhow::Result<()> {
        while !self.backlog.is_empty() {
            match self.port.send_batch(&self.backlog) {
                Ok(0) => break,
                Ok(n) => {
                    self.backlog.drain(..n);
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) if is_gone(&e) => {
                    return Err(anyhow::Error::new(e).context(format!("sending on {}", self.port.name())));
                }
                Err(e) => {
                    // A link that is down (a lab taking it down on purpose): the frames are lost, as on
                    // a real wire; the NIC's retransmission recovers.
                    if self.tx_errors.is_power_of_two() || self.tx_errors == 0 {
                        tracing::warn!(
                            interface = self.port.name(),
                            "send failed ({} time(s)), {} frame(s) lost: {e}",
                            self.tx_errors + 1,
                            self.backlog.len()
                        );
                    }
                    self.tx_errors += 1;
                    self.backlog.clear();
                }
            }
        }
        Ok(())
    }

    /// Sleeps until the interface is readable (or writable with a backlog), a signal, or `wake_at`.
    fn wait(&self, wake_at: Option<u64>, signals: &Signals) -> std::io::Result<()> {
        let now = monotonic_ns();
        let timeout_ns = match wake_at {
            Some(t) if t <= now => return Ok(()),
            Some(t) => (t - now).min(MAX_WAIT_NS),
            None => MAX_WAIT_NS,
        };
        let mut fds = [
            libc_pollfd(self.port.raw_fd(), !self.backlog.is_empty()),
            libc_pollfd(signals.wake_fd(), false),
        ];
        poll_fds(&mut fds, timeout_ns)
    }
}

/// The interface is gone (deleted, or its namespace): nothing more will work.
fn is_gone(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ENODEV | libc::ENXIO | libc::EBADF))
}

// ------------------------------------------------------------------------------------------- signals

/// SIGTERM/SIGINT, caught on a helper thread (tokio's handlers) that records which and wakes the loop's
/// `ppoll` through a socket pair.
struct Signals {
    received: Arc<AtomicU8>,
    wake_rx: UnixStream,
}

impl Signals {
    const NAMES: [&'static str; 3] = ["", "SIGTERM", "SIGINT"];

    /// Returns once the handlers are installed.
    fn install() -> anyhow::Result<Signals> {
        let (mut wake_tx, wake_rx) = UnixStream::pair()?;
        wake_rx.set_nonblocking(true)?;
        let received = Arc::new(AtomicU8::new(0));
        let flag = received.clone();
        let (installed_tx, installed_rx) = std::sync::mpsc::channel();
        std::thread::Builder::new().name("signals".into()).spawn(move || {
            use tokio::signal::unix::{SignalKind, signal};
            let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                Ok(r) => r,
                Err(e) => {
                    let _ = installed_tx.send(Err(e));
                    return;
                }
            };
            runtime.block_on(async move {
                let handlers = signal(SignalKind::terminate())
                    .and_then(|term| Ok((term, signal(SignalKind::interrupt())?)));
                let (mut term, mut int) = match handlers {
                    Ok(h) => h,
                    Err(e) => {
                        let _ = installed_tx.send(Err(e));
                        return;
                    }
                };
                let _ = installed_tx.send(Ok(()));
                let which = tokio::select! {
                    _ = term.recv() => 1,
                    _ = int.recv() => 2,
                };
                flag.store(which, Ordering::SeqCst);
                let _ = wake_tx.write_all(&[which]);
                // Later signals are caught (and ignored) while the report is written.
                loop {
                    tokio::select! {
                        _ = term.recv() => {}
                        _ = int.recv() => {}
                    }
                }
            });
        })?;
        installed_rx.recv().context("the signal thread ended")??;
        Ok(Signals { received, wake_rx })
    }

    fn received(&self) -> Option<&'static str> {
        match self.received.load(Ordering::SeqCst) {
            0 => None,
            n => Some(Self::NAMES[usize::from(n).min(2)]),
        }
    }

    fn wake_fd(&self) -> i32 {
        self.wake_rx.as_raw_fd()
    }
}

// ------------------------------------------------------------------------------------------- parsing

/// `3,4`, `3-4`, `none` → a priority bit mask.
fn parse_priority_mask(text: &str) -> Result<u8, String> {
    let text = text.trim();
    if text.is_empty() || text.eq_ignore_ascii_case("none") {
        return Ok(0);
    }
    let mut mask = 0u8;
    for part in text.split(',') {
        let part = part.trim();
        let (lo, hi) = part.split_once('-').unwrap_or((part, part));
        let parse = |s: &str| match s.trim().parse::<u8>() {
            Ok(p) if p <= 7 => Ok(p),
            _ => Err(format!("{part:?}: a priority is 0..7 (e.g. 3,4 or 3-4)")),
        };
        let (lo, hi) = (parse(lo)?, parse(hi)?);
        if lo > hi {
            return Err(format!("{part:?}: empty range"));
        }
        for p in lo..=hi {
            mask |= 1 << p;
        }
    }
    Ok(mask)
}

fn parse_dscp_map(text: &str) -> Result<DscpMap, String> {
    let mut map = BTreeMap::new();
    let text = text.trim();
    if text.is_empty() || text.eq_ignore_ascii_case("none") {
        return Ok(DscpMap(map));
    }
    for part in text.split(',') {
        let bad = || format!("{part:?}: expected DSCP=PRIORITY (DSCP 0..63, priority 0..7)");
        let (d, p) = part.split_once('=').ok_or_else(bad)?;
        let d: u8 = d.trim().parse().map_err(|_| bad())?;
        let p: u8 = p.trim().parse().map_err(|_| bad())?;
        if d > 63 || p > 7 {
            return Err(bad());
        }
        if map.insert(d, p).is_some() {
            return Err(format!("DSCP {d} given twice"));
        }
    }
    Ok(DscpMap(map))
}

/// Seconds (a float) → nanoseconds.
fn parse_duration(text: &str) -> Result<u64, String> {
    match text.trim().parse::<f64>() {
        Ok(s) if s.is_finite() && s > 0.0 && s < 1e9 => Ok((s * 1e9).round() as u64),
        _ => Err(format!("{text:?}: a duration in seconds > 0 (e.g. 1 or 0.25)")),
    }
}

/// Microseconds (a float) → nanoseconds, at least 1.
fn parse_rto(text: &str) -> Result<u64, String> {
    match text.trim().parse::<f64>() {
        Ok(us) if us.is_finite() && us > 0.0 && us < 1e12 => Ok(((us * 1e3).round() as u64).max(1)),
        _ => Err(format!("{text:?}: microseconds > 0 (e.g. 4096 or 65536)")),
    }
}

fn parse_storm(text: &str) -> Result<Storm, String> {
    let (prios, interval) = match text.split_once('@') {
        Some((p, i)) => (p, Some(i)),
        None => (text, None),
    };
    let priorities = parse_priority_mask(prios)?;
    if priorities == 0 {
        return Err(format!("{text:?}: name at least one priority (e.g. 3 or 3,4@100)"));
    }
    let interval_us = match interval {
        None => DEFAULT_STORM_INTERVAL_US,
        Some(i) => match i.trim().parse::<f64>() {
            Ok(us) if us.is_finite() && us > 0.0 && us <= 1e9 => us,
            _ => return Err(format!("{i:?}: the interval is microseconds > 0 (e.g. 3@100)")),
        },
    };
    Ok(Storm { priorities, interval_ns: ((interval_us * 1e3).round() as u64).max(1) })
}

/// One `--flow` as given; what is left out is resolved by [`resolve_flows`].
#[derive(Debug, Clone, Default, PartialEq)]
struct FlowSpec {
    dst: Option<Ipv4Addr>,
    dst_mac: Option<EthernetAddress>,
    dscp: Option<u8>,
    priority: Option<u8>,
    rate_mbps: Option<u32>,
    message_bytes: Option<u64>,
    messages: Option<u64>,
    dcqcn: Option<bool>,
    src_port: Option<u16>,
    qp: Option<u32>,
    start_ns: Option<u64>,
}

const FLOW_KEYS: &str =
    "dst, dst-mac, dscp, priority, rate, message, messages, dcqcn, src-port, qp, start-ms";

impl FlowSpec {
    fn parse(text: &str) -> anyhow::Result<FlowSpec> {
        let mut spec = FlowSpec::default();
        let mut seen = BTreeSet::new();
        for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let Some((key, value)) = item.split_once('=') else {
                bail!("{item:?}: expected KEY=VALUE (keys: {FLOW_KEYS})");
            };
            let (key, value) = (key.trim(), value.trim());
            if !seen.insert(key) {
                bail!("{key}= given twice");
            }
            let number = |max: u64| -> anyhow::Result<u64> {
                let n = parse_number(value).with_context(|| format!("{key}={value}"))?;
                if n > max {
                    bail!("{key}={value}: at most {max}");
                }
                Ok(n)
            };
            match key {
                "dst" => {
                    spec.dst =
                        Some(value.parse().with_context(|| format!("dst={value}: not an IPv4 address"))?)
                }
                "dst-mac" => spec.dst_mac = Some(value.parse().with_context(|| format!("dst-mac={value}"))?),
                "dscp" => spec.dscp = Some(number(63)? as u8),
                "priority" => spec.priority = Some(number(7)? as u8),
                "rate" => match number(u64::from(u32::MAX))? {
                    0 => bail!("rate=0: a rate cap is > 0 Mb/s (leave it out for none)"),
                    r => spec.rate_mbps = Some(r as u32),
                },
                "message" => match number(u64::MAX)? {
                    0 => bail!("message=0: a message has at least one byte"),
                    m => spec.message_bytes = Some(m),
                },
                "messages" => spec.messages = Some(number(u64::MAX)?),
                "dcqcn" => {
                    spec.dcqcn = Some(match value {
                        "on" | "true" | "1" | "yes" => true,
                        "off" | "false" | "0" | "no" => false,
                        _ => bail!("dcqcn={value}: on or off"),
                    })
                }
                "src-port" => spec.src_port = Some(number(u64::from(u16::MAX))? as u16),
                "qp" => match number(0xff_ffff)? {
                    0 => bail!("qp=0: QP numbers are 1..0xffffff"),
                    q => spec.qp = Some(q as u32),
                },
                "start-ms" => match value.parse::<f64>() {
                    Ok(ms) if ms.is_finite() && (0.0..1e12).contains(&ms) => {
                        spec.start_ns = Some((ms * 1e6).round() as u64)
                    }
                    _ => bail!("start-ms={value}: milliseconds ≥ 0"),
                },
                other => bail!("unknown key {other:?} (keys: {FLOW_KEYS})"),
            }
        }
        if spec.dst.is_none() {
            bail!("dst= is required");
        }
        Ok(spec)
    }
}

/// `--dcqcn-time-scale` and then every `--dcqcn-param NAME=VALUE` in order; the error names the option
/// and the parameter.
fn apply_dcqcn_options(cfg: &mut NicConfig, time_scale: u32, params: &[String]) -> Result<(), String> {
    cfg.set_dcqcn_param("time_scale", &time_scale.to_string())
        .map_err(|e| format!("--dcqcn-time-scale: {e}"))?;
    let mut seen = BTreeSet::new();
    for text in params {
        let Some((name, value)) = text.split_once('=') else {
            return Err(format!("--dcqcn-param {text}: expected NAME=VALUE (e.g. cnp_interval_ns=0)"));
        };
        let name = name.trim();
        if !seen.insert(name) {
            return Err(format!("--dcqcn-param {text}: {name} given twice"));
        }
        if name == "time_scale" && time_scale != 1 {
            return Err(format!(
                "--dcqcn-param {text}: the time scale is already --dcqcn-time-scale {time_scale}"
            ));
        }
        cfg.set_dcqcn_param(name, value).map_err(|e| format!("--dcqcn-param {text}: {e}"))?;
    }
    Ok(())
}

/// A decimal or 0x-prefixed hexadecimal number.
fn parse_number(text: &str) -> anyhow::Result<u64> {
    let parsed = match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => text.parse(),
    };
    parsed.map_err(|_| anyhow::anyhow!("{text:?} is not a number"))
}

/// The NIC's flows (ids 1, 2, ... in command-line order). QP numbers: `qp=` names both ends; otherwise a
/// flow gets the first free number from 0x100 up for both, so every flow of this host is a distinct QP at
/// its receiver. Start times are on the NIC's clock (`epoch` = start-up).
fn resolve_flows(
    specs: &[FlowSpec],
    nic: &NicConfig,
    gateway_mac: Option<EthernetAddress>,
    dcqcn_default: bool,
    epoch: u64,
) -> Result<Vec<FlowConfig>, String> {
    let mut used: BTreeSet<u32> = specs.iter().filter_map(|s| s.qp).collect();
    if used.len() != specs.iter().filter(|s| s.qp.is_some()).count() {
        return Err("two --flow specs give the same qp=".into());
    }
    let mut next_auto = FIRST_AUTO_QP;
    let mut flows = Vec::with_capacity(specs.len());
    for (i, spec) in specs.iter().enumerate() {
        let dst_ip = spec.dst.ok_or("dst= is required")?;
        let dst_mac = spec
            .dst_mac
            .or(gateway_mac)
            .ok_or_else(|| format!("--flow to {dst_ip}: give dst-mac= (or --gateway-mac for every flow)"))?;
        let qp = match spec.qp {
            Some(q) => q,
            None => {
                while used.contains(&next_auto) {
                    next_auto += 1;
                }
                used.insert(next_auto);
                next_auto
            }
        };
        let dscp = spec.dscp.unwrap_or(3);
        flows.push(FlowConfig {
            id: i as u32 + 1,
            dst_ip,
            dst_mac,
            src_port: spec.src_port.unwrap_or(FIRST_SRC_PORT.wrapping_add(i as u16)),
            src_qp: qp,
            dst_qp: qp,
            dscp,
            priority: spec.priority.unwrap_or_else(|| nic.priority_of_dscp(dscp)),
            rate_mbps: spec.rate_mbps,
            message_bytes: spec.message_bytes.unwrap_or(65536),
            messages: spec.messages,
            start_ns: epoch + spec.start_ns.unwrap_or(0),
            until_ns: None,
            initial_psn: 0,
            dcqcn: spec.dcqcn.unwrap_or(dcqcn_default),
        });
    }
    Ok(flows)
}

// ------------------------------------------------------------------------------------------- output

fn ready_content(interface: &str, mac: EthernetAddress, ip: Ipv4Addr) -> String {
    serde_json::json!({
        "pid": std::process::id(),
        "interface": interface,
        "mac": mac.to_string(),
        "ip": ip.to_string(),
    })
    .to_string()
        + "\n"
}

/// Writes `path` through a temporary file and a rename, so a reader never sees it half written.
fn write_atomically(path: &Path, content: &[u8]) -> std::io::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".tmp{}", std::process::id()));
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, content)?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

struct Meta<'a> {
    interface: &'a str,
    mac: EthernetAddress,
    ip: Ipv4Addr,
    epoch: u64,
    end: u64,
    stop: &'a Stop,
}

fn mbps(bytes: u64, ns: u64) -> f64 {
    if ns == 0 { 0.0 } else { bytes as f64 * 8e3 / ns as f64 }
}

fn us(ns: u64) -> f64 {
    ns as f64 / 1e3
}

/// The report as tables: flows, receiving QPs, PFC, counters.
fn human_report(r: &NicReport, nic: &Nic, m: &Meta<'_>) -> String {
    let mut s = String::new();
    let elapsed = m.end.saturating_sub(m.epoch);
    let _ = writeln!(
        s,
        "rocehost {} {} ({}): {:.3} s, stopped: {}",
        m.interface,
        m.ip,
        m.mac,
        elapsed as f64 / 1e9,
        m.stop
    );
    if r.flows.is_empty() {
        let _ = writeln!(s, "\nno flows sent");
    } else {
        let _ = writeln!(
            s,
            "\n{:<5} {:<15} {:>8} {:>4} {:>11} {:>12} {:>10} {:>10} {:>14} {:>7} {:>10}",
            "flow",
            "dst",
            "qp",
            "prio",
            "messages",
            "goodput Mb/s",
            "sent pkts",
            "retx pkts",
            "acked bytes",
            "CNPs",
            "paused ms"
        );
        for f in &r.flows {
            let dst = f.dst_ip.map_or_else(|| "-".into(), |ip| ip.to_string());
            let messages = format!("{}/{}", f.messages_completed, f.messages_started);
            let _ = writeln!(
                s,
                "{:<5} {:<15} {:>#8x} {:>4} {:>11} {:>12.1} {:>10} {:>10} {:>14} {:>7} {:>10.3}",
                f.id,
                dst,
                f.src_qp,
                f.priority,
                messages,
                f.goodput_mbps,
                f.sent_packets,
                f.retransmitted_packets,
                f.acked_bytes,
                f.cnps_received,
                nic.pause_ns(f.priority) as f64 / 1e6
            );
        }
    }
    if r.receivers.is_empty() {
        let _ = writeln!(s, "\nno data received");
    } else {
        let _ = writeln!(
            s,
            "\n{:<15} {:>8} {:>14} {:>8} {:>12} {:>12} {:>6} {:>9} {:>10} {:>10} {:>10}",
            "from",
            "qp",
            "received bytes",
            "messages",
            "goodput Mb/s",
            "out-of-order",
            "NAKs",
            "CNPs sent",
            "p50 µs",
            "p99 µs",
            "p99.9 µs"
        );
        for q in &r.receivers {
            let src = q.src_ip.map_or_else(|| "-".into(), |ip| ip.to_string());
            let _ = writeln!(
                s,
                "{:<15} {:>#8x} {:>14} {:>8} {:>12.1} {:>12} {:>6} {:>9} {:>10.1} {:>10.1} {:>10.1}",
                src,
                q.qp,
                q.received_bytes,
                q.messages_received,
                q.goodput_mbps,
                q.out_of_order,
                q.naks_sent,
                q.cnps_sent,
                us(q.latency.p50_ns),
                us(q.latency.p99_ns),
                us(q.latency.p999_ns)
            );
        }
    }
    let pfc: Vec<_> = r.pfc.iter().filter(|p| p.counters.rx > 0 || p.counters.tx > 0).collect();
    if !pfc.is_empty() {
        let _ = writeln!(
            s,
            "\n{:<8} {:>10} {:>10} {:>10} {:>10}",
            "priority", "PFC rx", "XON rx", "PFC tx", "paused ms"
        );
        for p in pfc {
            let _ = writeln!(
                s,
                "{:<8} {:>10} {:>10} {:>10} {:>10.3}",
                p.priority,
                p.counters.rx,
                p.counters.rx_xon,
                p.counters.tx,
                p.pause_ns as f64 / 1e6
            );
        }
    }
    let c = &r.counters;
    let _ = writeln!(
        s,
        "\nframes: tx {} ({} data, {} ACK, {} NAK, {} CNP, {} PFC, {} ARP), {} bytes; rx {}, {} bytes \
         ({} PFC, {} PAUSE, {} ARP requests, {} ignored, {} malformed, {} for unknown QPs)",
        c.tx_frames,
        c.tx_data_frames,
        c.tx_ack_frames,
        c.tx_nak_frames,
        c.tx_cnp_frames,
        c.tx_pfc_frames,
        c.tx_arp_replies,
        c.tx_bytes,
        c.rx_frames,
        c.rx_bytes,
        c.rx_pfc_frames,
        c.rx_pause_frames,
        c.rx_arp_requests,
        c.rx_ignored,
        c.rx_malformed,
        c.rx_unknown_qp
    );
    s
}

/// The `--progress` line: rates over the last second.
struct Progress {
    epoch: u64,
    next_ns: u64,
    last_ns: u64,
    last_tx_bytes: u64,
    last_rx_bytes: u64,
    last_acked: u64,
    last_received: u64,
}

impl Progress {
    fn new(epoch: u64) -> Progress {
        Progress {
            epoch,
            next_ns: epoch + PROGRESS_NS,
            last_ns: epoch,
            last_tx_bytes: 0,
            last_rx_bytes: 0,
            last_acked: 0,
            last_received: 0,
        }
    }

    fn line(&mut self, nic: &Nic, now: u64) -> String {
        let r = nic.report();
        let acked: u64 = r.flows.iter().map(|f| f.acked_bytes).sum();
        let received: u64 = r.receivers.iter().map(|q| q.received_bytes).sum();
        let retx: u64 = r.flows.iter().map(|f| f.retransmitted_packets).sum();
        let finished = r.flows.iter().filter(|f| f.finished_ns.is_some()).count();
        let paused: Vec<String> = r
            .pfc
            .iter()
            .filter(|p| p.pause_ns > 0)
            .map(|p| format!("p{} {:.1} ms", p.priority, p.pause_ns as f64 / 1e6))
            .collect();
        let dt = now - self.last_ns;
        let line = format!(
            "{:>7.1} s  tx {:.1} Mb/s  rx {:.1} Mb/s  goodput out {:.1} Mb/s in {:.1} Mb/s  flows {finished}/{} \
             finished  retx {retx}  PFC rx {} tx {}{}{}",
            (now - self.epoch) as f64 / 1e9,
            mbps(r.counters.tx_bytes - self.last_tx_bytes, dt),
            mbps(r.counters.rx_bytes - self.last_rx_bytes, dt),
            mbps(acked.saturating_sub(self.last_acked), dt),
            mbps(received.saturating_sub(self.last_received), dt),
            r.flows.len(),
            r.counters.rx_pfc_frames,
            r.counters.tx_pfc_frames,
            if paused.is_empty() { "" } else { "  paused " },
            paused.join(", ")
        );
        self.last_ns = now;
        self.last_tx_bytes = r.counters.tx_bytes;
        self.last_rx_bytes = r.counters.rx_bytes;
        self.last_acked = acked;
        self.last_received = received;
        self.next_ns = (self.next_ns + PROGRESS_NS).max(now + 1);
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priority_lists_and_storms() {
        assert_eq!(parse_priority_mask("3,4"), Ok(0b1_1000));
        assert_eq!(parse_priority_mask("3-5"), Ok(0b11_1000));
        assert_eq!(parse_priority_mask("none"), Ok(0));
        assert!(parse_priority_mask("8").is_err());
        assert_eq!(parse_storm("3"), Ok(Storm { priorities: 0b1000, interval_ns: 100_000 }));
        assert_eq!(parse_storm("3,4@250"), Ok(Storm { priorities: 0b1_1000, interval_ns: 250_000 }));
        assert!(parse_storm("3@0").is_err());
        assert!(parse_storm("none").is_err());
        assert_eq!(parse_duration("0.25"), Ok(250_000_000));
        assert!(parse_duration("-1").is_err());
    }

    #[test]
    fn dscp_map_defaults_and_errors() {
        assert_eq!(parse_dscp_map("3=3,4=4").unwrap().0, BTreeMap::from([(3, 3), (4, 4)]));
        assert!(parse_dscp_map("none").unwrap().0.is_empty());
        assert!(parse_dscp_map("64=1").is_err());
        assert!(parse_dscp_map("3=3,3=4").is_err());
    }

    #[test]
    fn flow_specs_parse_and_resolve() {
        let a = FlowSpec::parse("dst=10.0.0.2,dst-mac=02:00:00:00:00:02,message=65536,messages=50").unwrap();
        let b = FlowSpec::parse("dst=10.0.0.3,dscp=26,rate=100,dcqcn=off,qp=0x100,start-ms=1.5").unwrap();
        let c = FlowSpec::parse("dst=10.0.0.3,priority=5,src-port=4000").unwrap();
        let nic = NicConfig { dscp_to_priority: BTreeMap::from([(3, 3)]), ..NicConfig::default() };
        let gw = EthernetAddress([2, 0, 0, 0, 0, 0xfe]);
        let flows = resolve_flows(&[a, b, c], &nic, Some(gw), true, 1_000).unwrap();
        assert_eq!(flows[0].dst_mac, EthernetAddress([2, 0, 0, 0, 0, 2]));
        assert_eq!((flows[0].dscp, flows[0].priority, flows[0].messages), (3, 3, Some(50)));
        assert_eq!((flows[0].src_qp, flows[0].dst_qp), (0x101, 0x101), "0x100 is taken by flow 2");
        assert_eq!((flows[1].priority, flows[1].rate_mbps, flows[1].dcqcn), (3, Some(100), false));
        assert_eq!((flows[1].src_qp, flows[1].start_ns), (0x100, 1_000 + 1_500_000));
        assert_eq!((flows[2].dst_mac, flows[2].priority, flows[2].src_port), (gw, 5, 4000));
        assert_eq!(flows[2].src_qp, 0x102);
        assert_eq!(flows.iter().map(|f| f.id).collect::<Vec<_>>(), [1, 2, 3]);
        assert_eq!(flows[0].src_port + 1, flows[1].src_port);
    }

    #[test]
    fn dcqcn_options_scale_and_set_by_name() {
        let mut cfg = NicConfig::default();
        let params = ["cnp_interval_ns=0".to_owned(), "rpg_ai_rate_mbps=10".to_owned()];
        apply_dcqcn_options(&mut cfg, 500, &params).unwrap();
        assert_eq!((cfg.dcqcn.time_scale, cfg.np.cnp_interval_ns, cfg.dcqcn.rpg_ai_rate_mbps), (500, 0, 10));
        let mut cfg = NicConfig::default();
        apply_dcqcn_options(&mut cfg, 1, &["time_scale=125".to_owned()]).unwrap();
        assert_eq!((cfg.dcqcn.time_scale, cfg.cnp_interval_ns()), (125, 50_000 * 125));
        for (scale, param, needle) in [
            (
                1,
                "rpg_bogus=1",
                "--dcqcn-param rpg_bogus=1: unknown DCQCN parameter \"rpg_bogus\" (reaction point: ",
            ),
            (1, "cnp_dscp=64", "--dcqcn-param cnp_dscp=64: cnp_dscp: 64 is above 63"),
            (1, "rpg_min_dec_fac=101", "rpg_min_dec_fac: 101 is above 100 (%)"),
            (1, "rpg_ai_rate_mbps", "--dcqcn-param rpg_ai_rate_mbps: expected NAME=VALUE"),
            (1, "rpg_ai_rate_mbps=fast", "rpg_ai_rate_mbps=fast: expected a whole number"),
            (500, "time_scale=2", "the time scale is already --dcqcn-time-scale 500"),
            (
                1_000_001,
                "cnp_interval_ns=0",
                "--dcqcn-time-scale: time_scale: 1000001 is outside 1..=1000000",
            ),
        ] {
            let e = apply_dcqcn_options(&mut NicConfig::default(), scale, &[param.to_owned()]).unwrap_err();
            assert!(e.contains(needle), "{param}: {e}");
        }
        let twice = ["cnp_interval_ns=0".to_owned(), "cnp_interval_ns=4000".to_owned()];
        let e = apply_dcqcn_options(&mut NicConfig::default(), 1, &twice).unwrap_err();
        assert!(e.contains("cnp_interval_ns given twice"), "{e}");
        let help = after_help();
        assert!(
            help.contains("  rpg_time_reset_ns=300000\n") && help.contains("  cnp_interval_ns=50000\n"),
            "{help}"
        );
        assert!(
            Args::try_parse_from([
                "rocehost",
                "--interface",
                "x",
                "--ip",
                "10.0.0.1",
                "--dcqcn-time-scale",
                "0"
            ])
            .is_err()
        );
    }

    #[test]
    fn flow_spec_errors_name_the_key() {
        for (spec, needle) in [
            ("dscp=3", "dst= is required"),
            ("dst=10.0.0.2,bogus=1", "unknown key \"bogus\""),
            ("dst=10.0.0.2,dscp=64", "dscp=64"),
            ("dst=10.0.0.2,dscp=3,dscp=4", "given twice"),
            ("dst=10.0.0.x", "dst=10.0.0.x"),
            ("dst=10.0.0.2,dcqcn=maybe", "dcqcn=maybe"),
            ("dst=10.0.0.2,qp=0x1000000", "qp=0x1000000"),
            ("dst=10.0.0.2,message=0", "message=0"),
        ] {
            let e = format!("{:#}", FlowSpec::parse(spec).unwrap_err());
            assert!(e.contains(needle), "{spec}: {e}");
        }
        let no_mac = FlowSpec::parse("dst=10.0.0.2").unwrap();
        let e = resolve_flows(&[no_mac], &NicConfig::default(), None, true, 0).unwrap_err();
        assert!(e.contains("dst-mac"), "{e}");
    }
}
