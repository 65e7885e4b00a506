//! The switch facade: one state machine that owns forwarding state, queues and counters, and is driven
//! entirely by method calls that carry the current time. See the module docs of [`crate::model`].

use super::classify::{Classification, classify};
use super::config::{
    Compiled, ConfigDb, ConfigErrors, ConfigIssue, FdbMissAction, PortIndex, RifIndex, RifKind, SwitchConfig,
    compile,
};
use super::counters::{CountersDump, DropReason, FrameLedger, PortCounters};
use super::forwarding::{Fdb, FlowKey, Neighbors, RouteAction, RouteTable};
use super::sched::{QueuedFrame, Scheduler};
use crate::wire::{
    self, ArpOperation, ArpRepr, EtherType, EthernetAddress, EthernetFrame, Ipv4Packet, Ipv6Packet, L3, L4,
    build, ethernet, vlan,
};
use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;

/// A port of the switch, by position in the configuration (ports are ordered by name).
pub type PortId = usize;

/// The queue switch-originated control frames (ARP) use, as SONiC's CPU port traffic does.
pub const CONTROL_QUEUE: u8 = 7;
/// How often an unresolved next hop is ARPed for.
pub const ARP_RETRY_NS: u64 = 1_000_000_000;
/// Events kept for [`Switch::poll_event`] before the oldest are discarded.
pub const EVENT_QUEUE_LIMIT: usize = 4096;

/// What a successful [`Switch::apply`] returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    pub generation: u64,
    pub warnings: Vec<ConfigIssue>,
}

/// A frame leaving a port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transmit {
    pub frame: Vec<u8>,
    /// The egress queue it was served from.
    pub queue: u8,
}

/// Something that happened inside the switch that an operator may want to see.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    ConfigApplied { generation: u64 },
    FdbLearned { vid: u16, mac: EthernetAddress, port: PortId },
    FdbAged { vid: u16, mac: EthernetAddress },
    NeighborLearned { ip: IpAddr, mac: EthernetAddress },
    NeighborAged { ip: IpAddr },
}

/// Per-packet metadata decided at ingress.
#[derive(Debug, Clone, Copy)]
struct Meta {
    ingress: Option<PortId>,
    class: Classification,
    /// PCP of the frame as received, kept when it leaves tagged.
    pcp: Option<u8>,
}

/// Lookup structures derived from the configuration.
#[derive(Debug, Default)]
struct Derived {
    rif_by_port: Vec<Option<RifIndex>>,
    rif_by_vlan: HashMap<u16, RifIndex>,
    untagged_vlan: Vec<Option<u16>>,
    /// (vid, port) → tagged?
    membership: HashMap<(u16, PortIndex), bool>,
    /// Per VLAN: the union of the members' `pfc_enable` (a TC lossless on any member is never flooded).
    vlan_lossless: HashMap<u16, u8>,
    routes: RouteTable,
}

impl Derived {
    fn build(config: &SwitchConfig) -> Derived {
        let mut d = Derived {
            rif_by_port: vec![None; config.ports.len()],
            untagged_vlan: vec![None; config.ports.len()],
            ..Derived::default()
        };
        for (vid, vlan) in &config.vlans {
            let mut lossless = 0u8;
            for m in &vlan.members {
                d.membership.insert((*vid, m.port), m.tagged);
                if !m.tagged {
                    d.untagged_vlan[m.port] = Some(*vid);
                }
                lossless |= config.qos[m.port].pfc_enable;
            }
            d.vlan_lossless.insert(*vid, lossless);
        }
        for route in &config.routes {
            let action = if route.blackhole {
                RouteAction::Blackhole
            } else {
                RouteAction::NextHops(route.nexthops.iter().map(|n| (n.ip, n.rif)).collect())
            };
            d.routes.insert(route.prefix, action);
        }
        // Connected and local routes after static ones: on the same prefix, connected wins (distance 0).
        for (i, rif) in config.interfaces.iter().enumerate() {
            match rif.kind {
                RifKind::Port(p) => d.rif_by_port[p] = Some(i),
                RifKind::Vlan(v) => {
                    d.rif_by_vlan.insert(v, i);
                }
            }
            for addr in &rif.addrs {
                d.routes.insert(addr.trunc(), RouteAction::Connected(i));
                let host =
                    ipnet::IpNet::new(addr.addr(), addr.max_prefix_len()).expect("max prefix is valid");
                d.routes.insert(host, RouteAction::Local);
            }
        }
        d
    }
}

#[derive(Debug, Default)]
struct PortState {
    counters: PortCounters,
    egress: Scheduler,
}

/// The switch.
#[derive(Debug)]
pub struct Switch {
    generation: u64,
    config: SwitchConfig,
    derived: Derived,
    ports: Vec<PortState>,
    fdb: Fdb,
    neighbors: Neighbors,
    /// Next hops ARPed for, with the time of the last request.
    arp_pending: HashMap<IpAddr, u64>,
    next_fdb_sweep_ns: Option<u64>,
    next_neigh_sweep_ns: Option<u64>,
    ledger: FrameLedger,
    events: VecDeque<Event>,
    events_lost: u64,
}

impl Default for Switch {
    fn default() -> Self {
        Switch::new()
    }
}

impl Switch {
    /// A switch with no ports and generation 0; [`apply`](Self::apply) a configuration to bring it up.
    pub fn new() -> Switch {
        Switch {
            generation: 0,
            config: SwitchConfig {
                device_mac: EthernetAddress([0x02, 0x4c, 0x53, 0, 0, 1]),
                switch: Default::default(),
                ports: Vec::new(),
                vlans: Default::default(),
                interfaces: Vec::new(),
                neighbors: Vec::new(),
                routes: Vec::new(),
                fdb: Vec::new(),
                qos: Vec::new(),
            },
            derived: Derived::default(),
            ports: Vec::new(),
            fdb: Fdb::default(),
            neighbors: Neighbors::default(),
            arp_pending: HashMap::new(),
            next_fdb_sweep_ns: None,
            next_neigh_sweep_ns: None,
            ledger: FrameLedger::default(),
            events: VecDeque::new(),
            events_lost: 0,
        }
    }

    // ---------------------------------------------------------------------------------------------
    // Configuration

    /// Validates a whole configuration without applying it.
    pub fn validate(&self, db: &ConfigDb) -> Result<Vec<ConfigIssue>, ConfigErrors> {
        compile(db).map(|c| c.warnings)
    }

    /// Validates and installs a whole configuration, atomically: on any error nothing changes. Dynamic
    /// FDB and neighbour entries, queued frames and counters of ports that still exist are kept.
    pub fn apply(&mut self, db: &ConfigDb, now_ns: u64) -> Result<Applied, ConfigErrors> {
        let Compiled { config, warnings } = compile(db)?;
        self.install(config, now_ns);
        self.generation += 1;
        self.push_event(Event::ConfigApplied { generation: self.generation });
        Ok(Applied { generation: self.generation, warnings })
    }

    fn install(&mut self, config: SwitchConfig, now_ns: u64) {
        let old_port_names: Vec<String> = self.config.ports.iter().map(|p| p.name.clone()).collect();
        let old_rif_names: Vec<String> = self.config.interfaces.iter().map(|r| r.name.clone()).collect();
        let mut old_ports: HashMap<String, PortState> =
            old_port_names.iter().cloned().zip(std::mem::take(&mut self.ports)).collect();
        self.ports = config.ports.iter().map(|p| old_ports.remove(&p.name).unwrap_or_default()).collect();

        let derived = Derived::build(&config);
        let new_port = |old: PortIndex| config.ports.iter().position(|p| p.name == old_port_names[old]);
        self.fdb.retain(|vid, _, e| {
            if e.is_static {
                return false;
            }
            match new_port(e.port) {
                Some(p) if derived.membership.contains_key(&(vid, p)) => {
                    e.port = p;
                    true
                }
                _ => false,
            }
        });
        for f in &config.fdb {
            self.fdb.insert_static(f.vid, f.mac, f.port);
        }
        self.neighbors.retain(|ip, n| {
            if n.is_static {
                return false;
            }
            let Some(rif) = config.interfaces.iter().position(|r| r.name == old_rif_names[n.rif]) else {
                return false;
            };
            n.rif = rif;
            config.interfaces[rif].addrs.iter().any(|a| a.contains(&ip))
        });
        for n in &config.neighbors {
            self.neighbors.insert_static(n.ip, n.mac, n.rif);
        }
        self.arp_pending.clear();
        self.next_fdb_sweep_ns = sweep_interval(config.switch.fdb_aging_ns).map(|i| now_ns + i);
        self.next_neigh_sweep_ns = sweep_interval(config.switch.neigh_aging_ns).map(|i| now_ns + i);
        self.config = config;
        self.derived = derived;
    }

    /// The running configuration's generation (0 before the first apply).
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The running configuration.
    pub fn config(&self) -> &SwitchConfig {
        &self.config
    }

    /// The port with this SONiC name (`Ethernet0`).
    pub fn port_id(&self, name: &str) -> Option<PortId> {
        self.config.ports.iter().position(|p| p.name == name)
    }

    pub fn port_count(&self) -> usize {
        self.ports.len()
    }

    // ---------------------------------------------------------------------------------------------
    // Time

    /// The next instant the switch needs [`handle_timeout`](Self::handle_timeout) (aging sweeps).
    pub fn poll_at(&self) -> Option<u64> {
        [self.next_fdb_sweep_ns, self.next_neigh_sweep_ns].into_iter().flatten().min()
    }

    /// Runs whatever is due at `now_ns`.
    pub fn handle_timeout(&mut self, now_ns: u64) {
        if self.next_fdb_sweep_ns.is_some_and(|t| t <= now_ns) {
            for (vid, mac) in self.fdb.age(now_ns, self.config.switch.fdb_aging_ns) {
                self.push_event(Event::FdbAged { vid, mac });
            }
            self.next_fdb_sweep_ns = sweep_interval(self.config.switch.fdb_aging_ns).map(|i| now_ns + i);
        }
        if self.next_neigh_sweep_ns.is_some_and(|t| t <= now_ns) {
            for ip in self.neighbors.age(now_ns, self.config.switch.neigh_aging_ns) {
                self.push_event(Event::NeighborAged { ip });
            }
            self.arp_pending.retain(|_, sent| now_ns.saturating_sub(*sent) < ARP_RETRY_NS);
            self.next_neigh_sweep_ns = sweep_interval(self.config.switch.neigh_aging_ns).map(|i| now_ns + i);
        }
    }

    // ---------------------------------------------------------------------------------------------
    // Egress

    /// The port's line is free: the next frame to send on it, if any.
    pub fn poll_transmit(&mut self, port: PortId, _now_ns: u64) -> Option<Transmit> {
        let state = self.ports.get_mut(port)?;
        let (queue, item) = state.egress.dequeue()?;
        let len = item.frame.len() as u64;
        let c = &mut state.counters;
        c.tx_ok += 1;
        c.tx_bytes += len;
        c.queues[usize::from(queue)].packets += 1;
        c.queues[usize::from(queue)].bytes += len;
        Some(Transmit { frame: item.frame, queue })
    }

    /// Frames waiting on one egress queue of a port.
    pub fn queue_depth(&self, port: PortId, queue: u8) -> usize {
        self.ports.get(port).map_or(0, |p| p.egress.len(queue))
    }

    /// Frames waiting on all queues of a port.
    pub fn port_backlog(&self, port: PortId) -> usize {
        self.ports.get(port).map_or(0, |p| p.egress.total_len())
    }

    // ---------------------------------------------------------------------------------------------
    // Observation

    pub fn port_counters(&self, port: PortId) -> Option<&PortCounters> {
        self.ports.get(port).map(|p| &p.counters)
    }

    pub fn ledger(&self) -> FrameLedger {
        self.ledger
    }

    /// A copy of every counter, ports by name.
    pub fn counters(&self) -> CountersDump {
        CountersDump {
            ledger: self.ledger,
            ports: self
                .config
                .ports
                .iter()
                .zip(&self.ports)
                .map(|(p, s)| (p.name.clone(), s.counters.clone()))
                .collect(),
        }
    }

    pub fn fdb(&self) -> &Fdb {
        &self.fdb
    }

    pub fn neighbors(&self) -> &Neighbors {
        &self.neighbors
    }

    /// Removes dynamic FDB entries (all, or of one VLAN / port); returns how many.
    pub fn flush_fdb(&mut self, vid: Option<u16>, port: Option<PortId>) -> usize {
        self.fdb.flush(vid, port)
    }

    /// Removes dynamic neighbour entries; returns how many.
    pub fn flush_neighbors(&mut self) -> usize {
        self.neighbors.flush()
    }

    /// The next event, oldest first.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// Events discarded because nobody polled them in time.
    pub fn events_lost(&self) -> u64 {
        self.events_lost
    }

    fn push_event(&mut self, event: Event) {
        if self.events.len() >= EVENT_QUEUE_LIMIT {
            self.events.pop_front();
            self.events_lost += 1;
        }
        self.events.push_back(event);
    }

    // ---------------------------------------------------------------------------------------------
    // Ingress

    /// A frame (without FCS) arrived on `port`. Frames for a port the configuration does not have are
    /// ignored (the driver only delivers frames of configured ports).
    pub fn handle_frame(&mut self, port: PortId, mut frame: Vec<u8>, now_ns: u64) {
        let Some(port_cfg) = self.config.ports.get(port) else { return };
        self.ledger.received += 1;
        let len = frame.len() as u64;
        let decoded = match wire::decode(&frame) {
            Ok(d) => d,
            Err(e) => return self.drop_ingress(port, DropReason::Malformed(e.layer())),
        };
        if frame.len() > port_cfg.mtu as usize + ethernet::HEADER_LEN + vlan::HEADER_LEN {
            return self.drop_ingress(port, DropReason::ExceedsL2Mtu);
        }
        let counters = &mut self.ports[port].counters;
        counters.rx_ok += 1;
        counters.rx_bytes += len;
        if !port_cfg.admin_up {
            return self.drop_ingress(port, DropReason::PortAdminDown);
        }
        let src_mac = decoded.ethernet.src_addr;
        let dst_mac = decoded.ethernet.dst_addr;
        if src_mac.is_multicast() {
            return self.drop_ingress(port, DropReason::SmacMulticast);
        }
        if let L3::MacControl(_) = decoded.l3 {
            // PFC/PAUSE are consumed by the MAC; honouring them belongs to the PFC model.
            return self.trap(port);
        }
        if dst_mac.is_link_local_reserved() {
            return self.trap(port);
        }

        // Which L2 domain (VLAN) and router interface the frame belongs to.
        let tag = decoded.vlan.filter(|t| t.vid != 0);
        let vid = match tag {
            Some(t) if self.derived.membership.get(&(t.vid, port)) == Some(&true) => Some(t.vid),
            Some(_) => return self.drop_ingress(port, DropReason::IngressVlanFilter),
            None => self.derived.untagged_vlan[port],
        };
        let rif_in = match vid {
            Some(v) => self.derived.rif_by_vlan.get(&v).copied(),
            None => self.derived.rif_by_port[port],
        };
        if vid.is_none() && rif_in.is_none() {
            return self.drop_ingress(port, DropReason::IngressVlanFilter);
        }
        if decoded.vlan.is_some() {
            // Frames travel untagged inside the switch; egress tags them as the port's membership says.
            frame.drain(ethernet::HEADER_LEN - 2..ethernet::HEADER_LEN + vlan::HEADER_LEN - 2);
        }
        if let Some(v) = vid
            && self.fdb.learn(v, src_mac, port, now_ns)
        {
            self.push_event(Event::FdbLearned { vid: v, mac: src_mac, port });
        }

        let udp_dport = decoded.udp().map(|u| u.dst_port);
        let pcp = decoded.vlan.map(|t| t.pcp);
        let class = classify(&self.config.qos[port], pcp, decoded.dscp(), udp_dport);
        let pg = &mut self.ports[port].counters.pgs[usize::from(class.pg)];
        pg.packets += 1;
        pg.bytes += len;
        if class.drop {
            return self.drop_ingress(port, DropReason::BorderRule);
        }
        if let Some(dscp) = class.set_dscp {
            rewrite_dscp(&mut frame, &decoded.l3, dscp);
        }
        let meta = Meta { ingress: Some(port), class, pcp };

        if let L3::Arp(arp) = &decoded.l3 {
            let for_us = self.handle_arp(port, vid, rif_in, arp, now_ns);
            if vid.is_none() || (for_us && dst_mac.is_unicast()) {
                return self.trap(port);
            }
            // A broadcast ARP in a VLAN is also flooded to the other members, as a bridge does.
        }
        if let Some(rif) = rif_in
            && dst_mac == self.config.interfaces[rif].mac
        {
            return self.route(port, frame, &decoded.l3, meta, now_ns);
        }
        match vid {
            Some(v) => self.bridge(port, v, frame, dst_mac, meta, now_ns),
            None => self.drop_ingress(port, DropReason::L2NoForwarding),
        }
    }

    fn drop_ingress(&mut self, port: PortId, reason: DropReason) {
        self.ledger.dropped += 1;
        let c = &mut self.ports[port].counters;
        if reason.is_rx_error() {
            c.rx_err += 1;
        } else {
            c.rx_drp += 1;
        }
        *c.drop_reasons.entry(reason).or_default() += 1;
    }

    fn trap(&mut self, port: PortId) {
        self.ledger.trapped += 1;
        self.ports[port].counters.trapped += 1;
    }

    /// Learns from an ARP packet and answers requests for the switch's addresses. Returns whether the
    /// packet was addressed to the switch.
    fn handle_arp(
        &mut self,
        port: PortId,
        vid: Option<u16>,
        rif_in: Option<RifIndex>,
        arp: &ArpRepr,
        now_ns: u64,
    ) -> bool {
        let Some(rif) = rif_in else { return false };
        let iface = &self.config.interfaces[rif];
        let iface_mac = iface.mac;
        let sender = IpAddr::V4(arp.source_protocol_addr);
        let target = IpAddr::V4(arp.target_protocol_addr);
        let sender_is_ours = iface.addrs.iter().any(|a| a.addr() == sender);
        let sender_on_subnet = iface.addrs.iter().any(|a| a.contains(&sender));
        let target_is_ours = iface.addrs.iter().any(|a| a.addr() == target);
        if sender_on_subnet
            && !sender_is_ours
            && arp.source_hardware_addr.is_unicast()
            && self.neighbors.learn(sender, arp.source_hardware_addr, rif, now_ns)
        {
            self.arp_pending.remove(&sender);
            self.push_event(Event::NeighborLearned { ip: sender, mac: arp.source_hardware_addr });
        }
        match arp.operation {
            ArpOperation::Request if target_is_ours => {
                let reply = ArpRepr {
                    operation: ArpOperation::Reply,
                    source_hardware_addr: iface_mac,
                    source_protocol_addr: arp.target_protocol_addr,
                    target_hardware_addr: arp.source_hardware_addr,
                    target_protocol_addr: arp.source_protocol_addr,
                };
                let frame = build::ethernet(
                    iface_mac,
                    arp.source_hardware_addr,
                    None,
                    EtherType::Arp,
                    &build::arp(&reply),
                );
                self.originate(port, vid, frame, now_ns);
                true
            }
            ArpOperation::Reply => arp.target_hardware_addr == iface_mac,
            _ => false,
        }
    }

    /// Sends an ARP request for an unresolved IPv4 next hop, at most once per [`ARP_RETRY_NS`]. IPv6
    /// neighbours are not discovered (no NDP): they come from the `NEIGH` table.
    fn resolve(&mut self, next_hop: IpAddr, rif: RifIndex, now_ns: u64) {
        let IpAddr::V4(target) = next_hop else { return };
        if self.arp_pending.get(&next_hop).is_some_and(|&t| now_ns.saturating_sub(t) < ARP_RETRY_NS) {
            return;
        }
        self.arp_pending.insert(next_hop, now_ns);
        let iface = &self.config.interfaces[rif];
        let Some(IpAddr::V4(sender)) = iface.addrs.iter().find(|a| a.contains(&next_hop)).map(|a| a.addr())
        else {
            return;
        };
        let request = ArpRepr {
            operation: ArpOperation::Request,
            source_hardware_addr: iface.mac,
            source_protocol_addr: sender,
            target_hardware_addr: EthernetAddress([0; 6]),
            target_protocol_addr: target,
        };
        let frame = build::ethernet(
            iface.mac,
            EthernetAddress::BROADCAST,
            None,
            EtherType::Arp,
            &build::arp(&request),
        );
        match iface.kind {
            RifKind::Port(p) => self.originate(p, None, frame, now_ns),
            RifKind::Vlan(v) => {
                let members: Vec<PortIndex> = self.config.vlans[&v].members.iter().map(|m| m.port).collect();
                for p in members {
                    self.originate(p, Some(v), frame.clone(), now_ns);
                }
            }
        }
    }

    /// Queues a frame the switch itself sends (ARP), on the control queue.
    fn originate(&mut self, port: PortId, vid: Option<u16>, frame: Vec<u8>, now_ns: u64) {
        let class = Classification {
            tc: CONTROL_QUEUE,
            pg: 0,
            queue_override: Some(CONTROL_QUEUE),
            set_dscp: None,
            drop: false,
        };
        self.enqueue(port, vid, frame, Meta { ingress: None, class, pcp: None }, now_ns);
    }

    fn route(&mut self, port: PortId, mut frame: Vec<u8>, l3: &L3, meta: Meta, now_ns: u64) {
        let (dst, ttl, flow) = match l3 {
            L3::Ipv4 { header, l4 } => (
                IpAddr::V4(header.dst_addr),
                header.ttl,
                flow_key(header.src_addr.into(), header.dst_addr.into(), header.protocol.into(), l4),
            ),
            L3::Ipv6 { header, l4 } => (
                IpAddr::V6(header.dst_addr),
                header.hop_limit,
                flow_key(header.src_addr.into(), header.dst_addr.into(), header.next_header.into(), l4),
            ),
            _ => return self.drop_ingress(port, DropReason::NoL3Header),
        };
        let (next_hop, rif) = match self.derived.routes.lookup(dst) {
            None if dst.is_ipv4() => return self.drop_ingress(port, DropReason::Lpm4Miss),
            None => return self.drop_ingress(port, DropReason::Lpm6Miss),
            Some(RouteAction::Local) => return self.trap(port),
            Some(RouteAction::Blackhole) => return self.drop_ingress(port, DropReason::BlackholeRoute),
            Some(RouteAction::Connected(rif)) => (dst, *rif),
            Some(RouteAction::NextHops(hops)) => {
                hops[(flow.hash(self.config.switch.ecmp_hash_seed) % hops.len() as u64) as usize]
            }
        };
        if ttl <= 1 {
            return self.drop_ingress(port, DropReason::Ttl);
        }
        let Some(neighbor) = self.neighbors.lookup(next_hop).copied() else {
            self.resolve(next_hop, rif, now_ns);
            return self.drop_ingress(port, DropReason::UnresolvedNextHop);
        };
        let iface = &self.config.interfaces[rif];
        let (out_mac, out_kind) = (iface.mac, iface.kind);
        decrement_ttl(&mut frame, l3);
        let mut eth = EthernetFrame::new_unchecked(&mut frame[..]);
        eth.set_src_addr(out_mac);
        eth.set_dst_addr(neighbor.mac);
        let ip_len = frame.len() - ethernet::HEADER_LEN;
        match out_kind {
            RifKind::Port(out) => self.forward_routed(port, out, None, frame, ip_len, meta, now_ns),
            RifKind::Vlan(v) => match self.fdb.lookup(v, neighbor.mac).map(|e| e.port) {
                Some(out) => self.forward_routed(port, out, Some(v), frame, ip_len, meta, now_ns),
                None if self.is_lossless_in_vlan(v, meta.class.tc) => {
                    self.drop_ingress(port, DropReason::FdbMissLossless)
                }
                None => match self.config.switch.lossy_fdb_miss_action {
                    FdbMissAction::Drop => self.drop_ingress(port, DropReason::FdbMissLossy),
                    FdbMissAction::Flood => self.flood(port, v, None, frame, meta, now_ns),
                },
            },
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn forward_routed(
        &mut self,
        in_port: PortId,
        out: PortId,
        vid: Option<u16>,
        frame: Vec<u8>,
        ip_len: usize,
        meta: Meta,
        now_ns: u64,
    ) {
        let out_cfg = &self.config.ports[out];
        if !out_cfg.admin_up {
            return self.drop_ingress(in_port, DropReason::EgressPortDown);
        }
        if ip_len > out_cfg.mtu as usize {
            return self.drop_ingress(in_port, DropReason::ExceedsL3Mtu);
        }
        self.ledger.forwarded += 1;
        self.enqueue(out, vid, frame, meta, now_ns);
    }

    fn bridge(
        &mut self,
        port: PortId,
        vid: u16,
        frame: Vec<u8>,
        dst: EthernetAddress,
        meta: Meta,
        now_ns: u64,
    ) {
        if dst.is_multicast() {
            return self.flood(port, vid, Some(port), frame, meta, now_ns);
        }
        match self.fdb.lookup(vid, dst).map(|e| e.port) {
            Some(out) if out == port => self.drop_ingress(port, DropReason::L2LoopbackFilter),
            Some(out) if !self.config.ports[out].admin_up => {
                self.drop_ingress(port, DropReason::EgressPortDown)
            }
            Some(out) => {
                self.ledger.forwarded += 1;
                self.enqueue(out, Some(vid), frame, meta, now_ns);
            }
            None if self.is_lossless_in_vlan(vid, meta.class.tc) => {
                self.drop_ingress(port, DropReason::UnknownUnicastLossless)
            }
            None => self.flood(port, vid, Some(port), frame, meta, now_ns),
        }
    }

    /// Copies a frame to every admin-up member of a VLAN except `exclude`.
    fn flood(
        &mut self,
        in_port: PortId,
        vid: u16,
        exclude: Option<PortId>,
        frame: Vec<u8>,
        meta: Meta,
        now_ns: u64,
    ) {
        let targets: Vec<PortIndex> = self.config.vlans[&vid]
            .members
            .iter()
            .map(|m| m.port)
            .filter(|&p| Some(p) != exclude && self.config.ports[p].admin_up)
            .collect();
        let Some((&last, rest)) = targets.split_last() else {
            return self.drop_ingress(in_port, DropReason::FloodNoMembers);
        };
        self.ledger.forwarded += 1;
        for &p in rest {
            self.enqueue(p, Some(vid), frame.clone(), meta, now_ns);
        }
        self.enqueue(last, Some(vid), frame, meta, now_ns);
    }

    /// A TC is lossless in a VLAN when any member port has it in `pfc_enable`: such traffic is never
    /// flooded, since a flooded lossless packet can pause links it had no business on.
    fn is_lossless_in_vlan(&self, vid: u16, tc: u8) -> bool {
        self.derived.vlan_lossless.get(&vid).is_some_and(|mask| mask & (1 << tc) != 0)
    }

    /// Puts one egress copy on its queue; tags it when it leaves through a tagged VLAN member.
    fn enqueue(&mut self, out: PortId, vid: Option<u16>, mut frame: Vec<u8>, meta: Meta, now_ns: u64) {
        let class = meta.class;
        if let Some(v) = vid
            && self.derived.membership.get(&(v, out)) == Some(&true)
        {
            let pcp = meta.pcp.unwrap_or(class.tc);
            let tci = (u16::from(pcp & 7) << 13) | (v & 0x0fff);
            let mut tag = [0u8; 4];
            tag[..2].copy_from_slice(&u16::from(EtherType::Vlan).to_be_bytes());
            tag[2..].copy_from_slice(&tci.to_be_bytes());
            frame.splice(12..12, tag);
        }
        let queue =
            class.queue_override.unwrap_or(self.config.qos[out].tc_to_queue[usize::from(class.tc)]) & 7;
        if meta.ingress.is_some() {
            self.ledger.copies += 1;
        } else {
            self.ledger.originated += 1;
        }
        let item = QueuedFrame {
            frame,
            ingress_port: meta.ingress,
            tc: class.tc,
            pg: class.pg,
            enqueued_ns: now_ns,
        };
        self.ports[out].egress.enqueue(queue, item);
    }
}

/// How often an aging sweep runs: an eighth of the aging time, at least a second; `None` when disabled.
fn sweep_interval(aging_ns: u64) -> Option<u64> {
    (aging_ns > 0).then(|| (aging_ns / 8).max(1_000_000_000).min(aging_ns))
}

fn flow_key(src: IpAddr, dst: IpAddr, protocol: u8, l4: &L4) -> FlowKey {
    let (src_port, dst_port) = match l4 {
        L4::Udp { header, .. } => (header.src_port, header.dst_port),
        _ => (0, 0),
    };
    FlowKey { src, dst, protocol, src_port, dst_port }
}

/// The frame is untagged here (tags are stripped at ingress), so the IP header starts at 14.
fn decrement_ttl(frame: &mut [u8], l3: &L3) {
    let ip = &mut frame[ethernet::HEADER_LEN..];
    match l3 {
        L3::Ipv4 { .. } => {
            Ipv4Packet::new_unchecked(ip).decrement_ttl();
        }
        L3::Ipv6 { .. } => {
            Ipv6Packet::new_unchecked(ip).decrement_hop_limit();
        }
        _ => {}
    }
}

fn rewrite_dscp(frame: &mut [u8], l3: &L3, dscp: u8) {
    let ip = &mut frame[ethernet::HEADER_LEN..];
    match l3 {
        L3::Ipv4 { .. } => Ipv4Packet::new_unchecked(ip).rewrite_dscp(dscp),
        L3::Ipv6 { .. } => Ipv6Packet::new_unchecked(ip).rewrite_dscp(dscp),
        _ => {}
    }
}
