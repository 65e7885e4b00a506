//! The ingress pipeline: parse, L2 domain and learning, classification, ARP, routing and bridging, down to
//! the egress copies handed to [`Switch::enqueue`](super::Switch).

use super::*;

impl Switch {
    /// A frame (without FCS) arrived on `port`. Frames for a port the configuration does not have are
    /// ignored (the driver only delivers frames of configured ports).
    pub fn handle_frame(&mut self, port: PortId, frame: Vec<u8>, now: Instant) {
        // The ports this frame touched stay marked stale: the next `poll_transmit` (which a driver makes
        // on a touched port) or `handle_timeout` computes them, and `poll_at` computes stale ports as it
        // goes. Refreshing here too cost the real-time path a second computation per frame (~10 %).
        self.receive(port, frame, now);
    }

    #[inline(always)]
    fn receive(&mut self, port: PortId, frame: Vec<u8>, now: Instant) {
        // The common routed packet by its flow entry (`flow.rs`), which hands anything else to
        // `receive_full`.
        self.forward_by_flow(port, frame, now);
    }

    /// Every frame the fast path does not take. Kept out of line: inlined, its stack frame and saved
    /// registers were paid by every frame, the fast path's included.
    #[inline(never)]
    pub(super) fn receive_full(&mut self, port: PortId, mut frame: Vec<u8>, now: Instant) {
        let Some(port_cfg) = self.config.ports.get(port.index()) else { return };
        self.ledger.received += 1;
        let len = frame.len() as u64;
        // As a router: a transport header that does not parse does not stop the packet (see decode_transit).
        // An IP packet is read in place (`wire::transit`); anything else (ARP, MAC Control, other
        // EtherTypes: rare on the data path) is decoded in full.
        let view = match wire::transit(&frame) {
            Ok(v) => v,
            Err(e) => return self.drop_ingress(port, DropReason::Malformed(e.layer())),
        };
        debug_assert!(
            match wire::decode_transit(&frame) {
                Ok(d) => Transit::of(&d) == view,
                Err(_) => view.ip.is_none(),
            },
            "the transit view disagrees with decode_transit"
        );
        let full = match view.ip {
            Some(_) => None,
            None => match wire::decode_transit(&frame) {
                Ok(d) => Some(d),
                Err(e) => return self.drop_ingress(port, DropReason::Malformed(e.layer())),
            },
        };
        if frame.len() > port_cfg.mtu as usize + ethernet::HEADER_LEN + vlan::HEADER_LEN {
            return self.drop_ingress(port, DropReason::ExceedsL2Mtu);
        }
        if let (Some(Decoded { l3: L3::MacControl(repr), .. }), true) = (&full, port_cfg.admin_up) {
            // PFC/PAUSE are consumed by the MAC, never forwarded, and not counted as RX_OK.
            self.ports[port.index()].counters.rx_mac_control += 1;
            self.receive_mac_control(port, repr, now);
            self.keep_control_frame(frame);
            return self.trap(port);
        }
        let counters = &mut self.ports[port.index()].counters;
        counters.rx_ok += 1;
        counters.rx_bytes += len;
        if view.dst_addr.is_multicast() {
            counters.rx_non_ucast += 1;
        }
        if !port_cfg.admin_up {
            return self.drop_ingress(port, DropReason::PortAdminDown);
        }
        let src_mac = view.src_addr;
        let dst_mac = view.dst_addr;
        if src_mac.is_multicast() {
            return self.drop_ingress(port, DropReason::SmacMulticast);
        }
        if dst_mac.is_link_local_reserved() {
            return self.trap(port);
        }

        // Which L2 domain (VLAN) and router interface the frame belongs to.
        let tag = view.vlan.filter(|t| t.vid != 0);
        let vid = match tag {
            Some(t) if self.derived.is_tagged(t.vid, port) => Some(t.vid),
            Some(_) => return self.drop_ingress(port, DropReason::IngressVlanFilter),
            None => self.derived.untagged_vlan[port.index()],
        };
        let rif_in = match vid {
            Some(v) => self.derived.vlan(v).and_then(|info| info.rif),
            None => self.derived.rif_by_port[port.index()],
        };
        if vid.is_none() && rif_in.is_none() {
            return self.drop_ingress(port, DropReason::IngressVlanFilter);
        }
        if view.vlan.is_some() {
            // Frames travel untagged inside the switch; egress tags them as the port's membership says.
            vlan::pop_tag(&mut frame);
        }
        if let Some(v) = vid
            && self.fdb.learn(v, src_mac, port, now)
        {
            self.push_event(Event::FdbLearned { vid: v, mac: src_mac, port: self.port_name(port) });
        }

        let pcp = view.vlan.map(|t| t.pcp);
        let dscp = view.ip.map(|ip| ip.dscp);
        // An IP packet on a port without border rules or a PCP map: its DSCP's entry in the port's table.
        let class = match dscp.and_then(|d| self.derived.dscp_class(port, d)) {
            Some(class) => {
                debug_assert_eq!(
                    class,
                    classify(
                        &self.config.qos[port.index()],
                        pcp,
                        dscp,
                        view.ip.and_then(|ip| ip.udp_ports).map(|p| p.1)
                    ),
                    "the port's DSCP table"
                );
                class
            }
            None => {
                let udp_dport = view.ip.and_then(|ip| ip.udp_ports).map(|(_, dst)| dst);
                classify(&self.config.qos[port.index()], pcp, dscp, udp_dport)
            }
        };
        let pg = &mut self.ports[port.index()].counters.pgs[usize::from(class.pg)];
        pg.packets += 1;
        pg.bytes += len;
        if class.drop {
            return self.drop_ingress(port, DropReason::BorderRule);
        }
        if self.wd_masks[port.index()].dropping_ingress & (1 << class.tc) != 0 {
            self.ports[port.index()].counters.pgs[usize::from(class.pg)].dropped_packets += 1;
            return self.drop_ingress(port, DropReason::PfcWatchdog);
        }
        if let Some(dscp) = class.set_dscp {
            rewrite_dscp(&mut frame, view.ip.as_ref(), dscp);
        }
        let meta = Meta { ingress: Some(port), class, pcp };

        if let Some(Decoded { l3: L3::Arp(arp), .. }) = &full {
            let for_us = self.handle_arp(port, vid, rif_in, arp, now);
            if vid.is_none() || (for_us && dst_mac.is_unicast()) {
                return self.trap(port);
            }
            // A broadcast ARP in a VLAN is also flooded to the other members, as a bridge does.
        }
        if let Some(rif) = rif_in
            && dst_mac == self.config.interfaces[rif.index()].mac
        {
            return self.route(port, frame, view.ip, meta, now);
        }
        match vid {
            Some(v) => self.bridge(port, v, frame, dst_mac, meta, now),
            None => self.drop_ingress(port, DropReason::L2NoForwarding),
        }
    }

    fn drop_ingress(&mut self, port: PortId, reason: DropReason) {
        self.ledger.dropped += 1;
        let c = &mut self.ports[port.index()].counters;
        if reason.is_rx_error() {
            c.rx_err += 1;
        } else {
            c.rx_drp += 1;
        }
        *c.drop_reasons.entry(reason).or_default() += 1;
        self.log_drop(port, reason.as_str(), None);
    }

    fn trap(&mut self, port: PortId) {
        self.ledger.trapped += 1;
        self.ports[port.index()].counters.trapped += 1;
    }

    /// Learns from an ARP packet and answers requests for the switch's addresses. Returns whether the
    /// packet was addressed to the switch.
    fn handle_arp(
        &mut self,
        port: PortId,
        vid: Option<u16>,
        rif_in: Option<RifId>,
        arp: &ArpRepr,
        now: Instant,
    ) -> bool {
        let Some(rif) = rif_in else { return false };
        let iface = &self.config.interfaces[rif.index()];
        let iface_mac = iface.mac;
        let sender = IpAddr::V4(arp.source_protocol_addr);
        let target = IpAddr::V4(arp.target_protocol_addr);
        let sender_is_ours = iface.addrs.iter().any(|a| a.addr() == sender);
        let sender_on_subnet = iface.addrs.iter().any(|a| a.contains(&sender));
        let target_is_ours = iface.addrs.iter().any(|a| a.addr() == target);
        if sender_on_subnet
            && !sender_is_ours
            && arp.source_hardware_addr.is_unicast()
            && self.neighbors.learn(sender, arp.source_hardware_addr, rif, now)
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
                self.originate(port, vid, frame, now);
                true
            }
            ArpOperation::Reply => arp.target_hardware_addr == iface_mac,
            _ => false,
        }
    }

    /// Sends an ARP request for an unresolved IPv4 next hop, at most once per [`ARP_RETRY`]. IPv6
    /// neighbours are not discovered (no NDP): they come from the `NEIGH` table.
    fn resolve(&mut self, next_hop: IpAddr, rif: RifId, now: Instant) {
        let IpAddr::V4(target) = next_hop else { return };
        if self.arp_pending.get(&next_hop).is_some_and(|&t| now.saturating_since(t) < ARP_RETRY) {
            return;
        }
        self.arp_pending.insert(next_hop, now);
        let iface = &self.config.interfaces[rif.index()];
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
            RifKind::Port(p) => self.originate(p, None, frame, now),
            RifKind::Vlan(v) => {
                let members: Vec<PortId> = self.config.vlans[&v].members.iter().map(|m| m.port).collect();
                for p in members {
                    self.originate(p, Some(v), frame.clone(), now);
                }
            }
        }
    }

    /// Queues a frame the switch itself sends (ARP), on the control queue.
    fn originate(&mut self, port: PortId, vid: Option<u16>, frame: Vec<u8>, now: Instant) {
        if !self.ports[port.index()].oper_up {
            // The switch's own ARP has nowhere to go: not queued, not counted.
            return;
        }
        let class = Classification {
            tc: CONTROL_QUEUE,
            pg: 0,
            queue_override: Some(CONTROL_QUEUE),
            set_dscp: None,
            drop: false,
        };
        self.enqueue(port, vid, frame, Meta { ingress: None, class, pcp: None }, now);
    }

    fn route(&mut self, port: PortId, mut frame: Vec<u8>, ip: Option<IpFields>, meta: Meta, now: Instant) {
        let Some(ip) = ip else { return self.drop_ingress(port, DropReason::NoL3Header) };
        let (dst, ttl) = (ip.dst_addr, ip.ttl);
        // The common case in one probe (`nexthop.rs`): a route with one next hop, resolved, its port known.
        // What follows the lookup is what the full way below does in that case.
        if let Some(hop) = self.cached_next_hop(dst) {
            if ttl <= 1 {
                return self.drop_ingress(port, DropReason::Ttl);
            }
            return self.rewrite_and_forward(port, hop, frame, &ip, meta, now);
        }
        let action = self.derived.routes.lookup(dst);
        let cacheable = match action {
            Some(RouteAction::Connected(_)) => true,
            Some(RouteAction::NextHops(hops)) => hops.len() == 1,
            _ => false,
        };
        let (next_hop, rif) = match action {
            None if dst.is_ipv4() => return self.drop_ingress(port, DropReason::Lpm4Miss),
            None => return self.drop_ingress(port, DropReason::Lpm6Miss),
            Some(RouteAction::Local) => return self.trap(port),
            Some(RouteAction::Blackhole) => return self.drop_ingress(port, DropReason::BlackholeRoute),
            Some(RouteAction::Connected(rif)) => (dst, *rif),
            Some(RouteAction::NextHops(hops)) => self.ecmp_member(hops, &ip),
        };
        if ttl <= 1 {
            return self.drop_ingress(port, DropReason::Ttl);
        }
        let Some(neighbor) = self.neighbors.lookup(next_hop).copied() else {
            self.resolve(next_hop, rif, now);
            return self.drop_ingress(port, DropReason::UnresolvedNextHop);
        };
        let iface = &self.config.interfaces[rif.index()];
        let (src_mac, out_kind) = (iface.mac, iface.kind);
        let (out, vid) = match out_kind {
            RifKind::Port(out) => (out, None),
            RifKind::Vlan(v) => match self.fdb.lookup(v, neighbor.mac).map(|e| e.port) {
                Some(out) => (out, Some(v)),
                None => {
                    decrement_ttl(&mut frame, &ip);
                    let mut eth = EthernetFrame::new_unchecked(&mut frame[..]);
                    eth.set_src_addr(src_mac);
                    eth.set_dst_addr(neighbor.mac);
                    return self.fdb_miss(port, v, frame, meta, now);
                }
            },
        };
        let hop = NextHop { out, vid, src_mac, dst_mac: neighbor.mac };
        if cacheable {
            self.cache_next_hop(dst, hop);
        }
        self.rewrite_and_forward(port, hop, frame, &ip, meta, now);
    }

    /// The member of a next-hop group a packet takes. A next hop behind a port whose link is down leaves
    /// the group, as orchagent removes a next-hop group member when its port goes oper down: the flows
    /// rehash over the members left (all of them while every member is up, with no allocation on that
    /// path). The flow fast path (`flow.rs`) chooses the same way from its entry; debug builds compare.
    pub(super) fn ecmp_member(&self, hops: &[(IpAddr, RifId)], ip: &IpFields) -> (IpAddr, RifId) {
        let live = |&&(_, rif): &&(IpAddr, RifId)| match self.config.interfaces[rif.index()].kind {
            RifKind::Port(p) => self.ports[p.index()].oper_up,
            RifKind::Vlan(_) => true,
        };
        let up = hops.iter().filter(live).count();
        let (src_port, dst_port) = ip.udp_ports.unwrap_or((0, 0));
        let flow =
            FlowKey { src: ip.src_addr, dst: ip.dst_addr, protocol: ip.protocol.into(), src_port, dst_port };
        let hash = flow.hash(self.config.switch.ecmp_hash_seed);
        if up == hops.len() || up == 0 {
            hops[(hash % hops.len() as u64) as usize]
        } else {
            *hops.iter().filter(live).nth((hash % up as u64) as usize).expect("up > 0 members")
        }
    }

    /// A routed packet's next hop is known: TTL and MACs rewritten, on to its egress port.
    fn rewrite_and_forward(
        &mut self,
        port: PortId,
        hop: NextHop,
        mut frame: Vec<u8>,
        ip: &IpFields,
        meta: Meta,
        now: Instant,
    ) {
        decrement_ttl(&mut frame, ip);
        let mut eth = EthernetFrame::new_unchecked(&mut frame[..]);
        eth.set_src_addr(hop.src_mac);
        eth.set_dst_addr(hop.dst_mac);
        let ip_len = frame.len() - ethernet::HEADER_LEN;
        self.forward_routed(port, hop.out, hop.vid, frame, ip_len, meta, now)
    }

    /// A routed packet's neighbour has no FDB entry in its VLAN: dropped or flooded as configured for its
    /// class (lossless traffic is never flooded by default).
    fn fdb_miss(&mut self, port: PortId, vid: u16, frame: Vec<u8>, meta: Meta, now: Instant) {
        if self.is_lossless_in_vlan(vid, meta.class.tc) {
            match self.config.switch.lossless_fdb_miss_action {
                FdbMissAction::Drop => self.drop_ingress(port, DropReason::FdbMissLossless),
                FdbMissAction::Flood => self.flood(port, vid, None, frame, meta, now),
            }
        } else {
            match self.config.switch.lossy_fdb_miss_action {
                FdbMissAction::Drop => self.drop_ingress(port, DropReason::FdbMissLossy),
                FdbMissAction::Flood => self.flood(port, vid, None, frame, meta, now),
            }
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
        now: Instant,
    ) {
        if !self.port_up(out) {
            return self.drop_ingress(in_port, DropReason::EgressPortDown);
        }
        if ip_len > self.config.ports[out.index()].mtu as usize {
            return self.drop_ingress(in_port, DropReason::ExceedsL3Mtu);
        }
        self.deliver([(out, vid, frame)], meta, now);
    }

    fn bridge(
        &mut self,
        port: PortId,
        vid: u16,
        frame: Vec<u8>,
        dst: EthernetAddress,
        meta: Meta,
        now: Instant,
    ) {
        if dst.is_multicast() {
            return self.flood(port, vid, Some(port), frame, meta, now);
        }
        match self.fdb.lookup(vid, dst).map(|e| e.port) {
            Some(out) if out == port => self.drop_ingress(port, DropReason::L2LoopbackFilter),
            Some(out) if !self.port_up(out) => self.drop_ingress(port, DropReason::EgressPortDown),
            Some(out) => self.deliver([(out, Some(vid), frame)], meta, now),
            None if self.is_lossless_in_vlan(vid, meta.class.tc) => {
                self.drop_ingress(port, DropReason::UnknownUnicastLossless)
            }
            None => self.flood(port, vid, Some(port), frame, meta, now),
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
        now: Instant,
    ) {
        let targets: Vec<PortId> = self.config.vlans[&vid]
            .members
            .iter()
            .map(|m| m.port)
            .filter(|&p| Some(p) != exclude && self.port_up(p))
            .collect();
        if targets.is_empty() {
            return self.drop_ingress(in_port, DropReason::FloodNoMembers);
        }
        let mut copies: Vec<_> = targets.iter().map(|&p| (p, Some(vid), frame.clone())).collect();
        if let Some(last) = copies.last_mut() {
            last.2 = frame;
        }
        self.deliver(copies, meta, now);
    }

    /// A TC is lossless in a VLAN when any member port has it in `pfc_enable`: such traffic is never
    /// flooded, since a flooded lossless packet can pause links it had no business on.
    fn is_lossless_in_vlan(&self, vid: u16, tc: u8) -> bool {
        self.derived.vlan(vid).is_some_and(|info| info.lossless & (1 << tc) != 0)
    }
}

/// The frame is untagged here (tags are stripped at ingress), so the IP header starts at 14.
fn decrement_ttl(frame: &mut [u8], ip: &IpFields) {
    let header = &mut frame[ethernet::HEADER_LEN..];
    if ip.dst_addr.is_ipv4() {
        Ipv4Packet::new_unchecked(header).decrement_ttl();
    } else {
        Ipv6Packet::new_unchecked(header).decrement_hop_limit();
    }
}

/// The frame is untagged here too (rewritten after the tag was popped); nothing to do for a non-IP frame.
fn rewrite_dscp(frame: &mut [u8], ip: Option<&IpFields>, dscp: u8) {
    let Some(ip) = ip else { return };
    let header = &mut frame[ethernet::HEADER_LEN..];
    if ip.dst_addr.is_ipv4() {
        Ipv4Packet::new_unchecked(header).rewrite_dscp(dscp);
    } else {
        Ipv6Packet::new_unchecked(header).rewrite_dscp(dscp);
    }
}
