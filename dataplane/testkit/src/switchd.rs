//! The switchd launcher, [`lossless_dataplane::launch`] (re-exported here: the labs of `swctl` use it too),
//! and [`switchd_binary`] and [`dataplane_binaries`], which find this workspace's switchd (and rocehost) for a
//! test.

pub use lossless_dataplane::launch::*;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};
use std::time::SystemTime;

/// The switchd binary of this workspace, for tests of other packages than `lossless-dataplane` (whose own
/// tests use `env!("CARGO_BIN_EXE_switchd")`): `$LOSSLESS_SWITCHD` if set (scripts/test.sh sets it to the
/// binary its one workspace build made), else `switchd` of [`dataplane_binaries`].
pub fn switchd_binary() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| match std::env::var_os("LOSSLESS_SWITCHD") {
        Some(p) => PathBuf::from(p),
        None => dataplane_binaries(&["switchd"]).join("switchd"),
    })
    .clone()
}

/// The running test's profile directory (`target/<profile>`, where cargo puts the workspace's binaries), with
/// the `lossless-dataplane` binaries `names` (`switchd`, `rocehost`) in it up to date:
///
/// 1. used as they are when each is newer than every source file its dep-info (`NAME.d`) lists: a
///    workspace test build (`cargo nextest run --workspace`, `cargo test --workspace`) leaves them so;
/// 2. else built with `cargo build -p lossless-dataplane --bin NAME...` in the test's profile.
///
/// Step 2 is the slow one: that build resolves features for `lossless-dataplane` alone, which differ from a
/// workspace build's, so cargo rebuilds ring, rustls, tonic and the workspace's crates, and the next
/// workspace build rebuilds them back (docs/testing.md). Step 1 avoids it whenever the binaries are there.
pub fn dataplane_binaries(names: &[&str]) -> PathBuf {
    // target/<profile>/deps/<test binary>
    let exe = std::env::current_exe().expect("current_exe");
    let profile_dir = exe.parent().and_then(Path::parent).expect("the test runs from target/<profile>/deps");
    let fresh = || names.iter().all(|n| up_to_date(&profile_dir.join(n)));
    if fresh() {
        return profile_dir.to_owned();
    }
    // One build at a time in this process; the one that waited finds the binaries built.
    static BUILD: Mutex<()> = Mutex::new(());
    let _guard = BUILD.lock().unwrap_or_else(|e| e.into_inner());
    if fresh() {
        return profile_dir.to_owned();
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut build = Command::new(cargo);
    build.args(["build", "--quiet", "-p", "lossless-dataplane"]);
    for name in names {
        build.args(["--bin", name]);
    }
    if profile_dir.file_name().is_some_and(|n| n == "release") {
        build.arg("--release");
    }
    build.current_dir(env!("CARGO_MANIFEST_DIR"));
    let status = build.status().expect("running cargo build");
    assert!(status.success(), "building {names:?} failed");
    profile_dir.to_owned()
}

/// Whether `binary` exists and is at least as new as every file its cargo dep-info (`binary` + `.d`, a
/// Makefile rule `binary: source source ...`) names; false when either is missing or unreadable.
fn up_to_date(binary: &Path) -> bool {
    let modified = |p: &Path| p.metadata().and_then(|m| m.modified()).ok();
    let (Some(built), Ok(dep_info)) = (modified(binary), std::fs::read_to_string(binary.with_extension("d")))
    else {
        return false;
    };
    // Relative paths (cargo's `build.dep-info-basedir`) are relative to the workspace root.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    sources(&dep_info).is_some_and(|sources| {
        sources.iter().all(|s| modified(&root.join(s)).is_some_and(|t: SystemTime| t <= built))
    })
}

/// The prerequisites of the first rule of a Makefile-style dep-info file (a space inside a path is `\ `).
fn sources(dep_info: &str) -> Option<Vec<PathBuf>> {
    let rule = dep_info.lines().next()?;
    let (_, prerequisites) = rule.split_once(": ")?;
    let mut paths = Vec::new();
    let mut current = String::new();
    let mut chars = prerequisites.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => current.extend(chars.next()),
            ' ' if !current.is_empty() => paths.push(PathBuf::from(std::mem::take(&mut current))),
            ' ' => {}
            c => current.push(c),
        }
    }
    if !current.is_empty() {
        paths.push(PathBuf::from(current));
    }
    (!paths.is_empty()).then_some(paths)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dep_info_prerequisites_are_read_with_escaped_spaces() {
        let dep_info = "/t/debug/switchd: /w/src/a.rs /w/my\\ dir/b.rs rel/c.rs\n\n/w/src/a.rs:\n";
        assert_eq!(
            sources(dep_info).unwrap(),
            [PathBuf::from("/w/src/a.rs"), PathBuf::from("/w/my dir/b.rs"), PathBuf::from("rel/c.rs")]
        );
        assert_eq!(sources("/t/debug/switchd:\n"), None);
    }

    #[test]
    fn a_binary_older_than_a_source_is_not_up_to_date() {
        let dir = std::env::temp_dir().join(crate::unique_name("tkbin"));
        std::fs::create_dir_all(&dir).unwrap();
        let (binary, source) = (dir.join("switchd"), dir.join("lib.rs"));
        std::fs::write(&source, "").unwrap();
        std::fs::write(&binary, "").unwrap();
        std::fs::write(dir.join("switchd.d"), format!("{}: {}\n", binary.display(), source.display()))
            .unwrap();
        let set_mtime = |p: &Path, secs: u64| {
            let t = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(secs);
            std::fs::File::options().write(true).open(p).unwrap().set_modified(t).unwrap();
        };
        set_mtime(&source, 1_000);
        set_mtime(&binary, 2_000);
        assert!(up_to_date(&binary));
        set_mtime(&source, 3_000);
        assert!(!up_to_date(&binary), "a source edited after the build");
        std::fs::remove_file(&source).unwrap();
        assert!(!up_to_date(&binary), "a source that is gone");
        assert!(!up_to_date(&dir.join("missing")), "no binary");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
