//! The targets a profile is scored against, and the checks of one case.
//!
//! Defaults: UCloud's design targets for its RoCE network (port throughput above 95 % of line rate, PFC
//! under 5 frames/s for 99 % of the time, latency under 80 µs), plus zero lossless loss and no cyclic
//! buffer dependency. `--target NAME=VALUE` overrides one. Which apply to which case: `docs/score.md`.

use super::report::{CaseReport, Metrics};
use super::suite::Applies;
use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Targets {
    /// Bottleneck port throughput, % of line rate, at least.
    pub throughput_percent: f64,
    /// PFC frames per second sent by the busiest switch port, 99th percentile over the window's 1 ms
    /// buckets (one frame in a bucket is 1,000 frames/s), at most.
    pub pfc_pps_p99: f64,
    /// Lossless one-way packet latency, 99th percentile, µs, at most.
    pub latency_p99_us: f64,
    /// Lossless packets dropped by the buffers, at most.
    pub lossless_drops: u64,
}

impl Default for Targets {
    fn default() -> Targets {
        Targets { throughput_percent: 95.0, pfc_pps_p99: 5.0, latency_p99_us: 80.0, lossless_drops: 0 }
    }
}

/// The names `--target` takes.
pub const TARGET_NAMES: [&str; 4] = ["throughput_percent", "pfc_pps_p99", "latency_p99_us", "lossless_drops"];

impl Targets {
    /// Applies `NAME=VALUE`; an error names what was written.
    pub fn set(&mut self, spec: &str) -> anyhow::Result<()> {
        let Some((name, value)) = spec.split_once('=') else {
            anyhow::bail!("--target {spec}: expected NAME=VALUE ({})", TARGET_NAMES.join(", "))
        };
        let (name, value) = (name.trim(), value.trim());
        let number: f64 = value
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite() && *v >= 0.0)
            .ok_or_else(|| anyhow::anyhow!("--target {spec}: {value:?} is not a number ≥ 0"))?;
        match name {
            "throughput_percent" => self.throughput_percent = number,
            "pfc_pps_p99" => self.pfc_pps_p99 = number,
            "latency_p99_us" => self.latency_p99_us = number,
            "lossless_drops" if number.fract() == 0.0 => self.lossless_drops = number as u64,
            "lossless_drops" => anyhow::bail!("--target {spec}: a whole number of packets"),
            _ => anyhow::bail!("--target {spec}: unknown target {name:?} ({})", TARGET_NAMES.join(", ")),
        }
        Ok(())
    }

    pub fn describe(&self) -> String {
        format!(
            "throughput ≥ {}% of line, PFC p99 ≤ {} frames/s, lossless latency p99 ≤ {} µs, lossless drops ≤ {}, \
             no deadlock cycle",
            self.throughput_percent, self.pfc_pps_p99, self.latency_p99_us, self.lossless_drops
        )
    }

    /// The checks of a case's metrics.
    pub fn check(&self, m: &Metrics, applies: &Applies) -> Vec<Check> {
        let na = |target: &'static str, value: Option<f64>| Check {
            target,
            value,
            limit: String::new(),
            verdict: Verdict::NotApplicable,
        };
        let mut out = Vec::new();
        let throughput = m.throughput.as_ref().map(|t| t.min_percent);
        out.push(match throughput {
            Some(v) if applies.throughput => {
                Check::at_least("throughput_percent", v, self.throughput_percent)
            }
            _ => na("throughput_percent", throughput),
        });
        out.push(if applies.pfc {
            Check::at_most("pfc_pps_p99", m.pfc.p99_pps, self.pfc_pps_p99)
        } else {
            na("pfc_pps_p99", Some(m.pfc.p99_pps))
        });
        let latency = m.latency.scored.map(|l| l.p99_us);
        out.push(match latency {
            Some(v) if applies.latency => Check::at_most("latency_p99_us", v, self.latency_p99_us),
            _ => na("latency_p99_us", latency),
        });
        out.push(Check::at_most("lossless_drops", m.drops.lossless as f64, self.lossless_drops as f64));
        out
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    Pass,
    Fail,
    /// The case cannot be held to this target (`Applies::note` says why); the value is informational.
    NotApplicable,
}

/// One target on one case (or the profile's deadlock check): PASS/FAIL with the number.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub target: &'static str,
    pub value: Option<f64>,
    /// `≥ 95`, `≤ 5`.
    pub limit: String,
    pub verdict: Verdict,
}

impl Check {
    fn at_least(target: &'static str, value: f64, limit: f64) -> Check {
        let verdict = if value >= limit { Verdict::Pass } else { Verdict::Fail };
        Check { target, value: Some(value), limit: format!("≥ {limit}"), verdict }
    }

    fn at_most(target: &'static str, value: f64, limit: f64) -> Check {
        let verdict = if value <= limit { Verdict::Pass } else { Verdict::Fail };
        Check { target, value: Some(value), limit: format!("≤ {limit}"), verdict }
    }

    /// The static deadlock check's result: cycles found (0 passes).
    pub fn deadlock(cycles: usize) -> Check {
        Check::at_most("deadlock_cycles", cycles as f64, 0.0)
    }

    pub fn describe(&self) -> String {
        let value = self
            .value
            .map_or("-".into(), |v| if v.fract() == 0.0 { format!("{v:.0}") } else { format!("{v:.2}") });
        match self.verdict {
            Verdict::Pass => format!("{} {value} {} PASS", self.target, self.limit),
            Verdict::Fail => format!("{} {value} (target {}) FAIL", self.target, self.limit),
            Verdict::NotApplicable => format!("{} {value} (n/a)", self.target),
        }
    }
}

impl CaseReport {
    pub fn failed(&self) -> impl Iterator<Item = &Check> {
        self.checks.iter().filter(|c| c.verdict == Verdict::Fail)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_name_the_target_and_bad_input_is_refused_by_name() {
        let mut t = Targets::default();
        t.set("pfc_pps_p99=50").unwrap();
        t.set(" latency_p99_us = 120 ").unwrap();
        assert_eq!((t.pfc_pps_p99, t.latency_p99_us), (50.0, 120.0));
        for (bad, needle) in [
            ("pfc", "NAME=VALUE"),
            ("pfc_rate=5", "unknown target \"pfc_rate\""),
            ("latency_p99_us=fast", "\"fast\" is not a number"),
            ("lossless_drops=0.5", "whole number"),
            ("throughput_percent=-1", "not a number ≥ 0"),
        ] {
            let e = t.set(bad).unwrap_err().to_string();
            assert!(e.contains(needle) && e.contains(bad.split('=').next().unwrap()), "{bad}: {e}");
        }
    }
}
