//! The latency matrix as an SVG heatmap (plotters): two panels, p50 and p99 RTT, one cell per ordered pair
//! (row: prober, column: responder), coloured on one scale from the smallest to the largest value of both
//! panels and labelled in µs; pairs without an answer are grey.

use super::PingmeshMatrix;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::Path;

fn err(e: impl std::fmt::Display) -> anyhow::Error {
    anyhow::anyhow!("pingmesh heatmap: {e}")
}

/// Light yellow (fastest) to dark red (slowest).
fn colour(fraction: f64) -> RGBColor {
    let f = fraction.clamp(0.0, 1.0);
    let lerp = |a: f64, b: f64| (a + (b - a) * f).round() as u8;
    RGBColor(lerp(255.0, 165.0), lerp(245.0, 15.0), lerp(200.0, 21.0))
}

pub fn write(m: &PingmeshMatrix, path: &Path) -> anyhow::Result<()> {
    let n = m.hosts.len().max(1);
    let cell = (560 / n).clamp(40, 120) as u32;
    let panel = cell * n as u32 + 120;
    let root = SVGBackend::new(path, (2 * panel + 40, panel + 90)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let title = format!(
        "Pingmesh RTT ({}), DSCP {} priority {}, every {} µs; row: prober, column: responder",
        m.source, m.dscp, m.priority, m.interval_us
    );
    let root = root.titled(&title, ("sans-serif", 16)).map_err(err)?;
    let values: Vec<u64> =
        m.pairs.iter().filter(|p| p.received > 0).flat_map(|p| [p.rtt.p50_ns, p.rtt.p99_ns]).collect();
    let lo = values.iter().copied().min().unwrap_or(0) as f64;
    let hi = values.iter().copied().max().unwrap_or(1) as f64;
    let (left, right) = root.split_horizontally(panel + 20);
    for (area, name, pick) in [
        (&left, "p50", (|p: &super::PairRtt| p.rtt.p50_ns) as fn(&super::PairRtt) -> u64),
        (&right, "p99", |p: &super::PairRtt| p.rtt.p99_ns),
    ] {
        let mut chart = ChartBuilder::on(area)
            .caption(format!("{name} µs"), ("sans-serif", 15))
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(0f64..n as f64, 0f64..n as f64)
            .map_err(err)?;
        let name_at = |v: &f64| -> String {
            let i = v.floor() as usize;
            if (v - i as f64 - 0.5).abs() < 1e-6 {
                m.hosts.get(i).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        };
        // Row 0 at the top: y is flipped.
        let row_at = |v: &f64| -> String {
            let y = n as f64 - v;
            name_at(&y)
        };
        chart
            .configure_mesh()
            .disable_mesh()
            .x_labels(n * 2 + 1)
            .y_labels(n * 2 + 1)
            .x_label_formatter(&name_at)
            .y_label_formatter(&row_at)
            .x_desc("responder")
            .y_desc("prober")
            .draw()
            .map_err(err)?;
        for (r, a) in m.hosts.iter().enumerate() {
            for (c, b) in m.hosts.iter().enumerate() {
                let (x0, y1) = (c as f64, (n - r) as f64);
                let corners = [(x0, y1 - 1.0), (x0 + 1.0, y1)];
                let (fill, label) = match m.pair(a, b) {
                    None => (WHITE, String::new()),
                    Some(p) if p.received == 0 => (RGBColor(190, 190, 190), "no answer".into()),
                    Some(p) => {
                        let v = pick(p) as f64;
                        let fraction = if hi > lo { (v - lo) / (hi - lo) } else { 0.0 };
                        (colour(fraction), format!("{:.1}", v / 1e3))
                    }
                };
                chart.draw_series(std::iter::once(Rectangle::new(corners, fill.filled()))).map_err(err)?;
                chart
                    .draw_series(std::iter::once(Rectangle::new(corners, BLACK.mix(0.3).stroke_width(1))))
                    .map_err(err)?;
                if !label.is_empty() {
                    let style = ("sans-serif", 13)
                        .into_font()
                        .color(&BLACK)
                        .pos(Pos::new(HPos::Center, VPos::Center));
                    chart
                        .draw_series(std::iter::once(Text::new(label, (x0 + 0.5, y1 - 0.5), style)))
                        .map_err(err)?;
                }
            }
        }
    }
    root.present().map_err(err)?;
    Ok(())
}
