//! Tests of lossless PGs, `BUFFER_PROFILE`, `BUFFER_PG` / `BUFFER_QUEUE` and the port profile lists.

use super::*;

#[test]
pub(super) fn pfc_on_a_lossy_pg_is_refused() {
    let db = lossless_pgs_with("ingress_lossy_profile");
    let errors = errors(&db);
    assert_eq!(errors.len(), 2, "{errors:#?}");
    assert_eq!(errors[0].location(), "PORT_QOS_MAP|Ethernet0|pfc_enable");
    assert_eq!(errors[0].value, "3,4");
    assert!(errors[0].message.contains("priority 3 is PFC-enabled but its PG 3 has the lossy profile"));
    assert!(compile(&lossless_pgs_with("pg_lossless_100000_5m_profile")).is_ok());
}

#[test]
pub(super) fn lossless_profile_needs_xoff() {
    let mut db = lossless_pgs_with("pg_lossless_100000_5m_profile");
    db.set("BUFFER_PROFILE", "pg_lossless_100000_5m_profile", "xoff", "0");
    assert_error(
        &db,
        "BUFFER_PROFILE|pg_lossless_100000_5m_profile|xoff",
        "0",
        "xoff 0 on a lossless profile",
    );
}

#[test]
pub(super) fn lossless_xoff_fits_in_the_shared_headroom_pool() {
    let mut db = lossless_pgs_with("pg_lossless_100000_5m_profile");
    db.set("BUFFER_POOL", "ingress_lossless_pool", "xoff", "100000");
    assert_error(
        &db,
        "BUFFER_PROFILE|pg_lossless_100000_5m_profile|xoff",
        "165568",
        "more than the shared headroom pool of ingress_lossless_pool can ever give (100,000 bytes)",
    );
}

#[test]
pub(super) fn pfcwd_sw_enable_defaults_to_pfc_enable() {
    let db = lossless_pgs_with("pg_lossless_100000_5m_profile");
    assert_eq!(compile(&db).unwrap().config.qos[0].pfcwd_sw_enable, 0b0001_1000);
    let mut db = lossless_pgs_with("pg_lossless_100000_5m_profile");
    db.set("PORT_QOS_MAP", "Ethernet0", "pfcwd_sw_enable", "");
    assert_eq!(compile(&db).unwrap().config.qos[0].pfcwd_sw_enable, 0);
}

#[test]
pub(super) fn misspelled_threshold_gives_one_error() {
    let mut db = buffers();
    db.set("BUFFER_PROFILE", "q", "pool", "egress_lossy_pool").set("BUFFER_PROFILE", "q", "dynamic_tj", "0");
    assert_error(&db, "BUFFER_PROFILE|q|dynamic_tj", "0", "did you mean dynamic_th?");
}

#[test]
pub(super) fn profile_pool_is_required_and_exists() {
    let mut db = buffers();
    db.set("BUFFER_PROFILE", "new_profile", "dynamic_th", "0");
    assert_error(&db, "BUFFER_PROFILE|new_profile|pool", "", "pool is required");
    db.set("BUFFER_PROFILE", "new_profile", "pool", "[BUFFER_POOL|no_pool]");
    assert_error(&db, "BUFFER_PROFILE|new_profile|pool", "[BUFFER_POOL|no_pool]", "names no BUFFER_POOL");
    db.set("BUFFER_PROFILE", "new_profile", "pool", "[BUFFER_PROFILE|ingress_lossless_pool]");
    assert_error(
        &db,
        "BUFFER_PROFILE|new_profile|pool",
        "[BUFFER_PROFILE|ingress_lossless_pool]",
        "not to BUFFER_POOL",
    );
    for good in ["ingress_lossless_pool", "[BUFFER_POOL|ingress_lossless_pool]"] {
        db.set("BUFFER_PROFILE", "new_profile", "pool", good);
        let config = compile(&db).unwrap().config;
        assert_eq!(profile(&config, "new_profile").pool, pool_index(&config, "ingress_lossless_pool"));
    }
}

#[test]
pub(super) fn a_rejected_pool_raises_no_second_error() {
    // The pool has no size: its profiles are left out without further errors.
    let mut db = buffers();
    db.tables.get_mut("BUFFER_POOL").unwrap().get_mut("egress_lossy_pool").unwrap().remove("size");
    db.set("BUFFER_QUEUE", "Ethernet0|0", "profile", "egress_lossy_profile");
    assert_error(&db, "BUFFER_POOL|egress_lossy_pool|size", "", "size is required");
}

#[test]
pub(super) fn profile_has_exactly_one_threshold() {
    let db = buffers_with("BUFFER_PROFILE", "ingress_lossy_profile", "static_th", "1000");
    assert_error(&db, "BUFFER_PROFILE|ingress_lossy_profile", "ingress_lossy_profile", "both set");
    let db = buffers_with("BUFFER_PROFILE", "new_profile", "pool", "ingress_lossless_pool");
    assert_error(&db, "BUFFER_PROFILE|new_profile", "new_profile", "needs dynamic_th or static_th");
}

#[test]
pub(super) fn dynamic_th_is_in_range() {
    let db = buffers_with("BUFFER_PROFILE", "pg_lossless_100000_5m_profile", "dynamic_th", "9");
    let errors = errors(&db);
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert_eq!(
        errors[0].to_string(),
        "BUFFER_PROFILE|pg_lossless_100000_5m_profile|dynamic_th: 9 is outside -8..7"
    );
    for bad in ["-9", "+1", "1.5", "", "-"] {
        let db = buffers_with("BUFFER_PROFILE", "ingress_lossy_profile", "dynamic_th", bad);
        assert_error(&db, "BUFFER_PROFILE|ingress_lossy_profile|dynamic_th", bad, bad);
    }
    let db = buffers_with("BUFFER_PROFILE", "ingress_lossy_profile", "dynamic_th", "-8");
    let config = compile(&db).unwrap().config;
    assert_eq!(profile(&config, "ingress_lossy_profile").threshold, Threshold::Dynamic(-8));
}

#[test]
pub(super) fn profile_threshold_mode_is_the_profiles_own() {
    // SAI sets the threshold mode per profile: static_th on a dynamic pool (Arista's templates) and
    // dynamic_th on a static one are both accepted and kept as written.
    let mut db = buffers();
    db.set("BUFFER_PROFILE", "q", "pool", "egress_lossless_pool").set(
        "BUFFER_PROFILE",
        "q",
        "dynamic_th",
        "0",
    );
    db.set("BUFFER_PROFILE", "p", "pool", "egress_lossy_pool").set(
        "BUFFER_PROFILE",
        "p",
        "static_th",
        "1000",
    );
    let Compiled { config, warnings } = compile(&db).unwrap();
    assert_eq!(warnings, vec![]);
    assert_eq!(profile(&config, "q").threshold, Threshold::Dynamic(0));
    assert_eq!(profile(&config, "p").threshold, Threshold::Static(1000));
}

#[test]
pub(super) fn profile_size_fits_in_its_pool() {
    let db = buffers_with("BUFFER_PROFILE", "egress_lossy_profile", "size", "9243813");
    assert_error(
        &db,
        "BUFFER_PROFILE|egress_lossy_profile|size",
        "9243813",
        "larger than pool egress_lossy_pool",
    );
    let db = buffers_with("BUFFER_PROFILE", "egress_lossless_profile", "static_th", "15982721");
    assert_warning(&db, "BUFFER_PROFILE|egress_lossless_profile|static_th", "larger than pool");
}

#[test]
pub(super) fn headroom_fields_are_ignored_on_egress_profiles() {
    let db = buffers_with("BUFFER_PROFILE", "egress_lossy_profile", "xoff", "1000");
    assert_warning(&db, "BUFFER_PROFILE|egress_lossy_profile|xoff", "ignored on egress profiles");
    let config = compile(&db).unwrap().config;
    assert_eq!(profile(&config, "egress_lossy_profile").xoff_bytes, 0);
}

#[test]
pub(super) fn profile_sonic_fields_are_accepted() {
    let mut db = buffers_with("BUFFER_PROFILE", "ingress_lossy_profile", "headroom_type", "static");
    db.set("BUFFER_PROFILE", "ingress_lossy_profile", "packet_discard_action", "trim");
    assert_eq!(warnings(&db), vec![]);
    let db = buffers_with("BUFFER_PROFILE", "ingress_lossy_profile", "packet_discard_action", "mark");
    assert_error(&db, "BUFFER_PROFILE|ingress_lossy_profile|packet_discard_action", "mark", "mark");
}

#[test]
pub(super) fn buffer_pg_and_queue_keys_take_port_lists_and_ranges() {
    let mut db =
        buffers_with("BUFFER_PG", "Ethernet0,Ethernet4|3-4", "profile", "pg_lossless_100000_5m_profile");
    db.set("BUFFER_PG", "Ethernet8|0", "profile", "[BUFFER_PROFILE|ingress_lossy_profile]");
    db.set("BUFFER_QUEUE", "Ethernet0|0-7", "profile", "egress_lossy_profile");
    let config = compile(&db).unwrap().config;
    let lossless = Some(profile_index(&config, "pg_lossless_100000_5m_profile"));
    for port in [0, 1] {
        assert_eq!(
            config.port_buffers[port].pg_profile,
            [None, None, None, lossless, lossless, None, None, None]
        );
    }
    assert_eq!(config.port_buffers[2].pg_profile[0], Some(profile_index(&config, "ingress_lossy_profile")));
    assert_eq!(
        config.port_buffers[0].queue_profile,
        [Some(profile_index(&config, "egress_lossy_profile")); 8]
    );
    assert_eq!(config.port_buffers[3], PortBuffers::default());
}

#[test]
pub(super) fn buffer_pg_key_is_checked() {
    let cases = [
        ("Ethernet0|8", "8"),
        ("Ethernet0|4-3", "4-3"),
        ("Ethernet0|x", "x"),
        ("Ethernet99|3", "Ethernet99"),
    ];
    for (key, value) in cases {
        let db = buffers_with("BUFFER_PG", key, "profile", "ingress_lossy_profile");
        assert_error(&db, &format!("BUFFER_PG|{key}"), value, value);
    }
    let db = buffers_with("BUFFER_QUEUE", "Ethernet0", "profile", "egress_lossy_profile");
    assert_error(&db, "BUFFER_QUEUE|Ethernet0", "Ethernet0", "<port>|<queue>");
}

#[test]
pub(super) fn buffer_pg_profile_is_required_and_not_null() {
    let db = buffers_with("BUFFER_PG", "Ethernet0|3-4", "profile", "NULL");
    assert_error(
        &db,
        "BUFFER_PG|Ethernet0|3-4|profile",
        "NULL",
        "NULL (computed) profiles need the control plane's headroom calculator",
    );
    let db = buffers_with("BUFFER_PG", "Ethernet0|3-4", "size", "0");
    let locations: Vec<String> = errors(&db).iter().map(ConfigIssue::location).collect();
    assert_eq!(locations, ["BUFFER_PG|Ethernet0|3-4|size", "BUFFER_PG|Ethernet0|3-4|profile"]);
    let db = buffers_with("BUFFER_QUEUE", "Ethernet0|3-4", "profile", "no_profile");
    assert_error(&db, "BUFFER_QUEUE|Ethernet0|3-4|profile", "no_profile", "names no BUFFER_PROFILE");
}

#[test]
pub(super) fn buffer_pg_needs_ingress_and_buffer_queue_egress_profiles() {
    let db = buffers_with("BUFFER_PG", "Ethernet0|0", "profile", "egress_lossy_profile");
    assert_error(
        &db,
        "BUFFER_PG|Ethernet0|0|profile",
        "egress_lossy_profile",
        "needs a profile of an ingress pool",
    );
    let db = buffers_with("BUFFER_QUEUE", "Ethernet0|0", "profile", "ingress_lossy_profile");
    assert_error(
        &db,
        "BUFFER_QUEUE|Ethernet0|0|profile",
        "ingress_lossy_profile",
        "needs a profile of an egress pool",
    );
}

#[test]
pub(super) fn buffer_pg_slot_is_configured_once() {
    // Keys are read in order: `Ethernet0,Ethernet4|4` comes first (',' sorts before '|').
    let mut db = buffers_with("BUFFER_PG", "Ethernet0|3-4", "profile", "pg_lossless_100000_5m_profile");
    db.set("BUFFER_PG", "Ethernet0,Ethernet4|4", "profile", "ingress_lossy_profile");
    assert_error(
        &db,
        "BUFFER_PG|Ethernet0|3-4",
        "Ethernet0",
        "Ethernet0 PG 4 is already configured by BUFFER_PG|Ethernet0,Ethernet4|4",
    );
    let mut db = buffers_with("BUFFER_QUEUE", "Ethernet0|0-2", "profile", "egress_lossy_profile");
    db.set("BUFFER_QUEUE", "Ethernet0|2", "profile", "egress_lossy_profile");
    assert_error(&db, "BUFFER_QUEUE|Ethernet0|2", "Ethernet0", "queue 2");
}

#[test]
pub(super) fn profile_lists_name_one_profile_per_pool_of_their_direction() {
    let list = "ingress_lossy_profile,[BUFFER_PROFILE|pg_lossless_100000_5m_profile]";
    let db = buffers_with("BUFFER_PORT_INGRESS_PROFILE_LIST", "Ethernet0", "profile_list", list);
    assert_error(
        &db,
        "BUFFER_PORT_INGRESS_PROFILE_LIST|Ethernet0|profile_list",
        list,
        "both use pool ingress_lossless_pool",
    );
    let list = "egress_lossless_profile";
    let db = buffers_with("BUFFER_PORT_INGRESS_PROFILE_LIST", "Ethernet0", "profile_list", list);
    assert_error(&db, "BUFFER_PORT_INGRESS_PROFILE_LIST|Ethernet0|profile_list", list, "ingress pool");
    let list = "ingress_lossy_profile";
    let db = buffers_with("BUFFER_PORT_EGRESS_PROFILE_LIST", "Ethernet0", "profile_list", list);
    assert_error(&db, "BUFFER_PORT_EGRESS_PROFILE_LIST|Ethernet0|profile_list", list, "egress pool");
    let list = "egress_lossless_profile,[BUFFER_PROFILE|egress_lossy_profile]";
    let db = buffers_with("BUFFER_PORT_EGRESS_PROFILE_LIST", "Ethernet0,Ethernet4", "profile_list", list);
    let config = compile(&db).unwrap().config;
    let wanted = vec![
        profile_index(&config, "egress_lossless_profile"),
        profile_index(&config, "egress_lossy_profile"),
    ];
    assert_eq!(config.port_buffers[0].egress_profile_list, wanted);
    assert_eq!(config.port_buffers[1].egress_profile_list, wanted);
    let mut db = db.clone();
    db.set("BUFFER_PORT_EGRESS_PROFILE_LIST", "Ethernet4", "profile_list", "egress_lossy_profile");
    assert_error(&db, "BUFFER_PORT_EGRESS_PROFILE_LIST|Ethernet4", "Ethernet4", "already configured");
}
