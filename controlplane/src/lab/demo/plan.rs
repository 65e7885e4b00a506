//! How the demo's traffic crosses the switch: the congested port, which flows are lossless, their queues
//! and PGs; and sums over a class's queues and ports.

use crate::lab::topology::{Flow, Topology};
use anyhow::{Context, bail};
use lossless_proto::v1 as pb;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// How the demo's traffic crosses the switch: where it congests and what is lossless.
#[derive(Debug, Clone)]
pub(super) struct Plan {
    pub(super) switch: String,
    /// The port toward the host most flows go to.
    pub(super) port: String,
    pub(super) port_speed_mbps: u32,
    pub(super) receiver: String,
    pub(super) flows: Vec<PlannedFlow>,
    /// The congested port's queue has WRED/ECN configured.
    pub(super) ecn_queues: Vec<u32>,
}

#[derive(Debug, Clone)]
pub(super) struct PlannedFlow {
    pub(super) flow: Flow,
    pub(super) index: usize,
    pub(super) lossless: bool,
    /// The sender's switch port (ingress).
    pub(super) ingress: Option<String>,
    /// Egress queue at the congested port and ingress PG at the sender's port.
    pub(super) queue: u32,
    pub(super) pg: u32,
}

pub(super) fn plan(topology: &Topology) -> anyhow::Result<Plan> {
    if topology.traffic.is_empty() {
        bail!(
            "{}: no traffic section; the demo needs flows (see configs/topologies/demo.yaml)",
            topology.source
        );
    }
    let mut count: BTreeMap<&str, usize> = BTreeMap::new();
    for f in &topology.traffic {
        *count.entry(f.to.as_str()).or_default() += 1;
    }
    let receiver = count.iter().max_by_key(|(_, n)| **n).map(|(h, _)| (*h).to_owned()).unwrap_or_default();
    let Some(end) = topology.host(&receiver).and_then(|h| h.attached.clone()) else {
        bail!("the demo's receiver {receiver} must be linked to a switch port");
    };
    let switch = topology.switch(&end.node).context("the receiver's switch")?;
    let egress_index =
        switch.compiled.ports.iter().position(|p| p.name == end.port).context("the receiver's port")?;
    let egress_qos = &switch.compiled.qos[egress_index];
    // Where a flow enters the congested switch: the sender's own port, or else (a sender behind another
    // switch) the switch's one inter-switch port, if it has exactly one.
    let inter_switch: Vec<String> = topology
        .links
        .iter()
        .flat_map(|l| [(&l.a, &l.b), (&l.b, &l.a)])
        .filter(|(mine, other)| mine.node == switch.name && topology.switch(&other.node).is_some())
        .map(|(mine, _)| mine.port.clone())
        .collect();
    let mut flows = Vec::new();
    for (index, f) in topology.traffic.iter().enumerate() {
        let sender = topology.host(&f.from).context("sender")?;
        let ingress = match sender.attached.as_ref() {
            Some(e) if e.node == switch.name => Some(e.port.clone()),
            _ if inter_switch.len() == 1 => inter_switch.first().cloned(),
            _ => None,
        };
        // Classified by the ingress port's maps (the egress port's when the ingress is unknown).
        let ingress_index =
            ingress.as_deref().and_then(|p| switch.compiled.ports.iter().position(|q| q.name == p));
        let qos = &switch.compiled.qos[ingress_index.unwrap_or(egress_index)];
        let tc = qos.dscp_to_tc.map(|m| m[usize::from(f.dscp & 63)]).unwrap_or(0);
        let (pg, port_pfc) = (qos.tc_to_pg[usize::from(tc & 7)], qos.pfc_enable);
        let queue = u32::from(egress_qos.tc_to_queue[usize::from(tc & 7)]);
        let lossless = port_pfc & (1 << f.priority) != 0 && sender.pfc.contains(&f.priority);
        flows.push(PlannedFlow { flow: f.clone(), index, lossless, ingress, queue, pg: u32::from(pg) });
    }
    let ecn_queues = wred_queues(&switch.config, &end.port);
    Ok(Plan {
        switch: switch.name.clone(),
        port: end.port.clone(),
        port_speed_mbps: switch.compiled.ports[egress_index].speed_mbps,
        receiver,
        flows,
        ecn_queues,
    })
}

/// Queues of `port` with a `wred_profile` in the QUEUE table (keys such as `Ethernet0,Ethernet8|3-4`).
fn wred_queues(db: &lossless_dataplane::model::config::ConfigDb, port: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for (key, fields) in db.tables.get("QUEUE").into_iter().flatten() {
        if !fields.contains_key("wred_profile") {
            continue;
        }
        let Some((ports, queues)) = key.split_once('|') else { continue };
        if !ports.split(',').any(|p| p.trim() == port) {
            continue;
        }
        let (lo, hi) = queues.split_once('-').unwrap_or((queues, queues));
        if let (Ok(lo), Ok(hi)) = (lo.trim().parse::<u32>(), hi.trim().parse::<u32>()) {
            out.extend(lo..=hi);
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

pub(super) fn port<'a>(c: &'a pb::GetCountersResponse, name: &str) -> Option<&'a pb::PortCounters> {
    c.ports.iter().find(|p| p.name == name)
}

pub(super) fn class_queues(plan: &Plan, lossless: bool) -> Vec<u32> {
    let mut q: Vec<u32> = plan.flows.iter().filter(|f| f.lossless == lossless).map(|f| f.queue).collect();
    q.sort_unstable();
    q.dedup();
    q
}

pub(super) fn queue_sum(p: &pb::PortCounters, queues: &[u32], f: impl Fn(&pb::QueueCounters) -> u64) -> u64 {
    queues.iter().filter_map(|&q| p.queues.get(q as usize)).map(f).sum()
}

pub(super) fn pfc_tx_sum(plan: &Plan, c: &pb::GetCountersResponse) -> u64 {
    let mut total = 0;
    for (port_name, priorities) in ingress_ports(plan, true) {
        if let Some(p) = port(c, &port_name) {
            total +=
                priorities.iter().filter_map(|&pr| p.pfc.get(usize::from(pr))).map(|x| x.tx).sum::<u64>();
        }
    }
    total
}

/// Ingress ports of the class's flows and their priorities.
pub(super) fn ingress_ports(plan: &Plan, lossless: bool) -> BTreeMap<String, Vec<u8>> {
    let mut out: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    for f in plan.flows.iter().filter(|f| f.lossless == lossless) {
        if let Some(p) = &f.ingress {
            let list = out.entry(p.clone()).or_default();
            if !list.contains(&f.flow.priority) {
                list.push(f.flow.priority);
            }
        }
    }
    out
}

pub(super) fn describe_plan(topology: &Topology, plan: &Plan, name: &str, seconds: u32) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "Lossless demo: lab {name} ({}), {seconds} s of traffic", topology.source);
    let offered: u32 = plan.flows.iter().filter_map(|f| f.flow.rate_mbps).sum();
    for f in &plan.flows {
        let rate = f.flow.rate_mbps.map(|r| format!("{r} Mb/s")).unwrap_or_else(|| "line rate".into());
        let _ = writeln!(
            out,
            "  {} -> {}  {:<8} priority {} (DSCP {}), {rate}, via {} queue {}",
            f.flow.from,
            f.flow.to,
            if f.lossless { "lossless" } else { "lossy" },
            f.flow.priority,
            f.flow.dscp,
            plan.port,
            f.queue
        );
    }
    let _ = writeln!(
        out,
        "  {} {} toward {} runs at {} Mb/s: {offered} Mb/s offered.\n",
        plan.switch, plan.port, plan.receiver, plan.port_speed_mbps
    );
    out
}
