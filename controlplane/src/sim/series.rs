//! Time series of a simulation, sampled every `--resolution-us`: what engineers plot.
//!
//! | series | key | value |
//! |---|---|---|
//! | `queue_frames`, `queue_cells`, `queue_bytes` | switch, port, queue | egress queue depth (bytes = cells × cell size) |
//! | `pg_bytes`, `pg_headroom_bytes` | switch, port, PG | lossless PG usage (reserved + shared + headroom), headroom part |
//! | `pg_xoff_bytes`, `pg_xon_bytes` | switch, port, PG | where the PG's PFC trips and releases now (a dynamic limit moves) |
//! | `pfc_xoff_sent` | switch, port, priority | 1 while the port asserts XOFF for the priority |
//! | `pfc_paused` | switch or host, port, priority | 1 while the peer's PFC pauses the port's priority |
//! | `ecn_marked` | switch, port, queue | CE marks so far |
//! | `flow_tx_mbps`, `flow_acked_mbps` | host, flow, priority | the sender's rate over the last sample, sent and acknowledged |
//! | `flow_dcqcn_rate_mbps` | host, flow, priority | the DCQCN reaction point's current rate |
//! | `flow_cnps` | host, flow, priority | CNPs the sender received so far |
//!
//! A series starts at its first non-zero sample (zero before) and keeps a point only where its value
//! changes, plus the last sample: exact as a step function, small on long runs.

use lossless_dataplane::text::us;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// What a series is of: (series name, node, port or flow, queue / PG / priority).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Key {
    pub series: &'static str,
    pub node: String,
    pub port: String,
    pub index: u8,
}

#[derive(Debug, Serialize)]
pub struct SeriesOut<'a> {
    #[serde(flatten)]
    pub key: &'a Key,
    /// (µs after the hosts were up, value).
    pub points: &'a [(f64, f64)],
}

/// A series interned with [`Series::id`]: recording by id costs no key comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeriesId(usize);

#[derive(Debug, Default)]
pub struct Series {
    pub resolution_ns: u64,
    /// Every series interned, by key: its position in `points`.
    index: BTreeMap<Key, usize>,
    /// Points per series, time in ns after the origin; empty until the series starts (a started series
    /// has at least two points).
    points: Vec<Vec<(u64, f64)>>,
    last_t: u64,
}

impl Series {
    pub fn new(resolution_ns: u64) -> Series {
        Series { resolution_ns, ..Series::default() }
    }

    /// The series of `key`, to record by id: a sampler interns its keys once, not at every sample.
    pub fn id(&mut self, key: Key) -> SeriesId {
        let next = self.points.len();
        let i = *self.index.entry(key).or_insert(next);
        if i == next {
            self.points.push(Vec::new());
        }
        SeriesId(i)
    }

    /// The value of a series at `t` (ns after the origin).
    pub fn record(&mut self, key: Key, t: u64, value: f64) {
        let id = self.id(key);
        self.record_id(id, t, value);
    }

    /// [`Series::record`] by id.
    pub fn record_id(&mut self, id: SeriesId, t: u64, value: f64) {
        self.last_t = self.last_t.max(t);
        let points = &mut self.points[id.0];
        match points.last() {
            Some(&(_, v)) if v != value => points.push((t, value)),
            Some(_) => {}
            None if value != 0.0 => {
                let before = t.saturating_sub(self.resolution_ns);
                points.extend([(before, 0.0), (t, value)]);
            }
            None => {}
        }
    }

    /// [`Series::record`] of a series interned only when it starts (at its first non-zero value): `slot`
    /// keeps its id, `key` names it. Before that, a sample of zero changes nothing but the last instant.
    pub fn record_lazy(
        &mut self,
        slot: &mut Option<SeriesId>,
        key: impl FnOnce() -> Key,
        t: u64,
        value: f64,
    ) {
        let id = match *slot {
            Some(id) => id,
            None if value != 0.0 => *slot.insert(self.id(key())),
            None => {
                self.last_t = self.last_t.max(t);
                return;
            }
        };
        self.record_id(id, t, value);
    }

    /// Whether the series has started (had a non-zero sample).
    pub fn has_started(&self, id: SeriesId) -> bool {
        !self.points[id.0].is_empty()
    }

    pub fn get(&self, key: &Key) -> Option<&[(u64, f64)]> {
        self.index.get(key).map(|&i| self.points[i].as_slice()).filter(|p| !p.is_empty())
    }

    /// The keys of the series that started, in key order.
    pub fn keys(&self) -> impl Iterator<Item = &Key> {
        self.started().map(|(k, _)| k)
    }

    /// The series that started, with their points, in key order.
    fn started(&self) -> impl Iterator<Item = (&Key, &[(u64, f64)])> {
        self.index.iter().map(|(k, &i)| (k, self.points[i].as_slice())).filter(|(_, p)| !p.is_empty())
    }

    /// Each series with a point at the last sample too, times in µs.
    fn finished(&self) -> Vec<(&Key, Vec<(f64, f64)>)> {
        self.started()
            .map(|(k, points)| {
                let mut out: Vec<(f64, f64)> = points.iter().map(|&(t, v)| (us(t), v)).collect();
                if let Some(&(t, v)) = points.last()
                    && t < self.last_t
                {
                    out.push((us(self.last_t), v));
                }
                (k, out)
            })
            .collect()
    }

    /// `time_us,series,node,port,index,value`, one row per point, series by series.
    pub fn to_csv(&self) -> String {
        let mut out = String::from("time_us,series,node,port,index,value\n");
        for (k, points) in self.finished() {
            for (t, v) in points {
                let _ = writeln!(out, "{t},{},{},{},{},{v}", k.series, k.node, k.port, k.index);
            }
        }
        out
    }

    pub fn to_json(&self) -> serde_json::Result<String> {
        let finished = self.finished();
        let series: Vec<SeriesOut> =
            finished.iter().map(|(key, points)| SeriesOut { key, points: points.as_slice() }).collect();
        #[derive(Serialize)]
        struct File<'a> {
            resolution_us: f64,
            series: Vec<SeriesOut<'a>>,
        }
        serde_json::to_string(&File { resolution_us: us(self.resolution_ns), series })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(series: &'static str) -> Key {
        Key { series, node: "sw1".into(), port: "Ethernet0".into(), index: 3 }
    }

    #[test]
    fn a_series_starts_at_its_first_non_zero_value_and_keeps_changes_only() {
        let mut s = Series::new(1000);
        s.record(key("queue_cells"), 1000, 0.0);
        s.record(key("queue_cells"), 2000, 5.0);
        s.record(key("queue_cells"), 3000, 5.0);
        s.record(key("queue_cells"), 4000, 0.0);
        s.record(key("pg_bytes"), 5000, 0.0);
        assert_eq!(s.get(&key("queue_cells")).unwrap(), &[(1000, 0.0), (2000, 5.0), (4000, 0.0)]);
        assert!(s.get(&key("pg_bytes")).is_none());
        let csv = s.to_csv();
        assert_eq!(
            csv,
            "time_us,series,node,port,index,value\n1,queue_cells,sw1,Ethernet0,3,0\n2,queue_cells,sw1,Ethernet0,3,5\n4,queue_cells,sw1,Ethernet0,3,0\n5,queue_cells,sw1,Ethernet0,3,0\n"
        );
        assert!(s.to_json().unwrap().contains(r#""series":"queue_cells","node":"sw1""#));
    }
}
