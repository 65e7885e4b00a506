//! containerlab's topology format (`name`, `topology.nodes`, `topology.links[].endpoints`), read into the
//! same lab and written from one (`swctl lab export --containerlab`).
//!
//! containerlab knows nothing of Lossless, so a Lossless node is a `kind: linux` node that says what it is
//! with labels, which containerlab keeps and passes on:
//!
//! ```yaml
//! name: demo
//! topology:
//!   nodes:
//!     sw1: { kind: linux, image: lossless:latest, startup-config: demo-switch.yaml,
//!            labels: { lossless.role: switch } }
//!     h1:  { kind: linux, image: lossless:latest,
//!            labels: { lossless.role: host, lossless.ip: 10.0.0.1/24, lossless.pfc: "3,4" } }
//!   links:
//!     - endpoints: ["sw1:Ethernet0", "h1:eth0"]
//! ```
//!
//! A switch's `startup-config` is its CONFIG_DB file (relative to the topology, as `config:` is in a Lossless
//! topology). A host's `lossless.FIELD` labels are the fields of a host in a Lossless topology (`ip`, `mac`,
//! `gateway-mac`, `pfc`, `line-rate-mbps`, `mtu`, `retransmit`, `dcqcn`, `rx-pipeline`), each value read as
//! YAML (`"1000"` is a number, `"{ buffer_bytes: 262144 }"` a mapping). containerlab's own node settings
//! (image, env, binds, exec, ...) are for containerlab and ignored here; other kinds are refused by name.

use super::file::{RawHost, RawLink, RawLinkDetail, RawSwitch, RawTopology};
use super::{Topology, Written};
use serde::de::value::MapAccessDeserializer;
use serde::de::{DeserializeSeed, IntoDeserializer, MapAccess};
use serde::{Deserialize, Serialize};
use serde_yaml::Value;
use std::collections::BTreeMap;

/// The label that says what a node is.
pub const ROLE_LABEL: &str = "lossless.role";
/// The image `export` names: an image of the user's with switchd and rocehost in it
/// (`docs/containerlab.md`, "A Lossless switch as a containerlab node").
pub const DEFAULT_IMAGE: &str = "lossless:latest";

#[derive(Deserialize, Serialize)]
struct ClabFile {
    name: Option<String>,
    topology: ClabTopology,
    /// containerlab's management network, prefix, ...: not ours.
    #[serde(flatten, skip_serializing)]
    _other: BTreeMap<String, Value>,
}

#[derive(Deserialize, Serialize)]
struct ClabTopology {
    #[serde(default)]
    nodes: BTreeMap<String, ClabNode>,
    #[serde(default)]
    links: Vec<ClabLink>,
    /// `kinds`, `defaults`: containerlab's.
    #[serde(flatten, skip_serializing)]
    _other: BTreeMap<String, Value>,
}

#[derive(Deserialize, Serialize)]
struct ClabNode {
    kind: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    image: Option<String>,
    #[serde(rename = "startup-config", skip_serializing_if = "Option::is_none")]
    startup_config: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    labels: BTreeMap<String, Value>,
    #[serde(flatten, skip_serializing)]
    _other: BTreeMap<String, Value>,
}

#[derive(Deserialize, Serialize)]
struct ClabLink {
    endpoints: Vec<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    mtu: Option<u32>,
    #[serde(flatten, skip_serializing)]
    _other: BTreeMap<String, Value>,
}

/// Whether a topology text is containerlab's (it has a `topology:` mapping).
pub(super) fn is_containerlab(value: &Value) -> bool {
    value.get("topology").is_some_and(Value::is_mapping)
}

/// A containerlab topology as the equivalent Lossless topology, or every reason it is not one, each naming
/// the node, link or label. `written` is read first for errors with a path, line and column; `value` is the
/// same text with YAML merge keys applied.
pub(super) fn to_native(written: &Written, value: Value) -> Result<RawTopology, Vec<String>> {
    let context = |e: serde_yaml::Error| vec![format!("containerlab topology: {e}")];
    written.check::<ClabFile>().map_err(context)?;
    let file: ClabFile = serde_yaml::from_value(value).map_err(context)?;
    let mut errors = Vec::new();
    let (mut switches, mut hosts) = (BTreeMap::new(), BTreeMap::new());
    for (name, node) in file.topology.nodes {
        let at = format!("topology.nodes.{name}");
        match node.kind.as_deref() {
            Some("linux") | None => {}
            Some(kind) => {
                errors.push(format!(
                    "{at}: kind {kind} is not supported: a Lossless lab runs Lossless switches and RoCE hosts, \
                     written as kind: linux nodes with a {ROLE_LABEL} label (switch or host)"
                ));
                continue;
            }
        }
        match node.labels.get(ROLE_LABEL).and_then(Value::as_str) {
            Some("switch") => match node.startup_config {
                Some(config) => {
                    switches.insert(name, RawSwitch { config: Value::String(config) });
                }
                None => errors.push(format!(
                    "{at}: a Lossless switch needs startup-config: its CONFIG_DB file (YAML or config_db.json)"
                )),
            },
            Some("host") => match host_from_labels(&node.labels) {
                Ok(host) => {
                    hosts.insert(name, host);
                }
                Err(e) => errors.push(format!("{at}: {e}")),
            },
            Some(other) => errors.push(format!("{at}: label {ROLE_LABEL}: {other:?} is neither switch nor host")),
            None => errors.push(format!(
                "{at}: not a Lossless node: give it the label {ROLE_LABEL}: switch (with startup-config) or \
                 {ROLE_LABEL}: host (with lossless.ip)"
            )),
        }
    }
    let mut links = Vec::new();
    for (i, link) in file.topology.links.into_iter().enumerate() {
        let ends: Vec<&str> = link.endpoints.iter().filter_map(Value::as_str).collect();
        if ends.len() != 2 || link.endpoints.len() != 2 {
            errors.push(format!(
                "topology.links[{i}]: expected endpoints: [\"NODE:INTERFACE\", \"NODE:INTERFACE\"] (the brief \
                 form; typed links are not supported)"
            ));
            continue;
        }
        let text = format!("{} -- {}", ends[0], ends[1]);
        links.push(match link.mtu {
            None => RawLink::Plain(text),
            Some(mtu) => {
                RawLink::Detailed(RawLinkDetail { link: text, mtu: Some(mtu), ..Default::default() })
            }
        });
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(RawTopology { name: file.name, switches, hosts, links, traffic: Vec::new() })
}

/// A host of a Lossless topology from a node's `lossless.FIELD` labels (`lossless.role` aside), each label's
/// text read as YAML. The error names the label.
fn host_from_labels(labels: &BTreeMap<String, Value>) -> Result<RawHost, String> {
    let fields = labels
        .iter()
        .filter_map(|(label, v)| Some((label.strip_prefix("lossless.")?, v)))
        .filter(|(field, _)| *field != "role")
        .map(|(field, v)| {
            // A label's text is read as YAML: numbers, lists and mappings written as strings.
            let v = match v {
                Value::String(text) => serde_yaml::from_str(text).unwrap_or_else(|_| v.clone()),
                other => other.clone(),
            };
            (field, v)
        })
        .collect();
    let mut access = Labels { fields, at: 0, current: None };
    RawHost::deserialize(MapAccessDeserializer::new(&mut access)).map_err(|e| match access.current {
        Some(field) => format!("label lossless.{field}: {e}"),
        None => format!("labels: {e} (a host's fields are lossless.FIELD labels)"),
    })
}

/// A host's labels as the fields of a map for serde, remembering which one is being read so that an error
/// can name it.
struct Labels<'a> {
    fields: Vec<(&'a str, Value)>,
    at: usize,
    /// The field whose key or value was handed out last; `None` once all were.
    current: Option<&'a str>,
}

impl<'de> MapAccess<'de> for &mut Labels<'_> {
    type Error = serde_yaml::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, Self::Error> {
        self.current = self.fields.get(self.at).map(|(field, _)| *field);
        match self.current {
            Some(field) => seed.deserialize(field.into_deserializer()).map(Some),
            None => Ok(None),
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Self::Error> {
        let value = std::mem::take(&mut self.fields[self.at].1);
        self.at += 1;
        seed.deserialize(value)
    }
}

/// A topology in containerlab's format: the YAML, and the switch configurations it names
/// (`<switch>.yaml`, to write beside it). Link settings containerlab's topology cannot carry (netem delay,
/// jitter, loss, corruption) and flows are left out, each named in the returned notes.
pub fn export(topology: &Topology) -> anyhow::Result<(String, BTreeMap<String, String>, Vec<String>)> {
    let mut nodes = BTreeMap::new();
    let mut configs = BTreeMap::new();
    let mut notes = Vec::new();
    let node = |labels: BTreeMap<String, Value>, startup_config: Option<String>| ClabNode {
        kind: Some("linux".into()),
        image: Some(DEFAULT_IMAGE.into()),
        startup_config,
        labels,
        _other: BTreeMap::new(),
    };
    for sw in &topology.switches {
        let file = format!("{}.yaml", sw.name);
        configs.insert(file.clone(), serde_yaml::to_string(&sw.config)?);
        let labels = BTreeMap::from([(ROLE_LABEL.to_owned(), Value::from("switch"))]);
        nodes.insert(sw.name.clone(), node(labels, Some(file)));
    }
    for h in &topology.hosts {
        let mut labels = BTreeMap::from([
            (ROLE_LABEL.to_owned(), Value::from("host")),
            ("lossless.ip".to_owned(), format!("{}/{}", h.ip, h.prefix_len).into()),
            ("lossless.mac".to_owned(), h.mac.to_string().into()),
            ("lossless.line-rate-mbps".to_owned(), h.line_rate_mbps.to_string().into()),
            ("lossless.mtu".to_owned(), h.mtu.to_string().into()),
        ]);
        let pfc: Vec<String> = h.pfc.iter().map(u8::to_string).collect();
        labels.insert(
            "lossless.pfc".to_owned(),
            if pfc.is_empty() { "none".into() } else { pfc.join(",").into() },
        );
        if let Some(g) = h.gateway_mac {
            labels.insert("lossless.gateway-mac".to_owned(), g.to_string().into());
        }
        if h.retransmit == lossless_dataplane::nic::Retransmit::GoBack0 {
            labels.insert("lossless.retransmit".to_owned(), "go-back-0".into());
        }
        if h.rx_pipeline != Default::default() {
            let text = serde_yaml::to_string(&h.rx_pipeline)?;
            let flow: Value = serde_yaml::from_str(&text)?;
            labels.insert("lossless.rx-pipeline".to_owned(), serde_json::to_string(&flow)?.into());
        }
        if h.dcqcn_time_scale != 1 || !h.dcqcn_params.is_empty() {
            let mut d: BTreeMap<String, String> = h.dcqcn_params.iter().cloned().collect();
            d.insert("time-scale".into(), h.dcqcn_time_scale.to_string());
            labels.insert("lossless.dcqcn".to_owned(), serde_json::to_string(&d)?.into());
        }
        nodes.insert(h.name.clone(), node(labels, None));
    }
    let mut links = Vec::new();
    for (i, l) in topology.links.iter().enumerate() {
        if !l.netem.is_empty() || l.line.loss_every.is_some() {
            notes.push(format!(
                "links[{i}] ({l}): delay, jitter, loss and corruption are not part of a containerlab topology \
                 (containerlab sets them with `containerlab tools netem`): left out"
            ));
        }
        links.push(ClabLink {
            endpoints: vec![l.a.to_string().into(), l.b.to_string().into()],
            mtu: Some(l.mtu),
            _other: BTreeMap::new(),
        });
    }
    if !topology.traffic.is_empty() {
        notes.push(format!(
            "traffic: {} flow(s) of `lab demo` are not part of a containerlab topology: left out",
            topology.traffic.len()
        ));
    }
    let file = ClabFile {
        name: Some(topology.name.clone()),
        topology: ClabTopology { nodes, links, _other: BTreeMap::new() },
        _other: BTreeMap::new(),
    };
    Ok((serde_yaml::to_string(&file)?, configs, notes))
}

#[cfg(test)]
mod tests {
    use super::super::{ConfigFiles, RelativeTo};
    use super::*;
    use std::path::Path;

    /// Configuration files by name, from memory.
    struct Files(BTreeMap<String, String>);

    impl ConfigFiles for Files {
        fn read(&self, name: &str) -> anyhow::Result<(String, String)> {
            self.0
                .get(name)
                .map(|t| (t.clone(), format!("exported {name}")))
                .ok_or_else(|| anyhow::anyhow!("{name}: none"))
        }
    }

    fn configs_dir() -> RelativeTo {
        RelativeTo(Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/topologies"))
    }

    #[test]
    fn a_topology_survives_export_and_import() {
        let text = std::fs::read_to_string(configs_dir().0.join("t1-t0.yaml")).unwrap();
        let original = Topology::parse(&text, "t1-t0", "t1-t0.yaml", &configs_dir()).unwrap();
        let (yaml, configs, _notes) = export(&original).unwrap();
        let back = Topology::parse(&yaml, "x", "exported", &Files(configs)).unwrap();
        assert_eq!(back.name, original.name);
        let switches = |t: &Topology| {
            t.switches.iter().map(|s| (s.name.clone(), s.compiled.ports.len())).collect::<Vec<_>>()
        };
        assert_eq!(switches(&back), switches(&original));
        let hosts = |t: &Topology| {
            t.hosts
                .iter()
                .map(|h| {
                    (
                        h.name.clone(),
                        h.ip,
                        h.prefix_len,
                        h.mac,
                        h.pfc.clone(),
                        h.line_rate_mbps,
                        h.mtu,
                        h.gateway_mac,
                    )
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(hosts(&back), hosts(&original));
        let links =
            |t: &Topology| t.links.iter().map(|l| (l.a.clone(), l.b.clone(), l.mtu)).collect::<Vec<_>>();
        assert_eq!(links(&back), links(&original));
    }

    #[test]
    fn a_hand_written_containerlab_file_reads_with_labels_as_yaml() {
        let yaml = r#"
name: clab1
mgmt: { network: custom }
topology:
  kinds: { linux: { image: lossless:latest } }
  nodes:
    sw1: { kind: linux, startup-config: demo-switch.yaml, labels: { lossless.role: switch }, exec: [ "true" ] }
    h1:
      kind: linux
      labels: { lossless.role: host, lossless.ip: 10.0.0.1/24, lossless.pfc: "3,4", lossless.line-rate-mbps: "1000",
                lossless.rx-pipeline: "{ buffer_bytes: 262144, xoff_bytes: 131072, xon_bytes: 65536 }" }
    h2: { labels: { lossless.role: host, lossless.ip: 10.0.0.2/24, lossless.retransmit: go-back-0 } }
  links:
    - endpoints: ["sw1:Ethernet0", "h1:eth0"]
    - { endpoints: ["sw1:Ethernet4", "h2:eth0"], mtu: 9000 }
"#;
        let t = Topology::parse(yaml, "x", "clab1.clab.yml", &configs_dir()).unwrap();
        assert_eq!(t.name, "clab1");
        let h1 = t.host("h1").unwrap();
        assert_eq!(
            (h1.pfc.clone(), h1.line_rate_mbps, h1.rx_pipeline.buffer_bytes),
            (vec![3, 4], 1000, 262_144)
        );
        assert_eq!(t.host("h2").unwrap().retransmit, lossless_dataplane::nic::Retransmit::GoBack0);
        assert_eq!(t.links[1].mtu, 9000);
    }

    #[test]
    fn what_is_not_a_lossless_node_or_link_is_named() {
        let yaml = r#"
topology:
  nodes:
    srl: { kind: nokia_srlinux, image: ghcr.io/nokia/srlinux }
    plain: { kind: linux, image: alpine }
    sw1: { kind: linux, labels: { lossless.role: switch } }
    h1: { kind: linux, labels: { lossless.role: router } }
  links:
    - endpoints: [{ node: sw1, interface: Ethernet0 }, { node: h1, interface: eth0 }]
"#;
        let e = Topology::parse(yaml, "x", "bad.clab.yml", &configs_dir()).unwrap_err().to_string();
        for expected in [
            "topology.nodes.srl: kind nokia_srlinux is not supported",
            "topology.nodes.plain: not a Lossless node: give it the label lossless.role",
            "topology.nodes.sw1: a Lossless switch needs startup-config",
            "topology.nodes.h1: label lossless.role: \"router\" is neither switch nor host",
            "topology.links[0]: expected endpoints: [\"NODE:INTERFACE\", \"NODE:INTERFACE\"]",
        ] {
            assert!(e.contains(expected), "{expected:?} not in:\n{e}");
        }
    }

    #[test]
    fn a_malformed_file_is_refused_naming_the_field_and_line() {
        let yaml = "name: clab1\ntopology:\n  nodes:\n    sw1: { kind: linux }\n  links: { a: b }\n";
        let e = Topology::parse(yaml, "x", "bad.clab.yml", &configs_dir()).unwrap_err().to_string();
        assert!(e.starts_with("bad.clab.yml: invalid topology (1 error(s))"), "{e}");
        assert!(
            e.contains("containerlab topology: topology.links: invalid type: map, expected a sequence"),
            "{e}"
        );
        assert!(e.contains("line 5"), "{e}");
    }

    #[test]
    fn a_bad_host_label_is_named() {
        let yaml = r#"
topology:
  nodes:
    h1: { labels: { lossless.role: host, lossless.ip: 10.0.0.1/24, lossless.line-rate-mbps: fast } }
    h2: { labels: { lossless.role: host, lossless.ip: 10.0.0.2/24, lossless.speed: "1000" } }
    h3: { labels: { lossless.role: host, lossless.mtu: "9000" } }
"#;
        let e = Topology::parse(yaml, "x", "bad.clab.yml", &configs_dir()).unwrap_err().to_string();
        for expected in [
            "topology.nodes.h1: label lossless.line-rate-mbps: invalid type: string \"fast\", expected u32",
            "topology.nodes.h2: label lossless.speed: unknown field `speed`",
            "topology.nodes.h3: labels: missing field `ip` (a host's fields are lossless.FIELD labels)",
        ] {
            assert!(e.contains(expected), "{expected:?} not in:\n{e}");
        }
    }
}
