//! Ctrl-C: SIGINT and SIGTERM set a flag every loop checks; `run` then returns an error, and the Drop guards
//! (namespaces, switchd) clean up on the way out.

use anyhow::bail;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

/// Set by SIGINT/SIGTERM; every loop checks it.
pub static STOP: AtomicBool = AtomicBool::new(false);
/// The signal that set [`STOP`].
pub static SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    SIGNAL.store(sig, Ordering::SeqCst);
    STOP.store(true, Ordering::SeqCst);
}

/// SIGINT/SIGTERM set [`STOP`]: loops end, `run` returns an error, and the Drop guards clean up.
#[allow(unsafe_code)]
pub fn install_signal_handlers() {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
        unsafe { libc::signal(sig, on_signal as *const () as libc::sighandler_t) };
    }
}

pub fn stopped() -> bool {
    STOP.load(Ordering::Relaxed)
}

pub fn check_stop() -> anyhow::Result<()> {
    if stopped() {
        bail!("interrupted");
    }
    Ok(())
}
