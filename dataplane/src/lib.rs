//! Lossless dataplane: the real-time side of the switch and the host emulator.
//!
//! - [`wire`], [`model`], [`nic`]: re-exported from the I/O-free core crate `lossless-core`.
//! - [`io`]: port backends on Linux interfaces and the real-time runtime that drives the model.
//! - [`server`]: the gRPC services (`lossless.v1.Switch`, health, reflection) over the runtime.
//! - [`rocehost`]: the RoCEv2 host emulator behind the `rocehost` binary, and its report file.
//! - [`shutdown`]: SIGINT/SIGTERM handling shared by switchd, rocehost and the labs.
//! - [`clock`]: the one time base (`CLOCK_MONOTONIC`) of switch events and host reports, and its
//!   wall-clock reading.
//! - [`launch`]: the switchd launcher (spawn, wait until it answers gRPC, stop or detach), used by the labs
//!   and, through `lossless-testkit`, by the tests.
//!
//! Unsafe code is denied crate-wide; only the port backends, which talk to the kernel (AF_PACKET sockets,
//! TAP devices, ethtool ioctls), and the launcher's process and file watches (pidfd, inotify, kill) allow it
//! locally, each block with its reason.

#![deny(unsafe_code)]

pub mod clock;
pub mod io;
pub mod launch;
pub mod process;
pub mod rocehost;
pub mod server;
pub mod shutdown;

pub use lossless_core::{model, nic, sim, text, time, wire};
