//! The rocehost launcher, [`RocehostCommand`] and the [`Rocehost`] it starts (re-exported by [`super`]).

use super::watch::Watch;
use super::{Log, START_TIMEOUT, STOP_TIMEOUT, log_tail, program_in, redirect, stop_child};
use crate::io::netns::{Netns, unique_name};
use crate::rocehost::report::{Ready, Report};
use anyhow::{Context as _, bail};
use std::ffi::{OsStr, OsString};
use std::io;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output};
use std::time::{Duration, Instant};

/// What rocehost to start, and how: a builder. The rocehost launcher starts the real binary (inside a
/// network namespace or not), waits for its ready file, stops and reaps it on drop — or detaches it to
/// outlive the launching process.
///
/// ```text
/// RocehostCommand::new(binary)           what to start: namespace, arguments, ready file, report, log
///     .spawn()?            -> Rocehost   the process runs; nothing waited for yet
/// rocehost.ready()?        -> Ready      its ready file (written once its interface is open), typed
/// rocehost.wait_timeout(t)?              or: it runs to its end (--duration, finished flows)
/// rocehost.report()?       -> Report     its --report file, typed
/// drop(rocehost)                         SIGTERM, SIGKILL after the stop timeout, reaped, own files removed
/// ```
///
/// Like [`Switchd::ready`](super::Switchd::ready), [`Rocehost::ready`] does not sleep a fixed time: it
/// waits for the ready file to appear in its directory (inotify) or the process to exit (a pidfd), with a
/// short back-off as the fallback. It fails at once when rocehost exits first, and after the start timeout
/// otherwise; both errors carry the end of its log. It blocks: every caller (the labs, the soak, the
/// tests) waits from a thread.
#[derive(Debug, Clone)]
pub struct RocehostCommand {
    binary: PathBuf,
    netns: Option<String>,
    label: String,
    args: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
    ready_file: Option<PathBuf>,
    report: Option<PathBuf>,
    stdout: Option<PathBuf>,
    log: Log,
    process_group: bool,
    start_timeout: Duration,
    stop_timeout: Duration,
}

impl RocehostCommand {
    /// rocehost from `binary` (e.g. `env!("CARGO_BIN_EXE_rocehost")`), in this process's namespace, with a
    /// ready file in the temporary directory, log captured.
    pub fn new(binary: impl Into<PathBuf>) -> RocehostCommand {
        RocehostCommand {
            binary: binary.into(),
            netns: None,
            label: "rocehost".to_owned(),
            args: Vec::new(),
            env: Vec::new(),
            ready_file: None,
            report: None,
            stdout: None,
            log: Log::Capture,
            process_group: false,
            start_timeout: START_TIMEOUT,
            stop_timeout: STOP_TIMEOUT,
        }
    }

    /// Runs rocehost inside `ns` (`ip netns exec`, which execs rocehost in place: the child is rocehost).
    pub fn netns(self, ns: &Netns) -> RocehostCommand {
        self.netns_named(ns.name())
    }

    /// Runs rocehost inside the namespace called `name` (one this process does not own, e.g. a lab's).
    pub fn netns_named(mut self, name: &str) -> RocehostCommand {
        self.netns = Some(name.to_owned());
        self
    }

    /// What error messages call this rocehost (default `rocehost`; e.g. `rocehost of h1`).
    pub fn label(mut self, label: &str) -> RocehostCommand {
        self.label = label.to_owned();
        self
    }

    /// One more rocehost argument (`--interface`, `--flow`, ...), before the files the launcher passes.
    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> RocehostCommand {
        self.args.push(arg.as_ref().to_owned());
        self
    }

    /// More rocehost arguments.
    pub fn args<I, S>(mut self, args: I) -> RocehostCommand
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args.extend(args.into_iter().map(|a| a.as_ref().to_owned()));
        self
    }

    /// An environment variable of rocehost (e.g. `NO_COLOR`).
    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> RocehostCommand {
        self.env.push((key.as_ref().to_owned(), value.as_ref().to_owned()));
        self
    }

    /// `--ready-file PATH`, a file the caller owns, instead of a temporary one (removed on drop). A file left
    /// there by an earlier run is removed at the start, so it cannot pass for this run's.
    pub fn ready_file(mut self, path: impl Into<PathBuf>) -> RocehostCommand {
        self.ready_file = Some(path.into());
        self
    }

    /// `--report PATH`: rocehost writes its report there when it stops ([`Rocehost::report`] reads it).
    pub fn report(mut self, path: impl Into<PathBuf>) -> RocehostCommand {
        self.report = Some(path.into());
        self
    }

    /// Its stdout to the file `path` (created or truncated) instead of the log, which then holds stderr
    /// only: for `--json`, whose report is stdout.
    pub fn stdout(mut self, path: impl Into<PathBuf>) -> RocehostCommand {
        self.stdout = Some(path.into());
        self
    }

    /// Where its output goes (default [`Log::Capture`]).
    pub fn log(mut self, log: Log) -> RocehostCommand {
        self.log = log;
        self
    }

    /// Starts rocehost in a process group of its own, so a Ctrl-C at the terminal reaches only this process
    /// (which then stops rocehost in order).
    pub fn own_process_group(mut self) -> RocehostCommand {
        self.process_group = true;
        self
    }

    /// How long [`Rocehost::ready`] waits (default [`START_TIMEOUT`]).
    pub fn start_timeout(mut self, timeout: Duration) -> RocehostCommand {
        self.start_timeout = timeout;
        self
    }

    /// How long a stop waits after SIGTERM before SIGKILL (default [`STOP_TIMEOUT`]).
    pub fn stop_timeout(mut self, timeout: Duration) -> RocehostCommand {
        self.stop_timeout = timeout;
        self
    }

    /// The ready file: the one given to [`RocehostCommand::ready_file`], else a fresh temporary one.
    fn ready_path(&self) -> (PathBuf, bool) {
        match &self.ready_file {
            Some(path) => (path.clone(), false),
            None => (std::env::temp_dir().join(format!("{}.ready", unique_name("rhready"))), true),
        }
    }

    /// The program and arguments rocehost runs with (not the `ip netns exec` around it), as a lab's state
    /// file records them; `ready_file` is the `--ready-file` to pass.
    fn argv(&self, ready_file: &Path) -> Vec<OsString> {
        let mut argv = vec![self.binary.clone().into_os_string()];
        argv.extend(self.args.iter().cloned());
        argv.extend(["--ready-file".into(), ready_file.as_os_str().to_owned()]);
        if let Some(report) = &self.report {
            argv.extend(["--report".into(), report.as_os_str().to_owned()]);
        }
        argv
    }

    /// The command line [`RocehostCommand::spawn`] runs (without `ip netns exec`), as text, for a record of
    /// what was started (`swctl lab`'s state file). With a temporary ready file, the name differs from the
    /// one the spawn picks.
    pub fn command_line(&self) -> Vec<String> {
        self.argv(&self.ready_path().0).iter().map(|a| a.to_string_lossy().into_owned()).collect()
    }

    fn command(&self, argv: &[OsString]) -> Command {
        let mut command = program_in(self.netns.as_deref(), &self.binary);
        command.args(&argv[1..]);
        command.envs(self.env.iter().map(|(k, v)| (k, v)));
        if self.process_group {
            command.process_group(0);
        }
        command
    }

    /// Starts rocehost; it is not waited for (see [`Rocehost::ready`]).
    pub fn spawn(self) -> io::Result<Rocehost> {
        let (ready_file, ready_is_temporary) = self.ready_path();
        match std::fs::remove_file(&ready_file) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => {
                return Err(io::Error::new(e.kind(), format!("removing {}: {e}", ready_file.display())));
            }
            _ => {}
        }
        let mut command = self.command(&self.argv(&ready_file));
        let log = self.log.path("rhlog");
        let log_is_temporary = self.log == Log::Capture;
        let spawned = redirect(&mut command, log.as_deref(), self.stdout.as_deref())
            .and_then(|()| command.spawn())
            .map_err(|e| io::Error::new(e.kind(), format!("starting {}: {e}", self.binary.display())));
        let child = match spawned {
            Ok(child) => child,
            Err(e) => {
                if let (true, Some(log)) = (log_is_temporary, &log) {
                    let _ = std::fs::remove_file(log);
                }
                return Err(e);
            }
        };
        Ok(Rocehost {
            child: Some(child),
            label: self.label,
            ready_file,
            ready_is_temporary,
            report: self.report,
            stdout: self.stdout,
            log,
            log_is_temporary,
            start_timeout: self.start_timeout,
            stop_timeout: self.stop_timeout,
        })
    }

    /// Runs rocehost to completion and returns its output (for start-up errors: bad arguments, a missing
    /// interface).
    pub fn output(self) -> io::Result<Output> {
        let (ready_file, ready_is_temporary) = self.ready_path();
        let out = self.command(&self.argv(&ready_file)).stdin(std::process::Stdio::null()).output();
        if ready_is_temporary {
            let _ = std::fs::remove_file(&ready_file);
        }
        out
    }
}

/// A running rocehost started by [`RocehostCommand::spawn`] (see [`RocehostCommand`]). Dropped, it is stopped (SIGTERM, SIGKILL after
/// the stop timeout) and reaped, and the files the launcher made (temporary ready file, captured log) are
/// removed; the caller's files (ready file, report, stdout, log file) stay.
#[derive(Debug)]
pub struct Rocehost {
    /// None once stopped or detached.
    child: Option<Child>,
    label: String,
    ready_file: PathBuf,
    ready_is_temporary: bool,
    report: Option<PathBuf>,
    stdout: Option<PathBuf>,
    log: Option<PathBuf>,
    log_is_temporary: bool,
    start_timeout: Duration,
    stop_timeout: Duration,
}

impl Rocehost {
    /// What error messages call it.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// Its process id (rocehost's own, also inside a namespace); 0 once stopped or detached.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    /// Its `--ready-file`.
    pub fn ready_file(&self) -> &Path {
        &self.ready_file
    }

    /// Its exit status if it has exited (reaping it), `None` while it runs.
    pub fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        match self.child.as_mut() {
            Some(c) => c.try_wait(),
            None => Err(io::Error::other(format!("{} was already stopped or detached", self.label))),
        }
    }

    /// Waits up to `timeout` for it to exit by itself: its status, `None` while it still runs.
    pub fn wait_timeout(&mut self, timeout: Duration) -> io::Result<Option<ExitStatus>> {
        let deadline = Instant::now() + timeout;
        let exited = Watch::exit_of(self.pid());
        loop {
            if let Some(status) = self.try_wait()? {
                return Ok(Some(status));
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(None);
            }
            Watch::wait_any_blocking(&[exited.as_ref()], left.min(Duration::from_millis(100)));
        }
    }

    /// Waits until rocehost wrote its ready file and returns it. Fails when it exits first, or after the
    /// start timeout; the error quotes the end of its log.
    pub fn ready(&mut self) -> anyhow::Result<Ready> {
        self.ready_unless(|| false)
    }

    /// [`Rocehost::ready`], giving up with an "interrupted" error as soon as `abort()` holds (checked at
    /// least every 100 ms), e.g. when a Ctrl-C handler set a flag.
    pub fn ready_unless(&mut self, abort: impl Fn() -> bool) -> anyhow::Result<Ready> {
        let deadline = Instant::now() + self.start_timeout;
        let pid = self.pid();
        let exited = Watch::exit_of(pid);
        // Written through a temporary file and a rename: it appears whole, never half written.
        let created = Watch::creation_of(&self.ready_file);
        let mut backoff = Duration::from_millis(5);
        loop {
            if abort() {
                bail!("interrupted while waiting for {} (pid {pid}) to be ready", self.label);
            }
            if self.ready_file.exists() {
                return Ready::load(&self.ready_file).with_context(|| format!("{} (pid {pid})", self.label));
            }
            if let Some(status) = self.try_wait()? {
                bail!("{} exited during start-up ({status}){}", self.label, self.log_tail());
            }
            let now = Instant::now();
            if now >= deadline {
                bail!(
                    "{} (pid {pid}) did not write {} within {:?}{}",
                    self.label,
                    self.ready_file.display(),
                    self.start_timeout,
                    self.log_tail()
                );
            }
            let wait = backoff.min(deadline - now);
            backoff = (backoff * 2).min(Duration::from_millis(100));
            Watch::wait_any_blocking(&[exited.as_ref(), created.as_ref()], wait);
        }
    }

    /// Its `--report`, typed: what it wrote when it stopped.
    pub fn report(&self) -> anyhow::Result<Report> {
        let Some(path) = &self.report else { bail!("{} was started without --report", self.label) };
        Report::load(path).with_context(|| format!("the report of {}", self.label))
    }

    /// Its stdout so far, when it went to a file of its own ([`RocehostCommand::stdout`]); else its log.
    pub fn stdout(&self) -> String {
        match &self.stdout {
            Some(path) => std::fs::read_to_string(path).unwrap_or_default(),
            None => self.log(),
        }
    }

    /// Stops rocehost: SIGTERM (it writes its report and exits), then SIGKILL if it has not exited within
    /// the stop timeout; returns its exit status.
    pub fn stop(&mut self) -> io::Result<ExitStatus> {
        let mut child = self
            .child
            .take()
            .ok_or_else(|| io::Error::other(format!("{} was already stopped or detached", self.label)))?;
        stop_child(&mut child, self.stop_timeout)
    }

    /// Leaves rocehost running past this value's drop and hands over the process (to be waited for or
    /// stopped by the caller); the files the launcher made stay too.
    pub fn detach(mut self) -> Child {
        self.ready_is_temporary = false;
        self.log_is_temporary = false;
        self.child.take().expect("rocehost was already stopped or detached")
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

impl Drop for Rocehost {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = stop_child(&mut child, self.stop_timeout);
        }
        if std::thread::panicking() && self.log_is_temporary {
            let log = self.log();
            if !log.is_empty() {
                eprintln!("---- {0} log ----\n{log}---- end of {0} log ----", self.label);
            }
        }
        if self.ready_is_temporary {
            let _ = std::fs::remove_file(&self.ready_file);
        }
        if self.log_is_temporary
            && let Some(log) = self.log.take()
        {
            let _ = std::fs::remove_file(log);
        }
    }
}
