//! Running one case and measuring it: the scenario runs in the simulator (`sim::run::run_observed`), and
//! a probe reads the models at every sample (PFC frames per bucket, ECN marks, the measured ports' bytes
//! at the window's edges) and at the end (latency histograms, drops, watermarks, watchdog counters).

use super::report::{
    BufferPeaks, CaseReport, ClassLatency, Drops, EcnVsXoff, FailedLink, Latency, Metrics, PfcRate, PortRate,
    Throughput, WatchdogEvents,
};
use super::suite::{Base, PFC_BUCKET_NS, Plan};
use super::targets::{Targets, Verdict};
use crate::lab::topology::End;
use crate::lab::up::flow_qp;
use crate::sim::fabric::Fabric;
use crate::sim::run::{self, Moment, Options};
use crate::sim::series::Series;
use lossless_dataplane::model::PortId;
use lossless_dataplane::model::mmu::WatermarkKind;
use lossless_dataplane::model::scheduler::WIRE_OVERHEAD_BYTES;
use lossless_dataplane::nic::Histogram;
use lossless_dataplane::sim::{Endpoint, NodeId};
use std::time::Instant;

/// What a case produced: its report and the time series (for the plots).
pub struct Measured {
    pub report: CaseReport,
    pub series: Series,
    /// Fabric-wide PFC frames switches sent per sample: (µs after the origin, frames).
    pub pfc_timeline: Vec<(f64, u64)>,
    /// The sampling interval, µs.
    pub sample_us: f64,
}

/// Runs the plan and measures it.
pub fn measure(base: &Base, plan: &Plan, targets: &Targets, seed: u64) -> anyhow::Result<Measured> {
    let options = Options {
        seed,
        until_ns: Some(plan.until_ns),
        resolution_ns: plan.resolution_ns,
        pcap: Vec::new(),
        out: std::path::PathBuf::new(),
        threads: 1,
    };
    let mut probe = Probe::new(plan, base.lossless.priority);
    let wall = Instant::now();
    let outcome = run::run_observed(&plan.scenario, &options, &mut |_, _| true, &mut |f, moment| {
        probe.observe(f, moment)
    })?;
    let wall_ms = wall.elapsed().as_secs_f64() * 1e3;
    let metrics = probe.metrics();
    let checks = targets.check(&metrics, &plan.applies);
    let pass = checks.iter().all(|c| c.verdict != Verdict::Fail);
    let report = CaseReport {
        case: plan.case.clone(),
        description: plan.description.clone(),
        applies: plan.applies.clone(),
        window_ms: (plan.window_ns.0 as f64 / 1e6, plan.window_ns.1 as f64 / 1e6),
        virtual_ms: outcome.virtual_ns as f64 / 1e6,
        wall_ms,
        events: outcome.events,
        metrics,
        checks,
        pass,
        plots: Vec::new(),
    };
    Ok(Measured {
        report,
        series: outcome.series,
        pfc_timeline: probe.pfc_timeline,
        sample_us: plan.resolution_ns as f64 / 1e3,
    })
}

/// Per switch port: (switch name, port name, node id, port index).
type PortRef = (String, String, NodeId, usize);

#[derive(Default)]
struct Probe {
    window_ns: (u64, u64),
    ports: Vec<PortRef>,
    /// Measured ports: (index into `ports`, line rate Mb/s).
    measured: Vec<(usize, u32)>,
    /// Per measured port: wire bytes at the window's start and end.
    at_start: Vec<u64>,
    at_end: Vec<u64>,
    /// PFC frames each port had sent at the previous sample.
    pfc_before: Vec<u64>,
    /// The PFC rate's buckets: their length (the window's when shorter than [`PFC_BUCKET_NS`]) and per
    /// bucket of the window, each port's PFC frames.
    bucket_ns: u64,
    buckets: Vec<Vec<u64>>,
    pfc_timeline: Vec<(f64, u64)>,
    pfc_in_window: u64,
    pfc_before_window: u64,
    pfc_per_port: Vec<u64>,
    /// Per flow: its receiver's latency histogram at the window's start.
    latency_at_start: Vec<Histogram>,
    latency_flows: Vec<usize>,
    first_ecn_ns: Option<u64>,
    first_xoff_ns: Option<u64>,
    /// Per incast flow: acknowledged bytes at the window's start and end.
    acked_start: Vec<u64>,
    acked_end: Vec<u64>,
    incast_flows: Vec<usize>,
    /// Each flow's (sender, receiver, receiver's IP... by name) and whether it is lossless.
    flows: Vec<(String, String, std::net::Ipv4Addr, bool)>,
    /// Read at the end.
    end: Option<EndState>,
    failed: Vec<End>,
    measured_ends: Vec<End>,
}

#[derive(Default)]
struct EndState {
    ecn_marked: u64,
    lossless: Histogram,
    lossy: Histogram,
    /// The scored flows' (window), and the lossless class's over the whole run.
    scored: Histogram,
    lossless_run: Histogram,
    drops: Drops,
    buffer: BufferPeaks,
    watchdog: WatchdogEvents,
    host_pfc_frames: u64,
    failed_link: Option<FailedLink>,
}

impl Probe {
    fn new(plan: &Plan, lossless_priority: u8) -> Probe {
        let topology = &plan.scenario.topology;
        let ip = |name: &str| topology.host(name).map_or(std::net::Ipv4Addr::UNSPECIFIED, |h| h.ip);
        let flows = topology
            .traffic
            .iter()
            .map(|fl| (fl.from.clone(), fl.to.clone(), ip(&fl.from), fl.priority == lossless_priority))
            .collect();
        Probe {
            flows,
            window_ns: plan.window_ns,
            incast_flows: plan.incast_flows.clone(),
            latency_flows: plan.latency_flows.clone(),
            bucket_ns: PFC_BUCKET_NS.min(plan.window_ns.1 - plan.window_ns.0),
            failed: plan.failed_ports.clone(),
            measured_ends: plan.measured_ports.clone(),
            ..Probe::default()
        }
    }

    fn init(&mut self, f: &mut Fabric) {
        for (name, &id) in &f.switches {
            let sw = f.sim.switch(id);
            for (p, port) in sw.config().ports.iter().enumerate() {
                self.ports.push((name.clone(), port.name.clone(), id, p));
            }
        }
        self.pfc_before = vec![0; self.ports.len()];
        let window = self.window_ns.1 - self.window_ns.0;
        self.buckets = vec![vec![0; self.ports.len()]; window.div_ceil(self.bucket_ns) as usize];
        self.pfc_per_port = vec![0; self.ports.len()];
        for e in &self.measured_ends {
            if let Some(i) = self.ports.iter().position(|(s, p, _, _)| *s == e.node && *p == e.port) {
                let (_, _, id, p) = self.ports[i];
                let speed = f.sim.switch(id).config().ports[p].speed_mbps;
                self.measured.push((i, speed));
            }
        }
    }

    fn wire_bytes(&self, f: &mut Fabric, i: usize) -> u64 {
        let (_, _, id, p) = self.ports[i];
        let c = f.sim.switch(id).port_counters(PortId::new(p)).unwrap_or_default();
        c.tx_bytes + c.tx_ok * WIRE_OVERHEAD_BYTES
    }

    /// Acknowledged bytes of the incast's flows now.
    fn acked(&self, f: &mut Fabric) -> Vec<u64> {
        self.incast_flows
            .iter()
            .map(|&i| {
                let id = f.hosts[&self.flows[i].0];
                f.sim.nic(id).flow_stats(i as u32 + 1).map_or(0, |s| s.acked_bytes)
            })
            .collect()
    }

    fn observe(&mut self, f: &mut Fabric, moment: Moment) {
        if self.ports.is_empty() {
            self.init(f);
        }
        let t = match moment {
            Moment::Sample(t) => t,
            Moment::End(_) => return self.finish(f),
        };
        let mut total = 0;
        let mut ecn = 0;
        let in_window = t > self.window_ns.0 && t <= self.window_ns.1;
        // The bucket the sample ends (a sample at t counts what was sent in (t - resolution, t]).
        let bucket = in_window.then(|| ((t - self.window_ns.0 - 1) / self.bucket_ns) as usize);
        for (i, &(_, _, id, p)) in self.ports.iter().enumerate() {
            let c = f.sim.switch(id).port_counters(PortId::new(p)).unwrap_or_default();
            let sent: u64 = c.pfc.iter().map(|x| x.tx).sum();
            let delta = sent - self.pfc_before[i];
            self.pfc_before[i] = sent;
            total += delta;
            if let Some(b) = bucket {
                self.pfc_per_port[i] += delta;
                self.buckets[b][i] += delta;
            }
            ecn += c.queues.iter().map(|q| q.ecn_marked_packets).sum::<u64>();
        }
        if total > 0 && self.first_xoff_ns.is_none() {
            self.first_xoff_ns = Some(t);
        }
        if ecn > 0 && self.first_ecn_ns.is_none() {
            self.first_ecn_ns = Some(t);
        }
        if t > 0 {
            self.pfc_timeline.push((t as f64 / 1e3, total));
        }
        if in_window {
            self.pfc_in_window += total;
        } else if t <= self.window_ns.0 {
            self.pfc_before_window += total;
        }
        if t == self.window_ns.0 || t == self.window_ns.1 {
            let bytes: Vec<u64> =
                (0..self.measured.len()).map(|m| self.wire_bytes(f, self.measured[m].0)).collect();
            let acked = self.acked(f);
            if t == self.window_ns.0 {
                (self.at_start, self.acked_start) = (bytes, acked);
                self.latency_at_start = self.latency_histograms(f);
            } else {
                (self.at_end, self.acked_end) = (bytes, acked);
            }
        }
    }

    /// Each flow's receive latency histogram now (empty before its first packet).
    fn latency_histograms(&self, f: &mut Fabric) -> Vec<Histogram> {
        self.flows
            .iter()
            .enumerate()
            .map(|(i, (_, to, from_ip, _))| {
                f.sim.nic(f.hosts[to]).rx_latency_histogram(*from_ip, flow_qp(i)).cloned().unwrap_or_default()
            })
            .collect()
    }

    fn finish(&mut self, f: &mut Fabric) {
        let mut end = EndState::default();
        let failed: Vec<Endpoint> = self.failed.iter().filter_map(|e| f.endpoint(e)).collect();
        let mut worst = (0, None);
        for (name, port, id, p) in &self.ports {
            let (id, p) = (*id, *p);
            let sw = f.sim.switch(id);
            let pid = PortId::new(p);
            let c = sw.port_counters(pid).unwrap_or_default();
            end.ecn_marked += c.queues.iter().map(|q| q.ecn_marked_packets).sum::<u64>();
            end.watchdog.storms_detected += c.pfc_wd.iter().map(|w| w.deadlock_detected).sum::<u64>();
            end.watchdog.storms_restored += c.pfc_wd.iter().map(|w| w.deadlock_restored).sum::<u64>();
            let config = sw.config();
            let qos = &config.qos[p];
            let is_failed = failed.contains(&id.port(p));
            let lossless_pgs: u8 = (0..8)
                .filter(|&prio| qos.pfc_enable & (1 << prio) != 0)
                .fold(0, |m, prio| m | 1 << qos.pfc_to_pg[prio]);
            let lossless_queues: u8 = (0..8)
                .filter(|&prio| qos.pfc_enable & (1 << prio) != 0)
                .fold(0, |m, prio| m | 1 << qos.pfc_to_queue[prio]);
            let (mut all, mut by_design) = (0, 0);
            for g in (0..8).filter(|g| lossless_pgs & (1 << g) != 0) {
                all += c.pgs[g].dropped_packets;
            }
            for q in (0..8).filter(|q| lossless_queues & (1 << q) != 0) {
                let queue_drops = c.queues[q].dropped_packets;
                all += queue_drops;
                end.drops.lossless_wred += c.queues[q].wred_dropped_packets;
                // The watchdog counts per queue what its drop action discarded, at egress and ingress.
                by_design += c.pfc_wd[q].rx_dropped_packets + c.pfc_wd[q].tx_dropped_packets;
                if is_failed {
                    by_design += queue_drops;
                }
            }
            let lost = all.saturating_sub(by_design);
            end.drops.lossless += lost;
            end.drops.lossless_by_design += by_design.min(all);
            if lost > worst.0 {
                let pg: u64 =
                    (0..8).filter(|g| lossless_pgs & (1 << g) != 0).map(|g| c.pgs[g].dropped_packets).sum();
                let wred: u64 = (0..8)
                    .filter(|q| lossless_queues & (1 << q) != 0)
                    .map(|q| c.queues[q].wred_dropped_packets)
                    .sum();
                worst = (
                    lost,
                    Some(format!(
                        "{name}:{port}: {pg} at ingress PGs, {} at egress queues ({wred} of them WRED)",
                        lost - pg.min(lost)
                    )),
                );
            }
            for q in (0..8).filter(|q| lossless_queues & (1 << q) == 0) {
                end.drops.lossy += c.queues[q].dropped_packets;
            }
            for g in (0..8).filter(|g| lossless_pgs & (1 << g) == 0) {
                end.drops.lossy += c.pgs[g].dropped_packets;
            }
            let wm = sw.mmu().port_watermarks(pid, WatermarkKind::Persistent);
            let buffers = config.port_buffers.get(p);
            for g in (0..8usize).filter(|g| lossless_pgs & (1 << g) != 0) {
                let xoff = buffers.and_then(|b| b.pg_profile[g]).map_or(0, |i| config.profiles[i].xoff_bytes);
                let peak = wm.pg_headroom_bytes[g];
                let percent = if xoff > 0 { peak as f64 * 100.0 / xoff as f64 } else { 0.0 };
                if percent > end.buffer.headroom_peak_percent
                    || end.buffer.headroom_where.is_none() && peak > 0
                {
                    end.buffer.headroom_peak_bytes = peak;
                    end.buffer.headroom_bytes = xoff;
                    end.buffer.headroom_peak_percent = percent;
                    end.buffer.headroom_where = Some(format!("{name}:{port} PG {g}"));
                }
            }
        }
        for (name, &id) in &f.switches {
            let sw = f.sim.switch(id);
            let pools = sw.config().pools.clone();
            for (pool, marks) in sw.mmu().pool_watermarks(WatermarkKind::Persistent) {
                let size = pools.iter().find(|p| p.name == pool).map_or(0, |p| p.size_bytes);
                let percent = if size > 0 { marks.shared_bytes as f64 * 100.0 / size as f64 } else { 0.0 };
                if percent > end.buffer.shared_peak_percent {
                    end.buffer.shared_peak_bytes = marks.shared_bytes;
                    end.buffer.shared_pool_bytes = size;
                    end.buffer.shared_peak_percent = percent;
                    end.buffer.shared_where = Some(format!("{name} {pool}"));
                }
            }
        }
        end.drops.lossless_where = worst.1;
        if !failed.is_empty() {
            let mut link = FailedLink::default();
            for &Endpoint { node: id, port: p } in &failed {
                link.frames_before += f.sim.switch(id).port_counters(PortId::new(p)).map_or(0, |c| c.tx_ok);
                link.lost += f.sim.link_stats(id.port(p)).map_or(0, |s| s.lost);
            }
            end.failed_link = Some(link);
        }
        for &id in f.hosts.values() {
            let c = f.sim.nic(id).counters();
            end.drops.lossless += c.rx_buffer_drops;
            end.host_pfc_frames += c.tx_pfc_frames;
        }
        let now = self.latency_histograms(f);
        for (i, (from, _, _, lossless)) in self.flows.iter().enumerate() {
            // The window's packets: those the receiver took after the window's start (the histograms
            // are cumulative); the whole run's too, for the start-up.
            let h = &now[i];
            let window = self.latency_at_start.get(i).map_or_else(|| h.clone(), |start| h.since(start));
            if *lossless {
                end.lossless.merge(&window);
                end.lossless_run.merge(h);
            } else {
                end.lossy.merge(&window);
            }
            if self.latency_flows.contains(&i) {
                end.scored.merge(&window);
            }
            if *lossless {
                let sender = f.hosts[from];
                end.drops.lossless_retransmitted +=
                    f.sim.nic(sender).flow_stats(i as u32 + 1).map_or(0, |s| s.retransmitted_packets);
            }
        }
        self.end = Some(end);
    }

    fn metrics(&mut self) -> Metrics {
        let end = self.end.take().unwrap_or_default();
        let window_s = (self.window_ns.1 - self.window_ns.0) as f64 / 1e9;
        let throughput = (!self.measured.is_empty() && self.at_end.len() == self.measured.len()).then(|| {
            let ports: Vec<PortRate> = self
                .measured
                .iter()
                .enumerate()
                .map(|(m, &(i, speed))| {
                    let bits = (self.at_end[m] - self.at_start.get(m).copied().unwrap_or(0)) as f64 * 8.0;
                    PortRate {
                        switch: self.ports[i].0.clone(),
                        port: self.ports[i].1.clone(),
                        percent: bits / window_s / (f64::from(speed) * 1e6) * 100.0,
                    }
                })
                .collect();
            let min_percent = ports.iter().map(|p| p.percent).fold(f64::INFINITY, f64::min);
            let mean_percent = ports.iter().map(|p| p.percent).sum::<f64>() / ports.len() as f64;
            Throughput { ports, min_percent, mean_percent }
        });
        // Each bucket's rate: its busiest port's frames over its length (the last one may be shorter).
        let window_ns = self.window_ns.1 - self.window_ns.0;
        let mut rates: Vec<f64> = self
            .buckets
            .iter()
            .enumerate()
            .map(|(b, ports)| {
                let length_ns = self.bucket_ns.min(window_ns - b as u64 * self.bucket_ns);
                ports.iter().copied().max().unwrap_or(0) as f64 * 1e9 / length_ns as f64
            })
            .collect();
        rates.sort_by(f64::total_cmp);
        let pct = |q: f64| -> f64 {
            if rates.is_empty() {
                return 0.0;
            }
            let rank = ((rates.len() as f64 * q).ceil() as usize).clamp(1, rates.len());
            rates[rank - 1]
        };
        let busiest = self.pfc_per_port.iter().enumerate().max_by_key(|(_, n)| **n).filter(|(_, n)| **n > 0);
        let pfc = PfcRate {
            bucket_us: self.bucket_ns as f64 / 1e3,
            buckets: rates.len(),
            frames: self.pfc_in_window,
            frames_before_window: self.pfc_before_window,
            busiest_port_pps: busiest.map_or(0.0, |(_, n)| *n as f64 / window_s),
            p50_pps: pct(0.5),
            p99_pps: pct(0.99),
            max_pps: rates.last().copied().unwrap_or(0.0),
            active_percent: if rates.is_empty() {
                0.0
            } else {
                rates.iter().filter(|r| **r > 0.0).count() as f64 * 100.0 / rates.len() as f64
            },
            busiest_port: busiest.map(|(i, _)| format!("{}:{}", self.ports[i].0, self.ports[i].1)),
            host_frames: end.host_pfc_frames,
        };
        let ecn_first = match (self.first_ecn_ns, self.first_xoff_ns) {
            (Some(e), Some(x)) => Some(e <= x),
            (Some(_), None) => Some(true),
            (None, Some(_)) => Some(false),
            (None, None) => None,
        };
        let fairness = (self.acked_end.len() > 1).then(|| {
            let got: Vec<f64> = self
                .acked_end
                .iter()
                .zip(&self.acked_start)
                .map(|(e, s)| e.saturating_sub(*s) as f64)
                .collect();
            let mean = got.iter().sum::<f64>() / got.len() as f64;
            if mean > 0.0 { got.iter().copied().fold(f64::INFINITY, f64::min) / mean } else { 0.0 }
        });
        Metrics {
            throughput,
            pfc,
            latency: ClassLatency {
                scored: latency(&end.scored),
                lossless: latency(&end.lossless),
                lossy: latency(&end.lossy),
                lossless_run: latency(&end.lossless_run),
            },
            ecn_vs_xoff: EcnVsXoff {
                ecn_marked: end.ecn_marked,
                first_ecn_us: self.first_ecn_ns.map(|t| t as f64 / 1e3),
                first_xoff_us: self.first_xoff_ns.map(|t| t as f64 / 1e3),
                ecn_first,
            },
            drops: end.drops,
            buffer: end.buffer,
            watchdog: end.watchdog,
            incast_fairness: fairness,
            failed_link: end.failed_link,
        }
    }
}

fn latency(h: &Histogram) -> Option<Latency> {
    let s = h.summary();
    (s.count > 0).then(|| Latency {
        packets: s.count,
        p50_us: s.p50_ns as f64 / 1e3,
        p99_us: s.p99_ns as f64 / 1e3,
        p999_us: s.p999_ns as f64 / 1e3,
        max_us: s.max_ns as f64 / 1e3,
    })
}
