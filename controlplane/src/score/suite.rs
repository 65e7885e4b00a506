//! The traffic suite of `swctl score`: fixed cases, versioned ([`SUITE_VERSION`]), each turned into a
//! simulator scenario on the fabric ([`Base`]) and a plan of what to measure where ([`Plan`]).
//!
//! Hosts are placed by the switch they hang off: a case's receiver is the first host, and its senders are
//! taken from the other switches first (round robin), so that traffic crosses the fabric and PFC spreads
//! over more than one hop, as it does in production. What each case is for, and which targets apply to it,
//! is in `docs/score.md`.

use crate::lab::scenario::{Action, ActionKind, RxStuck, Scenario, Storm};
use crate::lab::topology::{End, Flow, Topology};
use anyhow::{Context, bail};
use lossless_dataplane::model::config::{ConfigDb, RifKind, RouterInterface, SwitchConfig};
use lossless_dataplane::nic::RxPipelineConfig;
use serde::Serialize;

/// Changes whenever a case, its sizes or a metric's definition change: scores of different versions are
/// not comparable.
pub const SUITE_VERSION: &str = "2";

/// Messages of bulk flows: 64 KiB (16 packets at the hosts' 4200-byte MTU).
const BULK_MESSAGE_BYTES: u64 = 65_536;

/// The warm-up before a case's steady-state window: DCQCN takes an 8:1 100G incast over from PFC within
/// ~10 ms (docs/scenarios.md, "DCQCN at 100G": with UCloud's ECN, no sender is paused and no PFC frame
/// is sent from 10 to 50 ms).
pub const WARM_UP_MS: u64 = 10;

/// The quick suite's warm-up (CI, debug build: 1-2 ms cases).
const QUICK_WARM_UP_US: u64 = 500;

/// The steady-state PFC rate's bucket: 1 ms, so that one frame in a bucket reads 1,000 frames/s.
pub const PFC_BUCKET_NS: u64 = 1_000_000;

/// The NICs' notification point as NVIDIA ships it (ConnectX firmware: no per-QP CNP interval, at most
/// one CNP from the port per 4 µs, NVConfig `MIN_TIME_BETWEEN_CNPS`; docs/nic.md), as
/// configs/scenarios/dcqcn-100g-ucloud.yaml runs it. The model's default is the DCQCN paper's 50 µs per
/// QP, which leaves senders paused far longer than deployed NICs do.
pub const NVIDIA_NP: [(&str, &str); 2] = [("cnp_interval_ns", "0"), ("min_time_between_cnps_ns", "4000")];

/// A traffic class of the profile: its PFC priority and a DSCP that maps to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Class {
    pub priority: u8,
    pub dscp: u8,
}

/// A host and the switch port it hangs off.
#[derive(Debug, Clone)]
pub struct Place {
    pub host: String,
    pub switch: String,
    pub port: String,
}

/// The fabric every case runs on, without traffic.
#[derive(Debug, Clone)]
pub struct Base {
    pub topology: Topology,
    /// Hosts in the order cases take them.
    pub hosts: Vec<Place>,
    pub lossless: Class,
    pub lossy: Class,
    /// The hosts' line rate.
    pub line_rate_mbps: u32,
    /// The PFC watchdog of the first host-facing port: (detection, poll interval), ms.
    pub watchdog_ms: Option<(u32, u32)>,
}

impl Base {
    /// Places the hosts and finds the classes from the first host's switch port.
    pub fn new(topology: Topology) -> anyhow::Result<Base> {
        let mut by_switch: Vec<(String, Vec<Place>)> = Vec::new();
        for h in &topology.hosts {
            let Some(end) = &h.attached else { continue };
            let place = Place { host: h.name.clone(), switch: end.node.clone(), port: end.port.clone() };
            match by_switch.iter_mut().find(|(s, _)| *s == end.node) {
                Some((_, v)) => v.push(place),
                None => by_switch.push((end.node.clone(), vec![place])),
            }
        }
        // The first host of each switch, then the second of each, ...: cases that take the first n hosts
        // spread them over the fabric.
        let mut hosts = Vec::new();
        let deepest = by_switch.iter().map(|(_, v)| v.len()).max().unwrap_or(0);
        for i in 0..deepest {
            hosts.extend(by_switch.iter().filter_map(|(_, v)| v.get(i).cloned()));
        }
        let first = hosts.first().context("the fabric has no host attached to a switch")?;
        let switch = topology.switch(&first.switch).expect("attached to a switch of the topology");
        let config = &switch.compiled;
        let index = config
            .ports
            .iter()
            .position(|p| p.name == first.port)
            .with_context(|| format!("{}: no port {}", first.switch, first.port))?;
        let qos = &config.qos[index];
        let lossless_priority = (0..8u8).find(|p| qos.pfc_enable & (1 << p) != 0).with_context(|| {
            format!("{} {}: no PFC-enabled priority (PORT_QOS_MAP pfc_enable)", first.switch, first.port)
        })?;
        let dscp_to_tc = qos.dscp_to_tc.unwrap_or([0; 64]);
        // A DSCP whose TC is the lossless priority (the convention of every shipped profile: TC = PFC
        // priority); the lossy class: DSCP 0 if its TC is not lossless, else the first DSCP that is not.
        let lossless_dscp =
            (0..64u8).find(|&d| dscp_to_tc[usize::from(d)] == lossless_priority).with_context(|| {
                format!("{}: no DSCP maps to the lossless TC {lossless_priority}", first.switch)
            })?;
        let lossy_dscp = (0..64u8)
            .find(|&d| qos.pfc_enable & (1 << dscp_to_tc[usize::from(d)]) == 0)
            .context("every DSCP maps to a lossless TC: no lossy class to test")?;
        let lossy_tc = dscp_to_tc[usize::from(lossy_dscp)];
        let watchdog_ms = config
            .pfc_wd
            .get(index)
            .copied()
            .flatten()
            .map(|wd| (wd.detection_time_ms, config.pfc_wd_global.poll_interval_ms));
        let line_rate_mbps = topology.hosts.first().map_or(0, |h| h.line_rate_mbps);
        Ok(Base {
            topology,
            hosts,
            lossless: Class { priority: lossless_priority, dscp: lossless_dscp },
            lossy: Class { priority: lossy_tc, dscp: lossy_dscp },
            line_rate_mbps,
            watchdog_ms,
        })
    }
}

/// The cases of the suite.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum Kind {
    /// `senders`:1 lossless incast at line rate.
    Incast { senders: usize },
    /// Every one of `hosts` hosts sends to every other.
    Shuffle { hosts: usize },
    /// Clients write large messages to servers, servers answer many small reads.
    Storage { servers: usize, clients: usize },
    /// Lossless and lossy senders into one receiver.
    Mixed,
    /// A host NIC sends PFC without end (a stuck receive pipeline).
    PfcStorm,
    /// A receiver whose NIC takes data slower than the line.
    SlowReceiver,
    /// An uplink fails under load; ECMP rehashes.
    LinkFailure,
}

/// One case of the suite and its virtual durations.
#[derive(Debug, Clone, Serialize)]
pub struct Case {
    pub name: String,
    #[serde(flatten)]
    pub kind: Kind,
    /// Traffic runs this long (ms after the hosts are up).
    pub traffic_ms: u64,
    /// The steady-state window starts this long after the hosts are up (µs): the warm-up.
    pub warm_up_us: u64,
}

/// The default suite, or the quick one (`--quick`: fewer, shorter cases for CI in a debug build).
pub fn cases(quick: bool) -> Vec<Case> {
    let warm_up_us = if quick { QUICK_WARM_UP_US } else { WARM_UP_MS * 1000 };
    let case = |name: &str, kind, traffic_ms| Case { name: name.to_owned(), kind, traffic_ms, warm_up_us };
    if quick {
        return vec![
            case("incast-4", Kind::Incast { senders: 4 }, 1),
            case("mixed-classes", Kind::Mixed, 1),
            case("link-failure", Kind::LinkFailure, 2),
        ];
    }
    vec![
        case("incast-2", Kind::Incast { senders: 2 }, 30),
        case("incast-8", Kind::Incast { senders: 8 }, 30),
        case("incast-32", Kind::Incast { senders: 32 }, 30),
        case("shuffle-8", Kind::Shuffle { hosts: 8 }, 15),
        case("storage", Kind::Storage { servers: 4, clients: 8 }, 30),
        case("mixed-classes", Kind::Mixed, 30),
        case("pfc-storm", Kind::PfcStorm, 0),
        case("slow-receiver", Kind::SlowReceiver, 30),
        case("link-failure", Kind::LinkFailure, 30),
    ]
}

/// Which of the UCloud targets a case can be held to, and why not where it cannot.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Applies {
    pub throughput: bool,
    pub pfc: bool,
    pub latency: bool,
    /// Why a target does not apply (empty when all do).
    pub note: String,
}

/// A case made concrete on a fabric: the scenario and what to measure.
#[derive(Debug, Clone)]
pub struct Plan {
    pub case: Case,
    pub description: String,
    pub scenario: Scenario,
    /// Switch ports whose transmit rate is the case's throughput: the bottleneck ports towards receivers.
    pub measured_ports: Vec<End>,
    /// The steady-state window, ns after the origin: from the warm-up's end (DCQCN's transient) to the
    /// traffic's end; the storm's is the whole run.
    pub window_ns: (u64, u64),
    /// Flows whose one-way latency is held to the latency target (the rest is reported, not scored).
    pub latency_flows: Vec<usize>,
    /// Time-series and PFC bucket resolution.
    pub resolution_ns: u64,
    /// Run end, ns after the origin.
    pub until_ns: u64,
    pub applies: Applies,
    /// Flow indices of the senders whose share of an incast is compared (fairness).
    pub incast_flows: Vec<usize>,
    /// Switch ports the case takes down (their drops are the failure's, not the buffers').
    pub failed_ports: Vec<End>,
}

fn flow(from: &Place, to: &Place, class: Class, rate_mbps: Option<u32>, message_bytes: u64) -> Flow {
    Flow {
        from: from.host.clone(),
        to: to.host.clone(),
        priority: class.priority,
        dscp: class.dscp,
        rate_mbps,
        message_bytes,
        messages: None,
        dcqcn: true,
        start_ms: 0,
    }
}

fn end(place: &Place) -> End {
    End { node: place.switch.clone(), port: place.port.clone() }
}

/// The case on the fabric; an error when the fabric has too few hosts for it.
pub fn plan(base: &Base, case: &Case) -> anyhow::Result<Plan> {
    let hosts = &base.hosts;
    let need = |n: usize| -> anyhow::Result<()> {
        if hosts.len() < n {
            bail!("case {}: needs {n} hosts, the fabric has {}", case.name, hosts.len());
        }
        Ok(())
    };
    let mut topology = base.topology.clone();
    let (lossless, lossy) = (base.lossless, base.lossy);
    let line = base.line_rate_mbps;
    let mut traffic_ms = case.traffic_ms;
    let mut storms = Vec::new();
    let mut rx_stuck: Vec<RxStuck> = Vec::new();
    let mut actions = Vec::new();
    let mut measured_ports = Vec::new();
    let mut failed_ports = Vec::new();
    let mut incast_flows = Vec::new();
    let mut applies = Applies { throughput: true, pfc: true, latency: true, note: String::new() };
    let mut resolution_ns = 20_000;
    let description;
    let flows: Vec<Flow> = match case.kind {
        Kind::Incast { senders } => {
            need(senders + 1)?;
            description = format!(
                "{senders}:1 lossless incast at line rate into {}; throughput on its switch port",
                hosts[0].host
            );
            measured_ports.push(end(&hosts[0]));
            incast_flows = (0..senders).collect();
            hosts[1..=senders]
                .iter()
                .map(|s| flow(s, &hosts[0], lossless, None, BULK_MESSAGE_BYTES))
                .collect()
        }
        Kind::Shuffle { hosts: n } => {
            need(n)?;
            description = format!("all-to-all among {n} hosts ({} flows), lossless", n * (n - 1));
            measured_ports.extend(hosts[..n].iter().map(end));
            let mut v = Vec::new();
            for a in &hosts[..n] {
                for b in hosts[..n].iter().filter(|b| b.host != a.host) {
                    v.push(flow(a, b, lossless, None, BULK_MESSAGE_BYTES));
                }
            }
            v
        }
        Kind::Storage { servers, clients } => {
            need(servers + clients)?;
            let (srv, cli) = (&hosts[..servers], &hosts[servers..servers + clients]);
            description = format!(
                "storage: {clients} clients write 1 MiB messages to {servers} servers ({}:1 per server), \
                 every server answers every client with 16 KiB reads at {} Gb/s; all lossless",
                clients / servers,
                line / 40 / 1000
            );
            measured_ports.extend(srv.iter().map(end));
            let mut v: Vec<Flow> = cli
                .iter()
                .enumerate()
                .map(|(i, c)| flow(c, &srv[i % servers], lossless, None, 1 << 20))
                .collect();
            for s in srv {
                for c in cli {
                    v.push(flow(s, c, lossless, Some(line / 40), 16 << 10));
                }
            }
            applies.latency = true;
            v
        }
        Kind::Mixed => {
            need(5)?;
            description = format!(
                "4:1 into {}: two lossless senders (priority {}) and two lossy ones (priority {}) at line rate",
                hosts[0].host, lossless.priority, lossy.priority
            );
            measured_ports.push(end(&hosts[0]));
            vec![
                flow(&hosts[1], &hosts[0], lossless, None, BULK_MESSAGE_BYTES),
                flow(&hosts[2], &hosts[0], lossless, None, BULK_MESSAGE_BYTES),
                flow(&hosts[3], &hosts[0], lossy, None, BULK_MESSAGE_BYTES),
                flow(&hosts[4], &hosts[0], lossy, None, BULK_MESSAGE_BYTES),
            ]
        }
        Kind::PfcStorm => {
            // The stormer must share a switch with the victims' receiver: the next host on hosts[0]'s switch.
            let stormer = hosts[1..]
                .iter()
                .find(|h| h.switch == hosts[0].switch)
                .with_context(|| format!("case {}: needs two hosts on {}", case.name, hosts[0].switch))?;
            let senders: Vec<&Place> =
                hosts[1..].iter().filter(|h| h.switch != hosts[0].switch).take(2).collect();
            if senders.len() < 2 {
                bail!("case {}: needs two hosts on other switches than {}", case.name, hosts[0].switch);
            }
            // Long enough for the switch's watchdog to detect (detection + a poll) and act: virtual time
            // is cheap while the fabric is paused.
            let (detect, poll) = base.watchdog_ms.unwrap_or((200, 100));
            traffic_ms = 1 + u64::from(detect) + 2 * u64::from(poll) + 20;
            resolution_ns = 1_000_000;
            description = format!(
                "{} sends PFC on priority {} without end from 1 ms; {} and {} send to it and, innocent, to {} \
                 at {} Gb/s each; the switch's PFC watchdog ({}) should contain it",
                stormer.host,
                lossless.priority,
                senders[0].host,
                senders[1].host,
                hosts[0].host,
                line / 20 / 1000,
                base.watchdog_ms
                    .map_or("none configured".to_owned(), |(d, p)| format!("detection {d} ms, poll {p} ms"))
            );
            storms.push(Storm {
                host: stormer.host.clone(),
                priorities: vec![lossless.priority],
                interval_us: 10,
                start_ms: 1,
                stop_ms: None,
            });
            measured_ports.push(end(&hosts[0]));
            applies = Applies {
                throughput: false,
                pfc: false,
                latency: false,
                note: "a fault case: PFC is the fault, and the flows are rate-limited; its score is zero \
                       lossless loss outside the watchdog's own drops"
                    .into(),
            };
            let rate = Some(line / 20);
            senders
                .iter()
                .flat_map(|s| {
                    [
                        flow(s, stormer, lossless, rate, BULK_MESSAGE_BYTES),
                        flow(s, &hosts[0], lossless, rate, BULK_MESSAGE_BYTES),
                    ]
                })
                .collect()
        }
        Kind::SlowReceiver => {
            need(4)?;
            let slow = &hosts[0];
            // PCIe Gen3 x8 into memory (64 Gb/s) behind a 256 KiB receive buffer, as the slow receiver of
            // "RDMA over Commodity Ethernet at Scale" (docs/scenarios-nic.md): slower than two senders.
            let rate_mbps = (line as u64 * 64 / 100) as u32;
            if let Some(h) = topology.hosts.iter_mut().find(|h| h.name == slow.host) {
                h.rx_pipeline = RxPipelineConfig {
                    buffer_bytes: 262_144,
                    xoff_bytes: 131_072,
                    xon_bytes: 65_536,
                    rate_mbps,
                    ..RxPipelineConfig::default()
                };
            }
            description = format!(
                "{} takes data at {} Gb/s (its NIC's receive pipeline) from two senders at line rate; \
                 {} sends to {} beside them",
                slow.host,
                rate_mbps / 1000,
                hosts[3].host,
                hosts[2].host
            );
            measured_ports.push(end(&hosts[2]));
            applies = Applies {
                throughput: false,
                pfc: false,
                latency: true,
                note: "a fault case: the receiver's NIC is the bottleneck and pauses its switch by design"
                    .into(),
            };
            vec![
                flow(&hosts[1], slow, lossless, None, BULK_MESSAGE_BYTES),
                flow(&hosts[3], slow, lossless, None, BULK_MESSAGE_BYTES),
                flow(&hosts[3], &hosts[2], lossless, Some(line / 10), BULK_MESSAGE_BYTES),
            ]
        }
        Kind::LinkFailure => {
            let (d, f) = link_failure(base, case, &mut actions, &mut measured_ports, &mut failed_ports)?;
            description = d;
            applies = Applies {
                throughput: false,
                pfc: true,
                latency: true,
                note: "throughput after the failure depends on how ECMP hashes the flows over the uplinks \
                       left, not on the profile"
                    .into(),
            };
            f
        }
    };
    // The latency target holds the lossless class (docs/score.md, "Where the latency target applies").
    let latency_flows: Vec<usize> =
        (0..flows.len()).filter(|&i| flows[i].priority == lossless.priority).collect();
    topology.traffic = flows;
    let traffic_ns = traffic_ms * 1_000_000;
    // The storm is scored on the whole run (zero loss only); every other case on its steady state.
    let window_ns = if matches!(case.kind, Kind::PfcStorm) {
        (0, traffic_ns)
    } else {
        let start = (case.warm_up_us * 1000).div_ceil(resolution_ns) * resolution_ns;
        if start >= traffic_ns {
            bail!("case {}: its warm-up ({} µs) is not shorter than its traffic", case.name, case.warm_up_us);
        }
        (start, traffic_ns)
    };
    // NVIDIA's notification point on every NIC whose topology file does not set DCQCN parameters of its own.
    for h in topology.hosts.iter_mut().filter(|h| h.dcqcn_params.is_empty() && h.dcqcn_time_scale == 1) {
        h.dcqcn_params = NVIDIA_NP.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
    }
    // The rest (on other branches Scenario gains fields, such as Pingmesh probes) as a file without them.
    #[allow(clippy::needless_update)]
    let scenario = Scenario {
        name: case.name.clone(),
        topology,
        duration_ms: traffic_ms,
        storms,
        rx_stuck: std::mem::take(&mut rx_stuck),
        actions,
        expect: Vec::new(),
        ..Scenario::default()
    };
    Ok(Plan {
        case: Case { traffic_ms, ..case.clone() },
        description,
        scenario,
        measured_ports,
        window_ns,
        resolution_ns,
        until_ns: traffic_ns + 1_000_000,
        applies,
        incast_flows,
        latency_flows,
        failed_ports,
    })
}

/// Two hosts of one leaf send to two hosts of another at line rate; at 1 ms the first leaf's first uplink
/// fails. Routing converges at once: every other leaf stops sending traffic for the first leaf's hosts over
/// the spine that lost its link to it (a more specific route over the other spines, as BGP's withdrawal
/// would leave), so that only the data plane's reaction is scored.
fn link_failure(
    base: &Base,
    case: &Case,
    actions: &mut Vec<Action>,
    measured_ports: &mut Vec<End>,
    failed_ports: &mut Vec<End>,
) -> anyhow::Result<(String, Vec<Flow>)> {
    let hosts = &base.hosts;
    let a = &hosts[0].switch;
    let src: Vec<&Place> = hosts.iter().filter(|h| h.switch == *a).take(2).collect();
    let Some(b) = hosts.iter().find(|h| h.switch != *a).map(|h| &h.switch) else {
        bail!("case {}: needs hosts on two switches", case.name)
    };
    let dst: Vec<&Place> = hosts.iter().filter(|h| h.switch == *b).take(2).collect();
    if src.len() < 2 || dst.len() < 2 {
        bail!("case {}: needs two hosts on each of {a} and {b}", case.name);
    }
    let topology = &base.topology;
    // The leaf's uplinks: its links to switches, in port order.
    let uplinks: Vec<(&End, &End)> = topology
        .links
        .iter()
        .filter_map(|l| match (&l.a, &l.b) {
            (x, y) if x.node == *a && topology.switch(&y.node).is_some() => Some((x, y)),
            (y, x) if x.node == *a && topology.switch(&y.node).is_some() => Some((x, y)),
            _ => None,
        })
        .collect();
    if uplinks.len() < 2 {
        bail!("case {}: {a} needs two uplinks to fail one ({} found)", case.name, uplinks.len());
    }
    let (failed, spine_end) = uplinks[0];
    failed_ports.extend([failed.clone(), spine_end.clone()]);
    // Half way through: the steady-state window (from the warm-up's end) sees the flows before and after.
    let at_ms = (case.traffic_ms / 2).max(1);
    actions.push(Action {
        at_ms,
        step: "link-failure".into(),
        kind: ActionKind::LinkState { end: failed.clone(), up: false },
    });
    // The other leaves' route to leaf A's hosts, over the spines that still reach it.
    let leaf_a = topology.switch(a).expect("a switch");
    // The subnets of leaf A's hosts (every one of them: the ACKs to them must come back too).
    let prefixes: Vec<String> = leaf_a
        .compiled
        .interfaces
        .iter()
        .filter(|i| {
            hosts.iter().any(|h| h.switch == *a && port_name(&leaf_a.compiled, i) == Some(h.port.as_str()))
        })
        .flat_map(|i| i.addrs.iter().map(|n| n.trunc().to_string()))
        .collect();
    let lost_spine = &spine_end.node;
    for other in topology.switches.iter().filter(|s| s.name != *a && s.name != *lost_spine) {
        let Some(routes) = other.config.tables.get("STATIC_ROUTE") else { continue };
        for (prefix, fields) in routes {
            let Some(hops) = fields.get("nexthop") else { continue };
            let kept: Vec<&str> = hops
                .split(',')
                .map(str::trim)
                .filter(|hop| !next_hop_is_on(topology, other, hop, lost_spine))
                .collect();
            if kept.is_empty() || kept.len() == hops.split(',').count() {
                continue;
            }
            for p in &prefixes {
                if covers(prefix, p) {
                    let mut db = ConfigDb::default();
                    db.set("STATIC_ROUTE", p, "nexthop", kept.join(","));
                    actions.push(Action {
                        at_ms,
                        step: "routing converges".into(),
                        kind: ActionKind::Apply {
                            switch: other.name.clone(),
                            config: db,
                            replace: false,
                            source: format!("route {p} avoiding {lost_spine}"),
                        },
                    });
                }
            }
        }
    }
    measured_ports.extend(dst.iter().map(|d| end(d)));
    let description = format!(
        "{} and {} each send to {} and {} at line rate; at {at_ms} ms the link {failed} -- {spine_end} fails, \
         {a} rehashes over its other uplinks and the other leaves' routes converge at once",
        src[0].host, src[1].host, dst[0].host, dst[1].host
    );
    // Four flows (each sender to each receiver) over the uplinks: some cross the one that fails.
    let flows = src
        .iter()
        .flat_map(|s| dst.iter().map(|d| flow(s, d, base.lossless, None, BULK_MESSAGE_BYTES)))
        .collect();
    Ok((description, flows))
}

/// Whether `hop` (a next-hop address of `switch`) is reached through a port linked to `node`.
fn next_hop_is_on(
    topology: &Topology,
    switch: &crate::lab::topology::SwitchNode,
    hop: &str,
    node: &str,
) -> bool {
    let Ok(ip) = hop.parse::<std::net::IpAddr>() else { return false };
    let config = &switch.compiled;
    let port = config
        .interfaces
        .iter()
        .find(|i| i.addrs.iter().any(|n| n.contains(&ip)))
        .and_then(|i| port_name(config, i));
    let Some(port) = port else { return false };
    topology.links.iter().any(|l| {
        (l.a.node == switch.name && l.a.port == port && l.b.node == node)
            || (l.b.node == switch.name && l.b.port == port && l.a.node == node)
    })
}

/// The port behind a routed interface (none for a VLAN interface).
fn port_name<'a>(config: &'a SwitchConfig, rif: &RouterInterface) -> Option<&'a str> {
    match rif.kind {
        RifKind::Port(p) => Some(config.ports[p.index()].name.as_str()),
        RifKind::Vlan(_) => None,
    }
}

/// Whether the prefix `outer` (`10.1.0.0/16`) contains the prefix `inner`.
pub fn covers(outer: &str, inner: &str) -> bool {
    match (outer.parse::<ipnet::IpNet>(), inner.parse::<ipnet::IpNet>()) {
        (Ok(o), Ok(i)) => o.contains(&i) && o.prefix_len() < i.prefix_len(),
        _ => false,
    }
}
