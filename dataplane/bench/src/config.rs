//! switchd's configuration for the bench: two routed ports and the QoS pipeline of a shipped profile.

use crate::lab::{H1_IP, H2_IP, ROUTER_MAC, SW_PORTS};
use anyhow::{Context, bail};
use lossless_dataplane::model::Switch;
use lossless_dataplane::model::config::ConfigDb;
use lossless_dataplane::time::Instant;
use lossless_dataplane::wire::EthernetAddress;

/// The switch profile whose QoS and buffer tables switchd runs with.
const PROFILE: &str = include_str!("../../../configs/profiles/th_balanced.yaml");
/// Tables taken from the profile: the whole QoS pipeline (classification, MMU, PFC + watchdog, scheduler,
/// WRED/ECN).
const QOS_TABLES: &[&str] = &[
    "DSCP_TO_TC_MAP",
    "TC_TO_QUEUE_MAP",
    "TC_TO_PRIORITY_GROUP_MAP",
    "MAP_PFC_PRIORITY_TO_QUEUE",
    "PORT_QOS_MAP",
    "BUFFER_ASIC",
    "BUFFER_POOL",
    "BUFFER_PROFILE",
    "CABLE_LENGTH",
    "BUFFER_PG",
    "BUFFER_QUEUE",
    "SCHEDULER",
    "WRED_PROFILE",
    "QUEUE",
    "PFC_WD",
];

/// switchd's configuration (CONFIG_DB as YAML): the profile's QoS tables cut down to the bench's two
/// ports, the ports routed, and the hosts as static neighbours.
pub fn switchd_config(h1_mac: EthernetAddress, h2_mac: EthernetAddress) -> anyhow::Result<String> {
    let db = switchd_config_db(h1_mac, h2_mac)?;
    // Validate here, for a clear message before anything starts.
    if let Err(errors) = Switch::new().apply(&db, Instant::ZERO) {
        let list: Vec<String> = errors.errors.iter().map(|e| e.to_string()).collect();
        bail!("the generated switchd config is rejected:\n  {}", list.join("\n  "));
    }
    Ok(serde_yaml::to_string(&db)?)
}

fn switchd_config_db(h1_mac: EthernetAddress, h2_mac: EthernetAddress) -> anyhow::Result<ConfigDb> {
    let mut db =
        ConfigDb::from_yaml_str(PROFILE).map_err(anyhow::Error::msg).context("parsing the TH profile")?;
    if let Some(table) = QOS_TABLES.iter().find(|t| !db.tables.contains_key(**t)) {
        bail!("the TH profile has no {table} table");
    }
    db.tables.retain(|table, _| QOS_TABLES.contains(&table.as_str()));
    for entries in db.tables.values_mut() {
        *entries = std::mem::take(entries)
            .into_iter()
            .filter_map(|(key, mut fields)| {
                let key = remap_key(&key)?;
                // Fields named after ports (CABLE_LENGTH) keep only the bench's ports.
                fields.retain(|field, _| !field.starts_with("Ethernet") || is_bench_port(field));
                Some((key, fields))
            })
            .collect();
    }
    db.set("DEVICE_METADATA", "localhost", "mac", EthernetAddress(ROUTER_MAC).to_string());
    db.set("DEVICE_METADATA", "localhost", "hostname", "fwdbench");
    for (port, _, addr) in SW_PORTS {
        db.set("PORT", port, "speed", "100000")
            .touch("INTERFACE", port)
            .touch("INTERFACE", &format!("{port}|{addr}"));
    }
    for (port, ip, mac) in [(SW_PORTS[0].0, H1_IP, h1_mac), (SW_PORTS[1].0, H2_IP, h2_mac)] {
        let key = format!("{port}|{ip}");
        db.set("NEIGH", &key, "neigh", mac.to_string()).set("NEIGH", &key, "family", "IPv4");
    }
    Ok(db)
}

pub fn is_bench_port(name: &str) -> bool {
    SW_PORTS.iter().any(|(p, _, _)| *p == name)
}

/// A profile key with its port list (`Ethernet0,Ethernet4,Ethernet8|3-4`) cut down to the bench's ports;
/// None when none of them is left. Keys without ports (`AZURE`, `GLOBAL`) stay.
pub fn remap_key(key: &str) -> Option<String> {
    let (head, rest) = match key.split_once('|') {
        Some((h, r)) => (h, Some(r)),
        None => (key, None),
    };
    let items: Vec<&str> = head.split(',').collect();
    if !items.iter().all(|i| i.starts_with("Ethernet")) {
        return Some(key.to_owned());
    }
    let kept: Vec<&str> = items.into_iter().filter(|i| is_bench_port(i)).collect();
    if kept.is_empty() {
        return None;
    }
    Some(match rest {
        Some(r) => format!("{}|{r}", kept.join(",")),
        None => kept.join(","),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_lists_are_cut_down_to_the_bench_ports() {
        assert_eq!(
            remap_key("Ethernet0,Ethernet4,Ethernet8|0-2").as_deref(),
            Some("Ethernet0,Ethernet4|0-2")
        );
        assert_eq!(remap_key("Ethernet8|3-4"), None);
        assert_eq!(remap_key("Ethernet4"), Some("Ethernet4".into()));
        assert_eq!(remap_key("AZURE"), Some("AZURE".into()));
        assert_eq!(remap_key("GLOBAL"), Some("GLOBAL".into()));
    }

    fn macs() -> (EthernetAddress, EthernetAddress) {
        (EthernetAddress([0x02, 0, 0, 0, 0, 0x11]), EthernetAddress([0x02, 0, 0, 0, 0, 0x12]))
    }

    #[test]
    fn the_config_switchd_reads_is_the_one_built_and_only_the_bench_ports() {
        let (h1, h2) = macs();
        let text = switchd_config(h1, h2).unwrap();
        let db = ConfigDb::from_yaml_str(&text).unwrap();
        assert_eq!(db, switchd_config_db(h1, h2).unwrap(), "the YAML reads back as built");
        let mut expected: Vec<&str> = QOS_TABLES.to_vec();
        expected.extend(["DEVICE_METADATA", "PORT", "INTERFACE", "NEIGH"]);
        expected.sort_unstable();
        assert_eq!(db.tables.keys().map(String::as_str).collect::<Vec<_>>(), expected);
        let ports: Vec<&str> = SW_PORTS.iter().map(|(p, _, _)| *p).collect();
        assert_eq!(db.tables["PORT"].keys().map(String::as_str).collect::<Vec<_>>(), ports);
        assert_eq!(db.tables["NEIGH"][&format!("{}|{H1_IP}", ports[0])]["neigh"], h1.to_string());
        // No port of the profile's other than the bench's is left anywhere: in a key or a field name.
        for (table, entries) in &db.tables {
            for (key, fields) in entries {
                let names = key.split(['|', ',']).chain(fields.keys().map(String::as_str));
                for name in names.filter(|n| n.starts_with("Ethernet")) {
                    assert!(is_bench_port(name), "{table}|{key}: {name}");
                }
            }
        }
    }
}
