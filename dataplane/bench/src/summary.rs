//! The machine-readable summary (`--json`): serde types, one object on stdout, read back (by the tests,
//! or by a program comparing runs) as the same [`Summary`].
//!
//! ```text
//! {"seconds":3.0,"warmup":0.5,"latency_seconds":2.0,"rate_pps":10000,"sizes":[64,1500],
//!  "modes":{"kernel":{"throughput":[…],"latency":[…]},"switchd":{…},…},   (in run order)
//!  "ratios":{"pps":[{"size":64,"ratio":0.91,"target":0.85,"pass":true},…],"p99":[…]},   (switchd's, if run)
//!  "ratios_by_forwarder":{"switchd":{…},"switchd-poll":{…}}}
//! ```

use crate::Args;
use crate::Forwarder;
use crate::measure::{Latency, ModeResult, Throughput};
use crate::report::{P99_TARGET, PPS_TARGET, Ratios, us};
use serde::de::{Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub seconds: f64,
    pub warmup: f64,
    pub latency_seconds: f64,
    pub rate_pps: u32,
    pub sizes: Vec<usize>,
    /// By forwarder name, in the order they ran.
    #[serde(serialize_with = "in_order", deserialize_with = "read_in_order")]
    pub modes: Vec<(String, ModeJson)>,
    /// switchd's ratios to the kernel (the key predates the floor modes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ratios: Option<RatiosJson>,
    /// Every forwarder's ratios to the kernel, in run order.
    #[serde(serialize_with = "in_order", deserialize_with = "read_in_order")]
    pub ratios_by_forwarder: Vec<(String, RatiosJson)>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModeJson {
    pub throughput: Vec<ThroughputJson>,
    pub latency: Vec<LatencyJson>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThroughputJson {
    pub size: usize,
    pub sent_pps: u64,
    pub fwd_pps: u64,
    pub fwd_gbps: f64,
    pub per_second: Vec<u64>,
    pub sent_window: u64,
    pub received_window: u64,
    pub sent_total: u64,
    pub received_total: u64,
    pub h2_socket_drops: u64,
    pub others_cpu: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencyJson {
    pub size: usize,
    pub rate_pps: u32,
    pub sent: u64,
    pub received: u64,
    pub lost: u64,
    pub min_us: f64,
    pub p50_us: f64,
    pub mean_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
    pub others_cpu: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RatiosJson {
    pub pps: Vec<RatioJson>,
    pub p99: Vec<RatioJson>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RatioJson {
    pub size: usize,
    pub ratio: f64,
    pub target: f64,
    pub pass: bool,
}

/// A list of (key, value) pairs as a JSON object, keeping their order.
fn in_order<S: Serializer, T: Serialize>(pairs: &[(String, T)], s: S) -> Result<S::Ok, S::Error> {
    s.collect_map(pairs.iter().map(|(k, v)| (k, v)))
}

/// A JSON object as (key, value) pairs in the order it lists them: the inverse of [`in_order`].
fn read_in_order<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Vec<(String, T)>, D::Error> {
    struct Pairs<T>(std::marker::PhantomData<T>);
    impl<'de, T: Deserialize<'de>> Visitor<'de> for Pairs<T> {
        type Value = Vec<(String, T)>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("an object keyed by forwarder name")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut pairs = Vec::new();
            while let Some(pair) = map.next_entry()? {
                pairs.push(pair);
            }
            Ok(pairs)
        }
    }
    d.deserialize_map(Pairs(std::marker::PhantomData))
}

/// `x` rounded to `digits` decimals (the precision the figures are worth).
fn round(x: f64, digits: i32) -> f64 {
    let scale = 10f64.powi(digits);
    (x * scale).round() / scale
}

impl Summary {
    pub fn new(args: &Args, results: &[ModeResult], ratios: &[Ratios]) -> Summary {
        Summary {
            seconds: args.seconds,
            warmup: args.warmup,
            latency_seconds: args.latency_seconds,
            rate_pps: args.rate,
            sizes: args.sizes.clone(),
            modes: results
                .iter()
                .map(|r| {
                    let mode = ModeJson {
                        throughput: r.throughput.iter().map(ThroughputJson::from).collect(),
                        latency: r.latency.iter().map(LatencyJson::from).collect(),
                    };
                    (r.fwd.name().to_owned(), mode)
                })
                .collect(),
            ratios: ratios.iter().find(|r| r.fwd == Forwarder::Switchd).map(RatiosJson::from),
            ratios_by_forwarder: ratios
                .iter()
                .map(|r| (r.fwd.name().to_owned(), RatiosJson::from(r)))
                .collect(),
        }
    }

    pub fn to_json(&self) -> serde_json::Result<String> {
        serde_json::to_string(self)
    }
}

impl From<&Throughput> for ThroughputJson {
    fn from(t: &Throughput) -> ThroughputJson {
        ThroughputJson {
            size: t.size,
            sent_pps: t.sent_pps().round() as u64,
            fwd_pps: t.pps().round() as u64,
            fwd_gbps: round(t.gbps(), 4),
            per_second: t.per_second_pps().iter().map(|x| x.round() as u64).collect(),
            sent_window: t.sent_window,
            received_window: t.received_window,
            sent_total: t.sent_total,
            received_total: t.received_total,
            h2_socket_drops: t.h2_socket_drops,
            others_cpu: round(t.others_cpu, 3),
        }
    }
}

impl From<&Latency> for LatencyJson {
    fn from(l: &Latency) -> LatencyJson {
        LatencyJson {
            size: l.size,
            rate_pps: l.rate,
            sent: l.sent,
            received: l.received,
            lost: l.sent - l.received,
            min_us: round(us(l.min), 2),
            p50_us: round(us(l.p50), 2),
            mean_us: round(l.mean / 1000.0, 2),
            p99_us: round(us(l.p99), 2),
            p999_us: round(us(l.p999), 2),
            max_us: round(us(l.max), 2),
            others_cpu: round(l.others_cpu, 3),
        }
    }
}

impl From<&Ratios> for RatiosJson {
    fn from(r: &Ratios) -> RatiosJson {
        let list = |ratios: &[(usize, f64)], target: f64, pass: &dyn Fn(f64) -> bool| {
            ratios
                .iter()
                .map(|&(size, x)| RatioJson { size, ratio: round(x, 4), target, pass: pass(x) })
                .collect()
        };
        RatiosJson {
            pps: list(&r.pps, PPS_TARGET, &|x| x >= PPS_TARGET),
            p99: list(&r.p99, P99_TARGET, &|x| x <= P99_TARGET),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_keep_their_run_order_and_ratios_are_optional() {
        let summary = Summary {
            seconds: 1.0,
            warmup: 0.5,
            latency_seconds: 1.0,
            rate_pps: 1000,
            sizes: vec![64],
            modes: vec![
                ("kernel".into(), ModeJson { throughput: vec![], latency: vec![] }),
                ("floor".into(), ModeJson { throughput: vec![], latency: vec![] }),
            ],
            ratios: None,
            ratios_by_forwarder: vec![(
                "floor".into(),
                RatiosJson {
                    pps: vec![RatioJson { size: 64, ratio: 0.5, target: PPS_TARGET, pass: false }],
                    p99: vec![],
                },
            )],
        };
        let json = summary.to_json().unwrap();
        assert!(json.contains(r#""modes":{"kernel":{"throughput":[],"latency":[]},"floor":"#), "{json}");
        assert!(!json.contains(r#""ratios":"#), "{json}");
        assert!(json.contains(r#""pps":[{"size":64,"ratio":0.5,"target":0.85,"pass":false}]"#), "{json}");
        let back: Summary = serde_json::from_str(&json).unwrap();
        assert_eq!(back, summary, "read back whole, the modes in their run order");
    }
}
