//! `--out DIR`: `report.json` (the typed report), one SVG per plot, and `report.html`, a self-contained page
//! (the SVGs inlined) to attach to a change review: the summary tables, side by side with differing cells
//! highlighted, the suggestions, and per case its key plots:
//! - the first measured port: queue depth with the peer's pauses shaded, and the ingress PGs' usage
//!   against their XOFF/XON points (`sim::plot`, as `swctl sim run` draws it);
//! - the pause timeline: PFC frames the switches sent per sampling bucket;
//! - rate convergence: each flow's DCQCN rate and acknowledged rate over time.

use super::measure::Measured;
use super::report::{CaseReport, ScoreReport};
use super::targets::Verdict;
use crate::sim::plot::{COLOURS, err, write_port_plot};
use crate::sim::series::Series;
use anyhow::Context;
use plotters::prelude::*;
use std::fmt::Write as _;
use std::path::Path;

/// Lines over time (µs); an empty chart is not drawn.
fn line_chart(
    path: &Path,
    title: &str,
    y_desc: &str,
    lines: &[(String, Vec<(f64, f64)>)],
) -> anyhow::Result<bool> {
    if lines.iter().all(|(_, p)| p.is_empty()) {
        return Ok(false);
    }
    let x_max = lines.iter().flat_map(|(_, p)| p.iter().map(|q| q.0)).fold(1.0, f64::max);
    let y_max = lines.iter().flat_map(|(_, p)| p.iter().map(|q| q.1)).fold(1.0, f64::max) * 1.1;
    let root = SVGBackend::new(path, (1000, 360)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 16))
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(70)
        .build_cartesian_2d(0f64..x_max, 0f64..y_max)
        .map_err(err)?;
    chart.configure_mesh().x_desc("µs").y_desc(y_desc).draw().map_err(err)?;
    for (i, (label, points)) in lines.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        chart
            .draw_series(LineSeries::new(points.iter().copied(), colour.stroke_width(2)))
            .map_err(err)?
            .label(label.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2)));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(err)?;
    root.present().map_err(err)?;
    Ok(true)
}

/// A series' points as a step function in µs.
fn points_us(series: &Series, key: &crate::sim::series::Key) -> Vec<(f64, f64)> {
    series.get(key).unwrap_or_default().iter().map(|&(t, v)| (t as f64 / 1e3, v)).collect()
}

/// The plots of one case; their file names.
fn plots(m: &Measured, prefix: &str, dir: &Path) -> anyhow::Result<Vec<String>> {
    let mut out = Vec::new();
    if let Some(p) = m.report.metrics.throughput.as_ref().and_then(|t| t.ports.first()) {
        let name = format!("{prefix}-{}-{}.svg", p.switch, p.port);
        if write_port_plot(&m.series, &p.switch, &p.port, &dir.join(&name))? {
            out.push(name);
        }
    }
    let name = format!("{prefix}-pfc.svg");
    let pfc: Vec<(f64, f64)> = m.pfc_timeline.iter().map(|&(t, n)| (t, n as f64)).collect();
    let bucket = m.sample_us;
    if line_chart(
        &dir.join(&name),
        &format!("pause timeline: PFC frames all switches sent per {bucket} µs"),
        "frames",
        &[("PFC frames".into(), pfc)],
    )? {
        out.push(name);
    }
    // Up to six flows' DCQCN and acknowledged rates.
    let mut lines = Vec::new();
    for key in m.series.keys().filter(|k| k.series == "flow_dcqcn_rate_mbps").take(6) {
        lines.push((format!("{} {} DCQCN rate", key.node, key.port), points_us(&m.series, key)));
        let acked = crate::sim::series::Key { series: "flow_acked_mbps", ..key.clone() };
        lines.push((format!("{} {} acked", key.node, key.port), points_us(&m.series, &acked)));
    }
    let name = format!("{prefix}-rates.svg");
    if line_chart(&dir.join(&name), "rate convergence (Mb/s)", "Mb/s", &lines)? {
        out.push(name);
    }
    Ok(out)
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

fn cell_class(c: &CaseReport, target: &str) -> &'static str {
    match c.checks.iter().find(|k| k.target == target).map(|k| k.verdict) {
        Some(Verdict::Fail) => "fail",
        Some(Verdict::Pass) => "pass",
        Some(Verdict::NotApplicable) => "na",
        None => "",
    }
}

/// Writes report.json, the plots and report.html; records each case's plots in the report.
pub fn write(report: &mut ScoreReport, measured: &[Vec<Measured>], dir: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    for (i, cases) in measured.iter().enumerate() {
        for (j, m) in cases.iter().enumerate() {
            let prefix = format!("p{}-{}", i + 1, m.report.case.name);
            report.profiles[i].cases[j].plots = plots(m, &prefix, dir)?;
        }
    }
    std::fs::write(dir.join("report.json"), serde_json::to_vec_pretty(report)?)
        .with_context(|| format!("writing {}/report.json", dir.display()))?;
    let mut h = String::from(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>swctl score</title><style>\
         body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin:1em 0}\
         td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}th{background:#eee}\
         td.fail{background:#fbb}td.pass{background:#dfd}td.na{color:#888}td.diff{outline:2px solid #e90}\
         td:first-child,th:first-child{text-align:left}svg{max-width:100%;height:auto}</style></head><body>",
    );
    let _ = write!(
        h,
        "<h1>swctl score</h1><p>Suite v{}{}, seed {}. Targets: {}. Overall: <b>{}</b>.</p>",
        report.suite_version,
        if report.quick { " (quick)" } else { "" },
        report.seed,
        escape(&report.targets.describe()),
        if report.pass { "PASS" } else { "FAIL" }
    );
    // Side by side: one row per case and metric, one column per profile; differing cells outlined.
    let headers = [
        "throughput %",
        "PFC p99 /s",
        "lossless latency p99 µs",
        "lossless drops",
        "headroom peak %",
        "shared peak %",
        "ECN before XOFF",
        "watchdog storms",
        "score",
    ];
    let _ = write!(h, "<h2>Profiles side by side</h2><table><tr><th>case</th><th>metric</th>");
    for p in &report.profiles {
        let _ = write!(h, "<th>{}</th>", escape(&p.profile));
    }
    h.push_str("</tr>");
    for (j, case) in report.profiles[0].cases.iter().enumerate() {
        for (k, metric) in headers.iter().enumerate() {
            let cells: Vec<(String, &'static str)> = report
                .profiles
                .iter()
                .map(|p| p.cases.get(j).map_or(("-".into(), ""), |c| metric_cell(c, k)))
                .collect();
            let differs = cells.windows(2).any(|w| w[0].0 != w[1].0);
            let _ = write!(h, "<tr><td>{}</td><td>{metric}</td>", escape(&case.case.name));
            for (text, class) in cells {
                let class = if differs { format!("{class} diff") } else { class.to_owned() };
                let _ = write!(h, "<td class=\"{class}\">{}</td>", escape(&text));
            }
            h.push_str("</tr>");
        }
    }
    h.push_str("<tr><td>fabric</td><td>deadlock cycles</td>");
    for p in &report.profiles {
        let class = if p.deadlock.verdict == Verdict::Fail { "fail" } else { "pass" };
        let _ = write!(h, "<td class=\"{class}\">{}</td>", escape(&p.deadlock.describe()));
    }
    h.push_str("</tr></table>");
    for (i, p) in report.profiles.iter().enumerate() {
        let _ = write!(
            h,
            "<h2>{}: {}</h2><p>{} ({} switches, {} hosts at {} Mb/s).</p>",
            escape(&p.profile),
            if p.pass { "PASS" } else { "FAIL" },
            escape(&p.fabric.description),
            p.fabric.switches,
            p.fabric.hosts,
            p.fabric.line_rate_mbps
        );
        if !p.suggestions.is_empty() {
            h.push_str("<h3>Suggestions (not applied)</h3><ul>");
            for s in &p.suggestions {
                let _ = write!(
                    h,
                    "<li><code>{}</code>: {} → <b>{}</b> ({}: {})</li>",
                    escape(&s.field),
                    escape(&s.current),
                    escape(&s.suggested),
                    s.rule,
                    escape(&s.why)
                );
            }
            h.push_str("</ul>");
        }
        for c in &p.cases {
            let _ = write!(
                h,
                "<details><summary><b>{}</b> {}: {}</summary><p>{}</p><ul>",
                escape(&c.case.name),
                if c.pass { "PASS" } else { "FAIL" },
                escape(&c.description),
                escape(&c.applies.note)
            );
            for k in &c.checks {
                let _ = write!(h, "<li>{}</li>", escape(&k.describe()));
            }
            h.push_str("</ul>");
            for plot in &c.plots {
                let svg = std::fs::read_to_string(dir.join(plot)).unwrap_or_default();
                let body = svg.find("<svg").map_or("", |at| &svg[at..]);
                let _ = write!(h, "<div>{body}</div>");
            }
            h.push_str("</details>");
        }
        let _ = i;
    }
    h.push_str("</body></html>\n");
    std::fs::write(dir.join("report.html"), h)
        .with_context(|| format!("writing {}/report.html", dir.display()))?;
    Ok(())
}

/// The `k`th metric of the side-by-side table, with its verdict's class.
fn metric_cell(c: &CaseReport, k: usize) -> (String, &'static str) {
    let m = &c.metrics;
    let f1 = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.1}"));
    match k {
        0 => (f1(m.throughput.as_ref().map(|t| t.min_percent)), cell_class(c, "throughput_percent")),
        1 => (format!("{:.0}", m.pfc.p99_pps), cell_class(c, "pfc_pps_p99")),
        2 => (f1(m.latency.scored.map(|l| l.p99_us)), cell_class(c, "latency_p99_us")),
        3 => (m.drops.lossless.to_string(), cell_class(c, "lossless_drops")),
        4 => (format!("{:.0}", m.buffer.headroom_peak_percent), ""),
        5 => (format!("{:.0}", m.buffer.shared_peak_percent), ""),
        6 => (
            match m.ecn_vs_xoff.ecn_first {
                Some(true) => "yes",
                Some(false) => "no",
                None => "-",
            }
            .into(),
            "",
        ),
        7 => (m.watchdog.storms_detected.to_string(), ""),
        _ => (if c.pass { "PASS" } else { "FAIL" }.into(), if c.pass { "pass" } else { "fail" }),
    }
}
