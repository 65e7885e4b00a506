//! `swctl capture PORT... [-w FILE] [-c N] [--drops]`: frames a switch's ports receive and send (the PFC
//! frames it generates included), or the frames it drops with the reason, streamed from switchd (the
//! `Capture` RPC) into a pcapng file — or stdout, which `tshark -r -` and Wireshark read live.
//!
//! pcapng (IETF draft-ietf-opsawg-pcapng) rather than pcap: one interface block per switch port (named as
//! SONiC names it), nanosecond timestamps (`if_tsresol` 9), the direction in each packet's `epb_flags`
//! (tshark: `frame.interface_name`, `pkt_comment`/`frame.comment`), and a dropped frame's reason as its
//! packet comment (`dropped: FDB_MISS_LOSSLESS`, or `dropped at egress queue 3: WRED`).

use anyhow::Context;
use lossless_proto::v1::{self as pb, switch_client::SwitchClient};
use std::collections::BTreeMap;
use std::io::Write;
use tonic::transport::Channel;

const SHB: u32 = 0x0A0D_0D0A;
const IDB: u32 = 0x0000_0001;
const EPB: u32 = 0x0000_0006;
const BYTE_ORDER_MAGIC: u32 = 0x1A2B_3C4D;
const LINKTYPE_ETHERNET: u16 = 1;
const OPT_END: u16 = 0;
const OPT_COMMENT: u16 = 1;
const SHB_USERAPPL: u16 = 4;
const IF_NAME: u16 = 2;
const IF_TSRESOL: u16 = 9;
const EPB_FLAGS: u16 = 2;
/// `epb_flags` bits 0–1: the direction.
const INBOUND: u32 = 1;
const OUTBOUND: u32 = 2;

/// A pcapng writer: a section header on creation, an interface block per port the first time it appears.
pub struct PcapngWriter<W: Write> {
    out: W,
    interfaces: BTreeMap<String, u32>,
    snaplen: u32,
}

/// One frame to write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet<'a> {
    pub port: &'a str,
    pub unix_ns: u64,
    pub inbound: bool,
    pub data: &'a [u8],
    pub original_length: u32,
    pub comment: Option<String>,
}

impl<W: Write> PcapngWriter<W> {
    pub fn new(mut out: W, snaplen: u32) -> std::io::Result<PcapngWriter<W>> {
        let mut body = Vec::new();
        body.extend_from_slice(&BYTE_ORDER_MAGIC.to_le_bytes());
        body.extend_from_slice(&1u16.to_le_bytes()); // major version
        body.extend_from_slice(&0u16.to_le_bytes()); // minor version
        body.extend_from_slice(&(-1i64).to_le_bytes()); // section length: unknown
        option(&mut body, SHB_USERAPPL, concat!("swctl ", env!("CARGO_PKG_VERSION")).as_bytes());
        option(&mut body, OPT_END, &[]);
        block(&mut out, SHB, &body)?;
        Ok(PcapngWriter { out, interfaces: BTreeMap::new(), snaplen })
    }

    pub fn write(&mut self, packet: &Packet<'_>) -> std::io::Result<()> {
        let interface = match self.interfaces.get(packet.port) {
            Some(&id) => id,
            None => {
                let id = self.interfaces.len() as u32;
                let mut body = Vec::new();
                body.extend_from_slice(&LINKTYPE_ETHERNET.to_le_bytes());
                body.extend_from_slice(&0u16.to_le_bytes());
                body.extend_from_slice(&self.snaplen.to_le_bytes());
                option(&mut body, IF_NAME, packet.port.as_bytes());
                option(&mut body, IF_TSRESOL, &[9]); // 10^-9 s
                option(&mut body, OPT_END, &[]);
                block(&mut self.out, IDB, &body)?;
                self.interfaces.insert(packet.port.to_owned(), id);
                id
            }
        };
        let mut body = Vec::with_capacity(packet.data.len() + 64);
        body.extend_from_slice(&interface.to_le_bytes());
        body.extend_from_slice(&((packet.unix_ns >> 32) as u32).to_le_bytes());
        body.extend_from_slice(&(packet.unix_ns as u32).to_le_bytes());
        body.extend_from_slice(&(packet.data.len() as u32).to_le_bytes());
        body.extend_from_slice(&packet.original_length.to_le_bytes());
        body.extend_from_slice(packet.data);
        pad(&mut body);
        let flags = if packet.inbound { INBOUND } else { OUTBOUND };
        option(&mut body, EPB_FLAGS, &flags.to_le_bytes());
        if let Some(comment) = &packet.comment {
            option(&mut body, OPT_COMMENT, comment.as_bytes());
        }
        option(&mut body, OPT_END, &[]);
        block(&mut self.out, EPB, &body)
    }

    /// Pushes what was written to the output (a reader on a pipe sees each frame as it comes).
    pub fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

fn pad(buf: &mut Vec<u8>) {
    while !buf.len().is_multiple_of(4) {
        buf.push(0);
    }
}

fn option(buf: &mut Vec<u8>, code: u16, value: &[u8]) {
    buf.extend_from_slice(&code.to_le_bytes());
    buf.extend_from_slice(&(value.len() as u16).to_le_bytes());
    buf.extend_from_slice(value);
    pad(buf);
}

/// A block: type, total length, body (already padded), total length again.
fn block(out: &mut impl Write, kind: u32, body: &[u8]) -> std::io::Result<()> {
    let total = (body.len() + 12) as u32;
    out.write_all(&kind.to_le_bytes())?;
    out.write_all(&total.to_le_bytes())?;
    out.write_all(body)?;
    out.write_all(&total.to_le_bytes())
}

/// What `swctl capture` was asked for.
#[derive(Debug, Clone)]
pub struct CaptureOptions {
    /// Ports by SONiC name; empty: every port.
    pub ports: Vec<String>,
    pub drops: bool,
    /// Stop after this many frames.
    pub count: Option<u64>,
    /// Bytes kept of each frame (0: all).
    pub snaplen: u32,
}

/// The comment of a captured frame: its drop reason, where it was dropped.
pub fn comment(frame: &pb::CapturedFrame) -> Option<String> {
    if frame.drop_reason.is_empty() {
        return None;
    }
    let egress = ["EGRESS_BUFFER", "WRED", "PFC_WD", "POLICER"].contains(&frame.drop_reason.as_str());
    Some(if egress {
        format!("dropped at egress queue {} of {}: {}", frame.queue, frame.port, frame.drop_reason)
    } else {
        format!("dropped: {}", frame.drop_reason)
    })
}

/// Streams a capture into `out` until the count is reached, the switch ends the stream, or `interrupted`
/// resolves; returns the frames written and those the switch could not deliver (the reader was behind).
pub async fn capture<W: Write>(
    client: &mut SwitchClient<Channel>,
    options: &CaptureOptions,
    out: W,
    interrupted: impl std::future::Future<Output = ()>,
) -> anyhow::Result<(u64, u64)> {
    let request = pb::CaptureRequest {
        ports: options.ports.clone(),
        drops: options.drops,
        max_frames: options.count.unwrap_or(0),
        snaplen: options.snaplen,
    };
    let mut stream =
        client.capture(request).await.map_err(|s| anyhow::anyhow!("{}", s.message()))?.into_inner();
    let snaplen = if options.snaplen == 0 { 262_144 } else { options.snaplen };
    let mut writer = PcapngWriter::new(out, snaplen).context("writing the capture")?;
    writer.flush()?;
    let (mut written, mut lost) = (0, 0);
    tokio::pin!(interrupted);
    loop {
        let frame = tokio::select! {
            frame = stream.message() => frame.map_err(|s| anyhow::anyhow!("{}", s.message()))?,
            () = &mut interrupted => None,
        };
        let Some(frame) = frame else { break };
        writer
            .write(&Packet {
                port: &frame.port,
                unix_ns: frame.wall_time_unix_ns,
                inbound: frame.direction == pb::captured_frame::Direction::Received as i32,
                data: &frame.frame,
                original_length: frame.original_length,
                comment: comment(&frame),
            })
            .context("writing the capture")?;
        writer.flush()?;
        written += 1;
        lost = frame.lost;
    }
    Ok((written, lost))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u32_at(b: &[u8], at: usize) -> u32 {
        u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
    }

    /// Walks the blocks: each starts and ends with the same total length, a multiple of 4.
    fn blocks(b: &[u8]) -> Vec<(u32, &[u8])> {
        let mut out = Vec::new();
        let mut at = 0;
        while at < b.len() {
            let kind = u32_at(b, at);
            let total = u32_at(b, at + 4) as usize;
            assert_eq!(total % 4, 0);
            assert_eq!(u32_at(b, at + total - 4) as usize, total, "trailing length of block at {at}");
            out.push((kind, &b[at + 8..at + total - 4]));
            at += total;
        }
        out
    }

    #[test]
    fn a_section_an_interface_per_port_and_packets_with_flags_and_comments() {
        let mut buf = Vec::new();
        let mut w = PcapngWriter::new(&mut buf, 65535).unwrap();
        let frame = [0xAAu8; 61]; // an odd length: padded
        for (port, inbound, comment) in [
            ("Ethernet0", true, None),
            ("Ethernet8", false, Some("dropped: WRED".to_owned())),
            ("Ethernet0", false, None),
        ] {
            w.write(&Packet {
                port,
                unix_ns: 0x1_0000_0002,
                inbound,
                data: &frame,
                original_length: 61,
                comment,
            })
            .unwrap();
        }
        let blocks = blocks(&buf);
        let kinds: Vec<u32> = blocks.iter().map(|b| b.0).collect();
        assert_eq!(kinds, [SHB, IDB, EPB, IDB, EPB, EPB]);
        assert_eq!(u32_at(blocks[0].1, 0), BYTE_ORDER_MAGIC);
        // The second packet is on the second interface (Ethernet8), the third back on the first.
        assert_eq!(u32_at(blocks[4].1, 0), 1);
        assert_eq!(u32_at(blocks[5].1, 0), 0);
        let epb = blocks[4].1;
        assert_eq!((u32_at(epb, 4), u32_at(epb, 8)), (1, 2), "timestamp high and low words");
        assert_eq!((u32_at(epb, 12), u32_at(epb, 16)), (61, 61));
        let options = &epb[20 + 64..]; // 61 bytes padded to 64
        assert_eq!(&options[..4], &[2, 0, 4, 0], "epb_flags, 4 bytes");
        assert_eq!(u32_at(options, 4), OUTBOUND);
        assert_eq!(&options[8..12], &[1, 0, 13, 0], "a 13-byte comment");
        assert_eq!(&options[12..25], b"dropped: WRED");
    }
}
