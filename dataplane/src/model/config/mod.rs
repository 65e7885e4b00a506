//! Switch configuration: SONiC CONFIG_DB content in, a typed and validated [`SwitchConfig`] out.
//!
//! The input is [`ConfigDb`], the shape of SONiC's CONFIG_DB and of `config_db.json`: tables of keys of
//! fields, every value a string (`PORT|Ethernet0|speed = "100000"`). [`compile`] parses and validates the
//! whole of it at once, so that every error names the `TABLE|key|field` it is about, and produces the typed
//! form the switch model runs on. A config with any error is rejected whole; warnings (unknown tables or
//! fields, suspicious but legal values) are reported alongside a successful compile.
//!
//! Table and field names are SONiC's (`../shared/reference/sonic.md` §1). Extensions SONiC lacks are named
//! plainly and documented on their types: `SWITCH|switch` aging and flood settings, `BORDER_RULE`, the
//! `netdev` field of PORT.

mod parse;

pub use parse::compile;

use crate::wire::EthernetAddress;
use ipnet::IpNet;
use std::collections::BTreeMap;
use std::fmt;
use std::net::IpAddr;

/// CONFIG_DB content: table → key → field → value, all strings, ordered for stable output.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct ConfigDb {
    pub tables: BTreeMap<String, BTreeMap<String, BTreeMap<String, String>>>,
}

impl ConfigDb {
    /// Sets one field (creating the table and key as needed).
    pub fn set(&mut self, table: &str, key: &str, field: &str, value: impl Into<String>) -> &mut Self {
        self.tables
            .entry(table.to_owned())
            .or_default()
            .entry(key.to_owned())
            .or_default()
            .insert(field.to_owned(), value.into());
        self
    }

    /// Creates a key with no fields (as SONiC's `INTERFACE|Ethernet0` or `VLAN_MEMBER` entries may be).
    pub fn touch(&mut self, table: &str, key: &str) -> &mut Self {
        self.tables.entry(table.to_owned()).or_default().entry(key.to_owned()).or_default();
        self
    }

    /// Parses YAML or JSON (JSON is YAML) in CONFIG_DB shape. Scalars of any type (numbers, booleans) are
    /// taken as their text; a sequence of scalars is joined with commas (`pfc_enable: [3, 4]` = `"3,4"`).
    pub fn from_yaml_str(text: &str) -> Result<ConfigDb, String> {
        let value: serde_yaml::Value = serde_yaml::from_str(text).map_err(|e| e.to_string())?;
        let mut db = ConfigDb::default();
        let serde_yaml::Value::Mapping(tables) = value else {
            return Err("the top level must be a mapping of TABLE names".into());
        };
        for (table, keys) in tables {
            let table = scalar(&table).ok_or("table names must be strings")?;
            let serde_yaml::Value::Mapping(keys) = keys else {
                return Err(format!("{table}: must be a mapping of keys"));
            };
            for (key, fields) in keys {
                let key = scalar(&key).ok_or_else(|| format!("{table}: keys must be strings"))?;
                db.touch(&table, &key);
                match fields {
                    serde_yaml::Value::Null => {}
                    serde_yaml::Value::Mapping(fields) => {
                        for (field, value) in fields {
                            let field =
                                scalar(&field).ok_or_else(|| format!("{table}|{key}: bad field name"))?;
                            let text = match &value {
                                serde_yaml::Value::Sequence(items) => {
                                    let parts: Option<Vec<String>> = items.iter().map(scalar).collect();
                                    parts.map(|p| p.join(","))
                                }
                                other => scalar(other),
                            }
                            .ok_or_else(|| {
                                format!("{table}|{key}|{field}: must be a scalar or a list of scalars")
                            })?;
                            db.set(&table, &key, &field, text);
                        }
                    }
                    _ => return Err(format!("{table}|{key}: must be a mapping of fields")),
                }
            }
        }
        Ok(db)
    }
}

fn scalar(v: &serde_yaml::Value) -> Option<String> {
    match v {
        serde_yaml::Value::String(s) => Some(s.clone()),
        serde_yaml::Value::Number(n) => Some(n.to_string()),
        serde_yaml::Value::Bool(b) => Some(b.to_string()),
        serde_yaml::Value::Null => Some(String::new()),
        _ => None,
    }
}

/// A finding about a configuration, located as SONiC locates it: `TABLE|key|field`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ConfigIssue {
    pub table: String,
    pub key: String,
    /// Empty when the whole entry is meant.
    pub field: String,
    /// The value as written (empty when a field is missing).
    pub value: String,
    /// The rule that was broken, in words, including the value where that helps.
    pub message: String,
}

impl ConfigIssue {
    pub fn new(table: &str, key: &str, field: &str, value: &str, message: impl Into<String>) -> ConfigIssue {
        ConfigIssue {
            table: table.to_owned(),
            key: key.to_owned(),
            field: field.to_owned(),
            value: value.to_owned(),
            message: message.into(),
        }
    }

    /// `TABLE|key|field` (or `TABLE|key` for a whole entry).
    pub fn location(&self) -> String {
        if self.field.is_empty() {
            format!("{}|{}", self.table, self.key)
        } else {
            format!("{}|{}|{}", self.table, self.key, self.field)
        }
    }
}

impl fmt::Display for ConfigIssue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.location(), self.message)
    }
}

/// Why a configuration was rejected: every error found, not only the first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigErrors {
    pub errors: Vec<ConfigIssue>,
    pub warnings: Vec<ConfigIssue>,
}

impl fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "configuration rejected ({} error(s))", self.errors.len())?;
        for e in &self.errors {
            write!(f, "\n  {e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigErrors {}

/// A compiled configuration and the warnings found while compiling it.
#[derive(Debug, Clone)]
pub struct Compiled {
    pub config: SwitchConfig,
    pub warnings: Vec<ConfigIssue>,
}

/// Index of a port in [`SwitchConfig::ports`] (ports are ordered by name, `Ethernet4` before `Ethernet12`).
pub type PortIndex = usize;

/// The typed, validated switch configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct SwitchConfig {
    /// `DEVICE_METADATA|localhost|mac`: the router MAC of every interface without its own.
    pub device_mac: EthernetAddress,
    pub switch: SwitchSettings,
    pub ports: Vec<PortConfig>,
    /// VLAN ID → VLAN.
    pub vlans: BTreeMap<u16, VlanConfig>,
    /// Router interfaces: one per routed port (`INTERFACE`) and per VLAN with `VLAN_INTERFACE`.
    pub interfaces: Vec<RouterInterface>,
    pub neighbors: Vec<StaticNeighbor>,
    pub routes: Vec<StaticRoute>,
    pub fdb: Vec<StaticFdb>,
    /// Per port, same order as `ports`.
    pub qos: Vec<PortQos>,
}

/// `SWITCH|switch`: switch-wide settings (SONiC has `fdb_aging_time` here; the rest are Lossless's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SwitchSettings {
    /// `fdb_aging_time` (seconds in CONFIG_DB, default 600 as in SONiC; 0 disables aging).
    pub fdb_aging_ns: u64,
    /// `neigh_aging_time` (seconds, default 14400 = 4 h, the ARP timeout of common switch OSes; 0 disables).
    pub neigh_aging_ns: u64,
    /// `lossy_fdb_miss_action` (`flood` default, or `drop`): what a routed lossy packet does when its
    /// neighbour's MAC has no FDB entry. Lossless packets are always dropped.
    pub lossy_fdb_miss_action: FdbMissAction,
    /// `ecmp_hash_seed` (default 0): perturbs the 5-tuple hash.
    pub ecmp_hash_seed: u32,
}

impl Default for SwitchSettings {
    fn default() -> Self {
        SwitchSettings {
            fdb_aging_ns: 600 * NS_PER_SEC,
            neigh_aging_ns: 14_400 * NS_PER_SEC,
            lossy_fdb_miss_action: FdbMissAction::Flood,
            ecmp_hash_seed: 0,
        }
    }
}

pub const NS_PER_SEC: u64 = 1_000_000_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FdbMissAction {
    Flood,
    Drop,
}

/// `PORT|<name>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortConfig {
    pub name: String,
    /// `speed` in Mb/s (mandatory).
    pub speed_mbps: u32,
    /// `mtu` in bytes of IP packet (default 9100, SONiC's).
    pub mtu: u32,
    /// `mac`: the port's router MAC (default: the device MAC).
    pub mac: EthernetAddress,
    /// `admin_status` `up`/`down` (default up here; SONiC's default is down but every template sets it).
    pub admin_up: bool,
    /// `alias`, free text.
    pub alias: Option<String>,
    /// `netdev`: the Linux interface switchd binds this port to (Lossless extension).
    pub netdev: Option<String>,
}

/// `VLAN|Vlan<id>` and its `VLAN_MEMBER|Vlan<id>|<port>` entries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VlanConfig {
    pub name: String,
    pub vid: u16,
    /// Member ports, ordered by port index; `tagged` from `tagging_mode` (default untagged).
    pub members: Vec<VlanMember>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VlanMember {
    pub port: PortIndex,
    pub tagged: bool,
}

/// A router interface: a routed port or a VLAN interface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouterInterface {
    /// `Ethernet0` or `Vlan1000`.
    pub name: String,
    pub kind: RifKind,
    pub mac: EthernetAddress,
    /// The interface's own addresses with their subnet lengths (`10.0.0.1/31`).
    pub addrs: Vec<IpNet>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RifKind {
    Port(PortIndex),
    Vlan(u16),
}

/// Index of a router interface in [`SwitchConfig::interfaces`].
pub type RifIndex = usize;

/// `NEIGH|<interface>|<ip>`: `neigh` = MAC, `family` = IPv4/IPv6.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StaticNeighbor {
    pub rif: RifIndex,
    pub ip: IpAddr,
    pub mac: EthernetAddress,
}

/// `STATIC_ROUTE|<prefix>`: `nexthop` (comma list, ECMP), optional `ifname` (comma list, same length),
/// `blackhole` (`true` drops everything to the prefix).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StaticRoute {
    pub prefix: IpNet,
    pub nexthops: Vec<NextHop>,
    pub blackhole: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NextHop {
    pub ip: IpAddr,
    /// The interface named in `ifname`, or the one whose subnet contains `ip` (resolved at compile time).
    pub rif: RifIndex,
}

/// `FDB|Vlan<id>|<mac>`: `port` (a static FDB entry; never ages).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StaticFdb {
    pub vid: u16,
    pub mac: EthernetAddress,
    pub port: PortIndex,
}

/// The QoS maps and flags of one port, resolved from `PORT_QOS_MAP|<port>` (falling back to
/// `PORT_QOS_MAP|global` for `dscp_to_tc_map`) and the map tables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortQos {
    /// DSCP → TC (`dscp_to_tc_map`); `None` when the port has no DSCP map (IP traffic then uses TC 0).
    pub dscp_to_tc: Option<[u8; 64]>,
    /// PCP → TC (`dot1p_to_tc_map`); when present, tagged frames are classified by PCP.
    pub dot1p_to_tc: Option<[u8; 8]>,
    /// TC → queue (`tc_to_queue_map`, default identity). Applied on the egress port.
    pub tc_to_queue: [u8; 8],
    /// TC → PG (`tc_to_pg_map`, default: all 0). Applied on the ingress port.
    pub tc_to_pg: [u8; 8],
    /// PFC priority → queue (`pfc_to_queue_map`, default identity): which queue a received PFC pauses.
    pub pfc_to_queue: [u8; 8],
    /// PFC priority → PG (`pfc_to_pg_map`, default identity): which PG's XOFF names which priority.
    pub pfc_to_pg: [u8; 8],
    /// `pfc_enable` as a bit mask (bit n = priority n is lossless).
    pub pfc_enable: u8,
    /// `pfcwd_sw_enable` as a bit mask.
    pub pfcwd_sw_enable: u8,
    /// `BORDER_RULE|<port>|<seq>` entries, in ascending `seq`.
    pub border_rules: Vec<BorderRule>,
}

impl Default for PortQos {
    fn default() -> Self {
        let identity = [0, 1, 2, 3, 4, 5, 6, 7];
        PortQos {
            dscp_to_tc: None,
            dot1p_to_tc: None,
            tc_to_queue: identity,
            tc_to_pg: [0; 8],
            pfc_to_queue: identity,
            pfc_to_pg: identity,
            pfc_enable: 0,
            pfcwd_sw_enable: 0,
            border_rules: Vec::new(),
        }
    }
}

/// `BORDER_RULE|<port>|<seq>` (Lossless extension, after UCloud's border classification): ingress rules
/// matched in `seq` order before the QoS maps; the first match applies. Match fields are optional (absent
/// = any): `udp_dport`, `dscp`. Actions: `set_dscp` (rewrites the packet's DSCP, then classification uses
/// the new value), `set_queue` (overrides the egress queue), `packet_action` = `forward` (default) or `drop`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BorderRule {
    pub seq: u32,
    pub udp_dport: Option<u16>,
    pub dscp: Option<u8>,
    pub set_dscp: Option<u8>,
    pub set_queue: Option<u8>,
    pub drop: bool,
}

impl BorderRule {
    /// Does a packet with this DSCP and UDP destination port match?
    pub fn matches(&self, dscp: Option<u8>, udp_dport: Option<u16>) -> bool {
        self.dscp.is_none_or(|d| dscp == Some(d)) && self.udp_dport.is_none_or(|p| udp_dport == Some(p))
    }
}
