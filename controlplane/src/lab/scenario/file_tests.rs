//! The scenario file: what parses, and how errors name the step or expectation.

use super::*;

const TOPOLOGY: &str = r#"
topology:
  switches:
    sw1:
      config:
        PORT: { Ethernet0: { speed: 1000 }, Ethernet4: { speed: 1000 } }
        VLAN: { Vlan10: { vlanid: 10 } }
        VLAN_MEMBER: { "Vlan10|Ethernet0": { tagging_mode: untagged }, "Vlan10|Ethernet4": { tagging_mode: untagged } }
  hosts:
    h1: { ip: 10.0.0.1/24, attach: "sw1:Ethernet0" }
    h2: { ip: 10.0.0.2/24, attach: "sw1:Ethernet4", rx-pipeline: { buffer_bytes: 10000, xoff_bytes: 5000 } }
"#;

fn parse(rest: &str) -> anyhow::Result<Scenario> {
    Scenario::parse(&format!("{TOPOLOGY}{rest}"), "t", "t.yaml", Path::new("."))
}

fn error_of(rest: &str) -> String {
    format!("{:#}", parse(rest).unwrap_err())
}

#[test]
fn steps_and_expectations_parse() {
    let s = parse(
        r#"
steps:
  - { at: 0, traffic: [ { from: h1, to: h2, priority: 3, dscp: 3 }, { from: h2, to: h1, priority: 3, dscp: 3 } ] }
  - { at: 900, flush-fdb: { switch: sw1, port: Ethernet4 } }
  - { at: 500, stop-host: { host: h2 } }
  - { at: 500, apply: { switch: sw1, config: { SWITCH: { switch: { lossless_fdb_miss_action: flood } } } } }
  - { at: 100, storm: { host: h1, priorities: [3, 4], interval-us: 50, stop: 200 } }
  - { at: 150, rx-stuck: { host: h2, stop: 250 } }
expect:
  - pfc_tx: { switch: sw1, port: [Ethernet0, Ethernet4], priority: 3, min: 1 }
  - cnps: { flow: [0, 1], max: 0 }
  - ratio: { of: { pause_ms: { flow: 1 } }, to: { pause_ms: { flow: 0 } }, max: 0.5 }
  - fdb_entry: { switch: sw1, host: h2, present: false }
  - goodput_mbps_at_least: { flow: 0, value: 10 }
  - queue_depth: { switch: sw1, port: Ethernet4, queue: 3, max: 20 }
  - drop_reason: { switch: sw1, reason: FDB_MISS_LOSSLESS, min: 1 }
  - pfcwd_detected: { switch: sw1, port: Ethernet4, queue: 3, within_ms: 650 }
  - throughput_mbps: { flow: [1, 0], from_ms: 6, to_ms: 10, max: 0 }
  - pfc_paused_at_end: { switch: sw1, port: [Ethernet0, Ethernet4], priority: 3, paused: true }
  - port_paused_ms: { switch: sw1, port: [Ethernet0, Ethernet4], priority: 3, max: 10 }
  - delivered_mbps: { flow: 1, min: 5 }
"#,
    )
    .unwrap();
    let order: Vec<(&str, u64)> = s.actions.iter().map(|a| (a.step.as_str(), a.at_ms)).collect();
    assert_eq!(
        order,
        [("steps[2]", 500), ("steps[3]", 500), ("steps[1]", 900)],
        "time order, then file order"
    );
    match &s.actions[1].kind {
        ActionKind::Apply { config, replace: false, .. } => {
            assert_eq!(config.tables["SWITCH"]["switch"]["lossless_fdb_miss_action"], "flood")
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(s.topology.traffic.len(), 2);
    assert_eq!(s.storms.len(), 1);
    assert_eq!((s.storms[0].priorities.as_slice(), s.storms[0].interval_us), ([3, 4].as_slice(), 50));
    assert_eq!((s.storms[0].start_ms, s.storms[0].stop_ms), (100, Some(200)));
    assert_eq!(s.duration_ms, 3000);
    assert_eq!(s.expect.len(), 12);
    assert_eq!(s.rx_stuck.len(), 1);
    assert_eq!(
        (s.rx_stuck[0].host.as_str(), s.rx_stuck[0].start_ms, s.rx_stuck[0].stop_ms),
        ("h2", 150, Some(250))
    );
    assert!(matches!(
        &s.expect[10],
        Expect::Bounds { metric: Metric::PortPausedMs { ports, priority: 3, .. }, max: Some(m), .. }
            if ports.len() == 2 && *m == 10.0
    ));
    assert!(matches!(
        &s.expect[11],
        Expect::Bounds { metric: Metric::Flow { what: FlowMetric::DeliveredMbps, flows }, .. } if flows == &[1]
    ));
    assert!(matches!(
        &s.expect[8],
        Expect::Throughput { flows, from_ms: 6, to_ms: 10, min: None, max: Some(m) } if flows == &[1, 0] && *m == 0.0
    ));
    assert!(matches!(
        &s.expect[9],
        Expect::PausedAtEnd { ports, priority: 3, paused: true, .. } if ports.len() == 2
    ));
    assert!(
        matches!(&s.expect[0], Expect::Bounds { metric: Metric::PfcTx { ports, .. }, .. } if ports.len() == 2)
    );
    assert!(matches!(
        &s.expect[2],
        Expect::Ratio { of: Metric::Flow { what: FlowMetric::PauseMs, flows: of }, max: Some(m), .. }
            if of == &[1] && *m == 0.5
    ));
}

#[test]
fn the_shipped_scenarios_parse() {
    let dir = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../configs/scenarios"));
    for name in [
        "pfc-storm",
        "arp-mac-missing",
        "arp-mac-missing-flood",
        "incast-dcqcn",
        "flood-deadlock",
        "flood-deadlock-drop",
        "nic-storm",
        "nic-storm-switch-wd",
        "nic-storm-nic-wd",
        "nic-slow-receiver",
        "nic-slow-receiver-2m",
    ] {
        let s = Scenario::load(&dir.join(format!("{name}.yaml"))).unwrap_or_else(|e| panic!("{name}: {e:#}"));
        assert!(!s.expect.is_empty(), "{name}");
    }
}

#[test]
fn errors_name_the_step_or_expectation() {
    let e = error_of("steps: [ { at: 1, stop-host: { host: h9 } } ]");
    assert!(e.contains("steps[0]: unknown host h9 (h1, h2)"), "{e}");
    let e = error_of("steps: [ { at: 1, flush-fdb: { switch: sw1, port: Ethernet8 } } ]");
    assert!(e.contains("steps[0]: sw1 has no port Ethernet8 (PORT: Ethernet0, Ethernet4)"), "{e}");
    let e = error_of("steps: [ { at: 1, apply: { switch: sw2, config: { PORT: {} } } } ]");
    assert!(e.contains("steps[0]: unknown switch sw2 (switches: sw1)"), "{e}");
    let e = error_of("steps: [ { at: 1, apply: { switch: sw1, config: [1] } } ]");
    assert!(
        e.contains(
            "steps[0].apply.config: invalid type: sequence, expected a file name or the content inline"
        ),
        "{e}"
    );
    let e = error_of("steps: [ { at: 1, apply: { switch: sw1, config: missing.yaml } } ]");
    assert!(e.contains("steps[0].apply.config: cannot read ./missing.yaml"), "{e}");
    let e = error_of("steps: [ { at: 1 } ]");
    assert!(
        e.contains(
            "steps[0]: expected one of traffic, storm, rx-stuck, stop-host, flush-fdb, apply or link-down"
        ),
        "{e}"
    );
    let e = error_of("steps: [ { at: 1, stop-host: { host: h1 }, colour: red } ]");
    assert!(e.contains("steps[0]: unknown field `colour`"), "{e}");
    let e = error_of("steps: [ { at: 1, rx-stuck: { host: h1, stop: 5 } } ]");
    assert!(e.contains("steps[0]: rx-stuck: host h1 has no receive buffer (rx-pipeline: "), "{e}");
    let e = error_of("steps: [ { at: 5, rx-stuck: { host: h2, stop: 5 } } ]");
    assert!(e.contains("steps[0]: stop must be after at"), "{e}");
    let e = error_of("steps: [ { at: 1, rx-stuck: { host: h7 } } ]");
    assert!(e.contains("steps[0]: unknown host h7 (h1, h2)"), "{e}");
    let e = error_of("expect: [ { port_paused_ms: { switch: sw1, port: Ethernet9, priority: 3, max: 1 } } ]");
    assert!(e.contains("expect[0]: sw1 has no port Ethernet9"), "{e}");
    let e = error_of("steps: [ { at: 1, storm: { host: h1, priorities: [9] } } ]");
    assert!(e.contains("steps[0].priorities: numbers 0-7"), "{e}");
    let e = error_of("expect: [ { pfc_tx: { switch: sw1, port: Ethernet9, priority: 3, min: 1 } } ]");
    assert!(e.contains("expect[0]: sw1 has no port Ethernet9"), "{e}");
    let e = error_of("expect: [ { cnps: { flow: 0, min: 1 } } ]");
    assert!(e.contains("expect[0].cnps: flow 0: there are 0 flows"), "{e}");
    let e = error_of("expect: [ { pfc_tx: { switch: sw1, port: Ethernet0, priority: 3 } } ]");
    assert!(e.contains("expect[0].pfc_tx: give min, max or both"), "{e}");
    let e = error_of("expect: [ { pfc_tx: { switch: sw1, port: Ethernet0, priority: 9, min: 1 } } ]");
    assert!(e.contains("expect[0].pfc_tx.priority: 0-7"), "{e}");
    let e = error_of("expect: [ { pfc_tx: { switch: sw1, port: Ethernet0, prio: 3, min: 1 } } ]");
    assert!(e.contains("expect[0].pfc_tx: unknown field `prio`"), "{e}");
    let e = error_of("expect: [ { throughput_mbps: { flow: 0, from_ms: 5, to_ms: 5, max: 0 } } ]");
    assert!(e.contains("expect[0].throughput_mbps: to_ms (5) must be after from_ms (5)"), "{e}");
    let e = error_of("expect: [ { throughput_mbps: { flow: 0, from_ms: 1, to_ms: 5 } } ]");
    assert!(e.contains("expect[0].throughput_mbps: give min, max or both"), "{e}");
    let e = error_of(
        "expect: [ { pfc_paused_at_end: { switch: sw1, port: Ethernet9, priority: 3, paused: true } } ]",
    );
    assert!(e.contains("expect[0]: sw1 has no port Ethernet9"), "{e}");
    let e =
        error_of("expect: [ { pfc_paused_at_end: { switch: sw1, port: [], priority: 3, paused: true } } ]");
    assert!(e.contains("expect[0].pfc_paused_at_end.port: an empty list"), "{e}");
    let e = error_of("expect: [ { colour: { flow: 0 } } ]");
    assert!(e.contains("expect[0]: unknown variant `colour`"), "{e}");
}

const ONE_FLOW: &str =
    "duration-ms: 10\nsteps: [ { at: 0, traffic: { from: h1, to: h2, priority: 3, dscp: 3 } } ]\n";

#[test]
fn rate_windows_and_ecn_onsets_parse_and_say_what_is_wrong() {
    let s = parse(&format!(
        "{ONE_FLOW}expect:\n  - flow_rate_mbps: {{ flow: 0, of: acked, value: 900, within_percent: 5, from_ms: 2, to_ms: 10 }}\n  - ecn_before_xoff: {{ switch: sw1, port: Ethernet4, queue: 3 }}\n"
    ))
    .unwrap();
    assert!(matches!(
        &s.expect[0],
        Expect::FlowRate { flows, of: super::super::timed::RateOf::Acked, from_ms: 2, to_ms: 10, .. } if flows == &[0]
    ));
    assert!(matches!(&s.expect[1], Expect::EcnBeforeXoff { queue: 3, .. }));
    assert_eq!(s.flow_snapshot_instants_ms().into_iter().collect::<Vec<_>>(), [2, 10]);
    let rate =
        |fields: &str| error_of(&format!("{ONE_FLOW}expect: [ {{ flow_rate_mbps: {{ {fields} }} }} ]"));
    let e = rate("flow: 0, of: sent, value: 900, within_percent: 5, from_ms: 5, to_ms: 5");
    assert!(e.contains("expect[0].flow_rate_mbps: from_ms 5 must be before to_ms 5"), "{e}");
    let e = rate("flow: 0, of: sent, value: 900, within_percent: 5, from_ms: 5, to_ms: 11");
    assert!(e.contains("flow_rate_mbps.to_ms: 11 is after the scenario's end (duration-ms 10)"), "{e}");
    let e = rate("flow: 0, of: sent, value: 900, within_percent: 0, from_ms: 1, to_ms: 2");
    assert!(e.contains("flow_rate_mbps.within_percent: 0 is outside (0, 100]"), "{e}");
    let e = rate("flow: 0, of: sent, value: -1, within_percent: 5, from_ms: 1, to_ms: 2");
    assert!(e.contains("flow_rate_mbps.value: -1 is not a rate"), "{e}");
    let e = rate("flow: 3, of: sent, value: 1, within_percent: 5, from_ms: 1, to_ms: 2");
    assert!(e.contains("flow_rate_mbps: flow 3: there are 1 flows"), "{e}");
    let e = rate("flow: 0, of: received, value: 1, within_percent: 5, from_ms: 1, to_ms: 2");
    assert!(e.contains("unknown variant `received`, expected `sent` or `acked`"), "{e}");
    let e = error_of(&format!(
        "{ONE_FLOW}expect: [ {{ ecn_before_xoff: {{ switch: sw1, port: Ethernet4, queue: 8 }} }} ]"
    ));
    assert!(e.contains("expect[0].ecn_before_xoff.queue: 8 is outside 0-7"), "{e}");
    let e = error_of(&format!(
        "{ONE_FLOW}expect: [ {{ ecn_before_xoff: {{ switch: sw1, port: Ethernet9, queue: 3 }} }} ]"
    ));
    assert!(e.contains("expect[0]: sw1 has no port Ethernet9"), "{e}");
}

#[test]
fn a_link_down_step_takes_a_linked_switch_port_down_and_back_up() {
    let s = parse("steps:\n  - { at: 2, link-down: { end: \"sw1:Ethernet4\", stop: 5 } }\n").unwrap();
    let end = crate::lab::topology::End { node: "sw1".into(), port: "Ethernet4".into() };
    let got: Vec<(u64, bool)> = s
        .actions
        .iter()
        .map(|a| match &a.kind {
            ActionKind::LinkState { end: e, up } if *e == end => (a.at_ms, *up),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(got, [(2, false), (5, true)]);
    for (step, needle) in [
        (
            "{ at: 2, link-down: { end: \"sw1:Ethernet8\" } }",
            "steps[0]: link-down: sw1:Ethernet8 is not a linked switch port",
        ),
        (
            "{ at: 2, link-down: { end: \"h1:eth0\" } }",
            "steps[0]: link-down: h1:eth0 is not a linked switch port",
        ),
        ("{ at: 2, link-down: { end: \"sw1\" } }", "steps[0].link-down.end: \"sw1\": expected NODE:PORT"),
        ("{ at: 5, link-down: { end: \"sw1:Ethernet4\", stop: 5 } }", "steps[0]: stop must be after at"),
    ] {
        let e = error_of(&format!("steps:\n  - {step}\n"));
        assert!(e.contains(needle), "{step}: {e}");
    }
}

#[test]
fn step_flows_are_typed_and_their_errors_name_the_field_and_line() {
    // The rest starts on line 12, after the 11 lines of TOPOLOGY.
    let s =
        parse("steps:\n  - { at: 7, traffic: { from: h1, to: h2, priority: 3, dscp: 3, rate-mbps: 50 } }\n")
            .unwrap();
    assert_eq!(s.topology.traffic.len(), 1);
    let f = &s.topology.traffic[0];
    assert_eq!((f.from.as_str(), f.to.as_str(), f.rate_mbps, f.start_ms), ("h1", "h2", Some(50), 7));
    for (step, needle) in [
        (
            "{ at: 0, traffic: { from: h1, to: h2, priority: 3, dscp: 3, rate-mbs: 5 } }",
            "t.yaml: steps[0].traffic: unknown field `rate-mbs`",
        ),
        (
            "{ at: 0, traffic: [ { from: h1, to: h2, priority: 3, dscp: 3 }, { from: h2, priority: 3 } ] }",
            "t.yaml: steps[0].traffic[1]: missing field `to`",
        ),
        (
            "{ at: 0, traffic: { from: h1, to: h2, priority: high, dscp: 3 } }",
            "t.yaml: steps[0].traffic.priority: invalid type: string \"high\", expected u8",
        ),
    ] {
        let e = error_of(&format!("steps:\n  - {step}\n"));
        assert!(e.contains(needle) && e.contains("at line 13 column"), "{step}: {e}");
    }
    let e =
        error_of("steps: [ { at: 4, traffic: { from: h1, to: h2, priority: 3, dscp: 3, start-ms: 2 } } ]");
    assert!(e.contains("steps[0].traffic: start-ms 2: a step's flows start at its at (4)"), "{e}");
    // Checked against the topology as a topology's own flows are.
    let e = error_of("steps: [ { at: 0, traffic: { from: h1, to: h9, priority: 3, dscp: 3 } } ]");
    assert!(e.contains("traffic[0] (h1 -> h9): h9 is not a host of this topology (hosts: h1, h2)"), "{e}");
}

#[test]
fn an_inline_topology_error_names_the_field_and_line_of_the_scenario() {
    let text = "name: t\ntopology:\n  hosts:\n    h1: { ip: 10.0.0.1/24, colour: red }\n";
    let e = format!("{:#}", Scenario::parse(text, "t", "t.yaml", Path::new(".")).unwrap_err());
    assert!(e.contains("t.yaml: topology.hosts.h1: unknown field `colour`"), "{e}");
    assert!(e.contains("at line 4 column"), "{e}");
}
