//! A progress bar with an ETA on standard error, for work that takes more than about a second.
//!
//! It is drawn only when standard error is a terminal and `--quiet` was not given, and never
//! touches standard output or output files. It appears after [`DELAY`], so short work prints
//! nothing, and is erased when the work ends.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Work shorter than this shows no bar.
pub const DELAY: Duration = Duration::from_secs(1);

/// How often the bar is redrawn.
const TICK: Duration = Duration::from_millis(200);

/// Bar width in characters.
const WIDTH: usize = 30;

struct Shared {
    label: String,
    total: u64,
    done: AtomicU64,
    stop: Mutex<bool>,
    wake: Condvar,
}

/// A progress bar over `total` units of work (hidden when standard error is not a terminal).
pub struct Progress {
    shared: Option<Arc<Shared>>,
    drawer: Option<JoinHandle<()>>,
}

/// Whether a bar would be drawn: standard error is a terminal and `--quiet` was not given.
pub fn wanted(quiet: bool) -> bool {
    !quiet && std::io::stderr().is_terminal()
}

impl Progress {
    /// Starts a bar labelled `label` (e.g. `runs`) over `total` units, if [`wanted`].
    pub fn start(label: &str, total: u64, quiet: bool) -> Progress {
        if !wanted(quiet) || total == 0 {
            return Progress::hidden();
        }
        let shared = Arc::new(Shared {
            label: label.to_string(),
            total,
            done: AtomicU64::new(0),
            stop: Mutex::new(false),
            wake: Condvar::new(),
        });
        let s = Arc::clone(&shared);
        let drawer = std::thread::spawn(move || draw_until_stopped(&s));
        Progress {
            shared: Some(shared),
            drawer: Some(drawer),
        }
    }

    /// A bar that draws nothing.
    pub fn hidden() -> Progress {
        Progress {
            shared: None,
            drawer: None,
        }
    }

    /// Counts `n` more units done.
    pub fn inc(&self, n: u64) {
        if let Some(s) = &self.shared {
            s.done.fetch_add(n, Ordering::Relaxed);
        }
    }
}

impl Progress {
    /// Whether the bar is drawn.
    pub fn is_shown(&self) -> bool {
        self.shared.is_some()
    }
}

/// Counts a run's finished and rejected requests into a bar.
pub struct Requests<'a>(pub &'a Progress);

impl disagg_sim::observer::Observer for Requests<'_> {
    fn finish(&mut self, _rid: usize, _t: f64) {
        self.0.inc(1);
    }
    fn rejected(&mut self, _rid: usize, _t: f64) {
        self.0.inc(1);
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(s) = &self.shared {
            *s.stop.lock().unwrap_or_else(|e| e.into_inner()) = true;
            s.wake.notify_all();
        }
        if let Some(d) = self.drawer.take() {
            let _ = d.join();
        }
    }
}

fn draw_until_stopped(s: &Shared) {
    let start = Instant::now();
    let mut drawn = false;
    let mut stop = s.stop.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        let wait = if drawn {
            TICK
        } else {
            DELAY.saturating_sub(start.elapsed())
        };
        stop = s
            .wake
            .wait_timeout(stop, wait)
            .unwrap_or_else(|e| e.into_inner())
            .0;
        if *stop {
            break;
        }
        if start.elapsed() >= DELAY {
            let line = bar_line(
                &s.label,
                s.done.load(Ordering::Relaxed),
                s.total,
                start.elapsed(),
            );
            // A failed write to the terminal is not worth stopping the work for.
            let _ = write!(std::io::stderr().lock(), "\r{line}\x1b[K");
            drawn = true;
        }
    }
    if drawn {
        let _ = write!(std::io::stderr().lock(), "\r\x1b[K");
    }
}

/// `[#####     ] 12/40 runs  3s elapsed, ETA 7s`.
pub fn bar_line(label: &str, done: u64, total: u64, elapsed: Duration) -> String {
    let done = done.min(total);
    let filled = if total == 0 {
        WIDTH
    } else {
        (WIDTH as u128 * done as u128 / total as u128) as usize
    };
    let eta = if done == 0 {
        "ETA -".to_string()
    } else {
        let left = elapsed.as_secs_f64() * (total - done) as f64 / done as f64;
        format!("ETA {}", duration_text(left))
    };
    format!(
        "[{}{}] {done}/{total} {label}  {} elapsed, {eta}",
        "#".repeat(filled),
        " ".repeat(WIDTH - filled),
        duration_text(elapsed.as_secs_f64())
    )
}

/// `42s`, `3m05s`, `2h07m`.
fn duration_text(s: f64) -> String {
    let s = s.max(0.0).round() as u64;
    if s < 60 {
        format!("{s}s")
    } else if s < 3600 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{}h{:02}m", s / 3600, s % 3600 / 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bar_fills_with_work_and_estimates_the_rest() {
        let l = bar_line("runs", 10, 40, Duration::from_secs(30));
        assert!(
            l.starts_with(&format!("[{}{}]", "#".repeat(7), " ".repeat(23))),
            "{l}"
        );
        assert!(l.contains("10/40 runs"), "{l}");
        assert!(l.contains("ETA 1m30s"), "{l}");
        let none = bar_line("runs", 0, 40, Duration::from_secs(3));
        assert!(none.contains("ETA -"), "{none}");
        let full = bar_line("runs", 50, 40, Duration::from_secs(3));
        assert!(full.contains("40/40") && full.contains("ETA 0s"), "{full}");
    }

    #[test]
    fn durations_read_naturally() {
        assert_eq!(duration_text(42.4), "42s");
        assert_eq!(duration_text(185.0), "3m05s");
        assert_eq!(duration_text(7620.0), "2h07m");
    }
}
