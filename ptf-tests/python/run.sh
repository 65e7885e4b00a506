#!/usr/bin/env bash
# Real PTF (p4lang's `ptf`, scapy) against a live switchd: brings up a lab in two fresh network namespaces
# and runs the tests of this directory, as sonic-mgmt runs saitests against a DUT.
#
#   switch namespace:  switchd --config PROFILE --port Ethernet0=p0 --port Ethernet4=p1 ... --grpc unix:SOCK
#   ptf namespace:     eth0 .. ethN, the veth peers of p0 .. pN (PORT order of the profile, naturally sorted)
#                      ptf --interface 0@eth0 --interface 1@eth1 ... (ptf port i = i-th switch port)
#
# Usage: ptf-tests/python/run.sh [--profile FILE]... [--no-build] [-- PTF_ARGS...]
#   --profile FILE  a profile to run on (repeatable; default configs/profiles/th_balanced.yaml)
#   --no-build      use the binaries already built
#   PTF_ARGS        passed to ptf, e.g. a test spec: -- sai_qos_tests.PFCtest
# Environment: PTF_PARAMS extra --test-params (e.g. "pkts_num_margin=2"), PTF_TIMEOUT seconds
# per profile (default 600), PTF_CARGO_PROFILE (release, the default, or debug), PTF_VENV, PYTHON,
# CARGO_TARGET_DIR.
# Needs root (namespaces), iproute2, python3 with venv; installs ptf (requirements.txt) and the `lossless`
# gRPC client (ptf-tests/sai-shim) into a venv (PTF_VENV, default target/ptf-venv). Exits with ptf's status
# (non-zero if any profile failed); the lab is removed on every exit, also on failure or interruption.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
TARGET_DIR=${CARGO_TARGET_DIR:-$REPO/target}
VENV=${PTF_VENV:-$TARGET_DIR/ptf-venv}
PYTHON=${PYTHON:-python3}

profiles=()
build=1
ptf_extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --profile) profiles+=("$(cd "$(dirname "$2")" && pwd)/$(basename "$2")"); shift 2 ;;
    --no-build) build=0; shift ;;
    --) shift; ptf_extra=("$@"); break ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ ${#profiles[@]} -gt 0 ] || profiles=("$REPO/configs/profiles/th_balanced.yaml")
if [ "$(id -u)" != 0 ]; then
  echo "run.sh: needs root (network namespaces)" >&2
  exit 2
fi

started=$(date +%s)
log() { printf '[ptf %3ds] %s\n' "$(( $(date +%s) - started ))" "$*"; }

# ---- binaries and the venv --------------------------------------------------------------------------
# shellcheck source=ptf-tests/python/binaries.sh
. "$REPO/ptf-tests/python/binaries.sh"
ptf_binaries run.sh

# ptf, and the `lossless` gRPC client (ptf-tests/sai-shim) the tests read counters with; reinstalled when
# the requirements, the client's sources or the .proto files change.
stamp=$(cat "$HERE/requirements.txt" "$REPO/ptf-tests/sai-shim/pyproject.toml" "$REPO"/ptf-tests/sai-shim/lossless/*.py \
  "$REPO"/proto/proto/lossless/v1/*.proto | cksum)
if [ "$(cat "$VENV/.lossless-stamp" 2>/dev/null)" != "$stamp" ]; then
  log "installing ptf and the lossless client into $VENV"
  "$PYTHON" -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check -r "$HERE/requirements.txt" "$REPO/ptf-tests/sai-shim"
  echo "$stamp" >"$VENV/.lossless-stamp"
fi
# No __pycache__ in the source tree (ptf imports every module of --test-dir); ptf's output as it comes.
export PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1

# ---- the lab, removed on any exit -------------------------------------------------------------------
tmp=$(mktemp -d /tmp/lossless-ptf.XXXXXX)
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
  for ns in "$SW_NS" "$PTF_NS"; do
    [ -n "$ns" ] && ip netns del "$ns" 2>/dev/null || true
  done
  local left=""
  for ns in "$SW_NS" "$PTF_NS"; do
    [ -n "$ns" ] && ip netns list | grep -qE "^$ns( |$)" && left="$left $ns"
  done
  if [ -n "$left" ]; then
    echo "run.sh: namespaces left behind:$left" >&2
    return 1
  fi
  SW_NS=""
  PTF_NS=""
}

on_exit() {
  local rc=$?
  trap - EXIT
  lab_down || rc=1
  rm -rf "$tmp"
  exit "$rc"
}
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

lab_up() { # profile name
  local profile=$1 name=$2 id
  id="$$-$RANDOM"
  SW_NS="lossless-ptf-sw-$id"
  PTF_NS="lossless-ptf-host-$id"
  ip netns add "$SW_NS"
  ip netns add "$PTF_NS"
  # IPv6 off before the veths exist (they inherit `default`): no link-local address, DAD, router
  # solicitation or MLD report reaches the switch and spoils a counter.
  for ns in "$SW_NS" "$PTF_NS"; do
    ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 || true
    ip -n "$ns" link set lo up
  done
  mapfile -t PORTS < <("$VENV/bin/python" - "$profile" <<'EOF'
import re, sys, yaml
ports = (yaml.safe_load(open(sys.argv[1])) or {}).get("PORT") or {}
for p in sorted(ports, key=lambda n: [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", n)]):
    print(p)
EOF
  )
  [ ${#PORTS[@]} -gt 0 ] || { echo "run.sh: $profile has no PORT table" >&2; return 1; }
  port_args=()
  iface_args=()
  port_map=""
  for i in "${!PORTS[@]}"; do
    ip -n "$PTF_NS" link add "eth$i" type veth peer name "p$i" netns "$SW_NS"
    for side in "$PTF_NS eth$i" "$SW_NS p$i"; do
      set -- $side
      ip netns exec "$1" sysctl -qw "net.ipv6.conf.$2.disable_ipv6=1" 2>/dev/null || true
      ip -n "$1" link set "$2" up
    done
    port_args+=(--port "${PORTS[$i]}=p$i")
    iface_args+=(--interface "$i@eth$i")
    port_map="$port_map'${PORTS[$i]}': $i, "
  done
  SOCK="$tmp/$name.sock"
  # Up when it answers on its socket (the launcher fails at once, with the log, if it exited).
  SWITCHD_PID=$("$BIN/switchd-launch" --netns "$SW_NS" --log "$tmp/switchd-$name.log" --grpc "unix:$SOCK" \
    "$BIN/switchd" --name "ptf-$name" --config "$profile" "${port_args[@]}") || {
    echo "run.sh: switchd did not start" >&2; return 1; }
}

report="$tmp/report.jsonl"
status=0
for profile in "${profiles[@]}"; do
  name=$(basename "$profile" .yaml)
  name=${name%.json}
  log "lab up: $name"
  lab_up "$profile" "$name"
  log "switch $SW_NS: ${PORTS[*]} -> ptf $PTF_NS: eth0..eth$(( ${#PORTS[@]} - 1 ))"
  params="swctl='$BIN/swctl';switch='unix:$SOCK';profile='$name';report='$report';port_map={${port_map%, }}"
  [ -z "${PTF_PARAMS:-}" ] || params="$params;$PTF_PARAMS"
  set +e
  # ptf in the ptf namespace, so that it opens eth0.. there; --qlen: ptf keeps 100 frames per port by
  # default and drops the oldest beyond that. The timeout ends a hung ptf (its receive thread can outlive
  # a crashed test). In the background and waited for, so that a signal to this script is handled at once
  # (lab_down stops ptf through timeout, which passes the signal on).
  timeout --kill-after=10 "${PTF_TIMEOUT:-600}" ip netns exec "$PTF_NS" "$VENV/bin/ptf" --test-dir "$HERE" "${iface_args[@]}" --qlen 100000 \
    --debug info --log-file "$tmp/ptf-$name.log" --test-params "$params" "${ptf_extra[@]}" &
  PTF_PID=$!
  wait "$PTF_PID"
  rc=$?
  PTF_PID=""
  set -e
  if [ "$rc" != 0 ]; then
    status=$rc
    echo "---- ptf log (last 60 lines) ----"; grep -v ' : DEBUG ' "$tmp/ptf-$name.log" | tail -n 60 || true
    echo "---- switchd log ----"; tail -n 30 "$tmp/switchd-$name.log" || true
  fi
  lab_down
  log "lab down: $name (ptf exit $rc)"
done

# ---- sonic-mgmt-like summary ------------------------------------------------------------------------
if [ -s "$report" ]; then
  "$VENV/bin/python" - "$report" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
sources = []
for r in rows:
    if r.get("source"):
        if r["source"] not in sources:
            sources.append(r["source"])
        r["expected"] = "%s [%d]" % (r["expected"], sources.index(r["source"]) + 1)
cols = ["test", "profile", "key", "expected", "observed", "result"]
table = [[str(r[c]) for c in cols] for r in rows]
widths = [max(len(c), *(len(t[i]) for t in table)) for i, c in enumerate(cols)]
print("\nPTF summary (p4lang ptf against switchd; [n]: sonic-mgmt's published figure, see below)")
print("  ".join(c.upper().ljust(w) for c, w in zip(cols, widths)))
print("  ".join("-" * w for w in widths))
for t in table:
    print("  ".join(v.ljust(w) for v, w in zip(t, widths)))
if sources:
    print("\nExpected figures: sonic-net/sonic-mgmt, as kept in ptf-tests/published.json:")
    for i, s in enumerate(sources, 1):
        print("[%d] %s" % (i, s))
EOF
fi
left=$(ip netns list | grep -c '^lossless-ptf-.*-'"$$"'-' || true)
log "done: ptf status $status; namespaces of this run left: $left"
exit "$status"
