//! The buffer dependency graph of a topology, built by walking every lossless packet the hosts could send
//! through the switches' compiled configurations, deciding at each switch as its model does
//! (`dataplane/core/src/model/switch/ingress.rs`): VLAN membership, routing by longest prefix with every
//! ECMP next hop, static neighbours and FDB entries, bridging, and the flood of a routed lossless packet
//! whose neighbour's MAC is missing when `SWITCH|switch|lossless_fdb_miss_action` is `flood` (any dynamic
//! FDB entry can age out, so with flooding on every member of the VLAN is a possible egress).
//!
//! A buffer is an ingress PG that sends PFC: (switch, ingress port, PG), named by its PFC priority. An
//! edge A → B says a packet held in A can wait for B: it leaves A's switch through an egress queue that
//! B's XOFF pauses (one of B's priorities is in the egress port's `pfc_enable` and its `pfc_to_queue`
//! entry is that queue). Classification is by DSCP through each port's maps and border rules, as the model
//! classifies untagged IP traffic (`dot1p_to_tc_map` is not followed).

use crate::lab::topology::Topology;
use lossless_dataplane::model::classify::classify;
use lossless_dataplane::model::config::{FdbMissAction, RifKind, SwitchConfig};
use lossless_dataplane::model::forwarding::{RouteAction, RouteTable};
use lossless_dataplane::wire::EthernetAddress;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::net::{IpAddr, Ipv4Addr};

/// RoCEv2's UDP port: border rules that match on it see the packets the walk follows.
const ROCE_UDP_PORT: u16 = 4791;

/// A lossless ingress buffer: switch and port (indexes into the topology and its configuration) and PG.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BufferId {
    pub switch: usize,
    pub port: usize,
    pub pg: u8,
}

/// How the packets behind an edge leave the upstream switch (`routed`, `flooded` or `bridged` in the
/// report, text and JSON).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Via {
    Routed,
    /// A routed packet flooded to a VLAN's members (its neighbour's MAC can be missing).
    Flooded,
    Bridged,
}

impl std::fmt::Display for Via {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Via::Routed => "routed",
            Via::Flooded => "flooded",
            Via::Bridged => "bridged",
        })
    }
}

/// Why an edge exists: an example of the traffic behind it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Reason {
    pub via: Via,
    /// The destination host.
    pub to: String,
    pub dscp: u8,
}

/// The graph: buffers (with the priorities their XOFF names) and dependencies.
#[derive(Debug, Default)]
pub struct Graph {
    /// Every lossless buffer some packet passes through, with its XOFF priorities (bit mask).
    pub buffers: BTreeMap<BufferId, u8>,
    /// A → B, with the first reason found.
    pub edges: BTreeMap<BufferId, BTreeMap<BufferId, Reason>>,
}

/// A frame as it travels: what the next switch's decision depends on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Frame {
    dst_ip: Ipv4Addr,
    dst_mac: EthernetAddress,
    tag: Option<u16>,
    dscp: u8,
}

/// One switch's lookup structures.
struct Node<'a> {
    config: &'a SwitchConfig,
    routes: RouteTable,
    /// Per port: the far end of its link (node name, port name).
    peers: Vec<Option<(&'a str, &'a str)>>,
}

pub fn build(topology: &Topology) -> Graph {
    let configs: Vec<&SwitchConfig> = topology.switches.iter().map(|s| &s.compiled).collect();
    build_with(topology, &configs)
}

/// The graph with these configurations (one per switch, in the topology's order) instead of the
/// topology's own: a simulation's running configurations after its `apply` steps.
pub fn build_with(topology: &Topology, configs: &[&SwitchConfig]) -> Graph {
    let mut walk = Walk::new(topology, configs);
    for src in &topology.hosts {
        let Some(at) = &src.attached else { continue };
        let Some(sw) = walk.switch_index(&at.node) else { continue };
        let Some(port) = walk.port_index(sw, &at.port) else { continue };
        for dst in topology.hosts.iter().filter(|d| d.name != src.name) {
            let Some(dst_mac) = src.next_hop_mac(dst) else { continue };
            for &dscp in &walk.lossless_dscps.clone() {
                let frame = Frame { dst_ip: dst.ip, dst_mac, tag: None, dscp };
                walk.arrive(sw, port, frame, None);
            }
        }
    }
    walk.graph
}

struct Walk<'a> {
    topology: &'a Topology,
    nodes: Vec<Node<'a>>,
    /// Which node owns a MAC: a host's, or a switch interface's (the port MAC or the device MAC).
    mac_owner: HashMap<EthernetAddress, &'a str>,
    /// DSCPs some port classifies into a PG that sends PFC.
    lossless_dscps: Vec<u8>,
    visited: HashSet<(usize, usize, Frame)>,
    graph: Graph,
}

impl<'a> Walk<'a> {
    fn new(topology: &'a Topology, configs: &[&'a SwitchConfig]) -> Walk<'a> {
        let mut nodes = Vec::new();
        let mut mac_owner = HashMap::new();
        let mut dscps = BTreeSet::new();
        for (s, config) in topology.switches.iter().zip(configs) {
            let peers = config
                .ports
                .iter()
                .map(|p| {
                    topology.links.iter().find_map(|l| {
                        let far = if l.a.node == s.name && l.a.port == p.name {
                            &l.b
                        } else if l.b.node == s.name && l.b.port == p.name {
                            &l.a
                        } else {
                            return None;
                        };
                        Some((far.node.as_str(), far.port.as_str()))
                    })
                })
                .collect();
            for rif in &config.interfaces {
                mac_owner.insert(rif.mac, s.name.as_str());
            }
            for (i, qos) in config.qos.iter().enumerate() {
                for dscp in 0..64u8 {
                    let class = classify(qos, None, Some(dscp), Some(ROCE_UDP_PORT));
                    if !class.drop && xoff_priorities(config, i, class.pg) != 0 {
                        dscps.insert(dscp);
                    }
                }
            }
            nodes.push(Node { config, routes: RouteTable::for_config(config), peers });
        }
        for h in &topology.hosts {
            mac_owner.insert(h.mac, h.name.as_str());
        }
        Walk {
            topology,
            nodes,
            mac_owner,
            lossless_dscps: dscps.into_iter().collect(),
            visited: HashSet::new(),
            graph: Graph::default(),
        }
    }

    fn switch_index(&self, name: &str) -> Option<usize> {
        self.topology.switches.iter().position(|s| s.name == name)
    }

    fn port_index(&self, sw: usize, name: &str) -> Option<usize> {
        self.nodes[sw].config.ports.iter().position(|p| p.name == name)
    }

    /// A frame arrives at `sw`'s `port`; `from` is the upstream buffer and the egress queue it left
    /// through, if the upstream held it in a lossless buffer.
    fn arrive(&mut self, sw: usize, port: usize, frame: Frame, from: Option<(BufferId, usize, u8, Reason)>) {
        let config = self.nodes[sw].config;
        let class = classify(&config.qos[port], None, Some(frame.dscp), Some(ROCE_UDP_PORT));
        if class.drop {
            return;
        }
        let prios = xoff_priorities(config, port, class.pg);
        let here = (prios != 0).then_some(BufferId { switch: sw, port, pg: class.pg });
        if let Some(b) = here {
            self.graph.buffers.insert(b, prios);
        }
        if let (Some((up, out, queue, reason)), Some(b)) = (from, here) {
            let up_config = self.nodes[up.switch].config;
            let out_qos = &up_config.qos[out];
            let pauses = (0..8)
                .any(|p| prios & out_qos.pfc_enable & (1 << p) != 0 && out_qos.pfc_to_queue[p] == queue);
            if pauses {
                self.graph.edges.entry(up).or_default().entry(b).or_insert(reason);
            }
        }
        if !self.visited.insert((sw, port, frame)) {
            return;
        }
        let frame = Frame { dscp: class.set_dscp.unwrap_or(frame.dscp), ..frame };
        for (out, next, via) in self.forward(sw, port, frame, class.tc) {
            // A port that is down or has no link (a failed link) sends nothing anywhere.
            let Some((peer, peer_port)) = self.nodes[sw].peers[out].filter(|_| config.ports[out].admin_up)
            else {
                continue;
            };
            let Some(peer_sw) = self.switch_index(peer) else { continue }; // a host: the end
            let Some(peer_port) = self.port_index(peer_sw, peer_port) else { continue };
            let queue =
                class.queue_override.unwrap_or(config.qos[out].tc_to_queue[usize::from(class.tc)]) & 7;
            let to = self.host_name(frame.dst_ip);
            let from = here.map(|b| (b, out, queue, Reason { via, to, dscp: next.dscp }));
            self.arrive(peer_sw, peer_port, next, from);
        }
    }

    fn host_name(&self, ip: Ipv4Addr) -> String {
        self.topology.hosts.iter().find(|h| h.ip == ip).map_or_else(|| ip.to_string(), |h| h.name.clone())
    }

    /// Where the switch sends the frame: (egress port, the frame as it leaves, how).
    fn forward(&self, sw: usize, port: usize, frame: Frame, tc: u8) -> Vec<(usize, Frame, Via)> {
        let config = self.nodes[sw].config;
        let member = |vid: u16, p: usize| {
            config
                .vlans
                .get(&vid)
                .and_then(|v| v.members.iter().find(|m| m.port.index() == p))
                .map(|m| m.tagged)
        };
        let vid = match frame.tag {
            Some(v) if member(v, port).is_some() => Some(v),
            Some(_) => return Vec::new(), // INGRESS_VLAN_FILTER
            None => config
                .vlans
                .values()
                .find(|v| v.members.iter().any(|m| m.port.index() == port && !m.tagged))
                .map(|v| v.vid),
        };
        let rif_in = config.interfaces.iter().find(|r| match (r.kind, vid) {
            (RifKind::Vlan(v), Some(x)) => v == x,
            (RifKind::Port(p), None) => p.index() == port,
            _ => false,
        });
        if rif_in.is_some_and(|r| r.mac == frame.dst_mac) {
            return self.route(sw, frame, tc);
        }
        let Some(vid) = vid else { return Vec::new() };
        // Bridged: to the member behind the MAC; an unknown lossless unicast is dropped, never flooded.
        self.fdb_ports(sw, vid, frame.dst_mac)
            .into_iter()
            .filter(|&p| p != port)
            .map(|p| (p, Frame { tag: member(vid, p).filter(|t| *t).map(|_| vid), ..frame }, Via::Bridged))
            .collect()
    }

    fn route(&self, sw: usize, frame: Frame, tc: u8) -> Vec<(usize, Frame, Via)> {
        let node = &self.nodes[sw];
        let config = node.config;
        let hops: Vec<(IpAddr, usize)> = match node.routes.lookup(IpAddr::V4(frame.dst_ip)) {
            Some(RouteAction::Connected(rif)) => vec![(IpAddr::V4(frame.dst_ip), rif.index())],
            Some(RouteAction::NextHops(hops)) => hops.iter().map(|(ip, rif)| (*ip, rif.index())).collect(),
            _ => Vec::new(),
        };
        let mut out = Vec::new();
        for (next_hop, rif) in hops {
            let Some(mac) = self.neighbor_mac(sw, next_hop) else { continue };
            let next = Frame { dst_mac: mac, tag: None, ..frame };
            match config.interfaces[rif].kind {
                RifKind::Port(p) => out.push((p.index(), next, Via::Routed)),
                RifKind::Vlan(v) => {
                    let Some(vlan) = config.vlans.get(&v) else { continue };
                    let known = self.fdb_ports(sw, v, mac);
                    let is_static = config.fdb.iter().any(|e| e.vid == v && e.mac == mac);
                    let lossless =
                        vlan.members.iter().any(|m| config.qos[m.port.index()].pfc_enable & (1 << tc) != 0);
                    let flood = !is_static
                        && lossless
                        && config.switch.lossless_fdb_miss_action == FdbMissAction::Flood;
                    for m in &vlan.members {
                        let tagged = Frame { tag: m.tagged.then_some(v), ..next };
                        if flood {
                            let via =
                                if known.contains(&m.port.index()) { Via::Routed } else { Via::Flooded };
                            out.push((m.port.index(), tagged, via));
                        } else if known.contains(&m.port.index()) {
                            out.push((m.port.index(), tagged, Via::Routed));
                        }
                    }
                }
            }
        }
        out
    }

    /// The neighbour's MAC: a static `NEIGH` entry, else the host or switch interface with that address
    /// (what ARP would learn).
    fn neighbor_mac(&self, sw: usize, ip: IpAddr) -> Option<EthernetAddress> {
        let config = self.nodes[sw].config;
        if let Some(n) = config.neighbors.iter().find(|n| n.ip == ip) {
            return Some(n.mac);
        }
        if let Some(h) = self.topology.hosts.iter().find(|h| IpAddr::V4(h.ip) == ip) {
            return Some(h.mac);
        }
        self.nodes
            .iter()
            .flat_map(|n| &n.config.interfaces)
            .find(|r| r.addrs.iter().any(|a| a.addr() == ip))
            .map(|r| r.mac)
    }

    /// The VLAN members a MAC is (or would be learned) behind: a static `FDB` entry, else the members whose
    /// link leads to the MAC's owner.
    fn fdb_ports(&self, sw: usize, vid: u16, mac: EthernetAddress) -> Vec<usize> {
        let node = &self.nodes[sw];
        if let Some(e) = node.config.fdb.iter().find(|e| e.vid == vid && e.mac == mac) {
            return vec![e.port.index()];
        }
        let Some(owner) = self.mac_owner.get(&mac) else { return Vec::new() };
        let Some(vlan) = node.config.vlans.get(&vid) else { return Vec::new() };
        vlan.members
            .iter()
            .map(|m| m.port.index())
            .filter(|&p| node.peers[p].is_some_and(|(peer, _)| peer == *owner))
            .collect()
    }
}

/// The priorities a PG's XOFF names on a port: those `pfc_to_pg` maps to it, within `pfc_enable`.
pub fn xoff_priorities(config: &SwitchConfig, port: usize, pg: u8) -> u8 {
    let qos = &config.qos[port];
    (0..8).filter(|&p| qos.pfc_to_pg[p] == pg).fold(0u8, |m, p| m | 1 << p) & qos.pfc_enable
}

/// The lowest priority of a mask (the one a buffer is printed with).
pub fn first_priority(mask: u8) -> u8 {
    mask.trailing_zeros().min(7) as u8
}

/// Ports by index, for callers outside this module.
pub fn port_name(config: &SwitchConfig, port: usize) -> &str {
    config.ports.get(port).map_or("?", |p| p.name.as_str())
}
