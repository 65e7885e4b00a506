//! The PFC watchdog, as SONiC's pfcwdorch and its per-vendor detection scripts run it
//! (`docs/pfc-watchdog.md`; sonic-net/sonic-swss: `orchagent/pfcwdorch.cpp`, `orchagent/pfc_detect_*.lua`,
//! `orchagent/pfc_restore.lua`).
//!
//! Every `POLL_INTERVAL` each monitored queue (a priority in the port's `pfcwd_sw_enable`, on a port with
//! a `PFC_WD` entry) is checked against the detection rule:
//! - `vs` (default; SONiC vs and the historic Mellanox rule): the queue holds packets, transmitted nothing
//!   since the last poll, and was paused by PFC during the interval (PFC frames received or pause time grew);
//! - `broadcom`: PFC frames for the priority were received since the last poll, no XON among them, and the
//!   queue was paused at both polls;
//! - `DEBUG_STORM` on the queue forces the condition.
//!
//! A countdown `time_left` starts at `detection_time`; each poll with the condition true declares a storm
//! if `time_left` has run out and otherwise subtracts the poll interval; a poll without it resets the
//! countdown. The condition is first seen at the first poll after a storm begins, so the storm is declared
//! `detection_time` later: more than `detection_time` and at most `detection_time` + one poll after it began.
//! (SONiC's scripts declare one poll earlier, `time_left <= poll`, which can fire slightly before
//! `detection_time`; sonic-mgmt's timer test expects the window used here.)
//! Restoration: a stormed queue (action drop/forward) is restored after `restoration_time` of polls with no
//! PFC XOFF frame received for its priority: the poll that sees the storm's last frames (or the fake storm
//! on since the previous poll) restarts the countdown, each later poll subtracts the poll interval, and the
//! poll that brings it to zero restores: more than `restoration_time` and at most `restoration_time` + one
//! poll after the last XOFF (the window sonic-mgmt's timer test expects). XON frames (quanta 0) do not
//! reset the countdown: an XON storm must not keep a queue stormed (the fix sonic-swss#4581 asks for; SONiC
//! today resets on any frame). An `alert` queue is restored as soon as the condition stops holding.
//! `BIG_RED_SWITCH` puts every monitored queue under the drop action at once and suspends detection.
//!
//! This module only decides; the switch carries out the actions (see `Switch`): drop and forward stop
//! honouring and generating PFC on the priority; drop also flushes the queue and drops what is sent to it
//! (and, with `drop_ingress`, ingress traffic of the priority on that port); alert only records.

use super::config::{PfcWdAction, PfcWdDetectionRule, PfcWdPort, PortId, SwitchConfig};
use crate::time::{Instant, Nanos};

/// Counters of one watched queue (`PFC_WD_QUEUE_STATS_*`); `*_last` cover the most recent storm only.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct PfcWdCounters {
    pub deadlock_detected: u64,
    pub deadlock_restored: u64,
    pub tx_packets: u64,
    pub tx_dropped_packets: u64,
    pub rx_packets: u64,
    pub rx_dropped_packets: u64,
    pub tx_packets_last: u64,
    pub tx_dropped_packets_last: u64,
    pub rx_packets_last: u64,
    pub rx_dropped_packets_last: u64,
}

/// What the watchdog reads of a queue at each poll.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueObservation {
    /// Packets waiting in the queue.
    pub occupancy: usize,
    /// The queue's transmitted and dropped packet counters.
    pub tx_packets: u64,
    pub tx_dropped: u64,
    /// PFC frames received for the queue's priority, and XON frames among them.
    pub pfc_rx: u64,
    pub pfc_rx_xon: u64,
    /// Paused by PFC right now.
    pub paused: bool,
    /// Total time paused so far.
    pub paused_total: Nanos,
    /// Packets and drops of the same-index ingress PG.
    pub pg_packets: u64,
    pub pg_dropped: u64,
}

/// A storm detected or restored at a poll.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transition {
    pub port: PortId,
    pub queue: u8,
    pub priority: u8,
    pub stormed: bool,
    pub action: PfcWdAction,
}

#[derive(Debug, Clone, Copy, Default)]
struct QueueWatch {
    /// The PFC priority watched on this queue, if it is monitored.
    priority: Option<u8>,
    stormed: bool,
    detection_left: Nanos,
    restoration_left: Nanos,
    last: Option<QueueObservation>,
    storm_start: QueueObservation,
    debug_storm: bool,
    /// The fake storm was on at some time since the last poll (it counts as storm evidence for that
    /// interval, as XOFF frames received in it do).
    debug_seen: bool,
    counters: PfcWdCounters,
}

#[derive(Debug, Clone, Default)]
struct PortWatch {
    config: Option<PfcWdPort>,
    queues: [QueueWatch; 8],
}

/// The watchdog of the whole switch.
#[derive(Debug, Clone, Default)]
pub struct Watchdog {
    poll: Nanos,
    rule: Option<PfcWdDetectionRule>,
    big_red_switch: bool,
    drop_ingress: bool,
    next_poll: Option<Instant>,
    ports: Vec<PortWatch>,
}

/// A configured restoration time, or none: never restored by time alone.
fn restoration(ms: Option<u32>) -> Nanos {
    ms.map_or(Nanos::MAX, |r| Nanos::from_ms(u64::from(r)))
}

impl Watchdog {
    /// Applies `PFC_WD` and `pfcwd_sw_enable`. Storm state and counters survive when the port set is
    /// unchanged (`keep`); a queue that stops being monitored loses its storm.
    pub fn configure(&mut self, config: &SwitchConfig, keep: bool, now: Instant) -> Vec<Transition> {
        let g = config.pfc_wd_global;
        self.poll = Nanos::from_ms(u64::from(g.poll_interval_ms.max(1)));
        self.rule = Some(g.detection_rule);
        self.drop_ingress = g.drop_ingress;
        if !keep {
            self.ports.clear();
        }
        self.ports.resize_with(config.ports.len(), PortWatch::default);
        let mut restored = Vec::new();
        for (i, port) in self.ports.iter_mut().enumerate() {
            port.config = config.pfc_wd.get(i).copied().flatten();
            let qos = &config.qos[i];
            for q in 0..8u8 {
                let priority = (0..8u8).find(|&p| {
                    qos.pfcwd_sw_enable & (1 << p) != 0 && qos.pfc_to_queue[usize::from(p)] & 7 == q
                });
                let watch = &mut port.queues[usize::from(q)];
                let monitored = port.config.is_some() && priority.is_some();
                if !monitored && watch.stormed {
                    watch.stormed = false;
                    restored.push(Transition {
                        port: PortId::new(i),
                        queue: q,
                        priority: watch.priority.unwrap_or(q),
                        stormed: false,
                        action: PfcWdAction::Alert,
                    });
                }
                watch.priority = if monitored { priority } else { None };
                if let Some(c) = port.config {
                    watch.detection_left = Nanos::from_ms(u64::from(c.detection_time_ms));
                    watch.restoration_left = restoration(c.restoration_time_ms);
                }
            }
        }
        self.big_red_switch = g.big_red_switch;
        let any = self.ports.iter().any(|p| p.config.is_some());
        self.next_poll = any.then(|| now + self.poll);
        restored
    }

    pub fn next_poll_at(&self) -> Option<Instant> {
        self.next_poll
    }

    /// Forces (or stops forcing) the storm condition on a queue, as SONiC's `DEBUG_STORM`.
    pub fn set_debug_storm(&mut self, port: PortId, queue: u8, on: bool) {
        if let Some(p) = self.ports.get_mut(port.index()) {
            let w = &mut p.queues[usize::from(queue & 7)];
            w.debug_storm = on;
            w.debug_seen |= on;
        }
    }

    /// The action in force on a queue: `Some` while it is stormed (or under the big red switch).
    pub fn action(&self, port: PortId, queue: u8) -> Option<PfcWdAction> {
        let p = self.ports.get(port.index())?;
        let w = &p.queues[usize::from(queue & 7)];
        w.priority?;
        if self.big_red_switch {
            return Some(PfcWdAction::Drop);
        }
        w.stormed.then(|| p.config.map_or(PfcWdAction::Drop, |c| c.action))
    }

    /// Priorities of a port whose PFC is switched off by the watchdog (drop/forward storms, big red switch).
    pub fn pfc_disabled_priorities(&self, port: PortId) -> u8 {
        let Some(p) = self.ports.get(port.index()) else { return 0 };
        (0..8u8).fold(0, |mask, q| match (self.action(port, q), p.queues[usize::from(q)].priority) {
            (Some(PfcWdAction::Drop | PfcWdAction::Forward), Some(prio)) => mask | 1 << prio,
            _ => mask,
        })
    }

    /// Queues of a port whose traffic the drop action discards.
    pub fn dropping_queues(&self, port: PortId) -> u8 {
        (0..8u8).fold(0, |m, q| if self.action(port, q) == Some(PfcWdAction::Drop) { m | 1 << q } else { m })
    }

    /// Priorities whose ingress traffic on this port is dropped (drop action with `drop_ingress`).
    pub fn dropping_ingress_priorities(&self, port: PortId) -> u8 {
        if !self.drop_ingress {
            return 0;
        }
        let Some(p) = self.ports.get(port.index()) else { return 0 };
        (0..8u8).fold(0, |m, q| match (self.action(port, q), p.queues[usize::from(q)].priority) {
            (Some(PfcWdAction::Drop), Some(prio)) => m | 1 << prio,
            _ => m,
        })
    }

    pub fn counters(&self, port: PortId, queue: u8) -> PfcWdCounters {
        self.ports
            .get(port.index())
            .map_or_else(PfcWdCounters::default, |p| p.queues[usize::from(queue & 7)].counters)
    }

    /// Is the queue monitored, and is it stormed?
    pub fn status(&self, port: PortId, queue: u8) -> Option<bool> {
        let p = self.ports.get(port.index())?;
        let w = &p.queues[usize::from(queue & 7)];
        w.priority.map(|_| w.stormed || self.big_red_switch)
    }

    /// Runs one poll at `at` if it is due; `observe(port, queue, priority)` reads the queue.
    pub fn poll(
        &mut self,
        at: Instant,
        mut observe: impl FnMut(PortId, u8, u8) -> QueueObservation,
    ) -> Vec<Transition> {
        let mut out = Vec::new();
        let Some(due) = self.next_poll.filter(|&t| t <= at) else { return out };
        let poll = self.poll;
        // The next poll on the grid of polls, after `at` (polls missed by a late call are skipped).
        self.next_poll = Some(due + poll * (at.saturating_since(due).as_ns() / poll.as_ns() + 1));
        let (rule, brs) = (self.rule.unwrap_or(PfcWdDetectionRule::Vs), self.big_red_switch);
        for (port, pw) in PortId::all(self.ports.len()).zip(self.ports.iter_mut()) {
            let Some(cfg) = pw.config else { continue };
            for q in 0..8u8 {
                let w = &mut pw.queues[usize::from(q)];
                let Some(priority) = w.priority else { continue };
                let now = observe(port, q, priority);
                let last = w.last.replace(now);
                let debug_seen = std::mem::replace(&mut w.debug_seen, w.debug_storm);
                if brs {
                    continue;
                }
                let Some(last) = last else { continue };
                let condition = w.debug_storm
                    || match rule {
                        PfcWdDetectionRule::Vs => {
                            now.occupancy > 0
                                && now.tx_packets == last.tx_packets
                                && (now.pfc_rx > last.pfc_rx || now.paused_total > last.paused_total)
                        }
                        PfcWdDetectionRule::Broadcom => {
                            now.pfc_rx > last.pfc_rx
                                && now.pfc_rx_xon == last.pfc_rx_xon
                                && last.paused
                                && now.paused
                        }
                    };
                let detection = Nanos::from_ms(u64::from(cfg.detection_time_ms));
                if w.stormed {
                    w.update_storm_counters(&now);
                    let restore = if cfg.action == PfcWdAction::Alert {
                        !condition
                    } else if now.pfc_rx - now.pfc_rx_xon != last.pfc_rx - last.pfc_rx_xon || debug_seen {
                        w.restoration_left = restoration(cfg.restoration_time_ms);
                        false
                    } else {
                        w.restoration_left -= poll;
                        w.restoration_left.is_zero()
                    };
                    if restore {
                        w.stormed = false;
                        w.counters.deadlock_restored += 1;
                        w.detection_left = detection;
                        out.push(Transition { port, queue: q, priority, stormed: false, action: cfg.action });
                    }
                } else if !condition {
                    w.detection_left = detection;
                } else if w.detection_left.is_zero() {
                    w.stormed = true;
                    w.counters.deadlock_detected += 1;
                    w.storm_start = now;
                    let c = &mut w.counters;
                    (
                        c.tx_packets_last,
                        c.tx_dropped_packets_last,
                        c.rx_packets_last,
                        c.rx_dropped_packets_last,
                    ) = (0, 0, 0, 0);
                    w.detection_left = detection;
                    w.restoration_left = restoration(cfg.restoration_time_ms);
                    out.push(Transition { port, queue: q, priority, stormed: true, action: cfg.action });
                } else {
                    w.detection_left -= poll;
                }
            }
        }
        out
    }

    /// The counters of a queue as of a fresh observation `now`: a stormed queue's storm counters brought up
    /// to date (the switch reports these, so they are exact between polls too).
    pub fn counters_now(&self, port: PortId, queue: u8, now: &QueueObservation) -> PfcWdCounters {
        let Some(p) = self.ports.get(port.index()) else { return PfcWdCounters::default() };
        let mut w = p.queues[usize::from(queue & 7)];
        if w.stormed {
            w.update_storm_counters(now);
        }
        w.counters
    }
}

impl QueueWatch {
    /// TX/RX counters of the current storm are deltas since it began; the totals add the previous storms.
    fn update_storm_counters(&mut self, now: &QueueObservation) {
        let s = &self.storm_start;
        let c = &mut self.counters;
        let (tx, txd) = (now.tx_packets - s.tx_packets, now.tx_dropped - s.tx_dropped);
        let (rx, rxd) = (now.pg_packets - s.pg_packets, now.pg_dropped - s.pg_dropped);
        c.tx_packets += tx - c.tx_packets_last;
        c.tx_dropped_packets += txd - c.tx_dropped_packets_last;
        c.rx_packets += rx - c.rx_packets_last;
        c.rx_dropped_packets += rxd - c.rx_dropped_packets_last;
        (c.tx_packets_last, c.tx_dropped_packets_last, c.rx_packets_last, c.rx_dropped_packets_last) =
            (tx, txd, rx, rxd);
    }
}
