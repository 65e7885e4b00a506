//! Switch configuration: SONiC CONFIG_DB content in, a typed and validated [`SwitchConfig`] out.
//!
//! The input is [`ConfigDb`], the shape of SONiC's CONFIG_DB and of `config_db.json`: tables of keys of
//! fields, every value a string (`PORT|Ethernet0|speed = "100000"`). [`compile`] parses and validates the
//! whole of it at once, so that every error names the `TABLE|key|field` it is about, and produces the typed
//! form the switch model runs on. A config with any error is rejected whole; warnings (unknown tables or
//! fields, suspicious but legal values) are reported alongside a successful compile.
//!
//! Table and field names are SONiC's (`docs/configuration.md`). Extensions SONiC lacks are named
//! plainly and documented on their types: `SWITCH|switch` aging and flood settings, `BORDER_RULE`, the
//! `netdev` field of PORT.

pub mod asic;
mod guard;
mod parse;

pub use asic::{AsicFamily, Personality};
pub use guard::{MAX_CONFIG_BYTES, MAX_NESTING_DEPTH, check_config_text};
pub use parse::{compile, parse_dynamic_th, parse_ref};

use crate::time::Nanos;
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

/// Control characters, and the invisible and bidirectional formatting ones (zero-width, LRM/RLM, ALM,
/// embeddings, overrides and isolates, BOM): what must not reach a terminal from a name.
pub(crate) fn unprintable(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061c}' | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2069}' | '\u{feff}'
        )
}

/// `s` with its [`unprintable`] characters escaped (`\u{202e}`).
pub(crate) fn printable(s: &str) -> String {
    if !s.chars().any(unprintable) {
        return s.to_owned();
    }
    s.chars().map(|c| if unprintable(c) { c.escape_unicode().to_string() } else { c.to_string() }).collect()
}

/// Tables whose entries a configuration push may only remove when it says so (`swctl apply --replace`, the
/// API's `replace`): losing a port, a router interface or a buffer profile is rarely what an operator
/// pushing a partial file meant.
pub const GUARDED_TABLES: [&str; 5] =
    ["PORT", "INTERFACE", "VLAN_INTERFACE", "BUFFER_PROFILE", "BUFFER_POOL"];

impl ConfigDb {
    /// The keys of [`GUARDED_TABLES`] this configuration has and `next` does not, as `TABLE|key`.
    pub fn guarded_removals(&self, next: &ConfigDb) -> Vec<String> {
        let mut removed = Vec::new();
        for table in GUARDED_TABLES {
            let Some(keys) = self.tables.get(table) else { continue };
            let kept = next.tables.get(table);
            for key in keys.keys().filter(|k| !kept.is_some_and(|t| t.contains_key(*k))) {
                removed.push(format!("{table}|{key}"));
            }
        }
        removed
    }

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
    /// Text nested deeper than [`MAX_NESTING_DEPTH`] or larger than [`MAX_CONFIG_BYTES`] is refused before
    /// it is parsed ([`check_config_text`]).
    pub fn from_yaml_str(text: &str) -> Result<ConfigDb, String> {
        check_config_text(text)?;
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
    /// An issue; control and invisible formatting characters in the location and value are kept escaped
    /// (`\u{202e}`), so that printing an issue never prints them.
    pub fn new(table: &str, key: &str, field: &str, value: &str, message: impl Into<String>) -> ConfigIssue {
        ConfigIssue {
            table: printable(table),
            key: printable(key),
            field: printable(field),
            value: printable(value),
            message: printable(&message.into()),
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

/// A port of the switch: its position in [`SwitchConfig::ports`] (ports are ordered by name, `Ethernet4`
/// before `Ethernet12`). A type of its own so that a queue, PG or priority number cannot pass for a port;
/// [`PortId::index`] indexes per-port vectors. Outside the model a port is named by its SONiC name
/// ([`Switch::port_id`](crate::model::Switch::port_id) finds it). Kept in 32 bits: it is in every queued
/// frame's buffer allocation, which the packet path moves several times per frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PortId(u32);

impl PortId {
    /// The port at this position in [`SwitchConfig::ports`]: for where a raw position genuinely enters
    /// (compiling a configuration, the simulator's port numbers, tests).
    pub const fn new(index: usize) -> PortId {
        assert!(index <= u32::MAX as usize, "port index beyond 32 bits");
        PortId(index as u32)
    }

    /// The position in [`SwitchConfig::ports`], for indexing per-port vectors.
    pub const fn index(self) -> usize {
        self.0 as usize
    }

    /// Every port of a switch with `count` ports, in order.
    pub fn all(count: usize) -> impl DoubleEndedIterator<Item = PortId> + ExactSizeIterator + Clone {
        (0..count).map(PortId::new)
    }
}

impl fmt::Display for PortId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// The typed, validated switch configuration.
#[derive(Debug, Clone, Default, PartialEq)]
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
    /// `BUFFER_ASIC|global`: cell size, total buffer and the buffer model's knobs.
    pub asic: AsicSettings,
    /// `BUFFER_POOL`, in key order; referenced by index.
    pub pools: Vec<BufferPool>,
    /// `BUFFER_PROFILE`, in key order; referenced by index.
    pub profiles: Vec<BufferProfile>,
    /// `WRED_PROFILE`, in key order; referenced by index.
    pub wred_profiles: Vec<WredProfile>,
    /// `SCHEDULER`, in key order; referenced by index.
    pub schedulers: Vec<SchedulerProfile>,
    /// Per port, same order as `ports`: BUFFER_PG, BUFFER_QUEUE, profile lists, QUEUE and the port shaper.
    pub port_buffers: Vec<PortBuffers>,
    /// `PFC_WD|<port>`, same order as `ports` (`None`: the watchdog does not watch the port).
    pub pfc_wd: Vec<Option<PfcWdPort>>,
    /// `PFC_WD|GLOBAL`.
    pub pfc_wd_global: PfcWdGlobal,
}

/// The ASIC: its family's [`Personality`] (from `DEVICE_METADATA|localhost` `asic`, `hwsku` or `platform`)
/// and `BUFFER_ASIC|global` (Lossless extension: SONiC keeps the cell size in STATE_DB's ASIC_TABLE and the
/// total in BUFFER_MAX_PARAM), whose fields override it: `cell_size` (bytes; default the family's),
/// `mmu_size` (bytes of buffer in all, default the family's; pools plus reservations must fit in it),
/// `ecn_mark_point` (`enqueue` default, or `dequeue` as the HPCC simulator does), `pfc_pause_quanta` (quanta
/// in XOFF frames, default 65535), `pfc_refresh_percent` (an asserted XOFF is re-sent after this percentage
/// of its pause time, default 50), `random_seed` (seed of the WRED random numbers, default 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AsicSettings {
    pub personality: Personality,
    pub cell_bytes: u32,
    pub mmu_size_bytes: Option<u64>,
    pub ecn_mark_point: EcnMarkPoint,
    pub pfc_pause_quanta: u16,
    pub pfc_refresh_percent: u8,
    pub random_seed: u64,
}

impl AsicSettings {
    /// A family's defaults.
    pub fn of(family: AsicFamily) -> AsicSettings {
        let personality = family.personality();
        AsicSettings {
            personality,
            cell_bytes: personality.cell_bytes,
            mmu_size_bytes: personality.buffer_bytes,
            ecn_mark_point: EcnMarkPoint::Enqueue,
            pfc_pause_quanta: 0xffff,
            pfc_refresh_percent: 50,
            random_seed: 1,
        }
    }

    pub fn family(&self) -> AsicFamily {
        self.personality.family
    }
}

impl Default for AsicSettings {
    fn default() -> Self {
        AsicSettings::of(AsicFamily::Generic)
    }
}

/// Where WRED/ECN looks at the queue: when a packet is enqueued (queue length in front of it) or dequeued
/// (queue length behind it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EcnMarkPoint {
    Enqueue,
    Dequeue,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PoolDirection {
    Ingress,
    Egress,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThresholdMode {
    Static,
    Dynamic,
}

/// `BUFFER_POOL|<name>`: `type` ingress|egress (`both` is rejected), `mode` static|dynamic (default
/// dynamic, as SAI), `size` (bytes of shared buffer), `xoff` (bytes of shared headroom pool, default 0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BufferPool {
    pub name: String,
    pub direction: PoolDirection,
    pub mode: ThresholdMode,
    pub size_bytes: u64,
    pub xoff_bytes: u64,
}

/// How far a PG or queue may grow into its pool's shared space.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Threshold {
    /// `dynamic_th` n: alpha = 2^n times the pool's free shared space (n in -8..=7).
    Dynamic(i8),
    /// `static_th`: an absolute cap in bytes (0 = no limit, as in SAI).
    Static(u64),
}

/// Index of a pool in [`SwitchConfig::pools`].
pub type PoolIndex = usize;
/// Index of a profile in [`SwitchConfig::profiles`].
pub type ProfileIndex = usize;

/// `BUFFER_PROFILE|<name>`: `pool`, `size` (reserved bytes), `dynamic_th` or `static_th` (exactly one; its
/// kind must match the pool's mode), `xon`, `xoff`, `xon_offset` (bytes, default 0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BufferProfile {
    pub name: String,
    pub pool: PoolIndex,
    pub size_bytes: u64,
    pub threshold: Threshold,
    pub xon_bytes: u64,
    pub xoff_bytes: u64,
    pub xon_offset_bytes: u64,
}

/// The buffer and scheduling bindings of one port.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PortBuffers {
    /// `BUFFER_PG|<port>|<pg or a-b>`: `profile` (`NULL` is rejected until headroom is computed: issue
    /// of the control plane); `None` = the PG is not managed (admitted without buffer limits).
    pub pg_profile: [Option<ProfileIndex>; 8],
    /// `BUFFER_QUEUE|<port>|<q or a-b>`: `profile`; `None` = unmanaged.
    pub queue_profile: [Option<ProfileIndex>; 8],
    /// `BUFFER_PORT_INGRESS_PROFILE_LIST|<port>`: `profile_list`, at most one profile per ingress pool: the
    /// port's cap on its shared usage of that pool.
    pub ingress_profile_list: Vec<ProfileIndex>,
    /// `BUFFER_PORT_EGRESS_PROFILE_LIST|<port>`: the same for egress pools.
    pub egress_profile_list: Vec<ProfileIndex>,
    /// `QUEUE|<port>|<q or a-b>`: `wred_profile`.
    pub queue_wred: [Option<usize>; 8],
    /// `QUEUE|<port>|<q or a-b>`: `scheduler` (`None`: DWRR weight 1, unshaped).
    pub queue_scheduler: [Option<usize>; 8],
    /// `PORT_QOS_MAP|<port>`: `scheduler`, the port shaper (its `pir`/`pbs`).
    pub port_scheduler: Option<usize>,
}

/// One colour of a WRED profile: `<colour>_min_threshold`, `<colour>_max_threshold` (bytes of queue),
/// `<colour>_drop_probability` (percent at max, default 100), `wred_<colour>_enable` (default false).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WredColour {
    pub enabled: bool,
    pub min_bytes: u64,
    pub max_bytes: u64,
    pub drop_probability_percent: u8,
}

/// `WRED_PROFILE|<name>`: `ecn` (ecn_none, ecn_green, ..., ecn_all), the three colours, and `weight`
/// (Lossless extension, 0..=15, default 0 = instantaneous queue length; n = EWMA with weight 2^-n).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WredProfile {
    pub name: String,
    /// Which colours are ECN-marked (instead of dropped) when ECN-capable: [green, yellow, red].
    pub ecn: [bool; 3],
    /// [green, yellow, red].
    pub colours: [WredColour; 3],
    pub weight: u8,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchedulerKind {
    Strict,
    Dwrr,
    Wrr,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MeterType {
    Packets,
    Bytes,
}

/// `SCHEDULER|<name>`: `type` STRICT|DWRR|WRR (default WRR, as SONiC's yang), `weight` 1..=100 (default 1),
/// `priority` 0..=9, `meter_type` packets|bytes (default bytes), `cir`/`cbs` (minimum bandwidth, bytes/s
/// or packets/s, and burst), `pir`/`pbs` (shaper / policer rate and burst). `policer` (Lossless extension,
/// `true`/`false`, default false): on a STRICT queue, packets above `pir`/`pbs` are dropped at enqueue instead
/// of waiting, so a strict queue cannot starve the others.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchedulerProfile {
    pub name: String,
    pub params: SchedulerParams,
}

/// What a `SCHEDULER` profile says about a queue; also how the egress scheduler is configured per queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SchedulerParams {
    pub kind: SchedulerKind,
    /// 1..=100; 0 is treated as 1.
    pub weight: u8,
    /// STRICT order (higher first); `None` ranks below every explicit priority.
    pub priority: Option<u8>,
    /// Units of `cir`/`cbs`/`pir`/`pbs`.
    pub meter_type: MeterType,
    pub cir: Option<u64>,
    pub cbs: Option<u64>,
    pub pir: Option<u64>,
    pub pbs: Option<u64>,
    /// On a STRICT queue with `pir`: drop above the rate at enqueue instead of shaping.
    pub policer: bool,
}

impl Default for SchedulerParams {
    /// A queue without a scheduler: DWRR weight 1, unshaped.
    fn default() -> Self {
        SchedulerParams {
            kind: SchedulerKind::Dwrr,
            weight: 1,
            priority: None,
            meter_type: MeterType::Bytes,
            cir: None,
            cbs: None,
            pir: None,
            pbs: None,
            policer: false,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PfcWdAction {
    Drop,
    Forward,
    Alert,
}

/// `PFC_WD|<port>`: `action` (default drop), `detection_time` (ms, 100..=5000, required),
/// `restoration_time` (ms, 100..=60000; absent = never restore automatically), `pfc_stat_history`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PfcWdPort {
    pub action: PfcWdAction,
    pub detection_time_ms: u32,
    pub restoration_time_ms: Option<u32>,
    pub pfc_stat_history: bool,
}

/// Which storm detection rule the watchdog runs (SONiC's per-vendor Lua scripts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PfcWdDetectionRule {
    /// vs / historic Mellanox: queue has packets, transmitted nothing since the last poll, and was paused
    /// by PFC during the interval.
    Vs,
    /// Broadcom: PFC frames received for the priority since the last poll, no XON received, and the queue
    /// paused at both polls.
    Broadcom,
}

/// `PFC_WD|GLOBAL`: `POLL_INTERVAL` (ms, 100..=1000, default 100), `BIG_RED_SWITCH` enable|disable; and
/// Lossless extensions `detection_rule` (`vs` default, or `broadcom`) and `drop_ingress` (`true`: the drop
/// action also drops ingress traffic of the stormed priority on that port, as Broadcom's ACL handler; default
/// false, as SONiC's zero-buffer handler).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PfcWdGlobal {
    pub poll_interval_ms: u32,
    pub big_red_switch: bool,
    pub detection_rule: PfcWdDetectionRule,
    pub drop_ingress: bool,
}

impl Default for PfcWdGlobal {
    fn default() -> Self {
        PfcWdGlobal {
            poll_interval_ms: 100,
            big_red_switch: false,
            detection_rule: PfcWdDetectionRule::Vs,
            drop_ingress: false,
        }
    }
}

/// `SWITCH|switch`: switch-wide settings (SONiC has `fdb_aging_time` here; the rest are Lossless's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SwitchSettings {
    /// `fdb_aging_time` (seconds in CONFIG_DB, default 600 as in SONiC; 0 disables aging).
    pub fdb_aging: Nanos,
    /// `neigh_aging_time` (seconds, default 14400 = 4 h, the ARP timeout of common switch OSes; 0 disables).
    pub neigh_aging: Nanos,
    /// `lossy_fdb_miss_action` (`flood` default, or `drop`): what a routed lossy packet does when its
    /// neighbour's MAC has no FDB entry.
    pub lossy_fdb_miss_action: FdbMissAction,
    /// `lossless_fdb_miss_action` (`drop` default, or `flood`): the same for a lossless packet. Dropping
    /// (counted as `FDB_MISS_LOSSLESS`) is what avoids the flooding deadlock of Microsoft's RDMA-at-scale
    /// paper (ARP entry present, MAC entry missing); `flood` reproduces that case for experiments.
    pub lossless_fdb_miss_action: FdbMissAction,
    /// `ecmp_hash_seed` (default 0): perturbs the 5-tuple hash.
    pub ecmp_hash_seed: u32,
}

impl Default for SwitchSettings {
    fn default() -> Self {
        SwitchSettings {
            fdb_aging: Nanos::from_ns(600 * NS_PER_SEC),
            neigh_aging: Nanos::from_ns(14_400 * NS_PER_SEC),
            lossy_fdb_miss_action: FdbMissAction::Flood,
            lossless_fdb_miss_action: FdbMissAction::Drop,
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
    /// The first of `lanes`: which pipe (and so which buffer partition) the port is in.
    pub first_lane: Option<u32>,
}

/// `VLAN|Vlan<id>` and its `VLAN_MEMBER|Vlan<id>|<port>` entries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VlanConfig {
    pub name: String,
    pub vid: u16,
    /// Member ports, ordered by port position; `tagged` from `tagging_mode` (default untagged).
    pub members: Vec<VlanMember>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VlanMember {
    pub port: PortId,
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
    Port(PortId),
    Vlan(u16),
}

/// A router interface: its position in [`SwitchConfig::interfaces`]. A type of its own, as [`PortId`] is;
/// [`RifId::index`] indexes per-interface vectors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RifId(usize);

impl RifId {
    /// The interface at this position in [`SwitchConfig::interfaces`] (compiling a configuration, tests).
    pub const fn new(index: usize) -> RifId {
        RifId(index)
    }

    /// The position in [`SwitchConfig::interfaces`].
    pub const fn index(self) -> usize {
        self.0
    }
}

impl fmt::Display for RifId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// `NEIGH|<interface>|<ip>`: `neigh` = MAC, `family` = IPv4/IPv6.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StaticNeighbor {
    pub rif: RifId,
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
    pub rif: RifId,
}

/// `FDB|Vlan<id>|<mac>`: `port` (a static FDB entry; never ages).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StaticFdb {
    pub vid: u16,
    pub mac: EthernetAddress,
    pub port: PortId,
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

#[cfg(test)]
mod guarded_tests {
    use super::ConfigDb;

    #[test]
    fn guarded_removals_name_each_removed_key_of_the_guarded_tables() {
        let mut running = ConfigDb::default();
        running.touch("PORT", "Ethernet0").touch("PORT", "Ethernet4");
        running.touch("BUFFER_PROFILE", "pg_lossless").touch("SCHEDULER", "scheduler.0");
        let mut next = ConfigDb::default();
        next.touch("PORT", "Ethernet4").touch("PORT", "Ethernet8");
        assert_eq!(running.guarded_removals(&next), ["PORT|Ethernet0", "BUFFER_PROFILE|pg_lossless"]);
        assert!(running.guarded_removals(&running).is_empty());
        assert!(ConfigDb::default().guarded_removals(&next).is_empty(), "additions are not removals");
    }
}
