# Sourced by the benchmark scripts (score.sh, sim.sh, forwarding.sh, soak.sh) from the repository root:
#   bench_build CARGO_BUILD_ARGS...
# builds the release binaries the script names (progress on stderr, so that stdout stays the report) and
# sets target_dir to the workspace's target directory (CARGO_TARGET_DIR or a `build.target-dir` honoured;
# target/ when cargo metadata says nothing).
bench_build() {
    cargo build --release "$@" >&2
    target_dir=$(cargo metadata --format-version 1 --no-deps 2>/dev/null \
        | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
    target_dir=${target_dir:-target}
}
