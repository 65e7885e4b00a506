//! The bounded-memory latency histogram behind the NIC's percentiles (receivers, flows, probes).
//!
//! Its buckets are log-linear (below). A simulated fabric keeps three of them per pair of hosts (a
//! receiving QP's packet and message latencies, the sender's message completion): 48,768 in the 128-host
//! Clos shuffle of `docs/simulator.md`. Their values sit in a narrow band (a few µs to a few hundred
//! µs), so a histogram stores only the window of buckets between the lowest and highest it has seen, in
//! 32-bit counts until a bucket needs more: a few KiB, where a vector from bucket 0 with 64-bit counts would
//! take up to 30 KiB for the same buckets and so the same percentiles.

use super::stats::LatencySummary;

/// Values below this are counted exactly (one bucket per nanosecond).
const LINEAR_LIMIT: u64 = 256;
/// Buckets per power of two above [`LINEAR_LIMIT`]: a bucket is at most 1/128 of its values wide.
const SUB_BUCKETS: u64 = 128;
const SUB_BITS: u32 = 7;
const LINEAR_BITS: u32 = 8;
/// Buckets covering all of `u64`.
const BUCKETS: usize = 7424;
/// Buckets a window grows by at least when a value falls outside it (one cache line of 32-bit counts),
/// so that a spreading distribution reallocates a few times, not at every new extreme.
const MIN_GROWTH: usize = 16;

/// A log-linear histogram of nanosecond values with bounded memory.
///
/// Values below 256 ns are exact; above, every power of two is split into 128 equal buckets, so a
/// bucket spans at most 1/128 (0.78 %) of its values. All of `u64` fits in 7424 buckets; only the window
/// from the lowest to the highest bucket used is stored (with some room to grow), in 32-bit counts until
/// one would overflow (then all become 64-bit). A percentile is reported as the upper edge of the bucket
/// holding it (clamped to the largest value seen): never below the true value, at most 0.78 % above.
/// Count, sum, minimum and maximum are exact.
#[derive(Debug, Clone, Default)]
pub struct Histogram {
    /// The bucket of `counts`' first entry: bucket `first + j` holds `counts[j]` values, buckets outside
    /// the window none.
    first: u32,
    counts: Counts,
    count: u64,
    sum: u128,
    min: u64,
    max: u64,
}

/// The counts of a window of buckets.
#[derive(Debug, Clone)]
enum Counts {
    /// Every count fits 32 bits: always in practice (a bucket of one QP needs 2^32 packets to outgrow it).
    Narrow(Vec<u32>),
    Wide(Vec<u64>),
}

impl Default for Counts {
    fn default() -> Self {
        Counts::Narrow(Vec::new())
    }
}

impl Counts {
    fn len(&self) -> usize {
        match self {
            Counts::Narrow(v) => v.len(),
            Counts::Wide(v) => v.len(),
        }
    }

    fn get(&self, j: usize) -> u64 {
        match self {
            Counts::Narrow(v) => u64::from(v[j]),
            Counts::Wide(v) => v[j],
        }
    }

    /// Adds `n` to entry `j`, widening every count first if it would not fit 32 bits.
    #[inline]
    fn add(&mut self, j: usize, n: u64) {
        if let Counts::Narrow(v) = self {
            if let Some(sum) = u32::try_from(n).ok().and_then(|n| v[j].checked_add(n)) {
                v[j] = sum;
                return;
            }
            let wide = v.iter().map(|&c| u64::from(c)).collect();
            *self = Counts::Wide(wide);
        }
        if let Counts::Wide(v) = self {
            v[j] += n;
        }
    }

    /// The window extended by `below` zero entries in front and to `len` entries in all.
    fn regrow(&mut self, below: usize, len: usize) {
        fn grow<T: Copy + Default>(v: &mut Vec<T>, below: usize, len: usize) {
            if below == 0 {
                // Only the top grows: in place when the allocator can.
                v.reserve_exact(len - v.len());
                v.resize(len, T::default());
            } else {
                let mut new = Vec::with_capacity(len);
                new.resize(below, T::default());
                new.extend_from_slice(v);
                new.resize(len, T::default());
                *v = new;
            }
        }
        match self {
            Counts::Narrow(v) => grow(v, below, len),
            Counts::Wide(v) => grow(v, below, len),
        }
    }

    /// Counts from `values`, 32-bit if they all fit.
    fn from_values(values: Vec<u64>) -> Counts {
        if values.iter().all(|&n| n <= u64::from(u32::MAX)) {
            Counts::Narrow(values.into_iter().map(|n| n as u32).collect())
        } else {
            Counts::Wide(values)
        }
    }
}

/// For each of `ranks` (nondecreasing, each at least 1), the first entry of `counts` where their running
/// sum reaches it (an empty entry never is the first to reach a rank); `None` where none does.
fn first_reaching<T: Copy + Into<u64>, const N: usize>(counts: &[T], ranks: [u64; N]) -> [Option<usize>; N] {
    let mut reached = [None; N];
    let (mut k, mut seen) = (0, 0u64);
    for (j, &n) in counts.iter().enumerate() {
        seen += n.into();
        while k < N && seen >= ranks[k] {
            reached[k] = Some(j);
            k += 1;
        }
        if k == N {
            break;
        }
    }
    reached
}

impl Histogram {
    pub fn new() -> Histogram {
        Histogram::default()
    }

    fn index(value: u64) -> usize {
        if value < LINEAR_LIMIT {
            return value as usize;
        }
        let exponent = 63 - value.leading_zeros(); // ≥ 8
        let mantissa = value >> (exponent - SUB_BITS); // in [128, 256)
        (LINEAR_LIMIT + u64::from(exponent - LINEAR_BITS) * SUB_BUCKETS + (mantissa - SUB_BUCKETS)) as usize
    }

    /// The largest value that falls into bucket `index`.
    fn bucket_high(index: usize) -> u64 {
        let index = index as u64;
        if index < LINEAR_LIMIT {
            return index;
        }
        let exponent = LINEAR_BITS as u64 + (index - LINEAR_LIMIT) / SUB_BUCKETS;
        let mantissa = SUB_BUCKETS + (index - LINEAR_LIMIT) % SUB_BUCKETS;
        let width_bits = exponent - u64::from(SUB_BITS);
        let low = mantissa << width_bits;
        low + ((1u64 << width_bits) - 1)
    }

    /// The first bucket past the window.
    fn end(&self) -> usize {
        self.first as usize + self.counts.len()
    }

    /// Values in bucket `i` (any bucket).
    fn bucket(&self, i: usize) -> u64 {
        let first = self.first as usize;
        if i >= first && i < self.end() { self.counts.get(i - first) } else { 0 }
    }

    /// The buckets holding values, as (bucket, count), lowest first.
    fn used(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        let first = self.first as usize;
        (0..self.counts.len()).map(move |j| (first + j, self.counts.get(j))).filter(|&(_, n)| n > 0)
    }

    /// Makes the window cover buckets `low..=high`, with room to grow on the side that grew.
    fn cover(&mut self, low: usize, high: usize) {
        let len = self.counts.len();
        if len == 0 {
            self.first = low as u32;
            self.counts.regrow(0, high - low + 1);
            return;
        }
        let (first, end) = (self.first as usize, self.end());
        if low >= first && high < end {
            return;
        }
        let growth = (len / 4).max(MIN_GROWTH);
        let new_first = if low < first { low.saturating_sub(growth) } else { first };
        let new_end = if high >= end { (high + 1 + growth).min(BUCKETS) } else { end };
        self.counts.regrow(first - new_first, new_end - new_first);
        self.first = new_first as u32;
    }

    pub fn record(&mut self, value: u64) {
        let i = Self::index(value);
        let first = self.first as usize;
        if i < first || i >= self.end() {
            self.cover(i, i);
        }
        self.counts.add(i - self.first as usize, 1);
        if self.count == 0 || value < self.min {
            self.min = value;
        }
        self.max = self.max.max(value);
        self.count += 1;
        self.sum += u128::from(value);
    }

    /// Adds every value of `other` (e.g. to aggregate several QPs).
    pub fn merge(&mut self, other: &Histogram) {
        if other.count == 0 {
            return;
        }
        if let (Some((low, _)), Some((high, _))) = (other.used().next(), other.used().last()) {
            self.cover(low, high);
        }
        for (i, n) in other.used() {
            self.counts.add(i - self.first as usize, n);
        }
        self.min = if self.count == 0 { other.min } else { self.min.min(other.min) };
        self.max = self.max.max(other.max);
        self.count += other.count;
        self.sum += other.sum;
    }

    /// The values recorded since `earlier`, an earlier copy of this histogram (e.g. to take percentiles
    /// over a time window from a cumulative histogram). Counts and the sum are exact; the minimum and
    /// maximum are the edges of the lowest and highest buckets left (clamped to this histogram's own),
    /// so within a bucket's resolution like the percentiles. An `earlier` that is not a prefix of this
    /// one (a bucket with more values) saturates at zero.
    pub fn since(&self, earlier: &Histogram) -> Histogram {
        let left: Vec<(usize, u64)> = self
            .used()
            .map(|(i, n)| (i, n.saturating_sub(earlier.bucket(i))))
            .filter(|&(_, n)| n > 0)
            .collect();
        let (Some(&(lowest, _)), Some(&(highest, _))) = (left.first(), left.last()) else {
            return Histogram::default();
        };
        let mut values = vec![0; highest - lowest + 1];
        for &(i, n) in &left {
            values[i - lowest] = n;
        }
        let low_edge = if lowest == 0 { 0 } else { Self::bucket_high(lowest - 1) + 1 };
        Histogram {
            first: lowest as u32,
            count: values.iter().sum(),
            counts: Counts::from_values(values),
            sum: self.sum.saturating_sub(earlier.sum),
            min: low_edge.clamp(self.min, self.max),
            max: Self::bucket_high(highest).clamp(self.min, self.max),
        }
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    pub fn min(&self) -> Option<u64> {
        (self.count > 0).then_some(self.min)
    }

    pub fn max(&self) -> Option<u64> {
        (self.count > 0).then_some(self.max)
    }

    /// Arithmetic mean, rounded down.
    pub fn mean(&self) -> Option<u64> {
        (self.count > 0).then(|| (self.sum / u128::from(self.count)) as u64)
    }

    /// The `numerator/denominator` quantile: the smallest recorded value v such that at least
    /// `ceil(count × numerator / denominator)` values are ≤ v, up to the bucket resolution (see the type).
    /// `None` when empty.
    pub fn quantile(&self, numerator: u64, denominator: u64) -> Option<u64> {
        if denominator == 0 {
            return None;
        }
        let [q] = self.quantiles([(numerator, denominator)]);
        q
    }

    /// Several [`Histogram::quantile`]s, `numerator / denominator` each (nonzero denominators, in
    /// increasing order), in one walk of the buckets: a simulation's sampler summarises every flow's
    /// histogram at every sample.
    fn quantiles<const N: usize>(&self, fractions: [(u64, u64); N]) -> [Option<u64>; N] {
        if self.count == 0 {
            return [None; N];
        }
        // Each rank is at most `count`, so the running sum fits 64 bits.
        let ranks = fractions.map(|(numerator, denominator)| {
            (u128::from(self.count) * u128::from(numerator.min(denominator)))
                .div_ceil(u128::from(denominator))
                .max(1) as u64
        });
        debug_assert!(ranks.windows(2).all(|w| w[0] <= w[1]), "quantiles in increasing order");
        let walked = match &self.counts {
            Counts::Narrow(v) => first_reaching(v, ranks),
            Counts::Wide(v) => first_reaching(v, ranks),
        };
        let found = walked.map(|j| {
            Some(match j {
                Some(j) => Self::bucket_high(self.first as usize + j).clamp(self.min, self.max),
                None => self.max,
            })
        });
        if cfg!(debug_assertions) {
            for (k, &(numerator, denominator)) in fractions.iter().enumerate() {
                debug_assert_eq!(found[k], self.quantile_by_scan(numerator, denominator));
            }
        }
        found
    }

    /// [`Histogram::quantile`] by a walk of the used buckets (debug builds check the one-pass walk with it).
    fn quantile_by_scan(&self, numerator: u64, denominator: u64) -> Option<u64> {
        if self.count == 0 || denominator == 0 {
            return None;
        }
        let rank = (u128::from(self.count) * u128::from(numerator.min(denominator)))
            .div_ceil(u128::from(denominator))
            .max(1);
        let mut seen = 0u128;
        for (i, n) in self.used() {
            seen += u128::from(n);
            if seen >= rank {
                return Some(Self::bucket_high(i).clamp(self.min, self.max));
            }
        }
        Some(self.max)
    }

    pub fn summary(&self) -> LatencySummary {
        let [p50, p99, p999] = self.quantiles([(50, 100), (99, 100), (999, 1000)]);
        LatencySummary {
            count: self.count,
            min_ns: self.min().unwrap_or(0),
            mean_ns: self.mean().unwrap_or(0),
            p50_ns: p50.unwrap_or(0),
            p99_ns: p99.unwrap_or(0),
            p999_ns: p999.unwrap_or(0),
            max_ns: self.max().unwrap_or(0),
        }
    }

    /// Bytes the bucket counts take on the heap (for tests and measurements).
    pub fn heap_bytes(&self) -> usize {
        match &self.counts {
            Counts::Narrow(v) => v.capacity() * 4,
            Counts::Wide(v) => v.capacity() * 8,
        }
    }
}

/// Two histograms are equal when they hold the same values in the same buckets, however they store them.
impl PartialEq for Histogram {
    fn eq(&self, other: &Self) -> bool {
        (self.count, self.sum, self.min, self.max) == (other.count, other.sum, other.min, other.max)
            && self.used().eq(other.used())
    }
}

impl Eq for Histogram {}

#[cfg(test)]
#[path = "histogram_tests.rs"]
mod tests;
