//! The packets the NIC puts on the wire beyond what `wire` defines: the ACK Extended Transport Header,
//! the model's in-payload data header, and one-allocation builders for whole RoCEv2 frames.

use crate::wire::bth::{self, Opcode};
use crate::wire::ip::{Ecn, Protocol};
use crate::wire::{
    BthHeader, BthRepr, EtherType, EthernetAddress, EthernetFrame, EthernetRepr, Ipv4Packet, Ipv4Repr,
    UdpPacket, UdpRepr, VlanRepr, VlanTag, ethernet, ipv4, udp, vlan,
};
use std::net::Ipv4Addr;

/// The 24-bit PSN space.
pub const PSN_MASK: u32 = 0x00ff_ffff;
/// Half the PSN space: a PSN at most this far ahead of the expected one is "ahead", else "behind".
pub const PSN_HALF: u32 = 0x0080_0000;

/// `(psn + n) mod 2^24`.
pub fn psn_add(psn: u32, n: u64) -> u32 {
    ((u64::from(psn) + n) & u64::from(PSN_MASK)) as u32
}

/// Forward distance from `from` to `to` in the PSN space.
pub fn psn_diff(to: u32, from: u32) -> u32 {
    to.wrapping_sub(from) & PSN_MASK
}

/// The ACK Extended Transport Header (IBA vol. 1 §9.3.5), 4 bytes after the BTH of an RC ACKNOWLEDGE:
///
/// ```text
///  byte 0   Syndrome: bits 7..5 = 000 ACK (bits 4..0 = credit count, 11111 = invalid/not used),
///                               001 RNR NAK (timer), 011 NAK (bits 4..0 = NAK code:
///                               0 PSN sequence error, 1 invalid request, 2 remote access, ...)
///  1..4     MSN: 24-bit message sequence number, the number of messages completed by the responder
/// ```
///
/// The PSN of the BTH is the last PSN acknowledged (ACK) or the expected PSN (NAK).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Aeth {
    pub syndrome: u8,
    pub msn: u32,
}

impl Aeth {
    pub const LEN: usize = 4;
    /// ACK with the credit field "invalid" (no end-to-end credits).
    pub const SYNDROME_ACK: u8 = 0x1f;
    /// NAK, code 0: PSN sequence error.
    pub const SYNDROME_NAK_PSN_SEQUENCE_ERROR: u8 = 0x60;

    pub fn ack(msn: u32) -> Aeth {
        Aeth { syndrome: Self::SYNDROME_ACK, msn: msn & PSN_MASK }
    }

    pub fn nak_sequence_error(msn: u32) -> Aeth {
        Aeth { syndrome: Self::SYNDROME_NAK_PSN_SEQUENCE_ERROR, msn: msn & PSN_MASK }
    }

    /// Syndrome class 000.
    pub fn is_ack(&self) -> bool {
        self.syndrome >> 5 == 0b000
    }

    /// Syndrome class 011 (any NAK code).
    pub fn is_nak(&self) -> bool {
        self.syndrome >> 5 == 0b011
    }

    pub fn parse(bytes: &[u8]) -> Option<Aeth> {
        let b: &[u8; 4] = bytes.get(..Self::LEN)?.try_into().ok()?;
        Some(Aeth { syndrome: b[0], msn: u32::from_be_bytes([0, b[1], b[2], b[3]]) })
    }

    pub fn emit(&self, bytes: &mut [u8]) {
        bytes[0] = self.syndrome;
        bytes[1..4].copy_from_slice(&(self.msn & PSN_MASK).to_be_bytes()[1..]);
    }
}

/// The first bytes of every data packet's payload (big endian). Not part of any standard: it is how the
/// model's receiver learns one-way latency, message boundaries and the requester's QP, like a perftest
/// payload. Latency is `arrival − sent_ns`, meaningful because both NICs share one clock (virtual time in
/// the simulator; one host's monotonic clock for a namespace lab).
///
/// ```text
///  0..8    sent_ns           when this transmission left the sender
///  8..16   message_start_ns  first transmission of the message's first packet
///  16..24  seq               packet number within the flow, from 0 (lets a receiver find the initial PSN)
///  24..32  message_id        message number within the flow, from 0
///  32..36  flow_id
///  36..40  src_qp            the requester's QP: destination of ACKs, NAKs and CNPs
///  40..44  app_len           message bytes carried by this packet (≤ payload; short messages are padded)
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct DataHeader {
    pub sent_ns: u64,
    pub message_start_ns: u64,
    pub seq: u64,
    pub message_id: u64,
    pub flow_id: u32,
    pub src_qp: u32,
    pub app_len: u32,
}

impl DataHeader {
    pub const LEN: usize = 44;

    pub fn parse(bytes: &[u8]) -> Option<DataHeader> {
        // A fixed-size array: the fields' reads need no bounds checks.
        let b: &[u8; Self::LEN] = bytes.get(..Self::LEN)?.try_into().ok()?;
        let u64_at = |i: usize| {
            u64::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3], b[i + 4], b[i + 5], b[i + 6], b[i + 7]])
        };
        let u32_at = |i: usize| u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        Some(DataHeader {
            sent_ns: u64_at(0),
            message_start_ns: u64_at(8),
            seq: u64_at(16),
            message_id: u64_at(24),
            flow_id: u32_at(32),
            src_qp: u32_at(36),
            app_len: u32_at(40),
        })
    }

    pub fn emit(&self, b: &mut [u8]) {
        b[0..8].copy_from_slice(&self.sent_ns.to_be_bytes());
        b[8..16].copy_from_slice(&self.message_start_ns.to_be_bytes());
        b[16..24].copy_from_slice(&self.seq.to_be_bytes());
        b[24..32].copy_from_slice(&self.message_id.to_be_bytes());
        b[32..36].copy_from_slice(&self.flow_id.to_be_bytes());
        b[36..40].copy_from_slice(&self.src_qp.to_be_bytes());
        b[40..44].copy_from_slice(&self.app_len.to_be_bytes());
    }
}

/// Bytes a RoCEv2 packet adds to its payload inside the IP MTU: IPv4 20, UDP 8, BTH 12, ICRC 4.
pub const IP_OVERHEAD: usize = ipv4::HEADER_LEN + udp::HEADER_LEN + bth::HEADER_LEN + bth::ICRC_LEN;

/// Layer 2 and 3 of a frame the NIC sends.
#[derive(Debug, Clone, Copy)]
pub struct Envelope {
    pub src_mac: EthernetAddress,
    pub dst_mac: EthernetAddress,
    /// 802.1Q VID; the PCP is the priority.
    pub vlan: Option<u16>,
    pub priority: u8,
    pub src_ip: Ipv4Addr,
    pub dst_ip: Ipv4Addr,
    pub dscp: u8,
    pub ecn: Ecn,
    pub ident: u16,
    pub ttl: u8,
    pub udp_src_port: u16,
}

/// A RoCEv2 frame: Ethernet (tagged if `vlan`), IPv4 (DF, checksum), UDP to 4791 with a zero checksum
/// (as RoCEv2 senders do), `bth`, `payload_len` bytes that `fill` writes, and a zero ICRC. One
/// allocation, padded to the 60-byte Ethernet minimum.
pub fn rocev2_frame(
    env: &Envelope,
    bth: &BthRepr,
    payload_len: usize,
    fill: impl FnOnce(&mut [u8]),
) -> Vec<u8> {
    rocev2_frame_in(Vec::new(), env, bth, payload_len, fill)
}

/// Every frame this crate's NICs build is zeros from this byte on: its headers (at most 58 bytes with a
/// VLAN tag) and at most 64 bytes of payload header (a data header's 44, a probe's 40, an AETH's 4) come
/// first, then zero padding. A switch forwards a frame with its payload untouched (a tag it adds shifts
/// it by 4 bytes, still within this bound), so a frame a NIC receives in a simulation of these models is
/// zeros from here on, which lets it build a frame in the buffer without reading it
/// ([`Buffer::zero_padded`]).
pub const ZERO_PADDED_FROM: usize = 128;

/// A buffer to build a frame in, and how much of it may hold bytes other than zeros: from `dirty` to its
/// length it holds zeros (known, not read: a 4 KiB payload read to find it zero was 64 cache misses per
/// frame in the 128-host shuffle, where a buffer comes back to a NIC long after its last use).
#[derive(Debug, Default)]
pub struct Buffer {
    bytes: Vec<u8>,
    dirty: usize,
}

impl Buffer {
    /// A buffer of unknown contents: every byte is checked (and zeroed where it is not zero) when a frame
    /// is built in it.
    pub fn any(bytes: Vec<u8>) -> Buffer {
        Buffer { dirty: bytes.len(), bytes }
    }

    /// A frame built by this crate's NICs, and perhaps forwarded by its switches: zeros from
    /// [`ZERO_PADDED_FROM`] on, so that a frame built in it writes only its own headers. Debug builds
    /// check the zeros.
    pub fn zero_padded(bytes: Vec<u8>) -> Buffer {
        let dirty = ZERO_PADDED_FROM.min(bytes.len());
        debug_assert!(
            bytes[dirty..].chunks(ZERO_BLOCK).all(|c| *c == ZEROS[..c.len()]),
            "a frame of this model is zeros from byte {ZERO_PADDED_FROM} on"
        );
        Buffer { bytes, dirty }
    }

    pub fn capacity(&self) -> usize {
        self.bytes.capacity()
    }

    /// The buffer's allocation (for tests: which buffer a frame was built in).
    pub fn as_ptr(&self) -> *const u8 {
        self.bytes.as_ptr()
    }
}

/// [`rocev2_frame`] built in `frame`, a buffer to reuse (its contents are replaced; no allocation when
/// its capacity suffices).
pub fn rocev2_frame_in(
    frame: Vec<u8>,
    env: &Envelope,
    bth: &BthRepr,
    payload_len: usize,
    fill: impl FnOnce(&mut [u8]),
) -> Vec<u8> {
    rocev2_frame_on(Buffer::any(frame), env, bth, payload_len, fill)
}

/// [`rocev2_frame_in`] in a buffer whose zeros past `dirty` are known: only the bytes before that are
/// checked.
pub fn rocev2_frame_on(
    buffer: Buffer,
    env: &Envelope,
    bth: &BthRepr,
    payload_len: usize,
    fill: impl FnOnce(&mut [u8]),
) -> Vec<u8> {
    let Buffer { bytes: mut frame, dirty } = buffer;
    let l2 = ethernet::HEADER_LEN + if env.vlan.is_some() { vlan::HEADER_LEN } else { 0 };
    let udp_payload = bth::HEADER_LEN + payload_len + bth::ICRC_LEN;
    let ip_payload = udp::HEADER_LEN + udp_payload;
    let len = (l2 + ipv4::HEADER_LEN + ip_payload).max(ethernet::MIN_FRAME_LEN);
    let p = l2 + ipv4::HEADER_LEN + udp::HEADER_LEN + bth::HEADER_LEN;
    // The frame is a zeroed buffer with the headers and `fill`'s bytes written on it. A reused buffer
    // is made so without writing all of it: its header bytes are all written over ([`emit_headers`]),
    // and from the payload on, up to where the buffer is known
    // to be zeros, only where they are not zero already (a buffer of unknown contents is compared with
    // zeros a KiB at a time: cheaper than writing them, but it still reads every byte).
    let kept = frame.len().min(len);
    frame.truncate(kept);
    // The first bytes of the payload (a data packet's 44-byte header) are zeroed at once.
    let head = (p + 64).min(kept);
    frame[p.min(head)..head].fill(0);
    zero(&mut frame[head..dirty.clamp(head, kept)]);
    // (Not checked per frame in debug builds: a byte loop over 4 KiB would slow every debug simulation;
    // `a_reused_buffer_builds_the_same_frame` checks the builder on clean and dirty buffers, and
    // `Buffer::zero_padded` checks the zeros it vouches for.)
    frame.resize(len, 0);
    emit_headers(env, bth, ip_payload, &mut frame[..p]);
    if cfg!(debug_assertions) {
        let mut generic = vec![0u8; p];
        emit_headers_generic(env, bth, ip_payload, &mut generic);
        debug_assert_eq!(frame[..p], generic[..], "headers written at fixed offsets");
    }
    fill(&mut frame[p..p + payload_len]);
    frame
}

/// The longest headers [`emit_headers`] writes: Ethernet, a VLAN tag, IPv4, UDP and a BTH.
const MAX_HEADERS: usize = ethernet::HEADER_LEN + vlan::HEADER_LEN + 20 + udp::HEADER_LEN + bth::HEADER_LEN;

/// Writes the headers of a RoCEv2 packet whose IP payload is `ip_payload` bytes into `out` (exactly
/// their length): what [`emit_headers_generic`] writes, field by field at fixed offsets in a local array
/// (the wire module's emitters check every field's bounds and re-read bytes to set bits: some 200
/// instructions per frame, for every frame a NIC sends).
fn emit_headers(env: &Envelope, bth: &BthRepr, ip_payload: usize, out: &mut [u8]) {
    let mut h = [0u8; MAX_HEADERS];
    h[0..6].copy_from_slice(&env.dst_mac.0);
    h[6..12].copy_from_slice(&env.src_mac.0);
    let ip = match env.vlan {
        Some(vid) => {
            h[12..14].copy_from_slice(&u16::from(EtherType::Vlan).to_be_bytes());
            h[14..16].copy_from_slice(&vlan::tci(env.priority & 7, vid).to_be_bytes());
            h[16..18].copy_from_slice(&u16::from(EtherType::Ipv4).to_be_bytes());
            ethernet::HEADER_LEN + vlan::HEADER_LEN
        }
        None => {
            h[12..14].copy_from_slice(&u16::from(EtherType::Ipv4).to_be_bytes());
            ethernet::HEADER_LEN
        }
    };
    // IPv4: version 4, IHL 5, DF, no options; the checksum last.
    h[ip] = 0x45;
    h[ip + 1] = crate::wire::ip::join_ds(env.dscp, env.ecn);
    h[ip + 2..ip + 4].copy_from_slice(&((ipv4::HEADER_LEN + ip_payload) as u16).to_be_bytes());
    h[ip + 4..ip + 6].copy_from_slice(&env.ident.to_be_bytes());
    h[ip + 6] = 0x40;
    h[ip + 8] = env.ttl;
    h[ip + 9] = u8::from(Protocol::Udp);
    h[ip + 12..ip + 16].copy_from_slice(&env.src_ip.octets());
    h[ip + 16..ip + 20].copy_from_slice(&env.dst_ip.octets());
    let sum = crate::wire::checksum::checksum(&h[ip..ip + ipv4::HEADER_LEN]);
    h[ip + 10..ip + 12].copy_from_slice(&sum.to_be_bytes());
    // UDP: no checksum.
    let u = ip + ipv4::HEADER_LEN;
    h[u..u + 2].copy_from_slice(&env.udp_src_port.to_be_bytes());
    h[u + 2..u + 4].copy_from_slice(&udp::ROCEV2_PORT.to_be_bytes());
    h[u + 4..u + 6].copy_from_slice(&(ip_payload as u16).to_be_bytes());
    // BTH.
    let b = u + udp::HEADER_LEN;
    h[b] = u8::from(bth.opcode);
    h[b + 1] = u8::from(bth.solicited_event) << 7
        | u8::from(bth.migration_req) << 6
        | (bth.pad_count & 3) << 4
        | bth.transport_version & 0x0f;
    h[b + 2..b + 4].copy_from_slice(&bth.partition_key.to_be_bytes());
    h[b + 4] = u8::from(bth.fecn) << 7 | u8::from(bth.becn) << 6;
    h[b + 5..b + 8].copy_from_slice(&bth.dest_qp.to_be_bytes()[1..]);
    h[b + 8] = u8::from(bth.ack_request) << 7;
    h[b + 9..b + 12].copy_from_slice(&bth.psn.to_be_bytes()[1..]);
    let len = b + bth::HEADER_LEN;
    out.copy_from_slice(&h[..len]);
}

/// [`emit_headers`] with the wire module's emitters (debug builds check the one against the other).
fn emit_headers_generic(env: &Envelope, bth: &BthRepr, ip_payload: usize, frame: &mut [u8]) {
    let l2 = ethernet::HEADER_LEN + if env.vlan.is_some() { vlan::HEADER_LEN } else { 0 };
    let udp_payload = ip_payload - udp::HEADER_LEN;
    emit_l2(env, EtherType::Ipv4, frame);
    let ip = Ipv4Repr {
        src_addr: env.src_ip,
        dst_addr: env.dst_ip,
        protocol: Protocol::Udp,
        payload_len: ip_payload,
        ttl: env.ttl,
        dscp: env.dscp,
        ecn: env.ecn,
        ident: env.ident,
        dont_frag: true,
        more_frags: false,
        frag_offset: 0,
    };
    ip.emit(&mut Ipv4Packet::new_unchecked(&mut frame[l2..]));
    let u = l2 + ipv4::HEADER_LEN;
    let repr = UdpRepr { src_port: env.udp_src_port, dst_port: udp::ROCEV2_PORT, payload_len: udp_payload };
    repr.emit(&mut UdpPacket::new_unchecked(&mut frame[u..]));
    let b = u + udp::HEADER_LEN;
    bth.emit(&mut BthHeader::new_unchecked(&mut frame[b..]));
}

const ZERO_BLOCK: usize = 1024;
static ZEROS: [u8; ZERO_BLOCK] = [0; ZERO_BLOCK];

/// Zeroes `bytes` unless they are zeros already (compared a block at a time with a block of zeros, which
/// reads them at the speed of `memcmp`).
fn zero(bytes: &mut [u8]) {
    for chunk in bytes.chunks_mut(ZERO_BLOCK) {
        if *chunk != ZEROS[..chunk.len()] {
            chunk.fill(0);
        }
    }
}

/// Writes the Ethernet header (and tag) of a frame of `ethertype`.
pub fn emit_l2(env: &Envelope, ethertype: EtherType, frame: &mut [u8]) {
    let outer = if env.vlan.is_some() { EtherType::Vlan } else { ethertype };
    EthernetRepr { src_addr: env.src_mac, dst_addr: env.dst_mac, ethertype: outer }
        .emit(&mut EthernetFrame::new_unchecked(&mut *frame));
    if let Some(vid) = env.vlan {
        let tag = VlanRepr { pcp: env.priority & 7, dei: false, vid, ethertype };
        tag.emit(&mut VlanTag::new_unchecked(&mut frame[ethernet::HEADER_LEN..]));
    }
}

/// A BTH with the fields a RoCEv2 RC packet of this model carries (P_Key 0xFFFF, TVer 0, M set).
pub fn bth(opcode: Opcode, dest_qp: u32, psn: u32, ack_request: bool) -> BthRepr {
    BthRepr::rc(opcode, dest_qp, psn & PSN_MASK, ack_request)
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::wire::{L3, L4, decode};

    #[test]
    fn aeth_layout() {
        let mut b = [0u8; 4];
        Aeth::nak_sequence_error(0x01_0203).emit(&mut b);
        assert_eq!(b, [0x60, 0x01, 0x02, 0x03]);
        let a = Aeth::parse(&b).unwrap();
        assert!(a.is_nak() && !a.is_ack());
        assert_eq!(a.msn, 0x01_0203);
        Aeth::ack(0x1ff_ffff).emit(&mut b);
        assert_eq!(b, [0x1f, 0xff, 0xff, 0xff], "MSN is 24 bits");
        assert!(Aeth::parse(&b).unwrap().is_ack());
        assert_eq!(Aeth::parse(&b[..3]), None);
    }

    /// The addressing of the frames these tests build (priority 3, DSCP 26, ECT(0)).
    pub(in crate::nic) fn envelope(vlan: Option<u16>) -> Envelope {
        Envelope {
            src_mac: EthernetAddress([2, 0, 0, 0, 0, 1]),
            dst_mac: EthernetAddress([2, 0, 0, 0, 0, 2]),
            vlan,
            priority: 3,
            src_ip: Ipv4Addr::new(10, 0, 0, 1),
            dst_ip: Ipv4Addr::new(10, 0, 0, 2),
            dscp: 26,
            ecn: Ecn::Ect0,
            ident: 9,
            ttl: 64,
            udp_src_port: 49152,
        }
    }

    /// A frame built in a reused buffer is byte for byte the frame built in a new one, whatever the
    /// buffer held: zeros past the header (a recycled data frame, where the builder skips zeroing), any
    /// bytes there (a frame of another model), shorter or longer than the new frame.
    #[test]
    fn a_reused_buffer_builds_the_same_frame() {
        let env = envelope(None);
        let h = DataHeader { sent_ns: 7, seq: 3, flow_id: 5, app_len: 4000, ..DataHeader::default() };
        let build = |buffer: Vec<u8>, payload_len: usize| {
            rocev2_frame_in(buffer, &env, &bth(Opcode::RcSendMiddle, 0x11, 3, false), payload_len, |p| {
                h.emit(p)
            })
        };
        for payload_len in [DataHeader::LEN, 1000, 4000] {
            let fresh = build(Vec::new(), payload_len);
            assert!(fresh[fresh.len() - 4..].iter().all(|&b| b == 0), "zero ICRC");
            for old_len in [0, 60, 1000, 2100, 4096, 5000] {
                // A buffer of zeros past a header of ones (a recycled frame of this model), and one of
                // arbitrary bytes (its payload must be zeroed).
                let mut clean = vec![0u8; old_len];
                clean.iter_mut().take(80).for_each(|b| *b = 0xff);
                let dirty: Vec<u8> = (0..old_len).map(|i| (i % 251) as u8 | 1).collect();
                let known = rocev2_frame_on(
                    Buffer::zero_padded(clean.clone()),
                    &env,
                    &bth(Opcode::RcSendMiddle, 0x11, 3, false),
                    payload_len,
                    |p| h.emit(p),
                );
                assert_eq!(known, fresh, "{payload_len} B in a {old_len} B buffer known to be zero-padded");
                assert_eq!(build(clean, payload_len), fresh, "{payload_len} B in a clean {old_len} B buffer");
                assert_eq!(build(dirty, payload_len), fresh, "{payload_len} B in a dirty {old_len} B buffer");
                // One stray byte deep in the payload (in the third block the builder compares).
                let mut speck = vec![0u8; old_len];
                if let Some(b) = speck.get_mut(2100 - 1) {
                    *b = 1;
                }
                assert_eq!(build(speck, payload_len), fresh, "{payload_len} B, a byte left at 2099");
            }
        }
    }

    /// The bound `Buffer::zero_padded` relies on: the longest headers this model writes (tagged, a data
    /// header or a probe's, as a switch that tags it would leave it) end before `ZERO_PADDED_FROM`.
    #[test]
    fn frames_of_this_model_are_zeros_from_the_padding_bound() {
        let h = DataHeader {
            sent_ns: u64::MAX,
            message_start_ns: u64::MAX,
            seq: u64::MAX,
            message_id: u64::MAX,
            flow_id: u32::MAX,
            src_qp: u32::MAX,
            app_len: u32::MAX,
        };
        let probe = crate::nic::probe::ProbeHeader {
            kind: crate::nic::probe::ProbeKind::Pong,
            seq: u64::MAX,
            sent_ns: u64::MAX,
            responder_hold_ns: u64::MAX,
        };
        let frames = [
            rocev2_frame(&envelope(Some(100)), &bth(Opcode::RcSendOnly, 0x11, 1, true), 4096, |p| h.emit(p)),
            crate::nic::probe::probe_frame(&envelope(Some(100)), &probe),
        ];
        for frame in frames {
            // Headers and payload header end at most 4 bytes (a tag a switch adds) before the bound.
            let written = frame.iter().rposition(|&b| b != 0).unwrap_or(0) + 1;
            assert!(written + vlan::HEADER_LEN <= ZERO_PADDED_FROM, "{written} bytes written");
            let _ = Buffer::zero_padded(frame);
        }
    }

    #[test]
    fn psn_arithmetic_wraps() {
        assert_eq!(psn_add(0xff_fffe, 3), 1);
        assert_eq!(psn_diff(1, 0xff_fffe), 3);
        assert_eq!(psn_diff(0xff_fffe, 1), PSN_MASK - 2);
    }

    #[test]
    fn data_header_roundtrip_and_frame_decodes() {
        let h = DataHeader {
            sent_ns: 1,
            message_start_ns: 2,
            seq: 3,
            message_id: 4,
            flow_id: 5,
            src_qp: 6,
            app_len: 7,
        };
        let env = envelope(Some(100));
        let frame = rocev2_frame(&env, &bth(Opcode::RcSendOnly, 0x11, 0x12_3456, true), 100, |p| h.emit(p));
        assert_eq!(frame.len(), 18 + 20 + 8 + 12 + 100 + 4);
        let d = decode(&frame).unwrap();
        assert_eq!(d.vlan.unwrap().pcp, 3);
        let L3::Ipv4 { header, l4: L4::Udp { header: u, offset, bth: Some(b) } } = d.l3 else { panic!() };
        assert_eq!((header.dscp, header.ecn, header.ident), (26, Ecn::Ect0, 9));
        assert_eq!((u.dst_port, b.psn, b.dest_qp, b.opcode), (4791, 0x12_3456, 0x11, Opcode::RcSendOnly));
        let payload = &frame[offset + 8 + 12..];
        assert_eq!(DataHeader::parse(payload), Some(h));
    }
}
