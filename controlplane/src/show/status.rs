//! `show interfaces status` (sonic-utilities' `intfutil status`): one row per port with its lanes, speed,
//! MTU, FEC, alias, VLAN mode, operational and admin state, from the running configuration and the
//! counters (which carry the states). `show interfaces status Ethernet0,Ethernet4` names ports as intfutil's
//! `-i` does (a comma-separated list).

use super::counters::sorted_ports;
use super::table::{Cell, Table};
use lossless_dataplane::model::config::ConfigDb;
use lossless_proto::v1::GetCountersResponse;
use serde_json::Value;

const HEADER: [&str; 11] =
    ["Interface", "Lanes", "Speed", "MTU", "FEC", "Alias", "Vlan", "Oper", "Admin", "Type", "Asym PFC"];

/// `show interfaces status [PORTS]`, all ports when `ports` is empty. `Speed` as intfutil prints it (`100G`,
/// `500M`); `Vlan` as intfutil's switchport mode: `PORT|mode` if set, else `trunk` for any VLAN member
/// (tagged or not) and `routed` for every other port; `Type` (the transceiver) is `N/A`: a software port
/// has none. Fields the configuration lacks are `N/A`.
pub fn interfaces_status(counters: &GetCountersResponse, config: &ConfigDb, ports: &[String]) -> String {
    table(counters, config, ports).render() + "\n"
}

/// The same as `{interface: {column: value}}`.
pub fn interfaces_status_json(counters: &GetCountersResponse, config: &ConfigDb, ports: &[String]) -> Value {
    table(counters, config, ports).keyed_by_first()
}

fn table(counters: &GetCountersResponse, config: &ConfigDb, ports: &[String]) -> Table {
    let mut table = Table::new(HEADER);
    let empty = Default::default();
    let field = |table: &str, key: &str, field: &str| -> Option<String> {
        config.tables.get(table)?.get(key)?.get(field).cloned()
    };
    for p in sorted_ports(counters).into_iter().filter(|p| ports.is_empty() || ports.contains(&p.name)) {
        let port = config.tables.get("PORT").and_then(|t| t.get(&p.name)).unwrap_or(&empty);
        let get = |f: &str| port.get(f).cloned().unwrap_or_else(|| "N/A".to_owned());
        let up_down = |up: bool| if up { "up" } else { "down" };
        table.push(vec![
            Cell::text(&p.name),
            Cell::text(get("lanes")),
            Cell::text(speed(p.speed_mbps)),
            Cell::text(port.get("mtu").cloned().unwrap_or_else(|| "9100".to_owned())),
            Cell::text(get("fec")),
            Cell::text(get("alias")),
            Cell::text(vlan_mode(config, &p.name)),
            Cell::text(up_down(p.admin_up && p.oper_up)),
            Cell::text(up_down(p.admin_up)),
            Cell::text("N/A"),
            Cell::text(field("PORT", &p.name, "pfc_asym").unwrap_or_else(|| "N/A".to_owned())),
        ]);
    }
    table
}

/// intfutil's `port_speed_parse`: below 1000 Mb/s as `500M`; a tenth of a gigabit or more past the whole
/// one with one decimal (`2.5G`); otherwise whole gigabits (`100G`, and `1G` for 1050).
fn speed(mbps: u32) -> String {
    match mbps {
        0 => "N/A".to_owned(),
        m if m < 1000 => format!("{m}M"),
        m if m % 1000 >= 100 => format!("{:.1}G", f64::from(m) / 1000.0),
        m => format!("{}G", m / 1000),
    }
}

/// The ports of an intfutil `-i` filter (`utilities_common/intf_filter.py`): comma-separated names, each
/// a port or a range `Ethernet0-8` (every number from the first to the last; names no port has match
/// nothing). Returns the names and which of them were written out (not from a range), or the error
/// naming the range written wrong.
pub fn parse_interface_filter(filter: &str) -> Result<Vec<(String, bool)>, String> {
    let mut names = Vec::new();
    for part in filter.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let Some((first, last)) = part.split_once('-') else {
            names.push((part.to_owned(), true));
            continue;
        };
        let digits = first.trim_end_matches(|c: char| c.is_ascii_digit());
        let prefix = ["Ethernet", "PortChannel"].into_iter().find(|p| *p == digits).ok_or_else(|| {
            format!("Invalid interface range '{part}'. A range must start with 'Ethernet' or 'PortChannel'.")
        })?;
        let (Ok(start), Ok(end)) = (first[prefix.len()..].parse::<u32>(), last.parse::<u32>()) else {
            return Err(format!("Invalid interface range '{part}'. Expected a range like '{prefix}0-3'."));
        };
        if start > end {
            return Err(format!(
                "Invalid interface range '{part}'. The start of the range must not be greater than the end."
            ));
        }
        names.extend((start..=end).map(|i| (format!("{prefix}{i}"), false)));
    }
    Ok(names)
}

/// intfutil's `Vlan` column (`config_db_vlan_port_keys_get`): the port's `PORT|mode` (SONiC's switchport
/// mode) when set, `trunk` for a member of any VLAN, whatever its tagging mode, and `routed` otherwise.
fn vlan_mode(config: &ConfigDb, port: &str) -> String {
    if let Some(mode) = config.tables.get("PORT").and_then(|t| t.get(port)).and_then(|f| f.get("mode")) {
        return mode.clone();
    }
    let member = config
        .tables
        .get("VLAN_MEMBER")
        .is_some_and(|t| t.keys().any(|k| k.split_once('|').is_some_and(|(_, member)| member == port)));
    if member { "trunk" } else { "routed" }.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use lossless_proto::v1::PortCounters;

    #[test]
    fn status_shows_oper_and_admin_state_speed_and_vlan_mode() {
        let port = |name: &str, admin_up, oper_up, speed_mbps| PortCounters {
            name: name.into(),
            admin_up,
            oper_up,
            speed_mbps,
            ..Default::default()
        };
        let counters = GetCountersResponse {
            ports: vec![
                port("Ethernet8", true, false, 40_000),
                port("Ethernet0", true, true, 100_000),
                port("Ethernet4", false, true, 25_000),
            ],
            ..Default::default()
        };
        let mut db = ConfigDb::default();
        db.set("PORT", "Ethernet0", "lanes", "0,1,2,3").set("PORT", "Ethernet0", "alias", "etp1");
        db.set("PORT", "Ethernet0", "fec", "rs").set("PORT", "Ethernet0", "mtu", "9100");
        db.touch("INTERFACE", "Ethernet0").touch("INTERFACE", "Ethernet0|10.0.0.0/31");
        db.set("VLAN_MEMBER", "Vlan1000|Ethernet4", "tagging_mode", "untagged");
        db.set("VLAN_MEMBER", "Vlan1000|Ethernet8", "tagging_mode", "tagged");
        let text = interfaces_status(&counters, &db, &[]);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].trim_start().starts_with("Interface"), "{text}");
        let row = |name: &str| {
            lines.iter().find(|l| l.split_whitespace().next() == Some(name)).unwrap().to_string()
        };
        let e0: Vec<String> = row("Ethernet0").split_whitespace().map(str::to_owned).collect();
        assert_eq!(
            e0,
            ["Ethernet0", "0,1,2,3", "100G", "9100", "rs", "etp1", "routed", "up", "up", "N/A", "N/A"]
        );
        // intfutil calls every VLAN member `trunk`, untagged or not.
        let e4: Vec<String> = row("Ethernet4").split_whitespace().map(str::to_owned).collect();
        assert_eq!((e4[6].as_str(), e4[7].as_str(), e4[8].as_str()), ("trunk", "down", "down"), "{text}");
        let e8: Vec<String> = row("Ethernet8").split_whitespace().map(str::to_owned).collect();
        assert_eq!(
            (e8[2].as_str(), e8[6].as_str(), e8[7].as_str(), e8[8].as_str()),
            ("40G", "trunk", "down", "up")
        );
        assert!(
            lines[2].starts_with("Ethernet0") || lines[2].trim_start().starts_with("Ethernet0"),
            "natsorted"
        );
        let json = interfaces_status_json(&counters, &db, &[]);
        assert_eq!(json["Ethernet8"]["Oper"], "down");
        let one = interfaces_status(&counters, &db, &["Ethernet8".to_owned()]);
        assert_eq!(one.lines().count(), 3, "the header, its rule and Ethernet8: {one}");
    }

    #[test]
    fn speeds_as_intfutil_prints_them() {
        // scripts/intfutil port_speed_parse, for a non-RJ45 port.
        let cases =
            [(100, "100M"), (1000, "1G"), (1050, "1G"), (2500, "2.5G"), (25_000, "25G"), (400_000, "400G")];
        for (mbps, text) in cases {
            assert_eq!(speed(mbps), text, "{mbps} Mb/s");
        }
    }

    #[test]
    fn interface_filters_take_lists_and_ranges_as_intfutil_does() {
        let names = |f: &str| -> Vec<String> {
            parse_interface_filter(f).unwrap().into_iter().map(|(name, _)| name).collect()
        };
        assert_eq!(names("Ethernet0"), ["Ethernet0"]);
        assert_eq!(names("Ethernet0,Ethernet8"), ["Ethernet0", "Ethernet8"]);
        assert_eq!(names("Ethernet2-4,Ethernet8"), ["Ethernet2", "Ethernet3", "Ethernet4", "Ethernet8"]);
        assert_eq!(parse_interface_filter("Ethernet2-4").unwrap()[0], ("Ethernet2".to_owned(), false));
        // intf_filter.py's messages, naming what was written.
        let e = parse_interface_filter("Eth0-4").unwrap_err();
        assert!(e.contains("'Eth0-4'") && e.contains("must start with 'Ethernet'"), "{e}");
        let e = parse_interface_filter("Ethernet8-4").unwrap_err();
        assert!(e.contains("'Ethernet8-4'") && e.contains("must not be greater"), "{e}");
        let e = parse_interface_filter("Ethernet0-x").unwrap_err();
        assert!(e.contains("Expected a range like 'Ethernet0-3'"), "{e}");
    }
}
