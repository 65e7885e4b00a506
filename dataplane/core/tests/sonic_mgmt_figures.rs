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
use lossless_core::model::config::ConfigDb;
use lossless_core::model::{PortId, Switch};
use lossless_core::time::Instant;
use std::net::Ipv4Addr;

const TH: &str = include_str!("../../../configs/profiles/th_balanced.yaml");
const TD3: &str = include_str!("../../../configs/profiles/td3.yaml");
const SN2700: &str = include_str!("../../../configs/profiles/sn2700.yaml");
const HOST2_IP: Ipv4Addr = Ipv4Addr::new(192, 168, 0, 2);
/// The destination of the routed test traffic on SONiC's rendered configs (no VLAN there).
const ROUTED_DST_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 1, 1);

/// The configuration a row is about.
#[derive(Clone, Copy)]
enum Config {
    /// A shipped profile (the T0 forwarding tables: destination host 2 in the VLAN on Ethernet8).
    Profile(&'static str),
    /// A config_db.json rendered from SONiC's own templates (`configs/sonic/`): Ethernet0 and Ethernet8
    /// become routed interfaces, the destination a static neighbour behind Ethernet8.
    Sonic(&'static str),
}

/// One published row.
struct Published {
    config: Config,
    /// When the row is for another cable length: the lossless PG profile given to the source instead.
    src_pg_profile: Option<(&'static str, &'static [(&'static str, &'static str)])>,
    /// Where the numbers come from (upstream repository, file, keys).
    source: &'static str,
    trig_pfc: u64,
    trig_ingr_drp: Option<u64>,
    /// LossyQueueTest's trig_egr_drp.
    trig_egr_drp: Option<u64>,
    margin: u64,
}

/// The switch under test, egress held on the destination.
struct Rig {
    sw: Switch,
    src: PortId,
    dst: PortId,
    dst_ip: Ipv4Addr,
    now: u64,
}

impl Rig {
    fn new(row: &Published) -> Rig {
        let (db, dst_ip) = config(row);
        let mut sw = Switch::new();
        sw.apply(&db, Instant::ZERO).unwrap_or_else(|e| panic!("{}: {e}", row.source));
        let (src, dst) = (port(&sw, "Ethernet0"), port(&sw, "Ethernet8"));
        if dst_ip == HOST2_IP {
            sw.handle_frame(
                dst,
                arp_request(HOST2_MAC, HOST2_IP, Ipv4Addr::new(192, 168, 0, 1)),
                Instant::from_ns(0),
            );
        }
        drain_all(&mut sw, Instant::ZERO);
        sw.set_port_hold(dst, true);
        Rig { sw, src, dst, dst_ip, now: 1_000 }
    }

    fn send_one(&mut self, dscp: u8, i: u64) {
        let f =
            routed_udp(UPLINK0_MAC, Ipv4Addr::new(10, 0, 0, 1), self.dst_ip, (i % 60000) as u16, 4791, dscp);
        assert_eq!(f.len() + 4, 64, "64-byte packets on the wire (with FCS), as sonic-mgmt sends");
        self.sw.handle_frame(self.src, f, Instant::from_ns(self.now));
    }

    /// Sends until `done` holds; returns how many packets it took (the last one made it hold).
    fn send_until(&mut self, dscp: u8, mut done: impl FnMut(&Switch, PortId, PortId) -> bool) -> u64 {
        for n in 1..=1_000_000 {
            self.send_one(dscp, n);
            // The source's line carries only what the switch generates (PFC): send it now.
            while self.sw.poll_transmit(self.src, Instant::from_ns(self.now)).is_some() {}
            if done(&self.sw, self.src, self.dst) {
                return n;
            }
        }
        panic!("nothing happened after 1,000,000 packets of DSCP {dscp}");
    }
}

fn config(row: &Published) -> (ConfigDb, Ipv4Addr) {
    let (mut db, dst_ip) = match row.config {
        Config::Profile(yaml) => (ConfigDb::from_yaml_str(yaml).unwrap(), HOST2_IP),
        Config::Sonic(file) => {
            let path = format!("{}/../../configs/sonic/{file}", env!("CARGO_MANIFEST_DIR"));
            let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
            let mut db = ConfigDb::from_yaml_str(&text).unwrap();
            for (port, net) in [("Ethernet0", "10.0.0.0/31"), ("Ethernet8", "10.0.1.0/31")] {
                db.touch("INTERFACE", port).touch("INTERFACE", &format!("{port}|{net}"));
            }
            db.set("NEIGH", "Ethernet8|10.0.1.1", "neigh", HOST2_MAC.to_string()).set(
                "NEIGH",
                "Ethernet8|10.0.1.1",
                "family",
                "IPv4",
            );
            (db, ROUTED_DST_IP)
        }
    };
    if let Some((name, fields)) = row.src_pg_profile {
        for (field, value) in fields {
            db.set("BUFFER_PROFILE", name, field, *value);
        }
        db.set("BUFFER_PG", "Ethernet0|3-4", "profile", name);
        db.set("CABLE_LENGTH", "AZURE", "Ethernet0", name.split('_').nth(3).unwrap());
    }
    (db, dst_ip)
}

/// What the procedures observed on one row.
#[derive(Debug)]
struct Observed {
    trig_pfc: u64,
    trig_ingr_drp: u64,
    trig_egr_drp: Option<u64>,
}

/// PFCtest (packets to the first PFC frame on the source, then to the first ingress drop, DSCP 3 and 4)
/// and LossyQueueTest (DSCP 8, queue 0 / PG 0, to the first egress drop; no PFC, no ingress drop).
fn run(row: &Published) -> Observed {
    let within = |observed: u64, published: u64| observed.abs_diff(published) <= row.margin;
    let mut observed = Observed { trig_pfc: 0, trig_ingr_drp: 0, trig_egr_drp: None };
    for dscp in [3u8, 4] {
        let mut rig = Rig::new(row);
        let pg = usize::from(dscp);
        let trig_pfc = rig.send_until(dscp, |sw, src, _| sw.port_counters(src).unwrap().pfc[pg].tx > 0);
        let more =
            rig.send_until(dscp, |sw, src, _| sw.port_counters(src).unwrap().pgs[pg].dropped_packets > 0);
        assert_eq!(
            rig.sw.port_counters(rig.dst).unwrap().tx_drp,
            0,
            "{}: no egress drop on a lossless queue",
            row.source
        );
        observed.trig_pfc = trig_pfc;
        observed.trig_ingr_drp = trig_pfc + more;
        assert!(within(trig_pfc, row.trig_pfc), "{} (DSCP {dscp}): {observed:?}", row.source);
        if let Some(published) = row.trig_ingr_drp {
            assert!(within(trig_pfc + more, published), "{} (DSCP {dscp}): {observed:?}", row.source);
        }
    }
    if let Some(published) = row.trig_egr_drp {
        let mut rig = Rig::new(row);
        let trig = rig.send_until(8, |sw, _, dst| sw.port_counters(dst).unwrap().tx_drp > 0);
        let src = rig.sw.port_counters(rig.src).unwrap();
        assert_eq!((src.rx_drp, src.pfc.iter().map(|p| p.tx).sum::<u64>()), (0, 0), "{}", row.source);
        observed.trig_egr_drp = Some(trig);
        assert!(within(trig, published), "{} lossy_queue_1: {observed:?}", row.source);
    }
    eprintln!("{}: {observed:?}", row.source);
    observed
}

/// sonic-buildimage device/common/profiles/th/gen/BALANCED/pg_profile_lookup.ini, 100000 300m.
const TH_PG_300M: (&str, &[(&str, &str)]) = (
    "pg_lossless_100000_300m_profile",
    &[
        ("pool", "ingress_lossless_pool"),
        ("size", "1248"),
        ("xon", "2288"),
        ("xoff", "268736"),
        ("xon_offset", "2288"),
        ("dynamic_th", "0"),
    ],
);

#[test]
fn tomahawk_th_balanced() {
    // 300 m, the row as published.
    run(&Published {
        config: Config::Profile(TH),
        src_pg_profile: Some(TH_PG_300M),
        source: "sonic-mgmt tests/qos/files/qos_params.th.yaml topo-any 100000_300m",
        trig_pfc: 6542,
        trig_ingr_drp: Some(7835),
        trig_egr_drp: Some(9887),
        margin: 2,
    });
    // The shipped 40 m profile: the file's rule (every row: trig_ingr_drp = trig_pfc + xoff cells + 1)
    // with the 40 m headroom, 177632 bytes = 854 cells.
    run(&Published {
        config: Config::Profile(TH),
        src_pg_profile: None,
        source: "sonic-mgmt qos_params.th.yaml topo-any, ingress-drop rule at 40m",
        trig_pfc: 6542,
        trig_ingr_drp: Some(6542 + 854 + 1),
        trig_egr_drp: None,
        margin: 2,
    });
}

#[test]
fn tomahawk_sonic_configs() {
    for file in ["Arista-7060CX-32S-C32-t1.json", "Celestica-DX010-C32-t1.json"] {
        run(&Published {
            config: Config::Sonic(file),
            src_pg_profile: None,
            source: "sonic-mgmt tests/qos/files/qos_params.th.yaml topo-any 100000_300m",
            trig_pfc: 6542,
            trig_ingr_drp: Some(7835),
            trig_egr_drp: Some(9887),
            margin: 2,
        });
    }
}

#[test]
fn tomahawk2_sonic_config() {
    // The t0 pools of Arista-7260CX3-C64 (buffers_pool_sizes_t0.j2); the row is 50G/300m: the source gets
    // the 300m profile of device/common/profiles/th2/7260/BALANCED/pg_profile_lookup.ini.
    run(&Published {
        config: Config::Sonic("Arista-7260CX3-C64-t0.json"),
        src_pg_profile: Some((
            "pg_lossless_100000_300m_profile",
            &[
                ("pool", "ingress_lossless_pool"),
                ("size", "1248"),
                ("xon", "1248"),
                ("xoff", "101088"),
                ("xon_offset", "2496"),
                ("dynamic_th", "0"),
            ],
        )),
        source: "sonic-mgmt tests/qos/files/qos_params.th2.yaml topo-any 50000_300m",
        trig_pfc: 20034,
        trig_ingr_drp: Some(20521),
        trig_egr_drp: Some(10692),
        margin: 2,
    });
}

#[test]
fn trident2_sonic_config() {
    run(&Published {
        config: Config::Sonic("Force10-S6000-t0.json"),
        src_pg_profile: None,
        source: "sonic-mgmt tests/qos/files/qos_params.td2.yaml topo-any 40000_300m",
        trig_pfc: 4898,
        trig_ingr_drp: Some(5164),
        trig_egr_drp: Some(31322),
        margin: 2,
    });
}

#[test]
fn trident3_td3_profile_and_sonic_config() {
    for config in [Config::Profile(TD3), Config::Sonic("Arista-7050CX3-32S-C32-t1.json")] {
        run(&Published {
            config,
            src_pg_profile: None,
            source: "sonic-mgmt tests/qos/files/qos_params.td3.yaml topo-t1-lag 100000_300m",
            trig_pfc: 59605,
            trig_ingr_drp: Some(60228),
            trig_egr_drp: Some(113198),
            margin: 4,
        });
    }
}

/// NVIDIA's numbers are computed by sonic-mgmt's generator (tests/qos/files/mellanox/qos_param_generator.py
/// with qos_sai_base.py's threshold) from the profile; they are in cells, one cell per 64-byte packet here.
#[test]
fn spectrum_generator_numbers() {
    let rows = [
        (Config::Profile(SN2700), 17406, Some(17631), 30584),
        (Config::Sonic("ACS-MSN2700-t0.json"), 24062, Some(24287), 42417),
        (Config::Sonic("ACS-MSN3800-t1.json"), 43392, Some(44303), 76903),
        // 400G ports: the generator adds overhead for their two buffer units; only the PFC point is compared.
        (Config::Sonic("ACS-MSN4700-t1.json"), 71950, None, 127331),
    ];
    for (config, trig_pfc, trig_ingr_drp, trig_egr_drp) in rows {
        run(&Published {
            config,
            src_pg_profile: None,
            source: "sonic-mgmt tests/qos/files/mellanox/qos_param_generator.py",
            trig_pfc,
            trig_ingr_drp,
            trig_egr_drp: Some(trig_egr_drp),
            margin: 4,
        });
    }
}

/// HdrmPoolSizeTest (`hdrm_pool_size`, margin 0): several lossless PGs in one XPE fill their shared space
/// (`pkts_num_trig_pfc` each), then PFC is awaited a packet at a time per PG (at most 10), then every PG
/// but the last takes `pkts_num_hdrm_full` into headroom and the last `pkts_num_hdrm_partial` with no
/// drop, and one more packet is an ingress drop: the shared headroom pool of the XPE is full.
#[test]
fn tomahawk_headroom_pool_size() {
    // sonic-mgmt tests/qos/files/qos_params.th.yaml topo-any 100000_300m hdrm_pool_size: PGs 3 and 4 of two
    // source ports, pkts_num_trig_pfc 2620, pkts_num_hdrm_full 1292, pkts_num_hdrm_partial 1165.
    let (trig_pfc, hdrm_full, hdrm_partial) = (2620u64, 1292u64, 1165u64);
    let mut db = ConfigDb::from_yaml_str(TH).unwrap();
    let (name, fields) = TH_PG_300M;
    for (field, value) in fields {
        db.set("BUFFER_PROFILE", name, field, *value);
    }
    db.set("BUFFER_PG", "Ethernet0|3-4", "profile", name).set("BUFFER_PG", "Ethernet4|3-4", "profile", name);
    let row = Published {
        config: Config::Profile(TH),
        src_pg_profile: None,
        source: "sonic-mgmt qos_params.th.yaml topo-any 100000_300m hdrm_pool_size",
        trig_pfc,
        trig_ingr_drp: None,
        trig_egr_drp: None,
        margin: 0,
    };
    let mut rig = Rig::new(&row);
    rig.sw.apply(&db, Instant::from_ns(rig.now)).unwrap();
    rig.sw.set_port_hold(rig.dst, true);
    let (e0, e4) = (port(&rig.sw, "Ethernet0"), port(&rig.sw, "Ethernet4"));
    let pgs = [(e0, 3u8), (e0, 4), (e4, 3), (e4, 4)];
    let mut sent = 0u64;
    let mut send = |rig: &mut Rig, src: PortId, dscp: u8, n: u64| {
        for _ in 0..n {
            sent += 1;
            rig.src = src;
            rig.send_one(dscp, sent);
            // PFC goes out on every source line at once (a PG may assert XOFF on another's frame).
            for port in [e0, e4] {
                while rig.sw.poll_transmit(port, Instant::from_ns(rig.now)).is_some() {}
            }
        }
    };
    let pfc_tx = |rig: &Rig, src: PortId, pg: u8| rig.sw.port_counters(src).unwrap().pfc[usize::from(pg)].tx;
    let ingress_drops =
        |rig: &Rig| rig.sw.port_counters(e0).unwrap().rx_drp + rig.sw.port_counters(e4).unwrap().rx_drp;
    for &(src, pg) in &pgs {
        send(&mut rig, src, pg, trig_pfc);
    }
    let mut extra = Vec::new();
    for &(src, pg) in &pgs {
        let mut n = 0;
        while pfc_tx(&rig, src, pg) == 0 {
            assert!(n < 10, "PG {pg} of port {src}: no PFC after 10 more packets");
            send(&mut rig, src, pg, 1);
            n += 1;
        }
        extra.push(n);
    }
    for (i, &(src, pg)) in pgs.iter().enumerate() {
        send(&mut rig, src, pg, if i + 1 < pgs.len() { hdrm_full } else { hdrm_partial });
    }
    assert_eq!(
        ingress_drops(&rig),
        0,
        "no drop while the headroom pool has room (extra packets to PFC: {extra:?})"
    );
    let (src, pg) = pgs[3];
    send(&mut rig, src, pg, 1);
    assert_eq!(ingress_drops(&rig), 1, "the XPE's shared headroom pool is full");
    eprintln!("{}: extra packets to PFC per PG {extra:?}", row.source);
}
