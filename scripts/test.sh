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

# One build of every test and binary, with the feature set of the whole workspace. Everything below runs
# what it made: no `-p`/`--exclude` (a different selection resolves different features, and cargo would
# rebuild ring, rustls, tonic and the workspace crates for it) and no second `cargo build`; the tests of
# other packages and the scripts find switchd through LOSSLESS_SWITCHD.
cargo test --workspace --locked --no-run
target_dir=${CARGO_TARGET_DIR:-$PWD/target}
export LOSSLESS_SWITCHD="$target_dir/debug/switchd"

# The PTF catalog (ptf-tests/) first and on its own: its buffer tests fill switch buffers with tens of
# thousands of frames. Then its sonic-mgmt-like summary (test, profile, result, key numbers).
rm -rf target/ptf-results
ptf_status=0
cargo nextest run --workspace --locked --no-fail-fast -E 'package(lossless-ptf)' || ptf_status=$?
"$target_dir/debug/ptf-summary" || true
PTF_CARGO_PROFILE=debug ptf-tests/python/run.sh --no-build \
  --profile configs/profiles/th_balanced.yaml --profile configs/profiles/sn2700.yaml || ptf_status=$?
# The sonic-mgmt shim's Python tests (pytest; a few start switchd).
ptf-tests/sai-shim/test.sh || ptf_status=$?

# Everything else; its summary closes the log.
status=0
cargo nextest run --workspace --locked --no-fail-fast -E 'not package(lossless-ptf)' || status=$?
if [ "$ptf_status" != 0 ]; then
  echo "the PTF catalog failed: see its summary above" >&2
fi
exit $((status != 0 ? status : ptf_status))
