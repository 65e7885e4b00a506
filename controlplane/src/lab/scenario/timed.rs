//! Expectations on what happened when: a flow's rate over a window of the run (`flow_rate_mbps`), how much
//! of a window a flow's sender was paused by PFC (`paused_percent`), and whether a queue's ECN marking
//! began before the switch's first PFC XOFF (`ecn_before_xoff`).
//!
//! ```yaml
//! expect:
//!   # Each of flows 0-7 sent 12,252 Mb/s ± 5 % between 4 and 10 ms (bytes sent in the window / its length).
//!   - flow_rate_mbps: { flow: [0, 1, 2, 3, 4, 5, 6, 7], of: sent, value: 12252, within_percent: 5, from_ms: 4, to_ms: 10 }
//!   # sw1 Ethernet32 queue 3 marked its first CE before any port of sw1 sent XOFF (or none ever did).
//!   - ecn_before_xoff: { switch: sw1, port: Ethernet32, queue: 3 }
//!   # Flow 8 had nothing acknowledged between 1 and 5 ms (value 0: exactly 0).
//!   - flow_rate_mbps: { flow: 8, of: acked, value: 0, within_percent: 1, from_ms: 1, to_ms: 5 }
//!   # The senders of flows 0-7 were each paused by PFC (on the flow's priority) at most 1 % of 20-50 ms.
//!   - paused_percent: { flow: [0, 1, 2, 3, 4, 5, 6, 7], max: 1, from_ms: 20, to_ms: 50 }
//! ```
//!
//! `of: sent` counts the payload bytes the sender put on the wire (retransmissions included), `of: acked` the
//! payload bytes acknowledged (with go-back-0 only whole messages are). The byte counts come from
//! snapshots of every flow at `from_ms` and `to_ms`, which `swctl sim run` takes at exactly those
//! instants; a lab's hosts report their flows only at the end, so in `swctl lab run` the expectation fails
//! and says so. `paused_percent` reads the sender NIC's pause time on the flow's priority from the same
//! snapshots. The instants of the first CE mark of a queue and of a switch's first XOFF come from the
//! switch's `ecn_first_mark` and `xoff` events, in both modes (a lab's Subscribe stream, stamped by the
//! switch; the simulator's exact virtual time).

use super::file::OneOrMany;
use super::report::Observed;
use super::{Expect, Scenario};
use crate::lab::topology::Topology;
use anyhow::bail;
use lossless_proto::v1 as pb;
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};

/// What a flow's rate counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RateOf {
    /// Payload bytes sent, retransmissions included.
    Sent,
    /// Payload bytes acknowledged.
    Acked,
}

impl RateOf {
    fn describe(self) -> &'static str {
        match self {
            RateOf::Sent => "send rate",
            RateOf::Acked => "acknowledged rate",
        }
    }
}

/// `flow_rate_mbps: { flow, of, value, within_percent, from_ms, to_ms }`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowRateFile {
    pub flow: OneOrMany<u64>,
    pub of: RateOf,
    /// Mb/s.
    pub value: f64,
    pub within_percent: f64,
    /// ms after the hosts were up.
    pub from_ms: u64,
    pub to_ms: u64,
}

/// `paused_percent: { flow, max, from_ms, to_ms }`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PausedPercentFile {
    pub flow: OneOrMany<u64>,
    /// Percent of the window, each flow.
    pub max: f64,
    /// ms after the hosts were up.
    pub from_ms: u64,
    pub to_ms: u64,
}

/// `ecn_before_xoff: { switch, port, queue }`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EcnBeforeXoffFile {
    pub switch: String,
    pub port: String,
    pub queue: u64,
}

/// The flows listed, checked against the topology's traffic (numbered from 0 in step order).
fn flow_list(flow: OneOrMany<u64>, t: &Topology, what: &str) -> anyhow::Result<Vec<usize>> {
    let flows = match flow {
        OneOrMany::One(n) => vec![n],
        OneOrMany::Many(v) if v.is_empty() => bail!("{what}.flow: an empty list"),
        OneOrMany::Many(v) => v,
    };
    flows
        .into_iter()
        .map(|n| {
            let i = usize::try_from(n).unwrap_or(usize::MAX);
            if i >= t.traffic.len() {
                bail!(
                    "{what}: flow {n}: there are {} flows (numbered from 0 in step order)",
                    t.traffic.len()
                );
            }
            Ok(i)
        })
        .collect()
}

/// `from_ms..to_ms` is a window inside the scenario.
fn check_window(from_ms: u64, to_ms: u64, duration_ms: u64, what: &str) -> anyhow::Result<()> {
    if from_ms >= to_ms {
        bail!("{what}: from_ms {from_ms} must be before to_ms {to_ms}");
    }
    if to_ms > duration_ms {
        bail!("{what}.to_ms: {to_ms} is after the scenario's end (duration-ms {duration_ms})");
    }
    Ok(())
}

impl PausedPercentFile {
    pub(super) fn resolve(self, t: &Topology, duration_ms: u64, what: &str) -> anyhow::Result<Expect> {
        let flows = flow_list(self.flow, t, what)?;
        if !(0.0..=100.0).contains(&self.max) {
            bail!("{what}.max: {} is outside 0-100 (percent of the window)", self.max);
        }
        check_window(self.from_ms, self.to_ms, duration_ms, what)?;
        Ok(Expect::PausedPercent { flows, max_percent: self.max, from_ms: self.from_ms, to_ms: self.to_ms })
    }
}

impl FlowRateFile {
    pub(super) fn resolve(self, t: &Topology, duration_ms: u64, what: &str) -> anyhow::Result<Expect> {
        let flows = flow_list(self.flow, t, what)?;
        if !(self.value.is_finite() && self.value >= 0.0) {
            bail!("{what}.value: {} is not a rate (Mb/s, 0 or more)", self.value);
        }
        if !(self.within_percent > 0.0 && self.within_percent <= 100.0) {
            bail!("{what}.within_percent: {} is outside (0, 100]", self.within_percent);
        }
        check_window(self.from_ms, self.to_ms, duration_ms, what)?;
        Ok(Expect::FlowRate {
            flows,
            of: self.of,
            value_mbps: self.value,
            within_percent: self.within_percent,
            from_ms: self.from_ms,
            to_ms: self.to_ms,
        })
    }
}

impl EcnBeforeXoffFile {
    pub(super) fn resolve(self, what: &str) -> anyhow::Result<Expect> {
        let Some(queue) = u8::try_from(self.queue).ok().filter(|q| *q < 8) else {
            bail!("{what}.queue: {} is outside 0-7", self.queue);
        };
        Ok(Expect::EcnBeforeXoff { switch: self.switch, port: self.port, queue })
    }
}

impl Scenario {
    /// The instants (ms after the hosts were up) at which `flow_rate_mbps` and `throughput_mbps`
    /// expectations need every flow's byte counts.
    pub fn flow_snapshot_instants_ms(&self) -> BTreeSet<u64> {
        self.expect
            .iter()
            .filter_map(|e| match e {
                Expect::FlowRate { from_ms, to_ms, .. }
                | Expect::Throughput { from_ms, to_ms, .. }
                | Expect::PausedPercent { from_ms, to_ms, .. } => Some([*from_ms, *to_ms]),
                _ => None,
            })
            .flatten()
            .collect()
    }
}

/// One flow's byte counts at an instant, and its sender's PFC pause time so far on the flow's priority.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FlowBytes {
    pub sent_bytes: u64,
    pub acked_bytes: u64,
    pub paused_ns: u64,
}

/// Per instant (ms after the hosts were up), every flow's byte counts in flow order.
pub type FlowSnapshots = BTreeMap<u64, Vec<FlowBytes>>;

/// The first XOFF of a switch and the first CE mark of each of its queues, on the switch's clock (ns).
#[derive(Debug, Clone, Default)]
pub struct Firsts {
    /// (when, port, PG).
    pub xoff: Option<(u64, String, u32)>,
    /// Per (port, queue).
    pub ecn: BTreeMap<(String, u32), u64>,
}

impl Firsts {
    /// Notes an event of the switch's stream (events arrive in time order).
    pub fn note(&mut self, e: &pb::SwitchEvent) {
        match e.kind.as_str() {
            "xoff" if self.xoff.is_none() => self.xoff = Some((e.timestamp_ns, e.port.clone(), e.index)),
            "ecn_first_mark" => {
                self.ecn.entry((e.port.clone(), e.index)).or_insert(e.timestamp_ns);
            }
            _ => {}
        }
    }
}

/// `(expectation, holds, evidence)` of a `flow_rate_mbps`.
pub(super) fn flow_rate(
    seen: &Observed,
    flows: &[usize],
    of: RateOf,
    (value, percent): (f64, f64),
    (from_ms, to_ms): (u64, u64),
) -> (String, bool, String) {
    let list = flows.iter().map(usize::to_string).collect::<Vec<_>>().join("+");
    let expectation = format!(
        "flow {list} {} {from_ms}-{to_ms} ms within {percent} % of {value} Mb/s (each)",
        of.describe()
    );
    let (Some(from), Some(to)) = (seen.flow_snapshots.get(&from_ms), seen.flow_snapshots.get(&to_ms)) else {
        let why = if seen.flow_snapshots.is_empty() {
            "no per-flow byte counts during the run (a lab's hosts report at the end only; swctl sim run has them)"
        } else {
            "the run ended before the window did"
        };
        return (expectation, false, why.into());
    };
    let window_us = (to_ms - from_ms) as f64 * 1e3;
    let (low, high) = (value * (1.0 - percent / 100.0), value * (1.0 + percent / 100.0));
    let mut holds = true;
    let mut rates = Vec::new();
    for &i in flows {
        let (a, b) = (from.get(i).copied().unwrap_or_default(), to.get(i).copied().unwrap_or_default());
        let bytes = match of {
            RateOf::Sent => b.sent_bytes.saturating_sub(a.sent_bytes),
            RateOf::Acked => b.acked_bytes.saturating_sub(a.acked_bytes),
        };
        let mbps = bytes as f64 * 8.0 / window_us;
        holds &= (low..=high).contains(&mbps);
        if value > 0.0 {
            rates.push(format!("flow {i} {mbps:.0} ({:+.1} %)", (mbps / value - 1.0) * 100.0));
        } else {
            rates.push(format!("flow {i} {mbps:.0}"));
        }
    }
    (expectation, holds, format!("{} Mb/s; bounds {low:.0}-{high:.0}", rates.join(", ")))
}

/// `(expectation, holds, evidence)` of a `paused_percent`.
pub(super) fn paused_percent(
    seen: &Observed,
    flows: &[usize],
    max_percent: f64,
    (from_ms, to_ms): (u64, u64),
) -> (String, bool, String) {
    let list = flows.iter().map(usize::to_string).collect::<Vec<_>>().join("+");
    let expectation =
        format!("flow {list} sender paused by PFC at most {max_percent} % of {from_ms}-{to_ms} ms (each)");
    let (Some(from), Some(to)) = (seen.flow_snapshots.get(&from_ms), seen.flow_snapshots.get(&to_ms)) else {
        let why = if seen.flow_snapshots.is_empty() {
            "no per-flow pause times during the run (a lab's hosts report at the end only; swctl sim run has them)"
        } else {
            "the run ended before the window did"
        };
        return (expectation, false, why.into());
    };
    let window_ns = (to_ms - from_ms) as f64 * 1e6;
    let mut holds = true;
    let mut each = Vec::new();
    for &i in flows {
        let (a, b) = (from.get(i).copied().unwrap_or_default(), to.get(i).copied().unwrap_or_default());
        let percent = b.paused_ns.saturating_sub(a.paused_ns) as f64 / window_ns * 100.0;
        holds &= percent <= max_percent;
        each.push(format!("flow {i} {percent:.2} %"));
    }
    (expectation, holds, each.join(", "))
}

/// `(expectation, holds, evidence)` of an `ecn_before_xoff`.
pub(super) fn ecn_before_xoff(
    seen: &Observed,
    switch: &str,
    port: &str,
    queue: u8,
) -> (String, bool, String) {
    let expectation = format!("{switch} {port} queue {queue} marks CE before {switch} sends its first XOFF");
    let firsts = seen.firsts.get(switch);
    let mark = firsts.and_then(|f| f.ecn.get(&(port.to_owned(), u32::from(queue)))).copied();
    let xoff = firsts.and_then(|f| f.xoff.clone());
    let at = |ns: u64| format!("{:.3} ms", seen.ms(ns));
    let (holds, evidence) = match (mark, xoff) {
        (None, None) => (false, "no CE mark and no XOFF".to_owned()),
        (None, Some((x, p, pg))) => (false, format!("no CE mark; first XOFF at {} ({p} PG {pg})", at(x))),
        (Some(m), None) => (true, format!("first CE mark at {}; no XOFF", at(m))),
        (Some(m), Some((x, p, pg))) => (
            m < x,
            format!(
                "first CE mark at {}, first XOFF at {} ({p} PG {pg}): {:.3} µs {}",
                at(m),
                at(x),
                m.abs_diff(x) as f64 / 1e3,
                if m < x { "earlier" } else { "later" }
            ),
        ),
    };
    (expectation, holds, evidence)
}

#[cfg(test)]
mod tests {
    use super::*;
    use lossless_dataplane::rocehost::report::RunStart;

    const ORIGIN_NS: u64 = 1_000_000;

    fn event(kind: &str, port: &str, index: u32, at_ns: u64) -> pb::SwitchEvent {
        pb::SwitchEvent {
            timestamp_ns: at_ns,
            kind: kind.into(),
            port: port.into(),
            index,
            ..Default::default()
        }
    }

    /// Evaluates with these firsts and snapshots (nothing else observed).
    fn with<T>(
        firsts: &BTreeMap<String, Firsts>,
        snapshots: &FlowSnapshots,
        f: impl FnOnce(&Observed) -> T,
    ) -> T {
        let (finals, tables, samples) = (BTreeMap::new(), BTreeMap::new(), BTreeMap::new());
        let seen = Observed {
            finals: &finals,
            tables: &tables,
            samples: &samples,
            window: (ORIGIN_NS, ORIGIN_NS + 10_000_000),
            started: RunStart { monotonic_ns: ORIGIN_NS, unix_ns: ORIGIN_NS },
            events: &[],
            sample_interval_ms: 10.0,
            paused_at_end: None,
            flow_snapshots: snapshots,
            firsts,
        };
        f(&seen)
    }

    #[test]
    fn ecn_before_xoff_compares_the_first_mark_of_the_queue_with_the_first_xoff_of_the_switch() {
        let mut sw = Firsts::default();
        // Events in time order: a mark on another queue, an XOFF, then the queue's mark, a later XOFF.
        sw.note(&event("ecn_first_mark", "Ethernet8", 4, ORIGIN_NS + 10_000));
        sw.note(&event("xoff", "Ethernet4", 3, ORIGIN_NS + 20_000));
        sw.note(&event("ecn_first_mark", "Ethernet8", 3, ORIGIN_NS + 30_000));
        sw.note(&event("xoff", "Ethernet0", 3, ORIGIN_NS + 40_000));
        assert_eq!(sw.xoff, Some((ORIGIN_NS + 20_000, "Ethernet4".into(), 3)), "the first XOFF is kept");
        let firsts = BTreeMap::from([("sw1".to_owned(), sw)]);
        let none = FlowSnapshots::new();
        let (_, holds, evidence) = with(&firsts, &none, |s| ecn_before_xoff(s, "sw1", "Ethernet8", 3));
        assert!(!holds, "{evidence}");
        assert!(
            evidence.contains("first CE mark at 0.030 ms, first XOFF at 0.020 ms (Ethernet4 PG 3)"),
            "{evidence}"
        );
        let (_, holds, evidence) = with(&firsts, &none, |s| ecn_before_xoff(s, "sw1", "Ethernet8", 4));
        assert!(holds, "{evidence}");
        let (_, holds, evidence) = with(&firsts, &none, |s| ecn_before_xoff(s, "sw1", "Ethernet8", 5));
        assert!(!holds && evidence.starts_with("no CE mark"), "{evidence}");
        // A mark and no XOFF at all holds.
        let mut quiet = Firsts::default();
        quiet.note(&event("ecn_first_mark", "Ethernet8", 3, ORIGIN_NS));
        let firsts = BTreeMap::from([("sw1".to_owned(), quiet)]);
        let (_, holds, evidence) = with(&firsts, &none, |s| ecn_before_xoff(s, "sw1", "Ethernet8", 3));
        assert!(holds && evidence.ends_with("no XOFF"), "{evidence}");
    }

    #[test]
    fn flow_rate_is_the_bytes_of_the_window_over_its_length_and_fails_without_snapshots() {
        let bytes = |sent_bytes, acked_bytes| FlowBytes { sent_bytes, acked_bytes, paused_ns: 0 };
        // 4 ms: flow 0 sent 5,000,000 bytes (10,000 Mb/s), acknowledged 4,750,000 (9,500 Mb/s).
        let snapshots = FlowSnapshots::from([
            (1, vec![bytes(1_000_000, 900_000), bytes(0, 0)]),
            (5, vec![bytes(6_000_000, 5_650_000), bytes(0, 0)]),
        ]);
        let firsts = BTreeMap::new();
        let rate = |flows: &[usize], of, value, percent| {
            with(&firsts, &snapshots, |s| flow_rate(s, flows, of, (value, percent), (1, 5)))
        };
        assert!(rate(&[0], RateOf::Sent, 10_000.0, 0.1).1);
        assert!(!rate(&[0], RateOf::Sent, 10_200.0, 1.0).1, "10,000 is 2 % below 10,200");
        let (_, holds, evidence) = rate(&[0], RateOf::Acked, 9_500.0, 1.0);
        assert!(holds && evidence.starts_with("flow 0 9500 (+0.0 %) Mb/s"), "{evidence}");
        // Every flow listed must hold; value 0 means nothing at all.
        assert!(!rate(&[0, 1], RateOf::Sent, 10_000.0, 5.0).1);
        assert!(rate(&[1], RateOf::Acked, 0.0, 5.0).1);
        let (_, holds, evidence) =
            with(&firsts, &FlowSnapshots::new(), |s| flow_rate(s, &[0], RateOf::Sent, (1.0, 5.0), (1, 5)));
        assert!(!holds && evidence.contains("a lab's hosts report at the end only"), "{evidence}");
    }

    #[test]
    fn paused_percent_is_the_pause_time_of_the_window_over_its_length() {
        let paused = |paused_ns| FlowBytes { paused_ns, ..FlowBytes::default() };
        // 2-6 ms (4 ms): flow 0 paused 40 µs more (1 %), flow 1 400 µs more (10 %).
        let snapshots = FlowSnapshots::from([
            (2, vec![paused(500_000), paused(0)]),
            (6, vec![paused(540_000), paused(400_000)]),
        ]);
        let firsts = BTreeMap::new();
        let check =
            |flows: &[usize], max| with(&firsts, &snapshots, |s| paused_percent(s, flows, max, (2, 6)));
        let (_, holds, evidence) = check(&[0], 1.0);
        assert!(holds && evidence == "flow 0 1.00 %", "{evidence}");
        assert!(!check(&[0], 0.9).1);
        let (_, holds, evidence) = check(&[0, 1], 5.0);
        assert!(!holds && evidence == "flow 0 1.00 %, flow 1 10.00 %", "{evidence}");
        let (_, holds, evidence) = with(&firsts, &snapshots, |s| paused_percent(s, &[0], 1.0, (2, 8)));
        assert!(!holds && evidence.contains("ended before the window"), "{evidence}");
    }
}
