//! The PTF-like fixture: a real `switchd` in its own network namespace, one test port per switch port in a
//! second namespace (as PTF's host holds `eth0..ethN`), a gRPC client on switchd's socket, and PTF's verbs.
//!
//! ```text
//!   ptf namespace                switch namespace
//!   eth0  ────── veth ──────  p0  = Ethernet0 ┐
//!   eth1  ────── veth ──────  p1  = Ethernet4 ├ switchd --config PROFILE --grpc unix:SOCK
//!   ...                       ...             ┘
//! ```
//!
//! Test port `i` is the `i`-th port of the profile's PORT table in natural order (Ethernet0, Ethernet4, …).
//! Everything is torn down on drop, also while a failed assertion unwinds: switchd gets SIGTERM (then
//! SIGKILL; see `lossless_testkit::Switchd`), the sockets close, both namespaces are deleted (their veths go
//! with them). switchd's log is captured and quoted when it fails to start (`LOSSLESS_PTF_SWITCHD_LOG=1`
//! sends it to stderr instead).
//!
//! Waits: a positive verb (`verify_packet`) returns as soon as the frame arrives and fails after
//! [`Ptf::timeout`]; a negative verb (`verify_no_packet`, `verify_no_other_packets`) watches for
//! [`Ptf::negative_timeout`], long enough for a frame to cross switchd many times over. Sending a burst waits
//! until switchd has counted every frame (its frame ledger), so a test's next step never races its
//! own traffic, and no burst overruns the switch's receive ring.

use crate::packet::{Mask, describe};
use lossless_dataplane::io::PortBackend;
use lossless_dataplane::io::afpacket::AfPacketPort;
use lossless_dataplane::model::config::ConfigDb;
use lossless_dataplane::server;
use lossless_dataplane::wire::EthernetAddress;
use lossless_proto::v1::{self as pb, switch_client::SwitchClient};
use lossless_testkit::netns::{Netns, unique_name};
use lossless_testkit::{Log, Switchd, SwitchdCommand};
use std::collections::VecDeque;
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

/// Frames sent before waiting for switchd to count them: well under its receive ring (thousands of slots).
const BURST: usize = 256;

/// One test port: the PTF end of the veth whose switch end is `switch_port`.
struct TestPort {
    switch_port: String,
    backend: Box<dyn PortBackend>,
    /// Received and not yet matched, oldest first.
    queue: VecDeque<Vec<u8>>,
}

/// A routed destination: frames to `ip` with the router's MAC leave the switch on test port `port`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dest {
    pub port: usize,
    pub ip: Ipv4Addr,
    /// The neighbour's MAC, the routed copy's destination.
    pub mac: EthernetAddress,
    /// The VLAN the copy is tagged with on egress, for a tagged member.
    pub vlan: Option<u16>,
}

/// A fresh switch with test ports; see the module documentation.
pub struct Ptf {
    /// The profile's name, for reports.
    pub profile: String,
    /// The configuration switchd started with (tests compute their expectations from it).
    pub db: ConfigDb,
    /// How long a positive verb waits for its frame.
    pub timeout: Duration,
    /// How long a negative verb watches.
    pub negative_timeout: Duration,
    // Field order is drop order after `Drop::drop` closed the client: sockets, switchd (stopped, its files
    // removed), then the namespaces.
    ports: Vec<TestPort>,
    client: Option<SwitchClient<tonic::transport::Channel>>,
    switchd: Switchd,
    tokio: tokio::runtime::Runtime,
    _ptf_ns: Netns,
    _switch_ns: Netns,
}

/// Receive ring of a test port: room for tens of thousands of frames, so a released queue's whole burst
/// (switchd sends as fast as the kernel takes it) waits in the kernel until the test reads it.
const TEST_PORT_RING_BYTES: usize = 64 << 20;

/// Opens a test port inside `ns`, with the big receive ring.
fn open_test_port(ns: &Netns, interface: &str) -> std::io::Result<Box<dyn PortBackend>> {
    let port = ns.within(|| AfPacketPort::open_for_capture(interface, TEST_PORT_RING_BYTES))?;
    Ok(Box::new(port))
}

impl Ptf {
    /// Starts switchd on `db` with a test port for each of its PORT entries.
    pub fn start(profile: &str, db: ConfigDb) -> Ptf {
        let mut names: Vec<String> =
            db.tables.get("PORT").map(|t| t.keys().cloned().collect()).unwrap_or_default();
        assert!(!names.is_empty(), "{profile}: the configuration has no PORT table");
        names.sort_by(|a, b| lossless_dataplane::text::natural_cmp(a, b));
        let switch_ns = Netns::new(&unique_name("ptfsw")).expect("creating the switch namespace");
        let ptf_ns = Netns::new(&unique_name("ptf")).expect("creating the PTF namespace");
        for i in 0..names.len() {
            ptf_ns.veth(&format!("eth{i}"), &switch_ns, &format!("p{i}")).expect("creating a veth pair");
        }
        let text = serde_json::to_string_pretty(&db).expect("a ConfigDb serialises");
        let mut command = SwitchdCommand::new(lossless_testkit::switchd_binary())
            .netns(&switch_ns)
            .name("ptf")
            .config_text("ptf.json", &text);
        for (i, n) in names.iter().enumerate() {
            command = command.port(n, &format!("p{i}"));
        }
        if std::env::var_os("LOSSLESS_PTF_SWITCHD_LOG").is_some() {
            command = command.log(Log::Inherit);
        }
        let switchd = command.spawn().expect("starting switchd");
        let ports = names
            .iter()
            .enumerate()
            .map(|(i, n)| TestPort {
                switch_port: n.clone(),
                backend: open_test_port(&ptf_ns, &format!("eth{i}")).expect("opening a test port"),
                queue: VecDeque::new(),
            })
            .collect();
        let tokio = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("a tokio runtime");
        let mut ptf = Ptf {
            profile: profile.to_owned(),
            db,
            timeout: Duration::from_secs(3),
            negative_timeout: Duration::from_millis(300),
            ports,
            client: None,
            switchd,
            tokio,
            _ptf_ns: ptf_ns,
            _switch_ns: switch_ns,
        };
        ptf.connect();
        ptf
    }

    /// Waits (bounded) until switchd answers on its socket; fails at once if it exited, quoting its log.
    fn connect(&mut self) {
        match self.tokio.block_on(self.switchd.ready()) {
            Ok(c) => self.client = Some(c),
            Err(e) => panic!("{e:#}"),
        }
    }

    /// Runs one gRPC call on switchd's client.
    pub fn call<T, F, Fut>(&mut self, f: F) -> T
    where
        F: FnOnce(SwitchClient<tonic::transport::Channel>) -> Fut,
        Fut: std::future::Future<Output = Result<tonic::Response<T>, tonic::Status>>,
    {
        let client = self.client.clone().expect("connected");
        match self.tokio.block_on(f(client)) {
            Ok(r) => r.into_inner(),
            Err(status) => panic!("gRPC call failed: {status}"),
        }
    }

    // ---------------------------------------------------------------------------------------- ports

    /// Number of test ports.
    pub fn port_count(&self) -> usize {
        self.ports.len()
    }

    /// The switch port behind test port `i` (`Ethernet0`, …).
    pub fn port_name(&self, i: usize) -> &str {
        &self.ports[i].switch_port
    }

    /// The test port wired to switch port `name`.
    pub fn port_index(&self, name: &str) -> usize {
        self.ports
            .iter()
            .position(|p| p.switch_port == name)
            .unwrap_or_else(|| panic!("no test port on {name}"))
    }

    /// The switch's router MAC (DEVICE_METADATA|localhost|mac).
    pub fn router_mac(&self) -> EthernetAddress {
        let text = self
            .db
            .tables
            .get("DEVICE_METADATA")
            .and_then(|t| t.get("localhost"))
            .and_then(|k| k.get("mac"))
            .expect("DEVICE_METADATA|localhost|mac");
        crate::packet::mac(text)
    }

    /// A routed destination behind test port `port`: its static NEIGH when the port is a routed interface
    /// with one, else a host this call announces on the port's VLAN (an ARP reply to the router, so the
    /// switch learns both the neighbour and the FDB entry; nothing is flooded) and waits to see learnt.
    pub fn destination(&mut self, port: usize) -> Dest {
        let name = self.port_name(port).to_owned();
        let neigh = self.db.tables.get("NEIGH").into_iter().flatten().find_map(|(k, f)| {
            let (p, ip) = k.split_once('|')?;
            let ip: Ipv4Addr = ip.parse().ok()?;
            (p == name).then(|| Dest { port, ip, mac: crate::packet::mac(&f["neigh"]), vlan: None })
        });
        if let Some(d) = neigh {
            return d;
        }
        let member = self.db.tables.get("VLAN_MEMBER").into_iter().flatten().find_map(|(k, f)| {
            let (vlan, p) = k.split_once('|')?;
            (p == name).then(|| (vlan.to_owned(), f.get("tagging_mode").is_some_and(|m| m == "tagged")))
        });
        let (vlan, tagged) = member.unwrap_or_else(|| panic!("{name}: neither a NEIGH nor a VLAN member"));
        let vid: u16 = self.db.tables["VLAN"][&vlan]["vlanid"].parse().expect("vlanid");
        let (gateway, prefix) = self.db.tables["VLAN_INTERFACE"]
            .keys()
            .find_map(|k| {
                let (v, net) = k.split_once('|')?;
                let (ip, len) = net.split_once('/')?;
                (v == vlan).then(|| (ip.parse::<Ipv4Addr>().ok(), len.parse::<u32>().ok()))
            })
            .and_then(|(ip, len)| Some((ip?, len?)))
            .unwrap_or_else(|| panic!("{vlan}: no IPv4 VLAN_INTERFACE"));
        let mask = u32::MAX.checked_shl(32 - prefix).unwrap_or(0);
        let ip = Ipv4Addr::from((u32::from(gateway) & mask) | (100 + port as u32));
        let mac = EthernetAddress([0x02, 0xbb, 0, 0, vid as u8, port as u8]);
        let reply = crate::packet::simple_arp_packet(&crate::packet::Arp {
            eth_dst: self.router_mac(),
            eth_src: mac,
            vlan_vid: tagged.then_some(vid),
            arp_op: 2,
            ip_snd: ip,
            ip_tgt: gateway,
            hw_snd: mac,
            hw_tgt: self.router_mac(),
        });
        self.send_packet(port, &reply);
        let want = ip.to_string();
        let deadline = Instant::now() + self.timeout;
        while !self.neighbors().iter().any(|n| n.ip == want) {
            assert!(Instant::now() < deadline, "the switch did not learn {ip} from an ARP reply on {name}");
            std::thread::sleep(Duration::from_millis(1));
        }
        Dest { port, ip, mac, vlan: tagged.then_some(vid) }
    }

    /// What a routed copy of `sent` (an IPv4 frame) looks like at `dest`: its MAC as destination, the
    /// router's as source, TTL − 1 with the header checksum updated, tagged when `dest` is (PCP ignored).
    pub fn expected_routed(&self, sent: &[u8], dest: &Dest) -> Mask {
        let mut out = Vec::with_capacity(sent.len() + 4);
        out.extend_from_slice(dest.mac.as_bytes());
        out.extend_from_slice(self.router_mac().as_bytes());
        let tag_at = out.len();
        if let Some(vid) = dest.vlan {
            out.extend_from_slice(&[0x81, 0x00]);
            out.extend_from_slice(&vid.to_be_bytes());
        }
        out.extend_from_slice(&sent[12..]);
        let l3 = out.len() - (sent.len() - 14);
        out[l3 + 8] = out[l3 + 8].saturating_sub(1);
        out[l3 + 10..l3 + 12].copy_from_slice(&[0, 0]);
        let ihl = usize::from(out[l3] & 0x0f) * 4;
        let sum = lossless_dataplane::wire::checksum::checksum(&out[l3..l3 + ihl]);
        out[l3 + 10..l3 + 12].copy_from_slice(&sum.to_be_bytes());
        let mask = Mask::new(out);
        if dest.vlan.is_some() { mask.dont_care(tag_at + 2, 1, "vlan.pcp") } else { mask }
    }

    // ---------------------------------------------------------------------------------------- verbs

    /// Sends one frame from test port `port` (PTF's `send_packet`).
    pub fn send_packet(&mut self, port: usize, frame: &[u8]) {
        self.send_packets(port, frame, 1);
    }

    /// Sends `count` copies of `frame` from `port` (PTF's `send_packet(..., count)`), and waits until
    /// switchd has received all of them. The wait reads switchd's switch-wide frame ledger: while another
    /// thread also sends (a PFC storm generator), it may end early; wait on that port's counters instead.
    pub fn send_packets(&mut self, port: usize, frame: &[u8], count: usize) {
        let frames = vec![frame.to_vec(); count.min(BURST)];
        let mut left = count;
        while left > 0 {
            let n = left.min(BURST);
            self.send_burst(port, &frames[..n]);
            left -= n;
        }
    }

    /// Sends `frames` in order from `port`, and waits until switchd has received all of them.
    pub fn send_frames(&mut self, port: usize, frames: &[Vec<u8>]) {
        for chunk in frames.chunks(BURST) {
            self.send_burst(port, chunk);
        }
    }

    fn send_burst(&mut self, port: usize, frames: &[Vec<u8>]) {
        let before = self.received();
        let deadline = Instant::now() + self.timeout;
        let mut sent = 0;
        while sent < frames.len() {
            sent += self.ports[port].backend.send_batch(&frames[sent..]).expect("sending on a test port");
            if sent < frames.len() {
                assert!(
                    Instant::now() < deadline,
                    "test port {port} would not take frames for {:?}",
                    self.timeout
                );
                std::thread::yield_now();
            }
        }
        let want = before + frames.len() as u64;
        self.wait_until(
            &format!("switchd to receive {} frame(s) from test port {port}", frames.len()),
            |c| c.ledger.as_ref().map_or(0, |l| l.received) >= want,
        );
    }

    /// Frames switchd has received in all (its ledger).
    fn received(&mut self) -> u64 {
        self.counters().ledger.map_or(0, |l| l.received)
    }

    fn drain(&mut self, port: usize) {
        let p = &mut self.ports[port];
        let mut batch = Vec::new();
        while p.backend.recv_batch(&mut batch, 64).expect("receiving on a test port") > 0 {
            p.queue.extend(batch.drain(..));
        }
    }

    fn take_match(&mut self, port: usize, expected: &Mask) -> Option<Vec<u8>> {
        self.drain(port);
        let q = &mut self.ports[port].queue;
        let i = q.iter().position(|f| expected.matches(f))?;
        q.remove(i)
    }

    fn pending(&self, port: usize) -> String {
        let q = &self.ports[port].queue;
        if q.is_empty() {
            return "nothing".into();
        }
        let shown: Vec<String> = q.iter().take(5).map(|f| describe(f)).collect();
        format!("{} frame(s): {}{}", q.len(), shown.join(", "), if q.len() > 5 { ", …" } else { "" })
    }

    /// Waits for a frame matching `expected` on `port` and returns it (PTF's `verify_packet`); frames that
    /// do not match stay queued for `verify_no_other_packets`.
    pub fn verify_packet(&mut self, expected: impl Into<Mask>, port: usize) -> Vec<u8> {
        let expected = expected.into();
        let deadline = Instant::now() + self.timeout;
        loop {
            if let Some(f) = self.take_match(port, &expected) {
                return f;
            }
            if Instant::now() >= deadline {
                panic!(
                    "verify_packet: {expected:?} did not arrive on test port {port} ({}) within {:?}; it has {}",
                    self.port_name(port),
                    self.timeout,
                    self.pending(port)
                );
            }
            std::thread::sleep(Duration::from_micros(200));
        }
    }

    /// `expected` on every port of `ports` (PTF's `verify_packets`, without the no-other check).
    pub fn verify_packets(&mut self, expected: impl Into<Mask>, ports: &[usize]) {
        let expected = expected.into();
        for &p in ports {
            self.verify_packet(&expected, p);
        }
    }

    /// Watches `port` for [`Ptf::negative_timeout`]: no frame matching `expected` may arrive
    /// (PTF's `verify_no_packet`).
    pub fn verify_no_packet(&mut self, expected: impl Into<Mask>, port: usize) {
        let expected = expected.into();
        let deadline = Instant::now() + self.negative_timeout;
        loop {
            if let Some(f) = self.take_match(port, &expected) {
                panic!(
                    "verify_no_packet: {} arrived on test port {port} ({}), matching {expected:?}",
                    describe(&f),
                    self.port_name(port)
                );
            }
            if Instant::now() >= deadline {
                return;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Waits for `expected` on any of `ports`; returns the position in `ports` where it arrived (PTF's
    /// `verify_packet_any_port`).
    pub fn verify_packet_any_port(&mut self, expected: impl Into<Mask>, ports: &[usize]) -> usize {
        let expected = expected.into();
        let deadline = Instant::now() + self.timeout;
        loop {
            for (i, &p) in ports.iter().enumerate() {
                if self.take_match(p, &expected).is_some() {
                    return i;
                }
            }
            if Instant::now() >= deadline {
                let seen: Vec<String> =
                    ports.iter().map(|&p| format!("port {p}: {}", self.pending(p))).collect();
                panic!(
                    "verify_packet_any_port: {expected:?} arrived on none of {ports:?} within {:?} ({})",
                    self.timeout,
                    seen.join("; ")
                );
            }
            std::thread::sleep(Duration::from_micros(200));
        }
    }

    /// Watches every port for [`Ptf::negative_timeout`]: nothing may be queued or arrive (PTF's
    /// `verify_no_other_packets`).
    pub fn verify_no_other_packets(&mut self) {
        let deadline = Instant::now() + self.negative_timeout;
        loop {
            for p in 0..self.ports.len() {
                self.drain(p);
                if !self.ports[p].queue.is_empty() {
                    panic!(
                        "verify_no_other_packets: test port {p} ({}) has {}",
                        self.port_name(p),
                        self.pending(p)
                    );
                }
            }
            if Instant::now() >= deadline {
                return;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Counts frames matching `expected` on `port` until `want` arrived or `wait` passed without reaching
    /// it (PTF's `count_matched_packets`, which waits the whole timeout; passing `want` ends it on arrival).
    pub fn count_matched_packets(
        &mut self,
        expected: impl Into<Mask>,
        port: usize,
        want: usize,
        wait: Duration,
    ) -> usize {
        let expected = expected.into();
        let deadline = Instant::now() + wait;
        let mut n = 0;
        loop {
            while self.take_match(port, &expected).is_some() {
                n += 1;
            }
            if n >= want || Instant::now() >= deadline {
                return n;
            }
            std::thread::sleep(Duration::from_micros(200));
        }
    }

    /// Every frame `port` received until `quiet` passed without one (or `max_wait` in all), in order;
    /// queued frames first. For tests that inspect arrival order (WRR) or the marks on a stream.
    pub fn receive_all(&mut self, port: usize, quiet: Duration, max_wait: Duration) -> Vec<Vec<u8>> {
        let start = Instant::now();
        let mut last = Instant::now();
        let mut out: Vec<Vec<u8>> = Vec::new();
        loop {
            self.drain(port);
            if !self.ports[port].queue.is_empty() {
                out.extend(self.ports[port].queue.drain(..));
                last = Instant::now();
            }
            if last.elapsed() >= quiet || start.elapsed() >= max_wait {
                return out;
            }
            std::thread::sleep(Duration::from_micros(200));
        }
    }

    /// Receives on `port` until `n` frames arrived (in order), failing after `wait`.
    pub fn receive_n(&mut self, port: usize, n: usize, wait: Duration) -> Vec<Vec<u8>> {
        let deadline = Instant::now() + wait;
        let mut out = Vec::new();
        loop {
            self.drain(port);
            let q = &mut self.ports[port].queue;
            while out.len() < n {
                match q.pop_front() {
                    Some(f) => out.push(f),
                    None => break,
                }
            }
            if out.len() >= n {
                return out;
            }
            assert!(
                Instant::now() < deadline,
                "receive_n: {} of {n} frame(s) arrived on test port {port} ({}) within {wait:?}",
                out.len(),
                self.port_name(port)
            );
            std::thread::sleep(Duration::from_micros(200));
        }
    }

    /// Drops everything received so far on every port (PTF's `dataplane.flush()`).
    pub fn flush(&mut self) {
        for p in 0..self.ports.len() {
            self.drain(p);
            self.ports[p].queue.clear();
        }
    }

    // ---------------------------------------------------------------------------------------- switch

    /// All of switchd's counters now.
    pub fn counters(&mut self) -> pb::GetCountersResponse {
        self.call(|mut c| async move { c.get_counters(pb::GetCountersRequest {}).await })
    }

    /// One port's counters now.
    pub fn port_counters(&mut self, name: &str) -> pb::PortCounters {
        let c = self.counters();
        c.ports.into_iter().find(|p| p.name == name).unwrap_or_else(|| panic!("switchd has no port {name}"))
    }

    /// Waits until `ok` holds for switchd's counters, failing after [`Ptf::timeout`] with `what`.
    pub fn wait_until(
        &mut self,
        what: &str,
        mut ok: impl FnMut(&pb::GetCountersResponse) -> bool,
    ) -> pb::GetCountersResponse {
        let deadline = Instant::now() + self.timeout;
        loop {
            let c = self.counters();
            if ok(&c) {
                return c;
            }
            assert!(Instant::now() < deadline, "waited {:?} for {what}", self.timeout);
            std::thread::sleep(Duration::from_micros(500));
        }
    }

    /// Watermarks (user copy unless `persistent`), clearing that copy after reading when `clear`.
    pub fn watermarks(&mut self, persistent: bool, clear: bool) -> pb::GetWatermarksResponse {
        self.call(|mut c| async move {
            c.get_watermarks(pb::GetWatermarksRequest { persistent, clear, clear_tables: vec![] }).await
        })
    }

    /// Holds (or releases) the egress of a port or one of its queues: sai_thrift_port_tx_disable/enable.
    pub fn hold(&mut self, port: &str, queue: Option<u8>, hold: bool) {
        let request = pb::SetHoldRequest { port: port.to_owned(), queue: queue.map(u32::from), hold };
        self.call(|mut c| async move { c.set_hold(request).await });
    }

    /// Applies a configuration (whole, replacing the running one), returning switchd's answer; a refused
    /// configuration comes back as `accepted: false` with one issue per field violation.
    pub fn apply(&mut self, db: &ConfigDb) -> pb::ApplyResponse {
        let request = pb::ApplyRequest {
            config: Some(server::config_db_to_proto(db)),
            replace: true,
            ..Default::default()
        };
        let client = self.client.clone().expect("connected");
        let response = match self.tokio.block_on(async move { client.clone().apply(request).await }) {
            Ok(response) => response.into_inner(),
            Err(status) if status.code() == tonic::Code::InvalidArgument => pb::ApplyResponse {
                accepted: false,
                generation: 0,
                issues: server::status_violations(&status)
                    .into_iter()
                    .map(|(location, message)| {
                        let mut parts = location.splitn(3, '|').map(str::to_owned);
                        pb::ConfigIssue {
                            location: Some(pb::ConfigLocation {
                                table: parts.next().unwrap_or_default(),
                                key: parts.next().unwrap_or_default(),
                                field: parts.next().unwrap_or_default(),
                            }),
                            severity: pb::config_issue::Severity::Error as i32,
                            message,
                            ..Default::default()
                        }
                    })
                    .collect(),
            },
            Err(status) => panic!("gRPC call failed: {status}"),
        };
        if response.accepted {
            self.db = db.clone();
        }
        response
    }

    /// Starts or stops the watchdog's fake storm on a queue (`DEBUG_STORM` in SONiC).
    pub fn debug_storm(&mut self, port: &str, queue: u8, enabled: bool) {
        let request = pb::SetDebugStormRequest { port: port.to_owned(), queue: u32::from(queue), enabled };
        self.call(|mut c| async move { c.set_debug_storm(request).await });
    }

    /// Removes FDB entries (all, or one port's): `sonic-clear fdb all`.
    pub fn flush_fdb(&mut self, port: Option<&str>) -> u64 {
        let request = pb::FlushFdbRequest { vlan: None, port: port.map(str::to_owned) };
        self.call(|mut c| async move { c.flush_fdb(request).await }).flushed
    }

    /// The FDB now.
    pub fn fdb(&mut self) -> Vec<pb::FdbEntry> {
        self.call(|mut c| async move { c.dump_fdb(pb::DumpFdbRequest {}).await }).entries
    }

    /// The neighbour table now.
    pub fn neighbors(&mut self) -> Vec<pb::NeighborEntry> {
        self.call(|mut c| async move { c.dump_neighbors(pb::DumpNeighborsRequest {}).await }).entries
    }

    /// Events switchd reports (storm detected/restored, xoff/xon, …) from now on, as a subscription.
    pub fn subscribe_events(&mut self) -> Events {
        let client = self.client.clone().expect("connected");
        let (tx, rx) = std::sync::mpsc::channel();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let task = self.tokio.spawn(async move {
            let mut client = client;
            let request = pb::SubscribeRequest { counters_interval_ms: 0, events: true };
            let stream = client.subscribe(request).await;
            let _ = ready_tx.send(());
            let Ok(stream) = stream else { return };
            let mut stream = stream.into_inner();
            while let Ok(Some(item)) = stream.message().await {
                if let Some(pb::subscribe_response::Item::Event(e)) = item.item
                    && tx.send(e).is_err()
                {
                    return;
                }
            }
        });
        // The subscription exists once switchd answered the call: events after this return are seen.
        let _ = ready_rx.recv_timeout(self.timeout);
        Events { rx, task }
    }
}

/// A stream of switchd's events (see [`Ptf::subscribe_events`]).
pub struct Events {
    rx: std::sync::mpsc::Receiver<pb::SwitchEvent>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Events {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Events {
    /// Waits up to `wait` for an event `matches` accepts; earlier events are skipped.
    pub fn wait_for(
        &self,
        wait: Duration,
        mut matches: impl FnMut(&pb::SwitchEvent) -> bool,
    ) -> Option<pb::SwitchEvent> {
        let deadline = Instant::now() + wait;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(e) if matches(&e) => return Some(e),
                Ok(_) => continue,
                Err(_) => return None,
            }
        }
    }
}

impl Drop for Ptf {
    fn drop(&mut self) {
        // Close the connection first: switchd waits for open connections when it stops.
        self.client = None;
        let _ = self.switchd.stop();
    }
}

/// A PFC storm from a test port, as sonic-mgmt's `pfc_gen.py` on the fanout: XOFF frames for a set of
/// priorities, sent from their own socket on a thread until [`PfcStorm::stop`] (or drop). See
/// [`Ptf::pfc_storm`].
pub struct PfcStorm {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<u64>>,
}

impl PfcStorm {
    /// Stops the storm and returns how many PFC frames it sent.
    pub fn stop(mut self) -> u64 {
        self.halt()
    }

    fn halt(&mut self) -> u64 {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        self.thread.take().map_or(0, |t| t.join().unwrap_or(0))
    }
}

impl Drop for PfcStorm {
    fn drop(&mut self) {
        self.halt();
    }
}

impl Ptf {
    /// Starts a PFC storm from test port `port`: `frame` (e.g. [`crate::packet::simple_pfc_packet`]) every
    /// `interval`, from a socket of its own on a thread, so the test keeps its verbs meanwhile. Keep
    /// `interval` well under the pause the frame asks for at the port's speed (65535 quanta last 1.34 ms
    /// at 25 Gb/s, 335 µs at 100 Gb/s), or the pause lapses between frames. Frames switchd receives from
    /// the storm count in its ledger: while one runs, wait for a test's own frames on port counters.
    pub fn pfc_storm(&mut self, port: usize, frame: Vec<u8>, interval: Duration) -> PfcStorm {
        let mut backend = self._ptf_ns.open_port(&format!("eth{port}")).expect("opening a storm socket");
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut sent = 0u64;
            let frames = [frame];
            let mut next = Instant::now();
            while !flag.load(std::sync::atomic::Ordering::SeqCst) {
                if backend.send_batch(&frames).unwrap_or(0) == 1 {
                    sent += 1;
                }
                next += interval;
                let now = Instant::now();
                if next > now {
                    std::thread::sleep(next - now);
                } else {
                    next = now;
                }
            }
            sent
        });
        PfcStorm { stop, thread: Some(thread) }
    }
}
