//! The API's guards: requests without a config, removals without replace, malformed requests, Subscribe
//! limits, the socket's mode and group, TLS, and a large apply kept off the model thread.

use super::*;

#[tokio::test]
async fn an_apply_without_a_config_is_invalid_argument_and_changes_nothing() {
    let mut lab = Lab::start().await;
    let request = pb::ApplyRequest { config: None, ..apply_request(&t0_db()) };
    let status = lab.client.apply(request).await.unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
    assert_eq!(field_violations(&status)[0].0, "config");
    let status = lab.client.validate(pb::ValidateRequest { config: None }).await.unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
    let got = lab.client.get(pb::GetRequest {}).await.unwrap().into_inner();
    assert_eq!(got.generation, 1);
    assert_eq!(config_db_from_proto(got.config.unwrap()), t0_db());
    lab.stop().await;
}

#[tokio::test]
async fn removing_ports_or_profiles_needs_replace() {
    use tonic_types::StatusExt;
    // T0 and a sixth port, which the second push leaves out.
    let mut six = t0_db();
    six.set("PORT", "Ethernet20", "speed", "100000");
    let mut lab = Lab::start_with(six).await;
    for empty in [true, false] {
        let db = if empty { ConfigDb::default() } else { t0_db() };
        let status = lab.client.apply(apply_request(&db)).await.unwrap_err();
        assert_eq!(status.code(), Code::FailedPrecondition, "{status:?}");
        assert!(status.message().contains("--replace"), "{}", status.message());
        let details = status.get_error_details();
        let subjects: Vec<&str> =
            details.precondition_failure().unwrap().violations.iter().map(|v| v.subject.as_str()).collect();
        assert!(subjects.contains(&"PORT|Ethernet20"), "{subjects:?}");
        if empty {
            assert!(subjects.contains(&"PORT|Ethernet0"), "{subjects:?}");
            assert!(subjects.contains(&"VLAN_INTERFACE|Vlan1000"), "{subjects:?}");
        }
        assert_eq!(lab.generation().await, 1, "nothing applied");
        if !empty {
            let replace = pb::ApplyRequest { replace: true, ..apply_request(&db) };
            let response = lab.client.apply(replace).await.expect("applies with replace").into_inner();
            assert_eq!(response.generation, 2);
            let counters = lab.client.get_counters(pb::GetCountersRequest {}).await.unwrap().into_inner();
            assert_eq!(counters.ports.len(), 5, "Ethernet20 is gone");
        }
    }
    lab.stop().await;
}

/// Sends arbitrary bytes as the request message of a unary method.
#[derive(Clone, Default)]
struct RawCodec;

impl tonic::codec::Codec for RawCodec {
    type Encode = Vec<u8>;
    type Decode = Vec<u8>;
    type Encoder = RawCodec;
    type Decoder = RawCodec;
    fn encoder(&mut self) -> RawCodec {
        RawCodec
    }
    fn decoder(&mut self) -> RawCodec {
        RawCodec
    }
}

impl tonic::codec::Encoder for RawCodec {
    type Item = Vec<u8>;
    type Error = tonic::Status;
    fn encode(&mut self, item: Vec<u8>, dst: &mut tonic::codec::EncodeBuf<'_>) -> Result<(), tonic::Status> {
        use bytes_buf::BufMut;
        dst.put_slice(&item);
        Ok(())
    }
}

impl tonic::codec::Decoder for RawCodec {
    type Item = Vec<u8>;
    type Error = tonic::Status;
    fn decode(&mut self, src: &mut tonic::codec::DecodeBuf<'_>) -> Result<Option<Vec<u8>>, tonic::Status> {
        use bytes_buf::Buf;
        let mut out = vec![0; src.remaining()];
        src.copy_to_slice(&mut out);
        Ok(Some(out))
    }
}

mod bytes_buf {
    pub use tonic::codec::{DecodeBuf, EncodeBuf};
    pub trait BufMut {
        fn put_slice(&mut self, src: &[u8]);
    }
    impl BufMut for EncodeBuf<'_> {
        fn put_slice(&mut self, src: &[u8]) {
            prost::bytes::BufMut::put_slice(self, src)
        }
    }
    pub trait Buf {
        fn remaining(&self) -> usize;
        fn copy_to_slice(&mut self, dst: &mut [u8]);
    }
    impl Buf for DecodeBuf<'_> {
        fn remaining(&self) -> usize {
            prost::bytes::Buf::remaining(self)
        }
        fn copy_to_slice(&mut self, dst: &mut [u8]) {
            prost::bytes::Buf::copy_to_slice(self, dst)
        }
    }
}

#[tokio::test]
async fn a_malformed_request_is_invalid_argument() {
    let mut lab = Lab::start().await;
    let mut grpc = tonic::client::Grpc::new(lab.channel().await);
    // Field 1 (config), length-delimited, claiming 100 bytes that are not there.
    let garbage = vec![0x0a, 100, 1, 2, 3];
    grpc.ready().await.unwrap();
    let path = tonic::codegen::http::uri::PathAndQuery::from_static("/lossless.v1.Switch/Apply");
    let status = grpc.unary(tonic::Request::new(garbage), path, RawCodec).await.unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
    assert!(status.message().contains("malformed request"), "{}", status.message());
    assert_eq!(lab.generation().await, 1, "the server still serves, unchanged");
    lab.stop().await;
}

fn subscribe_counters(every_ms: u32) -> pb::SubscribeRequest {
    pb::SubscribeRequest { events: false, counters_interval_ms: every_ms }
}

#[tokio::test]
async fn subscribe_streams_are_capped_and_a_closed_one_frees_its_slot() {
    let mut lab = Lab::start_limited(server::Limits { max_streams: 2, ..server::Limits::default() }).await;
    let mut open = Vec::new();
    for _ in 0..2 {
        let mut stream = lab.client.subscribe(subscribe_counters(10)).await.unwrap().into_inner();
        stream.message().await.unwrap().expect("a counters snapshot");
        open.push(stream);
    }
    let status = lab.client.subscribe(subscribe_counters(10)).await.unwrap_err();
    assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
    assert!(status.message().contains("--grpc-max-streams"), "{}", status.message());
    drop(open.pop());
    // The stream's task sees its client gone and frees the slot: a new stream gets in.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        match lab.client.subscribe(subscribe_counters(10)).await {
            Ok(_) => break,
            Err(s) if s.code() == Code::ResourceExhausted && std::time::Instant::now() < deadline => {
                tokio::time::sleep(std::time::Duration::from_millis(10)).await
            }
            Err(s) => panic!("the slot was not freed: {s:?}"),
        }
    }
    drop(open);
    lab.stop().await;
}

#[tokio::test]
async fn a_client_that_stops_reading_is_ended_not_buffered() {
    let limits = server::Limits {
        max_streams: 4,
        stream_buffer: 2,
        stall_timeout: std::time::Duration::from_millis(500),
    };
    let lab = Lab::start_limited(limits).await;
    // A small HTTP/2 window: the client stops taking data as soon as it stops reading.
    let endpoint = tonic::transport::Endpoint::from_static("http://localhost")
        .initial_stream_window_size(Some(4096))
        .initial_connection_window_size(Some(4096));
    let channel = lab.channel_on(endpoint).await;
    let mut client = SwitchClient::new(channel);
    let mut stream = client.subscribe(subscribe_counters(10)).await.unwrap().into_inner();
    // Read nothing for long enough that everything between the server and this client fills up and the
    // stall timeout runs out several times over.
    tokio::time::sleep(std::time::Duration::from_secs(5)).await;
    let mut delivered = 0;
    let status = loop {
        match stream.message().await {
            Ok(Some(_)) => delivered += 1,
            Ok(None) => panic!("the stream ended without a status after {delivered} messages"),
            Err(status) => break status,
        }
    };
    assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
    assert!(status.message().contains("read nothing"), "{}", status.message());
    // 5 s at 10 ms would be 500 snapshots: what was held back is bounded by the windows and the buffer.
    assert!(delivered < 100, "{delivered} snapshots were buffered for a client that did not read");
    lab.stop().await;
}

#[tokio::test]
async fn the_socket_gets_its_mode_and_group_whatever_the_umask() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let socket = unique_socket();
    std::fs::create_dir_all(socket.parent().unwrap()).unwrap();
    let db = t0_db();
    let mut switch = Switch::new();
    switch.apply(&db, Instant::ZERO).unwrap();
    let (runtime, handle) = Runtime::new(switch, db, (0..5).map(|_| None).collect()).unwrap();
    let runtime = std::thread::spawn(move || runtime.run());
    let mut opts = options(&socket);
    opts.socket_mode = 0o640;
    opts.socket_group = Some("0".into());
    // SAFETY (of the test): umask is process-wide; 0 is the worst case the mode must not depend on.
    #[allow(unsafe_code)]
    let old = unsafe { libc_umask(0) };
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(server::serve(handle.clone(), opts, async {
        let _ = rx.await;
    }));
    let _client = connect_when_listening(&socket, &server).await;
    #[allow(unsafe_code)]
    unsafe {
        libc_umask(old)
    };
    let m = std::fs::metadata(&socket).unwrap();
    assert_eq!(m.permissions().mode() & 0o777, 0o640);
    assert_eq!(m.gid(), 0);
    tx.send(()).unwrap();
    server.await.unwrap().unwrap();

    // A socket in a directory that does not exist: refused, nothing created.
    let nowhere = socket.parent().unwrap().join("missing").join("x.sock");
    let mut opts = options(&nowhere);
    opts.create_parent = false;
    let e = server::serve(handle.clone(), opts, async {}).await.unwrap_err();
    assert!(format!("{e:#}").contains("does not exist"), "{e:#}");
    assert!(!nowhere.parent().unwrap().exists());
    std::fs::remove_dir(socket.parent().unwrap()).unwrap();
    handle.stop();
    tokio::task::spawn_blocking(move || runtime.join()).await.unwrap().unwrap().unwrap();
}

unsafe extern "C" {
    #[link_name = "umask"]
    fn libc_umask(mask: u32) -> u32;
}

#[tokio::test]
async fn remote_tcp_needs_tls_and_tls_needs_a_client_certificate() {
    let db = t0_db();
    let mut switch = Switch::new();
    switch.apply(&db, Instant::ZERO).unwrap();
    let (runtime, handle) = Runtime::new(switch, db, (0..5).map(|_| None).collect()).unwrap();
    let runtime = std::thread::spawn(move || runtime.run());

    // A non-loopback address without TLS is refused before anything is bound.
    let remote = ServeOptions::new(Listen::Tcp("192.0.2.1:50051".parse().unwrap()));
    let e = server::serve(handle.clone(), remote, async {}).await.unwrap_err();
    for flag in ["--grpc-tls-cert", "--grpc-tls-key", "--grpc-tls-client-ca"] {
        assert!(format!("{e:#}").contains(flag), "{e:#}");
    }

    // A CA, a server certificate for 127.0.0.1 and a client certificate, all signed by it; and a client
    // certificate from another CA.
    let dir = unique_socket().parent().unwrap().to_owned();
    std::fs::create_dir_all(&dir).unwrap();
    let pki = Pki::new(&dir);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let mut opts = ServeOptions::new(Listen::Tcp(addr));
    opts.tls = Some(server::TlsFiles {
        cert: pki.server_cert.clone(),
        key: pki.server_key.clone(),
        client_ca: pki.ca.clone(),
    });
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(server::serve(handle.clone(), opts, async {
        let _ = rx.await;
    }));
    let endpoint = format!("tcp:{addr}");
    let tls = |cert: &Path, key: &Path| server::ClientTls {
        ca: pki.ca.clone(),
        cert: cert.to_owned(),
        key: key.to_owned(),
        domain: Some("localhost".into()),
    };
    let good = tls(&pki.client_cert, &pki.client_key);
    let mut client = loop {
        match server::connect_with(&endpoint, Some(&good)).await {
            Ok(client) => break client,
            Err(_) if !server.is_finished() => tokio::task::yield_now().await,
            Err(e) => panic!("the TLS server ended: {e:#}"),
        }
    };
    assert_eq!(client.get(pb::GetRequest {}).await.unwrap().into_inner().generation, 1);

    // Plaintext, and a certificate from another CA, are refused.
    let plain = server::connect(&endpoint).await;
    let refused_plain = match plain {
        Err(_) => true,
        Ok(mut c) => c.get(pb::GetRequest {}).await.is_err(),
    };
    assert!(refused_plain, "a plaintext client got in");
    let foreign = tls(&pki.foreign_cert, &pki.foreign_key);
    let refused_foreign = match server::connect_with(&endpoint, Some(&foreign)).await {
        Err(_) => true,
        Ok(mut c) => c.get(pb::GetRequest {}).await.is_err(),
    };
    assert!(refused_foreign, "a client certificate from another CA got in");

    tx.send(()).unwrap();
    server.await.unwrap().unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    handle.stop();
    tokio::task::spawn_blocking(move || runtime.join()).await.unwrap().unwrap().unwrap();
}

/// PEM files for the TLS test.
struct Pki {
    ca: PathBuf,
    server_cert: PathBuf,
    server_key: PathBuf,
    client_cert: PathBuf,
    client_key: PathBuf,
    foreign_cert: PathBuf,
    foreign_key: PathBuf,
}

impl Pki {
    fn new(dir: &Path) -> Pki {
        use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
        let write = |name: &str, pem: String| {
            let path = dir.join(name);
            std::fs::write(&path, pem).unwrap();
            path
        };
        let ca_key = KeyPair::generate().unwrap();
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca_cert = ca_params.self_signed(&ca_key).unwrap();
        let ca = Issuer::new(ca_params, ca_key);
        let leaf = |names: Vec<String>, issuer: &Issuer<'_, KeyPair>| {
            let key = KeyPair::generate().unwrap();
            let cert = CertificateParams::new(names).unwrap().signed_by(&key, issuer).unwrap();
            (cert.pem(), key.serialize_pem())
        };
        let (server_cert, server_key) = leaf(vec!["localhost".into(), "127.0.0.1".into()], &ca);
        let (client_cert, client_key) = leaf(vec!["operator".into()], &ca);
        let other_key = KeyPair::generate().unwrap();
        let mut other_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        other_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let other = Issuer::new(other_params, other_key);
        let (foreign_cert, foreign_key) = leaf(vec!["intruder".into()], &other);
        Pki {
            ca: write("ca.pem", ca_cert.pem()),
            server_cert: write("server.pem", server_cert),
            server_key: write("server.key", server_key),
            client_cert: write("client.pem", client_cert),
            client_key: write("client.key", client_key),
            foreign_cert: write("foreign.pem", foreign_cert),
            foreign_key: write("foreign.key", foreign_key),
        }
    }
}

/// T0 with `n` more static routes (distinct /32s in 100.64.0.0/10 via the T0's next hops).
fn t0_with_routes(n: u32) -> ConfigDb {
    let mut db = t0_db();
    let routes = db.tables.entry("STATIC_ROUTE".into()).or_default();
    for i in 0..n {
        let ip = std::net::Ipv4Addr::from(0x6440_0000u32 + i);
        let mut fields = std::collections::BTreeMap::new();
        fields.insert("nexthop".to_owned(), "10.0.0.1,10.0.0.3".to_owned());
        routes.insert(format!("{ip}/32"), fields);
    }
    db
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_100k_route_apply_runs_off_the_model_thread() {
    let mut lab = Lab::start_configured(t0_db(), |o| o.max_request_bytes = 64 << 20).await;
    let db = t0_with_routes(100_000);
    lab.handle.stalls().reset();
    let mut client = lab.client.clone();
    let apply_started = std::time::Instant::now();
    let apply = tokio::spawn(async move { client.apply(apply_request(&db)).await });
    // While it is validated and compiled, the model thread keeps answering: fresh snapshots come quickly.
    let mut reader = SwitchClient::new(lab.channel().await);
    let mut slowest = std::time::Duration::ZERO;
    let mut asked = 0;
    while !apply.is_finished() {
        let started = std::time::Instant::now();
        reader.get_counters(pb::GetCountersRequest {}).await.unwrap();
        slowest = slowest.max(started.elapsed());
        asked += 1;
    }
    let response = apply.await.unwrap().expect("the 100k-route configuration applies").into_inner();
    let apply_took = apply_started.elapsed();
    assert_eq!(response.generation, 2);
    let (command_ns, snapshot_ns) = lab.handle.stalls().longest();
    eprintln!(
        "{asked} reads, slowest {slowest:?}; model thread: command {command_ns} ns, snapshot {snapshot_ns} ns"
    );
    assert!(asked > 10, "the apply was too quick to observe ({asked} reads)");
    // Compiling 100k routes takes seconds in a debug build; run on the model thread, a read would wait about
    // that long. Decoding the 5 MB request still takes a gRPC worker for a while, and a loaded machine
    // stretches everything: the bound is relative to the apply.
    assert!(slowest * 3 < apply_took, "a read waited {slowest:?} during an apply of {apply_took:?}");
    // The swap is all the model thread does for an apply, whatever the configuration's size.
    assert!(command_ns < 1_000_000, "the model thread stalled {command_ns} ns in a command");
    // A snapshot costs in ports, not in configuration size; thousands were taken during the apply, and a
    // busy allocator (the compile runs beside them) makes the slowest one vary.
    assert!(snapshot_ns < 5_000_000, "the model thread stalled {snapshot_ns} ns taking a snapshot");
    assert_eq!(lab.generation().await, 2);
    lab.stop().await;
}
