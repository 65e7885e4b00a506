//! The responder side of one queue pair: PSN tracking, go-back-N / go-back-0 receiving, ACK coalescing,
//! NAK suppression, and the DCQCN notification point's CNP pacing.
//!
//! * In order (`psn == expected`): accepted; an ACK is due when the packet asks for one (AckReq, set by
//!   the requester on the last packet of a message) or after `ack_every` in-order packets.
//! * Ahead (`0 < psn − expected < 2^23`): discarded and counted out of order; a NAK (PSN sequence error)
//!   carrying the expected PSN is due, once per expected PSN: a second NAK for the same PSN only after
//!   `nak_interval_ns` without progress (the HPCC simulator's 500 µs NACK timer), so a lost NAK is
//!   recovered; any in-order progress re-arms it. With go-back-0 the receiver first discards the partial
//!   message (its bytes are taken back from `received_bytes`) and expects the message's first PSN again —
//!   the behaviour behind the livelock of `docs/nic.md`, "Loss recovery".
//! * Behind (a duplicate): counted and answered with an ACK, so a requester whose ACK was lost is not
//!   stuck (the livelock of `bobzhuyb/ns3-rdma` issue #8, `docs/nic.md`).
//! * CE-marked packets (any of the above) make a CNP due unless one was sent for this QP within
//!   `cnp_interval_ns` (DCQCN paper NP; NVIDIA `min_time_between_cnps`): marks inside the interval are
//!   absorbed, not deferred. The NIC also holds CNPs port-wide (`min_time_between_cnps_ns`): a mark
//!   while the port's interval runs is absorbed the same way.
//!
//! **Which QP.** A real responder learns its peer at connection setup: the requester's IP and QPN, and its
//! first PSN. The model has no setup; the in-payload [`DataHeader`] stands in for it. A receiving QP is
//! keyed by [`RxKey`]: source IP, the BTH DestQP, and the requester's QPN (`DataHeader::src_qp`), so two
//! requester QPs (two runs of a sender with the same IP, which draw fresh QPNs) are two receiving QPs even
//! when they name the same DestQP. The first packet of a QP fixes its initial PSN from the packet number in
//! the data header (`psn − seq`), and every later packet of that QP implies the same one: a packet whose
//! implied initial PSN differs is a new incarnation of the key (the same QPN drawn again, with another
//! initial PSN), which replaces the old state rather than being taken for its duplicates.
//!
//! **Aging.** A QP that got no data for `NicConfig::rx_idle_timeout_ns` (default 10 s) is closed: it leaves
//! the live table (with nothing queued for it), its statistics stay in the report among the last
//! [`super::RETIRED_RX_QPS`] closed QPs, and a packet of the same incarnation (same key and initial PSN —
//! a requester that was only paused) brings it back with its PSN state, so it resumes where it left off.

use super::Retransmit;
use super::packet::{DataHeader, PSN_HALF, PSN_MASK, psn_add, psn_diff};
use super::stats::{Histogram, RxStats};
use crate::time::{Instant, Nanos};
use crate::wire::EthernetAddress;
use crate::wire::bth::Opcode;
use rustc_hash::FxHashMap;
use std::net::Ipv4Addr;

/// Receiver parameters taken from the NIC configuration.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RxParams {
    pub ack_every: u32,
    pub nak_interval: Nanos,
    pub cnp_interval: Nanos,
    /// The port's CNP interval ([`super::NpParams::min_time_between_cnps_ns`]) still runs: no CNP now.
    pub port_cnp_held: bool,
    pub mode: Retransmit,
}

/// What a data packet made due.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct RxOutcome {
    pub ack: bool,
    pub nak: bool,
    pub cnp: bool,
}

/// What identifies a receiving QP: the source IP, the BTH DestQP (this NIC's QP, as the requester named
/// it) and the requester's QPN. Ordered by IP, then DestQP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct RxKey {
    pub src_ip: Ipv4Addr,
    pub qp: u32,
    pub src_qp: u32,
}

/// The live receiving QPs of a NIC, found by key with one hash probe. The QPs (about half a KiB each) are
/// kept densely in a vector and the hash table holds only their positions: a table of the QPs themselves
/// keeps up to twice as many slots as QPs, and a host of the 128-host shuffle has 127 of them. In no
/// order: whatever reads them in order sorts their keys.
#[derive(Debug, Default)]
pub(crate) struct RxTable {
    qps: Vec<(RxKey, RxQp)>,
    slots: FxHashMap<RxKey, u32>,
}

impl RxTable {
    pub fn get(&self, key: &RxKey) -> Option<&RxQp> {
        let &i = self.slots.get(key)?;
        Some(&self.qps[i as usize].1)
    }

    pub fn get_mut(&mut self, key: &RxKey) -> Option<&mut RxQp> {
        let &i = self.slots.get(key)?;
        Some(&mut self.qps[i as usize].1)
    }

    /// Adds the QP of `key`, or replaces it.
    pub fn insert(&mut self, key: RxKey, rx: RxQp) {
        match self.slots.get(&key) {
            Some(&i) => self.qps[i as usize].1 = rx,
            None => {
                self.slots.insert(key, self.qps.len() as u32);
                self.qps.push((key, rx));
            }
        }
    }

    /// Takes the QP of `key` out (the last QP moves into its place).
    pub fn remove(&mut self, key: &RxKey) -> Option<RxQp> {
        let i = self.slots.remove(key)? as usize;
        let (_, rx) = self.qps.swap_remove(i);
        if let Some((moved, _)) = self.qps.get(i) {
            self.slots.insert(*moved, i as u32);
        }
        debug_assert!(self.qps.iter().enumerate().all(|(i, (k, _))| self.slots.get(k) == Some(&(i as u32))));
        Some(rx)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&RxKey, &RxQp)> {
        self.qps.iter().map(|(key, rx)| (key, rx))
    }

    pub fn keys(&self) -> impl Iterator<Item = &RxKey> {
        self.qps.iter().map(|(key, _)| key)
    }
}

/// The initial PSN a data packet implies: its PSN less its packet number (both mod 2^24).
pub(crate) fn implied_initial_psn(psn: u32, header: &DataHeader) -> u32 {
    psn_diff(psn, (header.seq & u64::from(PSN_MASK)) as u32)
}

/// Where a data opcode sits in its message: (first, last); `None` for non-data opcodes.
pub(crate) fn data_position(opcode: Opcode) -> Option<(bool, bool)> {
    Some(match opcode {
        Opcode::RcSendFirst | Opcode::RcWriteFirst => (true, false),
        Opcode::RcSendMiddle | Opcode::RcWriteMiddle => (false, false),
        Opcode::RcSendLast | Opcode::RcSendLastImm | Opcode::RcWriteLast => (false, true),
        Opcode::RcSendOnly | Opcode::RcSendOnlyImm | Opcode::RcWriteOnly => (true, true),
        _ => return None,
    })
}

/// Laid out by hand (`repr(C)`, from a cache line's start): what every data packet and its ACK touch
/// first (PSN state, where answers go, arrival times, the counters), then the key and the histograms'
/// own fields (their buckets are elsewhere). In a 128-host shuffle a host's 127 QPs each get one packet in
/// 127, so each one finds its QP out of cache: Rust's layout spread these fields over half a KiB.
#[derive(Debug, Clone)]
#[repr(C, align(64))]
pub(crate) struct RxQp {
    pub expected: u32,
    /// The PSN of the QP's first packet (learnt from the first packet that arrived).
    initial_psn: u32,
    msn: u32,
    message_start_psn: u32,
    since_ack: u32,
    pub requester_qp: u32,
    /// The expected PSN the last NAK carried (cleared by in-order progress), and when it was sent.
    pub nak_psn: Option<u32>,
    partial_bytes: u64,
    nak_at: Instant,
    /// Where ACKs, NAKs and CNPs go, learnt from the latest data packet.
    pub peer_mac: EthernetAddress,
    pub udp_src_port: u16,
    pub dscp: u8,
    in_message: bool,
    pub ack_queued: bool,
    pub nak_queued: bool,
    last_cnp: Option<Instant>,
    /// When data first and last arrived (reported as `RxStats::first_ns`/`last_ns`).
    first_at: Option<Instant>,
    last_at: Option<Instant>,
    pub counts: RxCounts,
    key: RxKey,
    latency: Histogram,
    message_latency: Histogram,
}

/// The counters of [`RxStats`] (its other fields are the key's, or computed when read).
#[derive(Debug, Clone, Default)]
pub(crate) struct RxCounts {
    pub received_packets: u64,
    pub received_bytes: u64,
    pub messages_received: u64,
    pub acks_sent: u64,
    pub ce_packets: u64,
    pub cnps_sent: u64,
    pub out_of_order: u64,
    pub duplicates: u64,
    pub psn_gaps: u64,
    pub naks_sent: u64,
    pub flow_id: u32,
}

impl RxQp {
    /// A QP whose first packet is `initial_psn`.
    pub fn new(key: RxKey, initial_psn: u32) -> RxQp {
        RxQp {
            peer_mac: EthernetAddress::default(),
            requester_qp: key.src_qp,
            udp_src_port: 0,
            dscp: 0,
            expected: initial_psn,
            initial_psn,
            msn: 0,
            in_message: false,
            message_start_psn: initial_psn,
            partial_bytes: 0,
            since_ack: 0,
            nak_psn: None,
            nak_at: Instant::ZERO,
            last_cnp: None,
            first_at: None,
            last_at: None,
            ack_queued: false,
            nak_queued: false,
            latency: Histogram::new(),
            message_latency: Histogram::new(),
            counts: RxCounts::default(),
            key,
        }
    }

    pub fn initial_psn(&self) -> u32 {
        self.initial_psn
    }

    /// Idle for `timeout` at `now` (no data since), with no ACK or NAK waiting to go: may be closed.
    pub fn expired(&self, now: Instant, timeout: Nanos) -> bool {
        let last = self.last_at.unwrap_or(Instant::ZERO);
        !self.ack_queued && !self.nak_queued && now.saturating_since(last) >= timeout
    }

    /// When data last arrived.
    pub fn last_at(&self) -> Option<Instant> {
        self.last_at
    }

    /// The last PSN received in order and the message sequence number: the contents of an ACK.
    pub fn ack_state(&self) -> (u32, u32) {
        (psn_add(self.expected, u64::from(PSN_MASK)), self.msn)
    }

    pub fn msn(&self) -> u32 {
        self.msn
    }

    pub fn latency(&self) -> &Histogram {
        &self.latency
    }

    pub fn message_latency(&self) -> &Histogram {
        &self.message_latency
    }

    /// A data packet arrived.
    #[allow(clippy::too_many_arguments)]
    pub fn on_data(
        &mut self,
        psn: u32,
        (first, last): (bool, bool),
        ack_request: bool,
        header: &DataHeader,
        ce: bool,
        now: Instant,
        params: &RxParams,
    ) -> RxOutcome {
        let mut out = RxOutcome::default();
        let s = &mut self.counts;
        s.flow_id = header.flow_id;
        s.received_packets += 1;
        self.first_at.get_or_insert(now);
        self.last_at = Some(now);
        // The in-payload header is the wire: the sender's clock as an integer.
        self.latency.record(now.saturating_since(Instant::from_ns(header.sent_ns)).as_ns());
        if ce {
            s.ce_packets += 1;
            if !params.port_cnp_held
                && self.last_cnp.is_none_or(|t| now.saturating_since(t) >= params.cnp_interval)
            {
                self.last_cnp = Some(now);
                out.cnp = true;
            }
        }
        let distance = psn_diff(psn, self.expected);
        if distance == 0 {
            if first {
                self.in_message = true;
                self.message_start_psn = psn;
                self.partial_bytes = 0;
            }
            let len = u64::from(header.app_len);
            self.partial_bytes += len;
            s.received_bytes += len;
            self.expected = psn_add(psn, 1);
            self.nak_psn = None;
            if last {
                self.in_message = false;
                self.partial_bytes = 0;
                s.messages_received += 1;
                self.msn = psn_add(self.msn, 1);
                self.message_latency
                    .record(now.saturating_since(Instant::from_ns(header.message_start_ns)).as_ns());
            }
            self.since_ack += 1;
            if ack_request || self.since_ack >= params.ack_every.max(1) {
                out.ack = true;
            }
        } else if distance < PSN_HALF {
            s.out_of_order += 1;
            if self.nak_psn.is_none() {
                s.psn_gaps += 1;
            }
            if params.mode == Retransmit::GoBack0 && self.in_message {
                s.received_bytes -= self.partial_bytes;
                self.partial_bytes = 0;
                self.in_message = false;
                self.expected = self.message_start_psn;
            }
            if self.nak_psn != Some(self.expected) || now.saturating_since(self.nak_at) >= params.nak_interval
            {
                self.nak_psn = Some(self.expected);
                self.nak_at = now;
                out.nak = true;
            }
        } else {
            s.duplicates += 1;
            out.ack = true;
        }
        out
    }

    /// An ACK is about to go out.
    pub fn ack_sent(&mut self) {
        self.since_ack = 0;
        self.counts.acks_sent += 1;
    }

    pub fn stats(&self) -> RxStats {
        let c = &self.counts;
        let mut s = RxStats {
            src_ip: Some(self.key.src_ip),
            qp: self.key.qp,
            src_qp: self.key.src_qp,
            flow_id: c.flow_id,
            received_packets: c.received_packets,
            received_bytes: c.received_bytes,
            messages_received: c.messages_received,
            out_of_order: c.out_of_order,
            duplicates: c.duplicates,
            psn_gaps: c.psn_gaps,
            acks_sent: c.acks_sent,
            naks_sent: c.naks_sent,
            ce_packets: c.ce_packets,
            cnps_sent: c.cnps_sent,
            ..RxStats::default()
        };
        s.expected_psn = self.expected;
        s.latency = self.latency.summary();
        s.message_latency = self.message_latency.summary();
        s.first_ns = self.first_at.map(Instant::as_ns);
        s.last_ns = self.last_at.map(Instant::as_ns);
        if let (Some(a), Some(b)) = (self.first_at, self.last_at)
            && b > a
        {
            s.goodput_mbps = s.received_bytes as f64 * 8.0 * 1e3 / b.saturating_since(a).as_ns() as f64;
        }
        s
    }
}
