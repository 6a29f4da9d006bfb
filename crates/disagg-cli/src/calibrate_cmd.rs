//! `disagg calibrate`: the roofline fitted to measured step times (issue 15), and `--evaluate`.

use std::path::{Path, PathBuf};

use clap::Args;
use disagg_calib::measure::{import_text, Format};
use disagg_calib::report::{DeviceFit, FitOptions, GroupScore};
use disagg_calib::{evaluate, fit_all, Imported, RowPrediction};
use disagg_model::Catalogue;
use serde_json::{json, Value};

use crate::output::{check_writable, flush_stdout, outln, Files, Pending};
use crate::{CmdResult, UsageError};

#[derive(Args, Debug)]
pub struct CalibrateArgs {
    /// Measurement files to fit (SplitwiseSim perf_model.csv, Vidur all_reduce.csv / send_recv.csv
    /// / mlp.csv, or disagg's CSV `model,device,devices,tp,phase,batch,tokens,seconds,source`).
    #[arg(long, value_name = "FILE", num_args = 1.., required_unless_present = "evaluate")]
    measurements: Vec<PathBuf>,
    /// Score these measurement files instead of fitting: on `<dev>-fit` where the global
    /// `--catalogue` (a fitted overlay) has it, else on the device itself.
    #[arg(long, value_name = "FILE", num_args = 1.., conflicts_with_all = ["measurements", "out"])]
    evaluate: Vec<PathBuf>,
    /// Force the format of every file: disagg, splitwise, vidur-network, vidur-mlp.
    #[arg(long, value_name = "F")]
    format: Option<String>,
    /// Fit this device only.
    #[arg(long, value_name = "D")]
    device: Option<String>,
    /// Leave out a group (`model/device/tpN`); repeatable.
    #[arg(long, value_name = "GROUP")]
    exclude: Vec<String>,
    /// Write the catalogue overlay here (whole or not at all).
    #[arg(long, value_name = "FILE", required_unless_present = "evaluate")]
    out: Option<PathBuf>,
    /// Draw predicted against measured step times into this directory (SVG).
    #[arg(long, value_name = "DIR")]
    plot: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

impl CalibrateArgs {
    /// The files this command line reads and writes, for [`crate::output::check_distinct`].
    pub fn files(&self) -> Files {
        let mut f = Files::default();
        for p in &self.measurements {
            f.input("--measurements", Some(p));
        }
        for p in &self.evaluate {
            f.input("--evaluate", Some(p));
        }
        f.output("--out", self.out.as_deref());
        f
    }
}

/// Reads the measurement files of `flag` with the one input reader (a regular file of text, at
/// most 1 GiB or `--max-input-bytes`).
fn read_all(
    flag: &str,
    files: &[PathBuf],
    fmt: Option<Format>,
    cat: &Catalogue,
) -> Result<Imported, UsageError> {
    use disagg_trace::input::{read_input, InputKind};
    let mut data = Imported::default();
    for f in files {
        let text =
            read_input(f, InputKind::Data).map_err(|e| UsageError(format!("{flag}: {e}")))?;
        import_text(&f.display().to_string(), &text, fmt, cat, &mut data)?;
    }
    Ok(data)
}

/// The per-row predictions a plot of predicted against measured receives (the `--plot` hook).
pub fn plot_rows(rows: &[RowPrediction]) -> Vec<(String, &'static str, u64, f64, f64)> {
    rows.iter()
        .map(|r| {
            (
                r.group.clone(),
                r.phase.as_str(),
                r.batch,
                r.measured_s,
                r.predicted_s,
            )
        })
        .collect()
}

fn pct(v: Option<f64>) -> String {
    v.map_or("-".into(), |x| format!("{x:.1}%"))
}

fn score_json(g: &GroupScore) -> Value {
    json!({"group": g.group, "rows": g.rows, "prefill_mape": g.prefill_mape, "decode_mape": g.decode_mape})
}

fn row_json(r: &RowPrediction) -> Value {
    json!({"group": r.group, "phase": r.phase.as_str(), "batch": r.batch, "tokens": r.tokens,
           "measured_s": r.measured_s, "predicted_s": r.predicted_s,
           "cv_predicted_s": r.cv_predicted_s, "uncalibrated_s": r.uncalibrated_s})
}

fn fit_json(d: &DeviceFit) -> Value {
    json!({
        "device": d.device,
        "tp": d.tp,
        "rows": d.rows,
        "iterations": d.iterations,
        "flops_eff": d.params.flops_eff,
        "bw_eff": d.params.bw_eff,
        "step_overhead_s": d.params.step_overhead_s,
        "per_seq_overhead_s": d.params.per_seq_overhead_s,
        "scale_up": d.scale_up,
        "link": d.link.as_ref().map(|l| json!({
            "topology": l.topology, "bandwidth_bps": l.bandwidth_bps, "latency_s": l.latency_s,
            "rows": l.rows, "mape": l.mape})),
        "in_sample": score_json(&d.all[0]),
        "cv": score_json(&d.all[1]),
        "uncalibrated": score_json(&d.all[2]),
        "groups": d.in_sample.iter().map(|g| {
            let cv = d.cv.iter().find(|c| c.group == g.group);
            let un = d.uncalibrated.iter().find(|c| c.group == g.group);
            json!({"group": g.group, "rows": g.rows,
                   "in_sample": {"prefill_mape": g.prefill_mape, "decode_mape": g.decode_mape},
                   "cv": cv.map(score_json),
                   "uncalibrated": un.map(score_json)})
        }).collect::<Vec<_>>(),
    })
}

/// `--plot DIR`: the predicted-against-measured figures of `rows`, then the list of files.
fn plot(dir: Option<&Path>, rows: &[RowPrediction]) -> CmdResult {
    let Some(dir) = dir else { return Ok(()) };
    crate::plots::prepare_dir(dir)?;
    let mut written = Vec::new();
    crate::calibrate_plots::draw(dir, rows, &mut written)?;
    crate::plots::report(&written);
    Ok(())
}

/// `disagg calibrate` on `cat` (the built-in catalogue with the global `--catalogue` applied).
pub fn run(a: CalibrateArgs, cat: &Catalogue) -> CmdResult {
    let fmt = a.format.as_deref().map(Format::parse).transpose()?;
    if !a.evaluate.is_empty() {
        return run_evaluate(&a, cat, fmt);
    }
    let out = a
        .out
        .as_ref()
        .ok_or_else(|| UsageError("--out is required".into()))?;
    let to_stdout = out.as_os_str() == "-";
    if to_stdout && a.json {
        return Err(UsageError(
            "--out -: standard output cannot hold both the overlay and the --json report; give \
             --out a file"
                .into(),
        ));
    }
    check_writable("--out", out)?;
    let data = read_all("--measurements", &a.measurements, fmt, cat)?;
    let files: Vec<String> = a
        .measurements
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    let opts = FitOptions {
        device: a.device.clone(),
        exclude: a.exclude.clone(),
    };
    let r = fit_all(&data, cat, &opts, &files)?;
    let tool = format!("disagg calibrate {}", env!("CARGO_PKG_VERSION"));
    let toml = r.overlay(cat, &tool)?;
    plot(a.plot.as_deref(), &r.rows)?;
    // Written last, after the charts and the report: a failure before leaves nothing.
    let mut overlay = Pending::create("--out", out)?;
    overlay.write_all(toml.as_bytes())?;
    if to_stdout {
        // The overlay is the standard output; the report is left out.
        return overlay.commit();
    }
    let reported = report(&a, &r, &files, out).and_then(|()| flush_stdout());
    crate::output::land(vec![overlay], reported)?;
    if !a.json {
        outln!("wrote {}", disagg_model::escape(&out.display().to_string()));
    }
    Ok(())
}

/// The report of a fit: JSON with `--json`, else the tables (the overlay's path comes after it
/// has landed).
fn report(
    a: &CalibrateArgs,
    r: &disagg_calib::report::FitReport,
    files: &[String],
    out: &Path,
) -> CmdResult {
    if a.json {
        let v = json!({
            "schema_version": 1,
            "measurements": files,
            "out": out.display().to_string(),
            "excluded": r.excluded,
            "excluded_groups": r.excluded_groups,
            "duplicates": r.duplicates,
            "collective_rows": r.collectives,
            "kernel_rows": r.kernels,
            "devices": r.devices.iter().map(fit_json).collect::<Vec<_>>(),
            "per_tp": r.per_tp.iter().map(fit_json).collect::<Vec<_>>(),
            "predictions": r.rows.iter().map(row_json).collect::<Vec<_>>(),
        });
        outln!(
            "{}",
            serde_json::to_string_pretty(&v).map_err(|e| UsageError(e.to_string()))?
        );
        return Ok(());
    }
    outln!(
        "disagg calibrate: {} step-time rows from {} file(s)",
        r.rows.len(),
        files.len()
    );
    if r.duplicates > 0 {
        outln!("  {} identical duplicate lines dropped", r.duplicates);
    }
    for (why, n) in &r.excluded {
        outln!("  excluded {n} rows: {why}");
    }
    for g in &r.excluded_groups {
        outln!("  excluded group {} (--exclude)", disagg_model::escape(g));
    }
    if r.kernels > 0 {
        outln!(
            "  {} Vidur kernel-sum rows read, not fitted (they exclude attention and communication)",
            r.kernels
        );
    }
    for d in &r.devices {
        outln!();
        outln!(
            "{}-fit ({} rows, {} iterations): flops_eff {:.4}  bw_eff {:.4}  step overhead {:.3} ms  per-seq overhead {:.4} ms",
            d.device,
            d.rows,
            d.iterations,
            d.params.flops_eff,
            d.params.bw_eff,
            d.params.step_overhead_s * 1e3,
            d.params.per_seq_overhead_s * 1e3
        );
        match &d.link {
            Some(l) => outln!(
                "  scale-up {}: {:.1} GB/s, {:.2} us per ring step (fitted to {} rows of {} all-reduce, MAPE {:.1}%)",
                d.scale_up,
                l.bandwidth_bps / 1e9,
                l.latency_s * 1e6,
                l.rows,
                l.topology,
                l.mape
            ),
            None => outln!("  scale-up {} (catalogue)", d.scale_up),
        }
        outln!(
            "  {:<26} {:>5}  {:>9} {:>9} {:>9}  {:>9} {:>9} {:>9}",
            "group",
            "rows",
            "pf fit",
            "pf LOGO",
            "pf uncal",
            "dec fit",
            "dec LOGO",
            "dec uncal"
        );
        let line = |g: &GroupScore, cv: Option<&GroupScore>, un: Option<&GroupScore>| {
            format!(
                "  {:<26} {:>5}  {:>9} {:>9} {:>9}  {:>9} {:>9} {:>9}",
                g.group,
                g.rows,
                pct(g.prefill_mape),
                pct(cv.and_then(|c| c.prefill_mape)),
                pct(un.and_then(|c| c.prefill_mape)),
                pct(g.decode_mape),
                pct(cv.and_then(|c| c.decode_mape)),
                pct(un.and_then(|c| c.decode_mape)),
            )
        };
        for g in &d.in_sample {
            let cv = d.cv.iter().find(|c| c.group == g.group);
            let un = d.uncalibrated.iter().find(|c| c.group == g.group);
            outln!("{}", line(g, cv, un));
        }
        outln!("{}", line(&d.all[0], Some(&d.all[1]), Some(&d.all[2])));
    }
    if !r.per_tp.is_empty() {
        outln!();
        outln!("per TP degree (reported only; the overlay holds the pooled fits):");
        for d in &r.per_tp {
            outln!(
                "  {} tp{}: flops_eff {:.4}  bw_eff {:.4}  overhead {:.3} ms  per-seq {:.4} ms  in-sample prefill {} decode {}",
                d.device,
                d.tp.unwrap_or(0),
                d.params.flops_eff,
                d.params.bw_eff,
                d.params.step_overhead_s * 1e3,
                d.params.per_seq_overhead_s * 1e3,
                pct(d.all[0].prefill_mape),
                pct(d.all[0].decode_mape)
            );
        }
    }
    outln!();
    Ok(())
}

fn run_evaluate(a: &CalibrateArgs, cat: &Catalogue, fmt: Option<Format>) -> CmdResult {
    let data = read_all("--evaluate", &a.evaluate, fmt, cat)?;
    if data.measurements.is_empty() {
        return Err(UsageError("--evaluate: no step-time rows".into()));
    }
    let e = evaluate(&data.measurements, cat)?;
    plot(a.plot.as_deref(), &e.predictions)?;
    if a.json {
        let v = json!({
            "rows": e.rows,
            "prefill_mape": e.prefill_mape,
            "decode_mape": e.decode_mape,
            "groups": e.groups.iter().map(score_json).collect::<Vec<_>>(),
        });
        outln!(
            "{}",
            serde_json::to_string_pretty(&v).map_err(|e| UsageError(e.to_string()))?
        );
        return Ok(());
    }
    outln!(
        "{} rows: prefill MAPE {}, decode MAPE {}",
        e.rows,
        pct(e.prefill_mape),
        pct(e.decode_mape)
    );
    for g in &e.groups {
        outln!(
            "  {:<26} {:>5}  prefill {:>7}  decode {:>7}",
            g.group,
            g.rows,
            pct(g.prefill_mape),
            pct(g.decode_mape)
        );
    }
    Ok(())
}
