#!/usr/bin/env bash
# The design rule: lossless-core (dataplane/core) is I/O-free. Its normal dependency tree must hold no async
# runtime, gRPC, socket, libc or clock crate; this fails if one appears.
set -euo pipefail
cd "$(dirname "$0")/.."
forbidden='^(tokio|tokio-[a-z-]+|tonic|tonic-[a-z-]+|hyper|hyper-[a-z-]+|h2|mio|socket2|libc|nix|pnet|pnet_[a-z]+|async-std|smol|futures|futures-[a-z-]+|chrono|time|rand|getrandom) v'
found=$(cargo tree -p lossless-core -e normal --prefix none --locked | sort -u | grep -E "$forbidden" || true)
if [ -n "$found" ]; then
  echo "lossless-core must stay I/O-free, but depends on:" >&2
  echo "$found" >&2
  exit 1
fi
echo "lossless-core: no I/O dependency"
