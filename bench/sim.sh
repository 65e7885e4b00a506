#!/usr/bin/env bash
# Simulator benchmark (not run by CI): wall time and events/s of `swctl sim run` (release build) on
#   (a) configs/scenarios/incast-100g.yaml: a 32:1 lossless incast at 100G, 10 ms of virtual time, 4 KiB
#       messages, DCQCN and PFC (target: <= 0.15 s of wall time on a 2-core machine);
#   (b) configs/scenarios/incast-100g-lossy.yaml: the same incast on a lossy priority, 10 ms, beside ns-3
#       (PyPI's ns3 3.44, installed into .venv-ns3 on first use) running the same plain N:1 incast on
#       point-to-point links (bench/ns3_incast.py; ns-3 mainline has no PFC) for the same virtual time,
#       in the same run: the ratio of wall times (target: >= 10x ns-3's speed);
#   (c) a two-tier Clos of 128 hosts at 25G (16 leaves x 8 hosts, 4 spines, ECMP; `swctl topology clos`
#       from configs/profiles/th_balanced.yaml) under an all-to-all shuffle (every host sends 4 KiB
#       messages to every other, lossless priority 3, DCQCN): CLOS_MS ms of virtual time, once (target
#       for 1000 ms: <= 5 min), on as many threads as the machine has cores (THREADS=N to choose;
#       the outputs are the same whatever the number).
# Each figure of (a) and (b) is the median of RUNS runs (default 3).
# Usage: bench/sim.sh [RUNS] [CLOS_MS (default 1000; 0 skips it)]
set -euo pipefail
runs=${1:-3}
clos_ms=${2:-1000}
cd "$(dirname "$0")/.."
# shellcheck source=bench/build.sh
. bench/build.sh
bench_build -p lossless-controlplane --bin swctl
swctl=$target_dir/release/swctl
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# "simulated X ms in Y s of wall time (...), N events (...), T threads" -> "Y N T". The run ends before the
# scenario's drain time, so it reports "partial" and exits 1: that is expected here.
sim_once() {
    { "$swctl" sim run "$1" --until-ms "${2:-10}" --resolution-us 1000000 --no-plots --threads "${THREADS:-0}" \
        --out "$out/run" || true; } \
        | sed -n 's/.*simulated [0-9.]* ms in \([0-9.]*\) s of wall time.*, \([0-9]*\) events.*, \([0-9]*\) thread.*/\1 \2 \3/p'
}
median() { sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

for scenario in incast-100g incast-100g-lossy; do
    : > "$out/$scenario"
    for _ in $(seq "$runs"); do sim_once "configs/scenarios/$scenario.yaml" >> "$out/$scenario"; done
    wall=$(cut -d' ' -f1 "$out/$scenario" | median)
    events=$(head -1 "$out/$scenario" | cut -d' ' -f2)
    echo "$scenario: 10 ms virtual in $wall s wall (median of $runs), $events events, $(awk -v e="$events" -v w="$wall" 'BEGIN { printf "%.2f", e / w / 1e6 }') M events/s"
    eval "wall_${scenario//-/_}=$wall"
done

venv=.venv-ns3
if [[ ! -x $venv/bin/python ]]; then
    python3 -m venv "$venv" >&2
    "$venv/bin/pip" install -q ns3 >&2
fi
: > "$out/ns3"
for _ in $(seq "$runs"); do
    "$venv/bin/python" bench/ns3_incast.py --senders 32 --ms 10 2>/dev/null | tail -1 >> "$out/ns3"
done
ns3_wall=$(sed -n 's/.*"wall_s": \([0-9.e-]*\).*/\1/p' "$out/ns3" | median)
ns3_events=$(head -1 "$out/ns3" | sed -n 's/.*"events": \([0-9]*\).*/\1/p')
echo "ns-3 plain 32:1 UDP incast on point-to-point links: 10 ms virtual in $ns3_wall s wall (median of $runs), $ns3_events events"
awk -v a="$ns3_wall" -v b="$wall_incast_100g_lossy" 'BEGIN { printf "speed vs ns-3 (same virtual time, same run): %.1fx\n", a / b }'

if (( clos_ms > 0 )); then
    "$swctl" topology clos --leaves 16 --hosts-per-leaf 8 --spines 4 --speed 25000 \
        --profile configs/profiles/th_balanced.yaml --out "$out/clos" --shuffle-ms "$clos_ms" >&2
    read -r wall events threads < <(sim_once "$out/clos/clos-shuffle.yaml" "$clos_ms")
    echo "clos 16x8 hosts, 4 spines, 25G, all-to-all shuffle: $clos_ms ms virtual in $wall s wall ($threads thread(s)), $events events, $(awk -v e="$events" -v w="$wall" 'BEGIN { printf "%.2f", e / w / 1e6 }') M events/s"
fi
