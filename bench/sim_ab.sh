#!/usr/bin/env bash
# Two builds of `swctl` side by side on the simulator's benchmarks (not run by CI), for a change that must
# make the simulator faster without changing what it computes:
#   1. outputs: the 100G incast (configs/scenarios/incast-100g.yaml, 10 ms) and CHECK_MS of the 128-host
#      Clos shuffle of bench/sim.sh, each run once by both binaries at the default 100 µs resolution; the
#      report, series and RDMA statistics must be byte-identical;
#   2. cost: for each of CLOS_MS (ms of the Clos shuffle, e.g. "5 20"), ROUNDS runs of each binary,
#      interleaved (old, new, old, new, ...) so that a shared machine's load falls on both alike: user CPU
#      seconds and maximum resident set size from GNU time (`/usr/bin/time -v`), the median of each.
# Usage: bench/sim_ab.sh OLD_SWCTL NEW_SWCTL [ROUNDS (default 2)] [CHECK_MS (default 2)] [CLOS_MS... (default 5 20)]
set -euo pipefail
old=$(realpath "$1")
new=$(realpath "$2")
rounds=${3:-2}
check_ms=${4:-2}
shift $(($# < 4 ? $# : 4))
clos_ms=("${@:-5 20}")
read -r -a clos_ms <<< "${clos_ms[*]}"
cd "$(dirname "$0")/.."
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

"$new" topology clos --leaves 16 --hosts-per-leaf 8 --spines 4 --speed 25000 \
    --profile configs/profiles/th_balanced.yaml --out "$out/clos" --shuffle-ms 1000 >&2
clos=$out/clos/clos-shuffle.yaml

# The run ends before the scenario's drain time, so it reports "partial" and exits 1: expected here.
run() { "$1" sim run "$2" --until-ms "$3" --no-plots --out "$4" > "$out/stdout" 2>&1 || true; }

status=0
for case in "incast configs/scenarios/incast-100g.yaml 10" "clos $clos $check_ms"; do
    read -r name file ms <<< "$case"
    # Both write to the same directory (the report names it), moved aside after each run.
    for which in old new; do
        run "${!which}" "$file" "$ms" "$out/run"
        mv "$out/run" "$out/$name-$which"
    done
    for f in scenario.json series.csv estats.json; do
        if cmp -s "$out/$name-old/$f" "$out/$name-new/$f"; then
            echo "$name $ms ms: $f identical"
        else
            echo "$name $ms ms: $f DIFFERS"
            status=1
        fi
    done
done

median() { sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
for ms in "${clos_ms[@]}"; do
    for _ in $(seq "$rounds"); do
        for which in old new; do
            /usr/bin/time -v -o "$out/time" "${!which}" sim run "$clos" --until-ms "$ms" --resolution-us 1000000 \
                --no-plots --out "$out/cost" > "$out/cost.stdout" 2>&1 || true
            user=$(sed -n 's/.*User time (seconds): //p' "$out/time")
            rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$out/time")
            events=$(sed -n 's/.*, \([0-9]*\) events.*/\1/p' "$out/cost.stdout")
            echo "$which $ms ms: $user s user, $((rss / 1024)) MiB max RSS, $events events" >&2
            echo "$user $rss" >> "$out/$which-$ms"
        done
    done
    for which in old new; do
        read -r "user_$which" < <(cut -d' ' -f1 "$out/$which-$ms" | median)
        read -r "rss_$which" < <(cut -d' ' -f2 "$out/$which-$ms" | median)
    done
    # shellcheck disable=SC2154 # set by the reads above
    awk -v ms="$ms" -v n="$rounds" -v uo="$user_old" -v un="$user_new" -v ro="$rss_old" -v rn="$rss_new" 'BEGIN {
        printf "clos %s ms (median of %d): user %.2f s -> %.2f s (%.2f), max RSS %d MiB -> %d MiB (%.2f)\n",
            ms, n, uo, un, un / uo, ro / 1024, rn / 1024, rn / ro }'
done
exit "$status"
