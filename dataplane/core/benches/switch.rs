//! Switch model benchmarks: the per-packet cost of the core on the T0 example configuration.
//!
//! - `switch/routed_64B`: `handle_frame` + `poll_transmit` of a routed 64-byte IPv4/UDP frame (LPM,
//!   neighbour, TTL and MAC rewrite, classification, enqueue, dequeue).
//! - `switch/routed_64B_th_buffers`: the same with the Broadcom TH BALANCED profile: buffer admission in
//!   cells on both sides, dynamic thresholds, WRED/ECN on the lossless queue, DWRR, PFC checks, release.
//! - `switch/decode_only_64B`: the baseline measured in the same run: only parsing the same frame. The ratio
//!   of the others to it is the cost of the pipeline relative to parsing.
//! - `switch/transit_view_64B`: what the switch's ingress parses instead (`wire::transit`: the same checks,
//!   the fields forwarding reads found in place, no owned headers).

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use lossless_core::model::config::ConfigDb;
use lossless_core::model::{PortId, Switch};
use lossless_core::time::Instant;
use lossless_core::wire::build::{self, Ipv4Flow};
use lossless_core::wire::ip::Ecn;
use lossless_core::wire::{self, ArpOperation, ArpRepr, EtherType, EthernetAddress};
use std::hint::black_box;
use std::net::Ipv4Addr;

const T0_YAML: &str = include_str!("../../../configs/t0.yaml");
const TH_YAML: &str = include_str!("../../../configs/profiles/th_balanced.yaml");
const ROUTER_MAC: EthernetAddress = EthernetAddress([0x02, 0x4c, 0x53, 0, 0, 1]);
const HOST_MAC: EthernetAddress = EthernetAddress([0x02, 0xbb, 0, 0, 0, 2]);

fn switch_with_host(yaml: &str) -> Switch {
    let mut sw = Switch::new();
    sw.apply(&ConfigDb::from_yaml_str(yaml).unwrap(), Instant::ZERO).unwrap();
    let arp = ArpRepr {
        operation: ArpOperation::Request,
        source_hardware_addr: HOST_MAC,
        source_protocol_addr: Ipv4Addr::new(192, 168, 0, 2),
        target_hardware_addr: EthernetAddress([0; 6]),
        target_protocol_addr: Ipv4Addr::new(192, 168, 0, 1),
    };
    let e8 = sw.port_id("Ethernet8").unwrap();
    sw.handle_frame(
        e8,
        build::ethernet(HOST_MAC, EthernetAddress::BROADCAST, None, EtherType::Arp, &build::arp(&arp)),
        Instant::from_ns(0),
    );
    for p in PortId::all(sw.port_count()) {
        let mut t = 0;
        while sw.port_backlog(p) > 0 {
            sw.poll_transmit(p, Instant::from_ns(t));
            t += 1_000;
        }
    }
    sw
}

fn routed_frame() -> Vec<u8> {
    let flow = Ipv4Flow {
        src_mac: EthernetAddress([0x02, 0xaa, 0, 0, 0, 1]),
        dst_mac: ROUTER_MAC,
        src_ip: Ipv4Addr::new(172, 16, 1, 1),
        dst_ip: Ipv4Addr::new(192, 168, 0, 2),
        src_port: 49152,
        dscp: 3,
        ecn: Ecn::Ect0,
        ttl: 64,
    };
    let frame = flow.udp(4791, &[0; 22]);
    assert_eq!(frame.len(), 64);
    frame
}

fn bench_switch(c: &mut Criterion) {
    let frame = routed_frame();
    let mut group = c.benchmark_group("switch");
    group.throughput(Throughput::Elements(1));
    group.bench_function("decode_only_64B", |b| b.iter(|| wire::decode(black_box(&frame)).unwrap()));
    group.bench_function("transit_view_64B", |b| b.iter(|| wire::transit(black_box(&frame)).unwrap()));

    for (name, yaml) in [("routed_64B", T0_YAML), ("routed_64B_th_buffers", TH_YAML)] {
        let mut sw = switch_with_host(yaml);
        let (e0, e8) = (sw.port_id("Ethernet0").unwrap(), sw.port_id("Ethernet8").unwrap());
        // Virtual time advances one 25G frame time per packet, so the paced line is always free.
        let mut now = 1_000_000u64;
        group.bench_function(name, |b| {
            b.iter_batched(
                || frame.clone(),
                |f| {
                    now += 100;
                    sw.handle_frame(e0, f, Instant::from_ns(now));
                    sw.poll_transmit(e8, Instant::from_ns(now)).expect("routed")
                },
                BatchSize::SmallInput,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, bench_switch);
criterion_main!(benches);
