//! The README's cost-levers table is the output of
//! `cargo run --release -p disagg-sim --example cost_tables` (its functions, included here), and
//! every row's cells are those of the reference's own summary of the same run
//! (levers-cost-runs.json, formatted by the same cell function).

#[path = "../../examples/cost_tables.rs"]
mod cost_tables;

#[allow(unused_imports)]
use crate::golden_common;

fn readme_block(name: &str) -> String {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md"))
        .expect("README.md");
    let (begin, end) = (
        format!("<!-- {name}:begin -->"),
        format!("<!-- {name}:end -->"),
    );
    let a = readme.find(&begin).expect("begin marker") + begin.len();
    let b = readme.find(&end).expect("end marker");
    readme[a..b].trim().to_string()
}

#[test]
fn the_cost_levers_table() {
    let table = cost_tables::table();
    assert_eq!(
        readme_block("cost-levers"),
        table.trim_end(),
        "README block"
    );
    let runs = golden_common::load_from("levers", "cost-runs.json");
    let body: Vec<&str> = table.lines().skip(2).collect();
    assert_eq!(body.len(), cost_tables::ROWS.len());
    for (k, line) in body.iter().enumerate() {
        let s = &runs["runs"][k]["summary"];
        let f = golden_common::f;
        let want = cost_tables::cells(
            f(&s["latency_s"]["ttft"]["p99"]),
            f(&s["latency_s"]["tpot"]["p99"]),
            f(&s["throughput"]["output_tok_per_s"]),
            f(&s["energy"]["J_per_output_token"]),
            s["energy"]["breakdown"].get("scale_up").map(f),
            f(&s["kv_link"]["bytes_GB"]),
        );
        assert!(
            line.ends_with(&format!("| {want} |")),
            "row {k}: {line} vs {want}"
        );
    }
}
