#!/usr/bin/env bash
# The whole test suite: formatting, lints, then every test of every crate (unit, property, scenario,
# snapshot, wire cross-checks against tshark, and the tests that start switchd in network namespaces).
# What it needs beside Rust is checked (and installed, as root) by scripts/setup.sh; root for the namespace
# tests.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh

cargo fmt --all -- --check
scripts/check-core-deps.sh
cargo clippy --workspace --all-targets --locked -- -D warnings
cargo test --workspace --locked --doc
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --locked -q

# The PTF catalog (ptf-tests/) first and on its own: its buffer tests fill switch buffers with tens of
# thousands of frames. Then its sonic-mgmt-like summary (test, profile, result, key numbers).
cargo build --locked -p lossless-dataplane --bin switchd
rm -rf target/ptf-results
ptf_status=0
LOSSLESS_SWITCHD="$PWD/target/debug/switchd" cargo nextest run -p lossless-ptf --locked --no-fail-fast || ptf_status=$?
cargo run -q --locked -p lossless-ptf --bin ptf-summary || true
PTF_CARGO_PROFILE=debug ptf-tests/python/run.sh --profile configs/profiles/th_balanced.yaml --profile configs/profiles/sn2700.yaml || ptf_status=$?
# The sonic-mgmt shim's Python tests (pytest; a few start switchd).
ptf-tests/sai-shim/test.sh || ptf_status=$?

# Everything else; its summary closes the log.
status=0
cargo nextest run --workspace --exclude lossless-ptf --locked --no-fail-fast || status=$?
if [ "$ptf_status" != 0 ]; then
  echo "the PTF catalog failed: see its summary above" >&2
fi
exit $((status != 0 ? status : ptf_status))
