//! The README's generated blocks are the commands' real output.

use std::process::Command;

fn block(readme: &str, name: &str) -> String {
    let begin = format!("<!-- {name}:begin -->");
    let end = format!("<!-- {name}:end -->");
    let a = readme.find(&begin).expect("begin marker") + begin.len();
    let b = readme.find(&end).expect("end marker");
    let inner = readme[a..b].trim();
    let inner = inner
        .strip_prefix("```text")
        .expect("fenced")
        .trim_start_matches('\n');
    inner
        .strip_suffix("```")
        .expect("fenced")
        .trim_end()
        .to_string()
}

#[test]
fn readme_link_table_is_current() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md"))
        .expect("README.md");
    let out = Command::new(env!("CARGO_BIN_EXE_disagg"))
        .args(["handoff", "--all-links"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let got = String::from_utf8(out.stdout).unwrap();
    assert_eq!(block(&readme, "handoff-table"), got.trim_end());
}

#[test]
fn readme_main_job_output_is_current() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md"))
        .expect("README.md");
    let out = Command::new(env!("CARGO_BIN_EXE_disagg"))
        .args(["run", "--preset", "eth25g-14rps"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let got = String::from_utf8(out.stdout).unwrap();
    assert_eq!(block(&readme, "run-eth25g"), got.trim_end());
}
