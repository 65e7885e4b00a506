//! The fast path: one AF_PACKET `SOCK_RAW` socket per port, bound to the interface, moving frames in
//! batches with one `recvmmsg`/`sendmmsg` per call.
//!
//! What the socket is set up to do, and why:
//! - **promiscuous** (`PACKET_MR_PROMISC` membership, undone by the kernel when the socket closes): a switch
//!   port takes every frame, whatever its destination MAC;
//! - **`PACKET_IGNORE_OUTGOING`** (Linux ≥ 4.20): an `ETH_P_ALL` socket would otherwise read back every
//!   frame sent on the interface, ours included, and the switch would forward its own output again;
//! - **`PACKET_VNET_HDR`**: each frame comes with a `virtio_net_hdr` telling how the sender's kernel left it.
//!   A veth peer with TX checksum offload on (the default) hands over UDP/TCP whose L4 checksum is only the
//!   pseudo-header sum (`VIRTIO_NET_HDR_F_NEEDS_CSUM`): the real checksum is completed here, as a NIC
//!   would, so what the switch forwards is valid on any wire. GSO super-frames (a TSO/GSO sender's 64 KiB
//!   "frames") cannot be forwarded as one frame: they are dropped, counted in [`AfPacketPort::gso_dropped`],
//!   and warned about once. **Senders on lab veths must disable TSO/GSO**: `ethtool -K DEV tso off gso off`
//!   (the lab's [`super::netns::Netns::veth`] does this for its pairs);
//! - **`PACKET_AUXDATA`**: the kernel strips an 802.1Q/802.1ad tag from a received frame into metadata
//!   before AF_PACKET sees it; the tag is put back from the auxdata, so tagged frames arrive byte for byte;
//! - large socket buffers (`SO_RCVBUFFORCE`, falling back to the `rmem_max`-capped `SO_RCVBUF`), so a
//!   burst waits in the kernel rather than being dropped while the model thread is busy.
//!
//! At open the interface is also brought up and GRO/LRO are turned off on it (legacy ethtool ioctls), so the
//! kernel does not coalesce frames before the switch sees them. veth has no MAC Control processing: PFC and
//! PAUSE frames (01:80:C2:00:00:01) arrive and leave as plain frames (`reference/models.md` §2.4).
//!
//! `recv_batch` and `send_batch` never block. When the kernel has nothing to give or no room to take,
//! both return `Ok(0)` (never `Err(WouldBlock)`), so a caller needs only one "nothing happened" case.

use super::PortBackend;
use crate::wire::checksum;
use std::ffi::CString;
use std::io;
use std::mem;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// `struct virtio_net_hdr` (without `num_buffers`), prepended to every frame on a `PACKET_VNET_HDR` socket.
pub(crate) const VNET_HDR_LEN: usize = 10;
/// The L4 checksum from `csum_start` on is partial: complete it before the frame leaves the host.
const VIRTIO_NET_HDR_F_NEEDS_CSUM: u8 = 1;
const VIRTIO_NET_HDR_GSO_NONE: u8 = 0;

/// Frames taken per `recvmmsg` (the runtime asks for 64).
const RX_SLOTS: usize = 64;
/// Frames given per `sendmmsg`.
const TX_BATCH: usize = 128;
/// Room per receive slot beyond the MTU: Ethernet header, two VLAN tags, slack.
const RX_HEADROOM: usize = 14 + 2 * 4 + 16;
/// The largest frame any interface can hand over (and the slot size once a frame was truncated).
const RX_MAX_FRAME: usize = 65536;
/// Socket buffer sizes asked for.
const SOCKET_BUFFER_BYTES: libc::c_int = 8 << 20;
/// Room for one `PACKET_AUXDATA` control message (`CMSG_SPACE(20)` is 40 on 64-bit).
const CMSG_SLOT_WORDS: usize = 8;

/// Legacy ethtool commands (`include/uapi/linux/ethtool.h`).
pub(crate) mod ethtool {
    pub const GFLAGS: u32 = 0x25;
    pub const SFLAGS: u32 = 0x26;
    #[cfg(test)]
    pub const GTXCSUM: u32 = 0x16;
    pub const STXCSUM: u32 = 0x17;
    pub const STSO: u32 = 0x1f;
    pub const SGSO: u32 = 0x24;
    pub const SGRO: u32 = 0x2c;
    /// `ETH_FLAG_LRO` in the GFLAGS/SFLAGS word.
    pub const FLAG_LRO: u32 = 1 << 15;
}

/// `struct ethtool_value`.
#[repr(C)]
struct EthtoolValue {
    cmd: u32,
    data: u32,
}

/// A port on an existing interface through a batched AF_PACKET socket.
pub struct AfPacketPort {
    name: String,
    fd: OwnedFd,
    /// `RX_SLOTS` receive slots of `rx_slot_len` bytes each, one allocation.
    rx_buf: Vec<u8>,
    rx_slot_len: usize,
    /// One control-message buffer per slot (u64 words keep `cmsghdr` aligned).
    rx_cmsg: Vec<[u64; CMSG_SLOT_WORDS]>,
    stats: RxStats,
    tx_dropped: u64,
}

/// What receive-side fix-ups did; shared with the pnet backend, which reads the same kind of socket.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct RxStats {
    pub gso_dropped: u64,
    pub checksums_completed: u64,
    pub truncated: u64,
}

impl AfPacketPort {
    /// Opens `interface`: fails at once (never hangs) with `interface "NAME" not found` when it does not
    /// exist, and with the kernel's reason when the socket cannot be set up as described in the module doc.
    pub fn open(interface: &str) -> io::Result<AfPacketPort> {
        let ifindex = if_index(interface)?;
        let ctl = ControlSocket::new()?;
        ctl.set_up(interface)?;
        ctl.disable_gro_lro(interface);
        let mtu = ctl.mtu(interface)?;
        let fd = packet_socket(interface, ifindex, true)?;
        let rx_slot_len = rx_slot_len_for(mtu);
        Ok(AfPacketPort {
            name: interface.to_owned(),
            fd,
            rx_buf: vec![0; RX_SLOTS * rx_slot_len],
            rx_slot_len,
            rx_cmsg: vec![[0; CMSG_SLOT_WORDS]; RX_SLOTS],
            stats: RxStats::default(),
            tx_dropped: 0,
        })
    }

    /// GSO super-frames received and dropped (a sender with TSO/GSO on).
    pub fn gso_dropped(&self) -> u64 {
        self.stats.gso_dropped
    }

    /// Received frames whose partial (offloaded) L4 checksum was completed here.
    pub fn checksums_completed(&self) -> u64 {
        self.stats.checksums_completed
    }

    /// Received frames longer than the receive slots (the MTU grew after open), dropped; the slots grow.
    pub fn rx_truncated(&self) -> u64 {
        self.stats.truncated
    }

    /// Frames the kernel refused outright (longer than the MTU) or dropped on the way out, counted as sent.
    pub fn tx_dropped(&self) -> u64 {
        self.tx_dropped
    }

    /// A truncated frame means the interface now takes larger frames than at open: size the slots for the
    /// current MTU, or for the largest possible frame when the MTU does not explain it.
    fn grow_rx_slots(&mut self) {
        let by_mtu = ControlSocket::new().and_then(|c| c.mtu(&self.name)).map(rx_slot_len_for).unwrap_or(0);
        let len = if by_mtu > self.rx_slot_len { by_mtu } else { VNET_HDR_LEN + RX_MAX_FRAME };
        if len > self.rx_slot_len {
            self.rx_slot_len = len;
            self.rx_buf = vec![0; RX_SLOTS * len];
        }
    }
}

fn rx_slot_len_for(mtu: usize) -> usize {
    VNET_HDR_LEN + (mtu.max(1500) + RX_HEADROOM).min(RX_MAX_FRAME)
}

impl PortBackend for AfPacketPort {
    fn name(&self) -> &str {
        &self.name
    }

    #[allow(unsafe_code)]
    fn recv_batch(&mut self, out: &mut Vec<Vec<u8>>, max: usize) -> io::Result<usize> {
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

    #[allow(unsafe_code)]
    fn send_batch(&mut self, frames: &[Vec<u8>]) -> io::Result<usize> {
        let count = frames.len().min(TX_BATCH);
        if count == 0 {
            return Ok(0);
        }
        // A zeroed virtio_net_hdr: no checksum to complete, no segmentation.
        let mut vnet_hdr = [0u8; VNET_HDR_LEN];
        let vnet_hdr_ptr = vnet_hdr.as_mut_ptr();
        // SAFETY: iovec and mmsghdr are plain C structs; all-zero is valid for both.
        let mut iovs: [[libc::iovec; 2]; TX_BATCH] = unsafe { mem::zeroed() };
        // SAFETY: as above.
        let mut msgs: [libc::mmsghdr; TX_BATCH] = unsafe { mem::zeroed() };
        for ((iov, msg), frame) in iovs.iter_mut().zip(msgs.iter_mut()).zip(frames) {
            iov[0].iov_base = vnet_hdr_ptr.cast();
            iov[0].iov_len = VNET_HDR_LEN;
            // The kernel only reads from a send iovec; the cast to *mut is what the C type demands.
            iov[1].iov_base = frame.as_ptr().cast_mut().cast();
            iov[1].iov_len = frame.len();
            msg.msg_hdr.msg_iov = iov.as_mut_ptr();
            msg.msg_hdr.msg_iovlen = 2;
        }
        // SAFETY: `msgs[..count]` point to iovecs over `vnet_hdr` and the caller's frames, all alive and
        // unmodified for the duration of the call; no address is given (the socket is bound).
        let sent = unsafe {
            libc::sendmmsg(self.fd.as_raw_fd(), msgs.as_mut_ptr(), count as libc::c_uint, libc::MSG_DONTWAIT)
        };
        if sent >= 0 {
            return Ok(sent as usize);
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EAGAIN | libc::EINTR) => Ok(0),
            // The first frame can never go (longer than the MTU, shorter than a header) or the kernel
            // dropped it on the way out (a full qdisc): it is gone either way, so it counts as taken and the
            // rest of the batch is not held up behind it.
            Some(libc::EMSGSIZE | libc::EINVAL | libc::ENOBUFS) => {
                if self.tx_dropped == 0 {
                    tracing::warn!(interface = %self.name, len = frames[0].len(), "frame not sent: {e}");
                }
                self.tx_dropped += 1;
                Ok(1)
            }
            _ => Err(e),
        }
    }

    fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
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
fn with_vlan(frame: &[u8], vlan: Option<StrippedVlan>) -> Vec<u8> {
    match vlan {
        Some((tpid, tci)) if frame.len() >= 12 => {
            let mut out = Vec::with_capacity(frame.len() + 4);
            out.extend_from_slice(&frame[..12]);
            out.extend_from_slice(&tpid.to_be_bytes());
            out.extend_from_slice(&tci.to_be_bytes());
            out.extend_from_slice(&frame[12..]);
            out
        }
        _ => frame.to_vec(),
    }
}

/// The index of `interface`, or `interface "NAME" not found`.
#[allow(unsafe_code)]
pub(crate) fn if_index(interface: &str) -> io::Result<u32> {
    check_name(interface)?;
    let c_name = CString::new(interface).map_err(|_| bad_name(interface))?;
    // SAFETY: `c_name` is a valid NUL-terminated string for the duration of the call.
    let index = unsafe { libc::if_nametoindex(c_name.as_ptr()) };
    if index == 0 {
        return Err(io::Error::new(io::ErrorKind::NotFound, format!("interface {interface:?} not found")));
    }
    Ok(index)
}

fn check_name(interface: &str) -> io::Result<()> {
    if interface.is_empty() || interface.len() >= libc::IFNAMSIZ || interface.contains(['\0', '/']) {
        return Err(bad_name(interface));
    }
    Ok(())
}

fn bad_name(interface: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("{interface:?}: not an interface name (1-15 characters)"),
    )
}

/// An AF_PACKET socket bound to `ifindex`, non-blocking, promiscuous, blind to outgoing frames, with big
/// buffers and `PACKET_VNET_HDR`; with `PACKET_AUXDATA` when `auxdata` (pnet reads with plain `recvfrom`,
/// which has no room for control messages).
#[allow(unsafe_code)]
pub(crate) fn packet_socket(interface: &str, ifindex: u32, auxdata: bool) -> io::Result<OwnedFd> {
    let context =
        |what: &str, e: io::Error| io::Error::new(e.kind(), format!("interface {interface:?}: {what}: {e}"));
    // Protocol 0 until bound: the socket sees no traffic from other interfaces meanwhile.
    // SAFETY: plain system call with constant arguments.
    let raw = unsafe {
        libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, 0)
    };
    if raw < 0 {
        return Err(context("AF_PACKET socket (needs CAP_NET_RAW)", io::Error::last_os_error()));
    }
    // SAFETY: `raw` is a fresh descriptor that nothing else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    let one: libc::c_int = 1;
    setsockopt(&fd, libc::SOL_PACKET, libc::PACKET_IGNORE_OUTGOING, &one).map_err(|e| {
        if e.raw_os_error() == Some(libc::ENOPROTOOPT) {
            io::Error::new(
                io::ErrorKind::Unsupported,
                format!("interface {interface:?}: the kernel lacks PACKET_IGNORE_OUTGOING (Linux 4.20 or later is needed)"),
            )
        } else {
            context("PACKET_IGNORE_OUTGOING", e)
        }
    })?;
    setsockopt(&fd, libc::SOL_PACKET, libc::PACKET_VNET_HDR, &one)
        .map_err(|e| context("PACKET_VNET_HDR", e))?;
    if auxdata {
        setsockopt(&fd, libc::SOL_PACKET, libc::PACKET_AUXDATA, &one)
            .map_err(|e| context("PACKET_AUXDATA", e))?;
    }
    for (force, plain) in [(libc::SO_RCVBUFFORCE, libc::SO_RCVBUF), (libc::SO_SNDBUFFORCE, libc::SO_SNDBUF)] {
        // FORCE needs CAP_NET_ADMIN; without it the plain option is capped at rmem_max/wmem_max.
        if setsockopt(&fd, libc::SOL_SOCKET, force, &SOCKET_BUFFER_BYTES).is_err() {
            setsockopt(&fd, libc::SOL_SOCKET, plain, &SOCKET_BUFFER_BYTES)
                .map_err(|e| context("socket buffer size", e))?;
        }
    }
    let ifindex = ifindex as libc::c_int;
    let mreq = libc::packet_mreq {
        mr_ifindex: ifindex,
        mr_type: libc::PACKET_MR_PROMISC as libc::c_ushort,
        mr_alen: 0,
        mr_address: [0; 8],
    };
    setsockopt(&fd, libc::SOL_PACKET, libc::PACKET_ADD_MEMBERSHIP, &mreq)
        .map_err(|e| context("promiscuous mode", e))?;
    let addr = libc::sockaddr_ll {
        sll_family: libc::AF_PACKET as libc::c_ushort,
        sll_protocol: (libc::ETH_P_ALL as u16).to_be(),
        sll_ifindex: ifindex,
        sll_hatype: 0,
        sll_pkttype: 0,
        sll_halen: 0,
        sll_addr: [0; 8],
    };
    // SAFETY: `addr` is a valid sockaddr_ll and the length passed is its size.
    let r = unsafe {
        libc::bind(
            fd.as_raw_fd(),
            (&addr as *const libc::sockaddr_ll).cast(),
            mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
        )
    };
    if r < 0 {
        return Err(context("bind", io::Error::last_os_error()));
    }
    Ok(fd)
}

#[allow(unsafe_code)]
fn setsockopt<T>(fd: &OwnedFd, level: libc::c_int, name: libc::c_int, value: &T) -> io::Result<()> {
    // SAFETY: `value` points to a live T and the length passed is its size; the kernel only reads it.
    let r = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            name,
            (value as *const T).cast(),
            mem::size_of::<T>() as libc::socklen_t,
        )
    };
    if r < 0 { Err(io::Error::last_os_error()) } else { Ok(()) }
}

/// A datagram socket used only for interface ioctls (flags, MTU, ethtool) in the calling thread's
/// network namespace.
pub(crate) struct ControlSocket(OwnedFd);

impl ControlSocket {
    #[allow(unsafe_code)]
    pub(crate) fn new() -> io::Result<ControlSocket> {
        // SAFETY: plain system call with constant arguments.
        let raw = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is a fresh descriptor that nothing else owns.
        Ok(ControlSocket(unsafe { OwnedFd::from_raw_fd(raw) }))
    }

    /// Sets IFF_UP (and leaves the other flags as they are).
    #[allow(unsafe_code)]
    pub(crate) fn set_up(&self, interface: &str) -> io::Result<()> {
        let context =
            |e: io::Error| io::Error::new(e.kind(), format!("interface {interface:?}: bringing it up: {e}"));
        let mut ifr = ifreq(interface)?;
        self.ioctl(libc::SIOCGIFFLAGS, &mut ifr).map_err(context)?;
        // SAFETY: SIOCGIFFLAGS filled the `ifru_flags` member of the union.
        let flags = unsafe { ifr.ifr_ifru.ifru_flags };
        if flags & libc::IFF_UP as libc::c_short != 0 {
            return Ok(());
        }
        ifr.ifr_ifru.ifru_flags = flags | libc::IFF_UP as libc::c_short;
        self.ioctl(libc::SIOCSIFFLAGS, &mut ifr).map_err(context)
    }

    #[allow(unsafe_code)]
    pub(crate) fn mtu(&self, interface: &str) -> io::Result<usize> {
        let mut ifr = ifreq(interface)?;
        self.ioctl(libc::SIOCGIFMTU, &mut ifr).map_err(|e| {
            io::Error::new(e.kind(), format!("interface {interface:?}: reading the MTU: {e}"))
        })?;
        // SAFETY: SIOCGIFMTU filled the `ifru_mtu` member of the union.
        Ok(unsafe { ifr.ifr_ifru.ifru_mtu }.max(0) as usize)
    }

    /// The hardware (MAC) address of `interface`.
    #[allow(unsafe_code)]
    pub(crate) fn hardware_address(&self, interface: &str) -> io::Result<[u8; 6]> {
        let mut ifr = ifreq(interface)?;
        self.ioctl(libc::SIOCGIFHWADDR, &mut ifr).map_err(|e| {
            io::Error::new(e.kind(), format!("interface {interface:?}: reading the MAC address: {e}"))
        })?;
        // SAFETY: SIOCGIFHWADDR filled the `ifru_hwaddr` member of the union.
        let sa = unsafe { ifr.ifr_ifru.ifru_hwaddr };
        let mut mac = [0u8; 6];
        for (dst, &src) in mac.iter_mut().zip(sa.sa_data.iter()) {
            *dst = src as u8;
        }
        Ok(mac)
    }

    /// GRO and LRO off, so the kernel hands over frames as they arrived; devices without them are fine.
    pub(crate) fn disable_gro_lro(&self, interface: &str) {
        if let Err(e) = self.ethtool_set(interface, ethtool::SGRO, 0) {
            tracing::debug!(interface, "GRO not turned off: {e}");
        }
        match self.ethtool_get(interface, ethtool::GFLAGS) {
            Ok(flags) if flags & ethtool::FLAG_LRO != 0 => {
                if let Err(e) = self.ethtool_set(interface, ethtool::SFLAGS, flags & !ethtool::FLAG_LRO) {
                    tracing::warn!(interface, "LRO not turned off: {e}");
                }
            }
            Ok(_) => {}
            Err(e) => tracing::debug!(interface, "LRO state unknown: {e}"),
        }
    }

    /// A legacy ethtool "set" command; EOPNOTSUPP (the device has no such feature) is success.
    pub(crate) fn ethtool_set(&self, interface: &str, cmd: u32, data: u32) -> io::Result<()> {
        let mut value = EthtoolValue { cmd, data };
        match self.ethtool(interface, &mut value) {
            Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP) => Ok(()),
            other => other,
        }
    }

    pub(crate) fn ethtool_get(&self, interface: &str, cmd: u32) -> io::Result<u32> {
        let mut value = EthtoolValue { cmd, data: 0 };
        self.ethtool(interface, &mut value)?;
        Ok(value.data)
    }

    fn ethtool(&self, interface: &str, value: &mut EthtoolValue) -> io::Result<()> {
        let mut ifr = ifreq(interface)?;
        ifr.ifr_ifru.ifru_data = (value as *mut EthtoolValue).cast();
        self.ioctl(libc::SIOCETHTOOL, &mut ifr)
    }

    #[allow(unsafe_code)]
    fn ioctl(&self, request: libc::c_ulong, ifr: &mut libc::ifreq) -> io::Result<()> {
        // SAFETY: every request used here takes a `struct ifreq *`; `ifr` is live and exclusively borrowed,
        // and for SIOCETHTOOL its data pointer refers to a live ethtool_value the caller holds.
        let r = unsafe { libc::ioctl(self.0.as_raw_fd(), request as _, ifr as *mut libc::ifreq) };
        if r < 0 { Err(io::Error::last_os_error()) } else { Ok(()) }
    }
}

/// A zeroed `ifreq` naming `interface`.
#[allow(unsafe_code)]
pub(crate) fn ifreq(interface: &str) -> io::Result<libc::ifreq> {
    check_name(interface)?;
    // SAFETY: ifreq is a name array and a union of integers, arrays and pointers; all-zero is valid.
    let mut ifr: libc::ifreq = unsafe { mem::zeroed() };
    for (dst, &src) in ifr.ifr_name.iter_mut().zip(interface.as_bytes()) {
        *dst = src as libc::c_char;
    }
    Ok(ifr)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::netns::testing::{
        kernel_udp_arrives_with_valid_checksum, lab, numbered_frame, offload_lab, recv_frames, recv_nothing,
        sample_frames, send_all,
    };
    use crate::io::{PortSpec, open};
    use crate::wire::EtherType;
    use std::net::{Ipv4Addr, UdpSocket};
    use std::time::Duration;

    fn port(name: &str) -> AfPacketPort {
        AfPacketPort::open(name).unwrap_or_else(|e| panic!("opening {name}: {e}"))
    }

    #[test]
    fn frames_cross_a_veth_both_ways_byte_for_byte() {
        let _ns = lab();
        let mut sw = port("sw0");
        let mut host = port("h0");
        let frames = sample_frames();
        send_all(&mut sw, &frames);
        assert_eq!(recv_frames(&mut host, frames.len()), frames);
        send_all(&mut host, &frames);
        assert_eq!(recv_frames(&mut sw, frames.len()), frames, "PFC and 802.1Q frames must arrive unchanged");
        assert!(recv_nothing(&mut sw, Duration::from_millis(50)).is_empty());
    }

    #[test]
    fn open_dispatches_on_the_spec() {
        let _ns = lab();
        let mut sw = open(&PortSpec::parse("sw0").unwrap()).unwrap();
        let mut host = open(&PortSpec::parse("h0").unwrap()).unwrap();
        assert_eq!(sw.name(), "sw0");
        let frames = sample_frames();
        send_all(&mut *host, &frames);
        assert_eq!(recv_frames(&mut *sw, frames.len()), frames);
    }

    #[test]
    fn own_transmissions_are_not_read_back() {
        let _ns = lab();
        let mut sw = port("sw0");
        let mut host = port("h0");
        send_all(&mut sw, &sample_frames());
        assert_eq!(recv_frames(&mut host, 4).len(), 4);
        assert!(recv_nothing(&mut sw, Duration::from_millis(100)).is_empty());
    }

    #[test]
    fn jumbo_frames_cross_at_mtu_9100() {
        let ns = lab();
        for dev in ["sw0", "h0"] {
            ns.ip(&["link", "set", "dev", dev, "mtu", "9100"]).unwrap();
        }
        let mut sw = port("sw0");
        let mut host = port("h0");
        let jumbo = vec![numbered_frame(9000, 1), numbered_frame(9000 + 14, 2)];
        send_all(&mut sw, &jumbo);
        assert_eq!(recv_frames(&mut host, 2), jumbo);
        send_all(&mut host, &jumbo);
        assert_eq!(recv_frames(&mut sw, 2), jumbo);
    }

    #[test]
    fn mtu_raised_after_open_costs_one_frame_then_fits() {
        let ns = lab();
        let mut sw = port("sw0");
        let mut host = port("h0");
        for dev in ["sw0", "h0"] {
            ns.ip(&["link", "set", "dev", dev, "mtu", "9100"]).unwrap();
        }
        send_all(&mut host, &[numbered_frame(9000, 1)]);
        assert!(recv_nothing(&mut sw, Duration::from_millis(100)).is_empty());
        assert_eq!(sw.rx_truncated(), 1);
        send_all(&mut host, &[numbered_frame(9000, 2)]);
        assert_eq!(recv_frames(&mut sw, 1), vec![numbered_frame(9000, 2)]);
    }

    #[test]
    fn oversized_frame_is_dropped_without_holding_up_the_batch() {
        let _ns = lab();
        let mut sw = port("sw0");
        let mut host = port("h0");
        let frames = vec![numbered_frame(3000, 1), numbered_frame(100, 2)];
        send_all(&mut sw, &frames);
        assert_eq!(sw.tx_dropped(), 1);
        assert_eq!(recv_frames(&mut host, 1), vec![numbered_frame(100, 2)]);
    }

    #[test]
    fn batch_of_200_arrives_in_order() {
        let _ns = lab();
        let mut sw = port("sw0");
        let mut host = port("h0");
        let frames: Vec<Vec<u8>> = (0..200).map(|n| numbered_frame(64 + (n as usize % 7) * 100, n)).collect();
        send_all(&mut host, &frames);
        assert_eq!(recv_frames(&mut sw, 200), frames);
        send_all(&mut sw, &frames);
        assert_eq!(recv_frames(&mut host, 200), frames);
    }

    /// The kernel's own UDP, sent from `h0` with TX checksum offload on (veth's default), leaves only the
    /// pseudo-header sum in the checksum field; the backend on `sw0` must complete it.
    #[test]
    fn kernel_udp_with_tx_checksum_offload_arrives_with_a_valid_checksum() {
        let _ns = offload_lab();
        let mut sw = port("sw0");
        kernel_udp_arrives_with_valid_checksum(&mut sw);
        assert_eq!(sw.checksums_completed(), 1, "veth with TX offload should hand over a partial checksum");
    }

    /// UDP GSO (`UDP_SEGMENT`) from `h0`: the 3-segment super-frame crosses the veth unsegmented; the backend
    /// drops and counts it rather than forwarding a 3 KB "frame".
    #[test]
    #[allow(unsafe_code)]
    fn gso_super_frames_are_dropped_and_counted() {
        let _ns = offload_lab();
        let mut sw = port("sw0");
        let socket = UdpSocket::bind("10.9.0.1:4000").unwrap();
        let segment: libc::c_int = 1000;
        // SAFETY: a valid socket, a live c_int and its size.
        let r = unsafe {
            libc::setsockopt(
                std::os::fd::AsRawFd::as_raw_fd(&socket),
                libc::SOL_UDP,
                libc::UDP_SEGMENT,
                (&segment as *const libc::c_int).cast(),
                mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        assert_eq!(r, 0, "UDP_SEGMENT: {}", io::Error::last_os_error());
        socket.send_to(&[7u8; 3000], "10.9.0.2:4791").unwrap();
        let frames = recv_nothing(&mut sw, Duration::from_millis(200));
        let lengths: Vec<usize> = frames.iter().map(Vec::len).collect();
        assert!(frames.is_empty(), "{} frame(s) arrived, lengths {lengths:?}", frames.len());
        assert_eq!((sw.gso_dropped(), sw.rx_truncated()), (1, 0));
        // Single frames still pass.
        socket.send_to(&[7u8; 500], "10.9.0.2:4791").unwrap();
        assert_eq!(recv_frames(&mut sw, 1).len(), 1);
    }

    #[test]
    fn open_brings_the_interface_up_and_promiscuous_until_closed() {
        let ns = lab();
        ns.ip(&["link", "set", "dev", "sw0", "down"]).unwrap();
        // A packet socket's promiscuity is a counter (`ip -d`), not the PROMISC flag an administrator sets.
        let show = || {
            String::from_utf8_lossy(&ns.ip(&["-d", "-o", "link", "show", "dev", "sw0"]).unwrap().stdout)
                .into_owned()
        };
        let sw = port("sw0");
        let link = show();
        assert!(link.contains(",UP") && link.contains("promiscuity 1"), "{link}");
        drop(sw);
        assert!(show().contains("promiscuity 0"), "{}", show());
    }

    #[test]
    fn missing_interface_fails_fast_with_its_name() {
        let _ns = lab();
        let start = std::time::Instant::now();
        let err = open(&PortSpec::Interface("veth9".into())).err().expect("veth9 does not exist");
        assert_eq!(err.to_string(), r#"interface "veth9" not found"#);
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
        assert!(start.elapsed() < Duration::from_secs(1));
    }

    // A UDP/IPv4 frame as a sender with TX offload leaves it: the checksum field holds the folded
    // pseudo-header sum (not complemented); completing it must give what a full computation gives.
    #[test]
    fn partial_checksum_is_completed_like_a_nic() {
        use crate::wire::build;
        use crate::wire::{EthernetAddress, Ipv4Repr, ip::Protocol};
        let (src, dst) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2));
        let datagram = build::udp_v4(src, dst, 1234, 4791, b"hello, lossless");
        let header = Ipv4Repr {
            src_addr: src,
            dst_addr: dst,
            protocol: Protocol::Udp,
            payload_len: datagram.len(),
            ttl: 64,
            dscp: 0,
            ecn: crate::wire::ip::Ecn::NotEct,
            ident: 1,
            dont_frag: true,
            more_frags: false,
            frag_offset: 0,
        };
        let packet = build::ipv4(&header, &datagram);
        let full = build::ethernet(
            EthernetAddress([2, 0, 0, 0, 0, 1]),
            EthernetAddress([2, 0, 0, 0, 0, 2]),
            None,
            EtherType::Ipv4,
            &packet,
        );
        let csum_start = 14 + 20;
        let mut partial = full.clone();
        let udp_len = datagram.len() as u16;
        let mut pseudo = Vec::new();
        pseudo.extend_from_slice(&src.octets());
        pseudo.extend_from_slice(&dst.octets());
        pseudo.extend_from_slice(&[0, 17]);
        pseudo.extend_from_slice(&udp_len.to_be_bytes());
        partial[csum_start + 6..csum_start + 8].copy_from_slice(&checksum::sum(&pseudo).to_be_bytes());
        let mut buf = vec![0u8; VNET_HDR_LEN];
        buf[0] = VIRTIO_NET_HDR_F_NEEDS_CSUM;
        buf[6..8].copy_from_slice(&(csum_start as u16).to_ne_bytes());
        buf[8..10].copy_from_slice(&6u16.to_ne_bytes());
        buf.extend_from_slice(&partial[..full.len()]);
        let mut stats = RxStats::default();
        let frame = take_vnet_frame("test", &mut buf, None, &mut stats).unwrap();
        assert_eq!(frame, full);
        assert_eq!(stats.checksums_completed, 1);
        // Offsets outside the frame leave it alone.
        let mut short = vec![0u8; 20];
        assert!(!complete_checksum(&mut short, 18, 6));
    }

    #[test]
    fn stripped_vlan_tag_is_put_back_after_the_addresses() {
        let untagged: Vec<u8> = (0..20).collect();
        let tagged = with_vlan(&untagged, Some((0x8100, 0x6064)));
        assert_eq!(&tagged[..12], &untagged[..12]);
        assert_eq!(&tagged[12..16], &[0x81, 0x00, 0x60, 0x64]);
        assert_eq!(&tagged[16..], &untagged[12..]);
        assert_eq!(with_vlan(&untagged, None), untagged);
    }
}
