//! Observation of the buffer state: occupancy, watermarks (SONiC's user and persistent copies) and
//! their clearing.

use super::Mmu;
use crate::model::config::PortId;

/// Which copy of the watermarks: SONiC keeps a "user" copy (cleared by `sonic-clear ... watermark`) and a
/// "persistent" one (cleared only by its own clear).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatermarkKind {
    User = 0,
    Persistent = 1,
}

/// Which watermark tables a clear resets (watermarkstat's `-t`: `pg_shared`, `pg_headroom`, `q_shared_uni`,
/// `buffer_pool`, `headroom_pool`): `sonic-clear queue watermark unicast` leaves the PG and pool marks alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WatermarkTables {
    pub pg_shared: bool,
    pub pg_headroom: bool,
    pub queue_shared: bool,
    pub pool_shared: bool,
    pub pool_headroom: bool,
}

impl WatermarkTables {
    pub const ALL: WatermarkTables = WatermarkTables {
        pg_shared: true,
        pg_headroom: true,
        queue_shared: true,
        pool_shared: true,
        pool_headroom: true,
    };
    pub const NONE: WatermarkTables = WatermarkTables {
        pg_shared: false,
        pg_headroom: false,
        queue_shared: false,
        pool_shared: false,
        pool_headroom: false,
    };
}

/// Occupancy of one PG, in bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct PgOccupancy {
    pub reserved_bytes: u64,
    pub shared_bytes: u64,
    pub headroom_bytes: u64,
    /// XOFF asserted (PFC being sent for the PG's priorities).
    pub xoff: bool,
}

/// Watermarks of one port, bytes, SAI names: PG `SHARED_WATERMARK_BYTES` and `XOFF_ROOM_WATERMARK_BYTES`,
/// queue `SHARED_WATERMARK_BYTES`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct PortWatermarks {
    pub pg_shared_bytes: [u64; 8],
    pub pg_headroom_bytes: [u64; 8],
    pub queue_shared_bytes: [u64; 8],
}

/// Watermarks of one pool, bytes: `SAI_BUFFER_POOL_STAT_WATERMARK_BYTES` and `..._XOFF_ROOM_WATERMARK_BYTES`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct PoolWatermarks {
    pub shared_bytes: u64,
    pub headroom_bytes: u64,
}

/// Where a lossless PG's PFC trips and releases now, in bytes of PG usage (reserved + shared): XOFF once
/// its shared part reaches the limit (`xoff_bytes` = reserved + limit; a dynamic limit moves as the pool
/// fills), XON at `max(xon, size + limit − xon_offset)` with no headroom used.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct PgThresholds {
    pub xoff_bytes: u64,
    pub xon_bytes: u64,
}

impl Mmu {
    /// The PG's XOFF and XON points at this instant; `None` for a PG that is not lossless or has no profile.
    pub fn pg_thresholds(&self, port: PortId, pg: u8) -> Option<PgThresholds> {
        let state = self.ports.get(port.index())?.pgs[usize::from(pg & 7)];
        let prof = state.profile.filter(|_| state.lossless)?;
        let limit = self.limit(prof.threshold, prof.pool, state.partition);
        let xon = prof.xon.max((prof.reserved + limit).saturating_sub(prof.xon_offset));
        Some(PgThresholds {
            xoff_bytes: (prof.reserved + limit) * self.cell_bytes,
            xon_bytes: xon * self.cell_bytes,
        })
    }

    pub fn pg_occupancy(&self, port: PortId, pg: u8) -> PgOccupancy {
        let cell = self.cell_bytes;
        self.ports.get(port.index()).map_or_else(PgOccupancy::default, |p| {
            let s = &p.pgs[usize::from(pg & 7)];
            PgOccupancy {
                reserved_bytes: s.reserved_used * cell,
                shared_bytes: s.shared_used * cell,
                headroom_bytes: s.headroom_used * cell,
                xoff: s.xoff,
            }
        })
    }

    /// Is the queue managed by a buffer profile?
    pub fn queue_is_managed(&self, port: PortId, queue: u8) -> bool {
        self.ports.get(port.index()).is_some_and(|p| p.queues[usize::from(queue & 7)].profile.is_some())
    }

    /// Cells a queue holds (reserved + shared) when a buffer profile manages it: [`Mmu::queue_is_managed`]
    /// and [`Mmu::queue_cells`] in one look-up, for the packet path.
    pub fn managed_queue_cells(&self, port: PortId, queue: u8) -> Option<u64> {
        let q = &self.ports.get(port.index())?.queues[usize::from(queue & 7)];
        q.profile.is_some().then_some(q.reserved_used + q.shared_used)
    }

    /// Cells a queue holds (reserved + shared).
    pub fn queue_cells(&self, port: PortId, queue: u8) -> u64 {
        self.ports.get(port.index()).map_or(0, |p| {
            let q = &p.queues[usize::from(queue & 7)];
            q.reserved_used + q.shared_used
        })
    }

    /// (shared used, headroom used) of a pool, in cells.
    pub fn pool_cells(&self, name: &str) -> Option<(u64, u64)> {
        self.pools.iter().find(|p| p.name == name).map(|p| (p.shared_total(), p.headroom_total()))
    }

    /// Total cells held anywhere (zero after a full drain).
    pub fn total_cells(&self) -> u64 {
        let ports: u64 = self
            .ports
            .iter()
            .map(|p| {
                p.pgs.iter().map(|g| g.reserved_used + g.shared_used + g.headroom_used).sum::<u64>()
                    + p.queues.iter().map(|q| q.reserved_used + q.shared_used).sum::<u64>()
            })
            .sum();
        ports + self.pools.iter().map(|p| p.shared_total() + p.headroom_total()).sum::<u64>()
    }

    pub fn port_watermarks(&self, port: PortId, kind: WatermarkKind) -> PortWatermarks {
        let (cell, k) = (self.cell_bytes, kind as usize);
        self.ports.get(port.index()).map_or_else(PortWatermarks::default, |p| PortWatermarks {
            pg_shared_bytes: std::array::from_fn(|g| p.pgs[g].wm_shared[k] * cell),
            pg_headroom_bytes: std::array::from_fn(|g| p.pgs[g].wm_headroom[k] * cell),
            queue_shared_bytes: std::array::from_fn(|q| p.queues[q].wm_shared[k] * cell),
        })
    }

    /// Watermarks of the pools of the running configuration, by name.
    pub fn pool_watermarks(&self, kind: WatermarkKind) -> Vec<(String, PoolWatermarks)> {
        let (cell, k) = (self.cell_bytes, kind as usize);
        self.pools
            .iter()
            .filter(|p| p.active)
            .map(|p| {
                (
                    p.name.clone(),
                    PoolWatermarks {
                        shared_bytes: p.wm_shared[k] * cell,
                        headroom_bytes: p.wm_headroom[k] * cell,
                    },
                )
            })
            .collect()
    }

    /// Resets watermarks of one kind to the current occupancy (SAI's read-and-clear).
    pub fn clear_watermarks(&mut self, kind: WatermarkKind) {
        self.clear_watermark_tables(kind, WatermarkTables::ALL);
    }

    /// Resets the watermarks of one kind in the given tables only.
    pub fn clear_watermark_tables(&mut self, kind: WatermarkKind, tables: WatermarkTables) {
        let partitions = self.personality.partitions();
        let k = kind as usize;
        for p in &mut self.ports {
            for g in &mut p.pgs {
                if tables.pg_shared {
                    g.wm_shared[k] = g.shared_used;
                }
                if tables.pg_headroom {
                    g.wm_headroom[k] = g.headroom_used;
                }
            }
            for q in p.queues.iter_mut().filter(|_| tables.queue_shared) {
                q.wm_shared[k] = q.shared_used;
            }
        }
        for p in &mut self.pools {
            if tables.pool_shared {
                p.wm_shared[k] = p.shared_total();
            }
            if tables.pool_headroom {
                p.wm_headroom[k] = p.headroom_reported(partitions);
            }
        }
    }
}
