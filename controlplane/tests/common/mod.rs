//! What the lab and scenario tests share: the binaries next to swctl, a test's own lab run directory
//! (removing whatever a failed test left), and output helpers.

#![allow(dead_code)] // each test binary uses its own part

use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};

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
    pub fn new(tag: &str) -> Env {
        binaries();
        static N: AtomicU32 = AtomicU32::new(0);
        let id = format!("{:x}{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed));
        let tmp = std::env::temp_dir().join(format!("ll-{tag}-{id}"));
        std::fs::create_dir_all(&tmp).unwrap();
        Env { base: tmp.join("labs"), tmp }
    }

    /// swctl with this run directory and no lab/switch from the caller's environment.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_swctl"));
        c.args(args)
            .env("LOSSLESS_LAB_DIR", &self.base)
            .env_remove("LOSSLESS_LAB")
            .env_remove("LOSSLESS_SWITCH");
        c
    }

    pub fn swctl(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }
}

impl Drop for Env {
    fn drop(&mut self) {
        // Whatever a failed test left behind.
        if let Ok(entries) = std::fs::read_dir(&self.base) {
            for e in entries.flatten() {
                let _ = self.swctl(&["lab", "down", "--force", &e.file_name().to_string_lossy()]);
            }
        }
        let _ = std::fs::remove_dir_all(&self.tmp);
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
