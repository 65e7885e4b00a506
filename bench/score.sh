#!/usr/bin/env bash
# `swctl score` benchmark (not run by CI): wall time of the whole default suite on one profile (release
# build), cases in parallel threads (--jobs, default the machine's cores). Target: <= 2 minutes on this
# project's 2-core machine. Prints the wall time, the CPU time (user + sys, the least noisy
# figure on a shared machine) and each case's wall time and events as the report gives them.
# Usage: bench/score.sh [PROFILE (default configs/profiles/th_balanced.yaml)] [JOBS]
set -euo pipefail
profile=${1:-configs/profiles/th_balanced.yaml}
jobs=${2:-}
cd "$(dirname "$0")/.."
# shellcheck source=bench/build.sh
. bench/build.sh
bench_build -p lossless-controlplane --bin swctl
swctl=$target_dir/release/swctl
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
start=$(date +%s.%N)
# Exit status 1 means a target failed: the score, not the benchmark's concern.
/usr/bin/time -f '%U %S' -o "$out/time" "$swctl" --json score "$profile" ${jobs:+--jobs "$jobs"} \
    > "$out/report.json" || [ $? -eq 1 ]
end=$(date +%s.%N)
read -r user sys < <(tail -1 "$out/time")
python3 - "$out/report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for c in r["profiles"][0]["cases"]:
    print(f'  {c["name"]:<14} {c["virtual_ms"]:8.1f} ms virtual  {c["wall_ms"] / 1e3:6.2f} s wall  {c["events"] / 1e6:7.2f} M events')
PY
awk -v s="$start" -v e="$end" -v u="$user" -v y="$sys" -v p="$profile" \
    'BEGIN { printf "%s: default suite in %.1f s wall, %.1f s CPU (target: <= 120 s wall)\n", p, e - s, u + y }'
