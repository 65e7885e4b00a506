//! Snapshots of every table from one hand-built switch state, and a few tables checked character for
//! character against the expected outputs in sonic-utilities' unit tests (`tests/pfcwd_input/
//! pfcwd_test_vectors.py`, `tests/pfcstat_test.py`, `tests/pgdropstat_test.py`, `tests/wm_input/
//! wm_test_vectors.py`), built from the same counter values those tests mock.

use super::*;
use lossless_dataplane::model::config::ConfigDb;
use lossless_proto::v1::{
    FrameLedger, GetCountersResponse, GetWatermarksResponse, PfcCounters, PfcWdCounters, PgCounters,
    PoolWatermarks, PortCounters, PortWatermarks, QueueCounters,
};

mod sonic;

const SECOND_NS: u64 = 1_000_000_000;

fn wd(status: &str, pairs: [(u64, u64); 5]) -> PfcWdCounters {
    PfcWdCounters {
        status: status.into(),
        deadlock_detected: pairs[0].0,
        deadlock_restored: pairs[0].1,
        tx_packets: pairs[1].0,
        tx_dropped_packets: pairs[1].1,
        rx_packets: pairs[2].0,
        rx_dropped_packets: pairs[2].1,
        tx_packets_last: pairs[3].0,
        tx_dropped_packets_last: pairs[3].1,
        rx_packets_last: pairs[4].0,
        rx_dropped_packets_last: pairs[4].1,
    }
}

/// A port with queue, PG and PFC counters derived from `k` so that every number differs, and no watchdog.
fn port(name: &str, k: u64, admin_up: bool, speed_mbps: u32) -> PortCounters {
    let queue_base = [250_000, 60, 0][k as usize];
    let queues = (0..8u64)
        .map(|i| {
            let packets = queue_base * (i + 1) + i;
            let dropped = if i == 3 || i == 4 { 0 } else { (k + 1) * 10 * i };
            let wred = if k == 0 && i == 1 { 1_234_567 } else { (k * 8 + i) * 3 };
            QueueCounters {
                packets,
                bytes: packets * 1_024,
                dropped_packets: dropped,
                dropped_bytes: dropped * 1_500,
                wred_dropped_packets: wred,
                wred_dropped_bytes: wred * 1_000,
                ecn_marked_packets: if i == 3 { (k + 1) * 500_000 } else { k * 10 + i },
                ecn_marked_bytes: if i == 3 { (k + 1) * 500_000_000 } else { (k * 10 + i) * 1_000 },
            }
        })
        .collect();
    let pgs = (0..8u64)
        .map(|i| PgCounters {
            packets: (k + 1) * 1_000_000 + i,
            bytes: ((k + 1) * 1_000_000 + i) * 1_000,
            dropped_packets: if k == 0 && i == 0 { 1_200_000 } else { [800, 400, 100][k as usize] + i },
        })
        .collect();
    let pfc = (0..8u64)
        .map(|i| PfcCounters {
            rx: if i == 3 { (k + 1) * 1_000_003 } else { [1_200, 400, 0][k as usize] + i },
            rx_xon: i,
            tx: if i == 4 { (k + 1) * 2_000_004 } else { [1_210, 410, 0][k as usize] + i },
            rx_pause_transitions: (k + 1) * 10 + i,
            rx_pause_us: (k + 1) * 12_000_000 + i,
        })
        .collect();
    PortCounters {
        name: name.into(),
        admin_up,
        // The second port's link is down (portstat's `D`); an admin-down port shows `X`.
        oper_up: k != 1,
        speed_mbps,
        rx_ok: 0,
        rx_ovr: k * 3,
        rx_bytes: 0,
        rx_err: 0,
        rx_drp: 0,
        tx_ok: 0,
        tx_bytes: 0,
        tx_err: 0,
        tx_drp: 0,
        trapped: k,
        queues,
        pgs,
        pfc,
        pfc_wd: vec![PfcWdCounters::default(); 8],
        drop_reasons: Default::default(),
        queue_depth: vec![0, 0, 0, 5, 0, 0, 0, 0],
        ..Default::default()
    }
}

/// The known state: three ports, listed in API (not name) order, one of them down; Ethernet0 queue 3 in a
/// PFC storm, queue 4 monitored and quiet; Ethernet4 with a storm behind it; Ethernet12 unmonitored.
fn counters() -> GetCountersResponse {
    let mut e0 = port("Ethernet0", 0, true, 25_000);
    (e0.rx_ok, e0.rx_bytes, e0.rx_err, e0.rx_drp) = (8_000_123, 10_500_000_000, 10, 3_345);
    (e0.tx_ok, e0.tx_bytes, e0.tx_err, e0.tx_drp) = (7_500_042, 9_000_000_000, 0, 12_345);
    e0.pfc_wd[3] = wd("stormed", [(1, 0), (100, 300), (100, 300), (0, 200), (0, 200)]);
    e0.pfc_wd[4] = wd("operational", [(0, 0); 5]);
    e0.drop_reasons = [("FDB_MISS_LOSSLESS".to_owned(), 1_000), ("INGRESS_BUFFER".to_owned(), 2_345)].into();

    let mut e4 = port("Ethernet4", 1, true, 100_000);
    (e4.rx_ok, e4.rx_bytes, e4.rx_err, e4.rx_drp) = (4_004, 1_000_000, 0, 3);
    (e4.tx_ok, e4.tx_bytes, e4.tx_err, e4.tx_drp) = (40_040, 20_000_000, 0, 0);
    e4.pfc_wd[3] = wd("operational", [(2, 2), (1_100_000, 100), (100, 100), (0, 0), (0, 0)]);
    e4.pfc_wd[4] = wd("operational", [(0, 0); 5]);
    e4.drop_reasons = [("TTL".to_owned(), 3)].into();

    let mut e12 = port("Ethernet12", 2, false, 40_000);
    (e12.rx_ok, e12.rx_bytes) = (6, 384);

    GetCountersResponse {
        wall_time_unix_ns: 0,
        generation: 3,
        timestamp_ns: 5 * SECOND_NS,
        stalls: None,
        ledger: Some(FrameLedger {
            received: 8_004_133,
            forwarded: 7_540_082,
            copies: 0,
            originated: 12,
            trapped: 3,
            dropped: 3_348,
            copies_dropped: 0,
            flushed: 0,
        }),
        ports: vec![e0, e12, e4],
    }
}

/// One second earlier: Ethernet0 at 2000 MB/s in, 1500 MB/s out on 25G (portstat's 64.00% / 48.00%),
/// Ethernet4 at 204.80 KB/s in and 13.37 MB/s out, Ethernet12 idle.
fn one_second_earlier() -> GetCountersResponse {
    let mut c = counters();
    c.timestamp_ns -= SECOND_NS;
    for p in &mut c.ports {
        let (rx, tx) = match p.name.as_str() {
            "Ethernet0" => (2_000_000_000, 1_500_000_000),
            "Ethernet4" => (204_800, 13_370_000),
            _ => (0, 0),
        };
        p.rx_bytes -= rx;
        p.tx_bytes -= tx;
    }
    c
}

fn watermarks() -> GetWatermarksResponse {
    let port = |name: &str, k: u64| PortWatermarks {
        name: name.into(),
        pg_shared_bytes: (0..8).map(|i| if k == 0 && i == 3 { 2_057_328 } else { k * 100 + i }).collect(),
        pg_headroom_bytes: (0..8).map(|i| if i == 3 || i == 4 { (k + 1) * 43_264 } else { 0 }).collect(),
        queue_shared_bytes: (0..8)
            .map(|i| if k == 1 && i == 0 { 1_234_567 } else { k * 1_000 + i * 13 })
            .collect(),
    };
    GetWatermarksResponse {
        ports: vec![port("Ethernet0", 0), port("Ethernet12", 2), port("Ethernet4", 1)],
        pools: vec![
            PoolWatermarks {
                name: "ingress_lossless_pool".into(),
                shared_bytes: 12_345_678,
                headroom_bytes: 432_640,
            },
            PoolWatermarks { name: "egress_lossy_pool".into(), shared_bytes: 1_024, headroom_bytes: 0 },
            PoolWatermarks {
                name: "egress_lossless_pool".into(),
                shared_bytes: 9_876_543,
                headroom_bytes: 0,
            },
        ],
    }
}

fn pfcwd_config_db() -> ConfigDb {
    let mut db = ConfigDb::default();
    db.set("PFC_WD", "GLOBAL", "POLL_INTERVAL", "200")
        .set("PFC_WD", "GLOBAL", "BIG_RED_SWITCH", "enable")
        .set("PFC_WD", "Ethernet0", "action", "drop")
        .set("PFC_WD", "Ethernet0", "detection_time", "400")
        .set("PFC_WD", "Ethernet0", "restoration_time", "400")
        .set("PFC_WD", "Ethernet4", "action", "forward")
        .set("PFC_WD", "Ethernet4", "detection_time", "200")
        .set("PFC_WD", "Ethernet4", "pfc_stat_history", "enable")
        .set("PFC_WD", "Ethernet12", "restoration_time", "600")
        // A key without fields is not a configured port (pfcwd skips empty entries).
        .touch("PFC_WD", "Ethernet8");
    db
}

fn pretty(v: &serde_json::Value) -> String {
    serde_json::to_string_pretty(v).unwrap()
}

// ---- snapshots -----------------------------------------------------------------------------------

#[test]
fn interfaces_counters_without_rates() {
    insta::assert_snapshot!(interfaces_counters(&counters(), None));
}

#[test]
fn interfaces_counters_with_rates() {
    insta::assert_snapshot!(interfaces_counters(&counters(), Some(&one_second_earlier())));
}

#[test]
fn rates_need_the_port_in_an_older_snapshot() {
    let mut earlier = one_second_earlier();
    earlier.ports.retain(|p| p.name != "Ethernet4");
    let json = interfaces_counters_json(&counters(), Some(&earlier));
    assert_eq!(json["Ethernet0"]["RX_UTIL"], 64.0);
    assert!(json["Ethernet4"]["RX_BPS"].is_null() && json["Ethernet4"]["TX_UTIL"].is_null());
    // A snapshot that is not older gives no rates.
    let json = interfaces_counters_json(&counters(), Some(&counters()));
    assert!(json["Ethernet0"]["RX_BPS"].is_null());
}

#[test]
fn interfaces_counters_json_form() {
    insta::assert_snapshot!(pretty(&interfaces_counters_json(&counters(), Some(&one_second_earlier()))));
}

#[test]
fn queue_counters_all_ports() {
    insta::assert_snapshot!(queue_counters(&counters(), None));
}

#[test]
fn queue_counters_one_port() {
    insta::assert_snapshot!(queue_counters(&counters(), Some("Ethernet4")));
    assert_eq!(queue_counters(&counters(), Some("Ethernet99")), "");
}

#[test]
fn queue_counters_json_form() {
    let filter = QueueFilter { port: Some("Ethernet0"), nonzero: false };
    insta::assert_snapshot!(pretty(&queue_counters_json(&counters(), filter)));
}

#[test]
fn queue_counters_nonzero_lists_only_queues_that_counted() {
    // queuestat -nz: a queue is listed when any of its four counters is non-zero; a port with none prints
    // nothing at all.
    let queue = |packets, dropped_packets| QueueCounters {
        packets,
        bytes: packets * 100,
        dropped_packets,
        ..Default::default()
    };
    let c = GetCountersResponse {
        ports: vec![
            PortCounters {
                name: "Ethernet0".into(),
                queues: vec![queue(5, 0), queue(0, 0), queue(0, 2), queue(0, 0)],
                ..Default::default()
            },
            PortCounters { name: "Ethernet4".into(), queues: vec![queue(0, 0); 4], ..Default::default() },
        ],
        ..Default::default()
    };
    let text = queue_counters_filtered(&c, QueueFilter { port: None, nonzero: true });
    let rows: Vec<(&str, &str)> = text
        .lines()
        .skip(2)
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            Some((w.next()?, w.next()?))
        })
        .collect();
    assert_eq!(rows, [("Ethernet0", "UC0"), ("Ethernet0", "UC2")], "{text}");
    let json = queue_counters_json(&c, QueueFilter { port: None, nonzero: true });
    assert_eq!(
        json,
        serde_json::json!({"Ethernet0": {
        "UC0": {"totalpacket": 5, "totalbytes": 500, "droppacket": 0, "dropbytes": 0},
        "UC2": {"totalpacket": 0, "totalbytes": 0, "droppacket": 2, "dropbytes": 0}}})
    );
    // Without --nonzero every queue of every port.
    assert_eq!(queue_counters(&c, None).lines().filter(|l| l.contains("UC")).count(), 8);
}

#[test]
fn queue_wredcounters_all_ports() {
    insta::assert_snapshot!(queue_wredcounters(&counters(), None));
}

#[test]
fn queue_wredcounters_json_form() {
    let filter = QueueFilter { port: Some("Ethernet4"), nonzero: false };
    insta::assert_snapshot!(pretty(&queue_wredcounters_json(&counters(), filter)));
}

#[test]
fn pfc_counters_rx_and_tx() {
    insta::assert_snapshot!(pfc_counters(&counters()));
}

#[test]
fn pfc_counters_json_form() {
    insta::assert_snapshot!(pretty(&pfc_counters_json(&counters())));
}

#[test]
fn pfc_counters_history_table() {
    insta::assert_snapshot!(pfc_counters_history(&counters()));
}

#[test]
fn pfc_counters_history_json_form() {
    let json = pfc_counters_history_json(&counters());
    assert_eq!(json["Ethernet4"]["PFC3"]["Total RX Pause Time US"], 24_000_003);
    assert!(json["Ethernet4"]["PFC3"]["Recent RX Pause Timestamp"].is_null());
    insta::assert_snapshot!(pretty(&json["Ethernet0"]));
}

#[test]
fn pg_shared_watermark() {
    insta::assert_snapshot!(pg_watermark(&watermarks(), PgWatermarkKind::Shared));
}

#[test]
fn pg_headroom_watermark() {
    insta::assert_snapshot!(pg_watermark(&watermarks(), PgWatermarkKind::Headroom));
}

#[test]
fn pg_watermark_json_form() {
    insta::assert_snapshot!(pretty(&pg_watermark_json(&watermarks(), PgWatermarkKind::Shared)));
    let all = watermarks_json(&watermarks());
    assert_eq!(all["pg_shared"], pg_watermark_json(&watermarks(), PgWatermarkKind::Shared));
    assert_eq!(all["headroom_pool"], serde_json::json!([{"ingress_lossless_pool": 432_640}]));
}

#[test]
fn pg_drop_counters_table() {
    insta::assert_snapshot!(pg_drop_counters(&counters()));
    assert_eq!(pg_drop_counters_json(&counters())[0]["PG0"], 1_200_000);
}

#[test]
fn queue_watermark_unicast_table() {
    insta::assert_snapshot!(queue_watermark_unicast(&watermarks()));
    assert_eq!(queue_watermark_unicast_json(&watermarks())[1]["UC0"], 1_234_567);
}

#[test]
fn buffer_pool_watermark_table() {
    insta::assert_snapshot!(buffer_pool_watermark(&watermarks()));
    insta::assert_snapshot!("buffer_pool_watermark_json", pretty(&buffer_pool_watermark_json(&watermarks())));
}

#[test]
fn headroom_pool_watermark_table() {
    // Only the ingress lossless pool holds headroom (watermarkstat filters on the name).
    insta::assert_snapshot!(headroom_pool_watermark(&watermarks()));
    assert_eq!(
        headroom_pool_watermark_json(&watermarks()),
        serde_json::json!([{"ingress_lossless_pool": 432_640}])
    );
}

#[test]
fn pfcwd_config_table() {
    insta::assert_snapshot!(pfcwd_config(&pfcwd_config_db()));
    insta::assert_snapshot!("pfcwd_config_json", pretty(&pfcwd_config_json(&pfcwd_config_db())));
}

#[test]
fn pfcwd_config_without_ports_is_the_header_alone() {
    // As pfcwd: no port configured, no global lines either.
    let mut db = ConfigDb::default();
    db.set("PFC_WD", "GLOBAL", "POLL_INTERVAL", "200");
    assert_eq!(
        pfcwd_config(&db),
        "  PORT    ACTION    DETECTION TIME    RESTORATION TIME    HISTORY\n\
         ------  --------  ----------------  ------------------  ---------\n"
    );
}

#[test]
fn pfcwd_stats_hides_quiet_queues() {
    insta::assert_snapshot!(pfcwd_stats(&counters(), false));
}

#[test]
fn pfcwd_stats_all_shows_quiet_queues() {
    let all = pfcwd_stats(&counters(), true);
    assert!(all.contains("Ethernet0:4") && all.contains("Ethernet4:4"));
    assert!(!all.contains("Ethernet12"), "an unmonitored queue is not listed");
    insta::assert_snapshot!(all);
}

#[test]
fn pfcwd_stats_json_form() {
    let json = pfcwd_stats_json(&counters());
    assert_eq!(json.as_array().unwrap().len(), 4, "quiet monitored queues included");
    insta::assert_snapshot!(pretty(&json));
}

#[test]
fn check_storm() {
    let mut c = counters();
    assert!(pfcwd_any_stormed(&c));
    c.ports[0].pfc_wd[3].status = "operational".into();
    assert!(!pfcwd_any_stormed(&c));
}

// ---- clearing ------------------------------------------------------------------------------------

#[test]
fn subtract_clears_to_zero_and_keeps_state() {
    let now = counters();
    let cleared = subtract_counters(&now, &now);
    let e0 = cleared.ports.iter().find(|p| p.name == "Ethernet0").unwrap();
    assert_eq!((e0.rx_ok, e0.tx_drp, e0.queues[7].bytes, e0.pfc[3].rx), (0, 0, 0, 0));
    assert_eq!(e0.drop_reasons["INGRESS_BUFFER"], 0);
    // Gauges and state are now's.
    assert_eq!((e0.admin_up, e0.speed_mbps, e0.queue_depth[3]), (true, 25_000, 5));
    assert_eq!(e0.pfc_wd[3].status, "stormed");
    assert_eq!((cleared.timestamp_ns, cleared.generation), (now.timestamp_ns, now.generation));
    assert_eq!(cleared.ledger.unwrap().received, 0);
    insta::assert_snapshot!(pfc_counters(&cleared));
}

#[test]
fn subtract_matches_ports_by_name_and_saturates() {
    let now = counters();
    let mut baseline = counters();
    baseline.ports.reverse();
    baseline.ports.retain(|p| p.name != "Ethernet4");
    let e0 = baseline.ports.iter_mut().find(|p| p.name == "Ethernet0").unwrap();
    e0.rx_ok -= 1_000_000;
    e0.queues[1].packets -= 42;
    e0.drop_reasons.remove("FDB_MISS_LOSSLESS");
    // A counter above now's (the switch restarted since the snapshot) shows 0, not a wrap.
    e0.tx_ok += 5;

    let shown = subtract_counters(&now, &baseline);
    assert_eq!(
        shown.ports.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(),
        ["Ethernet0", "Ethernet12", "Ethernet4"]
    );
    let e0 = &shown.ports[0];
    assert_eq!((e0.rx_ok, e0.tx_ok, e0.queues[1].packets, e0.queues[2].packets), (1_000_000, 0, 42, 0));
    assert_eq!(e0.drop_reasons["FDB_MISS_LOSSLESS"], 1_000, "a reason the baseline lacks keeps its total");
    assert_eq!(shown.ports[2], now.ports[2], "a port the baseline lacks keeps its totals");
    insta::assert_snapshot!(queue_counters(&shown, Some("Ethernet0")));
}

#[test]
fn subtract_keeps_the_last_storm_whole_when_it_came_after_the_baseline() {
    let before = counters();
    let mut now = counters();
    // A second storm on Ethernet0:3 after the snapshot; Ethernet4:3 only drained more packets.
    now.ports[0].pfc_wd[3] = wd("stormed", [(2, 1), (150, 700), (150, 700), (0, 400), (0, 400)]);
    now.ports[2].pfc_wd[3] = wd("operational", [(2, 2), (1_100_050, 100), (150, 100), (0, 0), (0, 0)]);
    insta::assert_snapshot!(pfcwd_stats(&subtract_counters(&now, &before), true));
}

// ---- character for character against sonic-utilities' expected outputs --------------------------

/// A multi-line literal written from its second line on, so that its first line keeps its indentation.
fn verbatim(text: &str) -> &str {
    text.strip_prefix('\n').unwrap()
}

/// Ports named as in sonic-utilities' mock COUNTERS_DB, with nothing counted.
fn sonic_mock_ports() -> GetCountersResponse {
    let blank = |name: &str| PortCounters {
        name: name.into(),
        queues: vec![QueueCounters::default(); 8],
        pgs: vec![PgCounters::default(); 8],
        pfc: vec![PfcCounters::default(); 8],
        pfc_wd: vec![PfcWdCounters::default(); 8],
        ..Default::default()
    };
    GetCountersResponse {
        ports: vec![blank("Ethernet0"), blank("Ethernet4"), blank("Ethernet8")],
        ..Default::default()
    }
}

#[test]
fn sonic_pfcwd_show_stats() {
    let mut c = sonic_mock_ports();
    c.ports[0].pfc_wd[3] = wd("stormed", [(1, 0), (100, 300), (100, 300), (0, 200), (0, 200)]);
    c.ports[1].pfc_wd[3] = wd("operational", [(2, 2), (100, 100), (100, 100), (0, 0), (0, 0)]);
    c.ports[2].pfc_wd[4] = wd("stormed", [(3, 2), (100, 300), (100, 300), (0, 200), (0, 200)]);
    // tests/pfcwd_input/pfcwd_test_vectors.py: pfcwd_show_stats_output
    let expected = verbatim(
        "
      QUEUE       STATUS    STORM DETECTED/RESTORED    TX OK/DROP    RX OK/DROP    TX LAST OK/DROP    RX LAST OK/DROP
-----------  -----------  -------------------------  ------------  ------------  -----------------  -----------------
Ethernet0:3      stormed                        1/0       100/300       100/300              0/200              0/200
Ethernet4:3  operational                        2/2       100/100       100/100                0/0                0/0
Ethernet8:4      stormed                        3/2       100/300       100/300              0/200              0/200
",
    );
    assert_eq!(pfcwd_stats(&c, false), expected);
}

#[test]
fn sonic_pfcwd_show_config() {
    let mut db = ConfigDb::default();
    db.set("PFC_WD", "GLOBAL", "POLL_INTERVAL", "600");
    for port in ["Ethernet0", "Ethernet4", "Ethernet8"] {
        db.set("PFC_WD", port, "action", "drop").set("PFC_WD", port, "detection_time", "600").set(
            "PFC_WD",
            port,
            "restoration_time",
            "600",
        );
    }
    // tests/pfcwd_input/pfcwd_test_vectors.py: pfcwd_show_config_output
    let expected = "\
Changed polling interval to 600ms
     PORT    ACTION    DETECTION TIME    RESTORATION TIME    HISTORY
---------  --------  ----------------  ------------------  ---------
Ethernet0      drop               600                 600    disable
Ethernet4      drop               600                 600    disable
Ethernet8      drop               600                 600    disable
";
    assert_eq!(pfcwd_config(&db), expected);
}

#[test]
fn sonic_pfcstat() {
    let mut c = sonic_mock_ports();
    for (k, p) in c.ports.iter_mut().enumerate() {
        let base = [200, 400, 800][k];
        for (i, f) in p.pfc.iter_mut().enumerate() {
            let i = i as u64;
            f.rx = if i == 0 { [1_200, 1_400, 1_800][k] } else { base + i };
            f.tx = if i == 0 { [1_210, 1_410, 1_810][k] } else { base + 10 + i };
        }
    }
    // tests/pfcstat_test.py: show_pfc_counters_output
    let expected = verbatim(
        "
  Port Rx    PFC0    PFC1    PFC2    PFC3    PFC4    PFC5    PFC6    PFC7
---------  ------  ------  ------  ------  ------  ------  ------  ------
Ethernet0   1,200     201     202     203     204     205     206     207
Ethernet4   1,400     401     402     403     404     405     406     407
Ethernet8   1,800     801     802     803     804     805     806     807

  Port Tx    PFC0    PFC1    PFC2    PFC3    PFC4    PFC5    PFC6    PFC7
---------  ------  ------  ------  ------  ------  ------  ------  ------
Ethernet0   1,210     211     212     213     214     215     216     217
Ethernet4   1,410     411     412     413     414     415     416     417
Ethernet8   1,810     811     812     813     814     815     816     817
",
    );
    assert_eq!(pfc_counters(&c), expected);
}

#[test]
fn sonic_pg_drop() {
    let mut c = sonic_mock_ports();
    for (k, p) in c.ports.iter_mut().enumerate() {
        for (i, g) in p.pgs.iter_mut().enumerate() {
            g.dropped_packets = [800, 400, 100][k] + i as u64;
        }
    }
    // tests/pgdropstat_test.py: show_pg_dropped_packet_stat
    let expected = "\
Ingress PG dropped packets:
     Port    PG0    PG1    PG2    PG3    PG4    PG5    PG6    PG7
---------  -----  -----  -----  -----  -----  -----  -----  -----
Ethernet0    800    801    802    803    804    805    806    807
Ethernet4    400    401    402    403    404    405    406    407
Ethernet8    100    101    102    103    104    105    106    107
";
    assert_eq!(pg_drop_counters(&c), expected);
}

#[test]
fn sonic_watermarkstat() {
    let port = |name: &str, base: u64| PortWatermarks {
        name: name.into(),
        pg_shared_bytes: (0..8).map(|i| base + i).collect(),
        ..Default::default()
    };
    let w = GetWatermarksResponse {
        ports: vec![port("Ethernet0", 100), port("Ethernet4", 400), port("Ethernet8", 800)],
        pools: vec![PoolWatermarks {
            name: "ingress_lossless_pool".into(),
            shared_bytes: 3000,
            headroom_bytes: 432_640,
        }],
    };
    // tests/wm_input/wm_test_vectors.py: show_pg_wm_shared_output, and the pool tables without their
    // multi-ASIC "(Namespace asic1)" suffix.
    let expected = "\
Ingress shared pool occupancy per PG:
     Port    PG0    PG1    PG2    PG3    PG4    PG5    PG6    PG7
---------  -----  -----  -----  -----  -----  -----  -----  -----
Ethernet0    100    101    102    103    104    105    106    107
Ethernet4    400    401    402    403    404    405    406    407
Ethernet8    800    801    802    803    804    805    806    807
";
    assert_eq!(pg_watermark(&w, PgWatermarkKind::Shared), expected);
    let expected = "\
Shared pool maximum occupancy:
                 Pool    Bytes
---------------------  -------
ingress_lossless_pool     3000
";
    assert_eq!(buffer_pool_watermark(&w), expected);
    let expected = "\
Headroom pool maximum occupancy:
                 Pool    Bytes
---------------------  -------
ingress_lossless_pool   432640
";
    assert_eq!(headroom_pool_watermark(&w), expected);
}
