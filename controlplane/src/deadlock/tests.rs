use super::*;
use crate::lab::topology::RelativeTo;
use lossless_dataplane::model::config::FdbMissAction;

/// A two-tier Clos written by hand: leaves t1a and t1b, ToRs t0a, t0b and t0c, each ToR wired to both
/// leaves (link t1x–t0y is 10.0.xy.0/31, the leaf on .0) with one server on a routed port. Up-down
/// routing: a ToR reaches the other racks over both leaves (ECMP), a leaf reaches each rack through its
/// ToR. DSCP 3 is lossless priority 3 on every port.
const CLOS: &str = r#"
name: clos
switches:
  t1a:
    config:
      <<:
        - &qos
          DSCP_TO_TC_MAP: { AZURE: { "3": "3" } }
          TC_TO_PRIORITY_GROUP_MAP: { AZURE: { "3": "3" } }
        - &leaf
          PORT: { Ethernet0: { speed: 100000 }, Ethernet4: { speed: 100000 }, Ethernet8: { speed: 100000 } }
          PORT_QOS_MAP: { "Ethernet0,Ethernet4,Ethernet8": { dscp_to_tc_map: AZURE, tc_to_pg_map: AZURE, pfc_enable: "3" } }
      DEVICE_METADATA: { localhost: { mac: "02:00:00:00:01:0a" } }
      INTERFACE: { Ethernet0|10.0.11.0/31: {}, Ethernet4|10.0.12.0/31: {}, Ethernet8|10.0.13.0/31: {} }
      STATIC_ROUTE:
        10.1.0.0/24: { nexthop: 10.0.11.1 }
        10.2.0.0/24: { nexthop: 10.0.12.1 }
        10.3.0.0/24: { nexthop: 10.0.13.1 }
  t1b:
    config:
      <<: [*qos, *leaf]
      DEVICE_METADATA: { localhost: { mac: "02:00:00:00:01:0b" } }
      INTERFACE: { Ethernet0|10.0.21.0/31: {}, Ethernet4|10.0.22.0/31: {}, Ethernet8|10.0.23.0/31: {} }
      STATIC_ROUTE:
        10.1.0.0/24: { nexthop: 10.0.21.1 }
        10.2.0.0/24: { nexthop: 10.0.22.1 }
        10.3.0.0/24: { nexthop: 10.0.23.1 }
  t0a:
    config:
      <<: [*qos, *leaf]
      DEVICE_METADATA: { localhost: { mac: "02:00:00:00:00:0a" } }
      INTERFACE: { Ethernet0|10.0.11.1/31: {}, Ethernet4|10.0.21.1/31: {}, Ethernet8|10.1.0.1/24: {} }
      STATIC_ROUTE:
        10.2.0.0/24: { nexthop: "10.0.11.0,10.0.21.0" }
        10.3.0.0/24: { nexthop: "10.0.11.0,10.0.21.0" }
  t0b:
    config:
      <<: [*qos, *leaf]
      DEVICE_METADATA: { localhost: { mac: "02:00:00:00:00:0b" } }
      INTERFACE: { Ethernet0|10.0.12.1/31: {}, Ethernet4|10.0.22.1/31: {}, Ethernet8|10.2.0.1/24: {} }
      STATIC_ROUTE:
        10.1.0.0/24: { nexthop: "10.0.12.0,10.0.22.0" }
        10.3.0.0/24: { nexthop: "10.0.12.0,10.0.22.0" }
  t0c:
    config:
      <<: [*qos, *leaf]
      DEVICE_METADATA: { localhost: { mac: "02:00:00:00:00:0c" } }
      INTERFACE: { Ethernet0|10.0.13.1/31: {}, Ethernet4|10.0.23.1/31: {}, Ethernet8|10.3.0.1/24: {} }
      STATIC_ROUTE:
        10.1.0.0/24: { nexthop: "10.0.13.0,10.0.23.0" }
        10.2.0.0/24: { nexthop: "10.0.13.0,10.0.23.0" }
hosts:
  h1: { ip: 10.1.0.2/24, attach: "t0a:Ethernet8", gateway-mac: auto }
  h2: { ip: 10.2.0.2/24, attach: "t0b:Ethernet8", gateway-mac: auto }
  h3: { ip: 10.3.0.2/24, attach: "t0c:Ethernet8", gateway-mac: auto }
links:
  - t1a:Ethernet0 -- t0a:Ethernet0
  - t1a:Ethernet4 -- t0b:Ethernet0
  - t1a:Ethernet8 -- t0c:Ethernet0
  - t1b:Ethernet0 -- t0a:Ethernet4
  - t1b:Ethernet4 -- t0b:Ethernet4
  - t1b:Ethernet8 -- t0c:Ethernet4
"#;

fn topology(text: &str) -> Topology {
    Topology::parse(text, "t", "test", &RelativeTo(".".into())).unwrap_or_else(|e| panic!("{e:#}"))
}

/// The link t1a–t0b has failed (taken out of the topology), and t1a reaches t0b's rack with a static
/// route down to t0c, meant to go up to t1b and down to t0b: a bounce. t0c still spreads t0b's subnet
/// over both leaves, so half of what t1a bounces down comes back up to t1a.
fn clos_with_bounce() -> String {
    CLOS.replace("  - t1a:Ethernet4 -- t0b:Ethernet0\n", "")
        .replace("10.2.0.0/24: { nexthop: 10.0.12.1 }", "10.2.0.0/24: { nexthop: 10.0.13.1 }")
}

fn chains(a: &Analysis) -> Vec<&str> {
    a.cycles.iter().map(|c| c.chain.as_str()).collect()
}

#[test]
fn a_clos_with_up_down_routing_has_no_cycle() {
    let a = check(&topology(CLOS));
    assert!(!a.has_cycle(), "{}", a.describe());
    // Every inter-switch ingress and every server port carries lossless traffic: 6 links × 2 ends + 3.
    assert_eq!(a.buffers, 15, "{}", a.describe());
    // Up-down: a ToR's server port feeds both leaves; a leaf's port from one ToR feeds the two others.
    assert!(a.dependencies > 0);
}

#[test]
fn a_static_route_that_bounces_down_up_down_closes_a_cycle() {
    let a = check(&topology(&clos_with_bounce()));
    assert_eq!(chains(&a), ["t0c:Ethernet0/p3 -> t1a:Ethernet8/p3 -> t0c:Ethernet0/p3"], "{}", a.describe());
    let hops = &a.cycles[0].hops;
    assert_eq!((hops[0].via, hops[0].to_host.as_str()), (Via::Routed, "h2"));
    assert_eq!((hops[1].via, hops[1].to_host.as_str()), (Via::Routed, "h2"));
}

#[test]
fn a_link_shut_down_is_a_failed_link_too() {
    // The same bounce with the link still cabled but t1a's port to t0b admin down.
    let text = clos_with_bounce()
        .replace("  - t1a:Ethernet8 -- t0c:Ethernet0\n", "  - t1a:Ethernet8 -- t0c:Ethernet0\n  - t1a:Ethernet4 -- t0b:Ethernet0\n")
        .replacen(
            "      DEVICE_METADATA: { localhost: { mac: \"02:00:00:00:01:0a\" } }",
            "      PORT: { Ethernet0: { speed: 100000 }, Ethernet4: { speed: 100000, admin_status: down }, Ethernet8: { speed: 100000 } }\n      DEVICE_METADATA: { localhost: { mac: \"02:00:00:00:01:0a\" } }",
            1,
        );
    let a = check(&topology(&text));
    assert_eq!(chains(&a), ["t0c:Ethernet0/p3 -> t1a:Ethernet8/p3 -> t0c:Ethernet0/p3"], "{}", a.describe());
}

#[test]
fn the_bounce_alone_is_no_cycle_when_the_tor_sends_it_on_up_the_other_leaf() {
    // t0c pins t0b's subnet to t1b: the bounced traffic goes down-up-down once and nothing waits in a
    // circle (a cycle in a two-tier Clos needs two bounces).
    let text = clos_with_bounce()
        .replace("10.2.0.0/24: { nexthop: \"10.0.13.0,10.0.23.0\" }", "10.2.0.0/24: { nexthop: 10.0.23.0 }");
    let a = check(&topology(&text));
    assert!(!a.has_cycle(), "{}", a.describe());
}

#[test]
fn a_second_bounce_the_other_way_closes_a_four_buffer_cycle() {
    // Hu et al.'s case: on top of the failed link's bounce through t0c (now sent on up t1b only), a static
    // route on t1b sends t0c's rack down to t0a, whose route takes it up to t1a: two bounces in opposite
    // directions, and four buffers wait on each other with no routing loop anywhere.
    let text = clos_with_bounce()
        .replace("10.2.0.0/24: { nexthop: \"10.0.13.0,10.0.23.0\" }", "10.2.0.0/24: { nexthop: 10.0.23.0 }")
        .replace("10.3.0.0/24: { nexthop: 10.0.23.1 }", "10.3.0.0/24: { nexthop: 10.0.21.1 }")
        .replace("10.3.0.0/24: { nexthop: \"10.0.11.0,10.0.21.0\" }", "10.3.0.0/24: { nexthop: 10.0.11.0 }");
    let a = check(&topology(&text));
    assert_eq!(
        chains(&a),
        ["t0a:Ethernet4/p3 -> t1a:Ethernet0/p3 -> t0c:Ethernet0/p3 -> t1b:Ethernet8/p3 -> t0a:Ethernet4/p3"],
        "{}",
        a.describe()
    );
}

/// The flooding deadlock's topology, with every switch's `lossless_fdb_miss_action` set to `action`.
fn flood_check(action: FdbMissAction) -> Analysis {
    let path = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../configs/topologies/flood-deadlock.yaml"));
    let t = Topology::load(path).unwrap_or_else(|e| panic!("{e:#}"));
    let configs: Vec<SwitchConfig> = t
        .switches
        .iter()
        .map(|s| {
            let mut c = s.compiled.clone();
            c.switch.lossless_fdb_miss_action = action;
            c
        })
        .collect();
    check_with(&t, &configs.iter().collect::<Vec<_>>())
}

#[test]
fn the_flooding_topology_has_a_cycle_with_flood_and_none_with_drop() {
    let a = flood_check(FdbMissAction::Drop);
    assert!(!a.has_cycle(), "{}", a.describe());
    let a = flood_check(FdbMissAction::Flood);
    // The cycle the simulation deadlocks on (configs/scenarios/flood-deadlock.yaml): through all four
    // switches, each ToR flooding what comes down from one leaf up to the other, each leaf routing it
    // down to the other ToR.
    let four =
        "t0a:Ethernet0/p3 -> t1b:Ethernet0/p3 -> t0b:Ethernet4/p3 -> t1a:Ethernet4/p3 -> t0a:Ethernet0/p3";
    assert!(chains(&a).contains(&four), "{}", a.describe());
    // Every hop out of a ToR on a cycle is a flooded copy; every hop out of a leaf is routed.
    for c in &a.cycles {
        for h in &c.hops {
            let expected = if h.from.switch.starts_with("t1") { Via::Routed } else { Via::Flooded };
            assert_eq!(h.via, expected, "{}", a.describe());
        }
    }
}

#[test]
fn the_graph_follows_the_pfc_maps() {
    // With PFC off on t0c's ports t0c sends no XOFF: its buffers are not lossless (a packet there can be
    // dropped, it never waits), and the bounce cycle through t0c is gone.
    let text = clos_with_bounce().replace(
        "      DEVICE_METADATA: { localhost: { mac: \"02:00:00:00:00:0c\" } }",
        "      PORT_QOS_MAP: { \"Ethernet0,Ethernet4,Ethernet8\": { dscp_to_tc_map: AZURE, tc_to_pg_map: AZURE } }\n      DEVICE_METADATA: { localhost: { mac: \"02:00:00:00:00:0c\" } }",
    );
    let t = topology(&text);
    assert_eq!(t.switch("t0c").unwrap().pfc_enable("Ethernet0"), 0);
    assert_eq!(t.switch("t1a").unwrap().pfc_enable("Ethernet8"), 0b1000);
    let a = check(&t);
    assert!(!a.has_cycle(), "{}", a.describe());
}

#[test]
fn cycles_are_listed_once_each_from_their_smallest_node() {
    // 0 → 1 → 2 → 0 and 1 → 2 → 1 and 3 alone.
    let adjacency = vec![vec![1], vec![2], vec![0, 1], vec![3]];
    let (cycles, truncated) = elementary_cycles(&adjacency, 10);
    assert_eq!(cycles, [vec![0, 1, 2], vec![1, 2], vec![3]]);
    assert!(!truncated);
    let (cycles, truncated) = elementary_cycles(&adjacency, 2);
    assert_eq!((cycles.len(), truncated), (2, true));
}
