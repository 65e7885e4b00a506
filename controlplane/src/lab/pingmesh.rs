//! `swctl lab pingmesh LAB`: Pingmesh on a running lab (docs/pingmesh.md). Beside each host's own rocehost
//! (which answers pings, as every rocehost does), a prober rocehost starts on the same interface with the
//! host's address (`--probe-only`: it takes only PFC frames and pongs from the wire, answers nothing) and
//! pings every other host every `--interval-ms` for `--duration-s`, on `--dscp` (the lossless class by
//! default). When they have all exited, their reports make the latency matrix: printed (p50/p99 µs per
//! pair), and written to `--out` as `pingmesh.json`, `pingmesh.svg` and `estats.json`.
//!
//! The RTT is measured by each prober on its own clock (`CLOCK_MONOTONIC`), from the ping leaving its
//! NIC model to the pong reaching it: veth hops, switchd's forwarding and pacing, the kernel's packet
//! sockets and both rocehosts' wake-ups are all in it (the responder's share is reported apart, as
//! `responder_hold`).

use super::state::{LabState, Phase, find_binary, lab_dir};
use super::topology::{HostNode, Topology};
use super::{check_interrupted, interrupted};
use crate::pingmesh::estats::Estats;
use crate::pingmesh::{PingmeshMatrix, PingmeshSpec, peers_of};
use anyhow::{Context, bail};
use lossless_dataplane::launch::{Log, Rocehost, RocehostCommand};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// How long after `--duration-s` the probers have to exit and write their reports.
const EXIT_GRACE: Duration = Duration::from_secs(15);

#[derive(Debug, Clone)]
pub struct PingmeshOptions {
    pub interval_ms: f64,
    pub duration_s: f64,
    pub dscp: u8,
    pub priority: Option<u8>,
    /// Default: `pingmesh-<lab>` in the current directory.
    pub out: Option<PathBuf>,
}

/// rocehost's probing arguments for `host`: every other host through its next hop.
pub fn prober_args(host: &HostNode, hosts: &[&HostNode], spec: &PingmeshSpec) -> Vec<String> {
    let mut args = Vec::new();
    for (ip, mac) in peers_of(host, hosts) {
        args.extend(["--pingmesh-peer".into(), format!("{ip}@{mac}")]);
    }
    args.extend(["--pingmesh-interval-us".into(), format!("{}", spec.interval_us)]);
    args.extend(["--pingmesh-dscp".into(), spec.dscp.to_string()]);
    args.extend(["--pingmesh-priority".into(), spec.priority().to_string()]);
    args
}

/// A prober this command started; the launcher stops it (SIGTERM) if the command ends early.
struct Prober {
    host: String,
    child: Rocehost,
}

pub fn run(lab: &str, options: &PingmeshOptions, json: bool) -> anyhow::Result<ExitCode> {
    if !(options.interval_ms.is_finite() && options.interval_ms >= 0.001) {
        bail!("--interval-ms {}: at least 0.001 (1 µs)", options.interval_ms);
    }
    if !(options.duration_s.is_finite() && options.duration_s > 0.0 && options.duration_s <= 86_400.0) {
        bail!("--duration-s {}: more than 0, at most 86400", options.duration_s);
    }
    let spec = PingmeshSpec {
        interval_us: options.interval_ms * 1e3,
        dscp: options.dscp,
        priority: options.priority,
    };
    spec.validate().map_err(anyhow::Error::msg)?;
    let dir = lab_dir(lab);
    let state = LabState::load(&dir).with_context(|| {
        format!("lab {lab} is not running (`swctl lab up TOPOLOGY --name {lab}` starts it)")
    })?;
    if state.phase != Phase::Up {
        bail!("lab {lab} is not up (phase {:?})", state.phase);
    }
    let topology = Topology::load(Path::new(&state.topology))
        .with_context(|| format!("lab {lab}: reading its topology {}", state.topology))?;
    let hosts: Vec<&HostNode> = topology.hosts.iter().collect();
    if hosts.len() < 2 {
        bail!("lab {lab} has {} host(s): Pingmesh needs two or more", hosts.len());
    }
    let rocehost = find_binary("rocehost")?;
    let out = options.out.clone().unwrap_or_else(|| PathBuf::from(format!("pingmesh-{lab}")));
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;

    let mut probers = Vec::new();
    for h in &hosts {
        check_interrupted()?;
        let Some(hs) = state.hosts.iter().find(|s| s.name == h.name) else {
            bail!("lab {lab}: host {} of the topology is not in the lab's state", h.name);
        };
        let report = dir.join(format!("{}.pingmesh.json", h.name));
        let log = dir.join(format!("{}.pingmesh.log", h.name));
        let _ = std::fs::remove_file(&report);
        let mut args = h.rocehost_nic_args(&hs.interface);
        args.extend(["--probe-only".into(), "--duration".into(), format!("{}", options.duration_s)]);
        args.extend(prober_args(h, &hosts, &spec));
        let child = RocehostCommand::new(&rocehost)
            .label(&format!("the prober of {}", h.name))
            .netns_named(&hs.namespace)
            .args(&args)
            .report(&report)
            .env("NO_COLOR", "1")
            .log(Log::File(log))
            .own_process_group()
            .spawn()
            .with_context(|| format!("starting the prober of {}", h.name))?;
        probers.push(Prober { host: h.name.clone(), child });
    }
    if !json {
        eprintln!(
            "pingmesh: {} hosts probing each other every {} ms for {} s (DSCP {}, priority {})",
            hosts.len(),
            options.interval_ms,
            options.duration_s,
            spec.dscp,
            spec.priority()
        );
    }
    let deadline = Instant::now() + Duration::from_secs_f64(options.duration_s) + EXIT_GRACE;
    for p in &mut probers {
        loop {
            if interrupted() {
                bail!("interrupted");
            }
            match p.child.try_wait()? {
                Some(status) if status.success() => break,
                Some(status) => bail!("the prober of {} failed ({status}){}", p.host, p.child.log_tail()),
                None if Instant::now() > deadline => {
                    bail!("the prober of {} did not finish{}", p.host, p.child.log_tail())
                }
                None => std::thread::sleep(Duration::from_millis(20)),
            }
        }
    }
    let mut reports = BTreeMap::new();
    for p in &probers {
        let r = p.child.report().with_context(|| format!("{}: the prober wrote no report", p.host))?;
        reports.insert(p.host.clone(), r);
    }
    let source = format!("lab {lab}");
    let matrix = PingmeshMatrix::from_reports(&source, &spec, &hosts, &reports);
    matrix.write(&out)?;
    // The probers' own NICs: no flows (those of `lab run` are in its run directory's estats.json).
    let probes_only = Topology { traffic: Vec::new(), ..topology.clone() };
    let estats = Estats::build(&source, &probes_only, &reports, Some(&matrix));
    std::fs::write(out.join("estats.json"), serde_json::to_vec_pretty(&estats)?)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&matrix)?);
    } else {
        print!("{}", matrix.describe());
        println!("  wrote {}/pingmesh.json, pingmesh.svg, estats.json", out.display());
    }
    let unanswered: Vec<String> = matrix.unmeasured().map(|p| format!("{} -> {}", p.from, p.to)).collect();
    if !unanswered.is_empty() {
        eprintln!("pingmesh: no answer on {}", unanswered.join(", "));
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}
