//! `disagg._core`: the disagg engine as a Python extension module (PyO3, abi3).
//!
//! The Python package `disagg` (`python/disagg/__init__.py`) wraps these functions with
//! docstrings and optional pandas / Arrow conversions. Everything here calls the library crates
//! in-process: options are laid over a scenario exactly as `/api/run` and scenario files are
//! ([`disagg_sim::input::overlay`]), runs release the GIL, and sweeps run in parallel in Rust.
//! `compare`, `plan`, `trace_stats` and `list` run the command line's own code in-process
//! ([`disagg_cli::capture`]) and parse its `--json` output, so they print what the CLI prints.
//!
//! Errors: bad input is `disagg.ConfigError` (a `ValueError`) with the CLI's or the API's one-line
//! message and a `field` attribute naming the option when one is at fault; a panic (a bug) is
//! caught and raised as `RuntimeError`, never unwound across the boundary.

mod reference;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use disagg_model::calc::HandoffSpec;
use disagg_model::ranks::RankSpec;
use disagg_model::Catalogue;
use disagg_sim::budget;
use disagg_sim::input::{api_spelling, handoff_json, overlay, ApiError};
use disagg_sim::{
    simulate_workload, ChromeTrace, GenRequest, LengthDist, RunResult, Scenario, SimConfig,
    Summary, TimeSeries, Workload,
};
use pyo3::create_exception;
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyByteArray, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde_json::{Map, Value};

create_exception!(
    disagg,
    ConfigError,
    PyValueError,
    "Bad input: an unknown name, a value out of range, a configuration that cannot run. The \
     message is one line naming the option; `field` is the option's name when one is at fault."
);

// ---- errors and panics ---------------------------------------------------------------------------

fn config_error(py: Python<'_>, message: &str, field: Option<&str>) -> PyErr {
    let e = ConfigError::new_err(message.to_string());
    let _ = e.value(py).setattr("field", field);
    e
}

fn api_error(py: Python<'_>, e: &ApiError) -> PyErr {
    if let Some(err) = unknown_option(py, e) {
        return err;
    }
    config_error(py, &e.message, e.field.as_deref())
}

/// Serde's "unknown field `x`, expected one of `a`, `b`, ..." as `disagg.UnknownOptionError` (a
/// `ConfigError` and a `TypeError`) with the close matches among the names it lists.
fn unknown_option(py: Python<'_>, e: &ApiError) -> Option<PyErr> {
    unknown_field(py, &e.message)
}

/// [`unknown_option`] of a message that holds serde's "unknown field `x`, expected ..." (after a
/// prefix such as a sweep's `sweep: base: `).
fn unknown_field(py: Python<'_>, message: &str) -> Option<PyErr> {
    let at = message.find("unknown field `")?;
    let rest = &message[at + "unknown field `".len()..];
    let (name, tail) = rest.split_once('`')?;
    let mut valid: Vec<&str> = tail.split('`').skip(1).step_by(2).collect();
    valid.extend(["preset", "catalogue"]);
    errors_make(py, "unknown_option", (name, valid)).ok()
}

/// The exception `disagg._errors.<make>(*args)` builds (an import failure is raised instead).
fn errors_make<'py, A>(py: Python<'py>, make: &str, args: A) -> PyResult<PyErr>
where
    A: pyo3::call::PyCallArgs<'py>,
{
    let exc = py.import("disagg._errors")?.call_method1(make, args)?;
    Ok(PyErr::from_value(exc))
}

/// `disagg.MissingFileError` (a `FileNotFoundError` and a `ConfigError`) for option `field`
/// naming `path`, which does not exist.
fn missing_file(py: Python<'_>, field: &str, path: &str) -> PyErr {
    errors_make(py, "missing_file", (field, path)).unwrap_or_else(|e| e)
}

/// A missing input file of a scenario (`trace_file`) as [`missing_file`].
fn check_files(py: Python<'_>, sc: &Scenario) -> PyResult<()> {
    match &sc.trace_file {
        Some(p) if !std::path::Path::new(p).exists() => Err(missing_file(py, "trace_file", p)),
        _ => Ok(()),
    }
}

/// A CLI or engine message (`--rate: ...`): the option it names becomes `field`.
fn cli_error(py: Python<'_>, message: &str) -> PyErr {
    let (_, field) = api_spelling(message);
    config_error(py, message, field.as_deref())
}

/// A sweep's message: like [`cli_error`], and when it names no `--flag`, the key of a
/// `vary.KEY` or `base.KEY` it names (`sweep: vary.rate: expected an array of values`).
fn sweep_error(py: Python<'_>, message: &str) -> PyErr {
    if let Some(err) = unknown_field(py, message) {
        return err;
    }
    // A sweep spec's "unknown axis 'x'; valid: a, b, ...".
    if let Some((name, valid)) = message
        .find("unknown axis '")
        .map(|at| &message[at + "unknown axis '".len()..])
        .and_then(|rest| rest.split_once("'; valid: "))
    {
        let valid: Vec<&str> = valid.split(", ").collect();
        if let Ok(err) = errors_make(py, "unknown_option", (name, valid)) {
            return err;
        }
    }
    let (_, mut field) = api_spelling(message);
    if field.is_none() {
        field = ["vary.", "base."].iter().find_map(|prefix| {
            let at = message.find(prefix)? + prefix.len();
            let key: String = message[at..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            (!key.is_empty()).then_some(key)
        });
    }
    config_error(py, message, field.as_deref())
}

/// A sweep run's message. `run I: invalid type: ...` (a value of the wrong type for its key)
/// names no option: the axis value of run I that the scenario keys reject on its own names it,
/// and the message gains the run's axis values as the CLI writes them for other errors
/// (`run 0 (rate="x"): invalid type: string "x", expected f64`).
fn sweep_run_error(py: Python<'_>, sw: &disagg_cli::sweep_cmd::Sweep, message: &str) -> PyErr {
    let run = message
        .strip_prefix("run ")
        .and_then(|rest| rest.split_once(": "))
        .and_then(|(i, rest)| Some((i.parse::<u64>().ok()?, rest)));
    if let (None, Some((i, rest))) = (api_spelling(message).1, run) {
        let point = sw.point(i);
        let culprit = point.iter().find_map(|(key, value)| {
            let mut one = Map::new();
            one.insert(key.clone(), value.clone());
            overlay(&Scenario::default(), &one).err()?.field
        });
        if let Some(field) = culprit {
            let shown: Vec<String> = point.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let message = format!("run {i} ({}): {rest}", shown.join(" "));
            return config_error(py, &message, Some(&field));
        }
    }
    sweep_error(py, message)
}

/// Runs `f`, turning a panic into a `RuntimeError` (a bug in disagg, never the caller's fault).
/// Every entry point runs its body in it; a panic inside `py.detach` unwinds to here too (the GIL
/// is taken back on the way), so code that releases the GIL needs no guard of its own.
fn guard<T>(f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(p) => {
            let what = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "unknown panic".into());
            Err(PyRuntimeError::new_err(format!(
                "internal error in disagg (please report it): {what}"
            )))
        }
    }
}

// ---- Ctrl-C ------------------------------------------------------------------------------------

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
struct SignalPoll {
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
fn with_signals<T: Send>(
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
fn interruptible<T: Send>(
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
fn interruptible_owned<T: Send + 'static>(
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

// ---- the memory budget ---------------------------------------------------------------------------

/// 0: the machine's budget ([`budget::machine_limit_bytes`]); else the budget set by
/// `_set_memory_budget` (the tests').
static MEMORY_BUDGET: AtomicU64 = AtomicU64::new(0);

/// The budget a simulation's memory is checked against, bytes (an error: a bad
/// `DISAGG_MEMORY_BUDGET_BYTES`).
fn memory_limit() -> Result<u64, String> {
    match MEMORY_BUDGET.load(Ordering::Relaxed) {
        0 => budget::machine_limit_bytes(),
        n => Ok(n),
    }
}

/// `need` bytes fit in the budget, else a `ConfigError` for `field` saying what (`what`) needs
/// them.
fn check_budget(py: Python<'_>, need: u64, field: &str, what: &str) -> PyResult<()> {
    let limit = memory_limit().map_err(|e| config_error(py, &e, Some(field)))?;
    budget::check(need, limit)
        .map_err(|e| config_error(py, &format!("{field}: {what} {e}"), Some(field)))
}

/// `_set_memory_budget(bytes)`: sets the memory budget every simulation is checked against
/// (None: what the machine has available, the default). For tests.
#[pyfunction]
#[pyo3(signature = (bytes))]
fn _set_memory_budget(bytes: Option<u64>) {
    MEMORY_BUDGET.store(bytes.unwrap_or(0), Ordering::Relaxed);
}

// ---- files ----------------------------------------------------------------------------------------

/// `read_text(path, field)`: the text of input file `path` (the value of option `field`), read as
/// the command line reads every input: a regular file only (never a FIFO or a device), at most
/// the input cap (1 GiB), UTF-8 text. A path that does not exist is a `MissingFileError`.
#[pyfunction]
fn read_text(py: Python<'_>, path: &Bound<'_, PyAny>, field: &str) -> PyResult<String> {
    guard(|| {
        let path = path_of(path, field)?;
        let read = py.detach(|| {
            disagg_trace::input::read_input(&path, disagg_trace::input::InputKind::Data)
        });
        read.map_err(|e| match e.problem {
            disagg_trace::input::InputProblem::Missing => {
                missing_file(py, field, &path.display().to_string())
            }
            _ => config_error(py, &format!("{field}: {e}"), Some(field)),
        })
    })
}

/// `write_text(path, text, field)`: writes `text` to output `path` (the value of option `field`)
/// whole or not at all, by the command line's rules ([`disagg_cli::output`]), but only to a
/// regular file ([`output_path`]).
#[pyfunction]
fn write_text(py: Python<'_>, path: &Bound<'_, PyAny>, text: &str, field: &str) -> PyResult<()> {
    guard(|| {
        let path = output_path(py, path, field)?;
        py.detach(|| disagg_cli::output::write_file_atomic(field, &path, text.as_bytes()))
            .map_err(|e| config_error(py, &e.0, Some(field)))
    })
}

/// A str or os.PathLike path.
fn path_of(path: &Bound<'_, PyAny>, field: &str) -> PyResult<std::path::PathBuf> {
    match from_py(path, field)? {
        Value::String(s) => Ok(std::path::PathBuf::from(s)),
        _ => Err(PyTypeError::new_err(format!(
            "{field}: expected a str or os.PathLike"
        ))),
    }
}

/// An output path from Python, checked by the command line's rules
/// ([`disagg_cli::output::resolve`]: not a directory, in a directory that exists), and refused
/// when it is a FIFO or a device: opening a FIFO waits for a reader (the call would hang) and a
/// device is no file to keep. `-` is a file of that name, not standard output.
fn output_path(
    py: Python<'_>,
    path: &Bound<'_, PyAny>,
    field: &str,
) -> PyResult<std::path::PathBuf> {
    let mut path = path_of(path, field)?;
    if path.as_os_str() == "-" {
        path = std::path::Path::new(".").join("-");
    }
    match disagg_cli::output::resolve(field, &path) {
        Ok(disagg_cli::output::Target::Through(_)) => Err(config_error(
            py,
            &format!(
                "{field}: '{}' is a FIFO or a device; give the path of a regular file",
                path.display()
            ),
            Some(field),
        )),
        Ok(_) => Ok(path),
        Err(e) => Err(config_error(py, &e.0, Some(field))),
    }
}

// ---- values between Python and JSON --------------------------------------------------------------

/// A JSON value as a Python object: objects are dicts (key order kept), arrays lists, whole
/// numbers ints, other numbers floats.
fn to_py<'py>(py: Python<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.into_pyobject(py)?.into_any()
            } else if let Some(u) = n.as_u64() {
                u.into_pyobject(py)?.into_any()
            } else {
                PyFloat::new(py, n.as_f64().unwrap_or(f64::NAN)).into_any()
            }
        }
        Value::String(s) => PyString::new(py, s).into_any(),
        Value::Array(a) => {
            let items = a
                .iter()
                .map(|x| to_py(py, x))
                .collect::<PyResult<Vec<_>>>()?;
            PyList::new(py, items)?.into_any()
        }
        Value::Object(m) => {
            let d = PyDict::new(py);
            for (k, x) in m {
                d.set_item(k, to_py(py, x)?)?;
            }
            d.into_any()
        }
    })
}

/// How deep an option value may nest (dicts, lists, tuples and `os.PathLike` in one another).
/// Scenario keys are a few levels deep at most; the limit keeps the conversion's recursion far
/// from the end of the stack, whichever thread runs it.
const MAX_DEPTH: usize = 64;

/// A Python value as JSON: None, bool, int, float (finite), str, os.PathLike, list/tuple, dict
/// with str keys, and NumPy scalars. `what` names the value in messages. A container that holds
/// itself, or values nested more than [`MAX_DEPTH`] deep, are a `ConfigError`.
fn from_py(o: &Bound<'_, PyAny>, what: &str) -> PyResult<Value> {
    from_py_in(o, what, &mut Vec::new())
}

/// [`from_py`] inside the containers `open` (their addresses, outermost first).
fn from_py_in(o: &Bound<'_, PyAny>, what: &str, open: &mut Vec<usize>) -> PyResult<Value> {
    let py = o.py();
    if o.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(b) = o.cast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if o.is_instance_of::<PyInt>() {
        if let Ok(i) = o.extract::<i64>() {
            return Ok(Value::from(i));
        }
        if let Ok(u) = o.extract::<u64>() {
            return Ok(Value::from(u));
        }
        return Err(config_error(
            py,
            &format!("{what}: {o} is too large"),
            Some(what),
        ));
    }
    if o.is_instance_of::<PyFloat>() {
        let x: f64 = o.extract()?;
        return serde_json::Number::from_f64(x)
            .map(Value::Number)
            .ok_or_else(|| {
                config_error(
                    py,
                    &format!("{what}: expected a finite number, got {x}"),
                    Some(what),
                )
            });
    }
    if let Ok(s) = o.cast::<PyString>() {
        return Ok(Value::String(s.to_cow()?.into_owned()));
    }
    let container = o.is_instance_of::<PyDict>()
        || o.is_instance_of::<PyList>()
        || o.is_instance_of::<PyTuple>()
        || o.hasattr("__fspath__")?;
    if container {
        let at = o.as_ptr() as usize;
        if open.contains(&at) {
            return Err(config_error(
                py,
                &format!(
                    "{what}: the value contains itself (a {} inside itself); give plain values",
                    o.get_type().name()?
                ),
                Some(what),
            ));
        }
        if open.len() >= MAX_DEPTH {
            return Err(config_error(
                py,
                &format!("{what}: the value is nested more than {MAX_DEPTH} levels deep"),
                Some(what),
            ));
        }
        open.push(at);
        let v = container_from_py(o, what, open);
        open.pop();
        return v;
    }
    // NumPy scalars and other numbers: an integer if it says it is one, else a float.
    if o.hasattr("__index__")? {
        if let Ok(i) = o.extract::<i64>() {
            return Ok(Value::from(i));
        }
    }
    if let Ok(x) = o.extract::<f64>() {
        return from_py_in(&PyFloat::new(py, x).into_any(), what, open);
    }
    Err(PyTypeError::new_err(format!(
        "{what}: cannot use a {} as an option value",
        o.get_type().name()?
    )))
}

/// A dict, list, tuple or `os.PathLike` `o` (already entered in `open`) as JSON.
fn container_from_py(o: &Bound<'_, PyAny>, what: &str, open: &mut Vec<usize>) -> PyResult<Value> {
    if let Ok(d) = o.cast::<PyDict>() {
        let mut m = Map::new();
        for (k, v) in d.iter() {
            let key: String = k.extract().map_err(|_| {
                PyTypeError::new_err(format!("{what}: keys must be strings, got {k:?}"))
            })?;
            let inner = format!("{what}.{key}");
            m.insert(key, from_py_in(&v, &inner, open)?);
        }
        return Ok(Value::Object(m));
    }
    if let Ok(l) = o.cast::<PyList>() {
        return l
            .iter()
            .map(|x| from_py_in(&x, what, open))
            .collect::<PyResult<_>>()
            .map(Value::Array);
    }
    if let Ok(t) = o.cast::<PyTuple>() {
        return t
            .iter()
            .map(|x| from_py_in(&x, what, open))
            .collect::<PyResult<_>>()
            .map(Value::Array);
    }
    let p = o.call_method0("__fspath__")?;
    from_py_in(&p, what, open)
}

fn options_map(options: Option<&Bound<'_, PyDict>>) -> PyResult<Map<String, Value>> {
    let mut m = Map::new();
    if let Some(d) = options {
        for (k, v) in d.iter() {
            let key: String = k.extract()?;
            let val = from_py(&v, &key)?;
            m.insert(key, val);
        }
    }
    Ok(m)
}

/// The catalogue: the built-in one, with a `--catalogue` TOML file laid over it if given.
fn catalogue_of(py: Python<'_>, path: Option<&str>) -> PyResult<Catalogue> {
    if let Some(p) = path.filter(|p| !std::path::Path::new(p).exists()) {
        return Err(missing_file(py, "catalogue", p));
    }
    disagg_cli::custom::load_catalogue(path.map(std::path::Path::new))
        .map_err(|e| cli_error(py, &e.0))
}

fn take_catalogue(py: Python<'_>, m: &mut Map<String, Value>) -> PyResult<Catalogue> {
    let path = match m.remove("catalogue") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s),
        Some(other) => {
            return Err(config_error(
                py,
                &format!("catalogue: expected a path to a TOML file, got {other}"),
                Some("catalogue"),
            ))
        }
    };
    catalogue_of(py, path.as_deref())
}

// ---- scenarios ---------------------------------------------------------------------------------

/// The scenario of `base` (None: the CLI's defaults; a str: a preset's name; a dict: keys, which
/// may name a `preset`) with `options` laid over it.
fn scenario_of(
    py: Python<'_>,
    base: Option<&Bound<'_, PyAny>>,
    mut options: Map<String, Value>,
) -> PyResult<Scenario> {
    let mut keys = Map::new();
    match base {
        None => {}
        Some(b) if b.is_none() => {}
        Some(b) => match from_py(b, "scenario")? {
            Value::String(name) => {
                keys.insert("preset".into(), Value::String(name));
            }
            Value::Object(m) => keys = m,
            other => {
                return Err(config_error(
                    py,
                    &format!(
                        "scenario: expected a preset name or a dict of scenario keys, got {}",
                        disagg_sim::input::kind(&other)
                    ),
                    Some("scenario"),
                ))
            }
        },
    }
    // The keyword options override the scenario's keys; a preset among them starts over.
    if options.contains_key("preset") {
        keys.remove("preset");
    }
    for (k, v) in std::mem::take(&mut options) {
        keys.insert(k, v);
    }
    let start = match keys.remove("preset") {
        None | Some(Value::Null) => Scenario::default(),
        Some(Value::String(name)) => {
            disagg_sim::presets::find(&name)
                .map_err(|e| config_error(py, &format!("preset: {e}"), Some("preset")))?
                .scenario
        }
        Some(other) => {
            return Err(config_error(
                py,
                &format!("preset: expected a preset name, got {other}"),
                Some("preset"),
            ))
        }
    };
    let sc = overlay(&start, &keys).map_err(|e| api_error(py, &e))?;
    check_files(py, &sc)?;
    Ok(sc)
}

fn build(py: Python<'_>, sc: &Scenario, cat: &Catalogue) -> PyResult<SimConfig> {
    sc.build(cat).map_err(|e| cli_error(py, &e.to_string()))
}

// ---- runs --------------------------------------------------------------------------------------

/// One finished simulation: its scenario, configuration, per-request records and summary.
#[pyclass(module = "disagg._core", frozen)]
struct RunHandle {
    scenario: Scenario,
    cfg: SimConfig,
    workload: Workload,
    run: RunResult,
    summary: Summary,
}

/// Runs `cfg` (on `workload`, else its own requests) after checking its memory against the
/// budget; Ctrl-C stops it ([`with_signals`], [`interruptible_owned`] for a large workload).
fn simulate_handle(
    py: Python<'_>,
    scenario: Scenario,
    cfg: SimConfig,
    workload: Option<Workload>,
) -> PyResult<RunHandle> {
    let field = if workload.is_some() {
        "workload"
    } else {
        "requests"
    };
    let (generate, requests) = (workload.is_none(), cfg.workload.requests);
    let what = format!("a run of {} requests would", cfg.workload.requests);
    check_budget(py, budget::config_bytes(&cfg, false), field, &what)?;
    let simulate = move |obs: &mut dyn FnMut() -> bool| -> Result<RunHandle, disagg_model::Error> {
        let workload = workload.unwrap_or_else(|| cfg.requests());
        let run = simulate_workload(&cfg, &workload, &mut StopWhen(obs))?;
        let summary = run.summary();
        Ok(RunHandle {
            scenario,
            cfg,
            workload,
            run,
            summary,
        })
    };
    let generated = if generate { requests } else { 0 };
    let done = if generated > OWNED_FROM_REQUESTS {
        // Generating the workload takes long and cannot be stopped: on a thread of its own.
        interruptible_owned(py, move |cancel| {
            simulate(&mut || cancel.load(Ordering::Relaxed))
        })?
    } else {
        with_signals(py, move |poll| {
            simulate(&mut || disagg_sim::Observer::cancelled(poll))
        })?
    };
    done.map_err(|e| cli_error(py, &e.to_string()))
}

/// Runs generating more requests than this go to an engine thread ([`interruptible_owned`]):
/// generating them takes over 25 ms, which no observer can interrupt.
const OWNED_FROM_REQUESTS: u64 = 100_000;

/// An observer that stops the run when its function says so.
struct StopWhen<'a>(&'a mut dyn FnMut() -> bool);

impl disagg_sim::Observer for StopWhen<'_> {
    fn cancelled(&mut self) -> bool {
        (self.0)()
    }
}

/// Reads one stamp of a request record.
type Stamp = fn(&disagg_sim::RequestRecord) -> Option<f64>;

/// A column of f64 (None as NaN) as a NumPy array.
fn f64_array<'py>(
    np: &Bound<'py, PyModule>,
    xs: impl Iterator<Item = f64>,
) -> PyResult<Bound<'py, PyAny>> {
    let bytes: Vec<u8> = xs.flat_map(f64::to_le_bytes).collect();
    np_array(np, &bytes, "<f8")
}

fn i64_array<'py>(
    np: &Bound<'py, PyModule>,
    xs: impl Iterator<Item = i64>,
) -> PyResult<Bound<'py, PyAny>> {
    let bytes: Vec<u8> = xs.flat_map(i64::to_le_bytes).collect();
    np_array(np, &bytes, "<i8")
}

/// A NumPy array of dtype `dtype` over a writable copy of `bytes`.
fn np_array<'py>(
    np: &Bound<'py, PyModule>,
    bytes: &[u8],
    dtype: &str,
) -> PyResult<Bound<'py, PyAny>> {
    np.call_method1("frombuffer", (PyByteArray::new(np.py(), bytes), dtype))
}

#[pymethods]
impl RunHandle {
    /// The CLI's `run --json` document: schema_version, tool, scenario, summary (and warnings).
    fn document<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let doc = disagg_sim::RunDocument::new(
            &self.scenario,
            &self.summary,
            self.summary.warnings.clone(),
        );
        to_py(py, &serde_json::to_value(doc).expect("json"))
    }

    /// The reference's `summarise` dict of the run (`disagg.reference.summarise`).
    fn reference_summary<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &disagg_sim::reference::summarise(&self.summary))
    }

    /// The report `disagg run` prints.
    fn text(&self) -> String {
        disagg_cli::report::text(&self.summary)
    }

    /// Per-request columns as NumPy arrays (`disagg run --requests-out` columns; stamps in
    /// seconds, NaN where a request has none).
    fn requests<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let np = py.import("numpy")?;
        let recs: Vec<_> = self.run.requests().collect();
        let d = PyDict::new(py);
        let nan = |x: Option<f64>| x.unwrap_or(f64::NAN);
        d.set_item("rid", i64_array(&np, recs.iter().map(|r| r.rid as i64))?)?;
        d.set_item(
            "arrival_s",
            f64_array(&np, recs.iter().map(|r| r.arrival_s))?,
        )?;
        d.set_item(
            "prompt_len",
            i64_array(&np, recs.iter().map(|r| r.prompt_len as i64))?,
        )?;
        d.set_item(
            "output_len",
            i64_array(&np, recs.iter().map(|r| r.output_len as i64))?,
        )?;
        let cols: [(&str, Stamp); 6] = [
            ("prefill_start_s", |r| r.prefill_start_s),
            ("first_token_s", |r| r.first_token_s),
            ("kv_start_s", |r| r.kv_start_s),
            ("kv_ready_s", |r| r.kv_ready_s),
            ("decode_start_s", |r| r.decode_start_s),
            ("finish_s", |r| r.finish_s),
        ];
        for (name, get) in cols {
            d.set_item(name, f64_array(&np, recs.iter().map(|r| nan(get(r))))?)?;
        }
        if self.run.scheduler().is_some() {
            let levers: Vec<_> = recs.iter().map(|r| self.run.lever_record(r.rid)).collect();
            if levers.iter().all(Option::is_some) {
                let l: Vec<_> = levers.into_iter().flatten().collect();
                d.set_item(
                    "sched_delay_s",
                    f64_array(&np, l.iter().map(|r| r.sched_delay_s))?,
                )?;
                d.set_item(
                    "preemptions",
                    i64_array(&np, l.iter().map(|r| r.preemptions as i64))?,
                )?;
                d.set_item(
                    "prefix_hit_tokens",
                    i64_array(&np, l.iter().map(|r| r.prefix_hit_tokens as i64))?,
                )?;
                d.set_item("n_itl", i64_array(&np, l.iter().map(|r| r.n_itl as i64))?)?;
                d.set_item(
                    "itl_max_s",
                    f64_array(&np, l.iter().map(|r| nan(r.itl_max_s)))?,
                )?;
                d.set_item(
                    "n_itl_zero",
                    i64_array(&np, l.iter().map(|r| r.n_itl_zero as i64))?,
                )?;
            }
        }
        Ok(d)
    }

    /// The sampler's time series (every `sample_dt`): the queues, running batches, KV occupancy
    /// and link state that `disagg run --plot` draws, as NumPy arrays. Computed by running the
    /// same simulation again with the sampler on (runs are deterministic).
    fn series<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        guard(|| self.series_dict(py))
    }

    /// Writes the Chrome / Perfetto trace of the run to `path` (whole or not at all), by running
    /// the same simulation again with the trace writer on.
    fn write_trace(&self, py: Python<'_>, path: &Bound<'_, PyAny>) -> PyResult<()> {
        guard(|| self.trace_to(py, path))
    }

    /// Requests in the run.
    fn __len__(&self) -> usize {
        self.run.len()
    }
}

impl RunHandle {
    fn series_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let (cfg, workload) = (&self.cfg, &self.workload);
        let what = format!("its time series ({} requests) would", cfg.workload.requests);
        check_budget(py, budget::config_bytes(cfg, true), "requests", &what)?;
        let ts = with_signals(py, |poll| {
            let mut both = (TimeSeries::default(), poll);
            simulate_workload(cfg, workload, &mut both).map(|_| both.0)
        })?
        .map_err(|e| cli_error(py, &e.to_string()))?;
        let np = py.import("numpy")?;
        let d = PyDict::new(py);
        let rows = &ts.rows;
        d.set_item("t_s", f64_array(&np, rows.iter().map(|r| r.t))?)?;
        d.set_item(
            "in_system",
            i64_array(&np, rows.iter().map(|r| r.in_system))?,
        )?;
        d.set_item(
            "link_queue",
            i64_array(&np, rows.iter().map(|r| r.link_queue as i64))?,
        )?;
        d.set_item(
            "link_busy",
            i64_array(&np, rows.iter().map(|r| r.link_busy as i64))?,
        )?;
        d.set_item(
            "link_bytes_in_flight",
            f64_array(&np, rows.iter().map(|r| r.link_bytes_in_flight))?,
        )?;
        d.set_item(
            "decode_mem_wait",
            i64_array(&np, rows.iter().map(|r| r.decode_mem_wait as i64))?,
        )?;
        for (k, inst) in ts.instances.iter().enumerate() {
            let name = &inst.name;
            d.set_item(
                format!("{name}.queue"),
                i64_array(&np, rows.iter().map(|r| r.instances[k].queue as i64))?,
            )?;
            d.set_item(
                format!("{name}.running"),
                i64_array(&np, rows.iter().map(|r| r.instances[k].running as i64))?,
            )?;
            d.set_item(
                format!("{name}.kv_used"),
                i64_array(&np, rows.iter().map(|r| r.instances[k].kv_used as i64))?,
            )?;
            d.set_item(
                format!("{name}.kv"),
                f64_array(
                    &np,
                    rows.iter().map(|r| {
                        let i = &r.instances[k];
                        i.kv_used as f64 / i.kv_cap as f64
                    }),
                )?,
            )?;
        }
        Ok(d)
    }

    fn trace_to(&self, py: Python<'_>, path: &Bound<'_, PyAny>) -> PyResult<()> {
        let path = output_path(py, path, "path")?;
        let (cfg, workload) = (&self.cfg, &self.workload);
        with_signals(py, |poll| -> Result<(), String> {
            let mut pending =
                disagg_cli::output::Pending::create("path", &path).map_err(|e| e.0)?;
            let mut tr = (ChromeTrace::new(pending.writer()), poll);
            simulate_workload(cfg, workload, &mut tr).map_err(|e| e.to_string())?;
            let finished = tr.0.finish().map(drop);
            finished.map_err(|e| pending.error(e).0)?;
            pending.commit().map_err(|e| e.0)
        })?
        .map_err(|msg| cli_error(py, &msg))
    }
}

/// `run(scenario, options)`: one simulation.
#[pyfunction]
#[pyo3(signature = (scenario=None, options=None))]
fn run(
    py: Python<'_>,
    scenario: Option<&Bound<'_, PyAny>>,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<RunHandle> {
    guard(|| {
        let mut m = options_map(options)?;
        let cat = take_catalogue(py, &mut m)?;
        let sc = scenario_of(py, scenario, m)?;
        let cfg = build(py, &sc, &cat)?;
        simulate_handle(py, sc, cfg, None)
    })
}

/// `simulate_rows(scenario, rows, options)`: one simulation of the given workload rows
/// `(arrival_s, prompt_len, output_len)` in rid order (the reference's replay).
#[pyfunction]
#[pyo3(signature = (scenario, rows, options=None))]
fn simulate_rows(
    py: Python<'_>,
    scenario: Option<&Bound<'_, PyAny>>,
    rows: Vec<(f64, i64, i64)>,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<RunHandle> {
    guard(|| {
        let mut m = options_map(options)?;
        let cat = take_catalogue(py, &mut m)?;
        let mut sc = scenario_of(py, scenario, m)?;
        sc.requests = rows.len().max(1) as u64;
        let cfg = build(py, &sc, &cat)?;
        let mut reqs = Vec::with_capacity(rows.len());
        for (rid, (arrival_s, p, o)) in rows.into_iter().enumerate() {
            let bad = |what: &str, v: i64| {
                config_error(
                    py,
                    &format!("workload row {rid}: {what} must be a whole number from 0 to 4294967295, got {v}"),
                    Some("workload"),
                )
            };
            if !arrival_s.is_finite() || arrival_s < 0.0 {
                return Err(config_error(
                    py,
                    &format!(
                        "workload row {rid}: arrival must be a finite time >= 0, got {arrival_s}"
                    ),
                    Some("workload"),
                ));
            }
            let prompt_len = u32::try_from(p).map_err(|_| bad("prompt_len", p))?;
            let output_len = u32::try_from(o).map_err(|_| bad("output_len", o))?;
            reqs.push(GenRequest {
                rid,
                arrival_s,
                prompt_len,
                output_len,
            });
        }
        simulate_handle(py, sc, cfg, Some(Workload::from(reqs)))
    })
}

/// The reference's `poisson_workload(rate, n, prompt, output, seed)`: rows
/// `(arrival_s, prompt_len, output_len)`, bit for bit (Python's Mersenne Twister). `n` is at most
/// the simulator's limit of requests ([`disagg_sim::scenario::MAX_REQUESTS`]) and must fit in the
/// memory budget; the lengths' `(mean, cv, lo, hi)` must be finite, the mean positive and the
/// bounds from 0 to 4294967295.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
#[pyo3(signature = (rate, n, prompt, output, seed))]
fn poisson_workload(
    py: Python<'_>,
    rate: f64,
    n: &Bound<'_, PyAny>,
    prompt: (f64, f64, i64, i64),
    output: (f64, f64, i64, i64),
    seed: u64,
) -> PyResult<Vec<(f64, u32, u32)>> {
    guard(|| {
        if !(rate.is_finite() && rate > 0.0) {
            return Err(config_error(
                py,
                &format!("rate: must be a positive number of requests per second, got {rate}"),
                Some("rate"),
            ));
        }
        let max = disagg_sim::scenario::MAX_REQUESTS;
        let n = whole_in(n, 0, max as i64).map_err(|()| {
            config_error(
                py,
                &format!(
                    "n: expected a whole number of requests from 0 to {max}, got {}",
                    shown(n)
                ),
                Some("n"),
            )
        })? as u64;
        let what = format!("{n} requests would");
        check_budget(py, budget::requests_bytes(n, false), "n", &what)?;
        let dist = |name: &str, (mean, cv, lo, hi): (f64, f64, i64, i64)| {
            let bad = |field: &str, why: String| {
                let field = format!("{name}.{field}");
                config_error(py, &format!("{field}: {why}"), Some(&field))
            };
            if !(mean.is_finite() && mean > 0.0) {
                return Err(bad(
                    "mean",
                    format!("must be a finite number > 0, got {mean}"),
                ));
            }
            if !cv.is_finite() {
                return Err(bad("cv", format!("must be a finite number, got {cv}")));
            }
            for (field, v) in [("lo", lo), ("hi", hi)] {
                if u32::try_from(v).is_err() {
                    return Err(bad(
                        field,
                        format!("must be a whole number from 0 to 4294967295, got {v}"),
                    ));
                }
            }
            Ok(LengthDist { mean, cv, lo, hi })
        };
        let (prompt, output) = (dist("prompt", prompt)?, dist("output", output)?);
        let w =
            py.detach(|| disagg_sim::poisson_workload(rate, n as usize, &prompt, &output, seed));
        Ok(w.into_iter()
            .map(|r| (r.arrival_s, r.prompt_len, r.output_len))
            .collect())
    })
}

/// `handoff(options)`: the CLI's `handoff --json` object.
#[pyfunction]
#[pyo3(signature = (options=None))]
fn handoff<'py>(
    py: Python<'py>,
    options: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    guard(|| {
        let mut m = options_map(options)?;
        let cat = take_catalogue(py, &mut m)?;
        let mut rank_keys = Map::new();
        for k in RankSpec::KEYS {
            if let Some(v) = m.remove(k) {
                rank_keys.insert(k.to_string(), v);
            }
        }
        let ranks: RankSpec =
            overlay(&RankSpec::default(), &rank_keys).map_err(|e| api_error(py, &e))?;
        let spec: HandoffSpec =
            overlay(&HandoffSpec::default(), &m).map_err(|e| api_error(py, &e))?;
        let v = handoff_json(&cat, &spec, &ranks).map_err(|e| api_error(py, &e))?;
        to_py(py, &v)
    })
}

/// `sweep(base, vary, threads, shard, catalogue)`: the rows `disagg sweep --jsonl` writes.
#[pyfunction]
#[pyo3(signature = (base, vary, threads=None, shard=None, catalogue=None))]
fn sweep<'py>(
    py: Python<'py>,
    base: Option<&Bound<'py, PyAny>>,
    vary: Option<&Bound<'py, PyDict>>,
    threads: Option<&Bound<'py, PyAny>>,
    shard: Option<&Bound<'py, PyAny>>,
    catalogue: Option<String>,
) -> PyResult<Bound<'py, PyAny>> {
    guard(|| {
        let threads = threads_of(py, threads)?;
        let shard = shard_of(py, shard)?;
        let cat = catalogue_of(py, catalogue.as_deref())?;
        let base = match base {
            None => Map::new(),
            Some(b) if b.is_none() => Map::new(),
            Some(b) => match from_py(b, "base")? {
                Value::String(name) => {
                    let mut m = Map::new();
                    m.insert("preset".into(), Value::String(name));
                    m
                }
                Value::Object(m) => m,
                _ => {
                    return Err(config_error(
                        py,
                        "base: expected a preset name or a dict of scenario keys",
                        Some("base"),
                    ))
                }
            },
        };
        if let Some(Value::String(p)) = base.get("trace_file") {
            if !std::path::Path::new(p).exists() {
                return Err(missing_file(py, "trace_file", p));
            }
        }
        let vary = options_map(vary)?;
        let to_table = |m: Map<String, Value>, what: &str| -> PyResult<toml::Table> {
            let mut t = toml::Table::new();
            for (k, v) in m {
                if v.is_null() {
                    if what == "base" {
                        continue; // unset: the default
                    }
                    return Err(config_error(
                        py,
                        &format!("vary.{k}: None is not a value an axis can take"),
                        Some(&k),
                    ));
                }
                // TOML has no null: None among an axis's values would be TOML's "unsupported
                // unit type" otherwise.
                if what == "vary" && v.as_array().is_some_and(|a| a.iter().any(Value::is_null)) {
                    return Err(config_error(
                        py,
                        &format!("vary.{k}: None is not a value an axis can take"),
                        Some(&k),
                    ));
                }
                let tv = toml::Value::try_from(&v)
                    .map_err(|e| config_error(py, &format!("{what}.{k}: {e}"), Some(&k)))?;
                t.insert(k, tv);
            }
            Ok(t)
        };
        let sw = disagg_cli::sweep_cmd::from_tables(
            to_table(base, "base")?,
            to_table(vary, "vary")?,
            "sweep",
        )
        .map_err(|e| sweep_error(py, &e.0))?;
        let limit = memory_limit().map_err(|e| config_error(py, &e, Some("requests")))?;
        let rows = interruptible(py, |cancel| {
            disagg_cli::sweep_cmd::rows(&sw, &cat, shard, threads, cancel, limit)
        })?
        .map_err(|e| {
            if e.0.starts_with("requests: ") {
                config_error(py, &e.0, Some("requests")) // over the memory budget
            } else {
                sweep_run_error(py, &sw, &e.0)
            }
        })?;
        let out = PyList::empty(py);
        for r in &rows {
            out.append(to_py(py, r)?)?;
        }
        Ok(out.into_any())
    })
}

/// A whole number (an int or an object with `__index__`, not a bool or a float) from `lo` to
/// `hi`, else `Err(())`.
fn whole_in(o: &Bound<'_, PyAny>, lo: i64, hi: i64) -> Result<i64, ()> {
    if o.is_instance_of::<PyBool>()
        || o.is_instance_of::<PyFloat>()
        || o.is_instance_of::<PyString>()
    {
        return Err(());
    }
    match o.extract::<i64>() {
        Ok(v) if (lo..=hi).contains(&v) => Ok(v),
        _ => Err(()),
    }
}

/// A value as messages show it: its `repr`.
fn shown(o: &Bound<'_, PyAny>) -> String {
    o.repr()
        .map(|r| r.to_string())
        .unwrap_or_else(|_| "?".into())
}

/// A sweep's `threads`: None (all cores) or a whole number in the CLI's range of `--threads`
/// (1 to 1024).
fn threads_of(py: Python<'_>, threads: Option<&Bound<'_, PyAny>>) -> PyResult<Option<usize>> {
    let Some(t) = threads.filter(|t| !t.is_none()) else {
        return Ok(None);
    };
    let (lo, hi) = match disagg_sim::ranges::for_command("sweep", "--threads").map(|r| r.bounds) {
        Some(disagg_sim::ranges::Bounds::Int { min, max }) => (min as i64, max as i64),
        _ => (1, 1024),
    };
    whole_in(t, lo, hi).map(|v| Some(v as usize)).map_err(|()| {
        config_error(
            py,
            &format!(
                "threads: expected a whole number of worker threads from {lo} to {hi}, got {}",
                shown(t)
            ),
            Some("threads"),
        )
    })
}

/// A sweep's `shard`: None (every run) or a pair `(i, n)` of whole numbers with `0 <= i < n`.
fn shard_of(py: Python<'_>, shard: Option<&Bound<'_, PyAny>>) -> PyResult<(u64, u64)> {
    let Some(s) = shard.filter(|s| !s.is_none()) else {
        return Ok((0, 1));
    };
    let bad = || {
        config_error(
            py,
            &format!(
                "shard: expected a pair (i, n) of whole numbers with 0 <= i < n, got {}",
                shown(s)
            ),
            Some("shard"),
        )
    };
    let items: Vec<Bound<'_, PyAny>> = if let Ok(t) = s.cast::<PyTuple>() {
        t.iter().collect()
    } else if let Ok(l) = s.cast::<PyList>() {
        l.iter().collect()
    } else {
        return Err(bad());
    };
    match items.as_slice() {
        [i, n] => {
            let n = whole_in(n, 1, i64::MAX).map_err(|()| bad())?;
            let i = whole_in(i, 0, n - 1).map_err(|()| bad())?;
            Ok((i as u64, n as u64))
        }
        _ => Err(bad()),
    }
}

/// `jsonl(rows)`: sweep rows as the JSON Lines text `disagg sweep --jsonl` writes.
#[pyfunction]
fn jsonl(rows: &Bound<'_, PyAny>) -> PyResult<String> {
    guard(|| {
        let mut out = String::new();
        for (k, r) in rows.try_iter()?.enumerate() {
            let v = from_py(&r?, &format!("rows[{k}]"))?;
            out.push_str(&v.to_string());
            out.push('\n');
        }
        Ok(out)
    })
}

/// `cli(args)`: runs `disagg ARGS...` in this process and returns what it prints.
#[pyfunction]
fn cli(py: Python<'_>, args: Vec<String>) -> PyResult<String> {
    guard(|| {
        py.detach(|| disagg_cli::capture(&args))
            .map_err(|msg| cli_error(py, &msg))
    })
}

/// `help(command)`: the command line's help text of a subcommand (`run`, `plan`, ...).
#[pyfunction]
fn help(command: &str) -> PyResult<String> {
    disagg_cli::help(command)
        .ok_or_else(|| PyValueError::new_err(format!("no command '{command}'")))
}

/// The named scenarios: name, group, about, scenario (its keys as `disagg presets --json`).
#[pyfunction]
fn presets(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    let v: Vec<Value> = disagg_sim::presets::all()
        .iter()
        .map(|p| {
            serde_json::json!({"name": p.name, "group": p.group, "about": p.about,
                               "scenario": p.scenario.echo_value()})
        })
        .collect();
    to_py(py, &Value::Array(v))
}

/// Every scenario option: key, flag, kind, optional, help, heading, default (as help shows it),
/// and the value of `Scenario::default()`.
#[pyfunction]
fn options(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    let defaults = serde_json::to_value(Scenario::default()).expect("json");
    let v: Vec<Value> = disagg_sim::options::OPTIONS
        .iter()
        .map(|o| {
            serde_json::json!({
                "key": o.key, "flag": o.flag, "optional": o.optional, "help": o.help,
                "heading": o.heading, "shown_default": o.shown_default,
                "default": defaults.get(o.key).cloned().unwrap_or(Value::Null),
            })
        })
        .collect();
    to_py(py, &Value::Array(v))
}

/// `time_runs(scenario, n, options)`: seconds per run of `n` runs of the scenario in Rust alone
/// (build once, simulate and summarise `n` times, no Python objects): the pure-Rust baseline of
/// the Python benchmark (`bench/bench_python.py`).
#[pyfunction]
#[pyo3(signature = (scenario=None, n=10, options=None))]
fn time_runs(
    py: Python<'_>,
    scenario: Option<&Bound<'_, PyAny>>,
    n: usize,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<f64> {
    guard(|| {
        let mut m = options_map(options)?;
        let cat = take_catalogue(py, &mut m)?;
        let sc = scenario_of(py, scenario, m)?;
        let cfg = build(py, &sc, &cat)?;
        let n = n.max(1);
        let what = format!("a run of {} requests would", cfg.workload.requests);
        check_budget(py, budget::config_bytes(&cfg, false), "requests", &what)?;
        with_signals(py, |poll| {
            let t = std::time::Instant::now();
            for _ in 0..n {
                // Between runs (the timed runs themselves have no observer).
                if disagg_sim::Observer::cancelled(poll) {
                    break;
                }
                let w = cfg.requests();
                let run = simulate_workload(&cfg, &w, &mut ()).map_err(|e| e.to_string())?;
                std::hint::black_box(run.summary());
            }
            Ok(t.elapsed().as_secs_f64() / n as f64)
        })?
        .map_err(|e: String| cli_error(py, &e))
    })
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("ConfigError", m.py().get_type::<ConfigError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("SCHEMA_VERSION", disagg_sim::SCHEMA_VERSION)?;
    m.add_class::<RunHandle>()?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(simulate_rows, m)?)?;
    m.add_function(wrap_pyfunction!(poisson_workload, m)?)?;
    m.add_function(wrap_pyfunction!(handoff, m)?)?;
    m.add_function(wrap_pyfunction!(sweep, m)?)?;
    m.add_function(wrap_pyfunction!(jsonl, m)?)?;
    m.add_function(wrap_pyfunction!(cli, m)?)?;
    m.add_function(wrap_pyfunction!(help, m)?)?;
    m.add_function(wrap_pyfunction!(presets, m)?)?;
    m.add_function(wrap_pyfunction!(options, m)?)?;
    m.add_function(wrap_pyfunction!(time_runs, m)?)?;
    m.add_function(wrap_pyfunction!(read_text, m)?)?;
    m.add_function(wrap_pyfunction!(write_text, m)?)?;
    m.add_function(wrap_pyfunction!(_set_memory_budget, m)?)?;
    reference::register(m)?;
    Ok(())
}
