//! The demo's summary: per class and per flow what the hosts' reports and the switch's counters show, and
//! the claims of lossless Ethernet checked against them.

use super::SAMPLE_INTERVAL_MS;
use super::plan::{Plan, PlannedFlow, class_queues, ingress_ports, port, queue_sum};
use crate::lab::topology::Topology;
use crate::lab::up::{self, Lab};
use lossless_dataplane::rocehost::report::{FlowReport, ReceiverReport, Report};
use lossless_proto::v1 as pb;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// What the demo found, as `--json` prints it.
#[derive(Debug, Serialize, Deserialize)]
pub struct DemoSummary {
    pub lab: String,
    pub topology: String,
    pub seconds: u32,
    pub run_dir: PathBuf,
    pub svg: Option<PathBuf>,
    pub switch: String,
    pub congested_port: String,
    pub congested_port_speed_mbps: u32,
    pub receiver: String,
    pub lossless: ClassSummary,
    pub lossy: ClassSummary,
    pub flows: Vec<FlowSummary>,
    pub queue_depth: QueueDepth,
    pub claims: Vec<Claim>,
    /// Every claim holds.
    pub ok: bool,
}

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct ClassSummary {
    pub priorities: Vec<u8>,
    /// Egress queues at the congested port.
    pub queues: Vec<u32>,
    pub flows: usize,
    pub offered_mbps: f64,
    /// Receiver side (rocehost reports).
    pub received_packets: u64,
    pub psn_gaps: u64,
    pub out_of_order: u64,
    pub duplicates: u64,
    pub ce_packets: u64,
    pub cnps_sent: u64,
    /// Sum of the flows' receiver goodput.
    pub goodput_mbps: f64,
    /// Sender side.
    pub sent_packets: u64,
    pub retransmitted_packets: u64,
    /// Switch, congested port: what left the class's queues, what they dropped, ECN marks.
    pub egress_packets: u64,
    pub egress_mbps: f64,
    pub egress_drops: u64,
    pub ecn_marked: u64,
    /// Switch, every port: drops in the class's PGs and queues (for lossless, also lossless packets dropped
    /// rather than flooded to an unknown MAC, `FDB_MISS_LOSSLESS`).
    pub switch_drops: u64,
    /// Where those drops happened: `Ethernet4 PG 3`, `Ethernet0 queue 3 WRED`, ...
    pub switch_drops_where: BTreeMap<String, u64>,
    /// PFC frames the switch sent per ingress port, for the class's priorities.
    pub pfc_tx: BTreeMap<String, u64>,
    /// Time the senders were paused on the class's priorities, per sender, ms.
    pub sender_paused_ms: BTreeMap<String, f64>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct FlowSummary {
    pub from: String,
    pub to: String,
    pub class: String,
    pub priority: u8,
    pub dscp: u8,
    pub queue: u32,
    pub offered_mbps: Option<u32>,
    pub sent_packets: u64,
    pub retransmitted_packets: u64,
    pub received_packets: u64,
    pub psn_gaps: u64,
    pub out_of_order: u64,
    pub goodput_mbps: f64,
}

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct QueueDepth {
    pub interval_ms: u32,
    pub samples: usize,
    /// Per queue of the congested port (frames).
    pub queues: BTreeMap<u32, DepthStats>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct DepthStats {
    pub max: u64,
    pub mean: f64,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct Claim {
    pub claim: String,
    pub holds: bool,
    pub evidence: String,
}

/// The sender's statistics of a planned flow: its report's flows to the same destination with the same
/// priority and DSCP, the n-th of them for the n-th such planned flow; and the receiver's statistics of the
/// same QP from that sender.
fn flow_stats<'a>(
    topology: &Topology,
    plan: &Plan,
    planned: &PlannedFlow,
    reports: &'a BTreeMap<String, Report>,
) -> (Option<&'a FlowReport>, Option<&'a ReceiverReport>) {
    let f = &planned.flow;
    let (Some(src), Some(dst)) = (topology.host(&f.from), topology.host(&f.to)) else { return (None, None) };
    let nth = plan
        .flows
        .iter()
        .filter(|p| {
            p.flow.from == f.from
                && p.flow.to == f.to
                && p.flow.priority == f.priority
                && p.flow.dscp == f.dscp
        })
        .position(|p| p.index == planned.index)
        .unwrap_or(0);
    let sent = reports.get(&f.from).and_then(|r| {
        r.flows
            .iter()
            .filter(|s| s.dst_ip == Some(dst.ip) && s.priority == f.priority && s.dscp == f.dscp)
            .nth(nth)
    });
    let qp = sent.map_or(up::flow_qp(planned.index), |s| s.dst_qp);
    let received = reports.get(&f.to).and_then(|r| r.receiver(src.ip, qp));
    (sent, received)
}

pub(super) fn summarize(
    topology: &Topology,
    plan: &Plan,
    lab: &Lab,
    seconds: u32,
    counters: &pb::GetCountersResponse,
    samples: &[pb::GetCountersResponse],
    reports: &BTreeMap<String, Report>,
) -> DemoSummary {
    let mut flows = Vec::new();
    let mut classes = [ClassSummary::default(), ClassSummary::default()];
    for planned in &plan.flows {
        let (sent, received) = flow_stats(topology, plan, planned, reports);
        let class = &mut classes[usize::from(!planned.lossless)];
        let f = &planned.flow;
        let mut fs = FlowSummary {
            from: f.from.clone(),
            to: f.to.clone(),
            class: if planned.lossless { "lossless" } else { "lossy" }.into(),
            priority: f.priority,
            dscp: f.dscp,
            queue: planned.queue,
            offered_mbps: f.rate_mbps,
            ..FlowSummary::default()
        };
        if let Some(s) = sent {
            fs.sent_packets = s.sent_packets;
            fs.retransmitted_packets = s.retransmitted_packets;
        }
        if let Some(r) = received {
            fs.received_packets = r.received_packets;
            fs.psn_gaps = r.psn_gaps;
            fs.out_of_order = r.out_of_order;
            fs.goodput_mbps = r.goodput_mbps;
            class.duplicates += r.duplicates;
            class.ce_packets += r.ce_packets;
            class.cnps_sent += r.cnps_sent;
        }
        class.flows += 1;
        class.offered_mbps += f64::from(f.rate_mbps.unwrap_or(0));
        class.sent_packets += fs.sent_packets;
        class.retransmitted_packets += fs.retransmitted_packets;
        class.received_packets += fs.received_packets;
        class.psn_gaps += fs.psn_gaps;
        class.out_of_order += fs.out_of_order;
        class.goodput_mbps += fs.goodput_mbps;
        if !class.priorities.contains(&f.priority) {
            class.priorities.push(f.priority);
        }
        flows.push(fs);
    }
    for (i, class) in classes.iter_mut().enumerate() {
        let lossless = i == 0;
        class.priorities.sort_unstable();
        class.queues = class_queues(plan, lossless);
        if let Some(p) = port(counters, &plan.port) {
            class.egress_packets = queue_sum(p, &class.queues, |q| q.packets);
            class.egress_mbps =
                queue_sum(p, &class.queues, |q| q.bytes) as f64 * 8.0 / f64::from(seconds.max(1)) / 1e6;
            class.egress_drops = queue_sum(p, &class.queues, |q| q.dropped_packets + q.wred_dropped_packets);
            class.ecn_marked = queue_sum(p, &class.queues, |q| q.ecn_marked_packets);
        }
        let pgs: Vec<u32> = {
            let mut v: Vec<u32> =
                plan.flows.iter().filter(|f| f.lossless == lossless).map(|f| f.pg).collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        for p in &counters.ports {
            let mut note = |what: String, n: u64| {
                if n > 0 {
                    class.switch_drops += n;
                    *class.switch_drops_where.entry(format!("{} {what}", p.name)).or_default() += n;
                }
            };
            for &q in &class.queues {
                if let Some(c) = p.queues.get(q as usize) {
                    note(format!("queue {q}"), c.dropped_packets);
                    note(format!("queue {q} WRED"), c.wred_dropped_packets);
                }
            }
            for &g in &pgs {
                note(format!("PG {g}"), p.pgs.get(g as usize).map(|c| c.dropped_packets).unwrap_or(0));
            }
            if lossless {
                note(
                    "FDB_MISS_LOSSLESS".into(),
                    p.drop_reasons.get("FDB_MISS_LOSSLESS").copied().unwrap_or(0),
                );
            }
        }
        for (port_name, priorities) in ingress_ports(plan, lossless) {
            let tx = port(counters, &port_name)
                .map(|p| priorities.iter().filter_map(|&pr| p.pfc.get(usize::from(pr))).map(|x| x.tx).sum())
                .unwrap_or(0);
            class.pfc_tx.insert(port_name, tx);
        }
        let senders: std::collections::BTreeSet<&str> =
            plan.flows.iter().filter(|f| f.lossless == lossless).map(|f| f.flow.from.as_str()).collect();
        for s in senders {
            let paused_ns: u64 = reports
                .get(s)
                .map(|r| {
                    r.pfc.iter().filter(|p| class.priorities.contains(&p.priority)).map(|p| p.pause_ns).sum()
                })
                .unwrap_or(0);
            class.sender_paused_ms.insert(s.to_owned(), paused_ns as f64 / 1e6);
        }
    }
    let [lossless, lossy] = classes;

    // Queue depth over the run.
    let mut queue_depth =
        QueueDepth { interval_ms: SAMPLE_INTERVAL_MS, samples: samples.len(), queues: BTreeMap::new() };
    for q in lossless.queues.iter().chain(&lossy.queues) {
        let depths: Vec<u64> = samples
            .iter()
            .filter_map(|s| port(s, &plan.port))
            .filter_map(|p| p.queue_depth.get(*q as usize).copied())
            .collect();
        let max = depths.iter().copied().max().unwrap_or(0);
        let mean =
            if depths.is_empty() { 0.0 } else { depths.iter().sum::<u64>() as f64 / depths.len() as f64 };
        queue_depth.queues.insert(*q, DepthStats { max, mean });
    }

    // The claims.
    let mut claims = Vec::new();
    if lossless.flows > 0 {
        claims.push(Claim {
            claim: "lossless traffic lost nothing".into(),
            holds: lossless.received_packets > 0
                && lossless.psn_gaps == 0
                && lossless.out_of_order == 0
                && lossless.switch_drops == 0,
            evidence: format!(
                "receiver: {} packets, PSN gaps {}, out of order {}; switch lossless PG/queue drops {}{}",
                lossless.received_packets,
                lossless.psn_gaps,
                lossless.out_of_order,
                lossless.switch_drops,
                drops_where(&lossless.switch_drops_where)
            ),
        });
        claims.push(Claim {
            claim: "the switch sent PFC on every lossless ingress port".into(),
            holds: !lossless.pfc_tx.is_empty() && lossless.pfc_tx.values().all(|&n| n > 0),
            evidence: lossless.pfc_tx.iter().map(|(p, n)| format!("{p} {n}")).collect::<Vec<_>>().join(", "),
        });
        let ecn: Vec<u32> = lossless.queues.iter().copied().filter(|q| plan.ecn_queues.contains(q)).collect();
        if !ecn.is_empty() {
            claims.push(Claim {
                claim: "ECN marked lossless packets".into(),
                holds: lossless.ecn_marked > 0,
                evidence: format!("{} queue(s) {:?}: {} marked", plan.port, ecn, lossless.ecn_marked),
            });
        }
    }
    if lossy.flows > 0 {
        claims.push(Claim {
            claim: "lossy traffic was tail-dropped at the egress queue".into(),
            holds: lossy.egress_drops > 0,
            evidence: format!("{} queue(s) {:?}: {} dropped", plan.port, lossy.queues, lossy.egress_drops),
        });
    }
    let ok = claims.iter().all(|c| c.holds);
    DemoSummary {
        lab: lab.state.name.clone(),
        topology: topology.source.clone(),
        seconds,
        run_dir: lab.dir.clone(),
        svg: None,
        switch: plan.switch.clone(),
        congested_port: plan.port.clone(),
        congested_port_speed_mbps: plan.port_speed_mbps,
        receiver: plan.receiver.clone(),
        lossless,
        lossy,
        flows,
        queue_depth,
        claims,
        ok,
    }
}

/// ` (Ethernet0 PG 3: 12, ...)`, or nothing when there was no drop.
pub(super) fn drops_where(drops: &BTreeMap<String, u64>) -> String {
    if drops.is_empty() {
        return String::new();
    }
    let parts: Vec<String> = drops.iter().map(|(w, n)| format!("{w}: {n}")).collect();
    format!(" ({})", parts.join(", "))
}
