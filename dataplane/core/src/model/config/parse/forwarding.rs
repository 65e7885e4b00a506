//! The forwarding tables: `VLAN`, `VLAN_MEMBER`, `INTERFACE`, `VLAN_INTERFACE`, `NEIGH`, `STATIC_ROUTE`
//! and `FDB`.

use super::*;

// VLANs and router interfaces.
impl<'a> Compiler<'a> {
    pub(super) fn vlans(&mut self) -> Vlans {
        let mut vlans = Vlans { by_vid: BTreeMap::new(), macs: BTreeMap::new() };
        for e in entries(self.db, "VLAN") {
            let Some(vid) = self.parse_key(e, e.key, parse_vlan_name) else { continue };
            self.check_fields(e, VLAN_FIELDS);
            let vlanid = self.optional(e, "vlanid", |v| parse_number(v, "a VLAN ID", 1, 4094));
            if let Some(id) = vlanid
                && id != vid
            {
                self.field_error(e, "vlanid", format!("vlanid {id} does not match the name {}", e.key));
            }
            if let Some(mac) = self.optional(e, "mac", parse_unicast_mac) {
                vlans.macs.insert(vid, mac);
            }
            vlans.by_vid.insert(vid, VlanConfig { name: e.key.to_owned(), vid, members: Vec::new() });
        }
        vlans
    }

    /// `VLAN_MEMBER|Vlan<id>|<port>`: `tagging_mode`; a port is untagged in one VLAN at most.
    pub(super) fn vlan_members(&mut self, ports: &PortMap, vlans: &mut Vlans) {
        let mut untagged_in: HashMap<PortId, &str> = HashMap::new();
        for e in entries(self.db, "VLAN_MEMBER") {
            let Some((vlan_name, port_name)) = self.split_key(e, "Vlan<id>|<port>") else { continue };
            self.check_fields(e, &["tagging_mode"]);
            let modes = [("untagged", false), ("tagged", true)];
            let tagged = self.optional(e, "tagging_mode", |v| parse_keyword(v, &modes));
            let vid = self.parse_key(e, vlan_name, |n| find_vlan(vlans, n));
            let port = self.parse_key(e, port_name, |n| find_port(ports, n));
            let (Some(vid), Some(port)) = (vid, port) else { continue };
            let tagged = tagged.unwrap_or(false);
            if !tagged && let Some(first) = untagged_in.insert(port, vlan_name) {
                let message = format!(
                    "{port_name} is already an untagged member of {first}; it can be untagged in one VLAN only"
                );
                self.field_error(e, "tagging_mode", message);
                continue;
            }
            if let Some(vlan) = vlans.by_vid.get_mut(&vid) {
                vlan.members.push(VlanMember { port, tagged });
            }
        }
        for vlan in vlans.by_vid.values_mut() {
            vlan.members.sort_by_key(|m| m.port);
        }
    }

    /// One interface per routed port (`INTERFACE`), in port order, then per VLAN (`VLAN_INTERFACE`) by VID.
    pub(super) fn router_interfaces(
        &mut self,
        ports: &[PortConfig],
        port_map: &PortMap,
        vlans: &Vlans,
        device_mac: EthernetAddress,
    ) -> Vec<RouterInterface> {
        let routed = self.routed_ports(port_map, vlans);
        let vlan_rifs = self.vlan_interfaces(vlans);
        let port_rifs = routed.iter().map(|(&port, addrs)| {
            let p = &ports[port.index()];
            (p.name.clone(), RifKind::Port(port), p.mac, addrs)
        });
        let vlan_rifs = vlan_rifs.iter().map(|(vid, addrs)| {
            let mac = vlans.macs.get(vid).copied().unwrap_or(device_mac);
            (vlans.by_vid[vid].name.clone(), RifKind::Vlan(*vid), mac, addrs)
        });
        let (rifs, written): (Vec<RouterInterface>, Vec<&Vec<WrittenAddr>>) = port_rifs
            .chain(vlan_rifs)
            .map(|(name, kind, mac, addrs)| {
                (RouterInterface { name, kind, mac, addrs: addrs.iter().map(|a| a.net).collect() }, addrs)
            })
            .unzip();
        self.check_addresses(&rifs, &written);
        rifs
    }

    /// `INTERFACE|<port>` and `INTERFACE|<port>|<addr>`, by port.
    fn routed_ports(&mut self, ports: &PortMap, vlans: &Vlans) -> BTreeMap<PortId, Vec<WrittenAddr<'a>>> {
        let member_of: HashMap<PortId, &str> =
            vlans.by_vid.values().flat_map(|v| v.members.iter().map(|m| (m.port, v.name.as_str()))).collect();
        let mut routed: BTreeMap<PortId, Vec<WrittenAddr>> = BTreeMap::new();
        for e in entries(self.db, "INTERFACE") {
            let (name, addr) = split_interface_key(e.key);
            let Some(port) = self.parse_key(e, name, |n| find_port(ports, n)) else { continue };
            let first_entry = !routed.contains_key(&port);
            if first_entry && let Some(vlan) = member_of.get(&port) {
                self.error(
                    e,
                    "",
                    name,
                    format!("{name} is a member of {vlan}, so it cannot be a routed port"),
                );
            }
            let addrs = routed.entry(port).or_default();
            if let Some(text) = addr
                && let Some(net) = self.parse_key(e, text, parse_interface_addr)
            {
                addrs.push(WrittenAddr { net, entry: e, text });
            }
        }
        routed
    }

    /// `VLAN_INTERFACE|Vlan<id>` and `VLAN_INTERFACE|Vlan<id>|<addr>`, by VID.
    fn vlan_interfaces(&mut self, vlans: &Vlans) -> BTreeMap<u16, Vec<WrittenAddr<'a>>> {
        let mut rifs: BTreeMap<u16, Vec<WrittenAddr>> = BTreeMap::new();
        for e in entries(self.db, "VLAN_INTERFACE") {
            let (name, addr) = split_interface_key(e.key);
            let Some(vid) = self.parse_key(e, name, |n| find_vlan(vlans, n)) else { continue };
            let addrs = rifs.entry(vid).or_default();
            if let Some(text) = addr
                && let Some(net) = self.parse_key(e, text, parse_interface_addr)
            {
                addrs.push(WrittenAddr { net, entry: e, text });
            }
        }
        rifs
    }

    /// An address is assigned once; subnets of different interfaces must not overlap (the later one is
    /// reported). Overlapping subnets on one interface are secondary addresses and are fine.
    fn check_addresses(&mut self, rifs: &[RouterInterface], written: &[&Vec<WrittenAddr>]) {
        let mut seen: Vec<(RifId, IpNet)> = Vec::new();
        for (rif, addrs) in written.iter().enumerate() {
            let rif = RifId::new(rif);
            for a in addrs.iter() {
                if let Some(&(other, _)) = seen.iter().find(|(_, n)| n.addr() == a.net.addr()) {
                    let message = format!(
                        "address {} is already assigned to {}",
                        a.net.addr(),
                        rifs[other.index()].name
                    );
                    self.error(a.entry, "", a.text, message);
                } else if let Some(&(other, net)) =
                    seen.iter().find(|&&(r, n)| r != rif && overlaps(n, a.net))
                {
                    let message = format!(
                        "subnet {} of {} overlaps subnet {} of {}",
                        a.net.trunc(),
                        rifs[rif.index()].name,
                        net.trunc(),
                        rifs[other.index()].name
                    );
                    self.error(a.entry, "", a.text, message);
                }
                seen.push((rif, a.net));
            }
        }
    }
}

// Neighbours, routes and FDB entries.
impl<'a> Compiler<'a> {
    pub(super) fn neighbors(&mut self, rifs: &[RouterInterface], rif_map: &RifMap) -> Vec<StaticNeighbor> {
        entries(self.db, "NEIGH").filter_map(|e| self.neighbor(e, rifs, rif_map)).collect()
    }

    /// `NEIGH|<interface>|<ip>`: `neigh` (MAC), `family`; the IP must be on one of the interface's subnets.
    fn neighbor(
        &mut self,
        e: Entry<'a>,
        rifs: &[RouterInterface],
        rif_map: &RifMap,
    ) -> Option<StaticNeighbor> {
        let (ifname, ip_text) = self.split_key(e, "<interface>|<ip>")?;
        self.check_fields(e, &["neigh", "family"]);
        let rif = self.parse_key(e, ifname, |n| find_rif(rif_map, n));
        let ip = self.parse_key(e, ip_text, parse_ip);
        let mac = self.required(e, "neigh", parse_unicast_mac);
        let families = [("IPv4", Family::V4), ("IPv6", Family::V6)];
        let family = self.optional(e, "family", |v| parse_keyword(v, &families));
        let (rif, ip) = (rif?, ip?);
        if family.is_some_and(|f| f != Family::of(ip)) {
            let written = e.get("family").unwrap_or_default();
            self.field_error(e, "family", format!("family {written} does not match the address {ip}"));
        }
        if !rifs[rif.index()].addrs.iter().any(|net| net.contains(&ip)) {
            self.error(e, "", ip_text, format!("{ip} is on no subnet of {ifname}"));
            return None;
        }
        Some(StaticNeighbor { rif, ip, mac: mac? })
    }

    pub(super) fn static_routes(&mut self, rifs: &[RouterInterface], rif_map: &RifMap) -> Vec<StaticRoute> {
        let mut routes: BTreeMap<IpNet, (&str, StaticRoute)> = BTreeMap::new();
        for e in entries(self.db, "STATIC_ROUTE") {
            let Some(route) = self.static_route(e, rifs, rif_map) else { continue };
            match routes.entry(route.prefix) {
                Slot::Vacant(slot) => {
                    slot.insert((e.key, route));
                }
                Slot::Occupied(first) => {
                    let message =
                        format!("{} is already routed by STATIC_ROUTE|{}", route.prefix, first.get().0);
                    self.error(e, "", e.key, message);
                }
            }
        }
        routes.into_values().map(|(_, route)| route).collect()
    }

    /// `STATIC_ROUTE|<prefix>` or `STATIC_ROUTE|default|<prefix>`.
    fn static_route(
        &mut self,
        e: Entry<'a>,
        rifs: &[RouterInterface],
        rif_map: &RifMap,
    ) -> Option<StaticRoute> {
        let prefix_text = match e.key.split_once('|') {
            None => e.key,
            Some(("default", prefix)) => prefix,
            Some((vrf, _)) => {
                self.error(e, "", vrf, format!("VRF {vrf:?} is not supported (only the default VRF is)"));
                return None;
            }
        };
        self.check_fields(e, STATIC_ROUTE_FIELDS);
        let written = self.parse_key(e, prefix_text, parse_prefix)?;
        let prefix = written.trunc();
        if prefix != written {
            self.warn(e, "", prefix_text, format!("{written} has host bits set; read as {prefix}"));
        }
        let blackhole = self.optional(e, "blackhole", parse_bool);
        if blackhole.is_none() && e.get("blackhole").is_some() {
            return None;
        }
        if blackhole == Some(true) {
            if let Some(nexthop) = e.get("nexthop").filter(|v| !v.is_empty()) {
                self.warn(e, "nexthop", nexthop, "ignored: a blackhole route has no next hops");
            }
            return Some(StaticRoute { prefix, nexthops: Vec::new(), blackhole: true });
        }
        let nexthops = self.next_hops(e, prefix, rifs, rif_map)?;
        Some(StaticRoute { prefix, nexthops, blackhole: false })
    }

    /// `nexthop` and the optional `ifname` of the same length (an empty `ifname` item resolves by subnet).
    fn next_hops(
        &mut self,
        e: Entry<'a>,
        prefix: IpNet,
        rifs: &[RouterInterface],
        rif_map: &RifMap,
    ) -> Option<Vec<NextHop>> {
        let ips: Vec<&str> = self.require(e, "nexthop")?.split(',').collect();
        let ifnames: Option<Vec<&str>> = e.get("ifname").map(|v| v.split(',').collect());
        if let Some(ifnames) = &ifnames
            && ifnames.len() != ips.len()
        {
            let written = e.get("ifname").unwrap_or_default();
            let message =
                format!("{written:?} names {} interfaces for {} next hops", ifnames.len(), ips.len());
            self.field_error(e, "ifname", message);
            return None;
        }
        let mut hops = Vec::new();
        for (i, ip_text) in ips.iter().enumerate() {
            let ifname = ifnames.as_ref().map(|names| names[i]).filter(|name| !name.is_empty());
            match resolve_next_hop(ip_text, ifname, prefix, rifs, rif_map) {
                Ok(hop) => hops.push(hop),
                Err((field, message)) => self.field_error(e, field, message),
            }
        }
        (hops.len() == ips.len()).then_some(hops)
    }

    pub(super) fn static_fdb(
        &mut self,
        ports: &[PortConfig],
        port_map: &PortMap,
        vlans: &Vlans,
    ) -> Vec<StaticFdb> {
        let mut fdb: BTreeMap<(u16, EthernetAddress), (&str, StaticFdb)> = BTreeMap::new();
        for e in entries(self.db, "FDB") {
            let Some(entry) = self.static_fdb_entry(e, ports, port_map, vlans) else { continue };
            match fdb.entry((entry.vid, entry.mac)) {
                Slot::Vacant(slot) => {
                    slot.insert((e.key, entry));
                }
                Slot::Occupied(first) => {
                    let message = format!("{} is already in the FDB as FDB|{}", entry.mac, first.get().0);
                    self.error(e, "", e.key, message);
                }
            }
        }
        fdb.into_values().map(|(_, entry)| entry).collect()
    }

    /// `FDB|Vlan<id>|<mac>`: `port`, a member of the VLAN; `type` static or dynamic (both never age here).
    fn static_fdb_entry(
        &mut self,
        e: Entry<'a>,
        ports: &[PortConfig],
        port_map: &PortMap,
        vlans: &Vlans,
    ) -> Option<StaticFdb> {
        let (vlan_name, mac_text) = self.split_key(e, "Vlan<id>|<mac>")?;
        self.check_fields(e, &["port", "type"]);
        let vid = self.parse_key(e, vlan_name, |n| find_vlan(vlans, n));
        let mac = self.parse_key(e, mac_text, parse_unicast_mac);
        self.optional(e, "type", |v| parse_keyword(v, &[("static", ()), ("dynamic", ())]));
        let port = self.required(e, "port", |v| find_port(port_map, v));
        let (vid, mac, port) = (vid?, mac?, port?);
        if !vlans.by_vid[&vid].members.iter().any(|m| m.port == port) {
            self.field_error(
                e,
                "port",
                format!("{} is not a member of {vlan_name}", ports[port.index()].name),
            );
            return None;
        }
        Some(StaticFdb { vid, mac, port })
    }
}
