//! What the NIC reports: per-flow sender statistics, per-QP receiver statistics, NIC counters, and the
//! percentiles of the latency histograms ([`Histogram`], `histogram.rs`). Everything is `Serialize`, so a
//! driver can dump a [`NicReport`] as JSON.

pub use super::histogram::Histogram;
use crate::model::pfc::PfcCounters;
use serde::Serialize;
use std::net::Ipv4Addr;

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
