//! SVG plots of a simulation (plotters): one per switch port that queued, buffered or paused, two panels
//! over the run's time (µs after the hosts were up):
//! - top: the egress queues' depth (bytes), with the time the port's peer paused it shaded per priority;
//! - bottom: each lossless ingress PG's usage against its XOFF and XON points (dashed when they move, as
//!   a dynamic threshold does), with the time the port asserted XOFF shaded.

use super::series::{Key, Series};
use crate::lab::scenario::Scenario;
use plotters::prelude::*;
use std::collections::BTreeMap;
use std::path::Path;

/// The plots' palette (score's report draws with it too).
pub(crate) const COLOURS: [RGBColor; 8] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x8c, 0x56, 0x4b),
    RGBColor(0xe3, 0x77, 0xc2),
    RGBColor(0x17, 0xbe, 0xcf),
];

fn kb(bytes: &f64) -> String {
    match *bytes {
        b if b >= 1e6 => format!("{:.1} MB", b / 1e6),
        b if b >= 1e4 => format!("{:.0} KB", b / 1e3),
        b => format!("{b:.0} B"),
    }
}

pub(crate) fn err(e: impl std::fmt::Display) -> anyhow::Error {
    anyhow::anyhow!("plot: {e}")
}

/// A series as a step function, µs.
fn steps(points: &[(u64, f64)], end_ns: u64) -> Vec<(f64, f64)> {
    let mut out = Vec::with_capacity(points.len() * 2 + 1);
    for (i, &(t, v)) in points.iter().enumerate() {
        if i > 0 {
            out.push((t as f64 / 1e3, points[i - 1].1));
        }
        out.push((t as f64 / 1e3, v));
    }
    if let Some(&(t, v)) = points.last()
        && t < end_ns
    {
        out.push((end_ns as f64 / 1e3, v));
    }
    out
}

/// Intervals (µs) where a 0/1 series is 1.
fn spans(points: &[(u64, f64)], end_ns: u64) -> Vec<(f64, f64)> {
    let mut out = Vec::new();
    let mut from = None;
    for &(t, v) in points {
        match (from, v > 0.0) {
            (None, true) => from = Some(t),
            (Some(f), false) => {
                out.push((f as f64 / 1e3, t as f64 / 1e3));
                from = None;
            }
            _ => {}
        }
    }
    if let Some(f) = from {
        out.push((f as f64 / 1e3, end_ns as f64 / 1e3));
    }
    out
}

/// Writes the plots; returns their file names.
pub fn write_plots(series: &Series, scenario: &Scenario, dir: &Path) -> anyhow::Result<Vec<String>> {
    let switches: Vec<&str> = scenario.topology.switches.iter().map(|s| s.name.as_str()).collect();
    let mut ports: BTreeMap<(String, String), Vec<&Key>> = BTreeMap::new();
    let mut end = 0;
    for k in series.keys() {
        if let Some(points) = series.get(k) {
            end = end.max(points.last().map_or(0, |p| p.0));
        }
        if switches.contains(&k.node.as_str()) {
            ports.entry((k.node.clone(), k.port.clone())).or_default().push(k);
        }
    }
    let mut written = Vec::new();
    for ((switch, port), keys) in &ports {
        let has = |name: &str| keys.iter().any(|k| k.series == name);
        if !(has("queue_bytes") || has("pg_bytes") || has("pfc_paused") || has("pfc_xoff_sent")) {
            continue;
        }
        let name = format!("{switch}-{port}.svg");
        plot_port(series, keys, &format!("{switch} {port}"), &dir.join(&name), end)?;
        written.push(name);
    }
    Ok(written)
}

/// The plot of one switch port (as [`write_plots`] draws each), if the series have anything for it.
pub fn write_port_plot(series: &Series, switch: &str, port: &str, path: &Path) -> anyhow::Result<bool> {
    let keys: Vec<&Key> = series.keys().filter(|k| k.node == switch && k.port == port).collect();
    if keys.is_empty() {
        return Ok(false);
    }
    let end = series.keys().filter_map(|k| series.get(k)?.last().map(|p| p.0)).max().unwrap_or(0);
    plot_port(series, &keys, &format!("{switch} {port}"), path, end)?;
    Ok(true)
}

fn plot_port(series: &Series, keys: &[&Key], title: &str, path: &Path, end_ns: u64) -> anyhow::Result<()> {
    let x_max = (end_ns as f64 / 1e3).max(1.0);
    let of = |name: &str| -> Vec<&Key> { keys.iter().copied().filter(|k| k.series == name).collect() };
    let max_of = |names: &[&str]| -> f64 {
        names
            .iter()
            .flat_map(|n| of(n))
            .flat_map(|k| series.get(k).unwrap_or_default().iter().map(|p| p.1))
            .fold(1.0, f64::max)
            * 1.15
    };
    let root = SVGBackend::new(path, (1000, 720)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let root = root.titled(title, ("sans-serif", 20)).map_err(err)?;
    let (top, bottom) = root.split_vertically(350);
    let queues = Panel {
        caption: "egress queue depth; shaded: paused by the peer's PFC",
        shaded: of("pfc_paused"),
        lines: of("queue_bytes"),
        label: "queue",
        thresholds: false,
        y_max: max_of(&["queue_bytes"]),
    };
    queues.draw(&top, series, x_max, end_ns)?;
    let pgs = Panel {
        caption: "ingress PG usage vs XOFF (dashed) and XON (dotted); shaded: XOFF sent",
        shaded: of("pfc_xoff_sent"),
        lines: of("pg_bytes"),
        label: "PG",
        thresholds: true,
        y_max: max_of(&["pg_bytes", "pg_xoff_bytes"]),
    };
    pgs.draw(&bottom, series, x_max, end_ns)?;
    root.present().map_err(err)?;
    Ok(())
}

/// One chart of a port's plot: step lines per queue or PG (with the PG's XOFF/XON points where the series
/// has them), and 0/1 series shaded along the top.
struct Panel<'a> {
    caption: &'static str,
    shaded: Vec<&'a Key>,
    lines: Vec<&'a Key>,
    label: &'static str,
    /// Draw each line's `pg_xoff_bytes` / `pg_xon_bytes` (PG panels).
    thresholds: bool,
    y_max: f64,
}

impl Panel<'_> {
    fn draw(
        &self,
        area: &DrawingArea<SVGBackend, plotters::coord::Shift>,
        series: &Series,
        x_max: f64,
        end_ns: u64,
    ) -> anyhow::Result<()> {
        let y_max = self.y_max;
        let mut chart = ChartBuilder::on(area)
            .caption(self.caption, ("sans-serif", 14))
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(70)
            .build_cartesian_2d(0f64..x_max, 0f64..y_max)
            .map_err(err)?;
        chart.configure_mesh().x_desc("µs").y_label_formatter(&kb).draw().map_err(err)?;
        for k in &self.shaded {
            let colour = COLOURS[usize::from(k.index) % 8];
            let shade = spans(series.get(k).unwrap_or_default(), end_ns)
                .into_iter()
                .map(|(a, b)| Rectangle::new([(a, y_max * 0.96), (b, y_max)], colour.mix(0.5).filled()));
            chart.draw_series(shade).map_err(err)?;
        }
        for k in &self.lines {
            let colour = COLOURS[usize::from(k.index) % 8];
            chart
                .draw_series(LineSeries::new(
                    steps(series.get(k).unwrap_or_default(), end_ns),
                    colour.stroke_width(2),
                ))
                .map_err(err)?
                .label(format!("{} {}", self.label, k.index))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2)));
            let thresholds: &[(&'static str, u32, u32)] =
                if self.thresholds { &[("pg_xoff_bytes", 8, 6), ("pg_xon_bytes", 2, 5)] } else { &[] };
            for &(threshold, size, spacing) in thresholds {
                let key = Key { series: threshold, ..(*k).clone() };
                if let Some(points) = series.get(&key) {
                    let line =
                        DashedLineSeries::new(steps(points, end_ns), size, spacing, colour.stroke_width(1));
                    chart.draw_series(line).map_err(err)?;
                }
            }
        }
        if !self.lines.is_empty() {
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperRight)
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK)
                .draw()
                .map_err(err)?;
        }
        Ok(())
    }
}
