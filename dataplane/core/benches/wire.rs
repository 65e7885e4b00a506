//! Wire-format benchmarks: the per-frame work every packet pays on ingress.
//!
//! - `decode/rocev2_64B`: full decode of a 64-byte RoCEv2 frame (Ethernet, IPv4, UDP, BTH).
//! - `edit/ecn_ce_and_ttl`: mark CE and decrement TTL in place with RFC 1624 checksum updates, against
//!   `edit/full_checksum` which recomputes the header checksum: the baseline the incremental update beats.

use criterion::{Criterion, criterion_group, criterion_main};
use lossless_core::wire::{self, build};
use std::hint::black_box;

fn rocev2_frame() -> Vec<u8> {
    build::rocev2_v4_example(26, wire::ip::Ecn::Ect0, 64)
}

fn bench_decode(c: &mut Criterion) {
    let frame = rocev2_frame();
    assert_eq!(frame.len(), 64);
    c.bench_function("decode/rocev2_64B", |b| b.iter(|| wire::decode(black_box(&frame)).unwrap()));
}

fn bench_edit(c: &mut Criterion) {
    let frame = rocev2_frame();
    let l3 = wire::ethernet::HEADER_LEN;
    let mut group = c.benchmark_group("edit");
    group.bench_function("ecn_ce_and_ttl", |b| {
        b.iter_batched_ref(
            || frame.clone(),
            |f| {
                let mut ip = wire::Ipv4Packet::new_unchecked(&mut f[l3..]);
                ip.set_ecn_ce();
                ip.decrement_ttl();
            },
            criterion::BatchSize::SmallInput,
        )
    });
    group.bench_function("full_checksum", |b| {
        b.iter_batched_ref(
            || frame.clone(),
            |f| {
                let mut ip = wire::Ipv4Packet::new_unchecked(&mut f[l3..]);
                ip.set_ecn(wire::ip::Ecn::Ce);
                ip.set_ttl(ip.ttl() - 1);
                ip.fill_checksum();
            },
            criterion::BatchSize::SmallInput,
        )
    });
    group.finish();
}

criterion_group!(benches, bench_decode, bench_edit);
criterion_main!(benches);
