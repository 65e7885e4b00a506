//! Fidelity: the model, run as sonic-mgmt's PTF procedures run a real switch, must hit the trigger points
//! sonic-mgmt publishes for real ASICs, within each figure's own margin. Every expected number here is
//! copied from outside the model (sonic-mgmt's `tests/qos/files/qos_params.<asic>.yaml`, or NVIDIA's
//! parameter generator `tests/qos/files/mellanox/qos_param_generator.py` applied to the shipped profile);
//! see `docs/asic-personalities.md` for each family's rules and `docs/fidelity.md` for the table.
//!
//! The procedures measure, they do not predict: egress is held on the destination (zero leak-out), 64-byte
//! packets are sent one at a time, and the packet whose arrival first makes the switch send PFC, drop at
//! ingress or drop at egress is the observed trigger point, as in sonic-mgmt's PFCtest and
//! LossyQueueTest (`tests/saitests/py3/sai_qos_tests.py`).

mod common;

use common::*;
use lossless_dataplane::model::config::ConfigDb;
use lossless_dataplane::model::{PortId, Switch};
use std::net::Ipv4Addr;

const TH: &str = include_str!("../../configs/profiles/th_balanced.yaml");
const TD3: &str = include_str!("../../configs/profiles/td3.yaml");
const SN2700: &str = include_str!("../../configs/profiles/sn2700.yaml");
const HOST2_IP: Ipv4Addr = Ipv4Addr::new(192, 168, 0, 2);

/// One published row.
struct Published {
    /// Profile and, when the row is for another cable length, the lossless PG profile given to the source.
    profile: &'static str,
    src_pg_profile: Option<(&'static str, [(&'static str, &'static str); 6])>,
    /// Where the numbers come from (upstream repository, file, keys).
    source: &'static str,
    trig_pfc: u64,
    trig_ingr_drp: u64,
    margin: u64,
}

/// The switch under test, host 2 (Ethernet8) known, egress held on it.
struct Rig {
    sw: Switch,
    src: PortId,
    dst: PortId,
    now: u64,
}

impl Rig {
    fn new(db: &ConfigDb) -> Rig {
        let mut sw = Switch::new();
        sw.apply(db, 0).unwrap_or_else(|e| panic!("{e}"));
        let (src, dst) = (port(&sw, "Ethernet0"), port(&sw, "Ethernet8"));
        sw.handle_frame(dst, arp_request(HOST2_MAC, HOST2_IP, Ipv4Addr::new(192, 168, 0, 1)), 0);
        drain_all(&mut sw, 0);
        sw.set_port_hold(dst, true);
        Rig { sw, src, dst, now: 1_000 }
    }

    fn send_one(&mut self, dscp: u8, i: u64) {
        let f =
            routed_udp(UPLINK0_MAC, Ipv4Addr::new(172, 16, 0, 5), HOST2_IP, (i % 60000) as u16, 4791, dscp);
        assert_eq!(f.len() + 4, 64, "64-byte packets on the wire (with FCS), as sonic-mgmt sends");
        self.sw.handle_frame(self.src, f, self.now);
    }

    /// Sends until `done` holds; returns how many packets it took (the last one made it hold).
    fn send_until(
        &mut self,
        dscp: u8,
        limit: u64,
        mut done: impl FnMut(&Switch, PortId, PortId) -> bool,
    ) -> u64 {
        for n in 1..=limit {
            self.send_one(dscp, n);
            // The source's line carries only what the switch generates (PFC): send it now.
            while self.sw.poll_transmit(self.src, self.now).is_some() {}
            if done(&self.sw, self.src, self.dst) {
                return n;
            }
        }
        panic!("nothing happened after {limit} packets of DSCP {dscp}");
    }
}

fn db(row: &Published) -> ConfigDb {
    let mut db = ConfigDb::from_yaml_str(row.profile).unwrap();
    if let Some((name, fields)) = row.src_pg_profile {
        for (field, value) in fields {
            db.set("BUFFER_PROFILE", name, field, value);
        }
        db.set("BUFFER_PG", "Ethernet0|3-4", "profile", name);
        db.set("CABLE_LENGTH", "AZURE", "Ethernet0", name.split('_').nth(3).unwrap());
    }
    db
}

/// PFCtest: packets to the first PFC frame on the source, then to the first ingress drop.
fn pfc_test(row: &Published, dscp: u8) {
    let mut rig = Rig::new(&db(row));
    let pg = usize::from(dscp);
    let trig_pfc =
        rig.send_until(dscp, 1_000_000, |sw, src, _| sw.port_counters(src).unwrap().pfc[pg].tx > 0);
    let more = rig
        .send_until(dscp, 1_000_000, |sw, src, _| sw.port_counters(src).unwrap().pgs[pg].dropped_packets > 0);
    let trig_ingr_drp = trig_pfc + more;
    let c = rig.sw.port_counters(rig.dst).unwrap();
    assert_eq!(c.tx_drp, 0, "{}: no egress drop on a lossless queue", row.source);
    let within = |observed: u64, published: u64| observed.abs_diff(published) <= row.margin;
    assert!(
        within(trig_pfc, row.trig_pfc) && within(trig_ingr_drp, row.trig_ingr_drp),
        "{}: trig_pfc / trig_ingr_drp observed {trig_pfc} / {trig_ingr_drp}, published {} / {} (margin {})",
        row.source,
        row.trig_pfc,
        row.trig_ingr_drp,
        row.margin
    );
}

/// LossyQueueTest: packets of DSCP 8 (queue 0, PG 0) to the first egress drop; no PFC, no ingress drop.
fn lossy_queue_test(profile: &str, source: &str, published: u64, margin: u64) {
    let mut rig = Rig::new(&ConfigDb::from_yaml_str(profile).unwrap());
    let trig = rig.send_until(8, 1_000_000, |sw, _, dst| sw.port_counters(dst).unwrap().tx_drp > 0);
    let src = rig.sw.port_counters(rig.src).unwrap();
    assert_eq!((src.rx_drp, src.pfc.iter().map(|p| p.tx).sum::<u64>()), (0, 0), "{source}");
    assert!(
        trig.abs_diff(published) <= margin,
        "{source}: trig_egr_drp observed {trig}, published {published} (margin {margin})"
    );
}

const TH_300M: Published = Published {
    profile: TH,
    // sonic-buildimage device/common/profiles/th/gen/BALANCED/pg_profile_lookup.ini, 100000 300m.
    src_pg_profile: Some((
        "pg_lossless_100000_300m_profile",
        [
            ("pool", "ingress_lossless_pool"),
            ("size", "1248"),
            ("xon", "2288"),
            ("xoff", "268736"),
            ("xon_offset", "2288"),
            ("dynamic_th", "0"),
        ],
    )),
    source: "sonic-mgmt tests/qos/files/qos_params.th.yaml topo-any 100000_300m xoff_1",
    trig_pfc: 6542,
    trig_ingr_drp: 7835,
    margin: 2,
};

/// The shipped th_balanced profile is 40 m: qos_params.th.yaml's rule (trig_pfc, and trig_ingr_drp =
/// trig_pfc + the PG's xoff in cells + 1, as in all its rows) with the 40 m headroom, 177632 bytes.
const TH_40M: Published = Published {
    profile: TH,
    src_pg_profile: None,
    source: "sonic-mgmt qos_params.th.yaml topo-any trig_pfc, its ingress-drop rule with the 40m xoff",
    trig_pfc: 6542,
    trig_ingr_drp: 6542 + 854 + 1,
    margin: 2,
};

const TD3_300M: Published = Published {
    profile: TD3,
    src_pg_profile: None,
    source: "sonic-mgmt tests/qos/files/qos_params.td3.yaml topo-t1-lag 100000_300m xoff_1",
    trig_pfc: 59605,
    trig_ingr_drp: 60228,
    margin: 4,
};

const SN2700_5M: Published = Published {
    profile: SN2700,
    src_pg_profile: None,
    source: "sonic-mgmt tests/qos/files/mellanox/qos_param_generator.py on configs/profiles/sn2700.yaml",
    trig_pfc: 17406,
    trig_ingr_drp: 17631,
    margin: 2,
};

#[test]
fn tomahawk_pfc_300m() {
    pfc_test(&TH_300M, 3);
    pfc_test(&TH_300M, 4);
}

#[test]
fn tomahawk_pfc_40m() {
    pfc_test(&TH_40M, 3);
}

#[test]
fn tomahawk_lossy_queue() {
    lossy_queue_test(TH, "sonic-mgmt qos_params.th.yaml topo-any lossy_queue_1", 9887, 2);
}

#[test]
fn trident3_pfc() {
    pfc_test(&TD3_300M, 3);
    pfc_test(&TD3_300M, 4);
}

#[test]
fn trident3_lossy_queue() {
    lossy_queue_test(TD3, "sonic-mgmt qos_params.td3.yaml topo-t1-lag 100000_300m lossy_queue_1", 113198, 4);
}

#[test]
fn spectrum1_pfc() {
    pfc_test(&SN2700_5M, 3);
}
