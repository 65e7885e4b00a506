//! SIGINT and SIGTERM, handled one way by every process of the project (switchd, rocehost, `swctl lab`).
//!
//! [`Shutdown::install`] catches both signals on a helper thread (tokio's handlers, on a runtime of its
//! own, so the caller needs none) and returns once they are installed: from then on neither signal ends the
//! process; each is recorded instead. The caller sees the first one in the way that suits its loop:
//!
//! - [`Shutdown::received`]: a flag, for loops that check it at each step;
//! - [`Shutdown::requested`]: a future, for async code (a server's graceful shutdown);
//! - [`Shutdown::wake_fd`]: a descriptor that becomes readable, for `poll`/`ppoll` loops;
//! - [`Shutdown::install_with`]: a callback on every signal (e.g. "interrupted; cleaning up", then
//!   "still cleaning up").
//!
//! Later signals are caught too (and passed to the callback): a second Ctrl-C does not kill a process that
//! is cleaning up or writing its report.

use std::io::Write as _;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

/// A shutdown signal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    Interrupt,
    Terminate,
}

impl Signal {
    pub fn name(self) -> &'static str {
        match self {
            Signal::Interrupt => "SIGINT",
            Signal::Terminate => "SIGTERM",
        }
    }

    /// The signal's number (`kill -l`): an interrupted process exits with 128 + it.
    pub fn number(self) -> i32 {
        match self {
            Signal::Interrupt => libc::SIGINT,
            Signal::Terminate => libc::SIGTERM,
        }
    }

    fn code(self) -> u8 {
        match self {
            Signal::Interrupt => 1,
            Signal::Terminate => 2,
        }
    }

    fn from_code(code: u8) -> Option<Signal> {
        match code {
            1 => Some(Signal::Interrupt),
            2 => Some(Signal::Terminate),
            _ => None,
        }
    }
}

impl std::fmt::Display for Signal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// SIGINT/SIGTERM caught on a helper thread; see the module documentation.
#[derive(Debug, Clone)]
pub struct Shutdown {
    /// The first signal's [`Signal::code`], 0 before it.
    first: Arc<AtomicU8>,
    changed: tokio::sync::watch::Receiver<Option<Signal>>,
    wake_rx: Arc<UnixStream>,
}

impl Shutdown {
    /// Installs the handlers; returns once they are in place.
    pub fn install() -> std::io::Result<Shutdown> {
        Shutdown::install_with(|_, _| {})
    }

    /// As [`Shutdown::install`], and calls `on_signal(signal, n)` on the signal thread for the n-th signal
    /// (1 for the first).
    pub fn install_with(
        mut on_signal: impl FnMut(Signal, u32) + Send + 'static,
    ) -> std::io::Result<Shutdown> {
        let (mut wake_tx, wake_rx) = UnixStream::pair()?;
        wake_rx.set_nonblocking(true)?;
        let first = Arc::new(AtomicU8::new(0));
        let flag = first.clone();
        let (changed_tx, changed) = tokio::sync::watch::channel(None);
        let (installed_tx, installed_rx) = std::sync::mpsc::channel();
        std::thread::Builder::new().name("signals".into()).spawn(move || {
            use tokio::signal::unix::{SignalKind, signal};
            let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                Ok(r) => r,
                Err(e) => {
                    let _ = installed_tx.send(Err(e));
                    return;
                }
            };
            runtime.block_on(async move {
                let handlers = signal(SignalKind::terminate())
                    .and_then(|term| Ok((term, signal(SignalKind::interrupt())?)));
                let (mut term, mut int) = match handlers {
                    Ok(h) => h,
                    Err(e) => {
                        let _ = installed_tx.send(Err(e));
                        return;
                    }
                };
                let _ = installed_tx.send(Ok(()));
                for n in 1u32.. {
                    let which = tokio::select! {
                        _ = term.recv() => Signal::Terminate,
                        _ = int.recv() => Signal::Interrupt,
                    };
                    if n == 1 {
                        flag.store(which.code(), Ordering::SeqCst);
                        changed_tx.send_replace(Some(which));
                        let _ = wake_tx.write_all(&[which.code()]);
                    }
                    on_signal(which, n);
                }
            });
        })?;
        installed_rx
            .recv()
            .map_err(|_| std::io::Error::other("the signal thread ended before installing its handlers"))??;
        Ok(Shutdown { first, changed, wake_rx: Arc::new(wake_rx) })
    }

    /// The first signal received, if any.
    pub fn received(&self) -> Option<Signal> {
        Signal::from_code(self.first.load(Ordering::SeqCst))
    }

    /// Completes on the first signal (at once if it already came).
    pub async fn requested(&self) -> Signal {
        let mut changed = self.changed.clone();
        match changed.wait_for(Option::is_some).await {
            Ok(s) => s.expect("waited for Some"),
            // The signal thread is gone (it never ends while the process runs): never complete.
            Err(_) => std::future::pending().await,
        }
    }

    /// A descriptor that is readable from the first signal on (for `poll`).
    pub fn wake_fd(&self) -> RawFd {
        self.wake_rx.as_raw_fd()
    }
}
