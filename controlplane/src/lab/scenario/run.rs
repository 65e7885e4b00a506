//! Running a scenario: the lab up, counters and events subscribed, the timeline's actions carried out on
//! time, the hosts' reports and the switches' final state collected, then the lab down.

use super::report::{ActionRecord, Observed, evaluate};
use super::timed::{Firsts, FlowSnapshots};
use super::{Action, ActionKind, SAMPLE_INTERVAL_MS, Scenario};
use crate::lab::switchd::push_config;
use crate::lab::topology::MAX_LAB_NAME;
use crate::lab::up::{self, Lab, UpOptions};
use crate::lab::{check_interrupted, interrupted};
use anyhow::{Context, bail};
use lossless_dataplane::clock::{self, WallClock};
use lossless_dataplane::model::config::ConfigDb;
use lossless_dataplane::rocehost::report::{Report, RunStart};
use lossless_dataplane::server;
use lossless_proto::v1 as pb;
use std::collections::BTreeMap;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Counter snapshots per switch, each stamped by the switch.
type Samples = Arc<Mutex<BTreeMap<String, Vec<pb::GetCountersResponse>>>>;
type Events = Arc<Mutex<Vec<pb::SwitchEvent>>>;
type FirstsBySwitch = Arc<Mutex<BTreeMap<String, Firsts>>>;

async fn subscribe(
    switch: String,
    endpoint: String,
    samples: Samples,
    events: Events,
    firsts: FirstsBySwitch,
) {
    let Ok(mut client) = server::connect(&endpoint).await else { return };
    let request = pb::SubscribeRequest { counters_interval_ms: SAMPLE_INTERVAL_MS, events: true };
    let Ok(stream) = client.subscribe(request).await else { return };
    let mut stream = stream.into_inner();
    while let Ok(Some(item)) = stream.message().await {
        match item.item {
            Some(pb::subscribe_response::Item::Counters(c)) => {
                samples.lock().unwrap_or_else(|e| e.into_inner()).entry(switch.clone()).or_default().push(c)
            }
            Some(pb::subscribe_response::Item::Event(mut e)) => {
                e.message.clear();
                firsts.lock().unwrap_or_else(|e| e.into_inner()).entry(switch.clone()).or_default().note(&e);
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
        ActionKind::LinkState { end, .. } => {
            bail!("link-down {end}: only `swctl sim run` takes a link down (a lab has no step for it yet)")
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
            crate::lab::topology::resolve_switch_config(&mut db)
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
pub(crate) fn merge(db: &mut ConfigDb, patch: &ConfigDb) {
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
    for s in &scenario.rx_stuck {
        let args = host_args.entry(s.host.clone()).or_default();
        args.extend(["--rx-stuck-from".into(), format!("{}", s.start_ms as f64 / 1000.0)]);
        if let Some(stop) = s.stop_ms {
            args.extend(["--rx-stuck-until".into(), format!("{}", stop as f64 / 1000.0)]);
        }
    }
    if let Some(spec) = &scenario.pingmesh {
        let hosts: Vec<_> = scenario.topology.hosts.iter().collect();
        for h in &hosts {
            let args = host_args.entry(h.name.clone()).or_default();
            args.extend(crate::lab::pingmesh::prober_args(h, &hosts, spec));
        }
    }
    let seconds = scenario.duration_ms.div_ceil(1000).max(1) as u32;
    let name = lab_name(&scenario.name);
    let up =
        UpOptions { name: Some(name.clone()), traffic_seconds: Some(seconds), host_args, metrics_port: None };
    let samples: Samples = Arc::default();
    let events: Events = Arc::default();
    let firsts: FirstsBySwitch = Arc::default();
    let mut lab = up::up(&scenario.topology, &up, tokio)?;
    let endpoints: BTreeMap<String, String> =
        lab.state.switches.iter().map(|s| (s.name.clone(), s.endpoint.clone())).collect();
    let tasks: Vec<_> = endpoints
        .iter()
        .map(|(s, e)| {
            tokio.spawn(subscribe(s.clone(), e.clone(), samples.clone(), events.clone(), firsts.clone()))
        })
        .collect();
    let start = Instant::now();
    // The same instant on the switches' and hosts' clock (Instant is CLOCK_MONOTONIC on Linux, but does
    // not expose its value).
    let started = RunStart::at(clock::monotonic_ns(), &WallClock::process());
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
        let report =
            Report::load(&h.report).with_context(|| format!("{}: rocehost wrote no report", h.name))?;
        reports.insert(h.name.clone(), report);
    }
    let samples = std::mem::take(&mut *samples.lock().unwrap_or_else(|e| e.into_inner()));
    // Queue depths are averaged over the traffic's own window. A sender's flows and `--duration` count from
    // its rocehost's start, which is before the lab is up (`started`: every host ready) by the time the
    // later hosts take to start, up to seconds in a debug build on a busy machine; a window from `started`
    // would average in the queue drained after the senders stopped.
    let traffic_from = lab
        .state
        .hosts
        .iter()
        .filter(|h| !h.flows.is_empty())
        .filter_map(|h| reports.get(&h.name)?.start)
        .map(|s| s.monotonic_ns)
        .min()
        .unwrap_or(started.monotonic_ns);
    let window = (traffic_from, traffic_from + scenario.duration_ms * 1_000_000);
    let events = std::mem::take(&mut *events.lock().unwrap_or_else(|e| e.into_inner()));
    let firsts = std::mem::take(&mut *firsts.lock().unwrap_or_else(|e| e.into_inner()));
    let observed = Observed {
        finals: &finals,
        tables: &tables,
        samples: &samples,
        window,
        started,
        events: &events,
        sample_interval_ms: f64::from(SAMPLE_INTERVAL_MS),
        paused_at_end: None,
        // rocehost reports its flows at the end only.
        flow_snapshots: &FlowSnapshots::new(),
        firsts: &firsts,
    };
    let report = evaluate(scenario, &lab.state.name, &lab.dir, &observed, &reports, records);
    std::fs::write(lab.dir.join("scenario.json"), serde_json::to_vec_pretty(&report)?)?;
    let source = format!("lab {}", lab.state.name);
    let hosts: Vec<_> = scenario.topology.hosts.iter().collect();
    let matrix = scenario
        .pingmesh
        .as_ref()
        .map(|spec| crate::pingmesh::PingmeshMatrix::from_reports(&source, spec, &hosts, &reports));
    if let Some(m) = &matrix {
        m.write(&lab.dir)?;
    }
    let estats =
        crate::pingmesh::estats::Estats::build(&source, &scenario.topology, &reports, matrix.as_ref());
    std::fs::write(lab.dir.join("estats.json"), serde_json::to_vec_pretty(&estats)?)?;
    let down = lab.down(true);
    if !down.problems.is_empty() {
        eprintln!("swctl: lab {}: {}", report.lab, down.summary());
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", report.describe());
        if let Some(m) = &matrix {
            print!("{}", m.describe());
        }
    }
    Ok(if report.ok { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(crate::lab::topology::check_lab_name(&name).is_ok(), "{name}");
    }
}
