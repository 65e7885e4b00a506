//! Ports on real Linux interfaces, and the real-time runtime that drives the switch model with them.
//!
//! A port backend moves whole Ethernet frames (no FCS) between the model and one interface, in batches,
//! without blocking. Which backend a port uses comes from its `netdev` (PORT table) or switchd's
//! `--port Ethernet0=SPEC`:
//! - `veth3` (any existing interface): a batched AF_PACKET socket (`recvmmsg`/`sendmmsg`), the fast path;
//! - `pnet:veth3`: pnet's datalink channel, one frame per call (portable fallback);
//! - `tap:NAME`: a TAP device switchd creates (and removes when it stops).

pub mod afpacket;
pub mod capture;
pub mod netns;
pub mod pnet_port;
pub mod runtime;
pub mod tap;

use crate::wire::EthernetAddress;
use std::io;
use std::os::fd::RawFd;

/// One port's link to the outside world.
pub trait PortBackend: Send {
    /// The interface name.
    fn name(&self) -> &str;
    /// Receives up to `max` frames without blocking, appending them to `out`; returns how many arrived.
    fn recv_batch(&mut self, out: &mut Vec<Vec<u8>>, max: usize) -> io::Result<usize>;
    /// Sends frames without blocking, in order; returns how many were taken (the rest would block: retry
    /// them when the descriptor is writable).
    fn send_batch(&mut self, frames: &[Vec<u8>]) -> io::Result<usize>;
    /// The descriptor to wait on for readability (and writability when sends would block).
    fn raw_fd(&self) -> RawFd;
    /// Frames the interface delivered that never reached the switch, since the last call.
    fn take_rx_lost(&mut self) -> RxLost {
        RxLost::default()
    }
}

/// Frames lost between an interface and the switch ([`PortBackend::take_rx_lost`]).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct RxLost {
    /// Dropped by the kernel: the port's receive ring or socket buffer was full.
    pub overrun: u64,
    /// Longer than any frame the port can take (GSO super-frames, frames beyond the receive slots).
    pub oversize: u64,
}

/// The state of an interface's link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkState {
    /// Up, with carrier (IFF_UP and IFF_RUNNING).
    Up,
    /// Administratively up, without carrier (the other end is down).
    NoCarrier,
    /// Administratively down.
    AdminDown,
    /// No such interface (deleted), or it cannot be asked.
    Gone,
}

/// The state of `interface`'s link, in the calling thread's network namespace.
pub fn link_state(interface: &str) -> LinkState {
    let Ok(flags) = afpacket::ControlSocket::new().and_then(|s| s.flags(interface)) else {
        return LinkState::Gone;
    };
    let has = |flag: libc::c_int| flags & flag as libc::c_short != 0;
    match (has(libc::IFF_UP), has(libc::IFF_RUNNING)) {
        (false, _) => LinkState::AdminDown,
        (true, false) => LinkState::NoCarrier,
        (true, true) => LinkState::Up,
    }
}

/// How a port reaches its interface, parsed from `netdev` / `--port` values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PortSpec {
    /// An existing interface through a batched AF_PACKET socket.
    Interface(String),
    /// An existing interface through pnet's datalink channel.
    Pnet(String),
    /// A TAP device created by switchd.
    Tap(String),
}

impl PortSpec {
    pub fn parse(spec: &str) -> Result<PortSpec, String> {
        let (kind, name) = match spec.split_once(':') {
            Some((k, n)) => (k, n),
            None => ("", spec),
        };
        if name.is_empty() || name.len() > 15 || name.contains(['/', ' ']) {
            return Err(format!("{spec:?}: not an interface name (1-15 characters, no '/' or spaces)"));
        }
        match kind {
            "" => Ok(PortSpec::Interface(name.to_owned())),
            "pnet" => Ok(PortSpec::Pnet(name.to_owned())),
            "tap" => Ok(PortSpec::Tap(name.to_owned())),
            other => {
                Err(format!("{spec:?}: unknown backend {other:?} (use IFNAME, pnet:IFNAME or tap:IFNAME)"))
            }
        }
    }

    pub fn interface(&self) -> &str {
        match self {
            PortSpec::Interface(n) | PortSpec::Pnet(n) | PortSpec::Tap(n) => n,
        }
    }
}

/// Opens the backend `spec` names. Fails at once, with a message naming the interface, when it cannot.
pub fn open(spec: &PortSpec) -> io::Result<Box<dyn PortBackend>> {
    Ok(match spec {
        PortSpec::Interface(name) => Box::new(afpacket::AfPacketPort::open(name)?),
        PortSpec::Pnet(name) => Box::new(pnet_port::PnetPort::open(name)?),
        PortSpec::Tap(name) => Box::new(tap::TapPort::open(name)?),
    })
}

/// The MAC address of an existing interface (in the calling thread's network namespace); `interface
/// "NAME" not found` when there is none.
pub fn interface_mac(interface: &str) -> io::Result<EthernetAddress> {
    afpacket::if_index(interface)?;
    afpacket::ControlSocket::new()?.hardware_address(interface).map(EthernetAddress)
}

/// The MTU of an existing interface (in the calling thread's network namespace).
pub fn interface_mtu(interface: &str) -> io::Result<usize> {
    afpacket::if_index(interface)?;
    afpacket::ControlSocket::new()?.mtu(interface)
}
