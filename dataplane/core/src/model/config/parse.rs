//! The configuration compiler: [`ConfigDb`] (SONiC CONFIG_DB, every value a string) in, [`SwitchConfig`] out.
//!
//! Tables are read in dependency order (ports, VLANs, router interfaces, then what refers to them), one
//! small function per table. Every finding is collected in a [`Compiler`] and located as SONiC locates it,
//! `TABLE|key|field`, with the value as written; nothing stops at the first error, and an entry that
//! cannot be resolved is left out so that it does not cause further errors elsewhere.
//!
//! Cross-table references are accepted in both of SONiC's syntaxes, `AZURE` and the pre-202111
//! `[DSCP_TO_TC_MAP|AZURE]`. Keys of per-port tables may join several ports with commas
//! (`PORT_QOS_MAP|Ethernet0,Ethernet4`), and those of PG and queue tables name an index or a range
//! (`BUFFER_PG|Ethernet0|3-4`). Ports and switch-wide tables are in [`switch`], the value parsers in
//! [`values`]; the forwarding tables in [`forwarding`]; the QoS maps and `PORT_QOS_MAP` in [`qos`]; the
//! MMU tables in [`buffers`], with the checks that span tables (the UCloud inequality, the ASIC's buffer);
//! `WRED_PROFILE`, `SCHEDULER`, `QUEUE` and `PFC_WD` in [`scheduling`]. The dynamic buffer model's inputs
//! ([`DEFERRED_TABLES`]) are accepted without comment; another SONiC table is a warning (not modelled), a
//! name that is no SONiC table or field an error with the closest name ([`names`]). What is accepted and
//! refused: `docs/configuration.md`.

mod buffers;
mod forwarding;
mod names;
mod qos;
mod scheduling;
mod switch;
mod values;

use values::*;
pub use values::{parse_dynamic_th, parse_ref};

use super::{
    BorderRule, Compiled, ConfigDb, ConfigErrors, ConfigIssue, FdbMissAction, NS_PER_SEC, NextHop,
    PortBuffers, PortConfig, PortId, PortQos, RifId, RifKind, RouterInterface, SchedulerProfile, StaticFdb,
    StaticNeighbor, StaticRoute, SwitchConfig, SwitchSettings, VlanConfig, VlanMember,
};
use crate::text::{natural_cmp, thousands};
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
    let port_map: PortMap =
        ports.iter().enumerate().map(|(i, p)| (p.name.as_str(), PortId::new(i))).collect();
    let mut vlans = cx.vlans();
    cx.vlan_members(&port_map, &mut vlans);
    let interfaces = cx.router_interfaces(&ports, &port_map, &vlans, device_mac);
    let rif_map: RifMap =
        interfaces.iter().enumerate().map(|(i, r)| (r.name.as_str(), RifId::new(i))).collect();
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
type PortMap<'p> = HashMap<&'p str, PortId>;
type RifMap<'r> = HashMap<&'r str, RifId>;
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
    fn key_ports(&mut self, e: Entry<'a>, names: &'a str, ports: &PortMap) -> Vec<(&'a str, PortId)> {
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
        owners: &mut HashMap<PortId, &'a str>,
    ) -> Vec<PortId> {
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
    ) -> Vec<(Entry<'a>, Vec<(PortId, usize)>)> {
        let mut owners: HashMap<(PortId, usize), &str> = HashMap::new();
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

#[cfg(test)]
mod tests;
