//! The transmit side of [`Nic`]: line pacing, and which frame goes next (PFC storm, control frames,
//! then data round-robin among the flows that may send).

use super::flow::Local;
use super::packet::{self, Buffer, Envelope};
use super::probe;
use super::{
    ARP_PRIORITY, Aeth, Control, IDENTITY_PRIORITIES, Nic, SPARE_DATA_FRAMES, SPARE_FRAMES, STORM_QUANTA,
    WIRE_OVERHEAD_BYTES,
};
use crate::time::Instant;
use crate::wire::bth::{self, Opcode};
use crate::wire::ip::Ecn;
use crate::wire::mac_control;
use crate::wire::{ArpPacket, EtherType, EthernetAddress, MacControlRepr, arp, ethernet, vlan};
use std::collections::VecDeque;
use std::net::Ipv4Addr;

/// The buffer an ACK, NAK or CNP is built in holds this much: any of them (at most 82 bytes with a tag
/// and a CNP's 16-byte payload).
const CONTROL_LEN: usize = 96;

/// A buffer of `capacity` bytes builds a frame of `len` bytes: it holds it, and is not more than twice
/// as large.
fn fits(capacity: usize, len: usize) -> bool {
    capacity >= len && capacity / 2 <= len
}

/// The spare buffers ([`Nic::recycle`]) in two pools by the frame they build, each oldest first: the
/// NIC's longest data frame (`data_len`, at most [`SPARE_DATA_FRAMES`]) and its control frames
/// ([`CONTROL_LEN`], at most [`SPARE_FRAMES`]); a buffer that builds neither is not kept. A frame takes
/// the first of its pool: one buffer looked at, where a best fit over all the spares took a scan of
/// sixteen per frame.
#[derive(Debug, Default)]
pub(super) struct Spares {
    data_len: usize,
    data: VecDeque<Buffer>,
    control: VecDeque<Buffer>,
}

impl Spares {
    pub(super) fn new(data_len: usize) -> Spares {
        Spares { data_len, ..Spares::default() }
    }
}

impl Nic {
    /// When the line is free (its ps timer rounded up).
    pub(super) fn line_free_at(&self) -> Instant {
        crate::ps::to_instant_ceil(self.line_free_ps)
    }

    /// Priorities paused at `now` (all of them under an 802.3x PAUSE).
    pub(super) fn paused(&self, now: Instant) -> u8 {
        // Nothing paused (most calls): no look at the eight timers.
        self.pfc.paused_queues_with(now, || &IDENTITY_PRIORITIES)
    }

    /// The instant (ps) a frame put on the line at `now` starts: now, or when the line frees up.
    fn line_start_ps(&self, now: Instant) -> u128 {
        if now > self.line_free_at() { crate::ps::of_instant(now) } else { self.line_free_ps }
    }

    /// Puts a frame of `len` bytes on the line at `now`; returns the instant (ps) its first bit leaves.
    fn occupy_line(&mut self, now: Instant, len: usize) -> u128 {
        let start = self.line_start_ps(now);
        let bits = (len as u128 + u128::from(WIRE_OVERHEAD_BYTES)) * 8;
        let scaled = bits * 1_000_000_000_000 + self.line_remainder;
        let (whole, remainder) = crate::ps::div_rem(scaled, self.line_rate_bps());
        self.line_free_ps = start + whole;
        self.line_remainder = u128::from(remainder);
        self.counters.tx_frames += 1;
        self.counters.tx_bytes += len as u64;
        start
    }

    /// The next frame to put on the line at `now`, if the line is free and something may go.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Vec<u8>> {
        self.observe(now);
        if now < self.line_free_at() {
            return None;
        }
        self.pfc.settle(now);
        if let Some(pfc) = self.pfc.poll_frame(now, STORM_QUANTA, self.storm_interval) {
            let mut frame = vec![0u8; mac_control::FRAME_LEN];
            MacControlRepr::Pfc(pfc).emit_frame(self.cfg.mac, &mut frame);
            self.counters.tx_pfc_frames += 1;
            self.occupy_line(now, frame.len());
            return Some(frame);
        }
        let paused = self.paused(now);
        // With nothing paused the first control item goes (no look at its priority: for an ACK, a lookup of
        // its QP that `build_control` does anyway).
        let next_control = |nic: &Nic| match paused {
            0 => (!nic.control.is_empty()).then_some(0),
            _ => nic.control.iter().position(|c| paused & (1 << nic.control_priority(c)) == 0),
        };
        while let Some(i) = next_control(self) {
            let Some(c) = self.control.remove(i) else { break };
            if let Some(frame) = self.build_control(c) {
                self.occupy_line(now, frame.len());
                return Some(frame);
            }
        }
        if let Some(frame) = self.poll_probe(now, paused) {
            self.occupy_line(now, frame.len());
            self.counters.tx_probe_frames += 1;
            return Some(frame);
        }
        let n = self.flows.len();
        let window = self.cfg.window_packets;
        // The first flow in round-robin order whose priority is not paused and that is ready now: from the
        // index, or by a scan of the schedules while a cached readiness may have lapsed.
        let scan = || {
            (0..n).map(|k| (self.rr_next + k) % n).find(|&i| {
                let s = &self.schedules[i];
                let ready =
                    if now < s.ready_until { s.ready_at } else { self.flows[i].ready_at(now, window) };
                debug_assert_eq!(ready, self.flows[i].ready_at(now, window), "cached flow readiness");
                paused & (1 << s.priority) == 0 && ready.is_some_and(|t| t <= now)
            })
        };
        let next = match self.next_ready_flow(self.rr_next, now, paused) {
            Some(found) => {
                debug_assert_eq!(found, scan(), "indexed flow readiness");
                found
            }
            None => scan(),
        };
        if let Some(i) = next {
            self.rr_next = (i + 1) % n;
            let local = self.local();
            // The flow is paced from the instant its first bit leaves, which needs the frame length; the
            // line start does not depend on it.
            let start_ps = self.line_start_ps(now);
            debug_assert_eq!(self.spares.data_len, self.data_frame_max_len());
            let buffer = self.spare_frame(self.spares.data_len);
            let frame = self.flows[i].transmit(now, start_ps, &local, buffer);
            self.reschedule_flow(i);
            self.occupy_line(now, frame.len());
            self.counters.tx_data_frames += 1;
            return Some(frame);
        }
        None
    }

    /// A buffer to build a frame of up to `len` bytes in: of the frames the NIC received and is done
    /// with, one that holds it, else a new one. Received frames (data on the receiving side, ACKs on the
    /// sending side) come back through [`Nic::recycle`], so a simulated host builds most frames without an
    /// allocation. A buffer is at most twice as large as the frame (an ACK built in a data frame's buffer
    /// carries 4 KiB across the fabric and back into another NIC's spares: with no buffer clogging the
    /// spares, that raised the Clos shuffle's resident memory by a quarter), so data frames keep the
    /// large buffers. The NIC builds frames of two sizes in them, its longest data frame and an
    /// ACK/NAK/CNP ([`Spares`]): each takes the oldest buffer of its pool (taking the latest instead, whose
    /// headers were just read, added 2% to the Clos shuffle's resident memory early in the run).
    fn spare_frame(&mut self, len: usize) -> Buffer {
        let pool = if len == self.spares.data_len {
            &mut self.spares.data
        } else if len == CONTROL_LEN {
            &mut self.spares.control
        } else {
            return Buffer::any(Vec::with_capacity(len));
        };
        match pool.pop_front() {
            Some(buffer) => {
                debug_assert!(fits(buffer.capacity(), len), "a spare of its pool's size");
                buffer
            }
            None => Buffer::any(Vec::with_capacity(len)),
        }
    }

    /// The longest data frame this NIC sends (a full packet; a message's last may be shorter).
    pub(super) fn data_frame_max_len(&self) -> usize {
        let l2 = ethernet::HEADER_LEN + if self.cfg.vlan_id.is_some() { vlan::HEADER_LEN } else { 0 };
        let payload = (self.cfg.payload_per_packet() as usize).max(packet::DataHeader::LEN);
        (l2 + packet::IP_OVERHEAD + payload).max(ethernet::MIN_FRAME_LEN)
    }

    /// Takes back a frame the NIC has handled, to build a later one in; its bytes are read when that
    /// frame is built (only zeros need no write). A buffer too small for any frame the NIC builds in one
    /// (a received PFC frame's 60 bytes) is not kept: a host of a congested fabric receives PFC frames by
    /// the thousand, and sixteen of them filled the spares for good, so that every data frame was
    /// allocated and zeroed anew.
    /// When the spares are full the oldest goes, so that no buffer the NIC never picks (of a size between
    /// its frames') stays for good either.
    pub fn recycle(&mut self, frame: Vec<u8>) {
        self.keep_spare(Buffer::any(frame));
    }

    /// [`Nic::recycle`] for a frame built by this crate's NICs (forwarded, perhaps, by its switches), as
    /// every frame a NIC receives in a simulation of these models is: zeros past its first
    /// [`packet::ZERO_PADDED_FROM`] bytes, which a frame built in it then need not read (debug builds
    /// check them here). A data frame's 4 KiB were read back for every frame built in them, long after
    /// their last use: 64 cache misses a frame in the 128-host shuffle.
    pub fn recycle_zero_padded(&mut self, frame: Vec<u8>) {
        if frame.capacity() >= CONTROL_LEN {
            self.keep_spare(Buffer::zero_padded(frame));
        }
    }

    fn keep_spare(&mut self, buffer: Buffer) {
        let spares = &mut self.spares;
        let (pool, most) = if fits(buffer.capacity(), spares.data_len) {
            (&mut spares.data, SPARE_DATA_FRAMES)
        } else if fits(buffer.capacity(), CONTROL_LEN) {
            (&mut spares.control, SPARE_FRAMES)
        } else {
            // No frame the NIC builds would take it.
            return;
        };
        if pool.len() >= most {
            pool.pop_front();
        }
        pool.push_back(buffer);
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

    pub(super) fn control_priority(&self, c: &Control) -> u8 {
        match c {
            Control::Arp(_) => ARP_PRIORITY,
            Control::Cnp(_) => self.cfg.np.cnp_priority,
            Control::Ack(key) | Control::Nak(key) => {
                self.receivers.get(key).map_or(0, |rx| self.cfg.priority_of_dscp(rx.dscp))
            }
            Control::Pong(pong) => self.cfg.priority_of_dscp(pong.dscp),
        }
    }

    /// The ping due now, unless its priority is paused. Sent at `now` (the line is free, see
    /// [`Nic::poll_transmit`]), which is the time it carries.
    fn poll_probe(&mut self, now: Instant, paused: u8) -> Option<Vec<u8>> {
        let prober = self.prober.as_mut()?;
        let cfg = prober.config();
        let (priority, dscp) = (cfg.priority, cfg.dscp);
        if paused & (1 << priority) != 0 || prober.next_due().is_none_or(|t| t > now) {
            return None;
        }
        let (peer, src_port, header) = prober.take_due(now, now)?;
        let ident = self.next_control_ident();
        let env = Envelope {
            dst_mac: self.cfg.gateway_mac.unwrap_or(peer.mac),
            priority,
            dst_ip: peer.ip,
            dscp,
            ecn: Ecn::Ect0,
            ident,
            udp_src_port: src_port,
            ..self.envelope()
        };
        Some(probe::probe_frame(&env, &header))
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
                let base = self.envelope();
                let gateway = self.cfg.gateway_mac;
                let rx = self.receivers.get_mut(&key)?;
                // `control_priority`, from the QP at hand.
                let priority = self.cfg.priority_of_dscp(rx.dscp);
                let (psn, aeth) = if is_nak {
                    rx.nak_queued = false;
                    if rx.nak_psn != Some(rx.expected) {
                        return None;
                    }
                    rx.counts.naks_sent += 1;
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
                    dst_ip: key.src_ip,
                    dscp: rx.dscp,
                    ident,
                    udp_src_port: rx.udp_src_port,
                    ..base
                };
                let bth = packet::bth(Opcode::RcAck, rx.requester_qp, psn, false);
                let frame =
                    packet::rocev2_frame_on(self.spare_frame(CONTROL_LEN), &env, &bth, Aeth::LEN, |p| {
                        aeth.emit(p)
                    });
                if is_nak {
                    self.counters.tx_nak_frames += 1;
                } else {
                    self.counters.tx_ack_frames += 1;
                }
                Some(frame)
            }
            Control::Pong(pong) => {
                // The line is free at the latest `now` (poll_transmit checked): the pong leaves then.
                let hold = self.now.saturating_since(pong.arrived);
                let env = Envelope {
                    dst_mac: self.cfg.gateway_mac.unwrap_or(pong.to_mac),
                    priority: self.cfg.priority_of_dscp(pong.dscp),
                    dst_ip: pong.to_ip,
                    dscp: pong.dscp,
                    ecn: Ecn::Ect0,
                    ident,
                    udp_src_port: pong.udp_src_port,
                    ..self.envelope()
                };
                let header = probe::ProbeHeader {
                    kind: probe::ProbeKind::Pong,
                    seq: pong.seq,
                    sent_ns: pong.sent_ns,
                    responder_hold_ns: hold.as_ns(),
                };
                self.counters.tx_probe_reply_frames += 1;
                Some(probe::probe_frame(&env, &header))
            }
            Control::Cnp(key) => {
                let base = self.envelope();
                let gateway = self.cfg.gateway_mac;
                let np = self.cfg.np;
                let rx = self.receivers.get_mut(&key)?;
                rx.counts.cnps_sent += 1;
                let env = Envelope {
                    dst_mac: gateway.unwrap_or(rx.peer_mac),
                    priority: np.cnp_priority,
                    dst_ip: key.src_ip,
                    dscp: np.cnp_dscp,
                    ident,
                    udp_src_port: rx.udp_src_port,
                    ..base
                };
                let bth = packet::bth(Opcode::Cnp, rx.requester_qp, 0, false);
                self.counters.tx_cnp_frames += 1;
                Some(packet::rocev2_frame_on(
                    self.spare_frame(CONTROL_LEN),
                    &env,
                    &bth,
                    bth::CNP_PAYLOAD_LEN,
                    |_| {},
                ))
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nic::{FlowConfig, NicConfig};

    /// A host of a congested fabric receives PFC frames by the thousand: they must not take the places of
    /// the buffers its data frames are built in (they did: the 16 spares filled with PFC frames that no
    /// frame fits, and every later buffer was dropped).
    #[test]
    fn pfc_frames_do_not_crowd_out_the_spare_buffers() {
        let mac = EthernetAddress([2, 0, 0, 0, 0, 1]);
        let ip = Ipv4Addr::new(10, 0, 0, 1);
        let mut nic = Nic::new(NicConfig { mac, ip, ..NicConfig::default() }).unwrap();
        let dst_mac = EthernetAddress([2, 0, 0, 0, 0, 2]);
        let flow = FlowConfig {
            id: 1,
            dst_ip: Ipv4Addr::new(10, 0, 0, 2),
            dst_mac,
            dst_qp: 0x11,
            ..Default::default()
        };
        nic.add_flow(flow).unwrap();
        for _ in 0..2 * SPARE_FRAMES {
            nic.recycle(vec![0u8; mac_control::FRAME_LEN]);
        }
        let buffer = Vec::with_capacity(nic.data_frame_max_len());
        let at = buffer.as_ptr();
        nic.recycle(buffer);
        let frame = nic.poll_transmit(Instant::ZERO).expect("a data frame at once");
        assert_eq!(frame.as_ptr(), at, "the data frame is built in the recycled buffer");
        assert!(frame.len() > 1000, "a data frame: {} bytes", frame.len());
    }
}
