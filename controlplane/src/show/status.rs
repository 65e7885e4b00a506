//! `show interfaces status` (sonic-utilities' `intfutil status`): one row per port with its lanes, speed,
//! MTU, FEC, alias, VLAN mode, operational and admin state, from the running configuration and the
//! counters (which carry the states).

use super::counters::sorted_ports;
use super::table::{Cell, Table};
use lossless_dataplane::model::config::ConfigDb;
use lossless_proto::v1::GetCountersResponse;
use serde_json::Value;

const HEADER: [&str; 11] =
    ["Interface", "Lanes", "Speed", "MTU", "FEC", "Alias", "Vlan", "Oper", "Admin", "Type", "Asym PFC"];

/// `show interfaces status`. `Speed` as intfutil prints it (`100G`, `500M`); `Vlan` is `routed` for a port
/// with a router interface, `trunk` for a tagged VLAN member, the VLAN (`Vlan1000`) for an untagged one;
/// `Type` (the transceiver) is `N/A`: a software port has none. Fields the configuration lacks are `N/A`.
pub fn interfaces_status(counters: &GetCountersResponse, config: &ConfigDb) -> String {
    table(counters, config).render() + "\n"
}

/// The same as `{interface: {column: value}}`.
pub fn interfaces_status_json(counters: &GetCountersResponse, config: &ConfigDb) -> Value {
    table(counters, config).keyed_by_first()
}

fn table(counters: &GetCountersResponse, config: &ConfigDb) -> Table {
    let mut table = Table::new(HEADER);
    let empty = Default::default();
    let field = |table: &str, key: &str, field: &str| -> Option<String> {
        config.tables.get(table)?.get(key)?.get(field).cloned()
    };
    for p in sorted_ports(counters) {
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

/// intfutil's speed: whole gigabits as `100G`, anything below 1000 Mb/s as `500M`.
fn speed(mbps: u32) -> String {
    match mbps {
        0 => "N/A".to_owned(),
        m if m >= 1000 && m % 1000 == 0 => format!("{}G", m / 1000),
        m if m >= 1000 => format!("{:.1}G", f64::from(m) / 1000.0),
        m => format!("{m}M"),
    }
}

fn vlan_mode(config: &ConfigDb, port: &str) -> String {
    let routed =
        config.tables.get("INTERFACE").is_some_and(|t| t.keys().any(|k| k.split('|').next() == Some(port)));
    if routed {
        return "routed".to_owned();
    }
    let mut untagged = None;
    for (key, fields) in config.tables.get("VLAN_MEMBER").into_iter().flatten() {
        let Some((vlan, member)) = key.split_once('|') else { continue };
        if member != port {
            continue;
        }
        if fields.get("tagging_mode").map(String::as_str) == Some("tagged") {
            return "trunk".to_owned();
        }
        untagged = Some(vlan.to_owned());
    }
    untagged.unwrap_or_default()
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
        let text = interfaces_status(&counters, &db);
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
        assert!(row("Ethernet4").contains("Vlan1000") && row("Ethernet4").contains("down"), "{text}");
        let e8: Vec<String> = row("Ethernet8").split_whitespace().map(str::to_owned).collect();
        assert_eq!(
            (e8[2].as_str(), e8[6].as_str(), e8[7].as_str(), e8[8].as_str()),
            ("40G", "trunk", "down", "up")
        );
        assert!(
            lines[2].starts_with("Ethernet0") || lines[2].trim_start().starts_with("Ethernet0"),
            "natsorted"
        );
        let json = interfaces_status_json(&counters, &db);
        assert_eq!(json["Ethernet8"]["Oper"], "down");
    }
}
