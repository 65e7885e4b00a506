//! The topology file as written: serde types (unknown fields rejected) and the parsers of its fields.

use super::{End, MAX_INTERFACE_NAME};
use lossless_dataplane::nic::{NicConfig, RxPipelineConfig};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::net::Ipv4Addr;

/// A topology as written (a scenario's steps add to its `traffic`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawTopology {
    pub(super) name: Option<String>,
    #[serde(default)]
    pub(super) switches: BTreeMap<String, RawSwitch>,
    #[serde(default)]
    pub(super) hosts: BTreeMap<String, RawHost>,
    #[serde(default)]
    pub(super) links: Vec<RawLink>,
    #[serde(default)]
    pub(crate) traffic: Vec<RawFlow>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSwitch {
    /// A file name (relative to the topology) or the tables inline.
    pub(super) config: serde_yaml::Value,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(super) struct RawHost {
    pub(super) ip: String,
    pub(super) mac: Option<String>,
    pub(super) gateway_mac: Option<String>,
    /// `[3, 4]`, `"3,4"` or `none`.
    pub(super) pfc: Option<serde_yaml::Value>,
    pub(super) line_rate_mbps: Option<u32>,
    pub(super) mtu: Option<u32>,
    /// `switch:port`: a link from there to this host's `interface`.
    pub(super) attach: Option<String>,
    pub(super) interface: Option<String>,
    /// `{ time-scale: N, PARAMETER: VALUE, ... }`: rocehost's DCQCN options.
    pub(super) dcqcn: Option<BTreeMap<String, serde_yaml::Value>>,
    /// `{ buffer_bytes: N, xoff_bytes: N, ... }`: the NIC's receive pipeline (rocehost's `--rx-param`s).
    pub(super) rx_pipeline: Option<RxPipelineConfig>,
    /// Loss recovery of the host's flows: rocehost's `--retransmit` (`go-back-n`, the default, or
    /// `go-back-0`).
    pub(super) retransmit: Option<RetransmitMode>,
}

/// A host's `retransmit:`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub(super) enum RetransmitMode {
    #[serde(rename = "go-back-n")]
    GoBackN,
    #[serde(rename = "go-back-0")]
    GoBack0,
}

#[derive(Deserialize)]
#[serde(untagged)]
pub(super) enum RawLink {
    Plain(String),
    Detailed(RawLinkDetail),
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLinkDetail {
    pub(super) link: String,
    pub(super) delay: Option<String>,
    pub(super) jitter: Option<String>,
    pub(super) loss: Option<String>,
    /// netem `corrupt`: a percentage of frames with a flipped bit (dropped by the next FCS check).
    pub(super) corrupt: Option<String>,
    /// Simulator only: every Nth RoCE data packet is lost (`swctl sim run`; netem has no such pattern).
    #[serde(rename = "loss-every")]
    pub(super) loss_every: Option<u64>,
    pub(super) mtu: Option<u32>,
}

/// A flow as written: a topology's `traffic` entry, or a scenario step's (which starts at the step's `at`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RawFlow {
    pub(super) from: String,
    pub(super) to: String,
    pub(super) priority: u8,
    pub(super) dscp: u8,
    pub(super) rate_mbps: Option<u32>,
    pub(super) message_bytes: Option<u64>,
    pub(super) messages: Option<u64>,
    pub(super) dcqcn: Option<bool>,
    pub(crate) start_ms: Option<u64>,
}

/// A node name: letters, digits and `_` (no `-`, so that `ll-<lab>-<node>` names one node of one lab).
pub(super) fn check_node_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 32
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && name.starts_with(|c: char| c.is_ascii_alphabetic());
    if ok {
        Ok(())
    } else {
        Err(format!("{name:?}: node names are 1 to 32 letters, digits or '_', starting with a letter"))
    }
}

pub(super) fn check_interface_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= MAX_INTERFACE_NAME
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if ok {
        Ok(())
    } else {
        Err(format!("interface {name:?}: 1 to {MAX_INTERFACE_NAME} letters, digits, '_', '-' or '.'"))
    }
}

/// `node:port`.
pub(crate) fn parse_end(text: &str) -> Result<End, String> {
    match text.trim().split_once(':') {
        Some((node, port)) if !node.trim().is_empty() && !port.trim().is_empty() => {
            Ok(End { node: node.trim().to_owned(), port: port.trim().to_owned() })
        }
        _ => Err(format!("{:?}: expected NODE:PORT, e.g. sw1:Ethernet0 or h1:eth0", text.trim())),
    }
}

/// `a -- b` (also `—`, `–`, `<->`).
pub(super) fn parse_link_ends(text: &str) -> Result<(End, End), String> {
    for separator in ["<->", "--", "—", "–"] {
        if let Some((a, b)) = text.split_once(separator) {
            return Ok((parse_end(a)?, parse_end(b)?));
        }
    }
    Err(format!("{text:?}: expected \"NODE:PORT -- NODE:PORT\""))
}

/// `10.0.0.1/24`.
pub(super) fn parse_ip_prefix(text: &str) -> Result<(Ipv4Addr, u8), String> {
    let Some((ip, prefix)) = text.split_once('/') else {
        return Err(format!("{text}: expected an IPv4 address with a prefix length, e.g. 10.0.0.1/24"));
    };
    let ip: Ipv4Addr = ip.trim().parse().map_err(|_| format!("{text}: {ip:?} is not an IPv4 address"))?;
    let prefix: u8 = prefix
        .trim()
        .parse()
        .ok()
        .filter(|p| (1..=32).contains(p))
        .ok_or_else(|| format!("{text}: the prefix length must be 1..=32"))?;
    if ip.is_unspecified() || ip.is_broadcast() || ip.is_multicast() {
        return Err(format!("{text}: not a host address"));
    }
    Ok((ip, prefix))
}

/// A host's validated DCQCN options: rocehost's `--dcqcn-time-scale` and its `--dcqcn-param`s.
pub(super) type DcqcnOptions = (u32, Vec<(String, String)>);

/// A host's `dcqcn:` mapping: `time-scale` (rocehost's `--dcqcn-time-scale`) and any DCQCN parameter by
/// the name rocehost's `--dcqcn-param` takes, checked as rocehost will check them. Errors start with the
/// key (`rpg_bogus: unknown DCQCN parameter ...`).
pub(super) fn parse_dcqcn(map: &BTreeMap<String, serde_yaml::Value>) -> Result<DcqcnOptions, Vec<String>> {
    let mut errors = Vec::new();
    let mut nic = NicConfig::default();
    let text = |key: &str, v: &serde_yaml::Value| match v {
        serde_yaml::Value::Number(n) => Ok(n.to_string()),
        serde_yaml::Value::Bool(b) => Ok(b.to_string()),
        serde_yaml::Value::String(s) => Ok(s.clone()),
        _ => Err(format!("{key}: expected a number (or true/false)")),
    };
    let mut time_scale = 1;
    if let Some(v) = map.get("time-scale") {
        match text("time-scale", v).and_then(|t| {
            nic.set_dcqcn_param("time_scale", &t).map_err(|e| format!("time-scale: {e}"))?;
            Ok(nic.dcqcn.time_scale)
        }) {
            Ok(n) => time_scale = n,
            Err(e) => errors.push(e),
        }
    }
    let mut params = Vec::new();
    for (key, v) in map.iter().filter(|(k, _)| k.as_str() != "time-scale") {
        if key == "time_scale" {
            errors.push(format!("{key}: write time-scale"));
            continue;
        }
        match text(key, v)
            .and_then(|t| nic.set_dcqcn_param(key, &t).map(|()| t).map_err(|e| format!("{key}: {e}")))
        {
            Ok(t) => params.push((key.clone(), t)),
            Err(e) => errors.push(e),
        }
    }
    if errors.is_empty() { Ok((time_scale, params)) } else { Err(errors) }
}

pub(super) fn parse_priorities(value: &serde_yaml::Value) -> Result<Vec<u8>, String> {
    let items: Vec<String> = match value {
        serde_yaml::Value::Sequence(items) => items
            .iter()
            .map(|v| match v {
                serde_yaml::Value::Number(n) => Ok(n.to_string()),
                serde_yaml::Value::String(s) => Ok(s.clone()),
                _ => Err("priorities are numbers 0..=7".to_owned()),
            })
            .collect::<Result<_, _>>()?,
        serde_yaml::Value::Number(n) => vec![n.to_string()],
        serde_yaml::Value::String(s) if s == "none" || s.is_empty() => Vec::new(),
        serde_yaml::Value::String(s) => s.split(',').map(|p| p.trim().to_owned()).collect(),
        serde_yaml::Value::Null => Vec::new(),
        _ => return Err("expected a list of priorities such as [3, 4], \"3,4\" or none".into()),
    };
    let mut out = Vec::new();
    for item in items {
        let p: u8 = item
            .parse()
            .ok()
            .filter(|p| *p <= 7)
            .ok_or_else(|| format!("{item:?} is not a priority 0..=7"))?;
        if !out.contains(&p) {
            out.push(p);
        }
    }
    out.sort_unstable();
    Ok(out)
}

/// A netem time (`5ms`, `100us`, `1s`) or percentage (`0.1%`), checked so that tc gets nothing surprising.
pub(super) fn check_netem_value(field: &str, value: &str) -> Result<(), String> {
    let v = value.trim();
    let percent = matches!(field, "loss" | "corrupt");
    let (number, units): (&str, &[&str]) =
        if percent { (v.strip_suffix('%').unwrap_or(v), &[""]) } else { (v, &["us", "ms", "s"]) };
    let ok = if percent {
        v.ends_with('%') && number.parse::<f64>().is_ok_and(|x| (0.0..=100.0).contains(&x))
    } else {
        units.iter().any(|u| number.strip_suffix(u).is_some_and(|n| n.parse::<f64>().is_ok_and(|x| x >= 0.0)))
    };
    if ok {
        Ok(())
    } else if percent {
        Err(format!("{field} {value:?}: expected a percentage such as 0.1%"))
    } else {
        Err(format!("{field} {value:?}: expected a time such as 500us, 2ms or 1s"))
    }
}

/// A checked netem time (`5ms`, `100us`, `1s`) in ns.
pub(super) fn netem_time_ns(value: &str) -> u64 {
    let v = value.trim();
    let (number, scale) = if let Some(n) = v.strip_suffix("us") {
        (n, 1e3)
    } else if let Some(n) = v.strip_suffix("ms") {
        (n, 1e6)
    } else {
        (v.strip_suffix('s').unwrap_or(v), 1e9)
    };
    (number.parse::<f64>().unwrap_or(0.0) * scale).round() as u64
}

/// A checked netem percentage (`0.1%`) as a probability.
pub(super) fn netem_probability(value: &str) -> f64 {
    value.trim().trim_end_matches('%').parse::<f64>().unwrap_or(0.0) / 100.0
}
