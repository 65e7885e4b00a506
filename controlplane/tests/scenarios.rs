//! Scenario files validate (`swctl lab run --check`), without creating anything.

use std::process::Command;

#[test]
fn scenario_files_validate() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../configs/scenarios");
    let names: &[&str] = &["pfc-storm.yaml"];
    for name in names {
        let out = Command::new(env!("CARGO_BIN_EXE_swctl"))
            .args(["lab", "run", "--check", &format!("{dir}/{name}")])
            .output()
            .unwrap();
        assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(String::from_utf8_lossy(&out.stdout).contains("valid"));
    }
}
