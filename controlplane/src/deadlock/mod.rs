//! `swctl deadlock-check TOPOLOGY`: the static deadlock check. PFC can deadlock only where lossless
//! buffers wait on each other in a cycle (a cyclic buffer dependency, "Deadlocks in Datacenter Networks:
//! Why Do They Form, and How to Avoid Them", Hu et al., HotNets 2016); up-down routing in a Clos has none,
//! and what breaks it — a static route that bounces traffic down-up-down, a routing loop, the flooding of
//! lossless packets ("RDMA over Commodity Ethernet at Scale", SIGCOMM 2016) — shows up here as a cycle.
//!
//! The graph ([`graph`]) is built from the switches' compiled configurations (routes with ECMP and static
//! routes, neighbours, VLANs and FDB entries, flooding where `lossless_fdb_miss_action` is `flood`, the
//! PFC priorities and the TC → PG / queue and PFC → PG / queue maps) by following every lossless packet
//! the topology's hosts could send each other. Every elementary cycle is printed as a chain of buffers
//! (`t0a:Ethernet4/p3 -> t1b:Ethernet0/p3 -> ...`), with the traffic behind each hop. A cycle is
//! necessary for a deadlock, not sufficient: whether the buffers fill up together depends on the load
//! (`docs/deadlock.md`).
//!
//! Exit status: 0 no cycle, 1 a cycle, 2 the topology could not be read.

pub mod graph;
#[cfg(test)]
mod tests;

use crate::lab::topology::Topology;
use graph::{BufferId, Graph, Reason, Via};
use lossless_dataplane::model::config::SwitchConfig;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitCode;

/// At most this many cycles are listed (a large fabric with flooding on can have very many).
pub const MAX_CYCLES: usize = 1000;

/// One buffer: an ingress PG, named by the lowest PFC priority its XOFF carries.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Buffer {
    pub switch: String,
    pub port: String,
    pub priority: u8,
}

impl std::fmt::Display for Buffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}/p{}", self.switch, self.port, self.priority)
    }
}

/// One hop of a cycle: from a buffer to the next, and the traffic that makes it wait.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hop {
    pub from: Buffer,
    pub to: Buffer,
    pub via: Via,
    /// An example of the traffic: its destination host and DSCP.
    pub to_host: String,
    pub dscp: u8,
}

/// One cyclic buffer dependency.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cycle {
    /// `a -> b -> ... -> a`.
    pub chain: String,
    pub hops: Vec<Hop>,
}

/// What the check found: the report of `swctl deadlock-check`, as text ([`Analysis::describe`]) or as this
/// type in JSON (`--json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Analysis {
    pub topology: String,
    /// Lossless buffers some traffic passes through.
    pub buffers: usize,
    /// Dependencies between them.
    pub dependencies: usize,
    pub cycles: Vec<Cycle>,
    /// More cycles than [`MAX_CYCLES`] exist.
    pub truncated: bool,
}

impl Analysis {
    pub fn has_cycle(&self) -> bool {
        !self.cycles.is_empty()
    }

    /// The report as text.
    pub fn describe(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{}: {} lossless buffers, {} dependencies, {} cycle(s){}",
            self.topology,
            self.buffers,
            self.dependencies,
            self.cycles.len(),
            if self.truncated { format!(" (the first {MAX_CYCLES} listed)") } else { String::new() }
        );
        for (i, c) in self.cycles.iter().enumerate() {
            let _ = writeln!(out, "cycle {}: {}", i + 1, c.chain);
            for h in &c.hops {
                let _ =
                    writeln!(out, "  {} -> {}: {} to {} (DSCP {})", h.from, h.to, h.via, h.to_host, h.dscp);
            }
        }
        if !self.has_cycle() {
            let _ = writeln!(out, "no cyclic buffer dependency: PFC cannot deadlock with these routes");
        }
        out
    }

    /// One line for a warning: how many cycles and the first one.
    pub fn warning(&self) -> Option<String> {
        let first = self.cycles.first()?;
        Some(format!(
            "{}: {} cyclic buffer dependenc{} (PFC can deadlock), e.g. {} (swctl deadlock-check lists them)",
            self.topology,
            self.cycles.len(),
            if self.cycles.len() == 1 { "y" } else { "ies" },
            first.chain
        ))
    }
}

/// Checks a topology with its own configurations.
pub fn check(topology: &Topology) -> Analysis {
    analyse(topology, &graph::build(topology))
}

/// Checks a topology with other configurations of its switches (one per switch, in order).
pub fn check_with(topology: &Topology, configs: &[&SwitchConfig]) -> Analysis {
    analyse(topology, &graph::build_with(topology, configs))
}

fn analyse(topology: &Topology, g: &Graph) -> Analysis {
    let nodes: Vec<BufferId> = g.buffers.keys().copied().collect();
    let index = |b: &BufferId| nodes.binary_search(b).ok();
    let adjacency: Vec<Vec<usize>> = nodes
        .iter()
        .map(|b| g.edges.get(b).into_iter().flat_map(|m| m.keys()).filter_map(index).collect())
        .collect();
    let (found, truncated) = elementary_cycles(&adjacency, MAX_CYCLES);
    let buffer = |b: &BufferId| {
        let s = &topology.switches[b.switch];
        Buffer {
            switch: s.name.clone(),
            port: graph::port_name(&s.compiled, b.port).to_owned(),
            priority: graph::first_priority(g.buffers[b]),
        }
    };
    let cycles = found
        .into_iter()
        .map(|c| {
            let hops: Vec<Hop> = c
                .iter()
                .zip(c.iter().cycle().skip(1))
                .map(|(&a, &b)| {
                    let Reason { via, to, dscp } = g.edges[&nodes[a]][&nodes[b]].clone();
                    Hop { from: buffer(&nodes[a]), to: buffer(&nodes[b]), via, to_host: to, dscp }
                })
                .collect();
            let mut chain: Vec<String> = c.iter().map(|&i| buffer(&nodes[i]).to_string()).collect();
            chain.push(chain[0].clone());
            Cycle { chain: chain.join(" -> "), hops }
        })
        .collect();
    Analysis {
        topology: topology.name.clone(),
        buffers: nodes.len(),
        dependencies: g.edges.values().map(|m| m.len()).sum(),
        cycles,
        truncated,
    }
}

/// Every elementary cycle, each once, starting at its smallest node, in order; at most `limit`.
/// A depth-first search from each node `s` over nodes greater than `s` only (so a cycle is found from its
/// smallest node alone), pruned to the strongly connected part reachable back to `s`.
fn elementary_cycles(adjacency: &[Vec<usize>], limit: usize) -> (Vec<Vec<usize>>, bool) {
    let mut cycles = Vec::new();
    for s in 0..adjacency.len() {
        // Nodes > s that can reach s (through nodes > s): only they can be on a cycle through s.
        let back = reaching(adjacency, s);
        let mut path = vec![s];
        let mut on_path = BTreeSet::from([s]);
        let mut stack: Vec<(usize, usize)> = vec![(s, 0)];
        while let Some((v, i)) = stack.last_mut() {
            let v = *v;
            let Some(&w) = adjacency[v].get(*i) else {
                stack.pop();
                path.pop();
                on_path.remove(&v);
                continue;
            };
            *i += 1;
            if w == s {
                if cycles.len() == limit {
                    return (cycles, true);
                }
                cycles.push(path.clone());
            } else if w > s && back.contains(&w) && !on_path.contains(&w) {
                path.push(w);
                on_path.insert(w);
                stack.push((w, 0));
            }
        }
    }
    (cycles, false)
}

/// The nodes greater than `s` from which `s` can be reached through nodes greater than `s`.
fn reaching(adjacency: &[Vec<usize>], s: usize) -> BTreeSet<usize> {
    let mut reverse: Vec<Vec<usize>> = vec![Vec::new(); adjacency.len()];
    for (v, out) in adjacency.iter().enumerate().filter(|(v, _)| *v >= s) {
        for &w in out.iter().filter(|&&w| w >= s) {
            reverse[w].push(v);
        }
    }
    let mut seen = BTreeSet::new();
    let mut todo = vec![s];
    while let Some(v) = todo.pop() {
        for &u in &reverse[v] {
            if u > s && seen.insert(u) {
                todo.push(u);
            }
        }
    }
    seen
}

/// `swctl deadlock-check FILE [--json]`: the report, and the exit status (0 no cycle, 1 a cycle, 2 bad
/// input).
pub fn run(file: &Path, json: bool) -> ExitCode {
    let topology = match Topology::load(file) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {e:#}");
            return ExitCode::from(2);
        }
    };
    let analysis = check(&topology);
    if json {
        match serde_json::to_string_pretty(&analysis) {
            Ok(text) => println!("{text}"),
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(2);
            }
        }
    } else {
        print!("{}", analysis.describe());
    }
    if analysis.has_cycle() { ExitCode::from(1) } else { ExitCode::SUCCESS }
}
