//! The bench frames: IPv4/UDP h1 → h2 carrying a magic word, a sequence number and the send time.

use crate::lab::{H1_IP, H2_IP, Lab};
use lossless_dataplane::wire::EthernetAddress;
use lossless_dataplane::wire::build::Ipv4Flow;
use lossless_dataplane::wire::ip::Ecn;

/// UDP ports of the bench frames, and a magic word at the start of their payload.
pub const SRC_PORT: u16 = 40000;
pub const DST_PORT: u16 = 9000;
pub const MAGIC: [u8; 4] = *b"LLFB";
/// Payload: magic, sequence number (u64), send time in ns since the epoch (u64).
pub const PAYLOAD_OFFSET: usize = 14 + 20 + 8;
pub const PAYLOAD_LEN: usize = 4 + 8 + 8;
pub const MIN_SIZE: usize = PAYLOAD_OFFSET + PAYLOAD_LEN;
pub const MAX_SIZE: usize = 1514;

/// A bench frame of `size` bytes h1 → h2 through the router, DSCP 3 (lossless), ECT(0), UDP checksum 0
/// (none: the payload is rewritten per frame).
pub fn bench_frame(lab: &Lab, h1_mac: EthernetAddress, size: usize, seq: u64) -> Vec<u8> {
    let flow = Ipv4Flow {
        src_mac: h1_mac,
        dst_mac: lab.router_mac,
        src_ip: H1_IP,
        dst_ip: H2_IP,
        src_port: SRC_PORT,
        dscp: 3,
        ecn: Ecn::Ect0,
        ttl: 64,
    };
    let mut frame = flow.udp(DST_PORT, &vec![0u8; size - PAYLOAD_OFFSET]);
    debug_assert_eq!(frame.len(), size);
    frame[40..42].copy_from_slice(&[0, 0]);
    frame[PAYLOAD_OFFSET..PAYLOAD_OFFSET + 4].copy_from_slice(&MAGIC);
    stamp(&mut frame, seq, 0);
    frame
}

pub fn stamp(frame: &mut [u8], seq: u64, tx_ns: u64) {
    frame[PAYLOAD_OFFSET + 4..PAYLOAD_OFFSET + 12].copy_from_slice(&seq.to_be_bytes());
    frame[PAYLOAD_OFFSET + 12..PAYLOAD_OFFSET + 20].copy_from_slice(&tx_ns.to_be_bytes());
}

/// (sequence number, send time) of a bench frame; None for anything else.
pub fn parse_bench(frame: &[u8]) -> Option<(u64, u64)> {
    if frame.len() < MIN_SIZE
        || frame[12..14] != [0x08, 0x00]
        || frame[14] != 0x45
        || frame[23] != 17
        || frame[36..38] != DST_PORT.to_be_bytes()
        || frame[PAYLOAD_OFFSET..PAYLOAD_OFFSET + 4] != MAGIC
    {
        return None;
    }
    let seq = u64::from_be_bytes(frame[PAYLOAD_OFFSET + 4..PAYLOAD_OFFSET + 12].try_into().ok()?);
    let tx = u64::from_be_bytes(frame[PAYLOAD_OFFSET + 12..PAYLOAD_OFFSET + 20].try_into().ok()?);
    Some((seq, tx))
}
