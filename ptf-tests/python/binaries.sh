# Sourced by run.sh and sonic-mgmt.sh: builds (unless told not to) and finds switchd, swctl and
# switchd-launch (the testkit's launcher: starts switchd and waits until its gRPC socket answers).
# In: REPO, TARGET_DIR, build (1 or 0), a log function; $1 the calling script's name for errors.
# Out: BIN, the directory holding the binaries. PTF_CARGO_PROFILE=debug: the debug binaries (what the rest
# of the test suite builds anyway).
ptf_binaries() {
  local me=$1
  case "${PTF_CARGO_PROFILE:-release}" in
    release) cargo_profile=(--release); BIN=$TARGET_DIR/release ;;
    debug) cargo_profile=(); BIN=$TARGET_DIR/debug ;;
    *) echo "$me: PTF_CARGO_PROFILE is release or debug" >&2; exit 2 ;;
  esac
  if [ "$build" = 1 ]; then
    log "cargo build ${cargo_profile[*]} --bin switchd --bin swctl --bin switchd-launch"
    (cd "$REPO" && cargo build "${cargo_profile[@]}" --locked --quiet --bin switchd --bin swctl --bin switchd-launch)
  fi
  for b in switchd swctl switchd-launch; do
    [ -x "$BIN/$b" ] || { echo "$me: $BIN/$b missing (build it, or drop --no-build)" >&2; exit 2; }
  done
}
