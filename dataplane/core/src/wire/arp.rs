//! The Address Resolution Protocol (RFC 826), for Ethernet hardware and IPv4 protocol addresses only.
//!
//! The view reads the fixed part (hardware/protocol type and length, operation) of any ARP packet, and
//! the four addresses at their Ethernet/IPv4 offsets. [`Repr::parse`] rejects every other combination of
//! hardware and protocol type as [`Error::Unsupported`].

use super::ethernet::{self, EtherType};
use super::field::Field;
use super::{Error, Layer, Result};
use core::net::Ipv4Addr;

mod field {
    use super::Field;
    pub const HTYPE: Field = 0..2;
    pub const PTYPE: Field = 2..4;
    pub const HLEN: usize = 4;
    pub const PLEN: usize = 5;
    pub const OPER: Field = 6..8;
    // The address fields as laid out for Ethernet (hlen 6) and IPv4 (plen 4).
    pub const SHA: Field = 8..14;
    pub const SPA: Field = 14..18;
    pub const THA: Field = 18..24;
    pub const TPA: Field = 24..28;
}

/// Length of the fixed part, before the addresses.
pub const FIXED_LEN: usize = field::SHA.start;
/// Length of an Ethernet/IPv4 ARP packet.
pub const PACKET_LEN: usize = field::TPA.end;
/// `ar$hrd` for Ethernet.
pub const HARDWARE_ETHERNET: u16 = 1;

/// The ARP opcode (`ar$op`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operation {
    Request,
    Reply,
    Unknown(u16),
}

impl From<u16> for Operation {
    fn from(v: u16) -> Self {
        match v {
            1 => Operation::Request,
            2 => Operation::Reply,
            other => Operation::Unknown(other),
        }
    }
}

impl From<Operation> for u16 {
    fn from(v: Operation) -> u16 {
        match v {
            Operation::Request => 1,
            Operation::Reply => 2,
            Operation::Unknown(other) => other,
        }
    }
}

/// A read/write view of an ARP packet.
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps a buffer without checking its length; accessors may panic on a short buffer.
    pub const fn new_unchecked(buffer: T) -> Packet<T> {
        Packet { buffer }
    }

    /// Wraps a buffer, checking it is long enough for every accessor (see [`Packet::check_len`]).
    pub fn new_checked(buffer: T) -> Result<Packet<T>> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Checks the buffer holds the fixed part, the addresses its own length fields declare
    /// (`8 + 2 * (hlen + plen)` bytes), and at least [`PACKET_LEN`] bytes, so that the Ethernet/IPv4
    /// address accessors cannot run past the end whatever the length fields say. ARP arrives in
    /// Ethernet frames padded to at least 46 payload bytes, so the last condition never rejects a real
    /// frame.
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < FIXED_LEN {
            return Err(Error::Truncated { layer: Layer::Arp });
        }
        let declared = FIXED_LEN + 2 * (usize::from(self.hardware_len()) + usize::from(self.protocol_len()));
        if len < declared.max(PACKET_LEN) { Err(Error::Truncated { layer: Layer::Arp }) } else { Ok(()) }
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// `ar$hrd`: 1 for Ethernet.
    pub fn hardware_type(&self) -> u16 {
        u16::from_be_bytes(self.buffer.as_ref()[field::HTYPE].try_into().unwrap())
    }
    /// `ar$pro`: an EtherType, 0x0800 for IPv4.
    pub fn protocol_type(&self) -> EtherType {
        EtherType::from(u16::from_be_bytes(self.buffer.as_ref()[field::PTYPE].try_into().unwrap()))
    }
    /// `ar$hln`: bytes per hardware address.
    pub fn hardware_len(&self) -> u8 {
        self.buffer.as_ref()[field::HLEN]
    }
    /// `ar$pln`: bytes per protocol address.
    pub fn protocol_len(&self) -> u8 {
        self.buffer.as_ref()[field::PLEN]
    }
    pub fn operation(&self) -> Operation {
        Operation::from(u16::from_be_bytes(self.buffer.as_ref()[field::OPER].try_into().unwrap()))
    }
    /// `ar$sha`, read at its Ethernet/IPv4 offset.
    pub fn source_hardware_addr(&self) -> ethernet::Address {
        ethernet::Address(self.buffer.as_ref()[field::SHA].try_into().unwrap())
    }
    /// `ar$spa`, read at its Ethernet/IPv4 offset.
    pub fn source_protocol_addr(&self) -> Ipv4Addr {
        Ipv4Addr::from(<[u8; 4]>::try_from(&self.buffer.as_ref()[field::SPA]).unwrap())
    }
    /// `ar$tha`, read at its Ethernet/IPv4 offset.
    pub fn target_hardware_addr(&self) -> ethernet::Address {
        ethernet::Address(self.buffer.as_ref()[field::THA].try_into().unwrap())
    }
    /// `ar$tpa`, read at its Ethernet/IPv4 offset.
    pub fn target_protocol_addr(&self) -> Ipv4Addr {
        Ipv4Addr::from(<[u8; 4]>::try_from(&self.buffer.as_ref()[field::TPA]).unwrap())
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    pub fn set_hardware_type(&mut self, value: u16) {
        self.buffer.as_mut()[field::HTYPE].copy_from_slice(&value.to_be_bytes())
    }
    pub fn set_protocol_type(&mut self, value: EtherType) {
        self.buffer.as_mut()[field::PTYPE].copy_from_slice(&u16::from(value).to_be_bytes())
    }
    pub fn set_hardware_len(&mut self, value: u8) {
        self.buffer.as_mut()[field::HLEN] = value
    }
    pub fn set_protocol_len(&mut self, value: u8) {
        self.buffer.as_mut()[field::PLEN] = value
    }
    pub fn set_operation(&mut self, value: Operation) {
        self.buffer.as_mut()[field::OPER].copy_from_slice(&u16::from(value).to_be_bytes())
    }
    pub fn set_source_hardware_addr(&mut self, value: ethernet::Address) {
        self.buffer.as_mut()[field::SHA].copy_from_slice(value.as_bytes())
    }
    pub fn set_source_protocol_addr(&mut self, value: Ipv4Addr) {
        self.buffer.as_mut()[field::SPA].copy_from_slice(&value.octets())
    }
    pub fn set_target_hardware_addr(&mut self, value: ethernet::Address) {
        self.buffer.as_mut()[field::THA].copy_from_slice(value.as_bytes())
    }
    pub fn set_target_protocol_addr(&mut self, value: Ipv4Addr) {
        self.buffer.as_mut()[field::TPA].copy_from_slice(&value.octets())
    }
}

/// An Ethernet/IPv4 ARP packet as an owned value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Repr {
    pub operation: Operation,
    pub source_hardware_addr: ethernet::Address,
    pub source_protocol_addr: Ipv4Addr,
    pub target_hardware_addr: ethernet::Address,
    pub target_protocol_addr: Ipv4Addr,
}

impl Repr {
    /// Parses an Ethernet/IPv4 ARP packet; other hardware or protocol types are `Unsupported`.
    /// Any operation code is accepted (unknown ones as [`Operation::Unknown`]).
    pub fn parse<T: AsRef<[u8]>>(packet: &Packet<T>) -> Result<Repr> {
        packet.check_len()?;
        let unsupported = |what| Err(Error::Unsupported { layer: Layer::Arp, what });
        if packet.hardware_type() != HARDWARE_ETHERNET {
            return unsupported("hardware type");
        }
        if packet.protocol_type() != EtherType::Ipv4 {
            return unsupported("protocol type");
        }
        if packet.hardware_len() != 6 {
            return unsupported("hardware address length");
        }
        if packet.protocol_len() != 4 {
            return unsupported("protocol address length");
        }
        Ok(Repr {
            operation: packet.operation(),
            source_hardware_addr: packet.source_hardware_addr(),
            source_protocol_addr: packet.source_protocol_addr(),
            target_hardware_addr: packet.target_hardware_addr(),
            target_protocol_addr: packet.target_protocol_addr(),
        })
    }

    pub const fn buffer_len(&self) -> usize {
        PACKET_LEN
    }

    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Packet<T>) {
        packet.set_hardware_type(HARDWARE_ETHERNET);
        packet.set_protocol_type(EtherType::Ipv4);
        packet.set_hardware_len(6);
        packet.set_protocol_len(4);
        packet.set_operation(self.operation);
        packet.set_source_hardware_addr(self.source_hardware_addr);
        packet.set_source_protocol_addr(self.source_protocol_addr);
        packet.set_target_hardware_addr(self.target_hardware_addr);
        packet.set_target_protocol_addr(self.target_protocol_addr);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    // "Who has 10.0.0.2? Tell 10.0.0.1" from 02:00:00:00:00:01.
    static REQUEST_BYTES: [u8; 28] = [
        0x00, 0x01, // htype Ethernet
        0x08, 0x00, // ptype IPv4
        0x06, 0x04, // hlen, plen
        0x00, 0x01, // request
        0x02, 0x00, 0x00, 0x00, 0x00, 0x01, // sha
        0x0a, 0x00, 0x00, 0x01, // spa
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // tha (unknown)
        0x0a, 0x00, 0x00, 0x02, // tpa
    ];

    // "10.0.0.2 is at 02:00:00:00:00:02", back to the requester.
    static REPLY_BYTES: [u8; 28] = [
        0x00, 0x01, 0x08, 0x00, 0x06, 0x04, //
        0x00, 0x02, // reply
        0x02, 0x00, 0x00, 0x00, 0x00, 0x02, // sha
        0x0a, 0x00, 0x00, 0x02, // spa
        0x02, 0x00, 0x00, 0x00, 0x00, 0x01, // tha
        0x0a, 0x00, 0x00, 0x01, // tpa
    ];

    const MAC1: ethernet::Address = ethernet::Address([0x02, 0, 0, 0, 0, 1]);
    const MAC2: ethernet::Address = ethernet::Address([0x02, 0, 0, 0, 0, 2]);
    const IP1: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
    const IP2: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);

    fn request_repr() -> Repr {
        Repr {
            operation: Operation::Request,
            source_hardware_addr: MAC1,
            source_protocol_addr: IP1,
            target_hardware_addr: ethernet::Address([0; 6]),
            target_protocol_addr: IP2,
        }
    }

    fn reply_repr() -> Repr {
        Repr {
            operation: Operation::Reply,
            source_hardware_addr: MAC2,
            source_protocol_addr: IP2,
            target_hardware_addr: MAC1,
            target_protocol_addr: IP1,
        }
    }

    #[test]
    fn deconstruct_request() {
        let packet = Packet::new_checked(&REQUEST_BYTES[..]).unwrap();
        assert_eq!(packet.hardware_type(), 1);
        assert_eq!(packet.protocol_type(), EtherType::Ipv4);
        assert_eq!(packet.hardware_len(), 6);
        assert_eq!(packet.protocol_len(), 4);
        assert_eq!(packet.operation(), Operation::Request);
        assert_eq!(packet.source_hardware_addr(), MAC1);
        assert_eq!(packet.source_protocol_addr(), IP1);
        assert_eq!(packet.target_hardware_addr(), ethernet::Address([0; 6]));
        assert_eq!(packet.target_protocol_addr(), IP2);
        assert_eq!(Repr::parse(&packet).unwrap(), request_repr());
    }

    #[test]
    fn deconstruct_reply() {
        let packet = Packet::new_checked(&REPLY_BYTES[..]).unwrap();
        assert_eq!(packet.operation(), Operation::Reply);
        assert_eq!(Repr::parse(&packet).unwrap(), reply_repr());
    }

    #[test]
    fn construct() {
        let mut bytes = [0xa5; 28];
        let mut packet = Packet::new_unchecked(&mut bytes);
        packet.set_hardware_type(1);
        packet.set_protocol_type(EtherType::Ipv4);
        packet.set_hardware_len(6);
        packet.set_protocol_len(4);
        packet.set_operation(Operation::Request);
        packet.set_source_hardware_addr(MAC1);
        packet.set_source_protocol_addr(IP1);
        packet.set_target_hardware_addr(ethernet::Address([0; 6]));
        packet.set_target_protocol_addr(IP2);
        assert_eq!(bytes, REQUEST_BYTES);
    }

    #[test]
    fn emit() {
        for (repr, expected) in [(request_repr(), &REQUEST_BYTES), (reply_repr(), &REPLY_BYTES)] {
            let mut bytes = [0xa5; PACKET_LEN];
            repr.emit(&mut Packet::new_unchecked(&mut bytes));
            assert_eq!(&bytes, expected);
        }
    }

    #[test]
    fn padded_frame_parses() {
        // As delivered in a minimum-size Ethernet frame: 46 payload bytes, 18 of them padding.
        let mut bytes = [0u8; 46];
        bytes[..28].copy_from_slice(&REPLY_BYTES);
        assert_eq!(Repr::parse(&Packet::new_checked(&bytes[..]).unwrap()).unwrap(), reply_repr());
    }

    #[test]
    fn truncated() {
        let err = Error::Truncated { layer: Layer::Arp };
        assert_eq!(Packet::new_checked(&REQUEST_BYTES[..7]).unwrap_err(), err);
        assert_eq!(Packet::new_checked(&REQUEST_BYTES[..27]).unwrap_err(), err);
        // The declared address lengths do not fit.
        let mut bytes = [0u8; 46];
        bytes[..28].copy_from_slice(&REQUEST_BYTES);
        bytes[4] = 16;
        assert_eq!(Packet::new_checked(&bytes[..]).unwrap_err(), err);
    }

    #[test]
    fn unsupported() {
        let what = |bytes: &[u8]| match Repr::parse(&Packet::new_checked(bytes).unwrap()) {
            Err(Error::Unsupported { layer: Layer::Arp, what }) => what,
            other => panic!("{other:?}"),
        };
        let mut bytes = REQUEST_BYTES;
        bytes[1] = 6; // IEEE 802 hardware
        assert_eq!(what(&bytes), "hardware type");
        let mut bytes = REQUEST_BYTES;
        bytes[2..4].copy_from_slice(&[0x86, 0xdd]);
        assert_eq!(what(&bytes), "protocol type");
        let mut bytes = REQUEST_BYTES;
        bytes[4] = 5;
        assert_eq!(what(&bytes), "hardware address length");
        let mut bytes = REQUEST_BYTES;
        bytes[5] = 3;
        assert_eq!(what(&bytes), "protocol address length");
    }

    #[test]
    fn operation_numbers_roundtrip() {
        assert_eq!(Operation::from(1), Operation::Request);
        assert_eq!(Operation::from(2), Operation::Reply);
        for v in [0u16, 1, 2, 3, 8, 0xffff] {
            assert_eq!(u16::from(Operation::from(v)), v);
        }
    }

    proptest! {
        #[test]
        fn roundtrip(op in any::<u16>(), sha in any::<[u8; 6]>(), spa in any::<[u8; 4]>(),
                     tha in any::<[u8; 6]>(), tpa in any::<[u8; 4]>()) {
            let repr = Repr {
                operation: Operation::from(op),
                source_hardware_addr: ethernet::Address(sha),
                source_protocol_addr: Ipv4Addr::from(spa),
                target_hardware_addr: ethernet::Address(tha),
                target_protocol_addr: Ipv4Addr::from(tpa),
            };
            let mut buf = vec![0; repr.buffer_len()];
            repr.emit(&mut Packet::new_unchecked(&mut buf));
            prop_assert_eq!(Repr::parse(&Packet::new_checked(&buf).unwrap()).unwrap(), repr);
        }

        #[test]
        fn arbitrary_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..128)) {
            if let Ok(packet) = Packet::new_checked(&data[..]) {
                let _ = Repr::parse(&packet);
                let _ = (packet.hardware_type(), packet.protocol_type(), packet.hardware_len());
                let _ = (packet.protocol_len(), packet.operation());
                let _ = (packet.source_hardware_addr(), packet.source_protocol_addr());
                let _ = (packet.target_hardware_addr(), packet.target_protocol_addr());
            }
        }
    }
}
