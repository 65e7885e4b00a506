//! `swctl lab demo`: the README's main command. It brings up a lab whose topology has a `traffic` section
//! (by default the embedded `configs/topologies/demo.yaml`: h1 and h2 send lossless priority 3 and lossy
//! priority 0 RoCE to h3 behind one 1 Gb/s switch port), runs the traffic for `--seconds` while sampling
//! the congested port's queues every 50 ms over the switch's `Subscribe` counter stream, and then shows
//! what lossless Ethernet promises:
//!
//! - lossless traffic lost nothing: the receiver saw no PSN gap and nothing out of order, and the switch
//!   dropped no packet of a lossless PG or queue;
//! - PFC made that possible: the switch sent PFC on the senders' ingress ports (and ECN marked the
//!   lossless queue where the profile has WRED/ECN on it);
//! - lossy traffic was tail-dropped at the egress queue's threshold;
//! - per-class goodput, and the queue depth over time as an SVG plot in the run directory.
//!
//! The lab is removed at the end, on failure and on Ctrl-C; the run directory keeps the plot, the summary
//! (`summary.json`), the hosts' reports and every process's log.

use super::down;
use super::state::{self, LabState};
use super::topology::{Flow, Topology};
use super::up::{self, Lab, UpOptions};
use super::{check_interrupted, interrupted};
use anyhow::{Context, bail};
use lossless_dataplane::server;
use lossless_proto::v1 as pb;
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Counter sampling period (the Subscribe stream's `counters_interval_ms`).
pub const SAMPLE_INTERVAL_MS: u32 = 50;
/// Time the receivers get after the senders stopped, for the last packets and their ACKs.
const DRAIN: Duration = Duration::from_millis(500);

#[derive(Debug, Clone)]
pub struct DemoOptions {
    pub seconds: u32,
    pub name: Option<String>,
    pub json: bool,
    /// Rewrite one progress line in place (a terminal); otherwise a line per second.
    pub live_progress: bool,
}

/// How the demo's traffic crosses the switch: where it congests and what is lossless.
#[derive(Debug, Clone)]
struct Plan {
    switch: String,
    /// The port toward the host most flows go to.
    port: String,
    port_speed_mbps: u32,
    receiver: String,
    flows: Vec<PlannedFlow>,
    /// The congested port's queue has WRED/ECN configured.
    ecn_queues: Vec<u32>,
}

#[derive(Debug, Clone)]
struct PlannedFlow {
    flow: Flow,
    index: usize,
    lossless: bool,
    /// The sender's switch port (ingress).
    ingress: Option<String>,
    /// Egress queue at the congested port and ingress PG at the sender's port.
    queue: u32,
    pg: u32,
}

fn plan(topology: &Topology) -> anyhow::Result<Plan> {
    if topology.traffic.is_empty() {
        bail!(
            "{}: no traffic section; the demo needs flows (see configs/topologies/demo.yaml)",
            topology.source
        );
    }
    let mut count: BTreeMap<&str, usize> = BTreeMap::new();
    for f in &topology.traffic {
        *count.entry(f.to.as_str()).or_default() += 1;
    }
    let receiver = count.iter().max_by_key(|(_, n)| **n).map(|(h, _)| (*h).to_owned()).unwrap_or_default();
    let Some(end) = topology.host(&receiver).and_then(|h| h.attached.clone()) else {
        bail!("the demo's receiver {receiver} must be linked to a switch port");
    };
    let switch = topology.switch(&end.node).context("the receiver's switch")?;
    let egress_index =
        switch.compiled.ports.iter().position(|p| p.name == end.port).context("the receiver's port")?;
    let egress_qos = &switch.compiled.qos[egress_index];
    // Where a flow enters the congested switch: the sender's own port, or else (a sender behind another
    // switch) the switch's one inter-switch port, if it has exactly one.
    let inter_switch: Vec<String> = topology
        .links
        .iter()
        .flat_map(|l| [(&l.a, &l.b), (&l.b, &l.a)])
        .filter(|(mine, other)| mine.node == switch.name && topology.switch(&other.node).is_some())
        .map(|(mine, _)| mine.port.clone())
        .collect();
    let mut flows = Vec::new();
    for (index, f) in topology.traffic.iter().enumerate() {
        let sender = topology.host(&f.from).context("sender")?;
        let ingress = match sender.attached.as_ref() {
            Some(e) if e.node == switch.name => Some(e.port.clone()),
            _ if inter_switch.len() == 1 => inter_switch.first().cloned(),
            _ => None,
        };
        // Classified by the ingress port's maps (the egress port's when the ingress is unknown).
        let ingress_index =
            ingress.as_deref().and_then(|p| switch.compiled.ports.iter().position(|q| q.name == p));
        let qos = &switch.compiled.qos[ingress_index.unwrap_or(egress_index)];
        let tc = qos.dscp_to_tc.map(|m| m[usize::from(f.dscp & 63)]).unwrap_or(0);
        let (pg, port_pfc) = (qos.tc_to_pg[usize::from(tc & 7)], qos.pfc_enable);
        let queue = u32::from(egress_qos.tc_to_queue[usize::from(tc & 7)]);
        let lossless = port_pfc & (1 << f.priority) != 0 && sender.pfc.contains(&f.priority);
        flows.push(PlannedFlow { flow: f.clone(), index, lossless, ingress, queue, pg: u32::from(pg) });
    }
    let ecn_queues = wred_queues(&switch.config, &end.port);
    Ok(Plan {
        switch: switch.name.clone(),
        port: end.port.clone(),
        port_speed_mbps: switch.compiled.ports[egress_index].speed_mbps,
        receiver,
        flows,
        ecn_queues,
    })
}

/// Queues of `port` with a `wred_profile` in the QUEUE table (keys such as `Ethernet0,Ethernet8|3-4`).
fn wred_queues(db: &lossless_dataplane::model::config::ConfigDb, port: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for (key, fields) in db.tables.get("QUEUE").into_iter().flatten() {
        if !fields.contains_key("wred_profile") {
            continue;
        }
        let Some((ports, queues)) = key.split_once('|') else { continue };
        if !ports.split(',').any(|p| p.trim() == port) {
            continue;
        }
        let (lo, hi) = queues.split_once('-').unwrap_or((queues, queues));
        if let (Ok(lo), Ok(hi)) = (lo.trim().parse::<u32>(), hi.trim().parse::<u32>()) {
            out.extend(lo..=hi);
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

// ------------------------------------------------------------------------------------------------ summary

/// What the demo found, as `--json` prints it.
#[derive(Debug, Serialize)]
pub struct DemoSummary {
    pub lab: String,
    pub topology: String,
    pub seconds: u32,
    pub run_dir: PathBuf,
    pub svg: Option<PathBuf>,
    pub switch: String,
    pub congested_port: String,
    pub congested_port_speed_mbps: u32,
    pub receiver: String,
    pub lossless: ClassSummary,
    pub lossy: ClassSummary,
    pub flows: Vec<FlowSummary>,
    pub queue_depth: QueueDepth,
    pub claims: Vec<Claim>,
    /// Every claim holds.
    pub ok: bool,
}

#[derive(Debug, Default, Serialize)]
pub struct ClassSummary {
    pub priorities: Vec<u8>,
    /// Egress queues at the congested port.
    pub queues: Vec<u32>,
    pub flows: usize,
    pub offered_mbps: f64,
    /// Receiver side (rocehost reports).
    pub received_packets: u64,
    pub psn_gaps: u64,
    pub out_of_order: u64,
    pub duplicates: u64,
    pub ce_packets: u64,
    pub cnps_sent: u64,
    /// Sum of the flows' receiver goodput.
    pub goodput_mbps: f64,
    /// Sender side.
    pub sent_packets: u64,
    pub retransmitted_packets: u64,
    /// Switch, congested port: what left the class's queues, what they dropped, ECN marks.
    pub egress_packets: u64,
    pub egress_mbps: f64,
    pub egress_drops: u64,
    pub ecn_marked: u64,
    /// Switch, every port: drops in the class's PGs and queues (for lossless, also lossless packets dropped
    /// rather than flooded to an unknown MAC, `FDB_MISS_LOSSLESS`).
    pub switch_drops: u64,
    /// Where those drops happened: `Ethernet4 PG 3`, `Ethernet0 queue 3 WRED`, ...
    pub switch_drops_where: BTreeMap<String, u64>,
    /// PFC frames the switch sent per ingress port, for the class's priorities.
    pub pfc_tx: BTreeMap<String, u64>,
    /// Time the senders were paused on the class's priorities, per sender, ms.
    pub sender_paused_ms: BTreeMap<String, f64>,
}

#[derive(Debug, Default, Serialize)]
pub struct FlowSummary {
    pub from: String,
    pub to: String,
    pub class: String,
    pub priority: u8,
    pub dscp: u8,
    pub queue: u32,
    pub offered_mbps: Option<u32>,
    pub sent_packets: u64,
    pub retransmitted_packets: u64,
    pub received_packets: u64,
    pub psn_gaps: u64,
    pub out_of_order: u64,
    pub goodput_mbps: f64,
}

#[derive(Debug, Default, Serialize)]
pub struct QueueDepth {
    pub interval_ms: u32,
    pub samples: usize,
    /// Per queue of the congested port (frames).
    pub queues: BTreeMap<u32, DepthStats>,
}

#[derive(Debug, Default, Serialize)]
pub struct DepthStats {
    pub max: u64,
    pub mean: f64,
}

#[derive(Debug, Serialize)]
pub struct Claim {
    pub claim: String,
    pub holds: bool,
    pub evidence: String,
}

// ------------------------------------------------------------------------------------------------ run

/// Runs the demo; exit 0 when every claim held, 1 when one did not.
pub fn run(
    topology: &Topology,
    options: &DemoOptions,
    tokio: &tokio::runtime::Handle,
) -> anyhow::Result<ExitCode> {
    let plan = plan(topology)?;
    let name = choose_name(topology, options.name.as_deref())?;
    if !options.json {
        print!("{}", describe_plan(topology, &plan, &name, options.seconds));
        let _ = std::io::stdout().flush();
    }
    let up = UpOptions { name: Some(name), traffic_seconds: Some(options.seconds), ..UpOptions::default() };
    let mut lab = up::up(topology, &up, tokio)?;
    let endpoint = lab.endpoint(&plan.switch).context("the switch's endpoint")?.to_owned();
    let samples: Arc<Mutex<Vec<pb::GetCountersResponse>>> = Arc::default();
    let sampler = tokio.spawn(sample(endpoint.clone(), samples.clone()));

    let outcome = drive(&mut lab, &plan, options, &samples);
    sampler.abort();
    outcome?;
    let counters = tokio.block_on(async {
        let mut c = server::connect(&endpoint).await?;
        anyhow::Ok(c.get_counters(pb::GetCountersRequest {}).await?.into_inner())
    })?;
    let samples = std::mem::take(&mut *samples.lock().unwrap_or_else(|e| e.into_inner()));

    let mut reports = BTreeMap::new();
    for h in &lab.state.hosts {
        let text = std::fs::read_to_string(&h.report)
            .with_context(|| format!("{}: rocehost wrote no report ({})", h.name, h.report.display()))?;
        let value: Value = serde_json::from_str(&text).with_context(|| format!("{}", h.report.display()))?;
        reports.insert(h.name.clone(), value);
    }
    let dir = lab.dir.clone();
    let mut summary = summarize(topology, &plan, &lab, options.seconds, &counters, &samples, &reports);
    let svg = dir.join("queue-depth.svg");
    match plot(&svg, &plan, &samples) {
        Ok(()) => summary.svg = Some(svg),
        Err(e) => eprintln!("swctl: the queue depth plot failed: {e:#}"),
    }
    std::fs::write(dir.join("summary.json"), serde_json::to_vec_pretty(&summary)?)?;
    let report = lab.down(true);
    if !report.problems.is_empty() {
        eprintln!("swctl: lab {}: {}", summary.lab, report.summary());
    }
    if options.json {
        println!("{}", serde_json::to_string_pretty(&summary)?);
    } else {
        print!("{}", describe_summary(&summary));
    }
    Ok(if summary.ok { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// The topology's name, unless a lab of that name exists: then (unless its creator died and it is left
/// over from a crashed run, which is removed) the name with this process's id.
fn choose_name(topology: &Topology, requested: Option<&str>) -> anyhow::Result<String> {
    let base = requested.unwrap_or(&topology.name).to_owned();
    let dir = state::lab_dir(&base);
    let taken = |name: &str| {
        state::lab_dir(name).join("state.json").exists()
            || topology.node_names().any(|n| state::namespace_exists(&state::namespace_name(name, n)))
    };
    if !taken(&base) {
        return Ok(base);
    }
    if let Ok(state) = LabState::load(&dir)
        && state.owner.is_some()
        && !state.owner_alive()
    {
        let report = down::down(&base, false)?;
        eprintln!("swctl: removed lab {base} left over from an interrupted run ({})", report.summary());
        if !taken(&base) {
            return Ok(base);
        }
    }
    if requested.is_some() {
        bail!("lab {base} exists; `swctl lab down {base}` removes it, or choose another --name");
    }
    let name = format!("{base}-{:x}", std::process::id());
    super::topology::check_lab_name(&name).map_err(anyhow::Error::msg)?;
    Ok(name)
}

/// Waits for the senders to finish (their `--duration`), printing a progress line every second; then
/// stops the responders (SIGTERM: they write their reports).
fn drive(
    lab: &mut Lab,
    plan: &Plan,
    options: &DemoOptions,
    samples: &Arc<Mutex<Vec<pb::GetCountersResponse>>>,
) -> anyhow::Result<()> {
    let senders: Vec<String> =
        lab.state.hosts.iter().filter(|h| !h.flows.is_empty()).map(|h| h.name.clone()).collect();
    let responders: Vec<String> =
        lab.state.hosts.iter().filter(|h| h.flows.is_empty()).map(|h| h.name.clone()).collect();
    let start = Instant::now();
    let deadline = start + Duration::from_secs(u64::from(options.seconds) + 30);
    let mut next_progress = start + Duration::from_secs(1);
    let mut printed_live = false;
    loop {
        check_interrupted()?;
        if senders.iter().all(|s| !lab.running(s)) {
            break;
        }
        if Instant::now() > deadline {
            bail!("the senders did not stop within 30 s after the traffic's end");
        }
        if Instant::now() >= next_progress {
            next_progress += Duration::from_secs(1);
            let samples = samples.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(line) = progress_line(plan, &samples, start.elapsed(), options.seconds) {
                if options.live_progress {
                    eprint!("\r{line}\x1b[K");
                    printed_live = true;
                } else {
                    eprintln!("{line}");
                }
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    if printed_live {
        eprintln!();
    }
    for s in &senders {
        if let Some(status) = lab.wait_process(s, Duration::ZERO)
            && !status.success()
        {
            let log = lab.state.process(s).map(|p| p.log.display().to_string()).unwrap_or_default();
            bail!("rocehost of {s} failed ({status}); see {log}");
        }
    }
    std::thread::sleep(DRAIN);
    for r in &responders {
        if !lab.stop_process(r, Duration::from_secs(10)) && !interrupted() {
            bail!("rocehost of {r} did not stop on SIGTERM");
        }
    }
    Ok(())
}

/// Counter snapshots every [`SAMPLE_INTERVAL_MS`] from the switch's Subscribe stream (GetCounters polling
/// if the stream is refused), until the switch goes away or the task is aborted.
async fn sample(endpoint: String, samples: Arc<Mutex<Vec<pb::GetCountersResponse>>>) {
    let Ok(mut client) = server::connect(&endpoint).await else { return };
    let request = pb::SubscribeRequest { counters_interval_ms: SAMPLE_INTERVAL_MS, events: false };
    if let Ok(stream) = client.subscribe(request).await {
        let mut stream = stream.into_inner();
        while let Ok(Some(item)) = stream.message().await {
            if let Some(pb::subscribe_response::Item::Counters(c)) = item.item {
                samples.lock().unwrap_or_else(|e| e.into_inner()).push(c);
            }
        }
        return;
    }
    let mut tick = tokio::time::interval(Duration::from_millis(u64::from(SAMPLE_INTERVAL_MS)));
    loop {
        tick.tick().await;
        match client.get_counters(pb::GetCountersRequest {}).await {
            Ok(c) => samples.lock().unwrap_or_else(|e| e.into_inner()).push(c.into_inner()),
            Err(_) => return,
        }
    }
}

fn port<'a>(c: &'a pb::GetCountersResponse, name: &str) -> Option<&'a pb::PortCounters> {
    c.ports.iter().find(|p| p.name == name)
}

fn class_queues(plan: &Plan, lossless: bool) -> Vec<u32> {
    let mut q: Vec<u32> = plan.flows.iter().filter(|f| f.lossless == lossless).map(|f| f.queue).collect();
    q.sort_unstable();
    q.dedup();
    q
}

fn queue_sum(p: &pb::PortCounters, queues: &[u32], f: impl Fn(&pb::QueueCounters) -> u64) -> u64 {
    queues.iter().filter_map(|&q| p.queues.get(q as usize)).map(f).sum()
}

fn pfc_tx_sum(plan: &Plan, c: &pb::GetCountersResponse) -> u64 {
    let mut total = 0;
    for (port_name, priorities) in ingress_ports(plan, true) {
        if let Some(p) = port(c, &port_name) {
            total +=
                priorities.iter().filter_map(|&pr| p.pfc.get(usize::from(pr))).map(|x| x.tx).sum::<u64>();
        }
    }
    total
}

/// Ingress ports of the class's flows and their priorities.
fn ingress_ports(plan: &Plan, lossless: bool) -> BTreeMap<String, Vec<u8>> {
    let mut out: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    for f in plan.flows.iter().filter(|f| f.lossless == lossless) {
        if let Some(p) = &f.ingress {
            let list = out.entry(p.clone()).or_default();
            if !list.contains(&f.flow.priority) {
                list.push(f.flow.priority);
            }
        }
    }
    out
}

fn progress_line(
    plan: &Plan,
    samples: &[pb::GetCountersResponse],
    elapsed: Duration,
    seconds: u32,
) -> Option<String> {
    let last = samples.last()?;
    // The sample about a second before the last one.
    let target = last.timestamp_ns.saturating_sub(1_000_000_000);
    let earlier = samples.iter().rev().find(|s| s.timestamp_ns <= target).or(samples.first())?;
    let dt = (last.timestamp_ns.saturating_sub(earlier.timestamp_ns)) as f64 / 1e9;
    let (now_port, then_port) = (port(last, &plan.port)?, port(earlier, &plan.port)?);
    let (lossless, lossy) = (class_queues(plan, true), class_queues(plan, false));
    let rate = |queues: &[u32]| {
        let bytes =
            queue_sum(now_port, queues, |q| q.bytes)
                .saturating_sub(queue_sum(then_port, queues, |q| q.bytes));
        if dt > 0.0 { bytes as f64 * 8.0 / dt / 1e6 } else { 0.0 }
    };
    let depth =
        |queues: &[u32]| -> u64 { queues.iter().filter_map(|&q| now_port.queue_depth.get(q as usize)).sum() };
    let drops = queue_sum(now_port, &lossy, |q| q.dropped_packets);
    Some(format!(
        "[{:>4.1}s/{seconds}s] {} out: lossless {:>6.1} Mb/s, lossy {:>6.1} Mb/s | queued {} + {} frames | PFC sent {} | lossy dropped {}",
        elapsed.as_secs_f64(),
        plan.port,
        rate(&lossless),
        rate(&lossy),
        depth(&lossless),
        depth(&lossy),
        crate::show::thousands(pfc_tx_sum(plan, last)),
        crate::show::thousands(drops),
    ))
}

// ------------------------------------------------------------------------------------------------ reports

fn u64_at(v: &Value, key: &str) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or(0)
}

fn f64_at(v: &Value, key: &str) -> f64 {
    v.get(key).and_then(Value::as_f64).unwrap_or(0.0)
}

fn items<'a>(v: &'a Value, key: &str) -> impl Iterator<Item = &'a Value> {
    v.get(key).and_then(Value::as_array).into_iter().flatten()
}

/// The sender's statistics of a planned flow: its report's flows to the same destination with the same
/// priority and DSCP, the n-th of them for the n-th such planned flow; and the receiver's statistics of the
/// same QP from that sender.
fn flow_stats<'a>(
    topology: &Topology,
    plan: &Plan,
    planned: &PlannedFlow,
    reports: &'a BTreeMap<String, Value>,
) -> (Option<&'a Value>, Option<&'a Value>) {
    let f = &planned.flow;
    let (Some(src), Some(dst)) = (topology.host(&f.from), topology.host(&f.to)) else { return (None, None) };
    let nth = plan
        .flows
        .iter()
        .filter(|p| {
            p.flow.from == f.from
                && p.flow.to == f.to
                && p.flow.priority == f.priority
                && p.flow.dscp == f.dscp
        })
        .position(|p| p.index == planned.index)
        .unwrap_or(0);
    let dst_ip = dst.ip.to_string();
    let sent = reports.get(&f.from).and_then(|r| {
        items(r, "flows")
            .filter(|s| {
                s.get("dst_ip").and_then(Value::as_str) == Some(dst_ip.as_str())
                    && u64_at(s, "priority") == u64::from(f.priority)
                    && u64_at(s, "dscp") == u64::from(f.dscp)
            })
            .nth(nth)
    });
    let qp = sent.map(|s| u64_at(s, "dst_qp")).unwrap_or(u64::from(up::flow_qp(planned.index)));
    let src_ip = src.ip.to_string();
    let received = reports.get(&f.to).and_then(|r| {
        items(r, "receivers").find(|x| {
            x.get("src_ip").and_then(Value::as_str) == Some(src_ip.as_str()) && u64_at(x, "qp") == qp
        })
    });
    (sent, received)
}

fn summarize(
    topology: &Topology,
    plan: &Plan,
    lab: &Lab,
    seconds: u32,
    counters: &pb::GetCountersResponse,
    samples: &[pb::GetCountersResponse],
    reports: &BTreeMap<String, Value>,
) -> DemoSummary {
    let mut flows = Vec::new();
    let mut classes = [ClassSummary::default(), ClassSummary::default()];
    for planned in &plan.flows {
        let (sent, received) = flow_stats(topology, plan, planned, reports);
        let class = &mut classes[usize::from(!planned.lossless)];
        let f = &planned.flow;
        let mut fs = FlowSummary {
            from: f.from.clone(),
            to: f.to.clone(),
            class: if planned.lossless { "lossless" } else { "lossy" }.into(),
            priority: f.priority,
            dscp: f.dscp,
            queue: planned.queue,
            offered_mbps: f.rate_mbps,
            ..FlowSummary::default()
        };
        if let Some(s) = sent {
            fs.sent_packets = u64_at(s, "sent_packets");
            fs.retransmitted_packets = u64_at(s, "retransmitted_packets");
        }
        if let Some(r) = received {
            fs.received_packets = u64_at(r, "received_packets");
            fs.psn_gaps = u64_at(r, "psn_gaps");
            fs.out_of_order = u64_at(r, "out_of_order");
            fs.goodput_mbps = f64_at(r, "goodput_mbps");
            class.duplicates += u64_at(r, "duplicates");
            class.ce_packets += u64_at(r, "ce_packets");
            class.cnps_sent += u64_at(r, "cnps_sent");
        }
        class.flows += 1;
        class.offered_mbps += f64::from(f.rate_mbps.unwrap_or(0));
        class.sent_packets += fs.sent_packets;
        class.retransmitted_packets += fs.retransmitted_packets;
        class.received_packets += fs.received_packets;
        class.psn_gaps += fs.psn_gaps;
        class.out_of_order += fs.out_of_order;
        class.goodput_mbps += fs.goodput_mbps;
        if !class.priorities.contains(&f.priority) {
            class.priorities.push(f.priority);
        }
        flows.push(fs);
    }
    for (i, class) in classes.iter_mut().enumerate() {
        let lossless = i == 0;
        class.priorities.sort_unstable();
        class.queues = class_queues(plan, lossless);
        if let Some(p) = port(counters, &plan.port) {
            class.egress_packets = queue_sum(p, &class.queues, |q| q.packets);
            class.egress_mbps =
                queue_sum(p, &class.queues, |q| q.bytes) as f64 * 8.0 / f64::from(seconds.max(1)) / 1e6;
            class.egress_drops = queue_sum(p, &class.queues, |q| q.dropped_packets + q.wred_dropped_packets);
            class.ecn_marked = queue_sum(p, &class.queues, |q| q.ecn_marked_packets);
        }
        let pgs: Vec<u32> = {
            let mut v: Vec<u32> =
                plan.flows.iter().filter(|f| f.lossless == lossless).map(|f| f.pg).collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        for p in &counters.ports {
            let mut note = |what: String, n: u64| {
                if n > 0 {
                    class.switch_drops += n;
                    *class.switch_drops_where.entry(format!("{} {what}", p.name)).or_default() += n;
                }
            };
            for &q in &class.queues {
                if let Some(c) = p.queues.get(q as usize) {
                    note(format!("queue {q}"), c.dropped_packets);
                    note(format!("queue {q} WRED"), c.wred_dropped_packets);
                }
            }
            for &g in &pgs {
                note(format!("PG {g}"), p.pgs.get(g as usize).map(|c| c.dropped_packets).unwrap_or(0));
            }
            if lossless {
                note(
                    "FDB_MISS_LOSSLESS".into(),
                    p.drop_reasons.get("FDB_MISS_LOSSLESS").copied().unwrap_or(0),
                );
            }
        }
        for (port_name, priorities) in ingress_ports(plan, lossless) {
            let tx = port(counters, &port_name)
                .map(|p| priorities.iter().filter_map(|&pr| p.pfc.get(usize::from(pr))).map(|x| x.tx).sum())
                .unwrap_or(0);
            class.pfc_tx.insert(port_name, tx);
        }
        let senders: std::collections::BTreeSet<&str> =
            plan.flows.iter().filter(|f| f.lossless == lossless).map(|f| f.flow.from.as_str()).collect();
        for s in senders {
            let paused_ns: u64 = reports
                .get(s)
                .map(|r| {
                    items(r, "pfc")
                        .filter(|p| class.priorities.iter().any(|&pr| u64_at(p, "priority") == u64::from(pr)))
                        .map(|p| u64_at(p, "pause_ns"))
                        .sum()
                })
                .unwrap_or(0);
            class.sender_paused_ms.insert(s.to_owned(), paused_ns as f64 / 1e6);
        }
    }
    let [lossless, lossy] = classes;

    // Queue depth over the run.
    let mut queue_depth =
        QueueDepth { interval_ms: SAMPLE_INTERVAL_MS, samples: samples.len(), queues: BTreeMap::new() };
    for q in lossless.queues.iter().chain(&lossy.queues) {
        let depths: Vec<u64> = samples
            .iter()
            .filter_map(|s| port(s, &plan.port))
            .filter_map(|p| p.queue_depth.get(*q as usize).copied())
            .collect();
        let max = depths.iter().copied().max().unwrap_or(0);
        let mean =
            if depths.is_empty() { 0.0 } else { depths.iter().sum::<u64>() as f64 / depths.len() as f64 };
        queue_depth.queues.insert(*q, DepthStats { max, mean });
    }

    // The claims.
    let mut claims = Vec::new();
    if lossless.flows > 0 {
        claims.push(Claim {
            claim: "lossless traffic lost nothing".into(),
            holds: lossless.received_packets > 0
                && lossless.psn_gaps == 0
                && lossless.out_of_order == 0
                && lossless.switch_drops == 0,
            evidence: format!(
                "receiver: {} packets, PSN gaps {}, out of order {}; switch lossless PG/queue drops {}{}",
                lossless.received_packets,
                lossless.psn_gaps,
                lossless.out_of_order,
                lossless.switch_drops,
                drops_where(&lossless.switch_drops_where)
            ),
        });
        claims.push(Claim {
            claim: "the switch sent PFC on every lossless ingress port".into(),
            holds: !lossless.pfc_tx.is_empty() && lossless.pfc_tx.values().all(|&n| n > 0),
            evidence: lossless.pfc_tx.iter().map(|(p, n)| format!("{p} {n}")).collect::<Vec<_>>().join(", "),
        });
        let ecn: Vec<u32> = lossless.queues.iter().copied().filter(|q| plan.ecn_queues.contains(q)).collect();
        if !ecn.is_empty() {
            claims.push(Claim {
                claim: "ECN marked lossless packets".into(),
                holds: lossless.ecn_marked > 0,
                evidence: format!("{} queue(s) {:?}: {} marked", plan.port, ecn, lossless.ecn_marked),
            });
        }
    }
    if lossy.flows > 0 {
        claims.push(Claim {
            claim: "lossy traffic was tail-dropped at the egress queue".into(),
            holds: lossy.egress_drops > 0,
            evidence: format!("{} queue(s) {:?}: {} dropped", plan.port, lossy.queues, lossy.egress_drops),
        });
    }
    let ok = claims.iter().all(|c| c.holds);
    DemoSummary {
        lab: lab.state.name.clone(),
        topology: topology.source.clone(),
        seconds,
        run_dir: lab.dir.clone(),
        svg: None,
        switch: plan.switch.clone(),
        congested_port: plan.port.clone(),
        congested_port_speed_mbps: plan.port_speed_mbps,
        receiver: plan.receiver.clone(),
        lossless,
        lossy,
        flows,
        queue_depth,
        claims,
        ok,
    }
}

/// ` (Ethernet0 PG 3: 12, ...)`, or nothing when there was no drop.
fn drops_where(drops: &BTreeMap<String, u64>) -> String {
    if drops.is_empty() {
        return String::new();
    }
    let parts: Vec<String> = drops.iter().map(|(w, n)| format!("{w}: {n}")).collect();
    format!(" ({})", parts.join(", "))
}

// ------------------------------------------------------------------------------------------------ plot

/// The congested port's class queues over time, one line each.
fn plot(path: &Path, plan: &Plan, samples: &[pb::GetCountersResponse]) -> anyhow::Result<()> {
    use plotters::prelude::*;
    let first = samples.first().map(|s| s.timestamp_ns).unwrap_or(0);
    let mut series: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    for (lossless, label) in [(true, "lossless"), (false, "lossy")] {
        for q in class_queues(plan, lossless) {
            let points: Vec<(f64, f64)> = samples
                .iter()
                .filter_map(|s| {
                    let depth = port(s, &plan.port)?.queue_depth.get(q as usize).copied()?;
                    Some((s.timestamp_ns.saturating_sub(first) as f64 / 1e9, depth as f64))
                })
                .collect();
            series.push((format!("queue {q} ({label})"), points));
        }
    }
    let x_max = series.iter().flat_map(|(_, p)| p.iter().map(|x| x.0)).fold(1.0, f64::max);
    let y_max = series.iter().flat_map(|(_, p)| p.iter().map(|x| x.1)).fold(1.0, f64::max) * 1.15;
    let root = SVGBackend::new(path, (960, 420)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| anyhow::anyhow!("{e}"))?;
    let title =
        format!("{} {}: egress queue depth ({} ms samples)", plan.switch, plan.port, SAMPLE_INTERVAL_MS);
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0f64..x_max, 0f64..y_max)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    chart
        .configure_mesh()
        .x_desc("time (s)")
        .y_desc("frames queued")
        .draw()
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let colours = [
        RGBColor(0x1f, 0x77, 0xb4),
        RGBColor(0xd6, 0x27, 0x28),
        RGBColor(0x2c, 0xa0, 0x2c),
        RGBColor(0x94, 0x67, 0xbd),
    ];
    for (i, (label, points)) in series.into_iter().enumerate() {
        let colour = colours[i % colours.len()];
        chart
            .draw_series(LineSeries::new(points, colour.stroke_width(2)))
            .map_err(|e| anyhow::anyhow!("{e}"))?
            .label(label)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2)));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    root.present().map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(())
}

// ------------------------------------------------------------------------------------------------ text

fn describe_plan(topology: &Topology, plan: &Plan, name: &str, seconds: u32) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "Lossless demo: lab {name} ({}), {seconds} s of traffic", topology.source);
    let offered: u32 = plan.flows.iter().filter_map(|f| f.flow.rate_mbps).sum();
    for f in &plan.flows {
        let rate = f.flow.rate_mbps.map(|r| format!("{r} Mb/s")).unwrap_or_else(|| "line rate".into());
        let _ = writeln!(
            out,
            "  {} -> {}  {:<8} priority {} (DSCP {}), {rate}, via {} queue {}",
            f.flow.from,
            f.flow.to,
            if f.lossless { "lossless" } else { "lossy" },
            f.flow.priority,
            f.flow.dscp,
            plan.port,
            f.queue
        );
    }
    let _ = writeln!(
        out,
        "  {} {} toward {} runs at {} Mb/s: {offered} Mb/s offered.\n",
        plan.switch, plan.port, plan.receiver, plan.port_speed_mbps
    );
    out
}

fn describe_summary(s: &DemoSummary) -> String {
    let mut out = String::new();
    let t = crate::show::thousands;
    let per_flow = |class: &str| {
        s.flows
            .iter()
            .filter(|f| f.class == class)
            .map(|f| format!("{} {:.1}", f.from, f.goodput_mbps))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let _ = writeln!(
        out,
        "\nResults ({} s, {} {} at {} Mb/s)",
        s.seconds, s.switch, s.congested_port, s.congested_port_speed_mbps
    );
    let l = &s.lossless;
    if l.flows > 0 {
        let lost = l.psn_gaps + l.out_of_order + l.switch_drops;
        let _ = writeln!(
            out,
            "  Lossless (priority {:?}, queue {:?}): {}",
            l.priorities,
            l.queues,
            if lost == 0 { "nothing lost" } else { "LOSS" }
        );
        let duplicates = if l.duplicates > 0 && l.psn_gaps == 0 {
            format!(
                "duplicates {} (go-back-N resends after a retransmission timeout: late, not lost)",
                t(l.duplicates)
            )
        } else {
            format!("duplicates {}", t(l.duplicates))
        };
        let _ = writeln!(
            out,
            "    receiver {}: {} packets, PSN gaps {}, out of order {}, {duplicates}; switch drops {}{}",
            s.receiver,
            t(l.received_packets),
            l.psn_gaps,
            l.out_of_order,
            l.switch_drops,
            drops_where(&l.switch_drops_where)
        );
        let _ = writeln!(
            out,
            "    goodput {:.1} Mb/s ({}); {} left at {:.1} Mb/s",
            l.goodput_mbps,
            per_flow("lossless"),
            s.congested_port,
            l.egress_mbps
        );
        let pfc: Vec<String> = l.pfc_tx.iter().map(|(p, n)| format!("{p} {}", t(*n))).collect();
        let paused: Vec<String> = l
            .sender_paused_ms
            .iter()
            .map(|(h, ms)| format!("{h} {:.0}%", ms / 10.0 / f64::from(s.seconds.max(1))))
            .collect();
        let _ = writeln!(
            out,
            "    PFC frames sent by {}: {}; senders paused {}",
            s.switch,
            pfc.join(", "),
            paused.join(", ")
        );
        let _ = writeln!(
            out,
            "    ECN: {} packets marked CE in {} queue {:?}; the receiver saw {} CE and sent {} CNPs",
            t(l.ecn_marked),
            s.congested_port,
            l.queues,
            t(l.ce_packets),
            t(l.cnps_sent)
        );
    }
    let y = &s.lossy;
    if y.flows > 0 {
        let total = y.egress_packets + y.egress_drops;
        let pct = if total > 0 { 100.0 * y.egress_drops as f64 / total as f64 } else { 0.0 };
        let _ = writeln!(
            out,
            "  Lossy (priority {:?}, queue {:?}): {}",
            y.priorities,
            y.queues,
            if y.egress_drops > 0 { "tail-dropped at the egress threshold" } else { "no drop" }
        );
        let _ = writeln!(
            out,
            "    {} queue {:?} dropped {} packets ({pct:.1} % of those reaching it); receiver PSN gaps {}, sender retransmissions {}",
            s.congested_port,
            y.queues,
            t(y.egress_drops),
            t(y.psn_gaps),
            t(y.retransmitted_packets)
        );
        let _ = writeln!(
            out,
            "    goodput {:.1} Mb/s ({}); {} left at {:.1} Mb/s",
            y.goodput_mbps,
            per_flow("lossy"),
            s.congested_port,
            y.egress_mbps
        );
    }
    let depth: Vec<String> = s
        .queue_depth
        .queues
        .iter()
        .map(|(q, d)| format!("queue {q} max {} mean {:.1}", d.max, d.mean))
        .collect();
    let _ = writeln!(
        out,
        "  Queue depth of {} ({} samples, frames): {}",
        s.congested_port,
        s.queue_depth.samples,
        depth.join("; ")
    );
    if let Some(svg) = &s.svg {
        let _ = writeln!(out, "    plot: {}", svg.display());
    }
    let _ = writeln!(out, "  Claims:");
    for c in &s.claims {
        let _ = writeln!(out, "    [{}] {}: {}", if c.holds { " ok " } else { "FAIL" }, c.claim, c.evidence);
    }
    let _ = writeln!(out, "  Reports, logs and summary.json: {}", s.run_dir.display());
    out
}
