//! Runs one scenario given as reference CLI flags and prints its summary as JSON.
//!
//! `cargo run --release -p disagg-sim --example show -- --model llama3-8b --devices-per-instance 1 --fast`
use disagg_sim::{simulate, Scenario};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let sc = Scenario::from_flags(&args).unwrap_or_else(|e| {
        eprintln!("error: {e}");
        std::process::exit(2)
    });
    let cfg = sc
        .build(&disagg_model::Catalogue::builtin())
        .unwrap_or_else(|e| {
            eprintln!("error: {e}");
            std::process::exit(2)
        });
    let run = simulate(&cfg, &cfg.generate_workload()).expect("run");
    let s = run.summary();
    println!("{s:#?}");
}
