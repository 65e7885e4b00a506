//! The report of `swctl validate --json`: one object on stdout, written by swctl and read back by whatever
//! checks a configuration (tests, scripts) through the same type.
//!
//! ```text
//! {"valid":false,"errors":[{"location":"PORT|Ethernet0|speed","value":"fast","message":"..."}],"warnings":[]}
//! ```

use lossless_dataplane::model::config::ConfigIssue;
use serde::{Deserialize, Serialize};

/// What `swctl validate --json` prints.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ValidateReport {
    /// No errors (warnings do not make a configuration invalid).
    pub valid: bool,
    pub errors: Vec<ValidateIssue>,
    pub warnings: Vec<ValidateIssue>,
}

/// One finding of the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ValidateIssue {
    /// `TABLE|key|field`, or `TABLE|key` for a whole entry.
    pub location: String,
    /// The value as written, its control and invisible characters escaped ([`ConfigIssue::new`]).
    pub value: String,
    pub message: String,
}

impl From<&ConfigIssue> for ValidateIssue {
    fn from(i: &ConfigIssue) -> ValidateIssue {
        ValidateIssue { location: i.location(), value: i.value.clone(), message: i.message.clone() }
    }
}

impl ValidateReport {
    /// The report of a check that found `errors` and `warnings`.
    pub fn new(errors: &[ConfigIssue], warnings: &[ConfigIssue]) -> ValidateReport {
        ValidateReport {
            valid: errors.is_empty(),
            errors: errors.iter().map(ValidateIssue::from).collect(),
            warnings: warnings.iter().map(ValidateIssue::from).collect(),
        }
    }
}
