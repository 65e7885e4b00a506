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
//!   h5: { ip: 10.0.0.5/24, retransmit: go-back-0 }         # loss recovery: go-back-n (default) or go-back-0
//!   h6: { ip: 10.0.0.6/24, rx-pipeline: { buffer_bytes: 262144, xoff_bytes: 131072, xon_bytes: 65536 } }
//! links:
//!   - sw1:Ethernet0 -- h1:eth0                              # "—", "--" or "<->" between the ends
//!   - { link: sw1:Ethernet8 -- sw2:Ethernet0, delay: 2ms, jitter: 100us, loss: 0.01% }   # tc netem
//!   - { link: sw2:Ethernet4 -- h3:eth0, corrupt: 0.1%, loss-every: 256 }  # loss-every: swctl sim run only
//! traffic:                                                  # swctl lab demo only
//!   - { from: h1, to: h3, priority: 3, dscp: 3, rate-mbps: 600 }
//! ```
//!
//! A containerlab topology (`topology.nodes`, `links[].endpoints`) is read too ([`containerlab`]).
//!
//! [`Topology::load`] parses and validates everything before anything is created: every error at once, each
//! naming the entry the user wrote (`links[2]: unknown node h9`, `hosts.h2.ip: 10.0.0.1 is also h1's`).
//! Switch configurations are compiled as `swctl apply` would (NULL lossless PG profiles computed first).
//!
//! Here: the validated types and loading; the file form and its field parsers ([`file`]); the checks
//! that turn one into the other (`build`).

mod build;
pub mod containerlab;
mod file;
#[cfg(test)]
mod tests;

use anyhow::{Context, bail};
pub use file::RawFlow;
pub(crate) use file::RawTopology;
use file::check_interface_name;
pub(crate) use file::parse_end;
use lossless_dataplane::model::config::{ConfigDb, SwitchConfig, check_config_text};
use lossless_dataplane::nic::{Retransmit, RxPipelineConfig};
use lossless_dataplane::wire::EthernetAddress;
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

/// A validated topology (the default is empty: no nodes).
#[derive(Debug, Clone, Default)]
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
    /// The NIC's receive buffer and pipeline (default: none, frames consumed on arrival).
    pub rx_pipeline: RxPipelineConfig,
    /// Loss recovery of the host's flows (rocehost's `--retransmit`).
    pub retransmit: Retransmit,
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

    /// rocehost's arguments for this host's NIC on `interface`: address, MAC, line rate, MTU and PFC
    /// priorities. `swctl lab up` adds the host's gateway, DCQCN, receive pipeline and flows; Pingmesh's
    /// prober (on the same interface) its probing.
    pub fn rocehost_nic_args(&self, interface: &str) -> Vec<String> {
        let mut args = vec![
            "--interface".into(),
            interface.to_owned(),
            "--ip".into(),
            self.ip.to_string(),
            "--mac".into(),
            self.mac.to_string(),
            "--line-rate-mbps".into(),
            self.line_rate_mbps.to_string(),
            "--mtu".into(),
            self.mtu.to_string(),
        ];
        if !self.pfc.is_empty() {
            args.extend([
                "--pfc-enable".into(),
                self.pfc.iter().map(u8::to_string).collect::<Vec<_>>().join(","),
            ]);
        }
        args
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

#[derive(Debug, Clone, PartialEq)]
pub struct Link {
    pub a: End,
    pub b: End,
    /// `tc qdisc ... netem` arguments for both ends (delay, jitter, loss), empty when none.
    pub netem: Vec<String>,
    /// Interface MTU of both ends.
    pub mtu: u32,
    /// The same settings, parsed, for the simulator.
    pub line: LineEffects,
}

/// What a link's `delay`, `jitter`, `loss`, `corrupt` and `loss-every` ask for (both directions).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LineEffects {
    pub delay_ns: Option<u64>,
    pub jitter_ns: Option<u64>,
    pub loss_probability: Option<f64>,
    pub corrupt_probability: Option<f64>,
    /// Every Nth RoCE data packet lost (simulator only).
    pub loss_every: Option<u64>,
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
        // Pathologically deep text is refused before any parse (it embeds switch configurations).
        check_config_text(text).map_err(|e| anyhow::anyhow!("{source}: {e}"))?;
        let value = serde_yaml::from_str(text).map_err(|e| anyhow::anyhow!("{source}: {e}"))?;
        let raw = Topology::read_raw(value, &Written::File(text), source)?;
        Topology::from_raw(raw, default_name, source, files)
    }

    /// A topology as written: `value` is its YAML (merge keys not yet applied), `written` the text it came
    /// from, `source` names it in errors.
    pub(crate) fn read_raw(
        mut value: serde_yaml::Value,
        written: &Written,
        source: &str,
    ) -> anyhow::Result<RawTopology> {
        // Read as written first, for errors with a line and column; then again with YAML merge keys
        // (`<<: *leaf`) applied, so that switches can share a configuration and override parts of it.
        value.apply_merge().map_err(|e| anyhow::anyhow!("{source}: {e}"))?;
        if containerlab::is_containerlab(&value) {
            return containerlab::to_native(written, value).map_err(|errors| invalid(source, &errors));
        }
        written.check::<RawTopology>().map_err(|e| match written {
            Written::File(_) => anyhow::anyhow!("{source}: {e}"),
            // The error's path starts at the scenario's `topology`.
            Written::InScenario { source, .. } => anyhow::anyhow!("{source}: {e}"),
        })?;
        serde_yaml::from_value(value).map_err(|e| anyhow::anyhow!("{source}: {e}"))
    }

    /// Validates a topology as written; `default_name` names it when it has no `name:`.
    pub(crate) fn from_raw(
        raw: RawTopology,
        default_name: &str,
        source: &str,
        files: &dyn ConfigFiles,
    ) -> anyhow::Result<Topology> {
        let mut errors = Vec::new();
        let topology = build::build(raw, default_name, source, files, &mut errors);
        if !errors.is_empty() {
            return Err(invalid(source, &errors));
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

/// The text a topology was written in, read as written for serde errors with a path, line and column
/// (the topology itself is read from its YAML with merge keys applied).
pub(crate) enum Written<'a> {
    /// A topology file's text.
    File(&'a str),
    /// A scenario file's text, the topology inline under its `topology:`; `source` names the scenario.
    InScenario { text: &'a str, source: &'a str },
}

impl Written<'_> {
    fn check<T: serde::de::DeserializeOwned>(&self) -> Result<(), serde_yaml::Error> {
        /// A scenario file, only its topology read (the rest is the scenario's, checked there).
        #[derive(serde::Deserialize)]
        struct Scenario<T> {
            topology: T,
        }
        match self {
            Written::File(text) => serde_yaml::from_str::<T>(text).map(drop),
            Written::InScenario { text, .. } => {
                serde_yaml::from_str::<Scenario<T>>(text).map(|s| drop(s.topology))
            }
        }
    }
}

/// Every error of a topology file, one a line.
fn invalid(source: &str, errors: &[String]) -> anyhow::Error {
    anyhow::anyhow!(
        "{source}: invalid topology ({} error(s)):\n{}",
        errors.len(),
        errors.iter().map(|e| format!("  {e}")).collect::<Vec<_>>().join("\n")
    )
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

/// The switch's configuration, with NULL lossless PG profiles computed as `swctl apply` does by default
/// (the shipped lookup table of its hwsku, else SONiC's dynamic formula with the ASIC of its platform or
/// hwsku, else with sonic-vs's).
pub(crate) fn resolve_switch_config(db: &mut ConfigDb) -> Result<(), Vec<String>> {
    use crate::headroom::{self, ModelRequest};
    let model = ModelRequest::default().select(Some(db)).map_err(|e| vec![e])?.model;
    headroom::generate_lossless_profiles(db, &model)
        .map(drop)
        .map_err(|e| e.iter().map(|i| i.to_string()).collect())
}
/// valid interface name (`Ethernet0`), else `p<index>` by the port's position in the configuration.
/// The interface a switch port is bound to inside the switch's namespace: the port's own name when it is a
/// valid interface name (`Ethernet0`), else `p<index>` by the port's position in the configuration.
pub fn switch_interface(switch: &SwitchNode, port: &str) -> String {
    if check_interface_name(port).is_ok() {
        return port.to_owned();
    }
    let index = switch.compiled.ports.iter().position(|p| p.name == port).unwrap_or(0);
    format!("p{index}")
}
