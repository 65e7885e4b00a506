//! The switchd launcher, [`lossless_dataplane::launch`] (re-exported here: the labs of `swctl` use it too),
//! and [`switchd_binary`], which finds (and builds) this workspace's switchd for a test.

pub use lossless_dataplane::launch::*;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The switchd binary of this workspace: `$LOSSLESS_SWITCHD` if set, else `target/<profile>/switchd` next to
/// the running test, brought up to date once per process with `cargo build` in the profile the test was
/// built in. Tests of `lossless-dataplane` itself use `env!("CARGO_BIN_EXE_switchd")` instead.
pub fn switchd_binary() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        if let Some(p) = std::env::var_os("LOSSLESS_SWITCHD") {
            return PathBuf::from(p);
        }
        // target/<profile>/deps/<test binary>
        let exe = std::env::current_exe().expect("current_exe");
        let profile_dir =
            exe.parent().and_then(Path::parent).expect("the test runs from target/<profile>/deps");
        let release = profile_dir.file_name().is_some_and(|n| n == "release");
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut build = Command::new(cargo);
        build.args(["build", "--quiet", "-p", "lossless-dataplane", "--bin", "switchd"]);
        if release {
            build.arg("--release");
        }
        build.current_dir(env!("CARGO_MANIFEST_DIR"));
        let status = build.status().expect("running cargo build for switchd");
        assert!(status.success(), "building switchd failed");
        profile_dir.join("switchd")
    })
    .clone()
}
