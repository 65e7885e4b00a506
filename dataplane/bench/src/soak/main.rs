//! soak: switchd under hours-long mixed abuse, for leaks, lost lossless frames and accounting drift. Not
//! run by CI (`bench/soak.sh` runs it; README.md, "Benchmarks").
//!
//! ```text
//! h0 (lossless DSCP 3, 400 Mb/s) ───────── Ethernet0  ┐
//! h1 (lossless DSCP 3+4, 250+150 Mb/s) ─── Ethernet4  ├ switchd (1 Gb/s ports, PFC 3,4 + watchdog)
//! h2 (lossy DSCP 8, 300 Mb/s) ──────────── Ethernet8  │
//! h3 (receiver of all three) ───────────── Ethernet12 ┘
//! ```
//!
//! A testkit `Star` (namespaces `sksw…`, `skh…`) around the real switchd; one rocehost per host (the CLI
//! `swctl lab` uses: `--flow`, `--ready-file`, `--report`), the three senders in incast on the receiver's
//! 1 Gb/s port (1.1 Gb/s offered: PFC pauses the lossless senders, the lossy queue tail-drops). For
//! `--minutes`, on a plan drawn from `--seed` ([`schedule`]):
//! - every ~10 s a whole-configuration Apply (`replace: true`) with other safe values ([`config::Variant`]);
//! - every ~20 s a sender restarts (SIGTERM, report read, a new rocehost on new QPs);
//! - every ~30 s a PFC storm (XOFF on 3 and 4 every 100 µs for 3 s) from a second rocehost in the namespace
//!   of a lossless sender or of the receiver; the watchdog's counters must show it detected on the port and
//!   every detection restored;
//! - every second switchd's VmRSS is sampled and both ledger identities are checked on a counter snapshot.
//!
//! At the end the senders stop, the queues drain (awaited on the counters), the receiver stops, and on the
//! quiet switch: no lossless drop (PGs 3/4 at ingress, queues 3/4 at egress) besides the watchdog's drop
//! action, exact conservation, every storm restored, switchd alive at the expected generation, memory flat
//! after the warm-up. Then the lab is torn down and nothing may be left (namespaces, processes, files).
//! Exit 0 on PASS, 1 on FAIL (the summary lists why), 2 on an error that stopped the run.

mod checks;
mod config;
mod lab;
mod run;
mod schedule;
#[path = "../stop.rs"]
mod stop;
mod summary;

use anyhow::ensure;
use clap::Parser;
use lab::{Lab, find_leftovers};
use run::{RECEIVER, SENDERS, STORMERS, Soak, flows};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;
use stop::{check_stop, install_signal_handlers};
use summary::{RssFigures, Summary};

#[derive(Parser, Debug)]
#[command(
    name = "soak",
    about = "switchd soak: incast, applies, PFC storms, restarts; checks drops, ledger, memory"
)]
struct Args {
    /// How long to run (fractions allowed, e.g. 0.5).
    #[arg(long, default_value_t = 30.0)]
    minutes: f64,
    /// Seed of the plan (which action when, on which host, with which values).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Offered load, a factor on the senders' rates (1 = 1.1 Gb/s into the 1 Gb/s receiver port).
    #[arg(long, default_value_t = 1.0)]
    load: f64,
    /// RSS samples before this many seconds are the warm-up [default: 60, or a third of a shorter run].
    #[arg(long)]
    warmup_s: Option<f64>,
    /// Allowed RSS growth after the warm-up: the larger of this percentage and --rss-limit-mb.
    #[arg(long, default_value_t = 10.0)]
    rss_limit_pct: f64,
    #[arg(long, default_value_t = 20.0)]
    rss_limit_mb: f64,
    /// The switchd binary [default: next to this one].
    #[arg(long)]
    switchd: Option<PathBuf>,
    /// The rocehost binary [default: next to this one].
    #[arg(long)]
    rocehost: Option<PathBuf>,
    /// Leave out kinds of actions (apply, restart, storm), e.g. to narrow a failure down.
    #[arg(long, value_delimiter = ',', value_parser = ["apply", "restart", "storm"])]
    skip: Vec<String>,
    /// Print the summary as JSON on stdout (progress stays on stderr).
    #[arg(long)]
    json: bool,
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    if let Err(e) = install_signal_handlers() {
        eprintln!("soak: installing the SIGINT/SIGTERM handlers: {e}");
        return ExitCode::from(2);
    }
    match run(Args::parse()) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("soak: {e:#}");
            eprintln!("soak: stopped; the lab was removed");
            ExitCode::from(2)
        }
    }
}

fn binary(given: &Option<PathBuf>, name: &str) -> anyhow::Result<PathBuf> {
    let path = given.clone().unwrap_or_else(|| {
        std::env::current_exe()
            .ok()
            .and_then(|e| e.parent().map(|d| d.join(name)))
            .unwrap_or_else(|| name.into())
    });
    ensure!(path.is_file(), "{name} binary {} not found (build it, or pass --{name} PATH)", path.display());
    Ok(path.canonicalize()?)
}

fn run(args: Args) -> anyhow::Result<bool> {
    // SAFETY: geteuid has no preconditions.
    #[allow(unsafe_code)]
    let euid = unsafe { libc::geteuid() };
    ensure!(euid == 0, "needs root (network namespaces, AF_PACKET sockets)");
    ensure!(args.minutes > 0.0 && args.load > 0.0, "--minutes and --load must be > 0");
    let (switchd, rocehost) = (binary(&args.switchd, "switchd")?, binary(&args.rocehost, "rocehost")?);
    let length = Duration::from_secs_f64(args.minutes * 60.0);
    let warmup_s = args.warmup_s.unwrap_or_else(|| 60f64.min(length.as_secs_f64() / 3.0));
    let mut plan = schedule::plan(args.seed, length, &SENDERS, &STORMERS);
    plan.retain(|(_, a)| !args.skip.iter().any(|s| s == a.kind()));
    eprintln!(
        "soak: {:.1} min, seed {}, {} actions planned; building the lab",
        args.minutes,
        args.seed,
        plan.len()
    );

    let mut lab = Lab::build(&switchd, &rocehost)?;
    for h in &mut lab.hosts {
        h.flows = flows(h.index, args.load);
    }
    // The receiver first, so nothing is sent to a host that is not listening yet.
    for i in std::iter::once(RECEIVER).chain(SENDERS) {
        lab.start_host(i)?;
    }
    let mut soak = Soak::new(lab);
    let mut summary = Summary {
        seed: args.seed,
        minutes: args.minutes,
        build: if cfg!(debug_assertions) { "debug" } else { "release" },
        ..Summary::default()
    };
    let mut next = 0usize;
    let mut next_sample = Duration::ZERO;
    let mut next_progress = Duration::from_secs(10);
    loop {
        check_stop()?;
        let now = soak.start.elapsed();
        if now >= length {
            break;
        }
        while let Some((at, action)) = plan.get(next).filter(|(at, _)| *at <= now) {
            soak.act(*at, action)?;
            next += 1;
        }
        if now >= next_sample {
            soak.sample()?;
            next_sample += Duration::from_secs(1);
        }
        if now >= next_progress {
            next_progress += Duration::from_secs(10);
            progress(&soak);
        }
        let wake = plan.get(next).map_or(length, |(at, _)| *at).min(next_sample).min(length);
        std::thread::sleep(wake.saturating_sub(soak.start.elapsed()).min(Duration::from_millis(200)));
    }
    eprintln!("soak: time is up; stopping traffic and draining");
    soak.finish(&mut summary)?;
    summary.elapsed_s = soak.start.elapsed().as_secs_f64();
    summary.rss = RssFigures::of(&soak.rss, warmup_s, args.rss_limit_pct, args.rss_limit_mb);
    summary.applies = soak.applies;
    summary.generation = soak.generation;
    summary.restarts = soak.restarts;
    summary.conservation_checks = soak.conservation_checks;
    summary.hosts = soak.hosts.clone();
    summary.events = soak.events.lock().unwrap().clone();
    let mut failures = std::mem::take(&mut soak.failures);

    let leftovers = soak.lab.teardown();
    summary.leftovers = find_leftovers(&leftovers);
    check(&mut failures, &summary);
    summary.passed = failures.is_empty();
    summary.failures = failures;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&summary)?);
    } else {
        summary.print();
    }
    Ok(summary.passed)
}

/// The verdicts on the end figures (the ledger and the storms were checked as the run went).
fn check(failures: &mut Vec<String>, s: &Summary) {
    let mut fail = |cond: bool, what: String| {
        if cond {
            failures.push(what);
        }
    };
    let d = &s.drops;
    fail(d.lossless_ingress != 0, format!("{} lossless ingress (PG 3/4) drops", d.lossless_ingress));
    fail(
        d.lossless_egress != 0,
        format!("{} lossless egress (queue 3/4) drops besides the watchdog's", d.lossless_egress),
    );
    let w = &s.watchdog;
    fail(
        w.detected != w.restored,
        format!("watchdog: {} storms detected, {} restored", w.detected, w.restored),
    );
    fail(!w.stormed_at_end.is_empty(), format!("queues still stormed at the end: {:?}", w.stormed_at_end));
    fail(s.storms.iter().any(|x| !x.ok), "a storm was not detected or not restored (see above)".into());
    fail(
        s.traffic.to_receiver_lossless == 0 || s.traffic.to_receiver_lossy == 0,
        "no traffic reached the receiver".into(),
    );
    fail(
        !s.rss.flat(),
        format!(
            "switchd's RSS grew from {} kB after the warm-up to {} kB (limit +{} kB)",
            s.rss.after_warmup_kb, s.rss.end_kb, s.rss.limit_kb
        ),
    );
    fail(!s.leftovers.is_empty(), format!("left behind: {:?}", s.leftovers));
}

fn progress(soak: &Soak) {
    let rss = soak.rss.last().map_or(0, |r| r.1);
    let (drops, queued) = soak
        .last
        .as_ref()
        .map_or((checks::Drops::default(), 0), |c| (checks::Drops::of(c), checks::queued(c)));
    eprintln!(
        "soak: {:>6.0}s rss {:.1} MiB, applies {}, restarts {}, storms {}, lossless drops {}/{} (watchdog {}), lossy drops {}, RX overruns {}, queued {}, failures {}",
        soak.start.elapsed().as_secs_f64(),
        rss as f64 / 1024.0,
        soak.applies,
        soak.restarts,
        soak.storms_started(),
        drops.lossless_ingress,
        drops.lossless_egress,
        drops.watchdog_tx_dropped,
        drops.lossy_egress,
        drops.rx_overrun,
        queued,
        soak.failures.len()
    );
}
