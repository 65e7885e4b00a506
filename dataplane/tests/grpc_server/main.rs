//! The gRPC server end to end: a T0 switch on a real runtime thread (ports without interfaces), `serve` on
//! a Unix socket, and real clients (`lossless.v1.Switch`, gRPC health, reflection) over that socket.

use lossless_dataplane::io::runtime::{Handle, Runtime};
use lossless_dataplane::model::Switch;
use lossless_dataplane::model::config::ConfigDb;
use lossless_dataplane::server::{self, Listen, ServeOptions, config_db_from_proto, config_db_to_proto};
use lossless_dataplane::time::Instant;
use lossless_proto::v1 as pb;
use lossless_proto::v1::switch_client::SwitchClient;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use tonic::Code;
use tonic::transport::Channel;

const T0_YAML: &str = include_str!("../../../configs/t0.yaml");
const PORTS: [&str; 5] = ["Ethernet0", "Ethernet4", "Ethernet8", "Ethernet12", "Ethernet16"];
/// Small enough that a test request can exceed it cheaply; a T0 configuration is a few KiB.
const MAX_REQUEST_BYTES: usize = 256 << 10;

fn t0_db() -> ConfigDb {
    ConfigDb::from_yaml_str(T0_YAML).expect("T0 YAML parses")
}

/// A socket path no other test (or test process) uses, in a directory `serve` has to create.
fn unique_socket() -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    std::env::temp_dir().join(format!("lossless-grpc-{}-{n}", std::process::id())).join("switchd.sock")
}

/// A switch runtime, a server on a Unix socket and a client. [`Lab::stop`] shuts everything down in order
/// and checks the socket is gone; if a test fails first, `Drop` still stops the threads and removes files.
struct Lab {
    client: SwitchClient<Channel>,
    handle: Handle,
    socket: PathBuf,
    runtime: Option<std::thread::JoinHandle<std::io::Result<()>>>,
    server: Option<tokio::task::JoinHandle<anyhow::Result<()>>>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Lab {
    async fn start() -> Lab {
        Lab::start_with(t0_db()).await
    }

    async fn start_limited(limits: server::Limits) -> Lab {
        Lab::start_configured(t0_db(), |o| o.limits = limits).await
    }

    async fn start_with(db: ConfigDb) -> Lab {
        Lab::start_configured(db, |_| {}).await
    }

    async fn start_configured(db: ConfigDb, configure: impl FnOnce(&mut ServeOptions)) -> Lab {
        let mut switch = Switch::new();
        switch.apply(&db, Instant::ZERO).expect("the configuration applies");
        let ports = switch.port_count();
        let (runtime, handle) =
            Runtime::new(switch, db, (0..ports).map(|_| None).collect()).expect("runtime");
        let runtime = std::thread::spawn(move || runtime.run());
        let socket = unique_socket();
        let (shutdown_tx, shutdown_rx) = tokio::sync::oneshot::channel::<()>();
        let mut options = options(&socket);
        configure(&mut options);
        let server = tokio::spawn(server::serve(handle.clone(), options, async {
            let _ = shutdown_rx.await;
        }));
        let client = connect_when_listening(&socket, &server).await;
        Lab {
            client,
            handle,
            socket,
            runtime: Some(runtime),
            server: Some(server),
            shutdown: Some(shutdown_tx),
        }
    }

    fn endpoint(&self) -> String {
        format!("unix:{}", self.socket.display())
    }

    async fn channel(&self) -> Channel {
        self.channel_on(tonic::transport::Endpoint::from_static("http://localhost")).await
    }

    /// A channel to the server's socket with `endpoint`'s settings (the URI is never dialled).
    async fn channel_on(&self, endpoint: tonic::transport::Endpoint) -> Channel {
        let path = self.socket.clone();
        endpoint
            .connect_with_connector(tower::service_fn(move |_| {
                let path = path.clone();
                async move {
                    Ok::<_, std::io::Error>(hyper_util::rt::TokioIo::new(
                        tokio::net::UnixStream::connect(path).await?,
                    ))
                }
            }))
            .await
            .expect("connect")
    }

    async fn generation(&mut self) -> u64 {
        self.client.get(pb::GetRequest {}).await.expect("Get").into_inner().generation
    }

    /// Shuts the server down (awaiting it), checks the socket file is gone, stops and joins the runtime.
    async fn stop(mut self) {
        let _ = self.shutdown.take().expect("not stopped yet").send(());
        let result = self.server.take().expect("server").await.expect("server task");
        result.expect("serve returns Ok after shutdown");
        assert!(!self.socket.exists(), "{} is left behind", self.socket.display());
        self.handle.stop();
        let runtime = self.runtime.take().expect("runtime");
        tokio::task::spawn_blocking(move || runtime.join())
            .await
            .unwrap()
            .expect("runtime thread")
            .expect("runtime");
        let _ = std::fs::remove_dir(self.socket.parent().unwrap());
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        self.handle.stop();
        let _ = std::fs::remove_file(&self.socket);
        let _ = std::fs::remove_dir(self.socket.parent().unwrap());
    }
}

/// Serving on `socket`, creating its directory, with a small request limit.
fn options(socket: &Path) -> ServeOptions {
    let mut options = ServeOptions::new(Listen::Unix(socket.to_owned()));
    options.max_request_bytes = MAX_REQUEST_BYTES;
    options.create_parent = true;
    options
}

/// `serve` binds the socket asynchronously: connect once the server task has bound it, retrying on the
/// connection refusals a not-yet-bound socket gives (each attempt awaits the connect itself).
async fn connect_when_listening(
    socket: &Path,
    server: &tokio::task::JoinHandle<anyhow::Result<()>>,
) -> SwitchClient<Channel> {
    let endpoint = format!("unix:{}", socket.display());
    loop {
        match server::connect(&endpoint).await {
            Ok(client) => return client,
            Err(_) if !server.is_finished() => tokio::task::yield_now().await,
            Err(e) => panic!("the server ended before accepting connections: {e:#}"),
        }
    }
}

fn changed_t0() -> ConfigDb {
    let mut db = t0_db();
    db.set("PORT", "Ethernet16", "admin_status", "down");
    db
}

fn invalid_t0() -> ConfigDb {
    let mut db = t0_db();
    db.set("PORT", "Ethernet0", "speed", "fast");
    db
}

fn apply_request(db: &ConfigDb) -> pb::ApplyRequest {
    pb::ApplyRequest {
        config: Some(config_db_to_proto(db)),
        dry_run: false,
        expected_generation: 0,
        replace: false,
    }
}

/// The `google.rpc.BadRequest` field violations of a status, as (field, description).
fn field_violations(status: &tonic::Status) -> Vec<(String, String)> {
    use tonic_types::StatusExt;
    let details = status.get_error_details();
    let bad_request = details.bad_request().expect("a BadRequest detail");
    bad_request.field_violations.iter().map(|v| (v.field.clone(), v.description.clone())).collect()
}

fn locations(issues: &[pb::ConfigIssue]) -> Vec<String> {
    issues
        .iter()
        .map(|i| {
            let l = i.location.clone().unwrap_or_default();
            format!("{}|{}|{}", l.table, l.key, l.field)
        })
        .collect()
}

#[tokio::test]
async fn apply_bumps_the_generation_and_get_returns_the_new_config() {
    let mut lab = Lab::start().await;
    assert_eq!(lab.generation().await, 1);
    let response = lab.client.apply(apply_request(&changed_t0())).await.unwrap().into_inner();
    assert!(response.accepted, "{:?}", response.issues);
    assert_eq!(response.generation, 2);
    let got = lab.client.get(pb::GetRequest {}).await.unwrap().into_inner();
    assert_eq!(got.generation, 2);
    assert_eq!(config_db_from_proto(got.config.unwrap()), changed_t0());
    let counters = lab.client.get_counters(pb::GetCountersRequest {}).await.unwrap().into_inner();
    assert_eq!(counters.generation, 2);
    assert!(!counters.ports[4].admin_up, "Ethernet16 is down after the apply");
    lab.stop().await;
}

#[tokio::test]
async fn an_invalid_config_is_refused_with_field_violations_and_changes_nothing() {
    let mut lab = Lab::start().await;
    let status = lab.client.apply(apply_request(&invalid_t0())).await.unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
    assert!(status.message().contains("PORT|Ethernet0|speed"), "{}", status.message());
    let violations = field_violations(&status);
    let speed = violations.iter().find(|(field, _)| field == "PORT|Ethernet0|speed").expect("{violations:?}");
    assert!(speed.1.contains("fast"), "the description quotes the value: {speed:?}");
    let got = lab.client.get(pb::GetRequest {}).await.unwrap().into_inner();
    assert_eq!(got.generation, 1);
    assert_eq!(config_db_from_proto(got.config.unwrap()), t0_db());
    lab.stop().await;
}

#[tokio::test]
async fn dry_run_validates_and_changes_nothing() {
    let mut lab = Lab::start().await;
    let request = pb::ApplyRequest { dry_run: true, ..apply_request(&changed_t0()) };
    let response = lab.client.apply(request).await.unwrap().into_inner();
    assert!(response.accepted);
    assert_eq!(response.generation, 1);
    let request = pb::ApplyRequest { dry_run: true, ..apply_request(&invalid_t0()) };
    let status = lab.client.apply(request).await.unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument);
    assert!(field_violations(&status).iter().any(|(field, _)| field == "PORT|Ethernet0|speed"));
    let got = lab.client.get(pb::GetRequest {}).await.unwrap().into_inner();
    assert_eq!(got.generation, 1);
    assert_eq!(config_db_from_proto(got.config.unwrap()), t0_db());
    lab.stop().await;
}

#[tokio::test]
async fn a_stale_expected_generation_is_aborted() {
    let mut lab = Lab::start().await;
    let request = pb::ApplyRequest { expected_generation: 7, ..apply_request(&changed_t0()) };
    let status = lab.client.apply(request).await.unwrap_err();
    assert_eq!(status.code(), Code::Aborted);
    assert!(status.message().contains("expected generation 7"), "{}", status.message());
    assert!(status.message().contains("running generation is 1"), "{}", status.message());
    assert_eq!(lab.generation().await, 1);
    let request = pb::ApplyRequest { expected_generation: 1, ..apply_request(&changed_t0()) };
    assert_eq!(lab.client.apply(request).await.unwrap().into_inner().generation, 2);
    lab.stop().await;
}

#[tokio::test]
async fn validate_reports_validity_and_issues() {
    let mut lab = Lab::start().await;
    let ok = lab
        .client
        .validate(pb::ValidateRequest { config: Some(config_db_to_proto(&t0_db())) })
        .await
        .unwrap();
    assert!(ok.get_ref().valid, "{:?}", ok.get_ref().issues);
    let bad = lab
        .client
        .validate(pb::ValidateRequest { config: Some(config_db_to_proto(&invalid_t0())) })
        .await
        .unwrap();
    assert!(!bad.get_ref().valid);
    assert!(locations(&bad.get_ref().issues).contains(&"PORT|Ethernet0|speed".to_owned()));
    assert_eq!(lab.generation().await, 1);
    lab.stop().await;
}

#[tokio::test]
async fn counters_list_every_port_in_order() {
    let mut lab = Lab::start().await;
    let counters = lab.client.get_counters(pb::GetCountersRequest {}).await.unwrap().into_inner();
    assert_eq!(counters.generation, 1);
    assert!(counters.ledger.is_some());
    let names: Vec<&str> = counters.ports.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, PORTS);
    assert_eq!(counters.ports[0].speed_mbps, 100_000);
    assert_eq!(counters.ports[2].speed_mbps, 25_000);
    for p in &counters.ports {
        assert!(p.admin_up);
        assert_eq!(
            (p.queues.len(), p.pgs.len(), p.pfc.len(), p.pfc_wd.len(), p.queue_depth.len()),
            (8, 8, 8, 8, 8)
        );
        // T0 has no PFC_WD table: no queue is monitored.
        assert!(p.pfc_wd.iter().all(|w| w.status.is_empty()));
    }
    lab.stop().await;
}

#[tokio::test]
async fn watermarks_list_every_port_and_can_be_cleared() {
    let mut lab = Lab::start().await;
    for persistent in [false, true] {
        let request = pb::GetWatermarksRequest { persistent, clear: true, clear_tables: vec![] };
        let wm = lab.client.get_watermarks(request).await.unwrap().into_inner();
        let names: Vec<&str> = wm.ports.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, PORTS);
        for p in &wm.ports {
            assert_eq!(
                (p.pg_shared_bytes.len(), p.pg_headroom_bytes.len(), p.queue_shared_bytes.len()),
                (8, 8, 8)
            );
        }
    }
    // A typed clear (`sonic-clear queue watermark unicast`) is taken; a table number the API does not
    // define is refused, naming the field.
    let typed = pb::GetWatermarksRequest {
        persistent: false,
        clear: true,
        clear_tables: vec![pb::WatermarkTable::QueueUnicast as i32],
    };
    assert!(lab.client.get_watermarks(typed).await.is_ok());
    let bad = pb::GetWatermarksRequest { persistent: false, clear: true, clear_tables: vec![42] };
    let refused = lab.client.get_watermarks(bad).await.unwrap_err();
    assert_eq!(refused.code(), tonic::Code::InvalidArgument);
    assert!(refused.message().contains("clear_tables: 42"), "{}", refused.message());
    lab.stop().await;
}

#[tokio::test]
async fn holds_and_debug_storms_name_ports_by_sonic_name() {
    let mut lab = Lab::start().await;
    let hold = |port: &str, queue| pb::SetHoldRequest { port: port.into(), queue, hold: true };
    lab.client.set_hold(hold("Ethernet8", None)).await.expect("port hold");
    lab.client.set_hold(hold("Ethernet8", Some(3))).await.expect("queue hold");
    let status = lab.client.set_hold(hold("Ethernet99", None)).await.unwrap_err();
    assert_eq!(status.code(), Code::NotFound);
    assert_eq!(status.message(), "no port Ethernet99");
    let status = lab.client.set_hold(hold("Ethernet8", Some(8))).await.unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument);
    let storm = |port: &str| pb::SetDebugStormRequest { port: port.into(), queue: 3, enabled: true };
    assert_eq!(lab.client.set_debug_storm(storm("Ethernet99")).await.unwrap_err().code(), Code::NotFound);
    lab.stop().await;
}

#[tokio::test]
async fn fdb_and_neighbour_tables_dump_and_flush() {
    let mut lab = Lab::start().await;
    let neighbors =
        lab.client.dump_neighbors(pb::DumpNeighborsRequest {}).await.unwrap().into_inner().entries;
    let mut seen: Vec<(String, String, String, bool)> =
        neighbors.into_iter().map(|n| (n.ip, n.mac, n.interface, n.is_static)).collect();
    seen.sort();
    let expected = [
        ("10.0.0.3", "02:aa:00:00:00:03", "Ethernet4"),
        ("fc00::1", "02:aa:00:00:00:01", "Ethernet0"),
        ("fc00::3", "02:aa:00:00:00:03", "Ethernet4"),
    ]
    .map(|(ip, mac, rif)| (ip.to_owned(), mac.to_owned(), rif.to_owned(), true));
    assert_eq!(seen, expected);
    // Static entries survive a flush.
    let flushed =
        lab.client.flush_neighbors(pb::FlushNeighborsRequest {}).await.unwrap().into_inner().flushed;
    assert_eq!(flushed, 0);

    assert!(lab.client.dump_fdb(pb::DumpFdbRequest {}).await.unwrap().into_inner().entries.is_empty());
    let flush = |vlan, port: Option<&str>| pb::FlushFdbRequest { vlan, port: port.map(str::to_owned) };
    let flushed = lab.client.flush_fdb(flush(Some(1000), Some("Ethernet8"))).await.unwrap().into_inner();
    assert_eq!(flushed.flushed, 0);
    assert_eq!(
        lab.client.flush_fdb(flush(None, Some("Ethernet99"))).await.unwrap_err().code(),
        Code::NotFound
    );
    assert_eq!(
        lab.client.flush_fdb(flush(Some(5000), None)).await.unwrap_err().code(),
        Code::InvalidArgument
    );
    lab.stop().await;
}

fn next_event(item: pb::SubscribeResponse) -> Option<pb::SwitchEvent> {
    match item.item {
        Some(pb::subscribe_response::Item::Event(e)) => Some(e),
        _ => None,
    }
}

#[tokio::test]
async fn subscribe_streams_config_events_and_counter_snapshots() {
    let mut lab = Lab::start().await;
    let request = pb::SubscribeRequest { counters_interval_ms: 10, events: true };
    let mut stream = lab.client.subscribe(request).await.unwrap().into_inner();
    // The subscription exists once the response has arrived: this apply's event cannot be missed.
    let mut client = lab.client.clone();
    assert_eq!(client.apply(apply_request(&changed_t0())).await.unwrap().into_inner().generation, 2);
    let (mut applied, mut snapshots) = (None, 0);
    while applied.is_none() || snapshots < 2 {
        let item = stream.message().await.expect("stream").expect("the stream stays open");
        match item.item.expect("an item") {
            pb::subscribe_response::Item::Counters(c) => {
                assert_eq!(c.ports.len(), 5);
                snapshots += 1;
            }
            pb::subscribe_response::Item::Event(e) => {
                if e.kind == "config_applied" && e.message.ends_with("generation 2") {
                    applied = Some(e);
                }
            }
        }
    }
    // On CLOCK_MONOTONIC, with the wall-clock time of the same instant.
    let applied = applied.unwrap();
    let ago_ns = lossless_dataplane::clock::monotonic_ns() - applied.timestamp_ns;
    assert!(ago_ns < 10_000_000_000, "{applied:?}");
    let wall_ago_ns = lossless_dataplane::clock::realtime_ns() as i128 - applied.wall_time_unix_ns as i128;
    assert!((wall_ago_ns - ago_ns as i128).abs() < 100_000_000, "{applied:?}: {wall_ago_ns} vs {ago_ns}");
    // Shutting down ends the open stream (the lab's stop would otherwise wait for it).
    let stopping = tokio::spawn(lab.stop());
    while let Ok(Some(_)) = stream.message().await {}
    stopping.await.unwrap();
}

#[tokio::test]
async fn subscribe_needs_something_to_subscribe_to() {
    let mut lab = Lab::start().await;
    let status = lab.client.subscribe(pb::SubscribeRequest { counters_interval_ms: 0, events: false }).await;
    assert_eq!(status.unwrap_err().code(), Code::InvalidArgument);
    lab.stop().await;
}

#[tokio::test]
async fn debug_storm_is_reported_as_sonic_storm_events_and_status() {
    let mut db = t0_db();
    db.set("PFC_WD", "GLOBAL", "POLL_INTERVAL", "100");
    db.set("PFC_WD", "Ethernet8", "action", "drop").set("PFC_WD", "Ethernet8", "detection_time", "100").set(
        "PFC_WD",
        "Ethernet8",
        "restoration_time",
        "100",
    );
    db.set("PORT_QOS_MAP", "Ethernet0,Ethernet4,Ethernet8,Ethernet12,Ethernet16", "pfcwd_sw_enable", "3,4");
    let mut lab = Lab::start_with(db).await;
    let status = |c: &pb::GetCountersResponse, q: usize| c.ports[2].pfc_wd[q].status.clone();
    let counters = lab.client.get_counters(pb::GetCountersRequest {}).await.unwrap().into_inner();
    assert_eq!((status(&counters, 3), status(&counters, 0)), ("operational".into(), String::new()));
    assert_eq!(counters.ports[0].pfc_wd[3].status, "", "Ethernet0 has no PFC_WD entry");

    let request = pb::SubscribeRequest { counters_interval_ms: 0, events: true };
    let mut stream = lab.client.subscribe(request).await.unwrap().into_inner();
    let storm = |enabled| pb::SetDebugStormRequest { port: "Ethernet8".into(), queue: 3, enabled };
    lab.client.set_debug_storm(storm(true)).await.unwrap();
    let detected = loop {
        let e = next_event(stream.message().await.unwrap().unwrap()).expect("events only");
        if e.kind == "pfc_storm_detected" {
            break e;
        }
    };
    assert_eq!((detected.port.as_str(), detected.index), ("Ethernet8", 3));
    assert_eq!(
        detected.message,
        "PFC Watchdog detected PFC storm on port Ethernet8, queue index 3, action drop"
    );
    let counters = lab.client.get_counters(pb::GetCountersRequest {}).await.unwrap().into_inner();
    assert_eq!(status(&counters, 3), "stormed");
    assert_eq!(counters.ports[2].pfc_wd[3].deadlock_detected, 1);

    lab.client.set_debug_storm(storm(false)).await.unwrap();
    let restored = loop {
        let e = next_event(stream.message().await.unwrap().unwrap()).expect("events only");
        if e.kind == "pfc_storm_restored" {
            break e;
        }
    };
    assert_eq!(restored.message, "PFC Watchdog storm restored on port Ethernet8, queue index 3");
    drop(stream);
    lab.stop().await;
}

#[tokio::test]
async fn a_request_over_the_size_limit_is_resource_exhausted() {
    let mut lab = Lab::start().await;
    let mut db = t0_db();
    db.set("PORT", "Ethernet0", "description", "x".repeat(MAX_REQUEST_BYTES + 1));
    let status = lab.client.apply(apply_request(&db)).await.unwrap_err();
    assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
    assert_eq!(lab.generation().await, 1, "the server still serves, unchanged");
    lab.stop().await;
}

#[tokio::test]
async fn health_reports_the_switch_service_serving() {
    use tonic_health::pb::health_check_response::ServingStatus;
    use tonic_health::pb::health_client::HealthClient;
    let lab = Lab::start().await;
    let mut health = HealthClient::new(lab.channel().await);
    for service in ["lossless.v1.Switch", ""] {
        let request = tonic_health::pb::HealthCheckRequest { service: service.into() };
        let response = health.check(request).await.unwrap().into_inner();
        assert_eq!(response.status, ServingStatus::Serving as i32, "{service:?}");
    }
    lab.stop().await;
}

#[tokio::test]
async fn reflection_lists_the_switch_service() {
    use tonic_reflection::pb::v1::server_reflection_client::ServerReflectionClient;
    use tonic_reflection::pb::v1::server_reflection_request::MessageRequest;
    use tonic_reflection::pb::v1::server_reflection_response::MessageResponse;
    use tonic_reflection::pb::v1::{ServerReflectionRequest, ServiceResponse};
    let lab = Lab::start().await;
    let mut reflection = ServerReflectionClient::new(lab.channel().await);
    let request = ServerReflectionRequest {
        host: String::new(),
        message_request: Some(MessageRequest::ListServices(String::new())),
    };
    let mut responses =
        reflection.server_reflection_info(tokio_stream::once(request)).await.unwrap().into_inner();
    let response = responses.message().await.unwrap().expect("a response");
    let Some(MessageResponse::ListServicesResponse(list)) = response.message_response else {
        panic!("unexpected reflection response {response:?}");
    };
    let names: Vec<String> = list.service.into_iter().map(|ServiceResponse { name }| name).collect();
    assert!(names.contains(&"lossless.v1.Switch".to_owned()), "{names:?}");
    assert!(names.contains(&"grpc.health.v1.Health".to_owned()), "{names:?}");
    drop(responses);
    lab.stop().await;
}

#[tokio::test]
async fn a_stale_socket_is_replaced_and_a_foreign_file_is_refused() {
    let lab = Lab::start().await;
    let endpoint = lab.endpoint();
    let socket = lab.socket.clone();
    lab.stop().await;

    // A socket file nobody listens on (a crashed switchd's) is replaced.
    std::fs::create_dir_all(socket.parent().unwrap()).unwrap();
    drop(std::os::unix::net::UnixListener::bind(&socket).unwrap());
    assert!(socket.exists());
    let db = t0_db();
    let mut switch = Switch::new();
    switch.apply(&db, Instant::ZERO).unwrap();
    let (runtime, handle) = Runtime::new(switch, db, vec![None, None, None, None, None]).unwrap();
    let runtime = std::thread::spawn(move || runtime.run());
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(server::serve(handle.clone(), options(&socket), async {
        let _ = rx.await;
    }));
    let mut client = connect_when_listening(&socket, &server).await;
    assert_eq!(client.get(pb::GetRequest {}).await.unwrap().into_inner().generation, 1);

    // A second server on the same live socket is refused, and leaves the first one's socket alone.
    let second = server::serve(handle.clone(), options(&socket), async {}).await;
    assert!(format!("{:#}", second.unwrap_err()).contains("another server is listening"));
    assert!(server::connect(&endpoint).await.is_ok());

    tx.send(()).unwrap();
    server.await.unwrap().unwrap();
    assert!(!socket.exists());

    // Anything that is not a socket is never removed.
    std::fs::write(&socket, b"not a socket").unwrap();
    let refused = server::serve(handle.clone(), options(&socket), async {}).await;
    assert!(format!("{:#}", refused.unwrap_err()).contains("is not a socket"));
    assert_eq!(std::fs::read(&socket).unwrap(), b"not a socket");
    std::fs::remove_file(&socket).unwrap();
    std::fs::remove_dir(socket.parent().unwrap()).unwrap();

    handle.stop();
    tokio::task::spawn_blocking(move || runtime.join()).await.unwrap().unwrap().unwrap();
}

#[tokio::test]
async fn connect_reports_a_missing_server_and_bad_endpoints() {
    let missing = unique_socket();
    let e = server::connect(&format!("unix:{}", missing.display())).await.unwrap_err();
    assert!(format!("{e:#}").contains("connecting to unix:"), "{e:#}");
    assert!(server::connect("http://127.0.0.1:1").await.is_err());
    assert!(server::connect("unix:").await.is_err());
}

mod hardening;
