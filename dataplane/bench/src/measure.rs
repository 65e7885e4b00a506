//! The measurements: throughput and latency runs between h1 and h2.

use crate::frames::{bench_frame, parse_bench, stamp};
use crate::interference::CpuSample;
use crate::iproute2::{LinkStats, PathStats, SwitchdStats, link_mac};
use crate::lab::{Lab, Switchd};
use crate::sockets::{open_eth0, sleep_until, socket_drops, tight_timer_slack, wait_readable};
use crate::stop::{check_stop, stopped};
use crate::{Args, Forwarder};
use anyhow::ensure;
use lossless_dataplane::wire::EthernetAddress;
use std::sync::Barrier;
use std::time::{Duration, Instant};

/// Frames prebuilt for a throughput sender (one `sendmmsg` takes up to 128).
pub const TX_FRAMES: usize = 128;
/// Time given to the threads to open their ports before a run starts.
pub const START_MARGIN: Duration = Duration::from_millis(300);
/// How long a receiver keeps listening after the sender stopped.
pub const DRAIN: Duration = Duration::from_millis(300);
/// Latency frames sent before the measured ones.
pub const LATENCY_WARMUP: Duration = Duration::from_millis(200);

pub struct ModeResult {
    pub fwd: Forwarder,
    pub throughput: Vec<Throughput>,
    pub latency: Vec<Latency>,
}

#[derive(Debug, Clone, Default)]
pub struct Throughput {
    pub size: usize,
    /// Frames h1 handed to the kernel within the window, and over the whole run.
    pub sent_window: u64,
    pub sent_total: u64,
    /// `sendmmsg` calls and how many took nothing.
    pub send_calls: u64,
    pub send_full: u64,
    /// Frames h2's application received within the window, per second of it, and over the whole run.
    pub received_window: u64,
    pub per_second: Vec<u64>,
    pub received_total: u64,
    /// Frames h2's socket dropped (receive queue full).
    pub h2_socket_drops: u64,
    pub window_s: f64,
    /// Kernel counters along the path, whole run.
    pub path: PathStats,
    pub switchd: Option<SwitchdStats>,
    /// Cores' worth of user time other processes took during the run.
    pub others_cpu: f64,
}

impl Throughput {
    pub fn pps(&self) -> f64 {
        self.received_window as f64 / self.window_s
    }
    pub fn sent_pps(&self) -> f64 {
        self.sent_window as f64 / self.window_s
    }
    pub fn gbps(&self) -> f64 {
        self.pps() * self.size as f64 * 8.0 / 1e9
    }
    /// Frames per second in each second of the window (the last one may be shorter).
    pub fn per_second_pps(&self) -> Vec<f64> {
        let n = self.per_second.len();
        self.per_second
            .iter()
            .enumerate()
            .map(|(i, &c)| c as f64 / if i + 1 == n { self.window_s - i as f64 } else { 1.0 })
            .collect()
    }
}

#[derive(Debug, Clone, Default)]
pub struct Latency {
    pub size: usize,
    pub rate: u32,
    pub sent: u64,
    pub received: u64,
    /// Measured frames, in ns: min, p50, p99, p99.9, max, mean.
    pub min: u64,
    pub p50: u64,
    pub p99: u64,
    pub p999: u64,
    pub max: u64,
    pub mean: f64,
    /// How late the sender was on its schedule, p99 (ns): pacing quality, not part of the latency.
    pub send_lag_p99: u64,
    /// Cores' worth of user time other processes took during the run.
    pub others_cpu: f64,
}

/// Before a run: switchd's queues are empty (the kernel's are by the time the receiver stopped).
pub fn settle(lab: &mut Lab) -> anyhow::Result<()> {
    if let Some(sw) = lab.switchd.as_mut() {
        let took = sw.wait_drained()?;
        if took > Duration::from_millis(100) {
            eprintln!("   (switchd needed {:.2} s to empty its queues before this run)", took.as_secs_f64());
        }
    }
    Ok(())
}

pub fn measure(lab: &mut Lab, args: &Args) -> anyhow::Result<ModeResult> {
    let h1_mac = link_mac(&lab.h1, "eth0")?;
    let mut throughput = Vec::new();
    for &size in &args.sizes {
        check_stop()?;
        eprintln!(
            "   {}: throughput, {size} B, {:.1} s + {:.1} s warm-up",
            lab.fwd.name(),
            args.seconds,
            args.warmup
        );
        settle(lab)?;
        throughput.push(throughput_run(lab, h1_mac, size, args)?);
    }
    let mut latency = Vec::new();
    for &size in &args.sizes {
        check_stop()?;
        eprintln!(
            "   {}: latency, {size} B at {} pps, {:.1} s",
            lab.fwd.name(),
            args.rate,
            args.latency_seconds
        );
        settle(lab)?;
        latency.push(latency_run(lab, h1_mac, size, args)?);
    }
    Ok(ModeResult { fwd: lab.fwd, throughput, latency })
}

pub fn throughput_run(
    lab: &mut Lab,
    h1_mac: EthernetAddress,
    size: usize,
    args: &Args,
) -> anyhow::Result<Throughput> {
    let frames: Vec<Vec<u8>> = (0..TX_FRAMES as u64).map(|i| bench_frame(lab, h1_mac, size, i)).collect();
    let warmup = Duration::from_secs_f64(args.warmup);
    let window = Duration::from_secs_f64(args.seconds);
    let path_before = lab.path_stats()?;
    let sw_before = lab.switchd.as_mut().map(Switchd::counters).transpose()?;
    let ready = Barrier::new(2);
    let (h1, h2) = (&lab.h1, &lab.h2);
    let t0 = Instant::now() + START_MARGIN;
    let (window_start, end) = (t0 + warmup, t0 + warmup + window);
    let cpu_before = CpuSample::take(lab.switchd_pid());
    let (sender, receiver) = std::thread::scope(|s| {
        let ready = &ready;
        let sender = s.spawn(move || -> anyhow::Result<(u64, u64, u64, u64)> {
            let port = open_eth0(h1);
            ready.wait();
            let mut port = port?;
            ensure!(Instant::now() < t0, "the threads took longer than {START_MARGIN:?} to start");
            sleep_until(t0);
            let (mut sent, mut at_window_start, mut calls, mut full) = (0u64, None, 0u64, 0u64);
            loop {
                let now = Instant::now();
                if now >= end || stopped() {
                    break;
                }
                if at_window_start.is_none() && now >= window_start {
                    at_window_start = Some(sent);
                }
                let n = port.send_batch(&frames)?;
                calls += 1;
                if n == 0 {
                    full += 1;
                }
                sent += n as u64;
            }
            Ok((sent - at_window_start.unwrap_or(sent), sent, calls, full))
        });
        let receiver = s.spawn(move || -> anyhow::Result<(u64, Vec<u64>, u64, u64)> {
            let port = open_eth0(h2);
            ready.wait();
            let mut port = port?;
            socket_drops(port.raw_fd());
            let mut per_second = vec![0u64; window.as_secs_f64().ceil() as usize];
            let (mut in_window, mut total) = (0u64, 0u64);
            let mut buf = Vec::with_capacity(64);
            loop {
                if stopped() || Instant::now() >= end + DRAIN {
                    break;
                }
                buf.clear();
                if port.recv_batch(&mut buf, 64)? == 0 {
                    wait_readable(port.raw_fd(), 5);
                    continue;
                }
                let now = Instant::now();
                let n = buf.iter().filter(|f| parse_bench(f).is_some()).count() as u64;
                total += n;
                if now >= window_start && now < end {
                    in_window += n;
                    let second = (now - window_start).as_secs() as usize;
                    if let Some(bin) = per_second.get_mut(second) {
                        *bin += n;
                    }
                }
            }
            Ok((in_window, per_second, total, socket_drops(port.raw_fd())))
        });
        (sender.join(), receiver.join())
    });
    let others_cpu = CpuSample::take(lab.switchd_pid()).others_since(&cpu_before);
    let (sent_window, sent_total, send_calls, send_full) =
        sender.map_err(|_| anyhow::anyhow!("the sender panicked"))??;
    let (received_window, per_second, received_total, h2_socket_drops) =
        receiver.map_err(|_| anyhow::anyhow!("the receiver panicked"))??;
    check_stop()?;
    let path_after = lab.path_stats()?;
    let switchd = match (sw_before, lab.switchd.as_mut()) {
        (Some(before), Some(sw)) => Some(sw.counters()?.since(&before)),
        _ => None,
    };
    let delta = |a: LinkStats, b: LinkStats| LinkStats {
        rx_packets: a.rx_packets - b.rx_packets,
        rx_dropped: a.rx_dropped - b.rx_dropped,
        tx_packets: a.tx_packets - b.tx_packets,
        tx_dropped: a.tx_dropped - b.tx_dropped,
    };
    Ok(Throughput {
        size,
        sent_window,
        sent_total,
        send_calls,
        send_full,
        received_window,
        per_second,
        received_total,
        h2_socket_drops,
        window_s: window.as_secs_f64(),
        path: PathStats {
            m0: delta(path_after.m0, path_before.m0),
            m1: delta(path_after.m1, path_before.m1),
            h2: delta(path_after.h2, path_before.h2),
        },
        switchd,
        others_cpu,
    })
}

pub fn latency_run(lab: &Lab, h1_mac: EthernetAddress, size: usize, args: &Args) -> anyhow::Result<Latency> {
    let template = bench_frame(lab, h1_mac, size, 0);
    let interval = Duration::from_secs_f64(1.0 / f64::from(args.rate));
    let warm = (LATENCY_WARMUP.as_secs_f64() * f64::from(args.rate)).ceil() as u64;
    let measured = (args.latency_seconds * f64::from(args.rate)).ceil() as u64;
    let total = warm + measured;
    let epoch = Instant::now();
    let ns_since = |t: Instant| (t - epoch).as_nanos() as u64;
    let ready = Barrier::new(2);
    let (h1, h2) = (&lab.h1, &lab.h2);
    let t0 = Instant::now() + START_MARGIN;
    let cpu_before = CpuSample::take(lab.switchd_pid());
    let (sender, receiver) = std::thread::scope(|s| {
        let ready = &ready;
        let sender = s.spawn(move || -> anyhow::Result<(u64, Vec<u64>)> {
            let port = open_eth0(h1);
            ready.wait();
            let mut port = port?;
            tight_timer_slack();
            ensure!(Instant::now() < t0, "the threads took longer than {START_MARGIN:?} to start");
            let mut frame = [template];
            let mut lags = Vec::with_capacity(measured as usize);
            let mut sent = 0;
            for seq in 0..total {
                if stopped() {
                    break;
                }
                let due = t0 + interval.mul_f64(seq as f64);
                // Sleep to within 10 µs of the slot, then spin: the thread stays mostly idle.
                if let Some(ahead) = due.checked_duration_since(Instant::now())
                    && ahead > Duration::from_micros(10)
                {
                    std::thread::sleep(ahead - Duration::from_micros(10));
                }
                while Instant::now() < due {
                    std::hint::spin_loop();
                }
                let now = Instant::now();
                stamp(&mut frame[0], seq, ns_since(now));
                while port.send_batch(&frame)? == 0 {
                    if stopped() {
                        break;
                    }
                }
                if seq >= warm {
                    sent += 1;
                    lags.push((now - due).as_nanos() as u64);
                }
            }
            Ok((sent, lags))
        });
        let receiver = s.spawn(move || -> anyhow::Result<Vec<u64>> {
            let port = open_eth0(h2);
            ready.wait();
            let mut port = port?;
            let mut latencies = vec![u64::MAX; measured as usize];
            let end = t0 + interval.mul_f64(total as f64) + DRAIN;
            let mut buf = Vec::with_capacity(64);
            let trace_us: Option<u64> = std::env::var("FWD_BENCH_TRACE_US").ok().and_then(|v| v.parse().ok());
            let mut marker = trace_us.and_then(|_| {
                std::fs::OpenOptions::new().write(true).open("/sys/kernel/tracing/trace_marker").ok()
            });
            while !stopped() && Instant::now() < end {
                buf.clear();
                if port.recv_batch(&mut buf, 64)? == 0 {
                    wait_readable(port.raw_fd(), 5);
                    continue;
                }
                let rx = ns_since(Instant::now());
                for f in &buf {
                    if let Some((seq, tx)) = parse_bench(f)
                        && seq >= warm
                        && let Some(slot) = latencies.get_mut((seq - warm) as usize)
                    {
                        *slot = rx.saturating_sub(tx);
                        if let (Some(t), Some(m)) = (trace_us, marker.as_mut())
                            && *slot > t * 1000
                        {
                            use std::io::Write as _;
                            let _ = writeln!(m, "SLOW seq={seq} lat_us={}", *slot / 1000);
                        }
                    }
                }
            }
            Ok(latencies)
        });
        (sender.join(), receiver.join())
    });
    let others_cpu = CpuSample::take(lab.switchd_pid()).others_since(&cpu_before);
    let (sent, mut lags) = sender.map_err(|_| anyhow::anyhow!("the sender panicked"))??;
    let latencies = receiver.map_err(|_| anyhow::anyhow!("the receiver panicked"))??;
    check_stop()?;
    let mut got: Vec<u64> = latencies.into_iter().filter(|&l| l != u64::MAX).collect();
    ensure!(!got.is_empty(), "{} {size} B: no latency frame arrived", lab.fwd.name());
    got.sort_unstable();
    lags.sort_unstable();
    Ok(Latency {
        size,
        rate: args.rate,
        sent,
        received: got.len() as u64,
        min: got[0],
        p50: percentile(&got, 0.50),
        p99: percentile(&got, 0.99),
        p999: percentile(&got, 0.999),
        max: *got.last().unwrap_or(&0),
        mean: got.iter().sum::<u64>() as f64 / got.len() as f64,
        send_lag_p99: percentile(&lags, 0.99),
        others_cpu,
    })
}

/// Nearest-rank percentile of sorted values.
pub fn percentile(sorted: &[u64], q: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        let v: Vec<u64> = (1..=1000).collect();
        assert_eq!((percentile(&v, 0.5), percentile(&v, 0.99), percentile(&v, 0.999)), (500, 990, 999));
        assert_eq!(percentile(&[7], 0.99), 7);
    }
}
