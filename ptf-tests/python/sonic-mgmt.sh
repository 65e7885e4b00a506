#!/usr/bin/env bash
# sonic-mgmt's own saitests (tests/saitests/py3/sai_qos_tests.py of a sonic-mgmt checkout, unmodified) against a
# Lossless switch: builds a lab in fresh network namespaces, writes the port map and the test params sonic-mgmt's
# tests/qos would pass, runs each test with ptf through the sai shim (ptf-tests/sai-shim), cleans up.
#
#   switch namespace:  switchd --config LAB.yaml --port Ethernet0=p0 ... --grpc unix:SOCK
#   ptf namespace:     eth0 .. ethN, the veth peers of p0 .. pN (PORT order of the profile, naturally sorted)
#   LAB.yaml:          the profile as a t0 DUT: its ports untagged members of its IPv4 VLAN (lossless_sai.sonic_mgmt)
#   per test:          `swctl qos-params` figures -> --test-params, watermarks cleared, ptf, RX overruns checked
#
# Usage: ptf-tests/python/sonic-mgmt.sh --saitests DIR --profile FILE [--no-build] [--param K=V]... -- TEST...
#   --saitests DIR  the checkout's tests/saitests/py3 (read only: the shim's sai_base_test/switch stand in
#                   for the directory's own, which are left untouched)
#   --profile FILE  the profile (default configs/profiles/td3.yaml)
#   --param K=V     a test param on top of the computed ones (e.g. pkts_num_margin=4); repeatable
#   TEST            sai_qos_tests.PFCtest ... (run one after the other, each with its own params; ARPpopulate
#                   runs first, as sonic-mgmt's populateArpEntries fixture does)
# Environment: SONIC_MGMT_VENV (default target/sonic-mgmt-venv), PTF_CARGO_PROFILE (release, the default, or
# debug), PTF_TIMEOUT seconds per test (default 900), PYTHON, CARGO_TARGET_DIR.
# Exit status: 0 if every test passed or was skipped, 1 if one failed, 2 on a usage or lab error. Needs root.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
TARGET_DIR=${CARGO_TARGET_DIR:-$REPO/target}
VENV=${SONIC_MGMT_VENV:-$TARGET_DIR/sonic-mgmt-venv}
PYTHON=${PYTHON:-python3}

saitests=""
profile="$REPO/configs/profiles/td3.yaml"
build=1
extra=()
tests=()
while [ $# -gt 0 ]; do
  case "$1" in
    --saitests) [ $# -ge 2 ] || { echo "sonic-mgmt.sh: --saitests needs a directory" >&2; exit 2; }; saitests=$2; shift 2 ;;
    --profile) [ $# -ge 2 ] || { echo "sonic-mgmt.sh: --profile needs a file" >&2; exit 2; }; profile=$2; shift 2 ;;
    --param) [ $# -ge 2 ] || { echo "sonic-mgmt.sh: --param needs K=V" >&2; exit 2; }; extra+=("$2"); shift 2 ;;
    --no-build) build=0; shift ;;
    --) shift; tests=("$@"); break ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) echo "sonic-mgmt.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -n "$saitests" ] || { echo "sonic-mgmt.sh: --saitests DIR is required (a sonic-mgmt checkout's tests/saitests/py3)" >&2; exit 2; }
[ -d "$saitests" ] || { echo "sonic-mgmt.sh: --saitests $saitests: not a directory" >&2; exit 2; }
[ -f "$profile" ] || { echo "sonic-mgmt.sh: --profile $profile: no such file" >&2; exit 2; }
[ ${#tests[@]} -gt 0 ] || { echo "sonic-mgmt.sh: name the tests after --, e.g. -- sai_qos_tests.PFCtest" >&2; exit 2; }
saitests=$(cd "$saitests" && pwd)
profile="$(cd "$(dirname "$profile")" && pwd)/$(basename "$profile")"
if [ "$(id -u)" != 0 ]; then
  echo "sonic-mgmt.sh: needs root (network namespaces)" >&2
  exit 2
fi

started=$(date +%s)
log() { printf '[sonic-mgmt %3ds] %s\n' "$(( $(date +%s) - started ))" "$*"; }

# shellcheck source=ptf-tests/python/binaries.sh
. "$REPO/ptf-tests/python/binaries.sh"
ptf_binaries sonic-mgmt.sh

# The venv: ptf (pinned as for run.sh), the shim, and what sai_qos_tests.py imports beside them (macsec.py
# needs cryptography). Reinstalled when the requirements or the shim's sources change.
stamp=$(cat "$HERE/requirements.txt" "$REPO/ptf-tests/sai-shim/pyproject.toml" "$REPO"/ptf-tests/sai-shim/lossless*/*.py \
  "$REPO"/ptf-tests/sai-shim/lossless_sai/switch_sai_thrift/*.py "$REPO"/proto/proto/lossless/v1/*.proto | cksum)
if [ "$(cat "$VENV/.lossless-stamp" 2>/dev/null)" != "$stamp" ]; then
  log "installing ptf, the sai shim and cryptography into $VENV"
  "$PYTHON" -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check -r "$HERE/requirements.txt" cryptography \
    "$REPO/ptf-tests/sai-shim[sai]"
  echo "$stamp" >"$VENV/.lossless-stamp"
fi
export PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1

# ---- the lab, removed on any exit -------------------------------------------------------------------
tmp=$(mktemp -d /tmp/lossless-sonic-mgmt.XXXXXX)
SW_NS=""
PTF_NS=""
SWITCHD_PID=""
PTF_PID=""

lab_down() {
  if [ -n "$PTF_PID" ]; then
    kill -TERM "$PTF_PID" 2>/dev/null || true
    wait "$PTF_PID" 2>/dev/null || true
    PTF_PID=""
  fi
  if [ -n "$SWITCHD_PID" ]; then
    kill -TERM "$SWITCHD_PID" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$SWITCHD_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$SWITCHD_PID" 2>/dev/null || true
    wait "$SWITCHD_PID" 2>/dev/null || true
    SWITCHD_PID=""
  fi
  local left=""
  for ns in "$SW_NS" "$PTF_NS"; do
    [ -n "$ns" ] || continue
    ip netns del "$ns" 2>/dev/null || true
    ip netns list | grep -qE "^$ns( |$)" && left="$left $ns"
  done
  SW_NS=""
  PTF_NS=""
  if [ -n "$left" ]; then
    echo "sonic-mgmt.sh: namespaces left behind:$left" >&2
    return 1
  fi
}

on_exit() {
  local rc=$?
  trap - EXIT
  lab_down || rc=2
  if [ "$rc" != 0 ] && [ -z "${SONIC_MGMT_KEEP_LOGS:-}" ]; then
    : # logs were printed where they matter
  fi
  rm -rf "$tmp"
  exit "$rc"
}
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

shim() { "$VENV/bin/python" -m lossless_sai.sonic_mgmt "$@"; }

lab="$tmp/lab.yaml"
shim lab-config "$profile" "$lab"
shim port-map "$lab" "$tmp/port_map.ini"
mapfile -t PORTS < <(sed -n 's/^[0-9]*@//p' "$tmp/port_map.ini")

id="$$-$RANDOM"
SW_NS="lossless-smgmt-sw-$id"
PTF_NS="lossless-smgmt-ptf-$id"
ip netns add "$SW_NS"
ip netns add "$PTF_NS"
for ns in "$SW_NS" "$PTF_NS"; do
  # No IPv6 on the lab links: no link-local address, DAD or MLD report reaches the switch.
  ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 || true
  ip -n "$ns" link set lo up
done
port_args=()
iface_args=()
for i in "${!PORTS[@]}"; do
  ip -n "$PTF_NS" link add "eth$i" type veth peer name "p$i" netns "$SW_NS"
  # A deep receive queue on the switch side: ptf sends tens of thousands of frames unpaced.
  ip -n "$SW_NS" link set "p$i" txqueuelen 100000 2>/dev/null || true
  ip -n "$PTF_NS" link set "eth$i" up
  ip -n "$SW_NS" link set "p$i" up
  port_args+=(--port "${PORTS[$i]}=p$i")
  iface_args+=(--interface "$i@eth$i")
done
SOCK="$tmp/switch.sock"
SWITCHD_PID=$("$BIN/switchd-launch" --netns "$SW_NS" --log "$tmp/switchd.log" --grpc "unix:$SOCK" \
  "$BIN/switchd" --name "smgmt-$id" --config "$lab" "${port_args[@]}") || {
  echo "sonic-mgmt.sh: switchd did not start" >&2; exit 2; }
log "lab up: $(basename "$profile") as t0, ${#PORTS[@]} ports, switch $SW_NS, ptf $PTF_NS"

# The qos_params figures, measured for the lab's first two test ports (src -> dst).
read -r src dst < <("$VENV/bin/python" -c "
import sys, yaml
from lossless_sai.sonic_mgmt import test_ports
p = test_ports(yaml.safe_load(open(sys.argv[1])))
print(p[0][1], p[1][1]) if len(p) > 1 else print('- -')" "$lab")
[ "$src" != "-" ] || { echo "sonic-mgmt.sh: the lab has fewer than two PFC-enabled VLAN ports" >&2; exit 2; }
"$BIN/swctl" qos-params --json --src "$src" --dst "$dst" "$lab" >"$tmp/qos_params.json"
log "qos_params measured for $src -> $dst: $tmp/qos_params.json"

rx_overruns() {
  "$VENV/bin/python" -c "
import lossless, sys
with lossless.connect(sys.argv[1]) as sw:
    print(sum(p.rx_ovr for p in sw.stub.GetCounters(lossless.pb.GetCountersRequest(), timeout=10).ports))" "unix:$SOCK"
}
clear_watermarks() {
  "$VENV/bin/python" -c "
import lossless, sys
with lossless.connect(sys.argv[1]) as sw:
    sw.stub.GetWatermarks(lossless.pb.GetWatermarksRequest(clear=True), timeout=10)" "unix:$SOCK"
}

# One ptf run: the launcher pre-registers the shim as sai_base_test/switch/switch_sai_thrift, so the
# directory's own copies are never loaded; the platform is ptf's default (eth) on the ptf namespace's veths.
run_ptf() { # test params
  local test=$1 params=$2
  set +e
  timeout --kill-after=10 "${PTF_TIMEOUT:-900}" ip netns exec "$PTF_NS" "$VENV/bin/python" -m lossless_sai.launcher -- \
    --test-dir "$saitests" "${iface_args[@]}" --qlen 100000 --socket-recv-size 16384 \
    --disable-vxlan --disable-geneve --disable-erspan --disable-mpls --disable-nvgre \
    --log-file "$tmp/ptf.log" --test-params "$params" "$test" &
  PTF_PID=$!
  wait "$PTF_PID"
  local rc=$?
  PTF_PID=""
  set -e
  return "$rc"
}

summary=()
status=0
# sonic-mgmt's populateArpEntries fixture: ARPpopulate teaches the switch the test ports' MACs and IPs before
# any test (only where the directory has sai_qos_tests.py: a directory of one's own brings its own).
first=()
[ ! -f "$saitests/sai_qos_tests.py" ] || first=(sai_qos_tests.ARPpopulate)
for test in "${first[@]}" "${tests[@]}"; do
  [ "$test" != "sai_qos_tests.ARPpopulate" ] || [ ${#summary[@]} -eq 0 ] || continue
  set +e
  params=$(shim params "$test" "$lab" "$tmp/qos_params.json" "$tmp/port_map.ini" "unix:$SOCK" "${extra[@]}" 2>"$tmp/why")
  prc=$?
  set -e
  if [ "$prc" = 3 ]; then
    summary+=("SKIP  $test: $(sed 's/^skip: //' "$tmp/why")")
    log "skip $test: $(cat "$tmp/why")"
    continue
  elif [ "$prc" != 0 ]; then
    cat "$tmp/why" >&2
    exit 2
  fi
  clear_watermarks
  ovr_before=$(rx_overruns)
  log "run $test"
  t0=$(date +%s)
  if run_ptf "$test" "$params"; then rc=0; else rc=$?; fi
  ovr=$(( $(rx_overruns) - ovr_before ))
  took=$(( $(date +%s) - t0 ))
  if [ "$rc" = 0 ] && [ "$ovr" = 0 ]; then
    summary+=("PASS  $test (${took} s)")
  else
    why="ptf exit $rc"
    [ "$ovr" = 0 ] || why="$why; $ovr frames lost at the switch's receive rings (RX_OVR): every threshold shifts"
    summary+=("FAIL  $test (${took} s): $why")
    if [ "$test" = sai_qos_tests.ARPpopulate ]; then status=1; break; fi
    status=1
    echo "---- ptf log of $test (last 80 lines without DEBUG) ----"
    grep -v ' : DEBUG ' "$tmp/ptf.log" | tail -n 80 || true
    echo "---- switchd log (last 20 lines) ----"
    tail -n 20 "$tmp/switchd.log" || true
  fi
done

echo
echo "sonic-mgmt saitests on $(basename "$profile") ($saitests):"
for line in "${summary[@]}"; do echo "  $line"; done
exit "$status"
