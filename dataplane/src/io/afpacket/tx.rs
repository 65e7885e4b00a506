//! The `PACKET_TX_RING` on a send-only socket.

use super::ring::tpacket_align;
use super::socket::{bind_packet, raw_packet_socket};
use super::*;
use std::mem;
use std::sync::atomic::Ordering;

/// Offset of a frame's first byte in a TX ring slot (TPACKET_V2, no PACKET_TX_HAS_OFF): the kernel reads
/// from `tp_hdrlen − sizeof(sockaddr_ll)`, i.e. right after the aligned tpacket2_hdr.
const TX_DATA_OFFSET: usize = libc::TPACKET2_HDRLEN - mem::size_of::<libc::sockaddr_ll>();
const TP_STATUS_AVAILABLE: u32 = 0;
const TP_STATUS_SEND_REQUEST: u32 = 1;
const TP_STATUS_WRONG_FORMAT: u32 = 4;

/// A `PACKET_TX_RING` (TPACKET_V2) on a send-only socket (protocol 0: it receives nothing): frames are
/// copied into slots marked SEND_REQUEST and one `send` hands the whole batch to the kernel, instead of a
/// msghdr and a `packet_sendmsg` per frame.
pub(super) struct TxRing {
    fd: OwnedFd,
    ring: PacketRing,
    /// Longest frame the ring takes: a slot's room, and at most the device MTU + Ethernet and 802.1Q
    /// headers as of opening (longer ones go by `sendmmsg`, which reports them).
    max_len: usize,
}

/// `PACKET_LOSS` (linux/if_packet.h): a TX-ring frame the kernel cannot send is skipped (its slot made
/// available again) instead of stopping the ring at it with TP_STATUS_WRONG_FORMAT.
const PACKET_LOSS: libc::c_int = 14;

impl TxRing {
    pub(super) fn new(interface: &str, ifindex: u32, mtu: usize) -> io::Result<TxRing> {
        let context = |what: &str, e: io::Error| {
            io::Error::new(e.kind(), format!("interface {interface:?}: TX ring: {what}: {e}"))
        };
        let fd = raw_packet_socket().map_err(|e| context("AF_PACKET socket", e))?;
        setsockopt(&fd, libc::SOL_PACKET, libc::PACKET_VERSION, &TPACKET_V2)
            .map_err(|e| context("version", e))?;
        let one: libc::c_int = 1;
        setsockopt(&fd, libc::SOL_PACKET, PACKET_LOSS, &one).map_err(|e| context("PACKET_LOSS", e))?;
        let frame_size = tpacket_align(TX_DATA_OFFSET + mtu.max(1500) + RX_HEADROOM);
        let ring = PacketRing::new_kind(&fd, frame_size, RING_BYTES, libc::PACKET_TX_RING)
            .map_err(|e| context("ring", e))?;
        bind_packet(&fd, ifindex as libc::c_int, 0).map_err(|e| context("bind", e))?;
        let max_len = (frame_size - TX_DATA_OFFSET).min(mtu + 14 + 4);
        Ok(TxRing { fd, ring, max_len })
    }

    /// Queues as many of `frames` as there are free slots and kicks the kernel; `None` when the first frame
    /// does not fit a slot (the caller sends that batch the other way).
    #[allow(unsafe_code)]
    pub(super) fn send(&mut self, frames: &[Vec<u8>], dropped: &mut u64) -> io::Result<Option<usize>> {
        let room = self.max_len;
        if frames.first().is_none_or(|f| f.len() > room) {
            return Ok(if frames.is_empty() { Some(0) } else { None });
        }
        let mut taken = 0;
        for frame in frames.iter().take_while(|f| f.len() <= room) {
            let i = self.ring.head;
            let status = self.ring.status(i).load(Ordering::Acquire);
            if status & TP_STATUS_WRONG_FORMAT != 0 {
                // Not expected with PACKET_LOSS; counted if a kernel does it anyway.
                *dropped += 1;
            } else if status != TP_STATUS_AVAILABLE {
                break;
            }
            let slot = self.ring.slot(i);
            // SAFETY: the slot is ours (AVAILABLE or WRONG_FORMAT: the kernel is done with it); the frame fits
            // after the header (checked above); tp_len is the u32 after tp_status.
            unsafe {
                std::ptr::copy_nonoverlapping(frame.as_ptr(), slot.add(TX_DATA_OFFSET), frame.len());
                slot.add(4).cast::<u32>().write(frame.len() as u32);
            }
            self.ring.status(i).store(TP_STATUS_SEND_REQUEST, Ordering::Release);
            self.ring.head = (i + 1) % self.ring.frame_nr;
            taken += 1;
        }
        // Kick when frames were queued, and also when the ring is full of frames an earlier kick left
        // pending (the socket's send buffer was full then): otherwise nothing would ever send them.
        let pending = self.ring.status(self.ring.head).load(Ordering::Acquire) == TP_STATUS_SEND_REQUEST;
        if taken > 0 || pending {
            // SAFETY: a zero-length send on our socket: the kernel transmits the SEND_REQUEST slots.
            let r = unsafe { libc::send(self.fd.as_raw_fd(), std::ptr::null(), 0, libc::MSG_DONTWAIT) };
            if r < 0 {
                let e = io::Error::last_os_error();
                if !matches!(e.raw_os_error(), Some(libc::EAGAIN | libc::EINTR | libc::ENOBUFS)) {
                    return Err(e);
                }
            }
        }
        Ok(Some(taken))
    }
}
