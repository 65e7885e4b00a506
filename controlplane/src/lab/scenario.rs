//! `swctl lab run FILE`: a scenario is a topology (inline, or `topology: path`) plus a timeline of steps
//! (times in ms after the hosts are up) and expectations checked on the results.
//!
//! ```yaml
//! topology: ../topologies/t1-t0.yaml     # or an inline topology mapping
//! duration-ms: 4000                      # senders' --duration
//! steps:
//!   - { at: 0, traffic: { from: h1, to: h3, priority: 3, dscp: 3, rate-mbps: 300, dcqcn: false } }
//!   - { at: 2000, storm: { host: h2, priorities: [3], interval-us: 100, stop: 3500 } }
//!   - { at: 800, stop-host: { host: h3 } }                   # h3's rocehost exits: a dead, silent server
//!   - { at: 1000, flush-fdb: { switch: t0, port: Ethernet4 } }
//!   - { at: 0, apply: { switch: t0, config: { SWITCH: { switch: { lossless_fdb_miss_action: flood } } } } }
//!   - { at: 1500, apply: { switch: t0, config: t0-new.yaml, replace: true } }
//! expect:
//!   - pfcwd_detected: { switch: sw1, port: Ethernet4, queue: 3, within_ms: 650 }
//!   - goodput_mbps_at_least: { flow: 0, value: 200 }
//!   - psn_gaps: { flow: 0, max: 0 }
//!   - drop_reason: { switch: t0, reason: FDB_MISS_LOSSLESS, min: 1 }
//!   - flooded_frames: { switch: t0, port: Ethernet8, queue: 3, min: 1 }
//!   - fdb_entry: { switch: t0, host: h3, present: false }   # at the end of the run
//!   - neighbor: { switch: t0, host: h3, present: true }
//!   - pfc_tx: { switch: sw1, port: [Ethernet0, Ethernet4], priority: 3, min: 1 }
//!   - queue_depth: { switch: sw1, port: Ethernet8, queue: 3, max: 20 }
//!   - cnps: { flow: [2, 3], min: 1 }                         # flows: numbered from 0 in step order
//!   - ratio: { of: { pause_ms: { flow: [2, 3] } }, to: { pause_ms: { flow: [0, 1] } }, max: 0.5 }
//! ```
//!
//! Metrics (`min`/`max` bounds, or the two sides of a `ratio`):
//! - `pfc_tx`: PFC frames the switch sent on the port(s) for the priority (summed);
//! - `queue_depth`: frames in the egress queue, averaged over the counter samples (every
//!   [`SAMPLE_INTERVAL_MS`]) taken while the scenario ran;
//! - per flow, summed over the flows listed: `goodput_mbps` (receiver), `psn_gaps` (receiver), `cnps`
//!   (CNPs the sender received), `pause_ms` (time the sender's NIC was paused on the flow's priority; a host
//!   sending two flows on one priority counts it for each), `retransmitted` (sender packets),
//!   `dcqcn_rate_decreases` and `dcqcn_rate_mbps` (the sender's DCQCN reaction point: rate cuts, and its
//!   rate when the run ended; 0 with DCQCN off).
//!
//! Steps:
//! - `storm` runs in the host's own rocehost (`--storm`, `--storm-from`, `--storm-until`);
//! - `stop-host` stops the host's rocehost (SIGTERM; it writes its report): a dead server. Nothing leaves
//!   the host any more for traffic from off its subnet (its kernel has no route back); traffic from its own
//!   subnet may still draw a few rate-limited ICMP errors from its kernel;
//! - `flush-fdb` removes learned FDB entries (all, or one port's), as MAC aging does; neighbours stay;
//! - `apply` pushes a configuration over the switch's Apply RPC at its running generation: merged field by
//!   field into the running configuration, or with `replace: true` as the whole configuration (NULL lossless
//!   PG profiles are computed as `swctl apply` does). The switch validates it; a refusal fails the scenario
//!   with the switch's issues (`TABLE|key|field: message`).
//!
//! Storm start and detection are measured on the switch's clock: the storm began between the last counter
//! sample without PFC RX growth on a storm priority and the first with it, and the `pfc_storm_detected`
//! event of the Subscribe stream ends it; `pfcwd_detected` checks the longer of the two delays (the
//! detection certainly happened within it).

use super::switchd::push_config;
use super::topology::{MAX_LAB_NAME, RelativeTo, Topology};
use super::up::{self, Lab, UpOptions};
use super::{check_interrupted, interrupted};
use anyhow::{Context, bail};
use lossless_dataplane::model::config::ConfigDb;
use lossless_dataplane::server;
use lossless_proto::v1 as pb;
use serde::Serialize;
use serde_json::Value;
use serde_yaml::Value as Yaml;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Counter sampling period of a scenario run.
pub const SAMPLE_INTERVAL_MS: u32 = 10;

#[derive(Debug, Clone)]
pub struct Scenario {
    pub name: String,
    pub topology: Topology,
    pub duration_ms: u64,
    pub storms: Vec<Storm>,
    /// Timed actions on switches and hosts, in time order (file order for equal times).
    pub actions: Vec<Action>,
    pub expect: Vec<Expect>,
}

#[derive(Debug, Clone)]
pub struct Storm {
    pub host: String,
    pub priorities: Vec<u8>,
    pub interval_us: u64,
    pub start_ms: u64,
    pub stop_ms: Option<u64>,
}

#[derive(Debug, Clone)]
pub struct Action {
    pub at_ms: u64,
    /// `steps[i]`, for messages.
    pub step: String,
    pub kind: ActionKind,
}

#[derive(Debug, Clone)]
pub enum ActionKind {
    FlushFdb { switch: String, port: Option<String> },
    StopHost { host: String },
    Apply { switch: String, config: ConfigDb, replace: bool, source: String },
}

#[derive(Debug, Clone)]
pub enum Expect {
    PfcwdDetected {
        switch: String,
        port: String,
        queue: u32,
        within_ms: u64,
    },
    DropReason {
        switch: String,
        reason: String,
        min: Option<u64>,
        max: Option<u64>,
    },
    Flooded {
        switch: String,
        port: String,
        queue: u32,
        min: Option<u64>,
        max: Option<u64>,
    },
    /// A metric within bounds.
    Bounds {
        metric: Metric,
        min: Option<f64>,
        max: Option<f64>,
    },
    /// `of / to` within bounds.
    Ratio {
        of: Metric,
        to: Metric,
        min: Option<f64>,
        max: Option<f64>,
    },
    /// The switch's FDB (the host's MAC) or neighbour table (its IP) has, or has not, the host's entry.
    Entry {
        switch: String,
        host: String,
        table: Table,
        present: bool,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Table {
    Fdb,
    Neighbor,
}

#[derive(Debug, Clone)]
pub enum Metric {
    PfcTx { switch: String, ports: Vec<String>, priority: u8 },
    QueueDepth { switch: String, port: String, queue: u32 },
    Flow { what: FlowMetric, flows: Vec<usize> },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlowMetric {
    GoodputMbps,
    PsnGaps,
    Cnps,
    PauseMs,
    Retransmitted,
    RateDecreases,
    RateMbps,
}

impl FlowMetric {
    fn parse(name: &str) -> Option<FlowMetric> {
        Some(match name {
            "goodput_mbps" => FlowMetric::GoodputMbps,
            "psn_gaps" => FlowMetric::PsnGaps,
            "cnps" => FlowMetric::Cnps,
            "pause_ms" => FlowMetric::PauseMs,
            "retransmitted" => FlowMetric::Retransmitted,
            "dcqcn_rate_decreases" => FlowMetric::RateDecreases,
            "dcqcn_rate_mbps" => FlowMetric::RateMbps,
            _ => return None,
        })
    }

    /// The key of the flows' JSON in the report.
    fn key(self) -> &'static str {
        match self {
            FlowMetric::GoodputMbps => "goodput_mbps",
            FlowMetric::PsnGaps => "psn_gaps",
            FlowMetric::Cnps => "cnps_received",
            FlowMetric::PauseMs => "pause_ms",
            FlowMetric::Retransmitted => "retransmitted_packets",
            FlowMetric::RateDecreases => "dcqcn_rate_decreases",
            FlowMetric::RateMbps => "dcqcn_rate_mbps",
        }
    }

    fn describe(self) -> &'static str {
        match self {
            FlowMetric::GoodputMbps => "goodput (Mb/s)",
            FlowMetric::PsnGaps => "PSN gaps",
            FlowMetric::Cnps => "CNPs received by the sender",
            FlowMetric::PauseMs => "sender paused (ms)",
            FlowMetric::Retransmitted => "retransmitted packets",
            FlowMetric::RateDecreases => "DCQCN rate decreases",
            FlowMetric::RateMbps => "DCQCN rate at the end (Mb/s)",
        }
    }
}

impl Metric {
    fn describe(&self) -> String {
        match self {
            Metric::PfcTx { switch, ports, priority } => {
                format!("{switch} PFC frames sent on {} priority {priority}", ports.join("+"))
            }
            Metric::QueueDepth { switch, port, queue } => {
                format!("{switch} {port} queue {queue} mean depth (frames)")
            }
            Metric::Flow { what, flows } => {
                let list = flows.iter().map(usize::to_string).collect::<Vec<_>>().join("+");
                format!("flow {list} {}", what.describe())
            }
        }
    }

    fn switch(&self) -> Option<(&str, Vec<&str>)> {
        match self {
            Metric::PfcTx { switch, ports, .. } => Some((switch, ports.iter().map(String::as_str).collect())),
            Metric::QueueDepth { switch, port, .. } => Some((switch, vec![port.as_str()])),
            Metric::Flow { .. } => None,
        }
    }
}

fn field<'a>(v: &'a Yaml, key: &str, what: &str) -> anyhow::Result<&'a Yaml> {
    v.get(key).with_context(|| format!("{what}: missing `{key}`"))
}
fn str_of(v: &Yaml, key: &str, what: &str) -> anyhow::Result<String> {
    field(v, key, what)?.as_str().map(str::to_owned).with_context(|| format!("{what}.{key}: a string"))
}
fn u64_of(v: &Yaml, key: &str, what: &str) -> anyhow::Result<u64> {
    field(v, key, what)?.as_u64().with_context(|| format!("{what}.{key}: a number"))
}
fn opt_u64(v: &Yaml, key: &str, what: &str) -> anyhow::Result<Option<u64>> {
    v.get(key).map(|x| x.as_u64().with_context(|| format!("{what}.{key}: a whole number"))).transpose()
}
fn opt_f64(v: &Yaml, key: &str, what: &str) -> anyhow::Result<Option<f64>> {
    v.get(key).map(|x| x.as_f64().with_context(|| format!("{what}.{key}: a number"))).transpose()
}
/// `key: X` or `key: [X, Y]`.
fn one_or_many(v: &Yaml, key: &str, what: &str) -> anyhow::Result<Vec<Yaml>> {
    Ok(match field(v, key, what)? {
        Yaml::Sequence(items) if items.is_empty() => bail!("{what}.{key}: an empty list"),
        Yaml::Sequence(items) => items.clone(),
        other => vec![other.clone()],
    })
}
/// `{ name: {...} }`: the one key and its value.
fn one_key(v: &Yaml, what: &str) -> anyhow::Result<(String, Yaml)> {
    v.as_mapping()
        .filter(|m| m.len() == 1)
        .and_then(|m| m.iter().next())
        .and_then(|(k, v)| Some((k.as_str()?.to_owned(), v.clone())))
        .with_context(|| format!("{what}: a one-key mapping such as {{ pfc_tx: {{ ... }} }}"))
}

impl Scenario {
    pub fn load(path: &Path) -> anyhow::Result<Scenario> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        Scenario::parse(&text, &stem, &path.display().to_string(), &dir)
    }

    pub fn parse(text: &str, default_name: &str, source: &str, dir: &Path) -> anyhow::Result<Scenario> {
        let doc: Yaml = serde_yaml::from_str(text).map_err(|e| anyhow::anyhow!("{source}: {e}"))?;
        let (mut topo, topo_dir, topo_source): (Yaml, PathBuf, String) = match doc.get("topology") {
            Some(Yaml::String(p)) => {
                let path = dir.join(p);
                let t = std::fs::read_to_string(&path)
                    .with_context(|| format!("{source}: cannot read {}", path.display()))?;
                let v = serde_yaml::from_str(&t).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
                (v, path.parent().map(Path::to_path_buf).unwrap_or_default(), path.display().to_string())
            }
            Some(v @ Yaml::Mapping(_)) => (v.clone(), dir.to_path_buf(), format!("{source}: topology")),
            _ => bail!("{source}: `topology` must be a path or a mapping"),
        };
        let name = doc.get("name").and_then(Yaml::as_str).unwrap_or(default_name).to_owned();
        let duration_ms = doc.get("duration-ms").and_then(Yaml::as_u64).unwrap_or(3000);
        let mut flows = Vec::new();
        let mut storms = Vec::new();
        let mut actions = Vec::new();
        let steps = doc.get("steps").and_then(Yaml::as_sequence).cloned().unwrap_or_default();
        for (i, step) in steps.iter().enumerate() {
            let what = format!("{source}: steps[{i}]");
            let at = opt_u64(step, "at", &what)?.unwrap_or(0);
            let action = |kind| Action { at_ms: at, step: format!("steps[{i}]"), kind };
            if let Some(t) = step.get("traffic") {
                let list = match t {
                    Yaml::Sequence(s) => s.clone(),
                    other => vec![other.clone()],
                };
                for mut f in list {
                    let m = f.as_mapping_mut().with_context(|| format!("{what}.traffic: a mapping"))?;
                    m.insert("start-ms".into(), at.into());
                    flows.push(f);
                }
            } else if let Some(s) = step.get("storm") {
                let host = str_of(s, "host", &what)?;
                let priorities: Vec<u8> = field(s, "priorities", &what)?
                    .as_sequence()
                    .with_context(|| format!("{what}.priorities: a list"))?
                    .iter()
                    .map(|p| p.as_u64().filter(|&p| p < 8).map(|p| p as u8))
                    .collect::<Option<_>>()
                    .with_context(|| format!("{what}.priorities: numbers 0-7"))?;
                let stop_ms = opt_u64(s, "stop", &what)?;
                if stop_ms.is_some_and(|s| s <= at) {
                    bail!("{what}: stop must be after at");
                }
                storms.push(Storm {
                    host,
                    priorities,
                    interval_us: opt_u64(s, "interval-us", &what)?.unwrap_or(100).max(1),
                    start_ms: at,
                    stop_ms,
                });
            } else if let Some(f) = step.get("flush-fdb") {
                actions.push(action(ActionKind::FlushFdb {
                    switch: str_of(f, "switch", &what)?,
                    port: f.get("port").and_then(Yaml::as_str).map(str::to_owned),
                }));
            } else if let Some(s) = step.get("stop-host") {
                actions.push(action(ActionKind::StopHost { host: str_of(s, "host", &what)? }));
            } else if let Some(a) = step.get("apply") {
                let what = format!("{what}.apply");
                let switch = str_of(a, "switch", &what)?;
                let replace = match a.get("replace") {
                    None => false,
                    Some(v) => v.as_bool().with_context(|| format!("{what}.replace: true or false"))?,
                };
                let (text, config_source) = match field(a, "config", &what)? {
                    Yaml::String(file) => {
                        let path = dir.join(file);
                        let text = std::fs::read_to_string(&path)
                            .with_context(|| format!("{what}.config: cannot read {}", path.display()))?;
                        (text, path.display().to_string())
                    }
                    m @ Yaml::Mapping(_) => (serde_yaml::to_string(m)?, "an inline config".to_owned()),
                    _ => bail!("{what}.config: a file name or the tables inline"),
                };
                let config = ConfigDb::from_yaml_str(&text)
                    .map_err(|e| anyhow::anyhow!("{what}.config: {config_source}: {e}"))?;
                actions.push(action(ActionKind::Apply { switch, config, replace, source: config_source }));
            } else {
                bail!("{what}: expected traffic, storm, stop-host, flush-fdb or apply");
            }
        }
        actions.sort_by_key(|a| a.at_ms);
        if let Some(m) = topo.as_mapping_mut() {
            if !flows.is_empty() {
                m.insert("traffic".into(), Yaml::Sequence(flows));
            }
            m.entry("name".into()).or_insert_with(|| name.clone().into());
        }
        let topo_text = serde_yaml::to_string(&topo)?;
        let topology = Topology::parse(&topo_text, &name, &topo_source, &RelativeTo(topo_dir))?;
        for s in &storms {
            if topology.host(&s.host).is_none() {
                bail!("{source}: storm: unknown host {}", s.host);
            }
        }
        for a in &actions {
            let (switch, port, host) = match &a.kind {
                ActionKind::FlushFdb { switch, port } => (Some(switch), port.as_ref(), None),
                ActionKind::StopHost { host } => (None, None, Some(host)),
                ActionKind::Apply { switch, .. } => (Some(switch), None, None),
            };
            if let Some(h) = host
                && topology.host(h).is_none()
            {
                bail!(
                    "{source}: {}: unknown host {h} ({})",
                    a.step,
                    names(topology.hosts.iter().map(|h| &h.name))
                );
            }
            if let Some(sw) = switch {
                check_switch_port(&topology, sw, port.map(String::as_str))
                    .map_err(|e| anyhow::anyhow!("{source}: {}: {e}", a.step))?;
            }
        }
        let mut expect = Vec::new();
        for (i, e) in
            doc.get("expect").and_then(Yaml::as_sequence).cloned().unwrap_or_default().iter().enumerate()
        {
            let what = format!("{source}: expect[{i}]");
            let (key, v) = one_key(e, &what)?;
            let what = format!("{what}.{key}");
            let flow = |v: &Yaml| -> anyhow::Result<usize> { flow_index(&topology, v, &what) };
            expect.push(match key.as_str() {
                "pfcwd_detected" => Expect::PfcwdDetected {
                    switch: str_of(&v, "switch", &what)?,
                    port: str_of(&v, "port", &what)?,
                    queue: u64_of(&v, "queue", &what)? as u32,
                    within_ms: u64_of(&v, "within_ms", &what)?,
                },
                "goodput_mbps_at_least" => Expect::Bounds {
                    metric: Metric::Flow {
                        what: FlowMetric::GoodputMbps,
                        flows: vec![flow(field(&v, "flow", &what)?)?],
                    },
                    min: Some(
                        opt_f64(&v, "value", &what)?.with_context(|| format!("{what}: missing `value`"))?,
                    ),
                    max: None,
                },
                "drop_reason" => Expect::DropReason {
                    switch: str_of(&v, "switch", &what)?,
                    reason: str_of(&v, "reason", &what)?,
                    min: opt_u64(&v, "min", &what)?,
                    max: opt_u64(&v, "max", &what)?,
                },
                "flooded_frames" => Expect::Flooded {
                    switch: str_of(&v, "switch", &what)?,
                    port: str_of(&v, "port", &what)?,
                    queue: u64_of(&v, "queue", &what)? as u32,
                    min: opt_u64(&v, "min", &what)?,
                    max: opt_u64(&v, "max", &what)?,
                },
                "fdb_entry" | "neighbor" => {
                    let host = str_of(&v, "host", &what)?;
                    if topology.host(&host).is_none() {
                        bail!("{what}: unknown host {host}");
                    }
                    Expect::Entry {
                        switch: str_of(&v, "switch", &what)?,
                        host,
                        table: if key == "fdb_entry" { Table::Fdb } else { Table::Neighbor },
                        present: field(&v, "present", &what)?
                            .as_bool()
                            .with_context(|| format!("{what}.present: true or false"))?,
                    }
                }
                "ratio" => {
                    let side = |k: &str| -> anyhow::Result<Metric> {
                        let (name, m) = one_key(field(&v, k, &what)?, &format!("{what}.{k}"))?;
                        parse_metric(&topology, &name, &m, &format!("{what}.{k}.{name}"))
                    };
                    let (of, to) = (side("of")?, side("to")?);
                    let (min, max) = (opt_f64(&v, "min", &what)?, opt_f64(&v, "max", &what)?);
                    if min.is_none() && max.is_none() {
                        bail!("{what}: give min, max or both");
                    }
                    Expect::Ratio { of, to, min, max }
                }
                other => {
                    let metric = parse_metric(&topology, other, &v, &what)?;
                    let (min, max) = (opt_f64(&v, "min", &what)?, opt_f64(&v, "max", &what)?);
                    if min.is_none() && max.is_none() {
                        bail!("{what}: give min, max or both");
                    }
                    Expect::Bounds { metric, min, max }
                }
            });
        }
        for (i, e) in expect.iter().enumerate() {
            let mut checks: Vec<(&str, Vec<&str>)> = Vec::new();
            match e {
                Expect::PfcwdDetected { switch, port, .. } | Expect::Flooded { switch, port, .. } => {
                    checks.push((switch, vec![port.as_str()]))
                }
                Expect::DropReason { switch, .. } | Expect::Entry { switch, .. } => {
                    checks.push((switch, Vec::new()))
                }
                Expect::Bounds { metric, .. } => checks.extend(metric.switch()),
                Expect::Ratio { of, to, .. } => checks.extend(of.switch().into_iter().chain(to.switch())),
            }
            for (sw, ports) in checks {
                check_switch_port(&topology, sw, None)
                    .and_then(|()| ports.iter().try_for_each(|p| check_switch_port(&topology, sw, Some(p))))
                    .map_err(|e| anyhow::anyhow!("{source}: expect[{i}]: {e}"))?;
            }
        }
        Ok(Scenario { name, topology, duration_ms, storms, actions, expect })
    }
}

fn names<'a>(items: impl Iterator<Item = &'a String>) -> String {
    items.map(String::as_str).collect::<Vec<_>>().join(", ")
}

fn check_switch_port(t: &Topology, switch: &str, port: Option<&str>) -> Result<(), String> {
    let Some(sw) = t.switch(switch) else {
        return Err(format!(
            "unknown switch {switch} (switches: {})",
            names(t.switches.iter().map(|s| &s.name))
        ));
    };
    match port {
        Some(p) if sw.port(p).is_none() => Err(format!(
            "{switch} has no port {p} (PORT: {})",
            names(sw.compiled.ports.iter().map(|p| &p.name))
        )),
        _ => Ok(()),
    }
}

fn flow_index(t: &Topology, v: &Yaml, what: &str) -> anyhow::Result<usize> {
    let n =
        v.as_u64().with_context(|| format!("{what}.flow: a flow number (0 = the first traffic)"))? as usize;
    if n >= t.traffic.len() {
        bail!("{what}: flow {n}: there are {} flows (numbered from 0 in step order)", t.traffic.len());
    }
    Ok(n)
}

fn parse_metric(t: &Topology, name: &str, v: &Yaml, what: &str) -> anyhow::Result<Metric> {
    Ok(match name {
        "pfc_tx" => Metric::PfcTx {
            switch: str_of(v, "switch", what)?,
            ports: one_or_many(v, "port", what)?
                .iter()
                .map(|p| p.as_str().map(str::to_owned))
                .collect::<Option<_>>()
                .with_context(|| format!("{what}.port: a port name or a list of them"))?,
            priority: u64_of(v, "priority", what)?
                .try_into()
                .ok()
                .filter(|p| *p < 8)
                .with_context(|| format!("{what}.priority: 0-7"))?,
        },
        "queue_depth" => Metric::QueueDepth {
            switch: str_of(v, "switch", what)?,
            port: str_of(v, "port", what)?,
            queue: u64_of(v, "queue", what)?
                .try_into()
                .ok()
                .filter(|q| *q < 8)
                .with_context(|| format!("{what}.queue: 0-7"))?,
        },
        other => match FlowMetric::parse(other) {
            Some(m) => Metric::Flow {
                what: m,
                flows: one_or_many(v, "flow", what)?
                    .iter()
                    .map(|f| flow_index(t, f, what))
                    .collect::<anyhow::Result<_>>()?,
            },
            None => bail!(
                "{what}: unknown expectation {other} (pfcwd_detected, drop_reason, flooded_frames, fdb_entry, \
                 neighbor, ratio, pfc_tx, queue_depth, goodput_mbps, goodput_mbps_at_least, psn_gaps, cnps, \
                 pause_ms, retransmitted, dcqcn_rate_decreases, dcqcn_rate_mbps)"
            ),
        },
    })
}

#[derive(Debug, Serialize)]
pub struct Outcome {
    pub expectation: String,
    pub holds: bool,
    pub evidence: String,
}

/// What a timed action did.
#[derive(Debug, Clone, Serialize)]
pub struct ActionRecord {
    pub step: String,
    pub at_ms: u64,
    /// When it was carried out, ms after the hosts were up.
    pub done_ms: u64,
    pub action: String,
    pub result: String,
}

#[derive(Debug, Serialize)]
pub struct ScenarioReport {
    pub scenario: String,
    pub lab: String,
    pub run_dir: PathBuf,
    pub flows: Vec<Value>,
    pub storms: Vec<Value>,
    pub events: Vec<Value>,
    pub actions: Vec<ActionRecord>,
    /// Per switch: non-zero PFC TX, drop reasons, ECN marks and queue depths.
    pub switches: BTreeMap<String, Value>,
    pub expectations: Vec<Outcome>,
    pub ok: bool,
}

/// Counter snapshots of one switch, with the moment each arrived (on this process's clock).
type Samples = Arc<Mutex<BTreeMap<String, Vec<(Instant, pb::GetCountersResponse)>>>>;
type Events = Arc<Mutex<Vec<pb::SwitchEvent>>>;

async fn subscribe(switch: String, endpoint: String, samples: Samples, events: Events) {
    let Ok(mut client) = server::connect(&endpoint).await else { return };
    let request = pb::SubscribeRequest { counters_interval_ms: SAMPLE_INTERVAL_MS, events: true };
    let Ok(stream) = client.subscribe(request).await else { return };
    let mut stream = stream.into_inner();
    while let Ok(Some(item)) = stream.message().await {
        match item.item {
            Some(pb::subscribe_response::Item::Counters(c)) => samples
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .entry(switch.clone())
                .or_default()
                .push((Instant::now(), c)),
            Some(pb::subscribe_response::Item::Event(mut e)) => {
                e.message.clear();
                if e.kind.starts_with("pfc_storm") {
                    events.lock().unwrap_or_else(|e| e.into_inner()).push(e);
                }
            }
            None => {}
        }
    }
}

/// The lab's name: the scenario's (shortened to fit), then this process's id, so that runs of one scenario
/// by several processes coexist.
fn lab_name(scenario: &str) -> String {
    let suffix = format!("-{:x}", std::process::id());
    let keep = MAX_LAB_NAME.saturating_sub(suffix.len());
    let base: String = scenario.chars().take(keep).collect();
    format!("{}{suffix}", base.trim_end_matches(['-', '_']))
}

/// Carries out one timed action; what it did, for the report.
fn act(
    lab: &mut Lab,
    endpoints: &BTreeMap<String, String>,
    action: &Action,
    tokio: &tokio::runtime::Handle,
) -> anyhow::Result<(String, String)> {
    let endpoint = |sw: &str| endpoints.get(sw).cloned().with_context(|| format!("unknown switch {sw}"));
    Ok(match &action.kind {
        ActionKind::FlushFdb { switch, port } => {
            let endpoint = endpoint(switch)?;
            let flushed = tokio.block_on(async {
                let mut c = server::connect(&endpoint).await?;
                let r = c.flush_fdb(pb::FlushFdbRequest { vlan: None, port: port.clone() }).await;
                anyhow::Ok(r.map_err(|e| anyhow::anyhow!("{}", e.message()))?.into_inner().flushed)
            })?;
            (
                format!("flush-fdb {switch}{}", port.as_ref().map(|p| format!(" {p}")).unwrap_or_default()),
                format!("{flushed} entr{} flushed", if flushed == 1 { "y" } else { "ies" }),
            )
        }
        ActionKind::StopHost { host } => {
            if lab.running(host) && !lab.stop_process(host, Duration::from_secs(10)) {
                bail!("rocehost of {host} did not stop on SIGTERM");
            }
            (format!("stop-host {host}"), "rocehost stopped".into())
        }
        ActionKind::Apply { switch, config, replace, source } => {
            let endpoint = endpoint(switch)?;
            let mut client = tokio.block_on(server::connect(&endpoint))?;
            let mut db = if *replace {
                config.clone()
            } else {
                let running = tokio
                    .block_on(client.get(pb::GetRequest {}))
                    .map_err(|e| anyhow::anyhow!("{switch}: {}", e.message()))?
                    .into_inner();
                let mut db = server::config_db_from_proto(running.config.unwrap_or_default());
                merge(&mut db, config);
                db
            };
            super::topology::resolve_switch_config(&mut db)
                .map_err(|issues| anyhow::anyhow!("apply to {switch} ({source}): {}", issues.join("; ")))?;
            let generation = push_config(tokio, &mut client, &db)
                .with_context(|| format!("apply to {switch} ({source})"))?;
            (
                format!("apply {source} to {switch}{}", if *replace { " (replace)" } else { " (merge)" }),
                format!("generation {generation}"),
            )
        }
    })
}

/// Merges `patch` into `db` field by field, as `config load` writes fields into CONFIG_DB.
fn merge(db: &mut ConfigDb, patch: &ConfigDb) {
    for (table, keys) in &patch.tables {
        for (key, fields) in keys {
            let entry = db.tables.entry(table.clone()).or_default().entry(key.clone()).or_default();
            entry.extend(fields.iter().map(|(f, v)| (f.clone(), v.clone())));
        }
    }
}

/// Runs a scenario; exit 1 when an expectation fails.
pub fn run(scenario: &Scenario, json: bool, tokio: &tokio::runtime::Handle) -> anyhow::Result<ExitCode> {
    let mut host_args: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for s in &scenario.storms {
        let prios = s.priorities.iter().map(u8::to_string).collect::<Vec<_>>().join(",");
        let args = host_args.entry(s.host.clone()).or_default();
        args.extend(["--storm".into(), format!("{prios}@{}", s.interval_us)]);
        args.extend(["--storm-from".into(), format!("{}", s.start_ms.max(1) as f64 / 1000.0)]);
        if let Some(stop) = s.stop_ms {
            args.extend(["--storm-until".into(), format!("{}", stop as f64 / 1000.0)]);
        }
    }
    let seconds = scenario.duration_ms.div_ceil(1000).max(1) as u32;
    let name = lab_name(&scenario.name);
    let up = UpOptions { name: Some(name.clone()), traffic_seconds: Some(seconds), host_args };
    let samples: Samples = Arc::default();
    let events: Events = Arc::default();
    let mut lab = up::up(&scenario.topology, &up, tokio)?;
    let endpoints: BTreeMap<String, String> =
        lab.state.switches.iter().map(|s| (s.name.clone(), s.endpoint.clone())).collect();
    let tasks: Vec<_> = endpoints
        .iter()
        .map(|(s, e)| tokio.spawn(subscribe(s.clone(), e.clone(), samples.clone(), events.clone())))
        .collect();
    let start = Instant::now();
    let mut records = Vec::new();
    let result = (|| -> anyhow::Result<()> {
        let senders: Vec<String> =
            lab.state.hosts.iter().filter(|h| !h.flows.is_empty()).map(|h| h.name.clone()).collect();
        let mut actions = scenario.actions.iter().peekable();
        let deadline = start + Duration::from_millis(scenario.duration_ms) + Duration::from_secs(30);
        loop {
            check_interrupted()?;
            while let Some(a) = actions.next_if(|a| start.elapsed() >= Duration::from_millis(a.at_ms)) {
                let done_ms = start.elapsed().as_millis() as u64;
                let (action, result) = act(&mut lab, &endpoints, a, tokio)
                    .with_context(|| format!("{} (at {} ms)", a.step, a.at_ms))?;
                records.push(ActionRecord { step: a.step.clone(), at_ms: a.at_ms, done_ms, action, result });
            }
            let elapsed = start.elapsed() >= Duration::from_millis(scenario.duration_ms);
            if elapsed && actions.peek().is_none() && senders.iter().all(|s| !lab.running(s)) {
                break;
            }
            if Instant::now() > deadline {
                bail!("the senders did not stop within 30 s after the scenario's end");
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        // ACKs and the last frames in flight reach the receivers before they stop and report.
        std::thread::sleep(Duration::from_millis(500));
        let all: Vec<String> = lab.state.hosts.iter().map(|h| h.name.clone()).collect();
        for h in &all {
            if lab.running(h) && !lab.stop_process(h, Duration::from_secs(10)) && !interrupted() {
                bail!("rocehost of {h} did not stop on SIGTERM");
            }
        }
        Ok(())
    })();
    for t in &tasks {
        t.abort();
    }
    result?;
    let mut finals = BTreeMap::new();
    let mut tables = BTreeMap::new();
    for (sw, endpoint) in &endpoints {
        let (c, fdb, neighbors) = tokio.block_on(async {
            let mut c = server::connect(endpoint).await?;
            let counters = c.get_counters(pb::GetCountersRequest {}).await?.into_inner();
            let fdb = c.dump_fdb(pb::DumpFdbRequest {}).await?.into_inner().entries;
            let neighbors = c.dump_neighbors(pb::DumpNeighborsRequest {}).await?.into_inner().entries;
            anyhow::Ok((counters, fdb, neighbors))
        })?;
        finals.insert(sw.clone(), c);
        tables.insert(sw.clone(), (fdb, neighbors));
    }
    let mut reports = BTreeMap::new();
    for h in &lab.state.hosts {
        let text = std::fs::read_to_string(&h.report)
            .with_context(|| format!("{}: rocehost wrote no report ({})", h.name, h.report.display()))?;
        reports.insert(h.name.clone(), serde_json::from_str::<Value>(&text)?);
    }
    let samples = std::mem::take(&mut *samples.lock().unwrap_or_else(|e| e.into_inner()));
    let window = (start, start + Duration::from_millis(scenario.duration_ms));
    let events = std::mem::take(&mut *events.lock().unwrap_or_else(|e| e.into_inner()));
    let observed = Observed { finals: &finals, tables: &tables, samples: &samples, window, events: &events };
    let report = evaluate(scenario, &lab.state.name, &lab.dir, &observed, &reports, records);
    std::fs::write(lab.dir.join("scenario.json"), serde_json::to_vec_pretty(&report)?)?;
    let down = lab.down(true);
    if !down.problems.is_empty() {
        eprintln!("swctl: lab {}: {}", report.lab, down.summary());
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", describe(&report));
    }
    Ok(if report.ok { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// What the switches showed.
struct Observed<'a> {
    finals: &'a BTreeMap<String, pb::GetCountersResponse>,
    tables: &'a BTreeMap<String, (Vec<pb::FdbEntry>, Vec<pb::NeighborEntry>)>,
    samples: &'a BTreeMap<String, Vec<(Instant, pb::GetCountersResponse)>>,
    /// The scenario's duration on this process's clock: queue depths are averaged over it.
    window: (Instant, Instant),
    events: &'a [pb::SwitchEvent],
}

impl Observed<'_> {
    fn port(&self, switch: &str, port: &str) -> Option<&pb::PortCounters> {
        self.finals.get(switch).and_then(|c| c.ports.iter().find(|p| p.name == port))
    }

    /// Depth samples of a queue while the scenario ran: (mean, max, count).
    fn queue_depth(&self, switch: &str, port: &str, queue: u32) -> (f64, u64, usize) {
        let depths: Vec<u64> = self
            .samples
            .get(switch)
            .into_iter()
            .flatten()
            .filter(|(at, _)| *at >= self.window.0 && *at <= self.window.1)
            .filter_map(|(_, c)| c.ports.iter().find(|p| p.name == port))
            .map(|p| p.queue_depth.get(queue as usize).copied().unwrap_or(0))
            .collect();
        let mean =
            if depths.is_empty() { 0.0 } else { depths.iter().sum::<u64>() as f64 / depths.len() as f64 };
        (mean, depths.iter().copied().max().unwrap_or(0), depths.len())
    }

    /// Between which two samples (switch clock, ns) the port's PFC RX on `prio` first grew.
    fn storm_start(&self, sw: &str, port_name: &str, prio: usize) -> Option<(u64, u64)> {
        let s = self.samples.get(sw)?;
        let rx = |c: &pb::GetCountersResponse| {
            c.ports.iter().find(|p| p.name == port_name).and_then(|p| p.pfc.get(prio)).map_or(0, |p| p.rx)
        };
        let first = s.first().map(|(_, c)| rx(c))?;
        let i = s.iter().position(|(_, c)| rx(c) > first)?;
        Some((s[i.saturating_sub(1)].1.timestamp_ns, s[i].1.timestamp_ns))
    }
}

fn u64_at(v: &Value, key: &str) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or(0)
}

/// Counts without decimals, measurements with one.
fn number(x: f64) -> String {
    if x.fract() == 0.0 { format!("{x:.0}") } else { format!("{x:.1}") }
}

fn bounds_text(min: Option<f64>, max: Option<f64>) -> String {
    match (min, max) {
        (Some(a), Some(b)) => format!("in [{a}, {b}]"),
        (Some(a), None) => format!("≥ {a}"),
        (None, Some(b)) => format!("≤ {b}"),
        (None, None) => "any".into(),
    }
}

fn within(x: f64, min: Option<f64>, max: Option<f64>) -> bool {
    min.is_none_or(|m| x >= m) && max.is_none_or(|m| x <= m)
}

fn evaluate(
    scenario: &Scenario,
    lab: &str,
    dir: &Path,
    seen: &Observed,
    reports: &BTreeMap<String, Value>,
    actions: Vec<ActionRecord>,
) -> ScenarioReport {
    let t = &scenario.topology;
    let flows: Vec<Value> = t
        .traffic
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let qp = u64::from(up::flow_qp(i));
            let src_ip = t.host(&f.from).map(|h| h.ip.to_string()).unwrap_or_default();
            let dst_ip = t.host(&f.to).map(|h| h.ip.to_string()).unwrap_or_default();
            let r = reports.get(&f.to).and_then(|r| r.get("receivers")).and_then(Value::as_array).and_then(
                |rs| {
                    rs.iter().find(|x| {
                        x.get("src_ip").and_then(Value::as_str) == Some(src_ip.as_str())
                            && u64_at(x, "qp") == qp
                    })
                },
            );
            let sender = reports.get(&f.from);
            let s = sender.and_then(|r| r.get("flows")).and_then(Value::as_array).and_then(|fs| {
                fs.iter().find(|x| {
                    x.get("dst_ip").and_then(Value::as_str) == Some(dst_ip.as_str())
                        && u64_at(x, "dst_qp") == qp
                })
            });
            let dcqcn = s.and_then(|s| s.get("dcqcn")).filter(|d| d.is_object());
            let pause_ns = sender
                .and_then(|r| r.get("pfc"))
                .and_then(Value::as_array)
                .and_then(|ps| ps.iter().find(|p| u64_at(p, "priority") == u64::from(f.priority)))
                .map_or(0, |p| u64_at(p, "pause_ns"));
            serde_json::json!({
                "flow": i, "from": f.from, "to": f.to, "priority": f.priority, "dcqcn": f.dcqcn,
                "offered_mbps": f.rate_mbps, "start_ms": f.start_ms,
                "sent_packets": s.map_or(0, |s| u64_at(s, "sent_packets")),
                "retransmitted_packets": s.map_or(0, |s| u64_at(s, "retransmitted_packets")),
                "cnps_received": s.map_or(0, |s| u64_at(s, "cnps_received")),
                "dcqcn_rate_decreases": dcqcn.map_or(0, |d| u64_at(d, "rate_decreases")),
                "dcqcn_rate_mbps": dcqcn.and_then(|d| d.get("current_rate_mbps")).and_then(Value::as_f64),
                "pause_ms": pause_ns as f64 / 1e6,
                "received_packets": r.map_or(0, |r| u64_at(r, "received_packets")),
                "psn_gaps": r.map_or(0, |r| u64_at(r, "psn_gaps")),
                "goodput_mbps": r.and_then(|r| r.get("goodput_mbps")).and_then(Value::as_f64).unwrap_or(0.0),
            })
        })
        .collect();
    let mut storms = Vec::new();
    for s in &scenario.storms {
        let end = t.host(&s.host).and_then(|h| h.attached.clone());
        if let (Some(end), Some(&p)) = (end, s.priorities.first()) {
            let seen_at = seen.storm_start(&end.node, &end.port, usize::from(p));
            storms.push(serde_json::json!({
                "host": s.host, "switch": end.node, "port": end.port, "priorities": s.priorities,
                "scheduled_ms": s.start_ms, "stop_ms": s.stop_ms,
                "began_after_switch_ns": seen_at.map(|x| x.0),
                "first_seen_switch_ns": seen_at.map(|x| x.1),
            }));
        }
    }
    let metric = |m: &Metric| -> (f64, String) {
        match m {
            Metric::PfcTx { switch, ports, priority } => {
                let per: Vec<u64> = ports
                    .iter()
                    .map(|p| {
                        seen.port(switch, p)
                            .and_then(|c| c.pfc.get(usize::from(*priority)))
                            .map_or(0, |c| c.tx)
                    })
                    .collect();
                let total: u64 = per.iter().sum();
                let detail = if ports.len() > 1 {
                    format!(
                        " ({})",
                        ports
                            .iter()
                            .zip(&per)
                            .map(|(p, n)| format!("{p} {n}"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                } else {
                    String::new()
                };
                (total as f64, format!("{total}{detail}"))
            }
            Metric::QueueDepth { switch, port, queue } => {
                let (mean, max, n) = seen.queue_depth(switch, port, *queue);
                (mean, format!("mean {mean:.2} frames, max {max}, {n} samples"))
            }
            Metric::Flow { what, flows: list } => {
                let per: Vec<f64> =
                    list.iter().map(|&i| flows[i][what.key()].as_f64().unwrap_or(0.0)).collect();
                let total: f64 = per.iter().sum();
                let detail = if list.len() > 1 {
                    format!(
                        " ({})",
                        list.iter()
                            .zip(&per)
                            .map(|(i, v)| format!("flow {i} {}", number(*v)))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                } else {
                    String::new()
                };
                (total, format!("{}{detail}", number(total)))
            }
        }
    };
    let mut outcomes = Vec::new();
    for e in &scenario.expect {
        let (expectation, holds, evidence) = match e {
            Expect::PfcwdDetected { switch, port: p, queue, within_ms } => {
                let detected = seen
                    .events
                    .iter()
                    .find(|e| e.kind == "pfc_storm_detected" && &e.port == p && e.index == *queue);
                let start = seen.storm_start(switch, p, *queue as usize);
                let counted = seen
                    .port(switch, p)
                    .and_then(|c| c.pfc_wd.get(*queue as usize))
                    .map_or(0, |w| w.deadlock_detected);
                let (holds, evidence) = match (detected, start) {
                    (Some(d), Some((before, after))) => {
                        let longest = d.timestamp_ns.saturating_sub(before) as f64 / 1e6;
                        let shortest = d.timestamp_ns.saturating_sub(after) as f64 / 1e6;
                        (
                            longest <= *within_ms as f64,
                            format!(
                                "detected {shortest:.1}-{longest:.1} ms after the storm began (the counter samples, every {SAMPLE_INTERVAL_MS} ms, bracket its start); deadlock_detected {counted}"
                            ),
                        )
                    }
                    (None, _) => (false, format!("no pfc_storm_detected event; deadlock_detected {counted}")),
                    (Some(_), None) => (false, "no PFC RX increase seen in the counter samples".into()),
                };
                (
                    format!(
                        "PFC watchdog detects a storm on {switch} {p} queue {queue} within {within_ms} ms"
                    ),
                    holds,
                    evidence,
                )
            }
            Expect::DropReason { switch, reason, min, max } => {
                let n: u64 = seen
                    .finals
                    .get(switch)
                    .map_or(0, |c| c.ports.iter().filter_map(|p| p.drop_reasons.get(reason)).sum());
                (
                    format!(
                        "{switch} {reason} drops {}",
                        bounds_text(min.map(|m| m as f64), max.map(|m| m as f64))
                    ),
                    min.is_none_or(|m| n >= m) && max.is_none_or(|m| n <= m),
                    format!("{n}"),
                )
            }
            Expect::Flooded { switch, port: p, queue, min, max } => {
                let n =
                    seen.port(switch, p).and_then(|c| c.queues.get(*queue as usize)).map_or(0, |q| q.packets);
                (
                    format!(
                        "{switch} {p} queue {queue} frames {}",
                        bounds_text(min.map(|m| m as f64), max.map(|m| m as f64))
                    ),
                    min.is_none_or(|m| n >= m) && max.is_none_or(|m| n <= m),
                    format!("{n}"),
                )
            }
            Expect::Bounds { metric: m, min, max } => {
                let (value, evidence) = metric(m);
                (format!("{} {}", m.describe(), bounds_text(*min, *max)), within(value, *min, *max), evidence)
            }
            Expect::Ratio { of, to, min, max } => {
                let ((a, a_text), (b, b_text)) = (metric(of), metric(to));
                let ratio = if b > 0.0 {
                    a / b
                } else if a > 0.0 {
                    f64::INFINITY
                } else {
                    f64::NAN
                };
                (
                    format!("{} / {} {}", of.describe(), to.describe(), bounds_text(*min, *max)),
                    ratio.is_finite() && within(ratio, *min, *max),
                    format!("{a_text} / {b_text} = {ratio:.3}"),
                )
            }
            Expect::Entry { switch, host, table, present } => {
                let h = t.host(host);
                let (fdb, neighbors) =
                    seen.tables.get(switch).map(|(f, n)| (&f[..], &n[..])).unwrap_or_default();
                let (what, found) = match table {
                    Table::Fdb => {
                        let mac = h.map(|h| h.mac.to_string()).unwrap_or_default();
                        let e = fdb.iter().find(|e| e.mac.eq_ignore_ascii_case(&mac));
                        (
                            format!("FDB entry for {host}'s MAC {mac}"),
                            e.map(|e| format!("Vlan{} {} on {}", e.vlan, e.mac, e.port)),
                        )
                    }
                    Table::Neighbor => {
                        let ip = h.map(|h| h.ip.to_string()).unwrap_or_default();
                        let e = neighbors.iter().find(|e| e.ip == ip);
                        (
                            format!("neighbour (ARP) entry for {host}'s {ip}"),
                            e.map(|e| format!("{} is-at {} on {}", e.ip, e.mac, e.interface)),
                        )
                    }
                };
                (
                    format!("{switch} {} {what} at the end", if *present { "has a" } else { "has no" }),
                    found.is_some() == *present,
                    found.unwrap_or_else(|| "absent".into()),
                )
            }
        };
        outcomes.push(Outcome { expectation, holds, evidence });
    }
    let events = seen
        .events
        .iter()
        .map(|e| serde_json::json!({"kind": e.kind, "port": e.port, "queue": e.index, "timestamp_ns": e.timestamp_ns}))
        .collect();
    let switches = seen.finals.iter().map(|(sw, c)| (sw.clone(), switch_summary(seen, sw, c))).collect();
    let ok = outcomes.iter().all(|o| o.holds);
    ScenarioReport {
        scenario: scenario.name.clone(),
        lab: lab.to_owned(),
        run_dir: dir.to_path_buf(),
        flows,
        storms,
        events,
        actions,
        switches,
        expectations: outcomes,
        ok,
    }
}

/// The non-zero PFC TX per port and priority, drop reasons, ECN marks and queue depths of one switch.
fn switch_summary(seen: &Observed, sw: &str, c: &pb::GetCountersResponse) -> Value {
    let mut pfc_tx = serde_json::Map::new();
    let mut drops: BTreeMap<String, u64> = BTreeMap::new();
    let mut ecn = serde_json::Map::new();
    let mut depth = serde_json::Map::new();
    for p in &c.ports {
        for (prio, pfc) in p.pfc.iter().enumerate().filter(|(_, x)| x.tx > 0) {
            pfc_tx.insert(format!("{}|{prio}", p.name), pfc.tx.into());
        }
        for (reason, n) in &p.drop_reasons {
            *drops.entry(reason.clone()).or_default() += n;
        }
        for (q, counters) in p.queues.iter().enumerate() {
            if counters.ecn_marked_packets > 0 {
                ecn.insert(format!("{}|{q}", p.name), counters.ecn_marked_packets.into());
            }
            let (mean, max, _) = seen.queue_depth(sw, &p.name, q as u32);
            if max > 0 {
                depth.insert(format!("{}|{q}", p.name), serde_json::json!({"mean": mean, "max": max}));
            }
        }
    }
    serde_json::json!({"pfc_tx": pfc_tx, "drop_reasons": drops, "ecn_marked": ecn, "queue_depth_frames": depth})
}

fn describe(r: &ScenarioReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "Scenario {} (lab {}, run directory {})", r.scenario, r.lab, r.run_dir.display());
    for f in &r.flows {
        let offered = f["offered_mbps"].as_u64().map_or("line rate".to_owned(), |r| format!("{r} Mb/s"));
        let dcqcn = match f["dcqcn_rate_mbps"].as_f64() {
            Some(rate) => {
                format!("DCQCN on ({} rate decreases, {rate:.0} Mb/s at the end)", f["dcqcn_rate_decreases"])
            }
            None => "DCQCN off".into(),
        };
        let _ = writeln!(
            out,
            "  flow {} {} -> {} prio {}, {dcqcn}: offered {offered}, goodput {:.1} Mb/s, {} packets, {} PSN gaps, \
             {} CNPs, sender paused {:.1} ms",
            f["flow"],
            f["from"].as_str().unwrap_or(""),
            f["to"].as_str().unwrap_or(""),
            f["priority"],
            f["goodput_mbps"].as_f64().unwrap_or(0.0),
            f["received_packets"],
            f["psn_gaps"],
            f["cnps_received"],
            f["pause_ms"].as_f64().unwrap_or(0.0),
        );
    }
    for a in &r.actions {
        let _ = writeln!(out, "  {} ms ({}): {}: {}", a.done_ms, a.step, a.action, a.result);
    }
    for e in &r.events {
        let _ = writeln!(
            out,
            "  event {} {} queue {} at {} ns",
            e["kind"].as_str().unwrap_or(""),
            e["port"].as_str().unwrap_or(""),
            e["queue"],
            e["timestamp_ns"]
        );
    }
    for (sw, s) in &r.switches {
        let list = |key: &str| -> String {
            s[key]
                .as_object()
                .map(|m| m.iter().map(|(k, v)| format!("{k} {v}")).collect::<Vec<_>>().join(", "))
                .unwrap_or_default()
        };
        let depths = s["queue_depth_frames"]
            .as_object()
            .map(|m| {
                m.iter()
                    .map(|(k, v)| {
                        format!("{k} mean {:.1} max {}", v["mean"].as_f64().unwrap_or(0.0), v["max"])
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default();
        for (label, text) in [
            ("PFC frames sent (port|priority)", list("pfc_tx")),
            ("drops", list("drop_reasons")),
            ("ECN marked (port|queue)", list("ecn_marked")),
            ("queue depth, frames (port|queue)", depths),
        ] {
            if !text.is_empty() {
                let _ = writeln!(out, "  {sw} {label}: {text}");
            }
        }
    }
    for o in &r.expectations {
        let _ =
            writeln!(out, "  [{}] {}: {}", if o.holds { "PASS" } else { "FAIL" }, o.expectation, o.evidence);
    }
    let _ = writeln!(out, "{}", if r.ok { "all expectations hold" } else { "SOME EXPECTATIONS FAILED" });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOPOLOGY: &str = r#"
topology:
  switches:
    sw1:
      config:
        PORT: { Ethernet0: { speed: 1000 }, Ethernet4: { speed: 1000 } }
        VLAN: { Vlan10: { vlanid: 10 } }
        VLAN_MEMBER: { "Vlan10|Ethernet0": { tagging_mode: untagged }, "Vlan10|Ethernet4": { tagging_mode: untagged } }
  hosts:
    h1: { ip: 10.0.0.1/24, attach: "sw1:Ethernet0" }
    h2: { ip: 10.0.0.2/24, attach: "sw1:Ethernet4" }
"#;

    fn parse(rest: &str) -> anyhow::Result<Scenario> {
        Scenario::parse(&format!("{TOPOLOGY}{rest}"), "t", "t.yaml", Path::new("."))
    }

    fn error_of(rest: &str) -> String {
        format!("{:#}", parse(rest).unwrap_err())
    }

    #[test]
    fn steps_and_expectations_parse() {
        let s = parse(
            r#"
steps:
  - { at: 0, traffic: [ { from: h1, to: h2, priority: 3, dscp: 3 }, { from: h2, to: h1, priority: 3, dscp: 3 } ] }
  - { at: 900, flush-fdb: { switch: sw1, port: Ethernet4 } }
  - { at: 500, stop-host: { host: h2 } }
  - { at: 500, apply: { switch: sw1, config: { SWITCH: { switch: { lossless_fdb_miss_action: flood } } } } }
expect:
  - pfc_tx: { switch: sw1, port: [Ethernet0, Ethernet4], priority: 3, min: 1 }
  - cnps: { flow: [0, 1], max: 0 }
  - ratio: { of: { pause_ms: { flow: 1 } }, to: { pause_ms: { flow: 0 } }, max: 0.5 }
  - fdb_entry: { switch: sw1, host: h2, present: false }
  - goodput_mbps_at_least: { flow: 0, value: 10 }
"#,
        )
        .unwrap();
        let order: Vec<(&str, u64)> = s.actions.iter().map(|a| (a.step.as_str(), a.at_ms)).collect();
        assert_eq!(
            order,
            [("steps[2]", 500), ("steps[3]", 500), ("steps[1]", 900)],
            "time order, then file order"
        );
        match &s.actions[1].kind {
            ActionKind::Apply { config, replace: false, .. } => {
                assert_eq!(config.tables["SWITCH"]["switch"]["lossless_fdb_miss_action"], "flood")
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(s.expect.len(), 5);
        assert!(
            matches!(&s.expect[0], Expect::Bounds { metric: Metric::PfcTx { ports, .. }, .. } if ports.len() == 2)
        );
    }

    #[test]
    fn errors_name_the_step_or_expectation() {
        let e = error_of("steps: [ { at: 1, stop-host: { host: h9 } } ]");
        assert!(e.contains("steps[0]: unknown host h9 (h1, h2)"), "{e}");
        let e = error_of("steps: [ { at: 1, flush-fdb: { switch: sw1, port: Ethernet8 } } ]");
        assert!(e.contains("steps[0]: sw1 has no port Ethernet8 (PORT: Ethernet0, Ethernet4)"), "{e}");
        let e = error_of("steps: [ { at: 1, apply: { switch: sw2, config: { PORT: {} } } } ]");
        assert!(e.contains("steps[0]: unknown switch sw2 (switches: sw1)"), "{e}");
        let e = error_of("steps: [ { at: 1, apply: { switch: sw1, config: [1] } } ]");
        assert!(e.contains("steps[0].apply.config: a file name or the tables inline"), "{e}");
        let e = error_of("steps: [ { at: 1, apply: { switch: sw1, config: missing.yaml } } ]");
        assert!(e.contains("steps[0].apply.config: cannot read ./missing.yaml"), "{e}");
        let e = error_of("expect: [ { pfc_tx: { switch: sw1, port: Ethernet9, priority: 3, min: 1 } } ]");
        assert!(e.contains("expect[0]: sw1 has no port Ethernet9"), "{e}");
        let e = error_of("expect: [ { cnps: { flow: 0, min: 1 } } ]");
        assert!(e.contains("expect[0].cnps: flow 0: there are 0 flows"), "{e}");
        let e = error_of("expect: [ { pfc_tx: { switch: sw1, port: Ethernet0, priority: 3 } } ]");
        assert!(e.contains("expect[0].pfc_tx: give min, max or both"), "{e}");
        let e = error_of("expect: [ { colour: { flow: 0 } } ]");
        assert!(e.contains("unknown expectation colour"), "{e}");
    }

    #[test]
    fn merge_sets_fields_and_keeps_the_rest() {
        let mut db = ConfigDb::default();
        db.set("PORT", "Ethernet0", "speed", "1000").set("PORT", "Ethernet0", "mtu", "9100");
        let mut patch = ConfigDb::default();
        patch.set("PORT", "Ethernet0", "speed", "100").set(
            "SWITCH",
            "switch",
            "lossless_fdb_miss_action",
            "flood",
        );
        merge(&mut db, &patch);
        assert_eq!(db.tables["PORT"]["Ethernet0"]["speed"], "100");
        assert_eq!(db.tables["PORT"]["Ethernet0"]["mtu"], "9100");
        assert_eq!(db.tables["SWITCH"]["switch"]["lossless_fdb_miss_action"], "flood");
    }

    #[test]
    fn lab_names_fit() {
        let name = lab_name("arp-mac-missing-flood-with-a-long-name");
        assert!(name.len() <= MAX_LAB_NAME, "{name}");
        assert!(super::super::topology::check_lab_name(&name).is_ok(), "{name}");
    }
}
