//! Socket and interface setup: interface names and indices, the packet socket and its options, and the
//! control socket for interface ioctls (flags, MTU, ethtool).

use super::*;
use std::ffi::CString;
use std::mem;
use std::os::fd::FromRawFd;

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
pub(super) fn raw_packet_socket() -> io::Result<OwnedFd> {
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
pub(super) fn bind_packet(fd: &OwnedFd, ifindex: libc::c_int, protocol: u16) -> io::Result<()> {
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
pub(super) fn setsockopt<T>(
    fd: &OwnedFd,
    level: libc::c_int,
    name: libc::c_int,
    value: &T,
) -> io::Result<()> {
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

    /// `interface`'s flags (`IFF_UP`, `IFF_RUNNING`, ...); an error (ENODEV) when it does not exist.
    #[allow(unsafe_code)]
    pub(crate) fn flags(&self, interface: &str) -> io::Result<libc::c_short> {
        let mut ifr = ifreq(interface)?;
        self.ioctl(libc::SIOCGIFFLAGS, &mut ifr)?;
        // SAFETY: SIOCGIFFLAGS filled the `ifru_flags` member of the union.
        Ok(unsafe { ifr.ifr_ifru.ifru_flags })
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
