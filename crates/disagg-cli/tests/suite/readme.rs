//! The README's generated blocks are the commands' real output.

use std::process::Command;

use crate::common;
use crate::shared_traces;

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

/// Runs every `"${D[@]}" ...` command of scripts/readme-plots.sh with this build into a temporary
/// directory and compares the charts the README shows with the committed ones, byte for byte.
#[test]
fn readme_plots_are_current() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let script = std::fs::read_to_string(format!("{root}/scripts/readme-plots.sh")).unwrap();
    let out = std::env::temp_dir().join(format!("disagg-readme-plots-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let joined = script.replace("\\\n", " ");
    let mut ran = 0;
    for line in joined
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("\"${D[@]}\""))
    {
        let cmd = line.split('>').next().unwrap();
        let args: Vec<String> = cmd
            .split_whitespace()
            .skip(1)
            .map(|a| {
                a.replace("\"$out", &out.display().to_string())
                    .replace('"', "")
            })
            .collect();
        let o = Command::new(env!("CARGO_BIN_EXE_disagg"))
            .args(&args)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        ran += 1;
    }
    assert_eq!(ran, 3);
    for f in [
        "eth25g-14rps/timeline.svg",
        "eth25g-sweep/tpot-vs-rate.svg",
        "eth25g-sweep/attainment-vs-rate.svg",
        "plan-16rps/pareto.svg",
    ] {
        let got = std::fs::read(out.join(f)).unwrap();
        let want = std::fs::read(format!("{root}/docs/plots/{f}")).unwrap();
        assert!(
            got == want,
            "docs/plots/{f} is stale: run scripts/readme-plots.sh"
        );
    }
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn readme_beyond_table_is_current() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md"))
        .expect("README.md");
    let args = [
        "compare",
        "--preset",
        "eth25g-14rps",
        "--variant",
        "send=layerwise",
        "--variant",
        "link_sharing=fair",
        "--variant",
        "decode=2",
        "--variant",
        "link_topology=per-pair,decode=2",
        "--variant",
        "reserve_kv_on=transfer",
        "--variant",
        "first_token=decode",
        "--variant",
        "kv_compress=fp8",
        "--variant",
        "send=layerwise,kv_compress=fp8",
    ];
    let out = Command::new(env!("CARGO_BIN_EXE_disagg"))
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success());
    let got = String::from_utf8(out.stdout).unwrap();
    assert_eq!(block(&readme, "beyond"), got.trim_end());
}

#[test]
fn readme_valid_ranges_table_is_current() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md"))
        .expect("README.md");
    let (begin, end) = ("<!-- ranges:begin -->", "<!-- ranges:end -->");
    let a = readme.find(begin).expect("begin marker") + begin.len();
    let b = readme.find(end).expect("end marker");
    let out = Command::new(env!("CARGO_BIN_EXE_disagg"))
        .args(["list", "ranges"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let got = String::from_utf8(out.stdout).unwrap();
    assert!(got.lines().count() > 50, "{got}");
    assert_eq!(readme[a..b].trim(), got.trim_end());
}

/// The prefix-aware hand-off's table on the Mooncake conversation trace (skipped without
/// `../shared/traces/`).
#[test]
fn readme_prefix_handoff_table_is_current() {
    let Some(trace) = shared_traces::shared_trace("mooncake_conversation_trace.jsonl") else {
        return;
    };
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md"))
        .expect("README.md");
    let args = [
        "compare",
        "--trace-file",
        &trace,
        "--max-requests",
        "1000",
        "--model",
        "llama3-8b",
        "--device",
        "h100",
        "--devices-per-instance",
        "4",
        "--prefill",
        "2",
        "--decode",
        "2",
        "--prefix-caching",
        "--prefix-from-trace",
        "--variant",
        "prefix_handoff=true",
        "--variant",
        "prefix_handoff=true,decode_router=prefix",
    ];
    let out = Command::new(env!("CARGO_BIN_EXE_disagg"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got = String::from_utf8(out.stdout).unwrap();
    assert_eq!(block(&readme, "prefix-handoff"), got.trim_end());
}

/// The calibration table of "Calibrated to measured GPUs" is the command's output (skipped when
/// `../shared/calibration/` is absent: the measurements are not in the repository).
#[test]
fn readme_calibrate_table_is_current() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let data = format!("{root}/../shared/calibration");
    if !std::path::Path::new(&format!("{data}/splitwise/perf_model.csv")).is_file() {
        eprintln!("skipped: {data} is absent (the measured GPU timings are not in the repository)");
        return;
    }
    let readme = std::fs::read_to_string(format!("{root}/README.md")).expect("README.md");
    let out = std::env::temp_dir().join(format!("disagg-readme-fit-{}.toml", std::process::id()));
    let o = Command::new(env!("CARGO_BIN_EXE_disagg"))
        .current_dir(root)
        .args([
            "calibrate",
            "--measurements",
            "../shared/calibration/splitwise/perf_model.csv",
            "../shared/calibration/vidur/data/profiling/network/a100_dgx/all_reduce.csv",
            "../shared/calibration/vidur/data/profiling/network/h100_dgx/all_reduce.csv",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&out);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let got = String::from_utf8(o.stdout).unwrap();
    let got: Vec<&str> = got.lines().filter(|l| !l.starts_with("wrote ")).collect();
    assert_eq!(block(&readme, "calibrate-table"), got.join("\n").trim_end());
}

/// The calibration charts under `docs/plots/calibration/` are what `calibrate_plots::draw` makes
/// of the README's fit (skipped when `../shared/calibration/` is absent). With
/// `DISAGG_BLESS_PLOTS=1` it rewrites them instead (scripts/readme-plots.sh does this).
#[test]
fn readme_calibration_plots_are_current() {
    use disagg_calib::measure::import_file;
    use disagg_calib::report::FitOptions;
    use disagg_calib::{fit_all, Imported};
    use disagg_model::Catalogue;

    let root = std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
    let data = root.join("../shared/calibration");
    if !data.join("splitwise/perf_model.csv").is_file() {
        eprintln!(
            "skipped: {} is absent (the measured GPU timings are not in the repository)",
            data.display()
        );
        return;
    }
    // The files of the README's `disagg calibrate` invocation (the built-in catalogue).
    let files = [
        "../shared/calibration/splitwise/perf_model.csv",
        "../shared/calibration/vidur/data/profiling/network/a100_dgx/all_reduce.csv",
        "../shared/calibration/vidur/data/profiling/network/h100_dgx/all_reduce.csv",
    ];
    let cat = Catalogue::builtin();
    let mut imported = Imported::default();
    for f in files {
        import_file(&root.join(f), None, &cat, &mut imported).unwrap();
    }
    let names: Vec<String> = files.iter().map(|f| f.to_string()).collect();
    let fit = fit_all(&imported, &cat, &FitOptions::default(), &names).unwrap();
    let want_dir = root.join("docs/plots/calibration");
    let bless = std::env::var_os("DISAGG_BLESS_PLOTS").is_some();
    let out = if bless {
        want_dir.clone()
    } else {
        std::env::temp_dir().join(format!("disagg-readme-calplots-{}", std::process::id()))
    };
    std::fs::create_dir_all(&out).unwrap();
    let mut written = Vec::new();
    disagg_cli::calibrate_plots::draw(&out, &fit.rows, &mut written).unwrap();
    assert_eq!(written.len(), 3);
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    for p in &written {
        let f = p.file_name().unwrap().to_str().unwrap();
        assert!(
            readme.contains(&format!("docs/plots/calibration/{f}")),
            "README does not show {f}"
        );
        if !bless {
            let got = std::fs::read(p).unwrap();
            let want = std::fs::read(want_dir.join(f)).unwrap_or_default();
            assert!(
                got == want,
                "docs/plots/calibration/{f} is stale: run scripts/readme-plots.sh"
            );
        }
    }
    if !bless {
        let _ = std::fs::remove_dir_all(&out);
    }
}

/// The Markdown (not fenced) between `<!-- name:begin -->` and `<!-- name:end -->`.
fn markdown_block(readme: &str, name: &str) -> String {
    let begin = format!("<!-- {name}:begin -->");
    let end = format!("<!-- {name}:end -->");
    let a = readme.find(&begin).expect("begin marker") + begin.len();
    let b = readme.find(&end).expect("end marker");
    readme[a..b].trim().to_string()
}

/// The README's text.
fn readme() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md"))
        .expect("README.md")
}

/// What `disagg ARGS` prints (it must succeed), trailing blanks trimmed.
fn output(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_disagg"))
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{args:?}");
    String::from_utf8(out.stdout)
        .unwrap()
        .trim_end()
        .to_string()
}

#[test]
fn readme_models_table_is_current() {
    let got = output(&["handoff", "--models-table"]);
    assert_eq!(markdown_block(&readme(), "models-table"), got);
}

#[test]
fn readme_deepseek_run_is_current() {
    let got = output(&common::DEEPSEEK_2P2D_8XH100);
    assert_eq!(block(&readme(), "run-deepseek"), got);
}
