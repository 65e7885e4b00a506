//! `pnet:NAME`: an existing interface through pnet's datalink channel, one frame per call; the portable
//! fallback to the batched AF_PACKET backend.
//!
//! pnet's receiver blocks and exposes no descriptor, so it runs on a thread of its own that moves each
//! frame into a bounded channel and writes a byte to a socket pair; the other end of the pair is
//! [`PortBackend::raw_fd`], so the runtime's `ppoll` wakes when frames are waiting. When the channel is
//! full the thread waits, and the kernel's socket buffer absorbs the burst. The thread notices a drop
//! within pnet's read timeout and ends.
//!
//! The socket pnet uses is made here (pnet takes it over) with the same set-up as the AF_PACKET backend's:
//! `PACKET_IGNORE_OUTGOING` (without it the switch would read back its own output), `PACKET_VNET_HDR`
//! (partial checksums from a veth peer with TX offload are completed, GSO super-frames dropped and counted),
//! large buffers, promiscuous; the interface is brought up with GRO/LRO off. One difference remains: pnet
//! reads with plain `recvfrom`, so the 802.1Q tag the kernel strips off a received frame is lost
//! (the frame arrives untagged); use the AF_PACKET backend for tagged traffic.

use super::PortBackend;
use super::afpacket::{self, ControlSocket, RxStats, VNET_HDR_LEN};
use pnet_datalink::{Channel, Config, DataLinkReceiver, DataLinkSender, NetworkInterface};
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, IntoRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, mpsc};
use std::thread::JoinHandle;
use std::time::Duration;

/// Frames the receive thread may hold before it waits.
const QUEUE_FRAMES: usize = 4096;
/// How long a stop request may go unnoticed by the receive thread.
const READ_TIMEOUT: Duration = Duration::from_millis(50);
/// Larger than any frame an interface hands over, plus the virtio_net_hdr.
const BUFFER_BYTES: usize = 65536 + VNET_HDR_LEN;

/// A port on an existing interface through pnet's datalink channel.
pub struct PnetPort {
    name: String,
    tx: Box<dyn DataLinkSender>,
    frames: mpsc::Receiver<Vec<u8>>,
    /// Readable while frames may be waiting in `frames`.
    wake_rx: UnixStream,
    /// Our own way to keep `wake_rx` readable when a batch leaves frames behind.
    wake_tx: UnixStream,
    stop: Arc<AtomicBool>,
    gso_dropped: Arc<AtomicU64>,
    thread: Option<JoinHandle<()>>,
    send_buf: Vec<u8>,
}

impl PnetPort {
    /// Opens `interface`: fails at once with `interface "NAME" not found` when it does not exist.
    pub fn open(interface: &str) -> io::Result<PnetPort> {
        let index = afpacket::if_index(interface)?;
        let ctl = ControlSocket::new()?;
        ctl.set_up(interface)?;
        ctl.disable_gro_lro(interface);
        let socket = afpacket::packet_socket(interface, index, false)?;
        let config = Config {
            read_buffer_size: BUFFER_BYTES,
            write_buffer_size: BUFFER_BYTES,
            read_timeout: Some(READ_TIMEOUT),
            // Zero: a full socket is "would block" at once instead of a wait inside pnet.
            write_timeout: Some(Duration::ZERO),
            promiscuous: true,
            socket_fd: Some(socket.into_raw_fd()),
            ..Config::default()
        };
        let nic = NetworkInterface {
            name: interface.to_owned(),
            description: String::new(),
            index,
            mac: None,
            ips: Vec::new(),
            flags: 0,
        };
        // pnet owns the socket from here on and closes it on every error path.
        let (tx, rx) = match pnet_datalink::channel(&nic, config) {
            Ok(Channel::Ethernet(tx, rx)) => (tx, rx),
            Ok(_) => {
                return Err(io::Error::other(format!(
                    "interface {interface:?}: pnet gave a non-Ethernet channel"
                )));
            }
            Err(e) => {
                return Err(io::Error::new(e.kind(), format!("interface {interface:?}: pnet channel: {e}")));
            }
        };
        let (wake_tx, wake_rx) = UnixStream::pair()?;
        wake_tx.set_nonblocking(true)?;
        wake_rx.set_nonblocking(true)?;
        let (frames_tx, frames) = mpsc::sync_channel(QUEUE_FRAMES);
        let stop = Arc::new(AtomicBool::new(false));
        let gso_dropped = Arc::new(AtomicU64::new(0));
        let receiver = Receiver {
            name: interface.to_owned(),
            rx,
            frames: frames_tx,
            wake: wake_tx.try_clone()?,
            stop: stop.clone(),
            gso_dropped: gso_dropped.clone(),
        };
        let thread =
            std::thread::Builder::new().name(format!("pnet-rx-{interface}")).spawn(move || receiver.run())?;
        Ok(PnetPort {
            name: interface.to_owned(),
            tx,
            frames,
            wake_rx,
            wake_tx,
            stop,
            gso_dropped,
            thread: Some(thread),
            send_buf: Vec::new(),
        })
    }

    /// GSO super-frames received and dropped (a sender with TSO/GSO on).
    pub fn gso_dropped(&self) -> u64 {
        self.gso_dropped.load(Ordering::Relaxed)
    }
}

impl PortBackend for PnetPort {
    fn name(&self) -> &str {
        &self.name
    }

    fn recv_batch(&mut self, out: &mut Vec<Vec<u8>>, max: usize) -> io::Result<usize> {
        // Wake bytes first: a frame queued after the drain below comes with a byte not consumed yet.
        let mut bytes = [0u8; 256];
        while matches!(self.wake_rx.read(&mut bytes), Ok(n) if n > 0) {}
        let mut taken = 0;
        while taken < max {
            match self.frames.try_recv() {
                Ok(frame) => {
                    out.push(frame);
                    taken += 1;
                }
                Err(mpsc::TryRecvError::Empty) => return Ok(taken),
                Err(mpsc::TryRecvError::Disconnected) if taken > 0 => return Ok(taken),
                Err(mpsc::TryRecvError::Disconnected) => {
                    return Err(io::Error::other(format!(
                        "interface {:?}: pnet receive thread ended",
                        self.name
                    )));
                }
            }
        }
        // `max` reached with frames possibly left: stay readable.
        let _ = self.wake_tx.write(&[1]);
        Ok(taken)
    }

    fn send_batch(&mut self, frames: &[Vec<u8>]) -> io::Result<usize> {
        let mut sent = 0;
        for frame in frames {
            // A zeroed virtio_net_hdr in front: nothing to complete, no segmentation.
            self.send_buf.clear();
            self.send_buf.resize(VNET_HDR_LEN, 0);
            self.send_buf.extend_from_slice(frame);
            match self.tx.send_to(&self.send_buf, None) {
                Some(Ok(())) => sent += 1,
                Some(Err(e)) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {
                    break;
                }
                Some(Err(e))
                    if matches!(e.raw_os_error(), Some(libc::EMSGSIZE | libc::EINVAL | libc::ENOBUFS)) =>
                {
                    tracing::warn!(interface = %self.name, len = frame.len(), "frame not sent: {e}");
                    sent += 1;
                }
                Some(Err(e)) if sent > 0 => {
                    tracing::debug!(interface = %self.name, "send failed after {sent} frame(s): {e}");
                    break;
                }
                Some(Err(e)) => return Err(e),
                None => return Err(io::Error::other("pnet send buffer too small")),
            }
        }
        Ok(sent)
    }

    fn raw_fd(&self) -> RawFd {
        self.wake_rx.as_raw_fd()
    }
}

impl Drop for PnetPort {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The receive thread's state.
struct Receiver {
    name: String,
    rx: Box<dyn DataLinkReceiver>,
    frames: mpsc::SyncSender<Vec<u8>>,
    wake: UnixStream,
    stop: Arc<AtomicBool>,
    gso_dropped: Arc<AtomicU64>,
}

impl Receiver {
    fn run(mut self) {
        let mut stats = RxStats::default();
        let mut failing = false;
        while !self.stop.load(Ordering::SeqCst) {
            let frame = match self.rx.next() {
                Ok(buf) => {
                    failing = false;
                    let mut buf = buf.to_vec();
                    let frame = afpacket::take_vnet_frame(&self.name, &mut buf, None, &mut stats);
                    self.gso_dropped.store(stats.gso_dropped, Ordering::Relaxed);
                    match frame {
                        Some(frame) => frame,
                        None => continue,
                    }
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                    ) =>
                {
                    continue;
                }
                Err(e) => {
                    // E.g. the interface went away: say so once, and do not spin.
                    if !failing {
                        tracing::warn!(interface = %self.name, "pnet receive failed: {e}");
                        failing = true;
                    }
                    std::thread::sleep(READ_TIMEOUT);
                    continue;
                }
            };
            if !self.queue(frame) {
                return;
            }
            // A full socket buffer means a wake-up is already pending.
            let _ = self.wake.write(&[1]);
        }
    }

    /// Queues a frame, waiting while the queue is full; false when the port is gone.
    fn queue(&self, mut frame: Vec<u8>) -> bool {
        loop {
            match self.frames.try_send(frame) {
                Ok(()) => return true,
                Err(mpsc::TrySendError::Disconnected(_)) => return false,
                Err(mpsc::TrySendError::Full(back)) => {
                    if self.stop.load(Ordering::SeqCst) {
                        return false;
                    }
                    frame = back;
                    std::thread::sleep(Duration::from_micros(100));
                }
            }
        }
    }
}
