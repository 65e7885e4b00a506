//! Lossless dataplane: everything that touches packets.
//!
//! - [`wire`]: frame formats (Ethernet/802.1Q, ARP, IPv4, IPv6, UDP, RoCEv2 BTH, MAC Control PFC/PAUSE) as
//!   zero-copy views and owned representations. Malformed input is a typed error, never a panic.
//! - [`model`]: the sans-I/O switch (forwarding, classification, MMU, PFC, WRED/ECN, scheduling, watchdog).
//! - [`io`]: port backends on Linux interfaces and the real-time runtime that drives the model.
//! - [`server`]: the gRPC services (`lossless.v1.Switch`, health, reflection) over the runtime.
//!
//! Unsafe code is denied crate-wide; only the port backends, which talk to the kernel (AF_PACKET sockets,
//! TAP devices, ethtool ioctls), allow it locally, each block with its reason.

#![deny(unsafe_code)]

pub mod io;
pub mod model;
pub mod nic;
pub mod server;
pub mod wire;
