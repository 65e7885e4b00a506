//! Configured lossless headroom below what a calculator gives.

use lossless_dataplane::model::config::{ConfigDb, ConfigIssue};

use super::{DEFAULT_CABLE_LENGTH_M, HeadroomModel, PortParams, port_lanes};
use crate::show::thousands;

/// A lossless PG profile whose `xoff` is below what a calculator gives for a port that uses it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Shortfall {
    pub profile: String,
    pub port: String,
    pub speed_mbps: u32,
    pub cable_m: u32,
    pub mtu: u32,
    pub configured_xoff_bytes: u64,
    /// What the calculator gives.
    pub needed_xoff_bytes: u64,
}

/// Lossless PG profiles whose `xoff` is below what `model` computes for a port that uses them (its speed,
/// MTU and CABLE_LENGTH), once per (profile, speed, cable, MTU). A configuration that does not compile
/// yields none here (its errors are reported by validation).
pub fn headroom_shortfalls(db: &ConfigDb, model: &HeadroomModel) -> Vec<Shortfall> {
    let Ok(compiled) = lossless_dataplane::model::config::compile(db) else { return Vec::new() };
    let config = &compiled.config;
    let mut seen = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    for (i, port) in config.ports.iter().enumerate() {
        let qos = &config.qos[i];
        let cable_m = cable_length_m(db, &port.name);
        for pg in 0..8usize {
            let lossless =
                (0..8).any(|p| qos.pfc_enable & (1 << p) != 0 && usize::from(qos.pfc_to_pg[p]) == pg);
            let Some(profile) = config.port_buffers.get(i).and_then(|b| b.pg_profile[pg]) else { continue };
            if !lossless {
                continue;
            }
            let profile = &config.profiles[profile];
            if !seen.insert((profile.name.clone(), port.speed_mbps, cable_m, port.mtu)) {
                continue;
            }
            let params =
                PortParams::new(port.speed_mbps, cable_m, port.mtu).with_lanes(port_lanes(db, &port.name));
            let Ok(needed) = model.headroom(&params) else { continue };
            if profile.xoff_bytes < needed.xoff {
                out.push(Shortfall {
                    profile: profile.name.clone(),
                    port: port.name.clone(),
                    speed_mbps: port.speed_mbps,
                    cable_m,
                    mtu: port.mtu,
                    configured_xoff_bytes: profile.xoff_bytes,
                    needed_xoff_bytes: needed.xoff,
                });
            }
        }
    }
    out
}

/// Warnings for lossless PG profiles whose `xoff` is below what `model` computes ([`headroom_shortfalls`]):
/// such a PG can drop after XOFF while the peer is still sending. Each warning names
/// `BUFFER_PROFILE|<profile>|xoff`, the port and both numbers.
pub fn check_headroom(db: &ConfigDb, model: &HeadroomModel) -> Vec<ConfigIssue> {
    headroom_shortfalls(db, model)
        .into_iter()
        .map(|s| {
            ConfigIssue::new(
                "BUFFER_PROFILE",
                &s.profile,
                "xoff",
                &s.configured_xoff_bytes.to_string(),
                format!(
                    "xoff {} is below the {} bytes of headroom the calculator gives {} ({} Mb/s, {} m, MTU {}): \
                     the PG may drop after XOFF",
                    thousands(s.configured_xoff_bytes),
                    thousands(s.needed_xoff_bytes),
                    s.port,
                    s.speed_mbps,
                    s.cable_m,
                    s.mtu
                ),
            )
        })
        .collect()
}

/// The port's cable length from any CABLE_LENGTH entry (`"40m"`), else the default.
fn cable_length_m(db: &ConfigDb, port: &str) -> u32 {
    cable_length_entry(db, port).unwrap_or(DEFAULT_CABLE_LENGTH_M)
}

/// The port's cable length if a CABLE_LENGTH entry (normally `AZURE`) gives one, in metres.
pub(crate) fn cable_length_entry(db: &ConfigDb, port: &str) -> Option<u32> {
    db.tables
        .get("CABLE_LENGTH")
        .and_then(|t| t.values().find_map(|fields| fields.get(port)))
        .and_then(|v| v.trim_end_matches('m').parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::headroom::LookupTable;

    #[test]
    fn a_profile_below_the_calculator_is_a_warning_with_both_numbers() {
        let mut db =
            ConfigDb::from_yaml_str(include_str!("../../../configs/profiles/th_balanced.yaml")).unwrap();
        let model = HeadroomModel::Lookup(LookupTable::th_balanced());
        assert!(check_headroom(&db, &model).is_empty(), "the shipped profile matches its own lookup table");
        db.set("BUFFER_PROFILE", "pg_lossless_100000_40m_profile", "xoff", "100000");
        let warnings = check_headroom(&db, &model);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        let w = &warnings[0];
        assert_eq!(w.location(), "BUFFER_PROFILE|pg_lossless_100000_40m_profile|xoff");
        assert!(
            w.message.contains("100,000") && w.message.contains("177,632") && w.message.contains("Ethernet0"),
            "{}",
            w.message
        );
    }
}
