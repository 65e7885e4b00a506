//! The sans-I/O switch model.
//!
//! [`Switch`] is a plain state machine in the style of quinn-proto: it never reads a clock, opens a
//! socket, sleeps or spawns. A driver (the real-time `switchd`, or the virtual-time simulator) tells it
//! what happened and when:
//!
//! ```text
//! handle_frame(port, frame, now)   a frame arrived on a port
//! poll_transmit(port, now)         the port's line is free: what goes out next?
//! poll_at()                        the next instant the model needs handle_timeout
//! handle_timeout(now)              run what is due (aging sweeps, ...)
//! apply(config, now)               validated, atomic configuration change
//! counters() / poll_event()        observation
//! ```
//!
//! Time is integer nanoseconds on any monotonic base the driver chooses.
//!
//! A frame's journey: parse ([`crate::wire::decode()`]) → L2 domain (VLAN membership, learning) →
//! classification ([`classify`]) → forwarding decision (route with TTL and MAC rewrite, bridge, flood, trap,
//! or a counted drop with a [`DropReason`]) → buffer admission ([`mmu`]), WRED/ECN ([`wred`]) → egress queue ([`scheduler`]) with PFC ([`pfc`]) and the
//! watchdog ([`watchdog`]) → `poll_transmit`.

pub mod classify;
pub mod config;
pub mod counters;
pub mod forwarding;
pub mod mmu;
pub mod pfc;
pub mod scheduler;
mod switch;
pub mod watchdog;
pub mod wred;

pub use counters::{CountersDump, DropReason, FrameLedger, PortCounters};
pub use switch::{
    ARP_RETRY, Applied, CONTROL_QUEUE, DropRecord, Event, PfcEvents, PortId, Prepared, QueuedFrame, Retired,
    Switch, Transmit, WatermarksDump,
};
