//! The packet path's common case, decided without plans: a frame whose PG and queue both have room for
//! it in their reserved space (or that neither side manages).
//!
//! Such a frame takes reserved cells only, so it moves no pool, no port cap, no shared or headroom
//! watermark and no PG's place in its pool's raisable set; its release gives back reserved cells only. What
//! is left is the PG's XOFF check (its shared limit may already be reached when the pool is full) and the
//! two levels. Everything else goes through the full admission and release of `mmu.rs`. Debug builds
//! compare each answer with the full planning.

use super::{Allocation, EgressPlan, IngressPlan, MAX_PARTITIONS, Mmu, sub};
use crate::model::config::PortId;

impl Mmu {
    /// Admits a frame of `cells` that fits in the reserved space of both its (port, PG) and its (port,
    /// queue), or that neither side manages: the allocation and whether the PG newly asserted XOFF. `None`
    /// when the full admission must decide (a side without room in its reserve, a PG in XOFF, a side
    /// managed alone, Spectrum's layout).
    #[inline]
    pub(super) fn admit_reserved(
        &mut self,
        cells: u32,
        port: PortId,
        pg: u8,
        out: PortId,
        queue: u8,
    ) -> Option<(Allocation, bool)> {
        let c = u64::from(cells);
        let (pg, queue) = (pg & 7, queue & 7);
        let (from, to) = (self.ports.get(port.index())?, self.ports.get(out.index())?);
        let (g, q) = (&from.pgs[usize::from(pg)], &to.queues[usize::from(queue)]);
        let (Some(gp), Some(qp)) = (&g.profile, &q.profile) else {
            // Neither side managed: admitted without limits and counted nowhere (what the full admission
            // concludes). One side managed alone: the full admission.
            return (g.profile.is_none() && q.profile.is_none())
                .then(|| (Allocation { cells, ..Allocation::default() }, false));
        };
        // Spectrum's layout takes the shared space first; a PG in XOFF has its XON threshold to refresh.
        if self.pooled_reserve
            || g.xoff
            || g.reserved_used + c > gp.reserved
            || q.reserved_used + c > qp.reserved
        {
            return None;
        }
        let partition = if self.personality.partitions() == 1 {
            0
        } else {
            self.personality.partition(from.pipe, to.pipe).min(MAX_PARTITIONS - 1) as u8
        };
        debug_assert_eq!(partition, self.partition(Some(port), out), "partition of {port:?} to {out:?}");
        // The XOFF check of `xoff_due` after the take: the frame changes neither the PG's shared and
        // headroom usage nor the pool, so it reads the same before it.
        let xoff = g.lossless
            && (g.headroom_used > 0 || g.shared_used >= self.limit(gp.threshold, gp.pool, partition));
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
        let alloc = Allocation {
            cells,
            ingress_port: port.index() as u32,
            ingress_pool: gp.alloc_pool,
            egress_port: out.index() as u32,
            egress_pool: qp.alloc_pool,
            pg,
            queue,
            partition,
            sides: Allocation::BOTH,
        };
        let g = &mut self.ports[port.index()].pgs[usize::from(pg)];
        g.reserved_used += c;
        g.partition = partition;
        let q = &mut self.ports[out.index()].queues[usize::from(queue)];
        q.reserved_used += c;
        q.partition = partition;
        if xoff {
            self.enter_xoff(port, pg);
        }
        self.debug_check_pg_index(port, pg);
        Some((alloc, xoff))
    }

    /// Releases an allocation of both sides whose PG and queue hold nothing above their reserve (so the
    /// release from the top takes reserved cells only) and whose PG is not in XOFF. Returns whether it
    /// did; otherwise nothing changed and the full release must.
    #[inline]
    pub(super) fn release_reserved(&mut self, alloc: &Allocation) -> bool {
        let c = u64::from(alloc.cells);
        let (pg, queue) = (usize::from(alloc.pg & 7), usize::from(alloc.queue & 7));
        let (from, to) = (alloc.ingress_port as usize, alloc.egress_port as usize);
        if self.pooled_reserve || from >= self.ports.len() || to >= self.ports.len() {
            return false;
        }
        let g = &self.ports[from].pgs[pg];
        if g.xoff
            || g.headroom_used != 0
            || g.shared_used != 0
            || self.ports[to].queues[queue].shared_used != 0
        {
            return false;
        }
        sub(&mut self.ports[from].pgs[pg].reserved_used, c);
        sub(&mut self.ports[to].queues[queue].reserved_used, c);
        self.debug_check_pg_index(PortId::new(from), alloc.pg);
        true
    }
}
