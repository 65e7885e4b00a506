//! Lossless control plane: SONiC-style configuration and operations.
//!
//! Today: the embedded example configurations ([`embedded`]), and the in-process walkthrough behind
//! `swctl demo` ([`demo`]). The CONFIG_DB schema tooling, headroom calculators, SONiC-style `show` tables,
//! netns labs and gRPC client grow here, on [`lossless_dataplane`] and the API in [`lossless_proto`].

#![forbid(unsafe_code)]

pub mod capture;
pub mod clos;
pub mod deadlock;
pub mod demo;
pub mod diff;
pub mod headroom;
pub mod lab;
pub mod pingmesh;
pub mod qos_params;
pub mod score;
pub mod show;
pub mod sim;
pub mod snapshot;
pub mod validate;
pub mod watch;

/// Configuration files shipped in `configs/`, compiled into the binaries so that they work from anywhere.
pub mod embedded {
    /// The T0-like example switch (routed uplinks, a server VLAN, AZURE QoS maps, PFC on 3,4).
    pub const T0: &str = include_str!("../../configs/t0.yaml");
}
