//! The requester side of one RC QP: message-based sending in PSN order, pacing, ACK/NAK processing with
//! go-back-N or go-back-0, the retransmission timeout, and the DCQCN reaction point.
//!
//! Packets are numbered by an unwrapped 64-bit sequence number `seq` from 0; the PSN on the wire is
//! `(initial_psn + seq) mod 2^24`. All messages of a flow have the same size, so `seq` maps to (message,
//! packet in message) by division. `una` is the first unacknowledged packet, `nxt` the next to send
//! (rewound on NAK/timeout), `max` one past the highest ever sent.

use super::dcqcn::{Dcqcn, DcqcnParams};
use super::packet::{self, DataHeader, Envelope, PSN_HALF, psn_add, psn_diff};
use super::stats::{DcqcnStats, FlowStats, Histogram};
use super::{Retransmit, mac_serde};
use crate::time::{Instant, Nanos};
use crate::wire::EthernetAddress;
use crate::wire::bth::Opcode;
use crate::wire::ip::Ecn;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::net::Ipv4Addr;

/// Bytes a frame occupies on the line beyond its length: FCS 4, preamble/SFD 8, IFG 12 (as the switch).
pub const WIRE_OVERHEAD_BYTES: u64 = 24;

/// One sending flow (an RC QP of this NIC and its peer).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct FlowConfig {
    /// Unique on this NIC; names the flow in reports.
    pub id: u32,
    pub dst_ip: Ipv4Addr,
    /// The destination host's MAC; frames go to `NicConfig::gateway_mac` instead when that is set.
    #[serde(with = "mac_serde")]
    pub dst_mac: EthernetAddress,
    /// UDP source port (the ECMP entropy of RoCEv2).
    pub src_port: u16,
    /// This NIC's QP number for the flow (24 bits); 0 assigns a free one from 0x100 up.
    pub src_qp: u32,
    /// The peer's QP number: the BTH DestQP of the data, and (with the source IP and `src_qp`) the
    /// receiver's key for its state and statistics.
    pub dst_qp: u32,
    pub dscp: u8,
    /// The PFC priority the flow's packets travel on (0..=7); also the PCP when the NIC tags frames.
    pub priority: u8,
    /// Configured rate cap; `None` = as fast as DCQCN and the line allow.
    pub rate_mbps: Option<u32>,
    /// Size of every message (> 0).
    pub message_bytes: u64,
    /// Number of messages; `None` = unbounded.
    pub messages: Option<u64>,
    /// No packet before this instant.
    pub start_ns: u64,
    /// No new message starts at or after this instant (the one in progress completes).
    pub until_ns: Option<u64>,
    /// PSN of the first packet (24 bits).
    pub initial_psn: u32,
    /// React to CNPs with DCQCN; when false CNPs are only counted.
    pub dcqcn: bool,
}

impl Default for FlowConfig {
    fn default() -> Self {
        FlowConfig {
            id: 0,
            dst_ip: Ipv4Addr::UNSPECIFIED,
            dst_mac: EthernetAddress::default(),
            src_port: 49152,
            src_qp: 0,
            dst_qp: 0x11,
            dscp: 26,
            priority: 3,
            rate_mbps: None,
            message_bytes: 65536,
            messages: None,
            start_ns: 0,
            until_ns: None,
            initial_psn: 0,
            dcqcn: true,
        }
    }
}

/// Addressing the NIC lends to each packet a flow builds.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Local {
    pub mac: EthernetAddress,
    pub ip: Ipv4Addr,
    pub vlan: Option<u16>,
    pub gateway_mac: Option<EthernetAddress>,
    pub ttl: u8,
}

/// The fields are laid out by hand (`repr(C)`, from a cache line's start) so that what every packet sent
/// or acknowledged touches comes first, in about five lines: sequence and message state, pacing, timers,
/// the counters. The configuration, the completion histogram and DCQCN follow. In a 128-host shuffle a
/// host has 127 flows and comes back to each once in 127 packets, so every visit finds the flow out of
/// cache: in Rust's own layout (by alignment) the same fields were spread over a KiB.
#[derive(Debug, Clone)]
#[repr(C, align(64))]
pub(crate) struct SendFlow {
    una: u64,
    nxt: u64,
    max: u64,
    /// One past the last packet of the messages started so far.
    seq_limit: u64,
    messages_started: u64,
    message_base: u64,
    packets_per_message: u64,
    payload_max: u64,
    /// Pacing: the earliest start of the next packet, in ps, and the division remainder carried.
    next_send_ps: u128,
    pace_remainder: u128,
    /// The last packet's gap before it was divided by the rate: where it counts from (ps), its line bits
    /// × 10^12 plus the remainder carried in. A rate change re-divides it ([`Self::repace`]).
    gap_base_ps: u128,
    gap_scaled: u128,
    rto_deadline: Option<Instant>,
    /// The first transmission, and when the flow finished (reported as `first_send_ns`, `finished_ns`).
    first_send: Option<Instant>,
    finished: Option<Instant>,
    /// `cfg.start_ns` and `cfg.until_ns`, compiled.
    until: Option<Instant>,
    start: Instant,
    rto: Nanos,
    /// The flow's own cap: min(line rate, configured rate).
    cap_bps: u64,
    pub src_qp: u32,
    ip_ident: u16,
    mode: Retransmit,
    /// First-transmission time of every message from `una`'s on.
    message_starts: VecDeque<Instant>,
    counts: FlowCounts,
    pub cfg: FlowConfig,
    /// Message completion times (first transmission to the ACK covering the last packet).
    completion: Histogram,
    dcqcn: Option<Dcqcn>,
}

/// The counters of [`FlowStats`] (its other fields are the configuration's, or computed when read).
#[derive(Debug, Clone, Default)]
struct FlowCounts {
    sent_packets: u64,
    sent_bytes: u64,
    acked_bytes: u64,
    acked_packets: u64,
    acks_received: u64,
    messages_completed: u64,
    retransmitted_packets: u64,
    retransmitted_bytes: u64,
    naks_received: u64,
    timeouts: u64,
    cnps_received: u64,
}

impl SendFlow {
    pub fn new(
        cfg: FlowConfig,
        src_qp: u32,
        payload_max: u64,
        line_rate_bps: u64,
        params: DcqcnParams,
        mode: Retransmit,
        rto: Nanos,
    ) -> SendFlow {
        let cap_bps =
            cfg.rate_mbps.map_or(line_rate_bps, |r| (u64::from(r) * 1_000_000).min(line_rate_bps)).max(1);
        let packets_per_message = cfg.message_bytes.div_ceil(payload_max).max(1);
        let dcqcn = cfg.dcqcn.then(|| Dcqcn::new(params, cap_bps));
        SendFlow {
            start: Instant::from_ns(cfg.start_ns),
            until: cfg.until_ns.map(Instant::from_ns),
            cfg,
            src_qp,
            mode,
            rto,
            payload_max,
            packets_per_message,
            cap_bps,
            dcqcn,
            una: 0,
            nxt: 0,
            max: 0,
            seq_limit: 0,
            messages_started: 0,
            message_starts: VecDeque::new(),
            message_base: 0,
            next_send_ps: 0,
            pace_remainder: 0,
            gap_base_ps: 0,
            gap_scaled: 0,
            rto_deadline: None,
            ip_ident: 0,
            first_send: None,
            finished: None,
            counts: FlowCounts::default(),
            completion: Histogram::new(),
        }
    }

    /// The rate the flow is paced at.
    pub fn rate_bps(&self) -> u64 {
        self.dcqcn.as_ref().map_or(self.cap_bps, |d| d.rate_bps().min(self.cap_bps))
    }

    fn psn_of(&self, seq: u64) -> u32 {
        psn_add(self.cfg.initial_psn, seq)
    }

    fn message_boundary(&self, seq: u64) -> u64 {
        seq / self.packets_per_message * self.packets_per_message
    }

    /// Message bytes before packet `seq`.
    fn bytes_before(&self, seq: u64) -> u64 {
        let ppm = self.packets_per_message;
        (seq / ppm) * self.cfg.message_bytes + ((seq % ppm) * self.payload_max).min(self.cfg.message_bytes)
    }

    fn can_start_message(&self, now: Instant) -> bool {
        self.cfg.messages.is_none_or(|m| self.messages_started < m)
            && self.until.is_none_or(|u| now.max(self.start) < u)
    }

    /// The flow has packets to (re)send or may start a message.
    fn has_data(&self, now: Instant) -> bool {
        self.nxt < self.seq_limit || self.can_start_message(now)
    }

    /// Outstanding packets stay below the window (0 = no window) and half the PSN space.
    fn window_open(&self, window_packets: u32) -> bool {
        let outstanding = self.nxt - self.una;
        outstanding < u64::from(PSN_HALF / 2)
            && (window_packets == 0 || outstanding < u64::from(window_packets))
    }

    /// When the flow may send its next packet, ignoring PFC and the line; `None` when it has nothing
    /// to send or is window-bound (an ACK will wake it).
    pub fn ready_at(&self, now: Instant, window_packets: u32) -> Option<Instant> {
        if !self.has_data(now) || !self.window_open(window_packets) {
            return None;
        }
        Some(self.start.max(crate::ps::to_instant_ceil(self.next_send_ps)))
    }

    pub fn is_finished(&self) -> bool {
        self.finished.is_some()
    }

    /// Builds the next data packet at `now`, whose first bit leaves at `start_ps`; updates sequence
    /// state, pacing, the RTO and the byte counter.
    /// `buffer` is reused for the frame.
    pub fn transmit(
        &mut self,
        now: Instant,
        start_ps: u128,
        local: &Local,
        buffer: packet::Buffer,
    ) -> Vec<u8> {
        if self.nxt == self.seq_limit {
            self.message_starts.push_back(now);
            self.messages_started += 1;
            self.seq_limit += self.packets_per_message;
        }
        let seq = self.nxt;
        let ppm = self.packets_per_message;
        let (message, index) = (seq / ppm, seq % ppm);
        let app_len = self.payload_max.min(self.cfg.message_bytes - index * self.payload_max);
        let opcode = match (ppm, index) {
            (1, _) => Opcode::RcSendOnly,
            (_, 0) => Opcode::RcSendFirst,
            (_, i) if i == ppm - 1 => Opcode::RcSendLast,
            _ => Opcode::RcSendMiddle,
        };
        // The in-payload header is the wire: instants as integers.
        let header = DataHeader {
            sent_ns: now.as_ns(),
            message_start_ns: self.message_starts[(message - self.message_base) as usize].as_ns(),
            seq,
            message_id: message,
            flow_id: self.cfg.id,
            src_qp: self.src_qp,
            app_len: app_len as u32,
        };
        let env = Envelope {
            src_mac: local.mac,
            dst_mac: local.gateway_mac.unwrap_or(self.cfg.dst_mac),
            vlan: local.vlan,
            priority: self.cfg.priority,
            src_ip: local.ip,
            dst_ip: self.cfg.dst_ip,
            dscp: self.cfg.dscp,
            ecn: Ecn::Ect0,
            ident: self.ip_ident,
            ttl: local.ttl,
            udp_src_port: self.cfg.src_port,
        };
        self.ip_ident = self.ip_ident.wrapping_add(1);
        let bth = packet::bth(opcode, self.cfg.dst_qp, self.psn_of(seq), index == ppm - 1);
        let payload_len = (app_len as usize).max(DataHeader::LEN);
        let frame = packet::rocev2_frame_on(buffer, &env, &bth, payload_len, |p| header.emit(p));

        let retransmission = seq < self.max;
        self.nxt += 1;
        self.max = self.max.max(self.nxt);
        let s = &mut self.counts;
        s.sent_packets += 1;
        s.sent_bytes += app_len;
        if retransmission {
            s.retransmitted_packets += 1;
            s.retransmitted_bytes += app_len;
        }
        self.first_send.get_or_insert(now);
        if self.rto_deadline.is_none() {
            self.rto_deadline = Some(now + self.rto);
        }
        self.pace(frame.len() as u64, now, start_ps);
        self.with_dcqcn(|d| d.on_sent(frame.len() as u64));
        frame
    }

    /// Spaces packets at the flow's rate in line bits (frame + [`WIRE_OVERHEAD_BYTES`]). A packet sent on
    /// time is spaced from its exact (sub-ns) due instant, a late one from when it actually left, so a
    /// flow never bursts to catch up.
    fn pace(&mut self, frame_len: u64, now: Instant, start_ps: u128) {
        let on_time = now <= crate::ps::to_instant_ceil(self.next_send_ps);
        let base = if on_time && self.next_send_ps > 0 { self.next_send_ps } else { start_ps };
        self.gap_base_ps = base;
        self.gap_scaled =
            u128::from((frame_len + WIRE_OVERHEAD_BYTES) * 8) * 1_000_000_000_000 + self.pace_remainder;
        self.repace();
    }

    /// The gap after the last packet at the rate in force now. A rate limiter spaces the next packet by
    /// the current rate: when DCQCN raises the rate during a gap, the gap shrinks. Without this a packet
    /// sent at the minimum rate (1 Mb/s: 33 ms for 4 KiB) would hold the flow for that long, however soon
    /// the rate recovered.
    fn repace(&mut self) {
        let (whole, remainder) = crate::ps::div_rem(self.gap_scaled, self.rate_bps().max(1));
        self.next_send_ps = self.gap_base_ps + whole;
        self.pace_remainder = u128::from(remainder);
    }

    /// Runs `f` on the reaction point, then re-spaces the pending gap if the rate changed.
    fn with_dcqcn(&mut self, f: impl FnOnce(&mut Dcqcn)) {
        let Some(d) = &mut self.dcqcn else { return };
        let before = d.rate_bps();
        f(d);
        if d.rate_bps() != before && self.gap_scaled > 0 {
            self.repace();
        }
    }

    fn advance(&mut self, new_una: u64, now: Instant) {
        if new_una <= self.una {
            return;
        }
        let acked_bytes = self.bytes_before(new_una) - self.bytes_before(self.una);
        self.counts.acked_bytes += acked_bytes;
        self.counts.acked_packets += new_una - self.una;
        self.una = new_una;
        self.nxt = self.nxt.max(self.una);
        let first_open = self.una / self.packets_per_message;
        while self.message_base < first_open {
            let Some(start) = self.message_starts.pop_front() else { break };
            self.completion.record(now.saturating_since(start).as_ns());
            self.message_base += 1;
        }
        self.counts.messages_completed = first_open;
        self.rto_deadline = (self.una < self.max).then_some(now + self.rto);
        self.check_finished(now);
    }

    fn check_finished(&mut self, now: Instant) {
        if self.finishes_at(now) {
            self.finished = Some(now);
        }
    }

    /// The flow is done at `now` (everything acknowledged, no message left to start) but not yet marked
    /// finished.
    pub(super) fn finishes_at(&self, now: Instant) -> bool {
        self.finished.is_none() && self.una == self.seq_limit && !self.can_start_message(now)
    }

    /// What the NIC's scans over its flows read, as of `now` (see [`FlowSchedule`]).
    pub(super) fn schedule(&self, now: Instant, window_packets: u32) -> FlowSchedule {
        let timer_at = self.poll_at();
        // [`Self::finishes_at`] as an instant: no message may start once the messages are all started, or
        // from `until` on (at once when the flow starts no earlier).
        let exhausted = self.cfg.messages.is_some_and(|m| self.messages_started >= m);
        let finish_at = if self.finished.is_some() || self.una != self.seq_limit {
            None
        } else if exhausted {
            Some(Instant::ZERO)
        } else {
            self.until.map(|u| if self.start >= u { Instant::ZERO } else { u })
        };
        let timeout_at = match (timer_at, finish_at) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        // `ready_at` depends on time only through `until`, when the flow may no longer start messages.
        let ready_until = match self.until {
            Some(u) if self.start < u && now < u => u,
            _ => Instant::MAX,
        };
        FlowSchedule {
            timer_at,
            timeout_at,
            ready_at: self.ready_at(now, window_packets),
            ready_until,
            priority: self.cfg.priority,
        }
    }

    /// An RC ACK acknowledging everything up to `psn`.
    pub fn on_ack(&mut self, psn: u32, now: Instant) {
        self.counts.acks_received += 1;
        let acked = u64::from(psn_diff(psn_add(psn, 1), self.psn_of(self.una)));
        if acked == 0 || acked > self.max - self.una {
            return; // stale (or not for anything we sent)
        }
        let mut new_una = self.una + acked;
        if self.mode == Retransmit::GoBack0 {
            // Only whole messages count: the receiver discards partial ones.
            new_una = self.message_boundary(new_una);
        }
        self.advance(new_una, now);
    }

    /// A NAK (PSN sequence error) carrying the receiver's expected PSN: everything before it is
    /// acknowledged; sending resumes there (go-back-N) or at the start of its message (go-back-0).
    pub fn on_nak(&mut self, psn: u32, now: Instant) {
        self.counts.naks_received += 1;
        let good = u64::from(psn_diff(psn, self.psn_of(self.una)));
        if good > self.max - self.una {
            return;
        }
        let mut resume = self.una + good;
        if self.mode == Retransmit::GoBack0 {
            resume = self.message_boundary(resume);
        }
        self.advance(resume, now);
        self.nxt = self.una;
        if self.una < self.max {
            self.rto_deadline = Some(now + self.rto);
        }
    }

    pub fn on_cnp(&mut self, now: Instant) {
        self.counts.cnps_received += 1;
        self.with_dcqcn(|d| d.on_cnp(now));
    }

    /// DCQCN timers, the retransmission timeout, and completion of a flow bounded by `until_ns`.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.with_dcqcn(|d| d.handle_timeout(now));
        if let Some(deadline) = self.rto_deadline.filter(|&t| t <= now) {
            if self.una < self.max {
                self.counts.timeouts += 1;
                self.nxt = self.message_boundary_for_mode(self.una);
                self.rto_deadline = Some(deadline.max(now) + self.rto);
            } else {
                self.rto_deadline = None;
            }
        }
        self.check_finished(now);
    }

    fn message_boundary_for_mode(&self, seq: u64) -> u64 {
        match self.mode {
            Retransmit::GoBackN => seq,
            Retransmit::GoBack0 => self.message_boundary(seq),
        }
    }

    /// The next timer instant (DCQCN, RTO, or the end of a time-bounded flow that is idle).
    pub fn poll_at(&self) -> Option<Instant> {
        let idle_until = self
            .until
            .filter(|_| self.finished.is_none() && self.una == self.seq_limit && self.nxt == self.una);
        let min = |a: Option<Instant>, b: Option<Instant>| match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        min(min(self.dcqcn.as_ref().and_then(Dcqcn::poll_at), self.rto_deadline), idle_until)
    }

    pub fn stats(&self, now: Instant) -> FlowStats {
        let c = &self.counts;
        let cfg = &self.cfg;
        let mut s = FlowStats {
            id: cfg.id,
            dst_ip: Some(cfg.dst_ip),
            src_qp: self.src_qp,
            dst_qp: cfg.dst_qp,
            initial_psn: cfg.initial_psn,
            dscp: cfg.dscp,
            priority: cfg.priority,
            sent_packets: c.sent_packets,
            sent_bytes: c.sent_bytes,
            retransmitted_packets: c.retransmitted_packets,
            retransmitted_bytes: c.retransmitted_bytes,
            acked_bytes: c.acked_bytes,
            acked_packets: c.acked_packets,
            messages_completed: c.messages_completed,
            acks_received: c.acks_received,
            naks_received: c.naks_received,
            timeouts: c.timeouts,
            cnps_received: c.cnps_received,
            ..FlowStats::default()
        };
        s.messages_started = self.messages_started;
        s.message_completion = self.completion.summary();
        s.rate_mbps_now = self.rate_bps() as f64 / 1e6;
        s.first_send_ns = self.first_send.map(Instant::as_ns);
        s.finished_ns = self.finished.map(Instant::as_ns);
        if let Some(start) = self.first_send {
            let end = self.finished.unwrap_or(now);
            if end > start {
                s.goodput_mbps =
                    s.acked_bytes as f64 * 8.0 * 1e3 / end.saturating_since(start).as_ns() as f64;
            }
        }
        s.dcqcn = self.dcqcn.as_ref().map(|d| DcqcnStats {
            alpha: d.alpha_f64_at(now),
            current_rate_mbps: d.rate_bps() as f64 / 1e6,
            target_rate_mbps: d.target_bps() as f64 / 1e6,
            cnps: d.cnps(),
            rate_decreases: d.decreases(),
            rate_increases: d.increases(),
        });
        s
    }

    pub fn dcqcn(&self) -> Option<&Dcqcn> {
        self.dcqcn.as_ref()
    }

    /// What a time-series sample reads of the flow ([`FlowSample`]).
    pub fn sample(&self) -> FlowSample {
        FlowSample {
            id: self.cfg.id,
            sent_bytes: self.counts.sent_bytes,
            acked_bytes: self.counts.acked_bytes,
            cnps_received: self.counts.cnps_received,
            dcqcn_rate_mbps: self.dcqcn.as_ref().map(|d| d.rate_bps() as f64 / 1e6),
        }
    }
}

/// The part of a flow's [`FlowStats`] a simulator samples for its time series, every 100 µs for every
/// flow: the same values, without the latency summary `FlowStats` computes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FlowSample {
    pub id: u32,
    pub sent_bytes: u64,
    pub acked_bytes: u64,
    pub cnps_received: u64,
    /// [`DcqcnStats::current_rate_mbps`], when DCQCN is on.
    pub dcqcn_rate_mbps: Option<f64>,
}

/// What a NIC's scans over its flows read of one flow, kept beside the flows (one small contiguous entry
/// each, refreshed whenever the flow changes): with a hundred flows, a NIC's timers and its next transmit
/// instant cost a scan of these rather than a visit to every flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct FlowSchedule {
    /// [`SendFlow::poll_at`].
    pub timer_at: Option<Instant>,
    /// From when [`SendFlow::handle_timeout`] has something to do: a timer, or marking the flow finished.
    pub timeout_at: Option<Instant>,
    /// [`SendFlow::ready_at`], at any time before `ready_until`.
    pub ready_at: Option<Instant>,
    pub ready_until: Instant,
    pub priority: u8,
}

#[cfg(test)]
mod completion_tests {
    use crate::nic::{FlowConfig, Nic, NicConfig, WIRE_OVERHEAD_BYTES};
    use crate::sim::{Device, Sim};
    use crate::time::{Instant, Nanos};
    use crate::wire::EthernetAddress;
    use std::net::Ipv4Addr;

    #[test]
    fn message_completion_is_the_data_and_ack_times_on_the_wire() {
        let (mac_a, mac_b) = (EthernetAddress([2, 0, 0, 0, 0, 1]), EthernetAddress([2, 0, 0, 0, 0, 2]));
        let ip = |n| Ipv4Addr::new(10, 0, 0, n);
        let nic = |mac, n| Nic::new(NicConfig { mac, ip: ip(n), ..NicConfig::default() }).unwrap();
        let mut a = nic(mac_a, 1);
        let flow = FlowConfig {
            id: 1,
            dst_ip: ip(2),
            dst_mac: mac_b,
            message_bytes: 1000,
            messages: Some(3),
            dcqcn: false,
            ..FlowConfig::default()
        };
        a.add_flow(flow).unwrap();
        let mut sim = Sim::new();
        let (a, b) = (sim.add(Device::Nic(Box::new(a))), sim.add(Device::Nic(Box::new(nic(mac_b, 2)))));
        sim.connect(a.port(0), 1000, b.port(0), 1000, Nanos::from_ns(1_000));
        sim.run_until(Instant::from_ns(1_000_000));
        // Link physics at 1 Gb/s with 1 µs of cable: a one-packet message is a 1058-byte frame (Ethernet 14,
        // IPv4 20, UDP 8, BTH 12, 1000 bytes, ICRC 4) and its ACK a 62-byte one (AETH 4), each + 24 bytes
        // of FCS, preamble and gap on the line; the receiver answers the last packet at once.
        let data_ns = (1058 + WIRE_OVERHEAD_BYTES) * 8;
        let ack_ns = (62 + WIRE_OVERHEAD_BYTES) * 8;
        let first = data_ns + 1_000 + ack_ns + 1_000;
        let s = sim.nic(a).flow_stats(1).unwrap();
        let c = s.message_completion;
        assert_eq!((c.count, c.min_ns), (3, first), "{s:?}");
        // The next messages queued behind the first on the line start (are first sent) later, and complete
        // one data frame apart: no longer than the first plus the frames ahead of them.
        assert!(c.max_ns >= first && c.max_ns <= first + 2 * data_ns, "{c:?}");
    }
}
