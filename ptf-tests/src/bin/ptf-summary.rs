//! Prints the PTF catalog's summary table from the records the tests wrote (see `lossless_ptf::report`).
//! `ptf-summary [DIR]`; exits 1 when a record failed or none exists.

use std::process::ExitCode;

fn main() -> ExitCode {
    let dir = std::env::args_os().nth(1).map(Into::into).unwrap_or_else(lossless_ptf::report::results_dir);
    let records = lossless_ptf::report::read_records(&dir);
    if records.is_empty() {
        eprintln!("ptf-summary: no test records in {}", dir.display());
        return ExitCode::FAILURE;
    }
    print!("{}", lossless_ptf::report::summary(&records));
    if records.iter().all(|r| r.passed) { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}
