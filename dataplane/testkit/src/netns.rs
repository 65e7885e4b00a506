//! Network namespaces and veth pairs for tests.
//!
//! [`Netns`] itself lives in `lossless-dataplane` (the lab of `swctl` uses it too) and is re-exported here:
//! a namespace deleted on drop, also while a panic unwinds, with IPv6 off; its veth pairs (`Netns::veth`,
//! `Netns::veth_local`) go with it. Names come from [`unique_name`], so tests running in parallel (and other
//! processes) never collide.

use std::io;

pub use lossless_dataplane::io::netns::{Netns, unique_name};

/// A fresh namespace named `prefix` + a unique suffix (see [`unique_name`]); the error says that creating
/// namespaces needs root and iproute2.
pub fn unique(prefix: &str) -> io::Result<Netns> {
    let name = unique_name(prefix);
    Netns::new(&name).map_err(|e| {
        io::Error::new(e.kind(), format!("creating network namespace {name} (needs root and iproute2): {e}"))
    })
}

/// A switch namespace wired to host namespaces: host `i`'s `eth0` is the peer of the switch's `p{i}`.
/// Dropped, the namespaces go (hosts first), and every veth with them.
///
/// ```text
/// hosts[0]:eth0 ── p0 ┐
/// hosts[1]:eth0 ── p1 ├ switch
/// ...                 ┘
/// ```
#[derive(Debug)]
pub struct Star {
    pub hosts: Vec<Netns>,
    pub switch: Netns,
}

impl Star {
    /// A switch namespace (`{prefix}sw…`) and `hosts` host namespaces (`{prefix}h…`).
    pub fn new(prefix: &str, hosts: usize) -> io::Result<Star> {
        let switch = unique(&format!("{prefix}sw"))?;
        let hosts = (0..hosts).map(|_| unique(&format!("{prefix}h"))).collect::<io::Result<Vec<_>>>()?;
        for (i, h) in hosts.iter().enumerate() {
            h.veth("eth0", &switch, &Star::switch_interface(i))?;
        }
        Ok(Star { hosts, switch })
    }

    /// The switch-side interface of host `i`: `p{i}`.
    pub fn switch_interface(i: usize) -> String {
        format!("p{i}")
    }
}
