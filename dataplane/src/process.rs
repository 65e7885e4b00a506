//! A process named so that a recycled pid is not mistaken for it: its pid with its start time (clock ticks
//! since boot, `/proc/PID/stat` field 22). `swctl lab` records its switchd and rocehost processes so, and
//! the testkit the owners of test namespaces.

use serde::{Deserialize, Serialize};
use std::process::{Command, Stdio};

/// A process id with its start time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pid {
    pub pid: u32,
    pub start_time: u64,
}

impl Pid {
    /// The process `pid` as it is now, if it exists and is not a zombie.
    pub fn of(pid: u32) -> Option<Pid> {
        let (state, start_time) = proc_stat(pid)?;
        (state != 'Z' && state != 'X').then_some(Pid { pid, start_time })
    }

    /// This process.
    pub fn current() -> Option<Pid> {
        Pid::of(std::process::id())
    }

    /// The same process is still running (not exited, not a zombie, pid not reused).
    pub fn alive(&self) -> bool {
        Pid::of(self.pid).is_some_and(|now| now.start_time == self.start_time)
    }

    /// Sends `signal` (a name `kill` takes: `TERM`, `KILL`) if the same process still runs.
    pub fn signal(&self, signal: &str) {
        if self.alive() {
            let _ = Command::new("kill")
                .args([&format!("-{signal}"), &self.pid.to_string()])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
    }
}

/// (state, start time) from `/proc/PID/stat`. The command name may hold spaces and parentheses: fields
/// are counted after its closing parenthesis.
fn proc_stat(pid: u32) -> Option<(char, u64)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After the name: field 3 (state) is fields[0], field 22 (starttime) is fields[19].
    let state = fields.first()?.chars().next()?;
    let start = fields.get(19)?.parse().ok()?;
    Some((state, start))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_stat_reads_this_process() {
        let me = Pid::current().unwrap();
        assert!(me.alive());
        assert!(
            !Pid { pid: me.pid, start_time: me.start_time + 1 }.alive(),
            "a different start time is another process"
        );
        assert!(Pid::of(u32::MAX).is_none());
    }
}
