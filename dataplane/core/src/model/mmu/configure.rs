//! [`Mmu::configure`]: the buffer configuration resolved to cells, pools matched by name across
//! reconfigurations.

use super::{
    AllocPool, Allocation, CellProfile, CellThreshold, MAX_PARTITIONS, Mmu, Pool, PoolId, PortState,
    QueueWred,
};
use crate::model::config::asic::{PgLayout, cells, layout_cells, pool_shares};
use crate::model::config::{SwitchConfig, Threshold};
use crate::model::wred::Colour;

impl Mmu {
    /// Builds or updates the buffer configuration. With `keep_occupancy` (the port set is unchanged) every
    /// PG, queue and pool keeps what it holds, so frames queued under the old configuration release exactly
    /// what they took; otherwise all occupancy is reset (the caller has flushed the queues).
    pub fn configure(&mut self, config: &SwitchConfig, keep_occupancy: bool) {
        let cell = u64::from(config.asic.cell_bytes.max(1));
        if !keep_occupancy {
            self.ports.clear();
            for p in &mut self.pools {
                p.shared_used = [0; MAX_PARTITIONS];
                p.headroom_used = [0; MAX_PARTITIONS];
            }
        }
        self.cell_bytes = cell;
        self.personality = config.asic.personality;
        self.pooled_reserve = matches!(self.personality.pg_layout, PgLayout::SharedFirst { .. });
        let shares = pool_shares(config, cell);
        self.port_pipe = config.ports.iter().map(|p| self.personality.pipe_of_lane(p.first_lane)).collect();
        for p in &mut self.pools {
            p.active = false;
        }
        let pool_ids: Vec<PoolId> = config
            .pools
            .iter()
            .zip(&shares)
            .map(|(cfg, &(size, headroom_size))| {
                let id = match self.pools.iter().position(|p| p.name == cfg.name) {
                    Some(id) => id,
                    None => {
                        self.pools.push(Pool { name: cfg.name.clone(), ..Pool::default() });
                        self.pools.len() - 1
                    }
                };
                let pool = &mut self.pools[id];
                pool.active = true;
                pool.size = size;
                pool.headroom_size = headroom_size;
                id
            })
            .collect();
        let layout = self.personality.pg_layout;
        let pooled_reserve = self.pooled_reserve;
        let profile = |i: usize| {
            let p = &config.profiles[i];
            let (reserved, xoff) = layout_cells(layout, p.size_bytes, p.xoff_bytes, cell);
            let threshold = match p.threshold {
                Threshold::Dynamic(n) => CellThreshold::Dynamic(n),
                Threshold::Static(0) => CellThreshold::Static(None),
                Threshold::Static(b) => CellThreshold::Static(Some(cells(b, cell))),
            };
            let zero_limit_from = CellProfile::zero_limit_from(threshold, shares[p.pool].0);
            CellProfile {
                pool: pool_ids[p.pool],
                alloc_pool: AllocPool::new(pool_ids[p.pool]),
                reserved,
                threshold,
                xon: cells(p.xon_bytes, cell),
                xoff,
                xon_offset: cells(p.xon_offset_bytes, cell),
                fast_reserve_end: if pooled_reserve || zero_limit_from.is_none() {
                    0
                } else {
                    reserved.saturating_add(1)
                },
                zero_limit_from: zero_limit_from.unwrap_or(u64::MAX),
                raise_shift: CellProfile::raise_shift(threshold, shares[p.pool].0),
            }
        };
        self.ports.resize_with(config.ports.len(), PortState::default);
        for (i, state) in self.ports.iter_mut().enumerate() {
            state.pipe = self.port_pipe[i];
            // A frame's partition is that of its ingress pipe's part and its egress pipe's part (on
            // Tomahawk: the ingress pipe picks the XPE pair, the egress pipe one of the two).
            let part = |from: u8, to: u8| self.personality.partition(from, to).min(MAX_PARTITIONS - 1) as u8;
            (state.in_part, state.out_part) = (part(state.pipe, 0), part(0, state.pipe));
            let buffers = config.port_buffers.get(i).cloned().unwrap_or_default();
            let qos = &config.qos[i];
            let (mut lossless_pgs, mut lossless_queues) = (0u8, 0u8);
            state.pg_priorities = [0; 8];
            for p in 0..8 {
                if let Some(prios) = state.pg_priorities.get_mut(usize::from(qos.pfc_to_pg[p])) {
                    *prios |= 1 << p;
                }
                if qos.pfc_enable & (1 << p) != 0 {
                    lossless_pgs |= 1 << qos.pfc_to_pg[p];
                    lossless_queues |= 1 << qos.pfc_to_queue[p];
                }
            }
            for g in 0..8 {
                state.pgs[g].profile = buffers.pg_profile[g].map(profile);
                state.pgs[g].alloc_side =
                    state.pgs[g].profile.map_or(0, |p| Allocation::side(p.alloc_pool, i));
                state.pgs[g].lossless = lossless_pgs & (1 << g) != 0;
                if !state.pgs[g].lossless {
                    state.pgs[g].xoff = false;
                }
                // (`in_xoff` is rebuilt from these flags below.)
                state.queues[g].profile = buffers.queue_profile[g].map(profile);
                state.queues[g].alloc_side =
                    state.queues[g].profile.map_or(0, |p| Allocation::side(p.alloc_pool, i));
                state.queues[g].lossless = lossless_queues & (1 << g) != 0;
                state.queues[g].wred = match buffers.queue_wred[g].map(|w| config.wred_profiles.get(w)) {
                    None => QueueWred::Off,
                    Some(Some(w)) if w.weight == 0 && w.colours[Colour::Green as usize].min_bytes > 0 => {
                        QueueWred::Instant {
                            pass_below_cells: cells(w.colours[Colour::Green as usize].min_bytes, cell),
                        }
                    }
                    Some(_) => QueueWred::Other,
                };
            }
            state.caps = vec![None; self.pools.len()];
            state.shared_by_pool.resize(self.pools.len(), 0);
            for &i in buffers.ingress_profile_list.iter().chain(&buffers.egress_profile_list) {
                let p = profile(i);
                state.caps[p.pool] = Some(p.threshold);
            }
        }
        self.rebuild_xoff_index();
    }
}
