use super::*;
use proptest::prelude::*;

/// The histogram as it was before it stored a window of 32-bit counts: every bucket from 0 up to the
/// highest used, 64-bit. The compact one must answer exactly as this one does.
#[derive(Debug, Clone, Default)]
struct Dense {
    buckets: Vec<u64>,
    count: u64,
    sum: u128,
    min: u64,
    max: u64,
}

impl Dense {
    fn record(&mut self, value: u64) {
        let i = Histogram::index(value);
        if i >= self.buckets.len() {
            self.buckets.resize(i + 1, 0);
        }
        self.buckets[i] += 1;
        if self.count == 0 || value < self.min {
            self.min = value;
        }
        self.max = self.max.max(value);
        self.count += 1;
        self.sum += u128::from(value);
    }

    fn merge(&mut self, other: &Dense) {
        if other.count == 0 {
            return;
        }
        if other.buckets.len() > self.buckets.len() {
            self.buckets.resize(other.buckets.len(), 0);
        }
        for (a, b) in self.buckets.iter_mut().zip(&other.buckets) {
            *a += b;
        }
        self.min = if self.count == 0 { other.min } else { self.min.min(other.min) };
        self.max = self.max.max(other.max);
        self.count += other.count;
        self.sum += other.sum;
    }

    fn since(&self, earlier: &Dense) -> Dense {
        let buckets: Vec<u64> = self
            .buckets
            .iter()
            .enumerate()
            .map(|(i, n)| n.saturating_sub(earlier.buckets.get(i).copied().unwrap_or(0)))
            .collect();
        let count: u64 = buckets.iter().sum();
        if count == 0 {
            return Dense::default();
        }
        let lowest = buckets.iter().position(|&n| n > 0).unwrap_or(0);
        let highest = buckets.iter().rposition(|&n| n > 0).unwrap_or(0);
        let low_edge = if lowest == 0 { 0 } else { Histogram::bucket_high(lowest - 1) + 1 };
        Dense {
            buckets,
            count,
            sum: self.sum.saturating_sub(earlier.sum),
            min: low_edge.clamp(self.min, self.max),
            max: Histogram::bucket_high(highest).clamp(self.min, self.max),
        }
    }

    fn quantile(&self, numerator: u64, denominator: u64) -> Option<u64> {
        if self.count == 0 || denominator == 0 {
            return None;
        }
        let rank = (u128::from(self.count) * u128::from(numerator.min(denominator)))
            .div_ceil(u128::from(denominator))
            .max(1);
        let mut seen = 0u128;
        for (i, &n) in self.buckets.iter().enumerate() {
            seen += u128::from(n);
            if seen >= rank {
                return Some(Histogram::bucket_high(i).clamp(self.min, self.max));
            }
        }
        Some(self.max)
    }

    fn summary(&self) -> LatencySummary {
        let some = self.count > 0;
        LatencySummary {
            count: self.count,
            min_ns: if some { self.min } else { 0 },
            mean_ns: if some { (self.sum / u128::from(self.count)) as u64 } else { 0 },
            p50_ns: self.quantile(50, 100).unwrap_or(0),
            p99_ns: self.quantile(99, 100).unwrap_or(0),
            p999_ns: self.quantile(999, 1000).unwrap_or(0),
            max_ns: if some { self.max } else { 0 },
        }
    }
}

/// Values as latencies come: mostly a band (a base and a spread, as a fabric's queues give), sometimes
/// anywhere in `u64`.
fn values() -> impl Strategy<Value = Vec<u64>> {
    (0u32..40, 0u32..24, prop::collection::vec((any::<u64>(), 0u8..16), 0..300)).prop_map(
        |(base_bits, spread_bits, raw)| {
            let base = 1u64 << base_bits;
            raw.into_iter()
                .map(|(r, kind)| if kind == 0 { r } else { base + r % (1u64 << spread_bits) })
                .collect()
        },
    )
}

fn both(values: &[u64]) -> (Histogram, Dense) {
    let (mut h, mut d) = (Histogram::new(), Dense::default());
    for &v in values {
        h.record(v);
        d.record(v);
    }
    (h, d)
}

fn agree(h: &Histogram, d: &Dense, quantiles: &[(u64, u64)]) -> Result<(), TestCaseError> {
    prop_assert_eq!(h.summary(), d.summary());
    for &(num, den) in quantiles {
        prop_assert_eq!(h.quantile(num, den), d.quantile(num, den), "{}/{}", num, den);
    }
    Ok(())
}

proptest! {
    /// Recording, merging and windows (`since`) give exactly the old histogram's percentiles.
    #[test]
    fn answers_as_the_dense_histogram(
        a in values(),
        b in values(),
        cut in 0usize..300,
        quantiles in prop::collection::vec((0u64..1100, 0u64..1001), 0..8),
    ) {
        let (ha, da) = both(&a);
        agree(&ha, &da, &quantiles)?;
        let (hb, db) = both(&b);
        let (mut hm, mut dm) = (ha.clone(), da.clone());
        hm.merge(&hb);
        dm.merge(&db);
        agree(&hm, &dm, &quantiles)?;
        // A window from a prefix, and from an unrelated histogram (saturating).
        let cut = cut.min(a.len());
        let (hp, dp) = both(&a[..cut]);
        agree(&ha.since(&hp), &da.since(&dp), &quantiles)?;
        agree(&ha.since(&hb), &da.since(&db), &quantiles)?;
        // Merging into an empty one, and a window merged back.
        let mut he = Histogram::new();
        let mut de = Dense::default();
        he.merge(&ha.since(&hp));
        de.merge(&da.since(&dp));
        he.merge(&hb);
        de.merge(&db);
        agree(&he, &de, &quantiles)?;
    }
}

#[test]
fn exact_below_256() {
    let mut h = Histogram::new();
    for v in 1..=200 {
        h.record(v);
    }
    assert_eq!(h.quantile(50, 100), Some(100));
    assert_eq!(h.quantile(99, 100), Some(198));
    assert_eq!(h.quantile(999, 1000), Some(200));
    assert_eq!((h.min(), h.max(), h.mean()), (Some(1), Some(200), Some(100)));
}

#[test]
fn percentiles_of_a_known_set_within_resolution() {
    // 1..=100_000 ns: the true p50/p99/p99.9 are 50_000, 99_000, 99_900.
    let mut h = Histogram::new();
    for v in 1..=100_000u64 {
        h.record(v);
    }
    for (num, den, exact) in [(50, 100, 50_000u64), (99, 100, 99_000), (999, 1000, 99_900)] {
        let q = h.quantile(num, den).unwrap();
        assert!(q >= exact && q <= exact + exact / 128, "{num}/{den}: {q} vs {exact}");
    }
    let s = h.summary();
    assert_eq!((s.count, s.min_ns, s.max_ns, s.mean_ns), (100_000, 1, 100_000, 50_000));
}

#[test]
fn skewed_set_and_tail() {
    // 990 values of 1 µs and 10 of 1 ms: p50 = p99 = 1 µs (bucket edge), p99.9 = 1 ms.
    let mut h = Histogram::new();
    for _ in 0..990 {
        h.record(1_000);
    }
    for _ in 0..10 {
        h.record(1_000_000);
    }
    let s = h.summary();
    assert!((1_000..=1_007).contains(&s.p50_ns), "{s:?}");
    assert!((1_000..=1_007).contains(&s.p99_ns), "{s:?}");
    assert_eq!(s.p999_ns, 1_000_000, "clamped to the maximum");
}

#[test]
fn bucket_edges_are_consistent() {
    for v in [0u64, 1, 255, 256, 257, 511, 512, 1000, 123_456_789, u64::MAX / 3, u64::MAX] {
        let i = Histogram::index(v);
        assert!(Histogram::bucket_high(i) >= v, "{v}");
        if i > 0 {
            assert!(Histogram::bucket_high(i - 1) < v, "{v}");
        }
        let high = Histogram::bucket_high(i);
        assert!(high - v <= v / 128, "{v}: bucket too wide");
    }
    assert_eq!(Histogram::index(u64::MAX), BUCKETS - 1);
}

#[test]
fn since_keeps_only_the_later_values() {
    // 100 values of 1 µs, then 10 of 300 µs: since the copy taken in between, only the 10 remain.
    let mut h = Histogram::new();
    for _ in 0..100 {
        h.record(1_000);
    }
    let earlier = h.clone();
    for _ in 0..10 {
        h.record(300_000);
    }
    let later = h.since(&earlier);
    let s = later.summary();
    assert_eq!((s.count, s.mean_ns), (10, 300_000));
    assert!((300_000 - 300_000 / 128..=300_000).contains(&s.min_ns), "{s:?}");
    assert_eq!((s.p50_ns, s.max_ns), (300_000, 300_000), "clamped to the maximum seen");
    assert_eq!(h.since(&h).summary(), LatencySummary::default(), "nothing since itself");
    assert_eq!(h.since(&Histogram::new()).summary(), h.summary(), "everything since empty");
    assert_eq!(h.since(&Histogram::new()), h, "the same values, whatever the window");
}

#[test]
fn merge_and_empty() {
    let mut a = Histogram::new();
    assert_eq!(a.summary(), LatencySummary::default());
    let mut b = Histogram::new();
    b.record(5);
    b.record(7);
    a.merge(&b);
    a.record(3);
    assert_eq!((a.count(), a.min(), a.max()), (3, Some(3), Some(7)));
}

#[test]
fn a_bucket_past_32_bits_keeps_counting() {
    // 2^34 values of 1 µs (by doubling merges) and one of 1 ms: every count exact past u32::MAX.
    let mut h = Histogram::new();
    h.record(1_000);
    for _ in 0..34 {
        let copy = h.clone();
        h.merge(&copy);
    }
    h.record(1_000_000);
    let ones = 1u64 << 34;
    assert_eq!(h.count(), ones + 1);
    assert_eq!(h.mean(), Some(((u128::from(ones) * 1_000 + 1_000_000) / u128::from(ones + 1)) as u64));
    let bucket_of_1us = Histogram::bucket_high(Histogram::index(1_000));
    assert_eq!(h.quantile(ones, ones + 1), Some(bucket_of_1us), "the last of the 1 µs values");
    assert_eq!(h.quantile(1, 1), Some(1_000_000));
    assert!(matches!(h.counts, Counts::Wide(_)));
    let mut earlier = Histogram::new();
    earlier.record(1_000);
    assert_eq!(h.since(&earlier).count(), ones, "a window of a wide histogram");
}

#[test]
fn a_band_of_latencies_takes_a_window() {
    // 10,000 packet latencies between 5 µs and 500 µs (a loaded fabric's band): the counts take the
    // window's buckets at 4 bytes, with at most a quarter of room to grow on either side, not every
    // bucket from 0 at 8 bytes.
    let mut h = Histogram::new();
    let mut x = 12_345u64;
    for _ in 0..10_000 {
        x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        h.record(5_000 + (x >> 33) % 495_000);
    }
    let window = Histogram::index(500_000) - Histogram::index(5_000) + 1;
    let dense_bytes = (Histogram::index(500_000) + 1) * 8;
    assert!(
        h.heap_bytes() <= window * 4 * 3 / 2 + 2 * 4 * MIN_GROWTH,
        "{} for {window} buckets",
        h.heap_bytes()
    );
    assert!(h.heap_bytes() * 2 < dense_bytes, "{} vs {dense_bytes}", h.heap_bytes());
}
