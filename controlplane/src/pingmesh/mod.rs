//! Pingmesh over the fabric (docs/pingmesh.md): every host probes every other at a set interval with the
//! NIC's RDMA probes (`lossless_core::nic::probe`), and the per-pair RTT percentiles form a latency matrix,
//! as Microsoft's Pingmesh ("Pingmesh: A Large-Scale System for Data Center Network Latency Measurement
//! and Analysis", SIGCOMM 2015) and its RDMA variant ("RDMA over Commodity Ethernet at Scale", SIGCOMM
//! 2016) did.
//!
//! The same code serves `swctl sim run` (a scenario's `pingmesh:`) and `swctl lab pingmesh`: both end with
//! one rocehost [`Report`] per host, whose `probes` hold what each host measured towards each peer. Here:
//! the scenario option ([`PingmeshSpec`]), the matrix built from the reports ([`PingmeshMatrix`]), its
//! text and files (`pingmesh.json`, `pingmesh.svg`, [`heatmap`]), and the per-flow statistics in the style
//! of RDMA Estats ([`estats`]).

pub mod estats;
pub mod heatmap;

use crate::lab::topology::HostNode;
use lossless_dataplane::rocehost::report::{LatencyReport, Report};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::net::Ipv4Addr;
use std::path::Path;

/// Version of the `pingmesh.json` format.
pub const MATRIX_VERSION: u32 = 1;

/// A scenario's `pingmesh:`: every host probes every other during the scenario.
///
/// ```yaml
/// pingmesh: { interval-us: 100, dscp: 3, priority: 3 }
/// ```
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct PingmeshSpec {
    /// One ping from each host to each other host per interval, µs.
    #[serde(alias = "interval_us")]
    pub interval_us: f64,
    /// DSCP of the probes: the class they measure (default 3, lossless in SONiC's AZURE maps).
    #[serde(default = "default_dscp")]
    pub dscp: u8,
    /// PFC priority of the probes (default: the DSCP's in rocehost's default map: 3→3, 4→4, else DSCP>>3).
    #[serde(default)]
    pub priority: Option<u8>,
}

fn default_dscp() -> u8 {
    3
}

impl PingmeshSpec {
    pub fn validate(&self) -> Result<(), String> {
        if !(self.interval_us.is_finite() && self.interval_us >= 1.0) {
            return Err(format!("pingmesh: interval-us {}: at least 1", self.interval_us));
        }
        if self.dscp > 63 {
            return Err(format!("pingmesh: dscp {} is above 63", self.dscp));
        }
        if let Some(p) = self.priority.filter(|&p| p > 7) {
            return Err(format!("pingmesh: priority {p} is above 7"));
        }
        Ok(())
    }

    pub fn interval_ns(&self) -> u64 {
        ((self.interval_us * 1e3).round() as u64).max(1)
    }

    /// The probes' priority: as given, else the DSCP's under rocehost's default `--dscp-to-priority`.
    pub fn priority(&self) -> u8 {
        self.priority.unwrap_or(match self.dscp {
            3 => 3,
            4 => 4,
            d => d >> 3,
        })
    }
}

/// RTT from one host to another.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairRtt {
    /// The prober.
    pub from: String,
    /// The responder.
    pub to: String,
    pub from_ip: Ipv4Addr,
    pub to_ip: Ipv4Addr,
    pub sent: u64,
    /// Answered pings: the RTT samples.
    pub received: u64,
    pub lost: u64,
    /// Ping's first bit leaving to the pong's arrival, on the prober's clock, ns.
    pub rtt: LatencyReport,
    /// The responder's turnaround (part of `rtt`), ns.
    pub responder_hold: LatencyReport,
}

/// The latency matrix: n × (n − 1) ordered pairs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PingmeshMatrix {
    pub version: u32,
    /// `simulation, seed N` or `lab NAME`.
    pub source: String,
    pub interval_us: f64,
    pub dscp: u8,
    pub priority: u8,
    pub hosts: Vec<String>,
    /// Row by row: every host's peers in host order.
    pub pairs: Vec<PairRtt>,
}

impl PingmeshMatrix {
    /// The matrix from each host's report (a host with no report, or no probes towards a peer, gives
    /// pairs with nothing sent).
    pub fn from_reports(
        source: &str,
        spec: &PingmeshSpec,
        hosts: &[&HostNode],
        reports: &BTreeMap<String, Report>,
    ) -> PingmeshMatrix {
        let mut pairs = Vec::new();
        for a in hosts {
            for b in hosts.iter().filter(|b| b.name != a.name) {
                let probe = reports.get(&a.name).and_then(|r| r.probes.iter().find(|p| p.peer == Some(b.ip)));
                let mut pair = PairRtt {
                    from: a.name.clone(),
                    to: b.name.clone(),
                    from_ip: a.ip,
                    to_ip: b.ip,
                    sent: 0,
                    received: 0,
                    lost: 0,
                    rtt: LatencyReport::default(),
                    responder_hold: LatencyReport::default(),
                };
                if let Some(p) = probe {
                    pair.sent = p.sent;
                    pair.received = p.received;
                    pair.lost = p.lost;
                    pair.rtt = p.rtt;
                    pair.responder_hold = p.responder_hold;
                }
                pairs.push(pair);
            }
        }
        PingmeshMatrix {
            version: MATRIX_VERSION,
            source: source.to_owned(),
            interval_us: spec.interval_us,
            dscp: spec.dscp,
            priority: spec.priority(),
            hosts: hosts.iter().map(|h| h.name.clone()).collect(),
            pairs,
        }
    }

    pub fn pair(&self, from: &str, to: &str) -> Option<&PairRtt> {
        self.pairs.iter().find(|p| p.from == from && p.to == to)
    }

    /// Pairs with no answered probe.
    pub fn unmeasured(&self) -> impl Iterator<Item = &PairRtt> {
        self.pairs.iter().filter(|p| p.received == 0)
    }

    /// The matrix as text: p50/p99 µs per pair (row: prober, column: responder), then losses.
    pub fn describe(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "Pingmesh ({}): RTT p50/p99 µs, row = prober, column = responder; DSCP {} priority {}, every {} µs",
            self.source, self.dscp, self.priority, self.interval_us
        );
        let width = 17;
        let _ = write!(out, "{:<10}", "");
        for h in &self.hosts {
            let _ = write!(out, "{h:>width$}");
        }
        let _ = writeln!(out);
        for a in &self.hosts {
            let _ = write!(out, "{a:<10}");
            for b in &self.hosts {
                let cell = match self.pair(a, b) {
                    None => "-".to_owned(),
                    Some(p) if p.received == 0 => "no answer".to_owned(),
                    Some(p) => format!("{:.1}/{:.1}", p.rtt.p50_ns as f64 / 1e3, p.rtt.p99_ns as f64 / 1e3),
                };
                let _ = write!(out, "{cell:>width$}");
            }
            let _ = writeln!(out);
        }
        let (sent, received, lost) =
            self.pairs.iter().fold((0, 0, 0), |(s, r, l), p| (s + p.sent, r + p.received, l + p.lost));
        let _ = writeln!(
            out,
            "  {} pairs, {sent} probes sent, {received} answered, {lost} lost",
            self.pairs.len()
        );
        out
    }

    /// Writes `pingmesh.json` and `pingmesh.svg` into `dir`; returns their names.
    pub fn write(&self, dir: &Path) -> anyhow::Result<Vec<String>> {
        std::fs::write(dir.join("pingmesh.json"), serde_json::to_vec_pretty(self)?)?;
        heatmap::write(self, &dir.join("pingmesh.svg"))?;
        Ok(vec!["pingmesh.json".into(), "pingmesh.svg".into()])
    }
}

/// The probe peers of `host`: every other host, through its next hop (the peer on a shared segment,
/// else the gateway).
pub fn peers_of(
    host: &HostNode,
    hosts: &[&HostNode],
) -> Vec<(Ipv4Addr, lossless_dataplane::wire::EthernetAddress)> {
    hosts.iter().filter(|h| h.name != host.name).filter_map(|h| Some((h.ip, host.next_hop_mac(h)?))).collect()
}

/// Sets every host of a simulated fabric probing every other from `start_ns` until `until_ns`.
pub fn add_sim_probes(
    f: &mut crate::sim::fabric::Fabric,
    topology: &crate::lab::topology::Topology,
    spec: &PingmeshSpec,
    start_ns: u64,
    until_ns: u64,
) -> anyhow::Result<()> {
    use anyhow::Context as _;
    use lossless_dataplane::nic::{ProbeConfig, ProbePeer};
    let hosts: Vec<&HostNode> = topology.hosts.iter().collect();
    for h in &hosts {
        let peers = peers_of(h, &hosts).into_iter().map(|(ip, mac)| ProbePeer { ip, mac }).collect();
        let cfg = ProbeConfig {
            interval_ns: spec.interval_ns(),
            dscp: spec.dscp,
            priority: spec.priority(),
            start_ns,
            until_ns: Some(until_ns),
            peers,
            ..ProbeConfig::default()
        };
        let id = f.hosts[&h.name];
        f.sim.nic(id).set_probes(cfg).with_context(|| format!("host {}: pingmesh", h.name))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::scenario::Scenario;
    use lossless_dataplane::rocehost::report::ProbeReport;

    #[test]
    fn bad_specs_are_named() {
        let spec = |interval_us, dscp, priority| PingmeshSpec { interval_us, dscp, priority };
        assert!(spec(0.5, 3, None).validate().unwrap_err().contains("interval-us 0.5"));
        assert!(spec(f64::NAN, 3, None).validate().is_err());
        assert!(spec(100.0, 64, None).validate().unwrap_err().contains("dscp 64"));
        assert!(spec(100.0, 3, Some(8)).validate().unwrap_err().contains("priority 8"));
        assert_eq!((spec(100.0, 3, None).priority(), spec(100.0, 4, None).priority()), (3, 4));
        assert_eq!((spec(100.0, 26, None).priority(), spec(100.0, 26, Some(5)).priority()), (3, 5));
        assert_eq!(spec(2.5, 3, None).interval_ns(), 2_500);
        let scenario = |pingmesh: &str| {
            let text = format!(
                "topology: {{ hosts: {{ h1: {{ ip: 10.0.0.1/24 }}, h2: {{ ip: 10.0.0.2/24 }} }}, links: [h1:eth0 -- h2:eth0] }}\n{pingmesh}\n"
            );
            Scenario::parse(&text, "t", "t.yaml", Path::new("."))
        };
        let err = scenario("pingmesh: { interval-us: 0 }").unwrap_err().to_string();
        assert!(err.contains("t.yaml") && err.contains("interval-us 0"), "{err}");
        let err = scenario("pingmesh: { interval-us: 10, every: 3 }").unwrap_err().to_string();
        assert!(err.contains("every"), "{err}");
        let ok = scenario("pingmesh: { interval_us: 10, dscp: 4 }").unwrap();
        assert_eq!(ok.pingmesh.map(|p| (p.interval_ns(), p.priority())), Some((10_000, 4)));
    }

    #[test]
    fn the_matrix_has_every_ordered_pair_and_marks_the_unanswered() {
        let topology = r#"
topology:
  switches:
    sw1:
      config:
        DEVICE_METADATA: { localhost: { mac: "02:4c:53:00:00:01" } }
        PORT: { Ethernet0: { speed: 1000 }, Ethernet4: { speed: 1000 }, Ethernet8: { speed: 1000 } }
  hosts:
    a: { ip: 10.0.0.1/24, attach: "sw1:Ethernet0" }
    b: { ip: 10.0.0.2/24, attach: "sw1:Ethernet4" }
    c: { ip: 10.0.0.3/24, attach: "sw1:Ethernet8" }
"#;
        let hosts = Scenario::parse(topology, "t", "t.yaml", Path::new(".")).unwrap().topology.hosts;
        let refs: Vec<&HostNode> = hosts.iter().collect();
        let probe = |ip: Ipv4Addr, received| ProbeReport {
            peer: Some(ip),
            sent: 10,
            received,
            rtt: LatencyReport { count: received, p50_ns: 2_000, p99_ns: 3_000, ..LatencyReport::default() },
            ..ProbeReport::default()
        };
        let mut reports = BTreeMap::new();
        reports.insert(
            "a".to_owned(),
            Report { probes: vec![probe(refs[1].ip, 10), probe(refs[2].ip, 0)], ..Report::default() },
        );
        let spec = PingmeshSpec { interval_us: 100.0, dscp: 3, priority: None };
        let m = PingmeshMatrix::from_reports("test", &spec, &refs, &reports);
        assert_eq!(m.pairs.len(), 6);
        assert_eq!(m.pair("a", "b").map(|p| (p.received, p.rtt.p99_ns)), Some((10, 3_000)));
        let unanswered: Vec<_> = m.unmeasured().map(|p| (p.from.as_str(), p.to.as_str())).collect();
        assert_eq!(unanswered, [("a", "c"), ("b", "a"), ("b", "c"), ("c", "a"), ("c", "b")]);
        let text = m.describe();
        assert!(text.contains("2.0/3.0") && text.contains("no answer"), "{text}");
    }
}
