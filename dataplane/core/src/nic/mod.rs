//! The sans-I/O RoCEv2 host NIC: what the host emulator (`rocehost`) and the virtual-time simulator put
//! at the edge of a fabric.
//!
//! [`Nic`] is a plain state machine in the style of quinn-proto (and of [`crate::model::Switch`]): it never
//! reads a clock, opens a socket or spawns; time is passed in, an [`Instant`] (integer nanoseconds).
//!
//! ```text
//! handle_frame(frame, now)    a frame arrived from the link
//! handle_timeout(now)         run what is due (DCQCN timers, retransmission timeouts)
//! poll_transmit(now)          the line is free: the next frame to send, if any may go now
//! poll_at()                   the next instant either of the two above has something to do
//! ```
//!
//! A driver calls `handle_timeout` and then `poll_transmit` until it returns `None` whenever `now`
//! reaches `poll_at()`, and after every `handle_frame`. The line is paced inside the NIC: a frame occupies
//! it for `(len + 24) × 8` bits at `line_rate_mbps` (FCS, preamble and IFG, as the switch counts), so
//! `poll_transmit` yields at most one frame per line slot and `poll_at` says when the next slot opens.
//!
//! What the NIC does:
//! * **Sends** RoCEv2 flows ([`FlowConfig`]): RC SEND FIRST/MIDDLE/LAST/ONLY packets with PSNs, UDP 4791,
//!   the flow's DSCP with ECT(0), in messages of a fixed size (a count of them, unbounded, or until a
//!   time), paced at min(configured rate, DCQCN rate, line rate), round-robin among flows that may send.
//! * **Honours PFC** per priority with quanta timers ([`crate::model::pfc::PfcPort`], the switch's own
//!   implementation): `pfc_enable` priorities pause for quanta × 512 bit times at the line rate, a new
//!   frame overwrites the timer, quanta 0 resumes. A paused priority sends nothing (data, ACKs, CNPs);
//!   PFC frames themselves are never paused. 802.3x PAUSE is honoured only when `pfc_enable` is 0.
//! * **Receives** any RoCE data addressed to it, per QP — (source IP, destination QP, requester QP), so a
//!   new requester QP never inherits an old one's PSN state: PSN tracking, go-back-N or go-back-0,
//!   coalesced ACKs and suppressed NAKs as RC ACKNOWLEDGE packets with an [`Aeth`], and CNPs (DCQCN
//!   notification point, paced per QP, DSCP 48 / priority 6). QPs idle for `rx_idle_timeout_ns` (10 s)
//!   are closed. See `receiver.rs`.
//! * **Reacts** to ACK/NAK (advance, go back to the NAK'd PSN or to the start of its message), to the
//!   retransmission timeout (go back to the first unacknowledged packet), and to CNPs (DCQCN reaction
//!   point, [`dcqcn`]).
//! * **Answers ARP** requests for its address; **storms** PFC XOFF on demand ([`Nic::set_storm`]).
//! * **Answers Pingmesh pings** (a UD SEND to the probe QP) with a pong at once, and, when given peers
//!   ([`Nic::set_probes`]), pings them at an interval and keeps per-peer RTT percentiles ([`probe`]).
//!
//! Control frames go before data: PFC storm frames, then ARP replies, ACK/NAKs, CNPs and pongs in the
//! order they became due (skipping those whose priority is paused), then a ping that is due. Frames from this NIC are untagged unless
//! `vlan_id` is set (then the PCP is the frame's priority). The priority of ACK/NAKs is looked up from the
//! DSCP of the data they answer (`dscp_to_priority`, default DSCP >> 3, the trust-DSCP mapping of
//! ConnectX NICs).

mod config;
pub mod dcqcn;
pub mod flow;
mod flow_index;
mod histogram;
pub mod packet;
pub mod probe;
mod receiver;
mod rx_parse;
pub mod rx_pipeline;
#[cfg(test)]
mod rx_pipeline_tests;
#[cfg(test)]
mod scale_tests;
pub mod stats;
#[cfg(test)]
mod tests;
mod transmit;

pub use dcqcn::{Dcqcn, DcqcnParams};
pub use flow::{FlowConfig, WIRE_OVERHEAD_BYTES};
pub use packet::{Aeth, DataHeader};
pub use probe::{ProbeConfig, ProbePeer, ProbeStats};
pub use stats::{
    DcqcnStats, FlowStats, Histogram, LatencySummary, NicCounters, NicReport, PriorityPause, RxStats,
};

use crate::model::pfc::{PfcCounters, PfcPort};
use crate::time::{Instant, Nanos};
use crate::wire::bth::{self, Opcode};
use crate::wire::ip::Ecn;
use crate::wire::{ArpOperation, ArpRepr, EthernetAddress, L3, RoceV4, udp};
use flow::{FlowSchedule, SendFlow};
use flow_index::FlowIndex;
use receiver::{RxKey, RxParams, RxQp, RxTable, data_position, implied_initial_psn};
use rx_pipeline::RxPipeline;
pub use rx_pipeline::{RxPipelineConfig, RxPipelineStats};
use std::collections::VecDeque;
use std::net::Ipv4Addr;

pub(crate) use config::mac_serde;
pub use config::{NicConfig, NicError, NpParams, Retransmit};

/// PFC quanta of a storm XOFF.
pub const STORM_QUANTA: u16 = 0xffff;
/// The first QP number handed out to flows configured with `src_qp: 0`.
pub const FIRST_AUTO_QP: u32 = 0x100;
/// Closed receiving QPs whose statistics the report keeps (the oldest go first).
pub const RETIRED_RX_QPS: usize = 256;
/// Priority of ARP replies.
const ARP_PRIORITY: u8 = 0;
const IDENTITY_PRIORITIES: [u8; 8] = [0, 1, 2, 3, 4, 5, 6, 7];
/// Received control frames kept to build frames in ([`Nic::recycle`]).
const SPARE_FRAMES: usize = 16;
/// Received data frames kept to build data frames in. A host of a congested fabric receives more than it
/// sends for a while (a paused priority sends nothing, but the data keeps arriving): with 16 spares
/// shared by data and control frames, one data frame in eight of the 128-host Clos shuffle was built
/// in a new buffer, allocated and zeroed (4 KiB), while the buffers received beyond the 16 were freed.
const SPARE_DATA_FRAMES: usize = 64;

/// A control frame waiting for the line.
#[derive(Debug, Clone, Copy)]
enum Control {
    Arp(ArpRepr),
    Ack(RxKey),
    Nak(RxKey),
    Cnp(RxKey),
    /// The answer to a ping ([`probe`]).
    Pong(probe::Pong),
}

/// The NIC. See the module documentation.
#[derive(Debug)]
pub struct Nic {
    cfg: NicConfig,
    now: Instant,
    /// The line is busy until this instant (ps, exact), with the division remainder carried.
    line_free_ps: u128,
    line_remainder: u128,
    pfc: PfcPort,
    storm_interval: Nanos,
    control: VecDeque<Control>,
    control_ident: u16,
    /// When this port last made a CNP due (for `min_time_between_cnps_ns`).
    last_port_cnp: Option<Instant>,
    flows: Vec<SendFlow>,
    /// Beside each flow, what the scans read of it ([`FlowSchedule`]), refreshed whenever it changes.
    schedules: Vec<FlowSchedule>,
    /// The schedules indexed by instant, so that the NIC's scans cost log(flows) (`flow_index.rs`).
    index: FlowIndex,
    /// The flows' local QP numbers, sorted, with each flow's position in `flows`: an ACK or CNP finds
    /// its flow by binary search instead of a scan of every flow (127 per host in a 128-host shuffle).
    by_qp: Vec<(u32, usize)>,
    /// The flows' ids, sorted, with each flow's position in `flows` (for [`Nic::flow_stats`]).
    by_id: Vec<(u32, usize)>,
    /// Buffers of frames the NIC handled, to build frames in (no allocation per frame in a simulation).
    spares: transmit::Spares,
    rr_next: usize,
    /// The live receiving QPs, hashed: a data packet, and each ACK, NAK or CNP it makes due, finds its QP
    /// in one probe (a B-tree of 127 QPs per host in the 128-host shuffle took a few cache misses each).
    /// Whatever reads them in order sorts their keys ([`Nic::rx_keys_sorted`]).
    receivers: RxTable,
    /// Closed receiving QPs, oldest first, at most [`RETIRED_RX_QPS`].
    retired: VecDeque<(RxKey, RxQp)>,
    /// The next sweep for idle receiving QPs.
    next_expiry: Instant,
    /// The receive buffer and pipeline; `None` = frames consumed on arrival (`rx_pipeline.rs`).
    rx_pipe: Option<RxPipeline>,
    /// Pingmesh probing, when configured ([`Nic::set_probes`]); answering pings needs none.
    prober: Option<probe::Prober>,
    counters: NicCounters,
}

impl Nic {
    pub fn new(cfg: NicConfig) -> Result<Nic, NicError> {
        cfg.validate()?;
        let mut nic = Nic {
            rx_pipe: cfg.rx_pipeline.enabled().then(|| RxPipeline::new(cfg.rx_pipeline)),
            cfg,
            now: Instant::ZERO,
            line_free_ps: 0,
            line_remainder: 0,
            pfc: PfcPort::default(),
            storm_interval: Nanos::ZERO,
            control: VecDeque::new(),
            control_ident: 0,
            last_port_cnp: None,
            flows: Vec::new(),
            schedules: Vec::new(),
            index: FlowIndex::default(),
            by_qp: Vec::new(),
            by_id: Vec::new(),
            spares: transmit::Spares::default(),
            rr_next: 0,
            receivers: RxTable::default(),
            retired: VecDeque::new(),
            next_expiry: Instant::ZERO,
            prober: None,
            counters: NicCounters::default(),
        };
        nic.spares = transmit::Spares::new(nic.data_frame_max_len());
        Ok(nic)
    }

    pub fn config(&self) -> &NicConfig {
        &self.cfg
    }

    /// The latest time any call passed in.
    pub fn now(&self) -> Instant {
        self.now
    }

    fn observe(&mut self, now: Instant) {
        self.now = self.now.max(now);
    }

    fn line_rate_bps(&self) -> u64 {
        u64::from(self.cfg.line_rate_mbps) * 1_000_000
    }

    /// Adds a sending flow; returns its local QP number.
    pub fn add_flow(&mut self, flow: FlowConfig) -> Result<u32, NicError> {
        let id = flow.id;
        let bad = |reason: String| Err(NicError::Flow { id, reason });
        if self.flow_of_id(id).is_some() {
            return bad("duplicate flow id".into());
        }
        if flow.message_bytes == 0 {
            return bad("message_bytes must be > 0".into());
        }
        if flow.dscp > 63 {
            return bad(format!("dscp {} is above 63", flow.dscp));
        }
        if flow.priority > 7 {
            return bad(format!("priority {} is above 7", flow.priority));
        }
        if flow.rate_mbps == Some(0) {
            return bad("rate_mbps must be > 0 (None = no cap)".into());
        }
        for (name, v) in [("initial_psn", flow.initial_psn), ("src_qp", flow.src_qp), ("dst_qp", flow.dst_qp)]
        {
            if v > packet::PSN_MASK {
                return bad(format!("{name} {v:#x} does not fit 24 bits"));
            }
        }
        let qp_in_use = |qp: u32| self.flow_of_qp(qp).is_some();
        let src_qp = if flow.src_qp == 0 {
            (FIRST_AUTO_QP..=packet::PSN_MASK).find(|&q| !qp_in_use(q)).unwrap_or(FIRST_AUTO_QP)
        } else if qp_in_use(flow.src_qp) {
            return bad(format!("src_qp {:#x} is used by another flow", flow.src_qp));
        } else {
            flow.src_qp
        };
        let send = SendFlow::new(
            flow,
            src_qp,
            self.cfg.payload_per_packet(),
            self.line_rate_bps(),
            self.cfg.dcqcn,
            self.cfg.retransmit,
            Nanos::from_ns(self.cfg.rto_ns),
        );
        self.schedules.push(send.schedule(self.now, self.cfg.window_packets));
        self.flows.push(send);
        self.index_added_flow();
        Ok(src_qp)
    }

    /// Removes a flow (whatever it had in flight is forgotten); returns its final statistics.
    pub fn remove_flow(&mut self, id: u32) -> Option<FlowStats> {
        let i = self.flow_of_id(id)?;
        let stats = self.flows[i].stats(self.now);
        self.flows.remove(i);
        self.schedules.remove(i);
        self.rebuild_index();
        if self.rr_next > i {
            self.rr_next -= 1;
        }
        Some(stats)
    }

    /// Starts (or replaces) Pingmesh probing: a ping to every peer per interval ([`probe`]). The NIC
    /// answers pings whether it probes or not.
    pub fn set_probes(&mut self, cfg: ProbeConfig) -> Result<(), NicError> {
        self.prober = Some(probe::Prober::new(cfg).map_err(|e| NicError::Config(format!("probes: {e}")))?);
        Ok(())
    }

    /// What the probes measured, one entry per peer (empty without probing).
    pub fn probe_stats(&self) -> Vec<ProbeStats> {
        self.prober.as_ref().map(|p| p.stats(self.now)).unwrap_or_default()
    }

    /// The probes' RTT histogram towards `peer` (to merge or take other percentiles).
    pub fn probe_rtt_histogram(&self, peer: Ipv4Addr) -> Option<&Histogram> {
        self.prober.as_ref()?.rtt_histogram(peer)
    }

    /// Storm mode (the misbehaving NIC of Microsoft's "RDMA over Commodity Ethernet at Scale", SIGCOMM
    /// 2016): send a PFC XOFF with [`STORM_QUANTA`] for `priorities` (bit mask) at once and then every
    /// `interval`, regardless of anything. 0 stops the storm without an XON (the peer resumes when its
    /// last timer expires).
    pub fn set_storm(&mut self, priorities: u8, interval: Nanos) {
        self.pfc.forget(0xff);
        if let Some(pipe) = &mut self.rx_pipe {
            // The buffer asserts again at its next change if it still wants to.
            pipe.xoff = false;
        }
        if priorities != 0 {
            self.storm_interval = interval.max(Nanos::from_ns(1));
            self.pfc.assert_xoff(priorities);
        }
    }

    /// Priorities this NIC is storming.
    pub fn storm_priorities(&self) -> u8 {
        self.pfc.asserted()
    }

    // ---------------------------------------------------------------------------------------- receive

    /// A frame arrived from the link.
    pub fn handle_frame(&mut self, frame: &[u8], now: Instant) {
        self.observe(now);
        self.counters.rx_frames += 1;
        self.counters.rx_bytes += frame.len() as u64;
        if self.rx_pipe.is_some() && self.rx_enqueue(frame, now) {
            return;
        }
        self.process_frame(frame, now);
    }

    /// What the NIC does with a received frame (on arrival, or when its receive pipeline finishes it).
    fn process_frame(&mut self, frame: &[u8], now: Instant) {
        // A RoCEv2 packet (nearly every frame) and a PFC frame are read at fixed offsets
        // (`rx_parse.rs`); anything else is read in place, or decoded in full.
        match rx_parse::classify(frame) {
            rx_parse::Fast::Roce(roce) => {
                debug_assert_eq!(Some(roce), crate::wire::roce_v4(frame));
                return self.receive_roce(frame, &roce, now);
            }
            rx_parse::Fast::MacControl(repr) => {
                debug_assert_eq!(
                    repr.as_ref().ok(),
                    crate::wire::decode(frame)
                        .ok()
                        .and_then(|d| match d.l3 {
                            L3::MacControl(m) => Some(m),
                            _ => None,
                        })
                        .as_ref()
                );
                let Ok(repr) = repr else {
                    self.counters.rx_malformed += 1;
                    return;
                };
                return self.receive_mac_control(repr, now);
            }
            rx_parse::Fast::Other => {}
        }
        if let Some(roce) = crate::wire::roce_v4(frame) {
            debug_assert_eq!(Some(roce), crate::wire::decode(frame).ok().and_then(|d| RoceV4::of(&d)));
            return self.receive_roce(frame, &roce, now);
        }
        let Ok(decoded) = crate::wire::decode(frame) else {
            self.counters.rx_malformed += 1;
            return;
        };
        if let Some(roce) = RoceV4::of(&decoded) {
            // Not reached (roce_v4 takes these), but should the two ever differ, the same handling.
            return self.receive_roce(frame, &roce, now);
        }
        match decoded.l3 {
            L3::MacControl(repr) => self.receive_mac_control(repr, now),
            L3::Arp(request)
                if request.operation == ArpOperation::Request
                    && request.target_protocol_addr == self.cfg.ip =>
            {
                self.counters.rx_arp_requests += 1;
                self.control.push_back(Control::Arp(ArpRepr {
                    operation: ArpOperation::Reply,
                    source_hardware_addr: self.cfg.mac,
                    source_protocol_addr: self.cfg.ip,
                    target_hardware_addr: request.source_hardware_addr,
                    target_protocol_addr: request.source_protocol_addr,
                }));
            }
            _ => self.counters.rx_ignored += 1,
        }
    }

    /// An IPv4 RoCEv2 packet arrived: handled if it is addressed to this NIC, else ignored.
    fn receive_roce(&mut self, frame: &[u8], r: &RoceV4, now: Instant) {
        if r.ip.dst_addr != self.cfg.ip || r.dst_mac != self.cfg.mac {
            self.counters.rx_ignored += 1;
            return;
        }
        // The BTH payload without the ICRC.
        let start = r.udp_offset + udp::HEADER_LEN + bth::HEADER_LEN;
        let end = (r.udp_offset + udp::HEADER_LEN + r.udp.payload_len).saturating_sub(bth::ICRC_LEN);
        let Some(payload) = frame.get(start..end.max(start)) else {
            self.counters.rx_malformed += 1;
            return;
        };
        let roce = Roce {
            src_mac: r.src_mac,
            src_ip: r.ip.src_addr,
            dscp: r.ip.dscp,
            ce: r.ip.ecn == Ecn::Ce,
            udp_src_port: r.udp.src_port,
            bth: r.bth,
        };
        self.handle_roce(&roce, payload, now);
    }

    fn handle_roce(&mut self, p: &Roce, payload: &[u8], now: Instant) {
        if p.bth.opcode == Opcode::UdSendOnly && p.bth.dest_qp == probe::PROBE_QP {
            self.handle_probe(p, payload, now);
            return;
        }
        if let Some(position) = data_position(p.bth.opcode) {
            let Some(header) = DataHeader::parse(payload) else {
                self.counters.rx_malformed += 1;
                return;
            };
            let params = RxParams {
                ack_every: self.cfg.ack_every,
                nak_interval: Nanos::from_ns(self.cfg.nak_interval_ns),
                cnp_interval: self.cfg.cnp_interval(),
                port_cnp_held: self
                    .last_port_cnp
                    .is_some_and(|t| now.saturating_since(t) < self.cfg.min_time_between_cnps()),
                mode: self.cfg.retransmit,
            };
            let key = RxKey { src_ip: p.src_ip, qp: p.bth.dest_qp, src_qp: header.src_qp };
            let initial_psn = implied_initial_psn(p.bth.psn, &header);
            self.expire_idle(now);
            // Nearly always the live QP of this incarnation: one lookup.
            let rx = match self.receivers.get_mut(&key) {
                Some(rx) if rx.initial_psn() == initial_psn => rx,
                _ => {
                    self.open_receiving_qp(key, initial_psn, now);
                    let Some(rx) = self.receivers.get_mut(&key) else { return };
                    rx
                }
            };
            rx.peer_mac = p.src_mac;
            rx.udp_src_port = p.udp_src_port;
            rx.dscp = p.dscp;
            let out = rx.on_data(p.bth.psn, position, p.bth.ack_request, &header, p.ce, now, &params);
            if out.cnp {
                self.last_port_cnp = Some(now);
                self.control.push_back(Control::Cnp(key));
            }
            if out.nak && !rx.nak_queued {
                rx.nak_queued = true;
                self.control.push_back(Control::Nak(key));
            }
            if out.ack && !rx.ack_queued {
                rx.ack_queued = true;
                self.control.push_back(Control::Ack(key));
            }
            return;
        }
        let qp = p.bth.dest_qp;
        let i = self.flow_of_qp(qp).filter(|&i| self.flows[i].cfg.dst_ip == p.src_ip);
        debug_assert_eq!(i, self.flows.iter().position(|f| f.src_qp == qp && f.cfg.dst_ip == p.src_ip));
        let Some(i) = i else {
            if matches!(p.bth.opcode, Opcode::RcAck | Opcode::Cnp) {
                self.counters.rx_unknown_qp += 1;
            } else {
                self.counters.rx_ignored += 1;
            }
            return;
        };
        let flow = &mut self.flows[i];
        match p.bth.opcode {
            Opcode::RcAck => match Aeth::parse(payload) {
                Some(aeth) if aeth.is_ack() => flow.on_ack(p.bth.psn, now),
                Some(aeth) if aeth.syndrome == Aeth::SYNDROME_NAK_PSN_SEQUENCE_ERROR => {
                    flow.on_nak(p.bth.psn, now)
                }
                Some(_) => self.counters.rx_ignored += 1,
                None => self.counters.rx_malformed += 1,
            },
            Opcode::Cnp => flow.on_cnp(now),
            _ => self.counters.rx_ignored += 1,
        }
        self.reschedule_flow(i);
    }

    /// A ping is answered (a pong queued with the ping's class); a pong goes to the prober.
    fn handle_probe(&mut self, p: &Roce, payload: &[u8], now: Instant) {
        let Some(header) = probe::parse_probe(payload) else {
            self.counters.rx_ignored += 1;
            return;
        };
        match header.kind {
            probe::ProbeKind::Ping => {
                self.counters.rx_probe_frames += 1;
                self.control.push_back(Control::Pong(probe::Pong {
                    to_mac: p.src_mac,
                    to_ip: p.src_ip,
                    dscp: p.dscp,
                    udp_src_port: p.udp_src_port,
                    seq: header.seq,
                    sent_ns: header.sent_ns,
                    arrived: now,
                }));
            }
            probe::ProbeKind::Pong => {
                self.counters.rx_probe_reply_frames += 1;
                if let Some(prober) = &mut self.prober {
                    prober.on_pong(p.src_ip, &header, now);
                }
            }
        }
    }

    /// Refreshes what the scans read of flow `i` after it changed.
    pub(super) fn reschedule_flow(&mut self, i: usize) {
        let schedule = self.flows[i].schedule(self.now, self.cfg.window_packets);
        self.set_schedule(i, schedule);
    }

    /// Makes the live receiving QP of `key` the one whose first PSN is `initial_psn`: the live one if it
    /// is that; or a closed one of the same incarnation, brought back; or a new one (replacing a live one
    /// of another incarnation).
    fn open_receiving_qp(&mut self, key: RxKey, initial_psn: u32, now: Instant) {
        self.expire_idle(now);
        match self.receivers.get(&key) {
            Some(live) if live.initial_psn() == initial_psn => return,
            Some(_) => {
                if let Some(old) = self.receivers.remove(&key) {
                    self.counters.rx_qps_replaced += 1;
                    self.retire(key, old);
                }
            }
            None => {}
        }
        let back = self.retired.iter().rposition(|(k, rx)| *k == key && rx.initial_psn() == initial_psn);
        let rx = match back.and_then(|i| self.retired.remove(i)) {
            Some((_, rx)) => rx,
            None => RxQp::new(key, initial_psn),
        };
        self.receivers.insert(key, rx);
    }

    /// Closes the receiving QPs idle for `rx_idle_timeout_ns`; sweeps at most every eighth of it.
    fn expire_idle(&mut self, now: Instant) {
        // Checked first: this runs for every data packet and timeout, and a sweep is due once a second.
        if now < self.next_expiry {
            return;
        }
        let timeout = Nanos::from_ns(self.cfg.rx_idle_timeout_ns);
        if timeout.is_zero() {
            return;
        }
        self.next_expiry = now + (timeout / 8).max(Nanos::from_ns(1));
        let mut idle: Vec<RxKey> =
            self.receivers.iter().filter(|(_, rx)| rx.expired(now, timeout)).map(|(k, _)| *k).collect();
        // Retired in key order, as the report lists them.
        idle.sort_unstable();
        for key in idle {
            if let Some(rx) = self.receivers.remove(&key) {
                self.counters.rx_qps_expired += 1;
                self.retire(key, rx);
            }
        }
    }

    fn retire(&mut self, key: RxKey, rx: RxQp) {
        if self.retired.len() >= RETIRED_RX_QPS {
            self.retired.pop_front();
        }
        self.retired.push_back((key, rx));
    }

    // ---------------------------------------------------------------------------------------- timers

    /// Runs the timers due by `now`: DCQCN decrease checks and rate increases, retransmission
    /// timeouts, and closes pauses that expired (for the pause-time accounting).
    pub fn handle_timeout(&mut self, now: Instant) {
        self.observe(now);
        if self.rx_pipe.is_some() {
            self.run_rx_pipeline(now);
        }
        self.expire_idle(now);
        self.pfc.settle(now);
        // The flows' schedules are as of the latest time seen (`now` may be behind it).
        let (latest, window) = (self.now, self.cfg.window_packets);
        // Only flows with something due are visited (found in the index): the others' handle_timeout would
        // change nothing.
        if cfg!(debug_assertions) {
            for (flow, schedule) in self.flows.iter().zip(&self.schedules) {
                if schedule.timeout_at.is_none_or(|t| t > now) {
                    debug_assert!(!flow.finishes_at(now) && flow.poll_at().is_none_or(|t| t > now));
                }
            }
        }
        let mut from = 0;
        while let Some(i) = self.index.first_timeout_due(from, now) {
            debug_assert_eq!(
                Some(i),
                (from..self.flows.len()).find(|&k| self.schedules[k].timeout_at.is_some_and(|t| t <= now))
            );
            debug_assert!(self.schedules[i].timeout_at.is_some_and(|t| t <= now));
            self.flows[i].handle_timeout(now);
            let schedule = self.flows[i].schedule(latest, window);
            self.set_schedule(i, schedule);
            from = i + 1;
        }
        debug_assert!((from..self.flows.len()).all(|k| self.schedules[k].timeout_at.is_none_or(|t| t > now)));
    }

    /// The next instant the NIC needs [`Nic::handle_timeout`] or may send a frame; `None` when it is idle
    /// until a frame arrives. Relative to the latest `now` passed in.
    pub fn poll_at(&self) -> Option<Instant> {
        let now = self.now;
        let paused = self.paused(now);
        // Asked only of what waits on a paused priority (a scan of nine timers).
        let unpause = || self.pfc.next_unpause_at(now);
        let gate = |priority: u8, ready: Instant| {
            if paused & (1 << priority) != 0 { unpause().map(|u| u.max(ready)) } else { Some(ready) }
        };
        let mut transmit = self.pfc.next_frame_at(now);
        let mut earliest = |t: Option<Instant>| {
            if let Some(t) = t {
                transmit = Some(transmit.map_or(t, |x| x.min(t)));
            }
        };
        if paused == 0 {
            // Every control frame may go now: no look at their priorities (an ACK's is its QP's).
            earliest((!self.control.is_empty()).then_some(now));
        } else {
            for c in &self.control {
                earliest(gate(self.control_priority(c), now));
            }
        }
        let probe = self
            .prober
            .as_ref()
            .and_then(|p| p.next_due().and_then(|t| gate(p.config().priority, t.max(now))));
        earliest(probe);
        let window = self.cfg.window_packets;
        let scan = |earliest: &mut dyn FnMut(Option<Instant>)| {
            for (f, s) in self.flows.iter().zip(&self.schedules) {
                debug_assert_eq!((s.timer_at, s.priority), (f.poll_at(), f.cfg.priority));
                let ready = if now < s.ready_until { s.ready_at } else { f.ready_at(now, window) };
                debug_assert_eq!(ready, f.ready_at(now, window));
                earliest(ready.and_then(|r| gate(s.priority, r)));
            }
        };
        if self.flows.len() > flow_index::SCAN_FLOWS && self.index.ready_holds(now) {
            // The earliest ready flow of each priority, gated by its pause: the same minimum as the scan
            // (gating is monotone in the ready instant).
            earliest(self.index.ready_min_gated(paused, unpause));
            if cfg!(debug_assertions) {
                let unpause = self.pfc.next_unpause_at(now);
                let gate = |priority: u8, ready: Instant| {
                    if paused & (1 << priority) != 0 { unpause.map(|u| u.max(ready)) } else { Some(ready) }
                };
                let mut scanned = [self.pfc.next_frame_at(now), probe].into_iter().flatten().min();
                for c in &self.control {
                    scanned = [scanned, gate(self.control_priority(c), now)].into_iter().flatten().min();
                }
                for (f, s) in self.flows.iter().zip(&self.schedules) {
                    let ready = f.ready_at(now, window).and_then(|r| gate(s.priority, r));
                    scanned = [scanned, ready].into_iter().flatten().min();
                }
                debug_assert_eq!(transmit, scanned, "indexed flow readiness");
            }
        } else {
            scan(&mut earliest);
        }
        let transmit = transmit.map(|t| t.max(self.line_free_at()));
        let rx = self.rx_pipe.as_ref().and_then(RxPipeline::poll_at);
        let timers = self.index.timers_min();
        debug_assert_eq!(timers, self.schedules.iter().filter_map(|s| s.timer_at).min());
        let earliest = match (timers, transmit) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        match (earliest, rx) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    // ---------------------------------------------------------------------------------------- observation

    pub fn flow_ids(&self) -> impl Iterator<Item = u32> + '_ {
        self.flows.iter().map(|f| f.cfg.id)
    }

    pub fn flow_stats(&self, id: u32) -> Option<FlowStats> {
        self.flow_of_id(id).map(|i| self.flows[i].stats(self.now))
    }

    /// Every flow's [`flow::FlowSample`], in one pass: what a time series reads of each flow at each
    /// sample, without the search and the latency summary of [`Nic::flow_stats`].
    pub fn flow_samples(&self) -> impl Iterator<Item = flow::FlowSample> + '_ {
        self.flows.iter().map(SendFlow::sample)
    }

    /// The DCQCN state of a flow (for inspection and tests).
    pub fn flow_dcqcn(&self, id: u32) -> Option<&Dcqcn> {
        self.flows[self.flow_of_id(id)?].dcqcn()
    }

    /// Every flow has acknowledged its last message and will start no other.
    pub fn all_flows_finished(&self) -> bool {
        self.flows.iter().all(SendFlow::is_finished)
    }

    /// The receiving QP `qp` of this NIC fed by `src_ip`: of the requester QPs that fed it, the one that
    /// got data last (a live one before a closed one).
    fn rx_qp(&self, src_ip: Ipv4Addr, qp: u32) -> Option<&RxQp> {
        let matches = |k: &RxKey| k.src_ip == src_ip && k.qp == qp;
        // Of two live QPs that got data last at the same instant, the one of the greater key (the last in
        // key order, as `max_by_key` picks).
        let live = self.receivers.iter().filter(|(k, _)| matches(k));
        let closed = self.retired.iter().filter(|(k, _)| matches(k)).map(|(_, rx)| rx);
        (live.max_by_key(|(k, rx)| (rx.last_at(), **k)).map(|(_, rx)| rx))
            .or_else(|| closed.max_by_key(|rx| rx.last_at()))
    }

    /// Receiver statistics of the QP `qp` of this NIC as fed by `src_ip` (see [`Nic::rx_keys`] for
    /// several requester QPs).
    pub fn rx_stats(&self, src_ip: Ipv4Addr, qp: u32) -> Option<RxStats> {
        self.rx_qp(src_ip, qp).map(RxQp::stats)
    }

    /// The live receiving QPs: (source IP, QP, requester QP).
    pub fn rx_keys(&self) -> impl Iterator<Item = (Ipv4Addr, u32, u32)> + '_ {
        self.rx_keys_sorted().into_iter().map(|k| (k.src_ip, k.qp, k.src_qp))
    }

    /// The live receiving QPs' keys in order.
    fn rx_keys_sorted(&self) -> Vec<RxKey> {
        let mut keys: Vec<RxKey> = self.receivers.keys().copied().collect();
        keys.sort_unstable();
        keys
    }

    /// Per-packet one-way latency histogram of a receiving QP (to merge across QPs).
    pub fn rx_latency_histogram(&self, src_ip: Ipv4Addr, qp: u32) -> Option<&Histogram> {
        self.rx_qp(src_ip, qp).map(RxQp::latency)
    }

    /// Message latency histogram of a receiving QP.
    pub fn rx_message_latency_histogram(&self, src_ip: Ipv4Addr, qp: u32) -> Option<&Histogram> {
        self.rx_qp(src_ip, qp).map(RxQp::message_latency)
    }

    /// Time `priority` has been paused by received PFC, up to the latest `now` (a pause in progress
    /// included).
    pub fn pause_ns(&self, priority: u8) -> u64 {
        self.pfc.paused_ns(usize::from(priority & 7), self.now)
    }

    /// [`Nic::pause_ns`] up to `now` (not before the latest `now` passed in): a driver's reading at an
    /// instant the NIC had no event.
    pub fn pause_ns_at(&self, priority: u8, now: Instant) -> u64 {
        self.pfc.paused_ns(usize::from(priority & 7), now.max(self.now))
    }

    /// PFC counters of a priority: frames received (`rx`, `rx_xon`, transitions, completed pause time)
    /// and storm frames sent (`tx`).
    pub fn pfc_counters(&self, priority: u8) -> PfcCounters {
        self.pfc.counters[usize::from(priority & 7)]
    }

    /// Priorities paused now.
    pub fn paused_priorities(&self) -> u8 {
        self.paused(self.now)
    }

    pub fn counters(&self) -> NicCounters {
        self.counters
    }

    pub fn report(&self) -> NicReport {
        NicReport {
            now_ns: self.now.as_ns(),
            counters: self.counters,
            pfc: (0..8u8)
                .map(|p| PriorityPause {
                    priority: p,
                    counters: self.pfc_counters(p),
                    pause_ns: self.pause_ns(p),
                })
                .collect(),
            flows: self.flows.iter().map(|f| f.stats(self.now)).collect(),
            // Closed QPs (oldest first), then the live ones.
            receivers: self
                .retired
                .iter()
                .map(|(_, rx)| rx)
                .chain(self.rx_keys_sorted().iter().filter_map(|k| self.receivers.get(k)))
                .map(RxQp::stats)
                .collect(),
            probes: self.probe_stats(),
        }
    }
}

/// The fields of a received RoCE packet the NIC acts on.
struct Roce {
    src_mac: EthernetAddress,
    src_ip: Ipv4Addr,
    dscp: u8,
    ce: bool,
    udp_src_port: u16,
    bth: crate::wire::BthRepr,
}
