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
mod tests;
