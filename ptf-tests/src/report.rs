//! A sonic-mgmt-like summary of the catalog: each test records its profile, its key numbers (expected and
//! observed) and its outcome in a results directory; `ptf-summary` prints them as one table. An expected
//! number taken from sonic-mgmt's published figures carries its source (upstream file and keys, see
//! [`crate::published`]); the table cites it as a numbered note listed under the table.
//!
//! Tests run in separate processes (nextest), so each writes its own JSON file; a test that panics still
//! writes its record (as failed) while unwinding.

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Where records go: `$LOSSLESS_PTF_RESULTS`, else `target/ptf-results` in the workspace.
pub fn results_dir() -> PathBuf {
    std::env::var_os("LOSSLESS_PTF_RESULTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../target/ptf-results")))
}

/// One key number of a test.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Number {
    pub what: String,
    pub expected: String,
    pub observed: String,
    /// Where the expected number comes from, when it is a published figure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

/// One test's record.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Record {
    pub test: String,
    pub profile: String,
    pub passed: bool,
    pub numbers: Vec<Number>,
    pub seconds: f64,
}

/// Collects a test's numbers; written when dropped (passed unless the thread is panicking).
pub struct Report {
    record: Record,
    start: std::time::Instant,
}

impl Report {
    /// `test` in sonic-mgmt's naming, e.g. `PFCtest[xoff_1]`.
    pub fn new(test: &str, profile: &str) -> Report {
        Report {
            record: Record {
                test: test.to_owned(),
                profile: profile.to_owned(),
                passed: false,
                numbers: Vec::new(),
                seconds: 0.0,
            },
            start: std::time::Instant::now(),
        }
    }

    /// Records a key number; call it before asserting on it, so a failure still shows both.
    pub fn number(&mut self, what: &str, expected: impl ToString, observed: impl ToString) {
        self.record.numbers.push(Number {
            what: what.to_owned(),
            expected: expected.to_string(),
            observed: observed.to_string(),
            source: None,
        });
    }

    /// Records a key number whose expectation is a published figure (or sonic-mgmt's window around one),
    /// with its source.
    pub fn published(&mut self, what: &str, expected: impl ToString, observed: impl ToString, source: &str) {
        self.record.numbers.push(Number {
            what: what.to_owned(),
            expected: expected.to_string(),
            observed: observed.to_string(),
            source: Some(source.to_owned()),
        });
    }
}

impl Drop for Report {
    fn drop(&mut self) {
        self.record.passed = !std::thread::panicking();
        self.record.seconds = self.start.elapsed().as_secs_f64();
        let dir = results_dir();
        let _ = std::fs::create_dir_all(&dir);
        let file: String = format!("{}-{}", self.record.test, self.record.profile)
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' })
            .collect();
        if let Ok(text) = serde_json::to_string_pretty(&self.record) {
            let _ = std::fs::write(dir.join(format!("{file}.json")), text);
        }
    }
}

/// Reads every record in `dir`, sorted by test then profile.
pub fn read_records(dir: &std::path::Path) -> Vec<Record> {
    let mut out: Vec<Record> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .filter_map(|e| serde_json::from_slice(&std::fs::read(e.path()).ok()?).ok())
        .collect();
    out.sort_by(|a, b| (&a.test, &a.profile).cmp(&(&b.test, &b.profile)));
    out
}

/// The summary table: test, profile, result, key numbers (expected / observed); a published expectation
/// is marked `[n]`, and the sources are listed after the table.
pub fn summary(records: &[Record]) -> String {
    let mut sources: Vec<&str> = Vec::new();
    let rows: Vec<[String; 4]> = records
        .iter()
        .map(|r| {
            let numbers = r
                .numbers
                .iter()
                .map(|n| {
                    let cite = n.source.as_deref().map_or(String::new(), |s| {
                        let i = sources.iter().position(|x| *x == s).unwrap_or_else(|| {
                            sources.push(s);
                            sources.len() - 1
                        });
                        format!(" [{}]", i + 1)
                    });
                    if n.expected == n.observed && cite.is_empty() {
                        format!("{}: {}", n.what, n.observed)
                    } else {
                        format!("{}: expected {}{cite}, observed {}", n.what, n.expected, n.observed)
                    }
                })
                .collect::<Vec<_>>()
                .join("; ");
            [r.test.clone(), r.profile.clone(), if r.passed { "PASS" } else { "FAIL" }.into(), numbers]
        })
        .collect();
    let header = ["Test", "Profile", "Result", "Key numbers"];
    let widths: Vec<usize> = (0..3)
        .map(|i| rows.iter().map(|r| r[i].chars().count()).chain([header[i].len()]).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    let line = |cells: [&str; 4], out: &mut String| {
        out.push_str(&format!(
            "{:<w0$}  {:<w1$}  {:<w2$}  {}\n",
            cells[0],
            cells[1],
            cells[2],
            cells[3],
            w0 = widths[0],
            w1 = widths[1],
            w2 = widths[2]
        ));
    };
    line(header, &mut out);
    line(
        ["-".repeat(widths[0]).as_str(), &"-".repeat(widths[1]), &"-".repeat(widths[2]), "-----------"],
        &mut out,
    );
    for r in &rows {
        line([&r[0], &r[1], &r[2], &r[3]], &mut out);
    }
    let passed = records.iter().filter(|r| r.passed).count();
    out.push_str(&format!("{passed} passed, {} failed, {} in all\n", records.len() - passed, records.len()));
    if !sources.is_empty() {
        out.push_str("\nExpected figures: sonic-net/sonic-mgmt, as kept in ptf-tests/published.json:\n");
        for (i, s) in sources.iter().enumerate() {
            out.push_str(&format!("[{}] {s}\n", i + 1));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn published_expectations_are_cited_once_under_the_table() {
        let number = |what: &str, source: Option<&str>| Number {
            what: what.into(),
            expected: "6542 ± 2".into(),
            observed: "6542".into(),
            source: source.map(Into::into),
        };
        let records = vec![
            Record {
                test: "PFCtest[xoff_1]".into(),
                profile: "th_balanced".into(),
                passed: true,
                numbers: vec![number("PFC", Some("file a")), number("drop", Some("file b"))],
                seconds: 1.0,
            },
            Record {
                test: "PFCtest[xoff_2]".into(),
                profile: "th_balanced".into(),
                passed: false,
                numbers: vec![number("PFC", Some("file a")), number("other", None)],
                seconds: 1.0,
            },
        ];
        let text = summary(&records);
        assert!(text.contains("PFC: expected 6542 ± 2 [1], observed 6542; drop: expected 6542 ± 2 [2]"));
        assert!(text.contains("other: expected 6542 ± 2, observed 6542"));
        assert!(text.contains("[1] file a\n[2] file b\n"), "{text}");
        assert!(text.contains("1 passed, 1 failed, 2 in all"));
    }
}
