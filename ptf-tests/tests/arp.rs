//! sonic-mgmt's `tests/arp/test_unknown_mac.py` (sonic-net/sonic-mgmt): a VLAN neighbour
//! whose ARP entry exists but whose MAC the FDB no longer has. Routed traffic to it must not be flooded
//! into the VLAN (the RDMA-at-scale deadlock); the ingress port counts the drops.
//!
//! What the switch does is the profile's: `SWITCH|switch` `lossless_fdb_miss_action` (default `drop`) for a
//! TC that is lossless on any member of the VLAN, `lossy_fdb_miss_action` (default `flood`) otherwise
//! (`dataplane/core/src/model/config/mod.rs`, `SwitchSettings`). sonic-mgmt parametrises DSCP 3, 4 and 8 and
//! expects a drop for all three on non-Mellanox ASICs; the shipped profiles keep the lossy default
//! `flood` (as Mellanox and Barefoot, which sonic-mgmt skips), so DSCP 8 is also run on the profile with
//! `lossy_fdb_miss_action: drop`, where all three drop as sonic-mgmt expects.

use lossless_dataplane::model::config::ConfigDb;
use lossless_ptf::harness::Dest;
use lossless_ptf::on_profiles;
use lossless_ptf::packet::{Udp, simple_udp_packet};
use lossless_ptf::qos::Qos;
use lossless_ptf::report::Report;
use lossless_ptf::{Ptf, profile};
use std::net::Ipv4Addr;

/// Packets per DSCP, as test_unknown_mac.py.
const COUNT: usize = 10;
/// The routed port the packets come in on (an uplink in sonic-mgmt's T0).
const SRC: &str = "Ethernet0";
/// The VLAN member the neighbour lives behind.
const HOST_PORT: &str = "Ethernet8";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Miss {
    Drop,
    Flood,
}

/// `SWITCH|switch` `field`, with the model's default.
fn miss_action(db: &ConfigDb, field: &str, default: Miss) -> Miss {
    match db.tables.get("SWITCH").and_then(|t| t.get("switch")).and_then(|f| f.get(field)).map(String::as_str)
    {
        Some("drop") => Miss::Drop,
        Some("flood") => Miss::Flood,
        Some(other) => panic!("SWITCH|switch|{field} = {other}"),
        None => default,
    }
}

/// The members of `vlan` (key of VLAN), with whether each is tagged.
fn vlan_members(db: &ConfigDb, vlan: &str) -> Vec<(String, bool)> {
    db.tables["VLAN_MEMBER"]
        .iter()
        .filter_map(|(k, f)| {
            let (v, port) = k.split_once('|')?;
            (v == vlan).then(|| (port.to_owned(), f.get("tagging_mode").is_some_and(|m| m == "tagged")))
        })
        .collect()
}

/// UnknownMac[dscp]: the neighbour behind HOST_PORT is learnt (ARP reply: neighbour and FDB entry), the
/// FDB is flushed (`sonic-clear fdb all`), then COUNT routed UDP packets with `dscp` come in on SRC for it.
/// Drop: no copy on any port (the switch counted the packets before the negative wait starts), SRC's RX_DRP
/// and its FDB_MISS_* drop reason grow by exactly COUNT. Flood: COUNT routed copies on every VLAN member,
/// no drop. Either way, once the host speaks again (FDB re-learnt) the same packets reach it only.
fn unknown_mac(name: &str, dscp: u8, lossy_drop_variant: bool) {
    let label = if lossy_drop_variant {
        format!("UnknownMac[dscp{dscp}, lossy drop]")
    } else {
        format!("UnknownMac[dscp{dscp}]")
    };
    let mut report = Report::new(&label, name);
    let mut db = profile(name);
    if lossy_drop_variant {
        db.set("SWITCH", "switch", "lossy_fdb_miss_action", "drop");
    }
    let mut ptf = Ptf::start(name, db);
    let db = ptf.db.clone();
    let qos = Qos::new(&db);
    let src = ptf.port_index(SRC);
    let host = ptf.port_index(HOST_PORT);
    let vlan = db.tables["VLAN_MEMBER"]
        .keys()
        .find_map(|k| k.split_once('|').filter(|(_, p)| *p == HOST_PORT).map(|(v, _)| v.to_owned()))
        .expect("HOST_PORT is a VLAN member");
    let members = vlan_members(&db, &vlan);

    // Expected action, from the profile.
    let tc = qos.dscp_to_tc(SRC, dscp);
    let lossless = members.iter().any(|(p, _)| qos.pfc_enabled(p).contains(&tc));
    let action = if lossless {
        miss_action(&db, "lossless_fdb_miss_action", Miss::Drop)
    } else {
        miss_action(&db, "lossy_fdb_miss_action", Miss::Flood)
    };

    // ARP present, FDB flushed.
    let dest = ptf.destination(host);
    let flushed = ptf.flush_fdb(None);
    let fdb_left = ptf.fdb().into_iter().filter(|e| !e.is_static).count();
    let neighbour = ptf.neighbors().into_iter().any(|n| n.ip == dest.ip.to_string());
    report.number(
        "neighbour present, dynamic FDB entries after flush",
        "true, 0",
        format!("{neighbour}, {fdb_left}"),
    );
    assert!(flushed >= 1 && fdb_left == 0, "flush_fdb removed {flushed}, {fdb_left} dynamic entries left");
    assert!(neighbour, "the neighbour {} survives the FDB flush", dest.ip);
    ptf.flush();

    let frame = simple_udp_packet(&Udp {
        pktlen: 100,
        eth_dst: ptf.router_mac(),
        ip_src: Ipv4Addr::new(10, 0, 0, 1),
        ip_dst: dest.ip,
        ip_dscp: dscp,
        ..Udp::default()
    });
    let reason = if lossless { "FDB_MISS_LOSSLESS" } else { "FDB_MISS_LOSSY" };
    let before = ptf.port_counters(SRC);
    ptf.send_packets(src, &frame, COUNT);
    let after = ptf.port_counters(SRC);
    let rx_drp = after.rx_drp - before.rx_drp;
    let by_reason = after.drop_reasons.get(reason).copied().unwrap_or(0)
        - before.drop_reasons.get(reason).copied().unwrap_or(0);
    let expected_drops = if action == Miss::Drop { COUNT as u64 } else { 0 };
    report.number(
        &format!("TC {tc} ({}): action", if lossless { "lossless" } else { "lossy" }),
        format!("{action:?}"),
        if rx_drp > 0 { "Drop" } else { "Flood" },
    );
    report.number(&format!("{SRC} RX_DRP delta"), expected_drops, rx_drp);
    report.number(&format!("{reason} delta"), expected_drops, by_reason);
    assert_eq!(rx_drp, expected_drops, "{SRC} RX_DRP after {COUNT} packets to a neighbour with no FDB entry");
    assert_eq!(by_reason, expected_drops, "{SRC} drops counted as {reason}");
    match action {
        Miss::Drop => {
            // Counted as dropped already; nothing may show up on any port, the VLAN members included.
            ptf.verify_no_other_packets();
            report.number("copies on VLAN ports", 0, 0);
        }
        Miss::Flood => {
            let mut copies = 0;
            for (port, tagged) in &members {
                let p = ptf.port_index(port);
                let vid: u16 = db.tables["VLAN"][&vlan]["vlanid"].parse().expect("vlanid");
                let at = Dest { port: p, vlan: tagged.then_some(vid), ..dest };
                let want = ptf.expected_routed(&frame, &at);
                for _ in 0..COUNT {
                    ptf.verify_packet(&want, p);
                    copies += 1;
                }
            }
            ptf.verify_no_other_packets();
            report.number("copies on VLAN ports", COUNT * members.len(), copies);
        }
    }

    // Control: once the host is heard from again, the same packets reach it, and only it.
    let dest = ptf.destination(host);
    ptf.flush();
    ptf.send_packets(src, &frame, COUNT);
    let want = ptf.expected_routed(&frame, &dest);
    for _ in 0..COUNT {
        ptf.verify_packet(&want, host);
    }
    ptf.verify_no_other_packets();
}

on_profiles!(dscp3 => unknown_mac(3, false));
on_profiles!(dscp4 => unknown_mac(4, false));
on_profiles!(dscp8 => unknown_mac(8, false));
on_profiles!(dscp8_lossy_drop => unknown_mac(8, true));
