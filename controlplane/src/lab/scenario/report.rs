//! The scenario's report: what the flows, storms and actions did, what the switches showed, and whether
//! each expectation held (`swctl lab run`'s output, and `scenario.json` in the run directory).
//!
//! Switch events and counters and the hosts' reports are timed on one clock, the machine's
//! `CLOCK_MONOTONIC` (see [`lossless_dataplane::clock`]); the report lines them up as milliseconds after
//! the hosts were up (`*_ms`: [`ScenarioReport::started`], the origin of the actions' `done_ms` too).

use super::timed::{self, Firsts, FlowSnapshots};
use super::{Expect, FlowMetric, Metric, Scenario, Table};
use crate::lab::up;
use lossless_dataplane::clock;
use lossless_dataplane::rocehost::report::{Report, RunStart};
use lossless_proto::v1 as pb;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

#[derive(Debug, Serialize, Deserialize)]
pub struct Outcome {
    pub expectation: String,
    pub holds: bool,
    pub evidence: String,
}

/// What a timed action did.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ActionRecord {
    pub step: String,
    pub at_ms: u64,
    /// When it was carried out, ms after the hosts were up.
    pub done_ms: u64,
    pub action: String,
    pub result: String,
}

/// `scenario.json` and `swctl lab run --json`/`swctl sim run --json`: written here, read back by whoever
/// checks a run (the tests) with the same type.
#[derive(Debug, Serialize, Deserialize)]
pub struct ScenarioReport {
    pub scenario: String,
    pub lab: String,
    pub run_dir: PathBuf,
    /// When the hosts were up, on the switches' and hosts' clock and on the wall clock: every `*_ms` time
    /// counts from here.
    pub started: RunStart,
    pub flows: Vec<FlowResult>,
    pub storms: Vec<StormResult>,
    pub events: Vec<EventRecord>,
    pub actions: Vec<ActionRecord>,
    /// Per switch: non-zero PFC TX, drop reasons, ECN marks and queue depths.
    pub switches: BTreeMap<String, SwitchSummary>,
    pub expectations: Vec<Outcome>,
    pub ok: bool,
    /// A simulation's report (`swctl sim run`): times are virtual, `started` is the simulation's origin.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub virtual_time: bool,
    /// A run cut short (Ctrl-C, `--until` before the end): the results are as of then.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub partial: bool,
}

/// One flow, from the sender's and the receiver's reports. (Fields in alphabetical order, as the JSON
/// has always had them.)
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct FlowResult {
    pub cnps_received: u64,
    pub dcqcn: bool,
    pub dcqcn_rate_decreases: u64,
    /// The sender's DCQCN rate at the end; `None` with DCQCN off.
    pub dcqcn_rate_mbps: Option<f64>,
    /// Payload received over the scenario, from the flow's start to the end of `duration-ms` (what it
    /// delivered in that time, stalls included; `goodput_mbps` counts only while the receiver got data).
    pub delivered_mbps: f64,
    /// When the sender finished the flow's last message, ms after the hosts were up.
    pub finished_ms: Option<f64>,
    /// When the sender sent the flow's first frame, ms after the hosts were up.
    pub first_send_ms: Option<f64>,
    pub flow: usize,
    pub from: String,
    pub goodput_mbps: f64,
    pub offered_mbps: Option<u32>,
    pub pause_ms: f64,
    pub priority: u8,
    pub psn_gaps: u64,
    pub received_packets: u64,
    pub retransmitted_packets: u64,
    pub sent_packets: u64,
    pub start_ms: u64,
    pub to: String,
}

impl FlowResult {
    fn metric(&self, m: FlowMetric) -> f64 {
        match m {
            FlowMetric::GoodputMbps => self.goodput_mbps,
            FlowMetric::DeliveredMbps => self.delivered_mbps,
            FlowMetric::PsnGaps => self.psn_gaps as f64,
            FlowMetric::Cnps => self.cnps_received as f64,
            FlowMetric::PauseMs => self.pause_ms,
            FlowMetric::Retransmitted => self.retransmitted_packets as f64,
            FlowMetric::RateDecreases => self.dcqcn_rate_decreases as f64,
            FlowMetric::RateMbps => self.dcqcn_rate_mbps.unwrap_or(0.0),
        }
    }
}

/// A storm step, and when the switch saw it begin (its clock).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StormResult {
    /// `began_after_switch_ns` in ms after the hosts were up.
    pub began_after_ms: Option<f64>,
    pub began_after_switch_ns: Option<u64>,
    /// `first_seen_switch_ns` in ms after the hosts were up.
    pub first_seen_ms: Option<f64>,
    pub first_seen_switch_ns: Option<u64>,
    pub host: String,
    pub port: String,
    pub priorities: Vec<u8>,
    pub scheduled_ms: u64,
    pub stop_ms: Option<u64>,
    pub switch: String,
}

/// A `pfc_storm_*` event of a switch's Subscribe stream.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EventRecord {
    pub kind: String,
    pub port: String,
    pub queue: u32,
    /// The switch's clock (`CLOCK_MONOTONIC`, ns).
    pub timestamp_ns: u64,
    /// Ms after the hosts were up.
    pub at_ms: f64,
    /// Wall-clock time, ns since the Unix epoch (as the switch gave it).
    pub wall_time_unix_ns: u64,
}

/// What one switch showed at the end: keys `port|priority`, `port|queue` or `port|pg`, non-zero entries only.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct SwitchSummary {
    pub drop_reasons: BTreeMap<String, u64>,
    pub ecn_marked: BTreeMap<String, u64>,
    /// Frames dropped at ingress admission, per `port|pg` (a lossless PG whose headroom overflowed).
    pub pg_drops: BTreeMap<String, u64>,
    pub pfc_tx: BTreeMap<String, u64>,
    /// Frames an egress queue dropped (tail, WRED, watchdog), per `port|queue`: lossy tail drops show here,
    /// and a lossless queue must have none.
    pub queue_drops: BTreeMap<String, u64>,
    pub queue_depth_frames: BTreeMap<String, DepthSummary>,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct DepthSummary {
    pub max: u64,
    pub mean: f64,
    /// The middle sample (the lower of the two middle ones): unlike the mean, barely moved by the few
    /// samples a lab takes while a stalled switchd lets the queue grow.
    pub median: u64,
}

/// What the switches showed: a lab's over gRPC, a simulation's from its models, in the same messages.
pub(crate) struct Observed<'a> {
    pub(crate) finals: &'a BTreeMap<String, pb::GetCountersResponse>,
    pub(crate) tables: &'a BTreeMap<String, (Vec<pb::FdbEntry>, Vec<pb::NeighborEntry>)>,
    /// Counter samples per switch, in time order (each stamped by the switch).
    pub(crate) samples: &'a BTreeMap<String, Vec<pb::GetCountersResponse>>,
    /// The scenario's duration on the switches' clock (ns) from when its traffic began (a simulation's
    /// origin; a lab's first sender's start, a little before the lab is up): queue depths are averaged
    /// over it.
    pub(crate) window: (u64, u64),
    /// When the hosts were up (the origin of the `*_ms` times), on the clock of the switches and hosts,
    /// and on the wall clock.
    pub(crate) started: RunStart,
    pub(crate) events: &'a [pb::SwitchEvent],
    /// Every how many ms the samples were taken (for messages).
    pub(crate) sample_interval_ms: f64,
    /// Per switch and port: the priorities its peer's PFC paused when the run ended (a bit mask). Only a
    /// simulation has them.
    pub(crate) paused_at_end: Option<&'a BTreeMap<String, BTreeMap<String, u8>>>,
    /// Every flow's byte counts at the instants `flow_rate_mbps` expectations need (simulator only).
    pub(crate) flow_snapshots: &'a FlowSnapshots,
    /// Per switch, its first XOFF and each queue's first CE mark.
    pub(crate) firsts: &'a BTreeMap<String, Firsts>,
}

impl Observed<'_> {
    fn port(&self, switch: &str, port: &str) -> Option<&pb::PortCounters> {
        self.finals.get(switch).and_then(|c| c.ports.iter().find(|p| p.name == port))
    }

    /// Depth samples of a queue while the scenario ran: their summary and count.
    pub(super) fn queue_depth(&self, switch: &str, port: &str, queue: u32) -> (DepthSummary, usize) {
        let mut depths: Vec<u64> = self
            .samples
            .get(switch)
            .into_iter()
            .flatten()
            .filter(|c| c.timestamp_ns >= self.window.0 && c.timestamp_ns <= self.window.1)
            .filter_map(|c| c.ports.iter().find(|p| p.name == port))
            .map(|p| p.queue_depth.get(queue as usize).copied().unwrap_or(0))
            .collect();
        let mean =
            if depths.is_empty() { 0.0 } else { depths.iter().sum::<u64>() as f64 / depths.len() as f64 };
        depths.sort_unstable();
        let median = depths.get(depths.len().saturating_sub(1) / 2).copied().unwrap_or(0);
        let max = depths.last().copied().unwrap_or(0);
        (DepthSummary { max, mean, median }, depths.len())
    }

    /// Between which two samples (switch clock, ns) the port's PFC RX on `prio` first grew.
    fn storm_start(&self, sw: &str, port_name: &str, prio: usize) -> Option<(u64, u64)> {
        let s = self.samples.get(sw)?;
        let rx = |c: &pb::GetCountersResponse| {
            c.ports.iter().find(|p| p.name == port_name).and_then(|p| p.pfc.get(prio)).map_or(0, |p| p.rx)
        };
        let first = s.first().map(rx)?;
        let i = s.iter().position(|c| rx(c) > first)?;
        Some((s[i.saturating_sub(1)].timestamp_ns, s[i].timestamp_ns))
    }

    /// Acknowledged Mb/s of `flows` between `from_ms` and `to_ms`, from every flow's byte counts taken at
    /// exactly those instants (`swctl sim run` takes them; a lab has none), or why it cannot be measured.
    fn throughput(&self, flows: &[usize], from_ms: u64, to_ms: u64) -> Result<Window, String> {
        if self.flow_snapshots.is_empty() {
            return Err("only swctl sim run measures the flows at chosen instants".into());
        }
        let (Some(a), Some(b)) = (self.flow_snapshots.get(&from_ms), self.flow_snapshots.get(&to_ms)) else {
            // A window the run does not cover would measure nothing, and pass any `max`.
            return Err(format!("the run ended before {to_ms} ms: no measurement for {from_ms}-{to_ms} ms"));
        };
        let span_ns = to_ms.saturating_sub(from_ms).max(1) * 1_000_000;
        let per: Vec<f64> = flows
            .iter()
            .map(|&f| {
                let acked = |s: &[timed::FlowBytes]| s.get(f).map_or(0, |b| b.acked_bytes);
                acked(b).saturating_sub(acked(a)) as f64 * 8.0 * 1e3 / span_ns as f64
            })
            .collect();
        Ok(Window {
            total_mbps: per.iter().sum(),
            per_flow_mbps: per,
            from_ms: from_ms as f64,
            to_ms: to_ms as f64,
        })
    }

    /// Ms from `started` to `at_ns` on the switches' and hosts' clock (negative before it),
    /// to the microsecond.
    pub(super) fn ms(&self, at_ns: u64) -> f64 {
        let ns = i128::from(at_ns) - i128::from(self.started.monotonic_ns);
        (ns / 1_000) as f64 / 1e3
    }
}

/// A throughput measured over a window: the total and each flow's, and the samples that bound it (ms).
struct Window {
    total_mbps: f64,
    per_flow_mbps: Vec<f64>,
    from_ms: f64,
    to_ms: f64,
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

pub(crate) fn evaluate(
    scenario: &Scenario,
    lab: &str,
    dir: &Path,
    seen: &Observed,
    reports: &BTreeMap<String, Report>,
    actions: Vec<ActionRecord>,
) -> ScenarioReport {
    let t = &scenario.topology;
    let flows: Vec<FlowResult> = t
        .traffic
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let qp = up::flow_qp(i);
            let (src, dst) = (t.host(&f.from), t.host(&f.to));
            let sender = reports.get(&f.from);
            let r = reports.get(&f.to).zip(src).and_then(|(r, src)| r.receiver(src.ip, qp));
            let s = sender.zip(dst).and_then(|(r, dst)| r.flow_to(dst.ip, qp));
            let dcqcn = s.and_then(|s| s.dcqcn);
            let pause_ns = sender.map_or(0, |r| r.pause_ns(f.priority));
            FlowResult {
                flow: i,
                from: f.from.clone(),
                to: f.to.clone(),
                priority: f.priority,
                dcqcn: f.dcqcn,
                offered_mbps: f.rate_mbps,
                start_ms: f.start_ms,
                sent_packets: s.map_or(0, |s| s.sent_packets),
                retransmitted_packets: s.map_or(0, |s| s.retransmitted_packets),
                cnps_received: s.map_or(0, |s| s.cnps_received),
                dcqcn_rate_decreases: dcqcn.map_or(0, |d| d.rate_decreases),
                dcqcn_rate_mbps: dcqcn.map(|d| d.current_rate_mbps),
                first_send_ms: s.and_then(|s| s.first_send_ns).map(|t| seen.ms(t)),
                finished_ms: s.and_then(|s| s.finished_ns).map(|t| seen.ms(t)),
                pause_ms: pause_ns as f64 / 1e6,
                received_packets: r.map_or(0, |r| r.received_packets),
                psn_gaps: r.map_or(0, |r| r.psn_gaps),
                goodput_mbps: r.map_or(0.0, |r| r.goodput_mbps),
                delivered_mbps: r.map_or(0.0, |r| {
                    let ms = scenario.duration_ms.saturating_sub(f.start_ms).max(1);
                    r.received_bytes as f64 * 8.0 / (ms as f64 * 1e3)
                }),
            }
        })
        .collect();
    let mut storms = Vec::new();
    for s in &scenario.storms {
        let end = t.host(&s.host).and_then(|h| h.attached.clone());
        if let (Some(end), Some(&p)) = (end, s.priorities.first()) {
            let seen_at = seen.storm_start(&end.node, &end.port, usize::from(p));
            storms.push(StormResult {
                host: s.host.clone(),
                switch: end.node,
                port: end.port,
                priorities: s.priorities.clone(),
                scheduled_ms: s.start_ms,
                stop_ms: s.stop_ms,
                began_after_ms: seen_at.map(|x| seen.ms(x.0)),
                began_after_switch_ns: seen_at.map(|x| x.0),
                first_seen_ms: seen_at.map(|x| seen.ms(x.1)),
                first_seen_switch_ns: seen_at.map(|x| x.1),
            });
        }
    }
    // A port metric summed over the ports, each port's value shown when there are several.
    let per_port = |switch: &str, ports: &[String], value: &dyn Fn(&pb::PortCounters) -> f64| {
        let per: Vec<f64> = ports.iter().map(|p| seen.port(switch, p).map_or(0.0, value)).collect();
        let total: f64 = per.iter().sum();
        let detail = if ports.len() > 1 {
            let each: Vec<String> =
                ports.iter().zip(&per).map(|(p, v)| format!("{p} {}", number(*v))).collect();
            format!(" ({})", each.join(", "))
        } else {
            String::new()
        };
        (total, format!("{}{detail}", number(total)))
    };
    let metric = |m: &Metric| -> (f64, String) {
        match m {
            Metric::PfcTx { switch, ports, priority } => per_port(switch, ports, &|c: &pb::PortCounters| {
                c.pfc.get(usize::from(*priority)).map_or(0.0, |c| c.tx as f64)
            }),
            Metric::PortPausedMs { switch, ports, priority } => {
                per_port(switch, ports, &|c: &pb::PortCounters| {
                    c.pfc.get(usize::from(*priority)).map_or(0.0, |c| c.rx_pause_us as f64 / 1e3)
                })
            }
            Metric::QueueDepth { switch, port, queue } => {
                let (d, n) = seen.queue_depth(switch, port, *queue);
                (
                    d.mean,
                    format!("mean {:.2} frames, median {}, max {}, {n} samples", d.mean, d.median, d.max),
                )
            }
            Metric::Flow { what, flows: list } => {
                let per: Vec<f64> = list.iter().map(|&i| flows[i].metric(*what)).collect();
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
                                "detected {shortest:.1}-{longest:.1} ms after the storm began (the counter samples, every {} ms, bracket its start); deadlock_detected {counted}",
                                number(seen.sample_interval_ms)
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
            Expect::Throughput { flows: list, from_ms, to_ms, min, max } => {
                let names = list.iter().map(usize::to_string).collect::<Vec<_>>().join("+");
                let expectation = format!(
                    "flow {names} acknowledged throughput (Mb/s) from {from_ms} to {to_ms} ms {}",
                    bounds_text(*min, *max)
                );
                match seen.throughput(list, *from_ms, *to_ms) {
                    Ok(Window { total_mbps: total, per_flow_mbps: per, from_ms: a, to_ms: b }) => {
                        let detail = if list.len() > 1 {
                            let each: Vec<String> =
                                list.iter().zip(&per).map(|(i, v)| format!("flow {i} {v:.1}")).collect();
                            format!(" ({})", each.join(", "))
                        } else {
                            String::new()
                        };
                        (
                            expectation,
                            within(total, *min, *max),
                            format!("{total:.1}{detail}, samples {a:.1}-{b:.1} ms"),
                        )
                    }
                    Err(why) => (expectation, false, why),
                }
            }
            Expect::PausedAtEnd { switch, ports, priority, paused } => {
                let expectation = format!(
                    "{switch} {} {} by PFC on priority {priority} at the end",
                    ports.join("+"),
                    if *paused { "paused" } else { "not paused" }
                );
                match seen.paused_at_end {
                    Some(state) => {
                        let each: Vec<(String, bool)> = ports
                            .iter()
                            .map(|p| {
                                let mask = state.get(switch).and_then(|m| m.get(p)).copied().unwrap_or(0);
                                (p.clone(), mask & (1 << priority) != 0)
                            })
                            .collect();
                        let holds = each.iter().all(|(_, is)| is == paused);
                        let evidence = each
                            .iter()
                            .map(|(p, is)| format!("{p} {}", if *is { "paused" } else { "not paused" }))
                            .collect::<Vec<_>>()
                            .join(", ");
                        (expectation, holds, evidence)
                    }
                    None => (expectation, false, "only swctl sim run reads the PFC state at the end".into()),
                }
            }
            Expect::FlowRate { flows: list, of, value_mbps, within_percent, from_ms, to_ms } => {
                timed::flow_rate(seen, list, *of, (*value_mbps, *within_percent), (*from_ms, *to_ms))
            }
            Expect::PausedPercent { flows: list, max_percent, from_ms, to_ms } => {
                timed::paused_percent(seen, list, *max_percent, (*from_ms, *to_ms))
            }
            Expect::EcnBeforeXoff { switch, port, queue } => {
                timed::ecn_before_xoff(seen, switch, port, *queue)
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
        .map(|e| EventRecord {
            kind: e.kind.clone(),
            port: e.port.clone(),
            queue: e.index,
            timestamp_ns: e.timestamp_ns,
            at_ms: seen.ms(e.timestamp_ns),
            wall_time_unix_ns: e.wall_time_unix_ns,
        })
        .collect();
    let switches = seen.finals.iter().map(|(sw, c)| (sw.clone(), switch_summary(seen, sw, c))).collect();
    let ok = outcomes.iter().all(|o| o.holds);
    ScenarioReport {
        scenario: scenario.name.clone(),
        lab: lab.to_owned(),
        run_dir: dir.to_path_buf(),
        started: seen.started,
        flows,
        storms,
        events,
        actions,
        switches,
        expectations: outcomes,
        ok,
        virtual_time: false,
        partial: false,
    }
}

/// The non-zero PFC TX per port and priority, drop reasons, queue and PG drops, ECN marks and queue depths
/// of one switch.
fn switch_summary(seen: &Observed, sw: &str, c: &pb::GetCountersResponse) -> SwitchSummary {
    let mut summary = SwitchSummary::default();
    for p in &c.ports {
        for (prio, pfc) in p.pfc.iter().enumerate().filter(|(_, x)| x.tx > 0) {
            summary.pfc_tx.insert(format!("{}|{prio}", p.name), pfc.tx);
        }
        for (reason, n) in &p.drop_reasons {
            *summary.drop_reasons.entry(reason.clone()).or_default() += n;
        }
        for (pg, counters) in p.pgs.iter().enumerate().filter(|(_, c)| c.dropped_packets > 0) {
            summary.pg_drops.insert(format!("{}|{pg}", p.name), counters.dropped_packets);
        }
        for (q, counters) in p.queues.iter().enumerate() {
            if counters.dropped_packets > 0 {
                summary.queue_drops.insert(format!("{}|{q}", p.name), counters.dropped_packets);
            }
            if counters.ecn_marked_packets > 0 {
                summary.ecn_marked.insert(format!("{}|{q}", p.name), counters.ecn_marked_packets);
            }
            let (depth, _) = seen.queue_depth(sw, &p.name, q as u32);
            if depth.max > 0 {
                summary.queue_depth_frames.insert(format!("{}|{q}", p.name), depth);
            }
        }
    }
    summary
}

impl ScenarioReport {
    /// The report as text.
    pub fn describe(&self) -> String {
        let r = self;
        let mut out = String::new();
        let _ =
            writeln!(out, "Scenario {} (lab {}, run directory {})", r.scenario, r.lab, r.run_dir.display());
        if r.virtual_time {
            let _ = writeln!(
                out,
                "  times: ms after the hosts were up, in virtual time (at {} ns of the simulation){}",
                r.started.monotonic_ns,
                if r.partial { "; PARTIAL: the run was cut short" } else { "" }
            );
        } else {
            let _ = writeln!(
                out,
                "  times: ms after the hosts were up, {} (monotonic {} ns)",
                clock::format_unix_ns(r.started.unix_ns),
                r.started.monotonic_ns
            );
        }
        for f in &r.flows {
            let offered = f.offered_mbps.map_or("line rate".to_owned(), |r| format!("{r} Mb/s"));
            let dcqcn = match f.dcqcn_rate_mbps {
                Some(rate) => {
                    format!("DCQCN on ({} rate decreases, {rate:.0} Mb/s at the end)", f.dcqcn_rate_decreases)
                }
                None => "DCQCN off".into(),
            };
            let sent = match (f.first_send_ms, f.finished_ms) {
                (Some(a), Some(b)) => format!(", sent {a:.1}-{b:.1} ms"),
                (Some(a), None) => format!(", sent from {a:.1} ms"),
                _ => String::new(),
            };
            let _ = writeln!(
                out,
                "  flow {} {} -> {} prio {}, {dcqcn}: offered {offered}, goodput {:.1} Mb/s (delivered {:.1} over the \
             scenario), {} packets, {} PSN gaps, {} CNPs, sender paused {:.1} ms{sent}",
                f.flow,
                f.from,
                f.to,
                f.priority,
                f.goodput_mbps,
                f.delivered_mbps,
                f.received_packets,
                f.psn_gaps,
                f.cnps_received,
                f.pause_ms,
            );
        }
        for s in &r.storms {
            let seen = match s.first_seen_ms {
                Some(ms) => format!("its PFC frames first seen by {} at {ms:.1} ms", s.switch),
                None => format!("no PFC frames seen by {}", s.switch),
            };
            let _ = writeln!(
                out,
                "  storm from {} on {} {} priority {:?}, scheduled at {} ms: {seen}",
                s.host, s.switch, s.port, s.priorities, s.scheduled_ms
            );
        }
        for a in &r.actions {
            let _ = writeln!(out, "  {} ms ({}): {}: {}", a.done_ms, a.step, a.action, a.result);
        }
        for e in &r.events {
            let _ = writeln!(
                out,
                "  event {} {} queue {} at {:.1} ms (switch clock {} ns)",
                e.kind, e.port, e.queue, e.at_ms, e.timestamp_ns
            );
        }
        for (sw, s) in &r.switches {
            let list = |m: &BTreeMap<String, u64>| -> String {
                m.iter().map(|(k, v)| format!("{k} {v}")).collect::<Vec<_>>().join(", ")
            };
            let depths = s
                .queue_depth_frames
                .iter()
                .map(|(k, v)| format!("{k} mean {:.1} median {} max {}", v.mean, v.median, v.max))
                .collect::<Vec<_>>()
                .join(", ");
            for (label, text) in [
                ("PFC frames sent (port|priority)", list(&s.pfc_tx)),
                ("drops", list(&s.drop_reasons)),
                ("queue drops (port|queue)", list(&s.queue_drops)),
                ("PG drops (port|pg)", list(&s.pg_drops)),
                ("ECN marked (port|queue)", list(&s.ecn_marked)),
                ("queue depth, frames (port|queue)", depths),
            ] {
                if !text.is_empty() {
                    let _ = writeln!(out, "  {sw} {label}: {text}");
                }
            }
        }
        for o in &r.expectations {
            let _ = writeln!(
                out,
                "  [{}] {}: {}",
                if o.holds { "PASS" } else { "FAIL" },
                o.expectation,
                o.evidence
            );
        }
        let _ = writeln!(out, "{}", if r.ok { "all expectations hold" } else { "SOME EXPECTATIONS FAILED" });
        out
    }
}
