//! Expected numbers from a profile, the way sonic-mgmt's `qos_params` (or NVIDIA's run-time parameter
//! generator) provides them: read straight from the CONFIG_DB tables, independently of the switch model's
//! own configuration compiler, and turned into packet counts with the documented buffer rules
//! (`../shared/reference/sonic.md` §2.1–2.3, the MMU summary at the top of
//! `dataplane/src/model/mmu.rs`):
//!
//! - a frame of `len` bytes takes `ceil(len / cell_size)` cells; sizes in bytes round up to whole cells;
//! - a PG or queue first fills its reserved `size`, then its pool's shared space while its shared usage
//!   stays within `static_th`, or within `2^dynamic_th × (pool size − pool shared usage)`, and within
//!   the port's cap (`BUFFER_PORT_*_PROFILE_LIST`) computed the same way;
//! - a lossless PG asserts XOFF when its shared usage reaches that limit or it spills into headroom,
//!   then absorbs up to `xoff` more (private headroom, or the pool's shared headroom `xoff` when set);
//!   the next frame is an ingress drop. A lossy queue tail-drops at its limit.
//!
//! With one congested consumer of a pool, a dynamic limit settles at alpha/(1+alpha) of the pool.

use lossless_dataplane::model::config::ConfigDb;
use std::collections::BTreeMap;

type Fields = BTreeMap<String, String>;

/// A view of a profile's QoS and buffer tables.
#[derive(Debug, Clone, Copy)]
pub struct Qos<'a> {
    db: &'a ConfigDb,
}

/// A buffer profile resolved to cells.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    pub name: String,
    pub pool: String,
    pub reserved: u64,
    pub threshold: Threshold,
    pub xon: u64,
    pub xoff: u64,
    pub xon_offset: u64,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Threshold {
    /// alpha = 2^n.
    Dynamic(i32),
    /// Cells; `None` = no limit (static_th 0).
    Static(Option<u64>),
}

/// A pool in cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pool {
    pub size: u64,
    /// Shared headroom pool (`xoff`), 0 when none.
    pub headroom: u64,
}

fn strip_ref<'s>(value: &'s str, table: &str) -> &'s str {
    let v = value.trim();
    v.strip_prefix('[')
        .and_then(|v| v.strip_suffix(']'))
        .map(|v| v.strip_prefix(table).and_then(|v| v.strip_prefix('|')).unwrap_or(v))
        .unwrap_or(v)
}

/// Whether `key` (`Ethernet0,Ethernet4|3-4`, `Ethernet0`, `global`) covers `port` and `index`.
fn key_covers(key: &str, port: &str, index: Option<u8>) -> bool {
    let (ports, range) = match key.split_once('|') {
        Some((p, r)) => (p, Some(r)),
        None => (key, None),
    };
    if !ports.split(',').any(|p| p.trim() == port) {
        return false;
    }
    match (index, range) {
        (None, _) => true,
        (Some(_), None) => false,
        (Some(i), Some(r)) => r.split(',').any(|part| match part.split_once('-') {
            Some((a, b)) => {
                a.trim().parse::<u8>().is_ok_and(|a| a <= i) && b.trim().parse::<u8>().is_ok_and(|b| i <= b)
            }
            None => part.trim().parse::<u8>() == Ok(i),
        }),
    }
}

impl<'a> Qos<'a> {
    pub fn new(db: &'a ConfigDb) -> Qos<'a> {
        Qos { db }
    }

    fn table(&self, name: &str) -> impl Iterator<Item = (&'a String, &'a Fields)> {
        self.db.tables.get(name).into_iter().flatten()
    }

    fn entry(&self, table: &str, key: &str) -> Option<&'a Fields> {
        self.db.tables.get(table)?.get(key)
    }

    /// The entry of `table` that covers (port, index).
    fn covering(&self, table: &str, port: &str, index: Option<u8>) -> Option<&'a Fields> {
        self.table(table).find(|(k, _)| key_covers(k, port, index)).map(|(_, v)| v)
    }

    /// BUFFER_ASIC|global|cell_size.
    pub fn cell_size(&self) -> u64 {
        self.entry("BUFFER_ASIC", "global")
            .and_then(|f| f.get("cell_size"))
            .and_then(|v| v.parse().ok())
            .expect("the profile sets BUFFER_ASIC|global|cell_size")
    }

    /// Cells a frame (or a size in bytes) occupies.
    pub fn cells(&self, bytes: u64) -> u64 {
        bytes.div_ceil(self.cell_size())
    }

    fn bytes(fields: &Fields, name: &str) -> u64 {
        fields.get(name).and_then(|v| v.trim().parse().ok()).unwrap_or(0)
    }

    pub fn pool(&self, name: &str) -> Pool {
        let f = self.entry("BUFFER_POOL", name).unwrap_or_else(|| panic!("no BUFFER_POOL|{name}"));
        Pool { size: self.cells(Self::bytes(f, "size")), headroom: self.cells(Self::bytes(f, "xoff")) }
    }

    pub fn profile(&self, name: &str) -> Profile {
        let name = strip_ref(name, "BUFFER_PROFILE");
        let f = self.entry("BUFFER_PROFILE", name).unwrap_or_else(|| panic!("no BUFFER_PROFILE|{name}"));
        let threshold = match (f.get("dynamic_th"), f.get("static_th")) {
            (Some(d), _) => Threshold::Dynamic(d.trim().parse().expect("dynamic_th")),
            (None, Some(s)) => {
                let bytes: u64 = s.trim().parse().expect("static_th");
                Threshold::Static((bytes > 0).then(|| self.cells(bytes)))
            }
            (None, None) => Threshold::Static(None),
        };
        Profile {
            name: name.to_owned(),
            pool: strip_ref(f.get("pool").expect("profile pool"), "BUFFER_POOL").to_owned(),
            reserved: self.cells(Self::bytes(f, "size")),
            threshold,
            xon: self.cells(Self::bytes(f, "xon")),
            xoff: self.cells(Self::bytes(f, "xoff")),
            xon_offset: self.cells(Self::bytes(f, "xon_offset")),
        }
    }

    /// BUFFER_PG's profile for (port, PG).
    pub fn pg_profile(&self, port: &str, pg: u8) -> Option<Profile> {
        self.covering("BUFFER_PG", port, Some(pg))
            .map(|f| self.profile(f.get("profile").expect("BUFFER_PG profile")))
    }

    /// BUFFER_QUEUE's profile for (port, queue).
    pub fn queue_profile(&self, port: &str, queue: u8) -> Option<Profile> {
        self.covering("BUFFER_QUEUE", port, Some(queue))
            .map(|f| self.profile(f.get("profile").expect("BUFFER_QUEUE profile")))
    }

    /// The port-level profile (BUFFER_PORT_INGRESS/EGRESS_PROFILE_LIST) on `pool`, if any.
    pub fn port_profile(&self, port: &str, ingress: bool, pool: &str) -> Option<Profile> {
        let table =
            if ingress { "BUFFER_PORT_INGRESS_PROFILE_LIST" } else { "BUFFER_PORT_EGRESS_PROFILE_LIST" };
        let list = self.covering(table, port, None)?.get("profile_list")?;
        list.split(',').map(|p| self.profile(p)).find(|p| p.pool == pool)
    }

    fn port_qos(&self, port: &str) -> Option<&'a Fields> {
        self.covering("PORT_QOS_MAP", port, None).or_else(|| self.entry("PORT_QOS_MAP", "global"))
    }

    fn map(&self, port: &str, field: &str, table: &str) -> Option<&'a Fields> {
        let name = self.port_qos(port)?.get(field)?;
        self.entry(table, strip_ref(name, table))
    }

    fn lookup(map: Option<&Fields>, from: u8, default: u8) -> u8 {
        map.and_then(|m| m.get(&from.to_string())).and_then(|v| v.trim().parse().ok()).unwrap_or(default)
    }

    /// DSCP → TC on the ingress port (no map: TC 0).
    pub fn dscp_to_tc(&self, port: &str, dscp: u8) -> u8 {
        Self::lookup(self.map(port, "dscp_to_tc_map", "DSCP_TO_TC_MAP"), dscp, 0)
    }

    /// PCP → TC on the ingress port, when it has a dot1p map.
    pub fn dot1p_to_tc(&self, port: &str, pcp: u8) -> Option<u8> {
        let map = self.map(port, "dot1p_to_tc_map", "DOT1P_TO_TC_MAP")?;
        Some(Self::lookup(Some(map), pcp, 0))
    }

    /// TC → queue on the egress port (no map: identity).
    pub fn tc_to_queue(&self, port: &str, tc: u8) -> u8 {
        Self::lookup(self.map(port, "tc_to_queue_map", "TC_TO_QUEUE_MAP"), tc, tc)
    }

    /// TC → PG on the ingress port (no map: PG 0).
    pub fn tc_to_pg(&self, port: &str, tc: u8) -> u8 {
        Self::lookup(self.map(port, "tc_to_pg_map", "TC_TO_PRIORITY_GROUP_MAP"), tc, 0)
    }

    /// Priorities with PFC on `port` (PORT_QOS_MAP pfc_enable).
    pub fn pfc_enabled(&self, port: &str) -> Vec<u8> {
        self.port_qos(port)
            .and_then(|f| f.get("pfc_enable"))
            .map(|v| v.split(',').filter_map(|p| p.trim().parse().ok()).collect())
            .unwrap_or_default()
    }

    /// The first DSCP whose TC is `tc` on `port`.
    pub fn dscp_for_tc(&self, port: &str, tc: u8) -> Option<u8> {
        (0..64).find(|&d| self.dscp_to_tc(port, d) == tc)
    }

    /// SCHEDULER fields of (port, queue), via QUEUE|port|q.
    pub fn scheduler(&self, port: &str, queue: u8) -> Option<&'a Fields> {
        let name = self.covering("QUEUE", port, Some(queue))?.get("scheduler")?;
        self.entry("SCHEDULER", strip_ref(name, "SCHEDULER"))
    }

    /// WRED_PROFILE fields of (port, queue), via QUEUE|port|q.
    pub fn wred(&self, port: &str, queue: u8) -> Option<&'a Fields> {
        let name = self.covering("QUEUE", port, Some(queue))?.get("wred_profile")?;
        self.entry("WRED_PROFILE", strip_ref(name, "WRED_PROFILE"))
    }

    /// Shared cells a lone consumer of `pool` can take under `threshold` (its last admitted cell is the
    /// one with `used + 1 <= limit(free)`), and the port cap's when it has one.
    fn shared_room(&self, threshold: Threshold, pool: Pool) -> u64 {
        match threshold {
            Threshold::Static(Some(c)) => c.min(pool.size),
            Threshold::Static(None) => pool.size,
            Threshold::Dynamic(n) => {
                // Largest s with s <= limit(P - (s - 1)); the limit shrinks as s grows: binary search.
                let limit = |free: u64| if n >= 0 { free << n } else { free >> (-n) };
                let (mut lo, mut hi) = (0u64, pool.size);
                while lo < hi {
                    let mid = (lo + hi).div_ceil(2);
                    if mid <= limit(pool.size - (mid - 1)) { lo = mid } else { hi = mid - 1 }
                }
                lo
            }
        }
    }

    /// Where a PG's shared usage stops (and a lossless PG asserts XOFF) when it alone fills its pool:
    /// the PG's own limit or the port's cap, whichever binds first.
    pub fn pg_shared_limit(&self, port: &str, pg: u8) -> u64 {
        let prof = self.pg_profile(port, pg).unwrap_or_else(|| panic!("no BUFFER_PG for {port}|{pg}"));
        let pool = self.pool(&prof.pool);
        let own = self.shared_room(prof.threshold, pool);
        let cap = self
            .port_profile(port, true, &prof.pool)
            .map_or(u64::MAX, |p| self.shared_room(p.threshold, pool));
        own.min(cap)
    }

    /// Same for an egress queue.
    pub fn queue_shared_limit(&self, port: &str, queue: u8) -> u64 {
        let prof =
            self.queue_profile(port, queue).unwrap_or_else(|| panic!("no BUFFER_QUEUE for {port}|{queue}"));
        let pool = self.pool(&prof.pool);
        let own = self.shared_room(prof.threshold, pool);
        let cap = self
            .port_profile(port, false, &prof.pool)
            .map_or(u64::MAX, |p| self.shared_room(p.threshold, pool));
        own.min(cap)
    }

    /// Headroom cells a lossless PG absorbs after XOFF.
    pub fn pg_headroom(&self, port: &str, pg: u8) -> u64 {
        let prof = self.pg_profile(port, pg).expect("BUFFER_PG");
        let pool = self.pool(&prof.pool);
        if pool.headroom > 0 { prof.xoff.min(pool.headroom) } else { prof.xoff }
    }

    /// The shared limit `threshold` sets while `pool` holds `pool_used` shared cells: `static_th` (no
    /// limit: the pool), or `2^n × (size − pool_used)`.
    pub fn limit(threshold: Threshold, pool: Pool, pool_used: u64) -> u64 {
        match threshold {
            Threshold::Static(Some(c)) => c,
            Threshold::Static(None) => pool.size,
            Threshold::Dynamic(n) => {
                let free = pool.size.saturating_sub(pool_used);
                if n >= 0 { free << n } else { free >> (-n) }
            }
        }
    }

    /// Shared cells a PG that starts empty can take when others already hold `others` shared cells of the
    /// pool, under `threshold` applied to `own + its cells` (`own`: what else the threshold counts, e.g. the
    /// port's other PGs under a port cap): the largest s with `own + s <= limit(others + s − 1)` and
    /// `others + s <= size`.
    fn room_after(threshold: Threshold, pool: Pool, others: u64, own: u64) -> u64 {
        let fits = |s: u64| {
            s == 0 || (others + s <= pool.size && own + s <= Self::limit(threshold, pool, others + s - 1))
        };
        // `fits` holds up to some s and fails beyond it (the limit only shrinks as s grows).
        let (mut lo, mut hi) = (0u64, pool.size.saturating_sub(others));
        while lo < hi {
            let mid = (lo + hi).div_ceil(2);
            if fits(mid) { lo = mid } else { hi = mid - 1 }
        }
        lo
    }

    /// Where a PG's shared usage stops when it fills after others: the pool already holds `pool_used`
    /// shared cells, `port_used` of them on the same port (counted by the port's cap). With both 0 this
    /// is [`pg_shared_limit`](Self::pg_shared_limit).
    pub fn pg_shared_limit_after(&self, port: &str, pg: u8, pool_used: u64, port_used: u64) -> u64 {
        let prof = self.pg_profile(port, pg).unwrap_or_else(|| panic!("no BUFFER_PG for {port}|{pg}"));
        let pool = self.pool(&prof.pool);
        let own = Self::room_after(prof.threshold, pool, pool_used, 0);
        let cap = self
            .port_profile(port, true, &prof.pool)
            .map_or(u64::MAX, |p| Self::room_after(p.threshold, pool, pool_used, port_used));
        own.min(cap)
    }

    /// The XON point of a lossless PG that alone uses its pool's shared space: the largest total usage
    /// (cells) at which it releases XOFF, with no headroom in use: usage `<= max(xon, size + limit −
    /// xon_offset)`, the dynamic limit evaluated at that usage (SAI's `XON_TH` / `XON_OFFSET_TH`,
    /// `../shared/reference/sonic.md` §2.3). At most the XOFF point (`size` + the shared limit).
    pub fn pg_xon_usage(&self, port: &str, pg: u8) -> u64 {
        let prof = self.pg_profile(port, pg).unwrap_or_else(|| panic!("no BUFFER_PG for {port}|{pg}"));
        let pool = self.pool(&prof.pool);
        let releases = |shared: u64| {
            let limit = Self::limit(prof.threshold, pool, shared);
            prof.reserved + shared <= prof.xon.max((prof.reserved + limit).saturating_sub(prof.xon_offset))
        };
        // Draining lowers the usage and raises a dynamic limit: once it releases, it stays released.
        match (0..=self.pg_shared_limit(port, pg)).rev().find(|&s| releases(s)) {
            Some(s) => prof.reserved + s,
            None => prof
                .xon
                .max((prof.reserved + Self::limit(prof.threshold, pool, 0)).saturating_sub(prof.xon_offset)),
        }
    }
}

/// Packet counts for the buffer tests, for frames of one cell size class (sonic-mgmt's `qos_params`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Params {
    /// Cells one test frame occupies.
    pub cell_occupancy: u64,
    /// PG reserved cells (`size`).
    pub pg_reserved: u64,
    /// PG shared cells at the XOFF point.
    pub pg_shared: u64,
    /// PG headroom cells.
    pub pg_headroom: u64,
    /// The frame whose admission asserts XOFF (the first PFC).
    pub pkts_num_trig_pfc: u64,
    /// The first ingress drop.
    pub pkts_num_trig_ingr_drp: u64,
    /// Queue reserved cells.
    pub q_reserved: u64,
    /// Queue shared cells at its limit.
    pub q_shared: u64,
    /// The first egress drop (lossy queues).
    pub pkts_num_trig_egr_drp: u64,
}

impl Params {
    /// Counts for frames of `frame_len` bytes entering `src` on `pg` and queued on `dst` queue `queue`.
    pub fn compute(qos: &Qos<'_>, src: &str, pg: u8, dst: &str, queue: u8, frame_len: usize) -> Params {
        let occ = qos.cells(frame_len as u64);
        let frames = |cells: u64| cells.div_ceil(occ);
        let prof = qos.pg_profile(src, pg).unwrap_or_else(|| panic!("no BUFFER_PG for {src}|{pg}"));
        let pg_shared = qos.pg_shared_limit(src, pg);
        let lossless = qos.pfc_enabled(src).contains(&pg);
        let pg_headroom = if lossless { qos.pg_headroom(src, pg) } else { 0 };
        let qprof =
            qos.queue_profile(dst, queue).unwrap_or_else(|| panic!("no BUFFER_QUEUE for {dst}|{queue}"));
        let q_shared = qos.queue_shared_limit(dst, queue);
        Params {
            cell_occupancy: occ,
            pg_reserved: prof.reserved,
            pg_shared,
            pg_headroom,
            pkts_num_trig_pfc: frames(prof.reserved + pg_shared),
            pkts_num_trig_ingr_drp: frames(prof.reserved + pg_shared + pg_headroom) + 1,
            q_reserved: qprof.reserved,
            q_shared,
            pkts_num_trig_egr_drp: frames(qprof.reserved + q_shared) + 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn db(text: &str) -> ConfigDb {
        ConfigDb::from_yaml_str(text).unwrap()
    }

    #[test]
    fn keys_cover_ports_and_ranges() {
        assert!(key_covers("Ethernet0,Ethernet4|3-4", "Ethernet4", Some(3)));
        assert!(!key_covers("Ethernet0,Ethernet4|3-4", "Ethernet4", Some(5)));
        assert!(!key_covers("Ethernet0,Ethernet4|3-4", "Ethernet40", Some(3)));
        assert!(key_covers("Ethernet0|0,2", "Ethernet0", Some(2)));
        assert!(key_covers("Ethernet0", "Ethernet0", None));
    }

    #[test]
    fn a_lone_dynamic_consumer_takes_alpha_over_one_plus_alpha() {
        let text = r#"
BUFFER_ASIC: { global: { cell_size: 100 } }
BUFFER_POOL: { ing: { type: ingress, mode: dynamic, size: 90000 }, eg: { type: egress, mode: dynamic, size: 90000 } }
BUFFER_PROFILE:
  pg3: { pool: ing, size: 1000, xon: 0, xoff: 2000, dynamic_th: 0 }
  pg0: { pool: ing, size: 0, dynamic_th: 3 }
  q0: { pool: eg, size: 500, dynamic_th: -1 }
BUFFER_PG: { "Ethernet0|3": { profile: pg3 }, "Ethernet0|0": { profile: pg0 } }
BUFFER_QUEUE: { "Ethernet4|0": { profile: "[BUFFER_PROFILE|q0]" } }
PORT_QOS_MAP: { Ethernet0: { pfc_enable: "3" } }
"#;
        let db = db(text);
        let q = Qos::new(&db);
        // 900 cells, alpha 1: 450; alpha 8: 800; alpha 1/2: 300.
        assert_eq!(q.pg_shared_limit("Ethernet0", 3), 450);
        assert_eq!(q.pg_shared_limit("Ethernet0", 0), 800);
        assert_eq!(q.queue_shared_limit("Ethernet4", 0), 300);
        let p = Params::compute(&q, "Ethernet0", 3, "Ethernet4", 0, 64);
        assert_eq!((p.pkts_num_trig_pfc, p.pkts_num_trig_ingr_drp), (10 + 450, 10 + 450 + 20 + 1));
        assert_eq!(p.pkts_num_trig_egr_drp, 5 + 300 + 1);
    }

    #[test]
    fn later_consumers_share_what_is_left_and_xon_follows_the_limit() {
        let text = r#"
BUFFER_ASIC: { global: { cell_size: 100 } }
BUFFER_POOL: { ing: { type: ingress, mode: dynamic, size: 90000 } }
BUFFER_PROFILE:
  pg3: { pool: ing, size: 1000, xon: 0, xoff: 2000, dynamic_th: 0, xon_offset: 1000 }
  pg4: { pool: ing, size: 1000, xon: 0, xoff: 2000, dynamic_th: 0 }
BUFFER_PG: { "Ethernet0|3": { profile: pg3 }, "Ethernet0|4": { profile: pg4 } }
PORT_QOS_MAP: { Ethernet0: { pfc_enable: "3,4" } }
"#;
        let db = db(text);
        let q = Qos::new(&db);
        assert_eq!(q.pg_shared_limit_after("Ethernet0", 3, 0, 0), q.pg_shared_limit("Ethernet0", 3));
        // 900 cells, 450 taken: the next alpha-1 PG takes half of the 450 left.
        assert_eq!(q.pg_shared_limit_after("Ethernet0", 4, 450, 450), 225);
        // XON at 10 + s with s <= 900 - s - 10 (xon_offset 10 cells): s <= 445.
        assert_eq!(q.pg_xon_usage("Ethernet0", 3), 10 + 445);
        // Without xon_offset the XON point is the XOFF point.
        assert_eq!(q.pg_xon_usage("Ethernet0", 4), 10 + 450);
    }
}
