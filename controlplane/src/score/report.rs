//! What `swctl score` reports (typed: `--json` is this, serialised), and its text form: one table per
//! profile, or with several profiles one table side by side, rows whose verdicts differ marked.

use super::suite::{Applies, Case, Class};
use super::targets::{Check, Targets, Verdict};
use serde::Serialize;
use std::fmt::Write as _;

#[derive(Debug, Clone, Serialize)]
pub struct ScoreReport {
    pub suite_version: &'static str,
    pub seed: u64,
    pub quick: bool,
    pub targets: Targets,
    pub profiles: Vec<ProfileReport>,
    /// Every check of every profile passed (or did not apply).
    pub pass: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct ProfileReport {
    /// The profile file as given.
    pub profile: String,
    pub fabric: FabricInfo,
    /// The static deadlock check of the fabric (`swctl deadlock-check`).
    pub deadlock: Check,
    pub cases: Vec<CaseReport>,
    pub suggestions: Vec<Suggestion>,
    pub pass: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct FabricInfo {
    /// `generated two-tier Clos: 4 leaves, ...` or the topology file.
    pub description: String,
    pub switches: usize,
    pub hosts: usize,
    pub line_rate_mbps: u32,
    pub lossless: Class,
    pub lossy: Class,
}

#[derive(Debug, Clone, Serialize)]
pub struct CaseReport {
    #[serde(flatten)]
    pub case: Case,
    pub description: String,
    pub applies: Applies,
    /// Measurement window, ms after the hosts were up.
    pub window_ms: (f64, f64),
    pub virtual_ms: f64,
    pub wall_ms: f64,
    pub events: u64,
    pub metrics: Metrics,
    pub checks: Vec<Check>,
    pub pass: bool,
    /// Where this case's plots are in `--out` (file names), if written.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub plots: Vec<String>,
}

/// What a case measured. Definitions: `docs/score.md`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Metrics {
    pub throughput: Option<Throughput>,
    pub pfc: PfcRate,
    pub latency: ClassLatency,
    pub ecn_vs_xoff: EcnVsXoff,
    pub drops: Drops,
    pub buffer: BufferPeaks,
    pub watchdog: WatchdogEvents,
    /// Incasts: the least-served sender's acknowledged bytes in the window over the senders' mean.
    pub incast_fairness: Option<f64>,
    /// The link failure: what the failed link carried and lost.
    pub failed_link: Option<FailedLink>,
}

/// Frames the switch ports of the failed link sent before it failed (both directions), and frames lost on
/// it (on the wire when it failed, or put on it while down).
#[derive(Debug, Clone, Default, Serialize)]
pub struct FailedLink {
    pub frames_before: u64,
    pub lost: u64,
}

/// Transmit rate of the measured switch ports (frames, preamble, inter-frame gap and FCS on the wire),
/// % of their line rate, over the window.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Throughput {
    pub ports: Vec<PortRate>,
    pub min_percent: f64,
    pub mean_percent: f64,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct PortRate {
    pub switch: String,
    pub port: String,
    pub percent: f64,
}

/// PFC frames switches sent in the steady-state window, per 1 ms bucket: the busiest port's rate in each
/// bucket (one frame in a bucket is 1,000 frames/s).
#[derive(Debug, Clone, Default, Serialize)]
pub struct PfcRate {
    pub bucket_us: f64,
    pub buckets: usize,
    /// PFC frames all switches sent in the window.
    pub frames: u64,
    /// PFC frames all switches sent before it (the start-up).
    pub frames_before_window: u64,
    /// The busiest port's frames in the window over the window's length (a counter read at its edges).
    pub busiest_port_pps: f64,
    pub p50_pps: f64,
    pub p99_pps: f64,
    pub max_pps: f64,
    /// Share of the buckets in which some switch port sent PFC.
    pub active_percent: f64,
    /// The port that sent the most, `switch:port`.
    pub busiest_port: Option<String>,
    /// Frames host NICs sent (a stuck or slow receiver's own PFC).
    pub host_frames: u64,
}

/// Latency over the steady-state window, but `lossless_run` (the start-up included).
#[derive(Debug, Clone, Default, Serialize)]
pub struct ClassLatency {
    /// The flows the latency target holds (the lossless class, `Plan::latency_flows`).
    pub scored: Option<Latency>,
    pub lossless: Option<Latency>,
    pub lossy: Option<Latency>,
    pub lossless_run: Option<Latency>,
}

/// One-way latency of data packets, from the sender putting them on the wire to the receiver taking them
/// (the NICs' per-packet histogram), µs.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Latency {
    pub packets: u64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
}

/// Whether ECN acted before PFC: the first CE mark and the first PFC frame any switch sent, µs after the
/// hosts were up, at the sampling resolution.
#[derive(Debug, Clone, Default, Serialize)]
pub struct EcnVsXoff {
    pub ecn_marked: u64,
    pub first_ecn_us: Option<f64>,
    pub first_xoff_us: Option<f64>,
    /// `Some(true)`: a mark came first (or marks and no XOFF); `Some(false)`: XOFF first or no mark at all
    /// with XOFF; `None`: neither happened.
    pub ecn_first: Option<bool>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Drops {
    /// Lossless packets the buffers dropped: ingress PG drops of lossless PGs and egress drops of lossless
    /// queues, without the PFC watchdog's and a failed link's; plus receive-buffer drops of host NICs.
    pub lossless: u64,
    /// Of `lossless`, WRED drops in lossless queues: packets that are not ECN-capable (the NICs' ACKs,
    /// NAKs and CNPs) dropped where ECN-capable ones are marked, by a WRED profile that drops.
    pub lossless_wred: u64,
    /// The switch port that dropped most of them.
    pub lossless_where: Option<String>,
    /// Lossless packets dropped by design: the PFC watchdog's drop action, queues of a failed link.
    pub lossless_by_design: u64,
    /// Lossy packets dropped (allowed).
    pub lossy: u64,
    /// Packets the lossless senders sent again (go-back-N after a loss, or a timeout).
    pub lossless_retransmitted: u64,
}

/// Peaks (the switches' persistent watermarks) of lossless headroom and of the shared pools.
#[derive(Debug, Clone, Default, Serialize)]
pub struct BufferPeaks {
    pub headroom_peak_bytes: u64,
    /// The headroom (xoff) of the PG that peaked.
    pub headroom_bytes: u64,
    pub headroom_peak_percent: f64,
    pub headroom_where: Option<String>,
    pub shared_peak_bytes: u64,
    pub shared_pool_bytes: u64,
    pub shared_peak_percent: f64,
    pub shared_where: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct WatchdogEvents {
    pub storms_detected: u64,
    pub storms_restored: u64,
}

/// A change that would pass a rule, with the value; never applied by `swctl score`.
#[derive(Debug, Clone, Serialize)]
pub struct Suggestion {
    /// `headroom`, `ecn-kmax`, `ecn-kmin`, `alpha`.
    pub rule: &'static str,
    /// `BUFFER_PROFILE|pg_lossless_100000_40m_profile|xoff`.
    pub field: String,
    pub current: String,
    pub suggested: String,
    pub why: String,
}

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or("-".into(), |v| format!("{v:.digits$}"))
}

/// The columns of the table: (header, value of a case).
type Column = (&'static str, fn(&CaseReport) -> String);

fn check_of<'a>(c: &'a CaseReport, target: &str) -> Option<&'a Check> {
    c.checks.iter().find(|k| k.target == target)
}

fn mark(c: &CaseReport, target: &str, text: String) -> String {
    match check_of(c, target).map(|k| k.verdict) {
        Some(Verdict::Fail) => format!("{text}✗"),
        Some(Verdict::NotApplicable) if text != "-" => format!("({text})"),
        _ => text,
    }
}

const COLUMNS: [Column; 11] = [
    ("thr %", |c| {
        mark(c, "throughput_percent", opt(c.metrics.throughput.as_ref().map(|t| t.min_percent), 1))
    }),
    ("PFC p99/s", |c| mark(c, "pfc_pps_p99", format!("{:.0}", c.metrics.pfc.p99_pps))),
    ("PFC ms %", |c| format!("{:.0}", c.metrics.pfc.active_percent)),
    ("lat p50/p99/p99.9 µs", |c| {
        let text = c
            .metrics
            .latency
            .scored
            .map_or("-".into(), |l| format!("{:.1}/{:.1}/{:.1}", l.p50_us, l.p99_us, l.p999_us));
        mark(c, "latency_p99_us", text)
    }),
    ("run LL p99 µs", |c| opt(c.metrics.latency.lossless_run.map(|l| l.p99_us), 1)),
    ("lossy p99 µs", |c| opt(c.metrics.latency.lossy.map(|l| l.p99_us), 1)),
    ("ECN 1st", |c| match c.metrics.ecn_vs_xoff.ecn_first {
        Some(true) => "yes".into(),
        Some(false) => "no".into(),
        None => "-".into(),
    }),
    ("LL drops", |c| mark(c, "lossless_drops", c.metrics.drops.lossless.to_string())),
    ("hdrm %", |c| format!("{:.0}", c.metrics.buffer.headroom_peak_percent)),
    ("shared %", |c| format!("{:.0}", c.metrics.buffer.shared_peak_percent)),
    ("WD", |c| c.metrics.watchdog.storms_detected.to_string()),
];

fn verdict(pass: bool) -> &'static str {
    if pass { "PASS" } else { "FAIL" }
}

fn table(rows: &[Vec<String>]) -> String {
    let widths: Vec<usize> =
        (0..rows[0].len()).map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0)).collect();
    let mut out = String::new();
    for r in rows {
        let line: Vec<String> = r
            .iter()
            .zip(&widths)
            .map(|(cell, w)| format!("{cell}{}", " ".repeat(w - cell.chars().count())))
            .collect();
        let _ = writeln!(out, "  {}", line.join("  ").trim_end());
    }
    out
}

impl ScoreReport {
    /// The text report: per profile, its cases as rows (one profile), or each metric side by side.
    pub fn describe(&self) -> String {
        let mut out = format!(
            "swctl score: suite v{}{}, seed {}; targets: {}\n",
            self.suite_version,
            if self.quick { " (quick)" } else { "" },
            self.seed,
            self.targets.describe()
        );
        for p in &self.profiles {
            let _ = writeln!(
                out,
                "\n{}: {} ({} switches, {} hosts at {} Mb/s; lossless priority {} DSCP {}, lossy priority {} DSCP {})",
                p.profile,
                p.fabric.description,
                p.fabric.switches,
                p.fabric.hosts,
                p.fabric.line_rate_mbps,
                p.fabric.lossless.priority,
                p.fabric.lossless.dscp,
                p.fabric.lossy.priority,
                p.fabric.lossy.dscp
            );
            let _ = writeln!(out, "  deadlock: {}", p.deadlock.describe());
            if self.profiles.len() == 1 {
                let mut rows = vec![
                    std::iter::once("case".to_owned())
                        .chain(COLUMNS.iter().map(|(h, _)| (*h).to_owned()))
                        .chain(["score".to_owned()])
                        .collect::<Vec<_>>(),
                ];
                for c in &p.cases {
                    let mut row = vec![c.case.name.clone()];
                    row.extend(COLUMNS.iter().map(|(_, f)| f(c)));
                    row.push(verdict(c.pass).into());
                    rows.push(row);
                }
                out.push_str(&table(&rows));
            }
            for c in &p.cases {
                for k in c.checks.iter().filter(|k| k.verdict == Verdict::Fail) {
                    let _ = writeln!(out, "  {} FAIL {}", c.case.name, k.describe());
                }
            }
            for s in &p.suggestions {
                let _ = writeln!(
                    out,
                    "  suggestion ({}): {}: {} -> {} ({})",
                    s.rule, s.field, s.current, s.suggested, s.why
                );
            }
            let _ = writeln!(out, "  {}: {}", p.profile, verdict(p.pass));
        }
        if self.profiles.len() > 1 {
            out.push_str(&self.side_by_side());
        }
        let _ = writeln!(out, "\n{}", verdict(self.pass));
        out
    }

    /// Every case and metric as a row, one column per profile; `*` marks a row whose values differ, `!` one
    /// whose verdicts differ (the differences a change review looks for).
    pub fn side_by_side(&self) -> String {
        let mut header = vec!["".to_owned(), "case".to_owned(), "metric".to_owned()];
        header.extend(self.profiles.iter().map(|p| p.profile.clone()));
        let mut rows = vec![header];
        let names: Vec<&str> = self.profiles[0].cases.iter().map(|c| c.case.name.as_str()).collect();
        for name in names {
            let cases: Vec<Option<&CaseReport>> =
                self.profiles.iter().map(|p| p.cases.iter().find(|c| c.case.name == name)).collect();
            let metrics = COLUMNS.iter().map(|(h, f)| (*h, *f, None)).chain([(
                "score",
                (|c: &CaseReport| verdict(c.pass).to_owned()) as fn(&CaseReport) -> String,
                Some(()),
            )]);
            for (header, value, is_verdict) in metrics {
                let values: Vec<String> = cases.iter().map(|c| c.map_or("(not run)".into(), value)).collect();
                let differs = values.windows(2).any(|w| w[0] != w[1]);
                let verdicts_differ = is_verdict.is_some() && differs
                    || values.iter().any(|v| v.ends_with('✗')) && values.iter().any(|v| !v.ends_with('✗'));
                let flag = if verdicts_differ {
                    "!"
                } else if differs {
                    "*"
                } else {
                    ""
                };
                let mut row = vec![flag.to_owned(), name.to_owned(), header.to_owned()];
                row.extend(values);
                rows.push(row);
            }
        }
        let mut out = String::from(
            "\nside by side (* values differ, ! verdicts differ, ✗ target failed, (value) target n/a for the case):\n",
        );
        out.push_str(&table(&rows));
        let mut row = vec!["".to_owned(), "deadlock".to_owned(), "cycle".to_owned()];
        row.extend(self.profiles.iter().map(|p| p.deadlock.describe()));
        out.push_str(&table(&[row]));
        out
    }
}
