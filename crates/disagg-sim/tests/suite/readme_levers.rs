//! The README's "Scheduling and KV memory" tables are the output of
//! `cargo run --release -p disagg-sim --example levers_tables` (its functions, included here), and
//! every cell is the one `docs/exactness.md#verification` publishes (levers-results.json's `published` rows, an
//! independent rendering by the reference).

#[path = "../../examples/levers_tables.rs"]
mod levers_tables;

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

/// The body cells of a Markdown table (header and rule skipped).
fn cells(table: &str) -> Vec<Vec<String>> {
    table
        .lines()
        .skip(2)
        .map(|l| {
            l.trim()
                .trim_matches('|')
                .split('|')
                .map(|c| c.trim().to_string())
                .collect()
        })
        .collect()
}

fn published(section: &str, table: &str) -> Vec<Vec<String>> {
    let f = golden_common::load_from("levers", "results.json");
    f[section][table]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            r["published"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c.as_str().unwrap().to_string())
                .collect()
        })
        .collect()
}

fn check(name: &str, table: String, want: Vec<Vec<String>>) {
    assert_eq!(cells(&table), want, "{name}: the published cells");
    assert_eq!(readme_block(name), table.trim_end(), "{name}: README block");
}

#[test]
fn readme_batching_table_is_current_and_published() {
    check(
        "levers-batching",
        levers_tables::batching(),
        published("section_19", "mechanism"),
    );
}

#[test]
fn readme_multiturn_table_is_current_and_published() {
    check(
        "levers-multiturn",
        levers_tables::multiturn(),
        published("section_21", "multi_turn"),
    );
}

#[test]
fn readme_reuse_table_is_current_and_published() {
    check(
        "levers-reuse",
        levers_tables::reuse(),
        published("section_21", "reuse_distance"),
    );
}

#[test]
fn number_formats() {
    // `docs/exactness.md#verification`'s: whole numbers grouped by thousands; milliseconds with one decimal below a
    // second, grouped whole ones above.
    assert_eq!(levers_tables::grouped(176122.0), "176,122");
    assert_eq!(levers_tables::grouped(999.4), "999");
    assert_eq!(levers_tables::grouped(1000.0), "1,000");
    assert_eq!(levers_tables::grouped(1234567.0), "1,234,567");
    assert_eq!(levers_tables::grouped(-1234.0), "-1,234");
    assert_eq!(levers_tables::ms(0.2494), "249.4 ms");
    assert_eq!(levers_tables::ms(1.19407), "1,194 ms");
    assert_eq!(levers_tables::ms(496.49987669688136), "496,500 ms");
}
