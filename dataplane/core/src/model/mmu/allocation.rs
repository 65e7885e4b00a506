//! [`Allocation`]: what one admitted frame holds, carried by every queued frame.

use super::AllocPool;
use crate::model::config::PortId;

/// Where the cells of one admitted frame went, on both sides; released exactly on dequeue or drop.
///
/// Every queued frame carries one and the packet path moves it several times, so it is kept to three
/// words: the cell count (the same on both sides), the PG, the queue, the partition (both sides are in
/// the frame's partition) and which sides a profile manages packed in one, each side's pool and port in
/// the others (nine separate fields were spilled and stored one by one). Where the cells went at
/// admission (reserved, shared, headroom) is not kept: a release gives back from the top of each level.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub struct Allocation {
    /// The cell count (bits 0 to 31), the PG (32 to 39), the queue (40 to 47), the partition (48 to 55)
    /// and the managed sides ([`Allocation::INGRESS`], [`Allocation::EGRESS`]; 56 to 63).
    head: u64,
    /// The ingress side's pool (bits 0 to 31) and port (32 to 63): [`Allocation::side`].
    ingress: u64,
    /// The egress side's, the same way.
    egress: u64,
}

impl std::fmt::Debug for Allocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Allocation")
            .field("cells", &self.cells())
            .field("ingress_port", &self.ingress_port())
            .field("ingress_pool", &self.ingress_pool())
            .field("egress_port", &self.egress_port())
            .field("egress_pool", &self.egress_pool())
            .field("pg", &self.pg())
            .field("queue", &self.queue())
            .field("partition", &self.partition())
            .field("sides", &self.sides())
            .finish()
    }
}

impl Allocation {
    pub(super) const INGRESS: u8 = 1;
    pub(super) const EGRESS: u8 = 2;
    pub(super) const BOTH: u8 = Self::INGRESS | Self::EGRESS;

    /// An allocation of `cells` that no profile manages (counted nowhere).
    #[inline]
    pub(super) fn unmanaged(cells: u32) -> Allocation {
        Allocation { head: u64::from(cells), ingress: 0, egress: 0 }
    }

    /// One side's word: its pool and its port.
    #[inline(always)]
    pub(super) fn side(pool: AllocPool, port: usize) -> u64 {
        u64::from(pool.0) | u64::from(port as u32) << 32
    }

    #[inline(always)]
    pub(super) fn new(
        cells: u32,
        (pg, queue, partition, sides): (u8, u8, u8, u8),
        ingress: u64,
        egress: u64,
    ) -> Allocation {
        let head = u64::from(cells)
            | u64::from(pg) << 32
            | u64::from(queue) << 40
            | u64::from(partition) << 48
            | u64::from(sides) << 56;
        Allocation { head, ingress, egress }
    }

    /// Cells the frame holds on each managed side.
    #[inline]
    pub fn cells(&self) -> u32 {
        self.head as u32
    }

    #[inline]
    pub(super) fn pg(&self) -> u8 {
        (self.head >> 32) as u8
    }

    #[inline]
    pub(super) fn queue(&self) -> u8 {
        (self.head >> 40) as u8
    }

    #[inline]
    pub(super) fn partition(&self) -> u8 {
        (self.head >> 48) as u8
    }

    #[inline]
    pub(super) fn sides(&self) -> u8 {
        (self.head >> 56) as u8
    }

    #[inline]
    pub(super) fn ingress_port(&self) -> usize {
        (self.ingress >> 32) as usize
    }

    #[inline]
    pub(super) fn ingress_pool(&self) -> AllocPool {
        AllocPool(self.ingress as u32)
    }

    #[inline]
    pub(super) fn egress_port(&self) -> usize {
        (self.egress >> 32) as usize
    }

    #[inline]
    pub(super) fn egress_pool(&self) -> AllocPool {
        AllocPool(self.egress as u32)
    }

    /// The (port, PG) whose cells the frame holds, if a profile manages its ingress PG.
    #[inline]
    pub fn ingress(&self) -> Option<(PortId, u8)> {
        (self.sides() & Self::INGRESS != 0).then(|| (PortId::new(self.ingress_port()), self.pg()))
    }

    /// The (port, queue) whose cells the frame holds, if a profile manages its egress queue.
    #[inline]
    pub fn egress(&self) -> Option<(PortId, u8)> {
        (self.sides() & Self::EGRESS != 0).then(|| (PortId::new(self.egress_port()), self.queue()))
    }

    /// Cells held on the egress queue (0 when no profile manages it).
    #[inline]
    pub fn egress_cells(&self) -> u32 {
        if self.sides() & Self::EGRESS != 0 { self.cells() } else { 0 }
    }
}
