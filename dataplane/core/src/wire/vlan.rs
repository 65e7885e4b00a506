//! The IEEE 802.1Q VLAN tag, as it follows an Ethernet header whose EtherType is the TPID 0x8100.
//!
//! What this view covers is the four bytes after the TPID: the Tag Control Information (PCP, DEI, VID)
//! and the EtherType of the encapsulated payload (IEEE 802.1Q-2018 §9.6). The TPID itself is the outer
//! Ethernet header's EtherType ([`EtherType::Vlan`]).

use super::ethernet::EtherType;
use super::field::{Field, Rest};
use super::{Error, Layer, Result};

mod field {
    use super::{Field, Rest};
    pub const TCI: Field = 0..2;
    pub const ETHERTYPE: Field = 2..4;
    pub const PAYLOAD: Rest = 4..;
}

/// Length of the tag (TCI and inner EtherType) after the TPID.
pub const HEADER_LEN: usize = field::PAYLOAD.start;
/// The highest priority code point (three bits).
pub const PCP_MAX: u8 = 7;
/// The highest VLAN identifier (twelve bits); 0xFFF is reserved by the standard but representable.
pub const VID_MAX: u16 = 0x0fff;

/// A read/write view of an 802.1Q tag and what it encapsulates.
#[derive(Debug, Clone)]
pub struct Tag<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Tag<T> {
    /// Wraps a buffer without checking its length; accessors may panic on a short buffer.
    pub const fn new_unchecked(buffer: T) -> Tag<T> {
        Tag { buffer }
    }

    /// Wraps a buffer, checking it holds at least a tag.
    pub fn new_checked(buffer: T) -> Result<Tag<T>> {
        let tag = Self::new_unchecked(buffer);
        tag.check_len()?;
        Ok(tag)
    }

    pub fn check_len(&self) -> Result<()> {
        if self.buffer.as_ref().len() < HEADER_LEN {
            Err(Error::Truncated { layer: Layer::Vlan })
        } else {
            Ok(())
        }
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn tci(&self) -> u16 {
        u16::from_be_bytes(self.buffer.as_ref()[field::TCI].try_into().unwrap())
    }

    /// Priority Code Point (three bits): the 802.1p priority, which PFC pauses per value.
    pub fn pcp(&self) -> u8 {
        (self.tci() >> 13) as u8
    }
    /// Drop Eligible Indicator.
    pub fn dei(&self) -> bool {
        self.tci() & 0x1000 != 0
    }
    /// VLAN identifier (twelve bits); 0 means a priority-tagged frame with no VLAN.
    pub fn vid(&self) -> u16 {
        self.tci() & VID_MAX
    }
    /// The EtherType of the encapsulated payload.
    pub fn ethertype(&self) -> EtherType {
        EtherType::from(u16::from_be_bytes(self.buffer.as_ref()[field::ETHERTYPE].try_into().unwrap()))
    }
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[field::PAYLOAD]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Tag<T> {
    fn set_tci(&mut self, value: u16) {
        self.buffer.as_mut()[field::TCI].copy_from_slice(&value.to_be_bytes())
    }

    /// Sets the PCP; only the low three bits of `value` are used.
    pub fn set_pcp(&mut self, value: u8) {
        self.set_tci(self.tci() & 0x1fff | u16::from(value & PCP_MAX) << 13)
    }
    pub fn set_dei(&mut self, value: bool) {
        self.set_tci(self.tci() & !0x1000 | u16::from(value) << 12)
    }
    /// Sets the VID; only the low twelve bits of `value` are used.
    pub fn set_vid(&mut self, value: u16) {
        self.set_tci(self.tci() & !VID_MAX | value & VID_MAX)
    }
    pub fn set_ethertype(&mut self, value: EtherType) {
        self.buffer.as_mut()[field::ETHERTYPE].copy_from_slice(&u16::from(value).to_be_bytes())
    }
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::PAYLOAD]
    }
}

/// An 802.1Q tag as an owned value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Repr {
    /// Priority code point, `0..=7`; `emit` keeps the low three bits.
    pub pcp: u8,
    pub dei: bool,
    /// VLAN identifier, `0..=0xfff`; `emit` keeps the low twelve bits.
    pub vid: u16,
    /// EtherType of the encapsulated payload.
    pub ethertype: EtherType,
}

impl Repr {
    pub fn parse<T: AsRef<[u8]>>(tag: &Tag<T>) -> Result<Repr> {
        tag.check_len()?;
        Ok(Repr { pcp: tag.pcp(), dei: tag.dei(), vid: tag.vid(), ethertype: tag.ethertype() })
    }

    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, tag: &mut Tag<T>) {
        tag.set_pcp(self.pcp);
        tag.set_dei(self.dei);
        tag.set_vid(self.vid);
        tag.set_ethertype(self.ethertype);
    }
}

/// Where a tag goes in an Ethernet frame: right after the destination and source MAC addresses.
const TAG_OFFSET: usize = 12;

/// The TCI of a priority and a VLAN: PCP in the top three bits, DEI 0, VID in the low twelve.
pub fn tci(pcp: u8, vid: u16) -> u16 {
    (u16::from(pcp & PCP_MAX) << 13) | (vid & VID_MAX)
}

/// Tags an Ethernet frame in place: `tpid` (0x8100 for 802.1Q) and `tci` after its MAC addresses. A frame
/// too short to hold MAC addresses is left alone.
pub fn push_tag(frame: &mut Vec<u8>, tpid: u16, tci: u16) {
    if frame.len() < TAG_OFFSET {
        return;
    }
    let mut tag = [0u8; 4];
    tag[..2].copy_from_slice(&tpid.to_be_bytes());
    tag[2..].copy_from_slice(&tci.to_be_bytes());
    frame.splice(TAG_OFFSET..TAG_OFFSET, tag);
}

/// Removes the outermost tag of a tagged Ethernet frame in place (the four bytes after its MAC
/// addresses). A frame too short to hold a tag is left alone.
pub fn pop_tag(frame: &mut Vec<u8>) {
    if frame.len() >= TAG_OFFSET + 4 {
        frame.drain(TAG_OFFSET..TAG_OFFSET + 4);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_and_pop_tags_in_place() {
        let untagged: Vec<u8> = (0u8..20).collect();
        let mut frame = untagged.clone();
        push_tag(&mut frame, 0x8100, tci(3, 1000));
        assert_eq!(&frame[12..16], &[0x81, 0x00, 0x63, 0xe8]);
        assert_eq!(&frame[..12], &untagged[..12]);
        assert_eq!(&frame[16..], &untagged[12..]);
        pop_tag(&mut frame);
        assert_eq!(frame, untagged);
        let mut short = vec![0u8; 11];
        push_tag(&mut short, 0x8100, 1);
        pop_tag(&mut short);
        assert_eq!(short, vec![0u8; 11]);
        assert_eq!(tci(9, 0x1fff), 0x2fff, "PCP and VID are masked to their widths");
    }
    use proptest::prelude::*;

    // PCP 3, DEI 0, VID 100 (TCI 0x6064), carrying IPv4, then two payload bytes.
    static TAG_BYTES: [u8; 6] = [0x60, 0x64, 0x08, 0x00, 0x45, 0x00];

    #[test]
    fn deconstruct() {
        let tag = Tag::new_checked(&TAG_BYTES[..]).unwrap();
        assert_eq!(tag.pcp(), 3);
        assert!(!tag.dei());
        assert_eq!(tag.vid(), 100);
        assert_eq!(tag.ethertype(), EtherType::Ipv4);
        assert_eq!(tag.payload(), &[0x45, 0x00]);
    }

    #[test]
    fn construct() {
        let mut bytes = [0xa5; 6];
        let mut tag = Tag::new_unchecked(&mut bytes);
        tag.set_pcp(3);
        tag.set_dei(false);
        tag.set_vid(100);
        tag.set_ethertype(EtherType::Ipv4);
        tag.payload_mut().copy_from_slice(&[0x45, 0x00]);
        assert_eq!(bytes, TAG_BYTES);
    }

    #[test]
    fn tci_fields_are_independent() {
        let mut bytes = [0u8; 4];
        let mut tag = Tag::new_unchecked(&mut bytes);
        tag.set_vid(0xfff);
        tag.set_dei(true);
        tag.set_pcp(7);
        assert_eq!(tag.into_inner(), &[0xff, 0xff, 0x00, 0x00]);
        let mut tag = Tag::new_unchecked(&mut bytes);
        tag.set_pcp(0xf8 | 5); // high bits ignored
        tag.set_dei(false);
        tag.set_vid(0xf001); // high bits ignored
        assert_eq!((tag.pcp(), tag.dei(), tag.vid()), (5, false, 1));
        assert_eq!(&bytes[..2], &[0xa0, 0x01]);
    }

    #[test]
    fn repr_parse_emit() {
        let repr = Repr::parse(&Tag::new_checked(&TAG_BYTES[..]).unwrap()).unwrap();
        assert_eq!(repr, Repr { pcp: 3, dei: false, vid: 100, ethertype: EtherType::Ipv4 });
        let mut bytes = [0u8; HEADER_LEN];
        repr.emit(&mut Tag::new_unchecked(&mut bytes));
        assert_eq!(bytes, TAG_BYTES[..HEADER_LEN]);
    }

    #[test]
    fn truncated() {
        assert_eq!(Tag::new_checked(&TAG_BYTES[..3]).unwrap_err(), Error::Truncated { layer: Layer::Vlan });
        assert!(Tag::new_checked(&TAG_BYTES[..4]).unwrap().payload().is_empty());
    }

    proptest! {
        #[test]
        fn roundtrip(pcp in 0..=PCP_MAX, dei in any::<bool>(), vid in 0..=VID_MAX, ty in any::<u16>()) {
            let repr = Repr { pcp, dei, vid, ethertype: EtherType::from(ty) };
            let mut buf = vec![0; repr.buffer_len()];
            repr.emit(&mut Tag::new_unchecked(&mut buf));
            prop_assert_eq!(Repr::parse(&Tag::new_checked(&buf).unwrap()).unwrap(), repr);
        }

        #[test]
        fn arbitrary_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..128)) {
            if let Ok(tag) = Tag::new_checked(&data[..]) {
                let _ = Repr::parse(&tag);
                let _ = (tag.pcp(), tag.dei(), tag.vid(), tag.ethertype(), tag.payload());
            }
        }
    }
}
