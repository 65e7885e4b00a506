//! `swctl lab run FILE`: a scenario is a topology (inline, or `topology: path`) plus a timeline of steps
//! (times in ms after the hosts are up) and expectations checked on the results.
//!
//! ```yaml
//! topology: ../topologies/demo.yaml      # or an inline topology mapping
//! duration-ms: 4000                      # senders' --duration
//! steps:
//!   - { at: 0, traffic: { from: h1, to: h3, priority: 3, dscp: 3, rate-mbps: 300 } }
//!   - { at: 2000, storm: { host: h2, priorities: [3], interval-us: 100, stop: 3500 } }
//!   - { at: 1000, flush-fdb: { switch: sw1, port: Ethernet8 } }
//! expect:
//!   - pfcwd_detected: { switch: sw1, port: Ethernet4, queue: 3, within_ms: 500 }
//!   - goodput_mbps_at_least: { flow: 0, value: 200 }
//!   - psn_gaps: { flow: 0, max: 0 }
//!   - drop_reason: { switch: sw1, reason: FDB_MISS_LOSSLESS, min: 1 }
//!   - flooded_frames: { switch: sw1, port: Ethernet4, queue: 3, min: 1 }
//! ```
//!
//! The storm runs in the host's own rocehost (`--storm`, `--storm-from`, `--storm-until`). Storm start and
//! detection are measured on the switch's clock: the first counter sample (every
//! [`SAMPLE_INTERVAL_MS`]) where the port's PFC RX on a storm priority grew, and the `pfc_storm_detected`
//! event of the Subscribe stream. `apply` steps are not implemented yet.

use super::run::{self, UpOptions};
use super::topology::{RelativeTo, Topology};
use super::{check_interrupted, interrupted};
use anyhow::{Context, bail};
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
    pub flushes: Vec<(u64, String, Option<String>)>,
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
pub enum Expect {
    PfcwdDetected { switch: String, port: String, queue: u32, within_ms: u64 },
    Goodput { flow: usize, value: f64 },
    PsnGaps { flow: usize, max: u64 },
    DropReason { switch: String, reason: String, min: Option<u64>, max: Option<u64> },
    Flooded { switch: String, port: String, queue: u32, min: Option<u64>, max: Option<u64> },
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
fn opt_u64(v: &Yaml, key: &str) -> Option<u64> {
    v.get(key).and_then(Yaml::as_u64)
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
        let mut flushes = Vec::new();
        let steps = doc.get("steps").and_then(Yaml::as_sequence).cloned().unwrap_or_default();
        for (i, step) in steps.iter().enumerate() {
            let what = format!("{source}: steps[{i}]");
            let at = opt_u64(step, "at").unwrap_or(0);
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
                let stop_ms = opt_u64(s, "stop");
                if stop_ms.is_some_and(|s| s <= at) {
                    bail!("{what}: stop must be after at");
                }
                storms.push(Storm {
                    host,
                    priorities,
                    interval_us: opt_u64(s, "interval-us").unwrap_or(100).max(1),
                    start_ms: at,
                    stop_ms,
                });
            } else if let Some(f) = step.get("flush-fdb") {
                flushes.push((
                    at,
                    str_of(f, "switch", &what)?,
                    f.get("port").and_then(Yaml::as_str).map(str::to_owned),
                ));
            } else if step.get("apply").is_some() {
                bail!("{what}: `apply` steps are not implemented yet");
            } else {
                bail!("{what}: expected traffic, storm or flush-fdb");
            }
        }
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
        let mut expect = Vec::new();
        for (i, e) in
            doc.get("expect").and_then(Yaml::as_sequence).cloned().unwrap_or_default().iter().enumerate()
        {
            let what = format!("{source}: expect[{i}]");
            let (key, v) = e
                .as_mapping()
                .and_then(|m| m.iter().next())
                .and_then(|(k, v)| Some((k.as_str()?.to_owned(), v.clone())))
                .with_context(|| format!("{what}: a one-key mapping"))?;
            let flow = |v: &Yaml| -> anyhow::Result<usize> {
                let n = u64_of(v, "flow", &what)? as usize;
                if n >= topology.traffic.len() {
                    bail!("{what}: flow {n}: there are {} flows", topology.traffic.len());
                }
                Ok(n)
            };
            expect.push(match key.as_str() {
                "pfcwd_detected" => Expect::PfcwdDetected {
                    switch: str_of(&v, "switch", &what)?,
                    port: str_of(&v, "port", &what)?,
                    queue: u64_of(&v, "queue", &what)? as u32,
                    within_ms: u64_of(&v, "within_ms", &what)?,
                },
                "goodput_mbps_at_least" => Expect::Goodput {
                    flow: flow(&v)?,
                    value: field(&v, "value", &what)?.as_f64().with_context(|| format!("{what}: value"))?,
                },
                "psn_gaps" => Expect::PsnGaps { flow: flow(&v)?, max: u64_of(&v, "max", &what)? },
                "drop_reason" => Expect::DropReason {
                    switch: str_of(&v, "switch", &what)?,
                    reason: str_of(&v, "reason", &what)?,
                    min: opt_u64(&v, "min"),
                    max: opt_u64(&v, "max"),
                },
                "flooded_frames" => Expect::Flooded {
                    switch: str_of(&v, "switch", &what)?,
                    port: str_of(&v, "port", &what)?,
                    queue: u64_of(&v, "queue", &what)? as u32,
                    min: opt_u64(&v, "min"),
                    max: opt_u64(&v, "max"),
                },
                other => bail!("{what}: unknown expectation {other}"),
            });
        }
        for e in &expect {
            let sw = match e {
                Expect::PfcwdDetected { switch, .. }
                | Expect::DropReason { switch, .. }
                | Expect::Flooded { switch, .. } => switch,
                _ => continue,
            };
            if topology.switch(sw).is_none() {
                bail!("{source}: expect: unknown switch {sw}");
            }
        }
        Ok(Scenario { name, topology, duration_ms, storms, flushes, expect })
    }
}

#[derive(Debug, Serialize)]
pub struct Outcome {
    pub expectation: String,
    pub holds: bool,
    pub evidence: String,
}

#[derive(Debug, Serialize)]
pub struct ScenarioReport {
    pub scenario: String,
    pub lab: String,
    pub run_dir: PathBuf,
    pub flows: Vec<Value>,
    pub storms: Vec<Value>,
    pub events: Vec<Value>,
    pub expectations: Vec<Outcome>,
    pub ok: bool,
}

type Samples = Arc<Mutex<BTreeMap<String, Vec<pb::GetCountersResponse>>>>;
type Events = Arc<Mutex<Vec<pb::SwitchEvent>>>;

async fn subscribe(switch: String, endpoint: String, samples: Samples, events: Events) {
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
                if e.kind.starts_with("pfc_storm") {
                    events.lock().unwrap_or_else(|e| e.into_inner()).push(e);
                }
            }
            None => {}
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
    let name = format!("{}-{:x}", scenario.topology.name, std::process::id());
    let up = UpOptions { name: Some(name.clone()), traffic_seconds: Some(seconds), host_args };
    let samples: Samples = Arc::default();
    let events: Events = Arc::default();
    let mut lab = run::up(&scenario.topology, &up, tokio)?;
    let endpoints: BTreeMap<String, String> =
        lab.state.switches.iter().map(|s| (s.name.clone(), s.endpoint.clone())).collect();
    let tasks: Vec<_> = endpoints
        .iter()
        .map(|(s, e)| tokio.spawn(subscribe(s.clone(), e.clone(), samples.clone(), events.clone())))
        .collect();
    let start = Instant::now();
    let result = (|| -> anyhow::Result<()> {
        let senders: Vec<String> =
            lab.state.hosts.iter().filter(|h| !h.flows.is_empty()).map(|h| h.name.clone()).collect();
        let mut flushes = scenario.flushes.clone();
        flushes.sort_by_key(|f| f.0);
        let mut flushes = flushes.into_iter().peekable();
        let deadline = start + Duration::from_millis(scenario.duration_ms) + Duration::from_secs(30);
        loop {
            check_interrupted()?;
            while let Some((_, sw, port)) = flushes.next_if(|f| start.elapsed() >= Duration::from_millis(f.0))
            {
                let endpoint =
                    endpoints.get(&sw).with_context(|| format!("flush-fdb: unknown switch {sw}"))?;
                tokio.block_on(async {
                    let mut c = server::connect(endpoint).await?;
                    c.flush_fdb(pb::FlushFdbRequest { vlan: None, port }).await?;
                    anyhow::Ok(())
                })?;
            }
            let elapsed = start.elapsed() >= Duration::from_millis(scenario.duration_ms);
            if elapsed && senders.iter().all(|s| !lab.running(s)) {
                break;
            }
            if Instant::now() > deadline {
                bail!("the senders did not stop within 30 s after the scenario's end");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
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
    for (sw, endpoint) in &endpoints {
        let c = tokio.block_on(async {
            let mut c = server::connect(endpoint).await?;
            anyhow::Ok(c.get_counters(pb::GetCountersRequest {}).await?.into_inner())
        })?;
        finals.insert(sw.clone(), c);
    }
    let mut reports = BTreeMap::new();
    for h in &lab.state.hosts {
        let text = std::fs::read_to_string(&h.report)
            .with_context(|| format!("{}: rocehost wrote no report ({})", h.name, h.report.display()))?;
        reports.insert(h.name.clone(), serde_json::from_str::<Value>(&text)?);
    }
    let samples = std::mem::take(&mut *samples.lock().unwrap_or_else(|e| e.into_inner()));
    let events = std::mem::take(&mut *events.lock().unwrap_or_else(|e| e.into_inner()));
    let report = evaluate(scenario, &lab.state.name, &lab.dir, &finals, &samples, &events, &reports);
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

fn u64_at(v: &Value, key: &str) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or(0)
}

fn port<'a>(c: &'a pb::GetCountersResponse, name: &str) -> Option<&'a pb::PortCounters> {
    c.ports.iter().find(|p| p.name == name)
}

fn evaluate(
    scenario: &Scenario,
    lab: &str,
    dir: &Path,
    finals: &BTreeMap<String, pb::GetCountersResponse>,
    samples: &BTreeMap<String, Vec<pb::GetCountersResponse>>,
    events: &[pb::SwitchEvent],
    reports: &BTreeMap<String, Value>,
) -> ScenarioReport {
    let t = &scenario.topology;
    let flows: Vec<Value> = t
        .traffic
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let qp = u64::from(run::flow_qp(i));
            let src_ip = t.host(&f.from).map(|h| h.ip.to_string()).unwrap_or_default();
            let r = reports.get(&f.to).and_then(|r| r.get("receivers")).and_then(Value::as_array).and_then(
                |rs| {
                    rs.iter().find(|x| {
                        x.get("src_ip").and_then(Value::as_str) == Some(src_ip.as_str())
                            && u64_at(x, "qp") == qp
                    })
                },
            );
            serde_json::json!({
                "flow": i, "from": f.from, "to": f.to, "priority": f.priority, "dcqcn": f.dcqcn,
                "offered_mbps": f.rate_mbps, "start_ms": f.start_ms,
                "received_packets": r.map_or(0, |r| u64_at(r, "received_packets")),
                "psn_gaps": r.map_or(0, |r| u64_at(r, "psn_gaps")),
                "goodput_mbps": r.and_then(|r| r.get("goodput_mbps")).and_then(Value::as_f64).unwrap_or(0.0),
            })
        })
        .collect();
    // Storm start on the switch's clock: first sample where PFC RX on a storm priority grew at the port.
    let storm_start = |sw: &str, port_name: &str, prio: usize| -> Option<u64> {
        let s = samples.get(sw)?;
        let rx = |c: &pb::GetCountersResponse| {
            port(c, port_name).and_then(|p| p.pfc.get(prio)).map_or(0, |p| p.rx)
        };
        let first = s.first().map(rx)?;
        s.iter().find(|c| rx(c) > first).map(|c| c.timestamp_ns)
    };
    let mut storms = Vec::new();
    for s in &scenario.storms {
        let end = t.host(&s.host).and_then(|h| h.attached.clone());
        if let (Some(end), Some(&p)) = (end, s.priorities.first()) {
            storms.push(serde_json::json!({
                "host": s.host, "switch": end.node, "port": end.port, "priorities": s.priorities,
                "scheduled_ms": s.start_ms, "stop_ms": s.stop_ms,
                "first_seen_switch_ns": storm_start(&end.node, &end.port, usize::from(p)),
            }));
        }
    }
    let mut outcomes = Vec::new();
    for e in &scenario.expect {
        let (expectation, holds, evidence) = match e {
            Expect::PfcwdDetected { switch, port: p, queue, within_ms } => {
                let detected = events
                    .iter()
                    .find(|e| e.kind == "pfc_storm_detected" && &e.port == p && e.index == *queue);
                let start = storm_start(switch, p, *queue as usize);
                let counted = finals
                    .get(switch)
                    .and_then(|c| port(c, p))
                    .and_then(|c| c.pfc_wd.get(*queue as usize))
                    .map_or(0, |w| w.deadlock_detected);
                let (holds, evidence) = match (detected, start) {
                    (Some(d), Some(s)) => {
                        let ms = d.timestamp_ns.saturating_sub(s) as f64 / 1e6;
                        (
                            ms <= *within_ms as f64,
                            format!(
                                "storm first seen at the switch, detected {ms:.1} ms later (sampling {SAMPLE_INTERVAL_MS} ms); deadlock_detected {counted}"
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
            Expect::Goodput { flow, value } => {
                let g = flows[*flow]["goodput_mbps"].as_f64().unwrap_or(0.0);
                (format!("flow {flow} goodput ≥ {value} Mb/s"), g >= *value, format!("{g:.1} Mb/s"))
            }
            Expect::PsnGaps { flow, max } => {
                let g = flows[*flow]["psn_gaps"].as_u64().unwrap_or(0);
                (format!("flow {flow} PSN gaps ≤ {max}"), g <= *max, format!("{g} gap(s)"))
            }
            Expect::DropReason { switch, reason, min, max } => {
                let n: u64 = finals
                    .get(switch)
                    .map_or(0, |c| c.ports.iter().filter_map(|p| p.drop_reasons.get(reason)).sum());
                let holds = min.is_none_or(|m| n >= m) && max.is_none_or(|m| n <= m);
                (
                    format!(
                        "{switch} {reason} drops in [{}, {}]",
                        min.unwrap_or(0),
                        max.map_or("∞".into(), |m| m.to_string())
                    ),
                    holds,
                    format!("{n}"),
                )
            }
            Expect::Flooded { switch, port: p, queue, min, max } => {
                let n = finals
                    .get(switch)
                    .and_then(|c| port(c, p))
                    .and_then(|c| c.queues.get(*queue as usize))
                    .map_or(0, |q| q.packets);
                let holds = min.is_none_or(|m| n >= m) && max.is_none_or(|m| n <= m);
                (
                    format!(
                        "{switch} {p} queue {queue} frames in [{}, {}]",
                        min.unwrap_or(0),
                        max.map_or("∞".into(), |m| m.to_string())
                    ),
                    holds,
                    format!("{n}"),
                )
            }
        };
        outcomes.push(Outcome { expectation, holds, evidence });
    }
    let events = events
        .iter()
        .map(|e| serde_json::json!({"kind": e.kind, "port": e.port, "queue": e.index, "timestamp_ns": e.timestamp_ns}))
        .collect();
    let ok = outcomes.iter().all(|o| o.holds);
    ScenarioReport {
        scenario: scenario.name.clone(),
        lab: lab.to_owned(),
        run_dir: dir.to_path_buf(),
        flows,
        storms,
        events,
        expectations: outcomes,
        ok,
    }
}

fn describe(r: &ScenarioReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "Scenario {} (lab {}, run directory {})", r.scenario, r.lab, r.run_dir.display());
    for f in &r.flows {
        let _ = writeln!(
            out,
            "  flow {} {} -> {} prio {} dcqcn {}: offered {} Mb/s, goodput {:.1} Mb/s, {} packets, {} PSN gaps",
            f["flow"],
            f["from"].as_str().unwrap_or(""),
            f["to"].as_str().unwrap_or(""),
            f["priority"],
            f["dcqcn"],
            f["offered_mbps"],
            f["goodput_mbps"].as_f64().unwrap_or(0.0),
            f["received_packets"],
            f["psn_gaps"]
        );
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
    for o in &r.expectations {
        let _ =
            writeln!(out, "  [{}] {}: {}", if o.holds { "PASS" } else { "FAIL" }, o.expectation, o.evidence);
    }
    let _ = writeln!(out, "{}", if r.ok { "all expectations hold" } else { "SOME EXPECTATIONS FAILED" });
    out
}
