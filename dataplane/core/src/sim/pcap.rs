//! pcap files with nanosecond timestamps (the `0xa1b23c4d` magic that tcpdump, Wireshark and tshark read;
//! LINKTYPE_ETHERNET), built in memory: the core does no I/O.

use crate::time::Instant;

/// Magic of a pcap file whose timestamps are seconds + nanoseconds.
pub const MAGIC_NS: u32 = 0xa1b2_3c4d;
/// LINKTYPE_ETHERNET.
pub const LINKTYPE_ETHERNET: u32 = 1;
/// Longest frame kept whole (jumbo frames with VLAN tags fit).
pub const SNAPLEN: u32 = 65_535;

/// A capture being written: the file header, then one record per frame.
#[derive(Debug, Clone)]
pub struct Pcap {
    bytes: Vec<u8>,
    frames: u64,
}

impl Default for Pcap {
    fn default() -> Self {
        Pcap::new()
    }
}

impl Pcap {
    pub fn new() -> Pcap {
        let mut bytes = Vec::with_capacity(1 << 16);
        bytes.extend_from_slice(&MAGIC_NS.to_le_bytes());
        bytes.extend_from_slice(&2u16.to_le_bytes());
        bytes.extend_from_slice(&4u16.to_le_bytes());
        bytes.extend_from_slice(&0i32.to_le_bytes()); // thiszone
        bytes.extend_from_slice(&0u32.to_le_bytes()); // sigfigs
        bytes.extend_from_slice(&SNAPLEN.to_le_bytes());
        bytes.extend_from_slice(&LINKTYPE_ETHERNET.to_le_bytes());
        Pcap { bytes, frames: 0 }
    }

    /// Adds a frame seen at `at` (the capture's epoch is the clock's origin).
    pub fn record(&mut self, at: Instant, frame: &[u8]) {
        let at_ns = at.as_ns();
        let kept = frame.len().min(SNAPLEN as usize);
        self.bytes.extend_from_slice(&((at_ns / 1_000_000_000) as u32).to_le_bytes());
        self.bytes.extend_from_slice(&((at_ns % 1_000_000_000) as u32).to_le_bytes());
        self.bytes.extend_from_slice(&(kept as u32).to_le_bytes());
        self.bytes.extend_from_slice(&(frame.len() as u32).to_le_bytes());
        self.bytes.extend_from_slice(&frame[..kept]);
        self.frames += 1;
    }

    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// The file's bytes so far (a valid capture at any point).
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_and_records_are_little_endian_with_nanoseconds() {
        let mut p = Pcap::new();
        p.record(Instant::from_ns(3_000_000_007), &[0xaa; 70]);
        let b = p.bytes();
        assert_eq!(b.len(), 24 + 16 + 70);
        assert_eq!(&b[..4], &[0x4d, 0x3c, 0xb2, 0xa1]);
        assert_eq!(u32::from_le_bytes(b[20..24].try_into().unwrap()), 1);
        assert_eq!(u32::from_le_bytes(b[24..28].try_into().unwrap()), 3);
        assert_eq!(u32::from_le_bytes(b[28..32].try_into().unwrap()), 7);
        assert_eq!(u32::from_le_bytes(b[32..36].try_into().unwrap()), 70);
        assert_eq!(p.frames(), 1);
    }
}
