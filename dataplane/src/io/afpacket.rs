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
use std::cell::Cell;
use std::io;
use std::mem;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

mod ring;
mod rx;
mod socket;
#[cfg(test)]
mod tests;
mod tx;

use ring::{PacketRing, ring_frame_size_for};
use rx::rx_slot_len_for;
pub(crate) use rx::take_vnet_frame;
use socket::setsockopt;
pub(crate) use socket::{ControlSocket, ethtool, if_index, ifreq, packet_socket};
use tx::TxRing;

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
    /// What [`PortBackend::take_rx_lost`] has reported so far (totals).
    lost_reported: crate::io::RxLost,
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
            lost_reported: crate::io::RxLost::default(),
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

    fn take_rx_lost(&mut self) -> crate::io::RxLost {
        self.poll_kernel_drops();
        let total = crate::io::RxLost {
            overrun: self.kernel_drops.get(),
            oversize: self.stats.gso_dropped + self.stats.truncated,
        };
        let new = crate::io::RxLost {
            overrun: total.overrun - self.lost_reported.overrun,
            oversize: total.oversize - self.lost_reported.oversize,
        };
        self.lost_reported = total;
        new
    }
}
