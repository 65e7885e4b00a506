//! Switch model benchmarks: the per-packet cost of the core on the T0 example configuration.
//!
//! - `switch/routed_64B`: `handle_frame` + `poll_transmit` of a routed 64-byte IPv4/UDP frame (LPM,
//!   neighbour, TTL and MAC rewrite, classification, enqueue, dequeue).
//! - `switch/decode_only_64B`: the baseline measured in the same run: only parsing the same frame. The ratio
//!   of the two is the cost of the pipeline relative to parsing.

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use lossless_dataplane::model::Switch;
use lossless_dataplane::model::config::ConfigDb;
use lossless_dataplane::wire::build::{self, Ipv4Flow};
use lossless_dataplane::wire::ip::Ecn;
use lossless_dataplane::wire::{self, ArpOperation, ArpRepr, EtherType, EthernetAddress};
use std::hint::black_box;
use std::net::Ipv4Addr;

const T0_YAML: &str = include_str!("../../configs/t0.yaml");
const ROUTER_MAC: EthernetAddress = EthernetAddress([0x02, 0x4c, 0x53, 0, 0, 1]);
const HOST_MAC: EthernetAddress = EthernetAddress([0x02, 0xbb, 0, 0, 0, 2]);

fn t0_with_host() -> Switch {
    let mut sw = Switch::new();
    sw.apply(&ConfigDb::from_yaml_str(T0_YAML).unwrap(), 0).unwrap();
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
        0,
    );
    for p in 0..sw.port_count() {
        while sw.poll_transmit(p, 0).is_some() {}
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

    let mut sw = t0_with_host();
    let (e0, e8) = (sw.port_id("Ethernet0").unwrap(), sw.port_id("Ethernet8").unwrap());
    let mut now = 1u64;
    group.bench_function("routed_64B", |b| {
        b.iter_batched(
            || frame.clone(),
            |f| {
                now += 1;
                sw.handle_frame(e0, f, now);
                sw.poll_transmit(e8, now).expect("routed")
            },
            BatchSize::SmallInput,
        )
    });
    group.finish();
}

criterion_group!(benches, bench_switch);
criterion_main!(benches);
