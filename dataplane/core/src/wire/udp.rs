//! The User Datagram Protocol header (RFC 768), with its checksum over the IPv4 or IPv6 pseudo-header
//! (RFC 8200 §8.1 for IPv6).
//!
//! A switch forwards UDP without looking at its checksum: it is end-to-end, and the in-place edits a
//! switch makes (TTL/hop limit, DSCP, ECN) are outside the pseudo-header, so they never invalidate it.
//! Hence [`Repr::parse`] does not verify it and [`Repr::emit`] leaves it zero; the `*_checksum_*`
//! helpers are for hosts and tests.

use super::checksum;
use super::field::{Field, Rest};
use super::ip::Protocol;
use super::{Error, Layer, Result};
use core::net::{Ipv4Addr, Ipv6Addr};

mod field {
    use super::{Field, Rest};
    pub const SRC_PORT: Field = 0..2;
    pub const DST_PORT: Field = 2..4;
    pub const LENGTH: Field = 4..6;
    pub const CHECKSUM: Field = 6..8;
    pub const PAYLOAD: Rest = 8..;
}

/// Length of the UDP header.
pub const HEADER_LEN: usize = field::PAYLOAD.start;
/// The IANA-assigned destination port of RoCEv2 (InfiniBand Annex A17).
pub const ROCEV2_PORT: u16 = 4791;

/// A read/write view of a UDP datagram.
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps a buffer without checking it; accessors may panic on a short buffer.
    pub const fn new_unchecked(buffer: T) -> Packet<T> {
        Packet { buffer }
    }

    /// Wraps a buffer, checking it holds a header and the whole datagram its length field declares.
    pub fn new_checked(buffer: T) -> Result<Packet<T>> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Checks, in order: at least [`HEADER_LEN`] bytes; the length field at least [`HEADER_LEN`] (so the
    /// IPv6 jumbogram length 0 of RFC 2675 is rejected); the length field within the buffer. Bytes after
    /// the length (Ethernet padding) are allowed and ignored by [`Packet::payload`].
    pub fn check_len(&self) -> Result<()> {
        let buffer_len = self.buffer.as_ref().len();
        if buffer_len < HEADER_LEN {
            return Err(Error::Truncated { layer: Layer::Udp });
        }
        let len = usize::from(self.len());
        if len < HEADER_LEN {
            return Err(Error::Malformed { layer: Layer::Udp, field: "length" });
        }
        if len > buffer_len {
            return Err(Error::Truncated { layer: Layer::Udp });
        }
        Ok(())
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    pub fn src_port(&self) -> u16 {
        u16::from_be_bytes(self.buffer.as_ref()[field::SRC_PORT].try_into().unwrap())
    }
    pub fn dst_port(&self) -> u16 {
        u16::from_be_bytes(self.buffer.as_ref()[field::DST_PORT].try_into().unwrap())
    }
    /// Length of header and payload in bytes.
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> u16 {
        u16::from_be_bytes(self.buffer.as_ref()[field::LENGTH].try_into().unwrap())
    }
    pub fn checksum(&self) -> u16 {
        u16::from_be_bytes(self.buffer.as_ref()[field::CHECKSUM].try_into().unwrap())
    }
    /// The bytes after the header, up to the length field.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..usize::from(self.len())]
    }

    /// One's-complement sum of the datagram (up to its length field) and `pseudo_header`.
    fn sum_with(&self, pseudo_header: u16) -> u16 {
        checksum::combine(&[pseudo_header, checksum::sum(&self.buffer.as_ref()[..usize::from(self.len())])])
    }

    /// Verifies the checksum over the IPv4 pseudo-header. A zero checksum means the sender computed
    /// none (allowed over IPv4) and verifies.
    pub fn verify_checksum_v4(&self, src_addr: Ipv4Addr, dst_addr: Ipv4Addr) -> bool {
        self.checksum() == 0 || self.sum_with(pseudo_header_v4(src_addr, dst_addr, self.len())) == 0xffff
    }

    /// Verifies the checksum over the IPv6 pseudo-header. A zero checksum is invalid over IPv6
    /// (RFC 8200 §8.1) and does not verify.
    pub fn verify_checksum_v6(&self, src_addr: Ipv6Addr, dst_addr: Ipv6Addr) -> bool {
        self.checksum() != 0 && self.sum_with(pseudo_header_v6(src_addr, dst_addr, self.len())) == 0xffff
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    pub fn set_src_port(&mut self, value: u16) {
        self.buffer.as_mut()[field::SRC_PORT].copy_from_slice(&value.to_be_bytes())
    }
    pub fn set_dst_port(&mut self, value: u16) {
        self.buffer.as_mut()[field::DST_PORT].copy_from_slice(&value.to_be_bytes())
    }
    pub fn set_len(&mut self, value: u16) {
        self.buffer.as_mut()[field::LENGTH].copy_from_slice(&value.to_be_bytes())
    }
    pub fn set_checksum(&mut self, value: u16) {
        self.buffer.as_mut()[field::CHECKSUM].copy_from_slice(&value.to_be_bytes())
    }
    /// The bytes after the header, up to the length field.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let end = usize::from(self.len());
        &mut self.buffer.as_mut()[HEADER_LEN..end]
    }

    /// Computes and stores the checksum over the IPv4 pseudo-header; a computed zero is sent as 0xffff.
    pub fn fill_checksum_v4(&mut self, src_addr: Ipv4Addr, dst_addr: Ipv4Addr) {
        self.fill_checksum(pseudo_header_v4(src_addr, dst_addr, self.len()))
    }

    /// Computes and stores the checksum over the IPv6 pseudo-header; a computed zero is sent as 0xffff.
    pub fn fill_checksum_v6(&mut self, src_addr: Ipv6Addr, dst_addr: Ipv6Addr) {
        self.fill_checksum(pseudo_header_v6(src_addr, dst_addr, self.len()))
    }

    fn fill_checksum(&mut self, pseudo_header: u16) {
        self.set_checksum(0);
        let sum = !self.sum_with(pseudo_header);
        self.set_checksum(if sum == 0 { 0xffff } else { sum })
    }
}

/// Sum of the IPv4 pseudo-header: addresses, zero, protocol 17, UDP length (RFC 768).
fn pseudo_header_v4(src_addr: Ipv4Addr, dst_addr: Ipv4Addr, len: u16) -> u16 {
    checksum::combine(&[
        checksum::sum(&src_addr.octets()),
        checksum::sum(&dst_addr.octets()),
        u16::from(u8::from(Protocol::Udp)),
        len,
    ])
}

/// Sum of the IPv6 pseudo-header: addresses, 32-bit upper-layer length, zeros, next header 17.
fn pseudo_header_v6(src_addr: Ipv6Addr, dst_addr: Ipv6Addr, len: u16) -> u16 {
    checksum::combine(&[
        checksum::sum(&src_addr.octets()),
        checksum::sum(&dst_addr.octets()),
        len,
        u16::from(u8::from(Protocol::Udp)),
    ])
}

/// A UDP header as an owned value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Repr {
    pub src_port: u16,
    pub dst_port: u16,
    /// Bytes after the header: the length field minus [`HEADER_LEN`].
    pub payload_len: usize,
}

impl Repr {
    /// Parses the header without verifying the checksum (see the module documentation).
    pub fn parse<T: AsRef<[u8]>>(packet: &Packet<T>) -> Result<Repr> {
        packet.check_len()?;
        Ok(Repr {
            src_port: packet.src_port(),
            dst_port: packet.dst_port(),
            payload_len: usize::from(packet.len()) - HEADER_LEN,
        })
    }

    /// The header `emit` writes: [`HEADER_LEN`]. The datagram is `buffer_len() + payload_len` bytes.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes ports, length and a zero checksum; callers that want one fill it once the payload is in
    /// place (`fill_checksum_v4`/`fill_checksum_v6`). `payload_len` must be at most 65527.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Packet<T>) {
        debug_assert!(self.payload_len <= usize::from(u16::MAX) - HEADER_LEN);
        packet.set_src_port(self.src_port);
        packet.set_dst_port(self.dst_port);
        packet.set_len((HEADER_LEN + self.payload_len) as u16);
        packet.set_checksum(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    // 10.0.0.1:49152 -> 10.0.0.2:4791, payload "hello!", checksum 0xD524 over the IPv4 pseudo-header
    // (computed independently in Python).
    static PACKET_BYTES: [u8; 14] = [
        0xc0, 0x00, 0x12, 0xb7, // ports
        0x00, 0x0e, 0xd5, 0x24, // length 14, checksum
        b'h', b'e', b'l', b'l', b'o', b'!',
    ];

    const SRC4: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
    const DST4: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);
    const SRC6: Ipv6Addr = Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 1);
    const DST6: Ipv6Addr = Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 2);

    #[test]
    fn deconstruct() {
        let packet = Packet::new_checked(&PACKET_BYTES[..]).unwrap();
        assert_eq!(packet.src_port(), 49152);
        assert_eq!(packet.dst_port(), ROCEV2_PORT);
        assert_eq!(packet.len(), 14);
        assert_eq!(packet.checksum(), 0xd524);
        assert_eq!(packet.payload(), b"hello!");
        assert!(packet.verify_checksum_v4(SRC4, DST4));
        assert!(!packet.verify_checksum_v4(DST4, Ipv4Addr::new(10, 0, 0, 3)));
        assert_eq!(
            Repr::parse(&packet).unwrap(),
            Repr { src_port: 49152, dst_port: ROCEV2_PORT, payload_len: 6 }
        );
    }

    #[test]
    fn construct() {
        let mut bytes = [0xa5; 14];
        let mut packet = Packet::new_unchecked(&mut bytes);
        packet.set_src_port(49152);
        packet.set_dst_port(ROCEV2_PORT);
        packet.set_len(14);
        packet.payload_mut().copy_from_slice(b"hello!");
        packet.fill_checksum_v4(SRC4, DST4);
        assert_eq!(bytes, PACKET_BYTES);
    }

    #[test]
    fn emit_leaves_checksum_zero() {
        let repr = Repr { src_port: 49152, dst_port: ROCEV2_PORT, payload_len: 6 };
        let mut bytes = [0xa5; 14];
        repr.emit(&mut Packet::new_unchecked(&mut bytes));
        assert_eq!(bytes[..8], [0xc0, 0x00, 0x12, 0xb7, 0x00, 0x0e, 0x00, 0x00]);
        let packet = Packet::new_checked(&bytes[..]).unwrap();
        assert!(packet.verify_checksum_v4(SRC4, DST4)); // zero: no checksum over IPv4
        assert!(!packet.verify_checksum_v6(SRC6, DST6)); // zero: invalid over IPv6
    }

    #[test]
    fn checksum_v6() {
        let mut bytes = PACKET_BYTES;
        let mut packet = Packet::new_checked(&mut bytes[..]).unwrap();
        packet.fill_checksum_v6(SRC6, DST6);
        // Computed independently in Python.
        assert_eq!(packet.checksum(), 0xec22);
        assert!(packet.verify_checksum_v6(SRC6, DST6));
        assert!(!packet.verify_checksum_v6(SRC6, Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 3)));
        packet.payload_mut()[0] ^= 0x01;
        assert!(!packet.verify_checksum_v6(SRC6, DST6));
    }

    #[test]
    fn checksum_odd_length() {
        let mut bytes = PACKET_BYTES;
        let mut packet = Packet::new_checked(&mut bytes[..]).unwrap();
        packet.set_len(13); // payload "hello"; the last byte is outside the datagram
        packet.fill_checksum_v4(SRC4, DST4);
        // Computed independently in Python.
        assert_eq!(packet.checksum(), 0xd547);
        assert!(packet.verify_checksum_v4(SRC4, DST4));
        assert_eq!(packet.payload(), b"hello");
    }

    #[test]
    fn computed_zero_is_sent_as_ffff() {
        let mut bytes = PACKET_BYTES;
        bytes[8..10].fill(0);
        let mut packet = Packet::new_checked(&mut bytes[..]).unwrap();
        packet.fill_checksum_v4(SRC4, DST4);
        // Putting the checksum into the payload makes the whole sum 0xffff, i.e. a computed zero.
        let c = packet.checksum();
        packet.payload_mut()[..2].copy_from_slice(&c.to_be_bytes());
        packet.fill_checksum_v4(SRC4, DST4);
        assert_eq!(packet.checksum(), 0xffff);
        assert!(packet.verify_checksum_v4(SRC4, DST4));
        packet.fill_checksum_v6(SRC6, DST6);
        assert_ne!(packet.checksum(), 0);
        assert!(packet.verify_checksum_v6(SRC6, DST6));
    }

    #[test]
    fn check_len_errors() {
        let truncated = Error::Truncated { layer: Layer::Udp };
        assert_eq!(Packet::new_checked(&PACKET_BYTES[..7]).unwrap_err(), truncated);
        assert_eq!(Packet::new_checked(&PACKET_BYTES[..13]).unwrap_err(), truncated);
        let mut bytes = PACKET_BYTES;
        bytes[4..6].copy_from_slice(&7u16.to_be_bytes());
        assert_eq!(
            Packet::new_checked(&bytes[..]).unwrap_err(),
            Error::Malformed { layer: Layer::Udp, field: "length" }
        );
        // Padding after the datagram is not payload.
        let mut padded = PACKET_BYTES.to_vec();
        padded.extend_from_slice(&[0; 4]);
        let packet = Packet::new_checked(&padded[..]).unwrap();
        assert_eq!(packet.payload(), b"hello!");
        assert!(packet.verify_checksum_v4(SRC4, DST4));
    }

    /// Makes random bytes more likely to pass `check_len`: a length field within `8..=len`.
    fn nudge_header(data: &mut [u8]) {
        if data.len() >= HEADER_LEN {
            let room = (data.len() - HEADER_LEN) as u16;
            let len = HEADER_LEN as u16 + u16::from_be_bytes([data[4], data[5]]) % (room + 1);
            data[4..6].copy_from_slice(&len.to_be_bytes());
        }
    }

    proptest! {
        #[test]
        fn roundtrip(src_port in any::<u16>(), dst_port in any::<u16>(), payload_len in 0usize..=1500) {
            let repr = Repr { src_port, dst_port, payload_len };
            let mut buf = vec![0xa5; repr.buffer_len() + repr.payload_len];
            repr.emit(&mut Packet::new_unchecked(&mut buf));
            prop_assert_eq!(Repr::parse(&Packet::new_checked(&buf).unwrap()).unwrap(), repr);
        }

        #[test]
        fn filled_checksums_verify(
            payload in proptest::collection::vec(any::<u8>(), 0..64),
            src4 in any::<[u8; 4]>(), dst4 in any::<[u8; 4]>(),
            src6 in any::<[u8; 16]>(), dst6 in any::<[u8; 16]>(),
        ) {
            let repr = Repr { src_port: 1, dst_port: ROCEV2_PORT, payload_len: payload.len() };
            let mut buf = vec![0; repr.buffer_len() + payload.len()];
            let mut packet = Packet::new_unchecked(&mut buf[..]);
            repr.emit(&mut packet);
            packet.payload_mut().copy_from_slice(&payload);
            let (src4, dst4, src6, dst6) = (src4.into(), dst4.into(), src6.into(), dst6.into());
            packet.fill_checksum_v4(src4, dst4);
            prop_assert!(packet.checksum() != 0 && packet.verify_checksum_v4(src4, dst4));
            packet.fill_checksum_v6(src6, dst6);
            prop_assert!(packet.checksum() != 0 && packet.verify_checksum_v6(src6, dst6));
        }

        #[test]
        fn arbitrary_bytes_never_panic(mut data in proptest::collection::vec(any::<u8>(), 0..128), nudge in any::<bool>()) {
            if nudge {
                nudge_header(&mut data);
            }
            if let Ok(packet) = Packet::new_checked(&data[..]) {
                let _ = Repr::parse(&packet);
                let _ = (packet.src_port(), packet.dst_port(), packet.len(), packet.checksum(), packet.payload());
                let _ = packet.verify_checksum_v4(Ipv4Addr::LOCALHOST, Ipv4Addr::BROADCAST);
                let _ = packet.verify_checksum_v6(Ipv6Addr::LOCALHOST, Ipv6Addr::UNSPECIFIED);
            }
            if let Ok(mut packet) = Packet::new_checked(&mut data[..]) {
                packet.fill_checksum_v4(Ipv4Addr::LOCALHOST, Ipv4Addr::BROADCAST);
                packet.fill_checksum_v6(Ipv6Addr::LOCALHOST, Ipv6Addr::UNSPECIFIED);
                let _ = packet.payload_mut();
            }
        }
    }
}
