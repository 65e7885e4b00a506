//! The InfiniBand Base Transport Header as carried by RoCEv2 (IBTA IBA spec vol. 1 §9.2; RoCEv2 is
//! Annex A17): the 12 bytes that follow the UDP header when the UDP destination port is 4791.
//!
//! ```text
//!  byte 0   opcode
//!  byte 1   SE(7) M(6) PadCnt(5:4) TVer(3:0)
//!  2..4     P_Key
//!  byte 4   FECN(7) BECN(6) reserved(5:0)
//!  5..8     DestQP (24 bits)
//!  byte 8   AckReq(7) reserved(6:0)
//!  9..12    PSN (24 bits)
//! ```
//!
//! What follows (extended transport headers, payload, pad) ends with the 4-byte invariant CRC (ICRC), which
//! this module neither computes nor checks. A RoCEv2 congestion notification packet (CNP, Annex A17.9.2) is
//! a BTH with opcode 0x81 and BECN set, 16 reserved bytes, then the ICRC.

use super::field::{Field, Rest};
use super::{Error, Layer, Result};

/// Length of the Base Transport Header.
pub const HEADER_LEN: usize = field::PAYLOAD.start;
/// Length of the invariant CRC that ends every RoCEv2 packet.
pub const ICRC_LEN: usize = 4;
/// Reserved bytes after the BTH of a CNP, before its ICRC.
pub const CNP_PAYLOAD_LEN: usize = 16;

/// Largest value of a 24-bit field (DestQP, PSN).
const U24_MAX: u32 = 0x00ff_ffff;

/// BTH opcodes a RoCE host emulator sends or receives; everything else is kept as `Unknown`.
///
/// The high three bits select the transport (000 = RC, 011 = UD, 100 = CNP), the low five the operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Opcode {
    /// RC SEND First (0x00).
    RcSendFirst,
    /// RC SEND Middle (0x01).
    RcSendMiddle,
    /// RC SEND Last (0x02).
    RcSendLast,
    /// RC SEND Last with Immediate (0x03).
    RcSendLastImm,
    /// RC SEND Only (0x04).
    RcSendOnly,
    /// RC SEND Only with Immediate (0x05).
    RcSendOnlyImm,
    /// RC RDMA WRITE First (0x06).
    RcWriteFirst,
    /// RC RDMA WRITE Middle (0x07).
    RcWriteMiddle,
    /// RC RDMA WRITE Last (0x08).
    RcWriteLast,
    /// RC RDMA WRITE Only (0x0a).
    RcWriteOnly,
    /// RC RDMA READ Request (0x0c).
    RcReadRequest,
    /// RC RDMA READ Response First (0x0d).
    RcReadResponseFirst,
    /// RC RDMA READ Response Middle (0x0e).
    RcReadResponseMiddle,
    /// RC RDMA READ Response Last (0x0f).
    RcReadResponseLast,
    /// RC RDMA READ Response Only (0x10).
    RcReadResponseOnly,
    /// RC Acknowledge (0x11).
    RcAck,
    /// UD SEND Only (0x64).
    UdSendOnly,
    /// RoCEv2 congestion notification packet (0x81).
    Cnp,
    Unknown(u8),
}

impl Opcode {
    /// A RoCEv2 congestion notification packet.
    pub fn is_cnp(&self) -> bool {
        *self == Opcode::Cnp
    }
}

impl From<u8> for Opcode {
    fn from(v: u8) -> Self {
        match v {
            0x00 => Opcode::RcSendFirst,
            0x01 => Opcode::RcSendMiddle,
            0x02 => Opcode::RcSendLast,
            0x03 => Opcode::RcSendLastImm,
            0x04 => Opcode::RcSendOnly,
            0x05 => Opcode::RcSendOnlyImm,
            0x06 => Opcode::RcWriteFirst,
            0x07 => Opcode::RcWriteMiddle,
            0x08 => Opcode::RcWriteLast,
            0x0a => Opcode::RcWriteOnly,
            0x0c => Opcode::RcReadRequest,
            0x0d => Opcode::RcReadResponseFirst,
            0x0e => Opcode::RcReadResponseMiddle,
            0x0f => Opcode::RcReadResponseLast,
            0x10 => Opcode::RcReadResponseOnly,
            0x11 => Opcode::RcAck,
            0x64 => Opcode::UdSendOnly,
            0x81 => Opcode::Cnp,
            other => Opcode::Unknown(other),
        }
    }
}

impl From<Opcode> for u8 {
    fn from(v: Opcode) -> u8 {
        match v {
            Opcode::RcSendFirst => 0x00,
            Opcode::RcSendMiddle => 0x01,
            Opcode::RcSendLast => 0x02,
            Opcode::RcSendLastImm => 0x03,
            Opcode::RcSendOnly => 0x04,
            Opcode::RcSendOnlyImm => 0x05,
            Opcode::RcWriteFirst => 0x06,
            Opcode::RcWriteMiddle => 0x07,
            Opcode::RcWriteLast => 0x08,
            Opcode::RcWriteOnly => 0x0a,
            Opcode::RcReadRequest => 0x0c,
            Opcode::RcReadResponseFirst => 0x0d,
            Opcode::RcReadResponseMiddle => 0x0e,
            Opcode::RcReadResponseLast => 0x0f,
            Opcode::RcReadResponseOnly => 0x10,
            Opcode::RcAck => 0x11,
            Opcode::UdSendOnly => 0x64,
            Opcode::Cnp => 0x81,
            Opcode::Unknown(other) => other,
        }
    }
}

mod field {
    use super::{Field, Rest};
    pub const OPCODE: usize = 0;
    /// SE, M, PadCnt, TVer.
    pub const FLAGS: usize = 1;
    pub const PARTITION_KEY: Field = 2..4;
    /// FECN, BECN, 6 reserved bits.
    pub const FECN_BECN: usize = 4;
    pub const DEST_QP: Field = 5..8;
    /// AckReq, 7 reserved bits.
    pub const ACK_REQ: usize = 8;
    pub const PSN: Field = 9..12;
    pub const PAYLOAD: Rest = 12..;

    pub const SE: u8 = 0x80;
    pub const M: u8 = 0x40;
    pub const PAD_COUNT_SHIFT: u8 = 4;
    pub const PAD_COUNT_MASK: u8 = 0x03;
    pub const TVER_MASK: u8 = 0x0f;
    pub const FECN: u8 = 0x80;
    pub const BECN: u8 = 0x40;
    pub const ACK_REQUEST: u8 = 0x80;
}

/// A read/write view of a Base Transport Header and what follows it.
#[derive(Debug, Clone)]
pub struct Header<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Header<T> {
    /// Wraps a buffer without checking its length; accessors may panic on a short buffer.
    pub const fn new_unchecked(buffer: T) -> Header<T> {
        Header { buffer }
    }

    /// Wraps a buffer, checking it holds at least the 12-byte header.
    pub fn new_checked(buffer: T) -> Result<Header<T>> {
        let header = Self::new_unchecked(buffer);
        header.check_len()?;
        Ok(header)
    }

    pub fn check_len(&self) -> Result<()> {
        if self.buffer.as_ref().len() < HEADER_LEN {
            Err(Error::Truncated { layer: Layer::Bth })
        } else {
            Ok(())
        }
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    pub fn opcode(&self) -> Opcode {
        Opcode::from(self.buffer.as_ref()[field::OPCODE])
    }
    /// SE: the responder should raise a completion event.
    pub fn solicited_event(&self) -> bool {
        self.buffer.as_ref()[field::FLAGS] & field::SE != 0
    }
    /// M: the path migration state.
    pub fn migration_req(&self) -> bool {
        self.buffer.as_ref()[field::FLAGS] & field::M != 0
    }
    /// PadCnt: pad bytes (0..=3) at the end of the payload that make it a multiple of four.
    pub fn pad_count(&self) -> u8 {
        (self.buffer.as_ref()[field::FLAGS] >> field::PAD_COUNT_SHIFT) & field::PAD_COUNT_MASK
    }
    /// TVer: the transport header version, 0.
    pub fn transport_version(&self) -> u8 {
        self.buffer.as_ref()[field::FLAGS] & field::TVER_MASK
    }
    pub fn partition_key(&self) -> u16 {
        let b = &self.buffer.as_ref()[field::PARTITION_KEY];
        u16::from_be_bytes([b[0], b[1]])
    }
    /// FECN: forward explicit congestion notification.
    pub fn fecn(&self) -> bool {
        self.buffer.as_ref()[field::FECN_BECN] & field::FECN != 0
    }
    /// BECN: backward explicit congestion notification; set in a CNP.
    pub fn becn(&self) -> bool {
        self.buffer.as_ref()[field::FECN_BECN] & field::BECN != 0
    }
    /// DestQP: the destination queue pair (24 bits).
    pub fn dest_qp(&self) -> u32 {
        let b = &self.buffer.as_ref()[field::DEST_QP];
        u32::from_be_bytes([0, b[0], b[1], b[2]])
    }
    /// A: the requester asks for an acknowledgement of this packet.
    pub fn ack_request(&self) -> bool {
        self.buffer.as_ref()[field::ACK_REQ] & field::ACK_REQUEST != 0
    }
    /// PSN: the packet sequence number (24 bits).
    pub fn psn(&self) -> u32 {
        let b = &self.buffer.as_ref()[field::PSN];
        u32::from_be_bytes([0, b[0], b[1], b[2]])
    }
    /// Everything after the BTH: extended headers, payload, pad and, in a full packet, the 4-byte ICRC.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[field::PAYLOAD]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Header<T> {
    fn set_bit(&mut self, index: usize, mask: u8, value: bool) {
        let byte = &mut self.buffer.as_mut()[index];
        if value { *byte |= mask } else { *byte &= !mask }
    }

    pub fn set_opcode(&mut self, value: Opcode) {
        self.buffer.as_mut()[field::OPCODE] = value.into()
    }
    pub fn set_solicited_event(&mut self, value: bool) {
        self.set_bit(field::FLAGS, field::SE, value)
    }
    pub fn set_migration_req(&mut self, value: bool) {
        self.set_bit(field::FLAGS, field::M, value)
    }
    /// Sets PadCnt; only the low two bits of `value` are used.
    pub fn set_pad_count(&mut self, value: u8) {
        let byte = &mut self.buffer.as_mut()[field::FLAGS];
        let mask = field::PAD_COUNT_MASK << field::PAD_COUNT_SHIFT;
        *byte = (*byte & !mask) | ((value << field::PAD_COUNT_SHIFT) & mask)
    }
    /// Sets TVer; only the low four bits of `value` are used.
    pub fn set_transport_version(&mut self, value: u8) {
        let byte = &mut self.buffer.as_mut()[field::FLAGS];
        *byte = (*byte & !field::TVER_MASK) | (value & field::TVER_MASK)
    }
    pub fn set_partition_key(&mut self, value: u16) {
        self.buffer.as_mut()[field::PARTITION_KEY].copy_from_slice(&value.to_be_bytes())
    }
    pub fn set_fecn(&mut self, value: bool) {
        self.set_bit(field::FECN_BECN, field::FECN, value)
    }
    pub fn set_becn(&mut self, value: bool) {
        self.set_bit(field::FECN_BECN, field::BECN, value)
    }
    /// Sets DestQP; only the low 24 bits of `value` are used.
    pub fn set_dest_qp(&mut self, value: u32) {
        self.buffer.as_mut()[field::DEST_QP].copy_from_slice(&(value & U24_MAX).to_be_bytes()[1..])
    }
    pub fn set_ack_request(&mut self, value: bool) {
        self.set_bit(field::ACK_REQ, field::ACK_REQUEST, value)
    }
    /// Sets the PSN; only the low 24 bits of `value` are used.
    pub fn set_psn(&mut self, value: u32) {
        self.buffer.as_mut()[field::PSN].copy_from_slice(&(value & U24_MAX).to_be_bytes()[1..])
    }
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::PAYLOAD]
    }
}

/// The Base Transport Header as an owned value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Repr {
    pub opcode: Opcode,
    pub solicited_event: bool,
    pub migration_req: bool,
    /// 0..=3; masked to two bits on emit.
    pub pad_count: u8,
    /// 0..=15; masked to four bits on emit.
    pub transport_version: u8,
    pub partition_key: u16,
    pub fecn: bool,
    pub becn: bool,
    /// 24 bits; masked on emit.
    pub dest_qp: u32,
    pub ack_request: bool,
    /// 24 bits; masked on emit.
    pub psn: u32,
}

impl Repr {
    /// The BTH of a RoCEv2 RC packet as NICs send it: P_Key 0xFFFF (default partition), TVer 0, MigReq set,
    /// no padding; BECN set on a CNP. `dest_qp` and `psn` are masked to 24 bits.
    pub fn rc(opcode: Opcode, dest_qp: u32, psn: u32, ack_request: bool) -> Repr {
        Repr {
            opcode,
            solicited_event: false,
            migration_req: true,
            pad_count: 0,
            transport_version: 0,
            partition_key: 0xffff,
            fecn: false,
            becn: opcode.is_cnp(),
            dest_qp: dest_qp & 0x00ff_ffff,
            ack_request,
            psn: psn & 0x00ff_ffff,
        }
    }

    /// Reads every field. Only truncation is an error: each bit pattern of the 12 bytes is a valid BTH
    /// here (reserved bits are ignored, unknown opcodes kept).
    pub fn parse<T: AsRef<[u8]>>(header: &Header<T>) -> Result<Repr> {
        header.check_len()?;
        Ok(Repr {
            opcode: header.opcode(),
            solicited_event: header.solicited_event(),
            migration_req: header.migration_req(),
            pad_count: header.pad_count(),
            transport_version: header.transport_version(),
            partition_key: header.partition_key(),
            fecn: header.fecn(),
            becn: header.becn(),
            dest_qp: header.dest_qp(),
            ack_request: header.ack_request(),
            psn: header.psn(),
        })
    }

    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the 12 header bytes, reserved bits zero, out-of-range fields masked. The payload is untouched.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, header: &mut Header<T>) {
        {
            let b = header.buffer.as_mut();
            b[field::FLAGS] = 0;
            b[field::FECN_BECN] = 0;
            b[field::ACK_REQ] = 0;
        }
        header.set_opcode(self.opcode);
        header.set_solicited_event(self.solicited_event);
        header.set_migration_req(self.migration_req);
        header.set_pad_count(self.pad_count);
        header.set_transport_version(self.transport_version);
        header.set_partition_key(self.partition_key);
        header.set_fecn(self.fecn);
        header.set_becn(self.becn);
        header.set_dest_qp(self.dest_qp);
        header.set_ack_request(self.ack_request);
        header.set_psn(self.psn);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    // RC SEND ONLY, P_Key 0xffff, DestQP 0x000011, AckReq, PSN 0x123456, then 4 payload bytes.
    static SEND_ONLY_BYTES: [u8; 16] = [
        0x04, // opcode RC SEND Only
        0x00, // SE 0, M 0, PadCnt 0, TVer 0
        0xff, 0xff, // P_Key
        0x00, // FECN 0, BECN 0
        0x00, 0x00, 0x11, // DestQP
        0x80, // AckReq
        0x12, 0x34, 0x56, // PSN
        0xde, 0xad, 0xbe, 0xef, // payload
    ];

    // CNP for the flow to QP 0x0000d2: opcode 0x81, BECN, PSN 0, then 16 reserved bytes and the ICRC.
    static CNP_BYTES: [u8; HEADER_LEN + CNP_PAYLOAD_LEN + ICRC_LEN] = [
        0x81, 0x00, 0xff, 0xff, // opcode CNP, flags, P_Key
        0x40, 0x00, 0x00, 0xd2, // BECN, DestQP
        0x00, 0x00, 0x00, 0x00, // AckReq 0, PSN 0
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // reserved
        0x11, 0x22, 0x33, 0x44, // ICRC (not verified)
    ];

    fn send_only_repr() -> Repr {
        Repr {
            opcode: Opcode::RcSendOnly,
            solicited_event: false,
            migration_req: false,
            pad_count: 0,
            transport_version: 0,
            partition_key: 0xffff,
            fecn: false,
            becn: false,
            dest_qp: 0x11,
            ack_request: true,
            psn: 0x12_3456,
        }
    }

    #[test]
    fn deconstruct() {
        let header = Header::new_checked(&SEND_ONLY_BYTES[..]).unwrap();
        assert_eq!(header.opcode(), Opcode::RcSendOnly);
        assert!(!header.solicited_event());
        assert!(!header.migration_req());
        assert_eq!(header.pad_count(), 0);
        assert_eq!(header.transport_version(), 0);
        assert_eq!(header.partition_key(), 0xffff);
        assert!(!header.fecn());
        assert!(!header.becn());
        assert_eq!(header.dest_qp(), 0x11);
        assert!(header.ack_request());
        assert_eq!(header.psn(), 0x12_3456);
        assert_eq!(header.payload(), &[0xde, 0xad, 0xbe, 0xef]);
        assert_eq!(Repr::parse(&header).unwrap(), send_only_repr());
    }

    #[test]
    fn construct() {
        let mut bytes = vec![0xa5; 16];
        let mut header = Header::new_unchecked(&mut bytes);
        send_only_repr().emit(&mut header);
        header.payload_mut().copy_from_slice(&[0xde, 0xad, 0xbe, 0xef]);
        assert_eq!(&bytes[..], &SEND_ONLY_BYTES[..]);
    }

    #[test]
    fn cnp() {
        let header = Header::new_checked(&CNP_BYTES[..]).unwrap();
        assert!(header.opcode().is_cnp());
        assert!(header.becn());
        assert!(!header.fecn());
        assert_eq!(header.dest_qp(), 0xd2);
        assert_eq!(header.psn(), 0);
        assert_eq!(header.payload().len(), CNP_PAYLOAD_LEN + ICRC_LEN);

        let repr = Repr::parse(&header).unwrap();
        let mut bytes = CNP_BYTES;
        bytes[..HEADER_LEN].fill(0x5a);
        repr.emit(&mut Header::new_unchecked(&mut bytes[..]));
        assert_eq!(bytes, CNP_BYTES);
    }

    #[test]
    fn flag_bits() {
        let mut bytes = [0u8; HEADER_LEN];
        let mut header = Header::new_unchecked(&mut bytes);
        header.set_solicited_event(true);
        header.set_migration_req(true);
        header.set_pad_count(3);
        header.set_transport_version(0xf);
        header.set_fecn(true);
        header.set_becn(true);
        assert_eq!(bytes[1], 0xff);
        assert_eq!(bytes[4], 0xc0);
        let mut header = Header::new_unchecked(&mut bytes);
        header.set_pad_count(1);
        header.set_migration_req(false);
        header.set_fecn(false);
        assert_eq!(header.pad_count(), 1);
        assert!(header.solicited_event());
        assert_eq!(header.transport_version(), 0xf);
        assert!(header.becn());
        assert_eq!(bytes[1], 0x9f);
        assert_eq!(bytes[4], 0x40);
    }

    #[test]
    fn setters_mask() {
        let mut bytes = [0u8; HEADER_LEN];
        let mut header = Header::new_unchecked(&mut bytes);
        header.set_dest_qp(0xab12_3456);
        header.set_psn(0xffff_ffff);
        header.set_pad_count(0xff);
        header.set_transport_version(0xf3);
        assert_eq!(header.dest_qp(), 0x12_3456);
        assert_eq!(header.psn(), 0xff_ffff);
        assert_eq!(header.pad_count(), 3);
        assert_eq!(header.transport_version(), 3);
        // Neighbouring fields are untouched.
        assert_eq!(bytes[4], 0);
        assert_eq!(bytes[8], 0);
        assert_eq!(bytes[1], 0x33);
    }

    #[test]
    fn emit_masks_and_clears_reserved() {
        let repr = Repr {
            pad_count: 0x07,
            transport_version: 0x1f,
            dest_qp: 0xff00_0001,
            psn: 0x0100_0002,
            ..send_only_repr()
        };
        let mut bytes = [0xffu8; HEADER_LEN];
        repr.emit(&mut Header::new_unchecked(&mut bytes));
        assert_eq!(bytes[4] & 0x3f, 0);
        assert_eq!(bytes[8] & 0x7f, 0);
        let parsed = Repr::parse(&Header::new_checked(&bytes).unwrap()).unwrap();
        assert_eq!(parsed, Repr { pad_count: 3, transport_version: 0xf, dest_qp: 1, psn: 2, ..repr });
    }

    #[test]
    fn opcode_values() {
        for v in 0..=u8::MAX {
            assert_eq!(u8::from(Opcode::from(v)), v);
        }
        assert_eq!(Opcode::from(0x81), Opcode::Cnp);
        assert_eq!(Opcode::from(0x64), Opcode::UdSendOnly);
        assert_eq!(Opcode::from(0x11), Opcode::RcAck);
        assert_eq!(Opcode::from(0x09), Opcode::Unknown(0x09));
        assert!(!Opcode::RcAck.is_cnp());
    }

    #[test]
    fn truncated() {
        assert_eq!(
            Header::new_checked(&SEND_ONLY_BYTES[..HEADER_LEN - 1]).unwrap_err(),
            Error::Truncated { layer: Layer::Bth }
        );
        let header = Header::new_checked(&SEND_ONLY_BYTES[..HEADER_LEN]).unwrap();
        assert!(header.payload().is_empty());
    }

    proptest! {
        #[test]
        fn roundtrip(
            opcode in any::<u8>(),
            se in any::<bool>(),
            m in any::<bool>(),
            pad_count in 0u8..4,
            tver in 0u8..16,
            pkey in any::<u16>(),
            fecn in any::<bool>(),
            becn in any::<bool>(),
            dest_qp in 0u32..=U24_MAX,
            ack in any::<bool>(),
            psn in 0u32..=U24_MAX,
        ) {
            let repr = Repr {
                opcode: Opcode::from(opcode),
                solicited_event: se,
                migration_req: m,
                pad_count,
                transport_version: tver,
                partition_key: pkey,
                fecn,
                becn,
                dest_qp,
                ack_request: ack,
                psn,
            };
            let mut buf = vec![0; repr.buffer_len()];
            repr.emit(&mut Header::new_unchecked(&mut buf));
            prop_assert_eq!(Repr::parse(&Header::new_checked(&buf).unwrap()).unwrap(), repr);
        }

        #[test]
        fn arbitrary_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..64)) {
            if let Ok(header) = Header::new_checked(&data[..]) {
                let repr = Repr::parse(&header).unwrap();
                let _ = header.payload();
                let mut buf = vec![0; repr.buffer_len()];
                repr.emit(&mut Header::new_unchecked(&mut buf));
                prop_assert_eq!(Repr::parse(&Header::new_checked(&buf).unwrap()).unwrap(), repr);
            } else {
                prop_assert!(data.len() < HEADER_LEN);
            }
        }
    }
}
