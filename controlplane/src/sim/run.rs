//! Running a scenario in virtual time: the fabric built, the timeline's steps carried out at their instants,
//! counters sampled for the report and the time series, then the same evaluation as `swctl lab run`.

use super::fabric::{self, Fabric, ORIGIN_NS};
use super::series::{Key, Series, SeriesId};
use crate::lab::scenario::report::{ActionRecord, Observed, ScenarioReport, evaluate};
use crate::lab::scenario::run::merge;
use crate::lab::scenario::timed::{Firsts, FlowBytes, FlowSnapshots};
use crate::lab::scenario::{ActionKind, SAMPLE_INTERVAL_MS, Scenario};
use crate::lab::topology::resolve_switch_config;
use anyhow::bail;
use lossless_dataplane::io::runtime::TimedEvent;
use lossless_dataplane::model::config::ConfigDb;
use lossless_dataplane::model::{Event, PfcEvents, PortId};
use lossless_dataplane::rocehost::report::{Report, RunStart};
use lossless_dataplane::server::{CountersSnapshot, event_to_proto, fdb_to_proto, neighbors_to_proto};
use lossless_dataplane::sim::{Device, Endpoint};
use lossless_dataplane::time::{Instant, Nanos};
use lossless_proto::v1 as pb;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// After the scenario's duration the senders start no new message; the run goes on this long so that what
/// is in flight arrives and is acknowledged (the lab waits 500 ms of wall time for the same).
pub const DRAIN_NS: u64 = 100_000_000;

/// How to run.
#[derive(Debug, Clone)]
pub struct Options {
    pub seed: u64,
    /// End of the run, ns after the origin (default: the scenario's duration + [`DRAIN_NS`]).
    pub until_ns: Option<u64>,
    /// Time-series resolution.
    pub resolution_ns: u64,
    /// `node:port` ends whose link is captured.
    pub pcap: Vec<String>,
    /// Where the report, series and captures go (named in the report).
    pub out: PathBuf,
    /// Threads (parts of the fabric run side by side, [`super::parallel`]); 0: as many as the machine
    /// has cores, for a fabric large enough to gain. The outputs are the same whatever the number.
    pub threads: usize,
}

/// The longest stretch of virtual time run before the nodes' events are collected: they are kept until
/// then, and a congested fabric makes many (1.7 M XOFF/XON events, 134 MB, in 10 ms of the 128-host Clos
/// shuffle, whose time series at 1 s resolution were sampled only every 10 ms).
const EVENTS_NS: u64 = 1_000_000;

/// What a run produced.
pub struct Outcome {
    pub report: ScenarioReport,
    pub series: Series,
    /// (file name, pcap bytes, frames).
    pub captures: Vec<(String, Vec<u8>, u64)>,
    /// Simulator events handled (wake-ups and arrivals).
    pub events: u64,
    /// Threads the run used (the fabric's parts).
    pub threads: usize,
    /// Virtual ns simulated.
    pub virtual_ns: u64,
    /// Cyclic buffer dependencies of the topology, and of the configurations its `apply` steps made
    /// (`swctl deadlock-check`'s warning line, with the step).
    pub warnings: Vec<String>,
    /// The latency matrix, when the scenario has `pingmesh:`.
    pub pingmesh: Option<crate::pingmesh::PingmeshMatrix>,
    /// Per-flow RDMA statistics (`estats.json`).
    pub estats: crate::pingmesh::estats::Estats,
}

/// A timed thing to do: a storm switched on or off, a receive pipeline stopped or restarted, or a
/// scenario action.
enum Todo {
    Storm {
        host: String,
        priorities: u8,
        interval_ns: u64,
    },
    RxStuck {
        host: String,
        stuck: bool,
    },
    Action(usize),
    /// Every flow's byte counts, at this many ms after the origin.
    FlowSnapshot(u64),
}

/// Runs the scenario. `progress` is called now and then with (virtual ns done, virtual ns of the run), both
/// from the origin; it returns false to end the run there (Ctrl-C), with a partial report.
pub fn run(
    scenario: &Scenario,
    options: &Options,
    progress: &mut dyn FnMut(u64, u64) -> bool,
) -> anyhow::Result<Outcome> {
    run_observed(scenario, options, progress, &mut |_, _| {})
}

/// What an observer of a run is shown: a time-series sample (ns after the origin), or the end of the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Moment {
    Sample(u64),
    End(u64),
}

/// [`run`], showing the fabric to `observe` at every time-series sample and once at the end (after the
/// last sample, before the report is made): what `swctl score` measures beyond the report.
pub fn run_observed(
    scenario: &Scenario,
    options: &Options,
    progress: &mut dyn FnMut(u64, u64) -> bool,
    observe: &mut dyn FnMut(&mut Fabric, Moment),
) -> anyhow::Result<Outcome> {
    let duration_ns = scenario.duration_ms * 1_000_000;
    let end = ORIGIN_NS + options.until_ns.unwrap_or(duration_ns + DRAIN_NS);
    let mut f = fabric::build(&scenario.topology, options.seed, ORIGIN_NS + duration_ns)?;
    if let Some(spec) = &scenario.pingmesh {
        crate::pingmesh::add_sim_probes(
            &mut f,
            &scenario.topology,
            spec,
            ORIGIN_NS,
            ORIGIN_NS + duration_ns,
        )?;
    }
    let mut captures = Vec::new();
    for spec in &options.pcap {
        let (ends, name) = capture_ends(&mut f, spec)?;
        captures.push((name, f.sim.capture(ends)));
    }
    let mut todo: Vec<(u64, Todo)> = Vec::new();
    for s in &scenario.storms {
        let priorities = s.priorities.iter().fold(0u8, |m, p| m | 1 << p);
        let on = Todo::Storm { host: s.host.clone(), priorities, interval_ns: s.interval_us * 1000 };
        todo.push((ORIGIN_NS + s.start_ms * 1_000_000, on));
        if let Some(stop) = s.stop_ms {
            let off = Todo::Storm { host: s.host.clone(), priorities: 0, interval_ns: 0 };
            todo.push((ORIGIN_NS + stop * 1_000_000, off));
        }
    }
    for s in &scenario.rx_stuck {
        todo.push((ORIGIN_NS + s.start_ms * 1_000_000, Todo::RxStuck { host: s.host.clone(), stuck: true }));
        if let Some(stop) = s.stop_ms {
            todo.push((ORIGIN_NS + stop * 1_000_000, Todo::RxStuck { host: s.host.clone(), stuck: false }));
        }
    }
    for (i, a) in scenario.actions.iter().enumerate() {
        todo.push((ORIGIN_NS + a.at_ms * 1_000_000, Todo::Action(i)));
    }
    for ms in scenario.flow_snapshot_instants_ms() {
        todo.push((ORIGIN_NS + ms * 1_000_000, Todo::FlowSnapshot(ms)));
    }
    todo.sort_by_key(|(at, _)| *at); // stable: file order at equal times
    let mut todo = todo.into_iter().peekable();

    let mut configs: BTreeMap<String, ConfigDb> =
        scenario.topology.switches.iter().map(|s| (s.name.clone(), s.config.clone())).collect();
    // Report samples every 10 ms as in a lab, or 100 per run for short ones (at least the series').
    let sample_ns = (SAMPLE_INTERVAL_MS as u64 * 1_000_000).min(duration_ns / 100).max(options.resolution_ns);
    let mut samples: BTreeMap<String, Vec<pb::GetCountersResponse>> = BTreeMap::new();
    let mut events = Vec::new();
    let mut firsts: BTreeMap<String, Firsts> = BTreeMap::new();
    let mut flow_snapshots = FlowSnapshots::new();
    let mut records = Vec::new();
    let mut series = Series::new(options.resolution_ns);
    let mut recorder = Recorder::default();
    let mut next_sample = ORIGIN_NS;
    let mut next_point = ORIGIN_NS;
    let mut partial = false;
    let mut warnings: Vec<String> =
        crate::deadlock::check(&scenario.topology).warning().into_iter().collect();
    // A capture sees every frame of its link in the order sent: a captured run is one part.
    let threads =
        if captures.is_empty() { super::parallel::partition(&mut f.sim, options.threads) } else { 1 };
    // The report reads each switch's first XOFF and no XON (`collect_events`): a congested fabric makes
    // one of each per pause, so the switches raise no others.
    for &id in f.switches.values() {
        f.sim.switch(id).set_pfc_events(PfcEvents::FirstXoff);
    }
    super::parallel::run_until(&mut f.sim, Instant::from_ns(ORIGIN_NS - 1));
    loop {
        let next_todo = todo.peek().map_or(u64::MAX, |(at, _)| *at);
        // At least every EVENTS_NS: the switches' events (every XOFF and XON of a congested fabric, some
        // 170,000 per virtual ms in the 128-host shuffle) wait in the simulation until collected.
        let now = f.sim.now().as_ns();
        let t = next_todo.min(next_sample).min(next_point).min(end).min(now.max(ORIGIN_NS) + EVENTS_NS);
        super::parallel::run_until(&mut f.sim, Instant::from_ns(t));
        collect_events(&mut f, &mut events, &mut firsts);
        while let Some((_, what)) = todo.next_if(|(at, _)| *at <= t) {
            match what {
                Todo::Storm { host, priorities, interval_ns } => {
                    let id = f.hosts[&host];
                    f.sim.nic(id).set_storm(priorities, Nanos::from_ns(interval_ns));
                }
                Todo::RxStuck { host, stuck } => {
                    let id = f.hosts[&host];
                    f.sim.nic(id).set_rx_stuck(stuck, Instant::from_ns(t));
                }
                Todo::Action(i) => {
                    records.push(act(&mut f, &mut configs, scenario, i, t)?);
                    if matches!(scenario.actions[i].kind, ActionKind::Apply { .. }) {
                        let running: Vec<_> = scenario
                            .topology
                            .switches
                            .iter()
                            .map(|s| f.sim.switch(f.switches[&s.name]).config().clone())
                            .collect();
                        let analysis = crate::deadlock::check_with(
                            &scenario.topology,
                            &running.iter().collect::<Vec<_>>(),
                        );
                        if let Some(w) = analysis.warning() {
                            let a = &scenario.actions[i];
                            warnings.push(format!("after {} ({} ms): {w}", a.step, a.at_ms));
                        }
                    }
                }
                Todo::FlowSnapshot(ms) => {
                    let bytes = (0..scenario.topology.traffic.len())
                        .map(|i| {
                            let flow = &scenario.topology.traffic[i];
                            let nic = f.sim.nic(f.hosts[&flow.from]);
                            let stats = nic.flow_stats(i as u32 + 1);
                            stats.map_or(FlowBytes::default(), |s| FlowBytes {
                                sent_bytes: s.sent_bytes,
                                acked_bytes: s.acked_bytes,
                                paused_ns: nic.pause_ns_at(s.priority, Instant::from_ns(t)),
                            })
                        })
                        .collect();
                    flow_snapshots.insert(ms, bytes);
                }
            }
        }
        if t == next_point {
            recorder.record(&mut f, scenario, &mut series, t - ORIGIN_NS.min(t));
            observe(&mut f, Moment::Sample(t - ORIGIN_NS.min(t)));
            next_point += options.resolution_ns;
        }
        if t == next_sample {
            for (name, &id) in &f.switches {
                let c = virtual_counters(f.sim.switch(id), t);
                samples.entry(name.clone()).or_default().push(c);
            }
            next_sample += sample_ns;
        }
        if !progress(t - ORIGIN_NS, end - ORIGIN_NS) {
            partial = t < end;
            break;
        }
        if t >= end {
            break;
        }
    }
    let now = f.sim.now().as_ns(); // the runner's clock is the scenario's integer nanoseconds
    observe(&mut f, Moment::End(now.saturating_sub(ORIGIN_NS)));
    let mut finals = BTreeMap::new();
    let mut tables = BTreeMap::new();
    let mut paused_at_end: BTreeMap<String, BTreeMap<String, u8>> = BTreeMap::new();
    for (name, &id) in &f.switches {
        let switch = f.sim.switch(id);
        finals.insert(name.clone(), virtual_counters(switch, now));
        tables.insert(name.clone(), (fdb_to_proto(switch), neighbors_to_proto(switch)));
        let paused = paused_at_end.entry(name.clone()).or_default();
        for (p, port) in switch.config().ports.iter().enumerate() {
            let mask = switch.pfc_state(PortId::new(p)).map_or(0, |(_, paused)| paused);
            paused.insert(port.name.clone(), mask);
        }
    }
    let started = RunStart { monotonic_ns: ORIGIN_NS, unix_ns: ORIGIN_NS };
    let mut reports = BTreeMap::new();
    for (name, &id) in &f.hosts {
        let nic = f.sim.nic(id);
        reports.insert(name.clone(), Report { start: Some(started), ..Report::from(nic.report()) });
    }
    let observed = Observed {
        finals: &finals,
        tables: &tables,
        samples: &samples,
        window: (ORIGIN_NS, ORIGIN_NS + duration_ns),
        started,
        events: &events,
        sample_interval_ms: sample_ns as f64 / 1e6,
        paused_at_end: Some(&paused_at_end),
        flow_snapshots: &flow_snapshots,
        firsts: &firsts,
    };
    let lab = format!("simulation, seed {}", options.seed);
    let hosts: Vec<_> = scenario.topology.hosts.iter().collect();
    let pingmesh = scenario
        .pingmesh
        .as_ref()
        .map(|spec| crate::pingmesh::PingmeshMatrix::from_reports(&lab, spec, &hosts, &reports));
    let estats =
        crate::pingmesh::estats::Estats::build(&lab, &scenario.topology, &reports, pingmesh.as_ref());
    let mut report = evaluate(scenario, &lab, &options.out, &observed, &reports, records);
    report.virtual_time = true;
    report.partial = partial || options.until_ns.is_some_and(|u| u < duration_ns);
    let captures = captures
        .into_iter()
        .map(|(name, id)| {
            let (bytes, frames) = f.sim.capture_bytes(id);
            (name, bytes.to_vec(), frames)
        })
        .collect();
    warnings.dedup();
    Ok(Outcome {
        report,
        series,
        captures,
        events: f.sim.wakeups,
        threads,
        virtual_ns: now.saturating_sub(ORIGIN_NS),
        warnings,
        pingmesh,
        estats,
    })
}

/// `node:port` → both ends of its link, and the capture's file name.
fn capture_ends(f: &mut Fabric, spec: &str) -> anyhow::Result<(Vec<Endpoint>, String)> {
    let Some((node, port)) = spec.split_once(':') else { bail!("--pcap {spec}: expected NODE:PORT") };
    let end = crate::lab::topology::End { node: node.into(), port: port.into() };
    let Some(ep) = f.endpoint(&end) else { bail!("--pcap {spec}: no such node and port") };
    let Some(other) = f.sim.link(ep).map(|l| l.to) else { bail!("--pcap {spec}: the port has no link") };
    let file: String = spec
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '-' })
        .collect();
    Ok((vec![ep, other], format!("{file}.pcap")))
}

/// A switch's counters at virtual time `at_ns`, dated like its events: virtual time has no wall clock, so
/// the wall time is the virtual time (not this process's clock, which would make runs differ).
fn virtual_counters(switch: &lossless_dataplane::model::Switch, at_ns: u64) -> pb::GetCountersResponse {
    let mut c = CountersSnapshot::take(switch, at_ns).to_proto();
    c.wall_time_unix_ns = at_ns;
    c
}

/// The switches' PFC watchdog events, as a lab's Subscribe stream gives them (the report keeps storms), and
/// each switch's first XOFF and first CE marks. Only those are converted to the API's form (which formats a
/// message): a congested fabric raises and clears XOFF all the time (every pause of a 128-host Clos
/// shuffle), and converting every XON and every later XOFF was a twentieth of such a run.
fn collect_events(f: &mut Fabric, out: &mut Vec<pb::SwitchEvent>, firsts: &mut BTreeMap<String, Firsts>) {
    for (at, node, event) in std::mem::take(&mut f.sim.events) {
        let at_ns = at.as_ns();
        if !matches!(f.sim.device(node), Device::Switch(_)) {
            continue;
        }
        let name = f.switches.iter().find(|(_, id)| **id == node).map(|(n, _)| n);
        if let Some(name) = name
            && !firsts.contains_key(name)
        {
            firsts.insert(name.clone(), Firsts::default());
        }
        let kept = match &event {
            Event::PfcXoff { .. } => name.is_some_and(|n| firsts[n].xoff.is_none()),
            Event::EcnFirstMark { .. } | Event::PfcStormDetected { .. } | Event::PfcStormRestored { .. } => {
                true
            }
            _ => false,
        };
        if !kept {
            continue;
        }
        let mut e = event_to_proto(&TimedEvent { at_ns, event });
        if let Some(name) = name {
            firsts.entry(name.clone()).or_default().note(&e);
        }
        if e.kind.starts_with("pfc_storm") {
            e.message.clear();
            e.wall_time_unix_ns = at_ns; // virtual time has no wall clock
            out.push(e);
        }
    }
}

/// Carries out one scenario action at `t`, as `swctl lab run` does over gRPC.
fn act(
    f: &mut Fabric,
    configs: &mut BTreeMap<String, ConfigDb>,
    scenario: &Scenario,
    index: usize,
    t: u64,
) -> anyhow::Result<ActionRecord> {
    let a = &scenario.actions[index];
    let (action, result) = match &a.kind {
        ActionKind::FlushFdb { switch, port } => {
            let id = f.switches[switch];
            let sw = f.sim.switch(id);
            let port_id = port.as_deref().and_then(|p| sw.port_id(p));
            let n = sw.flush_fdb(None, port_id);
            (
                format!("flush-fdb {switch}{}", port.as_ref().map(|p| format!(" {p}")).unwrap_or_default()),
                format!("{n} entr{} flushed", if n == 1 { "y" } else { "ies" }),
            )
        }
        ActionKind::LinkState { end, up } => {
            let Some(ep) = f.endpoint(end) else { bail!("{}: link-down: no port {end}", a.step) };
            if !f.sim.set_link_up(ep, *up) {
                bail!("{}: link-down: {end} has no link", a.step);
            }
            (format!("link {end} {}", if *up { "up" } else { "down" }), "done".into())
        }
        ActionKind::StopHost { host } => {
            f.sim.stop(f.hosts[host]);
            (format!("stop-host {host}"), "host stopped".into())
        }
        ActionKind::Apply { switch, config, replace, source } => {
            let running = configs.get_mut(switch).expect("every switch has a configuration");
            let mut db = if *replace {
                config.clone()
            } else {
                let mut db = running.clone();
                merge(&mut db, config);
                db
            };
            resolve_switch_config(&mut db).map_err(|issues| {
                anyhow::anyhow!(
                    "{} (at {} ms): apply to {switch} ({source}): {}",
                    a.step,
                    a.at_ms,
                    issues.join("; ")
                )
            })?;
            let id = f.switches[switch];
            f.sim.apply(id, &db).map_err(|e| {
                anyhow::anyhow!("{} (at {} ms): apply to {switch} ({source}): {e}", a.step, a.at_ms)
            })?;
            *running = db;
            (
                format!("apply {source} to {switch}{}", if *replace { " (replace)" } else { " (merge)" }),
                format!("generation {}", f.sim.switch(id).generation()),
            )
        }
    };
    let done_ms = (t - ORIGIN_NS) / 1_000_000;
    Ok(ActionRecord { step: a.step.clone(), at_ms: a.at_ms, done_ms, action, result })
}

/// Samples the time series; remembers what per-interval rates need. A sample of the 128-host Clos records
/// some 80,000 values, and looking each one up by its key (strings compared down a B-tree) cost more than
/// simulating the 100 µs between samples: each series is found by an id kept here instead, interned in
/// the [`Series`] at its first non-zero value (most never have one, and would only take memory).
#[derive(Default)]
struct Recorder {
    /// Per flow: (sent bytes, acked bytes) at the previous sample.
    flows: Vec<Option<(u64, u64)>>,
    last_t: Option<u64>,
    /// Per switch (in `Fabric::switches` order): the configuration generation its ports were listed
    /// for, and their series.
    switches: Vec<(u64, Vec<PortSeries>)>,
    /// Per host (in `Fabric::hosts` order): its `pfc_paused` series per priority.
    hosts: Vec<[Lazy; 8]>,
    /// Per flow of the scenario: its sender and series.
    flow_series: Vec<FlowSeries>,
}

/// A series' id once it has started.
type Lazy = Option<SeriesId>;

/// The series of a switch port, per queue, PG or priority (`[series][index]`, series as in `PORT_SERIES`).
struct PortSeries {
    port: String,
    ids: [[Lazy; 8]; PORT_SERIES.len()],
}

const PORT_SERIES: [&str; 10] = [
    "queue_frames",
    "queue_cells",
    "queue_bytes",
    "pg_bytes",
    "pg_headroom_bytes",
    "pg_xoff_bytes",
    "pg_xon_bytes",
    "pfc_xoff_sent",
    "pfc_paused",
    "ecn_marked",
];
const QUEUE_FRAMES: usize = 0;
const QUEUE_CELLS: usize = 1;
const QUEUE_BYTES: usize = 2;
const PG_BYTES: usize = 3;
const PG_HEADROOM_BYTES: usize = 4;
const PG_XOFF_BYTES: usize = 5;
const PG_XON_BYTES: usize = 6;
const PFC_XOFF_SENT: usize = 7;
const PFC_PAUSED: usize = 8;
const ECN_MARKED: usize = 9;

impl PortSeries {
    /// Records series `which` (of `PORT_SERIES`), index `i`, of this port of switch `node`.
    fn record(&mut self, series: &mut Series, node: &str, which: usize, i: usize, t: u64, value: f64) {
        let port = &self.port;
        series.record_lazy(&mut self.ids[which][i], || key(PORT_SERIES[which], node, port, i), t, value);
    }

    fn started(&self, series: &Series, which: usize, i: usize) -> bool {
        self.ids[which][i].is_some_and(|id| series.has_started(id))
    }
}

/// The series of one flow, and the node that sends it.
struct FlowSeries {
    host: lossless_dataplane::sim::NodeId,
    /// `flow_tx_mbps`, `flow_acked_mbps`, `flow_dcqcn_rate_mbps`, `flow_cnps`.
    ids: [Lazy; 4],
}

const FLOW_SERIES: [&str; 4] = ["flow_tx_mbps", "flow_acked_mbps", "flow_dcqcn_rate_mbps", "flow_cnps"];

fn key(series: &'static str, node: &str, port: &str, index: usize) -> Key {
    Key { series, node: node.to_owned(), port: port.to_owned(), index: index as u8 }
}

impl Recorder {
    fn record(&mut self, f: &mut Fabric, scenario: &Scenario, series: &mut Series, t: u64) {
        if self.switches.len() != f.switches.len() {
            self.switches = f.switches.keys().map(|_| (u64::MAX, Vec::new())).collect();
        }
        for ((name, &id), (generation, ports)) in f.switches.iter().zip(&mut self.switches) {
            let sw = f.sim.switch(id);
            // An apply may have changed the ports: their series are found again, by name.
            if *generation != sw.generation() {
                *generation = sw.generation();
                *ports = sw
                    .config()
                    .ports
                    .iter()
                    .map(|p| PortSeries { port: p.name.clone(), ids: [[None; 8]; PORT_SERIES.len()] })
                    .collect();
            }
            let cell = sw.mmu().cell_bytes();
            for (p, port_series) in ports.iter_mut().enumerate() {
                let pid = PortId::new(p);
                for q in 0..8u8 {
                    let i = usize::from(q);
                    let mut rec =
                        |which: usize, value: f64| port_series.record(series, name, which, i, t, value);
                    let cells = sw.mmu().queue_cells(pid, q);
                    rec(QUEUE_FRAMES, sw.queue_depth(pid, q) as f64);
                    rec(QUEUE_CELLS, cells as f64);
                    rec(QUEUE_BYTES, (cells * cell) as f64);
                    let occupancy = sw.mmu().pg_occupancy(pid, q);
                    let used = occupancy.reserved_bytes + occupancy.shared_bytes + occupancy.headroom_bytes;
                    rec(PG_BYTES, used as f64);
                    rec(PG_HEADROOM_BYTES, occupancy.headroom_bytes as f64);
                    // Where the PG trips and releases, once it has held something.
                    let tracked = port_series.started(series, PG_XOFF_BYTES, i);
                    if (used > 0 || tracked)
                        && let Some(th) = sw.mmu().pg_thresholds(pid, q)
                    {
                        port_series.record(series, name, PG_XOFF_BYTES, i, t, th.xoff_bytes as f64);
                        port_series.record(series, name, PG_XON_BYTES, i, t, th.xon_bytes as f64);
                    }
                }
                if let Some((asserted, paused)) = sw.pfc_state(pid) {
                    for prio in 0..8usize {
                        let bit = |m: u8| f64::from((m >> prio) & 1);
                        port_series.record(series, name, PFC_XOFF_SENT, prio, t, bit(asserted));
                        port_series.record(series, name, PFC_PAUSED, prio, t, bit(paused));
                    }
                }
                if let Some(c) = sw.port_counters(pid) {
                    for (q, qc) in c.queues.iter().enumerate() {
                        port_series.record(series, name, ECN_MARKED, q, t, qc.ecn_marked_packets as f64);
                    }
                }
            }
        }
        if self.hosts.len() != f.hosts.len() {
            self.hosts = vec![[None; 8]; f.hosts.len()];
        }
        for ((name, &id), ids) in f.hosts.iter().zip(&mut self.hosts) {
            let paused = f.sim.nic(id).paused_priorities();
            for (prio, slot) in ids.iter_mut().enumerate() {
                let key = || key("pfc_paused", name, "eth", prio);
                series.record_lazy(slot, key, t, f64::from((paused >> prio) & 1));
            }
        }
        let traffic = &scenario.topology.traffic;
        if self.flow_series.len() != traffic.len() {
            self.flows = vec![None; traffic.len()];
            self.flow_series =
                traffic.iter().map(|flow| FlowSeries { host: f.hosts[&flow.from], ids: [None; 4] }).collect();
        }
        let interval = self.last_t.map(|l| t.saturating_sub(l)).filter(|&i| i > 0);
        // Flow i is flow id i + 1 of its sender (`fabric::build`); a NIC's flows are read in one pass.
        for &host in f.hosts.values() {
            let nic = f.sim.nic(host);
            for sample in nic.flow_samples() {
                let Some(i) = (sample.id as usize).checked_sub(1) else { continue };
                let Some(FlowSeries { host: sender, ids }) = self.flow_series.get_mut(i) else { continue };
                if *sender != host {
                    continue;
                }
                debug_assert!(nic.flow_stats(sample.id).is_some_and(|s| {
                    (s.sent_bytes, s.acked_bytes, s.cnps_received)
                        == (sample.sent_bytes, sample.acked_bytes, sample.cnps_received)
                        && s.dcqcn.map(|d| d.current_rate_mbps) == sample.dcqcn_rate_mbps
                }));
                let flow = &traffic[i];
                let mut rec = |which: usize, value: f64| {
                    let key = || {
                        key(FLOW_SERIES[which], &flow.from, &format!("flow{i}"), usize::from(flow.priority))
                    };
                    series.record_lazy(&mut ids[which], key, t, value);
                };
                let (sent, acked) =
                    self.flows[i].replace((sample.sent_bytes, sample.acked_bytes)).unwrap_or_default();
                if let Some(ns) = interval {
                    let mbps = |bytes: u64| bytes as f64 * 8.0 * 1e3 / ns as f64;
                    rec(0, mbps(sample.sent_bytes - sent));
                    rec(1, mbps(sample.acked_bytes - acked));
                }
                rec(2, sample.dcqcn_rate_mbps.unwrap_or(0.0));
                rec(3, sample.cnps_received as f64);
            }
        }
        self.last_t = Some(t);
    }
}
