//! Lossless's I/O-free core: everything that can run without a clock, a socket or a thread.
//!
//! - [`wire`]: frame formats (Ethernet/802.1Q, ARP, IPv4, IPv6, UDP, RoCEv2 BTH, MAC Control PFC/PAUSE) as
//!   zero-copy views and owned representations. Malformed input is a typed error, never a panic.
//! - [`model`]: the sans-I/O switch (configuration and ASIC personalities, forwarding, classification, MMU,
//!   PFC, WRED/ECN, scheduling, watchdog): every event is a method call with the current time passed in.
//! - [`nic`]: the sans-I/O RoCEv2 NIC (PFC honouring, DCQCN, go-back-N/0, PSN tracking).
//!
//! The real-time daemons (`lossless-dataplane`) and the virtual-time drivers use the same code; nothing here
//! may depend on I/O or wall time (`docs/ARCHITECTURE.md`).

#![forbid(unsafe_code)]

pub mod model;
pub mod nic;
mod ps;
pub mod sim;
pub mod text;
pub mod time;
pub mod wire;
