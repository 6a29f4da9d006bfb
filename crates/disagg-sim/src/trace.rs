//! Chrome / Perfetto trace-event JSON (`docs/serving-model.md#outputs`), streamed to any `io::Write`.
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{simulate_observed, GenRequest, Scenario};
    use disagg_model::Catalogue;

    /// The `population` counters of a trace: (ts in µs, in_system, link_queue).
    fn counters(json: &[u8]) -> Vec<(f64, i64, i64)> {
        let v: serde_json::Value = serde_json::from_slice(json).unwrap();
        v["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] == "C")
            .map(|e| {
                assert_eq!(e["name"], "population");
                (
                    e["ts"].as_f64().unwrap(),
                    e["args"]["in_system"].as_i64().unwrap(),
                    e["args"]["link_queue"].as_i64().unwrap(),
                )
            })
            .collect()
    }

    #[test]
    fn counters_carry_their_own_values() {
        let mut tr = ChromeTrace::new(Vec::new());
        tr.begin(&[]);
        for (t, in_system, link_queue) in [(0.0, 0, 0), (0.05, 5, 2), (0.1, 1, 3)] {
            tr.sample(&Sample {
                t,
                in_system,
                link_queue,
                link_busy: 1,
                link_bytes_in_flight: 0.0,
                decode_mem_wait: 0,
                instances: &[],
            });
        }
        let out = tr.finish().unwrap();
        assert_eq!(
            counters(&out),
            [(0.0, 0, 0), (50_000.0, 5, 2), (100_000.0, 1, 3)]
        );
    }

    /// Four requests arrive at t = 0 on one prefill and one decode instance joined by one 25 GbE
    /// channel: a 10-token prompt (r0) and three 2,000-token ones. r0 arrives first and finds the
    /// prefill instance idle, so it is prefilled alone; r1-r3 are prefilled together (6,000
    /// tokens fit the 8,192-token batch). At that batch's end three hand-offs of 2,000 x 131,072
    /// B (llama3-8b: 32 layers x 8 KV heads x 128 x 2 x 2 B) = 262.1 MB arrive at once: one goes
    /// on the wire, two wait, each 262.1 MB / 3.125 GB/s = 83.9 ms (more than the 50 ms between
    /// samples, less than two). r0's 10-token hand-off (1.3 MB, 0.4 ms) is long over by then.
    /// Nobody finishes before the last hand-off (200 decode steps each), and the four finish in
    /// arrival order, each in its own step. So the counters read, in order: (0 in system, 0
    /// queued) at t = 0 (sampled before the arrivals), (4, 0) while prefilling, (4, 2), (4, 1),
    /// (4, 0), then 3, 2, 1 in the system as requests finish.
    #[test]
    fn counters_of_a_small_run() {
        let cfg = Scenario::from_flags([
            "--model",
            "llama3-8b",
            "--devices-per-instance",
            "1",
            "--link",
            "eth-25g",
        ])
        .unwrap()
        .build(&Catalogue::builtin())
        .unwrap();
        let wl: Vec<GenRequest> = (0..4)
            .map(|rid| GenRequest {
                rid,
                arrival_s: 0.0,
                prompt_len: if rid == 0 { 10 } else { 2000 },
                output_len: 200,
            })
            .collect();
        let mut tr = ChromeTrace::new(Vec::new());
        simulate_observed(&cfg, &wl, &mut tr).unwrap();
        let c = counters(&tr.finish().unwrap());
        let mut states: Vec<(i64, i64)> = c.iter().map(|x| (x.1, x.2)).collect();
        states.dedup();
        assert_eq!(
            states,
            [
                (0, 0),
                (4, 0),
                (4, 2),
                (4, 1),
                (4, 0),
                (3, 0),
                (2, 0),
                (1, 0)
            ],
            "{c:?}"
        );
        // Each waiting hand-off holds the queue for 83.9 ms: one or two samples 50 ms apart.
        for q in [2, 1] {
            let n = c.iter().filter(|x| x.2 == q).count();
            assert!((1..=2).contains(&n), "link_queue {q}: {n} samples");
        }
    }
}
