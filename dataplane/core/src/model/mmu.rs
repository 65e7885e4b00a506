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
use super::config::asic::{PgLayout, cells};

mod configure;
mod observe;
mod xoff;

use xoff::{NO_SLOT, XoffEntry};

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

/// Where the cells of one admitted frame went, on both sides; released exactly on dequeue or drop.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Allocation {
    pub cells: u32,
    pub ingress: Option<IngressAlloc>,
    pub egress: Option<EgressAlloc>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IngressAlloc {
    pub port: PortId,
    pub pg: u8,
    /// The [`PoolId`] in 32 bits ([`AllocPool::index`]): every queued frame carries its allocation.
    pub pool: AllocPool,
    /// The buffer partition the frame is in.
    pub partition: u8,
    pub cells: u32,
    /// Where the cells went at admission (reserved, shared, headroom): for XOFF and watermarks.
    pub regions: (u32, u32, u32),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EgressAlloc {
    pub port: PortId,
    pub queue: u8,
    pub pool: AllocPool,
    pub partition: u8,
    pub cells: u32,
    /// (reserved, shared) at admission.
    pub regions: (u32, u32),
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
    reserved: u64,
    threshold: CellThreshold,
    xon: u64,
    xoff: u64,
    xon_offset: u64,
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
}

#[derive(Debug, Clone, Default)]
struct PortState {
    pgs: [PgState; 8],
    queues: [QueueState; 8],
    /// Port-level caps per pool (profile lists) and the port's shared usage of each pool, by pool id.
    caps: Vec<Option<CellThreshold>>,
    shared_by_pool: Vec<u64>,
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
}

impl Mmu {
    pub fn cell_bytes(&self) -> u64 {
        self.cell_bytes
    }

    /// Cells a frame of `len` bytes occupies.
    pub fn cells_for(&self, len: usize) -> u32 {
        cells(len as u64, self.cell_bytes.max(1)).min(u64::from(u32::MAX)) as u32
    }

    /// Is this PG lossless (one of the port's `pfc_enable` priorities maps to it)?
    pub fn pg_is_lossless(&self, port: PortId, pg: u8) -> bool {
        self.ports.get(port.index()).is_some_and(|p| p.pgs[usize::from(pg & 7)].lossless)
    }

    /// The current shared limit of a threshold in a partition of a pool, in cells.
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

    fn port_cap_allows(&self, port: PortId, pool: PoolId, partition: u8, extra: u64) -> bool {
        let state = &self.ports[port.index()];
        match state.caps.get(pool).copied().flatten() {
            None => true,
            Some(t) => {
                state.shared_by_pool.get(pool).copied().unwrap_or(0) + extra <= self.limit(t, pool, partition)
            }
        }
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
    /// nothing. Returns the allocation and whether the PG newly asserted XOFF.
    pub fn admit(
        &mut self,
        cells: u32,
        ingress: Option<(PortId, u8)>,
        egress: (PortId, u8),
    ) -> Result<(Allocation, bool), Refusal> {
        if !self.manages(ingress, egress) {
            // Neither side has a profile: admitted without limits and counted nowhere (what planning both
            // sides would conclude, without the partition and the plans).
            return Ok((Allocation { cells, ingress: None, egress: None }, false));
        }
        let c = u64::from(cells);
        let partition = self.partition(ingress.map(|(port, _)| port), egress.0);
        let plan_egress = |mmu: &Self| {
            if egress.0.index() < mmu.ports.len() {
                mmu.plan_egress(c, egress.0, egress.1, partition)
            } else {
                Ok(None)
            }
        };
        // Spectrum counts a frame both sides refuse as an egress drop: egress is asked first.
        let early_egress = if self.personality.egress_drop_first { Some(plan_egress(self)?) } else { None };
        let ingress_alloc = match ingress {
            Some((port, pg)) if port.index() < self.ports.len() => {
                self.plan_ingress(c, port, pg, partition)?
            }
            _ => None,
        };
        let egress_alloc = match early_egress {
            Some(planned) => planned,
            None => plan_egress(self)?,
        };
        let alloc = Allocation { cells, ingress: ingress_alloc, egress: egress_alloc };
        let mut xoff = false;
        if let Some(a) = ingress_alloc {
            self.take_ingress(a);
            self.pg_changed(a.port, a.pg);
            xoff = self.update_xoff(a.port, a.pg);
            if a.regions.1 > 0 {
                self.raise_crossed(a.port, a.pg, a.pool.index(), a.partition);
            }
        }
        if let Some(a) = egress_alloc {
            self.take_egress(a);
        }
        Ok((alloc, xoff))
    }

    /// Does a buffer profile manage the ingress PG or the egress queue of a frame?
    fn manages(&self, ingress: Option<(PortId, u8)>, egress: (PortId, u8)) -> bool {
        let pg =
            ingress.and_then(|(port, pg)| self.ports.get(port.index()).map(|p| &p.pgs[usize::from(pg & 7)]));
        let queue = self.ports.get(egress.0.index()).map(|p| &p.queues[usize::from(egress.1 & 7)]);
        pg.is_some_and(|g| g.profile.is_some()) || queue.is_some_and(|q| q.profile.is_some())
    }

    fn plan_ingress(
        &self,
        c: u64,
        port: PortId,
        pg: u8,
        partition: u8,
    ) -> Result<Option<IngressAlloc>, Refusal> {
        let state = &self.ports[port.index()].pgs[usize::from(pg & 7)];
        let Some(prof) = state.profile else { return Ok(None) };
        if let PgLayout::SharedFirst { .. } = self.personality.pg_layout {
            return self.plan_ingress_shared_first(c, port, pg, partition, prof);
        }
        let reserved = c.min(prof.reserved.saturating_sub(state.reserved_used));
        let rest = c - reserved;
        let mut alloc = IngressAlloc {
            port,
            pg: pg & 7,
            pool: AllocPool::new(prof.pool),
            partition,
            cells: c as u32,
            regions: (reserved as u32, 0, 0),
        };
        if rest == 0 {
            return Ok(Some(alloc));
        }
        let pool = &self.pools[prof.pool];
        let k = usize::from(partition);
        if state.shared_used + rest <= self.limit(prof.threshold, prof.pool, partition)
            && pool.shared_used[k] + rest <= pool.size
            && self.port_cap_allows(port, prof.pool, partition, rest)
        {
            alloc.regions.1 = rest as u32;
            return Ok(Some(alloc));
        }
        if state.lossless && state.headroom_used + rest <= prof.xoff {
            let shp = pool.headroom_size > 0;
            if !shp || pool.headroom_used[k] + rest <= pool.headroom_size {
                alloc.regions.2 = rest as u32;
                return Ok(Some(alloc));
            }
        }
        Err(Refusal::Ingress)
    }

    /// Spectrum's order: shared space under the limit, then the PG's `size − xoff`, then headroom.
    fn plan_ingress_shared_first(
        &self,
        c: u64,
        port: PortId,
        pg: u8,
        partition: u8,
        prof: CellProfile,
    ) -> Result<Option<IngressAlloc>, Refusal> {
        let state = &self.ports[port.index()].pgs[usize::from(pg & 7)];
        let pool = &self.pools[prof.pool];
        let k = usize::from(partition);
        // Spectrum compares the usage before the frame with the limit (NVIDIA's generator counts L + 1
        // frames into the shared space, `pkts_num_dismiss_pfc`).
        let region = if state.shared_used <= self.limit(prof.threshold, prof.pool, partition)
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
        Ok(Some(IngressAlloc {
            port,
            pg: pg & 7,
            pool: AllocPool::new(prof.pool),
            partition,
            cells: c as u32,
            regions: (region.0 as u32, region.1 as u32, region.2 as u32),
        }))
    }

    fn plan_egress(
        &self,
        c: u64,
        port: PortId,
        queue: u8,
        partition: u8,
    ) -> Result<Option<EgressAlloc>, Refusal> {
        let state = &self.ports[port.index()].queues[usize::from(queue & 7)];
        let Some(prof) = state.profile else { return Ok(None) };
        let reserved = c.min(prof.reserved.saturating_sub(state.reserved_used));
        let rest = c - reserved;
        let alloc = |shared: u64| EgressAlloc {
            port,
            queue: queue & 7,
            pool: AllocPool::new(prof.pool),
            partition,
            cells: c as u32,
            regions: (reserved as u32, shared as u32),
        };
        if rest == 0 {
            return Ok(Some(alloc(0)));
        }
        let pool = &self.pools[prof.pool];
        let fits_pool = pool.shared_used[usize::from(partition)] + rest <= pool.size;
        let under_limit = state.shared_used + rest <= self.limit(prof.threshold, prof.pool, partition)
            && self.port_cap_allows(port, prof.pool, partition, rest);
        if fits_pool && (under_limit || state.lossless) {
            Ok(Some(alloc(rest)))
        } else {
            Err(Refusal::Egress)
        }
    }

    fn take_ingress(&mut self, a: IngressAlloc) {
        let partitions = self.personality.partitions();
        let (reserved, shared, headroom) =
            (u64::from(a.regions.0), u64::from(a.regions.1), u64::from(a.regions.2));
        let shared_headroom = self.pools[a.pool.index()].headroom_size > 0;
        let pooled_reserve = self.reserve_in_pool();
        let port = &mut self.ports[a.port.index()];
        let pooled = shared + if pooled_reserve { reserved } else { 0 };
        port.shared_by_pool[a.pool.index()] += pooled;
        let pg = &mut port.pgs[usize::from(a.pg)];
        pg.reserved_used += reserved;
        pg.shared_used += shared;
        pg.headroom_used += headroom;
        pg.partition = a.partition;
        for k in 0..2 {
            pg.wm_shared[k] = pg.wm_shared[k].max(pg.shared_used);
            pg.wm_headroom[k] = pg.wm_headroom[k].max(pg.headroom_used);
        }
        let pool = &mut self.pools[a.pool.index()];
        pool.shared_used[usize::from(a.partition)] += pooled;
        if shared_headroom {
            pool.headroom_used[usize::from(a.partition)] += headroom;
        }
        // The pool's watermarks can only rise when the frame took pool cells.
        if pooled > 0 {
            let shared_total = pool.shared_total();
            for k in 0..2 {
                pool.wm_shared[k] = pool.wm_shared[k].max(shared_total);
            }
        }
        if headroom > 0 {
            let headroom_total = pool.headroom_reported(partitions);
            for k in 0..2 {
                pool.wm_headroom[k] = pool.wm_headroom[k].max(headroom_total);
            }
        }
    }

    /// Spectrum: a PG's `size − xoff` lies above the shared space and counts in the pool (its occupancy
    /// and watermark, not the PG's shared watermark), as NVIDIA's sonic-mgmt generator expects.
    fn reserve_in_pool(&self) -> bool {
        matches!(self.personality.pg_layout, PgLayout::SharedFirst { .. })
    }

    fn take_egress(&mut self, a: EgressAlloc) {
        let (reserved, shared) = (u64::from(a.regions.0), u64::from(a.regions.1));
        let port = &mut self.ports[a.port.index()];
        port.shared_by_pool[a.pool.index()] += shared;
        let q = &mut port.queues[usize::from(a.queue)];
        q.reserved_used += reserved;
        q.shared_used += shared;
        q.partition = a.partition;
        for k in 0..2 {
            q.wm_shared[k] = q.wm_shared[k].max(q.shared_used);
        }
        let pool = &mut self.pools[a.pool.index()];
        pool.shared_used[usize::from(a.partition)] += shared;
        if shared > 0 {
            let shared_total = pool.shared_total();
            for k in 0..2 {
                pool.wm_shared[k] = pool.wm_shared[k].max(shared_total);
            }
        }
    }

    /// Releases an allocation (frame transmitted or dropped after admission), from the top of each level.
    /// Returns the (port, PG) whose XOFF was released by it, if any.
    pub fn release(&mut self, alloc: &Allocation) -> Option<(PortId, u8)> {
        if let Some(a) = alloc.egress
            && a.port.index() < self.ports.len()
        {
            let port = &mut self.ports[a.port.index()];
            let q = &mut port.queues[usize::from(a.queue)];
            let c = u64::from(a.cells);
            let shared = c.min(q.shared_used);
            sub(&mut q.shared_used, shared);
            sub(&mut q.reserved_used, c - shared);
            sub(&mut port.shared_by_pool[a.pool.index()], shared);
            sub(&mut self.pools[a.pool.index()].shared_used[usize::from(a.partition)], shared);
        }
        let a = alloc.ingress.filter(|a| a.port.index() < self.ports.len())?;
        let k = usize::from(a.partition);
        let shared_headroom =
            self.pools[a.pool.index()].headroom_size > 0 || self.pools[a.pool.index()].headroom_used[k] > 0;
        let pooled_reserve = self.reserve_in_pool();
        let port = &mut self.ports[a.port.index()];
        let pg = &mut port.pgs[usize::from(a.pg)];
        let c = u64::from(a.cells);
        let headroom = c.min(pg.headroom_used);
        // From the top of the PG's level: headroom, then what lies under it (Spectrum: the reserve above
        // the shared space; elsewhere the shared space above the reserve).
        let (shared, reserved) = if let PgLayout::SharedFirst { .. } = self.personality.pg_layout {
            let reserved = (c - headroom).min(pg.reserved_used);
            (c - headroom - reserved, reserved)
        } else {
            let shared = (c - headroom).min(pg.shared_used);
            (shared, c - headroom - shared)
        };
        sub(&mut pg.headroom_used, headroom);
        sub(&mut pg.shared_used, shared);
        sub(&mut pg.reserved_used, reserved);
        let pooled = shared + if pooled_reserve { reserved } else { 0 };
        sub(&mut port.shared_by_pool[a.pool.index()], pooled);
        let pool = &mut self.pools[a.pool.index()];
        sub(&mut pool.shared_used[k], pooled);
        if shared_headroom {
            sub(&mut pool.headroom_used[k], headroom);
        }
        self.pg_changed(a.port, a.pg);
        self.update_xon(a.port, a.pg).then_some((a.port, a.pg))
    }
}

/// Subtracts, never below zero (a release can only give back what was taken; debug builds check it).
fn sub(value: &mut u64, amount: u64) {
    debug_assert!(*value >= amount, "buffer accounting would go negative: {value} - {amount}");
    *value = value.saturating_sub(amount);
}
