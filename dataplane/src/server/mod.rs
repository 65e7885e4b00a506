//! gRPC services over the runtime: `lossless.v1.Switch`, gRPC health (`grpc.health.v1`, with
//! `lossless.v1.Switch` marked SERVING) and server reflection (v1 and v1alpha, so `grpcurl` works without
//! the .proto files).
//!
//! switchd listens on a Unix socket by default (`unix:/run/lossless/<name>.sock`): access is then governed
//! by the socket file, created mode 0660 whatever the umask (`--grpc-mode`), in a group of the operator's
//! choice (`--grpc-group`). Plain TCP is for loopback only (`tcp:127.0.0.1:50051`). Any other TCP address
//! needs TLS with client certificates (`--grpc-tls-cert`, `--grpc-tls-key`, `--grpc-tls-client-ca`): only
//! clients presenting a certificate signed by that CA get in.
//!
//! ```text
//! grpcurl -plaintext -unix /run/lossless/switch.sock list
//! grpcurl -plaintext -unix /run/lossless/switch.sock lossless.v1.Switch/GetCounters
//! ```

mod authority;
mod convert;
pub mod metrics;
mod service;
mod streams;

pub use convert::{
    CountersSnapshot, WatermarksSnapshot, config_db_from_proto, config_db_to_proto, event_kind,
    event_to_proto, fdb_to_proto, issues_to_proto, neighbors_to_proto,
};
pub use service::{MIN_COUNTERS_INTERVAL, SwitchService};
pub use streams::{Limits, StreamInfo, Streams, SubscribeStream};

use crate::io::runtime::Handle;
use anyhow::{Context, bail};
use hyper_util::rt::TokioIo;
use lossless_proto::v1::switch_client::SwitchClient;
use lossless_proto::v1::switch_server::SwitchServer;
use std::fmt;
use std::future::Future;
use std::net::SocketAddr;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::sync::watch;
use tonic::codegen::http;
use tonic::transport::{
    Certificate, Channel, ClientTlsConfig, Endpoint, Identity, Server, ServerTlsConfig, Uri,
};
use tonic::{Code, Status};

/// How long a shutdown waits for in-flight requests (and streams it cannot end itself, such as health
/// `Watch`) before the server is dropped.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);
/// The largest response a client built by [`connect`] accepts (a whole CONFIG_DB can exceed tonic's 4 MiB
/// default).
const MAX_RESPONSE_BYTES: usize = 64 << 20;

/// Where the gRPC server listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Listen {
    /// A Unix domain socket (`unix:/run/lossless/switch.sock`).
    Unix(PathBuf),
    /// A TCP address (`tcp:127.0.0.1:50051`, `tcp:[::1]:50051`).
    Tcp(SocketAddr),
}

/// A listen or connect endpoint that could not be used, with the reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{spec:?}: {reason}")]
pub struct BadEndpoint {
    pub spec: String,
    pub reason: String,
}

impl Listen {
    /// Parses `unix:PATH` or `tcp:IP:PORT`, refusing a non-loopback TCP address: without TLS the API has no
    /// authentication (see [`Listen::parse_any`] and [`ServeOptions::tls`]).
    pub fn parse(spec: &str) -> Result<Listen, BadEndpoint> {
        let listen = Listen::parse_any(spec)?;
        match listen {
            Listen::Tcp(addr) if !addr.ip().is_loopback() => {
                Err(BadEndpoint { spec: spec.to_owned(), reason: remote_without_tls(addr) })
            }
            listen => Ok(listen),
        }
    }

    /// The same, accepting any TCP address: [`serve`] still refuses a non-loopback one without TLS.
    pub fn parse_any(spec: &str) -> Result<Listen, BadEndpoint> {
        let bad = |reason: &str| BadEndpoint { spec: spec.to_owned(), reason: reason.to_owned() };
        if let Some(path) = spec.strip_prefix("unix:") {
            if path.is_empty() {
                return Err(bad("the socket path is empty (unix:/run/lossless/switch.sock)"));
            }
            Ok(Listen::Unix(PathBuf::from(path)))
        } else if let Some(addr) = spec.strip_prefix("tcp:") {
            addr.parse().map(Listen::Tcp).map_err(|_| bad("not an IP address and port (tcp:127.0.0.1:50051)"))
        } else {
            Err(bad("expected unix:PATH or tcp:IP:PORT"))
        }
    }

    fn is_remote(&self) -> bool {
        matches!(self, Listen::Tcp(addr) if !addr.ip().is_loopback())
    }
}

fn remote_without_tls(addr: SocketAddr) -> String {
    format!(
        "refusing to listen on non-loopback address {} without TLS (the API would have no authentication); \
         use a unix: socket or a loopback address (127.0.0.1, [::1]), or give --grpc-tls-cert, \
         --grpc-tls-key and --grpc-tls-client-ca",
        addr.ip()
    )
}

/// The PEM files of a TLS listener: its certificate chain and key, and the CA whose client certificates
/// are accepted (a client without one is refused).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
    pub client_ca: PathBuf,
}

impl TlsFiles {
    fn server_config(&self) -> anyhow::Result<ServerTlsConfig> {
        let read = |p: &Path| std::fs::read(p).with_context(|| format!("reading {}", p.display()));
        Ok(ServerTlsConfig::new()
            .identity(Identity::from_pem(read(&self.cert)?, read(&self.key)?))
            .client_ca_root(Certificate::from_pem(read(&self.client_ca)?)))
    }
}

/// How the server listens and what it allows.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    pub listen: Listen,
    /// Larger requests are refused with RESOURCE_EXHAUSTED.
    pub max_request_bytes: usize,
    pub limits: Limits,
    /// The Unix socket file's mode (default 0660), whatever the process umask.
    pub socket_mode: u32,
    /// The Unix socket file's group (a name or a numeric id); the process's group when `None`.
    pub socket_group: Option<String>,
    /// Create the socket's missing parent directory (mode 0755): for switchd's default path under `/run`.
    /// Otherwise a missing directory is an error, not created silently.
    pub create_parent: bool,
    pub tls: Option<TlsFiles>,
    /// Serve Prometheus metrics (`GET /metrics`) on this TCP address too ([`metrics`]).
    pub metrics: Option<SocketAddr>,
}

impl ServeOptions {
    /// Defaults: 16 MiB requests, [`Limits::default`], socket mode 0660, no TLS.
    pub fn new(listen: Listen) -> ServeOptions {
        ServeOptions {
            listen,
            max_request_bytes: 16 << 20,
            limits: Limits::default(),
            socket_mode: 0o660,
            socket_group: None,
            create_parent: false,
            tls: None,
            metrics: None,
        }
    }
}

impl std::str::FromStr for Listen {
    type Err = BadEndpoint;

    fn from_str(spec: &str) -> Result<Listen, BadEndpoint> {
        Listen::parse(spec)
    }
}

impl fmt::Display for Listen {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Listen::Unix(path) => write!(f, "unix:{}", path.display()),
            Listen::Tcp(addr) => write!(f, "tcp:{addr}"),
        }
    }
}

/// Serves `lossless.v1.Switch`, health and reflection as `options` say until `shutdown` resolves. On
/// shutdown, open `Subscribe` streams end, in-flight requests get a grace period (`SHUTDOWN_GRACE`) to
/// finish, and a Unix socket file is removed (also on error).
pub async fn serve(
    handle: Handle,
    options: ServeOptions,
    shutdown: impl Future<Output = ()>,
) -> anyhow::Result<()> {
    let ServeOptions { listen, max_request_bytes, limits, .. } = options.clone();
    if let Listen::Tcp(addr) = listen
        && listen.is_remote()
        && options.tls.is_none()
    {
        bail!("{listen}: {}", remote_without_tls(addr));
    }
    if options.tls.is_some() && matches!(listen, Listen::Unix(_)) {
        bail!("{listen}: TLS is for TCP listeners (a Unix socket is protected by its file mode and group)");
    }
    let (stop_tx, stop_rx) = watch::channel(false);
    let service = SwitchService::new(handle.clone()).with_shutdown(stop_rx.clone()).with_limits(limits);
    let metrics = match options.metrics {
        Some(addr) => {
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .with_context(|| format!("listening for metrics on {addr}"))?;
            let addr = listener.local_addr().context("the metrics listener's address")?;
            tracing::info!("metrics served on http://{addr}/metrics");
            let mut stop = stop_rx.clone();
            let stopped = async move {
                let _ = stop.wait_for(|&stop| stop).await;
            };
            let served = metrics::serve(listener, handle.clone(), service.streams(), stopped);
            Some(tokio::spawn(async move {
                if let Err(e) = served.await {
                    tracing::error!("metrics server failed: {e}");
                }
            }))
        }
        None => None,
    };
    let switch = SwitchServer::new(service).max_decoding_message_size(max_request_bytes);

    let (health, health_service) = tonic_health::server::health_reporter();
    health.set_serving::<SwitchServer<SwitchService>>().await;
    let reflection = || {
        tonic_reflection::server::Builder::configure()
            .register_encoded_file_descriptor_set(lossless_proto::v1::FILE_DESCRIPTOR_SET)
            .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
    };
    let mut builder = Server::builder();
    if let Some(tls) = &options.tls {
        builder = builder.tls_config(tls.server_config()?).context("configuring TLS")?;
    }
    let router = builder
        .layer(tower::util::MapResponseLayer::new(status_codes))
        .add_service(switch)
        .add_service(health_service)
        .add_service(reflection().build_v1().context("building the reflection service")?)
        .add_service(reflection().build_v1alpha().context("building the reflection service")?);

    let mut server_stop = stop_rx;
    let server_stop = async move {
        let _ = server_stop.wait_for(|&stop| stop).await;
    };
    let stop = async move {
        shutdown.await;
        tracing::info!("gRPC server shutting down");
        health.set_not_serving::<SwitchServer<SwitchService>>().await;
        let _ = stop_tx.send(true);
    };

    // The metrics server ends with the gRPC server, however that ends.
    let _metrics = AbortOnDrop(metrics);
    match &listen {
        Listen::Unix(path) => {
            let (listener, _socket_file) = bind_unix(path, &options)?;
            tracing::info!("gRPC server listening on {listen}");
            // Below h2: the `:authority` gRPC clients send on Unix sockets, which h2 would refuse, rewritten
            // (see `authority`).
            let incoming = tokio_stream::StreamExt::map(
                tokio_stream::wrappers::UnixListenerStream::new(listener),
                |conn| conn.map(authority::FixedAuthority::new),
            );
            run(router.serve_with_incoming_shutdown(incoming, server_stop), stop).await
            // `_socket_file` removes the socket here.
        }
        Listen::Tcp(addr) => {
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .with_context(|| format!("listening on {listen}"))?;
            tracing::info!(tls = options.tls.is_some(), "gRPC server listening on {listen}");
            let incoming = tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true));
            run(router.serve_with_incoming_shutdown(incoming, server_stop), stop).await
        }
    }
}

/// A spawned task that ends when this is dropped.
struct AbortOnDrop(Option<tokio::task::JoinHandle<()>>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        if let Some(task) = &self.0 {
            task.abort();
        }
    }
}

/// Statuses tonic gives requests it could not read, rewritten to what the client did wrong. A request over
/// `max_decoding_message_size` comes back OUT_OF_RANGE; gRPC's code for a message larger than the
/// configured limit is RESOURCE_EXHAUSTED (what grpc-go and grpc-c++ send). A request that is not valid
/// protobuf comes back INTERNAL, as if the server had failed: it is the request that is malformed
/// (INVALID_ARGUMENT). These refusals are trailers-only responses, so the status is in the headers.
fn status_codes<B>(mut response: http::Response<B>) -> http::Response<B> {
    let Some(status) = Status::from_header_map(response.headers()) else { return response };
    let rewritten = match status.code() {
        Code::OutOfRange if status.message().contains("decoded message length too large") => {
            Status::resource_exhausted(format!("request refused: {}", status.message()))
        }
        Code::Internal if status.message().contains("failed to decode Protobuf message") => {
            Status::invalid_argument(format!("malformed request: {}", status.message()))
        }
        _ => return response,
    };
    if rewritten.add_header(response.headers_mut()).is_err() {
        tracing::warn!("could not rewrite the status of a refused request");
    }
    response
}

/// Runs the server until it fails or `stop` has run, then gives it [`SHUTDOWN_GRACE`] to finish.
async fn run(
    server: impl Future<Output = Result<(), tonic::transport::Error>>,
    stop: impl Future<Output = ()>,
) -> anyhow::Result<()> {
    tokio::pin!(server);
    tokio::select! {
        result = &mut server => return result.context("gRPC server failed"),
        () = stop => {}
    }
    match tokio::time::timeout(SHUTDOWN_GRACE, server).await {
        Ok(result) => result.context("gRPC server failed while shutting down"),
        Err(_) => {
            tracing::warn!("gRPC server: requests still open after {SHUTDOWN_GRACE:?}; closing them");
            Ok(())
        }
    }
}

/// The socket file this server created; removed on drop, unless something else has replaced it since.
struct SocketFile {
    path: PathBuf,
    dev_ino: (u64, u64),
}

impl Drop for SocketFile {
    fn drop(&mut self) {
        match std::fs::symlink_metadata(&self.path) {
            Ok(m) if m.file_type().is_socket() && (m.dev(), m.ino()) == self.dev_ino => {
                if let Err(e) = std::fs::remove_file(&self.path) {
                    tracing::warn!("removing {}: {e}", self.path.display());
                }
            }
            _ => {}
        }
    }
}

/// Binds a Unix socket with `options.socket_mode` and `options.socket_group`, and replaces a stale socket
/// file (one nobody listens on). Anything else at the path (a regular file, a live server's socket) is left
/// alone and refused. The socket is bound under a temporary name, given its mode and group, then renamed
/// into place: it is never reachable with the umask's permissions.
fn bind_unix(path: &Path, options: &ServeOptions) -> anyhow::Result<(tokio::net::UnixListener, SocketFile)> {
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if !parent.is_dir() {
        if !options.create_parent {
            bail!(
                "unix:{}: the directory {} does not exist (switchd creates only its default /run/lossless)",
                path.display(),
                parent.display()
            );
        }
        std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
        tracing::info!("created {}", parent.display());
    }
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_socket() => {
            if std::os::unix::net::UnixStream::connect(path).is_ok() {
                bail!("{}: another server is listening on this socket", path.display());
            }
            std::fs::remove_file(path)
                .with_context(|| format!("removing stale socket {}", path.display()))?;
        }
        Ok(_) => bail!("{}: exists and is not a socket; not replacing it", path.display()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e).with_context(|| format!("inspecting {}", path.display())),
    }
    let gid = options.socket_group.as_deref().map(group_id).transpose()?;
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let nonce =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos();
    let temp = parent.join(format!(".{name}.{}.{nonce:x}", std::process::id()));
    let listener = tokio::net::UnixListener::bind(&temp)
        .with_context(|| format!("listening on unix:{}", path.display()))?;
    let placed = (|| -> anyhow::Result<()> {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&temp, std::fs::Permissions::from_mode(options.socket_mode))
            .with_context(|| format!("setting the mode of {}", path.display()))?;
        if let Some(gid) = gid {
            std::os::unix::fs::lchown(&temp, None, Some(gid))
                .with_context(|| format!("setting the group of {}", path.display()))?;
        }
        std::fs::rename(&temp, path).with_context(|| format!("placing {}", path.display()))
    })();
    if let Err(e) = placed {
        let _ = std::fs::remove_file(&temp);
        return Err(e);
    }
    let m = std::fs::symlink_metadata(path).with_context(|| format!("inspecting {}", path.display()))?;
    Ok((listener, SocketFile { path: path.to_owned(), dev_ino: (m.dev(), m.ino()) }))
}

/// A group by name or numeric id.
fn group_id(group: &str) -> anyhow::Result<u32> {
    if let Ok(gid) = group.parse() {
        return Ok(gid);
    }
    // /etc/group: name:password:gid:members (what getgrnam reads for local groups).
    let groups = std::fs::read_to_string("/etc/group").context("reading /etc/group")?;
    groups
        .lines()
        .filter_map(|line| {
            let mut fields = line.split(':');
            let name = fields.next()?;
            let gid = fields.nth(1)?.parse().ok()?;
            Some((name, gid))
        })
        .find(|(name, _)| *name == group)
        .map(|(_, gid)| gid)
        .with_context(|| format!("--grpc-group {group}: no such group"))
}

/// What a client shows of a refusal: the status message, then each `google.rpc` field violation
/// (`TABLE|key|field: why`) and failed precondition (`TABLE|key: why`) the message does not already
/// quote, on a line of its own.
pub fn describe_status(status: &Status) -> String {
    let mut out = status.message().to_owned();
    for (location, why) in status_violations(status) {
        let line = format!("{location}: {why}");
        if !status.message().contains(&line) {
            out.push_str(&format!("\n  {line}"));
        }
    }
    out
}

/// The `google.rpc` details of a status as (location, description): BadRequest field violations, then
/// PreconditionFailure violations.
pub fn status_violations(status: &Status) -> Vec<(String, String)> {
    use tonic_types::StatusExt;
    let details = status.get_error_details();
    let mut out = Vec::new();
    if let Some(bad) = details.bad_request() {
        out.extend(bad.field_violations.iter().map(|v| (v.field.clone(), v.description.clone())));
    }
    if let Some(failed) = details.precondition_failure() {
        out.extend(failed.violations.iter().map(|v| (v.subject.clone(), v.description.clone())));
    }
    out
}

/// A client's TLS material for [`connect_with`]: the CA that signed the server's certificate, and the
/// client's own certificate and key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientTls {
    pub ca: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
    /// The name the server's certificate must carry; the endpoint's host when `None`.
    pub domain: Option<String>,
}

/// A client of `lossless.v1.Switch` at `unix:PATH` or `tcp:HOST:PORT` (any host: connecting is not
/// restricted to loopback). Connects eagerly, so an absent server is reported here.
pub async fn connect(endpoint: &str) -> anyhow::Result<SwitchClient<Channel>> {
    connect_with(endpoint, None).await
}

/// The same, over TLS for a `tcp:` endpoint when `tls` is given.
pub async fn connect_with(endpoint: &str, tls: Option<&ClientTls>) -> anyhow::Result<SwitchClient<Channel>> {
    let channel = if let Some(path) = endpoint.strip_prefix("unix:") {
        if path.is_empty() {
            bail!("{endpoint:?}: the socket path is empty (unix:/run/lossless/switch.sock)");
        }
        if tls.is_some() {
            bail!("{endpoint}: TLS is for tcp: endpoints");
        }
        let path = PathBuf::from(path);
        // The URI is required by tonic but never dialled: the connector always opens the socket.
        Endpoint::from_static("http://localhost")
                .connect_with_connector(tower::service_fn(move |_: Uri| {
                    let path = path.clone();
                    async move {
                        Ok::<_, std::io::Error>(TokioIo::new(tokio::net::UnixStream::connect(path).await?))
                    }
                }))
                .await
    } else if let Some(addr) = endpoint.strip_prefix("tcp:") {
        let scheme = if tls.is_some() { "https" } else { "http" };
        let mut e = Endpoint::from_shared(format!("{scheme}://{addr}"))
            .with_context(|| format!("{endpoint:?}: expected tcp:HOST:PORT"))?;
        if let Some(tls) = tls {
            let read = |p: &Path| std::fs::read(p).with_context(|| format!("reading {}", p.display()));
            let mut config = ClientTlsConfig::new()
                .ca_certificate(Certificate::from_pem(read(&tls.ca)?))
                .identity(Identity::from_pem(read(&tls.cert)?, read(&tls.key)?));
            if let Some(domain) = &tls.domain {
                config = config.domain_name(domain.clone());
            }
            e = e.tls_config(config).context("configuring TLS")?;
        }
        e.connect().await
    } else {
        bail!("{endpoint:?}: expected unix:PATH or tcp:HOST:PORT");
    }
    .with_context(|| format!("connecting to {endpoint}"))?;
    Ok(SwitchClient::new(channel).max_decoding_message_size(MAX_RESPONSE_BYTES))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_parses_unix_and_loopback_tcp() {
        assert_eq!(
            Listen::parse("unix:/run/lossless/x.sock"),
            Ok(Listen::Unix("/run/lossless/x.sock".into()))
        );
        assert_eq!(Listen::parse("tcp:127.0.0.1:50051"), Ok(Listen::Tcp("127.0.0.1:50051".parse().unwrap())));
        assert_eq!(Listen::parse("tcp:[::1]:50051"), Ok(Listen::Tcp("[::1]:50051".parse().unwrap())));
        assert_eq!(Listen::parse("unix:/a/b.sock").unwrap().to_string(), "unix:/a/b.sock");
    }

    #[test]
    fn listen_refuses_remote_tcp_unless_allowed() {
        let e = Listen::parse("tcp:0.0.0.0:50051").unwrap_err();
        assert!(e.to_string().contains("non-loopback address 0.0.0.0 without TLS"), "{e}");
        assert!(e.to_string().contains("--grpc-tls-client-ca"), "the error names the real flags: {e}");
        assert!(Listen::parse("tcp:192.0.2.1:50051").is_err());
        assert_eq!(Listen::parse_any("tcp:0.0.0.0:50051"), Ok(Listen::Tcp("0.0.0.0:50051".parse().unwrap())));
    }

    #[test]
    fn listen_refuses_malformed_specs() {
        for spec in ["", "unix:", "/run/x.sock", "tcp:localhost:50051", "tcp:127.0.0.1", "http://127.0.0.1:1"]
        {
            assert!(Listen::parse(spec).is_err(), "{spec:?} was accepted");
        }
    }
}
