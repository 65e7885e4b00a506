//! What the NIC reports: per-flow sender statistics, per-QP receiver statistics, NIC counters, and the
//! bounded-memory latency histogram behind the receiver's percentiles. Everything is `Serialize`, so a
//! driver can dump a [`NicReport`] as JSON.

use crate::model::pfc::PfcCounters;
use serde::Serialize;
use std::net::Ipv4Addr;

/// Values below this are counted exactly (one bucket per nanosecond).
const LINEAR_LIMIT: u64 = 256;
/// Buckets per power of two above [`LINEAR_LIMIT`]: a bucket is at most 1/128 of its values wide.
const SUB_BUCKETS: u64 = 128;
const SUB_BITS: u32 = 7;
const LINEAR_BITS: u32 = 8;

/// A log-linear histogram of nanosecond values with bounded memory.
///
/// Values below 256 ns are exact; above, every power of two is split into 128 equal buckets, so a
/// bucket spans at most 1/128 (0.78 %) of its values. All of `u64` fits in 7424 buckets (58 KiB); the
/// bucket vector only grows to the largest value seen (about 14 KiB for values up to 1 ms). A percentile is
/// reported as the upper edge of the bucket holding it (clamped to the largest value seen): never below
/// the true value, at most 0.78 % above. Count, sum, minimum and maximum are exact.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Histogram {
    buckets: Vec<u64>,
    count: u64,
    sum: u128,
    min: u64,
    max: u64,
}

impl Histogram {
    pub fn new() -> Histogram {
        Histogram::default()
    }

    fn index(value: u64) -> usize {
        if value < LINEAR_LIMIT {
            return value as usize;
        }
        let exponent = 63 - value.leading_zeros(); // ≥ 8
        let mantissa = value >> (exponent - SUB_BITS); // in [128, 256)
        (LINEAR_LIMIT + u64::from(exponent - LINEAR_BITS) * SUB_BUCKETS + (mantissa - SUB_BUCKETS)) as usize
    }

    /// The largest value that falls into bucket `index`.
    fn bucket_high(index: usize) -> u64 {
        let index = index as u64;
        if index < LINEAR_LIMIT {
            return index;
        }
        let exponent = LINEAR_BITS as u64 + (index - LINEAR_LIMIT) / SUB_BUCKETS;
        let mantissa = SUB_BUCKETS + (index - LINEAR_LIMIT) % SUB_BUCKETS;
        let width_bits = exponent - u64::from(SUB_BITS);
        let low = mantissa << width_bits;
        low + ((1u64 << width_bits) - 1)
    }

    pub fn record(&mut self, value: u64) {
        let i = Self::index(value);
        if i >= self.buckets.len() {
            self.buckets.resize(i + 1, 0);
        }
        self.buckets[i] += 1;
        if self.count == 0 || value < self.min {
            self.min = value;
        }
        self.max = self.max.max(value);
        self.count += 1;
        self.sum += u128::from(value);
    }

    /// Adds every value of `other` (e.g. to aggregate several QPs).
    pub fn merge(&mut self, other: &Histogram) {
        if other.count == 0 {
            return;
        }
        if other.buckets.len() > self.buckets.len() {
            self.buckets.resize(other.buckets.len(), 0);
        }
        for (a, b) in self.buckets.iter_mut().zip(&other.buckets) {
            *a += b;
        }
        self.min = if self.count == 0 { other.min } else { self.min.min(other.min) };
        self.max = self.max.max(other.max);
        self.count += other.count;
        self.sum += other.sum;
    }

    /// The values recorded since `earlier`, an earlier copy of this histogram (e.g. to take percentiles
    /// over a time window from a cumulative histogram). Counts and the sum are exact; the minimum and
    /// maximum are the edges of the lowest and highest buckets left (clamped to this histogram's own),
    /// so within a bucket's resolution like the percentiles. An `earlier` that is not a prefix of this
    /// one (a bucket with more values) saturates at zero.
    pub fn since(&self, earlier: &Histogram) -> Histogram {
        let buckets: Vec<u64> = self
            .buckets
            .iter()
            .enumerate()
            .map(|(i, n)| n.saturating_sub(earlier.buckets.get(i).copied().unwrap_or(0)))
            .collect();
        let count: u64 = buckets.iter().sum();
        if count == 0 {
            return Histogram::default();
        }
        let lowest = buckets.iter().position(|&n| n > 0).unwrap_or(0);
        let highest = buckets.iter().rposition(|&n| n > 0).unwrap_or(0);
        let low_edge = if lowest == 0 { 0 } else { Self::bucket_high(lowest - 1) + 1 };
        Histogram {
            buckets,
            count,
            sum: self.sum.saturating_sub(earlier.sum),
            min: low_edge.clamp(self.min, self.max),
            max: Self::bucket_high(highest).clamp(self.min, self.max),
        }
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    pub fn min(&self) -> Option<u64> {
        (self.count > 0).then_some(self.min)
    }

    pub fn max(&self) -> Option<u64> {
        (self.count > 0).then_some(self.max)
    }

    /// Arithmetic mean, rounded down.
    pub fn mean(&self) -> Option<u64> {
        (self.count > 0).then(|| (self.sum / u128::from(self.count)) as u64)
    }

    /// The `numerator/denominator` quantile: the smallest recorded value v such that at least
    /// `ceil(count × numerator / denominator)` values are ≤ v, up to the bucket resolution (see the type).
    /// `None` when empty.
    pub fn quantile(&self, numerator: u64, denominator: u64) -> Option<u64> {
        if self.count == 0 || denominator == 0 {
            return None;
        }
        let rank = (u128::from(self.count) * u128::from(numerator.min(denominator)))
            .div_ceil(u128::from(denominator))
            .max(1);
        let mut seen = 0u128;
        for (i, &n) in self.buckets.iter().enumerate() {
            seen += u128::from(n);
            if seen >= rank {
                return Some(Self::bucket_high(i).clamp(self.min, self.max));
            }
        }
        Some(self.max)
    }

    pub fn summary(&self) -> LatencySummary {
        LatencySummary {
            count: self.count,
            min_ns: self.min().unwrap_or(0),
            mean_ns: self.mean().unwrap_or(0),
            p50_ns: self.quantile(50, 100).unwrap_or(0),
            p99_ns: self.quantile(99, 100).unwrap_or(0),
            p999_ns: self.quantile(999, 1000).unwrap_or(0),
            max_ns: self.max().unwrap_or(0),
        }
    }
}

/// Percentiles of a [`Histogram`]; all zero when nothing was recorded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct LatencySummary {
    pub count: u64,
    pub min_ns: u64,
    pub mean_ns: u64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    /// 99.9th percentile.
    pub p999_ns: u64,
    pub max_ns: u64,
}

/// DCQCN reaction-point state of a flow at the time of the report.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct DcqcnStats {
    /// α as a fraction (the state machine keeps it in 1/1024 units, as the NIC firmware does).
    pub alpha: f64,
    pub current_rate_mbps: f64,
    pub target_rate_mbps: f64,
    pub cnps: u64,
    pub rate_decreases: u64,
    pub rate_increases: u64,
}

/// Sender side of one flow. Byte counts are message payload bytes (the model's 44-byte in-payload header
/// included, Ethernet/IP/UDP/BTH/ICRC headers excluded).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct FlowStats {
    pub id: u32,
    pub dst_ip: Option<Ipv4Addr>,
    pub src_qp: u32,
    pub dst_qp: u32,
    /// PSN of the flow's first packet.
    pub initial_psn: u32,
    pub dscp: u8,
    pub priority: u8,
    /// Data packets sent, retransmissions included.
    pub sent_packets: u64,
    pub sent_bytes: u64,
    pub retransmitted_packets: u64,
    pub retransmitted_bytes: u64,
    /// Payload bytes acknowledged by the receiver: the goodput basis.
    pub acked_bytes: u64,
    pub acked_packets: u64,
    pub messages_started: u64,
    pub messages_completed: u64,
    pub acks_received: u64,
    pub naks_received: u64,
    pub timeouts: u64,
    pub cnps_received: u64,
    /// The rate the flow is paced at now: min(configured rate, DCQCN current rate, line rate).
    pub rate_mbps_now: f64,
    /// `acked_bytes × 8` over the time from the first transmission to completion (or to now).
    pub goodput_mbps: f64,
    pub first_send_ns: Option<u64>,
    /// When the last message was acknowledged and no further one will start.
    pub finished_ns: Option<u64>,
    pub dcqcn: Option<DcqcnStats>,
    /// Message completion time on the sender's clock: the first transmission of a message's first packet
    /// to the ACK that covers its last (the per-operation latency of RDMA Estats).
    pub message_completion: LatencySummary,
}

/// Receiver side of one QP: (source IP, destination QP, requester QP).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RxStats {
    pub src_ip: Option<Ipv4Addr>,
    /// This NIC's QP: the BTH DestQP of the data.
    pub qp: u32,
    /// The requester's QP (the destination of ACKs, NAKs and CNPs): a new one for every run of a sender.
    pub src_qp: u32,
    /// The sender's flow id, from the model's in-payload header.
    pub flow_id: u32,
    /// Every data packet that arrived (in order, out of order, duplicate).
    pub received_packets: u64,
    /// Payload bytes accepted in order and kept (a go-back-0 rewind takes back the partial message).
    pub received_bytes: u64,
    pub messages_received: u64,
    /// Packets ahead of the expected PSN (discarded, as go-back-N/0 receivers do).
    pub out_of_order: u64,
    /// Packets behind the expected PSN (already received).
    pub duplicates: u64,
    /// Times the receiver went from in-order to waiting for a retransmission.
    pub psn_gaps: u64,
    pub acks_sent: u64,
    pub naks_sent: u64,
    /// Data packets that arrived with ECN CE.
    pub ce_packets: u64,
    pub cnps_sent: u64,
    /// The next PSN the receiver expects.
    pub expected_psn: u32,
    pub first_ns: Option<u64>,
    pub last_ns: Option<u64>,
    /// `received_bytes × 8` over first to last arrival.
    pub goodput_mbps: f64,
    /// One-way latency of every data packet (sender timestamp to arrival).
    pub latency: LatencySummary,
    /// Message latency: first transmission of the message's first packet to in-order arrival of its last.
    pub message_latency: LatencySummary,
}

/// NIC-wide frame counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct NicCounters {
    pub rx_frames: u64,
    pub rx_bytes: u64,
    /// Frames that do not parse (`wire::decode` error, or a RoCE packet too short for its opcode).
    pub rx_malformed: u64,
    /// Valid frames not for this NIC or of a kind it does not handle.
    pub rx_ignored: u64,
    pub rx_pfc_frames: u64,
    pub rx_pause_frames: u64,
    pub rx_arp_requests: u64,
    /// ACK/NAK/CNP for a QP no flow of this NIC owns.
    pub rx_unknown_qp: u64,
    /// Receiving QPs closed after `NicConfig::rx_idle_timeout_ns` without data.
    pub rx_qps_expired: u64,
    /// Receiving QPs replaced by a new incarnation (same key, another initial PSN).
    pub rx_qps_replaced: u64,
    pub tx_frames: u64,
    pub tx_bytes: u64,
    pub tx_data_frames: u64,
    pub tx_ack_frames: u64,
    pub tx_nak_frames: u64,
    pub tx_cnp_frames: u64,
    pub tx_pfc_frames: u64,
    pub tx_arp_replies: u64,
    /// Frames the receive buffer had no room for (`rx_pipeline.rs`; 0 without a buffer).
    pub rx_buffer_drops: u64,
    /// Receive-address translations that missed the NIC's cache.
    pub rx_page_misses: u64,
    /// Times the NIC's PFC watchdog stopped its pauses.
    pub rx_pause_watchdog_events: u64,
    /// Pingmesh pings received (each answered) and pongs received.
    pub rx_probe_frames: u64,
    pub rx_probe_reply_frames: u64,
    /// Pings sent and pongs sent.
    pub tx_probe_frames: u64,
    pub tx_probe_reply_frames: u64,
}

/// PFC state of one priority as the NIC saw it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct PriorityPause {
    pub priority: u8,
    pub counters: PfcCounters,
    /// Total time paused, a pause in progress included.
    pub pause_ns: u64,
}

/// Everything the NIC knows, for a JSON report.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct NicReport {
    pub now_ns: u64,
    pub counters: NicCounters,
    pub pfc: Vec<PriorityPause>,
    pub flows: Vec<FlowStats>,
    pub receivers: Vec<RxStats>,
    /// Pingmesh probing, one entry per peer (empty when the NIC does not probe).
    pub probes: Vec<super::ProbeStats>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_below_256() {
        let mut h = Histogram::new();
        for v in 1..=200 {
            h.record(v);
        }
        assert_eq!(h.quantile(50, 100), Some(100));
        assert_eq!(h.quantile(99, 100), Some(198));
        assert_eq!(h.quantile(999, 1000), Some(200));
        assert_eq!((h.min(), h.max(), h.mean()), (Some(1), Some(200), Some(100)));
    }

    #[test]
    fn percentiles_of_a_known_set_within_resolution() {
        // 1..=100_000 ns: the true p50/p99/p99.9 are 50_000, 99_000, 99_900.
        let mut h = Histogram::new();
        for v in 1..=100_000u64 {
            h.record(v);
        }
        for (num, den, exact) in [(50, 100, 50_000u64), (99, 100, 99_000), (999, 1000, 99_900)] {
            let q = h.quantile(num, den).unwrap();
            assert!(q >= exact && q <= exact + exact / 128, "{num}/{den}: {q} vs {exact}");
        }
        let s = h.summary();
        assert_eq!((s.count, s.min_ns, s.max_ns, s.mean_ns), (100_000, 1, 100_000, 50_000));
    }

    #[test]
    fn skewed_set_and_tail() {
        // 990 values of 1 µs and 10 of 1 ms: p50 = p99 = 1 µs (bucket edge), p99.9 = 1 ms.
        let mut h = Histogram::new();
        for _ in 0..990 {
            h.record(1_000);
        }
        for _ in 0..10 {
            h.record(1_000_000);
        }
        let s = h.summary();
        assert!((1_000..=1_007).contains(&s.p50_ns), "{s:?}");
        assert!((1_000..=1_007).contains(&s.p99_ns), "{s:?}");
        assert_eq!(s.p999_ns, 1_000_000, "clamped to the maximum");
    }

    #[test]
    fn bucket_edges_are_consistent() {
        for v in [0u64, 1, 255, 256, 257, 511, 512, 1000, 123_456_789, u64::MAX / 3, u64::MAX] {
            let i = Histogram::index(v);
            assert!(Histogram::bucket_high(i) >= v, "{v}");
            if i > 0 {
                assert!(Histogram::bucket_high(i - 1) < v, "{v}");
            }
            let high = Histogram::bucket_high(i);
            assert!(high - v <= v / 128, "{v}: bucket too wide");
        }
        assert_eq!(Histogram::index(u64::MAX), 7423);
    }

    #[test]
    fn since_keeps_only_the_later_values() {
        // 100 values of 1 µs, then 10 of 300 µs: since the copy taken in between, only the 10 remain.
        let mut h = Histogram::new();
        for _ in 0..100 {
            h.record(1_000);
        }
        let earlier = h.clone();
        for _ in 0..10 {
            h.record(300_000);
        }
        let later = h.since(&earlier);
        let s = later.summary();
        assert_eq!((s.count, s.mean_ns), (10, 300_000));
        assert!((300_000 - 300_000 / 128..=300_000).contains(&s.min_ns), "{s:?}");
        assert_eq!((s.p50_ns, s.max_ns), (300_000, 300_000), "clamped to the maximum seen");
        assert_eq!(h.since(&h).summary(), LatencySummary::default(), "nothing since itself");
        assert_eq!(h.since(&Histogram::new()).summary(), h.summary(), "everything since empty");
    }

    #[test]
    fn merge_and_empty() {
        let mut a = Histogram::new();
        assert_eq!(a.summary(), LatencySummary::default());
        let mut b = Histogram::new();
        b.record(5);
        b.record(7);
        a.merge(&b);
        a.record(3);
        assert_eq!((a.count(), a.min(), a.max()), (3, Some(3), Some(7)));
    }
}
