//! `swctl score PROFILE [PROFILE2 …]`: is this buffer/QoS profile ready for production? A fixed,
//! versioned traffic suite ([`suite`]) runs in the simulator on a fabric built from each profile (a small
//! two-tier Clos at the profile's port speed, or `--topology FILE` with the profile's QoS and buffer
//! tables on every switch), each case is measured ([`measure`]) and scored against stated targets
//! ([`targets`]: UCloud's design targets, zero lossless loss, no deadlock cycle), with suggestions where the
//! rule is known ([`suggest`]). Several profiles are compared side by side ([`report`]); `--out DIR`
//! writes a self-contained HTML report with the key plots ([`html`]). Exit status 1 when a target fails.
//!
//! ```text
//! swctl score configs/profiles/th_balanced.yaml
//! swctl score configs/profiles/th_balanced.yaml configs/profiles/ucloud.yaml --out /tmp/score
//! swctl score PROFILE --quick --case incast --target pfc_pps_p99=1000 --json
//! ```
//!
//! Cases run in parallel threads (`--jobs`, default the machine's cores); each is deterministic, so the
//! report does not depend on the number of threads. Definitions and sources: `docs/score.md`.

pub mod html;
pub mod measure;
pub mod report;
pub mod suggest;
pub mod suite;
pub mod targets;

use crate::clos::{self, ClosSpec};
use crate::lab::topology::Topology;
use anyhow::Context;
use lossless_dataplane::model::config::ConfigDb;
use report::{FabricInfo, ProfileReport, ScoreReport};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use suite::{Base, Plan};
use targets::{Check, Targets};

#[derive(clap::Args, Debug, Clone)]
pub struct ScoreArgs {
    /// Profiles (switch configurations such as configs/profiles/th_balanced.yaml) to score; several are
    /// compared side by side.
    #[arg(required = true)]
    pub profiles: Vec<PathBuf>,
    /// A topology file to run on instead of the generated Clos: every switch keeps its forwarding tables and
    /// takes the profile's QoS and buffer tables.
    #[arg(long)]
    pub topology: Option<PathBuf>,
    /// The reduced suite (three short cases on a smaller fabric), for CI.
    #[arg(long)]
    pub quick: bool,
    /// Run only the cases whose name contains this (repeatable).
    #[arg(long = "case")]
    pub cases: Vec<String>,
    /// Override a target: NAME=VALUE (throughput_percent, pfc_pps_p99, latency_p99_us, lossless_drops).
    #[arg(long = "target")]
    pub targets: Vec<String>,
    /// Cases run at once (default: the machine's cores).
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Seed of the flows' QPNs and PSNs.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Write report.json and a self-contained report.html with plots here.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// The generated fabric: 4 leaves of 9 hosts and 4 spines (36 hosts: a 32:1 incast fits, with leaves
/// 2.25:1 oversubscribed as production ToRs are); quick: 2 leaves of 3 hosts, 2 spines.
pub fn clos_spec(quick: bool, speed_mbps: u32) -> ClosSpec {
    let (leaves, hosts_per_leaf, spines) = if quick { (2, 3, 2) } else { (4, 9, 4) };
    ClosSpec { leaves, hosts_per_leaf, spines, speed_mbps, host_mtu: 4200 }
}

/// The profile's port speed: its lowest-numbered port's `PORT|speed`.
pub fn profile_speed_mbps(profile: &ConfigDb) -> Option<u32> {
    let ports = profile.tables.get("PORT")?;
    let number =
        |name: &str| name.trim_start_matches(|c: char| !c.is_ascii_digit()).parse::<u64>().unwrap_or(0);
    ports.iter().min_by_key(|(name, _)| number(name)).and_then(|(_, f)| f.get("speed")?.parse().ok())
}

/// The fabric for a profile: generated, or the topology file with the profile's tables.
pub fn fabric(
    profile_path: &Path,
    topology: Option<&Path>,
    quick: bool,
) -> anyhow::Result<(Topology, String)> {
    let text = std::fs::read_to_string(profile_path)
        .with_context(|| format!("cannot read {}", profile_path.display()))?;
    let profile =
        ConfigDb::from_yaml_str(&text).map_err(|e| anyhow::anyhow!("{}: {e}", profile_path.display()))?;
    match topology {
        None => {
            let speed = profile_speed_mbps(&profile)
                .with_context(|| format!("{}: no PORT with a speed", profile_path.display()))?;
            let spec = clos_spec(quick, speed);
            let generated = clos::generate("score", &spec, &profile)
                .with_context(|| format!("{}: building the fabric", profile_path.display()))?;
            let topology =
                generated.to_topology().with_context(|| format!("{}: the fabric", profile_path.display()))?;
            let description = format!(
                "generated two-tier Clos: {} leaves of {} hosts, {} spines, {} Mb/s",
                spec.leaves, spec.hosts_per_leaf, spec.spines, spec.speed_mbps
            );
            Ok((topology, description))
        }
        Some(path) => {
            let mut topology = Topology::load(path)?;
            for sw in &mut topology.switches {
                let mut db = clos::with_profile(&sw.config, &profile)
                    .with_context(|| format!("{}: switch {}", path.display(), sw.name))?;
                crate::lab::topology::resolve_switch_config(&mut db).map_err(|issues| {
                    anyhow::anyhow!(
                        "{}: switch {} with {}: {}",
                        path.display(),
                        sw.name,
                        profile_path.display(),
                        issues.join("; ")
                    )
                })?;
                let compiled = lossless_dataplane::model::config::compile(&db).map_err(|e| {
                    anyhow::anyhow!(
                        "{}: switch {} with {}: {e}",
                        path.display(),
                        sw.name,
                        profile_path.display()
                    )
                })?;
                sw.config = db;
                sw.compiled = compiled.config;
            }
            Ok((topology, format!("{} with the profile's QoS and buffer tables", path.display())))
        }
    }
}

/// One unit of work: a case of a profile.
struct Job<'a> {
    profile: usize,
    base: &'a Base,
    plan: Plan,
}

/// Runs the suite on every profile; the report and, per case, its measurements (for `--out`).
pub fn score(args: &ScoreArgs) -> anyhow::Result<(ScoreReport, Vec<Vec<measure::Measured>>)> {
    let mut targets = Targets::default();
    for t in &args.targets {
        targets.set(t)?;
    }
    if args.jobs == Some(0) {
        anyhow::bail!("--jobs 0: at least 1");
    }
    let cases: Vec<suite::Case> = suite::cases(args.quick)
        .into_iter()
        .filter(|c| args.cases.is_empty() || args.cases.iter().any(|f| c.name.contains(f.as_str())))
        .collect();
    if cases.is_empty() {
        let names: Vec<String> = suite::cases(args.quick).into_iter().map(|c| c.name).collect();
        anyhow::bail!("--case {}: no case matches ({})", args.cases.join(", "), names.join(", "));
    }
    let mut bases = Vec::new();
    for p in &args.profiles {
        let (topology, description) = fabric(p, args.topology.as_deref(), args.quick)?;
        let base = Base::new(topology).with_context(|| format!("{}", p.display()))?;
        bases.push((base, description));
    }
    let mut jobs = Vec::new();
    for (i, (base, _)) in bases.iter().enumerate() {
        for c in &cases {
            let plan = suite::plan(base, c).with_context(|| format!("{}", args.profiles[i].display()))?;
            jobs.push(Job { profile: i, base, plan });
        }
    }
    let threads = args.jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<anyhow::Result<measure::Measured>>>> =
        Mutex::new((0..jobs.len()).map(|_| None).collect());
    std::thread::scope(|scope| {
        for _ in 0..threads.min(jobs.len()) {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    let Some(job) = jobs.get(i) else { break };
                    let r = measure::measure(job.base, &job.plan, &targets, args.seed).with_context(|| {
                        format!("{}: case {}", args.profiles[job.profile].display(), job.plan.case.name)
                    });
                    results.lock().expect("no thread panics holding it")[i] = Some(r);
                }
            });
        }
    });
    let mut results = results.into_inner().expect("threads are done");
    let mut profiles = Vec::new();
    let mut measured = Vec::new();
    for (i, (base, description)) in bases.iter().enumerate() {
        let mut cases_of = Vec::new();
        for (j, job) in jobs.iter().enumerate().filter(|(_, j)| j.profile == i) {
            let m = results[j]
                .take()
                .unwrap_or_else(|| Err(anyhow::anyhow!("case {} did not run", job.plan.case.name)))?;
            cases_of.push(m);
        }
        let reports: Vec<_> = cases_of.iter().map(|m| m.report.clone()).collect();
        let analysis = crate::deadlock::check(&base.topology);
        let deadlock = Check::deadlock(analysis.cycles.len());
        let suggestions = suggest::suggest(base, &reports);
        let pass = deadlock.verdict != targets::Verdict::Fail && reports.iter().all(|c| c.pass);
        profiles.push(ProfileReport {
            profile: args.profiles[i].display().to_string(),
            fabric: FabricInfo {
                description: description.clone(),
                switches: base.topology.switches.len(),
                hosts: base.topology.hosts.len(),
                line_rate_mbps: base.line_rate_mbps,
                lossless: base.lossless,
                lossy: base.lossy,
            },
            deadlock,
            cases: reports,
            suggestions,
            pass,
        });
        measured.push(cases_of);
    }
    let pass = profiles.iter().all(|p| p.pass);
    let report = ScoreReport {
        suite_version: suite::SUITE_VERSION,
        seed: args.seed,
        quick: args.quick,
        targets,
        profiles,
        pass,
    };
    Ok((report, measured))
}

/// `swctl score`.
pub fn run(args: ScoreArgs, json: bool) -> anyhow::Result<ExitCode> {
    let (mut report, measured) = score(&args)?;
    if let Some(dir) = &args.out {
        html::write(&mut report, &measured, dir)?;
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", report.describe());
        if let Some(dir) = &args.out {
            println!("wrote {}/report.json and {}/report.html", dir.display(), dir.display());
        }
    }
    Ok(if report.pass { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

#[cfg(test)]
mod tests;
