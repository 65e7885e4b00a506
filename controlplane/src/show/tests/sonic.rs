//! The tables added for SONiC's remaining show commands (dropstat, portstat `-e`/`-R`/`-l`, nbrshow,
//! fdbshow, `show vlan brief`, FRR's `show ip route`, `show pfc priority|asymmetric`): snapshots, and
//! character-for-character checks against the expected outputs in sonic-utilities' unit tests
//! (`tests/drops_group_test.py`, `tests/portstat_test.py`, `tests/fdbshow_test.py`, `tests/vlan_test.py`,
//! `tests/pfc_input/assert_show_output.py`, `tests/show_ip_route_common.py`), from the same values.

use super::*;
use lossless_dataplane::model::config::compile;
use lossless_proto::v1::{FdbEntry, NeighborEntry};

fn t0() -> ConfigDb {
    ConfigDb::from_yaml_str(crate::embedded::T0).unwrap()
}

// ---- dropstat ------------------------------------------------------------------------------------

#[test]
fn dropcounters_show_every_reason_counted() {
    let table = dropcounters_counts(&counters());
    // FDB_MISS_LOSSLESS, counted on Ethernet0, has a column of its own, so those drops are
    // not hidden in another reason's count.
    assert!(table.lines().next().unwrap().contains("FDB_MISS_LOSSLESS"), "{table}");
    insta::assert_snapshot!(table);
    insta::assert_snapshot!("dropcounters_counts_json", pretty(&dropcounters_counts_json(&counters())));
}

#[test]
fn sonic_dropstat() {
    // tests/drops_group_test.py `expected_counts`: the port table. Its counters DEBUG_0 and DEBUG_2 stand
    // for two drop reasons; the STATE of the mock's Ethernet4 and Ethernet8 is N/A (no APPL_DB entry),
    // which a live port never is, so those two rows show their real state here (U) — the widths are the
    // same, so every other character matches.
    let mut c = sonic_mock_ports();
    let values = [
        ("Ethernet0", [10, 100, 0, 0, 80, 20]),
        ("Ethernet4", [0, 1000, 0, 0, 800, 100]),
        ("Ethernet8", [100, 10, 0, 0, 10, 0]),
    ];
    for (p, (name, v)) in c.ports.iter_mut().zip(values) {
        assert_eq!(p.name, name);
        (p.admin_up, p.oper_up) = (true, name != "Ethernet0");
        (p.rx_err, p.rx_drp, p.tx_err, p.tx_drp) = (v[0], v[1], v[2], v[3]);
        p.drop_reasons = [("DEBUG_0".to_owned(), v[4]), ("DEBUG_2".to_owned(), v[5])].into();
    }
    let expected = verbatim(
        "
    IFACE    STATE    RX_ERR    RX_DROPS    TX_ERR    TX_DROPS    DEBUG_0    DEBUG_2
---------  -------  --------  ----------  --------  ----------  ---------  ---------
Ethernet0        D        10         100         0           0         80         20
Ethernet4        U         0        1000         0           0        800        100
Ethernet8        U       100          10         0           0         10          0

",
    );
    assert_eq!(dropcounters_counts(&c), expected);
}

// ---- portstat -e / -R / -l ----------------------------------------------------------------------------

#[test]
fn interfaces_counters_errors_table() {
    insta::assert_snapshot!(interfaces_counters_errors(&counters()));
    let json = interfaces_counters_errors_json(&counters());
    assert_eq!(json["Ethernet0"]["RX_ERR"], 10);
    assert_eq!(json["Ethernet0"]["TX_DRP"], 12_345);
    assert_eq!(json["Ethernet4"]["RX_OVR"], 3);
}

#[test]
fn interfaces_counters_rates_table() {
    insta::assert_snapshot!(interfaces_counters_rates(&counters(), Some(&one_second_earlier())));
    // Without an earlier sample every rate is N/A, the totals are there.
    let alone = interfaces_counters_rates(&counters(), None);
    assert!(alone.contains("8,000,123") && alone.contains("N/A"), "{alone}");
}

#[test]
fn sonic_portstat_rates() {
    // tests/portstat_test.py `intf_rates`, its Ethernet0 row: 8 and 10 packets in all; in one second
    // 2000 MB and 247,000 packets in, 1500 MB and 183,000 out, on a 25G port (64% and 48%).
    let mut now = sonic_mock_ports();
    now.ports.truncate(1);
    let p = &mut now.ports[0];
    (p.admin_up, p.oper_up, p.speed_mbps) = (true, false, 25_000);
    (p.rx_ok, p.tx_ok, p.rx_bytes, p.tx_bytes) = (8, 10, 2_000_000_000, 1_500_000_000);
    now.timestamp_ns = 2 * SECOND_NS;
    let mut before = now.clone();
    before.timestamp_ns = SECOND_NS;
    let q = &mut before.ports[0];
    (q.rx_ok, q.tx_ok, q.rx_bytes, q.tx_bytes) = (0, 0, 0, 0);
    // The packet rate needs as many packets: scale the totals the way SONiC's RATES table would see them.
    now.ports[0].rx_ok = 247_000;
    now.ports[0].tx_ok = 183_000;
    let expected_rates = "  2000.00 MB/s  247000.00/s     64.00%";
    let table = interfaces_counters_rates(&now, Some(&before));
    let header = "    IFACE    STATE    RX_OK        RX_BPS       RX_PPS    RX_UTIL    TX_OK        TX_BPS       TX_PPS    TX_UTIL";
    let rule = "---------  -------  -------  ------------  -----------  ---------  -------  ------------  -----------  ---------";
    let mut lines = table.lines();
    assert_eq!(lines.next(), Some(header));
    assert_eq!(lines.next(), Some(rule));
    let row = lines.next().unwrap();
    assert!(row.starts_with("Ethernet0        D  247,000") && row.contains(expected_rates), "{row}");
    assert!(row.ends_with("1500.00 MB/s  183000.00/s     48.00%"), "{row}");
}

#[test]
fn interfaces_counters_detailed_lists_what_the_model_keeps() {
    let c = counters();
    let text = interfaces_counters_detailed(&c, "Ethernet0", None).unwrap();
    insta::assert_snapshot!(text);
    // portstat's dotted layout: the value starts in column 48, as in tests/portstat_test.py.
    assert!(text.contains("Total Packets Received Without Errors.......... 8,000,123\n"), "{text}");
    assert!(text.contains("Packets Received 64 Octets..................... N/A\n"), "{text}");
    assert!(text.ends_with("Time Since Counters Last Cleared............... None\n"), "{text}");
    assert!(interfaces_counters_detailed(&c, "Ethernet99", None).is_none());
    let json = interfaces_counters_detailed_json(&c, "Ethernet0").unwrap();
    assert_eq!(json["Overruns Received"], 0);
    assert!(json["Jabbers Received"].is_null());
}

// ---- nbrshow / fdbshow / vlan brief / ip route -------------------------------------------------------

fn fdb() -> Vec<FdbEntry> {
    vec![
        FdbEntry { vlan: 3, mac: "11:22:33:66:55:44".into(), port: "Ethernet4".into(), is_static: true },
        FdbEntry { vlan: 2, mac: "11:22:33:44:55:66".into(), port: "Ethernet0".into(), is_static: false },
    ]
}

#[test]
fn sonic_fdbshow() {
    // tests/fdbshow_test.py `show_mac_output_with_def_vlan`.
    let expected = verbatim(
        "
  No.    Vlan  MacAddress         Port       Type
-----  ------  -----------------  ---------  -------
    1       2  11:22:33:44:55:66  Ethernet0  Dynamic
    2       3  11:22:33:66:55:44  Ethernet4  Static
Total number of entries 2
",
    );
    assert_eq!(mac(&fdb()), expected);
    // fdbshow's filters: `-t static` keeps the one static entry, `-a` ignores case.
    let only_static = filter_fdb(&fdb(), &MacQuery { is_static: Some(true), ..Default::default() });
    assert_eq!(only_static.len(), 1);
    assert_eq!(only_static[0].port, "Ethernet4");
    let by_mac =
        MacQuery { address: Some("11:22:33:44:55:66".to_uppercase()), vlan: Some(2), ..Default::default() };
    assert_eq!(filter_fdb(&fdb(), &by_mac).len(), 1);
    assert!(
        filter_fdb(&fdb(), &MacQuery { port: Some("Ethernet8".into()), ..Default::default() }).is_empty()
    );
    insta::assert_snapshot!("mac_json", pretty(&mac_json(&fdb())));
}

#[test]
fn arp_resolves_vlan_neighbours_to_their_member_port() {
    let neighbors = vec![
        NeighborEntry {
            ip: "192.168.0.10".into(),
            mac: "02:aa:00:00:00:10".into(),
            interface: "Vlan1000".into(),
            is_static: false,
        },
        NeighborEntry {
            ip: "10.0.0.3".into(),
            mac: "02:aa:00:00:00:03".into(),
            interface: "Ethernet4".into(),
            is_static: true,
        },
        NeighborEntry {
            ip: "192.168.0.9".into(),
            mac: "02:aa:00:00:00:09".into(),
            interface: "Vlan1000".into(),
            is_static: false,
        },
        // IPv6 neighbours are `show ndp`'s, not `show arp`'s.
        NeighborEntry {
            ip: "fc00::1".into(),
            mac: "02:aa:00:00:00:01".into(),
            interface: "Ethernet0".into(),
            is_static: true,
        },
    ];
    let fdb = vec![FdbEntry {
        vlan: 1000,
        mac: "02:AA:00:00:00:10".into(),
        port: "Ethernet8".into(),
        is_static: false,
    }];
    let table = arp(&neighbors, &fdb);
    insta::assert_snapshot!(table);
    assert!(table.ends_with("Total number of entries 3 \n"), "nbrshow's trailing space: {table:?}");
    // natsorted by address: 10.0.0.3, 192.168.0.9, 192.168.0.10.
    assert_eq!(arp_json(&neighbors, &fdb)[2]["Iface"], "Ethernet8");
    assert_eq!(arp_json(&neighbors, &fdb)[1]["Iface"], "-", "no FDB entry for that MAC");
    // `show arp 192.168.0.9`, `show arp -if Vlan1000`.
    let one = filter_neighbors(&neighbors, Some("192.168.0.9"), None);
    assert!(arp(&one, &fdb).ends_with("Total number of entries 1 \n"));
    let vlan: Vec<String> =
        filter_neighbors(&neighbors, None, Some("Vlan1000")).into_iter().map(|n| n.ip).collect();
    assert_eq!(vlan, ["192.168.0.10", "192.168.0.9"]);
    assert!(filter_neighbors(&neighbors, Some("192.168.0.9"), Some("Ethernet4")).is_empty());
    // `show ndp`: the IPv6 one, with nbrshow's Status column (a static NEIGH entry is PERMANENT).
    let expected = "Address    MacAddress         Iface      Vlan    Status\n---------  -----------------  ---------  ------  ---------\nfc00::1    02:aa:00:00:00:01  Ethernet0  -       PERMANENT\nTotal number of entries 1 \n";
    assert_eq!(ndp(&neighbors, &fdb), expected);
    assert_eq!(ndp_json(&neighbors, &fdb)[0]["Status"], "PERMANENT");
}

#[test]
fn sonic_vlan_brief() {
    // tests/vlan_test.py `show_vlan_brief_output`, from its mock CONFIG_DB's VLAN tables.
    let mut db = ConfigDb::default();
    for (vlan, vid) in
        [("Vlan1000", "1000"), ("Vlan2000", "2000"), ("Vlan3000", "3000"), ("Vlan4000", "4000")]
    {
        db.set("VLAN", vlan, "vlanid", vid);
    }
    for port in ["Ethernet4", "Ethernet8", "Ethernet12", "Ethernet16"] {
        db.set("VLAN_MEMBER", &format!("Vlan1000|{port}"), "tagging_mode", "untagged");
    }
    for port in ["Ethernet24", "Ethernet28"] {
        db.set("VLAN_MEMBER", &format!("Vlan2000|{port}"), "tagging_mode", "untagged");
    }
    db.set("VLAN_MEMBER", "Vlan4000|PortChannel1001", "tagging_mode", "tagged");
    db.set("VLAN_INTERFACE", "Vlan1000", "static_anycast_gateway", "true");
    db.set("VLAN_INTERFACE", "Vlan2000", "proxy_arp", "enabled");
    for key in [
        "Vlan1000|192.168.0.1/21",
        "Vlan1000|fc02:1000::1/64",
        "Vlan2000|192.168.0.10/21",
        "Vlan2000|fc02:1011::1/64",
    ] {
        db.touch("VLAN_INTERFACE", key);
    }
    let expected = verbatim(
        "
+-----------+-----------------+-----------------+----------------+-------------+--------------------------+
|   VLAN ID | IP Address      | Ports           | Port Tagging   | Proxy ARP   | Static Anycast Gateway   |
+===========+=================+=================+================+=============+==========================+
|      1000 | 192.168.0.1/21  | Ethernet4       | untagged       | disabled    | enabled                  |
|           | fc02:1000::1/64 | Ethernet8       | untagged       |             |                          |
|           |                 | Ethernet12      | untagged       |             |                          |
|           |                 | Ethernet16      | untagged       |             |                          |
+-----------+-----------------+-----------------+----------------+-------------+--------------------------+
|      2000 | 192.168.0.10/21 | Ethernet24      | untagged       | enabled     | disabled                 |
|           | fc02:1011::1/64 | Ethernet28      | untagged       |             |                          |
+-----------+-----------------+-----------------+----------------+-------------+--------------------------+
|      3000 |                 |                 |                | disabled    | disabled                 |
+-----------+-----------------+-----------------+----------------+-------------+--------------------------+
|      4000 |                 | PortChannel1001 | tagged         | disabled    | disabled                 |
+-----------+-----------------+-----------------+----------------+-------------+--------------------------+
",
    );
    assert_eq!(vlan_brief(&db), expected);
}

#[test]
fn vlan_brief_of_t0() {
    insta::assert_snapshot!(vlan_brief(&t0()));
    insta::assert_snapshot!("vlan_brief_json", pretty(&vlan_brief_json(&t0())));
}

#[test]
fn ip_route_of_t0() {
    let config = compile(&t0()).unwrap().config;
    let v4 = ip_route(&config, false);
    // FRR's lines (tests/show_ip_route_common.py): a connected subnet, and an ECMP static route whose
    // second next hop sits under the first `via`.
    assert!(v4.contains("C>*10.0.0.0/31 is directly connected, Ethernet0\n"), "{v4}");
    assert!(
        v4.contains(
            "S>*172.16.0.0/16 [1/0] via 10.0.0.1, Ethernet0\n  *                    via 10.0.0.3, Ethernet4\n"
        ),
        "{v4}"
    );
    insta::assert_snapshot!(v4);
    insta::assert_snapshot!("ipv6_route_of_t0", ip_route(&config, true));
    let json = ip_route_json(&config, false);
    assert_eq!(json["172.16.0.0/16"][0]["protocol"], "static");
    assert_eq!(json["172.16.0.0/16"][0]["nexthops"][1]["interfaceName"], "Ethernet4");
    assert_eq!(json["192.168.0.0/24"][0]["nexthops"][0]["directlyConnected"], true);
}

#[test]
fn sonic_pfc_priority_and_asymmetric() {
    // tests/pfc_input/assert_show_output.py: `pfc_show_priority_all` (two ports) and
    // `pfc_asym_cannot_find_intf`.
    let mut db = ConfigDb::default();
    db.set("PORT_QOS_MAP", "Ethernet0,Ethernet4", "pfc_enable", "3,4");
    db.set("PORT", "Ethernet0", "pfc_asym", "off");
    let expected = "\nInterface    Lossless priorities\n-----------  ---------------------\nEthernet0    3,4\nEthernet4    3,4\n\n";
    assert_eq!(pfc_priority(&db, None), expected);
    assert_eq!(pfc_priority(&db, Some("Ethernet1234")), "Cannot find interface Ethernet1234\n");
    assert_eq!(
        pfc_asymmetric(&db, Some("Ethernet1234")),
        "\nInterface    Asymmetric\n-----------  ------------\n\n"
    );
    assert_eq!(
        pfc_asymmetric(&db, None),
        "\nInterface    Asymmetric\n-----------  ------------\nEthernet0    off\n\n"
    );
    assert_eq!(pfc_priority_json(&db, Some("Ethernet4")), serde_json::json!({"Ethernet4": "3,4"}));
}

// ---- watermarks: the persistent copy reads the same tables -------------------------------------------

#[test]
fn every_watermark_command_has_its_own_json() {
    // watermarkstat prints one table per command, also with --json (not every table at once).
    let w = watermarks();
    assert!(pg_watermark_json(&w, PgWatermarkKind::Headroom).is_array());
    assert_eq!(queue_watermark_unicast_json(&w)[1]["UC0"], 1_234_567, "Ethernet4, natsorted second");
    assert_eq!(headroom_pool_watermark_json(&w), serde_json::json!([{"ingress_lossless_pool": 432_640}]));
}

#[test]
fn queue_watermark_all_and_multicast() {
    // watermarkstat's q_shared_all: every queue under `ALL<i>` headers. The model's queues are all unicast,
    // so the rows are the unicast table's (the columns one wider: tabulate pads a header by two).
    let w = watermarks();
    let all = queue_watermark(&w, QueueWatermarkKind::All);
    assert!(all.starts_with("Egress shared pool occupancy per all queues:\n"), "{all}");
    let words = |t: &str| -> Vec<Vec<String>> {
        t.lines().skip(1).map(|l| l.split_whitespace().map(str::to_owned).collect()).collect()
    };
    let (all_rows, unicast_rows) = (words(&all), words(&queue_watermark(&w, QueueWatermarkKind::Unicast)));
    assert_eq!(all_rows[0][1..], ["ALL0", "ALL1", "ALL2", "ALL3", "ALL4", "ALL5", "ALL6", "ALL7"]);
    assert_eq!(all_rows[2..], unicast_rows[2..]);
    insta::assert_snapshot!(all);
    assert_eq!(queue_watermark_json(&w, QueueWatermarkKind::All)[1]["ALL0"], 1_234_567);
    // q_shared_multi on a switch without multicast queues: watermarkstat's message, exit 0.
    assert_eq!(
        queue_watermark(&w, QueueWatermarkKind::Multicast),
        "Object map from the COUNTERS_DB is empty because the multicast queues are not configured in the CONFIG_DB!\n"
    );
    assert_eq!(queue_watermark_json(&w, QueueWatermarkKind::Multicast), serde_json::json!([]));
}

// ---- mmuconfig -l / buffershow -l ---------------------------------------------------------------------

#[test]
fn sonic_mmuconfig() {
    // tests/buffer_input/buffer_test_vectors.py `show_buffer_configuration`: its lossless traffic
    // pattern, first pool and first profile.
    let mut db = ConfigDb::default();
    db.set("DEFAULT_LOSSLESS_BUFFER_PARAMETER", "AZURE", "default_dynamic_th", "0")
        .set("DEFAULT_LOSSLESS_BUFFER_PARAMETER", "AZURE", "over_subscribe_ratio", "2")
        .set("BUFFER_POOL", "egress_lossless_pool", "mode", "dynamic")
        .set("BUFFER_POOL", "egress_lossless_pool", "size", "13945824")
        .set("BUFFER_POOL", "egress_lossless_pool", "type", "egress")
        .set("BUFFER_PROFILE", "ingress_lossy_profile", "dynamic_th", "3")
        .set("BUFFER_PROFILE", "ingress_lossy_profile", "pool", "ingress_lossy_pool")
        .set("BUFFER_PROFILE", "ingress_lossy_profile", "size", "0");
    let expected = "\
Lossless traffic pattern:
--------------------  -
default_dynamic_th    0
over_subscribe_ratio  2
--------------------  -

Pool: egress_lossless_pool
----  --------
mode  dynamic
size  13945824
type  egress
----  --------

Profile: ingress_lossy_profile
----------  ------------------
dynamic_th  3
pool        ingress_lossy_pool
size        0
----------  ------------------

";
    assert_eq!(buffer_configuration(&db), expected);
}

#[test]
fn buffer_information_of_a_buffered_switch() {
    // The three-port switch of the switchd congestion tests: two pools, lossless and lossy profiles.
    let text = include_str!("../../../../dataplane/tests/configs/switchd_congestion.yaml");
    let config = compile(&ConfigDb::from_yaml_str(text).unwrap()).unwrap().config;
    let text = buffer_information(&config);
    // The lossless PG profile carries its headroom (xon, xoff) before its size, as buffershow prints it.
    assert!(text.contains("Profile: "), "{text}");
    insta::assert_snapshot!(text);
    insta::assert_snapshot!("buffer_information_json", pretty(&buffer_information_json(&config)));
}

// ---- intfutil status ----------------------------------------------------------------------------------

#[test]
fn sonic_interfaces_status() {
    // tests/intfutil_test.py `show_interface_status_Ethernet32_output`, from its mock's Ethernet32 (lanes
    // 13-16, 40G, MTU 9100, FEC rs, alias etp9, up/up, no transceiver, pfc_asym off). That port is a
    // PortChannel1001 member there, which the model has no LAGs for; here it is a VLAN member, which intfutil
    // prints as `trunk`: only the Vlan column differs, narrowed by tabulate to its header plus two.
    let mut db = ConfigDb::default();
    for (field, value) in [("lanes", "13,14,15,16"), ("alias", "etp9"), ("fec", "rs"), ("mtu", "9100")] {
        db.set("PORT", "Ethernet32", field, value);
    }
    db.set("PORT", "Ethernet32", "pfc_asym", "off");
    db.set("VLAN_MEMBER", "Vlan1000|Ethernet32", "tagging_mode", "untagged");
    let c = GetCountersResponse {
        ports: vec![
            PortCounters {
                name: "Ethernet32".into(),
                admin_up: true,
                oper_up: true,
                speed_mbps: 40_000,
                ..Default::default()
            },
            PortCounters { name: "Ethernet36".into(), admin_up: true, ..Default::default() },
        ],
        ..Default::default()
    };
    let expected = verbatim(
        "
  Interface        Lanes    Speed    MTU    FEC    Alias    Vlan    Oper    Admin    Type    Asym PFC
-----------  -----------  -------  -----  -----  -------  ------  ------  -------  ------  ----------
 Ethernet32  13,14,15,16      40G   9100     rs     etp9   trunk      up       up     N/A         off
",
    );
    assert_eq!(interfaces_status(&c, &db, &["Ethernet32".to_owned()]), expected);
}

#[test]
fn interfaces_status_of_t0() {
    let c = GetCountersResponse {
        ports: ["Ethernet0", "Ethernet4", "Ethernet8", "Ethernet12", "Ethernet16"]
            .iter()
            .zip([100_000, 100_000, 25_000, 25_000, 25_000])
            .map(|(name, speed_mbps)| PortCounters {
                name: (*name).into(),
                admin_up: true,
                oper_up: *name != "Ethernet16",
                speed_mbps,
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    let table = interfaces_status(&c, &t0(), &[]);
    insta::assert_snapshot!(table);
    insta::assert_snapshot!("interfaces_status_json", pretty(&interfaces_status_json(&c, &t0(), &[])));
}
