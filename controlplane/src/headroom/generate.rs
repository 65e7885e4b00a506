//! What SONiC's buffer manager does for lossless PGs left to it: `BUFFER_PG` entries whose profile is
//! `NULL` (sonic-swss `cfgmgr/buffermgr.cpp` with a lookup table, `cfgmgr/buffermgrdyn.cpp` with the
//! dynamic formula).

use lossless_dataplane::model::config::{ConfigDb, ConfigIssue};

use super::{
    DEFAULT_CABLE_LENGTH_M, DEFAULT_PORT_MTU, HeadroomModel, INGRESS_LOSSLESS_POOL, PortParams, field_map,
    lookup::parse_cable_m, port_lanes, strip_reference,
};

/// buffermgrd's words (`cfgmgr/buffermgr.cpp`).
fn no_lookup_row(port: &PortParams) -> String {
    format!("No PG profile configured for speed {} and cable length {}m", port.speed_mbps, port.cable_m)
}

/// A `BUFFER_PG` entry whose headroom is to be computed.
struct PgRequest<'a> {
    key: &'a str,
    ports: Vec<&'a str>,
    index: &'a str,
    /// `profile` as written (empty when absent), for messages.
    value: &'a str,
    pool: String,
    /// A `headroom_type: dynamic` profile's own `dynamic_th`; `None`: the default.
    threshold: Option<i64>,
}

/// What SONiC's buffer manager does for lossless PGs left to it:
///
/// - Which PGs: every `BUFFER_PG|<ports>|<pgs>` whose `profile` is `NULL` or absent (the dynamic model's
///   "compute it for me"), and every one referring to a profile with `headroom_type: dynamic` (computed
///   headroom, that profile's `dynamic_th`). PGs are not derived from `pfc_enable`: the config lists them,
///   as SONiC's `buffers_config.j2` does in the dynamic model.
/// - Inputs: `PORT|<port>|speed` (required), `mtu` (default 9100) and `lanes`; the port's field in any
///   `CABLE_LENGTH` entry (normally `AZURE`), default [`DEFAULT_CABLE_LENGTH_M`]; a cable of `0m` is an error
///   (SONiC creates no lossless profile for it). Admin state is not considered.
/// - Profile: `pg_lossless_<speed>_<cable>m_profile` with `pool`, `xon`, `xoff`, `size`, and the threshold.
///   Lookup: the row's `threshold` in the `<pool mode>_th` field and its `xon_offset` if any, as
///   buffermgrd. Dynamic and IEEE: `dynamic_th` = `DEFAULT_LOSSLESS_BUFFER_PARAMETER|default_dynamic_th`
///   (default 0), and the name gets `_mtu<mtu>` when the port MTU is not 9100, as buffermgrdyn. Any model
///   appends `_th<n>` when a `headroom_type: dynamic` profile asks for a threshold other than the default;
///   the dynamic model then `_8lane` for an 8-lane port of a Spectrum-3 at a speed other than 400G or of a
///   Spectrum-4/5 other than 800G (buffermgrdyn `getDynamicProfileName`, by model number 4xxx/5xxx).
///   An existing profile of that name is reused, not rewritten.
/// - The PG then refers to the profile; a key naming several ports is split into one key per port, since
///   each port may need its own profile.
///
/// All or nothing: on any error `db` is left as it was and every error is returned, located at the
/// `TABLE|key|field` it is about. On success, the names of the profiles created, in creation order.
pub fn generate_lossless_profiles(
    db: &mut ConfigDb,
    model: &HeadroomModel,
) -> Result<Vec<String>, Vec<ConfigIssue>> {
    let mut errors = Vec::new();
    let requests = pg_requests(db, &mut errors);
    let default_threshold = default_dynamic_th(db, &mut errors);
    let mut out = db.clone();
    let mut created = Vec::new();
    for request in &requests {
        let Some(pool_mode) = pool_mode(db, request, &mut errors) else { continue };
        let split = request.ports.len() > 1;
        if split && let Some(table) = out.tables.get_mut("BUFFER_PG") {
            table.remove(request.key);
        }
        for &port in &request.ports {
            let pg_key = format!("{port}|{}", request.index);
            if split && field_map(db, "BUFFER_PG", &pg_key).is_some() {
                errors.push(ConfigIssue::new(
                    "BUFFER_PG",
                    request.key,
                    "",
                    request.value,
                    format!("cannot give {port} its own profile: BUFFER_PG|{pg_key} already exists"),
                ));
                continue;
            }
            let profile = port_params(db, port, request).and_then(|params| {
                lossless_profile(model, port, &params, request, default_threshold, pool_mode)
            });
            let (name, fields) = match profile {
                Ok(profile) => profile,
                Err(issue) => {
                    errors.push(issue);
                    continue;
                }
            };
            if field_map(&out, "BUFFER_PROFILE", &name).is_none() {
                for (field, value) in fields {
                    out.set("BUFFER_PROFILE", &name, field, value);
                }
                created.push(name.clone());
            }
            out.set("BUFFER_PG", &pg_key, "profile", name);
        }
    }
    if errors.is_empty() {
        *db = out;
        Ok(created)
    } else {
        errors.sort();
        errors.dedup();
        Err(errors)
    }
}

/// The config compiler's `dynamic_th` rule, widened for the profile names' arithmetic.
fn parse_dynamic_th(value: &str) -> Result<i64, String> {
    lossless_dataplane::model::config::parse_dynamic_th(value).map(i64::from)
}

fn pg_requests<'a>(db: &'a ConfigDb, errors: &mut Vec<ConfigIssue>) -> Vec<PgRequest<'a>> {
    let Some(pgs) = db.tables.get("BUFFER_PG") else { return Vec::new() };
    let mut requests = Vec::new();
    for (key, fields) in pgs {
        // A key without an index is the config compiler's to report.
        let Some((ports, index)) = key.split_once('|') else { continue };
        let value = fields.get("profile").map(String::as_str).unwrap_or_default();
        let (pool, threshold) = if value.is_empty() || value == "NULL" {
            (INGRESS_LOSSLESS_POOL.to_owned(), None)
        } else {
            let name = strip_reference("BUFFER_PROFILE", value);
            let Some(profile) = field_map(db, "BUFFER_PROFILE", name) else { continue };
            if profile.get("headroom_type").map(String::as_str) != Some("dynamic") {
                continue;
            }
            let pool =
                profile.get("pool").map_or(INGRESS_LOSSLESS_POOL, |p| strip_reference("BUFFER_POOL", p));
            let threshold = match profile.get("dynamic_th").map(|th| parse_dynamic_th(th)) {
                None => None,
                Some(Ok(th)) => Some(th),
                Some(Err(message)) => {
                    let th = &profile["dynamic_th"];
                    errors.push(ConfigIssue::new("BUFFER_PROFILE", name, "dynamic_th", th, message));
                    continue;
                }
            };
            (pool.to_owned(), threshold)
        };
        requests.push(PgRequest { key, ports: ports.split(',').collect(), index, value, pool, threshold });
    }
    requests
}

/// `DEFAULT_LOSSLESS_BUFFER_PARAMETER|<first key>|default_dynamic_th`, default 0.
fn default_dynamic_th(db: &ConfigDb, errors: &mut Vec<ConfigIssue>) -> i64 {
    let entry = db.tables.get("DEFAULT_LOSSLESS_BUFFER_PARAMETER").and_then(|t| t.iter().next());
    let Some((key, Some(value))) = entry.map(|(key, fields)| (key, fields.get("default_dynamic_th"))) else {
        return 0;
    };
    parse_dynamic_th(value).unwrap_or_else(|message| {
        errors.push(ConfigIssue::new(
            "DEFAULT_LOSSLESS_BUFFER_PARAMETER",
            key,
            "default_dynamic_th",
            value,
            message,
        ));
        0
    })
}

/// The `mode` of the pool the generated profile will use (`dynamic` when unset), which must exist.
fn pool_mode(db: &ConfigDb, request: &PgRequest, errors: &mut Vec<ConfigIssue>) -> Option<&'static str> {
    let Some(pool) = field_map(db, "BUFFER_POOL", &request.pool) else {
        errors.push(ConfigIssue::new(
            "BUFFER_PG",
            request.key,
            "profile",
            request.value,
            format!(
                "the computed lossless profile would use BUFFER_POOL|{}, which does not exist",
                request.pool
            ),
        ));
        return None;
    };
    Some(if pool.get("mode").map(String::as_str) == Some("static") { "static" } else { "dynamic" })
}

fn port_params(db: &ConfigDb, port: &str, request: &PgRequest) -> Result<PortParams, ConfigIssue> {
    let Some(fields) = field_map(db, "PORT", port) else {
        return Err(ConfigIssue::new(
            "BUFFER_PG",
            request.key,
            "",
            "",
            format!("{port:?} is not a port (there is no PORT|{port})"),
        ));
    };
    let speed_mbps = match fields.get("speed") {
        None => {
            let message =
                format!("missing: the headroom of BUFFER_PG|{} depends on the port speed", request.key);
            return Err(ConfigIssue::new("PORT", port, "speed", "", message));
        }
        Some(text) => match text.parse::<u32>() {
            Ok(speed) if speed > 0 => speed,
            _ => {
                return Err(ConfigIssue::new(
                    "PORT",
                    port,
                    "speed",
                    text,
                    format!("{text:?} is not a speed in Mb/s"),
                ));
            }
        },
    };
    let mtu = match fields.get("mtu") {
        None => DEFAULT_PORT_MTU,
        Some(text) => text.parse::<u32>().map_err(|_| {
            ConfigIssue::new("PORT", port, "mtu", text, format!("{text:?} is not an MTU in bytes"))
        })?,
    };
    let cable = db
        .tables
        .get("CABLE_LENGTH")
        .and_then(|t| t.iter().find_map(|(key, fields)| fields.get(port).map(|v| (key, v))));
    let cable_m = match cable {
        None => DEFAULT_CABLE_LENGTH_M,
        Some((key, text)) => {
            let issue = |message: String| ConfigIssue::new("CABLE_LENGTH", key, port, text, message);
            match parse_cable_m(text).map_err(issue)? {
                0 => {
                    return Err(issue(
                        "0m: SONiC creates no lossless profile for a port with cable length 0m".into(),
                    ));
                }
                metres => metres,
            }
        }
    };
    Ok(PortParams { speed_mbps, cable_m, mtu, lanes: port_lanes(db, port) })
}

/// A generated profile's name and fields.
type GeneratedProfile = (String, Vec<(&'static str, String)>);

fn lossless_profile(
    model: &HeadroomModel,
    port: &str,
    params: &PortParams,
    request: &PgRequest,
    default_threshold: i64,
    pool_mode: &str,
) -> Result<GeneratedProfile, ConfigIssue> {
    let issue =
        |message: String| ConfigIssue::new("BUFFER_PG", request.key, "profile", request.value, message);
    let mut name = format!("pg_lossless_{}_{}m", params.speed_mbps, params.cable_m);
    let mut fields = vec![("pool", request.pool.clone())];
    let (headroom, default_threshold, threshold_field) = match model {
        HeadroomModel::Lookup(table) => {
            let row = table.lookup(params.speed_mbps, params.cable_m).ok_or_else(|| {
                issue(format!(
                    "Unable to create/update PG profile for port {port}. {}",
                    no_lookup_row(params)
                ))
            })?;
            if let Some(offset) = row.xon_offset {
                fields.push(("xon_offset", offset.to_string()));
            }
            let field = if pool_mode == "static" { "static_th" } else { "dynamic_th" };
            (row.headroom(), row.threshold, field)
        }
        HeadroomModel::Dynamic(..) | HeadroomModel::Ieee => {
            let headroom = model.headroom(params).map_err(|e| issue(format!("{port}: {e}")))?;
            if params.mtu != DEFAULT_PORT_MTU {
                name.push_str(&format!("_mtu{}", params.mtu));
            }
            (headroom, default_threshold, "dynamic_th")
        }
    };
    let threshold = request.threshold.unwrap_or(default_threshold);
    if threshold != default_threshold {
        name.push_str(&format!("_th{threshold}"));
    }
    if let HeadroomModel::Dynamic(asic, ..) = model
        && params.lanes == 8
        && asic.asic.native_8lane_speed().is_some_and(|speed| speed != params.speed_mbps)
    {
        name.push_str("_8lane");
    }
    name.push_str("_profile");
    fields.extend([
        ("xon", headroom.xon.to_string()),
        ("xoff", headroom.xoff.to_string()),
        ("size", headroom.size.to_string()),
        (threshold_field, threshold.to_string()),
    ]);
    Ok((name, fields))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::headroom::{Asic, AsicParams, LookupTable, TrafficPattern, field, sonic_dynamic};
    use lossless_dataplane::model::config::compile;

    fn small_db() -> ConfigDb {
        let mut db = ConfigDb::default();
        db.set("PORT", "Ethernet0", "speed", "100000")
            .set("PORT", "Ethernet4", "speed", "25000")
            .set("PORT", "Ethernet8", "speed", "100000")
            .set("PORT", "Ethernet8", "mtu", "4200")
            .set("CABLE_LENGTH", "AZURE", "Ethernet0", "40m")
            .set("CABLE_LENGTH", "AZURE", "Ethernet4", "300m")
            .set("BUFFER_POOL", "ingress_lossless_pool", "type", "ingress")
            .set("BUFFER_POOL", "ingress_lossless_pool", "mode", "dynamic")
            .set("BUFFER_POOL", "ingress_lossless_pool", "size", "10875072")
            .set("BUFFER_PROFILE", "ingress_lossy_profile", "pool", "ingress_lossless_pool")
            .set("BUFFER_PROFILE", "ingress_lossy_profile", "dynamic_th", "3")
            .set("BUFFER_PG", "Ethernet0|0", "profile", "ingress_lossy_profile")
            .set("BUFFER_PG", "Ethernet0,Ethernet4|3-4", "profile", "NULL");
        db
    }

    fn fields(db: &ConfigDb, table: &str, key: &str) -> Vec<(String, String)> {
        let entry = field_map(db, table, key).unwrap_or_else(|| panic!("no {table}|{key}"));
        entry.iter().map(|(f, v)| (f.clone(), v.clone())).collect()
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter().map(|(f, v)| (f.to_string(), v.to_string())).collect()
    }

    #[test]
    fn null_pgs_get_lookup_profiles() {
        let mut db = small_db();
        let created = generate_lossless_profiles(&mut db, &HeadroomModel::Lookup(LookupTable::th_balanced()));
        assert_eq!(created.unwrap(), ["pg_lossless_100000_40m_profile", "pg_lossless_25000_300m_profile"]);
        assert_eq!(
            fields(&db, "BUFFER_PROFILE", "pg_lossless_100000_40m_profile"),
            pairs(&[
                ("dynamic_th", "0"),
                ("pool", "ingress_lossless_pool"),
                ("size", "1248"),
                ("xoff", "177632"),
                ("xon", "2288"),
                ("xon_offset", "2288"),
            ])
        );
        assert_eq!(field(&db, "BUFFER_PROFILE", "pg_lossless_25000_300m_profile", "xoff").unwrap(), "79040");
        // The two-port key became one key per port; the lossy PG is untouched.
        let pgs: Vec<(&str, &str)> =
            db.tables["BUFFER_PG"].iter().map(|(k, f)| (k.as_str(), f["profile"].as_str())).collect();
        assert_eq!(
            pgs,
            [
                ("Ethernet0|0", "ingress_lossy_profile"),
                ("Ethernet0|3-4", "pg_lossless_100000_40m_profile"),
                ("Ethernet4|3-4", "pg_lossless_25000_300m_profile"),
            ]
        );
        // Nothing left to compute: a second run changes nothing.
        let before = db.clone();
        assert_eq!(
            generate_lossless_profiles(&mut db, &HeadroomModel::Lookup(LookupTable::th_balanced())),
            Ok(vec![])
        );
        assert_eq!(db, before);
    }

    #[test]
    fn unknown_cable_is_sonics_error_and_changes_nothing() {
        let mut db = small_db();
        db.set("CABLE_LENGTH", "AZURE", "Ethernet0", "7m");
        let before = db.clone();
        let errors =
            generate_lossless_profiles(&mut db, &HeadroomModel::Lookup(LookupTable::sn2700())).unwrap_err();
        assert_eq!(db, before);
        let messages: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(
            messages,
            [
                "BUFFER_PG|Ethernet0,Ethernet4|3-4|profile: Unable to create/update PG profile for port Ethernet0. \
                 No PG profile configured for speed 100000 and cable length 7m"
            ]
        );
        assert_eq!(errors[0].value, "NULL");
    }

    #[test]
    fn port_inputs_are_checked() {
        let mut db = small_db();
        db.set("BUFFER_PG", "Ethernet12|3", "profile", "NULL")
            .set("PORT", "Ethernet4", "speed", "25G")
            .set("CABLE_LENGTH", "AZURE", "Ethernet0", "0m")
            .set("DEFAULT_LOSSLESS_BUFFER_PARAMETER", "AZURE", "default_dynamic_th", "9");
        let errors = generate_lossless_profiles(&mut db, &HeadroomModel::Ieee).unwrap_err();
        let messages: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(
            messages,
            [
                "BUFFER_PG|Ethernet12|3: \"Ethernet12\" is not a port (there is no PORT|Ethernet12)",
                "CABLE_LENGTH|AZURE|Ethernet0: 0m: SONiC creates no lossless profile for a port with cable length 0m",
                "DEFAULT_LOSSLESS_BUFFER_PARAMETER|AZURE|default_dynamic_th: 9 is outside -8..7",
                "PORT|Ethernet4|speed: \"25G\" is not a speed in Mb/s",
            ]
        );
    }

    #[test]
    fn dynamic_names_carry_mtu_and_threshold() {
        let mut db = small_db();
        db.set("DEFAULT_LOSSLESS_BUFFER_PARAMETER", "AZURE", "default_dynamic_th", "1")
            .set("BUFFER_PG", "Ethernet8|3", "profile", "NULL")
            .set("BUFFER_PROFILE", "roce_alpha_2", "pool", "[BUFFER_POOL|ingress_lossless_pool]")
            .set("BUFFER_PROFILE", "roce_alpha_2", "dynamic_th", "2")
            .set("BUFFER_PROFILE", "roce_alpha_2", "headroom_type", "dynamic")
            .set("BUFFER_PG", "Ethernet8|4", "profile", "[BUFFER_PROFILE|roce_alpha_2]");
        let pattern = TrafficPattern { lossless_mtu: 1024, small_packet_percentage: 100 };
        let model = HeadroomModel::Dynamic(AsicParams::vs(), pattern, false);
        let created = generate_lossless_profiles(&mut db, &model).unwrap();
        assert_eq!(
            created,
            [
                "pg_lossless_100000_40m_profile",
                "pg_lossless_25000_300m_profile",
                "pg_lossless_100000_5m_mtu4200_profile",
                "pg_lossless_100000_5m_mtu4200_th2_profile",
            ]
        );
        let expected = sonic_dynamic(&AsicParams::vs(), &PortParams::new(100_000, 5, 4200), &pattern, false);
        let name = "pg_lossless_100000_5m_mtu4200_th2_profile";
        assert_eq!(field(&db, "BUFFER_PROFILE", name, "xoff").unwrap(), &expected.xoff.to_string());
        assert_eq!(field(&db, "BUFFER_PROFILE", name, "dynamic_th").unwrap(), "2");
        assert_eq!(
            field(&db, "BUFFER_PROFILE", "pg_lossless_100000_40m_profile", "dynamic_th").unwrap(),
            "1"
        );
        assert_eq!(field(&db, "BUFFER_PG", "Ethernet8|4", "profile").unwrap(), name);
        assert_eq!(
            field(&db, "BUFFER_PG", "Ethernet8|3", "profile").unwrap(),
            "pg_lossless_100000_5m_mtu4200_profile"
        );
    }

    /// buffermgrdyn: an 8-lane port's profile is its own (`_8lane`) on Spectrum-3 except at 400G and on
    /// Spectrum-4/5 except at 800G, where xon doubles; a 400G Spectrum-3 port always has 8 lanes.
    #[test]
    fn eight_lane_ports_get_their_own_dynamic_profile() {
        let mut db = small_db();
        db.set("PORT", "Ethernet0", "lanes", "0,1,2,3,4,5,6,7")
            .set("PORT", "Ethernet8", "speed", "400000")
            .set("PORT", "Ethernet8", "lanes", "8,9,10,11,12,13,14,15")
            .set("BUFFER_PG", "Ethernet8|3", "profile", "NULL");
        let model = HeadroomModel::Dynamic(Asic::Spectrum3.params(), TrafficPattern::BUFFERS_CONFIG, false);
        let created = generate_lossless_profiles(&mut db, &model).unwrap();
        assert_eq!(
            created,
            [
                "pg_lossless_100000_40m_8lane_profile",
                "pg_lossless_25000_300m_profile",
                "pg_lossless_400000_5m_mtu4200_profile",
            ]
        );
        for name in ["pg_lossless_100000_40m_8lane_profile", "pg_lossless_400000_5m_mtu4200_profile"] {
            assert_eq!(field(&db, "BUFFER_PROFILE", name, "xon").unwrap(), "38912", "{name}");
        }
        assert_eq!(field(&db, "BUFFER_PROFILE", "pg_lossless_25000_300m_profile", "xon").unwrap(), "19456");
        // On Spectrum-2 the name stays (buffermgrdyn adds `_8lane` on 4xxx/5xxx models only).
        let mut db = small_db();
        db.set("PORT", "Ethernet0", "lanes", "0,1,2,3,4,5,6,7");
        let model = HeadroomModel::Dynamic(Asic::Spectrum2.params(), TrafficPattern::BUFFERS_CONFIG, false);
        let created = generate_lossless_profiles(&mut db, &model).unwrap();
        assert_eq!(created[0], "pg_lossless_100000_40m_profile");
    }

    #[test]
    fn splitting_a_key_does_not_overwrite_a_port_entry() {
        let mut db = small_db();
        db.set("BUFFER_PG", "Ethernet4|3-4", "profile", "ingress_lossy_profile");
        let errors = generate_lossless_profiles(&mut db, &HeadroomModel::Lookup(LookupTable::th_balanced()))
            .unwrap_err();
        assert_eq!(errors.len(), 1);
        assert!(errors[0].message.contains("BUFFER_PG|Ethernet4|3-4 already exists"), "{}", errors[0]);
    }

    /// The shipped SONiC-profile configs, with their lossless PGs turned into NULL and their
    /// pg_lossless profiles removed, come back exactly as written and compile: the lookup tables are
    /// what those files were written from. (Mellanox's SN2700 table is also the dynamic formula, but at
    /// port MTU 9216, not these ports' 9100: see `mellanox/tables_tests.rs`.)
    #[test]
    fn shipped_profiles_regenerate_from_null() {
        let th = include_str!("../../../configs/profiles/th_balanced.yaml");
        let sn = include_str!("../../../configs/profiles/sn2700.yaml");
        let cases = [
            (th, HeadroomModel::Lookup(LookupTable::th_balanced())),
            (sn, HeadroomModel::Lookup(LookupTable::sn2700())),
        ];
        for (yaml, model) in cases {
            let original = ConfigDb::from_yaml_str(yaml).unwrap();
            let mut db = original.clone();
            let profiles = db.tables.get_mut("BUFFER_PROFILE").unwrap();
            profiles.retain(|name, _| !name.starts_with("pg_lossless_"));
            let mut lossless_pgs = 0;
            for (key, fields) in db.tables.get_mut("BUFFER_PG").unwrap() {
                if strip_reference("BUFFER_PROFILE", &fields["profile"]).starts_with("pg_lossless_") {
                    fields.insert("profile".into(), "NULL".into());
                    lossless_pgs += 1;
                    assert!(key.ends_with("|3-4"));
                }
            }
            assert!(lossless_pgs >= 4);
            generate_lossless_profiles(&mut db, &model).unwrap();
            for (name, fields) in &original.tables["BUFFER_PROFILE"] {
                assert_eq!(&db.tables["BUFFER_PROFILE"][name], fields, "{name}");
            }
            assert_eq!(db.tables["BUFFER_PROFILE"].len(), original.tables["BUFFER_PROFILE"].len());
            for (key, fields) in &original.tables["BUFFER_PG"] {
                let regenerated = &db.tables["BUFFER_PG"][key]["profile"];
                let written = strip_reference("BUFFER_PROFILE", &fields["profile"]);
                assert_eq!(strip_reference("BUFFER_PROFILE", regenerated), written, "{key}");
            }
            compile(&db).unwrap_or_else(|e| panic!("{e}"));
        }
    }
}
