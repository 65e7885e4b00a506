//! Text conventions shared by the model and every tool: SONiC's natural port order, its CLI's thousands
//! separators, and nanoseconds shown as microseconds.

use std::cmp::Ordering;

/// `1234567` → `1,234,567` (Python's `'{:,}'.format`).
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Nanoseconds as microseconds, for reports (`1500` → `1.5`; exact to the ns).
pub fn us(ns: u64) -> f64 {
    ns as f64 / 1e3
}

/// `natsort.natsorted`'s order for names: digit runs compare as numbers (`Ethernet4` < `Ethernet12`).
pub fn natural_cmp(a: &str, b: &str) -> Ordering {
    fn chunks(s: &str) -> Vec<(bool, &str)> {
        let mut out = Vec::new();
        let mut start = 0;
        let bytes = s.as_bytes();
        for i in 1..=bytes.len() {
            if i == bytes.len() || bytes[i].is_ascii_digit() != bytes[start].is_ascii_digit() {
                out.push((bytes[start].is_ascii_digit(), &s[start..i]));
                start = i;
            }
        }
        out
    }
    let (ca, cb) = (chunks(a), chunks(b));
    for ((da, sa), (db, sb)) in ca.iter().zip(&cb) {
        let ord = match (da, db) {
            // Compare digit runs by value without parsing (no overflow): strip leading zeros, then length,
            // then text.
            (true, true) => {
                let (ta, tb) = (sa.trim_start_matches('0'), sb.trim_start_matches('0'));
                ta.len().cmp(&tb.len()).then_with(|| ta.cmp(tb))
            }
            // natsort puts numbers before strings.
            (true, false) => Ordering::Less,
            (false, true) => Ordering::Greater,
            (false, false) => sa.cmp(sb),
        };
        if ord != Ordering::Equal {
            return ord;
        }
    }
    ca.len().cmp(&cb.len()).then_with(|| a.cmp(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn natural_order() {
        let mut names = vec!["Ethernet12", "Ethernet4", "Ethernet0", "Ethernet-BP4", "Ethernet100"];
        names.sort_by(|a, b| natural_cmp(a, b));
        // As sonic-utilities' vectors order them: Ethernet0, Ethernet4, Ethernet-BP0, ...
        assert_eq!(names, ["Ethernet0", "Ethernet4", "Ethernet12", "Ethernet100", "Ethernet-BP4"]);
    }

    #[test]
    fn microseconds() {
        assert_eq!(us(0), 0.0);
        assert_eq!(us(1_500), 1.5);
        assert_eq!(us(1), 0.001);
    }

    #[test]
    fn thousands_separators() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000), "1,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(thousands(u64::MAX), "18,446,744,073,709,551,615");
    }
}
