//! The hosts' sockets and the timing helpers of the measuring threads.

use anyhow::Context;
use lossless_dataplane::io::PortBackend;
use lossless_dataplane::io::afpacket::{AfPacketPort, RxMode, TxMode};
use lossless_testkit::Netns;
use std::os::fd::RawFd;
use std::time::Instant;

/// Enters `ns` on this (spawned) thread and opens its eth0 as a batched AF_PACKET port. The hosts always
/// send with `sendmmsg` (and receive from the ring), whatever switchd's own sockets use: the harness stays
/// the same when switchd's I/O changes, so figures from different versions compare.
pub fn open_eth0(ns: &Netns) -> anyhow::Result<Box<dyn PortBackend>> {
    ns.enter_on_this_thread()?;
    let port = AfPacketPort::open_with_modes("eth0", RxMode::Ring, TxMode::Sendmmsg)
        .with_context(|| format!("opening eth0 in {}", ns.name()))?;
    Ok(Box::new(port))
}

#[allow(unsafe_code)]
pub fn wait_readable(fd: RawFd, timeout_ms: i32) {
    let mut pfd = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    // SAFETY: one valid pollfd, exclusively borrowed for the call.
    unsafe { libc::poll(&mut pfd, 1, timeout_ms) };
}

/// Frames the kernel dropped at this AF_PACKET socket (its receive queue was full) since the last call
/// (`PACKET_STATISTICS` resets on read).
#[allow(unsafe_code)]
pub fn socket_drops(fd: RawFd) -> u64 {
    #[repr(C)]
    #[derive(Default)]
    struct TpacketStats {
        packets: u32,
        drops: u32,
    }
    const PACKET_STATISTICS: libc::c_int = 6;
    let mut stats = TpacketStats::default();
    let mut len = std::mem::size_of::<TpacketStats>() as libc::socklen_t;
    // SAFETY: `stats` is a writable tpacket_stats of `len` bytes, alive for the call.
    let r = unsafe {
        libc::getsockopt(fd, libc::SOL_PACKET, PACKET_STATISTICS, (&raw mut stats).cast(), &mut len)
    };
    if r == 0 { u64::from(stats.drops) } else { 0 }
}

/// Lets this thread's sleeps end within about a microsecond of their deadline (default slack: 50 µs).
#[allow(unsafe_code)]
pub fn tight_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK takes one integer argument and touches no memory.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
}

pub fn sleep_until(t: Instant) {
    let now = Instant::now();
    if t > now {
        std::thread::sleep(t - now);
    }
}
