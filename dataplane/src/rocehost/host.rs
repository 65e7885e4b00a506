//! The real-time loop: the NIC model driven on one thread, paced by `ppoll`.

use super::args::Storm;
use super::report::write_atomically;
use super::text::Progress;
use super::{BACKLOG_MAX, CATCH_UP_NS, DRAIN_NS, MAX_WAIT_NS, RX_BATCH, RX_ROUNDS, STALL_WAIT_NS};
use crate::io::PortBackend;
use crate::io::runtime::{libc_pollfd, monotonic_ns, poll_fds};
use crate::nic::Nic;
use crate::shutdown::{Shutdown, Signal};
use crate::time::{Instant, Nanos};
use std::path::PathBuf;

/// Why the loop ended.
#[derive(Debug)]
pub(super) enum Stop {
    Signal(Signal),
    Duration,
    FlowsFinished,
    Failed(anyhow::Error),
}

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Stop::Signal(name) => write!(f, "{name}"),
            Stop::Duration => write!(f, "--duration elapsed"),
            Stop::FlowsFinished => write!(f, "every flow finished"),
            Stop::Failed(e) => write!(f, "error: {e:#}"),
        }
    }
}

pub(super) struct LoopOptions {
    pub(super) end_ns: Option<u64>,
    pub(super) stop_when_finished: bool,
    pub(super) progress: bool,
    /// The ready file and what to write into it.
    pub(super) ready: Option<(PathBuf, String)>,
}

pub(super) struct Host {
    pub(super) nic: Nic,
    pub(super) port: Box<dyn PortBackend>,
    /// Frames the kernel did not take yet, oldest first.
    pub(super) backlog: Vec<Vec<u8>>,
    pub(super) rx: Vec<Vec<u8>>,
    pub(super) tx_errors: u64,
    pub(super) storm: Option<StormWindow>,
    pub(super) rx_stuck: Option<StuckWindow>,
    /// `--probe-only`: only PFC frames and probe answers reach the NIC.
    pub(super) probe_only: bool,
}

/// A time window of the run (`--storm-from`/`--storm-until`, `--rx-stuck-from`/`--rx-stuck-until`).
pub(super) struct Window {
    pub(super) from_ns: u64,
    pub(super) until_ns: Option<u64>,
    pub(super) on: bool,
}

impl Window {
    pub(super) fn new(from_ns: u64, until_ns: Option<u64>) -> Window {
        Window { from_ns, until_ns, on: false }
    }

    /// Whether `now` just entered (`Some(true)`) or left (`Some(false)`) the window, and the next instant
    /// that changes.
    fn update(&mut self, now: u64) -> (Option<bool>, Option<u64>) {
        let want = now >= self.from_ns && self.until_ns.is_none_or(|u| now < u);
        let change = (want != self.on).then_some(want);
        self.on = want;
        let next = if now < self.from_ns { Some(self.from_ns) } else { self.until_ns.filter(|&u| now < u) };
        (change, next)
    }
}

/// `--storm` in its window.
pub(super) struct StormWindow {
    pub(super) storm: Storm,
    pub(super) window: Window,
}

impl StormWindow {
    /// Turns the storm on or off as `now` enters or leaves the window; the next time that changes.
    fn update(&mut self, nic: &mut Nic, now: u64) -> Option<u64> {
        let (change, next) = self.window.update(now);
        match change {
            Some(true) => {
                tracing::info!("storm starts");
                nic.set_storm(self.storm.priorities, Nanos::from_ns(self.storm.interval_ns));
            }
            Some(false) => {
                tracing::info!("storm stops");
                nic.set_storm(0, Nanos::ZERO);
            }
            None => {}
        }
        next
    }
}

/// The receive pipeline stuck in its window (`--rx-stuck-from`, `--rx-stuck-until`).
pub(super) struct StuckWindow(pub(super) Window);

impl StuckWindow {
    fn update(&mut self, nic: &mut Nic, now: u64) -> Option<u64> {
        let (change, next) = self.0.update(now);
        if let Some(stuck) = change {
            tracing::info!(stuck, "receive pipeline");
            nic.set_rx_stuck(stuck, Instant::from_ns(now));
        }
        next
    }
}

impl Host {
    pub(super) fn run(&mut self, options: &LoopOptions, signals: &Shutdown, epoch: u64) -> Stop {
        let mut finished_since: Option<u64> = None;
        let mut ready = options.ready.as_ref();
        let mut progress = Progress::new(epoch);
        // Start-up since `epoch` is no lateness to catch up on.
        self.nic.handle_timeout(Instant::from_ns(monotonic_ns()));
        loop {
            if let Some(signal) = signals.received() {
                return Stop::Signal(signal);
            }
            let now = monotonic_ns();
            let storm_at = self.storm.as_mut().and_then(|w| w.update(&mut self.nic, now));
            let stuck_at = self.rx_stuck.as_mut().and_then(|w| w.update(&mut self.nic, now));
            let mut stalled = self.drive(now);
            let now = match self.receive(now) {
                Ok(now) => now,
                Err(e) => return Stop::Failed(e),
            };
            stalled |= self.drive(now);
            if let Err(e) = self.flush() {
                return Stop::Failed(e);
            }
            if let Some((path, content)) = ready.take()
                && let Err(e) = write_atomically(path, content.as_bytes())
            {
                return Stop::Failed(anyhow::Error::new(e).context(format!("writing {}", path.display())));
            }
            if options.end_ns.is_some_and(|end| now >= end) {
                return Stop::Duration;
            }
            if options.stop_when_finished && self.nic.all_flows_finished() {
                let since = *finished_since.get_or_insert(now);
                if now >= since + DRAIN_NS {
                    return Stop::FlowsFinished;
                }
            }
            if options.progress && now >= progress.next_ns {
                eprintln!("{}", progress.line(&self.nic, now));
            }
            let mut due = self.nic.poll_at().map(Instant::as_ns);
            if stalled || self.backlog.len() >= BACKLOG_MAX {
                due = due.map(|t| t.max(now + STALL_WAIT_NS));
            }
            let wake_at = [
                due,
                options.end_ns,
                finished_since.map(|t| t + DRAIN_NS),
                options.progress.then_some(progress.next_ns),
                storm_at,
                stuck_at,
            ]
            .into_iter()
            .flatten()
            .min();
            if let Err(e) = self.wait(wake_at, signals) {
                return Stop::Failed(anyhow::Error::new(e).context("ppoll"));
            }
        }
    }

    /// Runs the NIC up to `now`: timers, and every frame whose line slot has come, letting a late wake-up
    /// catch up by at most [`CATCH_UP_NS`]. Time passed to the NIC never goes backwards. True when the NIC
    /// said it was due but had nothing to do (the caller then sleeps a little rather than spin).
    fn drive(&mut self, now: u64) -> bool {
        let mut floor = now.saturating_sub(CATCH_UP_NS).max(self.nic.now().as_ns());
        while let Some(at) = self.nic.poll_at().map(Instant::as_ns).filter(|&t| t <= now) {
            if self.backlog.len() >= BACKLOG_MAX {
                // The kernel takes nothing: the line is blocked, but timers still run.
                self.nic.handle_timeout(Instant::from_ns(now));
                return false;
            }
            let t = at.max(floor);
            self.nic.handle_timeout(Instant::from_ns(t));
            match self.nic.poll_transmit(Instant::from_ns(t)) {
                Some(frame) => self.backlog.push(frame),
                None if self.nic.poll_at().is_some_and(|a| a.as_ns() <= t) => {
                    tracing::debug!(t, "the NIC is due but has nothing to do");
                    return true;
                }
                None => {}
            }
            floor = t;
        }
        false
    }

    /// Receives what the kernel holds (up to [`RX_ROUNDS`] batches) and hands it to the NIC, stamped with
    /// the time the batch was read (never before its sender's timestamp); returns the latest time used.
    fn receive(&mut self, mut now: u64) -> anyhow::Result<u64> {
        for _ in 0..RX_ROUNDS {
            self.rx.clear();
            let n = match self.port.recv_batch(&mut self.rx, RX_BATCH) {
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => 0,
                Err(e) if is_gone(&e) => {
                    return Err(anyhow::Error::new(e).context(format!("receiving on {}", self.port.name())));
                }
                Err(e) => {
                    tracing::warn!(interface = self.port.name(), "receive failed: {e}");
                    0
                }
            };
            if n > 0 {
                now = monotonic_ns().max(now);
            }
            for frame in &self.rx {
                if self.probe_only && !crate::nic::probe::is_pfc_or_pong(frame) {
                    continue;
                }
                self.nic.handle_frame(frame, Instant::from_ns(now));
            }
            if n < RX_BATCH {
                break;
            }
        }
        Ok(now)
    }

    /// Hands the backlog to the kernel; what it does not take stays for the next POLLOUT.
    fn flush(&mut self) -> anyhow::Result<()> {
        while !self.backlog.is_empty() {
            match self.port.send_batch(&self.backlog) {
                Ok(0) => break,
                Ok(n) => {
                    self.backlog.drain(..n);
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) if is_gone(&e) => {
                    return Err(anyhow::Error::new(e).context(format!("sending on {}", self.port.name())));
                }
                Err(e) => {
                    // A link that is down (a lab taking it down on purpose): the frames are lost, as on
                    // a real wire; the NIC's retransmission recovers.
                    if self.tx_errors.is_power_of_two() || self.tx_errors == 0 {
                        tracing::warn!(
                            interface = self.port.name(),
                            "send failed ({} time(s)), {} frame(s) lost: {e}",
                            self.tx_errors + 1,
                            self.backlog.len()
                        );
                    }
                    self.tx_errors += 1;
                    self.backlog.clear();
                }
            }
        }
        Ok(())
    }

    /// Sleeps until the interface is readable (or writable with a backlog), a signal, or `wake_at`.
    fn wait(&self, wake_at: Option<u64>, signals: &Shutdown) -> std::io::Result<()> {
        let now = monotonic_ns();
        let timeout_ns = match wake_at {
            Some(t) if t <= now => return Ok(()),
            Some(t) => (t - now).min(MAX_WAIT_NS),
            None => MAX_WAIT_NS,
        };
        let mut fds = [
            libc_pollfd(self.port.raw_fd(), !self.backlog.is_empty()),
            libc_pollfd(signals.wake_fd(), false),
        ];
        poll_fds(&mut fds, timeout_ns)
    }
}

/// The interface is gone (deleted, or its namespace): nothing more will work.
pub(super) fn is_gone(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ENODEV | libc::ENXIO | libc::EBADF))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nic::{NicConfig, RxPipelineConfig};

    #[test]
    fn a_window_switches_on_and_off_once_and_says_when_next() {
        let mut w = Window::new(100, Some(300));
        assert_eq!(w.update(50), (None, Some(100)));
        assert_eq!(w.update(100), (Some(true), Some(300)));
        assert_eq!(w.update(200), (None, Some(300)));
        assert_eq!(w.update(300), (Some(false), None));
        assert_eq!(w.update(400), (None, None));
        let mut open = Window::new(0, None);
        assert_eq!(open.update(0), (Some(true), None));
    }

    #[test]
    fn the_stuck_window_stops_and_restarts_the_receive_pipeline() {
        let rx = RxPipelineConfig { buffer_bytes: 10_000, xoff_bytes: 5_000, ..RxPipelineConfig::default() };
        let mut nic = Nic::new(NicConfig { rx_pipeline: rx, ..NicConfig::default() }).unwrap();
        let mut w = StuckWindow(Window::new(1_000, Some(2_000)));
        assert_eq!(w.update(&mut nic, 500), Some(1_000));
        assert!(!nic.rx_stuck());
        assert_eq!(w.update(&mut nic, 1_000), Some(2_000));
        assert!(nic.rx_stuck());
        assert_eq!(w.update(&mut nic, 2_500), None);
        assert!(!nic.rx_stuck());
    }
}
