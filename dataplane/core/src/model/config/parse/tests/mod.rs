//! The compiler's tests: fixtures, the full example config and the value parsers here, the error rules of
//! the port, L2, L3 and QoS tables in [`errors`], the buffer tables in [`buffers`], the egress and watchdog
//! tables in [`scheduling`].

mod buffers;
mod errors;
mod scheduling;

use super::*;
use crate::model::config::AsicFamily;
use crate::time::Nanos;

fn mac(text: &str) -> EthernetAddress {
    text.parse().unwrap()
}

fn net(text: &str) -> IpNet {
    text.parse().unwrap()
}

fn ip(text: &str) -> IpAddr {
    text.parse().unwrap()
}

fn yaml(text: &str) -> ConfigDb {
    ConfigDb::from_yaml_str(text).unwrap()
}

/// AZURE DSCP_TO_TC_MAP of SONiC's `files/build_templates/qos_config.j2` (sonic-buildimage).
fn azure_dscp() -> [u8; 64] {
    let mut map = [1; 64];
    for (dscp, tc) in [(3, 3), (4, 4), (5, 2), (8, 0), (46, 5), (48, 6)] {
        map[dscp] = tc;
    }
    map
}

fn azure_dscp_yaml() -> String {
    let fields: Vec<String> =
        azure_dscp().iter().enumerate().map(|(d, tc)| format!("\"{d}\": \"{tc}\"")).collect();
    format!("{{{}}}", fields.join(", "))
}

const FULL: &str = r#"
DEVICE_METADATA:
  localhost:
    hostname: lossless-1
    hwsku: Lossless-4x100G
    asic: generic
    platform: x86_64-lossless-r0
    buffer_model: traditional
    type: ToRRouter
    mac: "02:00:00:00:00:aa"
SWITCH:
  switch:
    fdb_aging_time: 300
    neigh_aging_time: 0
    lossy_fdb_miss_action: drop
    lossless_fdb_miss_action: flood
    ecmp_hash_seed: 12345
PORT:
  Ethernet0: {speed: 100000, mtu: 9100, alias: etp1, netdev: veth0, lanes: "0,1,2,3", index: 1, admin_status: up, fec: rs}
  Ethernet4: {speed: 100000, mac: "02:00:00:00:01:04", netdev: veth1}
  Ethernet8: {speed: 25000, mtu: 1500, admin_status: down}
  Ethernet12: {speed: 25000}
INTERFACE:
  Ethernet0: {vrf_name: default}
  "Ethernet0|10.0.0.0/31": {}
  "Ethernet4|10.0.0.3/31": {}
  "Ethernet4|fc00::1/126": {}
VLAN:
  Vlan100: {vlanid: 100, mac: "02:00:00:00:01:00", members: [Ethernet8, Ethernet12], description: servers}
VLAN_MEMBER:
  "Vlan100|Ethernet12": {tagging_mode: tagged}
  "Vlan100|Ethernet8": {tagging_mode: untagged}
VLAN_INTERFACE:
  Vlan100: {}
  "Vlan100|192.168.0.1/24": {}
NEIGH:
  "Vlan100|192.168.0.10": {neigh: "02:00:00:00:00:10", family: IPv4}
  "Ethernet4|fc00::2": {neigh: "02:00:00:00:00:20"}
STATIC_ROUTE:
  "10.10.0.0/16": {nexthop: "10.0.0.1,10.0.0.2", ifname: "Ethernet0,", distance: 1}
  "default|0.0.0.0/0": {blackhole: "true"}
FDB:
  "Vlan100|02:00:00:00:00:10": {port: Ethernet8, type: static}
DSCP_TO_TC_MAP:
  AZURE: AZURE_DSCP
DOT1P_TO_TC_MAP:
  AZURE: {"0": 1, "1": 0, "2": 2, "3": 3, "4": 4, "5": 5, "6": 6, "7": 7}
TC_TO_QUEUE_MAP:
  AZURE: {"0": 0, "1": 1, "2": 2, "3": 3, "4": 4, "5": 5, "6": 6, "7": 7}
TC_TO_PRIORITY_GROUP_MAP:
  AZURE: {"0": 0, "1": 0, "2": 0, "3": 3, "4": 4, "5": 0, "6": 0, "7": 7}
MAP_PFC_PRIORITY_TO_QUEUE:
  AZURE: {"0": 0, "1": 1, "2": 2, "3": 3, "4": 4, "5": 5, "6": 6, "7": 7}
PFC_PRIORITY_TO_PRIORITY_GROUP_MAP:
  AZURE: {"3": 3, "4": 4}
TC_TO_DSCP_MAP:
  AZURE: {"0": 8}
PORT_QOS_MAP:
  global: {dscp_to_tc_map: "[DSCP_TO_TC_MAP|AZURE]"}
  "Ethernet0,Ethernet4":
    dscp_to_tc_map: AZURE
    tc_to_queue_map: "[TC_TO_QUEUE_MAP|AZURE]"
    tc_to_pg_map: AZURE
    pfc_to_queue_map: "[MAP_PFC_PRIORITY_TO_QUEUE|AZURE]"
    pfc_to_pg_map: AZURE
    pfc_enable: "3,4"
    pfcwd_sw_enable: "3"
    scheduler: scheduler.port
  Ethernet8: {dot1p_to_tc_map: "[DOT1P_TO_TC_MAP|AZURE]", tc_to_pg_map: "[TC_TO_PRIORITY_GROUP_MAP|AZURE]", pfc_enable: ""}
BORDER_RULE:
  "Ethernet0|20": {udp_dport: 4791, dscp: 26, set_dscp: 3}
  "Ethernet0|10": {dscp: 48, packet_action: drop}
  "Ethernet0|30": {set_queue: 1, packet_action: forward}
  "Ethernet4|5": {udp_dport: 4791}
SCHEDULER:
  scheduler.port: {meter_type: bytes, pir: "12500000000", pbs: "9216"}
BUFFER_POOL:
  ingress_lossless_pool: {type: ingress, mode: dynamic, size: "12766208"}
CABLE_LENGTH:
  AZURE: {Ethernet0: 5m}
"#;

fn full() -> Compiled {
    compile(&yaml(&FULL.replace("AZURE_DSCP", &azure_dscp_yaml()))).unwrap()
}

#[test]
fn full_config_switch_and_ports() {
    let Compiled { config, warnings } = full();
    assert_eq!(warnings, vec![]);
    assert_eq!(config.device_mac, mac("02:00:00:00:00:aa"));
    let switch = SwitchSettings {
        fdb_aging: Nanos::from_ns(300 * NS_PER_SEC),
        neigh_aging: Nanos::ZERO,
        lossy_fdb_miss_action: FdbMissAction::Drop,
        lossless_fdb_miss_action: FdbMissAction::Flood,
        ecmp_hash_seed: 12345,
    };
    assert_eq!(config.switch, switch);
    let port =
        |name: &str, speed_mbps, mtu, port_mac: &str, admin_up, alias: Option<&str>, netdev: Option<&str>| {
            PortConfig {
                name: name.into(),
                speed_mbps,
                mtu,
                mac: mac(port_mac),
                admin_up,
                alias: alias.map(Into::into),
                netdev: netdev.map(Into::into),
                first_lane: (name == "Ethernet0").then_some(0),
            }
        };
    let device = "02:00:00:00:00:aa";
    assert_eq!(
        config.ports,
        vec![
            port("Ethernet0", 100_000, 9100, device, true, Some("etp1"), Some("veth0")),
            port("Ethernet4", 100_000, 9100, "02:00:00:00:01:04", true, None, Some("veth1")),
            port("Ethernet8", 25_000, 1500, device, false, None, None),
            port("Ethernet12", 25_000, 9100, device, true, None, None),
        ]
    );
}

#[test]
fn full_config_l2_and_l3() {
    let config = full().config;
    let members = vec![
        VlanMember { port: PortId::new(2), tagged: false },
        VlanMember { port: PortId::new(3), tagged: true },
    ];
    let vlan = VlanConfig { name: "Vlan100".into(), vid: 100, members };
    assert_eq!(config.vlans, BTreeMap::from([(100, vlan)]));
    let rif = |name: &str, kind, rif_mac: &str, addrs: &[&str]| RouterInterface {
        name: name.into(),
        kind,
        mac: mac(rif_mac),
        addrs: addrs.iter().map(|a| net(a)).collect(),
    };
    assert_eq!(
        config.interfaces,
        vec![
            rif("Ethernet0", RifKind::Port(PortId::new(0)), "02:00:00:00:00:aa", &["10.0.0.0/31"]),
            rif(
                "Ethernet4",
                RifKind::Port(PortId::new(1)),
                "02:00:00:00:01:04",
                &["10.0.0.3/31", "fc00::1/126"]
            ),
            rif("Vlan100", RifKind::Vlan(100), "02:00:00:00:01:00", &["192.168.0.1/24"]),
        ]
    );
    // The host bits of an interface address are kept: it is the interface's own address.
    assert_eq!(config.interfaces[1].addrs[0].addr(), ip("10.0.0.3"));
    assert_eq!(
        config.neighbors,
        vec![
            StaticNeighbor { rif: RifId::new(1), ip: ip("fc00::2"), mac: mac("02:00:00:00:00:20") },
            StaticNeighbor { rif: RifId::new(2), ip: ip("192.168.0.10"), mac: mac("02:00:00:00:00:10") },
        ]
    );
    assert_eq!(
        config.routes,
        vec![
            StaticRoute { prefix: net("0.0.0.0/0"), nexthops: vec![], blackhole: true },
            StaticRoute {
                prefix: net("10.10.0.0/16"),
                nexthops: vec![
                    NextHop { ip: ip("10.0.0.1"), rif: RifId::new(0) },
                    NextHop { ip: ip("10.0.0.2"), rif: RifId::new(1) }
                ],
                blackhole: false,
            },
        ]
    );
    assert_eq!(config.fdb, vec![StaticFdb { vid: 100, mac: mac("02:00:00:00:00:10"), port: PortId::new(2) }]);
}

#[test]
fn full_config_qos() {
    let qos = full().config.qos;
    assert_eq!(qos.len(), 4);
    let identity = [0, 1, 2, 3, 4, 5, 6, 7];
    let azure_tc_to_pg = [0, 0, 0, 3, 4, 0, 0, 7];
    let rule = |seq, udp_dport, dscp, set_dscp, set_queue, drop| BorderRule {
        seq,
        udp_dport,
        dscp,
        set_dscp,
        set_queue,
        drop,
    };
    let uplink = PortQos {
        dscp_to_tc: Some(azure_dscp()),
        dot1p_to_tc: None,
        tc_to_queue: identity,
        tc_to_pg: azure_tc_to_pg,
        pfc_to_queue: identity,
        pfc_to_pg: identity,
        pfc_enable: 0b0001_1000,
        pfcwd_sw_enable: 0b0000_1000,
        border_rules: vec![
            rule(10, None, Some(48), None, None, true),
            rule(20, Some(4791), Some(26), Some(3), None, false),
            rule(30, None, None, None, Some(1), false),
        ],
    };
    assert_eq!(qos[0], uplink);
    let rules = vec![rule(5, Some(4791), None, None, None, false)];
    assert_eq!(qos[1], PortQos { border_rules: rules, ..uplink });
    // Ethernet8 has no dscp_to_tc_map of its own: the global one applies.
    let server = PortQos {
        dscp_to_tc: Some(azure_dscp()),
        dot1p_to_tc: Some([1, 0, 2, 3, 4, 5, 6, 7]),
        tc_to_pg: azure_tc_to_pg,
        ..PortQos::default()
    };
    assert_eq!(qos[2], server);
    assert_eq!(qos[3], PortQos { dscp_to_tc: Some(azure_dscp()), ..PortQos::default() });
}

#[test]
fn full_config_port_shaper() {
    let config = full().config;
    let shapers: Vec<Option<usize>> = config.port_buffers.iter().map(|b| b.port_scheduler).collect();
    assert_eq!(shapers, [Some(0), Some(0), None, None]);
    assert_eq!(config.schedulers[0].params.pir, Some(12_500_000_000));
    assert_eq!(config.pools.len(), 1);
}

#[test]
fn ports_are_in_natural_order() {
    let mut db = ConfigDb::default();
    for name in ["Ethernet100", "Ethernet4", "Ethernet12", "Ethernet0", "Ethernet04", "Ethernet"] {
        db.set("PORT", name, "speed", "10000");
    }
    let names: Vec<String> = compile(&db).unwrap().config.ports.into_iter().map(|p| p.name).collect();
    assert_eq!(names, ["Ethernet", "Ethernet0", "Ethernet04", "Ethernet4", "Ethernet12", "Ethernet100"]);
}

#[test]
fn unlisted_map_entries_take_the_default() {
    let mut db = base();
    db.set("TC_TO_QUEUE_MAP", "SHIFT", "0", "1");
    db.set("TC_TO_PRIORITY_GROUP_MAP", "ONE", "3", "3");
    db.set("PORT_QOS_MAP", "Ethernet4", "tc_to_queue_map", "SHIFT").set(
        "PORT_QOS_MAP",
        "Ethernet4",
        "tc_to_pg_map",
        "ONE",
    );
    let qos = &compile(&db).unwrap().config.qos[1];
    assert_eq!(qos.tc_to_queue, [1, 1, 2, 3, 4, 5, 6, 7]);
    assert_eq!(qos.tc_to_pg, [0, 0, 0, 3, 0, 0, 0, 0]);
    assert_eq!(qos.dscp_to_tc, None);
}

#[test]
fn parse_ref_accepts_both_syntaxes() {
    assert_eq!(parse_ref("DSCP_TO_TC_MAP", "AZURE"), Ok("AZURE"));
    assert_eq!(parse_ref("DSCP_TO_TC_MAP", "[DSCP_TO_TC_MAP|AZURE]"), Ok("AZURE"));
    assert!(parse_ref("DSCP_TO_TC_MAP", "[TC_TO_QUEUE_MAP|AZURE]").unwrap_err().contains("TC_TO_QUEUE_MAP"));
    assert!(parse_ref("DSCP_TO_TC_MAP", "[AZURE]").is_err());
    assert!(parse_ref("DSCP_TO_TC_MAP", "").is_err());
}

#[test]
fn parse_priority_list_makes_a_mask() {
    assert_eq!(parse_priority_list(""), Ok(0));
    assert_eq!(parse_priority_list("3,4"), Ok(0b0001_1000));
    assert_eq!(parse_priority_list("0,7,7"), Ok(0b1000_0001));
    for bad in ["8", "3,", "3, 4", "-1", "x"] {
        assert!(parse_priority_list(bad).is_err(), "{bad}");
    }
}

#[test]
fn parse_number_is_strict() {
    assert_eq!(parse_number("42", "a number", 0u32, 100), Ok(42));
    for bad in ["+42", " 42", "42 ", "4.2", "", "-1"] {
        assert_eq!(parse_number(bad, "a number", 0u32, 100), Err(format!("{bad:?} is not a number")));
    }
    assert_eq!(parse_number("101", "a number", 0u32, 100), Err("101 is outside 0..100".into()));
    assert!(parse_number("99999999999999999999999", "a number", 0u64, u64::MAX).is_err());
}

// Error rules, one test each, on a small valid base config.

const BASE: &str = r#"
PORT:
  Ethernet0: {speed: 100000}
  Ethernet4: {speed: 100000}
  Ethernet8: {speed: 25000}
  Ethernet12: {speed: 25000}
INTERFACE:
  "Ethernet0|10.0.0.0/31": {}
VLAN:
  Vlan100: {}
VLAN_MEMBER:
  "Vlan100|Ethernet8": {}
VLAN_INTERFACE:
  "Vlan100|192.168.0.1/24": {}
DSCP_TO_TC_MAP:
  AZURE: {"46": 5}
"#;

fn base() -> ConfigDb {
    yaml(BASE)
}

fn errors(db: &ConfigDb) -> Vec<ConfigIssue> {
    compile(db).expect_err("the config must be rejected").errors
}

/// Exactly one error, at `location`, quoting `value`, with `mentions` in its message.
fn assert_error(db: &ConfigDb, location: &str, value: &str, mentions: &str) {
    let errors = errors(db);
    assert_eq!(errors.len(), 1, "{errors:#?}");
    let error = &errors[0];
    assert_eq!(error.location(), location, "{error}");
    assert_eq!(error.value, value, "{error}");
    assert!(error.message.contains(mentions), "{error:?} does not mention {mentions:?}");
}

fn base_with(table: &str, key: &str, field: &str, value: &str) -> ConfigDb {
    let mut db = base();
    db.set(table, key, field, value);
    db
}

fn base_with_key(table: &str, key: &str) -> ConfigDb {
    let mut db = base();
    db.touch(table, key);
    db
}
