//! MAC Control frames (EtherType 0x8808, sent to `01:80:C2:00:00:01`): the 802.3x PAUSE frame (IEEE 802.3
//! Annex 31B, opcode 0x0001) and the priority-based flow control frame (IEEE 802.1Qbb, whose format is
//! 802.3 Annex 31D, opcode 0x0101).
//!
//! ```text
//!  PAUSE: opcode 0x0001 | pause_time u16 | 42 bytes of zero padding
//!  PFC:   opcode 0x0101 | class-enable vector u16 | time[0..8] 8 × u16 | 26 bytes of zero padding
//! ```
//!
//! Times are in quanta of 512 bit times at the speed of the port that *receives* the frame, see
//! [`quanta_to_ns`]. The view covers the MAC Control payload, i.e. what follows the 14-byte Ethernet header.

use super::ethernet::{self, Address, EtherType};
use super::field::Field;
use super::{Error, Layer, Result};

/// MAC Control opcode of an 802.3x PAUSE frame.
pub const OPCODE_PAUSE: u16 = 0x0001;
/// MAC Control opcode of an 802.1Qbb PFC frame.
pub const OPCODE_PFC: u16 = 0x0101;

/// Number of priorities (traffic classes) a PFC frame carries a time for.
pub const PRIORITIES: usize = 8;
/// Length of the MAC Control payload as emitted: the minimum Ethernet payload, zero-padded.
pub const PAYLOAD_LEN: usize = 46;
/// Length of a whole MAC Control frame without FCS.
pub const FRAME_LEN: usize = ethernet::HEADER_LEN + PAYLOAD_LEN;

/// One pause quantum is 512 bit times.
pub const BITS_PER_QUANTUM: u64 = 512;

/// Duration of `quanta` pause quanta on a port of `speed_mbps` Mb/s, in nanoseconds, rounded up.
///
/// `ceil(quanta × 512 × 1000 / speed_mbps)`: e.g. 65535 quanta at 100 Gb/s are 335 539.2 ns → 335 540.
/// A speed of 0 (unknown or link down) returns 0: such a port transmits nothing, so there is nothing to
/// pause, and callers can add the result to a timestamp without overflow.
pub const fn quanta_to_ns(quanta: u16, speed_mbps: u32) -> u64 {
    if speed_mbps == 0 {
        return 0;
    }
    // At most 65535 × 512 × 1000 ≈ 3.4e10: no overflow.
    let bits_x1000 = quanta as u64 * BITS_PER_QUANTUM * 1000;
    bits_x1000.div_ceil(speed_mbps as u64)
}

mod field {
    use super::Field;
    pub const OPCODE: Field = 0..2;
    /// PAUSE.
    pub const PAUSE_TIME: Field = 2..4;
    /// PFC.
    pub const CLASS_ENABLE_VECTOR: Field = 2..4;
    /// PFC: time[n] is at `TIME_START + 2n .. TIME_START + 2n + 2`.
    pub const TIME_START: usize = 4;
    pub const PAUSE_END: usize = PAUSE_TIME.end;
    pub const PFC_END: usize = TIME_START + 2 * super::PRIORITIES;

    pub const fn time(priority: usize) -> Field {
        TIME_START + 2 * priority..TIME_START + 2 * priority + 2
    }
}

/// A read/write view of a MAC Control payload (PAUSE or PFC).
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps a buffer without checking its length; accessors may panic on a short buffer.
    pub const fn new_unchecked(buffer: T) -> Packet<T> {
        Packet { buffer }
    }

    /// Wraps a buffer, checking it holds the opcode and the fields that opcode defines.
    pub fn new_checked(buffer: T) -> Result<Packet<T>> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// The opcode needs 2 bytes; a PAUSE frame 4, a PFC frame 20. For any other opcode only the opcode is
    /// checked, so only [`opcode`](Self::opcode) may be used on such a view.
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < field::OPCODE.end {
            return Err(Error::Truncated { layer: Layer::MacControl });
        }
        let needed = match self.opcode() {
            OPCODE_PAUSE => field::PAUSE_END,
            OPCODE_PFC => field::PFC_END,
            _ => field::OPCODE.end,
        };
        if len < needed { Err(Error::Truncated { layer: Layer::MacControl }) } else { Ok(()) }
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    pub fn opcode(&self) -> u16 {
        self.read_u16(field::OPCODE)
    }
    /// PAUSE: pause_time in quanta.
    pub fn pause_time(&self) -> u16 {
        self.read_u16(field::PAUSE_TIME)
    }
    /// PFC: class-enable vector; bit n of the low byte ⇒ `time[n]` is valid. The high byte is reserved
    /// (sent as zero, ignored on receipt).
    pub fn class_enable_vector(&self) -> u16 {
        self.read_u16(field::CLASS_ENABLE_VECTOR)
    }
    /// PFC: `time[priority]` in quanta; 0 for `priority` > 7 (there is no such class).
    pub fn time(&self, priority: usize) -> u16 {
        if priority < PRIORITIES { self.read_u16(field::time(priority)) } else { 0 }
    }
    /// PFC: time[0..8] in quanta, whether or not the class is enabled.
    pub fn quanta(&self) -> [u16; PRIORITIES] {
        core::array::from_fn(|n| self.read_u16(field::time(n)))
    }

    fn read_u16(&self, range: Field) -> u16 {
        let b = &self.buffer.as_ref()[range];
        u16::from_be_bytes([b[0], b[1]])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    pub fn set_opcode(&mut self, value: u16) {
        self.write_u16(field::OPCODE, value)
    }
    pub fn set_pause_time(&mut self, value: u16) {
        self.write_u16(field::PAUSE_TIME, value)
    }
    pub fn set_class_enable_vector(&mut self, value: u16) {
        self.write_u16(field::CLASS_ENABLE_VECTOR, value)
    }
    /// Sets `time[priority]`; does nothing for `priority` > 7.
    pub fn set_time(&mut self, priority: usize, value: u16) {
        if priority < PRIORITIES {
            self.write_u16(field::time(priority), value)
        }
    }
    pub fn set_quanta(&mut self, value: [u16; PRIORITIES]) {
        for (n, v) in value.into_iter().enumerate() {
            self.write_u16(field::time(n), v)
        }
    }

    fn write_u16(&mut self, range: Field, value: u16) {
        self.buffer.as_mut()[range].copy_from_slice(&value.to_be_bytes())
    }
}

/// An 802.3x PAUSE frame: stop all traffic for `pause_time` quanta (0 = resume).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct PauseRepr {
    pub pause_time: u16,
}

/// An 802.1Qbb PFC frame: for each priority n with bit n of `class_enable` set, pause it for `time[n]`
/// quanta (0 = resume); other priorities are unaffected and their `time` is meaningless.
///
/// `parse` keeps all eight times as received, so `emit` after `parse` reproduces the frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct PfcRepr {
    pub class_enable: u8,
    pub time: [u16; PRIORITIES],
}

impl PfcRepr {
    /// XOFF: pause every priority in `priorities_mask` (bit n ⇒ priority n) for `quanta`; the times of
    /// the other priorities are zero.
    pub fn xoff(priorities_mask: u8, quanta: u16) -> PfcRepr {
        PfcRepr {
            class_enable: priorities_mask,
            time: core::array::from_fn(|n| if (priorities_mask >> n) & 1 != 0 { quanta } else { 0 }),
        }
    }

    /// XON: resume every priority in `priorities_mask` (enable bits set, zero quanta).
    pub fn xon(priorities_mask: u8) -> PfcRepr {
        PfcRepr { class_enable: priorities_mask, time: [0; PRIORITIES] }
    }

    /// `(priority, quanta)` for each enabled class, lowest priority first.
    pub fn priorities(&self) -> impl Iterator<Item = (u8, u16)> + use<> {
        let PfcRepr { class_enable, time } = *self;
        (0..PRIORITIES as u8)
            .filter(move |&n| (class_enable >> n) & 1 != 0)
            .map(move |n| (n, time[n as usize]))
    }
}

/// A MAC Control frame this model acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Repr {
    Pause(PauseRepr),
    Pfc(PfcRepr),
}

impl Repr {
    /// Parses a PAUSE or PFC payload; any other opcode is `Unsupported`. Padding is not checked, and the
    /// reserved high byte of the class-enable vector is ignored.
    pub fn parse<T: AsRef<[u8]>>(packet: &Packet<T>) -> Result<Repr> {
        packet.check_len()?;
        match packet.opcode() {
            OPCODE_PAUSE => Ok(Repr::Pause(PauseRepr { pause_time: packet.pause_time() })),
            OPCODE_PFC => Ok(Repr::Pfc(PfcRepr {
                class_enable: packet.class_enable_vector() as u8,
                time: packet.quanta(),
            })),
            _ => Err(Error::Unsupported { layer: Layer::MacControl, what: "opcode" }),
        }
    }

    pub const fn opcode(&self) -> u16 {
        match self {
            Repr::Pause(_) => OPCODE_PAUSE,
            Repr::Pfc(_) => OPCODE_PFC,
        }
    }

    /// The payload is always padded to the minimum Ethernet payload.
    pub const fn buffer_len(&self) -> usize {
        PAYLOAD_LEN
    }

    /// Writes opcode, fields and zero padding into the first [`PAYLOAD_LEN`] bytes; `packet` must be at
    /// least that long (panics otherwise, like every `emit`). Bytes beyond are untouched.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Packet<T>) {
        packet.set_opcode(self.opcode());
        let end = match self {
            Repr::Pause(pause) => {
                packet.set_pause_time(pause.pause_time);
                field::PAUSE_END
            }
            Repr::Pfc(pfc) => {
                packet.set_class_enable_vector(u16::from(pfc.class_enable));
                packet.set_quanta(pfc.time);
                field::PFC_END
            }
        };
        packet.buffer.as_mut()[end..PAYLOAD_LEN].fill(0);
    }

    /// Writes a whole frame into `buffer[..FRAME_LEN]`: destination `01:80:C2:00:00:01`, `src_addr`,
    /// EtherType 0x8808, then the padded payload. `buffer` must be at least [`FRAME_LEN`] bytes: a shorter
    /// one fails a debug assertion, and in release builds is left untouched (this never panics there).
    pub fn emit_frame(&self, src_addr: Address, buffer: &mut [u8]) {
        debug_assert!(buffer.len() >= FRAME_LEN, "MAC Control frame buffer shorter than {FRAME_LEN}");
        let Some(buffer) = buffer.get_mut(..FRAME_LEN) else { return };
        let mut frame = ethernet::Frame::new_unchecked(buffer);
        ethernet::Repr { dst_addr: Address::MAC_CONTROL, src_addr, ethertype: EtherType::MacControl }
            .emit(&mut frame);
        self.emit(&mut Packet::new_unchecked(frame.payload_mut()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const SRC: Address = Address([0x02, 0x00, 0x00, 0x00, 0x00, 0x01]);

    // PFC XOFF for priorities 3 and 4, 0xffff quanta each.
    static PFC_FRAME_BYTES: [u8; FRAME_LEN] = [
        0x01, 0x80, 0xc2, 0x00, 0x00, 0x01, // dst
        0x02, 0x00, 0x00, 0x00, 0x00, 0x01, // src
        0x88, 0x08, // MAC Control
        0x01, 0x01, // opcode PFC
        0x00, 0x18, // class-enable vector: priorities 3, 4
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // time[0..3]
        0xff, 0xff, 0xff, 0xff, // time[3], time[4]
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // time[5..8]
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // pad
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // pad (26 bytes)
    ];

    // 802.3x PAUSE for 0x1234 quanta.
    static PAUSE_FRAME_BYTES: [u8; FRAME_LEN] = [
        0x01, 0x80, 0xc2, 0x00, 0x00, 0x01, // dst
        0x02, 0x00, 0x00, 0x00, 0x00, 0x01, // src
        0x88, 0x08, // MAC Control
        0x00, 0x01, // opcode PAUSE
        0x12, 0x34, // pause_time
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // pad
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // pad
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // pad (42 bytes)
    ];

    fn payload(frame: &[u8]) -> &[u8] {
        &frame[ethernet::HEADER_LEN..]
    }

    #[test]
    fn deconstruct_pfc() {
        let eth = ethernet::Frame::new_checked(&PFC_FRAME_BYTES[..]).unwrap();
        assert_eq!(eth.dst_addr(), Address::MAC_CONTROL);
        assert_eq!(eth.ethertype(), EtherType::MacControl);
        let packet = Packet::new_checked(eth.payload()).unwrap();
        assert_eq!(packet.opcode(), OPCODE_PFC);
        assert_eq!(packet.class_enable_vector(), 0x0018);
        assert_eq!(packet.time(3), 0xffff);
        assert_eq!(packet.time(4), 0xffff);
        assert_eq!(packet.time(5), 0);
        assert_eq!(packet.time(8), 0);
        assert_eq!(packet.time(usize::MAX), 0);
        assert_eq!(packet.quanta(), [0, 0, 0, 0xffff, 0xffff, 0, 0, 0]);
        let Repr::Pfc(pfc) = Repr::parse(&packet).unwrap() else { panic!("not PFC") };
        assert_eq!(pfc, PfcRepr::xoff(0x18, 0xffff));
        assert_eq!(pfc.priorities().collect::<Vec<_>>(), vec![(3, 0xffff), (4, 0xffff)]);
    }

    #[test]
    fn construct_pfc() {
        let mut bytes = [0xa5; FRAME_LEN];
        Repr::Pfc(PfcRepr::xoff(0x18, 0xffff)).emit_frame(SRC, &mut bytes);
        assert_eq!(bytes, PFC_FRAME_BYTES);

        let mut bytes = [0xa5; FRAME_LEN];
        let mut packet = Packet::new_unchecked(&mut bytes[ethernet::HEADER_LEN..]);
        packet.set_opcode(OPCODE_PFC);
        packet.set_class_enable_vector(0x18);
        packet.set_quanta([0; PRIORITIES]);
        packet.set_time(3, 0xffff);
        packet.set_time(4, 0xffff);
        packet.set_time(8, 0x1111); // no such priority: ignored
        assert_eq!(&bytes[ethernet::HEADER_LEN..][..20], &payload(&PFC_FRAME_BYTES)[..20]);
    }

    #[test]
    fn pause() {
        let packet = Packet::new_checked(payload(&PAUSE_FRAME_BYTES)).unwrap();
        assert_eq!(packet.opcode(), OPCODE_PAUSE);
        assert_eq!(packet.pause_time(), 0x1234);
        let repr = Repr::parse(&packet).unwrap();
        assert_eq!(repr, Repr::Pause(PauseRepr { pause_time: 0x1234 }));

        let mut bytes = [0xa5; FRAME_LEN];
        repr.emit_frame(SRC, &mut bytes);
        assert_eq!(bytes, PAUSE_FRAME_BYTES);
        let mut bytes = [0xa5; FRAME_LEN];
        let mut packet = Packet::new_unchecked(&mut bytes[ethernet::HEADER_LEN..]);
        packet.set_opcode(OPCODE_PAUSE);
        packet.set_pause_time(0x1234);
        assert_eq!(&bytes[ethernet::HEADER_LEN..][..4], &payload(&PAUSE_FRAME_BYTES)[..4]);
    }

    #[test]
    fn emit_frame_into_longer_buffer() {
        let mut bytes = [0xa5; FRAME_LEN + 4];
        Repr::Pfc(PfcRepr::xoff(0x18, 0xffff)).emit_frame(SRC, &mut bytes);
        assert_eq!(bytes[..FRAME_LEN], PFC_FRAME_BYTES);
        assert_eq!(bytes[FRAME_LEN..], [0xa5; 4]);
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "shorter than")]
    fn emit_frame_short_buffer_asserts() {
        Repr::Pause(PauseRepr::default()).emit_frame(SRC, &mut [0; FRAME_LEN - 1]);
    }

    #[test]
    #[cfg(not(debug_assertions))]
    fn emit_frame_short_buffer_untouched() {
        let mut bytes = [0xa5; FRAME_LEN - 1];
        Repr::Pause(PauseRepr::default()).emit_frame(SRC, &mut bytes);
        assert_eq!(bytes, [0xa5; FRAME_LEN - 1]);
    }

    #[test]
    fn xon_xoff() {
        let xon = PfcRepr::xon(0x18);
        assert_eq!(xon.class_enable, 0x18);
        assert_eq!(xon.time, [0; PRIORITIES]);
        assert_eq!(xon.priorities().collect::<Vec<_>>(), vec![(3, 0), (4, 0)]);
        let xoff = PfcRepr::xoff(0x81, 100);
        assert_eq!(xoff.time, [100, 0, 0, 0, 0, 0, 0, 100]);
        assert_eq!(xoff.priorities().collect::<Vec<_>>(), vec![(0, 100), (7, 100)]);
        assert_eq!(PfcRepr::xoff(0, 100).priorities().count(), 0);
    }

    #[test]
    fn reserved_class_enable_byte_ignored() {
        let mut bytes = PFC_FRAME_BYTES;
        bytes[16] = 0xff;
        let packet = Packet::new_checked(payload(&bytes)).unwrap();
        assert_eq!(packet.class_enable_vector(), 0xff18);
        assert_eq!(Repr::parse(&packet).unwrap(), Repr::Pfc(PfcRepr::xoff(0x18, 0xffff)));
    }

    #[test]
    fn truncated_and_unsupported() {
        let truncated = Error::Truncated { layer: Layer::MacControl };
        assert_eq!(Packet::new_checked(&[][..]).unwrap_err(), truncated);
        assert_eq!(Packet::new_checked(&[0x01][..]).unwrap_err(), truncated);
        assert_eq!(Packet::new_checked(&payload(&PAUSE_FRAME_BYTES)[..3]).unwrap_err(), truncated);
        assert!(Packet::new_checked(&payload(&PAUSE_FRAME_BYTES)[..4]).is_ok());
        assert_eq!(Packet::new_checked(&payload(&PFC_FRAME_BYTES)[..19]).unwrap_err(), truncated);
        assert!(Packet::new_checked(&payload(&PFC_FRAME_BYTES)[..20]).is_ok());

        // Multi-Point MAC Control GATE (802.3 clause 64): valid MAC Control, not modelled.
        let gate = Packet::new_checked(&[0x00, 0x02][..]).unwrap();
        assert_eq!(
            Repr::parse(&gate).unwrap_err(),
            Error::Unsupported { layer: Layer::MacControl, what: "opcode" }
        );
    }

    #[test]
    fn quanta_timing() {
        // docs/pfc.md, "Timing": (speed Mb/s, 1 quantum, 65535 quanta), exact values rounded up to whole ns.
        let table: [(u32, u64, u64); 7] = [
            (10_000, 52, 3_355_392), // 51.2 ns, 3.355 ms
            (25_000, 21, 1_342_157), // 20.48 ns, 1.342 ms
            (40_000, 13, 838_848),   // 12.8 ns, 0.839 ms
            (50_000, 11, 671_079),   // 10.24 ns, 0.671 ms
            (100_000, 6, 335_540),   // 5.12 ns, 335.5 µs
            (200_000, 3, 167_770),   // 2.56 ns, 167.8 µs
            (400_000, 2, 83_885),    // 1.28 ns, 83.9 µs
        ];
        for (speed, one, max) in table {
            assert_eq!(quanta_to_ns(0, speed), 0);
            assert_eq!(quanta_to_ns(1, speed), one, "1 quantum at {speed} Mb/s");
            assert_eq!(quanta_to_ns(u16::MAX, speed), max, "65535 quanta at {speed} Mb/s");
        }
        assert_eq!(quanta_to_ns(1000, 100_000), 5_120);
        assert_eq!(quanta_to_ns(1, 1), 512_000);
        assert_eq!(quanta_to_ns(u16::MAX, 1), 65_535 * 512_000);
        assert_eq!(quanta_to_ns(u16::MAX, 0), 0);
        assert_eq!(quanta_to_ns(1, u32::MAX), 1);
    }

    proptest! {
        #[test]
        fn roundtrip_pfc(class_enable in any::<u8>(), time in any::<[u16; PRIORITIES]>()) {
            let repr = Repr::Pfc(PfcRepr { class_enable, time });
            let mut buf = vec![0xa5; repr.buffer_len()];
            repr.emit(&mut Packet::new_unchecked(&mut buf));
            prop_assert!(buf[field::PFC_END..].iter().all(|&b| b == 0));
            prop_assert_eq!(Repr::parse(&Packet::new_checked(&buf).unwrap()).unwrap(), repr);
        }

        #[test]
        fn roundtrip_pause(pause_time in any::<u16>(), src in any::<[u8; 6]>()) {
            let repr = Repr::Pause(PauseRepr { pause_time });
            let mut frame = [0xa5; FRAME_LEN];
            repr.emit_frame(Address(src), &mut frame);
            prop_assert!(frame[ethernet::HEADER_LEN + field::PAUSE_END..].iter().all(|&b| b == 0));
            let eth = ethernet::Frame::new_checked(&frame[..]).unwrap();
            prop_assert_eq!(eth.src_addr(), Address(src));
            prop_assert_eq!(Repr::parse(&Packet::new_checked(eth.payload()).unwrap()).unwrap(), repr);
        }

        #[test]
        fn quanta_to_ns_is_ceiling(quanta in any::<u16>(), speed in 1u32..=1_600_000) {
            let ns = quanta_to_ns(quanta, speed);
            let bits_x1000 = u64::from(quanta) * BITS_PER_QUANTUM * 1000;
            prop_assert!(ns * u64::from(speed) >= bits_x1000);
            prop_assert!(ns == 0 || (ns - 1) * u64::from(speed) < bits_x1000);
        }

        #[test]
        fn arbitrary_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..64)) {
            if let Ok(packet) = Packet::new_checked(&data[..]) {
                let _ = packet.opcode();
                if let Ok(repr) = Repr::parse(&packet) {
                    let _ = (packet.time(3), packet.time(100));
                    let mut buf = vec![0; repr.buffer_len()];
                    repr.emit(&mut Packet::new_unchecked(&mut buf));
                    prop_assert_eq!(Repr::parse(&Packet::new_checked(&buf).unwrap()).unwrap(), repr);
                }
            }
        }

        #[test]
        fn arbitrary_frames_never_panic(
            opcode in prop_oneof![Just(OPCODE_PAUSE), Just(OPCODE_PFC), any::<u16>()],
            rest in proptest::collection::vec(any::<u8>(), 0..48),
        ) {
            let mut data = opcode.to_be_bytes().to_vec();
            data.extend_from_slice(&rest);
            if let Ok(packet) = Packet::new_checked(&data[..]) {
                let _ = Repr::parse(&packet);
            }
        }
    }
}
