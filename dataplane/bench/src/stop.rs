//! Ctrl-C: SIGINT and SIGTERM (caught the project's one way, `lossless_dataplane::shutdown`) make every
//! loop's check fail; `run` then returns an error, and the Drop guards (namespaces, switchd) clean up on the
//! way out.

use anyhow::bail;
use lossless_dataplane::shutdown::{Shutdown, Signal};
use std::sync::OnceLock;

static SHUTDOWN: OnceLock<Shutdown> = OnceLock::new();

/// Catches SIGINT/SIGTERM from now on.
pub fn install_signal_handlers() -> std::io::Result<()> {
    let shutdown = Shutdown::install()?;
    let _ = SHUTDOWN.set(shutdown);
    Ok(())
}

/// The signal that asked the benchmark to stop, if one came.
pub fn signal() -> Option<Signal> {
    SHUTDOWN.get().and_then(Shutdown::received)
}

pub fn stopped() -> bool {
    signal().is_some()
}

pub fn check_stop() -> anyhow::Result<()> {
    if stopped() {
        bail!("interrupted");
    }
    Ok(())
}
