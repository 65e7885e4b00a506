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
//!
//! Here: the run ([`run`]), how the traffic crosses the switch (`plan`), the summary and its claims
//! ([`summary`]) and what is printed and plotted (`text`).

mod plan;
pub mod summary;
mod text;

use super::down;
use super::state::{self, LabState};
use super::topology::Topology;
use super::up::{self, Lab, UpOptions};
use super::{check_interrupted, interrupted};
use anyhow::{Context, bail};
use lossless_dataplane::rocehost::report::Report;
use lossless_dataplane::server;
use lossless_proto::v1 as pb;
use plan::{Plan, class_queues, describe_plan, pfc_tx_sum, plan, port, queue_sum};
use std::collections::BTreeMap;
use std::io::Write as _;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use summary::summarize;
use text::{describe_summary, plot};

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
        let report =
            Report::load(&h.report).with_context(|| format!("{}: rocehost wrote no report", h.name))?;
        reports.insert(h.name.clone(), report);
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
