//! The NIC's flows indexed by the instants its scans look for: its timers (`poll_at`), the flows with
//! work due (`handle_timeout`) and, per priority, the flows' transmit readiness (`poll_at`, and the
//! round-robin choice of `poll_transmit`). Each is a tournament tree over the flows ([`MinTree`]): the
//! earliest instant in O(1), one flow changed in O(log n), the first flow from a position on whose instant
//! has come in O(log n). A host of a 128-host all-to-all shuffle has 127 flows and asks these questions
//! several times per visit; up to [`SCAN_FLOWS`] flows a plain scan of the schedules answers them.
//!
//! The trees mirror the flows' [`FlowSchedule`]s and change only with them ([`Nic::set_schedule`]); debug
//! builds check every answer against a plain scan.

use super::Nic;
use super::flow::FlowSchedule;
use crate::time::Instant;

/// Up to this many flows a scan of the schedules is cheaper than the trees' queries (a sender of an incast
/// has one flow): the NIC scans instead.
pub(super) const SCAN_FLOWS: usize = 8;

/// `Instant::MAX` stands for "never" (`None`).
const NEVER: Instant = Instant::MAX;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct MinTree {
    /// Leaves start at `leaves`; node `i` holds the minimum of `2i` and `2i + 1`.
    nodes: Vec<Instant>,
    leaves: usize,
}

impl Default for MinTree {
    fn default() -> Self {
        MinTree::new(0)
    }
}

impl MinTree {
    /// A tree of `n` entries, all "never".
    pub(super) fn new(n: usize) -> MinTree {
        let leaves = n.max(1).next_power_of_two();
        MinTree { nodes: vec![NEVER; 2 * leaves], leaves }
    }

    pub(super) fn set(&mut self, i: usize, at: Option<Instant>) {
        let mut node = self.leaves + i;
        let value = at.unwrap_or(NEVER);
        if self.nodes[node] == value {
            return;
        }
        self.nodes[node] = value;
        while node > 1 {
            node /= 2;
            let min = self.nodes[2 * node].min(self.nodes[2 * node + 1]);
            if self.nodes[node] == min {
                break;
            }
            self.nodes[node] = min;
        }
    }

    #[cfg(test)]
    fn get(&self, i: usize) -> Option<Instant> {
        Some(self.nodes[self.leaves + i]).filter(|&v| v != NEVER)
    }

    /// The earliest instant of all.
    #[cfg(test)]
    fn min(&self) -> Option<Instant> {
        Some(self.nodes[1]).filter(|&v| v != NEVER)
    }

    /// The first entry at or after `from` whose instant is at most `limit`.
    pub(super) fn first_due(&self, from: usize, limit: Instant) -> Option<usize> {
        if from >= self.leaves || self.nodes[1] > limit {
            return None;
        }
        // Walk up from the leaf: at each level, a right sibling of the path (covering entries after `from`)
        // that holds a due entry is where the answer lies; then walk down its leftmost due branch.
        let mut node = self.leaves + from;
        if self.nodes[node] > limit {
            loop {
                if node == 1 {
                    return None;
                }
                if node.is_multiple_of(2) && self.nodes[node + 1] <= limit {
                    node += 1;
                    break;
                }
                node /= 2;
            }
        }
        while node < self.leaves {
            node = if self.nodes[2 * node] <= limit { 2 * node } else { 2 * node + 1 };
        }
        Some(node - self.leaves)
    }
}

/// The trees over a NIC's flows (see the module documentation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct FlowIndex {
    /// [`FlowSchedule::timer_at`].
    pub(super) timers: MinTree,
    /// [`FlowSchedule::timeout_at`] where it is not `timer_at` (a flow that finishes before its next
    /// timer); "never" for the others, whose work is due with their timer. Due work is the union of
    /// this tree's and `timers`' ([`FlowIndex::first_timeout_due`]): a tree of the timeouts themselves
    /// repeated `timers` for nearly every flow, and was updated with it at every ACK.
    early_finishes: MinTree,
    /// Per priority: [`FlowSchedule::ready_at`] of the flows of that priority ("never" for the others).
    pub(super) ready: [MinTree; 8],
    /// The `ready` trees' minima side by side: `poll_at` reads all eight at every visit of the NIC, and
    /// `poll_transmit` those of the priorities not paused; one cache line here, where each tree's root
    /// is a line of its own (in a 128-host fabric, rarely still cached at the NIC's next visit).
    ready_min: [Instant; 8],
    /// The earliest of `ready_min`: what `poll_at` needs while no priority is paused.
    ready_min_all: Instant,
    /// The roots of `ready_until` and `timers` beside `ready_min`, for the same reason: `poll_at` reads
    /// them at every visit.
    ready_until_min: Instant,
    timers_min: Instant,
    /// [`FlowSchedule::ready_until`]: before the earliest of these, every cached `ready_at` holds.
    pub(super) ready_until: MinTree,
}

impl Default for FlowIndex {
    fn default() -> Self {
        FlowIndex::new(&[])
    }
}

impl FlowIndex {
    fn new(schedules: &[FlowSchedule]) -> FlowIndex {
        let n = schedules.len();
        let mut index = FlowIndex {
            timers: MinTree::new(n),
            early_finishes: MinTree::new(n),
            ready: std::array::from_fn(|_| MinTree::new(n)),
            ready_min: [NEVER; 8],
            ready_min_all: NEVER,
            ready_until_min: NEVER,
            timers_min: NEVER,
            ready_until: MinTree::new(n),
        };
        for (i, s) in schedules.iter().enumerate() {
            index.set(i, None, s);
        }
        index
    }

    /// Flow `i`'s schedule changed from `old` (`None`: a new entry) to `s`. A tree whose entry is
    /// unchanged is not visited: each is a few KiB per NIC, seldom cached at the NIC's next visit, and
    /// most changes move one or two of the four instants.
    fn set(&mut self, i: usize, old: Option<&FlowSchedule>, s: &FlowSchedule) {
        let changed = |f: fn(&FlowSchedule) -> Option<Instant>| old.is_none_or(|old| f(old) != f(s));
        let ready_min_before = self.ready_min;
        if let Some(old) = old
            && old.priority != s.priority
        {
            let p = usize::from(old.priority & 7);
            self.ready[p].set(i, None);
            self.ready_min[p] = self.ready[p].nodes[1];
        }
        if changed(|s| s.timer_at) {
            self.timers.set(i, s.timer_at);
            self.timers_min = self.timers.nodes[1];
        }
        let early = |s: &FlowSchedule| Some(s.timeout_at).filter(|&t| t != s.timer_at).flatten();
        if old.is_none_or(|old| early(old) != early(s)) {
            self.early_finishes.set(i, early(s));
        }
        if changed(|s| s.ready_at) || old.is_some_and(|old| old.priority != s.priority) {
            let p = usize::from(s.priority & 7);
            self.ready[p].set(i, s.ready_at);
            self.ready_min[p] = self.ready[p].nodes[1];
        }
        if self.ready_min != ready_min_before {
            self.ready_min_all = self.ready_min.iter().copied().min().unwrap_or(NEVER);
        }
        if changed(|s| Some(s.ready_until)) {
            self.ready_until.set(i, Some(s.ready_until));
            self.ready_until_min = self.ready_until.nodes[1];
        }
    }

    /// The earliest [`FlowSchedule::ready_at`] of the flows of each priority.
    pub(super) fn ready_min(&self) -> impl Iterator<Item = Option<Instant>> + '_ {
        debug_assert!((self.ready.iter().zip(&self.ready_min)).all(|(tree, &min)| tree.nodes[1] == min));
        self.ready_min.iter().map(|&min| Some(min).filter(|&t| t != NEVER))
    }

    /// The earliest ready instant of all flows, each gated by the pause of its priority: the flows of a
    /// priority in `paused` wait until `unpause` (never, when `None`). The minimum of gating each flow's
    /// instant (gating is monotone in it), in one pass over the eight minima.
    /// `unpause` is asked only when a paused priority has a ready flow.
    pub(super) fn ready_min_gated(
        &self,
        paused: u8,
        unpause: impl Fn() -> Option<Instant>,
    ) -> Option<Instant> {
        debug_assert_eq!(self.ready_min_all, self.ready_min.iter().copied().min().unwrap_or(NEVER));
        let (mut open, mut held) = (NEVER, NEVER);
        if paused == 0 {
            open = self.ready_min_all;
        } else {
            for (p, &min) in self.ready_min.iter().enumerate() {
                if paused & (1 << p) != 0 {
                    held = held.min(min);
                } else {
                    open = open.min(min);
                }
            }
        }
        let held = if held == NEVER { None } else { unpause().map(|u| u.max(held)) };
        let open = Some(open).filter(|&t| t != NEVER);
        let gated = match (open, held) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if cfg!(debug_assertions) {
            let gate = |p: usize, r: Instant| {
                if paused & (1 << p) != 0 { unpause().map(|u| u.max(r)) } else { Some(r) }
            };
            let each = self.ready_min().enumerate().filter_map(|(p, min)| min.and_then(|r| gate(p, r))).min();
            debug_assert_eq!(gated, each, "gated readiness");
        }
        gated
    }

    /// The first flow from `from` on whose [`FlowSchedule::timeout_at`] is at most `now`.
    pub(super) fn first_timeout_due(&self, from: usize, now: Instant) -> Option<usize> {
        // `timeout_at` is `timer_at` or, when they differ, the early finish: due when either is.
        match (self.timers.first_due(from, now), self.early_finishes.first_due(from, now)) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The earliest timer of all flows ([`FlowSchedule::timer_at`]).
    pub(super) fn timers_min(&self) -> Option<Instant> {
        debug_assert_eq!(self.timers_min, self.timers.nodes[1]);
        Some(self.timers_min).filter(|&t| t != NEVER)
    }

    /// Do the cached `ready_at`s all hold at `now`?
    pub(super) fn ready_holds(&self, now: Instant) -> bool {
        debug_assert_eq!(self.ready_until_min, self.ready_until.nodes[1]);
        self.ready_until_min == NEVER || now < self.ready_until_min
    }
}

impl Nic {
    /// Replaces flow `i`'s schedule, and its place in the index.
    pub(super) fn set_schedule(&mut self, i: usize, s: FlowSchedule) {
        self.index.set(i, Some(&self.schedules[i]), &s);
        self.schedules[i] = s;
    }

    /// Builds the index afresh (flows were added or removed).
    pub(super) fn rebuild_index(&mut self) {
        self.index = FlowIndex::new(&self.schedules);
        self.by_qp = self.flows.iter().enumerate().map(|(i, f)| (f.src_qp, i)).collect();
        self.by_qp.sort_unstable();
        self.by_id = self.flows.iter().enumerate().map(|(i, f)| (f.cfg.id, i)).collect();
        self.by_id.sort_unstable();
    }

    /// Indexes the flow just added (the last): in place while the trees have room for it, which leaves
    /// them as a rebuild would (the same size, the entries past the last "never"); else rebuilt. Adding
    /// 127 flows one by one rebuilt the trees 127 times (a fifth of a 128-host fabric's set-up).
    pub(super) fn index_added_flow(&mut self) {
        let i = self.flows.len() - 1;
        if i >= self.index.timers.leaves {
            return self.rebuild_index();
        }
        self.index.set(i, None, &self.schedules[i]);
        let qp = self.flows[i].src_qp;
        let at = self.by_qp.partition_point(|&(q, _)| q < qp);
        self.by_qp.insert(at, (qp, i));
        let id = self.flows[i].cfg.id;
        let at = self.by_id.partition_point(|&(d, _)| d < id);
        self.by_id.insert(at, (id, i));
        if cfg!(debug_assertions) {
            let in_place = (self.index.clone(), self.by_qp.clone(), self.by_id.clone());
            self.rebuild_index();
            debug_assert!(
                in_place == (self.index.clone(), self.by_qp.clone(), self.by_id.clone()),
                "flow index built in place"
            );
        }
    }

    /// The flow whose local QP is `qp` (local QPs are unique among a NIC's flows).
    pub(super) fn flow_of_qp(&self, qp: u32) -> Option<usize> {
        // Flows added with `src_qp: 0` take QPs from FIRST_AUTO_QP in order, so flow k has QP
        // FIRST_AUTO_QP + k unless flows were removed or given QPs: then no search (of a sorted list of
        // 2 KiB for 127 flows, a few cache misses an ACK where the flow's own state is needed anyway).
        let direct = (qp.checked_sub(super::FIRST_AUTO_QP))
            .and_then(|k| self.flows.get(k as usize).filter(|f| f.src_qp == qp).map(|_| k as usize));
        let i = direct
            .or_else(|| self.by_qp.binary_search_by_key(&qp, |&(q, _)| q).ok().map(|k| self.by_qp[k].1));
        debug_assert_eq!(i, self.by_qp.binary_search_by_key(&qp, |&(q, _)| q).ok().map(|k| self.by_qp[k].1));
        i
    }

    /// The flow whose id is `id` (ids are unique among a NIC's flows): the simulator reads every flow's
    /// statistics at each sample, 16,256 flows of 127 per host in the 128-host shuffle.
    pub(super) fn flow_of_id(&self, id: u32) -> Option<usize> {
        let i = self.by_id.binary_search_by_key(&id, |&(d, _)| d).ok().map(|k| self.by_id[k].1);
        debug_assert_eq!(i, self.flows.iter().position(|f| f.cfg.id == id));
        i
    }

    /// The first flow in round-robin order from `from` (wrapping) that may send at `now` (its priority
    /// not in `paused`), from the index; `None` when the cached readiness may not hold (the caller scans).
    pub(super) fn next_ready_flow(&self, from: usize, now: Instant, paused: u8) -> Option<Option<usize>> {
        let n = self.flows.len();
        if n <= SCAN_FLOWS || !self.index.ready_holds(now) {
            return None;
        }
        let mut best: Option<(usize, usize)> = None;
        for ((p, tree), min) in self.index.ready.iter().enumerate().zip(self.index.ready_min()) {
            // A tree with no flow ready by `now` is not read.
            if paused & (1 << p) != 0 || min.is_none_or(|t| t > now) {
                continue;
            }
            let found = tree.first_due(from, now).or_else(|| tree.first_due(0, now).filter(|&i| i < from));
            if let Some(i) = found {
                let distance = (i + n - from) % n;
                if best.is_none_or(|(d, _)| distance < d) {
                    best = Some((distance, i));
                }
            }
        }
        Some(best.map(|(_, i)| i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Against a plain scan, after any sequence of changes.
        #[test]
        fn agrees_with_a_scan(
            n in 1usize..40,
            changes in prop::collection::vec((0usize..40, prop::option::of(0u64..50)), 0..80),
            queries in prop::collection::vec((0usize..45, 0u64..60), 1..20),
        ) {
            let mut tree = MinTree::new(n);
            let mut plain = vec![None; n];
            for (i, at) in changes {
                let (i, at) = (i % n, at.map(Instant::from_ns));
                tree.set(i, at);
                plain[i] = at;
                prop_assert_eq!(tree.min(), plain.iter().flatten().copied().min());
                prop_assert_eq!(tree.get(i), at);
            }
            for (from, limit) in queries {
                let limit = Instant::from_ns(limit);
                let expected = (from..n).find(|&i| plain[i].is_some_and(|t| t <= limit));
                prop_assert_eq!(tree.first_due(from, limit), expected, "from {} limit {}", from, limit);
            }
        }
    }
}
