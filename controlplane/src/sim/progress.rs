//! The progress bar of `swctl sim run` (indicatif): virtual time done out of the run's, and virtual time per
//! wall-clock time so far. It is drawn on stderr only when stderr is a terminal, and only once the run has
//! taken [`SHOW_AFTER`] of wall time: a short run is over before a bar would tell anything, and a pipe, a
//! test or a CI log gets no escape sequences at all.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::time::{Duration, Instant};

/// Wall time before the bar appears.
pub const SHOW_AFTER: Duration = Duration::from_secs(1);

/// How often the bar's text is recomputed (indicatif redraws at most 20 times a second anyway).
const REFRESH: Duration = Duration::from_millis(100);

pub struct Progress {
    /// Whether a bar may be drawn at all (stderr is a terminal).
    terminal: bool,
    started: Instant,
    bar: Option<ProgressBar>,
    last_update: Option<Instant>,
}

impl Progress {
    /// `terminal`: stderr is a terminal (else nothing is ever drawn).
    pub fn new(terminal: bool) -> Progress {
        Progress { terminal, started: Instant::now(), bar: None, last_update: None }
    }

    /// The run reached `done_ns` of `total_ns` virtual ns.
    pub fn update(&mut self, done_ns: u64, total_ns: u64) {
        if !self.terminal {
            return;
        }
        let now = Instant::now();
        let wall = now.duration_since(self.started);
        if wall < SHOW_AFTER || self.last_update.is_some_and(|l| now.duration_since(l) < REFRESH) {
            return;
        }
        self.last_update = Some(now);
        let bar = self.bar.get_or_insert_with(|| {
            // Positions in µs of virtual time: a u64 of ns would do, but µs keep the bar's arithmetic small.
            let bar = ProgressBar::with_draw_target(Some(total_ns / 1000), ProgressDrawTarget::stderr());
            let style = ProgressStyle::with_template("[{bar:30}] {msg}")
                .expect("a valid template")
                .progress_chars("#> ");
            bar.set_style(style);
            bar
        });
        bar.set_message(message(done_ns, total_ns, wall));
        bar.set_position(done_ns / 1000);
    }

    /// The run is over: the bar goes away, or on an interrupted run stays as it was, the report following on
    /// the next line. (indicatif leaves the cursor at the right edge of the bar's line; a terminal that
    /// echoes Ctrl-C as `^C` wraps onto the next line, and clearing "the bar's line" would then clear that
    /// one and leave the bar.)
    pub fn finish(&mut self, interrupted: bool) {
        let Some(bar) = self.bar.take() else { return };
        if interrupted {
            bar.set_draw_target(ProgressDrawTarget::hidden());
            eprintln!();
        } else {
            bar.finish_and_clear();
        }
    }
}

impl Drop for Progress {
    /// A run that fails leaves no half-drawn bar above its error.
    fn drop(&mut self) {
        self.finish(false);
    }
}

/// `12.300/3100.000 ms virtual, 4.1 s wall, 0.0030× real time`.
fn message(done_ns: u64, total_ns: u64, wall: Duration) -> String {
    let wall_s = wall.as_secs_f64().max(1e-9);
    format!(
        "{:.3}/{:.3} ms virtual, {:.1} s wall, {:.4}× real time",
        done_ns as f64 / 1e6,
        total_ns as f64 / 1e6,
        wall_s,
        done_ns as f64 / 1e9 / wall_s
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_gives_virtual_time_and_the_ratio_to_wall_time() {
        // 50 ms of virtual time in 2 s of wall time: 0.025 of real time.
        let m = message(50_000_000, 3_100_000_000, Duration::from_secs(2));
        assert_eq!(m, "50.000/3100.000 ms virtual, 2.0 s wall, 0.0250× real time");
    }

    #[test]
    fn nothing_is_drawn_off_a_terminal_or_before_a_second() {
        let mut off = Progress::new(false);
        off.started -= Duration::from_secs(5);
        off.update(1, 2);
        assert!(off.bar.is_none());
        let mut early = Progress::new(true);
        early.update(1, 2);
        assert!(early.bar.is_none(), "drawn before {SHOW_AFTER:?}");
    }
}
