use super::*;
use crate::lab::topology::Flow;
use crate::sim::fabric::{self, ORIGIN_NS};
use lossless_dataplane::model::PortId;

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
    f.sim.run_until(ORIGIN_NS + 2_000_000);
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
