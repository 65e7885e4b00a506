//! `tap:NAME`: a TAP device switchd creates itself (`/dev/net/tun`, `IFF_TAP | IFF_NO_PI`).
//!
//! The device is not persistent: it exists while the descriptor is open and disappears with it, so a
//! switchd that stops or crashes leaves nothing behind. Frames written to the descriptor are what the
//! kernel receives on the device; frames the kernel sends out of the device are what the descriptor
//! reads. Without `IFF_VNET_HDR` the kernel completes checksums and segments before a frame reaches the
//! descriptor, so nothing needs fixing up here.
//!
//! The device is brought up at open, with IPv6 disabled on it (best effort): it is a switch port and should
//! not originate router solicitations or MLD reports of its own.

use super::PortBackend;
use super::afpacket::{ControlSocket, ifreq};
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::OpenOptionsExt;

const TUN_PATH: &str = "/dev/net/tun";
/// Larger than any frame a TAP device hands over.
const READ_BUFFER_BYTES: usize = 65536;

/// A port on a TAP device created at open.
pub struct TapPort {
    name: String,
    file: File,
    buf: Vec<u8>,
}

impl TapPort {
    /// Creates TAP device `name` (or attaches to a persistent one of that name) in the calling thread's
    /// network namespace and brings it up.
    #[allow(unsafe_code)]
    pub fn open(name: &str) -> io::Result<TapPort> {
        let mut ifr = ifreq(name)?;
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(TUN_PATH)
            .map_err(|e| {
                io::Error::new(e.kind(), format!("tap {name:?}: {TUN_PATH}: {e} (is the tun module loaded?)"))
            })?;
        ifr.ifr_ifru.ifru_flags = (libc::IFF_TAP | libc::IFF_NO_PI) as libc::c_short;
        // SAFETY: TUNSETIFF takes a `struct ifreq *`; `ifr` is live and exclusively borrowed for the call.
        let r = unsafe { libc::ioctl(file.as_raw_fd(), libc::TUNSETIFF as _, &mut ifr as *mut libc::ifreq) };
        if r < 0 {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(
                e.kind(),
                format!("tap {name:?}: creating the device (TUNSETIFF): {e}"),
            ));
        }
        let _ = std::fs::write(format!("/proc/sys/net/ipv6/conf/{name}/disable_ipv6"), "1");
        ControlSocket::new()?.set_up(name)?;
        Ok(TapPort { name: name.to_owned(), file, buf: vec![0; READ_BUFFER_BYTES] })
    }
}

impl PortBackend for TapPort {
    fn name(&self) -> &str {
        &self.name
    }

    fn recv_batch(&mut self, out: &mut Vec<Vec<u8>>, max: usize) -> io::Result<usize> {
        let mut taken = 0;
        while taken < max {
            match self.file.read(&mut self.buf) {
                Ok(len) => {
                    out.push(self.buf[..len].to_vec());
                    taken += 1;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if taken > 0 => {
                    tracing::debug!(interface = %self.name, "read failed after {taken} frame(s): {e}");
                    break;
                }
                Err(e) => return Err(e),
            }
        }
        Ok(taken)
    }

    fn send_batch(&mut self, frames: &[Vec<u8>]) -> io::Result<usize> {
        let mut sent = 0;
        for frame in frames {
            match self.file.write(frame) {
                Ok(_) => sent += 1,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => break,
                // A frame the device refuses (too long, too short) is dropped so the rest can go.
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                    tracing::warn!(interface = %self.name, len = frame.len(), "frame not sent: {e}");
                    sent += 1;
                }
                Err(e) if sent > 0 => {
                    tracing::debug!(interface = %self.name, "write failed after {sent} frame(s): {e}");
                    break;
                }
                Err(e) => return Err(e),
            }
        }
        Ok(sent)
    }

    fn raw_fd(&self) -> RawFd {
        self.file.as_raw_fd()
    }
}
