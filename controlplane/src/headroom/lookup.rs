//! The traditional buffer model's `pg_profile_lookup.ini`: one row per (speed, cable length), read by
//! buffermgrd (sonic-swss `cfgmgr/buffermgr.cpp`, `readPgProfileLookupFile`) into `m_pgProfileLookup`.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use super::{Headroom, PortParams};

/// One row of a `pg_profile_lookup.ini`: `speed cable size xon xoff threshold [xon_offset]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LookupRow {
    pub speed_mbps: u32,
    pub cable_m: u32,
    pub size: u64,
    pub xon: u64,
    pub xoff: u64,
    /// Written to the profile's `<pool mode>_th`: an alpha exponent for a dynamic pool, bytes for a static one.
    pub threshold: i64,
    pub xon_offset: Option<u64>,
}

impl LookupRow {
    /// The row as a [`Headroom`]: a table has no terms, only its threshold and `xon_offset`.
    pub fn headroom(&self) -> Headroom {
        Headroom {
            xon: self.xon,
            xoff: self.xoff,
            size: self.size,
            threshold: Some(self.threshold),
            xon_offset: self.xon_offset,
            terms: Vec::new(),
        }
    }
}

/// A line of a `pg_profile_lookup.ini` that could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LookupError {
    /// 1-based.
    pub line: usize,
    pub message: String,
}

impl fmt::Display for LookupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "pg_profile_lookup.ini line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for LookupError {}

/// A `pg_profile_lookup.ini`, keyed by (speed, cable length) as buffermgrd's `m_pgProfileLookup`, and a
/// description of where it came from (for messages and `swctl headroom`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LookupTable {
    rows: BTreeMap<(u32, u32), LookupRow>,
    source: String,
}

impl LookupTable {
    /// Reads the ini text: whitespace-separated columns, `#` comment lines and blank lines skipped.
    /// Stricter than buffermgrd, which reads whatever `>>` yields: a malformed row or a second row for the
    /// same (speed, cable) is an error naming its line.
    pub fn parse(text: &str) -> Result<LookupTable, LookupError> {
        let mut rows = BTreeMap::new();
        let mut first_line = BTreeMap::new();
        for (index, raw) in text.lines().enumerate() {
            let line = index + 1;
            let content = raw.trim();
            if content.is_empty() || content.starts_with('#') {
                continue;
            }
            let error = |message: String| LookupError { line, message };
            let columns: Vec<&str> = content.split_whitespace().collect();
            if !(6..=7).contains(&columns.len()) {
                return Err(error(format!(
                    "expected 6 or 7 columns (speed cable size xon xoff threshold [xon_offset]), found {}",
                    columns.len()
                )));
            }
            let bytes = |name: &str, text: &str| {
                text.parse::<u64>().map_err(|_| error(format!("{name} {text:?} is not a number of bytes")))
            };
            let speed_mbps = match columns[0].parse::<u32>() {
                Ok(speed) if speed > 0 => speed,
                _ => return Err(error(format!("speed {:?} is not a speed in Mb/s", columns[0]))),
            };
            let cable_m = parse_cable_m(columns[1]).map_err(error)?;
            let row = LookupRow {
                speed_mbps,
                cable_m,
                size: bytes("size", columns[2])?,
                xon: bytes("xon", columns[3])?,
                xoff: bytes("xoff", columns[4])?,
                threshold: columns[5]
                    .parse()
                    .map_err(|_| error(format!("threshold {:?} is not an integer", columns[5])))?,
                xon_offset: columns.get(6).map(|text| bytes("xon_offset", text)).transpose()?,
            };
            if let Some(first) = first_line.insert((speed_mbps, cable_m), line) {
                return Err(error(format!(
                    "a second row for speed {speed_mbps} and cable length {cable_m}m (the first is on line {first})"
                )));
            }
            rows.insert((speed_mbps, cable_m), row);
        }
        Ok(LookupTable { rows, source: String::new() })
    }

    /// The same table, described as `source` (e.g. `sonic-buildimage device/.../pg_profile_lookup.ini`).
    pub fn with_source(mut self, source: impl Into<String>) -> LookupTable {
        self.source = source.into();
        self
    }

    /// Where the table came from; `pg_profile_lookup.ini` when nobody said.
    pub fn source(&self) -> &str {
        if self.source.is_empty() { "pg_profile_lookup.ini" } else { &self.source }
    }

    /// Broadcom Tomahawk, generic BALANCED (`configs/headroom/th-gen-BALANCED.ini`).
    pub fn th_balanced() -> LookupTable {
        super::skus::shipped_table("th-gen-BALANCED").expect("shipped").table()
    }

    /// NVIDIA SN2700, Spectrum-1, ACS SKUs (`configs/headroom/ACS-MSN2700.ini`).
    pub fn sn2700() -> LookupTable {
        super::skus::shipped_table("ACS-MSN2700").expect("shipped").table()
    }

    pub fn lookup(&self, speed_mbps: u32, cable_m: u32) -> Option<LookupRow> {
        self.rows.get(&(speed_mbps, cable_m)).copied()
    }

    /// The row for a port, or an error naming the table and listing the rows it has.
    pub fn row_for(&self, port: &PortParams) -> Result<LookupRow, String> {
        self.lookup(port.speed_mbps, port.cable_m).ok_or_else(|| {
            format!(
                "no row for speed {} and cable length {}m in {}; it has {}",
                port.speed_mbps,
                port.cable_m,
                self.source(),
                self.available_rows()
            )
        })
    }

    /// The (speed, cable) pairs of the table, grouped by cable length: `5m: 10000 25000; 40m: 10000`.
    pub fn available_rows(&self) -> String {
        if self.rows.is_empty() {
            return "no rows".to_owned();
        }
        let mut by_cable: BTreeMap<u32, Vec<String>> = BTreeMap::new();
        for (speed, cable) in self.rows.keys() {
            by_cable.entry(*cable).or_default().push(speed.to_string());
        }
        let groups: Vec<String> =
            by_cable.iter().map(|(cable, speeds)| format!("{cable}m: {}", speeds.join(" "))).collect();
        format!("speeds (Mb/s) by cable length {}", groups.join("; "))
    }

    /// The rows, by speed then cable length.
    pub fn rows(&self) -> impl Iterator<Item = &LookupRow> {
        self.rows.values()
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }
}

impl FromStr for LookupTable {
    type Err = LookupError;
    fn from_str(text: &str) -> Result<LookupTable, LookupError> {
        LookupTable::parse(text)
    }
}

/// `"40m"` → 40: SONiC's cable lengths, whole metres with an `m`.
pub(super) fn parse_cable_m(text: &str) -> Result<u32, String> {
    text.strip_suffix('m')
        .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| format!("cable length {text:?} is not a whole number of metres (\"<n>m\")"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tomahawk_rows() {
        let th = LookupTable::th_balanced();
        assert_eq!(th.len(), 15);
        assert_eq!(
            th.lookup(100_000, 40),
            Some(LookupRow {
                speed_mbps: 100_000,
                cable_m: 40,
                size: 1248,
                xon: 2288,
                xoff: 177_632,
                threshold: 0,
                xon_offset: Some(2288),
            })
        );
        // xoff by speed × {5m, 40m, 300m}; size, xon, threshold and xon_offset are the same in every row.
        let xoff = [
            (10_000, [35_776, 37_024, 46_176]),
            (25_000, [53_248, 53_248, 79_040]),
            (40_000, [66_560, 71_552, 108_160]),
            (50_000, [90_272, 96_096, 141_856]),
            (100_000, [165_568, 177_632, 268_736]),
        ];
        for (speed, by_cable) in xoff {
            for (cable, xoff) in [5, 40, 300].into_iter().zip(by_cable) {
                let row = th.lookup(speed, cable).unwrap();
                assert_eq!(
                    (row.size, row.xon, row.xoff, row.threshold),
                    (1248, 2288, xoff, 0),
                    "{speed} {cable}m"
                );
                assert_eq!(row.xon_offset, Some(2288));
            }
        }
    }

    #[test]
    fn sn2700_rows() {
        let sn = LookupTable::sn2700();
        assert_eq!(sn.len(), 15);
        let row = sn.lookup(100_000, 40).unwrap();
        assert_eq!(
            (row.size, row.xon, row.xoff, row.threshold, row.xon_offset),
            (58_368, 19_456, 38_912, 0, None)
        );
        let size_xoff = [
            ((10_000, 5), (49_152, 29_696)),
            ((25_000, 5), (49_152, 29_696)),
            ((40_000, 5), (49_152, 29_696)),
            ((50_000, 5), (49_152, 29_696)),
            ((100_000, 5), (50_176, 30_720)),
            ((10_000, 40), (49_152, 29_696)),
            ((25_000, 40), (51_200, 31_744)),
            ((40_000, 40), (52_224, 32_768)),
            ((50_000, 40), (53_248, 33_792)),
            ((100_000, 40), (58_368, 38_912)),
            ((10_000, 300), (56_320, 36_864)),
            ((25_000, 300), (67_584, 48_128)),
            ((40_000, 300), (78_848, 59_392)),
            ((50_000, 300), (86_016, 66_560)),
            ((100_000, 300), (123_904, 104_448)),
        ];
        for ((speed, cable), (size, xoff)) in size_xoff {
            let row = sn.lookup(speed, cable).unwrap();
            assert_eq!((row.size, row.xon, row.xoff), (size, 19_456, xoff), "{speed} {cable}m");
        }
        assert_eq!(sn.lookup(100_000, 7), None);
        assert_eq!(sn.lookup(200_000, 5), None);
    }

    #[test]
    fn lookup_parse_errors_name_the_line() {
        let cases = [
            ("# speed cable size xon xoff threshold\n\n 10000 5m 1 2 3\n", 3, "expected 6 or 7 columns"),
            ("10000 5m 1 2 3 0\n10000 5 1 2 3 0\n", 2, "cable length \"5\" is not a whole number of metres"),
            ("10000 5m 1 2 3 0 1 9\n", 1, "found 8"),
            ("100G 5m 1 2 3 0\n", 1, "speed \"100G\""),
            ("10000 5m 1 -2 3 0\n", 1, "xon \"-2\" is not a number of bytes"),
            ("10000 5m 1 2 3 x\n", 1, "threshold \"x\""),
            ("10000 5m 1 2 3 0\n  # again\n10000 5m 4 5 6 0\n", 3, "(the first is on line 1)"),
        ];
        for (text, line, message) in cases {
            let error = LookupTable::parse(text).unwrap_err();
            assert_eq!(error.line, line, "{text:?}: {error}");
            assert!(error.to_string().contains(message), "{text:?}: {error}");
        }
        let table: LookupTable = "  # comment\n\n25000 2m 10 20 30 -1 5\n".parse().unwrap();
        assert_eq!(table.lookup(25_000, 2).unwrap().threshold, -1);
    }

    #[test]
    fn a_missing_row_names_the_table_and_its_rows() {
        let table = LookupTable::parse("10000 5m 1 2 3 0\n25000 5m 1 2 3 0\n10000 40m 1 2 3 0\n")
            .unwrap()
            .with_source("the X table");
        let error = table.row_for(&PortParams::new(100_000, 7, 9100)).unwrap_err();
        assert_eq!(
            error,
            "no row for speed 100000 and cable length 7m in the X table; it has speeds (Mb/s) by cable \
             length 5m: 10000 25000; 40m: 10000"
        );
        assert_eq!(table.row_for(&PortParams::new(25_000, 5, 9100)).unwrap().xoff, 3);
        assert_eq!(LookupTable::default().available_rows(), "no rows");
        assert_eq!(LookupTable::default().source(), "pg_profile_lookup.ini");
    }
}
