//! Prints the read report and statistics of trace files as JSON, with the read time:
//! `cargo run --release -p disagg-trace --example trace_stats -- FILE...`.

use std::path::Path;
use std::time::Instant;

use disagg_trace::{read_path, ReadOptions};

fn main() {
    for arg in std::env::args().skip(1) {
        let start = Instant::now();
        match read_path(Path::new(&arg), &ReadOptions::default()) {
            Ok(trace) => {
                let read = start.elapsed();
                let stats = trace.stats();
                println!(
                    "{arg}: {} ({} rows) read in {:.2} ms",
                    trace.format,
                    trace.rows.len(),
                    read.as_secs_f64() * 1e3
                );
                println!("{}", serde_json::to_string_pretty(&trace.report).unwrap());
                println!("{}", serde_json::to_string_pretty(&stats).unwrap());
            }
            Err(e) => {
                eprintln!("{e}");
                std::process::exit(1);
            }
        }
    }
}
