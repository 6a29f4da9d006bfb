//! Ctrl-C: running the engine with the GIL released while Python's signal handlers still run
//! ([`SignalPoll`], [`with_signals`], [`interruptible`], [`interruptible_owned`]), and the kept
//! engine threads.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

/// How often a call that runs the engine checks for signals (Ctrl-C) while it waits.
const SIGNAL_POLL: Duration = Duration::from_millis(50);

/// How long [`interruptible_owned`] waits for its worker to stop after a signal before it leaves
/// it to finish on its own.
const STOP_GRACE: Duration = Duration::from_millis(20);

/// The stack of an engine thread: the main thread's (the engine ran there before).
const ENGINE_STACK_BYTES: usize = 8 << 20;

fn engine_thread() -> std::thread::Builder {
    std::thread::Builder::new()
        .name("disagg-engine".into())
        .stack_size(ENGINE_STACK_BYTES)
}

fn no_thread(e: std::io::Error) -> PyErr {
    PyRuntimeError::new_err(format!("cannot start a thread: {e}"))
}

/// Waits for `done` with the GIL released, checking for signals every [`SIGNAL_POLL`]: `None`
/// once it is done, or the exception a signal handler raised (KeyboardInterrupt). Python runs
/// signal handlers only on the main thread: on another thread this only waits.
fn wait_or_signal(py: Python<'_>, done: &Done) -> Option<PyErr> {
    while !py.detach(|| done.wait(SIGNAL_POLL)) {
        if let Err(e) = py.check_signals() {
            return Some(e);
        }
    }
    None
}

/// An observer that lets Python run its signal handlers (Ctrl-C) while the engine runs on the
/// calling thread with the GIL released: asked every 1,024 events
/// ([`disagg_sim::Observer::cancelled`]), it takes the GIL at most every [`SIGNAL_POLL`] to check
/// for signals. A handler that raises stops the run, and its exception is kept in `raised`. On a
/// thread other than the main one Python runs no handlers, and the check finds nothing.
pub(crate) struct SignalPoll {
    next: std::time::Instant,
    raised: Option<PyErr>,
}

impl SignalPoll {
    fn new() -> Self {
        SignalPoll {
            next: std::time::Instant::now() + SIGNAL_POLL,
            raised: None,
        }
    }
}

impl disagg_sim::Observer for SignalPoll {
    fn cancelled(&mut self) -> bool {
        if self.raised.is_some() {
            return true;
        }
        let now = std::time::Instant::now();
        if now < self.next {
            return false;
        }
        self.next = now + SIGNAL_POLL;
        if let Err(e) = Python::attach(|py| py.check_signals()) {
            self.raised = Some(e);
        }
        self.raised.is_some()
    }
}

/// Runs `work` on this thread with the GIL released, giving it a [`SignalPoll`] to observe the
/// engine with: the exception a signal handler raised meanwhile (KeyboardInterrupt), if any,
/// else what `work` returned. No thread is started: a small run costs what it did before.
pub(crate) fn with_signals<T: Send>(
    py: Python<'_>,
    work: impl FnOnce(&mut SignalPoll) -> T + Send,
) -> PyResult<T> {
    let (v, raised) = py.detach(|| {
        let mut poll = SignalPoll::new();
        let v = work(&mut poll);
        (v, poll.raised)
    });
    match raised {
        Some(e) => Err(e),
        None => Ok(v),
    }
}

/// Runs `work` on a worker thread with the GIL released while this thread checks for signals
/// ([`wait_or_signal`]). For work the engine does on other threads (a sweep's pool), where
/// [`SignalPoll`] would find nothing. When a signal handler raises (Ctrl-C: KeyboardInterrupt), the flag
/// `work` was given is set, the engine's event loops see it within 1,024 events
/// ([`disagg_sim::observer::Cancel`]), and the handler's exception is raised once the worker has
/// stopped. A panic on the worker is resumed here (and [`guard`] turns it into a RuntimeError).
pub(crate) fn interruptible<T: Send>(
    py: Python<'_>,
    work: impl FnOnce(&AtomicBool) -> T + Send,
) -> PyResult<T> {
    let cancel = AtomicBool::new(false);
    let done = Done::default();
    std::thread::scope(|s| {
        let worker = engine_thread()
            .spawn_scoped(s, || {
                let _finished = Finished(&done); // when `work` returns or unwinds
                work(&cancel)
            })
            .map_err(no_thread)?;
        let raised = wait_or_signal(py, &done);
        if raised.is_some() {
            cancel.store(true, Ordering::Relaxed);
        }
        let joined = py.detach(|| worker.join());
        match (joined, raised) {
            (Err(panic), _) => std::panic::resume_unwind(panic),
            (Ok(_), Some(e)) => Err(e),
            (Ok(v), None) => Ok(v),
        }
    })
}

/// [`interruptible`] for work that owns what it uses, and so may outlive the call: after a
/// signal, the worker gets [`STOP_GRACE`] to stop; one still busy where it cannot be stopped
/// (generating a large workload before the event loop starts) is left to finish on its own, and
/// its result is dropped. Ctrl-C is then honoured at once whatever the engine was doing. The work
/// runs on a kept engine thread ([`on_engine_thread`]): no thread is started per call.
pub(crate) fn interruptible_owned<T: Send + 'static>(
    py: Python<'_>,
    work: impl FnOnce(&AtomicBool) -> T + Send + 'static,
) -> PyResult<T> {
    let call = Arc::new(OwnedCall::<T> {
        cancel: AtomicBool::new(false),
        done: Done::default(),
        result: std::sync::Mutex::new(None),
    });
    let theirs = Arc::clone(&call);
    on_engine_thread(Box::new(move || {
        let _finished = Finished(&theirs.done); // after the result is in
        let r = catch_unwind(AssertUnwindSafe(|| work(&theirs.cancel)));
        *theirs.result.lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
    }))
    .map_err(no_thread)?;
    if let Some(e) = wait_or_signal(py, &call.done) {
        call.cancel.store(true, Ordering::Relaxed);
        py.detach(|| call.done.wait(STOP_GRACE));
        return Err(e);
    }
    let result = call.result.lock().unwrap_or_else(|e| e.into_inner()).take();
    match result {
        Some(Ok(v)) => Ok(v),
        Some(Err(panic)) => std::panic::resume_unwind(panic),
        None => Err(PyRuntimeError::new_err(
            "internal error in disagg (please report it): an engine thread ended without a result",
        )),
    }
}

/// One [`interruptible_owned`] call, shared by the caller and the engine thread.
struct OwnedCall<T> {
    cancel: AtomicBool,
    done: Done,
    result: std::sync::Mutex<Option<std::thread::Result<T>>>,
}

/// Work for an engine thread (it catches its own panics).
type Job = Box<dyn FnOnce() + Send + 'static>;

/// Engine threads waiting for work: how each is given its next job.
static IDLE_ENGINES: std::sync::Mutex<Vec<std::sync::mpsc::Sender<Job>>> =
    std::sync::Mutex::new(Vec::new());

/// Engine threads kept waiting for work at most (the others end when their job is done).
const MAX_IDLE_ENGINES: usize = 4;

/// Runs `job` on an engine thread that waits for work, or on a new one. Starting a thread costs
/// tens of microseconds, several percent of a small run; a kept one costs nothing.
fn on_engine_thread(mut job: Job) -> std::io::Result<()> {
    loop {
        let idle = IDLE_ENGINES.lock().unwrap_or_else(|e| e.into_inner()).pop();
        match idle {
            Some(tx) => match tx.send(job) {
                Ok(()) => return Ok(()),
                Err(std::sync::mpsc::SendError(back)) => job = back, // it has ended
            },
            None => break,
        }
    }
    let (tx, rx) = std::sync::mpsc::channel::<Job>();
    engine_thread().spawn(move || {
        let mut next = Some(job);
        while let Some(job) = next.take() {
            job();
            let mut idle = IDLE_ENGINES.lock().unwrap_or_else(|e| e.into_inner());
            if idle.len() >= MAX_IDLE_ENGINES {
                return;
            }
            idle.push(tx.clone());
            drop(idle);
            next = rx.recv().ok();
        }
    })?;
    Ok(())
}

/// Whether an [`interruptible`] worker has finished, and a wake-up for its waiter.
#[derive(Default)]
struct Done {
    finished: std::sync::Mutex<bool>,
    wake: std::sync::Condvar,
}

impl Done {
    /// Waits at most `timeout` for the worker; whether it has finished.
    fn wait(&self, timeout: Duration) -> bool {
        let g = self.finished.lock().unwrap_or_else(|e| e.into_inner());
        let (g, _) = self
            .wake
            .wait_timeout_while(g, timeout, |finished| !*finished)
            .unwrap_or_else(|e| e.into_inner());
        *g
    }
}

/// Marks its [`Done`] finished when dropped.
struct Finished<'a>(&'a Done);

impl Drop for Finished<'_> {
    fn drop(&mut self) {
        *self.0.finished.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.0.wake.notify_all();
    }
}
