//! The soak loop: the plan's actions at their times, a sample every second (switchd's RSS, its counters
//! and the ledger's identities, storm outcomes, rocehosts still alive), then the drain and the final checks.

use crate::checks::{self, Drops, LedgerFigures, Traffic, WatchdogFigures, conservation, storms_of};
use crate::config::{POLL_MS, PORTS, RESTORATION_MS, switch_yaml};
use crate::lab::Lab;
use crate::schedule::{Action, STORM_LENGTH};
use crate::stop::check_stop;
use crate::summary::{HostTotals, StormOutcome, Summary};
use anyhow::{Context, bail};
use lossless_dataplane::model::config::ConfigDb;
use lossless_dataplane::server;
use lossless_proto::v1 as pb;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Hosts: 0 and 1 send lossless traffic, 2 lossy traffic, 3 receives it all.
pub const SENDERS: [usize; 3] = [0, 1, 2];
pub const RECEIVER: usize = 3;
/// Hosts a storm comes from: the lossless senders (their queue 3/4 holds the receiver's ACKs) and the
/// receiver (its queues hold the incast).
pub const STORMERS: [usize; 3] = [0, 1, 3];
/// How long after its storm ended a storm must show as detected and restored.
const STORM_SETTLE: Duration = Duration::from_millis(RESTORATION_MS as u64 + 2 * POLL_MS as u64 + 2500);
/// How long a gRPC call may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the queues may take to drain at the end.
const DRAIN_LIMIT: Duration = Duration::from_secs(30);

/// The flows of each host (`--flow` without `qp=`), rates scaled by `load`.
pub fn flows(i: usize, load: f64) -> Vec<String> {
    let to = |dscp: u8, rate: f64, dcqcn: &str| {
        format!(
            "dst={},dst-mac={},dscp={dscp},rate={},message=65536,dcqcn={dcqcn}",
            crate::config::host_ip(RECEIVER),
            crate::config::host_mac(RECEIVER),
            ((rate * load).round() as u32).max(1)
        )
    };
    match i {
        0 => vec![to(3, 400.0, "off")],
        1 => vec![to(3, 250.0, "on"), to(4, 150.0, "on")],
        2 => vec![to(8, 300.0, "off")],
        _ => Vec::new(),
    }
}

struct Storm {
    host: usize,
    at: Duration,
    before: [(u64, u64); 2],
    ended: Option<Instant>,
    outcome: Option<StormOutcome>,
}

pub struct Soak {
    pub lab: Lab,
    pub start: Instant,
    pub failures: Vec<String>,
    pub rss: Vec<(f64, u64)>,
    pub applies: u64,
    pub generation: u64,
    pub restarts: u64,
    storms: Vec<Storm>,
    pub conservation_checks: u64,
    pub hosts: HostTotals,
    pub events: Arc<Mutex<BTreeMap<String, u64>>>,
    pub last: Option<pb::GetCountersResponse>,
}

impl Soak {
    pub fn new(lab: Lab) -> Soak {
        let events = Arc::new(Mutex::new(BTreeMap::new()));
        let (mut client, sink) = (lab.client(), events.clone());
        lab.rt().spawn(async move {
            let request = pb::SubscribeRequest { counters_interval_ms: 0, events: true };
            let Ok(response) = client.subscribe(request).await else { return };
            let mut stream = response.into_inner();
            while let Ok(Some(m)) = stream.message().await {
                if let Some(pb::subscribe_response::Item::Event(e)) = m.item {
                    *sink.lock().unwrap().entry(e.kind).or_default() += 1;
                }
            }
        });
        Soak {
            lab,
            start: Instant::now(),
            failures: Vec::new(),
            rss: Vec::new(),
            applies: 0,
            generation: 1,
            restarts: 0,
            storms: Vec::new(),
            conservation_checks: 0,
            hosts: HostTotals::default(),
            events,
            last: None,
        }
    }

    fn fail(&mut self, what: String) {
        eprintln!("soak: FAIL at {:.1}s: {what}", self.start.elapsed().as_secs_f64());
        self.failures.push(what);
    }

    pub fn counters(&self) -> anyhow::Result<pb::GetCountersResponse> {
        let mut client = self.lab.client();
        let call = async {
            tokio::time::timeout(CALL_TIMEOUT, client.get_counters(pb::GetCountersRequest {})).await
        };
        Ok(self.lab.rt().block_on(call).context("GetCounters timed out")??.into_inner())
    }

    /// switchd's VmRSS in kB.
    fn rss_kb(&self) -> anyhow::Result<u64> {
        let pid = self.lab.switchd.pid();
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).context("switchd is gone")?;
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .context("no VmRSS")
    }

    /// One sample: RSS, counters (ledger identities), storms that settled, rocehosts still running.
    pub fn sample(&mut self) -> anyhow::Result<()> {
        let t = self.start.elapsed().as_secs_f64();
        self.rss.push((t, self.rss_kb()?));
        if let Some(status) = self.lab.switchd.try_wait()? {
            bail!("switchd exited ({status}){}", self.lab.switchd.log_tail());
        }
        let c = self.counters()?;
        self.conservation_checks += 1;
        if let Err(e) = conservation(&c) {
            self.fail(format!("ledger at {t:.1}s: {e}"));
        }
        let drops = Drops::of(&c);
        let before = self.last.as_ref().map(Drops::of).unwrap_or_default();
        if (drops.lossless_ingress, drops.lossless_egress)
            != (before.lossless_ingress, before.lossless_egress)
        {
            eprintln!(
                "soak: {t:.1}s: lossless drops now ingress {} egress {}, RX overruns {} (+{}) ({})\n      {}",
                drops.lossless_ingress,
                drops.lossless_egress,
                drops.rx_overrun,
                drops.rx_overrun.saturating_sub(before.rx_overrun),
                drops.lossless_where.join(", "),
                checks::lossless_state(&c)
            );
        }
        if let Some((i, status)) = self.lab.dead_host()? {
            bail!("rocehost h{i} exited on its own ({status}){}", self.lab.log_tail(&format!("h{i}")));
        }
        for n in self.lab.reap_storms()? {
            self.storms[n].ended = Some(Instant::now());
        }
        let mut settled = Vec::new();
        for (n, s) in self.storms.iter_mut().enumerate() {
            let (Some(ended), None) = (s.ended, &s.outcome) else { continue };
            let port = PORTS[s.host];
            let now = storms_of(&c, port);
            let d = |q: usize| now[q].0 - s.before[q].0;
            let restored = (now[0].1 - s.before[0].1) + (now[1].1 - s.before[1].1);
            let ok = d(0) >= 1 && d(0) + d(1) == restored;
            if ok || ended.elapsed() > STORM_SETTLE {
                let at_s = s.at.as_secs_f64();
                let o = StormOutcome {
                    host: s.host,
                    port: port.into(),
                    at_s,
                    detected_q3: d(0),
                    detected_q4: d(1),
                    restored,
                    ok,
                };
                if !ok {
                    settled.push(format!("storm {n} from h{} at {at_s:.1}s on {port}: {o:?}", s.host));
                }
                s.outcome = Some(o);
            }
        }
        for f in settled {
            self.fail(f);
        }
        self.last = Some(c);
        Ok(())
    }

    pub fn storms_started(&self) -> usize {
        self.storms.len()
    }

    /// Storms still waiting for their outcome.
    pub fn storms_pending(&self) -> bool {
        self.storms.iter().any(|s| s.outcome.is_none())
    }

    pub fn act(&mut self, at: Duration, action: &Action) -> anyhow::Result<()> {
        match action {
            Action::Apply(v) => {
                let db = ConfigDb::from_yaml_str(&switch_yaml(v)).map_err(anyhow::Error::msg)?;
                let request = pb::ApplyRequest {
                    config: Some(server::config_db_to_proto(&db)),
                    replace: true,
                    ..Default::default()
                };
                let mut client = self.lab.client();
                let call = async { tokio::time::timeout(CALL_TIMEOUT, client.apply(request)).await };
                self.applies += 1;
                match self.lab.rt().block_on(call).context("Apply timed out")? {
                    Ok(r) => {
                        let r = r.into_inner();
                        if !r.accepted || r.generation != self.generation + 1 {
                            self.fail(format!(
                                "apply {}: accepted {}, generation {} after {}",
                                self.applies, r.accepted, r.generation, self.generation
                            ));
                        }
                        self.generation = r.generation;
                    }
                    Err(status) => self.fail(format!("apply {} of {v:?} refused: {status}", self.applies)),
                }
            }
            Action::Restart(i) => {
                if let Some(r) = self.lab.stop_host(*i)? {
                    self.hosts.add(&r);
                }
                self.lab.start_host(*i)?;
                self.restarts += 1;
            }
            Action::Storm(i) => {
                let before = storms_of(&self.counters()?, PORTS[*i]);
                self.lab.start_storm(*i, self.storms.len(), STORM_LENGTH)?;
                self.storms.push(Storm { host: *i, at, before, ended: None, outcome: None });
            }
        }
        Ok(())
    }

    /// Polls the counters until the queues are empty and nothing more arrives (two reads 100 ms apart with
    /// the same ledger); returns the last snapshot.
    pub fn await_quiet(&mut self) -> anyhow::Result<pb::GetCountersResponse> {
        let start = Instant::now();
        let mut previous: Option<pb::GetCountersResponse> = None;
        loop {
            check_stop()?;
            let c = self.counters()?;
            let quiet = checks::queued(&c) == 0 && previous.as_ref().is_some_and(|p| p.ledger == c.ledger);
            if quiet {
                return Ok(c);
            }
            if start.elapsed() > DRAIN_LIMIT {
                bail!("switchd did not drain within {DRAIN_LIMIT:?}: {} frames queued", checks::queued(&c));
            }
            previous = Some(c);
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The end: senders stop, storms settle, queues drain, the receiver stops; then the final checks on a
    /// quiet switch. Returns the summary's switch figures.
    pub fn finish(&mut self, summary: &mut Summary) -> anyhow::Result<()> {
        for i in SENDERS {
            if let Some(r) = self.lab.stop_host(i)? {
                self.hosts.add(&r);
            }
        }
        while !self.lab.storms.is_empty() || self.storms_pending() {
            check_stop()?;
            self.sample()?;
            std::thread::sleep(Duration::from_millis(200));
        }
        self.await_quiet()?;
        if let Some(r) = self.lab.stop_host(RECEIVER)? {
            self.hosts.add(&r);
        }
        let c = self.await_quiet()?;
        self.sample()?;
        self.conservation_checks += 1;
        if let Err(e) = conservation(&c) {
            self.fail(format!("ledger at the end: {e}"));
        }
        let mut client = self.lab.client();
        let got = self.lab.rt().block_on(client.get(pb::GetRequest {}))?.into_inner();
        if got.generation != self.generation || c.generation != self.generation {
            self.fail(format!(
                "generation {} (counters {}), expected {}",
                got.generation, c.generation, self.generation
            ));
        }
        let down = checks::ports_down(&c);
        if !down.is_empty() {
            self.fail(format!("ports not up at the end: {down:?}"));
        }
        summary.drops = Drops::of(&c);
        summary.ledger = LedgerFigures::of(&c);
        summary.watchdog = WatchdogFigures::of(&c);
        summary.traffic = Traffic::of(&c, PORTS[RECEIVER]);
        summary.storms = self.storms.iter().filter_map(|s| s.outcome.clone()).collect();
        // The peak headroom of each lossless PG over the run: a PG that dropped with its peak far below its
        // xoff points at switchd's accounting, one at its xoff at pauses that came too late.
        let request = pb::GetWatermarksRequest { persistent: true, clear: false, clear_tables: vec![] };
        let w = self.lab.rt().block_on(client.get_watermarks(request))?.into_inner();
        for p in &w.ports {
            for &pg in &checks::LOSSLESS {
                let peak = p.pg_headroom_bytes.get(pg).copied().unwrap_or(0);
                summary.headroom_peaks.insert(format!("{} pg{pg}", p.name), peak);
            }
        }
        Ok(())
    }
}
