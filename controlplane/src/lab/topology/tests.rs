//! Topology files: what validates, and how errors are named.

use super::*;

const SWITCH: &str = r#"
PORT:
  Ethernet0: { speed: 1000 }
  Ethernet4: { speed: 1000 }
  Ethernet8: { speed: 1000 }
"#;

fn parse(text: &str) -> anyhow::Result<Topology> {
    struct One;
    impl ConfigFiles for One {
        fn read(&self, name: &str) -> anyhow::Result<(String, String)> {
            match name {
                "sw.yaml" => Ok((SWITCH.to_owned(), "sw.yaml".into())),
                other => bail!("cannot read {other}"),
            }
        }
    }
    Topology::parse(text, "t", "test.yaml", &One)
}

fn error_of(text: &str) -> String {
    format!("{:#}", parse(text).unwrap_err())
}

#[test]
fn a_small_topology_validates_with_defaults() {
    let t = parse(
        r#"
switches: { sw1: { config: sw.yaml } }
hosts:
  h1: { ip: 10.0.0.1/24 }
  h2: { ip: 10.0.0.2/24, attach: "sw1:Ethernet4", gateway-mac: auto, pfc: "3", line-rate-mbps: 100 }
links:
  - sw1:Ethernet0 -- h1:eth0
"#,
    )
    .unwrap();
    assert_eq!(t.name, "t");
    assert_eq!(t.links.len(), 2);
    let h1 = t.host("h1").unwrap();
    assert_eq!(
        (h1.line_rate_mbps, h1.mtu, h1.pfc.clone(), h1.interface.as_str()),
        (1000, 1500, vec![3, 4], "eth0")
    );
    assert_eq!(h1.attached, Some(End { node: "sw1".into(), port: "Ethernet0".into() }));
    let h2 = t.host("h2").unwrap();
    assert_eq!((h2.line_rate_mbps, h2.pfc.clone()), (100, vec![3]));
    assert!(h2.gateway_mac.is_some());
    assert_ne!(h1.mac, h2.mac);
    assert_eq!(t.links[0].mtu, 9100);
}

#[test]
fn flows_off_the_subnet_go_to_the_gateway() {
    let text = |gw: &str| {
        format!(
            "switches: {{ sw1: {{ config: sw.yaml }} }}\nhosts:\n  h1: {{ ip: 10.0.0.1/31, attach: 'sw1:Ethernet0'{gw} }}\n  \
             h2: {{ ip: 10.1.0.2/24, attach: 'sw1:Ethernet4', gateway-mac: auto }}\n  h3: {{ ip: 10.1.0.3/24, attach: 'sw1:Ethernet8' }}\n\
             traffic: [ {{ from: h1, to: h2, priority: 3, dscp: 3 }}, {{ from: h2, to: h3, priority: 3, dscp: 3 }} ]"
        )
    };
    let t = parse(&text(", gateway-mac: '02:aa:00:00:00:01'")).unwrap();
    let (h1, h2, h3) = (t.host("h1").unwrap(), t.host("h2").unwrap(), t.host("h3").unwrap());
    assert_eq!(h1.next_hop_mac(h2), Some("02:aa:00:00:00:01".parse().unwrap()), "routed: the gateway");
    assert_eq!(h2.next_hop_mac(h3), Some(h3.mac), "same subnet: the host itself");
    assert!(!h1.on_subnet(std::net::Ipv4Addr::new(10, 0, 0, 2)) && h1.on_subnet(h1.ip));
    let e = error_of(&text(""));
    assert!(
        e.contains(
            "traffic[0] (h1 -> h2): h2 (10.1.0.2) is not on h1's subnet 10.0.0.1/31: give h1 a gateway-mac"
        ),
        "{e}"
    );
}

#[test]
fn unknown_node_is_named_with_the_known_ones() {
    let e = error_of(
        "switches: { sw1: { config: sw.yaml } }\nhosts: { h1: { ip: 10.0.0.1/24 } }\nlinks: [ 'sw1:Ethernet0 -- h9:eth0', 'sw1:Ethernet4 -- h1:eth0' ]",
    );
    assert!(
        e.contains("links[0] (sw1:Ethernet0 -- h9:eth0): unknown node h9 (switches: sw1; hosts: h1)"),
        "{e}"
    );
}

#[test]
fn a_port_used_twice_is_an_error() {
    let e = error_of(
        "switches: { sw1: { config: sw.yaml } }\nhosts: { h1: { ip: 10.0.0.1/24 }, h2: { ip: 10.0.0.2/24 } }\nlinks: [ 'sw1:Ethernet0 -- h1:eth0', 'sw1:Ethernet0 -- h2:eth0' ]",
    );
    assert!(e.contains("sw1:Ethernet0 is used twice (also by links[0]"), "{e}");
}

#[test]
fn address_clashes_are_errors() {
    let e = error_of(
        "switches: { sw1: { config: sw.yaml } }\nhosts: { h1: { ip: 10.0.0.1/24, mac: '02:00:00:00:00:01' }, h2: { ip: 10.0.0.1/24, mac: '02:00:00:00:00:01' } }\nlinks: [ 'sw1:Ethernet0 -- h1:eth0', 'sw1:Ethernet4 -- h2:eth0' ]",
    );
    assert!(e.contains("hosts.h2.ip: 10.0.0.1 is also h1's address"), "{e}");
    assert!(e.contains("hosts.h2.mac: 02:00:00:00:00:01 is also h1's MAC"), "{e}");
}

#[test]
fn a_switch_port_missing_from_the_config_is_an_error() {
    let e = error_of(
        "switches: { sw1: { config: sw.yaml } }\nhosts: { h1: { ip: 10.0.0.1/24, attach: 'sw1:Ethernet12' } }",
    );
    assert!(e.contains("has no port Ethernet12 (PORT: Ethernet0, Ethernet4, Ethernet8)"), "{e}");
}

#[test]
fn inline_configs_netem_and_switch_links() {
    let t = parse(
        r#"
name: two
switches:
  a: { config: { PORT: { Ethernet0: { speed: 1000, mtu: 4200 } } } }
  b: { config: sw.yaml }
links:
  - { link: "a:Ethernet0 — b:Ethernet8", delay: 2ms, jitter: 100us, loss: 0.5% }
"#,
    )
    .unwrap();
    assert_eq!(t.name, "two");
    assert_eq!(t.links[0].netem, ["delay", "2ms", "100us", "loss", "0.5%"]);
    assert_eq!(t.links[0].mtu, 4200);
    let e = error_of(
        "switches: { a: { config: sw.yaml } }\nlinks: [ { link: 'a:Ethernet0 -- a:Ethernet4', delay: fast } ]",
    );
    assert!(e.contains("delay \"fast\": expected a time"), "{e}");
    assert!(e.contains("both ends are on a"), "{e}");
}

#[test]
fn dcqcn_options_are_checked_as_rocehost_checks_them() {
    let host = |dcqcn: &str| {
        format!(
            "switches: {{ sw1: {{ config: sw.yaml }} }}\nhosts:\n  h1: {{ ip: 10.0.0.1/24, attach: 'sw1:Ethernet0', dcqcn: {dcqcn} }}"
        )
    };
    let t = parse(&host("{ time-scale: 500, cnp_interval_ns: 0, clamp_tgt_rate: true }")).unwrap();
    let h1 = t.host("h1").unwrap();
    assert_eq!(h1.dcqcn_time_scale, 500);
    assert_eq!(
        h1.dcqcn_params,
        [("clamp_tgt_rate".to_owned(), "true".to_owned()), ("cnp_interval_ns".to_owned(), "0".to_owned())]
    );
    let t = parse(&host("{}")).unwrap();
    assert_eq!((t.hosts[0].dcqcn_time_scale, t.hosts[0].dcqcn_params.len()), (1, 0));
    let e = error_of(&host(
        "{ time-scale: 0, rpg_bogus: 1, rpg_min_dec_fac: 101, cnp_dscp: [1], time_scale: 5 }",
    ));
    for needle in [
        "hosts.h1.dcqcn.time-scale: time_scale: 0 is outside 1..=1000000",
        "hosts.h1.dcqcn.rpg_bogus: unknown DCQCN parameter \"rpg_bogus\" (reaction point: clamp_tgt_rate, ",
        "hosts.h1.dcqcn.rpg_min_dec_fac: rpg_min_dec_fac: 101 is above 100 (%)",
        "hosts.h1.dcqcn.cnp_dscp: expected a number",
        "hosts.h1.dcqcn.time_scale: write time-scale",
    ] {
        assert!(e.contains(needle), "{needle}: {e}");
    }
}

#[test]
fn bad_names_and_fields() {
    let e = error_of("name: 'bad name'\nhosts: { h-1: { ip: 10.0.0.1 } }");
    assert!(e.contains("lab name \"bad name\""), "{e}");
    assert!(e.contains("hosts.h-1: \"h-1\": node names"), "{e}");
    assert!(e.contains("prefix length"), "{e}");
    assert!(e.contains("hosts.h-1: not linked"), "{e}");
    let e = error_of("hosts: { h1: { ip: 10.0.0.1/24, colour: red } }");
    assert!(e.contains("unknown field `colour`"), "{e}");
}

#[test]
fn pathologically_deep_text_is_refused_fast_naming_the_limit() {
    let t0 = std::time::Instant::now();
    let deep = format!("switches: {{ sw1: {{ config: {}1 }} }}\n", "{a: ".repeat(100_000));
    let err = error_of(&deep);
    assert!(err.starts_with("test.yaml: ") && err.contains("limit of 64 levels"), "{err}");
    assert!(t0.elapsed() < std::time::Duration::from_millis(500), "{:?}", t0.elapsed());
}

#[test]
fn a_hosts_receive_pipeline_is_typed_checked_and_defaults_to_none() {
    let t = parse(
        r#"
switches: { sw1: { config: sw.yaml } }
hosts:
  h1: { ip: 10.0.0.1/24, attach: "sw1:Ethernet0",
        rx-pipeline: { buffer_bytes: 262144, xoff_bytes: 131072, xon_bytes: 65536, page_bytes: 2097152 } }
  h2: { ip: 10.0.0.2/24, attach: "sw1:Ethernet4" }
"#,
    )
    .unwrap();
    let rx = t.host("h1").unwrap().rx_pipeline;
    assert_eq!(
        (rx.buffer_bytes, rx.xoff_bytes, rx.xon_bytes, rx.page_bytes),
        (262144, 131072, 65536, 2 << 20)
    );
    assert_eq!(rx.page_miss_ns, 0, "unset fields keep their defaults");
    assert!(!t.host("h2").unwrap().rx_pipeline.enabled(), "no rx-pipeline: frames consumed on arrival");
    let bad = |rx: &str| {
        error_of(&format!(
            "switches: {{ sw1: {{ config: sw.yaml }} }}\nhosts:\n  h1: {{ ip: 10.0.0.1/24, attach: \"sw1:Ethernet0\", rx-pipeline: {rx} }}\n"
        ))
    };
    let e = bad("{ buffer_bytes: 1000, xoff_bytes: 500, xon_bytes: 600 }");
    assert!(e.contains("hosts.h1.rx-pipeline: xon_bytes: 600 is not below xoff_bytes 500"), "{e}");
    let e = bad("{ buffer_bytes: 1000, colour: 1 }");
    assert!(e.contains("unknown field `colour`"), "{e}");
}

#[test]
fn retransmit_is_go_back_n_unless_a_host_asks_for_go_back_0() {
    use lossless_dataplane::nic::Retransmit;
    let host = |extra: &str| {
        format!(
            "switches: {{ sw1: {{ config: sw.yaml }} }}\nhosts:\n  h1: {{ ip: 10.0.0.1/24, attach: 'sw1:Ethernet0'{extra} }}"
        )
    };
    assert_eq!(parse(&host("")).unwrap().hosts[0].retransmit, Retransmit::GoBackN);
    assert_eq!(parse(&host(", retransmit: go-back-0")).unwrap().hosts[0].retransmit, Retransmit::GoBack0);
    assert_eq!(parse(&host(", retransmit: go-back-n")).unwrap().hosts[0].retransmit, Retransmit::GoBackN);
    let e = error_of(&host(", retransmit: go-back-1"));
    assert!(e.contains("unknown variant `go-back-1`, expected `go-back-n` or `go-back-0`"), "{e}");
}

#[test]
fn rocehost_nic_args_describe_the_hosts_nic() {
    let t = parse(
        r#"
switches: { sw1: { config: sw.yaml } }
hosts:
  h1: { ip: 10.0.0.1/24, mac: "02:00:00:00:00:01", pfc: "3,4", line-rate-mbps: 100, mtu: 1024 }
  h2: { ip: 10.0.0.2/24, attach: "sw1:Ethernet4", pfc: none }
links:
  - sw1:Ethernet0 -- h1:eth0
"#,
    )
    .unwrap();
    let h1 = t.host("h1").unwrap().rocehost_nic_args("veth1");
    assert_eq!(
        h1,
        [
            "--interface",
            "veth1",
            "--ip",
            "10.0.0.1",
            "--mac",
            "02:00:00:00:00:01",
            "--line-rate-mbps",
            "100",
            "--mtu",
            "1024",
            "--pfc-enable",
            "3,4"
        ]
    );
    let h2 = t.host("h2").unwrap().rocehost_nic_args("eth0");
    assert!(!h2.contains(&"--pfc-enable".to_owned()), "no PFC priorities, no --pfc-enable: {h2:?}");
}
