//! gRPC services over the runtime: `lossless.v1.Switch`, gRPC health (`grpc.health.v1`, with
//! `lossless.v1.Switch` marked SERVING) and server reflection (v1 and v1alpha, so `grpcurl` works without
//! the .proto files).
//!
//! switchd listens on a Unix socket by default (`unix:/run/lossless/switchd.sock`): access is then governed
//! by the socket file's permissions. TCP is for loopback only (`tcp:127.0.0.1:50051`), since the API has no
//! authentication; a non-loopback address is refused unless the caller opts in with
//! [`Listen::parse_allow_remote`].
//!
//! ```text
//! grpcurl -plaintext -unix /run/lossless/switchd.sock list
//! grpcurl -plaintext -unix /run/lossless/switchd.sock lossless.v1.Switch/GetCounters
//! ```

mod convert;
mod service;

pub use convert::{config_db_from_proto, config_db_to_proto, issues_to_proto};
pub use service::{MIN_COUNTERS_INTERVAL, SwitchService};

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
use tonic::transport::{Channel, Endpoint, Server, Uri};
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
    /// A Unix domain socket (`unix:/run/lossless/switchd.sock`).
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
    /// Parses `unix:PATH` or `tcp:IP:PORT`. TCP must be a loopback address: the API has no
    /// authentication, so anything else is refused (see [`Listen::parse_allow_remote`]).
    pub fn parse(spec: &str) -> Result<Listen, BadEndpoint> {
        let listen = Listen::parse_allow_remote(spec)?;
        match listen {
            Listen::Tcp(addr) if !addr.ip().is_loopback() => Err(BadEndpoint {
                spec: spec.to_owned(),
                reason: format!(
                    "refusing to listen on non-loopback address {} (the API has no authentication); use a \
                     unix: socket or a loopback address (127.0.0.1, [::1]), or allow remote access explicitly",
                    addr.ip()
                ),
            }),
            listen => Ok(listen),
        }
    }

    /// The same, accepting any TCP address: for trusted management networks only.
    pub fn parse_allow_remote(spec: &str) -> Result<Listen, BadEndpoint> {
        let bad = |reason: &str| BadEndpoint { spec: spec.to_owned(), reason: reason.to_owned() };
        if let Some(path) = spec.strip_prefix("unix:") {
            if path.is_empty() {
                return Err(bad("the socket path is empty (unix:/run/lossless/switchd.sock)"));
            }
            Ok(Listen::Unix(PathBuf::from(path)))
        } else if let Some(addr) = spec.strip_prefix("tcp:") {
            addr.parse().map(Listen::Tcp).map_err(|_| bad("not an IP address and port (tcp:127.0.0.1:50051)"))
        } else {
            Err(bad("expected unix:PATH or tcp:IP:PORT"))
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

/// Serves `lossless.v1.Switch`, health and reflection on `listen` until `shutdown` resolves. Requests larger
/// than `max_request_bytes` are refused with RESOURCE_EXHAUSTED. On shutdown, open `Subscribe` streams end,
/// in-flight requests get a grace period (`SHUTDOWN_GRACE`) to finish, and a Unix socket file is removed (also on error).
pub async fn serve(
    handle: Handle,
    listen: Listen,
    max_request_bytes: usize,
    shutdown: impl Future<Output = ()>,
) -> anyhow::Result<()> {
    let (stop_tx, stop_rx) = watch::channel(false);
    let service = SwitchService::new(handle).with_shutdown(stop_rx.clone());
    let switch = SwitchServer::new(service).max_decoding_message_size(max_request_bytes);

    let (health, health_service) = tonic_health::server::health_reporter();
    health.set_serving::<SwitchServer<SwitchService>>().await;
    let reflection = || {
        tonic_reflection::server::Builder::configure()
            .register_encoded_file_descriptor_set(lossless_proto::v1::FILE_DESCRIPTOR_SET)
            .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
    };
    let router = Server::builder()
        .layer(tower::util::MapResponseLayer::new(size_limit_status))
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

    match &listen {
        Listen::Unix(path) => {
            let (listener, _socket_file) = bind_unix(path)?;
            tracing::info!("gRPC server listening on {listen}");
            let incoming = tokio_stream::wrappers::UnixListenerStream::new(listener);
            run(router.serve_with_incoming_shutdown(incoming, server_stop), stop).await
            // `_socket_file` removes the socket here.
        }
        Listen::Tcp(addr) => {
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .with_context(|| format!("listening on {listen}"))?;
            tracing::info!("gRPC server listening on {listen}");
            let incoming = tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true));
            run(router.serve_with_incoming_shutdown(incoming, server_stop), stop).await
        }
    }
}

/// tonic reports a request over `max_decoding_message_size` as OUT_OF_RANGE; gRPC's code for a message
/// larger than the configured limit is RESOURCE_EXHAUSTED (what grpc-go and grpc-c++ send, and what clients
/// expect). The refusal is a trailers-only response, so its status is in the headers.
fn size_limit_status<B>(mut response: http::Response<B>) -> http::Response<B> {
    if let Some(status) = Status::from_header_map(response.headers())
        && status.code() == Code::OutOfRange
        && status.message().contains("decoded message length too large")
    {
        let exhausted = Status::resource_exhausted(format!("request refused: {}", status.message()));
        if exhausted.add_header(response.headers_mut()).is_err() {
            tracing::warn!("could not rewrite an oversized request's status");
        }
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

/// Binds a Unix socket: creates the parent directory, and replaces a stale socket file (one nobody listens
/// on). Anything else at the path (a regular file, a live server's socket) is left alone and refused.
fn bind_unix(path: &Path) -> anyhow::Result<(tokio::net::UnixListener, SocketFile)> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
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
    let listener = tokio::net::UnixListener::bind(path)
        .with_context(|| format!("listening on unix:{}", path.display()))?;
    let m = std::fs::symlink_metadata(path).with_context(|| format!("inspecting {}", path.display()))?;
    Ok((listener, SocketFile { path: path.to_owned(), dev_ino: (m.dev(), m.ino()) }))
}

/// A client of `lossless.v1.Switch` at `unix:PATH` or `tcp:HOST:PORT` (any host: connecting is not
/// restricted to loopback). Connects eagerly, so an absent server is reported here.
pub async fn connect(endpoint: &str) -> anyhow::Result<SwitchClient<Channel>> {
    let channel = if let Some(path) = endpoint.strip_prefix("unix:") {
        if path.is_empty() {
            bail!("{endpoint:?}: the socket path is empty (unix:/run/lossless/switchd.sock)");
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
        Endpoint::from_shared(format!("http://{addr}"))
            .with_context(|| format!("{endpoint:?}: expected tcp:HOST:PORT"))?
            .connect()
            .await
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
        assert!(e.to_string().contains("non-loopback address 0.0.0.0"), "{e}");
        assert!(Listen::parse("tcp:192.0.2.1:50051").is_err());
        assert_eq!(
            Listen::parse_allow_remote("tcp:0.0.0.0:50051"),
            Ok(Listen::Tcp("0.0.0.0:50051".parse().unwrap()))
        );
    }

    #[test]
    fn listen_refuses_malformed_specs() {
        for spec in ["", "unix:", "/run/x.sock", "tcp:localhost:50051", "tcp:127.0.0.1", "http://127.0.0.1:1"]
        {
            assert!(Listen::parse(spec).is_err(), "{spec:?} was accepted");
        }
    }
}
