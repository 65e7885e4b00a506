//! The fast path: one AF_PACKET `SOCK_RAW` socket per port, bound to the interface. Frames are received
//! from a `PACKET_RX_RING` (TPACKET_V2, 8 MiB of MTU-sized slots) mapped into the process — no system call
//! and no copy into a socket buffer per frame — and sent through a `PACKET_TX_RING` on a second, send-only
//! socket: frames are copied into slots and one `send` per batch hands them all to the kernel (+40 % 64-byte
//! forwarding over one `sendmmsg` per batch on a 2-core VM). `LOSSLESS_AFPACKET_TX=sendmmsg` selects the
//! `sendmmsg` path, which is also the fallback when the ring cannot be set up and for a frame larger than a
//! slot.
//! `LOSSLESS_AFPACKET_RX=recvmmsg` (or [`AfPacketPort::open_with`]) selects the older `recvmmsg` receive
//! path, which does the same fix-ups below from the packet's control messages instead of the ring's slot
//! headers (`tp_status` / `tp_vlan_tci`, and the `virtio_net_hdr` the kernel writes just before the frame).
//! Frames the kernel drops because the ring (or socket buffer) is full are read from `PACKET_STATISTICS`,
//! summed in [`AfPacketPort::rx_kernel_drops`] and warned about once a second while they grow.
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
//! PAUSE frames (01:80:C2:00:00:01) arrive and leave as plain frames (`docs/pfc.md`, "On Linux and veth").
//!
//! `recv_batch` and `send_batch` never block. When the kernel has nothing to give or no room to take,
//! both return `Ok(0)` (never `Err(WouldBlock)`), so a caller needs only one "nothing happened" case.

use super::PortBackend;
use crate::wire::checksum;
use std::cell::Cell;
use std::ffi::CString;
use std::io;
use std::mem;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// `struct virtio_net_hdr` (without `num_buffers`), prepended to every frame on a `PACKET_VNET_HDR` socket.
pub(crate) const VNET_HDR_LEN: usize = 10;
/// The L4 checksum from `csum_start` on is partial: complete it before the frame leaves the host.
const VIRTIO_NET_HDR_F_NEEDS_CSUM: u8 = 1;
const VIRTIO_NET_HDR_GSO_NONE: u8 = 0;

/// Frames taken per `recvmmsg` (the runtime asks for 64).
const RX_SLOTS: usize = 64;
/// Batches at least this long go through the TX ring (when there is one), shorter ones by `sendmmsg`.
const TX_RING_MIN_BATCH: usize = 8;
/// Frames given per `sendmmsg`.
const TX_BATCH: usize = 128;
/// Room per receive slot beyond the MTU: Ethernet header, two VLAN tags, slack.
const RX_HEADROOM: usize = 14 + 2 * 4 + 16;
/// The largest frame any interface can hand over (and the slot size once a frame was truncated).
const RX_MAX_FRAME: usize = 65536;
/// Socket buffer sizes asked for.
const SOCKET_BUFFER_BYTES: libc::c_int = 8 << 20;
/// `TPACKET_V2` for `PACKET_VERSION`.
const TPACKET_V2: libc::c_int = 1;
/// Receive ring: blocks of this size (a frame never spans two) ...
const RING_BLOCK_BYTES: usize = 256 << 10;
/// ... this many bytes in all (5120 slots at MTU 1500).
const RING_BYTES: usize = 8 << 20;
/// How often `recv_batch` reads the kernel's drop count.
const DROP_CHECK_INTERVAL: Duration = Duration::from_secs(1);
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

/// How a port takes received frames from the kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RxMode {
    /// A `PACKET_RX_RING` (TPACKET_V2) shared with the kernel: no system call per batch (the default).
    Ring,
    /// `recvmmsg` into our own buffers (selected with `LOSSLESS_AFPACKET_RX=recvmmsg`).
    Recvmmsg,
}

impl RxMode {
    /// `LOSSLESS_AFPACKET_RX=recvmmsg` selects the copying path; anything else the ring.
    pub fn from_env() -> RxMode {
        match std::env::var("LOSSLESS_AFPACKET_RX").as_deref() {
            Ok("recvmmsg") => RxMode::Recvmmsg,
            _ => RxMode::Ring,
        }
    }
}

/// How a port hands frames to the kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxMode {
    /// A `PACKET_TX_RING` on a send-only socket, one `send` per batch (the default; `sendmmsg` when the ring
    /// cannot be set up).
    Ring,
    /// `sendmmsg` on the receive socket (selected with `LOSSLESS_AFPACKET_TX=sendmmsg`).
    Sendmmsg,
}

impl TxMode {
    /// `LOSSLESS_AFPACKET_TX=sendmmsg` selects `sendmmsg`; anything else the ring.
    pub fn from_env() -> TxMode {
        match std::env::var("LOSSLESS_AFPACKET_TX").as_deref() {
            Ok("sendmmsg") => TxMode::Sendmmsg,
            _ => TxMode::Ring,
        }
    }
}

/// A port on an existing interface through a batched AF_PACKET socket.
pub struct AfPacketPort {
    name: String,
    fd: OwnedFd,
    /// The receive ring, when the port reads through one (else `recvmmsg` into `rx_buf`).
    ring: Option<PacketRing>,
    /// `RX_SLOTS` receive slots of `rx_slot_len` bytes each, one allocation (the `recvmmsg` path).
    rx_buf: Vec<u8>,
    rx_slot_len: usize,
    /// One control-message buffer per slot (u64 words keep `cmsghdr` aligned).
    rx_cmsg: Vec<[u64; CMSG_SLOT_WORDS]>,
    stats: RxStats,
    tx_dropped: u64,
    /// A `PACKET_TX_RING` on a second, send-only socket (the default; `LOSSLESS_AFPACKET_TX=sendmmsg`
    /// sends with `sendmmsg` on the receive socket instead).
    tx_ring: Option<TxRing>,
    /// Frames the kernel dropped at this socket (ring or buffer full), summed from `PACKET_STATISTICS`.
    kernel_drops: Cell<u64>,
    /// When `recv_batch` last read `PACKET_STATISTICS`.
    drops_checked: Instant,
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
        AfPacketPort::open_with_modes(interface, RxMode::from_env(), TxMode::from_env())
    }

    /// [`AfPacketPort::open`] with the receive path chosen by the caller.
    pub fn open_with(interface: &str, mode: RxMode) -> io::Result<AfPacketPort> {
        AfPacketPort::open_with_modes(interface, mode, TxMode::from_env())
    }

    /// [`AfPacketPort::open`] with both paths chosen by the caller.
    pub fn open_with_modes(interface: &str, mode: RxMode, tx: TxMode) -> io::Result<AfPacketPort> {
        AfPacketPort::open_inner(interface, mode, tx, RING_BYTES)
    }

    /// A port for a capture or test host that must absorb long bursts without reading constantly: a
    /// receive ring of `rx_ring_bytes` (the default is 8 MiB, some 5,000 MTU-1500 slots), `sendmmsg` sends.
    pub fn open_for_capture(interface: &str, rx_ring_bytes: usize) -> io::Result<AfPacketPort> {
        AfPacketPort::open_inner(interface, RxMode::Ring, TxMode::Sendmmsg, rx_ring_bytes)
    }

    fn open_inner(interface: &str, mode: RxMode, tx: TxMode, ring_bytes: usize) -> io::Result<AfPacketPort> {
        let ifindex = if_index(interface)?;
        let ctl = ControlSocket::new()?;
        ctl.set_up(interface)?;
        ctl.disable_gro_lro(interface);
        let mtu = ctl.mtu(interface)?;
        let fd = packet_socket(interface, ifindex, true)?;
        let (ring, rx_slot_len) = match mode {
            RxMode::Ring => {
                let context = |e: io::Error| {
                    io::Error::new(e.kind(), format!("interface {interface:?}: PACKET_RX_RING: {e}"))
                };
                setsockopt(&fd, libc::SOL_PACKET, libc::PACKET_VERSION, &TPACKET_V2).map_err(context)?;
                let frame_size = ring_frame_size_for(mtu);
                let ring = PacketRing::new_kind(&fd, frame_size, ring_bytes, libc::PACKET_RX_RING);
                (Some(ring.map_err(context)?), 0)
            }
            RxMode::Recvmmsg => (None, rx_slot_len_for(mtu)),
        };
        let slots = if ring.is_some() { 0 } else { RX_SLOTS };
        Ok(AfPacketPort {
            name: interface.to_owned(),
            fd,
            ring,
            rx_buf: vec![0; slots * rx_slot_len],
            rx_slot_len,
            rx_cmsg: vec![[0; CMSG_SLOT_WORDS]; slots],
            stats: RxStats::default(),
            tx_dropped: 0,
            tx_ring: if tx == TxMode::Sendmmsg {
                None
            } else {
                match TxRing::new(interface, ifindex, mtu) {
                    Ok(ring) => Some(ring),
                    Err(e) => {
                        tracing::warn!("{e}; sending with sendmmsg instead");
                        None
                    }
                }
            },
            kernel_drops: Cell::new(0),
            drops_checked: Instant::now(),
        })
    }

    /// Which receive path the port uses.
    pub fn rx_mode(&self) -> RxMode {
        if self.ring.is_some() { RxMode::Ring } else { RxMode::Recvmmsg }
    }

    /// Which send path the port uses.
    pub fn tx_mode(&self) -> TxMode {
        if self.tx_ring.is_some() { TxMode::Ring } else { TxMode::Sendmmsg }
    }

    /// Slots of the receive ring (0 without one): how many frames the socket holds before the kernel drops.
    pub fn rx_ring_slots(&self) -> usize {
        self.ring.as_ref().map_or(0, |r| r.frame_nr)
    }

    /// Frames the kernel dropped at this port's socket because the switch did not take them in time (a full
    /// ring or socket buffer): invisible to every other counter.
    pub fn rx_kernel_drops(&self) -> u64 {
        self.poll_kernel_drops();
        self.kernel_drops.get()
    }

    /// Adds the kernel's drop count since the last read (`PACKET_STATISTICS` resets on read) to the total;
    /// returns what was added.
    #[allow(unsafe_code)]
    fn poll_kernel_drops(&self) -> u64 {
        // SAFETY: tpacket_stats is two u32s; all-zero is valid.
        let mut st: libc::tpacket_stats = unsafe { mem::zeroed() };
        let mut len = mem::size_of::<libc::tpacket_stats>() as libc::socklen_t;
        // SAFETY: `st` and `len` are live and describe a buffer of `len` bytes the kernel may fill.
        let r = unsafe {
            libc::getsockopt(
                self.fd.as_raw_fd(),
                libc::SOL_PACKET,
                libc::PACKET_STATISTICS,
                (&mut st as *mut libc::tpacket_stats).cast(),
                &mut len,
            )
        };
        if r < 0 {
            return 0;
        }
        let drops = u64::from(st.tp_drops);
        self.kernel_drops.set(self.kernel_drops.get() + drops);
        drops
    }

    /// Once a second at most: read the kernel's drop count and warn when it grew.
    fn check_kernel_drops(&mut self) {
        let now = Instant::now();
        if now.duration_since(self.drops_checked) < DROP_CHECK_INTERVAL {
            return;
        }
        self.drops_checked = now;
        let new = self.poll_kernel_drops();
        if new > 0 {
            tracing::warn!(
                interface = %self.name,
                dropped = new,
                total = self.kernel_drops.get(),
                "frames dropped by the kernel at the receive socket: the switch is not keeping up"
            );
        }
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

    /// Takes up to `max` slots the kernel has filled from the ring, handing each back at once.
    fn recv_ring(&mut self, out: &mut Vec<Vec<u8>>, max: usize) -> usize {
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
    fn grow_ring(&mut self) {
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
    fn recv_mmsg(&mut self, out: &mut Vec<Vec<u8>>, max: usize) -> io::Result<usize> {
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

const fn tpacket_align(x: usize) -> usize {
    (x + libc::TPACKET_ALIGNMENT - 1) & !(libc::TPACKET_ALIGNMENT - 1)
}

/// Where `tpacket_rcv` puts a frame's network header in a ring slot (SOCK_RAW, link header ≤ 16 bytes,
/// `PACKET_VNET_HDR`): after the tpacket2_hdr + sockaddr_ll, 16 bytes for the link header, and the
/// virtio_net_hdr, which sits right before the link header (`tp_mac - VNET_HDR_LEN`).
const RING_NET_OFFSET: usize = tpacket_align(libc::TPACKET2_HDRLEN + 16) + VNET_HDR_LEN;

/// A ring slot big enough for a frame of the interface's MTU (+ headroom) after the slot's headers.
fn ring_frame_size_for(mtu: usize) -> usize {
    tpacket_align(RING_NET_OFFSET + (mtu.max(1500) + RX_HEADROOM).min(RX_MAX_FRAME))
}

/// A `PACKET_RX_RING` or `PACKET_TX_RING` (TPACKET_V2) mapped into our address space. TPACKET_V2 rather
/// than V3: a V3 block is handed over only when full or when its timer (whole milliseconds, ≥ 1 ms) retires
/// it, which at low rates delays every frame by up to that long; a V2 slot is ours as soon as the kernel
/// has written it.
struct PacketRing {
    base: *mut u8,
    len: usize,
    block_size: usize,
    frame_size: usize,
    frames_per_block: usize,
    frame_nr: usize,
    /// The next slot to look at: the kernel takes slots in order, so on receive it is the oldest unread
    /// one, on transmit the next to fill.
    head: usize,
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
    fn new_kind(fd: &OwnedFd, frame_size: usize, bytes: usize, kind: libc::c_int) -> io::Result<PacketRing> {
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
    fn rebuild(&mut self, fd: &OwnedFd, frame_size: usize) -> io::Result<()> {
        let bytes = self.len;
        self.unmap();
        let none = libc::tpacket_req { tp_block_size: 0, tp_block_nr: 0, tp_frame_size: 0, tp_frame_nr: 0 };
        setsockopt(fd, libc::SOL_PACKET, libc::PACKET_RX_RING, &none)?;
        *self = PacketRing::new_kind(fd, frame_size, bytes, libc::PACKET_RX_RING)?;
        Ok(())
    }

    #[allow(unsafe_code)]
    fn unmap(&mut self) {
        if !self.base.is_null() {
            // SAFETY: `base`/`len` are the mapping made in `new`, unmapped once (base is nulled after).
            unsafe { libc::munmap(self.base.cast(), self.len) };
            self.base = std::ptr::null_mut();
        }
    }

    /// Slot `i`'s first byte.
    fn slot(&self, i: usize) -> *mut u8 {
        let offset =
            (i / self.frames_per_block) * self.block_size + (i % self.frames_per_block) * self.frame_size;
        self.base.wrapping_add(offset)
    }

    /// Slot `i`'s status word (the first field of its tpacket2_hdr), shared with the kernel.
    #[allow(unsafe_code)]
    fn status(&self, i: usize) -> &AtomicU32 {
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

/// Offset of a frame's first byte in a TX ring slot (TPACKET_V2, no PACKET_TX_HAS_OFF): the kernel reads
/// from `tp_hdrlen − sizeof(sockaddr_ll)`, i.e. right after the aligned tpacket2_hdr.
const TX_DATA_OFFSET: usize = libc::TPACKET2_HDRLEN - mem::size_of::<libc::sockaddr_ll>();
const TP_STATUS_AVAILABLE: u32 = 0;
const TP_STATUS_SEND_REQUEST: u32 = 1;
const TP_STATUS_WRONG_FORMAT: u32 = 4;

/// A `PACKET_TX_RING` (TPACKET_V2) on a send-only socket (protocol 0: it receives nothing): frames are
/// copied into slots marked SEND_REQUEST and one `send` hands the whole batch to the kernel, instead of a
/// msghdr and a `packet_sendmsg` per frame.
struct TxRing {
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
    fn new(interface: &str, ifindex: u32, mtu: usize) -> io::Result<TxRing> {
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
    fn send(&mut self, frames: &[Vec<u8>], dropped: &mut u64) -> io::Result<Option<usize>> {
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

/// One ring slot the kernel has handed over: header fields, and the virtio_net_hdr + frame bytes.
struct RingFrame<'a> {
    status: u32,
    len: usize,
    vlan_tci: u16,
    vlan_tpid: u16,
    /// virtio_net_hdr followed by the (possibly truncated) frame.
    bytes: &'a mut [u8],
}

/// The header and bytes of a slot whose status has TP_STATUS_USER; None when its offsets are impossible.
#[allow(unsafe_code)]
fn ring_frame(ring: &mut PacketRing, i: usize) -> Option<RingFrame<'_>> {
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

impl PortBackend for AfPacketPort {
    fn name(&self) -> &str {
        &self.name
    }

    fn recv_batch(&mut self, out: &mut Vec<Vec<u8>>, max: usize) -> io::Result<usize> {
        self.check_kernel_drops();
        if self.ring.is_some() { Ok(self.recv_ring(out, max)) } else { self.recv_mmsg(out, max) }
    }

    #[allow(unsafe_code)]
    fn send_batch(&mut self, frames: &[Vec<u8>]) -> io::Result<usize> {
        // Small batches (a lightly loaded port) go by sendmmsg, whose frames reach the peer a few µs sooner
        // (the ring's skbs point into the ring's pages and are copied further on); bursts go by the ring.
        // Both sockets hand frames to the device before their call returns, so the order holds.
        if frames.len() >= TX_RING_MIN_BATCH
            && let Some(ring) = self.tx_ring.as_mut()
            && let Some(taken) = ring.send(frames, &mut self.tx_dropped)?
        {
            return Ok(taken);
        }
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
    let mut out = Vec::with_capacity(frame.len() + 4);
    out.extend_from_slice(frame);
    if let Some((tpid, tci)) = vlan {
        crate::wire::vlan::push_tag(&mut out, tpid, tci);
    }
    out
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
    let fd = raw_packet_socket().map_err(|e| context("AF_PACKET socket (needs CAP_NET_RAW)", e))?;
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
    bind_packet(&fd, ifindex, (libc::ETH_P_ALL as u16).to_be()).map_err(|e| context("bind", e))?;
    Ok(fd)
}

/// A fresh, unbound AF_PACKET `SOCK_RAW` socket (non-blocking, close-on-exec, protocol 0: it receives
/// nothing until bound with a protocol).
#[allow(unsafe_code)]
fn raw_packet_socket() -> io::Result<OwnedFd> {
    // SAFETY: plain system call with constant arguments.
    let raw = unsafe {
        libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, 0)
    };
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `raw` is a fresh descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(raw) })
}

/// Binds a packet socket to interface `ifindex` for frames of `protocol` (network byte order; 0: none,
/// a send-only socket).
#[allow(unsafe_code)]
fn bind_packet(fd: &OwnedFd, ifindex: libc::c_int, protocol: u16) -> io::Result<()> {
    let addr = libc::sockaddr_ll {
        sll_family: libc::AF_PACKET as libc::c_ushort,
        sll_protocol: protocol,
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
    if r < 0 { Err(io::Error::last_os_error()) } else { Ok(()) }
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
    use crate::wire::EtherType;
    use std::net::Ipv4Addr;

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
