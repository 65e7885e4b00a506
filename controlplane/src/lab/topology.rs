//! Lab topology files (`configs/topologies/*.yaml`): switches with their configuration, hosts, the links
//! between them and, optionally, the traffic `swctl lab demo` runs.
//!
//! ```yaml
//! name: demo                               # optional; default: the file name without .yaml
//! switches:
//!   sw1: { config: demo-switch.yaml }      # relative to this file; or inline tables: { config: { PORT: ... } }
//! hosts:
//!   h1: { ip: 10.0.0.1/24, mac: "02:00:00:00:00:01", pfc: [3, 4], line-rate-mbps: 1000, mtu: 4096 }
//!   h2: { ip: 10.0.0.2/24, attach: sw1:Ethernet4 }         # attach: shorthand for a link to the host's eth0
//!   h3: { ip: 10.1.0.3/24, gateway-mac: auto }              # auto: the attached switch's router MAC
//!   h4: { ip: 10.0.0.4/24, dcqcn: { time-scale: 500, cnp_interval_ns: 0 } }   # rocehost's DCQCN options
//! links:
//!   - sw1:Ethernet0 -- h1:eth0                              # "—", "--" or "<->" between the ends
//!   - { link: sw1:Ethernet8 -- sw2:Ethernet0, delay: 2ms, jitter: 100us, loss: 0.01% }   # tc netem
//! traffic:                                                  # swctl lab demo only
//!   - { from: h1, to: h3, priority: 3, dscp: 3, rate-mbps: 600 }
//! ```
//!
//! [`Topology::load`] parses and validates everything before anything is created: every error at once, each
//! naming the entry the user wrote (`links[2]: unknown node h9`, `hosts.h2.ip: 10.0.0.1 is also h1's`).
//! Switch configurations are compiled as `swctl apply` would (NULL lossless PG profiles computed first).

use anyhow::{Context, bail};
use lossless_dataplane::model::config::{ConfigDb, SwitchConfig, compile};
use lossless_dataplane::nic::NicConfig;
use lossless_dataplane::wire::EthernetAddress;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

/// Linux's limit on interface names (IFNAMSIZ − 1).
pub const MAX_INTERFACE_NAME: usize = 15;
/// Lab names end up in namespace names, run directories and Unix socket paths.
pub const MAX_LAB_NAME: usize = 24;
/// Default MAC prefix of hosts without `mac` (locally administered): 02:4c:4c:00:<index>.
const DEFAULT_MAC_PREFIX: [u8; 4] = [0x02, 0x4c, 0x4c, 0x00];

/// A validated topology.
#[derive(Debug, Clone)]
pub struct Topology {
    pub name: String,
    /// Where it came from (a path, or a description of an embedded topology).
    pub source: String,
    pub switches: Vec<SwitchNode>,
    pub hosts: Vec<HostNode>,
    pub links: Vec<Link>,
    pub traffic: Vec<Flow>,
}

#[derive(Debug, Clone)]
pub struct SwitchNode {
    pub name: String,
    /// The configuration to push: as written, with NULL lossless PG profiles computed.
    pub config: ConfigDb,
    /// The compiled form (port speeds, MTUs, PFC priorities).
    pub compiled: SwitchConfig,
    /// Where the configuration came from, for messages.
    pub config_source: String,
}

impl SwitchNode {
    pub fn port(&self, name: &str) -> Option<&lossless_dataplane::model::config::PortConfig> {
        self.compiled.ports.iter().find(|p| p.name == name)
    }

    /// PFC-enabled priorities of a port (bit mask).
    pub fn pfc_enable(&self, port: &str) -> u8 {
        self.compiled
            .ports
            .iter()
            .position(|p| p.name == port)
            .map(|i| self.compiled.qos[i].pfc_enable)
            .unwrap_or(0)
    }
}

#[derive(Debug, Clone)]
pub struct HostNode {
    pub name: String,
    pub ip: Ipv4Addr,
    pub prefix_len: u8,
    pub mac: EthernetAddress,
    pub gateway_mac: Option<EthernetAddress>,
    /// Priorities whose PFC frames the host honours.
    pub pfc: Vec<u8>,
    pub line_rate_mbps: u32,
    /// IP MTU of the host's RoCE packets.
    pub mtu: u32,
    /// The host's interface (its end of its one link).
    pub interface: String,
    /// The switch port the host is attached to, if its link goes to a switch.
    pub attached: Option<End>,
    /// rocehost's `--dcqcn-time-scale` (1 = NVIDIA's parameters as they are).
    pub dcqcn_time_scale: u32,
    /// rocehost's `--dcqcn-param NAME=VALUE`s, validated, in name order.
    pub dcqcn_params: Vec<(String, String)>,
}

impl HostNode {
    /// Whether `ip` is on this host's subnet.
    pub fn on_subnet(&self, ip: Ipv4Addr) -> bool {
        let mask = u32::MAX.checked_shl(32 - u32::from(self.prefix_len)).unwrap_or(0);
        u32::from(self.ip) & mask == u32::from(ip) & mask
    }

    /// Where this host sends frames for `dst`: `dst` itself on its subnet, else the gateway (if any).
    pub fn next_hop_mac(&self, dst: &HostNode) -> Option<EthernetAddress> {
        if self.on_subnet(dst.ip) { Some(dst.mac) } else { self.gateway_mac }
    }
}

/// One end of a link: `node:port`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct End {
    pub node: String,
    pub port: String,
}

impl fmt::Display for End {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.node, self.port)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    pub a: End,
    pub b: End,
    /// `tc qdisc ... netem` arguments for both ends (delay, jitter, loss), empty when none.
    pub netem: Vec<String>,
    /// Interface MTU of both ends.
    pub mtu: u32,
}

impl fmt::Display for Link {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} -- {}", self.a, self.b)
    }
}

/// A RoCE flow of `swctl lab demo`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flow {
    pub from: String,
    pub to: String,
    pub priority: u8,
    pub dscp: u8,
    pub rate_mbps: Option<u32>,
    pub message_bytes: u64,
    pub messages: Option<u64>,
    pub dcqcn: bool,
    pub start_ms: u64,
}

// ------------------------------------------------------------------------------------------------ file form

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTopology {
    name: Option<String>,
    #[serde(default)]
    switches: BTreeMap<String, RawSwitch>,
    #[serde(default)]
    hosts: BTreeMap<String, RawHost>,
    #[serde(default)]
    links: Vec<RawLink>,
    #[serde(default)]
    traffic: Vec<RawFlow>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSwitch {
    /// A file name (relative to the topology) or the tables inline.
    config: serde_yaml::Value,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawHost {
    ip: String,
    mac: Option<String>,
    gateway_mac: Option<String>,
    /// `[3, 4]`, `"3,4"` or `none`.
    pfc: Option<serde_yaml::Value>,
    line_rate_mbps: Option<u32>,
    mtu: Option<u32>,
    /// `switch:port`: a link from there to this host's `interface`.
    attach: Option<String>,
    interface: Option<String>,
    /// `{ time-scale: N, PARAMETER: VALUE, ... }`: rocehost's DCQCN options.
    dcqcn: Option<BTreeMap<String, serde_yaml::Value>>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RawLink {
    Plain(String),
    Detailed(RawLinkDetail),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLinkDetail {
    link: String,
    delay: Option<String>,
    jitter: Option<String>,
    loss: Option<String>,
    mtu: Option<u32>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawFlow {
    from: String,
    to: String,
    priority: u8,
    dscp: u8,
    rate_mbps: Option<u32>,
    message_bytes: Option<u64>,
    messages: Option<u64>,
    dcqcn: Option<bool>,
    start_ms: Option<u64>,
}

// ------------------------------------------------------------------------------------------------ loading

/// Where a topology's switch configuration files come from.
pub trait ConfigFiles {
    /// The text of `name` (as written in the topology), and a description of where it was found.
    fn read(&self, name: &str) -> anyhow::Result<(String, String)>;
}

/// Files relative to a directory (the topology file's).
pub struct RelativeTo(pub PathBuf);

impl ConfigFiles for RelativeTo {
    fn read(&self, name: &str) -> anyhow::Result<(String, String)> {
        let path = self.0.join(name);
        let text =
            std::fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?;
        Ok((text, path.display().to_string()))
    }
}

/// Files compiled into the binary, by name.
pub struct Embedded(pub &'static [(&'static str, &'static str)]);

impl ConfigFiles for Embedded {
    fn read(&self, name: &str) -> anyhow::Result<(String, String)> {
        match self.0.iter().find(|(n, _)| *n == name) {
            Some((_, text)) => Ok(((*text).to_owned(), format!("embedded {name}"))),
            None => bail!("{name}: no such embedded file"),
        }
    }
}

impl Topology {
    /// Reads and validates a topology file.
    pub fn load(path: &Path) -> anyhow::Result<Topology> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        Topology::parse(&text, &stem, &path.display().to_string(), &RelativeTo(dir))
    }

    /// Parses and validates a topology's text; `default_name` names it when it has no `name:`.
    pub fn parse(
        text: &str,
        default_name: &str,
        source: &str,
        files: &dyn ConfigFiles,
    ) -> anyhow::Result<Topology> {
        // Parsed as written first, for errors with a line and column; then again with YAML merge keys
        // (`<<: *leaf`) applied, so that switches can share a configuration and override parts of it.
        serde_yaml::from_str::<RawTopology>(text).map_err(|e| anyhow::anyhow!("{source}: {e}"))?;
        let mut value: serde_yaml::Value =
            serde_yaml::from_str(text).map_err(|e| anyhow::anyhow!("{source}: {e}"))?;
        value.apply_merge().map_err(|e| anyhow::anyhow!("{source}: {e}"))?;
        let raw: RawTopology = serde_yaml::from_value(value).map_err(|e| anyhow::anyhow!("{source}: {e}"))?;
        let mut errors = Vec::new();
        let topology = build(raw, default_name, source, files, &mut errors);
        if !errors.is_empty() {
            bail!(
                "{source}: invalid topology ({} error(s)):\n{}",
                errors.len(),
                errors.iter().map(|e| format!("  {e}")).collect::<Vec<_>>().join("\n")
            );
        }
        Ok(topology)
    }

    pub fn switch(&self, name: &str) -> Option<&SwitchNode> {
        self.switches.iter().find(|s| s.name == name)
    }

    pub fn host(&self, name: &str) -> Option<&HostNode> {
        self.hosts.iter().find(|h| h.name == name)
    }

    /// Every node name, switches first.
    pub fn node_names(&self) -> impl Iterator<Item = &str> {
        self.switches.iter().map(|s| s.name.as_str()).chain(self.hosts.iter().map(|h| h.name.as_str()))
    }
}

/// A lab name: letters, digits, `_` and `-`, starting with a letter or digit.
pub fn check_lab_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= MAX_LAB_NAME
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        && name.starts_with(|c: char| c.is_ascii_alphanumeric());
    if ok {
        Ok(())
    } else {
        Err(format!(
            "lab name {name:?}: use 1 to {MAX_LAB_NAME} letters, digits, '_' or '-', starting with a letter or digit"
        ))
    }
}

/// A node name: letters, digits and `_` (no `-`, so that `ll-<lab>-<node>` names one node of one lab).
fn check_node_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 32
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && name.starts_with(|c: char| c.is_ascii_alphabetic());
    if ok {
        Ok(())
    } else {
        Err(format!("{name:?}: node names are 1 to 32 letters, digits or '_', starting with a letter"))
    }
}

fn check_interface_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= MAX_INTERFACE_NAME
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if ok {
        Ok(())
    } else {
        Err(format!("interface {name:?}: 1 to {MAX_INTERFACE_NAME} letters, digits, '_', '-' or '.'"))
    }
}

/// `node:port`.
fn parse_end(text: &str) -> Result<End, String> {
    match text.trim().split_once(':') {
        Some((node, port)) if !node.trim().is_empty() && !port.trim().is_empty() => {
            Ok(End { node: node.trim().to_owned(), port: port.trim().to_owned() })
        }
        _ => Err(format!("{:?}: expected NODE:PORT, e.g. sw1:Ethernet0 or h1:eth0", text.trim())),
    }
}

/// `a -- b` (also `—`, `–`, `<->`).
fn parse_link_ends(text: &str) -> Result<(End, End), String> {
    for separator in ["<->", "--", "—", "–"] {
        if let Some((a, b)) = text.split_once(separator) {
            return Ok((parse_end(a)?, parse_end(b)?));
        }
    }
    Err(format!("{text:?}: expected \"NODE:PORT -- NODE:PORT\""))
}

/// `10.0.0.1/24`.
fn parse_ip_prefix(text: &str) -> Result<(Ipv4Addr, u8), String> {
    let Some((ip, prefix)) = text.split_once('/') else {
        return Err(format!("{text}: expected an IPv4 address with a prefix length, e.g. 10.0.0.1/24"));
    };
    let ip: Ipv4Addr = ip.trim().parse().map_err(|_| format!("{text}: {ip:?} is not an IPv4 address"))?;
    let prefix: u8 = prefix
        .trim()
        .parse()
        .ok()
        .filter(|p| (1..=32).contains(p))
        .ok_or_else(|| format!("{text}: the prefix length must be 1..=32"))?;
    if ip.is_unspecified() || ip.is_broadcast() || ip.is_multicast() {
        return Err(format!("{text}: not a host address"));
    }
    Ok((ip, prefix))
}

/// A host's validated DCQCN options: rocehost's `--dcqcn-time-scale` and its `--dcqcn-param`s.
type DcqcnOptions = (u32, Vec<(String, String)>);

/// A host's `dcqcn:` mapping: `time-scale` (rocehost's `--dcqcn-time-scale`) and any DCQCN parameter by
/// the name rocehost's `--dcqcn-param` takes, checked as rocehost will check them. Errors start with the
/// key (`rpg_bogus: unknown DCQCN parameter ...`).
fn parse_dcqcn(map: &BTreeMap<String, serde_yaml::Value>) -> Result<DcqcnOptions, Vec<String>> {
    let mut errors = Vec::new();
    let mut nic = NicConfig::default();
    let text = |key: &str, v: &serde_yaml::Value| match v {
        serde_yaml::Value::Number(n) => Ok(n.to_string()),
        serde_yaml::Value::Bool(b) => Ok(b.to_string()),
        serde_yaml::Value::String(s) => Ok(s.clone()),
        _ => Err(format!("{key}: expected a number (or true/false)")),
    };
    let mut time_scale = 1;
    if let Some(v) = map.get("time-scale") {
        match text("time-scale", v).and_then(|t| {
            nic.set_dcqcn_param("time_scale", &t).map_err(|e| format!("time-scale: {e}"))?;
            Ok(nic.dcqcn.time_scale)
        }) {
            Ok(n) => time_scale = n,
            Err(e) => errors.push(e),
        }
    }
    let mut params = Vec::new();
    for (key, v) in map.iter().filter(|(k, _)| k.as_str() != "time-scale") {
        if key == "time_scale" {
            errors.push(format!("{key}: write time-scale"));
            continue;
        }
        match text(key, v)
            .and_then(|t| nic.set_dcqcn_param(key, &t).map(|()| t).map_err(|e| format!("{key}: {e}")))
        {
            Ok(t) => params.push((key.clone(), t)),
            Err(e) => errors.push(e),
        }
    }
    if errors.is_empty() { Ok((time_scale, params)) } else { Err(errors) }
}

fn parse_priorities(value: &serde_yaml::Value) -> Result<Vec<u8>, String> {
    let items: Vec<String> = match value {
        serde_yaml::Value::Sequence(items) => items
            .iter()
            .map(|v| match v {
                serde_yaml::Value::Number(n) => Ok(n.to_string()),
                serde_yaml::Value::String(s) => Ok(s.clone()),
                _ => Err("priorities are numbers 0..=7".to_owned()),
            })
            .collect::<Result<_, _>>()?,
        serde_yaml::Value::Number(n) => vec![n.to_string()],
        serde_yaml::Value::String(s) if s == "none" || s.is_empty() => Vec::new(),
        serde_yaml::Value::String(s) => s.split(',').map(|p| p.trim().to_owned()).collect(),
        serde_yaml::Value::Null => Vec::new(),
        _ => return Err("expected a list of priorities such as [3, 4], \"3,4\" or none".into()),
    };
    let mut out = Vec::new();
    for item in items {
        let p: u8 = item
            .parse()
            .ok()
            .filter(|p| *p <= 7)
            .ok_or_else(|| format!("{item:?} is not a priority 0..=7"))?;
        if !out.contains(&p) {
            out.push(p);
        }
    }
    out.sort_unstable();
    Ok(out)
}

/// A netem time (`5ms`, `100us`, `1s`) or percentage (`0.1%`), checked so that tc gets nothing surprising.
fn check_netem_value(field: &str, value: &str) -> Result<(), String> {
    let v = value.trim();
    let (number, units): (&str, &[&str]) =
        if field == "loss" { (v.strip_suffix('%').unwrap_or(v), &[""]) } else { (v, &["us", "ms", "s"]) };
    let ok = if field == "loss" {
        v.ends_with('%') && number.parse::<f64>().is_ok_and(|x| (0.0..=100.0).contains(&x))
    } else {
        units.iter().any(|u| number.strip_suffix(u).is_some_and(|n| n.parse::<f64>().is_ok_and(|x| x >= 0.0)))
    };
    if ok {
        Ok(())
    } else if field == "loss" {
        Err(format!("loss {value:?}: expected a percentage such as 0.1%"))
    } else {
        Err(format!("{field} {value:?}: expected a time such as 500us, 2ms or 1s"))
    }
}

/// The switch's configuration, with NULL lossless PG profiles computed as `swctl apply` does by default
/// (the shipped lookup table of its hwsku, else SONiC's dynamic formula with the ASIC of its platform or
/// hwsku, else with sonic-vs's).
pub(super) fn resolve_switch_config(db: &mut ConfigDb) -> Result<(), Vec<String>> {
    use crate::headroom::{self, ModelRequest};
    let model = ModelRequest::default().select(Some(db)).map_err(|e| vec![e])?.model;
    headroom::generate_lossless_profiles(db, &model)
        .map(drop)
        .map_err(|e| e.iter().map(|i| i.to_string()).collect())
}

fn build(
    raw: RawTopology,
    default_name: &str,
    source: &str,
    files: &dyn ConfigFiles,
    errors: &mut Vec<String>,
) -> Topology {
    let name = raw.name.clone().unwrap_or_else(|| default_name.to_owned());
    if let Err(e) = check_lab_name(&name) {
        errors.push(format!("name: {e}"));
    }
    if raw.switches.is_empty() && raw.hosts.is_empty() {
        errors.push("the topology has no switches and no hosts".into());
    }

    // Switches and their configurations.
    let mut switches = Vec::new();
    for (sw, spec) in &raw.switches {
        if let Err(e) = check_node_name(sw) {
            errors.push(format!("switches.{sw}: {e}"));
        }
        let loaded = match &spec.config {
            serde_yaml::Value::String(file) => files.read(file).map_err(|e| format!("{e:#}")),
            serde_yaml::Value::Mapping(_) => serde_yaml::to_string(&spec.config)
                .map(|text| (text, format!("switches.{sw}.config (inline)")))
                .map_err(|e| e.to_string()),
            _ => Err("config: expected a file name or the configuration's tables inline".to_owned()),
        };
        let (text, config_source) = match loaded {
            Ok(x) => x,
            Err(e) => {
                errors.push(format!("switches.{sw}.config: {e}"));
                continue;
            }
        };
        let mut db = match ConfigDb::from_yaml_str(&text) {
            Ok(db) => db,
            Err(e) => {
                errors.push(format!("switches.{sw}.config: {config_source}: {e}"));
                continue;
            }
        };
        if let Err(issues) = resolve_switch_config(&mut db) {
            errors.extend(issues.into_iter().map(|i| format!("switches.{sw}.config: {config_source}: {i}")));
            continue;
        }
        match compile(&db) {
            Ok(compiled) => switches.push(SwitchNode {
                name: sw.clone(),
                config: db,
                compiled: compiled.config,
                config_source,
            }),
            Err(e) => errors.extend(
                e.errors.iter().map(|i| format!("switches.{sw}.config: {config_source}: error: {i}")),
            ),
        }
    }
    let is_switch = |n: &str| raw.switches.contains_key(n);
    let is_host = |n: &str| raw.hosts.contains_key(n);
    for h in raw.hosts.keys() {
        if let Err(e) = check_node_name(h) {
            errors.push(format!("hosts.{h}: {e}"));
        }
        if is_switch(h) {
            errors.push(format!("hosts.{h}: {h} is also a switch; node names must be unique"));
        }
    }
    let node_list = || {
        format!(
            "switches: {}; hosts: {}",
            if raw.switches.is_empty() {
                "none".to_owned()
            } else {
                raw.switches.keys().cloned().collect::<Vec<_>>().join(", ")
            },
            if raw.hosts.is_empty() {
                "none".to_owned()
            } else {
                raw.hosts.keys().cloned().collect::<Vec<_>>().join(", ")
            }
        )
    };

    // Links: the explicit ones, then hosts' `attach` shorthands.
    let mut links: Vec<(String, Link)> = Vec::new();
    for (i, l) in raw.links.iter().enumerate() {
        let (text, detail) = match l {
            RawLink::Plain(t) => (t.clone(), None),
            RawLink::Detailed(d) => (d.link.clone(), Some(d)),
        };
        let label = format!("links[{i}] ({})", text.trim());
        let (a, b) = match parse_link_ends(&text) {
            Ok(x) => x,
            Err(e) => {
                errors.push(format!("links[{i}]: {e}"));
                continue;
            }
        };
        let mut netem = Vec::new();
        let mut mtu = None;
        if let Some(d) = detail {
            for (field, value) in [("delay", &d.delay), ("jitter", &d.jitter), ("loss", &d.loss)] {
                if let Some(v) = value {
                    match check_netem_value(field, v) {
                        Ok(()) => {}
                        Err(e) => errors.push(format!("{label}: {e}")),
                    }
                }
            }
            if d.jitter.is_some() && d.delay.is_none() {
                errors.push(format!("{label}: jitter needs a delay"));
            }
            if let Some(delay) = &d.delay {
                netem.extend(["delay".to_owned(), delay.trim().to_owned()]);
                if let Some(j) = &d.jitter {
                    netem.push(j.trim().to_owned());
                }
            }
            if let Some(loss) = &d.loss {
                netem.extend(["loss".to_owned(), loss.trim().to_owned()]);
            }
            if let Some(m) = d.mtu {
                if !(68..=65535).contains(&m) {
                    errors.push(format!("{label}: mtu {m} is outside 68..=65535"));
                }
                mtu = Some(m);
            }
        }
        links.push((label, Link { a, b, netem, mtu: mtu.unwrap_or(0) }));
    }
    for (h, spec) in &raw.hosts {
        if let Some(attach) = &spec.attach {
            match parse_end(attach) {
                Ok(a) => {
                    let b = End {
                        node: h.clone(),
                        port: spec.interface.clone().unwrap_or_else(|| "eth0".into()),
                    };
                    links.push((
                        format!("hosts.{h}.attach ({attach})"),
                        Link { a, b, netem: Vec::new(), mtu: 0 },
                    ));
                }
                Err(e) => errors.push(format!("hosts.{h}.attach: {e}")),
            }
        }
    }

    let mut used: BTreeMap<End, String> = BTreeMap::new();
    let mut host_links: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    let mut good_links = Vec::new();
    for (index, (label, link)) in links.iter().enumerate() {
        let mut ok = true;
        for end in [&link.a, &link.b] {
            if !is_switch(&end.node) && !is_host(&end.node) {
                errors.push(format!("{label}: unknown node {} ({})", end.node, node_list()));
                ok = false;
                continue;
            }
            if let Some(previous) = used.get(end) {
                errors.push(format!("{label}: {end} is used twice (also by {previous})"));
                ok = false;
            } else {
                used.insert(end.clone(), label.clone());
            }
            if is_switch(&end.node) {
                if let Some(sw) = switches.iter().find(|s: &&SwitchNode| s.name == end.node)
                    && sw.port(&end.port).is_none()
                {
                    let ports: Vec<&str> = sw.compiled.ports.iter().map(|p| p.name.as_str()).collect();
                    errors.push(format!(
                        "{label}: {end}: the configuration of {} ({}) has no port {} (PORT: {})",
                        sw.name,
                        sw.config_source,
                        end.port,
                        ports.join(", ")
                    ));
                    ok = false;
                }
            } else {
                if let Err(e) = check_interface_name(&end.port) {
                    errors.push(format!("{label}: {end}: {e}"));
                    ok = false;
                }
                host_links
                    .entry(raw.hosts.get_key_value(&end.node).map(|(k, _)| k.as_str()).unwrap_or(""))
                    .or_default()
                    .push(index);
            }
        }
        if link.a.node == link.b.node {
            errors.push(format!("{label}: both ends are on {}", link.a.node));
            ok = false;
        }
        if ok {
            good_links.push(index);
        }
    }

    // Link MTUs: the switch ports' MTU (the smaller of two), else the hosts' largest RoCE MTU + headers.
    let mut final_links = Vec::new();
    for &i in &good_links {
        let mut link = links[i].1.clone();
        if link.mtu == 0 {
            let port_mtus: Vec<u32> = [&link.a, &link.b]
                .iter()
                .filter_map(|e| {
                    switches.iter().find(|s| s.name == e.node).and_then(|s| s.port(&e.port)).map(|p| p.mtu)
                })
                .collect();
            link.mtu = port_mtus.into_iter().min().unwrap_or(9100);
        }
        final_links.push(link);
    }

    // Hosts.
    let mut hosts = Vec::new();
    let mut ips: BTreeMap<Ipv4Addr, String> = BTreeMap::new();
    let mut macs: BTreeMap<EthernetAddress, String> = BTreeMap::new();
    for (index, (h, spec)) in raw.hosts.iter().enumerate() {
        let field = |f: &str| format!("hosts.{h}.{f}");
        let (ip, prefix_len) = match parse_ip_prefix(&spec.ip) {
            Ok(x) => x,
            Err(e) => {
                errors.push(format!("{}: {e}", field("ip")));
                (Ipv4Addr::UNSPECIFIED, 0)
            }
        };
        if !ip.is_unspecified() {
            if let Some(other) = ips.get(&ip) {
                errors.push(format!("{}: {ip} is also {other}'s address", field("ip")));
            } else {
                ips.insert(ip, h.clone());
            }
        }
        let mac = match &spec.mac {
            Some(text) => match text.parse::<EthernetAddress>() {
                Ok(m) if m.0[0] & 1 == 0 && m.0 != [0; 6] => m,
                Ok(_) => {
                    errors.push(format!("{}: {text} is not a unicast address", field("mac")));
                    EthernetAddress::default()
                }
                Err(e) => {
                    errors.push(format!("{}: {text}: {e}", field("mac")));
                    EthernetAddress::default()
                }
            },
            None => {
                let n = (index + 1) as u16;
                let p = DEFAULT_MAC_PREFIX;
                EthernetAddress([p[0], p[1], p[2], p[3], (n >> 8) as u8, n as u8])
            }
        };
        if mac != EthernetAddress::default() {
            if let Some(other) = macs.get(&mac) {
                errors.push(format!("{}: {mac} is also {other}'s MAC", field("mac")));
            } else {
                macs.insert(mac, h.clone());
            }
        }
        let pfc = match &spec.pfc {
            None => vec![3, 4],
            Some(v) => parse_priorities(v).unwrap_or_else(|e| {
                errors.push(format!("{}: {e}", field("pfc")));
                Vec::new()
            }),
        };
        let mine: Vec<&Link> = final_links.iter().filter(|l| l.a.node == *h || l.b.node == *h).collect();
        let link_count = host_links.get(h.as_str()).map(Vec::len).unwrap_or(0);
        if link_count == 0 {
            errors.push(format!(
                "hosts.{h}: not linked to anything (add a link to {h}:eth0, or attach: SWITCH:PORT)"
            ));
        } else if link_count > 1 {
            errors.push(format!("hosts.{h}: {link_count} links; a host has one interface"));
        }
        let (interface, peer, link_mtu) = match mine.first() {
            Some(l) if l.a.node == *h => (l.a.port.clone(), l.b.clone(), l.mtu),
            Some(l) => (l.b.port.clone(), l.a.clone(), l.mtu),
            None => ("eth0".to_owned(), End { node: String::new(), port: String::new() }, 9100),
        };
        let peer_switch = switches.iter().find(|s| s.name == peer.node);
        let attached = peer_switch.map(|_| peer.clone());
        let port_speed = peer_switch.and_then(|s| s.port(&peer.port)).map(|p| p.speed_mbps);
        let line_rate_mbps = spec.line_rate_mbps.or(port_speed).unwrap_or(1000);
        if line_rate_mbps == 0 {
            errors.push(format!("{}: must be > 0", field("line-rate-mbps")));
        }
        let mtu = spec.mtu.unwrap_or(1500.min(link_mtu));
        if !(128..=9216).contains(&mtu) {
            errors.push(format!("{}: {mtu} is outside 128..=9216", field("mtu")));
        } else if mtu > link_mtu {
            errors.push(format!("{}: {mtu} is larger than the link's MTU {link_mtu}", field("mtu")));
        }
        let gateway_mac = match spec.gateway_mac.as_deref() {
            None => None,
            Some("auto") => match (peer_switch, &attached) {
                (Some(sw), Some(end)) => sw.port(&end.port).map(|p| p.mac),
                _ => {
                    errors.push(format!(
                        "{}: auto needs the host to be linked to a switch",
                        field("gateway-mac")
                    ));
                    None
                }
            },
            Some(text) => match text.parse::<EthernetAddress>() {
                Ok(m) => Some(m),
                Err(e) => {
                    errors.push(format!(
                        "{}: {text}: {e} (or auto: the attached switch port's MAC)",
                        field("gateway-mac")
                    ));
                    None
                }
            },
        };
        let (dcqcn_time_scale, dcqcn_params) = match &spec.dcqcn {
            None => (1, Vec::new()),
            Some(map) => parse_dcqcn(map).unwrap_or_else(|e| {
                errors.extend(e.into_iter().map(|e| format!("{}.{e}", field("dcqcn"))));
                (1, Vec::new())
            }),
        };
        if spec.interface.is_some() && spec.attach.is_none() {
            errors.push(format!(
                "hosts.{h}.interface: only with attach (a link names the host's interface itself)"
            ));
        }
        hosts.push(HostNode {
            name: h.clone(),
            ip,
            prefix_len,
            mac,
            gateway_mac,
            pfc,
            line_rate_mbps,
            mtu,
            interface,
            attached,
            dcqcn_time_scale,
            dcqcn_params,
        });
    }

    // Traffic.
    let mut traffic = Vec::new();
    for (i, f) in raw.traffic.iter().enumerate() {
        let label = format!("traffic[{i}] ({} -> {})", f.from, f.to);
        for node in [&f.from, &f.to] {
            if !is_host(node) {
                let what =
                    if is_switch(node) { "a switch, not a host" } else { "not a host of this topology" };
                errors.push(format!(
                    "{label}: {node} is {what} (hosts: {})",
                    raw.hosts.keys().cloned().collect::<Vec<_>>().join(", ")
                ));
            }
        }
        if f.from == f.to {
            errors.push(format!("{label}: a host cannot send to itself"));
        }
        if let (Some(src), Some(dst)) =
            (hosts.iter().find(|h| h.name == f.from), hosts.iter().find(|h| h.name == f.to))
            && !src.on_subnet(dst.ip)
            && src.gateway_mac.is_none()
        {
            errors.push(format!(
                "{label}: {} ({}) is not on {}'s subnet {}/{}: give {} a gateway-mac (auto: its switch port's MAC)",
                f.to, dst.ip, f.from, src.ip, src.prefix_len, f.from
            ));
        }
        if f.priority > 7 {
            errors.push(format!("{label}: priority {} is outside 0..=7", f.priority));
        }
        if f.dscp > 63 {
            errors.push(format!("{label}: dscp {} is outside 0..=63", f.dscp));
        }
        if f.rate_mbps == Some(0) || f.message_bytes == Some(0) || f.messages == Some(0) {
            errors.push(format!("{label}: rate-mbps, message-bytes and messages must be > 0"));
        }
        traffic.push(Flow {
            from: f.from.clone(),
            to: f.to.clone(),
            priority: f.priority,
            dscp: f.dscp,
            rate_mbps: f.rate_mbps,
            message_bytes: f.message_bytes.unwrap_or(65536),
            messages: f.messages,
            dcqcn: f.dcqcn.unwrap_or(true),
            start_ms: f.start_ms.unwrap_or(0),
        });
    }

    Topology { name, source: source.to_owned(), switches, hosts, links: final_links, traffic }
}

/// The interface a switch port is bound to inside the switch's namespace: the port's own name when it is a
/// valid interface name (`Ethernet0`), else `p<index>` by the port's position in the configuration.
pub fn switch_interface(switch: &SwitchNode, port: &str) -> String {
    if check_interface_name(port).is_ok() {
        return port.to_owned();
    }
    let index = switch.compiled.ports.iter().position(|p| p.name == port).unwrap_or(0);
    format!("p{index}")
}

#[cfg(test)]
mod tests {
    use super::*;

    const SWITCH: &str = r#"
PORT:
  Ethernet0: { speed: 1000 }
  Ethernet4: { speed: 1000 }
  Ethernet8: { speed: 1000 }
"#;

    fn parse(text: &str) -> anyhow::Result<Topology> {
        struct One;
        impl ConfigFiles for One {
            fn read(&self, name: &str) -> anyhow::Result<(String, String)> {
                match name {
                    "sw.yaml" => Ok((SWITCH.to_owned(), "sw.yaml".into())),
                    other => bail!("cannot read {other}"),
                }
            }
        }
        Topology::parse(text, "t", "test.yaml", &One)
    }

    fn error_of(text: &str) -> String {
        format!("{:#}", parse(text).unwrap_err())
    }

    #[test]
    fn a_small_topology_validates_with_defaults() {
        let t = parse(
            r#"
switches: { sw1: { config: sw.yaml } }
hosts:
  h1: { ip: 10.0.0.1/24 }
  h2: { ip: 10.0.0.2/24, attach: "sw1:Ethernet4", gateway-mac: auto, pfc: "3", line-rate-mbps: 100 }
links:
  - sw1:Ethernet0 -- h1:eth0
"#,
        )
        .unwrap();
        assert_eq!(t.name, "t");
        assert_eq!(t.links.len(), 2);
        let h1 = t.host("h1").unwrap();
        assert_eq!(
            (h1.line_rate_mbps, h1.mtu, h1.pfc.clone(), h1.interface.as_str()),
            (1000, 1500, vec![3, 4], "eth0")
        );
        assert_eq!(h1.attached, Some(End { node: "sw1".into(), port: "Ethernet0".into() }));
        let h2 = t.host("h2").unwrap();
        assert_eq!((h2.line_rate_mbps, h2.pfc.clone()), (100, vec![3]));
        assert!(h2.gateway_mac.is_some());
        assert_ne!(h1.mac, h2.mac);
        assert_eq!(t.links[0].mtu, 9100);
    }

    #[test]
    fn flows_off_the_subnet_go_to_the_gateway() {
        let text = |gw: &str| {
            format!(
                "switches: {{ sw1: {{ config: sw.yaml }} }}\nhosts:\n  h1: {{ ip: 10.0.0.1/31, attach: 'sw1:Ethernet0'{gw} }}\n  \
                 h2: {{ ip: 10.1.0.2/24, attach: 'sw1:Ethernet4', gateway-mac: auto }}\n  h3: {{ ip: 10.1.0.3/24, attach: 'sw1:Ethernet8' }}\n\
                 traffic: [ {{ from: h1, to: h2, priority: 3, dscp: 3 }}, {{ from: h2, to: h3, priority: 3, dscp: 3 }} ]"
            )
        };
        let t = parse(&text(", gateway-mac: '02:aa:00:00:00:01'")).unwrap();
        let (h1, h2, h3) = (t.host("h1").unwrap(), t.host("h2").unwrap(), t.host("h3").unwrap());
        assert_eq!(h1.next_hop_mac(h2), Some("02:aa:00:00:00:01".parse().unwrap()), "routed: the gateway");
        assert_eq!(h2.next_hop_mac(h3), Some(h3.mac), "same subnet: the host itself");
        assert!(!h1.on_subnet(std::net::Ipv4Addr::new(10, 0, 0, 2)) && h1.on_subnet(h1.ip));
        let e = error_of(&text(""));
        assert!(
            e.contains("traffic[0] (h1 -> h2): h2 (10.1.0.2) is not on h1's subnet 10.0.0.1/31: give h1 a gateway-mac"),
            "{e}"
        );
    }

    #[test]
    fn unknown_node_is_named_with_the_known_ones() {
        let e = error_of(
            "switches: { sw1: { config: sw.yaml } }\nhosts: { h1: { ip: 10.0.0.1/24 } }\nlinks: [ 'sw1:Ethernet0 -- h9:eth0', 'sw1:Ethernet4 -- h1:eth0' ]",
        );
        assert!(
            e.contains("links[0] (sw1:Ethernet0 -- h9:eth0): unknown node h9 (switches: sw1; hosts: h1)"),
            "{e}"
        );
    }

    #[test]
    fn a_port_used_twice_is_an_error() {
        let e = error_of(
            "switches: { sw1: { config: sw.yaml } }\nhosts: { h1: { ip: 10.0.0.1/24 }, h2: { ip: 10.0.0.2/24 } }\nlinks: [ 'sw1:Ethernet0 -- h1:eth0', 'sw1:Ethernet0 -- h2:eth0' ]",
        );
        assert!(e.contains("sw1:Ethernet0 is used twice (also by links[0]"), "{e}");
    }

    #[test]
    fn address_clashes_are_errors() {
        let e = error_of(
            "switches: { sw1: { config: sw.yaml } }\nhosts: { h1: { ip: 10.0.0.1/24, mac: '02:00:00:00:00:01' }, h2: { ip: 10.0.0.1/24, mac: '02:00:00:00:00:01' } }\nlinks: [ 'sw1:Ethernet0 -- h1:eth0', 'sw1:Ethernet4 -- h2:eth0' ]",
        );
        assert!(e.contains("hosts.h2.ip: 10.0.0.1 is also h1's address"), "{e}");
        assert!(e.contains("hosts.h2.mac: 02:00:00:00:00:01 is also h1's MAC"), "{e}");
    }

    #[test]
    fn a_switch_port_missing_from_the_config_is_an_error() {
        let e = error_of(
            "switches: { sw1: { config: sw.yaml } }\nhosts: { h1: { ip: 10.0.0.1/24, attach: 'sw1:Ethernet12' } }",
        );
        assert!(e.contains("has no port Ethernet12 (PORT: Ethernet0, Ethernet4, Ethernet8)"), "{e}");
    }

    #[test]
    fn inline_configs_netem_and_switch_links() {
        let t = parse(
            r#"
name: two
switches:
  a: { config: { PORT: { Ethernet0: { speed: 1000, mtu: 4200 } } } }
  b: { config: sw.yaml }
links:
  - { link: "a:Ethernet0 — b:Ethernet8", delay: 2ms, jitter: 100us, loss: 0.5% }
"#,
        )
        .unwrap();
        assert_eq!(t.name, "two");
        assert_eq!(t.links[0].netem, ["delay", "2ms", "100us", "loss", "0.5%"]);
        assert_eq!(t.links[0].mtu, 4200);
        let e = error_of(
            "switches: { a: { config: sw.yaml } }\nlinks: [ { link: 'a:Ethernet0 -- a:Ethernet4', delay: fast } ]",
        );
        assert!(e.contains("delay \"fast\": expected a time"), "{e}");
        assert!(e.contains("both ends are on a"), "{e}");
    }

    #[test]
    fn dcqcn_options_are_checked_as_rocehost_checks_them() {
        let host = |dcqcn: &str| {
            format!(
                "switches: {{ sw1: {{ config: sw.yaml }} }}\nhosts:\n  h1: {{ ip: 10.0.0.1/24, attach: 'sw1:Ethernet0', dcqcn: {dcqcn} }}"
            )
        };
        let t = parse(&host("{ time-scale: 500, cnp_interval_ns: 0, clamp_tgt_rate: true }")).unwrap();
        let h1 = t.host("h1").unwrap();
        assert_eq!(h1.dcqcn_time_scale, 500);
        assert_eq!(
            h1.dcqcn_params,
            [
                ("clamp_tgt_rate".to_owned(), "true".to_owned()),
                ("cnp_interval_ns".to_owned(), "0".to_owned())
            ]
        );
        let t = parse(&host("{}")).unwrap();
        assert_eq!((t.hosts[0].dcqcn_time_scale, t.hosts[0].dcqcn_params.len()), (1, 0));
        let e = error_of(&host(
            "{ time-scale: 0, rpg_bogus: 1, rpg_min_dec_fac: 101, cnp_dscp: [1], time_scale: 5 }",
        ));
        for needle in [
            "hosts.h1.dcqcn.time-scale: time_scale: 0 is outside 1..=1000000",
            "hosts.h1.dcqcn.rpg_bogus: unknown DCQCN parameter \"rpg_bogus\" (reaction point: clamp_tgt_rate, ",
            "hosts.h1.dcqcn.rpg_min_dec_fac: rpg_min_dec_fac: 101 is above 100 (%)",
            "hosts.h1.dcqcn.cnp_dscp: expected a number",
            "hosts.h1.dcqcn.time_scale: write time-scale",
        ] {
            assert!(e.contains(needle), "{needle}: {e}");
        }
    }

    #[test]
    fn bad_names_and_fields() {
        let e = error_of("name: 'bad name'\nhosts: { h-1: { ip: 10.0.0.1 } }");
        assert!(e.contains("lab name \"bad name\""), "{e}");
        assert!(e.contains("hosts.h-1: \"h-1\": node names"), "{e}");
        assert!(e.contains("prefix length"), "{e}");
        assert!(e.contains("hosts.h-1: not linked"), "{e}");
        let e = error_of("hosts: { h1: { ip: 10.0.0.1/24, colour: red } }");
        assert!(e.contains("unknown field `colour`"), "{e}");
    }
}
