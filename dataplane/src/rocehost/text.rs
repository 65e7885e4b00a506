//! What rocehost prints: the report as tables, and the `--progress` line.

use super::PROGRESS_NS;
use super::host::Stop;
use super::report::{Report, RunStart};
use crate::nic::Nic;
use crate::text::us;
use crate::wire::EthernetAddress;
use std::fmt::Write as _;
use std::net::Ipv4Addr;

pub(super) struct Meta<'a> {
    pub(super) interface: &'a str,
    pub(super) mac: EthernetAddress,
    pub(super) ip: Ipv4Addr,
    pub(super) start: RunStart,
    pub(super) end: u64,
    pub(super) stop: &'a Stop,
}

fn mbps(bytes: u64, ns: u64) -> f64 {
    if ns == 0 { 0.0 } else { bytes as f64 * 8e3 / ns as f64 }
}

/// The report as tables: flows, receiving QPs, PFC, counters.
pub(super) fn human_report(r: &Report, nic: &Nic, m: &Meta<'_>) -> String {
    let mut s = String::new();
    let elapsed = m.end.saturating_sub(m.start.monotonic_ns);
    let _ = writeln!(
        s,
        "rocehost {} {} ({}): {:.3} s from {}, stopped: {}",
        m.interface,
        m.ip,
        m.mac,
        elapsed as f64 / 1e9,
        crate::clock::format_unix_ns(m.start.unix_ns),
        m.stop
    );
    if r.flows.is_empty() {
        let _ = writeln!(s, "\nno flows sent");
    } else {
        let _ = writeln!(
            s,
            "\n{:<5} {:<15} {:>8} {:>4} {:>11} {:>12} {:>10} {:>10} {:>14} {:>7} {:>10}",
            "flow",
            "dst",
            "qp",
            "prio",
            "messages",
            "goodput Mb/s",
            "sent pkts",
            "retx pkts",
            "acked bytes",
            "CNPs",
            "paused ms"
        );
        for f in &r.flows {
            let dst = f.dst_ip.map_or_else(|| "-".into(), |ip| ip.to_string());
            let messages = format!("{}/{}", f.messages_completed, f.messages_started);
            let _ = writeln!(
                s,
                "{:<5} {:<15} {:>#8x} {:>4} {:>11} {:>12.1} {:>10} {:>10} {:>14} {:>7} {:>10.3}",
                f.id,
                dst,
                f.src_qp,
                f.priority,
                messages,
                f.goodput_mbps,
                f.sent_packets,
                f.retransmitted_packets,
                f.acked_bytes,
                f.cnps_received,
                nic.pause_ns(f.priority) as f64 / 1e6
            );
        }
    }
    if r.receivers.is_empty() {
        let _ = writeln!(s, "\nno data received");
    } else {
        let _ = writeln!(
            s,
            "\n{:<15} {:>8} {:>8} {:>14} {:>8} {:>12} {:>12} {:>6} {:>9} {:>10} {:>10} {:>10}",
            "from",
            "from qp",
            "qp",
            "received bytes",
            "messages",
            "goodput Mb/s",
            "out-of-order",
            "NAKs",
            "CNPs sent",
            "p50 µs",
            "p99 µs",
            "p99.9 µs"
        );
        for q in &r.receivers {
            let src = q.src_ip.map_or_else(|| "-".into(), |ip| ip.to_string());
            let _ = writeln!(
                s,
                "{:<15} {:>#8x} {:>#8x} {:>14} {:>8} {:>12.1} {:>12} {:>6} {:>9} {:>10.1} {:>10.1} {:>10.1}",
                src,
                q.src_qp,
                q.qp,
                q.received_bytes,
                q.messages_received,
                q.goodput_mbps,
                q.out_of_order,
                q.naks_sent,
                q.cnps_sent,
                us(q.latency.p50_ns),
                us(q.latency.p99_ns),
                us(q.latency.p999_ns)
            );
        }
    }
    if !r.probes.is_empty() {
        let _ = writeln!(
            s,
            "\n{:<15} {:>4} {:>4} {:>8} {:>8} {:>6} {:>10} {:>10} {:>10} {:>10} {:>10}",
            "pingmesh peer",
            "dscp",
            "prio",
            "sent",
            "answered",
            "lost",
            "min µs",
            "p50 µs",
            "p99 µs",
            "max µs",
            "hold p99 µs"
        );
        for p in &r.probes {
            let peer = p.peer.map_or_else(|| "-".into(), |ip| ip.to_string());
            let _ = writeln!(
                s,
                "{:<15} {:>4} {:>4} {:>8} {:>8} {:>6} {:>10.1} {:>10.1} {:>10.1} {:>10.1} {:>10.1}",
                peer,
                p.dscp,
                p.priority,
                p.sent,
                p.received,
                p.lost,
                us(p.rtt.min_ns),
                us(p.rtt.p50_ns),
                us(p.rtt.p99_ns),
                us(p.rtt.max_ns),
                us(p.responder_hold.p99_ns)
            );
        }
    }
    let pfc: Vec<_> = r.pfc.iter().filter(|p| p.counters.rx > 0 || p.counters.tx > 0).collect();
    if !pfc.is_empty() {
        let _ = writeln!(
            s,
            "\n{:<8} {:>10} {:>10} {:>10} {:>10}",
            "priority", "PFC rx", "XON rx", "PFC tx", "paused ms"
        );
        for p in pfc {
            let _ = writeln!(
                s,
                "{:<8} {:>10} {:>10} {:>10} {:>10.3}",
                p.priority,
                p.counters.rx,
                p.counters.rx_xon,
                p.counters.tx,
                p.pause_ns as f64 / 1e6
            );
        }
    }
    let c = &r.counters;
    let _ = writeln!(
        s,
        "\nframes: tx {} ({} data, {} ACK, {} NAK, {} CNP, {} PFC, {} ARP), {} bytes; rx {}, {} bytes \
         ({} PFC, {} PAUSE, {} ARP requests, {} ignored, {} malformed, {} for unknown QPs)",
        c.tx_frames,
        c.tx_data_frames,
        c.tx_ack_frames,
        c.tx_nak_frames,
        c.tx_cnp_frames,
        c.tx_pfc_frames,
        c.tx_arp_replies,
        c.tx_bytes,
        c.rx_frames,
        c.rx_bytes,
        c.rx_pfc_frames,
        c.rx_pause_frames,
        c.rx_arp_requests,
        c.rx_ignored,
        c.rx_malformed,
        c.rx_unknown_qp
    );
    if c.rx_buffer_drops + c.rx_page_misses + c.rx_pause_watchdog_events > 0 {
        let _ = writeln!(
            s,
            "receive pipeline: {} frames dropped (buffer full), {} translation misses, {} watchdog stops",
            c.rx_buffer_drops, c.rx_page_misses, c.rx_pause_watchdog_events
        );
    }
    s
}

/// The `--progress` line: rates over the last second.
pub(super) struct Progress {
    pub(super) epoch: u64,
    pub(super) next_ns: u64,
    last_ns: u64,
    last_tx_bytes: u64,
    last_rx_bytes: u64,
    last_acked: u64,
    last_received: u64,
}

impl Progress {
    pub(super) fn new(epoch: u64) -> Progress {
        Progress {
            epoch,
            next_ns: epoch + PROGRESS_NS,
            last_ns: epoch,
            last_tx_bytes: 0,
            last_rx_bytes: 0,
            last_acked: 0,
            last_received: 0,
        }
    }

    pub(super) fn line(&mut self, nic: &Nic, now: u64) -> String {
        let r = nic.report();
        let acked: u64 = r.flows.iter().map(|f| f.acked_bytes).sum();
        let received: u64 = r.receivers.iter().map(|q| q.received_bytes).sum();
        let retx: u64 = r.flows.iter().map(|f| f.retransmitted_packets).sum();
        let finished = r.flows.iter().filter(|f| f.finished_ns.is_some()).count();
        let paused: Vec<String> = r
            .pfc
            .iter()
            .filter(|p| p.pause_ns > 0)
            .map(|p| format!("p{} {:.1} ms", p.priority, p.pause_ns as f64 / 1e6))
            .collect();
        let dt = now - self.last_ns;
        let line = format!(
            "{:>7.1} s  tx {:.1} Mb/s  rx {:.1} Mb/s  goodput out {:.1} Mb/s in {:.1} Mb/s  flows {finished}/{} \
             finished  retx {retx}  PFC rx {} tx {}{}{}",
            (now - self.epoch) as f64 / 1e9,
            mbps(r.counters.tx_bytes - self.last_tx_bytes, dt),
            mbps(r.counters.rx_bytes - self.last_rx_bytes, dt),
            mbps(acked.saturating_sub(self.last_acked), dt),
            mbps(received.saturating_sub(self.last_received), dt),
            r.flows.len(),
            r.counters.rx_pfc_frames,
            r.counters.tx_pfc_frames,
            if paused.is_empty() { "" } else { "  paused " },
            paused.join(", ")
        );
        self.last_ns = now;
        self.last_tx_bytes = r.counters.tx_bytes;
        self.last_rx_bytes = r.counters.rx_bytes;
        self.last_acked = acked;
        self.last_received = received;
        self.next_ns = (self.next_ns + PROGRESS_NS).max(now + 1);
        line
    }
}
