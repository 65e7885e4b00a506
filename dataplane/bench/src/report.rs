//! The tables and ratios printed after the runs.

use crate::Args;
use crate::Forwarder;
use crate::measure::ModeResult;
use std::fmt::Write as _;

/// The targets, as ratios switchd/kernel: packet rate at 64 B at least 0.85, p99 latency at most 1.5.
pub const PPS_TARGET: f64 = 0.85;
pub const P99_TARGET: f64 = 1.5;

pub use lossless_dataplane::text::us;

pub fn print_mode(r: &ModeResult, args: &Args) {
    let title = match r.fwd {
        Forwarder::Kernel => "kernel IPv4 forwarding in mid (baseline)",
        Forwarder::Floor => {
            "minimal user-space forwarder in mid (AF_PACKET batches, MAC+TTL rewrite; sleeps in poll)"
        }
        Forwarder::FloorSpin => "minimal user-space forwarder in mid (as floor, polling without sleeping)",
        Forwarder::Switchd => {
            "switchd in mid (TH profile: routing, DSCP→TC/PG/queue, MMU, PFC+WD, DWRR, WRED/ECN)"
        }
        Forwarder::SwitchdPoll => "switchd in mid, as above, with --busy-poll-us 1000 (its low-latency mode)",
    };
    println!();
    println!("== {}: {title}", r.fwd.name());
    println!(
        "throughput ({:.1} s after {:.1} s warm-up; h1 sends as fast as sendmmsg takes frames)",
        args.seconds, args.warmup
    );
    println!(
        "  {:>6} {:>12} {:>12} {:>9} {:>11} {:>22} {:>12} {:>12}",
        "size",
        "sent pps",
        "fwd pps",
        "fwd Gb/s",
        "delivered",
        "per second (kpps)",
        "sent total",
        "others' CPU"
    );
    for t in &r.throughput {
        let bins: Vec<String> = t.per_second_pps().iter().map(|b| format!("{:.0}", b / 1000.0)).collect();
        println!(
            "  {:>6} {:>12.0} {:>12.0} {:>9.3} {:>10.1}% {:>22} {:>12} {:>12.2}",
            t.size,
            t.sent_pps(),
            t.pps(),
            t.gbps(),
            100.0 * t.received_window as f64 / t.sent_window.max(1) as f64,
            bins.join("/"),
            t.sent_total,
            t.others_cpu
        );
    }
    println!("  where frames went (whole run incl. warm-up and drain):");
    for t in &r.throughput {
        let p = &t.path;
        let mut line = format!(
            "  {:>6} h1 sent {} ({} sendmmsg calls, {} took nothing) → m0 rx {} (dropped {})",
            t.size, t.sent_total, t.send_calls, t.send_full, p.m0.rx_packets, p.m0.rx_dropped
        );
        if let Some(sw) = &t.switchd {
            let _ = write!(
                line,
                " → switchd Ethernet0 RX_OK {} RX_DRP {} {:?} PG3 {} PFC TX {} → Ethernet4 TX_OK {} TX_DRP {} Q3 {} \
                 (dropped {}, ECN-marked {}; PFC RX {}, trapped {})",
                sw.rx_ok,
                sw.rx_drp,
                sw.drop_reasons,
                sw.pg3_packets,
                sw.pfc_tx,
                sw.tx_ok,
                sw.tx_drp,
                sw.q3_packets,
                sw.q3_dropped,
                sw.q3_ecn_marked,
                sw.e4_pfc_rx,
                sw.e4_trapped
            );
        }
        let _ = write!(
            line,
            " → m1 tx {} (dropped {}) → h2 eth0 rx {} (dropped {}) → h2 app {} (socket drops {})",
            p.m1.tx_packets,
            p.m1.tx_dropped,
            p.h2.rx_packets,
            p.h2.rx_dropped,
            t.received_total,
            t.h2_socket_drops
        );
        println!("{line}");
    }
    println!(
        "one-way latency at {} pps, measured at h2's application (µs; send and receive times from one \
         CLOCK_MONOTONIC, which all network namespaces of the host share)",
        args.rate
    );
    println!(
        "  {:>6} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>9} {:>8} {:>14} {:>12}",
        "size",
        "min",
        "p50",
        "mean",
        "p99",
        "p99.9",
        "max",
        "received",
        "lost",
        "send lag p99",
        "others' CPU"
    );
    for l in &r.latency {
        println!(
            "  {:>6} {:>8.1} {:>8.1} {:>8.1} {:>8.1} {:>8.1} {:>8.1} {:>9} {:>8} {:>14.1} {:>12.2}",
            l.size,
            us(l.min),
            us(l.p50),
            l.mean / 1000.0,
            us(l.p99),
            us(l.p999),
            us(l.max),
            l.received,
            l.sent - l.received,
            us(l.send_lag_p99),
            l.others_cpu
        );
    }
}

/// A forwarder / kernel, per size.
pub struct Ratios {
    pub fwd: Forwarder,
    /// (size, ratio of forwarded pps)
    pub pps: Vec<(usize, f64)>,
    /// (size, ratio of p99 latency)
    pub p99: Vec<(usize, f64)>,
}

impl Ratios {
    /// Every forwarder's ratios to the kernel of the same run (none without a kernel run).
    pub fn all(results: &[ModeResult]) -> Vec<Ratios> {
        let Some(kernel) = results.iter().find(|r| r.fwd == Forwarder::Kernel) else { return Vec::new() };
        results.iter().filter(|r| r.fwd != Forwarder::Kernel).map(|r| Ratios::of(kernel, r)).collect()
    }

    pub fn of(kernel: &ModeResult, switchd: &ModeResult) -> Ratios {
        let pps = kernel
            .throughput
            .iter()
            .zip(&switchd.throughput)
            .map(|(k, s)| (k.size, s.pps() / k.pps().max(1.0)))
            .collect();
        let p99 = kernel
            .latency
            .iter()
            .zip(&switchd.latency)
            .map(|(k, s)| (k.size, s.p99 as f64 / k.p99.max(1) as f64))
            .collect();
        Ratios { fwd: switchd.fwd, pps, p99 }
    }
}

pub fn verdict(pass: bool) -> &'static str {
    if pass { "PASS" } else { "FAIL" }
}

pub fn print_ratios(r: &Ratios) {
    println!();
    println!("== {} / kernel, same run, same measurement", r.fwd.name());
    for &(size, ratio) in &r.pps {
        let note = if size == 64 { "" } else { " (the target is for 64 B)" };
        println!(
            "  forwarded pps  {size:>5} B: {ratio:.3}×  (target ≥ {PPS_TARGET}×) {}{note}",
            verdict(ratio >= PPS_TARGET)
        );
    }
    for &(size, ratio) in &r.p99 {
        println!(
            "  p99 latency    {size:>5} B: {ratio:.3}×  (target ≤ {P99_TARGET}×) {}",
            verdict(ratio <= P99_TARGET)
        );
    }
    let all = r.pps.iter().filter(|(s, _)| *s == 64).all(|(_, x)| *x >= PPS_TARGET)
        && r.p99.iter().all(|(_, x)| *x <= P99_TARGET);
    println!(
        "  targets (64 B pps ≥ {PPS_TARGET}×, p99 ≤ {P99_TARGET}×): {}",
        if all { "met" } else { "NOT met" }
    );
}
