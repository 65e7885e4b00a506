//! Tests of the MMU tables (`parse/buffers.rs`) and the ASIC personality's choice: the platform profiles,
//! `BUFFER_POOL` and the ASIC's buffer here, the profiles and their bindings in [`profiles`].

use super::*;

mod profiles;

// Buffers, QoS scheduling, WRED and the PFC watchdog.

use crate::model::config::{
    AsicSettings, BufferPool, BufferProfile, EcnMarkPoint, PfcWdAction, PfcWdGlobal, PfcWdPort,
    PoolDirection, SchedulerParams, SchedulerProfile, Threshold, ThresholdMode, WredColour, WredProfile,
};

pub(super) const TH_BALANCED: &str = include_str!("../../../../../../../configs/profiles/th_balanced.yaml");
pub(super) const SN2700: &str = include_str!("../../../../../../../configs/profiles/sn2700.yaml");

pub(super) fn pool_index(config: &SwitchConfig, name: &str) -> usize {
    config.pools.iter().position(|p| p.name == name).unwrap_or_else(|| panic!("no pool {name}"))
}

pub(super) fn profile_index(config: &SwitchConfig, name: &str) -> usize {
    config.profiles.iter().position(|p| p.name == name).unwrap_or_else(|| panic!("no profile {name}"))
}

pub(super) fn profile<'c>(config: &'c SwitchConfig, name: &str) -> &'c BufferProfile {
    &config.profiles[profile_index(config, name)]
}

pub(super) fn pool(
    name: &str,
    direction: PoolDirection,
    mode: ThresholdMode,
    size: u64,
    xoff: u64,
) -> BufferPool {
    BufferPool { name: name.into(), direction, mode, size_bytes: size, xoff_bytes: xoff }
}

/// A profile of `pool` with no headroom.
pub(super) fn plain_profile(
    config: &SwitchConfig,
    name: &str,
    pool: &str,
    size: u64,
    threshold: Threshold,
) -> BufferProfile {
    BufferProfile {
        name: name.into(),
        pool: pool_index(config, pool),
        size_bytes: size,
        threshold,
        xon_bytes: 0,
        xoff_bytes: 0,
        xon_offset_bytes: 0,
    }
}

pub(super) fn azure_lossless(green_min: u64) -> WredProfile {
    let colour =
        |min| WredColour { enabled: true, min_bytes: min, max_bytes: 2_097_152, drop_probability_percent: 5 };
    WredProfile {
        name: "AZURE_LOSSLESS".into(),
        ecn: [true; 3],
        colours: [colour(green_min), colour(1_048_576), colour(1_048_576)],
        weight: 0,
    }
}

pub(super) fn dwrr(name: &str, weight: u8) -> SchedulerProfile {
    SchedulerProfile { name: name.into(), params: SchedulerParams { weight, ..SchedulerParams::default() } }
}

/// The QUEUE, SCHEDULER, WRED and PFC_WD parts both platform profiles share (qos_config.j2).
pub(super) fn assert_t0_scheduling(config: &SwitchConfig, green_min: u64) {
    assert_eq!(config.wred_profiles, vec![azure_lossless(green_min)]);
    assert_eq!(config.schedulers, vec![dwrr("scheduler.0", 14), dwrr("scheduler.1", 15)]);
    for buffers in &config.port_buffers {
        let s = |i| Some(i);
        assert_eq!(buffers.queue_scheduler, [s(0), s(0), s(0), s(1), s(1), s(0), s(0), None]);
        assert_eq!(buffers.queue_wred, [None, None, None, s(0), s(0), None, None, None]);
        assert_eq!(buffers.port_scheduler, None);
    }
    let watchdog = PfcWdPort {
        action: PfcWdAction::Drop,
        detection_time_ms: 400,
        restoration_time_ms: Some(400),
        pfc_stat_history: false,
    };
    assert_eq!(config.pfc_wd, vec![Some(watchdog); 5]);
    assert_eq!(config.pfc_wd_global, PfcWdGlobal { poll_interval_ms: 100, ..PfcWdGlobal::default() });
    assert!(config.qos.iter().all(|q| q.pfc_enable == 0b0001_1000 && q.pfcwd_sw_enable == 0b0001_1000));
}

#[test]
pub(super) fn th_balanced_profile_compiles_with_its_numbers() {
    let Compiled { config, warnings } = compile(&yaml(TH_BALANCED)).unwrap();
    assert_eq!(warnings, vec![]);
    assert_eq!(config.asic, AsicSettings::of(AsicFamily::Tomahawk));
    assert_eq!(config.ports.len(), 5);
    assert_eq!(config.routes.len(), 2);
    use PoolDirection::{Egress, Ingress};
    use ThresholdMode::{Dynamic, Static};
    assert_eq!(
        config.pools,
        vec![
            pool("egress_lossless_pool", Egress, Static, 15_982_720, 0),
            pool("egress_lossy_pool", Egress, Dynamic, 9_243_812, 0),
            pool("ingress_lossless_pool", Ingress, Dynamic, 10_875_072, 4_194_112),
        ]
    );
    assert_eq!(config.profiles.len(), 5);
    let lossy_in =
        plain_profile(&config, "ingress_lossy_profile", "ingress_lossless_pool", 0, Threshold::Dynamic(3));
    assert_eq!(*profile(&config, "ingress_lossy_profile"), lossy_in);
    let lossless_out = plain_profile(
        &config,
        "egress_lossless_profile",
        "egress_lossless_pool",
        1518,
        Threshold::Static(15_982_720),
    );
    assert_eq!(*profile(&config, "egress_lossless_profile"), lossless_out);
    let lossy_out =
        plain_profile(&config, "egress_lossy_profile", "egress_lossy_pool", 1518, Threshold::Dynamic(3));
    assert_eq!(*profile(&config, "egress_lossy_profile"), lossy_out);
    let pg_lossless = |name: &str, xoff| BufferProfile {
        xon_bytes: 2288,
        xoff_bytes: xoff,
        xon_offset_bytes: 2288,
        ..plain_profile(&config, name, "ingress_lossless_pool", 1248, Threshold::Dynamic(0))
    };
    let pg_100g = pg_lossless("pg_lossless_100000_40m_profile", 177_632);
    assert_eq!(*profile(&config, "pg_lossless_100000_40m_profile"), pg_100g);
    let pg_25g = pg_lossless("pg_lossless_25000_40m_profile", 53_248);
    assert_eq!(*profile(&config, "pg_lossless_25000_40m_profile"), pg_25g);

    let p = |name| Some(profile_index(&config, name));
    let (lossy_out, lossless_out) = (p("egress_lossy_profile"), p("egress_lossless_profile"));
    for (port, buffers) in config.ports.iter().zip(&config.port_buffers) {
        let lossless_pg = p(if port.speed_mbps == 100_000 {
            "pg_lossless_100000_40m_profile"
        } else {
            "pg_lossless_25000_40m_profile"
        });
        let lossy_pg = p("ingress_lossy_profile");
        assert_eq!(buffers.pg_profile, [lossy_pg, None, None, lossless_pg, lossless_pg, None, None, None]);
        let queues =
            [lossy_out, lossy_out, lossy_out, lossless_out, lossless_out, lossy_out, lossy_out, None];
        assert_eq!(buffers.queue_profile, queues);
        assert!(buffers.ingress_profile_list.is_empty() && buffers.egress_profile_list.is_empty());
    }
    assert_t0_scheduling(&config, 250_000);
}

#[test]
pub(super) fn sn2700_profile_compiles_with_its_numbers() {
    let Compiled { config, warnings } = compile(&yaml(SN2700)).unwrap();
    assert_eq!(warnings, vec![]);
    assert_eq!(config.asic, AsicSettings::of(AsicFamily::Spectrum1));
    use PoolDirection::{Egress, Ingress};
    use ThresholdMode::{Dynamic, Static};
    assert_eq!(
        config.pools,
        vec![
            pool("egress_lossless_pool", Egress, Dynamic, 13_945_824, 0),
            pool("egress_lossy_pool", Egress, Dynamic, 3_302_912, 0),
            pool("ingress_lossless_pool", Ingress, Dynamic, 3_302_912, 0),
            pool("ingress_lossy_pool", Ingress, Dynamic, 3_302_912, 0),
            pool("ingress_zero_pool", Ingress, Static, 0, 0),
        ]
    );
    let expected = [
        ("ingress_lossless_profile", "ingress_lossless_pool", 0, 7),
        ("ingress_lossy_profile", "ingress_lossy_pool", 0, 3),
        ("egress_lossless_profile", "egress_lossless_pool", 0, 7),
        ("egress_lossy_profile", "egress_lossy_pool", 9216, 7),
        ("q_lossy_profile", "egress_lossy_pool", 0, 3),
    ];
    for (name, pool_name, size, dynamic_th) in expected {
        let wanted = plain_profile(&config, name, pool_name, size, Threshold::Dynamic(dynamic_th));
        assert_eq!(*profile(&config, name), wanted);
    }
    for (name, size, xoff) in
        [("pg_lossless_100000_5m_profile", 50_176, 30_720), ("pg_lossless_25000_5m_profile", 49_152, 29_696)]
    {
        let wanted = BufferProfile {
            xon_bytes: 19_456,
            xoff_bytes: xoff,
            ..plain_profile(&config, name, "ingress_lossless_pool", size, Threshold::Dynamic(0))
        };
        assert_eq!(*profile(&config, name), wanted);
    }
    let p = |name| Some(profile_index(&config, name));
    let q_lossy = p("q_lossy_profile");
    for (port, buffers) in config.ports.iter().zip(&config.port_buffers) {
        let lossless_pg = p(if port.speed_mbps == 100_000 {
            "pg_lossless_100000_5m_profile"
        } else {
            "pg_lossless_25000_5m_profile"
        });
        let lossy_pg = p("ingress_lossy_profile");
        assert_eq!(buffers.pg_profile, [lossy_pg, None, None, lossless_pg, lossless_pg, None, None, None]);
        let lossless_q = p("egress_lossless_profile");
        let queues = [q_lossy, q_lossy, q_lossy, lossless_q, lossless_q, q_lossy, q_lossy, None];
        assert_eq!(buffers.queue_profile, queues);
        let list = |names: [&str; 2]| names.map(|n| profile_index(&config, n)).to_vec();
        assert_eq!(buffers.ingress_profile_list, list(["ingress_lossless_profile", "ingress_lossy_profile"]));
        assert_eq!(buffers.egress_profile_list, list(["egress_lossless_profile", "egress_lossy_profile"]));
    }
    // PFC_PRIORITY_TO_PRIORITY_GROUP_MAP AZURE {3: 3, 4: 4}, unlisted priorities to themselves.
    assert!(config.qos.iter().all(|q| q.pfc_to_pg == [0, 1, 2, 3, 4, 5, 6, 7]));
    assert_t0_scheduling(&config, 1_048_576);
}

#[test]
pub(super) fn shared_limit_is_the_single_consumer_steady_state() {
    use crate::model::config::parse::buffers::shared_limit_bytes;
    let pool = pool("p", PoolDirection::Ingress, ThresholdMode::Dynamic, 10_875_072, 0);
    let with = |threshold| BufferProfile {
        name: "x".into(),
        pool: 0,
        size_bytes: 0,
        threshold,
        xon_bytes: 0,
        xoff_bytes: 0,
        xon_offset_bytes: 0,
    };
    // alpha 1: half the pool; alpha 8: 8/9; alpha 1/2: 1/3; alpha 1/256: 1/257; static 0: no limit.
    assert_eq!(shared_limit_bytes(&with(Threshold::Dynamic(0)), &pool), 5_437_536);
    assert_eq!(shared_limit_bytes(&with(Threshold::Dynamic(3)), &pool), 9_666_730);
    assert_eq!(shared_limit_bytes(&with(Threshold::Dynamic(-1)), &pool), 3_625_024);
    assert_eq!(shared_limit_bytes(&with(Threshold::Dynamic(-8)), &pool), 42_315);
    assert_eq!(shared_limit_bytes(&with(Threshold::Static(0)), &pool), 10_875_072);
    assert_eq!(shared_limit_bytes(&with(Threshold::Static(1000)), &pool), 1000);
}

#[test]
pub(super) fn parse_index_range_takes_a_number_or_a_range() {
    assert_eq!(parse_index_range("3", "PG"), Ok(3..=3));
    assert_eq!(parse_index_range("3-4", "PG"), Ok(3..=4));
    assert_eq!(parse_index_range("0-7", "queue"), Ok(0..=7));
    for bad in ["8", "3-8", "-1", "3-", "a-b", "3-4-5", ""] {
        assert!(parse_index_range(bad, "PG").is_err(), "{bad}");
    }
    assert!(parse_index_range("4-3", "PG").unwrap_err().contains("empty range"));
}

/// A small TH-like buffer setup (no lossless priorities: BASE has no PORT_QOS_MAP).
pub(super) const BUFFERS: &str = r#"
BUFFER_POOL:
  ingress_lossless_pool: {type: ingress, mode: dynamic, size: 10875072, xoff: 4194112}
  egress_lossless_pool: {type: egress, mode: static, size: 15982720}
  egress_lossy_pool: {type: egress, mode: dynamic, size: 9243812}
BUFFER_PROFILE:
  ingress_lossy_profile: {pool: ingress_lossless_pool, size: 0, dynamic_th: 3}
  pg_lossless_100000_5m_profile:
    {pool: ingress_lossless_pool, size: 1248, xon: 2288, xoff: 165568, dynamic_th: 0, xon_offset: 2288}
  egress_lossless_profile: {pool: egress_lossless_pool, size: 1518, static_th: 15982720}
  egress_lossy_profile: {pool: egress_lossy_pool, size: 1518, dynamic_th: 3}
"#;

pub(super) fn buffers() -> ConfigDb {
    yaml(&format!("{BASE}{BUFFERS}"))
}

pub(super) fn buffers_with(table: &str, key: &str, field: &str, value: &str) -> ConfigDb {
    let mut db = buffers();
    db.set(table, key, field, value);
    db
}

pub(super) fn warnings(db: &ConfigDb) -> Vec<ConfigIssue> {
    compile(db).unwrap_or_else(|e| panic!("{e}")).warnings
}

/// Compiles without errors, with exactly one warning, at `location`, with `mentions` in its message.
pub(super) fn assert_warning(db: &ConfigDb, location: &str, mentions: &str) {
    let warnings = warnings(db);
    assert_eq!(warnings.len(), 1, "{warnings:#?}");
    assert_eq!(warnings[0].location(), location, "{}", warnings[0]);
    assert!(warnings[0].message.contains(mentions), "{:?} does not mention {mentions:?}", warnings[0]);
}

#[test]
pub(super) fn buffer_base_compiles() {
    let Compiled { config, warnings } = compile(&buffers()).unwrap();
    assert_eq!(warnings, vec![]);
    assert_eq!(config.pools.len(), 3);
    assert_eq!(config.profiles.len(), 4);
    assert!(config.port_buffers.iter().all(|b| *b == PortBuffers::default()));
    assert_eq!(config.pfc_wd, vec![None; 4]);
}

#[test]
pub(super) fn buffer_asic_settings() {
    let mut db = base();
    for (field, value) in [
        ("cell_size", "96"),
        ("mmu_size", "16777216"),
        ("ecn_mark_point", "dequeue"),
        ("pfc_pause_quanta", "1000"),
        ("pfc_refresh_percent", "80"),
        ("random_seed", "18446744073709551615"),
    ] {
        db.set("BUFFER_ASIC", "global", field, value);
    }
    let asic = compile(&db).unwrap().config.asic;
    let expected = AsicSettings {
        personality: AsicFamily::Generic.personality(),
        cell_bytes: 96,
        mmu_size_bytes: Some(16_777_216),
        ecn_mark_point: EcnMarkPoint::Dequeue,
        pfc_pause_quanta: 1000,
        pfc_refresh_percent: 80,
        random_seed: u64::MAX,
    };
    assert_eq!(asic, expected);
}

#[test]
pub(super) fn asic_personality_from_device_metadata() {
    let family = |field: &str, value: &str| {
        let db = base_with("DEVICE_METADATA", "localhost", field, value);
        compile(&db).map(|c| (c.config.asic, c.warnings))
    };
    let (asic, warnings) = family("hwsku", "Arista-7050CX3-32S-C32").unwrap();
    assert_eq!((asic.family(), asic.cell_bytes, warnings.len()), (AsicFamily::Trident3, 256, 0));
    let (asic, _) = family("platform", "x86_64-mlnx_msn2700-r0").unwrap();
    assert_eq!((asic.family(), asic.cell_bytes), (AsicFamily::Spectrum1, 96));
    let (asic, _) = family("asic", "th").unwrap();
    assert_eq!((asic.family(), asic.personality.partitions()), (AsicFamily::Tomahawk, 4));
    let (asic, warnings) = family("hwsku", "DellEMC-Z9332f-O32").unwrap();
    assert_eq!(asic.family(), AsicFamily::Generic);
    assert_eq!(warnings.len(), 1);
    assert_eq!(warnings[0].location(), "DEVICE_METADATA|localhost|hwsku");
    assert!(warnings[0].message.contains("no ASIC personality for DellEMC-Z9332f-O32"), "{}", warnings[0]);
    assert_error(
        &base_with("DEVICE_METADATA", "localhost", "asic", "th9"),
        "DEVICE_METADATA|localhost|asic",
        "th9",
        "not an ASIC family",
    );
    // BUFFER_ASIC overrides the family's cell size.
    let mut db = base_with("DEVICE_METADATA", "localhost", "hwsku", "Arista-7050CX3-32S-C32");
    db.set("BUFFER_ASIC", "global", "cell_size", "208");
    assert_eq!(compile(&db).unwrap().config.asic.cell_bytes, 208);
}

#[test]
pub(super) fn pools_fit_the_asic_buffer() {
    let mut db = buffers_with("DEVICE_METADATA", "localhost", "asic", "spc1");
    assert!(compile(&db).is_ok());
    db.set("BUFFER_POOL", "egress_lossless_pool", "size", "20000000");
    assert_error(
        &db,
        "BUFFER_POOL|egress_lossless_pool|size",
        "20000000",
        "more than the NVIDIA Spectrum buffer",
    );
}

#[test]
pub(super) fn buffer_asic_fields_are_checked() {
    let cases = [
        ("cell_size", "0"),
        ("cell_size", "16385"),
        ("mmu_size", "16M"),
        ("ecn_mark_point", "egress"),
        ("pfc_pause_quanta", "0"),
        ("pfc_pause_quanta", "65536"),
        ("pfc_refresh_percent", "0"),
        ("pfc_refresh_percent", "101"),
        ("random_seed", "-1"),
    ];
    for (field, bad) in cases {
        let db = base_with("BUFFER_ASIC", "global", field, bad);
        assert_error(&db, &format!("BUFFER_ASIC|global|{field}"), bad, bad);
    }
}

#[test]
pub(super) fn buffer_asic_key_is_global() {
    let db = base_with("BUFFER_ASIC", "GLOBAL", "cell_size", "208");
    assert_error(&db, "BUFFER_ASIC|GLOBAL", "GLOBAL", "global");
}

#[test]
pub(super) fn pool_type_is_ingress_or_egress() {
    let db = buffers_with("BUFFER_POOL", "egress_lossy_pool", "type", "both");
    assert_error(&db, "BUFFER_POOL|egress_lossy_pool|type", "both", "not supported");
    let db = buffers_with("BUFFER_POOL", "new_pool", "size", "1000");
    assert_error(&db, "BUFFER_POOL|new_pool|type", "", "type is required");
}

#[test]
pub(super) fn pool_size_is_required() {
    let db = buffers_with("BUFFER_POOL", "new_pool", "type", "ingress");
    assert_error(&db, "BUFFER_POOL|new_pool|size", "", "size is required");
    let db = buffers_with("BUFFER_POOL", "egress_lossy_pool", "size", "9M");
    assert_error(&db, "BUFFER_POOL|egress_lossy_pool|size", "9M", "9M");
}

#[test]
pub(super) fn pool_mode_is_static_or_dynamic() {
    let db = buffers_with("BUFFER_POOL", "egress_lossy_pool", "mode", "shared");
    assert_error(&db, "BUFFER_POOL|egress_lossy_pool|mode", "shared", "static, dynamic");
    // The default is dynamic.
    let mut db = base();
    db.set("BUFFER_POOL", "p", "type", "ingress").set("BUFFER_POOL", "p", "size", "1000");
    assert_eq!(compile(&db).unwrap().config.pools[0].mode, ThresholdMode::Dynamic);
}

#[test]
pub(super) fn pool_xoff_only_on_ingress() {
    let db = buffers_with("BUFFER_POOL", "egress_lossy_pool", "xoff", "1000");
    assert_error(&db, "BUFFER_POOL|egress_lossy_pool|xoff", "1000", "only allowed on ingress pools");
    assert!(compile(&buffers_with("BUFFER_POOL", "egress_lossy_pool", "xoff", "0")).is_ok());
}

#[test]
pub(super) fn pool_percentage_is_not_modelled() {
    let db = buffers_with("BUFFER_POOL", "egress_lossy_pool", "percentage", "50");
    assert_warning(&db, "BUFFER_POOL|egress_lossy_pool|percentage", "not modelled");
}

#[test]
pub(super) fn pool_xoff_fits_in_the_pool() {
    let db = buffers_with("BUFFER_POOL", "ingress_lossless_pool", "xoff", "99999999");
    assert_error(&db, "BUFFER_POOL|ingress_lossless_pool|xoff", "99999999", "larger than the pool's size");
}

/// `buffers()` with lossless PGs 3-4 on Ethernet0 (pfc_enable 3,4) using `profile`.
pub(super) fn lossless_pgs_with(profile: &str) -> ConfigDb {
    let mut db = buffers();
    db.set("PORT_QOS_MAP", "Ethernet0", "pfc_enable", "3,4");
    db.set("BUFFER_PG", "Ethernet0|3-4", "profile", profile);
    db
}

pub(super) const WRED: &str = r#"
WRED_PROFILE:
  AZURE_LOSSLESS:
    ecn: ecn_all
    wred_green_enable: "true"
    wred_yellow_enable: "true"
    wred_red_enable: "true"
    green_min_threshold: 250000
    green_max_threshold: 2097152
    yellow_min_threshold: 1048576
    yellow_max_threshold: 2097152
    red_min_threshold: 1048576
    red_max_threshold: 2097152
    green_drop_probability: 5
    yellow_drop_probability: 5
    red_drop_probability: 5
"#;
