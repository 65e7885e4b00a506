//! `swctl qos-params`: the numbers sonic-mgmt's QoS tests need for a profile, in the key layout of its
//! `tests/qos/files/qos_params.<asic>.yaml`, measured on the switch model (with the profile's ASIC
//! personality) by sonic-mgmt's own procedures in virtual time: egress held on the destination, 64-byte
//! packets sent one at a time, the packet that first makes the switch send PFC, drop at ingress or drop at
//! egress is the trigger point (`tests/saitests/py3/sai_qos_tests.py` PFCtest, PFCXonTest, LossyQueueTest,
//! the watermark tests). This is what an engineer pastes into sonic-mgmt for a new SKU; how far the model is
//! from real ASICs is measured in `docs/asic-personalities.md`.
//!
//! The forwarding tables of the profile are replaced by two routed ports (the source and the destination,
//! a static neighbour behind the latter), so any buffer/QoS profile can be measured.

use lossless_dataplane::model::config::{ConfigDb, compile};
use lossless_dataplane::model::mmu::WatermarkKind;
use lossless_dataplane::model::{PortId, Switch};
use lossless_dataplane::time::{Instant, Nanos};
use lossless_dataplane::wire::EthernetAddress;
use lossless_dataplane::wire::build::Ipv4Flow;
use lossless_dataplane::wire::ip::Ecn;
use serde::Serialize;
use std::collections::BTreeMap;
use std::net::Ipv4Addr;

mod hdrm;
pub use hdrm::HdrmPoolSize;

/// Tables that place ports in VLANs or give them addresses: replaced for the measurement.
const FORWARDING_TABLES: &[&str] = &[
    "INTERFACE",
    "VLAN",
    "VLAN_MEMBER",
    "VLAN_INTERFACE",
    "NEIGH",
    "STATIC_ROUTE",
    "FDB",
    "BORDER_RULE",
    "PORTCHANNEL",
    "PORTCHANNEL_MEMBER",
    "PORTCHANNEL_INTERFACE",
    "LOOPBACK_INTERFACE",
];
const NEIGHBOR_MAC: EthernetAddress = EthernetAddress([0x02, 0x51, 0x50, 0x00, 0x00, 0x02]);
const SENDER_MAC: EthernetAddress = EthernetAddress([0x02, 0x51, 0x50, 0x00, 0x00, 0x01]);
const DST_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 1, 1);
/// More packets than any buffer of the families holds at 64 bytes.
const MAX_PACKETS: u64 = 2_000_000;

/// A sonic-mgmt `xoff_N` / `wm_pg_headroom` entry.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Xoff {
    pub dscp: u8,
    pub ecn: u8,
    pub pg: u8,
    pub pkts_num_trig_pfc: u64,
    pub pkts_num_trig_ingr_drp: u64,
}

/// A sonic-mgmt `xon_N` entry.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Xon {
    pub dscp: u8,
    pub ecn: u8,
    pub pg: u8,
    pub pkts_num_trig_pfc: u64,
    /// Packets drained from the XOFF point until the switch sends XON: the meaning of Broadcom's
    /// `qos_params.<asic>.yaml` (12 on Tomahawk). NVIDIA's generator writes the PG's level at XON instead
    /// (its shared limit + 1); translate before pasting into a Mellanox setup.
    pub pkts_num_dismiss_pfc: u64,
}

/// `lossy_queue_1`.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct LossyQueue {
    pub dscp: u8,
    pub ecn: u8,
    pub pg: u8,
    pub pkts_num_trig_egr_drp: u64,
}

/// `wm_pg_shared_lossless` / `wm_pg_shared_lossy` / `wm_q_shared_*`: packets before the shared
/// watermark moves (the reserve) and the trigger the test fills to.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Watermark {
    pub dscp: u8,
    pub ecn: u8,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pg: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue: Option<u8>,
    pub pkts_num_fill_min: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pkts_num_trig_pfc: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pkts_num_trig_ingr_drp: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pkts_num_trig_egr_drp: Option<u64>,
    pub cell_size: u64,
}

/// The block of one `<speed>_<cable>` key, and the speed-independent entries beside it, as in
/// `qos_params.<asic>.yaml`.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct SpeedCable {
    pub pkts_num_leak_out: u64,
    #[serde(flatten)]
    pub xoff: BTreeMap<String, Xoff>,
    pub wm_pg_headroom: Xoff,
    pub wm_pg_shared_lossless: Watermark,
    pub wm_q_shared_lossless: Watermark,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hdrm_pool_size: Option<HdrmPoolSize>,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Topology {
    #[serde(flatten)]
    pub speed_cable: BTreeMap<String, SpeedCable>,
    #[serde(flatten)]
    pub xon: BTreeMap<String, Xon>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lossy_queue_1: Option<LossyQueue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wm_pg_shared_lossy: Option<Watermark>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wm_q_shared_lossy: Option<Watermark>,
    pub cell_size: u64,
}

/// `qos_params: { <asic>: { <topology>: ... } }`.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct QosParams {
    pub qos_params: BTreeMap<String, BTreeMap<String, Topology>>,
}

/// Which ports, and the topology key to print under.
#[derive(Debug, Clone)]
pub struct Ports {
    pub src: String,
    pub dst: String,
    pub topology: String,
}

/// One measurement: a fresh switch with the profile, egress held on the destination.
struct Probe {
    sw: Switch,
    src: PortId,
    dst: PortId,
    now: Instant,
    sent: u64,
}

impl Probe {
    fn new(db: &ConfigDb, ports: &Ports) -> Result<Probe, String> {
        let mut sw = Switch::new();
        sw.apply(db, Instant::ZERO).map_err(|e| e.to_string())?;
        let port = |name: &str| sw.port_id(name).ok_or_else(|| format!("the profile has no port {name}"));
        let (src, dst) = (port(&ports.src)?, port(&ports.dst)?);
        sw.set_port_hold(dst, true);
        Ok(Probe { sw, src, dst, now: Instant::from_ns(1_000), sent: 0 })
    }

    fn send(&mut self, dscp: u8) {
        self.send_from(self.src, dscp);
    }

    fn send_from(&mut self, src: PortId, dscp: u8) {
        self.sent += 1;
        let flow = Ipv4Flow {
            src_mac: SENDER_MAC,
            dst_mac: self.sw.config().device_mac,
            src_ip: Ipv4Addr::new(10, 0, 0, 1),
            dst_ip: DST_IP,
            src_port: (self.sent % 60_000) as u16,
            dscp,
            ecn: Ecn::Ect1,
            ttl: 64,
        };
        // 64 bytes on the wire with the FCS, sonic-mgmt's default packet length.
        self.sw.handle_frame(src, flow.udp(4791, &[0; 18]), self.now);
        while self.sw.poll_transmit(src, self.now).is_some() {}
    }

    /// Sends until `done`; the number of packets it took.
    fn until(&mut self, dscp: u8, mut done: impl FnMut(&Switch, PortId, PortId) -> bool) -> Option<u64> {
        for n in 1..=MAX_PACKETS {
            self.send(dscp);
            if done(&self.sw, self.src, self.dst) {
                return Some(n);
            }
        }
        None
    }

    /// Releases the destination a frame at a time until the source sends XON for `prio`; the frames it
    /// took.
    fn drain_until_xon(&mut self, prio: usize) -> Option<u64> {
        self.sw.set_port_hold(self.dst, false);
        let mut drained = 0;
        loop {
            match self.sw.poll_transmit(self.dst, self.now) {
                Some(_) => drained += 1,
                None => match self.sw.next_transmit_at(self.dst) {
                    Some(t) if t > self.now => {
                        self.now = t;
                        continue;
                    }
                    _ => return None,
                },
            }
            while let Some(tx) = self.sw.poll_transmit(self.src, self.now) {
                let frame = lossless_dataplane::wire::decode(&tx.frame).ok();
                if let Some(lossless_dataplane::wire::L3::MacControl(
                    lossless_dataplane::wire::MacControlRepr::Pfc(p),
                )) = frame.map(|d| d.l3)
                    && p.class_enable & (1 << prio) != 0
                    && p.time[prio] == 0
                {
                    return Some(drained);
                }
            }
        }
    }

    fn pg_shared_watermark(&self, pg: u8) -> u64 {
        let name = &self.sw.config().ports[self.src.index()].name;
        self.sw.watermarks(WatermarkKind::User).ports[name].pg_shared_bytes[usize::from(pg)]
    }

    fn queue_shared_watermark(&self, queue: u8) -> u64 {
        let name = &self.sw.config().ports[self.dst.index()].name;
        self.sw.watermarks(WatermarkKind::User).ports[name].queue_shared_bytes[usize::from(queue)]
    }
}

/// The profile with its forwarding tables replaced by `src` and `dst` as routed ports.
fn measurement_config(db: &ConfigDb, ports: &Ports) -> ConfigDb {
    let mut db = db.clone();
    for table in FORWARDING_TABLES {
        db.tables.remove(*table);
    }
    db.touch("INTERFACE", &ports.src).touch("INTERFACE", &format!("{}|10.0.0.0/31", ports.src));
    db.touch("INTERFACE", &ports.dst).touch("INTERFACE", &format!("{}|10.0.1.0/31", ports.dst));
    let neigh = format!("{}|{DST_IP}", ports.dst);
    db.set("NEIGH", &neigh, "neigh", NEIGHBOR_MAC.to_string()).set("NEIGH", &neigh, "family", "IPv4");
    db
}

/// Measures a profile.
pub fn measure(db: &ConfigDb, ports: &Ports) -> Result<QosParams, String> {
    // Routed ports of the profile: HdrmPoolSizeTest's extra sources are taken from the others first (the
    // test ports of a t0 lab are its VLAN ports).
    let routed: Vec<String> = db
        .tables
        .get("INTERFACE")
        .map(|t| t.keys().map(|k| k.split('|').next().unwrap_or_default().to_owned()).collect())
        .unwrap_or_default();
    let db = measurement_config(db, ports);
    let config = compile(&db).map_err(|e| e.to_string())?.config;
    let index = |name: &str| config.ports.iter().position(|p| p.name == name);
    let (src, dst) = (index(&ports.src).ok_or("no source port")?, index(&ports.dst).ok_or("no dst port")?);
    let (src_qos, dst_qos) = (&config.qos[src], &config.qos[dst]);
    let cell = u64::from(config.asic.cell_bytes);
    // DSCPs by class, as sonic-mgmt's AZURE maps use them: for each lossless PG of the source the lowest
    // DSCP that reaches it; for the lossy class DSCP 8 when it is lossy, else the lowest lossy DSCP.
    let tc_of = |dscp: u8| src_qos.dscp_to_tc.map_or(0, |m| m[usize::from(dscp)]);
    let pg_of = |dscp: u8| src_qos.tc_to_pg[usize::from(tc_of(dscp))];
    let queue_of = |dscp: u8| dst_qos.tc_to_queue[usize::from(tc_of(dscp))];
    let lossless_pgs: Vec<u8> = (0..8u8)
        .filter(|&p| src_qos.pfc_enable & 1 << p != 0)
        .map(|p| src_qos.pfc_to_pg[usize::from(p)])
        .collect();
    let lossy_dscp = std::iter::once(8)
        .chain(0..64)
        .find(|&d| !lossless_pgs.contains(&pg_of(d)) && dst_qos.pfc_enable & 1 << tc_of(d) == 0);
    let mut xoffs = BTreeMap::new();
    let mut xons = BTreeMap::new();
    let mut first_xoff: Option<(u8, Xoff, u64)> = None;
    let mut lossless = Vec::new();
    for (i, &pg) in lossless_pgs.iter().enumerate() {
        let Some(dscp) = (0..64u8).find(|&d| pg_of(d) == pg) else { continue };
        let prio = usize::from(tc_of(dscp));
        lossless.push((dscp, pg, prio));
        let mut probe = Probe::new(&db, ports)?;
        let pg_index = usize::from(pg);
        let trig_pfc = probe
            .until(dscp, |sw, s, _| sw.port_counters(s).is_some_and(|c| c.pfc[prio].tx > 0))
            .ok_or_else(|| format!("PG {pg} never sent PFC"))?;
        let shared_at_xoff_bytes = probe.pg_shared_watermark(pg);
        let more = probe
            .until(dscp, |sw, s, _| sw.port_counters(s).is_some_and(|c| c.pgs[pg_index].dropped_packets > 0))
            .ok_or_else(|| format!("PG {pg} never dropped"))?;
        let xoff =
            Xoff { dscp, ecn: 1, pg, pkts_num_trig_pfc: trig_pfc, pkts_num_trig_ingr_drp: trig_pfc + more };
        // XON: fill to the XOFF point again and drain.
        let mut probe = Probe::new(&db, ports)?;
        for _ in 0..trig_pfc {
            probe.send(dscp);
        }
        let dismiss = probe.drain_until_xon(prio).unwrap_or(0);
        xons.insert(
            format!("xon_{}", i + 1),
            Xon { dscp, ecn: 1, pg, pkts_num_trig_pfc: trig_pfc, pkts_num_dismiss_pfc: dismiss },
        );
        first_xoff.get_or_insert((dscp, xoff.clone(), shared_at_xoff_bytes));
        xoffs.insert(format!("xoff_{}", i + 1), xoff);
    }
    let (dscp, xoff, shared_at_xoff_bytes) =
        first_xoff.ok_or("the source port has no lossless PG (pfc_enable)")?;
    let pg = xoff.pg;
    // The packets PGSharedWatermarkTest sends to fill the PG's shared space. Broadcom's
    // qos_params.<asic>.yaml give the XOFF trigger (shared space is the last to fill before XOFF). NVIDIA's
    // generator (tests/qos/files/mellanox/qos_param_generator.py) gives `pkts_num_dismiss_pfc`, the shared
    // space + 1, because a Spectrum PG fills its shared space first and then `xon` + hysteresis cells of
    // its `size`, which are not shared, before XOFF: here, the shared cells at XOFF in 64-byte packets.
    let pg_fill_shared = if config.asic.family().is_spectrum() {
        shared_at_xoff_bytes.div_ceil(cell * 64u64.div_ceil(cell))
    } else {
        xoff.pkts_num_trig_pfc
    };
    let queue = queue_of(dscp);
    // Watermarks: the packets before the PG's (queue's) shared watermark moves.
    let mut probe = Probe::new(&db, ports)?;
    let pg_fill_min = fill_min(&mut probe, dscp, |p| p.pg_shared_watermark(pg));
    let mut probe = Probe::new(&db, ports)?;
    let q_fill_min = fill_min(&mut probe, dscp, |p| p.queue_shared_watermark(queue));
    let lossless_wm = |pg: Option<u8>, queue: Option<u8>, fill| Watermark {
        dscp,
        ecn: 1,
        pg,
        queue,
        pkts_num_fill_min: fill,
        pkts_num_trig_pfc: pg.map(|_| pg_fill_shared),
        pkts_num_trig_ingr_drp: queue.map(|_| xoff.pkts_num_trig_ingr_drp),
        pkts_num_trig_egr_drp: None,
        cell_size: cell,
    };
    let speed_cable = SpeedCable {
        pkts_num_leak_out: 0,
        xoff: xoffs,
        wm_pg_headroom: xoff.clone(),
        wm_pg_shared_lossless: lossless_wm(Some(pg), None, pg_fill_min),
        wm_q_shared_lossless: lossless_wm(None, Some(queue), q_fill_min),
        hdrm_pool_size: hdrm::measure(&db, &config, ports, &lossless, &routed)?,
    };
    let (mut lossy_queue_1, mut wm_pg_shared_lossy, mut wm_q_shared_lossy) = (None, None, None);
    if let Some(dscp) = lossy_dscp {
        let mut probe = Probe::new(&db, ports)?;
        let trig = probe
            .until(dscp, |sw, _, d| sw.port_counters(d).is_some_and(|c| c.tx_drp > 0))
            .ok_or("the lossy queue never dropped")?;
        let (pg, queue) = (pg_of(dscp), queue_of(dscp));
        lossy_queue_1 = Some(LossyQueue { dscp, ecn: 1, pg, pkts_num_trig_egr_drp: trig });
        let mut probe = Probe::new(&db, ports)?;
        let pg_fill = fill_min(&mut probe, dscp, |p| p.pg_shared_watermark(pg));
        let mut probe = Probe::new(&db, ports)?;
        let q_fill = fill_min(&mut probe, dscp, |p| p.queue_shared_watermark(queue));
        let lossy_wm = |pg: Option<u8>, queue: Option<u8>, fill| Watermark {
            dscp,
            ecn: 1,
            pg,
            queue,
            pkts_num_fill_min: fill,
            pkts_num_trig_pfc: None,
            pkts_num_trig_ingr_drp: None,
            pkts_num_trig_egr_drp: Some(trig),
            cell_size: cell,
        };
        wm_pg_shared_lossy = Some(lossy_wm(Some(pg), None, pg_fill));
        wm_q_shared_lossy = Some(lossy_wm(None, Some(queue), q_fill));
    }
    let src_port = &config.ports[src];
    let cable = db
        .tables
        .get("CABLE_LENGTH")
        .and_then(|t| t.values().find_map(|f| f.get(&ports.src)))
        .cloned()
        .unwrap_or_else(|| "5m".into());
    let key = format!("{}_{cable}", src_port.speed_mbps);
    let topology = Topology {
        speed_cable: BTreeMap::from([(key, speed_cable)]),
        xon: xons,
        lossy_queue_1,
        wm_pg_shared_lossy,
        wm_q_shared_lossy,
        cell_size: cell,
    };
    let family = config.asic.family().keyword().to_owned();
    Ok(QosParams {
        qos_params: BTreeMap::from([(family, BTreeMap::from([(ports.topology.clone(), topology)]))]),
    })
}

/// Packets sent before `watermark` rises above zero: the reserve that fills first.
fn fill_min(probe: &mut Probe, dscp: u8, watermark: impl Fn(&Probe) -> u64) -> u64 {
    for n in 0..MAX_PACKETS {
        probe.send(dscp);
        if watermark(probe) > 0 {
            return n;
        }
    }
    MAX_PACKETS
}

/// The default ports: the first port with lossless PGs as the source, the next as the destination.
pub fn default_ports(db: &ConfigDb) -> Result<(String, String), String> {
    let config = compile(db).map_err(|e| e.to_string())?.config;
    let mut lossless =
        config.ports.iter().zip(&config.qos).filter(|(_, q)| q.pfc_enable != 0).map(|(p, _)| &p.name);
    match (lossless.next(), lossless.next()) {
        (Some(a), Some(b)) => Ok((a.clone(), b.clone())),
        _ => Err("the profile needs two ports with pfc_enable".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile(name: &str) -> ConfigDb {
        let path = format!("{}/../configs/profiles/{name}", env!("CARGO_MANIFEST_DIR"));
        ConfigDb::from_yaml_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    fn ports() -> Ports {
        Ports { src: "Ethernet0".into(), dst: "Ethernet8".into(), topology: "topo-any".into() }
    }

    /// th_balanced measured: sonic-mgmt's qos_params.th.yaml figures for a Tomahawk (trig_pfc 6542,
    /// lossy_queue_1 9887 ± 2; the ingress drop is the file's rule with this profile's 40 m xoff).
    #[test]
    fn tomahawk_profile_gives_sonic_mgmt_figures() {
        let params = measure(&profile("th_balanced.yaml"), &ports()).unwrap();
        let topo = &params.qos_params["th"]["topo-any"];
        let block = &topo.speed_cable["100000_40m"];
        assert_eq!(block.xoff["xoff_1"].pkts_num_trig_pfc, 6542);
        assert_eq!(block.xoff["xoff_2"].pkts_num_trig_ingr_drp, 6542 + 854 + 1);
        assert!(topo.lossy_queue_1.as_ref().unwrap().pkts_num_trig_egr_drp.abs_diff(9887) <= 2);
        // fill_min: the PG reserve (1248 B = 6 cells), the lossless queue reserve (1518 B = 8 cells).
        assert_eq!(block.wm_pg_shared_lossless.pkts_num_fill_min, 6);
        assert_eq!(block.wm_q_shared_lossless.pkts_num_fill_min, 8);
        assert_eq!(topo.cell_size, 208);
        assert!(topo.xon["xon_1"].pkts_num_dismiss_pfc > 0);
        let yaml = serde_yaml::to_string(&params).unwrap();
        assert!(yaml.starts_with("qos_params:\n  th:\n    topo-any:\n      100000_40m:\n"), "{yaml}");
    }

    /// td3's hdrm_pool_size: sonic-mgmt's qos_params.td3.yaml (100000_300m) splits the shared headroom pool
    /// (`xoff` 1 622 016 B = 6336 cells of 256 B) over 9 source ports × 2 PGs as 17 × 362 + 182; the model,
    /// measured by HdrmPoolSizeTest's procedure, gives the same figures. Replaying the test's headroom step
    /// (a consistency check) then drops exactly the packet after the last partial fill.
    #[test]
    fn trident3_headroom_pool_gives_sonic_mgmt_figures() {
        let db = profile("td3.yaml");
        let config = compile(&db).unwrap().config;
        // DSCP 3 -> PG 3 (priority 3), DSCP 4 -> PG 4 (AZURE maps); what `measure` finds and passes.
        let lossless = [(3, 3, 3), (4, 4, 4)];
        let h = hdrm::measure(&measurement_config(&db, &ports()), &config, &ports(), &lossless, &[])
            .unwrap()
            .expect("td3 has a shared headroom pool");
        assert_eq!((h.pgs_num, h.src_ports.len()), (18, 9));
        assert_eq!((h.pkts_num_hdrm_full, h.pkts_num_hdrm_partial), (362, 182));
        assert_eq!((h.dscps.clone(), h.pgs.clone()), (vec![3, 4], vec![3, 4]));

        let mdb = hdrm::with_sources(measurement_config(&db, &ports()), &h.src_ports[1..]);
        let mut probe = Probe::new(&mdb, &ports()).unwrap();
        let pairs: Vec<hdrm::Pair> = h
            .src_ports
            .iter()
            .flat_map(|n| h.dscps.iter().map(move |&d| (n, d)))
            .map(|(n, dscp)| hdrm::Pair { src: probe.sw.port_id(n).unwrap(), dscp, prio: usize::from(dscp) })
            .collect();
        hdrm::fill_and_trigger(&mut probe, &pairs, h.pkts_num_trig_pfc).unwrap();
        let drops = |probe: &Probe| -> u64 {
            h.src_ports
                .iter()
                .map(|n| probe.sw.port_counters(probe.sw.port_id(n).unwrap()).unwrap().rx_drp)
                .sum()
        };
        for (i, p) in pairs.iter().enumerate() {
            let n = if i + 1 < pairs.len() { h.pkts_num_hdrm_full } else { h.pkts_num_hdrm_partial };
            for _ in 0..n {
                hdrm::send(&mut probe, p);
            }
        }
        assert_eq!(drops(&probe), 0, "the headroom pool holds every headroom packet");
        let last = pairs.last().unwrap();
        hdrm::send(&mut probe, last);
        assert_eq!(drops(&probe), 1, "the pool is full: the next packet is an ingress drop");
    }

    /// sn2700 measured: NVIDIA's generator's numbers within its margins (trig_pfc 17406, drop 17631 ± 4).
    #[test]
    fn spectrum_profile_gives_generator_figures() {
        let params = measure(&profile("sn2700.yaml"), &ports()).unwrap();
        let block = &params.qos_params["spc1"]["topo-any"].speed_cable["100000_5m"];
        assert!(block.xoff["xoff_1"].pkts_num_trig_pfc.abs_diff(17406) <= 4);
        assert!(block.xoff["xoff_1"].pkts_num_trig_ingr_drp.abs_diff(17631) <= 4);
        assert_eq!(block.wm_pg_shared_lossless.pkts_num_fill_min, 0, "Spectrum fills shared space first");
        // PGSharedWatermarkTest's fill on Mellanox: the generator's pkts_num_dismiss_pfc = shared + 1, with
        // shared = ceil(static_th / 96) - ceil(size / 96) cells, static_th = size + int(0.5 * pool)
        // (tests/qos/qos_sai_base.py __computeBufferThreshold, dynamic_th 0): pg_lossless_100000_5m_profile
        // size 50176, ingress_lossless_pool 3302912 -> 17726 - 523 = 17203 shared, 17204 to fill.
        assert_eq!(block.wm_pg_shared_lossless.pkts_num_trig_pfc, Some(17204));
    }
}
