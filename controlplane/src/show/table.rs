//! The table layout of python-tabulate's `simple` format as SONiC's scripts call it
//! (`tabulate(rows, headers, tablefmt='simple', stralign='right')`), and SONiC's number formats
//! (`utilities_common/netstat.py`).
//!
//! What that layout is, precisely: every column is as wide as its widest cell, and at least two wider than
//! its header (tabulate's `MIN_PADDING`); every cell and header is right-aligned (SONiC's tables hold
//! strings, numbers formatted with commas, or plain integers, all of which tabulate right-aligns); columns
//! are separated by two spaces; under the header a rule of dashes as wide as each column; trailing spaces
//! are trimmed from every line, so a row of empty cells prints as an empty line (pfcstat `--history` uses
//! that to separate ports).

pub use lossless_dataplane::text::{natural_cmp, thousands};
use serde_json::{Map, Value};

/// One cell: what the table prints, and what `--json` carries for it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Cell {
    pub text: String,
    pub json: Value,
}

impl Cell {
    /// A counter, with thousands separators (`format_number_with_comma`, `ns_diff`).
    pub fn count(n: u64) -> Cell {
        Cell { text: thousands(n), json: n.into() }
    }

    /// A number printed as it is (watermarks, PG drops, pfcwd cells: SONiC prints `str(int(x))` there).
    pub fn plain(n: u64) -> Cell {
        Cell { text: n.to_string(), json: n.into() }
    }

    pub fn text(s: impl Into<String>) -> Cell {
        let s = s.into();
        Cell { json: Value::String(s.clone()), text: s }
    }

    /// A value the switch does not have (`STATUS_NA`).
    pub fn na() -> Cell {
        Cell { text: "N/A".into(), json: Value::Null }
    }

    /// `a/b`, as `pfcwd show stats` prints an (ok, drop) or (detected, restored) pair.
    pub fn pair(a: u64, b: u64) -> Cell {
        Cell { text: format!("{a}/{b}"), json: Value::Array(vec![a.into(), b.into()]) }
    }

    /// A byte rate as portstat prints it (`format_brate`); JSON carries bytes per second.
    pub fn byte_rate(bytes_per_s: Option<f64>) -> Cell {
        match bytes_per_s {
            None => Cell::na(),
            Some(rate) => Cell { text: format_brate(rate), json: finite(rate) },
        }
    }

    /// A utilisation as portstat prints it (`format_util`); JSON carries the percentage.
    pub fn percent(pct: Option<f64>) -> Cell {
        match pct {
            None => Cell::na(),
            Some(pct) => Cell { text: format!("{pct:.2}%"), json: finite(pct) },
        }
    }
}

fn finite(x: f64) -> Value {
    serde_json::Number::from_f64(x).map(Value::Number).unwrap_or(Value::Null)
}

/// portstat's byte rate: `B/s` up to 10,000, `KB/s` up to 10,000,000, then `MB/s` (decimal units).
pub(crate) fn format_brate(bytes_per_s: f64) -> String {
    if bytes_per_s > 10_000_000.0 {
        format!("{:.2} MB/s", bytes_per_s / 1_000_000.0)
    } else if bytes_per_s > 10_000.0 {
        format!("{:.2} KB/s", bytes_per_s / 1_000.0)
    } else {
        format!("{bytes_per_s:.2} B/s")
    }
}

/// A table with a header row, rendered as tabulate's `simple` format.
#[derive(Debug, Clone, Default)]
pub(crate) struct Table {
    headers: Vec<String>,
    /// An empty row is a separator line.
    rows: Vec<Vec<Cell>>,
}

impl Table {
    pub fn new<S: Into<String>>(headers: impl IntoIterator<Item = S>) -> Table {
        Table { headers: headers.into_iter().map(Into::into).collect(), rows: Vec::new() }
    }

    pub fn push(&mut self, row: Vec<Cell>) {
        debug_assert_eq!(row.len(), self.headers.len(), "row width differs from the header's");
        self.rows.push(row);
    }

    /// An empty line inside the table (the columns keep their widths).
    pub fn push_blank(&mut self) {
        self.rows.push(Vec::new());
    }

    /// The rows that are not separators.
    pub fn rows(&self) -> impl Iterator<Item = &[Cell]> {
        self.rows.iter().filter(|r| !r.is_empty()).map(Vec::as_slice)
    }

    pub fn is_empty(&self) -> bool {
        self.rows.iter().all(Vec::is_empty)
    }

    /// The table as tabulate returns it: lines joined by `\n`, no newline at the end.
    pub fn render(&self) -> String {
        self.render_aligned(&vec![true; self.headers.len()])
    }

    /// The table with tabulate's default alignment, as scripts print it that pass no `stralign`
    /// (`fdbshow`, `nbrshow`): a column of numbers only is right-aligned, any other column, its header
    /// included, left-aligned.
    pub fn render_default_align(&self) -> String {
        let right: Vec<bool> = (0..self.headers.len())
            .map(|i| {
                let mut cells = self.rows().map(|r| r[i].text.as_str()).peekable();
                cells.peek().is_some() && cells.all(|t| t.parse::<f64>().is_ok())
            })
            .collect();
        self.render_aligned(&right)
    }

    fn render_aligned(&self, right: &[bool]) -> String {
        let widths: Vec<usize> = self
            .headers
            .iter()
            .enumerate()
            .map(|(i, h)| {
                let cells = self.rows.iter().filter_map(|r| r.get(i)).map(|c| c.text.chars().count());
                cells.fold(h.chars().count() + 2, usize::max)
            })
            .collect();
        let line = |cells: &mut dyn Iterator<Item = &str>| -> String {
            let padded: Vec<String> = cells
                .zip(widths.iter().zip(right))
                .map(|(c, (w, r))| if *r { format!("{c:>w$}") } else { format!("{c:<w$}") })
                .collect();
            padded.join("  ").trim_end().to_owned()
        };
        let mut lines = Vec::with_capacity(self.rows.len() + 2);
        lines.push(line(&mut self.headers.iter().map(String::as_str)));
        lines.push(widths.iter().map(|w| "-".repeat(*w)).collect::<Vec<_>>().join("  "));
        for row in &self.rows {
            lines.push(line(&mut row.iter().map(|c| c.text.as_str())));
        }
        lines.join("\n")
    }

    /// tabulate's `simple` format without headers (`tabulate(rows)`, as mmuconfig prints a pool): a rule
    /// above and below the rows, columns as wide as their widest cell, default alignment. The headers are
    /// only used for their count.
    pub fn render_headerless(&self) -> String {
        let n = self.headers.len();
        let right: Vec<bool> = (0..n)
            .map(|i| {
                let mut cells = self.rows().map(|r| r[i].text.as_str()).peekable();
                cells.peek().is_some() && cells.all(|t| t.parse::<f64>().is_ok())
            })
            .collect();
        let widths: Vec<usize> =
            (0..n).map(|i| self.rows().map(|r| r[i].text.chars().count()).max().unwrap_or(0)).collect();
        let rule = widths.iter().map(|w| "-".repeat(*w)).collect::<Vec<_>>().join("  ");
        let mut lines = vec![rule.clone()];
        for row in self.rows() {
            let cells: Vec<String> = row
                .iter()
                .zip(widths.iter().zip(&right))
                .map(|(c, (w, r))| if *r { format!("{:>w$}", c.text) } else { format!("{:<w$}", c.text) })
                .collect();
            lines.push(cells.join("  ").trim_end().to_owned());
        }
        lines.push(rule);
        lines.join("\n")
    }

    /// tabulate's `grid` format with its default alignment (`show vlan brief`): `+---+` rules around
    /// every row, `+===+` under the header, a cell of several lines (`\n` in its text) spans as many lines,
    /// and columns of numbers are right-aligned, others left-aligned.
    pub fn render_grid(&self) -> String {
        let lines_of = |s: &str| -> Vec<String> { s.split('\n').map(str::to_owned).collect() };
        let n = self.headers.len();
        let right: Vec<bool> = (0..n)
            .map(|i| {
                let mut cells = self.rows().map(|r| r[i].text.as_str()).filter(|t| !t.is_empty()).peekable();
                cells.peek().is_some() && cells.all(|t| t.parse::<f64>().is_ok())
            })
            .collect();
        let widths: Vec<usize> = (0..n)
            .map(|i| {
                let cells = self.rows().flat_map(|r| lines_of(&r[i].text)).map(|l| l.chars().count());
                cells.fold(self.headers[i].chars().count() + 2, usize::max)
            })
            .collect();
        let rule = |c: char| -> String {
            let parts: Vec<String> = widths.iter().map(|w| c.to_string().repeat(w + 2)).collect();
            format!("+{}+", parts.join("+"))
        };
        let block = |cells: Vec<Vec<String>>| -> Vec<String> {
            let height = cells.iter().map(Vec::len).max().unwrap_or(1);
            (0..height)
                .map(|l| {
                    let parts: Vec<String> = (0..n)
                        .map(|i| {
                            let text = cells[i].get(l).map_or("", String::as_str);
                            let w = widths[i];
                            if right[i] { format!(" {text:>w$} ") } else { format!(" {text:<w$} ") }
                        })
                        .collect();
                    format!("|{}|", parts.join("|"))
                })
                .collect()
        };
        let mut out = vec![rule('-')];
        out.extend(block(self.headers.iter().map(|h| lines_of(h)).collect()));
        out.push(rule('='));
        for row in self.rows() {
            out.extend(block(row.iter().map(|c| lines_of(&c.text)).collect()));
            out.push(rule('-'));
        }
        out.join("\n")
    }

    /// Rows as objects keyed by header (watermarkstat's `--json`): `[{"Port": "Ethernet0", "PG0": 100}]`.
    pub fn objects(&self) -> Value {
        let rows = self.rows().map(|row| {
            let fields = self.headers.iter().zip(row).map(|(h, c)| (h.clone(), c.json.clone()));
            Value::Object(fields.collect())
        });
        Value::Array(rows.collect())
    }

    /// Rows keyed by their first cell, the rest keyed by header (netstat's `table_as_json`):
    /// `{"Ethernet0": {"STATE": "U", "RX_OK": 8}}`.
    pub fn keyed_by_first(&self) -> Value {
        let mut out = Map::new();
        for row in self.rows() {
            let fields = self.headers.iter().zip(row).skip(1).map(|(h, c)| (h.clone(), c.json.clone()));
            out.insert(row[0].text.clone(), Value::Object(fields.collect()));
        }
        Value::Object(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_rates_as_portstat() {
        // The sonic-utilities portstat vectors: 2000.00 MB/s, 204.80 KB/s, 1350.00 KB/s, 13.37 MB/s, 0.00 B/s.
        assert_eq!(format_brate(2_000_000_000.0), "2000.00 MB/s");
        assert_eq!(format_brate(204_800.0), "204.80 KB/s");
        assert_eq!(format_brate(1_350_000.0), "1350.00 KB/s");
        assert_eq!(format_brate(13_370_000.0), "13.37 MB/s");
        assert_eq!(format_brate(0.0), "0.00 B/s");
        assert_eq!(format_brate(10_000.0), "10000.00 B/s");
    }

    #[test]
    fn header_is_padded_by_two_and_blank_rows_are_empty_lines() {
        let mut t = Table::new(["Port", "TxQ"]);
        t.push(vec![Cell::text("Ethernet0"), Cell::text("UC0")]);
        t.push_blank();
        assert_eq!(t.render(), "     Port    TxQ\n---------  -----\nEthernet0    UC0\n");
        let empty = Table::new(["PORT", "ACTION"]);
        assert_eq!(empty.render(), "  PORT    ACTION\n------  --------");
    }
}
