//! The scenario file: serde types for what the user writes (unknown fields are errors), and
//! [`Scenario::parse`], which turns them into a checked [`Scenario`]: names of switches, ports, hosts and
//! flows resolved against the topology, every error naming the step or expectation (`steps[2]`,
//! `expect[0].pfc_tx`).

pub use super::one_or_many::OneOrMany;
use super::timed::{EcnBeforeXoffFile, FlowRateFile, PausedPercentFile};
use super::{Action, ActionKind, Expect, FlowMetric, Metric, RxStuck, Scenario, Storm, Table};
use crate::lab::topology::{RawFlow, RelativeTo, Topology, Written};
use anyhow::{Context, bail};
use lossless_dataplane::model::config::{ConfigDb, check_config_text};
use serde::Deserialize;
use serde_yaml::{Mapping, Value as Yaml};
use std::path::{Path, PathBuf};

/// A scenario file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ScenarioFile {
    /// Default: the file name without `.yaml`.
    pub name: Option<String>,
    /// A file name (relative to the scenario file) or an inline topology (its own format, read by
    /// [`Topology::parse`]).
    pub topology: FileOrInline,
    /// The senders' `--duration` (rounded up to whole seconds).
    #[serde(default = "default_duration_ms")]
    pub duration_ms: u64,
    #[serde(default)]
    pub steps: Vec<Step>,
    /// `- { name: {...} }` entries (one-key mappings, not YAML tags).
    #[serde(default, deserialize_with = "serde_yaml::with::singleton_map_recursive::deserialize")]
    pub expect: Vec<ExpectFile>,
    /// Every host probes every other throughout (docs/pingmesh.md).
    #[serde(default)]
    pub pingmesh: Option<crate::pingmesh::PingmeshSpec>,
}

fn default_duration_ms() -> u64 {
    3000
}

/// `{ at: MS, <action>: {...} }`: exactly one action.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Step {
    /// ms after the hosts are up.
    #[serde(default)]
    pub at: u64,
    /// Flows (topology `traffic` entries) that start at `at`.
    pub traffic: Option<OneOrMany<RawFlow>>,
    pub storm: Option<StormStep>,
    pub rx_stuck: Option<RxStuckStep>,
    pub flush_fdb: Option<FlushFdbStep>,
    pub stop_host: Option<HostRef>,
    pub apply: Option<ApplyStep>,
    pub link_down: Option<LinkDownStep>,
}

/// The link at `end` (a switch port) goes down at `at` (and comes back at `stop`, if given).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkDownStep {
    pub end: String,
    /// ms after the hosts are up.
    pub stop: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct StormStep {
    pub host: String,
    pub priorities: Vec<u8>,
    pub interval_us: Option<u64>,
    /// ms after the hosts are up.
    pub stop: Option<u64>,
}

/// The host NIC's receive pipeline stops at `at` (and restarts at `stop`, if given).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RxStuckStep {
    pub host: String,
    /// ms after the hosts are up.
    pub stop: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlushFdbStep {
    pub switch: String,
    pub port: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostRef {
    pub host: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApplyStep {
    pub switch: String,
    /// The tables (a file name or inline).
    pub config: FileOrInline,
    #[serde(default)]
    pub replace: bool,
}

/// A file name (relative to the scenario file) or the content inline.
#[derive(Debug)]
pub enum FileOrInline {
    File(String),
    Inline(Mapping),
}

impl<'de> Deserialize<'de> for FileOrInline {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = FileOrInline;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a file name or the content inline (a mapping)")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<FileOrInline, E> {
                Ok(FileOrInline::File(v.to_owned()))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<FileOrInline, A::Error> {
                Mapping::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(FileOrInline::Inline)
            }
        }
        d.deserialize_any(Visitor)
    }
}

/// One expectation: `{ <name>: {...} }`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExpectFile {
    PfcwdDetected(PfcwdDetected),
    GoodputMbpsAtLeast(AtLeast),
    DropReason(DropReason),
    FloodedFrames(Flooded),
    FdbEntry(Entry),
    Neighbor(Entry),
    Ratio(Ratio),
    PfcTx(PfcTx),
    PortPausedMs(PfcTx),
    QueueDepth(QueueDepth),
    GoodputMbps(Flows),
    DeliveredMbps(Flows),
    PsnGaps(Flows),
    Cnps(Flows),
    PauseMs(Flows),
    Retransmitted(Flows),
    DcqcnRateDecreases(Flows),
    DcqcnRateMbps(Flows),
    ThroughputMbps(Throughput),
    PfcPausedAtEnd(PausedAtEnd),
    FlowRateMbps(FlowRateFile),
    PausedPercent(PausedPercentFile),
    EcnBeforeXoff(EcnBeforeXoffFile),
}

/// `throughput_mbps`: acknowledged Mb/s of the flows between `from_ms` and `to_ms`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Throughput {
    pub flow: OneOrMany<u64>,
    pub from_ms: u64,
    pub to_ms: u64,
    pub min: Option<f64>,
    pub max: Option<f64>,
}

/// `pfc_paused_at_end`: the ports paused (or not) by PFC on `priority` when the run ends.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PausedAtEnd {
    pub switch: String,
    pub port: OneOrMany<String>,
    pub priority: u64,
    pub paused: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PfcwdDetected {
    pub switch: String,
    pub port: String,
    pub queue: u32,
    pub within_ms: u64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AtLeast {
    pub flow: u64,
    pub value: f64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DropReason {
    pub switch: String,
    pub reason: String,
    pub min: Option<u64>,
    pub max: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Flooded {
    pub switch: String,
    pub port: String,
    pub queue: u32,
    pub min: Option<u64>,
    pub max: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    pub switch: String,
    pub host: String,
    pub present: bool,
}

/// `of / to` within `min`/`max`; each side a metric without bounds.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ratio {
    pub of: MetricFile,
    pub to: MetricFile,
    pub min: Option<f64>,
    pub max: Option<f64>,
}

/// A side of a ratio.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MetricFile {
    PfcTx(PfcTx),
    PortPausedMs(PfcTx),
    QueueDepth(QueueDepth),
    GoodputMbps(Flows),
    DeliveredMbps(Flows),
    PsnGaps(Flows),
    Cnps(Flows),
    PauseMs(Flows),
    Retransmitted(Flows),
    DcqcnRateDecreases(Flows),
    DcqcnRateMbps(Flows),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PfcTx {
    pub switch: String,
    pub port: OneOrMany<String>,
    pub priority: u64,
    pub min: Option<f64>,
    pub max: Option<f64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueueDepth {
    pub switch: String,
    pub port: String,
    pub queue: u64,
    pub min: Option<f64>,
    pub max: Option<f64>,
}

/// A per-flow metric summed over `flow` (flow numbers from 0, in step order).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Flows {
    pub flow: OneOrMany<u64>,
    pub min: Option<f64>,
    pub max: Option<f64>,
}

impl MetricFile {
    fn name(&self) -> &'static str {
        match self {
            MetricFile::PfcTx(_) => "pfc_tx",
            MetricFile::QueueDepth(_) => "queue_depth",
            MetricFile::PortPausedMs(_) => "port_paused_ms",
            MetricFile::GoodputMbps(_) => "goodput_mbps",
            MetricFile::DeliveredMbps(_) => "delivered_mbps",
            MetricFile::PsnGaps(_) => "psn_gaps",
            MetricFile::Cnps(_) => "cnps",
            MetricFile::PauseMs(_) => "pause_ms",
            MetricFile::Retransmitted(_) => "retransmitted",
            MetricFile::DcqcnRateDecreases(_) => "dcqcn_rate_decreases",
            MetricFile::DcqcnRateMbps(_) => "dcqcn_rate_mbps",
        }
    }

    fn bounds(&self) -> (Option<f64>, Option<f64>) {
        match self {
            MetricFile::PfcTx(m) | MetricFile::PortPausedMs(m) => (m.min, m.max),
            MetricFile::QueueDepth(m) => (m.min, m.max),
            MetricFile::GoodputMbps(f)
            | MetricFile::DeliveredMbps(f)
            | MetricFile::PsnGaps(f)
            | MetricFile::Cnps(f)
            | MetricFile::PauseMs(f)
            | MetricFile::Retransmitted(f)
            | MetricFile::DcqcnRateDecreases(f)
            | MetricFile::DcqcnRateMbps(f) => (f.min, f.max),
        }
    }

    /// The metric, names checked against the topology; `what` names it in errors.
    fn resolve(self, t: &Topology, what: &str) -> anyhow::Result<Metric> {
        let flows = |what_: FlowMetric, f: Flows| -> anyhow::Result<Metric> {
            let list = non_empty(f.flow, what, "flow")?;
            let flows = list.into_iter().map(|n| flow_index(t, n, what)).collect::<anyhow::Result<_>>()?;
            Ok(Metric::Flow { what: what_, flows })
        };
        let port_metric = |m: PfcTx| -> anyhow::Result<(String, Vec<String>, u8)> {
            let priority = u8::try_from(m.priority)
                .ok()
                .filter(|p| *p < 8)
                .with_context(|| format!("{what}.priority: 0-7"))?;
            Ok((m.switch, non_empty(m.port, what, "port")?, priority))
        };
        Ok(match self {
            MetricFile::PfcTx(m) => {
                let (switch, ports, priority) = port_metric(m)?;
                Metric::PfcTx { switch, ports, priority }
            }
            MetricFile::PortPausedMs(m) => {
                let (switch, ports, priority) = port_metric(m)?;
                Metric::PortPausedMs { switch, ports, priority }
            }
            MetricFile::QueueDepth(m) => Metric::QueueDepth {
                switch: m.switch,
                port: m.port,
                queue: u32::try_from(m.queue)
                    .ok()
                    .filter(|q| *q < 8)
                    .with_context(|| format!("{what}.queue: 0-7"))?,
            },
            MetricFile::GoodputMbps(f) => flows(FlowMetric::GoodputMbps, f)?,
            MetricFile::DeliveredMbps(f) => flows(FlowMetric::DeliveredMbps, f)?,
            MetricFile::PsnGaps(f) => flows(FlowMetric::PsnGaps, f)?,
            MetricFile::Cnps(f) => flows(FlowMetric::Cnps, f)?,
            MetricFile::PauseMs(f) => flows(FlowMetric::PauseMs, f)?,
            MetricFile::Retransmitted(f) => flows(FlowMetric::Retransmitted, f)?,
            MetricFile::DcqcnRateDecreases(f) => flows(FlowMetric::RateDecreases, f)?,
            MetricFile::DcqcnRateMbps(f) => flows(FlowMetric::RateMbps, f)?,
        })
    }
}

impl ExpectFile {
    fn name(&self) -> &'static str {
        match self {
            ExpectFile::PfcwdDetected(_) => "pfcwd_detected",
            ExpectFile::GoodputMbpsAtLeast(_) => "goodput_mbps_at_least",
            ExpectFile::DropReason(_) => "drop_reason",
            ExpectFile::FloodedFrames(_) => "flooded_frames",
            ExpectFile::FdbEntry(_) => "fdb_entry",
            ExpectFile::Neighbor(_) => "neighbor",
            ExpectFile::Ratio(_) => "ratio",
            ExpectFile::PfcTx(_) => "pfc_tx",
            ExpectFile::PortPausedMs(_) => "port_paused_ms",
            ExpectFile::QueueDepth(_) => "queue_depth",
            ExpectFile::GoodputMbps(_) => "goodput_mbps",
            ExpectFile::DeliveredMbps(_) => "delivered_mbps",
            ExpectFile::PsnGaps(_) => "psn_gaps",
            ExpectFile::Cnps(_) => "cnps",
            ExpectFile::PauseMs(_) => "pause_ms",
            ExpectFile::Retransmitted(_) => "retransmitted",
            ExpectFile::DcqcnRateDecreases(_) => "dcqcn_rate_decreases",
            ExpectFile::DcqcnRateMbps(_) => "dcqcn_rate_mbps",
            ExpectFile::ThroughputMbps(_) => "throughput_mbps",
            ExpectFile::PfcPausedAtEnd(_) => "pfc_paused_at_end",
            ExpectFile::FlowRateMbps(_) => "flow_rate_mbps",
            ExpectFile::PausedPercent(_) => "paused_percent",
            ExpectFile::EcnBeforeXoff(_) => "ecn_before_xoff",
        }
    }

    /// A bounded metric as the side of a ratio has it (the bounds apply to the metric itself here).
    fn into_metric(self) -> Result<MetricFile, Box<ExpectFile>> {
        Ok(match self {
            ExpectFile::PfcTx(m) => MetricFile::PfcTx(m),
            ExpectFile::PortPausedMs(m) => MetricFile::PortPausedMs(m),
            ExpectFile::QueueDepth(m) => MetricFile::QueueDepth(m),
            ExpectFile::GoodputMbps(f) => MetricFile::GoodputMbps(f),
            ExpectFile::DeliveredMbps(f) => MetricFile::DeliveredMbps(f),
            ExpectFile::PsnGaps(f) => MetricFile::PsnGaps(f),
            ExpectFile::Cnps(f) => MetricFile::Cnps(f),
            ExpectFile::PauseMs(f) => MetricFile::PauseMs(f),
            ExpectFile::Retransmitted(f) => MetricFile::Retransmitted(f),
            ExpectFile::DcqcnRateDecreases(f) => MetricFile::DcqcnRateDecreases(f),
            ExpectFile::DcqcnRateMbps(f) => MetricFile::DcqcnRateMbps(f),
            other => return Err(Box::new(other)),
        })
    }

    /// The expectation, names checked against the topology; `what` names it in errors.
    fn resolve(self, t: &Topology, duration_ms: u64, what: &str) -> anyhow::Result<Expect> {
        let check_bounds = |min: Option<f64>, max: Option<f64>| {
            if min.is_none() && max.is_none() {
                bail!("{what}: give min, max or both");
            }
            Ok((min, max))
        };
        let entry = |e: Entry, table: Table| -> anyhow::Result<Expect> {
            if t.host(&e.host).is_none() {
                bail!("{what}: unknown host {}", e.host);
            }
            Ok(Expect::Entry { switch: e.switch, host: e.host, table, present: e.present })
        };
        let metric = match self.into_metric() {
            Ok(m) => {
                let (min, max) = check_bounds(m.bounds().0, m.bounds().1)?;
                return Ok(Expect::Bounds { metric: m.resolve(t, what)?, min, max });
            }
            Err(other) => other,
        };
        Ok(match *metric {
            ExpectFile::PfcwdDetected(p) => Expect::PfcwdDetected {
                switch: p.switch,
                port: p.port,
                queue: p.queue,
                within_ms: p.within_ms,
            },
            ExpectFile::GoodputMbpsAtLeast(a) => Expect::Bounds {
                metric: Metric::Flow {
                    what: FlowMetric::GoodputMbps,
                    flows: vec![flow_index(t, a.flow, what)?],
                },
                min: Some(a.value),
                max: None,
            },
            ExpectFile::DropReason(d) => {
                Expect::DropReason { switch: d.switch, reason: d.reason, min: d.min, max: d.max }
            }
            ExpectFile::FloodedFrames(f) => {
                Expect::Flooded { switch: f.switch, port: f.port, queue: f.queue, min: f.min, max: f.max }
            }
            ExpectFile::ThroughputMbps(w) => {
                let (min, max) = check_bounds(w.min, w.max)?;
                if w.to_ms <= w.from_ms {
                    bail!("{what}: to_ms ({}) must be after from_ms ({})", w.to_ms, w.from_ms);
                }
                let list = non_empty(w.flow, what, "flow")?;
                let flows =
                    list.into_iter().map(|n| flow_index(t, n, what)).collect::<anyhow::Result<_>>()?;
                Expect::Throughput { flows, from_ms: w.from_ms, to_ms: w.to_ms, min, max }
            }
            ExpectFile::PfcPausedAtEnd(p) => Expect::PausedAtEnd {
                switch: p.switch,
                ports: non_empty(p.port, what, "port")?,
                priority: u8::try_from(p.priority)
                    .ok()
                    .filter(|p| *p < 8)
                    .with_context(|| format!("{what}.priority: 0-7"))?,
                paused: p.paused,
            },
            ExpectFile::FdbEntry(e) => entry(e, Table::Fdb)?,
            ExpectFile::Neighbor(e) => entry(e, Table::Neighbor)?,
            ExpectFile::Ratio(r) => {
                let (min, max) = check_bounds(r.min, r.max)?;
                let side = |m: MetricFile, key: &str| -> anyhow::Result<Metric> {
                    let what = format!("{what}.{key}.{}", m.name());
                    if m.bounds() != (None, None) {
                        bail!("{what}: min and max belong to the ratio, not to its sides");
                    }
                    m.resolve(t, &what)
                };
                Expect::Ratio { of: side(r.of, "of")?, to: side(r.to, "to")?, min, max }
            }
            ExpectFile::FlowRateMbps(f) => f.resolve(t, duration_ms, what)?,
            ExpectFile::PausedPercent(f) => f.resolve(t, duration_ms, what)?,
            ExpectFile::EcnBeforeXoff(e) => e.resolve(what)?,
            bounded => unreachable!("{} is a bounded metric", bounded.name()),
        })
    }
}

fn non_empty<T>(v: OneOrMany<T>, what: &str, key: &str) -> anyhow::Result<Vec<T>> {
    let v = v.into_vec();
    if v.is_empty() {
        bail!("{what}.{key}: an empty list");
    }
    Ok(v)
}

fn flow_index(t: &Topology, n: u64, what: &str) -> anyhow::Result<usize> {
    let n = usize::try_from(n).unwrap_or(usize::MAX);
    if n >= t.traffic.len() {
        bail!("{what}: flow {n}: there are {} flows (numbered from 0 in step order)", t.traffic.len());
    }
    Ok(n)
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

impl Scenario {
    pub fn load(path: &Path) -> anyhow::Result<Scenario> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        Scenario::parse(&text, &stem, &path.display().to_string(), &dir)
    }

    /// Parses and checks a scenario; `source` names it in errors, `dir` is where relative file names start.
    pub fn parse(text: &str, default_name: &str, source: &str, dir: &Path) -> anyhow::Result<Scenario> {
        check_config_text(text).map_err(|e| anyhow::anyhow!("{source}: {e}"))?;
        let file: ScenarioFile = serde_yaml::from_str(text).map_err(|e| anyhow::anyhow!("{source}: {e}"))?;
        // The topology's text (`None`: inline in the scenario's), its YAML, where its files are, its name
        // in errors.
        let (topo_text, topo_value, topo_dir, topo_source): (Option<String>, Yaml, PathBuf, String) =
            match file.topology {
                FileOrInline::File(p) => {
                    let path = dir.join(p);
                    let t = std::fs::read_to_string(&path)
                        .with_context(|| format!("{source}: cannot read {}", path.display()))?;
                    check_config_text(&t).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
                    let v =
                        serde_yaml::from_str(&t).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
                    let topo_dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
                    (Some(t), v, topo_dir, path.display().to_string())
                }
                FileOrInline::Inline(m) => {
                    (None, Yaml::Mapping(m), dir.to_path_buf(), format!("{source}: topology"))
                }
            };
        let name = file.name.unwrap_or_else(|| default_name.to_owned());
        if let Some(p) = &file.pingmesh {
            p.validate().map_err(|e| anyhow::anyhow!("{source}: {e}"))?;
        }
        let pingmesh = file.pingmesh;
        let mut flows = Vec::new();
        let mut storms = Vec::new();
        let mut rx_stuck_windows = Vec::new();
        let mut actions = Vec::new();
        for (i, step) in file.steps.into_iter().enumerate() {
            let what = format!("{source}: steps[{i}]");
            let at = step.at;
            let action = |kind| Action { at_ms: at, step: format!("steps[{i}]"), kind };
            let Step { at: _, traffic, storm, rx_stuck, flush_fdb, stop_host, apply, link_down } = step;
            let given = [
                traffic.is_some(),
                storm.is_some(),
                rx_stuck.is_some(),
                flush_fdb.is_some(),
                stop_host.is_some(),
                apply.is_some(),
                link_down.is_some(),
            ];
            if given.iter().filter(|&&g| g).count() != 1 {
                bail!(
                    "{what}: expected one of traffic, storm, rx-stuck, stop-host, flush-fdb, apply or link-down"
                );
            }
            if let Some(t) = traffic {
                for mut f in t.into_vec() {
                    if let Some(start_ms) = f.start_ms {
                        bail!("{what}.traffic: start-ms {start_ms}: a step's flows start at its at ({at})");
                    }
                    f.start_ms = Some(at);
                    flows.push(f);
                }
            } else if let Some(s) = storm {
                if s.priorities.iter().any(|&p| p > 7) {
                    bail!("{what}.priorities: numbers 0-7");
                }
                if s.stop.is_some_and(|s| s <= at) {
                    bail!("{what}: stop must be after at");
                }
                storms.push(Storm {
                    host: s.host,
                    priorities: s.priorities,
                    interval_us: s.interval_us.unwrap_or(100).max(1),
                    start_ms: at,
                    stop_ms: s.stop,
                });
            } else if let Some(s) = rx_stuck {
                if s.stop.is_some_and(|s| s <= at) {
                    bail!("{what}: stop must be after at");
                }
                rx_stuck_windows.push(RxStuck { host: s.host, start_ms: at, stop_ms: s.stop, step: i });
            } else if let Some(f) = flush_fdb {
                actions.push(action(ActionKind::FlushFdb { switch: f.switch, port: f.port }));
            } else if let Some(s) = stop_host {
                actions.push(action(ActionKind::StopHost { host: s.host }));
            } else if let Some(l) = link_down {
                let end = crate::lab::topology::parse_end(&l.end)
                    .map_err(|e| anyhow::anyhow!("{what}.link-down.end: {e}"))?;
                if let Some(stop) = l.stop {
                    if stop <= at {
                        bail!("{what}: stop must be after at");
                    }
                    let up = ActionKind::LinkState { end: end.clone(), up: true };
                    actions.push(Action { at_ms: stop, step: format!("steps[{i}]"), kind: up });
                }
                actions.push(action(ActionKind::LinkState { end, up: false }));
            } else if let Some(a) = apply {
                let what = format!("{what}.apply");
                let (text, config_source) = match a.config {
                    FileOrInline::File(file) => {
                        let path = dir.join(file);
                        let text = std::fs::read_to_string(&path)
                            .with_context(|| format!("{what}.config: cannot read {}", path.display()))?;
                        (text, path.display().to_string())
                    }
                    FileOrInline::Inline(m) => (serde_yaml::to_string(&m)?, "an inline config".to_owned()),
                };
                let config = ConfigDb::from_yaml_str(&text)
                    .map_err(|e| anyhow::anyhow!("{what}.config: {config_source}: {e}"))?;
                actions.push(action(ActionKind::Apply {
                    switch: a.switch,
                    config,
                    replace: a.replace,
                    source: config_source,
                }));
            }
        }
        actions.sort_by_key(|a| a.at_ms);
        let written = match &topo_text {
            Some(t) => Written::File(t),
            None => Written::InScenario { text, source },
        };
        let mut raw = Topology::read_raw(topo_value, &written, &topo_source)?;
        // The steps' flows replace the topology's own (`swctl lab demo`'s) if there are any.
        if !flows.is_empty() {
            raw.traffic = flows;
        }
        let topology = Topology::from_raw(raw, &name, &topo_source, &RelativeTo(topo_dir))?;
        for s in &storms {
            if topology.host(&s.host).is_none() {
                bail!("{source}: storm: unknown host {}", s.host);
            }
        }
        for s in &rx_stuck_windows {
            match topology.host(&s.host) {
                None => bail!(
                    "{source}: steps[{}]: unknown host {} ({})",
                    s.step,
                    s.host,
                    names(topology.hosts.iter().map(|h| &h.name))
                ),
                Some(h) if !h.rx_pipeline.enabled() => bail!(
                    "{source}: steps[{}]: rx-stuck: host {} has no receive buffer \
                     (rx-pipeline: {{ buffer_bytes: ..., xoff_bytes: ..., xon_bytes: ... }})",
                    s.step,
                    s.host
                ),
                Some(_) => {}
            }
        }
        for a in &actions {
            let (switch, port, host) = match &a.kind {
                ActionKind::FlushFdb { switch, port } => (Some(switch), port.as_ref(), None),
                ActionKind::StopHost { host } => (None, None, Some(host)),
                ActionKind::Apply { switch, .. } => (Some(switch), None, None),
                ActionKind::LinkState { end, .. } => {
                    let linked = topology.links.iter().any(|l| l.a == *end || l.b == *end);
                    if topology.switch(&end.node).is_none() || !linked {
                        bail!("{source}: {}: link-down: {end} is not a linked switch port", a.step);
                    }
                    (Some(&end.node), Some(&end.port), None)
                }
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
        for (i, e) in file.expect.into_iter().enumerate() {
            let what = format!("{source}: expect[{i}].{}", e.name());
            expect.push(e.resolve(&topology, file.duration_ms, &what)?);
        }
        for (i, e) in expect.iter().enumerate() {
            let mut checks: Vec<(&str, Vec<&str>)> = Vec::new();
            match e {
                Expect::PfcwdDetected { switch, port, .. }
                | Expect::Flooded { switch, port, .. }
                | Expect::EcnBeforeXoff { switch, port, .. } => checks.push((switch, vec![port.as_str()])),
                Expect::DropReason { switch, .. } | Expect::Entry { switch, .. } => {
                    checks.push((switch, Vec::new()))
                }
                Expect::PausedAtEnd { switch, ports, .. } => {
                    checks.push((switch, ports.iter().map(String::as_str).collect()))
                }
                Expect::Throughput { .. } => {}
                Expect::Bounds { metric, .. } => checks.extend(metric.switch()),
                Expect::Ratio { of, to, .. } => checks.extend(of.switch().into_iter().chain(to.switch())),
                Expect::FlowRate { .. } | Expect::PausedPercent { .. } => {}
            }
            for (sw, ports) in checks {
                check_switch_port(&topology, sw, None)
                    .and_then(|()| ports.iter().try_for_each(|p| check_switch_port(&topology, sw, Some(p))))
                    .map_err(|e| anyhow::anyhow!("{source}: expect[{i}]: {e}"))?;
            }
        }
        Ok(Scenario {
            name,
            topology,
            duration_ms: file.duration_ms,
            storms,
            rx_stuck: rx_stuck_windows,
            actions,
            expect,
            pingmesh,
        })
    }
}

#[cfg(test)]
#[path = "file_tests.rs"]
mod tests;
