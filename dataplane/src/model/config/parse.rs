//! The configuration compiler: [`ConfigDb`] (SONiC CONFIG_DB, every value a string) in, [`SwitchConfig`] out.
//!
//! Tables are read in dependency order (ports, VLANs, router interfaces, then what refers to them), one
//! small function per table. Every finding is collected in a [`Compiler`] and located as SONiC locates it,
//! `TABLE|key|field`, with the value as written; nothing stops at the first error, and an entry that
//! cannot be resolved is left out so that it does not cause further errors elsewhere.
//!
//! Cross-table references are accepted in both of SONiC's syntaxes, `AZURE` and the pre-202111
//! `[DSCP_TO_TC_MAP|AZURE]` (sonic.md §1); `PORT_QOS_MAP` keys may join several ports with commas.
//! Tables that later versions of the model enforce ([`DEFERRED_TABLES`]) are accepted without comment;
//! any other table the compiler does not know is a warning, as is an unknown field.

use super::{
    BorderRule, Compiled, ConfigDb, ConfigErrors, ConfigIssue, FdbMissAction, NS_PER_SEC, NextHop,
    PortConfig, PortIndex, PortQos, RifIndex, RifKind, RouterInterface, StaticFdb, StaticNeighbor,
    StaticRoute, SwitchConfig, SwitchSettings, VlanConfig, VlanMember,
};
use crate::wire::EthernetAddress;
use ipnet::IpNet;
use std::collections::btree_map::Entry as Slot;
use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;

/// Tables the next versions of the model validate and use (buffers, queues, scheduling, WRED, PFC
/// watchdog). They are accepted as they are, without any issue, until then.
const DEFERRED_TABLES: &[&str] = &[
    "BUFFER_POOL",
    "BUFFER_PROFILE",
    "BUFFER_PG",
    "BUFFER_QUEUE",
    "BUFFER_PORT_INGRESS_PROFILE_LIST",
    "BUFFER_PORT_EGRESS_PROFILE_LIST",
    "QUEUE",
    "SCHEDULER",
    "WRED_PROFILE",
    "PFC_WD",
    "CABLE_LENGTH",
    "DEFAULT_LOSSLESS_BUFFER_PARAMETER",
    "LOSSLESS_TRAFFIC_PATTERN",
    "BUFFER_ASIC",
];

/// SONiC tables the model has no use for but that a SONiC QoS config routinely contains:
/// `TC_TO_DSCP_MAP` is what `PORT_QOS_MAP|tc_to_dscp_map` refers to.
const IGNORED_TABLES: &[&str] = &["TC_TO_DSCP_MAP"];

/// Tables this compiler reads.
const COMPILED_TABLES: &[&str] = &[
    "DEVICE_METADATA",
    "SWITCH",
    "PORT",
    "VLAN",
    "VLAN_MEMBER",
    "INTERFACE",
    "VLAN_INTERFACE",
    "NEIGH",
    "STATIC_ROUTE",
    "FDB",
    "DSCP_TO_TC_MAP",
    "DOT1P_TO_TC_MAP",
    "TC_TO_QUEUE_MAP",
    "TC_TO_PRIORITY_GROUP_MAP",
    "MAP_PFC_PRIORITY_TO_QUEUE",
    "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP",
    "PORT_QOS_MAP",
    "BORDER_RULE",
];

/// A locally administered address ("LS" = Lossless) for configs that set no `DEVICE_METADATA|localhost|mac`.
const DEFAULT_DEVICE_MAC: EthernetAddress = EthernetAddress([0x02, 0x4c, 0x53, 0x00, 0x00, 0x01]);
/// SONiC's default port MTU.
const DEFAULT_MTU: u32 = 9100;
const MAX_AGING_SECS: u64 = 1_000_000;

const SWITCH_FIELDS: &[&str] =
    &["fdb_aging_time", "neigh_aging_time", "lossy_fdb_miss_action", "ecmp_hash_seed"];
const PORT_FIELDS: &[&str] = &[
    "speed",
    "mtu",
    "mac",
    "admin_status",
    "alias",
    "netdev",
    // Known to SONiC, meaningless to the model.
    "index",
    "lanes",
    "fec",
    "autoneg",
    "description",
    "pfc_asym",
    "tpid",
    "parent_port",
    "role",
];
const VLAN_FIELDS: &[&str] =
    &["vlanid", "mac", "admin_status", "mtu", "dhcp_servers", "dhcpv6_servers", "members", "description"];
const STATIC_ROUTE_FIELDS: &[&str] =
    &["nexthop", "ifname", "blackhole", "distance", "nexthop-vrf", "advertise", "bfd"];
const PORT_QOS_FIELDS: &[&str] = &[
    "dscp_to_tc_map",
    "dot1p_to_tc_map",
    "tc_to_queue_map",
    "tc_to_pg_map",
    "pfc_to_queue_map",
    "pfc_to_pg_map",
    "pfc_enable",
    "pfcwd_sw_enable",
    "scheduler",
    "tc_to_dscp_map",
];
const BORDER_RULE_FIELDS: &[&str] = &["udp_dport", "dscp", "set_dscp", "set_queue", "packet_action"];

/// One of the QoS map tables and the `PORT_QOS_MAP` field that refers to it.
struct MapSpec {
    field: &'static str,
    table: &'static str,
    /// What the map's keys are, for messages ("DSCP"), and the largest one.
    from: &'static str,
    from_max: u8,
    /// What the map's values (0..7) are, for messages.
    to: &'static str,
    /// Unlisted keys map to themselves (else to 0), as in [`PortQos::default`].
    identity_default: bool,
}

const DSCP_TO_TC: MapSpec = MapSpec {
    field: "dscp_to_tc_map",
    table: "DSCP_TO_TC_MAP",
    from: "a DSCP",
    from_max: 63,
    to: "a TC",
    identity_default: false,
};
const DOT1P_TO_TC: MapSpec = MapSpec {
    field: "dot1p_to_tc_map",
    table: "DOT1P_TO_TC_MAP",
    from: "a PCP",
    from_max: 7,
    to: "a TC",
    identity_default: false,
};
const TC_TO_QUEUE: MapSpec = MapSpec {
    field: "tc_to_queue_map",
    table: "TC_TO_QUEUE_MAP",
    from: "a TC",
    from_max: 7,
    to: "a queue",
    identity_default: true,
};
const TC_TO_PG: MapSpec = MapSpec {
    field: "tc_to_pg_map",
    table: "TC_TO_PRIORITY_GROUP_MAP",
    from: "a TC",
    from_max: 7,
    to: "a priority group",
    identity_default: false,
};
const PFC_TO_QUEUE: MapSpec = MapSpec {
    field: "pfc_to_queue_map",
    table: "MAP_PFC_PRIORITY_TO_QUEUE",
    from: "a PFC priority",
    from_max: 7,
    to: "a queue",
    identity_default: true,
};
const PFC_TO_PG: MapSpec = MapSpec {
    field: "pfc_to_pg_map",
    table: "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP",
    from: "a PFC priority",
    from_max: 7,
    to: "a priority group",
    identity_default: true,
};
const MAP_SPECS: [&MapSpec; 6] =
    [&DSCP_TO_TC, &DOT1P_TO_TC, &TC_TO_QUEUE, &TC_TO_PG, &PFC_TO_QUEUE, &PFC_TO_PG];

/// Compiles a whole CONFIG_DB. On success the warnings come with the config; on failure every error found.
pub fn compile(db: &ConfigDb) -> Result<Compiled, ConfigErrors> {
    let mut cx = Compiler { db, errors: Vec::new(), warnings: Vec::new() };
    cx.check_tables();
    let device_mac = cx.device_mac();
    let switch = cx.switch_settings();
    let ports = cx.ports(device_mac);
    let port_map: PortMap = ports.iter().enumerate().map(|(i, p)| (p.name.as_str(), i)).collect();
    let mut vlans = cx.vlans();
    cx.vlan_members(&port_map, &mut vlans);
    let interfaces = cx.router_interfaces(&ports, &port_map, &vlans, device_mac);
    let rif_map: RifMap = interfaces.iter().enumerate().map(|(i, r)| (r.name.as_str(), i)).collect();
    let neighbors = cx.neighbors(&interfaces, &rif_map);
    let routes = cx.static_routes(&interfaces, &rif_map);
    let fdb = cx.static_fdb(&ports, &port_map, &vlans);
    let maps = cx.qos_maps();
    let mut qos = cx.port_qos(&port_map, ports.len(), &maps);
    cx.border_rules(&port_map, &mut qos);
    let config = SwitchConfig {
        device_mac,
        switch,
        ports,
        vlans: vlans.by_vid,
        interfaces,
        neighbors,
        routes,
        fdb,
        qos,
    };
    cx.finish(config)
}

type Fields = BTreeMap<String, String>;
type PortMap<'p> = HashMap<&'p str, PortIndex>;
type RifMap<'r> = HashMap<&'r str, RifIndex>;
/// Parsed QoS maps by table and name, each with all its entries (unlisted ones at their default).
type QosMaps<'a> = HashMap<&'static str, HashMap<&'a str, Vec<u8>>>;

/// One `TABLE|key` entry of the input.
#[derive(Clone, Copy)]
struct Entry<'a> {
    table: &'a str,
    key: &'a str,
    fields: &'a Fields,
}

impl<'a> Entry<'a> {
    fn get(&self, field: &str) -> Option<&'a str> {
        self.fields.get(field).map(String::as_str)
    }
}

fn entries<'a>(db: &'a ConfigDb, table: &'a str) -> impl Iterator<Item = Entry<'a>> {
    db.tables.get(table).into_iter().flatten().map(move |(key, fields)| Entry { table, key, fields })
}

/// The VLAN table, with the router MACs set by `VLAN|<name>|mac` (used by the VLAN's interface).
struct Vlans {
    by_vid: BTreeMap<u16, VlanConfig>,
    macs: BTreeMap<u16, EthernetAddress>,
}

/// A router interface address and where it was written, for the overlap checks.
struct WrittenAddr<'a> {
    net: IpNet,
    entry: Entry<'a>,
    text: &'a str,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Family {
    V4,
    V6,
}

impl Family {
    fn of(ip: IpAddr) -> Family {
        if ip.is_ipv4() { Family::V4 } else { Family::V6 }
    }
}

/// Collects issues while the tables are compiled.
struct Compiler<'a> {
    db: &'a ConfigDb,
    errors: Vec<ConfigIssue>,
    warnings: Vec<ConfigIssue>,
}

// Reporting helpers.
impl<'a> Compiler<'a> {
    fn error(&mut self, e: Entry<'_>, field: &str, value: &str, message: impl Into<String>) {
        self.errors.push(ConfigIssue::new(e.table, e.key, field, value, message));
    }

    fn warn(&mut self, e: Entry<'_>, field: &str, value: &str, message: impl Into<String>) {
        self.warnings.push(ConfigIssue::new(e.table, e.key, field, value, message));
    }

    /// An error about a field, quoting its value as written.
    fn field_error(&mut self, e: Entry<'_>, field: &str, message: impl Into<String>) {
        self.error(e, field, e.get(field).unwrap_or_default(), message);
    }

    /// Reports a failed parse of `value` (written at `field`, or in the key when `field` is empty).
    fn report<T>(&mut self, e: Entry<'_>, field: &str, value: &str, result: Result<T, String>) -> Option<T> {
        result.map_err(|message| self.error(e, field, value, message)).ok()
    }

    /// Parses an optional field; a malformed value is reported and read as absent.
    fn optional<T>(
        &mut self,
        e: Entry<'_>,
        field: &str,
        parse: impl FnOnce(&str) -> Result<T, String>,
    ) -> Option<T> {
        let value = e.get(field)?;
        self.report(e, field, value, parse(value))
    }

    /// The value of a mandatory field, reporting its absence.
    fn require(&mut self, e: Entry<'a>, field: &str) -> Option<&'a str> {
        let value = e.get(field);
        if value.is_none() {
            self.error(e, field, "", format!("{field} is required"));
        }
        value
    }

    fn required<T>(
        &mut self,
        e: Entry<'a>,
        field: &str,
        parse: impl FnOnce(&str) -> Result<T, String>,
    ) -> Option<T> {
        let value = self.require(e, field)?;
        self.report(e, field, value, parse(value))
    }

    /// Parses one part of an entry's key.
    fn parse_key<T>(
        &mut self,
        e: Entry<'_>,
        part: &str,
        parse: impl FnOnce(&str) -> Result<T, String>,
    ) -> Option<T> {
        self.report(e, "", part, parse(part))
    }

    /// Splits a two-part key (`Vlan100|Ethernet0`); `shape` describes it for the error.
    fn split_key(&mut self, e: Entry<'a>, shape: &str) -> Option<(&'a str, &'a str)> {
        let parts = e.key.split_once('|');
        if parts.is_none() {
            self.error(e, "", e.key, format!("{:?} is not a key of the form {shape}", e.key));
        }
        parts
    }

    fn check_fields(&mut self, e: Entry<'_>, known: &[&str]) {
        for (field, value) in e.fields {
            if !known.contains(&field.as_str()) {
                self.warn(e, field, value, "unknown field, ignored");
            }
        }
    }

    fn finish(self, config: SwitchConfig) -> Result<Compiled, ConfigErrors> {
        if self.errors.is_empty() {
            Ok(Compiled { config, warnings: self.warnings })
        } else {
            Err(ConfigErrors { errors: self.errors, warnings: self.warnings })
        }
    }
}

// Switch-wide tables and ports.
impl<'a> Compiler<'a> {
    fn check_tables(&mut self) {
        for table in self.db.tables.keys() {
            let known = [COMPILED_TABLES, DEFERRED_TABLES, IGNORED_TABLES]
                .iter()
                .any(|t| t.contains(&table.as_str()));
            if !known {
                self.warnings.push(ConfigIssue::new(table, "", "", "", "unknown table, ignored"));
            }
        }
    }

    /// `DEVICE_METADATA|localhost|mac`; the other metadata fields do not concern the model.
    fn device_mac(&mut self) -> EthernetAddress {
        entries(self.db, "DEVICE_METADATA")
            .find(|e| e.key == "localhost")
            .and_then(|e| self.optional(e, "mac", parse_unicast_mac))
            .unwrap_or(DEFAULT_DEVICE_MAC)
    }

    fn switch_settings(&mut self) -> SwitchSettings {
        let mut settings = SwitchSettings::default();
        for e in entries(self.db, "SWITCH") {
            if e.key != "switch" {
                self.warn(e, "", "", "unknown key, ignored (switch settings are read from SWITCH|switch)");
                continue;
            }
            self.check_fields(e, SWITCH_FIELDS);
            if let Some(secs) = self.optional(e, "fdb_aging_time", parse_aging_secs) {
                settings.fdb_aging_ns = secs * NS_PER_SEC;
            }
            if let Some(secs) = self.optional(e, "neigh_aging_time", parse_aging_secs) {
                settings.neigh_aging_ns = secs * NS_PER_SEC;
            }
            let actions = [("flood", FdbMissAction::Flood), ("drop", FdbMissAction::Drop)];
            if let Some(action) = self.optional(e, "lossy_fdb_miss_action", |v| parse_keyword(v, &actions)) {
                settings.lossy_fdb_miss_action = action;
            }
            if let Some(seed) =
                self.optional(e, "ecmp_hash_seed", |v| parse_number(v, "a 32-bit number", 0, u32::MAX))
            {
                settings.ecmp_hash_seed = seed;
            }
        }
        settings
    }

    /// `PORT`, in natural name order (`Ethernet4` before `Ethernet12`); the position is the [`PortIndex`].
    fn ports(&mut self, device_mac: EthernetAddress) -> Vec<PortConfig> {
        let mut ports: Vec<Entry> = entries(self.db, "PORT").collect();
        ports.sort_by(|a, b| natural_key(a.key).cmp(&natural_key(b.key)));
        ports.into_iter().filter_map(|e| self.port(e, device_mac)).collect()
    }

    fn port(&mut self, e: Entry<'a>, device_mac: EthernetAddress) -> Option<PortConfig> {
        self.parse_key(e, e.key, check_port_name)?;
        self.check_fields(e, PORT_FIELDS);
        let up_down = [("up", true), ("down", false)];
        Some(PortConfig {
            name: e.key.to_owned(),
            speed_mbps: self
                .required(e, "speed", |v| parse_number(v, "a number of Mb/s", 1, 1_600_000))
                .unwrap_or(0),
            mtu: self
                .optional(e, "mtu", |v| parse_number(v, "a number of bytes", 68, 9216))
                .unwrap_or(DEFAULT_MTU),
            mac: self.optional(e, "mac", parse_unicast_mac).unwrap_or(device_mac),
            admin_up: self.optional(e, "admin_status", |v| parse_keyword(v, &up_down)).unwrap_or(true),
            alias: e.get("alias").map(str::to_owned),
            netdev: e.get("netdev").map(str::to_owned),
        })
    }
}

// VLANs and router interfaces.
impl<'a> Compiler<'a> {
    fn vlans(&mut self) -> Vlans {
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
    fn vlan_members(&mut self, ports: &PortMap, vlans: &mut Vlans) {
        let mut untagged_in: HashMap<PortIndex, &str> = HashMap::new();
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
    fn router_interfaces(
        &mut self,
        ports: &[PortConfig],
        port_map: &PortMap,
        vlans: &Vlans,
        device_mac: EthernetAddress,
    ) -> Vec<RouterInterface> {
        let routed = self.routed_ports(port_map, vlans);
        let vlan_rifs = self.vlan_interfaces(vlans);
        let port_rifs = routed.iter().map(|(&port, addrs)| {
            let p = &ports[port];
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
    fn routed_ports(&mut self, ports: &PortMap, vlans: &Vlans) -> BTreeMap<PortIndex, Vec<WrittenAddr<'a>>> {
        let member_of: HashMap<PortIndex, &str> =
            vlans.by_vid.values().flat_map(|v| v.members.iter().map(|m| (m.port, v.name.as_str()))).collect();
        let mut routed: BTreeMap<PortIndex, Vec<WrittenAddr>> = BTreeMap::new();
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
        let mut seen: Vec<(RifIndex, IpNet)> = Vec::new();
        for (rif, addrs) in written.iter().enumerate() {
            for a in addrs.iter() {
                if let Some(&(other, _)) = seen.iter().find(|(_, n)| n.addr() == a.net.addr()) {
                    let message =
                        format!("address {} is already assigned to {}", a.net.addr(), rifs[other].name);
                    self.error(a.entry, "", a.text, message);
                } else if let Some(&(other, net)) =
                    seen.iter().find(|&&(r, n)| r != rif && overlaps(n, a.net))
                {
                    let message = format!(
                        "subnet {} of {} overlaps subnet {} of {}",
                        a.net.trunc(),
                        rifs[rif].name,
                        net.trunc(),
                        rifs[other].name
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
    fn neighbors(&mut self, rifs: &[RouterInterface], rif_map: &RifMap) -> Vec<StaticNeighbor> {
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
        if !rifs[rif].addrs.iter().any(|net| net.contains(&ip)) {
            self.error(e, "", ip_text, format!("{ip} is on no subnet of {ifname}"));
            return None;
        }
        Some(StaticNeighbor { rif, ip, mac: mac? })
    }

    fn static_routes(&mut self, rifs: &[RouterInterface], rif_map: &RifMap) -> Vec<StaticRoute> {
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

    fn static_fdb(&mut self, ports: &[PortConfig], port_map: &PortMap, vlans: &Vlans) -> Vec<StaticFdb> {
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
            self.field_error(e, "port", format!("{} is not a member of {vlan_name}", ports[port].name));
            return None;
        }
        Some(StaticFdb { vid, mac, port })
    }
}

// QoS maps, PORT_QOS_MAP and border rules.
impl<'a> Compiler<'a> {
    fn qos_maps(&mut self) -> QosMaps<'a> {
        let mut maps = QosMaps::new();
        for spec in MAP_SPECS {
            let table = entries(self.db, spec.table).map(|e| (e.key, self.qos_map(e, spec))).collect();
            maps.insert(spec.table, table);
        }
        maps
    }

    /// One map entry: fields `"<from>": "<to>"`, unlisted keys at the map's default.
    fn qos_map(&mut self, e: Entry<'_>, spec: &MapSpec) -> Vec<u8> {
        let mut map: Vec<u8> =
            (0..=spec.from_max).map(|i| if spec.identity_default { i } else { 0 }).collect();
        for (from, to) in e.fields {
            let from_index = parse_number(from, spec.from, 0, spec.from_max);
            let Some(from_index) = self.report(e, from, to, from_index) else { continue };
            if let Some(to) = self.report(e, from, to, parse_number(to, spec.to, 0, 7)) {
                map[usize::from(from_index)] = to;
            }
        }
        map
    }

    /// `PORT_QOS_MAP`, one [`PortQos`] per port; `PORT_QOS_MAP|global|dscp_to_tc_map` for ports without one.
    fn port_qos(&mut self, ports: &PortMap, port_count: usize, maps: &QosMaps) -> Vec<PortQos> {
        let mut qos = vec![PortQos::default(); port_count];
        let mut configured_by: Vec<Option<&str>> = vec![None; port_count];
        let mut global_dscp = None;
        for e in entries(self.db, "PORT_QOS_MAP") {
            if e.key == "global" {
                global_dscp = self.global_qos(e, maps);
                continue;
            }
            let targets = self.qos_ports(e, ports, &mut configured_by);
            let port_qos = self.port_qos_entry(e, maps);
            for port in targets {
                qos[port] = port_qos.clone();
            }
        }
        if let Some(dscp) = global_dscp {
            for port_qos in &mut qos {
                port_qos.dscp_to_tc.get_or_insert(dscp);
            }
        }
        qos
    }

    /// The ports of a `PORT_QOS_MAP` key (one port or several joined with commas); each port has one entry.
    fn qos_ports(
        &mut self,
        e: Entry<'a>,
        ports: &PortMap,
        configured_by: &mut [Option<&'a str>],
    ) -> Vec<PortIndex> {
        let mut targets = Vec::new();
        for name in e.key.split(',') {
            let Some(port) = self.parse_key(e, name, |n| find_port(ports, n)) else { continue };
            if let Some(first) = configured_by[port] {
                self.error(e, "", name, format!("{name} already has its QoS maps from PORT_QOS_MAP|{first}"));
                continue;
            }
            configured_by[port] = Some(e.key);
            targets.push(port);
        }
        targets
    }

    fn port_qos_entry(&mut self, e: Entry<'_>, maps: &QosMaps) -> PortQos {
        self.check_fields(e, PORT_QOS_FIELDS);
        let mut qos = PortQos {
            dscp_to_tc: self.map_ref(e, &DSCP_TO_TC, maps).and_then(|m| m.try_into().ok()),
            dot1p_to_tc: self.map_ref(e, &DOT1P_TO_TC, maps).and_then(|m| m.try_into().ok()),
            pfc_enable: self.optional(e, "pfc_enable", parse_priority_list).unwrap_or(0),
            pfcwd_sw_enable: self.optional(e, "pfcwd_sw_enable", parse_priority_list).unwrap_or(0),
            ..PortQos::default()
        };
        let eight_entry_maps = [
            (&TC_TO_QUEUE, &mut qos.tc_to_queue),
            (&TC_TO_PG, &mut qos.tc_to_pg),
            (&PFC_TO_QUEUE, &mut qos.pfc_to_queue),
            (&PFC_TO_PG, &mut qos.pfc_to_pg),
        ];
        for (spec, slot) in eight_entry_maps {
            if let Some(map) = self.map_ref(e, spec, maps).and_then(|m| m.try_into().ok()) {
                *slot = map;
            }
        }
        qos
    }

    /// `PORT_QOS_MAP|global`: only `dscp_to_tc_map` applies switch-wide.
    fn global_qos(&mut self, e: Entry<'_>, maps: &QosMaps) -> Option<[u8; 64]> {
        for (field, value) in e.fields.iter().filter(|(field, _)| *field != DSCP_TO_TC.field) {
            if PORT_QOS_FIELDS.contains(&field.as_str()) {
                self.error(e, field, value, format!("{field} cannot be set globally, only per port"));
            } else {
                self.warn(e, field, value, "unknown field, ignored");
            }
        }
        self.map_ref(e, &DSCP_TO_TC, maps).and_then(|m| m.try_into().ok())
    }

    /// The map a `PORT_QOS_MAP` field refers to, if the field is set.
    fn map_ref<'m>(&mut self, e: Entry<'_>, spec: &MapSpec, maps: &'m QosMaps) -> Option<&'m [u8]> {
        self.optional(e, spec.field, |value| {
            let name = parse_ref(spec.table, value)?;
            let map = maps.get(spec.table).and_then(|table| table.get(name));
            map.map(Vec::as_slice).ok_or_else(|| format!("{value:?} names no {} entry", spec.table))
        })
    }

    /// `BORDER_RULE|<port>|<seq>`, into each port's rules in ascending `seq`.
    fn border_rules(&mut self, ports: &PortMap, qos: &mut [PortQos]) {
        let mut rules: BTreeMap<(PortIndex, u32), (&str, BorderRule)> = BTreeMap::new();
        for e in entries(self.db, "BORDER_RULE") {
            let Some((port, rule)) = self.border_rule(e, ports) else { continue };
            match rules.entry((port, rule.seq)) {
                Slot::Vacant(slot) => {
                    slot.insert((e.key, rule));
                }
                Slot::Occupied(first) => {
                    let message =
                        format!("seq {} is already used by BORDER_RULE|{}", rule.seq, first.get().0);
                    self.error(e, "", e.key, message);
                }
            }
        }
        for ((port, _), (_, rule)) in rules {
            qos[port].border_rules.push(rule);
        }
    }

    fn border_rule(&mut self, e: Entry<'a>, ports: &PortMap) -> Option<(PortIndex, BorderRule)> {
        let (port_name, seq_text) = self.split_key(e, "<port>|<seq>")?;
        self.check_fields(e, BORDER_RULE_FIELDS);
        let port = self.parse_key(e, port_name, |n| find_port(ports, n));
        let seq = self.parse_key(e, seq_text, |v| parse_number(v, "a sequence number", 0, u32::MAX));
        let actions = [("forward", false), ("drop", true)];
        // Every field is checked before an unusable key makes the rule go.
        let udp_dport = self.optional(e, "udp_dport", |v| parse_number(v, "a UDP port", 0, u16::MAX));
        let dscp = self.optional(e, "dscp", parse_dscp);
        let set_dscp = self.optional(e, "set_dscp", parse_dscp);
        let set_queue = self.optional(e, "set_queue", |v| parse_number(v, "a queue", 0, 7));
        let drop = self.optional(e, "packet_action", |v| parse_keyword(v, &actions)).unwrap_or(false);
        Some((port?, BorderRule { seq: seq?, udp_dport, dscp, set_dscp, set_queue, drop }))
    }
}

// Value parsers: each returns the message naming the value and the rule it breaks.

/// A decimal integer in `lo..=hi`, digits only (no sign, no spaces); `what` names it for the message.
fn parse_number<T>(text: &str, what: &str, lo: T, hi: T) -> Result<T, String>
where
    T: Copy + Into<u64> + TryFrom<u64>,
{
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("{text:?} is not {what}"));
    }
    let (lo, hi) = (lo.into(), hi.into());
    let in_range = text.parse::<u64>().ok().filter(|n| (lo..=hi).contains(n));
    in_range.and_then(|n| T::try_from(n).ok()).ok_or_else(|| format!("{text} is outside {lo}..{hi}"))
}

fn parse_aging_secs(text: &str) -> Result<u64, String> {
    parse_number(text, "a number of seconds", 0, MAX_AGING_SECS)
}

fn parse_dscp(text: &str) -> Result<u8, String> {
    parse_number(text, "a DSCP", 0, 63)
}

/// One of a fixed set of words.
fn parse_keyword<T: Copy>(text: &str, choices: &[(&str, T)]) -> Result<T, String> {
    choices.iter().find(|(word, _)| *word == text).map(|&(_, value)| value).ok_or_else(|| {
        let words: Vec<&str> = choices.iter().map(|(word, _)| *word).collect();
        format!("{text:?} is not one of {}", words.join(", "))
    })
}

fn parse_bool(text: &str) -> Result<bool, String> {
    parse_keyword(text, &[("true", true), ("false", false)])
}

/// A unicast, non-zero MAC address (`aa:bb:cc:dd:ee:ff`).
fn parse_unicast_mac(text: &str) -> Result<EthernetAddress, String> {
    let mac: EthernetAddress =
        text.parse().map_err(|_| format!("{text:?} is not a MAC address (aa:bb:cc:dd:ee:ff)"))?;
    if mac.is_multicast() {
        Err(format!("{text} is a multicast MAC address; a unicast one is required"))
    } else if mac == EthernetAddress::default() {
        Err(format!("{text} is the all-zero MAC address"))
    } else {
        Ok(mac)
    }
}

fn parse_ip(text: &str) -> Result<IpAddr, String> {
    text.parse().map_err(|_| format!("{text:?} is not an IP address"))
}

/// An interface's own address with its subnet length (`10.0.0.1/31`); host bits are the address.
fn parse_interface_addr(text: &str) -> Result<IpNet, String> {
    text.parse().map_err(|_| format!("{text:?} is not an address with a prefix length (10.0.0.1/31)"))
}

fn parse_prefix(text: &str) -> Result<IpNet, String> {
    text.parse().map_err(|_| format!("{text:?} is not an IP prefix (10.1.0.0/16)"))
}

/// `Vlan<id>`, id 1..4094 without leading zeros.
fn parse_vlan_name(name: &str) -> Result<u16, String> {
    name.strip_prefix("Vlan")
        .filter(|id| !id.starts_with('0'))
        .and_then(|id| parse_number(id, "a VLAN ID", 1, 4094).ok())
        .ok_or_else(|| format!("{name:?} is not a VLAN name (Vlan followed by a VLAN ID 1..4094)"))
}

/// Port names are keys elsewhere, joined with `|` and `,`: they cannot contain either.
fn check_port_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.contains(['|', ',']) {
        Err(format!("{name:?} is not a port name (non-empty, without '|' or ',')"))
    } else {
        Ok(())
    }
}

/// A reference to an entry of `table`, written `name` or (before SONiC 202111) `[TABLE|name]`.
fn parse_ref<'v>(table: &str, value: &'v str) -> Result<&'v str, String> {
    let name = match value.strip_prefix('[').and_then(|v| v.strip_suffix(']')) {
        None => value,
        Some(inner) => match inner.split_once('|') {
            Some((t, name)) if t == table => name,
            Some((t, _)) => return Err(format!("{value:?} refers to {t}, not to {table}")),
            None => return Err(format!("{value:?} is not a reference ([{table}|name] or name)")),
        },
    };
    if name.is_empty() { Err(format!("{value:?} names no {table} entry")) } else { Ok(name) }
}

/// `pfc_enable` and `pfcwd_sw_enable`: a comma list of priorities 0..7 (or nothing), as a bit mask.
fn parse_priority_list(text: &str) -> Result<u8, String> {
    if text.is_empty() {
        return Ok(0);
    }
    text.split(',').try_fold(0u8, |mask, item| {
        let priority: u8 = parse_number(item, "a priority", 0, 7)
            .map_err(|_| format!("{text:?} is not a list of priorities 0..7 ({item:?} is not one)"))?;
        Ok(mask | 1 << priority)
    })
}

/// `Ethernet0` or `Ethernet0|10.0.0.1/31` (also for `Vlan100|...`).
fn split_interface_key(key: &str) -> (&str, Option<&str>) {
    match key.split_once('|') {
        Some((name, addr)) => (name, Some(addr)),
        None => (key, None),
    }
}

fn overlaps(a: IpNet, b: IpNet) -> bool {
    a.contains(&b.network()) || b.contains(&a.network())
}

/// Sort key for natural port order: the name without its trailing number, then that number (compared
/// without converting, so any length works), then the whole name to order `Ethernet04` and `Ethernet4`.
fn natural_key(name: &str) -> (&str, usize, &str, &str) {
    let stem = name.trim_end_matches(|c: char| c.is_ascii_digit());
    let number = name[stem.len()..].trim_start_matches('0');
    (stem, number.len(), number, name)
}

fn find_port(ports: &PortMap, name: &str) -> Result<PortIndex, String> {
    ports.get(name).copied().ok_or_else(|| format!("{name:?} is not a port (there is no PORT|{name})"))
}

fn find_vlan(vlans: &Vlans, name: &str) -> Result<u16, String> {
    let vid = parse_vlan_name(name)?;
    if vlans.by_vid.contains_key(&vid) {
        Ok(vid)
    } else {
        Err(format!("{name:?} is not a VLAN (there is no VLAN|{name})"))
    }
}

fn find_rif(rifs: &RifMap, name: &str) -> Result<RifIndex, String> {
    rifs.get(name).copied().ok_or_else(|| {
        format!("{name:?} is not a router interface (no INTERFACE or VLAN_INTERFACE entry names it)")
    })
}

/// Resolves one next hop to its interface: the one named, else the one whose subnet contains it.
/// The error names the field it is about.
fn resolve_next_hop(
    ip_text: &str,
    ifname: Option<&str>,
    prefix: IpNet,
    rifs: &[RouterInterface],
    rif_map: &RifMap,
) -> Result<NextHop, (&'static str, String)> {
    let ip = parse_ip(ip_text).map_err(|message| ("nexthop", message))?;
    if Family::of(ip) != Family::of(prefix.addr()) {
        return Err(("nexthop", format!("next hop {ip} is not of the family of {prefix}")));
    }
    let rif = match ifname {
        Some(name) => find_rif(rif_map, name).map_err(|message| ("ifname", message))?,
        None => rifs
            .iter()
            .position(|rif| rif.addrs.iter().any(|net| net.contains(&ip)))
            .ok_or_else(|| ("nexthop", format!("next hop {ip} is on no connected subnet")))?,
    };
    Ok(NextHop { ip, rif })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mac(text: &str) -> EthernetAddress {
        text.parse().unwrap()
    }

    fn net(text: &str) -> IpNet {
        text.parse().unwrap()
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    fn yaml(text: &str) -> ConfigDb {
        ConfigDb::from_yaml_str(text).unwrap()
    }

    /// AZURE DSCP_TO_TC_MAP of SONiC's qos_config.j2 (sonic.md §1.4).
    fn azure_dscp() -> [u8; 64] {
        let mut map = [1; 64];
        for (dscp, tc) in [(3, 3), (4, 4), (5, 2), (8, 0), (46, 5), (48, 6)] {
            map[dscp] = tc;
        }
        map
    }

    fn azure_dscp_yaml() -> String {
        let fields: Vec<String> =
            azure_dscp().iter().enumerate().map(|(d, tc)| format!("\"{d}\": \"{tc}\"")).collect();
        format!("{{{}}}", fields.join(", "))
    }

    const FULL: &str = r#"
DEVICE_METADATA:
  localhost:
    hostname: lossless-1
    hwsku: Lossless-4x100G
    platform: x86_64-lossless-r0
    buffer_model: traditional
    type: ToRRouter
    mac: "02:00:00:00:00:aa"
SWITCH:
  switch:
    fdb_aging_time: 300
    neigh_aging_time: 0
    lossy_fdb_miss_action: drop
    ecmp_hash_seed: 12345
PORT:
  Ethernet0: {speed: 100000, mtu: 9100, alias: etp1, netdev: veth0, lanes: "0,1,2,3", index: 1, admin_status: up, fec: rs}
  Ethernet4: {speed: 100000, mac: "02:00:00:00:01:04", netdev: veth1}
  Ethernet8: {speed: 25000, mtu: 1500, admin_status: down}
  Ethernet12: {speed: 25000}
INTERFACE:
  Ethernet0: {vrf_name: default}
  "Ethernet0|10.0.0.0/31": {}
  "Ethernet4|10.0.0.3/31": {}
  "Ethernet4|fc00::1/126": {}
VLAN:
  Vlan100: {vlanid: 100, mac: "02:00:00:00:01:00", members: [Ethernet8, Ethernet12], description: servers}
VLAN_MEMBER:
  "Vlan100|Ethernet12": {tagging_mode: tagged}
  "Vlan100|Ethernet8": {tagging_mode: untagged}
VLAN_INTERFACE:
  Vlan100: {}
  "Vlan100|192.168.0.1/24": {}
NEIGH:
  "Vlan100|192.168.0.10": {neigh: "02:00:00:00:00:10", family: IPv4}
  "Ethernet4|fc00::2": {neigh: "02:00:00:00:00:20"}
STATIC_ROUTE:
  "10.10.0.0/16": {nexthop: "10.0.0.1,10.0.0.2", ifname: "Ethernet0,", distance: 1}
  "default|0.0.0.0/0": {blackhole: "true"}
FDB:
  "Vlan100|02:00:00:00:00:10": {port: Ethernet8, type: static}
DSCP_TO_TC_MAP:
  AZURE: AZURE_DSCP
DOT1P_TO_TC_MAP:
  AZURE: {"0": 1, "1": 0, "2": 2, "3": 3, "4": 4, "5": 5, "6": 6, "7": 7}
TC_TO_QUEUE_MAP:
  AZURE: {"0": 0, "1": 1, "2": 2, "3": 3, "4": 4, "5": 5, "6": 6, "7": 7}
TC_TO_PRIORITY_GROUP_MAP:
  AZURE: {"0": 0, "1": 0, "2": 0, "3": 3, "4": 4, "5": 0, "6": 0, "7": 7}
MAP_PFC_PRIORITY_TO_QUEUE:
  AZURE: {"0": 0, "1": 1, "2": 2, "3": 3, "4": 4, "5": 5, "6": 6, "7": 7}
PFC_PRIORITY_TO_PRIORITY_GROUP_MAP:
  AZURE: {"3": 3, "4": 4}
TC_TO_DSCP_MAP:
  AZURE: {"0": 8}
PORT_QOS_MAP:
  global: {dscp_to_tc_map: "[DSCP_TO_TC_MAP|AZURE]"}
  "Ethernet0,Ethernet4":
    dscp_to_tc_map: AZURE
    tc_to_queue_map: "[TC_TO_QUEUE_MAP|AZURE]"
    tc_to_pg_map: AZURE
    pfc_to_queue_map: "[MAP_PFC_PRIORITY_TO_QUEUE|AZURE]"
    pfc_to_pg_map: AZURE
    pfc_enable: "3,4"
    pfcwd_sw_enable: "3"
    scheduler: scheduler.port
  Ethernet8: {dot1p_to_tc_map: "[DOT1P_TO_TC_MAP|AZURE]", tc_to_pg_map: "[TC_TO_PRIORITY_GROUP_MAP|AZURE]", pfc_enable: ""}
BORDER_RULE:
  "Ethernet0|20": {udp_dport: 4791, dscp: 26, set_dscp: 3}
  "Ethernet0|10": {dscp: 48, packet_action: drop}
  "Ethernet0|30": {set_queue: 1, packet_action: forward}
  "Ethernet4|5": {udp_dport: 4791}
BUFFER_POOL:
  ingress_lossless_pool: {type: ingress, mode: dynamic, size: "12766208"}
CABLE_LENGTH:
  AZURE: {Ethernet0: 5m}
"#;

    fn full() -> Compiled {
        compile(&yaml(&FULL.replace("AZURE_DSCP", &azure_dscp_yaml()))).unwrap()
    }

    #[test]
    fn full_config_switch_and_ports() {
        let Compiled { config, warnings } = full();
        assert_eq!(warnings, vec![]);
        assert_eq!(config.device_mac, mac("02:00:00:00:00:aa"));
        let switch = SwitchSettings {
            fdb_aging_ns: 300 * NS_PER_SEC,
            neigh_aging_ns: 0,
            lossy_fdb_miss_action: FdbMissAction::Drop,
            ecmp_hash_seed: 12345,
        };
        assert_eq!(config.switch, switch);
        let port = |name: &str,
                    speed_mbps,
                    mtu,
                    port_mac: &str,
                    admin_up,
                    alias: Option<&str>,
                    netdev: Option<&str>| {
            PortConfig {
                name: name.into(),
                speed_mbps,
                mtu,
                mac: mac(port_mac),
                admin_up,
                alias: alias.map(Into::into),
                netdev: netdev.map(Into::into),
            }
        };
        let device = "02:00:00:00:00:aa";
        assert_eq!(
            config.ports,
            vec![
                port("Ethernet0", 100_000, 9100, device, true, Some("etp1"), Some("veth0")),
                port("Ethernet4", 100_000, 9100, "02:00:00:00:01:04", true, None, Some("veth1")),
                port("Ethernet8", 25_000, 1500, device, false, None, None),
                port("Ethernet12", 25_000, 9100, device, true, None, None),
            ]
        );
    }

    #[test]
    fn full_config_l2_and_l3() {
        let config = full().config;
        let members = vec![VlanMember { port: 2, tagged: false }, VlanMember { port: 3, tagged: true }];
        let vlan = VlanConfig { name: "Vlan100".into(), vid: 100, members };
        assert_eq!(config.vlans, BTreeMap::from([(100, vlan)]));
        let rif = |name: &str, kind, rif_mac: &str, addrs: &[&str]| RouterInterface {
            name: name.into(),
            kind,
            mac: mac(rif_mac),
            addrs: addrs.iter().map(|a| net(a)).collect(),
        };
        assert_eq!(
            config.interfaces,
            vec![
                rif("Ethernet0", RifKind::Port(0), "02:00:00:00:00:aa", &["10.0.0.0/31"]),
                rif("Ethernet4", RifKind::Port(1), "02:00:00:00:01:04", &["10.0.0.3/31", "fc00::1/126"]),
                rif("Vlan100", RifKind::Vlan(100), "02:00:00:00:01:00", &["192.168.0.1/24"]),
            ]
        );
        // The host bits of an interface address are kept: it is the interface's own address.
        assert_eq!(config.interfaces[1].addrs[0].addr(), ip("10.0.0.3"));
        assert_eq!(
            config.neighbors,
            vec![
                StaticNeighbor { rif: 1, ip: ip("fc00::2"), mac: mac("02:00:00:00:00:20") },
                StaticNeighbor { rif: 2, ip: ip("192.168.0.10"), mac: mac("02:00:00:00:00:10") },
            ]
        );
        assert_eq!(
            config.routes,
            vec![
                StaticRoute { prefix: net("0.0.0.0/0"), nexthops: vec![], blackhole: true },
                StaticRoute {
                    prefix: net("10.10.0.0/16"),
                    nexthops: vec![
                        NextHop { ip: ip("10.0.0.1"), rif: 0 },
                        NextHop { ip: ip("10.0.0.2"), rif: 1 }
                    ],
                    blackhole: false,
                },
            ]
        );
        assert_eq!(config.fdb, vec![StaticFdb { vid: 100, mac: mac("02:00:00:00:00:10"), port: 2 }]);
    }

    #[test]
    fn full_config_qos() {
        let qos = full().config.qos;
        assert_eq!(qos.len(), 4);
        let identity = [0, 1, 2, 3, 4, 5, 6, 7];
        let azure_tc_to_pg = [0, 0, 0, 3, 4, 0, 0, 7];
        let rule = |seq, udp_dport, dscp, set_dscp, set_queue, drop| BorderRule {
            seq,
            udp_dport,
            dscp,
            set_dscp,
            set_queue,
            drop,
        };
        let uplink = PortQos {
            dscp_to_tc: Some(azure_dscp()),
            dot1p_to_tc: None,
            tc_to_queue: identity,
            tc_to_pg: azure_tc_to_pg,
            pfc_to_queue: identity,
            pfc_to_pg: identity,
            pfc_enable: 0b0001_1000,
            pfcwd_sw_enable: 0b0000_1000,
            border_rules: vec![
                rule(10, None, Some(48), None, None, true),
                rule(20, Some(4791), Some(26), Some(3), None, false),
                rule(30, None, None, None, Some(1), false),
            ],
        };
        assert_eq!(qos[0], uplink);
        let rules = vec![rule(5, Some(4791), None, None, None, false)];
        assert_eq!(qos[1], PortQos { border_rules: rules, ..uplink });
        // Ethernet8 has no dscp_to_tc_map of its own: the global one applies.
        let server = PortQos {
            dscp_to_tc: Some(azure_dscp()),
            dot1p_to_tc: Some([1, 0, 2, 3, 4, 5, 6, 7]),
            tc_to_pg: azure_tc_to_pg,
            ..PortQos::default()
        };
        assert_eq!(qos[2], server);
        assert_eq!(qos[3], PortQos { dscp_to_tc: Some(azure_dscp()), ..PortQos::default() });
    }

    #[test]
    fn ports_are_in_natural_order() {
        let mut db = ConfigDb::default();
        for name in ["Ethernet100", "Ethernet4", "Ethernet12", "Ethernet0", "Ethernet04", "Ethernet"] {
            db.set("PORT", name, "speed", "10000");
        }
        let names: Vec<String> = compile(&db).unwrap().config.ports.into_iter().map(|p| p.name).collect();
        assert_eq!(names, ["Ethernet", "Ethernet0", "Ethernet04", "Ethernet4", "Ethernet12", "Ethernet100"]);
    }

    #[test]
    fn unlisted_map_entries_take_the_default() {
        let mut db = base();
        db.set("TC_TO_QUEUE_MAP", "SHIFT", "0", "1");
        db.set("TC_TO_PRIORITY_GROUP_MAP", "ONE", "3", "3");
        db.set("PORT_QOS_MAP", "Ethernet4", "tc_to_queue_map", "SHIFT").set(
            "PORT_QOS_MAP",
            "Ethernet4",
            "tc_to_pg_map",
            "ONE",
        );
        let qos = &compile(&db).unwrap().config.qos[1];
        assert_eq!(qos.tc_to_queue, [1, 1, 2, 3, 4, 5, 6, 7]);
        assert_eq!(qos.tc_to_pg, [0, 0, 0, 3, 0, 0, 0, 0]);
        assert_eq!(qos.dscp_to_tc, None);
    }

    #[test]
    fn parse_ref_accepts_both_syntaxes() {
        assert_eq!(parse_ref("DSCP_TO_TC_MAP", "AZURE"), Ok("AZURE"));
        assert_eq!(parse_ref("DSCP_TO_TC_MAP", "[DSCP_TO_TC_MAP|AZURE]"), Ok("AZURE"));
        assert!(
            parse_ref("DSCP_TO_TC_MAP", "[TC_TO_QUEUE_MAP|AZURE]").unwrap_err().contains("TC_TO_QUEUE_MAP")
        );
        assert!(parse_ref("DSCP_TO_TC_MAP", "[AZURE]").is_err());
        assert!(parse_ref("DSCP_TO_TC_MAP", "").is_err());
    }

    #[test]
    fn parse_priority_list_makes_a_mask() {
        assert_eq!(parse_priority_list(""), Ok(0));
        assert_eq!(parse_priority_list("3,4"), Ok(0b0001_1000));
        assert_eq!(parse_priority_list("0,7,7"), Ok(0b1000_0001));
        for bad in ["8", "3,", "3, 4", "-1", "x"] {
            assert!(parse_priority_list(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn parse_number_is_strict() {
        assert_eq!(parse_number("42", "a number", 0u32, 100), Ok(42));
        for bad in ["+42", " 42", "42 ", "4.2", "", "-1"] {
            assert_eq!(parse_number(bad, "a number", 0u32, 100), Err(format!("{bad:?} is not a number")));
        }
        assert_eq!(parse_number("101", "a number", 0u32, 100), Err("101 is outside 0..100".into()));
        assert!(parse_number("99999999999999999999999", "a number", 0u64, u64::MAX).is_err());
    }

    // Error rules, one test each, on a small valid base config.

    const BASE: &str = r#"
PORT:
  Ethernet0: {speed: 100000}
  Ethernet4: {speed: 100000}
  Ethernet8: {speed: 25000}
  Ethernet12: {speed: 25000}
INTERFACE:
  "Ethernet0|10.0.0.0/31": {}
VLAN:
  Vlan100: {}
VLAN_MEMBER:
  "Vlan100|Ethernet8": {}
VLAN_INTERFACE:
  "Vlan100|192.168.0.1/24": {}
DSCP_TO_TC_MAP:
  AZURE: {"46": 5}
"#;

    fn base() -> ConfigDb {
        yaml(BASE)
    }

    fn errors(db: &ConfigDb) -> Vec<ConfigIssue> {
        compile(db).expect_err("the config must be rejected").errors
    }

    /// Exactly one error, at `location`, quoting `value`, with `mentions` in its message.
    fn assert_error(db: &ConfigDb, location: &str, value: &str, mentions: &str) {
        let errors = errors(db);
        assert_eq!(errors.len(), 1, "{errors:#?}");
        let error = &errors[0];
        assert_eq!(error.location(), location, "{error}");
        assert_eq!(error.value, value, "{error}");
        assert!(error.message.contains(mentions), "{error:?} does not mention {mentions:?}");
    }

    fn base_with(table: &str, key: &str, field: &str, value: &str) -> ConfigDb {
        let mut db = base();
        db.set(table, key, field, value);
        db
    }

    fn base_with_key(table: &str, key: &str) -> ConfigDb {
        let mut db = base();
        db.touch(table, key);
        db
    }

    #[test]
    fn base_config_compiles() {
        let Compiled { config, warnings } = compile(&base()).unwrap();
        assert_eq!(warnings, vec![]);
        assert_eq!(config.device_mac, DEFAULT_DEVICE_MAC);
        assert_eq!(config.switch, SwitchSettings::default());
        assert_eq!(config.interfaces[1].mac, DEFAULT_DEVICE_MAC);
        assert!(config.qos.iter().all(|q| *q == PortQos::default()));
    }

    #[test]
    fn device_mac_must_be_a_unicast_mac() {
        for bad in ["01:00:5e:00:00:01", "02:00:00:00:00", "00:00:00:00:00:00"] {
            let db = base_with("DEVICE_METADATA", "localhost", "mac", bad);
            assert_error(&db, "DEVICE_METADATA|localhost|mac", bad, bad);
        }
    }

    #[test]
    fn switch_settings_are_checked() {
        let cases = [
            ("fdb_aging_time", "1000001"),
            ("neigh_aging_time", "4h"),
            ("lossy_fdb_miss_action", "flod"),
            ("ecmp_hash_seed", "4294967296"),
        ];
        for (field, bad) in cases {
            assert_error(
                &base_with("SWITCH", "switch", field, bad),
                &format!("SWITCH|switch|{field}"),
                bad,
                bad,
            );
        }
    }

    #[test]
    fn port_speed_must_be_a_number() {
        let errors = errors(&base_with("PORT", "Ethernet0", "speed", "fast"));
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].to_string(), r#"PORT|Ethernet0|speed: "fast" is not a number of Mb/s"#);
        assert_eq!(errors[0].value, "fast");
    }

    #[test]
    fn port_speed_is_required_and_in_range() {
        let mut db = base();
        db.tables.get_mut("PORT").unwrap().get_mut("Ethernet4").unwrap().clear();
        assert_error(&db, "PORT|Ethernet4|speed", "", "speed is required");
        for bad in ["0", "1600001"] {
            assert_error(&base_with("PORT", "Ethernet4", "speed", bad), "PORT|Ethernet4|speed", bad, bad);
        }
    }

    #[test]
    fn port_mtu_is_in_range() {
        for bad in ["67", "9217", "1500B"] {
            assert_error(&base_with("PORT", "Ethernet4", "mtu", bad), "PORT|Ethernet4|mtu", bad, bad);
        }
        for good in ["68", "9216"] {
            assert!(compile(&base_with("PORT", "Ethernet4", "mtu", good)).is_ok());
        }
    }

    #[test]
    fn port_mac_must_be_unicast() {
        let bad = "03:00:00:00:00:01";
        assert_error(&base_with("PORT", "Ethernet4", "mac", bad), "PORT|Ethernet4|mac", bad, "multicast");
    }

    #[test]
    fn port_admin_status_is_up_or_down() {
        let db = base_with("PORT", "Ethernet4", "admin_status", "enabled");
        assert_error(&db, "PORT|Ethernet4|admin_status", "enabled", "\"enabled\" is not one of up, down");
    }

    #[test]
    fn port_name_must_not_be_empty() {
        assert_error(&base_with("PORT", "", "speed", "10000"), "PORT|", "", "not a port name");
    }

    #[test]
    fn interface_port_must_exist() {
        let db = base_with_key("INTERFACE", "Ethernet99|10.1.0.0/31");
        assert_error(&db, "INTERFACE|Ethernet99|10.1.0.0/31", "Ethernet99", "Ethernet99");
    }

    #[test]
    fn interface_address_needs_a_prefix_length() {
        let db = base_with_key("INTERFACE", "Ethernet4|10.1.0.0");
        assert_error(&db, "INTERFACE|Ethernet4|10.1.0.0", "10.1.0.0", "10.1.0.0");
    }

    #[test]
    fn routed_port_is_no_vlan_member() {
        let db = base_with_key("INTERFACE", "Ethernet8|10.1.0.0/31");
        assert_error(&db, "INTERFACE|Ethernet8|10.1.0.0/31", "Ethernet8", "Vlan100");
    }

    #[test]
    fn vlan_interface_needs_a_vlan() {
        let db = base_with_key("VLAN_INTERFACE", "Vlan200|192.168.1.1/24");
        assert_error(&db, "VLAN_INTERFACE|Vlan200|192.168.1.1/24", "Vlan200", "Vlan200");
    }

    #[test]
    fn subnets_of_interfaces_do_not_overlap() {
        let db = base_with_key("INTERFACE", "Ethernet4|10.0.0.1/30");
        assert_error(
            &db,
            "INTERFACE|Ethernet4|10.0.0.1/30",
            "10.0.0.1/30",
            "overlaps subnet 10.0.0.0/31 of Ethernet0",
        );
        // Secondary subnets of one interface may overlap.
        assert!(compile(&base_with_key("INTERFACE", "Ethernet0|10.0.0.1/30")).is_ok());
    }

    #[test]
    fn an_address_is_assigned_once() {
        let db = base_with_key("INTERFACE", "Ethernet0|10.0.0.0/32");
        assert_error(
            &db,
            "INTERFACE|Ethernet0|10.0.0.0/32",
            "10.0.0.0/32",
            "10.0.0.0 is already assigned to Ethernet0",
        );
        let db = base_with_key("VLAN_INTERFACE", "Vlan100|10.0.0.0/24");
        assert_error(
            &db,
            "VLAN_INTERFACE|Vlan100|10.0.0.0/24",
            "10.0.0.0/24",
            "already assigned to Ethernet0",
        );
    }

    #[test]
    fn vlan_names_are_vlan_and_an_id() {
        for bad in ["Vlan4095", "Vlan0", "vlan5", "Vlan010", "Vlan"] {
            assert_error(&base_with_key("VLAN", bad), &format!("VLAN|{bad}"), bad, bad);
        }
    }

    #[test]
    fn vlanid_matches_the_name() {
        assert_error(&base_with("VLAN", "Vlan100", "vlanid", "101"), "VLAN|Vlan100|vlanid", "101", "101");
    }

    #[test]
    fn vlan_mac_must_be_unicast() {
        let bad = "ff:ff:ff:ff:ff:ff";
        assert_error(&base_with("VLAN", "Vlan100", "mac", bad), "VLAN|Vlan100|mac", bad, bad);
    }

    #[test]
    fn vlan_member_tagging_mode() {
        let db = base_with("VLAN_MEMBER", "Vlan100|Ethernet8", "tagging_mode", "trunk");
        assert_error(&db, "VLAN_MEMBER|Vlan100|Ethernet8|tagging_mode", "trunk", "trunk");
    }

    #[test]
    fn vlan_member_needs_vlan_and_port() {
        let db = base_with_key("VLAN_MEMBER", "Vlan200|Ethernet12");
        assert_error(&db, "VLAN_MEMBER|Vlan200|Ethernet12", "Vlan200", "Vlan200");
        let db = base_with_key("VLAN_MEMBER", "Vlan100|Ethernet99");
        assert_error(&db, "VLAN_MEMBER|Vlan100|Ethernet99", "Ethernet99", "Ethernet99");
        let db = base_with_key("VLAN_MEMBER", "Ethernet12");
        assert_error(&db, "VLAN_MEMBER|Ethernet12", "Ethernet12", "Vlan<id>|<port>");
    }

    #[test]
    fn port_is_untagged_in_one_vlan_only() {
        let mut db = base();
        db.touch("VLAN", "Vlan200").touch("VLAN_MEMBER", "Vlan200|Ethernet8");
        assert_error(&db, "VLAN_MEMBER|Vlan200|Ethernet8|tagging_mode", "", "untagged member of Vlan100");
        db.set("VLAN_MEMBER", "Vlan200|Ethernet8", "tagging_mode", "tagged");
        assert!(compile(&db).is_ok());
    }

    #[test]
    fn neighbor_needs_a_unicast_mac() {
        let key = "Vlan100|192.168.0.10";
        assert_error(
            &base_with_key("NEIGH", key),
            "NEIGH|Vlan100|192.168.0.10|neigh",
            "",
            "neigh is required",
        );
        let bad = "ff:ff:ff:ff:ff:ff";
        assert_error(&base_with("NEIGH", key, "neigh", bad), "NEIGH|Vlan100|192.168.0.10|neigh", bad, bad);
    }

    #[test]
    fn neighbor_family_matches_the_address() {
        let mut db = base_with("NEIGH", "Vlan100|192.168.0.10", "neigh", "02:00:00:00:00:10");
        db.set("NEIGH", "Vlan100|192.168.0.10", "family", "IPv6");
        assert_error(&db, "NEIGH|Vlan100|192.168.0.10|family", "IPv6", "IPv6");
    }

    #[test]
    fn neighbor_interface_is_a_router_interface() {
        let db = base_with("NEIGH", "Ethernet4|10.0.0.5", "neigh", "02:00:00:00:00:10");
        assert_error(&db, "NEIGH|Ethernet4|10.0.0.5", "Ethernet4", "Ethernet4");
    }

    #[test]
    fn neighbor_is_on_a_subnet_of_its_interface() {
        let db = base_with("NEIGH", "Vlan100|192.168.1.10", "neigh", "02:00:00:00:00:10");
        assert_error(
            &db,
            "NEIGH|Vlan100|192.168.1.10",
            "192.168.1.10",
            "192.168.1.10 is on no subnet of Vlan100",
        );
    }

    #[test]
    fn static_route_vrf_must_be_default() {
        let db = base_with("STATIC_ROUTE", "Vrf1|10.1.0.0/16", "nexthop", "10.0.0.1");
        assert_error(&db, "STATIC_ROUTE|Vrf1|10.1.0.0/16", "Vrf1", "Vrf1");
    }

    #[test]
    fn static_route_prefix_must_parse() {
        let db = base_with("STATIC_ROUTE", "10.1.0.0", "nexthop", "10.0.0.1");
        assert_error(&db, "STATIC_ROUTE|10.1.0.0", "10.1.0.0", "10.1.0.0");
    }

    #[test]
    fn static_route_host_bits_are_a_warning() {
        let Compiled { config, warnings } =
            compile(&base_with("STATIC_ROUTE", "10.1.0.1/16", "nexthop", "10.0.0.1")).unwrap();
        assert_eq!(config.routes[0].prefix, net("10.1.0.0/16"));
        assert_eq!(warnings.len(), 1);
        assert_eq!(warnings[0].location(), "STATIC_ROUTE|10.1.0.1/16");
        assert!(warnings[0].message.contains("host bits"));
    }

    #[test]
    fn static_route_needs_next_hops_unless_blackhole() {
        let db = base_with("STATIC_ROUTE", "10.1.0.0/16", "blackhole", "false");
        assert_error(&db, "STATIC_ROUTE|10.1.0.0/16|nexthop", "", "nexthop is required");
        let db = base_with("STATIC_ROUTE", "10.1.0.0/16", "blackhole", "yes");
        assert_error(&db, "STATIC_ROUTE|10.1.0.0/16|blackhole", "yes", "yes");
    }

    #[test]
    fn static_route_ifname_list_has_the_length_of_nexthop() {
        let mut db = base_with("STATIC_ROUTE", "10.1.0.0/16", "nexthop", "10.0.0.1,192.168.0.2");
        db.set("STATIC_ROUTE", "10.1.0.0/16", "ifname", "Ethernet0");
        assert_error(&db, "STATIC_ROUTE|10.1.0.0/16|ifname", "Ethernet0", "1 interfaces for 2 next hops");
    }

    #[test]
    fn static_route_ifname_is_a_router_interface() {
        let mut db = base_with("STATIC_ROUTE", "10.1.0.0/16", "nexthop", "10.0.0.1");
        db.set("STATIC_ROUTE", "10.1.0.0/16", "ifname", "Ethernet4");
        assert_error(&db, "STATIC_ROUTE|10.1.0.0/16|ifname", "Ethernet4", "Ethernet4");
    }

    #[test]
    fn static_route_next_hop_is_on_a_connected_subnet() {
        let db = base_with("STATIC_ROUTE", "10.1.0.0/16", "nexthop", "10.0.0.1,10.9.9.9");
        assert_error(
            &db,
            "STATIC_ROUTE|10.1.0.0/16|nexthop",
            "10.0.0.1,10.9.9.9",
            "next hop 10.9.9.9 is on no connected subnet",
        );
    }

    #[test]
    fn static_route_next_hop_family_matches_the_prefix() {
        let db = base_with("STATIC_ROUTE", "fc00:1::/64", "nexthop", "10.0.0.1");
        assert_error(&db, "STATIC_ROUTE|fc00:1::/64|nexthop", "10.0.0.1", "10.0.0.1");
        let db = base_with("STATIC_ROUTE", "10.1.0.0/16", "nexthop", "10.0.0.one");
        assert_error(&db, "STATIC_ROUTE|10.1.0.0/16|nexthop", "10.0.0.one", "10.0.0.one");
    }

    #[test]
    fn static_route_prefix_is_routed_once() {
        let mut db = base_with("STATIC_ROUTE", "10.1.0.0/16", "nexthop", "10.0.0.1");
        db.set("STATIC_ROUTE", "default|10.1.0.0/16", "blackhole", "true");
        assert_error(&db, "STATIC_ROUTE|default|10.1.0.0/16", "default|10.1.0.0/16", "10.1.0.0/16");
    }

    #[test]
    fn fdb_port_is_a_member_of_the_vlan() {
        let key = "Vlan100|02:00:00:00:00:10";
        let location = "FDB|Vlan100|02:00:00:00:00:10|port";
        assert_error(&base_with("FDB", key, "port", "Ethernet12"), location, "Ethernet12", "Ethernet12");
        assert_error(&base_with("FDB", key, "port", "Ethernet99"), location, "Ethernet99", "Ethernet99");
        assert_error(&base_with_key("FDB", key), location, "", "port is required");
        let mut db = base_with("FDB", key, "port", "Ethernet8");
        db.set("FDB", key, "type", "sticky");
        assert_error(&db, "FDB|Vlan100|02:00:00:00:00:10|type", "sticky", "sticky");
    }

    #[test]
    fn fdb_mac_is_unicast_and_vlan_exists() {
        let db = base_with("FDB", "Vlan100|01:00:00:00:00:01", "port", "Ethernet8");
        assert_error(&db, "FDB|Vlan100|01:00:00:00:00:01", "01:00:00:00:00:01", "multicast");
        let db = base_with("FDB", "Vlan200|02:00:00:00:00:01", "port", "Ethernet8");
        assert_error(&db, "FDB|Vlan200|02:00:00:00:00:01", "Vlan200", "Vlan200");
    }

    #[test]
    fn map_keys_and_values_are_in_range() {
        assert_error(&base_with("DSCP_TO_TC_MAP", "AZURE", "64", "1"), "DSCP_TO_TC_MAP|AZURE|64", "1", "64");
        assert_error(&base_with("DSCP_TO_TC_MAP", "AZURE", "46", "8"), "DSCP_TO_TC_MAP|AZURE|46", "8", "8");
        assert_error(&base_with("DSCP_TO_TC_MAP", "AZURE", "ef", "5"), "DSCP_TO_TC_MAP|AZURE|ef", "5", "ef");
        let db = base_with("TC_TO_QUEUE_MAP", "AZURE", "8", "0");
        assert_error(&db, "TC_TO_QUEUE_MAP|AZURE|8", "0", "8");
        let db = base_with("PFC_PRIORITY_TO_PRIORITY_GROUP_MAP", "AZURE", "3", "three");
        assert_error(&db, "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP|AZURE|3", "three", "three");
    }

    #[test]
    fn qos_reference_names_the_right_table() {
        let bad = "[DOT1P_TO_TC_MAP|AZURE]";
        let db = base_with("PORT_QOS_MAP", "Ethernet0", "dscp_to_tc_map", bad);
        assert_error(&db, "PORT_QOS_MAP|Ethernet0|dscp_to_tc_map", bad, "DOT1P_TO_TC_MAP");
    }

    #[test]
    fn qos_reference_names_an_existing_map() {
        let db = base_with("PORT_QOS_MAP", "Ethernet0", "dscp_to_tc_map", "AZURE_LOSSY");
        assert_error(&db, "PORT_QOS_MAP|Ethernet0|dscp_to_tc_map", "AZURE_LOSSY", "AZURE_LOSSY");
        // AZURE exists, but in DSCP_TO_TC_MAP only.
        let db = base_with("PORT_QOS_MAP", "Ethernet0", "tc_to_queue_map", "AZURE");
        assert_error(&db, "PORT_QOS_MAP|Ethernet0|tc_to_queue_map", "AZURE", "TC_TO_QUEUE_MAP");
    }

    #[test]
    fn qos_ports_exist_and_have_one_entry() {
        let db = base_with("PORT_QOS_MAP", "Ethernet0,Ethernet99", "pfc_enable", "3,4");
        assert_error(&db, "PORT_QOS_MAP|Ethernet0,Ethernet99", "Ethernet99", "Ethernet99");
        let mut db = base_with("PORT_QOS_MAP", "Ethernet0", "pfc_enable", "3,4");
        db.set("PORT_QOS_MAP", "Ethernet0,Ethernet4", "pfc_enable", "3");
        assert_error(&db, "PORT_QOS_MAP|Ethernet0,Ethernet4", "Ethernet0", "PORT_QOS_MAP|Ethernet0");
    }

    #[test]
    fn pfc_enable_is_a_list_of_priorities() {
        for (field, bad) in [("pfc_enable", "3,8"), ("pfc_enable", "3;4"), ("pfcwd_sw_enable", "x")] {
            let db = base_with("PORT_QOS_MAP", "Ethernet0", field, bad);
            assert_error(&db, &format!("PORT_QOS_MAP|Ethernet0|{field}"), bad, bad);
        }
    }

    #[test]
    fn global_qos_has_only_the_dscp_map() {
        let db = base_with("PORT_QOS_MAP", "global", "pfc_enable", "3,4");
        assert_error(&db, "PORT_QOS_MAP|global|pfc_enable", "3,4", "pfc_enable");
    }

    #[test]
    fn border_rule_fields_are_checked() {
        let cases = [
            ("udp_dport", "70000"),
            ("dscp", "64"),
            ("set_dscp", "64"),
            ("set_queue", "8"),
            ("packet_action", "reject"),
        ];
        for (field, bad) in cases {
            let db = base_with("BORDER_RULE", "Ethernet0|10", field, bad);
            assert_error(&db, &format!("BORDER_RULE|Ethernet0|10|{field}"), bad, bad);
        }
    }

    #[test]
    fn border_rule_key_is_a_port_and_a_seq() {
        let db = base_with("BORDER_RULE", "Ethernet0|first", "dscp", "3");
        assert_error(&db, "BORDER_RULE|Ethernet0|first", "first", "first");
        let db = base_with("BORDER_RULE", "Ethernet99|1", "dscp", "3");
        assert_error(&db, "BORDER_RULE|Ethernet99|1", "Ethernet99", "Ethernet99");
        let mut db = base_with("BORDER_RULE", "Ethernet0|1", "dscp", "3");
        db.set("BORDER_RULE", "Ethernet0|01", "dscp", "4");
        assert_error(&db, "BORDER_RULE|Ethernet0|1", "Ethernet0|1", "BORDER_RULE|Ethernet0|01");
    }

    #[test]
    fn deferred_tables_raise_no_issue() {
        let mut db = base();
        for table in DEFERRED_TABLES {
            db.set(table, "AZURE", "anything", "at all");
        }
        let compiled = compile(&db).unwrap();
        assert_eq!(compiled.warnings, vec![]);
    }

    #[test]
    fn unknown_tables_and_fields_are_warnings() {
        let mut db = base_with("FLEX_COUNTER_TABLE", "QUEUE", "FLEX_COUNTER_STATUS", "enable");
        db.set("FLEX_COUNTER_TABLE", "PG_WATERMARK", "FLEX_COUNTER_STATUS", "enable");
        db.set("PORT", "Ethernet0", "colour", "blue");
        let warnings = compile(&db).unwrap().warnings;
        let found: Vec<(String, &str)> =
            warnings.iter().map(|w| (w.location(), w.message.as_str())).collect();
        assert_eq!(
            found,
            [
                ("FLEX_COUNTER_TABLE|".to_string(), "unknown table, ignored"),
                ("PORT|Ethernet0|colour".to_string(), "unknown field, ignored"),
            ]
        );
        assert_eq!(warnings[1].value, "blue");
    }

    #[test]
    fn every_error_is_reported() {
        let mut db = base_with("PORT", "Ethernet0", "speed", "fast");
        db.touch("VLAN_MEMBER", "Vlan100|Ethernet99");
        db.set("DSCP_TO_TC_MAP", "AZURE", "64", "1");
        let errors = compile(&db).unwrap_err().errors;
        let locations: Vec<String> = errors.iter().map(ConfigIssue::location).collect();
        assert_eq!(
            locations,
            ["PORT|Ethernet0|speed", "VLAN_MEMBER|Vlan100|Ethernet99", "DSCP_TO_TC_MAP|AZURE|64"]
        );
    }
}
