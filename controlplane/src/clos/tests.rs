use super::*;
use crate::lab::topology::Flow;
use crate::sim::fabric::{self, ORIGIN_NS};
use lossless_dataplane::model::PortId;
use lossless_dataplane::time::Instant;

const PROFILE: &str = include_str!("../../../configs/profiles/th_balanced.yaml");

fn small() -> ClosSpec {
    ClosSpec { leaves: 3, hosts_per_leaf: 2, spines: 2, speed_mbps: 25_000, host_mtu: 4200 }
}

#[test]
fn a_small_clos_routes_every_host_to_every_other_and_spreads_over_the_spines() {
    let spec = small();
    let clos = generate("clos", &spec, &ConfigDb::from_yaml_str(PROFILE).unwrap()).unwrap();
    let mut topology = clos.to_topology().unwrap();
    assert_eq!((topology.switches.len(), topology.hosts.len(), topology.links.len()), (5, 6, 12));
    // The profile's 25G port (Ethernet8) is the template: its own lossless PG profile, its PFC priorities.
    let leaf0 = topology.switch("leaf0").unwrap();
    let pg = &leaf0.config.tables["BUFFER_PG"];
    assert!(pg.values().any(|f| f["profile"].contains("pg_lossless_25000_40m_profile")), "{pg:?}");
    assert_eq!(leaf0.pfc_enable("Ethernet12"), 0b11000);
    assert_eq!(topology.hosts[0].pfc, vec![3, 4]);

    // Every ordered pair of hosts, 20 KiB each: 3 messages of 4 KiB... enough to cross and be acked.
    let flows = shuffle(&spec, 3, 3, 4096);
    assert_eq!(flows.len(), 30);
    topology.traffic = flows
        .iter()
        .map(|f| Flow {
            from: f.from.clone(),
            to: f.to.clone(),
            priority: f.priority,
            dscp: f.dscp,
            rate_mbps: None,
            message_bytes: f.message_bytes,
            messages: Some(5),
            dcqcn: true,
            start_ms: 0,
        })
        .collect();
    let mut f = fabric::build(&topology, 1, ORIGIN_NS + 10_000_000).unwrap();
    f.sim.run_until(Instant::from_ns(ORIGIN_NS + 2_000_000));
    for (i, flow) in flows.iter().enumerate() {
        let host = f.hosts[&flow.from];
        let stats = f.sim.nic(host).flow_stats(i as u32 + 1).unwrap();
        assert_eq!(
            (stats.messages_completed, stats.acked_bytes),
            (5, 5 * 4096),
            "flow {i}: {} → {}",
            flow.from,
            flow.to
        );
    }
    // The 24 flows between leaves cross the spines: each spine forwards some (the 5-tuple hash spreads
    // them), and nothing is dropped anywhere.
    let spine_frames: Vec<u64> = (0..spec.spines)
        .map(|s| {
            let id = f.switches[&format!("spine{s}")];
            (0..spec.leaves as usize)
                .map(|p| f.sim.switch(id).port_counters(PortId::new(p)).unwrap().tx_ok)
                .sum()
        })
        .collect();
    assert!(spine_frames.iter().all(|&n| n > 0), "frames per spine: {spine_frames:?}");
    for (name, &id) in &f.switches {
        let sw = f.sim.switch(id);
        for p in 0..sw.port_count() {
            let c = sw.port_counters(PortId::new(p)).unwrap();
            assert_eq!((c.rx_drp, c.tx_drp), (0, 0), "{name} port {p}");
        }
    }
}

#[test]
fn another_speed_leaves_the_lossless_pgs_to_the_headroom_calculation() {
    let spec = ClosSpec { speed_mbps: 50_000, ..small() };
    let clos = generate("clos", &spec, &ConfigDb::from_yaml_str(PROFILE).unwrap()).unwrap();
    let pg = &clos.configs["spine1"].tables["BUFFER_PG"];
    assert_eq!(pg["Ethernet0,Ethernet4,Ethernet8|3-4"]["profile"], "NULL");
    // Computed when loaded, for 50G and the profile's 40 m cables.
    let topology = clos.to_topology().unwrap();
    let pg = &topology.switch("spine1").unwrap().config.tables["BUFFER_PG"];
    assert!(pg.keys().any(|k| k.ends_with("|3-4")), "{pg:?}");
    assert!(pg.values().all(|f| f["profile"] != "NULL"), "{pg:?}");
}

#[test]
fn shapes_the_addressing_cannot_number_are_refused_by_name() {
    let profile = ConfigDb::from_yaml_str(PROFILE).unwrap();
    for (spec, needle) in [
        (ClosSpec { leaves: 0, ..small() }, "--leaves 0"),
        (ClosSpec { hosts_per_leaf: 128, ..small() }, "--hosts-per-leaf 128"),
        (ClosSpec { spines: 200, ..small() }, "--spines 200"),
        (ClosSpec { speed_mbps: 0, ..small() }, "--speed 0"),
    ] {
        let e = generate("clos", &spec, &profile).unwrap_err().to_string();
        assert!(e.contains(needle), "{e}");
    }
    let e = generate("clos", &small(), &ConfigDb::default()).unwrap_err().to_string();
    assert!(e.contains("no PORT"), "{e}");
}

#[test]
fn a_failed_uplink_leaves_the_ecmp_group_and_its_flows_rehash_to_the_other_spine() {
    let spec = small();
    let clos = generate("clos", &spec, &ConfigDb::from_yaml_str(PROFILE).unwrap()).unwrap();
    let mut topology = clos.to_topology().unwrap();
    // Leaf 0's two hosts each send 4 flows to leaf 1's hosts: 8 QPs, 8 UDP source ports, both spines used.
    topology.traffic = (0..8)
        .map(|i| Flow {
            from: ClosSpec::host_name(1 + i % 2),
            to: ClosSpec::host_name(3 + (i / 2) % 2),
            priority: 3,
            dscp: 3,
            rate_mbps: Some(2_000),
            message_bytes: 4096,
            messages: None,
            dcqcn: false,
            start_ms: 0,
        })
        .collect();
    let mut f = fabric::build(&topology, 1, ORIGIN_NS + 2_000_000).unwrap();
    let (leaf0, leaf1) = (f.switches["leaf0"], f.switches["leaf1"]);
    // Leaf 0's uplinks: Ethernet8 to spine0, Ethernet12 to spine1 (ports 2 and 3).
    let tx = |f: &mut fabric::Fabric, port: usize| {
        f.sim.switch(leaf0).port_counters(PortId::new(port)).unwrap().tx_ok
    };
    f.sim.run_until(Instant::from_ns(ORIGIN_NS + 500_000));
    let (to_spine0, to_spine1) = (tx(&mut f, 2), tx(&mut f, 3));
    assert!(to_spine0 > 0 && to_spine1 > 0, "before: {to_spine0} and {to_spine1} frames");
    assert!(f.sim.set_link_up(leaf0.port(2), false));
    assert!(!f.sim.link_is_up(leaf0.port(2)) && !f.sim.switch(leaf0).port_oper_up(PortId::new(2)));
    // Routing converges at once: leaf 1 reaches leaf 0's hosts over spine1 only (the ACKs' way back).
    let mut db = topology.switch("leaf1").unwrap().config.clone();
    db.set("STATIC_ROUTE", "10.1.0.0/24", "nexthop", "10.2.1.2");
    f.sim.apply(leaf1, &db).unwrap();
    let acked = |f: &mut fabric::Fabric| -> u64 {
        (0..8u32)
            .map(|i| {
                f.sim.nic(f.hosts[&ClosSpec::host_name(1 + i % 2)]).flow_stats(i + 1).unwrap().acked_bytes
            })
            .sum()
    };
    let acked_at_failure = acked(&mut f);
    let (spine0_at_failure, spine1_at_failure) = (tx(&mut f, 2), tx(&mut f, 3));
    f.sim.run_until(Instant::from_ns(ORIGIN_NS + 1_500_000));
    // Nothing more leaves on the failed port, nothing is routed to it and dropped: all went to spine1.
    assert_eq!(tx(&mut f, 2), spine0_at_failure);
    for host_port in 0..2 {
        let c = f.sim.switch(leaf0).port_counters(PortId::new(host_port)).unwrap();
        let down_drops = c.drop_reasons.get(&lossless_dataplane::model::DropReason::EgressPortDown);
        assert_eq!(down_drops, None, "leaf0 routed frames from port {host_port} to its failed uplink");
    }
    let moved = tx(&mut f, 3) - spine1_at_failure;
    // 16 Gb/s offered for 1 ms in ~4 KiB frames: about 490 frames, all on spine1 now.
    assert!(moved > 400, "{moved} frames to spine1 after the failure");
    assert!(acked(&mut f) > acked_at_failure + 1_000_000, "the flows go on after the failure");
}
