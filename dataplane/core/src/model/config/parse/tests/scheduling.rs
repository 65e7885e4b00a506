//! Tests of `WRED_PROFILE`, `SCHEDULER`, `QUEUE` and `PFC_WD` (`parse/scheduling.rs`).

use super::buffers::*;
use super::*;
use crate::model::config::{
    MeterType, PfcWdAction, PfcWdDetectionRule, PfcWdGlobal, PfcWdPort, SchedulerKind, SchedulerParams,
    SchedulerProfile, WredColour, WredProfile,
};

fn wred_with(field: &str, value: &str) -> ConfigDb {
    let mut db = yaml(&format!("{BASE}{WRED}"));
    db.set("WRED_PROFILE", "AZURE_LOSSLESS", field, value);
    db
}

fn wred_without(field: &str) -> ConfigDb {
    let mut db = yaml(&format!("{BASE}{WRED}"));
    db.tables.get_mut("WRED_PROFILE").unwrap().get_mut("AZURE_LOSSLESS").unwrap().remove(field);
    db
}

#[test]
fn wred_profile_defaults_and_weight() {
    let mut db = base_with("WRED_PROFILE", "ECN_ONLY", "ecn", "ecn_green");
    db.set("WRED_PROFILE", "ECN_ONLY", "green_min_threshold", "150000")
        .set("WRED_PROFILE", "ECN_ONLY", "green_max_threshold", "1500000")
        .set("WRED_PROFILE", "ECN_ONLY", "weight", "4");
    let wred = &compile(&db).unwrap().config.wred_profiles[0];
    let green = WredColour {
        enabled: false,
        min_bytes: 150_000,
        max_bytes: 1_500_000,
        drop_probability_percent: 100,
    };
    let unset = WredColour { drop_probability_percent: 100, ..WredColour::default() };
    let expected = WredProfile {
        name: "ECN_ONLY".into(),
        ecn: [true, false, false],
        colours: [green, unset, unset],
        weight: 4,
    };
    assert_eq!(*wred, expected);
}

#[test]
fn wred_fields_are_checked() {
    let cases = [
        ("ecn", "ecn_blue"),
        ("weight", "16"),
        ("green_drop_probability", "101"),
        ("wred_red_enable", "yes"),
        ("yellow_max_threshold", "2M"),
    ];
    for (field, bad) in cases {
        assert_error(&wred_with(field, bad), &format!("WRED_PROFILE|AZURE_LOSSLESS|{field}"), bad, bad);
    }
}

#[test]
fn wred_enabled_colour_needs_its_thresholds() {
    let mut db = wred_without("yellow_max_threshold");
    db.set("WRED_PROFILE", "AZURE_LOSSLESS", "ecn", "ecn_green");
    assert_error(&db, "WRED_PROFILE|AZURE_LOSSLESS|yellow_max_threshold", "", "wred_yellow_enable is true");
}

#[test]
fn wred_ecn_colour_needs_its_thresholds() {
    let mut db = wred_without("red_min_threshold");
    db.set("WRED_PROFILE", "AZURE_LOSSLESS", "wred_red_enable", "false");
    assert_error(&db, "WRED_PROFILE|AZURE_LOSSLESS|red_min_threshold", "", "ecn ecn_all marks red");
    // Neither marked nor enabled: no thresholds needed.
    db.set("WRED_PROFILE", "AZURE_LOSSLESS", "ecn", "ecn_green_yellow");
    assert!(compile(&db).is_ok());
}

#[test]
fn wred_min_threshold_is_at_most_max() {
    let db = wred_with("green_min_threshold", "2097153");
    assert_error(
        &db,
        "WRED_PROFILE|AZURE_LOSSLESS|green_min_threshold",
        "2097153",
        "above green_max_threshold 2097152",
    );
    assert!(compile(&wred_with("green_min_threshold", "2097152")).is_ok());
}

#[test]
fn scheduler_fields() {
    let mut db = base_with("SCHEDULER", "strict", "type", "strict");
    for (field, value) in [
        ("priority", "7"),
        ("meter_type", "packets"),
        ("cir", "1000"),
        ("cbs", "10"),
        ("pir", "2000"),
        ("pbs", "20"),
        ("policer", "true"),
    ] {
        db.set("SCHEDULER", "strict", field, value);
    }
    db.touch("SCHEDULER", "wrr");
    let Compiled { config, warnings } = compile(&db).unwrap();
    assert_eq!(warnings, vec![]);
    let strict = SchedulerProfile {
        name: "strict".into(),
        params: SchedulerParams {
            kind: SchedulerKind::Strict,
            weight: 1,
            priority: Some(7),
            meter_type: MeterType::Packets,
            cir: Some(1000),
            cbs: Some(10),
            pir: Some(2000),
            pbs: Some(20),
            policer: true,
        },
    };
    let mut wrr = dwrr("wrr", 1);
    wrr.params.kind = SchedulerKind::Wrr;
    assert_eq!(config.schedulers, vec![strict, wrr]);
}

#[test]
fn scheduler_fields_are_checked() {
    let cases = [
        ("type", "FIFO"),
        ("weight", "0"),
        ("weight", "101"),
        ("priority", "10"),
        ("meter_type", "bits"),
        ("pir", "1G"),
    ];
    for (field, bad) in cases {
        assert_error(&base_with("SCHEDULER", "s", field, bad), &format!("SCHEDULER|s|{field}"), bad, bad);
    }
}

#[test]
fn scheduler_cir_is_at_most_pir() {
    let mut db = base_with("SCHEDULER", "s", "cir", "2000");
    db.set("SCHEDULER", "s", "pir", "1000");
    assert_error(&db, "SCHEDULER|s|cir", "2000", "cir 2000 is above pir 1000");
}

#[test]
fn scheduler_policer_needs_strict_and_pir() {
    let mut db = base_with("SCHEDULER", "s", "type", "DWRR");
    db.set("SCHEDULER", "s", "policer", "true").set("SCHEDULER", "s", "pir", "1000");
    assert_warning(&db, "SCHEDULER|s|policer", "STRICT");
    assert!(!compile(&db).unwrap().config.schedulers[0].params.policer);
    let db = base_with("SCHEDULER", "s", "type", "STRICT");
    let mut db = db.clone();
    db.set("SCHEDULER", "s", "policer", "true");
    assert_warning(&db, "SCHEDULER|s|policer", "pir");
}

#[test]
fn queue_binds_scheduler_and_wred() {
    let mut db = yaml(&format!("{BASE}{WRED}"));
    db.set("SCHEDULER", "scheduler.1", "type", "DWRR").set("SCHEDULER", "scheduler.1", "weight", "15");
    db.set("QUEUE", "Ethernet0,Ethernet4|3-4", "scheduler", "[SCHEDULER|scheduler.1]");
    db.set("QUEUE", "Ethernet0,Ethernet4|3-4", "wred_profile", "AZURE_LOSSLESS");
    db.set("QUEUE", "Ethernet8|3", "wred_profile", "[WRED_PROFILE|AZURE_LOSSLESS]");
    let config = compile(&db).unwrap().config;
    for port in [0, 1] {
        let b = &config.port_buffers[port];
        assert_eq!(b.queue_scheduler, [None, None, None, Some(0), Some(0), None, None, None]);
        assert_eq!(b.queue_wred, [None, None, None, Some(0), Some(0), None, None, None]);
    }
    assert_eq!(config.port_buffers[2].queue_wred[3], Some(0));
    assert_eq!(config.port_buffers[2].queue_scheduler[3], None);
}

#[test]
fn queue_references_exist() {
    let db = base_with("QUEUE", "Ethernet0|3", "scheduler", "scheduler.1");
    assert_error(&db, "QUEUE|Ethernet0|3|scheduler", "scheduler.1", "names no SCHEDULER entry");
    let db = base_with("QUEUE", "Ethernet0|3", "wred_profile", "[SCHEDULER|AZURE_LOSSLESS]");
    assert_error(&db, "QUEUE|Ethernet0|3|wred_profile", "[SCHEDULER|AZURE_LOSSLESS]", "not to WRED_PROFILE");
    let db = base_with("QUEUE", "Ethernet0|3-9", "scheduler", "scheduler.1");
    assert_error(&db, "QUEUE|Ethernet0|3-9", "3-9", "3-9");
}

#[test]
fn port_qos_scheduler_is_the_port_shaper() {
    let mut db = base_with("SCHEDULER", "scheduler.port", "pir", "1250000000");
    db.set("PORT_QOS_MAP", "Ethernet4,Ethernet8", "scheduler", "[SCHEDULER|scheduler.port]");
    let config = compile(&db).unwrap().config;
    let shapers: Vec<Option<usize>> = config.port_buffers.iter().map(|b| b.port_scheduler).collect();
    assert_eq!(shapers, [None, Some(0), Some(0), None]);
    let db = base_with("PORT_QOS_MAP", "Ethernet4", "scheduler", "scheduler.port");
    assert_error(&db, "PORT_QOS_MAP|Ethernet4|scheduler", "scheduler.port", "names no SCHEDULER entry");
}

#[test]
fn pfc_watchdog_examples() {
    let text = format!(
        "{BASE}{}",
        r#"
PFC_WD:
  GLOBAL: {POLL_INTERVAL: 200, BIG_RED_SWITCH: enable, detection_rule: broadcom, drop_ingress: "true"}
  Ethernet0,Ethernet4: {action: forward, detection_time: 200, restoration_time: 2000, pfc_stat_history: enable}
  Ethernet8: {detection_time: 400}
"#
    );
    let config = compile(&yaml(&text)).unwrap().config;
    let global = PfcWdGlobal {
        poll_interval_ms: 200,
        big_red_switch: true,
        detection_rule: PfcWdDetectionRule::Broadcom,
        drop_ingress: true,
    };
    assert_eq!(config.pfc_wd_global, global);
    let uplink = PfcWdPort {
        action: PfcWdAction::Forward,
        detection_time_ms: 200,
        restoration_time_ms: Some(2000),
        pfc_stat_history: true,
    };
    let server = PfcWdPort {
        action: PfcWdAction::Drop,
        detection_time_ms: 400,
        restoration_time_ms: None,
        pfc_stat_history: false,
    };
    assert_eq!(config.pfc_wd, vec![Some(uplink), Some(uplink), Some(server), None]);
    // Without PFC_WD|GLOBAL: the defaults.
    let config = compile(&base_with("PFC_WD", "Ethernet0", "detection_time", "100")).unwrap().config;
    assert_eq!(config.pfc_wd_global, PfcWdGlobal::default());
    assert_eq!(config.pfc_wd[0].map(|w| w.action), Some(PfcWdAction::Drop));
}

#[test]
fn pfc_watchdog_action_is_drop_forward_or_alert() {
    let mut db = base_with("PFC_WD", "Ethernet0", "detection_time", "400");
    db.set("PFC_WD", "Ethernet0", "action", "reset");
    assert_error(&db, "PFC_WD|Ethernet0|action", "reset", "Invalid PFC Watchdog action reset");
    db.set("PFC_WD", "Ethernet0", "action", "alert");
    assert_eq!(compile(&db).unwrap().config.pfc_wd[0].unwrap().action, PfcWdAction::Alert);
}

#[test]
fn pfc_watchdog_detection_time_is_required() {
    let db = base_with("PFC_WD", "Ethernet0", "action", "drop");
    assert_error(&db, "PFC_WD|Ethernet0|detection_time", "", "detection_time missing");
}

#[test]
fn pfc_watchdog_times_are_in_range() {
    let cases = [
        ("detection_time", "99"),
        ("detection_time", "5001"),
        ("restoration_time", "60001"),
        ("restoration_time", "1s"),
        ("pfc_stat_history", "on"),
    ];
    for (field, bad) in cases {
        let mut db = base_with("PFC_WD", "Ethernet0", "detection_time", "400");
        db.set("PFC_WD", "Ethernet0", field, bad);
        assert_error(&db, &format!("PFC_WD|Ethernet0|{field}"), bad, bad);
    }
}

#[test]
fn pfc_watchdog_global_fields_are_checked() {
    let cases = [
        ("POLL_INTERVAL", "99"),
        ("POLL_INTERVAL", "1001"),
        ("BIG_RED_SWITCH", "on"),
        ("detection_rule", "mellanox"),
        ("drop_ingress", "1"),
    ];
    for (field, bad) in cases {
        assert_error(&base_with("PFC_WD", "GLOBAL", field, bad), &format!("PFC_WD|GLOBAL|{field}"), bad, bad);
    }
}

#[test]
fn pfc_watchdog_times_are_at_least_the_poll_interval() {
    let mut db = base_with("PFC_WD", "GLOBAL", "POLL_INTERVAL", "500");
    db.set("PFC_WD", "Ethernet0", "detection_time", "600").set(
        "PFC_WD",
        "Ethernet0",
        "restoration_time",
        "400",
    );
    assert_error(
        &db,
        "PFC_WD|Ethernet0|restoration_time",
        "400",
        "shorter than PFC_WD|GLOBAL POLL_INTERVAL 500 ms",
    );
    db.set("PFC_WD", "Ethernet0", "restoration_time", "500").set(
        "PFC_WD",
        "Ethernet0",
        "detection_time",
        "499",
    );
    assert_error(&db, "PFC_WD|Ethernet0|detection_time", "499", "POLL_INTERVAL 500 ms");
}

#[test]
fn pfc_watchdog_ports_exist_and_have_one_entry() {
    let db = base_with("PFC_WD", "Ethernet0,Ethernet99", "detection_time", "400");
    assert_error(&db, "PFC_WD|Ethernet0,Ethernet99", "Ethernet99", "Ethernet99");
    let mut db = base_with("PFC_WD", "Ethernet0,Ethernet4", "detection_time", "400");
    db.set("PFC_WD", "Ethernet4", "detection_time", "200");
    assert_error(&db, "PFC_WD|Ethernet4", "Ethernet4", "already configured by PFC_WD|Ethernet0,Ethernet4");
}

/// Four ports, priority 3 lossless everywhere, static pools so that the numbers are plain: each ingress
/// PG holds 3,000 + 100,000 + 80,000 = 183,000 bytes; each lossless queue takes 50,000 + `QUEUE_TH`.
const UCLOUD: &str = r#"
PORT_QOS_MAP:
  Ethernet0,Ethernet4,Ethernet8,Ethernet12: {pfc_enable: "3"}
BUFFER_POOL:
  ingress_pool: {type: ingress, mode: static, size: 10000000}
  egress_pool: {type: egress, mode: static, size: 10000000}
BUFFER_PROFILE:
  pg_profile: {pool: ingress_pool, size: 3000, static_th: 100000, xon: 0, xoff: 80000}
  queue_profile: {pool: egress_pool, size: 50000, static_th: QUEUE_TH}
BUFFER_PG:
  Ethernet0,Ethernet4,Ethernet8,Ethernet12|3: {profile: pg_profile}
BUFFER_QUEUE:
  Ethernet0,Ethernet4,Ethernet8,Ethernet12|3: {profile: queue_profile}
"#;

fn ucloud(queue_th: u64) -> ConfigDb {
    yaml(&format!("{BASE}{}", UCLOUD.replace("QUEUE_TH", &queue_th.to_string())))
}

#[test]
fn ucloud_inequality_holds_for_a_sane_config() {
    // 3 other ingress ports × 183,000 = 549,000 <= 550,000.
    assert_eq!(warnings(&ucloud(500_000)), vec![]);
}

#[test]
fn ucloud_inequality_warns_for_an_oversubscribed_queue() {
    let warnings = warnings(&ucloud(400_000));
    // One warning for the four queues of the profile (Ethernet0, 4, 8 and 12), naming the first.
    let locations: Vec<String> = warnings.iter().map(ConfigIssue::location).collect();
    assert_eq!(locations, ["BUFFER_QUEUE|Ethernet0|3|profile"]);
    assert_eq!(
        warnings[0].message,
        "UCloud check: ingress can hold 3 × 183,000 = 549,000 bytes for this queue but it can take only 450,000 \
         (and on 3 more lossless queue(s) with this profile)"
    );
    assert_eq!(warnings[0].value, "queue_profile");
}

#[test]
fn ucloud_inequality_caps_the_pgs_by_their_shared_pool() {
    // The three PGs share 250,000 bytes of pool, not 3 × 100,000: 9,000 + 250,000 + 240,000 = 499,000.
    let mut db = ucloud(400_000);
    db.set("BUFFER_POOL", "ingress_pool", "size", "250000");
    let found = warnings(&db);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(
        found[0].message,
        "UCloud check: ingress can hold 499,000 bytes (3 × 183,000 = 549,000, capped by pool ingress_pool) \
         for this queue but it can take only 450,000 (and on 3 more lossless queue(s) with this profile)"
    );
    db.set("BUFFER_POOL", "ingress_pool", "size", "200000");
    assert_eq!(warnings(&db), vec![]);
}

#[test]
fn lossless_pg_without_profile_is_a_warning() {
    let mut db = buffers_with("PORT_QOS_MAP", "Ethernet0,Ethernet4", "pfc_enable", "3,4");
    db.set("BUFFER_PG", "Ethernet0|3", "profile", "pg_lossless_100000_5m_profile");
    // Ethernet4 has no buffer tables at all: it is not buffer-managed, no warning.
    assert_warning(
        &db,
        "BUFFER_PG|Ethernet0|4",
        "lossless PG has no buffer profile: admitted without limit, never sends PFC",
    );
}

#[test]
fn mmu_size_holds_pools_and_reservations() {
    // Pools 36,101,604; reserved: 6 lossy queues × 1,518 + lossless PG 3 of Ethernet0 1,248; its xoff
    // 165,568 is private headroom as the pool has no shared headroom pool here.
    let mut db = buffers_with("BUFFER_POOL", "ingress_lossless_pool", "xoff", "0");
    db.set("PORT_QOS_MAP", "Ethernet0", "pfc_enable", "3")
        .set("BUFFER_PG", "Ethernet0|0", "profile", "ingress_lossy_profile")
        .set("BUFFER_PG", "Ethernet0|3", "profile", "pg_lossless_100000_5m_profile")
        .set("BUFFER_QUEUE", "Ethernet0,Ethernet4|0-2", "profile", "egress_lossy_profile")
        .set("BUFFER_ASIC", "global", "mmu_size", "36000000");
    assert_error(
        &db,
        "BUFFER_ASIC|global|mmu_size",
        "36000000",
        "pools 36,101,604 + shared headroom 0 + reserved 10,356 + private headroom 165,568 = 36,277,528 bytes \
         exceed mmu_size 36,000,000",
    );
    db.set("BUFFER_ASIC", "global", "mmu_size", "36277528");
    assert!(compile(&db).is_ok());
    // With a shared headroom pool, the PG's xoff comes from it instead.
    db.set("BUFFER_POOL", "ingress_lossless_pool", "xoff", "4194112");
    assert_error(
        &db,
        "BUFFER_ASIC|global|mmu_size",
        "36277528",
        "shared headroom 4,194,112 + reserved 10,356 + private headroom 0",
    );
}

#[test]
fn platform_profiles_compile_without_issues() {
    for text in [TH_BALANCED, SN2700] {
        let compiled = compile(&yaml(text)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(compiled.warnings, vec![]);
    }
}
