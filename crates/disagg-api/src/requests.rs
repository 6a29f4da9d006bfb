//! The per-request column table of a run: `disagg run --requests-out` (CSV) and Python's
//! `Run.requests()` (NumPy arrays) are this one table.

use std::io::Write;

use disagg_sim::sched::LeverRecord;
use disagg_sim::RunResult;

use crate::output::csv_f64;

/// The columns of every run: the request and its stamps, s.
pub const BASE_COLUMNS: [&str; 10] = [
    "rid",
    "arrival_s",
    "prompt_len",
    "output_len",
    "prefill_start_s",
    "first_token_s",
    "kv_start_s",
    "kv_ready_s",
    "decode_start_s",
    "finish_s",
];

/// The columns a scheduled run adds (`docs/levers.md#lever-metrics`).
pub const LEVER_COLUMNS: [&str; 6] = [
    "sched_delay_s",
    "preemptions",
    "prefix_hit_tokens",
    "n_itl",
    "itl_max_s",
    "n_itl_zero",
];

/// The column a scheduled run adds after [`LEVER_COLUMNS`] with `--prefix-handoff`.
pub const HANDOFF_COLUMN: &str = "handoff_hit_tokens";

/// One cell: a count, or a time in seconds (`None`: the request has none).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Cell {
    Int(u64),
    Real(Option<f64>),
}

impl Cell {
    /// The CSV text of the cell (an empty cell for a missing time).
    pub fn csv(self) -> String {
        match self {
            Cell::Int(n) => n.to_string(),
            Cell::Real(x) => csv_f64(x),
        }
    }
}

/// The column names of `run`'s table.
pub fn columns(run: &RunResult) -> Vec<&'static str> {
    let mut c = BASE_COLUMNS.to_vec();
    if let Some(b) = run.scheduler() {
        c.extend(LEVER_COLUMNS);
        if b.prefix_handoff.is_some() {
            c.push(HANDOFF_COLUMN);
        }
    }
    c
}

/// A request's lever cells (a delay that does not exist is a missing time), then its hand-off
/// hit cell when the record has one (`--prefix-handoff`).
pub fn lever_cells(r: &LeverRecord) -> Vec<Cell> {
    let delay = Some(r.sched_delay_s).filter(|d| !d.is_nan());
    let mut c = vec![
        Cell::Real(delay),
        Cell::Int(u64::from(r.preemptions)),
        Cell::Int(r.prefix_hit_tokens),
        Cell::Int(r.n_itl),
        Cell::Real(r.itl_max_s),
        Cell::Int(r.n_itl_zero),
    ];
    if let Some(h) = r.handoff_hit_tokens {
        c.push(Cell::Int(h));
    }
    c
}

/// The rows of `run`'s table, in request order: the stamps, then the lever cells of a request
/// that has a lever record.
pub fn rows(run: &RunResult) -> impl Iterator<Item = Vec<Cell>> + '_ {
    run.requests().map(move |r| {
        let mut c = vec![
            Cell::Int(r.rid as u64),
            Cell::Real(Some(r.arrival_s)),
            Cell::Int(u64::from(r.prompt_len)),
            Cell::Int(u64::from(r.output_len)),
            Cell::Real(r.prefill_start_s),
            Cell::Real(r.first_token_s),
            Cell::Real(r.kv_start_s),
            Cell::Real(r.kv_ready_s),
            Cell::Real(r.decode_start_s),
            Cell::Real(r.finish_s),
        ];
        if let Some(l) = run.lever_record(r.rid) {
            c.extend(lever_cells(&l));
        }
        c
    })
}

/// The table as CSV (a header line, then one line per request).
pub fn write_csv(run: &RunResult, w: &mut dyn Write) -> std::io::Result<()> {
    writeln!(w, "{}", columns(run).join(","))?;
    for row in rows(run) {
        let cells: Vec<String> = row.into_iter().map(Cell::csv).collect();
        writeln!(w, "{}", cells.join(","))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lever cells as `--requests-out` writes them after the stamps.
    fn text(r: &LeverRecord) -> String {
        lever_cells(r)
            .into_iter()
            .map(|c| format!(",{}", c.csv()))
            .collect()
    }

    #[test]
    fn lever_cells_follow_the_columns() {
        assert_eq!(LEVER_COLUMNS.len(), 6);
        let r = LeverRecord {
            sched_delay_s: 0.25,
            preemptions: 2,
            prefix_hit_tokens: 512,
            n_itl: 9,
            itl_max_s: Some(0.5),
            n_itl_zero: 3,
            handoff_hit_tokens: None,
        };
        assert_eq!(text(&r), ",0.25,2,512,9,0.5,3");
        // Never started, never decoded: empty delay and largest-ITL cells.
        let r = LeverRecord {
            sched_delay_s: f64::NAN,
            itl_max_s: None,
            n_itl: 0,
            n_itl_zero: 0,
            ..r
        };
        assert_eq!(text(&r), ",,2,512,0,,0");
        // A zero delay is a number, not an empty cell.
        let r = LeverRecord {
            sched_delay_s: 0.0,
            ..r
        };
        assert_eq!(text(&r), ",0.0,2,512,0,,0");
        // --prefix-handoff: one more cell, after the six (a 0 is written, not left empty).
        let r = LeverRecord {
            handoff_hit_tokens: Some(1024),
            ..r
        };
        assert_eq!(text(&r), ",0.0,2,512,0,,0,1024");
        let r = LeverRecord {
            handoff_hit_tokens: Some(0),
            ..r
        };
        assert_eq!(text(&r), ",0.0,2,512,0,,0,0");
    }
}
