//! `swctl lab run FILE`: a scenario is a topology (inline, or `topology: path`) plus a timeline of steps
//! (times in ms after the hosts are up) and expectations checked on the results.
//!
//! ```yaml
//! topology: ../topologies/t1-t0.yaml     # or an inline topology mapping
//! duration-ms: 4000                      # senders' --duration
//! steps:
//!   - { at: 0, traffic: { from: h1, to: h3, priority: 3, dscp: 3, rate-mbps: 300, dcqcn: false } }
//!   - { at: 2000, storm: { host: h2, priorities: [3], interval-us: 100, stop: 3500 } }
//!   - { at: 800, stop-host: { host: h3 } }                   # h3's rocehost exits: a dead, silent server
//!   - { at: 100, rx-stuck: { host: h4, stop: 900 } }         # h4's NIC stops draining its receive buffer
//!   - { at: 1000, flush-fdb: { switch: t0, port: Ethernet4 } }
//!   - { at: 0, apply: { switch: t0, config: { SWITCH: { switch: { lossless_fdb_miss_action: flood } } } } }
//!   - { at: 1500, apply: { switch: t0, config: t0-new.yaml, replace: true } }
//!   - { at: 2, link-down: { end: leaf0:Ethernet8, stop: 5 } }  # swctl sim run only: the link fails
//! expect:
//!   - pfcwd_detected: { switch: sw1, port: Ethernet4, queue: 3, within_ms: 650 }
//!   - goodput_mbps_at_least: { flow: 0, value: 200 }
//!   - psn_gaps: { flow: 0, max: 0 }
//!   - drop_reason: { switch: t0, reason: FDB_MISS_LOSSLESS, min: 1 }
//!   - flooded_frames: { switch: t0, port: Ethernet8, queue: 3, min: 1 }
//!   - fdb_entry: { switch: t0, host: h3, present: false }   # at the end of the run
//!   - neighbor: { switch: t0, host: h3, present: true }
//!   - pfc_tx: { switch: sw1, port: [Ethernet0, Ethernet4], priority: 3, min: 1 }
//!   - port_paused_ms: { switch: sw1, port: Ethernet4, priority: 3, max: 50 }
//!   - queue_depth: { switch: sw1, port: Ethernet8, queue: 3, max: 20 }
//!   - cnps: { flow: [2, 3], min: 1 }                         # flows: numbered from 0 in step order
//!   - ratio: { of: { pause_ms: { flow: [2, 3] } }, to: { pause_ms: { flow: [0, 1] } }, max: 0.5 }
//!   - throughput_mbps: { flow: [2, 3], from_ms: 6, to_ms: 10, max: 0 }      # swctl sim run only
//!   - pfc_paused_at_end: { switch: t0a, port: [Ethernet0, Ethernet4], priority: 3, paused: true }  # sim only
//!   - flow_rate_mbps: { flow: [0, 1], of: sent, value: 50000, within_percent: 5, from_ms: 4, to_ms: 10 }
//!   - paused_percent: { flow: [0, 1], max: 1, from_ms: 4, to_ms: 10 }       # swctl sim run only
//!   - ecn_before_xoff: { switch: sw1, port: Ethernet8, queue: 3 }
//! pingmesh: { interval-us: 100, dscp: 3 }    # every host probes every other (docs/pingmesh.md)
//! ```
//!
//! Metrics (`min`/`max` bounds, or the two sides of a `ratio`):
//! - `pfc_tx`: PFC frames the switch sent on the port(s) for the priority (summed);
//! - `port_paused_ms`: time the port(s) were paused by PFC received from the peer (summed; `rx_pause_us`
//!   of the final counters);
//! - `queue_depth`: frames in the egress queue, averaged over the counter samples (every
//!   [`SAMPLE_INTERVAL_MS`]) taken during the scenario's duration from when its traffic began (in a lab,
//!   the first sender's start: its flows and `--duration` count from there);
//! - per flow, summed over the flows listed: `goodput_mbps` (receiver, while it got data),
//!   `delivered_mbps` (receiver, payload over the scenario from the flow's start: stalls count), `psn_gaps`
//!   (receiver), `cnps`
//!   (CNPs the sender received), `pause_ms` (time the sender's NIC was paused on the flow's priority; a host
//!   sending two flows on one priority counts it for each), `retransmitted` (sender packets),
//!   `dcqcn_rate_decreases` and `dcqcn_rate_mbps` (the sender's DCQCN reaction point: rate cuts, and its
//!   rate when the run ended; 0 with DCQCN off).
//!
//! Only in virtual time (`swctl sim run`, which samples the senders and reads the models' PFC state; a lab
//! run reports them as failed, with the reason):
//! - `throughput_mbps`: payload bytes the receivers acknowledged between `from_ms` and `to_ms` (ms after
//!   the hosts were up), as Mb/s over that window, summed over the flows listed; every sender's byte counts
//!   are taken at exactly those two instants, as for `flow_rate_mbps` (a window the run does not cover
//!   fails);
//! - `pfc_paused_at_end`: whether each port listed is paused by its peer's PFC on the priority when the run
//!   ends (`paused: true`: all of them are; `false`: none is).
//!
//! Over time ([`timed`]): `flow_rate_mbps` checks each listed flow's rate between `from_ms` and `to_ms`
//! (`of: sent`, payload bytes put on the wire, or `of: acked`, payload bytes acknowledged) against `value`
//! ± `within_percent` %; only `swctl sim run` has the byte counts at those instants (in a lab it fails,
//! saying so). `paused_percent` bounds the share of `from_ms..to_ms` each listed flow's sender was paused
//! by PFC on the flow's priority (sim only, likewise). `ecn_before_xoff` holds when the queue's first CE mark came before the switch's first PFC
//! XOFF on any port, or when there was a mark and no XOFF at all (both modes: the switch's events).
//!
//! Steps:
//! - `storm` runs in the host's own rocehost (`--storm`, `--storm-from`, `--storm-until`);
//! - `rx-stuck` stops the receive pipeline of the host's NIC (`--rx-stuck-from`, `--rx-stuck-until`): its
//!   receive buffer fills and the NIC pauses its peer (the host needs an `rx-pipeline` in the topology);
//! - `stop-host` stops the host's rocehost (SIGTERM; it writes its report): a dead server. Nothing leaves
//!   the host any more for traffic from off its subnet (its kernel has no route back); traffic from its own
//!   subnet may still draw a few rate-limited ICMP errors from its kernel;
//! - `flush-fdb` removes learned FDB entries (all, or one port's), as MAC aging does; neighbours stay;
//! - `link-down` (simulator only; a lab run refuses it) takes the link at a switch port down, both
//!   directions, until `stop` if given: frames on it are lost, the switches at its ends see their ports go
//!   oper down (queued frames dropped, no PFC) and route around them (an ECMP group loses the member);
//! - `apply` pushes a configuration over the switch's Apply RPC at its running generation: merged field by
//!   field into the running configuration, or with `replace: true` as the whole configuration (NULL lossless
//!   PG profiles are computed as `swctl apply` does). The switch validates it; a refusal fails the scenario
//!   with the switch's issues (`TABLE|key|field: message`).
//!
//! Storm start and detection are measured on the switch's clock: the storm began between the last counter
//! sample without PFC RX growth on a storm priority and the first with it, and the `pfc_storm_detected`
//! event of the Subscribe stream ends it; `pfcwd_detected` checks the longer of the two delays (the
//! detection certainly happened within it).
//!
//! The switch's clock is the machine's `CLOCK_MONOTONIC`, which the hosts' rocehost reports use too: the
//! report puts switch events, storm starts and the flows' first and last frames on one timeline, in ms
//! after the hosts were up (the origin of the steps' times), and gives that origin in wall-clock time.
//!
//! Here: the scenario as checked ([`Scenario`]), its file form ([`file`](mod@file): serde types, validation), the run
//! ([`run`](mod@run)) and the report ([`report`]).

pub mod file;
mod one_or_many;
pub mod report;
pub mod run;
pub mod timed;

use super::topology::Topology;
use lossless_dataplane::model::config::ConfigDb;

pub use run::run;

/// Counter sampling period of a scenario run.
pub const SAMPLE_INTERVAL_MS: u32 = 10;

#[derive(Debug, Clone, Default)]
pub struct Scenario {
    pub name: String,
    pub topology: Topology,
    pub duration_ms: u64,
    pub storms: Vec<Storm>,
    /// Windows in which a host NIC's receive pipeline is stuck.
    pub rx_stuck: Vec<RxStuck>,
    /// Timed actions on switches and hosts, in time order (file order for equal times).
    pub actions: Vec<Action>,
    pub expect: Vec<Expect>,
    /// Every host probes every other during the run (docs/pingmesh.md).
    pub pingmesh: Option<crate::pingmesh::PingmeshSpec>,
}

#[derive(Debug, Clone)]
pub struct Storm {
    pub host: String,
    pub priorities: Vec<u8>,
    pub interval_us: u64,
    pub start_ms: u64,
    pub stop_ms: Option<u64>,
}

/// A host NIC's receive pipeline stuck from `start_ms` (to `stop_ms`).
#[derive(Debug, Clone)]
pub struct RxStuck {
    pub host: String,
    pub start_ms: u64,
    pub stop_ms: Option<u64>,
    /// Its index in `steps`, for messages.
    pub step: usize,
}

#[derive(Debug, Clone)]
pub struct Action {
    pub at_ms: u64,
    /// `steps[i]`, for messages.
    pub step: String,
    pub kind: ActionKind,
}

#[derive(Debug, Clone)]
pub enum ActionKind {
    FlushFdb {
        switch: String,
        port: Option<String>,
    },
    StopHost {
        host: String,
    },
    Apply {
        switch: String,
        config: ConfigDb,
        replace: bool,
        source: String,
    },
    /// The link at a switch port goes down (`up: false`) or comes back (simulator only: `link-down`).
    LinkState {
        end: super::topology::End,
        up: bool,
    },
}

#[derive(Debug, Clone)]
pub enum Expect {
    PfcwdDetected {
        switch: String,
        port: String,
        queue: u32,
        within_ms: u64,
    },
    DropReason {
        switch: String,
        reason: String,
        min: Option<u64>,
        max: Option<u64>,
    },
    Flooded {
        switch: String,
        port: String,
        queue: u32,
        min: Option<u64>,
        max: Option<u64>,
    },
    /// A metric within bounds.
    Bounds {
        metric: Metric,
        min: Option<f64>,
        max: Option<f64>,
    },
    /// `of / to` within bounds.
    Ratio {
        of: Metric,
        to: Metric,
        min: Option<f64>,
        max: Option<f64>,
    },
    /// Each flow's rate over `from_ms..to_ms` within `within_percent` % of `value_mbps`.
    FlowRate {
        flows: Vec<usize>,
        of: timed::RateOf,
        value_mbps: f64,
        within_percent: f64,
        from_ms: u64,
        to_ms: u64,
    },
    /// Each flow's sender paused by PFC at most `max_percent` % of `from_ms..to_ms`.
    PausedPercent {
        flows: Vec<usize>,
        max_percent: f64,
        from_ms: u64,
        to_ms: u64,
    },
    /// The queue's first CE mark before the switch's first XOFF (or a mark and no XOFF).
    EcnBeforeXoff {
        switch: String,
        port: String,
        queue: u8,
    },
    /// The switch's FDB (the host's MAC) or neighbour table (its IP) has, or has not, the host's entry.
    Entry {
        switch: String,
        host: String,
        table: Table,
        present: bool,
    },
    /// Acknowledged payload of the flows between two instants, as Mb/s (virtual time only).
    Throughput {
        flows: Vec<usize>,
        from_ms: u64,
        to_ms: u64,
        min: Option<f64>,
        max: Option<f64>,
    },
    /// The ports are (or are not) paused by their peers' PFC on `priority` when the run ends (virtual time
    /// only).
    PausedAtEnd {
        switch: String,
        ports: Vec<String>,
        priority: u8,
        paused: bool,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Table {
    Fdb,
    Neighbor,
}

#[derive(Debug, Clone)]
pub enum Metric {
    PfcTx {
        switch: String,
        ports: Vec<String>,
        priority: u8,
    },
    /// Time the port's egress was paused by PFC from its peer (summed over the ports).
    PortPausedMs {
        switch: String,
        ports: Vec<String>,
        priority: u8,
    },
    QueueDepth {
        switch: String,
        port: String,
        queue: u32,
    },
    Flow {
        what: FlowMetric,
        flows: Vec<usize>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlowMetric {
    GoodputMbps,
    DeliveredMbps,
    PsnGaps,
    Cnps,
    PauseMs,
    Retransmitted,
    RateDecreases,
    RateMbps,
}

impl FlowMetric {
    pub(super) fn describe(self) -> &'static str {
        match self {
            FlowMetric::GoodputMbps => "goodput (Mb/s)",
            FlowMetric::DeliveredMbps => "delivered over the scenario (Mb/s)",
            FlowMetric::PsnGaps => "PSN gaps",
            FlowMetric::Cnps => "CNPs received by the sender",
            FlowMetric::PauseMs => "sender paused (ms)",
            FlowMetric::Retransmitted => "retransmitted packets",
            FlowMetric::RateDecreases => "DCQCN rate decreases",
            FlowMetric::RateMbps => "DCQCN rate at the end (Mb/s)",
        }
    }
}

impl Metric {
    pub(super) fn describe(&self) -> String {
        match self {
            Metric::PfcTx { switch, ports, priority } => {
                format!("{switch} PFC frames sent on {} priority {priority}", ports.join("+"))
            }
            Metric::PortPausedMs { switch, ports, priority } => {
                format!("{switch} {} paused by its peer on priority {priority} (ms)", ports.join("+"))
            }
            Metric::QueueDepth { switch, port, queue } => {
                format!("{switch} {port} queue {queue} mean depth (frames)")
            }
            Metric::Flow { what, flows } => {
                let list = flows.iter().map(usize::to_string).collect::<Vec<_>>().join("+");
                format!("flow {list} {}", what.describe())
            }
        }
    }

    /// The switch and ports the metric reads, to check that they exist.
    pub(super) fn switch(&self) -> Option<(&str, Vec<&str>)> {
        match self {
            Metric::PfcTx { switch, ports, .. } | Metric::PortPausedMs { switch, ports, .. } => {
                Some((switch, ports.iter().map(String::as_str).collect()))
            }
            Metric::QueueDepth { switch, port, .. } => Some((switch, vec![port.as_str()])),
            Metric::Flow { .. } => None,
        }
    }
}
