//! Checking a topology file: every error at once, each naming the entry the user wrote.

use super::file::*;
use super::*;
use lossless_dataplane::model::config::compile;

pub(super) fn build(
    raw: RawTopology,
    default_name: &str,
    source: &str,
    files: &dyn ConfigFiles,
    errors: &mut Vec<String>,
) -> Topology {
    let name = raw.name.clone().unwrap_or_else(|| default_name.to_owned());
    if let Err(e) = check_lab_name(&name) {
        errors.push(format!("name: {e}"));
    }
    if raw.switches.is_empty() && raw.hosts.is_empty() {
        errors.push("the topology has no switches and no hosts".into());
    }

    // Switches and their configurations.
    let mut switches = Vec::new();
    for (sw, spec) in &raw.switches {
        if let Err(e) = check_node_name(sw) {
            errors.push(format!("switches.{sw}: {e}"));
        }
        let loaded = match &spec.config {
            serde_yaml::Value::String(file) => files.read(file).map_err(|e| format!("{e:#}")),
            serde_yaml::Value::Mapping(_) => serde_yaml::to_string(&spec.config)
                .map(|text| (text, format!("switches.{sw}.config (inline)")))
                .map_err(|e| e.to_string()),
            _ => Err("config: expected a file name or the configuration's tables inline".to_owned()),
        };
        let (text, config_source) = match loaded {
            Ok(x) => x,
            Err(e) => {
                errors.push(format!("switches.{sw}.config: {e}"));
                continue;
            }
        };
        let mut db = match ConfigDb::from_yaml_str(&text) {
            Ok(db) => db,
            Err(e) => {
                errors.push(format!("switches.{sw}.config: {config_source}: {e}"));
                continue;
            }
        };
        if let Err(issues) = resolve_switch_config(&mut db) {
            errors.extend(issues.into_iter().map(|i| format!("switches.{sw}.config: {config_source}: {i}")));
            continue;
        }
        match compile(&db) {
            Ok(compiled) => switches.push(SwitchNode {
                name: sw.clone(),
                config: db,
                compiled: compiled.config,
                config_source,
            }),
            Err(e) => errors.extend(
                e.errors.iter().map(|i| format!("switches.{sw}.config: {config_source}: error: {i}")),
            ),
        }
    }
    let is_switch = |n: &str| raw.switches.contains_key(n);
    let is_host = |n: &str| raw.hosts.contains_key(n);
    for h in raw.hosts.keys() {
        if let Err(e) = check_node_name(h) {
            errors.push(format!("hosts.{h}: {e}"));
        }
        if is_switch(h) {
            errors.push(format!("hosts.{h}: {h} is also a switch; node names must be unique"));
        }
    }
    let node_list = || {
        format!(
            "switches: {}; hosts: {}",
            if raw.switches.is_empty() {
                "none".to_owned()
            } else {
                raw.switches.keys().cloned().collect::<Vec<_>>().join(", ")
            },
            if raw.hosts.is_empty() {
                "none".to_owned()
            } else {
                raw.hosts.keys().cloned().collect::<Vec<_>>().join(", ")
            }
        )
    };

    // Links: the explicit ones, then hosts' `attach` shorthands.
    let mut links: Vec<(String, Link)> = Vec::new();
    for (i, l) in raw.links.iter().enumerate() {
        let (text, detail) = match l {
            RawLink::Plain(t) => (t.clone(), None),
            RawLink::Detailed(d) => (d.link.clone(), Some(d)),
        };
        let label = format!("links[{i}] ({})", text.trim());
        let (a, b) = match parse_link_ends(&text) {
            Ok(x) => x,
            Err(e) => {
                errors.push(format!("links[{i}]: {e}"));
                continue;
            }
        };
        let mut netem = Vec::new();
        let mut mtu = None;
        let mut line = LineEffects::default();
        if let Some(d) = detail {
            let fields =
                [("delay", &d.delay), ("jitter", &d.jitter), ("loss", &d.loss), ("corrupt", &d.corrupt)];
            for (field, value) in fields {
                if let Some(v) = value {
                    match check_netem_value(field, v) {
                        Ok(()) => {}
                        Err(e) => errors.push(format!("{label}: {e}")),
                    }
                }
            }
            if d.jitter.is_some() && d.delay.is_none() {
                errors.push(format!("{label}: jitter needs a delay"));
            }
            if let Some(delay) = &d.delay {
                netem.extend(["delay".to_owned(), delay.trim().to_owned()]);
                if let Some(j) = &d.jitter {
                    netem.push(j.trim().to_owned());
                }
            }
            if let Some(loss) = &d.loss {
                netem.extend(["loss".to_owned(), loss.trim().to_owned()]);
                line.loss_probability = Some(netem_probability(loss));
            }
            if let Some(corrupt) = &d.corrupt {
                netem.extend(["corrupt".to_owned(), corrupt.trim().to_owned()]);
                line.corrupt_probability = Some(netem_probability(corrupt));
            }
            line.delay_ns = d.delay.as_deref().map(netem_time_ns);
            line.jitter_ns = d.jitter.as_deref().map(netem_time_ns);
            match d.loss_every {
                Some(0) => errors.push(format!("{label}: loss-every 0: every Nth packet needs N ≥ 1")),
                n => line.loss_every = n,
            }
            if let Some(m) = d.mtu {
                if !(68..=65535).contains(&m) {
                    errors.push(format!("{label}: mtu {m} is outside 68..=65535"));
                }
                mtu = Some(m);
            }
        }
        links.push((label, Link { a, b, netem, mtu: mtu.unwrap_or(0), line }));
    }
    for (h, spec) in &raw.hosts {
        if let Some(attach) = &spec.attach {
            match parse_end(attach) {
                Ok(a) => {
                    let b = End {
                        node: h.clone(),
                        port: spec.interface.clone().unwrap_or_else(|| "eth0".into()),
                    };
                    links.push((
                        format!("hosts.{h}.attach ({attach})"),
                        Link { a, b, netem: Vec::new(), mtu: 0, line: LineEffects::default() },
                    ));
                }
                Err(e) => errors.push(format!("hosts.{h}.attach: {e}")),
            }
        }
    }

    let mut used: BTreeMap<End, String> = BTreeMap::new();
    let mut host_links: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    let mut good_links = Vec::new();
    for (index, (label, link)) in links.iter().enumerate() {
        let mut ok = true;
        for end in [&link.a, &link.b] {
            if !is_switch(&end.node) && !is_host(&end.node) {
                errors.push(format!("{label}: unknown node {} ({})", end.node, node_list()));
                ok = false;
                continue;
            }
            if let Some(previous) = used.get(end) {
                errors.push(format!("{label}: {end} is used twice (also by {previous})"));
                ok = false;
            } else {
                used.insert(end.clone(), label.clone());
            }
            if is_switch(&end.node) {
                if let Some(sw) = switches.iter().find(|s: &&SwitchNode| s.name == end.node)
                    && sw.port(&end.port).is_none()
                {
                    let ports: Vec<&str> = sw.compiled.ports.iter().map(|p| p.name.as_str()).collect();
                    errors.push(format!(
                        "{label}: {end}: the configuration of {} ({}) has no port {} (PORT: {})",
                        sw.name,
                        sw.config_source,
                        end.port,
                        ports.join(", ")
                    ));
                    ok = false;
                }
            } else {
                if let Err(e) = check_interface_name(&end.port) {
                    errors.push(format!("{label}: {end}: {e}"));
                    ok = false;
                }
                host_links
                    .entry(raw.hosts.get_key_value(&end.node).map(|(k, _)| k.as_str()).unwrap_or(""))
                    .or_default()
                    .push(index);
            }
        }
        if link.a.node == link.b.node {
            errors.push(format!("{label}: both ends are on {}", link.a.node));
            ok = false;
        }
        if ok {
            good_links.push(index);
        }
    }

    // Link MTUs: the switch ports' MTU (the smaller of two), else the hosts' largest RoCE MTU + headers.
    let mut final_links = Vec::new();
    for &i in &good_links {
        let mut link = links[i].1.clone();
        if link.mtu == 0 {
            let port_mtus: Vec<u32> = [&link.a, &link.b]
                .iter()
                .filter_map(|e| {
                    switches.iter().find(|s| s.name == e.node).and_then(|s| s.port(&e.port)).map(|p| p.mtu)
                })
                .collect();
            link.mtu = port_mtus.into_iter().min().unwrap_or(9100);
        }
        final_links.push(link);
    }

    // Hosts.
    let mut hosts = Vec::new();
    let mut ips: BTreeMap<Ipv4Addr, String> = BTreeMap::new();
    let mut macs: BTreeMap<EthernetAddress, String> = BTreeMap::new();
    for (index, (h, spec)) in raw.hosts.iter().enumerate() {
        let field = |f: &str| format!("hosts.{h}.{f}");
        let (ip, prefix_len) = match parse_ip_prefix(&spec.ip) {
            Ok(x) => x,
            Err(e) => {
                errors.push(format!("{}: {e}", field("ip")));
                (Ipv4Addr::UNSPECIFIED, 0)
            }
        };
        if !ip.is_unspecified() {
            if let Some(other) = ips.get(&ip) {
                errors.push(format!("{}: {ip} is also {other}'s address", field("ip")));
            } else {
                ips.insert(ip, h.clone());
            }
        }
        let mac = match &spec.mac {
            Some(text) => match text.parse::<EthernetAddress>() {
                Ok(m) if m.0[0] & 1 == 0 && m.0 != [0; 6] => m,
                Ok(_) => {
                    errors.push(format!("{}: {text} is not a unicast address", field("mac")));
                    EthernetAddress::default()
                }
                Err(e) => {
                    errors.push(format!("{}: {text}: {e}", field("mac")));
                    EthernetAddress::default()
                }
            },
            None => {
                let n = (index + 1) as u16;
                let p = DEFAULT_MAC_PREFIX;
                EthernetAddress([p[0], p[1], p[2], p[3], (n >> 8) as u8, n as u8])
            }
        };
        if mac != EthernetAddress::default() {
            if let Some(other) = macs.get(&mac) {
                errors.push(format!("{}: {mac} is also {other}'s MAC", field("mac")));
            } else {
                macs.insert(mac, h.clone());
            }
        }
        let pfc = match &spec.pfc {
            None => vec![3, 4],
            Some(v) => parse_priorities(v).unwrap_or_else(|e| {
                errors.push(format!("{}: {e}", field("pfc")));
                Vec::new()
            }),
        };
        let mine: Vec<&Link> = final_links.iter().filter(|l| l.a.node == *h || l.b.node == *h).collect();
        let link_count = host_links.get(h.as_str()).map(Vec::len).unwrap_or(0);
        if link_count == 0 {
            errors.push(format!(
                "hosts.{h}: not linked to anything (add a link to {h}:eth0, or attach: SWITCH:PORT)"
            ));
        } else if link_count > 1 {
            errors.push(format!("hosts.{h}: {link_count} links; a host has one interface"));
        }
        let (interface, peer, link_mtu) = match mine.first() {
            Some(l) if l.a.node == *h => (l.a.port.clone(), l.b.clone(), l.mtu),
            Some(l) => (l.b.port.clone(), l.a.clone(), l.mtu),
            None => ("eth0".to_owned(), End { node: String::new(), port: String::new() }, 9100),
        };
        let peer_switch = switches.iter().find(|s| s.name == peer.node);
        let attached = peer_switch.map(|_| peer.clone());
        let port_speed = peer_switch.and_then(|s| s.port(&peer.port)).map(|p| p.speed_mbps);
        let line_rate_mbps = spec.line_rate_mbps.or(port_speed).unwrap_or(1000);
        if line_rate_mbps == 0 {
            errors.push(format!("{}: must be > 0", field("line-rate-mbps")));
        }
        let mtu = spec.mtu.unwrap_or(1500.min(link_mtu));
        if !(128..=9216).contains(&mtu) {
            errors.push(format!("{}: {mtu} is outside 128..=9216", field("mtu")));
        } else if mtu > link_mtu {
            errors.push(format!("{}: {mtu} is larger than the link's MTU {link_mtu}", field("mtu")));
        }
        let gateway_mac = match spec.gateway_mac.as_deref() {
            None => None,
            Some("auto") => match (peer_switch, &attached) {
                (Some(sw), Some(end)) => sw.port(&end.port).map(|p| p.mac),
                _ => {
                    errors.push(format!(
                        "{}: auto needs the host to be linked to a switch",
                        field("gateway-mac")
                    ));
                    None
                }
            },
            Some(text) => match text.parse::<EthernetAddress>() {
                Ok(m) => Some(m),
                Err(e) => {
                    errors.push(format!(
                        "{}: {text}: {e} (or auto: the attached switch port's MAC)",
                        field("gateway-mac")
                    ));
                    None
                }
            },
        };
        let (dcqcn_time_scale, dcqcn_params) = match &spec.dcqcn {
            None => (1, Vec::new()),
            Some(map) => parse_dcqcn(map).unwrap_or_else(|e| {
                errors.extend(e.into_iter().map(|e| format!("{}.{e}", field("dcqcn"))));
                (1, Vec::new())
            }),
        };
        let rx_pipeline = spec.rx_pipeline.unwrap_or_default();
        if let Err(e) = rx_pipeline.validate() {
            errors.push(format!("{}: {e}", field("rx-pipeline")));
        }
        if spec.interface.is_some() && spec.attach.is_none() {
            errors.push(format!(
                "hosts.{h}.interface: only with attach (a link names the host's interface itself)"
            ));
        }
        hosts.push(HostNode {
            name: h.clone(),
            ip,
            prefix_len,
            mac,
            gateway_mac,
            pfc,
            line_rate_mbps,
            mtu,
            interface,
            attached,
            dcqcn_time_scale,
            dcqcn_params,
            rx_pipeline,
            retransmit: match spec.retransmit {
                Some(RetransmitMode::GoBack0) => Retransmit::GoBack0,
                Some(RetransmitMode::GoBackN) | None => Retransmit::GoBackN,
            },
        });
    }

    // Traffic.
    let mut traffic = Vec::new();
    for (i, f) in raw.traffic.iter().enumerate() {
        let label = format!("traffic[{i}] ({} -> {})", f.from, f.to);
        for node in [&f.from, &f.to] {
            if !is_host(node) {
                let what =
                    if is_switch(node) { "a switch, not a host" } else { "not a host of this topology" };
                errors.push(format!(
                    "{label}: {node} is {what} (hosts: {})",
                    raw.hosts.keys().cloned().collect::<Vec<_>>().join(", ")
                ));
            }
        }
        if f.from == f.to {
            errors.push(format!("{label}: a host cannot send to itself"));
        }
        if let (Some(src), Some(dst)) =
            (hosts.iter().find(|h| h.name == f.from), hosts.iter().find(|h| h.name == f.to))
            && !src.on_subnet(dst.ip)
            && src.gateway_mac.is_none()
        {
            errors.push(format!(
                "{label}: {} ({}) is not on {}'s subnet {}/{}: give {} a gateway-mac (auto: its switch port's MAC)",
                f.to, dst.ip, f.from, src.ip, src.prefix_len, f.from
            ));
        }
        if f.priority > 7 {
            errors.push(format!("{label}: priority {} is outside 0..=7", f.priority));
        }
        if f.dscp > 63 {
            errors.push(format!("{label}: dscp {} is outside 0..=63", f.dscp));
        }
        if f.rate_mbps == Some(0) || f.message_bytes == Some(0) || f.messages == Some(0) {
            errors.push(format!("{label}: rate-mbps, message-bytes and messages must be > 0"));
        }
        traffic.push(Flow {
            from: f.from.clone(),
            to: f.to.clone(),
            priority: f.priority,
            dscp: f.dscp,
            rate_mbps: f.rate_mbps,
            message_bytes: f.message_bytes.unwrap_or(65536),
            messages: f.messages,
            dcqcn: f.dcqcn.unwrap_or(true),
            start_ms: f.start_ms.unwrap_or(0),
        });
    }

    Topology { name, source: source.to_owned(), switches, hosts, links: final_links, traffic }
}
