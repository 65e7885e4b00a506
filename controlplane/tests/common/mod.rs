//! What the controlplane tests share: swctl, the binaries next to it, a test's own lab run directory
//! (removing whatever a failed test left), and output helpers.

#![allow(dead_code)] // each test binary uses its own part

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Once, OnceLock};

/// switchd and rocehost next to swctl (where `swctl lab` looks for them), up to date: as a workspace build
/// left them, else built (lossless_testkit::dataplane_binaries).
pub fn binaries() {
    static BUILT: OnceLock<()> = OnceLock::new();
    BUILT.get_or_init(|| {
        let dir = lossless_testkit::dataplane_binaries(&["switchd", "rocehost"]);
        let swctl = PathBuf::from(env!("CARGO_BIN_EXE_swctl"));
        assert_eq!(
            swctl.parent(),
            Some(dir.as_path()),
            "swctl and the test binaries in one target directory"
        );
    });
}

/// A test's own run directory (`LOSSLESS_LAB_DIR`) and scratch files; dropping it takes down every lab
/// still recorded there and removes the directory.
pub struct Env {
    pub base: PathBuf,
    pub tmp: PathBuf,
}

impl Env {
    /// `tag` names the scratch directory (`ll-<tag>-<pid><n>` under the temp directory).
    /// The first in a test process first takes down what killed test processes left ([`sweep_stale`]).
    pub fn new(tag: &str) -> Env {
        binaries();
        static SWEEP: Once = Once::new();
        SWEEP.call_once(sweep_stale);
        static N: AtomicU32 = AtomicU32::new(0);
        let id = format!("{:x}{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed));
        let tmp = std::env::temp_dir().join(format!("ll-{tag}-{id}"));
        std::fs::create_dir_all(&tmp).unwrap();
        lossless_testkit::netns::record_owner(&tmp.join(OWNER_FILE)).unwrap();
        Env { base: tmp.join("labs"), tmp }
    }

    /// swctl with this run directory and no lab/switch from the caller's environment.
    pub fn command(&self, args: &[&str]) -> Command {
        swctl_in(&self.base, args)
    }

    pub fn swctl(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }
}

impl Drop for Env {
    fn drop(&mut self) {
        // Whatever a failed test left behind.
        take_down_labs(&self.base);
        let _ = std::fs::remove_dir_all(&self.tmp);
    }
}

/// The file in an [`Env`]'s scratch directory that records the test process owning it.
pub const OWNER_FILE: &str = "owner";

/// Runs swctl with `args` as the caller's environment leaves it (for commands that use no lab).
pub fn swctl(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_swctl")).args(args).output().unwrap()
}

/// swctl with run directory `base` and no lab/switch from the caller's environment.
fn swctl_in(base: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_swctl"));
    c.args(args).env("LOSSLESS_LAB_DIR", base).env_remove("LOSSLESS_LAB").env_remove("LOSSLESS_SWITCH");
    c
}

/// `swctl lab down --force` for every lab recorded in run directory `base`.
fn take_down_labs(base: &Path) {
    if let Ok(entries) = std::fs::read_dir(base) {
        for e in entries.flatten() {
            let _ = swctl_in(base, &["lab", "down", "--force", &e.file_name().to_string_lossy()]).output();
        }
    }
}

/// A test process killed outright (nextest's timeout sends SIGKILL) never drops its [`Env`], so its labs
/// (namespaces, switchd and rocehost processes) and scratch directory stay. This takes down the labs of
/// every scratch directory whose recorded owner is gone, and removes the directory; directories without an
/// owner record, and those of running tests, are left alone.
pub fn sweep_stale() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else { return };
    for dir in entries.flatten().map(|e| e.path()) {
        if !dir.file_name().is_some_and(|n| n.to_string_lossy().starts_with("ll-")) {
            continue;
        }
        if let Some(owner) = lossless_testkit::netns::owner_gone(&dir.join(OWNER_FILE)) {
            eprintln!("taking down what test process {} left in {}", owner.pid, dir.display());
            take_down_labs(&dir.join("labs"));
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
}

/// A command's exit code and output, for failure messages.
pub fn text(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The namespaces of lab `lab` that exist now.
pub fn namespaces_of(lab: &str) -> Vec<String> {
    let out = Command::new("ip").args(["netns", "list"]).output().unwrap();
    let prefix = format!("ll-{lab}-");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with(&prefix))
        .map(str::to_owned)
        .collect()
}
