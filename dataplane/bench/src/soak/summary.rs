//! The soak's result: figures, failures, the text and JSON forms.

use crate::checks::{Drops, LedgerFigures, Traffic, WatchdogFigures};
use lossless_dataplane::rocehost::report::Report;
use serde::Serialize;
use std::collections::BTreeMap;

/// switchd's resident memory (VmRSS), sampled every second.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RssFigures {
    pub samples: usize,
    pub warmup_s: f64,
    pub start_kb: u64,
    /// The first sample after the warm-up: what the end is compared with.
    pub after_warmup_kb: u64,
    /// Over the samples after the warm-up.
    pub min_kb: u64,
    pub max_kb: u64,
    pub end_kb: u64,
    /// The end may exceed `after_warmup_kb` by this much.
    pub limit_kb: u64,
    /// Least-squares slope after the warm-up, kB per minute (informative).
    pub slope_kb_per_min: f64,
}

impl RssFigures {
    /// From (seconds since start, kB) samples; `limit_pct`/`limit_mb`: the allowed growth is the larger.
    pub fn of(samples: &[(f64, u64)], warmup_s: f64, limit_pct: f64, limit_mb: f64) -> RssFigures {
        let after: Vec<(f64, u64)> = samples.iter().copied().filter(|(t, _)| *t >= warmup_s).collect();
        let after = if after.len() >= 2 { after } else { samples.to_vec() };
        let Some(&(_, base)) = after.first() else { return RssFigures::default() };
        let n = after.len() as f64;
        let (mt, mr) =
            (after.iter().map(|s| s.0).sum::<f64>() / n, after.iter().map(|s| s.1 as f64).sum::<f64>() / n);
        let (num, den) = after
            .iter()
            .fold((0.0, 0.0), |(a, b), &(t, r)| (a + (t - mt) * (r as f64 - mr), b + (t - mt).powi(2)));
        RssFigures {
            samples: samples.len(),
            warmup_s,
            start_kb: samples.first().map_or(0, |s| s.1),
            after_warmup_kb: base,
            min_kb: after.iter().map(|s| s.1).min().unwrap_or(0),
            max_kb: after.iter().map(|s| s.1).max().unwrap_or(0),
            end_kb: after.last().map_or(0, |s| s.1),
            limit_kb: ((base as f64 * limit_pct / 100.0).max(limit_mb * 1024.0)) as u64,
            slope_kb_per_min: if den > 0.0 { num / den * 60.0 } else { 0.0 },
        }
    }

    pub fn flat(&self) -> bool {
        self.end_kb <= self.after_warmup_kb + self.limit_kb
    }
}

/// One PFC storm and what the watchdog made of it (counters of the stormed port, queues 3 and 4).
#[derive(Debug, Clone, Default, Serialize)]
pub struct StormOutcome {
    pub host: usize,
    pub port: String,
    pub at_s: f64,
    pub detected_q3: u64,
    pub detected_q4: u64,
    pub restored: u64,
    /// Detected on the port and every detection restored.
    pub ok: bool,
}

/// What the rocehosts reported when they stopped, all incarnations summed.
#[derive(Debug, Clone, Default, Serialize)]
pub struct HostTotals {
    pub reports: u64,
    pub sent_packets: u64,
    pub retransmitted_packets: u64,
    pub timeouts: u64,
    pub messages_completed: u64,
    pub received_packets: u64,
    pub cnps_received: u64,
}

impl HostTotals {
    pub fn add(&mut self, r: &Report) {
        self.reports += 1;
        for f in &r.flows {
            self.sent_packets += f.sent_packets;
            self.retransmitted_packets += f.retransmitted_packets;
            self.timeouts += f.timeouts;
            self.messages_completed += f.messages_completed;
            self.cnps_received += f.cnps_received;
        }
        self.received_packets += r.receivers.iter().map(|x| x.received_packets).sum::<u64>();
    }
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Summary {
    pub passed: bool,
    pub failures: Vec<String>,
    pub seed: u64,
    pub minutes: f64,
    pub elapsed_s: f64,
    pub build: &'static str,
    pub rss: RssFigures,
    pub applies: u64,
    pub generation: u64,
    pub restarts: u64,
    pub storms: Vec<StormOutcome>,
    pub watchdog: WatchdogFigures,
    pub drops: Drops,
    pub ledger: LedgerFigures,
    /// Snapshots on which both ledger identities were checked (every second, and at the end).
    pub conservation_checks: u64,
    pub traffic: Traffic,
    pub hosts: HostTotals,
    /// Peak headroom use of each lossless PG (persistent watermark), bytes; the xoff is 16 MiB.
    pub headroom_peaks: BTreeMap<String, u64>,
    /// Subscribe events by kind.
    pub events: BTreeMap<String, u64>,
    pub leftovers: Vec<String>,
}

impl Summary {
    pub fn print(&self) {
        let r = &self.rss;
        let mb = |kb: u64| kb as f64 / 1024.0;
        println!(
            "soak: {:.1} min (seed {}, {} build), {:.0} s",
            self.minutes, self.seed, self.build, self.elapsed_s
        );
        println!(
            "  switchd RSS     start {:.1} MiB; after {:.0} s warm-up {:.1} MiB; then min {:.1} / max {:.1} / end {:.1} MiB \
             (limit +{:.1} MiB, slope {:+.0} kB/min, {} samples)",
            mb(r.start_kb),
            r.warmup_s,
            mb(r.after_warmup_kb),
            mb(r.min_kb),
            mb(r.max_kb),
            mb(r.end_kb),
            mb(r.limit_kb),
            r.slope_kb_per_min,
            r.samples
        );
        println!("  config applies  {} (replace: true), generation {}", self.applies, self.generation);
        println!("  host restarts   {}", self.restarts);
        let ok = self.storms.iter().filter(|s| s.ok).count();
        println!(
            "  PFC storms      {} ({} detected and restored); watchdog detections {} / restorations {}",
            self.storms.len(),
            ok,
            self.watchdog.detected,
            self.watchdog.restored
        );
        for s in &self.storms {
            println!(
                "    t={:>6.1}s h{} {:<10} detected q3 {} q4 {}, restored {}{}",
                s.at_s,
                s.host,
                s.port,
                s.detected_q3,
                s.detected_q4,
                s.restored,
                if s.ok { "" } else { "  FAIL" }
            );
        }
        let d = &self.drops;
        println!(
            "  lossless drops  ingress {} egress {} (WRED {}); watchdog drop action: tx {} rx {}",
            d.lossless_ingress,
            d.lossless_egress,
            d.lossless_wred,
            d.watchdog_tx_dropped,
            d.watchdog_rx_dropped
        );
        if !d.lossless_where.is_empty() {
            println!("                  where (watchdog's included): {}", d.lossless_where.join(", "));
        }
        let peaks: Vec<String> =
            self.headroom_peaks.iter().map(|(k, v)| format!("{k} {:.1}", *v as f64 / 1048576.0)).collect();
        println!("  headroom peaks  MiB (xoff 16): {}", peaks.join(", "));
        println!(
            "  other drops     lossy queues {}; RX overruns {}; reasons {:?}",
            d.lossy_egress, d.rx_overrun, d.reasons
        );
        let l = &self.ledger;
        println!(
            "  ledger          received {} = forwarded {} + trapped {} + dropped {}",
            l.received, l.forwarded, l.trapped, l.dropped
        );
        println!(
            "                  copies {} + originated {} = sent {} + queued {} + copies_dropped {} + flushed {} \
             ({} snapshots checked)",
            l.copies, l.originated, l.sent, l.queued, l.copies_dropped, l.flushed, self.conservation_checks
        );
        let t = &self.traffic;
        println!(
            "  traffic         to the receiver: lossless {} lossy {} packets; ECN marked {}; PFC tx {} rx {}",
            t.to_receiver_lossless, t.to_receiver_lossy, t.ecn_marked, t.pfc_tx, t.pfc_rx
        );
        let h = &self.hosts;
        println!(
            "  rocehosts       {} reports: sent {} packets ({} retransmitted, {} timeouts), {} messages; received {}",
            h.reports,
            h.sent_packets,
            h.retransmitted_packets,
            h.timeouts,
            h.messages_completed,
            h.received_packets
        );
        println!("  events          {:?}", self.events);
        println!(
            "  left behind     {}",
            if self.leftovers.is_empty() { "nothing".into() } else { self.leftovers.join("; ") }
        );
        if d.rx_overrun > 0 {
            println!(
                "  note: the kernel dropped {} frames before switchd read them: switchd was short of CPU (a busy \
                 machine, a debug build). Its PFC refreshes can then lapse and pauses expire, so lossless PG drops \
                 in such a run may be the machine's; rerun the release build on an idle machine to tell.",
                d.rx_overrun
            );
        }
        if self.passed {
            println!("PASS");
        } else {
            println!("FAIL:");
            for f in &self.failures {
                println!("  - {f}");
            }
        }
    }
}
