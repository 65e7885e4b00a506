//! The configuration compiler: [`ConfigDb`] (SONiC CONFIG_DB, every value a string) in, [`SwitchConfig`] out.
//!
//! Tables are read in dependency order (ports, VLANs, router interfaces, then what refers to them), one
//! small function per table. Every finding is collected in a [`Compiler`] and located as SONiC locates it,
//! `TABLE|key|field`, with the value as written; nothing stops at the first error, and an entry that
//! cannot be resolved is left out so that it does not cause further errors elsewhere.
//!
//! Cross-table references are accepted in both of SONiC's syntaxes, `AZURE` and the pre-202111
//! `[DSCP_TO_TC_MAP|AZURE]` (`docs/configuration.md`). Keys of per-port tables may join several ports with commas
//! (`PORT_QOS_MAP|Ethernet0,Ethernet4`), and those of PG and queue tables name an index or a range
//! (`BUFFER_PG|Ethernet0|3-4`). The MMU tables are in [`buffers`], with the checks that span tables (the
//! UCloud inequality, `mmu_size`); `WRED_PROFILE`, `SCHEDULER`, `QUEUE` and `PFC_WD` in [`scheduling`].
//! The dynamic buffer model's inputs ([`DEFERRED_TABLES`]) are accepted without comment; any other table
//! the compiler does not know is a warning, as is an unknown field.

mod buffers;
mod names;
mod scheduling;

use super::{
    BorderRule, Compiled, ConfigDb, ConfigErrors, ConfigIssue, FdbMissAction, NS_PER_SEC, NextHop,
    PortBuffers, PortConfig, PortIndex, PortQos, RifIndex, RifKind, RouterInterface, SchedulerProfile,
    StaticFdb, StaticNeighbor, StaticRoute, SwitchConfig, SwitchSettings, VlanConfig, VlanMember,
};
use crate::wire::EthernetAddress;
use ipnet::IpNet;
use std::collections::btree_map::Entry as Slot;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::IpAddr;

/// Tables a later version of the model may use (the dynamic buffer model's inputs, from which the control
/// plane computes headroom). They are accepted as they are, without any issue.
const DEFERRED_TABLES: &[&str] =
    &["CABLE_LENGTH", "DEFAULT_LOSSLESS_BUFFER_PARAMETER", "LOSSLESS_TRAFFIC_PATTERN"];

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
    "BUFFER_ASIC",
    "BUFFER_POOL",
    "BUFFER_PROFILE",
    "BUFFER_PG",
    "BUFFER_QUEUE",
    "BUFFER_PORT_INGRESS_PROFILE_LIST",
    "BUFFER_PORT_EGRESS_PROFILE_LIST",
    "WRED_PROFILE",
    "SCHEDULER",
    "QUEUE",
    "PFC_WD",
];

/// A locally administered address ("LS" = Lossless) for configs that set no `DEVICE_METADATA|localhost|mac`.
const DEFAULT_DEVICE_MAC: EthernetAddress = EthernetAddress([0x02, 0x4c, 0x53, 0x00, 0x00, 0x01]);
/// SONiC's default port MTU.
const DEFAULT_MTU: u32 = 9100;
const MAX_AGING_SECS: u64 = 1_000_000;

const SWITCH_FIELDS: &[&str] = &[
    "fdb_aging_time",
    "neigh_aging_time",
    "lossy_fdb_miss_action",
    "lossless_fdb_miss_action",
    "ecmp_hash_seed",
];
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
    "adv_interface_types",
    "adv_speeds",
    "asic_port_name",
    "core_id",
    "core_port_id",
    "dhcp_rate_limit",
    "dom_polling",
    "fast_linkup",
    "interface_type",
    "laser_freq",
    "link_training",
    "macsec",
    "mode",
    "mux_cable",
    "num_voq",
    "subport",
    "tx_power",
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
    let mut cx = Compiler { db, errors: Vec::new(), warnings: Vec::new(), misspelled: HashSet::new() };
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
    let schedulers = cx.schedulers();
    let wred_profiles = cx.wred_profiles();
    let mut port_buffers = vec![PortBuffers::default(); ports.len()];
    let mut qos = cx.port_qos(&port_map, &maps, &schedulers, &mut port_buffers);
    cx.border_rules(&port_map, &mut qos);
    let asic = cx.buffer_asic();
    let pools = cx.buffer_pools();
    let profiles = cx.buffer_profiles(&pools);
    cx.buffer_bindings(&port_map, &pools, &profiles, &mut port_buffers);
    cx.queues(&port_map, &schedulers, &wred_profiles, &mut port_buffers);
    let (pfc_wd, pfc_wd_global) = cx.pfc_watchdog(&port_map, ports.len());
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
        asic,
        pools: pools.items,
        profiles: profiles.items,
        wred_profiles: wred_profiles.items,
        schedulers: schedulers.items,
        port_buffers,
        pfc_wd,
        pfc_wd_global,
    };
    cx.check_buffers(&config);
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
    /// (table, key, field) of known fields an entry probably misspelled (an unknown field was close to
    /// it): their absence is not reported again, so one typo gives one error.
    misspelled: HashSet<(String, String, String)>,
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

    /// The value of a mandatory field, reporting its absence (unless an unknown field of the entry was
    /// already reported as its likely misspelling).
    fn require(&mut self, e: Entry<'a>, field: &str) -> Option<&'a str> {
        let value = e.get(field);
        if value.is_none() && !self.is_misspelled(e, field) {
            self.error(e, field, "", format!("{field} is required"));
        }
        value
    }

    /// Was `field` of this entry reported as probably misspelled?
    fn is_misspelled(&self, e: Entry<'_>, field: &str) -> bool {
        self.misspelled.contains(&(e.table.to_owned(), e.key.to_owned(), field.to_owned()))
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

    /// Every field of the entry must be one of `known` (the fields SONiC defines for the table, whether
    /// or not the model uses them); an unknown one is an error with the closest known name.
    fn check_fields(&mut self, e: Entry<'_>, known: &[&str]) {
        for (field, value) in e.fields {
            if known.contains(&field.as_str()) {
                continue;
            }
            let close = names::closest(field, known.iter().copied());
            let message = match close {
                Some(name) if !e.fields.contains_key(name) => {
                    self.misspelled.insert((e.table.to_owned(), e.key.to_owned(), name.to_owned()));
                    format!("unknown field {field}; did you mean {name}?")
                }
                _ => format!("unknown field {field} (fields of {}: {})", e.table, known.join(", ")),
            };
            self.error(e, field, value, message);
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

/// A table whose entries other tables refer to by name (`BUFFER_POOL`, `BUFFER_PROFILE`, `SCHEDULER`,
/// `WRED_PROFILE`), compiled in key order.
struct Named<'a, T> {
    table: &'static str,
    items: Vec<T>,
    /// Name → index in `items`; `None` for an entry that was rejected, so that what refers to it raises no
    /// second error.
    index: HashMap<&'a str, Option<usize>>,
}

impl<'a, T> Named<'a, T> {
    fn compile(
        cx: &mut Compiler<'a>,
        table: &'static str,
        mut one: impl FnMut(&mut Compiler<'a>, Entry<'a>) -> Option<T>,
    ) -> Self {
        let mut named = Named { table, items: Vec::new(), index: HashMap::new() };
        for e in entries(cx.db, table) {
            let item = one(cx, e);
            let index = item.map(|item| {
                named.items.push(item);
                named.items.len() - 1
            });
            named.index.insert(e.key, index);
        }
        named
    }

    /// The entry a reference (`name` or `[TABLE|name]`) names: `Ok(None)` when it exists but was rejected.
    fn resolve(&self, value: &str) -> Result<Option<usize>, String> {
        let name = parse_ref(self.table, value)?;
        self.index.get(name).copied().ok_or_else(|| format!("{value:?} names no {} entry", self.table))
    }
}

// Keys naming ports.
impl<'a> Compiler<'a> {
    /// The ports of a key part that may join several with commas (`Ethernet0,Ethernet4`), with their names.
    fn key_ports(&mut self, e: Entry<'a>, names: &'a str, ports: &PortMap) -> Vec<(&'a str, PortIndex)> {
        names
            .split(',')
            .filter_map(|name| Some((name, self.parse_key(e, name, |n| find_port(ports, n))?)))
            .collect()
    }

    /// The ports of a key of a table where each port has one entry at most (`owners` remembers which);
    /// a port named again is an error.
    fn unique_key_ports(
        &mut self,
        e: Entry<'a>,
        ports: &PortMap,
        owners: &mut HashMap<PortIndex, &'a str>,
    ) -> Vec<PortIndex> {
        let mut targets = Vec::new();
        for (name, port) in self.key_ports(e, e.key, ports) {
            if let Some(first) = owners.get(&port) {
                let message = format!("{name} is already configured by {}|{first}", e.table);
                self.error(e, "", name, message);
                continue;
            }
            owners.insert(port, e.key);
            targets.push(port);
        }
        targets
    }

    /// The entries of a `<ports>|<index or a-b>` table (`BUFFER_PG`, `BUFFER_QUEUE`, `QUEUE`), each with the
    /// (port, index) slots it sets. A slot belongs to the first key that covers it; a later key covering it
    /// again is an error (once per port) and sets none of that port's slots.
    fn indexed_entries(
        &mut self,
        table: &'static str,
        what: &str,
        ports: &PortMap,
    ) -> Vec<(Entry<'a>, Vec<(PortIndex, usize)>)> {
        let mut owners: HashMap<(PortIndex, usize), &str> = HashMap::new();
        let mut found = Vec::new();
        for e in entries(self.db, table) {
            let Some((port_names, index_text)) = self.split_key(e, &format!("<port>|<{what}>")) else {
                continue;
            };
            let targets = self.key_ports(e, port_names, ports);
            let Some(range) = self.parse_key(e, index_text, |t| parse_index_range(t, what)) else { continue };
            let mut slots = Vec::new();
            for (name, port) in targets {
                if let Some((index, first)) = range.clone().find_map(|i| Some((i, *owners.get(&(port, i))?)))
                {
                    let message = format!("{name} {what} {index} is already configured by {table}|{first}");
                    self.error(e, "", name, message);
                    continue;
                }
                for index in range.clone() {
                    owners.insert((port, index), e.key);
                    slots.push((port, index));
                }
            }
            found.push((e, slots));
        }
        found
    }
}

// Switch-wide tables and ports.
impl<'a> Compiler<'a> {
    /// Tables the model reads or defers are fine; another SONiC table is accepted and reported once as
    /// not modelled; a name that is no SONiC table is an error, with the closest table name.
    fn check_tables(&mut self) {
        for table in self.db.tables.keys() {
            let used = [COMPILED_TABLES, DEFERRED_TABLES, IGNORED_TABLES]
                .iter()
                .any(|t| t.contains(&table.as_str()));
            if used {
                continue;
            }
            if names::SONIC_TABLES.contains(&table.as_str()) {
                let message = "SONiC table not modelled by Lossless: accepted, ignored";
                self.warnings.push(ConfigIssue::new(table, "", "", "", message));
                continue;
            }
            let all = COMPILED_TABLES.iter().chain(DEFERRED_TABLES).chain(names::SONIC_TABLES).copied();
            let message = format!("{table} is no SONiC table{}", names::suggestion(table, all));
            self.errors.push(ConfigIssue::new(table, "", "", "", message));
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
            if let Some(action) = self.optional(e, "lossless_fdb_miss_action", |v| parse_keyword(v, &actions))
            {
                settings.lossless_fdb_miss_action = action;
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
            first_lane: self.optional(e, "lanes", parse_lanes).flatten(),
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
    /// The port shaper (`scheduler`) goes to [`PortBuffers::port_scheduler`].
    fn port_qos(
        &mut self,
        ports: &PortMap,
        maps: &QosMaps,
        schedulers: &Named<'a, SchedulerProfile>,
        buffers: &mut [PortBuffers],
    ) -> Vec<PortQos> {
        let port_count = buffers.len();
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
            let shaper = self.optional(e, "scheduler", |v| schedulers.resolve(v)).flatten();
            for port in targets {
                qos[port] = port_qos.clone();
                buffers[port].port_scheduler = shaper;
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
            ..PortQos::default()
        };
        // Absent, it is pfc_enable: SONiC's db_migrator fills it so (sonic-net/sonic-utilities
        // scripts/db_migrator.py, version_3_0_4), so no SONiC user meets a port without it.
        qos.pfcwd_sw_enable =
            self.optional(e, "pfcwd_sw_enable", parse_priority_list).unwrap_or(qos.pfc_enable);
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
                let hint = names::suggestion(field, [DSCP_TO_TC.field]);
                self.error(e, field, value, format!("unknown field {field}{hint}"));
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

/// A number of bytes (sizes, thresholds).
fn parse_bytes(text: &str) -> Result<u64, String> {
    parse_number(text, "a number of bytes", 0, u64::MAX)
}

/// `dynamic_th`: the alpha exponent n (alpha = 2^n), -8..=7.
fn parse_dynamic_th(text: &str) -> Result<i8, String> {
    let digits = text.strip_prefix('-').unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("{text:?} is not a dynamic_th (an integer -8..7)"));
    }
    let in_range = text.parse::<i64>().ok().filter(|n| (-8..=7).contains(n));
    in_range.and_then(|n| i8::try_from(n).ok()).ok_or_else(|| format!("{text} is outside -8..7"))
}

/// The index part of a `BUFFER_PG`, `BUFFER_QUEUE` or `QUEUE` key: `3` or the inclusive range `3-4`, in 0..7.
fn parse_index_range(text: &str, what: &str) -> Result<std::ops::RangeInclusive<usize>, String> {
    let (lo, hi) = text.split_once('-').unwrap_or((text, text));
    let bound = |part: &str| {
        parse_number(part, what, 0u8, 7)
            .map(usize::from)
            .map_err(|_| format!("{text:?} is not a {what} 0..7 or a range of them (3-4)"))
    };
    let (lo, hi) = (bound(lo)?, bound(hi)?);
    if lo > hi {
        return Err(format!("{text:?} is an empty range ({lo} > {hi})"));
    }
    Ok(lo..=hi)
}

/// `12,345,678`, as SONiC's CLI prints byte counts.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut grouped = String::new();
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(digit);
    }
    grouped
}

/// `lanes`: SerDes lane numbers joined with commas (`"65,66,67,68"`); the first one places the port in a
/// pipe. Empty: none.
fn parse_lanes(text: &str) -> Result<Option<u32>, String> {
    let mut first = None;
    for lane in text.split(',').filter(|l| !l.is_empty()) {
        let lane = parse_number(lane.trim(), "a lane number", 0, 65535)
            .map_err(|_| format!("{text:?} is not a list of lane numbers (65,66,67,68)"))?;
        first.get_or_insert(lane);
    }
    Ok(first)
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
    use crate::model::config::AsicFamily;

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

    /// AZURE DSCP_TO_TC_MAP of SONiC's `files/build_templates/qos_config.j2` (sonic-buildimage).
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
    asic: generic
    platform: x86_64-lossless-r0
    buffer_model: traditional
    type: ToRRouter
    mac: "02:00:00:00:00:aa"
SWITCH:
  switch:
    fdb_aging_time: 300
    neigh_aging_time: 0
    lossy_fdb_miss_action: drop
    lossless_fdb_miss_action: flood
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
SCHEDULER:
  scheduler.port: {meter_type: bytes, pir: "12500000000", pbs: "9216"}
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
            lossless_fdb_miss_action: FdbMissAction::Flood,
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
                first_lane: (name == "Ethernet0").then_some(0),
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
    fn full_config_port_shaper() {
        let config = full().config;
        let shapers: Vec<Option<usize>> = config.port_buffers.iter().map(|b| b.port_scheduler).collect();
        assert_eq!(shapers, [Some(0), Some(0), None, None]);
        assert_eq!(config.schedulers[0].params.pir, Some(12_500_000_000));
        assert_eq!(config.pools.len(), 1);
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
            ("lossless_fdb_miss_action", "flooding"),
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
    fn sonic_tables_not_modelled_are_warnings() {
        let mut db = base_with("FLEX_COUNTER_TABLE", "QUEUE", "FLEX_COUNTER_STATUS", "enable");
        db.set("FLEX_COUNTER_TABLE", "PG_WATERMARK", "FLEX_COUNTER_STATUS", "enable");
        db.set("BGP_NEIGHBOR", "10.0.0.1", "asn", "65200");
        let warnings = compile(&db).unwrap().warnings;
        let found: Vec<(String, &str)> =
            warnings.iter().map(|w| (w.location(), w.message.as_str())).collect();
        let message = "SONiC table not modelled by Lossless: accepted, ignored";
        assert_eq!(
            found,
            [("BGP_NEIGHBOR|".to_string(), message), ("FLEX_COUNTER_TABLE|".to_string(), message)]
        );
    }

    #[test]
    fn unknown_tables_are_errors_with_a_suggestion() {
        let db = base_with("BUFER_QUEUE", "Ethernet0|3-4", "profile", "egress_lossless_profile");
        assert_error(&db, "BUFER_QUEUE|", "", "did you mean BUFFER_QUEUE?");
        let db = base_with("buffer_pool", "p", "size", "1");
        assert_error(&db, "buffer_pool|", "", "did you mean BUFFER_POOL?");
        let db = base_with("MY_OWN_TABLE", "x", "y", "z");
        assert_error(&db, "MY_OWN_TABLE|", "", "MY_OWN_TABLE is no SONiC table");
    }

    #[test]
    fn unknown_fields_are_errors_with_a_suggestion_and_no_cascade() {
        let db = base_with("PORT", "Ethernet0", "colour", "blue");
        assert_error(&db, "PORT|Ethernet0|colour", "blue", "unknown field colour (fields of PORT: speed");
        // A misspelled required field: one error, no "speed is required" after it.
        let mut db = base();
        let fields = db.tables.get_mut("PORT").unwrap().get_mut("Ethernet0").unwrap();
        let speed = fields.remove("speed").unwrap();
        fields.insert("sped".into(), speed.clone());
        assert_error(&db, "PORT|Ethernet0|sped", &speed, "unknown field sped; did you mean speed?");
        // SONiC's own fields the model does not use are accepted.
        let db = base_with("PORT", "Ethernet0", "link_training", "off");
        assert!(compile(&db).unwrap().warnings.is_empty());
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

    // Buffers, QoS scheduling, WRED and the PFC watchdog.

    use crate::model::config::{
        AsicSettings, BufferPool, BufferProfile, EcnMarkPoint, MeterType, PfcWdAction, PfcWdDetectionRule,
        PfcWdGlobal, PfcWdPort, PoolDirection, SchedulerKind, SchedulerParams, SchedulerProfile, Threshold,
        ThresholdMode, WredColour, WredProfile,
    };

    const TH_BALANCED: &str = include_str!("../../../../../configs/profiles/th_balanced.yaml");
    const SN2700: &str = include_str!("../../../../../configs/profiles/sn2700.yaml");

    fn pool_index(config: &SwitchConfig, name: &str) -> usize {
        config.pools.iter().position(|p| p.name == name).unwrap_or_else(|| panic!("no pool {name}"))
    }

    fn profile_index(config: &SwitchConfig, name: &str) -> usize {
        config.profiles.iter().position(|p| p.name == name).unwrap_or_else(|| panic!("no profile {name}"))
    }

    fn profile<'c>(config: &'c SwitchConfig, name: &str) -> &'c BufferProfile {
        &config.profiles[profile_index(config, name)]
    }

    fn pool(name: &str, direction: PoolDirection, mode: ThresholdMode, size: u64, xoff: u64) -> BufferPool {
        BufferPool { name: name.into(), direction, mode, size_bytes: size, xoff_bytes: xoff }
    }

    /// A profile of `pool` with no headroom.
    fn plain_profile(
        config: &SwitchConfig,
        name: &str,
        pool: &str,
        size: u64,
        threshold: Threshold,
    ) -> BufferProfile {
        BufferProfile {
            name: name.into(),
            pool: pool_index(config, pool),
            size_bytes: size,
            threshold,
            xon_bytes: 0,
            xoff_bytes: 0,
            xon_offset_bytes: 0,
        }
    }

    fn azure_lossless(green_min: u64) -> WredProfile {
        let colour = |min| WredColour {
            enabled: true,
            min_bytes: min,
            max_bytes: 2_097_152,
            drop_probability_percent: 5,
        };
        WredProfile {
            name: "AZURE_LOSSLESS".into(),
            ecn: [true; 3],
            colours: [colour(green_min), colour(1_048_576), colour(1_048_576)],
            weight: 0,
        }
    }

    fn dwrr(name: &str, weight: u8) -> SchedulerProfile {
        SchedulerProfile {
            name: name.into(),
            params: SchedulerParams { weight, ..SchedulerParams::default() },
        }
    }

    /// The QUEUE, SCHEDULER, WRED and PFC_WD parts both platform profiles share (qos_config.j2).
    fn assert_t0_scheduling(config: &SwitchConfig, green_min: u64) {
        assert_eq!(config.wred_profiles, vec![azure_lossless(green_min)]);
        assert_eq!(config.schedulers, vec![dwrr("scheduler.0", 14), dwrr("scheduler.1", 15)]);
        for buffers in &config.port_buffers {
            let s = |i| Some(i);
            assert_eq!(buffers.queue_scheduler, [s(0), s(0), s(0), s(1), s(1), s(0), s(0), None]);
            assert_eq!(buffers.queue_wred, [None, None, None, s(0), s(0), None, None, None]);
            assert_eq!(buffers.port_scheduler, None);
        }
        let watchdog = PfcWdPort {
            action: PfcWdAction::Drop,
            detection_time_ms: 400,
            restoration_time_ms: Some(400),
            pfc_stat_history: false,
        };
        assert_eq!(config.pfc_wd, vec![Some(watchdog); 5]);
        assert_eq!(config.pfc_wd_global, PfcWdGlobal { poll_interval_ms: 100, ..PfcWdGlobal::default() });
        assert!(config.qos.iter().all(|q| q.pfc_enable == 0b0001_1000 && q.pfcwd_sw_enable == 0b0001_1000));
    }

    #[test]
    fn th_balanced_profile_compiles_with_its_numbers() {
        let Compiled { config, warnings } = compile(&yaml(TH_BALANCED)).unwrap();
        assert_eq!(warnings, vec![]);
        assert_eq!(config.asic, AsicSettings::of(AsicFamily::Tomahawk));
        assert_eq!(config.ports.len(), 5);
        assert_eq!(config.routes.len(), 2);
        use PoolDirection::{Egress, Ingress};
        use ThresholdMode::{Dynamic, Static};
        assert_eq!(
            config.pools,
            vec![
                pool("egress_lossless_pool", Egress, Static, 15_982_720, 0),
                pool("egress_lossy_pool", Egress, Dynamic, 9_243_812, 0),
                pool("ingress_lossless_pool", Ingress, Dynamic, 10_875_072, 4_194_112),
            ]
        );
        assert_eq!(config.profiles.len(), 5);
        let lossy_in = plain_profile(
            &config,
            "ingress_lossy_profile",
            "ingress_lossless_pool",
            0,
            Threshold::Dynamic(3),
        );
        assert_eq!(*profile(&config, "ingress_lossy_profile"), lossy_in);
        let lossless_out = plain_profile(
            &config,
            "egress_lossless_profile",
            "egress_lossless_pool",
            1518,
            Threshold::Static(15_982_720),
        );
        assert_eq!(*profile(&config, "egress_lossless_profile"), lossless_out);
        let lossy_out =
            plain_profile(&config, "egress_lossy_profile", "egress_lossy_pool", 1518, Threshold::Dynamic(3));
        assert_eq!(*profile(&config, "egress_lossy_profile"), lossy_out);
        let pg_lossless = |name: &str, xoff| BufferProfile {
            xon_bytes: 2288,
            xoff_bytes: xoff,
            xon_offset_bytes: 2288,
            ..plain_profile(&config, name, "ingress_lossless_pool", 1248, Threshold::Dynamic(0))
        };
        let pg_100g = pg_lossless("pg_lossless_100000_40m_profile", 177_632);
        assert_eq!(*profile(&config, "pg_lossless_100000_40m_profile"), pg_100g);
        let pg_25g = pg_lossless("pg_lossless_25000_40m_profile", 53_248);
        assert_eq!(*profile(&config, "pg_lossless_25000_40m_profile"), pg_25g);

        let p = |name| Some(profile_index(&config, name));
        let (lossy_out, lossless_out) = (p("egress_lossy_profile"), p("egress_lossless_profile"));
        for (port, buffers) in config.ports.iter().zip(&config.port_buffers) {
            let lossless_pg = p(if port.speed_mbps == 100_000 {
                "pg_lossless_100000_40m_profile"
            } else {
                "pg_lossless_25000_40m_profile"
            });
            let lossy_pg = p("ingress_lossy_profile");
            assert_eq!(
                buffers.pg_profile,
                [lossy_pg, None, None, lossless_pg, lossless_pg, None, None, None]
            );
            let queues =
                [lossy_out, lossy_out, lossy_out, lossless_out, lossless_out, lossy_out, lossy_out, None];
            assert_eq!(buffers.queue_profile, queues);
            assert!(buffers.ingress_profile_list.is_empty() && buffers.egress_profile_list.is_empty());
        }
        assert_t0_scheduling(&config, 250_000);
    }

    #[test]
    fn sn2700_profile_compiles_with_its_numbers() {
        let Compiled { config, warnings } = compile(&yaml(SN2700)).unwrap();
        assert_eq!(warnings, vec![]);
        assert_eq!(config.asic, AsicSettings::of(AsicFamily::Spectrum1));
        use PoolDirection::{Egress, Ingress};
        use ThresholdMode::{Dynamic, Static};
        assert_eq!(
            config.pools,
            vec![
                pool("egress_lossless_pool", Egress, Dynamic, 13_945_824, 0),
                pool("egress_lossy_pool", Egress, Dynamic, 3_302_912, 0),
                pool("ingress_lossless_pool", Ingress, Dynamic, 3_302_912, 0),
                pool("ingress_lossy_pool", Ingress, Dynamic, 3_302_912, 0),
                pool("ingress_zero_pool", Ingress, Static, 0, 0),
            ]
        );
        let expected = [
            ("ingress_lossless_profile", "ingress_lossless_pool", 0, 7),
            ("ingress_lossy_profile", "ingress_lossy_pool", 0, 3),
            ("egress_lossless_profile", "egress_lossless_pool", 0, 7),
            ("egress_lossy_profile", "egress_lossy_pool", 9216, 7),
            ("q_lossy_profile", "egress_lossy_pool", 0, 3),
        ];
        for (name, pool_name, size, dynamic_th) in expected {
            let wanted = plain_profile(&config, name, pool_name, size, Threshold::Dynamic(dynamic_th));
            assert_eq!(*profile(&config, name), wanted);
        }
        for (name, size, xoff) in [
            ("pg_lossless_100000_5m_profile", 50_176, 30_720),
            ("pg_lossless_25000_5m_profile", 49_152, 29_696),
        ] {
            let wanted = BufferProfile {
                xon_bytes: 19_456,
                xoff_bytes: xoff,
                ..plain_profile(&config, name, "ingress_lossless_pool", size, Threshold::Dynamic(0))
            };
            assert_eq!(*profile(&config, name), wanted);
        }
        let p = |name| Some(profile_index(&config, name));
        let q_lossy = p("q_lossy_profile");
        for (port, buffers) in config.ports.iter().zip(&config.port_buffers) {
            let lossless_pg = p(if port.speed_mbps == 100_000 {
                "pg_lossless_100000_5m_profile"
            } else {
                "pg_lossless_25000_5m_profile"
            });
            let lossy_pg = p("ingress_lossy_profile");
            assert_eq!(
                buffers.pg_profile,
                [lossy_pg, None, None, lossless_pg, lossless_pg, None, None, None]
            );
            let lossless_q = p("egress_lossless_profile");
            let queues = [q_lossy, q_lossy, q_lossy, lossless_q, lossless_q, q_lossy, q_lossy, None];
            assert_eq!(buffers.queue_profile, queues);
            let list = |names: [&str; 2]| names.map(|n| profile_index(&config, n)).to_vec();
            assert_eq!(
                buffers.ingress_profile_list,
                list(["ingress_lossless_profile", "ingress_lossy_profile"])
            );
            assert_eq!(
                buffers.egress_profile_list,
                list(["egress_lossless_profile", "egress_lossy_profile"])
            );
        }
        // PFC_PRIORITY_TO_PRIORITY_GROUP_MAP AZURE {3: 3, 4: 4}, unlisted priorities to themselves.
        assert!(config.qos.iter().all(|q| q.pfc_to_pg == [0, 1, 2, 3, 4, 5, 6, 7]));
        assert_t0_scheduling(&config, 1_048_576);
    }

    #[test]
    fn shared_limit_is_the_single_consumer_steady_state() {
        use super::buffers::shared_limit_bytes;
        let pool = pool("p", PoolDirection::Ingress, ThresholdMode::Dynamic, 10_875_072, 0);
        let with = |threshold| BufferProfile {
            name: "x".into(),
            pool: 0,
            size_bytes: 0,
            threshold,
            xon_bytes: 0,
            xoff_bytes: 0,
            xon_offset_bytes: 0,
        };
        // alpha 1: half the pool; alpha 8: 8/9; alpha 1/2: 1/3; alpha 1/256: 1/257; static 0: no limit.
        assert_eq!(shared_limit_bytes(&with(Threshold::Dynamic(0)), &pool), 5_437_536);
        assert_eq!(shared_limit_bytes(&with(Threshold::Dynamic(3)), &pool), 9_666_730);
        assert_eq!(shared_limit_bytes(&with(Threshold::Dynamic(-1)), &pool), 3_625_024);
        assert_eq!(shared_limit_bytes(&with(Threshold::Dynamic(-8)), &pool), 42_315);
        assert_eq!(shared_limit_bytes(&with(Threshold::Static(0)), &pool), 10_875_072);
        assert_eq!(shared_limit_bytes(&with(Threshold::Static(1000)), &pool), 1000);
    }

    #[test]
    fn parse_index_range_takes_a_number_or_a_range() {
        assert_eq!(parse_index_range("3", "PG"), Ok(3..=3));
        assert_eq!(parse_index_range("3-4", "PG"), Ok(3..=4));
        assert_eq!(parse_index_range("0-7", "queue"), Ok(0..=7));
        for bad in ["8", "3-8", "-1", "3-", "a-b", "3-4-5", ""] {
            assert!(parse_index_range(bad, "PG").is_err(), "{bad}");
        }
        assert!(parse_index_range("4-3", "PG").unwrap_err().contains("empty range"));
    }

    #[test]
    fn thousands_groups_digits() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(15_982_720), "15,982,720");
    }

    /// A small TH-like buffer setup (no lossless priorities: BASE has no PORT_QOS_MAP).
    const BUFFERS: &str = r#"
BUFFER_POOL:
  ingress_lossless_pool: {type: ingress, mode: dynamic, size: 10875072, xoff: 4194112}
  egress_lossless_pool: {type: egress, mode: static, size: 15982720}
  egress_lossy_pool: {type: egress, mode: dynamic, size: 9243812}
BUFFER_PROFILE:
  ingress_lossy_profile: {pool: ingress_lossless_pool, size: 0, dynamic_th: 3}
  pg_lossless_100000_5m_profile:
    {pool: ingress_lossless_pool, size: 1248, xon: 2288, xoff: 165568, dynamic_th: 0, xon_offset: 2288}
  egress_lossless_profile: {pool: egress_lossless_pool, size: 1518, static_th: 15982720}
  egress_lossy_profile: {pool: egress_lossy_pool, size: 1518, dynamic_th: 3}
"#;

    fn buffers() -> ConfigDb {
        yaml(&format!("{BASE}{BUFFERS}"))
    }

    fn buffers_with(table: &str, key: &str, field: &str, value: &str) -> ConfigDb {
        let mut db = buffers();
        db.set(table, key, field, value);
        db
    }

    fn warnings(db: &ConfigDb) -> Vec<ConfigIssue> {
        compile(db).unwrap_or_else(|e| panic!("{e}")).warnings
    }

    /// Compiles without errors, with exactly one warning, at `location`, with `mentions` in its message.
    fn assert_warning(db: &ConfigDb, location: &str, mentions: &str) {
        let warnings = warnings(db);
        assert_eq!(warnings.len(), 1, "{warnings:#?}");
        assert_eq!(warnings[0].location(), location, "{}", warnings[0]);
        assert!(warnings[0].message.contains(mentions), "{:?} does not mention {mentions:?}", warnings[0]);
    }

    #[test]
    fn buffer_base_compiles() {
        let Compiled { config, warnings } = compile(&buffers()).unwrap();
        assert_eq!(warnings, vec![]);
        assert_eq!(config.pools.len(), 3);
        assert_eq!(config.profiles.len(), 4);
        assert!(config.port_buffers.iter().all(|b| *b == PortBuffers::default()));
        assert_eq!(config.pfc_wd, vec![None; 4]);
    }

    #[test]
    fn buffer_asic_settings() {
        let mut db = base();
        for (field, value) in [
            ("cell_size", "96"),
            ("mmu_size", "16777216"),
            ("ecn_mark_point", "dequeue"),
            ("pfc_pause_quanta", "1000"),
            ("pfc_refresh_percent", "80"),
            ("random_seed", "18446744073709551615"),
        ] {
            db.set("BUFFER_ASIC", "global", field, value);
        }
        let asic = compile(&db).unwrap().config.asic;
        let expected = AsicSettings {
            personality: AsicFamily::Generic.personality(),
            cell_bytes: 96,
            mmu_size_bytes: Some(16_777_216),
            ecn_mark_point: EcnMarkPoint::Dequeue,
            pfc_pause_quanta: 1000,
            pfc_refresh_percent: 80,
            random_seed: u64::MAX,
        };
        assert_eq!(asic, expected);
    }

    #[test]
    fn asic_personality_from_device_metadata() {
        let family = |field: &str, value: &str| {
            let db = base_with("DEVICE_METADATA", "localhost", field, value);
            compile(&db).map(|c| (c.config.asic, c.warnings))
        };
        let (asic, warnings) = family("hwsku", "Arista-7050CX3-32S-C32").unwrap();
        assert_eq!((asic.family(), asic.cell_bytes, warnings.len()), (AsicFamily::Trident3, 256, 0));
        let (asic, _) = family("platform", "x86_64-mlnx_msn2700-r0").unwrap();
        assert_eq!((asic.family(), asic.cell_bytes), (AsicFamily::Spectrum1, 96));
        let (asic, _) = family("asic", "th").unwrap();
        assert_eq!((asic.family(), asic.personality.partitions()), (AsicFamily::Tomahawk, 4));
        let (asic, warnings) = family("hwsku", "DellEMC-Z9332f-O32").unwrap();
        assert_eq!(asic.family(), AsicFamily::Generic);
        assert_eq!(warnings.len(), 1);
        assert_eq!(warnings[0].location(), "DEVICE_METADATA|localhost|hwsku");
        assert!(
            warnings[0].message.contains("no ASIC personality for DellEMC-Z9332f-O32"),
            "{}",
            warnings[0]
        );
        assert_error(
            &base_with("DEVICE_METADATA", "localhost", "asic", "th9"),
            "DEVICE_METADATA|localhost|asic",
            "th9",
            "not an ASIC family",
        );
        // BUFFER_ASIC overrides the family's cell size.
        let mut db = base_with("DEVICE_METADATA", "localhost", "hwsku", "Arista-7050CX3-32S-C32");
        db.set("BUFFER_ASIC", "global", "cell_size", "208");
        assert_eq!(compile(&db).unwrap().config.asic.cell_bytes, 208);
    }

    #[test]
    fn pools_fit_the_asic_buffer() {
        let mut db = buffers_with("DEVICE_METADATA", "localhost", "asic", "spc1");
        assert!(compile(&db).is_ok());
        db.set("BUFFER_POOL", "egress_lossless_pool", "size", "20000000");
        assert_error(
            &db,
            "BUFFER_POOL|egress_lossless_pool|size",
            "20000000",
            "more than the NVIDIA Spectrum buffer",
        );
    }

    #[test]
    fn buffer_asic_fields_are_checked() {
        let cases = [
            ("cell_size", "0"),
            ("cell_size", "16385"),
            ("mmu_size", "16M"),
            ("ecn_mark_point", "egress"),
            ("pfc_pause_quanta", "0"),
            ("pfc_pause_quanta", "65536"),
            ("pfc_refresh_percent", "0"),
            ("pfc_refresh_percent", "101"),
            ("random_seed", "-1"),
        ];
        for (field, bad) in cases {
            let db = base_with("BUFFER_ASIC", "global", field, bad);
            assert_error(&db, &format!("BUFFER_ASIC|global|{field}"), bad, bad);
        }
    }

    #[test]
    fn buffer_asic_key_is_global() {
        let db = base_with("BUFFER_ASIC", "GLOBAL", "cell_size", "208");
        assert_error(&db, "BUFFER_ASIC|GLOBAL", "GLOBAL", "global");
    }

    #[test]
    fn pool_type_is_ingress_or_egress() {
        let db = buffers_with("BUFFER_POOL", "egress_lossy_pool", "type", "both");
        assert_error(&db, "BUFFER_POOL|egress_lossy_pool|type", "both", "not supported");
        let db = buffers_with("BUFFER_POOL", "new_pool", "size", "1000");
        assert_error(&db, "BUFFER_POOL|new_pool|type", "", "type is required");
    }

    #[test]
    fn pool_size_is_required() {
        let db = buffers_with("BUFFER_POOL", "new_pool", "type", "ingress");
        assert_error(&db, "BUFFER_POOL|new_pool|size", "", "size is required");
        let db = buffers_with("BUFFER_POOL", "egress_lossy_pool", "size", "9M");
        assert_error(&db, "BUFFER_POOL|egress_lossy_pool|size", "9M", "9M");
    }

    #[test]
    fn pool_mode_is_static_or_dynamic() {
        let db = buffers_with("BUFFER_POOL", "egress_lossy_pool", "mode", "shared");
        assert_error(&db, "BUFFER_POOL|egress_lossy_pool|mode", "shared", "static, dynamic");
        // The default is dynamic.
        let mut db = base();
        db.set("BUFFER_POOL", "p", "type", "ingress").set("BUFFER_POOL", "p", "size", "1000");
        assert_eq!(compile(&db).unwrap().config.pools[0].mode, ThresholdMode::Dynamic);
    }

    #[test]
    fn pool_xoff_only_on_ingress() {
        let db = buffers_with("BUFFER_POOL", "egress_lossy_pool", "xoff", "1000");
        assert_error(&db, "BUFFER_POOL|egress_lossy_pool|xoff", "1000", "only allowed on ingress pools");
        assert!(compile(&buffers_with("BUFFER_POOL", "egress_lossy_pool", "xoff", "0")).is_ok());
    }

    #[test]
    fn pool_percentage_is_not_modelled() {
        let db = buffers_with("BUFFER_POOL", "egress_lossy_pool", "percentage", "50");
        assert_warning(&db, "BUFFER_POOL|egress_lossy_pool|percentage", "not modelled");
    }

    #[test]
    fn pool_xoff_fits_in_the_pool() {
        let db = buffers_with("BUFFER_POOL", "ingress_lossless_pool", "xoff", "99999999");
        assert_error(
            &db,
            "BUFFER_POOL|ingress_lossless_pool|xoff",
            "99999999",
            "larger than the pool's size",
        );
    }

    /// `buffers()` with lossless PGs 3-4 on Ethernet0 (pfc_enable 3,4) using `profile`.
    fn lossless_pgs_with(profile: &str) -> ConfigDb {
        let mut db = buffers();
        db.set("PORT_QOS_MAP", "Ethernet0", "pfc_enable", "3,4");
        db.set("BUFFER_PG", "Ethernet0|3-4", "profile", profile);
        db
    }

    #[test]
    fn pfc_on_a_lossy_pg_is_refused() {
        let db = lossless_pgs_with("ingress_lossy_profile");
        let errors = errors(&db);
        assert_eq!(errors.len(), 2, "{errors:#?}");
        assert_eq!(errors[0].location(), "PORT_QOS_MAP|Ethernet0|pfc_enable");
        assert_eq!(errors[0].value, "3,4");
        assert!(errors[0].message.contains("priority 3 is PFC-enabled but its PG 3 has the lossy profile"));
        assert!(compile(&lossless_pgs_with("pg_lossless_100000_5m_profile")).is_ok());
    }

    #[test]
    fn lossless_profile_needs_xoff() {
        let mut db = lossless_pgs_with("pg_lossless_100000_5m_profile");
        db.set("BUFFER_PROFILE", "pg_lossless_100000_5m_profile", "xoff", "0");
        assert_error(
            &db,
            "BUFFER_PROFILE|pg_lossless_100000_5m_profile|xoff",
            "0",
            "xoff 0 on a lossless profile",
        );
    }

    #[test]
    fn lossless_xoff_fits_in_the_shared_headroom_pool() {
        let mut db = lossless_pgs_with("pg_lossless_100000_5m_profile");
        db.set("BUFFER_POOL", "ingress_lossless_pool", "xoff", "100000");
        assert_error(
            &db,
            "BUFFER_PROFILE|pg_lossless_100000_5m_profile|xoff",
            "165568",
            "more than the shared headroom pool of ingress_lossless_pool can ever give (100,000 bytes)",
        );
    }

    #[test]
    fn pfcwd_sw_enable_defaults_to_pfc_enable() {
        let db = lossless_pgs_with("pg_lossless_100000_5m_profile");
        assert_eq!(compile(&db).unwrap().config.qos[0].pfcwd_sw_enable, 0b0001_1000);
        let mut db = lossless_pgs_with("pg_lossless_100000_5m_profile");
        db.set("PORT_QOS_MAP", "Ethernet0", "pfcwd_sw_enable", "");
        assert_eq!(compile(&db).unwrap().config.qos[0].pfcwd_sw_enable, 0);
    }

    #[test]
    fn misspelled_threshold_gives_one_error() {
        let mut db = buffers();
        db.set("BUFFER_PROFILE", "q", "pool", "egress_lossy_pool").set(
            "BUFFER_PROFILE",
            "q",
            "dynamic_tj",
            "0",
        );
        assert_error(&db, "BUFFER_PROFILE|q|dynamic_tj", "0", "did you mean dynamic_th?");
    }

    #[test]
    fn profile_pool_is_required_and_exists() {
        let mut db = buffers();
        db.set("BUFFER_PROFILE", "new_profile", "dynamic_th", "0");
        assert_error(&db, "BUFFER_PROFILE|new_profile|pool", "", "pool is required");
        db.set("BUFFER_PROFILE", "new_profile", "pool", "[BUFFER_POOL|no_pool]");
        assert_error(&db, "BUFFER_PROFILE|new_profile|pool", "[BUFFER_POOL|no_pool]", "names no BUFFER_POOL");
        db.set("BUFFER_PROFILE", "new_profile", "pool", "[BUFFER_PROFILE|ingress_lossless_pool]");
        assert_error(
            &db,
            "BUFFER_PROFILE|new_profile|pool",
            "[BUFFER_PROFILE|ingress_lossless_pool]",
            "not to BUFFER_POOL",
        );
        for good in ["ingress_lossless_pool", "[BUFFER_POOL|ingress_lossless_pool]"] {
            db.set("BUFFER_PROFILE", "new_profile", "pool", good);
            let config = compile(&db).unwrap().config;
            assert_eq!(profile(&config, "new_profile").pool, pool_index(&config, "ingress_lossless_pool"));
        }
    }

    #[test]
    fn a_rejected_pool_raises_no_second_error() {
        // The pool has no size: its profiles are left out without further errors.
        let mut db = buffers();
        db.tables.get_mut("BUFFER_POOL").unwrap().get_mut("egress_lossy_pool").unwrap().remove("size");
        db.set("BUFFER_QUEUE", "Ethernet0|0", "profile", "egress_lossy_profile");
        assert_error(&db, "BUFFER_POOL|egress_lossy_pool|size", "", "size is required");
    }

    #[test]
    fn profile_has_exactly_one_threshold() {
        let db = buffers_with("BUFFER_PROFILE", "ingress_lossy_profile", "static_th", "1000");
        assert_error(&db, "BUFFER_PROFILE|ingress_lossy_profile", "ingress_lossy_profile", "both set");
        let db = buffers_with("BUFFER_PROFILE", "new_profile", "pool", "ingress_lossless_pool");
        assert_error(&db, "BUFFER_PROFILE|new_profile", "new_profile", "needs dynamic_th or static_th");
    }

    #[test]
    fn dynamic_th_is_in_range() {
        let db = buffers_with("BUFFER_PROFILE", "pg_lossless_100000_5m_profile", "dynamic_th", "9");
        let errors = errors(&db);
        assert_eq!(errors.len(), 1, "{errors:#?}");
        assert_eq!(
            errors[0].to_string(),
            "BUFFER_PROFILE|pg_lossless_100000_5m_profile|dynamic_th: 9 is outside -8..7"
        );
        for bad in ["-9", "+1", "1.5", "", "-"] {
            let db = buffers_with("BUFFER_PROFILE", "ingress_lossy_profile", "dynamic_th", bad);
            assert_error(&db, "BUFFER_PROFILE|ingress_lossy_profile|dynamic_th", bad, bad);
        }
        let db = buffers_with("BUFFER_PROFILE", "ingress_lossy_profile", "dynamic_th", "-8");
        let config = compile(&db).unwrap().config;
        assert_eq!(profile(&config, "ingress_lossy_profile").threshold, Threshold::Dynamic(-8));
    }

    #[test]
    fn profile_threshold_mode_is_the_profiles_own() {
        // SAI sets the threshold mode per profile: static_th on a dynamic pool (Arista's templates) and
        // dynamic_th on a static one are both accepted and kept as written.
        let mut db = buffers();
        db.set("BUFFER_PROFILE", "q", "pool", "egress_lossless_pool").set(
            "BUFFER_PROFILE",
            "q",
            "dynamic_th",
            "0",
        );
        db.set("BUFFER_PROFILE", "p", "pool", "egress_lossy_pool").set(
            "BUFFER_PROFILE",
            "p",
            "static_th",
            "1000",
        );
        let Compiled { config, warnings } = compile(&db).unwrap();
        assert_eq!(warnings, vec![]);
        assert_eq!(profile(&config, "q").threshold, Threshold::Dynamic(0));
        assert_eq!(profile(&config, "p").threshold, Threshold::Static(1000));
    }

    #[test]
    fn profile_size_fits_in_its_pool() {
        let db = buffers_with("BUFFER_PROFILE", "egress_lossy_profile", "size", "9243813");
        assert_error(
            &db,
            "BUFFER_PROFILE|egress_lossy_profile|size",
            "9243813",
            "larger than pool egress_lossy_pool",
        );
        let db = buffers_with("BUFFER_PROFILE", "egress_lossless_profile", "static_th", "15982721");
        assert_warning(&db, "BUFFER_PROFILE|egress_lossless_profile|static_th", "larger than pool");
    }

    #[test]
    fn headroom_fields_are_ignored_on_egress_profiles() {
        let db = buffers_with("BUFFER_PROFILE", "egress_lossy_profile", "xoff", "1000");
        assert_warning(&db, "BUFFER_PROFILE|egress_lossy_profile|xoff", "ignored on egress profiles");
        let config = compile(&db).unwrap().config;
        assert_eq!(profile(&config, "egress_lossy_profile").xoff_bytes, 0);
    }

    #[test]
    fn profile_sonic_fields_are_accepted() {
        let mut db = buffers_with("BUFFER_PROFILE", "ingress_lossy_profile", "headroom_type", "static");
        db.set("BUFFER_PROFILE", "ingress_lossy_profile", "packet_discard_action", "trim");
        assert_eq!(warnings(&db), vec![]);
        let db = buffers_with("BUFFER_PROFILE", "ingress_lossy_profile", "packet_discard_action", "mark");
        assert_error(&db, "BUFFER_PROFILE|ingress_lossy_profile|packet_discard_action", "mark", "mark");
    }

    #[test]
    fn buffer_pg_and_queue_keys_take_port_lists_and_ranges() {
        let mut db =
            buffers_with("BUFFER_PG", "Ethernet0,Ethernet4|3-4", "profile", "pg_lossless_100000_5m_profile");
        db.set("BUFFER_PG", "Ethernet8|0", "profile", "[BUFFER_PROFILE|ingress_lossy_profile]");
        db.set("BUFFER_QUEUE", "Ethernet0|0-7", "profile", "egress_lossy_profile");
        let config = compile(&db).unwrap().config;
        let lossless = Some(profile_index(&config, "pg_lossless_100000_5m_profile"));
        for port in [0, 1] {
            assert_eq!(
                config.port_buffers[port].pg_profile,
                [None, None, None, lossless, lossless, None, None, None]
            );
        }
        assert_eq!(
            config.port_buffers[2].pg_profile[0],
            Some(profile_index(&config, "ingress_lossy_profile"))
        );
        assert_eq!(
            config.port_buffers[0].queue_profile,
            [Some(profile_index(&config, "egress_lossy_profile")); 8]
        );
        assert_eq!(config.port_buffers[3], PortBuffers::default());
    }

    #[test]
    fn buffer_pg_key_is_checked() {
        let cases = [
            ("Ethernet0|8", "8"),
            ("Ethernet0|4-3", "4-3"),
            ("Ethernet0|x", "x"),
            ("Ethernet99|3", "Ethernet99"),
        ];
        for (key, value) in cases {
            let db = buffers_with("BUFFER_PG", key, "profile", "ingress_lossy_profile");
            assert_error(&db, &format!("BUFFER_PG|{key}"), value, value);
        }
        let db = buffers_with("BUFFER_QUEUE", "Ethernet0", "profile", "egress_lossy_profile");
        assert_error(&db, "BUFFER_QUEUE|Ethernet0", "Ethernet0", "<port>|<queue>");
    }

    #[test]
    fn buffer_pg_profile_is_required_and_not_null() {
        let db = buffers_with("BUFFER_PG", "Ethernet0|3-4", "profile", "NULL");
        assert_error(
            &db,
            "BUFFER_PG|Ethernet0|3-4|profile",
            "NULL",
            "NULL (computed) profiles need the control plane's headroom calculator",
        );
        let db = buffers_with("BUFFER_PG", "Ethernet0|3-4", "size", "0");
        let locations: Vec<String> = errors(&db).iter().map(ConfigIssue::location).collect();
        assert_eq!(locations, ["BUFFER_PG|Ethernet0|3-4|size", "BUFFER_PG|Ethernet0|3-4|profile"]);
        let db = buffers_with("BUFFER_QUEUE", "Ethernet0|3-4", "profile", "no_profile");
        assert_error(&db, "BUFFER_QUEUE|Ethernet0|3-4|profile", "no_profile", "names no BUFFER_PROFILE");
    }

    #[test]
    fn buffer_pg_needs_ingress_and_buffer_queue_egress_profiles() {
        let db = buffers_with("BUFFER_PG", "Ethernet0|0", "profile", "egress_lossy_profile");
        assert_error(
            &db,
            "BUFFER_PG|Ethernet0|0|profile",
            "egress_lossy_profile",
            "needs a profile of an ingress pool",
        );
        let db = buffers_with("BUFFER_QUEUE", "Ethernet0|0", "profile", "ingress_lossy_profile");
        assert_error(
            &db,
            "BUFFER_QUEUE|Ethernet0|0|profile",
            "ingress_lossy_profile",
            "needs a profile of an egress pool",
        );
    }

    #[test]
    fn buffer_pg_slot_is_configured_once() {
        // Keys are read in order: `Ethernet0,Ethernet4|4` comes first (',' sorts before '|').
        let mut db = buffers_with("BUFFER_PG", "Ethernet0|3-4", "profile", "pg_lossless_100000_5m_profile");
        db.set("BUFFER_PG", "Ethernet0,Ethernet4|4", "profile", "ingress_lossy_profile");
        assert_error(
            &db,
            "BUFFER_PG|Ethernet0|3-4",
            "Ethernet0",
            "Ethernet0 PG 4 is already configured by BUFFER_PG|Ethernet0,Ethernet4|4",
        );
        let mut db = buffers_with("BUFFER_QUEUE", "Ethernet0|0-2", "profile", "egress_lossy_profile");
        db.set("BUFFER_QUEUE", "Ethernet0|2", "profile", "egress_lossy_profile");
        assert_error(&db, "BUFFER_QUEUE|Ethernet0|2", "Ethernet0", "queue 2");
    }

    #[test]
    fn profile_lists_name_one_profile_per_pool_of_their_direction() {
        let list = "ingress_lossy_profile,[BUFFER_PROFILE|pg_lossless_100000_5m_profile]";
        let db = buffers_with("BUFFER_PORT_INGRESS_PROFILE_LIST", "Ethernet0", "profile_list", list);
        assert_error(
            &db,
            "BUFFER_PORT_INGRESS_PROFILE_LIST|Ethernet0|profile_list",
            list,
            "both use pool ingress_lossless_pool",
        );
        let list = "egress_lossless_profile";
        let db = buffers_with("BUFFER_PORT_INGRESS_PROFILE_LIST", "Ethernet0", "profile_list", list);
        assert_error(&db, "BUFFER_PORT_INGRESS_PROFILE_LIST|Ethernet0|profile_list", list, "ingress pool");
        let list = "ingress_lossy_profile";
        let db = buffers_with("BUFFER_PORT_EGRESS_PROFILE_LIST", "Ethernet0", "profile_list", list);
        assert_error(&db, "BUFFER_PORT_EGRESS_PROFILE_LIST|Ethernet0|profile_list", list, "egress pool");
        let list = "egress_lossless_profile,[BUFFER_PROFILE|egress_lossy_profile]";
        let db = buffers_with("BUFFER_PORT_EGRESS_PROFILE_LIST", "Ethernet0,Ethernet4", "profile_list", list);
        let config = compile(&db).unwrap().config;
        let wanted = vec![
            profile_index(&config, "egress_lossless_profile"),
            profile_index(&config, "egress_lossy_profile"),
        ];
        assert_eq!(config.port_buffers[0].egress_profile_list, wanted);
        assert_eq!(config.port_buffers[1].egress_profile_list, wanted);
        let mut db = db.clone();
        db.set("BUFFER_PORT_EGRESS_PROFILE_LIST", "Ethernet4", "profile_list", "egress_lossy_profile");
        assert_error(&db, "BUFFER_PORT_EGRESS_PROFILE_LIST|Ethernet4", "Ethernet4", "already configured");
    }

    const WRED: &str = r#"
WRED_PROFILE:
  AZURE_LOSSLESS:
    ecn: ecn_all
    wred_green_enable: "true"
    wred_yellow_enable: "true"
    wred_red_enable: "true"
    green_min_threshold: 250000
    green_max_threshold: 2097152
    yellow_min_threshold: 1048576
    yellow_max_threshold: 2097152
    red_min_threshold: 1048576
    red_max_threshold: 2097152
    green_drop_probability: 5
    yellow_drop_probability: 5
    red_drop_probability: 5
"#;

    fn wred_with(field: &str, value: &str) -> ConfigDb {
        let mut db = yaml(&format!("{BASE}{WRED}"));
        db.set("WRED_PROFILE", "AZURE_LOSSLESS", field, value);
        db
    }

    fn wred_without(field: &str) -> ConfigDb {
        let mut db = yaml(&format!("{BASE}{WRED}"));
        db.tables.get_mut("WRED_PROFILE").unwrap().get_mut("AZURE_LOSSLESS").unwrap().remove(field);
        db
    }

    #[test]
    fn wred_profile_defaults_and_weight() {
        let mut db = base_with("WRED_PROFILE", "ECN_ONLY", "ecn", "ecn_green");
        db.set("WRED_PROFILE", "ECN_ONLY", "green_min_threshold", "150000")
            .set("WRED_PROFILE", "ECN_ONLY", "green_max_threshold", "1500000")
            .set("WRED_PROFILE", "ECN_ONLY", "weight", "4");
        let wred = &compile(&db).unwrap().config.wred_profiles[0];
        let green = WredColour {
            enabled: false,
            min_bytes: 150_000,
            max_bytes: 1_500_000,
            drop_probability_percent: 100,
        };
        let unset = WredColour { drop_probability_percent: 100, ..WredColour::default() };
        let expected = WredProfile {
            name: "ECN_ONLY".into(),
            ecn: [true, false, false],
            colours: [green, unset, unset],
            weight: 4,
        };
        assert_eq!(*wred, expected);
    }

    #[test]
    fn wred_fields_are_checked() {
        let cases = [
            ("ecn", "ecn_blue"),
            ("weight", "16"),
            ("green_drop_probability", "101"),
            ("wred_red_enable", "yes"),
            ("yellow_max_threshold", "2M"),
        ];
        for (field, bad) in cases {
            assert_error(&wred_with(field, bad), &format!("WRED_PROFILE|AZURE_LOSSLESS|{field}"), bad, bad);
        }
    }

    #[test]
    fn wred_enabled_colour_needs_its_thresholds() {
        let mut db = wred_without("yellow_max_threshold");
        db.set("WRED_PROFILE", "AZURE_LOSSLESS", "ecn", "ecn_green");
        assert_error(
            &db,
            "WRED_PROFILE|AZURE_LOSSLESS|yellow_max_threshold",
            "",
            "wred_yellow_enable is true",
        );
    }

    #[test]
    fn wred_ecn_colour_needs_its_thresholds() {
        let mut db = wred_without("red_min_threshold");
        db.set("WRED_PROFILE", "AZURE_LOSSLESS", "wred_red_enable", "false");
        assert_error(&db, "WRED_PROFILE|AZURE_LOSSLESS|red_min_threshold", "", "ecn ecn_all marks red");
        // Neither marked nor enabled: no thresholds needed.
        db.set("WRED_PROFILE", "AZURE_LOSSLESS", "ecn", "ecn_green_yellow");
        assert!(compile(&db).is_ok());
    }

    #[test]
    fn wred_min_threshold_is_at_most_max() {
        let db = wred_with("green_min_threshold", "2097153");
        assert_error(
            &db,
            "WRED_PROFILE|AZURE_LOSSLESS|green_min_threshold",
            "2097153",
            "above green_max_threshold 2097152",
        );
        assert!(compile(&wred_with("green_min_threshold", "2097152")).is_ok());
    }

    #[test]
    fn scheduler_fields() {
        let mut db = base_with("SCHEDULER", "strict", "type", "strict");
        for (field, value) in [
            ("priority", "7"),
            ("meter_type", "packets"),
            ("cir", "1000"),
            ("cbs", "10"),
            ("pir", "2000"),
            ("pbs", "20"),
            ("policer", "true"),
        ] {
            db.set("SCHEDULER", "strict", field, value);
        }
        db.touch("SCHEDULER", "wrr");
        let Compiled { config, warnings } = compile(&db).unwrap();
        assert_eq!(warnings, vec![]);
        let strict = SchedulerProfile {
            name: "strict".into(),
            params: SchedulerParams {
                kind: SchedulerKind::Strict,
                weight: 1,
                priority: Some(7),
                meter_type: MeterType::Packets,
                cir: Some(1000),
                cbs: Some(10),
                pir: Some(2000),
                pbs: Some(20),
                policer: true,
            },
        };
        let mut wrr = dwrr("wrr", 1);
        wrr.params.kind = SchedulerKind::Wrr;
        assert_eq!(config.schedulers, vec![strict, wrr]);
    }

    #[test]
    fn scheduler_fields_are_checked() {
        let cases = [
            ("type", "FIFO"),
            ("weight", "0"),
            ("weight", "101"),
            ("priority", "10"),
            ("meter_type", "bits"),
            ("pir", "1G"),
        ];
        for (field, bad) in cases {
            assert_error(&base_with("SCHEDULER", "s", field, bad), &format!("SCHEDULER|s|{field}"), bad, bad);
        }
    }

    #[test]
    fn scheduler_cir_is_at_most_pir() {
        let mut db = base_with("SCHEDULER", "s", "cir", "2000");
        db.set("SCHEDULER", "s", "pir", "1000");
        assert_error(&db, "SCHEDULER|s|cir", "2000", "cir 2000 is above pir 1000");
    }

    #[test]
    fn scheduler_policer_needs_strict_and_pir() {
        let mut db = base_with("SCHEDULER", "s", "type", "DWRR");
        db.set("SCHEDULER", "s", "policer", "true").set("SCHEDULER", "s", "pir", "1000");
        assert_warning(&db, "SCHEDULER|s|policer", "STRICT");
        assert!(!compile(&db).unwrap().config.schedulers[0].params.policer);
        let db = base_with("SCHEDULER", "s", "type", "STRICT");
        let mut db = db.clone();
        db.set("SCHEDULER", "s", "policer", "true");
        assert_warning(&db, "SCHEDULER|s|policer", "pir");
    }

    #[test]
    fn queue_binds_scheduler_and_wred() {
        let mut db = yaml(&format!("{BASE}{WRED}"));
        db.set("SCHEDULER", "scheduler.1", "type", "DWRR").set("SCHEDULER", "scheduler.1", "weight", "15");
        db.set("QUEUE", "Ethernet0,Ethernet4|3-4", "scheduler", "[SCHEDULER|scheduler.1]");
        db.set("QUEUE", "Ethernet0,Ethernet4|3-4", "wred_profile", "AZURE_LOSSLESS");
        db.set("QUEUE", "Ethernet8|3", "wred_profile", "[WRED_PROFILE|AZURE_LOSSLESS]");
        let config = compile(&db).unwrap().config;
        for port in [0, 1] {
            let b = &config.port_buffers[port];
            assert_eq!(b.queue_scheduler, [None, None, None, Some(0), Some(0), None, None, None]);
            assert_eq!(b.queue_wred, [None, None, None, Some(0), Some(0), None, None, None]);
        }
        assert_eq!(config.port_buffers[2].queue_wred[3], Some(0));
        assert_eq!(config.port_buffers[2].queue_scheduler[3], None);
    }

    #[test]
    fn queue_references_exist() {
        let db = base_with("QUEUE", "Ethernet0|3", "scheduler", "scheduler.1");
        assert_error(&db, "QUEUE|Ethernet0|3|scheduler", "scheduler.1", "names no SCHEDULER entry");
        let db = base_with("QUEUE", "Ethernet0|3", "wred_profile", "[SCHEDULER|AZURE_LOSSLESS]");
        assert_error(
            &db,
            "QUEUE|Ethernet0|3|wred_profile",
            "[SCHEDULER|AZURE_LOSSLESS]",
            "not to WRED_PROFILE",
        );
        let db = base_with("QUEUE", "Ethernet0|3-9", "scheduler", "scheduler.1");
        assert_error(&db, "QUEUE|Ethernet0|3-9", "3-9", "3-9");
    }

    #[test]
    fn port_qos_scheduler_is_the_port_shaper() {
        let mut db = base_with("SCHEDULER", "scheduler.port", "pir", "1250000000");
        db.set("PORT_QOS_MAP", "Ethernet4,Ethernet8", "scheduler", "[SCHEDULER|scheduler.port]");
        let config = compile(&db).unwrap().config;
        let shapers: Vec<Option<usize>> = config.port_buffers.iter().map(|b| b.port_scheduler).collect();
        assert_eq!(shapers, [None, Some(0), Some(0), None]);
        let db = base_with("PORT_QOS_MAP", "Ethernet4", "scheduler", "scheduler.port");
        assert_error(&db, "PORT_QOS_MAP|Ethernet4|scheduler", "scheduler.port", "names no SCHEDULER entry");
    }

    #[test]
    fn pfc_watchdog_examples() {
        let text = format!(
            "{BASE}{}",
            r#"
PFC_WD:
  GLOBAL: {POLL_INTERVAL: 200, BIG_RED_SWITCH: enable, detection_rule: broadcom, drop_ingress: "true"}
  Ethernet0,Ethernet4: {action: forward, detection_time: 200, restoration_time: 2000, pfc_stat_history: enable}
  Ethernet8: {detection_time: 400}
"#
        );
        let config = compile(&yaml(&text)).unwrap().config;
        let global = PfcWdGlobal {
            poll_interval_ms: 200,
            big_red_switch: true,
            detection_rule: PfcWdDetectionRule::Broadcom,
            drop_ingress: true,
        };
        assert_eq!(config.pfc_wd_global, global);
        let uplink = PfcWdPort {
            action: PfcWdAction::Forward,
            detection_time_ms: 200,
            restoration_time_ms: Some(2000),
            pfc_stat_history: true,
        };
        let server = PfcWdPort {
            action: PfcWdAction::Drop,
            detection_time_ms: 400,
            restoration_time_ms: None,
            pfc_stat_history: false,
        };
        assert_eq!(config.pfc_wd, vec![Some(uplink), Some(uplink), Some(server), None]);
        // Without PFC_WD|GLOBAL: the defaults.
        let config = compile(&base_with("PFC_WD", "Ethernet0", "detection_time", "100")).unwrap().config;
        assert_eq!(config.pfc_wd_global, PfcWdGlobal::default());
        assert_eq!(config.pfc_wd[0].map(|w| w.action), Some(PfcWdAction::Drop));
    }

    #[test]
    fn pfc_watchdog_action_is_drop_forward_or_alert() {
        let mut db = base_with("PFC_WD", "Ethernet0", "detection_time", "400");
        db.set("PFC_WD", "Ethernet0", "action", "reset");
        assert_error(&db, "PFC_WD|Ethernet0|action", "reset", "Invalid PFC Watchdog action reset");
        db.set("PFC_WD", "Ethernet0", "action", "alert");
        assert_eq!(compile(&db).unwrap().config.pfc_wd[0].unwrap().action, PfcWdAction::Alert);
    }

    #[test]
    fn pfc_watchdog_detection_time_is_required() {
        let db = base_with("PFC_WD", "Ethernet0", "action", "drop");
        assert_error(&db, "PFC_WD|Ethernet0|detection_time", "", "detection_time missing");
    }

    #[test]
    fn pfc_watchdog_times_are_in_range() {
        let cases = [
            ("detection_time", "99"),
            ("detection_time", "5001"),
            ("restoration_time", "60001"),
            ("restoration_time", "1s"),
            ("pfc_stat_history", "on"),
        ];
        for (field, bad) in cases {
            let mut db = base_with("PFC_WD", "Ethernet0", "detection_time", "400");
            db.set("PFC_WD", "Ethernet0", field, bad);
            assert_error(&db, &format!("PFC_WD|Ethernet0|{field}"), bad, bad);
        }
    }

    #[test]
    fn pfc_watchdog_global_fields_are_checked() {
        let cases = [
            ("POLL_INTERVAL", "99"),
            ("POLL_INTERVAL", "1001"),
            ("BIG_RED_SWITCH", "on"),
            ("detection_rule", "mellanox"),
            ("drop_ingress", "1"),
        ];
        for (field, bad) in cases {
            assert_error(
                &base_with("PFC_WD", "GLOBAL", field, bad),
                &format!("PFC_WD|GLOBAL|{field}"),
                bad,
                bad,
            );
        }
    }

    #[test]
    fn pfc_watchdog_times_are_at_least_the_poll_interval() {
        let mut db = base_with("PFC_WD", "GLOBAL", "POLL_INTERVAL", "500");
        db.set("PFC_WD", "Ethernet0", "detection_time", "600").set(
            "PFC_WD",
            "Ethernet0",
            "restoration_time",
            "400",
        );
        assert_error(
            &db,
            "PFC_WD|Ethernet0|restoration_time",
            "400",
            "shorter than PFC_WD|GLOBAL POLL_INTERVAL 500 ms",
        );
        db.set("PFC_WD", "Ethernet0", "restoration_time", "500").set(
            "PFC_WD",
            "Ethernet0",
            "detection_time",
            "499",
        );
        assert_error(&db, "PFC_WD|Ethernet0|detection_time", "499", "POLL_INTERVAL 500 ms");
    }

    #[test]
    fn pfc_watchdog_ports_exist_and_have_one_entry() {
        let db = base_with("PFC_WD", "Ethernet0,Ethernet99", "detection_time", "400");
        assert_error(&db, "PFC_WD|Ethernet0,Ethernet99", "Ethernet99", "Ethernet99");
        let mut db = base_with("PFC_WD", "Ethernet0,Ethernet4", "detection_time", "400");
        db.set("PFC_WD", "Ethernet4", "detection_time", "200");
        assert_error(
            &db,
            "PFC_WD|Ethernet4",
            "Ethernet4",
            "already configured by PFC_WD|Ethernet0,Ethernet4",
        );
    }

    /// Four ports, priority 3 lossless everywhere, static pools so that the numbers are plain: each ingress
    /// PG holds 3,000 + 100,000 + 80,000 = 183,000 bytes; each lossless queue takes 50,000 + `QUEUE_TH`.
    const UCLOUD: &str = r#"
PORT_QOS_MAP:
  Ethernet0,Ethernet4,Ethernet8,Ethernet12: {pfc_enable: "3"}
BUFFER_POOL:
  ingress_pool: {type: ingress, mode: static, size: 10000000}
  egress_pool: {type: egress, mode: static, size: 10000000}
BUFFER_PROFILE:
  pg_profile: {pool: ingress_pool, size: 3000, static_th: 100000, xon: 0, xoff: 80000}
  queue_profile: {pool: egress_pool, size: 50000, static_th: QUEUE_TH}
BUFFER_PG:
  Ethernet0,Ethernet4,Ethernet8,Ethernet12|3: {profile: pg_profile}
BUFFER_QUEUE:
  Ethernet0,Ethernet4,Ethernet8,Ethernet12|3: {profile: queue_profile}
"#;

    fn ucloud(queue_th: u64) -> ConfigDb {
        yaml(&format!("{BASE}{}", UCLOUD.replace("QUEUE_TH", &queue_th.to_string())))
    }

    #[test]
    fn ucloud_inequality_holds_for_a_sane_config() {
        // 3 other ingress ports × 183,000 = 549,000 <= 550,000.
        assert_eq!(warnings(&ucloud(500_000)), vec![]);
    }

    #[test]
    fn ucloud_inequality_warns_for_an_oversubscribed_queue() {
        let warnings = warnings(&ucloud(400_000));
        // One warning for the four queues of the profile (Ethernet0, 4, 8 and 12), naming the first.
        let locations: Vec<String> = warnings.iter().map(ConfigIssue::location).collect();
        assert_eq!(locations, ["BUFFER_QUEUE|Ethernet0|3|profile"]);
        assert_eq!(
            warnings[0].message,
            "UCloud check: ingress can hold 3 × 183,000 = 549,000 bytes for this queue but it can take only 450,000 \
             (and on 3 more lossless queue(s) with this profile)"
        );
        assert_eq!(warnings[0].value, "queue_profile");
    }

    #[test]
    fn ucloud_inequality_caps_the_pgs_by_their_shared_pool() {
        // The three PGs share 250,000 bytes of pool, not 3 × 100,000: 9,000 + 250,000 + 240,000 = 499,000.
        let mut db = ucloud(400_000);
        db.set("BUFFER_POOL", "ingress_pool", "size", "250000");
        let found = warnings(&db);
        assert_eq!(found.len(), 1, "{found:#?}");
        assert_eq!(
            found[0].message,
            "UCloud check: ingress can hold 499,000 bytes (3 × 183,000 = 549,000, capped by pool ingress_pool) \
             for this queue but it can take only 450,000 (and on 3 more lossless queue(s) with this profile)"
        );
        db.set("BUFFER_POOL", "ingress_pool", "size", "200000");
        assert_eq!(warnings(&db), vec![]);
    }

    #[test]
    fn lossless_pg_without_profile_is_a_warning() {
        let mut db = buffers_with("PORT_QOS_MAP", "Ethernet0,Ethernet4", "pfc_enable", "3,4");
        db.set("BUFFER_PG", "Ethernet0|3", "profile", "pg_lossless_100000_5m_profile");
        // Ethernet4 has no buffer tables at all: it is not buffer-managed, no warning.
        assert_warning(
            &db,
            "BUFFER_PG|Ethernet0|4",
            "lossless PG has no buffer profile: admitted without limit, never sends PFC",
        );
    }

    #[test]
    fn mmu_size_holds_pools_and_reservations() {
        // Pools 36,101,604; reserved: 6 lossy queues × 1,518 + lossless PG 3 of Ethernet0 1,248; its xoff
        // 165,568 is private headroom as the pool has no shared headroom pool here.
        let mut db = buffers_with("BUFFER_POOL", "ingress_lossless_pool", "xoff", "0");
        db.set("PORT_QOS_MAP", "Ethernet0", "pfc_enable", "3")
            .set("BUFFER_PG", "Ethernet0|0", "profile", "ingress_lossy_profile")
            .set("BUFFER_PG", "Ethernet0|3", "profile", "pg_lossless_100000_5m_profile")
            .set("BUFFER_QUEUE", "Ethernet0,Ethernet4|0-2", "profile", "egress_lossy_profile")
            .set("BUFFER_ASIC", "global", "mmu_size", "36000000");
        assert_error(
            &db,
            "BUFFER_ASIC|global|mmu_size",
            "36000000",
            "pools 36,101,604 + shared headroom 0 + reserved 10,356 + private headroom 165,568 = 36,277,528 bytes \
             exceed mmu_size 36,000,000",
        );
        db.set("BUFFER_ASIC", "global", "mmu_size", "36277528");
        assert!(compile(&db).is_ok());
        // With a shared headroom pool, the PG's xoff comes from it instead.
        db.set("BUFFER_POOL", "ingress_lossless_pool", "xoff", "4194112");
        assert_error(
            &db,
            "BUFFER_ASIC|global|mmu_size",
            "36277528",
            "shared headroom 4,194,112 + reserved 10,356 + private headroom 0",
        );
    }

    #[test]
    fn platform_profiles_compile_without_issues() {
        for text in [TH_BALANCED, SN2700] {
            let compiled = compile(&yaml(text)).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(compiled.warnings, vec![]);
        }
    }
}
