//! How much of the machine other processes took during a run.

use std::time::Instant;

/// CPU counters to tell how much of the machine other processes took during a run: user time of the whole
/// machine, of this process and of switchd (the forwarding work itself is mostly kernel time, ours).
#[derive(Debug, Clone, Copy)]
pub struct CpuSample {
    pub at: Instant,
    /// Jiffies: machine user+nice, machine busy (all but idle/iowait), this process's and switchd's user.
    pub machine_user: u64,
    pub machine_busy: u64,
    pub self_user: u64,
    pub switchd_user: u64,
}

impl CpuSample {
    pub fn take(switchd: Option<u32>) -> CpuSample {
        let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
        let cpu: Vec<u64> = stat
            .lines()
            .next()
            .unwrap_or_default()
            .split_whitespace()
            .skip(1)
            .map(|x| x.parse().unwrap_or(0))
            .collect();
        let field = |i: usize| cpu.get(i).copied().unwrap_or(0);
        // user nice system idle iowait irq softirq steal
        let machine_user = field(0) + field(1);
        let machine_busy = machine_user + field(2) + field(5) + field(6) + field(7);
        let user_of = |pid: &str| {
            let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            // Fields after the command name (which may contain spaces): utime is the 12th.
            let rest = text.rsplit_once(')').map_or("", |(_, r)| r);
            rest.split_whitespace().nth(11).and_then(|x| x.parse().ok()).unwrap_or(0u64)
        };
        CpuSample {
            at: Instant::now(),
            machine_user,
            machine_busy,
            self_user: user_of("self"),
            switchd_user: switchd.map_or(0, |pid| user_of(&pid.to_string())),
        }
    }

    pub fn ticks_per_core_second(&self, since: &CpuSample) -> f64 {
        // SAFETY: sysconf has no memory preconditions.
        #[allow(unsafe_code)]
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
        hz * (self.at - since.at).as_secs_f64().max(1e-3)
    }

    /// Cores' worth of user time taken by processes other than this one and switchd.
    pub fn others_since(&self, since: &CpuSample) -> f64 {
        let others = (self.machine_user - since.machine_user) as i64
            - (self.self_user - since.self_user) as i64
            - (self.switchd_user - since.switchd_user) as i64;
        others.max(0) as f64 / self.ticks_per_core_second(since)
    }

    /// Cores' worth of busy time of the whole machine.
    pub fn busy_cores_since(&self, since: &CpuSample) -> f64 {
        (self.machine_busy - since.machine_busy) as f64 / self.ticks_per_core_second(since)
    }
}

/// Above this many cores of other processes' user time during a run, its figures are flagged.
pub const INTERFERENCE_LIMIT: f64 = 0.1;
