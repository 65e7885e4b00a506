//! What the demo prints, and its queue depth plot.

use super::SAMPLE_INTERVAL_MS;
use super::plan::{Plan, class_queues, port};
use super::summary::{DemoSummary, drops_where};
use lossless_proto::v1 as pb;
use std::fmt::Write as _;
use std::path::Path;

/// The congested port's class queues over time, one line each.
pub(super) fn plot(path: &Path, plan: &Plan, samples: &[pb::GetCountersResponse]) -> anyhow::Result<()> {
    use plotters::prelude::*;
    let first = samples.first().map(|s| s.timestamp_ns).unwrap_or(0);
    let mut series: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    for (lossless, label) in [(true, "lossless"), (false, "lossy")] {
        for q in class_queues(plan, lossless) {
            let points: Vec<(f64, f64)> = samples
                .iter()
                .filter_map(|s| {
                    let depth = port(s, &plan.port)?.queue_depth.get(q as usize).copied()?;
                    Some((s.timestamp_ns.saturating_sub(first) as f64 / 1e9, depth as f64))
                })
                .collect();
            series.push((format!("queue {q} ({label})"), points));
        }
    }
    let x_max = series.iter().flat_map(|(_, p)| p.iter().map(|x| x.0)).fold(1.0, f64::max);
    let y_max = series.iter().flat_map(|(_, p)| p.iter().map(|x| x.1)).fold(1.0, f64::max) * 1.15;
    let root = SVGBackend::new(path, (960, 420)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| anyhow::anyhow!("{e}"))?;
    let title =
        format!("{} {}: egress queue depth ({} ms samples)", plan.switch, plan.port, SAMPLE_INTERVAL_MS);
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0f64..x_max, 0f64..y_max)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    chart
        .configure_mesh()
        .x_desc("time (s)")
        .y_desc("frames queued")
        .draw()
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let colours = [
        RGBColor(0x1f, 0x77, 0xb4),
        RGBColor(0xd6, 0x27, 0x28),
        RGBColor(0x2c, 0xa0, 0x2c),
        RGBColor(0x94, 0x67, 0xbd),
    ];
    for (i, (label, points)) in series.into_iter().enumerate() {
        let colour = colours[i % colours.len()];
        chart
            .draw_series(LineSeries::new(points, colour.stroke_width(2)))
            .map_err(|e| anyhow::anyhow!("{e}"))?
            .label(label)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2)));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    root.present().map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(())
}

pub(super) fn describe_summary(s: &DemoSummary) -> String {
    let mut out = String::new();
    let t = crate::show::thousands;
    let per_flow = |class: &str| {
        s.flows
            .iter()
            .filter(|f| f.class == class)
            .map(|f| format!("{} {:.1}", f.from, f.goodput_mbps))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let _ = writeln!(
        out,
        "\nResults ({} s, {} {} at {} Mb/s)",
        s.seconds, s.switch, s.congested_port, s.congested_port_speed_mbps
    );
    let l = &s.lossless;
    if l.flows > 0 {
        let lost = l.psn_gaps + l.out_of_order + l.switch_drops;
        let _ = writeln!(
            out,
            "  Lossless (priority {:?}, queue {:?}): {}",
            l.priorities,
            l.queues,
            if lost == 0 { "nothing lost" } else { "LOSS" }
        );
        let duplicates = if l.duplicates > 0 && l.psn_gaps == 0 {
            format!(
                "duplicates {} (go-back-N resends after a retransmission timeout: late, not lost)",
                t(l.duplicates)
            )
        } else {
            format!("duplicates {}", t(l.duplicates))
        };
        let _ = writeln!(
            out,
            "    receiver {}: {} packets, PSN gaps {}, out of order {}, {duplicates}; switch drops {}{}",
            s.receiver,
            t(l.received_packets),
            l.psn_gaps,
            l.out_of_order,
            l.switch_drops,
            drops_where(&l.switch_drops_where)
        );
        let _ = writeln!(
            out,
            "    goodput {:.1} Mb/s ({}); {} left at {:.1} Mb/s",
            l.goodput_mbps,
            per_flow("lossless"),
            s.congested_port,
            l.egress_mbps
        );
        let pfc: Vec<String> = l.pfc_tx.iter().map(|(p, n)| format!("{p} {}", t(*n))).collect();
        let paused: Vec<String> = l
            .sender_paused_ms
            .iter()
            .map(|(h, ms)| format!("{h} {:.0}%", ms / 10.0 / f64::from(s.seconds.max(1))))
            .collect();
        let _ = writeln!(
            out,
            "    PFC frames sent by {}: {}; senders paused {}",
            s.switch,
            pfc.join(", "),
            paused.join(", ")
        );
        let _ = writeln!(
            out,
            "    ECN: {} packets marked CE in {} queue {:?}; the receiver saw {} CE and sent {} CNPs",
            t(l.ecn_marked),
            s.congested_port,
            l.queues,
            t(l.ce_packets),
            t(l.cnps_sent)
        );
    }
    let y = &s.lossy;
    if y.flows > 0 {
        let total = y.egress_packets + y.egress_drops;
        let pct = if total > 0 { 100.0 * y.egress_drops as f64 / total as f64 } else { 0.0 };
        let _ = writeln!(
            out,
            "  Lossy (priority {:?}, queue {:?}): {}",
            y.priorities,
            y.queues,
            if y.egress_drops > 0 { "tail-dropped at the egress threshold" } else { "no drop" }
        );
        let _ = writeln!(
            out,
            "    {} queue {:?} dropped {} packets ({pct:.1} % of those reaching it); receiver PSN gaps {}, sender retransmissions {}",
            s.congested_port,
            y.queues,
            t(y.egress_drops),
            t(y.psn_gaps),
            t(y.retransmitted_packets)
        );
        let _ = writeln!(
            out,
            "    goodput {:.1} Mb/s ({}); {} left at {:.1} Mb/s",
            y.goodput_mbps,
            per_flow("lossy"),
            s.congested_port,
            y.egress_mbps
        );
    }
    let depth: Vec<String> = s
        .queue_depth
        .queues
        .iter()
        .map(|(q, d)| format!("queue {q} max {} mean {:.1}", d.max, d.mean))
        .collect();
    let _ = writeln!(
        out,
        "  Queue depth of {} ({} samples, frames): {}",
        s.congested_port,
        s.queue_depth.samples,
        depth.join("; ")
    );
    if let Some(svg) = &s.svg {
        let _ = writeln!(out, "    plot: {}", svg.display());
    }
    let _ = writeln!(out, "  Claims:");
    for c in &s.claims {
        let _ = writeln!(out, "    [{}] {}: {}", if c.holds { " ok " } else { "FAIL" }, c.claim, c.evidence);
    }
    let _ = writeln!(out, "  Reports, logs and summary.json: {}", s.run_dir.display());
    out
}
