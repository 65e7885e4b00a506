//! Test tooling shared by Lossless's tests, the PTF harness and the forwarding benchmark: one way to do each
//! of these things.
//!
//! - [`netns`]: network namespaces and veth pairs with unique names, deleted on drop (also while a panic
//!   unwinds), swept away by the next test process should their owner die without dropping them (a
//!   SIGKILL), and [`netns::Star`], a switch namespace wired to host namespaces;
//! - [`switchd`]: the switchd launcher: [`SwitchdCommand`] spawns the binary (inside a namespace or not),
//!   [`Switchd::ready`] waits until its gRPC socket answers, and dropping the [`Switchd`] stops and reaps it;
//!   its log is captured for failure messages. It lives in `lossless-dataplane` ([`lossless_dataplane::launch`],
//!   which `swctl lab` uses too) and is re-exported here, with [`switchd_binary`] to find the binary; so is
//!   its rocehost twin, [`RocehostCommand`], whose [`Rocehost::ready`] waits for the ready file;
//! - [`frames`]: frames and send/receive helpers with deadlines for port backend tests;
//! - [`child`]: a helper test run as a child process, for tests that kill it outright.
//!
//! Everything here needs Linux; what touches namespaces needs root and iproute2. The crate is for tests and
//! tools: production code (lossless-core above all) must not depend on it.
//!
//! ```no_run
//! use lossless_testkit::{netns::Star, SwitchdCommand};
//!
//! let star = Star::new("doc", 2).unwrap(); // namespace "sw" + two hosts, host i's eth0 — sw's p{i}
//! let tokio = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
//! let mut switchd = SwitchdCommand::new(lossless_testkit::switchd_binary())
//!     .netns(&star.switch)
//!     .config_text("switch.yaml", "PORT:\n  Ethernet0: { speed: 10000 }\n")
//!     .port("Ethernet0", "p0")
//!     .spawn()
//!     .unwrap();
//! let mut client = tokio.block_on(switchd.ready()).unwrap();
//! let counters = tokio.block_on(client.get_counters(lossless_proto::v1::GetCountersRequest {})).unwrap();
//! # drop(counters);
//! // Dropping `switchd` sends SIGTERM (SIGKILL if it hangs) and reaps it; dropping `star` deletes the
//! // namespaces with their veths.
//! ```

pub mod child;
pub mod frames;
pub mod netns;
pub mod switchd;

pub use netns::{Netns, unique_name};
pub use switchd::{
    Client, Log, Rocehost, RocehostCommand, Switchd, SwitchdCommand, connect, dataplane_binaries,
    switchd_binary,
};
