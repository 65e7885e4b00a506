//! Ethernet II framing (IEEE 802.3 clause 3, with the EtherType interpretation of Length/Type).
//!
//! The frame as seen by a port: destination, source, EtherType, payload. The FCS is not part of the
//! frame here (Linux interfaces neither deliver nor expect it); padding to 60 bytes is the emitter's job.

use super::field::{Field, Rest};
use super::{Error, Layer, Result};
use core::fmt;

/// A 48-bit MAC address.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Address(pub [u8; 6]);

impl Address {
    pub const BROADCAST: Address = Address([0xff; 6]);
    /// The MAC Control multicast address used by 802.3x PAUSE and 802.1Qbb PFC (never forwarded).
    pub const MAC_CONTROL: Address = Address([0x01, 0x80, 0xc2, 0x00, 0x00, 0x01]);

    /// Builds an address from a slice; `None` unless it is exactly six bytes.
    pub fn from_bytes(data: &[u8]) -> Option<Address> {
        data.try_into().ok().map(Address)
    }
    pub const fn as_bytes(&self) -> &[u8; 6] {
        &self.0
    }
    pub fn is_broadcast(&self) -> bool {
        *self == Self::BROADCAST
    }
    /// Group (multicast or broadcast) address: the I/G bit is set.
    pub fn is_multicast(&self) -> bool {
        self.0[0] & 0x01 != 0
    }
    pub fn is_unicast(&self) -> bool {
        !self.is_multicast()
    }
    /// IEEE 802.1D reserved link-local group `01:80:C2:00:00:0x`: never forwarded by a bridge.
    pub fn is_link_local_reserved(&self) -> bool {
        self.0[..5] == [0x01, 0x80, 0xc2, 0x00, 0x00] && self.0[5] & 0xf0 == 0
    }
}

impl fmt::Display for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = &self.0;
        write!(f, "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}", b[0], b[1], b[2], b[3], b[4], b[5])
    }
}

impl fmt::Debug for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl core::str::FromStr for Address {
    type Err = AddressParseError;
    /// Parses `aa:bb:cc:dd:ee:ff` (also with `-` separators), case-insensitive.
    fn from_str(s: &str) -> core::result::Result<Address, AddressParseError> {
        let mut out = [0u8; 6];
        let mut parts = s.split([':', '-']);
        for byte in &mut out {
            let part = parts.next().ok_or(AddressParseError)?;
            if part.len() != 2 {
                return Err(AddressParseError);
            }
            *byte = u8::from_str_radix(part, 16).map_err(|_| AddressParseError)?;
        }
        if parts.next().is_some() {
            return Err(AddressParseError);
        }
        Ok(Address(out))
    }
}

/// A MAC address string that is not six colon-separated hex bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("not a MAC address (expected aa:bb:cc:dd:ee:ff)")]
pub struct AddressParseError;

/// The EtherType values this dataplane distinguishes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EtherType {
    Ipv4,
    Arp,
    /// IEEE 802.1Q customer VLAN tag (TPID 0x8100).
    Vlan,
    Ipv6,
    /// MAC Control (0x8808): 802.3x PAUSE and 802.1Qbb PFC.
    MacControl,
    Unknown(u16),
}

impl From<u16> for EtherType {
    fn from(v: u16) -> Self {
        match v {
            0x0800 => EtherType::Ipv4,
            0x0806 => EtherType::Arp,
            0x8100 => EtherType::Vlan,
            0x86dd => EtherType::Ipv6,
            0x8808 => EtherType::MacControl,
            other => EtherType::Unknown(other),
        }
    }
}

impl From<EtherType> for u16 {
    fn from(v: EtherType) -> u16 {
        match v {
            EtherType::Ipv4 => 0x0800,
            EtherType::Arp => 0x0806,
            EtherType::Vlan => 0x8100,
            EtherType::Ipv6 => 0x86dd,
            EtherType::MacControl => 0x8808,
            EtherType::Unknown(other) => other,
        }
    }
}

mod field {
    use super::{Field, Rest};
    pub const DESTINATION: Field = 0..6;
    pub const SOURCE: Field = 6..12;
    pub const ETHERTYPE: Field = 12..14;
    pub const PAYLOAD: Rest = 14..;
}

/// Length of the Ethernet II header.
pub const HEADER_LEN: usize = field::PAYLOAD.start;
/// Minimum frame length without FCS; shorter frames are padded on emit.
pub const MIN_FRAME_LEN: usize = 60;

/// A read/write view of an Ethernet II frame.
#[derive(Debug, Clone)]
pub struct Frame<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Frame<T> {
    /// Wraps a buffer without checking its length; accessors may panic on a short buffer.
    pub const fn new_unchecked(buffer: T) -> Frame<T> {
        Frame { buffer }
    }

    /// Wraps a buffer, checking it holds at least a header.
    pub fn new_checked(buffer: T) -> Result<Frame<T>> {
        let frame = Self::new_unchecked(buffer);
        frame.check_len()?;
        Ok(frame)
    }

    pub fn check_len(&self) -> Result<()> {
        if self.buffer.as_ref().len() < HEADER_LEN {
            Err(Error::Truncated { layer: Layer::Ethernet })
        } else {
            Ok(())
        }
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    pub fn dst_addr(&self) -> Address {
        Address(self.buffer.as_ref()[field::DESTINATION].try_into().unwrap())
    }
    pub fn src_addr(&self) -> Address {
        Address(self.buffer.as_ref()[field::SOURCE].try_into().unwrap())
    }
    pub fn ethertype(&self) -> EtherType {
        let b = &self.buffer.as_ref()[field::ETHERTYPE];
        EtherType::from(u16::from_be_bytes([b[0], b[1]]))
    }
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[field::PAYLOAD]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Frame<T> {
    pub fn set_dst_addr(&mut self, value: Address) {
        self.buffer.as_mut()[field::DESTINATION].copy_from_slice(&value.0)
    }
    pub fn set_src_addr(&mut self, value: Address) {
        self.buffer.as_mut()[field::SOURCE].copy_from_slice(&value.0)
    }
    pub fn set_ethertype(&mut self, value: EtherType) {
        self.buffer.as_mut()[field::ETHERTYPE].copy_from_slice(&u16::from(value).to_be_bytes())
    }
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::PAYLOAD]
    }
}

/// The Ethernet II header as an owned value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Repr {
    pub src_addr: Address,
    pub dst_addr: Address,
    pub ethertype: EtherType,
}

impl Repr {
    pub fn parse<T: AsRef<[u8]>>(frame: &Frame<T>) -> Result<Repr> {
        frame.check_len()?;
        Ok(Repr { src_addr: frame.src_addr(), dst_addr: frame.dst_addr(), ethertype: frame.ethertype() })
    }

    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, frame: &mut Frame<T>) {
        frame.set_dst_addr(self.dst_addr);
        frame.set_src_addr(self.src_addr);
        frame.set_ethertype(self.ethertype);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    // An ARP request header as captured on a Linux bridge.
    static FRAME_BYTES: [u8; 18] = [
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // dst
        0x02, 0x00, 0x00, 0x00, 0x00, 0x01, // src
        0x08, 0x06, // ethertype ARP
        0xaa, 0x00, 0x00, 0xff, // payload
    ];

    #[test]
    fn deconstruct() {
        let frame = Frame::new_checked(&FRAME_BYTES[..]).unwrap();
        assert_eq!(frame.dst_addr(), Address::BROADCAST);
        assert_eq!(frame.src_addr(), Address([0x02, 0, 0, 0, 0, 1]));
        assert_eq!(frame.ethertype(), EtherType::Arp);
        assert_eq!(frame.payload(), &[0xaa, 0x00, 0x00, 0xff]);
    }

    #[test]
    fn construct() {
        let mut bytes = vec![0xa5; 18];
        let mut frame = Frame::new_unchecked(&mut bytes);
        frame.set_dst_addr(Address::BROADCAST);
        frame.set_src_addr(Address([0x02, 0, 0, 0, 0, 1]));
        frame.set_ethertype(EtherType::Arp);
        frame.payload_mut().copy_from_slice(&[0xaa, 0x00, 0x00, 0xff]);
        assert_eq!(&bytes[..], &FRAME_BYTES[..]);
    }

    #[test]
    fn truncated() {
        assert_eq!(
            Frame::new_checked(&FRAME_BYTES[..13]).unwrap_err(),
            Error::Truncated { layer: Layer::Ethernet }
        );
    }

    #[test]
    fn address_text() {
        let a: Address = "02:AA:bb:0c:00:ff".parse().unwrap();
        assert_eq!(a, Address([0x02, 0xaa, 0xbb, 0x0c, 0x00, 0xff]));
        assert_eq!(a.to_string(), "02:aa:bb:0c:00:ff");
        assert!("02:aa:bb:0c:00".parse::<Address>().is_err());
        assert!("02:aa:bb:0c:00:ff:11".parse::<Address>().is_err());
        assert!("0g:aa:bb:0c:00:ff".parse::<Address>().is_err());
        assert!(Address::MAC_CONTROL.is_link_local_reserved());
        assert!(Address::MAC_CONTROL.is_multicast());
    }

    proptest! {
        #[test]
        fn roundtrip(src in any::<[u8; 6]>(), dst in any::<[u8; 6]>(), ty in any::<u16>()) {
            let repr = Repr { src_addr: Address(src), dst_addr: Address(dst), ethertype: EtherType::from(ty) };
            let mut buf = vec![0; repr.buffer_len()];
            repr.emit(&mut Frame::new_unchecked(&mut buf));
            prop_assert_eq!(Repr::parse(&Frame::new_checked(&buf).unwrap()).unwrap(), repr);
        }

        #[test]
        fn arbitrary_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..64)) {
            if let Ok(frame) = Frame::new_checked(&data[..]) {
                let _ = Repr::parse(&frame);
                let _ = frame.payload();
            }
        }
    }
}
