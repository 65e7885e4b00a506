//! The sans-I/O RoCEv2 host NIC: what the host emulator (`rocehost`) and the virtual-time simulator put
//! at the edge of a fabric.
//!
//! [`Nic`] is a plain state machine in the style of quinn-proto (and of [`crate::model::Switch`]): it never
//! reads a clock, opens a socket or spawns; time is integer nanoseconds passed in.
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
//! * **Receives** any RoCE data addressed to it, per (source IP, destination QP): PSN tracking, go-back-N
//!   or go-back-0, coalesced ACKs and suppressed NAKs as RC ACKNOWLEDGE packets with an [`Aeth`], and CNPs
//!   (DCQCN notification point, paced per QP, DSCP 48 / priority 6). See `receiver.rs`.
//! * **Reacts** to ACK/NAK (advance, go back to the NAK'd PSN or to the start of its message), to the
//!   retransmission timeout (go back to the first unacknowledged packet), and to CNPs (DCQCN reaction
//!   point, [`dcqcn`]).
//! * **Answers ARP** requests for its address; **storms** PFC XOFF on demand ([`Nic::set_storm`]).
//!
//! Control frames go before data: PFC storm frames, then ARP replies, ACK/NAKs and CNPs in the order they
//! became due (skipping those whose priority is paused). Frames from this NIC are untagged unless
//! `vlan_id` is set (then the PCP is the frame's priority). The priority of ACK/NAKs is looked up from the
//! DSCP of the data they answer (`dscp_to_priority`, default DSCP >> 3, the trust-DSCP mapping of
//! ConnectX NICs).

pub mod dcqcn;
pub mod flow;
pub mod packet;
mod receiver;
#[cfg(test)]
mod scale_tests;
pub mod stats;
#[cfg(test)]
mod tests;

pub use dcqcn::{Dcqcn, DcqcnParams};
pub use flow::{FlowConfig, WIRE_OVERHEAD_BYTES};
pub use packet::{Aeth, DataHeader};
pub use stats::{
    DcqcnStats, FlowStats, Histogram, LatencySummary, NicCounters, NicReport, PriorityPause, RxStats,
};

use crate::model::pfc::{PfcCounters, PfcPort};
use crate::wire::bth::{self, Opcode};
use crate::wire::ip::Ecn;
use crate::wire::mac_control;
use crate::wire::{
    ArpOperation, ArpPacket, ArpRepr, EtherType, EthernetAddress, L3, L4, MacControlRepr, arp, ethernet, udp,
    vlan,
};
use flow::{Local, SendFlow};
use packet::Envelope;
use receiver::{RxParams, RxQp, data_position};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, VecDeque};
use std::net::Ipv4Addr;

/// PFC quanta of a storm XOFF.
pub const STORM_QUANTA: u16 = 0xffff;
/// The first QP number handed out to flows configured with `src_qp: 0`.
pub const FIRST_AUTO_QP: u32 = 0x100;
/// Priority of ARP replies.
const ARP_PRIORITY: u8 = 0;
const PS_PER_NS: u128 = 1000;
const IDENTITY_PRIORITIES: [u8; 8] = [0, 1, 2, 3, 4, 5, 6, 7];

/// Loss recovery of the requester (and the matching behaviour of the responder).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Retransmit {
    /// Resume from the first missing packet (what ConnectX firmware does since the SIGCOMM'16 fix).
    #[default]
    #[serde(rename = "go_back_n")]
    GoBackN,
    /// Restart the whole message; the responder discards a partial message (the original behaviour that
    /// livelocks under 1/256 drop with large messages; `docs/nic.md`, "Loss recovery").
    #[serde(rename = "go_back_0")]
    GoBack0,
}

/// DCQCN notification point (the receiver's CNP generation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct NpParams {
    /// At most one CNP per QP per interval (DCQCN paper N = 50 µs; NVIDIA `min_time_between_cnps`, whose
    /// default differs between firmware generations; `docs/nic.md`, "Notification point"). 0 = a CNP for
    /// every CE packet.
    /// The NIC multiplies it by `DcqcnParams::time_scale` ([`NicConfig::cnp_interval_ns`]).
    pub cnp_interval_ns: u64,
    /// DSCP of CNPs (NVIDIA `cnp_dscp`, common default 48).
    pub cnp_dscp: u8,
    /// Priority CNPs travel on (NVIDIA `cnp_802p_prio`, common default 6).
    pub cnp_priority: u8,
}

impl Default for NpParams {
    fn default() -> Self {
        NpParams { cnp_interval_ns: 50_000, cnp_dscp: 48, cnp_priority: 6 }
    }
}

impl NpParams {
    /// A field out of range, by name.
    pub fn validate(&self) -> Result<(), String> {
        if self.cnp_dscp > 63 {
            return Err(format!("cnp_dscp: {} is above 63", self.cnp_dscp));
        }
        if self.cnp_priority > 7 {
            return Err(format!("cnp_priority: {} is above 7", self.cnp_priority));
        }
        if self.cnp_interval_ns > dcqcn::MAX_PERIOD_NS {
            return Err(format!(
                "cnp_interval_ns: {} is above {}",
                self.cnp_interval_ns,
                dcqcn::MAX_PERIOD_NS
            ));
        }
        Ok(())
    }

    /// The parameter names [`NpParams::set`] takes: the field names.
    pub fn names() -> Vec<String> {
        match serde_json::to_value(NpParams::default()) {
            Ok(serde_json::Value::Object(map)) => map.keys().cloned().collect(),
            _ => Vec::new(),
        }
    }

    /// Sets one parameter by its field name from a decimal number and validates the result; on error
    /// nothing changes and the message names the parameter.
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), String> {
        let updated = dcqcn::set_field(self, name, value).ok_or_else(|| {
            format!("unknown notification point parameter {name:?} (known: {})", Self::names().join(", "))
        })??;
        updated.validate()?;
        *self = updated;
        Ok(())
    }
}

/// Configuration of one NIC.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct NicConfig {
    #[serde(with = "mac_serde")]
    pub mac: EthernetAddress,
    pub ip: Ipv4Addr,
    pub line_rate_mbps: u32,
    /// IP MTU: a data packet carries at most `mtu − 44` payload bytes (IPv4 20, UDP 8, BTH 12, ICRC 4).
    /// 128..=9216.
    pub mtu: u32,
    /// Priorities (bit n = priority n) whose PFC frames are honoured.
    pub pfc_enable: u8,
    /// When set, every frame goes to this MAC (the first-hop router); otherwise to the flow's `dst_mac`
    /// (and replies to the MAC the data came from).
    #[serde(with = "opt_mac_serde")]
    pub gateway_mac: Option<EthernetAddress>,
    /// Tag frames with this VID (PCP = priority); `None` = untagged (DSCP-based fabrics).
    pub vlan_id: Option<u16>,
    /// Reaction point parameters of flows with `dcqcn: true`.
    pub dcqcn: DcqcnParams,
    pub np: NpParams,
    pub retransmit: Retransmit,
    /// Retransmission timeout: no ACK progress for this long rewinds to the first unacknowledged packet.
    /// Default 4 194 304 ns = the IBA local ACK timeout 4.096 µs × 2^10 (exponent 10). Real stacks use
    /// larger exponents (perftest 14 ≈ 67 ms); 10 keeps watchdog-drop labs short. Retries are unlimited
    /// (a real QP errors out after `retry_cnt` = 7).
    pub rto_ns: u64,
    /// ACK after this many in-order packets (and always on a packet with AckReq, the last of a message).
    /// 1 = every packet, as in the HPCC simulator.
    pub ack_every: u32,
    /// A NAK for the same expected PSN is repeated only after this long without progress (HPCC 500 µs).
    pub nak_interval_ns: u64,
    /// At most this many unacknowledged packets per flow; 0 = no window (rate-based only, like the HPCC
    /// simulator's default), bounded only by half the PSN space.
    pub window_packets: u32,
    /// Priority of ACK/NAKs by the DSCP of the data they answer; DSCPs not listed use DSCP >> 3.
    pub dscp_to_priority: BTreeMap<u8, u8>,
    /// IPv4 TTL of every packet.
    pub ttl: u8,
}

impl Default for NicConfig {
    fn default() -> Self {
        NicConfig {
            mac: EthernetAddress([0x02, 0, 0, 0, 0, 0x01]),
            ip: Ipv4Addr::new(10, 0, 0, 1),
            line_rate_mbps: 100_000,
            mtu: 1500,
            pfc_enable: 0b0001_1000,
            gateway_mac: None,
            vlan_id: None,
            dcqcn: DcqcnParams::default(),
            np: NpParams::default(),
            retransmit: Retransmit::GoBackN,
            rto_ns: 4_194_304,
            ack_every: 1,
            nak_interval_ns: 500_000,
            window_packets: 0,
            dscp_to_priority: BTreeMap::new(),
            ttl: 64,
        }
    }
}

impl NicConfig {
    /// Payload bytes per data packet.
    pub fn payload_per_packet(&self) -> u64 {
        u64::from(self.mtu).saturating_sub(packet::IP_OVERHEAD as u64)
    }

    /// The priority of a DSCP: `dscp_to_priority`, else DSCP >> 3.
    pub fn priority_of_dscp(&self, dscp: u8) -> u8 {
        self.dscp_to_priority.get(&dscp).copied().unwrap_or(dscp >> 3) & 7
    }

    pub fn validate(&self) -> Result<(), NicError> {
        let bad = |field: &str, reason: String| Err(NicError::Config(format!("NicConfig.{field}: {reason}")));
        if self.line_rate_mbps == 0 {
            return bad("line_rate_mbps", "must be > 0".into());
        }
        if !(128..=9216).contains(&self.mtu) {
            return bad("mtu", format!("{} is outside 128..=9216", self.mtu));
        }
        if self.vlan_id.is_some_and(|v| v == 0 || v > vlan::VID_MAX - 1) {
            return bad("vlan_id", format!("{} is outside 1..=4094", self.vlan_id.unwrap_or_default()));
        }
        if let Err(e) = self.np.validate() {
            return bad("np", e);
        }
        if self.rto_ns == 0 {
            return bad("rto_ns", "must be > 0".into());
        }
        if self.ack_every == 0 {
            return bad("ack_every", "must be > 0".into());
        }
        if let Some((d, p)) = self.dscp_to_priority.iter().find(|(d, p)| **d > 63 || **p > 7) {
            return bad("dscp_to_priority", format!("{d} → {p}: DSCP ≤ 63 and priority ≤ 7"));
        }
        self.dcqcn.validate().or_else(|e| bad("dcqcn", e))
    }

    /// The notification point's CNP interval in effect: `np.cnp_interval_ns × dcqcn.time_scale`.
    pub fn cnp_interval_ns(&self) -> u64 {
        self.np.cnp_interval_ns.saturating_mul(u64::from(self.dcqcn.time_scale.max(1)))
    }

    /// The names [`NicConfig::set_dcqcn_param`] takes: the reaction point's ([`DcqcnParams`]) and the
    /// notification point's ([`NpParams`]) field names.
    pub fn dcqcn_param_names() -> Vec<String> {
        let mut names = DcqcnParams::names();
        names.extend(NpParams::names());
        names
    }

    /// Sets a DCQCN parameter by name (`rpg_time_reset_ns=300000`, `time_scale=500`, `cnp_interval_ns=0`,
    /// ...): a [`DcqcnParams`] or [`NpParams`] field. The error names the parameter and, for an unknown
    /// one, lists the known names.
    pub fn set_dcqcn_param(&mut self, name: &str, value: &str) -> Result<(), String> {
        if DcqcnParams::names().iter().any(|n| n == name) {
            self.dcqcn.set(name, value)
        } else if NpParams::names().iter().any(|n| n == name) {
            self.np.set(name, value)
        } else {
            Err(format!(
                "unknown DCQCN parameter {name:?} (reaction point: {}; notification point: {})",
                DcqcnParams::names().join(", "),
                NpParams::names().join(", ")
            ))
        }
    }
}

/// A configuration the NIC refuses, naming the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NicError {
    #[error("{0}")]
    Config(String),
    #[error("flow {id}: {reason}")]
    Flow { id: u32, reason: String },
}

/// A control frame waiting for the line.
#[derive(Debug, Clone, Copy)]
enum Control {
    Arp(ArpRepr),
    Ack((Ipv4Addr, u32)),
    Nak((Ipv4Addr, u32)),
    Cnp((Ipv4Addr, u32)),
}

/// The NIC. See the module documentation.
#[derive(Debug)]
pub struct Nic {
    cfg: NicConfig,
    now_ns: u64,
    /// The line is busy until this instant (ps, exact), with the division remainder carried.
    line_free_ps: u128,
    line_remainder: u128,
    pfc: PfcPort,
    storm_interval_ns: u64,
    control: VecDeque<Control>,
    control_ident: u16,
    flows: Vec<SendFlow>,
    rr_next: usize,
    receivers: BTreeMap<(Ipv4Addr, u32), RxQp>,
    counters: NicCounters,
}

impl Nic {
    pub fn new(cfg: NicConfig) -> Result<Nic, NicError> {
        cfg.validate()?;
        Ok(Nic {
            cfg,
            now_ns: 0,
            line_free_ps: 0,
            line_remainder: 0,
            pfc: PfcPort::default(),
            storm_interval_ns: 0,
            control: VecDeque::new(),
            control_ident: 0,
            flows: Vec::new(),
            rr_next: 0,
            receivers: BTreeMap::new(),
            counters: NicCounters::default(),
        })
    }

    pub fn config(&self) -> &NicConfig {
        &self.cfg
    }

    /// The latest time any call passed in.
    pub fn now_ns(&self) -> u64 {
        self.now_ns
    }

    fn observe(&mut self, now_ns: u64) {
        self.now_ns = self.now_ns.max(now_ns);
    }

    fn line_rate_bps(&self) -> u64 {
        u64::from(self.cfg.line_rate_mbps) * 1_000_000
    }

    /// Adds a sending flow; returns its local QP number.
    pub fn add_flow(&mut self, flow: FlowConfig) -> Result<u32, NicError> {
        let id = flow.id;
        let bad = |reason: String| Err(NicError::Flow { id, reason });
        if self.flows.iter().any(|f| f.cfg.id == id) {
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
        let qp_in_use = |qp: u32| self.flows.iter().any(|f| f.src_qp == qp);
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
            self.cfg.rto_ns,
        );
        self.flows.push(send);
        Ok(src_qp)
    }

    /// Removes a flow (whatever it had in flight is forgotten); returns its final statistics.
    pub fn remove_flow(&mut self, id: u32) -> Option<FlowStats> {
        let i = self.flows.iter().position(|f| f.cfg.id == id)?;
        let stats = self.flows[i].stats(self.now_ns);
        self.flows.remove(i);
        if self.rr_next > i {
            self.rr_next -= 1;
        }
        Some(stats)
    }

    /// Storm mode (the misbehaving NIC of Microsoft's "RDMA over Commodity Ethernet at Scale", SIGCOMM
    /// 2016): send a PFC XOFF with [`STORM_QUANTA`] for `priorities` (bit mask) at once and then every
    /// `interval_ns`, regardless of anything. 0 stops the storm without an XON (the peer resumes when its
    /// last timer expires).
    pub fn set_storm(&mut self, priorities: u8, interval_ns: u64) {
        self.pfc.forget(0xff);
        if priorities != 0 {
            self.storm_interval_ns = interval_ns.max(1);
            self.pfc.assert_xoff(priorities);
        }
    }

    /// Priorities this NIC is storming.
    pub fn storm_priorities(&self) -> u8 {
        self.pfc.asserted()
    }

    // ---------------------------------------------------------------------------------------- receive

    /// A frame arrived from the link.
    pub fn handle_frame(&mut self, frame: &[u8], now_ns: u64) {
        self.observe(now_ns);
        self.counters.rx_frames += 1;
        self.counters.rx_bytes += frame.len() as u64;
        let Ok(decoded) = crate::wire::decode(frame) else {
            self.counters.rx_malformed += 1;
            return;
        };
        match decoded.l3 {
            L3::MacControl(MacControlRepr::Pfc(pfc)) => {
                self.counters.rx_pfc_frames += 1;
                self.pfc.receive(&pfc, self.cfg.pfc_enable, self.cfg.line_rate_mbps, now_ns);
            }
            L3::MacControl(MacControlRepr::Pause(pause)) => {
                self.counters.rx_pause_frames += 1;
                if self.cfg.pfc_enable == 0 {
                    self.pfc.receive_pause(pause.pause_time, self.cfg.line_rate_mbps, now_ns);
                }
            }
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
            L3::Ipv4 { header, l4: L4::Udp { header: udp_header, offset, bth: Some(bth) } }
                if header.dst_addr == self.cfg.ip && decoded.ethernet.dst_addr == self.cfg.mac =>
            {
                // The BTH payload without the ICRC.
                let start = offset + udp::HEADER_LEN + bth::HEADER_LEN;
                let end = (offset + udp::HEADER_LEN + udp_header.payload_len).saturating_sub(bth::ICRC_LEN);
                let Some(payload) = frame.get(start..end.max(start)) else {
                    self.counters.rx_malformed += 1;
                    return;
                };
                let roce = Roce {
                    src_mac: decoded.ethernet.src_addr,
                    src_ip: header.src_addr,
                    dscp: header.dscp,
                    ce: header.ecn == Ecn::Ce,
                    udp_src_port: udp_header.src_port,
                    bth,
                };
                self.handle_roce(&roce, payload, now_ns);
            }
            _ => self.counters.rx_ignored += 1,
        }
    }

    fn handle_roce(&mut self, p: &Roce, payload: &[u8], now_ns: u64) {
        if let Some(position) = data_position(p.bth.opcode) {
            let Some(header) = DataHeader::parse(payload) else {
                self.counters.rx_malformed += 1;
                return;
            };
            let params = RxParams {
                ack_every: self.cfg.ack_every,
                nak_interval_ns: self.cfg.nak_interval_ns,
                cnp_interval_ns: self.cfg.cnp_interval_ns(),
                mode: self.cfg.retransmit,
            };
            let key = (p.src_ip, p.bth.dest_qp);
            let rx = self.receivers.entry(key).or_insert_with(|| RxQp::new(p.src_ip, p.bth.dest_qp));
            rx.peer_mac = p.src_mac;
            rx.requester_qp = header.src_qp;
            rx.udp_src_port = p.udp_src_port;
            rx.dscp = p.dscp;
            let out = rx.on_data(p.bth.psn, position, p.bth.ack_request, &header, p.ce, now_ns, &params);
            if out.cnp {
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
        let Some(flow) = self.flows.iter_mut().find(|f| f.src_qp == qp && f.cfg.dst_ip == p.src_ip) else {
            if matches!(p.bth.opcode, Opcode::RcAck | Opcode::Cnp) {
                self.counters.rx_unknown_qp += 1;
            } else {
                self.counters.rx_ignored += 1;
            }
            return;
        };
        match p.bth.opcode {
            Opcode::RcAck => match Aeth::parse(payload) {
                Some(aeth) if aeth.is_ack() => flow.on_ack(p.bth.psn, now_ns),
                Some(aeth) if aeth.syndrome == Aeth::SYNDROME_NAK_PSN_SEQUENCE_ERROR => {
                    flow.on_nak(p.bth.psn, now_ns)
                }
                Some(_) => self.counters.rx_ignored += 1,
                None => self.counters.rx_malformed += 1,
            },
            Opcode::Cnp => flow.on_cnp(now_ns),
            _ => self.counters.rx_ignored += 1,
        }
    }

    // ---------------------------------------------------------------------------------------- timers

    /// Runs the timers due by `now_ns`: DCQCN decrease checks and rate increases, retransmission
    /// timeouts, and closes pauses that expired (for the pause-time accounting).
    pub fn handle_timeout(&mut self, now_ns: u64) {
        self.observe(now_ns);
        self.pfc.settle(now_ns);
        for flow in &mut self.flows {
            flow.handle_timeout(now_ns);
        }
    }

    /// The next instant the NIC needs [`Nic::handle_timeout`] or may send a frame; `None` when it is idle
    /// until a frame arrives. Relative to the latest `now` passed in.
    pub fn poll_at(&self) -> Option<u64> {
        let now = self.now_ns;
        let paused = self.paused(now);
        let unpause = self.pfc.next_unpause_at(now);
        let gate = |priority: u8, ready: u64| {
            if paused & (1 << priority) != 0 { unpause.map(|u| u.max(ready)) } else { Some(ready) }
        };
        let mut transmit = self.pfc.next_frame_at(now);
        let mut earliest = |t: Option<u64>| {
            if let Some(t) = t {
                transmit = Some(transmit.map_or(t, |x| x.min(t)));
            }
        };
        for c in &self.control {
            earliest(gate(self.control_priority(c), now));
        }
        for f in &self.flows {
            earliest(f.ready_at(now, self.cfg.window_packets).and_then(|r| gate(f.cfg.priority, r)));
        }
        let transmit = transmit.map(|t| t.max(self.line_free_ns()));
        self.flows.iter().filter_map(SendFlow::poll_at).chain(transmit).min()
    }

    // ---------------------------------------------------------------------------------------- transmit

    fn line_free_ns(&self) -> u64 {
        self.line_free_ps.div_ceil(PS_PER_NS) as u64
    }

    /// Priorities paused at `now` (all of them under an 802.3x PAUSE).
    fn paused(&self, now_ns: u64) -> u8 {
        self.pfc.paused_queues(now_ns, &IDENTITY_PRIORITIES)
    }

    /// Puts a frame of `len` bytes on the line at `now_ns`; returns the instant (ps) its first bit leaves.
    fn occupy_line(&mut self, now_ns: u64, len: usize) -> u128 {
        let start =
            if now_ns > self.line_free_ns() { u128::from(now_ns) * PS_PER_NS } else { self.line_free_ps };
        let bits = (len as u128 + u128::from(WIRE_OVERHEAD_BYTES)) * 8;
        let scaled = bits * 1_000_000_000_000 + self.line_remainder;
        let rate = u128::from(self.line_rate_bps());
        self.line_free_ps = start + scaled / rate;
        self.line_remainder = scaled % rate;
        self.counters.tx_frames += 1;
        self.counters.tx_bytes += len as u64;
        start
    }

    /// The next frame to put on the line at `now_ns`, if the line is free and something may go.
    pub fn poll_transmit(&mut self, now_ns: u64) -> Option<Vec<u8>> {
        self.observe(now_ns);
        if now_ns < self.line_free_ns() {
            return None;
        }
        self.pfc.settle(now_ns);
        if let Some(pfc) = self.pfc.poll_frame(now_ns, STORM_QUANTA, self.storm_interval_ns) {
            let mut frame = vec![0u8; mac_control::FRAME_LEN];
            MacControlRepr::Pfc(pfc).emit_frame(self.cfg.mac, &mut frame);
            self.counters.tx_pfc_frames += 1;
            self.occupy_line(now_ns, frame.len());
            return Some(frame);
        }
        let paused = self.paused(now_ns);
        while let Some(i) = self.control.iter().position(|c| paused & (1 << self.control_priority(c)) == 0) {
            let Some(c) = self.control.remove(i) else { break };
            if let Some(frame) = self.build_control(c) {
                self.occupy_line(now_ns, frame.len());
                return Some(frame);
            }
        }
        let n = self.flows.len();
        for k in 0..n {
            let i = (self.rr_next + k) % n;
            let flow = &self.flows[i];
            if paused & (1 << flow.cfg.priority) != 0
                || flow.ready_at(now_ns, self.cfg.window_packets).is_none_or(|t| t > now_ns)
            {
                continue;
            }
            self.rr_next = (i + 1) % n;
            let local = self.local();
            // The flow is paced from the instant its first bit leaves, which needs the frame length; the
            // line start does not depend on it.
            let start_ps =
                if now_ns > self.line_free_ns() { u128::from(now_ns) * PS_PER_NS } else { self.line_free_ps };
            let frame = self.flows[i].transmit(now_ns, start_ps, &local);
            self.occupy_line(now_ns, frame.len());
            self.counters.tx_data_frames += 1;
            return Some(frame);
        }
        None
    }

    fn local(&self) -> Local {
        Local {
            mac: self.cfg.mac,
            ip: self.cfg.ip,
            vlan: self.cfg.vlan_id,
            gateway_mac: self.cfg.gateway_mac,
            ttl: self.cfg.ttl,
        }
    }

    fn control_priority(&self, c: &Control) -> u8 {
        match c {
            Control::Arp(_) => ARP_PRIORITY,
            Control::Cnp(_) => self.cfg.np.cnp_priority,
            Control::Ack(key) | Control::Nak(key) => {
                self.receivers.get(key).map_or(0, |rx| self.cfg.priority_of_dscp(rx.dscp))
            }
        }
    }

    fn next_control_ident(&mut self) -> u16 {
        self.control_ident = self.control_ident.wrapping_add(1);
        self.control_ident
    }

    /// The frame of a control item, built from the state at transmission; `None` if it became moot (a
    /// NAK overtaken by in-order progress).
    fn build_control(&mut self, c: Control) -> Option<Vec<u8>> {
        let ident = self.next_control_ident();
        let cfg = &self.cfg;
        match c {
            Control::Arp(reply) => {
                let env = Envelope {
                    dst_mac: reply.target_hardware_addr,
                    priority: ARP_PRIORITY,
                    ..self.envelope()
                };
                let l2 = ethernet::HEADER_LEN + if cfg.vlan_id.is_some() { vlan::HEADER_LEN } else { 0 };
                let mut frame = vec![0u8; (l2 + arp::PACKET_LEN).max(ethernet::MIN_FRAME_LEN)];
                packet::emit_l2(&env, EtherType::Arp, &mut frame);
                reply.emit(&mut ArpPacket::new_unchecked(&mut frame[l2..]));
                self.counters.tx_arp_replies += 1;
                Some(frame)
            }
            Control::Ack(key) | Control::Nak(key) => {
                let is_nak = matches!(c, Control::Nak(_));
                let priority = self.control_priority(&c);
                let base = self.envelope();
                let gateway = self.cfg.gateway_mac;
                let rx = self.receivers.get_mut(&key)?;
                let (psn, aeth) = if is_nak {
                    rx.nak_queued = false;
                    if rx.nak_psn != Some(rx.expected) {
                        return None;
                    }
                    rx.stats.naks_sent += 1;
                    (rx.expected, Aeth::nak_sequence_error(rx.msn()))
                } else {
                    rx.ack_queued = false;
                    rx.ack_sent();
                    let (psn, msn) = rx.ack_state();
                    (psn, Aeth::ack(msn))
                };
                let env = Envelope {
                    dst_mac: gateway.unwrap_or(rx.peer_mac),
                    priority,
                    dst_ip: key.0,
                    dscp: rx.dscp,
                    ident,
                    udp_src_port: rx.udp_src_port,
                    ..base
                };
                let bth = packet::bth(Opcode::RcAck, rx.requester_qp, psn, false);
                let frame = packet::rocev2_frame(&env, &bth, Aeth::LEN, |p| aeth.emit(p));
                if is_nak {
                    self.counters.tx_nak_frames += 1;
                } else {
                    self.counters.tx_ack_frames += 1;
                }
                Some(frame)
            }
            Control::Cnp(key) => {
                let base = self.envelope();
                let gateway = self.cfg.gateway_mac;
                let np = self.cfg.np;
                let rx = self.receivers.get_mut(&key)?;
                rx.stats.cnps_sent += 1;
                let env = Envelope {
                    dst_mac: gateway.unwrap_or(rx.peer_mac),
                    priority: np.cnp_priority,
                    dst_ip: key.0,
                    dscp: np.cnp_dscp,
                    ident,
                    udp_src_port: rx.udp_src_port,
                    ..base
                };
                let bth = packet::bth(Opcode::Cnp, rx.requester_qp, 0, false);
                self.counters.tx_cnp_frames += 1;
                Some(packet::rocev2_frame(&env, &bth, bth::CNP_PAYLOAD_LEN, |_| {}))
            }
        }
    }

    /// This NIC's addressing for a control packet; the caller fills in destination and class.
    fn envelope(&self) -> Envelope {
        Envelope {
            src_mac: self.cfg.mac,
            dst_mac: EthernetAddress::default(),
            vlan: self.cfg.vlan_id,
            priority: 0,
            src_ip: self.cfg.ip,
            dst_ip: Ipv4Addr::UNSPECIFIED,
            dscp: 0,
            ecn: Ecn::NotEct,
            ident: 0,
            ttl: self.cfg.ttl,
            udp_src_port: 0,
        }
    }

    // ---------------------------------------------------------------------------------------- observation

    pub fn flow_ids(&self) -> impl Iterator<Item = u32> + '_ {
        self.flows.iter().map(|f| f.cfg.id)
    }

    pub fn flow_stats(&self, id: u32) -> Option<FlowStats> {
        self.flows.iter().find(|f| f.cfg.id == id).map(|f| f.stats(self.now_ns))
    }

    /// The DCQCN state of a flow (for inspection and tests).
    pub fn flow_dcqcn(&self, id: u32) -> Option<&Dcqcn> {
        self.flows.iter().find(|f| f.cfg.id == id)?.dcqcn()
    }

    /// Every flow has acknowledged its last message and will start no other.
    pub fn all_flows_finished(&self) -> bool {
        self.flows.iter().all(SendFlow::is_finished)
    }

    /// Receiver statistics of the QP `qp` of this NIC as fed by `src_ip`.
    pub fn rx_stats(&self, src_ip: Ipv4Addr, qp: u32) -> Option<RxStats> {
        self.receivers.get(&(src_ip, qp)).map(RxQp::stats)
    }

    /// The (source IP, QP) pairs this NIC has received data for.
    pub fn rx_keys(&self) -> impl Iterator<Item = (Ipv4Addr, u32)> + '_ {
        self.receivers.keys().copied()
    }

    /// Per-packet one-way latency histogram of a receiving QP (to merge across QPs).
    pub fn rx_latency_histogram(&self, src_ip: Ipv4Addr, qp: u32) -> Option<&Histogram> {
        self.receivers.get(&(src_ip, qp)).map(RxQp::latency)
    }

    /// Message latency histogram of a receiving QP.
    pub fn rx_message_latency_histogram(&self, src_ip: Ipv4Addr, qp: u32) -> Option<&Histogram> {
        self.receivers.get(&(src_ip, qp)).map(RxQp::message_latency)
    }

    /// Time `priority` has been paused by received PFC, up to the latest `now` (a pause in progress
    /// included).
    pub fn pause_ns(&self, priority: u8) -> u64 {
        self.pfc.paused_ns(usize::from(priority & 7), self.now_ns)
    }

    /// PFC counters of a priority: frames received (`rx`, `rx_xon`, transitions, completed pause time)
    /// and storm frames sent (`tx`).
    pub fn pfc_counters(&self, priority: u8) -> PfcCounters {
        self.pfc.counters[usize::from(priority & 7)]
    }

    /// Priorities paused now.
    pub fn paused_priorities(&self) -> u8 {
        self.paused(self.now_ns)
    }

    pub fn counters(&self) -> NicCounters {
        self.counters
    }

    pub fn report(&self) -> NicReport {
        NicReport {
            now_ns: self.now_ns,
            counters: self.counters,
            pfc: (0..8u8)
                .map(|p| PriorityPause {
                    priority: p,
                    counters: self.pfc_counters(p),
                    pause_ns: self.pause_ns(p),
                })
                .collect(),
            flows: self.flows.iter().map(|f| f.stats(self.now_ns)).collect(),
            receivers: self.receivers.values().map(RxQp::stats).collect(),
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

/// MAC addresses as `aa:bb:cc:dd:ee:ff` strings in configuration files.
pub(crate) mod mac_serde {
    use crate::wire::EthernetAddress;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(mac: &EthernetAddress, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(mac)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<EthernetAddress, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(|e| serde::de::Error::custom(format!("{text}: {e}")))
    }
}

pub(crate) mod opt_mac_serde {
    use crate::wire::EthernetAddress;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(mac: &Option<EthernetAddress>, s: S) -> Result<S::Ok, S::Error> {
        match mac {
            Some(m) => s.collect_str(m),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<EthernetAddress>, D::Error> {
        match Option::<String>::deserialize(d)? {
            Some(text) => {
                text.parse().map(Some).map_err(|e| serde::de::Error::custom(format!("{text}: {e}")))
            }
            None => Ok(None),
        }
    }
}
