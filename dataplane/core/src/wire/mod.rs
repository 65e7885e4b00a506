//! Frame formats, one file per protocol, in the style of smoltcp's `wire` module.
//!
//! Each protocol has a zero-copy view `Packet<T: AsRef<[u8]>>` (or `Frame`/`Header`) with a checked
//! constructor (`new_checked`), one accessor per field named as the standard names it, and setters where
//! `T: AsMut<[u8]>`; plus an owned `Repr` with `parse`, `buffer_len` and `emit`. Views are what the packet
//! path uses; `Repr`s are what tests, generators and the host emulator use.
//!
//! Every parser accepts any byte string and either succeeds or returns a typed [`Error`]; none panics.
//! [`decode()`] walks a whole Ethernet frame (802.1Q, ARP, IPv4/IPv6, UDP, RoCEv2 BTH, MAC Control).

mod field {
    pub type Field = core::ops::Range<usize>;
    pub type Rest = core::ops::RangeFrom<usize>;
}

pub mod arp;
pub mod bth;
pub mod build;
pub mod checksum;
pub mod decode;
pub mod ethernet;
pub mod ip;
pub mod ipv4;
pub mod ipv6;
pub mod mac_control;
pub mod transit;
pub mod udp;
pub mod vlan;

pub use arp::{Operation as ArpOperation, Packet as ArpPacket, Repr as ArpRepr};
pub use bth::{Header as BthHeader, Opcode as BthOpcode, Repr as BthRepr};
pub use decode::{Decoded, L3, L4, decode, decode_transit};
pub use ethernet::{Address as EthernetAddress, EtherType, Frame as EthernetFrame, Repr as EthernetRepr};
pub use ipv4::{Address as Ipv4Address, Packet as Ipv4Packet, Repr as Ipv4Repr};
pub use ipv6::{Address as Ipv6Address, Packet as Ipv6Packet, Repr as Ipv6Repr};
pub use mac_control::{PauseRepr, PfcRepr, Repr as MacControlRepr};
pub use transit::{IpFields, RoceV4, Transit, roce_v4, transit};
pub use udp::{Packet as UdpPacket, Repr as UdpRepr};
pub use vlan::{Repr as VlanRepr, Tag as VlanTag};

/// The protocol layer an [`Error`] was found in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Layer {
    Ethernet,
    Vlan,
    Arp,
    Ipv4,
    Ipv6,
    Udp,
    Bth,
    MacControl,
}

impl core::fmt::Display for Layer {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            Layer::Ethernet => "ethernet",
            Layer::Vlan => "802.1q",
            Layer::Arp => "arp",
            Layer::Ipv4 => "ipv4",
            Layer::Ipv6 => "ipv6",
            Layer::Udp => "udp",
            Layer::Bth => "roce-bth",
            Layer::MacControl => "mac-control",
        })
    }
}

/// Why a byte string is not a valid frame of some protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
pub enum Error {
    /// Fewer bytes than the header (or its own length field) requires.
    #[error("{layer}: truncated")]
    Truncated { layer: Layer },
    /// A field holds a value the standard forbids (e.g. IPv4 IHL < 5, UDP length < 8).
    #[error("{layer}: malformed {field}")]
    Malformed { layer: Layer, field: &'static str },
    /// A header checksum does not verify.
    #[error("{layer}: bad checksum")]
    Checksum { layer: Layer },
    /// Valid, but a variant this model does not handle (e.g. IPv4 options are kept, fragments are not).
    #[error("{layer}: unsupported {what}")]
    Unsupported { layer: Layer, what: &'static str },
}

impl Error {
    /// The layer the problem was found in.
    pub fn layer(&self) -> Layer {
        match *self {
            Error::Truncated { layer }
            | Error::Malformed { layer, .. }
            | Error::Checksum { layer }
            | Error::Unsupported { layer, .. } => layer,
        }
    }
}

pub type Result<T> = core::result::Result<T, Error>;
