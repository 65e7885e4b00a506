//! Suggestions where the rule is known, each with the value that would pass it; `swctl score` never
//! changes the profile itself.
//!
//! - **headroom**: a lossless PG profile's `xoff` below what the headroom calculator gives for the
//!   fabric's ports (`swctl headroom`, the model `swctl apply` picks for the switch): the calculator's
//!   value.
//! - **ecn-kmax**: a lossless queue's ECN `green_max_threshold` above the queue depth at which its ingress
//!   PG sends XOFF when it is the only one filling (the earliest XOFF: one congested ingress, the dynamic
//!   limit α·free settles at α/(1+α) of the free pool): marking cannot reach its full probability before
//!   PFC acts. The value: that depth, rounded down to a cell.
//! - **wred-drop**: a lossless queue whose WRED profile drops (`wred_green_enable`) packets that are not
//!   ECN-capable, when a case lost lossless packets that way: `false` (marking goes on, drops stop).
//! - **alpha**: an incast in which a sender got less than half its fair share while the lossless PG's
//!   `dynamic_th` is above 0 (α > 1: one PG may take more than half the free pool): `dynamic_th` 0.

use super::report::{CaseReport, Suggestion};
use super::suite::{Base, Kind};
use crate::headroom::{ModelRequest, headroom_shortfalls};
use lossless_dataplane::model::config::Threshold;
use lossless_dataplane::model::{PortId, Switch};
use lossless_dataplane::time::Instant;
use std::collections::BTreeSet;

/// A sender with less than this share of the mean in an incast is starved.
pub const STARVED_SHARE: f64 = 0.5;

pub fn suggest(base: &Base, cases: &[CaseReport]) -> Vec<Suggestion> {
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    let xoff_before_ecn: Vec<&str> = cases
        .iter()
        .filter(|c| c.metrics.ecn_vs_xoff.ecn_first == Some(false))
        .map(|c| c.case.name.as_str())
        .collect();
    let lossless_drops: Vec<String> = cases
        .iter()
        .filter(|c| c.metrics.drops.lossless > 0)
        .map(|c| format!("{} ({})", c.case.name, c.metrics.drops.lossless))
        .collect();
    let wred_drops: Vec<String> = cases
        .iter()
        .filter(|c| c.metrics.drops.lossless_wred > 0)
        .map(|c| format!("{} lost {} that way", c.case.name, c.metrics.drops.lossless_wred))
        .collect();
    let starved: Vec<String> = cases
        .iter()
        .filter(|c| matches!(c.case.kind, Kind::Incast { .. }))
        .filter_map(|c| c.metrics.incast_fairness.filter(|&f| f < STARVED_SHARE).map(|f| (c, f)))
        .map(|(c, f)| format!("{}: the least-served sender got {:.0} % of the mean", c.case.name, f * 100.0))
        .collect();
    for sw in &base.topology.switches {
        let Ok(selection) = ModelRequest::default().select(Some(&sw.config)) else { continue };
        for s in headroom_shortfalls(&sw.config, &selection.model) {
            let field = format!("BUFFER_PROFILE|{}|xoff", s.profile);
            if !seen.insert(field.clone()) {
                continue;
            }
            let evidence = if lossless_drops.is_empty() {
                String::new()
            } else {
                format!("; lossless drops in {}", lossless_drops.join(", "))
            };
            out.push(Suggestion {
                rule: "headroom",
                field,
                current: s.configured_xoff_bytes.to_string(),
                suggested: s.needed_xoff_bytes.to_string(),
                why: format!(
                    "the headroom calculator ({}) gives {} bytes for {} {} ({} Mb/s, {} m cable, MTU {}){evidence}",
                    selection.source_line(),
                    s.needed_xoff_bytes,
                    sw.name,
                    s.port,
                    s.speed_mbps,
                    s.cable_m,
                    s.mtu
                ),
            });
        }
        let config = &sw.compiled;
        let mut model = Switch::new();
        if model.apply(&sw.config, Instant::ZERO).is_err() {
            continue;
        }
        for (p, port) in config.ports.iter().enumerate() {
            let qos = &config.qos[p];
            for prio in (0..8u8).filter(|prio| qos.pfc_enable & (1 << prio) != 0) {
                let pg = qos.pfc_to_pg[usize::from(prio)];
                let queue = qos.pfc_to_queue[usize::from(prio)];
                let Some(buffers) = config.port_buffers.get(p) else { continue };
                let Some(profile) = buffers.pg_profile[usize::from(pg)].map(|i| &config.profiles[i]) else {
                    continue;
                };
                // ECN Kmax against the earliest XOFF.
                if let Some(wred) = buffers.queue_wred[usize::from(queue)].map(|i| &config.wred_profiles[i])
                    && wred.ecn[0]
                    && let Some(th) = model.mmu().pg_thresholds(PortId::new(p), pg)
                {
                    let cell = model.mmu().cell_bytes().max(1);
                    let earliest = match profile.threshold {
                        Threshold::Dynamic(n) => {
                            let alpha = 2f64.powi(i32::from(n));
                            let limit = th.xoff_bytes.saturating_sub(profile.size_bytes) as f64;
                            profile.size_bytes + (limit / (1.0 + alpha)) as u64
                        }
                        Threshold::Static(_) => th.xoff_bytes,
                    };
                    // Dropping non-ECT packets in a lossless queue: what the NICs send without ECT (their
                    // ACKs, NAKs and CNPs in this model) is lost once the queue passes Kmin.
                    let field = format!("WRED_PROFILE|{}|wred_green_enable", wred.name);
                    if wred.colours[0].enabled && !wred_drops.is_empty() && seen.insert(field.clone()) {
                        out.push(Suggestion {
                            rule: "wred-drop",
                            field,
                            current: "true".into(),
                            suggested: "false".into(),
                            why: format!(
                                "queue {queue} of {} {} is lossless, but its WRED profile drops packets that are not \
                                 ECN-capable (the NICs' ACKs, NAKs and CNPs) above {} bytes: {}; with it false, \
                                 ECN-capable packets are still marked and nothing is dropped",
                                sw.name,
                                port.name,
                                wred.colours[0].min_bytes,
                                wred_drops.join(", ")
                            ),
                        });
                    }
                    let kmax = wred.colours[0].max_bytes;
                    let field = format!("WRED_PROFILE|{}|green_max_threshold", wred.name);
                    if kmax > earliest && seen.insert(field.clone()) {
                        let evidence = if xoff_before_ecn.is_empty() {
                            String::new()
                        } else {
                            format!("; XOFF came before the first CE mark in {}", xoff_before_ecn.join(", "))
                        };
                        out.push(Suggestion {
                            rule: "ecn-kmax",
                            field,
                            current: kmax.to_string(),
                            suggested: (earliest / cell * cell).to_string(),
                            why: format!(
                                "queue {queue} of {} {} is ECN-marked up to {kmax} bytes, but its PG {pg} ({}) sends \
                                 XOFF at {earliest} bytes when it alone fills{evidence}",
                                sw.name, port.name, profile.name
                            ),
                        });
                    }
                }
                // Alpha, when an incast starved a sender.
                if let Threshold::Dynamic(n) = profile.threshold
                    && n > 0
                    && !starved.is_empty()
                {
                    let field = format!("BUFFER_PROFILE|{}|dynamic_th", profile.name);
                    if seen.insert(field.clone()) {
                        out.push(Suggestion {
                            rule: "alpha",
                            field,
                            current: n.to_string(),
                            suggested: "0".into(),
                            why: format!(
                                "α = {} lets one PG take {:.0} % of the free pool; {}; at α = 1 no PG takes more \
                                 than half",
                                1u32 << n,
                                100.0 * f64::from(1u32 << n) / (1.0 + f64::from(1u32 << n)),
                                starved.join("; ")
                            ),
                        });
                    }
                }
            }
        }
    }
    out
}
