//! switchd: one Lossless switch on real Linux interfaces, configured and observed over gRPC.
//!
//! ```text
//! switchd --config switch.yaml --port Ethernet0=veth0 --port Ethernet4=tap:tap4 --grpc unix:/run/lossless/leaf0.sock
//! ```
//!
//! Each configured port is bound to an interface: `--port NAME=SPEC` wins over the PORT table's `netdev`
//! field; a port with neither runs without an interface (its frames go nowhere, counted). SPEC is an
//! interface name (batched AF_PACKET), `pnet:IFNAME` or `tap:IFNAME` (a TAP device switchd creates).
//! Interfaces are bound at start-up; a later configuration may change everything but the bindings.

use anyhow::{Context, bail};
use clap::Parser;
use lossless_dataplane::io::{self, PortBackend, PortSpec, runtime::Runtime};
use lossless_dataplane::model::Switch;
use lossless_dataplane::model::config::ConfigDb;
use lossless_dataplane::server::{self, Limits, Listen, ServeOptions, TlsFiles};
use lossless_dataplane::shutdown::Shutdown;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(name = "switchd", version, about = "A Lossless switch on real interfaces, with its gRPC API")]
struct Args {
    /// The switch's name (used in the default gRPC socket path and in logs).
    #[arg(long, default_value = "switch")]
    name: String,
    /// Initial configuration: SONiC-like YAML or a config_db.json (CONFIG_DB tables).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Bind a port to an interface: NAME=IFNAME, NAME=pnet:IFNAME or NAME=tap:IFNAME (repeatable).
    #[arg(long = "port", value_name = "NAME=SPEC")]
    ports: Vec<String>,
    /// Where to serve gRPC: unix:PATH (default unix:/run/lossless/NAME.sock, NAME from --name) or
    /// tcp:IP:PORT (a non-loopback IP needs the --grpc-tls-* files).
    #[arg(long)]
    grpc: Option<String>,
    /// The gRPC socket file's mode (octal), whatever the umask.
    #[arg(long, value_name = "OCTAL", default_value = "0660", value_parser = parse_mode)]
    grpc_mode: u32,
    /// The gRPC socket file's group (name or id): its members may control the switch.
    #[arg(long, value_name = "GROUP")]
    grpc_group: Option<String>,
    /// TLS for a tcp: listener: the server's certificate chain (PEM).
    #[arg(long, value_name = "PEM", requires_all = ["grpc_tls_key", "grpc_tls_client_ca"])]
    grpc_tls_cert: Option<PathBuf>,
    /// TLS: the server's private key (PEM).
    #[arg(long, value_name = "PEM", requires = "grpc_tls_cert")]
    grpc_tls_key: Option<PathBuf>,
    /// TLS: the CA that signs client certificates; clients without one are refused.
    #[arg(long, value_name = "PEM", requires = "grpc_tls_cert")]
    grpc_tls_client_ca: Option<PathBuf>,
    /// Subscribe streams open at once; more are refused (RESOURCE_EXHAUSTED).
    #[arg(long, default_value_t = Limits::default().max_streams)]
    grpc_max_streams: usize,
    /// Messages held per Subscribe stream for a client that has not read them (counter snapshots beyond
    /// it are skipped: the client gets the latest one when it reads again).
    #[arg(long, default_value_t = Limits::default().stream_buffer)]
    grpc_stream_buffer: usize,
    /// A Subscribe stream whose client reads nothing for this many seconds is ended.
    #[arg(long, value_name = "S", default_value_t = Limits::default().stall_timeout.as_secs())]
    grpc_stall_timeout_s: u64,
    /// Keep polling the ports without sleeping for this many microseconds after the last frame received
    /// or sent (0: sleep at once). Trades a busy CPU while traffic flows for no wake-up latency: the
    /// latency tail of a software switch, as DPDK's poll mode and the kernel's SO_BUSY_POLL do. Polling with
    /// nothing to do, the model thread runs in SCHED_IDLE (needs root or CAP_SYS_NICE), so any task woken on
    /// its CPU runs first; under a sustained load it is back in the normal class.
    #[arg(long, value_name = "US", default_value_t = 0)]
    busy_poll_us: u64,
    /// Serve Prometheus metrics at http://ADDR/metrics (e.g. 127.0.0.1:9101; port 0 picks a free one, which
    /// the log names). Read-only; in a lab it is reachable inside the switch's network namespace.
    #[arg(long, value_name = "ADDR")]
    metrics: Option<std::net::SocketAddr>,
    /// Largest gRPC request accepted, in bytes.
    #[arg(long, default_value_t = 16 * 1024 * 1024)]
    max_request_bytes: usize,
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        // Colour only on a terminal: a log file or a pipe gets plain text.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    match run(Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("switchd: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn run(args: Args) -> anyhow::Result<()> {
    // The listener first: without TLS files a non-loopback address is refused before the configuration is
    // read, the ports open and "ready" is logged (serve() would refuse it too, but only after all three).
    let listen = match &args.grpc {
        Some(spec) if args.grpc_tls_cert.is_some() => Listen::parse_any(spec).map_err(anyhow::Error::msg)?,
        Some(spec) => Listen::parse(spec).map_err(anyhow::Error::msg)?,
        None => Listen::Unix(format!("/run/lossless/{}.sock", args.name).into()),
    };
    let db = match &args.config {
        Some(path) => {
            let text =
                std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
            ConfigDb::from_yaml_str(&text)
                .map_err(anyhow::Error::msg)
                .with_context(|| format!("parsing {}", path.display()))?
        }
        None => ConfigDb::default(),
    };
    // Model time is CLOCK_MONOTONIC (see lossless_dataplane::clock): the first configuration starts now, and
    // the wall-clock offset of event timestamps is taken now.
    let started = lossless_dataplane::clock::monotonic_ns();
    lossless_dataplane::clock::WallClock::process();
    let mut switch = Switch::new();
    match switch.apply(&db, lossless_dataplane::time::Instant::from_ns(started)) {
        Ok(applied) => {
            for w in &applied.warnings {
                tracing::warn!("{w}");
            }
        }
        Err(errors) => {
            for e in &errors.errors {
                eprintln!("error: {e}");
            }
            bail!("configuration rejected: {} error(s)", errors.errors.len());
        }
    }

    let overrides = parse_port_overrides(&args.ports)?;
    for name in overrides.keys() {
        if switch.port_id(name).is_none() {
            bail!("--port {name}=...: the configuration has no port {name}");
        }
    }
    let mut backends: Vec<Option<Box<dyn PortBackend>>> = Vec::new();
    let mut specs = Vec::new();
    for port in &switch.config().ports {
        let spec = match (overrides.get(&port.name), &port.netdev) {
            (Some(spec), _) => Some(spec.clone()),
            (None, Some(netdev)) => Some(
                PortSpec::parse(netdev)
                    .map_err(anyhow::Error::msg)
                    .with_context(|| format!("PORT|{}|netdev", port.name))?,
            ),
            (None, None) => None,
        };
        specs.push(spec.clone());
        match spec {
            Some(spec) => {
                let backend =
                    io::open(&spec).with_context(|| format!("port {} on {}", port.name, spec.interface()))?;
                tracing::info!(port = %port.name, interface = %spec.interface(), "port bound");
                backends.push(Some(backend));
            }
            None => {
                tracing::warn!(port = %port.name, "no interface (no --port and no PORT netdev): frames to it go nowhere");
                backends.push(None);
            }
        }
    }

    let mut options = ServeOptions::new(listen);
    options.create_parent = args.grpc.is_none();
    options.max_request_bytes = args.max_request_bytes;
    options.metrics = args.metrics;
    options.socket_mode = args.grpc_mode;
    options.socket_group = args.grpc_group.clone();
    options.limits = Limits {
        max_streams: args.grpc_max_streams,
        stream_buffer: args.grpc_stream_buffer.max(1),
        stall_timeout: std::time::Duration::from_secs(args.grpc_stall_timeout_s.max(1)),
    };
    if let (Some(cert), Some(key), Some(client_ca)) =
        (&args.grpc_tls_cert, &args.grpc_tls_key, &args.grpc_tls_client_ca)
    {
        options.tls = Some(TlsFiles { cert: cert.clone(), key: key.clone(), client_ca: client_ca.clone() });
    }
    let listen = options.listen.clone();
    let ports = switch.port_count();
    let (mut runtime, handle) = Runtime::new(switch, db, backends).context("starting the runtime")?;
    runtime.set_port_specs(specs);
    runtime.set_busy_poll(args.busy_poll_us.saturating_mul(1000));
    let model = std::thread::Builder::new().name("model".into()).spawn(move || runtime.run())?;

    let tokio = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build()?;
    let signals = Shutdown::install().context("installing the SIGTERM/SIGINT handlers")?;
    let served = tokio.block_on(async {
        let shutdown = async move {
            let signal = signals.requested().await;
            tracing::info!("{signal}: stopping");
        };
        tracing::info!(name = %args.name, ports, grpc = %listen, "switchd ready");
        server::serve(handle.clone(), options, shutdown).await
    });
    handle.stop();
    let stopped = model.join().map_err(|_| anyhow::anyhow!("the model thread panicked"))?;
    served?;
    stopped.context("the model thread failed")?;
    tracing::info!("stopped");
    Ok(())
}

/// `--grpc-mode 0660`.
fn parse_mode(s: &str) -> Result<u32, String> {
    u32::from_str_radix(s.trim_start_matches("0o"), 8)
        .ok()
        .filter(|m| *m <= 0o777)
        .ok_or_else(|| format!("{s:?}: expected an octal mode such as 0660"))
}

/// `--port Ethernet0=veth3` values, by port name.
fn parse_port_overrides(values: &[String]) -> anyhow::Result<BTreeMap<String, PortSpec>> {
    let mut out = BTreeMap::new();
    for v in values {
        let Some((name, spec)) = v.split_once('=') else {
            bail!("--port {v}: expected NAME=SPEC, e.g. Ethernet0=veth3");
        };
        let spec =
            PortSpec::parse(spec).map_err(anyhow::Error::msg).with_context(|| format!("--port {v}"))?;
        if out.insert(name.to_owned(), spec).is_some() {
            bail!("--port {name}: given twice");
        }
    }
    Ok(out)
}
