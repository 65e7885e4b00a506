//! `swctl watch`: which events to print ([`Filter`]), how a flood of XOFF/XON events is folded into
//! summaries ([`Limiter`]), and how a line looks in text and JSON ([`WatchLine`]). Pure: events in, lines
//! out; the command streams them from the switch.
//!
//! Times: every line has the switch's time (`timestamp_ns`, CLOCK_MONOTONIC of the switch's machine, the
//! clock of rocehost's reports) and the same instant as wall-clock time in RFC 3339 UTC (`wall_time`,
//! from the offset switchd measured at start; `null` from a switchd too old to send it).
//!
//! Floods: a congested port asserts and releases PFC thousands of times a second, one `xoff` and one
//! `xon` event each. Per (kind, port, PG) the limiter prints the first event of each window of
//! `window_ns` (switch time) and counts the rest; when the window is over it emits one summary line with
//! that count, so an operator still sees that, where and how often PFC fired, without a screenful per
//! millisecond. Other kinds (storms, configuration, FDB) are never folded. A window of 0 prints everything.

use lossless_proto::v1::SwitchEvent;
use std::collections::BTreeMap;

/// Which events to print: each list empty means "any".
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Event kinds (`xoff`, `pfc_storm_detected`, ...); a name ending in `*` matches by prefix (`pfc_storm*`).
    pub kinds: Vec<String>,
    /// SONiC port names.
    pub ports: Vec<String>,
    /// Queue or PG indices (events with a port only).
    pub indices: Vec<u32>,
}

impl Filter {
    pub fn matches(&self, e: &SwitchEvent) -> bool {
        let kind_ok = self.kinds.is_empty()
            || self.kinds.iter().any(|k| match k.strip_suffix('*') {
                Some(prefix) => e.kind.starts_with(prefix),
                None => e.kind == *k,
            });
        let port_ok = self.ports.is_empty() || self.ports.contains(&e.port);
        let index_ok = self.indices.is_empty() || (!e.port.is_empty() && self.indices.contains(&e.index));
        kind_ok && port_ok && index_ok
    }
}

/// The kinds a [`Limiter`] folds.
fn is_flood_kind(kind: &str) -> bool {
    matches!(kind, "xoff" | "xon")
}

/// One line of `swctl watch`: an event, or a summary of folded events.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct WatchLine {
    /// Switch time, ns (CLOCK_MONOTONIC of the switch's machine).
    pub timestamp_ns: u64,
    /// RFC 3339 UTC; `None` when the switch sent no wall-clock time.
    pub wall_time: Option<String>,
    pub wall_time_unix_ns: u64,
    pub kind: String,
    /// SONiC port name; empty for switch-wide events.
    pub port: String,
    /// Queue or PG, where the kind has one.
    pub index: u32,
    pub message: String,
    /// For a summary: how many events of this kind, port and index the window held beyond the one
    /// printed; absent for an event.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suppressed: Option<u64>,
    /// For a summary: the window's length, ns of switch time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window_ns: Option<u64>,
}

impl WatchLine {
    pub fn event(e: &SwitchEvent) -> WatchLine {
        WatchLine {
            timestamp_ns: e.timestamp_ns,
            wall_time: wall_time(e.wall_time_unix_ns),
            wall_time_unix_ns: e.wall_time_unix_ns,
            kind: e.kind.clone(),
            port: e.port.clone(),
            index: e.index,
            message: e.message.clone(),
            suppressed: None,
            window_ns: None,
        }
    }

    /// The text form: wall-clock time, switch time in seconds, kind, port, message.
    pub fn text(&self) -> String {
        format!(
            "{:<27} {:>14.6} {:<20} {:<11} {}",
            self.wall_time.as_deref().unwrap_or(""),
            self.timestamp_ns as f64 / 1e9,
            self.kind,
            self.port,
            self.message
        )
    }
}

/// The other line of `swctl watch`: the switch's counters summed over its ports, every
/// `--counters-ms` (kind `counters`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CountersLine {
    /// Switch time, ns.
    pub timestamp_ns: u64,
    /// RFC 3339 UTC: from the switch's clock offset once an event has carried it, else this machine's
    /// clock when the counters arrived.
    pub wall_time: String,
    pub wall_time_unix_ns: u64,
    /// Always `counters` (what tells this line from a [`WatchLine`] in a stream of both).
    pub kind: String,
    /// Frames received without error, all ports.
    pub rx_ok: u64,
    /// Frames sent, all ports.
    pub tx_ok: u64,
    /// Frames dropped on receive or transmit, all ports.
    pub drops: u64,
}

impl CountersLine {
    /// The [`CountersLine::kind`] of every counters line.
    pub const KIND: &str = "counters";

    /// A counters line at switch time `timestamp_ns`, dated `wall_time_unix_ns`, with the port sums.
    pub fn new(
        timestamp_ns: u64,
        wall_time_unix_ns: u64,
        rx_ok: u64,
        tx_ok: u64,
        drops: u64,
    ) -> CountersLine {
        CountersLine {
            timestamp_ns,
            wall_time: lossless_dataplane::clock::format_unix_ns(wall_time_unix_ns),
            wall_time_unix_ns,
            kind: CountersLine::KIND.to_owned(),
            rx_ok,
            tx_ok,
            drops,
        }
    }

    /// The text form, in the columns of [`WatchLine::text`].
    pub fn text(&self) -> String {
        format!(
            "{:<27} {:>14.6} counters             rx_ok {} tx_ok {} drops {}",
            self.wall_time,
            self.timestamp_ns as f64 / 1e9,
            self.rx_ok,
            self.tx_ok,
            self.drops
        )
    }
}

fn wall_time(unix_ns: u64) -> Option<String> {
    (unix_ns > 0).then(|| lossless_dataplane::clock::format_unix_ns(unix_ns))
}

/// An open window of one (kind, port, index).
#[derive(Debug, Clone)]
struct Window {
    start_ns: u64,
    /// The switch's wall-clock offset at the window's start (wall = switch time + offset), to date the
    /// summary line; 0 if unknown.
    wall_offset_ns: i128,
    suppressed: u64,
}

/// Folds floods of XOFF/XON events: see the module documentation.
#[derive(Debug, Clone)]
pub struct Limiter {
    window_ns: u64,
    open: BTreeMap<(String, String, u32), Window>,
}

impl Limiter {
    pub fn new(window_ns: u64) -> Limiter {
        Limiter { window_ns, open: BTreeMap::new() }
    }

    /// The lines to print for `e` (which passed the filter): summaries of windows `e`'s time has closed,
    /// then `e` itself unless it falls in an open window of its own kind, port and index.
    pub fn push(&mut self, e: &SwitchEvent) -> Vec<WatchLine> {
        let mut out = self.expire(e.timestamp_ns);
        if self.window_ns == 0 || !is_flood_kind(&e.kind) {
            out.push(WatchLine::event(e));
            return out;
        }
        let key = (e.kind.clone(), e.port.clone(), e.index);
        match self.open.get_mut(&key) {
            Some(w) => w.suppressed += 1,
            None => {
                let wall_offset_ns = if e.wall_time_unix_ns > 0 {
                    i128::from(e.wall_time_unix_ns) - i128::from(e.timestamp_ns)
                } else {
                    0
                };
                self.open.insert(key, Window { start_ns: e.timestamp_ns, wall_offset_ns, suppressed: 0 });
                out.push(WatchLine::event(e));
            }
        }
        out
    }

    /// Summaries of the windows that end at or before `now_ns` (switch time); those windows close.
    pub fn expire(&mut self, now_ns: u64) -> Vec<WatchLine> {
        let window_ns = self.window_ns;
        let done: Vec<_> = self
            .open
            .iter()
            .filter(|(_, w)| w.start_ns.saturating_add(window_ns) <= now_ns)
            .map(|(k, _)| k.clone())
            .collect();
        let mut out = Vec::new();
        for key in done {
            if let Some(w) = self.open.remove(&key)
                && w.suppressed > 0
            {
                out.push(summary(key, &w, window_ns));
            }
        }
        out
    }

    /// Summaries of every open window (the stream ended, or the switch went quiet).
    pub fn flush(&mut self) -> Vec<WatchLine> {
        let window_ns = self.window_ns;
        std::mem::take(&mut self.open)
            .into_iter()
            .filter(|(_, w)| w.suppressed > 0)
            .map(|(key, w)| summary(key, &w, window_ns))
            .collect()
    }
}

fn summary((kind, port, index): (String, String, u32), w: &Window, window_ns: u64) -> WatchLine {
    let end_ns = w.start_ns.saturating_add(window_ns);
    let wall_ns = if w.wall_offset_ns == 0 {
        0
    } else {
        u64::try_from(i128::from(end_ns) + w.wall_offset_ns).unwrap_or(0)
    };
    let what = kind.to_uppercase();
    WatchLine {
        timestamp_ns: end_ns,
        wall_time: wall_time(wall_ns),
        wall_time_unix_ns: wall_ns,
        message: format!(
            "{} more {what} on port {port} PG {index} in {:.3} s",
            w.suppressed,
            window_ns as f64 / 1e9
        ),
        kind: format!("{kind}_summary"),
        port,
        index,
        suppressed: Some(w.suppressed),
        window_ns: Some(window_ns),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(kind: &str, port: &str, index: u32, t_ms: u64) -> SwitchEvent {
        SwitchEvent {
            timestamp_ns: t_ms * 1_000_000,
            kind: kind.into(),
            message: format!("{} on port {port} PG {index}", kind.to_uppercase()),
            port: port.into(),
            index,
            // 2026-01-01T00:00:00Z at switch time 0.
            wall_time_unix_ns: 1_767_225_600_000_000_000 + t_ms * 1_000_000,
        }
    }

    #[test]
    fn a_flood_prints_the_first_event_and_one_summary_per_window() {
        let mut l = Limiter::new(1_000_000_000);
        let mut lines = Vec::new();
        // 1000 XOFFs on Ethernet4 PG3 in 999 ms, one storm event in between, then one XOFF after the window.
        for t in 0..1000 {
            lines.extend(l.push(&ev("xoff", "Ethernet4", 3, t)));
            if t == 500 {
                lines.extend(l.push(&ev("pfc_storm_detected", "Ethernet4", 3, t)));
            }
        }
        lines.extend(l.push(&ev("xoff", "Ethernet4", 3, 1_500)));
        let kinds: Vec<&str> = lines.iter().map(|l| l.kind.as_str()).collect();
        assert_eq!(kinds, ["xoff", "pfc_storm_detected", "xoff_summary", "xoff"]);
        assert_eq!(lines[2].suppressed, Some(999));
        assert_eq!(lines[2].message, "999 more XOFF on port Ethernet4 PG 3 in 1.000 s");
        // The summary is dated at the window's end: switch time 1 s, wall 00:00:01.
        assert_eq!(lines[2].timestamp_ns, 1_000_000_000);
        assert_eq!(lines[2].wall_time.as_deref(), Some("2026-01-01T00:00:01.000000Z"));
        // A window that ends with nothing suppressed gives no summary.
        assert!(l.flush().is_empty());
    }

    #[test]
    fn windows_are_per_kind_port_and_index() {
        let mut l = Limiter::new(1_000_000_000);
        let firsts = [
            ("xoff", "Ethernet4", 3),
            ("xoff", "Ethernet4", 4),
            ("xon", "Ethernet4", 3),
            ("xoff", "Ethernet8", 3),
        ];
        for (k, p, i) in firsts {
            assert_eq!(l.push(&ev(k, p, i, 10)).len(), 1, "{k} {p} {i} opens its own window");
            assert!(l.push(&ev(k, p, i, 20)).is_empty());
        }
        let summaries = l.flush();
        assert_eq!(summaries.len(), 4);
        assert!(summaries.iter().all(|s| s.suppressed == Some(1)));
    }

    #[test]
    fn a_zero_window_prints_everything() {
        let mut l = Limiter::new(0);
        assert_eq!((0..10).flat_map(|t| l.push(&ev("xoff", "Ethernet0", 3, t))).count(), 10);
    }

    #[test]
    fn filters_by_kind_prefix_port_and_index() {
        let f = Filter {
            kinds: vec!["pfc_storm*".into(), "xoff".into()],
            ports: vec!["Ethernet4".into()],
            indices: vec![3],
        };
        assert!(f.matches(&ev("pfc_storm_detected", "Ethernet4", 3, 0)));
        assert!(f.matches(&ev("xoff", "Ethernet4", 3, 0)));
        assert!(!f.matches(&ev("xon", "Ethernet4", 3, 0)), "kind");
        assert!(!f.matches(&ev("xoff", "Ethernet8", 3, 0)), "port");
        assert!(!f.matches(&ev("xoff", "Ethernet4", 4, 0)), "index");
        let switch_wide = SwitchEvent { kind: "config_applied".into(), ..Default::default() };
        assert!(Filter::default().matches(&switch_wide));
        assert!(
            !Filter { indices: vec![0], ..Default::default() }.matches(&switch_wide),
            "no port, no index"
        );
    }

    #[test]
    fn json_lines_carry_rfc3339_wall_time() {
        let line = WatchLine::event(&ev("xoff", "Ethernet4", 3, 1_500));
        let json = serde_json::to_value(&line).unwrap();
        assert_eq!(json["wall_time"], "2026-01-01T00:00:01.500000Z");
        assert_eq!(json["port"], "Ethernet4");
        assert!(json.get("suppressed").is_none());
        assert!(
            line.text().starts_with("2026-01-01T00:00:01.500000Z       1.500000 xoff"),
            "{}",
            line.text()
        );
    }

    #[test]
    fn counters_lines_keep_their_json_shape_and_read_back() {
        // 2026-01-01T00:00:00.5Z, 1.5 s of switch time.
        let line = CountersLine::new(1_500_000_000, 1_767_225_600_500_000_000, 10, 9, 1);
        let json = serde_json::to_string(&line).unwrap();
        assert_eq!(
            json,
            r#"{"timestamp_ns":1500000000,"wall_time":"2026-01-01T00:00:00.500000Z","wall_time_unix_ns":1767225600500000000,"kind":"counters","rx_ok":10,"tx_ok":9,"drops":1}"#
        );
        assert_eq!(serde_json::from_str::<CountersLine>(&json).unwrap(), line);
        let event = WatchLine::event(&ev("xoff", "Ethernet0", 3, 2));
        let json = serde_json::to_string(&event).unwrap();
        assert!(!json.contains("suppressed"), "an event has no summary fields: {json}");
        assert_eq!(serde_json::from_str::<WatchLine>(&json).unwrap(), event);
    }
}
