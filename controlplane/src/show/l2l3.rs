//! The forwarding tables: `show arp` (sonic-utilities `scripts/nbrshow`), `show mac` (`scripts/fdbshow`),
//! `show vlan brief` (`show/vlan.py`) and `show ip route` / `show ipv6 route` (FRR's `show ip route`,
//! which SONiC's command passes to `vtysh`).
//!
//! `show arp` and `show mac` are tabulate's default layout (numbers right-aligned, text left-aligned) with
//! `Total number of entries N` under them; `show vlan brief` is tabulate's `grid` layout, several ports of
//! a VLAN in one cell over several lines. `show ip route` lists the connected subnets of the router
//! interfaces and the `STATIC_ROUTE`s of the running configuration, the routes the model forwards with,
//! in FRR's layout; FRR's uptime column is left out (the model does not record when a route appeared).
//! SONiC's scripts have no `--json` for these except FRR's `show ip route json`, whose shape
//! [`ip_route_json`] keeps (prefix → list of routes, with `protocol`, `selected`, `nexthops`); the others
//! are lists of objects keyed by the column headers.

use super::table::{Cell, Table, natural_cmp};
use lossless_dataplane::model::config::{ConfigDb, SwitchConfig};
use lossless_proto::v1::{FdbEntry, NeighborEntry};
use serde_json::Value;
use std::collections::BTreeMap;

// ---- show arp ------------------------------------------------------------------------------------

/// `show arp` (IPv4) or, with `v6`, `show ndp`: nbrshow's `Status` column is the kernel's neighbour state,
/// here `PERMANENT` for a static neighbour (`NEIGH`) and `REACHABLE` for a learnt one.
fn arp_table(neighbors: &[NeighborEntry], fdb: &[FdbEntry], v6: bool) -> Table {
    let mut rows: Vec<&NeighborEntry> = neighbors.iter().filter(|n| n.ip.contains(':') == v6).collect();
    rows.sort_by(|a, b| natural_cmp(&a.ip, &b.ip));
    let header: &[&str] = if v6 {
        &["Address", "MacAddress", "Iface", "Vlan", "Status"]
    } else {
        &["Address", "MacAddress", "Iface", "Vlan"]
    };
    let mut table = Table::new(header.iter().copied());
    for n in rows {
        // nbrshow: a neighbour on a VLAN interface shows the VLAN, and as Iface the member port its MAC
        // was learnt on (`-` if the FDB has no entry for it).
        let (iface, vlan) = match n.interface.strip_prefix("Vlan").and_then(|v| v.parse::<u32>().ok()) {
            Some(vid) => {
                let port = fdb.iter().find(|e| e.vlan == vid && e.mac.eq_ignore_ascii_case(&n.mac));
                (port.map_or_else(|| "-".to_owned(), |e| e.port.clone()), vid.to_string())
            }
            None => (n.interface.clone(), "-".to_owned()),
        };
        let mut row = vec![Cell::text(&n.ip), Cell::text(&n.mac), Cell::text(iface), Cell::text(vlan)];
        if v6 {
            row.push(Cell::text(if n.is_static { "PERMANENT" } else { "REACHABLE" }));
        }
        table.push(row);
    }
    table
}

/// nbrshow's filters (`show arp [IPADDRESS] [-if IFACE]`): the neighbour with that address, those on that
/// interface (the router interface the switch learnt them on: `Vlan1000`, `Ethernet0`, as `arp -i`).
pub fn filter_neighbors(
    neighbors: &[NeighborEntry],
    ip: Option<&str>,
    iface: Option<&str>,
) -> Vec<NeighborEntry> {
    neighbors
        .iter()
        .filter(|n| ip.is_none_or(|ip| n.ip == ip) && iface.is_none_or(|i| n.interface == i))
        .cloned()
        .collect()
}

/// `show arp`: the IPv4 neighbours, learnt and static.
pub fn arp(neighbors: &[NeighborEntry], fdb: &[FdbEntry]) -> String {
    neighbor_text(&arp_table(neighbors, fdb, false))
}

/// `show ndp`: the IPv6 neighbours, learnt and static.
pub fn ndp(neighbors: &[NeighborEntry], fdb: &[FdbEntry]) -> String {
    neighbor_text(&arp_table(neighbors, fdb, true))
}

/// `show ndp --json`: as `show arp`'s, with `Status`.
pub fn ndp_json(neighbors: &[NeighborEntry], fdb: &[FdbEntry]) -> Value {
    arp_table(neighbors, fdb, true).objects()
}

fn neighbor_text(table: &Table) -> String {
    let count = table.rows().count();
    format!("{}\nTotal number of entries {count} \n", table.render_default_align())
}

/// `show arp --json`: `[{"Address": "10.0.0.1", "MacAddress": ..., "Iface": ..., "Vlan": "-"}]`.
pub fn arp_json(neighbors: &[NeighborEntry], fdb: &[FdbEntry]) -> Value {
    arp_table(neighbors, fdb, false).objects()
}

// ---- show mac ------------------------------------------------------------------------------------

fn mac_table(fdb: &[FdbEntry]) -> Table {
    let mut entries: Vec<&FdbEntry> = fdb.iter().collect();
    entries.sort_by(|a, b| a.vlan.cmp(&b.vlan).then_with(|| a.mac.cmp(&b.mac)));
    let mut table = Table::new(["No.", "Vlan", "MacAddress", "Port", "Type"]);
    for (i, e) in entries.into_iter().enumerate() {
        let kind = if e.is_static { "Static" } else { "Dynamic" };
        table.push(vec![
            Cell::plain(i as u64 + 1),
            Cell::plain(e.vlan.into()),
            Cell::text(e.mac.to_uppercase()),
            Cell::text(&e.port),
            Cell::text(kind),
        ]);
    }
    table
}

/// fdbshow's filters (`show mac -v VLAN -p PORT -a MAC -t static|dynamic`); `None` matches anything.
#[derive(Debug, Clone, Default)]
pub struct MacQuery {
    pub vlan: Option<u32>,
    pub port: Option<String>,
    /// Compared without regard to case.
    pub address: Option<String>,
    /// `Some(true)`: static entries only; `Some(false)`: dynamic only.
    pub is_static: Option<bool>,
}

/// The entries `query` selects.
pub fn filter_fdb(fdb: &[FdbEntry], query: &MacQuery) -> Vec<FdbEntry> {
    fdb.iter()
        .filter(|e| query.vlan.is_none_or(|v| e.vlan == v))
        .filter(|e| query.port.as_deref().is_none_or(|p| e.port == p))
        .filter(|e| query.address.as_deref().is_none_or(|a| e.mac.eq_ignore_ascii_case(a)))
        .filter(|e| query.is_static.is_none_or(|s| e.is_static == s))
        .cloned()
        .collect()
}

/// `show mac` (`swctl fdb show`): every FDB entry, by VLAN then MAC.
pub fn mac(fdb: &[FdbEntry]) -> String {
    let table = mac_table(fdb);
    let count = table.rows().count();
    format!("{}\nTotal number of entries {count}\n", table.render_default_align())
}

/// `show mac --json`: `[{"No.": 1, "Vlan": 1000, "MacAddress": ..., "Port": ..., "Type": "Dynamic"}]`.
pub fn mac_json(fdb: &[FdbEntry]) -> Value {
    mac_table(fdb).objects()
}

// ---- show vlan brief -----------------------------------------------------------------------------

fn vlan_table(db: &ConfigDb) -> Table {
    let empty = BTreeMap::new();
    let table_of = |name: &str| db.tables.get(name).unwrap_or(&empty);
    let (vlans, interfaces, members) =
        (table_of("VLAN"), table_of("VLAN_INTERFACE"), table_of("VLAN_MEMBER"));
    let mut names: Vec<&String> = vlans.keys().collect();
    names.sort_by(|a, b| natural_cmp(a, b));
    let mut table =
        Table::new(["VLAN ID", "IP Address", "Ports", "Port Tagging", "Proxy ARP", "Static Anycast Gateway"]);
    for name in names {
        let vid =
            vlans[name].get("vlanid").cloned().unwrap_or_else(|| name.trim_start_matches("Vlan").to_owned());
        let mut addrs: Vec<&str> =
            interfaces.keys().filter_map(|k| k.strip_prefix(name.as_str())?.strip_prefix('|')).collect();
        addrs.sort_by(|a, b| natural_cmp(a, b));
        let mut ports: Vec<(&str, &str)> = members
            .iter()
            .filter_map(|(k, fields)| {
                let port = k.strip_prefix(name.as_str())?.strip_prefix('|')?;
                Some((port, fields.get("tagging_mode").map_or("untagged", String::as_str)))
            })
            .collect();
        ports.sort_by(|a, b| natural_cmp(a.0, b.0));
        let own = interfaces.get(name.as_str());
        let proxy_arp = own.and_then(|f| f.get("proxy_arp")).map_or("disabled", String::as_str);
        let anycast = own.and_then(|f| f.get("static_anycast_gateway")).is_some_and(|v| v == "true");
        let lines = |items: Vec<&str>| items.join("\n");
        table.push(vec![
            Cell::text(vid),
            Cell::text(lines(addrs)),
            Cell::text(lines(ports.iter().map(|p| p.0).collect())),
            Cell::text(lines(ports.iter().map(|p| p.1).collect())),
            Cell::text(proxy_arp),
            Cell::text(if anycast { "enabled" } else { "disabled" }),
        ]);
    }
    table
}

/// `show vlan brief`: each VLAN with its addresses, member ports and their tagging.
pub fn vlan_brief(db: &ConfigDb) -> String {
    vlan_table(db).render_grid() + "\n"
}

/// `show vlan brief --json`: `[{"VLAN ID": "1000", "IP Address": "192.168.0.1/21", "Ports": "Ethernet4\nEthernet8", ...}]`
/// (several values of a cell joined by newlines, as the table shows them).
pub fn vlan_brief_json(db: &ConfigDb) -> Value {
    vlan_table(db).objects()
}

// ---- show ip route -------------------------------------------------------------------------------

const FRR_CODES: &str = "\
Codes: K - kernel route, C - connected, S - static, R - RIP,
       O - OSPF, I - IS-IS, B - BGP, E - EIGRP, N - NHRP,
       T - Table, v - VNC, V - VNC-Direct, A - Babel, D - SHARP,
       F - PBR, f - OpenFabric,
       > - selected route, * - FIB route, q - queued route, r - rejected route
";

/// One route of FRR's `show ip route json`.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Route {
    pub prefix: String,
    /// `connected` or `static`.
    pub protocol: &'static str,
    pub selected: bool,
    pub installed: bool,
    pub distance: u32,
    pub metric: u32,
    pub nexthops: Vec<RouteNextHop>,
}

/// A next hop of a [`Route`]: an address (static) or the interface itself (connected), or a blackhole.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RouteNextHop {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ip: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interface_name: Option<String>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub directly_connected: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub unreachable: bool,
    pub fib: bool,
    pub active: bool,
}

/// The routes of a compiled configuration, IPv4 (`v6` false) or IPv6, by prefix.
fn routes(config: &SwitchConfig, v6: bool) -> Vec<(std::net::IpAddr, u8, Route)> {
    let mut out = Vec::new();
    for rif in &config.interfaces {
        for net in rif.addrs.iter().filter(|n| n.addr().is_ipv6() == v6) {
            let prefix = net.trunc();
            let hop = RouteNextHop {
                ip: None,
                interface_name: Some(rif.name.clone()),
                directly_connected: true,
                unreachable: false,
                fib: true,
                active: true,
            };
            let route = Route {
                prefix: prefix.to_string(),
                protocol: "connected",
                selected: true,
                installed: true,
                distance: 0,
                metric: 0,
                nexthops: vec![hop],
            };
            out.push((prefix.addr(), prefix.prefix_len(), route));
        }
    }
    for r in config.routes.iter().filter(|r| r.prefix.addr().is_ipv6() == v6) {
        let nexthops = if r.blackhole {
            let hop = RouteNextHop {
                ip: None,
                interface_name: None,
                directly_connected: false,
                unreachable: true,
                fib: true,
                active: true,
            };
            vec![hop]
        } else {
            r.nexthops
                .iter()
                .map(|h| RouteNextHop {
                    ip: Some(h.ip.to_string()),
                    interface_name: config.interfaces.get(h.rif.index()).map(|i| i.name.clone()),
                    directly_connected: false,
                    unreachable: false,
                    fib: true,
                    active: true,
                })
                .collect()
        };
        let route = Route {
            prefix: r.prefix.to_string(),
            protocol: "static",
            selected: true,
            installed: true,
            distance: 1,
            metric: 0,
            nexthops,
        };
        out.push((r.prefix.addr(), r.prefix.prefix_len(), route));
    }
    out.sort_by_key(|a| (a.0, a.1));
    out
}

/// `show ip route` (`v6` false) / `show ipv6 route`: FRR's code legend, then one line per route and next
/// hop (`C>*10.0.0.0/31 is directly connected, Ethernet0`, `S>*0.0.0.0/0 [1/0] via 10.0.0.1, Ethernet0`,
/// ECMP next hops on continuation lines under the first `via`).
pub fn ip_route(config: &SwitchConfig, v6: bool) -> String {
    let mut out = format!("{FRR_CODES}\n");
    for (_, _, r) in routes(config, v6) {
        match r.protocol {
            "connected" => {
                let iface = r.nexthops[0].interface_name.as_deref().unwrap_or_default();
                out.push_str(&format!("C>*{} is directly connected, {iface}\n", r.prefix));
            }
            _ => {
                let lead = format!("S>*{} [{}/{}] ", r.prefix, r.distance, r.metric);
                for (i, h) in r.nexthops.iter().enumerate() {
                    let hop = match (&h.ip, &h.interface_name) {
                        _ if h.unreachable => "unreachable (blackhole)".to_owned(),
                        (Some(ip), Some(ifname)) => format!("via {ip}, {ifname}"),
                        (Some(ip), None) => format!("via {ip}"),
                        (None, _) => "unreachable".to_owned(),
                    };
                    if i == 0 {
                        out.push_str(&format!("{lead}{hop}\n"));
                    } else {
                        out.push_str(&format!("  *{:w$}{hop}\n", "", w = lead.len() - 3));
                    }
                }
            }
        }
    }
    out
}

/// `show ip route json`: FRR's shape, `{"10.0.0.0/31": [{"prefix": ..., "protocol": "connected", ...}]}`.
pub fn ip_route_json(config: &SwitchConfig, v6: bool) -> Value {
    let mut out = serde_json::Map::new();
    for (_, _, r) in routes(config, v6) {
        let entry = out.entry(r.prefix.clone()).or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(list) = entry {
            list.push(serde_json::to_value(&r).unwrap_or(Value::Null));
        }
    }
    Value::Object(out)
}
