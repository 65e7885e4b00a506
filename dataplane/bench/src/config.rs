//! switchd's configuration for the bench: two routed ports and the QoS pipeline of a shipped profile.

use crate::lab::{H1_IP, H2_IP, ROUTER_MAC, SW_PORTS};
use anyhow::{Context, bail};
use lossless_dataplane::model::Switch;
use lossless_dataplane::model::config::ConfigDb;
use lossless_dataplane::time::Instant;
use lossless_dataplane::wire::EthernetAddress;
use serde_yaml::{Mapping, Value};

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

pub fn switchd_config(h1_mac: EthernetAddress, h2_mac: EthernetAddress) -> anyhow::Result<String> {
    let profile: Mapping = serde_yaml::from_str(PROFILE).context("parsing the TH profile")?;
    let mut db = Mapping::new();
    let map =
        |pairs: Vec<(String, Value)>| Value::Mapping(pairs.into_iter().map(|(k, v)| (k.into(), v)).collect());
    let s = |x: &str| Value::String(x.to_owned());
    db.insert(
        "DEVICE_METADATA".into(),
        map(vec![(
            "localhost".into(),
            map(vec![
                ("mac".into(), s(&EthernetAddress(ROUTER_MAC).to_string())),
                ("hostname".into(), s("fwdbench")),
            ]),
        )]),
    );
    db.insert(
        "PORT".into(),
        map(SW_PORTS
            .iter()
            .map(|(p, _, _)| (p.to_string(), map(vec![("speed".into(), 100_000.into())])))
            .collect()),
    );
    let mut interfaces = Vec::new();
    for (port, _, addr) in SW_PORTS {
        interfaces.push((port.to_owned(), map(vec![])));
        interfaces.push((format!("{port}|{addr}"), map(vec![])));
    }
    db.insert("INTERFACE".into(), map(interfaces));
    let neigh =
        |mac: EthernetAddress| map(vec![("neigh".into(), s(&mac.to_string())), ("family".into(), s("IPv4"))]);
    db.insert(
        "NEIGH".into(),
        map(vec![
            (format!("{}|{H1_IP}", SW_PORTS[0].0), neigh(h1_mac)),
            (format!("{}|{H2_IP}", SW_PORTS[1].0), neigh(h2_mac)),
        ]),
    );
    for table in QOS_TABLES {
        let Some(Value::Mapping(entries)) = profile.get(*table) else {
            bail!("the TH profile has no {table} table");
        };
        let mut out = Mapping::new();
        for (key, value) in entries {
            let key = key.as_str().with_context(|| format!("{table}: a non-string key"))?;
            if let Some(key) = remap_key(key) {
                out.insert(key.into(), remap_fields(value));
            }
        }
        db.insert((*table).into(), Value::Mapping(out));
    }
    let text = serde_yaml::to_string(&db)?;
    // Validate here, for a clear message before anything starts.
    let parsed =
        ConfigDb::from_yaml_str(&text).map_err(anyhow::Error::msg).context("the generated config")?;
    if let Err(errors) = Switch::new().apply(&parsed, Instant::ZERO) {
        let list: Vec<String> = errors.errors.iter().map(|e| e.to_string()).collect();
        bail!("the generated switchd config is rejected:\n  {}", list.join("\n  "));
    }
    Ok(text)
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

/// Fields named after ports (CABLE_LENGTH) keep only the bench's ports.
pub fn remap_fields(value: &Value) -> Value {
    match value {
        Value::Mapping(m) => Value::Mapping(
            m.iter()
                .filter(|(k, _)| k.as_str().is_none_or(|k| !k.starts_with("Ethernet") || is_bench_port(k)))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        ),
        other => other.clone(),
    }
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
}
