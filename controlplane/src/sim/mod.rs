//! `swctl sim run SCENARIO`: a scenario — the same file `swctl lab run` takes, topology and all — run in
//! virtual time on the switch and NIC models themselves (`lossless_core::sim`), at the port speeds the
//! configurations give (no time scaling), deterministically: the same scenario and `--seed` give a
//! byte-identical report, time series and capture on every run and machine.
//!
//! ```text
//! swctl sim run configs/scenarios/incast-100g.yaml            # report; exit 1 if an expectation fails
//! swctl sim run FILE --seed 7 --until-ms 5 --resolution-us 10 --pcap sw1:Ethernet8 --out /tmp/run
//! swctl --json sim run FILE                                   # the report as JSON
//! ```
//!
//! What it writes into `--out` (default `sim-<scenario>` in the current directory): `scenario.json` (the
//! report), `series.csv` and `series.json` (the time series, [`series`]), `estats.json` (per-flow RDMA
//! statistics, [`crate::pingmesh::estats`]), with a scenario's `pingmesh:` the latency matrix
//! `pingmesh.json` and its heatmap `pingmesh.svg` ([`crate::pingmesh`]), one SVG plot per switch port that
//! queued or paused ([`plot`]), and `NODE-PORT.pcap` per `--pcap` (both directions of the link, nanosecond
//! timestamps; tshark decodes PFC quanta, BTH PSNs and ECN).
//!
//! A run that takes more than a second draws a progress bar on stderr when stderr is a terminal
//! ([`progress`]: virtual time done, virtual / wall time); Ctrl-C ends the run with a partial report.
//!
//! How the lab's steps map: `traffic` flows start at their instant and start no message after the
//! scenario's duration; `storm` is the host NIC's PFC storm between its start and stop; `stop-host` stops
//! driving the host (it sends nothing more and takes nothing); `flush-fdb` and `apply` act on the switch
//! model at their instant (an apply is merged, or replaces, and is validated exactly as switchd does). The
//! hosts announce themselves with a gratuitous ARP 1 ms before the scenario's origin.

pub mod fabric;
pub mod parallel;
pub mod plot;
pub mod progress;
pub mod run;
pub mod series;

use crate::lab::scenario::Scenario;
use anyhow::Context;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

#[derive(clap::Subcommand, Debug)]
pub enum SimCommand {
    /// Run a scenario file (as `swctl lab run` takes it) in virtual time.
    Run {
        file: PathBuf,
        /// Seed of random link loss and corruption and of the flows' QPNs and PSNs.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// End the run this many ms after the hosts are up (default: the scenario's duration + 100 ms
        /// for what is in flight).
        #[arg(long)]
        until_ms: Option<f64>,
        /// Time-series resolution, µs.
        #[arg(long, default_value_t = 100.0)]
        resolution_us: f64,
        /// Capture the link of NODE:PORT (both directions) into OUT/NODE-PORT.pcap. Repeatable.
        #[arg(long)]
        pcap: Vec<String>,
        /// Output directory (default: `sim-<scenario name>`).
        #[arg(long)]
        out: Option<PathBuf>,
        /// No SVG plots.
        #[arg(long)]
        no_plots: bool,
        /// Threads: the fabric is cut into this many parts run side by side (0: one per core for a
        /// fabric of 64 nodes or more). The outputs are the same whatever the number.
        #[arg(long, default_value_t = 0)]
        threads: usize,
    },
}

static STOP: AtomicBool = AtomicBool::new(false);

pub fn run(command: SimCommand, json: bool) -> anyhow::Result<ExitCode> {
    let SimCommand::Run { file, seed, until_ms, resolution_us, pcap, out, no_plots, threads } = command;
    let scenario = Scenario::load(&file)?;
    if !(resolution_us.is_finite() && resolution_us >= 0.001) {
        anyhow::bail!("--resolution-us {resolution_us}: at least 0.001 (1 ns)");
    }
    let until_ns = match until_ms {
        Some(ms) if ms.is_finite() && ms > 0.0 => Some((ms * 1e6).round() as u64),
        Some(ms) => anyhow::bail!("--until-ms {ms}: a time > 0"),
        None => None,
    };
    let out = out.unwrap_or_else(|| PathBuf::from(format!("sim-{}", scenario.name)));
    // Handlers first: once the output directory exists, Ctrl-C ends the run with a partial report.
    let signals =
        lossless_dataplane::shutdown::Shutdown::install_with(|_, _| STOP.store(true, Ordering::SeqCst))?;
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let options = run::Options {
        seed,
        until_ns,
        resolution_ns: (resolution_us * 1e3).round() as u64,
        pcap,
        out: out.clone(),
        threads,
    };
    let mut bar = progress::Progress::new(std::io::stderr().is_terminal());
    let wall = Instant::now();
    let outcome = run::run(&scenario, &options, &mut |done, total| {
        bar.update(done, total);
        !STOP.load(Ordering::SeqCst)
    })?;
    drop(signals);
    let elapsed = wall.elapsed();
    bar.finish(STOP.load(Ordering::SeqCst));
    let report = &outcome.report;
    for w in &outcome.warnings {
        eprintln!("warning: {w}");
    }
    std::fs::write(out.join("scenario.json"), serde_json::to_vec_pretty(report)?)?;
    std::fs::write(out.join("series.csv"), outcome.series.to_csv())?;
    std::fs::write(out.join("series.json"), outcome.series.to_json()?)?;
    std::fs::write(out.join("estats.json"), serde_json::to_vec_pretty(&outcome.estats)?)?;
    let pingmesh_files = match &outcome.pingmesh {
        Some(m) => m.write(&out)?,
        None => Vec::new(),
    };
    let mut plots = Vec::new();
    if !no_plots {
        plots = plot::write_plots(&outcome.series, &scenario, &out)?;
    }
    for (name, bytes, _) in &outcome.captures {
        std::fs::write(out.join(name), bytes)?;
    }
    if json {
        println!("{}", serde_json::to_string_pretty(report)?);
    } else {
        print!("{}", report.describe());
        if let Some(m) = &outcome.pingmesh {
            print!("{}", m.describe());
        }
        let ratio = outcome.virtual_ns as f64 / elapsed.as_nanos().max(1) as f64;
        println!(
            "  simulated {:.3} ms in {:.3} s of wall time ({ratio:.4}× real time), {} events ({:.2} M/s), {} thread{}",
            outcome.virtual_ns as f64 / 1e6,
            elapsed.as_secs_f64(),
            outcome.events,
            outcome.events as f64 / elapsed.as_secs_f64().max(1e-9) / 1e6,
            outcome.threads,
            if outcome.threads == 1 { "" } else { "s" }
        );
        println!(
            "  wrote {}/scenario.json, series.csv, series.json, estats.json{}{}",
            out.display(),
            pingmesh_files.iter().map(|f| format!(", {f}")).collect::<String>(),
            plot_list(&plots)
        );
        for (name, _, frames) in &outcome.captures {
            println!("  wrote {}/{name} ({frames} frames)", out.display());
        }
    }
    Ok(if report.ok && !report.partial { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

fn plot_list(plots: &[String]) -> String {
    match plots.len() {
        0 => String::new(),
        n => format!(", {n} plot(s) ({}{})", plots[..n.min(3)].join(", "), if n > 3 { ", ..." } else { "" }),
    }
}
