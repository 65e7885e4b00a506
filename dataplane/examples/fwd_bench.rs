//! fwd_bench: switchd's forwarding against the kernel's, on veths between network namespaces.
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
//! cargo build --release -p lossless-dataplane --bin switchd --example fwd_bench
//! sudo target/release/examples/fwd_bench --mode both --seconds 3 --sizes 64,1500 [--json]
//! ```

use anyhow::{Context, bail, ensure};
use clap::{Parser, ValueEnum};
use lossless_dataplane::io::PortBackend;
use lossless_dataplane::io::afpacket::{AfPacketPort, RxMode, TxMode};
use lossless_dataplane::io::netns::{Netns, unique_name};
use lossless_dataplane::model::Switch;
use lossless_dataplane::model::config::ConfigDb;
use lossless_dataplane::server;
use lossless_dataplane::wire::EthernetAddress;
use lossless_dataplane::wire::build::Ipv4Flow;
use lossless_dataplane::wire::ip::Ecn;
use lossless_proto::v1 as pb;
use serde_yaml::{Mapping, Value};
use std::fmt::Write as _;
use std::net::Ipv4Addr;
use std::os::fd::RawFd;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

/// The switch profile whose QoS and buffer tables switchd runs with.
const PROFILE: &str = include_str!("../../configs/profiles/th_balanced.yaml");
/// Tables taken from the profile: the whole QoS pipeline (classification, MMU, PFC + watchdog, scheduler,
/// WRED/ECN).
const QOS_TABLES: &[&str] = &[
    "DSCP_TO_TC_MAP",
    "TC_TO_QUEUE_MAP",
    "TC_TO_PRIORITY_GROUP_MAP",
    "MAP_PFC_PRIORITY_TO_QUEUE",
    "PORT_QOS_MAP",
    "BUFFER_ASIC",
    "BUFFER_POOL",
    "BUFFER_PROFILE",
    "CABLE_LENGTH",
    "BUFFER_PG",
    "BUFFER_QUEUE",
    "SCHEDULER",
    "WRED_PROFILE",
    "QUEUE",
    "PFC_WD",
];
/// switchd's ports: (name, interface in mid, address).
const SW_PORTS: [(&str, &str, &str); 2] =
    [("Ethernet0", "m0", "10.1.0.1/24"), ("Ethernet4", "m1", "10.2.0.1/24")];
const ROUTER_MAC: [u8; 6] = [0x02, 0x4c, 0x53, 0x00, 0x00, 0x01];
const H1_IP: Ipv4Addr = Ipv4Addr::new(10, 1, 0, 2);
const H2_IP: Ipv4Addr = Ipv4Addr::new(10, 2, 0, 2);
/// UDP ports of the bench frames, and a magic word at the start of their payload.
const SRC_PORT: u16 = 40000;
const DST_PORT: u16 = 9000;
const MAGIC: [u8; 4] = *b"LLFB";
/// Payload: magic, sequence number (u64), send time in ns since the epoch (u64).
const PAYLOAD_OFFSET: usize = 14 + 20 + 8;
const PAYLOAD_LEN: usize = 4 + 8 + 8;
const MIN_SIZE: usize = PAYLOAD_OFFSET + PAYLOAD_LEN;
const MAX_SIZE: usize = 1514;
/// Targets of the issue: switchd/kernel.
const PPS_TARGET: f64 = 0.85;
const P99_TARGET: f64 = 1.5;
/// Frames prebuilt for a throughput sender (one `sendmmsg` takes up to 128).
const TX_FRAMES: usize = 128;
/// Time given to the threads to open their ports before a run starts.
const START_MARGIN: Duration = Duration::from_millis(300);
/// How long a receiver keeps listening after the sender stopped.
const DRAIN: Duration = Duration::from_millis(300);
/// How long switchd may take to empty its queues before a run.
const DRAIN_LIMIT: Duration = Duration::from_secs(30);
/// Latency frames sent before the measured ones.
const LATENCY_WARMUP: Duration = Duration::from_millis(200);

/// Set by SIGINT/SIGTERM; every loop checks it.
static STOP: AtomicBool = AtomicBool::new(false);
/// The signal that set [`STOP`].
static SIGNAL: AtomicI32 = AtomicI32::new(0);

#[derive(Parser, Debug)]
#[command(
    name = "fwd_bench",
    about = "switchd forwarding vs kernel IPv4 forwarding between namespaces",
    // bench/forwarding.sh passes `--mode both` first; a later one from the user wins.
    args_override_self = true
)]
struct Args {
    /// What forwards in the middle namespace.
    #[arg(long, value_enum, default_value_t = Mode::Both)]
    mode: Mode,
    /// Measured seconds of each throughput run (after the warm-up).
    #[arg(long, default_value_t = 3.0)]
    seconds: f64,
    /// Warm-up seconds of each throughput run, not counted.
    #[arg(long, default_value_t = 0.5)]
    warmup: f64,
    /// Frame sizes in bytes (Ethernet header to payload, no FCS), comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "64,1500")]
    sizes: Vec<usize>,
    /// Rate of the latency runs, frames per second.
    #[arg(long, default_value_t = 10_000)]
    rate: u32,
    /// Measured seconds of each latency run.
    #[arg(long, default_value_t = 2.0)]
    latency_seconds: f64,
    /// The switchd binary (default: next to this example's directory, i.e. target/release/switchd).
    #[arg(long)]
    switchd: Option<PathBuf>,
    /// An extra switchd argument (repeatable), e.g. `--switchd-arg=--busy-poll-us=200`.
    #[arg(long = "switchd-arg", value_name = "ARG", allow_hyphen_values = true)]
    switchd_args: Vec<String>,
    /// Print a machine-readable summary (JSON) on stdout instead of the tables.
    #[arg(long)]
    json: bool,
    /// Print the generated switchd configuration (with placeholder host MACs) and exit.
    #[arg(long)]
    print_config: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Mode {
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
enum Forwarder {
    Kernel,
    /// The least a user-space forwarder does (see [`Floor`]), sleeping in `poll` between frames.
    Floor,
    /// The same, polling its socket without sleeping.
    FloorSpin,
    Switchd,
    /// switchd with `--busy-poll-us` [`BUSY_POLL_US`]: its low-latency mode.
    SwitchdPoll,
}

/// The busy-poll window of the `switchd-poll` runs, µs: longer than the gap between latency frames.
const BUSY_POLL_US: u32 = 1000;

impl Forwarder {
    fn is_switchd(self) -> bool {
        matches!(self, Forwarder::Switchd | Forwarder::SwitchdPoll)
    }

    fn name(self) -> &'static str {
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
    install_signal_handlers();
    match run(Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(_) if STOP.load(Ordering::SeqCst) => {
            eprintln!("fwd_bench: interrupted; namespaces and switchd removed");
            ExitCode::from(128 + SIGNAL.load(Ordering::SeqCst).clamp(0, 127) as u8)
        }
        Err(e) => {
            eprintln!("fwd_bench: {e:#}");
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
            "fwd_bench: warning: the machine is busy before the start ({busy:.2} cores): figures may be noisy"
        );
    }
    if cfg!(debug_assertions) {
        eprintln!("fwd_bench: warning: a debug build; build with --release for meaningful figures");
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
            "fwd_bench: warning: other processes took up to {busiest:.2} cores during a run (column \"others' CPU\"): \
             rerun on an idle machine for figures that mean something"
        );
    }
    if args.json {
        println!("{}", json_summary(&args, &results, &ratios));
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
    // target/release/examples/fwd_bench → target/release/switchd
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent()?.parent().map(|dir| dir.join("switchd")))
        .filter(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from("target/release/switchd"))
}

// ---- Ctrl-C ---------------------------------------------------------------------------------------

extern "C" fn on_signal(sig: libc::c_int) {
    SIGNAL.store(sig, Ordering::SeqCst);
    STOP.store(true, Ordering::SeqCst);
}

/// SIGINT/SIGTERM set [`STOP`]: loops end, `run` returns an error, and the Drop guards clean up.
#[allow(unsafe_code)]
fn install_signal_handlers() {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
        unsafe { libc::signal(sig, on_signal as *const () as libc::sighandler_t) };
    }
}

fn stopped() -> bool {
    STOP.load(Ordering::Relaxed)
}

fn check_stop() -> anyhow::Result<()> {
    if stopped() {
        bail!("interrupted");
    }
    Ok(())
}

// ---- the lab -------------------------------------------------------------------------------------

/// The three namespaces and, in switchd mode, the switchd process. Field order matters for Drop: switchd
/// stops before the namespaces go.
struct Lab {
    switchd: Option<Switchd>,
    floor: Option<Floor>,
    fwd: Forwarder,
    h1: Netns,
    mid: Netns,
    h2: Netns,
    router_mac: EthernetAddress,
}

impl Lab {
    fn build(fwd: Forwarder, switchd_bin: Option<&Path>, extra: &[String]) -> anyhow::Result<Lab> {
        let h1 = Netns::new(&unique_name("fbh1-")).context("creating a namespace (run as root)")?;
        let mid = Netns::new(&unique_name("fbmid-"))?;
        let h2 = Netns::new(&unique_name("fbh2-"))?;
        h1.veth("eth0", &mid, "m0")?;
        mid.veth("m1", &h2, "eth0")?;
        h1.ip(&["addr", "add", "10.1.0.2/24", "dev", "eth0"])?;
        h2.ip(&["addr", "add", "10.2.0.2/24", "dev", "eth0"])?;
        let h1_mac = link_mac(&h1, "eth0")?;
        let h2_mac = link_mac(&h2, "eth0")?;
        let mut floor = None;
        let (switchd, router_mac) = match fwd {
            Forwarder::Floor | Forwarder::FloorSpin => {
                floor = Some(Floor::start(&mid, h2_mac, fwd == Forwarder::FloorSpin)?);
                (None, link_mac(&mid, "m0")?)
            }
            Forwarder::Kernel => {
                mid.ip(&["addr", "add", "10.1.0.1/24", "dev", "m0"])?;
                mid.ip(&["addr", "add", "10.2.0.1/24", "dev", "m1"])?;
                mid.run_in_checked(&["sysctl", "-qw", "net.ipv4.ip_forward=1"])?;
                for (ip, mac, dev) in [(H1_IP, h1_mac, "m0"), (H2_IP, h2_mac, "m1")] {
                    let (ip, mac) = (ip.to_string(), mac.to_string());
                    mid.ip(&["neigh", "replace", &ip, "lladdr", &mac, "dev", dev, "nud", "permanent"])?;
                }
                (None, link_mac(&mid, "m0")?)
            }
            Forwarder::Switchd | Forwarder::SwitchdPoll => {
                let bin = switchd_bin.context("no switchd binary")?;
                let mut extra = extra.to_vec();
                if fwd == Forwarder::SwitchdPoll {
                    extra.push(format!("--busy-poll-us={BUSY_POLL_US}"));
                }
                let extra = &extra;
                let config = switchd_config(h1_mac, h2_mac)?;
                (Some(Switchd::start(bin, extra, &mid, &config)?), EthernetAddress(ROUTER_MAC))
            }
        };
        Ok(Lab { switchd, floor, fwd, h1, mid, h2, router_mac })
    }

    fn switchd_pid(&self) -> Option<u32> {
        self.switchd.as_ref().map(|sw| sw.child.id())
    }

    fn check_forwarder_alive(&mut self) -> anyhow::Result<()> {
        if let Some(floor) = self.floor.take() {
            floor.stop()?;
        }
        if let Some(sw) = self.switchd.as_mut()
            && let Some(status) = sw.child.try_wait()?
        {
            bail!("switchd exited during the run: {status}");
        }
        Ok(())
    }

    /// Kernel counters along the path (whole-run deltas are taken around each throughput run).
    fn path_stats(&self) -> anyhow::Result<PathStats> {
        Ok(PathStats {
            m0: link_stats(&self.mid, "m0")?,
            m1: link_stats(&self.mid, "m1")?,
            h2: link_stats(&self.h2, "eth0")?,
        })
    }
}

/// The floor: the least a user-space forwarder on AF_PACKET sockets does, in a thread of this process in
/// mid — receive a batch on m0 (from the ring), set the Ethernet addresses, decrement the TTL and redo the
/// IPv4 header checksum, send the batch on m1 (sendmmsg, or the TX ring for bursts) — with no lookup, no
/// queue and no QoS. Measured like the others, it tells how much of switchd's distance to the kernel is the
/// cost of leaving the kernel at all on this machine (two more thread wake-ups and copies per frame), and how
/// much is switchd's own.
struct Floor {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<anyhow::Result<()>>>,
}

impl Floor {
    fn start(mid: &Netns, h2_mac: EthernetAddress, spin: bool) -> anyhow::Result<Floor> {
        let (mut m0, mut m1) = mid
            .within(|| Ok((AfPacketPort::open("m0")?, AfPacketPort::open("m1")?)))
            .context("floor: opening m0 and m1 in mid")?;
        let m1_mac = link_mac(mid, "m1")?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread =
            std::thread::Builder::new().name("floor".into()).spawn(move || -> anyhow::Result<()> {
                let mut batch = Vec::with_capacity(64);
                while !flag.load(Ordering::Relaxed) {
                    batch.clear();
                    if m0.recv_batch(&mut batch, 64)? == 0 {
                        if spin {
                            std::hint::spin_loop();
                        } else {
                            wait_readable(m0.raw_fd(), 10);
                        }
                        continue;
                    }
                    for frame in &mut batch {
                        route_in_place(frame, h2_mac, m1_mac);
                    }
                    let mut sent = 0;
                    while sent < batch.len() && !flag.load(Ordering::Relaxed) {
                        sent += m1.send_batch(&batch[sent..])?;
                    }
                }
                Ok(())
            })?;
        Ok(Floor { stop, thread: Some(thread) })
    }

    /// Stops the thread; its error, if it failed.
    fn stop(mut self) -> anyhow::Result<()> {
        self.stop.store(true, Ordering::Relaxed);
        match self.thread.take().map(std::thread::JoinHandle::join) {
            Some(Ok(result)) => result,
            Some(Err(_)) => bail!("the floor forwarder panicked"),
            None => Ok(()),
        }
    }
}

impl Drop for Floor {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// What a router does to an IPv4 frame: new Ethernet addresses, TTL − 1, header checksum redone (anything
/// else passes untouched).
fn route_in_place(frame: &mut [u8], dst: EthernetAddress, src: EthernetAddress) {
    use lossless_dataplane::wire::{EtherType, EthernetFrame, Ipv4Packet};
    let Ok(mut eth) = EthernetFrame::new_checked(frame) else { return };
    if eth.ethertype() != EtherType::Ipv4 {
        return;
    }
    let Ok(mut ip) = Ipv4Packet::new_checked(eth.payload_mut()) else { return };
    ip.set_ttl(ip.ttl().saturating_sub(1));
    ip.fill_checksum();
    eth.set_dst_addr(dst);
    eth.set_src_addr(src);
}

/// The switchd process in mid, its gRPC client, and its temporary files.
struct Switchd {
    child: Child,
    config: PathBuf,
    socket: PathBuf,
    tokio: Option<tokio::runtime::Runtime>,
    client: Option<pb::switch_client::SwitchClient<tonic::transport::Channel>>,
}

impl Switchd {
    fn start(bin: &Path, extra: &[String], mid: &Netns, config_yaml: &str) -> anyhow::Result<Switchd> {
        let config = std::env::temp_dir().join(format!("{}.yaml", unique_name("fbcfg")));
        let socket = std::env::temp_dir().join(format!("{}.sock", unique_name("fbsock")));
        std::fs::write(&config, config_yaml).with_context(|| format!("writing {}", config.display()))?;
        let tokio = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        // `ip netns exec` execs switchd itself (no fork): the child is switchd.
        let child = Command::new("ip")
            .args(["netns", "exec", mid.name()])
            .arg(bin)
            .args(["--name", "fwdbench", "--config"])
            .arg(&config)
            .args(["--port", &format!("{}={}", SW_PORTS[0].0, SW_PORTS[0].1)])
            .args(["--port", &format!("{}={}", SW_PORTS[1].0, SW_PORTS[1].1)])
            .arg("--grpc")
            .arg(format!("unix:{}", socket.display()))
            .args(extra)
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn();
        let child = match child {
            Ok(c) => c,
            Err(e) => {
                let _ = std::fs::remove_file(&config);
                return Err(e).context("starting switchd");
            }
        };
        let mut sw = Switchd { child, config, socket, tokio: Some(tokio), client: None };
        let endpoint = format!("unix:{}", sw.socket.display());
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            check_stop()?;
            if let Ok(c) = sw.rt().block_on(server::connect(&endpoint)) {
                sw.client = Some(c);
                break;
            }
            if let Some(status) = sw.child.try_wait()? {
                bail!("switchd exited during start-up: {status}");
            }
            ensure!(Instant::now() < deadline, "switchd did not answer on {endpoint} within 20 s");
            std::thread::sleep(Duration::from_millis(20));
        }
        eprintln!("   switchd pid {} up (gRPC {endpoint})", sw.child.id());
        Ok(sw)
    }

    fn rt(&self) -> &tokio::runtime::Runtime {
        self.tokio.as_ref().expect("the runtime lives until drop")
    }

    /// Frames waiting in switchd's egress queues now.
    fn queued(&mut self) -> anyhow::Result<u64> {
        let mut client = self.client.clone().context("no gRPC client")?;
        let c = self.rt().block_on(client.get_counters(pb::GetCountersRequest {}))?.into_inner();
        Ok(c.ports.iter().flat_map(|p| p.queue_depth.iter()).sum())
    }

    /// Waits until switchd's queues are empty, so that a run does not start behind the previous one's
    /// backlog; returns how long that took.
    fn wait_drained(&mut self) -> anyhow::Result<Duration> {
        let start = Instant::now();
        while self.queued()? > 0 {
            check_stop()?;
            ensure!(start.elapsed() < DRAIN_LIMIT, "switchd's queues did not drain within {DRAIN_LIMIT:?}");
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(start.elapsed())
    }

    fn counters(&mut self) -> anyhow::Result<SwitchdStats> {
        let mut client = self.client.clone().context("no gRPC client")?;
        let c = self.rt().block_on(client.get_counters(pb::GetCountersRequest {}))?.into_inner();
        let port = |name: &str| c.ports.iter().find(|p| p.name == name).cloned();
        let e0 = port(SW_PORTS[0].0).context("no Ethernet0 counters")?;
        let e4 = port(SW_PORTS[1].0).context("no Ethernet4 counters")?;
        let q3 = e4.queues.get(3).cloned().unwrap_or_default();
        Ok(SwitchdStats {
            rx_ok: e0.rx_ok,
            rx_drp: e0.rx_drp,
            pg3_packets: e0.pgs.get(3).map_or(0, |p| p.packets),
            pfc_tx: e0.pfc.iter().map(|p| p.tx).sum(),
            tx_ok: e4.tx_ok,
            tx_drp: e4.tx_drp,
            q3_packets: q3.packets,
            q3_dropped: q3.dropped_packets + q3.wred_dropped_packets,
            q3_ecn_marked: q3.ecn_marked_packets,
            e4_pfc_rx: e4.pfc.iter().map(|p| p.rx).sum(),
            e4_trapped: e4.trapped,
            drop_reasons: e0.drop_reasons.into_iter().collect(),
        })
    }
}

impl Drop for Switchd {
    #[allow(unsafe_code)]
    fn drop(&mut self) {
        // Close the gRPC connection first: switchd waits up to 5 s for open connections when it stops.
        self.client = None;
        if let Some(rt) = self.tokio.take() {
            rt.shutdown_background();
        }
        if self.child.try_wait().ok().flatten().is_none() {
            // SIGTERM: switchd stops cleanly (and removes its socket); a stuck one is killed.
            // SAFETY: kill has no memory preconditions; the pid is our own child, not yet reaped.
            unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
            let deadline = Instant::now() + Duration::from_secs(5);
            while self.child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        let _ = std::fs::remove_file(&self.config);
        let _ = std::fs::remove_file(&self.socket);
    }
}

/// switchd's configuration: two routed 100G ports with static neighbours, plus the QoS and buffer tables of
/// the TH profile with their port keys cut down to Ethernet0/Ethernet4.
fn switchd_config(h1_mac: EthernetAddress, h2_mac: EthernetAddress) -> anyhow::Result<String> {
    let profile: Mapping = serde_yaml::from_str(PROFILE).context("parsing the TH profile")?;
    let mut db = Mapping::new();
    let map =
        |pairs: Vec<(String, Value)>| Value::Mapping(pairs.into_iter().map(|(k, v)| (k.into(), v)).collect());
    let s = |x: &str| Value::String(x.to_owned());
    db.insert(
        "DEVICE_METADATA".into(),
        map(vec![(
            "localhost".into(),
            map(vec![
                ("mac".into(), s(&EthernetAddress(ROUTER_MAC).to_string())),
                ("hostname".into(), s("fwdbench")),
            ]),
        )]),
    );
    db.insert(
        "PORT".into(),
        map(SW_PORTS
            .iter()
            .map(|(p, _, _)| (p.to_string(), map(vec![("speed".into(), 100_000.into())])))
            .collect()),
    );
    let mut interfaces = Vec::new();
    for (port, _, addr) in SW_PORTS {
        interfaces.push((port.to_owned(), map(vec![])));
        interfaces.push((format!("{port}|{addr}"), map(vec![])));
    }
    db.insert("INTERFACE".into(), map(interfaces));
    let neigh =
        |mac: EthernetAddress| map(vec![("neigh".into(), s(&mac.to_string())), ("family".into(), s("IPv4"))]);
    db.insert(
        "NEIGH".into(),
        map(vec![
            (format!("{}|{H1_IP}", SW_PORTS[0].0), neigh(h1_mac)),
            (format!("{}|{H2_IP}", SW_PORTS[1].0), neigh(h2_mac)),
        ]),
    );
    for table in QOS_TABLES {
        let Some(Value::Mapping(entries)) = profile.get(*table) else {
            bail!("the TH profile has no {table} table");
        };
        let mut out = Mapping::new();
        for (key, value) in entries {
            let key = key.as_str().with_context(|| format!("{table}: a non-string key"))?;
            if let Some(key) = remap_key(key) {
                out.insert(key.into(), remap_fields(value));
            }
        }
        db.insert((*table).into(), Value::Mapping(out));
    }
    let text = serde_yaml::to_string(&db)?;
    // Validate here, for a clear message before anything starts.
    let parsed =
        ConfigDb::from_yaml_str(&text).map_err(anyhow::Error::msg).context("the generated config")?;
    if let Err(errors) = Switch::new().apply(&parsed, 0) {
        let list: Vec<String> = errors.errors.iter().map(|e| e.to_string()).collect();
        bail!("the generated switchd config is rejected:\n  {}", list.join("\n  "));
    }
    Ok(text)
}

fn is_bench_port(name: &str) -> bool {
    SW_PORTS.iter().any(|(p, _, _)| *p == name)
}

/// A profile key with its port list (`Ethernet0,Ethernet4,Ethernet8|3-4`) cut down to the bench's ports;
/// None when none of them is left. Keys without ports (`AZURE`, `GLOBAL`) stay.
fn remap_key(key: &str) -> Option<String> {
    let (head, rest) = match key.split_once('|') {
        Some((h, r)) => (h, Some(r)),
        None => (key, None),
    };
    let items: Vec<&str> = head.split(',').collect();
    if !items.iter().all(|i| i.starts_with("Ethernet")) {
        return Some(key.to_owned());
    }
    let kept: Vec<&str> = items.into_iter().filter(|i| is_bench_port(i)).collect();
    if kept.is_empty() {
        return None;
    }
    Some(match rest {
        Some(r) => format!("{}|{r}", kept.join(",")),
        None => kept.join(","),
    })
}

/// Fields named after ports (CABLE_LENGTH) keep only the bench's ports.
fn remap_fields(value: &Value) -> Value {
    match value {
        Value::Mapping(m) => Value::Mapping(
            m.iter()
                .filter(|(k, _)| k.as_str().is_none_or(|k| !k.starts_with("Ethernet") || is_bench_port(k)))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        ),
        other => other.clone(),
    }
}

// ---- iproute2 ------------------------------------------------------------------------------------

/// `ip -j [-s] link show dev DEV` in `ns`, the one object.
fn link_json(ns: &Netns, dev: &str, stats: bool) -> anyhow::Result<Value> {
    let mut args = vec!["-j"];
    if stats {
        args.push("-s");
    }
    args.extend(["link", "show", "dev", dev]);
    let out = ns.ip(&args)?;
    // JSON is YAML: no extra dependency for one small document.
    let v: Value = serde_yaml::from_slice(&out.stdout).context("parsing `ip -j link` output")?;
    v.get(0).cloned().with_context(|| format!("`ip -j link show dev {dev}`: no object"))
}

fn link_mac(ns: &Netns, dev: &str) -> anyhow::Result<EthernetAddress> {
    let v = link_json(ns, dev, false)?;
    let text = v.get("address").and_then(Value::as_str).with_context(|| format!("{dev}: no address"))?;
    let mut mac = [0u8; 6];
    let parts: Vec<&str> = text.split(':').collect();
    ensure!(parts.len() == 6, "{dev}: bad MAC {text}");
    for (b, p) in mac.iter_mut().zip(parts) {
        *b = u8::from_str_radix(p, 16).with_context(|| format!("{dev}: bad MAC {text}"))?;
    }
    Ok(EthernetAddress(mac))
}

#[derive(Debug, Clone, Copy, Default)]
struct LinkStats {
    rx_packets: u64,
    rx_dropped: u64,
    tx_packets: u64,
    tx_dropped: u64,
}

fn link_stats(ns: &Netns, dev: &str) -> anyhow::Result<LinkStats> {
    let v = link_json(ns, dev, true)?;
    let get = |dir: &str, field: &str| {
        v.get("stats64")
            .and_then(|s| s.get(dir))
            .and_then(|d| d.get(field))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    Ok(LinkStats {
        rx_packets: get("rx", "packets"),
        rx_dropped: get("rx", "dropped"),
        tx_packets: get("tx", "packets"),
        tx_dropped: get("tx", "dropped"),
    })
}

#[derive(Debug, Clone, Copy, Default)]
struct PathStats {
    m0: LinkStats,
    m1: LinkStats,
    h2: LinkStats,
}

#[derive(Debug, Clone, Default)]
struct SwitchdStats {
    rx_ok: u64,
    rx_drp: u64,
    pg3_packets: u64,
    pfc_tx: u64,
    tx_ok: u64,
    tx_drp: u64,
    q3_packets: u64,
    q3_dropped: u64,
    q3_ecn_marked: u64,
    /// PFC frames received on the egress port (from h2: none expected) and frames it trapped.
    e4_pfc_rx: u64,
    e4_trapped: u64,
    /// Ethernet0's ingress drops by reason.
    drop_reasons: std::collections::BTreeMap<String, u64>,
}

impl SwitchdStats {
    fn since(&self, before: &SwitchdStats) -> SwitchdStats {
        SwitchdStats {
            rx_ok: self.rx_ok - before.rx_ok,
            rx_drp: self.rx_drp - before.rx_drp,
            pg3_packets: self.pg3_packets - before.pg3_packets,
            pfc_tx: self.pfc_tx - before.pfc_tx,
            tx_ok: self.tx_ok - before.tx_ok,
            tx_drp: self.tx_drp - before.tx_drp,
            q3_packets: self.q3_packets - before.q3_packets,
            q3_dropped: self.q3_dropped - before.q3_dropped,
            q3_ecn_marked: self.q3_ecn_marked - before.q3_ecn_marked,
            e4_pfc_rx: self.e4_pfc_rx - before.e4_pfc_rx,
            e4_trapped: self.e4_trapped - before.e4_trapped,
            drop_reasons: self
                .drop_reasons
                .iter()
                .map(|(r, n)| (r.clone(), n - before.drop_reasons.get(r).copied().unwrap_or(0)))
                .filter(|(_, n)| *n > 0)
                .collect(),
        }
    }
}

// ---- interference ----------------------------------------------------------------------------------

/// CPU counters to tell how much of the machine other processes took during a run: user time of the whole
/// machine, of this process and of switchd (the forwarding work itself is mostly kernel time, ours).
#[derive(Debug, Clone, Copy)]
struct CpuSample {
    at: Instant,
    /// Jiffies: machine user+nice, machine busy (all but idle/iowait), this process's and switchd's user.
    machine_user: u64,
    machine_busy: u64,
    self_user: u64,
    switchd_user: u64,
}

impl CpuSample {
    fn take(switchd: Option<u32>) -> CpuSample {
        let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
        let cpu: Vec<u64> = stat
            .lines()
            .next()
            .unwrap_or_default()
            .split_whitespace()
            .skip(1)
            .map(|x| x.parse().unwrap_or(0))
            .collect();
        let field = |i: usize| cpu.get(i).copied().unwrap_or(0);
        // user nice system idle iowait irq softirq steal
        let machine_user = field(0) + field(1);
        let machine_busy = machine_user + field(2) + field(5) + field(6) + field(7);
        let user_of = |pid: &str| {
            let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            // Fields after the command name (which may contain spaces): utime is the 12th.
            let rest = text.rsplit_once(')').map_or("", |(_, r)| r);
            rest.split_whitespace().nth(11).and_then(|x| x.parse().ok()).unwrap_or(0u64)
        };
        CpuSample {
            at: Instant::now(),
            machine_user,
            machine_busy,
            self_user: user_of("self"),
            switchd_user: switchd.map_or(0, |pid| user_of(&pid.to_string())),
        }
    }

    fn ticks_per_core_second(&self, since: &CpuSample) -> f64 {
        // SAFETY: sysconf has no memory preconditions.
        #[allow(unsafe_code)]
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
        hz * (self.at - since.at).as_secs_f64().max(1e-3)
    }

    /// Cores' worth of user time taken by processes other than this one and switchd.
    fn others_since(&self, since: &CpuSample) -> f64 {
        let others = (self.machine_user - since.machine_user) as i64
            - (self.self_user - since.self_user) as i64
            - (self.switchd_user - since.switchd_user) as i64;
        others.max(0) as f64 / self.ticks_per_core_second(since)
    }

    /// Cores' worth of busy time of the whole machine.
    fn busy_cores_since(&self, since: &CpuSample) -> f64 {
        (self.machine_busy - since.machine_busy) as f64 / self.ticks_per_core_second(since)
    }
}

/// Above this many cores of other processes' user time during a run, its figures are flagged.
const INTERFERENCE_LIMIT: f64 = 0.1;

// ---- frames --------------------------------------------------------------------------------------

/// A bench frame of `size` bytes h1 → h2 through the router, DSCP 3 (lossless), ECT(0), UDP checksum 0
/// (none: the payload is rewritten per frame).
fn bench_frame(lab: &Lab, h1_mac: EthernetAddress, size: usize, seq: u64) -> Vec<u8> {
    let flow = Ipv4Flow {
        src_mac: h1_mac,
        dst_mac: lab.router_mac,
        src_ip: H1_IP,
        dst_ip: H2_IP,
        src_port: SRC_PORT,
        dscp: 3,
        ecn: Ecn::Ect0,
        ttl: 64,
    };
    let mut frame = flow.udp(DST_PORT, &vec![0u8; size - PAYLOAD_OFFSET]);
    debug_assert_eq!(frame.len(), size);
    frame[40..42].copy_from_slice(&[0, 0]);
    frame[PAYLOAD_OFFSET..PAYLOAD_OFFSET + 4].copy_from_slice(&MAGIC);
    stamp(&mut frame, seq, 0);
    frame
}

fn stamp(frame: &mut [u8], seq: u64, tx_ns: u64) {
    frame[PAYLOAD_OFFSET + 4..PAYLOAD_OFFSET + 12].copy_from_slice(&seq.to_be_bytes());
    frame[PAYLOAD_OFFSET + 12..PAYLOAD_OFFSET + 20].copy_from_slice(&tx_ns.to_be_bytes());
}

/// (sequence number, send time) of a bench frame; None for anything else.
fn parse_bench(frame: &[u8]) -> Option<(u64, u64)> {
    if frame.len() < MIN_SIZE
        || frame[12..14] != [0x08, 0x00]
        || frame[14] != 0x45
        || frame[23] != 17
        || frame[36..38] != DST_PORT.to_be_bytes()
        || frame[PAYLOAD_OFFSET..PAYLOAD_OFFSET + 4] != MAGIC
    {
        return None;
    }
    let seq = u64::from_be_bytes(frame[PAYLOAD_OFFSET + 4..PAYLOAD_OFFSET + 12].try_into().ok()?);
    let tx = u64::from_be_bytes(frame[PAYLOAD_OFFSET + 12..PAYLOAD_OFFSET + 20].try_into().ok()?);
    Some((seq, tx))
}

// ---- sockets -------------------------------------------------------------------------------------

/// Enters `ns` on this (spawned) thread and opens its eth0 as a batched AF_PACKET port. The hosts always
/// send with `sendmmsg` (and receive from the ring), whatever switchd's own sockets use: the harness stays
/// the same when switchd's I/O changes, so figures from different versions compare.
fn open_eth0(ns: &Netns) -> anyhow::Result<Box<dyn PortBackend>> {
    ns.enter_on_this_thread()?;
    let port = AfPacketPort::open_with_modes("eth0", RxMode::Ring, TxMode::Sendmmsg)
        .with_context(|| format!("opening eth0 in {}", ns.name()))?;
    Ok(Box::new(port))
}

#[allow(unsafe_code)]
fn wait_readable(fd: RawFd, timeout_ms: i32) {
    let mut pfd = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    // SAFETY: one valid pollfd, exclusively borrowed for the call.
    unsafe { libc::poll(&mut pfd, 1, timeout_ms) };
}

/// Frames the kernel dropped at this AF_PACKET socket (its receive queue was full) since the last call
/// (`PACKET_STATISTICS` resets on read).
#[allow(unsafe_code)]
fn socket_drops(fd: RawFd) -> u64 {
    #[repr(C)]
    #[derive(Default)]
    struct TpacketStats {
        packets: u32,
        drops: u32,
    }
    const PACKET_STATISTICS: libc::c_int = 6;
    let mut stats = TpacketStats::default();
    let mut len = std::mem::size_of::<TpacketStats>() as libc::socklen_t;
    // SAFETY: `stats` is a writable tpacket_stats of `len` bytes, alive for the call.
    let r = unsafe {
        libc::getsockopt(fd, libc::SOL_PACKET, PACKET_STATISTICS, (&raw mut stats).cast(), &mut len)
    };
    if r == 0 { u64::from(stats.drops) } else { 0 }
}

/// Lets this thread's sleeps end within about a microsecond of their deadline (default slack: 50 µs).
#[allow(unsafe_code)]
fn tight_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK takes one integer argument and touches no memory.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
}

fn sleep_until(t: Instant) {
    let now = Instant::now();
    if t > now {
        std::thread::sleep(t - now);
    }
}

// ---- measurements --------------------------------------------------------------------------------

struct ModeResult {
    fwd: Forwarder,
    throughput: Vec<Throughput>,
    latency: Vec<Latency>,
}

#[derive(Debug, Clone, Default)]
struct Throughput {
    size: usize,
    /// Frames h1 handed to the kernel within the window, and over the whole run.
    sent_window: u64,
    sent_total: u64,
    /// `sendmmsg` calls and how many took nothing.
    send_calls: u64,
    send_full: u64,
    /// Frames h2's application received within the window, per second of it, and over the whole run.
    received_window: u64,
    per_second: Vec<u64>,
    received_total: u64,
    /// Frames h2's socket dropped (receive queue full).
    h2_socket_drops: u64,
    window_s: f64,
    /// Kernel counters along the path, whole run.
    path: PathStats,
    switchd: Option<SwitchdStats>,
    /// Cores' worth of user time other processes took during the run.
    others_cpu: f64,
}

impl Throughput {
    fn pps(&self) -> f64 {
        self.received_window as f64 / self.window_s
    }
    fn sent_pps(&self) -> f64 {
        self.sent_window as f64 / self.window_s
    }
    fn gbps(&self) -> f64 {
        self.pps() * self.size as f64 * 8.0 / 1e9
    }
    /// Frames per second in each second of the window (the last one may be shorter).
    fn per_second_pps(&self) -> Vec<f64> {
        let n = self.per_second.len();
        self.per_second
            .iter()
            .enumerate()
            .map(|(i, &c)| c as f64 / if i + 1 == n { self.window_s - i as f64 } else { 1.0 })
            .collect()
    }
}

#[derive(Debug, Clone, Default)]
struct Latency {
    size: usize,
    rate: u32,
    sent: u64,
    received: u64,
    /// Measured frames, in ns: min, p50, p99, p99.9, max, mean.
    min: u64,
    p50: u64,
    p99: u64,
    p999: u64,
    max: u64,
    mean: f64,
    /// How late the sender was on its schedule, p99 (ns): pacing quality, not part of the latency.
    send_lag_p99: u64,
    /// Cores' worth of user time other processes took during the run.
    others_cpu: f64,
}

/// Before a run: switchd's queues are empty (the kernel's are by the time the receiver stopped).
fn settle(lab: &mut Lab) -> anyhow::Result<()> {
    if let Some(sw) = lab.switchd.as_mut() {
        let took = sw.wait_drained()?;
        if took > Duration::from_millis(100) {
            eprintln!("   (switchd needed {:.2} s to empty its queues before this run)", took.as_secs_f64());
        }
    }
    Ok(())
}

fn measure(lab: &mut Lab, args: &Args) -> anyhow::Result<ModeResult> {
    let h1_mac = link_mac(&lab.h1, "eth0")?;
    let mut throughput = Vec::new();
    for &size in &args.sizes {
        check_stop()?;
        eprintln!(
            "   {}: throughput, {size} B, {:.1} s + {:.1} s warm-up",
            lab.fwd.name(),
            args.seconds,
            args.warmup
        );
        settle(lab)?;
        throughput.push(throughput_run(lab, h1_mac, size, args)?);
    }
    let mut latency = Vec::new();
    for &size in &args.sizes {
        check_stop()?;
        eprintln!(
            "   {}: latency, {size} B at {} pps, {:.1} s",
            lab.fwd.name(),
            args.rate,
            args.latency_seconds
        );
        settle(lab)?;
        latency.push(latency_run(lab, h1_mac, size, args)?);
    }
    Ok(ModeResult { fwd: lab.fwd, throughput, latency })
}

fn throughput_run(
    lab: &mut Lab,
    h1_mac: EthernetAddress,
    size: usize,
    args: &Args,
) -> anyhow::Result<Throughput> {
    let frames: Vec<Vec<u8>> = (0..TX_FRAMES as u64).map(|i| bench_frame(lab, h1_mac, size, i)).collect();
    let warmup = Duration::from_secs_f64(args.warmup);
    let window = Duration::from_secs_f64(args.seconds);
    let path_before = lab.path_stats()?;
    let sw_before = lab.switchd.as_mut().map(Switchd::counters).transpose()?;
    let ready = Barrier::new(2);
    let (h1, h2) = (&lab.h1, &lab.h2);
    let t0 = Instant::now() + START_MARGIN;
    let (window_start, end) = (t0 + warmup, t0 + warmup + window);
    let cpu_before = CpuSample::take(lab.switchd_pid());
    let (sender, receiver) = std::thread::scope(|s| {
        let ready = &ready;
        let sender = s.spawn(move || -> anyhow::Result<(u64, u64, u64, u64)> {
            let port = open_eth0(h1);
            ready.wait();
            let mut port = port?;
            ensure!(Instant::now() < t0, "the threads took longer than {START_MARGIN:?} to start");
            sleep_until(t0);
            let (mut sent, mut at_window_start, mut calls, mut full) = (0u64, None, 0u64, 0u64);
            loop {
                let now = Instant::now();
                if now >= end || stopped() {
                    break;
                }
                if at_window_start.is_none() && now >= window_start {
                    at_window_start = Some(sent);
                }
                let n = port.send_batch(&frames)?;
                calls += 1;
                if n == 0 {
                    full += 1;
                }
                sent += n as u64;
            }
            Ok((sent - at_window_start.unwrap_or(sent), sent, calls, full))
        });
        let receiver = s.spawn(move || -> anyhow::Result<(u64, Vec<u64>, u64, u64)> {
            let port = open_eth0(h2);
            ready.wait();
            let mut port = port?;
            socket_drops(port.raw_fd());
            let mut per_second = vec![0u64; window.as_secs_f64().ceil() as usize];
            let (mut in_window, mut total) = (0u64, 0u64);
            let mut buf = Vec::with_capacity(64);
            loop {
                if stopped() || Instant::now() >= end + DRAIN {
                    break;
                }
                buf.clear();
                if port.recv_batch(&mut buf, 64)? == 0 {
                    wait_readable(port.raw_fd(), 5);
                    continue;
                }
                let now = Instant::now();
                let n = buf.iter().filter(|f| parse_bench(f).is_some()).count() as u64;
                total += n;
                if now >= window_start && now < end {
                    in_window += n;
                    let second = (now - window_start).as_secs() as usize;
                    if let Some(bin) = per_second.get_mut(second) {
                        *bin += n;
                    }
                }
            }
            Ok((in_window, per_second, total, socket_drops(port.raw_fd())))
        });
        (sender.join(), receiver.join())
    });
    let others_cpu = CpuSample::take(lab.switchd_pid()).others_since(&cpu_before);
    let (sent_window, sent_total, send_calls, send_full) =
        sender.map_err(|_| anyhow::anyhow!("the sender panicked"))??;
    let (received_window, per_second, received_total, h2_socket_drops) =
        receiver.map_err(|_| anyhow::anyhow!("the receiver panicked"))??;
    check_stop()?;
    let path_after = lab.path_stats()?;
    let switchd = match (sw_before, lab.switchd.as_mut()) {
        (Some(before), Some(sw)) => Some(sw.counters()?.since(&before)),
        _ => None,
    };
    let delta = |a: LinkStats, b: LinkStats| LinkStats {
        rx_packets: a.rx_packets - b.rx_packets,
        rx_dropped: a.rx_dropped - b.rx_dropped,
        tx_packets: a.tx_packets - b.tx_packets,
        tx_dropped: a.tx_dropped - b.tx_dropped,
    };
    Ok(Throughput {
        size,
        sent_window,
        sent_total,
        send_calls,
        send_full,
        received_window,
        per_second,
        received_total,
        h2_socket_drops,
        window_s: window.as_secs_f64(),
        path: PathStats {
            m0: delta(path_after.m0, path_before.m0),
            m1: delta(path_after.m1, path_before.m1),
            h2: delta(path_after.h2, path_before.h2),
        },
        switchd,
        others_cpu,
    })
}

fn latency_run(lab: &Lab, h1_mac: EthernetAddress, size: usize, args: &Args) -> anyhow::Result<Latency> {
    let template = bench_frame(lab, h1_mac, size, 0);
    let interval = Duration::from_secs_f64(1.0 / f64::from(args.rate));
    let warm = (LATENCY_WARMUP.as_secs_f64() * f64::from(args.rate)).ceil() as u64;
    let measured = (args.latency_seconds * f64::from(args.rate)).ceil() as u64;
    let total = warm + measured;
    let epoch = Instant::now();
    let ns_since = |t: Instant| (t - epoch).as_nanos() as u64;
    let ready = Barrier::new(2);
    let (h1, h2) = (&lab.h1, &lab.h2);
    let t0 = Instant::now() + START_MARGIN;
    let cpu_before = CpuSample::take(lab.switchd_pid());
    let (sender, receiver) = std::thread::scope(|s| {
        let ready = &ready;
        let sender = s.spawn(move || -> anyhow::Result<(u64, Vec<u64>)> {
            let port = open_eth0(h1);
            ready.wait();
            let mut port = port?;
            tight_timer_slack();
            ensure!(Instant::now() < t0, "the threads took longer than {START_MARGIN:?} to start");
            let mut frame = [template];
            let mut lags = Vec::with_capacity(measured as usize);
            let mut sent = 0;
            for seq in 0..total {
                if stopped() {
                    break;
                }
                let due = t0 + interval.mul_f64(seq as f64);
                // Sleep to within 10 µs of the slot, then spin: the thread stays mostly idle.
                if let Some(ahead) = due.checked_duration_since(Instant::now())
                    && ahead > Duration::from_micros(10)
                {
                    std::thread::sleep(ahead - Duration::from_micros(10));
                }
                while Instant::now() < due {
                    std::hint::spin_loop();
                }
                let now = Instant::now();
                stamp(&mut frame[0], seq, ns_since(now));
                while port.send_batch(&frame)? == 0 {
                    if stopped() {
                        break;
                    }
                }
                if seq >= warm {
                    sent += 1;
                    lags.push((now - due).as_nanos() as u64);
                }
            }
            Ok((sent, lags))
        });
        let receiver = s.spawn(move || -> anyhow::Result<Vec<u64>> {
            let port = open_eth0(h2);
            ready.wait();
            let mut port = port?;
            let mut latencies = vec![u64::MAX; measured as usize];
            let end = t0 + interval.mul_f64(total as f64) + DRAIN;
            let mut buf = Vec::with_capacity(64);
            let trace_us: Option<u64> = std::env::var("FWD_BENCH_TRACE_US").ok().and_then(|v| v.parse().ok());
            let mut marker = trace_us.and_then(|_| {
                std::fs::OpenOptions::new().write(true).open("/sys/kernel/tracing/trace_marker").ok()
            });
            while !stopped() && Instant::now() < end {
                buf.clear();
                if port.recv_batch(&mut buf, 64)? == 0 {
                    wait_readable(port.raw_fd(), 5);
                    continue;
                }
                let rx = ns_since(Instant::now());
                for f in &buf {
                    if let Some((seq, tx)) = parse_bench(f)
                        && seq >= warm
                        && let Some(slot) = latencies.get_mut((seq - warm) as usize)
                    {
                        *slot = rx.saturating_sub(tx);
                        if let (Some(t), Some(m)) = (trace_us, marker.as_mut())
                            && *slot > t * 1000
                        {
                            use std::io::Write as _;
                            let _ = writeln!(m, "SLOW seq={seq} lat_us={}", *slot / 1000);
                        }
                    }
                }
            }
            Ok(latencies)
        });
        (sender.join(), receiver.join())
    });
    let others_cpu = CpuSample::take(lab.switchd_pid()).others_since(&cpu_before);
    let (sent, mut lags) = sender.map_err(|_| anyhow::anyhow!("the sender panicked"))??;
    let latencies = receiver.map_err(|_| anyhow::anyhow!("the receiver panicked"))??;
    check_stop()?;
    let mut got: Vec<u64> = latencies.into_iter().filter(|&l| l != u64::MAX).collect();
    ensure!(!got.is_empty(), "{} {size} B: no latency frame arrived", lab.fwd.name());
    got.sort_unstable();
    lags.sort_unstable();
    Ok(Latency {
        size,
        rate: args.rate,
        sent,
        received: got.len() as u64,
        min: got[0],
        p50: percentile(&got, 0.50),
        p99: percentile(&got, 0.99),
        p999: percentile(&got, 0.999),
        max: *got.last().unwrap_or(&0),
        mean: got.iter().sum::<u64>() as f64 / got.len() as f64,
        send_lag_p99: percentile(&lags, 0.99),
        others_cpu,
    })
}

/// Nearest-rank percentile of sorted values.
fn percentile(sorted: &[u64], q: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

// ---- reporting -----------------------------------------------------------------------------------

fn us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

fn print_mode(r: &ModeResult, args: &Args) {
    let title = match r.fwd {
        Forwarder::Kernel => "kernel IPv4 forwarding in mid (baseline)",
        Forwarder::Floor => {
            "minimal user-space forwarder in mid (AF_PACKET batches, MAC+TTL rewrite; sleeps in poll)"
        }
        Forwarder::FloorSpin => "minimal user-space forwarder in mid (as floor, polling without sleeping)",
        Forwarder::Switchd => {
            "switchd in mid (TH profile: routing, DSCP→TC/PG/queue, MMU, PFC+WD, DWRR, WRED/ECN)"
        }
        Forwarder::SwitchdPoll => "switchd in mid, as above, with --busy-poll-us 1000 (its low-latency mode)",
    };
    println!();
    println!("== {}: {title}", r.fwd.name());
    println!(
        "throughput ({:.1} s after {:.1} s warm-up; h1 sends as fast as sendmmsg takes frames)",
        args.seconds, args.warmup
    );
    println!(
        "  {:>6} {:>12} {:>12} {:>9} {:>11} {:>22} {:>12} {:>12}",
        "size",
        "sent pps",
        "fwd pps",
        "fwd Gb/s",
        "delivered",
        "per second (kpps)",
        "sent total",
        "others' CPU"
    );
    for t in &r.throughput {
        let bins: Vec<String> = t.per_second_pps().iter().map(|b| format!("{:.0}", b / 1000.0)).collect();
        println!(
            "  {:>6} {:>12.0} {:>12.0} {:>9.3} {:>10.1}% {:>22} {:>12} {:>12.2}",
            t.size,
            t.sent_pps(),
            t.pps(),
            t.gbps(),
            100.0 * t.received_window as f64 / t.sent_window.max(1) as f64,
            bins.join("/"),
            t.sent_total,
            t.others_cpu
        );
    }
    println!("  where frames went (whole run incl. warm-up and drain):");
    for t in &r.throughput {
        let p = &t.path;
        let mut line = format!(
            "  {:>6} h1 sent {} ({} sendmmsg calls, {} took nothing) → m0 rx {} (dropped {})",
            t.size, t.sent_total, t.send_calls, t.send_full, p.m0.rx_packets, p.m0.rx_dropped
        );
        if let Some(sw) = &t.switchd {
            let _ = write!(
                line,
                " → switchd Ethernet0 RX_OK {} RX_DRP {} {:?} PG3 {} PFC TX {} → Ethernet4 TX_OK {} TX_DRP {} Q3 {} \
                 (dropped {}, ECN-marked {}; PFC RX {}, trapped {})",
                sw.rx_ok,
                sw.rx_drp,
                sw.drop_reasons,
                sw.pg3_packets,
                sw.pfc_tx,
                sw.tx_ok,
                sw.tx_drp,
                sw.q3_packets,
                sw.q3_dropped,
                sw.q3_ecn_marked,
                sw.e4_pfc_rx,
                sw.e4_trapped
            );
        }
        let _ = write!(
            line,
            " → m1 tx {} (dropped {}) → h2 eth0 rx {} (dropped {}) → h2 app {} (socket drops {})",
            p.m1.tx_packets,
            p.m1.tx_dropped,
            p.h2.rx_packets,
            p.h2.rx_dropped,
            t.received_total,
            t.h2_socket_drops
        );
        println!("{line}");
    }
    println!(
        "one-way latency at {} pps, measured at h2's application (µs; send and receive times from one \
         CLOCK_MONOTONIC, which all network namespaces of the host share)",
        args.rate
    );
    println!(
        "  {:>6} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>9} {:>8} {:>14} {:>12}",
        "size",
        "min",
        "p50",
        "mean",
        "p99",
        "p99.9",
        "max",
        "received",
        "lost",
        "send lag p99",
        "others' CPU"
    );
    for l in &r.latency {
        println!(
            "  {:>6} {:>8.1} {:>8.1} {:>8.1} {:>8.1} {:>8.1} {:>8.1} {:>9} {:>8} {:>14.1} {:>12.2}",
            l.size,
            us(l.min),
            us(l.p50),
            l.mean / 1000.0,
            us(l.p99),
            us(l.p999),
            us(l.max),
            l.received,
            l.sent - l.received,
            us(l.send_lag_p99),
            l.others_cpu
        );
    }
}

/// A forwarder / kernel, per size.
struct Ratios {
    fwd: Forwarder,
    /// (size, ratio of forwarded pps)
    pps: Vec<(usize, f64)>,
    /// (size, ratio of p99 latency)
    p99: Vec<(usize, f64)>,
}

impl Ratios {
    /// Every forwarder's ratios to the kernel of the same run (none without a kernel run).
    fn all(results: &[ModeResult]) -> Vec<Ratios> {
        let Some(kernel) = results.iter().find(|r| r.fwd == Forwarder::Kernel) else { return Vec::new() };
        results.iter().filter(|r| r.fwd != Forwarder::Kernel).map(|r| Ratios::of(kernel, r)).collect()
    }

    fn of(kernel: &ModeResult, switchd: &ModeResult) -> Ratios {
        let pps = kernel
            .throughput
            .iter()
            .zip(&switchd.throughput)
            .map(|(k, s)| (k.size, s.pps() / k.pps().max(1.0)))
            .collect();
        let p99 = kernel
            .latency
            .iter()
            .zip(&switchd.latency)
            .map(|(k, s)| (k.size, s.p99 as f64 / k.p99.max(1) as f64))
            .collect();
        Ratios { fwd: switchd.fwd, pps, p99 }
    }
}

fn verdict(pass: bool) -> &'static str {
    if pass { "PASS" } else { "FAIL" }
}

fn print_ratios(r: &Ratios) {
    println!();
    println!("== {} / kernel, same run, same measurement", r.fwd.name());
    for &(size, ratio) in &r.pps {
        let note = if size == 64 { "" } else { " (the issue's target is for 64 B)" };
        println!(
            "  forwarded pps  {size:>5} B: {ratio:.3}×  (target ≥ {PPS_TARGET}×) {}{note}",
            verdict(ratio >= PPS_TARGET)
        );
    }
    for &(size, ratio) in &r.p99 {
        println!(
            "  p99 latency    {size:>5} B: {ratio:.3}×  (target ≤ {P99_TARGET}×) {}",
            verdict(ratio <= P99_TARGET)
        );
    }
    let all = r.pps.iter().filter(|(s, _)| *s == 64).all(|(_, x)| *x >= PPS_TARGET)
        && r.p99.iter().all(|(_, x)| *x <= P99_TARGET);
    println!(
        "  targets (64 B pps ≥ {PPS_TARGET}×, p99 ≤ {P99_TARGET}×): {}",
        if all { "met" } else { "NOT met" }
    );
}

fn json_summary(args: &Args, results: &[ModeResult], ratios: &[Ratios]) -> String {
    let mut o = String::new();
    let _ = write!(
        o,
        "{{\"seconds\":{},\"warmup\":{},\"latency_seconds\":{},\"rate_pps\":{},\"sizes\":{:?},\"modes\":{{",
        args.seconds, args.warmup, args.latency_seconds, args.rate, args.sizes
    );
    for (i, r) in results.iter().enumerate() {
        if i > 0 {
            o.push(',');
        }
        let _ = write!(o, "\"{}\":{{\"throughput\":[", r.fwd.name());
        for (j, t) in r.throughput.iter().enumerate() {
            if j > 0 {
                o.push(',');
            }
            let _ = write!(
                o,
                "{{\"size\":{},\"sent_pps\":{:.0},\"fwd_pps\":{:.0},\"fwd_gbps\":{:.4},\"per_second\":{:?},\
                 \"sent_window\":{},\"received_window\":{},\"sent_total\":{},\"received_total\":{},\
                 \"h2_socket_drops\":{},\"others_cpu\":{:.3}}}",
                t.size,
                t.sent_pps(),
                t.pps(),
                t.gbps(),
                t.per_second_pps().iter().map(|x| x.round() as u64).collect::<Vec<_>>(),
                t.sent_window,
                t.received_window,
                t.sent_total,
                t.received_total,
                t.h2_socket_drops,
                t.others_cpu
            );
        }
        o.push_str("],\"latency\":[");
        for (j, l) in r.latency.iter().enumerate() {
            if j > 0 {
                o.push(',');
            }
            let _ = write!(
                o,
                "{{\"size\":{},\"rate_pps\":{},\"sent\":{},\"received\":{},\"lost\":{},\"min_us\":{:.2},\
                 \"p50_us\":{:.2},\"mean_us\":{:.2},\"p99_us\":{:.2},\"p999_us\":{:.2},\"max_us\":{:.2},\"others_cpu\":{:.3}}}",
                l.size,
                l.rate,
                l.sent,
                l.received,
                l.sent - l.received,
                us(l.min),
                us(l.p50),
                l.mean / 1000.0,
                us(l.p99),
                us(l.p999),
                us(l.max),
                l.others_cpu
            );
        }
        o.push_str("]}");
    }
    o.push('}');
    // "ratios": switchd's (as before floor modes existed); "ratios_by_forwarder": every forwarder's.
    if let Some(r) = ratios.iter().find(|r| r.fwd == Forwarder::Switchd) {
        o.push_str(",\"ratios\":");
        json_ratios(&mut o, r);
    }
    o.push_str(",\"ratios_by_forwarder\":{");
    for (i, r) in ratios.iter().enumerate() {
        if i > 0 {
            o.push(',');
        }
        let _ = write!(o, "\"{}\":", r.fwd.name());
        json_ratios(&mut o, r);
    }
    o.push_str("}}");
    o
}

fn json_ratios(o: &mut String, r: &Ratios) {
    o.push_str("{\"pps\":");
    json_ratio_list(o, &r.pps, PPS_TARGET, |x| x >= PPS_TARGET);
    o.push_str(",\"p99\":");
    json_ratio_list(o, &r.p99, P99_TARGET, |x| x <= P99_TARGET);
    o.push('}');
}

/// `[{"size":…,"ratio":…,"target":…,"pass":…},…]`
fn json_ratio_list(o: &mut String, ratios: &[(usize, f64)], target: f64, pass: impl Fn(f64) -> bool) {
    o.push('[');
    for (j, &(size, x)) in ratios.iter().enumerate() {
        if j > 0 {
            o.push(',');
        }
        let _ = write!(o, "{{\"size\":{size},\"ratio\":{x:.4},\"target\":{target},\"pass\":{}}}", pass(x));
    }
    o.push(']');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_lists_are_cut_down_to_the_bench_ports() {
        assert_eq!(
            remap_key("Ethernet0,Ethernet4,Ethernet8|0-2").as_deref(),
            Some("Ethernet0,Ethernet4|0-2")
        );
        assert_eq!(remap_key("Ethernet8|3-4"), None);
        assert_eq!(remap_key("Ethernet4"), Some("Ethernet4".into()));
        assert_eq!(remap_key("AZURE"), Some("AZURE".into()));
        assert_eq!(remap_key("GLOBAL"), Some("GLOBAL".into()));
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let v: Vec<u64> = (1..=1000).collect();
        assert_eq!((percentile(&v, 0.5), percentile(&v, 0.99), percentile(&v, 0.999)), (500, 990, 999));
        assert_eq!(percentile(&[7], 0.99), 7);
    }

    #[test]
    fn the_floor_routes_like_a_router() {
        use lossless_dataplane::wire::{EthernetFrame, Ipv4Packet};
        let (a, b, r) = ([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2], [2, 0, 0, 0, 0, 3]);
        let flow = Ipv4Flow {
            src_mac: EthernetAddress(a),
            dst_mac: EthernetAddress(r),
            src_ip: H1_IP,
            dst_ip: H2_IP,
            src_port: SRC_PORT,
            dscp: 3,
            ecn: Ecn::Ect0,
            ttl: 64,
        };
        let mut frame = flow.udp(DST_PORT, &[0u8; 30]);
        route_in_place(&mut frame, EthernetAddress(b), EthernetAddress(r));
        let eth = EthernetFrame::new_checked(&frame[..]).unwrap();
        assert_eq!((eth.dst_addr(), eth.src_addr()), (EthernetAddress(b), EthernetAddress(r)));
        let ip = Ipv4Packet::new_checked(eth.payload()).unwrap();
        assert_eq!(ip.ttl(), 63);
        assert!(ip.verify_checksum(), "header checksum redone");
        let mut arp = vec![0u8; 60];
        arp[12..14].copy_from_slice(&[0x08, 0x06]);
        let before = arp.clone();
        route_in_place(&mut arp, EthernetAddress(b), EthernetAddress(r));
        assert_eq!(arp, before, "only IPv4 is touched");
    }
}
