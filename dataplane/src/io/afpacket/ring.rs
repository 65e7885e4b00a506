//! The TPACKET_V2 ring shared by receive and transmit: the mapping, its slots and their layout.

use super::*;
use std::sync::atomic::AtomicU32;

pub(super) const fn tpacket_align(x: usize) -> usize {
    (x + libc::TPACKET_ALIGNMENT - 1) & !(libc::TPACKET_ALIGNMENT - 1)
}

/// Where `tpacket_rcv` puts a frame's network header in a ring slot (SOCK_RAW, link header ≤ 16 bytes,
/// `PACKET_VNET_HDR`): after the tpacket2_hdr + sockaddr_ll, 16 bytes for the link header, and the
/// virtio_net_hdr, which sits right before the link header (`tp_mac - VNET_HDR_LEN`).
const RING_NET_OFFSET: usize = tpacket_align(libc::TPACKET2_HDRLEN + 16) + VNET_HDR_LEN;

/// A ring slot big enough for a frame of the interface's MTU (+ headroom) after the slot's headers.
pub(super) fn ring_frame_size_for(mtu: usize) -> usize {
    tpacket_align(RING_NET_OFFSET + (mtu.max(1500) + RX_HEADROOM).min(RX_MAX_FRAME))
}

/// A `PACKET_RX_RING` or `PACKET_TX_RING` (TPACKET_V2) mapped into our address space. TPACKET_V2 rather
/// than V3: a V3 block is handed over only when full or when its timer (whole milliseconds, ≥ 1 ms) retires
/// it, which at low rates delays every frame by up to that long; a V2 slot is ours as soon as the kernel
/// has written it.
pub(super) struct PacketRing {
    base: *mut u8,
    len: usize,
    block_size: usize,
    pub(super) frame_size: usize,
    frames_per_block: usize,
    pub(super) frame_nr: usize,
    /// The next slot to look at: the kernel takes slots in order, so on receive it is the oldest unread
    /// one, on transmit the next to fill.
    pub(super) head: usize,
}

// SAFETY: the mapping is owned by this value alone (nothing else holds `base`), so it may move between
// threads with it; the kernel side is synchronised through each slot's status word.
#[allow(unsafe_code)]
unsafe impl Send for PacketRing {}

impl PacketRing {
    /// Sets up a ring of `kind` (`PACKET_RX_RING` or `PACKET_TX_RING`; the layout and mapping are the same)
    /// of about `bytes` in `frame_size`-byte slots on `fd` (which has `PACKET_VERSION` = V2 and no such ring
    /// yet), and maps it.
    #[allow(unsafe_code)]
    pub(super) fn new_kind(
        fd: &OwnedFd,
        frame_size: usize,
        bytes: usize,
        kind: libc::c_int,
    ) -> io::Result<PacketRing> {
        let block_size = RING_BLOCK_BYTES.max(frame_size.next_power_of_two());
        let block_nr = (bytes / block_size).max(2);
        let frames_per_block = block_size / frame_size;
        let frame_nr = frames_per_block * block_nr;
        let req = libc::tpacket_req {
            tp_block_size: block_size as u32,
            tp_block_nr: block_nr as u32,
            tp_frame_size: frame_size as u32,
            tp_frame_nr: frame_nr as u32,
        };
        setsockopt(fd, libc::SOL_PACKET, kind, &req)?;
        let len = block_size * block_nr;
        // SAFETY: maps the ring just set up on `fd` (its documented use); the kernel checks the length.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_POPULATE,
                fd.as_raw_fd(),
                0,
            )
        };
        if base == libc::MAP_FAILED {
            let e = io::Error::last_os_error();
            let none =
                libc::tpacket_req { tp_block_size: 0, tp_block_nr: 0, tp_frame_size: 0, tp_frame_nr: 0 };
            let _ = setsockopt(fd, libc::SOL_PACKET, kind, &none);
            return Err(e);
        }
        Ok(PacketRing { base: base.cast(), len, block_size, frame_size, frames_per_block, frame_nr, head: 0 })
    }

    /// Unmaps the ring, takes it off `fd`, and sets up one of `frame_size`-byte slots instead.
    pub(super) fn rebuild(&mut self, fd: &OwnedFd, frame_size: usize) -> io::Result<()> {
        let bytes = self.len;
        self.unmap();
        let none = libc::tpacket_req { tp_block_size: 0, tp_block_nr: 0, tp_frame_size: 0, tp_frame_nr: 0 };
        setsockopt(fd, libc::SOL_PACKET, libc::PACKET_RX_RING, &none)?;
        *self = PacketRing::new_kind(fd, frame_size, bytes, libc::PACKET_RX_RING)?;
        Ok(())
    }

    #[allow(unsafe_code)]
    pub(super) fn unmap(&mut self) {
        if !self.base.is_null() {
            // SAFETY: `base`/`len` are the mapping made in `new`, unmapped once (base is nulled after).
            unsafe { libc::munmap(self.base.cast(), self.len) };
            self.base = std::ptr::null_mut();
        }
    }

    /// Slot `i`'s first byte.
    pub(super) fn slot(&self, i: usize) -> *mut u8 {
        let offset =
            (i / self.frames_per_block) * self.block_size + (i % self.frames_per_block) * self.frame_size;
        self.base.wrapping_add(offset)
    }

    /// Slot `i`'s status word (the first field of its tpacket2_hdr), shared with the kernel.
    #[allow(unsafe_code)]
    pub(super) fn status(&self, i: usize) -> &AtomicU32 {
        // SAFETY: every slot starts with a 16-byte-aligned tpacket2_hdr inside the live mapping, whose first
        // field is the u32 tp_status; the kernel and we access it only as a whole word.
        unsafe { &*self.slot(i).cast::<AtomicU32>() }
    }
}

impl Drop for PacketRing {
    fn drop(&mut self) {
        self.unmap();
    }
}

/// One ring slot the kernel has handed over: header fields, and the virtio_net_hdr + frame bytes.
pub(super) struct RingFrame<'a> {
    pub(super) status: u32,
    pub(super) len: usize,
    pub(super) vlan_tci: u16,
    pub(super) vlan_tpid: u16,
    /// virtio_net_hdr followed by the (possibly truncated) frame.
    pub(super) bytes: &'a mut [u8],
}

/// The header and bytes of a slot whose status has TP_STATUS_USER; None when its offsets are impossible.
#[allow(unsafe_code)]
pub(super) fn ring_frame(ring: &mut PacketRing, i: usize) -> Option<RingFrame<'_>> {
    let slot = ring.slot(i);
    // SAFETY: the slot is ours (TP_STATUS_USER was read with Acquire ordering, after which the kernel does
    // not touch it until we hand it back); it starts with a tpacket2_hdr inside the mapping.
    let hdr: libc::tpacket2_hdr = unsafe { std::ptr::read(slot.cast()) };
    let mac = usize::from(hdr.tp_mac);
    let snap = hdr.tp_snaplen as usize;
    if mac < libc::TPACKET2_HDRLEN + VNET_HDR_LEN || mac + snap > ring.frame_size {
        return None;
    }
    // SAFETY: `mac - VNET_HDR_LEN .. mac + snap` lies inside this slot (checked above) past its header, and
    // the slot is exclusively ours until its status is set back to TP_STATUS_KERNEL, which happens only
    // after this borrow (tied to `ring`) ends.
    let bytes = unsafe { std::slice::from_raw_parts_mut(slot.add(mac - VNET_HDR_LEN), VNET_HDR_LEN + snap) };
    Some(RingFrame {
        status: hdr.tp_status,
        len: hdr.tp_len as usize,
        vlan_tci: hdr.tp_vlan_tci,
        vlan_tpid: hdr.tp_vlan_tpid,
        bytes,
    })
}
