//! The fit of every device with its errors (in-sample, leave-one-group-out, uncalibrated), the
//! catalogue TOML overlay and `evaluate`.

use std::collections::{BTreeMap, BTreeSet};

use disagg_model::custom::CatalogueFile;
use disagg_model::{Catalogue, CostOptions, Device, Link, GB, TB};

use crate::fit::{self, fit_link, fit_params, predict, topology_of, LinkFit, Params, N_PARAMS};
use crate::measure::{Imported, Measurement, Phase};
use crate::CalibError;

/// Errors of one group (or of all rows).
#[derive(Clone, Debug, PartialEq)]
pub struct GroupScore {
    /// `model/device/tpN` (or `all`).
    pub group: String,
    /// Rows scored.
    pub rows: usize,
    /// Prefill MAPE, percent (`None`: no prefill row).
    pub prefill_mape: Option<f64>,
    /// Decode MAPE, percent.
    pub decode_mape: Option<f64>,
}

/// One row with its predictions: what a plot of predicted against measured needs.
#[derive(Clone, Debug, PartialEq)]
pub struct RowPrediction {
    /// `model/device/tpN`.
    pub group: String,
    /// Phase.
    pub phase: Phase,
    /// Sequences.
    pub batch: u64,
    /// Prompt or context tokens per sequence.
    pub tokens: u64,
    /// Measured seconds.
    pub measured_s: f64,
    /// The device fit's prediction (in-sample).
    pub predicted_s: f64,
    /// The prediction of the fit without this row's group (`None`: no such fit).
    pub cv_predicted_s: Option<f64>,
    /// The uncalibrated roofline's prediction.
    pub uncalibrated_s: f64,
}

/// One device's (or device × TP's) fit.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceFit {
    /// The built-in device key.
    pub device: String,
    /// `Some(tp)` for a fit to one TP degree only.
    pub tp: Option<u32>,
    /// The fitted parameters.
    pub params: Params,
    /// The fitted scale-up link, if any.
    pub link: Option<LinkFit>,
    /// The scale-up link the fit used (the fitted one, or the device's).
    pub scale_up: String,
    /// Rows fitted.
    pub rows: usize,
    /// LM iterations.
    pub iterations: usize,
    /// Per group, in-sample.
    pub in_sample: Vec<GroupScore>,
    /// Per group, leave-one-group-out (empty for a per-TP fit).
    pub cv: Vec<GroupScore>,
    /// Per group, the uncalibrated roofline.
    pub uncalibrated: Vec<GroupScore>,
    /// All rows: in-sample, LOGO (pooled over held-out rows), uncalibrated.
    pub all: [GroupScore; 3],
}

/// The whole fit.
#[derive(Clone, Debug, PartialEq)]
pub struct FitReport {
    /// Per device (every TP pooled): what the overlay holds.
    pub devices: Vec<DeviceFit>,
    /// Per device × TP where the device has more than one TP degree (reported only).
    pub per_tp: Vec<DeviceFit>,
    /// Rows excluded, by reason.
    pub excluded: BTreeMap<String, usize>,
    /// Groups excluded with `--exclude`.
    pub excluded_groups: Vec<String>,
    /// Identical duplicate lines dropped.
    pub duplicates: usize,
    /// Measurement files.
    pub files: Vec<String>,
    /// Collective rows read, kernel-sum rows read (reported, not fitted).
    pub collectives: usize,
    /// Vidur kernel-sum rows read.
    pub kernels: usize,
    /// Every fitted row with its predictions.
    pub rows: Vec<RowPrediction>,
}

/// What to fit.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FitOptions {
    /// Only this device.
    pub device: Option<String>,
    /// Groups to leave out.
    pub exclude: Vec<String>,
}

/// Scores `rows` against `pred` per group (sorted by group) and over all rows.
pub fn scores(rows: &[&Measurement], pred: &[f64]) -> (Vec<GroupScore>, GroupScore) {
    let score = |name: &str, idx: &[usize]| {
        let ph = |p: Phase| {
            fit::mape(
                idx.iter()
                    .filter(|&&i| rows[i].phase == p)
                    .map(|&i| (pred[i], rows[i].seconds)),
            )
        };
        GroupScore {
            group: name.to_string(),
            rows: idx.len(),
            prefill_mape: ph(Phase::Prefill),
            decode_mape: ph(Phase::Decode),
        }
    };
    let mut by: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, r) in rows.iter().enumerate() {
        by.entry(r.group.as_str()).or_default().push(i);
    }
    let groups = by.iter().map(|(g, idx)| score(g, idx)).collect();
    let all: Vec<usize> = (0..rows.len()).collect();
    (groups, score("all", &all))
}

/// The key of a device's fit: `<dev>-fit`; of its link: `<dev>-fit-link`.
pub fn fit_key(device: &str) -> String {
    format!("{device}-fit")
}

fn link_of(fit: &LinkFit, device: &str, base: &Link) -> Link {
    Link {
        key: format!("{}-link", fit_key(device)),
        name: format!(
            "{} scale-up fitted to {} all-reduce",
            base.name, fit.topology
        ),
        bandwidth_bps: fit.bandwidth_bps,
        latency_s: fit.latency_s,
        channels: base.channels,
        pj_per_bit: base.pj_per_bit,
    }
}

/// The default step overhead of the uncalibrated roofline.
pub fn default_overhead() -> f64 {
    CostOptions::default().step_overhead_s
}

fn fit_one(
    cat: &Catalogue,
    work: &Catalogue,
    base: &Device,
    link: Option<&LinkFit>,
    rows: &[&Measurement],
    tp: Option<u32>,
    logo: bool,
) -> Result<(DeviceFit, Vec<RowPrediction>), CalibError> {
    let (params, st) = fit_params(work, base, rows)?;
    let fitted = params.device(base);
    let pred = predict(
        work,
        &fitted,
        rows,
        params.step_overhead_s,
        params.per_seq_overhead_s,
    )?;
    let builtin = cat.device(&base.key)?;
    let unc = predict(cat, builtin, rows, default_overhead(), 0.0)?;
    let groups: BTreeSet<&str> = rows.iter().map(|r| r.group.as_str()).collect();
    let mut cv_pred: Vec<Option<f64>> = vec![None; rows.len()];
    if logo && groups.len() > 1 {
        for g in &groups {
            let rest: Vec<&Measurement> = rows.iter().copied().filter(|r| r.group != *g).collect();
            if rest.len() < N_PARAMS {
                continue;
            }
            let (p, _) = fit_params(work, base, &rest)?;
            let held: Vec<usize> = (0..rows.len()).filter(|&i| rows[i].group == *g).collect();
            let hr: Vec<&Measurement> = held.iter().map(|&i| rows[i]).collect();
            let hp = predict(
                work,
                &p.device(base),
                &hr,
                p.step_overhead_s,
                p.per_seq_overhead_s,
            )?;
            for (k, &i) in held.iter().enumerate() {
                cv_pred[i] = Some(hp[k]);
            }
        }
    }
    let (in_sample, in_all) = scores(rows, &pred);
    let (uncalibrated, unc_all) = scores(rows, &unc);
    let scored: Vec<usize> = (0..rows.len()).filter(|&i| cv_pred[i].is_some()).collect();
    let cv_rows: Vec<&Measurement> = scored.iter().map(|&i| rows[i]).collect();
    let cv_vals: Vec<f64> = scored
        .iter()
        .map(|&i| cv_pred[i].unwrap_or(f64::NAN))
        .collect();
    let (cv, cv_all) = scores(&cv_rows, &cv_vals);
    let out = rows
        .iter()
        .enumerate()
        .map(|(i, r)| RowPrediction {
            group: r.group.clone(),
            phase: r.phase,
            batch: r.batch,
            tokens: r.tokens,
            measured_s: r.seconds,
            predicted_s: pred[i],
            cv_predicted_s: cv_pred[i],
            uncalibrated_s: unc[i],
        })
        .collect();
    Ok((
        DeviceFit {
            device: base.key.clone(),
            tp,
            params,
            link: link.cloned(),
            scale_up: base.scale_up.clone(),
            rows: rows.len(),
            iterations: st.iterations,
            in_sample,
            cv,
            uncalibrated,
            all: [in_all, cv_all, unc_all],
        },
        out,
    ))
}

/// Fits every device of `data` (or `opts.device`): the pooled fit with its LOGO errors, and one
/// fit per TP degree when the device has several.
pub fn fit_all(
    data: &Imported,
    cat: &Catalogue,
    opts: &FitOptions,
    files: &[String],
) -> Result<FitReport, CalibError> {
    let kept: Vec<&Measurement> = data
        .measurements
        .iter()
        .filter(|m| !opts.exclude.contains(&m.group))
        .filter(|m| opts.device.as_ref().is_none_or(|d| &m.device == d))
        .collect();
    if let Some(d) = &opts.device {
        cat.device(d)?;
    }
    for g in &opts.exclude {
        if !data.measurements.iter().any(|m| &m.group == g) {
            return Err(CalibError(format!(
                "--exclude {g}: no such group in the measurements"
            )));
        }
    }
    if kept.is_empty() {
        return Err(CalibError("no step-time rows to fit".into()));
    }
    let devices: BTreeSet<&str> = kept.iter().map(|m| m.device.as_str()).collect();
    let mut report = FitReport {
        devices: Vec::new(),
        per_tp: Vec::new(),
        excluded: data.excluded.clone(),
        excluded_groups: opts.exclude.clone(),
        duplicates: data.duplicates,
        files: files.to_vec(),
        collectives: data.collectives.len(),
        kernels: data.kernels.len(),
        rows: Vec::new(),
    };
    for dev in devices {
        let rows: Vec<&Measurement> = kept.iter().copied().filter(|m| m.device == dev).collect();
        let mut work = cat.clone();
        let mut base = cat.device(dev)?.clone();
        let needs_link = rows.iter().any(|r| r.tp > 1);
        let lf = match topology_of(dev) {
            Some(t) if needs_link => fit_link(&data.collectives, t)?,
            _ => None,
        };
        if let Some(f) = &lf {
            let l = link_of(f, dev, cat.link(&base.scale_up)?);
            base.scale_up = l.key.clone();
            work.put_link(l)?;
        }
        let (df, preds) = fit_one(cat, &work, &base, lf.as_ref(), &rows, None, true)?;
        report.devices.push(df);
        report.rows.extend(preds);
        let tps: BTreeSet<u32> = rows.iter().map(|r| r.tp).collect();
        if tps.len() > 1 {
            for tp in tps {
                let sub: Vec<&Measurement> = rows.iter().copied().filter(|r| r.tp == tp).collect();
                let (df, _) = fit_one(cat, &work, &base, lf.as_ref(), &sub, Some(tp), false)?;
                report.per_tp.push(df);
            }
        }
    }
    Ok(report)
}

fn f(v: Option<f64>) -> toml::Value {
    toml::Value::Float(v.unwrap_or(f64::NAN))
}

impl FitReport {
    /// The catalogue overlay: `[devices.<dev>-fit]` (every field of the base device, the fitted
    /// ones, the overheads and the `calibration` provenance) and `[links.<dev>-fit-link]` when a
    /// link was fitted.
    pub fn overlay(&self, cat: &Catalogue, tool: &str) -> Result<String, CalibError> {
        let mut devices = toml::Table::new();
        let mut links = toml::Table::new();
        for d in &self.devices {
            let b = cat.device(&d.device)?;
            let mut t = toml::Table::new();
            let s = |v: &str| toml::Value::String(v.to_string());
            let x = toml::Value::Float;
            t.insert("base".into(), s(&b.key));
            t.insert("name".into(), s(&format!("{} (fitted)", b.name)));
            t.insert("peak_tflops".into(), x(b.peak_flops / TB));
            t.insert("mem_bw_tb_s".into(), x(b.mem_bw / TB));
            t.insert("mem_gb".into(), x(b.mem_capacity / GB));
            t.insert("flops_eff".into(), x(d.params.flops_eff));
            t.insert("bw_eff".into(), x(d.params.bw_eff));
            t.insert("tdp_w".into(), x(b.tdp_w));
            t.insert("idle_w".into(), x(b.idle_w));
            t.insert("pj_per_flop".into(), x(b.pj_per_flop));
            t.insert("pj_per_byte".into(), x(b.pj_per_byte));
            t.insert("fft_efficiency".into(), x(b.fft_efficiency));
            t.insert("scale_up".into(), s(&d.scale_up));
            t.insert("step_overhead_s".into(), x(d.params.step_overhead_s));
            t.insert("per_seq_overhead_s".into(), x(d.params.per_seq_overhead_s));
            let mut c = toml::Table::new();
            c.insert(
                "measurements".into(),
                toml::Value::Array(self.files.iter().map(|p| s(p)).collect()),
            );
            c.insert(
                "fit".into(),
                s(&format!(
                    "Levenberg-Marquardt, soft-L1 (delta {}) IRLS on log error; {} rows; \
                     leave-one-group-out CV by model/device/tp",
                    fit::DELTA,
                    d.rows
                )),
            );
            c.insert(
                "groups".into(),
                toml::Value::Array(d.in_sample.iter().map(|g| s(&g.group)).collect()),
            );
            c.insert("in_sample_prefill_mape".into(), f(d.all[0].prefill_mape));
            c.insert("in_sample_decode_mape".into(), f(d.all[0].decode_mape));
            c.insert("cv_prefill_mape".into(), f(d.all[1].prefill_mape));
            c.insert("cv_decode_mape".into(), f(d.all[1].decode_mape));
            c.insert("tool".into(), s(tool));
            if let Some(l) = &d.link {
                let base = cat.link(&cat.device(&d.device)?.scale_up)?;
                let mut lt = toml::Table::new();
                lt.insert("base".into(), s(&base.key));
                lt.insert(
                    "name".into(),
                    s(&format!(
                        "{} scale-up fitted to {} all-reduce",
                        base.name, l.topology
                    )),
                );
                lt.insert("bandwidth_gb_s".into(), x(l.bandwidth_bps / GB));
                lt.insert("latency_us".into(), x(l.latency_s * 1e6));
                links.insert(d.scale_up.clone(), toml::Value::Table(lt));
                c.insert("link_topology".into(), s(&l.topology));
                c.insert("link_rows".into(), toml::Value::Integer(l.rows as i64));
                c.insert("link_mape".into(), x(l.mape));
            }
            t.insert("calibration".into(), toml::Value::Table(c));
            devices.insert(fit_key(&d.device), toml::Value::Table(t));
        }
        let mut top = toml::Table::new();
        top.insert("devices".into(), toml::Value::Table(devices));
        if !links.is_empty() {
            top.insert("links".into(), toml::Value::Table(links));
        }
        let body = toml::to_string(&top).map_err(|e| CalibError(e.to_string()))?;
        Ok(format!(
            "# Catalogue overlay written by {tool}: devices fitted to measured step times \
             (see [devices.*.calibration]).\n{body}"
        ))
    }
}

/// Overheads of the fitted devices of an overlay.
pub type Overheads = BTreeMap<String, (f64, f64)>;

/// Reads a catalogue overlay (`--catalogue`): models, devices and links as any catalogue file,
/// plus the fitted devices' `scale_up`, `step_overhead_s`, `per_seq_overhead_s` and
/// `calibration`. Returns the catalogue and the overheads by device key.
pub fn load_overlay(name: &str, text: &str) -> Result<(Catalogue, Overheads), CalibError> {
    let bad = |e: String| CalibError(format!("{name}: {}", e.replace('\n', " ").trim()));
    let mut top: toml::Table = toml::from_str(text).map_err(|e| bad(e.message().to_string()))?;
    let mut over = Overheads::new();
    let mut scale = Vec::new();
    if let Some(toml::Value::Table(devs)) = top.get_mut("devices") {
        for (k, v) in devs.iter_mut() {
            let toml::Value::Table(t) = v else { continue };
            t.remove("calibration");
            let num = |t: &toml::Table, f: &str| -> Result<Option<f64>, CalibError> {
                match t.get(f) {
                    None => Ok(None),
                    Some(toml::Value::Float(x)) if x.is_finite() && *x >= 0.0 => Ok(Some(*x)),
                    Some(toml::Value::Integer(i)) if *i >= 0 => Ok(Some(*i as f64)),
                    Some(_) => Err(bad(format!("devices.{k}.{f} must be a number >= 0"))),
                }
            };
            let o = num(t, "step_overhead_s")?;
            let p = num(t, "per_seq_overhead_s")?;
            if o.is_some() || p.is_some() {
                over.insert(
                    k.clone(),
                    (o.unwrap_or(default_overhead()), p.unwrap_or(0.0)),
                );
            }
            t.remove("step_overhead_s");
            t.remove("per_seq_overhead_s");
            if let Some(s) = t.remove("scale_up") {
                let toml::Value::String(s) = s else {
                    return Err(bad(format!("devices.{k}.scale_up must be a link key")));
                };
                scale.push((k.clone(), s));
            }
        }
    }
    let file: CatalogueFile = toml::Value::Table(top)
        .try_into()
        .map_err(|e: toml::de::Error| bad(e.message().to_string()))?;
    let mut cat = Catalogue::builtin();
    file.apply(&mut cat).map_err(|e| bad(e.to_string()))?;
    for (k, s) in scale {
        cat.link(&s)
            .map_err(|e| bad(format!("devices.{k}.scale_up: {e}")))?;
        let mut d = cat.device(&k)?.clone();
        d.scale_up = s;
        cat.put_device(d)?;
    }
    Ok((cat, over))
}

/// `evaluate`'s result.
#[derive(Clone, Debug, PartialEq)]
pub struct Evaluation {
    /// Rows scored.
    pub rows: usize,
    /// Prefill MAPE over all rows, percent.
    pub prefill_mape: Option<f64>,
    /// Decode MAPE over all rows, percent.
    pub decode_mape: Option<f64>,
    /// Per group.
    pub groups: Vec<GroupScore>,
    /// Every row with its prediction (`cv_predicted_s` and `uncalibrated_s` as the built-in).
    pub predictions: Vec<RowPrediction>,
}

/// Scores `measurements` on `cat`: `<dev>-fit` with its overheads when the catalogue has it, else
/// the built-in device with the default step overhead.
pub fn evaluate(
    measurements: &[Measurement],
    cat: &Catalogue,
    over: &Overheads,
) -> Result<Evaluation, CalibError> {
    let rows: Vec<&Measurement> = measurements.iter().collect();
    let mut pred = vec![0.0; rows.len()];
    let mut unc = vec![0.0; rows.len()];
    let devs: BTreeSet<&str> = rows.iter().map(|r| r.device.as_str()).collect();
    for dev in devs {
        let idx: Vec<usize> = (0..rows.len()).filter(|&i| rows[i].device == dev).collect();
        let sub: Vec<&Measurement> = idx.iter().map(|&i| rows[i]).collect();
        let key = fit_key(dev);
        let (d, o, s) = match cat.device(&key) {
            Ok(d) => {
                let (o, s) = over.get(&key).copied().unwrap_or((default_overhead(), 0.0));
                (d.clone(), o, s)
            }
            Err(_) => (cat.device(dev)?.clone(), default_overhead(), 0.0),
        };
        let p = predict(cat, &d, &sub, o, s)?;
        let u = predict(cat, cat.device(dev)?, &sub, default_overhead(), 0.0)?;
        for (k, &i) in idx.iter().enumerate() {
            pred[i] = p[k];
            unc[i] = u[k];
        }
    }
    let (groups, all) = scores(&rows, &pred);
    let predictions = rows
        .iter()
        .enumerate()
        .map(|(i, r)| RowPrediction {
            group: r.group.clone(),
            phase: r.phase,
            batch: r.batch,
            tokens: r.tokens,
            measured_s: r.seconds,
            predicted_s: pred[i],
            cv_predicted_s: None,
            uncalibrated_s: unc[i],
        })
        .collect();
    Ok(Evaluation {
        rows: rows.len(),
        prefill_mape: all.prefill_mape,
        decode_mape: all.decode_mape,
        groups,
        predictions,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::group_key;
    use crate::test_models::catalogue;

    fn row(model: &str, dev: &str, tp: u32, phase: Phase, b: u64, t: u64) -> Measurement {
        Measurement {
            model: model.into(),
            device: dev.into(),
            devices: tp,
            tp,
            phase,
            batch: b,
            tokens: t,
            seconds: 1.0,
            source: "t".into(),
            group: group_key(model, dev, tp),
        }
    }

    fn synthetic(cat: &Catalogue, truth: &Params, dev: &str) -> Vec<Measurement> {
        let mut rows = Vec::new();
        for (model, tp) in [("llama2-7b", 1), ("llama2-70b", 4), ("llama2-70b", 8)] {
            for (phase, b, t) in [
                (Phase::Prefill, 1, 256),
                (Phase::Prefill, 1, 2048),
                (Phase::Prefill, 4, 512),
                (Phase::Decode, 1, 600),
                (Phase::Decode, 8, 700),
                (Phase::Decode, 32, 900),
            ] {
                rows.push(row(model, dev, tp, phase, b, t));
            }
        }
        let d = truth.device(cat.device(dev).unwrap());
        let refs: Vec<&Measurement> = rows.iter().collect();
        let p = predict(
            cat,
            &d,
            &refs,
            truth.step_overhead_s,
            truth.per_seq_overhead_s,
        )
        .unwrap();
        rows.into_iter()
            .zip(p)
            .map(|(r, s)| Measurement { seconds: s, ..r })
            .collect()
    }

    #[test]
    fn scores_group_and_pool() {
        let mut a = row("llama2-7b", "a100", 1, Phase::Prefill, 1, 10);
        let mut b = row("llama2-7b", "a100", 1, Phase::Decode, 1, 10);
        let mut c = row("llama2-70b", "a100", 2, Phase::Prefill, 1, 10);
        a.seconds = 1.0;
        b.seconds = 2.0;
        c.seconds = 4.0;
        let (g, all) = scores(&[&a, &b, &c], &[1.1, 1.0, 5.0]);
        assert_eq!(g.len(), 2);
        assert_eq!(g[0].group, "llama2-70b/a100/tp2");
        // |5-4|/4 = 25 %
        assert_eq!(g[0].prefill_mape, Some(25.0));
        assert_eq!(g[0].decode_mape, None);
        assert_eq!(g[1].rows, 2);
        // |1.0-2|/2 = 50 %
        assert_eq!(g[1].decode_mape, Some(50.0));
        // prefill over all: (0.1 + 0.25) / 2
        assert_eq!(
            all.prefill_mape,
            Some(100.0 * ((1.1f64 - 1.0) / 1.0 + 0.25) / 2.0)
        );
        assert_eq!(all.rows, 3);
        assert_eq!(fit_key("h100"), "h100-fit");
        assert_eq!(default_overhead(), 0.5e-3);
    }

    #[test]
    fn fit_all_recovers_exact_data_and_cv_is_exact_too() {
        let cat = catalogue();
        let truth = Params {
            flops_eff: 0.58,
            bw_eff: 0.66,
            step_overhead_s: 6e-3,
            per_seq_overhead_s: 5e-5,
        };
        let data = Imported {
            measurements: synthetic(&cat, &truth, "h100"),
            ..Imported::default()
        };
        let r = fit_all(&data, &cat, &FitOptions::default(), &["syn.csv".into()]).unwrap();
        assert_eq!(r.devices.len(), 1);
        let d = &r.devices[0];
        assert!((d.params.flops_eff / 0.58 - 1.0).abs() < 1e-6);
        assert!((d.params.per_seq_overhead_s / 5e-5 - 1.0).abs() < 1e-6);
        assert_eq!(d.cv.len(), 3);
        for g in d.cv.iter().chain(&d.in_sample) {
            assert!(g.prefill_mape.unwrap() < 1e-4, "{g:?}");
            assert!(g.decode_mape.unwrap() < 1e-4, "{g:?}");
        }
        // The built-in h100 (0.55, 0.80, 0.5 ms) is off on this data.
        assert!(d.all[2].prefill_mape.unwrap() > 1.0);
        // Three TP degrees: three per-TP fits, no CV on them.
        assert_eq!(r.per_tp.len(), 3);
        assert!(r.per_tp.iter().all(|f| f.cv.is_empty() && f.tp.is_some()));
        assert_eq!(r.rows.len(), 18);
        assert!(r.rows.iter().all(|x| x.cv_predicted_s.is_some()));
        // No collectives: the device's own scale-up link.
        assert_eq!(d.scale_up, "nvlink4");
        assert!(d.link.is_none());

        // The overlay reads back and evaluates to the same predictions.
        let text = r.overlay(&cat, "disagg calibrate test").unwrap();
        assert!(text.contains("[devices.h100-fit]"));
        assert!(!text.contains("[links."));
        let models = "[models.llama2-7b]\nlayers = 32\nd_model = 4096\nheads = 32\nkv_heads = 32\nd_ff = 11008\nvocab = 32000\n\
                      [models.llama2-70b]\nlayers = 80\nd_model = 8192\nheads = 64\nkv_heads = 8\nd_ff = 28672\nvocab = 32000\n";
        let (c2, over) = load_overlay("fit.toml", &format!("{models}{text}")).unwrap();
        let fd = c2.device("h100-fit").unwrap();
        assert_eq!(fd.flops_eff, d.params.flops_eff);
        assert_eq!(
            over["h100-fit"],
            (d.params.step_overhead_s, d.params.per_seq_overhead_s)
        );
        let ev = evaluate(&data.measurements, &c2, &over).unwrap();
        assert_eq!(ev.rows, 18);
        assert!(ev.prefill_mape.unwrap() < 1e-4 && ev.decode_mape.unwrap() < 1e-4);
        // Without the fit: the built-in's error.
        let ev0 = evaluate(&data.measurements, &cat, &Overheads::new()).unwrap();
        assert_eq!(ev0.prefill_mape, d.all[2].prefill_mape);
        assert_eq!(ev0.decode_mape, d.all[2].decode_mape);
    }

    #[test]
    fn link_fit_goes_into_the_device_and_overlay() {
        let cat = catalogue();
        let mut data = Imported::default();
        let (bw, lat) = (1.5e11, 9e-6);
        for n in [2u32, 4, 8] {
            for s in [4096.0, 262144.0, 16777216.0] {
                data.collectives.push(crate::measure::Collective {
                    collective: "all_reduce".into(),
                    topology: "a100_dgx".into(),
                    workers: n,
                    devices_per_node: n,
                    size: s,
                    seconds: fit::ring_all_reduce(n, s, bw, lat),
                    source: "t".into(),
                });
            }
        }
        let truth = Params {
            flops_eff: 0.5,
            bw_eff: 0.7,
            step_overhead_s: 8e-3,
            per_seq_overhead_s: 1e-4,
        };
        let mut c2 = cat.clone();
        let lf = fit_link(&data.collectives, "a100_dgx").unwrap().unwrap();
        let l = link_of(&lf, "a100", cat.link("nvlink3").unwrap());
        assert_eq!(l.key, "a100-fit-link");
        c2.put_link(l.clone()).unwrap();
        let mut dev = cat.device("a100").unwrap().clone();
        dev.scale_up = l.key.clone();
        c2.put_device(dev).unwrap();
        data.measurements = synthetic(&c2, &truth, "a100");
        let r = fit_all(&data, &cat, &FitOptions::default(), &[]).unwrap();
        let d = &r.devices[0];
        assert_eq!(d.scale_up, "a100-fit-link");
        assert!((d.params.step_overhead_s / 8e-3 - 1.0).abs() < 1e-6);
        let text = r.overlay(&cat, "t").unwrap();
        assert!(text.contains("[links.a100-fit-link]"), "{text}");
        assert!(text.contains("scale_up = \"a100-fit-link\""));
        // Read back (with the models), the overlay predicts its own rows as the fit did.
        let models = "[models.llama2-7b]\nlayers = 32\nd_model = 4096\nheads = 32\nkv_heads = 32\nd_ff = 11008\nvocab = 32000\n\
                      [models.llama2-70b]\nlayers = 80\nd_model = 8192\nheads = 64\nkv_heads = 8\nd_ff = 28672\nvocab = 32000\n";
        let (c3, over) = load_overlay("fit.toml", &format!("{models}{text}")).unwrap();
        let l3 = c3.link("a100-fit-link").unwrap();
        assert!(
            (l3.bandwidth_bps / 1.5e11 - 1.0).abs() < 1e-9,
            "{}",
            l3.bandwidth_bps
        );
        assert!((l3.latency_s / 9e-6 - 1.0).abs() < 1e-9, "{}", l3.latency_s);
        assert_eq!(l3.pj_per_bit, cat.link("nvlink3").unwrap().pj_per_bit);
        assert_eq!(c3.device("a100-fit").unwrap().scale_up, "a100-fit-link");
        let ev = evaluate(&data.measurements, &c3, &over).unwrap();
        assert!(
            ev.prefill_mape.unwrap() < 1e-4 && ev.decode_mape.unwrap() < 1e-4,
            "{ev:?}"
        );
        let fd = c3.device("a100-fit").unwrap();
        let bd = cat.device("a100").unwrap();
        assert_eq!(
            (
                fd.peak_flops,
                fd.mem_bw,
                fd.mem_capacity,
                fd.tdp_w,
                fd.idle_w
            ),
            (
                bd.peak_flops,
                bd.mem_bw,
                bd.mem_capacity,
                bd.tdp_w,
                bd.idle_w
            )
        );
        assert_eq!(
            (fd.pj_per_flop, fd.pj_per_byte),
            (bd.pj_per_flop, bd.pj_per_byte)
        );
        // exclusion and device filter
        let o = FitOptions {
            device: None,
            exclude: vec!["llama2-7b/a100/tp1".into()],
        };
        let r2 = fit_all(&data, &cat, &o, &[]).unwrap();
        assert_eq!(r2.devices[0].rows, 12);
        let bad = FitOptions {
            device: None,
            exclude: vec!["x/y/tp1".into()],
        };
        let e = fit_all(&data, &cat, &bad, &[]).unwrap_err();
        assert_eq!(e.0, "--exclude x/y/tp1: no such group in the measurements");
        let none = FitOptions {
            device: Some("h100".into()),
            exclude: vec![],
        };
        assert_eq!(
            fit_all(&data, &cat, &none, &[]).unwrap_err().0,
            "no step-time rows to fit"
        );
    }

    #[test]
    fn overlay_errors() {
        let e = load_overlay(
            "f.toml",
            "[devices.x]\nbase = \"a100\"\nstep_overhead_s = -1.0\n",
        )
        .unwrap_err();
        assert_eq!(
            e.0,
            "f.toml: devices.x.step_overhead_s must be a number >= 0"
        );
        let e = load_overlay(
            "f.toml",
            "[devices.x]\nbase = \"a100\"\nscale_up = \"nope\"\n",
        )
        .unwrap_err();
        assert!(e.0.starts_with("f.toml: devices.x.scale_up: "), "{}", e.0);
        let (c, o) = load_overlay(
            "f.toml",
            "[devices.x]\nbase = \"a100\"\nper_seq_overhead_s = 2e-4\n",
        )
        .unwrap();
        assert_eq!(o["x"], (0.5e-3, 2e-4));
        assert_eq!(c.device("x").unwrap().scale_up, "nvlink3");
    }
}
