//! `swctl demo`: a walkthrough of the switch model on the embedded T0 configuration, in virtual time and
//! in-process. It shows what the core does today: ARP, routing, SONiC's DSCP→TC→queue mapping, FDB/ARP
//! aging, and the drop-instead-of-flood rule for lossless traffic.
//!
//! The switch runs on the project's virtual-time driver ([`lossless_dataplane::sim`]): frames are injected
//! on its ports, and what it sends (at line rate, into ports without links) is read from the driver's log.

use lossless_dataplane::model::config::ConfigDb;
use lossless_dataplane::model::{PortId, Switch};
use lossless_dataplane::sim::{Device, Sent, Sim};
use lossless_dataplane::time::{Instant, Nanos};
use lossless_dataplane::wire::build::{self, Ipv4Flow};
use lossless_dataplane::wire::ip::Ecn;
use lossless_dataplane::wire::{self, ArpOperation, ArpRepr, EtherType, EthernetAddress, L3};
use std::fmt::Write as _;
use std::net::Ipv4Addr;

const SEC: u64 = 1_000_000_000;
/// Time given to the switch to send what a step queued (far more than its ports need for it).
const SETTLE_NS: u64 = 1_000_000;
const UPLINK_MAC: EthernetAddress = EthernetAddress([0x02, 0xaa, 0, 0, 0, 1]);
const HOST_MAC: EthernetAddress = EthernetAddress([0x02, 0xbb, 0, 0, 0, 2]);
const HOST_IP: Ipv4Addr = Ipv4Addr::new(192, 168, 0, 2);

/// Runs the walkthrough and returns its report.
pub fn run() -> anyhow::Result<String> {
    let mut out = String::new();
    let db = ConfigDb::from_yaml_str(crate::embedded::T0).map_err(anyhow::Error::msg)?;
    let mut sw = Switch::new();
    let applied = sw.apply(&db, Instant::ZERO)?;
    let port = |sw: &Switch, name: &str| sw.port_id(name).expect("T0 port");
    let (e0, e8) = (port(&sw, "Ethernet0"), port(&sw, "Ethernet8"));
    let port_count = sw.port_count();
    let mut sim = Sim::new();
    sim.keep_log = true;
    let id = sim.add(Device::Switch(Box::new(sw)));
    writeln!(
        out,
        "Applied the embedded T0 config (configs/t0.yaml): generation {}, {} ports, {} warning(s).",
        applied.generation,
        port_count,
        applied.warnings.len()
    )?;

    // 1. The server ARPs for its gateway.
    let request = ArpRepr {
        operation: ArpOperation::Request,
        source_hardware_addr: HOST_MAC,
        source_protocol_addr: HOST_IP,
        target_hardware_addr: EthernetAddress([0; 6]),
        target_protocol_addr: Ipv4Addr::new(192, 168, 0, 1),
    };
    let frame =
        build::ethernet(HOST_MAC, EthernetAddress::BROADCAST, None, EtherType::Arp, &build::arp(&request));
    sim.inject(id.port(e8.index()), Instant::ZERO, frame);
    for t in settle(&mut sim).iter().filter(|s| s.from == id.port(e8.index())) {
        if let Ok(L3::Arp(a)) = wire::decode(&t.frame).map(|d| d.l3) {
            writeln!(
                out,
                "\n[t=0s] {HOST_IP} ({HOST_MAC}) on Ethernet8 asks who-has 192.168.0.1; the switch answers {} is-at {}.",
                a.source_protocol_addr, a.source_hardware_addr
            )?;
        }
    }
    writeln!(
        out,
        "        learned: FDB Vlan1000 {HOST_MAC} -> Ethernet8, neighbour {HOST_IP} -> {HOST_MAC}"
    )?;

    // 2. One routed packet per DSCP from the uplink: DscpMappingPB.
    sim.run_until(Instant::from_ns(SEC));
    for dscp in 0..64 {
        sim.inject(id.port(e0.index()), Instant::from_ns(SEC), routed(dscp));
    }
    settle(&mut sim);
    writeln!(
        out,
        "\n[t=1s] 64 routed packets from Ethernet0, one per DSCP 0..63 (sonic-mgmt DscpMappingPB)."
    )?;
    writeln!(
        out,
        "        Ethernet8 egress queues with SONiC's AZURE maps (DSCP 3,4 lossless; 8 -> queue 0; 5 -> 2; 46 -> 5; 48 -> 6;\n        UC7 holds the switch's own ARP reply):\n"
    )?;
    writeln!(out, "{:>12}  {:>4}  {:>12}  {:>13}", "Port", "TxQ", "Counter/pkts", "Counter/bytes")?;
    let c = sim.switch(id).port_counters(e8).expect("port");
    for (q, qc) in c.queues.iter().enumerate() {
        writeln!(out, "{:>12}  {:>4}  {:>12}  {:>13}", "Ethernet8", format!("UC{q}"), qc.packets, qc.bytes)?;
    }

    // 3. Fifteen minutes of silence: the FDB entry ages (600 s), the ARP entry (4 h) does not.
    sim.run_until(Instant::from_ns(15 * 60 * SEC));
    let sw = sim.switch(id);
    writeln!(
        out,
        "\n[t=15min] The server was silent: FDB entry present: {}, ARP entry present: {}.",
        sw.fdb().lookup(1000, HOST_MAC).is_some(),
        sw.neighbors().lookup(HOST_IP.into()).is_some()
    )?;

    // 4. Lossless packets now find the MAC but no port: dropped, never flooded. Lossy ones flood.
    let before = sw.port_counters(e0).expect("port").rx_drp;
    let now = sim.now();
    for dscp in [3, 4] {
        for _ in 0..10 {
            sim.inject(id.port(e0.index()), now, routed(dscp));
        }
    }
    let lossless_out = settle(&mut sim).len();
    sim.inject(id.port(e0.index()), sim.now(), routed(8));
    let lossy_out = settle(&mut sim).len();
    let sw = sim.switch(id);
    let c = sw.port_counters(e0).expect("port");
    writeln!(
        out,
        "          20 routed lossless packets (DSCP 3, 4) to {HOST_IP}: {} transmitted, Ethernet0 RX_DRP +{}, FDB_MISS_LOSSLESS {}.",
        lossless_out,
        c.rx_drp - before,
        c.drop_reasons.iter().find(|(r, _)| r.as_str() == "FDB_MISS_LOSSLESS").map_or(0, |(_, n)| *n)
    )?;
    writeln!(
        out,
        "          1 routed lossy packet (DSCP 8): flooded to {lossy_out} VLAN members (SWITCH|switch|lossy_fdb_miss_action: flood)."
    )?;
    writeln!(
        out,
        "          Flooding lossless traffic is what deadlocked Microsoft's RoCEv2 network; Lossless drops it instead."
    )?;

    writeln!(out, "\nPort counters:\n")?;
    writeln!(
        out,
        "{:>10}  {:>6}  {:>6}  {:>6}  {:>6}  {:>6}  {:>6}",
        "IFACE", "RX_OK", "RX_ERR", "RX_DRP", "TX_OK", "TX_ERR", "TX_DRP"
    )?;
    for (id, p) in sw.config().ports.iter().enumerate() {
        let c = sw.port_counters(PortId::new(id)).expect("port");
        let name = &p.name;
        writeln!(
            out,
            "{name:>10}  {:>6}  {:>6}  {:>6}  {:>6}  {:>6}  {:>6}",
            c.rx_ok, c.rx_err, c.rx_drp, c.tx_ok, c.tx_err, c.tx_drp
        )?;
    }
    Ok(out)
}

fn routed(dscp: u8) -> Vec<u8> {
    let flow = Ipv4Flow {
        src_mac: UPLINK_MAC,
        dst_mac: EthernetAddress([0x02, 0x4c, 0x53, 0, 0, 1]),
        src_ip: Ipv4Addr::new(172, 16, 0, 5),
        dst_ip: HOST_IP,
        src_port: 49152,
        dscp,
        ecn: Ecn::Ect0,
        ttl: 64,
    };
    flow.udp(4791, &[0; 32])
}

/// Runs the switch for [`SETTLE_NS`] from now, so that it sends what it queued (at line rate); the frames
/// it sent meanwhile.
fn settle(sim: &mut Sim) -> Vec<Sent> {
    let first = sim.sent.len();
    sim.run_until(sim.now() + Nanos::from_ns(SETTLE_NS));
    sim.sent[first..].to_vec()
}

#[cfg(test)]
mod tests {
    #[test]
    fn walkthrough_shows_mapping_aging_and_drop_not_flood() {
        let report = super::run().unwrap();
        assert!(report.contains("Ethernet8   UC1            58"), "{report}");
        assert!(report.contains("FDB entry present: false, ARP entry present: true"), "{report}");
        assert!(report.contains("0 transmitted, Ethernet0 RX_DRP +20, FDB_MISS_LOSSLESS 20"), "{report}");
        assert!(report.contains("flooded to 3 VLAN members"), "{report}");
    }
}
