//! A topology as a simulation: one switch model per switch (its configuration applied), one NIC model per
//! host configured as `swctl lab up` configures its rocehost (address, line rate, MTU, PFC, DCQCN
//! options, the scenario's flows), and one link per topology link.
//!
//! Link timing: a port's rate is its `PORT|speed` (a host's `line-rate-mbps`), each direction at its
//! sender's rate; the propagation delay is the cable's, 5 ns per metre of the `CABLE_LENGTH` entry of
//! the switch port at either end (the longer), else the link's `delay:`, else SONiC's default cable of
//! 5 m. `loss:` and `corrupt:` are seeded chance per frame, `loss-every: N` loses every Nth RoCE data
//! packet; `jitter:` is not simulated (it would reorder frames).

use crate::headroom::DEFAULT_CABLE_LENGTH_M;
use crate::headroom::check::cable_length_entry;
use crate::lab::topology::{End, LineEffects, Topology};
use crate::lab::up::flow_qp;
use anyhow::{Context, bail};
use lossless_dataplane::model::Switch;
use lossless_dataplane::nic::{FlowConfig, Nic, NicConfig};
use lossless_dataplane::sim::link::splitmix64;
use lossless_dataplane::sim::{Device, Endpoint, Frames, Impairment, Link, NodeId, Sim};
use lossless_dataplane::time::{Instant, Nanos};
use std::collections::BTreeMap;

/// Propagation delay of a cable, ns per metre (light in fibre or copper, about 2/3 c).
pub const NS_PER_METRE: u64 = 5;

/// Virtual time at which the hosts are up and the scenario's clock starts: the gratuitous ARPs the hosts
/// send at 0 have reached the switches by then.
pub const ORIGIN_NS: u64 = 1_000_000;

/// The simulation and where each node of the topology is in it.
pub struct Fabric {
    pub sim: Sim,
    pub switches: BTreeMap<String, NodeId>,
    pub hosts: BTreeMap<String, NodeId>,
    /// Each topology link: (label, end a, end b, delay ns).
    pub links: Vec<(String, Endpoint, Endpoint, u64)>,
}

impl Fabric {
    /// The simulation endpoint of `node:port`.
    pub fn endpoint(&mut self, end: &End) -> Option<Endpoint> {
        if let Some(&id) = self.hosts.get(&end.node) {
            return Some(id.port(0));
        }
        let id = *self.switches.get(&end.node)?;
        self.sim.switch(id).port_id(&end.port).map(|p| id.port(p.index()))
    }
}

/// Builds the fabric; flows stop starting messages at `until_ns`.
pub fn build(topology: &Topology, seed: u64, until_ns: u64) -> anyhow::Result<Fabric> {
    let mut sim = Sim::with_seed(seed);
    let mut switches = BTreeMap::new();
    for s in &topology.switches {
        let mut switch = Switch::new();
        switch
            .apply(&s.config, Instant::ZERO)
            .map_err(|e| anyhow::anyhow!("switch {} ({}): {e}", s.name, s.config_source))?;
        switches.insert(s.name.clone(), sim.add(Device::Switch(Box::new(switch))));
    }
    let mut hosts = BTreeMap::new();
    for h in &topology.hosts {
        let mut cfg = NicConfig {
            mac: h.mac,
            ip: h.ip,
            line_rate_mbps: h.line_rate_mbps,
            mtu: h.mtu,
            pfc_enable: h.pfc.iter().fold(0u8, |m, p| m | 1 << p),
            rx_pipeline: h.rx_pipeline,
            retransmit: h.retransmit,
            ..NicConfig::default()
        };
        cfg.set_dcqcn_param("time_scale", &h.dcqcn_time_scale.to_string())
            .map_err(|e| anyhow::anyhow!("host {}: dcqcn time-scale: {e}", h.name))?;
        for (name, value) in &h.dcqcn_params {
            cfg.set_dcqcn_param(name, value)
                .map_err(|e| anyhow::anyhow!("host {}: dcqcn {name}: {e}", h.name))?;
        }
        let nic = Nic::new(cfg).with_context(|| format!("host {}", h.name))?;
        hosts.insert(h.name.clone(), sim.add(Device::Nic(Box::new(nic))));
    }
    let mut fabric = Fabric { sim, switches, hosts, links: Vec::new() };
    for link in &topology.links {
        let (Some(a), Some(b)) = (fabric.endpoint(&link.a), fabric.endpoint(&link.b)) else {
            bail!("link {link}: an end is not in the simulation");
        };
        let rate = |f: &mut Fabric, end: &End, ep: Endpoint| -> u32 {
            match topology.host(&end.node) {
                Some(h) => h.line_rate_mbps,
                None => f.sim.switch(ep.node).config().ports[ep.port].speed_mbps,
            }
        };
        let (rate_a, rate_b) = (rate(&mut fabric, &link.a, a), rate(&mut fabric, &link.b, b));
        let cable = [&link.a, &link.b]
            .iter()
            .filter_map(|end| {
                topology.switch(&end.node).and_then(|s| cable_length_entry(&s.config, &end.port))
            })
            .max();
        let delay_ns = match (cable, link.line.delay_ns) {
            (Some(m), _) => u64::from(m) * NS_PER_METRE,
            (None, Some(d)) => d,
            (None, None) => u64::from(DEFAULT_CABLE_LENGTH_M) * NS_PER_METRE,
        };
        let (loss, corrupt) = impairments(&link.line);
        fabric.sim.add_link(a, Link { loss, corrupt, ..Link::new(b, rate_a, Nanos::from_ns(delay_ns)) });
        fabric.sim.add_link(b, Link { loss, corrupt, ..Link::new(a, rate_b, Nanos::from_ns(delay_ns)) });
        fabric.links.push((link.to_string(), a, b, delay_ns));
    }
    add_flows(&mut fabric, topology, seed, until_ns)?;
    announce(&mut fabric, topology);
    Ok(fabric)
}

fn impairments(line: &LineEffects) -> (Option<Impairment>, Option<Impairment>) {
    let loss = match (line.loss_every, line.loss_probability) {
        (Some(n), _) => Some(Impairment::Every { n, frames: Frames::Data }),
        (None, Some(p)) if p > 0.0 => Some(Impairment::Random { probability: p, frames: Frames::All }),
        _ => None,
    };
    let corrupt = line
        .corrupt_probability
        .filter(|&p| p > 0.0)
        .map(|probability| Impairment::Random { probability, frames: Frames::All });
    (loss, corrupt)
}

/// The scenario's flows, as `swctl lab up` gives them to rocehost: flow `i` goes to QP [`flow_qp`]`(i)`
/// from UDP port 49152 + i, its own QPN and first PSN drawn from the seed.
fn add_flows(fabric: &mut Fabric, topology: &Topology, seed: u64, until_ns: u64) -> anyhow::Result<()> {
    let mut draws = seed ^ 0x5eed_f10e;
    for (i, f) in topology.traffic.iter().enumerate() {
        let (Some(src), Some(dst)) = (topology.host(&f.from), topology.host(&f.to)) else {
            bail!("flow {i}: {} or {} is not a host", f.from, f.to);
        };
        let Some(next_hop) = src.next_hop_mac(dst) else {
            bail!("flow {i}: {} has no way to {}", f.from, f.to)
        };
        let flow = FlowConfig {
            id: i as u32 + 1,
            dst_ip: dst.ip,
            dst_mac: next_hop,
            src_port: 49152 + i as u16,
            src_qp: 2 + (splitmix64(&mut draws) % 0xff_fff0) as u32,
            dst_qp: flow_qp(i),
            dscp: f.dscp,
            priority: f.priority,
            rate_mbps: f.rate_mbps,
            message_bytes: f.message_bytes,
            messages: f.messages,
            start_ns: ORIGIN_NS + f.start_ms * 1_000_000,
            until_ns: Some(until_ns),
            initial_psn: (splitmix64(&mut draws) & 0xff_ffff) as u32,
            dcqcn: f.dcqcn,
        };
        let id = fabric.hosts[&f.from];
        fabric.sim.nic(id).add_flow(flow).with_context(|| format!("flow {i} ({} → {})", f.from, f.to))?;
    }
    Ok(())
}

/// Each host's gratuitous ARP at time 0, as a lab host announces itself: the switches learn its MAC and,
/// where they route, its address.
fn announce(fabric: &mut Fabric, topology: &Topology) {
    for h in &topology.hosts {
        let Some(attached) = &h.attached else { continue };
        let Some(to) = fabric.endpoint(attached) else { continue };
        let frame = crate::lab::up::gratuitous_arp(h);
        fabric.sim.inject(to, Instant::ZERO, frame);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::topology::RelativeTo;

    const TOPOLOGY: &str = r#"
switches:
  sw1:
    config:
      DEVICE_METADATA: { localhost: { mac: "02:4c:53:00:00:01" } }
      PORT: { Ethernet0: { speed: 25000 }, Ethernet4: { speed: 100000 }, Ethernet8: { speed: 100000 } }
      CABLE_LENGTH: { AZURE: { Ethernet0: 100m } }
hosts:
  h1: { ip: 10.0.0.1/24, attach: sw1:Ethernet0, line-rate-mbps: 100000 }
  h2: { ip: 10.0.0.2/24 }
  h3: { ip: 10.0.0.3/24, attach: sw1:Ethernet8, rx-pipeline: { buffer_bytes: 65536, xoff_bytes: 32768, page_miss_ns: 500 } }
links:
  - { link: sw1:Ethernet4 -- h2:eth0, delay: 2us, loss-every: 256, corrupt: 0.5% }
"#;

    #[test]
    fn delays_come_from_cable_lengths_then_link_delays_then_5_metres_and_rates_from_each_end() {
        let t = Topology::parse(TOPOLOGY, "t", "test", &RelativeTo(".".into())).unwrap();
        let mut f = build(&t, 1, ORIGIN_NS).unwrap();
        let sw = f.switches["sw1"];
        let (h1, h2, h3) = (f.hosts["h1"], f.hosts["h2"], f.hosts["h3"]);
        let link = |f: &Fabric, from: Endpoint| *f.sim.link(from).unwrap();
        // CABLE_LENGTH 100 m: 500 ns both ways; each direction at its sender's rate.
        assert_eq!((link(&f, sw.port(0)).delay.as_ns(), link(&f, sw.port(0)).rate_mbps), (500, 25_000));
        assert_eq!((link(&f, h1.port(0)).delay.as_ns(), link(&f, h1.port(0)).rate_mbps), (500, 100_000));
        // No cable entry: the link's delay, with its impairments.
        let to_h2 = link(&f, sw.port(1));
        assert_eq!((to_h2.to, to_h2.delay.as_ns()), (h2.port(0), 2_000));
        assert_eq!(to_h2.loss, Some(Impairment::Every { n: 256, frames: Frames::Data }));
        assert_eq!(to_h2.corrupt, Some(Impairment::Random { probability: 0.005, frames: Frames::All }));
        // Neither: SONiC's default 5 m cable.
        assert_eq!(link(&f, h3.port(0)).delay.as_ns(), 25);
        // A host's rx-pipeline is its NIC's; without one the NIC consumes frames on arrival.
        let rx = f.sim.nic(h3).config().rx_pipeline;
        assert_eq!((rx.buffer_bytes, rx.xoff_bytes, rx.page_miss_ns), (65536, 32768, 500));
        assert!(f.sim.nic(h3).rx_pipeline_stats().is_some());
        assert!(f.sim.nic(h1).rx_pipeline_stats().is_none());
        assert_eq!(f.sim.switch(sw).port_count(), 3);
    }
}
