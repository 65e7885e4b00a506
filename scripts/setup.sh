#!/usr/bin/env bash
# What the test suite needs beside a Rust toolchain, checked and (as root, on Debian/Ubuntu) installed:
#   build-essential             cc, the linker rustc calls (rustup installs none)
#   tshark                      the wire tests cross-check frames against Wireshark's dissectors
#   iproute2, procps            network namespaces and veths for switchd/lab/PTF tests; sysctl
#   iputils-ping, curl          what `swctl lab up` suggests trying (ping from a host's namespace; a
#                               switch's metrics with --metrics)
#   python3-venv, python3-dev   the venv p4lang's ptf is installed into (netifaces builds a C extension)
#   prometheus                  promtool checks switchd's metrics; a real Prometheus scrapes it
#   cargo-nextest               the test runner (from crates.io)
# Says what it found and what it did. Not root: prints the command to run, and exits 1 if anything is missing.
set -euo pipefail

missing=()
need() { # need PACKAGE COMMAND...: the package is missing if any command is
  local package=$1
  shift
  for command in "$@"; do
    # sbin is not on a Debian user's PATH: ip and sysctl live there.
    if ! PATH="$PATH:/usr/sbin:/sbin" command -v "$command" >/dev/null 2>&1; then
      missing+=("$package")
      return
    fi
  done
}
need build-essential cc
need tshark tshark
need iproute2 ip
need procps sysctl
need iputils-ping ping
need curl curl
need prometheus promtool prometheus
python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || missing+=(python3-venv)
[ -n "$(python3-config --includes 2>/dev/null)" ] || missing+=(python3-dev)

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: cc, tshark, iproute2, procps, iputils-ping, curl, python3-venv, python3-dev and prometheus are installed"
elif [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "setup: installing ${missing[*]} (apt-get)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "setup: missing ${missing[*]}; as root: apt-get install ${missing[*]}" >&2
  exit 1
fi

if cargo nextest --version >/dev/null 2>&1; then
  echo "setup: $(cargo nextest --version | head -1)"
else
  echo "setup: installing cargo-nextest (cargo install --locked cargo-nextest)"
  cargo install --locked cargo-nextest
fi

if [ "$(id -u)" != 0 ]; then
  echo "setup: not root: the tests that create network namespaces (switchd, labs, PTF) will fail; run as root" >&2
fi
