//! The IPv4 header (RFC 791), with its second octet read as the DS field (RFC 2474 DSCP, RFC 3168 ECN).
//!
//! Besides plain accessors, the view has the in-place edits a forwarding switch makes — TTL decrement,
//! ECN congestion marking, DSCP rewrite — each of which keeps the header checksum valid with the
//! incremental update of [`checksum::update`] instead of summing the header again. Options are carried
//! (the payload starts after them) but not interpreted.

use super::checksum;
use super::field::Field;
use super::ip::{self, Ecn, Protocol};
use super::{Error, Layer, Result};

pub use core::net::Ipv4Addr as Address;

mod field {
    use super::Field;
    pub const VER_IHL: usize = 0;
    pub const DS: usize = 1;
    pub const LENGTH: Field = 2..4;
    pub const IDENT: Field = 4..6;
    pub const FLG_OFF: Field = 6..8;
    pub const TTL: usize = 8;
    pub const PROTOCOL: usize = 9;
    pub const CHECKSUM: Field = 10..12;
    pub const SRC_ADDR: Field = 12..16;
    pub const DST_ADDR: Field = 16..20;
}

/// Length of a header without options (IHL 5).
pub const HEADER_LEN: usize = field::DST_ADDR.end;

const FLAG_DF: u16 = 0x4000;
const FLAG_MF: u16 = 0x2000;
const OFFSET_MASK: u16 = 0x1fff;

/// A read/write view of an IPv4 packet.
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps a buffer without checking it; accessors may panic on a short buffer.
    pub const fn new_unchecked(buffer: T) -> Packet<T> {
        Packet { buffer }
    }

    /// Wraps a buffer, checking it holds a whole header and the whole packet its total length declares.
    pub fn new_checked(buffer: T) -> Result<Packet<T>> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Checks, in order: at least [`HEADER_LEN`] bytes; version 4; IHL at least 5; the header (with
    /// options) and the total length both within the buffer; the total length covering the header.
    /// Bytes after the total length (Ethernet padding) are allowed and ignored by [`Packet::payload`].
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(Error::Truncated { layer: Layer::Ipv4 });
        }
        if self.version() != 4 {
            return Err(Error::Malformed { layer: Layer::Ipv4, field: "version" });
        }
        let header_len = usize::from(self.header_len());
        if header_len < HEADER_LEN {
            return Err(Error::Malformed { layer: Layer::Ipv4, field: "ihl" });
        }
        let total_len = usize::from(self.total_len());
        if header_len > len || total_len > len {
            return Err(Error::Truncated { layer: Layer::Ipv4 });
        }
        if total_len < header_len {
            return Err(Error::Malformed { layer: Layer::Ipv4, field: "total_len" });
        }
        Ok(())
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[field::VER_IHL] >> 4
    }
    /// Header length in bytes (IHL × 4), options included.
    pub fn header_len(&self) -> u8 {
        (self.buffer.as_ref()[field::VER_IHL] & 0x0f) * 4
    }
    /// The DS field octet (former type of service): DSCP and ECN together.
    pub fn ds(&self) -> u8 {
        self.buffer.as_ref()[field::DS]
    }
    pub fn dscp(&self) -> u8 {
        ip::split_ds(self.ds()).0
    }
    pub fn ecn(&self) -> Ecn {
        ip::split_ds(self.ds()).1
    }
    /// Total length in bytes, header included.
    pub fn total_len(&self) -> u16 {
        u16::from_be_bytes(self.buffer.as_ref()[field::LENGTH].try_into().unwrap())
    }
    pub fn ident(&self) -> u16 {
        u16::from_be_bytes(self.buffer.as_ref()[field::IDENT].try_into().unwrap())
    }
    fn flags_and_offset(&self) -> u16 {
        u16::from_be_bytes(self.buffer.as_ref()[field::FLG_OFF].try_into().unwrap())
    }
    pub fn dont_frag(&self) -> bool {
        self.flags_and_offset() & FLAG_DF != 0
    }
    pub fn more_frags(&self) -> bool {
        self.flags_and_offset() & FLAG_MF != 0
    }
    /// Fragment offset in bytes (the field counts 8-byte units; this is the field × 8).
    pub fn frag_offset(&self) -> u16 {
        (self.flags_and_offset() & OFFSET_MASK) << 3
    }
    pub fn ttl(&self) -> u8 {
        self.buffer.as_ref()[field::TTL]
    }
    pub fn protocol(&self) -> Protocol {
        Protocol::from(self.buffer.as_ref()[field::PROTOCOL])
    }
    pub fn checksum(&self) -> u16 {
        u16::from_be_bytes(self.buffer.as_ref()[field::CHECKSUM].try_into().unwrap())
    }
    pub fn src_addr(&self) -> Address {
        Address::from(<[u8; 4]>::try_from(&self.buffer.as_ref()[field::SRC_ADDR]).unwrap())
    }
    pub fn dst_addr(&self) -> Address {
        Address::from(<[u8; 4]>::try_from(&self.buffer.as_ref()[field::DST_ADDR]).unwrap())
    }
    /// Whether the header checksum (over the header with options) verifies.
    pub fn verify_checksum(&self) -> bool {
        checksum::sum(&self.buffer.as_ref()[..usize::from(self.header_len())]) == 0xffff
    }
    /// The bytes from the end of the options to the total length.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[usize::from(self.header_len())..usize::from(self.total_len())]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    pub fn set_version(&mut self, value: u8) {
        let b = &mut self.buffer.as_mut()[field::VER_IHL];
        *b = *b & 0x0f | value << 4
    }
    /// Sets the header length in bytes; the IHL field becomes `value / 4`.
    pub fn set_header_len(&mut self, value: u8) {
        let b = &mut self.buffer.as_mut()[field::VER_IHL];
        *b = *b & 0xf0 | (value / 4) & 0x0f
    }
    pub fn set_ds(&mut self, value: u8) {
        self.buffer.as_mut()[field::DS] = value
    }
    /// Sets the DSCP (low six bits of `value`), keeping the ECN bits.
    pub fn set_dscp(&mut self, value: u8) {
        self.set_ds(ip::join_ds(value, self.ecn()))
    }
    /// Sets the ECN bits, keeping the DSCP.
    pub fn set_ecn(&mut self, value: Ecn) {
        self.set_ds(ip::join_ds(self.dscp(), value))
    }
    pub fn set_total_len(&mut self, value: u16) {
        self.buffer.as_mut()[field::LENGTH].copy_from_slice(&value.to_be_bytes())
    }
    pub fn set_ident(&mut self, value: u16) {
        self.buffer.as_mut()[field::IDENT].copy_from_slice(&value.to_be_bytes())
    }
    fn set_flags_and_offset(&mut self, value: u16) {
        self.buffer.as_mut()[field::FLG_OFF].copy_from_slice(&value.to_be_bytes())
    }
    pub fn set_dont_frag(&mut self, value: bool) {
        let word = self.flags_and_offset() & !FLAG_DF;
        self.set_flags_and_offset(if value { word | FLAG_DF } else { word })
    }
    pub fn set_more_frags(&mut self, value: bool) {
        let word = self.flags_and_offset() & !FLAG_MF;
        self.set_flags_and_offset(if value { word | FLAG_MF } else { word })
    }
    /// Sets the fragment offset in bytes; the low three bits of `value` are dropped (the field counts
    /// 8-byte units).
    pub fn set_frag_offset(&mut self, value: u16) {
        self.set_flags_and_offset(self.flags_and_offset() & !OFFSET_MASK | value >> 3)
    }
    pub fn set_ttl(&mut self, value: u8) {
        self.buffer.as_mut()[field::TTL] = value
    }
    pub fn set_protocol(&mut self, value: Protocol) {
        self.buffer.as_mut()[field::PROTOCOL] = u8::from(value)
    }
    pub fn set_checksum(&mut self, value: u16) {
        self.buffer.as_mut()[field::CHECKSUM].copy_from_slice(&value.to_be_bytes())
    }
    pub fn set_src_addr(&mut self, value: Address) {
        self.buffer.as_mut()[field::SRC_ADDR].copy_from_slice(&value.octets())
    }
    pub fn set_dst_addr(&mut self, value: Address) {
        self.buffer.as_mut()[field::DST_ADDR].copy_from_slice(&value.octets())
    }
    /// Computes the header checksum (over the header with options) and stores it.
    pub fn fill_checksum(&mut self) {
        self.set_checksum(0);
        let sum = checksum::checksum(&self.buffer.as_ref()[..usize::from(self.header_len())]);
        self.set_checksum(sum)
    }
    /// The bytes from the end of the options to the total length.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let range = usize::from(self.header_len())..usize::from(self.total_len());
        &mut self.buffer.as_mut()[range]
    }

    /// Replaces the 16-bit header word at `at` (even) and updates the checksum incrementally (RFC 1624).
    fn replace_word(&mut self, at: usize, new: u16) {
        let data = self.buffer.as_mut();
        let old = u16::from_be_bytes([data[at], data[at + 1]]);
        data[at..at + 2].copy_from_slice(&new.to_be_bytes());
        let sum = checksum::update(self.checksum(), old, new);
        self.set_checksum(sum)
    }

    /// Decrements the TTL, keeping the checksum valid, and returns the new TTL.
    ///
    /// The caller drops packets whose TTL is 0 or 1 before forwarding, so the TTL is positive here; a
    /// TTL of 0 is left at 0 (saturating, so a packet can never gain hops by wrapping to 255).
    #[inline]
    pub fn decrement_ttl(&mut self) -> u8 {
        let ttl = self.ttl();
        if ttl == 0 {
            return 0;
        }
        let header: &mut [u8; HEADER_LEN] =
            (&mut self.buffer.as_mut()[..HEADER_LEN]).try_into().expect("a 20-byte slice");
        decrement_ttl_fixed(header);
        ttl - 1
    }

    /// Marks congestion experienced (RFC 3168 §5), keeping the checksum valid.
    ///
    /// Only an ECN-capable packet (ECT(0) or ECT(1)) is marked; one already CE is left as is. Returns
    /// whether the packet is now CE: `false` means it is Not-ECT, was left untouched, and a congested
    /// queue should drop it instead.
    pub fn set_ecn_ce(&mut self) -> bool {
        match self.ecn() {
            Ecn::NotEct => false,
            Ecn::Ce => true,
            Ecn::Ect0 | Ecn::Ect1 => {
                self.set_ds_keeping_checksum(ip::join_ds(self.dscp(), Ecn::Ce));
                true
            }
        }
    }

    /// Rewrites the DSCP (low six bits of `dscp`), keeping the ECN bits and the checksum valid.
    pub fn rewrite_dscp(&mut self, dscp: u8) {
        self.set_ds_keeping_checksum(ip::join_ds(dscp, self.ecn()))
    }

    fn set_ds_keeping_checksum(&mut self, ds: u8) {
        if ds != self.ds() {
            let word = u16::from_be_bytes([self.buffer.as_ref()[field::VER_IHL], ds]);
            self.replace_word(field::VER_IHL, word)
        }
    }
}

/// An IPv4 header as an owned value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Repr {
    pub src_addr: Address,
    pub dst_addr: Address,
    pub protocol: Protocol,
    /// Bytes after the header (and options): total length minus header length.
    pub payload_len: usize,
    pub ttl: u8,
    /// Six bits; `emit` keeps the low six.
    pub dscp: u8,
    pub ecn: Ecn,
    pub ident: u16,
    pub dont_frag: bool,
    pub more_frags: bool,
    /// Fragment offset in bytes, a multiple of 8; `emit` drops the low three bits.
    pub frag_offset: u16,
}

impl Repr {
    /// Parses a header whose checksum verifies. Options are skipped; fragments are accepted.
    pub fn parse<T: AsRef<[u8]>>(packet: &Packet<T>) -> Result<Repr> {
        packet.check_len()?;
        if !packet.verify_checksum() {
            return Err(Error::Checksum { layer: Layer::Ipv4 });
        }
        Ok(Repr {
            src_addr: packet.src_addr(),
            dst_addr: packet.dst_addr(),
            protocol: packet.protocol(),
            payload_len: usize::from(packet.total_len()) - usize::from(packet.header_len()),
            ttl: packet.ttl(),
            dscp: packet.dscp(),
            ecn: packet.ecn(),
            ident: packet.ident(),
            dont_frag: packet.dont_frag(),
            more_frags: packet.more_frags(),
            frag_offset: packet.frag_offset(),
        })
    }

    /// The header `emit` writes: always [`HEADER_LEN`], as it emits no options. The packet it heads
    /// is `buffer_len() + payload_len` bytes.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes a 20-byte header with a valid checksum. `payload_len` must be at most 65515.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Packet<T>) {
        debug_assert!(self.payload_len <= usize::from(u16::MAX) - HEADER_LEN);
        packet.set_version(4);
        packet.set_header_len(HEADER_LEN as u8);
        packet.set_ds(ip::join_ds(self.dscp, self.ecn));
        packet.set_total_len((HEADER_LEN + self.payload_len) as u16);
        packet.set_ident(self.ident);
        packet.set_flags_and_offset(self.frag_offset >> 3);
        packet.set_dont_frag(self.dont_frag);
        packet.set_more_frags(self.more_frags);
        packet.set_ttl(self.ttl);
        packet.set_protocol(self.protocol);
        packet.set_src_addr(self.src_addr);
        packet.set_dst_addr(self.dst_addr);
        packet.fill_checksum();
    }
}

/// Decrements the TTL of a 20-byte header whose TTL is positive, keeping its checksum valid (RFC 1624):
/// what [`Packet::decrement_ttl`] does, at fixed offsets, for the switch's fast path, which has already
/// checked the TTL and holds the header as an array. The TTL/protocol word drops by exactly 0x0100, so
/// the update is [`checksum::ttl_decremented_ne`]'s one addition and one carry, on the checksum as it
/// lies in memory. Debug builds compare it with the general update.
#[inline]
pub fn decrement_ttl_fixed(header: &mut [u8; HEADER_LEN]) {
    let ttl = header[field::TTL];
    debug_assert!(ttl > 0, "decrement_ttl_fixed of a TTL of 0");
    let old = [header[10], header[11]];
    let sum = checksum::ttl_decremented_ne(u16::from_ne_bytes(old));
    debug_assert_eq!(
        sum.to_ne_bytes(),
        checksum::update(
            u16::from_be_bytes(old),
            u16::from_be_bytes([ttl, header[field::PROTOCOL]]),
            u16::from_be_bytes([ttl.wrapping_sub(1), header[field::PROTOCOL]])
        )
        .to_be_bytes(),
        "the TTL's incremental checksum update"
    );
    header[field::TTL] = ttl.wrapping_sub(1);
    header[10..12].copy_from_slice(&sum.to_ne_bytes());
}

#[cfg(test)]
mod tests;
