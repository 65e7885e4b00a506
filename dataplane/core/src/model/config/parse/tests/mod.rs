//! The compiler's tests: fixtures and the general rules here, the buffer tables in [`buffers`], the egress
//! and watchdog tables in [`scheduling`].

mod buffers;
mod scheduling;

use super::*;
use crate::model::config::AsicFamily;

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
        fdb_aging_ns: 300 * NS_PER_SEC,
        neigh_aging_ns: 0,
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
    let members = vec![VlanMember { port: 2, tagged: false }, VlanMember { port: 3, tagged: true }];
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
            rif("Ethernet0", RifKind::Port(0), "02:00:00:00:00:aa", &["10.0.0.0/31"]),
            rif("Ethernet4", RifKind::Port(1), "02:00:00:00:01:04", &["10.0.0.3/31", "fc00::1/126"]),
            rif("Vlan100", RifKind::Vlan(100), "02:00:00:00:01:00", &["192.168.0.1/24"]),
        ]
    );
    // The host bits of an interface address are kept: it is the interface's own address.
    assert_eq!(config.interfaces[1].addrs[0].addr(), ip("10.0.0.3"));
    assert_eq!(
        config.neighbors,
        vec![
            StaticNeighbor { rif: 1, ip: ip("fc00::2"), mac: mac("02:00:00:00:00:20") },
            StaticNeighbor { rif: 2, ip: ip("192.168.0.10"), mac: mac("02:00:00:00:00:10") },
        ]
    );
    assert_eq!(
        config.routes,
        vec![
            StaticRoute { prefix: net("0.0.0.0/0"), nexthops: vec![], blackhole: true },
            StaticRoute {
                prefix: net("10.10.0.0/16"),
                nexthops: vec![
                    NextHop { ip: ip("10.0.0.1"), rif: 0 },
                    NextHop { ip: ip("10.0.0.2"), rif: 1 }
                ],
                blackhole: false,
            },
        ]
    );
    assert_eq!(config.fdb, vec![StaticFdb { vid: 100, mac: mac("02:00:00:00:00:10"), port: 2 }]);
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

#[test]
fn base_config_compiles() {
    let Compiled { config, warnings } = compile(&base()).unwrap();
    assert_eq!(warnings, vec![]);
    assert_eq!(config.device_mac, DEFAULT_DEVICE_MAC);
    assert_eq!(config.switch, SwitchSettings::default());
    assert_eq!(config.interfaces[1].mac, DEFAULT_DEVICE_MAC);
    assert!(config.qos.iter().all(|q| *q == PortQos::default()));
}

#[test]
fn device_mac_must_be_a_unicast_mac() {
    for bad in ["01:00:5e:00:00:01", "02:00:00:00:00", "00:00:00:00:00:00"] {
        let db = base_with("DEVICE_METADATA", "localhost", "mac", bad);
        assert_error(&db, "DEVICE_METADATA|localhost|mac", bad, bad);
    }
}

#[test]
fn switch_settings_are_checked() {
    let cases = [
        ("fdb_aging_time", "1000001"),
        ("neigh_aging_time", "4h"),
        ("lossy_fdb_miss_action", "flod"),
        ("lossless_fdb_miss_action", "flooding"),
        ("ecmp_hash_seed", "4294967296"),
    ];
    for (field, bad) in cases {
        assert_error(&base_with("SWITCH", "switch", field, bad), &format!("SWITCH|switch|{field}"), bad, bad);
    }
}

#[test]
fn port_speed_must_be_a_number() {
    let errors = errors(&base_with("PORT", "Ethernet0", "speed", "fast"));
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].to_string(), r#"PORT|Ethernet0|speed: "fast" is not a number of Mb/s"#);
    assert_eq!(errors[0].value, "fast");
}

#[test]
fn port_speed_is_required_and_in_range() {
    let mut db = base();
    db.tables.get_mut("PORT").unwrap().get_mut("Ethernet4").unwrap().clear();
    assert_error(&db, "PORT|Ethernet4|speed", "", "speed is required");
    for bad in ["0", "1600001"] {
        assert_error(&base_with("PORT", "Ethernet4", "speed", bad), "PORT|Ethernet4|speed", bad, bad);
    }
}

#[test]
fn port_mtu_is_in_range() {
    for bad in ["67", "9217", "1500B"] {
        assert_error(&base_with("PORT", "Ethernet4", "mtu", bad), "PORT|Ethernet4|mtu", bad, bad);
    }
    for good in ["68", "9216"] {
        assert!(compile(&base_with("PORT", "Ethernet4", "mtu", good)).is_ok());
    }
}

#[test]
fn port_mac_must_be_unicast() {
    let bad = "03:00:00:00:00:01";
    assert_error(&base_with("PORT", "Ethernet4", "mac", bad), "PORT|Ethernet4|mac", bad, "multicast");
}

#[test]
fn port_admin_status_is_up_or_down() {
    let db = base_with("PORT", "Ethernet4", "admin_status", "enabled");
    assert_error(&db, "PORT|Ethernet4|admin_status", "enabled", "\"enabled\" is not one of up, down");
}

#[test]
fn port_name_must_not_be_empty() {
    assert_error(&base_with("PORT", "", "speed", "10000"), "PORT|", "", "not a port name");
}

#[test]
fn interface_port_must_exist() {
    let db = base_with_key("INTERFACE", "Ethernet99|10.1.0.0/31");
    assert_error(&db, "INTERFACE|Ethernet99|10.1.0.0/31", "Ethernet99", "Ethernet99");
}

#[test]
fn interface_address_needs_a_prefix_length() {
    let db = base_with_key("INTERFACE", "Ethernet4|10.1.0.0");
    assert_error(&db, "INTERFACE|Ethernet4|10.1.0.0", "10.1.0.0", "10.1.0.0");
}

#[test]
fn routed_port_is_no_vlan_member() {
    let db = base_with_key("INTERFACE", "Ethernet8|10.1.0.0/31");
    assert_error(&db, "INTERFACE|Ethernet8|10.1.0.0/31", "Ethernet8", "Vlan100");
}

#[test]
fn vlan_interface_needs_a_vlan() {
    let db = base_with_key("VLAN_INTERFACE", "Vlan200|192.168.1.1/24");
    assert_error(&db, "VLAN_INTERFACE|Vlan200|192.168.1.1/24", "Vlan200", "Vlan200");
}

#[test]
fn subnets_of_interfaces_do_not_overlap() {
    let db = base_with_key("INTERFACE", "Ethernet4|10.0.0.1/30");
    assert_error(
        &db,
        "INTERFACE|Ethernet4|10.0.0.1/30",
        "10.0.0.1/30",
        "overlaps subnet 10.0.0.0/31 of Ethernet0",
    );
    // Secondary subnets of one interface may overlap.
    assert!(compile(&base_with_key("INTERFACE", "Ethernet0|10.0.0.1/30")).is_ok());
}

#[test]
fn an_address_is_assigned_once() {
    let db = base_with_key("INTERFACE", "Ethernet0|10.0.0.0/32");
    assert_error(
        &db,
        "INTERFACE|Ethernet0|10.0.0.0/32",
        "10.0.0.0/32",
        "10.0.0.0 is already assigned to Ethernet0",
    );
    let db = base_with_key("VLAN_INTERFACE", "Vlan100|10.0.0.0/24");
    assert_error(&db, "VLAN_INTERFACE|Vlan100|10.0.0.0/24", "10.0.0.0/24", "already assigned to Ethernet0");
}

#[test]
fn vlan_names_are_vlan_and_an_id() {
    for bad in ["Vlan4095", "Vlan0", "vlan5", "Vlan010", "Vlan"] {
        assert_error(&base_with_key("VLAN", bad), &format!("VLAN|{bad}"), bad, bad);
    }
}

#[test]
fn vlanid_matches_the_name() {
    assert_error(&base_with("VLAN", "Vlan100", "vlanid", "101"), "VLAN|Vlan100|vlanid", "101", "101");
}

#[test]
fn vlan_mac_must_be_unicast() {
    let bad = "ff:ff:ff:ff:ff:ff";
    assert_error(&base_with("VLAN", "Vlan100", "mac", bad), "VLAN|Vlan100|mac", bad, bad);
}

#[test]
fn vlan_member_tagging_mode() {
    let db = base_with("VLAN_MEMBER", "Vlan100|Ethernet8", "tagging_mode", "trunk");
    assert_error(&db, "VLAN_MEMBER|Vlan100|Ethernet8|tagging_mode", "trunk", "trunk");
}

#[test]
fn vlan_member_needs_vlan_and_port() {
    let db = base_with_key("VLAN_MEMBER", "Vlan200|Ethernet12");
    assert_error(&db, "VLAN_MEMBER|Vlan200|Ethernet12", "Vlan200", "Vlan200");
    let db = base_with_key("VLAN_MEMBER", "Vlan100|Ethernet99");
    assert_error(&db, "VLAN_MEMBER|Vlan100|Ethernet99", "Ethernet99", "Ethernet99");
    let db = base_with_key("VLAN_MEMBER", "Ethernet12");
    assert_error(&db, "VLAN_MEMBER|Ethernet12", "Ethernet12", "Vlan<id>|<port>");
}

#[test]
fn port_is_untagged_in_one_vlan_only() {
    let mut db = base();
    db.touch("VLAN", "Vlan200").touch("VLAN_MEMBER", "Vlan200|Ethernet8");
    assert_error(&db, "VLAN_MEMBER|Vlan200|Ethernet8|tagging_mode", "", "untagged member of Vlan100");
    db.set("VLAN_MEMBER", "Vlan200|Ethernet8", "tagging_mode", "tagged");
    assert!(compile(&db).is_ok());
}

#[test]
fn neighbor_needs_a_unicast_mac() {
    let key = "Vlan100|192.168.0.10";
    assert_error(&base_with_key("NEIGH", key), "NEIGH|Vlan100|192.168.0.10|neigh", "", "neigh is required");
    let bad = "ff:ff:ff:ff:ff:ff";
    assert_error(&base_with("NEIGH", key, "neigh", bad), "NEIGH|Vlan100|192.168.0.10|neigh", bad, bad);
}

#[test]
fn neighbor_family_matches_the_address() {
    let mut db = base_with("NEIGH", "Vlan100|192.168.0.10", "neigh", "02:00:00:00:00:10");
    db.set("NEIGH", "Vlan100|192.168.0.10", "family", "IPv6");
    assert_error(&db, "NEIGH|Vlan100|192.168.0.10|family", "IPv6", "IPv6");
}

#[test]
fn neighbor_interface_is_a_router_interface() {
    let db = base_with("NEIGH", "Ethernet4|10.0.0.5", "neigh", "02:00:00:00:00:10");
    assert_error(&db, "NEIGH|Ethernet4|10.0.0.5", "Ethernet4", "Ethernet4");
}

#[test]
fn neighbor_is_on_a_subnet_of_its_interface() {
    let db = base_with("NEIGH", "Vlan100|192.168.1.10", "neigh", "02:00:00:00:00:10");
    assert_error(
        &db,
        "NEIGH|Vlan100|192.168.1.10",
        "192.168.1.10",
        "192.168.1.10 is on no subnet of Vlan100",
    );
}

#[test]
fn static_route_vrf_must_be_default() {
    let db = base_with("STATIC_ROUTE", "Vrf1|10.1.0.0/16", "nexthop", "10.0.0.1");
    assert_error(&db, "STATIC_ROUTE|Vrf1|10.1.0.0/16", "Vrf1", "Vrf1");
}

#[test]
fn static_route_prefix_must_parse() {
    let db = base_with("STATIC_ROUTE", "10.1.0.0", "nexthop", "10.0.0.1");
    assert_error(&db, "STATIC_ROUTE|10.1.0.0", "10.1.0.0", "10.1.0.0");
}

#[test]
fn static_route_host_bits_are_a_warning() {
    let Compiled { config, warnings } =
        compile(&base_with("STATIC_ROUTE", "10.1.0.1/16", "nexthop", "10.0.0.1")).unwrap();
    assert_eq!(config.routes[0].prefix, net("10.1.0.0/16"));
    assert_eq!(warnings.len(), 1);
    assert_eq!(warnings[0].location(), "STATIC_ROUTE|10.1.0.1/16");
    assert!(warnings[0].message.contains("host bits"));
}

#[test]
fn static_route_needs_next_hops_unless_blackhole() {
    let db = base_with("STATIC_ROUTE", "10.1.0.0/16", "blackhole", "false");
    assert_error(&db, "STATIC_ROUTE|10.1.0.0/16|nexthop", "", "nexthop is required");
    let db = base_with("STATIC_ROUTE", "10.1.0.0/16", "blackhole", "yes");
    assert_error(&db, "STATIC_ROUTE|10.1.0.0/16|blackhole", "yes", "yes");
}

#[test]
fn static_route_ifname_list_has_the_length_of_nexthop() {
    let mut db = base_with("STATIC_ROUTE", "10.1.0.0/16", "nexthop", "10.0.0.1,192.168.0.2");
    db.set("STATIC_ROUTE", "10.1.0.0/16", "ifname", "Ethernet0");
    assert_error(&db, "STATIC_ROUTE|10.1.0.0/16|ifname", "Ethernet0", "1 interfaces for 2 next hops");
}

#[test]
fn static_route_ifname_is_a_router_interface() {
    let mut db = base_with("STATIC_ROUTE", "10.1.0.0/16", "nexthop", "10.0.0.1");
    db.set("STATIC_ROUTE", "10.1.0.0/16", "ifname", "Ethernet4");
    assert_error(&db, "STATIC_ROUTE|10.1.0.0/16|ifname", "Ethernet4", "Ethernet4");
}

#[test]
fn static_route_next_hop_is_on_a_connected_subnet() {
    let db = base_with("STATIC_ROUTE", "10.1.0.0/16", "nexthop", "10.0.0.1,10.9.9.9");
    assert_error(
        &db,
        "STATIC_ROUTE|10.1.0.0/16|nexthop",
        "10.0.0.1,10.9.9.9",
        "next hop 10.9.9.9 is on no connected subnet",
    );
}

#[test]
fn static_route_next_hop_family_matches_the_prefix() {
    let db = base_with("STATIC_ROUTE", "fc00:1::/64", "nexthop", "10.0.0.1");
    assert_error(&db, "STATIC_ROUTE|fc00:1::/64|nexthop", "10.0.0.1", "10.0.0.1");
    let db = base_with("STATIC_ROUTE", "10.1.0.0/16", "nexthop", "10.0.0.one");
    assert_error(&db, "STATIC_ROUTE|10.1.0.0/16|nexthop", "10.0.0.one", "10.0.0.one");
}

#[test]
fn static_route_prefix_is_routed_once() {
    let mut db = base_with("STATIC_ROUTE", "10.1.0.0/16", "nexthop", "10.0.0.1");
    db.set("STATIC_ROUTE", "default|10.1.0.0/16", "blackhole", "true");
    assert_error(&db, "STATIC_ROUTE|default|10.1.0.0/16", "default|10.1.0.0/16", "10.1.0.0/16");
}

#[test]
fn fdb_port_is_a_member_of_the_vlan() {
    let key = "Vlan100|02:00:00:00:00:10";
    let location = "FDB|Vlan100|02:00:00:00:00:10|port";
    assert_error(&base_with("FDB", key, "port", "Ethernet12"), location, "Ethernet12", "Ethernet12");
    assert_error(&base_with("FDB", key, "port", "Ethernet99"), location, "Ethernet99", "Ethernet99");
    assert_error(&base_with_key("FDB", key), location, "", "port is required");
    let mut db = base_with("FDB", key, "port", "Ethernet8");
    db.set("FDB", key, "type", "sticky");
    assert_error(&db, "FDB|Vlan100|02:00:00:00:00:10|type", "sticky", "sticky");
}

#[test]
fn fdb_mac_is_unicast_and_vlan_exists() {
    let db = base_with("FDB", "Vlan100|01:00:00:00:00:01", "port", "Ethernet8");
    assert_error(&db, "FDB|Vlan100|01:00:00:00:00:01", "01:00:00:00:00:01", "multicast");
    let db = base_with("FDB", "Vlan200|02:00:00:00:00:01", "port", "Ethernet8");
    assert_error(&db, "FDB|Vlan200|02:00:00:00:00:01", "Vlan200", "Vlan200");
}

#[test]
fn map_keys_and_values_are_in_range() {
    assert_error(&base_with("DSCP_TO_TC_MAP", "AZURE", "64", "1"), "DSCP_TO_TC_MAP|AZURE|64", "1", "64");
    assert_error(&base_with("DSCP_TO_TC_MAP", "AZURE", "46", "8"), "DSCP_TO_TC_MAP|AZURE|46", "8", "8");
    assert_error(&base_with("DSCP_TO_TC_MAP", "AZURE", "ef", "5"), "DSCP_TO_TC_MAP|AZURE|ef", "5", "ef");
    let db = base_with("TC_TO_QUEUE_MAP", "AZURE", "8", "0");
    assert_error(&db, "TC_TO_QUEUE_MAP|AZURE|8", "0", "8");
    let db = base_with("PFC_PRIORITY_TO_PRIORITY_GROUP_MAP", "AZURE", "3", "three");
    assert_error(&db, "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP|AZURE|3", "three", "three");
}

#[test]
fn qos_reference_names_the_right_table() {
    let bad = "[DOT1P_TO_TC_MAP|AZURE]";
    let db = base_with("PORT_QOS_MAP", "Ethernet0", "dscp_to_tc_map", bad);
    assert_error(&db, "PORT_QOS_MAP|Ethernet0|dscp_to_tc_map", bad, "DOT1P_TO_TC_MAP");
}

#[test]
fn qos_reference_names_an_existing_map() {
    let db = base_with("PORT_QOS_MAP", "Ethernet0", "dscp_to_tc_map", "AZURE_LOSSY");
    assert_error(&db, "PORT_QOS_MAP|Ethernet0|dscp_to_tc_map", "AZURE_LOSSY", "AZURE_LOSSY");
    // AZURE exists, but in DSCP_TO_TC_MAP only.
    let db = base_with("PORT_QOS_MAP", "Ethernet0", "tc_to_queue_map", "AZURE");
    assert_error(&db, "PORT_QOS_MAP|Ethernet0|tc_to_queue_map", "AZURE", "TC_TO_QUEUE_MAP");
}

#[test]
fn qos_ports_exist_and_have_one_entry() {
    let db = base_with("PORT_QOS_MAP", "Ethernet0,Ethernet99", "pfc_enable", "3,4");
    assert_error(&db, "PORT_QOS_MAP|Ethernet0,Ethernet99", "Ethernet99", "Ethernet99");
    let mut db = base_with("PORT_QOS_MAP", "Ethernet0", "pfc_enable", "3,4");
    db.set("PORT_QOS_MAP", "Ethernet0,Ethernet4", "pfc_enable", "3");
    assert_error(&db, "PORT_QOS_MAP|Ethernet0,Ethernet4", "Ethernet0", "PORT_QOS_MAP|Ethernet0");
}

#[test]
fn pfc_enable_is_a_list_of_priorities() {
    for (field, bad) in [("pfc_enable", "3,8"), ("pfc_enable", "3;4"), ("pfcwd_sw_enable", "x")] {
        let db = base_with("PORT_QOS_MAP", "Ethernet0", field, bad);
        assert_error(&db, &format!("PORT_QOS_MAP|Ethernet0|{field}"), bad, bad);
    }
}

#[test]
fn global_qos_has_only_the_dscp_map() {
    let db = base_with("PORT_QOS_MAP", "global", "pfc_enable", "3,4");
    assert_error(&db, "PORT_QOS_MAP|global|pfc_enable", "3,4", "pfc_enable");
}

#[test]
fn border_rule_fields_are_checked() {
    let cases = [
        ("udp_dport", "70000"),
        ("dscp", "64"),
        ("set_dscp", "64"),
        ("set_queue", "8"),
        ("packet_action", "reject"),
    ];
    for (field, bad) in cases {
        let db = base_with("BORDER_RULE", "Ethernet0|10", field, bad);
        assert_error(&db, &format!("BORDER_RULE|Ethernet0|10|{field}"), bad, bad);
    }
}

#[test]
fn border_rule_key_is_a_port_and_a_seq() {
    let db = base_with("BORDER_RULE", "Ethernet0|first", "dscp", "3");
    assert_error(&db, "BORDER_RULE|Ethernet0|first", "first", "first");
    let db = base_with("BORDER_RULE", "Ethernet99|1", "dscp", "3");
    assert_error(&db, "BORDER_RULE|Ethernet99|1", "Ethernet99", "Ethernet99");
    let mut db = base_with("BORDER_RULE", "Ethernet0|1", "dscp", "3");
    db.set("BORDER_RULE", "Ethernet0|01", "dscp", "4");
    assert_error(&db, "BORDER_RULE|Ethernet0|1", "Ethernet0|1", "BORDER_RULE|Ethernet0|01");
}

#[test]
fn deferred_tables_raise_no_issue() {
    let mut db = base();
    for table in DEFERRED_TABLES {
        db.set(table, "AZURE", "anything", "at all");
    }
    let compiled = compile(&db).unwrap();
    assert_eq!(compiled.warnings, vec![]);
}

#[test]
fn sonic_tables_not_modelled_are_warnings() {
    let mut db = base_with("FLEX_COUNTER_TABLE", "QUEUE", "FLEX_COUNTER_STATUS", "enable");
    db.set("FLEX_COUNTER_TABLE", "PG_WATERMARK", "FLEX_COUNTER_STATUS", "enable");
    db.set("BGP_NEIGHBOR", "10.0.0.1", "asn", "65200");
    let warnings = compile(&db).unwrap().warnings;
    let found: Vec<(String, &str)> = warnings.iter().map(|w| (w.location(), w.message.as_str())).collect();
    let message = "SONiC table not modelled by Lossless: accepted, ignored";
    assert_eq!(found, [("BGP_NEIGHBOR|".to_string(), message), ("FLEX_COUNTER_TABLE|".to_string(), message)]);
}

#[test]
fn unknown_tables_are_errors_with_a_suggestion() {
    let db = base_with("BUFER_QUEUE", "Ethernet0|3-4", "profile", "egress_lossless_profile");
    assert_error(&db, "BUFER_QUEUE|", "", "did you mean BUFFER_QUEUE?");
    let db = base_with("buffer_pool", "p", "size", "1");
    assert_error(&db, "buffer_pool|", "", "did you mean BUFFER_POOL?");
    let db = base_with("MY_OWN_TABLE", "x", "y", "z");
    assert_error(&db, "MY_OWN_TABLE|", "", "MY_OWN_TABLE is no SONiC table");
}

#[test]
fn unknown_fields_are_errors_with_a_suggestion_and_no_cascade() {
    let db = base_with("PORT", "Ethernet0", "colour", "blue");
    assert_error(&db, "PORT|Ethernet0|colour", "blue", "unknown field colour (fields of PORT: speed");
    // A misspelled required field: one error, no "speed is required" after it.
    let mut db = base();
    let fields = db.tables.get_mut("PORT").unwrap().get_mut("Ethernet0").unwrap();
    let speed = fields.remove("speed").unwrap();
    fields.insert("sped".into(), speed.clone());
    assert_error(&db, "PORT|Ethernet0|sped", &speed, "unknown field sped; did you mean speed?");
    // SONiC's own fields the model does not use are accepted.
    let db = base_with("PORT", "Ethernet0", "link_training", "off");
    assert!(compile(&db).unwrap().warnings.is_empty());
}

#[test]
fn every_error_is_reported() {
    let mut db = base_with("PORT", "Ethernet0", "speed", "fast");
    db.touch("VLAN_MEMBER", "Vlan100|Ethernet99");
    db.set("DSCP_TO_TC_MAP", "AZURE", "64", "1");
    let errors = compile(&db).unwrap_err().errors;
    let locations: Vec<String> = errors.iter().map(ConfigIssue::location).collect();
    assert_eq!(
        locations,
        ["PORT|Ethernet0|speed", "VLAN_MEMBER|Vlan100|Ethernet99", "DSCP_TO_TC_MAP|AZURE|64"]
    );
}
