//! The files rocehost writes for other processes: the report (`--report FILE`, and `--json` on stdout) and
//! the ready file (`--ready-file FILE`). These types are the one definition of their format: rocehost
//! writes them, the launcher ([`crate::launch::Rocehost`]), the labs (`swctl lab demo`, `swctl lab run`), the
//! soak and the tests read them.
//!
//! The report is the NIC model's [`NicReport`] as JSON, field for field: [`Report::from`] destructures every
//! model type without `..`, so a field added to the model does not compile until it is added here, and a
//! test checks that both serialise to the same text. rocehost adds [`Report::start`], when the run began.
//!
//! Times (`now_ns`, `first_send_ns`, `first_ns`, ...) are `CLOCK_MONOTONIC` nanoseconds, the clock of
//! switchd's events and counters too (see [`crate::clock`]); [`RunStart`] ties that clock to the wall clock.

use crate::nic::{
    DcqcnStats, FlowStats, LatencySummary, NicCounters, NicReport, PriorityPause, ProbeStats, RxStats,
};
use crate::wire::EthernetAddress;
use serde::{Deserialize, Serialize};
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

/// Everything the NIC knows at exit (see [`NicReport`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// When the run began (absent in a report built from the model alone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<RunStart>,
    pub now_ns: u64,
    pub counters: FrameCounters,
    /// One entry per priority 0..=7.
    pub pfc: Vec<PriorityReport>,
    /// Sender side, one per `--flow`.
    pub flows: Vec<FlowReport>,
    /// Receiver side, one per QP: (source IP, QP, requester QP); closed (idle) QPs first.
    pub receivers: Vec<ReceiverReport>,
    /// Pingmesh probing (`--pingmesh-peer`), one per peer; absent (empty) in older reports.
    #[serde(default)]
    pub probes: Vec<ProbeReport>,
}

/// What the probes measured towards one peer (see [`ProbeStats`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProbeReport {
    pub peer: Option<Ipv4Addr>,
    pub dscp: u8,
    pub priority: u8,
    pub sent: u64,
    pub received: u64,
    pub lost: u64,
    pub outstanding: u64,
    pub unexpected: u64,
    pub rtt: LatencyReport,
    pub responder_hold: LatencyReport,
}

/// When a run began, on both clocks: `unix_ns - monotonic_ns` turns any time of the report into wall-clock
/// time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunStart {
    /// `CLOCK_MONOTONIC`, ns: the clock of the report's other times.
    pub monotonic_ns: u64,
    /// The same instant as wall-clock time, ns since the Unix epoch (UTC).
    pub unix_ns: u64,
}

impl RunStart {
    /// The start `monotonic_ns`, its wall-clock time through `clock`.
    pub fn at(monotonic_ns: u64, clock: &crate::clock::WallClock) -> RunStart {
        RunStart { monotonic_ns, unix_ns: clock.unix_ns(monotonic_ns) }
    }

    /// The wall-clock time (ns since the Unix epoch) of a monotonic time of the same report.
    pub fn unix_ns_of(&self, monotonic_ns: u64) -> u64 {
        (i128::from(self.unix_ns) + i128::from(monotonic_ns) - i128::from(self.monotonic_ns))
            .clamp(0, i128::from(u64::MAX)) as u64
    }
}

/// NIC-wide frame counters (see [`NicCounters`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FrameCounters {
    pub rx_frames: u64,
    pub rx_bytes: u64,
    pub rx_malformed: u64,
    pub rx_ignored: u64,
    pub rx_pfc_frames: u64,
    pub rx_pause_frames: u64,
    pub rx_arp_requests: u64,
    pub rx_unknown_qp: u64,
    /// Added with per-QP receive state; absent (0) in older reports.
    #[serde(default)]
    pub rx_qps_expired: u64,
    #[serde(default)]
    pub rx_qps_replaced: u64,
    pub tx_frames: u64,
    pub tx_bytes: u64,
    pub tx_data_frames: u64,
    pub tx_ack_frames: u64,
    pub tx_nak_frames: u64,
    pub tx_cnp_frames: u64,
    pub tx_pfc_frames: u64,
    pub tx_arp_replies: u64,
    /// Added with the receive pipeline; absent (0) in older reports.
    #[serde(default)]
    pub rx_buffer_drops: u64,
    #[serde(default)]
    pub rx_page_misses: u64,
    #[serde(default)]
    pub rx_pause_watchdog_events: u64,
    /// Added with Pingmesh probes; absent (0) in older reports.
    #[serde(default)]
    pub rx_probe_frames: u64,
    #[serde(default)]
    pub rx_probe_reply_frames: u64,
    #[serde(default)]
    pub tx_probe_frames: u64,
    #[serde(default)]
    pub tx_probe_reply_frames: u64,
}

/// PFC state of one priority (see [`PriorityPause`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PriorityReport {
    pub priority: u8,
    pub counters: PfcFrames,
    /// Total time paused, a pause in progress included.
    pub pause_ns: u64,
}

/// PFC frame counters of one priority (see `lossless_core::model::pfc::PfcCounters`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PfcFrames {
    pub rx: u64,
    pub rx_xon: u64,
    pub tx: u64,
    pub rx_pause_transitions: u64,
    pub rx_pause_ns: u64,
}

/// Sender side of one flow (see [`FlowStats`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FlowReport {
    pub id: u32,
    pub dst_ip: Option<Ipv4Addr>,
    pub src_qp: u32,
    pub dst_qp: u32,
    /// Absent (0) in reports of rocehosts that always started at PSN 0.
    #[serde(default)]
    pub initial_psn: u32,
    pub dscp: u8,
    pub priority: u8,
    pub sent_packets: u64,
    pub sent_bytes: u64,
    pub retransmitted_packets: u64,
    pub retransmitted_bytes: u64,
    pub acked_bytes: u64,
    pub acked_packets: u64,
    pub messages_started: u64,
    pub messages_completed: u64,
    pub acks_received: u64,
    pub naks_received: u64,
    pub timeouts: u64,
    pub cnps_received: u64,
    pub rate_mbps_now: f64,
    pub goodput_mbps: f64,
    pub first_send_ns: Option<u64>,
    pub finished_ns: Option<u64>,
    /// `None` for a flow that does not react to CNPs.
    pub dcqcn: Option<DcqcnReport>,
    /// Added with RDMA Estats; absent (zero) in older reports.
    #[serde(default)]
    pub message_completion: LatencyReport,
}

/// DCQCN reaction-point state of a flow (see [`DcqcnStats`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct DcqcnReport {
    pub alpha: f64,
    pub current_rate_mbps: f64,
    pub target_rate_mbps: f64,
    pub cnps: u64,
    pub rate_decreases: u64,
    pub rate_increases: u64,
}

/// Receiver side of one QP: (source IP, destination QP, requester QP) (see [`RxStats`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ReceiverReport {
    pub src_ip: Option<Ipv4Addr>,
    pub qp: u32,
    /// The requester's QP; absent (0) in older reports.
    #[serde(default)]
    pub src_qp: u32,
    pub flow_id: u32,
    pub received_packets: u64,
    pub received_bytes: u64,
    pub messages_received: u64,
    pub out_of_order: u64,
    pub duplicates: u64,
    pub psn_gaps: u64,
    pub acks_sent: u64,
    pub naks_sent: u64,
    pub ce_packets: u64,
    pub cnps_sent: u64,
    pub expected_psn: u32,
    pub first_ns: Option<u64>,
    pub last_ns: Option<u64>,
    pub goodput_mbps: f64,
    pub latency: LatencyReport,
    pub message_latency: LatencyReport,
}

/// Latency percentiles (see [`LatencySummary`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LatencyReport {
    pub count: u64,
    pub min_ns: u64,
    pub mean_ns: u64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
    pub max_ns: u64,
}

impl Report {
    /// Reads a report file.
    pub fn load(path: &Path) -> anyhow::Result<Report> {
        use anyhow::Context as _;
        let text =
            std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
        serde_json::from_str(&text).with_context(|| format!("{}: not a rocehost report", path.display()))
    }

    /// The sender statistics of the flow to `dst_ip` whose receiving QP is `dst_qp`.
    pub fn flow_to(&self, dst_ip: Ipv4Addr, dst_qp: u32) -> Option<&FlowReport> {
        self.flows.iter().find(|f| f.dst_ip == Some(dst_ip) && f.dst_qp == dst_qp)
    }

    /// The receiver statistics of QP `qp` for data from `src_ip`; when several requester QPs fed it (several
    /// runs of a sender), the one that got data last.
    pub fn receiver(&self, src_ip: Ipv4Addr, qp: u32) -> Option<&ReceiverReport> {
        self.receivers.iter().filter(|r| r.src_ip == Some(src_ip) && r.qp == qp).max_by_key(|r| r.last_ns)
    }

    /// Time the NIC was paused on `priority`, ns.
    pub fn pause_ns(&self, priority: u8) -> u64 {
        self.pfc.iter().find(|p| p.priority == priority).map_or(0, |p| p.pause_ns)
    }
}

impl From<NicReport> for Report {
    fn from(r: NicReport) -> Report {
        let NicReport { now_ns, counters, pfc, flows, receivers, probes } = r;
        Report {
            start: None,
            now_ns,
            counters: counters.into(),
            pfc: pfc.into_iter().map(PriorityReport::from).collect(),
            flows: flows.into_iter().map(FlowReport::from).collect(),
            receivers: receivers.into_iter().map(ReceiverReport::from).collect(),
            probes: probes.into_iter().map(ProbeReport::from).collect(),
        }
    }
}

impl From<ProbeStats> for ProbeReport {
    fn from(p: ProbeStats) -> ProbeReport {
        let ProbeStats {
            peer,
            dscp,
            priority,
            sent,
            received,
            lost,
            outstanding,
            unexpected,
            rtt,
            responder_hold,
        } = p;
        ProbeReport {
            peer,
            dscp,
            priority,
            sent,
            received,
            lost,
            outstanding,
            unexpected,
            rtt: rtt.into(),
            responder_hold: responder_hold.into(),
        }
    }
}

impl From<NicCounters> for FrameCounters {
    fn from(c: NicCounters) -> FrameCounters {
        let NicCounters {
            rx_frames,
            rx_bytes,
            rx_malformed,
            rx_ignored,
            rx_pfc_frames,
            rx_pause_frames,
            rx_arp_requests,
            rx_unknown_qp,
            rx_qps_expired,
            rx_qps_replaced,
            tx_frames,
            tx_bytes,
            tx_data_frames,
            tx_ack_frames,
            tx_nak_frames,
            tx_cnp_frames,
            tx_pfc_frames,
            tx_arp_replies,
            rx_buffer_drops,
            rx_page_misses,
            rx_pause_watchdog_events,
            rx_probe_frames,
            rx_probe_reply_frames,
            tx_probe_frames,
            tx_probe_reply_frames,
        } = c;
        FrameCounters {
            rx_frames,
            rx_bytes,
            rx_malformed,
            rx_ignored,
            rx_pfc_frames,
            rx_pause_frames,
            rx_arp_requests,
            rx_unknown_qp,
            rx_qps_expired,
            rx_qps_replaced,
            tx_frames,
            tx_bytes,
            tx_data_frames,
            tx_ack_frames,
            tx_nak_frames,
            tx_cnp_frames,
            tx_pfc_frames,
            tx_arp_replies,
            rx_buffer_drops,
            rx_page_misses,
            rx_pause_watchdog_events,
            rx_probe_frames,
            rx_probe_reply_frames,
            tx_probe_frames,
            tx_probe_reply_frames,
        }
    }
}

impl From<PriorityPause> for PriorityReport {
    fn from(p: PriorityPause) -> PriorityReport {
        let PriorityPause { priority, counters, pause_ns } = p;
        let crate::model::pfc::PfcCounters { rx, rx_xon, tx, rx_pause_transitions, rx_pause_ns } = counters;
        PriorityReport {
            priority,
            counters: PfcFrames { rx, rx_xon, tx, rx_pause_transitions, rx_pause_ns },
            pause_ns,
        }
    }
}

impl From<FlowStats> for FlowReport {
    fn from(f: FlowStats) -> FlowReport {
        let FlowStats {
            id,
            dst_ip,
            src_qp,
            dst_qp,
            initial_psn,
            dscp,
            priority,
            sent_packets,
            sent_bytes,
            retransmitted_packets,
            retransmitted_bytes,
            acked_bytes,
            acked_packets,
            messages_started,
            messages_completed,
            acks_received,
            naks_received,
            timeouts,
            cnps_received,
            rate_mbps_now,
            goodput_mbps,
            first_send_ns,
            finished_ns,
            dcqcn,
            message_completion,
        } = f;
        FlowReport {
            id,
            dst_ip,
            src_qp,
            dst_qp,
            initial_psn,
            dscp,
            priority,
            sent_packets,
            sent_bytes,
            retransmitted_packets,
            retransmitted_bytes,
            acked_bytes,
            acked_packets,
            messages_started,
            messages_completed,
            acks_received,
            naks_received,
            timeouts,
            cnps_received,
            rate_mbps_now,
            goodput_mbps,
            first_send_ns,
            finished_ns,
            dcqcn: dcqcn.map(DcqcnReport::from),
            message_completion: message_completion.into(),
        }
    }
}

impl From<DcqcnStats> for DcqcnReport {
    fn from(d: DcqcnStats) -> DcqcnReport {
        let DcqcnStats { alpha, current_rate_mbps, target_rate_mbps, cnps, rate_decreases, rate_increases } =
            d;
        DcqcnReport { alpha, current_rate_mbps, target_rate_mbps, cnps, rate_decreases, rate_increases }
    }
}

impl From<RxStats> for ReceiverReport {
    fn from(r: RxStats) -> ReceiverReport {
        let RxStats {
            src_ip,
            qp,
            src_qp,
            flow_id,
            received_packets,
            received_bytes,
            messages_received,
            out_of_order,
            duplicates,
            psn_gaps,
            acks_sent,
            naks_sent,
            ce_packets,
            cnps_sent,
            expected_psn,
            first_ns,
            last_ns,
            goodput_mbps,
            latency,
            message_latency,
        } = r;
        ReceiverReport {
            src_ip,
            qp,
            src_qp,
            flow_id,
            received_packets,
            received_bytes,
            messages_received,
            out_of_order,
            duplicates,
            psn_gaps,
            acks_sent,
            naks_sent,
            ce_packets,
            cnps_sent,
            expected_psn,
            first_ns,
            last_ns,
            goodput_mbps,
            latency: latency.into(),
            message_latency: message_latency.into(),
        }
    }
}

impl From<LatencySummary> for LatencyReport {
    fn from(l: LatencySummary) -> LatencyReport {
        let LatencySummary { count, min_ns, mean_ns, p50_ns, p99_ns, p999_ns, max_ns } = l;
        LatencyReport { count, min_ns, mean_ns, p50_ns, p99_ns, p999_ns, max_ns }
    }
}

/// The ready file's content: written once the interface is open and the loop runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ready {
    pub pid: u32,
    pub interface: String,
    pub mac: String,
    pub ip: String,
}

impl Ready {
    pub fn new(interface: &str, mac: EthernetAddress, ip: Ipv4Addr) -> Ready {
        Ready {
            pid: std::process::id(),
            interface: interface.to_owned(),
            mac: mac.to_string(),
            ip: ip.to_string(),
        }
    }

    /// Reads a ready file.
    pub fn load(path: &Path) -> anyhow::Result<Ready> {
        use anyhow::Context as _;
        let text =
            std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
        serde_json::from_str(&text)
            .with_context(|| format!("{}: not a rocehost ready file: {text:?}", path.display()))
    }

    /// One line of JSON.
    pub fn to_line(&self) -> String {
        serde_json::to_string(self).unwrap_or_default() + "\n"
    }
}

/// Writes `path` through a temporary file and a rename, so a reader never sees it half written.
pub fn write_atomically(path: &Path, content: &[u8]) -> std::io::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".tmp{}", std::process::id()));
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, content)?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nic::{FlowConfig, Nic, NicConfig, ProbeConfig, ProbePeer};
    use crate::sim::{Device, Sim};
    use crate::time::Nanos;

    /// A NIC that sent and received something, with DCQCN on: every part of the report is filled in.
    fn busy_report() -> NicReport {
        let mac_a = EthernetAddress([2, 0, 0, 0, 0, 1]);
        let mac_b = EthernetAddress([2, 0, 0, 0, 0, 2]);
        let ip = |n| Ipv4Addr::new(10, 0, 0, n);
        let nic = |mac, n| {
            Nic::new(NicConfig { mac, ip: ip(n), pfc_enable: 0b1000, ..NicConfig::default() }).unwrap()
        };
        let (mut a, b) = (nic(mac_a, 1), nic(mac_b, 2));
        a.add_flow(FlowConfig {
            id: 1,
            dst_ip: ip(2),
            dst_mac: mac_b,
            src_port: 49152,
            src_qp: 0x100,
            dst_qp: 0x100,
            dscp: 3,
            priority: 3,
            rate_mbps: None,
            message_bytes: 4096,
            messages: Some(2),
            start_ns: 0,
            until_ns: None,
            initial_psn: 0,
            dcqcn: true,
        })
        .unwrap();
        a.set_probes(ProbeConfig {
            interval_ns: 100_000,
            peers: vec![ProbePeer { ip: ip(2), mac: mac_b }],
            ..ProbeConfig::default()
        })
        .unwrap();
        let mut sim = Sim::new();
        let (a, b) = (sim.add(Device::Nic(Box::new(a))), sim.add(Device::Nic(Box::new(b))));
        sim.connect(a.port(0), 1000, b.port(0), 1000, Nanos::from_ns(1_000));
        sim.run_until(crate::time::Instant::from_ns(10_000_000));
        let mut report = sim.nic(a).report();
        report.receivers = sim.nic(b).report().receivers;
        report
    }

    #[test]
    fn the_file_is_the_models_report_field_for_field() {
        let model = busy_report();
        assert!(!model.flows.is_empty() && model.flows[0].dcqcn.is_some(), "{model:?}");
        assert!(!model.receivers.is_empty(), "{model:?}");
        assert!(model.probes.first().is_some_and(|p| p.received > 0), "{model:?}");
        let file = Report::from(model.clone());
        assert_eq!(
            serde_json::to_string_pretty(&file).unwrap(),
            serde_json::to_string_pretty(&model).unwrap()
        );
        let back: Report = serde_json::from_str(&serde_json::to_string(&model).unwrap()).unwrap();
        assert_eq!(back, file);
    }

    #[test]
    fn lookups_find_the_flow_the_receiver_and_the_pause() {
        let model = busy_report();
        let file = Report::from(model);
        assert!(file.flow_to(Ipv4Addr::new(10, 0, 0, 2), 0x100).is_some());
        assert!(file.receiver(Ipv4Addr::new(10, 0, 0, 1), 0x100).is_some_and(|r| r.received_packets > 0));
        assert_eq!(file.pause_ns(3), 0);
    }
}
