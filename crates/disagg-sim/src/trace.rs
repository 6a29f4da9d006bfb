//! Chrome / Perfetto trace-event JSON (simulator.md §7.3), streamed to any `io::Write`.
//!
//! Layout: `{"traceEvents": [...], "displayTimeUnit": "ms"}`. Tracks ("processes") get ids 1, 2, ...
//! in order of first use, each announced by a `process_name` metadata event; tracks are the
//! instances, `kv-link` and `counters`. Steps and transfers are complete (`"ph": "X"`) events in
//! microseconds, emitted when they end; every `sample_dt` a `population` counter carries
//! `in_system` and `link_queue`.

use std::io::{self, Write};

use crate::observer::{InstanceInfo, Observer, Sample, StepEvent, StepKind, TransferEvent};

/// An [`Observer`] that writes a Chrome trace. Call [`ChromeTrace::finish`] after the run to close
/// the JSON and get the writer (and the first I/O error, if any) back.
pub struct ChromeTrace<W: Write> {
    out: W,
    names: Vec<String>,
    /// pid per track: instances, then kv-link, then counters (0 = not yet used).
    pids: Vec<u32>,
    next_pid: u32,
    first: bool,
    err: Option<io::Error>,
    started: bool,
}

impl<W: Write> ChromeTrace<W> {
    /// A trace writer over `out` (wrap files in a `BufWriter`).
    pub fn new(out: W) -> Self {
        ChromeTrace {
            out,
            names: Vec::new(),
            pids: Vec::new(),
            next_pid: 1,
            first: true,
            err: None,
            started: false,
        }
    }

    fn io(&mut self, r: io::Result<()>) {
        if let Err(e) = r {
            if self.err.is_none() {
                self.err = Some(e);
            }
        }
    }

    fn start(&mut self) {
        if !self.started {
            self.started = true;
            let r = self.out.write_all(b"{\"traceEvents\": [");
            self.io(r);
        }
    }

    fn sep(&mut self) -> io::Result<()> {
        if self.first {
            self.first = false;
            Ok(())
        } else {
            self.out.write_all(b", ")
        }
    }

    /// pid of track `t` (instances, then kv-link, then counters), announcing it on first use.
    fn pid(&mut self, t: usize) -> u32 {
        if self.pids[t] == 0 {
            let pid = self.next_pid;
            self.next_pid += 1;
            self.pids[t] = pid;
            let r = self.sep().and_then(|_| {
                write!(
                    self.out,
                    "{{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": {pid}, \"tid\": 0, \
                     \"args\": {{\"name\": \"{}\"}}}}",
                    self.names[t]
                )
            });
            self.io(r);
        }
        self.pids[t]
    }

    /// Closes the JSON document and returns the writer, or the first write error.
    pub fn finish(mut self) -> io::Result<W> {
        self.start();
        let r = self.out.write_all(b"], \"displayTimeUnit\": \"ms\"}");
        self.io(r);
        let r = self.out.flush();
        self.io(r);
        match self.err {
            Some(e) => Err(e),
            None => Ok(self.out),
        }
    }
}

impl<W: Write> Observer for ChromeTrace<W> {
    fn begin(&mut self, instances: &[InstanceInfo]) {
        self.names = instances.iter().map(|i| i.name.clone()).collect();
        self.names.push("kv-link".into());
        self.names.push("counters".into());
        self.pids = vec![0; self.names.len()];
        self.start();
    }

    fn step(&mut self, ev: &StepEvent) {
        let pid = self.pid(ev.instance);
        let r = self.sep().and_then(|_| {
            match ev.kind {
                StepKind::Prefill => write!(
                    self.out,
                    "{{\"ph\": \"X\", \"name\": \"prefill n={} tok={}\", \"cat\": \"prefill\"",
                    ev.batch, ev.tokens
                ),
                StepKind::Decode => write!(
                    self.out,
                    "{{\"ph\": \"X\", \"name\": \"decode b={}\", \"cat\": \"decode\"",
                    ev.batch
                ),
            }?;
            write!(
                self.out,
                ", \"pid\": {pid}, \"tid\": 0, \"ts\": {:?}, \"dur\": {:?}}}",
                ev.start * 1e6,
                ev.dur * 1e6
            )
        });
        self.io(r);
    }

    fn transfer(&mut self, ev: &TransferEvent) {
        let t = self.names.len() - 2;
        let pid = self.pid(t);
        let r = self.sep().and_then(|_| {
            write!(
                self.out,
                "{{\"ph\": \"X\", \"name\": \"kv r{} {:.0} MB\", \"cat\": \"kv\", \"pid\": {pid}, \
                 \"tid\": 0, \"ts\": {:?}, \"dur\": {:?}}}",
                ev.rid,
                ev.wire_bytes / 1e6,
                ev.start * 1e6,
                ev.dur * 1e6
            )
        });
        self.io(r);
    }

    fn wants_samples(&self) -> bool {
        true
    }

    fn sample(&mut self, s: &Sample<'_>) {
        let t = self.names.len() - 1;
        let pid = self.pid(t);
        let r = self.sep().and_then(|_| {
            write!(
                self.out,
                "{{\"ph\": \"C\", \"name\": \"population\", \"pid\": {pid}, \"ts\": {:?}, \
                 \"args\": {{\"in_system\": {}, \"link_queue\": {}}}}}",
                s.t * 1e6,
                s.in_system,
                s.link_queue
            )
        });
        self.io(r);
    }
}
