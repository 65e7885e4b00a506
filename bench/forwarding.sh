#!/usr/bin/env bash
# Forwarding benchmark: switchd against Linux IPv4 forwarding, measured the same way in the same run.
#
#   h1:eth0 ── m0 [mid] m1 ── h2:eth0      (three network namespaces, veth pairs; h1 10.1.0.2, h2 10.2.0.2)
#
# mid forwards first with the kernel (ip_forward=1, static neighbours: the baseline), then with the real
# switchd binary on m0/m1 (two routed 100G ports, static NEIGH, and the full QoS pipeline of
# configs/profiles/th_balanced.yaml: DSCP/TC/PG/queue maps, PFC 3,4 + watchdog, buffer pools/profiles/PGs/
# queues, DWRR, WRED/ECN). For each, with batched AF_PACKET sockets in h1 and h2:
#   - throughput: h1 sends 64 B and 1500 B IPv4/UDP frames (DSCP 3, ECT(0)) as fast as sendmmsg takes
#     them for --seconds (default 3, after 0.5 s of warm-up); h2 counts what arrives per second;
#   - latency: h1 sends at 10 kpps frames stamped with CLOCK_MONOTONIC (one clock for the whole host);
#     h2's application takes receive time − send time → p50/p99/p99.9/max and loss.
# switchd runs twice: as started by default, and with --busy-poll-us 1000 ("switchd-poll"). `--mode all` adds
# "floor" and "floor-spin", a minimal user-space forwarder (AF_PACKET batches, MAC+TTL rewrite, nothing else;
# sleeping or spinning): what leaving the kernel costs on this machine, whatever the forwarder does.
# It closes with each forwarder's ratios to the kernel, PASS/FAIL against the targets (64 B pps ≥ 0.85×,
# p99 ≤ 1.5×).
# Results depend on the machine being otherwise idle; fwd-bench warns when it is not.
# The benchmark is the fwd-bench binary of the lossless-bench crate (dataplane/bench).
#
# Usage (root: namespaces and AF_PACKET sockets):
#   sudo bench/forwarding.sh [--seconds 3] [--sizes 64,1500] [--rate 10000] [--latency-seconds 2] [--json]
#   sudo bench/forwarding.sh --mode kernel      # a later --mode overrides the default "both"
#   sudo bench/forwarding.sh --mode all         # kernel, floor, floor-spin, switchd, switchd-poll
# Namespaces (fbh1-*, fbmid-*, fbh2-*) and switchd are removed on exit, on errors and on Ctrl-C.
set -euo pipefail

if [[ $(id -u) -ne 0 ]]; then
    echo "bench/forwarding.sh: run as root (network namespaces, AF_PACKET sockets): sudo $0 $*" >&2
    exit 1
fi
for tool in ip cargo; do
    command -v "$tool" >/dev/null || { echo "bench/forwarding.sh: $tool not found (iproute2, Rust)" >&2; exit 1; }
done

cd "$(dirname "$0")/.."
# shellcheck source=bench/build.sh
. bench/build.sh
bench_build -p lossless-dataplane --bin switchd -p lossless-bench --bin fwd-bench
# exec: Ctrl-C reaches the benchmark directly, which then removes what it created.
exec "$target_dir/release/fwd-bench" --mode both --switchd "$target_dir/release/switchd" "$@"
