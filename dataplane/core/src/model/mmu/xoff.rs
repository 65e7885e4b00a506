//! XOFF and XON of lossless PGs: the bookkeeping that lets the packet path look only at the PGs a change
//! can concern.
//!
//! - **XOFF raised by a filling pool** ([`Mmu::raise_crossed`]): only a dynamic lossless PG of the pool
//!   that holds shared cells and is not in XOFF can be pushed over its (shrinking) limit by another PG's
//!   frame. Each pool keeps those PGs as a bit set over its list of dynamic lossless PGs, so a walk
//!   visits them in the list's order and skips the rest. A raisable PG is over its limit exactly when its
//!   partition's free space is at most its crossing point ([`Mmu::raise_from`]), so each pool partition
//!   keeps an upper bound of its raisable PGs' points: raised where a point can grow (an admission, a PG
//!   entering the set), made exact by a walk. An admission walks only when the free space is down to the
//!   bound (most admissions do not; debug builds check those against the full walk).
//! - **XON when the pool drains** ([`Mmu::recheck_xon`]): a PG in XOFF with no headroom in use is back at
//!   its XON point when `reserved + shared <= max(xon, reserved + limit − xon_offset)`. Its usage does not
//!   move while its own frames do not, and its limit depends only on the free space of its pool partition,
//!   so the condition is a pool-occupancy threshold: XON is due exactly while the partition's shared usage
//!   is below [`XoffEntry::xon_below`], recomputed when the PG's own state changes. Each pool partition
//!   keeps an upper bound of its PGs' thresholds; a release re-checks the PGs in XOFF only when some
//!   partition's usage is below its bound (the walk compares integers and makes the bound exact again).
//!   After a walk every partition's usage is at or above its bound, and only two things can break that:
//!   a release draining the partition ([`Mmu::note_pool_drained`], which looks at the partitions the
//!   frame held cells in) and a threshold rising ([`Mmu::pg_changed`]); both raise one flag, so a release
//!   costs a compare per partition it drained instead of a look at every pool.
//!   Debug builds compare every cached answer with the full computation.

use super::{CellProfile, CellThreshold, MAX_PARTITIONS, Mmu, NO_RAISE_SHIFT, PgState, PoolId};
use crate::model::config::PortId;

/// A slot index meaning "none" in [`PgState`]'s `xoff_slot` and `dynamic_slot`.
pub(super) const NO_SLOT: u32 = u32::MAX;

/// A PG holding XOFF.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct XoffEntry {
    pub(super) port: PortId,
    pub(super) pg: u8,
    /// The pool and partition whose shared usage decides the PG's XON (`None`: the PG lost its profile;
    /// it stays in XOFF until one comes back).
    pub(super) pool: Option<PoolId>,
    pub(super) partition: u8,
    /// XON is due while the partition's shared usage (cells) is below this: 0 never, `u64::MAX` always.
    pub(super) xon_below: u64,
}

impl Mmu {
    fn pg(&self, port: PortId, pg: u8) -> &PgState {
        &self.ports[port.index()].pgs[usize::from(pg)]
    }

    /// Asserts XOFF on a lossless PG whose usage went to headroom or reached its shared limit. Returns
    /// whether it newly asserted.
    pub(super) fn update_xoff(&mut self, port: PortId, pg: u8) -> bool {
        let due = self.xoff_due(port, pg);
        if due {
            self.enter_xoff(port, pg);
        }
        due
    }

    /// Is a lossless PG not in XOFF at its XOFF point (headroom in use, or its shared usage at its limit)?
    fn xoff_due(&self, port: PortId, pg: u8) -> bool {
        let state = self.pg(port, pg);
        if !state.lossless || state.xoff {
            return false;
        }
        // The profile by reference: this runs on every admission to a lossless PG.
        let Some(prof) = &state.profile else { return false };
        state.headroom_used > 0 || {
            let limit = self.limit(prof.threshold, prof.pool, state.partition);
            // Spectrum asserts XOFF once the shared space and the `size − xoff` above it are both full.
            let reserve_full = !self.pooled_reserve || state.reserved_used >= prof.reserved;
            state.shared_used >= limit && reserve_full
        }
    }

    pub(super) fn enter_xoff(&mut self, port: PortId, pg: u8) {
        let slot = self.in_xoff.len() as u32;
        let state = &mut self.ports[port.index()].pgs[usize::from(pg)];
        state.xoff = true;
        state.xoff_slot = slot;
        let entry = XoffEntry { port, pg, pool: None, partition: 0, xon_below: 0 };
        self.in_xoff.push(entry);
        self.pg_changed(port, pg);
    }

    pub(super) fn leave_xoff(&mut self, port: PortId, pg: u8) {
        let state = &mut self.ports[port.index()].pgs[usize::from(pg)];
        let slot = state.xoff_slot as usize;
        state.xoff = false;
        state.xoff_slot = NO_SLOT;
        debug_assert_eq!((self.in_xoff[slot].port, self.in_xoff[slot].pg), (port, pg), "XOFF slot");
        self.in_xoff.swap_remove(slot);
        if let Some(moved) = self.in_xoff.get(slot).copied() {
            self.ports[moved.port.index()].pgs[usize::from(moved.pg)].xoff_slot = slot as u32;
        }
        self.pg_changed(port, pg);
    }

    /// A PG's usage, partition or XOFF state changed: its place in the raisable set, and its XON
    /// threshold if it is in XOFF, follow.
    pub(super) fn pg_changed(&mut self, port: PortId, pg: u8) {
        // The fields read, not a copy of the whole state (a profile and watermarks): this runs on every
        // admission and release of a managed PG.
        let state = self.pg(port, pg);
        let (pool, partition, xoff) = (state.profile.as_ref().map(|p| p.pool), state.partition, state.xoff);
        let (dynamic_slot, xoff_slot) = (state.dynamic_slot, state.xoff_slot as usize);
        let raisable = state.shared_used > 0 && !xoff;
        let xon_below = if xoff { self.xon_below(state) } else { 0 };
        if dynamic_slot != NO_SLOT
            && let Some(pool) = pool
        {
            let (word, bit) = (dynamic_slot as usize / 64, dynamic_slot % 64);
            let words = &mut self.raisable[pool];
            if raisable {
                words[word] |= 1 << bit;
                self.note_raise_bound(port, pg);
            } else {
                words[word] &= !(1 << bit);
            }
        }
        if xoff {
            let entry = &mut self.in_xoff[xoff_slot];
            (entry.pool, entry.partition, entry.xon_below) = (pool, partition, xon_below);
            if let Some(pool) = pool {
                let bound = &mut self.xon_bound[pool][usize::from(partition)];
                *bound = (*bound).max(xon_below);
                if self.pools[pool].shared_used[usize::from(partition)] < xon_below {
                    self.xon_dirty = true;
                }
            }
        }
    }

    /// A release lowered a pool partition's shared usage: if it fell below the bound of the XON thresholds
    /// there, [`Mmu::recheck_xon`] has a walk to make. Every other way a PG in XOFF can become due goes
    /// through [`Mmu::pg_changed`], which flags it the same way, so a release needs to look only at the
    /// partitions it drained, not at every pool.
    pub(super) fn note_pool_drained(&mut self, pool: PoolId, partition: usize) {
        if !self.in_xoff.is_empty()
            && self.pools[pool].shared_used[partition] < self.xon_bound[pool][partition]
        {
            self.xon_dirty = true;
        }
    }

    /// Is the PG (in XOFF, its entry just refreshed by [`Mmu::pg_changed`]) back at its XON point?
    pub(super) fn own_xon_due(&self, port: PortId, pg: u8) -> bool {
        let slot = self.pg(port, pg).xoff_slot as usize;
        self.entry_xon_due(&self.in_xoff[slot])
    }

    /// Debug builds: the PG's raisable bit and XOFF entry are what [`Mmu::pg_changed`] would make them
    /// (the packet path calls it only when they can have changed).
    pub(super) fn debug_check_pg_index(&self, port: PortId, pg: u8) {
        if cfg!(debug_assertions) {
            let state = self.pg(port, pg);
            if let (Some(prof), true) = (state.profile, state.dynamic_slot != NO_SLOT) {
                let slot = state.dynamic_slot as usize;
                let bit = self.raisable[prof.pool][slot / 64] & (1 << (slot % 64)) != 0;
                assert_eq!(bit, state.shared_used > 0 && !state.xoff, "raisable bit of {port:?} PG {pg}");
            }
            if state.xoff {
                let e = &self.in_xoff[state.xoff_slot as usize];
                assert_eq!(e.pool, state.profile.map(|p| p.pool), "XOFF entry's pool");
                assert_eq!(e.xon_below, self.xon_below(state), "XOFF entry's XON threshold");
                // A PG whose XON is "never" (headroom in use) keeps the partition its entry had then.
                if e.xon_below != 0 {
                    assert_eq!(e.partition, state.partition, "XOFF entry's partition");
                }
            }
        }
    }

    /// The pool usage below which a PG in XOFF is at its XON point (see the module docs): 0 never,
    /// `u64::MAX` whatever the pool holds.
    fn xon_below(&self, state: &PgState) -> u64 {
        let Some(prof) = &state.profile else { return 0 };
        if state.headroom_used > 0 {
            return 0;
        }
        let used = state.reserved_used + state.shared_used;
        if used <= prof.xon {
            return u64::MAX;
        }
        // Here used > 0, so `(reserved + limit).saturating_sub(xon_offset) >= used` is
        // `limit >= used + xon_offset − reserved`.
        let Some(need) = (used + prof.xon_offset).checked_sub(prof.reserved).filter(|&n| n > 0) else {
            return u64::MAX;
        };
        let size = self.pools[prof.pool].size;
        let always_if = |holds: bool| if holds { u64::MAX } else { 0 };
        match prof.threshold {
            CellThreshold::Static(Some(c)) => always_if(c >= need),
            CellThreshold::Static(None) => always_if(size >= need),
            CellThreshold::Dynamic(n) => {
                // limit = free × 2^n with free = size − used: the least free space that gives `need`.
                let free_min =
                    if n >= 0 { Some(need.div_ceil(1 << n)) } else { need.checked_mul(1 << -i32::from(n)) };
                match free_min {
                    Some(f) if f <= size => size - f + 1,
                    _ => 0,
                }
            }
        }
    }

    /// The pool's free space shrank: every other lossless PG of the pool holding shared cells in the same
    /// partition is compared with its (lower) limit again, as the ASIC's level comparison does. Those that
    /// reach it assert XOFF without waiting for a frame of their own (sonic-mgmt's HdrmPoolSizeTest).
    /// Nothing to do while the partition's free space is above the bound of its raisable PGs'
    /// [`Mmu::raise_from`] points, as none of them is then at its limit.
    #[inline]
    pub(super) fn raise_crossed(&mut self, port: PortId, pg: u8, pool: PoolId, partition: u8) {
        self.debug_check_raisable(pool);
        // The partition's free space, read once: each PG's dynamic limit is it times the PG's alpha.
        let k = usize::from(partition);
        let free = {
            let p = &self.pools[pool];
            p.size.saturating_sub(p.shared_used[k])
        };
        if free > self.raise_bound[pool][k] {
            if cfg!(debug_assertions) {
                for &(other, other_pg) in &self.dynamic_lossless[pool] {
                    let state = self.pg(other, other_pg);
                    if state.shared_used > 0 && !state.xoff && state.partition == partition {
                        assert!(free > Self::raise_from(state), "{other:?} PG {other_pg} past the bound");
                        assert!(!self.xoff_due(other, other_pg), "{other:?} PG {other_pg} under its limit");
                    }
                }
            }
            return;
        }
        self.raise_walk(port, pg, pool, partition, free);
    }

    /// [`Mmu::raise_crossed`]'s walk over the raisable PGs of the pool, which makes the partition's bound
    /// exact again (the PGs it raised to XOFF leave the raisable set).
    #[inline(never)]
    fn raise_walk(&mut self, port: PortId, pg: u8, pool: PoolId, partition: u8, free: u64) {
        let mut bound = 0;
        for w in 0..self.raisable[pool].len() {
            let mut word = self.raisable[pool][w];
            while word != 0 {
                let i = w * 64 + word.trailing_zeros() as usize;
                word &= word - 1;
                let (other, other_pg) = self.dynamic_lossless[pool][i];
                let state = self.pg(other, other_pg);
                if state.partition != partition {
                    continue;
                }
                let from = Self::raise_from(state);
                // Most PGs are still under their limit: that answer without the full check.
                if (other, other_pg) == (port, pg) || free > from {
                    debug_assert!(
                        (other, other_pg) == (port, pg) || !self.xoff_due(other, other_pg),
                        "{other:?} PG {other_pg} under its limit"
                    );
                    bound = bound.max(from);
                    continue;
                }
                if self.update_xoff(other, other_pg) {
                    self.raised.push((other, other_pg));
                } else {
                    bound = bound.max(from);
                }
            }
        }
        self.raise_bound[pool][usize::from(partition)] = bound;
    }

    /// The largest free space of its partition at which a PG holding `shared_used` cells is at or over its
    /// dynamic limit, `2^n × free` (`u64::MAX` where that limit does not describe it exactly: headroom in
    /// use, a static profile, a shift that could overflow). With n ≥ 0, `s ≥ free << n` exactly when
    /// `free ≤ s >> n`; with n = −m, `s ≥ free >> m` exactly when `free < (s + 1) << m`.
    #[inline(always)]
    pub(super) fn raise_from(state: &PgState) -> u64 {
        let Some(prof) = &state.profile else { return u64::MAX };
        let n = prof.raise_shift;
        if state.headroom_used > 0 || n == NO_RAISE_SHIFT {
            return u64::MAX;
        }
        let s = state.shared_used;
        if n >= 0 {
            s >> n
        } else {
            let m = u32::from(n.unsigned_abs());
            let s1 = s.saturating_add(1);
            if s1.leading_zeros() >= m { (s1 << m) - 1 } else { u64::MAX }
        }
    }

    /// A raisable PG's usage, partition or headroom may have grown: its partition's bound follows.
    #[inline(always)]
    pub(super) fn note_raise_bound(&mut self, port: PortId, pg: u8) {
        let state = self.pg(port, pg);
        if state.shared_used == 0 || state.xoff || state.dynamic_slot == NO_SLOT {
            return;
        }
        let Some(pool) = state.profile.as_ref().map(|p| p.pool) else { return };
        let (from, k) = (Self::raise_from(state), usize::from(state.partition) % MAX_PARTITIONS);
        if let Some(bounds) = self.raise_bound.get_mut(pool) {
            bounds[k] = bounds[k].max(from);
        }
    }

    fn debug_check_raisable(&self, pool: PoolId) {
        if cfg!(debug_assertions) {
            for (i, &(port, pg)) in self.dynamic_lossless[pool].iter().enumerate() {
                let state = self.pg(port, pg);
                let bit = self.raisable[pool][i / 64] & (1 << (i % 64)) != 0;
                assert_eq!(bit, state.shared_used > 0 && !state.xoff, "raisable bit of {port:?} PG {pg}");
                if let Some(prof) = &state.profile {
                    let size = self.pools[prof.pool].size;
                    assert_eq!(
                        prof.raise_shift,
                        CellProfile::raise_shift(prof.threshold, size),
                        "raise shift"
                    );
                }
                if bit {
                    assert!(
                        self.raise_bound[pool][usize::from(state.partition)] >= Self::raise_from(state),
                        "raise bound below {port:?} PG {pg}'s point"
                    );
                }
            }
        }
    }

    /// Appends the PGs that asserted XOFF because the pool filled under them since the last call (beside
    /// the PG of the admitted frame, which [`Mmu::admit`] reports) to `out`.
    pub fn take_raised(&mut self, out: &mut Vec<(PortId, u8)>) {
        out.append(&mut self.raised);
    }

    /// Did a filling pool raise XOFF on other PGs since the last [`Mmu::take_raised`]?
    pub fn has_raised(&self) -> bool {
        !self.raised.is_empty()
    }

    /// Is any PG in XOFF?
    pub fn any_xoff(&self) -> bool {
        !self.in_xoff.is_empty()
    }

    /// Is a PG in XOFF back at its XON point? (The full computation.)
    fn xon_due(&self, port: PortId, pg: u8) -> bool {
        let state = self.pg(port, pg);
        let Some(prof) = &state.profile else { return false };
        if !state.xoff || state.headroom_used > 0 {
            return false;
        }
        let limit = self.limit(prof.threshold, prof.pool, state.partition);
        let xon_point = prof.xon.max((prof.reserved + limit).saturating_sub(prof.xon_offset));
        state.reserved_used + state.shared_used <= xon_point
    }

    /// The cached answer of [`Mmu::xon_due`] for an entry of `in_xoff`.
    fn entry_xon_due(&self, e: &XoffEntry) -> bool {
        let due =
            e.pool.is_some_and(|pool| self.pools[pool].shared_used[usize::from(e.partition)] < e.xon_below);
        debug_assert_eq!(due, self.xon_due(e.port, e.pg), "cached XON threshold of {:?} PG {}", e.port, e.pg);
        due
    }

    /// Re-evaluates XON on the PGs holding XOFF (a dynamic limit grows when other PGs drain), appending
    /// those released to `released`. Nothing to do unless a pool partition's usage fell below the bound of
    /// its PGs' XON thresholds; then one walk over the PGs in XOFF. Allocates nothing once `released` has
    /// grown.
    #[inline]
    pub fn recheck_xon(&mut self, released: &mut Vec<(PortId, u8)>) {
        if !self.xon_dirty {
            debug_assert!(self.in_xoff.iter().all(|e| !self.entry_xon_due(e)), "a PG past its XON point");
            return;
        }
        self.recheck_xon_walk(released);
    }

    /// [`Mmu::recheck_xon`]'s walk, out of line (most releases have none to make).
    #[inline(never)]
    fn recheck_xon_walk(&mut self, released: &mut Vec<(PortId, u8)>) {
        self.xon_dirty = false;
        for bound in &mut self.xon_bound {
            *bound = [0; MAX_PARTITIONS];
        }
        let mut i = 0;
        while i < self.in_xoff.len() {
            let e = self.in_xoff[i];
            if self.entry_xon_due(&e) {
                self.leave_xoff(e.port, e.pg);
                released.push((e.port, e.pg));
            } else {
                if let Some(pool) = e.pool {
                    let bound = &mut self.xon_bound[pool][usize::from(e.partition)];
                    *bound = (*bound).max(e.xon_below);
                }
                i += 1;
            }
        }
    }

    /// PGs of a port currently asserting XOFF, as a bit mask.
    pub fn xoff_pgs(&self, port: PortId) -> u8 {
        self.ports
            .get(port.index())
            .map_or(0, |p| (0..8).filter(|&g| p.pgs[g].xoff).fold(0, |m, g| m | 1 << g))
    }

    /// Rebuilds the XOFF list, the raisable sets and the XON bounds from the PGs' state (after a
    /// configuration), in port × PG order.
    pub(super) fn rebuild_xoff_index(&mut self) {
        self.raised.clear();
        self.in_xoff.clear();
        self.dynamic_lossless = vec![Vec::new(); self.pools.len()];
        self.xon_bound = vec![[0; MAX_PARTITIONS]; self.pools.len()];
        self.raise_bound = vec![[0; MAX_PARTITIONS]; self.pools.len()];
        self.xon_dirty = false;
        for p in 0..self.ports.len() {
            for g in 0..8 {
                let (port, pg) = (PortId::new(p), g as u8);
                let state = &mut self.ports[p].pgs[g];
                state.xoff_slot = NO_SLOT;
                state.dynamic_slot = NO_SLOT;
                if state.xoff {
                    state.xoff_slot = self.in_xoff.len() as u32;
                    self.in_xoff.push(XoffEntry { port, pg, pool: None, partition: 0, xon_below: 0 });
                }
                if let Some(prof) = state
                    .profile
                    .filter(|p| state.lossless && matches!(p.threshold, CellThreshold::Dynamic(_)))
                {
                    state.dynamic_slot = self.dynamic_lossless[prof.pool].len() as u32;
                    self.dynamic_lossless[prof.pool].push((port, pg));
                }
            }
        }
        self.raisable = self.dynamic_lossless.iter().map(|pgs| vec![0; pgs.len().div_ceil(64)]).collect();
        for p in 0..self.ports.len() {
            for g in 0..8 {
                self.pg_changed(PortId::new(p), g as u8);
            }
        }
    }
}
