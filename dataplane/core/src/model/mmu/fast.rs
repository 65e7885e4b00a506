//! The packet path's common case, decided without plans: a frame whose PG and queue both have room for
//! it in their reserved space (or that neither side manages).
//!
//! Such a frame takes reserved cells only, so it moves no pool, no port cap, no shared or headroom
//! watermark and no PG's place in its pool's raisable set; its release gives back reserved cells only. What
//! is left is the PG's XOFF check (its shared limit may already be reached when the pool is full) and the
//! two levels. Everything else goes through the full admission and release of `mmu.rs`. Debug builds
//! compare each answer with the full planning.

use super::{Admitted, Allocation, EgressPlan, IngressPlan, MAX_PARTITIONS, Mmu, QueueWred, WredHint, sub};
use crate::model::config::PortId;

impl Mmu {
    /// Admits a frame of `cells` that fits in the reserved space of both its (port, PG) and its (port,
    /// queue), or that neither side manages: the allocation, whether the PG newly asserted XOFF, and
    /// whether WRED passes it below its minimum (from the queue's level before the frame, read here).
    /// `None` when the full admission must decide (a side without room in its reserve, a PG in XOFF, a
    /// side managed alone, Spectrum's layout): [`Mmu::admit_slow`]. The packet path calls the two apart,
    /// to keep this answer out of the full admission's `Result` (whose layout cost a dozen instructions of
    /// packing).
    #[inline]
    pub fn admit_fast(
        &mut self,
        cells: u32,
        port: PortId,
        pg: u8,
        out: PortId,
        queue: u8,
    ) -> Option<Admitted> {
        let c = u64::from(cells);
        let (pg, queue) = (pg & 7, queue & 7);
        let (from, to) = (self.ports.get(port.index())?, self.ports.get(out.index())?);
        let (g, q) = (&from.pgs[usize::from(pg)], &to.queues[usize::from(queue)]);
        let (Some(gp), Some(qp)) = (&g.profile, &q.profile) else {
            // Neither side managed: admitted without limits and counted nowhere (what the full admission
            // concludes). One side managed alone: the full admission.
            return (g.profile.is_none() && q.profile.is_none()).then(|| Admitted {
                alloc: Allocation::unmanaged(cells),
                xoff: false,
                wred: WredHint::Unknown,
            });
        };
        // Spectrum's layout takes the shared space first, and a profile whose zero-limit point is not
        // exact is left to the full admission: their `fast_reserve_end` is 0. A PG in XOFF has its XON
        // threshold to refresh; one holding shared or headroom cells is left to the full admission too
        // (its reserve is full but after a reconfiguration).
        if g.xoff
            || (g.shared_used | g.headroom_used) != 0
            || g.reserved_used + c >= gp.fast_reserve_end
            || q.reserved_used + c > qp.reserved
        {
            return None;
        }
        debug_assert!(!self.pooled_reserve, "the fast admission under Spectrum's layout");
        let partition = from.in_part | to.out_part;
        debug_assert_eq!(partition, self.partition(Some(port), out), "partition of {port:?} to {out:?}");
        // The XOFF check of `xoff_due` after the take: the frame changes neither the PG's shared and
        // headroom usage (both 0) nor the pool, so it reads the same before it: the PG is at its XOFF
        // point when its limit is 0.
        let xoff = g.lossless
            && self.pools[gp.pool].shared_used[usize::from(partition) % MAX_PARTITIONS] >= gp.zero_limit_from;
        debug_assert_eq!(
            xoff,
            g.lossless && g.shared_used >= self.limit(gp.threshold, gp.pool, partition),
            "the XOFF check of {port:?} PG {pg}"
        );
        if cfg!(debug_assertions) {
            let ingress = self.plan_ingress(c, port, g, gp, partition);
            assert!(
                matches!(ingress, Ok(IngressPlan { regions, .. }) if regions == (c, 0, 0)),
                "ingress plan {ingress:?} for a frame in the reserve"
            );
            let egress = self.plan_egress(c, out, q, qp, partition);
            assert!(
                matches!(egress, Ok(EgressPlan { regions, .. }) if regions == (c, 0)),
                "egress plan {egress:?} for a frame in the reserve"
            );
        }
        debug_assert_eq!(
            (g.alloc_side, q.alloc_side),
            (Allocation::side(gp.alloc_pool, port.index()), Allocation::side(qp.alloc_pool, out.index()))
        );
        let alloc =
            Allocation::new(cells, (pg, queue, partition, Allocation::BOTH), g.alloc_side, q.alloc_side);
        let g = &mut self.ports[port.index()].pgs[usize::from(pg)];
        g.reserved_used += c;
        g.partition = partition;
        let q = &mut self.ports[out.index()].queues[usize::from(queue)];
        // WRED compares the queue's length before the frame (its cells, reserved and shared).
        let ahead_cells = q.reserved_used + q.shared_used;
        let wred = match q.wred {
            QueueWred::Off => WredHint::Off,
            QueueWred::Instant { pass_below_cells } if ahead_cells < pass_below_cells => {
                q.wred_sample = ahead_cells + 1;
                WredHint::Pass
            }
            _ => WredHint::Unknown,
        };
        q.reserved_used += c;
        q.partition = partition;
        if xoff {
            self.enter_xoff(port, pg);
        }
        self.debug_check_pg_index(port, pg);
        Some(Admitted { alloc, xoff, wred })
    }

    /// The queue's length in bytes before the last frame that [`Mmu::admit`] passed below WRED's minimum
    /// ([`WredHint::Pass`]) since the last call, if any: WRED's average with weight 0, for the switch to
    /// fold into its WRED state before it reads it.
    #[inline]
    pub fn take_wred_sample(&mut self, out: PortId, queue: u8) -> Option<u64> {
        let q = &mut self.ports.get_mut(out.index())?.queues[usize::from(queue & 7)];
        let sample = std::mem::take(&mut q.wred_sample);
        (sample != 0).then(|| (sample - 1) * self.cell_bytes)
    }

    /// [`Mmu::take_wred_sample`] without taking it (debug checks).
    pub fn peek_wred_sample(&self, out: PortId, queue: u8) -> Option<u64> {
        let sample = self.ports.get(out.index())?.queues[usize::from(queue & 7)].wred_sample;
        (sample != 0).then(|| (sample - 1) * self.cell_bytes)
    }

    /// Releases an allocation of both sides whose PG and queue hold nothing above their reserve (so the
    /// release from the top takes reserved cells only) and whose PG is not in XOFF. Returns whether it
    /// did; otherwise nothing changed and the full release must.
    #[inline(always)]
    pub(super) fn release_reserved(&mut self, alloc: &Allocation) -> bool {
        let c = u64::from(alloc.cells());
        let (pg, queue) = (usize::from(alloc.pg() & 7), usize::from(alloc.queue() & 7));
        let (from, to) = (alloc.ingress_port(), alloc.egress_port());
        // One bounds check for both ports.
        if from.max(to) >= self.ports.len() {
            return false;
        }
        let (f, t) = (&self.ports[from], &self.ports[to]);
        let (g, q) = (&f.pgs[pg], &t.queues[queue]);
        // One test of everything that sends the release the long way (not short-circuited: each is a
        // load, and they are rarely set).
        if self.pooled_reserve | g.xoff | (g.headroom_used | g.shared_used | q.shared_used != 0) {
            return false;
        }
        sub(&mut self.ports[from].pgs[pg].reserved_used, c);
        sub(&mut self.ports[to].queues[queue].reserved_used, c);
        self.debug_check_pg_index(PortId::new(from), alloc.pg());
        true
    }
}
