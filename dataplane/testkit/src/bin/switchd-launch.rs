//! `switchd-launch`: the switchd launcher ([`lossless_testkit::SwitchdCommand`]) for shell scripts.
//!
//! Starts switchd (in a network namespace when asked), waits until it answers on its gRPC endpoint, leaves
//! it running and prints its process id on stdout; exit 0. When switchd exits during start-up or does not
//! answer in time, it is stopped, the error (with the end of its log) goes to stderr, and the exit status
//! is 1; 2 for a bad command line. The PTF scripts (`ptf-tests/python/run.sh`, `sonic-mgmt.sh`) start
//! switchd with it, so that scripts, tests, labs and the benchmark share one launcher.
//!
//! ```text
//! switchd-launch [--netns NS] [--log FILE] [--start-timeout-s S] --grpc ENDPOINT SWITCHD [ARGS...]
//! ```

use clap::Parser;
use lossless_testkit::{Log, SwitchdCommand};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Start switchd, wait until its gRPC endpoint answers, leave it running and print its pid.
#[derive(Debug, Parser)]
#[command(name = "switchd-launch", version)]
struct Args {
    /// Network namespace to run switchd in (`ip netns exec NS`).
    #[arg(long)]
    netns: Option<String>,
    /// File for switchd's stdout and stderr (created or truncated; kept). Default: this process's.
    #[arg(long)]
    log: Option<PathBuf>,
    /// gRPC endpoint switchd serves on (`unix:PATH` or `tcp:HOST:PORT`); passed to it as `--grpc`.
    #[arg(long)]
    grpc: String,
    /// Seconds to wait for the endpoint to answer.
    #[arg(long, default_value_t = 30.0)]
    start_timeout_s: f64,
    /// The switchd binary.
    switchd: PathBuf,
    /// switchd's other arguments (`--name`, `--config`, `--port`, ...).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    args: Vec<String>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let timeout = match Duration::try_from_secs_f64(args.start_timeout_s) {
        Ok(t) if !t.is_zero() => t,
        _ => {
            eprintln!("switchd-launch: --start-timeout-s must be a positive number of seconds");
            return ExitCode::from(2);
        }
    };
    if args.args.iter().any(|a| a == "--grpc" || a.starts_with("--grpc=")) {
        eprintln!(
            "switchd-launch: give the endpoint as switchd-launch's own --grpc, not among switchd's arguments"
        );
        return ExitCode::from(2);
    }
    let mut command = SwitchdCommand::new(&args.switchd)
        .grpc(&args.grpc)
        .args(&args.args)
        .start_timeout(timeout)
        .log(args.log.map_or(Log::Inherit, Log::File));
    if let Some(ns) = &args.netns {
        command = command.netns_named(ns);
    }
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("switchd-launch: {e}");
            return ExitCode::from(1);
        }
    };
    let mut switchd = match command.spawn() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("switchd-launch: {e}");
            return ExitCode::from(1);
        }
    };
    // On failure `switchd` is dropped here: stopped and reaped.
    if let Err(e) = runtime.block_on(switchd.ready()) {
        eprintln!("switchd-launch: {e:#}");
        return ExitCode::from(1);
    }
    // This process exits next: switchd, orphaned, is reaped by init (or the caller's subreaper), and the
    // script that reads the pid stops it.
    #[expect(clippy::zombie_processes, reason = "switchd outlives the launcher on purpose")]
    let child = switchd.detach();
    println!("{}", child.id());
    ExitCode::SUCCESS
}
