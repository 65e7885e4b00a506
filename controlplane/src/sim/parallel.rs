//! Runs a simulation's parts on threads, one per part: the same run as one thread gives, faster on a
//! large fabric.
//!
//! The simulator in `lossless_core::sim` is I/O-free and has no threads; it splits a fabric into parts
//! (`Sim::partition`) that can run side by side for as long as the shortest link between two parts takes
//! to carry a frame (the lookahead, the window). Here each part gets a thread for the length of a
//! [`run_until`]: every window, each thread runs its part up to the window's last instant, hands the
//! frames bound for other parts to their mailboxes, and takes its own; the threads agree on the next
//! window from the parts' earliest pending instants. Two barriers per window; a window of a 128-host Clos
//! with 40 m cables (200 ns) holds about 150 events, so waiting is a small part of a window.
//!
//! Which part runs first within a window does not matter (parts only meet through the mailboxes, and a
//! part's calendar orders a step's deliveries by link, not by arrival in the mailbox): the report, series
//! and captures are byte-identical to a one-thread run (`controlplane/tests/sim.rs`).

use lossless_dataplane::sim::{Crossing, Part, Sim, window_last};
use lossless_dataplane::time::{Instant, Nanos};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

/// Links shorter than this are not cut between parts: a window shorter than this would cost more in
/// waiting than the threads gain. SONiC's default 5 m cable (25 ns) is just above it.
pub const MIN_LOOKAHEAD_NS: u64 = 20;

/// Fabrics of fewer nodes run on one thread unless told otherwise: their windows hold too few events.
pub const AUTO_MIN_NODES: usize = 64;

/// Cuts the simulation into `threads` parts (0: one per core for a fabric of [`AUTO_MIN_NODES`] or more;
/// fewer if the fabric has fewer groups of nodes joined by links of [`MIN_LOOKAHEAD_NS`] or more).
/// Returns the number of parts, and so of threads.
pub fn partition(sim: &mut Sim, threads: usize) -> usize {
    let threads = match threads {
        0 if sim.node_count() >= AUTO_MIN_NODES => {
            std::thread::available_parallelism().map_or(1, usize::from)
        }
        0 => 1,
        n => n,
    };
    sim.partition(threads, Nanos::from_ns(MIN_LOOKAHEAD_NS));
    sim.part_count()
}

/// [`Sim::run_until`], with each part on its own thread when there are several.
pub fn run_until(sim: &mut Sim, end: Instant) {
    if sim.part_count() == 1 {
        sim.run_until(end);
        return;
    }
    let (parts, lookahead_ns) = sim.begin_run();
    let shared = Shared {
        next: parts.iter().map(|_| AtomicU64::new(0)).collect(),
        mail: parts.iter().map(|_| Mutex::new(Vec::new())).collect(),
        barrier: Barrier::new(parts.len()),
    };
    std::thread::scope(|s| {
        let (first, rest) = parts.split_first_mut().expect("two parts or more");
        for (i, part) in rest.iter_mut().enumerate() {
            let shared = &shared;
            std::thread::Builder::new()
                .name(format!("sim-part-{}", i + 1))
                .spawn_scoped(s, move || work(i + 1, part, shared, lookahead_ns, end))
                .expect("spawning a simulation thread");
        }
        work(0, first, &shared, lookahead_ns, end);
    });
    sim.end_run(end);
}

struct Shared {
    /// Per part: its earliest pending instant, ns (`u64::MAX`: none).
    next: Vec<AtomicU64>,
    /// Per part: frames from other parts, to take after the window.
    mail: Vec<Mutex<Vec<Crossing>>>,
    barrier: Barrier,
}

/// One thread's loop over the windows; a panic in any part stops them all (and is raised again by the
/// scope).
fn work(i: usize, part: &mut Part, shared: &Shared, lookahead_ns: u64, end: Instant) {
    let run = std::panic::AssertUnwindSafe(|| {
        let mut outgoing: Vec<Vec<Crossing>> = shared.mail.iter().map(|_| Vec::new()).collect();
        loop {
            let next = part.next_time().map_or(u64::MAX, Instant::as_ns);
            shared.next[i].store(next, Ordering::Release);
            shared.barrier.wait();
            let t = shared.next.iter().map(|n| n.load(Ordering::Acquire)).min().unwrap_or(u64::MAX);
            if t > end.as_ns() {
                break;
            }
            part.run_window(window_last(Instant::from_ns(t), lookahead_ns, end));
            for c in part.take_crossings() {
                outgoing[c.part()].push(c);
            }
            for (to, frames) in outgoing.iter_mut().enumerate() {
                if !frames.is_empty() {
                    shared.mail[to].lock().expect("no thread panicked holding a mailbox").append(frames);
                }
            }
            shared.barrier.wait();
            let inbox =
                std::mem::take(&mut *shared.mail[i].lock().expect("no thread panicked holding a mailbox"));
            for c in inbox {
                part.accept(c);
            }
        }
    });
    if let Err(panic) = std::panic::catch_unwind(run) {
        shared.barrier.poison();
        std::panic::resume_unwind(panic);
    }
}

/// A barrier that spins for a while (a window is tens of microseconds of work, a thread put to sleep
/// takes about as long to wake), then sleeps until the last thread arrives: a machine with fewer free
/// cores than parts still makes progress instead of spinning against the thread it waits for.
struct Barrier {
    parties: usize,
    arrived: AtomicUsize,
    generation: AtomicUsize,
    poisoned: AtomicBool,
    /// Threads asleep (or about to be) waiting for the generation to change.
    sleepers: Mutex<Vec<std::thread::Thread>>,
}

/// About 30 µs of `spin_loop` on this project's machines.
const SPINS: u32 = 2_000;

impl Barrier {
    fn new(parties: usize) -> Barrier {
        Barrier {
            parties,
            arrived: AtomicUsize::new(0),
            generation: AtomicUsize::new(0),
            poisoned: AtomicBool::new(false),
            sleepers: Mutex::new(Vec::new()),
        }
    }

    fn wait(&self) {
        let generation = self.generation.load(Ordering::Acquire);
        if self.arrived.fetch_add(1, Ordering::AcqRel) + 1 == self.parties {
            self.arrived.store(0, Ordering::Relaxed);
            self.generation.fetch_add(1, Ordering::Release);
            self.wake_all();
            return;
        }
        let released = || self.generation.load(Ordering::Acquire) != generation;
        for _ in 0..SPINS {
            if released() {
                return;
            }
            std::hint::spin_loop();
        }
        // Registered first, then checked: a release after the check finds this thread in the list.
        self.sleepers.lock().unwrap_or_else(|e| e.into_inner()).push(std::thread::current());
        while !released() {
            assert!(!self.poisoned.load(Ordering::Acquire), "another simulation thread panicked");
            std::thread::park_timeout(std::time::Duration::from_millis(10));
        }
    }

    fn wake_all(&self) {
        let sleepers = std::mem::take(&mut *self.sleepers.lock().unwrap_or_else(|e| e.into_inner()));
        for t in sleepers {
            t.unpark();
        }
    }

    fn poison(&self) {
        self.poisoned.store(true, Ordering::Release);
        self.wake_all();
    }
}
