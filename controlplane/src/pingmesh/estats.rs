//! `estats.json`: per-flow RDMA statistics in the style of RDMA Estats (Microsoft's per-connection RDMA
//! counters, "RDMA over Commodity Ethernet at Scale", SIGCOMM 2016): for every flow of a run, what its
//! sender and its receiver counted (bytes, retransmissions, CNPs, ECN marks, the time the sender's NIC was
//! paused on the flow's priority), its latencies, and the Pingmesh RTT between its two hosts when probes ran;
//! and per host, the NIC's frames and pause time. Written by `swctl sim run` (always) and `swctl lab run`
//! and `swctl lab pingmesh` into their run directories, from the hosts' rocehost reports.

use super::PingmeshMatrix;
use crate::lab::topology::Topology;
use crate::lab::up::flow_qp;
use lossless_dataplane::rocehost::report::{LatencyReport, Report};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::net::Ipv4Addr;

/// Version of the `estats.json` format.
pub const ESTATS_VERSION: u32 = 1;

/// The whole file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Estats {
    pub version: u32,
    /// `simulation, seed N` or `lab NAME`.
    pub source: String,
    /// One per flow of the topology's traffic, in order (the scenario's flow numbers).
    pub flows: Vec<FlowEstats>,
    pub hosts: Vec<HostEstats>,
}

/// One flow (an RC QP pair): sender and receiver counters side by side. Bytes are RoCE payload bytes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FlowEstats {
    /// The flow's number in the scenario (from 0).
    pub flow: usize,
    pub from: String,
    pub to: String,
    pub src_ip: Option<Ipv4Addr>,
    pub dst_ip: Option<Ipv4Addr>,
    pub dscp: u8,
    pub priority: u8,
    /// The requester's QP and the responder's (BTH DestQP).
    pub src_qp: u32,
    pub dst_qp: u32,
    /// The sender had statistics for the flow (false: it never started, or its report is missing).
    pub sender_seen: bool,
    pub sent_bytes: u64,
    pub sent_packets: u64,
    pub acked_bytes: u64,
    pub retransmitted_packets: u64,
    pub retransmitted_bytes: u64,
    /// Retransmission timeouts and NAKs received (go-back-N/0 rewinds).
    pub timeouts: u64,
    pub naks_received: u64,
    /// CNPs the sender received (its DCQCN reaction point) and the rate cuts they caused.
    pub cnps_received: u64,
    pub dcqcn_rate_decreases: u64,
    /// Time the sender's NIC was paused by PFC on the flow's priority, ns (shared by the host's flows on
    /// that priority).
    pub pause_ns: u64,
    pub goodput_mbps: f64,
    /// The receiver had statistics for the flow.
    pub receiver_seen: bool,
    pub received_bytes: u64,
    pub received_packets: u64,
    /// Packets that arrived with ECN CE, and the CNPs the receiver sent for them.
    pub ce_packets: u64,
    pub cnps_sent: u64,
    pub out_of_order: u64,
    pub psn_gaps: u64,
    /// Message completion on the sender: a message's first transmission to the ACK of its last packet
    /// (RDMA Estats' per-operation latency), ns.
    pub message_completion: LatencyReport,
    /// One-way latency of every data packet (sender timestamp to arrival), ns.
    pub packet_latency: LatencyReport,
    /// First transmission of a message's first packet to in-order arrival of its last, ns.
    pub message_latency: LatencyReport,
    /// Pingmesh RTT from the sender to the receiver (the probes' class, not necessarily the flow's), ns;
    /// absent when no probes ran.
    pub rtt: Option<LatencyReport>,
}

/// One host's NIC.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostEstats {
    pub name: String,
    pub ip: Ipv4Addr,
    pub tx_frames: u64,
    pub tx_bytes: u64,
    pub rx_frames: u64,
    pub rx_bytes: u64,
    pub rx_pfc_frames: u64,
    pub tx_pfc_frames: u64,
    /// Time paused by received PFC, per priority 0..=7, ns.
    pub pause_ns: Vec<u64>,
    pub tx_cnp_frames: u64,
    pub tx_probe_frames: u64,
    pub tx_probe_reply_frames: u64,
}

impl Estats {
    /// From the hosts' reports (by host name), and the latency matrix when probes ran.
    pub fn build(
        source: &str,
        topology: &Topology,
        reports: &BTreeMap<String, Report>,
        matrix: Option<&PingmeshMatrix>,
    ) -> Estats {
        let flows = topology
            .traffic
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let (src, dst) = (topology.host(&f.from), topology.host(&f.to));
                let mut e = FlowEstats {
                    flow: i,
                    from: f.from.clone(),
                    to: f.to.clone(),
                    src_ip: src.map(|h| h.ip),
                    dst_ip: dst.map(|h| h.ip),
                    dscp: f.dscp,
                    priority: f.priority,
                    dst_qp: flow_qp(i),
                    ..FlowEstats::default()
                };
                let sender = reports.get(&f.from);
                if let (Some(r), Some(dst)) = (sender, dst)
                    && let Some(s) = r.flow_to(dst.ip, flow_qp(i))
                {
                    e.sender_seen = true;
                    e.src_qp = s.src_qp;
                    e.sent_bytes = s.sent_bytes;
                    e.sent_packets = s.sent_packets;
                    e.acked_bytes = s.acked_bytes;
                    e.retransmitted_packets = s.retransmitted_packets;
                    e.retransmitted_bytes = s.retransmitted_bytes;
                    e.timeouts = s.timeouts;
                    e.naks_received = s.naks_received;
                    e.cnps_received = s.cnps_received;
                    e.dcqcn_rate_decreases = s.dcqcn.map_or(0, |d| d.rate_decreases);
                    e.goodput_mbps = s.goodput_mbps;
                    e.pause_ns = r.pause_ns(f.priority);
                    e.message_completion = s.message_completion;
                }
                if let (Some(r), Some(src)) = (reports.get(&f.to), src)
                    && let Some(q) = r.receiver(src.ip, flow_qp(i))
                {
                    e.receiver_seen = true;
                    e.received_bytes = q.received_bytes;
                    e.received_packets = q.received_packets;
                    e.ce_packets = q.ce_packets;
                    e.cnps_sent = q.cnps_sent;
                    e.out_of_order = q.out_of_order;
                    e.psn_gaps = q.psn_gaps;
                    e.packet_latency = q.latency;
                    e.message_latency = q.message_latency;
                }
                e.rtt = matrix.and_then(|m| m.pair(&f.from, &f.to)).filter(|p| p.received > 0).map(|p| p.rtt);
                e
            })
            .collect();
        let hosts = topology
            .hosts
            .iter()
            .map(|h| {
                let mut e = HostEstats {
                    name: h.name.clone(),
                    ip: h.ip,
                    tx_frames: 0,
                    tx_bytes: 0,
                    rx_frames: 0,
                    rx_bytes: 0,
                    rx_pfc_frames: 0,
                    tx_pfc_frames: 0,
                    pause_ns: vec![0; 8],
                    tx_cnp_frames: 0,
                    tx_probe_frames: 0,
                    tx_probe_reply_frames: 0,
                };
                if let Some(r) = reports.get(&h.name) {
                    let c = &r.counters;
                    e.tx_frames = c.tx_frames;
                    e.tx_bytes = c.tx_bytes;
                    e.rx_frames = c.rx_frames;
                    e.rx_bytes = c.rx_bytes;
                    e.rx_pfc_frames = c.rx_pfc_frames;
                    e.tx_pfc_frames = c.tx_pfc_frames;
                    e.tx_cnp_frames = c.tx_cnp_frames;
                    e.tx_probe_frames = c.tx_probe_frames;
                    e.tx_probe_reply_frames = c.tx_probe_reply_frames;
                    e.pause_ns = (0..8u8).map(|p| r.pause_ns(p)).collect();
                }
                e
            })
            .collect();
        Estats { version: ESTATS_VERSION, source: source.to_owned(), flows, hosts }
    }
}
