//! The error rules, one test each, on the small valid [`BASE`] config.

use super::*;

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

#[test]
fn names_and_values_with_control_or_bidi_characters_are_refused_escaped() {
    // A port named "Ethernet0\u{202e}4" would print reversed: "Ethernet04" or worse, in every table.
    let mut db = base();
    db.touch("PORT", "Ethernet4\u{202e}8");
    db.set("PORT", "Ethernet0", "description", "up\u{0}link");
    let errors = compile(&db).unwrap_err().errors;
    let locations: Vec<String> = errors.iter().map(|e| e.location()).collect();
    assert!(locations.contains(&"PORT|Ethernet4\\u{202e}8".to_owned()), "{locations:?}");
    let nul = errors.iter().find(|e| e.field == "description").expect("the NUL in a value is refused");
    assert_eq!(nul.value, "up\\u{0}link");
    for e in &errors {
        assert!(!e.to_string().contains('\u{202e}') && !e.to_string().contains('\0'), "printed raw: {e}");
    }
}
