//! The receive side: taking frames from the `PACKET_RX_RING` or by `recvmmsg`, and the fix-ups that make
//! a received `virtio_net_hdr` + frame the frame the sender sent (GSO drop, checksum completion, VLAN tag).

use super::ring::ring_frame;
use super::*;
use crate::wire::checksum;
use std::mem;
use std::sync::atomic::Ordering;

impl AfPacketPort {
    /// Takes up to `max` slots the kernel has filled from the ring, handing each back at once.
    pub(super) fn recv_ring(&mut self, out: &mut Vec<Vec<u8>>, max: usize) -> usize {
        let Some(ring) = self.ring.as_mut() else { return 0 };
        let mut taken = 0;
        let mut truncated = false;
        for _ in 0..max {
            let head = ring.head;
            if ring.status(head).load(Ordering::Acquire) & libc::TP_STATUS_USER == 0 {
                break;
            }
            if let Some(frame) = ring_frame(ring, head) {
                if frame.bytes.len() - VNET_HDR_LEN < frame.len {
                    // A GSO super-frame is larger than any slot: it is dropped as one, not as a truncation.
                    if is_gso(frame.bytes) {
                        take_vnet_frame(&self.name, frame.bytes, None, &mut self.stats);
                    } else {
                        if self.stats.truncated == 0 {
                            tracing::warn!(interface = %self.name, "frame longer than the receive ring's slots dropped (MTU raised after open?)");
                        }
                        self.stats.truncated += 1;
                        truncated = true;
                    }
                } else {
                    let vlan = (frame.status & libc::TP_STATUS_VLAN_VALID != 0).then(|| {
                        let tpid = if frame.status & libc::TP_STATUS_VLAN_TPID_VALID != 0 {
                            frame.vlan_tpid
                        } else {
                            0x8100
                        };
                        (tpid, frame.vlan_tci)
                    });
                    if let Some(f) = take_vnet_frame(&self.name, frame.bytes, vlan, &mut self.stats) {
                        out.push(f);
                        taken += 1;
                    }
                }
            }
            ring.status(head).store(libc::TP_STATUS_KERNEL, Ordering::Release);
            ring.head = (head + 1) % ring.frame_nr;
        }
        if truncated {
            self.grow_ring();
        }
        taken
    }

    /// As [`AfPacketPort::grow_rx_slots`], for the ring: rebuilt with slots for the current MTU, or for the
    /// largest possible frame when the MTU does not explain the truncation. Frames in the old ring are lost.
    pub(super) fn grow_ring(&mut self) {
        let Some(ring) = self.ring.as_mut() else { return };
        let by_mtu =
            ControlSocket::new().and_then(|c| c.mtu(&self.name)).map(ring_frame_size_for).unwrap_or(0);
        let size = if by_mtu > ring.frame_size { by_mtu } else { ring_frame_size_for(RX_MAX_FRAME) };
        if size > ring.frame_size
            && let Err(e) = ring.rebuild(&self.fd, size)
        {
            // Without a ring the socket falls back to its receive queue: read it with recvmmsg.
            tracing::warn!(interface = %self.name, "receive ring not rebuilt, using recvmmsg: {e}");
            self.ring = None;
            self.rx_slot_len = VNET_HDR_LEN + RX_MAX_FRAME;
            self.rx_buf = vec![0; RX_SLOTS * self.rx_slot_len];
            self.rx_cmsg = vec![[0; CMSG_SLOT_WORDS]; RX_SLOTS];
        }
    }

    #[allow(unsafe_code)]
    pub(super) fn recv_mmsg(&mut self, out: &mut Vec<Vec<u8>>, max: usize) -> io::Result<usize> {
        let slots = max.min(RX_SLOTS);
        if slots == 0 {
            return Ok(0);
        }
        // SAFETY: iovec and mmsghdr are plain C structs of integers and pointers; all-zero is valid for both
        // (null pointers with zero lengths).
        let mut iovs: [libc::iovec; RX_SLOTS] = unsafe { mem::zeroed() };
        // SAFETY: as above.
        let mut msgs: [libc::mmsghdr; RX_SLOTS] = unsafe { mem::zeroed() };
        let buffers = self.rx_buf.chunks_exact_mut(self.rx_slot_len);
        for (((iov, msg), buf), cmsg) in
            iovs.iter_mut().zip(msgs.iter_mut()).zip(buffers).zip(self.rx_cmsg.iter_mut())
        {
            iov.iov_base = buf.as_mut_ptr().cast();
            iov.iov_len = buf.len();
            msg.msg_hdr.msg_iov = iov;
            msg.msg_hdr.msg_iovlen = 1;
            msg.msg_hdr.msg_control = cmsg.as_mut_ptr().cast();
            msg.msg_hdr.msg_controllen = mem::size_of_val(cmsg) as _;
        }
        // SAFETY: `msgs[..slots]` are initialised headers whose iovecs and control buffers point into
        // `self.rx_buf`/`self.rx_cmsg`, which are neither moved nor otherwise borrowed during the call; the
        // kernel writes at most `iov_len`/`msg_controllen` bytes to each. A null timeout is allowed.
        let received = unsafe {
            libc::recvmmsg(
                self.fd.as_raw_fd(),
                msgs.as_mut_ptr(),
                slots as libc::c_uint,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
            )
        };
        if received < 0 {
            let e = io::Error::last_os_error();
            return match e.kind() {
                io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(0),
                _ => Err(e),
            };
        }
        let received = received as usize;
        let mut taken = 0;
        let mut truncated = false;
        let slot_len = self.rx_slot_len;
        for (i, msg) in msgs.iter().enumerate().take(received) {
            let len = (msg.msg_len as usize).min(slot_len);
            let buf = &mut self.rx_buf[i * slot_len..i * slot_len + len];
            if msg.msg_hdr.msg_flags & libc::MSG_TRUNC != 0 {
                // A GSO super-frame is larger than any slot: it is dropped as one, not as a truncation.
                if is_gso(buf) {
                    take_vnet_frame(&self.name, buf, None, &mut self.stats);
                    continue;
                }
                if self.stats.truncated == 0 {
                    tracing::warn!(interface = %self.name, "frame longer than the receive buffer dropped (MTU raised after open?)");
                }
                self.stats.truncated += 1;
                truncated = true;
                continue;
            }
            let vlan = auxdata_vlan(&msg.msg_hdr);
            if let Some(frame) = take_vnet_frame(&self.name, buf, vlan, &mut self.stats) {
                out.push(frame);
                taken += 1;
            }
        }
        if truncated {
            self.grow_rx_slots();
        }
        Ok(taken)
    }

    /// A truncated frame means the interface now takes larger frames than at open: size the slots for the
    /// current MTU, or for the largest possible frame when the MTU does not explain it.
    pub(super) fn grow_rx_slots(&mut self) {
        let by_mtu = ControlSocket::new().and_then(|c| c.mtu(&self.name)).map(rx_slot_len_for).unwrap_or(0);
        let len = if by_mtu > self.rx_slot_len { by_mtu } else { VNET_HDR_LEN + RX_MAX_FRAME };
        if len > self.rx_slot_len {
            self.rx_slot_len = len;
            self.rx_buf = vec![0; RX_SLOTS * len];
        }
    }
}

pub(super) fn rx_slot_len_for(mtu: usize) -> usize {
    VNET_HDR_LEN + (mtu.max(1500) + RX_HEADROOM).min(RX_MAX_FRAME)
}

/// An 802.1Q/802.1ad tag the kernel took off a received frame: (TPID, TCI).
pub(crate) type StrippedVlan = (u16, u16);

/// The VLAN tag in a received message's `PACKET_AUXDATA`, if the kernel stripped one.
#[allow(unsafe_code)]
fn auxdata_vlan(hdr: &libc::msghdr) -> Option<StrippedVlan> {
    // SAFETY: `hdr` is a message header the kernel just filled: `msg_control`/`msg_controllen` describe a
    // live control buffer (ours) holding complete cmsghdrs, which CMSG_FIRSTHDR/CMSG_NXTHDR walk within bounds.
    let mut cmsg = unsafe { libc::CMSG_FIRSTHDR(hdr) };
    while !cmsg.is_null() {
        // SAFETY: `cmsg` is non-null and points to a complete cmsghdr inside the control buffer.
        let c = unsafe { &*cmsg };
        if c.cmsg_level == libc::SOL_PACKET && c.cmsg_type == libc::PACKET_AUXDATA {
            // SAFETY: a PACKET_AUXDATA message carries one tpacket_auxdata; CMSG_DATA may be unaligned for
            // it, hence read_unaligned.
            let aux: libc::tpacket_auxdata =
                unsafe { std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast()) };
            if aux.tp_status & libc::TP_STATUS_VLAN_VALID == 0 {
                return None;
            }
            let tpid =
                if aux.tp_status & libc::TP_STATUS_VLAN_TPID_VALID != 0 { aux.tp_vlan_tpid } else { 0x8100 };
            return Some((tpid, aux.tp_vlan_tci));
        }
        // SAFETY: as for CMSG_FIRSTHDR; returns null past the last message.
        cmsg = unsafe { libc::CMSG_NXTHDR(hdr, cmsg) };
    }
    None
}

/// Turns one received `virtio_net_hdr` + frame into the frame the switch sees: GSO super-frames are
/// dropped (None), partial checksums completed, a stripped VLAN tag put back.
pub(crate) fn take_vnet_frame(
    interface: &str,
    buf: &mut [u8],
    vlan: Option<StrippedVlan>,
    stats: &mut RxStats,
) -> Option<Vec<u8>> {
    if buf.len() < VNET_HDR_LEN {
        return None;
    }
    let (hdr, frame) = buf.split_at_mut(VNET_HDR_LEN);
    // virtio_net_hdr: flags u8, gso_type u8, hdr_len, gso_size, csum_start, csum_offset (u16, host order
    // on a packet socket).
    let flags = hdr[0];
    let gso_type = hdr[1];
    let gso_size = u16::from_ne_bytes([hdr[4], hdr[5]]);
    if gso_type != VIRTIO_NET_HDR_GSO_NONE {
        if stats.gso_dropped == 0 {
            tracing::warn!(
                interface,
                gso_type,
                gso_size,
                "GSO super-frame dropped: the sender has TSO/GSO on; disable it with `ethtool -K <dev> tso off gso off`"
            );
        }
        stats.gso_dropped += 1;
        return None;
    }
    if flags & VIRTIO_NET_HDR_F_NEEDS_CSUM != 0 {
        let csum_start = usize::from(u16::from_ne_bytes([hdr[6], hdr[7]]));
        let csum_offset = usize::from(u16::from_ne_bytes([hdr[8], hdr[9]]));
        if complete_checksum(frame, csum_start, csum_offset) {
            stats.checksums_completed += 1;
        }
    }
    Some(with_vlan(frame, vlan))
}

fn is_gso(buf: &[u8]) -> bool {
    buf.len() >= VNET_HDR_LEN && buf[1] != VIRTIO_NET_HDR_GSO_NONE
}

/// Completes an offloaded L4 checksum in place, as the NIC would have: the checksum field holds the
/// pseudo-header sum, so the one's-complement sum from `csum_start` to the end, complemented, is the
/// checksum (0 is sent as 0xffff, which RFC 768 requires for UDP and is equivalent for TCP). False when
/// the offsets do not fit the frame (left unchanged).
pub(crate) fn complete_checksum(frame: &mut [u8], csum_start: usize, csum_offset: usize) -> bool {
    let field = csum_start.saturating_add(csum_offset);
    if csum_start > frame.len() || field.saturating_add(2) > frame.len() {
        return false;
    }
    let value = match checksum::checksum(&frame[csum_start..]) {
        0 => 0xffff,
        c => c,
    };
    frame[field..field + 2].copy_from_slice(&value.to_be_bytes());
    true
}

/// `frame` with a stripped tag put back after the MAC addresses.
pub(super) fn with_vlan(frame: &[u8], vlan: Option<StrippedVlan>) -> Vec<u8> {
    let mut out = Vec::with_capacity(frame.len() + 4);
    out.extend_from_slice(frame);
    if let Some((tpid, tci)) = vlan {
        crate::wire::vlan::push_tag(&mut out, tpid, tci);
    }
    out
}
