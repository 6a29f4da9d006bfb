//! Writes a Chrome/Perfetto trace of one scenario (reference CLI flags) to stdout.
//!
//! `cargo run --release -p disagg-sim --example trace -- --model llama3-8b --devices-per-instance 1 --requests 20 --fast > run.json`
use disagg_sim::{simulate_observed, ChromeTrace, Scenario};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let cfg = Scenario::from_flags(&args)
        .and_then(|s| s.build(&disagg_model::Catalogue::builtin()))
        .unwrap_or_else(|e| {
            eprintln!("error: {e}");
            std::process::exit(2)
        });
    let out = std::io::BufWriter::new(std::io::stdout().lock());
    let mut tr = ChromeTrace::new(out);
    simulate_observed(&cfg, &cfg.generate_workload(), &mut tr).expect("run");
    tr.finish().expect("write trace");
}
