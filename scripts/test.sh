#!/usr/bin/env bash
# The whole test suite: formatting, lints, then every test of every crate (unit, property, scenario,
# snapshot, wire cross-checks against tshark, and the tests that start switchd in network namespaces).
# Needs: tshark and iproute2 (see README), and root for the namespace tests.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings
cargo test --workspace --locked --doc
cargo nextest run --workspace --locked --no-fail-fast
