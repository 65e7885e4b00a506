//! A profile's QoS and buffer tables, read straight from its CONFIG_DB (independently of the switch model's
//! configuration compiler): the classification maps (DSCP → TC → PG / queue, PFC priorities), the
//! scheduler and WRED entries of a queue, and the buffer profiles and pools of a PG or queue, in cells.
//!
//! It computes no buffer expectation: the buffer tests take theirs from sonic-mgmt's published figures
//! ([`crate::published`]).

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
    fn profiles_resolve_to_cells_through_references() {
        let db = db(r#"
BUFFER_ASIC: { global: { cell_size: 100 } }
BUFFER_POOL: { ing: { type: ingress, mode: dynamic, size: 90000, xoff: 2050 } }
BUFFER_PROFILE: { pg3: { pool: "[BUFFER_POOL|ing]", size: 1001, xon: 0, xoff: 2000, dynamic_th: -2 } }
BUFFER_PG: { "Ethernet0|3-4": { profile: "[BUFFER_PROFILE|pg3]" } }
PORT_QOS_MAP: { Ethernet0: { pfc_enable: "3,4" } }
"#);
        let q = Qos::new(&db);
        let p = q.pg_profile("Ethernet0", 4).expect("PG 4");
        assert_eq!(
            (p.pool.as_str(), p.reserved, p.xoff, p.threshold),
            ("ing", 11, 20, Threshold::Dynamic(-2))
        );
        assert_eq!(q.pool("ing"), Pool { size: 900, headroom: 21 });
        assert_eq!(q.pfc_enabled("Ethernet0"), vec![3, 4]);
        assert!(q.pg_profile("Ethernet0", 0).is_none());
    }
}
