//! Lossless dataplane: everything that touches packets.
//!
//! - [`wire`]: frame formats (Ethernet/802.1Q, ARP, IPv4, IPv6, UDP, RoCEv2 BTH, MAC Control PFC/PAUSE) as
//!   zero-copy views and owned representations. Malformed input is a typed error, never a panic.

#![forbid(unsafe_code)]

pub mod model;
pub mod wire;
