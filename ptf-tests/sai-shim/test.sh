#!/usr/bin/env bash
# The sai-shim's own tests (pytest): the counter layouts, the SAI names, the launcher, and the gRPC client
# against a real switchd (started by the tests on a temporary socket; LOSSLESS_SWITCHD names the binary).
# Installs the package with its test extras into a venv (SHIM_VENV, default target/shim-venv).
#
# Usage: ptf-tests/sai-shim/test.sh [PYTEST_ARGS...]
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
TARGET_DIR=${CARGO_TARGET_DIR:-$REPO/target}
VENV=${SHIM_VENV:-$TARGET_DIR/shim-venv}
PYTHON=${PYTHON:-python3}

if [ ! -x "$VENV/bin/python" ]; then
  echo "[shim] creating $VENV"
  "$PYTHON" -m venv "$VENV"
fi
echo "[shim] installing ptf-tests/sai-shim[test] into $VENV"
"$VENV/bin/python" -m pip install -q --disable-pip-version-check "$HERE[test]"
export LOSSLESS_SWITCHD=${LOSSLESS_SWITCHD:-$TARGET_DIR/debug/switchd}
cd "$HERE"
exec "$VENV/bin/python" -m pytest -q -p no:cacheprovider "$@"
