//! The README's "Parallelism, formats and speculative decoding" table: the reference's whole runs
//! with the cost levers (`docs/exactness.md#verification`), each row one preset (`disagg run --preset NAME`).
//!
//! `cargo run --release -p disagg-sim --example cost_tables` prints it (Markdown); the README's
//! copy and every cell against the reference's own summaries are checked by
//! tests/suite/readme_cost_levers.rs.

use disagg_sim::{simulate_config, Summary};

/// The presets of the table, in order, with the lever each shows.
pub const ROWS: [(&str, &str); 6] = [
    ("tp4-colocated", "70B colocated x2, TP4"),
    (
        "tp2pp2-microbatches3",
        "70B 1P1D, TP2 x PP2, 3 micro-batches",
    ),
    (
        "mixtral-ep2-imbalance",
        "Mixtral 2xH100 colocated x2, EP2, imbalance 1.3",
    ),
    ("fp8-w8a8-colocated", "70B colocated x2, FP8 W8A8 + FP8 KV"),
    (
        "int8-a100-25gbe",
        "8B 1P1D on A100, INT8 W8A8 + INT8 KV, 25 GbE",
    ),
    ("spec-mtp-colocated", "8B colocated x2, MTP draft, gamma 3"),
];

/// One preset's run summary.
pub fn run(preset: &str) -> Summary {
    let sc = disagg_sim::presets::find(preset)
        .unwrap_or_else(|e| panic!("{preset}: {e}"))
        .scenario;
    let cfg = sc
        .build(&disagg_model::Catalogue::builtin())
        .unwrap_or_else(|e| panic!("{preset}: {e}"));
    simulate_config(&cfg)
        .unwrap_or_else(|e| panic!("{preset}: {e}"))
        .summary()
}

/// The cells of one row from its figures: TTFT p99 and TPOT p99 (ms), output tokens/s, J per
/// output token, the scale-up share of energy (`-` without a layout), KV handed off (GB).
pub fn cells(
    ttft_p99_s: f64,
    tpot_p99_s: f64,
    tok_s: f64,
    j_tok: f64,
    scale_up: Option<f64>,
    kv_gb: f64,
) -> String {
    let su = scale_up.map_or("-".to_string(), |x| format!("{:.2}%", 100.0 * x));
    format!(
        "{:.1} | {:.2} | {:.0} | {:.3} | {su} | {:.1}",
        1e3 * ttft_p99_s,
        1e3 * tpot_p99_s,
        tok_s,
        j_tok,
        kv_gb
    )
}

/// The table.
pub fn table() -> String {
    let mut t = String::from(
        "| Preset | What | TTFT p99 ms | TPOT p99 ms | Output tok/s | J/token | Scale-up energy \
         | KV handed off GB |\n|---|---|---:|---:|---:|---:|---:|---:|\n",
    );
    for (preset, what) in ROWS {
        let s = run(preset);
        t.push_str(&format!(
            "| `{preset}` | {what} | {} |\n",
            cells(
                s.ttft_s.p99,
                s.tpot_s.p99,
                s.throughput_tok_s,
                s.j_per_token,
                s.energy.scale_up_frac,
                s.link.bytes / 1e9
            )
        ));
    }
    t
}

#[allow(dead_code)]
fn main() {
    print!("{}", table());
}
