//! The real-time runtime: one thread owns the switch model and drives it against the monotonic clock and
//! the port backends, run to completion: receive a batch on every port → `handle_frame` each frame → run
//! control commands → `handle_timeout` when due → `poll_transmit` everything whose line is free (the model
//! paces each port at its configured speed) → publish events → sleep until a descriptor is ready or the
//! model's next deadline (`poll_at`), with nanosecond precision.
//!
//! With [`Runtime::set_busy_poll`] the thread keeps polling its ports without sleeping for a while after
//! the last frame it received or sent (as DPDK and `SO_BUSY_POLL` do): a frame that arrives then is
//! taken without a wake-up, which is most of a software switch's latency tail, at the cost of a busy
//! CPU while traffic flows. While it polls with nothing to do, the thread runs in the `SCHED_IDLE` class
//! (when it may: root or `CAP_SYS_NICE`), so it only takes CPU time no other task wants: a task woken on
//! its CPU — typically the receiver of the frame just forwarded — runs at once instead of waiting for the
//! poller's time slice to end (measured: a plain spinning poller left such wake-ups waiting up to 4 ms,
//! a p99 of 1–3 ms at 10 kpps on a 2-core machine). After [`BUSY_STREAK`] polling rounds in a row found
//! work (a sustained load), the thread returns to the normal class, so a busy switch keeps its fair share
//! of the CPU; it goes back to `SCHED_IDLE` after [`IDLE_CLASS_AFTER_NS`] without work.
//!
//! Ports have an operational state. A port whose interface vanishes or loses carrier (a receive error, an
//! error on its descriptor, or the once-a-second check of its flags) is marked down in the model (see
//! `Switch::set_port_oper`), logged once, and its socket closed, so it costs nothing while down; the same
//! check reopens it when the interface is back up. Frames the kernel dropped at a port's socket (a full
//! receive ring) and frames no port can take (GSO super-frames) are counted in the model once a second
//! (`RX_OVERRUN` in `RX_OVR`, `EXCEEDS_L2_MTU`), so every frame the interfaces delivered is accounted for.
//!
//! The gRPC side talks to the model thread through a [`Handle`]. Reads never run on the model thread: it
//! publishes a [`Snapshot`] (counters, watermarks, port status) every [`SNAPSHOT_EVERY_NS`] and, coalesced,
//! whenever a reader asks for a fresh one ([`Handle::snapshot`]). Changes are commands, closures run on the
//! model thread between two frames and kept short: a configuration is validated and compiled by the
//! caller ([`Switch::prepare`]) and only swapped in there ([`Switch::install`]).

use crate::io::capture::{Captures, Capturing};
use crate::io::{LinkState, PortBackend, PortSpec};
use crate::model::DropReason;
use crate::model::config::ConfigDb;
use crate::model::mmu::WatermarkKind;
use crate::model::{Event, PortId, Switch};
use crate::server::{CountersSnapshot, WatermarksSnapshot};
use crate::time::{Instant, Nanos};
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, mpsc};

/// What a command sees: the model and the current time.
pub struct ModelCtx<'a> {
    pub switch: &'a mut Switch,
    pub now: Instant,
}

/// How often the model thread publishes a [`Snapshot`] when nobody asks for a fresh one.
pub const SNAPSHOT_EVERY_NS: u64 = 100_000_000;

/// The switch as readers see it, taken on the model thread at one instant (copies only; conversion to the
/// API's types happens on the reader's side).
#[derive(Clone)]
pub struct Snapshot {
    /// Counts the snapshots published.
    pub seq: u64,
    pub counters: CountersSnapshot,
    pub watermarks: WatermarksSnapshot,
    pub persistent_watermarks: WatermarksSnapshot,
}

impl Snapshot {
    fn take(switch: &Switch, now_ns: u64, seq: u64) -> Snapshot {
        Snapshot {
            seq,
            counters: CountersSnapshot::take(switch, now_ns),
            watermarks: WatermarksSnapshot::take(switch, WatermarkKind::User),
            persistent_watermarks: WatermarksSnapshot::take(switch, WatermarkKind::Persistent),
        }
    }
}

/// How long the model thread worked, at most, on something other than frames: the longest command (an
/// Apply's swap, a hold, a flush) and the longest snapshot, in CPU time of the thread (time the scheduler
/// gave to other threads is not the model's doing). Forwarding and PFC refresh wait while it runs.
#[derive(Debug, Default)]
pub struct Stalls {
    longest_command_ns: AtomicU64,
    longest_snapshot_ns: AtomicU64,
}

impl Stalls {
    /// (longest command, longest snapshot), in nanoseconds, since the last [`Stalls::reset`].
    pub fn longest(&self) -> (u64, u64) {
        (self.longest_command_ns.load(Ordering::Relaxed), self.longest_snapshot_ns.load(Ordering::Relaxed))
    }

    pub fn reset(&self) {
        self.longest_command_ns.store(0, Ordering::Relaxed);
        self.longest_snapshot_ns.store(0, Ordering::Relaxed);
    }
}

/// The CONFIG_DB content of the running configuration (what `Get` returns) and its generation.
#[derive(Debug, Clone, Default)]
pub struct Running {
    pub config: Arc<ConfigDb>,
    pub generation: u64,
}

type Command = Box<dyn FnOnce(&mut ModelCtx<'_>) + Send>;

/// An event with the model time it was observed at.
#[derive(Debug, Clone)]
pub struct TimedEvent {
    pub at_ns: u64,
    pub event: Event,
}

/// The runtime has stopped; no more commands are taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the switch runtime has stopped")]
pub struct RuntimeGone;

/// A cloneable handle to the model thread.
#[derive(Clone)]
pub struct Handle {
    commands: mpsc::Sender<Command>,
    waker: Arc<Mutex<UnixStream>>,
    events: tokio::sync::broadcast::Sender<TimedEvent>,
    stop: Arc<AtomicBool>,
    snapshots: Arc<tokio::sync::watch::Sender<Arc<Snapshot>>>,
    snapshot_wanted: Arc<AtomicBool>,
    running: Arc<RwLock<Running>>,
    stalls: Arc<Stalls>,
    captures: Captures,
}

impl Handle {
    /// Runs `f` on the model thread between two frames and returns its result.
    pub async fn call<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut ModelCtx<'_>) -> R + Send + 'static,
    ) -> Result<R, RuntimeGone> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let command: Command = Box::new(move |ctx| {
            let _ = tx.send(f(ctx));
        });
        self.commands.send(command).map_err(|_| RuntimeGone)?;
        self.wake();
        rx.await.map_err(|_| RuntimeGone)
    }

    /// The same, for callers outside an async context.
    pub fn call_blocking<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut ModelCtx<'_>) -> R + Send + 'static,
    ) -> Result<R, RuntimeGone> {
        let (tx, rx) = mpsc::channel();
        let command: Command = Box::new(move |ctx| {
            let _ = tx.send(f(ctx));
        });
        self.commands.send(command).map_err(|_| RuntimeGone)?;
        self.wake();
        rx.recv().map_err(|_| RuntimeGone)
    }

    /// A snapshot taken after this call: asks the model thread for one (requests that arrive together share
    /// it) and waits for it.
    pub async fn snapshot(&self) -> Result<Arc<Snapshot>, RuntimeGone> {
        let mut published = self.snapshots.subscribe();
        published.mark_unchanged();
        self.snapshot_wanted.store(true, Ordering::SeqCst);
        self.wake();
        published.changed().await.map_err(|_| RuntimeGone)?;
        Ok(published.borrow_and_update().clone())
    }

    /// The latest snapshot published (at most [`SNAPSHOT_EVERY_NS`] old while the runtime runs).
    pub fn latest_snapshot(&self) -> Arc<Snapshot> {
        self.snapshots.borrow().clone()
    }

    /// Open packet captures: add one to start it (see [`crate::io::capture`]).
    pub fn captures(&self) -> &Captures {
        &self.captures
    }

    /// The model thread's longest stalls.
    pub fn stalls(&self) -> &Stalls {
        &self.stalls
    }

    /// The running configuration as last applied.
    pub fn running(&self) -> Running {
        self.running.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Records the configuration just applied (generation `generation`) as the running one; returns the
    /// one it replaced.
    pub fn set_running(&self, config: Arc<ConfigDb>, generation: u64) -> Running {
        let mut running = self.running.write().unwrap_or_else(|e| e.into_inner());
        std::mem::replace(&mut *running, Running { config, generation })
    }

    /// Events from now on (a receiver that falls behind loses the oldest, and is told how many).
    pub fn subscribe(&self) -> tokio::sync::broadcast::Receiver<TimedEvent> {
        self.events.subscribe()
    }

    /// Asks the runtime to stop after the current iteration.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
        self.wake();
    }

    fn wake(&self) {
        if let Ok(mut w) = self.waker.lock() {
            // A full socket buffer means a wake-up is already pending.
            let _ = w.write(&[1]);
        }
    }
}

/// Per-port I/O state: the backend (absent for ports without an interface) and frames the kernel did not
/// take yet.
struct PortIo {
    backend: Option<Box<dyn PortBackend>>,
    backlog: Vec<Vec<u8>>,
    /// How to reopen the port's interface after it went down (none: the port is never reopened).
    spec: Option<PortSpec>,
    /// Link checks in a row that found the interface without carrier.
    no_carrier: u8,
}

/// Checks in a row without carrier before a port is marked down: carrier comes and goes for a moment when
/// an interface is set up (the kernel's link watch reports it late), which is no reason to drop frames.
const NO_CARRIER_CHECKS: u8 = 2;

/// How often port links are checked and frames lost before the switch are counted.
pub const LINK_CHECK_NS: u64 = 1_000_000_000;

/// How far behind the clock a port's line may have fallen and still catch up in a burst: a wake-up that
/// comes late (timer slack, scheduling) must not cost the port its configured rate.
const CATCH_UP: Nanos = Nanos::from_us(200);
/// Frames taken from one port per receive call.
const RX_BATCH: usize = 64;
/// Busy polling: consecutive rounds with work after which the thread leaves `SCHED_IDLE` (a sustained load).
pub const BUSY_STREAK: u32 = 16;
/// Busy polling: time without work after which the thread goes back to `SCHED_IDLE`.
pub const IDLE_CLASS_AFTER_NS: u64 = 100_000;

/// The model thread's state.
pub struct Runtime {
    switch: Switch,
    ports: Vec<PortIo>,
    snapshots: Arc<tokio::sync::watch::Sender<Arc<Snapshot>>>,
    snapshot_wanted: Arc<AtomicBool>,
    next_snapshot_ns: u64,
    stalls: Arc<Stalls>,
    next_link_check_ns: u64,
    commands: mpsc::Receiver<Command>,
    wake_rx: UnixStream,
    events: tokio::sync::broadcast::Sender<TimedEvent>,
    stop: Arc<AtomicBool>,
    /// Keep polling without sleeping for this long after the last frame (0: sleep at once).
    busy_poll_ns: u64,
    last_activity_ns: u64,
    /// The last sleep ended because of the wake socket: drain it.
    woken: bool,
    /// Busy polling: the thread may switch between `SCHED_IDLE` and the normal class (it could leave
    /// `SCHED_IDLE` again when tried at start).
    idle_class_ok: bool,
    /// The thread is in `SCHED_IDLE` now.
    in_idle_class: bool,
    /// Polling rounds in a row that found work.
    busy_streak: u32,
    capturing: Capturing,
}

impl Runtime {
    /// A runtime for `switch` (already configured with `config`); `backends[i]` serves port `i`.
    pub fn new(
        switch: Switch,
        config: ConfigDb,
        backends: Vec<Option<Box<dyn PortBackend>>>,
    ) -> io::Result<(Runtime, Handle)> {
        let (wake_tx, wake_rx) = UnixStream::pair()?;
        wake_tx.set_nonblocking(true)?;
        wake_rx.set_nonblocking(true)?;
        let (cmd_tx, cmd_rx) = mpsc::channel();
        let (events, _) = tokio::sync::broadcast::channel(4096);
        let stop = Arc::new(AtomicBool::new(false));
        let snapshots = Arc::new(tokio::sync::watch::Sender::new(Arc::new(Snapshot::take(&switch, 0, 0))));
        let snapshot_wanted = Arc::new(AtomicBool::new(false));
        let running = Running { config: Arc::new(config), generation: switch.generation() };
        let handle = Handle {
            commands: cmd_tx,
            waker: Arc::new(Mutex::new(wake_tx)),
            events: events.clone(),
            stop: stop.clone(),
            snapshots: snapshots.clone(),
            snapshot_wanted: snapshot_wanted.clone(),
            running: Arc::new(RwLock::new(running)),
            stalls: Arc::default(),
            captures: Captures::default(),
        };
        let ports = backends
            .into_iter()
            .map(|backend| PortIo { backend, backlog: Vec::new(), spec: None, no_carrier: 0 })
            .collect();
        let runtime = Runtime {
            switch,
            ports,
            snapshots,
            snapshot_wanted,
            next_snapshot_ns: 0,
            next_link_check_ns: 0,
            stalls: handle.stalls.clone(),
            commands: cmd_rx,
            wake_rx,
            events,
            stop,
            busy_poll_ns: 0,
            last_activity_ns: 0,
            woken: true,
            idle_class_ok: false,
            in_idle_class: false,
            busy_streak: 0,
            capturing: Capturing::new(handle.captures.clone()),
        };
        Ok((runtime, handle))
    }

    /// How each port's interface is reopened when it comes back after going down (`specs[i]` for port `i`;
    /// a port without a spec stays down once its interface is gone).
    pub fn set_port_specs(&mut self, specs: Vec<Option<PortSpec>>) {
        for (io, spec) in self.ports.iter_mut().zip(specs) {
            io.spec = spec;
        }
    }

    /// Busy-polls for `ns` after the last frame received or sent before going back to sleep (0, the
    /// default: sleep as soon as there is nothing to do).
    pub fn set_busy_poll(&mut self, ns: u64) {
        self.busy_poll_ns = ns;
    }

    /// Model time: the machine's `CLOCK_MONOTONIC`, the time base rocehost and every other process share
    /// (see [`crate::clock`]).
    fn now_ns(&self) -> u64 {
        monotonic_ns()
    }

    /// Runs until [`Handle::stop`] (or every handle is dropped).
    pub fn run(mut self) -> io::Result<()> {
        let mut rx = Vec::with_capacity(RX_BATCH);
        if self.busy_poll_ns > 0 {
            // Try both directions once: a thread that could enter SCHED_IDLE but not leave it (no
            // CAP_SYS_NICE, RLIMIT_NICE too low) must never enter it.
            self.idle_class_ok = set_idle_class(true).and_then(|()| set_idle_class(false)).is_ok();
            if !self.idle_class_ok {
                let _ = set_idle_class(false);
                tracing::info!(
                    "busy polling without SCHED_IDLE (needs root or CAP_SYS_NICE): a task woken on the polling \
                     CPU may wait for the poller's time slice"
                );
            }
        }
        while !self.stop.load(Ordering::SeqCst) {
            let now = self.now_ns();
            let active_before = self.last_activity_ns;
            self.capturing.refresh(&mut self.switch);
            for p in 0..self.ports.len() {
                let Some(backend) = self.ports[p].backend.as_mut() else { continue };
                rx.clear();
                let failed = match backend.recv_batch(&mut rx, RX_BATCH) {
                    Ok(_) => None,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => None,
                    Err(e) => Some(e),
                };
                if !rx.is_empty() {
                    self.last_activity_ns = now;
                }
                if self.capturing.active() {
                    for frame in rx.drain(..) {
                        let port = PortId::new(p);
                        self.capturing.forget_drops(&mut self.switch);
                        self.capturing.received(port, &frame, now);
                        let copy = frame.clone();
                        self.switch.handle_frame(port, frame, Instant::from_ns(now));
                        self.capturing.after_receive(&mut self.switch, &copy, now);
                    }
                }
                for frame in rx.drain(..) {
                    self.switch.handle_frame(PortId::new(p), frame, Instant::from_ns(now));
                }
                if let Some(e) = failed {
                    self.check_link(p, now, Some(&e));
                }
            }
            if now >= self.next_link_check_ns {
                self.next_link_check_ns = now + LINK_CHECK_NS;
                for p in 0..self.ports.len() {
                    self.count_lost(p);
                    self.check_link(p, now, None);
                }
            }
            if !self.run_commands(now) {
                break;
            }
            self.publish(now);
            let now = self.now_ns();
            if self.switch.timeout_at().is_some_and(|t| t.as_ns() <= now) {
                self.switch.handle_timeout(Instant::from_ns(now));
            }
            self.transmit(now);
            while let Some(event) = self.switch.poll_event() {
                let _ = self.events.send(TimedEvent { at_ns: now, event });
            }
            if self.idle_class_ok {
                self.busy_streak =
                    if self.last_activity_ns != active_before { self.busy_streak + 1 } else { 0 };
                if self.in_idle_class && self.busy_streak >= BUSY_STREAK {
                    self.in_idle_class = set_idle_class(false).is_err();
                }
            }
            self.wait()?;
        }
        Ok(())
    }

    /// Runs pending commands; false when every handle is gone.
    fn run_commands(&mut self, now: u64) -> bool {
        // The wake socket is drained only when the last sleep ended on it: a busy-polling thread makes no
        // system call per iteration for it (commands are found by `try_recv` all the same).
        if std::mem::take(&mut self.woken) {
            let mut buf = [0u8; 64];
            while matches!(self.wake_rx.read(&mut buf), Ok(n) if n > 0) {}
        }
        loop {
            match self.commands.try_recv() {
                Ok(command) => {
                    let started = thread_cpu_ns();
                    let mut ctx = ModelCtx { switch: &mut self.switch, now: Instant::from_ns(now) };
                    command(&mut ctx);
                    let took = thread_cpu_ns().saturating_sub(started);
                    self.stalls.longest_command_ns.fetch_max(took, Ordering::Relaxed);
                }
                Err(mpsc::TryRecvError::Empty) => return true,
                Err(mpsc::TryRecvError::Disconnected) => return false,
            }
        }
    }

    /// Counts what the port's interface delivered that never reached the switch.
    fn count_lost(&mut self, p: usize) {
        let Some(backend) = self.ports[p].backend.as_mut() else { return };
        let lost = backend.take_rx_lost();
        if lost.overrun > 0 {
            tracing::warn!(
                port = %self.port_name(p),
                dropped = lost.overrun,
                "frames dropped by the kernel at the receive socket: the switch is not keeping up"
            );
        }
        self.switch.count_rx_lost(PortId::new(p), DropReason::RxOverrun, lost.overrun);
        self.switch.count_rx_lost(PortId::new(p), DropReason::ExceedsL2Mtu, lost.oversize);
    }

    fn port_name(&self, p: usize) -> String {
        self.switch.config().ports.get(p).map_or_else(|| format!("port {p}"), |c| c.name.clone())
    }

    /// Marks a port down when its interface is gone or has no carrier (closing its socket), and up again
    /// when it is back (reopening it). `error` is a receive or descriptor error that prompted the check.
    fn check_link(&mut self, p: usize, now: u64, error: Option<&io::Error>) {
        let io = &self.ports[p];
        let Some(interface) = io
            .backend
            .as_ref()
            .map(|b| b.name().to_owned())
            .or_else(|| io.spec.as_ref().map(|s| s.interface().to_owned()))
        else {
            return;
        };
        let state = crate::io::link_state(&interface);
        let periodic = error.is_none();
        let io = &mut self.ports[p];
        io.no_carrier = match state {
            LinkState::NoCarrier if periodic => io.no_carrier.saturating_add(1),
            LinkState::NoCarrier => io.no_carrier,
            _ => 0,
        };
        let up = match state {
            LinkState::Up => true,
            LinkState::NoCarrier => io.no_carrier < NO_CARRIER_CHECKS && io.backend.is_some(),
            LinkState::AdminDown | LinkState::Gone => false,
        };
        let io = &self.ports[p];
        match (io.backend.is_some(), up) {
            (true, true) => {
                if let Some(e) = error {
                    // A pending socket error (the link flapped) is read, so the descriptor stops reporting it.
                    if let Some(fd) = io.backend.as_ref().map(|b| b.raw_fd()) {
                        take_socket_error(fd);
                    }
                    tracing::debug!(port = %self.port_name(p), %interface, "receive failed, link up: {e}");
                }
            }
            (true, false) => {
                // Frames lost so far still count; then the socket goes, with whatever it held.
                self.count_lost(p);
                let io = &mut self.ports[p];
                io.backend = None;
                io.backlog.clear();
                self.switch.set_port_oper(PortId::new(p), false, Instant::from_ns(now));
                let why = match (state, error) {
                    (LinkState::Gone, _) => "the interface is gone".to_owned(),
                    (LinkState::AdminDown, _) => "the interface is down".to_owned(),
                    (_, Some(e)) => e.to_string(),
                    _ => "no carrier".to_owned(),
                };
                tracing::warn!(port = %self.port_name(p), %interface, "link down ({why}): port marked down");
            }
            (false, true) => {
                let Some(spec) = io.spec.clone() else { return };
                match crate::io::open(&spec) {
                    Ok(backend) => {
                        self.ports[p].backend = Some(backend);
                        self.switch.set_port_oper(PortId::new(p), true, Instant::from_ns(now));
                        tracing::info!(port = %self.port_name(p), %interface, "link up: port reopened");
                    }
                    Err(e) => tracing::debug!(port = %self.port_name(p), %interface, "not reopened yet: {e}"),
                }
            }
            (false, false) => {}
        }
    }

    /// Publishes a snapshot when one is due or wanted.
    fn publish(&mut self, now: u64) {
        let wanted = self.snapshot_wanted.swap(false, Ordering::SeqCst);
        if !wanted && now < self.next_snapshot_ns {
            return;
        }
        self.next_snapshot_ns = now + SNAPSHOT_EVERY_NS;
        let started = thread_cpu_ns();
        let seq = self.snapshots.borrow().seq + 1;
        let snapshot = Arc::new(Snapshot::take(&self.switch, now, seq));
        self.snapshots.send_replace(snapshot);
        let took = thread_cpu_ns().saturating_sub(started);
        self.stalls.longest_snapshot_ns.fetch_max(took, Ordering::Relaxed);
    }

    /// Sends everything whose line is free, letting a late port catch up by at most [`CATCH_UP`].
    fn transmit(&mut self, now: u64) {
        let at = Instant::from_ns(now);
        for p in 0..self.ports.len() {
            let port = PortId::new(p);
            let io = &mut self.ports[p];
            // The model paces the line; a wake-up that comes late sends what the line could have carried
            // since it became free (at most CATCH_UP back), so the port keeps its configured rate.
            loop {
                let free = self.switch.line_free_at(port);
                if free > at {
                    break;
                }
                let t = free.max(at - CATCH_UP);
                let tx = match self.switch.poll_transmit(port, t) {
                    Some(tx) => tx,
                    // Nothing was eligible back then (a pause or a shaper ended since): try now.
                    None => match (t < at).then(|| self.switch.poll_transmit(port, at)).flatten() {
                        Some(tx) => tx,
                        None => break,
                    },
                };
                self.capturing.sent(port, &tx.frame, now);
                // A port without an interface: frames leave into the void (counted by the model).
                if io.backend.is_some() {
                    io.backlog.push(tx.frame);
                }
                self.last_activity_ns = now;
            }
            if let (Some(backend), false) = (io.backend.as_mut(), io.backlog.is_empty()) {
                match backend.send_batch(&io.backlog) {
                    Ok(n) => {
                        io.backlog.drain(..n);
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    Err(e) => {
                        tracing::warn!(port = p, "send failed, {} frame(s) lost: {e}", io.backlog.len());
                        io.backlog.clear();
                    }
                }
            }
        }
    }

    /// Sleeps until a port is readable (or writable with a backlog), a command arrives, or the model's next
    /// deadline.
    fn wait(&mut self) -> io::Result<()> {
        let now = self.now_ns();
        let housekeeping = self.next_snapshot_ns.min(self.next_link_check_ns);
        let deadline = Some(self.switch.poll_at().map_or(housekeeping, |t| t.as_ns().min(housekeeping)));
        let timeout_ns = match deadline {
            Some(t) if t <= now => return Ok(()),
            Some(t) => (t - now).min(100_000_000),
            None => 100_000_000,
        };
        let idle_for = now.saturating_sub(self.last_activity_ns);
        if idle_for < self.busy_poll_ns {
            // Spin, in SCHED_IDLE once idle for a while (see the module documentation). Measured against
            // sched_yield() after every empty poll (in either class): yielding gave a higher, wider tail.
            if self.idle_class_ok
                && !self.in_idle_class
                && idle_for >= IDLE_CLASS_AFTER_NS.min(self.busy_poll_ns / 2)
            {
                self.in_idle_class = set_idle_class(true).is_ok();
            }
            std::hint::spin_loop();
            return Ok(());
        }
        if self.in_idle_class {
            // Sleeping: a wake-up should find the thread in its normal class.
            self.in_idle_class = set_idle_class(false).is_err();
        }
        let mut fds = vec![libc_pollfd(self.wake_rx.as_raw_fd(), false)];
        for io in &self.ports {
            if let Some(b) = &io.backend {
                fds.push(libc_pollfd(b.raw_fd(), !io.backlog.is_empty()));
            }
        }
        let result = poll_fds(&mut fds, timeout_ns);
        // An error on a port's descriptor (its interface went away) is checked now: left alone, it would
        // wake every poll at once.
        let broken = libc::POLLERR | libc::POLLHUP | libc::POLLNVAL;
        if fds[1..].iter().any(|fd| fd.revents & broken != 0) {
            // fds[1..] are the ports with a backend, in port order.
            let with_backend = self.ports.iter().enumerate().filter(|(_, io)| io.backend.is_some());
            let failed: Vec<usize> = fds[1..]
                .iter()
                .zip(with_backend)
                .filter(|(fd, _)| fd.revents & broken != 0)
                .map(|(_, (p, _))| p)
                .collect();
            let now = self.now_ns();
            for p in failed {
                self.check_link(p, now, Some(&io::Error::other("error on the port's descriptor")));
            }
        }
        // An interrupted or failed poll drains the wake socket too, to be safe.
        self.woken = fds[0].revents != 0 || result.is_err();
        result
    }
}

/// Puts the calling thread in the `SCHED_IDLE` class, or back in the normal one (`SCHED_OTHER`, nice
/// unchanged).
#[allow(unsafe_code)]
fn set_idle_class(idle: bool) -> io::Result<()> {
    let param = libc::sched_param { sched_priority: 0 };
    let policy = if idle { libc::SCHED_IDLE } else { libc::SCHED_OTHER };
    // SAFETY: pid 0 is the calling thread; `param` is a live sched_param.
    if unsafe { libc::sched_setscheduler(0, policy, &param) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// A `pollfd` waiting for readability, and for writability too when `writable`.
pub fn libc_pollfd(fd: i32, writable: bool) -> libc::pollfd {
    libc::pollfd { fd, events: libc::POLLIN | if writable { libc::POLLOUT } else { 0 }, revents: 0 }
}

/// `CLOCK_MONOTONIC` in nanoseconds: the clock behind `Instant`, as an absolute value that every process
/// of the machine shares (so timestamps one process puts in a frame mean the same to another).
#[allow(unsafe_code)]
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a live, exclusively borrowed timespec; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Reads (and so clears) a socket's pending error; nothing for a descriptor that is not a socket.
#[allow(unsafe_code)]
fn take_socket_error(fd: i32) {
    let mut error: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `error` and `len` are live and describe a buffer of `len` bytes the kernel may fill.
    unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_ERROR,
            (&mut error as *mut libc::c_int).cast(),
            &mut len,
        )
    };
}

/// The calling thread's CPU time in nanoseconds (`CLOCK_THREAD_CPUTIME_ID`).
#[allow(unsafe_code)]
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a live, exclusively borrowed timespec; the clock exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// `ppoll` with a nanosecond timeout (plain `poll` rounds up to milliseconds, far coarser than a frame time).
/// An interrupted wait (EINTR) is not an error.
#[allow(unsafe_code)]
pub fn poll_fds(fds: &mut [libc::pollfd], timeout_ns: u64) -> io::Result<()> {
    let ts = libc::timespec {
        tv_sec: (timeout_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (timeout_ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: `fds` is a valid, exclusively borrowed array of pollfd for its length; `ts` lives across the call;
    // a null sigmask leaves the signal mask unchanged.
    let r = unsafe { libc::ppoll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, &ts, std::ptr::null()) };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    Ok(())
}
