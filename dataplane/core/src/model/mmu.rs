//! The shared-buffer MMU: cell accounting of ingress priority groups and egress queues against buffer
//! pools, with SAI's thresholds, headroom and PFC trigger points (`docs/mmu.md`), as the ASIC's personality
//! reads them (`docs/asic-personalities.md`).
//!
//! Everything is counted in cells: a frame of `len` bytes occupies `ceil(len / cell_size)` cells, on the
//! ingress side (port, PG) and on the egress side (port, queue). Profile and pool sizes given in bytes are
//! rounded up to whole cells.
//!
//! **Ingress admission** of `c` cells on a PG whose profile lives in pool `P`:
//! 1. the PG's reserved `size` first (what is left of it);
//! 2. the rest goes to `P`'s shared space if it fits under the PG's shared limit and in the pool (and under
//!    the port's cap from `BUFFER_PORT_INGRESS_PROFILE_LIST`, if any). The limit is `static_th`, or for
//!    `dynamic_th` n: `2^n × (P.size − P.shared_used)` — alpha times the pool's free shared space;
//! 3. otherwise, for a lossless PG, headroom: private (`xoff` cells per PG) when the pool has no `xoff`, or
//!    the pool's shared headroom pool (`P.xoff`) with the profile's `xoff` as the per-PG cap;
//! 4. otherwise the frame is dropped (ingress drop, PG drop counter). Lossy PGs have no headroom.
//!
//! A lossless PG asserts XOFF when a frame goes to headroom or its shared usage reaches the limit (the
//! limit evaluated after the admission), and releases it (XON) when it has no headroom in use and its total
//! usage is at most `max(xon, size + limit − xon_offset)` (SAI's `XON_TH` / `XON_OFFSET_TH`).
//!
//! **Egress admission** on a queue: reserved `size`, then the egress pool's shared space under the queue's
//! limit (and the port's cap). Past that a lossy queue tail-drops; a lossless queue is still admitted while
//! the pool has room (lossless egress profiles are meant never to drop), else dropped.
//!
//! A PG's or queue's occupancy is one level: reserved fills first, shared above it, headroom on top. A
//! release gives back cells from the top (headroom first, then shared, then reserved), as a real MMU's single
//! counter per PG does, so XON follows the PG's level whatever order its frames leave in. Every admission
//! returns an [`Allocation`] of exactly the cells taken on each side, and its release gives back exactly
//! those, so accounting returns to zero after a drain whatever the configuration did in between. PGs and
//! queues without a profile are not managed: their frames are admitted without limits and not counted in
//! any pool.
//!
//! **Partitions.** An ASIC whose buffer is split (Tomahawk's four XPEs; see `docs/asic-personalities.md`)
//! divides every pool and shared headroom pool evenly among its partitions. A frame is held in the
//! partition of its (ingress pipe, egress pipe), and its PG's and queue's dynamic limits are alpha times
//! the free space of that partition. PG and queue occupancy stays one level per PG and queue (a PG
//! feeding egress pipes in two partitions is counted once, against the partition of its latest frame).

use super::config::PortId;
use super::config::asic::cells;

mod allocation;
mod configure;
mod fast;
mod observe;
#[cfg(test)]
mod tests;
mod xoff;

use xoff::{NO_SLOT, XoffEntry};

pub use allocation::Allocation;
pub use observe::{
    PgOccupancy, PgThresholds, PoolWatermarks, PortWatermarks, WatermarkKind, WatermarkTables,
};

/// A pool's identity that survives reconfiguration (pools are matched by name).
pub type PoolId = usize;

/// A [`PoolId`] kept in 32 bits inside an [`Allocation`], which every queued frame carries (and the
/// packet path moves several times).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AllocPool(u32);

impl AllocPool {
    fn new(pool: PoolId) -> AllocPool {
        // A configuration cannot hold 2^32 pools: the pool table would not fit in memory first.
        AllocPool(u32::try_from(pool).expect("fewer than 2^32 buffer pools"))
    }

    /// The pool's [`PoolId`].
    pub fn index(self) -> PoolId {
        self.0 as PoolId
    }
}

/// The most buffer partitions a personality has.
pub const MAX_PARTITIONS: usize = super::config::asic::MAX_PARTITIONS;

/// An admitted frame: its allocation, whether its PG newly asserted XOFF, and what the MMU already knows
/// of its queue's WRED.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Admitted {
    pub alloc: Allocation,
    pub xoff: bool,
    pub wred: WredHint,
}

/// What the admission of a frame tells of its queue's WRED (the configuration's `queue_wred`, cached
/// per queue when it is applied, so the packet path's common case reads it where it has just read the
/// queue's level).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WredHint {
    /// Not known here: the full WRED computation decides.
    Unknown,
    /// The queue has no WRED profile.
    Off,
    /// The queue's WRED profile has weight 0 (the instantaneous length) and the queue held fewer bytes
    /// than its green minimum before the frame: WRED passes it. The queue's length before it, which WRED's
    /// average takes with weight 0, is left with the MMU: [`Mmu::take_wred_sample`].
    Pass,
}

/// A queue's WRED profile as the fast admission reads it (`configure.rs`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum QueueWred {
    /// No WRED profile.
    #[default]
    Off,
    /// Weight 0: every frame passes while the queue holds fewer cells than this (the green minimum in
    /// whole cells: `n × cell < min` exactly when `n < ceil(min / cell)`).
    Instant { pass_below_cells: u64 },
    /// Anything else (an average, or a minimum of 0): the full computation.
    Other,
}

/// What admission planned on the ingress side: the pool and the cells for each region
/// (reserved, shared, headroom).
#[derive(Debug, Clone, Copy)]
struct IngressPlan {
    pool: AllocPool,
    regions: (u64, u64, u64),
}

/// What admission planned on the egress side: the pool and (reserved, shared) cells.
#[derive(Debug, Clone, Copy)]
struct EgressPlan {
    pool: AllocPool,
    regions: (u64, u64),
}

/// Why admission refused a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// No room left in the PG's reserved, shared or headroom space (ingress drop).
    Ingress,
    /// No room in the queue's reserved or shared space (egress tail drop).
    Egress,
}

/// A profile resolved to cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct CellProfile {
    pool: PoolId,
    /// The same in 32 bits, for allocations (converted once, when the configuration is applied).
    alloc_pool: AllocPool,
    reserved: u64,
    threshold: CellThreshold,
    xon: u64,
    xoff: u64,
    xon_offset: u64,
    /// The fast admission (`fast.rs`) takes a frame into the PG's reserve while its reserved cells with
    /// the frame's stay below this: the reserve plus one, or 0 where that admission does not apply
    /// (Spectrum's layout, or a limit `zero_limit_from` cannot describe).
    fast_reserve_end: u64,
    /// The usage of a pool partition from which the shared limit is 0 (a lossless PG holding no shared
    /// cells is then at its XOFF point); `u64::MAX`: never.
    zero_limit_from: u64,
    /// The alpha exponent n of a dynamic limit whose crossing point (`xoff.rs`'s `raise_from`) is exact
    /// for every free space up to the pool's size, or [`NO_RAISE_SHIFT`].
    raise_shift: i8,
}

/// [`CellProfile::raise_shift`] of a profile without an exact crossing point (static, or a shift that
/// could overflow).
const NO_RAISE_SHIFT: i8 = i8::MIN;

impl CellProfile {
    /// [`CellProfile::raise_shift`] for a pool partition of `size` shared cells: n where `free << n` (n ≥ 0)
    /// cannot overflow for `free ≤ size`, or `free >> −n` shifts by less than 64.
    fn raise_shift(threshold: CellThreshold, size: u64) -> i8 {
        match threshold {
            CellThreshold::Dynamic(n) if (0..64).contains(&n) && size.leading_zeros() >= n as u32 => n,
            CellThreshold::Dynamic(n) if (-63..0).contains(&n) => n,
            _ => NO_RAISE_SHIFT,
        }
    }

    /// [`CellProfile::zero_limit_from`] for a pool partition of `size` shared cells, if it is exact: the
    /// limit is 0 exactly when the partition's usage is at least that.
    fn zero_limit_from(threshold: CellThreshold, size: u64) -> Option<u64> {
        match threshold {
            CellThreshold::Static(Some(0)) => Some(0),
            CellThreshold::Static(Some(_)) => Some(u64::MAX),
            CellThreshold::Static(None) => Some(if size == 0 { 0 } else { u64::MAX }),
            // free << n is 0 exactly when free is 0 (used >= size), while size << n does not overflow.
            CellThreshold::Dynamic(n) if n >= 0 => (size.leading_zeros() >= n as u32).then_some(size),
            // free >> m is 0 exactly when free < 2^m: used > size - 2^m.
            CellThreshold::Dynamic(n) => {
                let m = u32::from(n.unsigned_abs());
                if m >= 64 {
                    return Some(0);
                }
                Some(size.saturating_add(1).saturating_sub(1 << m))
            }
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CellThreshold {
    Dynamic(i8),
    /// `None`: static_th 0, no limit.
    Static(Option<u64>),
}

#[derive(Debug, Clone, Default)]
struct Pool {
    name: String,
    /// Still in the running configuration (a removed pool keeps counting until its frames drain).
    active: bool,
    /// Shared cells of each partition.
    size: u64,
    /// Shared headroom cells of each partition.
    headroom_size: u64,
    /// Per partition.
    shared_used: [u64; MAX_PARTITIONS],
    headroom_used: [u64; MAX_PARTITIONS],
    /// Of the whole pool (all partitions).
    wm_shared: [u64; 2],
    wm_headroom: [u64; 2],
}

impl Pool {
    fn shared_total(&self) -> u64 {
        self.shared_used.iter().sum()
    }

    /// The shared headroom pool's usage as the ASIC reports it: a partitioned buffer reports the fullest
    /// partition times the number of partitions (sonic-mgmt's `hdrm_pool_wm_multiplier`: 4 on Tomahawk).
    fn headroom_reported(&self, partitions: usize) -> u64 {
        if partitions > 1 {
            self.headroom_used.iter().copied().max().unwrap_or(0) * partitions as u64
        } else {
            self.headroom_total()
        }
    }

    fn headroom_total(&self) -> u64 {
        self.headroom_used.iter().sum()
    }
}

#[derive(Debug, Clone, Copy)]
struct PgState {
    profile: Option<CellProfile>,
    lossless: bool,
    reserved_used: u64,
    shared_used: u64,
    headroom_used: u64,
    xoff: bool,
    /// The partition of the PG's latest frame: its limit is computed there.
    partition: u8,
    wm_shared: [u64; 2],
    wm_headroom: [u64; 2],
    /// [`Allocation::side`] of this PG's profile (0 without one), for the fast admission.
    alloc_side: u64,
    /// Its index in `Mmu::in_xoff` while in XOFF, and in its pool's `Mmu::dynamic_lossless` if there
    /// ([`NO_SLOT`] otherwise).
    xoff_slot: u32,
    dynamic_slot: u32,
}

impl Default for PgState {
    fn default() -> Self {
        PgState {
            profile: None,
            lossless: false,
            reserved_used: 0,
            shared_used: 0,
            headroom_used: 0,
            xoff: false,
            partition: 0,
            wm_shared: [0; 2],
            wm_headroom: [0; 2],
            alloc_side: 0,
            xoff_slot: NO_SLOT,
            dynamic_slot: NO_SLOT,
        }
    }
}

#[derive(Debug, Clone, Copy, Default)]
struct QueueState {
    profile: Option<CellProfile>,
    lossless: bool,
    reserved_used: u64,
    shared_used: u64,
    partition: u8,
    wm_shared: [u64; 2],
    wred: QueueWred,
    /// The queue's length before the last frame the fast admission passed below WRED's minimum, in cells,
    /// plus 1 (0: none since the switch last took it). WRED's average with weight 0 is that length; the
    /// fast admission leaves it here (one store) instead of the switch's WRED state (a port look-up, a
    /// multiplication and a store), and the switch folds it in before its WRED state is next read.
    wred_sample: u64,
    /// [`Allocation::side`] of this queue's profile (0 without one), for the fast admission.
    alloc_side: u64,
}

#[derive(Debug, Clone, Default)]
struct PortState {
    pgs: [PgState; 8],
    queues: [QueueState; 8],
    /// Port-level caps per pool (profile lists) and the port's shared usage of each pool, by pool id.
    caps: Vec<Option<CellThreshold>>,
    shared_by_pool: Vec<u64>,
    /// Per PG, the PFC priorities that map to it (`pfc_to_pg_map`), as a mask.
    pg_priorities: [u8; 8],
    /// The port's pipe (its partition comes from its frames' two pipes).
    pipe: u8,
    /// The partition's parts that this port's pipe decides as a frame's ingress and as its egress: a
    /// frame's partition is `in_part | out_part` (`configure.rs`; debug builds compare with
    /// [`Personality::partition`](super::config::Personality)).
    in_part: u8,
    out_part: u8,
}

/// The buffer state of the whole switch.
#[derive(Debug, Clone, Default)]
pub struct Mmu {
    cell_bytes: u64,
    pools: Vec<Pool>,
    ports: Vec<PortState>,
    /// The ASIC's partitioning, and each port's pipe.
    personality: super::config::Personality,
    port_pipe: Vec<u8>,
    /// Per pool: the lossless PGs whose limit is dynamic, so moves as the pool fills.
    dynamic_lossless: Vec<Vec<(PortId, u8)>>,
    /// Per pool, a bit per entry of `dynamic_lossless`: the PG holds shared cells and is not in XOFF (the
    /// only ones a filling pool can raise; `xoff.rs`).
    raisable: Vec<Vec<u64>>,
    /// PGs other than the admitted frame's that reached their limit as the pool filled (see
    /// [`Mmu::take_raised`]).
    raised: Vec<(PortId, u8)>,
    /// The PGs holding XOFF, so that XON re-checks cost what is in XOFF, not every port × PG.
    in_xoff: Vec<XoffEntry>,
    /// Per pool and partition: at least the XON threshold of every PG in XOFF there (`xoff.rs`).
    xon_bound: Vec<[u64; MAX_PARTITIONS]>,
    /// Some pool partition's usage may be below its bound: [`Mmu::recheck_xon`] has a walk to make.
    xon_dirty: bool,
    /// Per pool and partition: at least the free space at or below which a raisable PG there is over its
    /// limit, for every raisable PG (`xoff.rs`): an admission walks the raisable set only when the free
    /// space is down to it.
    raise_bound: Vec<[u64; MAX_PARTITIONS]>,
    /// Spectrum's layout: a PG's `size − xoff` lies above the shared space and counts in the pool (its
    /// occupancy and watermark, not the PG's shared watermark), as NVIDIA's sonic-mgmt generator expects.
    pooled_reserve: bool,
}

impl Mmu {
    pub fn cell_bytes(&self) -> u64 {
        self.cell_bytes
    }

    /// Cells a frame of `len` bytes occupies.
    #[inline(always)]
    pub fn cells_for(&self, len: usize) -> u32 {
        // A frame of one cell at most (a 64-byte frame on every ASIC here) needs no division.
        if (len as u64).wrapping_sub(1) < self.cell_bytes {
            debug_assert_eq!(self.cells_by_division(len), 1);
            return 1;
        }
        self.cells_by_division(len)
    }

    fn cells_by_division(&self, len: usize) -> u32 {
        cells(len as u64, self.cell_bytes.max(1)).min(u64::from(u32::MAX)) as u32
    }

    /// Is this PG lossless (one of the port's `pfc_enable` priorities maps to it)?
    pub fn pg_is_lossless(&self, port: PortId, pg: u8) -> bool {
        self.ports.get(port.index()).is_some_and(|p| p.pgs[usize::from(pg & 7)].lossless)
    }

    /// The PFC priorities of a port that map to a PG (its `pfc_to_pg_map`), as a mask computed when the
    /// configuration is applied.
    pub fn pg_priorities(&self, port: PortId, pg: u8) -> u8 {
        self.ports.get(port.index()).and_then(|p| p.pg_priorities.get(usize::from(pg)).copied()).unwrap_or(0)
    }

    /// The current shared limit of a threshold in a partition of a pool, in cells.
    #[inline(always)]
    fn limit(&self, threshold: CellThreshold, pool: PoolId, partition: u8) -> u64 {
        let p = &self.pools[pool];
        match threshold {
            CellThreshold::Static(Some(c)) => c,
            CellThreshold::Static(None) => p.size,
            CellThreshold::Dynamic(n) => {
                let free = p.size.saturating_sub(p.shared_used[usize::from(partition)]);
                if n >= 0 { free << n } else { free >> (-n) }
            }
        }
    }

    #[inline(always)]
    fn port_cap_allows(&self, port: PortId, pool: PoolId, partition: u8, extra: u64) -> bool {
        let state = &self.ports[port.index()];
        match state.caps.get(pool).copied().flatten() {
            None => true,
            Some(t) => {
                state.shared_by_pool.get(pool).copied().unwrap_or(0) + extra <= self.limit(t, pool, partition)
            }
        }
    }

    /// [`Mmu::partition`] from the parts the configuration stored with the ports (as the fast admission
    /// reads them), when both ports are known.
    #[inline(always)]
    fn partition_of(&self, ingress: Option<PortId>, egress: PortId) -> u8 {
        let Some(to) = self.ports.get(egress.index()) else { return self.partition(ingress, egress) };
        let in_part = match ingress {
            None => to.in_part,
            Some(port) => match self.ports.get(port.index()) {
                Some(from) => from.in_part,
                None => return self.partition(ingress, egress),
            },
        };
        let partition = in_part | to.out_part;
        debug_assert_eq!(
            partition,
            self.partition(ingress, egress),
            "partition of {ingress:?} to {egress:?}"
        );
        partition
    }

    /// The buffer partition of a frame from `ingress` (none: a frame the switch made) to `egress`.
    fn partition(&self, ingress: Option<PortId>, egress: PortId) -> u8 {
        if self.personality.partitions() == 1 {
            return 0;
        }
        let pipe = |port: PortId| self.port_pipe.get(port.index()).copied().unwrap_or(0);
        let out = pipe(egress);
        let from = ingress.map_or(out, pipe);
        self.personality.partition(from, out).min(MAX_PARTITIONS - 1) as u8
    }

    /// Admits a frame of `cells` on (ingress port, PG) and (egress port, queue), or refuses it, changing
    /// nothing. Returns the allocation, whether the PG newly asserted XOFF and what is known of the
    /// queue's WRED.
    #[inline]
    pub fn admit(
        &mut self,
        cells: u32,
        ingress: Option<(PortId, u8)>,
        egress: (PortId, u8),
    ) -> Result<Admitted, Refusal> {
        // Most frames fit in both sides' reserve (or neither side is managed): decided without plans.
        if let Some((port, pg)) = ingress
            && let Some(admitted) = self.admit_fast(cells, port, pg, egress.0, egress.1)
        {
            return Ok(admitted);
        }
        self.admit_slow(cells, ingress, egress)
    }

    /// [`Mmu::admit`] for a frame that [`Mmu::admit_fast`] did not admit (or that has no ingress PG): the
    /// full admission, which leaves WRED to the caller.
    #[inline]
    pub fn admit_slow(
        &mut self,
        cells: u32,
        ingress: Option<(PortId, u8)>,
        egress: (PortId, u8),
    ) -> Result<Admitted, Refusal> {
        let (alloc, xoff) = self.admit_planned(cells, ingress, egress)?;
        Ok(Admitted { alloc, xoff, wred: WredHint::Unknown })
    }

    /// [`Mmu::admit`] in full: each side's regions planned, then taken.
    #[inline(never)]
    fn admit_planned(
        &mut self,
        cells: u32,
        ingress: Option<(PortId, u8)>,
        egress: (PortId, u8),
    ) -> Result<(Allocation, bool), Refusal> {
        let (out, queue) = (egress.0, egress.1 & 7);
        // Each side's state and profile, looked up once: a side without a profile is not managed.
        let pg_side = ingress.and_then(|(port, pg)| {
            let state = &self.ports.get(port.index())?.pgs[usize::from(pg & 7)];
            Some((port, pg & 7, state, state.profile.as_ref()?))
        });
        let queue_side = self.ports.get(out.index()).and_then(|p| {
            let state = &p.queues[usize::from(queue)];
            Some((state, state.profile.as_ref()?))
        });
        if pg_side.is_none() && queue_side.is_none() {
            // Neither side has a profile: admitted without limits and counted nowhere (what planning both
            // sides would conclude, without the partition and the plans).
            return Ok((Allocation::unmanaged(cells), false));
        }
        let c = u64::from(cells);
        let partition = self.partition_of(ingress.map(|(port, _)| port), out);
        // Both plans (they change nothing), then the refusal: Spectrum counts a frame both sides refuse as
        // an egress drop, the others as an ingress drop.
        let ingress_plan = pg_side.map(|(port, pg, state, prof)| {
            self.plan_ingress(c, port, state, prof, partition).map(|plan| (port, pg, plan))
        });
        let egress_plan = queue_side.map(|(state, prof)| self.plan_egress(c, out, state, prof, partition));
        if self.personality.egress_drop_first
            && let Some(Err(refusal)) = egress_plan
        {
            return Err(refusal);
        }
        let ingress_plan = ingress_plan.transpose()?;
        let egress_plan = egress_plan.transpose()?;
        let (mut sides, mut pg_index, mut ingress_side, mut egress_side, mut queue_index) = (0, 0, 0, 0, 0);
        let mut xoff = false;
        if let Some((port, pg, plan)) = ingress_plan {
            sides |= Allocation::INGRESS;
            (pg_index, ingress_side) = (pg, Allocation::side(plan.pool, port.index()));
            xoff = self.take_ingress(port, pg, partition, plan);
        }
        if let Some(plan) = egress_plan {
            sides |= Allocation::EGRESS;
            (queue_index, egress_side) = (queue, Allocation::side(plan.pool, out.index()));
            self.take_egress(out, queue, partition, plan);
        }
        let alloc =
            Allocation::new(cells, (pg_index, queue_index, partition, sides), ingress_side, egress_side);
        Ok((alloc, xoff))
    }

    /// The PG's regions for `c` cells, or a refusal.
    #[inline(always)]
    fn plan_ingress(
        &self,
        c: u64,
        port: PortId,
        state: &PgState,
        prof: &CellProfile,
        partition: u8,
    ) -> Result<IngressPlan, Refusal> {
        if self.pooled_reserve {
            return self.plan_ingress_shared_first(c, port, state, prof, partition);
        }
        let reserved = c.min(prof.reserved.saturating_sub(state.reserved_used));
        let rest = c - reserved;
        let plan = |shared: u64, headroom: u64| {
            Ok(IngressPlan { pool: prof.alloc_pool, regions: (reserved, shared, headroom) })
        };
        if rest == 0 {
            return plan(0, 0);
        }
        let pool = &self.pools[prof.pool];
        let k = usize::from(partition);
        if state.shared_used + rest <= self.limit(prof.threshold, prof.pool, partition)
            && pool.shared_used[k] + rest <= pool.size
            && self.port_cap_allows(port, prof.pool, partition, rest)
        {
            return plan(rest, 0);
        }
        if state.lossless && state.headroom_used + rest <= prof.xoff {
            let shp = pool.headroom_size > 0;
            if !shp || pool.headroom_used[k] + rest <= pool.headroom_size {
                return plan(0, rest);
            }
        }
        Err(Refusal::Ingress)
    }

    /// Spectrum's order: shared space under the limit, then the PG's `size − xoff`, then headroom.
    fn plan_ingress_shared_first(
        &self,
        c: u64,
        port: PortId,
        state: &PgState,
        prof: &CellProfile,
        partition: u8,
    ) -> Result<IngressPlan, Refusal> {
        let pool = &self.pools[prof.pool];
        let k = usize::from(partition);
        // Spectrum compares the usage before the frame with the limit (NVIDIA's generator counts L + 1
        // frames into the shared space, `pkts_num_dismiss_pfc`).
        let regions = if state.shared_used <= self.limit(prof.threshold, prof.pool, partition)
            && pool.shared_used[k] + c <= pool.size
            && self.port_cap_allows(port, prof.pool, partition, c)
        {
            (0, c, 0)
        } else if state.reserved_used + c <= prof.reserved {
            (c, 0, 0)
        } else if state.lossless
            && state.headroom_used + c <= prof.xoff
            && (pool.headroom_size == 0 || pool.headroom_used[k] + c <= pool.headroom_size)
        {
            (0, 0, c)
        } else {
            return Err(Refusal::Ingress);
        };
        Ok(IngressPlan { pool: prof.alloc_pool, regions })
    }

    /// The queue's regions for `c` cells, or a refusal.
    #[inline(always)]
    fn plan_egress(
        &self,
        c: u64,
        port: PortId,
        state: &QueueState,
        prof: &CellProfile,
        partition: u8,
    ) -> Result<EgressPlan, Refusal> {
        let reserved = c.min(prof.reserved.saturating_sub(state.reserved_used));
        let rest = c - reserved;
        let plan = |shared: u64| Ok(EgressPlan { pool: prof.alloc_pool, regions: (reserved, shared) });
        if rest == 0 {
            return plan(0);
        }
        let pool = &self.pools[prof.pool];
        let fits_pool = pool.shared_used[usize::from(partition)] + rest <= pool.size;
        let under_limit = state.shared_used + rest <= self.limit(prof.threshold, prof.pool, partition)
            && self.port_cap_allows(port, prof.pool, partition, rest);
        if fits_pool && (under_limit || state.lossless) { plan(rest) } else { Err(Refusal::Egress) }
    }

    /// Takes the planned cells on the PG, its port and its pool in one pass, then XOFF: returns whether
    /// the PG newly asserted it. Watermarks are maxima that never fall below the usage they follow (a clear
    /// resets them to it), so they can only rise when that usage grew: only then are they compared.
    fn take_ingress(&mut self, port: PortId, pg: u8, partition: u8, plan: IngressPlan) -> bool {
        let (reserved, shared, headroom) = plan.regions;
        let k = usize::from(partition);
        let pooled = shared + if self.pooled_reserve { reserved } else { 0 };
        let state = &mut self.ports[port.index()];
        state.shared_by_pool[plan.pool.index()] += pooled;
        let g = &mut state.pgs[usize::from(pg)];
        let headroom_before = g.headroom_used;
        g.reserved_used += reserved;
        g.shared_used += shared;
        g.headroom_used += headroom;
        g.partition = partition;
        if shared > 0 {
            g.wm_shared = g.wm_shared.map(|w| w.max(g.shared_used));
        }
        if headroom > 0 {
            g.wm_headroom = g.wm_headroom.map(|w| w.max(g.headroom_used));
        }
        debug_assert!(
            g.wm_shared.iter().all(|&w| w >= g.shared_used)
                && g.wm_headroom.iter().all(|&w| w >= g.headroom_used),
            "a PG watermark below its usage"
        );
        // The raisable bit moves only when the PG's shared usage leaves zero; a PG in XOFF has its XON
        // threshold recomputed (`xoff.rs`), unless it had headroom in use (its threshold stays "never").
        // Otherwise `pg_changed` would write what is there.
        let changed = (g.xoff && headroom_before == 0) || (shared > 0 && g.shared_used == shared);
        let pool = &mut self.pools[plan.pool.index()];
        pool.shared_used[k] += pooled;
        // The pool's watermarks can only rise when the frame took pool cells.
        if pooled > 0 {
            let shared_total = pool.shared_total();
            pool.wm_shared = pool.wm_shared.map(|w| w.max(shared_total));
        }
        if headroom > 0 {
            if pool.headroom_size > 0 {
                pool.headroom_used[k] += headroom;
            }
            let headroom_total = pool.headroom_reported(self.personality.partitions());
            pool.wm_headroom = pool.wm_headroom.map(|w| w.max(headroom_total));
        }
        if changed {
            self.pg_changed(port, pg);
        }
        self.debug_check_pg_index(port, pg);
        let xoff = self.update_xoff(port, pg);
        // The PG's usage or partition moved: the bound of its partition follows (a PG in XOFF has none).
        self.note_raise_bound(port, pg);
        if shared > 0 {
            self.raise_crossed(port, pg, plan.pool.index(), partition);
        }
        xoff
    }

    fn take_egress(&mut self, port: PortId, queue: u8, partition: u8, plan: EgressPlan) {
        let (reserved, shared) = plan.regions;
        let state = &mut self.ports[port.index()];
        state.shared_by_pool[plan.pool.index()] += shared;
        let q = &mut state.queues[usize::from(queue)];
        q.reserved_used += reserved;
        q.shared_used += shared;
        q.partition = partition;
        if shared > 0 {
            q.wm_shared = q.wm_shared.map(|w| w.max(q.shared_used));
            let pool = &mut self.pools[plan.pool.index()];
            pool.shared_used[usize::from(partition)] += shared;
            let shared_total = pool.shared_total();
            pool.wm_shared = pool.wm_shared.map(|w| w.max(shared_total));
        }
    }

    /// Releases an allocation (frame transmitted or dropped after admission), from the top of each level.
    /// Returns the (port, PG) whose XOFF was released by it, if any.
    pub fn release(&mut self, alloc: &Allocation) -> Option<(PortId, u8)> {
        if self.release_simple(alloc) {
            return None;
        }
        self.release_from_top(alloc)
    }

    /// The common cases of [`Mmu::release`], inline: most frames leave a PG and a queue that hold
    /// nothing above their reserve; a frame neither side manages holds nothing. Returns whether it was
    /// one (then it is released, and no XOFF was released by it); otherwise nothing changed and
    /// [`Mmu::release_from_top`] must release it.
    #[inline(always)]
    pub fn release_simple(&mut self, alloc: &Allocation) -> bool {
        match alloc.sides() {
            0 => true,
            Allocation::BOTH => self.release_reserved(alloc),
            _ => false,
        }
    }

    /// [`Mmu::release`] in full: returns the (port, PG) whose XOFF was released by it, if any.
    #[inline(never)]
    pub fn release_from_top(&mut self, alloc: &Allocation) -> Option<(PortId, u8)> {
        let c = u64::from(alloc.cells());
        let k = usize::from(alloc.partition());
        if alloc.sides() & Allocation::EGRESS != 0 && alloc.egress_port() < self.ports.len() {
            let pool_id = alloc.egress_pool().index();
            let port = &mut self.ports[alloc.egress_port()];
            let q = &mut port.queues[usize::from(alloc.queue())];
            let shared = c.min(q.shared_used);
            sub(&mut q.shared_used, shared);
            sub(&mut q.reserved_used, c - shared);
            if shared > 0 {
                sub(&mut port.shared_by_pool[pool_id], shared);
                sub(&mut self.pools[pool_id].shared_used[k], shared);
                self.note_pool_drained(pool_id, k);
            }
        }
        if alloc.sides() & Allocation::INGRESS == 0 || alloc.ingress_port() >= self.ports.len() {
            return None;
        }
        let (port_id, pg_index, pool_id) =
            (PortId::new(alloc.ingress_port()), alloc.pg(), alloc.ingress_pool().index());
        let shared_headroom =
            self.pools[pool_id].headroom_size > 0 || self.pools[pool_id].headroom_used[k] > 0;
        let port = &mut self.ports[alloc.ingress_port()];
        let pg = &mut port.pgs[usize::from(pg_index)];
        let headroom = c.min(pg.headroom_used);
        // From the top of the PG's level: headroom, then what lies under it (Spectrum: the reserve above
        // the shared space; elsewhere the shared space above the reserve).
        let (shared, reserved) = if self.pooled_reserve {
            let reserved = (c - headroom).min(pg.reserved_used);
            (c - headroom - reserved, reserved)
        } else {
            let shared = (c - headroom).min(pg.shared_used);
            (shared, c - headroom - shared)
        };
        sub(&mut pg.headroom_used, headroom);
        sub(&mut pg.shared_used, shared);
        sub(&mut pg.reserved_used, reserved);
        // As on admission: only a PG in XOFF (unless it keeps headroom in use: its XON threshold stays
        // "never"), or one whose shared usage fell to zero, has bookkeeping to update.
        let in_xoff = pg.xoff;
        let changed = (in_xoff && pg.headroom_used == 0) || (shared > 0 && pg.shared_used == 0);
        let pooled = shared + if self.pooled_reserve { reserved } else { 0 };
        sub(&mut port.shared_by_pool[pool_id], pooled);
        let pool = &mut self.pools[pool_id];
        sub(&mut pool.shared_used[k], pooled);
        if shared_headroom {
            sub(&mut pool.headroom_used[k], headroom);
        }
        if pooled > 0 {
            self.note_pool_drained(pool_id, k);
        }
        if changed {
            self.pg_changed(port_id, pg_index);
        }
        self.debug_check_pg_index(port_id, pg_index);
        (in_xoff && self.own_xon_due(port_id, pg_index)).then(|| {
            self.leave_xoff(port_id, pg_index);
            (port_id, pg_index)
        })
    }
}
/// Subtracts, never below zero (a release can only give back what was taken; debug builds check it).
fn sub(value: &mut u64, amount: u64) {
    debug_assert!(*value >= amount, "buffer accounting would go negative: {value} - {amount}");
    *value = value.saturating_sub(amount);
}
