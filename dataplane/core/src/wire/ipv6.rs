//! The IPv6 fixed header (RFC 8200 §3), with the traffic class read as DSCP and ECN (RFC 2474, RFC 3168).
//!
//! Extension headers are not walked: [`Packet::next_header`] is the fixed header's field and
//! [`Packet::payload`] is everything after the fixed header up to the payload length, extension headers
//! included. Jumbograms (payload length 0 with a Jumbo Payload option, RFC 2675) are not supported: they
//! read as an empty payload. Unlike IPv4 there is no header checksum, and the upper-layer pseudo-header
//! (RFC 8200 §8.1) covers neither traffic class nor hop limit, so the in-place edits here invalidate no
//! checksum.

use super::field::Field;
use super::ip::{self, Ecn, Protocol};
use super::{Error, Layer, Result};

pub use core::net::Ipv6Addr as Address;

mod field {
    use super::Field;
    pub const VER_TC_FLOW: Field = 0..4;
    pub const LENGTH: Field = 4..6;
    pub const NXT_HDR: usize = 6;
    pub const HOP_LIMIT: usize = 7;
    pub const SRC_ADDR: Field = 8..24;
    pub const DST_ADDR: Field = 24..40;
}

/// Length of the fixed header.
pub const HEADER_LEN: usize = field::DST_ADDR.end;
/// The highest flow label (twenty bits).
pub const FLOW_LABEL_MAX: u32 = 0x000f_ffff;

/// A read/write view of an IPv6 packet.
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps a buffer without checking it; accessors may panic on a short buffer.
    pub const fn new_unchecked(buffer: T) -> Packet<T> {
        Packet { buffer }
    }

    /// Wraps a buffer, checking it holds the fixed header and the payload length it declares.
    pub fn new_checked(buffer: T) -> Result<Packet<T>> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Checks, in order: at least [`HEADER_LEN`] bytes; version 6; the payload length within the buffer.
    /// Bytes after the payload (Ethernet padding) are allowed and ignored by [`Packet::payload`].
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(Error::Truncated { layer: Layer::Ipv6 });
        }
        if self.version() != 6 {
            return Err(Error::Malformed { layer: Layer::Ipv6, field: "version" });
        }
        if HEADER_LEN + usize::from(self.payload_len()) > len {
            return Err(Error::Truncated { layer: Layer::Ipv6 });
        }
        Ok(())
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn ver_tc_flow(&self) -> u32 {
        u32::from_be_bytes(self.buffer.as_ref()[field::VER_TC_FLOW].try_into().unwrap())
    }

    pub fn version(&self) -> u8 {
        (self.ver_tc_flow() >> 28) as u8
    }
    /// The traffic class octet: DSCP and ECN together.
    pub fn traffic_class(&self) -> u8 {
        (self.ver_tc_flow() >> 20) as u8
    }
    pub fn dscp(&self) -> u8 {
        ip::split_ds(self.traffic_class()).0
    }
    pub fn ecn(&self) -> Ecn {
        ip::split_ds(self.traffic_class()).1
    }
    /// The twenty-bit flow label.
    pub fn flow_label(&self) -> u32 {
        self.ver_tc_flow() & FLOW_LABEL_MAX
    }
    /// Bytes after the fixed header, extension headers included.
    pub fn payload_len(&self) -> u16 {
        u16::from_be_bytes(self.buffer.as_ref()[field::LENGTH].try_into().unwrap())
    }
    /// The fixed header's Next Header field (extension headers are not followed).
    pub fn next_header(&self) -> Protocol {
        Protocol::from(self.buffer.as_ref()[field::NXT_HDR])
    }
    pub fn hop_limit(&self) -> u8 {
        self.buffer.as_ref()[field::HOP_LIMIT]
    }
    pub fn src_addr(&self) -> Address {
        Address::from(<[u8; 16]>::try_from(&self.buffer.as_ref()[field::SRC_ADDR]).unwrap())
    }
    pub fn dst_addr(&self) -> Address {
        Address::from(<[u8; 16]>::try_from(&self.buffer.as_ref()[field::DST_ADDR]).unwrap())
    }
    /// The bytes after the fixed header, up to the payload length.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..HEADER_LEN + usize::from(self.payload_len())]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    fn set_ver_tc_flow(&mut self, value: u32) {
        self.buffer.as_mut()[field::VER_TC_FLOW].copy_from_slice(&value.to_be_bytes())
    }

    /// Sets the version (low four bits of `value`).
    pub fn set_version(&mut self, value: u8) {
        self.set_ver_tc_flow(self.ver_tc_flow() & 0x0fff_ffff | u32::from(value & 0x0f) << 28)
    }
    pub fn set_traffic_class(&mut self, value: u8) {
        self.set_ver_tc_flow(self.ver_tc_flow() & 0xf00f_ffff | u32::from(value) << 20)
    }
    /// Sets the DSCP (low six bits of `value`), keeping the ECN bits.
    pub fn set_dscp(&mut self, value: u8) {
        self.set_traffic_class(ip::join_ds(value, self.ecn()))
    }
    /// Sets the ECN bits, keeping the DSCP.
    pub fn set_ecn(&mut self, value: Ecn) {
        self.set_traffic_class(ip::join_ds(self.dscp(), value))
    }
    /// Sets the flow label (low twenty bits of `value`).
    pub fn set_flow_label(&mut self, value: u32) {
        self.set_ver_tc_flow(self.ver_tc_flow() & !FLOW_LABEL_MAX | value & FLOW_LABEL_MAX)
    }
    pub fn set_payload_len(&mut self, value: u16) {
        self.buffer.as_mut()[field::LENGTH].copy_from_slice(&value.to_be_bytes())
    }
    pub fn set_next_header(&mut self, value: Protocol) {
        self.buffer.as_mut()[field::NXT_HDR] = u8::from(value)
    }
    pub fn set_hop_limit(&mut self, value: u8) {
        self.buffer.as_mut()[field::HOP_LIMIT] = value
    }
    pub fn set_src_addr(&mut self, value: Address) {
        self.buffer.as_mut()[field::SRC_ADDR].copy_from_slice(&value.octets())
    }
    pub fn set_dst_addr(&mut self, value: Address) {
        self.buffer.as_mut()[field::DST_ADDR].copy_from_slice(&value.octets())
    }
    /// The bytes after the fixed header, up to the payload length.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let end = HEADER_LEN + usize::from(self.payload_len());
        &mut self.buffer.as_mut()[HEADER_LEN..end]
    }

    /// Decrements the hop limit and returns the new one.
    ///
    /// The caller drops packets whose hop limit is 0 or 1 before forwarding, so it is positive here; a
    /// hop limit of 0 is left at 0 (saturating, so a packet can never gain hops by wrapping to 255).
    pub fn decrement_hop_limit(&mut self) -> u8 {
        let hop_limit = self.hop_limit().saturating_sub(1);
        self.set_hop_limit(hop_limit);
        hop_limit
    }

    /// Marks congestion experienced (RFC 3168 §5).
    ///
    /// Only an ECN-capable packet (ECT(0) or ECT(1)) is marked; one already CE is left as is. Returns
    /// whether the packet is now CE: `false` means it is Not-ECT, was left untouched, and a congested
    /// queue should drop it instead.
    pub fn set_ecn_ce(&mut self) -> bool {
        match self.ecn() {
            Ecn::NotEct => false,
            Ecn::Ce => true,
            Ecn::Ect0 | Ecn::Ect1 => {
                self.set_ecn(Ecn::Ce);
                true
            }
        }
    }

    /// Rewrites the DSCP (low six bits of `dscp`), keeping the ECN bits.
    pub fn rewrite_dscp(&mut self, dscp: u8) {
        self.set_dscp(dscp)
    }
}

/// An IPv6 fixed header as an owned value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Repr {
    pub src_addr: Address,
    pub dst_addr: Address,
    /// The fixed header's Next Header field.
    pub next_header: Protocol,
    /// Bytes after the fixed header, at most 65535.
    pub payload_len: usize,
    pub hop_limit: u8,
    /// Six bits; `emit` keeps the low six.
    pub dscp: u8,
    pub ecn: Ecn,
    /// Twenty bits; `emit` keeps the low twenty.
    pub flow_label: u32,
}

impl Repr {
    pub fn parse<T: AsRef<[u8]>>(packet: &Packet<T>) -> Result<Repr> {
        packet.check_len()?;
        Ok(Repr {
            src_addr: packet.src_addr(),
            dst_addr: packet.dst_addr(),
            next_header: packet.next_header(),
            payload_len: usize::from(packet.payload_len()),
            hop_limit: packet.hop_limit(),
            dscp: packet.dscp(),
            ecn: packet.ecn(),
            flow_label: packet.flow_label(),
        })
    }

    /// The header `emit` writes: [`HEADER_LEN`]. The packet it heads is `buffer_len() + payload_len`
    /// bytes.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the fixed header. `payload_len` must be at most 65535.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Packet<T>) {
        debug_assert!(self.payload_len <= usize::from(u16::MAX));
        packet.set_ver_tc_flow(
            6 << 28 | u32::from(ip::join_ds(self.dscp, self.ecn)) << 20 | self.flow_label & FLOW_LABEL_MAX,
        );
        packet.set_payload_len(self.payload_len as u16);
        packet.set_next_header(self.next_header);
        packet.set_hop_limit(self.hop_limit);
        packet.set_src_addr(self.src_addr);
        packet.set_dst_addr(self.dst_addr);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    // fe80::1 -> fe80::2, traffic class 0x02 (DSCP 0, ECT(0)), flow label 0x12345, UDP, hop limit 64,
    // 8 payload bytes.
    static PACKET_BYTES: [u8; 48] = [
        0x60, 0x21, 0x23, 0x45, // version 6, traffic class 0x02, flow label 0x12345
        0x00, 0x08, 0x11, 0x40, // payload length 8, next header UDP, hop limit 64
        0xfe, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0xfe,
        0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0xc0, 0x00,
        0x12, 0xb7, 0x00, 0x08, 0x00, 0x00, // payload
    ];

    const SRC: Address = Address::new(0xfe80, 0, 0, 0, 0, 0, 0, 1);
    const DST: Address = Address::new(0xfe80, 0, 0, 0, 0, 0, 0, 2);

    fn packet_repr() -> Repr {
        Repr {
            src_addr: SRC,
            dst_addr: DST,
            next_header: Protocol::Udp,
            payload_len: 8,
            hop_limit: 64,
            dscp: 0,
            ecn: Ecn::Ect0,
            flow_label: 0x12345,
        }
    }

    #[test]
    fn deconstruct() {
        let packet = Packet::new_checked(&PACKET_BYTES[..]).unwrap();
        assert_eq!(packet.version(), 6);
        assert_eq!(packet.traffic_class(), 0x02);
        assert_eq!(packet.dscp(), 0);
        assert_eq!(packet.ecn(), Ecn::Ect0);
        assert_eq!(packet.flow_label(), 0x12345);
        assert_eq!(packet.payload_len(), 8);
        assert_eq!(packet.next_header(), Protocol::Udp);
        assert_eq!(packet.hop_limit(), 64);
        assert_eq!(packet.src_addr(), SRC);
        assert_eq!(packet.dst_addr(), DST);
        assert_eq!(packet.payload(), &PACKET_BYTES[40..]);
        assert_eq!(Repr::parse(&packet).unwrap(), packet_repr());
    }

    #[test]
    fn construct() {
        let mut bytes = [0xa5; 48];
        let mut packet = Packet::new_unchecked(&mut bytes);
        packet.set_version(6);
        packet.set_traffic_class(0);
        packet.set_dscp(0);
        packet.set_ecn(Ecn::Ect0);
        packet.set_flow_label(0x12345);
        packet.set_payload_len(8);
        packet.set_next_header(Protocol::Udp);
        packet.set_hop_limit(64);
        packet.set_src_addr(SRC);
        packet.set_dst_addr(DST);
        packet.payload_mut().copy_from_slice(&PACKET_BYTES[40..]);
        assert_eq!(bytes, PACKET_BYTES);
    }

    #[test]
    fn emit() {
        let mut bytes = [0xa5; 48];
        packet_repr().emit(&mut Packet::new_unchecked(&mut bytes));
        assert_eq!(bytes[..40], PACKET_BYTES[..40]);
    }

    #[test]
    fn setters_keep_neighbours() {
        let mut bytes = PACKET_BYTES;
        let mut packet = Packet::new_unchecked(&mut bytes);
        packet.set_traffic_class(0xff);
        assert_eq!((packet.version(), packet.flow_label()), (6, 0x12345));
        packet.set_flow_label(0xfff0_0000 | 0xabcde); // high bits ignored
        assert_eq!((packet.version(), packet.traffic_class(), packet.flow_label()), (6, 0xff, 0xabcde));
        assert_eq!(&bytes[..4], &[0x6f, 0xfa, 0xbc, 0xde]);
    }

    #[test]
    fn payload_excludes_padding() {
        let mut bytes = PACKET_BYTES.to_vec();
        bytes.extend_from_slice(&[0xee; 6]);
        let packet = Packet::new_checked(&bytes[..]).unwrap();
        assert_eq!(packet.payload(), &PACKET_BYTES[40..]);
    }

    #[test]
    fn check_len_errors() {
        let truncated = Error::Truncated { layer: Layer::Ipv6 };
        assert_eq!(Packet::new_checked(&PACKET_BYTES[..39]).unwrap_err(), truncated);
        assert_eq!(Packet::new_checked(&PACKET_BYTES[..47]).unwrap_err(), truncated);
        let mut bytes = PACKET_BYTES;
        bytes[0] = 0x40;
        assert_eq!(
            Packet::new_checked(&bytes[..]).unwrap_err(),
            Error::Malformed { layer: Layer::Ipv6, field: "version" }
        );
    }

    #[test]
    fn in_place_edits() {
        let mut bytes = PACKET_BYTES;
        let mut packet = Packet::new_checked(&mut bytes[..]).unwrap();
        assert_eq!(packet.decrement_hop_limit(), 63);
        packet.rewrite_dscp(0xc0 | 26); // high bits ignored
        assert_eq!((packet.dscp(), packet.ecn()), (26, Ecn::Ect0));
        assert!(packet.set_ecn_ce());
        assert!(packet.set_ecn_ce());
        assert_eq!((packet.traffic_class(), packet.flow_label()), (0x6b, 0x12345));
        assert_eq!(&bytes[..8], &[0x66, 0xb1, 0x23, 0x45, 0x00, 0x08, 0x11, 0x3f]);

        let mut bytes = PACKET_BYTES;
        let mut packet = Packet::new_checked(&mut bytes[..]).unwrap();
        packet.set_ecn(Ecn::NotEct);
        packet.set_hop_limit(0);
        let before = bytes;
        let mut packet = Packet::new_checked(&mut bytes[..]).unwrap();
        assert!(!packet.set_ecn_ce());
        assert_eq!(packet.decrement_hop_limit(), 0);
        assert_eq!(bytes, before);
    }

    fn arb_repr() -> impl Strategy<Value = Repr> {
        (
            any::<[u8; 16]>(),
            any::<[u8; 16]>(),
            any::<u8>(),
            0usize..=1500,
            any::<u8>(),
            0..=ip::DSCP_MAX,
            0u8..4,
            0..=FLOW_LABEL_MAX,
        )
            .prop_map(|(src, dst, nh, payload_len, hop_limit, dscp, ecn, flow_label)| Repr {
                src_addr: Address::from(src),
                dst_addr: Address::from(dst),
                next_header: Protocol::from(nh),
                payload_len,
                hop_limit,
                dscp,
                ecn: Ecn::from(ecn),
                flow_label,
            })
    }

    /// Makes random bytes more likely to pass `check_len`: version 6 and a payload length that fits.
    fn nudge_header(data: &mut [u8]) {
        if data.len() >= HEADER_LEN {
            data[0] = 0x60 | data[0] & 0x0f;
            let room = (data.len() - HEADER_LEN) as u16;
            let payload_len = u16::from_be_bytes([data[4], data[5]]) % (room + 1);
            data[4..6].copy_from_slice(&payload_len.to_be_bytes());
        }
    }

    proptest! {
        #[test]
        fn roundtrip(repr in arb_repr()) {
            let mut buf = vec![0xa5; repr.buffer_len() + repr.payload_len];
            repr.emit(&mut Packet::new_unchecked(&mut buf));
            prop_assert_eq!(Repr::parse(&Packet::new_checked(&buf).unwrap()).unwrap(), repr);
        }

        #[test]
        fn edits_touch_only_their_field(repr in arb_repr(), dscp in any::<u8>()) {
            let mut buf = vec![0; repr.buffer_len()];
            let repr = Repr { payload_len: 0, ..repr };
            repr.emit(&mut Packet::new_unchecked(&mut buf));
            let mut packet = Packet::new_checked(&mut buf[..]).unwrap();
            packet.decrement_hop_limit();
            let ce = packet.set_ecn_ce();
            packet.rewrite_dscp(dscp);
            let edited = Repr::parse(&packet).unwrap();
            let ecn = if ce { Ecn::Ce } else { repr.ecn };
            prop_assert_eq!(ce, repr.ecn != Ecn::NotEct);
            prop_assert_eq!(edited, Repr {
                hop_limit: repr.hop_limit.saturating_sub(1),
                dscp: dscp & ip::DSCP_MAX,
                ecn,
                ..repr
            });
        }

        #[test]
        fn arbitrary_bytes_never_panic(mut data in proptest::collection::vec(any::<u8>(), 0..128), nudge in any::<bool>(), dscp in any::<u8>()) {
            if nudge {
                nudge_header(&mut data);
            }
            if let Ok(packet) = Packet::new_checked(&data[..]) {
                let _ = Repr::parse(&packet);
                let _ = (packet.version(), packet.traffic_class(), packet.dscp(), packet.ecn());
                let _ = (packet.flow_label(), packet.payload_len(), packet.next_header(), packet.hop_limit());
                let _ = (packet.src_addr(), packet.dst_addr(), packet.payload());
            }
            if let Ok(mut packet) = Packet::new_checked(&mut data[..]) {
                packet.decrement_hop_limit();
                packet.set_ecn_ce();
                packet.rewrite_dscp(dscp);
                let _ = packet.payload_mut();
            }
        }
    }
}
