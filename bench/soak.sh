#!/usr/bin/env bash
# Soak test of switchd (not run by CI): a 4-host lab around the real switchd for N minutes (default 30).
#
#   h0 lossless DSCP 3 ─┐
#   h1 lossless DSCP 3+4├─ switchd (1 Gb/s ports, PFC 3,4 + watchdog) ── h3 receiver
#   h2 lossy DSCP 8 ────┘
#
# Incast on h3's port the whole time; every ~10 s a whole-config Apply (replace: true) with other safe
# values, every ~20 s a sender restart, every ~30 s a 3 s PFC storm (XOFF 3,4) from a sender's or the
# receiver's namespace that the watchdog must detect and restore. The plan is drawn from --seed.
# It ends with: no lossless drop besides the watchdog's drop action, both FrameLedger identities exact on
# every snapshot, every storm detected and restored, switchd alive at the expected generation, flat RSS
# after the warm-up, and nothing left behind (namespaces sk*, processes, files). Exit 0 PASS, 1 FAIL,
# 2 error. The soak is the `soak` binary of the lossless-bench crate (dataplane/bench/src/soak).
#
# Usage (root: network namespaces, AF_PACKET sockets):
#   sudo bench/soak.sh [MINUTES] [soak options...]     e.g. sudo bench/soak.sh 30 --seed 7 --json
#   sudo bench/soak.sh 3 --load 0.6                     a short run, lighter incast for a busy machine
# Ctrl-C stops it and removes everything it created.
set -euo pipefail

if [[ $(id -u) -ne 0 ]]; then
    echo "bench/soak.sh: run as root (network namespaces, AF_PACKET sockets): sudo $0 $*" >&2
    exit 1
fi
for tool in ip cargo; do
    command -v "$tool" >/dev/null || { echo "bench/soak.sh: $tool not found (iproute2, Rust)" >&2; exit 1; }
done
minutes=30
if [[ $# -gt 0 && $1 =~ ^[0-9]+([.][0-9]+)?$ ]]; then
    minutes=$1
    shift
fi

cd "$(dirname "$0")/.."
# shellcheck source=bench/build.sh
. bench/build.sh
bench_build -p lossless-dataplane --bin switchd --bin rocehost -p lossless-bench --bin soak
# exec: Ctrl-C reaches the soak directly, which then removes what it created.
exec "$target_dir/release/soak" --minutes "$minutes" \
    --switchd "$target_dir/release/switchd" --rocehost "$target_dir/release/rocehost" "$@"
