//! A test that needs a process to die a hard death (SIGKILL, as nextest's timeout sends) runs the victim as
//! a child: this same test binary again, running only an ignored helper test that an environment variable
//! tells what to do. The helper reports what it made on a marked line of its stdout.

use std::io;
use std::process::Command;

/// This test binary, running only the ignored test `name` (its output not captured), with `env` = `mode`.
pub fn rerun_test(name: &str, env: &str, mode: &str) -> Command {
    let mut c = Command::new(std::env::current_exe().expect("current_exe"));
    c.args([name, "--exact", "--ignored", "--nocapture", "--test-threads=1"]).env(env, mode);
    c
}

/// What follows `marker` on the first line of `lines` that holds it; `None` if the output ends first.
/// libtest prints `test NAME ... ` before the test's own output, on the same line, so the marker may stand
/// anywhere in the line.
pub fn after_marker(lines: &mut impl Iterator<Item = io::Result<String>>, marker: &str) -> Option<String> {
    lines.find_map(|l| Some(l.ok()?.split_once(marker)?.1.to_owned()))
}
