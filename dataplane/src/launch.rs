//! The launchers of the two binaries: start one (inside a network namespace or not), wait until it is
//! ready, stop and reap it on drop — or detach it to outlive the launching process. switchd is ready when
//! its gRPC socket answers ([`SwitchdCommand`], below); rocehost when it wrote its ready file
//! ([`RocehostCommand`], in its own module). Both start in a namespace through
//! [`crate::io::netns::exec_in`].
//!
//! ```text
//! SwitchdCommand::new(binary)          what to start: namespace, config, ports, endpoint, extra args, log
//!     .spawn()?          -> Switchd    the process runs; nothing waited for yet
//! switchd.ready().await? -> Client     switchd answers a GetCounters call on its endpoint
//! drop(switchd)                        SIGTERM, SIGKILL after the stop timeout, reaped, files removed
//! switchd.detach()       -> Child      or: it keeps running, the caller owns the process
//! ```
//!
//! [`Switchd::ready`] does not sleep a fixed time: it probes the endpoint, and between probes awaits whatever
//! may change the answer — the process exiting (a pidfd), the socket appearing in its directory (inotify) —
//! with a short back-off as the fallback (TCP endpoints, the gap between a socket's creation and its server
//! running). It fails at once when switchd exits, and after the start timeout (20 s by default) otherwise;
//! both errors carry the end of switchd's log.
//!
//! By default the log (stdout and stderr) is captured in a temporary file: failure messages quote its end,
//! and a [`Switchd`] dropped while a thread panics prints it whole.
//!
//! Tests, the PTF harness and the benchmark use it through `lossless-testkit` (which re-exports it and adds
//! a way to find the workspace's switchd binary); `swctl lab` uses it directly.

mod rocehost;
mod watch;

pub use self::rocehost::{Rocehost, RocehostCommand};
use self::watch::Watch;
use crate::io::netns::{Netns, exec_in, unique_name};
use crate::server;
use anyhow::bail;
use lossless_proto::v1 as pb;
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

/// A gRPC client of `lossless.v1.Switch`.
pub type Client = pb::switch_client::SwitchClient<tonic::transport::Channel>;

/// How long [`Switchd::ready`] waits by default.
pub const START_TIMEOUT: Duration = Duration::from_secs(20);
/// How long a stop waits after SIGTERM before SIGKILL, by default.
pub const STOP_TIMEOUT: Duration = Duration::from_secs(10);
/// How long one readiness probe (connect, then GetCounters) may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);
/// Lines of the log quoted in error messages.
const LOG_TAIL_LINES: usize = 20;

/// A client of `lossless.v1.Switch` at `unix:PATH` or `tcp:HOST:PORT` (see [`server::connect`]), for
/// endpoints not started through [`SwitchdCommand`]. It does not wait: use [`Switchd::ready`] for a switchd still starting.
pub async fn connect(endpoint: &str) -> anyhow::Result<Client> {
    server::connect(endpoint).await
}

/// Where switchd's stdout and stderr go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Log {
    /// A temporary file, removed on drop: quoted in error messages ([`Switchd::log`]), printed whole when the
    /// [`Switchd`] is dropped during a panic. The default.
    Capture,
    /// This process's stdout and stderr.
    Inherit,
    /// This file (created or truncated), kept; quoted in error messages like a captured log.
    File(PathBuf),
}

/// What switchd to start, and how: a builder (see the [module documentation](self)).
#[derive(Debug, Clone)]
pub struct SwitchdCommand {
    binary: PathBuf,
    netns: Option<String>,
    name: Option<String>,
    label: String,
    config: Option<PathBuf>,
    config_text: Option<(String, String)>,
    ports: Vec<(String, String)>,
    grpc: Option<String>,
    args: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
    log: Log,
    process_group: bool,
    start_timeout: Duration,
    stop_timeout: Duration,
}

impl SwitchdCommand {
    /// switchd from `binary` (e.g. `env!("CARGO_BIN_EXE_switchd")` or `lossless_testkit::switchd_binary()`),
    /// in this process's namespace, on a fresh Unix socket in the temporary directory, log captured.
    pub fn new(binary: impl Into<PathBuf>) -> SwitchdCommand {
        SwitchdCommand {
            binary: binary.into(),
            netns: None,
            name: None,
            label: "switchd".to_owned(),
            config: None,
            config_text: None,
            ports: Vec::new(),
            grpc: None,
            args: Vec::new(),
            env: Vec::new(),
            log: Log::Capture,
            process_group: false,
            start_timeout: START_TIMEOUT,
            stop_timeout: STOP_TIMEOUT,
        }
    }

    /// Runs switchd inside `ns` (`ip netns exec`, which execs switchd in place: the child is switchd).
    pub fn netns(self, ns: &Netns) -> SwitchdCommand {
        self.netns_named(ns.name())
    }

    /// Runs switchd inside the namespace called `name` (one this process does not own, e.g. a lab's).
    pub fn netns_named(mut self, name: &str) -> SwitchdCommand {
        self.netns = Some(name.to_owned());
        self
    }

    /// `--name NAME`.
    pub fn name(mut self, name: &str) -> SwitchdCommand {
        self.name = Some(name.to_owned());
        self
    }

    /// What error messages call this switchd (default `switchd`; e.g. `switchd of sw1`).
    pub fn label(mut self, label: &str) -> SwitchdCommand {
        self.label = label.to_owned();
        self
    }

    /// `--config PATH`, a file the caller owns.
    pub fn config(mut self, path: impl Into<PathBuf>) -> SwitchdCommand {
        self.config = Some(path.into());
        self.config_text = None;
        self
    }

    /// `--config` with `text`, written to a temporary file (removed on drop) whose name ends in
    /// `file_name` (its extension tells switchd the format: `.yaml` or `.json`).
    pub fn config_text(mut self, file_name: &str, text: &str) -> SwitchdCommand {
        self.config_text = Some((file_name.to_owned(), text.to_owned()));
        self.config = None;
        self
    }

    /// `--port PORT=SPEC` (repeatable): switch port `PORT` (`Ethernet0`) on interface `SPEC` (`p0`,
    /// `tap:tp0`, `pnet:p0`).
    pub fn port(mut self, port: &str, spec: &str) -> SwitchdCommand {
        self.ports.push((port.to_owned(), spec.to_owned()));
        self
    }

    /// `--grpc ENDPOINT` (`unix:PATH` or `tcp:127.0.0.1:PORT`) instead of a fresh socket in the temporary
    /// directory. A Unix socket left behind (a killed switchd's) is removed on drop.
    pub fn grpc(mut self, endpoint: &str) -> SwitchdCommand {
        self.grpc = Some(endpoint.to_owned());
        self
    }

    /// One more switchd argument, after all others (e.g. `--busy-poll-us=1000`).
    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> SwitchdCommand {
        self.args.push(arg.as_ref().to_owned());
        self
    }

    /// More switchd arguments, after all others.
    pub fn args<I, S>(mut self, args: I) -> SwitchdCommand
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args.extend(args.into_iter().map(|a| a.as_ref().to_owned()));
        self
    }

    /// An environment variable of switchd (e.g. `RUST_LOG`).
    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> SwitchdCommand {
        self.env.push((key.as_ref().to_owned(), value.as_ref().to_owned()));
        self
    }

    /// Where its output goes (default [`Log::Capture`]).
    pub fn log(mut self, log: Log) -> SwitchdCommand {
        self.log = log;
        self
    }

    /// Starts switchd in a process group of its own, so a Ctrl-C at the terminal reaches only this process
    /// (which then stops switchd in order).
    pub fn own_process_group(mut self) -> SwitchdCommand {
        self.process_group = true;
        self
    }

    /// How long [`Switchd::ready`] waits (default [`START_TIMEOUT`]).
    pub fn start_timeout(mut self, timeout: Duration) -> SwitchdCommand {
        self.start_timeout = timeout;
        self
    }

    /// How long a stop waits after SIGTERM before SIGKILL (default [`STOP_TIMEOUT`]).
    pub fn stop_timeout(mut self, timeout: Duration) -> SwitchdCommand {
        self.stop_timeout = timeout;
        self
    }

    /// The endpoint switchd will serve on: the one given to [`SwitchdCommand::grpc`], else a fresh socket.
    fn endpoint(&self) -> String {
        self.grpc.clone().unwrap_or_else(|| {
            format!("unix:{}", std::env::temp_dir().join(format!("{}.sock", unique_name("swd"))).display())
        })
    }

    /// The command line, writing the configuration file if one is to be written (returned for removal).
    fn command(&self, endpoint: &str) -> io::Result<(Command, Option<PathBuf>)> {
        let mut written = None;
        let config = match (&self.config, &self.config_text) {
            (Some(path), _) => Some(path.clone()),
            (None, Some((file_name, text))) => {
                let path = std::env::temp_dir().join(format!("{}-{file_name}", unique_name("swcfg")));
                std::fs::write(&path, text)
                    .map_err(|e| io::Error::new(e.kind(), format!("writing {}: {e}", path.display())))?;
                written = Some(path.clone());
                Some(path)
            }
            (None, None) => None,
        };
        let mut command = program_in(self.netns.as_deref(), &self.binary);
        if let Some(name) = &self.name {
            command.args(["--name", name]);
        }
        if let Some(config) = config {
            command.arg("--config").arg(config);
        }
        for (port, spec) in &self.ports {
            command.arg("--port").arg(format!("{port}={spec}"));
        }
        command.args(["--grpc", endpoint]).args(&self.args);
        command.envs(self.env.iter().map(|(k, v)| (k, v)));
        if self.process_group {
            command.process_group(0);
        }
        Ok((command, written))
    }

    /// Starts switchd; it is not waited for (see [`Switchd::ready`]).
    pub fn spawn(self) -> io::Result<Switchd> {
        let endpoint = self.endpoint();
        let (mut command, config_file) = self.command(&endpoint)?;
        let cleanup = |config: &Option<PathBuf>| {
            if let Some(c) = config {
                let _ = std::fs::remove_file(c);
            }
        };
        let log_path = self.log.path("swlog");
        redirect(&mut command, log_path.as_deref(), None).inspect_err(|_| cleanup(&config_file))?;
        let child = command.spawn().map_err(|e| {
            cleanup(&config_file);
            if self.log == Log::Capture {
                cleanup(&log_path);
            }
            io::Error::new(e.kind(), format!("starting {}: {e}", self.binary.display()))
        })?;
        let socket = endpoint.strip_prefix("unix:").map(PathBuf::from);
        Ok(Switchd {
            child: Some(child),
            endpoint,
            label: self.label,
            socket,
            config_file,
            log: log_path,
            log_is_temporary: self.log == Log::Capture,
            start_timeout: self.start_timeout,
            stop_timeout: self.stop_timeout,
        })
    }

    /// Runs switchd to completion and returns its output (for start-up errors that must end the process);
    /// the configuration file written for it is removed.
    pub fn output(self) -> io::Result<Output> {
        let endpoint = self.endpoint();
        let (mut command, config_file) = self.command(&endpoint)?;
        let out = command.stdin(Stdio::null()).output();
        if let Some(c) = config_file {
            let _ = std::fs::remove_file(c);
        }
        out
    }
}

/// A running switchd started by [`SwitchdCommand::spawn`]. Dropped, it is stopped (SIGTERM, SIGKILL after
/// the stop timeout) and reaped, and the files made for it (configuration, socket, captured log) are removed.
#[derive(Debug)]
pub struct Switchd {
    /// None once stopped or detached.
    child: Option<Child>,
    endpoint: String,
    label: String,
    socket: Option<PathBuf>,
    config_file: Option<PathBuf>,
    log: Option<PathBuf>,
    log_is_temporary: bool,
    start_timeout: Duration,
    stop_timeout: Duration,
}

impl Switchd {
    /// Its gRPC endpoint (`unix:PATH` or `tcp:HOST:PORT`).
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// Its Unix socket, for a `unix:` endpoint.
    pub fn socket(&self) -> Option<&Path> {
        self.socket.as_deref()
    }

    /// Its process id (switchd's own, also inside a namespace); 0 once stopped or detached.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    /// Its exit status if it has exited (reaping it), `None` while it runs.
    pub fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        match self.child.as_mut() {
            Some(c) => c.try_wait(),
            None => Err(io::Error::other("switchd was already stopped or detached")),
        }
    }

    /// Waits until switchd answers a GetCounters call on its endpoint and returns that client. Fails when it
    /// exits first, or after the start timeout; the error quotes the end of its log. Cancel-safe: dropping
    /// the future leaves switchd running.
    pub async fn ready(&mut self) -> anyhow::Result<Client> {
        self.ready_unless(|| false).await
    }

    /// [`Switchd::ready`], giving up with an "interrupted" error as soon as `abort()` holds (checked at
    /// least every 100 ms), e.g. when a Ctrl-C handler set a flag.
    pub async fn ready_unless(&mut self, abort: impl Fn() -> bool) -> anyhow::Result<Client> {
        let deadline = Instant::now() + self.start_timeout;
        let pid = self.pid();
        let exited = Watch::exit_of(pid);
        let created = self.socket.as_deref().and_then(Watch::creation_of);
        let mut backoff = Duration::from_millis(5);
        loop {
            if abort() {
                bail!(
                    "interrupted while waiting for {} (pid {pid}) to answer on {}",
                    self.label,
                    self.endpoint
                );
            }
            if let Some(client) = probe(&self.endpoint).await {
                return Ok(client);
            }
            if let Some(status) = self.try_wait()? {
                bail!("{} exited during start-up ({status}){}", self.label, self.log_tail());
            }
            let now = Instant::now();
            if now >= deadline {
                bail!(
                    "{} (pid {pid}) did not answer on {} within {:?}{}",
                    self.label,
                    self.endpoint,
                    self.start_timeout,
                    self.log_tail()
                );
            }
            let wait = backoff.min(deadline - now);
            backoff = (backoff * 2).min(Duration::from_millis(100));
            tokio::select! {
                () = Watch::fired(exited.as_ref()) => {}
                () = Watch::fired(created.as_ref()) => {}
                () = tokio::time::sleep(wait) => {}
            }
        }
    }

    /// A further client on its endpoint (switchd must be ready).
    pub async fn client(&self) -> anyhow::Result<Client> {
        connect(&self.endpoint).await
    }

    /// Stops switchd: SIGTERM, then SIGKILL if it has not exited within the stop timeout; returns its exit
    /// status (as after SIGTERM when it stopped cleanly). Switchd's socket is left to switchd to remove.
    pub fn stop(&mut self) -> io::Result<ExitStatus> {
        let mut child =
            self.child.take().ok_or_else(|| io::Error::other("switchd was already stopped or detached"))?;
        stop_child(&mut child, self.stop_timeout)
    }

    /// Leaves switchd running past this value's drop and hands over the process (to be waited for or
    /// stopped by the caller); the files the launcher made stay too.
    pub fn detach(mut self) -> Child {
        self.config_file = None;
        self.socket = None;
        self.log_is_temporary = false;
        self.child.take().expect("switchd was already stopped or detached")
    }

    /// Its log so far (empty with [`Log::Inherit`]).
    pub fn log(&self) -> String {
        self.log.as_ref().and_then(|p| std::fs::read_to_string(p).ok()).unwrap_or_default()
    }

    /// The end of its log, as a suffix for an error message ("" with [`Log::Inherit`]).
    pub fn log_tail(&self) -> String {
        log_tail(self.log.as_deref())
    }
}

impl Drop for Switchd {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = stop_child(&mut child, self.stop_timeout);
        }
        if std::thread::panicking() && self.log_is_temporary {
            let log = self.log();
            if !log.is_empty() {
                eprintln!(
                    "---- {0} log ({1}) ----\n{log}---- end of {0} log ----",
                    self.label, self.endpoint
                );
            }
        }
        for file in [self.socket.take(), self.config_file.take()].into_iter().flatten() {
            let _ = std::fs::remove_file(file);
        }
        if self.log_is_temporary
            && let Some(log) = self.log.take()
        {
            let _ = std::fs::remove_file(log);
        }
    }
}

impl Log {
    /// The file the log goes to: a fresh temporary one named after `prefix` for [`Log::Capture`].
    fn path(&self, prefix: &str) -> Option<PathBuf> {
        match self {
            Log::Capture => Some(std::env::temp_dir().join(format!("{}.log", unique_name(prefix)))),
            Log::File(path) => Some(path.clone()),
            Log::Inherit => None,
        }
    }
}

/// `program` to run inside the namespace `netns` ([`exec_in`]), or in this process's namespace.
fn program_in(netns: Option<&str>, program: &Path) -> Command {
    match netns {
        Some(ns) => exec_in(ns, program),
        None => Command::new(program),
    }
}

/// Stdin from /dev/null; stdout and stderr to the log file `log` (created or truncated; inherited without
/// one), stdout to the file `stdout` instead when there is one.
fn redirect(command: &mut Command, log: Option<&Path>, stdout: Option<&Path>) -> io::Result<()> {
    let create = |path: &Path| {
        File::create(path).map_err(|e| io::Error::new(e.kind(), format!("creating {}: {e}", path.display())))
    };
    command.stdin(Stdio::null());
    match log {
        Some(path) => {
            let out = create(path)?;
            command.stderr(out.try_clone()?).stdout(out);
        }
        None => {
            command.stdout(Stdio::inherit()).stderr(Stdio::inherit());
        }
    }
    if let Some(path) = stdout {
        command.stdout(create(path)?);
    }
    Ok(())
}

/// The end of the log file `log`, as a suffix for an error message ("" without a log file).
fn log_tail(log: Option<&Path>) -> String {
    let Some(path) = log else { return String::new() };
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    let tail = lines[lines.len().saturating_sub(LOG_TAIL_LINES)..].join("\n    ");
    if tail.is_empty() {
        format!(" (log {} is empty)", path.display())
    } else {
        format!("; {}:\n    {tail}", path.display())
    }
}

/// SIGTERM (switchd stops cleanly, removing its socket), up to `timeout` for it to exit, then SIGKILL; reaped.
fn stop_child(child: &mut Child, timeout: Duration) -> io::Result<ExitStatus> {
    if let Some(status) = child.try_wait()? {
        return Ok(status);
    }
    signal(child.id(), libc::SIGTERM);
    let deadline = Instant::now() + timeout;
    let exited = Watch::exit_of(child.id());
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(status);
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        match &exited {
            Some(w) => w.wait_blocking(left),
            None => std::thread::sleep(left.min(Duration::from_millis(10))),
        }
    }
    let _ = child.kill();
    child.wait()
}

#[allow(unsafe_code)]
fn signal(pid: u32, signal: libc::c_int) {
    // SAFETY: kill has no memory preconditions; `pid` is a child of this process not yet reaped.
    unsafe { libc::kill(pid as libc::pid_t, signal) };
}

/// One readiness probe: a connection and a GetCounters answer, each within [`PROBE_TIMEOUT`].
async fn probe(endpoint: &str) -> Option<Client> {
    let mut client = tokio::time::timeout(PROBE_TIMEOUT, connect(endpoint)).await.ok()?.ok()?;
    tokio::time::timeout(PROBE_TIMEOUT, client.get_counters(pb::GetCountersRequest {})).await.ok()?.ok()?;
    Some(client)
}
