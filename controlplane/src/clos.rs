//! A two-tier Clos fabric generated from a profile: `leaves` leaf switches with `hosts_per_leaf` hosts each,
//! every leaf joined to each of `spines` spine switches, all ports at one speed, routed end to end with
//! ECMP over the spines. `swctl topology clos` writes it as a topology file with one configuration file
//! per switch (and, with `--shuffle-ms`, an all-to-all shuffle scenario); the simulator's benchmark runs it
//! (`bench/sim.sh`, `docs/simulator.md`).
//!
//! Addressing (every link a /31, as SONiC's T0/T1 topologies number them):
//!
//! - host `n` (1-based) is the `i`th host of leaf `l`: `10.1.l.(2i+1)/31`, its leaf port `Ethernet(4i)`
//!   holds `10.1.l.(2i)/31`;
//! - leaf `l`'s uplink to spine `s` is its port `Ethernet(4(hosts_per_leaf + s))` at `10.2.l.(2s+1)/31`,
//!   the spine's port `Ethernet(4l)` at `10.2.l.(2s)/31`;
//! - a leaf routes `10.1.0.0/16` to every spine (one `STATIC_ROUTE` with one next hop per spine: ECMP
//!   by the 5-tuple hash; RoCEv2 senders vary the UDP source port per QP for exactly this), its hosts'
//!   /31s are connected; a spine routes each leaf's `10.1.l.0/24` to that leaf. Every neighbour is a static
//!   `NEIGH` entry, so nothing depends on ARP.
//!
//! From the profile (a switch configuration such as `configs/profiles/th_balanced.yaml`) come its QoS
//! and buffer tables: the global ones as they are (maps, pools, profiles, schedulers, WRED profiles,
//! `BUFFER_ASIC`, `DEVICE_METADATA`'s hwsku and platform), and the per-port ones (`PORT_QOS_MAP`,
//! `BUFFER_PG`, `BUFFER_QUEUE`, `QUEUE`, `PFC_WD`, `CABLE_LENGTH`, ...) as the profile gives them for one
//! of its ports, applied to every port of the fabric. That template port is the profile's first port of
//! the fabric's speed, else its first port; in the latter case the lossless PGs' profiles (those with an
//! `xoff`) are written `NULL`, so that headroom is computed for the fabric's speed as `swctl apply` does.

use crate::lab::topology::{ConfigFiles, Topology};
use anyhow::{Context, bail};
use lossless_dataplane::model::config::{ConfigDb, parse_ref};
use serde::Serialize;
use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

/// Tables that say how the fabric forwards: generated, never taken from the profile.
const FORWARDING_TABLES: [&str; 9] = [
    "PORT",
    "INTERFACE",
    "VLAN",
    "VLAN_MEMBER",
    "VLAN_INTERFACE",
    "NEIGH",
    "STATIC_ROUTE",
    "FDB",
    "LOOPBACK_INTERFACE",
];

/// Tables keyed by port (`PORTS` or `PORTS|index`, `PORTS` a comma list): re-keyed to the fabric's ports.
const PER_PORT_TABLES: [&str; 7] = [
    "PORT_QOS_MAP",
    "BUFFER_PG",
    "BUFFER_QUEUE",
    "QUEUE",
    "PFC_WD",
    "BUFFER_PORT_INGRESS_PROFILE_LIST",
    "BUFFER_PORT_EGRESS_PROFILE_LIST",
];

/// The shape of the fabric.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClosSpec {
    pub leaves: u32,
    pub hosts_per_leaf: u32,
    pub spines: u32,
    /// Every port's `PORT|speed` and every host's line rate, Mb/s.
    pub speed_mbps: u32,
    /// The hosts' IP MTU (their RoCE packets' size).
    pub host_mtu: u32,
}

impl ClosSpec {
    /// Refuses shapes the addressing plan cannot number.
    pub fn check(&self) -> anyhow::Result<()> {
        let ClosSpec { leaves, hosts_per_leaf, spines, speed_mbps, host_mtu } = *self;
        if !(1..=256).contains(&leaves) {
            bail!("--leaves {leaves}: 1 to 256 (leaf l numbers its hosts 10.1.l.0/24)");
        }
        if !(1..=127).contains(&hosts_per_leaf) {
            bail!("--hosts-per-leaf {hosts_per_leaf}: 1 to 127 (a /31 each in 10.1.l.0/24)");
        }
        if !(1..=127).contains(&spines) {
            bail!("--spines {spines}: 1 to 127 (a /31 each in 10.2.l.0/24)");
        }
        if speed_mbps == 0 {
            bail!("--speed 0: a port speed in Mb/s, e.g. 25000");
        }
        if !(576..=9000).contains(&host_mtu) {
            bail!("--host-mtu {host_mtu}: 576 to 9000");
        }
        Ok(())
    }

    pub fn host_count(&self) -> u32 {
        self.leaves * self.hosts_per_leaf
    }

    /// Host `n`'s name (1-based, leaf by leaf).
    pub fn host_name(n: u32) -> String {
        format!("h{n}")
    }
}

/// A generated fabric: its topology file and one configuration per switch, by name.
#[derive(Debug, Clone)]
pub struct Clos {
    pub name: String,
    pub topology: TopologyFile,
    pub configs: BTreeMap<String, ConfigDb>,
}

/// A topology file as `swctl lab`/`swctl sim` read it (`controlplane/src/lab/topology/mod.rs`).
#[derive(Debug, Clone, Serialize)]
pub struct TopologyFile {
    pub name: String,
    pub switches: BTreeMap<String, SwitchEntry>,
    pub hosts: BTreeMap<String, HostEntry>,
    pub links: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct SwitchEntry {
    /// The configuration's file name, beside the topology file.
    pub config: String,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct HostEntry {
    pub ip: String,
    pub mac: String,
    pub gateway_mac: String,
    pub attach: String,
    pub pfc: Vec<u8>,
    pub line_rate_mbps: u32,
    pub mtu: u32,
}

/// A scenario file (`controlplane/src/lab/scenario/file.rs`) of generated traffic.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct ScenarioFile {
    pub name: String,
    pub topology: String,
    pub duration_ms: u64,
    pub steps: Vec<TrafficStep>,
}

#[derive(Debug, Clone, Serialize)]
pub struct TrafficStep {
    pub at: u64,
    pub traffic: Vec<FlowEntry>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct FlowEntry {
    pub from: String,
    pub to: String,
    pub priority: u8,
    pub dscp: u8,
    pub message_bytes: u64,
}

/// `02:4c:53:<tier>:<index>`: leaves tier 1, spines tier 2 (locally administered).
fn switch_mac(tier: u8, index: u32) -> String {
    format!("02:4c:53:{tier:02x}:{:02x}:{:02x}", index >> 8, index & 0xff)
}

fn host_mac(n: u32) -> String {
    format!("02:00:00:00:{:02x}:{:02x}", n >> 8, n & 0xff)
}

fn port(index: u32) -> String {
    format!("Ethernet{}", 4 * index)
}

/// The profile's port the fabric's ports are configured like, and whether its speed is the fabric's.
fn template_port(profile: &ConfigDb, speed_mbps: u32) -> anyhow::Result<(String, bool)> {
    let ports = profile.tables.get("PORT").filter(|p| !p.is_empty()).context("the profile has no PORT")?;
    let speed = |fields: &BTreeMap<String, String>| fields.get("speed").and_then(|s| s.parse::<u32>().ok());
    // PORT keys sort as text (Ethernet12 before Ethernet4): take the lowest port number.
    let number =
        |name: &str| name.trim_start_matches(|c: char| !c.is_ascii_digit()).parse::<u64>().unwrap_or(0);
    let mut by_number: Vec<_> = ports.iter().collect();
    by_number.sort_by_key(|(name, _)| (number(name), (*name).clone()));
    match by_number.iter().find(|(_, f)| speed(f) == Some(speed_mbps)) {
        Some((name, _)) => Ok(((*name).clone(), true)),
        None => Ok((by_number[0].0.clone(), false)),
    }
}

/// The profile's tables for a switch with `ports`, configured like the profile's `template`.
fn qos_tables(profile: &ConfigDb, template: &str, same_speed: bool, ports: &[String]) -> ConfigDb {
    let mut db = ConfigDb::default();
    let all = ports.join(",");
    for (table, keys) in &profile.tables {
        if FORWARDING_TABLES.contains(&table.as_str()) || table == "DEVICE_METADATA" {
            continue;
        }
        if table == "CABLE_LENGTH" {
            // `CABLE_LENGTH|AZURE`: port → length.
            for (key, fields) in keys {
                if let Some(length) = fields.get(template) {
                    for p in ports {
                        db.set(table, key, p, length.clone());
                    }
                }
            }
            continue;
        }
        if !PER_PORT_TABLES.contains(&table.as_str()) && table != "BORDER_RULE" {
            db.tables.insert(table.clone(), keys.clone());
            continue;
        }
        for (key, fields) in keys {
            let (port_list, rest) = match key.split_once('|') {
                Some((p, r)) => (p, Some(r)),
                None => (key.as_str(), None),
            };
            if !port_list.split(',').any(|p| p.trim() == template) {
                // `PFC_WD|GLOBAL` and the like: not a port key.
                if !profile
                    .tables
                    .get("PORT")
                    .is_some_and(|t| port_list.split(',').any(|p| t.contains_key(p.trim())))
                {
                    db.tables.entry(table.clone()).or_default().insert(key.clone(), fields.clone());
                }
                continue;
            }
            let mut fields = fields.clone();
            let lossless_pg =
                table == "BUFFER_PG" && fields.get("profile").is_some_and(|p| profile_has_xoff(profile, p));
            if lossless_pg && !same_speed {
                fields.insert("profile".into(), "NULL".into());
            }
            let new_key = match rest {
                // BORDER_RULE|<port>|<seq> is one port per key.
                Some(rest) if table == "BORDER_RULE" => {
                    for p in ports {
                        db.tables
                            .entry(table.clone())
                            .or_default()
                            .insert(format!("{p}|{rest}"), fields.clone());
                    }
                    continue;
                }
                Some(rest) => format!("{all}|{rest}"),
                None => all.clone(),
            };
            db.tables.entry(table.clone()).or_default().insert(new_key, fields);
        }
    }
    if let Some(meta) = profile.tables.get("DEVICE_METADATA").and_then(|t| t.get("localhost")) {
        for (field, value) in meta.iter().filter(|(f, _)| !matches!(f.as_str(), "mac" | "hostname")) {
            db.set("DEVICE_METADATA", "localhost", field, value.clone());
        }
    }
    db
}

/// A switch configuration with its QoS and buffer tables replaced by the profile's (as a generated switch
/// takes them, the template port chosen by the speed of the switch's lowest-numbered port), its forwarding
/// tables and `DEVICE_METADATA` kept.
pub fn with_profile(db: &ConfigDb, profile: &ConfigDb) -> anyhow::Result<ConfigDb> {
    let ports = db.tables.get("PORT").filter(|p| !p.is_empty()).context("the switch has no PORT")?;
    let number =
        |name: &str| name.trim_start_matches(|c: char| !c.is_ascii_digit()).parse::<u64>().unwrap_or(0);
    let mut names: Vec<String> = ports.keys().cloned().collect();
    names.sort_by_key(|n| (number(n), n.clone()));
    let speed = ports[&names[0]].get("speed").and_then(|s| s.parse().ok()).unwrap_or(100_000);
    let (template, same_speed) = template_port(profile, speed)?;
    let mut out = qos_tables(profile, &template, same_speed, &names);
    for table in FORWARDING_TABLES {
        if let Some(t) = db.tables.get(table) {
            out.tables.insert(table.to_owned(), t.clone());
        }
    }
    // The switch's own identity (mac, hostname) over the profile's hwsku and platform.
    for (key, fields) in db.tables.get("DEVICE_METADATA").into_iter().flatten() {
        for (field, value) in fields {
            out.set("DEVICE_METADATA", key, field, value.clone());
        }
    }
    Ok(out)
}

/// Whether `reference` (`name` or `[BUFFER_PROFILE|name]`) names a profile with an `xoff`: a lossless PG's.
/// A malformed reference names none (the config compiler reports it).
fn profile_has_xoff(profile: &ConfigDb, reference: &str) -> bool {
    let Ok(name) = parse_ref("BUFFER_PROFILE", reference) else { return false };
    profile.tables.get("BUFFER_PROFILE").and_then(|t| t.get(name)).is_some_and(|f| f.contains_key("xoff"))
}

/// The PFC-enabled priorities the profile gives its template port (`PORT_QOS_MAP|...|pfc_enable`).
fn pfc_priorities(qos: &ConfigDb) -> Vec<u8> {
    let Some(maps) = qos.tables.get("PORT_QOS_MAP") else { return Vec::new() };
    let text = maps.values().find_map(|f| f.get("pfc_enable")).cloned().unwrap_or_default();
    let mut out: Vec<u8> = text.split(',').filter_map(|p| p.trim().parse().ok()).filter(|p| *p < 8).collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// Generates the fabric `name` from `profile`.
pub fn generate(name: &str, spec: &ClosSpec, profile: &ConfigDb) -> anyhow::Result<Clos> {
    spec.check()?;
    let ClosSpec { leaves, hosts_per_leaf, spines, speed_mbps, host_mtu } = *spec;
    let (template, same_speed) = template_port(profile, speed_mbps)?;
    let mut configs = BTreeMap::new();
    let mut hosts = BTreeMap::new();
    let mut links = Vec::new();
    let leaf_ports: Vec<String> = (0..hosts_per_leaf + spines).map(port).collect();
    let spine_ports: Vec<String> = (0..leaves).map(port).collect();
    let leaf_qos = qos_tables(profile, &template, same_speed, &leaf_ports);
    let spine_qos = qos_tables(profile, &template, same_speed, &spine_ports);
    let pfc = pfc_priorities(&leaf_qos);
    let speed = speed_mbps.to_string();
    for l in 0..leaves {
        let leaf = format!("leaf{l}");
        let mut db = leaf_qos.clone();
        db.set("DEVICE_METADATA", "localhost", "mac", switch_mac(1, l)).set(
            "DEVICE_METADATA",
            "localhost",
            "hostname",
            leaf.clone(),
        );
        for p in &leaf_ports {
            db.set("PORT", p, "speed", speed.clone()).set("PORT", p, "mtu", "9100");
            db.touch("INTERFACE", p);
        }
        for i in 0..hosts_per_leaf {
            let n = l * hosts_per_leaf + i + 1;
            let (p, host_ip) = (port(i), Ipv4Addr::new(10, 1, l as u8, (2 * i + 1) as u8));
            db.touch("INTERFACE", &format!("{p}|10.1.{l}.{}/31", 2 * i));
            db.set("NEIGH", &format!("{p}|{host_ip}"), "neigh", host_mac(n)).set(
                "NEIGH",
                &format!("{p}|{host_ip}"),
                "family",
                "IPv4",
            );
            let host = ClosSpec::host_name(n);
            hosts.insert(
                host.clone(),
                HostEntry {
                    ip: format!("{host_ip}/31"),
                    mac: host_mac(n),
                    gateway_mac: switch_mac(1, l),
                    attach: format!("{leaf}:{p}"),
                    pfc: pfc.clone(),
                    line_rate_mbps: speed_mbps,
                    mtu: host_mtu,
                },
            );
        }
        let mut next_hops = Vec::new();
        for s in 0..spines {
            let p = port(hosts_per_leaf + s);
            db.touch("INTERFACE", &format!("{p}|10.2.{l}.{}/31", 2 * s + 1));
            let spine_ip = format!("10.2.{l}.{}", 2 * s);
            db.set("NEIGH", &format!("{p}|{spine_ip}"), "neigh", switch_mac(2, s)).set(
                "NEIGH",
                &format!("{p}|{spine_ip}"),
                "family",
                "IPv4",
            );
            next_hops.push(spine_ip);
            links.push(format!("{leaf}:{p} -- spine{s}:{}", port(l)));
        }
        db.set("STATIC_ROUTE", "10.1.0.0/16", "nexthop", next_hops.join(","));
        configs.insert(leaf, db);
    }
    for s in 0..spines {
        let spine = format!("spine{s}");
        let mut db = spine_qos.clone();
        db.set("DEVICE_METADATA", "localhost", "mac", switch_mac(2, s)).set(
            "DEVICE_METADATA",
            "localhost",
            "hostname",
            spine.clone(),
        );
        for l in 0..leaves {
            let p = port(l);
            db.set("PORT", &p, "speed", speed.clone()).set("PORT", &p, "mtu", "9100");
            db.touch("INTERFACE", &p).touch("INTERFACE", &format!("{p}|10.2.{l}.{}/31", 2 * s));
            let leaf_ip = format!("10.2.{l}.{}", 2 * s + 1);
            db.set("NEIGH", &format!("{p}|{leaf_ip}"), "neigh", switch_mac(1, l)).set(
                "NEIGH",
                &format!("{p}|{leaf_ip}"),
                "family",
                "IPv4",
            );
            db.set("STATIC_ROUTE", &format!("10.1.{l}.0/24"), "nexthop", leaf_ip);
        }
        configs.insert(spine, db);
    }
    let switches = configs.keys().map(|n| (n.clone(), SwitchEntry { config: format!("{n}.yaml") })).collect();
    Ok(Clos {
        name: name.to_owned(),
        topology: TopologyFile { name: name.to_owned(), switches, hosts, links },
        configs,
    })
}

/// Every host sends to every other: one flow per ordered pair, starting at 0, lossless `priority` (the
/// profile's first PFC priority) with DSCP `dscp`.
pub fn shuffle(spec: &ClosSpec, priority: u8, dscp: u8, message_bytes: u64) -> Vec<FlowEntry> {
    let hosts = spec.host_count();
    let mut flows = Vec::with_capacity((hosts * hosts.saturating_sub(1)) as usize);
    for from in 1..=hosts {
        for to in (1..=hosts).filter(|&to| to != from) {
            flows.push(FlowEntry {
                from: ClosSpec::host_name(from),
                to: ClosSpec::host_name(to),
                priority,
                dscp,
                message_bytes,
            });
        }
    }
    flows
}

/// The generated files, by name, as `ConfigFiles` for [`Topology::parse`].
struct Generated<'a>(&'a Clos);

impl ConfigFiles for Generated<'_> {
    fn read(&self, name: &str) -> anyhow::Result<(String, String)> {
        let switch = name.strip_suffix(".yaml").unwrap_or(name);
        let db = self.0.configs.get(switch).with_context(|| format!("{name}: not a generated switch"))?;
        Ok((serde_yaml::to_string(db)?, format!("generated {name}")))
    }
}

impl Clos {
    /// The fabric as a validated topology, without writing a file.
    pub fn to_topology(&self) -> anyhow::Result<Topology> {
        let text = serde_yaml::to_string(&self.topology)?;
        Topology::parse(&text, &self.name, &format!("generated Clos {}", self.name), &Generated(self))
    }

    /// Writes `DIR/NAME.yaml` (the topology) and `DIR/SWITCH.yaml` per switch; returns the topology's path.
    pub fn write(&self, dir: &Path) -> anyhow::Result<PathBuf> {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        for (name, db) in &self.configs {
            let path = dir.join(format!("{name}.yaml"));
            std::fs::write(&path, serde_yaml::to_string(db)?)
                .with_context(|| format!("writing {}", path.display()))?;
        }
        let path = dir.join(format!("{}.yaml", self.name));
        std::fs::write(&path, serde_yaml::to_string(&self.topology)?)
            .with_context(|| format!("writing {}", path.display()))?;
        Ok(path)
    }
}

#[derive(clap::Subcommand, Debug)]
pub enum TopologyCommand {
    /// Generate a two-tier Clos (leaves, spines, hosts; routed, ECMP over the spines) from a profile: a
    /// topology file and one configuration per switch in --out, optionally an all-to-all shuffle scenario.
    Clos {
        #[arg(long, default_value_t = 16)]
        leaves: u32,
        #[arg(long, default_value_t = 8)]
        hosts_per_leaf: u32,
        #[arg(long, default_value_t = 4)]
        spines: u32,
        /// Port speed of every link, Mb/s.
        #[arg(long, default_value_t = 25000)]
        speed: u32,
        /// The hosts' IP MTU.
        #[arg(long, default_value_t = 4200)]
        host_mtu: u32,
        /// A switch configuration whose QoS and buffer tables every switch takes.
        #[arg(long)]
        profile: PathBuf,
        /// The topology's name (and file name).
        #[arg(long, default_value = "clos")]
        name: String,
        /// Output directory.
        #[arg(long)]
        out: PathBuf,
        /// Also write NAME-shuffle.yaml: every host sends to every other for this many ms (lossless, the
        /// profile's first PFC priority, DSCP = priority).
        #[arg(long)]
        shuffle_ms: Option<u64>,
        /// Message size of the shuffle's flows.
        #[arg(long, default_value_t = 4096)]
        message_bytes: u64,
    },
}

pub fn run(command: TopologyCommand) -> anyhow::Result<()> {
    let TopologyCommand::Clos {
        leaves,
        hosts_per_leaf,
        spines,
        speed,
        host_mtu,
        profile,
        name,
        out,
        shuffle_ms,
        message_bytes,
    } = command;
    let text =
        std::fs::read_to_string(&profile).with_context(|| format!("cannot read {}", profile.display()))?;
    let db = ConfigDb::from_yaml_str(&text).map_err(|e| anyhow::anyhow!("{}: {e}", profile.display()))?;
    let spec = ClosSpec { leaves, hosts_per_leaf, spines, speed_mbps: speed, host_mtu };
    let clos = generate(&name, &spec, &db)?;
    // Validate before writing: the same checks `swctl lab`/`swctl sim` make when they load it.
    clos.to_topology()?;
    let path = clos.write(&out)?;
    println!("wrote {} and {} switch configuration(s)", path.display(), clos.configs.len());
    if let Some(ms) = shuffle_ms {
        let priority =
            *clos.topology.hosts.values().next().and_then(|h| h.pfc.first()).with_context(|| {
                format!(
                    "{}: no PFC-enabled priority (PORT_QOS_MAP pfc_enable) for a lossless shuffle",
                    profile.display()
                )
            })?;
        let scenario = ScenarioFile {
            name: format!("{name}-shuffle"),
            topology: format!("{name}.yaml"),
            duration_ms: ms,
            steps: vec![TrafficStep { at: 0, traffic: shuffle(&spec, priority, priority, message_bytes) }],
        };
        let path = out.join(format!("{name}-shuffle.yaml"));
        std::fs::write(&path, serde_yaml::to_string(&scenario)?)
            .with_context(|| format!("writing {}", path.display()))?;
        println!("wrote {} ({} flows)", path.display(), scenario.steps[0].traffic.len());
    }
    Ok(())
}

#[cfg(test)]
mod tests;
